/* The sweeper (ledger.h): kills what a run's ledger still lists, then
 * what the platform lists under the run's tag, until the listing is empty
 * or the budget is spent. The ledger gives exact ids without a listing;
 * the tag catches ids whose create line never made it (a worker killed
 * between the reply and the append). Kept ids are skipped everywhere. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http.h"
#include "ledger.h"
#include "sweep.h"
#include "vec.h"

#define SWEEP_PAUSE 0.5  /* between tag listings, s */

/* S_BEFORE: killed before the sweep (a ledger "kill" line); only a
 * listing that still shows it makes the sweep act on it. */
enum { S_PENDING, S_KILLED, S_GONE, S_ERROR, S_KEPT, S_BEFORE };

struct target {
    char id[128];
    int state;
    int from_tag;
    int again;      /* listed again after its kill: kill once more */
    char msg[1024];
};

struct sweep {
    struct target *t;
    size_t n, cap;
    const char *ledger;  /* NULL: tag only */
};

static struct target *target_find(struct sweep *s, const char *id)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        if (strcmp(s->t[i].id, id) == 0)
            return &s->t[i];
    return NULL;
}

static struct target *target_add(struct sweep *s, const char *id, int state,
                                 int from_tag)
{
    struct target *t = target_find(s, id);

    if (t || strlen(id) >= sizeof t->id)
        return t;
    if (ABX_VEC_RESERVE(s->t, s->cap, s->n + 1) != 0)
        return NULL;
    t = &s->t[s->n++];
    memset(t, 0, sizeof *t);
    memcpy(t->id, id, strlen(id) + 1);
    t->state = state;
    t->from_tag = from_tag;
    return t;
}

static double remaining(double deadline)
{
    return deadline - abx_http_now();
}

/* Kills every PENDING/ERROR target concurrently within the budget. */
static void kill_round(struct sweep *s, const struct abx_platform *p,
                       double deadline)
{
    const char **ids = calloc(s->n ? s->n : 1, sizeof *ids);
    size_t *which = calloc(s->n ? s->n : 1, sizeof *which);
    int *res = NULL;
    struct abx_err *errs = NULL;
    size_t i, k = 0;
    char e2[256];

    if (!ids || !which)
        goto out;
    for (i = 0; i < s->n; i++) {
        if (s->t[i].state == S_PENDING || s->t[i].state == S_ERROR ||
            s->t[i].again) {
            which[k] = i;
            ids[k++] = s->t[i].id;
        }
    }
    if (k == 0 || remaining(deadline) <= 0)
        goto out;
    res = calloc(k, sizeof *res);
    errs = calloc(k, sizeof *errs);
    if (!res || !errs)
        goto out;
    abx_api_kill_many(p, ids, k, res, errs, remaining(deadline));
    for (i = 0; i < k; i++) {
        struct target *t = &s->t[which[i]];
        t->again = 0;
        if (res[i] >= 0) {
            if (t->state == S_BEFORE)
                t->state = S_KILLED;  /* it was still there */
            else if (t->state != S_KILLED)
                t->state = res[i] == 1 ? S_KILLED : S_GONE;
            if (s->ledger)
                abx_ledger_append_to(s->ledger, "kill", t->id, "sweep", e2,
                                     sizeof e2);
        } else {
            t->state = S_ERROR;
            snprintf(t->msg, sizeof t->msg, "%s", errs[i].message);
        }
    }
out:
    free(ids);
    free(which);
    free(res);
    free(errs);
}

/* Lists the run's tag; adds what is alive and not kept as PENDING (again,
 * if a kill said done but it still shows). Returns how many live ones
 * are not kept, or -1 with err. */
static int tag_round(struct sweep *s, const struct abx_platform *p,
                     const char *run_id, const char *session,
                     struct abx_err *err)
{
    cJSON *md = cJSON_CreateObject();
    struct abx_list_query q;
    struct abx_list_page pg;
    size_t i;
    int live = 0;

    memset(&q, 0, sizeof q);
    memset(&pg, 0, sizeof pg);
    if (!md || !cJSON_AddStringToObject(md, ABX_TAG_KEY, run_id) ||
        (session && !cJSON_AddStringToObject(md, ABX_TAG_SESSION_KEY,
                                             session))) {
        cJSON_Delete(md);
        abx_err_set(err, ABX_E_SANDBOX, 0, NULL, "out of memory");
        return -1;
    }
    q.metadata = md;
    q.state = "running,paused";
    q.limit = 100;
    if (abx_api_list_all(p, &q, 0, &pg, err) != 0) {
        cJSON_Delete(md);
        return -1;
    }
    for (i = 0; i < pg.n; i++) {
        const char *id = pg.items[i].sandbox_id;
        struct target *t = target_find(s, id);
        if (t && t->state == S_KEPT)
            continue;
        if (!t)
            t = target_add(s, id, S_PENDING, 1);
        else if (t->state == S_KILLED || t->state == S_GONE ||
                 t->state == S_BEFORE)
            t->again = 1;
        if (t)
            live++;
    }
    abx_list_page_free(&pg);
    cJSON_Delete(md);
    return live;
}

