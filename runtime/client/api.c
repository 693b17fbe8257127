/* Control-plane client: platform settings, the request helper, sandbox
 * info parsing and the per-sandbox calls (create, get, connect, kill,
 * timeout, pause, resume, metrics). Listing and kill_many: api_list.c. */
#include "api_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"
#include "out.h"

static int is_http_url(const char *u)
{
    return strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0;
}

/* Copies a URL without its trailing '/'s; -1 if it does not fit. */
static int copy_url(char *out, size_t outlen, const char *u)
{
    size_t n = strlen(u);
    while (n > 0 && u[n - 1] == '/')
        n--;
    if (n >= outlen)
        return -1;
    memcpy(out, u, n);
    out[n] = '\0';
    return 0;
}

int abx_platform_init(struct abx_platform *p, const char *api_key,
                      const char *api_url, const char *domain,
                      const char *sandbox_url, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->request_timeout = 60;
    if (api_key && strlen(api_key) >= sizeof p->api_key) {
        snprintf(err, errlen, "API key is too long (max %zu bytes)",
                 sizeof p->api_key - 1);
        return -1;
    }
    if (api_key && strpbrk(api_key, "\r\n")) {
        snprintf(err, errlen, "API key contains a line break");
        return -1;
    }
    snprintf(p->api_key, sizeof p->api_key, "%s", api_key ? api_key : "");
    if (p->api_key[0])
        abx_out_add_secret(p->api_key, strlen(p->api_key));

    if (domain == NULL || domain[0] == '\0')
        domain = ABX_DEFAULT_DOMAIN;
    size_t dl = strlen(domain);
    while (dl > 0 && domain[dl - 1] == '/')
        dl--;   /* "example.com/" is a common slip, not an error */
    if (strstr(domain, "://") || strcspn(domain, "/ \t\r\n?#@") < dl) {
        snprintf(err, errlen,
                 "domain '%.100s' must be a bare host name (no scheme or path)",
                 domain);
        return -1;
    }
    if (copy_url(p->domain, sizeof p->domain, domain) != 0) {
        snprintf(err, errlen, "domain is too long (max %zu bytes)",
                 sizeof p->domain - 1);
        return -1;
    }
    if (api_url && api_url[0]) {
        if (!is_http_url(api_url)) {
            snprintf(err, errlen,
                     "API URL '%.100s' must start with http:// or https://",
                     api_url);
            return -1;
        }
        if (copy_url(p->api_url, sizeof p->api_url, api_url) != 0) {
            snprintf(err, errlen, "API URL is too long (max %zu bytes)",
                     sizeof p->api_url - 1);
            return -1;
        }
    } else if ((size_t)snprintf(p->api_url, sizeof p->api_url,
                                "https://api.%s", p->domain) >=
               sizeof p->api_url) {
        snprintf(err, errlen, "API URL derived from the domain is too long");
        return -1;
    }
    if (sandbox_url && sandbox_url[0]) {
        if (!is_http_url(sandbox_url)) {
            snprintf(err, errlen,
                     "sandbox URL '%.100s' must start with http:// or https://",
                     sandbox_url);
            return -1;
        }
        if (copy_url(p->sandbox_url, sizeof p->sandbox_url, sandbox_url)) {
            snprintf(err, errlen, "sandbox URL is too long (max %zu bytes)",
                     sizeof p->sandbox_url - 1);
            return -1;
        }
    }
    return 0;
}

/* ---- request helper ---- */

static int build_req(const struct abx_platform *p,
                     const struct abx_apix_call *c, struct abx_buf *url,
                     char **json, char *keyhdr, size_t keylen,
                     struct abx_http_req *req, struct abx_err *err)
{
    *json = NULL;
    if (abx_buf_appends(url, p->api_url) || abx_buf_appends(url, c->path))
        goto big;
    if (c->body && (*json = cJSON_PrintUnformatted(c->body)) == NULL)
        goto big;
    snprintf(keyhdr, keylen, "X-API-KEY: %s", p->api_key);
    memset(req, 0, sizeof *req);
    req->method = c->method;
    req->url = abx_buf_cstr(url);
    req->body = *json;
    req->body_len = *json ? strlen(*json) : 0;
    req->timeout = p->request_timeout;
    req->idempotent = c->idempotent;
    req->what = c->what;
    return 0;
big:
    abx_err_set(err, ABX_E_INVALID, 0, "", "%s: request too large",
                c->what);
    return -1;
}

