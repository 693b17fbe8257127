/* Data plane: routes a request to a port inside a sandbox and streams both
 * ways (libmicrohttpd thread-per-connection on our side, one libcurl
 * transfer on its own thread on the sandbox side, two bounded rings
 * between them). Nothing buffers a whole body, except the buffering
 * gateway that --vary gateway=buffer puts before a sandbox's own ports. */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "base.h"
#include "filesig.h"
#include "http.h"
#include "log.h"
#include "proxy.h"
#include "sandbox.h"
#include "vec.h"

#define RING_CAP (256 * 1024)
/* The buffering gateway's cap: FC's documented 32 MiB, or 64 (--vary gateway-cap). */
#define GW_BODY_MAX ((abxl_vary(ABXL_V_GATEWAY_CAP) ? 64LL : 32LL) << 20)
#define MAX_RESP_HDRS 64

struct ring {
    char buf[RING_CAP];
    size_t head, len;
};

struct px {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    struct abxl_sbx *s;
    int port, client_fd;
    CURL *curl;
    struct curl_slist *req_hdrs;
    struct ring req, resp;
    bool req_eof, aborted, up_done, headers_done, thread_started;
    CURLcode up_rc;
    long status;
    long long content_length, sent, drop_after;
    char *resp_hdrs[MAX_RESP_HDRS];
    int n_resp_hdrs;
    pthread_t tid;
    /* The buffering gateway: the whole body, then HTTP/1.0 (or 1.1) upstream. */
    bool gw, too_big;
    char *gbuf;
    size_t glen, gcap, gpos;
};

static void px_unref(struct px *p)
{
    pthread_mutex_lock(&p->mu);
    int left = --p->refs;
    pthread_mutex_unlock(&p->mu);
    if (left > 0)
        return;
    if (p->curl)
        curl_easy_cleanup(p->curl);
    curl_slist_free_all(p->req_hdrs);
    free(p->gbuf);
    for (int i = 0; i < p->n_resp_hdrs; i++)
        free(p->resp_hdrs[i]);
    abxl_sbx_unref(p->s);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}

/* Client gone? A peek that reads 0 bytes means the peer closed. */
static bool client_closed(int fd)
{
    if (fd < 0)
        return false;
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Waits on the condition for up to 250 ms; checks the client on timeout.
 * Called with p->mu held. */
static void wait_a_bit(struct px *p)
{
    struct timespec ts;
    abxl_abstime_in(&ts, 250);
    if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT && client_closed(p->client_fd)) {
        p->aborted = true;
        pthread_cond_broadcast(&p->cv);
    }
}

static size_t ring_put(struct ring *r, const char *d, size_t n)
{
    size_t done = 0;
    while (done < n && r->len < RING_CAP) {
        size_t tail = (r->head + r->len) % RING_CAP;
        size_t room = tail >= r->head ? RING_CAP - tail : r->head - tail;
        if (room > RING_CAP - r->len)
            room = RING_CAP - r->len;
        size_t k = n - done < room ? n - done : room;
        memcpy(r->buf + tail, d + done, k);
        r->len += k;
        done += k;
    }
    return done;
}

static size_t ring_get(struct ring *r, char *d, size_t max)
{
    size_t done = 0;
    while (done < max && r->len > 0) {
        size_t k = RING_CAP - r->head < r->len ? RING_CAP - r->head : r->len;
        if (k > max - done)
            k = max - done;
        memcpy(d + done, r->buf + r->head, k);
        r->head = (r->head + k) % RING_CAP;
        r->len -= k;
        done += k;
    }
    return done;
}

/* ---- curl side (its own thread) ---- */
static size_t up_read(char *buf, size_t size, size_t nitems, void *ud)
{
    struct px *p = ud;
    size_t max = size * nitems, n = 0;
    if (p->gw) {   /* complete before the transfer started: no lock */
        n = p->glen - p->gpos < max ? p->glen - p->gpos : max;
        if (n)
            memcpy(buf, p->gbuf + p->gpos, n);
        p->gpos += n;
        return n;
    }
    pthread_mutex_lock(&p->mu);
    while (p->req.len == 0 && !p->req_eof && !p->aborted)
        pthread_cond_wait(&p->cv, &p->mu);
    if (p->aborted) {
        pthread_mutex_unlock(&p->mu);
        return CURL_READFUNC_ABORT;
    }
    n = ring_get(&p->req, buf, max);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return n;
}

