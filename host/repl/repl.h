/* `abx-e2e exec` and `abx-e2e repl`: one script, or a prompt, with the
 * suite's modules. */
#ifndef ABX_HOST_REPL_H
#define ABX_HOST_REPL_H

#include "config.h"

/* ---- exec and repl (exec.c, repl.c, repl_line.c) --------------------- */
int abx_exec_main(const struct abx_config *cfg);
/* The Lua state of a script (exec) or the REPL: abx_lstate_open(dir) with
 * plain globals and os.exit(n) raising an Exit error (code = n) that ends
 * the script cleanly. NULL with err. */
lua_State *abx_exec_state(const struct abx_e2e_host *h, const char *dir, char *err,
                          size_t errlen);
/* Calls e2e.<fn>() protected (_begin_script, _finish_script: the script's
 * scope, whose end kills its sandboxes); the messages of failed
 * finalizers are appended to errs (one per line). 0, or -1 if any. */
int abx_exec_scope(lua_State *L, const char *fn, struct abx_buf *errs);
/* `abx-e2e repl`: the interactive prompt; returns the exit code (0, or
 * os.exit's code, 2 after SIGTERM). Sandboxes as with exec (main.c). */
int abx_repl_main(const struct abx_config *cfg);

#endif
