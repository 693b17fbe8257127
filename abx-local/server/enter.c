/* `abx-local sandbox-enter`: the step between the server and bubblewrap,
 * run as a fresh single-threaded process (the server forks and execs it
 * on its main thread, see sbx_spawn.c).
 *
 *   abx-local sandbox-enter --dir DIR --lower ROOTFS --disk-mb N
 *                           [--cgroup PROCS_FILE]... -- BWRAP ARGS...
 *
 * It joins the sandbox's cgroups, then in a mount namespace of its own
 * (private: nothing propagates to the host) mounts a tmpfs of N MiB at
 * DIR/disk, and over DIR/root an overlay whose lower layer is the
 * template root and whose upper layer lives on that tmpfs, seeded with
 * DIR/etc/{hostname,hosts,resolv.conf}; then it execs bwrap, which binds
 * DIR/root as the sandbox's /. Debian 12's bubblewrap (0.8) has no
 * --overlay, hence this step. The mounts exist only in namespaces of
 * the sandbox's processes: when they die, the mounts go with them, and
 * nothing is left mounted on the host. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "server.h"

#define MAX_CGROUPS 8

static int die(const char *what, const char *path)
{
    abxl_log(ABXL_LOG_ERROR, "sandbox root: %s %s: %s", what, path ? path : "",
            strerror(errno));
    return 125;
}

static int write_file(const char *path, const char *data)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = strlen(data);
    int rc = write(fd, data, n) == (ssize_t)n ? 0 : -1;
    close(fd);
    return rc;
}

static int copy_seed(const char *dir, const char *upper, const char *name)
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
    int rc = write(out, buf, (size_t)n) == n ? 0 : -1;
    close(out);
    return rc;
}

static bool plain_path(const char *p)
{
    /* overlay's option syntax: ',' separates options, ':' lower layers. */
    return p[0] == '/' && strpbrk(p, ",:\\") == NULL;
}

int abxl_enter_main(int argc, char **argv)
{
    const char *dir = NULL, *lower = NULL, *cgroups[MAX_CGROUPS];
    long disk_mb = 0;
    int ncg = 0, i;
    for (i = 2; i + 1 < argc && strcmp(argv[i], "--") != 0; i += 2) {
        if (strcmp(argv[i], "--dir") == 0)
            dir = argv[i + 1];
        else if (strcmp(argv[i], "--lower") == 0)
            lower = argv[i + 1];
        else if (strcmp(argv[i], "--disk-mb") == 0)
            disk_mb = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--cgroup") == 0 && ncg < MAX_CGROUPS)
            cgroups[ncg++] = argv[i + 1];
        else
            break;
    }
    if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc || dir == NULL ||
        lower == NULL || disk_mb <= 0 || !plain_path(dir) || !plain_path(lower)) {
        abxl_log_cmd("sandbox-enter", ABXL_LOG_ERROR, "internal command, used by the server: "
                     "--dir DIR --lower ROOTFS --disk-mb N [--cgroup FILE]... -- BWRAP ARGS");
        return 2;
    }
    char **bwrap = argv + i + 1;
    for (int k = 0; k < ncg; k++)
        if (write_file(cgroups[k], "0") != 0)
            return die("cannot join cgroup", cgroups[k]);
    if (unshare(CLONE_NEWNS) != 0)
        return die("cannot create a mount namespace", NULL);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return die("cannot make mounts private", "/");
    char disk[4400], upper[4500], work[4500], etc[4600], low[4400], opts[16384];
    abxl_fmt(disk, sizeof disk, "%s/disk", dir);
    abxl_fmt(upper, sizeof upper, "%s/upper", disk);
    abxl_fmt(work, sizeof work, "%s/work", disk);
    abxl_fmt(etc, sizeof etc, "%s/etc", upper);
    abxl_fmt(low, sizeof low, "%s/lower", dir);
    abxl_fmt(opts, sizeof opts, "size=%ldm,mode=0755", disk_mb);
    if (mount("abx-disk", disk, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0)
        return die("cannot mount the sandbox disk (tmpfs) at", disk);
    if (mkdir(upper, 0755) != 0 || mkdir(work, 0700) != 0 || mkdir(etc, 0755) != 0)
        return die("cannot create the overlay folders in", disk);
    static const char *const seeds[] = {"hostname", "hosts", "resolv.conf"};
    for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++)
        if (copy_seed(dir, upper, seeds[k]) != 0)
            return die("cannot write /etc file", seeds[k]);
    /* The overlay's options show in the sandbox's /proc/mounts: give them
     * paths relative to DIR (the template root bound read-only at
     * DIR/lower), so no host path is named there. */
    if (mount(lower, low, NULL, MS_BIND | MS_REC, NULL) != 0 ||
        mount(NULL, low, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) != 0)
        return die("cannot bind the template root at", low);
    if (chdir(dir) != 0)
        return die("cannot enter", dir);
    if (mount("abx-root", "root", "overlay", 0,
              "lowerdir=lower,upperdir=disk/upper,workdir=disk/work") != 0)
        return die("cannot mount the overlay root (is the overlay module available?) in", dir);
    execv(bwrap[0], bwrap);
    return die("cannot run", bwrap[0]);
}
