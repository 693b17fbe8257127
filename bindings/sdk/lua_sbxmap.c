/* envs and metadata: Lua tables of strings to JSON objects, checked
 * whole before anything is owned (lua_sbxmap.h). */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua_sbxmap.h"

/* Raises a luaL_argerror naming the option (if any) and the problem. */
static int map_error(lua_State *L, int arg, const char *what,
                     const char *problem)
{
    if (what)
        lua_pushfstring(L, "%s: %s", what, problem);
    else
        lua_pushstring(L, problem);
    return luaL_argerror(L, arg, lua_tostring(L, -1));
}

cJSON *abx_lopt_string_map(lua_State *L, int idx, int arg,
                                const char *what)
{
    cJSON *obj;

    idx = lua_absindex(L, idx);
    if (lua_isnoneornil(L, idx))
        return NULL;
    if (lua_type(L, idx) != LUA_TTABLE)
        map_error(L, arg, what, lua_pushfstring(L, "table of strings "
                  "expected, got %s", luaL_typename(L, idx)));
    /* First pass: every check that may raise, before anything is owned. */
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        size_t kl, vl;
        const char *k;
        if (lua_type(L, -2) != LUA_TSTRING)
            map_error(L, arg, what, lua_pushfstring(L, "keys must be "
                      "strings, got %s", luaL_typename(L, -2)));
        k = lua_tolstring(L, -2, &kl);
        if (lua_type(L, -1) != LUA_TSTRING)
            map_error(L, arg, what, lua_pushfstring(L, "value of '%s' must "
                      "be a string, got %s", k, luaL_typename(L, -1)));
        lua_tolstring(L, -1, &vl);
        if (kl == 0)
            map_error(L, arg, what, "keys must not be empty");
        if (strlen(k) != kl || strlen(lua_tostring(L, -1)) != vl)
            map_error(L, arg, what, lua_pushfstring(L, "key '%s' or its "
                      "value contains a NUL byte", k));
        lua_pop(L, 1);
    }
    /* Second pass: building cannot raise. */
    obj = cJSON_CreateObject();
    if (!obj)
        goto oom;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (!cJSON_AddStringToObject(obj, lua_tostring(L, -2),
                                     lua_tostring(L, -1))) {
            lua_pop(L, 2);
            cJSON_Delete(obj);
            goto oom;
        }
        lua_pop(L, 1);
    }
    return obj;
oom:
    luaL_error(L, "out of memory");
    return NULL;
}

cJSON *abx_lopt_env_map(lua_State *L, int idx, int arg)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) == LUA_TTABLE) {
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            if (lua_type(L, -2) == LUA_TSTRING &&
                strchr(lua_tostring(L, -2), '='))
                map_error(L, arg, "envs", lua_pushfstring(L, "name '%s' "
                          "contains '='", lua_tostring(L, -2)));
            lua_pop(L, 1);
        }
    }
    return abx_lopt_string_map(L, idx, arg, "envs");
}
