/* Control plane: /sandboxes and /v2/sandboxes routes. Lists are in
 * api_list.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

/* Parses an optional JSON object body; NULL with *bad set on error. */
static cJSON *parse_body(struct MHD_Connection *c, const struct abx_buf *body,
                         enum MHD_Result *bad)
{
    *bad = MHD_YES;
    if (body->len == 0)
        return NULL;
    cJSON *o = cJSON_ParseWithLength(body->data, body->len);
    if (o == NULL) {
        *bad = abx_http_error(c, 400, "malformed JSON body");
        return NULL;
    }
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        *bad = abx_http_error(c, 400, "request body must be a JSON object");
        return NULL;
    }
    return o;
}

/* 1 present (in *out), 0 absent, -1 wrong type / range (err set). */
static int get_int(const cJSON *o, const char *name, long min, long max, long *out,
                   char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
        v->valuedouble != floor(v->valuedouble)) {
        snprintf(err, errlen, "field '%s' must be an integer", name);
        return -1;
    }
    if (v->valuedouble < (double)min || v->valuedouble > (double)max) {
        snprintf(err, errlen, "field '%s' must be between %ld and %ld", name, min, max);
        return -1;
    }
    *out = (long)v->valuedouble;
    return 1;
}

static int get_bool(const cJSON *o, const char *name, bool *out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsBool(v)) {
        snprintf(err, errlen, "field '%s' must be a boolean", name);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 1;
}

/* A map of strings (metadata, envVars). */
static int get_map(const cJSON *o, const char *name, const cJSON **out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    *out = NULL;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsObject(v)) {
        snprintf(err, errlen, "field '%s' must be an object of strings", name);
        return -1;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, v)
    {
        if (!cJSON_IsString(e)) {
            snprintf(err, errlen, "field '%s.%.64s' must be a string", name, e->string);
            return -1;
        }
    }
    *out = v;
    return 1;
}

/* Exact match of method against a "GET, DELETE" list. */
static bool method_in(const char *list, const char *method)
{
    size_t n = strlen(method);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, method, n) == 0)
            return true;
        p += len;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return false;
}

static enum MHD_Result not_found(struct MHD_Connection *c, const char *id)
{
    return abx_http_error(c, 404, "sandbox \"%.64s\" not found", id);
}

