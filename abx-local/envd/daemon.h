/* abx-envd internals shared between its files (one concern per file):
 * sbx_config.c (config file), compat.c (its `compat` object), users.c (users,
 * Basic auth, paths), router.c (MHD front, routing, auth, small REST
 * endpoints), reply.c (replies every handler queues), files.c (GET /files,
 * /files access), download.c (its body), upload.c (POST /files), meta.c
 * (file metadata), rpc.c (Connect framing and calls), stream.c (streamed
 * responses), proc.c / proc_rpc.c (process.Process), fs_rpc.c / entry.c /
 * watch.c (filesystem.Filesystem). The router uses the handlers, handlers
 * use reply.c and rpc.c, never the other way. */
#ifndef ABXL_ENVD_H
#define ABXL_ENVD_H

#include <cjson/cJSON.h>
#include <limits.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "connect.h"

/* ---- sbx_config.c ---- */
struct abxl_envd_config {
    char *sandbox_id;
    char *template_id;
    char *access_token;  /* NULL: not a secure sandbox */
    char *default_user;  /* "root" when the config names none */
    cJSON *env_vars;     /* object; always set (maybe empty) */
    cJSON *start_env_vars; /* the start command's, instead of env_vars; NULL: those */
    char *start_cmd;     /* NULL: no template start command */
    char *start_user;
    char *start_cwd;
    long disk_mb;        /* the sandbox's disk, for ENOSPC's message; 0: unknown */
};

extern struct abxl_envd_config abxl_envd_cfg;

int abxl_envd_config_load(const char *file, char *err, size_t errlen);
/* As pid 1 (init.c): forks, returns in the child (envd), reaps in the parent. */
void abxl_envd_init_if_pid1(void);
/* caps.c: the bounding set becomes envd's own capabilities, CAP_SETPCAP
 * (given for this) dropped; a no-op without CAP_SETPCAP. 0, or -1. */
int abxl_envd_bound_caps(char *err, size_t errlen);

/* ---- compat.c: the envd abx-envd imitates (config.json `compat`) ---- */
struct abxl_envd_compat {
    char version[32];          /* reported over HTTP (X-Envd-Version) */
    int octet_upload;          /* POST /files with a non-multipart body */
    int gzip;                  /* Content-/Accept-Encoding gzip on /files */
    int file_metadata;         /* X-Metadata-* <-> user.e2b.* xattrs */
    int watch_include_entry;   /* includeEntry on watches honoured */
    int watch_network_mounts;  /* allowNetworkMounts on watches honoured */
    int proto_codec;           /* 0: proto requests refused with HTTP 400 */
    int signed_urls;           /* a signature stands in for X-Access-Token */
    int sudo;                  /* the sudo service (sudo.c) runs */
    int64_t keepalive_default_s;
    int64_t keepalive_max_s;   /* 0: requested intervals are not clamped */
    int64_t upload_max_bytes;  /* a POST /files body above it: 413; 0 none */
    /* Details no cloud promised, which abx-local's --vary draws: */
    int sandbox_id_env;        /* E2B_SANDBOX_ID/E2B_TEMPLATE_ID set for commands */
    int go_exit_text;          /* Go's "exit status N"/"signal: killed", exit -1 */
    int proc_list_full;        /* process.List entries carry envs and cwd */
    int64_t denied_status;     /* no valid token or signature: 401, or a gateway's 403 */
    int watch_twice;           /* each watch event delivered twice */
    int watch_rename_to;       /* a rename: one RENAME naming the new name */
    int watch_subdirs_late;    /* a new folder watched 0.3 s after its CREATE */
    int stdin_refused_invalid; /* input without stdin: invalid_argument, not internal */
    int64_t umask;             /* envd's, so of all it and its commands create */
};

extern struct abxl_envd_compat abxl_envd_compat;

/* Reads cfg's `compat` (absent: defaults kept). 0, or -1 with err naming
 * the bad member. */
int abxl_envd_compat_load(const cJSON *cfg, char *err, size_t errlen);

/* ---- users.c ---- */
#define ENVD_MAX_GROUPS 64
struct abxl_envd_user {
    char name[64];
    uid_t uid;
    gid_t gid;
    char home[PATH_MAX];
    gid_t groups[ENVD_MAX_GROUPS];
    int ngroups;
};

