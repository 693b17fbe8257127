/* The masker: every derived form, split writes at every offset,
 * overlapping and short secrets, binary data, concurrency. */
#include "b64.h"
#include "check.h"
#include "escape.h"
#include "mask.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#define M ABX_MASK_MARKER
#define EXPECT_LIT(m, lit, what) expect_form(m, lit, sizeof(lit) - 1, what)

/* One-shot masking of a C string into a static result. */
static const char *mask1(struct abx_mask *m, const char *s, size_t n)
{
    static struct abx_buf out;

    abx_buf_free(&out);
    abx_buf_init(&out, 0);
    CHECK_INT(abx_mask_string(m, s, n, &out), 0);
    return abx_buf_cstr(&out);
}

static const char *mask_s(struct abx_mask *m, const char *s)
{
    return mask1(m, s, strlen(s));
}

/* "pre <form> post" must become "pre [MASKED] post". */
static void expect_form(struct abx_mask *m, const char *form, size_t n,
                        const char *what)
{
    struct abx_buf in;
    const char *got;

    abx_buf_init(&in, 0);
    MUST(abx_buf_appends(&in, "pre "));
    MUST(abx_buf_append(&in, form, n));
    MUST(abx_buf_appends(&in, " post"));
    got = mask1(m, in.data, in.len);
    CHECK_MSG(strcmp(got, "pre " M " post") == 0,
              "form %s not masked: got \"%s\"", what, got);
    abx_buf_free(&in);
}

static void expect_b64(struct abx_mask *m, const void *s, size_t n,
                       unsigned flags, const char *what)
{
    struct abx_buf b;

    abx_buf_init(&b, 0);
    CHECK_INT(abx_b64_encode(s, n, flags, &b), 0);
    expect_form(m, b.data, b.len, what);
    abx_buf_free(&b);
}

static void all_b64(struct abx_mask *m, const void *s, size_t n,
                    const char *what)
{
    expect_b64(m, s, n, 0, what);
    expect_b64(m, s, n, ABX_B64_NO_PAD, what);
    expect_b64(m, s, n, ABX_B64_URL, what);
    expect_b64(m, s, n, ABX_B64_URL | ABX_B64_NO_PAD, what);
}

static void test_b64_vectors(void)
{
    struct abx_buf b;

    abx_buf_init(&b, 0);
    abx_b64_encode("foobar", 6, 0, &b);
    CHECK_STR(abx_buf_cstr(&b), "Zm9vYmFy");
    abx_buf_reset(&b);
    abx_b64_encode("fo", 2, 0, &b);
    CHECK_STR(abx_buf_cstr(&b), "Zm8=");
    abx_buf_reset(&b);
    abx_b64_encode("fo", 2, ABX_B64_NO_PAD, &b);
    CHECK_STR(abx_buf_cstr(&b), "Zm8");
    abx_buf_reset(&b);
    abx_b64_encode("\xfb\xff", 2, ABX_B64_URL, &b);
    CHECK_STR(abx_buf_cstr(&b), "-_8=");
    abx_buf_reset(&b);
    abx_b64_encode("\xfb\xff", 2, 0, &b);
    CHECK_STR(abx_buf_cstr(&b), "+/8=");
    abx_buf_reset(&b);
    CHECK_INT(abx_b64_decode("Zm8", 3, &b), 0);
    CHECK_STR(abx_buf_cstr(&b), "fo");
    abx_buf_reset(&b);
    CHECK_INT(abx_b64_decode("-_8=", 4, &b), 0);
    CHECK(b.len == 2 && (unsigned char)b.data[0] == 0xfb);
    abx_buf_reset(&b);
    CHECK_INT(abx_b64_decode("Zm9vYmFy", 8, &b), 0);
    CHECK_STR(abx_buf_cstr(&b), "foobar");
    abx_buf_reset(&b);
    CHECK_INT(abx_b64_decode("", 0, &b), 0);
    CHECK_INT(abx_b64_decode("Z", 1, &b), -1);
    CHECK_INT(abx_b64_decode("Zm 9v", 5, &b), -1);
    CHECK_INT(abx_b64_decode("Zm=8", 4, &b), -1);
    CHECK_INT(abx_b64_decode("Zm8===", 6, &b), -1);
    CHECK_INT(abx_b64_decode("Zm8*", 4, &b), -1);
    abx_buf_free(&b);
}

static void test_forms_plain(void)
{
    static const char key[] = "e2b_0123456789abcdef0123";
    struct abx_mask *m = abx_mask_new();
    char tmp[256];

    CHECK(m != NULL);
    CHECK_INT(abx_mask_add_str(m, key), 0);
    CHECK_INT(abx_mask_add_str(m, key), 1);  /* known already */
    CHECK_INT((int)abx_mask_count(m), 1);
    expect_form(m, key, strlen(key), "raw");
    all_b64(m, key, strlen(key), "b64");
    snprintf(tmp, sizeof(tmp), "%s:", key);
    all_b64(m, tmp, strlen(tmp), "basic user");
    snprintf(tmp, sizeof(tmp), ":%s", key);
    all_b64(m, tmp, strlen(tmp), "basic password");
    CHECK_STR(mask_s(m, "Authorization: Bearer e2b_0123456789abcdef0123\r\n"),
              "Authorization: Bearer " M "\r\n");
    CHECK_STR(mask_s(m, "X-API-KEY: e2b_0123456789abcdef0123"),
              "X-API-KEY: " M);
    /* several occurrences, adjacent ones too */
    CHECK_STR(mask_s(m, "e2b_0123456789abcdef0123e2b_0123456789abcdef0123 "
                        "and e2b_0123456789abcdef0123"),
              M M " and " M);
    /* almost-secrets stay */
    CHECK_STR(mask_s(m, "e2b_0123456789abcdef012"), "e2b_0123456789abcdef012");
    CHECK_STR(mask_s(m, ""), "");
    /* secret inside a longer base64 value, e.g. Basic base64("user:KEY"):
     * nothing but <= 2 edge characters of the key's encoding remains. */
    {
        struct abx_buf b, k;
        const char *got;

        abx_buf_init(&b, 0);
        abx_buf_init(&k, 0);
        snprintf(tmp, sizeof(tmp), "user1:%s", key);
        abx_b64_encode(tmp, strlen(tmp), 0, &b);
        abx_b64_encode(key, strlen(key), ABX_B64_NO_PAD, &k);
        got = mask1(m, b.data, b.len);
        CHECK(strstr(got, M) != NULL);
        /* the middle of base64(key) cannot appear in any alignment */
        CHECK(strlen(got) <= strlen(M) + 12);
        abx_buf_free(&b);
        abx_buf_free(&k);
    }
    abx_mask_free(m);
}