static size_t up_write(char *data, size_t size, size_t nmemb, void *ud)
{
    struct px *p = ud;
    size_t n = size * nmemb, done = 0;
    pthread_mutex_lock(&p->mu);
    p->headers_done = true;
    while (done < n && !p->aborted) {
        size_t k = ring_put(&p->resp, data + done, n - done);
        done += k;
        pthread_cond_broadcast(&p->cv);
        if (done < n)
            pthread_cond_wait(&p->cv, &p->mu);
    }
    bool ab = p->aborted;
    pthread_mutex_unlock(&p->mu);
    return ab ? 0 : n;
}

static bool hop_by_hop(const char *name, size_t len)
{
    static const char *const names[] = {"connection", "keep-alive", "proxy-connection",
                                        "transfer-encoding", "te", "trailer", "upgrade",
                                        "content-length", "expect", "date", "proxy-authenticate",
                                        "proxy-authorization"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && strncasecmp(name, names[i], len) == 0)
            return true;
    return false;
}

static size_t up_header(char *line, size_t size, size_t nitems, void *ud)
{
    struct px *p = ud;
    size_t n = size * nitems, len = n;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    pthread_mutex_lock(&p->mu);
    if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* A new status line: forget any 1xx interim response. */
        for (int i = 0; i < p->n_resp_hdrs; i++)
            free(p->resp_hdrs[i]);
        p->n_resp_hdrs = 0;
        p->content_length = -1;
        const char *sp = memchr(line, ' ', len);
        p->status = sp ? strtol(sp + 1, NULL, 10) : 502;
    } else if (len == 0) {
        if (p->status >= 200) {
            p->headers_done = true;
            pthread_cond_broadcast(&p->cv);
        }
    } else {
        const char *colon = memchr(line, ':', len);
        if (colon != NULL) {
            size_t nlen = (size_t)(colon - line);
            if (nlen == 14 && strncasecmp(line, "content-length", 14) == 0)
                p->content_length = strtoll(colon + 1, NULL, 10);
            char *copy = NULL;
            if (!hop_by_hop(line, nlen) && p->n_resp_hdrs < MAX_RESP_HDRS &&
                (copy = strndup(line, len)) != NULL)
                p->resp_hdrs[p->n_resp_hdrs++] = copy;   /* out of memory: dropped */
        }
    }
    pthread_mutex_unlock(&p->mu);
    return n;
}

static int up_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a;
    (void)b;
    (void)c;
    (void)d;
    struct px *p = ud;
    pthread_mutex_lock(&p->mu);
    bool ab = p->aborted;
    pthread_mutex_unlock(&p->mu);
    return ab ? 1 : 0;
}

