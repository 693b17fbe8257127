/* `abx-local sandbox-enter`: the step between the server and bubblewrap,
 * run as a fresh single-threaded process (the server forks and execs it
 * on its main thread, see sbx_spawn.c), as host root.
 *
 *   abx-local sandbox-enter --dir DIR --lower ROOTFS --disk-mb N [--disk-tmpfs|--disk-keep]
 *       [--cgroup PROCS_FILE]... [--userns BASE COUNT] [--ro SRC DEST]...
 *       [--seccomp BPF_FILE] [--hide PATH]... --runtime NAME -- BWRAP|RUNSC ARGS...
 *
 * 1. It joins the sandbox's cgroups.
 * 2. In a mount namespace of its own (private: nothing propagates to the
 *    host) it mounts a disk of N MiB at DIR/disk (disk.c: a loop-mounted
 *    file system, or a tmpfs with --disk-tmpfs) and, over DIR/root, an
 *    overlay whose lower layer is the template root and whose upper layer
 *    lives on that disk, seeded with DIR/etc/{hostname,hosts,resolv.conf}.
 *    --disk-keep mounts the disk DIR/disk.img already holds, as a
 *    filesystem-only pause left it (life.c), and seeds nothing.
 * 3. It binds each SRC read-only at DEST inside that root (envd, the app,
 *    envd's config), refusing a DEST reached through a symlink, and
 *    removes each hidden PATH through the overlay (a whiteout in the upper
 *    layer: the template root is untouched; --vary base-tools).
 * 4. It makes the root reachable as ABXL_STAGE_ROOT: a tmpfs over /tmp of
 *    this namespace holds it, so the sandbox's root needs no right to
 *    traverse the host's folders that lead to DIR.
 * 5. It moves itself into the sandbox's user namespace (userns.c), owned
 *    by a host uid of its own (OWNER_BASE + its pid), and becomes its
 *    root: host uid BASE, nothing on the host.
 * 6. It execs bwrap with an empty environment and only its descriptors
 *    0-2, the info fd 3 and the seccomp program on fd 4.
 * Steps 5-6 are the runtime's (runtime.h: runtime_bwrap.c as above). Under
 * gVisor (runtime_gvisor.c) DIR is staged too, at ABXL_STAGE_SBX, and
 * runsc runs as pid 1 of new pid, network, ipc and uts namespaces (its
 * own user namespace and seccomp filter replace ours).
 * Debian 12's bubblewrap (0.8) has no --overlay, hence this step. The
 * mounts exist only in namespaces of the sandbox's processes: when they
 * die, the mounts go with them, and nothing is left mounted on the host. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base.h"
#include "log.h"
#include "sandbox.h"

#define MAX_CGROUPS 8
#define MAX_BINDS 8

static int die(const char *what, const char *path)
{
    abxl_log(ABXL_LOG_ERROR, "sandbox root: %s %s: %s", what, path ? path : "",
            strerror(errno));
    return 125;
}

static int copy_seed(const char *dir, const char *upper, const char *name, uid_t owner)
{
    char src[4400], dst[4400], buf[4096];
    abxl_fmt(src, sizeof src, "%s/etc/%s", dir, name);
    abxl_fmt(dst, sizeof dst, "%s/etc/%s", upper, name);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return errno == ENOENT ? 0 : -1;
    ssize_t n = read(in, buf, sizeof buf);
    close(in);
    int out = n >= 0 ? open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    if (out < 0)
        return -1;
    int rc = write(out, buf, (size_t)n) == n && fchown(out, owner, owner) == 0 ? 0 : -1;
    close(out);
    return rc;
}

static bool plain_path(const char *p)
{
    /* overlay's option syntax: ',' separates options, ':' lower layers. */
    return p[0] == '/' && strpbrk(p, ",:\\") == NULL;
}

/* Shows src read-only at dest, a folder under root reached without
 * following any symlink (a template's /opt could point anywhere). Nothing
 * else runs in the root yet, so the checked path is the one mounted on.
 * Not a bind of src: a bind's mountinfo names its host path (the state
 * folder). src is bound at ro/K in DIR, the current folder, and dest is a
 * read-only overlay of it (overlay wants two lower layers without an
 * upper: ro/empty is the second), whose mountinfo root is "/" and whose
 * options name only ro/K. */
