/* The listeners: libmicrohttpd daemons shared by the control and data
 * planes, each request handed to its plane's callbacks (abxl_plane). */
#include <arpa/inet.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "framing.h"
#include "http.h"

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
        const char *bad = abxl_framing_problem(c);
        if (bad != NULL) {
            r->refused = true;
            return abxl_framing_refuse(c, bad);   /* and closes */
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
