/* Each sandbox's uids are its own (docs/security.md, "Budgets"): the
 * kernel charges pipe buffers (fs.pipe-user-pages-soft), RLIMIT_NPROC and
 * the like to the host uid a process runs as. With one range for every
 * sandbox, one sandbox's root holding 64 MiB of pipes leaves every other
 * sandbox's new pipes at one page. So a sandbox gets range K of 65536 ids,
 * host ABXL_UID_BASE + K * 65536 on (K >= 1), like Podman's
 * --userns=auto, and sees its template's root, owned by range 0 in the
 * cache, through an idmapped mount that shows range 0 as its own range
 * (abxl_uidrange_lower, used by sandbox-enter).
 *
 * K is unique on the machine, across servers: it is held by binding an
 * abstract unix socket named after it, closed when the sandbox is gone
 * (and by the kernel if the server dies, its sandboxes with it). Where
 * idmapped mounts do not work (an old kernel, a cache on a file system
 * without them) every sandbox gets range 0, with a warning at start. */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "base.h"
#include "log.h"
#include "sandbox.h"

/* Ranges 1..SLOTS: the last id, BASE + (SLOTS + 1) * COUNT - 1, stays
 * below 2^32 - 1 (the invalid uid). */
#define SLOTS 36000U

/* Where the next search starts; creates run on request threads. */
static _Atomic unsigned next_slot;

static int hold(unsigned k)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    /* sun_path[0] = '\0': an abstract name, gone with the last close. */
    int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "abx-local/uid-range/%u", k);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
                                                     1 + (size_t)n)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int abxl_uidrange_take(unsigned long *base, char *err, size_t errlen)
{
    *base = ABXL_UID_BASE;
    if (!abxl_cfg.uid_ranges)
        return -1;
    if (next_slot == 0)   /* servers started together search from apart */
        next_slot = (unsigned)getpid() % SLOTS;
    for (unsigned i = 0; i < SLOTS; i++) {
        unsigned k = (next_slot + i) % SLOTS + 1;
        int fd = hold(k);
        if (fd >= 0) {
            next_slot = k % SLOTS;
            *base = ABXL_UID_BASE + (unsigned long)k * ABXL_UID_COUNT;
            return fd;
        }
        if (errno != EADDRINUSE)
            break;
    }
    abxl_fmt(err, errlen, "no free uid range for the sandbox (%u in use, or: %s)", SLOTS,
             strerror(errno));
    return -2;
}

int abxl_uidrange_lower(const char *src, const char *at, unsigned long base, char *err,
                        size_t errlen)
{
    int tree = -1, ns = -1, rc = -1;
    tree = (int)syscall(SYS_open_tree, AT_FDCWD, src,
                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (tree < 0) {
        abxl_fmt(err, errlen, "cannot clone the template root %s: %s", src, strerror(errno));
        goto out;
    }
    ns = abxl_userns_idmap(ABXL_UID_BASE, base, ABXL_UID_COUNT, err, errlen);
    if (ns < 0)
        goto out;
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY,
                              .userns_fd = (unsigned long long)ns};
    if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
                sizeof attr) != 0) {
        abxl_fmt(err, errlen, "cannot idmap the template root %s: %s", src, strerror(errno));
        goto out;
    }
    if (syscall(SYS_move_mount, tree, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
        abxl_fmt(err, errlen, "cannot mount the template root at %s: %s", at, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (tree >= 0)
        close(tree);
    if (ns >= 0)
        close(ns);
    return rc;
}

struct probe {
    char l[4300], t[4300], u[4400], w[4400], m[4300], opts[14000];
};

static int probe(void *arg, char *msg, size_t n)
{
    struct probe *p = arg;
    if (abxl_uidrange_lower(abxl_cfg.cache_dir, p->l, ABXL_UID_BASE + ABXL_UID_COUNT, msg, n) !=
        0)
        return -1;
    if (mount("abx-probe", p->t, "tmpfs", 0, "size=1m") != 0 || mkdir(p->u, 0755) != 0 ||
        mkdir(p->w, 0755) != 0 || mount("abx-probe", p->m, "overlay", 0, p->opts) != 0) {
        snprintf(msg, n, "an overlay on an idmapped lower layer: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* Once, at start, in a child with a private mount namespace: an idmapped
 * view of the cache, the lower layer of an overlay on a tmpfs, as
 * sandbox-enter makes them. */
bool abxl_uidrange_check(char *err, size_t errlen)
{
    static struct probe p;   /* main thread, once: 40 KiB off the stack */
    char base[4200];
    abxl_fmt(base, sizeof base, "%s/idmap-probe", abxl_cfg.state_dir);
    abxl_fmt(p.l, sizeof p.l, "%s/l", base);
    abxl_fmt(p.t, sizeof p.t, "%s/t", base);
    abxl_fmt(p.m, sizeof p.m, "%s/m", base);
    abxl_fmt(p.u, sizeof p.u, "%s/u", p.t);
    abxl_fmt(p.w, sizeof p.w, "%s/w", p.t);
    abxl_fmt(p.opts, sizeof p.opts, "lowerdir=%s,upperdir=%s,workdir=%s", p.l, p.u, p.w);
    abxl_rm_rf(base);
    if (mkdir(base, 0700) != 0 || mkdir(p.l, 0755) != 0 || mkdir(p.t, 0755) != 0 ||
        mkdir(p.m, 0755) != 0) {
        abxl_fmt(err, errlen, "cannot create %s: %s", base, strerror(errno));
        return false;
    }
    int rc = abxl_try_in_mount_ns(probe, &p, err, errlen);
    abxl_rm_rf(base);
    return rc == 0;
}
