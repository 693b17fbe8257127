#include "connect.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static const char *const code_names[] = {
    [ABX_CONNECT_CANCELED] = "canceled",
    [ABX_CONNECT_UNKNOWN] = "unknown",
    [ABX_CONNECT_INVALID_ARGUMENT] = "invalid_argument",
    [ABX_CONNECT_DEADLINE_EXCEEDED] = "deadline_exceeded",
    [ABX_CONNECT_NOT_FOUND] = "not_found",
    [ABX_CONNECT_ALREADY_EXISTS] = "already_exists",
    [ABX_CONNECT_PERMISSION_DENIED] = "permission_denied",
    [ABX_CONNECT_RESOURCE_EXHAUSTED] = "resource_exhausted",
    [ABX_CONNECT_FAILED_PRECONDITION] = "failed_precondition",
    [ABX_CONNECT_ABORTED] = "aborted",
    [ABX_CONNECT_OUT_OF_RANGE] = "out_of_range",
    [ABX_CONNECT_UNIMPLEMENTED] = "unimplemented",
    [ABX_CONNECT_INTERNAL] = "internal",
    [ABX_CONNECT_UNAVAILABLE] = "unavailable",
    [ABX_CONNECT_DATA_LOSS] = "data_loss",
    [ABX_CONNECT_UNAUTHENTICATED] = "unauthenticated",
};

static const int code_status[] = {
    [ABX_CONNECT_OK] = 200,
    [ABX_CONNECT_CANCELED] = 499,
    [ABX_CONNECT_UNKNOWN] = 500,
    [ABX_CONNECT_INVALID_ARGUMENT] = 400,
    [ABX_CONNECT_DEADLINE_EXCEEDED] = 504,
    [ABX_CONNECT_NOT_FOUND] = 404,
    [ABX_CONNECT_ALREADY_EXISTS] = 409,
    [ABX_CONNECT_PERMISSION_DENIED] = 403,
    [ABX_CONNECT_RESOURCE_EXHAUSTED] = 429,
    [ABX_CONNECT_FAILED_PRECONDITION] = 400,
    [ABX_CONNECT_ABORTED] = 409,
    [ABX_CONNECT_OUT_OF_RANGE] = 400,
    [ABX_CONNECT_UNIMPLEMENTED] = 501,
    [ABX_CONNECT_INTERNAL] = 500,
    [ABX_CONNECT_UNAVAILABLE] = 503,
    [ABX_CONNECT_DATA_LOSS] = 500,
    [ABX_CONNECT_UNAUTHENTICATED] = 401,
};

#define NCODES ((int)(sizeof(code_names) / sizeof(code_names[0])))

const char *abx_connect_code_name(enum abx_connect_code code)
{
    if ((int)code <= 0 || (int)code >= NCODES)
        return NULL;
    return code_names[code];
}

int abx_connect_code_from_name(const char *name)
{
    if (!name)
        return -1;
    for (int i = 1; i < NCODES; i++)
        if (strcmp(code_names[i], name) == 0)
            return i;
    return -1;
}

int abx_connect_code_http_status(enum abx_connect_code code)
{
    if ((int)code < 0 || (int)code >= NCODES)
        return 500;
    return code_status[code];
}

enum abx_connect_code abx_connect_code_from_http_status(int status)
{
    switch (status) {
    case 400: return ABX_CONNECT_INVALID_ARGUMENT;
    case 401: return ABX_CONNECT_UNAUTHENTICATED;
    case 403: return ABX_CONNECT_PERMISSION_DENIED;
    case 404: return ABX_CONNECT_NOT_FOUND;
    case 409: return ABX_CONNECT_ALREADY_EXISTS;
    case 413:
    case 429: return ABX_CONNECT_RESOURCE_EXHAUSTED;
    case 499: return ABX_CONNECT_CANCELED;
    case 500: return ABX_CONNECT_INTERNAL;
    case 501:
    case 505: return ABX_CONNECT_UNIMPLEMENTED;
    case 502:
    case 503: return ABX_CONNECT_UNAVAILABLE;
    case 504: return ABX_CONNECT_DEADLINE_EXCEEDED;
    default: return ABX_CONNECT_UNKNOWN;
    }
}

