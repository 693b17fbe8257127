/* HTTP transport on libcurl, one engine per process.
 *
 * The engine is a curl multi handle plus a share handle (connection cache,
 * DNS, TLS sessions), so calls reuse connections. Every transfer is driven
 * by the same pump: while a caller waits for one transfer, the others in
 * flight (the streams of background commands, concurrent deletes) make
 * progress and deliver their bytes to their sinks. The API is synchronous
 * for callers (abx_http_do) with an asynchronous core (start / wait /
 * finish) for streams and concurrent calls.
 *
 * Retries (jittered exponential backoff, at most cfg.max_retries): a
 * connect failure (nothing was sent) and a 429 are retried for every
 * request; 502/503 only when req->idempotent; nothing once a sink has
 * received body bytes. Timeouts: connect, low-speed, and req->timeout
 * for the whole transfer.
 *
 * --trace-http prints one line per attempt through the masker:
 * "http: POST <url> -> 201 12.3 ms" with every query value named
 * signature masked. Headers are never printed, by trace or by errors.
 *
 * Not thread-safe: one thread per process drives the engine (workers are
 * processes). After fork(), the child calls abx_http_after_fork(). */
#ifndef ABX_HTTP_H
#define ABX_HTTP_H

#include <stddef.h>

#include "buf.h"
#include "errclass.h"

struct abx_http_cfg {
    double connect_timeout;    /* s; default 10 */
    double low_speed_time;     /* s below low_speed_limit = stalled; 60 */
    long low_speed_limit;      /* bytes/s; 1 */
    int max_retries;           /* default 3 */
    double backoff_base;       /* s; first delay ~base, doubling; 0.2 */
    double backoff_max;        /* s; 5 */
    int trace;                 /* --trace-http */
    const char *user_agent;    /* default "abx-e2e/<version>" */
};

/* Process-wide settings; cfg fields left 0 keep their defaults. */
void abx_http_configure(const struct abx_http_cfg *cfg);
/* Cancellation: the pump calls fn (if set) between waits of at most
 * 100 ms; non-zero aborts every wait with ABX_E_CANCELED ("interrupted")
 * or ABX_E_TIMEOUT when fn returns 2 ("test deadline reached"). */
void abx_http_set_cancel(int (*fn)(void));
/* In a forked child: forget the parent's engine (its sockets stay the
 * parent's); the next call creates a fresh one. */
void abx_http_after_fork(void);
/* Frees the engine and every transfer left (end of process). */
void abx_http_shutdown(void);

/* One multipart/form-data part: data in memory, or streamed from path. */
struct abx_http_part {
    const char *name;        /* form field, e.g. "file" */
    const char *filename;    /* may be NULL */
    const char *type;        /* may be NULL (application/octet-stream) */
    const void *data;
    size_t len;
    const char *path;        /* if set (a regular file), data/len are
                                ignored and the file is read as the body
                                goes out, never loaded whole */
};

/* Body sink: called with each piece of the response body (any status:
 * check it). Returning non-zero aborts the transfer with ABX_E_PROTOCOL
 * unless the sink set its own error via abx_http_xfer_fail. */
typedef int (*abx_http_sink)(void *ud, long status, const char *p, size_t n);

struct abx_http_req {
    const char *method;                /* NULL = GET */
    const char *url;
    const char *const *headers;        /* "Name: value", NULL-terminated */
    /* Request body: at most one of these three. */
    const void *body;
    size_t body_len;
    const char *body_path;             /* streamed from a file, not loaded */
    const struct abx_http_part *parts; /* multipart/form-data */
    size_t nparts;
    double timeout;                    /* whole transfer, s; 0 = none */
    double stall_timeout;              /* s below cfg.low_speed_limit
                                          before the transfer is dropped;
                                          0 = cfg.low_speed_time, < 0 =
                                          never (idle streams) */
    int idempotent;                    /* allows retries on 502/503 */
    int no_retry;                      /* no retries at all */
    /* Response body: to sink, else to save_path (2xx only; written to
     * a temporary file then renamed, so no half file is left), else
     * collected into resp->body up to max_body (default 16 MiB; more is
     * an ABX_E_PROTOCOL error naming the cap). */
    abx_http_sink sink;
    void *sink_ud;
    const char *save_path;
    size_t max_body;
    const char *what;                  /* for messages: "create sandbox" */
    int collect_headers;               /* fill resp->headers (opt-in) */
};

