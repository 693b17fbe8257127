/* abx-local server: shared types and the internal API between its files.
 * See ../DESIGN.md for the contracts (listeners, state dir, bwrap). */
#ifndef ABX_SERVER_H
#define ABX_SERVER_H

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include <openssl/evp.h>

#include "buf.h"

#define ABX_ID_LEN 20   /* e2b ids: 20 of [a-z0-9] */
#define ABX_ID_MAX 31   /* fc ids: "sbx-" + 26 Crockford base32 (profile.c) */
#define ABX_CLIENT_ID "6532622b"
#define ABX_ENVD_PORT 49983
#define ABX_MAX_TIMEOUT_S 86400
#define ABX_BODY_CAP ((size_t)1024 * 1024)

/* ---- configuration (main.c) ---- */
struct abx_srv_config {
    char listen[128], data_listen[128];
    char state_dir[4096], templates_dir[4096], envd_path[4096], bwrap[4096];
    char cache_dir[4096];      /* template root filesystems (rootfs.c) */
    char self_exe[4096];       /* this binary, for `sandbox-enter` */
    char envd_bundle[4200];    /* envd and its libraries (envd_bundle.c) */
    char envd_loader[256];     /* their dynamic loader's file name, "" if static */
    char sandboxes_dir[4096];
    char api_key[160];
    char data_domain[160];
    long max_sandboxes;
};
extern struct abx_srv_config abx_cfg;
extern volatile int abx_shutting_down;

/* ---- platform profiles (profile.c, docs/profiles.md) ---- */
enum abx_switch {
    ABX_SW_ENVD_052,
    ABX_SW_PROTO_CODEC,
    ABX_SW_KEEPALIVE_30,
    ABX_SW_V2_LIFECYCLE,
    ABX_SW_PAUSE,
    ABX_SW_FC_METADATA,
    ABX_SW_TOKENS_IN_INFO,
    ABX_SW_TRAFFIC_GATE_ENVD,
    ABX_SW_SIGNED_URLS,
    ABX_SW_LOGS,
    ABX_SW_METRICS_FULL,
    ABX_SW_FC_IDS,
    ABX_SW_GATEWAY_ERRORS,
    ABX_SW_FC_MESSAGES,
    ABX_SW_LIST_PAGE_50,
    ABX_SW_COUNT
};
bool abx_sw(enum abx_switch s);
const char *abx_profile_name(void);
int abx_profile_set(const char *name, char *err, size_t errlen);   /* all switches */
int abx_switch_set(const char *spec, char *err, size_t errlen);   /* "NAME=on|off" */
const char *abx_envd_version(void);
cJSON *abx_profile_envd_compat(void);   /* run/config.json "compat" */
cJSON *abx_profile_json(void);
void abx_switches_print(FILE *f);

/* ---- faults (faults.c) ---- */
struct abx_faults {
    long latency_ms, create_latency_ms, delete_delay_ms;
    double error_rate, data_error_rate;
    int error_status;
    long long drop_stream_after_bytes; /* 0 = off */
    long drop_create_replies;  /* next N creates succeed but answer 503 */
};
void abx_faults_get(struct abx_faults *out);
/* Applies the members present in obj; 0, or -1 with err naming the field. */
int abx_faults_update(const cJSON *obj, char *err, size_t errlen);
/* A --fault-* serve flag: 0 applied, -1 bad value (err filled), 1 not a
 * fault flag. */
int abx_faults_flag(const char *flag, const char *val, char *err, size_t errlen);
cJSON *abx_faults_json(void);
/* Sleeps latency_ms; returns the status to fail with (0 = none). */
int abx_faults_roll(bool data_plane);
/* True (and one fewer left) if this create's reply is to be lost. */
bool abx_faults_take_create_drop(void);
void abx_sleep_ms(long ms);

/* ---- templates (tmpl.c) and their root filesystems (rootfs*.c) ---- */
enum abx_rootfs_kind { ABX_ROOTFS_NONE, ABX_ROOTFS_DEBIAN, ABX_ROOTFS_IMAGE };

