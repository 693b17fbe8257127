/* Line input of `abx-e2e repl` (repl_line.c), for repl.c: lines from
 * libedit when stdin and stdout are terminals, plain reads otherwise (a
 * pipe, a file); Ctrl-C and SIGTERM wake a waiting read; the history of
 * interactive sessions in .abx-e2e/repl_history. */
#ifndef ABX_REPL_INT_H
#define ABX_REPL_INT_H

#include <stddef.h>
#include <stdio.h>

#include "buf.h"

#define ABX_REPL_HISTORY ".abx-e2e/repl_history"
#define ABX_REPL_HISTORY_MAX 500           /* entries kept */
#define ABX_REPL_LINE_MAX (1024 * 1024)    /* bytes of one line */

enum abx_repl_got {
    ABX_REPL_LINE,     /* a line, without its newline */
    ABX_REPL_EOF,      /* end of input (Ctrl-D) */
    ABX_REPL_SIGINT,   /* Ctrl-C: what was typed is dropped */
    ABX_REPL_STOP,     /* SIGTERM */
    ABX_REPL_TOOLONG,  /* a line over ABX_REPL_LINE_MAX: skipped */
};

/* Installs the REPL's SIGINT handling and, on a terminal, libedit and the
 * history. 0, or -1 with err. */
int abx_repl_line_open(char *err, size_t errlen);
/* 1 when stdin is a terminal: a person types (prompts, history). */
int abx_repl_tty(void);
/* Reads one line into out (reset first), after prompt when stdin is a
 * terminal. */
enum abx_repl_got abx_repl_line(const char *prompt, struct abx_buf *out);
/* A statement entered (interactive sessions only; not a repeat). */
void abx_repl_history_add(const char *s, size_t len);
/* Saves the history (masked), gives SIGINT back to the runner. */
void abx_repl_line_close(void);

/* ---- libedit, loaded on first use (edit_lazy.c) ------------------------ */
/* Loads libedit and sets it up: bytes from getc_fn, the terminal in and
 * out, history_max lines kept, a tab inserted. NULL, or why not (then
 * the REPL reads plain lines). */
const char *abx_edit_open(int (*getc_fn)(FILE *), FILE *in, FILE *out, int history_max);
/* After abx_edit_open: readline(3) and add_history(3). */
char *abx_edit_readline(const char *prompt);
void abx_edit_add_history(const char *line);

#endif
