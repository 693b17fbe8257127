/* The last step of every template root filesystem, built or imported:
 * the users envd expects (root, and user 1000 at /home/user), the
 * template's home/ files, the mount points abx-local binds into every
 * sandbox, and /usr/bin/sudo. Runs chroot'ed in a child, so an image's symlinks (an /etc that
 * points at /etc) resolve inside the root, never onto the host. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "rootfs.h"

#define UID_USER 1000

static int fail(int efd, const char *what)
{
    char msg[512];
    int n = snprintf(msg, sizeof msg, "%s: %s", what, strerror(errno));
    if (n > 0 && write(efd, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) < 0) {
        /* the parent reports a bare failure */
    }
    return -1;
}

/* True if the colon-separated file has a line for name. */
static bool has_entry(const char *path, const char *name)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return false;
    char line[1024];
    size_t nl = strlen(name);
    bool hit = false;
    while (!hit && fgets(line, sizeof line, f) != NULL)
        hit = strncmp(line, name, nl) == 0 && line[nl] == ':';
    fclose(f);
    return hit;
}

/* Appends line to path unless it names user already; optional files
 * (shadow, gshadow) are skipped when absent. */
static int ensure_entry(const char *path, const char *line, bool optional, int efd)
{
    if (optional && access(path, F_OK) != 0)
        return 0;
    if (has_entry(path, "user"))
        return 0;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return fail(efd, path);
    size_t n = strlen(line);
    int rc = write(fd, line, n) == (ssize_t)n ? 0 : fail(efd, path);
    close(fd);
    return rc;
}

static int ensure_dir(const char *path, mode_t mode, uid_t uid, int efd)
{
    if (mkdir(path, mode) != 0 && errno != EEXIST)
        return fail(efd, path);
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return fail(efd, path);
    }
    if (chmod(path, mode) != 0 || chown(path, uid, uid) != 0)
        return fail(efd, path);
    return 0;
}

/* Debian's essential set has no shadow file (the passwd package makes
 * it): give the root one, every account locked, as a fresh install has. */
static int ensure_shadow(int efd)
{
    if (access("/etc/shadow", F_OK) == 0)
        return 0;
    FILE *in = fopen("/etc/passwd", "re");
    int fd = open("/etc/shadow", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (in == NULL || out == NULL) {
        if (in)
            fclose(in);
        if (fd >= 0 && out == NULL)
            close(fd);
        if (out)
            fclose(out);
        return fail(efd, "/etc/shadow");
    }
    char line[1024];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, in) != NULL) {
        size_t n = strcspn(line, ":\n");
        if (n > 0 && fprintf(out, "%.*s:*:20000:0:99999:7:::\n", (int)n, line) < 0)
            rc = -1;
    }
    fclose(in);
    if (fclose(out) != 0 || rc != 0)
        return fail(efd, "/etc/shadow");
    return 0;
}

/* /usr/bin/sudo is abx-local's (abx-local/sudo, bound with envd at
 * /opt/abx/bin): a setuid sudo cannot work where every process has
 * no_new_privs, so an image's own is replaced. */
static int ensure_sudo(int efd)
{
    static const char target[] = "/opt/abx/bin/sudo";
    char got[sizeof target + 1];
    ssize_t n = readlink("/usr/bin/sudo", got, sizeof got);
    if (n == (ssize_t)sizeof target - 1 && memcmp(got, target, (size_t)n) == 0)
        return 0;
    if ((mkdir("/usr", 0755) != 0 && errno != EEXIST) ||
        (mkdir("/usr/bin", 0755) != 0 && errno != EEXIST) ||
        (unlink("/usr/bin/sudo") != 0 && errno != ENOENT) || symlink(target, "/usr/bin/sudo") != 0)
        return fail(efd, "/usr/bin/sudo");
    return 0;
}

static int in_root(int home_fd, int efd)
{
    static const struct {
        const char *path;
        mode_t mode;
        uid_t uid;
    } dirs[] = {{"/etc", 0755, 0},      {"/tmp", 01777, 0},     {"/root", 0700, 0},
                {"/home", 0755, 0},     {"/home/user", 0755, UID_USER},
                {"/run", 0755, 0},      {"/run/abx", 0755, 0},  {"/opt", 0755, 0},
                {"/opt/abx", 0755, 0},  {"/opt/abx/bin", 0755, 0},
                {"/opt/abx/app", 0755, 0}, {"/proc", 0555, 0},  {"/dev", 0755, 0}};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (ensure_dir(dirs[i].path, dirs[i].mode, dirs[i].uid, efd) != 0)
            return -1;
    if (access("/bin/bash", X_OK) != 0)
        return fail(efd, "/bin/bash (envd runs commands with it)");
    if (!has_entry("/etc/passwd", "root"))
        return errno = ENOENT, fail(efd, "/etc/passwd has no root");
    if (ensure_entry("/etc/passwd", "user:x:1000:1000:user:/home/user:/bin/bash\n", false,
                     efd) != 0 ||
        ensure_entry("/etc/group", "user:x:1000:\n", false, efd) != 0 ||
        ensure_shadow(efd) != 0 ||
        ensure_entry("/etc/shadow", "user:*:20000:0:99999:7:::\n", true, efd) != 0 ||
        ensure_entry("/etc/gshadow", "user:!::\n", true, efd) != 0 || ensure_sudo(efd) != 0)
        return -1;
    if (home_fd >= 0) {
        int dfd = open("/home/user", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd < 0 || abxl_copy_tree(home_fd, dfd, UID_USER) != 0) {
            if (dfd >= 0)
                close(dfd);
            return fail(efd, "copying the template's home/ into /home/user");
        }
        close(dfd);
    }
    return 0;
}

int abxl_rootfs_customize(const char *root, const char *home_src, char *err, size_t errlen)
{
    int efd[2];
    int home_fd = home_src ? open(home_src, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (pipe2(efd, O_CLOEXEC) != 0) {
        abxl_fmt(err, errlen, "pipe: %s", strerror(errno));
        if (home_fd >= 0)
            close(home_fd);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(efd[0]);
        if (chroot(root) != 0 || chdir("/") != 0)
            _exit(fail(efd[1], "chroot") != 0);
        umask(022);
        _exit(in_root(home_fd, efd[1]) == 0 ? 0 : 1);
    }
    close(efd[1]);
    if (home_fd >= 0)
        close(home_fd);
    char msg[512];
    if (abxl_child_wait(pid, efd[0], msg, sizeof msg) == 0)
        return 0;
    abxl_fmt(err, errlen, "customizing the root filesystem failed: %s",
            msg[0] ? msg : pid < 0 ? "fork failed" : "no reason given");
    return -1;
}
