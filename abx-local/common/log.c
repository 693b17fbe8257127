/* Diagnostics on stderr and command output on stdout (log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#ifndef ABXL_PROG
#error "ABXL_PROG names the program (abx-local or abx-envd)"
#endif

static const char *level_word(enum abxl_log_level level)
{
    switch (level) {
    case ABXL_LOG_WARN:
        return "warning: ";
    case ABXL_LOG_FATAL:
        return "fatal: ";
    case ABXL_LOG_INFO:
    case ABXL_LOG_ERROR:
    default:
        return "";
    }
}

/* head + message + "\n" in one fputs: stderr is unbuffered, so one write
 * and lines of concurrent threads do not mix. head is short (< 128). */
static void emit(const char *head, const char *fmt, va_list ap)
{
    char small[1024], *line = small;
    size_t hn = strlen(head), cap = sizeof small;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n < 0)
        goto out;
    if (hn + (size_t)n + 2 > cap) {
        char *big = malloc(hn + (size_t)n + 2);
        if (big != NULL) {   /* else the line cut short: a part beats none */
            line = big;
            cap = hn + (size_t)n + 2;
        }
    }
    memcpy(line, head, hn);
    vsnprintf(line + hn, cap - hn - 1, fmt, again);   /* room left for '\n' */
    size_t len = strlen(line);
    line[len] = '\n';
    line[len + 1] = '\0';
    fputs(line, stderr);
out:
    va_end(again);
    if (line != small)
        free(line);
}

void abxl_log(enum abxl_log_level level, const char *fmt, ...)
{
    char head[64];
    snprintf(head, sizeof head, "%s: %s", ABXL_PROG, level_word(level));
    va_list ap;
    va_start(ap, fmt);
    emit(head, fmt, ap);
    va_end(ap);
}

void abxl_log_cmd(const char *cmd, enum abxl_log_level level, const char *fmt, ...)
{
    char head[128];
    snprintf(head, sizeof head, "%s %s: %s", ABXL_PROG, cmd, level_word(level));
    va_list ap;
    va_start(ap, fmt);
    emit(head, fmt, ap);
    va_end(ap);
}

void abxl_log_banner(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(ABXL_PROG " ", fmt, ap);
    va_end(ap);
}

void abxl_out(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

void abxl_out_flush(void)
{
    fflush(stdout);
}

void abxl_usage(const char *text, bool error)
{
    fputs(text, error ? stderr : stdout);
}
