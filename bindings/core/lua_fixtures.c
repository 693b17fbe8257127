/* Module e2e.fixtures: runs the embedded fixtures.lua, which registers the
 * built-in fixtures in the state's e2e module. */
#include <lauxlib.h>
#include <lua.h>

#include "lua_e2e.h"

extern const unsigned char abx_fixtures_lua[];
extern const size_t abx_fixtures_lua_len;

int luaopen_e2e_fixtures(lua_State *L)
{
    /* "=[e2e..." chunk names keep our frames out of user locations. */
    if (abx_load_embedded(L, abx_fixtures_lua,
                        abx_fixtures_lua_len, "=[e2e.fixtures]") != LUA_OK)
        return lua_error(L);
    lua_call(L, 0, 1);
    return 1;
}
