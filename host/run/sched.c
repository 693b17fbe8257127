/* The parent: forks workers, hands them tests, collects their results,
 * prints progress and notices crashes. All printing happens here, through
 * abx_out (the masker). A worker's stdout/stderr are a pipe too, so even
 * bytes written by a stray C library call are masked before they show.
 *
 * Scheduling (--dist, as pytest-xdist): the selected tests form units
 * (load: one test; loadgroup: a top-level describe or a `group` name;
 * loadfile: a file), queued longest file first (durations.c) with --ff's
 * failures ahead. An idle worker takes a batch: in load mode a guided
 * chunk of consecutive units of one file (remaining / (2 x workers), so
 * round trips stay few while the tail is split finely). Once a file has
 * no test left to hand out, every worker holding its state is told to
 * close it, which tears its file fixtures down. */
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

#include "chan.h"
#include "jsonutil.h"
#include "out.h"
#include "report.h"
#include "run.h"
#include "wallclock.h"

#define MAX_WORKERS 256
/* A worker stuck outside Lua (a blocking C call the hook cannot reach) is
 * killed once its test overran timeout + 5 teardown budgets + this grace:
 * a last resort, generous so that slow teardowns still finish. */
#define WATCHDOG_GRACE 30.0

/* A selected test: file and item index in the collection. */
struct ref {
    size_t file, item;
};

struct reflist {
    struct ref *v;
    size_t n, cap;
};

struct worker {
    pid_t pid;
    int index;
    int in_fd, out_fd;           /* parent ends; -1 when closed */
    struct abx_chan msg;         /* its messages */
    struct abx_buf out;
    struct reflist pending;      /* handed out, no result yet */
    int batches;                 /* RUN messages not answered by DONE */
    unsigned char *open;         /* per file: its state may be open */
    char *inflight;
    double inflight_deadline;    /* 0 = none */
    double inflight_start;       /* epoch seconds, for a crash's result */
    char *last;                  /* node id of its last result */
    char *killed_why;            /* set when the parent killed it */
    int alive;
};

struct sched {
    const struct abx_config *cfg;
    const struct abx_opts *o;    /* &cfg->opt */
    struct abx_collection *c;
    struct abx_run *run;
    struct worker w[MAX_WORKERS];
    int nw;
    struct ref *refs;            /* every selected test, unit by unit */
    size_t *unit_end;            /* unit u is refs[u ? end[u-1] : 0, end[u]) */
    size_t nunits, next_unit;
    struct reflist requeue;      /* a crashed worker's unstarted tests */
    size_t *left;                /* per file: tests not handed out yet */
    size_t unassigned;           /* all files' left */
    size_t total, done;
    long failures;
    int stopping;   /* no more jobs: maxfail or interrupt */
    unsigned reaped;  /* bumps when a worker is reaped (fds may be reused) */
    double watchdog_extra;  /* seconds past a test's timeout */
};

static void reflist_push(struct reflist *l, struct ref r)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct ref *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            abx_out_printf(ABX_OUT_STDERR, "abx-e2e: out of memory\n");
            _exit(ABX_EXIT_INTERNAL_ERROR);
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = r;
}

static void reflist_remove(struct reflist *l, size_t i)
{
    memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof *l->v);
    l->n--;
}

static const struct abx_item *item_of(const struct sched *s, struct ref r)
{
    return &s->c->files[r.file].items[r.item];
}

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
    cJSON_Delete(run->sandboxes);
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
    sigset_t saved;
    pid_t pid, runner;

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
    abx_signals_fork_begin(&saved);
    runner = getpid();   /* the worker's parent: pid 1 when it is a container's */
    pid = fork();
    if (pid != 0)
        abx_signals_fork_end(&saved);
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
            close_fd(&s->w[i].msg.fd);
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
        abx_worker_main(to[0], msg[1], index, s->cfg,
                        s->o->maxfail > 0 ? s->o->maxfail - s->failures : 0, runner);
    }
    close(to[0]);
    close(msg[1]);
    close(out[1]);
    memset(w, 0, sizeof *w);
    w->pid = pid;
    w->index = index;
    w->in_fd = to[1];
    abx_chan_init(&w->msg, msg[0], 0);
    w->out_fd = out[0];
    /* Never block on a worker: a stray grandchild may hold a pipe open. */
    fcntl(w->msg.fd, F_SETFL, O_NONBLOCK);
    fcntl(w->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(w->in_fd, F_SETFD, FD_CLOEXEC);
    w->alive = 1;
    abx_buf_init(&w->out, 1024 * 1024);
    w->open = abx_xcalloc(s->c->n ? s->c->n : 1, 1);
    update_children(s);
    return 0;
}

