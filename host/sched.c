/* The parent: forks workers, hands them files, collects their results,
 * prints progress and notices crashes. All printing happens here, through
 * abx_out (the masker). A worker's stdout/stderr are a pipe too, so even
 * bytes written by a stray C library call are masked before they show. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "host.h"
#include "jsonutil.h"
#include "out.h"

#define MAX_WORKERS 256
/* A worker stuck outside Lua (a blocking C call the hook cannot reach) is
 * killed once its test overran timeout + 5 teardown budgets + this grace:
 * a last resort, generous so that slow teardowns still finish. */
#define WATCHDOG_GRACE 30.0

struct worker {
    pid_t pid;
    int index;
    int in_fd, msg_fd, out_fd;   /* parent ends; -1 when closed */
    struct abx_buf msg, out;
    struct abx_file *file;       /* current job, or NULL when idle */
    struct abx_strlist pending;  /* node ids of the job not yet reported */
    char *inflight;
    double inflight_deadline;    /* 0 = none */
    char *last;                  /* node id of its last result */
    char *killed_why;            /* set when the parent killed it */
    int alive;
};

struct sched {
    const struct abx_opts *o;
    struct abx_collection *c;
    struct abx_run *run;
    struct worker w[MAX_WORKERS];
    int nw;
    size_t next_file;            /* index into order */
    size_t *order;               /* files in dispatch order */
    size_t total, done;
    long failures;
    int stopping;   /* no more jobs: maxfail or interrupt */
    unsigned reaped;  /* bumps when a worker is reaped (fds may be reused) */
    double watchdog_extra;  /* seconds past a test's timeout */
};

int abx_run_add(struct abx_run *run, struct abx_result *r)
{
    if (!r)
        return -1;
    if (run->n == run->cap) {
        size_t cap = run->cap ? run->cap * 2 : 64;
        struct abx_result **p = realloc(run->results, cap * sizeof *p);
        if (!p) {
            abx_result_free(r);
            return -1;
        }
        run->results = p;
        run->cap = cap;
    }
    run->results[run->n++] = r;
    return 0;
}

void abx_run_free(struct abx_run *run)
{
    size_t i;

    for (i = 0; i < run->n; i++)
        abx_result_free(run->results[i]);
    free(run->results);
    memset(run, 0, sizeof *run);
}

