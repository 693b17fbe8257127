/* One HTTP transfer: the curl easy handle built from a request, its
 * header/body/read callbacks, the save file, and the mapping of its
 * outcome to an error class. The engine (http.c) drives it. */
#include "http_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_MAX_BODY ((size_t)16 * 1024 * 1024)

static char *dup_str(const char *s)
{
    return s ? strdup(s) : NULL;
}

static const char *what_of(const struct abx_http_xfer *x)
{
    return x->what ? x->what : "http request";
}

static int is_2xx(long s)
{
    return s >= 200 && s < 300;
}

static void fail(struct abx_http_xfer *x, enum abx_errclass c,
                 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Records the first failure of a transfer ("<what>: <text>"). */
static void fail(struct abx_http_xfer *x, enum abx_errclass c,
                 const char *fmt, ...)
{
    char text[512];
    va_list ap;

    if (x->failed)
        return;
    x->failed = 1;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    abx_err_set(&x->err, c, x->status, "", "%s: %s", what_of(x), text);
}

int abx_httpx_status_retryable(const struct abx_http_xfer *x, long status)
{
    if (x->no_retry)
        return 0;
    if (status == 429)
        return 1;
    return x->idempotent && (status == 502 || status == 503);
}

/* Copies the value of a header line (after "Name:") trimmed. */
static int header_value(const char *line, size_t n, const char *name,
                        char *out, size_t outlen)
{
    size_t nl = strlen(name);
    if (n <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return 0;
    const char *v = line + nl + 1, *e = line + n;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' ||
                     e[-1] == '\t'))
        e--;
    size_t len = (size_t)(e - v);
    if (len >= outlen)
        return -1;
    memcpy(out, v, len);
    out[len] = '\0';
    return 1;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *ud)
{
    struct abx_http_xfer *x = ud;
    size_t n = sz * nm;

    abx_httpx_trace_header(x, p, n);
    if (n >= 5 && strncmp(p, "HTTP/", 5) == 0) {
        /* A new response (after 1xx): forget the previous headers. */
        x->content_type[0] = '\0';
        x->next_token[0] = '\0';
        abx_buf_reset(&x->headers);
        return n;
    }
    if (n <= 2 && (n == 0 || p[0] == '\r' || p[0] == '\n')) {
        long code = 0;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200) {
            x->status = code;
            abx_httpx_trace_headers_done(x);
            x->divert = abx_httpx_status_retryable(x, code) &&
                        x->attempts <= x->max_retries && !x->sink_fed;
        }
        return n;
    }
    header_value(p, n, "Content-Type", x->content_type,
                 sizeof x->content_type);
    if (header_value(p, n, "X-Next-Token", x->next_token,
                     sizeof x->next_token) < 0) {
        fail(x, ABX_E_PROTOCOL, "X-Next-Token header is too long");
        return 0;
    }
    if (x->collect_headers &&
        abx_http_header_collect(&x->headers, p, n) != 0) {
        fail(x, ABX_E_PROTOCOL, "reply headers are larger than the "
             "%zu-byte cap", ABX_HTTP_HEADERS_MAX);
        return 0;
    }
    return n;
}

/* Error bodies kept while the real body goes elsewhere: truncated, not
 * an error (the message only shows the first part anyway). */
static void keep_error_body(struct abx_http_xfer *x, const char *p, size_t n)
{
    size_t room = ABX_HTTPX_ERR_BODY_CAP > x->resp_body.len
                      ? ABX_HTTPX_ERR_BODY_CAP - x->resp_body.len
                      : 0;
    if (abx_buf_append(&x->resp_body, p, n < room ? n : room) != 0) {
        /* Out of memory: kept shorter, as over the cap. */
    }
}

