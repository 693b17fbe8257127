/* fork/exec of a user process: environment as envd builds it
 * (docs/protocol.md "Process events"), own process group, credentials of
 * the selected user, and exec errors reported back through a
 * close-on-exec pipe. It runs under a keeper of its own (keeper.c), which
 * takes what it leaves behind. Between fork and exec the child only
 * makes async-signal-safe calls. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"
#include "vec.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct strv {
    char **v;
    size_t n, cap;
};

static void strv_free(struct strv *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

static int strv_push(struct strv *s, char *owned)
{
    if (!owned)
        return -1;
    if (ABX_VEC_RESERVE(s->v, s->cap, s->n + 2) != 0) {   /* and the NULL after */
        free(owned);
        return -1;
    }
    s->v[s->n++] = owned;
    s->v[s->n] = NULL;
    return 0;
}

/* KEY=VALUE, replacing an earlier KEY (later wins). */
static int env_set(struct strv *e, const char *k, const char *v)
{
    size_t kl = strlen(k), n = kl + strlen(v) + 2;
    char *s = malloc(n);

    if (!s)
        return -1;
    snprintf(s, n, "%s=%s", k, v);
    for (size_t i = 0; i < e->n; i++)
        if (strncmp(e->v[i], k, kl) == 0 && e->v[i][kl] == '=') {
            free(e->v[i]);
            e->v[i] = s;
            return 0;
        }
    return strv_push(e, s);
}

static int env_add_object(struct strv *e, const cJSON *o)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, o) {
        if (!cJSON_IsString(it) || !it->string || !*it->string ||
            strchr(it->string, '='))
            continue;
        if (env_set(e, it->string, it->valuestring))
            return -1;
    }
    return 0;
}

static int build_env(const struct abxl_envd_spawn *sp, struct strv *e)
{
    const char *path = getenv("PATH");

    if (sp->env) {
        for (char *const *v = sp->env; *v; v++)
            if (strv_push(e, strdup(*v)))
                return -1;
        return 0;
    }

    if (env_set(e, "PATH", path && *path ? path : DEFAULT_PATH) ||
        env_set(e, "HOME", sp->user->home) ||
        env_set(e, "USER", sp->user->name) ||
        env_set(e, "LOGNAME", sp->user->name) ||
        env_add_object(e, sp->base_envs ? sp->base_envs : abxl_envd_cfg.env_vars) ||
        env_set(e, "E2B_SANDBOX", "true") ||
        (abxl_envd_compat.sandbox_id_env &&
         (env_set(e, "E2B_SANDBOX_ID", abxl_envd_cfg.sandbox_id) ||
          env_set(e, "E2B_TEMPLATE_ID", abxl_envd_cfg.template_id))) ||
        (sp->envs && env_add_object(e, sp->envs)))
        return -1;
    return 0;
}

static int build_argv(const struct abxl_envd_spawn *sp, struct strv *a)
{
    const cJSON *it;

    if (strv_push(a, strdup(sp->cmd)))
        return -1;
    cJSON_ArrayForEach(it, sp->args) {
        if (!cJSON_IsString(it))
            return -1;
        if (strv_push(a, strdup(it->valuestring)))
            return -1;
    }
    return 0;
}

struct child_fail {
    int stage;  /* 1 chdir, 2 credentials, 3 exec, 4 fds */
    int err;
};

static void report(int fd, int stage)
{
    struct child_fail f = {stage, errno};
    ssize_t w = write(fd, &f, sizeof f);

    (void)w;
    _exit(127);
}

