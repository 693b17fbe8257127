/* sbx.files and the e2e.files module (lua_files.c). */
#ifndef ABX_LUA_FILES_H
#define ABX_LUA_FILES_H

#include <lua.h>

/* A new userdata of ABX_FILES_MT bound to the sandbox at sbx_idx (the
 * sandbox caches it in its own user values: once per handle). */
void abx_lfiles_push(lua_State *L, int sbx_idx);
int luaopen_e2e_files(lua_State *L);

#endif
