/* Control plane: /sandboxes and /v2/sandboxes routes. Lists are in
 * ctl_list.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "base.h"
#include "http.h"
#include "log.h"
#include "sandbox.h"

#define ID_CHARS "abcdefghijklmnopqrstuvwxyz0123456789-"

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
    return abxl_http_error(c, 404, "sandbox \"%.64s\" not found", id);
}

/* A filesystem-only paused sandbox that would not boot (it stays paused). */
static enum MHD_Result boot_failed(struct MHD_Connection *c, const struct abxl_sbx *s)
{
    return abxl_http_error(c, 500, "sandbox %s could not boot again after its pause (abx-local's "
                          "log says why)", s->id);
}

/* Reads {"timeout": n} for timeout/connect/resume: 0 to the maximum (the
 * API's schema says minimum 0; a negative one is refused). */
static int body_timeout(struct MHD_Connection *c, const struct abx_buf *body, bool required,
                        long def, long *out, enum MHD_Result *ret)
{
    char err[256];
    cJSON *o = abxl_body_parse(c, body, ret);
    if (o == NULL && body->len)
        return -1;
    long t = def;
    int r = abxl_body_int(o, "timeout", 0, abxl_max_timeout_s(), &t, err, sizeof err);
    cJSON_Delete(o);
    if (r < 0) {
        *ret = abxl_http_error(c, 400, "%s", err);
        return -1;
    }
    if (r == 0 && required) {
        *ret = abxl_http_error(c, 400, "field 'timeout' is required");
        return -1;
    }
    *out = t;
    return 0;
}

/* ?start=&end= in unix seconds (E2B's metrics query); absent: the
 * sandbox's start and now. 0, or -1 with the reply in *ret. */
static int time_range(struct MHD_Connection *c, const char *uri, const struct abxl_sbx *s,
                      int64_t *start, int64_t *end, enum MHD_Result *ret)
{
    const char *names[2] = {"start", "end"};
    int64_t *out[2] = {start, end};
    *start = s->started_ms / 1000;
    *end = abxl_now_ms() / 1000 + 1;
    for (int i = 0; i < 2; i++) {
        char v[32], *e = NULL;
        int q = abxl_query_get(uri, names[i], v, sizeof v);
        if (q == 0)
            continue;
        long long x = q > 0 ? strtoll(v, &e, 10) : -1;
        if (q < 0 || v[0] == '\0' || *e != '\0' || x < 0) {
            *ret = abxl_http_error(c, 400, "query parameter '%s' must be unix seconds", names[i]);
            return -1;
        }
        *out[i] = x;
    }
    return 0;
}

