/* Selection: node ids named on the command line, -k, -m, --lf/--ff and
 * --shard, in that order. Tests removed by -k/-m/--lf/--shard count as
 * deselected (pytest); naming node ids just narrows the run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "out.h"
#include "run.h"

static int nodeid_wanted(const struct abx_file *f, const char *nodeid)
{
    size_t i;

    if (f->whole)
        return 1;
    for (i = 0; i < f->only.n; i++) {
        size_t n = strlen(f->only.items[i]);
        if (strcmp(f->only.items[i], nodeid) == 0 ||
            (strncmp(f->only.items[i], nodeid, n) == 0 &&
             strncmp(nodeid + n, "::", 2) == 0))
            return 1;
    }
    return 0;
}

static int check_named_ids(const struct abx_collection *c, char *err,
                           size_t errlen)
{
    size_t i, k, j;

    for (i = 0; i < c->n; i++) {
        const struct abx_file *f = &c->files[i];
        if (f->collect_error)
            continue;
        for (k = 0; k < f->only.n; k++) {
            const char *want = f->only.items[k];
            size_t n = strlen(want);
            int found = 0;
            for (j = 0; j < f->n && !found; j++)
                found = strcmp(f->items[j].nodeid, want) == 0 ||
                        (strncmp(f->items[j].nodeid, want, n) == 0 &&
                         strncmp(f->items[j].nodeid + n, "::", 2) == 0);
            if (!found) {
                snprintf(err, errlen, "not found: %s", want);
                return -1;
            }
        }
    }
    return 0;
}

/* -k names: test name, groups, file base name and path, markers. */
static int match_k(const struct abx_expr *e, const struct abx_file *f,
                   const struct abx_item *it)
{
    const char *names[64];
    const char *base = strrchr(f->path, '/');
    size_t n = 0, i;

    names[n++] = it->name;
    names[n++] = base ? base + 1 : f->path;
    names[n++] = f->path;
    for (i = 0; i < it->groups.n && n < 40; i++)
        names[n++] = it->groups.items[i];
    for (i = 0; i < it->marks.n && n < 63; i++)
        names[n++] = it->marks.items[i];
    names[n] = NULL;
    return abx_expr_eval(e, abx_expr_match_keywords, (void *)names);
}

static int match_m(const struct abx_expr *e, const struct abx_item *it)
{
    const char *names[64];
    size_t n = 0, i;

    for (i = 0; i < it->marks.n && n < 63; i++)
        names[n++] = it->marks.items[i];
    names[n] = NULL;
    return abx_expr_eval(e, abx_expr_match_markers, (void *)names);
}

static int compile(const char *src, unsigned flags, const char *opt,
                   struct abx_expr **out, char *err, size_t errlen)
{
    char why[512];

    *out = NULL;
    if (!src)
        return 0;
    if (abx_expr_compile_ex(src, flags, out, why, sizeof why) != 0) {
        snprintf(err, errlen, "Wrong expression passed to '%s': %s: %s",
                 opt, src, why);
        return -1;
    }
    if (abx_expr_is_empty(*out)) {
        abx_expr_free(*out);
        *out = NULL;
    }
    return 0;
}