struct abx_tmpl {
    char id[128], alias[128], dir[4096];
    enum abx_rootfs_kind rootfs_kind;
    char release[64], variant[32];
    cJSON *packages;   /* array of strings, owned (Debian roots) */
    char source[512];  /* "debian bookworm/essential +python3", "image x.tar" */
    char key[65];      /* cache key: hash of the definition, or the image's */
    char rootfs[4200]; /* <cache>/rootfs/<key> */
    int pids_limit;
    cJSON *env_vars;   /* object or NULL, owned */
    cJSON *start;      /* object or NULL, owned */
    int ready_port;    /* 0 = none */
    char ready_path[512];
    long ready_timeout_ms;
    int cpu_count, memory_mb, disk_mb;
};
/* 0 found, 1 not found, -1 broken template (err filled). */
int abx_tmpl_find(const char *name, struct abx_tmpl *out, char *err, size_t errlen);
void abx_tmpl_free(struct abx_tmpl *t);
/* Every template, shipped then imported; ok < 0: broken, t->dir holds the
 * reason. Stops at fn's first non-zero return, which it returns. t is
 * freed after fn. */
int abx_tmpl_each(int (*fn)(struct abx_tmpl *t, const char *dir, const char *entry, int ok,
                            void *arg),
                  void *arg);
char *abx_read_text(const char *path, size_t max);   /* NUL-terminated, or NULL */

int abx_rootfs_key(struct abx_tmpl *t, char *err, size_t errlen);   /* key, rootfs */
int abx_rootfs_paths(struct abx_tmpl *t);                           /* rootfs from key */
bool abx_rootfs_built(const struct abx_tmpl *t);
/* Builds t's root unless cached (force: rebuild). Progress on stderr. */
int abx_rootfs_build(const struct abx_tmpl *t, bool force, char *err, size_t errlen);
int abx_rootfs_remove(const struct abx_tmpl *t);
int abx_rootfs_import(const char *name, const char *archive, char *err, size_t errlen);
/* Building blocks shared by the builder and the importer. */
int abx_rootfs_lock(const struct abx_tmpl *t, char *err, size_t errlen);   /* fd */
int abx_rootfs_tmpdir(const struct abx_tmpl *t, char *out, size_t n, char *err, size_t errlen);
int abx_rootfs_commit(const struct abx_tmpl *t, const char *tmp_root, int64_t started_ms,
                      char *err, size_t errlen);
int abx_rootfs_customize(const char *root, const char *home_src, char *err, size_t errlen);
void abx_rootfs_progress(const struct abx_tmpl *t, const char *verb, int pct, const char *what);
int abx_copy_tree(int sfd, int dfd, uid_t uid);
/* `abx-local template ...` (tmplcli.c) */
int abx_template_main(int argc, char **argv);
/* Builds every template whose root is missing; 0, or -1 (reason printed). */
int abx_templates_build_missing(void);
/* Creates the cache dir and makes abx_cfg.cache_dir its real path. */
int abx_cache_prepare(char *err, size_t errlen);


/* ---- hashing (hash.c) ---- */
struct abx_sha256 {
    EVP_MD_CTX *ctx;
};
void abx_sha256_init(struct abx_sha256 *h);
void abx_sha256_str(struct abx_sha256 *h, const char *s);
int abx_sha256_file(struct abx_sha256 *h, const char *path);
int abx_sha256_tree(struct abx_sha256 *h, const char *path);
void abx_sha256_hex(struct abx_sha256 *h, char out[65]);
long long abx_du(const char *path);

/* ---- helper programs (runcmd.c) ---- */
typedef void (*abx_line_fn)(const char *line, void *arg);
/* Runs argv (PATH searched), fn on each output line (stdout and stderr);
 * 0 when it exits 0, else -1 with err naming how it ended. */
