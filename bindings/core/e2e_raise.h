/* A client error (struct abx_err, errclass.h) as a Lua error value of
 * the one shape (e2e_error.h); e2e_raise.c. */
#ifndef ABX_E2E_RAISE_H
#define ABX_E2E_RAISE_H

#include <lua.h>

struct abx_err;

/* Pushes the C error e as an error value {class=, message=, status=,
 * code=, body_code=} (class: the SDK's, abx_errclass_name). */
void abx_err_push(lua_State *L, const struct abx_err *e);
/* Pushes it and raises it (never returns). A Timeout/Canceled error that
 * came from the test's deadline or an interrupt raises the runner's own
 * timeout/interrupt error instead, so the test ends as a timeout. Free
 * every C resource before calling it. */
int abx_err_raise(lua_State *L, const struct abx_err *e);

#endif
