/* envd client core: the data-plane address of a sandbox port, request
 * headers, GET /health and unary Connect JSON calls (docs/protocol.md
 * "Data plane", "Health", "Unary calls"). Streams are in envd_stream.c,
 * files in envd_files.c. */
#include "envd.h"

#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "b64.h"
#include "envd_internal.h"
#include "escape.h"
#include "jsonutil.h"
#include "http.h"

/* Host part of "host[:port]" / "[v6]:port" is localhost or an IP
 * literal: abx-local serves plain http there. */
static int domain_is_local(const char *domain)
{
    char host[256];
    const char *end;
    size_t n;
    unsigned char addr[16];

    if (domain[0] == '[') {
        end = strchr(domain, ']');
        if (!end)
            return 0;
        domain++;
    } else {
        end = strchr(domain, ':');
        if (!end)
            end = domain + strlen(domain);
    }
    n = (size_t)(end - domain);
    if (n == 0 || n >= sizeof host)
        return 0;
    memcpy(host, domain, n);
    host[n] = '\0';
    if (strcasecmp(host, "localhost") == 0)
        return 1;
    if (n > 10 && strcasecmp(host + n - 10, ".localhost") == 0)
        return 1;
    return inet_pton(AF_INET, host, addr) == 1 ||
           inet_pton(AF_INET6, host, addr) == 1;
}

/* Sandbox ids go into host names and headers: letters, digits, '-', '_'. */
static int id_ok(const char *id)
{
    size_t i;

    if (!id[0])
        return 0;
    for (i = 0; id[i]; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '-' || c == '_'))
            return 0;
    }
    return 1;
}

static const char *domain_of(const struct abx_platform *p,
                             const struct abx_sandbox_info *info)
{
    return info->domain[0] ? info->domain : p->domain;
}

int abx_endpoint_host(const struct abx_platform *p,
                      const struct abx_sandbox_info *info, int port,
                      char *out, size_t outlen)
{
    int n;

    if (!outlen)
        return -1;
    out[0] = '\0';
    if (port < 1 || port > 65535 || !id_ok(info->sandbox_id))
        return -1;
    n = snprintf(out, outlen, "%d-%s.%s", port, info->sandbox_id,
                 domain_of(p, info));
    if (n < 0 || (size_t)n >= outlen) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

int abx_endpoint_init(struct abx_endpoint *ep, const struct abx_platform *p,
                      const struct abx_sandbox_info *info, int port,
                      struct abx_err *err)
{
    const char *domain = domain_of(p, info);
    size_t n;
    int w;

    memset(ep, 0, sizeof *ep);
    if (!id_ok(info->sandbox_id)) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "invalid sandbox id '%.128s' (letters, digits, '-')",
                    info->sandbox_id);
        return -1;
    }
    if (port < 1 || port > 65535) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "invalid port %d", port);
        return -1;
    }
    /* The host-name form works without routing headers: signed URLs are
     * handed to clients that send none, so they always use it. */
    if (domain[0]) {
        w = snprintf(ep->direct_url, sizeof ep->direct_url, "%s://%d-%s.%s",
                     domain_is_local(domain) ? "http" : "https", port,
                     info->sandbox_id, domain);
        if (w < 0 || (size_t)w >= sizeof ep->direct_url)
            goto toolong;
    }
    if (p->sandbox_url[0]) {
        n = strlen(p->sandbox_url);
        while (n > 0 && p->sandbox_url[n - 1] == '/')
            n--;
        if (n >= sizeof ep->base_url)
            goto toolong;
        memcpy(ep->base_url, p->sandbox_url, n);
        ep->base_url[n] = '\0';
    } else if (domain[0]) {
        memcpy(ep->base_url, ep->direct_url, strlen(ep->direct_url) + 1);
    } else {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "no data-plane domain configured");
        return -1;
    }
    memcpy(ep->sandbox_id, info->sandbox_id, strlen(info->sandbox_id) + 1);
    ep->port = port;
    ep->header_routing = 1;
    ep->request_timeout = p->request_timeout;
    (void)abx_envd_version_parse(info->envd_version, &ep->ver);
    if ((info->envd_access_token && info->envd_access_token[0] &&
         !(ep->access_token = strdup(info->envd_access_token))) ||
        (info->traffic_access_token && info->traffic_access_token[0] &&
         !(ep->traffic_token = strdup(info->traffic_access_token)))) {
        abx_endpoint_free(ep);
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "out of memory");
        return -1;
    }
    return 0;