static void test_forms_special(void)
{
    /* '/', ' ', '"', '\\', a control byte, '+', '<', and UTF-8 "é". */
    static const char s[] = "p/w d\"q\\\x01+<\xc3\xa9z";
    struct abx_mask *m = abx_mask_new();
    char *js;
    cJSON *str;

    CHECK_INT(abx_mask_add_str(m, s), 0);
    expect_form(m, s, strlen(s), "raw");
    all_b64(m, s, strlen(s), "b64");
    EXPECT_LIT(m, "p%2Fw%20d%22q%5C%01%2B%3C%C3%A9z",
               "pct upper");
    EXPECT_LIT(m, "p%2fw%20d%22q%5c%01%2b%3c%c3%a9z",
               "pct lower");
    EXPECT_LIT(m, "p%2Fw+d%22q%5C%01%2B%3C%C3%A9z",
               "form upper");
    EXPECT_LIT(m, "p%2fw+d%22q%5c%01%2b%3c%c3%a9z",
               "form lower");
    /* exactly what cJSON writes, without the surrounding quotes */
    str = cJSON_CreateString(s);
    js = cJSON_PrintUnformatted(str);
    CHECK(js && strlen(js) > 2);
    expect_form(m, js + 1, strlen(js) - 2, "cJSON");
    cJSON_free(js);
    cJSON_Delete(str);
    EXPECT_LIT(m, "p/w d\\\"q\\\\\\u0001+<\xc3\xa9z",
               "json min");
    EXPECT_LIT(m, "p\\/w d\\\"q\\\\\\u0001+<\xc3\xa9z",
               "json slash");
    EXPECT_LIT(m, "p\\/w d\\\"q\\\\\\u0001+\\u003c\\u00e9z",
               "json ascii+html");
    EXPECT_LIT(m, "p/w d\\\"q\\\\\\u0001+<\\u00E9z",
               "json ascii upper");
    abx_mask_free(m);
}

static void test_control_chars(void)
{
    static const char s[] = "ab\ncd\tef\x1f";
    struct abx_mask *m = abx_mask_new();

    CHECK_INT(abx_mask_add_str(m, s), 0);
    EXPECT_LIT(m, "ab\\ncd\\tef\\u001f",
               "json named");
    EXPECT_LIT(m, "ab\\ncd\\tef\\u001F",
               "json upper");
    EXPECT_LIT(m, "ab%0Acd%09ef%1F",
               "pct");
    abx_mask_free(m);
}

static void test_short_and_bad(void)
{
    struct abx_mask *m = abx_mask_new();
    char big[ABX_MASK_MAX_LEN + 2];

    CHECK_INT(abx_mask_add_str(m, "abc"), 1);
    CHECK_INT(abx_mask_add_str(m, ""), 1);
    CHECK_INT(abx_mask_add_str(m, NULL), 1);
    CHECK_INT(abx_mask_add(m, NULL, 10), 1);
    CHECK_INT(abx_mask_add(NULL, "abcdef", 6), 1);
    CHECK_INT((int)abx_mask_count(m), 0);
    CHECK_INT((int)abx_mask_max_form_len(m), 0);
    CHECK_STR(mask_s(m, "abc abcd"), "abc abcd");
    memset(big, 'x', sizeof(big));
    CHECK_INT(abx_mask_add(m, big, ABX_MASK_MAX_LEN + 1), -1);
    CHECK_INT(abx_mask_add_str(m, "abcd"), 0);  /* 4 bytes is enough */
    CHECK_STR(mask_s(m, "abc abcd abcde"), "abc " M " " M "e");
    CHECK(abx_mask_max_form_len(m) >= 4);
    {
        struct abx_buf o;

        abx_buf_init(&o, 0);
        CHECK_INT(abx_mask_string(NULL, "x", 1, &o), -1);
        CHECK_INT((int)o.len, 0);
        abx_buf_free(&o);
    }
    abx_mask_free(m);
    abx_mask_free(NULL);
}

static void test_overlap(void)
{
    struct abx_mask *m = abx_mask_new();

    /* prefix: the longer secret wins, no tail left */
    abx_mask_add_str(m, "tok_AAAA");
    abx_mask_add_str(m, "tok_AAAA_BBBB");
    CHECK_STR(mask_s(m, "x tok_AAAA_BBBB y"), "x " M " y");
    CHECK_STR(mask_s(m, "x tok_AAAA_BBB y"), "x " M "_BBB y");
    /* substring in the middle */
    abx_mask_add_str(m, "QQQQ");
    abx_mask_add_str(m, "zzQQQQzz");
    CHECK_STR(mask_s(m, "zzQQQQzz|QQQQ|zQQQQz"), M "|" M "|z" M "z");
    /* partial overlap: suffix of one is a prefix of the other */
    abx_mask_add_str(m, "left-SHARED");
    abx_mask_add_str(m, "SHARED-right");
    CHECK_STR(mask_s(m, "<left-SHARED-right>"), "<" M ">");
    /* chained overlaps merge into one marker */
    abx_mask_add_str(m, "right-more");
    CHECK_STR(mask_s(m, "<left-SHARED-right-more>"), "<" M ">");
    abx_mask_free(m);
}

