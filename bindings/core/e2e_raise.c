/* A client error raised into Lua (e2e_raise.h): the one error shape
 * (e2e_error.c) filled from struct abx_err, and the deadline's say on
 * a cancelled call (e2e_region.c). */
#include <lua.h>

#include "e2e_error.h"
#include "e2e_raise.h"
#include "e2e_trace.h"
#include "errclass.h"
#include "lua_e2e.h"

void abx_err_push(lua_State *L, const struct abx_err *e)
{
    abx_err_push_new(L, abx_errclass_name(e->cls), e->message);
    if (e->status) {
        lua_pushinteger(L, e->status);
        lua_setfield(L, -2, "status");
    }
    if (e->code[0]) {
        lua_pushstring(L, e->code);
        lua_setfield(L, -2, "code");
    }
    if (e->body_code) {
        lua_pushinteger(L, e->body_code);
        lua_setfield(L, -2, "body_code");
    }
}

int abx_err_raise(lua_State *L, const struct abx_err *e)
{
    /* A call cut short by the test's deadline or an interrupt ends the
     * test as the runner's own timeout/interrupt, not as an error. */
    if (e->cls == ABX_E_CANCELED || e->cls == ABX_E_TIMEOUT)
        abx_region_check(L);
    abx_err_push(L, e);
    abx_ltrace_raise(L, -1);
    return lua_error(L);
}
