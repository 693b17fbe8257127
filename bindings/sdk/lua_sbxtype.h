/* The sandbox userdata every sandbox-facing module takes (lua_sbxtype.c):
 * its struct, its metatables' names, the checks of a handle and of the
 * sandbox behind a sub-object. The public Lua API is in docs/lua-api.md. */
#ifndef ABX_LUA_SBXTYPE_H
#define ABX_LUA_SBXTYPE_H

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

#endif
