/* Signals only set flags (and forward to workers); the loops act on them.
 *
 * Parent: SIGINT/SIGTERM -> stop scheduling and ask every worker to stop
 * (SIGUSR1); a second signal kills the workers and exits 2 at once.
 * Worker: ignores SIGINT (a terminal's Ctrl-C reaches the whole process
 * group; the parent forwards it once). SIGUSR1/SIGTERM interrupt the
 * running test through the Lua hook; a second one of the same kind exits
 * at once. SIGUSR2
 * means "stop after the current test" (-x / --maxfail on another worker).
 * repl: SIGINT is the REPL's (cancel the line, interrupt the statement). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "out.h"

#define MAX_CHILDREN 256

static volatile sig_atomic_t g_count;
static volatile sig_atomic_t g_stop;
static volatile pid_t g_children[MAX_CHILDREN];
static volatile sig_atomic_t g_nchildren;
static volatile sig_atomic_t g_repl_sigint;
static int g_wake_fd = -1;  /* the REPL's wake pipe (write end) */

/* A byte on the REPL's wake pipe: its prompt waits in poll() on it, so it
 * wakes whichever thread the kernel picked to run the handler. */
static void wake_repl(void)
{
    int e = errno;

    if (g_wake_fd >= 0) {
        ssize_t n = write(g_wake_fd, "!", 1);  /* full: one is pending */
        (void)n;
    }
    errno = e;
}

static void on_parent_signal(int sig)
{
    int i;

    (void)sig;
    g_count++;
    abx_region_interrupt();  /* Lua running here (collection, exec) */
    wake_repl();
    for (i = 0; i < g_nchildren; i++) {
        if (g_children[i] > 0)
            kill(g_children[i], g_count > 1 ? SIGKILL : SIGUSR1);
    }
    if (g_count > 1)
        _exit(ABX_EXIT_INTERRUPTED);
}

/* A SIGTERM sent to the whole process group reaches a worker twice: by
 * itself and as the parent's forwarded SIGUSR1. That is one request (its
 * teardown, sandbox deletes included, must still run); only a repeat of
 * the same signal means "now". */
static volatile sig_atomic_t g_seen_term, g_seen_usr1;

static void on_worker_signal(int sig)
{
    volatile sig_atomic_t *seen = sig == SIGTERM ? &g_seen_term
                                                 : &g_seen_usr1;

    if (*seen)
        _exit(ABX_EXIT_INTERRUPTED);
    *seen = 1;
    g_count++;
    abx_region_interrupt();
}

static void on_worker_stop(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void install(int sig, void (*fn)(int))
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  /* no SA_RESTART: blocking reads return EINTR */
    sigaction(sig, &sa, NULL);
}

void abx_signals_parent(void)
{
    install(SIGINT, on_parent_signal);
    install(SIGTERM, on_parent_signal);
    signal(SIGPIPE, SIG_IGN);
}

/* The signals the parent sends its children. */
static void child_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGUSR1);
    sigaddset(set, SIGUSR2);
    sigaddset(set, SIGTERM);
}

pid_t abx_fork_child(void)
{
    sigset_t set, saved;
    pid_t pid;

    abx_out_flush();   /* a buffered line is not printed twice */
    child_signals(&set);
    pthread_sigmask(SIG_BLOCK, &set, &saved);
    pid = fork();
    if (pid != 0) {
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        return pid;
    }
    abx_out_after_fork_child();
    abx_relay_child();
    return 0;
}

void abx_signals_worker(void)
{
    sigset_t set;

    g_count = 0;
    g_seen_term = g_seen_usr1 = 0;
    g_nchildren = 0;
    signal(SIGINT, SIG_IGN);
    install(SIGUSR1, on_worker_signal);
    install(SIGTERM, on_worker_signal);
    install(SIGUSR2, on_worker_stop);
    signal(SIGPIPE, SIG_IGN);
    /* Forked with them blocked (abx_fork_child): one sent
     * before now was held, and is handled from here. */
    child_signals(&set);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/* repl: a SIGINT (the terminal's Ctrl-C) interrupts the running statement
 * or cancels the line being typed, never the program: the REPL decides
 * what the next one means. It does not count as a stop (abx_signal_count)
 * either: the teardown after it keeps its full budget. */
static void on_repl_sigint(int sig)
{
    (void)sig;
    g_repl_sigint = 1;
    abx_region_interrupt();
    wake_repl();
}

void abx_signals_repl(int on, int wake_fd)
{
    g_wake_fd = on ? wake_fd : -1;
    g_repl_sigint = 0;
    install(SIGINT, on ? on_repl_sigint : on_parent_signal);
}

int abx_repl_sigint(void) { return g_repl_sigint != 0; }

void abx_repl_sigint_clear(void)
{
    g_repl_sigint = 0;
    abx_region_reset_interrupt();
}

int abx_signal_count(void) { return g_count; }
int abx_stop_requested(void) { return g_stop != 0; }

void abx_signals_set_children(const int *pids, size_t n)
{
    size_t i;

    g_nchildren = 0;  /* the handler sees either the old or new count */
    for (i = 0; i < n && i < MAX_CHILDREN; i++)
        g_children[i] = pids[i];
    g_nchildren = (sig_atomic_t)(n < MAX_CHILDREN ? n : MAX_CHILDREN);
}
