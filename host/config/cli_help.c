/* The --help of every sub-command: each sub-command's prose
 * around its options, which come from the one table (optable.c), and the
 * usage line its errors begin with. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "optable.h"
#include "out.h"

struct cmd_text {
    unsigned cmd;
    const char *name, *usage, *about, *after;
};

static const struct cmd_text texts[] = {
    {ABX_CMD_RUN, "run", "usage: abx-e2e [run] [options] [PATH|NODEID ...]\n",
     "usage: abx-e2e [run] [options] [PATH|NODEID ...]\n"
     "       abx-e2e exec [--local [--profile e2b|fc]] [--trace-http] SCRIPT.lua [ARGS ...]\n"
     "       abx-e2e cleanup [--yes] [--run-id ID | --all-tagged] [--older-than N]\n"
     "       abx-e2e doctor [--local [--profile e2b|fc]] [--json]\n"
     "       abx-e2e merge [--junitxml F] [--html F] [--json F] SHARD.json ...\n"
     "       abx-e2e diff-records [--json F] A B\n"
     "       abx-e2e repl [--local [--profile e2b|fc]] [--trace-http]\n"
     "       abx-e2e --help | --version\n"
     "\n"
     "Runs the Lua end-to-end suite: test_*.lua under tests-lua/ (or the\n"
     "PATHs given; a NODEID is PATH::[group::]name). Each test file gets a\n"
     "fresh Lua state; PATH/conftest.lua, if present, is loaded first.\n"
     "Options go before or after the paths; `--` ends them.\n",
     "\n"
     "Every sandbox is tagged e2e=<run id> and e2e_session=<this run>,\n"
     "written to .abx-e2e/runs/<run id>.ledger and deleted at the end of\n"
     "its scope; the run ends with a sweep of its session's tag, also on\n"
     "SIGINT/SIGTERM, and a guardian process sweeps if the runner is\n"
     "killed. Shards on several machines may share E2E_RUN_ID: cleanup\n"
     "--run-id then covers them all.\n"
     "\n"
     "commands:\n"
     "  exec                 run one Lua script with the suite's modules;\n"
     "                       see `abx-e2e exec --help`\n"
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
     "  merge, diff-records  shards' reports into one; two records' differences\n"
     "\n"
     "exit codes: 0 passed, 1 failures, 2 interrupted, 3 internal error,\n"
     "4 usage error, 5 no tests collected.\n"},
    {ABX_CMD_EXEC, "exec",
     "usage: abx-e2e exec [--local [--profile e2b|fc]] [--trace-http] SCRIPT.lua [ARGS ...]\n",
     "usage: abx-e2e exec [--local [--profile e2b|fc]] [--trace-http] SCRIPT.lua [ARGS ...]\n"
     "\n"
     "Runs one Lua script with the suite's bindings, masking and cleanup, for\n"
     "quick experiments; its output is not captured. ARGS reach it as lua5.4\n"
     "gives them: in `arg` (arg[0] the script) and as the chunk's `...`.\n"
     "Every sandbox it creates is tagged, written to the run ledger and\n"
     "killed when it ends, also after an error. Options come before\n"
     "SCRIPT.lua; what follows it is the script's.\n",
     "\n"
     "exit codes: 0, or the code given to os.exit; 1 the script raised an\n"
     "error or a finalizer failed, 2 interrupted, 3 internal error, 4 usage\n"
     "error (a script that does not load among them).\n"},
    {ABX_CMD_REPL, "repl", "usage: abx-e2e repl [--local [--profile e2b|fc]] [--trace-http]\n",
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
     "history). Commands: .help (the modules and commands), .exit.\n",
     "\n"
     "exit codes: 0, or the code given to os.exit; 1 a finalizer or a sandbox\n"
     "delete failed at the end, 2 interrupted (SIGTERM), 3 internal error,\n"
     "4 usage error.\n"},
    {ABX_CMD_CLEANUP, "cleanup",
     "usage: abx-e2e cleanup [--yes] [--run-id ID | --all-tagged] [--older-than N]\n",
     "usage: abx-e2e cleanup [--yes] [--run-id ID | --all-tagged] [--older-than N]\n"
     "\n"
     "Deletes sandboxes that abx-e2e runs left behind (a killed run, or\n"
     "--keep-failed). Dry run by default: lists id, template, age and run\n"
     "id of what it would delete.\n",
     "\n"
     "Without --run-id/--all-tagged: the runs whose ledgers in\n"
     ".abx-e2e/runs still list sandboxes not deleted. A sandbox without the\n"
     "e2e tag is never touched; runs still in progress are skipped.\n"
     "exit codes: 0 done or nothing to do, 1 a delete or listing failed,\n"
     "4 usage error.\n"},
    {ABX_CMD_DOCTOR, "doctor",
     "usage: abx-e2e doctor [--local [--profile e2b|fc]] [--json] [--trace-http]\n",
     "usage: abx-e2e doctor [--local [--profile e2b|fc]] [--json] [--trace-http]\n"
     "\n"
     "A read-only preflight of the platform the suite would use, in order:\n"
     "with --local, what the host offers abx-local (`abx-local check`) and\n"
     "abx-local started when nothing blocks it; config (each variable, its\n"
     "value and where it came from; the API key only as a length), control\n"
     "plane (reachable, key accepted), templates (base, code-interpreter-v1,\n"
     "E2E_SERVER_TEMPLATE), one sandbox of base (60 s, tagged e2e=<run id>,\n"
     "deleted at the end: envd /health, `echo ok`, envdVersion, create time),\n"
     "the sandbox's clock skew, and the capabilities with the tests they\n"
     "skip. Each blocking problem comes with a FIX line; the last line is\n"
     "`doctor: N problems, N warnings`.\n",
     "\n"
     "exit codes: 0 nothing blocks, 1 a blocking problem, 2 interrupted,\n"
     "3 internal error, 4 usage error.\n"},
    {ABX_CMD_MERGE, "merge",
     "usage: abx-e2e merge [--junitxml FILE] [--html FILE] [--json FILE] [-q] SHARD.json ...\n",
     "usage: abx-e2e merge [--junitxml FILE] [--html FILE] [--json FILE] [-q] SHARD.json ...\n"
     "\n"
     "Combines the JSON reports (--json) of `abx-e2e --shard K/N` runs into\n"
     "one set of reports, so a matrix of CI machines ends in one result.\n"
     "Each test keeps its shard (the HTML timeline has a lane per shard and\n"
     "worker); the counts are recounted from the tests. Reported, on the\n"
     "terminal and in the merged JSON (\"merge\"): shards missing from 1..N,\n"
     "a test present in two files (the first is kept), and a file that\n"
     "cannot be read (the others are still merged). A report of an\n"
     "unsharded run counts as shard 1/1.\n",
     "\n"
     "exit codes: 0 every shard present and passed, 1 failures, a missing\n"
     "shard, a duplicate test or an unreadable file, 4 usage error\n"
     "(including shards of different N), 5 no tests.\n"},
    {ABX_CMD_DIFF, "diff-records", "usage: abx-e2e diff-records [--json FILE] [-q] A B\n",
     "usage: abx-e2e diff-records [--json FILE] [-q] A B\n"
     "\n"
     "Compares two folders of traces written by `abx-e2e --record DIR` (the\n"
     "same tests run on two platforms), test by test: where a reply's\n"
     "status, media type, X-Next-Token or body shape (keys and types, not\n"
     "values) differ, where a call returned on one and raised on the other\n"
     "(or raised another class), the envd version, and the outcome. Ids,\n"
     "times and values are not compared.\n",
     "\n"
     "exit codes: 0 no difference, 1 differences (or tests recorded on one\n"
     "side only), 4 usage error (an argument, a folder that cannot be read,\n"
     "a file that is not a trace).\n"},
};

static const char *const section_names[ABX_SEC_COUNT] = {
    "selection", "execution", "sandboxes", "reporting",
    "environment (then tests-lua/.env, .env, client-sdk/.env; an empty value\n"
    "is unset)"};

static const struct cmd_text *text_of(unsigned cmd)
{
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (texts[i].cmd == cmd)
            return &texts[i];
    return &texts[0];
}

const char *abx_cli_cmd_name(unsigned cmd)
{
    return text_of(cmd)->name;
}

unsigned abx_cli_cmd_of(const char *word)
{
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (strcmp(texts[i].name, word) == 0)
            return texts[i].cmd;
    return 0;
}

int abx_cli_usage(unsigned cmd, const char *fmt, ...)
{
    va_list ap;

    abx_out_puts(ABX_OUT_STDERR, text_of(cmd)->usage);
    abx_out_printf(ABX_OUT_STDERR, "abx-e2e%s%s: error: ", cmd == ABX_CMD_RUN ? "" : " ",
                   cmd == ABX_CMD_RUN ? "" : text_of(cmd)->name);
    va_start(ap, fmt);
    abx_out_vprintf(ABX_OUT_STDERR, fmt, ap);
    va_end(ap);
    abx_out_puts(ABX_OUT_STDERR, "\n");
    return -1;
}

/* One option: its names and value in a 20-column field (a variable: its
 * name, older names in parentheses), then its help, each line after the
 * first indented to the help's column, and its default. */
