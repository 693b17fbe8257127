/* envd stream parsing without a network: Start/Connect and WatchDir
 * bodies fed in every split (1-byte pieces, envelopes straddling reads),
 * end-of-stream errors, plain HTTP errors before the stream, garbage,
 * huge lengths, truncation, the first-event rule, the queue cap. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "envd_internal.h"

static void env(struct abx_buf *b, unsigned flags, const char *json)
{
    abx_connect_envelope_append(b, flags, json, strlen(json));
}

/* start, stdout "hi\n", keepalives, stderr "err", end without exitCode. */
static void ok_stream(struct abx_buf *b)
{
    abx_buf_init(b, 0);
    env(b, 0, "{\"event\":{\"start\":{\"pid\":812}}}");
    env(b, 0, "{\"event\":{\"keepalive\":{}}}");
    env(b, 0, "{\"event\":{\"data\":{\"stdout\":\"aGkK\"}}}");
    env(b, 0, "{\"event\":{\"keepalive\":{}}}");
    env(b, 0, "{\"event\":{\"data\":{\"stderr\":\"ZXJy\"}},\"unknown\":1}");
    env(b, 0, "{\"event\":{\"newKind\":{}}}");
    env(b, 0, "{\"event\":{\"end\":{\"exited\":true,"
              "\"status\":\"exit status 0\"}}}");
    env(b, ABX_CONNECT_FLAG_END_STREAM, "{}");
}

/* Feeds b in pieces: the first `first` bytes, then chunks of `step`. */
static int feed_split(struct abx_envd_stream *s, const struct abx_buf *b,
                      size_t first, size_t step)
{
    size_t pos = 0;

    while (pos < b->len) {
        size_t n = pos == 0 && first ? first : step;
        if (n > b->len - pos)
            n = b->len - pos;
        if (abx_envd_stream_feed(s, 200, b->data + pos, n))
            return -1;
        pos += n;
    }
    return 0;
}

static void eof_ok(struct abx_envd_stream *s, long status)
{
    struct abx_err none;

    abx_err_clear(&none);
    abx_envd_stream_eof(s, 0, &none, status);
}

/* Pops every queued node into a summary string "O:hi\n|E:err|X:0/1|". */
static void drain(struct abx_envd_stream *s, struct abx_buf *sum,
                  struct abx_err *err)
{
    struct abx_envd_qnode *n;

    abx_buf_reset(sum);
    while (abx_envd_stream_next(s, &n, 0, err) == 1) {
        if (n->kind == ABX_PROC_END)
            MUST(abx_buf_appendf(sum, "X:%d/%d/%s/%s|", n->exit_code, n->exited,
                                 n->status, n->error));
        else
            MUST(abx_buf_appendf(sum, "%c:%s|", "?OEP"[n->kind], n->data));
        free(n);
    }
}

static void test_ok_every_split(void)
{
    struct abx_buf b, sum;
    size_t first, step;
    int bad = 0;

    ok_stream(&b);
    abx_buf_init(&sum, 0);
    for (step = 1; step <= b.len; step++) {
        for (first = 0; first < (step == 1 ? b.len : 2); first++) {
            struct abx_envd_stream s;
            struct abx_err err;

            abx_envd_stream_init(&s, abx_envd_proc_msg, "t", 0);
            if (feed_split(&s, &b, first, step))
                bad++;
            eof_ok(&s, 200);
            drain(&s, &sum, &err);
            if (!s.started || s.pid != 812 || !s.got_end ||
                err.cls != ABX_E_OK ||
                strcmp(abx_buf_cstr(&sum),
                       "O:hi\n|E:err|X:0/1/exit status 0/|") != 0)
                bad++;
            abx_envd_stream_free(&s);
        }
    }
    CHECK_INT(bad, 0);
    abx_buf_free(&b);
    abx_buf_free(&sum);
}

/* One whole body, fed at once; returns the stream for checks. */
static void run_body(struct abx_envd_stream *s, abx_envd_msg_fn fn,
                     const struct abx_buf *b, long status, int *feed_rc)
{
    abx_envd_stream_init(s, fn, "t", 0);
    *feed_rc = abx_envd_stream_feed(s, status, b->data, b->len);
    eof_ok(s, status);
}

