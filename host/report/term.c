/* Terminal output in pytest's shapes: header, one line per test (or a live
 * counter on a terminal), FAILURES/ERRORS sections with captured output,
 * the -r short summary, --durations and the closing "== ... ==" line.
 * Everything goes through abx_out, hence through the masker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "caps.h"
#include "out.h"
#include "report.h"

#define WIDTH 80
#define RED "\033[31m"
#define GREEN "\033[32m"
#define YELLOW "\033[33m"
#define BOLD "\033[1m"
#define RESET "\033[0m"

static int g_live_shown;   /* a live status line is on the screen */
static char *g_epilogue;  /* abx_term_epilogue: before the closing line */

static const char *col(const struct abx_opts *o, const char *c) { return o->color ? c : ""; }

/* One status line rewritten in place: a terminal, no -v, -q or listing. */
static int live(const struct abx_opts *o)
{
    return abx_stdout_isatty() && o->verbose == 0 && o->quiet == 0 && !o->collect_only;
}

static void rule(const struct abx_opts *o, int chan, char ch, const char *title,
                 const char *color)
{
    char left[WIDTH + 1], right[WIDTH + 1];
    size_t tl = title ? strlen(title) + 2 : 0, l, r;

    l = tl + 4 < WIDTH ? (WIDTH - tl) / 2 : 2;
    r = tl + 4 < WIDTH ? WIDTH - tl - l : 2;
    memset(left, ch, l);
    left[l] = '\0';
    memset(right, ch, r);
    right[r] = '\0';
    if (title)
        abx_out_printf(chan, "%s%s %s %s%s\n", col(o, color ? color : ""), left,
                       title, right, col(o, color ? RESET : ""));
    else
        abx_out_printf(chan, "%s%s%s\n", left, right, "");
}

static const char *word(const struct abx_result *r)
{
    switch (r->outcome) {
    case ABX_OUTCOME_PASSED: return "PASSED";
    case ABX_OUTCOME_FAILED: return "FAILED";
    case ABX_OUTCOME_ERROR: return "ERROR";
    case ABX_OUTCOME_SKIPPED: return "SKIPPED";
    case ABX_OUTCOME_XFAILED: return "XFAIL";
    case ABX_OUTCOME_XPASSED: return "XPASS";
    case ABX_OUTCOME_FLAKY: return "FLAKY";
    default: return "?";
    }
}

static const char *color_of(const struct abx_result *r)
{
    if (abx_result_is_failure(r))
        return RED;
    if (r->outcome == ABX_OUTCOME_PASSED)
        return GREEN;
    return YELLOW;
}

void abx_term_header(const struct abx_config *cfg, const struct abx_collection *c)
{
    const struct abx_opts *o = &cfg->opt;
    const struct abx_env *e = &cfg->env;
    size_t i, items = 0, errors = 0;

    for (i = 0; i < c->n; i++) {
        items += c->files[i].n;
        errors += c->files[i].collect_error != NULL;
    }
    if (o->quiet)
        return;
    rule(o, ABX_OUT_STDOUT, '=', "test session starts", BOLD);
    if (o->local && !e->has_platform)   /* nothing to run: not started */
        abx_out_printf(ABX_OUT_STDOUT, "abx-e2e %s, %s -- run %s, abx-local not started "
                       "(profile %s)\n", ABX_E2E_VERSION, LUA_RELEASE, e->run_id, o->profile);
    else
        abx_out_printf(ABX_OUT_STDOUT, "abx-e2e %s, %s -- run %s, endpoint %s\n",
                       ABX_E2E_VERSION, LUA_RELEASE, e->run_id, e->endpoint);
    if (!e->has_credentials && !o->local)
        abx_out_printf(ABX_OUT_STDOUT, "no credentials [%s]: tests that need "
                       "the platform will be skipped\n", e->missing);
    else {
        char caps[256];
        abx_caps_format(e->caps, caps, sizeof caps);
        abx_out_printf(ABX_OUT_STDOUT, "platform %s, capabilities: %s%s%s%s\n",
                       e->platform_kind, caps,
                       o->caps_spec ? " (E2E_CAPS=" : "",
                       o->caps_spec ? o->caps_spec : "", o->caps_spec ? ")" : "");
    }
    abx_out_printf(ABX_OUT_STDOUT, "collected %zu item%s", items,
                   items == 1 ? "" : "s");
    if (errors)
        abx_out_printf(ABX_OUT_STDOUT, " / %zu error%s", errors,
                       errors == 1 ? "" : "s");
    if (c->deselected)
        abx_out_printf(ABX_OUT_STDOUT, " / %u deselected / %zu selected",
                       c->deselected, items - c->deselected);
    abx_out_puts(ABX_OUT_STDOUT, o->workers > 1 ? "" : "\n");
    if (o->workers > 1)
        abx_out_printf(ABX_OUT_STDOUT, " (%d workers)\n", o->workers);
    if (c->lf_status)
        abx_out_printf(ABX_OUT_STDOUT, "run-last-failure: %s\n",
                       c->lf_status);
    abx_out_puts(ABX_OUT_STDOUT, "\n");
}

