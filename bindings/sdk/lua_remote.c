/* Module e2e.remote: runs the embedded remote.lua (the binding is Lua on
 * top of e2e.sandbox and e2e.json) with the embedded Python runner
 * (remote_runner.py) and the error metatable as its arguments. */
#include <lauxlib.h>
#include <lua.h>

#include "abx_embedded.h"
#include "e2e_error.h"
#include "lua_e2e.h"
#include "lua_remote.h"


int luaopen_e2e_remote(lua_State *L)
{
    /* "=[e2e..." chunk names keep our frames out of user locations. */
    if (abx_load_embedded(L, abx_remote_lua, abx_remote_lua_len,
                        abx_remote_lua_name) != LUA_OK)
        return lua_error(L);
    lua_pushlstring(L, (const char *)abx_remote_runner_py,
                    abx_remote_runner_py_len);
    abx_err_mt(L);  /* RemoteError has the one error shape */
    lua_call(L, 2, 1);
    return 1;
}
