/* GitHub Actions annotations: a workflow command per failure, error and
 * teardown error
 *     ::error file=F,line=N,title=failed: NODEID::MESSAGE
 * and a ::warning per flaky test, at most MAX_NOTES, handed to term.c so
 * that they come before the closing line (which stays the last). The
 * escapes are those of GitHub's toolkit (actions/toolkit command.ts). */
#include <limits.h>
#include <string.h>

#include "ci.h"

#define MAX_NOTES 50             /* GitHub shows 10 errors a step anyway */
#define NOTE_TEXT_MAX 4096       /* bytes of one annotation's message */
#define NOTES_MAX (2u << 20)     /* all annotations, escaped */

/* GitHub's escapeData (% CR LF), and escapeProperty (also : and ,). */
static int escape(struct abx_buf *out, const char *s, int property)
{
    int rc = 0;

    for (; *s && !rc; s++) {
        if (*s == '%')
            rc = abx_buf_appends(out, "%25");
        else if (*s == '\r')
            rc = abx_buf_appends(out, "%0D");
        else if (*s == '\n')
            rc = abx_buf_appends(out, "%0A");
        else if (property && *s == ':')
            rc = abx_buf_appends(out, "%3A");
        else if (property && *s == ',')
            rc = abx_buf_appends(out, "%2C");
        else
            rc = abx_buf_appendc(out, *s);
    }
    return rc;
}

static int put_escaped(struct abx_buf *out, const char *s, int property)
{
    struct abx_buf m;
    int rc;

    abx_buf_init(&m, ABX_BUF_DEFAULT_MAX);
    rc = abx_ci_masked(&m, s) || escape(out, abx_buf_cstr(&m), property);
    abx_buf_free(&m);
    return rc;
}

struct notes {
    struct abx_buf out;
    size_t shown, more_errors, more_flaky;
};

/* One workflow command line, appended whole or not at all. */
static void note(struct notes *n, const char *level, const char *what,
                 const struct abx_result *r, const char *msg, const char *lr)
{
    char file[PATH_MAX], loc[PATH_MAX];
    struct abx_buf line, title, text;
    int at, bad = 0;

    if (n->shown >= MAX_NOTES) {
        if (strcmp(level, "error") == 0)
            n->more_errors++;
        else
            n->more_flaky++;
        return;
    }
    abx_ci_test_file(r, file, sizeof file);
    at = abx_failure_site(file, r->line, lr ? lr : msg, loc, sizeof loc);
    abx_buf_init(&line, ABX_BUF_DEFAULT_MAX);
    abx_buf_init(&title, ABX_BUF_DEFAULT_MAX);
    abx_buf_init(&text, ABX_BUF_DEFAULT_MAX);
    bad |= abx_buf_appendf(&title, "%s: %s", what, r->nodeid ? r->nodeid : file);
    bad |= abx_ci_failure_text(&text, msg, lr, NOTE_TEXT_MAX);
    bad |= abx_buf_appendf(&line, "::%s file=", level);
    bad |= put_escaped(&line, loc, 1);
    if (at > 0)
        bad |= abx_buf_appendf(&line, ",line=%d", at);
    bad |= abx_buf_appends(&line, ",title=");
    bad |= put_escaped(&line, abx_buf_cstr(&title), 1);
    bad |= abx_buf_appends(&line, "::");
    bad |= put_escaped(&line, abx_buf_cstr(&text), 0);
    bad |= abx_buf_appendc(&line, '\n');
    /* Out of memory, or past NOTES_MAX: this note is left out whole. */
    if (!bad && abx_buf_append(&n->out, line.data, line.len) == 0)
        n->shown++;
    abx_buf_free(&line);
    abx_buf_free(&title);
    abx_buf_free(&text);
}

void abx_ci_annotate(const struct abx_report *rep)
{
    struct notes n;
    size_t i;

    memset(&n, 0, sizeof n);
    abx_buf_init(&n.out, NOTES_MAX);
    for (i = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        if (r->outcome == ABX_OUTCOME_FAILED ||
            r->outcome == ABX_OUTCOME_ERROR)
            note(&n, "error", abx_outcome_name(r->outcome), r, r->message,
                 r->longrepr);
        if (r->teardown_message)
            note(&n, "error", "error at teardown", r, r->teardown_message,
                 r->teardown_longrepr);
    }
    /* Flaky ones passed in the end: warnings, after every failure. */
    for (i = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        const struct abx_attempt *a = r->nattempts ? &r->attempts[0] : NULL;
        struct abx_buf msg, first;
        if (r->outcome != ABX_OUTCOME_FLAKY)
            continue;
        abx_buf_init(&msg, ABX_BUF_DEFAULT_MAX);
        abx_buf_init(&first, ABX_BUF_DEFAULT_MAX);
        /* Out of memory: no warning for this one, as note() would drop it. */
        if (abx_buf_appendf(&msg, "passed after %d rerun%s; it failed first "
                            "with:", r->rerun, r->rerun == 1 ? "" : "s") == 0 &&
            abx_ci_failure_text(&first, a ? a->message : NULL,
                                a ? a->longrepr : NULL, NOTE_TEXT_MAX) == 0)
            note(&n, "warning", "flaky", r, abx_buf_cstr(&msg),
                 abx_buf_cstr(&first));
        abx_buf_free(&msg);
        abx_buf_free(&first);
    }
    if ((n.more_errors || n.more_flaky) &&
        abx_buf_appendf(&n.out, "::warning::%zu more failures%s not "
                        "annotated\n", n.more_errors + n.more_flaky,
                        n.more_flaky ? " and flaky tests" : "") != 0) {
        /* Past NOTES_MAX or out of memory: left out like a note (the job
         * log has every failure). */
    }
    if (n.out.len)
        abx_term_epilogue(abx_buf_cstr(&n.out));
    abx_buf_free(&n.out);
}
