/* envs and metadata options: Lua string maps to JSON (lua_sbxmap.c). */
#ifndef ABX_LUA_SBXMAP_H
#define ABX_LUA_SBXMAP_H

#include <cjson/cJSON.h>
#include <lua.h>

/* Lua table of string keys -> JSON object of string values, naming the
 * option in the message ("metadata", "envs"): e.g. "bad argument #1 to
 * 'create' (envs: value of 'K' must be a string, got number)". nil gives
 * NULL. Validates fully before allocating, so a raise strands nothing;
 * out of memory raises after freeing. what may be NULL. */
cJSON *abx_lopt_string_map(lua_State *L, int idx, int arg, const char *what);
/* abx_lopt_string_map(.., "envs") that also refuses a name holding '='
 * (the process would see another variable than the one named). */
cJSON *abx_lopt_env_map(lua_State *L, int idx, int arg);

#endif
