/* Templates: <templates-dir>/<name>/template.json (shipped) and
 * <cache>/imports/<name>/template.json (imported images), found by id or
 * alias. Each declares its root filesystem ("rootfs", see DESIGN.md). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base.h"
#include "rootfs.h"

#define TMPL_JSON_MAX (256 * 1024)

static int int_field(const cJSON *o, const char *name, int def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e7)
        return (int)v->valuedouble;
    return def;
}

static void copy_str(char *dst, size_t n, const char *src)
{
    abxl_fmt(dst, n, "%s", src ? src : "");
}

static bool safe_word(const char *s, size_t max)
{
    size_t n = strlen(s);
    return n > 0 && n <= max && s[0] != '-' &&
           strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789+-.:_") == n;
}

/* "rootfs": {"debian": RELEASE, "variant": V, "packages": [...]} or, for
 * an imported image, {"image": FILE, "sha256": KEY}. */
static int parse_rootfs(cJSON *o, struct abxl_tmpl *t, const char *path, char *err, size_t errlen)
{
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(o, "rootfs");
    const cJSON *deb = cJSON_GetObjectItemCaseSensitive(rf, "debian");
    const cJSON *img = cJSON_GetObjectItemCaseSensitive(rf, "sha256");
    if (cJSON_IsString(img)) {
        t->rootfs_kind = ABXL_ROOTFS_IMAGE;
        if (strlen(img->valuestring) != 64 ||
            strspn(img->valuestring, "0123456789abcdef") != 64) {
            abxl_fmt(err, errlen, "%s: rootfs.sha256 is not a SHA-256", path);
            return -1;
        }
        abxl_fmt(t->key, sizeof t->key, "%s", img->valuestring);
        const cJSON *im = cJSON_GetObjectItemCaseSensitive(rf, "image");
        abxl_fmt(t->source, sizeof t->source, "image %s",
                cJSON_IsString(im) ? im->valuestring : "?");
        return abxl_rootfs_paths(t);
    }
    if (!cJSON_IsString(deb) || !safe_word(deb->valuestring, 63)) {
        abxl_fmt(err, errlen, "%s: \"rootfs\" must name a Debian release "
                "({\"debian\": \"bookworm\", \"packages\": [...]})", path);
        return -1;
    }
    t->rootfs_kind = ABXL_ROOTFS_DEBIAN;
    abxl_fmt(t->release, sizeof t->release, "%s", deb->valuestring);
    const cJSON *var = cJSON_GetObjectItemCaseSensitive(rf, "variant");
    abxl_fmt(t->variant, sizeof t->variant, "%s",
             cJSON_IsString(var) ? var->valuestring : "essential");
    if (!safe_word(t->variant, 31)) {
        abxl_fmt(err, errlen, "%s: bad rootfs.variant", path);
        return -1;
    }
    t->packages = cJSON_CreateArray();
    const cJSON *pk;
    size_t srclen = (size_t)snprintf(t->source, sizeof t->source, "debian %s/%s", t->release,
                                     t->variant);
    /* "profilePackages": {"e2b": [...]}: what one profile's image adds
     * (E2B's base carries git, curl, pip...; FC's stays minimal). */
    const cJSON *lists[2] = {
        cJSON_GetObjectItemCaseSensitive(rf, "packages"),
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rf, "profilePackages"),
                                         abxl_profile_name())};
    for (int l = 0; l < 2; l++)
        cJSON_ArrayForEach(pk, lists[l])
        {
            if (!cJSON_IsString(pk) || !safe_word(pk->valuestring, 100)) {
                abxl_fmt(err, errlen, "%s: bad package name in rootfs.%s", path,
                        l ? "profilePackages" : "packages");
                return -1;
            }
            cJSON_AddItemToArray(t->packages, cJSON_CreateString(pk->valuestring));
            if (srclen < sizeof t->source)
                srclen += (size_t)snprintf(t->source + srclen, sizeof t->source - srclen,
                                           " +%s", pk->valuestring);
        }
    return abxl_rootfs_key(t, err, errlen);
}

/* Parses dir/template.json; 0 ok, 1 absent, -1 broken. */
static int load(const char *dir, struct abxl_tmpl *t, char *err, size_t errlen)
{
    char path[4200];
    abxl_fmt(path, sizeof path, "%s/template.json", dir);
    char *text = abxl_read_text(path, TMPL_JSON_MAX);
    if (text == NULL)
        return 1;
    cJSON *o = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(o)) {
        abxl_fmt(err, errlen, "%s is not a JSON object", path);
        cJSON_Delete(o);
        return -1;
    }
    memset(t, 0, sizeof *t);
    copy_str(t->dir, sizeof t->dir, dir);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "templateID");
    const char *slash = strrchr(dir, '/');
    copy_str(t->id, sizeof t->id, cJSON_IsString(id) ? id->valuestring : slash ? slash + 1 : dir);
    const cJSON *al = cJSON_GetObjectItemCaseSensitive(o, "aliases");
    if (cJSON_IsArray(al) && cJSON_IsString(cJSON_GetArrayItem(al, 0)))
        copy_str(t->alias, sizeof t->alias, cJSON_GetArrayItem(al, 0)->valuestring);
    cJSON *ev = cJSON_DetachItemFromObjectCaseSensitive(o, "envVars");
    if (cJSON_IsObject(ev))
        t->env_vars = ev;
    else
        cJSON_Delete(ev);
    cJSON *st = cJSON_DetachItemFromObjectCaseSensitive(o, "start");
    if (cJSON_IsObject(st) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(st, "cmd")))
        t->start = st;
    else
        cJSON_Delete(st);
    const cJSON *rd = cJSON_GetObjectItemCaseSensitive(o, "ready");
    if (cJSON_IsObject(rd)) {
        t->ready_port = int_field(rd, "port", 0);
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(rd, "path");
        copy_str(t->ready_path, sizeof t->ready_path, cJSON_IsString(p) ? p->valuestring : "/");
        t->ready_timeout_ms = int_field(rd, "timeoutMs", 20000);
        if (t->ready_port > 65535)
            t->ready_port = 0;
    }
    if (parse_rootfs(o, t, path, err, errlen) != 0) {
        abxl_tmpl_free(t);
        cJSON_Delete(o);
        return -1;
    }
    t->pids_limit = int_field(o, "pidsLimit", 4096);
    if (t->pids_limit < 1)
        t->pids_limit = 4096;   /* 0 would let no process start */
    t->cpu_count = int_field(o, "cpuCount", 2);
    t->memory_mb = int_field(o, "memoryMB", 512);
    t->disk_mb = int_field(o, "diskSizeMB", 1024);
    if (t->disk_mb < 1)
        t->disk_mb = 1024;   /* a disk of 0 MiB holds no root */
    cJSON_Delete(o);
    return 0;
}

