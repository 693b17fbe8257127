/* Earlier attempts of a rerun test (--reruns): kept on the final result,
 * carried worker -> parent in its JSON, shown by the reports (JUnit's
 * flakyFailure / rerunFailure, the JSON report's "attempts"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "result.h"
#include "vec.h"

#define MAX_ATTEMPTS 1000

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Appends one attempt (owning its strings) to r. */
static int push(struct abx_result *r, struct abx_attempt *a)
{
    if (r->nattempts >= MAX_ATTEMPTS ||
        ABX_VEC_RESERVE(r->attempts, r->capattempts, r->nattempts + 1) != 0)
        return -1;
    r->attempts[r->nattempts++] = *a;
    return 0;
}

int abx_result_add_attempt(struct abx_result *r,
                           const struct abx_result *failed)
{
    struct abx_attempt a = {
        .outcome = failed->outcome,
        .when = failed->when,
        .message = dup_or_null(failed->message),
        .longrepr = dup_or_null(failed->longrepr),
        .output = dup_or_null(failed->output),
        .duration = abx_result_duration(failed),
        .start = failed->start,
    };

    if ((failed->message && !a.message) || (failed->longrepr && !a.longrepr) ||
        (failed->output && !a.output) || push(r, &a) != 0) {
        abx_attempt_free(&a);
        return -1;
    }
    r->rerun++;
    return 0;
}

static int add_str(cJSON *o, const char *k, const char *v)
{
    return !v || cJSON_AddStringToObject(o, k, v) ? 0 : -1;
}

int abx_attempts_to_json(cJSON *o, const struct abx_result *r)
{
    cJSON *arr, *a;

    if (r->nattempts == 0)
        return 0;
    if (!(arr = cJSON_AddArrayToObject(o, "attempts")))
        return -1;
    for (size_t i = 0; i < r->nattempts; i++) {
        const struct abx_attempt *t = &r->attempts[i];
        if (!(a = cJSON_CreateObject()) || !cJSON_AddItemToArray(arr, a) ||
            add_str(a, "outcome", abx_outcome_name(t->outcome)) ||
            add_str(a, "when", abx_phase_name(t->when)) ||
            add_str(a, "message", t->message) ||
            add_str(a, "longrepr", t->longrepr) ||
            add_str(a, "output", t->output) ||
            !cJSON_AddNumberToObject(a, "duration", t->duration) ||
            (t->start > 0 && !cJSON_AddNumberToObject(a, "start", t->start)))
            return -1;
    }
    return 0;
}

/* A string member into *out (absent or null: left NULL). */
static int get_str(const cJSON *j, const char *k, char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);

    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v) || !(*out = strdup(v->valuestring)))
        return -1;
    return 0;
}

int abx_attempts_from_json(const cJSON *j, struct abx_result *r)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "attempts"), *e;

    if (!arr || cJSON_IsNull(arr))
        return 0;
    if (!cJSON_IsArray(arr))
        return -1;
    cJSON_ArrayForEach(e, arr) {
        struct abx_attempt a;
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(e, "outcome");
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(e, "when");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "duration");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "start");
        int oc = cJSON_IsString(o) ? abx_outcome_parse(o->valuestring) : -1;
        int ph = !w ? 0 : cJSON_IsString(w) ? abx_phase_parse(w->valuestring) : -1;

        memset(&a, 0, sizeof a);
        if (!cJSON_IsObject(e) || oc < 0 || ph < 0 ||
            (d && (!cJSON_IsNumber(d) || !isfinite(d->valuedouble) ||
                   d->valuedouble < 0)) ||
            (s && (!cJSON_IsNumber(s) || !isfinite(s->valuedouble) ||
                   s->valuedouble < 0)))
            return -1;
        a.outcome = (enum abx_outcome)oc;
        a.when = (enum abx_phase)ph;
        a.duration = d ? d->valuedouble : 0;
        a.start = s ? s->valuedouble : 0;
        if (get_str(e, "message", &a.message) ||
            get_str(e, "longrepr", &a.longrepr) ||
            get_str(e, "output", &a.output) || push(r, &a) != 0) {
            abx_attempt_free(&a);
            return -1;
        }
    }
    return 0;
}
