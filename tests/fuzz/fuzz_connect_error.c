/* Connect error bodies: abx_connect_parse_error and
 * abx_connect_parse_end_stream on arbitrary bytes, against a reference
 * written from the protocol (docs/protocol.md "Unary calls", "Stream
 * errors"), not from connect.c: the code names, their HTTP statuses and
 * the plain-HTTP mapping are this file's own tables. Input: byte 0 picks the HTTP
 * status, byte 1 the message buffer size (exact-size heap buffers, so
 * ASan sees any overrun), the rest is the body. */
#include <string.h>

#include <cjson/cJSON.h>

#include "connect.h"
#include "fuzz.h"

static const int statuses[] = {
    0, 200, 400, 401, 403, 404, 409, 413, 429, 499, 500, 501, 502, 503,
    504, 505, 418, -1, 999, 2147483647,
};

/* Connect codes by number (gRPC's, 1..16) with the HTTP status a unary
 * error of that code is sent with; 0 is OK, never an error. */
static const struct {
    const char *name;
    int http;
} spec[] = {
    {NULL, 200},
    {"canceled", 499},           {"unknown", 500},
    {"invalid_argument", 400},   {"deadline_exceeded", 504},
    {"not_found", 404},          {"already_exists", 409},
    {"permission_denied", 403},  {"resource_exhausted", 429},
    {"failed_precondition", 400}, {"aborted", 409},
    {"out_of_range", 400},       {"unimplemented", 501},
    {"internal", 500},           {"unavailable", 503},
    {"data_loss", 500},          {"unauthenticated", 401},
};
#define NSPEC ((int)(sizeof spec / sizeof spec[0]))
#define SPEC_UNKNOWN 2
#define NO_ORACLE (-1)

/* The code of a Connect code name; unknown for any other string. */
static int spec_code(const char *name)
{
    int i;

    for (i = 1; i < NSPEC; i++)
        if (!strcmp(name, spec[i].name))
            return i;
    return SPEC_UNKNOWN;
}

/* A response that is no Connect error: its HTTP status (or an integer
 * "code" in a JSON body) mapped as the SDKs do. */
static int plain_code(long long status)
{
    switch (status) {
    case 400: return 3;
    case 401: return 16;
    case 403: return 7;
    case 404: return 5;
    case 409: return 6;
    case 413:
    case 429: return 8;
    case 499: return 1;
    case 500: return 13;
    case 501:
    case 505: return 12;
    case 502:
    case 503: return 14;
    case 504: return 4;
    default: return SPEC_UNKNOWN;
    }
}

/* The code a unary error body must decode to (NO_ORACLE for a numeric
 * "code" that is no whole number: the protocol does not say). */
static int ref_unary(const char *body, size_t len, int status)
{
    cJSON *o = cJSON_ParseWithLength(body, len);
    const cJSON *c = cJSON_IsObject(o)
                         ? cJSON_GetObjectItemCaseSensitive(o, "code")
                         : NULL;
    double v;
    int code = plain_code(status);

    if (cJSON_IsString(c)) {
        code = spec_code(c->valuestring);
    } else if (cJSON_IsNumber(c)) {
        v = c->valuedouble;
        if (v > -1e15 && v < 1e15 && (double)(long long)v == v)
            code = plain_code((long long)v);
        else if (v > -1e15 && v < 1e15)
            code = NO_ORACLE;
        else
            code = SPEC_UNKNOWN;
    }
    cJSON_Delete(o);
    return code;
}

/* An end-of-stream payload: 0 and OK for {} (or "error": null), 0 and the
 * error's code for {"error":{"code":"..."}}, else -1 and unknown. */
static int ref_end(const char *body, size_t len, int *code)
{
    cJSON *o = cJSON_ParseWithLength(body, len);
    const cJSON *e, *c;
    int rc = -1;

    *code = SPEC_UNKNOWN;
    if (cJSON_IsObject(o)) {
        e = cJSON_GetObjectItemCaseSensitive(o, "error");
        c = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "code")
                              : NULL;
        if (!e || cJSON_IsNull(e)) {
            *code = 0;
            rc = 0;
        } else if (cJSON_IsString(c)) {
            *code = spec_code(c->valuestring);
            rc = 0;
        }
    }
    cJSON_Delete(o);
    return rc;
}

/* msg must be a C string inside its buffer. */
static void check_msg(const char *msg, size_t msglen)
{
    if (msglen)
        FUZZ_CHECK(memchr(msg, '\0', msglen) != NULL);
}

/* A code of the protocol whose name and status are the protocol's. */
static void check_code(enum abx_connect_code code)
{
    FUZZ_CHECK((int)code >= 0 && (int)code < NSPEC);
    if (code == 0) {
        FUZZ_CHECK(abx_connect_code_name(code) == NULL);
        return;
    }
    FUZZ_CHECK(abx_connect_code_name(code) != NULL &&
               !strcmp(abx_connect_code_name(code), spec[code].name));
    FUZZ_CHECK(abx_connect_code_from_name(spec[code].name) == (int)code);
    FUZZ_CHECK(abx_connect_code_http_status(code) == spec[code].http);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum abx_connect_code code;
    const char *body;
    size_t len, msglen;
    char *msg;
    int status, rc, want, want_rc;

    if (size < 2)
        return 0;
    status = statuses[data[0] % (sizeof statuses / sizeof statuses[0])];
    msglen = data[1];
    body = (const char *)data + 2;
    len = size - 2;
    msg = malloc(msglen ? msglen : 1);
    if (!msg)
        return 0;

    code = (enum abx_connect_code)-7;
    abx_connect_parse_error(body, len, status, &code, msg, msglen);
    check_code(code);
    /* Unary errors never decode to OK: the response was an error. */
    FUZZ_CHECK(code != ABX_CONNECT_OK);
    want = ref_unary(body, len, status);
    FUZZ_CHECK(want == NO_ORACLE || (int)code == want);
    check_msg(msg, msglen);

    code = (enum abx_connect_code)-7;
    rc = abx_connect_parse_end_stream(body, len, &code, msg, msglen);
    check_code(code);
    check_msg(msg, msglen);
    want_rc = ref_end(body, len, &want);
    FUZZ_CHECK(rc == want_rc);
    FUZZ_CHECK((int)code == want);
    if (rc < 0 && msglen > 1)
        FUZZ_CHECK(msg[0] != '\0');
    free(msg);
    return 0;
}
