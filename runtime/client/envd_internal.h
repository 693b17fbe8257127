/* Internals shared by envd*.c and codeint.c, and the parse entry points
 * the unit tests drive without a network. Not part of the public API. */
#ifndef ABX_ENVD_INTERNAL_H
#define ABX_ENVD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "connect.h"
#include "envd.h"
#include "errclass.h"
#include "http.h"

#define ABX_ENVD_QUEUE_DEFAULT ((size_t)256 * 1024 * 1024)
#define ABX_ENVD_MAX_MSG ((size_t)16 * 1024 * 1024)

/* base_url + path into out (reset first). 0 or -1. */
int abx_envd_url(struct abx_buf *out, const struct abx_endpoint *ep,
                 const char *path);
/* "?path=<p>[&username=<u>]" style query appended to out, every value
 * percent-encoded with nothing safe. name/value pairs, NULL-terminated;
 * a NULL value skips its pair. 0 or -1. */
int abx_envd_query(struct abx_buf *out, const char *const *pairs);
/* Builds headers (plus extra) or sets err (InvalidArgument). */
int abx_envd_headers(struct abx_headers *hb, const struct abx_endpoint *ep,
                     const char *user, const char *const *extra,
                     struct abx_err *err);
/* "Connect-Timeout-Ms: N" into out (s > 0). */
void abx_envd_timeout_header(char *out, size_t outlen, double s);
/* Unary call, with control over retries (read-only methods retry). */
int abx_envd_rpc_ex(const struct abx_endpoint *ep, const char *method,
                    const cJSON *req, const char *user, double timeout,
                    int idempotent, cJSON **resp, struct abx_err *err);
/* The same with the default timeout, taking req (freed whatever happens;
 * NULL means it could not be built: an out-of-memory error). resp may be
 * NULL to drop the reply. */
int abx_envd_call_json(const struct abx_endpoint *ep, const char *method,
                       cJSON *req, const char *user, int idempotent,
                       cJSON **resp, struct abx_err *err);
/* Fills extra[] (room for ctype, the protocol version, the deadline when
 * timeout > 0 (written into tmo) and a NULL) with the headers of a
 * Connect call; returns how many. */
size_t abx_envd_connect_headers(const char **extra, const char *ctype,
                                double timeout, char *tmo, size_t tmolen);
/* A non-200 Connect reply (error JSON in body) into err. */
void abx_envd_connect_error(struct abx_err *err, const char *what,
                            long status, const char *body, size_t len);
/* The reply body as a JSON object into *out, or a Protocol error. */
int abx_envd_parse_object(const struct abx_http_resp *resp, const char *what,
                          cJSON **out, struct abx_err *err);

/* Takes resp[key] (absent: []) as *out and frees resp; a Protocol error
 * naming what when it is not an array. */
int abx_envd_take_array(cJSON *resp, const char *key, const char *what,
                        cJSON **out, struct abx_err *err);

/* One plain envd HTTP request being prepared: its URL, its headers and
 * the request pointing at both. init, prepare, adjust req, send, free. */
struct abx_envd_call {
    struct abx_buf url;
    struct abx_headers hb;
    struct abx_http_req req;
};
void abx_envd_call_init(struct abx_envd_call *c);
/* url = base_url + path [+ query pairs, as abx_envd_query], path being
 * "/files" style or a Connect method "service/Method" (base_url + '/' +
 * method); headers for
 * ep, user (NULL = no Basic auth) and extra; req gets method, url,
 * headers, what and timeout = ep->request_timeout. 0, or -1 with err
 * ("<what>: URL too long", or a header problem). */
int abx_envd_call_prepare(struct abx_envd_call *c,
                          const struct abx_endpoint *ep, const char *method,
                          const char *path, const char *const *query,
                          const char *user, const char *const *extra,
                          const char *what, struct abx_err *err);
void abx_envd_call_free(struct abx_envd_call *c);  /* after init: always */

/* ---- stream core (envd_stream.c) ------------------------------------- */
/* One decoded event waiting for its reader. kind is the consumer's. */
struct abx_envd_qnode {
    struct abx_envd_qnode *next;
    int kind;
    int exit_code;
    int exited;
    char status[128];
    char error[512];
    size_t len;
    char data[];                /* len bytes + NUL */
};

struct abx_envd_stream;
/* Called for every message envelope (parsed JSON object). Returns 0,
 * or -1 with err set (the stream then fails). */
typedef int (*abx_envd_msg_fn)(struct abx_envd_stream *s, const cJSON *msg,
                               struct abx_err *err);

