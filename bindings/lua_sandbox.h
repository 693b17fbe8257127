/* Internals shared by the sandbox-facing Lua modules (lua_sandbox.c,
 * lua_commands.c, lua_files.c, lua_code.c): the sandbox userdata, error
 * values, and JSON <-> Lua conversion. The public Lua API is documented
 * in docs/lua-api.md. */
#ifndef ABX_LUA_SANDBOX_H
#define ABX_LUA_SANDBOX_H

#include <cjson/cJSON.h>
#include <lua.h>

#include "envd.h"
#include "errclass.h"
#include "track.h"

#define ABX_SANDBOX_MT "e2e.Sandbox"
#define ABX_COMMANDS_MT "e2e.Commands"
#define ABX_FILES_MT "e2e.Files"
#define ABX_CMDHANDLE_MT "e2e.CommandHandle"
#define ABX_WATCHER_MT "e2e.Watcher"
#define ABX_SBXERR_MT "e2e.SandboxError"

/* The userdata behind every Lua sandbox handle. The tracked record lives
 * as long as the process (track.h), so a handle that outlives its scope
 * only finds t->alive == 0 and raises "sandbox <id> was killed". */
struct abx_lsandbox {
    struct abx_tracked *t;        /* ours (created by this run), or NULL */
    struct abx_sandbox_info own;  /* for a connected, untracked sandbox */
    struct abx_endpoint envd;     /* port 49983 */
    int killed;                   /* killed through this handle */
};

/* The sandbox at idx; raises (misuse) if it is not one, or was killed. */
struct abx_lsandbox *abx_lsandbox_check(lua_State *L, int idx);
/* Its info (tracked or own). */
const struct abx_sandbox_info *abx_lsandbox_info(struct abx_lsandbox *s);

/* Pushes an error value {class=, message=, status=, code=} with
 * metatable ABX_SBXERR_MT (__tostring "<class>: <message>"). */
void abx_lerr_push(lua_State *L, const struct abx_err *e);
/* Pushes it and raises it (never returns). */
int abx_lerr_raise(lua_State *L, const struct abx_err *e);

/* JSON -> Lua: objects become tables, arrays sequences, null nil. */
void abx_ljson_push(lua_State *L, const cJSON *v);
/* Lua table of string keys -> JSON object of string values (envs,
 * metadata). nil gives NULL. Raises (argerror on arg) on other shapes. */
cJSON *abx_ljson_string_map(lua_State *L, int idx, int arg);

/* Installs the cancellation check of the HTTP engine: a test's deadline
 * or an interrupt stops a call blocked in C. */
void abx_lsandbox_install_cancel(void);

#endif
