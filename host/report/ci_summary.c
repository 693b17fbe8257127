/* The GitHub Actions job summary: Markdown appended to
 * $GITHUB_STEP_SUMMARY in one write, masked whole (never half of it). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ci.h"
#include "out.h"
#include "sandbox.h"

#define MD_FAILURES_MAX 50       /* failures detailed in the summary */
#define MD_FLAKY_MAX 50
#define MD_TEXT_MAX 4096         /* one failure's text in the summary */
#define MD_CODE_MAX 1000         /* one node id in a code span */
#define MD_SLOWEST 10
#define MD_LEFTOVER_MAX 16384    /* the sweep's errors */
#define SUMMARY_MAX (1u << 20)   /* GitHub refuses a bigger step summary */

struct md {
    struct abx_buf b;
    int bad;  /* an append failed: write nothing rather than half */
};

static void put(struct md *m, const char *s)
{
    m->bad |= abx_buf_appends(&m->b, s) != 0;
}

static void putf(struct md *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void putf(struct md *m, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    m->bad |= abx_buf_vappendf(&m->b, fmt, ap) != 0;
    va_end(ap);
}

static size_t longest_backticks(const char *s)
{
    size_t run = 0, most = 0;

    for (; *s; s++) {
        run = *s == '`' ? run + 1 : 0;
        most = run > most ? run : most;
    }
    return most;
}

static void put_ticks(struct md *m, size_t n)
{
    while (n--)
        put(m, "`");
}

/* s as one inline code span, whatever it holds: control bytes as spaces,
 * '|' escaped in a table cell (GFM reads "\|" there even inside code), a
 * delimiter longer than any run of backticks in s, padded when s starts
 * or ends with one. */
static void md_code(struct md *m, const char *s, int cell)
{
    struct abx_buf t, c;
    size_t i, ticks, len;
    const char *p;

    abx_buf_init(&t, ABX_BUF_DEFAULT_MAX);
    abx_buf_init(&c, ABX_BUF_DEFAULT_MAX);
    m->bad |= abx_ci_masked(&t, s) != 0;
    p = abx_buf_cstr(&t);
    len = abx_ci_utf8_cut(p, t.len, MD_CODE_MAX);
    for (i = 0; i < len; i++) {
        if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
            m->bad |= abx_buf_appendc(&c, ' ') != 0;
        else if (cell && p[i] == '|')
            m->bad |= abx_buf_appends(&c, "\\|") != 0;
        else
            m->bad |= abx_buf_appendc(&c, p[i]) != 0;
    }
    if (len < t.len)
        m->bad |= abx_buf_appends(&c, "...") != 0;
    p = abx_buf_cstr(&c);
    ticks = longest_backticks(p) + 1;
    put_ticks(m, ticks);
    len = strlen(p);
    if (len == 0 || p[0] == '`' || p[len - 1] == '`' || p[0] == ' ')
        putf(m, " %s ", p);
    else
        put(m, p);
    put_ticks(m, ticks);
    abx_buf_free(&t);
    abx_buf_free(&c);
}

/* text in a fenced block that no line of it can close. */
static void md_fence(struct md *m, const char *text)
{
    struct abx_buf t;
    size_t ticks;
    const char *p;

    abx_buf_init(&t, ABX_BUF_DEFAULT_MAX);
    m->bad |= abx_ci_masked(&t, text) != 0;
    p = abx_buf_cstr(&t);
    ticks = longest_backticks(p) + 1;
    ticks = ticks < 3 ? 3 : ticks;
    put(m, "\n");
    put_ticks(m, ticks);
    putf(m, "text\n%s%s", p, t.len && p[t.len - 1] == '\n' ? "" : "\n");
    put_ticks(m, ticks);
    put(m, "\n");
    abx_buf_free(&t);
}

static void md_header(struct md *m, const struct abx_opts *o,
                      const struct abx_env *e, const struct abx_summary *s)
{
    static const enum abx_outcome rows[] = {
        ABX_OUTCOME_PASSED, ABX_OUTCOME_FAILED, ABX_OUTCOME_ERROR,
        ABX_OUTCOME_SKIPPED, ABX_OUTCOME_XFAILED, ABX_OUTCOME_XPASSED,
        ABX_OUTCOME_FLAKY};
    char line[512];
    size_t i;

    abx_summary_line(s, line, sizeof line);
    putf(m, "## abx-e2e: %s\n\nrun ", line);
    md_code(m, e->run_id, 0);
    put(m, ", platform ");
    md_code(m, e->platform_kind, 0);
    put(m, " at ");
    md_code(m, e->endpoint, 0);
    if (o->shard_n)
        putf(m, ", shard %ld/%ld", o->shard_k, o->shard_n);
    put(m, "\n\n| outcome | tests |\n|---|---:|\n");
    for (i = 0; i < sizeof rows / sizeof rows[0]; i++)
        putf(m, "| %s | %u |\n", abx_outcome_name(rows[i]),
             rows[i] == ABX_OUTCOME_ERROR ? abx_summary_errors(s)
                                          : s->counts[rows[i]]);
    putf(m, "| deselected | %u |\n| total | %u |\n", s->deselected,
         abx_summary_total(s));
}

static void md_failure(struct md *m, const struct abx_result *r,
                       const char *what, const char *msg, const char *lr)
{
    char file[PATH_MAX], loc[PATH_MAX + 16];
    struct abx_buf text;
    size_t n;
    int at;

    abx_ci_test_file(r, file, sizeof file);
    at = abx_failure_site(file, r->line, lr ? lr : msg, loc, sizeof loc - 16);
    n = strlen(loc);
    if (at > 0)
        snprintf(loc + n, sizeof loc - n, ":%d", at);
    putf(m, "\n#### %s: ", what);
    md_code(m, r->nodeid ? r->nodeid : file, 0);
    put(m, "\n\nat ");
    md_code(m, loc, 0);
    put(m, "\n");
    abx_buf_init(&text, ABX_BUF_DEFAULT_MAX);
    m->bad |= abx_ci_failure_text(&text, msg, lr, MD_TEXT_MAX) != 0;
    md_fence(m, abx_buf_cstr(&text));
    abx_buf_free(&text);
}

static void md_failures(struct md *m, const struct abx_report *rep)
{
    size_t i, shown = 0, more = 0;

    for (i = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        int main_fail = r->outcome == ABX_OUTCOME_FAILED ||
                        r->outcome == ABX_OUTCOME_ERROR;
        size_t k = (size_t)main_fail + (r->teardown_message != NULL);
        if (k == 0)
            continue;
        if (shown == 0)
            put(m, "\n### Failures and errors\n");
        if (shown + k > MD_FAILURES_MAX) {
            more += k;
            continue;
        }
        shown += k;
        if (main_fail)
            md_failure(m, r, abx_outcome_name(r->outcome), r->message,
                       r->longrepr);
        if (r->teardown_message)
            md_failure(m, r, "error at teardown", r->teardown_message,
                       r->teardown_longrepr);
    }
    if (more)
        putf(m, "\n%zu more failures and errors: see the job log.\n", more);
}

static void md_flaky(struct md *m, const struct abx_report *rep)
{
    size_t i, n = 0;

    for (i = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        const char *first;
        struct abx_buf one;
        if (r->outcome != ABX_OUTCOME_FLAKY)
            continue;
        if (n++ == 0)
            put(m, "\n### Flaky tests (passed on a rerun)\n\n"
                   "| test | reruns | first failure |\n|---|---:|---|\n");
        if (n > MD_FLAKY_MAX)
            continue;
        first = r->nattempts && r->attempts[0].message
                    ? r->attempts[0].message : "";
        abx_buf_init(&one, ABX_BUF_DEFAULT_MAX);  /* md_code masks, cuts */
        m->bad |= abx_buf_append(&one, first, strcspn(first, "\n")) != 0;
        put(m, "| ");
        md_code(m, r->nodeid, 1);
        putf(m, " | %d | ", r->rerun);
        if (one.len)
            md_code(m, abx_buf_cstr(&one), 1);
        put(m, " |\n");
        abx_buf_free(&one);
    }
    if (n > MD_FLAKY_MAX)
        putf(m, "\n%zu more flaky tests: see the job log.\n",
             n - MD_FLAKY_MAX);
}

static void md_slowest(struct md *m, const struct abx_report *rep)
{
    const struct abx_result *top[MD_SLOWEST] = {0};
    size_t i, k;

    for (i = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        for (k = 0; k < MD_SLOWEST; k++) {
            if (!top[k] ||
                abx_result_duration(r) > abx_result_duration(top[k])) {
                memmove(&top[k + 1], &top[k],
                        (MD_SLOWEST - 1 - k) * sizeof *top);
                top[k] = r;
                break;
            }
        }
    }
    if (!top[0])
        return;
    put(m, "\n### Slowest tests\n\n| test | duration | outcome |\n"
           "|---|---:|---|\n");
    for (k = 0; k < MD_SLOWEST && top[k]; k++) {
        put(m, "| ");
        md_code(m, top[k]->nodeid, 1);
        putf(m, " | %.2fs | %s |\n", abx_result_duration(top[k]),
             abx_outcome_name(top[k]->outcome));
    }
}

/* What the end-of-run sweep left alive (host/sandbox/sandboxes.c). */
static void md_leftover(struct md *m, const struct abx_env *e)
{
    const char *errors, *kept, *p;

    abx_sandboxes_leftover(&errors, &kept);
    if (!*errors && !*kept)
        return;
    put(m, "\n### Sandboxes left alive\n");
    if (*errors) {
        struct abx_buf t;
        abx_buf_init(&t, ABX_BUF_DEFAULT_MAX);
        m->bad |= abx_ci_masked_cut(&t, errors, MD_LEFTOVER_MAX) != 0;
        put(m, "\nThe end-of-run sweep could not delete these:\n");
        md_fence(m, abx_buf_cstr(&t));
        abx_buf_free(&t);
    }
    if (*kept) {
        put(m, "\nKept by --keep-failed:\n\n| sandbox | test |\n|---|---|\n");
        for (p = kept; *p;) {
            const char *tab = strchr(p, '\t'), *nl = strchr(p, '\n');
            char id[256], test[1024];
            if (!tab || !nl || tab > nl)
                break;
            snprintf(id, sizeof id, "%.*s", (int)(tab - p), p);
            snprintf(test, sizeof test, "%.*s", (int)(nl - tab - 1), tab + 1);
            put(m, "| ");
            md_code(m, id, 1);
            put(m, " | ");
            md_code(m, test, 1);
            put(m, " |\n");
            p = nl + 1;
        }
    }
    put(m, "\nDelete them with ");
    {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "abx-e2e cleanup --run-id %s --yes",
                 e->run_id);
        md_code(m, cmd, 0);
    }
    put(m, ".\n");
}

