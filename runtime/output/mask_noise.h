/* Noise inside a printed secret (mask_noise.c), for the masker. */
#ifndef ABX_MASK_NOISE_H
#define ABX_MASK_NOISE_H

#include <stddef.h>

/* The bytes noise can start with: the only ones worth a second look when
 * a pattern stops matching. */
extern const unsigned char abx_mask_noise_first[256];

/* pat (plen bytes) at s[p..), its first i bytes matched and s[p + i] not
 * its next byte: noise there and between its later bytes is skipped (at
 * most ABX_MASK_NOISE_MAX bytes). A match through a dump's layout goes on
 * to the end of its last line. The length it spans in s, 0 if it does not
 * match, -1 if undecided (not final, and s ends while it may still match). */
long abx_mask_match_noisy(const unsigned char *pat, size_t plen, const unsigned char *s,
                          size_t len, size_t p, size_t i, int final);

#endif