static void update_children(struct sched *s)
{
    int pids[MAX_WORKERS], i, n = 0;

    for (i = 0; i < MAX_WORKERS; i++)  /* s->nw lags during start-up */
        if (s->w[i].alive)
            pids[n++] = s->w[i].pid;
    abx_signals_set_children(pids, (size_t)n);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static int spawn(struct sched *s, struct worker *w, int index)
{
    int to[2], msg[2], out[2], i;
    pid_t pid;

    if (pipe(to) != 0)
        return -1;
    if (pipe(msg) != 0) {
        close(to[0]), close(to[1]);
        return -1;
    }
    if (pipe(out) != 0) {
        close(to[0]), close(to[1]), close(msg[0]), close(msg[1]);
        return -1;
    }
    abx_out_flush();
    pid = fork();
    if (pid < 0) {
        close(to[0]), close(to[1]), close(msg[0]), close(msg[1]);
        close(out[0]), close(out[1]);
        return -1;
    }
    if (pid == 0) {
        abx_out_after_fork_child();
        abx_relay_child();
        /* Siblings' pipes must not stay open here, or the parent would
         * never see their EOF. */
        for (i = 0; i < s->nw; i++) {
            if (&s->w[i] == w)
                continue;
            close_fd(&s->w[i].in_fd);
            close_fd(&s->w[i].msg_fd);
            close_fd(&s->w[i].out_fd);
        }
        close(to[1]);
        close(msg[0]);
        close(out[0]);
        /* A process a test starts must not keep our pipes open. */
        fcntl(to[0], F_SETFD, FD_CLOEXEC);
        fcntl(msg[1], F_SETFD, FD_CLOEXEC);
        dup2(out[1], STDOUT_FILENO);
        dup2(out[1], STDERR_FILENO);
        close(out[1]);
        if (!s->o->no_capture)  /* -s: a test may read the terminal */
            abx_stdin_null();
        abx_worker_main(to[0], msg[1], index,
                        s->o->maxfail > 0 ? s->o->maxfail - s->failures : 0);
    }
    close(to[0]);
    close(msg[1]);
    close(out[1]);
    memset(w, 0, sizeof *w);
    w->pid = pid;
    w->index = index;
    w->in_fd = to[1];
    w->msg_fd = msg[0];
    w->out_fd = out[0];
    /* Never block on a worker: a stray grandchild may hold a pipe open. */
    fcntl(w->msg_fd, F_SETFL, O_NONBLOCK);
    fcntl(w->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(w->in_fd, F_SETFD, FD_CLOEXEC);
    w->alive = 1;
    abx_buf_init(&w->msg, ABX_BUF_DEFAULT_MAX);
    abx_buf_init(&w->out, 1024 * 1024);
    abx_strlist_init(&w->pending);
    update_children(s);
    return 0;
}

static const struct abx_item *find_item(const struct abx_file *f,
                                        const char *nodeid)
{
    size_t i;

    for (i = 0; f && i < f->n; i++)
        if (strcmp(f->items[i].nodeid, nodeid) == 0)
            return &f->items[i];
    return NULL;
}

/* Sends the next file with selected tests to w; 0 if none is left. */
static int assign(struct sched *s, struct worker *w)
{
    cJSON *job, *ids;
    struct abx_buf line;
    size_t i;
    int rc = 0;

    while (s->next_file < s->c->n &&
           s->c->files[s->order[s->next_file]].nselected == 0)
        s->next_file++;
    if (s->stopping || s->next_file >= s->c->n)
        return 0;
    w->file = &s->c->files[s->order[s->next_file++]];
    job = cJSON_CreateObject();
    cJSON_AddStringToObject(job, "file", w->file->path);
    ids = cJSON_AddArrayToObject(job, "nodeids");
    for (i = 0; i < w->file->n; i++) {
        if (!w->file->items[i].selected)
            continue;
        cJSON_AddItemToArray(ids,
                             cJSON_CreateString(w->file->items[i].nodeid));
        abx_strlist_push(&w->pending, w->file->items[i].nodeid);
    }
    abx_buf_init(&line, ABX_BUF_DEFAULT_MAX);
    if (abx_json_append(&line, job) == 0 && abx_buf_appendc(&line, '\n') == 0) {
        size_t off = 0;
        while (off < line.len) {
            ssize_t n = write(w->in_fd, line.data + off, line.len - off);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;  /* the worker died: its EOF tells the story */
            off += (size_t)n;
        }
        rc = 1;
    }
    abx_buf_free(&line);
    cJSON_Delete(job);
    return rc;
}

static void remove_pending(struct worker *w, const char *nodeid)
{
    size_t i;

    for (i = 0; i < w->pending.n; i++) {
        if (strcmp(w->pending.items[i], nodeid) == 0) {
            free(w->pending.items[i]);
            memmove(&w->pending.items[i], &w->pending.items[i + 1],
                    (w->pending.n - i - 1) * sizeof *w->pending.items);
            w->pending.n--;
            return;
        }
    }
}

static void add_result(struct sched *s, struct abx_result *r)
{
    abx_term_result(s->o, r, ++s->done, s->total);
    if (abx_result_is_failure(r) || r->teardown_message)
        s->failures++;
    abx_run_add(s->run, r);
    if (s->o->maxfail > 0 && s->failures >= s->o->maxfail && !s->stopping) {
        int i;
        s->stopping = 1;
        s->run->stopped_maxfail = 1;
        for (i = 0; i < s->nw; i++)
            if (s->w[i].alive)
                kill(s->w[i].pid, SIGUSR2);
    }
}

/* A teardown error reported after the result (file/session fixtures, or
 * a worker that died after its last test): added to that test's result,
 * as pytest's "ERROR at teardown of" the last test. */
static void amend(struct sched *s, const char *nodeid, const char *msg)
{
    struct abx_result *r = NULL;
    struct abx_buf b;
    size_t i;

    for (i = s->run->n; nodeid && i-- > 0;) {
        if (strcmp(s->run->results[i]->nodeid, nodeid) == 0) {
            r = s->run->results[i];
            break;
        }
    }
    if (!r) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: ERROR at teardown: %s\n",
                       msg);
        s->run->internal_error = 1;
        return;
    }
    abx_buf_init(&b, 4 * 1024 * 1024);
    if (r->teardown_message)
        abx_buf_appendf(&b, "%s\n", r->teardown_message);
    abx_buf_appends(&b, msg);
    if (!r->teardown_message && !abx_result_is_failure(r))
        s->failures++;
    abx_result_set(&r->teardown_message, abx_buf_cstr(&b));
    abx_result_set(&r->teardown_longrepr, abx_buf_cstr(&b));
    abx_buf_free(&b);
    if (!s->o->quiet)
        abx_out_printf(ABX_OUT_STDOUT, "%s ERROR (teardown)\n", r->nodeid);
}

