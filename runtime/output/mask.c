/* The masker: a set of byte patterns (every secret's derived forms), a
 * first-byte and byte-pair filter in front of memcmp, and a scanner that
 * decides leftmost-longest matches, merging overlaps, while holding back
 * only bytes that could still start a pattern. */
#include "mask.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "escape.h"
#include "mask_noise.h"
#include "vec.h"

struct pattern {
    unsigned char *bytes;
    size_t len;
};

/* Patterns sharing their first two bytes, longest first (so the first
 * full match found is the longest one). */
struct bucket {
    size_t *idx;
    size_t n, cap;
};

struct abx_mask {
    pthread_rwlock_t lock;
    struct pattern *pats;
    size_t npats, cappats;
    struct pattern *secrets;  /* raw values, to dedupe and count */
    size_t nsecrets, capsecrets;
    struct bucket *buckets;      /* one per pair that starts a pattern */
    size_t nbuckets, capbuckets;
    uint32_t bucket_of[65536];   /* pair -> 1 + its bucket, 0: none */
    uint8_t first[256];          /* some pattern starts with this byte */
    uint8_t pair[65536 / 8];     /* some pattern starts with this pair */
    size_t maxlen;
};

static const char marker[] = ABX_MASK_MARKER;

/* A chain of overlapping matches still growing at the end of a streamed
 * write is held back whole, so that it becomes one marker. Past this
 * size (only reachable with pathological input such as a secret "aaaa"
 * inside a long run of 'a') the covered part is emitted as its own
 * marker: still no fragment, but no unbounded buffering either. */
#define MASK_CHAIN_LIMIT ((size_t)64 * 1024)


struct abx_mask *abx_mask_new(void)
{
    struct abx_mask *m = calloc(1, sizeof(*m));

    if (m && pthread_rwlock_init(&m->lock, NULL) != 0) {
        free(m);
        m = NULL;
    }
    return m;
}

void abx_mask_free(struct abx_mask *m)
{
    size_t i;

    if (!m)
        return;
    for (i = 0; i < m->npats; i++)
        free(m->pats[i].bytes);
    for (i = 0; i < m->nsecrets; i++)
        free(m->secrets[i].bytes);
    for (i = 0; i < m->nbuckets; i++)
        free(m->buckets[i].idx);
    free(m->buckets);
    free(m->pats);
    free(m->secrets);
    pthread_rwlock_destroy(&m->lock);
    free(m);
}

static int pattern_known(const struct pattern *arr, size_t n, const void *p,
                         size_t len)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (arr[i].len == len && !memcmp(arr[i].bytes, p, len))
            return 1;
    return 0;
}

/* Adds one form (deduplicated) and indexes it. Caller holds the lock. */
static int add_pattern(struct abx_mask *m, const void *p, size_t len)
{
    const unsigned char *u = p;
    struct bucket *b;
    unsigned char *copy;
    size_t i, pos, key;

    if (len < ABX_MASK_MIN_LEN)
        return 0;
    key = (size_t)u[0] << 8 | u[1];
    if (!m->bucket_of[key]) {
        if (ABX_VEC_RESERVE(m->buckets, m->capbuckets, m->nbuckets + 1))
            return -1;
        memset(&m->buckets[m->nbuckets], 0, sizeof(*m->buckets));
        m->bucket_of[key] = (uint32_t)++m->nbuckets;
    }
    b = &m->buckets[m->bucket_of[key] - 1];
    /* Dedupe within the pair's bucket only: same first bytes or not the
     * same pattern. */
    for (i = 0; i < b->n; i++)
        if (m->pats[b->idx[i]].len == len &&
            !memcmp(m->pats[b->idx[i]].bytes, p, len))
            return 0;
    if (ABX_VEC_RESERVE(m->pats, m->cappats, m->npats + 1) ||
        ABX_VEC_RESERVE(b->idx, b->cap, b->n + 1))
        return -1;
    copy = malloc(len);
    if (!copy)
        return -1;
    memcpy(copy, p, len);
    m->pats[m->npats].bytes = copy;
    m->pats[m->npats].len = len;
    for (pos = 0; pos < b->n && m->pats[b->idx[pos]].len >= len; pos++)
        ;
    for (i = b->n; i > pos; i--)
        b->idx[i] = b->idx[i - 1];
    b->idx[pos] = m->npats;
    b->n++;
    m->npats++;
    m->first[u[0]] = 1;
    m->pair[key >> 3] |= (uint8_t)(1u << (key & 7));
    if (len > m->maxlen)
        m->maxlen = len;
    return 0;
}

