/* The one shape of every error value e2e raises into Lua (docs/lua-api.md
 * "Errors"): a table {class =, message =, ...} with the metatable
 * "e2e.Error", whose __tostring is "<class>: [<name>: ]<message>".
 * One vocabulary, abx_err_*: the C error (struct abx_err, errclass.h),
 * its Lua value (here) and the two joined (e2e_raise.h).
 * Operational failures carry the SDK's classes (NotFound, Timeout, ...);
 * the runner's own stops carry the classes below (which of them stop a
 * test, never caught by raises: STOPS in expect.lua). */
#ifndef ABX_E2E_ERROR_H
#define ABX_E2E_ERROR_H

#include <lua.h>

#define ABX_ERR_MT "e2e.Error"  /* registry name of the metatable */

/* The runner's classes. Failed is an assertion failure (catchable by
 * raises); the others stop the test and are never caught by raises. */
#define ABX_ERR_FAILED "Failed"
#define ABX_ERR_SKIPPED "Skipped"
#define ABX_ERR_TEST_TIMEOUT "TestTimeout"  /* the test's own deadline */
#define ABX_ERR_INTERRUPTED "Interrupted"
#define ABX_ERR_EXIT "Exit"                 /* os.exit in abx-e2e exec */
#define ABX_ERR_ERROR "Error"  /* any other error; the raised value in .value */

/* Pushes the metatable (created on first use in each state). */
void abx_err_mt(lua_State *L);
/* Pushes a new error value {class=, message=} with the metatable. */
void abx_err_push_new(lua_State *L, const char *cls, const char *msg);
/* 1 when the value at idx is one of ours (our metatable, a string class):
 * a plain table that looks like one is not. */
int abx_err_is(lua_State *L, int idx);
/* The class and message of the error at idx, never NULL; valid while the
 * value stays on the stack. Anything not ours reads as class "Error". */
const char *abx_err_class_of(lua_State *L, int idx);
const char *abx_err_message_of(lua_State *L, int idx);
/* Pushes the text a report shows for the error at idx (ours): the message
 * of Failed, Skipped and Error (their text is complete: "file:line: ..."),
 * else tostring's "<class>: ...". */
void abx_err_push_text(lua_State *L, int idx);

#endif
