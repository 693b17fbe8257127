/* abx-local server: shared types and the internal API between its files.
 * See ../DESIGN.md for the contracts (listeners, state dir, bwrap). */
#ifndef ABXL_SERVER_H
#define ABXL_SERVER_H

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
    char runtime[16];          /* "bwrap" or "gvisor" (gvisor.c, docs/security.md) */
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

/* ---- templates (tmpl.c) and their root filesystems (rootfs*.c) ---- */
enum abxl_rootfs_kind { ABXL_ROOTFS_NONE, ABXL_ROOTFS_DEBIAN, ABXL_ROOTFS_IMAGE };

struct abxl_tmpl {
    char id[128], alias[128], dir[4096];
    enum abxl_rootfs_kind rootfs_kind;
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
int abxl_tmpl_find(const char *name, struct abxl_tmpl *out, char *err, size_t errlen);
/* Whether the template ships an app (its app/ folder, shown read-only at
 * /opt/abx/app); path set to it. */
bool abxl_tmpl_app(const struct abxl_tmpl *t, char *path, size_t n);
#define ABXL_TMPL_ID_MAX 24
/* The id clients see: id itself, or an opaque one (--vary template-id). */
const char *abxl_tmpl_public_id(const char *id, char out[ABXL_TMPL_ID_MAX]);
void abxl_tmpl_free(struct abxl_tmpl *t);
/* Every template, shipped then imported; ok < 0: broken, t->dir holds the
 * reason. Stops at fn's first non-zero return, which it returns. t is
 * freed after fn. */
int abxl_tmpl_each(int (*fn)(struct abxl_tmpl *t, const char *dir, const char *entry, int ok,
                            void *arg),
                  void *arg);

int abxl_rootfs_key(struct abxl_tmpl *t, char *err, size_t errlen);   /* key, rootfs */
int abxl_rootfs_paths(struct abxl_tmpl *t);                           /* rootfs from key */
bool abxl_rootfs_built(const struct abxl_tmpl *t);
/* Builds t's root unless cached (force: rebuild). Progress on stderr. */
int abxl_rootfs_build(const struct abxl_tmpl *t, bool force, char *err, size_t errlen);
int abxl_rootfs_remove(const struct abxl_tmpl *t);
int abxl_rootfs_import(const char *name, const char *archive, char *err, size_t errlen);
/* Building blocks shared by the builder and the importer. */
int abxl_rootfs_lock(const struct abxl_tmpl *t, char *err, size_t errlen);   /* fd */
int abxl_rootfs_tmpdir(const struct abxl_tmpl *t, char *out, size_t n, char *err, size_t errlen);
int abxl_rootfs_commit(const struct abxl_tmpl *t, const char *tmp_root, int64_t started_ms,
                      char *err, size_t errlen);
int abxl_rootfs_customize(const char *root, const char *home_src, char *err, size_t errlen);
/* Gives a built root to the sandbox uids (ABXL_UID_BASE + its ids). */
int abxl_rootfs_shift(const char *root, char *err, size_t errlen);
void abxl_rootfs_progress(const struct abxl_tmpl *t, const char *verb, int pct, const char *what);
int abxl_copy_tree(int sfd, int dfd, uid_t uid);
/* `abx-local template ...` (tmplcli.c) */
int abxl_template_main(int argc, char **argv);
/* Builds every template whose root is missing; 0, or -1 (reason printed). */
int abxl_templates_build_missing(void);
/* Creates the cache dir and makes abxl_cfg.cache_dir its real path. */
int abxl_cache_prepare(char *err, size_t errlen);


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
int abxl_run_lines(char *const argv[], abxl_line_fn fn, void *arg, char *err, size_t errlen);
/* For a forked child that reports a failure as text on a pipe: reads it
 * (closing efd), reaps pid; 0 when it exited 0. */
int abxl_child_wait(pid_t pid, int efd, char *msg, size_t n);
/* step(arg, msg) in a forked child, in a private mount namespace of its
 * own (what it mounts goes with it); 0 when it returned 0, else -1 with
 * err set to the msg it wrote. */
int abxl_try_in_mount_ns(int (*step)(void *arg, char *msg, size_t n), void *arg, char *err,
                         size_t errlen);
/* Copies in to out until EOF; 0, or -1 (errno set). */
int abxl_copy_fd(int in, int out);

/* ---- sandbox disks (disk.c) ---- */
/* In a private mount namespace, as host root: DIR/disk.img, an ext4 file
 * system of mb MiB whose root owner is owner, loop-mounted at DIR/disk;
 * keep: the file system DIR/disk.img already holds. */
int abxl_disk_mount(const char *dir, long mb, uid_t owner, bool keep, char *err, size_t errlen);
/* Waits until no loop device holds DIR/disk.img (the last mount of it
 * is gone and written back): 0, or -1 after timeout_ms. */
int abxl_disk_wait_free(const char *dir, long timeout_ms);
/* Whether abxl_disk_mount works on this machine (tried once, at start). */
bool abxl_disk_check(char *err, size_t errlen);

/* ---- cgroups (cgroup.c) ---- */
struct abxl_limits {
    int cpu_count, memory_mb, pids;
};
/* serve: this server's own groups made (cgroup_place.c, on v2); else what
 * the machine has, told only (abx-local gc). */
int abxl_cgroup_init(bool serve, char *err, size_t errlen);
int abxl_cgroup_create(const char *id, const struct abxl_limits *lim, char *err, size_t errlen);
/* The cgroup.procs files a process writes "0" to, to join the sandbox. */
int abxl_cgroup_procs_files(const char *id, char paths[][512], int max);
int abxl_cgroup_freeze(const char *id, bool frozen);   /* 0, -1 no freezer / failed */
void abxl_cgroup_kill(const char *id);
void abxl_cgroup_destroy(const char *id);
/* Kills and removes the cgroups of dead servers (any state dir): the
 * number of their groups removed. After abxl_cgroup_init. */
int abxl_cgroup_gc(void);
/* Removes this server's parent cgroup (its sandboxes are gone). */
void abxl_cgroup_shutdown(void);
/* ---- where the groups go on v2 (cgroup_place.c) ---- */
/* serve, first: on a systemd host, re-executes abx-local in a transient
 * scope with Delegate=yes (systemd-run, same pid); returns when it does
 * not (no systemd, not root, already delegated, no systemd-run). */
void abxl_cgroup_scope_exec(char **argv);
/* The folder this server's srv-* group goes in, its controllers enabled;
 * shared: the abx-local/ other servers share. */
int abxl_cgroup_place(char *top, size_t n, bool *shared, char *err, size_t errlen);
/* "" or, in a container, "; " and what to start it with: for messages of
 * what the machine refuses. */
const char *abxl_container_hint(void);
/* Where serve would put its groups, found without changing anything
 * (abx-local check): version 2, 1 or 0 (none); on v2 the folder whose
 * controllers it would use, how it came to it, those controllers and
 * whether this process may enable them. 0, or -1 (how says why). */
struct abxl_cg_plan {
    int version;
    char own[1024], dir[1200], controllers[512];
    const char *how, *lacks;   /* lacks: the first of memory, pids, cpu missing */
    bool shared, outside, writable;
};
int abxl_cgroup_plan(struct abxl_cg_plan *p);
/* The folders whose srv-* may be dead servers' (top: this server's). */
int abxl_cgroup_gc_dirs(const char *top, char dirs[][512], int max);
/* The limits on all sandboxes together: --max-memory/--max-pids, else
 * from the host's size. */
void abxl_cgroup_totals(long long *memory_mb, long *pids);
int abxl_gc_main(int argc, char **argv);   /* `abx-local gc` (machine.c) */
/* Bytes, CPU seconds (-1 when unreadable) and whether the OOM killer ran. */
void abxl_cgroup_usage(const char *id, long long *mem, double *cpu_s, bool *oom);

/* ---- isolation (userns.c, seccomp.c, sbx_log.c) ---- */
/* Moves the caller into a new user namespace mapping 0..count-1 to
 * base.. and makes it that namespace's root. */
int abxl_userns_enter(unsigned long base, unsigned long count, unsigned long owner,
                      char *err, size_t errlen);
/* A user namespace mapping host ids from.. to to.. (count of them), as an
 * idmapping for a mount; its descriptor, or -1. */
int abxl_userns_idmap(unsigned long from, unsigned long to, unsigned long count, char *err,
                      size_t errlen);
/* The sandbox's uid range (uidrange.c): *base set; a descriptor that holds
 * the range until closed, -1 when every sandbox shares range 0 (no
 * idmapped mounts here), -2 on failure (err set). */
int abxl_uidrange_take(unsigned long *base, char *err, size_t errlen);
/* Mounts src (a template root, owned by range 0) read-only at at, shown
 * as owned by the range from base. */
int abxl_uidrange_lower(const char *src, const char *at, unsigned long base, char *err,
                        size_t errlen);
/* Whether sandboxes can have ranges of their own here (once, at start). */
bool abxl_uidrange_check(char *err, size_t errlen);
int abxl_seccomp_write(const char *path, char *err, size_t errlen);
/* --runtime gvisor (gvisor.c): the OCI bundle in <dir>/oci and runsc's
 * command line, added one word at a time. */
struct abxl_sbx;
/* Both runtimes (envd_bundle.c): the capabilities a sandbox keeps, and
 * envd's command line inside (through its own loader), word by word. */
#define ABXL_SANDBOX_NCAPS 6
extern const char *const abxl_sandbox_caps[ABXL_SANDBOX_NCAPS];
void abxl_envd_cmdline(void (*add)(void *a, const char *w), void *a);
bool abxl_gvisor(void);
int abxl_gvisor_bundle(const struct abxl_sbx *s, bool app, char *err, size_t errlen);
void abxl_gvisor_argv(const struct abxl_sbx *s, void (*add)(void *a, const char *w), void *a);
void abxl_seccomp_print(void);   /* `abx-local seccomp`: the refused calls and why */
size_t abxl_seccomp_denied_count(void);
struct abxl_sbxlog;
/* A pipe whose read end a thread copies into path (capped); *wfd is the
 * write end for the sandbox's stdout/stderr. */
struct abxl_sbxlog *abxl_sbxlog_open(const char *path, int *wfd, char *err, size_t errlen);
/* Waits up to timeout_ms for every writer to be gone and all copied. */
void abxl_sbxlog_settle(struct abxl_sbxlog *l, long timeout_ms);
void abxl_sbxlog_close(struct abxl_sbxlog *l);   /* NULL: nothing */

/* ---- the sandbox's root (enter.c, envd_bundle.c) ---- */
/* `abx-local sandbox-enter ...`: mounts the root, joins the cgroups, execs bwrap. */
int abxl_enter_main(int argc, char **argv);
int abxl_envd_bundle(char *err, size_t errlen);

/* ---- sandboxes (sbx.c) ---- */
enum abxl_sbx_state { ABXL_SBX_STARTING, ABXL_SBX_RUNNING, ABXL_SBX_PAUSED, ABXL_SBX_DEAD };

struct abxl_sbx {
    char id[ABXL_ID_MAX + 1];
    char template_id[128], alias[128];
    char access_token[65];   /* "" when not secure */
    cJSON *metadata;         /* object, owned, never NULL */
    int cpu_count, memory_mb, disk_mb;
    bool allow_internet, auto_pause, auto_resume;
    bool auto_pause_fs;      /* autoPauseMemory: false, a filesystem-only auto-pause */
    bool cold;               /* paused with its processes ended (life.c) */
    char traffic_token[65];  /* "" unless network.allowPublicTraffic=false */
    cJSON *network;          /* the create request's network object, or NULL */
    int64_t timeout_ms;      /* as created: what an autoResume wakes it for */
    struct abxl_metrics *metrics;   /* samples (ctl_metrics.c), owned */
    bool cgroup;             /* its cgroup exists (cgroup.c) */
    int64_t started_ms, end_ms;
    enum abxl_sbx_state state;
    bool busy;               /* a pause/resume is in progress: 409 */
    pid_t bwrap_pid, init_pid;
    int pidfd, netns_fd;
    int egress_fd;           /* egress=fc's listener in that namespace, or -1 */
    unsigned long uid_base;   /* host uid of its root (uidrange.c) */
    int uid_fd;               /* holds that range, or -1 */
    ino_t pidns_ino;
    struct abxl_sbxlog *log;  /* envd.log's copier (sbx_log.c) */
    char dir[4200];
    int refs;
    struct abxl_sbx *next;
};

extern pthread_mutex_t abxl_reg_lock;
struct abxl_sbx *abxl_sbx_new(void);
void abxl_sbx_unref(struct abxl_sbx *s);
/* Registers s unless max sandboxes are registered already (false). */
bool abxl_reg_add(struct abxl_sbx *s, size_t max);
/* A referenced sandbox that the API may see (not STARTING/DEAD), or NULL.
 * Accepts the legacy "<id>-<clientID>" form. */
struct abxl_sbx *abxl_reg_get(const char *id);
/* abxl_reg_get, optionally ignoring case: a host name's id (DNS names have
 * no case, and clients lower-case them; fc ids are upper case). */
struct abxl_sbx *abxl_reg_find(const char *id, bool any_case);
/* References to every visible sandbox; *n set. Free with abxl_reg_put_all. */
struct abxl_sbx **abxl_reg_all(size_t *n, bool include_hidden);
void abxl_reg_put_all(struct abxl_sbx **v, size_t n);
/* Killed sandboxes listed as terminated a while (grave.c, --vary). */
void abxl_grave_add(struct abxl_sbx *s);
struct abxl_sbx **abxl_grave_all(size_t *n);
/* Marks DEAD and unlinks; true if this caller won the right to kill. */
bool abxl_reg_claim_kill(struct abxl_sbx *s);
size_t abxl_reg_count(void);   /* every registered sandbox, starting ones too */
int64_t abxl_now_ms(void);
/* CLOCK_REALTIME now + ms: the deadline pthread_cond_timedwait wants. */
void abxl_abstime_in(struct timespec *ts, long ms);

/* ---- spawner (sbx_spawn.c, procs.c, sbxdir.c) ---- */
int abxl_sbxdir_prepare(const struct abxl_sbx *s, const struct abxl_tmpl *t,
                       const cJSON *env_vars, char *err, size_t errlen);
/* A new run/boot_id, for a boot after a filesystem-only pause. */
int abxl_sbxdir_boot_id(const struct abxl_sbx *s);
/* Start time (clock ticks since boot) of pid, 0 if it does not exist. */
unsigned long long abxl_proc_starttime(pid_t pid);
/* pid is the process that started at start and has not ended (a zombie
 * has: it is dead until reaped). */
bool abxl_proc_alive(pid_t pid, unsigned long long start);
int abxl_spawn_check_machine(char *err, size_t errlen);
/* Mounts an overlay on a tmpfs in a throwaway namespace (needs the state dir). */
int abxl_overlay_check(char *err, size_t errlen);
/* A test sandbox: bwrap with the namespaces sandboxes use, running
 * /bin/true (machine.c). 0, or -1 with what bwrap said. */
int abxl_bwrap_probe(char *err, size_t errlen);
/* `abx-local check [--json]` (hostcheck.c), after serve's options were
 * parsed into abxl_cfg: its exit code. */
extern const char abxl_check_help[];
int abxl_check_main(bool json);
/* Registers s as STARTING, prepares its folder and starts bwrap. 0, -1
 * (err filled), or 1 when --max-sandboxes are running (s not registered). */
int abxl_spawn(struct abxl_sbx *s, const struct abxl_tmpl *t, const cJSON *env_vars,
              char *err, size_t errlen);
/* Boots a sandbox stopped by abxl_spawn_halt again on its kept disk,
 * with a new boot id. 0 or -1 (err filled). */
int abxl_spawn_reboot(struct abxl_sbx *s, const struct abxl_tmpl *t, char *err, size_t errlen);
/* Ends every process of the sandbox; its folder, disk, cgroup and uid
 * range stay. */
void abxl_spawn_halt(struct abxl_sbx *s);
/* Waits for envd /health then the template ready check. */
int abxl_spawn_wait_ready(struct abxl_sbx *s, const struct abxl_tmpl *t,
                         char *err, size_t errlen);
/* Kills the PID namespace, reaps bwrap, removes the folder. Call after
 * abxl_reg_claim_kill succeeded. */
void abxl_spawn_destroy(struct abxl_sbx *s);
/* Last line of the sandbox's envd.log (bwrap/envd errors), "" if none. */
void abxl_spawn_log_tail(const struct abxl_sbx *s, char *out, size_t n);
/* SIGSTOP / SIGCONT every process of the sandbox. */
void abxl_procs_signal(const struct abxl_sbx *s, int sig);
/* Number of processes in the sandbox's PID namespace. */
int abxl_procs_count(const struct abxl_sbx *s);
/* Memory (RSS bytes) and CPU seconds of the sandbox's processes. */
void abxl_procs_usage(const struct abxl_sbx *s, long long *rss, double *cpu_s);
/* Kills what a previous run left in the state dir. */
void abxl_spawn_recover(void);
/* The spawner loop (main thread, so --die-with-parent is tied to it). */
void abxl_spawner_run(void);
void abxl_spawner_stop(void);

/* ---- lifecycle helpers (life.c) ---- */
void abxl_life_kill(struct abxl_sbx *s);   /* claim + destroy; s stays referenced */
int abxl_life_pause(struct abxl_sbx *s);   /* 0, 1 already paused, -1 gone */
/* A filesystem-only pause (memory: false): as abxl_life_pause. */
int abxl_life_pause_fs(struct abxl_sbx *s);
/* 0, 1 running, -1 gone, -2 a filesystem-only paused one failed to boot. */
int abxl_life_resume(struct abxl_sbx *s, int64_t end_ms);
void abxl_life_kill_all(void);
int abxl_reaper_start(void);
void abxl_reaper_stop(void);

/* ---- netns sockets (nsnet.c) ---- */
int abxl_nsnet_init(void);
/* Sets up a curl handle so its sockets open inside s's network namespace. */
void abxl_nsnet_setup(void *curl, int netns_fd);
/* The calling thread into a sandbox's network namespace and back (leave
 * aborts rather than leave a thread there; it keeps errno). */
int abxl_nsnet_enter(int netns_fd);
void abxl_nsnet_leave(void);
/* --vary egress=fc with internet access off: TCP 80/443 "connects" and
 * carries nothing, the rest is refused, inside the namespace (egress.c). */
int abxl_egress_boot(struct abxl_sbx *s, char *err, size_t errlen);
/* GET http://127.0.0.1:port/path inside the sandbox; HTTP status or -1. */
int abxl_nsnet_probe(int netns_fd, int port, const char *path, long timeout_ms);

/* ---- HTTP: listeners (httpd.c), replies (reply.c), the control plane
 * (ctl*.c) and the data plane (proxy.c) ---- */
struct abxl_req {
    char *uri;                 /* raw request target, owned */
    struct abx_buf body;
    bool too_big, started, refused;
    void *proxy;               /* data plane state */
};
/* Replies (reply.c); errors are {"code":N,"message":...}, worded per profile. */
enum MHD_Result abxl_http_send(struct MHD_Connection *c, unsigned status,
                              const char *ctype, const char *body, size_t len);
enum MHD_Result abxl_http_json(struct MHD_Connection *c, unsigned status, cJSON *v);
enum MHD_Result abxl_http_json_hdr(struct MHD_Connection *c, unsigned status, cJSON *v,
                                  const char *hname, const char *hval);
enum MHD_Result abxl_http_405(struct MHD_Connection *c, const char *allow, const char *method,
                             const char *path);
enum MHD_Result abxl_http_error(struct MHD_Connection *c, unsigned status,
                               const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Query parameter from a raw target, Go QueryUnescape'd (common.c). 1
 * found, 0 absent, -1 bad escape. */
int abxl_query_get(const char *uri, const char *name, char *out, size_t outlen);
int abxl_unescape(const char *in, size_t n, char *out, size_t outlen);

/* What a listener does with a request, called in MHD's order: begin once
 * the headers are in, upload for each body chunk (all of it is consumed),
 * end once the body is complete; release (may be NULL) when the request
 * is over, answered or not. The planes sit above httpd.c, which only
 * calls them through this table. */
struct abxl_plane {
    enum MHD_Result (*begin)(struct MHD_Connection *c, struct abxl_req *r, const char *method);
    enum MHD_Result (*upload)(struct abxl_req *r, const char *data, size_t n);
    enum MHD_Result (*end)(struct MHD_Connection *c, struct abxl_req *r, const char *method);
    void (*release)(struct abxl_req *r);
};
extern const struct abxl_plane abxl_ctl_plane, abxl_proxy_plane;
struct sockaddr_in;
/* A listener on sa serving plane (timeout_s: idle connections); port 0
 * picks one and writes it back to sa. NULL if it cannot listen. */
struct MHD_Daemon *abxl_http_start(struct sockaddr_in *sa, const struct abxl_plane *plane,
                                   unsigned timeout_s);

enum MHD_Result abxl_ctl_sandboxes(struct MHD_Connection *c, const char *method,
                                  const char *path, const char *uri,
                                  const struct abx_buf *body);
enum MHD_Result abxl_ctl_create(struct MHD_Connection *c, const struct abx_buf *body, bool v2);
/* Request bodies (ctl_body.c): NULL with *bad set (a reply) on a bad
 * body, NULL with *bad = MHD_YES when there is none. Field getters: 1
 * present (*out set), 0 absent or null, -1 wrong type/range (err set). */
cJSON *abxl_body_parse(struct MHD_Connection *c, const struct abx_buf *body, enum MHD_Result *bad);
int abxl_body_int(const cJSON *o, const char *name, long min, long max, long *out, char *err,
                 size_t errlen);
int abxl_body_bool(const cJSON *o, const char *name, bool *out, char *err, size_t errlen);
enum abxl_keys { ABXL_KEYS_NONEMPTY, ABXL_KEYS_ENV };
int abxl_body_map(const cJSON *o, const char *name, enum abxl_keys keys, const cJSON **out,
                  char *err, size_t errlen);
/* GET /templates and GET /templates/{id} (ctl_templates.c). */
enum MHD_Result abxl_ctl_templates(struct MHD_Connection *c, const char *method,
                                  const char *path);
/* GET /sandboxes (v1) and GET /v2/sandboxes (ctl_list.c). */
enum MHD_Result abxl_ctl_list(struct MHD_Connection *c, const char *uri, bool v2);
cJSON *abxl_json_sandbox(const struct abxl_sbx *s);          /* Sandbox */
cJSON *abxl_json_detail(const struct abxl_sbx *s, bool listed); /* (Listed)SandboxDetail */
/* Metrics (ctl_metrics.c): a sample when the profile's interval has
 * passed (asked: for a query); the samples in [start_s, end_s] (unix
 * seconds); the newest. */
struct abxl_metrics;
void abxl_metrics_sample(struct abxl_sbx *s, bool asked);
cJSON *abxl_metrics_range(struct abxl_sbx *s, int64_t start_s, int64_t end_s);
cJSON *abxl_metrics_latest(struct abxl_sbx *s);
void abxl_metrics_free(struct abxl_metrics *m);
cJSON *abxl_logs_json(const struct abxl_sbx *s, long limit);
void abxl_rfc3339(int64_t ms, char *out, size_t n);


/* ---- misc (common.c) ---- */
int abxl_random_hex(char *out, size_t nbytes);   /* out gets 2*nbytes+1 */
void abxl_random_id(char out[ABXL_ID_MAX + 1]);
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

#endif