static void print_option(const struct abx_optdef *d)
{
    char names[96];
    const char *h = d->help, *nl;

    if (d->names)
        snprintf(names, sizeof names, "%s%s%s", d->names, d->meta ? " " : "",
                 d->meta ? d->meta : "");
    else if (d->env[1])
        snprintf(names, sizeof names, "%s (%s)", d->env[0], d->env[1]);
    else
        snprintf(names, sizeof names, "%s", d->env[0]);
    if (strlen(names) > 20)
        abx_out_printf(ABX_OUT_STDOUT, "  %s\n%23s", names, "");
    else
        abx_out_printf(ABX_OUT_STDOUT, "  %-20s ", names);
    while ((nl = strchr(h, '\n')) != NULL) {
        abx_out_printf(ABX_OUT_STDOUT, "%.*s\n%23s", (int)(nl - h), h, "");
        h = nl + 1;
    }
    if (d->def && strlen(h) + strlen(d->def) > 36)   /* past the 72nd column */
        abx_out_printf(ABX_OUT_STDOUT, "%s\n%23s(default %s)\n", h, "", d->def);
    else if (d->def)
        abx_out_printf(ABX_OUT_STDOUT, "%s (default %s)\n", h, d->def);
    else
        abx_out_printf(ABX_OUT_STDOUT, "%s\n", h);
}

int abx_cli_help(unsigned cmd)
{
    const struct cmd_text *t = text_of(cmd);

    abx_out_puts(ABX_OUT_STDOUT, t->about);
    for (int s = 0; s < ABX_SEC_COUNT; s++) {
        int heading = 0;

        for (size_t i = 0; i < abx_noptdefs; i++) {
            const struct abx_optdef *d = &abx_optdefs[i];

            if (!(d->cmds & cmd) || (cmd == ABX_CMD_RUN && (int)d->section != s) ||
                (!d->names && cmd != ABX_CMD_RUN))   /* the variables: once, here */
                continue;
            if (!heading)
                abx_out_printf(ABX_OUT_STDOUT, "\n%s:\n",
                               cmd == ABX_CMD_RUN ? section_names[s] : "options");
            heading = 1;
            print_option(d);
        }
        if (cmd != ABX_CMD_RUN)
            break;   /* one "options" list, in the table's order */
    }
    abx_out_puts(ABX_OUT_STDOUT, t->after);
    return 1;
}