/* 0, or -1 with a message naming the problem in err. */
int abxl_envd_user_lookup(const char *name, struct abxl_envd_user *u, char *err,
                     size_t errlen);
/* Resolves a request path for user u (docs/protocol.md "Users and
 * paths"): "~" and relative paths are under the user's home, the result
 * is cleaned. */
int abxl_envd_path_resolve(const char *in, const struct abxl_envd_user *u, char *out,
                      size_t outlen, char *err, size_t errlen);
/* mkdir -p of the parents of path (or of path itself with self=1), new
 * directories 0755 chowned to u. 0 or -1 (errno set). */
int abxl_envd_mkdirs(const char *path, int self, const struct abxl_envd_user *u);

/* ---- sudo.c ---- */
/* Listens on ABXL_SUDO_SOCKET for the sandbox's sudo. 0, or -1 (err). */
int abxl_envd_sudo_start(char *err, size_t errlen);

/* ---- router.c ---- */
int abxl_envd_http_start(const char *addr, unsigned port, char *err,
                    size_t errlen);
/* Closes the listener and every connection (waits for their threads). */
void abxl_envd_http_stop(void);

/* ---- reply.c ---- */
/* Queues a {"code":N,"message":...} REST error. */
enum MHD_Result abxl_envd_reply_error(struct MHD_Connection *c, unsigned status,
                                 const char *msg);
enum MHD_Result abxl_envd_reply_json(struct MHD_Connection *c, unsigned status,
                                const char *content_type, const char *body,
                                size_t len);
const char *abxl_envd_header(struct MHD_Connection *c, const char *name);

/* ---- files.c ---- */
const char *abxl_envd_query(struct MHD_Connection *c, const char *name);
/* validateSigning of a /files request (op "read"/"write"): 0, or an HTTP
 * status with msg set. */
unsigned abxl_envd_files_signing(struct MHD_Connection *c, const char *op,
                                char *msg, size_t msglen);
/* The username parameter's user, else the default one: 0 or 401 (msg). */
unsigned abxl_envd_files_user(struct MHD_Connection *c, struct abxl_envd_user *u,
                             char *msg, size_t msglen);
/* GET /files: queues the whole answer. */
enum MHD_Result abxl_envd_files_get(struct MHD_Connection *c);

/* ---- upload.c ---- */
struct abxl_envd_upload;
/* POST /files in three steps, as MHD delivers the body. begin returns NULL
 * on OOM; errors are kept inside and reported by finish. */
struct abxl_envd_upload *abxl_envd_upload_begin(struct MHD_Connection *c);
void abxl_envd_upload_data(struct abxl_envd_upload *up, const char *data, size_t n);
/* 1 once the upload is known to fail (its answer can go out early). */
int abxl_envd_upload_failed(const struct abxl_envd_upload *up);
enum MHD_Result abxl_envd_upload_finish(struct abxl_envd_upload *up,
                                   struct MHD_Connection *c);
void abxl_envd_upload_free(struct abxl_envd_upload *up);

/* ---- download.c ---- */
struct stat;
/* The coding a GET /files answer takes under Accept-Encoding h: 1 gzip,
 * 0 identity, -1 none acceptable (answer 406). identity_only: only ask
 * whether identity is acceptable (0) or not (-1). */
int abxl_envd_accept_encoding(const char *h, int identity_only);
/* The body of fd (a regular file; taken, closed by the response), read to
 * its end, gzip'd if asked. NULL on OOM. */
struct MHD_Response *abxl_envd_download_response(int fd, const struct stat *st,
                                                int gzip);

/* ---- stream.c ---- */
struct abxl_envd_stream;
/* keepalive_json: the message sent after keepalive_ms of silence.
 * deadline_ms: absolute CLOCK_MONOTONIC ms, 0 = none. */
struct abxl_envd_stream *abxl_envd_stream_new(int64_t keepalive_ms, int64_t deadline_ms,
                                    const char *keepalive_json);
void abxl_envd_stream_ref(struct abxl_envd_stream *s);
void abxl_envd_stream_unref(struct abxl_envd_stream *s);
/* Appends one message envelope. -1 if the stream is finished or its
 * client is gone (the caller should drop it). */
