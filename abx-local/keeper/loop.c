/* The keeper's loop (keeper.h): reaps, reports the command's end on the
 * control pipe, and at the deadline kills everything the command started.
 * Async-signal-safe calls only (it also runs in a fork of the
 * multithreaded envd): no stdio, no malloc; /proc read with raw syscalls. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keeper.h"

static void put_int(int fd, int v)
{
    ssize_t w = write(fd, &v, sizeof v);  /* atomic: below PIPE_BUF */
    (void)w;
}

/* Reaps what has ended; the command's status goes to ctl once. Returns 0
 * when no child is left. */
static int reap(pid_t cmd, int ctl, int *reported)
{
    int st;
    pid_t w;
    while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
        if (w == cmd && !*reported) {
            put_int(ctl, st);
            *reported = 1;
        }
    }
    return !(w < 0 && errno == ECHILD);
}

/* The ppid field of /proc/<name>/stat, or -1. */
static pid_t ppid_of(int proc, const char *name)
{
    char path[64], buf[512];
    size_t n = strlen(name);
    if (n + 6 > sizeof path)
        return -1;
    memcpy(path, name, n);
    memcpy(path + n, "/stat", 6);
    int fd = openat(proc, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0)
        return -1;
    buf[r] = '\0';
    char *p = strrchr(buf, ')');   /* the name may hold anything */
    if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
        return -1;
    pid_t v = 0;
    for (p += 4; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
    return v;
}

void abxl_keeper_each_number(const char *dir, void (*fn)(int dirfd, const char *name,
                                                      long n, void *arg), void *arg)
{
    char buf[4096];
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    long got;
    while ((got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < got;) {
            struct dirent64 *d = (struct dirent64 *)(buf + off);
            off += d->d_reclen;
            long n = 0;
            const char *c = d->d_name;
            for (; *c >= '0' && *c <= '9' && n < 1L << 40; c++)
                n = n * 10 + (*c - '0');
            if (c != d->d_name && *c == '\0')
                fn(fd, d->d_name, n, arg);
        }
    }
    close(fd);
}

/* SIGKILL to a child of the keeper (and to its group, if it leads one). */
static void kill_if_child(int proc, const char *name, long pid, void *self)
{
    if (ppid_of(proc, name) != *(pid_t *)self)
        return;
    kill(-(pid_t)pid, SIGKILL);
    kill((pid_t)pid, SIGKILL);
}

static void kill_children(pid_t self)
{
    abxl_keeper_each_number("/proc", kill_if_child, &self);
}

static void end_everything(pid_t self, pid_t cmd, int ctl, int *reported)
{
    kill(-cmd, SIGKILL);
    kill(cmd, SIGKILL);
    /* A fork bomb forks while it is being killed: each pass kills the
     * children there are; their children come to the keeper. */
    while (reap(cmd, ctl, reported)) {
        kill_children(self);
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

_Noreturn void abxl_keeper_run(pid_t cmd, int ctl)
{
    sigset_t set;
    siginfo_t si;
    int reported = 0;
    pid_t self = getpid();

    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, ABXL_KEEPER_KILL);
    put_int(ctl, (int)cmd);
    while (reap(cmd, ctl, &reported)) {
        if (sigwaitinfo(&set, &si) < 0)
            continue;
        if (si.si_signo == ABXL_KEEPER_KILL)
            end_everything(self, cmd, ctl, &reported);
    }
    if (!reported)
        put_int(ctl, SIGKILL);   /* cannot happen: it was a child */
    _exit(0);
}

