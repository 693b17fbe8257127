/* Internals shared by http.c (engine: pump, retries, outcome) and
 * http_xfer.c (one transfer: curl easy handle, callbacks, files). Not
 * part of the public interface. */
#ifndef ABX_HTTP_INT_H
#define ABX_HTTP_INT_H

#include <stdio.h>

#include <curl/curl.h>

#include "http.h"

/* Cap on an error body we keep while a body goes elsewhere (sink,
 * save_path, or an attempt that will be retried). */
#define ABX_HTTPX_ERR_BODY_CAP ((size_t)64 * 1024)

enum abx_httpx_state { ABX_HTTPX_RUNNING, ABX_HTTPX_BACKOFF, ABX_HTTPX_DONE };

struct abx_http_xfer {
    struct abx_http_xfer *prev, *next;   /* engine list */
    unsigned gen;                        /* engine generation (fork) */
    CURL *easy;
    struct curl_slist *hdrs;
    curl_mime *mime;
    char *method, *url, *what, *save_path, *tmp_path;
    char host[300];                      /* "host:port" for messages */
    char *body;
    size_t body_len;
    FILE *body_fp;                       /* body_path, streamed */
    curl_off_t body_size;
    FILE *save_fp;
    double timeout;
    int idempotent, no_retry, collect_headers;
    abx_http_sink sink;
    void *sink_ud;
    size_t max_body;

    enum abx_httpx_state state;
    double retry_at, t_attempt, seconds;
    int attempts, max_retries;
    long status;        /* this attempt, once its headers arrived */
    int sink_fed;       /* the sink saw bytes: never retried after */
    int divert;         /* this attempt's body is held back (retryable) */
    int failed;         /* err set by the sink, a cap or a file error */
    int rc;             /* outcome once DONE: 0 or -1 (err) */
    CURLcode result;
    struct abx_err err;
    struct abx_buf resp_body;
    char content_type[128];
    char next_token[1024];
    struct abx_buf headers;             /* collect_headers only */
    char errbuf[CURL_ERROR_SIZE];
    struct abx_httpx_trace *trace;      /* NULL unless a test is traced */
};

/* Builds a transfer (not yet added to a multi). NULL with err set. */
struct abx_http_xfer *abx_httpx_new(const struct abx_http_req *req,
                                    const struct abx_http_cfg *cfg,
                                    CURLSH *share, struct abx_err *err);
/* Per-attempt state back to zero before the transfer is (re)added. */
void abx_httpx_reset_attempt(struct abx_http_xfer *x);
/* Whether status would be retried on this transfer, retries left aside. */
int abx_httpx_status_retryable(const struct abx_http_xfer *x, long status);
/* Final outcome: closes/renames/unlinks the save file, sets rc and err. */
void abx_httpx_conclude(struct abx_http_xfer *x, int aborted);
/* Frees everything; touch_curl = 0 leaks the curl handles (they belong
 * to a parent process's engine after fork). */
void abx_httpx_free(struct abx_http_xfer *x, int touch_curl);

/* http_trace.c: the exchange into the running test's trace (trace.h).
 * _new keeps what the request says (nothing when no test is traced);
 * _header and _body tee the reply; _emit adds the attempt's event. */
void abx_httpx_trace_new(struct abx_http_xfer *x, const struct abx_http_req *r);
void abx_httpx_trace_reset(struct abx_http_xfer *x);
void abx_httpx_trace_header(struct abx_http_xfer *x, const char *p, size_t n);
void abx_httpx_trace_body(struct abx_http_xfer *x, const char *p, size_t n);
void abx_httpx_trace_headers_done(struct abx_http_xfer *x);
void abx_httpx_trace_emit(struct abx_http_xfer *x, const char *url, const char *outcome,
                          double retry_in);
void abx_httpx_trace_free(struct abx_http_xfer *x);
#endif
