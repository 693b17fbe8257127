/* The command line: the sub-command, then its options from the one table
 * (optable.c), before or after its operands (exec: before the script, the
 * rest is the script's); `--` ends them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dotenv.h"
#include "optable.h"
#include "out.h"

/* One name of d matches a (the user's word): the value given with it
 * ("--opt=V", "-kV") in *inl, the letters of "-vvv" in *count. */
static int matches(const struct abx_optdef *d, const char *name, size_t n, const char *a,
                   const char **inl, int *count)
{
    int is_short = n == 2 && name[1] != '-';

    if (strncmp(a, name, n) != 0)
        return 0;
    *inl = NULL;
    *count = 1;
    if (a[n] == '\0')
        return 1;
    if (d->meta && (a[n] == '=' || is_short)) {
        *inl = a + n + (a[n] == '=');
        return 1;
    }
    if (d->kind == ABX_OPT_COUNT && is_short && strspn(a + 1, name + 1) == strlen(a + 1)) {
        *count = (int)strlen(a + 1);
        return 1;
    }
    return 0;
}

/* The table's entry for a among cmds' options, its matched name in
 * name (as written there), or NULL. */
static const struct abx_optdef *find(const char *a, unsigned cmds, char *name, size_t namelen,
                                     const char **inl, int *count)
{
    for (size_t i = 0; i < abx_noptdefs; i++) {
        const struct abx_optdef *d = &abx_optdefs[i];
        const char *p = d->names;

        if (!(d->cmds & cmds) || !p)   /* a variable only */
            continue;
        while (*p) {
            size_t n = strcspn(p, ",");

            if (matches(d, p, n, a, inl, count)) {
                snprintf(name, namelen, "%.*s", (int)n, p);
                return d;
            }
            p += n;
            p += strspn(p, ", ");
        }
    }
    return NULL;
}

/* Stores v (NULL without a value) as d says: 0, 1 (help or version
 * printed) or -1 (usage error, said; from: where a variable's value came
 * from, else NULL). */
static int apply_from(const struct abx_optdef *d, const char *name, const char *v, int count,
                      struct abx_opts *o, unsigned cmd, const char *from)
{
    char *at = (char *)o + d->off, err[512];
    const char *the = from && strcmp(from, "environment") == 0 ? "the " : "";
    long l;
    double x;

    switch (d->kind) {
    case ABX_OPT_FLAG:
        *(int *)(void *)at = 1;
        return 0;
    case ABX_OPT_COUNT:
        *(int *)(void *)at += count;
        return 0;
    case ABX_OPT_STR:
        if (!*v && d->meta && strcmp(d->meta, "EXPR") != 0)   /* a FILE, DIR or TOPIC */
            return abx_cli_usage(cmd, "%s expects %s", name, d->expects);
        *(const char **)(void *)at = v;
        return 0;
    case ABX_OPT_LONG:
        if (abx_parse_long(v, (long)d->min, (long)d->max, &l) != 0)
            return abx_cli_usage(cmd, "%s expects %s, got '%s'%s%s%s%s", name, d->expects, v,
                                 from ? " (from " : "", the, from ? from : "", from ? ")" : "");
        *(long *)(void *)at = l;
        return 0;
    case ABX_OPT_DOUBLE:
        if (abx_parse_double(v, d->min, d->max, &x) != 0)
            return abx_cli_usage(cmd, "%s expects %s, got '%s'", name, d->expects, v);
        *(double *)(void *)at = x;
        return 0;
    case ABX_OPT_FN:
        if (d->fn(o, v, err, sizeof err) == 0)
            return 0;
        return abx_cli_usage(cmd, "%s%s%s%s%s", err, from ? " (from " : "", the,
                             from ? from : "", from ? ")" : "");
    case ABX_OPT_HELP:
        return abx_cli_help(cmd);
    case ABX_OPT_VERSION:
        abx_out_printf(ABX_OUT_STDOUT, "abx-e2e %s (%s)\n", ABX_E2E_VERSION, LUA_RELEASE);
        return 1;
    }
    return -1;
}

static int apply(const struct abx_optdef *d, const char *name, const char *v, int count,
                 struct abx_opts *o, unsigned cmd)
{
    return apply_from(d, name, v, count, o, cmd, NULL);
}

