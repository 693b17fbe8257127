/* Connect server streams over the HTTP engine (docs/protocol.md
 * "Streams", "Stream errors"): the body is fed to an envelope decoder as
 * curl delivers it (split anywhere), each message is parsed and handed to
 * the consumer's parser, which queues events (capped) for a reader that
 * takes them outside curl's callbacks. A 200 stream ending with an error envelope and a
 * plain HTTP error before the stream both end up in s->err. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envd_internal.h"
#include "jsonutil.h"

#define ERRBODY_MAX 65536

void abx_envd_stream_init(struct abx_envd_stream *s, abx_envd_msg_fn fn,
                          const char *what, size_t qmax)
{
    memset(s, 0, sizeof *s);
    abx_connect_decoder_init(&s->dec, ABX_ENVD_MAX_MSG);
    abx_buf_init(&s->errbody, ERRBODY_MAX);
    abx_err_clear(&s->err);
    snprintf(s->what, sizeof s->what, "%s", what);
    s->on_msg = fn;
    s->qmax = qmax ? qmax : ABX_ENVD_QUEUE_DEFAULT;
}

void abx_envd_stream_free(struct abx_envd_stream *s)
{
    struct abx_envd_qnode *n, *next;

    if (s->x) {
        struct abx_http_resp resp;
        struct abx_err e;

        /* Aborts the transfer: closes the stream, not the process. */
        abx_http_resp_init(&resp);
        abx_http_finish(s->x, &resp, &e);
        abx_http_resp_free(&resp);
        s->x = NULL;
    }
    for (n = s->head; n; n = next) {
        next = n->next;
        free(n);
    }
    s->head = s->tail = NULL;
    s->qbytes = 0;
    abx_connect_decoder_free(&s->dec);
    abx_buf_free(&s->errbody);
}

struct abx_envd_qnode *abx_envd_qnode_new(int kind, const void *data,
                                          size_t len)
{
    struct abx_envd_qnode *n;

    if (len > ((size_t)-1) / 2)
        return NULL;
    n = calloc(1, sizeof *n + len + 1);
    if (!n)
        return NULL;
    n->kind = kind;
    n->len = len;
    if (len)
        memcpy(n->data, data, len);
    n->data[len] = '\0';
    return n;
}

int abx_envd_stream_push(struct abx_envd_stream *s,
                         struct abx_envd_qnode *n, struct abx_err *err)
{
    size_t cost = sizeof *n + n->len;

    if (s->qbytes + cost > s->qmax) {
        free(n);
        abx_err_set(err, ABX_E_PROTOCOL, 0, "",
                    "%s: events not read exceed the queue cap of %zu bytes",
                    s->what, s->qmax);
        return -1;
    }
    s->qbytes += cost;
    n->next = NULL;
    if (s->tail)
        s->tail->next = n;
    else
        s->head = n;
    s->tail = n;
    return 0;
}

static struct abx_envd_qnode *pop(struct abx_envd_stream *s)
{
    struct abx_envd_qnode *n = s->head;

    if (!n)
        return NULL;
    s->head = n->next;
    if (!s->head)
        s->tail = NULL;
    s->qbytes -= sizeof *n + n->len;
    n->next = NULL;
    return n;
}

static void fail(struct abx_envd_stream *s, const struct abx_err *e)
{
    if (s->done && s->err.cls != ABX_E_OK)
        return;
    s->err = *e;
    s->done = 1;
}

static int fail_protocol(struct abx_envd_stream *s, const char *msg)
{
    struct abx_err e;

    abx_err_set(&e, ABX_E_PROTOCOL, s->status, "", "%s: %s", s->what, msg);
    fail(s, &e);
    return -1;
}