struct abx_http_xfer *abx_apix_start(const struct abx_platform *p,
                                     const struct abx_apix_call *c,
                                     struct abx_err *err)
{
    struct abx_buf url;
    struct abx_http_req req;
    struct abx_http_xfer *x = NULL;
    char keyhdr[sizeof p->api_key + 16], *json = NULL;
    const char *hdrs[] = {keyhdr, "Content-Type: application/json",
                          "Accept: application/json", NULL};

    abx_buf_init(&url, 8192);
    if (build_req(p, c, &url, &json, keyhdr, sizeof keyhdr, &req, err) == 0) {
        req.headers = hdrs;
        x = abx_http_start(&req, err);   /* copies what it needs */
    }
    explicit_bzero(keyhdr, sizeof keyhdr);  /* not elided, unlike memset */
    cJSON_free(json);
    abx_buf_free(&url);
    return x;
}

int abx_apix_do(const struct abx_platform *p, const struct abx_apix_call *c,
                struct abx_http_resp *resp, struct abx_err *err)
{
    return abx_http_complete(abx_apix_start(p, c, err), resp, err);
}

int abx_apix_sbx_path(struct abx_buf *out, const char *id, const char *tail,
                      struct abx_err *err)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > 200) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "sandbox id %s",
                    n ? "is too long" : "is empty");
        return -1;
    }
    if (abx_buf_appends(out, "/sandboxes/") ||
        abx_url_escape(out, id, n) || abx_buf_appends(out, tail ? tail : "")) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "request path too long");
        return -1;
    }
    return 0;
}

cJSON *abx_apix_json(const struct abx_http_resp *r, const char *what,
                     struct abx_err *err)
{
    cJSON *o = abx_json_parse(r->body.data ? r->body.data : "",
                                     r->body.len);
    if (o == NULL)
        abx_err_set(err, ABX_E_PROTOCOL, r->status, "",
                    "%s: reply is not valid JSON (%zu bytes, HTTP %ld)", what,
                    r->body.len, r->status);
    return o;
}

/* ---- sandbox info ---- */

void abx_sandbox_info_free(struct abx_sandbox_info *i)
{
    free(i->envd_access_token);
    free(i->traffic_access_token);
    cJSON_Delete(i->metadata);
    cJSON_Delete(i->raw);
    memset(i, 0, sizeof *i);
}

static int perr(struct abx_err *err, const char *field, const char *why)
{
    abx_err_set(err, ABX_E_PROTOCOL, 0, "", "sandbox reply: field '%s' %s",
                field, why);
    return -1;
}

static int get_str(const cJSON *o, const char *name, int required, char *out,
                   size_t outlen, struct abx_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    out[0] = '\0';
    if (v == NULL || cJSON_IsNull(v))
        return required ? perr(err, name, "is missing") : 0;
    if (!cJSON_IsString(v))
        return perr(err, name, "is not a string");
    if (strlen(v->valuestring) >= outlen)
        return perr(err, name, "is too long");
    if (required && v->valuestring[0] == '\0')
        return perr(err, name, "is empty");
    memcpy(out, v->valuestring, strlen(v->valuestring) + 1);
    return 0;
}

static int get_long(const cJSON *o, const char *name, long *out,
                    struct abx_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    *out = 0;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e15)
        return perr(err, name, "is not a non-negative number");
    *out = (long)v->valuedouble;
    return 0;
}

static int get_secret(const cJSON *o, const char *name, char **out,
                      struct abx_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    *out = NULL;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v))
        return perr(err, name, "is not a string");
    size_t n = strlen(v->valuestring);
    if (n == 0)
        return 0;
    abx_out_add_secret(v->valuestring, n);
    if ((*out = strdup(v->valuestring)) == NULL)
        return perr(err, name, "could not be stored (out of memory)");
    return 0;
}

static int get_metadata(const cJSON *o, cJSON **out, struct abx_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "metadata"), *m;
    *out = NULL;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsObject(v))
        return perr(err, "metadata", "is not an object");
    cJSON_ArrayForEach(m, v)
        if (!cJSON_IsString(m))
            return perr(err, "metadata", "has a value that is not a string");
    if ((*out = cJSON_Duplicate(v, 1)) == NULL)
        return perr(err, "metadata", "could not be stored (out of memory)");
    return 0;
}

int abx_sandbox_info_parse(const cJSON *obj, struct abx_sandbox_info *out,
                           struct abx_err *err)
{
    struct abx_sandbox_info i;

