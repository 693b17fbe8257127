/* Resource limits of a sandbox: one cgroup per sandbox, on cgroup v2 (one
 * unified hierarchy) or v1 (one hierarchy a controller), whichever the
 * machine mounts. Memory, pids and CPU are limited; the freezer pauses;
 * usage is read back for metrics.
 *
 * Layout: TOP/srv-<pid>-<start>/<sandbox id>, where TOP is abx-local/ of
 * each v1 controller, and on v2 the server's delegated cgroup or the shared
 * abx-local/ (cgroup_place.c); the middle one is this server's (its pid
 * and start time, which no other process will have): it caps all of this
 * server's sandboxes together (memory, pids), and any abx-local, whatever
 * its state dir, can tell a dead server's leftovers from a live one's and
 * remove them (abxl_cgroup_gc).
 *
 * v1 needs the memory, pids, cpu and cpuacct controllers; freezer is used
 * when mounted. v2 needs memory, pids and cpu offered to the server's
 * place. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base.h"
#include "log.h"
#include "sandbox.h"

#define CG_ROOT "/sys/fs/cgroup"
#define CG_GROUP "abx-local"
#define CGROUP2_MAGIC 0x63677270

static int cg_v2 = -1;           /* -1 unknown, 0 v1, 1 v2 */
static char cg_v2_top[512];      /* v2: the folder of srv-* (cgroup_place.c) */
static bool cg_v2_shared;        /* ... the shared abx-local/, removed when empty */
static char cg_self[64];         /* srv-<pid>-<start> */
static bool cg_has_freezer;
static const char *const v1_ctrls[] = {"memory", "pids", "cpu", "cpuacct", "freezer"};
#define V1_REQUIRED 4            /* the first four must be mounted */

static long long read_ll(const char *path)
{
    char buf[64];
    if (abxl_read_value(path, buf, sizeof buf) != 0)
        return -1;
    return strtoll(buf, NULL, 10);
}

/* "key value" lines (memory.stat, cpu.stat): value of key, -1 if absent. */
static long long read_keyed(const char *path, const char *key)
{
    char buf[8192];
    if (abxl_read_value(path, buf, sizeof buf) != 0)
        return -1;
    size_t kl = strlen(key);
    for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
            return strtoll(line + kl + 1, NULL, 10);
    return -1;
}

/* The folder "abx-local" of controller ctrl (v1), or v2's TOP. */
static int cg_top(char *out, size_t n, const char *ctrl)
{
    if (cg_v2 == 1)
        return abxl_fmt(out, n, "%s", cg_v2_top);
    return abxl_fmt(out, n, "%s/%s/%s", CG_ROOT, ctrl ? ctrl : "", CG_GROUP);
}

/* The folder of controller ctrl (v1) or the unified one (v2) for id; id
 * NULL: this server's parent of its sandboxes. */
