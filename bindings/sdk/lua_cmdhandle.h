/* The command handle (metatable e2e.CommandHandle, lua_cmdhandle.c):
 * owner of one envd process stream, shared by sbx.commands:run (a
 * foreground run is a handle waited on at once), run{background=true}
 * and commands:connect. Lua API: docs/lua-api.md "sbx.commands". */
#ifndef ABX_LUA_CMDHANDLE_H
#define ABX_LUA_CMDHANDLE_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#include "envd.h"

/* Pushes a new handle without a stream, bound to the sandbox at sbx_idx
 * (kept alive as its user value 1); the functions at cbo/cbe (0 = none)
 * become its callbacks for wait. Push it BEFORE starting the stream, so
 * the stream is anchored from the moment it exists. */
void abx_lhandle_push(lua_State *L, int sbx_idx, int cbo, int cbe);
/* Gives the handle at hidx its stream (never raises). timeout: the
 * command's lifetime in s (0 = none), for the client-side guard. */
void abx_lhandle_own(lua_State *L, int hidx, struct abx_proc *pr,
                     double timeout);
/* Waits for the end of the command (see h:wait): pushes the result
 * {stdout, stderr, exit_code, error}, or raises CommandExit / the
 * stream's error / the error of a callback (cbo/cbe: stack indices of
 * functions, 0 = the handle's own). */
int abx_lhandle_wait(lua_State *L, int hidx, int cbo, int cbe);
/* Sends data to the stdin of process pid in pieces that fit one envd
 * request each (a large string in one SendInput is refused as too large),
 * in order; raises the first failure. Returns 0. */
int abx_lsend_stdin(lua_State *L, const struct abx_endpoint *envd,
                    uint32_t pid, const char *data, size_t len);
/* Streams held by handles of this process (selftest counter). */
size_t abx_lhandle_open_streams(void);

#endif
