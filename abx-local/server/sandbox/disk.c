/* A sandbox's disk: a file system of its own on storage, not memory.
 *
 * DIR/disk.img, a sparse file of the template's diskSizeMB, holds an
 * ext4 file system (made by mke2fs, from e2fsprogs, in a few ms: no
 * journal, the inode tables left to read as the sparse file's zeros). A
 * loop device attaches it, with autoclear, and it is mounted at DIR/disk
 * in sandbox-enter's private mount namespace (enter.c): when the
 * sandbox's last process dies, the mount goes, and with it the loop
 * device. The overlay's upper layer lives on it, so what a sandbox writes
 * is capped by its disk size (ENOSPC, which envd answers 507) and is
 * page cache the kernel can write back, not tmpfs pages pinned to the
 * sandbox's memory limit (docs/security.md: Budgets).
 *
 * Where the machine has no loop devices (a container without /dev/loop*),
 * the server says so once and each disk is a tmpfs of that size, charged
 * to the sandbox's memory as before. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "log.h"
#include "sandbox.h"

/* Loop devices taken by other sandboxes between our GET_FREE and our
 * CONFIGURE are retried; this many tries means something else is wrong. */
#define LOOP_TRIES 64

static const char *mke2fs_path(void)
{
    static const char *const paths[] = {"/usr/sbin/mke2fs", "/sbin/mke2fs"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (access(paths[i], X_OK) == 0)
            return paths[i];
    return "mke2fs";
}

static void keep_last(const char *line, void *arg)
{
    if (line[0])
        snprintf((char *)arg, 256, "%s", line);
}

static int make_fs(const char *img, long mb, uid_t owner, char *err, size_t errlen)
{
    char size[32], ext[96], last[256] = "";
    int fd = open(img, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)mb * 1024 * 1024) != 0) {
        abxl_fmt(err, errlen, "cannot create %s: %s", img, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    snprintf(size, sizeof size, "%ldM", mb);
    /* The disk's root belongs to the sandbox's root; -m 0: all of it is
     * the sandbox's, none reserved for a host root that never logs in. */
    snprintf(ext, sizeof ext, "lazy_itable_init=1,root_owner=%u:%u", (unsigned)owner,
             (unsigned)owner);
    /* -T default: the same inode ratio at every size (small ones would get
     * mke2fs's floppy settings); no resize inode, nothing will grow it. So
     * df shows 98% of the size asked for, not 91% (at 32 MiB). */
    const char *argv[] = {mke2fs_path(), "-q", "-F", "-t", "ext4", "-T", "default", "-O",
                    "^has_journal,^resize_inode", "-m", "0", "-E", ext, "-L", "abx-disk",
                    img, size, NULL};
    char why[256];
    if (abxl_run_lines(argv, keep_last, last, why, sizeof why) != 0) {
        abxl_fmt(err, errlen, "cannot make the disk's file system: %s%s%s", why,
                 last[0] ? ": " : "", last);
        return -1;
    }
    return 0;
}

/* Attaches img to a free loop device; its descriptor, or -1. */
static int loop_attach(const char *img, char *dev, size_t devlen, char *err, size_t errlen)
{
    int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC), ifd = -1, lfd = -1;
    if (ctl < 0) {
        abxl_fmt(err, errlen, "no loop devices (/dev/loop-control: %s)", strerror(errno));
        return -1;
    }
    ifd = open(img, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (ifd < 0) {
        abxl_fmt(err, errlen, "cannot open %s: %s", img, strerror(errno));
        goto out;
    }
    for (int tries = 0; tries < LOOP_TRIES && lfd < 0; tries++) {
        int n = ioctl(ctl, LOOP_CTL_GET_FREE);
        if (n < 0) {
            abxl_fmt(err, errlen, "no free loop device: %s", strerror(errno));
            goto out;
        }
        abxl_fmt(dev, devlen, "/dev/loop%d", n);
        lfd = open(dev, O_RDWR | O_CLOEXEC);
        if (lfd < 0) {
            abxl_fmt(err, errlen, "cannot open %s: %s", dev, strerror(errno));
            goto out;
        }
        /* Direct I/O: the image's blocks are not cached a second time on
         * the host (the kernel falls back to buffered where it cannot). */
        struct loop_config cfg = {.fd = (unsigned)ifd,
                                  .info = {.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO}};
        if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0)
            break;
        int e = errno;
        close(lfd);
        lfd = -1;
        if (e != EBUSY) {
            abxl_fmt(err, errlen, "cannot attach %s to %s: %s", img, dev, strerror(e));
            goto out;
        }
    }
    if (lfd < 0)
        abxl_fmt(err, errlen, "every free loop device was taken first, %d times", LOOP_TRIES);
out:
    if (ifd >= 0)
        close(ifd);
    close(ctl);
    return lfd;
}

