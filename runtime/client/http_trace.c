/* A test's trace of each HTTP exchange (trace.h, docs/reports.md
 * "Traces"): one "http" event per attempt, with the request's method,
 * URL (signature values redacted), header names, body, and the reply's
 * status, headers and body, as far as they are text.
 *
 * Request header values are recorded only for the names below; any
 * other (X-API-KEY, X-Access-Token, Authorization, a traffic token, a
 * test's own) is recorded as present, never with its value. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "http_int.h"
#include "trace.h"

#define KEEP ((size_t)1 << 20)       /* reply body bytes held per attempt */
#define HDR_KEEP ((size_t)16 << 10)  /* reply header bytes held */

struct abx_httpx_trace {
    cJSON *request;          /* built once, copied into each attempt */
    struct abx_buf headers;  /* this attempt's reply headers */
    struct abx_buf body;     /* this attempt's reply body, first KEEP */
    size_t body_bytes;
    int emitted;             /* a stream's attempt, recorded at its headers */
};

static const char *const shown[] = {
    "content-type", "content-length", "accept", "accept-encoding", "connect-protocol-version",
    "connect-timeout-ms", "connect-content-encoding", "connect-accept-encoding",
    "e2b-sandbox-id", "e2b-sandbox-port", "user-agent", "range", "transfer-encoding",
    "keepalive-ping-interval", "expect",
};

static int value_shown(const char *name, size_t n)
{
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++)
        if (strlen(shown[i]) == n && strncasecmp(shown[i], name, n) == 0)
            return 1;
    return 0;
}

static cJSON *request_headers(const char *const *h)
{
    cJSON *o = cJSON_CreateObject();
    for (; o && h && *h; h++) {
        const char *colon = strchr(*h, ':');
        if (colon == NULL || colon == *h)
            continue;
        char name[128];
        size_t n = (size_t)(colon - *h) < sizeof name - 1 ? (size_t)(colon - *h)
                                                           : sizeof name - 1;
        memcpy(name, *h, n);
        name[n] = '\0';
        const char *v = colon + 1 + strspn(colon + 1, " \t");
        cJSON_AddStringToObject(o, name, value_shown(name, n) ? v : "[not recorded]");
    }
    return o;
}

