/* The router: libmicrohttpd with one thread per connection (streams block
 * in their content reader), which handler a request goes to (the Connect
 * services' method tables included), the access-token middleware and the
 * small REST endpoints (/health, /envs, /init). Handlers answer through
 * reply.c and never call back here. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "filesig.h"
#include "framing.h"
#include "jsonstrict.h"
#include "jsonutil.h"

#define RPC_BODY_MAX ((size_t)16 * 1024 * 1024)
#define UNAUTHORIZED "unauthorized access, please provide a valid access " \
                     "token or method signing if supported"

enum route { R_NOTFOUND, R_HEALTH, R_ENVS, R_INIT, R_FILES_GET, R_FILES_POST,
             R_RPC, R_BADMETHOD };

struct req {
    enum route route;
    int unauthorized;
    struct abx_buf body;
    int overflow;
    int badargs;  /* a query argument with NUL or bad UTF-8: 400 */
    const char *framing;  /* why its framing is refused (framing.h), or NULL */
    struct abxl_envd_upload *up;
};

static enum MHD_Result reply_empty(struct MHD_Connection *c, unsigned status)
{
    return abxl_envd_reply_json(c, status, NULL, "", 0);
}

/* /init: nothing to initialise here (abx-local writes config.json), but
 * later envds name their version on it, and abx-envd the one it imitates. */
static enum MHD_Result reply_init(struct MHD_Connection *c)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    enum MHD_Result rc;

    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "X-Envd-Version", abxl_envd_compat.version);
    rc = MHD_queue_response(c, MHD_HTTP_NO_CONTENT, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result reply_envs(struct MHD_Connection *c)
{
    struct abx_buf b;
    enum MHD_Result rc = MHD_NO;
    struct MHD_Response *r;

    abx_buf_init(&b, 0);
    if (abx_json_append(&b, abxl_envd_cfg.env_vars) == 0 &&
        (r = MHD_create_response_from_buffer(b.len, b.data,
                                             MHD_RESPMEM_MUST_COPY))) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                "application/json");
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        rc = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
    }
    abx_buf_free(&b);
    return rc;
}

/* The method a /pkg.Service/Method path names, or NULL. */
static const struct abxl_envd_method *find_method(const char *url)
{
    static const struct {
        const char *prefix;
        const struct abxl_envd_method *methods;
    } services[] = {
        {"/process.Process/", abxl_envd_process_methods},
        {"/filesystem.Filesystem/", abxl_envd_filesystem_methods},
    };

    for (size_t i = 0; i < sizeof services / sizeof services[0]; i++) {
        size_t n = strlen(services[i].prefix);

        if (strncmp(url, services[i].prefix, n) != 0)
            continue;
        for (const struct abxl_envd_method *m = services[i].methods; m->name; m++)
            if (strcmp(m->name, url + n) == 0)
                return m;
    }
    return NULL;
}

static enum route classify(const char *url, const char *method)
{
    int get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;

    if (strcmp(url, "/health") == 0)
        return get ? R_HEALTH : R_BADMETHOD;
    if (strcmp(url, "/envs") == 0)
        return get ? R_ENVS : R_BADMETHOD;
    if (strcmp(url, "/init") == 0)
        return post ? R_INIT : R_BADMETHOD;
    if (strcmp(url, "/files") == 0)
        return get ? R_FILES_GET : post ? R_FILES_POST : R_BADMETHOD;
    if (strncmp(url, "/process.Process/", 17) == 0 ||
        strncmp(url, "/filesystem.Filesystem/", 23) == 0)
        return R_RPC; /* rpc.c answers 404/405/415 itself */
    return R_NOTFOUND;
}

/* The access-token middleware: everything but /health, /files and /init
 * needs X-Access-Token when the sandbox has a token. /files checks it (or
 * a signature) itself, unless signatures are off: then the middleware. */
static int token_ok(struct MHD_Connection *c, enum route r)
{
    int files = r == R_FILES_GET || r == R_FILES_POST;
    const char *t;

    if (!abxl_envd_cfg.access_token || r == R_HEALTH || r == R_INIT ||
        (files && abxl_envd_compat.signed_urls))
        return 1;
    t = abxl_envd_header(c, "X-Access-Token");
    return t && abx_filesig_equal(t, abxl_envd_cfg.access_token);
}

/* Query arguments as envd reads them: C strings, so a NUL (%00) would
 * cut "/etc/passwd%00.txt" to /etc/passwd; refused, as is invalid UTF-8. */
