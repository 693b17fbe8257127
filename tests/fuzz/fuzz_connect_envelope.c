/* Connect envelope decoder: the stream is decoded three ways (one feed,
 * random splits drained after every feed, and a 12-line reference reader
 * written from the wire format, not from connect.h) and all three must
 * agree on the messages, the error and the leftover.
 * Input: byte 0 picks the payload cap, the rest is the wire stream. */
#include <string.h>

#include "connect.h"
#include "fuzz.h"

/* Log record: flags byte, then the length as a size_t. */
#define LOG_HDR (1 + sizeof(size_t))

static const size_t caps[] = {0, 1, 5, 16, 100, 255, 1024, 65536};

struct run {
    struct abx_buf log;  /* flags, length, payload of every message */
    int failed;          /* next() returned -1 */
    int truncated;       /* finish() returned -1 without a failure */
};

static void log_msg(struct run *r, unsigned flags, const char *p, size_t n,
                    size_t cap)
{
    unsigned char hdr[LOG_HDR];

    FUZZ_CHECK(n <= cap);  /* never accept a length over the cap */
    FUZZ_CHECK(flags <= 0xff);
    hdr[0] = (unsigned char)flags;
    memcpy(hdr + 1, &n, sizeof n);
    FUZZ_CHECK(abx_buf_append(&r->log, hdr, LOG_HDR) == 0);
    FUZZ_CHECK(abx_buf_append(&r->log, p, n) == 0);
}

/* Drains every whole message; returns -1 once the decoder failed. */
static int drain(struct abx_connect_decoder *d, struct run *r, size_t cap)
{
    unsigned flags;
    const char *p;
    size_t n;
    int k;

    while ((k = abx_connect_decoder_next(d, &flags, &p, &n)) == 1)
        log_msg(r, flags, p, n, cap);
    if (k < 0) {
        FUZZ_CHECK(d->err[0] != '\0');
        FUZZ_CHECK(memchr(d->err, '\0', sizeof d->err) != NULL);
        r->failed = 1;
        return -1;
    }
    return 0;
}

static void finish(struct abx_connect_decoder *d, struct run *r)
{
    int k = abx_connect_decoder_finish(d);

    if (r->failed) {
        FUZZ_CHECK(k == -1);
    } else if (k < 0) {
        FUZZ_CHECK(d->err[0] != '\0');
        r->truncated = 1;
    }
}

static void one_shot(const uint8_t *s, size_t n, size_t cap, struct run *r)
{
    struct abx_connect_decoder d;

    abx_connect_decoder_init(&d, cap);
    FUZZ_CHECK(abx_connect_decoder_feed(&d, s, n) == 0);
    drain(&d, r, cap);
    if (r->failed) {
        /* A failed decoder stays failed. */
        FUZZ_CHECK(abx_connect_decoder_feed(&d, s, n) == -1);
    }
    finish(&d, r);
    abx_connect_decoder_free(&d);
}

static void split(const uint8_t *s, size_t n, size_t cap, uint32_t seed,
                  struct run *r)
{
    struct abx_connect_decoder d;
    size_t off = 0, k;

    abx_connect_decoder_init(&d, cap);
    while (off < n) {
        /* Mostly tiny pieces (split prefixes), sometimes big ones. */
        k = (fuzz_rand(&seed) & 3) ? fuzz_rand(&seed) % 8 + 1
                                   : fuzz_rand(&seed) % 512 + 1;
        if (k > n - off)
            k = n - off;
        if (abx_connect_decoder_feed(&d, s + off, k) != 0) {
            FUZZ_CHECK(r->failed);
            break;
        }
        off += k;
        if (drain(&d, r, cap) < 0)
            break;
    }
    finish(&d, r);
    abx_connect_decoder_free(&d);
}

/* The Connect envelope (docs/protocol.md "Streams"): [flags:1][length:4,
 * big-endian][payload:length]. */
#define REF_PREFIX 5

static void reference(const uint8_t *s, size_t n, size_t cap, struct run *r)
{
    size_t off = 0, len;

    while (n - off >= REF_PREFIX) {
        len = (size_t)s[off + 1] << 24 | (size_t)s[off + 2] << 16 |
              (size_t)s[off + 3] << 8 | s[off + 4];
        if (len > cap) {
            r->failed = 1;
            return;
        }
        if (n - off - REF_PREFIX < len)
            break;
        log_msg(r, s[off], (const char *)s + off + REF_PREFIX, len, cap);
        off += REF_PREFIX + len;
    }
    r->truncated = off != n;
}

static void same(const struct run *a, const struct run *b)
{
    FUZZ_CHECK(a->failed == b->failed);
    FUZZ_CHECK(a->truncated == b->truncated);
    FUZZ_CHECK(a->log.len == b->log.len);
    FUZZ_CHECK(a->log.len == 0 || !memcmp(a->log.data, b->log.data,
                                          a->log.len));
}

/* Re-encoding the decoded messages gives back the consumed bytes. */
static void reencode(const struct run *r, const uint8_t *s, size_t n)
{
    struct abx_buf out;
    size_t off = 0, len;

    abx_buf_init(&out, 0);
    while (off < r->log.len) {
        memcpy(&len, r->log.data + off + 1, sizeof len);
        FUZZ_CHECK(abx_connect_envelope_append(
                       &out, (unsigned char)r->log.data[off],
                       r->log.data + off + LOG_HDR, len) == 0);
        off += LOG_HDR + len;
    }
    FUZZ_CHECK(out.len <= n);
    FUZZ_CHECK(out.len == 0 || !memcmp(out.data, s, out.len));
    abx_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct run a, b, c;
    size_t cap;

    if (size < 1)
        return 0;
    cap = caps[data[0] % (sizeof caps / sizeof caps[0])];
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&c, 0, sizeof c);
    abx_buf_init(&a.log, 0);
    abx_buf_init(&b.log, 0);
    abx_buf_init(&c.log, 0);
    one_shot(data + 1, size - 1, cap, &a);
    split(data + 1, size - 1, cap, fuzz_seed(data, size), &b);
    reference(data + 1, size - 1, cap, &c);
    same(&a, &c);
    same(&b, &c);
    reencode(&c, data + 1, size - 1);
    abx_buf_free(&a.log);
    abx_buf_free(&b.log);
    abx_buf_free(&c.log);
    return 0;
}