static void *up_main(void *arg)
{
    struct px *p = arg;
    CURLcode rc = curl_easy_perform(p->curl);
    pthread_mutex_lock(&p->mu);
    p->up_rc = rc;
    p->up_done = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- MHD side ---- */
struct hdr_ctx {
    struct px *p;
    bool ok;
    const char *mask;   /* network.maskRequestHost, or NULL */
};

/* E2B's maskRequestHost: the Host the sandbox's server sees, "${PORT}"
 * standing for the port asked for. NULL when none is set or the profile
 * ignores it (FC). */
static const char *mask_of(const struct abxl_sbx *s)
{
    const cJSON *m = s->network ? cJSON_GetObjectItemCaseSensitive(s->network, "maskRequestHost")
                                : NULL;
    return abxl_sw(ABXL_SW_MASK_HOST) && cJSON_IsString(m) && m->valuestring[0] ? m->valuestring
                                                                             : NULL;
}

static bool append_host(struct px *p, const char *mask)
{
    static const char var[] = "${PORT}";
    char line[ABXL_MASK_HOST_MAX * 2 + 64], port[16];
    snprintf(port, sizeof port, "%d", p->port);
    size_t n = (size_t)snprintf(line, sizeof line, "Host: ");
    for (const char *c = mask; *c && n + sizeof port < sizeof line;) {
        bool is_var = strncmp(c, var, sizeof var - 1) == 0;
        const char *piece = is_var ? port : c;
        size_t len = is_var ? strlen(port) : 1;
        memcpy(line + n, piece, len);
        n += len;
        c += is_var ? sizeof var - 1 : 1;
    }
    line[n] = '\0';
    struct curl_slist *l = curl_slist_append(p->req_hdrs, line);
    if (l != NULL)
        p->req_hdrs = l;
    return l != NULL;
}

static enum MHD_Result copy_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    struct hdr_ctx *h = cls;
    if (hop_by_hop(key, strlen(key)) || (h->mask && strcasecmp(key, "Host") == 0))
        return MHD_YES;
    char line[8300];
    int n = value && value[0] ? snprintf(line, sizeof line, "%s: %s", key, value)
                              : snprintf(line, sizeof line, "%s;", key);
    if (n < 0 || (size_t)n >= sizeof line)
        return MHD_YES;   /* an absurd header is dropped, not forwarded cut */
    struct curl_slist *l = curl_slist_append(h->p->req_hdrs, line);
    if (l == NULL)
        h->ok = false;
    else
        h->p->req_hdrs = l;
    return MHD_YES;
}

