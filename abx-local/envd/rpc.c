/* Connect JSON protocol on the server side: method and content-type
 * negotiation, unary request/response and server streams (one request
 * envelope in, envelopes out) for the procedure the router looked up. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "b64.h"
#include "daemon.h"
#include "jsonstrict.h"
#include "jsonutil.h"

#define STREAM_REQ_MAX ((size_t)4 * 1024 * 1024)

int abxl_envd_rpc_fail(struct abxl_envd_rpc *rpc, enum abx_connect_code code,
                  const char *fmt, ...)
{
    va_list ap;

    rpc->code = code;
    va_start(ap, fmt);
    vsnprintf(rpc->msg, sizeof rpc->msg, fmt, ap);
    va_end(ap);
    return (int)code;
}

/* Media type without parameters, compared case-insensitively. */
static int media_is(const char *ct, const char *want)
{
    size_t n = strlen(want);

    if (!ct)
        return 0;
    while (*ct == ' ')
        ct++;
    if (strncasecmp(ct, want, n) != 0)
        return 0;
    ct += n;
    while (*ct == ' ')
        ct++;
    return *ct == '\0' || *ct == ';';
}

static enum MHD_Result reply_connect_error(struct MHD_Connection *c,
                                           enum abx_connect_code code,
                                           const char *msg)
{
    struct abx_buf b;
    enum MHD_Result rc;

    abx_buf_init(&b, 0);
    abx_connect_error_json(&b, code, msg);
    rc = abxl_envd_reply_json(c, (unsigned)abx_connect_code_http_status(code),
                         "application/json", b.data ? b.data : "{}",
                         b.data ? b.len : 2);
    abx_buf_free(&b);
    return rc;
}

/* Connect-Timeout-Ms: up to 10 digits. -1 if malformed. */
static int64_t parse_timeout(const char *h)
{
    int64_t v = 0;
    size_t n = 0;

    if (!h)
        return 0;
    for (; h[n]; n++) {
        if (!isdigit((unsigned char)h[n]) || n >= 10)
            return -1;
        v = v * 10 + (h[n] - '0');
    }
    return n ? v : -1;
}

/* Keepalive-Ping-Interval in seconds; absent/invalid: the compat default.
 * A platform may cap it (compat keepaliveMaxS) below what clients ask. */
static int64_t parse_keepalive_ms(const char *h)
{
    int64_t s = abxl_envd_compat.keepalive_default_s;
    char *end;
    long v;

    if (h) {
        v = strtol(h, &end, 10);
        if (end != h && !*end && v > 0 && v <= 86400)
            s = v;
    }
    if (abxl_envd_compat.keepalive_max_s > 0 && s > abxl_envd_compat.keepalive_max_s)
        s = abxl_envd_compat.keepalive_max_s;
    return s * 1000;
}

/* Authorization: Basic base64("user:"), absent => default user. */
static int select_user(struct MHD_Connection *c, struct abxl_envd_user *u,
                       char *msg, size_t msglen)
{
    const char *h = abxl_envd_header(c, MHD_HTTP_HEADER_AUTHORIZATION);
    struct abx_buf dec;
    char tmp[512], name[128];
    const char *colon;
    size_t n;
    int rc = -1;

    if (!h || !*h)
        return abxl_envd_user_lookup(abxl_envd_cfg.default_user, u, msg, msglen) ? -1 : 0;
    abx_buf_init(&dec, 1024);
    if (strncasecmp(h, "Basic ", 6) != 0 ||
        abx_b64_decode(h + 6, strlen(h + 6), &dec)) {
        snprintf(msg, msglen, "invalid authorization header");
        goto out;
    }
    colon = memchr(dec.data ? dec.data : "", ':', dec.len);
    n = colon ? (size_t)(colon - dec.data) : dec.len;
    if (n >= sizeof name) {
        snprintf(msg, msglen, "invalid username");
        goto out;
    }
    memcpy(name, dec.data ? dec.data : "", n);
    name[n] = '\0';
    if (abxl_envd_user_lookup(name, u, tmp, sizeof tmp)) {
        snprintf(msg, msglen, "invalid username: '%s'", name);
        goto out;
    }
    rc = 0;
out:
    abx_buf_free(&dec);
    return rc;
}

