/* `abx-local check [--json]`: what this host offers `abx-local serve`,
 * found without changing it (abx-e2e doctor --local shows it before it
 * starts abx-local): root or sudo, user namespaces (and AppArmor's
 * restriction of them), cgroups and where serve's groups would go,
 * overlayfs, bubblewrap and a test sandbox, gVisor, pidfd_open, abx-envd,
 * a container. The probes that need root (a test sandbox, an overlay
 * mount) run only as root, in throwaway namespaces and a temporary folder.
 * Every fact goes into one cJSON tree, printed whole with --json; each
 * blocking problem carries its fix. Exit 0 when serve can start here (as
 * root), 1 when not, 2 on a usage error. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base.h"
#include "check.h"
#include "log.h"
#include "sandbox.h"

struct check {
    cJSON *root, *problems, *lines;
    bool json;
};

static void problem(struct check *c, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void problem(struct check *c, const char *fix, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "problem", msg);
    cJSON_AddStringToObject(p, "fix", fix);
    cJSON_AddItemToArray(c->problems, p);
}

/* One line of the text, printed, or with --json kept in "lines" (what
 * abx-e2e doctor --local shows). */
static void line(struct check *c, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void line(struct check *c, const char *what, const char *fmt, ...)
{
    char msg[1024], text[1100];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    abxl_fmt(text, sizeof text, "%-17s %s", what, msg);
    if (c->json)
        cJSON_AddItemToArray(c->lines, cJSON_CreateString(text));
    else
        abxl_out("  %s\n", text);
}

/* An integer kernel setting, -1 when the kernel has no such file. */
static long sysctl_long(const char *path)
{
    char v[64];
    return abxl_read_value(path, v, sizeof v) == 0 ? strtol(v, NULL, 10) : -1;
}

/* abxl_run_lines' line when the program itself could not run. */
static void note_absent(const char *line, void *arg)
{
    if (strncmp(line, "cannot run ", 11) == 0)
        *(bool *)arg = true;
}

static void user(struct check *c)
{
    cJSON *o = cJSON_AddObjectToObject(c->root, "user");
    uid_t uid = geteuid();
    cJSON_AddNumberToObject(o, "uid", (double)uid);
    cJSON_AddBoolToObject(o, "root", uid == 0);
    if (uid == 0) {
        line(c, "user", "root (uid 0)");
        return;
    }
    /* -n: never a prompt, so it answers at once */
    const char *const probe[] = {"sudo", "-n", "true", NULL};
    char err[256];
    bool absent = false;
    int rc = abxl_run_lines(probe, note_absent, &absent, err, sizeof err);
    const char *sudo = rc == 0 ? "passwordless" : absent ? "absent" : "asks a password";
    cJSON_AddStringToObject(o, "sudo", sudo);
    line(c, "user", "uid %d, not root; sudo: %s", (int)uid, sudo);
    if (rc != 0)
        problem(c, "run it as root, give this user passwordless sudo, or run the suite "
                "against a cloud platform (ABX_SANDBOX_* in .env, then `make e2e`)",
                "abx-local serve needs root; uid %d is not root and sudo %s", (int)uid,
                absent ? "is not installed" : "asks a password");
}

/* A user namespace, tried in a child: 0 or the errno. */
static int try_userns(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno & 0x7f);
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return EIO;
    return WEXITSTATUS(status);
}

static void userns(struct check *c)
{
    cJSON *o = cJSON_AddObjectToObject(c->root, "userNamespaces");
    long max = sysctl_long("/proc/sys/user/max_user_namespaces");
    long clone = sysctl_long("/proc/sys/kernel/unprivileged_userns_clone");
    long aa = sysctl_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    int e = try_userns();
    cJSON_AddBoolToObject(o, "allowed", e == 0);
    cJSON_AddNumberToObject(o, "max", (double)max);
    if (clone >= 0)
        cJSON_AddBoolToObject(o, "unprivilegedClone", clone == 1);
    cJSON_AddBoolToObject(o, "apparmorRestricted", aa == 1);
    char more[160] = "";
    if (clone == 0)
        abxl_fmt(more, sizeof more, "; kernel.unprivileged_userns_clone=0");
    line(c, "user namespaces", "%s for this user (max %ld%s; AppArmor %s)",
         e == 0 ? "allowed" : "refused", max, more,
         aa == 1 ? "restricts unprivileged ones: root's are not affected"
                 : "does not restrict them");
    if (e != 0 && geteuid() == 0)
        problem(c, "set user.max_user_namespaces above 0 (sysctl), or, in a container, start "
                "it with --privileged",
                "user namespaces refused to root (%s): a sandbox's root is an unprivileged "
                "host uid through one", strerror(e));
}