static int setup_curl(struct px *p, struct MHD_Connection *c, const char *method, const char *uri)
{
    char url[64];
    struct hdr_ctx h = {p, true, mask_of(p->s)};
    p->curl = curl_easy_init();
    if (p->curl == NULL)
        return -1;
    CURL *k = p->curl;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", p->port);
    abxl_nsnet_setup(k, p->s->netns_fd);
    curl_easy_setopt(k, CURLOPT_URL, url);
    curl_easy_setopt(k, CURLOPT_REQUEST_TARGET, uri);   /* verbatim path+query */
    bool http10 = p->gw && abxl_vary(ABXL_V_GATEWAY_HTTP) == 0;   /* nginx's default */
    curl_easy_setopt(k, CURLOPT_HTTP_VERSION,
                     (long)(http10 ? CURL_HTTP_VERSION_1_0 : CURL_HTTP_VERSION_1_1));
    curl_easy_setopt(k, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(k, CURLOPT_HTTP_CONTENT_DECODING, 0L);
    curl_easy_setopt(k, CURLOPT_BUFFERSIZE, 65536L);
    curl_easy_setopt(k, CURLOPT_UPLOAD_BUFFERSIZE, 65536L);
    curl_easy_setopt(k, CURLOPT_HEADERFUNCTION, up_header);
    curl_easy_setopt(k, CURLOPT_HEADERDATA, p);
    curl_easy_setopt(k, CURLOPT_WRITEFUNCTION, up_write);
    curl_easy_setopt(k, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(k, CURLOPT_XFERINFOFUNCTION, up_progress);
    curl_easy_setopt(k, CURLOPT_XFERINFODATA, p);
    curl_easy_setopt(k, CURLOPT_NOPROGRESS, 0L);
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    bool body_method = strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
                       strcmp(method, "PATCH") == 0;
    /* Always name the method: CURLOPT_UPLOAD alone would turn it into PUT. */
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(k, CURLOPT_NOBODY, 1L);
    else
        curl_easy_setopt(k, CURLOPT_CUSTOMREQUEST, method);
    if (cl != NULL || te != NULL || body_method) {
        long long len = p->gw       ? (long long)p->glen
                        : te != NULL ? -1
                        : cl != NULL ? strtoll(cl, NULL, 10)
                                     : 0;
        curl_easy_setopt(k, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(k, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(k, CURLOPT_READFUNCTION, up_read);
        curl_easy_setopt(k, CURLOPT_READDATA, p);
    } else {
        p->req_eof = true;
    }
    MHD_get_connection_values(c, MHD_HEADER_KIND, copy_header, &h);
    if (h.mask && !append_host(p, h.mask))
        return -1;
    struct curl_slist *l = curl_slist_append(p->req_hdrs, "Expect:");
    if (l)
        p->req_hdrs = l;
    if (!h.ok || l == NULL)
        return -1;
    if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept") == NULL &&
        (l = curl_slist_append(p->req_hdrs, "Accept:")) != NULL)
        p->req_hdrs = l;   /* don't let curl add one the client did not send */
    curl_easy_setopt(k, CURLOPT_HTTPHEADER, p->req_hdrs);
    return 0;
}

/* E2B's edge answers a browser (User-Agent starting "Mozilla", as infra's
 * client-proxy tests it) with an HTML page instead of JSON. */
static bool from_browser(struct MHD_Connection *c)
{
    const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
    return ua != NULL && strncmp(ua, "Mozilla", 7) == 0;
}

static enum MHD_Result proxy_502_html(struct MHD_Connection *c, const char *id,
                                      const char *msg, int port)
{
    char safe[128], port_line[48] = "", page[1024];
    size_t i = 0;
    /* The id comes from the request: only id characters reach the page. */
    for (; id[i] != '\0' && i < sizeof safe - 1; i++)
        safe[i] = isalnum((unsigned char)id[i]) || id[i] == '-' ? id[i] : '?';
    safe[i] = '\0';
    if (port > 0)
        snprintf(port_line, sizeof port_line, "<p>Port: %d</p>\n", port);
    int n = snprintf(page, sizeof page,
                     "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>"
                     "</head>\n<body><h1>%s</h1>\n<p>Sandbox: %s</p>\n%s</body></html>\n",
                     msg, msg, safe, port_line);
    if (n < 0 || (size_t)n >= sizeof page)
        return abxl_http_error(c, 502, "%s", msg);
    return abxl_http_send(c, 502, "text/html; charset=utf-8", page, (size_t)n);
}

/* The fc profile's data-plane errors: FC documents none, so they are a
 * reverse proxy's plain page (assumed), the status kept: a test that
 * reads E2B's JSON fields here fails locally, not on the cloud. */
static enum MHD_Result gateway_page(struct MHD_Connection *c, unsigned status)
{
    char page[512];
    const char *what = status == 403   ? "403 Forbidden"
                       : status == 404 ? "404 Not Found"
                       : status == 410 ? "410 Gone"
                       : status == 413 ? "413 Request Entity Too Large"
                                       : "502 Bad Gateway";
    int n = snprintf(page, sizeof page,
                     "<html>\r\n<head><title>%s</title></head>\r\n<body>\r\n"
                     "<center><h1>%s</h1></center>\r\n<hr><center>abx-fc-gateway</center>\r\n"
                     "</body>\r\n</html>\r\n",
                     what, what);
    return abxl_http_send(c, status, "text/html", page, (size_t)n);
}

/* E2B's client-proxy body and content type (infra's proxy tests pin
 * both); SDKs read message/sandboxId/port from it. */
static enum MHD_Result proxy_json(struct MHD_Connection *c, unsigned status, const char *id,
                                  const char *msg, int port)
{
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    enum MHD_Result ret;
    if (o == NULL || cJSON_AddStringToObject(o, "sandboxId", id) == NULL ||
        cJSON_AddStringToObject(o, "message", msg) == NULL ||
        (port > 0 && cJSON_AddNumberToObject(o, "port", port) == NULL) ||
        cJSON_AddNumberToObject(o, "code", status) == NULL ||
        (text = cJSON_PrintUnformatted(o)) == NULL) {
        ret = abxl_http_error(c, 500, "out of memory");
        goto out;
    }
    ret = abxl_http_send(c, status, "application/json; charset=utf-8", text, strlen(text));
out:
    cJSON_free(text);
    cJSON_Delete(o);
    return ret;
}

static enum MHD_Result proxy_502(struct MHD_Connection *c, const char *id, const char *msg,
                                 int port)
{
    if (abxl_sw(ABXL_SW_GATEWAY_ERRORS))
        return gateway_page(c, 502);
    if (from_browser(c))
        return proxy_502_html(c, id, msg, port);
    return proxy_json(c, 502, id, msg, port);
}

/* An unknown or killed sandbox. FC documents 502 only for a port not
 * ready: --vary dead-status answers 404 or 410 instead, on a sandbox's
 * own ports (envd's stays 502, which SDKs read as "not running"). */
static enum MHD_Result proxy_no_sandbox(struct MHD_Connection *c, const char *id, int port)
{
    static const unsigned st[] = {502, 404, 410};
    unsigned status = port == ABXL_ENVD_PORT ? 502 : st[abxl_vary(ABXL_V_DEAD_STATUS)];
    if (status == 502)
        return proxy_502(c, id, "The sandbox was not found", 0);
    if (abxl_sw(ABXL_SW_GATEWAY_ERRORS))
        return gateway_page(c, status);
    return proxy_json(c, status, id, "The sandbox was not found", 0);
}

static bool header_is(struct MHD_Connection *c, const char *name, const char *want)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    return want[0] != '\0' && v != NULL && abx_filesig_equal(v, want);   /* constant time */
}

/* network.allowPublicTraffic=false: every port wants the traffic token;
 * envd is exempt (it checks its own X-Access-Token) unless the profile
 * gates it too, where a valid access token stands in for it. */
static bool traffic_allowed(struct MHD_Connection *c, const struct abxl_sbx *s, int port)
{
    if (s->traffic_token[0] == '\0' || header_is(c, "e2b-traffic-access-token", s->traffic_token))
        return true;
    if (port != ABXL_ENVD_PORT)
        return false;
    return !abxl_sw(ABXL_SW_TRAFFIC_GATE_ENVD) || header_is(c, "X-Access-Token", s->access_token);
}

/* Routing: E2b-Sandbox-Id/-Port headers, else Host "<port>-<id>.<domain>". */
static int route(struct MHD_Connection *c, char *id, size_t idlen, int *port, bool *by_host)
{
    *by_host = false;
    const char *hid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id");
    const char *hport = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Port");
    char portbuf[16];
    if (hid && hport) {
        snprintf(id, idlen, "%s", hid);
        snprintf(portbuf, sizeof portbuf, "%s", hport);
    } else {
        const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
        if (host == NULL)
            return -1;
        *by_host = true;
        size_t label = strcspn(host, ".:");
        const char *dash = memchr(host, '-', label);
        if (dash == NULL || dash == host || (size_t)(dash - host) >= sizeof portbuf)
            return -1;
        memcpy(portbuf, host, (size_t)(dash - host));
        portbuf[dash - host] = '\0';
        size_t n = label - (size_t)(dash - host) - 1;
        if (n == 0 || n >= idlen)
            return -1;
        memcpy(id, dash + 1, n);
        id[n] = '\0';
    }
    char *end;
    long v = strtol(portbuf, &end, 10);
    if (portbuf[0] == '\0' || *end != '\0' || v < 1 || v > 65535)
        return -1;
    *port = (int)v;
    return 0;
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct px *p = cls;
    ssize_t ret;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->drop_after > 0 && p->sent >= p->drop_after) {
            ret = MHD_CONTENT_READER_END_WITH_ERROR;   /* injected fault */
            p->aborted = true;
            break;
        }
        if (p->resp.len > 0) {
            if (p->drop_after > 0 && (long long)max > p->drop_after - p->sent)
                max = (size_t)(p->drop_after - p->sent);
            ret = (ssize_t)ring_get(&p->resp, buf, max);
            p->sent += ret;
            break;
        }
        if (p->up_done) {
            ret = p->up_rc == CURLE_OK ? MHD_CONTENT_READER_END_OF_STREAM
                                       : MHD_CONTENT_READER_END_WITH_ERROR;
            break;
        }
        if (p->aborted) {
            ret = MHD_CONTENT_READER_END_WITH_ERROR;
            break;
        }
        wait_a_bit(p);
    }
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return ret;
}

