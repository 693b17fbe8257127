/* envd as a sandbox's pid 1 (under gVisor, where no bwrap init runs
 * before it): orphans of the sandbox's commands are reparented to pid 1,
 * and a pid 1 that never reaps them leaves zombies that `kill -0` still
 * finds. So pid 1 becomes a minimal init, as bwrap's is: it forks envd,
 * reaps every child, passes SIGTERM/SIGINT on to envd and ends with it
 * (which ends the sandbox). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

void abxl_envd_init_if_pid1(void)
{
    sigset_t set, old;
    if (getpid() != 1)
        return;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, &old);
    pid_t envd = fork();
    if (envd < 0) {
        abxl_log(ABXL_LOG_WARN, "pid 1: cannot fork an init (%s); orphans stay unreaped",
                 strerror(errno));
        sigprocmask(SIG_SETMASK, &old, NULL);
        return;
    }
    if (envd == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        return;   /* envd proper */
    }
    prctl(PR_SET_NAME, "abx-init", 0, 0, 0);
    for (;;) {
        siginfo_t si;
        if (sigwaitinfo(&set, &si) < 0)
            continue;
        if (si.si_signo != SIGCHLD) {
            kill(envd, si.si_signo);
            continue;
        }
        int st;
        pid_t w;
        while ((w = waitpid(-1, &st, WNOHANG)) > 0)
            if (w == envd)
                _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    }
}
