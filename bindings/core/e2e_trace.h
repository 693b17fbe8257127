/* SDK calls into the running test's trace (runtime/output/trace.h,
 * docs/reports.md "Traces"): each traced function is a closure around
 * the real one that records a "call" event (its arguments) and, when it
 * returns, a "return" event (its duration and results). An operational
 * error it raises is recorded where it is raised (abx_ltrace_raise), as a
 * "raise" event of the innermost call; the call is never wrapped in a
 * pcall, so errors, tracebacks and deadlines stay as they are. */
#ifndef ABX_E2E_TRACE_H
#define ABX_E2E_TRACE_H

#include <lauxlib.h>
#include <lua.h>

/* luaL_setfuncs(L, l, 0) into the table at the top, each function traced
 * as "<prefix>.<name>" when traces are not off. */
void abx_ltrace_setfuncs(lua_State *L, const luaL_Reg *l, const char *prefix);
/* luaL_newlib with traced functions. */
void abx_ltrace_newlib(lua_State *L, const luaL_Reg *l, const char *prefix);
/* A "raise" event for the error value at idx (class, status, message). */
void abx_ltrace_raise(lua_State *L, int idx);
/* core.trace(kind, name [, detail]): an event from the runner's Lua
 * (fixture set-up and teardown). */
int abx_ltrace_event_l(lua_State *L);

#endif