static void handle_message(struct sched *s, struct worker *w, char *line)
{
    cJSON *m = cJSON_Parse(line);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "t");
    const char *type = cJSON_IsString(t) ? t->valuestring : "";

    if (strcmp(type, "result") == 0) {
        struct abx_result *r = NULL;
        char err[256];
        if (abx_result_from_json(cJSON_GetObjectItemCaseSensitive(m, "r"),
                                 &r, err, sizeof err) == 0) {
            r->worker = w->index;
            remove_pending(w, r->nodeid);
            free(w->last);
            w->last = abx_xstrdup(r->nodeid);
            if (w->inflight && strcmp(w->inflight, r->nodeid) == 0) {
                free(w->inflight);
                w->inflight = NULL;
                w->inflight_deadline = 0;
            }
            add_result(s, r);
        } else {
            abx_out_printf(ABX_OUT_STDERR, "abx-e2e: internal error: bad "
                           "result from worker %d: %s\n", w->index, err);
            s->run->internal_error = 1;
        }
    } else if (strcmp(type, "start") == 0) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "nodeid");
        if (cJSON_IsString(id)) {
            const struct abx_item *it = find_item(w->file, id->valuestring);
            double tmo = it && it->timeout > 0 ? it->timeout : s->o->timeout;
            free(w->inflight);
            w->inflight = abx_xstrdup(id->valuestring);
            w->inflight_deadline =
                tmo > 0 ? abx_clock() + tmo + s->watchdog_extra : 0;
        }
    } else if (strcmp(type, "out") == 0) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "s");
        if (cJSON_IsString(v))
            abx_term_output(v->valuestring, strlen(v->valuestring));
    } else if (strcmp(type, "secret") == 0) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "s");
        if (cJSON_IsString(v))
            abx_mask_add_str(abx_out_masker(), v->valuestring);
    } else if (strcmp(type, "amend") == 0) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "nodeid");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(m,
                                                            "teardown_message");
        if (cJSON_IsString(id) && cJSON_IsString(msg))
            amend(s, id->valuestring, msg->valuestring);
    } else if (strcmp(type, "interrupted") == 0) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "nodeid");
        s->run->interrupted = 1;
        s->stopping = 1;
        if (cJSON_IsString(id))
            snprintf(s->run->interrupted_at, sizeof s->run->interrupted_at,
                     "%s", id->valuestring);
    } else if (strcmp(type, "filedone") == 0) {
        w->file = NULL;
        abx_strlist_free(&w->pending);
        abx_strlist_init(&w->pending);
        free(w->inflight);
        w->inflight = NULL;
        w->inflight_deadline = 0;
        if (!assign(s, w))
            close_fd(&w->in_fd);  /* no more work: the worker finishes */
    }
    cJSON_Delete(m);
}

static void drain_lines(struct sched *s, struct worker *w)
{
    char *nl;

    while (w->msg.data && (nl = memchr(w->msg.data, '\n', w->msg.len))) {
        size_t n = (size_t)(nl - w->msg.data);
        char *line = abx_xcalloc(n + 1, 1);
        memcpy(line, w->msg.data, n);
        abx_buf_consume(&w->msg, n + 1);
        handle_message(s, w, line);
        free(line);
    }
}