static size_t on_write(char *p, size_t sz, size_t nm, void *ud)
{
    struct abx_http_xfer *x = ud;
    size_t n = sz * nm;

    if (x->status == 0)
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
    if (x->failed)
        return 0;
    abx_httpx_trace_body(x, p, n);
    if (x->divert) {
        keep_error_body(x, p, n);
        return n;
    }
    if (x->sink) {
        x->sink_fed = 1;
        if (x->sink(x->sink_ud, x->status, p, n) != 0) {
            fail(x, ABX_E_PROTOCOL, "reply rejected by its reader");
            return 0;
        }
        return x->failed ? 0 : n;
    }
    if (x->save_path && is_2xx(x->status)) {
        if (x->save_fp == NULL) {
            x->save_fp = fopen(x->tmp_path, "wb");
            if (x->save_fp == NULL) {
                fail(x, ABX_E_INVALID, "cannot write %s",
                     x->save_path);
                return 0;
            }
        }
        if (fwrite(p, 1, n, x->save_fp) != n) {
            fail(x, ABX_E_NO_SPACE, "cannot write %s (disk full?)",
                 x->save_path);
            return 0;
        }
        return n;
    }
    if (!is_2xx(x->status) && x->status != 0) {
        keep_error_body(x, p, n);
        return n;
    }
    if (abx_buf_append(&x->resp_body, p, n) != 0) {
        fail(x, ABX_E_PROTOCOL, "reply body is larger than the %zu-byte cap",
             x->max_body);
        return 0;
    }
    return n;
}

static size_t on_read(char *p, size_t sz, size_t nm, void *ud)
{
    struct abx_http_xfer *x = ud;
    size_t n = fread(p, 1, sz * nm, x->body_fp);
    if (n == 0 && ferror(x->body_fp))
        return CURL_READFUNC_ABORT;
    return n;
}

static int on_seek(void *ud, curl_off_t off, int origin)
{
    struct abx_http_xfer *x = ud;
    return fseeko(x->body_fp, (off_t)off, origin) == 0 ? CURL_SEEKFUNC_OK
                                                       : CURL_SEEKFUNC_FAIL;
}

static int has_header(const char *const *h, const char *name)
{
    size_t nl = strlen(name);
    for (; h && *h; h++)
        if (strncasecmp(*h, name, nl) == 0 && (*h)[nl] == ':')
            return 1;
    return 0;
}

static int build_headers(struct abx_http_xfer *x, const struct abx_http_req *r,
                         int has_body, struct abx_err *err)
{
    struct curl_slist *l;
    for (const char *const *h = r->headers; h && *h; h++) {
        /* A CR/LF would smuggle a header; the value is never echoed. */
        if (strpbrk(*h, "\r\n") != NULL || strchr(*h, ':') == NULL) {
            abx_err_set(err, ABX_E_INVALID, 0, "",
                        "%s: malformed request header", what_of(x));
            return -1;
        }
        if ((l = curl_slist_append(x->hdrs, *h)) == NULL)
            goto oom;
        x->hdrs = l;
    }
    /* No 100-continue round trip: our servers answer at once. */
    if ((l = curl_slist_append(x->hdrs, "Expect:")) == NULL)
        goto oom;
    x->hdrs = l;
    if (has_body && !has_header(r->headers, "Content-Type")) {
        l = curl_slist_append(x->hdrs, "Content-Type: application/octet-stream");
        if (l == NULL)
            goto oom;
        x->hdrs = l;
    }
    return 0;
oom:
    abx_err_set(err, ABX_E_SANDBOX, 0, "", "%s: out of memory", what_of(x));
    return -1;
}

/* A part streamed from a file: curl pulls it through these as the body
 * goes out (and seeks back for a retry), so nothing is loaded. */
static size_t part_read(char *p, size_t sz, size_t nm, void *ud)
{
    size_t n = fread(p, 1, sz * nm, ud);
    if (n == 0 && ferror((FILE *)ud))
        return CURL_READFUNC_ABORT;
    return n;
}

static int part_seek(void *ud, curl_off_t off, int origin)
{
    return fseeko(ud, (off_t)off, origin) == 0 ? CURL_SEEKFUNC_OK
                                                : CURL_SEEKFUNC_FAIL;
}

