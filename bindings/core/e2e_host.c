/* The host description of a Lua state (struct abx_e2e_host, lua_e2e.h):
 * set by abx_bindings_open, read by every module. Kept apart so that the
 * low helpers can read it without linking the e2e module itself. */
#include <lauxlib.h>
#include <lua.h>

#include "lua_e2e.h"

/* Registry key of the host description (set by abx_bindings_open). */
const char abx_e2e_host_key = 'h';

const struct abx_e2e_host *abx_e2e_host_of(lua_State *L)
{
    const struct abx_e2e_host *h;

    lua_rawgetp(L, LUA_REGISTRYINDEX, &abx_e2e_host_key);
    h = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (!h)
        luaL_error(L, "e2e: no host registered for this Lua state");
    return h;
}