/* Stream text in two pieces at every split and in single bytes: output
 * must equal the one-shot result. */
static void check_splits(struct abx_mask *m, const char *text, size_t n)
{
    struct abx_mask_stream st;
    struct abx_buf ref, o;
    size_t i, j;
    int bad = 0;

    abx_buf_init(&ref, 0);
    abx_buf_init(&o, 0);
    abx_mask_string(m, text, n, &ref);
    for (i = 0; i <= n; i++) {
        abx_buf_reset(&o);
        abx_mask_stream_init(&st, m);
        CHECK_INT(abx_mask_stream_write(&st, text, i, &o), 0);
        CHECK_INT(abx_mask_stream_write(&st, text + i, n - i, &o), 0);
        CHECK_INT(abx_mask_stream_flush(&st, &o), 0);
        abx_mask_stream_free(&st);
        if (o.len != ref.len || memcmp(o.data, ref.data, o.len)) {
            if (!bad++)
                fprintf(stderr, "split at %zu: \"%s\" vs \"%s\"\n", i,
                        abx_buf_cstr(&o), abx_buf_cstr(&ref));
        }
    }
    /* three pieces, every pair of cut points (short texts only) */
    for (i = 0; n <= 120 && i <= n; i++)
        for (j = i; j <= n; j++) {
            abx_buf_reset(&o);
            abx_mask_stream_init(&st, m);
            abx_mask_stream_write(&st, text, i, &o);
            abx_mask_stream_write(&st, text + i, j - i, &o);
            abx_mask_stream_write(&st, text + j, n - j, &o);
            abx_mask_stream_flush(&st, &o);
            abx_mask_stream_free(&st);
            if (o.len != ref.len || memcmp(o.data, ref.data, o.len))
                bad++;
        }
    abx_buf_reset(&o);
    abx_mask_stream_init(&st, m);
    for (i = 0; i < n; i++)
        abx_mask_stream_write(&st, text + i, 1, &o);
    abx_mask_stream_flush(&st, &o);
    abx_mask_stream_free(&st);
    if (o.len != ref.len || memcmp(o.data, ref.data, o.len))
        bad++;
    CHECK_INT(bad, 0);
    abx_buf_free(&ref);
    abx_buf_free(&o);
}

static void test_streaming(void)
{
    static const char key[] = "e2b_0123456789abcdef0123";
    struct abx_mask *m = abx_mask_new();
    struct abx_mask_stream st;
    struct abx_buf o, b;
    char text[512];

    abx_mask_add_str(m, key);
    abx_mask_add_str(m, "tok_AAAA");
    abx_mask_add_str(m, "tok_AAAA_BBBB");
    abx_mask_add_str(m, "left-SHARED");
    abx_mask_add_str(m, "SHARED-right");
    snprintf(text, sizeof(text), "key=%s;%s\n", key, key);
    check_splits(m, text, strlen(text));
    CHECK(strstr(mask_s(m, text), "e2b_") == NULL);
    check_splits(m, "a tok_AAAA_BBBB tok_AAAA_BBX <left-SHARED-right>", 47);
    abx_buf_init(&b, 0);
    abx_b64_encode(key, strlen(key), 0, &b);
    snprintf(text, sizeof(text), "Basic %s\n", b.data);
    check_splits(m, text, strlen(text));
    abx_buf_free(&b);
    /* a secret at the very end of the stream, unterminated */
    check_splits(m, key, strlen(key));

    /* only a possible prefix of a form is held back */
    abx_buf_init(&o, 0);
    abx_mask_stream_init(&st, m);
    CHECK_INT(abx_mask_stream_write(&st, "line one\n", 9, &o), 0);
    CHECK_STR(abx_buf_cstr(&o), "line one\n");
    CHECK_INT(abx_mask_stream_write(&st, "now e2b_01", 10, &o), 0);
    CHECK_STR(abx_buf_cstr(&o), "line one\nnow ");
    CHECK_INT(abx_mask_stream_write(&st, "X", 1, &o), 0);
    CHECK_STR(abx_buf_cstr(&o), "line one\nnow e2b_01X");
    CHECK_INT(abx_mask_stream_write(&st, "e2b_0123", 8, &o), 0);
    CHECK_INT(abx_mask_stream_flush(&st, &o), 0);
    CHECK_STR(abx_buf_cstr(&o), "line one\nnow e2b_01Xe2b_0123");
    /* a stream stays usable after a flush */
    CHECK_INT(abx_mask_stream_write(&st, key, 10, &o), 0);
    CHECK_INT(abx_mask_stream_write(&st, key + 10, strlen(key) - 10, &o), 0);
    CHECK_INT(abx_mask_stream_flush(&st, &o), 0);
    CHECK_STR(abx_buf_cstr(&o), "line one\nnow e2b_01Xe2b_0123" M);
    abx_mask_stream_free(&st);
    abx_buf_free(&o);
    abx_mask_free(m);
}

/* Random secrets embedded in random text, fed in random pieces: the
 * stream equals the one-shot result and no raw secret survives. */
