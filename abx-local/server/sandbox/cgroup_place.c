/* Where this server's cgroups go on cgroup v2 (abx-local/DESIGN.md
 * "Limits: cgroups"):
 *
 *   - a delegated cgroup (a systemd unit with Delegate=yes, the scope
 *     abxl_cgroup_scope_exec asks for, or a container's own cgroup
 *     namespace): the server's groups go below its own cgroup, whose
 *     processes first move into a leaf, "init" (the kernel's "no internal
 *     processes" rule: a cgroup with processes cannot enable controllers
 *     for its children);
 *   - the root of a machine no manager owns: /sys/fs/cgroup/abx-local,
 *     shared by every server there, removed by the last one to stop;
 *   - anything else (systemd without systemd-run, a container sharing the
 *     host's cgroups): the same shared folder, beside the manager's, said
 *     in the log.
 *
 * systemd documents that a program managing cgroups must ask for a
 * delegated subtree and stay inside it; that is why serve re-executes
 * itself in a scope on a systemd host. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base.h"
#include "log.h"
#include "sandbox.h"

#define CG_ROOT "/sys/fs/cgroup"
#define CGROUP2_MAGIC 0x63677270
#define SCOPE_ENV "ABX_LOCAL_SCOPE"
#define SCOPE_PREFIX "abx-local-"
#define NEED "+memory +pids +cpu"

static char scope_unit[96];   /* the scope serve re-executed itself in */

static bool on_v2(void)
{
    struct statfs sf;
    return statfs(CG_ROOT, &sf) == 0 && (unsigned long)sf.f_type == CGROUP2_MAGIC;
}

/* This process's cgroup, "/" or "/system.slice/x.scope" (v2's "0::" line). */
static int own_cgroup(char *out, size_t n)
{
    char buf[4096];
    if (abxl_read_value("/proc/self/cgroup", buf, sizeof buf) != 0)
        return -1;
    for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, "0::", 3) == 0) {
            size_t len = strcspn(line + 3, "\n");
            if (len == 0 || len >= n)
                return -1;
            memcpy(out, line + 3, len);
            out[len] = '\0';
            return 0;
        }
    return -1;
}

/* systemd marks the cgroup of a unit with Delegate=yes (v251+). */
static bool delegated(const char *dir)
{
    static const char *const names[] = {"trusted.delegate", "user.delegate"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char v[8];
        ssize_t r = getxattr(dir, names[i], v, sizeof v - 1);
        if (r > 0 && v[0] == '1')
            return true;
    }
    return false;
}

/* systemd-run, when serve would re-execute itself in a scope of its own:
 * v2, root (or, for abx-local check, run as root), systemd up, not
 * already in "/" or a delegated cgroup. */
static const char *scope_runner(bool root)
{
    static const char *const runs[] = {"/usr/bin/systemd-run", "/bin/systemd-run"};
    const char *run = NULL;
    char own[1024], dir[1200];
    for (size_t i = 0; i < sizeof runs / sizeof runs[0] && run == NULL; i++)
        if (access(runs[i], X_OK) == 0)
            run = runs[i];
    /* The private socket: systemd itself is up and answers root. */
    if (!on_v2() || !root || run == NULL || access("/run/systemd/system", F_OK) != 0 ||
        access("/run/systemd/private", F_OK) != 0 || own_cgroup(own, sizeof own) != 0 ||
        strcmp(own, "/") == 0 || abxl_fmt(dir, sizeof dir, "%s%s", CG_ROOT, own) != 0 ||
        delegated(dir))
        return NULL;
    return run;
}