/* Removes path from the root (absent already: fine), never through a
 * symlink: its folder is opened beneath the root without following any. */
static int hide(int root_fd, const char *path)
{
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                           .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH};
    char dir[4096];
    const char *rel = path + strspn(path, "/"), *slash = strrchr(rel, '/');
    int fd = root_fd, rc = 0;
    if (slash) {
        if (abxl_fmt(dir, sizeof dir, "%.*s", (int)(slash - rel), rel) != 0)
            return die("path too long:", path);
        fd = (int)syscall(SYS_openat2, root_fd, dir, &how, sizeof how);
        if (fd < 0)
            return errno == ENOENT ? 0 : die("cannot open the folder of", path);
        rel = slash + 1;
    }
    if (unlinkat(fd, rel, 0) != 0 && errno != ENOENT)
        rc = die("cannot hide", path);
    if (fd != root_fd)
        close(fd);
    return rc;
}

static int bind_ro(int root_fd, const char *root, int k, const char *src, const char *dest)
{
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                           .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH};
    const char *rel = dest + strspn(dest, "/");
    int fd = (int)syscall(SYS_openat2, root_fd, rel, &how, sizeof how);
    if (fd < 0)
        return die("no mount point (a folder, no symlink) in the template root for", dest);
    close(fd);
    char at[4600], lower[32], opts[96];
    if (abxl_fmt(at, sizeof at, "%s/%s", root, rel) != 0)
        return die("path too long:", dest);
    snprintf(lower, sizeof lower, "ro/%d", k);
    snprintf(opts, sizeof opts, "lowerdir=%s:ro/empty", lower);
    if ((mkdir("ro", 0700) != 0 && errno != EEXIST) ||
        (mkdir("ro/empty", 0700) != 0 && errno != EEXIST) ||
        (mkdir(lower, 0700) != 0 && errno != EEXIST))
        return die("cannot create the read-only layers in", "ro");
    if (mount(src, lower, NULL, MS_BIND | MS_REC, NULL) != 0 ||
        mount("abx-ro", at, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts) != 0)
        return die("cannot mount read-only at", dest);
    return 0;
}

struct enter_args {
    const char *dir, *lower, *seccomp, *cgroups[MAX_CGROUPS];
    const char *bind_src[MAX_BINDS], *bind_dst[MAX_BINDS], *hide[MAX_BINDS];
    long disk_mb;
    unsigned long uid_base, uid_count;
    int ncg, nbind, nhide;
    bool disk_tmpfs, disk_keep;
    const struct abxl_runtime *rt;
    char **run;   /* the runtime's command line, after `--` */
};

static unsigned long ulong_arg(const char *s, bool *ok)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0)
        *ok = false;
    return v;
}

