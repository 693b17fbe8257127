/* The embedded Lua (expect.lua, prelude.lua, fixtures.lua, remote.lua)
 * is compiled at build time (cmake/abx_luac.c, debug information kept:
 * tracebacks name "[e2e]" and its lines): every state loads bytecode,
 * no process parses the 48 KB of source. */
#include <lauxlib.h>
#include <lua.h>

#include "lua_e2e.h"

int abx_load_embedded(lua_State *L, const unsigned char *src, size_t len,
                      const char *name)
{
    return luaL_loadbufferx(L, (const char *)src, len, name, "b");
}
