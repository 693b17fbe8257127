/* Runs a helper program (mmdebstrap, skopeo, umoci, ldd, mke2fs) from a
 * single-threaded part of abx-local (template commands, startup before
 * the listeners, sandbox-enter), its stdout and stderr read line by line. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base.h"

#define LINE_MAX_LEN 4096

int abxl_run_lines(const char *const argv[], abxl_line_fn fn, void *arg, char *err,
                   size_t errlen)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        abxl_fmt(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        abxl_fmt(err, errlen, "fork: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_RDONLY);
        if (nul < 0 || dup2(nul, 0) < 0 || dup2(pfd[1], 1) < 0 || dup2(pfd[1], 2) < 0)
            _exit(126);
        close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);   /* nothing of the caller's */
        execvp(argv[0], (char *const *)argv);   /* exec does not write them */
        /* The helper's own output, read by the parent like its other lines. */
        dprintf(pfd[1], "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    FILE *f = fdopen(pfd[0], "r");
    char line[LINE_MAX_LEN];
    while (f && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (fn)
            fn(line, arg);
    }
    if (f)
        fclose(f);
    else
        close(pfd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status))
        abxl_fmt(err, errlen, "%s exited with status %d", argv[0], WEXITSTATUS(status));
    else
        abxl_fmt(err, errlen, "%s was killed by signal %d", argv[0],
                WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return -1;
}

int abxl_child_wait(pid_t pid, int efd, char *msg, size_t n)
{
    ssize_t r = pid > 0 ? read(efd, msg, n - 1) : -1;
    close(efd);
    msg[r > 0 ? r : 0] = '\0';
    int status = 1;
    if (pid > 0)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int abxl_try_in_mount_ns(int (*step)(void *arg, char *msg, size_t n), void *arg, char *err,
                         size_t errlen)
{
    int efd[2];
    if (pipe2(efd, O_CLOEXEC) != 0) {
        abxl_fmt(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        char msg[512] = "cannot make a private mount namespace";
        close(efd[0]);
        if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
            step(arg, msg, sizeof msg) == 0)
            _exit(0);
        if (write(efd[1], msg, strnlen(msg, sizeof msg - 1)) < 0)
            _exit(2);
        _exit(1);
    }
    close(efd[1]);
    char msg[512] = "";
    if (abxl_child_wait(pid, efd[0], msg, sizeof msg) == 0)
        return 0;
    abxl_fmt(err, errlen, "%s", msg[0] ? msg : "fork failed");
    return -1;
}
