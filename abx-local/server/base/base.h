/* abx-local's bottom layer (README.md "Folders"): its configuration,
 * profiles, varied details, faults, hashing, helper programs and small
 * helpers. Every other folder may use it. See ../DESIGN.md for the
 * contracts. */
#ifndef ABXL_BASE_H
#define ABXL_BASE_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include <openssl/evp.h>

#include "buf.h"

#define ABXL_ID_LEN 20   /* e2b ids: 20 of [a-z0-9] */
#define ABXL_ID_MAX 31   /* fc ids: "sbx-" + 26 Crockford base32 (profile.c) */
#define ABXL_CLIENT_ID "6532622b"
#define ABXL_ENVD_PORT 49983
/* The longest timeout a create, connect or set_timeout accepts, in s:
 * 24 h (E2B; FC's Eco and Standard plans), or 7 days (FC's Pro) under
 * --vary max-timeout (vary.c). */
long abxl_max_timeout_s(void);
#define ABXL_BODY_CAP ((size_t)1024 * 1024)
#define ABXL_MASK_HOST_MAX 253   /* network.maskRequestHost: a DNS name's length */
/* Sandbox uids and gids 0..COUNT-1 are host ids BASE.. (userns.c); the
 * template roots in the cache are owned accordingly (rootfs_shift.c). */
#define ABXL_UID_BASE 1879048192UL
#define ABXL_UID_COUNT 65536UL
/* The owner of a sandbox's user namespace: OWNER_BASE + the pid of its
 * sandbox-enter (which becomes bwrap and lives as long as the sandbox), so
 * no two live sandboxes share one. The kernel charges a namespace's
 * per-user budgets (inotify instances, message queues, queued signals) to
 * its owner on the host: each sandbox has its own, and host root keeps
 * its own (docs/security.md). pid_max is at most 2^22. */
#define ABXL_OWNER_SPAN 4194304UL
#define ABXL_OWNER_BASE (ABXL_UID_BASE - ABXL_OWNER_SPAN)
/* Where sandbox-enter shows bwrap the root it made (enter.c). */
#define ABXL_STAGE "/tmp"
#define ABXL_STAGE_ROOT ABXL_STAGE "/root"
#define ABXL_STAGE_SBX ABXL_STAGE "/sbx"   /* gVisor: the sandbox's folder */
#define ABXL_SBXLOG_CAP (8LL * 1024 * 1024)   /* bytes of envd.log kept */

/* ---- configuration (config.c; the `serve` flags: main.c) ---- */
struct abxl_srv_config {
    char listen[128], data_listen[128];
    char state_dir[4096], templates_dir[4096], envd_path[4096], bwrap[4096];
    char runtime[16];          /* "bwrap" or "gvisor" (runtime.h, docs/security.md) */
    char runsc[4096];          /* gVisor's runsc, for --runtime gvisor */
    char cache_dir[4096];      /* template root filesystems (rootfs.c) */
    char self_exe[4096];       /* this binary, for `sandbox-enter` */
    char envd_bundle[4200];    /* envd and its libraries (envd_bundle.c) */
    char envd_loader[256];     /* their dynamic loader's file name, "" if static */
    bool envd_keeper;          /* abx-keeper beside envd, copied with it */
    bool disk_tmpfs;           /* no loop devices: sandbox disks are tmpfs (disk.c) */
    bool uid_ranges;           /* a uid range per sandbox (uidrange.c) */
    char sandboxes_dir[4096];
    char seccomp_bpf[4200];    /* <state>/seccomp.bpf (seccomp.c) */
    long long max_memory_mb;   /* all sandboxes together (cgroup.c); 0: from the host */
    long max_pids;             /* idem */
    char api_key[160];
    char data_domain[160];
    long max_sandboxes;
};
extern struct abxl_srv_config abxl_cfg;
extern volatile int abxl_shutting_down;
/* abxl_cfg's defaults: files next to this binary, $ABX_LOCAL_CACHE, bwrap
 * in $PATH. */
void abxl_config_defaults(void);

