/* Command line: pytest's option names and shapes where they exist. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"
#include "out.h"

static const char HELP[] =
    "usage: abx-e2e [run] [options] [PATH|NODEID ...]\n"
    "       abx-e2e exec [--local] [--trace-http] SCRIPT.lua [ARGS ...]\n"
    "       abx-e2e cleanup [--yes] [--run-id ID | --all-tagged]\n"
    "                       [--older-than MINUTES]\n"
    "       abx-e2e doctor [--local [--profile e2b|fc]] [--json]\n"
    "       abx-e2e merge [--junitxml F] [--html F] [--json F] SHARD.json ...\n"
    "       abx-e2e diff-records [--json F] A B\n"
    "       abx-e2e repl [--local [--profile e2b|fc]] [--trace-http]\n"
    "       abx-e2e --help | --version\n"
    "\n"
    "Runs the Lua end-to-end suite: test_*.lua under tests-lua/ (or the\n"
    "PATHs given; a NODEID is PATH::[group::]name). Each test file gets a\n"
    "fresh Lua state; PATH/conftest.lua, if present, is loaded first.\n"
    "\n"
    "selection:\n"
    "  -k EXPR              keyword expression (pytest grammar: and/or/not,\n"
    "                       parentheses); case-insensitive substring match\n"
    "                       on file, group and test names and markers\n"
    "  -m EXPR              marker expression; names match exactly\n"
    "  --lf, --last-failed  rerun only the tests that failed last time\n"
    "  --lfnf, --last-failed-no-failures all|none\n"
    "                       with --lf/--ff and no recorded failures: run\n"
    "                       all tests (all, the default) or none (exit 5)\n"
    "  --ff, --failed-first run last failures first, then the rest\n"
    "  --shard K/N          run only shard K of N (deterministic split)\n"
    "  --collect-only, --co, --list\n"
    "                       list the selected node ids, run nothing\n"
    "  --continue-on-collection-errors\n"
    "                       run the tests even when a file fails to load\n"
    "                       (by default that stops the run: exit 2)\n"
    "\n"
    "execution:\n"
    "  -x, --exitfirst      stop after the first failure or error\n"
    "  --maxfail N          stop after N failures or errors\n"
    "  --reruns N           run a failed or errored test up to N more times\n"
    "                       (fresh test fixtures, its sandboxes killed);\n"
    "                       one that then passes is FLAKY (per test:\n"
    "                       reruns = N)\n"
    "  --reruns-delay S     seconds to wait before each rerun (default 0)\n"
    "  --fail-on-flaky      a flaky test fails the run (exit 1)\n"
    "  --allow-skips        a test that skips itself (e2e.skip) for a reason\n"
    "                       no declared capability explains stays SKIPPED;\n"
    "                       by default it FAILS: green means it ran\n"
    "  --timeout S          per-test timeout in seconds (default 300; 0 =\n"
    "                       none); teardown gets its own budget (min(S,60))\n"
    "  --max-memory MB      Lua heap ceiling per worker (default 2048;\n"
    "                       0 = none): past it a test errors, not the OS\n"
    "  -n N|auto            run tests in N worker processes (auto = CPUs)\n"
    "  --dist MODE          which tests a worker takes: load (any, the\n"
    "                       default), loadfile (a file's tests on one\n"
    "                       worker), loadgroup (a describe's, or a test's\n"
    "                       group = \"name\", on one worker)\n"
    "  -s                   do not capture print/io.write output\n"
    "\n"
    "sandboxes:\n"
    "  --local              start abx-local (a local E2B-compatible\n"
    "                       platform) on free loopback ports for the run\n"
    "                       and stop it at the end; needs no credentials\n"
    "                       (binary: $ABX_LOCAL_BIN, the build tree, PATH)\n"
    "  --profile e2b|fc     with --local: the cloud abx-local imitates,\n"
    "                       upstream E2B or FC Agent Sandbox (default\n"
    "                       $ABX_LOCAL_PROFILE, else e2b)\n"
    "  --keep-failed        leave the sandboxes of failed tests alive and\n"
    "                       print how to reach them (delete them later with\n"
    "                       `abx-e2e cleanup --run-id ID --yes`)\n"
    "  --trace-http         print one line per HTTP request (method, URL\n"
    "                       with signatures masked, status, time; never\n"
    "                       headers)\n"
    "  Every sandbox is tagged e2e=<run id> and e2e_session=<this run>,\n"
    "  written to .abx-e2e/runs/<run id>.ledger and deleted at the end of\n"
    "  its scope; the run ends with a sweep of its session's tag, also on\n"
    "  SIGINT/SIGTERM, and a guardian process sweeps if the runner is\n"
    "  killed. Shards on several machines may share E2E_RUN_ID: cleanup\n"
    "  --run-id then covers them all.\n"
    "  cleanup              the janitor: lists (dry run) or deletes (--yes)\n"
    "                       sandboxes tagged e2e left by earlier runs; see\n"
    "                       `abx-e2e cleanup --help`\n"
    "  doctor               a read-only preflight of the platform: config\n"
    "                       and where each value came from, control plane\n"
    "                       and key, templates (base, code-interpreter-v1,\n"
    "                       E2E_SERVER_TEMPLATE), one short tagged sandbox\n"
    "                       (envd, clock skew), capabilities and the tests\n"
    "                       they skip; each blocking problem with a FIX\n"
    "                       line; exit 0 nothing blocks, 1 otherwise;\n"
    "                       --json prints the facts as one JSON object\n"
    "  repl                 a Lua prompt with the suite's modules; its\n"
    "                       sandboxes are killed when it ends; see\n"
    "                       `abx-e2e repl --help`\n"
    "\n"
    "reporting:\n"
    "  -v, --verbose        more output (-vv: full messages, all durations)\n"
    "  -q, --quiet          less output\n"
    "  -r CHARS             short summary: f failed, E error, s skipped,\n"
    "                       x xfailed, X xpassed, R flaky, p passed,\n"
    "                       P passed with output (a PASSES section with\n"
    "                       their captured output), a all but passes,\n"
    "                       A all (PpsxXREf),\n"
    "                       N none (default fE). On a terminal, messages\n"
    "                       are cut to its width (COLUMNS or the tty\n"
    "                       size), except with -vv or when CI or\n"
    "                       BUILD_NUMBER is set\n"
    "  --durations N        show the N slowest phases (0 = all)\n"
    "  --junitxml FILE      write a JUnit XML report (pytest's shape)\n"
    "  --json FILE          write a JSON report (one record per test)\n"
    "  --html FILE          write one self-contained HTML page: counts,\n"
    "                       a filterable table of tests, each failure in\n"
    "                       full, a timeline of workers and sandboxes\n"
    "  --trace MODE         on, off or retain-on-failure (default): a record\n"
    "                       of what each test did (its SDK calls, HTTP\n"
    "                       exchanges, command output, fixtures, result), one\n"
    "                       JSON-lines file per test in the --output folder,\n"
    "                       kept for every test (on) or a failed one; the\n"
    "                       HTML page shows a failed test's\n"
    "  --output DIR         where traces go (default test-results); a run\n"
    "                       removes the *.trace.jsonl files left there\n"
    "  --record DIR         --trace on --output DIR: every test's trace, for\n"
    "                       `abx-e2e diff-records A B`\n"
    "  --trace-body-max N   bytes of each body or output chunk a trace keeps\n"
    "                       (default 8192; masked first, then cut)\n"
    "  --no-ci-annotations  under GitHub Actions (GITHUB_ACTIONS=true), do\n"
    "                       not print ::error annotations nor append the\n"
    "                       job summary to $GITHUB_STEP_SUMMARY\n"
    "  --evidence TOPIC     write a Markdown record of the run to\n"
    "                       DIR/DATE-TOPIC.md (DATE in UTC)\n"
    "  --evidence-dir DIR   where --evidence writes (default\n"
    "                       .agents/evidence/verify; created if missing)\n"
    "  --color yes|no|auto  colours (auto: terminal and no NO_COLOR)\n"
    "  --version            print the version and exit\n"
    "  -h, --help           print this help and exit\n"
    "\n"
    "configuration: ABX_SANDBOX_API_KEY (or E2B_API_KEY),\n"
    "ABX_SANDBOX_BASE_URL (E2B_API_URL), ABX_SANDBOX_DOMAIN (E2B_DOMAIN),\n"
    "ABX_SANDBOX_URL (E2B_SANDBOX_URL), E2E_RUN_ID, E2E_SANDBOX_TTL (300 s),\n"
    "E2E_SERVER_TEMPLATE (python-hello), E2E_SERVER_PORT (8080),\n"
    "E2E_SHORT_TTL (20 s, lifetime of the sandboxes TTL tests wait out),\n"
    "E2E_PLATFORM (fc or e2b: the documented capability set; fc),\n"
    "E2E_CAPS (+name,-name adjusting it: pause, signed-urls, e2b-proxy,\n"
    "e2b-messages), E2E_DEFAULT_USER (user),\n"
    "from the environment, then tests-lua/.env, .env, client-sdk/.env.\n"
    "Without credentials, tests that need the platform are skipped.\n"
    "\n"
    "exit codes: 0 passed, 1 failures, 2 interrupted, 3 internal error,\n"
    "4 usage error, 5 no tests collected.\n";

static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage(const char *fmt, ...)
{
    va_list ap;

    abx_out_puts(ABX_OUT_STDERR, "usage: abx-e2e [run] [options] "
                                 "[PATH|NODEID ...]\nabx-e2e: error: ");
    va_start(ap, fmt);
    abx_out_vprintf(ABX_OUT_STDERR, fmt, ap);
    va_end(ap);
    abx_out_puts(ABX_OUT_STDERR, "\n");
    return -1;
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

/* Expands -r letters as pytest does (a, A, N; F/S aliases). */
static int set_report_chars(struct abx_opts *o, const char *s)
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
            return usage("-r: unknown summary character '%c'", *s);
    }
    memcpy(o->report_chars, out, sizeof out);
    return 0;
}

