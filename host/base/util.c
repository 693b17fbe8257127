/* Small helpers shared by the host files. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "out.h"
#include "utf8.h"

static void oom(void)
{
    abx_out_puts(ABX_OUT_STDERR, "abx-e2e: internal error: out of memory\n");
    abx_out_flush();
    _exit(ABX_EXIT_INTERNAL_ERROR);
}

char *abx_xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");

    if (!d)
        oom();
    return d;
}

void *abx_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);

    if (!p)
        oom();
    return p;
}

int abx_parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    long v;

    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int abx_parse_double(const char *s, double min, double max, double *out)
{
    char *end;
    double v;

    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v) || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int abx_clean_text(struct abx_buf *out, const char *text, size_t len,
                   size_t max)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, start = 0, cut = len > max ? max : len;
    int bad = 0;

    while (i < cut) {
        uint32_t cp;
        size_t k = 1;

        if (s[i] != 0 && (s[i] < 0x80 ||
                          (k = abx_utf8_decode(s + i, cut - i, &cp)) > 0)) {
            i += k;
            continue;
        }
        bad |= abx_buf_append(out, s + start, i - start);
        bad |= abx_buf_appends(out, s[i] == 0 ? "\\0" : "\xEF\xBF\xBD");
        start = ++i;
    }
    bad |= abx_buf_append(out, s + start, cut - start);
    if (cut < len)
        bad |= abx_buf_appendf(out, "\n[... %zu more bytes not shown]", len - cut);
    return bad ? -1 : 0;
}

void abx_stdin_null(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        dup2(fd, STDIN_FILENO);  /* dup2 clears CLOEXEC on fd 0 */
        close(fd);
    }
}