static void test_errors(void)
{
    struct abx_envd_stream s;
    struct abx_buf b, sum;
    struct abx_err err;
    int rc;

    abx_buf_init(&sum, 0);

    /* End-of-stream error after output: output first, then the error. */
    abx_buf_init(&b, 0);
    env(&b, 0, "{\"event\":{\"start\":{\"pid\":5}}}");
    env(&b, 0, "{\"event\":{\"data\":{\"stdout\":\"YQ==\"}}}");
    env(&b, ABX_CONNECT_FLAG_END_STREAM,
        "{\"error\":{\"code\":\"deadline_exceeded\",\"message\":\"late\"}}");
    run_body(&s, abx_envd_proc_msg, &b, 200, &rc);
    CHECK_INT(rc, 0);
    drain(&s, &sum, &err);
    CHECK_STR(abx_buf_cstr(&sum), "O:a|");
    CHECK_INT(err.cls, ABX_E_TIMEOUT);
    CHECK_STR(err.code, "deadline_exceeded");
    CHECK(strstr(err.message, "late") != NULL);
    abx_envd_stream_free(&s);
    abx_buf_free(&b);

    /* Start failure: only an end-of-stream error (bad cwd). */
    abx_buf_init(&b, 0);
    env(&b, ABX_CONNECT_FLAG_END_STREAM,
        "{\"error\":{\"code\":\"invalid_argument\","
        "\"message\":\"cwd '/nope' does not exist\"}}");
    run_body(&s, abx_envd_proc_msg, &b, 200, &rc);
    CHECK(!s.started);
    CHECK_INT(s.err.cls, ABX_E_INVALID);
    CHECK(strstr(s.err.message, "/nope") != NULL);
    abx_envd_stream_free(&s);
    abx_buf_free(&b);

    /* Plain HTTP errors before the stream (token check, proxy). */
    abx_buf_init(&b, 0);
    MUST(abx_buf_appends(&b, "{\"code\":401,\"message\":\"unauthorized access\"}"));
    run_body(&s, abx_envd_proc_msg, &b, 401, &rc);
    CHECK_INT(s.err.cls, ABX_E_AUTH);
    CHECK_INT(s.err.status, 401);
    abx_envd_stream_free(&s);
    abx_buf_reset(&b);
    MUST(abx_buf_appends(&b, "{\"sandboxId\":\"x\",\"message\":\"The sandbox was "
                             "not found\",\"code\":502}"));
    run_body(&s, abx_envd_proc_msg, &b, 502, &rc);
    CHECK_INT(s.err.cls, ABX_E_TIMEOUT);
    abx_envd_stream_free(&s);
    abx_buf_free(&b);

    /* Garbage in an envelope. */
    abx_buf_init(&b, 0);
    env(&b, 0, "{\"event\":{\"start\":{\"pid\":5}}}");
    env(&b, 0, "not json at all");
    run_body(&s, abx_envd_proc_msg, &b, 200, &rc);
    CHECK_INT(rc, -1);
    CHECK_INT(s.err.cls, ABX_E_PROTOCOL);
    abx_envd_stream_free(&s);
    abx_buf_free(&b);

    /* Not an envelope at all: a huge length prefix. */
    abx_buf_init(&b, 0);
    MUST(abx_buf_append(&b, "\x00\xff\xff\xff\xff{}", 7));
    run_body(&s, abx_envd_proc_msg, &b, 200, &rc);
    CHECK_INT(rc, -1);
    CHECK_INT(s.err.cls, ABX_E_PROTOCOL);
    CHECK(strstr(s.err.message, "exceeds") != NULL);
    abx_envd_stream_free(&s);
    abx_buf_free(&b);

    /* Compressed flag without a negotiated encoding. */
    abx_buf_init(&b, 0);
    env(&b, ABX_CONNECT_FLAG_COMPRESSED, "{}");
    run_body(&s, abx_envd_proc_msg, &b, 200, &rc);
    CHECK_INT(rc, -1);
    CHECK(strstr(s.err.message, "compressed") != NULL);
    abx_envd_stream_free(&s);
    abx_buf_free(&b);

    /* First event not start. */
    abx_buf_init(&b, 0);
    env(&b, 0, "{\"event\":{\"data\":{\"stdout\":\"YQ==\"}}}");
    run_body(&s, abx_envd_proc_msg, &b, 200, &rc);
    CHECK_INT(rc, -1);
    CHECK_INT(s.err.cls, ABX_E_PROTOCOL);
    CHECK(strstr(s.err.message, "expected a start event, got 'data'"));
    abx_envd_stream_free(&s);
    abx_buf_free(&b);

    /* Bad base64 in a data event. */
    abx_buf_init(&b, 0);
    env(&b, 0, "{\"event\":{\"start\":{\"pid\":5}}}");
    env(&b, 0, "{\"event\":{\"data\":{\"stdout\":\"!!\"}}}");
    run_body(&s, abx_envd_proc_msg, &b, 200, &rc);
    CHECK_INT(rc, -1);
    CHECK(strstr(s.err.message, "stdout") != NULL);
    abx_envd_stream_free(&s);
    abx_buf_free(&b);

    /* Missing end event: a clean end of stream, got_end unset (the
     * reader reports "Command ended without an end event"). */
    abx_buf_init(&b, 0);
    env(&b, 0, "{\"event\":{\"start\":{\"pid\":5}}}");
    env(&b, ABX_CONNECT_FLAG_END_STREAM, "{}");
    run_body(&s, abx_envd_proc_msg, &b, 200, &rc);
    CHECK_INT(rc, 0);
    CHECK(s.done && !s.got_end);
    CHECK_INT(s.err.cls, ABX_E_OK);
    abx_envd_stream_free(&s);

    /* Data after the end of stream. */
    env(&b, 0, "{}");
    run_body(&s, abx_envd_proc_msg, &b, 200, &rc);
    CHECK_INT(rc, -1);
    CHECK(strstr(s.err.message, "after the end") != NULL);
    abx_envd_stream_free(&s);
    abx_buf_free(&b);

    abx_buf_free(&sum);
}