/* ---- derived forms ---------------------------------------------------- */

/* A form a tool may wrap: matched across line breaks after its first two
 * bytes (match_noisy), so it is added without its first byte too, for a
 * break right after that byte (which alone is left). */
static int add_wrapped(struct abx_mask *m, const unsigned char *p, size_t n)
{
    return n > 8 ? add_pattern(m, p + 1, n - 1) : 0;
}

/* Adds base b and every textual encoding of it. */
static int add_encodings(struct abx_mask *m, const unsigned char *b,
                         size_t n)
{
    struct abx_buf o;
    unsigned fl;
    int rc, r;

    abx_buf_init(&o, 0);
    rc = add_pattern(m, b, n);
    for (fl = 0; fl < 4 && !rc; fl++) {
        abx_buf_reset(&o);
        rc = abx_esc_pct(&o, b, n, fl) || add_pattern(m, o.data, o.len);
    }
    for (fl = 0; fl <= ABX_ESC_JSON_ALL && !rc; fl++) {
        abx_buf_reset(&o);
        r = abx_esc_json(&o, b, n, fl);
        if (r < 0)
            rc = -1;
        else if (r == 0 && o.len)
            rc = add_pattern(m, o.data, o.len);
    }
    for (fl = 0; fl <= ABX_ESC_XML_ALL && !rc; fl++) {
        if ((fl & ABX_ESC_XML_APOS) && (fl & ABX_ESC_XML_APOS_NUM))
            continue;
        abx_buf_reset(&o);
        rc = abx_esc_xml(&o, b, n, fl) || add_pattern(m, o.data, o.len);
    }
    abx_buf_free(&o);
    return rc;
}

/* base64 forms of s (4 variants) and the encoding-position-independent
 * cores of s preceded by 0, 1 or 2 other bytes (std and URL). */
static int add_b64_forms(struct abx_mask *m, const unsigned char *s,
                         size_t n, int cores)
{
    static const unsigned flags[] = {0, ABX_B64_NO_PAD, ABX_B64_URL,
                                     ABX_B64_URL | ABX_B64_NO_PAD};
    struct abx_buf o, in;
    size_t k, from, to;
    unsigned f;
    int rc = 0;

    abx_buf_init(&o, 0);
    abx_buf_init(&in, 0);
    for (f = 0; f < 4 && !rc; f++) {
        abx_buf_reset(&o);
        rc = abx_b64_encode(s, n, flags[f], &o);
        if (!rc)
            rc = add_encodings(m, (unsigned char *)o.data, o.len) ||
                 add_wrapped(m, (unsigned char *)o.data, o.len);
    }
    for (k = 0; cores && k < 3 && !rc; k++) {
        /* char i carries bits [6i, 6i+6); keep those inside s's bits
         * [8k, 8k+8n). */
        from = (8 * k + 5) / 6;
        to = (8 * k + 8 * n) / 6;
        abx_buf_reset(&in);
        rc = abx_buf_append(&in, "\0\0", k);
        if (!rc)
            rc = abx_buf_append(&in, s, n);
        for (f = 0; f < 4 && !rc; f += 2) {
            abx_buf_reset(&o);
            rc = abx_b64_encode(in.data, in.len, flags[f] | ABX_B64_NO_PAD,
                                &o);
            if (!rc && to > from && to <= o.len)
                rc = add_encodings(m, (unsigned char *)o.data + from, to - from) ||
                     add_wrapped(m, (unsigned char *)o.data + from, to - from);
        }
    }
    abx_buf_free(&o);
    abx_buf_free(&in);
    return rc;
}