void abx_term_result(const struct abx_opts *o, const struct abx_result *r,
                     size_t done, size_t total)
{
    int pct = total ? (int)(done * 100 / total) : 100;

    if (o->quiet)
        return;
    if (live(o)) {
        abx_out_printf(ABX_OUT_STDOUT, "\r%s[%zu/%zu]%s %s%-7s%s %.60s\033[K",
                       col(o, BOLD), done, total, col(o, RESET), col(o, color_of(r)),
                       word(r), col(o, RESET), r->nodeid);
        g_live_shown = 1;
        if (abx_result_is_failure(r) || r->teardown_message) {
            abx_out_puts(ABX_OUT_STDOUT, "\n");
            g_live_shown = 0;
        }
        return;
    }
    /* Each earlier attempt of a rerun test first (pytest-rerunfailures'
     * RERUN lines), then its final outcome. */
    for (size_t k = 0; k < r->nattempts; k++)
        abx_out_printf(ABX_OUT_STDOUT, "%s %sRERUN%s (%.2fs)\n", r->nodeid,
                       col(o, YELLOW), col(o, RESET), r->attempts[k].duration);
    abx_out_printf(ABX_OUT_STDOUT, "%s %s%s%s", r->nodeid, col(o, color_of(r)),
                   word(r), col(o, RESET));
    if (o->verbose > 0 || r->outcome != ABX_OUTCOME_PASSED)
        abx_out_printf(ABX_OUT_STDOUT, " (%.2fs)", abx_result_duration(r));
    abx_out_printf(ABX_OUT_STDOUT, " [%3d%%]\n", pct);
    if (r->teardown_message)
        abx_out_printf(ABX_OUT_STDOUT, "%s %sERROR%s (teardown)\n", r->nodeid,
                       col(o, RED), col(o, RESET));
}

void abx_term_output(const char *s, size_t len)
{
    if (g_live_shown) {
        abx_out_puts(ABX_OUT_STDOUT, "\r\033[K");
        g_live_shown = 0;
    }
    abx_out_write(ABX_OUT_STDOUT, s, len);
}

static void section(const struct abx_opts *o, const struct abx_result *r, const char *title,
                    const char *text)
{
    char head[1024];

    snprintf(head, sizeof head, "%s", title);
    rule(o, ABX_OUT_STDOUT, '_', head, RED);
    if (text && *text)
        abx_out_printf(ABX_OUT_STDOUT, "%s\n", text);
    if (r->sandbox_ids.n > 0) {  /* to find them on the platform */
        size_t i;
        abx_out_puts(ABX_OUT_STDOUT, "sandboxes:");
        for (i = 0; i < r->sandbox_ids.n; i++)
            abx_out_printf(ABX_OUT_STDOUT, " %s", r->sandbox_ids.items[i]);
        abx_out_puts(ABX_OUT_STDOUT, "\n");
    }
    if (r->trace)   /* what it did, step by step (docs/reports.md "Traces") */
        abx_out_printf(ABX_OUT_STDOUT, "trace: %s\n", r->trace);
    if (r->output && *r->output) {
        rule(o, ABX_OUT_STDOUT, '-', "Captured output", NULL);
        abx_out_puts(ABX_OUT_STDOUT, r->output);
        if (r->output[strlen(r->output) - 1] != '\n')
            abx_out_puts(ABX_OUT_STDOUT, "\n");
    }
}