static void child(const struct abxl_envd_spawn *sp, const char *cwd, int in,
                  int out, int errfd, int slave, int rep, char **argv,
                  char **envp)
{
    struct sigaction sa;
    sigset_t none;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        sigaction(s, &sa, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (slave >= 0) {
        /* New session whose controlling terminal is the pty. */
        if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
            report(rep, 4);
        in = out = errfd = slave;
    } else {
        setpgid(0, 0);
    }
    if ((in >= 0 && dup2(in, 0) < 0) || (out >= 0 && dup2(out, 1) < 0) ||
        (errfd >= 0 && dup2(errfd, 2) < 0))
        report(rep, 4);
    if (chdir(cwd) != 0)
        report(rep, 1);
    /* At the sandbox's memory limit the OOM killer must take a user
     * process, never envd (which reports the kill): the highest score
     * puts every user process above envd whatever their sizes. Raising
     * it needs no privilege (lowering envd's would need
     * CAP_SYS_RESOURCE). Best effort: without /proc, nothing to do. */
    int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (oom >= 0) {
        if (write(oom, "1000", 4) != 4) {
            /* the process still runs, with envd's score */
        }
        close(oom);
    }
    if (setgroups((size_t)sp->user->ngroups, sp->user->groups) != 0 ||
        setgid(sp->user->gid) != 0 || setuid(sp->user->uid) != 0)
        report(rep, 2);
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    execvpe(argv[0], argv, envp);
    report(rep, 3);
}

struct child_args {
    const struct abxl_envd_spawn *sp;
    const char *cwd;
    int in, out, err, slave, rep;
    char **argv, **envp;
};

static void start_child(void *arg)
{
    const struct child_args *a = arg;
    child(a->sp, a->cwd, a->in, a->out, a->err, a->slave, a->rep, a->argv, a->envp);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Master and slave of a new pty sized rows x cols. envd keeps the slave
 * open too, so reading the master never fails before the child opens it. */
static int open_pty(const struct abxl_envd_spawn *sp, struct abxl_envd_child *ch)
{
    struct winsize ws = {.ws_row = (unsigned short)(sp->rows ? sp->rows : 24),
                         .ws_col = (unsigned short)(sp->cols ? sp->cols : 80)};
    char name[128];

    ch->pty_fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (ch->pty_fd < 0 || grantpt(ch->pty_fd) || unlockpt(ch->pty_fd) ||
        ptsname_r(ch->pty_fd, name, sizeof name))
        return -1;
    ch->pty_slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (ch->pty_slave < 0)
        return -1;
    return ioctl(ch->pty_fd, TIOCSWINSZ, &ws);
}

int abxl_envd_spawn(const struct abxl_envd_spawn *sp, struct abxl_envd_child *ch,
               char *err, size_t errlen)
{
    struct strv argv = {0}, envp = {0};
    char cwd[PATH_MAX], msg[256];
    int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
    int rep[2] = {-1, -1}, rc = -1;
    struct child_fail f;
    struct stat st;
    ssize_t n;
    int pid = -1, ctl = -1;
    pid_t keeper;

    ch->pid = ch->keeper = -1;
    ch->ctl_fd = ch->in_fd = ch->out_fd = ch->err_fd = -1;
    ch->pty_fd = ch->pty_slave = -1;
    if (abxl_envd_path_resolve(sp->cwd ? sp->cwd : sp->user->home, sp->user, cwd,
                          sizeof cwd, msg, sizeof msg)) {
        snprintf(err, errlen, "invalid cwd: %s", msg);
        goto out;
    }
    if (stat(cwd, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "cwd '%s' does not exist", cwd);
        goto out;
    }
    if (build_argv(sp, &argv)) {
        snprintf(err, errlen, "invalid process config (args must be strings)");
        goto out;
    }
    if (build_env(sp, &envp)) {
        snprintf(err, errlen, "out of memory building the environment");
        goto out;
    }
    if (sp->pty && open_pty(sp, ch)) {
        snprintf(err, errlen, "cannot open a pty: %s", strerror(errno));
        goto out;
    }
    int piped = sp->stdio == NULL;
    if (pipe2(rep, O_CLOEXEC) ||
        (piped && !sp->hidden && !sp->pty &&
         (pipe2(out, O_CLOEXEC) || pipe2(er, O_CLOEXEC))) ||
        (piped && sp->stdin_pipe && !sp->pty && pipe2(in, O_CLOEXEC))) {
        snprintf(err, errlen, "cannot create pipes: %s", strerror(errno));
        goto out;
    }
    if (piped && !sp->stdin_pipe && !sp->pty &&
        (in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
        snprintf(err, errlen, "cannot open /dev/null: %s", strerror(errno));
        goto out;
    }
    struct child_args ca = {sp, cwd, in[0], out[1], er[1], ch->pty_slave, rep[1], argv.v,
                            envp.v};
    if (!piped) {   /* the caller's: not closed here */
        ca.in = sp->stdio[0];
        ca.out = sp->stdio[1];
        ca.err = sp->stdio[2];
    }
    keeper = abxl_envd_keeper_fork(start_child, &ca, &ctl);
    if (keeper < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        goto out;
    }
    close_fd(&rep[1]);
    close_fd(&in[0]);
    close_fd(&out[1]);
    close_fd(&er[1]);
    int got = abxl_envd_keeper_read(ctl, &pid, 1);
    if (got != 1 || pid <= 0) {
        snprintf(err, errlen, "fork: %s",
                 got == 1 && pid < 0 ? strerror(-pid) : "the command's keeper ended");
        goto reap;
    }
    do
        n = read(rep[0], &f, sizeof f);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof f) {
        if (f.stage == 3 && f.err == ENOENT)
            snprintf(err, errlen, "exec: \"%s\": executable file not found "
                                  "in $PATH", sp->cmd);
        else
            snprintf(err, errlen, "%s: %s",
                     f.stage == 1 ? "chdir" : f.stage == 2 ? "setuid"
                     : f.stage == 3 ? "exec" : "dup2", strerror(f.err));
        goto reap;
    }
    ch->pid = pid;
    ch->keeper = keeper;
    ch->ctl_fd = ctl;
    ctl = -1;
    ch->in_fd = in[1];
    ch->out_fd = out[0];
    ch->err_fd = er[0];
    in[1] = out[0] = er[0] = -1;
    if (sp->pty && (ch->out_fd = fcntl(ch->pty_fd, F_DUPFD_CLOEXEC, 0)) < 0) {
        snprintf(err, errlen, "dup: %s", strerror(errno));
        ctl = ch->ctl_fd;
        ch->ctl_fd = -1;
        abxl_envd_keeper_end(keeper);
        goto reap;
    }
    rc = 0;
    goto out;
reap:  /* the command ended (or never ran): its keeper ends with it */
    abxl_envd_keeper_release(keeper, ctl, 0);
    ctl = -1;
out:
    if (rc) {
        close_fd(&ch->pty_fd);
        close_fd(&ch->pty_slave);
    }
    close_fd(&rep[0]);
    close_fd(&rep[1]);
    for (int i = 0; i < 2; i++) {
        close_fd(&in[i]);
        close_fd(&out[i]);
        close_fd(&er[i]);
    }
    strv_free(&argv);
    strv_free(&envp);
    return rc;
}
