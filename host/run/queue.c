/* The --dist policy (queue.h): units of tests, their order, and the
 * batches idle workers take. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out.h"
#include "queue.h"
#include "vec.h"

static void oom(void)
{
    abx_out_printf(ABX_OUT_STDERR, "abx-e2e: out of memory\n");
    _exit(ABX_EXIT_INTERNAL_ERROR);
}

void abx_reflist_push(struct abx_reflist *l, struct abx_ref r)
{
    if (ABX_VEC_RESERVE(l->v, l->cap, l->n + 1) != 0)
        oom();
    l->v[l->n++] = r;
}

void abx_reflist_remove(struct abx_reflist *l, size_t i)
{
    memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof *l->v);
    l->n--;
}

/* The unit key of a test under --dist: NULL for a unit of its own. */
static const char *unit_key(enum abx_dist dist, const struct abx_item *it, char *buf,
                            size_t len, size_t file)
{
    if (dist == ABX_DIST_LOADFILE) {
        snprintf(buf, len, "f:%zu", file);
        return buf;
    }
    if (dist != ABX_DIST_LOADGROUP)
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

void abx_queue_build(struct abx_queue *q, const struct abx_collection *c, const size_t *order,
                     enum abx_dist dist)
{
    struct abx_reflist *units = NULL;
    char **keys = NULL, key[1200];
    size_t nu = 0, cap = 0, kcap = 0, i, k, u, pass, total = 0;

    memset(q, 0, sizeof *q);
    q->dist = dist;
    q->left = abx_xcalloc(c->n ? c->n : 1, sizeof *q->left);
    for (i = 0; i < c->n; i++) {
        const struct abx_file *f = &c->files[order[i]];
        for (k = 0; k < f->n; k++) {
            const char *kk;
            if (!f->items[k].selected)
                continue;
            kk = unit_key(dist, &f->items[k], key, sizeof key, order[i]);
            for (u = nu; kk && u-- > 0;)
                if (keys[u] && strcmp(keys[u], kk) == 0)
                    break;
            if (!kk || u == (size_t)-1) {
                if (ABX_VEC_RESERVE(units, cap, nu + 1) != 0 ||
                    ABX_VEC_RESERVE(keys, kcap, nu + 1) != 0)
                    oom();
                memset(&units[nu], 0, sizeof *units);
                keys[nu] = kk ? abx_xstrdup(kk) : NULL;
                u = nu++;
            }
            abx_reflist_push(&units[u], (struct abx_ref){order[i], k});
            q->left[order[i]]++;
            total++;
        }
    }
    q->refs = abx_xcalloc(total ? total : 1, sizeof *q->refs);
    q->unit_end = abx_xcalloc(nu ? nu : 1, sizeof *q->unit_end);
    total = 0;
    /* --ff: the units holding a last failure first. */
    for (pass = 0; pass < 2; pass++) {
        for (u = 0; u < nu; u++) {
            int failed = 0;
            for (k = 0; k < units[u].n; k++)
                failed |= c->files[units[u].v[k].file].items[units[u].v[k].item].failed_last;
            if ((pass == 0) != (failed != 0))
                continue;
            memcpy(&q->refs[total], units[u].v, units[u].n * sizeof *units[u].v);
            total += units[u].n;
            q->unit_end[q->nunits++] = total;
        }
    }
    q->unassigned = total;
    for (u = 0; u < nu; u++) {
        free(units[u].v);
        free(keys[u]);
    }
    free(units);
    free(keys);
}

/* Hands refs[0..n) (one file) out. */
static void give(struct abx_queue *q, const struct abx_ref *refs, size_t n,
                 void (*send)(void *, const struct abx_ref *, size_t), void *ctx)
{
    q->left[refs[0].file] -= n;
    q->unassigned -= n;
    send(ctx, refs, n);
}

int abx_queue_take(struct abx_queue *q, int nworkers,
                   void (*send)(void *ctx, const struct abx_ref *refs, size_t n), void *ctx)
{
    size_t i, n, chunk, start;

    if (q->requeue.n > 0) {
        struct abx_ref *v = q->requeue.v;
        for (n = 1; n < q->requeue.n && v[n].file == v[0].file; n++)
            ;
        give(q, v, n, send, ctx);   /* send never requeues */
        memmove(v, v + n, (q->requeue.n - n) * sizeof *v);
        q->requeue.n -= n;
        return 1;
    }
    if (q->next_unit >= q->nunits)
        return 0;
    start = q->next_unit ? q->unit_end[q->next_unit - 1] : 0;
    chunk = q->dist == ABX_DIST_LOAD
                ? q->unassigned / (2 * (size_t)(nworkers > 0 ? nworkers : 1))
                : 1;
    /* Whole units of one file, at least one. */
    for (i = q->next_unit + 1; i < q->nunits; i++) {
        size_t b = q->unit_end[i - 1], e = q->unit_end[i];
        if (q->refs[b].file != q->refs[start].file || e - start > chunk)
            break;
    }
    n = q->unit_end[i - 1] - start;
    q->next_unit = i;
    /* A unit spanning files (a `group` across files) goes as several
     * batches, one per file run. */
    for (i = start; i < start + n;) {
        size_t j = i + 1;
        while (j < start + n && q->refs[j].file == q->refs[i].file)
            j++;
        give(q, &q->refs[i], j - i, send, ctx);
        i = j;
    }
    return 1;
}

void abx_queue_requeue(struct abx_queue *q, struct abx_ref r)
{
    abx_reflist_push(&q->requeue, r);
    q->left[r.file]++;
    q->unassigned++;
}

int abx_queue_pending(const struct abx_queue *q)
{
    return q->requeue.n > 0 || q->next_unit < q->nunits;
}

void abx_queue_free(struct abx_queue *q)
{
    free(q->refs);
    free(q->unit_end);
    free(q->left);
    free(q->requeue.v);
    memset(q, 0, sizeof *q);
}
