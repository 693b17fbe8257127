/* Shared by the fuzz targets: the libFuzzer entry point and a check that
 * aborts (libFuzzer and the gcc replay both report an abort as a crash,
 * with the failed property on stderr). */
#ifndef ABX_FUZZ_H
#define ABX_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__,      \
                    __LINE__, #cond);                                      \
            abort();                                                       \
        }                                                                  \
    } while (0)

/* Deterministic split sizes etc. derived from the input itself, so a
 * saved input replays exactly (xorshift32 seeded by FNV-1a). */
static inline uint32_t fuzz_seed(const uint8_t *data, size_t size)
{
    uint32_t h = 2166136261u;
    size_t i;

    for (i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    return h ? h : 1;
}

static inline uint32_t fuzz_rand(uint32_t *s)
{
    uint32_t x = *s;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *s = x;
    return x;
}

#endif