/* --vary template-id=opaque: the id a client sees is a hash of the name
 * (stable across runs, 20 of [a-z0-9] as E2B's), the name an alias. */
const char *abxl_tmpl_public_id(const char *id, char out[ABXL_TMPL_ID_MAX])
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    uint64_t h = 1469598103934665603ULL, g;
    if (abxl_vary(ABXL_V_TEMPLATE_ID) == 0)
        return id;
    for (const char *p = id; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    g = h * 0x9e3779b97f4a7c15ULL + 7;
    for (int i = 0; i < 20; i++) {
        uint64_t *w = i < 10 ? &h : &g;
        out[i] = digits[*w % 36];
        *w /= 36;
    }
    out[20] = '\0';
    return out;
}

static bool matches(const struct abxl_tmpl *t, const char *dir, const char *name)
{
    char pub[ABXL_TMPL_ID_MAX];
    if (strcmp(t->id, name) == 0 || strcmp(abxl_tmpl_public_id(t->id, pub), name) == 0)
        return true;
    char path[4200];
    abxl_fmt(path, sizeof path, "%s/template.json", dir);
    char *text = abxl_read_text(path, TMPL_JSON_MAX);
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    free(text);
    bool hit = false;
    const cJSON *al = cJSON_GetObjectItemCaseSensitive(o, "aliases");
    const cJSON *a;
    cJSON_ArrayForEach(a, al)
    {
        if (cJSON_IsString(a) && strcmp(a->valuestring, name) == 0)
            hit = true;
    }
    cJSON_Delete(o);
    return hit;
}

/* Calls fn for every template of dir (broken ones: ok < 0, err set);
 * stops when fn returns non-zero and returns that. */
static int scan_dir(const char *base, int (*fn)(struct abxl_tmpl *t, const char *dir,
                                               const char *entry, int ok, void *arg),
                    void *arg)
{
    DIR *d = opendir(base);
    if (d == NULL)
        return 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char dir[4200], err[512] = "";
        abxl_fmt(dir, sizeof dir, "%s/%s", base, e->d_name);
        struct abxl_tmpl t;
        memset(&t, 0, sizeof t);
        int r = load(dir, &t, err, sizeof err);
        if (r == 1)
            continue;
        if (r < 0)
            abxl_fmt(t.dir, sizeof t.dir, "%s", err);   /* the reason, for fn */
        rc = fn(&t, dir, e->d_name, r, arg);
        if (r == 0)
            abxl_tmpl_free(&t);
    }
    closedir(d);
    return rc;
}

int abxl_tmpl_each(int (*fn)(struct abxl_tmpl *t, const char *dir, const char *entry, int ok,
                            void *arg),
                  void *arg)
{
    char imports[4200];
    abxl_fmt(imports, sizeof imports, "%s/imports", abxl_cfg.cache_dir);
    int rc = scan_dir(abxl_cfg.templates_dir, fn, arg);
    return rc != 0 ? rc : scan_dir(imports, fn, arg);
}

struct find {
    const char *name;
    struct abxl_tmpl *out;
    char *err;
    size_t errlen;
};

static int find_one(struct abxl_tmpl *t, const char *dir, const char *entry, int ok, void *arg)
{
    struct find *f = arg;
    if (ok < 0) {
        if (strcmp(entry, f->name) != 0)
            return 0;
        abxl_fmt(f->err, f->errlen, "%s", t->dir);
        return -1;
    }
    if (!matches(t, dir, f->name))
        return 0;
    *f->out = *t;
    memset(t, 0, sizeof *t);   /* ownership moved to out */
    return 1;
}

int abxl_tmpl_find(const char *name, struct abxl_tmpl *out, char *err, size_t errlen)
{
    if (name[0] == '\0' || name[0] == '.' || strchr(name, '/') != NULL)
        return 1;
    DIR *d = opendir(abxl_cfg.templates_dir);
    if (d == NULL) {
        abxl_fmt(err, errlen, "templates dir %s cannot be read", abxl_cfg.templates_dir);
        return -1;
    }
    closedir(d);
    struct find f = {name, out, err, errlen};
    int rc = abxl_tmpl_each(find_one, &f);
    return rc == 1 ? 0 : rc < 0 ? -1 : 1;
}

void abxl_tmpl_free(struct abxl_tmpl *t)
{
    cJSON_Delete(t->env_vars);
    cJSON_Delete(t->start);
    cJSON_Delete(t->packages);
    t->env_vars = NULL;
    t->start = NULL;
    t->packages = NULL;
}

bool abxl_tmpl_app(const struct abxl_tmpl *t, char *path, size_t n)
{
    struct stat st;
    return abxl_fmt(path, n, "%s/app", t->dir) == 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