void abxl_cgroup_scope_exec(char **argv)
{
    const char *mark = getenv(SCOPE_ENV);
    if (mark != NULL) {
        abxl_fmt(scope_unit, sizeof scope_unit, "%s", mark);
        unsetenv(SCOPE_ENV);   /* nothing below the server needs it */
        return;
    }
    char exe[PATH_MAX];
    const char *run = scope_runner(geteuid() == 0);
    if (run == NULL)
        return;
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return;
    exe[len] = '\0';
    /* pid and start time: srv-<pid>-<start> of the groups inside, and a
     * name no earlier scope (a crashed server's, still there) holds. */
    char unit[96], arg_unit[128];
    pid_t me = getpid();
    abxl_fmt(unit, sizeof unit, SCOPE_PREFIX "%d-%llu", (int)me, abxl_proc_starttime(me));
    abxl_fmt(arg_unit, sizeof arg_unit, "--unit=%s", unit);
    int argc = 0;
    while (argv[argc] != NULL)
        argc++;
    const char **nargv = calloc((size_t)argc + 12, sizeof *nargv);
    if (nargv == NULL)
        return;
    int k = 0;
    nargv[k++] = run;
    nargv[k++] = "--scope";
    nargv[k++] = "--quiet";
    nargv[k++] = "--collect";
    nargv[k++] = "--property=Delegate=yes";
    nargv[k++] = "--description=abx-local serve (sandboxes' cgroups)";
    nargv[k++] = arg_unit;
    nargv[k++] = "--";
    nargv[k++] = exe;
    for (int i = 1; i < argc; i++)
        nargv[k++] = argv[i];
    nargv[k] = NULL;
    setenv(SCOPE_ENV, unit, 1);
    execv(run, (char *const *)nargv);   /* same pid: whoever started us still waits on it */
    abxl_log(ABXL_LOG_WARN, "cannot run %s for a delegated cgroup: %s", run, strerror(errno));
    unsetenv(SCOPE_ENV);
    free((void *)nargv);
}

/* Every process of dir into dir/init (a process may fork meanwhile:
 * again until none is left). */
static int move_to_leaf(const char *dir, char *err, size_t errlen)
{
    char leaf[1200], procs[1300], buf[65536];
    abxl_fmt(leaf, sizeof leaf, "%s/init", dir);
    if (mkdir(leaf, 0755) != 0 && errno != EEXIST) {
        abxl_fmt(err, errlen, "cannot create %s: %s", leaf, strerror(errno));
        return -1;
    }
    abxl_fmt(leaf, sizeof leaf, "%s/init/cgroup.procs", dir);
    abxl_fmt(procs, sizeof procs, "%s/cgroup.procs", dir);
    for (int round = 0; round < 50; round++) {
        if (abxl_read_value(procs, buf, sizeof buf) != 0) {
            abxl_fmt(err, errlen, "cannot read %s: %s", procs, strerror(errno));
            return -1;
        }
        if (buf[0] == '\0')
            return 0;
        for (char *s = buf; *s;) {
            size_t len = strcspn(s, "\n");
            char pid[32];
            if (len > 0 && len < sizeof pid) {
                memcpy(pid, s, len);
                pid[len] = '\0';
                if (abxl_write_value(leaf, pid) != 0 && errno != ESRCH) {
                    abxl_fmt(err, errlen, "cannot move process %s into %s: %s", pid, leaf,
                             strerror(errno));
                    return -1;
                }
            }
            s += len + (s[len] == '\n');
        }
    }
    abxl_fmt(err, errlen, "%s keeps gaining processes", procs);
    return -1;
}

static const char *const need[] = {"memory", "pids", "cpu"};

/* The first of memory, pids and cpu that ctrls (cgroup.controllers) lacks. */
static const char *lacks(const char *ctrls)
{
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        bool have = false;
        size_t nl = strlen(need[i]);
        for (const char *s = ctrls; (s = strstr(s, need[i])) != NULL; s += nl)
            if ((s == ctrls || s[-1] == ' ') && (s[nl] == ' ' || s[nl] == '\n' || !s[nl]))
                have = true;
        if (!have)
            return need[i];
    }
    return NULL;
}

/* memory, pids and cpu offered to dir's children. */
static int check_offered(const char *dir, char *err, size_t errlen)
{
    char p[1200], ctrls[512];
    abxl_fmt(p, sizeof p, "%s/cgroup.controllers", dir);
    if (abxl_read_value(p, ctrls, sizeof ctrls) != 0) {
        abxl_fmt(err, errlen, "cgroup v2: %s unreadable: %s", p, strerror(errno));
        return -1;
    }
    const char *missing = lacks(ctrls);
    if (missing != NULL) {
        ctrls[strcspn(ctrls, "\n")] = '\0';
        abxl_fmt(err, errlen, "cgroup v2: the %s controller is not delegated to %s (it "
                 "has: %.200s); give abx-local a cgroup with memory, pids and cpu "
                 "(abx-local/DESIGN.md, \"Limits: cgroups\")", missing, dir, ctrls);
        return -1;
    }
    return 0;
}

