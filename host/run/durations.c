/* The durations cache: {nodeid: seconds} of each test's last run, kept in
 * .abx-e2e/durations.json beside the --lf cache. With several workers the
 * scheduler hands out the longest work first, so a long file does not
 * start last and leave the other workers idle at the end of the run. The
 * cache is only a hint: a missing or damaged one orders nothing and is
 * rewritten. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fsutil.h"
#include "out.h"
#include "run.h"

#define CACHE_MAX (16 * 1024 * 1024)

static cJSON *load_doc(void)
{
    char *data = NULL, err[256];
    size_t len = 0;
    cJSON *doc = NULL;

    if (abx_read_file(ABX_DURATIONS_PATH, CACHE_MAX, &data, &len, err,
                      sizeof err) == 0)
        doc = cJSON_ParseWithLength(data, len);
    free(data);
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        doc = cJSON_CreateObject();
    }
    return doc;
}

/* The cached duration of nodeid, or -1 when unknown (or not a number). */
static double cached(const cJSON *doc, const char *nodeid)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, nodeid);
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;

    return d >= 0 && d < 1e7 ? d : -1;
}

struct est {
    size_t file;
    double secs;
};

static int by_secs_desc(const void *a, const void *b)
{
    const struct est *x = a, *y = b;

    if (x->secs != y->secs)
        return x->secs < y->secs ? 1 : -1;
    return x->file < y->file ? -1 : x->file > y->file;  /* stable */
}

size_t *abx_durations_order(const struct abx_collection *c)
{
    cJSON *doc = load_doc();
    struct est *e = calloc(c->n ? c->n : 1, sizeof *e);
    size_t *order = calloc(c->n ? c->n : 1, sizeof *order);
    double known = 0;
    size_t i, k, nknown = 0;

    if (!doc || !e || !order) {
        free(order);
        order = NULL;
        goto out;
    }
    for (i = 0; i < c->n; i++)
        for (k = 0; k < c->files[i].n; k++) {
            double d = cached(doc, c->files[i].items[k].nodeid);
            if (c->files[i].items[k].selected && d >= 0) {
                known += d;
                nknown++;
            }
        }
    /* A test never timed counts as the mean of those that were: a new
     * file is neither assumed instant nor pushed ahead of known work. */
    for (i = 0; i < c->n; i++) {
        e[i].file = i;
        for (k = 0; k < c->files[i].n; k++) {
            double d;
            if (!c->files[i].items[k].selected)
                continue;
            d = cached(doc, c->files[i].items[k].nodeid);
            e[i].secs += d >= 0 ? d : (nknown ? known / (double)nknown : 0);
        }
    }
    qsort(e, c->n, sizeof *e, by_secs_desc);
    for (i = 0; i < c->n; i++)
        order[i] = e[i].file;
out:
    free(e);
    cJSON_Delete(doc);
    return order;
}

void abx_durations_update(struct abx_result *const *res, size_t n)
{
    cJSON *doc = load_doc();
    char *text = NULL, err[512];
    size_t i;

    if (!doc)
        return;
    for (i = 0; i < n; i++) {
        const struct abx_result *r = res[i];
        /* Skips and deselections say nothing about how long a test runs;
         * a teardown record is a second result of the same test. */
        if (r->outcome == ABX_OUTCOME_SKIPPED || !r->nodeid ||
            !strstr(r->nodeid, "::"))
            continue;
        if (r->when == ABX_PHASE_TEARDOWN && cached(doc, r->nodeid) >= 0)
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(doc, r->nodeid);
        cJSON_AddNumberToObject(doc, r->nodeid, abx_result_duration(r));
    }
    text = cJSON_PrintUnformatted(doc);
    if (text && abx_out_write_cache(ABX_DURATIONS_PATH, text, strlen(text),
                                    err, sizeof err) != 0)
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: warning: cannot write the "
                       "durations cache: %s\n", err);
    free(text);
    cJSON_Delete(doc);
}
