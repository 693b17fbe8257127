/* Reply header collection (req->collect_headers): each raw line curl
 * hands the header callback becomes "name: value\n" in a capped buffer,
 * the name lower-cased (HTTP names are case-insensitive) and the value
 * trimmed of surrounding whitespace. Only reply lines ever pass here. */
#include "http.h"

#include <string.h>

static int is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static void trim(const char **v, const char **e)
{
    while (*v < *e && is_ows(**v))
        (*v)++;
    while (*e > *v && (is_ows((*e)[-1]) || (*e)[-1] == '\r' ||
                       (*e)[-1] == '\n'))
        (*e)--;
}

int abx_http_header_collect(struct abx_buf *out, const char *line, size_t n)
{
    const char *end = line + n, *colon, *v, *e;
    size_t i, nl;

    if (n == 0 || memchr(line, '\0', n) != NULL)
        return 0;
    if (n >= 5 && memcmp(line, "HTTP/", 5) == 0)
        return 0;
    if (is_ows(line[0])) {
        /* obs-fold (RFC 9112 5.2): continues the previous value. */
        v = line;
        e = end;
        trim(&v, &e);
        if (v == e || out->len == 0 || out->data[out->len - 1] != '\n')
            return 0;
        if (out->len + 1 + (size_t)(e - v) > out->max)
            return -1;
        out->len--;
        out->data[out->len] = '\0';
        if (abx_buf_appendc(out, ' ') || abx_buf_append(out, v, (size_t)(e - v)) ||
            abx_buf_appendc(out, '\n'))
            return -1;
        return 0;
    }
    colon = memchr(line, ':', n);
    if (colon == NULL || colon == line)
        return 0;  /* the blank line, or not a header */
    nl = (size_t)(colon - line);
    for (i = 0; i < nl; i++)
        if (!is_tchar((unsigned char)line[i]))
            return 0;
    v = colon + 1;
    e = end;
    trim(&v, &e);
    /* Checked whole first so a line is kept entirely or not at all. */
    if (out->len + nl + 3 + (size_t)(e - v) > out->max)
        return -1;
    for (i = 0; i < nl; i++) {
        char c = line[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (abx_buf_appendc(out, c))
            return -1;
    }
    if (abx_buf_append(out, ": ", 2) || abx_buf_append(out, v, (size_t)(e - v)) ||
        abx_buf_appendc(out, '\n'))
        return -1;
    return 0;
}