toolong:
    ep->base_url[0] = '\0';
    ep->direct_url[0] = '\0';
    abx_err_set(err, ABX_E_INVALID, 0, "", "data-plane URL too long");
    return -1;
}

static void free_secret(char **s)
{
    if (*s) {
        OPENSSL_cleanse(*s, strlen(*s));
        free(*s);
        *s = NULL;
    }
}

void abx_endpoint_free(struct abx_endpoint *ep)
{
    free_secret(&ep->access_token);
    free_secret(&ep->traffic_token);
}

/* ---- headers ---------------------------------------------------------- */

static int add_line(struct abx_headers *hb, const char *name, const char *a)
{
    struct abx_buf b;
    size_t i;

    /* lines[] stays NULL-terminated. */
    if (hb->n + 1 >= sizeof hb->lines / sizeof hb->lines[0])
        return -1;
    abx_buf_init(&b, 16384);
    if (abx_buf_appends(&b, name) || abx_buf_appends(&b, a)) {
        abx_buf_free(&b);
        return -1;
    }
    /* A CR or LF would start another header (injection). */
    for (i = 0; i < b.len; i++) {
        if (b.data[i] == '\r' || b.data[i] == '\n' || b.data[i] == '\0') {
            OPENSSL_cleanse(b.data, b.len);
            abx_buf_free(&b);
            return -1;
        }
    }
    hb->lines[hb->n++] = abx_buf_steal(&b, NULL);
    hb->lines[hb->n] = NULL;
    return 0;
}

/* Not empty, no ':' (it ends the name), no control bytes. */
static int user_ok(const char *user)
{
    const unsigned char *u = (const unsigned char *)user;

    if (!*u)
        return 0;
    for (; *u; u++)
        if (*u < 0x20 || *u == 0x7f || *u == ':')
            return 0;
    return 1;
}

int abx_headers_build(struct abx_headers *hb, const struct abx_endpoint *ep,
                      const char *user, const char *const *extra)
{
    char port[16];
    struct abx_buf cred, enc;
    int rc = -1;

    memset(hb, 0, sizeof *hb);
    abx_buf_init(&cred, 4096);
    abx_buf_init(&enc, 8192);
    snprintf(port, sizeof port, "%d", ep->port);
    if (ep->header_routing &&
        (add_line(hb, "E2b-Sandbox-Id: ", ep->sandbox_id) ||
         add_line(hb, "E2b-Sandbox-Port: ", port)))
        goto out;
    if (ep->access_token &&
        add_line(hb, "X-Access-Token: ", ep->access_token))
        goto out;
    if (ep->traffic_token &&
        add_line(hb, "E2B-Traffic-Access-Token: ", ep->traffic_token))
        goto out;
    if (user) {
        /* Basic auth with an empty password selects the user
         * (docs/protocol.md "Request headers"). */
        if (!user_ok(user) ||
            abx_buf_appendf(&cred, "%s:", user) ||
            abx_b64_encode(cred.data, cred.len, 0, &enc) ||
            add_line(hb, "Authorization: Basic ", abx_buf_cstr(&enc)))
            goto out;
    }
    for (; extra && *extra; extra++)
        if (add_line(hb, "", *extra))
            goto out;
    rc = 0;
out:
    abx_buf_free(&cred);
    abx_buf_free(&enc);
    if (rc)
        abx_headers_free(hb);
    return rc;
}

void abx_headers_free(struct abx_headers *hb)
{
    size_t i;

    /* Lines may hold the access token. */
    for (i = 0; i < hb->n; i++) {
        if (hb->lines[i]) {
            OPENSSL_cleanse(hb->lines[i], strlen(hb->lines[i]));
            free(hb->lines[i]);
        }
        hb->lines[i] = NULL;
    }
    hb->n = 0;
}