static void test_random(void)
{
    static const char alpha[] = "ab/+= e2_\"\\\n";
    unsigned x = 777;
    int iter, bad = 0;

#define RND() (x = x * 1103515245u + 12345u, (x >> 16) & 0x7fff)
    for (iter = 0; iter < 300; iter++) {
        struct abx_mask *m = abx_mask_new();
        struct abx_mask_stream st;
        struct abx_buf text, ref, o;
        char sec[3][16];
        size_t i, j, off;

        abx_buf_init(&text, 0);
        abx_buf_init(&ref, 0);
        abx_buf_init(&o, 0);
        for (i = 0; i < 3; i++) {
            size_t n = 4 + RND() % 10;

            for (j = 0; j < n; j++)
                sec[i][j] = alpha[RND() % (sizeof(alpha) - 1)];
            sec[i][n] = '\0';
            abx_mask_add_str(m, sec[i]);
        }
        for (i = 0; i < 40; i++) {
            if (RND() % 4 == 0)
                MUST(abx_buf_appends(&text, sec[RND() % 3]));
            else
                MUST(abx_buf_appendc(&text, alpha[RND() % (sizeof(alpha) - 1)]));
        }
        abx_mask_string(m, text.data, text.len, &ref);
        abx_mask_stream_init(&st, m);
        for (off = 0; off < text.len; off += j) {
            j = 1 + RND() % 7;
            if (j > text.len - off)
                j = text.len - off;
            abx_mask_stream_write(&st, text.data + off, j, &o);
        }
        abx_mask_stream_flush(&st, &o);
        abx_mask_stream_free(&st);
        if (o.len != ref.len || memcmp(o.data, ref.data, o.len))
            bad++;
        for (i = 0; i < 3; i++)
            if (strstr(abx_buf_cstr(&ref), sec[i]))
                bad++;
        abx_buf_free(&text);
        abx_buf_free(&ref);
        abx_buf_free(&o);
        abx_mask_free(m);
    }
#undef RND
    CHECK_INT(bad, 0);
}

/* A run of a repeated secret arriving in small writes: bounded holding,
 * and no byte of the run escapes. */
static void test_chain_limit(void)
{
    struct abx_mask *m = abx_mask_new();
    struct abx_mask_stream st;
    struct abx_buf o;
    char chunk[1000];
    size_t i, maxpend = 0;

    abx_mask_add_str(m, "aaaa");
    memset(chunk, 'a', sizeof(chunk));
    abx_buf_init(&o, 0);
    abx_mask_stream_init(&st, m);
    CHECK_INT(abx_mask_stream_write(&st, "x", 1, &o), 0);
    for (i = 0; i < 500; i++) {
        CHECK_INT(abx_mask_stream_write(&st, chunk, sizeof(chunk), &o), 0);
        if (st.pending.len > maxpend)
            maxpend = st.pending.len;
    }
    CHECK_INT(abx_mask_stream_write(&st, "y", 1, &o), 0);
    CHECK_INT(abx_mask_stream_flush(&st, &o), 0);
    CHECK(maxpend < 80 * 1024);
    CHECK(o.len > 2 && o.data[0] == 'x' && o.data[o.len - 1] == 'y');
    CHECK(memchr(o.data + 1, 'a', o.len - 2) == NULL);
    CHECK(strstr(o.data, M M) != NULL);  /* split into several markers */
    abx_mask_stream_free(&st);
    abx_buf_free(&o);
    abx_mask_free(m);
}

static void test_binary(void)
{
    static const char sec[] = "\x00\xff\x10secret\x00\x80";
    const size_t sn = sizeof(sec) - 1, n = 1 << 20;
    struct abx_mask *m = abx_mask_new();
    unsigned char *data = malloc(n);
    struct abx_buf o;
    size_t i;
    unsigned x = 12345;

    CHECK_INT(abx_mask_add(m, sec, sn), 0);
    for (i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = (unsigned char)(x >> 16);
    }
    abx_buf_init(&o, 0);
    CHECK_INT(abx_mask_string(m, data, n, &o), 0);
    CHECK(o.len == n && !memcmp(o.data, data, n));  /* nothing to mask */
    memcpy(data + 1000, sec, sn);
    memcpy(data + n - sn, sec, sn);
    abx_buf_reset(&o);
    CHECK_INT(abx_mask_string(m, data, n, &o), 0);
    CHECK_INT((long)o.len, (long)(n - 2 * sn + 2 * strlen(M)));
    CHECK(!memcmp(o.data + 1000, M, strlen(M)));
    CHECK(memmem(o.data, o.len, sec, sn) == NULL);
    check_splits(m, (const char *)data + 990, 30);
    abx_buf_free(&o);
    free(data);
    abx_mask_free(m);
}

/* Secrets added while other threads mask (run under TSan/ASan in CI). */
static void *masker_thread(void *arg)
{
    struct abx_mask *m = arg;
    struct abx_buf o;
    int i;

    abx_buf_init(&o, 0);
    for (i = 0; i < 2000; i++) {
        abx_buf_reset(&o);
        abx_mask_string(m, "some output with tok_thread_1 inside", 36, &o);
    }
    abx_buf_free(&o);
    return NULL;
}

static void test_threads(void)
{
    struct abx_mask *m = abx_mask_new();
    pthread_t t[2];
    char s[32];
    int i;

    pthread_create(&t[0], NULL, masker_thread, m);
    pthread_create(&t[1], NULL, masker_thread, m);
    for (i = 0; i < 50; i++) {
        snprintf(s, sizeof(s), "tok_thread_%d", i);
        abx_mask_add_str(m, s);
    }
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    CHECK_INT((int)abx_mask_count(m), 50);
    CHECK_STR(mask_s(m, "x tok_thread_1 y"), "x " M " y");
    abx_mask_free(m);
}

/* Forms a sandbox can write that spell every byte of the key: hex in
 * either case, %XX for every byte, \u00XX for every byte, and the JSON
 * string of such a form (\\u00..). */
static void test_byte_forms(void)
{
    static const char key[] = "e2b_0123456789abcdef0123";
    static const struct {
        const char *prefix;
        int upper;
    } forms[] = {{"", 0}, {"", 1}, {"%", 1}, {"%", 0}, {"\\u00", 0}, {"\\u00", 1},
                 {"\\\\u00", 0}};
    struct abx_mask *m = abx_mask_new();

    CHECK(m != NULL);
    CHECK_INT(abx_mask_add_str(m, key), 0);
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        const char *dig = forms[f].upper ? "0123456789ABCDEF" : "0123456789abcdef";
        struct abx_buf b;

        abx_buf_init(&b, 0);
        for (size_t i = 0; i < strlen(key); i++) {
            unsigned char c = (unsigned char)key[i];
            char two[2] = {dig[c >> 4], dig[c & 15]};

            MUST(abx_buf_appends(&b, forms[f].prefix));
            MUST(abx_buf_append(&b, two, 2));
        }
        expect_form(m, b.data, b.len, forms[f].prefix);
        abx_buf_free(&b);
    }
    /* a hex dump of other bytes stays */
    CHECK_STR(mask_s(m, "6532625f30313233"), "6532625f30313233");
    abx_mask_free(m);
}

