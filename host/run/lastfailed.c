/* The --lf/--ff cache: a JSON object {nodeid: true} of tests that failed
 * (or errored) last time, like pytest's .pytest_cache/v/cache/lastfailed.
 * Tests that ran and passed leave it; tests not run keep their entry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fsutil.h"
#include "out.h"
#include "run.h"

/* A damaged cache is said once (on --lf/--ff) and then replaced: --lf
 * silently running everything would look like "nothing failed". */
static cJSON *load_doc(int warn)
{
    char *data = NULL, err[256];
    size_t len = 0;
    cJSON *doc = NULL;

    if (abx_read_file(ABX_LASTFAILED_PATH, 16 * 1024 * 1024, &data, &len,
                      err, sizeof err) == 0) {
        doc = cJSON_ParseWithLength(data, len);
        if (warn && !cJSON_IsObject(doc))
            abx_out_printf(ABX_OUT_STDERR, "abx-e2e: warning: ignoring %s: "
                           "not a JSON object of node ids (it will be "
                           "rewritten)\n", ABX_LASTFAILED_PATH);
    }
    free(data);
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        doc = cJSON_CreateObject();
    }
    return doc;
}

int abx_lastfailed_load(struct abx_strlist *ids)
{
    cJSON *doc = load_doc(1), *it;

    cJSON_ArrayForEach(it, doc) if (it->string)
        abx_strlist_push(ids, it->string);
    cJSON_Delete(doc);
    return 0;
}

void abx_lastfailed_update(struct abx_result *const *res, size_t n,
                           const struct abx_collection *c)
{
    cJSON *doc = load_doc(0);
    size_t i;
    char *text, err[512];

    if (!doc)
        return;
    /* A file that now collects clean drops its collection entry. */
    for (i = 0; i < c->n; i++)
        if (!c->files[i].collect_error)
            cJSON_DeleteItemFromObjectCaseSensitive(doc, c->files[i].path);
    for (i = 0; i < n; i++) {
        const struct abx_result *r = res[i];
        int failed = abx_result_is_failure(r) || r->teardown_message;

        cJSON_DeleteItemFromObjectCaseSensitive(doc, r->nodeid);
        if (failed)
            cJSON_AddTrueToObject(doc, r->nodeid);
    }
    /* Several results may share a node id (teardown records): any
     * failure wins. */
    for (i = 0; i < n; i++) {
        const struct abx_result *r = res[i];
        if ((abx_result_is_failure(r) || r->teardown_message) &&
            !cJSON_GetObjectItemCaseSensitive(doc, r->nodeid))
            cJSON_AddTrueToObject(doc, r->nodeid);
    }
    text = cJSON_Print(doc);
    if (text && abx_out_write_cache(ABX_LASTFAILED_PATH, text, strlen(text),
                                    err, sizeof err) != 0)
        abx_out_printf(ABX_OUT_STDERR,
                       "abx-e2e: warning: cannot write the --lf cache: %s\n",
                       err);
    free(text);
    cJSON_Delete(doc);
}
