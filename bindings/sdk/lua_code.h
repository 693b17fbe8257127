/* sbx:run_code and sbx:create_code_context (lua_code.c). */
#ifndef ABX_LUA_CODE_H
#define ABX_LUA_CODE_H

#include <lua.h>

/* sbx:run_code / sbx:create_code_context (lua_code.c), installed in the
 * sandbox methods by lua_sandbox.c. */
int abx_lcode_run(lua_State *L);
int abx_lcode_create_context(lua_State *L);

#endif