/* Cap on the reply headers collected for req->collect_headers; more is
 * an ABX_E_PROTOCOL error naming the cap. */
#define ABX_HTTP_HEADERS_MAX ((size_t)64 * 1024)

struct abx_http_resp {
    long status;              /* 0 if no response was received */
    struct abx_buf body;      /* collected body (see req) */
    char content_type[128];
    char next_token[1024];    /* X-Next-Token, "" if absent */
    /* Only with req->collect_headers: the reply headers of the final
     * response, one "name: value\n" line each in arrival order, names
     * lower-case, values trimmed (repeats kept as separate lines). */
    struct abx_buf headers;
    double seconds;           /* last attempt */
    int attempts;
};

void abx_http_resp_init(struct abx_http_resp *r);
/* Adds one raw reply header line (as curl's header callback gets it) to
 * out as "name: value\n". Status lines, the blank line, lines that are
 * not "token: value" and lines with NUL bytes are skipped; an obs-fold
 * continuation joins the previous value. 0, or -1 when out's cap would
 * be exceeded (out unchanged). */
int abx_http_header_collect(struct abx_buf *out, const char *line, size_t n);
void abx_http_resp_free(struct abx_http_resp *r);

/* Synchronous call with retries. 0 when a response arrived (any status:
 * the caller maps non-2xx), -1 on transport failure (err: Connection,
 * Timeout, Canceled, Protocol, naming req->what and the host). */
int abx_http_do(const struct abx_http_req *req, struct abx_http_resp *resp,
                struct abx_err *err);

/* Asynchronous core. _start copies everything in req it needs (url,
 * headers, in-memory body, parts descriptors), so req may go away. */
struct abx_http_xfer;
struct abx_http_xfer *abx_http_start(const struct abx_http_req *req,
                                     struct abx_err *err);
/* Drives every transfer until x is done or the monotonic time `until`
 * (abx_http_now() based; 0 = no limit). 1 done, 0 time reached, -1
 * canceled (err set). */
int abx_http_wait(struct abx_http_xfer *x, double until, struct abx_err *err);
/* Drives every transfer once, waiting up to max_wait s for activity.
 * Returns the number of transfers still running. */
int abx_http_pump(double max_wait);
int abx_http_done(const struct abx_http_xfer *x);
/* Status once the headers arrived (0 before). */
long abx_http_status(const struct abx_http_xfer *x);
/* Lets a sink fail its transfer with a precise error. */
void abx_http_xfer_fail(struct abx_http_xfer *x, const struct abx_err *err);
/* Collects the outcome (as abx_http_do) and frees x; aborts it first if
 * it is still running. x may be NULL (returns -1, err untouched). */
int abx_http_finish(struct abx_http_xfer *x, struct abx_http_resp *resp,
                    struct abx_err *err);

/* Waits for x (from abx_http_start, NULL: returns -1 with err as the
 * start left it) and collects it: abx_http_do's second half. */
int abx_http_complete(struct abx_http_xfer *x, struct abx_http_resp *resp,
                      struct abx_err *err);

double abx_http_now(void);    /* monotonic seconds */
/* Asks the cancel hook: 1 with err set (Canceled, or Timeout for 2) if
 * the run is being stopped, else 0. */
int abx_http_check_cancel(struct abx_err *err);
/* Waits s seconds while driving the transfers in flight; 0, or -1 with
 * err if the cancel hook fired meanwhile. */
int abx_http_sleep(double s, struct abx_err *err);

/* URL helpers. Percent-encodes everything but RFC 3986 unreserved bytes
 * (E2B's rule for signed URLs and metadata values). 0 or -1 (cap). */
int abx_url_escape(struct abx_buf *out, const char *s, size_t len);
/* Copies url into out with the value of every query parameter named
 * signature (or ending in _token / token) replaced by [MASKED]. */
void abx_url_redact(const char *url, char *out, size_t outlen);

#endif
