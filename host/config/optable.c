/* The one option table of every sub-command (optable.h): each
 * option's names, value, sub-commands, storage and help, and the --help
 * of each sub-command made from it. pytest's option names and shapes
 * where they exist. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "caps.h"
#include "ledger.h"
#include "optable.h"

#define OFF(f) offsetof(struct abx_opts, f)

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The setters' error: what was wrong with the value; -1. */
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int opt_exitfirst(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    (void)v;
    (void)err;
    (void)errlen;
    o->maxfail = 1;
    return 0;
}

static int opt_lfnf(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    if (strcmp(v, "all") != 0 && strcmp(v, "none") != 0)
        return fail(err, errlen, "--lfnf expects all or none, got '%s'", v);
    o->lfnf_none = strcmp(v, "none") == 0;
    return 0;
}

static int opt_shard(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    const char *slash = strchr(v, '/');
    char k[32];
    size_t kl = slash ? (size_t)(slash - v) : 0;

    if (!slash || kl == 0 || kl >= sizeof k)
        return fail(err, errlen, "--shard expects K/N, got '%s'", v);
    memcpy(k, v, kl);
    k[kl] = '\0';
    if (abx_parse_long(slash + 1, 1, 100000, &o->shard_n) != 0 ||
        abx_parse_long(k, 1, o->shard_n, &o->shard_k) != 0)
        return fail(err, errlen, "--shard expects K/N with 1 <= K <= N, got '%s'", v);
    return 0;
}

static int opt_workers(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    long n;

    if (strcmp(v, "auto") == 0 || strcmp(v, "logical") == 0) {
        n = sysconf(_SC_NPROCESSORS_ONLN);
        o->workers = n > 0 ? (int)n : 1;
        return 0;
    }
    if (abx_parse_long(v, 0, 256, &n) != 0)
        return fail(err, errlen, "-n expects a number (0-256) or 'auto', got '%s'", v);
    o->workers = n == 0 ? 1 : (int)n;
    return 0;
}

static int opt_dist(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    static const char *const names[] = {"load", "loadfile", "loadgroup"};
    static const enum abx_dist dists[] = {ABX_DIST_LOAD, ABX_DIST_LOADFILE,
                                          ABX_DIST_LOADGROUP};

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(v, names[i]) == 0) {
            o->dist = dists[i];
            return 0;
        }
    return fail(err, errlen, "--dist expects load, loadfile or loadgroup, got '%s'", v);
}

/* Appends the letters of add to out (no duplicates). */
static void add_chars(char *out, size_t cap, const char *add)
{
    size_t n = strlen(out);

    for (; *add; add++) {
        if (!strchr(out, *add) && n + 1 < cap) {
            out[n++] = *add;
            out[n] = '\0';
        }
    }
}

/* -r letters expanded as pytest does (a, A, N; F/S aliases). */
static int opt_report(struct abx_opts *o, const char *s, char *err, size_t errlen)
{
    char out[sizeof o->report_chars] = "";

    for (; *s; s++) {
        char one[2] = {*s == 'F' ? 'f' : *s == 'S' ? 's' : *s, '\0'};

        if (one[0] == 'a')
            add_chars(out, sizeof out, "sxXREf");
        else if (one[0] == 'A')
            add_chars(out, sizeof out, "PpsxXREf");
        else if (one[0] == 'N')
            out[0] = '\0';
        else if (strchr("fEsxXpPwR", one[0]))
            add_chars(out, sizeof out, one);
        else
            return fail(err, errlen, "-r: unknown summary character '%c'", *s);
    }
    memcpy(o->report_chars, out, sizeof out);
    return 0;
}

static int opt_trace(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    if (abx_trace_mode_parse(v, &o->trace_mode) != 0)
        return fail(err, errlen, "--trace expects on, off or retain-on-failure, got '%s'", v);
    o->trace_given = 1;
    return 0;
}

static int opt_color(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    if (strcmp(v, "yes") == 0)
        o->color = 1;
    else if (strcmp(v, "no") == 0)
        o->color = 0;
    else if (strcmp(v, "auto") == 0)
        o->color = abx_stdout_isatty();   /* NO_COLOR is applied last (cli.c) */
    else
        return fail(err, errlen, "--color expects yes, no or auto, got '%s'", v);
    return 0;
}

