/* envd /files URL signatures: abx_filesig_compute on arbitrary path,
 * operation, user and token (NUL-separated in the input, byte 0 picks
 * the expiration and the output size) against a reference built on
 * OpenSSL's EVP digest, and abx_filesig_equal against strcmp. */
#include <string.h>

#include <openssl/evp.h>

#include "fuzz.h"
#include "filesig.h"

#define SIG_LEN (3 + 43)  /* "v1_" + unpadded base64 of 32 bytes */

static const long long expirations[] = {-1, 0, 1, 1700000000,
                                        9223372036854775807LL, -5};

/* Next NUL-terminated field of the input (the last may be unterminated:
 * copied into *own). */
static const char *field(const char **p, const char *end, char **own)
{
    const char *s = *p, *z;

    if (s >= end)
        return "";
    z = memchr(s, '\0', (size_t)(end - s));
    if (z) {
        *p = z + 1;
        return s;
    }
    *own = strndup(s, (size_t)(end - s));
    *p = end;
    return *own ? *own : "";
}

static void reference(const char *path, const char *op, const char *user,
                      const char *token, long long exp, char *out)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned char md[32], enc[64];
    char tail[32];
    unsigned mdlen = 0;
    int n;

    FUZZ_CHECK(c != NULL);
    FUZZ_CHECK(EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1);
    EVP_DigestUpdate(c, path, strlen(path));
    EVP_DigestUpdate(c, ":", 1);
    EVP_DigestUpdate(c, op, strlen(op));
    EVP_DigestUpdate(c, ":", 1);
    EVP_DigestUpdate(c, user, strlen(user));
    EVP_DigestUpdate(c, ":", 1);
    EVP_DigestUpdate(c, token, strlen(token));
    if (exp >= 0) {
        n = snprintf(tail, sizeof tail, ":%lld", exp);
        EVP_DigestUpdate(c, tail, (size_t)n);
    }
    FUZZ_CHECK(EVP_DigestFinal_ex(c, md, &mdlen) == 1 && mdlen == 32);
    EVP_MD_CTX_free(c);
    n = EVP_EncodeBlock(enc, md, 32);
    FUZZ_CHECK(n == 44 && enc[43] == '=');
    memcpy(out, "v1_", 3);
    memcpy(out + 3, enc, 43);
    out[SIG_LEN] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p, *end, *path, *op, *user, *token;
    char *own = NULL, want[SIG_LEN + 1], *out;
    size_t outlen;
    long long exp;
    int rc;

    if (size < 1)
        return 0;
    exp = expirations[data[0] % (sizeof expirations /
                                 sizeof expirations[0])];
    /* Mostly big enough, sometimes one byte short or tiny. */
    outlen = (data[0] >> 3) % 4 == 0 ? (size_t)(data[0] >> 5)
             : (data[0] >> 3) % 4 == 1 ? SIG_LEN
                                       : SIG_LEN + 1 + (size_t)(data[0] >> 5);
    p = (const char *)data + 1;
    end = (const char *)data + size;
    path = field(&p, end, &own);
    /* After an unterminated field p == end: the rest are "". */
    op = field(&p, end, &own);
    user = field(&p, end, &own);
    token = field(&p, end, &own);

    out = malloc(outlen ? outlen : 1);
    FUZZ_CHECK(out != NULL);
    rc = abx_filesig_compute(path, op, user, token, exp, out, outlen);
    reference(path, op, user, token, exp, want);
    if (outlen > SIG_LEN) {
        FUZZ_CHECK(rc == 0);
        FUZZ_CHECK(!strcmp(out, want));
        FUZZ_CHECK(abx_filesig_equal(out, want));
    } else {
        FUZZ_CHECK(rc == -1);
    }
    /* NULL username is "" (documented by the signer's callers). */
    if (!*user && outlen > SIG_LEN) {
        FUZZ_CHECK(abx_filesig_compute(path, op, NULL, token, exp, out,
                                       outlen) == 0);
        FUZZ_CHECK(!strcmp(out, want));
    }
    FUZZ_CHECK(abx_filesig_equal(path, op) == !strcmp(path, op));
    FUZZ_CHECK(abx_filesig_equal(op, path) == !strcmp(path, op));
    free(out);
    free(own);
    return 0;
}