/* ---- what tools print by accident ------------------------------------- */

static const char akey[] = "e2b_0123456789abcdef0123456789abcdef01234567";

/* out without line breaks and ANSI CSI sequences. */
static void strip_noise(const char *in, struct abx_buf *out)
{
    abx_buf_reset(out);
    for (size_t i = 0; in[i]; i++) {
        if (in[i] == '\n' || in[i] == '\r')
            continue;
        if (in[i] == 0x1b && in[i + 1] == '[') {
            for (i += 2; in[i] && !(in[i] >= 0x40 && in[i] <= 0x7e); i++)
                ;
            if (!in[i])
                break;
            continue;
        }
        MUST(abx_buf_appendc(out, in[i]));
    }
}

/* text masked holds a marker, and none of needle, even with its noise
 * taken out; keep (if any) survives. */
static void expect_gone(struct abx_mask *m, const char *text, const char *needle,
                        const char *keep, const char *what)
{
    struct abx_buf flat;
    const char *got = mask_s(m, text);

    abx_buf_init(&flat, 0);
    strip_noise(got, &flat);
    CHECK_MSG(strstr(got, M) != NULL && strstr(abx_buf_cstr(&flat), needle) == NULL,
              "%s: not masked: \"%s\"", what, got);
    CHECK_MSG(!keep || strstr(got, keep) != NULL, "%s: \"%s\" lost: \"%s\"", what,
              keep ? keep : "", got);
    abx_buf_free(&flat);
}

/* s with sep inserted every width bytes (fold -w, base64 -w, xxd -p). */
static void wrap(const char *s, size_t width, const char *sep, struct abx_buf *out)
{
    abx_buf_reset(out);
    for (size_t i = 0; s[i]; i++) {
        if (i && i % width == 0)
            MUST(abx_buf_appends(out, sep));
        MUST(abx_buf_appendc(out, s[i]));
    }
}

static void hex_of(const char *s, const char *sep, struct abx_buf *out)
{
    static const char dig[] = "0123456789abcdef";

    abx_buf_reset(out);
    for (size_t i = 0; s[i]; i++) {
        char two[2] = {dig[(unsigned char)s[i] >> 4], dig[s[i] & 15]};

        if (i)
            MUST(abx_buf_appends(out, sep));
        MUST(abx_buf_append(out, two, 2));
    }
}

/* env | base64 (76 columns), base64 -w 20: the key after 0, 1 and 2
 * bytes of its line, so at each of base64's three alignments. */
static void test_wrapped_base64(struct abx_mask *m)
{
    static const char *const before[] = {"HOME=/root\nE2B_API_KEY=", "X\nKEY=", "KEY="};
    struct abx_buf text, enc, wrapped, core;

    abx_buf_init(&text, 0);
    abx_buf_init(&enc, 0);
    abx_buf_init(&wrapped, 0);
    abx_buf_init(&core, 0);
    for (size_t b = 0; b < 3; b++) {
        size_t off = strlen(before[b]), from, to;

        abx_buf_reset(&text);
        MUST(abx_buf_appends(&text, before[b]));
        MUST(abx_buf_appends(&text, akey));
        MUST(abx_buf_appends(&text, "\nPATH=/usr/bin\n"));
        abx_buf_reset(&enc);
        CHECK_INT(abx_b64_encode(text.data, text.len, 0, &enc), 0);
        abx_buf_cstr(&enc);
        /* The characters that carry the key's bytes alone. */
        from = (8 * off + 5) / 6;
        to = 8 * (off + strlen(akey)) / 6;
        abx_buf_reset(&core);
        MUST(abx_buf_append(&core, enc.data + from + (to - from) / 2 - 8, 16));
        for (size_t w = 0; w < 3; w++) {
            size_t width = w == 0 ? 76 : w == 1 ? 20 : 7;

            wrap(enc.data, width, "\n", &wrapped);
            expect_gone(m, abx_buf_cstr(&wrapped), abx_buf_cstr(&core), NULL, "wrapped base64");
        }
    }
    abx_buf_free(&text);
    abx_buf_free(&enc);
    abx_buf_free(&wrapped);
    abx_buf_free(&core);
}

