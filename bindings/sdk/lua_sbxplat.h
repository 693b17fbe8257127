/* What a sandbox-facing module needs of its state: the platform, and
 * the HTTP engine's cancellation hook (lua_sbxplat.c). */
#ifndef ABX_LUA_SBXPLAT_H
#define ABX_LUA_SBXPLAT_H

#include <lua.h>

#include "api.h"

/* The platform of this state's host; raises (misuse) if none. */
const struct abx_platform *abx_lsandbox_platform(lua_State *L);

/* Installs the cancellation check of the HTTP engine: a test's deadline
 * or an interrupt stops a call blocked in C. */
void abx_lsandbox_install_cancel(void);

#endif