/* Option value: "--opt=V", "--opt V", "-kV", "-k V". */
static const char *value(int argc, char **argv, int *i, const char *name)
{
    const char *a = argv[*i];
    size_t n = strlen(name);

    if (strncmp(a, name, n) == 0 && a[n] == '=')
        return a + n + 1;
    if (name[1] != '-' && a[2] != '\0')
        return a + 2;
    if (*i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

static int is_opt(const char *a, const char *name)
{
    size_t n = strlen(name);

    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '\0' || a[n] == '=')
        return 1;
    return name[1] != '-' && name[2] == '\0';  /* -kEXPR */
}

static int parse_shard(struct abx_opts *o, const char *v)
{
    const char *slash = strchr(v, '/');
    char k[32];
    size_t kl = slash ? (size_t)(slash - v) : 0;

    if (!slash || kl == 0 || kl >= sizeof k)
        return usage("--shard expects K/N, got '%s'", v ? v : "");
    memcpy(k, v, kl);
    k[kl] = '\0';
    if (abx_parse_long(slash + 1, 1, 100000, &o->shard_n) != 0 ||
        abx_parse_long(k, 1, o->shard_n, &o->shard_k) != 0)
        return usage("--shard expects K/N with 1 <= K <= N, got '%s'", v ? v : "");
    return 0;
}

static int parse_workers(struct abx_opts *o, const char *v)
{
    long n;

    if (strcmp(v, "auto") == 0 || strcmp(v, "logical") == 0) {
        n = sysconf(_SC_NPROCESSORS_ONLN);
        o->workers = n > 0 ? (int)n : 1;
        return 0;
    }
    if (abx_parse_long(v, 0, 256, &n) != 0)
        return usage("-n expects a number (0-256) or 'auto', got '%s'", v ? v : "");
    o->workers = n == 0 ? 1 : (int)n;
    return 0;
}

static int join_argv(struct abx_opts *o, int argc, char **argv)
{
    struct abx_buf b;
    int i;

    abx_buf_init(&b, 64 * 1024);
    for (i = 0; i < argc; i++)
        abx_buf_appendf(&b, "%s%s", i ? " " : "", argv[i]);
    o->argv_line = abx_buf_steal(&b, NULL);
    return o->argv_line ? 0 : -1;
}

static int platform_opt(struct abx_opts *o, const char *a)
{
    if (strcmp(a, "--local") == 0)
        o->local = 1;
    else if (strncmp(a, "--profile=", 10) == 0)
        o->profile = a + 10;
    else if (strcmp(a, "--trace-http") == 0)
        o->trace_http = 1;
    else
        return 0;
    return 1;
}

/* A subcommand's platform options at argv[*i]: platform_opt's and
 * "--profile P". 1 taken (*i moved past a value), 0 not one, -1 usage. */
static int platform_arg(struct abx_opts *o, int argc, char **argv, int *i)
{
    const char *v;

    if (platform_opt(o, argv[*i]))
        return 1;
    if (strcmp(argv[*i], "--profile") != 0)
        return 0;
    if (!(v = value(argc, argv, i, "--profile")))
        return usage("--profile expects e2b or fc%s", "");
    o->profile = v;
    return 1;
}

/* --profile names a profile and comes with --local. 0 or -1 (usage). */
static int profile_check(const struct abx_opts *o)
{
    if (o->profile && strcmp(o->profile, "e2b") != 0 &&
        strcmp(o->profile, "fc") != 0)
        return usage("--profile expects e2b or fc, got '%s'", o->profile);
    if (o->profile && !o->local)
        return usage("--profile %s: needs --local (a cloud is what it is)",
                     o->profile);
    return 0;
}

static const char DOCTOR_HELP[] =
    "usage: abx-e2e doctor [--local [--profile e2b|fc]] [--json]\n"
    "                      [--trace-http]\n"
    "\n"
    "A read-only preflight of the platform the suite would use, in order:\n"
    "config (each variable, its value and where it came from; the API key\n"
    "only as a length), control plane (reachable, key accepted), templates\n"
    "(base, code-interpreter-v1, E2E_SERVER_TEMPLATE), one sandbox of base\n"
    "(60 s, tagged e2e=<run id>, deleted at the end: envd /health, `echo ok`,\n"
    "envdVersion, create time), the sandbox's clock skew, and the\n"
    "capabilities with the tests they skip. Each blocking problem comes with\n"
    "a FIX line; the last line is `doctor: N problems, N warnings`.\n"
    "\n"
    "  --local              check a fresh abx-local instead (started and\n"
    "                       stopped here)\n"
    "  --profile e2b|fc     with --local: the cloud abx-local imitates\n"
    "  --json               print the same facts as one JSON object\n"
    "  --trace-http         one line per HTTP request (never headers)\n"
    "  -h, --help           this help\n"
    "\n"
    "exit codes: 0 nothing blocks, 1 a blocking problem, 2 interrupted,\n"
    "3 internal error, 4 usage error.\n";

/* doctor's own options (after the word); 0, 1 help printed, -1 usage. */
static int parse_doctor(struct abx_opts *o, int argc, char **argv, int i)
{
    int taken;

    o->doctor = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            abx_out_puts(ABX_OUT_STDOUT, DOCTOR_HELP);
            return 1;
        } else if (strcmp(a, "--json") == 0) {
            o->doctor_json = 1;
        } else if ((taken = platform_arg(o, argc, argv, &i)) != 0) {
            if (taken < 0)
                return -1;
        } else {
            return usage("doctor: unrecognized argument '%s' (see `abx-e2e "
                         "doctor --help`)", a);
        }
    }
    return profile_check(o);
}