int abxl_envd_stream_send(struct abxl_envd_stream *s, const cJSON *msg);
int abxl_envd_stream_send_raw(struct abxl_envd_stream *s, const char *env, size_t n);
/* Appends the end-of-stream envelope once; later calls do nothing. */
void abxl_envd_stream_end(struct abxl_envd_stream *s, enum abx_connect_code code,
                     const char *msg);
int abxl_envd_stream_gone(struct abxl_envd_stream *s);
/* Bytes queued but not yet handed to the client (0 once over). Producers
 * stop reading their source while it is high: backpressure, as envd's
 * channels give, instead of unbounded buffering. */
size_t abxl_envd_stream_backlog(struct abxl_envd_stream *s);
/* The chunked response that drains s (takes its own reference). */
struct MHD_Response *abxl_envd_stream_response(struct abxl_envd_stream *s,
                                          struct MHD_Connection *c);

/* ---- rpc.c ---- */
struct abxl_envd_rpc {
    const cJSON *req;            /* the request message (object) */
    const struct abxl_envd_user *user;
    int64_t timeout_ms;          /* Connect-Timeout-Ms, 0 = none */
    int64_t deadline_ms;         /* absolute monotonic, 0 = none */
    int64_t keepalive_ms;
    /* unary result */
    enum abx_connect_code code;
    char msg[1024];
    cJSON *resp;                 /* NULL means {} */
    /* streaming: the stream to feed (already holds one ref for us) */
    struct abxl_envd_stream *stream;
};

/* Sets rpc->code/msg; returns the code for convenience. */
int abxl_envd_rpc_fail(struct abxl_envd_rpc *rpc, enum abx_connect_code code,
                  const char *fmt, ...) __attribute__((format(printf, 3, 4)));
struct abxl_envd_method;
/* Handles a /pkg.Service/Method request whose whole body is in body; m is
 * the method the router found for url (NULL: none, answered 404). */
enum MHD_Result abxl_envd_rpc_handle(struct MHD_Connection *c,
                                const struct abxl_envd_method *m,
                                const char *url, const char *method,
                                struct abx_buf *body, int body_overflow);

int64_t abxl_envd_now_ms(void);  /* CLOCK_MONOTONIC */

/* ---- proc_rpc.c / fs_rpc.c: handlers (unary fill rpc; stream feeds
 * rpc->stream and must end it eventually) ---- */
typedef void (*abxl_envd_handler)(struct abxl_envd_rpc *rpc);
struct abxl_envd_method {
    const char *name;  /* NULL ends a table */
    abxl_envd_handler h;
    int streaming;
};
extern const struct abxl_envd_method abxl_envd_process_methods[];
extern const struct abxl_envd_method abxl_envd_filesystem_methods[];

/* ---- proc.c ---- */
struct abxl_envd_spawn {
    const char *cmd;
    const cJSON *args;    /* array of strings, may be NULL */
    const cJSON *envs;    /* object of strings, may be NULL */
    const char *cwd;      /* NULL: user's home */
    const char *tag;      /* NULL: none */
    int stdin_pipe;
    int hidden;           /* template start command: not listed */
    int pty;              /* run on a pseudo-terminal of rows x cols */
    unsigned rows, cols;
    const struct abxl_envd_user *user;
    int64_t deadline_ms;  /* absolute monotonic, 0 = none */
    const int *stdio;     /* sudo.c: the client's 0-2, the caller's; NULL: pipes */
    char *const *env;     /* sudo.c: the whole environment; NULL: envd's */
    const cJSON *base_envs; /* instead of the sandbox's envVars; NULL: those */
};
struct abxl_envd_selector {
    int by_tag;
    uint32_t pid;
    const char *tag;
};

struct abxl_envd_child {
    pid_t pid;                         /* the command */
    pid_t keeper;                      /* its keeper (keeper.c), envd's child */
    int ctl_fd;                        /* the keeper's control pipe */
    int in_fd, out_fd, err_fd;         /* -1 when not piped */
    int pty_fd, pty_slave;             /* master and our slave fd, or -1 */
};
/* keeper.c: the keeper runs path (abx-keeper) once it has forked the
 * command; NULL (the default) keeps it in the fork of envd. */