int abx_connect_envelope_append(struct abx_buf *out, unsigned flags,
                                const void *payload, size_t len)
{
    unsigned char pre[ABX_CONNECT_PREFIX_LEN];
    size_t old = out->len;

    if (len > UINT32_MAX)
        return -1;
    pre[0] = (unsigned char)flags;
    pre[1] = (unsigned char)(len >> 24);
    pre[2] = (unsigned char)(len >> 16);
    pre[3] = (unsigned char)(len >> 8);
    pre[4] = (unsigned char)len;
    if (abx_buf_append(out, pre, sizeof pre))
        return -1;
    if (abx_buf_append(out, payload, len)) {
        out->len = old; /* all or nothing */
        if (out->data)
            out->data[old] = '\0';
        return -1;
    }
    return 0;
}

void abx_connect_decoder_init(struct abx_connect_decoder *d, size_t max_msg)
{
    /* Room for one maximal message plus its prefix and a partial next one. */
    size_t cap;

    if (max_msg > UINT32_MAX)
        max_msg = UINT32_MAX; /* the prefix cannot say more anyway */
    cap = max_msg * 2 + 2 * ABX_CONNECT_PREFIX_LEN + 65536;

    abx_buf_init(&d->in, cap);
    d->consumed = 0;
    d->max_msg = max_msg;
    d->failed = 0;
    d->err[0] = '\0';
}

void abx_connect_decoder_free(struct abx_connect_decoder *d)
{
    abx_buf_free(&d->in);
}

static void drop_consumed(struct abx_connect_decoder *d)
{
    if (d->consumed) {
        abx_buf_consume(&d->in, d->consumed);
        d->consumed = 0;
    }
}

int abx_connect_decoder_feed(struct abx_connect_decoder *d, const void *p,
                             size_t n)
{
    if (d->failed)
        return -1;
    drop_consumed(d);
    if (abx_buf_append(&d->in, p, n)) {
        d->failed = 1;
        snprintf(d->err, sizeof d->err, "envelope buffer over its cap");
        return -1;
    }
    return 0;
}

int abx_connect_decoder_next(struct abx_connect_decoder *d, unsigned *flags,
                             const char **payload, size_t *len)
{
    const unsigned char *p;
    size_t avail, mlen;

    if (d->failed)
        return -1;
    drop_consumed(d);
    avail = d->in.len;
    if (avail < ABX_CONNECT_PREFIX_LEN)
        return 0;
    p = (const unsigned char *)d->in.data;
    mlen = ((size_t)p[1] << 24) | ((size_t)p[2] << 16) | ((size_t)p[3] << 8) |
           (size_t)p[4];
    if (mlen > d->max_msg) {
        d->failed = 1;
        snprintf(d->err, sizeof d->err,
                 "envelope length %zu exceeds the limit of %zu bytes", mlen,
                 d->max_msg);
        return -1;
    }
    if (avail - ABX_CONNECT_PREFIX_LEN < mlen)
        return 0;
    *flags = p[0];
    *payload = d->in.data + ABX_CONNECT_PREFIX_LEN;
    *len = mlen;
    d->consumed = ABX_CONNECT_PREFIX_LEN + mlen;
    return 1;
}

int abx_connect_decoder_finish(struct abx_connect_decoder *d)
{
    drop_consumed(d);
    if (d->failed)
        return -1;
    if (d->in.len) {
        snprintf(d->err, sizeof d->err,
                 "stream truncated: %zu byte(s) of an incomplete envelope",
                 d->in.len);
        return -1;
    }
    return 0;
}