static int one_message(struct abx_envd_stream *s, unsigned flags,
                       const char *payload, size_t len)
{
    struct abx_err e;
    cJSON *m;
    int rc;

    if (flags & ABX_CONNECT_FLAG_COMPRESSED)
        return fail_protocol(s, "compressed envelope, but no encoding was "
                                "negotiated");
    if (flags & ABX_CONNECT_FLAG_END_STREAM) {
        enum abx_connect_code code;
        char msg[768];

        if (s->ended)
            return fail_protocol(s, "a second end-of-stream envelope");
        if (abx_connect_parse_end_stream(payload, len, &code, msg,
                                         sizeof msg)) {
            abx_err_set(&e, ABX_E_PROTOCOL, s->status, "",
                        "%s: malformed end-of-stream message: %s", s->what,
                        msg);
            fail(s, &e);
            return -1;
        }
        s->ended = 1;
        s->done = 1;
        if (code != ABX_CONNECT_OK)
            abx_err_from_connect(&s->err, s->what, code, msg, s->status);
        return 0;
    }
    if (s->ended)
        return fail_protocol(s, "a message after the end of the stream");
    m = abx_json_parse(payload, len);
    if (!cJSON_IsObject(m)) {
        cJSON_Delete(m);
        return fail_protocol(s, "malformed stream message (not a JSON "
                                "object)");
    }
    abx_err_clear(&e);
    rc = s->on_msg(s, m, &e);
    cJSON_Delete(m);
    if (rc) {
        fail(s, &e);
        return -1;
    }
    return 0;
}

int abx_envd_stream_feed(struct abx_envd_stream *s, long status,
                         const char *p, size_t n)
{
    unsigned flags;
    const char *payload;
    size_t len;
    int r;

    if (s->done && s->err.cls != ABX_E_OK)
        return -1;
    s->status = status;
    if (status != 200) {
        /* An error before the stream: keep (the start of) its body. */
        size_t room = s->errbody.max - s->errbody.len;
        if (abx_buf_append(&s->errbody, p, n < room ? n : room) != 0) {
            /* Out of memory: the error message shows less of the body. */
        }
        return 0;
    }
    if (s->ended) {
        if (n == 0)
            return 0;
        return fail_protocol(s, "data after the end of the stream");
    }
    if (abx_connect_decoder_feed(&s->dec, p, n)) {
        struct abx_err e;
        abx_err_set(&e, ABX_E_PROTOCOL, status, "", "%s: %s", s->what,
                    s->dec.err);
        fail(s, &e);
        return -1;
    }
    while ((r = abx_connect_decoder_next(&s->dec, &flags, &payload,
                                         &len)) == 1) {
        if (one_message(s, flags, payload, len))
            return -1;
    }
    if (r < 0) {
        struct abx_err e;
        abx_err_set(&e, ABX_E_PROTOCOL, status, "",
                    "%s: malformed stream: %s", s->what, s->dec.err);
        fail(s, &e);
        return -1;
    }
    /* Bytes after the end-of-stream envelope, however they were split. */
    if (s->ended && s->dec.in.len > s->dec.consumed)
        return fail_protocol(s, "data after the end of the stream");
    return 0;
}

void abx_envd_stream_eof(struct abx_envd_stream *s, int rc,
                         const struct abx_err *terr, long status)
{
    struct abx_err e;

    if (s->done)
        return;     /* end-of-stream seen, or already failed */
    if (status)
        s->status = status;
    if (rc) {
        /* A connection cut in a 200 stream is a truncated stream; a
         * timeout or a cancel keeps its own class. */
        if (s->status == 200 && terr->cls != ABX_E_TIMEOUT &&
            terr->cls != ABX_E_CANCELED) {
            const char *m = terr->message;
            size_t wl = strlen(s->what);

            /* The transport's message starts with our what too. */
            if (strncmp(m, s->what, wl) == 0 && m[wl] == ':')
                m += wl + (m[wl + 1] == ' ' ? 2 : 1);
            abx_err_set(&e, ABX_E_PROTOCOL, 200, "",
                        "%s: stream truncated before its end (%s)", s->what,
                        m);
            fail(s, &e);
        } else {
            fail(s, terr);
        }
        return;
    }
    if (s->status != 200) {
        abx_envd_connect_error(&e, s->what, s->status, s->errbody.data,
                               s->errbody.len);
        fail(s, &e);
        return;
    }
    if (abx_connect_decoder_finish(&s->dec)) {
        abx_err_set(&e, ABX_E_PROTOCOL, 200, "", "%s: %s", s->what,
                    s->dec.err);
        fail(s, &e);
        return;
    }
    abx_err_set(&e, ABX_E_PROTOCOL, 200, "",
                "%s: stream truncated: it ended without an end-of-stream "
                "message", s->what);
    fail(s, &e);
}

static int sink(void *ud, long status, const char *p, size_t n)
{
    struct abx_envd_stream *s = ud;

    if (abx_envd_stream_feed(s, status, p, n) == 0)
        return 0;
    if (s->x)
        abx_http_xfer_fail(s->x, &s->err);
    return 1;
}

