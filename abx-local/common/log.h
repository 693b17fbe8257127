/* Diagnostics and terminal output of abx-local and abx-envd. One
 * implementation (log.c) compiled into each program with ABXL_PROG naming
 * it, so that every diagnostic starts with the program that wrote it. The
 * only file of abx-local that writes to stdout or stderr
 * (scripts/checksrc.sh); it uses nothing but libc. */
#ifndef ABXL_LOG_H
#define ABXL_LOG_H

#include <stdbool.h>

/* The level picks the word after the program's name; errors carry none:
 * their message says what failed. */
enum abxl_log_level {
    ABXL_LOG_INFO,    /* "abx-local: sandbox X created" */
    ABXL_LOG_ERROR,   /* "abx-local: cannot ..." */
    ABXL_LOG_WARN,    /* "abx-local: warning: ..." */
    ABXL_LOG_FATAL,   /* "abx-local: fatal: ..." (the process ends next) */
};

/* One line on stderr: "<prog>: <level word>msg\n", written at once so
 * that lines of concurrent threads do not mix. */
void abxl_log(enum abxl_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same from a sub-command: "<prog> <cmd>: <level word>msg\n". */
void abxl_log_cmd(const char *cmd, enum abxl_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A line that opens with the program's name as a sentence's subject,
 * "<prog> msg\n" (abx-envd's start line: "abx-envd 0.6.4 ... listening"). */
void abxl_log_banner(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A command's result on stdout, as formatted (version, tables, the
 * `export` lines); buffered until abxl_out_flush or exit. */
void abxl_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void abxl_out_flush(void);
/* Usage text, verbatim: on stdout when asked for (--help), on stderr
 * after a mistake (error). */
void abxl_usage(const char *text, bool error);

#endif
