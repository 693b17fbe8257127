/* Internals shared by the sandbox-facing Lua modules (lua_sandbox.c,
 * lua_sbxlist.c, lua_sbxhttp.c, lua_code.c, lua_commands.c, lua_files.c):
 * the sandbox userdata, info tables, error values, JSON <-> Lua
 * conversion and the cancellation hook (lua_sbxerr.c). The public Lua
 * API is documented in docs/lua-api.md. */
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

/* The userdata behind every Lua sandbox handle. The tracked record lives
 * as long as the process (track.h), so a handle that outlives its scope
 * only finds t->alive == 0 and raises "sandbox <id> was killed". */
struct abx_lsandbox {
    struct abx_tracked *t;        /* ours (created by this run), or NULL */
    struct abx_sandbox_info own;  /* for a connected, untracked sandbox */
    struct abx_endpoint envd;     /* port 49983 */
    unsigned gen;                 /* t->gen envd was built from: a connect
                                     through another handle may bring new
                                     tokens, picked up on the next call */
    int killed;                   /* killed through this handle */
    int closed;                   /* __gc ran (called by hand: the handle
                                     is unusable, "sandbox handle is
                                     closed") */
};

/* ---- the sandbox type (lua_sbxtype.c) -------------------------------- */
/* The sandbox at idx; raises (misuse) if it is not one, or was killed
 * ("sandbox <id> was killed"). Marks it as used by the current test (so a
 * failure names it, and --keep-failed keeps it). */
struct abx_lsandbox *abx_lsandbox_check(lua_State *L, int idx);
/* The same without the killed check (kill, is_running answer false). */
struct abx_lsandbox *abx_lsandbox_check_open(lua_State *L, int idx);
/* Rebuilds its envd endpoint if another handle's connect brought new
 * tokens; raises on failure. */
void abx_lsandbox_sync(lua_State *L, struct abx_lsandbox *s);
/* The sandbox in user value 1 of the userdata at idx (sbx.commands,
 * sbx.files, a command handle, a watcher): checked alive (else raises
 * "sandbox <id> was killed") and touched by the current test. */
struct abx_lsandbox *abx_lowner(lua_State *L, int idx);
/* 1 when that sandbox was killed (no raise): a handle that outlived its
 * sandbox lets its stream go before abx_lowner raises, not at __gc. */
int abx_lowner_killed(lua_State *L, int idx);
/* 1 when it was killed (through any handle or by its scope); no raise. */
int abx_lsandbox_killed(const struct abx_lsandbox *s);
/* Its info (tracked or own). */
const struct abx_sandbox_info *abx_lsandbox_info(struct abx_lsandbox *s);

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

/* The platform of this state's host; raises (misuse) if none. */
const struct abx_platform *abx_lsandbox_platform(lua_State *L);

/* sbx.commands / sbx.files (lua_commands.c / lua_files.c): push a new
 * userdata of ABX_COMMANDS_MT / ABX_FILES_MT bound to the sandbox at
 * sbx_idx (keep a reference to it, e.g. as a user value, so the sandbox
 * userdata outlives them). The sandbox caches the result in its own user
 * values, so each is called at most once per sandbox handle. */
void abx_lcommands_push(lua_State *L, int sbx_idx);
void abx_lfiles_push(lua_State *L, int sbx_idx);

/* Module openers (registered in bindings.c): e2e.sandbox (lua_sandbox.c),
 * e2e.commands (lua_commands.c), e2e.files (lua_files.c); each returns
 * its module table (commands/files: the methods, metatables registered). */
int luaopen_e2e_sandbox(lua_State *L);
int luaopen_e2e_commands(lua_State *L);
int luaopen_e2e_files(lua_State *L);

/* sbx:http(port, {method=, path=, body=, headers=, timeout=})
 * (lua_sbxhttp.c). */
int abx_lsandbox_http(lua_State *L);

/* sbx:run_code / sbx:create_code_context (lua_code.c), installed in the
 * sandbox methods by lua_sandbox.c. */
int abx_lcode_run(lua_State *L);
int abx_lcode_create_context(lua_State *L);

/* Installs the cancellation check of the HTTP engine: a test's deadline
 * or an interrupt stops a call blocked in C. */
void abx_lsandbox_install_cancel(void);

#endif
