/* sbx.commands and the e2e.commands module (lua_commands.c). */
#ifndef ABX_LUA_COMMANDS_H
#define ABX_LUA_COMMANDS_H

#include <lua.h>

/* A new userdata of ABX_COMMANDS_MT bound to the sandbox at sbx_idx
 * (the sandbox caches it in its own user values: once per handle). */
void abx_lcommands_push(lua_State *L, int sbx_idx);
int luaopen_e2e_commands(lua_State *L);

#endif
