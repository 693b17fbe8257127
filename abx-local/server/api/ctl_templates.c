/* Control plane: GET /templates, GET /templates/{templateID} (id or
 * alias) and GET /templates/aliases/{alias}, from the template registry
 * (tmpl.c). FC documents raw REST
 * management of templates; `abx-e2e doctor` asks it which templates an
 * account has. Read-only here: templates are folders, not API objects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api.h"
#include "base.h"
#include "http.h"
#include "rootfs.h"

/* Definitions are small; a bigger one is not ours to serve. */
#define TMPL_JSON_MAX (256 * 1024)

/* A modification time in ms, 0 when the file cannot be read. */
static int64_t mtime_ms(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    return (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
}

/* Every alias of the definition in dir (struct abxl_tmpl keeps the first
 * only); an empty array when there are none. */
static cJSON *aliases_of(const char *dir, const struct abxl_tmpl *t)
{
    char path[4200], pub[ABXL_TMPL_ID_MAX];
    cJSON *out = cJSON_CreateArray(), *o = NULL;
    /* An opaque id (--vary template-id): the name is the first alias. */
    if (out && strcmp(abxl_tmpl_public_id(t->id, pub), t->id) != 0)
        cJSON_AddItemToArray(out, cJSON_CreateString(t->id));
    if (abxl_fmt(path, sizeof path, "%s/template.json", dir) == 0) {
        char *text = abxl_read_text(path, TMPL_JSON_MAX);
        o = text ? cJSON_Parse(text) : NULL;
        free(text);
    }
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(o, "aliases"))
    {
        if (cJSON_IsString(a) && out)
            cJSON_AddItemToArray(out, cJSON_CreateString(a->valuestring));
    }
    cJSON_Delete(o);
    return out;
}

/* What one template reports, shared by the list and the detail. */
struct tinfo {
    char build_id[40];        /* UUID-shaped, from the root's cache key */
    char created[40], updated[40];
    bool shipped;             /* templates dir (public), not an import */
};

static void info_of(const struct abxl_tmpl *t, const char *dir, struct tinfo *ti)
{
    char path[4200];
    const char *k = t->key;
    /* The cache key changes exactly when the definition does, as a new
     * build's id would: the first 32 hex digits, shaped as E2B's UUIDs. */
    if (strlen(k) >= 32)
        snprintf(ti->build_id, sizeof ti->build_id, "%.8s-%.4s-%.4s-%.4s-%.12s", k, k + 8,
                 k + 12, k + 16, k + 20);
    else
        snprintf(ti->build_id, sizeof ti->build_id, "%s", k);
    abxl_fmt(path, sizeof path, "%s/template.json", dir);
    int64_t created = mtime_ms(path), updated = created;
    /* Updated when the root was last built (its record in the cache). */
    if (abxl_fmt(path, sizeof path, "%s.json", t->rootfs) == 0) {
        int64_t built = mtime_ms(path);
        if (built > updated)
            updated = built;
    }
    abxl_rfc3339(created, ti->created, sizeof ti->created);
    abxl_rfc3339(updated, ti->updated, sizeof ti->updated);
    size_t n = strlen(abxl_cfg.templates_dir);
    ti->shipped = strncmp(dir, abxl_cfg.templates_dir, n) == 0 && dir[n] == '/';
}

static void add_sizes(cJSON *o, const struct abxl_tmpl *t)
{
    cJSON_AddNumberToObject(o, "cpuCount", t->cpu_count);
    cJSON_AddNumberToObject(o, "memoryMB", t->memory_mb);
    cJSON_AddNumberToObject(o, "diskSizeMB", t->disk_mb);
}

/* Upstream E2B's Template object (GET /templates). abx-local keeps no
 * spawn history: lastSpawnedAt null, spawnCount 0. */
static cJSON *template_json(const struct abxl_tmpl *t, const char *dir)
{
    char pub[ABXL_TMPL_ID_MAX];
    struct tinfo ti;
    info_of(t, dir, &ti);
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "templateID", abxl_tmpl_public_id(t->id, pub));
    cJSON_AddStringToObject(o, "buildID", ti.build_id);
    add_sizes(o, t);
    cJSON_AddBoolToObject(o, "public", ti.shipped);
    cJSON_AddItemToObject(o, "aliases", aliases_of(dir, t));
    cJSON_AddStringToObject(o, "createdAt", ti.created);
    cJSON_AddStringToObject(o, "updatedAt", ti.updated);
    cJSON_AddNullToObject(o, "createdBy");
    cJSON_AddNullToObject(o, "lastSpawnedAt");
    cJSON_AddNumberToObject(o, "spawnCount", 0);
    cJSON_AddNumberToObject(o, "buildCount", 1);
    cJSON_AddStringToObject(o, "buildStatus", "ready");
    cJSON_AddStringToObject(o, "envdVersion", abxl_envd_version());
    return o;
}