static int parse(int argc, char **argv, struct enter_args *a)
{
    bool ok = true;
    int i;
    for (i = 2; i + 1 < argc && strcmp(argv[i], "--") != 0 && ok;) {
        const char *o = argv[i], *v = argv[i + 1];
        bool tm = strcmp(o, "--disk-tmpfs") == 0, kp = strcmp(o, "--disk-keep") == 0;
        if (tm || kp) {
            a->disk_tmpfs |= tm;
            a->disk_keep |= kp;
            i++;
            continue;
        }
        if (strcmp(o, "--dir") == 0)
            a->dir = v;
        else if (strcmp(o, "--lower") == 0)
            a->lower = v;
        else if (strcmp(o, "--runtime") == 0)
            ok = (a->rt = abxl_runtime_named(v)) != NULL;
        else if (strcmp(o, "--disk-mb") == 0)
            a->disk_mb = (long)ulong_arg(v, &ok);
        else if (strcmp(o, "--seccomp") == 0)
            a->seccomp = v;
        else if (strcmp(o, "--hide") == 0 && a->nhide < MAX_BINDS && v[0] == '/')
            a->hide[a->nhide++] = v;
        else if (strcmp(o, "--cgroup") == 0 && a->ncg < MAX_CGROUPS)
            a->cgroups[a->ncg++] = v;
        else if (strcmp(o, "--userns") == 0 && i + 2 < argc) {
            a->uid_base = ulong_arg(v, &ok);
            a->uid_count = ulong_arg(argv[++i + 1], &ok);
        } else if (strcmp(o, "--ro") == 0 && i + 2 < argc && a->nbind < MAX_BINDS) {
            a->bind_src[a->nbind] = v;
            a->bind_dst[a->nbind++] = argv[++i + 1];
        } else
            ok = false;
        i += 2;
    }
    if (!ok || i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc || a->dir == NULL ||
        a->lower == NULL || a->rt == NULL || a->disk_mb <= 0 || !plain_path(a->dir) ||
        !plain_path(a->lower) || (a->disk_keep && a->disk_tmpfs) ||
        (a->uid_base > 0 && (a->uid_count == 0 || a->uid_count > 65536 * 64))) {
        abxl_log_cmd("sandbox-enter", ABXL_LOG_ERROR, "internal command, used by the server: "
                     "--dir DIR --lower ROOTFS --disk-mb N [--disk-tmpfs|--disk-keep] "
                     "[--cgroup FILE]... [--userns BASE COUNT] [--ro SRC DEST]... "
                     "[--seccomp FILE] [--hide PATH]... --runtime NAME -- BWRAP|RUNSC ARGS");
        return -1;
    }
    a->run = argv + i + 1;
    return 0;
}

