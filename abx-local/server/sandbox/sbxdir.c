/* A sandbox's folder on the host: the mount points of its root (disk,
 * root), its /etc seeds and envd's run/config.json. Nothing of the
 * sandbox's files lives here: they are on its own tmpfs (enter.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "rootfs.h"
#include "sandbox.h"


static int mkdir_mode(const char *path, mode_t mode, uid_t uid)
{
    if (mkdir(path, mode) != 0 && errno != EEXIST)
        return -1;
    /* chmod after mkdir: the umask must not weaken 1777 on tmp. */
    if (chmod(path, mode) != 0 || chown(path, uid, uid) != 0)
        return -1;
    return 0;
}

static int write_config(const struct abxl_sbx *s, const struct abxl_tmpl *t,
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
    cJSON_AddNumberToObject(c, "diskSizeMB", s->disk_mb);
    cJSON_AddItemToObject(c, "envVars", ev);
    ev = NULL;
    if (s->access_token[0])
        cJSON_AddStringToObject(c, "accessToken", s->access_token);
    /* --vary default-user=root: commands that name no user run as root. */
    cJSON_AddStringToObject(c, "defaultUser", abxl_vary(ABXL_V_DEFAULT_USER) ? "root" : "user");
    cJSON *compat = abxl_profile_envd_compat();   /* profile.c */
    abxl_vary_envd_compat(compat);
    cJSON_AddItemToObject(c, "compat", compat);
    /* E2B runs the start command as the template is built: it never sees a
     * create's envVars (--vary start-envs=create: a platform where it does). */
    cJSON *start = t->start ? cJSON_Duplicate(t->start, 1) : NULL;
    if (start && !abxl_vary(ABXL_V_START_ENVS))
        cJSON_AddItemToObject(start, "envVars", t->env_vars ? cJSON_Duplicate(t->env_vars, 1)
                                                            : cJSON_CreateObject());
    if (start)
        cJSON_AddItemToObject(c, "start", start);
    char *text = cJSON_PrintUnformatted(c);
    if (text != NULL) {
        rc = abxl_write_small(path, text, 0600);
        explicit_bzero(text, strlen(text));
        free(text);
    }
out:
    cJSON_Delete(ev);
    cJSON_Delete(c);
    return rc;
}

/* run/boot_id: the sandbox's /proc/sys/kernel/random/boot_id (a random
 * UUID, as the kernel makes one at boot), shown over the host's by bwrap:
 * a sandbox learns nothing of the host's, and each boot has its own. */
static int write_boot_id(const struct abxl_sbx *s, char *p, size_t n)
{
    char hex[33], text[64];
    if (abxl_random_hex(hex, 16) != 0)
        return -1;
    hex[12] = '4';   /* version 4 */
    hex[16] = "89ab"[hex[16] % 4];   /* the RFC 4122 variant */
    abxl_fmt(text, sizeof text, "%.8s-%.4s-%.4s-%.4s-%.12s\n", hex, hex + 8, hex + 12, hex + 16,
             hex + 20);
    abxl_fmt(p, n, "%s/run/boot_id", s->dir);
    return abxl_write_small(p, text, 0444);
}

int abxl_sbxdir_boot_id(const struct abxl_sbx *s)
{
    char p[4400];
    return write_boot_id(s, p, sizeof p);
}

/* The sandbox's own /etc files, copied into its root's upper layer by
 * sandbox-enter: its hostname is its id, as on E2B. */
static int write_etc(const struct abxl_sbx *s, char *p, size_t n, const char **what)
{
    char text[512];
    *what = "etc/hostname";
    abxl_fmt(p, n, "%s/etc/hostname", s->dir);
    abxl_fmt(text, sizeof text, "%s\n", s->id);
    if (abxl_write_small(p, text, 0644) != 0)
        return -1;
    *what = "etc/hosts";
    abxl_fmt(p, n, "%s/etc/hosts", s->dir);
    abxl_fmt(text, sizeof text, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
            "127.0.1.1\t%s\n", s->id);
    if (abxl_write_small(p, text, 0644) != 0)
        return -1;
    *what = "etc/resolv.conf";
    abxl_fmt(p, n, "%s/etc/resolv.conf", s->dir);
    return abxl_write_small(p, "nameserver 8.8.8.8\n", 0644);
}

int abxl_sbxdir_prepare(const struct abxl_sbx *s, const struct abxl_tmpl *t,
                       const cJSON *env_vars, char *err, size_t errlen)
{
    char p[4400];
    const char *what = s->dir;
    if (mkdir_mode(s->dir, 0700, 0) != 0)
        goto fail;
    /* disk: the tmpfs of the upper layer; lower: the template root bound;
     * root: the overlay (enter.c). */
    static const char *const dirs[] = {"disk", "root", "lower", "etc", "run"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", s->dir, dirs[i]);
        what = dirs[i];
        if (mkdir_mode(p, 0755, 0) != 0)
            goto fail;
    }
    if (write_etc(s, p, sizeof p, &what) != 0)
        goto fail;
    what = "run/boot_id";
    if (write_boot_id(s, p, sizeof p) != 0)
        goto fail;
    what = "run/config.json";
    snprintf(p, sizeof p, "%s/run/config.json", s->dir);
    /* Readable by the sandbox's root alone (host uid s->uid_base). */
    if (write_config(s, t, env_vars, p) != 0 ||
        chown(p, (uid_t)s->uid_base, (gid_t)s->uid_base) != 0)
        goto fail;
    const struct abxl_runtime *rt = abxl_runtime();
    if (rt->prepare)
        return rt->prepare(s, abxl_tmpl_app(t, p, sizeof p), err, errlen);
    return 0;
fail:
    snprintf(err, errlen, "cannot prepare sandbox folder (%s): %s", what, strerror(errno));
    return -1;
}