/* Marks what the dead worker still owed as ERROR. */
static void worker_died(struct sched *s, struct worker *w, int status)
{
    char why[320], msg[1024];
    size_t i;

    if (w->killed_why)
        snprintf(why, sizeof why, "signal %d (%s), %s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), w->killed_why);
    else if (WIFSIGNALED(status))
        snprintf(why, sizeof why, "signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(why, sizeof why, "exit status %d", WEXITSTATUS(status));
    if (status != 0)
        s->run->worker_crashed = 1;
    if (w->pending.n > 0 && !(s->run->interrupted && w->inflight == NULL)) {
        snprintf(msg, sizeof msg, "worker crashed: %s while running %s", why,
                 w->inflight ? w->inflight
                             : (w->file ? w->file->path : "(unknown)"));
        for (i = 0; i < w->pending.n; i++) {
            const struct abx_item *it = find_item(w->file, w->pending.items[i]);
            struct abx_result *r = abx_result_new();
            if (!r)
                break;
            if (it)
                abx_result_set_identity(
                    r, w->file->path, it->line,
                    (const char *const *)it->groups.items, it->groups.n,
                    it->name);
            else
                abx_result_set(&r->nodeid, w->pending.items[i]);
            r->outcome = ABX_OUTCOME_ERROR;
            r->when = w->inflight &&
                              strcmp(w->inflight, w->pending.items[i]) == 0
                          ? ABX_PHASE_CALL
                          : ABX_PHASE_SETUP;
            abx_result_set(&r->message, msg);
            abx_result_set(&r->longrepr, msg);
            r->worker = w->index;
            if (it)
                for (size_t k = 0; k < it->marks.n; k++)
                    abx_strlist_push(&r->markers, it->marks.items[k]);
            add_result(s, r);
            if (s->run->interrupted)
                break;  /* only the in-flight one when interrupted */
        }
    } else if (status != 0 && !s->run->interrupted) {
        /* Died after its last test: session teardown did not complete. */
        snprintf(msg, sizeof msg, "worker crashed: %s after its last test "
                 "(session teardown)", why);
        amend(s, w->last, msg);
    }
    free(w->last);
    w->last = NULL;
    free(w->killed_why);
    w->killed_why = NULL;
    abx_strlist_free(&w->pending);
    abx_strlist_init(&w->pending);
    free(w->inflight);
    w->inflight = NULL;
    w->file = NULL;
}

static void flush_stray(struct worker *w)
{
    if (w->out.len > 0) {
        abx_term_output(w->out.data, w->out.len);
        abx_buf_reset(&w->out);
    }
}

static void reap(struct sched *s, struct worker *w)
{
    int status = 0;
    int respawn;

    close_fd(&w->in_fd);
    close_fd(&w->msg_fd);
    /* Drain whatever the worker still wrote to stdout/stderr. */
    if (w->out_fd >= 0) {
        char buf[4096];
        ssize_t n;
        while ((n = read(w->out_fd, buf, sizeof buf)) > 0 ||
               (n < 0 && errno == EINTR))
            if (n > 0)
                abx_buf_append(&w->out, buf, (size_t)n);
        close_fd(&w->out_fd);
    }
    flush_stray(w);
    while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
        ;
    w->alive = 0;
    s->reaped++;
    update_children(s);
    respawn = w->file != NULL && !s->stopping && !abx_signal_count();
    worker_died(s, w, status);
    abx_buf_free(&w->msg);
    abx_buf_free(&w->out);
    if (respawn || (!s->stopping && !abx_signal_count() &&
                    s->next_file < s->c->n)) {
        if (spawn(s, w, w->index) == 0 && !assign(s, w))
            close_fd(&w->in_fd);
    }
}

static void on_readable(struct sched *s, struct worker *w, int fd)
{
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof buf);

    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (fd == w->out_fd) {
        if (n <= 0) {
            close_fd(&w->out_fd);
            return;
        }
        abx_buf_append(&w->out, buf, (size_t)n);
        flush_stray(w);
        return;
    }
    if (n <= 0) {
        drain_lines(s, w);
        reap(s, w);
        return;
    }
    if (abx_buf_append(&w->msg, buf, (size_t)n) != 0) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: worker %d sent an "
                       "oversized message; killing it\n", w->index);
        kill(w->pid, SIGKILL);
        return;
    }
    drain_lines(s, w);
}