int abx_envd_headers(struct abx_headers *hb, const struct abx_endpoint *ep,
                     const char *user, const char *const *extra,
                     struct abx_err *err)
{
    if (abx_headers_build(hb, ep, user, extra) == 0)
        return 0;
    if (user && !user_ok(user))
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "invalid user name (empty, or contains ':' or a "
                    "control character)");
    else
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "invalid request header (a value contains CR, LF or "
                    "is too long)");
    return -1;
}

void abx_envd_timeout_header(char *out, size_t outlen, double s)
{
    double ms = s * 1000.0;

    /* At most 10 digits on the wire (Connect rule). */
    if (ms > 9999999999.0)
        ms = 9999999999.0;
    if (ms < 1)
        ms = 1;
    snprintf(out, outlen, "Connect-Timeout-Ms: %.0f", ms);
}

/* ---- URLs --------------------------------------------------------------- */

int abx_envd_url(struct abx_buf *out, const struct abx_endpoint *ep,
                 const char *path)
{
    abx_buf_reset(out);
    return abx_buf_appendf(out, "%s%s", ep->base_url, path);
}

int abx_envd_query(struct abx_buf *out, const char *const *pairs)
{
    int first = 1;

    for (; pairs[0]; pairs += 2) {
        if (!pairs[1])
            continue;
        if (abx_buf_appendf(out, "%c%s=", first ? '?' : '&', pairs[0]) ||
            abx_esc_pct(out, pairs[1], strlen(pairs[1]), 0))
            return -1;
        first = 0;
    }
    return 0;
}

/* ---- one request ------------------------------------------------------- */

void abx_envd_call_init(struct abx_envd_call *c)
{
    memset(c, 0, sizeof *c);
    abx_buf_init(&c->url, 16384);
}

int abx_envd_call_prepare(struct abx_envd_call *c,
                          const struct abx_endpoint *ep, const char *method,
                          const char *path, const char *const *query,
                          const char *user, const char *const *extra,
                          const char *what, struct abx_err *err)
{
    /* A Connect method ("service/Method") goes after the base URL's '/'. */
    if (abx_envd_url(&c->url, ep, path[0] == '/' ? path : "/") ||
        (path[0] != '/' && abx_buf_appends(&c->url, path)) ||
        (query && abx_envd_query(&c->url, query))) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "%s: URL too long", what);
        return -1;
    }
    if (abx_envd_headers(&c->hb, ep, user, extra, err))
        return -1;
    memset(&c->req, 0, sizeof c->req);
    c->req.method = method;
    c->req.url = c->url.data;
    c->req.headers = (const char *const *)c->hb.lines;
    c->req.timeout = ep->request_timeout;
    c->req.what = what;
    return 0;
}

void abx_envd_call_free(struct abx_envd_call *c)
{
    abx_headers_free(&c->hb);
    abx_buf_free(&c->url);
}

void abx_envd_connect_error(struct abx_err *err, const char *what,
                            long status, const char *body, size_t len)
{
    enum abx_connect_code code;
    char msg[768];

    abx_connect_parse_error(body, len, (int)status, &code, msg, sizeof msg);
    abx_err_from_connect(err, what, code, msg, status);
}

int abx_envd_parse_object(const struct abx_http_resp *resp, const char *what,
                          cJSON **out, struct abx_err *err)
{
    *out = abx_json_parse(resp->body.data ? resp->body.data : "",
                                 resp->body.len);
    if (cJSON_IsObject(*out))
        return 0;
    cJSON_Delete(*out);
    *out = NULL;
    abx_err_set(err, ABX_E_PROTOCOL, resp->status, "",
                "%s: the reply is not a JSON object", what);
    return -1;
}

int abx_envd_take_array(cJSON *resp, const char *key, const char *what,
                        cJSON **out, struct abx_err *err)
{
    cJSON *a = cJSON_DetachItemFromObjectCaseSensitive(resp, key);

    cJSON_Delete(resp);
    *out = NULL;
    if (!a)
        a = cJSON_CreateArray();    /* proto3 leaves empty lists out */
    if (!cJSON_IsArray(a)) {
        cJSON_Delete(a);
        abx_err_set(err, ABX_E_PROTOCOL, 200, "", "%s: '%s' is not an array",
                    what, key);
        return -1;
    }
    *out = a;
    return 0;
}

