/* Masker property fuzzer. Input: one or two secrets, then a program that
 * builds the data: literal bytes and secrets inserted raw, base64 (both
 * alphabets), percent- and JSON-escaped or inside HTTP Basic. The data is
 * masked one-shot and streamed in random splits; the two outputs must be
 * identical and must not hold any secret raw or as its base64 (standard
 * or URL alphabet), except where an occurrence overlaps a marker (a
 * secret may share bytes with "[MASKED]" itself). The forms are encoded
 * here (OpenSSL's EVP base64, RFC 3986 percent-encoding, cJSON's string
 * escapes), never by the masker's own code.
 *
 * Layout: b0 -> len1 = 4 + b0 % 29, secret1; b -> if b & 1 a second
 * secret of 4 + (b >> 1) % 13 bytes; then ops (see build()). */
#include <string.h>

#include <openssl/evp.h>

#include "fuzz.h"
#include "mask.h"

#define MAX_DATA 16384
/* What a masked form becomes (mask.h), spelled out here. */
#define REF_MARKER "[MASKED]"

struct secret {
    const uint8_t *p;
    size_t n;
};

static void b64(struct abx_buf *o, const uint8_t *p, size_t n, int url,
                int pad)
{
    unsigned char enc[4 * 64];  /* secrets are <= 32 bytes (+ "user:") */
    int m = EVP_EncodeBlock(enc, p, (int)n);
    int i;

    FUZZ_CHECK(m > 0 && (size_t)m < sizeof enc);
    for (i = 0; url && i < m; i++)
        enc[i] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
    while (!pad && m > 0 && enc[m - 1] == '=')
        m--;
    MUST(abx_buf_append(o, enc, (size_t)m));
}

static void pct(struct abx_buf *o, const uint8_t *p, size_t n, int lower)
{
    const char *hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned c = p[i];

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
            c == '~') {
            MUST(abx_buf_appendc(o, (char)c));
        } else {
            MUST(abx_buf_appendc(o, '%'));
            MUST(abx_buf_appendc(o, hex[c >> 4]));
            MUST(abx_buf_appendc(o, hex[c & 15]));
        }
    }
}

/* JSON string body as cJSON writes it. */
static void json(struct abx_buf *o, const uint8_t *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned c = p[i];

        switch (c) {
        case '"': MUST(abx_buf_appends(o, "\\\"")); break;
        case '\\': MUST(abx_buf_appends(o, "\\\\")); break;
        case '\b': MUST(abx_buf_appends(o, "\\b")); break;
        case '\f': MUST(abx_buf_appends(o, "\\f")); break;
        case '\n': MUST(abx_buf_appends(o, "\\n")); break;
        case '\r': MUST(abx_buf_appends(o, "\\r")); break;
        case '\t': MUST(abx_buf_appends(o, "\\t")); break;
        default:
            if (c < 0x20)
                MUST(abx_buf_appendf(o, "\\u%04x", c));
            else
                MUST(abx_buf_appendc(o, (char)c));
        }
    }
}

/* Runs the op program in d[0..n) into out. */
static void build(const uint8_t *d, size_t n, const struct secret *s,
                  int ns, struct abx_buf *out)
{
    size_t i = 0, k;
    uint8_t tmp[64];

    while (i < n && out->len < MAX_DATA) {
        unsigned op = d[i++];
        const struct secret *x = &s[(op >> 3) % ns];

        switch (op & 7) {
        case 0: /* literal */
            k = i < n ? d[i++] % 64 + 1 : 0;
            if (k > n - i)
                k = n - i;
            MUST(abx_buf_append(out, d + i, k));
            i += k;
            break;
        case 1: MUST(abx_buf_append(out, x->p, x->n)); break;
        case 2: b64(out, x->p, x->n, 0, 1); break;
        case 3: b64(out, x->p, x->n, 1, 0); break;
        case 4: pct(out, x->p, x->n, 0); break;
        case 5: pct(out, x->p, x->n, 1); break;
        case 6: json(out, x->p, x->n); break;
        case 7: /* Authorization: Basic base64("user:" S) */
            memcpy(tmp, "user:", 5);
            memcpy(tmp + 5, x->p, x->n);
            MUST(abx_buf_appends(out, "Basic "));
            b64(out, tmp, x->n + 5, 0, 1);
            break;
        }
    }
}

/* Every occurrence of needle in hay must overlap a "[MASKED]". */
static void no_leak(const struct abx_buf *hay, const void *needle,
                    size_t nn)
{
    static const char mk[] = REF_MARKER;
    const size_t ml = sizeof mk - 1;
    const char *h = hay->data ? hay->data : "";
    size_t i, j, lo, hi;
    int covered;

    for (i = 0; nn && i + nn <= hay->len; i++) {
        if (memcmp(h + i, needle, nn))
            continue;
        covered = 0;
        lo = i >= ml ? i - ml + 1 : 0;
        hi = i + nn;  /* a marker starting before i + nn overlaps */
        for (j = lo; j < hi && j + ml <= hay->len && !covered; j++)
            covered = !memcmp(h + j, mk, ml);
        if (!covered)
            fprintf(stderr, "leak at output offset %zu\n", i);
        FUZZ_CHECK(covered);
    }
}

