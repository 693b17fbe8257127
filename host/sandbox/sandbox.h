/* The run's sandboxes: its ledger and sweeps, the guardian, the janitor
 * (`abx-e2e cleanup`) and --local's abx-local. */
#ifndef ABX_HOST_SANDBOX_H
#define ABX_HOST_SANDBOX_H

#include "config.h"

/* ---- sandboxes: ledger, sweep, guardian, janitor, --local ------------ */
/* Run start (parent, before any fork): opens the run's ledger and starts
 * the guardian. Without a platform it does nothing. 0, or -1 with err. */
int abx_sandboxes_begin(const struct abx_config *cfg, int local_pid, char *err,
                        size_t errlen);
/* The ledger path of this run ("" before begin / without a platform). */
const char *abx_run_ledger(void);
/* Run end (parent): sweeps within budget (shorter after a signal); the
 * tag is swept when the ledger lists a sandbox or the run is suspect
 * (interrupted, a worker crashed: a create may have lost its line),
 * prints "sandboxes: ..." with errors and kept ones (the line only if
 * something happened when quiet_if_none: exec mode), tells the guardian.
 * Returns 0, or -1 if anything is left alive. */
int abx_sandboxes_end(const struct abx_config *cfg, int suspect,
                      int quiet_if_none);
/* What abx_sandboxes_end left alive, "" when nothing: *errors its
 * sweep errors ("<id>: <why>" lines), *kept the kept ones ("<id>\t<test>"
 * lines). Valid until the next abx_sandboxes_end. */
void abx_sandboxes_leftover(const char **errors, const char **kept);
/* Sandbox tracking in a worker (or exec): after fork, before tests. */
void abx_sandboxes_worker_init(const struct abx_config *cfg);
/* Worker end: deletes what is still tracked; errors go to stderr. */
void abx_sandboxes_worker_end(void);

/* Guardian (guardian.c): sweeps this session's sandboxes of run_id.
 * local_pid > 0: abx-local to stop after the sweep. 0, or -1 (not
 * started; the run goes on without it). */
int abx_guardian_start(const struct abx_platform *p, const char *run_id,
                       const char *session, const char *ledger,
                       int local_pid);
void abx_guardian_done(void);

/* `abx-e2e cleanup` (janitor.c): returns the exit code. */
int abx_janitor_main(const struct abx_config *cfg);

/* --local (local.c): starts abx-local and fills e's platform (its key
 * joins the masker). 0, or -1 with err (including its stderr). */
int abx_local_start(struct abx_env *e, const struct abx_opts *o, char *err, size_t errlen);
int abx_local_pid(void);      /* 0 when not running */
/* abx-local's path: $ABX_LOCAL_BIN, the build tree beside abx-e2e, or
 * PATH. 0, or -1 with err. */
int abx_local_binary(char *out, size_t outlen, char *err, size_t errlen);
/* argv (through `sudo -n` when sudo) in a process group of its own, no
 * input, its stdout to out_fd (-1: nowhere), its stderr nowhere, for at
 * most limit s, or (interruptible) until a signal came: then SIGKILLed.
 * Its exit status, or -1. Clean-ups after a ^C are not interruptible. */
int abx_local_run(const char *const argv[], int sudo, int out_fd, double limit,
                  int interruptible);
void abx_local_stop(void);    /* SIGTERM, wait, SIGKILL; idempotent */

#endif
