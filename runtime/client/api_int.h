/* Internals shared by api.c, api_create.c, api_list.c and
 * api_templates.c: building and sending one control-plane request. Not
 * part of the public interface. */
#ifndef ABX_API_INT_H
#define ABX_API_INT_H

#include "api.h"
#include "http.h"

/* One control-plane request: method, base + path (already escaped),
 * optional JSON body, X-API-KEY and JSON headers. */
struct abx_apix_call {
    const char *method;
    const char *path;
    const cJSON *body;
    int idempotent;
    const char *what;
};

/* Starts it asynchronously; NULL with err. */
struct abx_http_xfer *abx_apix_start(const struct abx_platform *p,
                                     const struct abx_apix_call *c,
                                     struct abx_err *err);
/* Synchronous: 0 with resp (any status), -1 transport error. */
int abx_apix_do(const struct abx_platform *p, const struct abx_apix_call *c,
                struct abx_http_resp *resp, struct abx_err *err);
/* Appends "/sandboxes/<escaped id><tail>" (tail may be NULL or "");
 * -1 with err InvalidArgument for an empty or absurd id. */
int abx_apix_sbx_path(struct abx_buf *out, const char *id, const char *tail,
                      struct abx_err *err);
/* Parses a JSON reply body; NULL with err Protocol naming what. */
cJSON *abx_apix_json(const struct abx_http_resp *r, const char *what,
                     struct abx_err *err);
/* A reply that must be one Sandbox object; errors name what. */
int abx_apix_parse_sandbox(const struct abx_http_resp *r, const char *what,
                           struct abx_sandbox_info *out, struct abx_err *err);

#endif