static void cgroups(struct check *c)
{
    cJSON *o = cJSON_AddObjectToObject(c->root, "cgroup");
    struct abxl_cg_plan p;
    int rc = abxl_cgroup_plan(&p);
    cJSON_AddNumberToObject(o, "version", p.version);
    if (p.version == 0) {
        line(c, "cgroups", "not mounted at /sys/fs/cgroup");
        problem(c, "mount cgroup2 at /sys/fs/cgroup", "no cgroups: sandbox limits need them");
        return;
    }
    if (p.version == 1) {
        static const char *const v1[] = {"memory", "pids", "cpu", "cpuacct"};
        char path[128], missing[64] = "";
        for (size_t i = 0; i < sizeof v1 / sizeof v1[0]; i++) {
            abxl_fmt(path, sizeof path, "/sys/fs/cgroup/%s/tasks", v1[i]);
            if (access(path, F_OK) != 0 && missing[0] == '\0')
                abxl_fmt(missing, sizeof missing, "%s", v1[i]);
        }
        line(c, "cgroups", "v1; %s", missing[0] ? "a hierarchy is missing"
                                               : "memory, pids, cpu and cpuacct mounted");
        if (missing[0])
            problem(c, "mount the v1 hierarchy, or boot with cgroup v2",
                    "cgroup v1: the %s controller is not mounted at /sys/fs/cgroup/%s", missing,
                    missing);
        return;
    }
    if (rc != 0) {
        line(c, "cgroups", "v2; %s", p.how);
        problem(c, "run abx-local where /proc/self/cgroup is readable", "cgroup v2: %s", p.how);
        return;
    }
    cJSON_AddStringToObject(o, "own", p.own);
    cJSON_AddStringToObject(o, "placement", p.how);
    cJSON_AddStringToObject(o, "dir", p.dir);
    cJSON_AddStringToObject(o, "controllers", p.controllers);
    cJSON_AddBoolToObject(o, "shared", p.shared);
    cJSON_AddBoolToObject(o, "writable", p.writable);
    line(c, "cgroups", "v2; sandbox groups would go in %s", p.how);
    line(c, "", "controllers offered there (%s): %s", p.dir,
         p.controllers[0] ? p.controllers : "none");
    if (p.lacks)
        problem(c, "give abx-local a cgroup with memory, pids and cpu: a systemd unit with "
                "Delegate=yes (abx-local/DESIGN.md, \"Limits: cgroups\")",
                "cgroup v2: the %s controller is not offered in %s", p.lacks, p.dir);
    if (geteuid() == 0 && !p.writable)
        problem(c, "start the container with --privileged (abx-local/DESIGN.md, \"In a "
                "container\")", "cgroup v2: %s/cgroup.subtree_control is not writable here",
                p.dir);
}

/* overlay in /proc/filesystems, or as a module of this kernel. */
static bool overlay_known(void)
{
    char *fs = abxl_read_text("/proc/filesystems", 1 << 16);
    bool known = fs != NULL && strstr(fs, "\toverlay\n") != NULL;
    free(fs);
    return known || access("/sys/module/overlay", F_OK) == 0;
}

/* As root: an overlay mount, in a temporary state dir. */
static void overlay_probe(struct check *c, cJSON *ov)
{
    char dir[] = "/tmp/abx-local-check.XXXXXX", err[1024];
    if (mkdtemp(dir) == NULL) {
        problem(c, "make /tmp writable", "cannot create a folder in /tmp: %s", strerror(errno));
        return;
    }
    char saved[sizeof abxl_cfg.state_dir];
    memcpy(saved, abxl_cfg.state_dir, sizeof saved);
    abxl_fmt(abxl_cfg.state_dir, sizeof abxl_cfg.state_dir, "%s", dir);
    int rc = abxl_overlay_check(err, sizeof err);
    memcpy(abxl_cfg.state_dir, saved, sizeof saved);
    abxl_rm_rf(dir);
    cJSON_AddBoolToObject(ov, "mounted", rc == 0);
    line(c, "overlayfs", "%s", rc == 0 ? "an overlay mounts (a probe, as root)" : err);
    if (rc != 0)
        problem(c, "load the overlay module (modprobe overlay), or, in a container, start it "
                "with --privileged", "%s", err);
}