static void test_accidental(void)
{
    struct abx_mask *m = abx_mask_new();
    struct abx_buf a, b;
    char line[256];

    CHECK(m != NULL);
    CHECK_INT(abx_mask_add_str(m, akey), 0);
    CHECK_INT((int)abx_mask_count(m), 1);
    abx_buf_init(&a, 0);
    abx_buf_init(&b, 0);
    test_wrapped_base64(m);
    /* xxd -p: plain hex, 60 columns */
    hex_of(akey, "", &a);
    wrap(abx_buf_cstr(&a), 60, "\n", &b);
    expect_gone(m, abx_buf_cstr(&b), "6162636465663031", NULL, "xxd -p");
    /* od -An -tx1 (16 bytes a line, each line led by a space), colon and
     * space separated hex, upper case too */
    abx_buf_reset(&a);
    for (size_t i = 0; akey[i]; i++) {
        snprintf(line, sizeof line, " %02x%s", (unsigned char)akey[i],
                 i % 16 == 15 || !akey[i + 1] ? "\n" : "");
        MUST(abx_buf_appends(&a, line));
    }
    expect_gone(m, abx_buf_cstr(&a), "61 62 63 64 65 66", NULL, "od -An -tx1");
    hex_of(akey, ":", &a);
    expect_gone(m, abx_buf_cstr(&a), "61:62:63:64", NULL, "colon-separated hex");
    for (size_t i = 0; i < a.len; i++)
        if (a.data[i] >= 'a' && a.data[i] <= 'f')
            a.data[i] = (char)(a.data[i] - 'a' + 'A');
    expect_gone(m, abx_buf_cstr(&a), "61:62:63:64", NULL, "upper-case colon-separated hex");
    /* \xNN */
    hex_of(akey, "\\x", &a);
    abx_buf_reset(&b);
    MUST(abx_buf_appends(&b, "printf '\\x"));
    MUST(abx_buf_appends(&b, abx_buf_cstr(&a)));
    MUST(abx_buf_appends(&b, "'"));
    expect_gone(m, abx_buf_cstr(&b), "\\x61\\x62\\x63", "printf '", "\\xNN escapes");
    /* fold -w 16, and CR LF line ends */
    wrap(akey, 16, "\n", &a);
    expect_gone(m, abx_buf_cstr(&a), "0123456789ab", NULL, "fold -w 16");
    wrap(akey, 10, "\r\n", &a);
    expect_gone(m, abx_buf_cstr(&a), "0123456789", NULL, "CRLF every 10");
    /* grep --color=always e2b_: the prefix coloured apart */
    snprintf(line, sizeof line, "E2B_API_KEY=\x1b[01;31m\x1b[Ke2b_\x1b[m\x1b[K%s", akey + 4);
    expect_gone(m, line, "0123456789abcdef", "E2B_API_KEY=", "grep --color");
    /* the secret part alone, after the public prefix */
    snprintf(line, sizeof line, "token %s.", akey + 4);
    CHECK_STR(mask_s(m, line), "token " M ".");
    /* an ANSI code that is not CSI, or a line break before the start,
     * changes nothing; the public prefix alone stays */
    CHECK_STR(mask_s(m, "e2b_\n"), "e2b_\n");
    CHECK_STR(mask_s(m, "\x1b]0;e2b_title\x07"), "\x1b]0;e2b_title\x07");
    abx_buf_free(&a);
    abx_buf_free(&b);
    abx_mask_free(m);
}

/* Split writes of noisy forms: a stream decides them as a whole. */
static void test_accidental_stream(void)
{
    struct abx_mask *m = abx_mask_new();
    struct abx_buf a, out;
    struct abx_mask_stream st;

    CHECK(m != NULL);
    CHECK_INT(abx_mask_add_str(m, akey), 0);
    abx_buf_init(&a, 0);
    abx_buf_init(&out, 0);
    hex_of(akey, "", &a);
    {
        struct abx_buf w;

        abx_buf_init(&w, 0);
        wrap(abx_buf_cstr(&a), 30, "\n", &w);
        abx_buf_reset(&a);
        MUST(abx_buf_appends(&a, "dump:\n"));
        MUST(abx_buf_appends(&a, abx_buf_cstr(&w)));
        MUST(abx_buf_appends(&a, "\nend\n"));
        abx_buf_free(&w);
    }
    for (size_t cut = 1; cut < a.len; cut++) {
        abx_buf_reset(&out);
        abx_mask_stream_init(&st, m);
        CHECK_INT(abx_mask_stream_write(&st, a.data, cut, &out), 0);
        CHECK_INT(abx_mask_stream_write(&st, a.data + cut, a.len - cut, &out), 0);
        CHECK_INT(abx_mask_stream_flush(&st, &out), 0);
        CHECK_MSG(strcmp(abx_buf_cstr(&out), "dump:\n" M "\nend\n") == 0,
                  "split at %zu: \"%s\"", cut, abx_buf_cstr(&out));
        abx_mask_stream_free(&st);
    }
    abx_buf_free(&a);
    abx_buf_free(&out);
    abx_mask_free(m);
}

/* A hex dump of text as xxd (kind 0), hexdump -C (1) or od -tx1 (2)
 * print it: offset column, bytes, text column. */
static void dump_of(const char *text, int kind, struct abx_buf *out)
{
    size_t n = strlen(text);
    char cell[32];

    abx_buf_reset(out);
    for (size_t at = 0; at < n; at += 16) {
        size_t k = n - at < 16 ? n - at : 16;

        snprintf(cell, sizeof cell, kind == 0 ? "%08zx:" : kind == 1 ? "%08zx " : "%07zo", at);
        MUST(abx_buf_appends(out, cell));
        for (size_t i = 0; i < 16; i++) {
            unsigned char c = (unsigned char)text[at + i];

            if (kind == 0)
                snprintf(cell, sizeof cell, i < k ? "%s%02x" : "%s  ", i % 2 ? "" : " ", c);
            else if (kind == 1)
                snprintf(cell, sizeof cell, i < k ? "%s %02x" : "%s   ", i == 8 ? " " : "", c);
            else
                snprintf(cell, sizeof cell, i < k ? " %02x" : "", c);
            MUST(abx_buf_appends(out, cell));
        }
        if (kind != 2) {
            MUST(abx_buf_appends(out, kind == 0 ? "  " : "  |"));
            for (size_t i = 0; i < k; i++) {
                char c = text[at + i];

                MUST(abx_buf_appendc(out, c >= 32 && c < 127 ? c : '.'));
            }
            MUST(abx_buf_appends(out, kind == 0 ? "" : "|"));
        }
        MUST(abx_buf_appendc(out, '\n'));
    }
}

/* The bytes a dump's data columns still spell (a masked stretch ends
 * them: its tokens are not hex). */
static void undump(const char *d, int kind, struct abx_buf *out)
{
    abx_buf_reset(out);
    for (const char *line = d; *line;) {
        const char *end = strchr(line, '\n'), *p = strchr(line, kind == 0 ? ':' : ' ');

        end = end ? end : line + strlen(line);
        while (p && p < end && *p && *p != '|') {
            unsigned v;
            int used = 0;

            p += strspn(p, ": ");
            if (kind == 0 && p[0] == ' ')   /* two spaces: the text column */
                break;
            if (p >= end || sscanf(p, "%2x%n", &v, &used) != 1 || used != 2) {
                p += strcspn(p, " \n");
                if (kind == 0 && *p == ' ' && p[1] == ' ')
                    break;
                continue;
            }
            MUST(abx_buf_appendc(out, (char)v));
            p += 2;
            if (kind == 0 && sscanf(p, "%2x%n", &v, &used) == 1 && used == 2) {
                MUST(abx_buf_appendc(out, (char)v));
                p += 2;
            }
            if (kind == 0 && p[0] == ' ' && p[1] == ' ')
                break;
        }
        line = *end ? end + 1 : end;
    }
}