static enum MHD_Result on_sandbox(struct MHD_Connection *c, const char *method, const char *path,
                                  const char *uri, const char *id, const char *sub, bool v2,
                                  const struct abx_buf *body)
{
    enum MHD_Result ret = MHD_YES;
    bool get_sub = sub != NULL && (strcmp(sub, "metrics") == 0 || strcmp(sub, "logs") == 0);
    const char *want = sub == NULL ? (v2 ? "GET" : "GET, DELETE") : get_sub ? "GET" : "POST";
    if (sub != NULL && !get_sub && strcmp(sub, "timeout") != 0 &&
        strcmp(sub, "connect") != 0 && strcmp(sub, "pause") != 0 &&
        strcmp(sub, "resume") != 0 && strcmp(sub, "refreshes") != 0)
        return abxl_http_error(c, 404, "route %.16s %.200s not found", method, path);
    if (v2 && sub != NULL && strcmp(sub, "connect") != 0 && strcmp(sub, "logs") != 0)
        return abxl_http_error(c, 404, "route %.16s %.200s not found", method, path);
    /* FC creates and connects on v1 only (SDK 2.51.0, which moved to v2,
     * cannot create there): a client that drifts to v2 is caught here. */
    if (v2 && sub != NULL && strcmp(sub, "connect") == 0 && !abxl_sw(ABXL_SW_V2_LIFECYCLE))
        return abxl_http_error(c, 405, "connect on v2 is not supported here: use POST "
                              "/sandboxes/{id}/connect");
    if (!method_in(want, method))
        return abxl_http_405(c, want, method, path);
    if (sub == NULL && strcmp(method, "DELETE") == 0) {
        struct abxl_faults f;
        abxl_faults_get(&f);
        /* Said before the wait, so a test can act while a delete hangs. */
        if (f.delete_delay_ms > 0)
            abxl_log(ABXL_LOG_INFO, "holding DELETE of sandbox %.64s for %ld ms (fault "
                     "injection)", strspn(id, ID_CHARS) == strlen(id) ? id : "(bad id)",
                     f.delete_delay_ms);
        abxl_sleep_ms(f.delete_delay_ms);
    }
    if (abxl_vary(ABXL_V_ID_CHECK) && !abxl_id_shaped(id))
        return abxl_http_error(c, 400, "invalid sandbox id '%.64s'",
                               strspn(id, ID_CHARS) == strlen(id) ? id : "(bad id)");
    struct abxl_sbx *s = abxl_reg_get(id);
    if (s == NULL)
        return not_found(c, id);
    long t = 0;
    if (sub != NULL && (strcmp(sub, "pause") == 0 || strcmp(sub, "resume") == 0) &&
        !abxl_sw(ABXL_SW_PAUSE)) {
        ret = abxl_http_error(c, 403, "%s is available to allow-listed accounts only (not on "
                             "the Eco plan)", sub[0] == 'p' ? "pause" : "resume");
        goto out;
    }
    if (sub == NULL && strcmp(method, "GET") == 0) {
        ret = abxl_http_json(c, 200, abxl_json_detail(s, false));
    } else if (sub == NULL) {
        struct abxl_faults f;
        abxl_faults_get(&f);
        if (f.kill_ignored) {
            abxl_log(ABXL_LOG_INFO, "ignoring DELETE of sandbox %s (fault injection)", s->id);
        } else {
            abxl_life_kill(s);
            abxl_log(ABXL_LOG_INFO, "sandbox %s killed", s->id);
        }
        ret = abxl_http_send(c, 204, NULL, "", 0);
    } else if (strcmp(sub, "metrics") == 0) {
        int64_t start, end;
        if (time_range(c, uri, s, &start, &end, &ret) == 0)
            ret = abxl_http_json(c, 200, abxl_metrics_range(s, start, end));
    } else if (strcmp(sub, "logs") == 0) {
        char v[32], *e = NULL;
        long limit = 1000;
        if (abxl_query_get(uri, "limit", v, sizeof v) > 0 &&
            ((limit = strtol(v, &e, 10)) < 0 || *e != '\0' || v[0] == '\0'))
            ret = abxl_http_error(c, 400, "query parameter 'limit' must be a non-negative integer");
        else
            ret = abxl_http_json(c, 200, abxl_logs_json(s, limit));
    } else if (strcmp(sub, "timeout") == 0 || strcmp(sub, "refreshes") == 0) {
        bool refresh = sub[0] == 'r';
        if (refresh) {
            cJSON *o = abxl_body_parse(c, body, &ret);
            char err[256];
            int r = o || !body->len
                        ? abxl_body_int(o, "duration", 0, 3600, &t, err, sizeof err)
                        : -2;
            cJSON_Delete(o);
            if (r == -1)
                ret = abxl_http_error(c, 400, "%s", err);
            if (r < 0)
                goto out;
        } else if (body_timeout(c, body, true, 0, &t, &ret) != 0) {
            goto out;
        }
        pthread_mutex_lock(&abxl_reg_lock);
        int64_t end = abxl_now_ms() + (int64_t)t * 1000;
        if (!refresh || end > s->end_ms)
            s->end_ms = end;
        pthread_mutex_unlock(&abxl_reg_lock);
        ret = abxl_http_send(c, 204, NULL, "", 0);
    } else if (strcmp(sub, "connect") == 0) {
        /* ConnectSandbox needs timeout; ConnectSandboxV2 defaults it to 300. */
        if (body_timeout(c, body, !v2, 300, &t, &ret) != 0)
            goto out;
        int64_t end = abxl_now_ms() + (int64_t)t * 1000;
        int r = abxl_life_resume(s, end);
        if (r == -2) {
            ret = boot_failed(c, s);
        } else if (r < 0) {
            ret = not_found(c, id);
        } else if (r == 0) {
            ret = abxl_http_json(c, 201, abxl_json_sandbox(s));
        } else {
            pthread_mutex_lock(&abxl_reg_lock);
            bool changing = s->busy;
            if (!changing && end > s->end_ms)
                s->end_ms = end;   /* connect never shortens */
            pthread_mutex_unlock(&abxl_reg_lock);
            ret = changing ? abxl_http_error(c, 409, "sandbox %s is changing state", s->id)
                           : abxl_http_json(c, 200, abxl_json_sandbox(s));
        }
    } else if (strcmp(sub, "pause") == 0) {
        /* {"memory": false}: a filesystem-only pause (life.c). */
        cJSON *o = abxl_body_parse(c, body, &ret);
        if (o == NULL && body->len)
            goto out;
        char err[256];
        bool memory = true;
        int br = abxl_body_bool(o, "memory", &memory, err, sizeof err);
        cJSON_Delete(o);
        if (br < 0) {
            ret = abxl_http_error(c, 400, "%s", err);
            goto out;
        }
        int r = memory ? abxl_life_pause(s) : abxl_life_pause_fs(s);
        ret = r < 0   ? not_found(c, id)
              : r > 0 ? abxl_http_error(c, 409, "sandbox %s is already paused", s->id)
                      : abxl_http_send(c, 204, NULL, "", 0);
    } else {   /* resume (deprecated) */
        if (body_timeout(c, body, false, 15, &t, &ret) != 0)
            goto out;
        int r = abxl_life_resume(s, abxl_now_ms() + (int64_t)t * 1000);
        ret = r == -2 ? boot_failed(c, s)
              : r < 0 ? not_found(c, id)
              : r > 0 ? abxl_http_error(c, 409, "sandbox %s is already running", s->id)
                      : abxl_http_json(c, 201, abxl_json_sandbox(s));
    }
out:
    abxl_sbx_unref(s);
    return ret;
}

