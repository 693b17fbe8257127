/* The run's sandbox bookkeeping in the host: the ledger opened before any
 * fork, the guardian, tracking in each worker, and the end-of-run sweep
 * with its one-line account:
 *   sandboxes: 3 created, 2 deleted, 1 kept, 0 left
 * Without a platform (no credentials, no --local) nothing here runs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "http.h"
#include "ledger.h"
#include "sweep.h"
#include "out.h"
#include "sandbox.h"
#include "track.h"

#define SWEEP_BUDGET 60.0        /* s, normal end of run */
#define SWEEP_BUDGET_SIGNAL 5.0  /* s: CI cancellation gives ~10 s */
#define SWEEP_BUDGET_LOOK 20.0   /* s, failed tests but an empty ledger */

static char g_ledger[512];
/* This process's session: every sandbox it creates is also tagged
 * e2e_session=<it>, and its sweeps (end of run, guardian) list only those:
 * shards of one pipeline on other machines share the run id. */
static char g_session[17];

/* Without random bytes there is no session: the sweeps then take the
 * whole run id, as before sessions existed. */
static void new_session(void)
{
    if (abx_track_random_id(g_session) != 0)
        g_session[0] = '\0';
}
/* What the last end-of-run sweep left alive, for the CI job summary. */
static struct abx_buf g_left_errors, g_left_kept;

const char *abx_run_ledger(void) { return g_ledger; }

void abx_sandboxes_leftover(const char **errors, const char **kept)
{
    *errors = abx_buf_cstr(&g_left_errors);
    *kept = abx_buf_cstr(&g_left_kept);
}

int abx_sandboxes_begin(const struct abx_config *cfg, int local_pid, char *err,
                        size_t errlen)
{
    const struct abx_env *e = &cfg->env;

    if (!cfg->lua.platform)
        return 0;
    if (abx_ledger_path(e->run_id, g_ledger, sizeof g_ledger) != 0) {
        snprintf(err, errlen, "run id '%s' cannot name a ledger", e->run_id);
        g_ledger[0] = '\0';
        return -1;
    }
    /* A second live run with the same id would sweep the first one's
     * sandboxes (same tag) mid-test and unlink its ledger. */
    if (abx_ledger_in_use(g_ledger)) {
        snprintf(err, errlen, "run id '%s' is in use by another live run "
                 "here (%s is locked): give each run its own E2E_RUN_ID",
                 e->run_id, g_ledger);
        g_ledger[0] = '\0';
        return -1;
    }
    if (abx_ledger_open(g_ledger, err, errlen) != 0) {
        g_ledger[0] = '\0';
        return -1;
    }
    new_session();
    if (abx_guardian_start(cfg->lua.platform, e->run_id, g_session,
                           g_ledger, local_pid) != 0)
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: warning: cannot start the "
                       "guardian (%s): a hard kill of this run would leave "
                       "its sandboxes to `abx-e2e cleanup`\n",
                       strerror(errno));
    return 0;
}

void abx_sandboxes_worker_init(const struct abx_config *cfg)
{
    struct abx_track_cfg t;
    char err[512];

    abx_http_after_fork();
    if (!cfg->lua.platform)
        return;
    memset(&t, 0, sizeof t);
    t.platform = cfg->lua.platform;
    t.run_id = cfg->env.run_id;
    t.session = g_session[0] ? g_session : NULL;
    t.ledger_path = g_ledger[0] ? g_ledger : NULL;
    t.keep_failed = cfg->opt.keep_failed;
    if (abx_track_init(&t, err, sizeof err) != 0)
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: sandbox tracking: %s\n",
                       err);
}

void abx_sandboxes_worker_end(void)
{
    struct abx_buf errs;

    if (!abx_track_ready())
        return;
    /* An interrupt must not cancel the deletes it asked for. */
    abx_http_set_cancel(NULL);
    abx_buf_init(&errs, 256 * 1024);
    if (abx_track_kill_all(&errs) > 0)
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: could not delete "
                       "sandboxes (the run's sweep retries):\n%s",
                       abx_buf_cstr(&errs));
    abx_buf_free(&errs);
    abx_out_flush();
}

/* The kept sandboxes of the ledger, with how to reach and delete them
 * (the template comes from the platform; the ledger has the test). */