    memset(&i, 0, sizeof i);
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(obj)) {
        abx_err_set(err, ABX_E_PROTOCOL, 0, "",
                    "sandbox reply is not a JSON object");
        return -1;
    }
    if (get_str(obj, "sandboxID", 1, i.sandbox_id, sizeof i.sandbox_id, err) ||
        get_str(obj, "templateID", 1, i.template_id, sizeof i.template_id, err) ||
        get_str(obj, "alias", 0, i.alias, sizeof i.alias, err) ||
        get_str(obj, "clientID", 0, i.client_id, sizeof i.client_id, err) ||
        get_str(obj, "envdVersion", 0, i.envd_version, sizeof i.envd_version,
                err) ||
        get_str(obj, "domain", 0, i.domain, sizeof i.domain, err) ||
        get_str(obj, "state", 0, i.state, sizeof i.state, err) ||
        get_str(obj, "startedAt", 0, i.started_at, sizeof i.started_at, err) ||
        get_str(obj, "endAt", 0, i.end_at, sizeof i.end_at, err) ||
        get_long(obj, "cpuCount", &i.cpu_count, err) ||
        get_long(obj, "memoryMB", &i.memory_mb, err) ||
        get_long(obj, "diskSizeMB", &i.disk_size_mb, err) ||
        get_secret(obj, "envdAccessToken", &i.envd_access_token, err) ||
        get_secret(obj, "trafficAccessToken", &i.traffic_access_token, err) ||
        get_metadata(obj, &i.metadata, err))
        goto fail;
    if ((i.raw = cJSON_Duplicate(obj, 1)) == NULL) {
        abx_err_set(err, ABX_E_PROTOCOL, 0, "", "sandbox reply: out of memory");
        goto fail;
    }
    *out = i;
    return 0;
fail:
    abx_sandbox_info_free(&i);
    return -1;
}

int abx_apix_parse_sandbox(const struct abx_http_resp *r, const char *what,
                       struct abx_sandbox_info *out, struct abx_err *err)
{
    cJSON *o = abx_apix_json(r, what, err);
    int rc = -1;
    if (o == NULL)
        return -1;
    rc = abx_sandbox_info_parse(o, out, err);
    if (rc != 0) {
        char m[sizeof err->message];
        snprintf(m, sizeof m, "%s", err->message);
        abx_err_set(err, ABX_E_PROTOCOL, r->status, "", "%s: %s", what, m);
    }
    cJSON_Delete(o);
    return rc;
}

/* ---- calls ---- */

/* The common shape: request, then status -> result. ok1/ok2 are the
 * success statuses; *status gets the status when a reply came. */
static int simple(const struct abx_platform *p, const char *method,
                  const char *id, const char *tail, const cJSON *body,
                  int idempotent, const char *verb,
                  struct abx_http_resp *resp, struct abx_err *err)
{
    struct abx_buf path;
    char what[256];
    int rc;

    snprintf(what, sizeof what, "%s sandbox %.100s", verb, id ? id : "");
    abx_buf_init(&path, 4096);
    rc = abx_apix_sbx_path(&path, id, tail, err);
    if (rc == 0) {
        struct abx_apix_call c = {method, abx_buf_cstr(&path), body,
                                  idempotent, what};
        rc = abx_apix_do(p, &c, resp, err);
    } else {
        char m[sizeof err->message];
        snprintf(m, sizeof m, "%s", err->message);
        abx_err_set(err, ABX_E_INVALID, 0, "", "%s: %s", what, m);
    }
    abx_buf_free(&path);
    return rc;
}

static void api_error(const struct abx_http_resp *r, const char *verb,
                      const char *id, struct abx_err *err)
{
    char what[256];
    snprintf(what, sizeof what, "%s sandbox %.100s", verb, id);
    abx_err_from_api(err, what, r->status, r->body.data, r->body.len);
}

static cJSON *timeout_body(long t)
{
    cJSON *b = cJSON_CreateObject();
    if (b && cJSON_AddNumberToObject(b, "timeout", (double)t) == NULL) {
        cJSON_Delete(b);
        return NULL;
    }
    return b;
}

/* POST {id}/connect or {id}/resume with {"timeout": t}: a Sandbox. */
static int connect_like(const struct abx_platform *p, const char *id,
                        long timeout, const char *tail, const char *verb,
                        int idempotent, struct abx_sandbox_info *out,
                        struct abx_err *err)
{
    struct abx_http_resp r;
    cJSON *b = timeout_body(timeout);
    int rc = -1;

    memset(out, 0, sizeof *out);
    abx_http_resp_init(&r);
    if (b == NULL) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "%s sandbox: out of memory",
                    verb);
    } else if (simple(p, "POST", id, tail, b, idempotent, verb, &r, err) == 0) {
        if (r.status == 200 || r.status == 201) {
            char what[256];
            snprintf(what, sizeof what, "%s sandbox %.100s", verb, id);
            rc = abx_apix_parse_sandbox(&r, what, out, err);
        } else {
            api_error(&r, verb, id, err);
        }
    }
    cJSON_Delete(b);
    abx_http_resp_free(&r);
    return rc;
}