static const char REPL_HELP[] =
    "usage: abx-e2e repl [--local [--profile e2b|fc]] [--trace-http]\n"
    "\n"
    "A Lua prompt with the suite's modules, for quick experiments (scripts:\n"
    "`abx-e2e exec SCRIPT.lua`). A line is evaluated as an expression, its\n"
    "values printed (tab-separated; a table as a short one-level listing),\n"
    "else as a statement; an incomplete one continues on a \">> \" line.\n"
    "Each line is its own chunk: keep values in globals, not locals.\n"
    "Output is masked like a run's. Every sandbox created is tagged, written\n"
    "to the run ledger and killed when the REPL ends: Ctrl-D (end of input),\n"
    ".exit, os.exit(n), or Ctrl-C twice in a row at the prompt (once cancels\n"
    "the line). Ctrl-C while a statement runs interrupts it. History of\n"
    "terminal sessions (masked, the last 500 entries):\n"
    ".abx-e2e/repl_history. Input from a pipe works too (no prompts, no\n"
    "history). Commands: .help (the modules and commands), .exit.\n"
    "\n"
    "  --local              run on a fresh abx-local (started and stopped\n"
    "                       here)\n"
    "  --profile e2b|fc     with --local: the cloud abx-local imitates\n"
    "  --trace-http         one line per HTTP request (never headers)\n"
    "  -h, --help           this help\n"
    "\n"
    "exit codes: 0, or the code given to os.exit; 1 a finalizer or a sandbox\n"
    "delete failed at the end, 2 interrupted (SIGTERM), 3 internal error,\n"
    "4 usage error.\n";