/* Sends m (consumed) to w; a dead worker's EOF tells the story. */
static void send_to(struct worker *w, cJSON *m)
{
    if (w->in_fd < 0 || abx_chan_send(w->in_fd, m, NULL) != 0)
        return;
}

/* Tells every worker holding file f's state to close it: none of its
 * tests is left to hand out. */
static void close_file_everywhere(struct sched *s, size_t f)
{
    int i;

    for (i = 0; i < s->nw; i++) {
        struct worker *w = &s->w[i];
        cJSON *m;
        if (!w->alive || !w->open[f])
            continue;
        w->open[f] = 0;
        if ((m = abx_msg_new(ABX_MSG_CLOSE))) {
            cJSON_AddStringToObject(m, "file", s->c->files[f].path);
            send_to(w, m);
        }
    }
}

/* Hands w the tests refs[0..n) (one file) as one RUN batch. */
static void send_batch(struct sched *s, struct worker *w,
                       const struct ref *refs, size_t n)
{
    size_t f = refs[0].file, i;
    cJSON *m = abx_msg_new(ABX_MSG_RUN), *ids;

    if (!m || !(ids = cJSON_AddArrayToObject(m, "nodeids")) ||
        !cJSON_AddStringToObject(m, "file", s->c->files[f].path)) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: out of memory\n");
        _exit(ABX_EXIT_INTERNAL_ERROR);
    }
    for (i = 0; i < n; i++) {
        cJSON_AddItemToArray(ids,
                             cJSON_CreateString(item_of(s, refs[i])->nodeid));
        reflist_push(&w->pending, refs[i]);
    }
    w->open[f] = 1;
    w->batches++;
    s->left[f] -= n;
    s->unassigned -= n;
    send_to(w, m);
    if (s->left[f] == 0)
        close_file_everywhere(s, f);
}

/* Gives an idle w its next batch: a crashed worker's leftovers first,
 * then the queue. 0 when there is nothing to give. */
static int assign(struct sched *s, struct worker *w)
{
    size_t i, n, chunk, start;

    if (s->stopping)
        return 0;
    if (s->requeue.n > 0) {
        struct ref *v = s->requeue.v;
        for (n = 1; n < s->requeue.n && v[n].file == v[0].file; n++)
            ;
        send_batch(s, w, v, n);
        memmove(v, v + n, (s->requeue.n - n) * sizeof *v);
        s->requeue.n -= n;
        return 1;
    }
    if (s->next_unit >= s->nunits)
        return 0;
    start = s->next_unit ? s->unit_end[s->next_unit - 1] : 0;
    chunk = s->o->dist == ABX_DIST_LOAD
                ? s->unassigned / (2 * (size_t)(s->nw > 0 ? s->nw : 1))
                : 1;
    /* Whole units of one file, at least one. */
    for (i = s->next_unit + 1; i < s->nunits; i++) {
        size_t b = s->unit_end[i - 1], e = s->unit_end[i];
        if (s->refs[b].file != s->refs[start].file ||
            e - start > chunk)
            break;
    }
    n = s->unit_end[i - 1] - start;
    s->next_unit = i;
    /* A unit spanning files (a `group` across files) goes as several
     * batches, one per file run. */
    for (i = start; i < start + n;) {
        size_t j = i + 1;
        while (j < start + n && s->refs[j].file == s->refs[i].file)
            j++;
        send_batch(s, w, &s->refs[i], j - i);
        i = j;
    }
    return 1;
}

static size_t find_pending(const struct sched *s, const struct worker *w,
                           const char *nodeid)
{
    size_t i;

    for (i = 0; i < w->pending.n; i++)
        if (strcmp(item_of(s, w->pending.v[i])->nodeid, nodeid) == 0)
            return i;
    return (size_t)-1;
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

static void clear_inflight(struct worker *w)
{
    free(w->inflight);
    w->inflight = NULL;
    w->inflight_deadline = 0;
}

static void on_result(struct sched *s, struct worker *w, const cJSON *m)
{
    struct abx_result *r = NULL;
    char err[256];
    size_t i;

    if (abx_result_from_json(cJSON_GetObjectItemCaseSensitive(m, "r"), &r,
                             err, sizeof err) != 0) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: internal error: bad "
                       "result from worker %d: %s\n", w->index, err);
        s->run->internal_error = 1;
        return;
    }
    r->worker = w->index;
    if ((i = find_pending(s, w, r->nodeid)) != (size_t)-1)
        reflist_remove(&w->pending, i);
    free(w->last);
    w->last = abx_xstrdup(r->nodeid);
    if (w->inflight && strcmp(w->inflight, r->nodeid) == 0)
        clear_inflight(w);
    add_result(s, r);
}

