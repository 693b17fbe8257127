/* Shared types of the abx-e2e host: options, collected items, and the
 * entry points of each host file (one concern per file). */
#ifndef ABX_HOST_H
#define ABX_HOST_H

#include <signal.h>
#include <stddef.h>

#include <cjson/cJSON.h>
#include <lua.h>

#include "api.h"
#include "buf.h"
#include "lua_e2e.h"
#include "result.h"
#include "trace.h"

#define ABX_E2E_VERSION "0.1.0"
#define ABX_TEARDOWN_BUDGET 60.0
#define ABX_LASTFAILED_PATH ".abx-e2e/lastfailed.json"
#define ABX_DURATIONS_PATH ".abx-e2e/durations.json"
#define ABX_EVIDENCE_DIR ".agents/evidence/verify"

/* ---- options (cli.c) -------------------------------------------------- */
/* --dist, as pytest-xdist: which tests a worker may take (sched.c). */
enum abx_dist {
    ABX_DIST_LOAD = 0,   /* any test on any worker */
    ABX_DIST_LOADFILE,   /* a file's tests on one worker */
    ABX_DIST_LOADGROUP,  /* a describe's (or `group`'s) tests on one */
};

struct abx_opts {
    const char *keyword;       /* -k */
    const char *markexpr;      /* -m */
    long maxfail;              /* -x = 1; 0 = unlimited */
    long reruns;               /* --reruns N (0: none) */
    double reruns_delay;       /* --reruns-delay S */
    int fail_on_flaky;         /* --fail-on-flaky */
    int allow_skips;           /* --allow-skips: an unexplained skip stays a skip */
    int lf, ff;
    int lfnf_none;             /* --lfnf none: no failures -> run nothing */
    int collect_only;
    int continue_on_collection_errors;  /* else errors stop the run */
    long shard_k, shard_n;     /* 0/0 = no sharding */
    long durations;            /* -1 = off, 0 = all */
    double timeout;            /* per test, s; 0 = none */
    long max_memory_mb;        /* Lua heap ceiling per worker; 0 = none */
    int workers;               /* -n; 0 = not given (one worker) */
    enum abx_dist dist;        /* --dist (ABX_DIST_LOAD) */
    int verbose;               /* -v count */
    int quiet;                 /* -q count */
    int no_capture;            /* -s */
    char report_chars[32];     /* -r, expanded */
    const char *junitxml, *json, *evidence;
    const char *html;          /* --html FILE: the self-contained page */
    enum abx_trace_mode trace_mode;   /* --trace (retain-on-failure) */
    int trace_given;           /* --trace was on the command line */
    const char *output;        /* --output DIR: traces (test-results) */
    const char *record;        /* --record DIR: --trace on --output DIR */
    long trace_body_max;       /* --trace-body-max (0: 8192) */
    int no_ci_annotations;     /* --no-ci-annotations: no GitHub Actions
                                  annotations or job summary */
    const char *evidence_dir;  /* --evidence-dir (ABX_EVIDENCE_DIR) */
    int color;                 /* 1 on, 0 off */
    const char **paths;        /* positional PATH|NODEID */
    size_t npaths;
    /* exec SCRIPT [ARGS] */
    int exec;
    const char *script;
    char **script_args;
    int nscript_args;
    char *argv_line;           /* the command line, for evidence */
    /* sandboxes: --local, --keep-failed, --trace-http */
    int local;                 /* --local: start abx-local for the run */
    const char *profile;       /* --profile e2b|fc for abx-local, or NULL */
    int keep_failed;           /* --keep-failed */
    int trace_http;            /* --trace-http */
    /* cleanup: the janitor (janitor.c) */
    int cleanup;
    int cleanup_yes;           /* -y, --yes: delete, not a dry run */
    int cleanup_all;           /* --all-tagged */
    const char *cleanup_run;   /* --run-id ID */
    long cleanup_older;        /* --older-than MINUTES; -1: any age */
    /* doctor [--local [--profile P]] [--json]: the preflight (doctor*.c) */
    int doctor;
    int doctor_json;           /* --json: one JSON object instead of text */
    /* merge SHARD.json ... (merge.c), diff-records A B (diffrec.c):
       their operands in paths */
    int merge;
    int diff;
    /* repl [--local [--profile P]] [--trace-http]: the Lua prompt */
    int repl;
    /* The variables of the table (the environment, then the .env files;
       README "Credentials and `.env`"): strings owned by them. */
    const char *api_key;          /* ABX_SANDBOX_API_KEY (E2B_API_KEY) */
    const char *api_url;          /* ABX_SANDBOX_BASE_URL (E2B_API_URL) */
    const char *domain;           /* ABX_SANDBOX_DOMAIN (E2B_DOMAIN) */
    const char *sandbox_url;      /* ABX_SANDBOX_URL (E2B_SANDBOX_URL) */
    const char *run_id;           /* E2E_RUN_ID; NULL: one is made */
    long sandbox_ttl;             /* E2E_SANDBOX_TTL, s */
    const char *server_template;  /* E2E_SERVER_TEMPLATE */
    long server_port;             /* E2E_SERVER_PORT */
    long short_ttl;               /* E2E_SHORT_TTL, s */
    const char *platform;         /* E2E_PLATFORM: fc or e2b */
    const char *caps_spec;        /* E2E_CAPS: +name,-name; NULL: none */
    const char *default_user;     /* E2E_DEFAULT_USER */
    const char *local_profile;    /* ABX_LOCAL_PROFILE: --profile's default */
};

