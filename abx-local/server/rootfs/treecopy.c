/* Copies a folder tree (regular files, folders, symlinks) between two
 * open folders, every copy owned by one uid: a template's home/ into its
 * root filesystem's /home/user. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rootfs.h"

int abxl_copy_fd(int in, int out)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -1 : 0;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno != EINTR)
                return -1;
            off += w > 0 ? w : 0;
        }
    }
}

static int copy_file(int sfd, const char *name, int dfd, mode_t mode, uid_t uid)
{
    int in = openat(sfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0)
        return -1;
    int out = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                     mode & 0777);
    int rc = out < 0 ? -1 : abxl_copy_fd(in, out);
    if (out >= 0) {
        if (fchown(out, uid, uid) != 0 || fchmod(out, mode & 0777) != 0)
            rc = -1;
        close(out);
    }
    close(in);
    return rc;
}

static int copy_tree(int sfd, int dfd, uid_t uid, int depth)
{
    if (depth > 32)
        return -1;
    int sdup = dup(sfd);
    DIR *d = sdup >= 0 ? fdopendir(sdup) : NULL;
    if (d == NULL) {
        if (sdup >= 0)
            close(sdup);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(sfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = -1;
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            if (mkdirat(dfd, e->d_name, st.st_mode & 0777) != 0 && errno != EEXIST) {
                rc = -1;
                break;
            }
            int s2 = openat(sfd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
            int d2 = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
            if (s2 < 0 || d2 < 0 || fchown(d2, uid, uid) != 0 ||
                fchmod(d2, st.st_mode & 0777) != 0)
                rc = -1;
            if (rc == 0)
                rc = copy_tree(s2, d2, uid, depth + 1);
            if (s2 >= 0)
                close(s2);
            if (d2 >= 0)
                close(d2);
        } else if (S_ISREG(st.st_mode)) {
            rc = copy_file(sfd, e->d_name, dfd, st.st_mode, uid);
        } else if (S_ISLNK(st.st_mode)) {
            char target[4096];
            ssize_t n = readlinkat(sfd, e->d_name, target, sizeof target - 1);
            if (n < 0) {
                rc = -1;
                break;
            }
            target[n] = '\0';
            if (symlinkat(target, dfd, e->d_name) != 0 ||
                fchownat(dfd, e->d_name, uid, uid, AT_SYMLINK_NOFOLLOW) != 0)
                rc = -1;
        }
    }
    closedir(d);
    return rc;
}

int abxl_copy_tree(int sfd, int dfd, uid_t uid)
{
    return copy_tree(sfd, dfd, uid, 0);
}
