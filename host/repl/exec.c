/* abx-e2e exec SCRIPT.lua [ARGS]: a plain Lua script with the same
 * bindings, masking and cleanup as the tests (quick experiments). Output
 * is not captured; os.exit(n) ends the script cleanly with status n. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "e2e_error.h"
#include "lstate.h"
#include "out.h"
#include "repl.h"

static const char EXIT_GUARD[] =
    "local Err = debug.getregistry()['e2e.Error']\n"
    "os.exit = function(code)\n"
    "  if code == nil or code == true then code = 0\n"
    "  elseif code == false then code = 1 end\n"
    "  error(setmetatable({class = 'Exit', code = math.tointeger(code) or 1,\n"
    "    message = 'os.exit(' .. tostring(code) .. ')'}, Err), 0)\n"
    "end\n"
    "setmetatable(_G, nil)\n";

/* _finish_script returns the messages of failed finalizers. */
int abx_exec_scope(lua_State *L, const char *fn, struct abx_buf *errs)
{
    int top = lua_gettop(L), rc = 0;
    lua_Integer i, n;

    abx_lstate_module(L);
    lua_getfield(L, -1, fn);
    /* errs is only the message (capped): a line that does not fit is
     * dropped; rc fails the scope all the same. */
    if (abx_region_call(L, 0, 0, 0) != LUA_OK) {
        if (errs && abx_buf_appendf(errs, "%s\n", abx_err_message_of(L, -1)) != 0) {
            /* dropped */
        }
        rc = -1;
    } else if (errs && lua_type(L, top + 2) == LUA_TTABLE) {
        n = (lua_Integer)lua_rawlen(L, top + 2);
        for (i = 1; i <= n; i++) {
            lua_rawgeti(L, top + 2, i);
            if (abx_buf_appendf(errs, "%s\n", luaL_tolstring(L, -1, NULL)) != 0) {
                /* dropped */
            }
            lua_pop(L, 2);
            rc = -1;
        }
    }
    lua_settop(L, top);
    return rc;
}

lua_State *abx_exec_state(const struct abx_e2e_host *h, const char *dir, char *err,
                          size_t errlen)
{
    lua_State *L = abx_lstate_open(h, dir, err, errlen);

    if (L && luaL_dostring(L, EXIT_GUARD) != LUA_OK) {
        snprintf(err, errlen, "%s", lua_tostring(L, -1));
        lua_close(L);
        L = NULL;
    }
    return L;
}

int abx_exec_main(const struct abx_config *cfg)
{
    const struct abx_opts *o = &cfg->opt;
    struct abx_e2e_host h;
    char dir[4096], err[4096];
    lua_State *L;
    int i, status, code = 0;
    struct abx_buf errs;

    abx_dirname(o->script, dir, sizeof dir);
    abx_lstate_host(&h, cfg);
    L = abx_exec_state(&h, dir, err, sizeof err);
    if (!L) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e exec: %s\n", err);
        return ABX_EXIT_INTERNAL_ERROR;
    }
    /* arg table as lua.c builds it: arg[0] = script, arg[1..] = ARGS. */
    lua_createtable(L, o->nscript_args, 1);
    lua_pushstring(L, o->script);
    lua_rawseti(L, -2, 0);
    for (i = 0; i < o->nscript_args; i++) {
        lua_pushstring(L, o->script_args[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setglobal(L, "arg");
    if (luaL_loadfile(L, o->script) != LUA_OK) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e exec: %s\n",
                       lua_tostring(L, -1));
        lua_close(L);
        return ABX_EXIT_USAGE_ERROR;
    }
    for (i = 0; i < o->nscript_args; i++)
        lua_pushstring(L, o->script_args[i]);
    abx_exec_scope(L, "_begin_script", NULL);
    status = abx_region_call(L, o->nscript_args, o->timeout, 1);
    if (status != LUA_OK) {
        const char *cls = abx_err_class_of(L, -1);
        if (strcmp(cls, ABX_ERR_EXIT) == 0) {
            lua_getfield(L, -1, "code");
            code = (int)lua_tointeger(L, -1);
            lua_pop(L, 1);
        } else if (strcmp(cls, ABX_ERR_INTERRUPTED) == 0) {
            abx_out_puts(ABX_OUT_STDERR, "abx-e2e exec: interrupted\n");
            code = ABX_EXIT_INTERRUPTED;
        } else {
            const char *tb;
            lua_getfield(L, -1, "traceback");
            tb = lua_tostring(L, -1);
            abx_out_printf(ABX_OUT_STDERR, "abx-e2e exec: %s\n",
                           tb ? tb : abx_err_message_of(L, -2));
            lua_pop(L, 1);
            code = 1;
        }
    }
    lua_settop(L, 0);
    abx_buf_init(&errs, 64 * 1024);
    /* Finalizers and the script's sandboxes, even after an error. */
    if (abx_exec_scope(L, "_finish_script", &errs) != 0 && code == 0)
        code = 1;
    if (errs.len)
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e exec: teardown: %s",
                       abx_buf_cstr(&errs));
    abx_buf_reset(&errs);
    lua_close(L);
    abx_fixture_c_finish_session(&errs);
    abx_buf_free(&errs);
    return code;
}
