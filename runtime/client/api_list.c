/* GET /v2/sandboxes (metadata/state filters, X-Next-Token pagination)
 * and concurrent kills. */
#include "api_int.h"
#include "vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KILL_WINDOW 16   /* concurrent DELETEs in flight */

int abx_api_metadata_query(const cJSON *metadata, struct abx_buf *out)
{
    struct abx_buf one;
    const cJSON *v;
    int first = 1, rc = -1;

    abx_buf_init(&one, out->max);
    if (metadata == NULL) {
        rc = 0;
        goto out;
    }
    if (!cJSON_IsObject(metadata))
        goto out;
    /* Layer 1 (quote each key and value), then layer 2 (form-encode the
     * pair, which escapes layer 1's '%' again); the HTTP layer adds the
     * third when it puts the whole string in ?metadata=. */
    cJSON_ArrayForEach(v, metadata) {
        if (!cJSON_IsString(v) || v->string == NULL)
            goto out;
        if (!first && abx_buf_appendc(out, '&'))
            goto out;
        first = 0;
        abx_buf_reset(&one);
        if (abx_url_escape(&one, v->string, strlen(v->string)) ||
            abx_url_escape(out, one.data ? one.data : "", one.len) ||
            abx_buf_appendc(out, '='))
            goto out;
        abx_buf_reset(&one);
        if (abx_url_escape(&one, v->valuestring, strlen(v->valuestring)) ||
            abx_url_escape(out, one.data ? one.data : "", one.len))
            goto out;
    }
    rc = 0;
out:
    abx_buf_free(&one);
    return rc;
}

void abx_list_page_free(struct abx_list_page *pg)
{
    for (size_t i = 0; i < pg->n; i++)
        abx_sandbox_info_free(&pg->items[i]);
    free(pg->items);
    pg->items = NULL;
    pg->n = 0;
    pg->next_token[0] = '\0';
}

static int add_param(struct abx_buf *path, int *first, const char *name,
                     const char *val)
{
    if (abx_buf_appendc(path, *first ? '?' : '&') ||
        abx_buf_appends(path, name) || abx_buf_appendc(path, '=') ||
        abx_url_escape(path, val, strlen(val)))
        return -1;
    *first = 0;
    return 0;
}

static int list_path(const struct abx_list_query *q, struct abx_buf *path,
                     struct abx_err *err)
{
    struct abx_buf mq;
    int first = 1, rc = -1;
    char lim[32];

    abx_buf_init(&mq, 64 * 1024);
    if (q->limit < 0 || q->limit > 100) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "list sandboxes: limit must be 1..100 (got %ld)", q->limit);
        goto out;
    }
    if (abx_api_metadata_query(q->metadata, &mq) != 0) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "list sandboxes: metadata filter must map strings to "
                    "strings (and stay under 64 KiB)");
        goto out;
    }
    snprintf(lim, sizeof lim, "%ld", q->limit);
    if (abx_buf_appends(path, "/v2/sandboxes") ||
        (mq.len && add_param(path, &first, "metadata", mq.data)) ||
        (q->state && q->state[0] &&
         add_param(path, &first, "state", q->state)) ||
        (q->limit > 0 && add_param(path, &first, "limit", lim)) ||
        (q->next_token && q->next_token[0] &&
         add_param(path, &first, "nextToken", q->next_token))) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "list sandboxes: query too long");
        goto out;
    }
    rc = 0;
out:
    abx_buf_free(&mq);
    return rc;
}

static int parse_items(const struct abx_http_resp *r, struct abx_list_page *out,
                       struct abx_err *err)
{
    cJSON *a = abx_apix_json(r, "list sandboxes", err), *it;
    size_t n = 0;
    int rc = -1;

    if (a == NULL)
        return -1;
    if (!cJSON_IsArray(a)) {
        abx_err_set(err, ABX_E_PROTOCOL, r->status, "",
                    "list sandboxes: reply is not a JSON array");
        goto out;
    }
    size_t cnt = (size_t)cJSON_GetArraySize(a);
    out->items = calloc(cnt ? cnt : 1, sizeof *out->items);
    if (out->items == NULL) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "list sandboxes: out of memory");
        goto out;
    }
    cJSON_ArrayForEach(it, a) {
        if (abx_sandbox_info_parse(it, &out->items[n], err) != 0) {
            char m[sizeof err->message];
            snprintf(m, sizeof m, "%s", err->message);
            abx_err_set(err, ABX_E_PROTOCOL, r->status, "",
                        "list sandboxes: item %zu: %s", n, m);
            goto out;
        }
        out->n = ++n;
    }
    rc = 0;
out:
    cJSON_Delete(a);
    return rc;
}

int abx_api_list(const struct abx_platform *p, const struct abx_list_query *q,
                 struct abx_list_page *out, struct abx_err *err)
{
    struct abx_buf path;
    struct abx_http_resp r;
    int rc = -1;

