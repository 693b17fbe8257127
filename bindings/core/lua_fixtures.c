/* Module e2e.fixtures: runs the embedded fixtures.lua, which registers the
 * built-in fixtures in the state's e2e module. */
#include <lauxlib.h>
#include <lua.h>

#include "abx_embedded.h"
#include "lua_e2e.h"


int luaopen_e2e_fixtures(lua_State *L)
{
    /* "=[e2e..." chunk names keep our frames out of user locations. */
    if (abx_load_embedded(L, abx_fixtures_lua,
                        abx_fixtures_lua_len, abx_fixtures_lua_name) != LUA_OK)
        return lua_error(L);
    lua_call(L, 0, 1);
    return 1;
}
