/* envd's side of a command's keeper (../keeper/keeper.h): forks it,
 * learns the command's pid and end from its control pipe, asks it to end
 * everything at the deadline, and reaps it once it has nothing left.
 *
 * A process group is not enough: `setsid` leaves it, and a double fork
 * leaves the command's tree. The keeper is a child subreaper
 * (PR_SET_CHILD_SUBREAPER): an orphan among the command's descendants
 * becomes the keeper's child, not the sandbox init's. Between fork and
 * exec only async-signal-safe calls (envd is multithreaded). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"
#include "keeper.h"

static const char *keeper_path;   /* abx-keeper, or NULL: run in the fork */

void abxl_envd_keeper_set_path(const char *path)
{
    keeper_path = path;
}

static void close_at_least(int dirfd, const char *name, long fd, void *from)
{
    (void)name;
    if (fd >= *(int *)from && fd != dirfd)
        close((int)fd);
}

/* close_range(from, ~0U, 0), or (gVisor before 2023 has none) each fd
 * /proc/self/fd lists. */
static void close_from(int from)
{
    if (close_range((unsigned)from, ~0U, 0) != 0)
        abxl_keeper_each_number("/proc/self/fd", close_at_least, &from);
}

pid_t abxl_envd_keeper_fork(void (*start)(void *arg), void *arg, int *ctl_fd)
{
    int ctl[2];
    sigset_t block, old;
    if (pipe2(ctl, O_CLOEXEC) != 0)
        return -1;
    /* Blocked before the fork: a SIGCHLD or kill request can come before
     * the keeper waits for them. */
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigaddset(&block, ABXL_KEEPER_KILL);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    pid_t k = fork();
    if (k == 0) {
        struct sigaction ign = {.sa_handler = SIG_IGN}, dfl = {.sa_handler = SIG_DFL};
        sigaction(SIGCHLD, &dfl, NULL);   /* SIG_IGN would drop it */
        int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR2};
        for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
            sigaction(sigs[i], &ign, NULL);
        /* Raw calls and _Fork (no atfork handlers): a sanitizer's prctl
         * (PR_SET_NAME records the thread's name) and fork take its
         * locks, which another thread of envd may have held at our fork;
         * in this copy nobody would release them (keepers hung at 20
         * sudo commands at once under ASan). */
        syscall(SYS_prctl, PR_SET_NAME, "abx-keeper", 0, 0, 0);
        syscall(SYS_prctl, PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        close(ctl[0]);
        pid_t c = _Fork();
        if (c == 0)
            start(arg);   /* the command: never returns */
        if (c < 0) {
            int e = -errno;
            ssize_t w = write(ctl[1], &e, sizeof e);
            (void)w;
            _exit(1);
        }
        /* Nothing of envd's: only the control pipe (fd 3) and 0-2. */
        if (ctl[1] == ABXL_KEEPER_CTL_FD ? fcntl(ctl[1], F_SETFD, 0) != 0
                                         : dup2(ctl[1], ABXL_KEEPER_CTL_FD) != ABXL_KEEPER_CTL_FD)
            _exit(1);   /* (dup2 clears close-on-exec; onto itself it does not) */
        close_from(ABXL_KEEPER_CTL_FD + 1);
        if (keeper_path) {
            char num[24], *q = num + sizeof num;
            *--q = '\0';
            for (unsigned v = (unsigned)c; q == num + sizeof num - 1 || v; v /= 10)
                *--q = (char)('0' + v % 10);
            const char *argv[] = {"abx-keeper", q, NULL};
            char *envp[] = {NULL};
            execve(keeper_path, (char *const *)argv, envp);
        }
        abxl_keeper_run(c, ABXL_KEEPER_CTL_FD);   /* no abx-keeper: this fork */
    }
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(ctl[1]);
    if (k < 0) {
        close(ctl[0]);
        errno = e;
        return -1;
    }
    *ctl_fd = ctl[0];
    return k;
}

int abxl_envd_keeper_read(int ctl, int *value, int block)
{
    for (;;) {
        if (!block) {
            struct pollfd f = {.fd = ctl, .events = POLLIN};
            if (poll(&f, 1, 0) == 0)
                return 0;
        }
        ssize_t r = read(ctl, value, sizeof *value);
        if (r == (ssize_t)sizeof *value)
            return 1;
        if (r < 0 && errno == EINTR)
            continue;
        return -1;   /* the keeper is gone */
    }
}

void abxl_envd_keeper_end(pid_t keeper)
{
    kill(keeper, ABXL_KEEPER_KILL);
}

void abxl_envd_keeper_release(pid_t keeper, int ctl, int64_t deadline_ms)
{
    char b[64];
    for (;;) {
        int timeout = -1;
        if (deadline_ms) {
            int64_t left = deadline_ms - abxl_envd_now_ms();
            if (left <= 0) {
                abxl_envd_keeper_end(keeper);
                deadline_ms = 0;
                continue;
            }
            timeout = left > 60000 ? 60000 : (int)left;
        }
        struct pollfd f = {.fd = ctl, .events = POLLIN};
        if (poll(&f, 1, timeout) < 0 && errno != EINTR)
            break;
        if (f.revents && read(ctl, b, sizeof b) <= 0)
            break;   /* EOF: the keeper has ended */
    }
    close(ctl);
    while (waitpid(keeper, NULL, 0) < 0 && errno == EINTR)
        ;
}
