/* The JSON form of a test result, worker -> parent and into the JSON
 * report (result.h); its earlier attempts through attempts.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result.h"

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
          add_str(o, "trace", r->trace) ||
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
          !cJSON_AddNumberToObject(o, "start", r->start) ||
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
    TRY("trace", get_str(j, "trace", &r->trace));
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
    TRY("start", get_num(j, "start", 0, 1e12, &r->start));
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