/* Forms that spell every byte: hex (lower, upper), bare or separated by
 * a space or a colon (od, hexdump, a MAC-style dump), %XX for each byte
 * (an encoder that escapes everything), \u00XX for each byte (a JSON
 * encoder that escapes everything), \xNN (C, Python, bash's printf %q),
 * each in its textual encodings. */
static int add_byte_forms(struct abx_mask *m, const unsigned char *s, size_t n)
{
    static const char lo[] = "0123456789abcdef", up[] = "0123456789ABCDEF";
    static const struct {
        const char *prefix, *sep, *digits;
    } forms[] = {{"", "", lo},     {"", "", up},     {"", " ", lo},   {"", " ", up},
                 {"", ":", lo},    {"", ":", up},    {"%", "", up},   {"%", "", lo},
                 {"\\u00", "", lo}, {"\\u00", "", up}, {"\\x", "", lo}, {"\\x", "", up}};
    struct abx_buf o;
    int rc = 0;

    abx_buf_init(&o, 0);
    for (size_t f = 0; f < sizeof forms / sizeof forms[0] && !rc; f++) {
        abx_buf_reset(&o);
        for (size_t i = 0; i < n && !rc; i++) {
            char two[2] = {forms[f].digits[s[i] >> 4], forms[f].digits[s[i] & 15]};
            rc = (i && abx_buf_appends(&o, forms[f].sep)) ||
                 abx_buf_appends(&o, forms[f].prefix) || abx_buf_append(&o, two, 2);
        }
        if (!rc)
            rc = add_encodings(m, (unsigned char *)o.data, o.len) ||
                 add_wrapped(m, (unsigned char *)o.data, o.len);
    }
    abx_buf_free(&o);
    return rc;
}

static int add_forms(struct abx_mask *m, const unsigned char *s, size_t n)
{
    struct abx_buf t;
    int rc;

    rc = add_encodings(m, s, n) || add_wrapped(m, s, n);
    if (!rc)
        rc = add_byte_forms(m, s, n);
    /* Cores are short (about 4n/3 - 2 characters): for secrets under 8
     * bytes they would collide with ordinary base64 output. */
    if (!rc)
        rc = add_b64_forms(m, s, n, n >= 8);
    /* HTTP Basic: "S:" (S as user, empty password) and ":S". */
    abx_buf_init(&t, 0);
    if (!rc)
        rc = abx_buf_append(&t, s, n) || abx_buf_appendc(&t, ':');
    if (!rc)
        rc = add_b64_forms(m, (unsigned char *)t.data, t.len, 0);
    abx_buf_reset(&t);
    if (!rc)
        rc = abx_buf_appendc(&t, ':') || abx_buf_append(&t, s, n);
    if (!rc)
        rc = add_b64_forms(m, (unsigned char *)t.data, t.len, 0);
    abx_buf_free(&t);
    return rc ? -1 : 0;
}

/* A key with a public prefix ("e2b_", "sk-"): up to 8 letters or digits
 * and '_' or '-', then 16 bytes or more. Length of the prefix, 0 if none. */
static size_t public_prefix(const unsigned char *s, size_t n)
{
    size_t k = 0;

    while (k < n && k <= 8 && ((s[k] >= 'a' && s[k] <= 'z') || (s[k] >= 'A' && s[k] <= 'Z') ||
                               (s[k] >= '0' && s[k] <= '9')))
        k++;
    if (k == 0 || k > 8 || k >= n || (s[k] != '_' && s[k] != '-') || n - k - 1 < 16)
        return 0;
    return k + 1;
}