const char *abxl_container_hint(void)
{
    /* podman writes /run/.containerenv, Docker /.dockerenv; systemd's
     * convention is $container (lxc, systemd-nspawn, podman, docker). */
    const char *c = getenv("container");
    bool in = access("/run/.containerenv", F_OK) == 0 || access("/.dockerenv", F_OK) == 0 ||
              (c != NULL && c[0] != '\0');
    return in ? "; abx-local runs in a container here: start that container with "
                "--privileged (podman run or docker run), which gives it user namespaces, "
                "a /proc it may mount again and cgroups of its own it may write "
                "(abx-local/DESIGN.md, \"In a container\")" : "";
}

static int enable(const char *dir, char *err, size_t errlen)
{
    char p[1200];
    abxl_fmt(p, sizeof p, "%s/cgroup.subtree_control", dir);
    if (abxl_write_value(p, NEED) == 0)
        return 0;
    if (errno == EROFS || errno == EACCES || errno == EPERM)
        abxl_fmt(err, errlen, "cgroup v2: %s is not writable here: %s%s", p, strerror(errno),
                 abxl_container_hint());
    else
        abxl_fmt(err, errlen, "cgroup v2: cannot enable memory, pids and cpu in %s: %s", p,
                 strerror(errno));
    return -1;
}

int abxl_cgroup_place(char *top, size_t n, bool *shared, char *err, size_t errlen)
{
    char own[1024], dir[1200];
    if (own_cgroup(own, sizeof own) != 0 ||
        abxl_fmt(dir, sizeof dir, "%s%s", CG_ROOT, strcmp(own, "/") == 0 ? "" : own) != 0 ||
        strlen(dir) > 300) {
        /* 300: room below for srv-<pid>-<start>/<id>/<file> in 512 */
        abxl_fmt(err, errlen, "cgroup v2: this process's cgroup (/proc/self/cgroup) is "
                 "unreadable or its path too long");
        return -1;
    }
    /* cgroup.freeze exists below the root only: "/" with it is the root
     * of a cgroup namespace, a container's own cgroup. */
    char freeze[1300];
    abxl_fmt(freeze, sizeof freeze, "%s/cgroup.freeze", dir);
    bool ns_root = strcmp(own, "/") == 0 && access(freeze, F_OK) == 0;
    bool ours = scope_unit[0] && strstr(own, scope_unit) != NULL;
    if (ns_root || ours || (strcmp(own, "/") != 0 && delegated(dir))) {
        *shared = false;
        if (abxl_fmt(top, n, "%s", dir) != 0 || check_offered(dir, err, errlen) != 0 ||
            move_to_leaf(dir, err, errlen) != 0 || enable(dir, err, errlen) != 0)
            return -1;
        abxl_log(ABXL_LOG_INFO, "sandbox cgroups below %s (%s)", dir,
                 ns_root ? "this cgroup namespace's root" : ours ? "a delegated scope"
                                                               : "a delegated cgroup");
        return 0;
    }
    *shared = true;
    if (strcmp(own, "/") != 0)
        abxl_log(ABXL_LOG_WARN, "sandbox cgroups below %s/abx-local, outside any delegated "
                 "cgroup (this process is in %s): on a systemd host run abx-local as root "
                 "with systemd-run, or in a unit with Delegate=yes", CG_ROOT, own);
    abxl_fmt(top, n, "%s/abx-local", CG_ROOT);
    if (check_offered(CG_ROOT, err, errlen) != 0)
        return -1;
    /* Another server may remove the shared folder as it stops: again. */
    for (int i = 0; i < 5; i++) {
        if (mkdir(top, 0755) != 0 && errno != EEXIST) {
            abxl_fmt(err, errlen, "cgroup v2: cannot create %s: %s", top, strerror(errno));
            return -1;
        }
        if (enable(CG_ROOT, err, errlen) != 0)
            return -1;
        if (enable(top, err, errlen) == 0)
            return 0;
        if (errno != ENOENT)
            return -1;
    }
    return -1;
}