int abxl_disk_mount(const char *dir, long mb, uid_t owner, bool keep, char *err, size_t errlen)
{
    char img[4400], at[4400], dev[64];
    abxl_fmt(img, sizeof img, "%s/disk.img", dir);
    abxl_fmt(at, sizeof at, "%s/disk", dir);
    if (!keep && make_fs(img, mb, owner, err, errlen) != 0)
        return -1;
    int lfd = loop_attach(img, dev, sizeof dev, err, errlen);
    if (lfd < 0)
        return -1;
    int rc = 0;
    /* noinit_itable: the kernel need not zero the inode tables, which
     * read as zeros already (a sparse file). */
    if (mount(dev, at, "ext4", MS_NOSUID | MS_NODEV, "noinit_itable") != 0) {
        abxl_fmt(err, errlen, "cannot mount %s (ext4) at %s: %s", dev, at, strerror(errno));
        rc = -1;
    }
    /* The mount holds the device now; autoclear detaches it at unmount
     * (or here, if the mount failed). */
    close(lfd);
    return rc;
}

/* Whether loop device dev is attached to the file (st_dev, st_ino). */
static bool loop_backs(const char *dev, const struct stat *img)
{
    int fd = open(dev, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct loop_info64 li;
    bool on = ioctl(fd, LOOP_GET_STATUS64, &li) == 0 && li.lo_device == img->st_dev &&
              li.lo_inode == img->st_ino;
    close(fd);
    return on;
}

int abxl_disk_wait_free(const char *dir, long timeout_ms)
{
    char img[4400], dev[300];
    struct stat st;
    abxl_fmt(img, sizeof img, "%s/disk.img", dir);
    if (stat(img, &st) != 0)
        return 0;
    for (int64_t end = abxl_now_ms() + timeout_ms;; abxl_sleep_ms(5)) {
        bool used = false;
        DIR *d = opendir("/sys/block");
        struct dirent *e;
        while (d && !used && (e = readdir(d)) != NULL)
            if (strncmp(e->d_name, "loop", 4) == 0 &&
                abxl_fmt(dev, sizeof dev, "/dev/%s", e->d_name) == 0)
                used = loop_backs(dev, &st);
        if (d)
            closedir(d);
        if (!used)
            return 0;
        if (abxl_now_ms() >= end)
            return -1;
    }
}

static int probe(void *base, char *msg, size_t n)
{
    return abxl_disk_mount(base, 16, 0, false, msg, n);
}

/* Once, at start: the same steps on a 16 MiB disk under the state dir, in
 * a child with a private mount namespace. */
bool abxl_disk_check(char *err, size_t errlen)
{
    char base[4200], dsk[4300];
    abxl_fmt(base, sizeof base, "%s/disk-probe", abxl_cfg.state_dir);
    abxl_fmt(dsk, sizeof dsk, "%s/disk", base);
    abxl_rm_rf(base);
    if (mkdir(base, 0700) != 0 || mkdir(dsk, 0755) != 0) {
        abxl_fmt(err, errlen, "cannot create %s: %s", dsk, strerror(errno));
        return false;
    }
    int rc = abxl_try_in_mount_ns(probe, base, err, errlen);
    abxl_rm_rf(base);
    return rc == 0;
}