/* ---- platform profiles (profile.c, docs/profiles.md) ---- */
enum abxl_switch {
    ABXL_SW_ENVD_052,
    ABXL_SW_PROTO_CODEC,
    ABXL_SW_KEEPALIVE_30,
    ABXL_SW_V2_LIFECYCLE,
    ABXL_SW_PAUSE,
    ABXL_SW_FC_METADATA,
    ABXL_SW_TOKENS_IN_INFO,
    ABXL_SW_TRAFFIC_GATE_ENVD,
    ABXL_SW_SIGNED_URLS,
    ABXL_SW_LOGS,
    ABXL_SW_METRICS_FULL,
    ABXL_SW_FC_IDS,
    ABXL_SW_GATEWAY_ERRORS,
    ABXL_SW_FC_MESSAGES,
    ABXL_SW_LIST_PAGE_50,
    ABXL_SW_MASK_HOST,
    ABXL_SW_SUDO,
    ABXL_SW_COUNT
};
bool abxl_sw(enum abxl_switch s);
const char *abxl_profile_name(void);
int abxl_profile_set(const char *name, char *err, size_t errlen);   /* all switches */
int abxl_switch_set(const char *spec, char *err, size_t errlen);   /* "NAME=on|off" */
const char *abxl_envd_version(void);
cJSON *abxl_profile_envd_compat(void);   /* run/config.json "compat" */
cJSON *abxl_profile_json(void);
void abxl_switches_print(void);   /* the table of `abx-local switches`, on stdout */

/* ---- varied details (vary.c, docs/profiles.md "Varied details") ---- */
enum abxl_vary {
    ABXL_V_MESSAGES,
    ABXL_V_TEMPLATE_ID,
    ABXL_V_LIST_ORDER,
    ABXL_V_DEFAULT_USER,
    ABXL_V_SANDBOX_ID_ENV,
    ABXL_V_EXIT_TEXT,
    ABXL_V_PROC_LIST,
    ABXL_V_DEAD_LISTED,
    ABXL_V_DEAD_STATUS,
    ABXL_V_UPLOAD_CAP,
    ABXL_V_GATEWAY,
    ABXL_V_BASE_TOOLS,
    ABXL_V_MAX_TIMEOUT,
    ABXL_V_ID_CHECK,
    ABXL_V_KEY_CHECK,
    ABXL_V_TOKEN_DENIED,
    ABXL_V_METADATA_CHECK,
    ABXL_V_WATCH_EVENTS,
    ABXL_V_STDIN_REFUSED,
    ABXL_V_TIME_FORMAT,
    ABXL_V_REAP_DELAY,
    ABXL_V_UMASK,
    ABXL_V_UNKNOWN_TEMPLATE,
    ABXL_V_WATCH_RENAME,
    ABXL_V_WATCH_SUBDIRS,
    ABXL_V_LIFETIME_FROM,
    ABXL_V_PAGE_SIZE,
    ABXL_V_GATEWAY_HTTP,
    ABXL_V_GATEWAY_CAP,
    ABXL_V_START_ENVS,
    ABXL_V_EGRESS,
    ABXL_V_COUNT
};
int abxl_vary(enum abxl_vary v);   /* the choice drawn; 0 = upstream E2B's */
long long abxl_vary_seed(void);   /* -1 without --vary */
int abxl_vary_seed_set(const char *spec, char *err, size_t errlen);   /* N or "random" */
/* "DETAIL=CHOICE": 0 set, -1 bad choice (err filled), 1 not a detail. */
int abxl_vary_choice_set(const char *spec, char *err, size_t errlen);
cJSON *abxl_vary_json(void);
void abxl_vary_envd_compat(cJSON *compat);   /* adds the envd-side draw */
void abxl_vary_log(void);
void abxl_vary_print(void);
void abxl_vary_print_draw(void);