static void apply_lf(const struct abx_opts *o, struct abx_collection *c)
{
    struct abx_strlist failed;
    size_t i, k, hits = 0;

    abx_strlist_init(&failed);
    abx_lastfailed_load(&failed);
    for (i = 0; i < c->n; i++) {
        struct abx_file *f = &c->files[i];
        if (f->collect_error && abx_strlist_contains(&failed, f->path))
            hits++;
        for (k = 0; k < f->n; k++)
            if (f->items[k].selected &&
                abx_strlist_contains(&failed, f->items[k].nodeid))
                hits++;
    }
    if (failed.n == 0) {  /* pytest's --lfnf: nothing failed last time */
        c->lf_status = o->lfnf_none ? "no previously failed tests, "
                                      "deselecting all items."
                                    : "no previously failed tests, not "
                                      "deselecting items.";
        for (i = 0; o->lfnf_none && i < c->n; i++) {
            struct abx_file *f = &c->files[i];
            for (k = 0; k < f->n; k++) {
                if (f->items[k].selected) {
                    f->items[k].selected = 0;
                    c->deselected++;
                }
            }
        }
    }
    if (hits == 0) {  /* stale entries only: run everything (pytest) */
        abx_strlist_free(&failed);
        return;
    }
    if (o->lf) {
        for (i = 0; i < c->n; i++) {
            struct abx_file *f = &c->files[i];
            for (k = 0; k < f->n; k++) {
                if (f->items[k].selected &&
                    !abx_strlist_contains(&failed, f->items[k].nodeid)) {
                    f->items[k].selected = 0;
                    c->deselected++;
                }
            }
        }
    } else {
        /* --ff: files holding last failures go first (stable), and the
         * scheduler runs the failed tests themselves first. */
        for (i = 0; i < c->n; i++)
            for (k = 0; k < c->files[i].n; k++)
                c->files[i].items[k].failed_last = abx_strlist_contains(
                    &failed, c->files[i].items[k].nodeid);
        struct abx_file *sorted = abx_xcalloc(c->n, sizeof *sorted);
        size_t n = 0, pass;
        for (pass = 0; pass < 2; pass++) {
            for (i = 0; i < c->n; i++) {
                struct abx_file *f = &c->files[i];
                int has = f->collect_error &&
                          abx_strlist_contains(&failed, f->path);
                for (k = 0; k < f->n && !has; k++)
                    has = abx_strlist_contains(&failed, f->items[k].nodeid);
                if ((pass == 0) == (has != 0))
                    sorted[n++] = *f;
            }
        }
        memcpy(c->files, sorted, c->n * sizeof *sorted);
        free(sorted);
    }
    abx_strlist_free(&failed);
}

int abx_select(const struct abx_opts *o, struct abx_collection *c,
               char *err, size_t errlen)
{
    struct abx_expr *k = NULL, *m = NULL;
    size_t i, j, idx = 0;
    int rc = -1;

    if (check_named_ids(c, err, errlen) != 0 ||
        compile(o->keyword, ABX_EXPR_NO_KWARGS, "-k", &k, err, errlen) ||
        compile(o->markexpr, 0, "-m", &m, err, errlen))
        goto out;
    for (i = 0; i < c->n; i++) {
        struct abx_file *f = &c->files[i];
        for (j = 0; j < f->n; j++) {
            struct abx_item *it = &f->items[j];
            int keep = nodeid_wanted(f, it->nodeid), r;

            if (!keep) {
                it->selected = 0;
                continue;
            }
            if (k && (r = match_k(k, f, it)) <= 0) {
                if (r < 0) {
                    snprintf(err, errlen, "-k: %s", o->keyword);
                    goto out;
                }
                keep = 0;
            }
            if (keep && m && (r = match_m(m, it)) <= 0) {
                if (r < 0) {
                    snprintf(err, errlen, "-m: %s", o->markexpr);
                    goto out;
                }
                keep = 0;
            }
            if (!keep)
                c->deselected++;
            it->selected = keep;
        }
    }
    if (o->lf || o->ff)
        apply_lf(o, c);
    for (i = 0; i < c->n; i++) {
        struct abx_file *f = &c->files[i];
        f->nselected = 0;
        for (j = 0; j < f->n; j++) {
            struct abx_item *it = &f->items[j];
            if (!it->selected)
                continue;
            if (o->shard_n > 1 && (long)(idx++ % (size_t)o->shard_n) !=
                                      o->shard_k - 1) {
                it->selected = 0;
                c->deselected++;
                continue;
            }
            f->nselected++;
        }
        /* A broken file belongs to one shard only. */
        if (f->collect_error && o->shard_n > 1 &&
            (long)(i % (size_t)o->shard_n) != o->shard_k - 1) {
            abx_result_free(f->collect_error);
            f->collect_error = NULL;
        }
    }
    rc = 0;
out:
    abx_expr_free(k);
    abx_expr_free(m);
    return rc;
}