/* repl's own options (after the word); 0, 1 help printed, -1 usage. */
static int parse_repl(struct abx_opts *o, int argc, char **argv, int i)
{
    int taken;

    o->repl = 1;
    o->timeout = 0;        /* a statement runs until done or Ctrl-C */
    o->max_memory_mb = 0;  /* plain Lua: no ceiling */
    for (; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            abx_out_puts(ABX_OUT_STDOUT, REPL_HELP);
            return 1;
        } else if ((taken = platform_arg(o, argc, argv, &i)) != 0) {
            if (taken < 0)
                return -1;
        } else {
            return usage("repl: unrecognized argument '%s' (see `abx-e2e "
                         "repl --help`)", a);
        }
    }
    return profile_check(o);
}

/* --evidence-dir: only with --evidence, and not an existing non-directory
 * (found now, not after a long run that then cannot write its record). */
static int evidence_dir_check(struct abx_opts *o)
{
    struct stat st;

    if (!o->evidence_dir) {
        o->evidence_dir = ABX_EVIDENCE_DIR;
        return 0;
    }
    if (!o->evidence)
        return usage("--evidence-dir %s: needs --evidence TOPIC",
                     o->evidence_dir);
    if (stat(o->evidence_dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return usage("--evidence-dir %s: exists and is not a directory",
                     o->evidence_dir);
    return 0;
}

int abx_cli_parse(int argc, char **argv, struct abx_opts *o)
{
    int i = 1, npos = 0;
    const char *v;
    const char *color = getenv("NO_COLOR");

    memset(o, 0, sizeof *o);
    o->durations = -1;
    o->trace_mode = ABX_TRACE_RETAIN_ON_FAILURE;
    o->timeout = ABX_DEFAULT_TIMEOUT;
    o->max_memory_mb = ABX_DEFAULT_MAX_MEMORY_MB;
    o->color = abx_stdout_isatty() && !(color && *color);
    memcpy(o->report_chars, "fE", 3);
    o->paths = abx_xcalloc((size_t)argc + 1, sizeof *o->paths);
    join_argv(o, argc, argv);

    /* The two platform options also apply to exec, on either side of
     * the word: `abx-e2e --local exec s.lua` = `abx-e2e exec --local s.lua`. */
    while (i < argc && platform_opt(o, argv[i]))
        i++;
    if (i < argc && strcmp(argv[i], "run") == 0)
        i++;
    else if (i < argc && strcmp(argv[i], "exec") == 0) {
        while (i + 1 < argc && platform_opt(o, argv[i + 1]))
            i++;
        if (i + 1 >= argc)
            return usage("exec needs a SCRIPT.lua%s", "");
        o->exec = 1;
        o->script = argv[i + 1];
        o->script_args = argv + i + 2;
        o->nscript_args = argc - i - 2;
        o->timeout = 0;
        o->max_memory_mb = 0;  /* a plain script: no ceiling */
        return 0;
    } else if (i < argc && strcmp(argv[i], "cleanup") == 0) {
        o->cleanup = 1;
        o->cleanup_args = argv + i + 1;
        o->ncleanup_args = argc - i - 1;
        return 0;
    } else if (i < argc && strcmp(argv[i], "doctor") == 0) {
        return parse_doctor(o, argc, argv, i + 1);
    } else if (i < argc && strcmp(argv[i], "repl") == 0) {
        return parse_repl(o, argc, argv, i + 1);
    } else if (i < argc && strcmp(argv[i], "diff-records") == 0) {
        o->diff = 1;
        o->diff_args = argv + i + 1;
        o->ndiff_args = argc - i - 1;
        return 0;
    } else if (i < argc && strcmp(argv[i], "merge") == 0) {
        o->merge = 1;
        o->merge_args = argv + i + 1;
        o->nmerge_args = argc - i - 1;
        return 0;
    }
    for (; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            abx_out_puts(ABX_OUT_STDOUT, HELP);
            return 1;
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            abx_out_printf(ABX_OUT_STDOUT, "abx-e2e %s (%s)\n",
                           ABX_E2E_VERSION, LUA_RELEASE);
            return 1;
        } else if (is_opt(a, "-k") || is_opt(a, "-m")) {
            int mark = a[1] == 'm';
            if (!(v = value(argc, argv, &i, mark ? "-m" : "-k")))
                return usage("%s expects an expression", a);
            *(mark ? &o->markexpr : &o->keyword) = v;
        } else if (strcmp(a, "-x") == 0 || strcmp(a, "--exitfirst") == 0) {
            o->maxfail = 1;
        } else if (is_opt(a, "--maxfail")) {
            if (!(v = value(argc, argv, &i, "--maxfail")) ||
                abx_parse_long(v, 0, 1000000, &o->maxfail) != 0)
                return usage("--maxfail expects a number, got '%s'", v ? v : "");
        } else if (strcmp(a, "--lf") == 0 ||
                   strcmp(a, "--last-failed") == 0) {
            o->lf = 1;
        } else if (is_opt(a, "--lfnf") ||
                   is_opt(a, "--last-failed-no-failures")) {
            if (!(v = value(argc, argv, &i, a[3] == 'f' ? "--lfnf"
                                        : "--last-failed-no-failures")) ||
                (strcmp(v, "all") != 0 && strcmp(v, "none") != 0))
                return usage("%s expects all or none, got '%s'", a,
                             v ? v : "");
            o->lfnf_none = strcmp(v, "none") == 0;
        } else if (strcmp(a, "--ff") == 0 ||
                   strcmp(a, "--failed-first") == 0) {
            o->ff = 1;
        } else if (strcmp(a, "--collect-only") == 0 ||
                   strcmp(a, "--co") == 0 || strcmp(a, "--list") == 0) {
            o->collect_only = 1;
        } else if (is_opt(a, "--shard")) {
            if (!(v = value(argc, argv, &i, "--shard")) ||
                parse_shard(o, v) != 0)
                return v ? -1 : usage("--shard expects K/N%s", "");
        } else if (is_opt(a, "--durations")) {
            if (!(v = value(argc, argv, &i, "--durations")) ||
                abx_parse_long(v, 0, 1000000, &o->durations) != 0)
                return usage("--durations expects a number, got '%s'", v ? v : "");
        } else if (is_opt(a, "--reruns")) {
            if (!(v = value(argc, argv, &i, "--reruns")) ||
                abx_parse_long(v, 0, 100, &o->reruns) != 0)
                return usage("--reruns expects a number of reruns (0-100), "
                             "got '%s'", v ? v : "");
        } else if (is_opt(a, "--reruns-delay")) {
            if (!(v = value(argc, argv, &i, "--reruns-delay")) ||
                abx_parse_double(v, 0, 3600, &o->reruns_delay) != 0)
                return usage("--reruns-delay expects seconds (0-3600), got "
                             "'%s'", v ? v : "");
        } else if (strcmp(a, "--continue-on-collection-errors") == 0) {
            o->continue_on_collection_errors = 1;
        } else if (strcmp(a, "--fail-on-flaky") == 0) {
            o->fail_on_flaky = 1;
        } else if (strcmp(a, "--allow-skips") == 0) {
            o->allow_skips = 1;
        } else if (is_opt(a, "--max-memory")) {
            if (!(v = value(argc, argv, &i, "--max-memory")) ||
                abx_parse_long(v, 0, 1L << 30, &o->max_memory_mb) != 0)
                return usage("--max-memory expects megabytes, got '%s'",
                             v ? v : "");
        } else if (is_opt(a, "--timeout")) {
            if (!(v = value(argc, argv, &i, "--timeout")) ||
                abx_parse_double(v, 0, 86400 * 7, &o->timeout) != 0)
                return usage("--timeout expects seconds, got '%s'", v ? v : "");
        } else if (is_opt(a, "--dist")) {
            if (!(v = value(argc, argv, &i, "--dist")))
                return usage("--dist expects load, loadfile or loadgroup%s",
                             "");
            if (strcmp(v, "load") == 0)
                o->dist = ABX_DIST_LOAD;
            else if (strcmp(v, "loadfile") == 0)
                o->dist = ABX_DIST_LOADFILE;
            else if (strcmp(v, "loadgroup") == 0)
                o->dist = ABX_DIST_LOADGROUP;
            else
                return usage("--dist expects load, loadfile or loadgroup, "
                             "got '%s'", v);
        } else if (is_opt(a, "-n") || is_opt(a, "--numprocesses")) {
            if (!(v = value(argc, argv, &i, a[1] == '-' ? "--numprocesses"
                                                        : "-n")))
                return usage("-n expects N or auto%s", "");
            if (parse_workers(o, v) != 0)
                return -1;
        } else if (a[0] == '-' && a[1] == 'v' &&
                   strspn(a + 1, "v") == strlen(a + 1)) {
            o->verbose += (int)strlen(a + 1);
        } else if (strcmp(a, "--verbose") == 0) {
            o->verbose++;
        } else if (a[0] == '-' && a[1] == 'q' &&
                   strspn(a + 1, "q") == strlen(a + 1)) {
            o->quiet += (int)strlen(a + 1);
        } else if (strcmp(a, "--quiet") == 0) {
            o->quiet++;
        } else if (strcmp(a, "-s") == 0 ||
                   strcmp(a, "--capture=no") == 0) {
            o->no_capture = 1;
        } else if (is_opt(a, "-r")) {
            if (!(v = value(argc, argv, &i, "-r")))
                return usage("-r expects characters%s", "");
            if (set_report_chars(o, v) != 0)
                return -1;
        } else if (is_opt(a, "--junitxml") || is_opt(a, "--junit-xml")) {
            if (!(v = value(argc, argv, &i, a[7] == '-' ? "--junit-xml"
                                                        : "--junitxml")) ||
                !*v)
                return usage("--junitxml expects a FILE%s", "");
            o->junitxml = v;
        } else if (is_opt(a, "--json")) {
            if (!(v = value(argc, argv, &i, "--json")) || !*v)
                return usage("--json expects a FILE%s", "");
            o->json = v;
        } else if (is_opt(a, "--html")) {
            if (!(v = value(argc, argv, &i, "--html")) || !*v)
                return usage("--html expects a FILE%s", "");
            o->html = v;
        } else if (is_opt(a, "--trace")) {
            if (!(v = value(argc, argv, &i, "--trace")) ||
                abx_trace_mode_parse(v, &o->trace_mode) != 0)
                return usage("--trace expects on, off or retain-on-failure, got '%s'",
                             v ? v : "");
            o->trace_given = 1;
        } else if (is_opt(a, "--output")) {
            if (!(v = value(argc, argv, &i, "--output")) || !*v)
                return usage("--output expects a DIR%s", "");
            o->output = v;
        } else if (is_opt(a, "--record")) {
            if (!(v = value(argc, argv, &i, "--record")) || !*v)
                return usage("--record expects a DIR%s", "");
            o->record = v;
        } else if (is_opt(a, "--trace-body-max")) {
            if (!(v = value(argc, argv, &i, "--trace-body-max")) ||
                abx_parse_long(v, 64, 64L << 20, &o->trace_body_max) != 0)
                return usage("--trace-body-max expects a number of bytes from 64 to "
                             "67108864, got '%s'", v ? v : "");
        } else if (strcmp(a, "--no-ci-annotations") == 0) {
            o->no_ci_annotations = 1;
        } else if (is_opt(a, "--evidence")) {
            if (!(v = value(argc, argv, &i, "--evidence")) || !*v)
                return usage("--evidence expects a TOPIC%s", "");
            o->evidence = v;
        } else if (is_opt(a, "--evidence-dir")) {
            if (!(v = value(argc, argv, &i, "--evidence-dir")) || !*v)
                return usage("--evidence-dir expects a DIR%s", "");
            o->evidence_dir = v;
        } else if (is_opt(a, "--color")) {
            if (!(v = value(argc, argv, &i, "--color")))
                return usage("--color expects yes, no or auto%s", "");
            if (strcmp(v, "yes") == 0)
                o->color = 1;
            else if (strcmp(v, "no") == 0)
                o->color = 0;
            else if (strcmp(v, "auto") != 0)
                return usage("--color expects yes, no or auto, got '%s'", v ? v : "");
        } else if (strcmp(a, "--local") == 0) {
            o->local = 1;
        } else if (is_opt(a, "--profile")) {
            if (!(v = value(argc, argv, &i, "--profile")))
                return usage("--profile expects e2b or fc%s", "");
            o->profile = v;
        } else if (strcmp(a, "--keep-failed") == 0) {
            o->keep_failed = 1;
        } else if (strcmp(a, "--trace-http") == 0) {
            o->trace_http = 1;
        } else if (strcmp(a, "--") == 0) {
            for (i++; i < argc; i++)
                o->paths[npos++] = argv[i];
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage("unrecognized option '%s' (see --help)", a);
        } else {
            o->paths[npos++] = a;
        }
    }
    o->npaths = (size_t)npos;
    if (profile_check(o) != 0 || evidence_dir_check(o) != 0)
        return -1;
    if (o->record) {
        /* --record DIR: every test's trace, into DIR */
        if (o->trace_given && o->trace_mode != ABX_TRACE_ON)
            return usage("--record keeps every test's trace: it cannot go with --trace %s",
                         abx_trace_mode_name(o->trace_mode));
        if (o->output && strcmp(o->output, o->record) != 0)
            return usage("--record DIR writes to DIR: it cannot go with --output %s",
                         o->output);
        o->trace_mode = ABX_TRACE_ON;
        o->output = o->record;
    }
    if (color && *color)
        o->color = 0;  /* NO_COLOR wins over everything */
    if (o->lf && o->ff)
        o->ff = 0;  /* pytest: --lf wins */
    return 0;
}

void abx_cli_free(struct abx_opts *o)
{
    free(o->paths);
    free(o->argv_line);
    o->paths = NULL;
    o->argv_line = NULL;
}