static void on_start(struct sched *s, struct worker *w, const char *nodeid)
{
    size_t i = find_pending(s, w, nodeid);
    double tmo = s->o->timeout;

    if (i != (size_t)-1 && item_of(s, w->pending.v[i])->timeout > 0)
        tmo = item_of(s, w->pending.v[i])->timeout;
    free(w->inflight);
    w->inflight = abx_xstrdup(nodeid);
    w->inflight_deadline = tmo > 0 ? abx_clock() + tmo + s->watchdog_extra
                                   : 0;
    w->inflight_start = abx_wall_clock();
}

/* A worker's sandbox lifetimes join the run's (for the reports). */
static void on_sandboxes(struct sched *s, const cJSON *m)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(m, "list"), *e;
    cJSON *copy;

    if (!cJSON_IsArray(list))
        return;
    if (!s->run->sandboxes && !(s->run->sandboxes = cJSON_CreateArray()))
        return;
    cJSON_ArrayForEach(e, list) {
        if (cJSON_IsObject(e) && (copy = cJSON_Duplicate(e, 1)) &&
            !cJSON_AddItemToArray(s->run->sandboxes, copy))
            cJSON_Delete(copy);
    }
}

static void handle_message(struct sched *s, struct worker *w, char *line)
{
    cJSON *m = cJSON_Parse(line);
    const char *id = abx_msg_str(m, "nodeid"), *v = abx_msg_str(m, "s");

    switch (abx_msg_type(m)) {
    case ABX_MSG_RESULT:
        on_result(s, w, m);
        break;
    case ABX_MSG_START:
        if (id)
            on_start(s, w, id);
        break;
    case ABX_MSG_SANDBOXES:
        on_sandboxes(s, m);
        break;
    case ABX_MSG_OUT:
        if (v)
            abx_term_output(v, strlen(v));
        break;
    case ABX_MSG_SECRET:
        if (v)
            abx_mask_add_str(abx_out_masker(), v);
        break;
    case ABX_MSG_AMEND:
        if (id && abx_msg_str(m, "teardown_message"))
            amend(s, id, abx_msg_str(m, "teardown_message"));
        break;
    case ABX_MSG_INTERRUPTED:
        s->run->interrupted = 1;
        s->stopping = 1;
        if (id)
            snprintf(s->run->interrupted_at, sizeof s->run->interrupted_at,
                     "%s", id);
        break;
    case ABX_MSG_DONE:
        clear_inflight(w);
        if (w->batches > 0 && --w->batches == 0) {
            /* What a stopped batch did not run is simply not reported. */
            w->pending.n = 0;
            if (!assign(s, w))
                close_fd(&w->in_fd);  /* no more work: the worker ends */
        }
        break;
    default:
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: internal error: unknown "
                       "message from worker %d\n", w->index);
        s->run->internal_error = 1;
        break;
    }
    cJSON_Delete(m);
}

static void drain_lines(struct sched *s, struct worker *w)
{
    char *line;

    while (abx_chan_line(&w->msg, &line, NULL)) {
        handle_message(s, w, line);
        free(line);
    }
}

static struct abx_result *crash_result(const struct sched *s,
                                       const struct worker *w, struct ref rf,
                                       enum abx_phase when, const char *msg)
{
    const struct abx_item *it = item_of(s, rf);
    const struct abx_file *f = &s->c->files[rf.file];
    struct abx_result *r = abx_result_new();
    size_t k;

    if (!r)
        return NULL;
    abx_result_set_identity(r, f->path, it->line,
                            (const char *const *)it->groups.items,
                            it->groups.n, it->name);
    r->outcome = ABX_OUTCOME_ERROR;
    r->when = when;
    if (when == ABX_PHASE_CALL)
        r->start = w->inflight_start;
    abx_result_set(&r->message, msg);
    abx_result_set(&r->longrepr, msg);
    r->worker = w->index;
    for (k = 0; k < it->marks.n; k++)
        abx_strlist_push(&r->markers, it->marks.items[k]);
    return r;
}