/* Masks the whole summary and appends it in one write: a reader never
 * sees half of it. A failure is a warning, never the run's outcome. */
static void append_summary(const char *path, const struct md *m)
{
    struct abx_mask *mk = abx_out_masker();
    struct abx_buf t;
    const char *why = NULL;
    size_t off = 0;
    int fd = -1;

    abx_buf_init(&t, 2 * SUMMARY_MAX);
    if (m->bad || !mk || abx_mask_string(mk, m->b.data, m->b.len, &t) != 0 ||
        t.len > SUMMARY_MAX)
        why = "over GitHub's 1 MiB limit (or out of memory)";
    else if ((fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
                        0644)) < 0)
        why = strerror(errno);
    while (!why && off < t.len) {
        ssize_t w = write(fd, t.data + off, t.len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            why = w < 0 ? strerror(errno) : "short write";
            break;
        }
        off += (size_t)w;
    }
    if (fd >= 0 && close(fd) != 0 && !why)
        why = strerror(errno);
    if (why)
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: warning: cannot append the "
                       "job summary to GITHUB_STEP_SUMMARY=%s: %s\n", path,
                       why);
    abx_buf_free(&t);
}

void abx_ci_summary(const char *path, const struct abx_opts *o,
                    const struct abx_env *e, const struct abx_report *rep)
{
    struct md m;

    memset(&m, 0, sizeof m);
    abx_buf_init(&m.b, 2 * SUMMARY_MAX);
    md_header(&m, o, e, rep->sum);
    md_failures(&m, rep);
    md_flaky(&m, rep);
    md_slowest(&m, rep);
    md_leftover(&m, e);
    put(&m, "\n");
    append_summary(path, &m);
    abx_buf_free(&m.b);
}
