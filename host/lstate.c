/* Creating Lua states for test files, session states and exec scripts.
 * The whole set-up runs inside lua_pcall (lua.c's pmain shape), so a
 * failure anywhere is an error message, never a panic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lualib.h>

#include "e2e_error.h"
#include "host.h"
#include "out.h"

#define MODULE_KEY "abx.e2e"

struct abx_e2e_host abx_host;
static int g_exec;  /* exec, repl: plain Lua, debug.sethook allowed */

static void emit_stdout(void *ud, const char *s, size_t len)
{
    (void)ud;
    abx_out_write(ABX_OUT_STDOUT, s, len);
}

void abx_host_init(const struct abx_opts *o, const struct abx_env *e)
{
    const char *st = getenv("ABX_E2E_SELFTEST");
    static char missing[128], run_id[96], tmpl[128], kind[8], user[64];
    static struct abx_platform platform;

    memset(&abx_host, 0, sizeof abx_host);
    abx_host.emit = emit_stdout;
    abx_host.timeout = o->timeout;
    abx_host.teardown_budget = ABX_TEARDOWN_BUDGET;
    if (o->timeout > 0 && o->timeout < ABX_TEARDOWN_BUDGET)
        abx_host.teardown_budget = o->timeout;
    abx_host.capture = !o->no_capture && !o->exec && !o->repl;
    abx_host.has_credentials = e->has_credentials;
    snprintf(missing, sizeof missing, "%s", e->missing);
    abx_host.missing_credentials = missing;
    snprintf(run_id, sizeof run_id, "%s", e->run_id);
    abx_host.run_id = run_id;
    abx_host.worker = -1;
    abx_host.selftest = st && strcmp(st, "1") == 0;
    /* The platform lives here for the whole process: workers and the
     * tracker keep pointers to it. */
    platform = e->platform;
    abx_host.platform = e->has_platform ? &platform : NULL;
    abx_host.sandbox_ttl = e->sandbox_ttl;
    snprintf(tmpl, sizeof tmpl, "%s", e->server_template);
    abx_host.server_template = tmpl;
    abx_host.server_port = e->server_port;
    abx_host.short_ttl = e->short_ttl;
    abx_host.keep_failed = o->keep_failed;
    abx_host.allow_skips = o->allow_skips;
    abx_host.local_platform = o->local;
    snprintf(kind, sizeof kind, "%s", e->platform_kind);
    abx_host.platform_kind = kind;
    abx_host.caps = e->caps;
    snprintf(user, sizeof user, "%s", e->default_user);
    abx_host.default_user = user;
    abx_alloc_set_limit((size_t)o->max_memory_mb << 20);
    g_exec = o->exec || o->repl;
    abx_bindings_init(abx_host.selftest);
}

/* Everything runs under lua_pcall; reaching this is a bug, said once. */
static int panic(lua_State *L)
{
    const char *m = lua_tostring(L, -1);

    abx_out_printf(ABX_OUT_STDERR, "abx-e2e: internal error: unprotected "
                   "Lua error: %s\n", m ? m : "(not a string)");
    abx_out_flush();
    return 0;  /* Lua aborts */
}

void abx_dirname(const char *path, char *out, size_t outlen)
{
    const char *slash = strrchr(path, '/');

    if (!slash)
        snprintf(out, outlen, ".");
    else if (slash == path)
        snprintf(out, outlen, "/");
    else
        snprintf(out, outlen, "%.*s", (int)(slash - path), path);
}

void abx_lstate_module(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, MODULE_KEY);
}

/* Calls M[name](args...) (args on top), protected; on failure the error
 * message is left on the stack and the status returned. */
static int call_module(lua_State *L, const char *name, int nargs)
{
    abx_lstate_module(L);
    lua_getfield(L, -1, name);
    lua_remove(L, -2);
    lua_insert(L, -1 - nargs);
    return lua_pcall(L, nargs, 0, 0);
}