/* A worker died: the test it was running is an ERROR (or, between tests,
 * the one it was about to start); the rest of its batch goes back to the
 * queue for another worker, so nothing is lost and nothing runs twice. A
 * death after its last test amends that test (file or session teardown). */
static void worker_died(struct sched *s, struct worker *w, int status)
{
    char why[320], msg[1024];
    size_t i, failed = 0;

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
        i = w->inflight ? find_pending(s, w, w->inflight) : 0;
        if (i == (size_t)-1)
            i = 0;
        snprintf(msg, sizeof msg, "worker crashed: %s while %s %s", why,
                 w->inflight ? "running" : "preparing",
                 item_of(s, w->pending.v[i])->nodeid);
        add_result(s, crash_result(s, w, w->pending.v[i],
                                   w->inflight ? ABX_PHASE_CALL
                                               : ABX_PHASE_SETUP, msg));
        reflist_remove(&w->pending, i);
        failed = 1;
    } else if (status != 0 && !s->run->interrupted) {
        snprintf(msg, sizeof msg, "worker crashed: %s after its last test "
                 "(file or session teardown)", why);
        amend(s, w->last, msg);
    }
    /* Unstarted tests: another worker runs them, unless the run stops. */
    for (i = 0; failed && i < w->pending.n; i++) {
        if (s->stopping || abx_signal_count())
            break;
        reflist_push(&s->requeue, w->pending.v[i]);
        s->left[w->pending.v[i].file]++;
        s->unassigned++;
    }
    w->pending.n = 0;
    w->batches = 0;
    free(w->last);
    w->last = NULL;
    free(w->killed_why);
    w->killed_why = NULL;
    clear_inflight(w);
}

static void flush_stray(struct worker *w)
{
    if (w->out.len > 0) {
        abx_term_output(w->out.data, w->out.len);
        abx_buf_reset(&w->out);
    }
}

static int work_left(const struct sched *s)
{
    return !s->stopping && !abx_signal_count() &&
           (s->requeue.n > 0 || s->next_unit < s->nunits);
}

static void reap(struct sched *s, struct worker *w)
{
    int status = 0;

    close_fd(&w->in_fd);
    close_fd(&w->msg.fd);
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
    worker_died(s, w, status);
    abx_chan_free(&w->msg);
    abx_buf_free(&w->out);
    free(w->pending.v);
    free(w->open);
    w->open = NULL;
    if (work_left(s) && spawn(s, w, w->index) == 0 && !assign(s, w))
        close_fd(&w->in_fd);
}

static void on_readable(struct sched *s, struct worker *w, int fd)
{
    char buf[65536];
    ssize_t n;
    int rc;

    if (fd == w->out_fd) {
        n = read(fd, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            return;
        if (n <= 0) {
            close_fd(&w->out_fd);
            return;
        }
        abx_buf_append(&w->out, buf, (size_t)n);
        flush_stray(w);
        return;
    }
    rc = abx_chan_fill(&w->msg);
    drain_lines(s, w);
    if (w->msg.overflow) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: worker %d sent an "
                       "oversized message; killing it\n", w->index);
        kill(w->pid, SIGKILL);
        rc = -1;
    }
    if (rc < 0)
        reap(s, w);
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

/* The unit key of a test under --dist: NULL for a unit of its own. */
static const char *unit_key(const struct sched *s, const struct abx_item *it,
                            char *buf, size_t len, size_t file)
{
    if (s->o->dist == ABX_DIST_LOADFILE) {
        snprintf(buf, len, "f:%zu", file);
        return buf;
    }
    if (s->o->dist != ABX_DIST_LOADGROUP)
        return NULL;
    if (it->group) {  /* an explicit group may span files */
        snprintf(buf, len, "g:%s", it->group);
        return buf;
    }
    if (it->groups.n > 0) {  /* its top-level describe, in its file */
        snprintf(buf, len, "d:%zu:%s", file, it->groups.items[0]);
        return buf;
    }
    return NULL;
}

/* Builds the queue: files in dispatch order (order), each file's tests
 * grouped into units; with --ff the units holding a last failure first. */
