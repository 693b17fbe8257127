/* Fault injection: off by default, set by flags or POST /admin/faults. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "server.h"

static pthread_mutex_t flock_ = PTHREAD_MUTEX_INITIALIZER;
static struct abx_faults cur = {.error_status = 503};

void abx_faults_get(struct abx_faults *out)
{
    pthread_mutex_lock(&flock_);
    *out = cur;
    pthread_mutex_unlock(&flock_);
}

static int get_num(const cJSON *obj, const char *name, double min, double max,
                   bool integral, double *out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (v == NULL)
        return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
        (integral && v->valuedouble != floor(v->valuedouble)) ||
        v->valuedouble < min || v->valuedouble > max) {
        snprintf(err, errlen, "field '%s' must be a%s number in [%g, %g]", name,
                 integral ? "n integer" : "", min, max);
        return -1;
    }
    *out = v->valuedouble;
    return 1;
}

int abx_faults_update(const cJSON *obj, char *err, size_t errlen)
{
    if (!cJSON_IsObject(obj)) {
        snprintf(err, errlen, "body must be a JSON object");
        return -1;
    }
    struct abx_faults f;
    abx_faults_get(&f);
    double d;
    int r;
    if ((r = get_num(obj, "latencyMs", 0, 600000, true, &d, err, errlen)) < 0)
        return -1;
    if (r)
        f.latency_ms = (long)d;
    if ((r = get_num(obj, "createLatencyMs", 0, 600000, true, &d, err, errlen)) < 0)
        return -1;
    if (r)
        f.create_latency_ms = (long)d;
    if ((r = get_num(obj, "deleteDelayMs", 0, 600000, true, &d, err, errlen)) < 0)
        return -1;
    if (r)
        f.delete_delay_ms = (long)d;
    if ((r = get_num(obj, "errorRate", 0, 1, false, &d, err, errlen)) < 0)
        return -1;
    if (r)
        f.error_rate = d;
    if ((r = get_num(obj, "dataErrorRate", 0, 1, false, &d, err, errlen)) < 0)
        return -1;
    if (r)
        f.data_error_rate = d;
    if ((r = get_num(obj, "errorStatus", 400, 599, true, &d, err, errlen)) < 0)
        return -1;
    if (r)
        f.error_status = (int)d;
    if ((r = get_num(obj, "dropStreamAfterBytes", 0, 1e15, true, &d, err, errlen)) < 0)
        return -1;
    if (r)
        f.drop_stream_after_bytes = (long long)d;
    pthread_mutex_lock(&flock_);
    cur = f;
    pthread_mutex_unlock(&flock_);
    return 0;
}

cJSON *abx_faults_json(void)
{
    struct abx_faults f;
    abx_faults_get(&f);
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddNumberToObject(o, "latencyMs", (double)f.latency_ms);
    cJSON_AddNumberToObject(o, "createLatencyMs", (double)f.create_latency_ms);
    cJSON_AddNumberToObject(o, "deleteDelayMs", (double)f.delete_delay_ms);
    cJSON_AddNumberToObject(o, "errorRate", f.error_rate);
    cJSON_AddNumberToObject(o, "dataErrorRate", f.data_error_rate);
    cJSON_AddNumberToObject(o, "errorStatus", f.error_status);
    cJSON_AddNumberToObject(o, "dropStreamAfterBytes", (double)f.drop_stream_after_bytes);
    return o;
}

int abx_faults_roll(bool data_plane)
{
    struct abx_faults f;
    abx_faults_get(&f);
    abx_sleep_ms(f.latency_ms);
    double rate = data_plane ? f.data_error_rate : f.error_rate;
    if (rate <= 0)
        return 0;
    unsigned int r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
        return 0;
    return ((double)r / 4294967296.0) < rate ? f.error_status : 0;
}
