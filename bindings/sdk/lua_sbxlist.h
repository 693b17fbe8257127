/* Info tables of sandboxes and sandbox.list (lua_sbxlist.c). */
#ifndef ABX_LUA_SBXLIST_H
#define ABX_LUA_SBXLIST_H

#include <lua.h>

#include "api.h"

/* An anchor for C-owned replies while they are turned into Lua
 * (lua_sbxlist.c): a userdata whose __gc frees both members, so a raise
 * strands neither. */
struct abx_linfobox {
    struct abx_sandbox_info info;
    struct abx_list_page page;
};
/* Pushes a new, zeroed box. */
struct abx_linfobox *abx_linfobox_push(lua_State *L);
/* Pushes the info table of sbx:info() and sandbox.list (docs/lua-api.md). */
void abx_linfo_push(lua_State *L, const struct abx_sandbox_info *i);
/* sandbox.list{metadata=, state=, limit=, api_key=} (lua_sbxlist.c). */
int abx_lsandbox_list(lua_State *L);

#endif
