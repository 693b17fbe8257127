/* Sandboxes: the registry, the spawner and its runtimes (bubblewrap,
 * gVisor: runtime.h), namespaces, cgroups, seccomp, disks, the lifecycle,
 * metrics. */
#ifndef ABXL_SANDBOX_H
#define ABXL_SANDBOX_H

#include "rootfs.h"
#include "runtime.h"   /* bubblewrap or gVisor */

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
struct abxl_sbx;
/* Both runtimes (envd_bundle.c): the capabilities a sandbox keeps, and
 * envd's command line inside (through its own loader), word by word. */
#define ABXL_SANDBOX_NCAPS 6
extern const char *const abxl_sandbox_caps[ABXL_SANDBOX_NCAPS];
void abxl_envd_cmdline(void (*add)(void *a, const char *w), void *a);
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
/* `abx-local sandbox-enter ...`: mounts the root, joins the cgroups, runs
 * the runtime (runtime.h). */
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
    struct abxl_metrics *metrics;   /* samples (metrics.c), owned */
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

/* Metrics (metrics.c): a sample when the profile's interval has
 * passed (asked: for a query); the samples in [start_s, end_s] (unix
 * seconds); the newest. */
struct abxl_metrics;
void abxl_metrics_sample(struct abxl_sbx *s, bool asked);
cJSON *abxl_metrics_range(struct abxl_sbx *s, int64_t start_s, int64_t end_s);
cJSON *abxl_metrics_latest(struct abxl_sbx *s);
void abxl_metrics_free(struct abxl_metrics *m);
cJSON *abxl_logs_json(const struct abxl_sbx *s, long limit);

#endif
