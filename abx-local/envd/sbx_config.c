/* The config file abx-local writes for each sandbox (abx-local/DESIGN.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon.h"
#include "jsonutil.h"

struct abxl_envd_config abxl_envd_cfg;

#define CONFIG_MAX (1024 * 1024)

static int dup_field(const cJSON *o, const char *name, char **out,
                     const char *def, char *err, size_t errlen)
{
    struct abx_json_err je;
    const char *s;

    if (abx_json_get_string(o, name, &s, def, &je) == ABX_JSON_EBADTYPE) {
        snprintf(err, errlen, "config: %s", je.msg);
        return -1;
    }
    *out = NULL;
    if (s && !(*out = strdup(s))) {
        snprintf(err, errlen, "config: out of memory");
        return -1;
    }
    return 0;
}

/* o's member name, an object of strings, copied into a new *out (an
 * empty one when absent). */
static int env_object(const cJSON *o, const char *name, cJSON **out, char *err,
                      size_t errlen)
{
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(o, name), *it;

    if (!(*out = cJSON_CreateObject())) {
        snprintf(err, errlen, "config: out of memory");
        return -1;
    }
    if (!ev || cJSON_IsNull(ev))
        return 0;
    if (!cJSON_IsObject(ev)) {
        snprintf(err, errlen, "config: %s must be an object", name);
        return -1;
    }
    cJSON_ArrayForEach(it, ev) {
        if (!cJSON_IsString(it)) {
            snprintf(err, errlen, "config: %s.%s is not a string", name, it->string);
            return -1;
        }
        if (!cJSON_AddStringToObject(*out, it->string, it->valuestring)) {
            snprintf(err, errlen, "config: out of memory");
            return -1;
        }
    }
    return 0;
}

int abxl_envd_config_load(const char *file, char *err, size_t errlen)
{
    struct abx_buf b;
    FILE *f = NULL;
    cJSON *o = NULL;
    const cJSON *start;
    char chunk[4096];
    size_t n;
    int rc = -1;

    abx_buf_init(&b, CONFIG_MAX);
    if (!(f = fopen(file, "r"))) {
        snprintf(err, errlen, "cannot open config %s: %m", file);
        goto out;
    }
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (abx_buf_append(&b, chunk, n)) {
            snprintf(err, errlen, "config %s is larger than 1 MiB", file);
            goto out;
        }
    if (!(o = cJSON_ParseWithLength(b.data ? b.data : "", b.len)) ||
        !cJSON_IsObject(o)) {
        snprintf(err, errlen, "config %s is not a JSON object", file);
        goto out;
    }
    const cJSON *disk = cJSON_GetObjectItemCaseSensitive(o, "diskSizeMB");
    abxl_envd_cfg.disk_mb = cJSON_IsNumber(disk) && disk->valuedouble > 0 &&
                                    disk->valuedouble < 1e9
                                ? (long)disk->valuedouble
                                : 0;
    if (dup_field(o, "sandboxID", &abxl_envd_cfg.sandbox_id, "", err, errlen) ||
        dup_field(o, "templateID", &abxl_envd_cfg.template_id, "", err, errlen) ||
        dup_field(o, "accessToken", &abxl_envd_cfg.access_token, NULL, err,
                  errlen) ||
        dup_field(o, "defaultUser", &abxl_envd_cfg.default_user, "root", err,
                  errlen))
        goto out;
    if (abxl_envd_cfg.access_token && !*abxl_envd_cfg.access_token) {
        free(abxl_envd_cfg.access_token);
        abxl_envd_cfg.access_token = NULL;
    }
    if (env_object(o, "envVars", &abxl_envd_cfg.env_vars, err, errlen))
        goto out;
    start = cJSON_GetObjectItemCaseSensitive(o, "start");
    if (start && !cJSON_IsNull(start)) {
        if (!cJSON_IsObject(start)) {
            snprintf(err, errlen, "config: start must be an object");
            goto out;
        }
        if (dup_field(start, "cmd", &abxl_envd_cfg.start_cmd, NULL, err, errlen) ||
            dup_field(start, "user", &abxl_envd_cfg.start_user,
                      abxl_envd_cfg.default_user, err, errlen) ||
            dup_field(start, "cwd", &abxl_envd_cfg.start_cwd, NULL, err, errlen))
            goto out;
        /* What the start command sees: the template's envVars only (it
         * runs as the template is built, before any create's). */
        if (cJSON_GetObjectItemCaseSensitive(start, "envVars") &&
            env_object(start, "envVars", &abxl_envd_cfg.start_env_vars, err, errlen))
            goto out;
    }
    if (abxl_envd_compat_load(o, err, errlen))
        goto out;
    /* Set, not inherited: what the API and commands create does not
     * depend on the umask of whoever started abx-local. */
    umask((mode_t)abxl_envd_compat.umask);
    rc = 0;
out:
    if (f)
        fclose(f);
    cJSON_Delete(o);
    abx_buf_free(&b);
    return rc;
}
