/* Connect codec: envelopes split at every offset, caps, truncation,
 * end-of-stream errors, code tables. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "connect.h"

#define END_ERR \
    "{\"error\":{\"code\":\"deadline_exceeded\",\"message\":\"late\"}}"

static void build_stream(struct abx_buf *s)
{
    abx_buf_init(s, 0);
    abx_connect_envelope_append(s, 0, "{\"a\":1}", 7);
    abx_connect_envelope_append(s, 0, "", 0);
    abx_connect_envelope_append(s, 0, "{\"event\":{\"start\":{\"pid\":7}}}", 29);
    abx_connect_envelope_append(s, ABX_CONNECT_FLAG_END_STREAM, END_ERR,
                                strlen(END_ERR));
}

/* Feeds s split at cut (and byte by byte when cut == 0). */
static int decode_all(const struct abx_buf *s, size_t cut, int *nmsg,
                      int *saw_end)
{
    struct abx_connect_decoder d;
    size_t pos = 0;
    int rc = 0;

    *nmsg = 0;
    *saw_end = 0;
    abx_connect_decoder_init(&d, 1024);
    while (pos < s->len) {
        size_t n = cut ? (pos == 0 ? cut : s->len - pos) : 1;
        unsigned flags;
        const char *p;
        size_t len;

        if (n > s->len - pos)
            n = s->len - pos;
        if (abx_connect_decoder_feed(&d, s->data + pos, n)) {
            rc = -1;
            break;
        }
        pos += n;
        while ((rc = abx_connect_decoder_next(&d, &flags, &p, &len)) == 1) {
            (*nmsg)++;
            if (flags & ABX_CONNECT_FLAG_END_STREAM) {
                enum abx_connect_code code;
                char msg[64];

                *saw_end = abx_connect_parse_end_stream(p, len, &code, msg,
                                                        sizeof msg) == 0 &&
                           code == ABX_CONNECT_DEADLINE_EXCEEDED &&
                           strcmp(msg, "late") == 0;
            } else if (*nmsg == 3 && (len != 29 || memcmp(p, "{\"event\"", 8))) {
                rc = -1;
            }
        }
        if (rc < 0)
            break;
    }
    if (rc == 0)
        rc = abx_connect_decoder_finish(&d);
    abx_connect_decoder_free(&d);
    return rc;
}