static enum MHD_Result metrics_many(struct MHD_Connection *c, const char *uri)
{
    char ids[4096];
    int q = abxl_query_get(uri, "sandbox_ids", ids, sizeof ids);
    if (q < 0)
        return abxl_http_error(c, 400, "query parameter 'sandbox_ids' is badly encoded");
    if (q == 0 || ids[0] == '\0')
        return abxl_http_error(c, 400, "query parameter 'sandbox_ids' is required");
    cJSON *o = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(o, "sandboxes");
    int n = 0;
    char *save = NULL;
    for (char *id = strtok_r(ids, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
        if (++n > 100) {
            cJSON_Delete(o);
            return abxl_http_error(c, 400, "at most 100 sandbox_ids are allowed");
        }
        struct abxl_sbx *s = abxl_reg_get(id);
        if (s && m)
            cJSON_AddItemToObject(m, s->id, abxl_metrics_latest(s));
        abxl_sbx_unref(s);
    }
    return abxl_http_json(c, 200, o);
}

enum MHD_Result abxl_ctl_sandboxes(struct MHD_Connection *c, const char *method, const char *path,
                                  const char *uri, const struct abx_buf *body)
{
    bool v2 = strncmp(path, "/v2/", 4) == 0;
    const char *rest = path + (v2 ? 13 : 10);
    if (rest[0] == '\0' || strcmp(rest, "/") == 0) {
        if (strcmp(method, "GET") == 0)
            return abxl_ctl_list(c, uri, v2);
        bool post = !v2 || abxl_sw(ABXL_SW_V2_LIFECYCLE);
        if (strcmp(method, "POST") == 0 && post)
            return abxl_ctl_create(c, body, v2);
        return abxl_http_405(c, post ? "GET, POST" : "GET", method, path);
    }
    char id[128], sub[64];
    const char *slash = strchr(rest + 1, '/');
    size_t idlen = slash ? (size_t)(slash - rest - 1) : strlen(rest + 1);
    if (idlen == 0 || idlen >= sizeof id)
        return abxl_http_error(c, 404, "route %.16s %.200s not found", method, path);
    memcpy(id, rest + 1, idlen);
    id[idlen] = '\0';
    if (slash && (strlen(slash + 1) >= sizeof sub || strchr(slash + 1, '/') || !slash[1]))
        return abxl_http_error(c, 404, "route %.16s %.200s not found", method, path);
    if (slash)
        snprintf(sub, sizeof sub, "%s", slash + 1);
    if (!v2 && !slash && strcmp(id, "metrics") == 0) {
        if (strcmp(method, "GET") != 0)
            return abxl_http_405(c, "GET", method, path);
        return metrics_many(c, uri);
    }
    return on_sandbox(c, method, path, uri, id, slash ? sub : NULL, v2, body);
}