/* Steps 2-3: the overlay root at DIR/root and the read-only binds in it. */
static int make_root(const struct enter_args *a, uid_t owner)
{
    char disk[4400], upper[4500], work[4500], etc[4600], low[4400], opts[16384];
    abxl_fmt(disk, sizeof disk, "%s/disk", a->dir);
    abxl_fmt(upper, sizeof upper, "%s/upper", disk);
    abxl_fmt(work, sizeof work, "%s/work", disk);
    abxl_fmt(etc, sizeof etc, "%s/etc", upper);
    abxl_fmt(low, sizeof low, "%s/lower", a->dir);
    /* The disk's root and the upper layer belong to the sandbox's root. */
    if (a->disk_tmpfs) {
        abxl_fmt(opts, sizeof opts, "size=%ldm,mode=0755,uid=%u,gid=%u", a->disk_mb,
                 (unsigned)owner, (unsigned)owner);
        if (mount("abx-disk", disk, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0)
            return die("cannot mount the sandbox disk (tmpfs) at", disk);
    } else if (abxl_disk_mount(a->dir, a->disk_mb, owner, a->disk_keep, opts, sizeof opts) != 0) {
        abxl_log(ABXL_LOG_ERROR, "sandbox root: %s", opts);
        return 125;
    }
    /* A kept disk (a boot after a filesystem-only pause) has its layer
     * and /etc as the sandbox left them. */
    if (!a->disk_keep &&
        (mkdir(upper, 0755) != 0 || mkdir(work, 0700) != 0 || mkdir(etc, 0755) != 0 ||
         chown(upper, owner, owner) != 0 || chown(etc, owner, owner) != 0))
        return die("cannot create the overlay folders in", disk);
    static const char *const seeds[] = {"hostname", "hosts", "resolv.conf"};
    for (size_t k = 0; k < sizeof seeds / sizeof seeds[0] && !a->disk_keep; k++)
        if (copy_seed(a->dir, upper, seeds[k], owner) != 0)
            return die("cannot write /etc file", seeds[k]);
    /* The overlay's options show in the sandbox's /proc/mounts: give them
     * paths relative to DIR (the template root bound read-only at
     * DIR/lower), so no host path is named there. */
    /* The cache's roots belong to range 0: a sandbox with a range of its
     * own sees its template's through an idmapped mount (uidrange.c). */
    if (a->uid_base != ABXL_UID_BASE && a->uid_base > 0) {
        if (abxl_uidrange_lower(a->lower, low, a->uid_base, opts, sizeof opts) != 0) {
            abxl_log(ABXL_LOG_ERROR, "sandbox root: %s", opts);
            return 125;
        }
    } else if (mount(a->lower, low, NULL, MS_BIND | MS_REC, NULL) != 0 ||
               mount(NULL, low, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) != 0)
        return die("cannot bind the template root at", low);
    if (chdir(a->dir) != 0)
        return die("cannot enter", a->dir);
    if (mount("abx-root", "root", "overlay", 0,
              "lowerdir=lower,upperdir=disk/upper,workdir=disk/work") != 0)
        return die("cannot mount the overlay root (is the overlay module available?) in",
                   a->dir);
    int root_fd = open("root", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0)
        return die("cannot open the root in", a->dir);
    int rc = 0;
    for (int k = 0; k < a->nbind && rc == 0; k++)
        rc = bind_ro(root_fd, "root", k, a->bind_src[k], a->bind_dst[k]);
    for (int k = 0; k < a->nhide && rc == 0; k++)
        rc = hide(root_fd, a->hide[k]);
    close(root_fd);
    return rc;
}

/* Step 4: DIR/root at ABXL_STAGE_ROOT, on a tmpfs over the stage folder;
 * stage_dir (gVisor: runsc's bundle and state) DIR too, at ABXL_STAGE_SBX. */
static int stage_root(const char *dir, bool stage_dir)
{
    char p[4400], at[64];
    abxl_fmt(p, sizeof p, "%s/root", dir);
    /* Both opened before the tmpfs covers the stage: DIR may be under it. */
    int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC), dfd = -1, rc = 0;
    if (fd < 0 || (stage_dir && (dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0))
        rc = die("cannot open", fd < 0 ? p : dir);
    else if (mount("abx-stage", ABXL_STAGE, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "size=64k,mode=0755") != 0)
        rc = die("cannot mount the stage tmpfs at", ABXL_STAGE);
    else if (snprintf(at, sizeof at, "/proc/self/fd/%d", fd) < 0 ||
             mkdir(ABXL_STAGE_ROOT, 0755) != 0 ||
             mount(at, ABXL_STAGE_ROOT, NULL, MS_BIND | MS_REC, NULL) != 0)
        rc = die("cannot stage the root at", ABXL_STAGE_ROOT);
    else if (dfd >= 0 && (snprintf(at, sizeof at, "/proc/self/fd/%d", dfd) < 0 ||
                          mkdir(ABXL_STAGE_SBX, 0700) != 0 ||
                          mount(at, ABXL_STAGE_SBX, NULL, MS_BIND, NULL) != 0))
        rc = die("cannot stage the sandbox's folder at", ABXL_STAGE_SBX);
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd);
    return rc;
}

int abxl_enter_main(int argc, char **argv)
{
    struct enter_args a = {0};
    if (parse(argc, argv, &a) != 0)
        return 2;
    uid_t owner = (uid_t)a.uid_base;
    for (int k = 0; k < a.ncg; k++)
        if (abxl_write_value(a.cgroups[k], "0") != 0)
            return die("cannot join cgroup", a.cgroups[k]);
    /* The seccomp program first, so that it is fd 4 (the server hands
     * over 0-3 only); the runtime's binary opened as host root, before
     * /tmp is covered: it may live there. */
    if (a.seccomp) {
        int sfd = open(a.seccomp, O_RDONLY);
        if (sfd < 0 || (sfd != 4 && (dup2(sfd, 4) != 4 || close(sfd) != 0)))
            return die("cannot open the seccomp program", a.seccomp);
    }
    int exe = open(a.run[0], O_PATH | O_CLOEXEC);
    if (exe < 0)
        return die("cannot open", a.run[0]);
    if (unshare(CLONE_NEWNS) != 0)
        return die("cannot create a mount namespace", NULL);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return die("cannot make mounts private", "/");
    if (make_root(&a, owner) != 0 || stage_root(a.dir, a.rt->stage_dir) != 0)
        return 125;
    struct abxl_enter_run r = {exe, a.run, a.uid_base, a.uid_count, a.seccomp != NULL};
    return a.rt->run(&r);
}