int abx_envd_stream_open(struct abx_envd_stream *s,
                         const struct abx_endpoint *ep, const char *method,
                         const cJSON *req_json, const char *user,
                         double timeout, struct abx_err *err)
{
    struct abx_envd_call c;
    struct abx_buf json, body;
    char tmo[64];
    const char *extra[5];
    size_t ne;
    int rc = -1;

    abx_envd_call_init(&c);
    abx_buf_init(&json, 0);
    abx_buf_init(&body, 0);
    if (abx_json_append(&json, req_json) ||
        abx_connect_envelope_append(&body, 0, json.data, json.len)) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "%s: cannot encode the request", s->what);
        goto out;
    }
    ne = abx_envd_connect_headers(extra,
                                  "Content-Type: application/connect+json",
                                  timeout, tmo, sizeof tmo);
    extra[ne++] = "Keepalive-Ping-Interval: 50";
    extra[ne] = NULL;
    if (abx_envd_call_prepare(&c, ep, "POST", method, NULL, user, extra,
                              s->what, err))
        goto out;
    c.req.body = body.data;
    c.req.body_len = body.len;
    /* The server ends the stream at the deadline; ours is a backstop. */
    c.req.timeout = timeout > 0 ? timeout + 10 : 0;
    c.req.sink = sink;
    c.req.sink_ud = s;
    s->x = abx_http_start(&c.req, err);
    if (!s->x)
        goto out;
    rc = 0;
out:
    abx_envd_call_free(&c);
    abx_buf_free(&json);
    abx_buf_free(&body);
    return rc;
}

int abx_envd_drive(struct abx_http_xfer *x, double slice, struct abx_err *err)
{
    if (slice < 0)
        slice = 0;
    abx_http_pump(slice);
    if (abx_http_done(x))
        return 1;
    return abx_http_check_cancel(err) ? -1 : 0;
}

/* Drives every transfer for a while (at most until, 0 = a short slice);
 * collects ours when it is over. 0, or -1 with err when canceled. */
static int drive(struct abx_envd_stream *s, double until, struct abx_err *err)
{
    double now = abx_http_now(), slice = 0.1;
    struct abx_http_resp resp;
    struct abx_err terr;
    int rc;

    if (until > 0 && until - now < slice)
        slice = until - now;
    if (!s->x) {
        abx_err_set(&terr, ABX_E_PROTOCOL, 0, "", "%s: no transfer",
                    s->what);
        fail(s, &terr);
        return 0;
    }
    rc = abx_envd_drive(s->x, slice, err);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return 0;
    abx_http_resp_init(&resp);
    abx_err_clear(&terr);
    rc = abx_http_finish(s->x, &resp, &terr);
    s->x = NULL;
    abx_envd_stream_eof(s, rc, &terr, resp.status);
    abx_http_resp_free(&resp);
    return 0;
}

int abx_envd_stream_next(struct abx_envd_stream *s,
                         struct abx_envd_qnode **node, double until,
                         struct abx_err *err)
{
    int polled = 0;

    *node = NULL;
    for (;;) {
        if ((*node = pop(s)) != NULL)
            return 1;
        if (s->done) {
            *err = s->err;
            return -1;
        }
        /* A deadline already past still takes what has arrived. */
        if (until > 0 && abx_http_now() >= until && polled)
            return 0;
        polled = 1;
        if (drive(s, until, err))
            return -1;
    }
}

int abx_envd_stream_wait_start(struct abx_envd_stream *s, double timeout,
                               struct abx_err *err)
{
    double deadline = timeout > 0 ? abx_http_now() + timeout : 0;

    for (;;) {
        if (s->started)
            return 0;
        if (s->done) {
            if (s->err.cls != ABX_E_OK)
                *err = s->err;
            else
                abx_err_set(err, ABX_E_PROTOCOL, s->status, "",
                            "%s: the stream ended before its start event",
                            s->what);
            return -1;
        }
        if (deadline > 0 && abx_http_now() >= deadline) {
            abx_err_set(err, ABX_E_TIMEOUT, 0, "",
                        "%s: no start event within %.0f s", s->what,
                        timeout);
            return -1;
        }
        if (drive(s, deadline, err))
            return -1;
    }
}