/* The table's defaults, then its variables from layers (NULL: none: a
 * .env that did not load), then argv. 0 ok (run), 1 printed
 * --help/--version (exit 0), -1 usage error (message printed, exit 4).
 * Owns nothing of argv or layers, which must outlive o. */
struct abx_layers;
int abx_cli_parse(int argc, char **argv, const struct abx_layers *layers,
                  struct abx_opts *o);
void abx_cli_free(struct abx_opts *o);

/* ---- configuration (config.c) ----------------------------------------- */
#define ABX_RUN_ID_MAX 96   /* E2E_RUN_ID, with its NUL */
#define ABX_NAME_MAX 128    /* E2E_SERVER_TEMPLATE */
#define ABX_USER_MAX 64     /* E2E_DEFAULT_USER */
/* What the variables (struct abx_opts) make: the platform, the run id
 * and the capabilities. */
struct abx_env {
    int has_credentials;
    char missing[128];     /* "ABX_SANDBOX_API_KEY" */
    char endpoint[512];    /* base URL for evidence ("(default)") */
    char run_id[ABX_RUN_ID_MAX];  /* E2E_RUN_ID, or made up */
    /* The platform (valid when has_platform). */
    struct abx_platform platform;
    int has_platform;
    char platform_err[512];  /* why the configured platform is unusable */
    /* Capabilities (docs/capabilities.md): the platform whose documented
     * set applies (E2E_PLATFORM, or --local's profile) and the set
     * E2E_CAPS makes of it (1u << cap). */
    char platform_kind[8];
    unsigned caps;
};
/* Sets the platform kind ("fc" or "e2b") and its capability set, then
 * applies o->caps_spec (E2E_CAPS). 0, or -1 with err (usage error). */
int abx_env_set_platform(struct abx_env *e, const struct abx_opts *o, const char *kind,
                         char *err, size_t errlen);

/* ---- the settings: one config (config.c) ------------------------------
 * Everything the command line, the environment and the .env files say,
 * read and checked once by abx_config_build, then passed down by const
 * pointer (docs/ARCHITECTURE.md "A flag's way to a worker"). No file
 * keeps a setting of its own. */
struct abx_config {
    struct abx_opts opt;          /* argv, through the option table */
    struct abx_env env;           /* the environment and .env files */
    struct abx_e2e_settings lua;  /* what the bindings read: made from both */
    int selftest;                 /* ABX_E2E_SELFTEST=1: test-only hooks */
    double watchdog_extra;        /* ABX_E2E_WATCHDOG_EXTRA (self-tests
                                     only; -1: the built-in margins) */
    struct abx_layers *layers;    /* the environment and .env files, which
                                     opt's strings point into */
};
/* The .env files, in the order they are read (after the environment). */
extern const char *const abx_env_files[];
extern const size_t abx_nenv_files;
/* Reads the environment and .env files (credentials into the masker
 * before anything is printed), then argv. 0: go on; -1: stop with
 * *exit_code (help printed: 0; a usage error, said: 4). */
int abx_config_build(struct abx_config *cfg, int argc, char **argv, int *exit_code);
/* Derives cfg->lua once the platform is known (after --local started
 * abx-local): the last step of building. */
void abx_config_seal(struct abx_config *cfg);
void abx_config_free(struct abx_config *cfg);

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

/* ---- collection and selection (collect.c, select.c) ------------------- */
struct abx_item {
    char *nodeid, *name;
    struct abx_strlist groups, marks;
    int line;
    double timeout;
    int selected;
    int failed_last;              /* --ff: it failed last time */
    struct abx_strlist requires;  /* capabilities the test needs */
    char *group;                  /* its `group = "name"` option, or NULL */
};

struct abx_file {
    char *path;                 /* as given / discovered, relative */
    struct abx_item *items;
    size_t n;
    struct abx_result *collect_error;  /* ERROR at collection, or NULL */
    size_t nselected;
    int whole;                  /* the file itself was named */
    struct abx_strlist only;    /* node ids named (when !whole) */
};

