/* Module e2e.remote (lua_remote.c running remote.lua with the runner
 * remote_runner.py): declarative remote execution, documented in
 * docs/lua-api.md ("e2e.remote"). */
#ifndef ABX_LUA_REMOTE_H
#define ABX_LUA_REMOTE_H

#include <lua.h>

int luaopen_e2e_remote(lua_State *L);

#endif
