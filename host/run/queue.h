/* The --dist policy (queue.c), as pytest-xdist's: the selected tests
 * form units (load: one test; loadgroup: a top-level describe or a
 * `group` name; loadfile: a file), queued longest file first
 * (durations.c) with --ff's failures ahead. An idle worker takes a batch:
 * in load mode a guided chunk of consecutive units of one file
 * (remaining / (2 x workers), so round trips stay few while the tail is
 * split finely); a crashed worker's unstarted tests go first. */
#ifndef ABX_HOST_QUEUE_H
#define ABX_HOST_QUEUE_H

#include <stddef.h>

#include "config.h"

/* A selected test: file and item index in the collection. */
struct abx_ref {
    size_t file, item;
};

struct abx_reflist {
    struct abx_ref *v;
    size_t n, cap;
};

struct abx_queue {
    enum abx_dist dist;
    struct abx_ref *refs;        /* every selected test, unit by unit */
    size_t *unit_end;            /* unit u is refs[u ? end[u-1] : 0, end[u]) */
    size_t nunits, next_unit;
    struct abx_reflist requeue;  /* a crashed worker's unstarted tests */
    size_t *left;                /* per file: tests not handed out yet */
    size_t unassigned;           /* all files' left */
};

void abx_reflist_push(struct abx_reflist *l, struct abx_ref r);  /* aborts on OOM */
void abx_reflist_remove(struct abx_reflist *l, size_t i);

/* Builds the queue of c's selected tests, files in dispatch order. */
void abx_queue_build(struct abx_queue *q, const struct abx_collection *c, const size_t *order,
                     enum abx_dist dist);
/* The next batch for an idle worker among nworkers: send(ctx, refs, n)
 * once per file it spans (refs valid during the call), after the file's
 * left count dropped. 0 when nothing is left to give. */
int abx_queue_take(struct abx_queue *q, int nworkers,
                   void (*send)(void *ctx, const struct abx_ref *refs, size_t n), void *ctx);
/* A test handed out and not run (its worker crashed): another takes it. */
void abx_queue_requeue(struct abx_queue *q, struct abx_ref r);
/* Whether anything is left to hand out. */
int abx_queue_pending(const struct abx_queue *q);
void abx_queue_free(struct abx_queue *q);

#endif