static int file_exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* pmain: bindings, module, package.path, capture, os.exit guard. */
static int pmain(lua_State *L)
{
    const char *dir = lua_touserdata(L, 1);

    abx_bindings_open(L, &abx_host);
    luaL_requiref(L, "e2e", luaopen_e2e, 0);
    lua_setfield(L, LUA_REGISTRYINDEX, MODULE_KEY);
    /* Built-in fixtures (base_sandbox, ...), before conftest.lua. */
    luaL_requiref(L, "e2e.fixtures", luaopen_e2e_fixtures, 0);
    lua_pop(L, 1);
    lua_getglobal(L, "package");
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", dir, dir);
    lua_getfield(L, -2, "path");
    lua_concat(L, 2);
    lua_setfield(L, -2, "path");
    lua_pop(L, 1);
    /* print/io.write always go through the host: captured per test, or
     * passed to abx_out (masked) with -s, in exec and repl. */
    lua_pushglobaltable(L);
    if (call_module(L, "_install_capture", 1) != LUA_OK)
        return lua_error(L);
    /* os.exit would skip every teardown: make it an error instead (exec
     * mode replaces it with a clean exit). */
    if (luaL_dostring(L, "os.exit = function() error('os.exit is not "
                         "allowed in tests (use e2e.fail or e2e.skip)', 2) "
                         "end") != LUA_OK)
        return lua_error(L);
    /* debug.sethook would remove the hook that enforces timeouts and
     * interrupts: a test could then hang the run past every budget. */
    if (!g_exec && luaL_dostring(L, "debug.sethook = function() error("
                                 "'debug.sethook is not allowed in tests "
                                 "(the runner uses the hook for timeouts)',"
                                 " 2) end") != LUA_OK)
        return lua_error(L);
    lua_pushglobaltable(L);
    if (call_module(L, "_strict_globals", 1) != LUA_OK)
        return lua_error(L);
    return 0;
}

/* Loads path and runs its top-level code under the region (timeout and
 * interrupt apply). 0, -1 (message in err) or -2 (interrupted); the stack
 * is left empty. */
static int run_chunk(lua_State *L, const char *path, char *err,
                     size_t errlen)
{
    int rc = 0;

    if (luaL_loadfile(L, path) != LUA_OK) {
        snprintf(err, errlen, "%s", lua_tostring(L, -1));
        rc = -1;
    } else if (abx_region_call(L, 0, abx_host.timeout, 1) != LUA_OK) {
        const char *cls = abx_error_class(L, -1);
        rc = strcmp(cls, ABX_ERR_INTERRUPTED) == 0 ? -2 : -1;
        if (strcmp(cls, ABX_ERR_TEST_TIMEOUT) == 0)  /* no test yet: say what */
            snprintf(err, errlen, "Timeout: loading %s took longer than "
                     "%g s (--timeout)", path, abx_host.timeout);
        else
            snprintf(err, errlen, "%s", abx_error_message(L, -1));
    }
    lua_settop(L, 0);
    return rc;
}

static int load_conftest(lua_State *L, const char *path, char *err,
                         size_t errlen)
{
    int rc;

    lua_pushboolean(L, 1);
    if (call_module(L, "_conftest", 1) != LUA_OK) {
        snprintf(err, errlen, "%s", lua_tostring(L, -1));
        lua_settop(L, 0);
        return -1;
    }
    rc = run_chunk(L, path, err, errlen) ? -1 : 0;
    lua_pushboolean(L, 0);
    if (call_module(L, "_conftest", 1) != LUA_OK)
        rc = -1;
    lua_settop(L, 0);
    return rc;
}

lua_State *abx_lstate_open(const char *dir, int is_session, char *err,
                           size_t errlen)
{
    lua_State *L = lua_newstate(abx_alloc, NULL);
    char conf[4096];

    if (!L) {
        snprintf(err, errlen, "cannot create a Lua state: out of memory");
        return NULL;
    }
    lua_atpanic(L, panic);
    abx_host.is_session = is_session;
    abx_region_install(L);
    lua_pushcfunction(L, pmain);
    lua_pushlightuserdata(L, (void *)dir);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
        snprintf(err, errlen, "cannot set up the Lua state: %s",
                 lua_tostring(L, -1));
        lua_close(L);
        return NULL;
    }
    snprintf(conf, sizeof conf, "%s/conftest.lua", dir);
    if (file_exists(conf) && load_conftest(L, conf, err, errlen) != 0) {
        lua_close(L);
        return NULL;
    }
    return L;
}

int abx_lstate_load_test(lua_State *L, const char *path, char *err,
                         size_t errlen)
{
    lua_pushstring(L, path);
    if (call_module(L, "_begin_file", 1) != LUA_OK) {
        snprintf(err, errlen, "%s", lua_tostring(L, -1));
        lua_settop(L, 0);
        return -1;
    }
    return run_chunk(L, path, err, errlen);
}