int abxl_cgroup_plan(struct abxl_cg_plan *p)
{
    char own[1024], freeze[1300];
    memset(p, 0, sizeof *p);
    p->version = on_v2() ? 2 : access(CG_ROOT "/memory", F_OK) == 0 ? 1 : 0;
    if (p->version != 2)
        return 0;
    if (own_cgroup(own, sizeof own) != 0) {
        p->how = "unknown: /proc/self/cgroup is unreadable";
        return -1;
    }
    abxl_fmt(p->own, sizeof p->own, "%s", own);
    abxl_fmt(p->dir, sizeof p->dir, "%s%s", CG_ROOT, strcmp(own, "/") == 0 ? "" : own);
    abxl_fmt(freeze, sizeof freeze, "%s/cgroup.freeze", p->dir);
    if (scope_runner(true) != NULL) {   /* serve runs as root */
        /* systemd delegates to the scope what the root offers */
        abxl_fmt(p->dir, sizeof p->dir, "%s", CG_ROOT);
        p->how = "a systemd scope of its own (systemd-run --scope, Delegate=yes)";
    } else if (strcmp(own, "/") == 0 && access(freeze, F_OK) == 0) {
        p->how = "this cgroup namespace's root (a container's own cgroup)";
    } else if (strcmp(own, "/") != 0 && delegated(p->dir)) {
        p->how = "this process's delegated cgroup (Delegate=yes)";
    } else {
        p->shared = true;
        p->outside = strcmp(own, "/") != 0;
        abxl_fmt(p->dir, sizeof p->dir, "%s", CG_ROOT);
        p->how = p->outside ? "the shared " CG_ROOT "/abx-local, outside any delegated "
                              "cgroup (run abx-local as root with systemd-run, or in a "
                              "unit with Delegate=yes)"
                            : "the shared " CG_ROOT "/abx-local (no cgroup manager here)";
    }
    char ctrl[1300];
    abxl_fmt(ctrl, sizeof ctrl, "%s/cgroup.controllers", p->dir);
    if (abxl_read_value(ctrl, p->controllers, sizeof p->controllers) != 0)
        p->controllers[0] = '\0';
    p->controllers[strcspn(p->controllers, "\n")] = '\0';
    p->lacks = lacks(p->controllers);
    abxl_fmt(ctrl, sizeof ctrl, "%s/cgroup.subtree_control", p->dir);
    p->writable = access(ctrl, W_OK) == 0;
    return 0;
}

int abxl_cgroup_gc_dirs(const char *top, char dirs[][512], int max)
{
    int k = 0;
    if (k < max)
        abxl_fmt(dirs[k++], 512, "%s", CG_ROOT);
    if (k < max && top && top[0] && strcmp(top, CG_ROOT) != 0 &&
        strcmp(top, CG_ROOT "/abx-local") != 0)
        abxl_fmt(dirs[k++], 512, "%s", top);
    /* Scopes of earlier servers (abxl_cgroup_scope_exec): a paused sandbox
     * outlives its killed server and keeps its scope. */
    DIR *d = opendir(CG_ROOT "/system.slice");
    if (d == NULL)
        return k;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && k < max) {
        size_t len = strlen(e->d_name);
        if (e->d_type != DT_DIR || strncmp(e->d_name, SCOPE_PREFIX, strlen(SCOPE_PREFIX)) != 0 ||
            len < 6 || strcmp(e->d_name + len - 6, ".scope") != 0)
            continue;
        char p[512];
        if (abxl_fmt(p, sizeof p, "%s/system.slice/%s", CG_ROOT, e->d_name) == 0 &&
            (top == NULL || strcmp(p, top) != 0))
            abxl_fmt(dirs[k++], 512, "%s", p);
    }
    closedir(d);
    return k;
}
