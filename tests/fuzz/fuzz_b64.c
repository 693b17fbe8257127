/* Base64: abx_b64_decode on arbitrary text against a bit-by-bit reference
 * decoder written from the header's contract (standard or URL alphabet,
 * padding optional, nothing else), plus encode -> decode round trips of
 * the input bytes in all four encodings. */
#include <string.h>

#include "b64.h"
#include "fuzz.h"

/* RFC 4648's alphabets, tables 1 and 2, spelled out: a symbol's value is
 * its position; the URL-safe alphabet differs in its last two. */
static const char STD[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char URL_TAIL[] = "-_";

static int val(unsigned char c)
{
    const char *p;

    if (c == '\0')
        return -1;
    p = strchr(STD, c);
    if (p)
        return (int)(p - STD);
    p = strchr(URL_TAIL, c);
    return p ? 62 + (int)(p - URL_TAIL) : -1;
}

/* 0 and the bytes in out, or -1 if text is not valid base64. */
static int ref_decode(const char *t, size_t n, struct abx_buf *out)
{
    size_t data = n, pad, i;
    unsigned acc = 0, bits = 0;
    int v;

    while (data > 0 && t[data - 1] == '=')
        data--;
    pad = n - data;
    /* One trailing char carries 6 bits: never a whole byte. '=' pads a
     * final group to 4 and never stands alone. */
    if (data % 4 == 1 || pad > 2 || (pad && (data + pad) % 4) ||
        (pad && !data))
        return -1;
    for (i = 0; i < data; i++) {
        v = val((unsigned char)t[i]);
        if (v < 0)
            return -1;
        acc = acc << 6 | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            FUZZ_CHECK(abx_buf_appendc(out, (char)(acc >> bits)) == 0);
            acc &= (1u << bits) - 1;
        }
    }
    return 0;
}

static void roundtrip(const uint8_t *p, size_t n, unsigned flags)
{
    struct abx_buf enc, dec;
    size_t i;

    abx_buf_init(&enc, 0);
    abx_buf_init(&dec, 0);
    FUZZ_CHECK(abx_b64_encode(p, n, flags, &enc) == 0);
    FUZZ_CHECK(enc.len == (flags & ABX_B64_NO_PAD ? (n * 4 + 2) / 3
                                                  : (n + 2) / 3 * 4));
    for (i = 0; i < enc.len; i++) {
        char c = enc.data[i];

        FUZZ_CHECK(val((unsigned char)c) >= 0 ||
                   (c == '=' && !(flags & ABX_B64_NO_PAD)));
        FUZZ_CHECK(!(flags & ABX_B64_URL) || (c != '+' && c != '/'));
        FUZZ_CHECK((flags & ABX_B64_URL) || (c != '-' && c != '_'));
    }
    FUZZ_CHECK(abx_b64_decode(enc.data ? enc.data : "", enc.len, &dec) == 0);
    FUZZ_CHECK(dec.len == n && (!n || !memcmp(dec.data, p, n)));
    abx_buf_free(&enc);
    abx_buf_free(&dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *t = (const char *)data;
    struct abx_buf got, want, small;
    int rc, rrc;
    unsigned f;

    abx_buf_init(&got, 0);
    abx_buf_init(&want, 0);
    rc = abx_b64_decode(t, size, &got);
    rrc = ref_decode(t, size, &want);
    FUZZ_CHECK(rc == rrc);
    if (rc == 0) {
        FUZZ_CHECK(got.len == want.len);
        FUZZ_CHECK(!got.len || !memcmp(got.data, want.data, got.len));
    } else {
        FUZZ_CHECK(got.len == 0);
    }
    /* A full buffer fails and leaves it as it was. */
    abx_buf_init(&small, 2);
    FUZZ_CHECK(abx_buf_append(&small, "z", 1) == 0);
    rc = abx_b64_decode(t, size, &small);
    FUZZ_CHECK(rc == (rrc == 0 && want.len <= 1 ? 0 : -1));
    if (rc)
        FUZZ_CHECK(small.len == 1);
    abx_buf_free(&small);
    for (f = 0; f < 4; f++)
        roundtrip(data, size, f);
    abx_buf_free(&got);
    abx_buf_free(&want);
    return 0;
}
