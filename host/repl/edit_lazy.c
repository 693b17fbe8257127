/* libedit loaded on first use (repl_int.h): only `abx-e2e repl` on a
 * terminal edits lines, so no other run maps libedit and the libraries it
 * needs. Its readline(3) functions and the variables that configure it
 * are reached through the loaded library (runtime/codec/lazylib.c). */
#include <stdio.h>
#include <stdlib.h>

#include <editline/readline.h>

#include "lazylib.h"
#include "repl_int.h"

static char *(*p_readline)(const char *);
static int (*p_add_history)(const char *);
static int (*p_rl_initialize)(void);
static void (*p_using_history)(void);
static void (*p_stifle_history)(int);
static int (*p_rl_bind_key)(int, rl_command_func_t *);
static int (*p_rl_insert)(int, int);
/* its variables: dlsym gives their addresses */
static const char **v_readline_name;
static FILE **v_instream, **v_outstream;
static int *v_catch_signals;
static int (**v_getc_function)(FILE *);

static const struct abx_lazysym g_syms[] = {
    {"readline", &p_readline},
    {"add_history", &p_add_history},
    {"rl_initialize", &p_rl_initialize},
    {"using_history", &p_using_history},
    {"stifle_history", &p_stifle_history},
    {"rl_bind_key", &p_rl_bind_key},
    {"rl_insert", &p_rl_insert},
    {"rl_readline_name", &v_readline_name},
    {"rl_instream", &v_instream},
    {"rl_outstream", &v_outstream},
    {"rl_catch_signals", &v_catch_signals},
    {"rl_getc_function", &v_getc_function},
    {NULL, NULL},
};
static struct abx_lazylib g_edit = {.soname = "libedit.so.2", .syms = g_syms};

const char *abx_edit_open(int (*getc_fn)(FILE *), FILE *in, FILE *out, int history_max)
{
    if (!abx_lazylib_ready(&g_edit))
        return g_edit.error;
    *v_readline_name = "abx-e2e";
    *v_catch_signals = 0;   /* the REPL's own handlers (signals.c) */
    *v_getc_function = getc_fn;
    *v_instream = in;
    *v_outstream = out;
    if (p_rl_initialize() != 0)
        return "libedit: rl_initialize failed";
    p_using_history();
    p_stifle_history(history_max);
    p_rl_bind_key('\t', p_rl_insert);  /* a tab, not file name completion */
    return NULL;
}

char *abx_edit_readline(const char *prompt)
{
    return p_readline(prompt);
}

void abx_edit_add_history(const char *line)
{
    p_add_history(line);
}