static enum MHD_Result arg_check(void *cls, enum MHD_ValueKind kind, const char *key,
                                 size_t key_size, const char *value, size_t value_size)
{
    int *bad = cls;

    (void)kind;
    if (!abx_text_ok(key, key_size) || (value && !abx_text_ok(value, value_size))) {
        *bad = 1;
        return MHD_NO;
    }
    return MHD_YES;
}

static int args_bad(struct MHD_Connection *c)
{
    int bad = 0;

    MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, arg_check, &bad);
    return bad;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct req *q = *con_cls;

    (void)cls;
    (void)version;
    if (!q) {
        if (!(q = calloc(1, sizeof *q)))
            return MHD_NO;
        q->route = classify(url, method);
        q->badargs = args_bad(c);
        abx_buf_init(&q->body, RPC_BODY_MAX);
        q->framing = abxl_framing_problem(c);
        q->unauthorized = !q->framing && !token_ok(c, q->route);
        if (q->route == R_FILES_POST && !q->framing && !q->unauthorized && !q->badargs &&
            !(q->up = abxl_envd_upload_begin(c))) {
            free(q);
            return MHD_NO;
        }
        *con_cls = q;
        /* Refused before the body: answer now, MHD skips the upload (and
         * closes the connection) instead of reading it all. */
        if (q->framing)   /* as the control plane does (framing.h) */
            return abxl_framing_refuse(c, q->framing);
        if (q->unauthorized)
            return abxl_envd_reply_error(c, (unsigned)abxl_envd_compat.denied_status,
                                         UNAUTHORIZED);
        if (q->badargs)
            return abxl_envd_reply_error(c, 400, "invalid query: a parameter holds a NUL "
                                         "byte or is not valid UTF-8");
        if (q->up && abxl_envd_upload_failed(q->up))
            return abxl_envd_upload_finish(q->up, c);
        return MHD_YES;
    }
    if (q->framing) {   /* answered; nothing of the body is taken */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size) {
        /* Bodies we do not use (or refuse) are read and dropped. */
        if (q->up && !q->unauthorized) {
            abxl_envd_upload_data(q->up, upload_data, *upload_data_size);
        } else if (q->route == R_RPC && !q->unauthorized && !q->overflow &&
                   abx_buf_append(&q->body, upload_data, *upload_data_size)) {
            q->overflow = 1; /* answered resource_exhausted at the end */
            abx_buf_free(&q->body);
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    switch (q->route) {
    case R_HEALTH:
        return reply_empty(c, MHD_HTTP_NO_CONTENT);
    case R_ENVS:
        return reply_envs(c);
    case R_INIT:
        return reply_init(c);
    case R_FILES_GET:
        return abxl_envd_files_get(c);
    case R_FILES_POST:
        return abxl_envd_upload_finish(q->up, c);
    case R_RPC:
        return abxl_envd_rpc_handle(c, find_method(url), url, method, &q->body,
                                    q->overflow);
    case R_BADMETHOD:
        return abxl_envd_reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED,
                                "method not allowed");
    case R_NOTFOUND:
    default:
        return abxl_envd_reply_error(c, MHD_HTTP_NOT_FOUND, "404 page not found");
    }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct req *q = *con_cls;

    (void)cls;
    (void)c;
    (void)toe;
    if (!q)
        return;
    abxl_envd_upload_free(q->up);
    abx_buf_free(&q->body);
    free(q);
    *con_cls = NULL;
}

static struct MHD_Daemon *daemon_;

void abxl_envd_http_stop(void)
{
    if (daemon_)
        MHD_stop_daemon(daemon_);
    daemon_ = NULL;
}

int abxl_envd_http_start(const char *addr, unsigned port, char *err,
                    size_t errlen)
{
    struct sockaddr_in sa;
    struct MHD_Daemon *d;

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
        snprintf(err, errlen, "invalid listen address '%s' (IPv4 expected)",
                 addr);
        return -1;
    }
    d = MHD_start_daemon(
        /* poll(), not select(): envd legitimately holds more than
         * FD_SETSIZE fds (pipes of many processes), and with select() MHD
         * drops every connection whose fd is >= 1024. */
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
            MHD_USE_POLL | MHD_USE_ERROR_LOG,
        (uint16_t)port, NULL, NULL, on_request, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)512,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)0,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
        MHD_OPTION_END);
    if (!d) {
        snprintf(err, errlen, "cannot listen on %s:%u", addr, port);
        return -1;
    }
    daemon_ = d;
    return 0;
}