struct abx_envd_stream {
    struct abx_connect_decoder dec;
    struct abx_buf errbody;     /* body of a non-200 answer */
    long status;
    int ended;                  /* end-of-stream envelope seen */
    int done;                   /* no more events will come */
    struct abx_err err;         /* why it is done (cls OK: clean end) */
    char what[160];
    abx_envd_msg_fn on_msg;
    int started;                /* the consumer saw its start event */
    uint32_t pid;
    int got_end;                /* process streams: end event seen */
    struct abx_envd_qnode *head, *tail;
    size_t qbytes, qmax;
    struct abx_http_xfer *x;
};

void abx_envd_stream_init(struct abx_envd_stream *s, abx_envd_msg_fn fn,
                          const char *what, size_t qmax);
/* Frees queue, buffers and aborts the transfer if still running. */
void abx_envd_stream_free(struct abx_envd_stream *s);
/* Bytes of the response body as they arrive. 0, or -1 once the stream
 * failed (s->err says why). */
int abx_envd_stream_feed(struct abx_envd_stream *s, long status,
                         const char *p, size_t n);
/* The transfer is over: rc/terr are what abx_http_finish returned,
 * status the final HTTP status. Sets s->done and s->err. */
void abx_envd_stream_eof(struct abx_envd_stream *s, int rc,
                         const struct abx_err *terr, long status);
/* Queues a node (takes it); -1 with err when over the cap. */
int abx_envd_stream_push(struct abx_envd_stream *s,
                         struct abx_envd_qnode *n, struct abx_err *err);
struct abx_envd_qnode *abx_envd_qnode_new(int kind, const void *data,
                                          size_t len);
/* Starts the POST of one request envelope as a stream. 0 or -1. */
int abx_envd_stream_open(struct abx_envd_stream *s,
                         const struct abx_endpoint *ep, const char *method,
                         const cJSON *req, const char *user, double timeout,
                         struct abx_err *err);
/* Drives every transfer for up to slice s (returning early on
 * activity) and polls the cancel hook. 1 x is done, 0 not yet, -1
 * canceled (err set). */
int abx_envd_drive(struct abx_http_xfer *x, double slice, struct abx_err *err);
/* Next node (caller frees it with free()): 1, 0 `until` reached, -1
 * stream done with nothing queued (err = s->err, or cls OK for a clean
 * end) or canceled. */
int abx_envd_stream_next(struct abx_envd_stream *s,
                         struct abx_envd_qnode **node, double until,
                         struct abx_err *err);
/* Waits (driving every transfer) until the consumer's start event or
 * the end; deadline from timeout (s, 0 = none). 0 or -1 with err. */
int abx_envd_stream_wait_start(struct abx_envd_stream *s, double timeout,
                               struct abx_err *err);

/* Message parsers (envd_proc.c, envd_fs.c). */
int abx_envd_proc_msg(struct abx_envd_stream *s, const cJSON *msg,
                      struct abx_err *err);
int abx_envd_watch_msg(struct abx_envd_stream *s, const cJSON *msg,
                       struct abx_err *err);
/* Watch event type name ("create"...) for a kind, NULL if unknown. */
const char *abx_envd_watch_type_name(int kind);

/* Signed URL with an absolute expiration (unix s, < 0 none). */
int abx_envd_file_url_at(const struct abx_endpoint *ep, const char *path,
                         const char *op, const char *user,
                         long long expiration, char *out, size_t outlen,
                         struct abx_err *err);

/* ---- NDJSON (codeint.c) ---------------------------------------------- */
struct abx_exec_state {
    struct abx_buf line;        /* the incomplete last line */
    struct abx_buf errbody;     /* non-200 body */
    long status;
    cJSON *out;                 /* the result being built */
    int finished;               /* end_of_execution seen */
    int failed;
    struct abx_err err;
    int callbacks;              /* queue lines for on_output */
    /* stdout/stderr lines waiting for the callback (outside curl). */
    cJSON *pending;             /* array of [stream, text] */
};
int abx_exec_state_init(struct abx_exec_state *st);
void abx_exec_state_free(struct abx_exec_state *st);
/* Bytes as they arrive: complete lines are parsed at once. 0 or -1. */
int abx_exec_feed(struct abx_exec_state *st, long status, const char *p,
                  size_t n);
/* Parses one line (without '\n'). 0 or -1 (st->err). */
int abx_exec_line(struct abx_exec_state *st, const char *p, size_t n);

#endif
