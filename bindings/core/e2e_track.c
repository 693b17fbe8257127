/* The tracking side of the core table (prelude.lua uses these): a group
 * of sandboxes per finalizer stack killed when the scope ends, the
 * current test, and the sandboxes of a failed test. The group provider
 * the prelude installs is what sandbox.create asks for its scope. */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua_e2e.h"
#include "lua_util.h"
#include "track.h"

#define SCOPE_KEY "e2e.sandbox_scope"   /* read by lua_sandbox.c */

/* core.track_group_new() -> integer */
static int group_new(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)abx_track_group_new());
    return 1;
}

/* core.track_kill_group(g): kills every member concurrently; raises a
 * message naming what could not be deleted (a teardown ERROR). */
static int kill_group(lua_State *L)
{
    lua_Integer g = luaL_checkinteger(L, 1);
    struct abx_lbox *box = abx_lbox_push(L, 64 * 1024);
    int n = abx_track_kill_group((uint64_t)g, &box->buf);

    if (n == 0)
        return 0;
    while (box->buf.len > 0 && box->buf.data[box->buf.len - 1] == '\n')
        box->buf.data[--box->buf.len] = '\0';
    lua_pushfstring(L, "could not delete %d sandbox(es) of this scope (the "
                    "run's final sweep retries them):\n%s", n,
                    abx_buf_cstr(&box->buf));
    abx_lbox_release(box);
    return lua_error(L);
}

/* core.track_begin_test(nodeid): serials are per process, since tracked
 * records outlive the file states. */
static int begin_test(lua_State *L)
{
    static unsigned serial;

    abx_track_begin_test(++serial, luaL_checkstring(L, 1));
    return 0;
}

/* core.track_test_failed() -> { ids of live sandboxes it used } */
static int test_failed(lua_State *L)
{
    struct abx_lbox *box = abx_lbox_push(L, 1024 * 1024);
    const char *p, *nl;
    lua_Integer i = 1;

    abx_track_test_failed(&box->buf);
    lua_newtable(L);
    for (p = abx_buf_cstr(&box->buf); (nl = strchr(p, '\n')); p = nl + 1) {
        lua_pushlstring(L, p, (size_t)(nl - p));
        lua_rawseti(L, -2, i++);
    }
    abx_lbox_release(box);
    return 1;
}

/* core.set_sandbox_scope(fn): fn() -> group of the current scope, or nil
 * outside a test or fixture. */
static int set_scope(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, SCOPE_KEY);
    return 0;
}

void abx_track_core_add(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"track_group_new", group_new},
        {"track_kill_group", kill_group},
        {"track_begin_test", begin_test},
        {"track_test_failed", test_failed},
        {"set_sandbox_scope", set_scope},
        {NULL, NULL},
    };

    luaL_setfuncs(L, fns, 0);
}
