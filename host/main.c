/* abx-e2e: entry point. Parses the command line, loads configuration
 * (credentials go into the masker first), collects, selects, runs on
 * workers, reports, and maps the outcome to pytest's exit codes. One exit
 * path: every report is written, also after an interrupt. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>

#include "config.h"
#include "doctor.h"
#include "http.h"
#include "lstate.h"
#include "out.h"
#include "repl.h"
#include "report.h"
#include "run.h"
#include "sandbox.h"
#include "wallclock.h"

static int usage_error(const char *msg)
{
    abx_out_printf(ABX_OUT_STDERR, "ERROR: %s\n", msg);
    return ABX_EXIT_USAGE_ERROR;
}

/* A report path that is a directory can never be written: say so before
 * the run, not after an hour of tests. */
static int report_path_ok(const char *opt, const char *path, char *err,
                          size_t errlen)
{
    struct stat st;

    if (path && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s %s: is a directory (give a file name)",
                 opt, path);
        return 0;
    }
    return 1;
}

/* exec SCRIPT, repl: their sandboxes are tracked in this process. */
static int exec_with_sandboxes(const struct abx_config *cfg)
{
    char err[1024];
    int code;

    if (abx_sandboxes_begin(cfg, abx_local_pid(), err, sizeof err) != 0)
        return usage_error(err);
    abx_sandboxes_worker_init(cfg);
    code = cfg->opt.repl ? abx_repl_main(cfg) : abx_exec_main(cfg);
    abx_sandboxes_worker_end();
    if (abx_sandboxes_end(cfg, abx_signal_count() > 0 || code != 0, 1) != 0 &&
        code == 0)
        code = ABX_EXIT_TESTS_FAILED;
    return code;
}

/* Platform settings that need the command line: --trace-http, --local,
 * and a configured platform that does not parse. 0, or an exit code. */
static int setup_platform(const struct abx_opts *o, struct abx_env *env)
{
    if (o->trace_http) {
        struct abx_http_cfg cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.trace = 1;
        abx_http_configure(&cfg);
    }
    /* abx-local reads it; the suite's tests may too (capabilities). One
     * default for --local, make e2e-local and exec --local: fc, the cloud
     * the product ships against (abx-local serve alone keeps e2b). */
    if (o->local)
        setenv("ABX_LOCAL_PROFILE", o->profile, 1);
    /* --local starts abx-local only when a test or script will run
     * (start_local); the doctor checks the host first and starts it
     * itself (doctor_local.c). */
    if (!o->local && env->has_credentials && !env->has_platform && !o->doctor) {
        /* (doctor reports it as a blocking problem with its fix) */
        abx_out_printf(ABX_OUT_STDERR, "ERROR: configuration: %s\n",
                       env->platform_err);
        return ABX_EXIT_USAGE_ERROR;
    }
    return 0;
}

/* --local: abx-local started, its platform the last part of cfg. 0, or
 * an exit code (said). */
static int start_local(struct abx_config *cfg)
{
    char err[8192];

    if (abx_local_start(&cfg->env, &cfg->opt, err, sizeof err) != 0) {
        abx_out_printf(ABX_OUT_STDERR, "ERROR: --local: %s\n", err);
        return ABX_EXIT_INTERNAL_ERROR;
    }
    abx_config_seal(cfg);
    return 0;
}

/* exec: a script that cannot be read or compiled is a usage error found
 * before abx-local starts (exec.c loads it again in its own state). */
static int script_ok(const char *path)
{
    lua_State *L = luaL_newstate();
    int ok = L && luaL_loadfile(L, path) == LUA_OK;

    if (L && !ok)
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e exec: %s\n", lua_tostring(L, -1));
    if (L)
        lua_close(L);
    return ok;
}

/* The run command; cfg is completed (start_local) once its tests are
 * known to exist, then read only. */