int abx_mask_add(struct abx_mask *m, const void *secret, size_t len)
{
    unsigned char *copy;
    int rc = 1;

    if (!m || !secret || len < ABX_MASK_MIN_LEN)
        return 1;
    if (len > ABX_MASK_MAX_LEN)
        return -1;
    pthread_rwlock_wrlock(&m->lock);
    if (pattern_known(m->secrets, m->nsecrets, secret, len))
        goto out;
    rc = -1;
    if (ABX_VEC_RESERVE(m->secrets, m->capsecrets, m->nsecrets + 1))
        goto out;
    copy = malloc(len);
    if (!copy)
        goto out;
    memcpy(copy, secret, len);
    m->secrets[m->nsecrets].bytes = copy;
    m->secrets[m->nsecrets].len = len;
    m->nsecrets++;
    /* On out of memory some forms may be missing; the raw form was added
     * first, and the caller learns of the failure. */
    rc = add_forms(m, copy, len);
    /* The part after a public prefix is the secret on its own: masked
     * too when printed apart from it (grep --color splits them). */
    size_t k = public_prefix(copy, len);
    if (!rc && k)
        rc = add_forms(m, copy + k, len - k);
out:
    pthread_rwlock_unlock(&m->lock);
    return rc;
}

int abx_mask_add_str(struct abx_mask *m, const char *secret)
{
    return secret ? abx_mask_add(m, secret, strlen(secret)) : 1;
}

size_t abx_mask_count(struct abx_mask *m)
{
    size_t n;

    pthread_rwlock_rdlock(&m->lock);
    n = m->nsecrets;
    pthread_rwlock_unlock(&m->lock);
    return n;
}

size_t abx_mask_max_form_len(struct abx_mask *m)
{
    size_t n;

    pthread_rwlock_rdlock(&m->lock);
    n = m->maxlen ? m->maxlen + ABX_MASK_NOISE_MAX : 0;
    pthread_rwlock_unlock(&m->lock);
    return n;
}

/* ---- scanning ---------------------------------------------------------- */

/* Longest pattern fully matching at s[p..), 0 if none, -1 if undecided:
 * not final and a longer pattern matches every byte up to the end.
 * Noise (mask_noise.c) after a pattern's first two bytes is part of its
 * match: a line ending in one byte that may start a form is emitted, not
 * held for the next line (add_wrapped covers a break there). */
static long match_at(const struct abx_mask *m, const unsigned char *s,
                     size_t len, size_t p, int final)
{
    const struct bucket *b;
    size_t avail = len - p, i, n, k;
    const struct pattern *pt;
    uint32_t bi;
    long r;

    /* One byte left: every pattern is longer (ABX_MASK_MIN_LEN). */
    if (avail < 2)
        return !final && m->first[s[p]] ? -1 : 0;
    bi = m->bucket_of[(size_t)s[p] << 8 | s[p + 1]];
    if (!bi)
        return 0;
    b = &m->buckets[bi - 1];
    for (i = 0; i < b->n; i++) {
        pt = &m->pats[b->idx[i]];
        n = pt->len < avail ? pt->len : avail;
        for (k = 0; k < n && pt->bytes[k] == s[p + k]; k++)
            ;
        if (k == pt->len)
            return (long)pt->len;
        if (k == avail) {
            if (!final)
                return -1;
        } else if (k >= 2 && abx_mask_noise_first[s[p + k]] &&
                   (r = abx_mask_match_noisy(pt->bytes, pt->len, s, len, p, k, final)) != 0) {
            return r;
        }
    }
    return 0;
}

/* Whether a pattern starts with s[p] (and s[p + 1], when there is one):
 * the scan's filter, inline. */