/* The table's defaults, then its variables' values (the environment,
 * then the .env files), each checked as a flag's value is. 0 or -1
 * (usage error, said). */
static int defaults_and_variables(const struct abx_layers *layers, struct abx_opts *o,
                                  unsigned cmd)
{
    for (size_t i = 0; i < abx_noptdefs; i++) {
        const struct abx_optdef *d = &abx_optdefs[i];
        const char *names[4] = {d->env[0], d->env[1], d->env[2], NULL};
        const char *which = NULL, *from = NULL, *v;

        if (d->def && apply(d, d->names ? d->names : d->env[0], d->def, 1, o, cmd) != 0)
            return -1;
        if (!d->env[0] || !layers)
            continue;
        v = abx_layers_get_any(layers, names, &which, &from);
        if (v && apply_from(d, which, v, 1, o, cmd, from) != 0)
            return -1;
    }
    return 0;
}

/* argv[*i], an option of cmd: stored (a value taken moves *i). 0, 1
 * (help or version printed) or -1 (usage error, said). */
static int one_option(int argc, char **argv, int *i, struct abx_opts *o, unsigned cmd)
{
    const char *a = argv[*i], *inl, *v = NULL;
    char name[48];
    int count;
    const struct abx_optdef *d = find(a, cmd, name, sizeof name, &inl, &count);

    if (!d) {
        if (cmd == ABX_CMD_RUN)
            return abx_cli_usage(cmd, "unrecognized option '%s' (see --help)", a);
        return abx_cli_usage(cmd, "unrecognized option '%s' (see `abx-e2e %s --help`)", a,
                             abx_cli_cmd_name(cmd));
    }
    if (d->meta) {
        v = inl ? inl : *i + 1 < argc ? argv[++*i] : NULL;
        if (!v)
            return abx_cli_usage(cmd, "%s expects %s", name, d->expects);
    }
    return apply(d, name, v, count, o, cmd);
}

/* The sub-command, and where its word is: options may come before it
 * (`abx-e2e --local exec s.lua`), so their values are skipped. The run
 * command (its word is optional) when the first operand is no word. */
static unsigned find_word(int argc, char **argv, int *at)
{
    const char *inl;
    char name[48];
    int count;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const struct abx_optdef *d;

        if (strcmp(a, "--") == 0 || a[0] != '-' || a[1] == '\0') {
            unsigned cmd = a[0] != '-' ? abx_cli_cmd_of(a) : 0;

            *at = cmd ? i : 0;
            return cmd ? cmd : ABX_CMD_RUN;
        }
        d = find(a, ABX_CMD_ANY, name, sizeof name, &inl, &count);
        if (d && d->meta && !inl)
            i++;
    }
    return ABX_CMD_RUN;
}