int main(void)
{
    struct abx_buf s;
    int n, end;

    build_stream(&s);
    CHECK_INT(s.len, 4 * 5 + 7 + 0 + 29 + strlen(END_ERR));
    CHECK_INT((unsigned char)s.data[0], 0);
    CHECK_INT((unsigned char)s.data[4], 7);
    for (size_t cut = 0; cut <= s.len; cut++) {
        int rc = decode_all(&s, cut, &n, &end);
        CHECK_INT(rc, 0);
        CHECK_INT(n, 4);
        CHECK_INT(end, 1);
    }

    /* Truncation at every offset inside the stream is reported. */
    for (size_t cut = 1; cut < s.len; cut++) {
        struct abx_connect_decoder d;
        unsigned f;
        const char *p;
        size_t len;
        int whole = cut == 12 || cut == 17 || cut == 51; /* boundaries */

        abx_connect_decoder_init(&d, 1024);
        abx_connect_decoder_feed(&d, s.data, cut);
        while (abx_connect_decoder_next(&d, &f, &p, &len) == 1)
            ;
        CHECK_INT(abx_connect_decoder_finish(&d), whole ? 0 : -1);
        abx_connect_decoder_free(&d);
    }
    abx_buf_free(&s);

    /* Length over the cap, and garbage with a huge length. */
    {
        struct abx_connect_decoder d;
        unsigned f;
        const char *p;
        size_t len;
        const unsigned char huge[] = {0, 0xff, 0xff, 0xff, 0xff, 'x'};

        abx_connect_decoder_init(&d, 16);
        CHECK_INT(abx_connect_decoder_feed(&d, huge, sizeof huge), 0);
        CHECK_INT(abx_connect_decoder_next(&d, &f, &p, &len), -1);
        CHECK(strstr(d.err, "exceeds") != NULL);
        CHECK_INT(abx_connect_decoder_feed(&d, "x", 1), -1);
        abx_connect_decoder_free(&d);

        abx_connect_decoder_init(&d, 16);
        abx_buf_init(&s, 0);
        abx_connect_envelope_append(&s, 0, "0123456789abcdefg", 17);
        abx_connect_decoder_feed(&d, s.data, s.len);
        CHECK_INT(abx_connect_decoder_next(&d, &f, &p, &len), -1);
        abx_buf_free(&s);
        abx_connect_decoder_free(&d);

        /* Exactly at the cap is fine. */
        abx_connect_decoder_init(&d, 16);
        abx_buf_init(&s, 0);
        abx_connect_envelope_append(&s, 0, "0123456789abcdef", 16);
        abx_connect_decoder_feed(&d, s.data, s.len);
        CHECK_INT(abx_connect_decoder_next(&d, &f, &p, &len), 1);
        CHECK_INT(len, 16);
        CHECK_INT(abx_connect_decoder_next(&d, &f, &p, &len), 0);
        CHECK_INT(abx_connect_decoder_finish(&d), 0);
        abx_buf_free(&s);
        abx_connect_decoder_free(&d);
    }

    /* End-stream payloads. */
    {
        enum abx_connect_code c;
        char msg[64];

        CHECK_INT(abx_connect_parse_end_stream("{}", 2, &c, msg, sizeof msg), 0);
        CHECK_INT(c, ABX_CONNECT_OK);
        CHECK_INT(abx_connect_parse_end_stream("nope", 4, &c, msg, sizeof msg), -1);
        CHECK_INT(abx_connect_parse_end_stream("{\"error\":5}", 11, &c, msg,
                                               sizeof msg), -1);
        CHECK_INT(abx_connect_parse_end_stream(
                      "{\"error\":{\"code\":\"bogus\"}}", 26, &c, msg, sizeof msg), 0);
        CHECK_INT(c, ABX_CONNECT_UNKNOWN);
        abx_buf_init(&s, 0);
        CHECK_INT(abx_connect_end_stream_json(&s, ABX_CONNECT_OK, NULL), 0);
        CHECK_STR(abx_buf_cstr(&s), "{}");
        abx_buf_reset(&s);
        abx_connect_end_stream_json(&s, ABX_CONNECT_NOT_FOUND, "gone \"x\"");
        CHECK_STR(abx_buf_cstr(&s),
                  "{\"error\":{\"code\":\"not_found\",\"message\":\"gone \\\"x\\\"\"}}");
        abx_buf_reset(&s);
        abx_connect_error_json(&s, ABX_CONNECT_INVALID_ARGUMENT, "");
        CHECK_STR(abx_buf_cstr(&s), "{\"code\":\"invalid_argument\"}");
        abx_buf_free(&s);
    }

    /* Unary error bodies: Connect shape, envd plain shape, non-JSON. */
    {
        enum abx_connect_code c;
        char msg[64];
        const char *e1 = "{\"code\":\"already_exists\",\"message\":\"dir\"}";
        const char *e2 = "{\"code\":401,\"message\":\"unauthorized\"}";
        const char *e3 = "<html>bad gateway</html>";

        abx_connect_parse_error(e1, strlen(e1), 409, &c, msg, sizeof msg);
        CHECK_INT(c, ABX_CONNECT_ALREADY_EXISTS);
        CHECK_STR(msg, "dir");
        abx_connect_parse_error(e2, strlen(e2), 401, &c, msg, sizeof msg);
        CHECK_INT(c, ABX_CONNECT_UNAUTHENTICATED);
        CHECK_STR(msg, "unauthorized");
        abx_connect_parse_error(e3, strlen(e3), 502, &c, msg, sizeof msg);
        CHECK_INT(c, ABX_CONNECT_UNAVAILABLE);
        CHECK_STR(msg, e3);
        abx_connect_parse_error(NULL, 0, 418, &c, msg, sizeof msg);
        CHECK_INT(c, ABX_CONNECT_UNKNOWN);
        CHECK_STR(msg, "HTTP status 418");
    }

    /* Tables both ways. */
    for (int k = 1; k <= 16; k++) {
        const char *name = abx_connect_code_name((enum abx_connect_code)k);
        CHECK(name != NULL);
        CHECK_INT(abx_connect_code_from_name(name), k);
    }
    CHECK(abx_connect_code_name(ABX_CONNECT_OK) == NULL);
    CHECK(abx_connect_code_name((enum abx_connect_code)17) == NULL);
    CHECK_INT(abx_connect_code_from_name("OK"), -1);
    CHECK_INT(abx_connect_code_http_status(ABX_CONNECT_NOT_FOUND), 404);
    CHECK_INT(abx_connect_code_http_status(ABX_CONNECT_UNAUTHENTICATED), 401);
    CHECK_INT(abx_connect_code_http_status(ABX_CONNECT_CANCELED), 499);
    CHECK_INT(abx_connect_code_http_status(ABX_CONNECT_ABORTED), 409);
    CHECK_INT(abx_connect_code_http_status(ABX_CONNECT_UNIMPLEMENTED), 501);
    CHECK_INT(abx_connect_code_from_http_status(413), ABX_CONNECT_RESOURCE_EXHAUSTED);
    CHECK_INT(abx_connect_code_from_http_status(505), ABX_CONNECT_UNIMPLEMENTED);
    CHECK_INT(abx_connect_code_from_http_status(502), ABX_CONNECT_UNAVAILABLE);
    CHECK_INT(abx_connect_code_from_http_status(504), ABX_CONNECT_DEADLINE_EXCEEDED);
    CHECK_INT(abx_connect_code_from_http_status(302), ABX_CONNECT_UNKNOWN);
    return CHECK_DONE();
}
