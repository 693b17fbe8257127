/* Strict UTF-8 decoding of one sequence (no overlongs, no surrogates,
 * nothing above U+10FFFF). */
#ifndef ABX_UTF8_H
#define ABX_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the sequence at s[0..n); returns its length (1-4) and the code
 * point in *cp, or 0 if the bytes are not valid UTF-8 (n == 0 too). */
size_t abx_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

#endif
