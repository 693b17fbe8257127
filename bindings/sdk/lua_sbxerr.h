/* Client errors as Lua error values, JSON <-> Lua for replies and
 * options, the platform of a state, the cancellation hook of the HTTP
 * engine (lua_sbxerr.c). */
#ifndef ABX_LUA_SBXERR_H
#define ABX_LUA_SBXERR_H

#include <cjson/cJSON.h>
#include <lua.h>

#include "api.h"
#include "errclass.h"

/* Pushes an error value {class=, message=, status=, code=} (the one
 * shape, e2e_error.h). */
void abx_lerr_push(lua_State *L, const struct abx_err *e);
/* Pushes it and raises it (never returns). A Timeout/Canceled error that
 * came from the test's deadline or an interrupt raises the runner's own
 * timeout/interrupt error instead, so the test ends as a timeout. Free
 * every C resource before calling it. */
int abx_lerr_raise(lua_State *L, const struct abx_err *e);

/* JSON -> Lua: objects become tables, arrays sequences, null nil. */
void abx_ljson_push(lua_State *L, const cJSON *v);
/* Lua table of string keys -> JSON object of string values (envs,
 * metadata). nil gives NULL. Raises (argerror on arg) on other shapes. */
cJSON *abx_ljson_string_map(lua_State *L, int idx, int arg);

/* Same, naming the option in the message ("metadata", "envs"): e.g.
 * "bad argument #1 to 'create' (envs: value of 'K' must be a string, got
 * number)". Validates fully before allocating, so a raise strands
 * nothing; out of memory raises after freeing. */
cJSON *abx_ljson_string_map_opt(lua_State *L, int idx, int arg,
                                const char *what);
/* abx_ljson_string_map_opt(.., "envs") that also refuses a name holding
 * '=' (the process would see another variable than the one named). */
cJSON *abx_ljson_env_map(lua_State *L, int idx, int arg);

/* The platform of this state's host; raises (misuse) if none. */
const struct abx_platform *abx_lsandbox_platform(lua_State *L);

/* Installs the cancellation check of the HTTP engine: a test's deadline
 * or an interrupt stops a call blocked in C. */
void abx_lsandbox_install_cancel(void);

#endif