static void test_truncation(void)
{
    struct abx_envd_stream s;
    struct abx_buf b;
    struct abx_err terr;
    size_t cut;
    int bad = 0;

    ok_stream(&b);
    /* Every cut short of the whole body is a truncated stream. */
    for (cut = 0; cut < b.len; cut++) {
        abx_envd_stream_init(&s, abx_envd_proc_msg, "t", 0);
        abx_envd_stream_feed(&s, 200, b.data, cut);
        eof_ok(&s, 200);
        if (s.err.cls != ABX_E_PROTOCOL ||
            !strstr(s.err.message, "truncated"))
            bad++;
        abx_envd_stream_free(&s);
    }
    CHECK_INT(bad, 0);

    /* Connection cut (curl error) mid-stream: Protocol, "truncated". */
    abx_envd_stream_init(&s, abx_envd_proc_msg, "t", 0);
    abx_envd_stream_feed(&s, 200, b.data, 20);
    abx_err_set(&terr, ABX_E_CONNECTION, 200, "", "connection reset");
    abx_envd_stream_eof(&s, -1, &terr, 200);
    CHECK_INT(s.err.cls, ABX_E_PROTOCOL);
    CHECK(strstr(s.err.message, "truncated") != NULL);
    abx_envd_stream_free(&s);

    /* Our own timeout keeps its class. */
    abx_envd_stream_init(&s, abx_envd_proc_msg, "t", 0);
    abx_envd_stream_feed(&s, 200, b.data, 20);
    abx_err_set(&terr, ABX_E_TIMEOUT, 0, "", "timed out");
    abx_envd_stream_eof(&s, -1, &terr, 200);
    CHECK_INT(s.err.cls, ABX_E_TIMEOUT);
    abx_envd_stream_free(&s);
    abx_buf_free(&b);
}

static void test_end_values(void)
{
    struct abx_envd_stream s;
    struct abx_buf b, sum;
    struct abx_err err;
    int rc;

    abx_buf_init(&sum, 0);
    abx_buf_init(&b, 0);
    env(&b, 0, "{\"event\":{\"start\":{\"pid\":\"7\"}}}");
    env(&b, 0, "{\"event\":{\"end\":{\"exit_code\":-1,\"status\":"
               "\"signal: killed\",\"error\":\"signal: killed\"}}}");
    env(&b, 0, "{\"event\":{\"data\":{\"stdout\":\"YQ==\"}}}");
    env(&b, ABX_CONNECT_FLAG_END_STREAM, "{}");
    run_body(&s, abx_envd_proc_msg, &b, 200, &rc);
    CHECK_INT(rc, 0);
    CHECK_INT(s.pid, 7);
    drain(&s, &sum, &err);
    /* Events after the end are ignored. */
    CHECK_STR(abx_buf_cstr(&sum), "X:-1/0/signal: killed/signal: killed|");
    abx_envd_stream_free(&s);
    abx_buf_free(&b);

    abx_buf_init(&b, 0);
    env(&b, 0, "{\"event\":{\"start\":{\"pid\":7}}}");
    env(&b, 0, "{\"event\":{\"end\":{\"exitCode\":3,\"exited\":true}}}");
    env(&b, ABX_CONNECT_FLAG_END_STREAM, "{}");
    run_body(&s, abx_envd_proc_msg, &b, 200, &rc);
    drain(&s, &sum, &err);
    CHECK_STR(abx_buf_cstr(&sum), "X:3/1//|");
    abx_envd_stream_free(&s);
    abx_buf_free(&b);
    abx_buf_free(&sum);
}

