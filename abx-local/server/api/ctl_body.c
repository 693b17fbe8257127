/* Control-plane request bodies: an optional JSON object and its typed
 * fields, each refusal naming the field. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "http.h"
#include "jsonstrict.h"
#include "names.h"

/* Parses an optional JSON object body; NULL with *bad set on error. */
cJSON *abxl_body_parse(struct MHD_Connection *c, const struct abx_buf *body,
                         enum MHD_Result *bad)
{
    *bad = MHD_YES;
    if (body->len == 0)
        return NULL;
    char err[128];
    cJSON *o = abx_json_parse_strict(body->data, body->len, err, sizeof err);
    if (o == NULL) {
        *bad = abxl_http_error(c, 400, "%s", err);
        return NULL;
    }
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        *bad = abxl_http_error(c, 400, "request body must be a JSON object");
        return NULL;
    }
    return o;
}

/* 1 present (in *out), 0 absent, -1 wrong type / range (err set). */
int abxl_body_int(const cJSON *o, const char *name, long min, long max, long *out,
                   char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
        v->valuedouble != floor(v->valuedouble)) {
        snprintf(err, errlen, "field '%s' must be an integer", name);
        return -1;
    }
    if (v->valuedouble < (double)min || v->valuedouble > (double)max) {
        snprintf(err, errlen, "field '%s' must be between %ld and %ld", name, min, max);
        return -1;
    }
    *out = (long)v->valuedouble;
    return 1;
}

int abxl_body_bool(const cJSON *o, const char *name, bool *out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsBool(v)) {
        snprintf(err, errlen, "field '%s' must be a boolean", name);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 1;
}

/* A map of strings (metadata, envVars): keys non-empty, and for
 * ABXL_KEYS_ENV variable names. */
int abxl_body_map(const cJSON *o, const char *name, enum abxl_keys keys, const cJSON **out,
                  char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    *out = NULL;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsObject(v)) {
        snprintf(err, errlen, "field '%s' must be an object of strings", name);
        return -1;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, v)
    {
        if (!cJSON_IsString(e)) {
            snprintf(err, errlen, "field '%s.%.64s' must be a string", name, e->string);
            return -1;
        }
        if (e->string[0] == '\0' || (keys == ABXL_KEYS_ENV && !abxl_env_name(e->string))) {
            snprintf(err, errlen, "field '%s' has a bad key '%.64s': %s", name, e->string,
                     keys == ABXL_KEYS_ENV ? "a variable name is letters, digits and '_', "
                                             "not starting with a digit"
                                           : "keys must not be empty");
            return -1;
        }
    }
    *out = v;
    return 1;
}