/* v2 create (NewSandboxV2) is always secured: no `secure` flag. */
static enum MHD_Result create(struct MHD_Connection *c, const struct abx_buf *body, bool v2)
{
    enum MHD_Result bad;
    char err[512];
    struct abx_tmpl t = {0};
    bool have_tmpl = false;
    struct abx_sbx *s = NULL;
    enum MHD_Result ret;
    cJSON *o = parse_body(c, body, &bad);
    if (o == NULL) {
        ret = body->len ? bad : abx_http_error(c, 400, "request body with templateID is required");
        goto out;
    }
    const cJSON *tid = cJSON_GetObjectItemCaseSensitive(o, "templateID");
    if (tid == NULL || cJSON_IsNull(tid)) {
        ret = abx_http_error(c, 400, "field 'templateID' is required");
        goto out;
    }
    if (!cJSON_IsString(tid) || tid->valuestring[0] == '\0' || strlen(tid->valuestring) > 120) {
        ret = abx_http_error(c, 400, "field 'templateID' must be a non-empty string (max 120)");
        goto out;
    }
    long timeout = v2 ? 300 : 15;   /* NewSandboxV2 / NewSandbox defaults */
    bool secure = false, internet = true, auto_pause = false;
    const cJSON *meta, *envs;
    if (get_int(o, "timeout", 1, ABX_MAX_TIMEOUT_S, &timeout, err, sizeof err) < 0 ||
        get_bool(o, "secure", &secure, err, sizeof err) < 0 ||
        get_bool(o, "allow_internet_access", &internet, err, sizeof err) < 0 ||
        get_bool(o, "autoPause", &auto_pause, err, sizeof err) < 0 ||
        get_map(o, "metadata", &meta, err, sizeof err) < 0 ||
        get_map(o, "envVars", &envs, err, sizeof err) < 0) {
        ret = abx_http_error(c, 400, "%s", err);
        goto out;
    }
    if (v2)
        secure = true;
    int fr = abx_tmpl_find(tid->valuestring, &t, err, sizeof err);
    if (fr == 1) {
        ret = abx_http_error(c, 404, "template '%s' not found", tid->valuestring);
        goto out;
    }
    if (fr < 0) {
        ret = abx_http_error(c, 500, "template '%s' is broken: %s", tid->valuestring, err);
        goto out;
    }
    have_tmpl = true;
    if (abx_reg_count() >= (size_t)abx_cfg.max_sandboxes) {
        /* E2B answers a concurrency limit with 429 too. Checked early so
         * that a full server answers at once; abx_reg_add decides. */
        ret = abx_http_error(c, 429, "maximum number of concurrent sandboxes reached (%ld)",
                             abx_cfg.max_sandboxes);
        goto out;
    }
    struct abx_faults f;
    abx_faults_get(&f);
    abx_sleep_ms(f.create_latency_ms);
    s = abx_sbx_new();
    if (s == NULL) {
        ret = abx_http_error(c, 500, "out of memory");
        goto out;
    }
    struct abx_sbx *dup;
    do {
        abx_random_id(s->id);
        dup = abx_reg_get(s->id);
        abx_sbx_unref(dup);
    } while (dup != NULL);
    snprintf(s->template_id, sizeof s->template_id, "%s", t.id);
    snprintf(s->alias, sizeof s->alias, "%s",
             strcmp(tid->valuestring, t.id) != 0 ? tid->valuestring : t.alias);
    if (secure && abx_random_hex(s->access_token, 32) != 0) {
        ret = abx_http_error(c, 500, "no randomness for the access token");
        goto out;
    }
    if (meta) {
        cJSON *copy = cJSON_Duplicate(meta, 1);
        if (copy == NULL) {
            ret = abx_http_error(c, 500, "out of memory");
            goto out;
        }
        cJSON_Delete(s->metadata);
        s->metadata = copy;   /* never NULL (server.h) */
    }
    s->cpu_count = t.cpu_count;
    s->memory_mb = t.memory_mb;
    s->disk_mb = t.disk_mb;
    s->allow_internet = internet;
    s->auto_pause = auto_pause;
    int sr = abx_spawn(s, &t, envs, err, sizeof err);
    if (sr > 0) {   /* lost a race for the last slot; nothing to clean up */
        ret = abx_http_error(c, 429, "%s", err);
        goto out;
    }
    if (sr != 0 || abx_spawn_wait_ready(s, &t, err, sizeof err) != 0) {
        char tail[256];
        abx_spawn_log_tail(s, tail, sizeof tail);
        fprintf(stderr, "abx-local: sandbox %s failed to start: %s%s%s\n", s->id, err,
                tail[0] ? "; envd.log: " : "", tail);
        abx_life_kill(s);
        ret = abx_http_error(c, 500, "sandbox failed to start: %s", err);
        goto out;
    }
    pthread_mutex_lock(&abx_reg_lock);
    bool alive = s->state == ABX_SBX_STARTING;
    if (alive) {
        s->started_ms = abx_now_ms();
        s->end_ms = s->started_ms + timeout * 1000;
        s->state = ABX_SBX_RUNNING;
    }
    pthread_mutex_unlock(&abx_reg_lock);
    if (!alive) {
        ret = abx_http_error(c, 500, "sandbox was killed while starting");
        goto out;
    }
    fprintf(stderr, "abx-local: sandbox %s created (template %s, timeout %lds)\n", s->id, t.id,
            timeout);
    if (abx_faults_take_create_drop())   /* a lost reply: the sandbox stays */
        ret = abx_http_error(c, 503, "injected fault: create reply dropped (sandbox %s exists)",
                             s->id);
    else
        ret = abx_http_json(c, 201, abx_json_sandbox(s));
out:
    abx_sbx_unref(s);
    if (have_tmpl)
        abx_tmpl_free(&t);
    cJSON_Delete(o);
    return ret;
}