/* GET /templates/{id}: the template and its one build (the cached root). */
static cJSON *detail_json(const struct abxl_tmpl *t)
{
    char pub[ABXL_TMPL_ID_MAX];
    struct tinfo ti;
    info_of(t, t->dir, &ti);
    cJSON *o = cJSON_CreateObject(), *builds, *b;
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "templateID", abxl_tmpl_public_id(t->id, pub));
    cJSON_AddBoolToObject(o, "public", ti.shipped);
    cJSON_AddItemToObject(o, "aliases", aliases_of(t->dir, t));
    builds = cJSON_AddArrayToObject(o, "builds");
    if (builds && (b = cJSON_CreateObject()) != NULL) {
        cJSON_AddStringToObject(b, "buildID", ti.build_id);
        cJSON_AddStringToObject(b, "status", "ready");
        cJSON_AddStringToObject(b, "createdAt", ti.created);
        cJSON_AddStringToObject(b, "updatedAt", ti.updated);
        add_sizes(b, t);
        cJSON_AddStringToObject(b, "envdVersion", abxl_envd_version());
        cJSON_AddItemToArray(builds, b);
    }
    return o;
}

/* GET /templates/aliases/{alias}: E2B's check that a name is taken (the
 * SDKs' Template.exists). Here a template's id is a name too ("base" is
 * E2B's alias of its base template), so either answers; every template is
 * the one team's, so never 403. */
static cJSON *alias_json(const struct abxl_tmpl *t)
{
    struct tinfo ti;
    info_of(t, t->dir, &ti);
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "templateID", t->id);
    cJSON_AddBoolToObject(o, "public", ti.shipped);
    return o;
}

static int list_one(struct abxl_tmpl *t, const char *dir, const char *entry, int ok, void *arg)
{
    (void)entry;
    /* A broken definition cannot be created from either: not listed
     * (create names its fault when asked for it). */
    if (ok >= 0) {
        cJSON *o = template_json(t, dir);
        if (o)
            cJSON_AddItemToArray(arg, o);
    }
    return 0;
}

enum MHD_Result abxl_ctl_templates(struct MHD_Connection *c, const char *method, const char *path)
{
    const char *rest = path + 10;   /* after "/templates" */
    /* latencyMs covers every control-plane request; the error rate only
     * /sandboxes* (DESIGN.md), so no failure is rolled here. */
    struct abxl_faults f;
    abxl_faults_get(&f);
    abxl_sleep_ms(f.latency_ms);
    if (rest[0] == '\0' || strcmp(rest, "/") == 0) {
        if (strcmp(method, "GET") != 0)
            return abxl_http_405(c, "GET", method, path);
        cJSON *arr = cJSON_CreateArray();
        if (arr == NULL)
            return abxl_http_error(c, 500, "out of memory");
        abxl_tmpl_each(list_one, arr);
        return abxl_http_json(c, 200, arr);
    }
    const char *seg = rest + 1;
    bool by_alias = strncmp(seg, "aliases/", 8) == 0;
    seg += by_alias ? 8 : 0;
    size_t n = strlen(seg);
    char name[128];
    /* Builds, files and logs of a template are not served here. */
    if (strchr(seg, '/') != NULL || n == 0)
        return abxl_http_error(c, 404, "route %.16s %.200s not found", method, path);
    if (strcmp(method, "GET") != 0)
        return abxl_http_405(c, "GET", method, path);
    if (abxl_unescape(seg, n, name, sizeof name) != 0)
        return abxl_http_error(c, 404, "template \"%.64s\" not found", seg);
    struct abxl_tmpl t;
    char err[512] = "";
    memset(&t, 0, sizeof t);
    int r = abxl_tmpl_find(name, &t, err, sizeof err);
    if (r == 1)
        return abxl_http_error(c, 404, "template \"%.64s\" not found", name);
    if (r < 0)
        return abxl_http_error(c, 500, "template \"%.64s\" is broken: %s", name, err);
    cJSON *o = by_alias ? alias_json(&t) : detail_json(&t);
    abxl_tmpl_free(&t);
    return o ? abxl_http_json(c, 200, o) : abxl_http_error(c, 500, "out of memory");
}