struct abx_collection {
    struct abx_file *files;
    size_t n, cap;
    struct abx_buf usage;       /* unknown markers etc. (exit 4) */
    unsigned deselected;
    const char *lf_status;      /* --lf/--ff header note (static text) */
};

/* Discovers files from o->paths (or tests-lua/), loads each in a fresh
 * state (in a collector child) and records its tests. 0, -1 usage error
 * (err), -2 interrupted, -3 internal error (err). */
int abx_collect(const struct abx_config *cfg, struct abx_collection *c,
                char *err, size_t errlen);
void abx_collection_free(struct abx_collection *c);
/* The collector child's loop (collector.c); never returns. */
void abx_collector_main(int fd, const struct abx_config *cfg,
                        const struct abx_collection *c, size_t start)
    __attribute__((noreturn));
/* Applies node ids, -k, -m, --lf/--ff, --shard. 0 or -1 (usage, err). */
int abx_select(const struct abx_opts *o, struct abx_collection *c,
               char *err, size_t errlen);

/* ---- last-failed cache (lastfailed.c) --------------------------------- */
struct abx_strlist;
int abx_lastfailed_load(struct abx_strlist *ids);  /* 0; empty if none */
void abx_lastfailed_update(struct abx_result *const *res, size_t n,
                           const struct abx_collection *c);

/* ---- durations cache (durations.c) ------------------------------------ */
/* File indices of c, longest expected work first (the last run's test
 * durations; a test never timed counts as their mean; ties keep
 * collection order). Malloc'd, c->n entries; NULL when out of memory. */
size_t *abx_durations_order(const struct abx_collection *c);
/* Records the duration of every test that ran (skips leave theirs). */
void abx_durations_update(struct abx_result *const *res, size_t n);

/* ---- workers and scheduling (worker.c, sched.c) ----------------------- */
struct abx_run {
    struct abx_result **results;
    size_t n, cap;
    int interrupted;
    char interrupted_at[512];  /* node id of the test a signal stopped */
    int internal_error;
    int stopped_maxfail;
    size_t collect_errors;  /* files that failed to load stopped the run
                               before any test (pytest's default) */
    int worker_crashed;  /* a worker died abnormally (may have left an
                            untracked sandbox: the run sweeps its tag) */
    double started;     /* abx_clock() */
    double started_wall;  /* epoch seconds */
    cJSON *sandboxes;     /* the workers' sandbox lifetimes (array), or
                             NULL: for the reports' timeline */
};
int abx_run_add(struct abx_run *run, struct abx_result *r);  /* takes r */
void abx_run_free(struct abx_run *run);

/* The worker loop: reads jobs from in_fd, sends JSON lines to out_fd,
 * never returns. fail_budget: the failures it may still see before it
 * stops (--maxfail less the run's so far; 0: no limit). runner: the pid
 * that forked it, whose death it watches. */
void abx_worker_main(int in_fd, int out_fd, int index, const struct abx_config *cfg,
                     long fail_budget, pid_t runner) __attribute__((noreturn));
/* Runs the selected tests on workers; fills run. */
void abx_schedule(const struct abx_config *cfg, struct abx_collection *c,
                  struct abx_run *run);

/* ---- signals (signals.c) ---------------------------------------------- */
void abx_signals_parent(void);
void abx_signals_worker(void);  /* in a child; unblocks what fork held */
/* Around a fork of a collector or worker: the parent's SIGUSR1/SIGUSR2/
 * SIGTERM to a child just forked would kill it (default action) before
 * it installs its handlers, so they stay blocked until then. */
void abx_signals_fork_begin(sigset_t *saved);
void abx_signals_fork_end(const sigset_t *saved);
int abx_signal_count(void);           /* signals received so far */
/* repl (repl.c). on: SIGINT sets the REPL's flag and interrupts the
 * running statement instead of stopping the program (nor counting as a
 * signal); every SIGINT/SIGTERM also writes a byte to wake_fd (the write
 * end of a non-blocking pipe). off: the runner's handler again. */
void abx_signals_repl(int on, int wake_fd);
int abx_repl_sigint(void);         /* a SIGINT came since the last clear */
void abx_repl_sigint_clear(void);  /* ... and the region's interrupt */
int abx_stop_requested(void);         /* worker: parent asked to stop */
void abx_signals_set_children(const int *pids, size_t n);

/* ---- traces (traces.c) ------------------------------------------------ */
/* Removes the trace files an earlier run left in dir (the --output
 * folder); 0, or -1 with err (dir is not a folder, or cannot be read). */
int abx_traces_prepare(const char *dir, char *err, size_t errlen);
/* Whether a file name is a trace's (*.trace.jsonl). */
int abx_traces_is_file(const char *name);
/* The events of a trace file, its header left out (its node id in
 * *nodeid, caller frees, when nodeid is given), at most max bytes read.
 * strict: a line that is not a JSON object is an error; else it is left
 * out, as is a last line without its end (a file cut short). No header
 * is an error either way. NULL with err. */
