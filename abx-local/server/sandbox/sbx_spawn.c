/* The spawner: one sandbox of the configured runtime (runtime.h) per abx
 * sandbox (see DESIGN.md).
 *
 * fork() happens on the main thread only: bwrap's --die-with-parent uses
 * PR_SET_PDEATHSIG, which fires when the *thread* that forked exits, and
 * request threads come and go. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base.h"
#include "log.h"
#include "rootfs.h"
#include "sandbox.h"

/* ---- the spawner queue, served by the main thread ---- */
struct job {
    char *const *argv;
    int info_fd, log_fd;
    pid_t pid;
    bool done;
    struct job *next;
};
static pthread_mutex_t sp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sp_cv = PTHREAD_COND_INITIALIZER;
static struct job *sp_head;
static bool sp_stop;

static pid_t do_fork(char *const argv[], int info_fd, int log_fd)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* Child: only async-signal-safe calls until exec. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    int nul = open("/dev/null", O_RDONLY);
    if (nul < 0 || dup2(nul, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
        _exit(126);
    if (info_fd == 3) {
        if (fcntl(3, F_SETFD, 0) < 0)
            _exit(126);
    } else if (dup2(info_fd, 3) < 0) {
        _exit(126);
    }
    close_range(4, ~0U, 0);
    /* Nothing of the server's environment reaches the sandbox, not even
     * its pid 1 (bwrap's init): sandbox-enter and bwrap need none. */
    char *empty[] = {NULL};
    execve(argv[0], argv, empty);
    _exit(127);
}

/* Has the main thread fork+exec argv (see the top of this file); the
 * pid, or -1 once the spawner stopped or fork failed. */
static pid_t spawner_exec(char *const argv[], int info_fd, int log_fd)
{
    struct job j = {argv, info_fd, log_fd, -1, false, NULL};
    pthread_mutex_lock(&sp_lock);
    if (sp_stop) {
        pthread_mutex_unlock(&sp_lock);
        return -1;
    }
    struct job **pp = &sp_head;
    while (*pp)
        pp = &(*pp)->next;
    *pp = &j;
    pthread_cond_broadcast(&sp_cv);
    while (!j.done)
        pthread_cond_wait(&sp_cv, &sp_lock);
    pthread_mutex_unlock(&sp_lock);
    return j.pid;
}

void abxl_spawner_run(void)
{
    pthread_mutex_lock(&sp_lock);
    for (;;) {
        while (sp_head == NULL && !sp_stop)
            pthread_cond_wait(&sp_cv, &sp_lock);
        if (sp_head == NULL)
            break;
        struct job *j = sp_head;
        sp_head = j->next;
        if (sp_stop) {
            j->pid = -1;
        } else {
            pthread_mutex_unlock(&sp_lock);
            j->pid = do_fork(j->argv, j->info_fd, j->log_fd);
            pthread_mutex_lock(&sp_lock);
        }
        j->done = true;
        pthread_cond_broadcast(&sp_cv);
    }
    pthread_mutex_unlock(&sp_lock);
}

void abxl_spawner_stop(void)
{
    pthread_mutex_lock(&sp_lock);
    sp_stop = true;
    pthread_cond_broadcast(&sp_cv);
    pthread_mutex_unlock(&sp_lock);
}

/* ---- starting one sandbox ---- */
#define ARGV_MAX 160

struct argv_b {
    char *v[ARGV_MAX];
    int n;
};

static void add(struct argv_b *a, const char *s)
{
    if (a->n < ARGV_MAX - 1)
        a->v[a->n++] = strdup(s);
    a->v[a->n] = NULL;
}

static void add_word(void *a, const char *w)
{
    add(a, w);
}

static void free_argv(struct argv_b *a)
{
    for (int i = 0; i < a->n; i++)
        free(a->v[i]);
    a->n = 0;
}

static int argv_ok(const struct argv_b *a)
{
    if (a->n >= ARGV_MAX - 1)
        return 0;
    for (int i = 0; i < a->n; i++)
        if (a->v[i] == NULL)
            return 0;
    return 1;
}

/* Adds prefix + x + suffix. */
static void add_cat(struct argv_b *a, const char *prefix, const char *x, const char *suffix)
{
    char p[4600];
    abxl_fmt(p, sizeof p, "%s%s%s", prefix, x, suffix);
    add(a, p);
}

/* `abx-local sandbox-enter` (enter.c) mounts the root with envd's bundle,
 * the app and envd's config bound read-only in it, and runs the runtime
 * on it, whose words end the command line (runtime_bwrap.c: bwrap builds
 * the sandbox on that root, fresh /proc and /dev, the seccomp filter). */
static void build_argv(struct argv_b *a, const struct abxl_sbx *s, const struct abxl_tmpl *t,
                       bool keep_disk)
{
    char num[32], cg[8][512];
    add(a, abxl_cfg.self_exe);
    add(a, "sandbox-enter");
    add(a, "--dir");
    add(a, s->dir);
    add(a, "--lower");
    add(a, t->rootfs);
    add(a, "--disk-mb");
    snprintf(num, sizeof num, "%d", s->disk_mb);
    add(a, num);
    if (abxl_cfg.disk_tmpfs)
        add(a, "--disk-tmpfs");
    if (keep_disk)
        add(a, "--disk-keep");
    int ncg = abxl_cgroup_procs_files(s->id, cg, 8);
    for (int i = 0; i < ncg; i++) {
        add(a, "--cgroup");
        add(a, cg[i]);
    }
    add(a, "--userns");
    snprintf(num, sizeof num, "%lu", s->uid_base);
    add(a, num);
    snprintf(num, sizeof num, "%lu", (unsigned long)ABXL_UID_COUNT);
    add(a, num);
    add(a, "--ro");
    add(a, abxl_cfg.envd_bundle);
    add(a, "/opt/abx/bin");
    /* --vary base-tools=absent: base as FC documents it, "envd only"; no
     * interpreter a test could lean on. */
    static const char *const tools[] = {"/usr/bin/perl", "/usr/bin/perl5.36.0",
                                        "/usr/bin/python3", "/usr/bin/python3.11",
                                        "/usr/bin/python"};
    for (size_t k = 0; abxl_vary(ABXL_V_BASE_TOOLS) && strcmp(t->id, "base") == 0 &&
                       k < sizeof tools / sizeof tools[0];
         k++) {
        add(a, "--hide");
        add(a, tools[k]);
    }
    add(a, "--ro");
    add_cat(a, "", s->dir, "/run");
    add(a, "/run/abx");
    char p[4400];
    if (abxl_tmpl_app(t, p, sizeof p)) {
        add(a, "--ro");
        add(a, p);
        add(a, "/opt/abx/app");
    }
    const struct abxl_runtime *rt = abxl_runtime();
    add(a, "--runtime");
    add(a, rt->name);
    rt->enter_argv(s, add_word, a);
}

/* bwrap writes {"child-pid": N} on the info fd once the namespace exists. */
static pid_t read_child_pid(int fd, long timeout_ms)
{
    char buf[512];
    size_t len = 0;
    int64_t deadline = abxl_now_ms() + timeout_ms;
    while (len < sizeof buf - 1) {
        int64_t left = deadline - abxl_now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        if (strchr(buf, '}'))
            break;
    }
    buf[len] = '\0';
    cJSON *o = cJSON_Parse(buf);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "child-pid");
    pid_t pid = cJSON_IsNumber(v) && v->valuedouble > 1 ? (pid_t)v->valuedouble : -1;
    cJSON_Delete(o);
    return pid;
}

