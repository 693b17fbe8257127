/* Minimal assertion macros for the C unit tests. Each test binary is one
 * ctest case; it prints every failed check with file:line and exits 1 if
 * any check failed. */
#ifndef ABX_CHECK_H
#define ABX_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                       \
    do {                                                                  \
        check_count++;                                                    \
        if (!(cond)) {                                                    \
            check_failures++;                                             \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__,        \
                    __LINE__, #cond);                                     \
        }                                                                 \
    } while (0)

#define CHECK_INT(got, want)                                              \
    do {                                                                  \
        long long g_ = (long long)(got), w_ = (long long)(want);          \
        check_count++;                                                    \
        if (g_ != w_) {                                                   \
            check_failures++;                                             \
            fprintf(stderr, "%s:%d: %s == %lld, want %lld\n", __FILE__,   \
                    __LINE__, #got, g_, w_);                              \
        }                                                                 \
    } while (0)

#define CHECK_STR(got, want)                                              \
    do {                                                                  \
        const char *g_ = (got), *w_ = (want);                             \
        check_count++;                                                    \
        if (!g_ || strcmp(g_, w_) != 0) {                                 \
            check_failures++;                                             \
            fprintf(stderr, "%s:%d: %s == \"%s\", want \"%s\"\n",         \
                    __FILE__, __LINE__, #got, g_ ? g_ : "(null)", w_);    \
        }                                                                 \
    } while (0)

/* Call at the end of main. */
#define CHECK_DONE()                                                      \
    (fprintf(stderr, "%d checks, %d failed\n", check_count,               \
             check_failures),                                             \
     check_failures ? 1 : 0)

#endif