static void check_secret(const struct abx_buf *o, const struct secret *s)
{
    struct abx_buf f;

    abx_buf_init(&f, 0);
    no_leak(o, s->p, s->n);
    b64(&f, s->p, s->n, 0, 0);
    no_leak(o, f.data, f.len);
    abx_buf_reset(&f);
    b64(&f, s->p, s->n, 1, 0);
    no_leak(o, f.data, f.len);
    abx_buf_free(&f);
}

static void stream(struct abx_mask *m, const struct abx_buf *in,
                   uint32_t seed, struct abx_buf *out)
{
    struct abx_mask_stream st;
    size_t off = 0, k, maxform = abx_mask_max_form_len(m);

    abx_mask_stream_init(&st, m);
    while (off < in->len) {
        k = (fuzz_rand(&seed) & 3) ? fuzz_rand(&seed) % 16 + 1
                                   : fuzz_rand(&seed) % 700 + 1;
        if (k > in->len - off)
            k = in->len - off;
        FUZZ_CHECK(abx_mask_stream_write(&st, in->data + off, k, out) == 0);
        off += k;
        /* Held back: at most a chain of overlapping forms (mask.c). */
        FUZZ_CHECK(st.pending.len <= 64 * 1024 + 2 * maxform);
    }
    FUZZ_CHECK(abx_mask_stream_flush(&st, out) == 0);
    FUZZ_CHECK(st.pending.len == 0);
    abx_mask_stream_free(&st);
}

/* Building a masker (hundreds of forms per secret) costs far more than
 * masking a few KiB, and mutations mostly keep the secrets: reuse the
 * last masker while the secrets are the same bytes. Masking never
 * changes a masker, so the result for an input does not depend on it. */
static struct abx_mask *get_mask(const struct secret *s, int ns)
{
    static struct abx_mask *cached;
    static uint8_t key[2 + 2 * 32];
    static size_t keylen;
    uint8_t now[sizeof key];
    size_t n = 0;
    int k, rc;

    for (k = 0; k < ns; k++) {
        now[n++] = (uint8_t)s[k].n;
        memcpy(now + n, s[k].p, s[k].n);
        n += s[k].n;
    }
    if (cached && n == keylen && !memcmp(now, key, n))
        return cached;
    abx_mask_free(cached);
    keylen = 0;
    cached = abx_mask_new();
    if (!cached)
        return NULL;
    for (k = 0; k < ns; k++) {
        rc = abx_mask_add(cached, s[k].p, s[k].n);
        FUZZ_CHECK(rc == 0 || (k == 1 && rc == 1 && s[0].n == s[1].n &&
                               !memcmp(s[0].p, s[1].p, s[0].n)));
        FUZZ_CHECK(abx_mask_add(cached, s[k].p, s[k].n) == 1);
    }
    FUZZ_CHECK(abx_mask_count(cached) == (size_t)ns ||
               abx_mask_count(cached) == 1);
    FUZZ_CHECK(abx_mask_max_form_len(cached) >= s[0].n);
    memcpy(key, now, n);
    keylen = n;
    return cached;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct secret s[2];
    struct abx_buf in, one, str;
    struct abx_mask *m;
    size_t i = 0;
    int ns = 1, k;

    if (size < 1)
        return 0;
    s[0].n = 4 + data[i++] % 29;
    if (size - i < s[0].n)
        return 0;
    s[0].p = data + i;
    i += s[0].n;
    if (i < size && (data[i] & 1)) {
        s[1].n = 4 + (data[i] >> 1) % 13;
        i++;
        if (size - i < s[1].n)
            return 0;
        s[1].p = data + i;
        i += s[1].n;
        ns = 2;
    } else if (i < size) {
        i++;
    }

    m = get_mask(s, ns);
    if (!m)
        return 0;

    abx_buf_init(&in, 0);
    abx_buf_init(&one, 0);
    abx_buf_init(&str, 0);
    build(data + i, size - i, s, ns, &in);

    FUZZ_CHECK(abx_mask_string(m, in.data ? in.data : "", in.len, &one) ==
               0);
    stream(m, &in, fuzz_seed(data, size), &str);
    if (one.len != str.len || (one.len && memcmp(one.data, str.data,
                                                 one.len)))
        fprintf(stderr, "one-shot (%zu bytes) and streamed (%zu bytes) "
                "outputs differ\n", one.len, str.len);
    FUZZ_CHECK(one.len == str.len);
    FUZZ_CHECK(!one.len || !memcmp(one.data, str.data, one.len));
    for (k = 0; k < ns; k++)
        check_secret(&one, &s[k]);

    abx_buf_free(&in);
    abx_buf_free(&one);
    abx_buf_free(&str);
    return 0;
}
