/* --evidence TOPIC: a Markdown record of the run under
 * <--evidence-dir, default .agents/evidence/verify>/<date>-<topic>.md (date,
 * run id, endpoint, selection, results table, durations, failures). Masked
 * like all output. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "caps.h"
#include "out.h"
#include "report.h"

/* The helpers below return 0, or -1 when an append failed (out of memory):
 * the record is then not written at all, never half of it. */
static int md_cell(struct abx_buf *b, const char *s)
{
    int bad = 0;

    for (; s && *s; s++) {
        if (*s == '|')
            bad |= abx_buf_appends(b, "\\|");
        else if (*s == '\n')
            bad |= abx_buf_appends(b, " ");
        else
            bad |= abx_buf_appendc(b, *s);
    }
    return bad;
}

/* One line that lets a reader rerun exactly this selection. */
static int append_selection(struct abx_buf *b, const struct abx_opts *o,
                            const struct abx_summary *s)
{
    size_t i;
    int bad = 0;

    bad |= abx_buf_appends(b, "- selection:");
    if (o->npaths == 0)
        bad |= abx_buf_appends(b, " tests-lua/");
    for (i = 0; i < o->npaths; i++)
        bad |= abx_buf_appendf(b, " `%s`", o->paths[i]);
    if (o->keyword && *o->keyword)
        bad |= abx_buf_appendf(b, ", -k `%s`", o->keyword);
    if (o->markexpr && *o->markexpr)
        bad |= abx_buf_appendf(b, ", -m `%s`", o->markexpr);
    if (o->lf)
        bad |= abx_buf_appends(b, ", --lf");
    if (o->shard_n)
        bad |= abx_buf_appendf(b, ", --shard %ld/%ld", o->shard_k, o->shard_n);
    bad |= abx_buf_appendf(b, " (%d deselected)\n", (int)s->deselected);
    return bad;
}

/* Tests that failed and then passed on a rerun, with what they failed
 * with first: a flake the next change should fix, not forget. */
static int append_flaky(struct abx_buf *b, const struct abx_report *rep)
{
    size_t i, k = 0;
    int bad = 0;

    for (i = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        char first[512];
        const char *m;
        size_t n;

        if (r->outcome != ABX_OUTCOME_FLAKY)
            continue;
        if (k++ == 0)
            bad |= abx_buf_appends(b, "\n## Flaky tests\n\n| test | attempts | "
                                      "first failure |\n|---|---|---|\n");
        m = r->nattempts && r->attempts[0].message ? r->attempts[0].message
                                                   : "";
        n = strcspn(m, "\n");
        snprintf(first, sizeof first, "%.*s", (int)(n < 500 ? n : 500), m);
        bad |= abx_buf_appends(b, "| `");
        bad |= md_cell(b, r->nodeid);
        bad |= abx_buf_appendf(b, "` | %d | ", r->rerun + 1);
        bad |= md_cell(b, first);
        bad |= abx_buf_appends(b, " |\n");
    }
    return bad;
}

/* Every skip with its reason: a capability the platform does not declare
 * shows up here, so the record says what the run did not prove. */
static int append_skipped(struct abx_buf *b, const struct abx_report *rep)
{
    size_t i, k = 0;
    int bad = 0;

    bad |= abx_buf_appends(b, "\n## Skipped\n\n");
    for (i = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        if (r->outcome != ABX_OUTCOME_SKIPPED)
            continue;
        k++;
        bad |= abx_buf_appends(b, "- `");
        bad |= md_cell(b, r->nodeid);
        bad |= abx_buf_appends(b, "`: ");
        bad |= md_cell(b, r->reason ? r->reason : (r->message ? r->message : ""));
        bad |= abx_buf_appends(b, "\n");
    }
    if (k == 0)
        bad |= abx_buf_appends(b, "None.\n");
    return bad;
}