static int cg_path(char *out, size_t n, const char *ctrl, const char *id, const char *file)
{
    char base[512];
    cg_top(base, sizeof base, ctrl);
    return abxl_fmt(out, n, "%s/%s%s%s%s%s", base, cg_self, id ? "/" : "", id ? id : "",
                   file ? "/" : "", file ? file : "");
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int set_limit(const char *ctrl, const char *id, const char *file, const char *val,
                     bool optional, char *err, size_t errlen);

/* The defaults of the limits on all sandboxes together: 3/4 of the
 * host's memory, half its pid_max (threads count, as pids.max does). */
static long long host_memory_mb(void)
{
    char buf[4096];
    if (abxl_read_value("/proc/meminfo", buf, sizeof buf) != 0)
        return 0;
    const char *m = strstr(buf, "MemTotal:");
    return m ? strtoll(m + 9, NULL, 10) / 1024 : 0;
}

void abxl_cgroup_totals(long long *memory_mb, long *pids)
{
    *memory_mb = abxl_cfg.max_memory_mb > 0 ? abxl_cfg.max_memory_mb : host_memory_mb() * 3 / 4;
    if (abxl_cfg.max_pids > 0) {
        *pids = abxl_cfg.max_pids;
        return;
    }
    char buf[32];
    long pid_max = abxl_read_value("/proc/sys/kernel/pid_max", buf, sizeof buf) == 0
                       ? strtol(buf, NULL, 10) : 32768;
    *pids = pid_max / 2;
}

/* This server's parent cgroup, with the limits on all its sandboxes. */
static int make_self(char *err, size_t errlen)
{
    char p[512], v[64];
    pid_t me = getpid();
    abxl_fmt(cg_self, sizeof cg_self, "srv-%d-%llu", (int)me, abxl_proc_starttime(me));
    for (size_t i = 0; i < sizeof v1_ctrls / sizeof v1_ctrls[0]; i++) {
        if (cg_v2 == 1 && i > 0)
            break;
        if (cg_v2 == 0 && i == V1_REQUIRED && !cg_has_freezer)
            continue;
        cg_path(p, sizeof p, v1_ctrls[i], NULL, NULL);
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            abxl_fmt(err, errlen, "cannot create cgroup %s: %s", p, strerror(errno));
            return -1;
        }
    }
    if (cg_v2 == 1) {
        cg_path(p, sizeof p, NULL, NULL, "cgroup.subtree_control");
        if (abxl_write_value(p, "+memory +pids +cpu") != 0) {
            abxl_fmt(err, errlen, "cgroup v2: cannot enable controllers in %s: %s", p,
                    strerror(errno));
            return -1;
        }
    }
    long long mem;
    long pids;
    abxl_cgroup_totals(&mem, &pids);
    abxl_fmt(v, sizeof v, "%lld", mem * 1024 * 1024);
    if (mem > 0 && set_limit("memory", NULL, cg_v2 == 1 ? "memory.max" : "memory.limit_in_bytes",
                             v, false, err, errlen) != 0)
        return -1;
    abxl_fmt(v, sizeof v, "%ld", pids);
    return set_limit("pids", NULL, "pids.max", v, false, err, errlen);
}

int abxl_cgroup_init(bool serve, char *err, size_t errlen)
{
    struct statfs sf;
    char p[512];
    if (statfs(CG_ROOT, &sf) != 0) {
        abxl_fmt(err, errlen, "cgroups not mounted: %s: %s (sandbox limits need cgroup v1 "
                "or v2)", CG_ROOT, strerror(errno));
        return -1;
    }
    if ((unsigned long)sf.f_type == CGROUP2_MAGIC) {
        cg_v2 = 1;
        cg_has_freezer = true;   /* cgroup.freeze, Linux 5.2+ */
        if (!serve)
            return 0;
        if (abxl_cgroup_place(cg_v2_top, sizeof cg_v2_top, &cg_v2_shared, err, errlen) != 0)
            return -1;
        return make_self(err, errlen);
    }
    cg_v2 = 0;
    for (size_t i = 0; i < sizeof v1_ctrls / sizeof v1_ctrls[0]; i++) {
        abxl_fmt(p, sizeof p, "%s/%s", CG_ROOT, v1_ctrls[i]);
        bool have = is_dir(p) && abxl_fmt(p, sizeof p, "%s/%s/tasks", CG_ROOT, v1_ctrls[i]) == 0 &&
                    access(p, F_OK) == 0;
        if (!have && i < V1_REQUIRED) {
            abxl_fmt(err, errlen, "cgroup v1: the %s controller is not mounted at %s/%s "
                    "(sandbox limits need memory, pids, cpu and cpuacct)", v1_ctrls[i],
                    CG_ROOT, v1_ctrls[i]);
            return -1;
        }
        if (i == V1_REQUIRED)
            cg_has_freezer = have;
        if (!have)
            continue;
        cg_top(p, sizeof p, v1_ctrls[i]);
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            abxl_fmt(err, errlen, "cgroup v1: cannot create %s: %s", p, strerror(errno));
            return -1;
        }
    }
    return serve ? make_self(err, errlen) : 0;
}

/* Applies one limit; a limit file that does not exist (memsw without swap
 * accounting) is skipped when optional. */
static int set_limit(const char *ctrl, const char *id, const char *file, const char *val,
                     bool optional, char *err, size_t errlen)
{
    char p[512];
    cg_path(p, sizeof p, ctrl, id, file);
    if (abxl_write_value(p, val) == 0 || (optional && errno == ENOENT))
        return 0;
    abxl_fmt(err, errlen, "cannot set %s=%s: %s", p, val, strerror(errno));
    return -1;
}

