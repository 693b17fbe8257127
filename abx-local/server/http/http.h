/* The HTTP listeners (libmicrohttpd) and the replies both planes send. */
#ifndef ABXL_HTTP_H
#define ABXL_HTTP_H

#include <microhttpd.h>

#include "base.h"

struct abxl_req {
    char *uri;                 /* raw request target, owned */
    struct abx_buf body;
    bool too_big, started, refused;
    void *proxy;               /* data plane state */
};
/* Replies (reply.c); errors are {"code":N,"message":...}, worded per profile. */
enum MHD_Result abxl_http_send(struct MHD_Connection *c, unsigned status,
                              const char *ctype, const char *body, size_t len);
enum MHD_Result abxl_http_json(struct MHD_Connection *c, unsigned status, cJSON *v);
enum MHD_Result abxl_http_json_hdr(struct MHD_Connection *c, unsigned status, cJSON *v,
                                  const char *hname, const char *hval);
enum MHD_Result abxl_http_405(struct MHD_Connection *c, const char *allow, const char *method,
                             const char *path);
enum MHD_Result abxl_http_error(struct MHD_Connection *c, unsigned status,
                               const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* What a listener does with a request, called in MHD's order: begin once
 * the headers are in, upload for each body chunk (all of it is consumed),
 * end once the body is complete; release (may be NULL) when the request
 * is over, answered or not. The planes sit above httpd.c, which only
 * calls them through this table. */
struct abxl_plane {
    enum MHD_Result (*begin)(struct MHD_Connection *c, struct abxl_req *r, const char *method);
    enum MHD_Result (*upload)(struct abxl_req *r, const char *data, size_t n);
    enum MHD_Result (*end)(struct MHD_Connection *c, struct abxl_req *r, const char *method);
    void (*release)(struct abxl_req *r);
};
struct sockaddr_in;
/* A listener on sa serving plane (timeout_s: idle connections); port 0
 * picks one and writes it back to sa. NULL if it cannot listen. */
struct MHD_Daemon *abxl_http_start(struct sockaddr_in *sa, const struct abxl_plane *plane,
                                   unsigned timeout_s);

#endif