/* xxd, hexdump -C, od of key at each of the 16 places in a line: no 6
 * bytes of it left in a line's text column or in the bytes its data
 * columns spell; the lines before and after are kept. */
static void dumps_of_key(const char *key)
{
    static const char *const names[] = {"xxd", "hexdump -C", "od -tx1"};
    struct abx_mask *m = abx_mask_new();
    struct abx_buf text, d, bytes;

    CHECK(m != NULL);
    CHECK_INT(abx_mask_add_str(m, key), 0);
    abx_buf_init(&text, 0);
    abx_buf_init(&d, 0);
    abx_buf_init(&bytes, 0);
    for (size_t pre = 0; pre < 16; pre++) {
        abx_buf_reset(&text);
        MUST(abx_buf_append(&text, "HOME=/root\nPATH=/usr/bin\nE2B_API_KEY=", 11 + pre));
        MUST(abx_buf_appends(&text, key));
        MUST(abx_buf_appends(&text, "\nUSER=user\nLANG=C.UTF-8\nTERM=xterm-256color\nSHLVL=1\n"));
        for (int kind = 0; kind < 3; kind++) {
            const char *got;

            dump_of(abx_buf_cstr(&text), kind, &d);
            undump(abx_buf_cstr(&d), kind, &bytes);
            CHECK_MSG(memmem(bytes.data, bytes.len, key, strlen(key)) != NULL,
                      "%s: the dump decodes", names[kind]);
            got = mask_s(m, abx_buf_cstr(&d));
            undump(got, kind, &bytes);
            for (size_t i = 0; i + 6 <= strlen(key); i++) {
                /* got is never NULL: strstr and "?:" only quiet GCC's null
                 * argument warnings (release and sanitizer builds). */
                CHECK_MSG(strstr(got, "") && memmem(got, strlen(got), key + i, 6) == NULL,
                          "%s (%zu before): text column keeps \"%.6s\":\n%s", names[kind], pre,
                          key + i, got ? got : "");
                CHECK_MSG(memmem(bytes.data, bytes.len, key + i, 6) == NULL,
                          "%s (%zu before): data columns keep \"%.6s\":\n%s", names[kind], pre,
                          key + i, got ? got : "");
            }
            CHECK_MSG(strstr(got, M) != NULL && strncmp(got, abx_buf_cstr(&d), 8) == 0,
                      "%s: first line kept: %s", names[kind], got);
            CHECK_MSG(strstr(got, "0000060") || strstr(got, "00000060") || strstr(got, "0000140"),
                      "%s: last lines kept:\n%s", names[kind], got);
        }
    }
    abx_buf_free(&text);
    abx_buf_free(&d);
    abx_buf_free(&bytes);
    abx_mask_free(m);
}

/* akey, and a key whose text column starts with the hex digit its dump's
 * next line starts with ("  3da5...\n00000030: 3566"): two spaces then
 * the wanted digit is a text column there, not hexdump -C's middle gap. */
static void test_dumps(void)
{
    dumps_of_key(akey);
    dumps_of_key("e2b_7c06c723c8c5a63da541bc0e43bae55f37cd2afb");
}

/* ---- each form through each channel's encoding ------------------------ */

/* Whether text still gives away 6 bytes of akey: spelled as is (line
 * breaks and ANSI sequences taken out), in the bytes its hex digits spell
 * (either alignment), or in those its base64 characters spell (any of
 * four alignments). */
static int leaks(const char *text)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    struct abx_buf flat, hex, b, bytes;
    int found = 0;

    abx_buf_init(&flat, 0);
    abx_buf_init(&hex, 0);
    abx_buf_init(&b, 0);
    abx_buf_init(&bytes, 0);
    strip_noise(text, &flat);
    for (const char *c = text; *c; c++) {
        if (isxdigit((unsigned char)*c))
            MUST(abx_buf_appendc(&hex, *c));
        if (*c && strchr(b64, *c))
            MUST(abx_buf_appendc(&b, *c));
    }
    for (size_t i = 0; i + 6 <= strlen(akey) && !found; i++) {
        found = memmem(flat.data, flat.len, akey + i, 6) != NULL;
        for (size_t al = 0; al < 2 && !found; al++) {
            abx_buf_reset(&bytes);
            for (size_t k = al; k + 1 < hex.len; k += 2) {
                char two[3] = {hex.data[k], hex.data[k + 1], 0};
                MUST(abx_buf_appendc(&bytes, (char)strtol(two, NULL, 16)));
            }
            found = memmem(bytes.data, bytes.len, akey + i, 6) != NULL;
        }
        for (size_t al = 0; al < 4 && !found; al++) {
            abx_buf_reset(&bytes);
            for (size_t k = al; k + 3 < b.len; k += 4) {
                unsigned v = 0;
                for (int q = 0; q < 4; q++)
                    v = v << 6 | (unsigned)(strchr(b64, b.data[k + q]) - b64);
                MUST(abx_buf_appendc(&bytes, (char)(v >> 16)));
                MUST(abx_buf_appendc(&bytes, (char)(v >> 8)));
                MUST(abx_buf_appendc(&bytes, (char)v));
            }
            found = memmem(bytes.data, bytes.len, akey + i, 6) != NULL;
        }
    }
    abx_buf_free(&flat);
    abx_buf_free(&hex);
    abx_buf_free(&b);
    abx_buf_free(&bytes);
    return found;
}