static void reader_free(void *cls)
{
    px_unref(cls);
}

static enum MHD_Result respond(struct MHD_Connection *c, struct px *p, const char *method)
{
    pthread_mutex_lock(&p->mu);
    p->req_eof = true;
    pthread_cond_broadcast(&p->cv);
    while (!p->headers_done && !p->up_done && !p->aborted)
        wait_a_bit(p);
    bool ok = p->headers_done;
    CURLcode rc = p->up_rc;
    pthread_mutex_unlock(&p->mu);
    if (!ok) {
        char msg[128];
        /* infra's exact text: clients match on it, so no port number in it. */
        if (rc == CURLE_COULDNT_CONNECT)
            return proxy_502(c, p->s->id, "The sandbox is running but port is not open",
                             p->port);
        snprintf(msg, sizeof msg, "The sandbox did not answer on port %d (%s)", p->port,
                 curl_easy_strerror(rc));
        return proxy_502(c, p->s->id, msg, p->port);
    }
    struct MHD_Response *r;
    bool empty = strcmp(method, "HEAD") == 0 || p->status == 204 || p->status == 304 ||
                 p->content_length == 0;
    if (empty) {
        r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    } else {
        pthread_mutex_lock(&p->mu);
        p->refs++;
        pthread_mutex_unlock(&p->mu);
        r = MHD_create_response_from_callback(
            p->content_length >= 0 ? (uint64_t)p->content_length : MHD_SIZE_UNKNOWN, 65536,
            reader, p, reader_free);
        if (r == NULL)
            px_unref(p);
    }
    if (r == NULL)
        return MHD_NO;
    for (int i = 0; i < p->n_resp_hdrs; i++) {
        char *line = p->resp_hdrs[i], *colon = strchr(line, ':');
        *colon = '\0';
        const char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        MHD_add_response_header(r, line, v);
        *colon = ':';
    }
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)p->status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result start_upstream(struct MHD_Connection *c, struct px *p,
                                      const char *method, const char *uri)
{
    if (setup_curl(p, c, method, uri) != 0)
        return abxl_http_error(c, 500, "out of memory setting up the proxy");
    if (pthread_create(&p->tid, NULL, up_main, p) != 0)
        return abxl_http_error(c, 500, "cannot start the proxy thread");
    p->thread_started = true;
    return MHD_YES;
}