static const char *keepalive_for(const char *url)
{
    return strncmp(url, "/process.", 9) == 0 ? "{\"event\":{\"keepalive\":{}}}"
                                            : "{\"keepalive\":{}}";
}

/* Streams: every failure after negotiation is an end-of-stream error. */
/* The request message: one JSON object, strictly (jsonstrict.h: no NUL
 * to cut a path short, valid UTF-8, nothing after it). */
static cJSON *strict_object(const char *p, size_t n, char *msg, size_t msglen)
{
    char why[128];
    cJSON *o = abx_json_parse_strict(p, n, why, sizeof why);
    if (o && cJSON_IsObject(o))
        return o;
    cJSON_Delete(o);
    snprintf(msg, msglen, "unmarshal request: %s", o ? "invalid JSON object" : why);
    return NULL;
}

static enum MHD_Result run_stream(struct MHD_Connection *c, const char *url,
                                  abxl_envd_handler h, struct abxl_envd_rpc *rpc,
                                  struct abx_buf *body, int overflow)
{
    struct abx_connect_decoder d;
    struct abxl_envd_user user;
    struct MHD_Response *r;
    cJSON *req = NULL;
    unsigned flags = 0;
    const char *p = NULL;
    size_t len = 0;
    int got;
    enum MHD_Result rc;