/* XML's escapes (escape.c) undone: what a reader of the report sees. */
static void xml_unescape(const char *in, struct abx_buf *out)
{
    static const struct {
        const char *from, *to;
    } ents[] = {{"&#10;", "\n"}, {"&#13;", "\r"}, {"&#9;", "\t"}, {"&amp;", "&"}, {"&lt;", "<"},
                {"&gt;", ">"},   {"&quot;", "\""}, {"&apos;", "'"}, {"#x1B", "\x1b"}};

    abx_buf_reset(out);
    while (*in) {
        size_t e = 0;

        while (e < sizeof ents / sizeof ents[0] && strncmp(in, ents[e].from, strlen(ents[e].from)))
            e++;
        if (e < sizeof ents / sizeof ents[0]) {
            MUST(abx_buf_appends(out, ents[e].to));
            in += strlen(ents[e].from);
        } else {
            MUST(abx_buf_appendc(out, *in++));
        }
    }
}

/* form masked raw, JSON-encoded (how a worker sends it, and the JSON and
 * HTML reports hold it) and XML-escaped (JUnit, text and attribute): read
 * back as a reader would, none leaks; the raw form does without a mask. */
static void expect_channels(struct abx_mask *m, const char *form, const char *what)
{
    static const char *const ch[] = {"raw", "JSON", "XML text", "XML attribute"};
    struct abx_buf enc, back;

    abx_buf_init(&enc, 0);
    abx_buf_init(&back, 0);
    CHECK_MSG(leaks(form), "%s: the unmasked form gives the key away", what);
    for (int c = 0; c < 4; c++) {
        const char *got;

        abx_buf_reset(&enc);
        if (c == 0) {
            MUST(abx_buf_appends(&enc, form));
        } else if (c == 1) {
            cJSON *str = cJSON_CreateString(form);
            char *j = cJSON_PrintUnformatted(str);
            MUST(abx_buf_appends(&enc, j));
            cJSON_free(j);
            cJSON_Delete(str);
        } else {
            CHECK_INT(abx_esc_xml(&enc, form, strlen(form), c == 3 ? ABX_ESC_XML_ATTR : 0), 0);
        }
        got = mask1(m, enc.data, enc.len);
        abx_buf_reset(&back);
        if (c == 1) {
            cJSON *j = cJSON_Parse(got);
            CHECK_MSG(cJSON_IsString(j), "%s, %s: masked JSON still parses: %s", what, ch[c], got);
            MUST(abx_buf_appends(&back, cJSON_IsString(j) ? j->valuestring : ""));
            cJSON_Delete(j);
        } else if (c >= 2) {
            xml_unescape(got, &back);
        } else {
            MUST(abx_buf_appends(&back, got));
        }
        CHECK_MSG(!leaks(abx_buf_cstr(&back)), "%s, %s: leaks:\n%s", what, ch[c], got);
    }
    abx_buf_free(&enc);
    abx_buf_free(&back);
}

static void test_channels(void)
{
    struct abx_mask *m = abx_mask_new();
    struct abx_buf text, f, w;
    char line[256];

    CHECK(m != NULL);
    CHECK_INT(abx_mask_add_str(m, akey), 0);
    abx_buf_init(&text, 0);
    abx_buf_init(&f, 0);
    abx_buf_init(&w, 0);
    MUST(abx_buf_appends(&text, "HOME=/root\nE2B_API_KEY="));
    MUST(abx_buf_appends(&text, akey));
    MUST(abx_buf_appends(&text, "\nUSER=user\nTERM=xterm\n"));
    for (size_t width = 76; width >= 19; width -= 19) {
        for (size_t cut = 0; cut < 3; cut++) {
            abx_buf_reset(&f);
            CHECK_INT(abx_b64_encode(text.data + cut, text.len - cut, 0, &f), 0);
            wrap(abx_buf_cstr(&f), width, "\n", &w);
            snprintf(line, sizeof line, "base64 -w %zu, %zu bytes in", width, cut);
            expect_channels(m, abx_buf_cstr(&w), line);
        }
    }
    for (int kind = 0; kind < 3; kind++) {
        dump_of(abx_buf_cstr(&text), kind, &f);
        expect_channels(m, abx_buf_cstr(&f), kind == 0 ? "xxd" : kind == 1 ? "hexdump -C" : "od");
    }
    hex_of(akey, "", &f);
    wrap(abx_buf_cstr(&f), 60, "\n", &w);
    expect_channels(m, abx_buf_cstr(&w), "xxd -p");
    hex_of(akey, ":", &f);
    expect_channels(m, abx_buf_cstr(&f), "colon hex");
    hex_of(akey, " ", &f);
    expect_channels(m, abx_buf_cstr(&f), "space hex");
    hex_of(akey, "\\x", &f);
    abx_buf_reset(&w);
    MUST(abx_buf_appends(&w, "\\x"));
    MUST(abx_buf_appends(&w, abx_buf_cstr(&f)));
    expect_channels(m, abx_buf_cstr(&w), "\\xNN");
    wrap(akey, 16, "\n", &f);
    expect_channels(m, abx_buf_cstr(&f), "fold -w 16");
    snprintf(line, sizeof line, "E2B_API_KEY=\x1b[01;31m\x1b[Ke2b_\x1b[m\x1b[K%s\n", akey + 4);
    expect_channels(m, line, "grep --color");
    snprintf(line, sizeof line, "suffix %s\n", akey + 4);
    expect_channels(m, line, "the part after e2b_");
    abx_buf_free(&text);
    abx_buf_free(&f);
    abx_buf_free(&w);
    abx_mask_free(m);
}

int main(void)
{
    test_channels();
    test_dumps();
    test_byte_forms();
    test_accidental();
    test_accidental_stream();
    test_b64_vectors();
    test_forms_plain();
    test_forms_special();
    test_control_chars();
    test_short_and_bad();
    test_overlap();
    test_streaming();
    test_random();
    test_chain_limit();
    test_binary();
    test_threads();
    return CHECK_DONE();
}
