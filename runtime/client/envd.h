/* envd client (docs/protocol.md "Data plane", "envd REST", "Connect
 * RPC"): the data-plane address of a sandbox, Connect JSON unary calls,
 * process and watch streams parsed incrementally as bytes arrive,
 * filesystem RPCs, /files upload and download streamed from/to local
 * files, signed URLs and /health. Every request carries E2b-Sandbox-Id /
 * E2b-Sandbox-Port and, for secure sandboxes, X-Access-Token; users go
 * in Basic auth.
 * Errors: errclass.h (Connect codes and envd HTTP statuses mapped as the
 * SDKs do; a 200 stream that ends with an error envelope and a plain
 * HTTP error before the stream are both handled). */
#ifndef ABX_ENVD_H
#define ABX_ENVD_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "api.h"
#include "buf.h"
#include "envd_version.h"
#include "errclass.h"

/* How to reach one port of one sandbox. */
struct abx_endpoint {
    char base_url[640];      /* scheme://host[:port], no trailing '/' */
    char direct_url[640];    /* scheme://<port>-<id>.<domain> ("" without a
                                domain): needs no routing headers */
    char sandbox_id[128];
    int port;
    int header_routing;      /* send E2b-Sandbox-Id/Port (always harmless) */
    char *access_token;      /* X-Access-Token (malloc'd) or NULL */
    double request_timeout;  /* unary calls, s */
    char *traffic_token;     /* E2B-Traffic-Access-Token (malloc'd) or
                                NULL: the proxy's token for sandboxes
                                without public traffic */
    struct abx_envd_version ver;  /* the sandbox's envdVersion: what the
                                     calls below may ask of envd */
};
/* base_url: platform sandbox_url if set; else
 * https://<port>-<id>.<domain> with domain = info->domain or p->domain
 * (http:// when that domain is localhost[:N] or an IP literal, as abx-local
 * serves). The tokens are copied; info->envd_version is parsed into
 * ep->ver (a bad one is kept: the gated calls then raise). 0 or -1
 * (err: too long). */
int abx_endpoint_init(struct abx_endpoint *ep, const struct abx_platform *p,
                      const struct abx_sandbox_info *info, int port,
                      struct abx_err *err);
void abx_endpoint_free(struct abx_endpoint *ep);  /* idempotent */
/* "<port>-<id>.<domain>" (get_host). 0 or -1. */
int abx_endpoint_host(const struct abx_platform *p,
                      const struct abx_sandbox_info *info, int port,
                      char *out, size_t outlen);
/* Headers for a request to ep (routing, token, optional Basic user,
 * extra lines), as a NULL-terminated array inside hb (freed with it). */
struct abx_headers {
    char *lines[16];
    size_t n;
};
int abx_headers_build(struct abx_headers *hb, const struct abx_endpoint *ep,
                      const char *user, const char *const *extra);
void abx_headers_free(struct abx_headers *hb);

/* GET /health: 1 healthy (2xx), 0 not running (502), -1 error. */
int abx_envd_health(const struct abx_endpoint *ep, struct abx_err *err);

/* Unary Connect JSON call to /<service>/<method> (e.g.
 * "filesystem.Filesystem/Stat"). *resp = parsed reply (caller frees).
 * timeout 0 = ep->request_timeout. */
int abx_envd_rpc(const struct abx_endpoint *ep, const char *method,
                 const cJSON *req, const char *user, double timeout,
                 cJSON **resp, struct abx_err *err);

/* ---- processes -------------------------------------------------------- */
struct abx_proc_cfg {
    const char *cmd;            /* e.g. "/bin/bash" */
    const char *const *args;    /* NULL-terminated, may be NULL */
    const cJSON *envs;          /* object, may be NULL */
    const char *cwd;            /* NULL = not sent */
    const char *user;           /* NULL = default user (no Basic auth;
                                   "user" below envd 0.4.0) */
    const char *tag;            /* NULL = none */
    int stdin_open;             /* "stdin": true/false (always sent) */
    int stdin_given;            /* the caller chose stdin_open: false then
                                   needs envd 0.3.0 (older ones keep stdin
                                   open and the SDK refuses to pretend) */
    double timeout;             /* Connect-Timeout-Ms = process lifetime;
                                   0 = none */
};

enum abx_proc_ev_type {
    ABX_PROC_STDOUT = 1,
    ABX_PROC_STDERR,
    ABX_PROC_PTY,
    ABX_PROC_END,
};
struct abx_proc_event {
    enum abx_proc_ev_type type;
    const char *data;           /* raw bytes (valid until the next call) */
    size_t len;
    int exit_code;              /* END: exitCode (absent = 0) */
    int exited;
    char status[128];
    char error[512];            /* "" if none */
};

/* A Start or Connect stream. Events are decoded as bytes arrive (also
 * while the caller waits on other requests) and queued, capped at
 * queue_max bytes (default 256 MiB; beyond it the stream fails with a
 * Protocol error naming the cap). */
struct abx_proc;
/* Returns once the start event arrived (pid known), or NULL with err:
 * plain HTTP error, end-of-stream error (e.g. invalid_argument for a bad
 * cwd), a first event that is not start, a truncated stream. */
struct abx_proc *abx_proc_start(const struct abx_endpoint *ep,
                                const struct abx_proc_cfg *cfg,
                                struct abx_err *err);
