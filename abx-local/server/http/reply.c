/* Replies both planes queue: a body as given, JSON (optionally with one
 * header), and the {"code":N,"message":...} errors, worded per profile. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "http.h"

enum MHD_Result abxl_http_send(struct MHD_Connection *c, unsigned status, const char *ctype,
                              const char *body, size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (resp == NULL)
        return MHD_NO;
    if (ctype)
        MHD_add_response_header(resp, "Content-Type", ctype);
    enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

enum MHD_Result abxl_http_json_hdr(struct MHD_Connection *c, unsigned status, cJSON *v,
                                  const char *hname, const char *hval)
{
    char *text = v ? cJSON_PrintUnformatted(v) : NULL;
    cJSON_Delete(v);
    if (text == NULL)
        return abxl_http_send(c, 500, "application/json",
                             "{\"code\":500,\"message\":\"out of memory\"}", 38);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    if (hname && hval)
        MHD_add_response_header(resp, hname, hval);
    enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

enum MHD_Result abxl_http_json(struct MHD_Connection *c, unsigned status, cJSON *v)
{
    return abxl_http_json_hdr(c, status, v, NULL, NULL);
}

/* FC publishes no error texts (docs/profiles.md): the fc
 * profile words them as an Alibaba API would, a code name first, so a
 * test that matches E2B's wording fails here before it fails there. */
static const char *fc_code(unsigned status)
{
    switch (status) {
    case 400: return "InvalidParameter";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "ResourceNotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 413: return "EntityTooLarge";
    case 429: return "LimitExceeded";
    default: return status >= 500 ? "InternalError" : "RequestError";
    }
}

static cJSON *error_body(unsigned status, const char *fmt, va_list ap)
{
    char msg[1024], fcmsg[1100];
    vsnprintf(msg, sizeof msg, fmt, ap);
    cJSON *o = cJSON_CreateObject();
    if (o) {
        /* --vary messages=terse: other words again, the key facts kept. */
        int v = abxl_vary(ABXL_V_MESSAGES);
        bool fc = v == 1 || abxl_sw(ABXL_SW_FC_MESSAGES);
        if (v == 1)
            snprintf(fcmsg, sizeof fcmsg, "error %u; %s", status, msg);
        else if (fc)
            snprintf(fcmsg, sizeof fcmsg, "%s: %s", fc_code(status), msg);
        struct abxl_faults f;
        abxl_faults_get(&f);
        unsigned code = f.error_body_code ? (unsigned)f.error_body_code : status;
        cJSON_AddNumberToObject(o, "code", code);
        cJSON_AddStringToObject(o, "message", fc ? fcmsg : msg);
    }
    return o;
}

static cJSON *error_json(unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static cJSON *error_json(unsigned status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cJSON *o = error_body(status, fmt, ap);
    va_end(ap);
    return o;
}

enum MHD_Result abxl_http_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cJSON *o = error_body(status, fmt, ap);
    va_end(ap);
    return abxl_http_json(c, status, o);
}

enum MHD_Result abxl_http_405(struct MHD_Connection *c, const char *allow, const char *method,
                             const char *path)
{
    cJSON *o = error_json(405, "method %.16s not allowed on %.200s (allowed: %s)", method, path,
                          allow);
    return abxl_http_json_hdr(c, 405, o, "Allow", allow);
}