static int run(struct abx_config *cfg)
{
    const struct abx_opts *o = &cfg->opt;
    struct abx_collection c;
    struct abx_run r;
    struct abx_summary sum;
    struct abx_report rep;
    char err[4096];
    size_t i, n, errors = 0;
    int rc, code, leaked;

    memset(&r, 0, sizeof r);
    r.started = abx_clock();
    r.started_wall = abx_wall_clock();
    if (!report_path_ok("--junitxml", o->junitxml, err, sizeof err) ||
        !report_path_ok("--json", o->json, err, sizeof err) ||
        !report_path_ok("--html", o->html, err, sizeof err))
        return usage_error(err);
    if (!o->collect_only) {
        /* Before any fork: the workers inherit it. */
        abx_trace_configure(o->trace_mode, o->output, (size_t)o->trace_body_max);
        if (abx_traces_prepare(o->output ? o->output : "test-results", err, sizeof err) != 0)
            return usage_error(err);
    }
    rc = abx_collect(cfg, &c, err, sizeof err);
    if (rc == -1) {
        code = usage_error(err);
        goto out_collection;
    }
    if (rc == -3) {
        abx_out_printf(ABX_OUT_STDERR, "INTERNAL ERROR: %s\n", err);
        code = ABX_EXIT_INTERNAL_ERROR;
        goto out_collection;
    }
    if (rc == -2) {
        abx_out_puts(ABX_OUT_STDOUT, "!!! Interrupted during collection "
                                     "!!!\n");
        code = ABX_EXIT_INTERRUPTED;
        goto out_collection;
    }
    if (c.usage.len > 0) {
        abx_out_printf(ABX_OUT_STDERR, "ERROR: unknown markers (register "
                       "them with e2e.register_marker):\n%s",
                       abx_buf_cstr(&c.usage));
        code = ABX_EXIT_USAGE_ERROR;
        goto out_collection;
    }
    if (abx_select(o, &c, err, sizeof err) != 0) {
        code = usage_error(err);
        goto out_collection;
    }
    for (i = 0, n = 0; i < c.n; i++) {
        errors += c.files[i].collect_error != NULL;
        n += c.files[i].nselected;
    }
    if (o->collect_only) {
        abx_term_collect_only(o, &c);
        if (errors && !o->continue_on_collection_errors)
            abx_term_collect_stop(o, errors);
        code = errors ? (o->continue_on_collection_errors
                             ? ABX_EXIT_TESTS_FAILED : ABX_EXIT_INTERRUPTED)
               : n    ? ABX_EXIT_OK
                      : ABX_EXIT_NO_TESTS_COLLECTED;
        goto out_collection;
    }
    /* Only now, when a test will run: a wrong path, a file that does
     * not load or a selection of nothing never starts abx-local. */
    if (o->local && n > 0 && !(errors && !o->continue_on_collection_errors) &&
        (code = start_local(cfg)) != 0)
        goto out_collection;
    if (abx_sandboxes_begin(cfg, abx_local_pid(), err, sizeof err) != 0) {
        abx_out_printf(ABX_OUT_STDERR, "INTERNAL ERROR: sandbox ledger: "
                       "%s\n", err);
        code = ABX_EXIT_INTERNAL_ERROR;
        goto out_collection;
    }
    abx_term_header(cfg, &c);
    if (errors && !o->continue_on_collection_errors) {
        /* pytest: a file that does not load stops the run before any
         * test; the errors alone are reported. */
        r.collect_errors = errors;
        for (i = 0; i < c.n; i++) {
            if (c.files[i].collect_error) {
                abx_run_add(&r, c.files[i].collect_error);
                c.files[i].collect_error = NULL;
            }
        }
    } else {
        abx_schedule(cfg, &c, &r);
    }

    abx_summary_init(&sum);
    for (i = 0; i < r.n; i++)
        abx_summary_add(&sum, r.results[i]);
    /* Whatever the outcome: delete what is left and sweep the tag, before
     * the closing line (pytest's session teardown also comes first; the
     * closing count stays the last line). A leak fails a green run. A
     * failed test may have lost a create whose reply never came (cut by
     * its deadline, a 5xx after the platform made it): in no ledger, so
     * failures force the tag sweep too. */
    leaked = abx_sandboxes_end(cfg, r.interrupted || r.worker_crashed ||
                               sum.counts[ABX_OUTCOME_FAILED] ||
                               abx_summary_errors(&sum), 0);
    sum.deselected = c.deselected;
    sum.duration = abx_clock() - r.started;
    code = r.internal_error
               ? ABX_EXIT_INTERNAL_ERROR
               : abx_summary_exit_code(&sum, r.interrupted ||
                                                 r.collect_errors);
    if (leaked != 0 && code == ABX_EXIT_OK)
        code = ABX_EXIT_TESTS_FAILED;
    if (o->fail_on_flaky && sum.counts[ABX_OUTCOME_FLAKY] && code == ABX_EXIT_OK)
        code = ABX_EXIT_TESTS_FAILED;
    sum.exit_code = code;
    abx_report_of_run(&rep, cfg, &r, &sum);   /* what every writer renders */
    abx_ci_report(cfg, &rep);  /* GitHub Actions; before the close */
    abx_term_finish(o, &rep);
    if (abx_report_write_files(&rep, o->junitxml, o->json, o->html, o->quiet) != 0 &&
        code == ABX_EXIT_OK)
        code = ABX_EXIT_INTERNAL_ERROR;
    /* A requested record that could not be written fails the run like a
     * report would: CI keeps it as its proof. */
    if (o->evidence && abx_evidence_write(cfg, &rep) != 0 &&
        code == ABX_EXIT_OK)
        code = ABX_EXIT_INTERNAL_ERROR;
    abx_lastfailed_update(r.results, r.n, &c);
    abx_durations_update(r.results, r.n);
    abx_run_free(&r);
out_collection:
    abx_collection_free(&c);
    return code;
}

int main(int argc, char **argv)
{
    /* Static: workers and the tracker keep pointers into it for the
     * whole process (and its children). */
    static struct abx_config cfg;
    int rc;

    abx_signals_parent();
    abx_relay_start();
    if (abx_config_build(&cfg, argc, argv, &rc) != 0)
        goto out;
    if (cfg.opt.cleanup) {
        rc = abx_janitor_main(&cfg);
        goto out;
    }
    if (cfg.opt.merge) {
        rc = abx_merge_main(&cfg);
        goto out;
    }
    if (cfg.opt.diff) {
        rc = abx_diffrec_main(&cfg);
        goto out;
    }
    rc = setup_platform(&cfg.opt, &cfg.env);
    if (rc != 0)
        goto out;
    abx_lstate_init(&cfg);
    if (cfg.opt.doctor) {
        rc = abx_doctor_main(&cfg);
    } else if (cfg.opt.exec || cfg.opt.repl) {
        if (cfg.opt.exec && !script_ok(cfg.opt.script))
            rc = ABX_EXIT_USAGE_ERROR;
        else if (!cfg.opt.local || (rc = start_local(&cfg)) == 0)
            rc = exec_with_sandboxes(&cfg);
    } else {
        rc = run(&cfg);
    }
out:
    abx_local_stop();
    abx_config_free(&cfg);
    abx_relay_stop();
    return rc;
}