static int write_pidfile(const struct abxl_sbx *s)
{
    char p[4400], line[128];
    snprintf(p, sizeof p, "%s/pid", s->dir);
    snprintf(line, sizeof line, "%d %llu\n", (int)s->init_pid,
             abxl_proc_starttime(s->init_pid));
    return abxl_write_small(p, line, 0600);
}

/* Starts the sandbox's processes on its folder (made by abxl_spawn):
 * sandbox-enter, then bwrap and envd. keep_disk: boot again on the disk
 * a filesystem-only pause kept (life.c). */
static int boot(struct abxl_sbx *s, const struct abxl_tmpl *t, bool keep_disk, char *err,
                size_t errlen)
{
    struct argv_b a = {.n = 0};
    int info[2] = {-1, -1}, log_fd = -1, rc = -1;
    build_argv(&a, s, t, keep_disk);
    if (!argv_ok(&a)) {
        snprintf(err, errlen, "out of memory building the bwrap command");
        goto out;
    }
    char p[4400];
    snprintf(p, sizeof p, "%s/envd.log", s->dir);
    s->log = abxl_sbxlog_open(p, &log_fd, err, errlen);
    if (s->log == NULL)
        goto out;
    if (pipe2(info, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot create the sandbox's info pipe: %s", strerror(errno));
        goto out;
    }
    pid_t bwrap = spawner_exec(a.v, info[1], log_fd);
    close(info[1]);
    info[1] = -1;
    close(log_fd);   /* the sandbox holds the only write ends now */
    log_fd = -1;
    pthread_mutex_lock(&abxl_reg_lock);   /* see abxl_spawn_destroy */
    s->bwrap_pid = bwrap;
    pthread_mutex_unlock(&abxl_reg_lock);
    if (bwrap < 0) {
        snprintf(err, errlen, "cannot start bwrap: %s",
                 abxl_shutting_down ? "server is shutting down" : strerror(errno));
        goto out;
    }
    s->init_pid = read_child_pid(info[0], 10000);
    if (s->init_pid < 0) {
        char tail[256];
        abxl_spawn_log_tail(s, tail, sizeof tail);
        snprintf(err, errlen, "bwrap did not start the sandbox: %s", tail[0] ? tail : "no output");
        goto out;
    }
    s->pidfd = (int)syscall(SYS_pidfd_open, s->init_pid, 0);
    snprintf(p, sizeof p, "/proc/%d/ns/net", (int)s->init_pid);
    int net = open(p, O_RDONLY | O_CLOEXEC);
    /* A second boot's namespace takes the first's descriptor number: a
     * proxy that read the number meanwhile reaches this sandbox, never a
     * closed (or reused) descriptor. */
    if (net >= 0 && s->netns_fd >= 0) {
        int r = dup3(net, s->netns_fd, O_CLOEXEC);
        close(net);
        net = r < 0 ? -1 : s->netns_fd;
    } else if (net >= 0) {
        s->netns_fd = net;
    }
    snprintf(p, sizeof p, "/proc/%d/ns/pid", (int)s->init_pid);
    struct stat st;
    if (s->pidfd < 0 || net < 0 || stat(p, &st) != 0) {
        char tail[256];
        abxl_spawn_log_tail(s, tail, sizeof tail);
        snprintf(err, errlen, "sandbox exited at start: %s", tail[0] ? tail : "no output");
        goto out;
    }
    s->pidns_ino = st.st_ino;
    if (write_pidfile(s) != 0) {
        snprintf(err, errlen, "cannot write the pid file: %s", strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (info[0] >= 0)
        close(info[0]);
    if (info[1] >= 0)
        close(info[1]);
    if (log_fd >= 0)
        close(log_fd);
    free_argv(&a);
    return rc;
}

int abxl_spawn(struct abxl_sbx *s, const struct abxl_tmpl *t, const cJSON *env_vars,
              char *err, size_t errlen)
{
    snprintf(s->dir, sizeof s->dir, "%s/%s", abxl_cfg.sandboxes_dir, s->id);
    /* STARTING: invisible to the API, killed on shutdown. */
    if (!abxl_reg_add(s, (size_t)abxl_cfg.max_sandboxes)) {
        snprintf(err, errlen, "maximum number of concurrent sandboxes reached (%ld)",
                 abxl_cfg.max_sandboxes);
        return 1;
    }
    s->uid_fd = abxl_uidrange_take(&s->uid_base, err, errlen);
    if (s->uid_fd == -2) {
        s->uid_fd = -1;
        return -1;
    }
    if (abxl_sbxdir_prepare(s, t, env_vars, err, errlen) != 0)
        return -1;
    struct abxl_limits lim = {s->cpu_count, s->memory_mb, t->pids_limit};
    s->cgroup = true;   /* a half-made one is removed by abxl_spawn_destroy */
    if (abxl_cgroup_create(s->id, &lim, err, errlen) != 0)
        return -1;
    return boot(s, t, false, err, errlen);
}

int abxl_spawn_reboot(struct abxl_sbx *s, const struct abxl_tmpl *t, char *err, size_t errlen)
{
    if (abxl_sbxdir_boot_id(s) != 0) {
        snprintf(err, errlen, "cannot write the sandbox's new boot id: %s", strerror(errno));
        return -1;
    }
    return boot(s, t, true, err, errlen);
}

int abxl_spawn_wait_ready(struct abxl_sbx *s, const struct abxl_tmpl *t, char *err, size_t errlen)
{
    int64_t deadline = abxl_now_ms() + 15000;
    int st = -1;
    while (abxl_now_ms() < deadline && !abxl_shutting_down) {
        /* Short at first: a SYN sent while the namespace's loopback comes
         * up is lost and TCP would retry it only after 1 s. Longer later,
         * for an envd slowed by a loaded machine. */
        long probe_ms = deadline - abxl_now_ms() > 14000 ? 100 : 1000;
        st = abxl_nsnet_probe(s->netns_fd, ABXL_ENVD_PORT, "/health", probe_ms);
        if (st >= 200 && st < 300)
            break;
        if (abxl_procs_count(s) == 0)
            break;
        /* envd is up within tens of ms: poll finely, it is most of a create. */
        abxl_sleep_ms(2);
    }
    if (st < 200 || st >= 300) {
        snprintf(err, errlen, "envd did not become healthy in the sandbox (last status %d)", st);
        return -1;
    }
    /* Only now: bwrap sets up the namespace's loopback after it reports
     * the sandbox's pid, and envd answering on it means that is done. */
    if (abxl_egress_boot(s, err, errlen) != 0)
        return -1;
    if (t->ready_port == 0)
        return 0;
    deadline = abxl_now_ms() + (t->ready_timeout_ms > 0 ? t->ready_timeout_ms : 20000);
    while (abxl_now_ms() < deadline && !abxl_shutting_down) {
        st = abxl_nsnet_probe(s->netns_fd, t->ready_port, t->ready_path, 2000);
        if (st >= 200 && st < 300)
            return 0;
        abxl_sleep_ms(25);
    }
    snprintf(err, errlen, "template '%s' ready check GET %s on port %d failed (last status %d)",
             t->id, t->ready_path, t->ready_port, st);
    return -1;
}

void abxl_spawn_log_tail(const struct abxl_sbx *s, char *out, size_t n)
{
    char p[4400], buf[512];
    out[0] = '\0';
    /* A sandbox that failed at start has exited or is about to: let its
     * last words reach the file. */
    abxl_sbxlog_settle(s->log, 300);
    snprintf(p, sizeof p, "%s/envd.log", s->dir);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0;
    ssize_t r = pread(fd, buf, sizeof buf - 1, from);
    close(fd);
    if (r <= 0)
        return;
    buf[r] = '\0';
    while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == '\r'))
        buf[--r] = '\0';
    const char *line = strrchr(buf, '\n');
    snprintf(out, n, "%s", line ? line + 1 : buf);
}

void abxl_spawn_halt(struct abxl_sbx *s)
{
    /* SIGKILL to the namespace's pid 1 kills every process in it; a stopped
     * (paused) sandbox dies too. A frozen one keeps the signal pending
     * until thawed, bwrap included: kill and thaw its cgroup first, or
     * the wait for bwrap below never returns. */
    if (s->cgroup)
        abxl_cgroup_kill(s->id);
    if (s->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
    /* Take bwrap's pid under the lock: the reaper may have reaped it
     * already (then it is 0), and must not reap it while we wait. */
    pthread_mutex_lock(&abxl_reg_lock);
    pid_t bwrap = s->bwrap_pid;
    s->bwrap_pid = 0;
    pthread_mutex_unlock(&abxl_reg_lock);
    if (bwrap > 0) {
        int status;
        /* Start failed before we had the sandbox's pid 1 (bwrap hung or
         * slow): nothing else would end bwrap, and we would wait forever. */
        if (s->pidfd < 0)
            kill(bwrap, SIGKILL);
        while (waitpid(bwrap, &status, 0) < 0 && errno == EINTR) {
        }
    }
    for (int i = 0; i < 400 && abxl_procs_count(s) > 0; i++) {
        abxl_procs_signal(s, SIGKILL);
        /* When envd dies on its own, bwrap exits before reaping the
         * namespace's pid 1, which is then reparented to us (we are a
         * child subreaper, see main.c): reap it, or it stays a zombie
         * that keeps this loop (and the reaper thread) waiting. The pidfd
         * names exactly that process, whatever pid reuse did. */
        if (s->pidfd >= 0) {
            siginfo_t si;
            waitid(P_PIDFD, (id_t)s->pidfd, &si, WEXITED | WNOHANG);
        }
        abxl_sleep_ms(5);
    }
    if (s->pidfd >= 0) {
        close(s->pidfd);
        s->pidfd = -1;
    }
    s->init_pid = 0;
    s->pidns_ino = 0;
    abxl_sbxlog_close(s->log);
    s->log = NULL;
}

void abxl_spawn_destroy(struct abxl_sbx *s)
{
    abxl_spawn_halt(s);
    if (s->cgroup)
        abxl_cgroup_destroy(s->id);
    if (s->dir[0] && abxl_rm_rf(s->dir) != 0)
        abxl_log(ABXL_LOG_ERROR, "sandbox %s: folder not fully removed", s->id);
    /* Its processes are gone: the uid range may serve another sandbox. */
    if (s->uid_fd >= 0) {
        close(s->uid_fd);
        s->uid_fd = -1;
    }
}
