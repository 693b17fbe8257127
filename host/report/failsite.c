/* Where a failure surfaced, from its Lua traceback (report.h,
 * abx_failure_site): the frames of the run's own files, as
 * pytest-github-actions-annotate-failures finds them. Used by the CI
 * annotations and the job summary (ci_out.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"

static const char *skip_dot(const char *p)
{
    while (p[0] == '.' && p[1] == '/')
        p += 2;
    return p;
}

static int same_file(const char *frame, const char *file)
{
    size_t fl, sl;

    frame = skip_dot(frame);
    file = skip_dot(file);
    if (strncmp(frame, "...", 3) == 0) {  /* Lua cut a long source name */
        frame += 3;
        fl = strlen(frame);
        sl = strlen(file);
        return fl > 0 && fl <= sl && strcmp(file + sl - fl, frame) == 0;
    }
    return strcmp(frame, file) == 0;
}

/* A frame's file that belongs to the run (a regular file under the
 * working directory): its relative path into out, 1; else 0. */
static int run_file(const char *frame, char *out, size_t outlen)
{
    char cwd[PATH_MAX];
    struct stat st;
    size_t n;

    frame = skip_dot(frame);
    if (!*frame || *frame == '[' || *frame == '(' ||
        strncmp(frame, "..", 2) == 0)
        return 0;
    if (*frame == '/') {
        if (!getcwd(cwd, sizeof cwd))
            return 0;
        n = strlen(cwd);
        if (strncmp(frame, cwd, n) != 0 || frame[n] != '/')
            return 0;
        frame += n + 1;
    }
    if (stat(frame, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    return snprintf(out, outlen, "%s", frame) < (int)outlen;
}

/* The "path:line:" a traceback line starts with (after its indent). */
static int frame_of(const char *s, size_t n, char *path, size_t plen,
                    int *line)
{
    size_t i = 0, p0, k;
    long v;

    while (i < n && (s[i] == '\t' || s[i] == ' '))
        i++;
    for (p0 = i; i + 1 < n; i++) {
        if (s[i] != ':' || i == p0)
            continue;
        for (k = i + 1, v = 0; k < n && s[k] >= '0' && s[k] <= '9' &&
                               v < 100000000; k++)
            v = v * 10 + (s[k] - '0');
        if (k > i + 1 && k < n && s[k] == ':' && v > 0) {
            if (i - p0 >= plen)
                return 0;
            memcpy(path, s + p0, i - p0);
            path[i - p0] = '\0';
            *line = (int)v;
            return 1;
        }
    }
    return 0;
}

int abx_failure_site(const char *file, int def_line, const char *text, char *out,
                     size_t outlen)
{
    char path[PATH_MAX], other[PATH_MAX] = "";
    const char *s = text ? text : "", *e;
    int line, other_line = 0, first = 1, in_tb = 0;

    for (; *s; s = *e ? e + 1 : e, first = 0) {
        size_t n;
        e = strchr(s, '\n');
        if (!e)
            e = s + strlen(s);
        n = (size_t)(e - s);
        if (!first && !in_tb) {
            in_tb = strncmp(s, "stack traceback:", 16) == 0;
            continue;
        }
        if (!frame_of(s, n, path, sizeof path, &line))
            continue;
        if (same_file(path, file)) {
            snprintf(out, outlen, "%s", file);
            return line;
        }
        if (!other[0] && run_file(path, other, sizeof other))
            other_line = line;
    }
    snprintf(out, outlen, "%s", other[0] ? other : file);
    return other[0] ? other_line : def_line;
}