int abx_api_connect(const struct abx_platform *p, const char *id,
                    long timeout, struct abx_sandbox_info *out,
                    struct abx_err *err)
{
    /* Repeating a connect only extends the TTL again: idempotent. */
    return connect_like(p, id, timeout, "/connect", "connect", 1, out, err);
}

int abx_api_resume(const struct abx_platform *p, const char *id,
                   long timeout, struct abx_sandbox_info *out,
                   struct abx_err *err)
{
    return connect_like(p, id, timeout, "/resume", "resume", 0, out, err);
}

int abx_api_get(const struct abx_platform *p, const char *id,
                struct abx_sandbox_info *out, struct abx_err *err)
{
    struct abx_http_resp r;
    int rc = -1;

    memset(out, 0, sizeof *out);
    abx_http_resp_init(&r);
    if (simple(p, "GET", id, "", NULL, 1, "get", &r, err) == 0) {
        if (r.status == 200) {
            char what[256];
            snprintf(what, sizeof what, "get sandbox %.100s", id);
            rc = abx_apix_parse_sandbox(&r, what, out, err);
        } else {
            api_error(&r, "get", id, err);
        }
    }
    abx_http_resp_free(&r);
    return rc;
}

/* method on /sandboxes/<id><tail>: 1 on 2xx, 0 on the status `noop`
 * (already gone, already paused), else -1 with the API error. */
static int status_call(const struct abx_platform *p, const char *method,
                       const char *id, const char *tail, const cJSON *body,
                       int idempotent, const char *verb, long noop,
                       struct abx_err *err)
{
    struct abx_http_resp r;
    int rc = -1;

    abx_http_resp_init(&r);
    if (simple(p, method, id, tail, body, idempotent, verb, &r, err) == 0) {
        if (r.status >= 200 && r.status < 300)
            rc = 1;
        else if (noop && r.status == noop)
            rc = 0;
        else
            api_error(&r, verb, id, err);
    }
    abx_http_resp_free(&r);
    return rc;
}

int abx_api_kill(const struct abx_platform *p, const char *id,
                 struct abx_err *err)
{
    return status_call(p, "DELETE", id, "", NULL, 1, "kill", 404, err);
}

int abx_api_set_timeout(const struct abx_platform *p, const char *id,
                        long seconds, struct abx_err *err)
{
    cJSON *b = timeout_body(seconds < 0 ? 0 : seconds);
    int rc = -1;

    if (b == NULL)
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "set timeout: out of memory");
    else
        rc = status_call(p, "POST", id, "/timeout", b, 1, "set timeout of", 0,
                         err) < 0 ? -1 : 0;
    cJSON_Delete(b);
    return rc;
}

int abx_api_pause(const struct abx_platform *p, const char *id,
                  int keep_memory, struct abx_err *err)
{
    cJSON *b = cJSON_CreateObject();
    int rc = -1;

    /* The SDK always sends it: memory = keepMemory ?? true. */
    if (b == NULL ||
        cJSON_AddBoolToObject(b, "memory", keep_memory != 0) == NULL)
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "pause: out of memory");
    else
        rc = status_call(p, "POST", id, "/pause", b, 0, "pause", 409, err);
    cJSON_Delete(b);
    return rc;
}

int abx_api_metrics(const struct abx_platform *p, const char *id,
                    long start, long end, cJSON **out, struct abx_err *err)
{
    struct abx_http_resp r;
    char tail[96];
    int rc = -1;

    *out = NULL;
    if (start > 0 && end > 0)
        snprintf(tail, sizeof tail, "/metrics?start=%ld&end=%ld", start, end);
    else if (start > 0)
        snprintf(tail, sizeof tail, "/metrics?start=%ld", start);
    else if (end > 0)
        snprintf(tail, sizeof tail, "/metrics?end=%ld", end);
    else
        snprintf(tail, sizeof tail, "/metrics");
    abx_http_resp_init(&r);
    if (simple(p, "GET", id, tail, NULL, 1, "get metrics of", &r, err) == 0) {
        if (r.status == 200) {
            cJSON *a = abx_apix_json(&r, "get metrics", err);
            if (cJSON_IsArray(a)) {
                *out = a;
                rc = 0;
            } else if (a) {
                cJSON_Delete(a);
                abx_err_set(err, ABX_E_PROTOCOL, 200, "",
                            "get metrics of sandbox %.100s: reply is not a "
                            "JSON array", id);
            }
        } else {
            api_error(&r, "get metrics of", id, err);
        }
    }
    abx_http_resp_free(&r);
    return rc;
}