static void failure_sections(const struct abx_opts *o, const struct abx_report *rep)
{
    size_t i;
    int any = 0;
    char title[1024];

    for (i = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        if (r->outcome != ABX_OUTCOME_FAILED)
            continue;
        if (!any++)
            rule(o, ABX_OUT_STDOUT, '=', "FAILURES", RED);
        section(o, r, r->nodeid, r->longrepr ? r->longrepr : r->message);
    }
    any = 0;
    for (i = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        if (r->outcome != ABX_OUTCOME_ERROR && !r->teardown_message)
            continue;
        if (!any++)
            rule(o, ABX_OUT_STDOUT, '=', "ERRORS", RED);
        if (r->outcome == ABX_OUTCOME_ERROR) {
            snprintf(title, sizeof title, "ERROR %s %s",
                     r->when == ABX_PHASE_COLLECT ? "collecting"
                     : r->when == ABX_PHASE_TEARDOWN ? "at teardown of"
                     : r->when == ABX_PHASE_SETUP    ? "at setup of"
                                                     : "in",
                     r->nodeid);
            section(o, r, title, r->longrepr ? r->longrepr : r->message);
        }
        if (r->teardown_message) {
            snprintf(title, sizeof title, "ERROR at teardown of %s",
                     r->nodeid);
            section(o, r, title, r->teardown_longrepr ? r->teardown_longrepr
                                                   : r->teardown_message);
        }
    }
}

/* -r P: pytest's PASSES section, the captured output of passing tests. */
static void passes_section(const struct abx_opts *o,
                           const struct abx_report *rep)
{
    size_t i;
    int any = 0;

    if (!strchr(o->report_chars, 'P'))
        return;
    for (i = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        if (r->outcome != ABX_OUTCOME_PASSED || !r->output || !*r->output)
            continue;
        if (!any++)
            rule(o, ABX_OUT_STDOUT, '=', "PASSES", GREEN);
        rule(o, ABX_OUT_STDOUT, '_', r->nodeid, GREEN);
        rule(o, ABX_OUT_STDOUT, '-', "Captured output", NULL);
        abx_out_puts(ABX_OUT_STDOUT, r->output);
        if (r->output[strlen(r->output) - 1] != '\n')
            abx_out_puts(ABX_OUT_STDOUT, "\n");
    }
}

/* Width of the short summary, or 0 for "do not truncate". pytest cuts
 * the message to the terminal except on CI (CI or BUILD_NUMBER set) and
 * with -vv; we only cut on a terminal, where a wrapped line hurts. */
static int summary_width(const struct abx_opts *o)
{
    const char *ci = getenv("CI"), *bn = getenv("BUILD_NUMBER");
    const char *cols = getenv("COLUMNS");
    long w = 0;

    if ((ci && *ci) || (bn && *bn) || o->verbose >= 2 ||
        !abx_stdout_isatty())
        return 0;
    if (!cols || abx_parse_long(cols, 1, 100000, &w) != 0)
        w = abx_stdout_columns();
    /* As Python's shutil.get_terminal_size via pytest: narrow means 80. */
    return w < 40 ? WIDTH : (int)w;
}