static void tools(struct check *c)
{
    bool root = geteuid() == 0;
    cJSON *bw = cJSON_AddObjectToObject(c->root, "bubblewrap");
    bool have_bw = access(abxl_cfg.bwrap, X_OK) == 0;
    char err[1024] = "";
    int brc = have_bw && root ? abxl_bwrap_probe(err, sizeof err) : -1;
    cJSON_AddStringToObject(bw, "path", abxl_cfg.bwrap);
    cJSON_AddBoolToObject(bw, "present", have_bw);
    if (have_bw && root)
        cJSON_AddBoolToObject(bw, "sandboxStarts", brc == 0);
    line(c, "bubblewrap", "%s%s%s", have_bw ? "" : "not found: ", abxl_cfg.bwrap,
         !have_bw ? "" : !root ? " (a test sandbox needs root: not tried)"
                       : brc == 0 ? "; a test sandbox starts" : "; a test sandbox fails");
    if (!have_bw)
        problem(c, "install bubblewrap (make deps-local)", "bubblewrap not found (%s)",
                abxl_cfg.bwrap[0] ? abxl_cfg.bwrap : "bwrap on PATH");
    else if (root && brc != 0)
        problem(c, "see the message: a container needs --privileged", "%s", err);
    cJSON *ov = cJSON_AddObjectToObject(c->root, "overlay");
    bool known = overlay_known();
    cJSON_AddBoolToObject(ov, "known", known);
    if (root)
        overlay_probe(c, ov);
    else
        line(c, "overlayfs", "%s", known ? "known to this kernel (a mount needs root: not tried)"
                                         : "not listed in /proc/filesystems (a module may load)");
    bool gv = access(abxl_cfg.runsc, X_OK) == 0;
    cJSON *g = cJSON_AddObjectToObject(c->root, "gvisor");
    cJSON_AddBoolToObject(g, "present", gv);
    if (gv)
        cJSON_AddStringToObject(g, "path", abxl_cfg.runsc);
    line(c, "gVisor (runsc)", "%s%s%s", gv ? "" : "not found: ", abxl_cfg.runsc,
         gv ? "" : " (RUNTIME=gvisor needs it: make deps-local RUNTIME=gvisor)");
    if (!gv && abxl_runtime() == &abxl_runtime_gvisor)
        problem(c, "install runsc (make deps-local RUNTIME=gvisor)",
                "the runtime is gvisor (--runtime or ABX_LOCAL_RUNTIME), and runsc is not "
                "installed (%s)", abxl_cfg.runsc);
    int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    cJSON_AddBoolToObject(c->root, "pidfd", pfd >= 0);
    line(c, "pidfd_open", "%s", pfd >= 0 ? "yes" : strerror(errno));
    if (pfd >= 0)
        close(pfd);
    else
        problem(c, "use Linux 5.3 or later", "pidfd_open is missing (kills need it)");
    bool envd = abxl_cfg.envd_path[0] && access(abxl_cfg.envd_path, X_OK) == 0;
    cJSON_AddBoolToObject(c->root, "envd", envd);
    char real[4096];
    line(c, "abx-envd", "%s", !envd ? "not found beside abx-local"
                               : realpath(abxl_cfg.envd_path, real) ? real : abxl_cfg.envd_path);
    if (!envd)
        problem(c, "build it (make build-local)", "abx-envd not found beside abx-local");
    const char *hint = abxl_container_hint();
    cJSON_AddBoolToObject(c->root, "container", hint[0] != '\0');
    line(c, "container", hint[0] ? "yes (/.dockerenv, /run/.containerenv or $container)"
                                 : "none seen");
}

const char abxl_check_help[] =
    "usage: abx-local check [--json] [serve's options]\n"
    "\n"
    "Says what this host offers abx-local serve, changing nothing: root or sudo,\n"
    "user namespaces (and AppArmor's restriction of them), cgroups and where\n"
    "serve's groups would go, overlayfs, bubblewrap, gVisor, pidfd_open,\n"
    "abx-envd, a container. As root it also starts a test sandbox and mounts a\n"
    "test overlay. Each problem comes with its fix. It takes serve's options\n"
    "(abx-local serve --help); --bwrap, --runsc, --runtime and --envd matter.\n"
    "\n"
    "  --json               one JSON object instead of text\n"
    "  -h, --help           this help\n"
    "\n"
    "exit codes: 0 serve can start here (as root), 1 it cannot, 2 usage error.\n";

int abxl_check_main(bool json)
{
    struct check c = {.json = json};
    c.root = cJSON_CreateObject();
    c.problems = cJSON_CreateArray();
    c.lines = cJSON_AddArrayToObject(c.root, "lines");
    if (c.root == NULL || c.problems == NULL || c.lines == NULL) {
        cJSON_Delete(c.root);
        cJSON_Delete(c.problems);
        abxl_log_cmd("check", ABXL_LOG_ERROR, "out of memory");
        return 1;
    }
    if (!c.json)
        abxl_out("abx-local check: what this host offers abx-local serve (nothing changed)\n");
    user(&c);
    userns(&c);
    cgroups(&c);
    tools(&c);
    int n = cJSON_GetArraySize(c.problems);
    cJSON_AddBoolToObject(c.root, "ok", n == 0);
    cJSON_AddItemToObject(c.root, "problems", c.problems);
    if (c.json) {
        char *text = cJSON_PrintUnformatted(c.root);
        abxl_out("%s\n", text ? text : "{}");
        free(text);
    } else if (n == 0) {
        abxl_out("abx-local serve can start here%s\n",
                 geteuid() == 0 ? "" : " (as root: through sudo)");
    } else {
        abxl_out("abx-local serve cannot start here: %d problem%s\n", n, n == 1 ? "" : "s");
        int i = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, c.problems) {
            abxl_out("  %d. %s\n     FIX: %s\n", ++i,
                     cJSON_GetObjectItem(it, "problem")->valuestring,
                     cJSON_GetObjectItem(it, "fix")->valuestring);
        }
    }
    cJSON_Delete(c.root);
    return n == 0 ? 0 : 1;
}