    memset(out, 0, sizeof *out);
    abx_buf_init(&path, 256 * 1024);
    abx_http_resp_init(&r);
    if (list_path(q, &path, err) != 0)
        goto out;
    struct abx_apix_call c = {"GET", abx_buf_cstr(&path), NULL, 1,
                              "list sandboxes"};
    if (abx_apix_do(p, &c, &r, err) != 0)
        goto out;
    if (r.status != 200) {
        abx_err_from_api(err, "list sandboxes", r.status, r.body.data,
                         r.body.len);
        goto out;
    }
    if (parse_items(&r, out, err) != 0)
        goto out;
    memcpy(out->next_token, r.next_token, sizeof out->next_token);
    rc = 0;
out:
    if (rc != 0)
        abx_list_page_free(out);
    abx_http_resp_free(&r);
    abx_buf_free(&path);
    return rc;
}

int abx_api_list_all(const struct abx_platform *p,
                     const struct abx_list_query *q, size_t max_items,
                     struct abx_list_page *out, struct abx_err *err)
{
    struct abx_list_query page_q = *q;
    char token[sizeof out->next_token] = "";
    size_t cap = 0;
    int rc = -1;

    memset(out, 0, sizeof *out);
    if (max_items == 0)
        max_items = 10000;
    if (q->next_token)
        snprintf(token, sizeof token, "%s", q->next_token);
    for (;;) {
        struct abx_list_page pg;
        page_q.next_token = token[0] ? token : NULL;
        if (abx_api_list(p, &page_q, &pg, err) != 0)
            goto out;
        if (ABX_VEC_RESERVE(out->items, cap, out->n + pg.n + 1) != 0) {
            abx_list_page_free(&pg);
            abx_err_set(err, ABX_E_SANDBOX, 0, "", "list sandboxes: out of memory");
            goto out;
        }
        /* Items move (shallow copies own their pointers now). */
        memcpy(out->items + out->n, pg.items, pg.n * sizeof *pg.items);
        out->n += pg.n;
        free(pg.items);
        if (pg.next_token[0] == '\0') {
            rc = 0;
            goto out;
        }
        if (strcmp(pg.next_token, token) == 0) {
            abx_err_set(err, ABX_E_PROTOCOL, 200, "",
                        "list sandboxes: the server repeated its next token");
            goto out;
        }
        memcpy(token, pg.next_token, sizeof token);
        if (out->n >= max_items) {
            memcpy(out->next_token, token, sizeof out->next_token);
            rc = 0;
            goto out;
        }
    }
out:
    if (rc != 0)
        abx_list_page_free(out);
    return rc;
}

/* ---- concurrent kills ---- */

static struct abx_http_xfer *start_kill(const struct abx_platform *p,
                                        const char *id, struct abx_err *err)
{
    struct abx_buf path;
    struct abx_http_xfer *x = NULL;
    char what[160];

    snprintf(what, sizeof what, "kill sandbox %.100s", id ? id : "");
    abx_buf_init(&path, 4096);
    if (abx_apix_sbx_path(&path, id, "", err) == 0) {
        struct abx_apix_call c = {"DELETE", abx_buf_cstr(&path), NULL, 1, what};
        x = abx_apix_start(p, &c, err);
    }
    abx_buf_free(&path);
    return x;
}

static int end_kill(struct abx_http_xfer *x, int waited, const char *id,
                    struct abx_err *err)
{
    struct abx_http_resp r;
    struct abx_err ferr;
    int rc = -1;

    abx_http_resp_init(&r);
    abx_err_clear(&ferr);
    if (waited == 0) {
        abx_http_finish(x, NULL, &ferr);
        abx_err_set(err, ABX_E_TIMEOUT, 0, "",
                    "kill sandbox %.100s: no reply before the deadline", id);
    } else if (waited < 0) {
        abx_http_finish(x, NULL, &ferr);   /* err holds the cancel */
    } else if (abx_http_finish(x, &r, err) == 0) {
        if (r.status >= 200 && r.status < 300)
            rc = 1;
        else if (r.status == 404)
            rc = 0;
        else {
            char what[160];
            snprintf(what, sizeof what, "kill sandbox %.100s", id);
            abx_err_from_api(err, what, r.status, r.body.data, r.body.len);
        }
    }
    abx_http_resp_free(&r);
    return rc;
}

int abx_api_kill_many(const struct abx_platform *p, const char *const *ids,
                      size_t n, int *results, struct abx_err *errs,
                      double timeout)
{
    struct abx_http_xfer **xs = calloc(n ? n : 1, sizeof *xs);
    double until = timeout > 0 ? abx_http_now() + timeout : 0;
    size_t next = 0, errors = 0;

    for (size_t i = 0; i < n; i++) {
        results[i] = -1;
        abx_err_clear(&errs[i]);
    }
    if (xs == NULL) {
        for (size_t i = 0; i < n; i++)
            abx_err_set(&errs[i], ABX_E_SANDBOX, 0, "", "kill: out of memory");
        return (int)n;
    }
    /* A window of transfers in flight: each finished one starts the next,
     * and every wait drives all of them. */
    for (size_t i = 0; i < n; i++) {
        while (next < n && next < i + KILL_WINDOW) {
            xs[next] = start_kill(p, ids[next], &errs[next]);
            next++;
        }
        if (xs[i] == NULL)
            continue;   /* errs[i] says why */
        int w = abx_http_wait(xs[i], until, &errs[i]);
        results[i] = end_kill(xs[i], w, ids[i], &errs[i]);
        xs[i] = NULL;
    }
    for (size_t i = 0; i < n; i++)
        errors += results[i] < 0;
    free(xs);
    return (int)errors;
}