static int opt_run_id(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    char path[1024];

    if (abx_ledger_path(v, path, sizeof path) != 0)
        return fail(err, errlen, "--run-id: not a run id (letters, digits, '.', '_', '-'): %s",
                    v);
    o->cleanup_run = v;
    return 0;
}

/* The two clouds a value may name (--profile, E2E_PLATFORM,
 * ABX_LOCAL_PROFILE). */
static int cloud(const char *name, const char *v, const char **dst, char *err, size_t errlen)
{
    if (strcmp(v, "e2b") != 0 && strcmp(v, "fc") != 0)
        return fail(err, errlen, "%s expects e2b or fc, got '%s'", name, v);
    *dst = strcmp(v, "fc") == 0 ? "fc" : "e2b";   /* not the environment's
                                                     string: setenv may follow */
    return 0;
}

static int opt_profile(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    return cloud("--profile", v, &o->profile, err, errlen);
}

/* ---- the variables' setters ------------------------------------------ */
/* A name-like value: letters, digits, '.', '_', '-' only (it lands in
 * paths and shell words of tests), shorter than cap. */
static int name_ok(const char *s, size_t cap)
{
    size_t n = strlen(s);

    return n > 0 && n < cap &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static int env_template(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    size_t i;

    for (i = 0; v[i]; i++)
        if ((unsigned char)v[i] <= ' ' || v[i] == 0x7f)
            break;
    if (v[i] || i == 0 || i >= ABX_NAME_MAX)
        return fail(err, errlen, "E2E_SERVER_TEMPLATE expects a template name (no spaces, at "
                    "most %d bytes), got '%s'", ABX_NAME_MAX - 1, v);
    o->server_template = v;
    return 0;
}

static int env_platform(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    return cloud("E2E_PLATFORM", v, &o->platform, err, errlen);
}

static int env_user(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    if (!name_ok(v, ABX_USER_MAX))
        return fail(err, errlen, "E2E_DEFAULT_USER expects a user name (letters, digits, '.', "
                    "'_', '-'; at most %d bytes), got '%s'", ABX_USER_MAX - 1, v);
    o->default_user = v;
    return 0;
}

static int env_run_id(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    char path[1024];

    /* It names the ledger file and the metadata tag. */
    if (strlen(v) >= ABX_RUN_ID_MAX || abx_ledger_path(v, path, sizeof path) != 0)
        return fail(err, errlen, "E2E_RUN_ID expects letters, digits, '.', '_' or '-' (at "
                    "most %d, not starting with '.'), got '%s'", ABX_RUN_ID_MAX - 1, v);
    o->run_id = v;
    return 0;
}

/* Checked here for its names and shape; applied to the platform's set
 * once the platform is known (config.c). */
static int env_caps(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    unsigned bits = 0;
    char why[256];

    if (abx_caps_adjust(&bits, v, why, sizeof why) != 0)
        return fail(err, errlen, "%s", why);
    o->caps_spec = v;
    return 0;
}

static int env_profile(struct abx_opts *o, const char *v, char *err, size_t errlen)
{
    return cloud("ABX_LOCAL_PROFILE", v, &o->local_profile, err, errlen);
}

#define ALL ABX_CMD_PLATFORM
#define RUN ABX_CMD_RUN
#define MRG ABX_CMD_MERGE
#define SEL ABX_SEC_SELECTION
#define EXE ABX_SEC_EXECUTION
#define SBX ABX_SEC_SANDBOXES
#define REP ABX_SEC_REPORTING
#define ENV ABX_SEC_ENVIRONMENT

/* A flag's row (designated: the variables' columns stay empty), and one
 * whose default is the table's (OD: its --help shows it). */
#define O(names_, meta_, cmds_, sec_, kind_, off_, min_, max_, fn_, expects_, help_) \
    {.names = names_, .meta = meta_, .cmds = cmds_, .section = sec_, .kind = kind_, \
     .off = off_, .min = min_, .max = max_, .fn = fn_, .expects = expects_, .help = help_}
#define OD(names_, meta_, cmds_, sec_, kind_, off_, min_, max_, fn_, expects_, help_, def_) \
    {.names = names_, .meta = meta_, .cmds = cmds_, .section = sec_, .kind = kind_, \
     .off = off_, .min = min_, .max = max_, .fn = fn_, .expects = expects_, .help = help_, \
     .def = def_}

const struct abx_optdef abx_optdefs[] = {
    /* selection */
    O("-k", "EXPR", RUN, SEL, ABX_OPT_STR, OFF(keyword), 0, 0, NULL, "an expression",
     "keyword expression (pytest grammar: and/or/not,\nparentheses); case-insensitive "
     "substring match\non file, group and test names and markers"),
    O("-m", "EXPR", RUN, SEL, ABX_OPT_STR, OFF(markexpr), 0, 0, NULL, "an expression",
     "marker expression; names match exactly"),
    O("--lf, --last-failed", NULL, RUN, SEL, ABX_OPT_FLAG, OFF(lf), 0, 0, NULL, NULL,
     "rerun only the tests that failed last time"),
    O("--lfnf, --last-failed-no-failures", "all|none", RUN, SEL, ABX_OPT_FN, 0, 0, 0, opt_lfnf,
     "all or none",
     "with --lf/--ff and no recorded failures: run\nall tests (all, the default) or none "
     "(exit 5)"),
    O("--ff, --failed-first", NULL, RUN, SEL, ABX_OPT_FLAG, OFF(ff), 0, 0, NULL, NULL,
     "run last failures first, then the rest"),
    O("--shard", "K/N", RUN, SEL, ABX_OPT_FN, 0, 0, 0, opt_shard, "K/N",
     "run only shard K of N (deterministic split)"),
    O("--collect-only, --co, --list", NULL, RUN, SEL, ABX_OPT_FLAG, OFF(collect_only), 0, 0,
     NULL, NULL, "list the selected node ids, run nothing"),
    O("--continue-on-collection-errors", NULL, RUN, SEL, ABX_OPT_FLAG,
     OFF(continue_on_collection_errors), 0, 0, NULL, NULL,
     "run the tests even when a file fails to load\n(by default that stops the run: exit 2)"),
    /* execution */
    O("-x, --exitfirst", NULL, RUN, EXE, ABX_OPT_FN, 0, 0, 0, opt_exitfirst, NULL,
     "stop after the first failure or error"),
    O("--maxfail", "N", RUN, EXE, ABX_OPT_LONG, OFF(maxfail), 0, 1000000, NULL, "a number",
     "stop after N failures or errors"),
    O("--reruns", "N", RUN, EXE, ABX_OPT_LONG, OFF(reruns), 0, 100, NULL,
     "a number of reruns (0-100)",
     "run a failed or errored test up to N more times\n(fresh test fixtures, its sandboxes "
     "killed);\none that then passes is FLAKY (per test:\nreruns = N)"),
    O("--reruns-delay", "S", RUN, EXE, ABX_OPT_DOUBLE, OFF(reruns_delay), 0, 3600, NULL,
     "seconds (0-3600)", "seconds to wait before each rerun (default 0)"),
    O("--fail-on-flaky", NULL, RUN, EXE, ABX_OPT_FLAG, OFF(fail_on_flaky), 0, 0, NULL, NULL,
     "a flaky test fails the run (exit 1)"),
    O("--allow-skips", NULL, RUN, EXE, ABX_OPT_FLAG, OFF(allow_skips), 0, 0, NULL, NULL,
     "a test that skips itself (e2e.skip) for a reason\nno declared capability explains "
     "stays SKIPPED;\nby default it FAILS: green means it ran"),
    OD("--timeout", "S", RUN, EXE, ABX_OPT_DOUBLE, OFF(timeout), 0, 86400 * 7, NULL, "seconds",
     "per-test timeout in seconds (0 = none); teardown\ngets its own budget (min(S,60))", "300"),
    OD("--max-memory", "MB", RUN, EXE, ABX_OPT_LONG, OFF(max_memory_mb), 0, 1L << 30, NULL,
     "megabytes", "Lua heap ceiling per worker (0 = none): past\nit a test errors, not the OS",
     "2048"),
    O("-n, --numprocesses", "N|auto", RUN, EXE, ABX_OPT_FN, 0, 0, 0, opt_workers, "N or auto",
     "run tests in N worker processes (auto = CPUs)"),
    O("--dist", "MODE", RUN, EXE, ABX_OPT_FN, 0, 0, 0, opt_dist, "load, loadfile or loadgroup",
     "which tests a worker takes: load (any, the\ndefault), loadfile (a file's tests on "
     "one\nworker), loadgroup (a describe's, or a test's\ngroup = \"name\", on one worker)"),
    O("-s, --capture=no", NULL, RUN, EXE, ABX_OPT_FLAG, OFF(no_capture), 0, 0, NULL, NULL,
     "do not capture print/io.write output"),
    /* sandboxes */
    O("--local", NULL, ALL, SBX, ABX_OPT_FLAG, OFF(local), 0, 0, NULL, NULL,
     "start abx-local (a local E2B-compatible\nplatform) on free loopback ports for the "
     "run\nand stop it at the end; needs no credentials\n(binary: $ABX_LOCAL_BIN, the build "
     "tree, PATH)"),
    O("--profile", "e2b|fc", ALL, SBX, ABX_OPT_FN, 0, 0, 0, opt_profile, "e2b or fc",
     "with --local: the cloud abx-local imitates,\nupstream E2B or FC Agent Sandbox "
     "(default\n$ABX_LOCAL_PROFILE: the cloud the product\nships against)"),
    O("--keep-failed", NULL, RUN, SBX, ABX_OPT_FLAG, OFF(keep_failed), 0, 0, NULL, NULL,
     "leave the sandboxes of failed tests alive and\nprint how to reach them (delete them "
     "later with\n`abx-e2e cleanup --run-id ID --yes`)"),
    O("--trace-http", NULL, ALL, SBX, ABX_OPT_FLAG, OFF(trace_http), 0, 0, NULL, NULL,
     "print one line per HTTP request (method, URL\nwith signatures masked, status, time; "
     "never\nheaders)"),
    O("--json", NULL, ABX_CMD_DOCTOR, SBX, ABX_OPT_FLAG, OFF(doctor_json), 0, 0, NULL, NULL,
     "print the same facts as one JSON object"),
    /* reporting */
    O("-v, --verbose", NULL, RUN, REP, ABX_OPT_COUNT, OFF(verbose), 0, 0, NULL, NULL,
     "more output (-vv: full messages, all durations)"),
    O("-q, --quiet", NULL, RUN, REP, ABX_OPT_COUNT, OFF(quiet), 0, 0, NULL, NULL, "less output"),
    O("-q, --quiet", NULL, ABX_CMD_MERGE, REP, ABX_OPT_COUNT, OFF(quiet), 0, 0, NULL, NULL,
     "only problems and the closing line"),
    O("-q, --quiet", NULL, ABX_CMD_DIFF, REP, ABX_OPT_COUNT, OFF(quiet), 0, 0, NULL, NULL,
     "only the closing line"),
    OD("-r", "CHARS", RUN, REP, ABX_OPT_FN, 0, 0, 0, opt_report, "characters",
     "short summary: f failed, E error, s skipped,\nx xfailed, X xpassed, R flaky, p "
     "passed,\nP passed with output (a PASSES section with\ntheir captured output), a all "
     "but passes,\nA all (PpsxXREf),\nN none. On a terminal, messages are cut to its\nwidth "
     "(COLUMNS or the tty size), except with -vv\nor when CI or BUILD_NUMBER is set", "fE"),
    O("--durations", "N", RUN, REP, ABX_OPT_LONG, OFF(durations), 0, 1000000, NULL, "a number",
     "show the N slowest phases (0 = all)"),
    O("--junitxml, --junit-xml", "FILE", RUN | MRG, REP, ABX_OPT_STR, OFF(junitxml), 0, 0, NULL,
     "a FILE", "write a JUnit XML report (pytest's shape)"),
    O("--json", "FILE", RUN | MRG, REP, ABX_OPT_STR, OFF(json), 0, 0, NULL, "a FILE",
     "write a JSON report (one record per test)"),
    O("--json", "FILE", ABX_CMD_DIFF, REP, ABX_OPT_STR, OFF(json), 0, 0, NULL, "a FILE",
     "also write the differences as one JSON document"),
    O("--html", "FILE", RUN | MRG, REP, ABX_OPT_STR, OFF(html), 0, 0, NULL, "a FILE",
     "write one self-contained HTML page: counts,\na filterable table of tests, each "
     "failure in\nfull, a timeline of workers and sandboxes"),
    O("--trace", "MODE", RUN, REP, ABX_OPT_FN, 0, 0, 0, opt_trace,
     "on, off or retain-on-failure",
     "on, off or retain-on-failure (default): a record\nof what each test did (its SDK "
     "calls, HTTP\nexchanges, command output, fixtures, result), one\nJSON-lines file per "
     "test in the --output folder,\nkept for every test (on) or a failed one; the\nHTML "
     "page shows a failed test's"),
    O("--output", "DIR", RUN, REP, ABX_OPT_STR, OFF(output), 0, 0, NULL, "a DIR",
     "where traces go (default test-results); a run\nremoves the *.trace.jsonl files left "
     "there"),
    O("--record", "DIR", RUN, REP, ABX_OPT_STR, OFF(record), 0, 0, NULL, "a DIR",
     "--trace on --output DIR: every test's trace, for\n`abx-e2e diff-records A B`"),
    O("--trace-body-max", "N", RUN, REP, ABX_OPT_LONG, OFF(trace_body_max), 64, 64L << 20,
     NULL, "a number of bytes from 64 to 67108864",
     "bytes of each body or output chunk a trace keeps\n(default 8192; masked first, then "
     "cut)"),
    O("--no-ci-annotations", NULL, RUN, REP, ABX_OPT_FLAG, OFF(no_ci_annotations), 0, 0, NULL,
     NULL, "under GitHub Actions (GITHUB_ACTIONS=true), do\nnot print ::error annotations "
     "nor append the\njob summary to $GITHUB_STEP_SUMMARY"),
    O("--evidence", "TOPIC", RUN, REP, ABX_OPT_STR, OFF(evidence), 0, 0, NULL, "a TOPIC",
     "write a Markdown record of the run to\nDIR/DATE-TOPIC.md (DATE in UTC)"),
    O("--evidence-dir", "DIR", RUN, REP, ABX_OPT_STR, OFF(evidence_dir), 0, 0, NULL, "a DIR",
     "where --evidence writes (default\n.agents/evidence/verify; created if missing)"),
    OD("--color", "yes|no|auto", RUN, REP, ABX_OPT_FN, 0, 0, 0, opt_color, "yes, no or auto",
     "colours (auto: terminal and no NO_COLOR)", "auto"),
    O("-V, --version", NULL, RUN, REP, ABX_OPT_VERSION, 0, 0, 0, NULL, NULL,
     "print the version and exit"),
    /* cleanup */
    O("-y, --yes", NULL, ABX_CMD_CLEANUP, SBX, ABX_OPT_FLAG, OFF(cleanup_yes), 0, 0, NULL, NULL,
     "delete them"),
    O("--run-id", "ID", ABX_CMD_CLEANUP, SBX, ABX_OPT_FN, 0, 0, 0, opt_run_id, "an ID",
     "the sandboxes of run ID (its ledger and its tag\ne2e=ID)"),
    O("--all-tagged", NULL, ABX_CMD_CLEANUP, SBX, ABX_OPT_FLAG, OFF(cleanup_all), 0, 0, NULL,
     NULL, "every sandbox with an e2e tag, of any run"),
    O("--older-than", "N", ABX_CMD_CLEANUP, SBX, ABX_OPT_LONG, OFF(cleanup_older), 0, 1L << 30,
     NULL, "minutes (an integer >= 0)", "only sandboxes started N minutes ago or earlier"),
    O("-h, --help", NULL, ABX_CMD_ANY, REP, ABX_OPT_HELP, 0, 0, 0, NULL, NULL,
     "print this help and exit"),
    /* the variables: the environment, then tests-lua/.env, .env,
       client-sdk/.env (README "Credentials and `.env`"); a variable's
       name first, then its older ones */
#define NAMES(...) {__VA_ARGS__}
#define VAR(env_, kind_, off_, min_, max_, fn_, expects_, def_, help_) \
    {.env = env_, .cmds = ABX_CMD_ANY, .section = ENV, .kind = kind_, .off = off_, \
     .min = min_, .max = max_, .fn = fn_, .expects = expects_, .def = def_, .help = help_}
    {.env = NAMES("ABX_SANDBOX_API_KEY", "E2B_API_KEY"), .cmds = ABX_CMD_ANY, .section = ENV,
     .kind = ABX_OPT_STR, .off = OFF(api_key), .secret = 1,
     .help = "the platform's API key (without it, tests that\nneed the platform are "
             "skipped)"},
    VAR(NAMES("ABX_SANDBOX_BASE_URL", "E2B_API_URL"), ABX_OPT_STR, OFF(api_url), 0, 0, NULL,
        NULL, NULL, "the control plane's URL (unset:\nhttps://api.<domain>)"),
    VAR(NAMES("ABX_SANDBOX_DOMAIN", "E2B_DOMAIN"), ABX_OPT_STR, OFF(domain), 0, 0, NULL, NULL,
        ABX_DEFAULT_DOMAIN, "the platform's domain"),
    VAR(NAMES("ABX_SANDBOX_URL", "E2B_SANDBOX_URL"), ABX_OPT_STR, OFF(sandbox_url), 0, 0, NULL,
        NULL, NULL, "one URL for every sandbox's traffic (unset:\n<port>-<id>.<domain>)"),
    VAR(NAMES("E2E_RUN_ID"), ABX_OPT_FN, 0, 0, 0, env_run_id, NULL, NULL,
        "the run's id: its tag e2e=ID and its ledger\n(unset: one is made up; shards on several\n"
        "machines may share one: cleanup --run-id\ncovers them)"),
    VAR(NAMES("E2E_SANDBOX_TTL"), ABX_OPT_LONG, OFF(sandbox_ttl), 1, 86400, NULL,
        "seconds (1-86400)", "300", "a sandbox's lifetime, s"),
    VAR(NAMES("E2E_SERVER_TEMPLATE"), ABX_OPT_FN, 0, 0, 0, env_template, NULL, "python-hello",
        "the template of the in-sandbox server tests"),
    VAR(NAMES("E2E_SERVER_PORT"), ABX_OPT_LONG, OFF(server_port), 1, 65535, NULL,
        "a port (1-65535)", "8080", "the port its server listens on"),
    VAR(NAMES("E2E_SHORT_TTL"), ABX_OPT_LONG, OFF(short_ttl), 1, 3600, NULL,
        "seconds (1-3600)", "20", "the lifetime of the sandboxes TTL tests wait\nout, s"),
    VAR(NAMES("E2E_PLATFORM"), ABX_OPT_FN, 0, 0, 0, env_platform, NULL,
        ABX_CAPS_DEFAULT_PLATFORM,
        "fc or e2b: whose documented capability set\napplies (docs/capabilities.md)"),
    VAR(NAMES("E2E_CAPS"), ABX_OPT_FN, 0, 0, 0, env_caps, NULL, NULL,
        "+name,-name adjusting that set (pause,\nsigned-urls, e2b-proxy, e2b-messages)"),
    VAR(NAMES("E2E_DEFAULT_USER"), ABX_OPT_FN, 0, 0, 0, env_user, NULL, "user",
        "the sandbox's default user"),
    VAR(NAMES("ABX_LOCAL_PROFILE"), ABX_OPT_FN, 0, 0, 0, env_profile, NULL, "fc",
        "--profile's default with --local"),
#undef VAR
#undef NAMES
};
const size_t abx_noptdefs = sizeof abx_optdefs / sizeof abx_optdefs[0];
