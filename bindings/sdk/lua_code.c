/* sbx:run_code and sbx:create_code_context (docs/lua-api.md): the code
 * interpreter on port 49999. Output callbacks run in protected mode while
 * the execution streams; an error in one aborts the execution and is
 * raised again once every C resource is released. */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "codeint.h"
#include "e2e_raise.h"
#include "lua_code.h"
#include "lua_json.h"
#include "lua_sbxmap.h"
#include "lua_sbxplat.h"
#include "lua_sbxtype.h"
#include "lua_util.h"

#define CODE_TIMEOUT 300.0   /* s, as E2B's code interpreter SDK */

struct cb {
    lua_State *L;
    int out_idx, err_idx;    /* stack slots of the callbacks (0 = none) */
    int failed;              /* the error value is at the top of L */
};

static int on_output(void *ud, const char *stream, const char *text)
{
    struct cb *c = ud;
    int idx = strcmp(stream, "stderr") == 0 ? c->err_idx : c->out_idx;

    if (c->failed || !idx)
        return c->failed;
    if (!lua_checkstack(c->L, 4))
        return 0;  /* no room to call: drop the chunk, it is in logs */
    if (abx_lpcall_bytes(c->L, idx, text, strlen(text)) != LUA_OK) {
        c->failed = 1;  /* error value left at the top, anchored */
        return 1;
    }
    return 0;
}

static int opt_callback(lua_State *L, int arg, const char *key)
{
    if (!abx_lopt_push(L, arg, key, LUA_TFUNCTION)) {
        lua_pop(L, 1);
        return 0;
    }
    return lua_gettop(L);  /* left on the stack */
}

/* The context option: a string id or a table from create_code_context. */
static const char *opt_context(lua_State *L, int arg)
{
    int t;

    if (lua_type(L, arg) != LUA_TTABLE)
        return NULL;
    t = lua_getfield(L, arg, "context");
    if (t == LUA_TNIL) {
        lua_pop(L, 1);
        return NULL;
    }
    if (t == LUA_TTABLE) {
        lua_getfield(L, -1, "id");
        lua_remove(L, -2);
    }
    if (lua_type(L, -1) != LUA_TSTRING)
        luaL_argerror(L, arg, "option 'context': a context (table with an "
                      "id) or a context id expected");
    return lua_tostring(L, -1);  /* left on the stack */
}

/* Adds text = the main result's text to the result table at the top. */
static void set_main_text(lua_State *L)
{
    lua_Integer i;

    if (lua_getfield(L, -1, "results") != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, "results");
    }
    for (i = 1; lua_rawgeti(L, -1, i) == LUA_TTABLE; i++) {
        lua_getfield(L, -1, "is_main_result");
        if (lua_toboolean(L, -1)) {
            lua_getfield(L, -2, "text");
            lua_setfield(L, -5, "text");
        }
        lua_pop(L, 2);
    }
    lua_pop(L, 2);
}

/* sbx:run_code(code, {language=, context=, timeout=, envs=, on_stdout=,
 * on_stderr=}) */
int abx_lcode_run(lua_State *L)
{
    static const char *const known[] = {"language", "context", "timeout",
        "envs", "on_stdout", "on_stderr", NULL};
    struct abx_lsandbox *s = abx_lsandbox_check(L, 1);
    const struct abx_platform *plat = abx_lsandbox_platform(L);
    struct abx_exec_opts o;
    struct abx_endpoint ep;
    struct abx_lbox *box;
    struct abx_err err;
    struct cb c;
    int rc;

    memset(&o, 0, sizeof o);
    memset(&c, 0, sizeof c);
    o.code = abx_lcheck_cstring(L, 2);
    abx_lopt_check(L, 3, "run_code", known);
    lua_settop(L, 3);
    o.language = abx_lopt_string(L, 3, "language", NULL);
    o.context_id = opt_context(L, 3);
    if (o.language && o.context_id)
        luaL_argerror(L, 3, "options 'language' and 'context' are exclusive");
    o.timeout = abx_lopt_seconds(L, 3, "timeout", CODE_TIMEOUT);
    c.L = L;
    c.out_idx = opt_callback(L, 3, "on_stdout");
    c.err_idx = opt_callback(L, 3, "on_stderr");
    abx_lopt_push(L, 3, "envs", LUA_TTABLE);
    box = abx_lbox_push(L, 0);
    box->json = abx_lopt_env_map(L, -2, 3);
    o.envs = box->json;
    o.on_output = on_output;
    o.ud = &c;
    if (abx_endpoint_init(&ep, plat, abx_lsandbox_info(s), ABX_CODE_PORT,
                          &err) != 0)
        return abx_err_raise(L, &err);
    {
        cJSON *out = NULL;
        rc = abx_code_execute(&ep, &o, &out, &err);
        abx_endpoint_free(&ep);
        abx_lbox_release(box);
        box->json = out;  /* anchored until converted */
    }
    if (c.failed)
        return lua_error(L);  /* the callback's error, as raised */
    if (rc != 0 && abx_lsandbox_killed(s))
        abx_lsandbox_check(L, 1);  /* killed meanwhile: says so, raises */
    if (rc != 0)
        return abx_err_raise(L, &err);
    abx_json_push(L, box->json);
    abx_lbox_release(box);
    if (lua_type(L, -1) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
    }
    set_main_text(L);
    return 1;
}

/* sbx:create_code_context{language=, cwd=} -> {id=, language=, cwd=} */
int abx_lcode_create_context(lua_State *L)
{
    static const char *const known[] = {"language", "cwd", NULL};
    struct abx_lsandbox *s = abx_lsandbox_check(L, 1);
    const struct abx_platform *plat = abx_lsandbox_platform(L);
    const char *language, *cwd;
    struct abx_endpoint ep;
    struct abx_lbox *box;
    struct abx_err err;
    int rc;

    abx_lopt_check(L, 2, "create_code_context", known);
    lua_settop(L, 2);
    language = abx_lopt_string(L, 2, "language", NULL);
    cwd = abx_lopt_string(L, 2, "cwd", NULL);
    box = abx_lbox_push(L, 0);
    if (abx_endpoint_init(&ep, plat, abx_lsandbox_info(s), ABX_CODE_PORT,
                          &err) != 0)
        return abx_err_raise(L, &err);
    rc = abx_code_create_context(&ep, language, cwd, &box->json, &err);
    abx_endpoint_free(&ep);
    if (rc != 0)
        return abx_err_raise(L, &err);
    abx_json_push(L, box->json);
    abx_lbox_release(box);
    return 1;
}
