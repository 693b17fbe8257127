#include "filesig.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "b64.h"
#include "buf.h"

int abx_filesig_compute(const char *path, const char *operation,
                        const char *username, const char *token,
                        long long expiration, char *out, size_t outlen)
{
    struct abx_buf raw, enc;
    unsigned char md[SHA256_DIGEST_LENGTH];
    int rc = -1;

    abx_buf_init(&raw, 1 << 20);
    abx_buf_init(&enc, 256);
    if (abx_buf_appendf(&raw, "%s:%s:%s:%s", path, operation,
                        username ? username : "", token))
        goto out;
    if (expiration >= 0 && abx_buf_appendf(&raw, ":%lld", expiration))
        goto out;
    if (!SHA256((const unsigned char *)raw.data, raw.len, md))
        goto out;
    if (abx_b64_encode(md, sizeof md, ABX_B64_NO_PAD, &enc))
        goto out;
    if ((size_t)snprintf(out, outlen, "v1_%s", abx_buf_cstr(&enc)) >= outlen)
        goto out;
    rc = 0;
out:
    /* The raw string holds the token. */
    if (raw.data)
        OPENSSL_cleanse(raw.data, raw.cap);
    abx_buf_free(&raw);
    abx_buf_free(&enc);
    return rc;
}

int abx_filesig_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);

    if (la != lb)
        return 0;
    return CRYPTO_memcmp(a, b, la) == 0;
}