static cJSON *error_object(enum abx_connect_code code, const char *message)
{
    cJSON *o = cJSON_CreateObject();
    const char *name = abx_connect_code_name(code);

    if (!o)
        return NULL;
    if (!cJSON_AddStringToObject(o, "code", name ? name : "unknown") ||
        (message && *message &&
         !cJSON_AddStringToObject(o, "message", message))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int append_json(struct abx_buf *out, cJSON *o)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    int rc = s ? abx_buf_appends(out, s) : -1;

    cJSON_free(s);
    cJSON_Delete(o);
    return rc;
}

int abx_connect_error_json(struct abx_buf *out, enum abx_connect_code code,
                           const char *message)
{
    return append_json(out, error_object(code, message));
}

int abx_connect_end_stream_json(struct abx_buf *out,
                                enum abx_connect_code code,
                                const char *message)
{
    cJSON *o, *e;

    if (code == ABX_CONNECT_OK)
        return abx_buf_appends(out, "{}");
    o = cJSON_CreateObject();
    e = error_object(code, message);
    if (!o || !e) {
        cJSON_Delete(o);
        cJSON_Delete(e);
        return -1;
    }
    cJSON_AddItemToObject(o, "error", e);
    return append_json(out, o);
}

static void copy_msg(char *msg, size_t msglen, const char *s, size_t n)
{
    if (!msglen)
        return;
    if (n >= msglen)
        n = msglen - 1;
    memcpy(msg, s, n);
    msg[n] = '\0';
}

/* Fills code/message from a {"code":"..","message":".."} object; 0 if it is
 * one, -1 otherwise. */
static int from_error_object(const cJSON *e, enum abx_connect_code *code,
                             char *msg, size_t msglen)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
    int k;

    if (!cJSON_IsString(c))
        return -1;
    k = abx_connect_code_from_name(c->valuestring);
    *code = k < 0 ? ABX_CONNECT_UNKNOWN : (enum abx_connect_code)k;
    if (cJSON_IsString(m))
        copy_msg(msg, msglen, m->valuestring, strlen(m->valuestring));
    else
        copy_msg(msg, msglen, c->valuestring, strlen(c->valuestring));
    return 0;
}

void abx_connect_parse_error(const char *body, size_t len, int http_status,
                             enum abx_connect_code *code, char *msg,
                             size_t msglen)
{
    cJSON *o = body ? cJSON_ParseWithLength(body, len) : NULL;
    const cJSON *c, *m;

    copy_msg(msg, msglen, "", 0);
    if (cJSON_IsObject(o) && from_error_object(o, code, msg, msglen) == 0)
        goto out;
    *code = abx_connect_code_from_http_status(http_status);
    c = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "code") : NULL;
    m = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "message")
                          : NULL;
    /* Range-check before the cast: (int)1e300 is undefined behaviour. No
     * status outside [0, 1000) maps to a code anyway. */
    if (cJSON_IsNumber(c))
        *code = c->valuedouble >= 0 && c->valuedouble < 1000
                    ? abx_connect_code_from_http_status((int)c->valuedouble)
                    : ABX_CONNECT_UNKNOWN;
    if (cJSON_IsString(m))
        copy_msg(msg, msglen, m->valuestring, strlen(m->valuestring));
    else if (body && len)
        copy_msg(msg, msglen, body, len);
    else
        snprintf(msg, msglen, "HTTP status %d", http_status);
out:
    cJSON_Delete(o);
}

int abx_connect_parse_end_stream(const char *json, size_t len,
                                 enum abx_connect_code *code, char *msg,
                                 size_t msglen)
{
    cJSON *o = json ? cJSON_ParseWithLength(json, len) : NULL;
    const cJSON *e;
    int rc = -1;

    *code = ABX_CONNECT_UNKNOWN;
    copy_msg(msg, msglen, "", 0);
    if (!cJSON_IsObject(o)) {
        snprintf(msg, msglen, "end-of-stream payload is not a JSON object");
        goto out;
    }
    e = cJSON_GetObjectItemCaseSensitive(o, "error");
    if (!e || cJSON_IsNull(e)) {
        *code = ABX_CONNECT_OK;
        rc = 0;
        goto out;
    }
    if (!cJSON_IsObject(e) || from_error_object(e, code, msg, msglen)) {
        *code = ABX_CONNECT_UNKNOWN;
        snprintf(msg, msglen, "end-of-stream error has no string code");
        goto out;
    }
    rc = 0;
out:
    cJSON_Delete(o);
    return rc;
}
