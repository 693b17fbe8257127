/* Line input of `abx-e2e repl`: libedit's readline on a terminal, plain
 * reads otherwise, one byte source for both.
 *
 * Every byte comes from next_byte(), which waits in poll() on stdin and
 * on a wake pipe the SIGINT/SIGTERM handlers write to (signals.c): a
 * Ctrl-C ends the wait whichever thread ran the handler, and one that came
 * before the wait is seen at once. libedit gets its bytes through
 * rl_getc_function (it hands each return value over as one wide
 * character, so UTF-8 sequences are decoded here first), and installs no
 * signal handlers of its own (rl_catch_signals = 0).
 *
 * libedit writes the prompt and the echo of the keys typed straight to
 * the terminal: its cursor arithmetic needs the exact bytes, and they are
 * the user's own keystrokes. Everything the REPL itself prints goes
 * through abx_out (repl.c). The history file is written through the
 * masker too: a secret pasted into the prompt is not kept on disk. */
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "out.h"
#include "repl.h"
#include "repl_int.h"
#include "utf8.h"

static struct {
    char buf[4096];
    size_t pos, len;
} g_in;                       /* read from stdin, not yet taken */
static int g_wake[2] = {-1, -1};
static int g_in_fd;           /* stdin, or its own non-blocking open (tty) */
static enum abx_repl_got g_why;  /* why next_byte() returned -1 */
static int g_tty, g_edit, g_utf8;
static FILE *g_out;           /* libedit's output: the real terminal */
static char *g_hist[ABX_REPL_HISTORY_MAX];
static size_t g_nhist;

int abx_repl_tty(void) { return g_tty; }

static void drain_wake(void)
{
    char b[64];

    while (read(g_wake[0], b, sizeof b) > 0)
        ;
}

/* The next byte of stdin, or -1 with g_why set (end of input, Ctrl-C,
 * SIGTERM). A Ctrl-C drops what was read ahead, as the terminal drops
 * what was typed ahead. */
static int next_byte(void)
{
    for (;;) {
        struct pollfd p[2];
        ssize_t n;

        if (abx_repl_sigint()) {
            g_in.pos = g_in.len = 0;
            g_why = ABX_REPL_SIGINT;
            return -1;
        }
        if (abx_signal_count() > 0) {
            g_why = ABX_REPL_STOP;
            return -1;
        }
        if (g_in.pos < g_in.len)
            return (unsigned char)g_in.buf[g_in.pos++];
        p[0].fd = g_in_fd;
        p[1].fd = g_wake[0];
        p[0].events = p[1].events = POLLIN;
        p[0].revents = p[1].revents = 0;
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents)
            drain_wake();
        if (!p[0].revents)
            continue;
        n = read(g_in_fd, g_in.buf, sizeof g_in.buf);
        if (n > 0) {
            g_in.pos = 0;
            g_in.len = (size_t)n;
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
            break;
        }
    }
    g_why = ABX_REPL_EOF;
    return -1;
}

/* libedit's byte source: one character (a decoded UTF-8 sequence in a
 * UTF-8 locale), or EOF, which ends readline() with NULL. */
static int getc_hook(FILE *f)
{
    unsigned char s[4];
    size_t n, want;
    uint32_t cp;
    int c = next_byte();

    (void)f;
    if (c < 0)
        return EOF;
    if (c < 0x80 || !g_utf8)
        return c;
    want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    s[0] = (unsigned char)c;
    for (n = 1; n < want; n++) {
        if ((c = next_byte()) < 0)
            return EOF;
        s[n] = (unsigned char)c;
    }
    return abx_utf8_decode(s, n, &cp) == n ? (int)cp : 0xFFFD;
}

static enum abx_repl_got read_plain(const char *prompt, struct abx_buf *out)
{
    int c, over = 0;

    if (g_tty && prompt)
        abx_out_puts(ABX_OUT_STDOUT, prompt);
    abx_out_flush();
    while ((c = next_byte()) >= 0) {
        if (c == '\n')
            return over ? ABX_REPL_TOOLONG : ABX_REPL_LINE;
        if (!over && abx_buf_appendc(out, (char)c) != 0)
            over = 1;
    }
    /* A last line without its newline is still a line. */
    if (g_why == ABX_REPL_EOF && (out->len || over))
        return over ? ABX_REPL_TOOLONG : ABX_REPL_LINE;
    return g_why;
}

static enum abx_repl_got read_edit(const char *prompt, struct abx_buf *out)
{
    char *line;
    int rc;

    abx_out_flush();  /* what the REPL printed comes before the prompt */
    line = abx_edit_readline(prompt);
    if (!line)
        return g_why;
    rc = abx_buf_appends(out, line);
    free(line);
    return rc == 0 ? ABX_REPL_LINE : ABX_REPL_TOOLONG;
}

enum abx_repl_got abx_repl_line(const char *prompt, struct abx_buf *out)
{
    abx_buf_reset(out);
    g_why = ABX_REPL_EOF;
    return g_edit ? read_edit(prompt, out) : read_plain(prompt, out);
}

/* ---- history ---------------------------------------------------------- */

