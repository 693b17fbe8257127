/* Test result records and the run summary with pytest's closing line
 * (their JSON form: result_json.c; reruns' attempts: attempts.c). */
#include "result.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "vec.h"

static const char *const outcome_names[ABX_OUTCOME_COUNT_] = {
    "passed", "failed", "error", "skipped", "xfailed", "xpassed", "flaky",
};

static const char *const phase_names[] = {
    "", "collect", "setup", "call", "teardown",
};

const char *abx_outcome_name(enum abx_outcome o)
{
    return (unsigned)o < ABX_OUTCOME_COUNT_ ? outcome_names[o] : "unknown";
}

int abx_outcome_parse(const char *s)
{
    int i;

    for (i = 0; s && i < ABX_OUTCOME_COUNT_; i++)
        if (!strcmp(s, outcome_names[i]))
            return i;
    return -1;
}

const char *abx_phase_name(enum abx_phase p)
{
    return (unsigned)p <= ABX_PHASE_TEARDOWN ? phase_names[p] : "";
}

int abx_phase_parse(const char *s)
{
    int i;

    for (i = 0; s && i <= ABX_PHASE_TEARDOWN; i++)
        if (!strcmp(s, phase_names[i]))
            return i;
    return -1;
}

/* ---- string lists ------------------------------------------------------ */

void abx_strlist_init(struct abx_strlist *l)
{
    memset(l, 0, sizeof(*l));
}

int abx_strlist_push(struct abx_strlist *l, const char *s)
{
    char *copy;

    if (!s)
        return -1;
    if (ABX_VEC_RESERVE(l->items, l->cap, l->n + 1) != 0)
        return -1;
    copy = strdup(s);
    if (!copy)
        return -1;
    l->items[l->n++] = copy;
    return 0;
}

int abx_strlist_contains(const struct abx_strlist *l, const char *s)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        if (!strcmp(l->items[i], s))
            return 1;
    return 0;
}

void abx_strlist_free(struct abx_strlist *l)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    abx_strlist_init(l);
}

/* ---- records ------------------------------------------------------------ */

/* The attempts belong to the record (their JSON is attempts.c's). */
void abx_attempt_free(struct abx_attempt *a)
{
    free(a->message);
    free(a->longrepr);
    free(a->output);
    memset(a, 0, sizeof *a);
}

void abx_result_free_attempts(struct abx_result *r)
{
    for (size_t i = 0; i < r->nattempts; i++)
        abx_attempt_free(&r->attempts[i]);
    free(r->attempts);
    r->attempts = NULL;
    r->nattempts = r->capattempts = 0;
}

struct abx_result *abx_result_new(void)
{
    struct abx_result *r = calloc(1, sizeof(*r));

    if (r)
        r->worker = -1;
    return r;
}

void abx_result_free(struct abx_result *r)
{
    if (!r)
        return;
    free(r->nodeid);
    free(r->file);
    free(r->name);
    free(r->classname);
    free(r->message);
    free(r->longrepr);
    free(r->reason);
    free(r->skip_loc);
    free(r->trace);
    free(r->output);
    free(r->teardown_message);
    free(r->teardown_longrepr);
    abx_strlist_free(&r->groups);
    abx_strlist_free(&r->markers);
    abx_strlist_free(&r->sandbox_ids);
    abx_result_free_attempts(r);
    free(r);
}

int abx_result_set(char **field, const char *s)
{
    char *copy = NULL;

    if (s && !(copy = strdup(s)))
        return -1;
    free(*field);
    *field = copy;
    return 0;
}

int abx_result_set_identity(struct abx_result *r, const char *file, int line,
                            const char *const *groups, size_t ngroups,
                            const char *name)
{
    struct abx_buf id, cls;
    size_t i, n;
    int rc = -1;

    abx_buf_init(&id, 0);
    abx_buf_init(&cls, 0);
    abx_strlist_free(&r->groups);
    if (abx_buf_appends(&id, file))
        goto out;
    /* classname: path without ".lua", '/' -> '.' (pytest's mangling) */
    n = strlen(file);
    if (n > 4 && !strcmp(file + n - 4, ".lua"))
        n -= 4;
    for (i = 0; i < n; i++)
        if (abx_buf_appendc(&cls, file[i] == '/' ? '.' : file[i]))
            goto out;
    for (i = 0; i < ngroups; i++)
        if (abx_strlist_push(&r->groups, groups[i]) ||
            abx_buf_appendf(&id, "::%s", groups[i]) ||
            abx_buf_appendf(&cls, ".%s", groups[i]))
            goto out;
    if (abx_buf_appendf(&id, "::%s", name))
        goto out;
    if (abx_result_set(&r->nodeid, abx_buf_cstr(&id)) ||
        abx_result_set(&r->classname, abx_buf_cstr(&cls)) ||
        abx_result_set(&r->file, file) || abx_result_set(&r->name, name))
        goto out;
    r->line = line;
    rc = 0;
out:
    abx_buf_free(&id);
    abx_buf_free(&cls);
    return rc;
}