/* A sandbox's own limits: its template's, but at most half of what all
 * sandboxes together may use (abxl_cgroup_totals), so that one sandbox at
 * its cap leaves the rest to creates and to the other sandboxes. Not the
 * pids under gVisor: the host counts the sentry's threads and address
 * spaces there, not the sandbox's processes, and a sandbox short of them
 * dies. */
static void fair_share(const struct abxl_limits *lim, long long *mem_mb, long *pids)
{
    long long total_mb;
    long total_pids;
    abxl_cgroup_totals(&total_mb, &total_pids);
    *mem_mb = lim->memory_mb;
    if (total_mb > 0 && *mem_mb > total_mb / 2)
        *mem_mb = total_mb / 2;
    *pids = lim->pids;
    if (total_pids > 0 && abxl_runtime()->pids_are_processes && *pids > total_pids / 2)
        *pids = total_pids / 2;
}

int abxl_cgroup_create(const char *id, const struct abxl_limits *lim, char *err, size_t errlen)
{
    char p[512], v[64];
    long long mem_mb;
    long pids;
    fair_share(lim, &mem_mb, &pids);
    long long mem = mem_mb * 1024 * 1024;
    long long quota = (long long)lim->cpu_count * 100000;
    if (cg_v2 == 1) {
        cg_path(p, sizeof p, NULL, id, NULL);
        if (mkdir(p, 0755) != 0) {
            abxl_fmt(err, errlen, "cannot create cgroup %s: %s", p, strerror(errno));
            return -1;
        }
        abxl_fmt(v, sizeof v, "%lld", mem);
        if (set_limit(NULL, id, "memory.max", v, false, err, errlen) != 0 ||
            set_limit(NULL, id, "memory.swap.max", "0", true, err, errlen) != 0)
            return -1;
        abxl_fmt(v, sizeof v, "%ld", pids);
        if (set_limit(NULL, id, "pids.max", v, false, err, errlen) != 0)
            return -1;
        abxl_fmt(v, sizeof v, "%lld 100000", quota);
        return set_limit(NULL, id, "cpu.max", v, false, err, errlen);
    }
    for (size_t i = 0; i < sizeof v1_ctrls / sizeof v1_ctrls[0]; i++) {
        if (i == V1_REQUIRED && !cg_has_freezer)
            continue;
        cg_path(p, sizeof p, v1_ctrls[i], id, NULL);
        if (mkdir(p, 0755) != 0) {
            abxl_fmt(err, errlen, "cannot create cgroup %s: %s", p, strerror(errno));
            return -1;
        }
    }
    abxl_fmt(v, sizeof v, "%lld", mem);
    /* memsw (memory + swap) must be set after the memory limit. */
    if (set_limit("memory", id, "memory.limit_in_bytes", v, false, err, errlen) != 0 ||
        set_limit("memory", id, "memory.memsw.limit_in_bytes", v, true, err, errlen) != 0)
        return -1;
    abxl_fmt(v, sizeof v, "%ld", pids);
    if (set_limit("pids", id, "pids.max", v, false, err, errlen) != 0)
        return -1;
    abxl_fmt(v, sizeof v, "%lld", quota);
    if (set_limit("cpu", id, "cpu.cfs_period_us", "100000", false, err, errlen) != 0)
        return -1;
    return set_limit("cpu", id, "cpu.cfs_quota_us", v, false, err, errlen);
}

int abxl_cgroup_procs_files(const char *id, char paths[][512], int max)
{
    int n = 0;
    if (cg_v2 == 1) {
        if (max > 0 && cg_path(paths[n], 512, NULL, id, "cgroup.procs") == 0)
            n++;
        return n;
    }
    for (size_t i = 0; i < sizeof v1_ctrls / sizeof v1_ctrls[0] && n < max; i++) {
        if (i == V1_REQUIRED && !cg_has_freezer)
            continue;
        if (cg_path(paths[n], 512, v1_ctrls[i], id, "cgroup.procs") == 0)
            n++;
    }
    return n;
}

