/* Base64 over OpenSSL's EVP block codec; we add only the URL alphabet,
 * optional padding and strict validation that EVP_DecodeBlock lacks. */
#include "b64.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

/* Input bytes per EVP_EncodeBlock call: a multiple of 3 so chunks
 * concatenate into one valid encoding. */
#define B64_CHUNK 3072

int abx_b64_encode(const void *in, size_t len, unsigned flags,
                   struct abx_buf *out)
{
    const unsigned char *p = in;
    unsigned char enc[B64_CHUNK / 3 * 4 + 1];
    size_t oldlen = out->len, n, i;
    int m;

    while (len > 0) {
        n = len < B64_CHUNK ? len : B64_CHUNK;
        m = EVP_EncodeBlock(enc, p, (int)n);
        if (m < 0)
            goto fail;
        if (flags & ABX_B64_URL)
            for (i = 0; i < (size_t)m; i++)
                enc[i] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
        if (flags & ABX_B64_NO_PAD)
            while (m > 0 && enc[m - 1] == '=')
                m--;
        if (abx_buf_append(out, enc, (size_t)m))
            goto fail;
        p += n;
        len -= n;
    }
    return 0;
fail:
    out->len = oldlen;
    if (out->data)
        out->data[oldlen] = '\0';
    return -1;
}

static int b64_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

int abx_b64_decode(const char *text, size_t len, struct abx_buf *out)
{
    static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              "abcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char *tmp = NULL, *dec = NULL;
    size_t data, pad, padded, i;
    int rc = -1, m;

    /* Strip padding, then check every remaining character: EVP would
     * skip whitespace and accept '=' in odd places. */
    data = len;
    while (data > 0 && text[data - 1] == '=')
        data--;
    pad = len - data;
    if (pad > 2 || data % 4 == 1 || (pad && (data + pad) % 4 != 0))
        return -1;
    if (data == 0)
        return pad ? -1 : 0;
    if (data > (size_t)(INT32_MAX / 2))
        return -1;
    padded = (data + 3) / 4 * 4;
    tmp = malloc(padded + 1);
    dec = malloc(padded / 4 * 3 + 1);
    if (!tmp || !dec)
        goto out;
    for (i = 0; i < data; i++) {
        int v = b64_val((unsigned char)text[i]);

        if (v < 0)
            goto out;
        tmp[i] = (unsigned char)std[v];
    }
    for (; i < padded; i++)
        tmp[i] = '=';
    tmp[padded] = '\0';
    m = EVP_DecodeBlock(dec, tmp, (int)padded);
    if (m < 0)
        goto out;
    /* EVP counts the bytes the padding stands for; drop them. */
    m -= (int)(padded - data);
    if (m < 0 || abx_buf_append(out, dec, (size_t)m))
        goto out;
    rc = 0;
out:
    free(tmp);
    free(dec);
    return rc;
}
