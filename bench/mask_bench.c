/* Masker throughput: MB/s of one-shot and streamed masking over text
 * that looks like test output, with a realistic set of secrets. Run by
 * bench/mask_bench.sh (make bench), never by CI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "mask.h"

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
    static const char *const lines[] = {
        "PASSED tests-lua/test_03_commands.lua::run captures stdout\n",
        "{\"sandboxID\":\"i4x8ke2b0abcdefghijk\",\"envdVersion\":\"0.2.0\"}\n",
        "Authorization: Bearer e2b_0123456789abcdef0123456789abcdef\n",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jV\n",
        "the quick brown fox jumps over the lazy dog 0123456789 ====\n",
    };
    const size_t total = (size_t)64 << 20;
    struct abx_mask *m = abx_mask_new();
    struct abx_mask_stream st;
    struct abx_buf in, out;
    size_t i, off;
    double t;
    char tok[64];

    if (!m)
        return 1;
    abx_mask_add_str(m, "e2b_0123456789abcdef0123456789abcdef");
    for (i = 0; i < 8; i++) {
        snprintf(tok, sizeof(tok), "envd-access-token-%zu-x9f83kq", i);
        abx_mask_add_str(m, tok);
    }
    abx_buf_init(&in, total + 4096);
    abx_buf_init(&out, total * 2);
    for (i = 0; in.len < total; i++) {
        if (abx_buf_appends(&in, lines[i % 5]) != 0) {
            fprintf(stderr, "mask_bench: out of memory\n");
            return 1;
        }
    }

    t = now();
    abx_mask_string(m, in.data, in.len, &out);
    t = now() - t;
    printf("mask_bench: one-shot  %7.1f MB/s (%zu MB in, %zu MB out)\n",
           (double)in.len / 1e6 / t, in.len >> 20, out.len >> 20);

    abx_buf_reset(&out);
    abx_mask_stream_init(&st, m);
    t = now();
    for (off = 0; off < in.len; off += 4096) {
        size_t n = in.len - off < 4096 ? in.len - off : 4096;

        abx_mask_stream_write(&st, in.data + off, n, &out);
    }
    abx_mask_stream_flush(&st, &out);
    t = now() - t;
    printf("mask_bench: 4 KiB stream %7.1f MB/s\n", (double)in.len / 1e6 / t);
    abx_mask_stream_free(&st);
    abx_buf_free(&in);
    abx_buf_free(&out);
    abx_mask_free(m);
    return 0;
}
