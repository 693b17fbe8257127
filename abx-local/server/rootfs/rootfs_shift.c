/* A built root's ownership moved into the sandboxes' uid range: uid and
 * gid N become ABXL_UID_BASE + N (userns.c maps them back to N inside),
 * as Docker's userns-remap does with its image layers. Done once per
 * build, before the root enters the cache; chown clears set-id bits and
 * file capabilities, so both are put back. POSIX ACLs (rare in Debian
 * and image roots) keep their ids: they would name host ids. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base.h"
#include "rootfs.h"

static char shift_err[512];

static int shift_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)type;
    (void)ftw;
    /* A hard link to a file already given (nftw visits every name). */
    if (st->st_nlink > 1 && !S_ISDIR(st->st_mode) && st->st_uid >= ABXL_UID_BASE &&
        st->st_uid < ABXL_UID_BASE + ABXL_UID_COUNT && st->st_gid >= ABXL_UID_BASE &&
        st->st_gid < ABXL_UID_BASE + ABXL_UID_COUNT)
        return 0;
    if (st->st_uid >= ABXL_UID_COUNT || st->st_gid >= ABXL_UID_COUNT) {
        abxl_fmt(shift_err, sizeof shift_err, "%s is owned by %u:%u, beyond the %lu ids a "
                 "sandbox has", path, (unsigned)st->st_uid, (unsigned)st->st_gid,
                 ABXL_UID_COUNT);
        return 1;
    }
    char caps[256];
    ssize_t ncaps = S_ISREG(st->st_mode) ? lgetxattr(path, "security.capability", caps,
                                                     sizeof caps) : -1;
    if (lchown(path, (uid_t)(ABXL_UID_BASE + st->st_uid), (gid_t)(ABXL_UID_BASE + st->st_gid)) !=
        0)
        goto bad;
    if (!S_ISLNK(st->st_mode) && (st->st_mode & (S_ISUID | S_ISGID)) &&
        chmod(path, st->st_mode & 07777) != 0)
        goto bad;
    if (ncaps > 0 && lsetxattr(path, "security.capability", caps, (size_t)ncaps, 0) != 0)
        goto bad;
    return 0;
bad:
    abxl_fmt(shift_err, sizeof shift_err, "%s: %s", path, strerror(errno));
    return 1;
}

int abxl_rootfs_shift(const char *root, char *err, size_t errlen)
{
    shift_err[0] = '\0';
    if (nftw(root, shift_one, 64, FTW_PHYS) == 0)
        return 0;
    abxl_fmt(err, errlen, "cannot give the root to the sandbox uids: %s",
             shift_err[0] ? shift_err : strerror(errno));
    return -1;
}
