/* json.null and the object marks of e2e.json, shared by encode
 * (lua_json.c) and decode (lua_json_decode.c): kept in a file of their
 * own so that neither needs the other. */
#include <lua.h>

#include "lua_json.h"

const char abx_json_null = 0;
/* Registry key of the weak set of tables json.object() marked. */
static const char json_objects_key = 0;

void abx_json_push_objects(lua_State *L)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &json_objects_key) == LUA_TTABLE)
        return;
    lua_pop(L, 1);
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &json_objects_key);
}
