/* `abx-local template import NAME IMAGE.tar`: an OCI image archive (or a
 * `docker save` archive) becomes a template. skopeo turns the archive
 * into an OCI layout, umoci unpacks its layers into a root filesystem;
 * the image's environment becomes the template's envVars. The root is
 * cached under the archive's SHA-256, the definition written to
 * <cache>/imports/NAME/template.json. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "rootfs.h"

static void last_line(const char *line, void *arg)
{
    if (line[0])
        abxl_fmt(arg, 512, "%.500s", line);
}

static int run_step(const char *const argv[], const char *step, char *err, size_t errlen)
{
    char last[512] = "", rerr[256] = "";
    if (abxl_run_lines(argv, last_line, last, rerr, sizeof rerr) == 0)
        return 0;
    abxl_fmt(err, errlen, "import failed at step '%s': %s%s%s", step, rerr, last[0] ? ": " : "",
            last);
    return -1;
}

/* envVars from the runtime config umoci writes beside the root. */
static cJSON *image_env(const char *bundle)
{
    char p[4300];
    abxl_fmt(p, sizeof p, "%s/config.json", bundle);
    char *text = abxl_read_text(p, 4 << 20);
    cJSON *cfg = text ? cJSON_Parse(text) : NULL;
    free(text);
    cJSON *env = cJSON_CreateObject();
    const cJSON *proc = cJSON_GetObjectItemCaseSensitive(cfg, "process");
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(proc, "env"))
    {
        const char *eq = cJSON_IsString(e) ? strchr(e->valuestring, '=') : NULL;
        if (env == NULL || eq == NULL || eq == e->valuestring)
            continue;
        char k[256];
        if ((size_t)(eq - e->valuestring) >= sizeof k)
            continue;
        memcpy(k, e->valuestring, (size_t)(eq - e->valuestring));
        k[eq - e->valuestring] = '\0';
        /* The sandbox sets these itself. */
        if (strcmp(k, "HOME") == 0 || strcmp(k, "HOSTNAME") == 0)
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(env, k);
        cJSON_AddStringToObject(env, k, eq + 1);
    }
    cJSON_Delete(cfg);
    return env;
}

static int write_definition(const char *name, const char *image, const char *key, cJSON *env,
                            char *err, size_t errlen)
{
    char dir[4200], p[4300];
    abxl_fmt(dir, sizeof dir, "%s/imports/%s", abxl_cfg.cache_dir, name);
    cJSON *o = cJSON_CreateObject(), *rf = cJSON_CreateObject();
    int rc = -1;
    if (o == NULL || rf == NULL)
        goto out;
    cJSON_AddStringToObject(o, "templateID", name);
    cJSON_AddItemToObject(o, "aliases", cJSON_CreateArray());
    cJSON_AddItemToObject(o, "envVars", env);
    env = NULL;
    cJSON_AddStringToObject(rf, "image", image);
    cJSON_AddStringToObject(rf, "sha256", key);
    cJSON_AddItemToObject(o, "rootfs", rf);
    rf = NULL;
    /* cpuCount, memoryMB, diskSizeMB, pidsLimit: tmpl.c's defaults, or
     * whatever the user writes into this file. */
    char *text = cJSON_Print(o);
    if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || text == NULL ||
        abxl_fmt(p, sizeof p, "%s/template.json", dir) != 0 || abxl_write_small(p, text, 0644) != 0)
        abxl_fmt(err, errlen, "cannot write %s/template.json: %s", dir, strerror(errno));
    else
        rc = 0;
    free(text);
out:
    cJSON_Delete(env);
    cJSON_Delete(rf);
    cJSON_Delete(o);
    return rc;
}

int abxl_rootfs_import(const char *name, const char *archive, char *err, size_t errlen)
{
    char abs[4096], tmp[4300] = "", ldir[4400], layout[4500], img[4500], bundle[4400];
    char src[4200], dst[4500];
    int lock = -1, rc = -1;
    if (name[0] == '\0' || name[0] == '.' || strlen(name) > 100 ||
        strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != strlen(name)) {
        abxl_fmt(err, errlen, "bad template name '%s' (lowercase letters, digits, '-', '_', "
                "'.'; at most 100)", name);
        return -1;
    }
    if (realpath(archive, abs) == NULL) {
        abxl_fmt(err, errlen, "cannot read the image archive %s: %s", archive, strerror(errno));
        return -1;
    }
    struct abxl_tmpl t = {.rootfs_kind = ABXL_ROOTFS_IMAGE};
    abxl_fmt(t.id, sizeof t.id, "%s", name);
    struct abxl_sha256 h;
    abxl_sha256_init(&h);
    abxl_sha256_str(&h, "abx-image-1");
    if (abxl_sha256_file(&h, abs) != 0) {
        abxl_fmt(err, errlen, "cannot read the image archive %s: %s", abs, strerror(errno));
        abxl_sha256_hex(&h, t.key);
        return -1;
    }
    abxl_sha256_hex(&h, t.key);
    abxl_rootfs_paths(&t);
    if ((lock = abxl_rootfs_lock(&t, err, errlen)) < 0)
        return -1;
    if (abxl_rootfs_tmpdir(&t, tmp, sizeof tmp, err, errlen) != 0)
        goto out;
    int64_t t0 = abxl_now_ms();
    abxl_fmt(ldir, sizeof ldir, "%s/layout", tmp);
    abxl_fmt(layout, sizeof layout, "oci:%s:abx", ldir);
    abxl_fmt(img, sizeof img, "%s:abx", ldir);
    abxl_fmt(bundle, sizeof bundle, "%s/bundle", tmp);
    abxl_rootfs_progress(&t, "importing", 10, "reading the archive");
    abxl_fmt(src, sizeof src, "oci-archive:%s", abs);
    const char *oci[] = {"skopeo", "--insecure-policy", "copy", "-q", src, layout, NULL};
    if (abxl_run_lines(oci, NULL, NULL, err, errlen) != 0) {
        /* Not an OCI archive: perhaps `docker save`. */
        abxl_fmt(src, sizeof src, "docker-archive:%s", abs);
        abxl_rm_rf(ldir);
        if (run_step(oci, "reading the archive (neither an OCI nor a docker archive?)", err,
                     errlen) != 0)
            goto out;
    }
    abxl_rootfs_progress(&t, "importing", 40, "unpacking layers");
    const char *unpack[] = {"umoci", "unpack", "--image", img, bundle, NULL};
    if (run_step(unpack, "unpacking layers", err, errlen) != 0)
        goto out;
    abxl_rootfs_progress(&t, "importing", 80, "customizing");
    abxl_fmt(dst, sizeof dst, "%s/rootfs", bundle);
    if (abxl_rootfs_customize(dst, NULL, err, errlen) != 0)
        goto out;
    cJSON *env = image_env(bundle);
    if (abxl_rootfs_commit(&t, dst, t0, err, errlen) != 0) {
        cJSON_Delete(env);
        goto out;
    }
    const char *base = strrchr(abs, '/');
    rc = write_definition(name, base ? base + 1 : abs, t.key, env, err, errlen);
    if (rc == 0)
        abxl_rootfs_progress(&t, "importing", 100, "done");
out:
    if (tmp[0])
        abxl_rm_rf(tmp);
    if (lock >= 0)
        close(lock);
    return rc;
}
