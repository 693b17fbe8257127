#include "buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"

void abx_buf_init(struct abx_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max ? max : ABX_BUF_DEFAULT_MAX;
}

void abx_buf_free(struct abx_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void abx_buf_reset(struct abx_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

/* Makes room for n more bytes plus the NUL. */
static int buf_reserve(struct abx_buf *b, size_t n)
{
    if (n > b->max || b->len > b->max - n)
        return -1;
    return ABX_VEC_RESERVE(b->data, b->cap, b->len + n + 1);
}

int abx_buf_append(struct abx_buf *b, const void *p, size_t n)
{
    if (buf_reserve(b, n))
        return -1;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int abx_buf_appends(struct abx_buf *b, const char *s)
{
    return abx_buf_append(b, s, strlen(s));
}

int abx_buf_appendc(struct abx_buf *b, char c)
{
    return abx_buf_append(b, &c, 1);
}

int abx_buf_vappendf(struct abx_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || buf_reserve(b, (size_t)n))
        return -1;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int abx_buf_appendf(struct abx_buf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = abx_buf_vappendf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void abx_buf_consume(struct abx_buf *b, size_t n)
{
    if (n >= b->len) {
        abx_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

const char *abx_buf_cstr(const struct abx_buf *b)
{
    return b->data ? b->data : "";
}

char *abx_buf_steal(struct abx_buf *b, size_t *len)
{
    char *p = b->data;

    if (len)
        *len = b->len;
    if (!p)
        p = calloc(1, 1);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}