/* SIGKILLs every pid a cgroup.procs file lists (path); quiet when it is
 * gone. */
static void kill_listed(const char *path)
{
    char buf[65536];

    if (abxl_read_value(path, buf, sizeof buf) != 0)
        return;
    for (char *s = buf; *s;) {
        char *end;
        long pid = strtol(s, &end, 10);
        if (end == s)
            break;
        if (pid > 0)
            kill((pid_t)pid, SIGKILL);
        s = end + strspn(end, "\n");
    }
}

/* SIGKILLs the processes in the sandbox's cgroup (the memory one on v1). */
static void kill_procs(const char *id)
{
    char p[512];

    cg_path(p, sizeof p, "memory", id, "cgroup.procs");
    kill_listed(p);
}

int abxl_cgroup_freeze(const char *id, bool frozen)
{
    char p[512], st[64];
    if (!cg_has_freezer)
        return -1;
    if (cg_v2 == 1) {
        cg_path(p, sizeof p, NULL, id, "cgroup.freeze");
        if (abxl_write_value(p, frozen ? "1" : "0") != 0)
            return -1;
        cg_path(p, sizeof p, NULL, id, "cgroup.events");
        for (int i = 0; i < 200; i++) {
            if (read_keyed(p, "frozen") == (frozen ? 1 : 0))
                return 0;
            abxl_sleep_ms(5);
        }
        return -1;
    }
    cg_path(p, sizeof p, "freezer", id, "freezer.state");
    if (abxl_write_value(p, frozen ? "FROZEN" : "THAWED") != 0)
        return -1;
    /* FREEZING until every task stopped; v1 retries on its own. */
    for (int i = 0; i < 200; i++) {
        if (abxl_read_value(p, st, sizeof st) == 0 &&
            strncmp(st, frozen ? "FROZEN" : "THAWED", 6) == 0)
            return 0;
        if (frozen)
            abxl_write_value(p, "FROZEN");
        abxl_sleep_ms(5);
    }
    return -1;
}

void abxl_cgroup_kill(const char *id)
{
    char p[512];
    if (cg_v2 == 1) {
        cg_path(p, sizeof p, NULL, id, "cgroup.kill");
        if (abxl_write_value(p, "1") == 0)
            return;
    }
    kill_procs(id);
    /* A frozen task keeps SIGKILL pending until thawed. */
    abxl_cgroup_freeze(id, false);
}

void abxl_cgroup_destroy(const char *id)
{
    char p[512];
    abxl_cgroup_kill(id);
    if (cg_v2 == 1) {
        cg_path(p, sizeof p, NULL, id, NULL);
        for (int i = 0; i < 200 && rmdir(p) != 0 && errno == EBUSY; i++)
            abxl_sleep_ms(5);
        return;
    }
    for (size_t i = 0; i < sizeof v1_ctrls / sizeof v1_ctrls[0]; i++) {
        cg_path(p, sizeof p, v1_ctrls[i], id, NULL);
        /* EBUSY while the last task is still exiting. */
        for (int k = 0; k < 200 && rmdir(p) != 0 && errno == EBUSY; k++) {
            kill_procs(id);
            abxl_sleep_ms(5);
        }
    }
}

void abxl_cgroup_usage(const char *id, long long *mem, double *cpu_s, bool *oom)
{
    char p[512];
    *mem = -1;
    *cpu_s = -1;
    *oom = false;
    if (cg_v2 == 1) {
        cg_path(p, sizeof p, NULL, id, "memory.current");
        *mem = read_ll(p);
        cg_path(p, sizeof p, NULL, id, "cpu.stat");
        long long us = read_keyed(p, "usage_usec");
        if (us >= 0)
            *cpu_s = (double)us / 1e6;
        cg_path(p, sizeof p, NULL, id, "memory.events");
        *oom = read_keyed(p, "oom_kill") > 0;
        return;
    }
    cg_path(p, sizeof p, "memory", id, "memory.usage_in_bytes");
    *mem = read_ll(p);
    cg_path(p, sizeof p, "cpuacct", id, "cpuacct.usage");
    long long ns = read_ll(p);
    if (ns >= 0)
        *cpu_s = (double)ns / 1e9;
    cg_path(p, sizeof p, "memory", id, "memory.oom_control");
    *oom = read_keyed(p, "oom_kill") > 0;
}