/* Columns taken by s: one per UTF-8 character (no wide-glyph table). */
static size_t text_cols(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* pytest's _format_trimmed(" - {}", msg, avail): the message goes when
 * even " - ..." does not fit; else it is cut to fit, ending in "...",
 * never inside a UTF-8 sequence. */
static void trim_message(char *msg, size_t cap, long avail)
{
    size_t cut = 0, cols = 0, keep;

    if (3 + 3 > avail) {
        msg[0] = '\0';
        return;
    }
    if (3 + (long)text_cols(msg) <= avail)
        return;
    keep = (size_t)(avail - 3 - 3);
    while (msg[cut] && cols < keep) {
        cut++;
        while (((unsigned char)msg[cut] & 0xC0) == 0x80)
            cut++;
        cols++;
    }
    if (cut + 4 > cap)
        cut = cap - 4;
    while (cut > 0 && ((unsigned char)msg[cut] & 0xC0) == 0x80)
        cut--;
    memcpy(msg + cut, "...", 4);
}

static void first_line(const char *s, char *out, size_t len)
{
    const char *nl = s ? strchr(s, '\n') : NULL;

    snprintf(out, len, "%.*s", nl ? (int)(nl - s) : (int)(s ? strlen(s) : 0),
             s ? s : "");
}

/* "path:line" where a test was skipped, as pytest folds SKIPPED lines. */
static void skip_location(const struct abx_result *r, char *out, size_t len)
{
    if (r->skip_loc)
        snprintf(out, len, "%s", r->skip_loc);
    else
        snprintf(out, len, "%s:%d", r->file ? r->file : "?", r->line);
}

static void skipped_folded(const struct abx_report *rep)
{
    size_t i, k;
    char *done = abx_xcalloc(rep->n, 1);

    for (i = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        char loc[1200];
        unsigned count = 0;

        if (r->outcome != ABX_OUTCOME_SKIPPED || done[i])
            continue;
        skip_location(r, loc, sizeof loc);
        for (k = i; k < rep->n; k++) {
            const struct abx_result *q = rep->results[k];
            char ql[1200];
            if (q->outcome != ABX_OUTCOME_SKIPPED || done[k])
                continue;
            skip_location(q, ql, sizeof ql);
            if (strcmp(ql, loc) == 0 &&
                strcmp(q->reason ? q->reason : "", r->reason ? r->reason
                                                             : "") == 0) {
                done[k] = 1;
                count++;
            }
        }
        abx_out_printf(ABX_OUT_STDOUT, "SKIPPED [%u] %s: %s\n", count, loc,
                       r->reason ? r->reason : "");
    }
    free(done);
}

static void short_summary(const struct abx_opts *o, const struct abx_report *rep)
{
    const char *c;
    size_t i;
    int header = 0;
    char msg[4096];
    int width = summary_width(o);

    for (c = o->report_chars; *c; c++) {
        for (i = 0; i < rep->n; i++) {
            const struct abx_result *r = rep->results[i];
            int show = (*c == 'f' && r->outcome == ABX_OUTCOME_FAILED) ||
                       (*c == 'E' && (r->outcome == ABX_OUTCOME_ERROR ||
                                      r->teardown_message)) ||
                       (*c == 'x' && r->outcome == ABX_OUTCOME_XFAILED) ||
                       (*c == 'X' && r->outcome == ABX_OUTCOME_XPASSED) ||
                       (*c == 'p' && r->outcome == ABX_OUTCOME_PASSED) ||
                       (*c == 'R' && r->outcome == ABX_OUTCOME_FLAKY) ||
                       (*c == 's' && r->outcome == ABX_OUTCOME_SKIPPED);
            if (!show)
                continue;
            if (!header++)
                rule(o, ABX_OUT_STDOUT, '=', "short test summary info", NULL);
            if (*c == 's') {
                skipped_folded(rep);
                break;
            }
            if (*c == 'p') {
                abx_out_printf(ABX_OUT_STDOUT, "PASSED %s\n", r->nodeid);
                continue;
            }
            if (*c == 'R') {
                /* what it failed with first: the flake to chase */
                first_line(r->nattempts ? r->attempts[0].message : NULL, msg,
                           sizeof msg);
                abx_out_printf(ABX_OUT_STDOUT, "%sFLAKY%s %s (%d rerun%s)%s%s\n",
                               col(o, YELLOW), col(o, RESET), r->nodeid, r->rerun,
                               r->rerun == 1 ? "" : "s", *msg ? " - " : "", msg);
                continue;
            }
            if (*c == 'E' && r->outcome != ABX_OUTCOME_ERROR)
                first_line(r->teardown_message, msg, sizeof msg);
            else if (*c == 'x' || *c == 'X')
                first_line(r->reason, msg, sizeof msg);
            else
                first_line(r->message, msg, sizeof msg);
            if (width && *msg && (*c == 'f' || *c == 'E'))
                trim_message(msg, sizeof msg,
                             width - (long)text_cols(r->nodeid) -
                                 (*c == 'f' ? 7 : 6));
            abx_out_printf(ABX_OUT_STDOUT, "%s%s%s %s%s%s\n",
                           col(o, *c == 'f' || *c == 'E' ? RED : YELLOW),
                           *c == 'f' ? "FAILED" : *c == 'E' ? "ERROR"
                                      : *c == 'x' ? "XFAIL" : "XPASS",
                           col(o, RESET), r->nodeid, *msg ? " - " : "", msg);
        }
    }
}

struct phase {
    double d;
    const char *what, *nodeid;
};

static int cmp_phase(const void *a, const void *b)
{
    double x = ((const struct phase *)a)->d, y = ((const struct phase *)b)->d;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void durations(const struct abx_opts *o, const struct abx_report *rep)
{
    struct phase *p = abx_xcalloc(rep->n * 3, sizeof *p);
    size_t n = 0, i, shown = 0, hidden = 0;
    char title[64];

    for (i = 0; i < rep->n; i++) {
        const struct abx_result *r = rep->results[i];
        p[n++] = (struct phase){r->dur_setup, "setup", r->nodeid};
        p[n++] = (struct phase){r->dur_call, "call", r->nodeid};
        p[n++] = (struct phase){r->dur_teardown, "teardown", r->nodeid};
    }
    qsort(p, n, sizeof *p, cmp_phase);
    if (o->durations == 0)
        snprintf(title, sizeof title, "slowest durations");
    else
        snprintf(title, sizeof title, "slowest %ld durations", o->durations);
    rule(o, ABX_OUT_STDOUT, '=', title, NULL);
    for (i = 0; i < n; i++) {
        if (o->durations > 0 && shown >= (size_t)o->durations)
            break;
        if (p[i].d < 0.005 && o->verbose < 2) {
            hidden++;
            continue;
        }
        abx_out_printf(ABX_OUT_STDOUT, "%.2fs %-8s %s\n", p[i].d, p[i].what,
                       p[i].nodeid);
        shown++;
    }
    if (hidden)
        abx_out_printf(ABX_OUT_STDOUT, "\n(%zu durations < 0.005s hidden. "
                       "Use -vv to show these durations.)\n", hidden);
    free(p);
}

void abx_term_finish(const struct abx_opts *o, const struct abx_report *rep)
{
    const struct abx_summary *sum = rep->sum;
    char line[512];
    const char *color;

    if (g_live_shown) {
        abx_out_puts(ABX_OUT_STDOUT, "\n");
        g_live_shown = 0;
    }
    if (o->quiet < 2) {
        failure_sections(o, rep);
        passes_section(o, rep);
    }
    if (o->durations >= 0)
        durations(o, rep);
    if (o->quiet < 2)
        short_summary(o, rep);
    if (rep->stopped_maxfail)
        rule(o, ABX_OUT_STDOUT, '!', o->maxfail == 1 ? "stopping after 1 failure"
                                                  : "stopping after failures",
             NULL);
    if (rep->collect_errors)
        abx_term_collect_stop(o, rep->collect_errors);
    if (rep->interrupted_at) {
        char msg[700];
        snprintf(msg, sizeof msg, "Interrupted: run stopped by a signal%s%s",
                 rep->interrupted_at[0] ? " while running " : "",
                 rep->interrupted_at);
        rule(o, ABX_OUT_STDOUT, '!', msg, RED);
    }
    if (g_epilogue) {
        abx_out_puts(ABX_OUT_STDOUT, g_epilogue);
        abx_term_epilogue(NULL);
    }
    abx_summary_line(sum, line, sizeof line);
    color = abx_summary_errors(sum) || sum->counts[ABX_OUTCOME_FAILED] ||
                    rep->interrupted_at || rep->collect_errors
                ? RED
            : sum->counts[ABX_OUTCOME_PASSED] == abx_summary_total(sum) &&
                    abx_summary_total(sum) > 0
                ? GREEN
                : YELLOW;
    rule(o, ABX_OUT_STDOUT, '=', line, color);
    abx_out_flush();
}

void abx_term_epilogue(const char *text)
{
    free(g_epilogue);
    g_epilogue = text ? abx_xstrdup(text) : NULL;
}

void abx_term_collect_stop(const struct abx_opts *o, size_t errors)
{
    char msg[96];

    snprintf(msg, sizeof msg, "Interrupted: %zu error%s during collection",
             errors, errors == 1 ? "" : "s");
    rule(o, ABX_OUT_STDOUT, '!', msg, RED);
}

void abx_term_collect_only(const struct abx_opts *o,
                           const struct abx_collection *c)
{
    size_t i, k, n = 0;

    for (i = 0; i < c->n; i++) {
        const struct abx_file *f = &c->files[i];
        if (f->collect_error)
            abx_out_printf(ABX_OUT_STDOUT, "ERROR collecting %s: %s\n",
                           f->path, f->collect_error->message);
        for (k = 0; k < f->n; k++) {
            if (!f->items[k].selected)
                continue;
            n++;
            if (o->verbose > 0) {
                size_t m;
                abx_out_printf(ABX_OUT_STDOUT, "%s  [", f->items[k].nodeid);
                for (m = 0; m < f->items[k].marks.n; m++)
                    abx_out_printf(ABX_OUT_STDOUT, "%s%s", m ? " " : "",
                                   f->items[k].marks.items[m]);
                abx_out_puts(ABX_OUT_STDOUT, "]\n");
            } else {
                abx_out_printf(ABX_OUT_STDOUT, "%s\n", f->items[k].nodeid);
            }
        }
    }
    if (!o->quiet)
        abx_out_printf(ABX_OUT_STDOUT, "\n%zu test%s collected%s\n", n,
                       n == 1 ? "" : "s", c->deselected ? " (after selection)"
                                                        : "");
}