void abx_sweep_report_init(struct abx_sweep_report *r)
{
    memset(r, 0, sizeof *r);
    abx_buf_init(&r->log, 256 * 1024);
}

void abx_sweep_report_free(struct abx_sweep_report *r)
{
    abx_buf_free(&r->log);
}

/* Counts an error and logs its line (the log is capped at 256 KiB). */
static void sweep_error(struct abx_sweep_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sweep_error(struct abx_sweep_report *r, const char *fmt, ...)
{
    va_list ap;

    r->errors++;
    va_start(ap, fmt);
    if (abx_buf_vappendf(&r->log, fmt, ap) != 0) {
        /* Past the cap or out of memory: the line is dropped; the error
         * still counts, so the sweep still fails. */
    }
    va_end(ap);
}

static void seed_from_ledger(struct sweep *s, const char *path,
                             struct abx_sweep_report *r)
{
    struct abx_ledger l;
    char err[512];
    size_t i;
    int rc = abx_ledger_load(path, &l, err, sizeof err);

    if (rc < 0)
        sweep_error(r, "%s\n", err);
    if (rc != 0)
        return;
    for (i = 0; i < l.n; i++) {
        if (l.e[i].kept && !l.e[i].killed)
            target_add(s, l.e[i].id, S_KEPT, 0);
        else if (l.e[i].killed)
            target_add(s, l.e[i].id, S_BEFORE, 0);
        else if (!l.e[i].killed && target_add(s, l.e[i].id, S_PENDING, 0))
            r->from_ledger++;
    }
    abx_ledger_free(&l);
}

int abx_sweep_run(const struct abx_platform *p, const char *run_id,
                  const char *session, const char *ledger_path,
                  double budget, struct abx_sweep_report *r)
{
    struct abx_platform pc;
    struct sweep s;
    struct abx_err err;
    double deadline = abx_http_now() + (budget > 0 ? budget : 0);
    struct timespec retry = {0, 200 * 1000 * 1000};
    char e2[1400];
    int live = -1, list_failed = 0, unreachable = 0;
    size_t i;

    memset(&s, 0, sizeof s);
    if (!p || abx_ledger_path(run_id, e2, sizeof e2) != 0) {
        sweep_error(r, "sweep: %s\n", p ? "invalid run id"
                                         : "no platform configured");
        return -1;
    }
    pc = *p;
    if (ledger_path) {
        seed_from_ledger(&s, ledger_path, r);
        s.ledger = ledger_path;
    }
    kill_round(&s, &pc, deadline);
    /* Then the tag, until a listing comes back empty or time is up. */
    while (remaining(deadline) > 0) {
        double left = remaining(deadline);
        if (pc.request_timeout <= 0 || pc.request_timeout > left)
            pc.request_timeout = left;
        abx_err_clear(&err);
        live = tag_round(&s, &pc, run_id, session, &err);
        if (live < 0) {
            list_failed = 1;
            snprintf(e2, sizeof e2, "list e2e=%s: %s", run_id, err.message);
            /* A refused key, or a platform that cannot be reached even
             * after the transport's own retries, will not change within
             * the budget: say so now instead of spinning until it ends. */
            if (err.cls == ABX_E_AUTH ||
                (err.cls == ABX_E_CONNECTION && ++unreachable >= 2))
                break;
            if (remaining(deadline) > 0.3)
                nanosleep(&retry, NULL);
            continue;
        }
        list_failed = 0;
        unreachable = 0;
        if (live == 0) {
            /* Not listed under the tag: whatever a failed kill left in
             * doubt is gone after all. */
            for (i = 0; i < s.n; i++) {
                s.t[i].again = 0;
                if (s.t[i].state == S_PENDING || s.t[i].state == S_ERROR)
                    s.t[i].state = S_GONE;
            }
            break;
        }
        kill_round(&s, &pc, deadline);
        if (remaining(deadline) > SWEEP_PAUSE) {
            struct timespec ts = {0, (long)(SWEEP_PAUSE * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    for (i = 0; i < s.n; i++) {
        struct target *t = &s.t[i];
        if (t->from_tag && t->state != S_KEPT)
            r->from_tag++;
        if (t->again)
            t->state = S_PENDING;  /* still listed at the end */
        switch (t->state) {
        case S_KILLED: r->killed++; break;
        case S_GONE: r->gone++; break;
        case S_KEPT: r->kept++; break;
        case S_BEFORE: break;
        case S_ERROR:
            r->left++;
            sweep_error(r, "%s: %s\n", t->id, t->msg);
            break;
        default:
            r->left++;
            sweep_error(r, "%s: still alive when the sweep budget (%.0f s) "
                        "ran out\n", t->id, budget);
        }
    }
    if (list_failed)
        sweep_error(r, "%s\n", e2);
    free(s.t);
    return live == 0 && !list_failed && r->errors == 0 ? 0 : -1;
}
