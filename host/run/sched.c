/* The runner's side of a run: hands the workers (pool.c) their batches
 * (queue.c, the --dist policy), handles their messages, collects their
 * results (results.c), prints progress, and turns a worker's death into
 * results. All printing happens here, through abx_out (the masker). Once
 * a file has no test left to hand out, every worker holding its state is
 * told to close it, which tears its file fixtures down. */
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

#include "jsonutil.h"
#include "out.h"
#include "pool.h"
#include "queue.h"
#include "report.h"
#include "run.h"
#include "wallclock.h"

/* A worker stuck outside Lua (a blocking C call the hook cannot reach) is
 * killed once its test overran timeout + 5 teardown budgets + this grace:
 * a last resort, generous so that slow teardowns still finish. */
#define WATCHDOG_GRACE 30.0

struct sched {
    const struct abx_config *cfg;
    const struct abx_opts *o;    /* &cfg->opt */
    struct abx_collection *c;
    struct abx_run *run;
    struct abx_pool pool;
    struct abx_queue q;
    size_t total, done;
    long failures;
    int stopping;   /* no more jobs: maxfail or interrupt */
    double watchdog_extra;  /* seconds past a test's timeout */
};

static const struct abx_item *item_of(const struct sched *s, struct abx_ref r)
{
    return &s->c->files[r.file].items[r.item];
}

static int spawn(struct sched *s, struct abx_worker *w, int index)
{
    long budget = s->o->maxfail > 0 ? s->o->maxfail - s->failures : 0;

    return abx_pool_spawn(&s->pool, w, index, s->cfg, budget, s->c->n);
}

/* Tells every worker holding file f's state to close it: none of its
 * tests is left to hand out. */
static void close_file_everywhere(struct sched *s, size_t f)
{
    int i;

    for (i = 0; i < s->pool.nw; i++) {
        struct abx_worker *w = &s->pool.w[i];
        cJSON *m;
        if (!w->alive || !w->open[f])
            continue;
        w->open[f] = 0;
        if ((m = abx_msg_new(ABX_MSG_CLOSE))) {
            cJSON_AddStringToObject(m, "file", s->c->files[f].path);
            abx_pool_send(w, m);
        }
    }
}

struct give {
    struct sched *s;
    struct abx_worker *w;
};

/* Hands the worker the tests refs[0..n) (one file) as one RUN batch
 * (abx_queue_take's send). */
static void send_batch(void *ctx, const struct abx_ref *refs, size_t n)
{
    struct sched *s = ((struct give *)ctx)->s;
    struct abx_worker *w = ((struct give *)ctx)->w;
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
        abx_reflist_push(&w->pending, refs[i]);
    }
    w->open[f] = 1;
    w->batches++;
    abx_pool_send(w, m);
    if (s->q.left[f] == 0)
        close_file_everywhere(s, f);
}

/* Gives an idle w its next batch. 0 when there is nothing to give. */
static int assign(struct sched *s, struct abx_worker *w)
{
    struct give g = {s, w};

    return !s->stopping && abx_queue_take(&s->q, s->pool.nw, send_batch, &g);
}

static size_t find_pending(const struct sched *s, const struct abx_worker *w,
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
        s->stopping = 1;
        s->run->stopped_maxfail = 1;
        abx_pool_signal(&s->pool, SIGUSR2);
    }
}

/* A teardown error after its test's result (results.c). */
static void amend(struct sched *s, const char *nodeid, const char *msg)
{
    if (abx_run_amend(s->run, nodeid, msg, s->o->quiet))
        s->failures++;
}

static void on_result(struct sched *s, struct abx_worker *w, const cJSON *m)
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
        abx_reflist_remove(&w->pending, i);
    free(w->last);
    w->last = abx_xstrdup(r->nodeid);
    if (w->inflight && strcmp(w->inflight, r->nodeid) == 0)
        abx_pool_clear_inflight(w);
    add_result(s, r);
}

static void on_start(struct sched *s, struct abx_worker *w, const char *nodeid)
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

static void handle_message(struct sched *s, struct abx_worker *w, char *line)
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
        abx_pool_clear_inflight(w);
        if (w->batches > 0 && --w->batches == 0) {
            /* What a stopped batch did not run is simply not reported. */
            w->pending.n = 0;
            if (!assign(s, w))
                abx_pool_close_input(w);  /* no more work: the worker ends */
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

static void drain_lines(struct sched *s, struct abx_worker *w)
{
    char *line;

    while (abx_chan_line(&w->msg, &line, NULL)) {
        handle_message(s, w, line);
        free(line);
    }
}

/* A worker died: the test it was running is an ERROR (or, between tests,
 * the one it was about to start); the rest of its batch goes back to the
 * queue for another worker, so nothing is lost and nothing runs twice. A
 * death after its last test amends that test (file or session teardown). */
static void worker_died(struct sched *s, struct abx_worker *w, int status)
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
        add_result(s, abx_run_crashed(&s->c->files[w->pending.v[i].file],
                                      item_of(s, w->pending.v[i]), w->index,
                                      w->inflight ? ABX_PHASE_CALL : ABX_PHASE_SETUP,
                                      w->inflight_start, msg));
        abx_reflist_remove(&w->pending, i);
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
        abx_queue_requeue(&s->q, w->pending.v[i]);
    }
    w->pending.n = 0;
    w->batches = 0;
}

static int work_left(const struct sched *s)
{
    return !s->stopping && !abx_signal_count() && abx_queue_pending(&s->q);
}

/* w's messages ended: what its death costs, then a new worker in its
 * place while work is left. */
static void reap(struct sched *s, struct abx_worker *w)
{
    worker_died(s, w, abx_pool_reap(&s->pool, w));
    abx_pool_release(w);
    if (work_left(s) && spawn(s, w, w->index) == 0 && !assign(s, w))
        abx_pool_close_input(w);
}

static void on_readable(struct sched *s, struct abx_worker *w, int fd)
{
    int rc;

    if (fd == w->out_fd) {
        abx_pool_read_output(w);
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

    for (i = 0; i < s->pool.nw; i++) {
        struct abx_worker *w = &s->pool.w[i];
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
    abx_queue_build(&s.q, c, order, s.o->dist);
    free(order);
    if ((size_t)n > s.q.nunits)
        n = (int)s.q.nunits;
    for (s.pool.nw = 0; s.pool.nw < n && !s.stopping; s.pool.nw++) {
        if (spawn(&s, &s.pool.w[s.pool.nw], s.pool.nw) != 0) {
            abx_out_printf(ABX_OUT_STDERR, "abx-e2e: internal error: cannot "
                           "start a worker: %s\n", strerror(errno));
            run->internal_error = 1;
            break;
        }
    }
    /* All workers exist before the first batch: chunks divide by them. */
    for (i = 0; i < (size_t)s.pool.nw; i++)
        if (!assign(&s, &s.pool.w[i]))
            abx_pool_close_input(&s.pool.w[i]);
    for (;;) {
        struct pollfd pfd[ABX_MAX_WORKERS * 2];
        struct abx_worker *owner[ABX_MAX_WORKERS * 2];
        int np = 0, alive = 0, k;

        if (abx_signal_count() && !seen_signal) {
            seen_signal = 1;
            s.stopping = 1;
            run->interrupted = 1;
        }
        for (k = 0; k < s.pool.nw; k++) {
            struct abx_worker *w = &s.pool.w[k];
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
        unsigned reaped = s.pool.reaped;
        for (k = 0; k < np && reaped == s.pool.reaped; k++) {
            struct abx_worker *w = owner[k];
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
    abx_queue_free(&s.q);
    memset(&s, 0, sizeof s);
}
