/* Shared by the fuzz targets: the libFuzzer entry point and the input's
 * own pseudo-random numbers. Properties are FUZZ_CHECK (tests/lib/check.h):
 * an abort, which libFuzzer and the gcc replay both report as a crash,
 * with the failed property on stderr. */
#ifndef ABX_FUZZ_H
#define ABX_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