static void print_kept(const struct abx_config *cfg)
{
    const struct abx_env *e = &cfg->env;
    struct abx_ledger l;
    char err[512];
    const char *dom = e->platform.domain;
    size_t i, n = 0;

    if (abx_ledger_load(g_ledger, &l, err, sizeof err) != 0)
        return;
    for (i = 0; i < l.n; i++) {
        struct abx_sandbox_info info;
        struct abx_err aerr;
        if (!l.e[i].kept || l.e[i].killed)
            continue;
        if (abx_buf_appendf(&g_left_kept, "%s\t%s\n", l.e[i].id, l.e[i].test) != 0) {
            /* Past the cap or out of memory: the job summary lists fewer;
             * the lines printed below have them all. */
        }
        if (n++ == 0)
            abx_out_puts(ABX_OUT_STDOUT, "kept sandboxes (--keep-failed):\n");
        memset(&info, 0, sizeof info);
        abx_err_clear(&aerr);
        abx_api_get(cfg->lua.platform, l.e[i].id, &info, &aerr);
        abx_out_printf(ABX_OUT_STDOUT, "  %s  template %s  host %d-%s.%s"
                       "  test %s\n", l.e[i].id,
                       info.template_id[0] ? info.template_id : "?",
                       ABX_ENVD_PORT, l.e[i].id, dom, l.e[i].test);
        abx_sandbox_info_free(&info);
    }
    if (n && abx_local_pid() > 0)
        abx_out_puts(ABX_OUT_STDOUT, "  (--local: they end with abx-local "
                                     "when this run stops it)\n");
    else if (n)
        abx_out_printf(ABX_OUT_STDOUT, "  delete them with: abx-e2e cleanup "
                       "--run-id %s --yes  (or make e2e-cleanup "
                       "ARGS=\"--run-id %s --yes\")\n", e->run_id,
                       e->run_id);
    abx_ledger_free(&l);
}

int abx_sandboxes_end(const struct abx_config *cfg, int suspect,
                      int quiet_if_none)
{
    const struct abx_env *e = &cfg->env;
    struct abx_sweep_report r;
    struct abx_ledger l;
    char err[512];
    size_t created = 0, deleted;
    int rc = 0, signaled = abx_signal_count() > 0;

    abx_buf_free(&g_left_errors);
    abx_buf_free(&g_left_kept);
    abx_buf_init(&g_left_errors, 512 * 1024);  /* r.log's cap is less */
    abx_buf_init(&g_left_kept, 64 * 1024);
    if (!cfg->lua.platform || !g_ledger[0])
        return 0;
    if (abx_ledger_load(g_ledger, &l, err, sizeof err) == 0) {
        created = l.n;
        abx_ledger_free(&l);
    }
    abx_http_set_cancel(NULL);
    abx_sweep_report_init(&r);
    /* A run that created nothing and ended cleanly has nothing to sweep
     * (and must not wait on an unreachable platform to say so). */
    /* Suspect with nothing recorded (a failed test may have lost a
     * create's reply): a shorter look by tag, not the full budget on a
     * platform that is failing anyway. */
    if (created || suspect || signaled)
        rc = abx_sweep_run(cfg->lua.platform, e->run_id,
                           g_session[0] ? g_session : NULL, g_ledger,
                           signaled ? SWEEP_BUDGET_SIGNAL
                           : created ? SWEEP_BUDGET : SWEEP_BUDGET_LOOK, &r);
    created += r.from_tag;
    deleted = created >= r.kept + r.left ? created - r.kept - r.left : 0;
    if (!quiet_if_none || created || r.left || r.log.len)
        abx_out_printf(ABX_OUT_STDOUT, "sandboxes: %zu created, %zu deleted, "
                       "%zu kept, %zu left\n", created, deleted, r.kept,
                       r.left);
    if (r.log.len) {
        abx_out_printf(ABX_OUT_STDOUT, "sandbox cleanup errors:\n%s",
                       abx_buf_cstr(&r.log));
        if (abx_buf_append(&g_left_errors, r.log.data, r.log.len) != 0) {
            /* Out of memory: not in the job summary; printed just above. */
        }
    }
    if (r.kept)
        print_kept(cfg);
    /* A clean run leaves nothing for the janitor: no ledger either. */
    if (rc == 0 && r.kept == 0)
        unlink(g_ledger);
    abx_sweep_report_free(&r);
    abx_guardian_done();
    return rc == 0 ? 0 : -1;
}
