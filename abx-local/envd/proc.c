/* Process table: spawning as the selected user in a new process group, one
 * waiter thread per process (reads stdout/stderr, learns the end from the
 * command's keeper (keeper.c), has the keeper end everything
 * at the Start deadline), fan-out of events to subscribed streams, and a
 * capped buffer of output nobody was subscribed for (given to the next
 * Connect). Exited processes stay 30 s for late Connects. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "jsonutil.h"

#define MAX_SUBS 32
#define UNSENT_MAX ((size_t)1024 * 1024)
#define CHUNK (32 * 1024)
#define RETAIN_MS 30000
#define BACKLOG_HIGH ((size_t)2 * 1024 * 1024)

struct sub {
    struct abxl_envd_stream *s;
    int starter;  /* the Start stream: gets deadline_exceeded on timeout */
};

struct proc {
    struct proc *next;
    pid_t pid;
    pid_t keeper;   /* keeper.c: the command's parent, envd's child */
    int ctl_fd, out_fd, err_fd, in_fd;  /* ctl_fd: the keeper's pipe */
    int pty_fd, pty_slave;  /* PTY processes: master (input) and slave */
    char *tag;
    cJSON *config;
    int hidden;
    int64_t deadline_ms;
    int timed_out, exited, done;
    int reaped;  /* waitpid done: the pid no longer exists */
    int out_cancel;  /* KILL/TERM sent: the end no longer waits for output EOF */
    int64_t exit_ms;
    int go;  /* its waiter's start: 1 spawned, -1 spawn failed (the waiter frees it) */
    struct abx_buf end_env;  /* envelope of the end event once exited */
    struct sub subs[MAX_SUBS];
    int nsubs;
    struct abx_buf unsent;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reaped_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t go_cv = PTHREAD_COND_INITIALIZER;
static struct proc *procs;

/* SIGKILL cannot be caught, so the process is gone within moments; wait
 * (bounded) until its waiter reaped it, so that a caller who killed a
 * process and then looks for it (`kill -0`, ps) never sees a zombie. */
#define KILL_REAP_WAIT_MS 2000

int abxl_envd_proc_init(void)
{
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

static void proc_free(struct proc *p)
{
    for (int i = 0; i < p->nsubs; i++)
        abxl_envd_stream_unref(p->subs[i].s);
    if (p->in_fd >= 0)
        close(p->in_fd);
    if (p->pty_fd >= 0)
        close(p->pty_fd);
    if (p->pty_slave >= 0)
        close(p->pty_slave);
    if (p->out_fd >= 0)
        close(p->out_fd);
    if (p->err_fd >= 0)
        close(p->err_fd);
    if (p->ctl_fd >= 0)
        close(p->ctl_fd);
    abx_buf_free(&p->unsent);
    abx_buf_free(&p->end_env);
    cJSON_Delete(p->config);
    free(p->tag);
    free(p);
}

/* Drops processes whose end event has been kept long enough. */
static void gc_locked(void)
{
    int64_t now = abxl_envd_now_ms();

    for (struct proc **pp = &procs; *pp;) {
        struct proc *p = *pp;

        if (p->done && now - p->exit_ms > RETAIN_MS) {
            *pp = p->next;
            proc_free(p);
        } else {
            pp = &p->next;
        }
    }
}

static struct proc *find_locked(const struct abxl_envd_selector *sel, int running,
                                char *err, size_t errlen)
{
    gc_locked();
    for (struct proc *p = procs; p; p = p->next) {
        if (p->hidden || (running && p->exited))
            continue;
        if (sel->by_tag ? (p->tag && strcmp(p->tag, sel->tag) == 0)
                        : (uint32_t)p->pid == sel->pid)
            return p;
    }
    if (sel->by_tag)
        snprintf(err, errlen, "process with tag %s not found", sel->tag);
    else
        snprintf(err, errlen, "process with pid %u not found", sel->pid);
    return NULL;
}

/* {"event":{<kind>:<body>}} as an envelope. */
static int event_env(struct abx_buf *out, const char *kind, cJSON *body)
{
    cJSON *o = cJSON_CreateObject(), *ev = cJSON_CreateObject();
    struct abx_buf j;
    int rc = -1;

    abx_buf_init(&j, 0);
    if (!o || !ev || !body) {
        cJSON_Delete(o);
        cJSON_Delete(ev);
        cJSON_Delete(body);
        goto out;
    }
    cJSON_AddItemToObject(ev, kind, body);
    cJSON_AddItemToObject(o, "event", ev);
    if (abx_json_append(&j, o) == 0 &&
        abx_connect_envelope_append(out, 0, j.data, j.len) == 0)
        rc = 0;
    cJSON_Delete(o);
out:
    abx_buf_free(&j);
    return rc;
}

static int start_env(struct abx_buf *out, pid_t pid)
{
    cJSON *b = cJSON_CreateObject();

    if (b)
        cJSON_AddNumberToObject(b, "pid", (double)pid);
    return event_env(out, "start", b);
}

/* Sends env to every subscriber, dropping the ones that went away; keeps
 * it for a later Connect when nobody listens. */
static void broadcast_locked(struct proc *p, const char *env, size_t n)
{
    int kept = 0;

    for (int i = 0; i < p->nsubs; i++) {
        if (abxl_envd_stream_send_raw(p->subs[i].s, env, n) == 0) {
            p->subs[kept++] = p->subs[i];
        } else {
            abxl_envd_stream_unref(p->subs[i].s);
        }
    }
    p->nsubs = kept;
    if (kept == 0 && p->unsent.len + n <= UNSENT_MAX &&
        abx_buf_append(&p->unsent, env, n) != 0) {
        /* Out of memory: dropped, as past UNSENT_MAX. */
    }
}

static void emit_data(struct proc *p, const char *kind, const char *d,
                      size_t n)
{
    cJSON *data = cJSON_CreateObject();
    struct abx_buf env;

    abx_buf_init(&env, 0);
    if (data && abx_json_add_bytes(data, kind, d, n) != 0) {
        cJSON_Delete(data);
        data = NULL;
    }
    if (event_env(&env, "data", data) == 0) {
        pthread_mutex_lock(&mu);
        broadcast_locked(p, env.data, env.len);
        pthread_mutex_unlock(&mu);
    }
    abx_buf_free(&env);
}

static void finish_locked(struct proc *p, int status)
{
    event_env(&p->end_env, "end", abxl_envd_end_event(status));
    for (int i = 0; i < p->nsubs; i++) {
        struct abxl_envd_stream *s = p->subs[i].s;

        if (p->timed_out && p->subs[i].starter) {
            abxl_envd_stream_end(s, ABX_CONNECT_DEADLINE_EXCEEDED,
                            "context deadline exceeded");
        } else {
            abxl_envd_stream_send_raw(s, p->end_env.data, p->end_env.len);
            abxl_envd_stream_end(s, ABX_CONNECT_OK, NULL);
        }
        abxl_envd_stream_unref(s);
    }
    p->nsubs = 0;
    p->exited = 1;
    p->exit_ms = abxl_envd_now_ms();
    if (p->in_fd >= 0) {
        close(p->in_fd);
        p->in_fd = -1;
    }
    if (p->pty_slave >= 0) {
        close(p->pty_slave);
        p->pty_slave = -1;
    }
}

/* Reads one chunk; 0 on EOF/error (fd closed), 1 otherwise. */
static int pump(struct proc *p, int *fd, const char *kind)
{
    char buf[CHUNK];
    /* envd sends pty output in chunks of at most 16 KiB. */
    size_t max = p->pty_fd >= 0 ? CHUNK / 2 : CHUNK;
    ssize_t n = read(*fd, buf, max);

    if (n > 0) {
        emit_data(p, kind, buf, (size_t)n);
        return 1;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return 1;
    close(*fd);
    *fd = -1;
    return 0;
}

/* A subscriber has a large backlog: stop reading output for now. */
static int throttled(struct proc *p)
{
    int full = 0;

    pthread_mutex_lock(&mu);
    for (int i = 0; i < p->nsubs && !full; i++)
        full = abxl_envd_stream_backlog(p->subs[i].s) > BACKLOG_HIGH;
    pthread_mutex_unlock(&mu);
    return full;
}

/* The end waits for the output pipes to close, as envd's does: children
 * the command left behind may hold them (`cmd &` in a foreground run
 * lasts until they exit or its deadline). A KILL/TERM through SendSignal,
 * or the deadline, cancels that wait; a PTY command ends when reaped. */
static int output_pending(struct proc *p)
{
    int cancel;

    if (p->pty_fd >= 0 || p->timed_out || (p->out_fd < 0 && p->err_fd < 0))
        return 0;
    pthread_mutex_lock(&mu);
    cancel = p->out_cancel;
    pthread_mutex_unlock(&mu);
    return !cancel;
}

static void set_reaped(struct proc *p)
{
    pthread_mutex_lock(&mu);
    p->reaped = 1;
    pthread_cond_broadcast(&reaped_cv);
    pthread_mutex_unlock(&mu);
}

static void *waiter(void *arg)
{
    struct proc *p = arg;
    const char *out_kind = p->pty_fd >= 0 ? "pty" : "stdout";
    int status = 0, reaped = 0;

    while (!reaped || output_pending(p)) {
        struct pollfd fds[3];
        int nf = 0, timeout = -1;

        fds[nf++] = (struct pollfd){.fd = reaped ? -1 : p->ctl_fd, .events = POLLIN};
        fds[nf++] = (struct pollfd){.fd = p->out_fd, .events = POLLIN};
        fds[nf++] = (struct pollfd){.fd = p->err_fd, .events = POLLIN};
        if (p->deadline_ms && !p->timed_out) {
            int64_t left = p->deadline_ms - abxl_envd_now_ms();

            if (left <= 0) {
                /* Everything the command started ends with it, setsid
                 * and double forks included: its keeper kills it all
                 * (keeper.c), then sends its status. */
                abxl_envd_keeper_end(p->keeper);
                p->timed_out = 1;
                continue;
            }
            timeout = left > 60000 ? 60000 : (int)left;
        }
        if (throttled(p)) {
            /* Leave the output in the pipe (the process blocks on it)
             * until the slow client catches up; keep watching exit and
             * deadline meanwhile. */
            fds[1].fd = fds[2].fd = -1;
            if (timeout < 0 || timeout > 20)
                timeout = 20;
        }
        /* Reaped, waiting for EOF: notice a cancel by SendSignal. */
        if (reaped && (timeout < 0 || timeout > 50))
            timeout = 50;
        if (poll(fds, (nfds_t)nf, timeout) < 0 && errno != EINTR) {
            /* Cannot watch it any more: at least wait for its end. */
            if (!reaped && abxl_envd_keeper_read(p->ctl_fd, &status, 1) != 1)
                status = SIGKILL;
            if (!reaped)
                set_reaped(p);
            break;
        }
        if (p->out_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
            pump(p, &p->out_fd, out_kind);
        if (p->err_fd >= 0 && (fds[2].revents & (POLLIN | POLLHUP | POLLERR)))
            pump(p, &p->err_fd, "stderr");
        if (!reaped && fds[0].revents) {
            int got = abxl_envd_keeper_read(p->ctl_fd, &status, 0);
            if (got != 0) {   /* its status, or the keeper is gone */
                if (got < 0)
                    status = SIGKILL;
                reaped = 1;
                set_reaped(p);
            }
        }
    }
    /* The keeper and its pipe leave the entry, which stays RETAIN_MS
     * after done: one fd per recent Start would pile up (thousands under
     * back-to-back commands). Only this thread uses them until done. */
    pid_t keeper = p->keeper;
    int ctl = p->ctl_fd;
    int64_t deadline = p->timed_out ? 0 : p->deadline_ms;
    p->ctl_fd = -1;
    /* A cancelled or PTY command: its pipes may still be held open by
     * children it left behind, so only take what is there now. */
    for (int i = 0; i < 64 && p->out_fd >= 0; i++) {
        fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
        struct pollfd f = {.fd = p->out_fd, .events = POLLIN};
        if (poll(&f, 1, 0) <= 0 || !pump(p, &p->out_fd, out_kind))
            break;
    }
    for (int i = 0; i < 64 && p->err_fd >= 0; i++) {
        fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
        struct pollfd f = {.fd = p->err_fd, .events = POLLIN};
        if (poll(&f, 1, 0) <= 0 || !pump(p, &p->err_fd, "stderr"))
            break;
    }
    pthread_mutex_lock(&mu);
    finish_locked(p, status);
    p->done = 1;
    pthread_mutex_unlock(&mu);
    /* What the command left running lives on, until its deadline. */
    abxl_envd_keeper_release(keeper, ctl, deadline);
    return NULL;
}

/* The waiter exists before its process: a command that forks until
 * the sandbox's process cap leaves envd no task for a thread made after
 * it started, and its output and end would be lost. */
static void *waiter_entry(void *arg)
{
    struct proc *p = arg;
    pthread_mutex_lock(&mu);
    while (p->go == 0)
        pthread_cond_wait(&go_cv, &mu);
    int go = p->go;
    pthread_mutex_unlock(&mu);
    if (go > 0)
        return waiter(p);
    cJSON_Delete(p->config);
    free(p->tag);
    free(p);
    return NULL;
}

static void waiter_go(struct proc *p, int go)
{
    pthread_mutex_lock(&mu);
    p->go = go;
    pthread_cond_broadcast(&go_cv);
    pthread_mutex_unlock(&mu);
}

/* The ProcessConfig as List reports it. */
static cJSON *config_json(const struct abxl_envd_spawn *sp)
{
    cJSON *c = cJSON_CreateObject();

    if (!c)
        return NULL;
    cJSON_AddStringToObject(c, "cmd", sp->cmd);
    if (sp->args && cJSON_GetArraySize(sp->args) > 0)
        cJSON_AddItemToObject(c, "args", cJSON_Duplicate(sp->args, 1));
    if (!abxl_envd_compat.proc_list_full)
        return c;   /* cmd and args: what every envd reports */
    if (sp->envs && cJSON_GetArraySize(sp->envs) > 0)
        cJSON_AddItemToObject(c, "envs", cJSON_Duplicate(sp->envs, 1));
    if (sp->cwd)
        cJSON_AddStringToObject(c, "cwd", sp->cwd);
    return c;
}

int abxl_envd_proc_start(const struct abxl_envd_spawn *sp, struct abxl_envd_stream *sub,
                    uint32_t *pid, char *err, size_t errlen)
{
    struct abxl_envd_child ch;
    struct proc *p = calloc(1, sizeof *p);
    struct abx_buf env;
    pthread_t t;
    pthread_attr_t attr;

    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    p->config = config_json(sp);
    p->tag = sp->tag ? strdup(sp->tag) : NULL;
    if (!p->config || (sp->tag && !p->tag)) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, waiter_entry, p);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start a thread to watch the process: %s (is the "
                 "sandbox at its process cap?)", strerror(rc));
        goto fail;
    }
    if (abxl_envd_spawn(sp, &ch, err, errlen)) {
        waiter_go(p, -1);
        return -1;
    }
    p->pid = ch.pid;
    p->keeper = ch.keeper;
    p->ctl_fd = ch.ctl_fd;
    p->in_fd = ch.in_fd;
    p->out_fd = ch.out_fd;
    p->err_fd = ch.err_fd;
    p->pty_fd = ch.pty_fd;
    p->pty_slave = ch.pty_slave;
    p->hidden = sp->hidden;
    p->deadline_ms = sp->deadline_ms;
    abx_buf_init(&p->unsent, UNSENT_MAX + 1);
    abx_buf_init(&p->end_env, 0);
    abx_buf_init(&env, 0);
    pthread_mutex_lock(&mu);
    gc_locked();  /* else entries pile up until the next Connect or List */
    if (sub && start_env(&env, p->pid) == 0 &&
        abxl_envd_stream_send_raw(sub, env.data, env.len) == 0) {
        abxl_envd_stream_ref(sub);
        p->subs[p->nsubs++] = (struct sub){sub, 1};
    }
    p->next = procs;
    procs = p;
    pthread_mutex_unlock(&mu);
    abx_buf_free(&env);
    *pid = (uint32_t)p->pid;
    waiter_go(p, 1);
    return 0;
fail:
    cJSON_Delete(p->config);
    free(p->tag);
    free(p);
    return -1;
}

/* Drops streams whose client left without a write noticing it yet. */
static void prune_locked(struct proc *p)
{
    int kept = 0;

    for (int i = 0; i < p->nsubs; i++) {
        if (abxl_envd_stream_gone(p->subs[i].s))
            abxl_envd_stream_unref(p->subs[i].s);
        else
            p->subs[kept++] = p->subs[i];
    }
    p->nsubs = kept;
}

int abxl_envd_proc_connect(const struct abxl_envd_selector *sel, struct abxl_envd_stream *s,
                      char *err, size_t errlen)
{
    struct abx_buf env;
    struct proc *p;
    int rc = -1;

    abx_buf_init(&env, 0);
    pthread_mutex_lock(&mu);
    if (!(p = find_locked(sel, 0, err, errlen)))
        goto out;
    if (start_env(&env, p->pid) || abxl_envd_stream_send_raw(s, env.data, env.len)) {
        snprintf(err, errlen, "stream closed");
        goto out;
    }
    if (p->unsent.len) {
        abxl_envd_stream_send_raw(s, p->unsent.data, p->unsent.len);
        abx_buf_reset(&p->unsent);
    }
    rc = 0;
    prune_locked(p);
    if (p->exited) {
        abxl_envd_stream_send_raw(s, p->end_env.data, p->end_env.len);
        abxl_envd_stream_end(s, ABX_CONNECT_OK, NULL);
    } else if (p->nsubs == MAX_SUBS) {
        abxl_envd_stream_end(s, ABX_CONNECT_RESOURCE_EXHAUSTED,
                        "too many streams attached to this process");
    } else {
        abxl_envd_stream_ref(s);
        p->subs[p->nsubs++] = (struct sub){s, 0};
    }
out:
    pthread_mutex_unlock(&mu);
    abx_buf_free(&env);
    return rc;
}

int abxl_envd_proc_list(cJSON *array)
{
    pthread_mutex_lock(&mu);
    gc_locked();
    for (struct proc *p = procs; p; p = p->next) {
        cJSON *o;

        if (p->hidden || p->exited)
            continue;
        if (!(o = cJSON_CreateObject()))
            break;
        cJSON_AddItemToObject(o, "config", cJSON_Duplicate(p->config, 1));
        cJSON_AddNumberToObject(o, "pid", (double)p->pid);
        if (p->tag)
            cJSON_AddStringToObject(o, "tag", p->tag);
        cJSON_AddItemToArray(array, o);
    }
    pthread_mutex_unlock(&mu);
    return 0;
}

int abxl_envd_proc_input(const struct abxl_envd_selector *sel, int pty,
                    const void *data, size_t n, char *err, size_t errlen)
{
    const char *d = data;
    struct proc *p;
    int fd = -1;

    pthread_mutex_lock(&mu);
    p = find_locked(sel, 1, err, errlen);
    if (p && (pty ? p->pty_fd : p->in_fd) >= 0)
        fd = dup(pty ? p->pty_fd : p->in_fd);
    pthread_mutex_unlock(&mu);
    if (!p)
        return ABX_CONNECT_NOT_FOUND;
    if (fd < 0) {
        snprintf(err, errlen, pty ? "failed to write to pty: pty not enabled"
                                  : "failed to write to stdin: stdin not "
                                    "enabled or closed");
        return abxl_envd_compat.stdin_refused_invalid ? ABX_CONNECT_INVALID_ARGUMENT
                                                      : ABX_CONNECT_INTERNAL;
    }
    /* Outside the lock: a child that does not read may block us. */
    while (n) {
        ssize_t w = write(fd, d, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(err, errlen, "failed to write to stdin: %s",
                     strerror(errno));
            close(fd);
            return ABX_CONNECT_INTERNAL;
        }
        d += w;
        n -= (size_t)w;
    }
    close(fd);
    return 0;
}

/* p stays in the table while we wait: exited processes are kept for
 * RETAIN_MS, far longer than KILL_REAP_WAIT_MS. */
static void wait_reaped_locked(struct proc *p)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += KILL_REAP_WAIT_MS / 1000;
    until.tv_nsec += (long)(KILL_REAP_WAIT_MS % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (!p->reaped)
        if (pthread_cond_timedwait(&reaped_cv, &mu, &until) == ETIMEDOUT)
            break;
}

enum control { CTL_EXISTS, CTL_SIGNAL, CTL_CLOSE_STDIN, CTL_RESIZE };

/* One operation on a running process, under the table lock so that the
 * process cannot be reaped (and its pid reused) meanwhile. */
static int control(const struct abxl_envd_selector *sel, enum control op, int sig,
                   const struct winsize *ws, char *err, size_t errlen)
{
    struct proc *p;
    int rc = 0;

    pthread_mutex_lock(&mu);
    p = find_locked(sel, 1, err, errlen);
    if (!p) {
        rc = ABX_CONNECT_NOT_FOUND;
    } else if (op == CTL_SIGNAL) {
        if (sig == SIGKILL || sig == SIGTERM)
            p->out_cancel = 1;
        /* Reaped (children hold its output): only its group is left. */
        if (kill(-p->pid, sig) != 0 && !p->reaped && kill(p->pid, sig) != 0) {
            snprintf(err, errlen, "error sending signal: %s", strerror(errno));
            rc = ABX_CONNECT_INTERNAL;
        } else if (sig == SIGKILL) {
            wait_reaped_locked(p);
        }
    } else if (op == CTL_CLOSE_STDIN) {
        if (p->in_fd >= 0) {
            close(p->in_fd);
            p->in_fd = -1;
        }
    } else if (op == CTL_RESIZE) {
        if (p->pty_fd < 0) {
            snprintf(err, errlen, "failed to resize pty: process has no pty");
            rc = ABX_CONNECT_INTERNAL;
        } else if (ioctl(p->pty_fd, TIOCSWINSZ, ws) != 0) {
            snprintf(err, errlen, "failed to resize pty: %s", strerror(errno));
            rc = ABX_CONNECT_INTERNAL;
        }
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

int abxl_envd_proc_signal(const struct abxl_envd_selector *sel, int sig, char *err,
                     size_t errlen)
{
    return control(sel, CTL_SIGNAL, sig, NULL, err, errlen);
}

int abxl_envd_proc_close_stdin(const struct abxl_envd_selector *sel, char *err,
                          size_t errlen)
{
    return control(sel, CTL_CLOSE_STDIN, 0, NULL, err, errlen);
}

int abxl_envd_proc_exists(const struct abxl_envd_selector *sel, char *err,
                     size_t errlen)
{
    return control(sel, CTL_EXISTS, 0, NULL, err, errlen);
}

int abxl_envd_proc_resize(const struct abxl_envd_selector *sel, unsigned rows,
                     unsigned cols, char *err, size_t errlen)
{
    struct winsize ws = {.ws_row = (unsigned short)rows,
                         .ws_col = (unsigned short)cols};

    return control(sel, CTL_RESIZE, 0, &ws, err, errlen);
}
