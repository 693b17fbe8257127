/* The e2e.sandbox module (lua_sandbox.c): create, connect, list, kill,
 * and the methods of a sandbox handle. */
#ifndef ABX_LUA_SANDBOX_H
#define ABX_LUA_SANDBOX_H

#include <lua.h>

/* Returns the module table (registered in bindings.c). */
int luaopen_e2e_sandbox(lua_State *L);

#endif
