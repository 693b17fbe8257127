/* Users (from /etc/passwd inside the sandbox), path resolution as envd's
 * ExpandAndResolve, and parent-directory creation owned by the user. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"

int abxl_envd_user_lookup(const char *name, struct abxl_envd_user *u, char *err,
                     size_t errlen)
{
    struct passwd pw, *res = NULL;
    char buf[4096];
    int e, n = ENVD_MAX_GROUPS;

    if (!name || !*name) {
        snprintf(err, errlen, "error looking up user '': empty username");
        return -1;
    }
    e = getpwnam_r(name, &pw, buf, sizeof buf, &res);
    if (e || !res) {
        snprintf(err, errlen, "error looking up user '%s': %s", name,
                 e ? strerror(e) : "unknown user");
        return -1;
    }
    if (snprintf(u->name, sizeof u->name, "%s", pw.pw_name) >=
            (int)sizeof u->name ||
        snprintf(u->home, sizeof u->home, "%s", pw.pw_dir) >=
            (int)sizeof u->home) {
        snprintf(err, errlen, "error looking up user '%s': name too long",
                 name);
        return -1;
    }
    u->uid = pw.pw_uid;
    u->gid = pw.pw_gid;
    if (getgrouplist(pw.pw_name, pw.pw_gid, u->groups, &n) < 0)
        n = 0; /* more than we keep: fall back to the primary group only */
    if (n == 0) {
        u->groups[0] = pw.pw_gid;
        n = 1;
    }
    u->ngroups = n;
    return 0;
}

/* Lexical clean of an absolute path (like Go's filepath.Clean). */
static int clean_path(const char *in, char *out, size_t outlen)
{
    size_t o = 0;
    const char *p = in;

    if (outlen < 2)
        return -1;
    out[o++] = '/';
    while (*p) {
        const char *seg;
        size_t len;

        while (*p == '/')
            p++;
        seg = p;
        while (*p && *p != '/')
            p++;
        len = (size_t)(p - seg);
        if (len == 0 || (len == 1 && seg[0] == '.'))
            continue;
        if (len == 2 && seg[0] == '.' && seg[1] == '.') {
            while (o > 1 && out[o - 1] != '/')
                o--;
            if (o > 1)
                o--; /* the slash before the dropped segment */
            continue;
        }
        if (o > 1) {
            if (o + 1 >= outlen)
                return -1;
            out[o++] = '/';
        }
        if (o + len >= outlen)
            return -1;
        memcpy(out + o, seg, len);
        o += len;
    }
    out[o] = '\0';
    return 0;
}

int abxl_envd_path_resolve(const char *in, const struct abxl_envd_user *u, char *out,
                      size_t outlen, char *err, size_t errlen)
{
    char joined[PATH_MAX * 2];
    int n;

    if (!in)
        in = "";
    if (in[0] == '~') {
        if (in[1] && in[1] != '/') {
            snprintf(err, errlen, "cannot expand user-specific home dir");
            return -1;
        }
        n = snprintf(joined, sizeof joined, "%s/%s", u->home,
                     in[1] ? in + 2 : "");
    } else if (in[0] == '/') {
        n = snprintf(joined, sizeof joined, "%s", in);
    } else {
        n = snprintf(joined, sizeof joined, "%s/%s", u->home, in);
    }
    if (n < 0 || (size_t)n >= sizeof joined || clean_path(joined, out, outlen)) {
        snprintf(err, errlen, "path is too long");
        return -1;
    }
    return 0;
}

int abxl_envd_mkdirs(const char *path, int self, const struct abxl_envd_user *u)
{
    char tmp[PATH_MAX];
    size_t len = strlen(path);
    struct stat st;

    if (len >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(tmp, path, len + 1);
    if (!self) {
        char *slash = strrchr(tmp, '/');
        if (!slash || slash == tmp)
            return 0;
        *slash = '\0';
    }
    for (char *p = tmp + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char save = *p;
        *p = '\0';
        if (mkdir(tmp, 0777) == 0) {   /* less envd's umask, as E2B's envd */
            if (u && chown(tmp, u->uid, u->gid) != 0)
                return -1;
        } else if (errno != EEXIST) {
            return -1;
        } else if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            return -1;
        }
        *p = save;
        if (save == '\0')
            break;
    }
    return 0;
}