static inline int may_start(const struct abx_mask *m, const unsigned char *s, size_t len,
                            size_t p)
{
    size_t pi;

    if (!m->first[s[p]])
        return 0;
    if (p + 1 >= len)
        return 1;
    pi = (size_t)s[p] << 8 | s[p + 1];
    return (m->pair[pi >> 3] >> (pi & 7)) & 1;
}

/* Masks s[0..len) into out. Returns the number of bytes consumed (the
 * rest must be held back and rescanned with more data), or -1 if out is
 * full. With final set everything is consumed. */
static long scan(const struct abx_mask *m, const unsigned char *s,
                 size_t len, int final, struct abx_buf *out)
{
    size_t p = 0, done = 0, e, q;
    long r, r2;

    while (p < len) {
        if (!may_start(m, s, len, p)) {
            p++;
            continue;
        }
        r = match_at(m, s, len, p, final);
        if (r == 0) {
            p++;
            continue;
        }
        if (r < 0)
            break;
        /* Merge any match that starts inside this one and ends past it,
         * so no fragment of an overlapping secret survives. */
        e = p + (size_t)r;
        for (q = p + 1; q < e; q++) {
            if (!may_start(m, s, len, q))
                continue;
            r2 = match_at(m, s, len, q, final);
            if (r2 < 0 && q - p > MASK_CHAIN_LIMIT) {
                /* [p, q) is covered by matches already; hold from q. */
                if (abx_buf_append(out, s + done, p - done) ||
                    abx_buf_append(out, marker, sizeof(marker) - 1))
                    return -1;
                p = done = q;
                goto hold;
            }
            if (r2 < 0)
                goto hold;
            if (q + (size_t)r2 > e)
                e = q + (size_t)r2;
        }
        if (abx_buf_append(out, s + done, p - done) ||
            abx_buf_append(out, marker, sizeof(marker) - 1))
            return -1;
        p = done = e;
    }
hold:
    if (abx_buf_append(out, s + done, p - done))
        return -1;
    return (long)p;
}

int abx_mask_string(struct abx_mask *m, const void *in, size_t len,
                    struct abx_buf *out)
{
    long r;

    if (!m)
        return -1;  /* never emit unmasked data */
    pthread_rwlock_rdlock(&m->lock);
    r = scan(m, in, len, 1, out);
    pthread_rwlock_unlock(&m->lock);
    return r < 0 ? -1 : 0;
}

void abx_mask_stream_init(struct abx_mask_stream *s, struct abx_mask *m)
{
    s->m = m;
    abx_buf_init(&s->pending, 0);
}

void abx_mask_stream_free(struct abx_mask_stream *s)
{
    abx_buf_free(&s->pending);
}

static int stream_scan(struct abx_mask_stream *s, const void *data,
                       size_t len, int final, struct abx_buf *out)
{
    const unsigned char *p = data;
    long r;

    if (!s->m)
        return -1;
    /* Scan the new data in place when nothing is held back (the common
     * case); otherwise join it to the held tail first. */
    if (s->pending.len) {
        if (abx_buf_append(&s->pending, data, len))
            return -1;
        p = (const unsigned char *)s->pending.data;
        len = s->pending.len;
    }
    pthread_rwlock_rdlock(&s->m->lock);
    r = scan(s->m, p, len, final, out);
    pthread_rwlock_unlock(&s->m->lock);
    if (r < 0)
        return -1;
    if (s->pending.len) {
        abx_buf_consume(&s->pending, (size_t)r);
        return 0;
    }
    return abx_buf_append(&s->pending, p + r, len - (size_t)r);
}

int abx_mask_stream_write(struct abx_mask_stream *s, const void *data,
                          size_t len, struct abx_buf *out)
{
    return stream_scan(s, data, len, 0, out);
}

int abx_mask_stream_flush(struct abx_mask_stream *s, struct abx_buf *out)
{
    int rc = stream_scan(s, "", 0, 1, out);

    abx_buf_reset(&s->pending);
    return rc;
}