int abx_run_lines(char *const argv[], abx_line_fn fn, void *arg, char *err, size_t errlen);
/* For a forked child that reports a failure as text on a pipe: reads it
 * (closing efd), reaps pid; 0 when it exited 0. */
int abx_child_wait(pid_t pid, int efd, char *msg, size_t n);
/* Copies in to out until EOF; 0, or -1 (errno set). */
int abx_copy_fd(int in, int out);

/* ---- cgroups (cgroup.c) ---- */
struct abx_limits {
    int cpu_count, memory_mb, pids;
};
int abx_cgroup_init(char *err, size_t errlen);
int abx_cgroup_create(const char *id, const struct abx_limits *lim, char *err, size_t errlen);
/* The cgroup.procs files a process writes "0" to, to join the sandbox. */
int abx_cgroup_procs_files(const char *id, char paths[][256], int max);
int abx_cgroup_freeze(const char *id, bool frozen);   /* 0, -1 no freezer / failed */
void abx_cgroup_kill(const char *id);
void abx_cgroup_destroy(const char *id);
/* Bytes, CPU seconds (-1 when unreadable) and whether the OOM killer ran. */
void abx_cgroup_usage(const char *id, long long *mem, double *cpu_s, bool *oom);

/* ---- the sandbox's root (enter.c, envd_bundle.c) ---- */
/* `abx-local sandbox-enter ...`: mounts the root, joins the cgroups, execs bwrap. */
int abx_enter_main(int argc, char **argv);
int abx_envd_bundle(char *err, size_t errlen);

/* ---- sandboxes (sbx.c) ---- */
enum abx_sbx_state { ABX_SBX_STARTING, ABX_SBX_RUNNING, ABX_SBX_PAUSED, ABX_SBX_DEAD };

struct abx_sbx {
    char id[ABX_ID_MAX + 1];
    char template_id[128], alias[128];
    char access_token[65];   /* "" when not secure */
    cJSON *metadata;         /* object, owned, never NULL */
    int cpu_count, memory_mb, disk_mb;
    bool allow_internet, auto_pause, auto_resume;
    char traffic_token[65];  /* "" unless network.allowPublicTraffic=false */
    cJSON *network;          /* the create request's network object, or NULL */
    int64_t timeout_ms;      /* as created: what an autoResume wakes it for */
    struct abx_metrics *metrics;   /* samples (api_metrics.c), owned */
    bool cgroup;             /* its cgroup exists (cgroup.c) */
    int64_t started_ms, end_ms;
    enum abx_sbx_state state;
    bool busy;               /* a pause/resume is in progress: 409 */
    pid_t bwrap_pid, init_pid;
    int pidfd, netns_fd;
    ino_t pidns_ino;
    char dir[4200];
    int refs;
    struct abx_sbx *next;
};

extern pthread_mutex_t abx_reg_lock;
struct abx_sbx *abx_sbx_new(void);
void abx_sbx_unref(struct abx_sbx *s);
/* Registers s unless max sandboxes are registered already (false). */
bool abx_reg_add(struct abx_sbx *s, size_t max);
/* A referenced sandbox that the API may see (not STARTING/DEAD), or NULL.
 * Accepts the legacy "<id>-<clientID>" form. */
struct abx_sbx *abx_reg_get(const char *id);
/* abx_reg_get, optionally ignoring case: a host name's id (DNS names have
 * no case, and clients lower-case them; fc ids are upper case). */
struct abx_sbx *abx_reg_find(const char *id, bool any_case);
/* References to every visible sandbox; *n set. Free with abx_reg_put_all. */
struct abx_sbx **abx_reg_all(size_t *n, bool include_hidden);
void abx_reg_put_all(struct abx_sbx **v, size_t n);
/* Marks DEAD and unlinks; true if this caller won the right to kill. */
bool abx_reg_claim_kill(struct abx_sbx *s);
size_t abx_reg_count(void);   /* every registered sandbox, starting ones too */
int64_t abx_now_ms(void);
/* CLOCK_REALTIME now + ms: the deadline pthread_cond_timedwait wants. */
void abx_abstime_in(struct timespec *ts, long ms);

