/* The guardian: a process forked at run start that outlives a runner that
 * dies without finishing (SIGKILL, crash, OOM) and then sweeps the run.
 *
 * It holds the read end of a pipe whose only write end is the runner's:
 * the kernel closes that end whatever kills the runner, so EOF without
 * the "done" byte means "the runner is gone and did not sweep". It runs
 * in its own session (setsid) so a terminal ^C or a kill of the runner's
 * process group does not reach it, ignores the signals a runner gets on
 * cancellation, and keeps only stderr (masked through abx_out): holding
 * the runner's stdout would keep a CI step that reads it waiting. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "chan.h"
#include "http.h"
#include "ledger.h"
#include "sweep.h"
#include "out.h"
#include "sandbox.h"

#define GUARDIAN_BUDGET 120.0  /* s; nobody waits for it */

static int g_wfd = -1;
static pid_t g_pid = -1;

/* Every later fork (workers, the collector) must not inherit the write
 * end, or the guardian would wait for them too. */
static void atfork_child(void)
{
    if (g_wfd >= 0)
        close(g_wfd);
    g_wfd = -1;
}

static void guardian_main(int rfd, const struct abx_platform *p,
                          const char *run_id, const char *session,
                          const char *ledger,
                          pid_t runner, pid_t local_pid)
{
    struct abx_sweep_report r;
    struct abx_chan ch;
    char *line;

    abx_chan_init(&ch, rfd, 4096);
    while (abx_chan_read_line(&ch, &line, NULL) == 1) {
        cJSON *m = cJSON_Parse(line);
        int done = abx_msg_type(m) == ABX_MSG_DONE;
        cJSON_Delete(m);
        free(line);
        if (done)
            _exit(0);  /* the runner finished and swept */
    }
    abx_chan_free(&ch);
    abx_out_printf(ABX_OUT_STDERR, "abx-e2e guardian: the runner (pid %ld) "
                   "ended without finishing; sweeping run %s\n",
                   (long)runner, run_id);
    abx_sweep_report_init(&r);
    /* As a finished run: a clean sweep leaves no ledger to the janitor. */
    if (abx_sweep_run(p, run_id, session, ledger, GUARDIAN_BUDGET, &r) == 0 &&
        r.kept == 0 && r.left == 0)
        unlink(ledger);
    abx_out_printf(ABX_OUT_STDERR, "abx-e2e guardian: run %s: %zu deleted, "
                   "%zu already gone, %zu kept, %zu left\n", run_id,
                   r.killed, r.gone, r.kept, r.left);
    if (r.log.len)
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e guardian: errors:\n%s",
                       abx_buf_cstr(&r.log));
    abx_sweep_report_free(&r);
    if (local_pid > 0)  /* --local: this fork knows its pid and files */
        abx_local_stop();
    abx_out_flush();
    _exit(r.left ? 1 : 0);
}

int abx_guardian_start(const struct abx_platform *p, const char *run_id,
                       const char *session, const char *ledger,
                       int local_pid)
{
    static int registered;
    int fds[2], err_fd, nul, sig;
    static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT,
                                  SIGUSR1, SIGUSR2, SIGPIPE};
    pid_t runner = getpid(), pid;
    long fd, maxfd;

    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    if (!registered && pthread_atfork(NULL, NULL, atfork_child) != 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    registered = 1;
    abx_out_flush();
    pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        setsid();
        for (sig = 0; sig < (int)(sizeof ignored / sizeof *ignored); sig++)
            signal(ignored[sig], SIG_IGN);
        /* stderr: the real one (not the relay pipe); stdout: nothing. */
        err_fd = dup(abx_relay_real_fd(2));
        abx_out_after_fork_child();
        abx_relay_child();
        if (err_fd >= 0) {
            dup2(err_fd, STDERR_FILENO);
            close(err_fd);
        }
        nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, STDIN_FILENO);
            dup2(nul, STDOUT_FILENO);
            close(nul);
        }
        /* Nothing else of the runner's stays open here (its pipes,
         * abx-local's output, the ledger descriptor). */
        maxfd = sysconf(_SC_OPEN_MAX);
        if (maxfd < 0 || maxfd > 65536)
            maxfd = 65536;
        for (fd = 3; fd < maxfd; fd++)
            if (fd != fds[0])
                close((int)fd);
        abx_http_after_fork();
        guardian_main(fds[0], p, run_id, session, ledger, runner,
                      local_pid);
    }
    close(fds[0]);
    g_wfd = fds[1];
    g_pid = pid;
    return 0;
}

void abx_guardian_done(void)
{
    struct timespec ts = {0, 10 * 1000 * 1000};
    int i;

    if (g_wfd >= 0) {
        abx_chan_send(g_wfd, abx_msg_new(ABX_MSG_DONE), NULL);
        close(g_wfd);
        g_wfd = -1;
    }
    /* It exits as soon as it reads "done": wait on its pidfd (readable
     * when it has exited) rather than polling, at most 2 s as before. */
    if (g_pid > 0) {
        int pfd = (int)syscall(SYS_pidfd_open, g_pid, 0);
        if (pfd >= 0) {
            struct pollfd p = {.fd = pfd, .events = POLLIN};
            while (poll(&p, 1, 2000) < 0 && errno == EINTR)
                ;
            close(pfd);
        }
    }
    for (i = 0; g_pid > 0 && i < 200; i++) {
        if (waitpid(g_pid, NULL, WNOHANG) != 0)
            break;
        nanosleep(&ts, NULL);  /* no pidfd (old kernel), or it hangs */
    }
    g_pid = -1;
}
