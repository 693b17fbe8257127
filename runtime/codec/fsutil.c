/* mkdir -p, atomic replace-by-rename and bounded whole-file reads. */
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FS_PATH_MAX 4096

static int fserr(char *err, size_t errlen, const char *what,
                 const char *path, int e)
{
    if (err && errlen)
        snprintf(err, errlen, "%s %s: %s", what, path, strerror(e));
    errno = e;
    return -1;
}

int abx_mkdir_p(const char *dir, mode_t mode, char *err, size_t errlen)
{
    char tmp[FS_PATH_MAX];
    size_t n = strlen(dir), i;
    struct stat st;

    if (n == 0)
        return 0;
    if (n >= sizeof(tmp))
        return fserr(err, errlen, "cannot create directory", dir,
                     ENAMETOOLONG);
    memcpy(tmp, dir, n + 1);
    /* Create each prefix ending before a '/', then the whole path. */
    for (i = 1; i <= n; i++) {
        if (tmp[i] != '/' && tmp[i] != '\0')
            continue;
        if (tmp[i - 1] == '/')
            continue;
        tmp[i] = '\0';
        if (mkdir(tmp, mode) != 0 && errno != EEXIST)
            return fserr(err, errlen, "cannot create directory", tmp, errno);
        if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode))
            return fserr(err, errlen, "not a directory:", tmp, ENOTDIR);
        if (i < n)
            tmp[i] = '/';
    }
    return 0;
}

/* Directory part of path into dir ("." if none). */
static void dirname_of(const char *path, char *dir, size_t dirlen)
{
    const char *slash = strrchr(path, '/');
    size_t n;

    if (!slash) {
        snprintf(dir, dirlen, ".");
        return;
    }
    n = (size_t)(slash - path);
    if (n == 0)
        n = 1;  /* "/file" -> "/" */
    if (n >= dirlen)
        n = dirlen - 1;
    memcpy(dir, path, n);
    dir[n] = '\0';
}

static int write_replace(const char *path, const void *data, size_t len,
                         int durable, char *err, size_t errlen)
{
    char tmp[FS_PATH_MAX], dir[FS_PATH_MAX];
    const char *p = data;
    int fd = -1, dfd, e, rc = -1;
    ssize_t w;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return fserr(err, errlen, "cannot write", path, ENAMETOOLONG);
    dirname_of(path, dir, sizeof(dir));
    if (abx_mkdir_p(dir, 0755, err, errlen))
        return -1;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return fserr(err, errlen, "cannot create", tmp, errno);
    while (len > 0) {
        w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            e = w < 0 ? errno : EIO;
            fserr(err, errlen, "cannot write", tmp, e);
            goto out;
        }
        p += w;
        len -= (size_t)w;
    }
    if (durable && fsync(fd) != 0) {
        fserr(err, errlen, "cannot fsync", tmp, errno);
        goto out;
    }
    e = close(fd);
    fd = -1;
    if (e != 0) {
        fserr(err, errlen, "cannot close", tmp, errno);
        goto out;
    }
    if (rename(tmp, path) != 0) {
        fserr(err, errlen, "cannot rename onto", path, errno);
        goto out;
    }
    /* Make the rename itself durable; failure here is not fatal. */
    dfd = durable ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (rc != 0) {
        e = errno;
        unlink(tmp);
        errno = e;
    }
    return rc;
}

int abx_write_file_atomic(const char *path, const void *data, size_t len,
                          char *err, size_t errlen)
{
    return write_replace(path, data, len, 1, err, errlen);
}

int abx_write_file_replace(const char *path, const void *data, size_t len,
                           char *err, size_t errlen)
{
    return write_replace(path, data, len, 0, err, errlen);
}

int abx_read_file(const char *path, size_t max, char **data, size_t *len,
                  char *err, size_t errlen)
{
    struct stat st;
    char *buf = NULL;
    size_t got = 0;
    ssize_t r;
    int fd, rc = -1;

    *data = NULL;
    *len = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1;
        return fserr(err, errlen, "cannot open", path, errno);
    }
    if (fstat(fd, &st) != 0) {
        fserr(err, errlen, "cannot stat", path, errno);
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        fserr(err, errlen, "not a regular file:", path, EINVAL);
        goto out;
    }
    if ((unsigned long long)st.st_size > max) {
        fserr(err, errlen, "file too large:", path, EFBIG);
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        fserr(err, errlen, "cannot read", path, ENOMEM);
        goto out;
    }
    /* Read what stat promised; a file growing meanwhile is cut there. */
    while (got < (size_t)st.st_size) {
        r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            fserr(err, errlen, "cannot read", path, errno);
            goto out;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    buf[got] = '\0';
    *data = buf;
    *len = got;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    close(fd);
    return rc;
}
