/* Startup: refuse to run where sandboxes cannot be real, and clean up
 * what a previous (crashed) run left in the state dir. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base.h"
#include "log.h"
#include "sandbox.h"

struct overlay_probe {
    const char *base, *l, *u, *w, *m, *opts;
};

static int overlay_probe(void *arg, char *msg, size_t n)
{
    const struct overlay_probe *p = arg;
    const char *step = "mounting a tmpfs";
    if (mount("abx-probe", p->base, "tmpfs", 0, "size=1m") != 0)
        goto bad;
    step = "mounting an overlay on a tmpfs";
    if (mkdir(p->l, 0755) != 0 || mkdir(p->u, 0755) != 0 || mkdir(p->w, 0755) != 0 ||
        mkdir(p->m, 0755) != 0 || mount("abx-probe", p->m, "overlay", 0, p->opts) != 0)
        goto bad;
    return 0;
bad:
    snprintf(msg, n, "%s: %s", step, strerror(errno));
    return -1;
}

/* A sandbox's root is an overlay in a private mount namespace (enter.c):
 * try one once, in a child, under the state dir. */
int abxl_overlay_check(char *err, size_t errlen)
{
    char base[4200], l[4300], u[4300], w[4300], m[4300], opts[16000], why[512];
    abxl_fmt(base, sizeof base, "%s/overlay-probe", abxl_cfg.state_dir);
    abxl_rm_rf(base);
    if (mkdir(base, 0700) != 0) {
        abxl_fmt(err, errlen, "cannot create %s: %s", base, strerror(errno));
        return -1;
    }
    abxl_fmt(l, sizeof l, "%s/l", base);
    abxl_fmt(u, sizeof u, "%s/u", base);
    abxl_fmt(w, sizeof w, "%s/w", base);
    abxl_fmt(m, sizeof m, "%s/m", base);
    abxl_fmt(opts, sizeof opts, "lowerdir=%s,upperdir=%s,workdir=%s", l, u, w);
    struct overlay_probe p = {base, l, u, w, m, opts};
    int rc = abxl_try_in_mount_ns(overlay_probe, &p, why, sizeof why);
    abxl_rm_rf(base);
    if (rc == 0)
        return 0;
    abxl_fmt(err, errlen, "overlay filesystems unavailable (sandbox roots are overlays): %s",
             why);
    return -1;
}

int abxl_spawn_check_machine(char *err, size_t errlen)
{
    if (geteuid() != 0) {
        snprintf(err, errlen,
                 "must run as root (uid 0): sandboxes need bwrap with namespaces, "
                 "capability control and setns; running as uid %d. Either start it as "
                 "root, give this user passwordless sudo (abx-e2e --local and make "
                 "e2e-local then run abx-local alone through it), or run the suite "
                 "against a cloud platform instead "
                 "(ABX_SANDBOX_* in .env, then `make e2e`; README, \"Credentials and .env\")",
                 (int)geteuid());
        return -1;
    }
    if (abxl_cfg.envd_path[0] == '\0' || access(abxl_cfg.envd_path, X_OK) != 0) {
        snprintf(err, errlen, "abx-envd not found%s%s (build target abx-envd, or pass --envd PATH)",
                 abxl_cfg.envd_path[0] ? ": " : "", abxl_cfg.envd_path);
        return -1;
    }
    struct stat st;
    if (stat(abxl_cfg.templates_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "templates dir not found: %s (pass --templates DIR)",
                 abxl_cfg.templates_dir);
        return -1;
    }
    int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (pfd < 0) {
        snprintf(err, errlen, "kernel too old: pidfd_open (Linux 5.3+) is needed to kill "
                 "sandboxes reliably (%s)", strerror(errno));
        return -1;
    }
    close(pfd);
    if (access("/proc/self/ns/net", R_OK) != 0 || access("/proc/self/ns/pid", R_OK) != 0) {
        snprintf(err, errlen, "namespaces refused: /proc/self/ns is not readable");
        return -1;
    }
    /* The runtime's binaries and a test sandbox: last, the slow one. */
    if (abxl_runtime()->check(err, errlen) != 0)
        return -1;
    return abxl_cgroup_init(true, err, errlen);
}

/* pid file: "<host pid of the sandbox's pid 1> <its start time>". The start
 * time guards against killing an unrelated process that reused the pid. */
static void kill_left(const char *dir)
{
    char p[4400], line[128];
    snprintf(p, sizeof p, "%s/pid", dir);
    FILE *f = fopen(p, "re");
    if (f == NULL)
        return;
    char *ok = fgets(line, sizeof line, f);
    fclose(f);
    if (ok == NULL)
        return;
    char *end;
    long pid = strtol(line, &end, 10);
    unsigned long long start = strtoull(end, NULL, 10);
    if (pid <= 1 || !abxl_proc_alive((pid_t)pid, start))
        return;
    kill((pid_t)pid, SIGKILL);
    for (int i = 0; i < 200 && abxl_proc_alive((pid_t)pid, start); i++)
        abxl_sleep_ms(10);
    abxl_log(ABXL_LOG_INFO, "killed sandbox left by a previous run (pid %ld)", pid);
}

void abxl_spawn_recover(void)
{
    DIR *d = opendir(abxl_cfg.sandboxes_dir);
    if (d == NULL)
        return;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char dir[4200];
        if (abxl_fmt(dir, sizeof dir, "%s/%s", abxl_cfg.sandboxes_dir, e->d_name) != 0)
            continue;
        kill_left(dir);
        if (abxl_rm_rf(dir) != 0)
            abxl_log(ABXL_LOG_ERROR, "cannot remove %s", dir);
        n++;
    }
    closedir(d);
    if (n > 0)
        abxl_log(ABXL_LOG_INFO, "removed %d sandbox folder(s) left by a previous run", n);
}

int abxl_gc_main(int argc, char **argv)
{
    static const char help[] =
        "usage: abx-local gc\n"
        "\n"
        "Removes what dead abx-local servers left, whatever their state dir: their\n"
        "sandboxes' processes (killed, thawed first when paused) and cgroups.\n"
        "Servers still running are left alone. `abx-local serve` does the same at\n"
        "start. Needs root.\n"
        "\n"
        "  -h, --help           this help\n";
    if (argc > 2 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
        abxl_usage(help, false);
        return 0;
    }
    if (argc > 2) {
        abxl_log_cmd("gc", ABXL_LOG_ERROR, argv[2][0] == '-' ? "unknown option %s"
                                                             : "unexpected argument %s", argv[2]);
        abxl_usage("usage: abx-local gc   (see abx-local gc --help)\n", true);
        return 2;
    }
    char err[512];
    if (geteuid() != 0) {
        abxl_log_cmd("gc", ABXL_LOG_ERROR, "must run as root (cgroups of root's sandboxes)");
        return 1;
    }
    if (abxl_cgroup_init(false, err, sizeof err) != 0) {
        abxl_log_cmd("gc", ABXL_LOG_ERROR, "%s", err);
        return 1;
    }
    int n = abxl_cgroup_gc();
    abxl_cgroup_shutdown();
    abxl_out("removed %d group(s) of sandboxes left by dead servers\n", n);
    return 0;
}