/* Reads {"timeout": n} for timeout/connect/resume; negative counts as 0. */
static int body_timeout(struct MHD_Connection *c, const struct abx_buf *body, bool required,
                        long def, long *out, enum MHD_Result *ret)
{
    char err[256];
    cJSON *o = parse_body(c, body, ret);
    if (o == NULL && body->len)
        return -1;
    long t = def;
    int r = get_int(o, "timeout", -2147483648L, ABX_MAX_TIMEOUT_S, &t, err, sizeof err);
    cJSON_Delete(o);
    if (r < 0) {
        *ret = abx_http_error(c, 400, "%s", err);
        return -1;
    }
    if (r == 0 && required) {
        *ret = abx_http_error(c, 400, "field 'timeout' is required");
        return -1;
    }
    *out = t < 0 ? 0 : t;
    return 0;
}

static enum MHD_Result on_sandbox(struct MHD_Connection *c, const char *method, const char *path,
                                  const char *id, const char *sub, bool v2,
                                  const struct abx_buf *body)
{
    enum MHD_Result ret = MHD_YES;
    const char *want = sub == NULL ? (v2 ? "GET" : "GET, DELETE")
                       : strcmp(sub, "metrics") == 0 ? "GET"
                                                     : "POST";
    if (sub != NULL && strcmp(sub, "metrics") != 0 && strcmp(sub, "timeout") != 0 &&
        strcmp(sub, "connect") != 0 && strcmp(sub, "pause") != 0 &&
        strcmp(sub, "resume") != 0 && strcmp(sub, "refreshes") != 0)
        return abx_http_error(c, 404, "route %.16s %.200s not found", method, path);
    if (v2 && sub != NULL && strcmp(sub, "connect") != 0)
        return abx_http_error(c, 404, "route %.16s %.200s not found", method, path);
    if (!method_in(want, method))
        return abx_http_405(c, want, method, path);
    if (sub == NULL && strcmp(method, "DELETE") == 0) {
        struct abx_faults f;
        abx_faults_get(&f);
        abx_sleep_ms(f.delete_delay_ms);
    }
    struct abx_sbx *s = abx_reg_get(id);
    if (s == NULL)
        return not_found(c, id);
    long t = 0;
    if (sub == NULL && strcmp(method, "GET") == 0) {
        ret = abx_http_json(c, 200, abx_json_detail(s, false));
    } else if (sub == NULL) {
        abx_life_kill(s);
        fprintf(stderr, "abx-local: sandbox %s killed\n", s->id);
        ret = abx_http_send(c, 204, NULL, "", 0);
    } else if (strcmp(sub, "metrics") == 0) {
        cJSON *a = cJSON_CreateArray();
        if (a)
            cJSON_AddItemToArray(a, abx_json_metric(s));
        ret = abx_http_json(c, 200, a);
    } else if (strcmp(sub, "timeout") == 0 || strcmp(sub, "refreshes") == 0) {
        bool refresh = sub[0] == 'r';
        if (refresh) {
            cJSON *o = parse_body(c, body, &ret);
            char err[256];
            int r = o || !body->len ? get_int(o, "duration", 0, 3600, &t, err, sizeof err) : -2;
            cJSON_Delete(o);
            if (r == -1)
                ret = abx_http_error(c, 400, "%s", err);
            if (r < 0)
                goto out;
        } else if (body_timeout(c, body, true, 0, &t, &ret) != 0) {
            goto out;
        }
        pthread_mutex_lock(&abx_reg_lock);
        int64_t end = abx_now_ms() + (int64_t)t * 1000;
        if (!refresh || end > s->end_ms)
            s->end_ms = end;
        pthread_mutex_unlock(&abx_reg_lock);
        ret = abx_http_send(c, 204, NULL, "", 0);
    } else if (strcmp(sub, "connect") == 0) {
        /* ConnectSandbox needs timeout; ConnectSandboxV2 defaults it to 300. */
        if (body_timeout(c, body, !v2, 300, &t, &ret) != 0)
            goto out;
        int64_t end = abx_now_ms() + (int64_t)t * 1000;
        int r = abx_life_resume(s, end);
        if (r < 0) {
            ret = not_found(c, id);
        } else if (r == 0) {
            ret = abx_http_json(c, 201, abx_json_sandbox(s));
        } else {
            pthread_mutex_lock(&abx_reg_lock);
            bool changing = s->busy;
            if (!changing && end > s->end_ms)
                s->end_ms = end;   /* connect never shortens */
            pthread_mutex_unlock(&abx_reg_lock);
            ret = changing ? abx_http_error(c, 409, "sandbox %s is changing state", s->id)
                           : abx_http_json(c, 200, abx_json_sandbox(s));
        }
    } else if (strcmp(sub, "pause") == 0) {
        cJSON *o = parse_body(c, body, &ret);
        if (o == NULL && body->len)
            goto out;
        cJSON_Delete(o);
        int r = abx_life_pause(s);
        ret = r < 0   ? not_found(c, id)
              : r > 0 ? abx_http_error(c, 409, "sandbox %s is already paused", s->id)
                      : abx_http_send(c, 204, NULL, "", 0);
    } else {   /* resume (deprecated) */
        if (body_timeout(c, body, false, 15, &t, &ret) != 0)
            goto out;
        int r = abx_life_resume(s, abx_now_ms() + (int64_t)t * 1000);
        ret = r < 0   ? not_found(c, id)
              : r > 0 ? abx_http_error(c, 409, "sandbox %s is already running", s->id)
                      : abx_http_json(c, 201, abx_json_sandbox(s));
    }
out:
    abx_sbx_unref(s);
    return ret;
}

