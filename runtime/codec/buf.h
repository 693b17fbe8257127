/* Growable byte buffer with a hard size cap (after curl's dynbuf).
 *
 * Every HTTP body, log line and report fragment lives in one of these, so
 * that a hostile or broken peer can never make us allocate without bound.
 * The data is always NUL-terminated so it can be used as a C string. */
#ifndef ABX_BUF_H
#define ABX_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct abx_buf {
    char *data;   /* NULL until the first append */
    size_t len;   /* bytes in use, not counting the terminating NUL */
    size_t cap;   /* bytes allocated */
    size_t max;   /* append fails once len would exceed this */
};

#define ABX_BUF_DEFAULT_MAX ((size_t)64 * 1024 * 1024)

void abx_buf_init(struct abx_buf *b, size_t max);
void abx_buf_free(struct abx_buf *b);
void abx_buf_reset(struct abx_buf *b);  /* len = 0, keeps the allocation */

/* All appenders return 0 on success, -1 when out of memory or over max;
 * on failure the buffer is left as it was. The result must be used: a
 * caller checks it, or accumulates it and acts once at the end. */
int abx_buf_append(struct abx_buf *b, const void *p, size_t n)
    __attribute__((warn_unused_result));
int abx_buf_appends(struct abx_buf *b, const char *s)
    __attribute__((warn_unused_result));
int abx_buf_appendc(struct abx_buf *b, char c)
    __attribute__((warn_unused_result));
int abx_buf_appendf(struct abx_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), warn_unused_result));
int abx_buf_vappendf(struct abx_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0), warn_unused_result));

/* Drops the first n bytes (consumed input), moving the rest to the front. */
void abx_buf_consume(struct abx_buf *b, size_t n);

/* Always a valid C string ("" for an empty buffer). */
const char *abx_buf_cstr(const struct abx_buf *b);

/* Hands the allocation to the caller (who frees it) and empties b. */
char *abx_buf_steal(struct abx_buf *b, size_t *len);

#endif
