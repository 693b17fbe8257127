/* The one source of randomness (random.h). */
#include <errno.h>
#include <sys/random.h>

#include "random.h"

int abx_random_bytes(void *buf, size_t n)
{
    unsigned char *b = buf;

    while (n > 0) {
        ssize_t r = getrandom(b, n, 0);   /* blocks only until seeded */
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO;
            return -1;
        }
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

int abx_random_hex(char *out, size_t nbytes)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[64];

    if (nbytes > sizeof raw) {
        errno = EINVAL;
        return -1;
    }
    if (abx_random_bytes(raw, nbytes) != 0)
        return -1;
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * nbytes] = '\0';
    return 0;
}