static void part_free(void *ud)
{
    fclose(ud);
}

/* Opens path (a regular file: its size goes in the part's length) and
 * hands it to mp, which then owns it. 0, or -1 with err. */
static int part_file(struct abx_http_xfer *x, curl_mimepart *mp,
                     const char *path, struct abx_err *err)
{
    struct stat st;
    FILE *fp = fopen(path, "rb");

    if (fp == NULL || fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "%s: cannot read %s: %s",
                    what_of(x), path,
                    fp ? "not a regular file" : strerror(errno));
        if (fp)
            fclose(fp);
        return -1;
    }
    if (curl_mime_data_cb(mp, (curl_off_t)st.st_size, part_read, part_seek,
                          part_free, fp) != CURLE_OK) {
        fclose(fp);
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "%s: out of memory",
                    what_of(x));
        return -1;
    }
    return 0;
}

static int build_mime(struct abx_http_xfer *x, const struct abx_http_req *r,
                      struct abx_err *err)
{
    x->mime = curl_mime_init(x->easy);
    if (x->mime == NULL)
        goto oom;
    for (size_t i = 0; i < r->nparts; i++) {
        const struct abx_http_part *pt = &r->parts[i];
        curl_mimepart *mp = curl_mime_addpart(x->mime);
        if (mp == NULL || curl_mime_name(mp, pt->name ? pt->name : "file"))
            goto oom;
        if (pt->path) {
            if (part_file(x, mp, pt->path, err) != 0)
                return -1;
        } else if (curl_mime_data(mp, pt->data ? pt->data : "",
                                  pt->data ? pt->len : 0) != CURLE_OK) {
            goto oom;
        }
        if (pt->filename && curl_mime_filename(mp, pt->filename) != CURLE_OK)
            goto oom;
        if (curl_mime_type(mp, pt->type ? pt->type
                                        : "application/octet-stream"))
            goto oom;
    }
    return curl_easy_setopt(x->easy, CURLOPT_MIMEPOST, x->mime) == CURLE_OK
               ? 0
               : -1;
oom:
    abx_err_set(err, ABX_E_SANDBOX, 0, "", "%s: out of memory", what_of(x));
    return -1;
}

static int open_body_file(struct abx_http_xfer *x, const char *path,
                          struct abx_err *err)
{
    struct stat st;
    x->body_fp = fopen(path, "rb");
    if (x->body_fp == NULL || fstat(fileno(x->body_fp), &st) != 0 ||
        !S_ISREG(st.st_mode)) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "%s: cannot read %s: %s",
                    what_of(x), path,
                    x->body_fp ? "not a regular file" : strerror(errno));
        return -1;
    }
    x->body_size = (curl_off_t)st.st_size;
    return 0;
}

static void set_host(struct abx_http_xfer *x)
{
    CURLU *u = curl_url();
    char *h = NULL, *port = NULL;
    snprintf(x->host, sizeof x->host, "?");
    if (u && curl_url_set(u, CURLUPART_URL, x->url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK) {
        if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) ==
            CURLUE_OK)
            snprintf(x->host, sizeof x->host, "%s:%s", h, port);
        else
            snprintf(x->host, sizeof x->host, "%s", h);
    }
    curl_free(h);
    curl_free(port);
    curl_url_cleanup(u);
}

static int set_method_and_body(struct abx_http_xfer *x,
                               const struct abx_http_req *r,
                               struct abx_err *err)
{
    CURL *e = x->easy;
    const char *m = x->method;
    int is_post = strcmp(m, "POST") == 0;

