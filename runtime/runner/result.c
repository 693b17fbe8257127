/* Test result records, their JSON form (worker -> parent) and the run
 * summary with pytest's closing line. */
#include "result.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

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
    char **p, *copy;
    size_t cap;

    if (!s)
        return -1;
    if (l->n == l->cap) {
        cap = l->cap ? l->cap * 2 : 4;
        p = realloc(l->items, cap * sizeof(*p));
        if (!p)
            return -1;
        l->items = p;
        l->cap = cap;
    }
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

/* ---- JSON --------------------------------------------------------------- */

static int add_str(cJSON *o, const char *k, const char *v)
{
    return !v || cJSON_AddStringToObject(o, k, v) ? 0 : -1;
}

static int add_list(cJSON *o, const char *k, const struct abx_strlist *l)
{
    cJSON *a = cJSON_AddArrayToObject(o, k), *s;
    size_t i;

    if (!a)
        return -1;
    for (i = 0; i < l->n; i++) {
        s = cJSON_CreateString(l->items[i]);
        if (!s || !cJSON_AddItemToArray(a, s)) {
            cJSON_Delete(s);
            return -1;
        }
    }
    return 0;
}

cJSON *abx_result_to_json(const struct abx_result *r)
{
    cJSON *o = cJSON_CreateObject(), *d;
    int bad;

    if (!o)
        return NULL;
    bad = add_str(o, "nodeid", r->nodeid ? r->nodeid : "") ||
          add_str(o, "file", r->file) ||
          !cJSON_AddNumberToObject(o, "line", r->line) ||
          add_str(o, "name", r->name) || add_list(o, "groups", &r->groups) ||
          add_str(o, "classname", r->classname) ||
          add_str(o, "outcome", abx_outcome_name(r->outcome)) ||
          add_str(o, "when", abx_phase_name(r->when)) ||
          !cJSON_AddBoolToObject(o, "xpass_strict", r->xpass_strict) ||
          add_str(o, "message", r->message) ||
          add_str(o, "longrepr", r->longrepr) ||
          add_str(o, "reason", r->reason) ||
          add_str(o, "skip_loc", r->skip_loc) ||
          add_str(o, "output", r->output) ||
          add_str(o, "teardown_message", r->teardown_message) ||
          add_str(o, "teardown_longrepr", r->teardown_longrepr) ||
          !(d = cJSON_AddObjectToObject(o, "durations")) ||
          !cJSON_AddNumberToObject(d, "setup", r->dur_setup) ||
          !cJSON_AddNumberToObject(d, "call", r->dur_call) ||
          !cJSON_AddNumberToObject(d, "teardown", r->dur_teardown) ||
          add_list(o, "markers", &r->markers) ||
          add_list(o, "sandbox_ids", &r->sandbox_ids) ||
          !cJSON_AddNumberToObject(o, "worker", r->worker) ||
          !cJSON_AddNumberToObject(o, "rerun", r->rerun) ||
          abx_attempts_to_json(o, r);
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Each getter: 0 ok (absent/null leaves the default), -1 wrong type. */
static int get_str(const cJSON *j, const char *k, char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);

    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v))
        return -1;
    return abx_result_set(out, v->valuestring);
}

static int get_num(const cJSON *j, const char *k, double lo, double hi,
                   double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);

    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
        v->valuedouble < lo || v->valuedouble > hi)
        return -1;
    *out = v->valuedouble;
    return 0;
}

static int get_int(const cJSON *j, const char *k, int lo, int *out)
{
    double d = *out;

    if (get_num(j, k, lo, 2147483647.0, &d))
        return -1;
    *out = (int)d;
    return 0;
}

static int get_list(const cJSON *j, const char *k, struct abx_strlist *l)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k), *e;

    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsArray(v))
        return -1;
    cJSON_ArrayForEach(e, v)
        if (!cJSON_IsString(e) || abx_strlist_push(l, e->valuestring))
            return -1;
    return 0;
}