static enum MHD_Result px_begin(struct MHD_Connection *c, struct abxl_req *r, const char *method)
{
    char id[128];
    int port;
    bool by_host;
    if (r->uri[0] != '/')
        return abxl_http_error(c, 400, "request target must be an absolute path");
    if (route(c, id, sizeof id, &port, &by_host) != 0)
        return abxl_http_error(c, 400,
                              "cannot route: send E2b-Sandbox-Id and E2b-Sandbox-Port headers "
                              "or use Host <port>-<sandboxID>.%s",
                              abxl_cfg.data_domain);
    int fault = abxl_faults_roll(true);
    if (fault)
        return abxl_http_error(c, (unsigned)fault, "injected fault (status %d)", fault);
    struct abxl_sbx *s = abxl_reg_find(id, by_host);
    if (s == NULL)
        return proxy_no_sandbox(c, id, port);
    if (!traffic_allowed(c, s, port)) {
        abxl_sbx_unref(s);
        if (abxl_sw(ABXL_SW_GATEWAY_ERRORS))
            return gateway_page(c, 403);
        return abxl_http_error(c, 403, "sandbox %s does not allow public traffic: send its "
                              "traffic access token in e2b-traffic-access-token", id);
    }
    pthread_mutex_lock(&abxl_reg_lock);
    bool paused = s->state != ABXL_SBX_RUNNING, wake = paused && s->auto_resume && !s->cold;
    int64_t end = abxl_now_ms() + s->timeout_ms;
    pthread_mutex_unlock(&abxl_reg_lock);
    /* lifecycle.autoResume: a request to a paused sandbox wakes it, for
     * the timeout it was created with; not one paused without its memory,
     * which E2B boots again on an explicit connect only (the SDKs say so). */
    if (wake && abxl_life_resume(s, end) >= 0) {
        abxl_log(ABXL_LOG_INFO, "sandbox %s resumed by a request (autoResume)", s->id);
        pthread_mutex_lock(&abxl_reg_lock);
        paused = s->state != ABXL_SBX_RUNNING;
        pthread_mutex_unlock(&abxl_reg_lock);
    }
    if (paused) {
        abxl_sbx_unref(s);
        return proxy_502(c, id, "The sandbox is paused", 0);
    }
    struct abxl_faults f;
    abxl_faults_get(&f);
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (f.upload_max_bytes > 0 && cl != NULL && strtoll(cl, NULL, 10) > f.upload_max_bytes) {
        abxl_sbx_unref(s);
        return abxl_http_error(c, 413, "request body over %lld bytes (fault injection)",
                               f.upload_max_bytes);
    }
    struct px *p = calloc(1, sizeof *p);
    if (p == NULL) {
        abxl_sbx_unref(s);
        return MHD_NO;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->refs = 1;
    p->s = s;
    p->port = port;
    p->content_length = -1;
    p->drop_after = f.drop_stream_after_bytes;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    p->client_fd = ci ? ci->connect_fd : -1;
    r->proxy = p;
    /* The buffering gateway starts upstream once the body is whole. */
    p->gw = port != ABXL_ENVD_PORT && abxl_vary(ABXL_V_GATEWAY) == 1;
    return p->gw ? MHD_YES : start_upstream(c, p, method, r->uri);
}

/* The request is over (answered, or its client gone): stops the transfer. */
static void px_release(struct abxl_req *r)
{
    struct px *p = r->proxy;
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->aborted = true;   /* no-op if the transfer is over; else stops it */
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (p->thread_started)
        pthread_join(p->tid, NULL);
    px_unref(p);
}

/* The gateway keeps the body, up to its cap; beyond, it keeps reading
 * (so the client can be answered) and drops it. */
static enum MHD_Result gw_take(struct px *p, const char *data, size_t n)
{
    if (p->too_big || (long long)(p->glen + n) > GW_BODY_MAX) {
        p->too_big = true;
        free(p->gbuf);
        p->gbuf = NULL;
        p->glen = p->gcap = 0;
        return MHD_YES;
    }
    if (ABX_VEC_RESERVE(p->gbuf, p->gcap, p->glen + n) != 0)
        return MHD_NO;
    memcpy(p->gbuf + p->glen, data, n);
    p->glen += n;
    return MHD_YES;
}

static enum MHD_Result px_upload(struct abxl_req *r, const char *data, size_t n)
{
    struct px *p = r->proxy;
    if (p != NULL && p->gw && !p->thread_started)
        return gw_take(p, data, n);
    if (p == NULL || !p->thread_started)
        return MHD_NO;   /* start answered already */
    pthread_mutex_lock(&p->mu);
    size_t done = 0;
    while (done < n && !p->aborted && !p->up_done) {
        done += ring_put(&p->req, data + done, n - done);
        pthread_cond_broadcast(&p->cv);
        if (done < n)
            wait_a_bit(p);
    }
    pthread_mutex_unlock(&p->mu);
    return MHD_YES;   /* upstream gone early: the rest is discarded */
}

static enum MHD_Result px_end(struct MHD_Connection *c, struct abxl_req *r, const char *method)
{
    struct px *p = r->proxy;
    if (p != NULL && p->gw && !p->thread_started) {
        if (p->too_big)   /* the gateway's own page, never the server's JSON */
            return gateway_page(c, 413);
        enum MHD_Result ret = start_upstream(c, p, method, r->uri);
        if (!p->thread_started)
            return ret;
    }
    if (p == NULL || !p->thread_started)
        return MHD_NO;
    return respond(c, p, method);
}

const struct abxl_plane abxl_proxy_plane = {px_begin, px_upload, px_end, px_release};
