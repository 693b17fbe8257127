/* proto3 JSON getters on arbitrary JSON: every getter, asked for fixed
 * field names and for every key the document itself uses (so the
 * camel -> snake fallback sees hostile names), on the root and on nested
 * objects. Results must follow the header's contract; bytes and int64
 * values must survive the add_* writers, which write what proto3 JSON
 * says (docs/protocol.md "JSON rules"): bytes as padded standard base64
 * (OpenSSL's EVP encoder is the reference), int64 as a decimal string. */
#include <inttypes.h>
#include <string.h>

#include <openssl/evp.h>

#include "fuzz.h"
#include "jsonutil.h"

static const char *const fixed[] = {
    "pid", "processId", "name", "tag", "cwd", "envs", "timeoutMs",
    "stdin", "data", "path", "entryInfo", "aB", "A", "", "_", "x_y",
    "aVeryLongCamelCaseFieldNameThatIsLongerThanTheSnakeBufferOfTheHelper"
    "WhichIsOneHundredAndTwentyEightBytesLongSoItGetsCutShort",
};

static const char *const enum_names[] = {"ZERO", "one", NULL, "three"};

static void check_err(int rc, const struct abx_json_err *e)
{
    FUZZ_CHECK(rc == ABX_JSON_OK || rc == ABX_JSON_ABSENT ||
               rc == ABX_JSON_EBADTYPE);
    if (rc == ABX_JSON_EBADTYPE) {
        FUZZ_CHECK(memchr(e->msg, '\0', sizeof e->msg) != NULL);
        FUZZ_CHECK(!strncmp(e->msg, "field '", 7));
    }
}

static void bytes_roundtrip(const struct abx_buf *b)
{
    cJSON *o = cJSON_CreateObject();
    struct abx_buf again;
    struct abx_json_err e;
    unsigned char *ref_b64;
    int n;

    if (!o)
        return;
    abx_buf_init(&again, 0);
    FUZZ_CHECK(abx_json_add_bytes(o, "v", b->data ? b->data : "", b->len) ==
               0);
    ref_b64 = malloc(b->len / 3 * 4 + 5);
    FUZZ_CHECK(ref_b64 != NULL);
    n = EVP_EncodeBlock(ref_b64, (const unsigned char *)(b->data ? b->data
                                                                 : ""),
                        (int)b->len);
    FUZZ_CHECK(n >= 0 && (size_t)n == (b->len + 2) / 3 * 4);
    FUZZ_CHECK(cJSON_GetStringValue(cJSON_GetObjectItem(o, "v")) &&
               !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "v")),
                       (const char *)ref_b64));
    free(ref_b64);
    FUZZ_CHECK(abx_json_get_bytes(o, "v", &again, &e) == ABX_JSON_OK);
    FUZZ_CHECK(again.len == b->len);
    FUZZ_CHECK(!b->len || !memcmp(again.data, b->data, b->len));
    abx_buf_free(&again);
    cJSON_Delete(o);
}

static void int_roundtrip(int64_t v)
{
    cJSON *o = cJSON_CreateObject();
    struct abx_json_err e;
    int64_t back = 0;
    char dec[32];

    if (!o)
        return;
    FUZZ_CHECK(abx_json_add_int64(o, "v", v) == 0);
    snprintf(dec, sizeof dec, "%" PRId64, v);
    FUZZ_CHECK(cJSON_GetStringValue(cJSON_GetObjectItem(o, "v")) &&
               !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "v")),
                       dec));
    FUZZ_CHECK(abx_json_get_int(o, "v", &back, 0, INT64_MIN, INT64_MAX,
                                &e) == ABX_JSON_OK);
    FUZZ_CHECK(back == v);
    cJSON_Delete(o);
}

static void probe(const cJSON *obj, const char *name)
{
    struct abx_json_err e;
    const cJSON *sub;
    const char *s;
    struct abx_buf b;
    int64_t i;
    int rc, k;

    memset(&e, 0, sizeof e);
    rc = abx_json_get_string(obj, name, &s, "dflt", &e);
    check_err(rc, &e);
    if (rc == ABX_JSON_OK)
        FUZZ_CHECK(s != NULL);
    else
        FUZZ_CHECK(s && !strcmp(s, "dflt"));

    rc = abx_json_get_bool(obj, name, &k, 7, &e);
    check_err(rc, &e);
    FUZZ_CHECK(rc == ABX_JSON_OK ? (k == 0 || k == 1) : k == 7);

    rc = abx_json_get_int(obj, name, &i, 42, INT64_MIN, INT64_MAX, &e);
    check_err(rc, &e);
    if (rc == ABX_JSON_OK)
        int_roundtrip(i);
    else
        FUZZ_CHECK(i == 42);
    rc = abx_json_get_int(obj, name, &i, 5, -3, 1000, &e);
    check_err(rc, &e);
    FUZZ_CHECK(rc == ABX_JSON_OK ? (i >= -3 && i <= 1000) : i == 5);

    rc = abx_json_get_enum(obj, name, enum_names, 4, &k, -1, &e);
    check_err(rc, &e);
    FUZZ_CHECK(rc == ABX_JSON_OK ? (k >= 0 && k < 4) : k == -1);

    rc = abx_json_get_object(obj, name, &sub, &e);
    check_err(rc, &e);
    FUZZ_CHECK(rc == ABX_JSON_OK ? cJSON_IsObject(sub) : sub == NULL);
    rc = abx_json_get_array(obj, name, &sub, &e);
    check_err(rc, &e);
    FUZZ_CHECK(rc == ABX_JSON_OK ? cJSON_IsArray(sub) : sub == NULL);

    abx_buf_init(&b, 4096);
    rc = abx_json_get_bytes(obj, name, &b, &e);
    check_err(rc, &e);
    if (rc == ABX_JSON_OK)
        bytes_roundtrip(&b);
    else
        FUZZ_CHECK(b.len == 0);
    abx_buf_free(&b);
}

static void walk(const cJSON *obj, int depth)
{
    const cJSON *c;
    size_t i;

    for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        probe(obj, fixed[i]);
    cJSON_ArrayForEach(c, obj) {
        if (c->string)
            probe(obj, c->string);
        /* A few levels are enough: the getters are not recursive. */
        if (depth < 4 && (cJSON_IsObject(c) || cJSON_IsArray(c)))
            walk(c, depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    struct abx_buf out;

    if (!root)
        return 0;
    walk(root, 0);
    probe(NULL, "pid");  /* not an object: everything absent */
    abx_buf_init(&out, 0);
    FUZZ_CHECK(abx_json_append(&out, root) == 0);
    abx_buf_free(&out);
    cJSON_Delete(root);
    return 0;
}