/* ---- faults (faults.c) ---- */
struct abxl_faults {
    long latency_ms, create_latency_ms, delete_delay_ms;
    double error_rate, data_error_rate;
    int error_status;
    long long drop_stream_after_bytes; /* 0 = off */
    long drop_create_replies;  /* next N creates succeed but answer 503 */
    /* Platform answers a vacuous test would not notice (1 = on): */
    int kill_ignored;          /* DELETE answers 204, the sandbox lives on */
    int list_filter_empty;     /* a list with a metadata filter finds none */
    int error_body_code;       /* error bodies' "code" (0: the status) */
    /* Set-ups abx-e2e doctor must find broken: */
    int metadata_punct_refused; /* a metadata value with ' or [ gets 400 */
    long long upload_max_bytes; /* data-plane bodies over this get 413 */
    int create_envs_dropped;    /* a create's envVars reach nothing */
};
void abxl_faults_get(struct abxl_faults *out);
/* Applies the members present in obj; 0, or -1 with err naming the field. */
int abxl_faults_update(const cJSON *obj, char *err, size_t errlen);
/* A --fault-* serve flag: 0 applied, -1 bad value (err filled), 1 not a
 * fault flag. val NULL: only whether it is one (0), nothing applied. */
int abxl_faults_flag(const char *flag, const char *val, char *err, size_t errlen);
cJSON *abxl_faults_json(void);
/* Sleeps latency_ms; returns the status to fail with (0 = none). */
int abxl_faults_roll(bool data_plane);
/* True (and one fewer left) if this create's reply is to be lost. */
bool abxl_faults_take_create_drop(void);
void abxl_sleep_ms(long ms);


/* ---- hashing (hash.c) ---- */
struct abxl_sha256 {
    EVP_MD_CTX *ctx;
};
void abxl_sha256_init(struct abxl_sha256 *h);
void abxl_sha256_str(struct abxl_sha256 *h, const char *s);
int abxl_sha256_file(struct abxl_sha256 *h, const char *path);
int abxl_sha256_tree(struct abxl_sha256 *h, const char *path);
void abxl_sha256_hex(struct abxl_sha256 *h, char out[65]);
long long abxl_du(const char *path);

/* ---- helper programs (runcmd.c) ---- */
typedef void (*abxl_line_fn)(const char *line, void *arg);
/* Runs argv (PATH searched), fn on each output line (stdout and stderr);
 * 0 when it exits 0, else -1 with err naming how it ended. */
int abxl_run_lines(const char *const argv[], abxl_line_fn fn, void *arg, char *err,
                   size_t errlen);
/* For a forked child that reports a failure as text on a pipe: reads it
 * (closing efd), reaps pid; 0 when it exited 0. */
int abxl_child_wait(pid_t pid, int efd, char *msg, size_t n);
/* step(arg, msg) in a forked child, in a private mount namespace of its
 * own (what it mounts goes with it); 0 when it returned 0, else -1 with
 * err set to the msg it wrote. */
int abxl_try_in_mount_ns(int (*step)(void *arg, char *msg, size_t n), void *arg, char *err,
                         size_t errlen);

/* ---- misc (common.c) ---- */
int abxl_random_hex(char *out, size_t nbytes);   /* out gets 2*nbytes+1 */
int abxl_random_id(char out[ABXL_ID_MAX + 1]);   /* 0, or -1 (no random bytes) */
/* Whether id has the shape abxl_random_id gives under this profile. */
bool abxl_id_shaped(const char *id);
int abxl_rm_rf(const char *path);
/* snprintf that reports truncation: 0, or -1 if dst was too small. */
int abxl_fmt(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int abxl_write_small(const char *path, const char *data, mode_t mode);
/* A kernel file (cgroup, /proc): val written to it in one write, or its
 * text read in one read into out (NUL-terminated, at most n - 1 bytes;
 * abxl_read_text reads a whole file of any size). 0, or -1
 * with errno. Only open/read/write/close: safe in a child after fork. */
int abxl_write_value(const char *path, const char *val);
int abxl_read_value(const char *path, char *out, size_t n);
char *abxl_read_text(const char *path, size_t max);   /* NUL-terminated, or NULL */

int64_t abxl_now_ms(void);
/* CLOCK_REALTIME now + ms: the deadline pthread_cond_timedwait wants. */
void abxl_abstime_in(struct timespec *ts, long ms);
/* Query parameter from a raw target, Go QueryUnescape'd (common.c). 1
 * found, 0 absent, -1 bad escape. */
int abxl_query_get(const char *uri, const char *name, char *out, size_t outlen);
int abxl_unescape(const char *in, size_t n, char *out, size_t outlen);
void abxl_rfc3339(int64_t ms, char *out, size_t n);

#endif