static cJSON *request_parts(const struct abx_http_req *r)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < r->nparts; i++) {
        const struct abx_http_part *p = &r->parts[i];
        cJSON *o = cJSON_CreateObject();
        if (o == NULL)
            break;
        cJSON_AddStringToObject(o, "name", p->name ? p->name : "");
        if (p->filename)
            cJSON_AddStringToObject(o, "filename", p->filename);
        if (p->path)
            cJSON_AddStringToObject(o, "from_file", p->path);
        else
            abx_trace_put_text(o, "body", p->data, p->len);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

void abx_httpx_trace_new(struct abx_http_xfer *x, const struct abx_http_req *r)
{
    if (!abx_trace_recording())
        return;
    struct abx_httpx_trace *t = calloc(1, sizeof *t);
    cJSON *q = cJSON_CreateObject();
    if (t == NULL || q == NULL) {
        free(t);
        cJSON_Delete(q);
        return;
    }
    abx_buf_init(&t->headers, HDR_KEEP);
    abx_buf_init(&t->body, KEEP);
    cJSON_AddItemToObject(q, "headers", request_headers(r->headers));
    if (r->body)
        abx_trace_put_text(q, "body", r->body, r->body_len);
    else if (r->body_path)
        cJSON_AddStringToObject(q, "body_from_file", r->body_path);
    else if (r->nparts)
        cJSON_AddItemToObject(q, "multipart", request_parts(r));
    t->request = q;
    x->trace = t;
}

void abx_httpx_trace_reset(struct abx_http_xfer *x)
{
    if (x->trace == NULL)
        return;
    abx_buf_reset(&x->trace->headers);
    abx_buf_reset(&x->trace->body);
    x->trace->body_bytes = 0;
    x->trace->emitted = 0;
}

void abx_httpx_trace_header(struct abx_http_xfer *x, const char *p, size_t n)
{
    if (x->trace == NULL)
        return;
    if (n >= 5 && strncmp(p, "HTTP/", 5) == 0)
        abx_buf_reset(&x->trace->headers);
    else
        abx_http_header_collect(&x->trace->headers, p, n);   /* full: the rest dropped */
}

void abx_httpx_trace_body(struct abx_http_xfer *x, const char *p, size_t n)
{
    if (x->trace == NULL)
        return;
    struct abx_buf *b = &x->trace->body;
    size_t room = b->len < KEEP ? KEEP - b->len : 0;
    if (abx_buf_append(b, p, n < room ? n : room) != 0) {
        /* Out of memory: the trace keeps less; body_bytes still counts all. */
    }
    x->trace->body_bytes += n;
}

static cJSON *reply_headers(const struct abx_buf *h)
{
    cJSON *o = cJSON_CreateObject();
    const char *p = h->data ? h->data : "";
    while (o && *p) {
        const char *nl = strchr(p, '\n'), *colon = strchr(p, ':');
        if (nl == NULL)
            break;
        if (colon && colon < nl) {
            char name[128];
            size_t n = (size_t)(colon - p) < sizeof name - 1 ? (size_t)(colon - p)
                                                             : sizeof name - 1;
            memcpy(name, p, n);
            name[n] = '\0';
            const char *v = colon + 1 + strspn(colon + 1, " ");
            abx_trace_put_text(o, name, v, (size_t)(nl - v));
        }
        p = nl + 1;
    }
    return o;
}

static void emit(struct abx_http_xfer *x, const char *url, const char *outcome,
                 double retry_in, double seconds);

/* A Connect stream of events is recorded once its reply's headers are
 * in: it may last longer than its test (a background command), and its
 * body is the SDK's events, recorded as output and exit. */
void abx_httpx_trace_headers_done(struct abx_http_xfer *x)
{
    char url[2048];
    /* an error reply is recorded whole, as it ends */
    if (x->trace == NULL || x->sink == NULL || x->trace->emitted || x->status < 200 ||
        x->status > 299 || strncmp(x->content_type, "application/connect+", 20) != 0)
        return;
    abx_url_redact(x->url, url, sizeof url);
    emit(x, url, NULL, -1, abx_trace_clock() - x->t_attempt);
    x->trace->emitted = 1;
}

void abx_httpx_trace_emit(struct abx_http_xfer *x, const char *url, const char *outcome,
                          double retry_in)
{
    if (x->trace == NULL || x->trace->emitted)
        return;
    emit(x, url, outcome, retry_in, x->seconds);
}

static void emit(struct abx_http_xfer *x, const char *url, const char *outcome,
                 double retry_in, double seconds)
{
    cJSON *e = abx_trace_new("http");
    if (e == NULL)
        return;
    abx_trace_began(e, seconds);   /* made as the attempt ends */
    cJSON_AddStringToObject(e, "what", x->what);
    cJSON_AddStringToObject(e, "method", x->method);
    cJSON_AddStringToObject(e, "url", url);
    cJSON_AddNumberToObject(e, "attempt", x->attempts);
    if (x->status > 0)
        cJSON_AddNumberToObject(e, "status", (double)x->status);
    if (outcome)
        cJSON_AddStringToObject(e, "error", outcome);
    if (retry_in >= 0)
        cJSON_AddNumberToObject(e, "retry_in", retry_in);
    cJSON_AddItemToObject(e, "request", cJSON_Duplicate(x->trace->request, 1));
    cJSON *r = cJSON_AddObjectToObject(e, "response");
    if (r && x->status > 0) {
        cJSON_AddItemToObject(r, "headers", reply_headers(&x->trace->headers));
        if (!x->trace->emitted && x->sink && x->status >= 200 && x->status <= 299 &&
            strncmp(x->content_type, "application/connect+", 20) == 0)
            cJSON_AddBoolToObject(r, "streamed", 1);   /* see output and exit */
        else
            abx_trace_put_text(r, "body", x->trace->body.data, x->trace->body.len);
        if (x->trace->body_bytes > x->trace->body.len)
            cJSON_AddNumberToObject(r, "body_bytes", (double)x->trace->body_bytes);
    }
    abx_trace_add(e);
}

void abx_httpx_trace_free(struct abx_http_xfer *x)
{
    if (x->trace == NULL)
        return;
    cJSON_Delete(x->trace->request);
    abx_buf_free(&x->trace->headers);
    abx_buf_free(&x->trace->body);
    free(x->trace);
    x->trace = NULL;
}
