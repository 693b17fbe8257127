/* The platform of a state, and the cancellation check of the HTTP
 * engine (lua_sbxplat.h). */
#include <lauxlib.h>
#include <lua.h>

#include "http.h"
#include "lua_e2e.h"
#include "lua_sbxplat.h"

const struct abx_platform *abx_lsandbox_platform(lua_State *L)
{
    const struct abx_e2e_host *h = abx_e2e_host_of(L);

    if (!h->set->platform)
        luaL_error(L, "no sandbox platform configured (missing credentials:"
                   " %s): set them, or add --local to run on a local "
                   "abx-local", h->set->missing_credentials &&
                   h->set->missing_credentials[0] ? h->set->missing_credentials
                                             : "ABX_SANDBOX_API_KEY");
    return h->set->platform;
}

/* 1: interrupted (only where the region may be interrupted: teardown
 * steps keep going so that sandboxes are still deleted on SIGINT);
 * 2: the region's deadline passed. */
static int cancel_check(void)
{
    double dl;

    if (abx_region_interrupted() && abx_region_interruptible())
        return 1;
    dl = abx_region_deadline();
    if (dl > 0 && abx_clock() >= dl)
        return 2;
    return 0;
}

void abx_lsandbox_install_cancel(void)
{
    abx_http_set_cancel(cancel_check);
}
