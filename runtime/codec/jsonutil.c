#include "jsonutil.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"

__attribute__((format(printf, 2, 3)))
static int bad(struct abx_json_err *err, const char *fmt, ...)
{
    va_list ap;

    if (err) {
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return ABX_JSON_EBADTYPE;
}

const cJSON *abx_json_field(const cJSON *obj, const char *camel)
{
    char snake[128];
    size_t j = 0;
    const cJSON *v;

    if (!cJSON_IsObject(obj) || !camel)
        return NULL;
    v = cJSON_GetObjectItemCaseSensitive(obj, camel);
    if (v && !cJSON_IsNull(v))
        return v;
    for (const char *p = camel; *p && j + 2 < sizeof snake; p++) {
        if (*p >= 'A' && *p <= 'Z') {
            snake[j++] = '_';
            snake[j++] = (char)(*p - 'A' + 'a');
        } else {
            snake[j++] = *p;
        }
    }
    snake[j] = '\0';
    if (strcmp(snake, camel) == 0)
        return NULL;
    v = cJSON_GetObjectItemCaseSensitive(obj, snake);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

int abx_json_get_string(const cJSON *obj, const char *camel,
                        const char **out, const char *def,
                        struct abx_json_err *err)
{
    const cJSON *v = abx_json_field(obj, camel);

    *out = def;
    if (!v)
        return ABX_JSON_ABSENT;
    if (!cJSON_IsString(v))
        return bad(err, "field '%s': expected a string", camel);
    *out = v->valuestring;
    return ABX_JSON_OK;
}

int abx_json_get_bool(const cJSON *obj, const char *camel, int *out, int def,
                      struct abx_json_err *err)
{
    const cJSON *v = abx_json_field(obj, camel);

    *out = def;
    if (!v)
        return ABX_JSON_ABSENT;
    if (!cJSON_IsBool(v))
        return bad(err, "field '%s': expected a boolean", camel);
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return ABX_JSON_OK;
}

int abx_json_get_int(const cJSON *obj, const char *camel, int64_t *out,
                     int64_t def, int64_t min, int64_t max,
                     struct abx_json_err *err)
{
    const cJSON *v = abx_json_field(obj, camel);
    long long n;
    char *end;

    *out = def;
    if (!v)
        return ABX_JSON_ABSENT;
    if (cJSON_IsNumber(v) && abx_json_exact_int(v, &n) == 0) {
        ;   /* beyond 2^53, parsed by abx_json_parse: its literal */
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;

        /* 2^63 is exactly representable: reject at or beyond it. */
        if (!isfinite(d) || d != floor(d) || d < -9223372036854775808.0 ||
            d >= 9223372036854775808.0)
            return bad(err, "field '%s': not an integer", camel);
        n = (long long)d;
    } else if (cJSON_IsString(v)) {
        errno = 0;
        n = strtoll(v->valuestring, &end, 10);
        if (errno || end == v->valuestring || *end)
            return bad(err, "field '%s': invalid integer string", camel);
    } else {
        return bad(err, "field '%s': expected an integer", camel);
    }
    if (n < min || n > max)
        return bad(err, "field '%s': %lld out of range", camel, n);
    *out = (int64_t)n;
    return ABX_JSON_OK;
}

int abx_json_get_enum(const cJSON *obj, const char *camel,
                      const char *const *names, int n, int *out, int def,
                      struct abx_json_err *err)
{
    const cJSON *v = abx_json_field(obj, camel);
    int64_t k;
    int rc;

    *out = def;
    if (!v)
        return ABX_JSON_ABSENT;
    if (cJSON_IsString(v)) {
        for (int i = 0; i < n; i++)
            if (names[i] && strcmp(names[i], v->valuestring) == 0) {
                *out = i;
                return ABX_JSON_OK;
            }
        return bad(err, "field '%s': unknown enum value", camel);
    }
    if (!cJSON_IsNumber(v))
        return bad(err, "field '%s': expected an enum name or number", camel);
    rc = abx_json_get_int(obj, camel, &k, def, 0, n - 1, err);
    if (rc == ABX_JSON_OK)
        *out = (int)k;
    return rc;
}

int abx_json_get_object(const cJSON *obj, const char *camel,
                        const cJSON **out, struct abx_json_err *err)
{
    const cJSON *v = abx_json_field(obj, camel);

    *out = NULL;
    if (!v)
        return ABX_JSON_ABSENT;
    if (!cJSON_IsObject(v))
        return bad(err, "field '%s': expected an object", camel);
    *out = v;
    return ABX_JSON_OK;
}

int abx_json_get_array(const cJSON *obj, const char *camel,
                       const cJSON **out, struct abx_json_err *err)
{
    const cJSON *v = abx_json_field(obj, camel);

    *out = NULL;
    if (!v)
        return ABX_JSON_ABSENT;
    if (!cJSON_IsArray(v))
        return bad(err, "field '%s': expected an array", camel);
    *out = v;
    return ABX_JSON_OK;
}

int abx_json_get_bytes(const cJSON *obj, const char *camel,
                       struct abx_buf *out, struct abx_json_err *err)
{
    const cJSON *v = abx_json_field(obj, camel);

    if (!v)
        return ABX_JSON_ABSENT;
    if (!cJSON_IsString(v))
        return bad(err, "field '%s': expected a base64 string", camel);
    if (abx_b64_decode(v->valuestring, strlen(v->valuestring), out))
        return bad(err, "field '%s': invalid base64 or too large", camel);
    return ABX_JSON_OK;
}

int abx_json_add_bytes(cJSON *obj, const char *name, const void *p,
                       size_t len)
{
    struct abx_buf b;
    int rc = -1;

    abx_buf_init(&b, 0);
    if (abx_b64_encode(p, len, 0, &b) == 0 &&
        cJSON_AddStringToObject(obj, name, abx_buf_cstr(&b)))
        rc = 0;
    abx_buf_free(&b);
    return rc;
}

int abx_json_add_int64(cJSON *obj, const char *name, int64_t v)
{
    char s[32];

    snprintf(s, sizeof s, "%" PRId64, v);
    return cJSON_AddStringToObject(obj, name, s) ? 0 : -1;
}

int abx_json_append(struct abx_buf *out, const cJSON *v)
{
    char *s = cJSON_PrintUnformatted(v);
    int rc = s ? abx_buf_appends(out, s) : -1;

    cJSON_free(s);
    return rc;
}