/* ---- /health ------------------------------------------------------------ */

int abx_envd_health(const struct abx_endpoint *ep, struct abx_err *err)
{
    struct abx_envd_call c;
    struct abx_http_resp resp;
    int rc = -1;

    abx_http_resp_init(&resp);
    abx_envd_call_init(&c);
    if (abx_envd_call_prepare(&c, ep, "GET", "/health", NULL, NULL, NULL,
                              "envd health", err))
        goto out;
    c.req.idempotent = 1;
    c.req.max_body = 65536;
    if (abx_http_do(&c.req, &resp, err))
        goto out;
    if (resp.status >= 200 && resp.status < 300)
        rc = 1;
    else if (resp.status == 502)
        rc = 0;
    else
        abx_err_from_envd_http(err, "envd health", resp.status,
                               resp.body.data, resp.body.len);
out:
    abx_envd_call_free(&c);
    abx_http_resp_free(&resp);
    return rc;
}

/* ---- unary Connect calls -------------------------------------------------- */

size_t abx_envd_connect_headers(const char **extra, const char *ctype,
                                double timeout, char *tmo, size_t tmolen)
{
    size_t ne = 0;

    extra[ne++] = ctype;
    extra[ne++] = "Connect-Protocol-Version: 1";
    if (timeout > 0) {
        abx_envd_timeout_header(tmo, tmolen, timeout);
        extra[ne++] = tmo;
    }
    extra[ne] = NULL;
    return ne;
}

int abx_envd_rpc_ex(const struct abx_endpoint *ep, const char *method,
                    const cJSON *req_json, const char *user, double timeout,
                    int idempotent, cJSON **resp_json, struct abx_err *err)
{
    struct abx_envd_call c;
    struct abx_http_resp resp;
    struct abx_buf body;
    char tmo[64], what[128];
    const char *extra[4];
    int rc = -1;

    *resp_json = NULL;
    abx_http_resp_init(&resp);
    abx_envd_call_init(&c);
    abx_buf_init(&body, 0);
    snprintf(what, sizeof what, "envd %s", method);
    if (timeout <= 0)
        timeout = ep->request_timeout;
    if (req_json ? abx_json_append(&body, req_json)
                 : abx_buf_appends(&body, "{}")) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "%s: cannot encode the request", what);
        goto out;
    }
    abx_envd_connect_headers(extra, "Content-Type: application/json",
                             timeout, tmo, sizeof tmo);
    if (abx_envd_call_prepare(&c, ep, "POST", method, NULL, user, extra, what,
                              err))
        goto out;
    c.req.body = body.data;
    c.req.body_len = body.len;
    c.req.timeout = timeout > 0 ? timeout : 0;
    c.req.idempotent = idempotent;
    if (abx_http_do(&c.req, &resp, err))
        goto out;
    if (resp.status != 200) {
        abx_envd_connect_error(err, what, resp.status, resp.body.data,
                               resp.body.len);
        goto out;
    }
    rc = abx_envd_parse_object(&resp, what, resp_json, err);
out:
    abx_envd_call_free(&c);
    abx_buf_free(&body);
    abx_http_resp_free(&resp);
    return rc;
}

int abx_envd_rpc(const struct abx_endpoint *ep, const char *method,
                 const cJSON *req, const char *user, double timeout,
                 cJSON **resp, struct abx_err *err)
{
    return abx_envd_rpc_ex(ep, method, req, user, timeout, 0, resp, err);
}

int abx_envd_call_json(const struct abx_endpoint *ep, const char *method,
                       cJSON *req, const char *user, int idempotent,
                       cJSON **resp, struct abx_err *err)
{
    cJSON *r = NULL;
    int rc;

    if (resp)
        *resp = NULL;
    if (!req) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "envd %s: out of memory",
                    method);
        return -1;
    }
    rc = abx_envd_rpc_ex(ep, method, req, user, 0, idempotent, &r, err);
    cJSON_Delete(req);
    if (resp)
        *resp = r;
    else
        cJSON_Delete(r);
    return rc;
}