static void hist_push(char *s)
{
    if (g_nhist == ABX_REPL_HISTORY_MAX) {
        free(g_hist[0]);
        memmove(g_hist, g_hist + 1, (g_nhist - 1) * sizeof *g_hist);
        g_nhist--;
    }
    g_hist[g_nhist++] = s;
    if (g_edit)
        abx_edit_add_history(s);
}

void abx_repl_history_add(const char *s, size_t len)
{
    char *copy;

    if (!g_tty || len == 0 || memchr(s, '\0', len))
        return;
    if (g_nhist && strlen(g_hist[g_nhist - 1]) == len &&
        memcmp(g_hist[g_nhist - 1], s, len) == 0)
        return;  /* the same again */
    if ((copy = malloc(len + 1)) == NULL)
        return;
    memcpy(copy, s, len);
    copy[len] = '\0';
    hist_push(copy);
}

/* The file: one entry per line, "\n" and "\\" escaped (a statement may
 * span lines). */
static void history_load(void)
{
    char err[512], *text = NULL, *p, *end;
    size_t len;

    if (abx_read_file(ABX_REPL_HISTORY, 8u << 20, &text, &len, err,
                      sizeof err) != 0)
        return;  /* none yet, or unreadable: start empty */
    for (p = text; p < text + len; p = end + 1) {
        char *w = p, *r;

        end = memchr(p, '\n', (size_t)(text + len - p));
        if (!end)
            end = text + len;
        *end = '\0';
        for (r = p; *r; r++) {
            if (r[0] == '\\' && (r[1] == 'n' || r[1] == '\\'))
                *w++ = *++r == 'n' ? '\n' : '\\';
            else
                *w++ = *r;
        }
        *w = '\0';
        abx_repl_history_add(p, (size_t)(w - p));
    }
    free(text);
}

static void history_save(void)
{
    struct abx_buf b;
    char err[512];
    size_t i;
    int rc = 0;

    abx_buf_init(&b, 64u << 20);
    for (i = 0; i < g_nhist && rc == 0; i++) {
        const char *s;
        for (s = g_hist[i]; *s && rc == 0; s++)
            rc = *s == '\n'   ? abx_buf_appends(&b, "\\n")
                 : *s == '\\' ? abx_buf_appends(&b, "\\\\")
                              : abx_buf_appendc(&b, *s);
        if (rc == 0)
            rc = abx_buf_appendc(&b, '\n');
    }
    if (rc != 0)
        snprintf(err, sizeof err, "out of memory");
    if (rc != 0 || abx_out_write_cache(ABX_REPL_HISTORY, abx_buf_cstr(&b),
                                       b.len, err, sizeof err) != 0)
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e repl: history not saved: "
                       "%s\n", err);
    abx_buf_free(&b);
}

/* ---- set-up ----------------------------------------------------------- */

/* 0, or -1 (the REPL then reads plain lines, with prompts). */
static int edit_open(void)
{
    int fd = fcntl(abx_relay_real_fd(1), F_DUPFD_CLOEXEC, 3);

    if (fd < 0 || (g_out = fdopen(fd, "w")) == NULL) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    /* The user's locale for libedit's characters only (not numbers). */
    setlocale(LC_CTYPE, "");
    g_utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
    if (abx_edit_open(getc_hook, stdin, g_out, ABX_REPL_HISTORY_MAX) != NULL) {
        fclose(g_out);
        g_out = NULL;
        return -1;
    }
    g_edit = 1;
    return 0;
}

/* A terminal's Ctrl-C flushes what was typed ahead: bytes poll() saw may
 * be gone by the read() after it, which would then block with the SIGINT
 * already handled. So the terminal is read through an open file
 * description of our own, non-blocking (setting O_NONBLOCK on fd 0 would
 * change it for the shell that shares it). A pipe or file is read as it
 * is: nothing flushes it. */
static int input_fd(void)
{
    int fd;

    if (!g_tty)
        return 0;
    fd = open("/proc/self/fd/0", O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    return fd >= 0 ? fd : 0;  /* no /proc: the old race, not a failure */
}

int abx_repl_line_open(char *err, size_t errlen)
{
    if (pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    g_tty = isatty(0);
    g_in_fd = input_fd();
    if (g_tty && abx_stdout_isatty() && edit_open() != 0)
        abx_out_puts(ABX_OUT_STDERR, "abx-e2e repl: no line editing (libedit "
                     "could not set up the terminal)\n");
    if (g_tty)
        history_load();
    abx_signals_repl(1, g_wake[1]);
    return 0;
}

void abx_repl_line_close(void)
{
    size_t i;

    abx_signals_repl(0, -1);
    if (g_tty)
        history_save();
    for (i = 0; i < g_nhist; i++)
        free(g_hist[i]);
    g_nhist = 0;
    if (g_out)
        fclose(g_out);
    g_out = NULL;
    g_edit = 0;
    if (g_in_fd > 0)
        close(g_in_fd);
    g_in_fd = 0;
    for (i = 0; i < 2; i++) {
        if (g_wake[i] >= 0)
            close(g_wake[i]);
        g_wake[i] = -1;
    }
}