static enum MHD_Result metrics_many(struct MHD_Connection *c, const char *uri)
{
    char ids[4096];
    int q = abx_query_get(uri, "sandbox_ids", ids, sizeof ids);
    if (q < 0)
        return abx_http_error(c, 400, "query parameter 'sandbox_ids' is badly encoded");
    if (q == 0 || ids[0] == '\0')
        return abx_http_error(c, 400, "query parameter 'sandbox_ids' is required");
    cJSON *o = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(o, "sandboxes");
    int n = 0;
    char *save = NULL;
    for (char *id = strtok_r(ids, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
        if (++n > 100) {
            cJSON_Delete(o);
            return abx_http_error(c, 400, "at most 100 sandbox_ids are allowed");
        }
        struct abx_sbx *s = abx_reg_get(id);
        if (s && m)
            cJSON_AddItemToObject(m, s->id, abx_json_metric(s));
        abx_sbx_unref(s);
    }
    return abx_http_json(c, 200, o);
}

enum MHD_Result abx_api_sandboxes(struct MHD_Connection *c, const char *method, const char *path,
                                  const char *uri, const struct abx_buf *body)
{
    bool v2 = strncmp(path, "/v2/", 4) == 0;
    const char *rest = path + (v2 ? 13 : 10);
    if (rest[0] == '\0' || strcmp(rest, "/") == 0) {
        if (strcmp(method, "GET") == 0)
            return abx_api_list(c, uri, v2);
        if (strcmp(method, "POST") == 0)
            return create(c, body, v2);
        return abx_http_405(c, "GET, POST", method, path);
    }
    char id[128], sub[64];
    const char *slash = strchr(rest + 1, '/');
    size_t idlen = slash ? (size_t)(slash - rest - 1) : strlen(rest + 1);
    if (idlen == 0 || idlen >= sizeof id)
        return abx_http_error(c, 404, "route %.16s %.200s not found", method, path);
    memcpy(id, rest + 1, idlen);
    id[idlen] = '\0';
    if (slash && (strlen(slash + 1) >= sizeof sub || strchr(slash + 1, '/') || !slash[1]))
        return abx_http_error(c, 404, "route %.16s %.200s not found", method, path);
    if (slash)
        snprintf(sub, sizeof sub, "%s", slash + 1);
    if (!v2 && !slash && strcmp(id, "metrics") == 0) {
        if (strcmp(method, "GET") != 0)
            return abx_http_405(c, "GET", method, path);
        return metrics_many(c, uri);
    }
    return on_sandbox(c, method, path, id, slash ? sub : NULL, v2, body);
}
