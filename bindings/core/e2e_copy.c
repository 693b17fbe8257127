/* Deep copy of plain values from one lua_State to another (wrk's
 * script_copy_value): how a worker's session state hands session fixture
 * values to each file state. Functions, userdata and threads cannot cross
 * states and are refused with a message naming where they were found. */
#include <stdio.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua_e2e.h"

#define COPY_MAX_DEPTH 32

static int copy(lua_State *from, int idx, lua_State *to, int depth,
                char *err, size_t errlen)
{
    idx = lua_absindex(from, idx);
    if (!lua_checkstack(to, 3) || !lua_checkstack(from, 3)) {
        snprintf(err, errlen, "value too deep to copy (stack)");
        return -1;
    }
    switch (lua_type(from, idx)) {
    case LUA_TNIL:
        lua_pushnil(to);
        return 0;
    case LUA_TBOOLEAN:
        lua_pushboolean(to, lua_toboolean(from, idx));
        return 0;
    case LUA_TNUMBER:
        if (lua_isinteger(from, idx))
            lua_pushinteger(to, lua_tointeger(from, idx));
        else
            lua_pushnumber(to, lua_tonumber(from, idx));
        return 0;
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(from, idx, &len);
        lua_pushlstring(to, s, len);
        return 0;
    }
    case LUA_TTABLE:
        if (depth >= COPY_MAX_DEPTH) {
            snprintf(err, errlen, "table nested deeper than %d levels "
                     "(a cycle?)", COPY_MAX_DEPTH);
            return -1;
        }
        lua_newtable(to);
        lua_pushnil(from);
        while (lua_next(from, idx) != 0) {
            /* from: ... key value ; to: ... tbl */
            if (copy(from, -2, to, depth + 1, err, errlen) != 0) {
                lua_pop(from, 2);
                lua_pop(to, 1);
                return -1;
            }
            if (copy(from, -1, to, depth + 1, err, errlen) != 0) {
                lua_pop(from, 2);
                lua_pop(to, 2);
                return -1;
            }
            lua_rawset(to, -3);
            lua_pop(from, 1);
        }
        return 0;
    default:
        snprintf(err, errlen, "a %s cannot be copied between Lua states "
                 "(session fixtures must return plain data)",
                 luaL_typename(from, idx));
        return -1;
    }
}

int abx_lua_copy(lua_State *from, int idx, lua_State *to, char *err,
                 size_t errlen)
{
    return copy(from, idx, to, 0, err, errlen);
}