struct abx_proc *abx_proc_connect(const struct abx_endpoint *ep,
                                  uint32_t pid, double timeout,
                                  struct abx_err *err);
uint32_t abx_proc_pid(const struct abx_proc *pr);
/* Next event: 1 (ev filled), 0 the time `until` (abx_http_now based,
 * 0 = none) came first, -1 error: the stream failed (Connect error
 * mapped: deadline_exceeded -> Timeout), or ended without an end event
 * ("Command ended without an end event"). After END, returns -1 with
 * code "ended". */
int abx_proc_next(struct abx_proc *pr, struct abx_proc_event *ev,
                  double until, struct abx_err *err);
/* Closes the stream without killing the process (disconnect);
 * idempotent, NULL ok. */
void abx_proc_close(struct abx_proc *pr);

/* 1 signalled, 0 no such process (not_found), -1 error. sig 9 or 15. */
int abx_envd_signal(const struct abx_endpoint *ep, uint32_t pid, int sig,
                    struct abx_err *err);
int abx_envd_send_stdin(const struct abx_endpoint *ep, uint32_t pid,
                        const void *data, size_t len, struct abx_err *err);
int abx_envd_close_stdin(const struct abx_endpoint *ep, uint32_t pid,
                         struct abx_err *err);
/* *out = the "processes" array (caller frees; [] when none). */
int abx_envd_proc_list(const struct abx_endpoint *ep, cJSON **out,
                       struct abx_err *err);

/* ---- filesystem RPCs (paths resolved by envd: relative = user HOME) -- */
/* *entry = EntryInfo object (caller frees). */
int abx_envd_stat(const struct abx_endpoint *ep, const char *path,
                  const char *user, cJSON **entry, struct abx_err *err);
/* 1 exists, 0 not found, -1 error. */
int abx_envd_exists(const struct abx_endpoint *ep, const char *path,
                    const char *user, struct abx_err *err);
/* *entries = array of EntryInfo, UNSPECIFIED types dropped. depth >= 1. */
int abx_envd_list(const struct abx_endpoint *ep, const char *path,
                  unsigned depth, const char *user, cJSON **entries,
                  struct abx_err *err);
/* 1 created, 0 already existed, -1 error. */
int abx_envd_make_dir(const struct abx_endpoint *ep, const char *path,
                      const char *user, struct abx_err *err);
int abx_envd_move(const struct abx_endpoint *ep, const char *src,
                  const char *dst, const char *user, cJSON **entry,
                  struct abx_err *err);
int abx_envd_remove(const struct abx_endpoint *ep, const char *path,
                    const char *user, struct abx_err *err);

/* WatchDir stream: returns after the start event. */
struct abx_watch;
struct abx_fs_event {
    char name[4096];            /* relative to the watched dir */
    char type[16];              /* "create" "write" "remove" "rename" "chmod" */
};
struct abx_watch *abx_envd_watch(const struct abx_endpoint *ep,
                                 const char *path, int recursive,
                                 const char *user, double timeout,
                                 struct abx_err *err);
/* 1 event, 0 until reached, -1 error/stream ended. Keepalives skipped. */
int abx_watch_next(struct abx_watch *w, struct abx_fs_event *ev,
                   double until, struct abx_err *err);
void abx_watch_close(struct abx_watch *w);  /* idempotent, NULL ok */

/* ---- /files ----------------------------------------------------------- */
/* Whole file into out (capped by out->max). */
int abx_envd_read(const struct abx_endpoint *ep, const char *path,
                  const char *user, struct abx_buf *out, struct abx_err *err);
/* Streamed to local_path (temp file + rename; nothing left on error). */
int abx_envd_download(const struct abx_endpoint *ep, const char *path,
                      const char *user, const char *local_path,
                      struct abx_err *err);
/* Multipart write of one buffer; *info = first WriteInfo (may be NULL). */
int abx_envd_write(const struct abx_endpoint *ep, const char *path,
                   const char *user, const void *data, size_t len,
                   cJSON **info, struct abx_err *err);
struct abx_write_item {
    const char *path;
    const void *data;
    size_t len;
};
/* One multipart request, one part per item (filename = full path);
 * *infos = array of WriteInfo. */
int abx_envd_write_many(const struct abx_endpoint *ep,
                        const struct abx_write_item *items, size_t n,
                        const char *user, cJSON **infos,
                        struct abx_err *err);
/* Upload streamed from local_path (never loaded): the body is
 * application/octet-stream from envd 0.5.7, one multipart part (filename
 * = path) before, as the SDK falls back. */
int abx_envd_upload(const struct abx_endpoint *ep, const char *local_path,
                    const char *path, const char *user, cJSON **info,
                    struct abx_err *err);
/* Signed /files URL (docs/protocol.md "Signed URLs") on the direct
 * (host-form) URL. op "read" or "write"; expires_in s (< 0: no
 * expiration). Unsigned when the sandbox has no token (expires_in >= 0
 * is then InvalidArgument). The signature and the whole signed URL join
 * the masker. 0 or -1. */
int abx_envd_file_url(const struct abx_endpoint *ep, const char *path,
                      const char *op, const char *user, long expires_in,
                      char *out, size_t outlen, struct abx_err *err);

#endif
