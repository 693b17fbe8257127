/* A sandbox's folder on the host: home, root, tmp, etc, run/config.json. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server.h"

#define UID_USER 1000

static int mkdir_mode(const char *path, mode_t mode, uid_t uid)
{
    if (mkdir(path, mode) != 0 && errno != EEXIST)
        return -1;
    /* chmod after mkdir: the umask must not weaken 1777 on tmp. */
    if (chmod(path, mode) != 0 || chown(path, uid, uid) != 0)
        return -1;
    return 0;
}

static int copy_file(int sfd, const char *name, int dfd, mode_t mode)
{
    int in = openat(sfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0)
        return -1;
    int out = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                     mode & 0777);
    int rc = out < 0 ? -1 : 0;
    char buf[65536];
    while (rc == 0) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -1 : 0;
            break;
        }
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                rc = -1;
                break;
            }
            off += w;
        }
    }
    if (out >= 0) {
        if (fchown(out, UID_USER, UID_USER) != 0 || fchmod(out, mode & 0777) != 0)
            rc = -1;
        close(out);
    }
    close(in);
    return rc;
}

/* Copies the template's home/ into the sandbox's home, owned by user. */
static int copy_tree(int sfd, int dfd, int depth)
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
            if (s2 < 0 || d2 < 0 || fchown(d2, UID_USER, UID_USER) != 0 ||
                fchmod(d2, st.st_mode & 0777) != 0)
                rc = -1;
            if (rc == 0)
                rc = copy_tree(s2, d2, depth + 1);
            if (s2 >= 0)
                close(s2);
            if (d2 >= 0)
                close(d2);
        } else if (S_ISREG(st.st_mode)) {
            rc = copy_file(sfd, e->d_name, dfd, st.st_mode);
        } else if (S_ISLNK(st.st_mode)) {
            char target[4096];
            ssize_t n = readlinkat(sfd, e->d_name, target, sizeof target - 1);
            if (n < 0) {
                rc = -1;
                break;
            }
            target[n] = '\0';
            if (symlinkat(target, dfd, e->d_name) != 0 ||
                fchownat(dfd, e->d_name, UID_USER, UID_USER, AT_SYMLINK_NOFOLLOW) != 0)
                rc = -1;
        }
    }
    closedir(d);
    return rc;
}

static int write_config(const struct abx_sbx *s, const struct abx_tmpl *t,
                        const cJSON *env_vars, const char *path)
{
    cJSON *c = cJSON_CreateObject();
    cJSON *ev = cJSON_CreateObject();
    int rc = -1;
    if (c == NULL || ev == NULL)
        goto out;
    const cJSON *v;
    cJSON_ArrayForEach(v, t->env_vars)
    {
        if (cJSON_IsString(v))
            cJSON_AddStringToObject(ev, v->string, v->valuestring);
    }
    cJSON_ArrayForEach(v, env_vars)
    {
        cJSON_DeleteItemFromObjectCaseSensitive(ev, v->string);
        cJSON_AddStringToObject(ev, v->string, v->valuestring);
    }
    cJSON_AddStringToObject(c, "sandboxID", s->id);
    cJSON_AddStringToObject(c, "templateID", s->template_id);
    cJSON_AddItemToObject(c, "envVars", ev);
    ev = NULL;
    if (s->access_token[0])
        cJSON_AddStringToObject(c, "accessToken", s->access_token);
    cJSON_AddStringToObject(c, "defaultUser", "user");
    if (t->start)
        cJSON_AddItemToObject(c, "start", cJSON_Duplicate(t->start, 1));
    char *text = cJSON_PrintUnformatted(c);
    if (text != NULL) {
        rc = abx_write_small(path, text, 0600);
        explicit_bzero(text, strlen(text));
        free(text);
    }
out:
    cJSON_Delete(ev);
    cJSON_Delete(c);
    return rc;
}

int abx_sbxdir_prepare(const struct abx_sbx *s, const struct abx_tmpl *t,
                       const cJSON *env_vars, char *err, size_t errlen)
{
    char p[4400];
    const char *what = s->dir;
    if (mkdir_mode(s->dir, 0700, 0) != 0)
        goto fail;
    static const struct {
        const char *name;
        mode_t mode;
        uid_t uid;
    } dirs[] = {{"home", 0755, UID_USER}, {"root", 0700, 0}, {"tmp", 01777, 0},
                {"etc", 0755, 0},         {"run", 0755, 0}};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", s->dir, dirs[i].name);
        what = dirs[i].name;
        if (mkdir_mode(p, dirs[i].mode, dirs[i].uid) != 0)
            goto fail;
    }
    what = "etc/passwd";
    snprintf(p, sizeof p, "%s/etc/passwd", s->dir);
    if (abx_write_small(p, "root:x:0:0:root:/root:/bin/bash\n"
                           "user:x:1000:1000:user:/home/user:/bin/bash\n", 0644) != 0)
        goto fail;
    what = "etc/group";
    snprintf(p, sizeof p, "%s/etc/group", s->dir);
    if (abx_write_small(p, "root:x:0:\nuser:x:1000:\n", 0644) != 0)
        goto fail;
    what = "run/config.json";
    snprintf(p, sizeof p, "%s/run/config.json", s->dir);
    if (write_config(s, t, env_vars, p) != 0)
        goto fail;
    snprintf(p, sizeof p, "%s/home", t->dir);
    int sfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sfd >= 0) {
        what = "home (template copy)";
        snprintf(p, sizeof p, "%s/home", s->dir);
        int dfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int rc = dfd >= 0 ? copy_tree(sfd, dfd, 0) : -1;
        if (dfd >= 0)
            close(dfd);
        close(sfd);
        if (rc != 0)
            goto fail;
    }
    return 0;
fail:
    snprintf(err, errlen, "cannot prepare sandbox folder (%s): %s", what, strerror(errno));
    return -1;
}
