/* The bubblewrap runtime (the default, docs/security.md): sandbox-enter
 * (enter.c) moves into the sandbox's user namespace and execs bwrap on
 * the staged root, with our seccomp program on fd 4; bwrap makes the pid,
 * network, ipc and uts namespaces, a fresh /proc (runc's paths covered)
 * and /dev, drops the capabilities and runs envd. Startup tries bwrap
 * once on this machine (abxl_bwrap_probe). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base.h"
#include "log.h"
#include "sandbox.h"

typedef void (*add_fn)(void *a, const char *w);

int abxl_bwrap_probe(char *err, size_t errlen)
{
    const char *argv[] = {abxl_cfg.bwrap, "--die-with-parent", "--unshare-pid", "--unshare-net",
                    "--unshare-ipc", "--unshare-uts", "--ro-bind", "/", "/", "--dev", "/dev",
                    "--proc", "/proc", "--cap-drop", "ALL", "--", "/bin/true", NULL};
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], 2);
        dup2(pipefd[1], 1);
        close(pipefd[0]);
        execv(argv[0], (char *const *)argv);   /* exec does not write them */
        _exit(127);
    }
    close(pipefd[1]);
    char out[512];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof out - 1 && (n = read(pipefd[0], out + len, sizeof out - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    close(pipefd[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        out[strcspn(out, "\n")] = '\0';
        snprintf(err, errlen,
                 "namespaces refused: a test sandbox (%s --unshare-pid --unshare-net "
                 "--unshare-ipc --unshare-uts) failed: %s%s",
                 abxl_cfg.bwrap, out[0] ? out : "no output", abxl_container_hint());
        return -1;
    }
    return 0;
}

int abxl_bwrap_check(char *err, size_t errlen)
{
    if (access(abxl_cfg.bwrap, X_OK) != 0) {
        snprintf(err, errlen, "bubblewrap not found: %s is not executable (install the "
                 "'bubblewrap' package or pass --bwrap PATH)", abxl_cfg.bwrap);
        return -1;
    }
    return abxl_bwrap_probe(err, errlen);
}

/* /proc entries runc masks or makes read-only (docs/security.md); only
 * those this kernel has are covered (a bind needs its target). */
static const char *const proc_masked_files[] = {"kcore", "keys", "latency_stats", "timer_list",
                                                "timer_stats", "sched_debug"};
static const char *const proc_masked_dirs[] = {"acpi", "asound", "scsi"};
static const char *const proc_readonly[] = {"bus", "fs", "irq", "sys", "sysrq-trigger"};

static bool host_proc_has(const char *name)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%s", name);
    return access(p, F_OK) == 0;
}

static void add_proc_cover(add_fn add, void *a)
{
    char p[64];
    for (size_t i = 0; i < sizeof proc_masked_files / sizeof proc_masked_files[0]; i++)
        if (host_proc_has(proc_masked_files[i])) {
            snprintf(p, sizeof p, "/proc/%s", proc_masked_files[i]);
            add(a, "--dev-bind");   /* a device node: not on a nodev mount */
            add(a, "/dev/null");
            add(a, p);
        }
    for (size_t i = 0; i < sizeof proc_masked_dirs / sizeof proc_masked_dirs[0]; i++)
        if (host_proc_has(proc_masked_dirs[i])) {
            snprintf(p, sizeof p, "/proc/%s", proc_masked_dirs[i]);
            add(a, "--tmpfs");
            add(a, p);
            add(a, "--remount-ro");
            add(a, p);
        }
    /* Bound read-only from the host's /proc: what these show depends on
     * the reader's namespaces (net, uts, ipc sysctls) or is the same
     * machine-wide, and a sub-folder of the new /proc cannot be named
     * as a bind source by bwrap. */
    for (size_t i = 0; i < sizeof proc_readonly / sizeof proc_readonly[0]; i++)
        if (host_proc_has(proc_readonly[i])) {
            snprintf(p, sizeof p, "/proc/%s", proc_readonly[i]);
            add(a, "--ro-bind");
            add(a, p);
            add(a, p);
        }
}

/* sandbox-enter's seccomp program, then bwrap's command line: it builds
 * the sandbox on the root sandbox-enter staged. */
static void enter_argv(const struct abxl_sbx *s, add_fn add, void *a)
{
    add(a, "--seccomp");
    add(a, abxl_cfg.seccomp_bpf);
    add(a, "--");
    add(a, abxl_cfg.bwrap);
    add(a, "--die-with-parent");
    add(a, "--unshare-pid");
    add(a, "--unshare-net");
    add(a, "--unshare-ipc");
    add(a, "--unshare-uts");
    add(a, "--unshare-cgroup-try");
    add(a, "--hostname");
    add(a, s->id);
    /* Nothing of the server's environment: envd adds the template's. */
    add(a, "--clearenv");
    add(a, "--setenv");
    add(a, "PATH");
    add(a, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    add(a, "--bind");
    add(a, ABXL_STAGE_ROOT);
    add(a, "/");
    add(a, "--dev");
    add(a, "/dev");
    add(a, "--proc");
    add(a, "/proc");
    add_proc_cover(add, a);
    /* Its own boot id (sbxdir.c), from its root: a bind of the host's
     * folder would name it in the sandbox's mountinfo. */
    if (host_proc_has("sys/kernel/random/boot_id")) {
        add(a, "--ro-bind");
        add(a, ABXL_STAGE_ROOT "/run/abx/boot_id");
        add(a, "/proc/sys/kernel/random/boot_id");
    }
    add(a, "--cap-drop");
    add(a, "ALL");
    for (size_t i = 0; i < ABXL_SANDBOX_NCAPS; i++) {
        add(a, "--cap-add");
        add(a, abxl_sandbox_caps[i]);
    }
    /* bwrap leaves the bounding set full: envd bounds it to the caps
     * above, then drops this one too (envd/caps.c). */
    add(a, "--cap-add");
    add(a, "CAP_SETPCAP");
    add(a, "--seccomp");
    add(a, "4");   /* opened by sandbox-enter */
    add(a, "--chdir");
    add(a, "/");
    add(a, "--info-fd");
    add(a, "3");
    add(a, "--");
    abxl_envd_cmdline(add, a);
}

/* sandbox-enter's steps 5-6 (enter.c): into the sandbox's user namespace,
 * owned by a host uid of its own, then exec bwrap. */
static int run(const struct abxl_enter_run *r)
{
    char err[512];
    if (chdir("/") != 0) {
        abxl_log(ABXL_LOG_ERROR, "sandbox root: cannot enter /: %s", strerror(errno));
        return 125;
    }
    if (r->uid_base > 0 &&
        abxl_userns_enter(r->uid_base, r->uid_count, ABXL_OWNER_BASE + (unsigned long)getpid(),
                          err, sizeof err) != 0) {
        abxl_log(ABXL_LOG_ERROR, "sandbox root: %s", err);
        return 125;
    }
    /* Nothing of the server passes in: no variable, no descriptor but
     * stdin/out/err (a pipe the server reads), bwrap's info fd and the
     * seccomp program. */
    close_range(r->seccomp ? 5 : 4, ~0U, CLOSE_RANGE_CLOEXEC);
    char *empty[] = {NULL};
    syscall(SYS_execveat, r->exe, "", r->argv, empty, AT_EMPTY_PATH);
    abxl_log(ABXL_LOG_ERROR, "sandbox root: cannot run %s: %s", r->argv[0], strerror(errno));
    return 125;
}

const struct abxl_runtime abxl_runtime_bwrap = {
    .name = "bwrap",
    .check = abxl_bwrap_check,
    .prepare = NULL,
    .enter_argv = enter_argv,
    .stage_dir = false,
    .run = run,
    .fs_pause_keeps_memory = NULL,
    .pids_are_processes = true,
};
