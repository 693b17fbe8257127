/* The Lua states of this process: test files', session states', exec's
 * and the REPL's, each with the bindings and the host's description. */
#ifndef ABX_HOST_LSTATE_H
#define ABX_HOST_LSTATE_H

#include "config.h"

/* ---- Lua states (lstate.c) -------------------------------------------- */
/* Process-wide set-up (the heap ceiling, the bindings' registrations):
 * once, before any state is opened or any child forked. */
void abx_lstate_init(const struct abx_config *cfg);
/* A description for this process's states: cfg's settings, output to
 * stdout, no worker. The caller sets its own hooks after. */
void abx_lstate_host(struct abx_e2e_host *h, const struct abx_config *cfg);

/* New state described by h (which must outlive it): the bindings, `e2e`
 * loaded, output captured (unless -s), strict globals, package.path
 * rooted at dir and dir/conftest.lua loaded. NULL with err on failure
 * (err mentions the file). */
lua_State *abx_lstate_open(const struct abx_e2e_host *h, const char *dir,
                           char *err, size_t errlen);
/* Pushes the e2e module table of L. */
void abx_lstate_module(lua_State *L);
/* Loads and runs a test file in L (collection). 0, or -1 with err. */
int abx_lstate_load_test(lua_State *L, const char *path, char *err,
                         size_t errlen);
/* Directory part of path ("." if none) into out. */
void abx_dirname(const char *path, char *out, size_t outlen);

#endif