int abx_result_from_json(const cJSON *j, struct abx_result **out, char *err,
                         size_t errlen)
{
    struct abx_result *r;
    const cJSON *v, *d;
    const char *bad = NULL;
    int x;

    *out = NULL;
    if (!err)
        errlen = 0;
    if (!cJSON_IsObject(j)) {
        snprintf(err, errlen, "result is not a JSON object");
        return -1;
    }
    r = abx_result_new();
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
#define TRY(key, expr) do { if (!bad && (expr)) bad = key; } while (0)
    v = cJSON_GetObjectItemCaseSensitive(j, "nodeid");
    TRY("nodeid", !cJSON_IsString(v) || !*v->valuestring ||
                      abx_result_set(&r->nodeid, v->valuestring));
    v = cJSON_GetObjectItemCaseSensitive(j, "outcome");
    x = cJSON_IsString(v) ? abx_outcome_parse(v->valuestring) : -1;
    TRY("outcome", x < 0);
    r->outcome = x < 0 ? ABX_OUTCOME_ERROR : (enum abx_outcome)x;
    v = cJSON_GetObjectItemCaseSensitive(j, "when");
    x = !v ? 0 : cJSON_IsString(v) ? abx_phase_parse(v->valuestring) : -1;
    TRY("when", x < 0);
    r->when = x < 0 ? ABX_PHASE_NONE : (enum abx_phase)x;
    v = cJSON_GetObjectItemCaseSensitive(j, "xpass_strict");
    TRY("xpass_strict", v && !cJSON_IsBool(v));
    r->xpass_strict = cJSON_IsTrue(v);
    TRY("file", get_str(j, "file", &r->file));
    TRY("line", get_int(j, "line", 0, &r->line));
    TRY("name", get_str(j, "name", &r->name));
    TRY("groups", get_list(j, "groups", &r->groups));
    TRY("classname", get_str(j, "classname", &r->classname));
    TRY("message", get_str(j, "message", &r->message));
    TRY("longrepr", get_str(j, "longrepr", &r->longrepr));
    TRY("reason", get_str(j, "reason", &r->reason));
    TRY("skip_loc", get_str(j, "skip_loc", &r->skip_loc));
    TRY("output", get_str(j, "output", &r->output));
    TRY("teardown_message",
        get_str(j, "teardown_message", &r->teardown_message));
    TRY("teardown_longrepr",
        get_str(j, "teardown_longrepr", &r->teardown_longrepr));
    d = cJSON_GetObjectItemCaseSensitive(j, "durations");
    TRY("durations", d && !cJSON_IsObject(d));
    if (cJSON_IsObject(d)) {
        TRY("durations.setup", get_num(d, "setup", 0, 1e9, &r->dur_setup));
        TRY("durations.call", get_num(d, "call", 0, 1e9, &r->dur_call));
        TRY("durations.teardown",
            get_num(d, "teardown", 0, 1e9, &r->dur_teardown));
    }
    TRY("markers", get_list(j, "markers", &r->markers));
    TRY("sandbox_ids", get_list(j, "sandbox_ids", &r->sandbox_ids));
    TRY("worker", get_int(j, "worker", -1, &r->worker));
    TRY("rerun", get_int(j, "rerun", 0, &r->rerun));
    TRY("attempts", abx_attempts_from_json(j, r));
#undef TRY
    if (bad) {
        snprintf(err, errlen, "result JSON: missing or invalid \"%s\"", bad);
        abx_result_free(r);
        return -1;
    }
    *out = r;
    return 0;
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
    struct abx_buf b;
    char dur[64];
    size_t i;
    int n, any = 0;

    abx_buf_init(&b, 0);
    for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        if (!parts[i].n)
            continue;
        abx_buf_appendf(&b, "%s%u %s", any ? ", " : "", parts[i].n,
                        parts[i].n == 1 ? parts[i].one : parts[i].many);
        any = 1;
    }
    fmt_duration(s->duration, dur, sizeof(dur));
    n = snprintf(buf, len, "%s in %s", any ? abx_buf_cstr(&b) : "no tests ran",
                 dur);
    abx_buf_free(&b);
    return n;
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
