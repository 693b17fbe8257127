/* Base64 (RFC 4648) over OpenSSL's EVP block codec. */
#ifndef ABX_B64_H
#define ABX_B64_H

#include <stddef.h>

#include "buf.h"

#define ABX_B64_URL    0x1  /* '-' '_' instead of '+' '/' */
#define ABX_B64_NO_PAD 0x2  /* no trailing '=' */

/* Appends the encoding of in[0..len) to out. 0 or -1 (out full). */
int abx_b64_encode(const void *in, size_t len, unsigned flags,
                   struct abx_buf *out);

/* Decodes text (standard or URL alphabet, padding optional, no
 * whitespace) and appends the bytes to out. 0, or -1 if text is not
 * valid base64 or out is full. */
int abx_b64_decode(const char *text, size_t len, struct abx_buf *out);

#endif