    if (r->body) {
        x->body = malloc(r->body_len ? r->body_len : 1);
        if (x->body == NULL)
            return -1;
        memcpy(x->body, r->body, r->body_len);
        x->body_len = r->body_len;
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
    } else if (r->body_path) {
        if (open_body_file(x, r->body_path, err) != 0)
            return -1;
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(e, CURLOPT_READDATA, x);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(e, CURLOPT_SEEKDATA, x);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, x->body_size);
    } else if (r->parts && r->nparts) {
        if (build_mime(x, r, err) != 0)
            return -1;
    } else if (strcmp(m, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        return 0;
    } else if (strcmp(m, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
        return 0;
    } else if (is_post) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
    }
    if (!is_post)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m);
    return 0;
}

struct abx_http_xfer *abx_httpx_new(const struct abx_http_req *r,
                                    const struct abx_http_cfg *cfg,
                                    CURLSH *share, struct abx_err *err)
{
    struct abx_http_xfer *x = calloc(1, sizeof *x);
    int nbodies = (r->body != NULL) + (r->body_path != NULL) +
                  (r->parts != NULL && r->nparts > 0);

    if (x == NULL) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "out of memory");
        return NULL;
    }
    x->max_body = r->max_body ? r->max_body : DEFAULT_MAX_BODY;
    abx_buf_init(&x->resp_body, x->max_body);
    abx_buf_init(&x->headers, ABX_HTTP_HEADERS_MAX);
    x->collect_headers = r->collect_headers;
    x->what = dup_str(r->what ? r->what : "http request");
    x->method = dup_str(r->method ? r->method : "GET");
    x->url = dup_str(r->url ? r->url : "");
    x->save_path = dup_str(r->save_path);
    x->timeout = r->timeout;
    x->idempotent = r->idempotent;
    x->no_retry = r->no_retry;
    x->max_retries = cfg->max_retries;
    x->sink = r->sink;
    x->sink_ud = r->sink_ud;
    if (!x->what || !x->method || !x->url || (r->save_path && !x->save_path))
        goto oom;
    if (r->url == NULL || r->url[0] == '\0' || nbodies > 1 ||
        strpbrk(x->method, " \r\n") != NULL) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "%s: %s", x->what,
                    nbodies > 1 ? "more than one request body given"
                                : "bad request (no URL or bad method)");
        goto fail;
    }
    if (x->save_path) {
        size_t n = strlen(x->save_path) + 32;
        if ((x->tmp_path = malloc(n)) == NULL)
            goto oom;
        snprintf(x->tmp_path, n, "%s.part%ld", x->save_path, (long)getpid());
    }
    set_host(x);
    if ((x->easy = curl_easy_init()) == NULL)
        goto oom;
    CURL *e = x->easy;
    if (curl_easy_setopt(e, CURLOPT_URL, x->url) != CURLE_OK) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "%s: malformed URL", x->what);
        goto fail;
    }
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_SHARE, share);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_USERAGENT, cfg->user_agent);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(cfg->connect_timeout * 1000));
    if (r->stall_timeout >= 0) {
        double st = r->stall_timeout > 0 ? r->stall_timeout : cfg->low_speed_time;
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, cfg->low_speed_limit);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, st < 1 ? 1L : (long)st);
    }
    if (r->timeout > 0)
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(r->timeout * 1000));
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    /* curl labels multipart bodies itself (with their boundary). */
    if (build_headers(x, r, r->body != NULL || r->body_path != NULL, err) != 0)
        goto fail;
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
    if (set_method_and_body(x, r, err) != 0) {
        if (err->cls == ABX_E_OK)
            goto oom;
        goto fail;
    }
    abx_httpx_trace_new(x, r);
    return x;
oom:
    abx_err_set(err, ABX_E_SANDBOX, 0, "", "%s: out of memory",
                x->what ? x->what : "http request");
fail:
    abx_httpx_free(x, 1);
    return NULL;
}

void abx_httpx_reset_attempt(struct abx_http_xfer *x)
{
    x->status = 0;
    x->divert = 0;
    x->result = CURLE_OK;
    x->errbuf[0] = '\0';
    x->content_type[0] = '\0';
    x->next_token[0] = '\0';
    abx_buf_reset(&x->resp_body);
    abx_buf_reset(&x->headers);
    abx_httpx_trace_reset(x);
    if (x->body_fp)
        rewind(x->body_fp);
    if (x->save_fp) {
        fclose(x->save_fp);
        x->save_fp = NULL;
        unlink(x->tmp_path);
    }
}

