/* The listeners: libmicrohttpd daemons shared by the control and data
 * planes, each request handed to its plane's callbacks (abxl_plane). */
#include <arpa/inet.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server.h"

/* Called by MHD with the raw request target before any parsing; what we
 * return becomes *con_cls, so every request carries its raw URI. */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)c;
    struct abxl_req *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->uri = strdup(uri ? uri : "");
    abx_buf_init(&r->body, ABXL_BODY_CAP);
    return r;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)c;
    (void)toe;
    const struct abxl_plane *plane = cls;
    struct abxl_req *r = *con_cls;
    if (r == NULL)
        return;
    if (plane->release)
        plane->release(r);
    free(r->uri);
    abx_buf_free(&r->body);
    free(r);
    *con_cls = NULL;
}

/* Request framing that two HTTP parsers could read two ways (RFC 9112
 * 6.1, 6.3): both Content-Length and Transfer-Encoding, or a transfer
 * coding other than chunked. Such a request is answered 400 and its
 * connection closed, so no second request can hide in its body. NULL
 * when the framing is sound. */
static const char *framing_problem(struct MHD_Connection *c)
{
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    if (te == NULL)
        return NULL;
    if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length") != NULL)
        return "both Content-Length and Transfer-Encoding: ambiguous request framing";
    size_t lead = strspn(te, " \t"), n = strlen(te + lead);
    while (n > 0 && (te[lead + n - 1] == ' ' || te[lead + n - 1] == '\t'))
        n--;
    if (n != 7 || strncasecmp(te + lead, "chunked", 7) != 0)
        return "unsupported Transfer-Encoding: only chunked is accepted";
    return NULL;
}

static enum MHD_Result refuse_and_close(struct MHD_Connection *c, const char *why)
{
    char body[256];
    int n = snprintf(body, sizeof body, "{\"code\":400,\"message\":\"%s\"}", why);
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        n > 0 && (size_t)n < sizeof body ? (size_t)n : 0, body, MHD_RESPMEM_MUST_COPY);
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(c, 400, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* The access handler; cls is the listener's plane. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)url;   /* r->uri is the raw target, query string included */
    (void)version;
    const struct abxl_plane *plane = cls;
    struct abxl_req *r = *con_cls;
    if (r == NULL || r->uri == NULL)
        return MHD_NO;   /* uri_log ran out of memory */
    if (!r->started) {
        r->started = true;
        const char *bad = framing_problem(c);
        if (bad != NULL) {
            r->refused = true;
            return refuse_and_close(c, bad);
        }
        return plane->begin(c, r, method);
    }
    if (r->refused) {   /* answered: the body is dropped unread */
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        enum MHD_Result ret = plane->upload(r, upload, *upload_size);
        *upload_size = 0;
        return ret;
    }
    return plane->end(c, r, method);
}

struct MHD_Daemon *abxl_http_start(struct sockaddr_in *sa, const struct abxl_plane *plane,
                                   unsigned timeout_s)
{
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
            MHD_USE_ERROR_LOG,
        ntohs(sa->sin_port), NULL, NULL, handle, (void *)plane, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)sa, MHD_OPTION_URI_LOG_CALLBACK, uri_log, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, completed, (void *)plane,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(256 * 1024),
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_s, MHD_OPTION_END);
    if (d != NULL && sa->sin_port == 0) {
        const union MHD_DaemonInfo *i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        sa->sin_port = htons(i ? i->port : 0);
    }
    return d;
}
