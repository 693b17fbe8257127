/* The sweeper: kills every ledger id neither killed nor kept, then lists
 * the platform by the run's tag (metadata e2e=<run id>) and kills what is
 * left (kept ids excepted), repeating until the list is empty or the
 * budget is spent. Used by the runner at the end of a run and on
 * SIGINT/SIGTERM, by the guardian after a hard kill, and by the janitor. */
#ifndef ABX_SWEEP_H
#define ABX_SWEEP_H

#include <stddef.h>

#include "api.h"
#include "buf.h"
#include "ledger.h"

struct abx_sweep_report {
    size_t from_ledger;   /* ids the ledger still listed alive */
    size_t from_tag;      /* extra ids found by the tag listing */
    size_t killed;
    size_t gone;          /* already deleted (404) */
    size_t kept;          /* left alive on purpose (--keep-failed) */
    size_t errors;
    size_t left;          /* ids still alive (or in doubt) at the end */
    struct abx_buf log;   /* one line per error ("<id>: <message>") */
};
void abx_sweep_report_init(struct abx_sweep_report *r);
void abx_sweep_report_free(struct abx_sweep_report *r);
/* Sweeps run_id (ledger_path may be NULL: tag only) within budget s;
 * with a session, only the sandboxes also tagged e2e_session=<session>.
 * Appends "kill" lines to the ledger for what it deleted. 0 when nothing
 * tagged is left alive (kept ones aside), -1 otherwise. */
int abx_sweep_run(const struct abx_platform *p, const char *run_id,
                  const char *session, const char *ledger_path,
                  double budget, struct abx_sweep_report *r);

#endif
