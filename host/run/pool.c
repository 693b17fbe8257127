/* The worker processes (pool.h). A worker's stdout/stderr are a pipe
 * too, so even bytes written by a stray C library call are masked before
 * they show. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "out.h"
#include "pool.h"
#include "report.h"
#include "run.h"

/* The signals the runner forwards go to the live workers. */
static void update_children(struct abx_pool *p)
{
    int pids[ABX_MAX_WORKERS], i, n = 0;

    for (i = 0; i < ABX_MAX_WORKERS; i++)  /* p->nw lags during start-up */
        if (p->w[i].alive)
            pids[n++] = p->w[i].pid;
    abx_signals_set_children(pids, (size_t)n);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

void abx_pool_close_input(struct abx_worker *w) { close_fd(&w->in_fd); }

int abx_pool_spawn(struct abx_pool *p, struct abx_worker *w, int index,
                   const struct abx_config *cfg, long fail_budget, size_t nfiles)
{
    int to[2], msg[2], out[2], i;
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
    runner = getpid();   /* the worker's parent: pid 1 when it is a container's */
    pid = abx_fork_child();
    if (pid < 0) {
        close(to[0]), close(to[1]), close(msg[0]), close(msg[1]);
        close(out[0]), close(out[1]);
        return -1;
    }
    if (pid == 0) {
        /* Siblings' pipes must not stay open here, or the parent would
         * never see their EOF. */
        for (i = 0; i < p->nw; i++) {
            if (&p->w[i] == w)
                continue;
            close_fd(&p->w[i].in_fd);
            close_fd(&p->w[i].msg.fd);
            close_fd(&p->w[i].out_fd);
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
        if (!cfg->opt.no_capture)  /* -s: a test may read the terminal */
            abx_stdin_null();
        abx_worker_main(to[0], msg[1], index, cfg, fail_budget, runner);
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
    w->open = abx_xcalloc(nfiles ? nfiles : 1, 1);
    update_children(p);
    return 0;
}

void abx_pool_send(struct abx_worker *w, cJSON *m)
{
    if (w->in_fd < 0 || abx_chan_send(w->in_fd, m, NULL) != 0)
        return;
}

static void flush_stray(struct abx_worker *w)
{
    if (w->out.len > 0) {
        abx_term_output(w->out.data, w->out.len);
        abx_buf_reset(&w->out);
    }
}

void abx_pool_read_output(struct abx_worker *w)
{
    char buf[65536];
    ssize_t n = read(w->out_fd, buf, sizeof buf);

    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close_fd(&w->out_fd);
        return;
    }
    if (abx_buf_append(&w->out, buf, (size_t)n) != 0) {
        /* Out of memory: this chunk of stray output is not shown. */
    }
    flush_stray(w);
}

int abx_pool_reap(struct abx_pool *p, struct abx_worker *w)
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
            if (n > 0) {
                if (abx_buf_append(&w->out, buf, (size_t)n) != 0) {
                    /* Out of memory: this chunk is not shown. */
                }
                flush_stray(w);   /* as it comes: nothing waits for the cap */
            }
        close_fd(&w->out_fd);
    }
    flush_stray(w);
    while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
        ;
    w->alive = 0;
    p->reaped++;
    update_children(p);
    return status;
}

void abx_pool_clear_inflight(struct abx_worker *w)
{
    free(w->inflight);
    w->inflight = NULL;
    w->inflight_deadline = 0;
}

void abx_pool_release(struct abx_worker *w)
{
    abx_chan_free(&w->msg);
    abx_buf_free(&w->out);
    free(w->pending.v);
    free(w->open);
    free(w->last);
    free(w->killed_why);
    w->open = NULL;
    w->pending.v = NULL;
    w->last = NULL;
    w->killed_why = NULL;
    abx_pool_clear_inflight(w);
}

void abx_pool_signal(struct abx_pool *p, int sig)
{
    for (int i = 0; i < p->nw; i++)
        if (p->w[i].alive)
            kill(p->w[i].pid, sig);
}
