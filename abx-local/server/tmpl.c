/* Templates: <templates-dir>/<name>/template.json, found by id or alias. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

#define TMPL_JSON_MAX (256 * 1024)

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return NULL;
    struct abx_buf b;
    abx_buf_init(&b, TMPL_JSON_MAX);
    char chunk[4096];
    size_t n;
    int ok = 1;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (abx_buf_append(&b, chunk, n) != 0) {
            ok = 0;
            break;
        }
    fclose(f);
    if (!ok) {
        abx_buf_free(&b);
        return NULL;
    }
    abx_buf_appends(&b, "");
    size_t len;
    return abx_buf_steal(&b, &len);
}

static int int_field(const cJSON *o, const char *name, int def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e7)
        return (int)v->valuedouble;
    return def;
}

static void copy_str(char *dst, size_t n, const char *src)
{
    abx_fmt(dst, n, "%s", src ? src : "");
}

/* Parses dir/template.json; 0 ok, 1 absent, -1 broken. */
static int load(const char *dir, struct abx_tmpl *t, char *err, size_t errlen)
{
    char path[4200];
    abx_fmt(path, sizeof path, "%s/template.json", dir);
    char *text = read_text(path);
    if (text == NULL)
        return 1;
    cJSON *o = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(o)) {
        abx_fmt(err, errlen, "%s is not a JSON object", path);
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
    t->cpu_count = int_field(o, "cpuCount", 2);
    t->memory_mb = int_field(o, "memoryMB", 512);
    t->disk_mb = int_field(o, "diskSizeMB", 1024);
    cJSON_Delete(o);
    return 0;
}

static bool matches(const struct abx_tmpl *t, const char *dir, const char *name)
{
    if (strcmp(t->id, name) == 0)
        return true;
    char path[4200];
    abx_fmt(path, sizeof path, "%s/template.json", dir);
    char *text = read_text(path);
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

int abx_tmpl_find(const char *name, struct abx_tmpl *out, char *err, size_t errlen)
{
    if (name[0] == '\0' || name[0] == '.' || strchr(name, '/') != NULL)
        return 1;
    DIR *d = opendir(abx_cfg.templates_dir);
    if (d == NULL) {
        abx_fmt(err, errlen, "templates dir %s cannot be read", abx_cfg.templates_dir);
        return -1;
    }
    int rc = 1;
    struct dirent *e;
    while (rc == 1 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char dir[4200];
        abx_fmt(dir, sizeof dir, "%s/%s", abx_cfg.templates_dir, e->d_name);
        struct abx_tmpl t;
        int r = load(dir, &t, err, errlen);
        if (r == 1)
            continue;
        if (r < 0) {
            if (strcmp(e->d_name, name) == 0)
                rc = -1;
            continue;
        }
        if (matches(&t, dir, name)) {
            *out = t;
            rc = 0;
        } else {
            abx_tmpl_free(&t);
        }
    }
    closedir(d);
    return rc;
}

void abx_tmpl_free(struct abx_tmpl *t)
{
    cJSON_Delete(t->env_vars);
    cJSON_Delete(t->start);
    t->env_vars = NULL;
    t->start = NULL;
}
