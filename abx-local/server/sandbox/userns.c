/* A sandbox's user namespace (docs/security.md): uid and gid 0..COUNT-1
 * inside are BASE..BASE+COUNT-1 on the host, so the sandbox's root is an
 * unprivileged host uid that owns nothing of the host. abx-local is root,
 * so it writes the maps itself: no setuid helper (newuidmap) is needed.
 *
 * The calling process (sandbox-enter, single-threaded) moves itself into a
 * new user namespace; a child it forks, still in the host's namespace,
 * writes the maps (a process cannot map ids it does not hold in the
 * parent namespace). The caller then becomes root of the new namespace:
 * host uid BASE, with every capability there and none on the host.
 *
 * The namespace is created with OWNER as the effective uid: the kernel
 * makes the creator's euid its owner and charges what its processes hold
 * of the per-user budgets (inotify instances, POSIX message queues,
 * queued signals) to that owner at the host's level too. Created by root,
 * one sandbox could use up host root's budgets and every other
 * sandbox's; each owner is its own (base.h, ABXL_OWNER_BASE). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base.h"
#include "log.h"
#include "sandbox.h"

static int write_at(pid_t pid, const char *file, const char *text)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/%s", (int)pid, file);
    return abxl_write_value(p, text);
}

/* The mapper: waits for the parent's unshare, writes its maps. Exit 0, or
 * 1 + the failing step on efd. Only async-signal-safe calls: the parent
 * forked it. */
static void mapper(pid_t target, unsigned long base, unsigned long count, int go_fd, int efd)
{
    char map[96], c;
    const char *step = "waiting for the new namespace";
    if (read(go_fd, &c, 1) != 1)
        goto bad;
    snprintf(map, sizeof map, "0 %lu %lu\n", base, count);
    step = "writing uid_map";
    if (write_at(target, "uid_map", map) != 0)
        goto bad;
    /* "allow": envd calls setgroups() for the users it starts; the map
     * is written by a privileged process, so allowing it is safe. */
    step = "writing setgroups";
    if (write_at(target, "setgroups", "allow") != 0 && errno != ENOENT)
        goto bad;
    step = "writing gid_map";
    if (write_at(target, "gid_map", map) != 0)
        goto bad;
    _exit(0);
bad:;
    char msg[160];
    int n = snprintf(msg, sizeof msg, "%s: %s", step, strerror(errno));
    if (n > 0 && write(efd, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) < 0)
        _exit(2);
    _exit(1);
}

int abxl_userns_enter(unsigned long base, unsigned long count, unsigned long owner,
                      char *err, size_t errlen)
{
    int go[2] = {-1, -1}, efd[2] = {-1, -1}, rc = -1;
    pid_t self = getpid(), pid = -1;
    if (pipe2(go, O_CLOEXEC) != 0 || pipe2(efd, O_CLOEXEC) != 0) {
        abxl_fmt(err, errlen, "user namespace: pipe: %s", strerror(errno));
        goto out;
    }
    pid = fork();
    if (pid < 0) {
        abxl_fmt(err, errlen, "user namespace: fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        close(go[1]);
        close(efd[0]);
        mapper(self, base, count, go[0], efd[1]);
    }
    close(go[0]);
    go[0] = -1;
    close(efd[1]);
    efd[1] = -1;
    /* Real and saved uid stay 0: a refused unshare takes euid 0 back. */
    bool owned = setresuid((uid_t)-1, (uid_t)owner, (uid_t)-1) == 0;
    bool made = owned && unshare(CLONE_NEWUSER) == 0;
    int e = errno;
    if (owned && !made && setresuid((uid_t)-1, 0, (uid_t)-1) != 0)
        abxl_log(ABXL_LOG_WARN, "sandbox root: euid 0 not taken back: %s", strerror(errno));
    char msg[160] = "";
    bool sent = made && write(go[1], "x", 1) == 1;
    close(go[1]);   /* without the "x", the mapper reads EOF and exits */
    go[1] = -1;
    int w = abxl_child_wait(pid, efd[0], msg, sizeof msg);
    efd[0] = -1;
    if (!owned) {
        abxl_fmt(err, errlen, "user namespace: cannot take owner uid %lu: %s", owner,
                strerror(e));
        goto out;
    }
    if (!made) {
        abxl_fmt(err, errlen, "user namespaces refused: unshare(CLONE_NEWUSER): %s "
                "(user.max_user_namespaces, or a seccomp/AppArmor policy)", strerror(e));
        goto out;
    }
    if (!sent || w != 0) {
        abxl_fmt(err, errlen, "user namespace: cannot map uids %lu..%lu: %s", base,
                base + count - 1, msg[0] ? msg : "mapper failed");
        goto out;
    }
    /* Root of the new namespace: host uid/gid BASE from here on. */
    if (setresgid(0, 0, 0) != 0 || setgroups(0, NULL) != 0 || setresuid(0, 0, 0) != 0) {
        abxl_fmt(err, errlen, "user namespace: cannot become its root: %s", strerror(errno));
        goto out;
    }
    rc = 0;
out:
    for (int i = 0; i < 2; i++) {
        if (go[i] >= 0)
            close(go[i]);
        if (efd[i] >= 0)
            close(efd[i]);
    }
    return rc;
}

/* An idmapping for mount_setattr(MOUNT_ATTR_IDMAP): a user namespace in
 * which host ids from..from+count-1 are to..to+count-1, held by a child
 * that waits on a pipe while we write its maps and open its namespace. */
int abxl_userns_idmap(unsigned long from, unsigned long to, unsigned long count, char *err,
                      size_t errlen)
{
    int ready[2] = {-1, -1}, hold[2] = {-1, -1}, fd = -1;
    pid_t pid = -1;
    char map[96], p[64], c;
    if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(hold, O_CLOEXEC) != 0) {
        abxl_fmt(err, errlen, "idmapping: pipe: %s", strerror(errno));
        goto out;
    }
    pid = fork();
    if (pid < 0) {
        abxl_fmt(err, errlen, "idmapping: fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        close(ready[0]);
        close(hold[1]);
        if (unshare(CLONE_NEWUSER) != 0 || write(ready[1], "x", 1) != 1)
            _exit(1);
        while (read(hold[0], &c, 1) < 0 && errno == EINTR) {
        }
        _exit(0);
    }
    close(ready[1]);
    ready[1] = -1;
    close(hold[0]);
    hold[0] = -1;
    if (read(ready[0], &c, 1) != 1) {
        abxl_fmt(err, errlen, "idmapping: the child made no user namespace");
        goto out;
    }
    snprintf(map, sizeof map, "%lu %lu %lu\n", from, to, count);
    snprintf(p, sizeof p, "/proc/%d/ns/user", (int)pid);
    if (write_at(pid, "uid_map", map) != 0 || write_at(pid, "gid_map", map) != 0) {
        abxl_fmt(err, errlen, "idmapping: cannot write the maps: %s", strerror(errno));
        goto out;
    }
    fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        abxl_fmt(err, errlen, "idmapping: cannot open %s: %s", p, strerror(errno));
out:
    for (int i = 0; i < 2; i++) {
        if (ready[i] >= 0)
            close(ready[i]);
        if (hold[i] >= 0)
            close(hold[i]);   /* ends the child's wait */
    }
    if (pid > 0)
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
    return fd;
}
