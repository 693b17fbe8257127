/* The worker processes of a run (pool.c): forked with three pipes each
 * (jobs in, messages out, stdout/stderr out), read without blocking,
 * reaped. What their messages mean and what a death costs is sched.c's. */
#ifndef ABX_HOST_POOL_H
#define ABX_HOST_POOL_H

#include <sys/types.h>

#include <cjson/cJSON.h>

#include "chan.h"
#include "queue.h"

#define ABX_MAX_WORKERS 256

struct abx_worker {
    pid_t pid;
    int index;
    int in_fd, out_fd;           /* parent ends; -1 when closed */
    struct abx_chan msg;         /* its messages */
    struct abx_buf out;          /* stray output, shown as it comes */
    struct abx_reflist pending;  /* handed out, no result yet */
    int batches;                 /* RUN messages not answered by DONE */
    unsigned char *open;         /* per file: its state may be open */
    char *inflight;
    double inflight_deadline;    /* 0 = none */
    double inflight_start;       /* epoch seconds, for a crash's result */
    char *last;                  /* node id of its last result */
    char *killed_why;            /* set when the parent killed it */
    int alive;
};

struct abx_pool {
    struct abx_worker w[ABX_MAX_WORKERS];
    int nw;
    unsigned reaped;  /* bumps when a worker is reaped (fds may be reused) */
};

/* Forks worker index into w (a slot of p): it runs abx_worker_main with
 * fail_budget. nfiles: the collection's files (w->open). 0, or -1 with
 * errno (no worker). */
int abx_pool_spawn(struct abx_pool *p, struct abx_worker *w, int index,
                   const struct abx_config *cfg, long fail_budget, size_t nfiles);
/* Sends m (consumed) to w; a dead worker's EOF tells the story. */
void abx_pool_send(struct abx_worker *w, cJSON *m);
/* No more jobs for w: closing its input ends it. */
void abx_pool_close_input(struct abx_worker *w);
/* Reads w's stdout/stderr pipe (readable) and shows it. */
void abx_pool_read_output(struct abx_worker *w);
/* w ended (its message pipe closed): its last output shown, the process
 * reaped. Its wait status; w is no longer alive but keeps its state for
 * the caller, who then calls abx_pool_release. */
int abx_pool_reap(struct abx_pool *p, struct abx_worker *w);
void abx_pool_release(struct abx_worker *w);
void abx_pool_clear_inflight(struct abx_worker *w);
/* Signals every live worker. */
void abx_pool_signal(struct abx_pool *p, int sig);

#endif
