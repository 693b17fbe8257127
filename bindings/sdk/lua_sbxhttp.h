/* sbx:http (lua_sbxhttp.c). */
#ifndef ABX_LUA_SBXHTTP_H
#define ABX_LUA_SBXHTTP_H

#include <lua.h>

/* sbx:http(port, {method=, path=, body=, headers=, timeout=})
 * (lua_sbxhttp.c). */
int abx_lsandbox_http(lua_State *L);

#endif
