/* Control plane front: body framing (capped), auth, top-level routes,
 * /health, /admin/faults and /admin/profile. Sandbox routes live in ctl_sbx.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "base.h"
#include "filesig.h"
#include "http.h"
#include "jsonstrict.h"
#include "log.h"

/* --vary key-check=strict: a key no platform issues, refused as a bad
 * request before it is compared. */
static bool key_malformed(const char *k)
{
    if (!abxl_vary(ABXL_V_KEY_CHECK) || k == NULL)
        return false;
    for (const unsigned char *p = (const unsigned char *)k; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f)
            return true;
    return false;
}

static bool key_ok(struct MHD_Connection *c)
{
    const char *k = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-KEY");
    return k != NULL && abx_filesig_equal(k, abxl_cfg.api_key);   /* constant time */
}

static enum MHD_Result admin(struct MHD_Connection *c, const char *method,
                             const struct abx_buf *body)
{
    if (strcmp(method, "GET") == 0)
        return abxl_http_json(c, 200, abxl_faults_json());
    if (strcmp(method, "POST") != 0)
        return abxl_http_405(c, "GET, POST", method, "/admin/faults");
    char err[256];
    cJSON *o = abx_json_parse_strict(body->data ? body->data : "", body->len, err, sizeof err);
    if (o == NULL)
        return abxl_http_error(c, 400, "%s", err);
    int rc = abxl_faults_update(o, err, sizeof err);
    cJSON_Delete(o);
    if (rc != 0)
        return abxl_http_error(c, 400, "%s", err);
    abxl_log(ABXL_LOG_INFO, "fault injection updated");
    return abxl_http_json(c, 200, abxl_faults_json());
}

/* GET /admin/profile: the switches (profile.c) and the varied details (vary.c). */
static cJSON *profile_reply(void)
{
    cJSON *o = abxl_profile_json();
    if (o != NULL)
        cJSON_AddItemToObject(o, "vary", abxl_vary_json());
    return o;
}

static enum MHD_Result dispatch(struct MHD_Connection *c, const char *method, const char *uri,
                                const struct abx_buf *body)
{
    char path[2048];
    size_t plen = strcspn(uri, "?");
    if (plen >= sizeof path)
        return abxl_http_error(c, 414, "request path too long");
    memcpy(path, uri, plen);
    path[plen] = '\0';
    if (path[0] != '/')
        return abxl_http_error(c, 400, "request target must be an absolute path");
    if (strcmp(path, "/health") == 0) {
        if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
            return abxl_http_405(c, "GET, HEAD", method, path);
        return abxl_http_send(c, 200, "text/plain", "Health check successful", 23);
    }
    bool is_admin = strcmp(path, "/admin/faults") == 0;
    bool is_profile = strcmp(path, "/admin/profile") == 0;
    bool is_sbx = strncmp(path, "/sandboxes", 10) == 0 && (path[10] == '\0' || path[10] == '/');
    bool is_v2 = strncmp(path, "/v2/sandboxes", 13) == 0 && (path[13] == '\0' || path[13] == '/');
    bool is_tmpl = strncmp(path, "/templates", 10) == 0 && (path[10] == '\0' || path[10] == '/');
    if (!is_admin && !is_profile && !is_sbx && !is_v2 && !is_tmpl)
        return abxl_http_error(c, 404, "route %.16s %.200s not found", method, path);
    if (key_malformed(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-KEY")))
        return abxl_http_error(c, 400, "malformed X-API-KEY header");
    if (!key_ok(c))
        return abxl_http_error(c, 401,
                              MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-KEY")
                                  ? "invalid API key"
                                  : "missing API key: send it in the X-API-KEY header");
    if (is_admin)
        return admin(c, method, body);
    if (is_profile)   /* what this run imitates (docs/profiles.md) */
        return strcmp(method, "GET") == 0 ? abxl_http_json(c, 200, profile_reply())
                                          : abxl_http_405(c, "GET", method, path);
    if (is_tmpl)   /* ctl_templates.c: the error rate covers /sandboxes* only */
        return abxl_ctl_templates(c, method, path);
    int fault = abxl_faults_roll(false);
    if (fault)
        return abxl_http_error(c, (unsigned)fault, "injected fault (status %d)", fault);
    return abxl_ctl_sandboxes(c, method, path, uri, body);
}

static enum MHD_Result api_begin(struct MHD_Connection *c, struct abxl_req *r,
                                 const char *method)
{
    (void)r;
    (void)method;
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl != NULL) {
        char *end;
        unsigned long long n = strtoull(cl, &end, 10);
        /* A moderately big body is read and dropped so that clients which
         * send it all before reading see the 413; a huge one is refused
         * at once (the connection closes). */
        if (*end == '\0' && n > 64ULL * ABXL_BODY_CAP)
            return abxl_http_error(c, 413, "request body over %zu bytes", ABXL_BODY_CAP);
    }
    return MHD_YES;
}

static enum MHD_Result api_upload(struct abxl_req *r, const char *data, size_t n)
{
    if (!r->too_big && abx_buf_append(&r->body, data, n) != 0)
        r->too_big = true;
    return MHD_YES;
}

static enum MHD_Result api_end(struct MHD_Connection *c, struct abxl_req *r, const char *method)
{
    if (r->too_big)
        return abxl_http_error(c, 413, "request body over %zu bytes", ABXL_BODY_CAP);
    return dispatch(c, method, r->uri, &r->body);
}

const struct abxl_plane abxl_ctl_plane = {api_begin, api_upload, api_end, NULL};
