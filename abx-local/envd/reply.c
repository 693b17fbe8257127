/* Replies every envd handler queues: a request header, a body as given,
 * and envd's {"code":N,"message":...} REST error. */
#include "daemon.h"
#include "jsonutil.h"

const char *abxl_envd_header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

enum MHD_Result abxl_envd_reply_json(struct MHD_Connection *c, unsigned status,
                                const char *content_type, const char *body,
                                size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, (void *)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc;

    if (!r)
        return MHD_NO;
    if (content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                content_type);
    rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result abxl_envd_reply_error(struct MHD_Connection *c, unsigned status,
                                 const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    struct abx_buf b;
    enum MHD_Result rc = MHD_NO;

    abx_buf_init(&b, 0);
    if (o && cJSON_AddNumberToObject(o, "code", status) &&
        cJSON_AddStringToObject(o, "message", msg) &&
        abx_json_append(&b, o) == 0)
        rc = abxl_envd_reply_json(c, status, "application/json; charset=utf-8",
                             b.data, b.len);
    cJSON_Delete(o);
    abx_buf_free(&b);
    return rc;
}
