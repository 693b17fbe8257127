/* The check macros of every C test: the unit tests (tests/unit), the
 * client drivers (tests/client) and the fuzz targets (tests/fuzz).
 *
 *   CHECK(cond)               a condition
 *   CHECK_INT(got, want)      integers (shown as long long)
 *   CHECK_STR(got, want)      C strings (got may be NULL: a failure)
 *   CHECK_MSG(cond, fmt, ...) a condition, said in words when it fails
 *   CHECK_LOG(cond, fmt, ...) the same, and an "ok" line when it holds:
 *                             the client drivers log what they checked
 *   FUZZ_CHECK(cond)          a property of a fuzz target: aborts, so
 *                             libFuzzer and the replay report a crash
 *   MUST(expr)                a step the test builds on (an abx_buf
 *                             append): anything but 0 aborts, since the
 *                             checks after it would test nothing
 *   CHECK_DONE()              end of main: prints the counts, 1 if any
 *                             check failed or none ran (a test that
 *                             checked nothing proved nothing), else 0
 *
 * A failed check says file:line and what was expected on stderr (CHECK_LOG:
 * on stdout, in line with its "ok" lines) and the test goes on.
 *
 * The counters are static, one pair per file. A test built from several
 * files defines CHECK_SHARED_COUNTERS before including this header in every
 * file, and CHECK_DEFINE_COUNTERS as well in exactly one of them. */
#ifndef ABX_TEST_CHECK_H
#define ABX_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(CHECK_DEFINE_COUNTERS)
int check_failures, check_count;
#elif defined(CHECK_SHARED_COUNTERS)
extern int check_failures, check_count;
#else
/* Unused in a fuzz target, which only aborts. */
static int check_failures __attribute__((unused));
static int check_count __attribute__((unused));
#endif

/* Counts one check; a failure is counted and said as "file:line: fmt". */
__attribute__((format(printf, 4, 5))) static inline void
check_note_(int ok, const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    check_count++;
    if (ok)
        return;
    check_failures++;
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Counts one check and logs it either way on stdout (flushed, so that the
 * lines interleave with the output of the programs a driver runs). */
__attribute__((format(printf, 5, 6))) static inline void
check_log_(int ok, const char *cond, const char *file, int line,
           const char *fmt, ...)
{
    va_list ap;

    check_count++;
    check_failures += !ok;
    fputs(ok ? "ok   " : "FAIL ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (ok)
        fputc('\n', stdout);
    else
        printf("  [%s] (%s:%d)\n", cond, file, line);
    fflush(stdout);
}

#define CHECK(cond)                                                       \
    check_note_((cond) != 0, __FILE__, __LINE__, "CHECK(%s) failed", #cond)

/* cond first: the message may show what evaluating it produced. */
#define CHECK_MSG(cond, ...)                                              \
    do {                                                                  \
        int ok_ = (cond) != 0;                                            \
        check_note_(ok_, __FILE__, __LINE__, __VA_ARGS__);                \
    } while (0)

#define CHECK_LOG(cond, ...)                                              \
    do {                                                                  \
        int ok_ = (cond) != 0;                                            \
        check_log_(ok_, #cond, __FILE__, __LINE__, __VA_ARGS__);          \
    } while (0)

#define CHECK_INT(got, want)                                              \
    do {                                                                  \
        long long g_ = (long long)(got), w_ = (long long)(want);          \
        check_note_(g_ == w_, __FILE__, __LINE__, "%s == %lld, want %lld", \
                    #got, g_, w_);                                        \
    } while (0)

#define CHECK_STR(got, want)                                              \
    do {                                                                  \
        const char *g_ = (got), *w_ = (want);                             \
        check_note_(g_ && strcmp(g_, w_) == 0, __FILE__, __LINE__,        \
                    "%s == \"%s\", want \"%s\"", #got, g_ ? g_ : "(null)", \
                    w_);                                                  \
    } while (0)

#define CHECK_ABORT_(cond, what)                                          \
    do {                                                                  \
        if (!(cond)) {                                                    \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, \
                    what, #cond);                                         \
            abort();                                                      \
        }                                                                 \
    } while (0)

#define FUZZ_CHECK(cond) CHECK_ABORT_(cond, "property")
#define MUST(expr) CHECK_ABORT_((expr) == 0, "step")

#define CHECK_DONE()                                                      \
    (fprintf(stderr, "%d checks, %d failed%s\n", check_count,             \
             check_failures, check_count ? "" : ": no check ran"),         \
     check_failures || !check_count ? 1 : 0)

#endif
