/* Small helpers shared by the host files. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"
#include "out.h"

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
