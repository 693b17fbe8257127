/* proto3 JSON helpers: both spellings, defaults, type errors, int64 as
 * string or number, enums by name or number, bytes. */
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "check.h"
#include "jsonutil.h"

static const char *const sigs[] = {"SIGNAL_UNSPECIFIED", NULL, NULL, NULL,
                                   NULL, NULL, NULL, NULL, NULL,
                                   "SIGNAL_SIGKILL"};

int main(void)
{
    const char *doc =
        "{\"watcherId\":\"w1\",\"symlink_target\":\"/t\",\"n\":null,"
        "\"size\":\"4096\",\"mode\":493,\"neg\":-3,\"frac\":1.5,"
        "\"big\":\"99999999999999999999\",\"flag\":true,\"s\":5,"
        "\"sig\":\"SIGNAL_SIGKILL\",\"sigi\":9,\"sigbad\":\"SIGFOO\","
        "\"data\":\"AAEC/w==\",\"url\":\"AAEC_w\",\"b64bad\":\"@@@\","
        "\"obj\":{},\"arr\":[1]}";
    cJSON *o = cJSON_Parse(doc);
    struct abx_json_err err;
    const char *s;
    const cJSON *c;
    int64_t i;
    int b, e;
    struct abx_buf buf;

    CHECK(o != NULL);
    CHECK_INT(abx_json_get_string(o, "watcherId", &s, NULL, &err), ABX_JSON_OK);
    CHECK_STR(s, "w1");
    CHECK_INT(abx_json_get_string(o, "symlinkTarget", &s, NULL, &err), ABX_JSON_OK);
    CHECK_STR(s, "/t");
    CHECK_INT(abx_json_get_string(o, "n", &s, "d", &err), ABX_JSON_ABSENT);
    CHECK_STR(s, "d");
    CHECK_INT(abx_json_get_string(o, "missing", &s, "d", &err), ABX_JSON_ABSENT);
    CHECK_INT(abx_json_get_string(o, "s", &s, "d", &err), ABX_JSON_EBADTYPE);
    CHECK(strstr(err.msg, "'s'") != NULL);

    CHECK_INT(abx_json_get_int(o, "size", &i, 0, INT64_MIN, INT64_MAX, &err), ABX_JSON_OK);
    CHECK_INT(i, 4096);
    CHECK_INT(abx_json_get_int(o, "mode", &i, 0, 0, UINT32_MAX, &err), ABX_JSON_OK);
    CHECK_INT(i, 493);
    CHECK_INT(abx_json_get_int(o, "neg", &i, 0, 0, UINT32_MAX, &err), ABX_JSON_EBADTYPE);
    CHECK(strstr(err.msg, "out of range") != NULL);
    CHECK_INT(abx_json_get_int(o, "frac", &i, 0, INT64_MIN, INT64_MAX, &err), ABX_JSON_EBADTYPE);
    CHECK_INT(abx_json_get_int(o, "big", &i, 0, INT64_MIN, INT64_MAX, &err), ABX_JSON_EBADTYPE);
    CHECK_INT(abx_json_get_int(o, "flag", &i, 0, INT64_MIN, INT64_MAX, &err), ABX_JSON_EBADTYPE);
    CHECK_INT(abx_json_get_int(o, "none", &i, 7, 0, 10, &err), ABX_JSON_ABSENT);
    CHECK_INT(i, 7);

    CHECK_INT(abx_json_get_bool(o, "flag", &b, 0, &err), ABX_JSON_OK);
    CHECK_INT(b, 1);
    CHECK_INT(abx_json_get_bool(o, "s", &b, 0, &err), ABX_JSON_EBADTYPE);
    CHECK_INT(abx_json_get_bool(o, "nope", &b, 1, &err), ABX_JSON_ABSENT);
    CHECK_INT(b, 1);

    CHECK_INT(abx_json_get_enum(o, "sig", sigs, 10, &e, 0, &err), ABX_JSON_OK);
    CHECK_INT(e, 9);
    CHECK_INT(abx_json_get_enum(o, "sigi", sigs, 10, &e, 0, &err), ABX_JSON_OK);
    CHECK_INT(e, 9);
    CHECK_INT(abx_json_get_enum(o, "sigbad", sigs, 10, &e, 0, &err), ABX_JSON_EBADTYPE);
    CHECK_INT(abx_json_get_enum(o, "mode", sigs, 10, &e, 0, &err), ABX_JSON_EBADTYPE);

    CHECK_INT(abx_json_get_object(o, "obj", &c, &err), ABX_JSON_OK);
    CHECK_INT(abx_json_get_object(o, "arr", &c, &err), ABX_JSON_EBADTYPE);
    CHECK_INT(abx_json_get_array(o, "arr", &c, &err), ABX_JSON_OK);
    CHECK_INT(abx_json_get_array(o, "obj", &c, &err), ABX_JSON_EBADTYPE);

    abx_buf_init(&buf, 0);
    CHECK_INT(abx_json_get_bytes(o, "data", &buf, &err), ABX_JSON_OK);
    CHECK_INT(buf.len, 4);
    CHECK(buf.len == 4 && memcmp(buf.data, "\x00\x01\x02\xff", 4) == 0);
    abx_buf_reset(&buf);
    CHECK_INT(abx_json_get_bytes(o, "url", &buf, &err), ABX_JSON_OK);
    CHECK(buf.len == 4 && memcmp(buf.data, "\x00\x01\x02\xff", 4) == 0);
    CHECK_INT(abx_json_get_bytes(o, "b64bad", &buf, &err), ABX_JSON_EBADTYPE);
    CHECK_INT(abx_json_get_bytes(o, "mode", &buf, &err), ABX_JSON_EBADTYPE);
    abx_buf_free(&buf);
    cJSON_Delete(o);

    o = cJSON_CreateObject();
    CHECK_INT(abx_json_add_bytes(o, "stdout", "\x00\x01\x02\xff", 4), 0);
    CHECK_INT(abx_json_add_int64(o, "size", -9223372036854775807LL - 1), 0);
    abx_buf_init(&buf, 0);
    CHECK_INT(abx_json_append(&buf, o), 0);
    CHECK_STR(abx_buf_cstr(&buf),
              "{\"stdout\":\"AAEC/w==\",\"size\":\"-9223372036854775808\"}");
    abx_buf_free(&buf);
    cJSON_Delete(o);

    /* abx_json_parse: integers beyond 2^53 keep every digit; strings,
     * keys, floats and small integers are left as cJSON reads them. */
    {
        static const char text[] =
            "{\"s\": \"1152921504606846977 \\\" 9\", \"a\": 1152921504606846977, "
            "\"1234567890123456789\": [1, -9007199254740993, 1.5e300, 3, {\"x\": "
            "9223372036854775807}], \"c\": 9007199254740991, \"d\": 1e20}";
        const cJSON *arr;
        cJSON *d = abx_json_parse(text, sizeof text - 1), *dup;
        long long v;

        CHECK(d != NULL);
        CHECK_INT(abx_json_exact_int(cJSON_GetObjectItem(d, "a"), &v), 0);
        CHECK(v == 1152921504606846977LL);
        CHECK_INT(abx_json_get_int(d, "a", &i, 0, INT64_MIN, INT64_MAX, &err), ABX_JSON_OK);
        CHECK(i == 1152921504606846977LL);
        CHECK_STR(cJSON_GetObjectItem(d, "s")->valuestring, "1152921504606846977 \" 9");
        arr = cJSON_GetObjectItem(d, "1234567890123456789");
        CHECK_INT(abx_json_exact_int(cJSON_GetArrayItem(arr, 0), &v), -1);
        CHECK_INT(abx_json_exact_int(cJSON_GetArrayItem(arr, 1), &v), 0);
        CHECK(v == -9007199254740993LL);
        CHECK_INT(abx_json_exact_int(cJSON_GetArrayItem(arr, 2), &v), -1);
        CHECK_INT(abx_json_exact_int(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 4), "x"), &v), 0);
        CHECK(v == 9223372036854775807LL);
        CHECK_INT(abx_json_exact_int(cJSON_GetObjectItem(d, "c"), &v), -1);
        CHECK_INT(abx_json_exact_int(cJSON_GetObjectItem(d, "d"), &v), -1);
        dup = cJSON_Duplicate(d, 1);   /* the literal goes with a copy */
        CHECK_INT(abx_json_exact_int(cJSON_GetObjectItem(dup, "a"), &v), 0);
        CHECK(v == 1152921504606846977LL);
        cJSON_Delete(dup);
        cJSON_Delete(d);
    }
    return CHECK_DONE();
}