int abx_evidence_write(const struct abx_config *cfg, const struct abx_report *rep)
{
    const struct abx_summary *s = rep->sum;
    const struct abx_opts *o = &cfg->opt;
    const struct abx_env *e = &cfg->env;
    char topic[128], date[32], stamp[64], path[PATH_MAX], line[512];
    char err[PATH_MAX + 128], caps[256];
    const char *dir = o->evidence_dir ? o->evidence_dir : ABX_EVIDENCE_DIR;
    time_t now = (time_t)rep->created;
    struct tm tm;
    struct utsname un;
    struct abx_buf b;
    size_t i, k, dirlen;
    int rc, n, bad = 0;

    for (i = 0, k = 0; o->evidence[i] && k + 1 < sizeof topic; i++) {
        char c = o->evidence[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
        topic[k++] = ok ? c : '-';
    }
    topic[k] = '\0';
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d", &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    dirlen = strlen(dir);
    while (dirlen > 1 && dir[dirlen - 1] == '/')
        dirlen--;  /* "out/" -> "out/DATE-TOPIC.md", not "out//..." */
    n = dirlen < sizeof path
            ? snprintf(path, sizeof path, "%.*s/%s-%s.md", (int)dirlen, dir,
                       date, topic)
            : -1;
    if (n < 0 || (size_t)n >= sizeof path) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: cannot write evidence: "
                       "path too long (--evidence-dir %s)\n", dir);
        return -1;
    }
    if (uname(&un) != 0)
        snprintf(un.sysname, sizeof un.sysname, "unknown");

    abx_buf_init(&b, ABX_BUF_DEFAULT_MAX);
    abx_summary_line(s, line, sizeof line);
    bad |= abx_buf_appendf(&b, "# Verification: %s\n\n", o->evidence);
    bad |= abx_buf_appendf(&b, "- date: %s\n- run id: `%s`\n", stamp, e->run_id);
    bad |= abx_buf_appendf(&b, "- platform endpoint: %s\n", e->endpoint);
    abx_caps_format(e->caps, caps, sizeof caps);
    bad |= abx_buf_appendf(&b, "- platform: %s, capabilities: %s%s%s%s\n",
                           e->platform_kind, caps,
                           o->caps_spec ? " (E2E_CAPS=`" : "", o->caps_spec ? o->caps_spec : "",
                           o->caps_spec ? "`)" : "");
    bad |= abx_buf_appendf(&b, "- credentials: %s\n",
                           e->has_credentials ? "present (masked)" : "missing");
    bad |= abx_buf_appendf(&b, "- host: %s %s %s\n", un.sysname, un.release,
                           un.machine);
    bad |= abx_buf_appendf(&b, "- command: `%s`\n", o->argv_line ? o->argv_line : "");
    bad |= append_selection(&b, o, s);
    bad |= abx_buf_appendf(&b, "- result: **%s** (exit %d)\n\n", line, s->exit_code);
    bad |= abx_buf_appends(&b, "## Results\n\n| test | outcome | duration |\n"
                               "|---|---|---|\n");
    for (i = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        bad |= abx_buf_appends(&b, "| `");
        bad |= md_cell(&b, r->nodeid);
        bad |= abx_buf_appendf(&b, "` | %s%s | %.2fs |\n",
                               abx_outcome_name(r->outcome),
                               r->teardown_message ? " + error at teardown" : "",
                               abx_result_duration(r));
    }
    bad |= abx_buf_appends(&b, "\n## Durations (slowest 10)\n\n");
    {
        const struct abx_result *top[10] = {0};
        for (i = 0; i < rep->n; i++) {
            const struct abx_result *r = rep->results[i];
            for (k = 0; k < 10; k++) {
                if (!top[k] ||
                    abx_result_duration(r) > abx_result_duration(top[k])) {
                    memmove(&top[k + 1], &top[k], (9 - k) * sizeof *top);
                    top[k] = r;
                    break;
                }
            }
        }
        for (k = 0; k < 10 && top[k]; k++)
            bad |= abx_buf_appendf(&b, "- %.2fs `%s`\n", abx_result_duration(top[k]),
                                   top[k]->nodeid);
    }
    bad |= abx_buf_appends(&b, "\n## Failures\n\n");
    for (i = 0, k = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        if (!abx_result_is_failure(r) && !r->teardown_message)
            continue;
        k++;
        bad |= abx_buf_appendf(&b, "### %s (%s)\n\n```\n%s\n", r->nodeid,
                               abx_outcome_name(r->outcome),
                               r->longrepr ? r->longrepr
                                           : (r->message ? r->message : ""));
        if (r->teardown_message)
            bad |= abx_buf_appendf(&b, "teardown: %s\n", r->teardown_message);
        bad |= abx_buf_appends(&b, "```\n\n");
    }
    if (k == 0)
        bad |= abx_buf_appends(&b, "None.\n");
    bad |= append_flaky(&b, rep);
    bad |= append_skipped(&b, rep);
    if (bad) {
        rc = -1;
        snprintf(err, sizeof err, "out of memory");
    } else {
        rc = abx_out_write_file_atomic(path, b.data, b.len, err, sizeof err);
    }
    if (rc != 0)
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: cannot write evidence: %s\n",
                       err);
    else if (!o->quiet)
        abx_out_printf(ABX_OUT_STDOUT, "evidence: %s\n", path);
    abx_buf_free(&b);
    return rc;
}
