/* Fault injection: off by default, set by flags or POST /admin/faults. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "log.h"
#include "random.h"

static pthread_mutex_t faults_lock = PTHREAD_MUTEX_INITIALIZER;
static struct abxl_faults cur = {.error_status = 503};

void abxl_faults_get(struct abxl_faults *out)
{
    pthread_mutex_lock(&faults_lock);
    *out = cur;
    pthread_mutex_unlock(&faults_lock);
}

/* The settings, each under its JSON member and its serve flag. The
 * table drives POST /admin/faults, GET /admin/faults and the flags, so
 * the three cannot disagree. */
enum kind { K_LONG, K_INT, K_DOUBLE, K_LLONG };
static const struct setting {
    const char *name, *flag;
    double min, max;
    enum kind kind;   /* the field's C type; all but K_DOUBLE are integers */
    size_t off;
} settings[] = {
#define AT(field) offsetof(struct abxl_faults, field)
    {"latencyMs", "--fault-latency-ms", 0, 600000, K_LONG, AT(latency_ms)},
    {"createLatencyMs", "--fault-create-latency-ms", 0, 600000, K_LONG, AT(create_latency_ms)},
    {"deleteDelayMs", "--fault-delete-delay-ms", 0, 600000, K_LONG, AT(delete_delay_ms)},
    {"errorRate", "--fault-error-rate", 0, 1, K_DOUBLE, AT(error_rate)},
    {"dataErrorRate", "--fault-data-error-rate", 0, 1, K_DOUBLE, AT(data_error_rate)},
    {"errorStatus", "--fault-error-status", 400, 599, K_INT, AT(error_status)},
    {"dropStreamAfterBytes", "--fault-drop-stream-after", 0, 1e15, K_LLONG,
     AT(drop_stream_after_bytes)},
    {"dropCreateReplies", "--fault-drop-create-replies", 0, 1000000, K_LONG,
     AT(drop_create_replies)},
    {"killIgnored", "--fault-kill-ignored", 0, 1, K_INT, AT(kill_ignored)},
    {"listFilterEmpty", "--fault-list-filter-empty", 0, 1, K_INT, AT(list_filter_empty)},
    {"errorBodyCode", "--fault-error-body-code", 0, 599, K_INT, AT(error_body_code)},
    {"metadataPunctRefused", "--fault-metadata-punct-refused", 0, 1, K_INT,
     AT(metadata_punct_refused)},
    {"uploadMaxBytes", "--fault-upload-max-bytes", 0, 1e15, K_LLONG, AT(upload_max_bytes)},
    {"createEnvsDropped", "--fault-create-envs-dropped", 0, 1, K_INT, AT(create_envs_dropped)},
#undef AT
};
#define N_SETTINGS (sizeof settings / sizeof settings[0])

static void set_field(struct abxl_faults *f, const struct setting *st, double v)
{
    char *p = (char *)f + st->off;
    switch (st->kind) {
    case K_LONG:
        *(long *)(void *)p = (long)v;
        break;
    case K_INT:
        *(int *)(void *)p = (int)v;
        break;
    case K_DOUBLE:
        *(double *)(void *)p = v;
        break;
    case K_LLONG:
        *(long long *)(void *)p = (long long)v;
        break;
    }
}

static double get_field(const struct abxl_faults *f, const struct setting *st)
{
    const char *p = (const char *)f + st->off;
    switch (st->kind) {
    case K_LONG:
        return (double)*(const long *)(const void *)p;
    case K_INT:
        return (double)*(const int *)(const void *)p;
    case K_DOUBLE:
        return *(const double *)(const void *)p;
    case K_LLONG:
        return (double)*(const long long *)(const void *)p;
    }
    return 0;
}

int abxl_faults_update(const cJSON *obj, char *err, size_t errlen)
{
    if (!cJSON_IsObject(obj)) {
        snprintf(err, errlen, "body must be a JSON object");
        return -1;
    }
    struct abxl_faults f;
    abxl_faults_get(&f);
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const struct setting *st = &settings[i];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, st->name);
        if (v == NULL)
            continue;   /* absent members keep their value */
        bool integral = st->kind != K_DOUBLE;
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
            (integral && v->valuedouble != floor(v->valuedouble)) ||
            v->valuedouble < st->min || v->valuedouble > st->max) {
            snprintf(err, errlen, "field '%s' must be a%s number in [%g, %g]", st->name,
                     integral ? "n integer" : "", st->min, st->max);
            return -1;
        }
        set_field(&f, st, v->valuedouble);
    }
    /* All or nothing: a bad member leaves every setting as it was. */
    pthread_mutex_lock(&faults_lock);
    cur = f;
    pthread_mutex_unlock(&faults_lock);
    return 0;
}

int abxl_faults_flag(const char *flag, const char *val, char *err, size_t errlen)
{
    for (size_t i = 0; i < N_SETTINGS; i++) {
        if (strcmp(flag, settings[i].flag) != 0)
            continue;
        if (val == NULL)
            return 0;  /* only asked whether it is one */
        char *end;
        double d = strtod(val, &end);
        if (val[0] == '\0' || *end != '\0') {
            snprintf(err, errlen, "wants a number, got '%.64s'", val);
            return -1;
        }
        cJSON *o = cJSON_CreateObject();
        if (o == NULL || cJSON_AddNumberToObject(o, settings[i].name, d) == NULL) {
            cJSON_Delete(o);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        int rc = abxl_faults_update(o, err, errlen);
        cJSON_Delete(o);
        return rc;
    }
    return 1;
}

cJSON *abxl_faults_json(void)
{
    struct abxl_faults f;
    abxl_faults_get(&f);
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    for (size_t i = 0; i < N_SETTINGS; i++) {
        if (cJSON_AddNumberToObject(o, settings[i].name, get_field(&f, &settings[i])) == NULL) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}

int abxl_faults_roll(bool data_plane)
{
    struct abxl_faults f;
    abxl_faults_get(&f);
    abxl_sleep_ms(f.latency_ms);
    double rate = data_plane ? f.data_error_rate : f.error_rate;
    if (rate <= 0)
        return 0;
    unsigned int r = 0;
    if (abx_random_bytes(&r, sizeof r) != 0) {
        abxl_log(ABXL_LOG_ERROR, "faults: no random bytes for the error rate: %s; "
                 "nothing injected", strerror(errno));
        return 0;
    }
    return ((double)r / 4294967296.0) < rate ? f.error_status : 0;
}

bool abxl_faults_take_create_drop(void)
{
    bool take = false;
    pthread_mutex_lock(&faults_lock);
    if (cur.drop_create_replies > 0) {
        cur.drop_create_replies--;
        take = true;
    }
    pthread_mutex_unlock(&faults_lock);
    return take;
}
