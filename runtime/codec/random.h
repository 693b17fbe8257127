/* The one source of randomness (random.c), shared with abx-local: the
 * kernel's (getrandom(2)), and no fallback. Ids, nonces, tokens and run
 * tags must not collide or be guessed, so a caller that gets -1 fails
 * loudly (an error naming it) rather than use weaker bytes. */
#ifndef ABX_RANDOM_H
#define ABX_RANDOM_H

#include <stddef.h>

/* Fills buf with n random bytes. 0, or -1 with errno. */
int abx_random_bytes(void *buf, size_t n);
/* nbytes (at most 64) random bytes as 2 * nbytes lowercase hex digits
 * and a NUL in out. 0, or -1 with errno. */
int abx_random_hex(char *out, size_t nbytes);

#endif
