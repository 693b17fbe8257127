/* The run's results (run.h): added as they come, a teardown error that
 * comes after its test's result, and the ERROR of a test whose worker
 * died under it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out.h"
#include "run.h"
#include "vec.h"

int abx_run_add(struct abx_run *run, struct abx_result *r)
{
    if (!r)
        return -1;
    if (ABX_VEC_RESERVE(run->results, run->cap, run->n + 1) != 0) {
        abx_result_free(r);
        return -1;
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

int abx_run_amend(struct abx_run *run, const char *nodeid, const char *msg, int quiet)
{
    struct abx_result *r = NULL;
    struct abx_buf b;
    int now_failed;
    size_t i;

    for (i = run->n; nodeid && i-- > 0;) {
        if (strcmp(run->results[i]->nodeid, nodeid) == 0) {
            r = run->results[i];
            break;
        }
    }
    if (!r) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: ERROR at teardown: %s\n", msg);
        run->internal_error = 1;
        return 0;
    }
    abx_buf_init(&b, 4 * 1024 * 1024);
    if ((r->teardown_message &&
         abx_buf_appendf(&b, "%s\n", r->teardown_message) != 0) |
        (abx_buf_appends(&b, msg) != 0)) {
        /* Past the 4 MiB cap or out of memory: a message is left out,
         * not the error, which counts below all the same. */
    }
    now_failed = !r->teardown_message && !abx_result_is_failure(r);
    abx_result_set(&r->teardown_message, abx_buf_cstr(&b));
    abx_result_set(&r->teardown_longrepr, abx_buf_cstr(&b));
    abx_buf_free(&b);
    if (!quiet)
        abx_out_printf(ABX_OUT_STDOUT, "%s ERROR (teardown)\n", r->nodeid);
    return now_failed;
}

struct abx_result *abx_run_crashed(const struct abx_file *f, const struct abx_item *it,
                                   int worker, enum abx_phase when, double start,
                                   const char *msg)
{
    struct abx_result *r = abx_result_new();
    size_t k;

    if (!r)
        return NULL;
    abx_result_set_identity(r, f->path, it->line, (const char *const *)it->groups.items,
                            it->groups.n, it->name);
    r->outcome = ABX_OUTCOME_ERROR;
    r->when = when;
    if (when == ABX_PHASE_CALL)
        r->start = start;
    abx_result_set(&r->message, msg);
    abx_result_set(&r->longrepr, msg);
    r->worker = worker;
    for (k = 0; k < it->marks.n; k++)
        abx_strlist_push(&r->markers, it->marks.items[k]);
    return r;
}