cJSON *abx_traces_read(const char *path, size_t max, int strict, char **nodeid, char *err,
                       size_t errlen);
/* For the HTML page: a copy of the report document in which each failed,
 * errored or flaky test with a trace file has its events (read back, up
 * to 2 MiB a file, 32 MiB a page) as trace_events; NULL when no such
 * test has one (show doc as it is). */
cJSON *abx_traces_for_html(const cJSON *doc);

/* ---- diff-records (diffrec.c, diffrec_cmp.c) ---------------------------- */
int abx_diffrec_main(const struct abx_config *cfg);
/* The differences between two traces of one test (their events, header
 * left out): [{kind, at, field, a, b}]; NULL out of memory. */
cJSON *abx_diffrec_compare(const cJSON *a, const cJSON *b);
/* An exchange's key: method, path with ids as {id}, query names. */
void abx_diffrec_key(const char *method, const char *url, char *out, size_t outlen);

/* ---- terminal output and reports (term.c, reports.c, evidence.c) ------ */
void abx_term_header(const struct abx_config *cfg, const struct abx_collection *c);
void abx_term_result(const struct abx_opts *o, const struct abx_result *r,
                     size_t done, size_t total);
void abx_term_output(const char *s, size_t len);  /* -s passthrough */
void abx_term_finish(const struct abx_opts *o, const struct abx_run *run,
                     const struct abx_summary *sum);
void abx_term_collect_only(const struct abx_opts *o,
                           const struct abx_collection *c);
/* pytest's "Interrupted: N errors during collection" banner. */
void abx_term_collect_stop(const struct abx_opts *o, size_t errors);
/* Text abx_term_finish prints right before the closing line, which stays
 * the last one (the CI annotations); copied, NULL clears. */
void abx_term_epilogue(const char *text);
/* Under GitHub Actions (GITHUB_ACTIONS=true, no --no-ci-annotations):
 * ::error/::warning annotations, printed before the closing line, and the
 * Markdown job summary appended to $GITHUB_STEP_SUMMARY (ci_out.c). Call
 * before abx_term_finish, in run mode only. */
void abx_ci_report(const struct abx_config *cfg, const struct abx_run *run,
                   const struct abx_summary *s);
int abx_reports_write(const struct abx_config *cfg, const struct abx_run *run,
                      const struct abx_summary *s);
/* Writes b to path through the masking atomic writer and says so (unless
 * quiet) as "<what> report: <path>"; 0, or -1 with the error printed. */
int abx_report_file(const char *what, const char *path, struct abx_buf *b,
                    int quiet);
/* The --json and --html reports of doc (either path may be NULL). */
int abx_report_docs(const char *json, const char *html, const cJSON *doc,
                    int quiet);
int abx_evidence_write(const struct abx_config *cfg, const struct abx_run *run,
                       const struct abx_summary *s);

/* `abx-e2e merge` (merge.c): shards' JSON reports into one set of
 * reports; returns the exit code. */
int abx_merge_main(const struct abx_config *cfg);

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

/* ---- stray output relay (relay.c) ------------------------------------ */
int abx_relay_start(void);   /* 0, or -1 (output stays direct) */
void abx_relay_stop(void);   /* drains, bounded */
void abx_relay_child(void);  /* after fork, in the child */
int abx_stdout_isatty(void); /* of the real stdout */
int abx_stdout_columns(void); /* its width (TIOCGWINSZ), or 0 if unknown */
int abx_relay_real_fd(int chan); /* the real fd 1/2 behind the relay */

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

/* `abx-e2e doctor` (doctor.c): the preflight; returns the exit code (0
 * nothing blocks, 1 a blocking problem, 2 interrupted). */
int abx_doctor_main(struct abx_config *cfg);

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
int abx_local_run(char *const argv[], int sudo, int out_fd, double limit, int interruptible);
void abx_local_stop(void);    /* SIGTERM, wait, SIGKILL; idempotent */

/* Small helpers (util.c). */
char *abx_xstrdup(const char *s);  /* aborts the run on out of memory */
void *abx_xcalloc(size_t n, size_t size);
int abx_parse_long(const char *s, long min, long max, long *out);
int abx_parse_double(const char *s, double min, double max, double *out);
int abx_color_enabled(void);
/* Appends text made fit for reports: NUL shown as \0, invalid UTF-8 as
 * U+FFFD, at most max input bytes (then a "[... N more bytes]" note). */
/* In a collector or worker child: stdin becomes /dev/null, so a test's
 * io.read() sees end of input instead of waiting on the user's terminal
 * (or a CI pipe) where no timeout can reach it. */
void abx_stdin_null(void);
void abx_clean_text(struct abx_buf *out, const char *text, size_t len,
                    size_t max);

#endif