static void build_units(struct sched *s, const size_t *order)
{
    struct reflist *units = NULL;
    char **keys = NULL, key[1200];
    size_t nu = 0, cap = 0, i, k, u, pass, total = 0;

    for (i = 0; i < s->c->n; i++) {
        const struct abx_file *f = &s->c->files[order[i]];
        for (k = 0; k < f->n; k++) {
            const char *kk;
            if (!f->items[k].selected)
                continue;
            kk = unit_key(s, &f->items[k], key, sizeof key, order[i]);
            for (u = nu; kk && u-- > 0;)
                if (keys[u] && strcmp(keys[u], kk) == 0)
                    break;
            if (!kk || u == (size_t)-1) {
                if (nu == cap) {
                    cap = cap ? cap * 2 : 64;
                    units = realloc(units, cap * sizeof *units);
                    keys = realloc(keys, cap * sizeof *keys);
                    if (!units || !keys) {
                        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: out of "
                                       "memory\n");
                        _exit(ABX_EXIT_INTERNAL_ERROR);
                    }
                }
                memset(&units[nu], 0, sizeof *units);
                keys[nu] = kk ? abx_xstrdup(kk) : NULL;
                u = nu++;
            }
            reflist_push(&units[u], (struct ref){order[i], k});
            s->left[order[i]]++;
            total++;
        }
    }
    s->refs = abx_xcalloc(total ? total : 1, sizeof *s->refs);
    s->unit_end = abx_xcalloc(nu ? nu : 1, sizeof *s->unit_end);
    total = 0;
    for (pass = 0; pass < 2; pass++) {
        for (u = 0; u < nu; u++) {
            int failed = 0;
            for (k = 0; k < units[u].n; k++)
                failed |= item_of(s, units[u].v[k])->failed_last;
            if ((pass == 0) != (failed != 0))
                continue;
            memcpy(&s->refs[total], units[u].v,
                   units[u].n * sizeof *units[u].v);
            total += units[u].n;
            s->unit_end[s->nunits++] = total;
        }
    }
    s->unassigned = total;
    for (u = 0; u < nu; u++) {
        free(units[u].v);
        free(keys[u]);
    }
    free(units);
    free(keys);
}

void abx_schedule(const struct abx_config *cfg, struct abx_collection *c,
                  struct abx_run *run)
{
    static struct sched s;
    size_t i, *order;
    int n, seen_signal = 0;

    memset(&s, 0, sizeof s);
    s.watchdog_extra = 5 * ABX_TEARDOWN_BUDGET + WATCHDOG_GRACE;
    if (cfg->watchdog_extra >= 0)   /* the self-tests see it work */
        s.watchdog_extra = cfg->watchdog_extra;
    s.cfg = cfg;
    s.o = &cfg->opt;
    s.c = c;
    s.run = run;
    for (i = 0; i < c->n; i++)
        s.total += c->files[i].nselected + (c->files[i].collect_error != NULL);
    /* Collection errors are results too. */
    for (i = 0; i < c->n; i++) {
        if (c->files[i].collect_error) {
            struct abx_result *r = c->files[i].collect_error;
            c->files[i].collect_error = NULL;
            add_result(&s, r);
        }
    }
    n = s.o->workers > 0 ? s.o->workers : 1;
    /* One worker runs the files in collection order, as pytest does;
     * several take the longest first (durations.c). */
    order = n > 1 ? abx_durations_order(c) : NULL;
    if (!order) {
        order = abx_xcalloc(c->n ? c->n : 1, sizeof *order);
        for (i = 0; i < c->n; i++)
            order[i] = i;
    }
    s.left = abx_xcalloc(c->n ? c->n : 1, sizeof *s.left);
    build_units(&s, order);
    free(order);
    if ((size_t)n > s.nunits)
        n = (int)s.nunits;
    for (s.nw = 0; s.nw < n && !s.stopping; s.nw++) {
        if (spawn(&s, &s.w[s.nw], s.nw) != 0) {
            abx_out_printf(ABX_OUT_STDERR, "abx-e2e: internal error: cannot "
                           "start a worker: %s\n", strerror(errno));
            run->internal_error = 1;
            break;
        }
    }
    /* All workers exist before the first batch: chunks divide by them. */
    for (i = 0; i < (size_t)s.nw; i++)
        if (!assign(&s, &s.w[i]))
            close_fd(&s.w[i].in_fd);
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
            if (w->msg.fd >= 0) {
                pfd[np].fd = w->msg.fd;
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
            if (!w->alive ||
                (pfd[k].fd != w->msg.fd && pfd[k].fd != w->out_fd))
                continue;
            if (pfd[k].revents & (POLLIN | POLLHUP | POLLERR))
                on_readable(&s, w, pfd[k].fd);
        }
        watchdog(&s);
    }
    if (abx_signal_count())
        run->interrupted = 1;
    free(s.refs);
    free(s.unit_end);
    free(s.left);
    free(s.requeue.v);
    memset(&s, 0, sizeof s);
}