double abx_result_duration(const struct abx_result *r)
{
    return r->dur_setup + r->dur_call + r->dur_teardown;
}

int abx_result_is_failure(const struct abx_result *r)
{
    return r->outcome == ABX_OUTCOME_FAILED ||
           r->outcome == ABX_OUTCOME_ERROR || r->teardown_message != NULL;
}

/* ---- summary ------------------------------------------------------------ */

void abx_summary_init(struct abx_summary *s)
{
    memset(s, 0, sizeof(*s));
}

void abx_summary_add(struct abx_summary *s, const struct abx_result *r)
{
    if ((unsigned)r->outcome < ABX_OUTCOME_COUNT_)
        s->counts[r->outcome]++;
    if (r->teardown_message)
        s->teardown_errors++;
    s->rerun += (unsigned)(r->rerun > 0 ? r->rerun : 0);
}

unsigned abx_summary_errors(const struct abx_summary *s)
{
    return s->counts[ABX_OUTCOME_ERROR] + s->teardown_errors;
}

unsigned abx_summary_total(const struct abx_summary *s)
{
    unsigned t = 0;
    int i;

    for (i = 0; i < ABX_OUTCOME_COUNT_; i++)
        t += s->counts[i];
    return t;
}

/* Python's str(timedelta(seconds=int(x))): "0:01:21", "1 day, 2:03:04". */
static void fmt_duration(double secs, char *buf, size_t len)
{
    long t, d;

    if (!(secs >= 0) || secs > 1e12)
        secs = 0;
    if (secs < 60) {
        snprintf(buf, len, "%.2fs", secs);
        return;
    }
    t = (long)secs;
    d = t / 86400;
    t %= 86400;
    if (d)
        snprintf(buf, len, "%.2fs (%ld day%s, %ld:%02ld:%02ld)", secs, d,
                 d == 1 ? "" : "s", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%.2fs (%ld:%02ld:%02ld)", secs, t / 3600,
                 t / 60 % 60, t % 60);
}

int abx_summary_line(const struct abx_summary *s, char *buf, size_t len)
{
    /* pytest's KNOWN_TYPES order; "rerun" (a plugin's type) comes last.
     * Only "error" and "warning" take a plural. */
    const struct {
        unsigned n;
        const char *one, *many;
    } parts[] = {
        {s->counts[ABX_OUTCOME_FAILED], "failed", "failed"},
        {s->counts[ABX_OUTCOME_PASSED], "passed", "passed"},
        {s->counts[ABX_OUTCOME_FLAKY], "flaky", "flaky"},
        {s->counts[ABX_OUTCOME_SKIPPED], "skipped", "skipped"},
        {s->deselected, "deselected", "deselected"},
        {s->counts[ABX_OUTCOME_XFAILED], "xfailed", "xfailed"},
        {s->counts[ABX_OUTCOME_XPASSED], "xpassed", "xpassed"},
        {s->warnings, "warning", "warnings"},
        {abx_summary_errors(s), "error", "errors"},
        {s->rerun, "rerun", "rerun"},
    };
    /* Ten parts of at most ", 4294967295 deselected" (23 bytes): no
     * allocation that could fail. */
    char counts[256], dur[64];
    size_t i, k = 0;

    for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        if (!parts[i].n)
            continue;
        k += (size_t)snprintf(counts + k, sizeof(counts) - k, "%s%u %s",
                              k ? ", " : "", parts[i].n,
                              parts[i].n == 1 ? parts[i].one : parts[i].many);
    }
    fmt_duration(s->duration, dur, sizeof(dur));
    return snprintf(buf, len, "%s in %s", k ? counts : "no tests ran", dur);
}

int abx_summary_exit_code(const struct abx_summary *s, int interrupted)
{
    if (interrupted)
        return ABX_EXIT_INTERRUPTED;
    if (s->counts[ABX_OUTCOME_FAILED] || abx_summary_errors(s))
        return ABX_EXIT_TESTS_FAILED;
    if (abx_summary_total(s) == 0)
        return ABX_EXIT_NO_TESTS_COLLECTED;
    return ABX_EXIT_OK;
}