/* ---- spawner (spawn.c, procs.c, sbxdir.c) ---- */
int abx_sbxdir_prepare(const struct abx_sbx *s, const struct abx_tmpl *t,
                       const cJSON *env_vars, char *err, size_t errlen);
/* Start time (clock ticks since boot) of pid, 0 if it does not exist. */
unsigned long long abx_proc_starttime(pid_t pid);
int abx_spawn_check_machine(char *err, size_t errlen);
/* Mounts an overlay on a tmpfs in a throwaway namespace (needs the state dir). */
int abx_overlay_check(char *err, size_t errlen);
/* Registers s as STARTING, prepares its folder and starts bwrap. 0, -1
 * (err filled), or 1 when --max-sandboxes are running (s not registered). */
int abx_spawn(struct abx_sbx *s, const struct abx_tmpl *t, const cJSON *env_vars,
              char *err, size_t errlen);
/* Waits for envd /health then the template ready check. */
int abx_spawn_wait_ready(struct abx_sbx *s, const struct abx_tmpl *t,
                         char *err, size_t errlen);
/* Kills the PID namespace, reaps bwrap, removes the folder. Call after
 * abx_reg_claim_kill succeeded. */
void abx_spawn_destroy(struct abx_sbx *s);
/* Last line of the sandbox's envd.log (bwrap/envd errors), "" if none. */
void abx_spawn_log_tail(const struct abx_sbx *s, char *out, size_t n);
/* SIGSTOP / SIGCONT every process of the sandbox. */
void abx_procs_signal(const struct abx_sbx *s, int sig);
/* Number of processes in the sandbox's PID namespace. */
int abx_procs_count(const struct abx_sbx *s);
/* Memory (RSS bytes) and CPU seconds of the sandbox's processes. */
void abx_procs_usage(const struct abx_sbx *s, long long *rss, double *cpu_s);
/* Kills what a previous run left in the state dir. */
void abx_spawn_recover(void);
/* The spawner loop (main thread, so --die-with-parent is tied to it). */
void abx_spawner_run(void);
void abx_spawner_stop(void);

/* ---- lifecycle helpers (life.c) ---- */
void abx_life_kill(struct abx_sbx *s);   /* claim + destroy; s stays referenced */
int abx_life_pause(struct abx_sbx *s);   /* 0, 1 already paused, -1 gone */
int abx_life_resume(struct abx_sbx *s, int64_t end_ms); /* 0, 1 running, -1 */
void abx_life_kill_all(void);
int abx_reaper_start(void);
void abx_reaper_stop(void);

/* ---- netns sockets (nsnet.c) ---- */
int abx_nsnet_init(void);
/* Sets up a curl handle so its sockets open inside s's network namespace. */
void abx_nsnet_setup(void *curl, int netns_fd);
/* GET http://127.0.0.1:port/path inside the sandbox; HTTP status or -1. */
int abx_nsnet_probe(int netns_fd, int port, const char *path, long timeout_ms);

/* ---- HTTP front ends (api*.c, proxy.c, http.c) ---- */
struct abx_req {
    char *uri;                 /* raw request target, owned */
    struct abx_buf body;
    bool too_big, started;
    void *proxy;               /* data plane state */
};
void *abx_http_uri_log(void *cls, const char *uri, struct MHD_Connection *c);
void abx_http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                        enum MHD_RequestTerminationCode toe);
enum MHD_Result abx_http_send(struct MHD_Connection *c, unsigned status,
                              const char *ctype, const char *body, size_t len);
enum MHD_Result abx_http_json(struct MHD_Connection *c, unsigned status, cJSON *v);
enum MHD_Result abx_http_json_hdr(struct MHD_Connection *c, unsigned status, cJSON *v,
                                  const char *hname, const char *hval);