static void conclude_save(struct abx_http_xfer *x, int ok)
{
    if (x->save_fp) {
        if (fclose(x->save_fp) != 0 && ok) {
            fail(x, ABX_E_NO_SPACE, "cannot write %s (disk full?)",
                 x->save_path);
            ok = 0;
        }
        x->save_fp = NULL;
    } else if (ok) {
        /* An empty 2xx body still makes an (empty) file. */
        FILE *f = fopen(x->tmp_path, "wb");
        if (f == NULL || fclose(f) != 0) {
            fail(x, ABX_E_INVALID, "cannot write %s", x->save_path);
            ok = 0;
        }
    }
    if (ok && rename(x->tmp_path, x->save_path) != 0) {
        fail(x, ABX_E_INVALID, "cannot write %s", x->save_path);
        ok = 0;
    }
    if (!ok)
        unlink(x->tmp_path);
}

static enum abx_errclass curl_class(CURLcode rc)
{
    switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
        return ABX_E_TIMEOUT;
    case CURLE_ABORTED_BY_CALLBACK:
        return ABX_E_CANCELED;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_READ_ERROR:
        return ABX_E_INVALID;
    case CURLE_PARTIAL_FILE:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_TOO_MANY_REDIRECTS:
        return ABX_E_PROTOCOL;
    default:
        return ABX_E_CONNECTION;
    }
}

void abx_httpx_conclude(struct abx_http_xfer *x, int aborted)
{
    int ok = !aborted && !x->failed && x->result == CURLE_OK;

    x->state = ABX_HTTPX_DONE;
    if (x->save_path)
        conclude_save(x, ok && is_2xx(x->status));
    if (aborted && !x->failed) {
        x->failed = 1;
        abx_err_set(&x->err, ABX_E_CANCELED, x->status, "",
                    "%s: aborted before it completed (%s)", what_of(x),
                    x->host);
    }
    if (x->failed) {
        x->rc = -1;
        return;
    }
    if (x->result != CURLE_OK) {
        enum abx_errclass c = curl_class(x->result);
        const char *detail = x->errbuf[0] ? x->errbuf
                                          : curl_easy_strerror(x->result);
        if (x->result == CURLE_PARTIAL_FILE)
            abx_err_set(&x->err, c, x->status, "",
                        "%s: reply from %s was cut short: %s", what_of(x),
                        x->host, detail);
        else
            abx_err_set(&x->err, c, x->status, "", "%s: %s: %s",
                        what_of(x), x->host, detail);
        x->rc = -1;
        return;
    }
    x->rc = 0;
}

/* Header lines carry access tokens and the API key: wipe them before the
 * memory goes back to the allocator (no secret lingers in freed heap). */
static void wipe_headers(struct curl_slist *l)
{
    for (; l; l = l->next)
        if (l->data)
            explicit_bzero(l->data, strlen(l->data));
}

void abx_httpx_free(struct abx_http_xfer *x, int touch_curl)
{
    if (x == NULL)
        return;
    if (x->save_fp) {
        fclose(x->save_fp);
        unlink(x->tmp_path);
    }
    if (x->body_fp)
        fclose(x->body_fp);
    if (touch_curl) {
        if (x->easy)
            curl_easy_cleanup(x->easy);
        curl_mime_free(x->mime);
        wipe_headers(x->hdrs);
        curl_slist_free_all(x->hdrs);
    }
    abx_buf_free(&x->resp_body);
    abx_buf_free(&x->headers);
    abx_httpx_trace_free(x);
    free(x->method);
    free(x->url);
    free(x->what);
    free(x->save_path);
    free(x->tmp_path);
    free(x->body);
    free(x);
}
