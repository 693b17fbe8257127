/* The one error shape of e2e (e2e_error.h): its metatable and the helpers
 * C code uses to make and read error values. */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "e2e_error.h"

/* "<class>: [<name>: ]<message>". Reads raw fields so that a value a test
 * tampered with still prints, never raising from inside an error path. */
static void push_tostring(lua_State *L, int idx)
{
    const char *cls, *name, *msg;

    idx = lua_absindex(L, idx);
    lua_pushliteral(L, "class");
    lua_rawget(L, idx);
    lua_pushliteral(L, "name");
    lua_rawget(L, idx);
    lua_pushliteral(L, "message");
    lua_rawget(L, idx);
    cls = lua_type(L, -3) == LUA_TSTRING ? lua_tostring(L, -3) : ABX_ERR_ERROR;
    name = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
    if (name)
        lua_pushfstring(L, "%s: %s: %s", cls, name, msg);
    else
        lua_pushfstring(L, "%s: %s", cls, msg);
    lua_replace(L, -4);
    lua_pop(L, 2);
}

static int err_tostring(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    push_tostring(L, 1);
    return 1;
}

void abx_err_push_text(lua_State *L, int idx)
{
    const char *cls = abx_err_class_of(L, idx);

    if (strcmp(cls, ABX_ERR_FAILED) == 0 || strcmp(cls, ABX_ERR_SKIPPED) == 0 ||
        strcmp(cls, ABX_ERR_ERROR) == 0) {
        idx = lua_absindex(L, idx);
        lua_pushliteral(L, "message");
        lua_rawget(L, idx);
        if (lua_type(L, -1) != LUA_TSTRING) {
            lua_pop(L, 1);
            lua_pushliteral(L, "");
        }
        return;
    }
    push_tostring(L, idx);
}

void abx_err_mt(lua_State *L)
{
    if (luaL_newmetatable(L, ABX_ERR_MT)) {
        lua_pushcfunction(L, err_tostring);
        lua_setfield(L, -2, "__tostring");
    }
}

void abx_err_push_new(lua_State *L, const char *cls, const char *msg)
{
    lua_createtable(L, 0, 3);
    lua_pushstring(L, cls);
    lua_setfield(L, -2, "class");
    lua_pushstring(L, msg);
    lua_setfield(L, -2, "message");
    abx_err_mt(L);
    lua_setmetatable(L, -2);
}

int abx_err_is(lua_State *L, int idx)
{
    int ok;

    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE || !lua_getmetatable(L, idx))
        return 0;
    luaL_getmetatable(L, ABX_ERR_MT);
    ok = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (ok) {
        lua_pushliteral(L, "class");
        ok = lua_rawget(L, idx) == LUA_TSTRING;
        lua_pop(L, 1);
    }
    return ok;
}

const char *abx_err_class_of(lua_State *L, int idx)
{
    const char *s;

    if (!abx_err_is(L, idx))
        return ABX_ERR_ERROR;
    idx = lua_absindex(L, idx);
    lua_pushliteral(L, "class");
    lua_rawget(L, idx);
    s = lua_tostring(L, -1);
    lua_pop(L, 1);  /* the string stays anchored in the table */
    return s;
}

const char *abx_err_message_of(lua_State *L, int idx)
{
    const char *s = NULL;

    if (lua_type(L, idx) == LUA_TTABLE) {
        lua_getfield(L, idx, "message");
        s = lua_tostring(L, -1);
        lua_pop(L, 1);
    } else {
        s = lua_tostring(L, idx);
    }
    return s ? s : "(no message)";
}