static void watchdog(struct sched *s)
{
    double now = abx_clock();
    int i;

    for (i = 0; i < s->nw; i++) {
        struct worker *w = &s->w[i];
        if (w->alive && w->inflight_deadline > 0 &&
            now > w->inflight_deadline) {
            abx_out_printf(ABX_OUT_STDERR, "abx-e2e: %s is stuck past its "
                           "timeout outside Lua; killing worker %d\n",
                           w->inflight, w->index);
            abx_result_set(&w->killed_why, "killed by the watchdog: stuck "
                           "past its timeout in a call the timeout hook "
                           "cannot interrupt");
            w->inflight_deadline = 0;
            kill(w->pid, SIGKILL);
        }
    }
}

void abx_schedule(const struct abx_opts *o, struct abx_collection *c,
                  struct abx_run *run)
{
    static struct sched s;
    size_t i, files = 0;
    int n, seen_signal = 0;

    memset(&s, 0, sizeof s);
    s.watchdog_extra = 5 * ABX_TEARDOWN_BUDGET + WATCHDOG_GRACE;
    if (abx_host.selftest) {
        /* The self-tests shorten the watchdog to see it work. */
        const char *g = getenv("ABX_E2E_WATCHDOG_EXTRA");
        if (g)
            abx_parse_double(g, 0, 3600, &s.watchdog_extra);
    }
    s.o = o;
    s.c = c;
    s.run = run;
    for (i = 0; i < c->n; i++) {
        s.total += c->files[i].nselected + (c->files[i].collect_error != NULL);
        files += c->files[i].nselected > 0;
    }
    /* Collection errors are results too. */
    for (i = 0; i < c->n; i++) {
        if (c->files[i].collect_error) {
            struct abx_result *r = c->files[i].collect_error;
            c->files[i].collect_error = NULL;
            add_result(&s, r);
        }
    }
    n = o->workers > 0 ? o->workers : 1;
    if ((size_t)n > files)
        n = (int)files;
    /* One worker runs the files in collection order, as pytest does;
     * several take the longest first (durations.c). */
    s.order = n > 1 ? abx_durations_order(c) : NULL;
    if (!s.order) {
        s.order = abx_xcalloc(c->n ? c->n : 1, sizeof *s.order);
        for (i = 0; i < c->n; i++)
            s.order[i] = i;
    }
    for (s.nw = 0; s.nw < n && !s.stopping; s.nw++) {
        if (spawn(&s, &s.w[s.nw], s.nw) != 0) {
            abx_out_printf(ABX_OUT_STDERR, "abx-e2e: internal error: cannot "
                           "start a worker: %s\n", strerror(errno));
            run->internal_error = 1;
            break;
        }
        if (!assign(&s, &s.w[s.nw]))
            close_fd(&s.w[s.nw].in_fd);
    }
    for (;;) {
        struct pollfd pfd[MAX_WORKERS * 2];
        struct worker *owner[MAX_WORKERS * 2];
        int np = 0, alive = 0, k;

        if (abx_signal_count() && !seen_signal) {
            seen_signal = 1;
            s.stopping = 1;
            run->interrupted = 1;
        }
        for (k = 0; k < s.nw; k++) {
            struct worker *w = &s.w[k];
            if (!w->alive)
                continue;
            alive++;
            if (w->msg_fd >= 0) {
                pfd[np].fd = w->msg_fd;
                pfd[np].events = POLLIN;
                owner[np++] = w;
            }
            if (w->out_fd >= 0) {
                pfd[np].fd = w->out_fd;
                pfd[np].events = POLLIN;
                owner[np++] = w;
            }
        }
        if (!alive)
            break;
        if (poll(pfd, (nfds_t)np, 200) < 0) {
            if (errno != EINTR)
                break;
            continue;
        }
        unsigned reaped = s.reaped;
        for (k = 0; k < np && reaped == s.reaped; k++) {
            struct worker *w = owner[k];
            /* An earlier event may have reaped (or replaced) this worker. */
            if (!w->alive || (pfd[k].fd != w->msg_fd && pfd[k].fd != w->out_fd))
                continue;
            if (pfd[k].revents & (POLLIN | POLLHUP | POLLERR))
                on_readable(&s, w, pfd[k].fd);
        }
        watchdog(&s);
    }
    if (abx_signal_count())
        run->interrupted = 1;
    free(s.order);
    s.order = NULL;
}