enum MHD_Result abx_http_405(struct MHD_Connection *c, const char *allow, const char *method,
                             const char *path);
enum MHD_Result abx_http_error(struct MHD_Connection *c, unsigned status,
                               const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Query parameter from a raw target, Go QueryUnescape'd. 1 found, 0 absent,
 * -1 bad escape. */
int abx_query_get(const char *uri, const char *name, char *out, size_t outlen);
int abx_unescape(const char *in, size_t n, char *out, size_t outlen);

/* What a listener does with a request; abx_http_handle calls it in MHD's
 * order: begin once the headers are in, upload for each body chunk (all
 * of it is consumed), end once the body is complete. */
struct abx_plane {
    enum MHD_Result (*begin)(struct MHD_Connection *c, struct abx_req *r, const char *method);
    enum MHD_Result (*upload)(struct abx_req *r, const char *data, size_t n);
    enum MHD_Result (*end)(struct MHD_Connection *c, struct abx_req *r, const char *method);
};
extern const struct abx_plane abx_api_plane, abx_proxy_plane;
/* The MHD access handler of both listeners; cls is their abx_plane. */
enum MHD_Result abx_http_handle(void *cls, struct MHD_Connection *c, const char *url,
                                const char *method, const char *version, const char *upload,
                                size_t *upload_size, void **con_cls);

enum MHD_Result abx_api_sandboxes(struct MHD_Connection *c, const char *method,
                                  const char *path, const char *uri,
                                  const struct abx_buf *body);
enum MHD_Result abx_api_create(struct MHD_Connection *c, const struct abx_buf *body, bool v2);
/* Request bodies (api_body.c): NULL with *bad set (a reply) on a bad
 * body, NULL with *bad = MHD_YES when there is none. Field getters: 1
 * present (*out set), 0 absent or null, -1 wrong type/range (err set). */
cJSON *abx_body_parse(struct MHD_Connection *c, const struct abx_buf *body, enum MHD_Result *bad);
int abx_body_int(const cJSON *o, const char *name, long min, long max, long *out, char *err,
                 size_t errlen);
int abx_body_bool(const cJSON *o, const char *name, bool *out, char *err, size_t errlen);
int abx_body_map(const cJSON *o, const char *name, const cJSON **out, char *err, size_t errlen);
/* GET /templates and GET /templates/{id} (api_templates.c). */
enum MHD_Result abx_api_templates(struct MHD_Connection *c, const char *method,
                                  const char *path);
/* GET /sandboxes (v1) and GET /v2/sandboxes (api_list.c). */
enum MHD_Result abx_api_list(struct MHD_Connection *c, const char *uri, bool v2);
cJSON *abx_json_sandbox(const struct abx_sbx *s);          /* Sandbox */
cJSON *abx_json_detail(const struct abx_sbx *s, bool listed); /* (Listed)SandboxDetail */
/* Metrics (api_metrics.c): a sample when the profile's interval has
 * passed (asked: for a query); the samples in [start_s, end_s] (unix
 * seconds); the newest. */
struct abx_metrics;
void abx_metrics_sample(struct abx_sbx *s, bool asked);
cJSON *abx_metrics_range(struct abx_sbx *s, int64_t start_s, int64_t end_s);
cJSON *abx_metrics_latest(struct abx_sbx *s);
void abx_metrics_free(struct abx_metrics *m);
cJSON *abx_logs_json(const struct abx_sbx *s, long limit);
void abx_rfc3339(int64_t ms, char *out, size_t n);

void abx_proxy_free(void *proxy);

/* ---- misc (util.c) ---- */
int abx_random_hex(char *out, size_t nbytes);   /* out gets 2*nbytes+1 */
void abx_random_id(char out[ABX_ID_MAX + 1]);
int abx_rm_rf(const char *path);
/* snprintf that reports truncation: 0, or -1 if dst was too small. */
int abx_fmt(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int abx_write_small(const char *path, const char *data, mode_t mode);

#endif