static void test_queue_cap(void)
{
    struct abx_envd_stream s;
    struct abx_buf b, payload;
    int rc, i;

    abx_buf_init(&b, 0);
    abx_buf_init(&payload, 0);
    env(&b, 0, "{\"event\":{\"start\":{\"pid\":7}}}");
    MUST(abx_buf_appends(&payload, "{\"event\":{\"data\":{\"stdout\":\""));
    for (i = 0; i < 400; i++)
        MUST(abx_buf_appends(&payload, "QUFB"));
    MUST(abx_buf_appends(&payload, "\"}}}"));
    env(&b, 0, payload.data);
    env(&b, 0, payload.data);
    abx_envd_stream_init(&s, abx_envd_proc_msg, "t", 2000);
    rc = abx_envd_stream_feed(&s, 200, b.data, b.len);
    CHECK_INT(rc, -1);
    CHECK_INT(s.err.cls, ABX_E_PROTOCOL);
    CHECK(strstr(s.err.message, "cap of 2000") != NULL);
    abx_envd_stream_free(&s);
    abx_buf_free(&b);
    abx_buf_free(&payload);
}

static void test_watch(void)
{
    struct abx_envd_stream s;
    struct abx_envd_qnode *n;
    struct abx_buf b, sum;
    struct abx_err err;
    size_t step;
    int bad = 0, rc;

    abx_buf_init(&b, 0);
    abx_buf_init(&sum, 0);
    env(&b, 0, "{\"start\":{}}");
    env(&b, 0, "{\"keepalive\":{}}");
    env(&b, 0, "{\"filesystem\":{\"name\":\"a.txt\","
               "\"type\":\"EVENT_TYPE_CREATE\"}}");
    env(&b, 0, "{\"filesystem\":{\"name\":\"d/b\",\"type\":2}}");
    env(&b, 0, "{\"filesystem\":{\"name\":\"x\",\"type\":"
               "\"EVENT_TYPE_UNSPECIFIED\"}}");
    env(&b, 0, "{\"filesystem\":{\"name\":\"c\",\"type\":"
               "\"EVENT_TYPE_REMOVE\"}}");
    env(&b, ABX_CONNECT_FLAG_END_STREAM, "{}");
    for (step = 1; step <= b.len; step++) {
        abx_envd_stream_init(&s, abx_envd_watch_msg, "w", 0);
        if (feed_split(&s, &b, 0, step))
            bad++;
        eof_ok(&s, 200);
        abx_buf_reset(&sum);
        while (abx_envd_stream_next(&s, &n, 0, &err) == 1) {
            MUST(abx_buf_appendf(&sum, "%s:%s|",
                                 abx_envd_watch_type_name(n->kind), n->data));
            free(n);
        }
        if (!s.started || err.cls != ABX_E_OK ||
            strcmp(abx_buf_cstr(&sum), "create:a.txt|write:d/b|remove:c|"))
            bad++;
        abx_envd_stream_free(&s);
    }
    CHECK_INT(bad, 0);
    abx_buf_free(&b);

    abx_buf_init(&b, 0);
    env(&b, 0, "{\"filesystem\":{\"name\":\"a\",\"type\":1}}");
    run_body(&s, abx_envd_watch_msg, &b, 200, &rc);
    CHECK_INT(rc, -1);
    CHECK(strstr(s.err.message, "expected a start event") != NULL);
    abx_envd_stream_free(&s);
    abx_buf_reset(&b);
    env(&b, 0, "{\"start\":{}}");
    env(&b, 0, "{\"filesystem\":{\"name\":\"a\",\"type\":\"BOGUS\"}}");
    run_body(&s, abx_envd_watch_msg, &b, 200, &rc);
    CHECK_INT(rc, -1);
    CHECK_INT(s.err.cls, ABX_E_PROTOCOL);
    abx_envd_stream_free(&s);
    abx_buf_free(&b);
    abx_buf_free(&sum);
}

int main(void)
{
    test_ok_every_split();
    test_errors();
    test_truncation();
    test_end_values();
    test_queue_cap();
    test_watch();
    return CHECK_DONE();
}
