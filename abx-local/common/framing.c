/* The framing check both of abx-local's programs make (framing.h). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "framing.h"

struct framing_headers {
    int content_length, transfer_encoding;
    const char *coding;   /* the Transfer-Encoding value */
};

static enum MHD_Result count(void *cls, enum MHD_ValueKind kind, const char *key,
                             const char *value)
{
    struct framing_headers *h = cls;
    (void)kind;
    if (strcasecmp(key, "Content-Length") == 0) {
        h->content_length++;
    } else if (strcasecmp(key, "Transfer-Encoding") == 0) {
        h->transfer_encoding++;
        h->coding = value ? value : "";
    }
    return MHD_YES;
}

const char *abxl_framing_problem(struct MHD_Connection *c)
{
    struct framing_headers h = {0, 0, NULL};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count, &h);
    if (h.content_length > 1)
        return "more than one Content-Length: ambiguous request framing";
    if (h.transfer_encoding == 0)
        return NULL;
    if (h.transfer_encoding > 1)
        return "more than one Transfer-Encoding: ambiguous request framing";
    if (h.content_length)
        return "both Content-Length and Transfer-Encoding: ambiguous request framing";
    size_t lead = strspn(h.coding, " \t"), n = strlen(h.coding + lead);
    while (n > 0 && (h.coding[lead + n - 1] == ' ' || h.coding[lead + n - 1] == '\t'))
        n--;
    if (n != 7 || strncasecmp(h.coding + lead, "chunked", 7) != 0)
        return "unsupported Transfer-Encoding: only chunked is accepted";
    return NULL;
}

enum MHD_Result abxl_framing_refuse(struct MHD_Connection *c, const char *why)
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