void abxl_envd_keeper_set_path(const char *path);
/* keeper.c: forks a keeper that forks and runs start(arg) (which must not
 * return), and keeps whatever it leaves behind. The keeper's pid, with
 * *ctl_fd its control pipe, or -1 (errno). */
pid_t abxl_envd_keeper_fork(void (*start)(void *arg), void *arg, int *ctl_fd);
/* The next int on the control pipe (the command's pid, then its wait
 * status): 1, 0 when none is there yet (block == 0), -1 once the keeper
 * is gone. */
int abxl_envd_keeper_read(int ctl, int *value, int block);
/* Asks the keeper to kill everything the command started, and end. */
void abxl_envd_keeper_end(pid_t keeper);
/* After the command's end: waits for the keeper to end (its last orphan
 * gone), ending everything at deadline_ms (0: none); closes ctl, reaps. */
void abxl_envd_keeper_release(pid_t keeper, int ctl, int64_t deadline_ms);
/* spawn.c: forks and execs sp as its user in a new process group. 0, or
 * -1 with err naming the problem (bad cwd, exec failure). */
int abxl_envd_spawn(const struct abxl_envd_spawn *sp, struct abxl_envd_child *ch,
               char *err, size_t errlen);

int abxl_envd_proc_init(void);
int abxl_envd_proc_start(const struct abxl_envd_spawn *sp, struct abxl_envd_stream *sub,
                    uint32_t *pid, char *err, size_t errlen);
int abxl_envd_proc_connect(const struct abxl_envd_selector *sel, struct abxl_envd_stream *s,
                      char *err, size_t errlen);
int abxl_envd_proc_list(cJSON *array);
/* pty != 0 writes to the terminal instead of stdin. */
int abxl_envd_proc_input(const struct abxl_envd_selector *sel, int pty, const void *p,
                    size_t n, char *err, size_t errlen);
/* Resizes the terminal of a PTY process. */
int abxl_envd_proc_resize(const struct abxl_envd_selector *sel, unsigned rows,
                     unsigned cols, char *err, size_t errlen);
int abxl_envd_proc_signal(const struct abxl_envd_selector *sel, int sig, char *err,
                     size_t errlen);
int abxl_envd_proc_close_stdin(const struct abxl_envd_selector *sel, char *err,
                          size_t errlen);
int abxl_envd_proc_exists(const struct abxl_envd_selector *sel, char *err,
                     size_t errlen);

/* ---- exitstatus.c ---- */
/* {exitCode, exited, status, error} for a waitpid status (NULL on OOM). */
cJSON *abxl_envd_end_event(int status);

/* ---- meta.c ---- */
/* X-Metadata-* headers: 1 with *out set, 0 when there are none, -1 when
 * invalid (err filled; answer 400). */
int abxl_envd_meta_from_headers(struct MHD_Connection *c, cJSON **out, char *err,
                           size_t errlen);
/* Replaces the user.e2b.* xattrs of fd with meta. 0 or -1 (errno). */
int abxl_envd_meta_write(int fd, const cJSON *meta);
/* user.e2b.* xattrs of path as an object, NULL when none. */
cJSON *abxl_envd_meta_read(const char *path);

/* ---- entry.c ---- */
/* EntryInfo of path (lstat), NULL with errno set. */
cJSON *abxl_envd_entry_info(const char *path);

/* ---- watch.c ---- */
struct abxl_envd_watch;
/* Watches dir; events go to stream s when s != NULL (the watch then lives
 * until the stream's client goes, and *out is not set), else are queued
 * for the watchers registry (*out = the watch). 0, or -1 with err and *code. */
int abxl_envd_watch_new(const char *dir, int recursive, int include_entry,
                   int allow_network, struct abxl_envd_stream *s,
                   struct abxl_envd_watch **out, enum abx_connect_code *code,
                   char *err, size_t errlen);
int abxl_envd_watchers_create(const char *dir, int recursive, int include_entry,
                         int allow_network, char *id, size_t idlen, enum abx_connect_code *code,
                         char *err, size_t errlen);
cJSON *abxl_envd_watchers_events(const char *id);  /* NULL: unknown id */
int abxl_envd_watchers_remove(const char *id);     /* -1: unknown id */

#endif
