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
#include "lstate.h"
#include "out.h"

#define MODULE_KEY "abx.e2e"

static void emit_stdout(void *ud, const char *s, size_t len)
{
    (void)ud;
    abx_out_write(ABX_OUT_STDOUT, s, len);
}

void abx_lstate_init(const struct abx_config *cfg)
{
    abx_alloc_set_limit((size_t)cfg->opt.max_memory_mb << 20);
    abx_bindings_init(cfg->selftest);
}

void abx_lstate_host(struct abx_e2e_host *h, const struct abx_config *cfg)
{
    memset(h, 0, sizeof *h);
    h->set = &cfg->lua;
    h->emit = emit_stdout;
    h->worker = -1;
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
    const struct abx_e2e_host *h = lua_touserdata(L, 1);
    const char *dir = lua_touserdata(L, 2);

    abx_bindings_open(L, h);
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
    if (!h->set->plain && luaL_dostring(L, "debug.sethook = function() error("
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
    double timeout = abx_e2e_host_of(L)->set->timeout;
    int rc = 0;

    if (luaL_loadfile(L, path) != LUA_OK) {
        snprintf(err, errlen, "%s", lua_tostring(L, -1));
        rc = -1;
    } else if (abx_region_call(L, 0, timeout, 1) != LUA_OK) {
        const char *cls = abx_err_class_of(L, -1);
        rc = strcmp(cls, ABX_ERR_INTERRUPTED) == 0 ? -2 : -1;
        if (strcmp(cls, ABX_ERR_TEST_TIMEOUT) == 0)  /* no test yet: say what */
            snprintf(err, errlen, "Timeout: loading %s took longer than "
                     "%g s (--timeout)", path, timeout);
        else
            snprintf(err, errlen, "%s", abx_err_message_of(L, -1));
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

lua_State *abx_lstate_open(const struct abx_e2e_host *h, const char *dir,
                           char *err, size_t errlen)
{
    lua_State *L = lua_newstate(abx_alloc, NULL);
    char conf[4096];

    if (!L) {
        snprintf(err, errlen, "cannot create a Lua state: out of memory");
        return NULL;
    }
    lua_atpanic(L, panic);
    abx_region_install(L);
    lua_pushcfunction(L, pmain);
    lua_pushlightuserdata(L, (void *)h);
    lua_pushlightuserdata(L, (void *)dir);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
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