    rpc->stream = abxl_envd_stream_new(rpc->keepalive_ms, rpc->deadline_ms,
                                  keepalive_for(url));
    if (!rpc->stream)
        return MHD_NO;
    abx_connect_decoder_init(&d, STREAM_REQ_MAX);
    if (overflow) {
        abxl_envd_stream_end(rpc->stream, ABX_CONNECT_RESOURCE_EXHAUSTED,
                        "request body too large");
        goto respond;
    }
    abx_connect_decoder_feed(&d, body->data ? body->data : "", body->len);
    got = abx_connect_decoder_next(&d, &flags, &p, &len);
    if (got != 1) {
        abxl_envd_stream_end(rpc->stream, ABX_CONNECT_INVALID_ARGUMENT,
                        got < 0 ? d.err : "request body is not a complete "
                                          "Connect envelope");
        goto respond;
    }
    if (flags & (ABX_CONNECT_FLAG_COMPRESSED | ABX_CONNECT_FLAG_END_STREAM)) {
        abxl_envd_stream_end(rpc->stream, ABX_CONNECT_INVALID_ARGUMENT,
                        flags & ABX_CONNECT_FLAG_COMPRESSED
                            ? "compressed request envelope, but no "
                              "compression was negotiated"
                            : "unexpected end-of-stream envelope in request");
        goto respond;
    }
    req = strict_object(len ? p : "", len, rpc->msg, sizeof rpc->msg);
    if (!req) {
        abxl_envd_stream_end(rpc->stream, ABX_CONNECT_INVALID_ARGUMENT, rpc->msg);
        goto respond;
    }
    if (abx_connect_decoder_next(&d, &flags, &p, &len) != 0 ||
        abx_connect_decoder_finish(&d)) {
        abxl_envd_stream_end(rpc->stream, ABX_CONNECT_INVALID_ARGUMENT,
                        "server streams take exactly one request message");
        goto respond;
    }
    if (select_user(c, &user, rpc->msg, sizeof rpc->msg)) {
        abxl_envd_stream_end(rpc->stream, ABX_CONNECT_UNAUTHENTICATED, rpc->msg);
        goto respond;
    }
    rpc->req = req;
    rpc->user = &user;
    h(rpc); /* feeds and eventually ends rpc->stream */
respond:
    r = abxl_envd_stream_response(rpc->stream, c);
    abxl_envd_stream_unref(rpc->stream);
    rpc->stream = NULL;
    cJSON_Delete(req);
    abx_connect_decoder_free(&d);
    if (!r)
        return MHD_NO;
    rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result run_unary(struct MHD_Connection *c, abxl_envd_handler h,
                                 struct abxl_envd_rpc *rpc, struct abx_buf *body,
                                 int overflow)
{
    struct abxl_envd_user user;
    struct abx_buf out;
    cJSON *req = NULL;
    enum MHD_Result rc;

    if (overflow)
        return reply_connect_error(c, ABX_CONNECT_RESOURCE_EXHAUSTED,
                                   "request body too large");
    req = strict_object(body->data ? body->data : "", body->len, rpc->msg,
                        sizeof rpc->msg);
    if (!req)
        return reply_connect_error(c, ABX_CONNECT_INVALID_ARGUMENT, rpc->msg);
    if (select_user(c, &user, rpc->msg, sizeof rpc->msg)) {
        cJSON_Delete(req);
        return reply_connect_error(c, ABX_CONNECT_UNAUTHENTICATED, rpc->msg);
    }
    rpc->req = req;
    rpc->user = &user;
    h(rpc);
    cJSON_Delete(req);
    if (rpc->code != ABX_CONNECT_OK) {
        cJSON_Delete(rpc->resp);
        return reply_connect_error(c, rpc->code, rpc->msg);
    }
    abx_buf_init(&out, 0);
    if (rpc->resp ? abx_json_append(&out, rpc->resp) : abx_buf_appends(&out, "{}"))
        rc = reply_connect_error(c, ABX_CONNECT_INTERNAL, "response too large");
    else
        rc = abxl_envd_reply_json(c, 200, "application/json", out.data, out.len);
    abx_buf_free(&out);
    cJSON_Delete(rpc->resp);
    return rc;
}

/* An empty answer with one header (Allow, Accept-Post). */
static enum MHD_Result reply_empty_with(struct MHD_Connection *c,
                                        unsigned status, const char *name,
                                        const char *value)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    enum MHD_Result rc;

    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, name, value);
    rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result abxl_envd_rpc_handle(struct MHD_Connection *c,
                                const struct abxl_envd_method *m,
                                const char *url, const char *method,
                                struct abx_buf *body, int body_overflow)
{
    const char *ct = abxl_envd_header(c, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *ver = abxl_envd_header(c, "Connect-Protocol-Version");
    struct abxl_envd_rpc rpc;
    const char *want;
    int64_t timeout;

    if (!m)
        return abxl_envd_reply_json(c, 404, "text/plain; charset=utf-8",
                               "404 page not found\n", 19);
    if (strcmp(method, "POST") != 0)
        return reply_empty_with(c, MHD_HTTP_METHOD_NOT_ALLOWED, "Allow", "POST");
    want = m->streaming ? "application/connect+json" : "application/json";
    /* The platform abx-local imitates (profile fc) answered proto requests
     * with HTTP 400 (its JSON decoder choking on them), not 415. */
    if (!abxl_envd_compat.proto_codec &&
        (media_is(ct, "application/proto") ||
         media_is(ct, "application/connect+proto")))
        return reply_connect_error(c, ABX_CONNECT_INVALID_ARGUMENT,
                                   "unsupported codec: only the JSON codec "
                                   "is accepted (application/json, or "
                                   "application/connect+json for streams)");
    if (!media_is(ct, want))
        return reply_empty_with(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                                "Accept-Post", want);
    memset(&rpc, 0, sizeof rpc);
    if (ver && strcmp(ver, "1") != 0)
        return reply_connect_error(c, ABX_CONNECT_INVALID_ARGUMENT,
                                   "connect-protocol-version must be \"1\"");
    timeout = parse_timeout(abxl_envd_header(c, "Connect-Timeout-Ms"));
    if (timeout < 0)
        return reply_connect_error(c, ABX_CONNECT_INVALID_ARGUMENT,
                                   "invalid Connect-Timeout-Ms header");
    rpc.timeout_ms = timeout;
    rpc.deadline_ms = timeout ? abxl_envd_now_ms() + timeout : 0;
    rpc.keepalive_ms = parse_keepalive_ms(abxl_envd_header(c, "Keepalive-Ping-Interval"));
    if (m->streaming)
        return run_stream(c, url, m->h, &rpc, body, body_overflow);
    return run_unary(c, m->h, &rpc, body, body_overflow);
}