/* ---- leftovers: what dead servers left (abx-local gc, serve's start) ---- */

/* Kills the tasks of one cgroup folder and everything below it, thaws it
 * (a frozen task keeps SIGKILL pending) and removes it. */
static int kill_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        char sub[1024];
        if (e->d_type != DT_DIR || e->d_name[0] == '.' ||
            abxl_fmt(sub, sizeof sub, "%s/%s", dir, e->d_name) != 0)
            continue;
        if (kill_rmdir(sub) != 0)
            rc = -1;
    }
    closedir(d);
    char p[1100];
    for (int i = 0; i < 400; i++) {
        abxl_fmt(p, sizeof p, "%s/cgroup.procs", dir);
        kill_listed(p);
        abxl_fmt(p, sizeof p, "%s/%s", dir, cg_v2 == 1 ? "cgroup.freeze" : "freezer.state");
        abxl_write_value(p, cg_v2 == 1 ? "0" : "THAWED");   /* absent outside the freezer: fine */
        if (rmdir(dir) == 0 || errno == ENOENT)
            return rc;
        if (errno != EBUSY)
            return -1;
        abxl_sleep_ms(5);
    }
    return -1;
}

/* srv-<pid>-<start> of a server still running (this one included). */
static bool server_alive(const char *name)
{
    char *end;
    if (strncmp(name, "srv-", 4) != 0)
        return false;   /* an older layout's sandbox: its server is gone */
    long pid = strtol(name + 4, &end, 10);
    if (pid <= 0 || *end != '-')
        return false;
    return abxl_proc_alive((pid_t)pid, strtoull(end + 1, NULL, 10));
}

/* Removes the groups of dead servers in top; other names too when any
 * (the shared abx-local/ of an older layout, whose sandboxes sat there). */
static int gc_dir(const char *top, bool any, bool counted)
{
    char dir[1024];
    int removed = 0;
    DIR *d = opendir(top);
    if (d == NULL)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.' || server_alive(e->d_name) ||
            (!any && strncmp(e->d_name, "srv-", 4) != 0) ||
            abxl_fmt(dir, sizeof dir, "%s/%s", top, e->d_name) != 0)
            continue;
        if (kill_rmdir(dir) != 0)
            abxl_log(ABXL_LOG_ERROR, "cannot remove the leftover cgroup %s", dir);
        else if (counted)
            removed++;
    }
    closedir(d);
    return removed;
}

int abxl_cgroup_gc(void)
{
    char top[512];
    int removed = 0;
    if (cg_v2 == 1) {
        /* Every place a server may have put its groups (cgroup_place.c). */
        char dirs[64][512];
        int n = abxl_cgroup_gc_dirs(cg_v2_top, dirs, 64);
        abxl_fmt(top, sizeof top, "%s/%s", CG_ROOT, CG_GROUP);
        removed += gc_dir(top, true, true);
        for (int i = 0; i < n; i++)
            removed += gc_dir(dirs[i], false, true);
        return removed;
    }
    /* The freezer first: the other hierarchies' tasks die once thawed. */
    static const char *const order[] = {"freezer", "memory", "pids", "cpu", "cpuacct"};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        cg_top(top, sizeof top, order[i]);
        /* counted once, in a hierarchy every layout has */
        removed += gc_dir(top, true, strcmp(order[i], "memory") == 0);
    }
    return removed;
}

void abxl_cgroup_shutdown(void)
{
    char p[512];
    for (size_t i = 0; i < sizeof v1_ctrls / sizeof v1_ctrls[0] && cg_self[0]; i++) {
        if (cg_v2 == 1 && i > 0)
            break;
        cg_path(p, sizeof p, v1_ctrls[i], NULL, NULL);
        kill_rmdir(p);
    }
    /* The last server out leaves no empty abx-local/ beside the system's
     * groups (one still in use is not empty: EBUSY). */
    if (cg_v2 == 1 && cg_v2_shared)
        rmdir(cg_v2_top);
}