static int join_argv(struct abx_opts *o, int argc, char **argv)
{
    struct abx_buf b;
    int i;

    abx_buf_init(&b, 64 * 1024);
    /* Only shown (the evidence's command): past 64 KiB it ends short. */
    for (i = 0; i < argc; i++)
        if (abx_buf_appendf(&b, "%s%s", i ? " " : "", argv[i]) != 0)
            break;
    o->argv_line = abx_buf_steal(&b, NULL);
    return o->argv_line ? 0 : -1;
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
        return abx_cli_usage(ABX_CMD_RUN, "--evidence-dir %s: needs --evidence TOPIC",
                             o->evidence_dir);
    if (stat(o->evidence_dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return abx_cli_usage(ABX_CMD_RUN, "--evidence-dir %s: exists and is not a directory",
                             o->evidence_dir);
    return 0;
}

/* What the run command's options say together. 0 or -1 (usage). */
static int run_checks(struct abx_opts *o)
{
    const char *color = getenv("NO_COLOR");

    if (evidence_dir_check(o) != 0)
        return -1;
    if (o->record) {
        /* --record DIR: every test's trace, into DIR */
        if (o->trace_given && o->trace_mode != ABX_TRACE_ON)
            return abx_cli_usage(ABX_CMD_RUN, "--record keeps every test's trace: it cannot "
                                 "go with --trace %s", abx_trace_mode_name(o->trace_mode));
        if (o->output && strcmp(o->output, o->record) != 0)
            return abx_cli_usage(ABX_CMD_RUN, "--record DIR writes to DIR: it cannot go with "
                                 "--output %s", o->output);
        o->trace_mode = ABX_TRACE_ON;
        o->output = o->record;
    }
    if (color && *color)
        o->color = 0;  /* NO_COLOR wins over everything */
    if (o->lf && o->ff)
        o->ff = 0;  /* pytest: --lf wins */
    return 0;
}

/* The operands of merge and diff-records. 0 or -1 (usage). */
static int operand_checks(const struct abx_opts *o, unsigned cmd)
{
    if (cmd == ABX_CMD_MERGE && o->npaths == 0)
        return abx_cli_usage(cmd, "no SHARD.json given");
    if (cmd == ABX_CMD_DIFF && o->npaths != 2)
        return abx_cli_usage(cmd, "expects two folders of traces (abx-e2e --record DIR), "
                             "got %zu", o->npaths);
    return 0;
}

int abx_cli_parse(int argc, char **argv, const struct abx_layers *layers,
                  struct abx_opts *o)
{
    unsigned cmd;
    int at = 0, npos = 0, rc;

    memset(o, 0, sizeof *o);
    /* "not given" marks that no user value spells */
    o->durations = -1;
    o->cleanup_older = -1;
    o->trace_mode = ABX_TRACE_RETAIN_ON_FAILURE;
    o->paths = abx_xcalloc((size_t)argc + 1, sizeof *o->paths);
    join_argv(o, argc, argv);

    cmd = find_word(argc, argv, &at);
    if (defaults_and_variables(layers, o, cmd) != 0)
        return -1;
    o->exec = cmd == ABX_CMD_EXEC;
    o->repl = cmd == ABX_CMD_REPL;
    o->doctor = cmd == ABX_CMD_DOCTOR;
    o->cleanup = cmd == ABX_CMD_CLEANUP;
    o->merge = cmd == ABX_CMD_MERGE;
    o->diff = cmd == ABX_CMD_DIFF;
    if (o->exec || o->repl) {
        o->timeout = 0;        /* a statement runs until done or Ctrl-C */
        o->max_memory_mb = 0;  /* plain Lua: no ceiling */
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (i == at)
            continue;
        if (strcmp(a, "--") == 0 || a[0] != '-' || a[1] == '\0') {
            i += strcmp(a, "--") == 0;
            if (o->exec && i < argc) {   /* the script; the rest is its */
                o->script = argv[i];
                o->script_args = argv + i + 1;
                o->nscript_args = argc - i - 1;
                break;
            }
            if (!(cmd & (ABX_CMD_RUN | ABX_CMD_MERGE | ABX_CMD_DIFF)) && i < argc)
                return abx_cli_usage(cmd, "unexpected argument '%s' (see `abx-e2e %s --help`)",
                                     argv[i], abx_cli_cmd_name(cmd));
            if (strcmp(a, "--") == 0) {
                for (; i < argc; i++)
                    o->paths[npos++] = argv[i];
                break;
            }
            o->paths[npos++] = a;
            continue;
        }
        if ((rc = one_option(argc, argv, &i, o, cmd)) != 0)
            return rc;
    }
    o->npaths = (size_t)npos;
    if (o->exec && !o->script)
        return abx_cli_usage(cmd, "exec needs a SCRIPT.lua");
    if (o->cleanup_run && o->cleanup_all)
        return abx_cli_usage(cmd, "--run-id and --all-tagged exclude each other");
    if (o->profile && !o->local)
        return abx_cli_usage(cmd, "--profile %s: needs --local (a cloud is what it is)",
                             o->profile);
    if (o->local && !o->profile)
        o->profile = o->local_profile;
    if (operand_checks(o, cmd) != 0)
        return -1;
    return cmd == ABX_CMD_RUN ? run_checks(o) : 0;
}

void abx_cli_free(struct abx_opts *o)
{
    free(o->paths);
    free(o->argv_line);
    o->paths = NULL;
    o->argv_line = NULL;
}
