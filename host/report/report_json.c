/* --json FILE: the whole run as one JSON document, built with cJSON. */
#include "report_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* Copy of s with each invalid UTF-8 byte as U+FFFD, or NULL if s is
 * valid already (or out of memory: then *oom is set). Captured output may
 * be binary; the report must still be valid JSON for strict readers. */
static char *utf8_fix(const char *s, int *oom)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s), i, k;
    struct abx_buf b;
    uint32_t cp;

    for (i = 0; i < n; i += k)
        if (!(k = abx_utf8_decode(u + i, n - i, &cp)))
            break;
    if (i == n)
        return NULL;
    abx_buf_init(&b, 0);
    for (i = 0; i < n; i += k) {
        k = abx_utf8_decode(u + i, n - i, &cp);
        if (k ? abx_buf_append(&b, s + i, k)
              : abx_buf_append(&b, "\xef\xbf\xbd", 3)) {
            *oom = 1;
            abx_buf_free(&b);
            return NULL;
        }
        if (!k)
            k = 1;
    }
    return abx_buf_steal(&b, &n);
}

int abx_report_json_fix_utf8(cJSON *node)
{
    cJSON *c, *next, *repl;
    char *fixed;
    int oom = 0, idx = 0;

    for (c = node->child; c; c = next, idx++) {
        next = c->next;
        if (!cJSON_IsString(c)) {
            if ((cJSON_IsObject(c) || cJSON_IsArray(c)) &&
                abx_report_json_fix_utf8(c))
                return -1;
            continue;
        }
        fixed = utf8_fix(c->valuestring, &oom);
        if (oom)
            return -1;
        if (!fixed)
            continue;
        repl = cJSON_CreateString(fixed);
        free(fixed);
        if (!repl)
            return -1;
        if (cJSON_IsObject(node) ? !cJSON_ReplaceItemInObjectCaseSensitive(
                                       node, c->string, repl)
                                 : !cJSON_ReplaceItemInArray(node, idx, repl)) {
            cJSON_Delete(repl);
            return -1;
        }
    }
    return 0;
}

static int add_counts(cJSON *o, const struct abx_summary *s)
{
    int i;

    for (i = 0; i < ABX_OUTCOME_COUNT_; i++)
        if (!cJSON_AddNumberToObject(o, abx_outcome_name(i),
                                     i == ABX_OUTCOME_ERROR
                                         ? abx_summary_errors(s)
                                         : s->counts[i]))
            return -1;
    return !cJSON_AddNumberToObject(o, "deselected", s->deselected) ||
                   !cJSON_AddNumberToObject(o, "total",
                                            abx_summary_total(s)) ||
                   !cJSON_AddNumberToObject(
                       o, "collected", abx_summary_total(s) + s->deselected)
               ? -1
               : 0;
}

static int add_str_or_null(cJSON *o, const char *k, const char *v)
{
    return (v ? cJSON_AddStringToObject(o, k, v) : cJSON_AddNullToObject(o, k))
               ? 0 : -1;
}

static int add_strings(cJSON *o, const char *k, const char *const *v,
                       size_t n)
{
    cJSON *a = cJSON_AddArrayToObject(o, k);

    for (size_t i = 0; a && i < n; i++)
        if (!cJSON_AddItemToArray(a, cJSON_CreateString(v[i])))
            return -1;
    return a ? 0 : -1;
}

/* "platform", "capabilities", "local", "profile": what the run could rely
 * on and where it ran. */
static int add_platform(cJSON *doc, const struct abx_report *o)
{
    size_t ncaps = 0;

    if (!o->platform)
        return 0;
    while (o->capabilities && o->capabilities[ncaps])
        ncaps++;
    return !cJSON_AddStringToObject(doc, "platform", o->platform) ||
                   add_strings(doc, "capabilities", o->capabilities, ncaps) ||
                   !cJSON_AddBoolToObject(doc, "local", o->local) ||
                   add_str_or_null(doc, "profile", o->profile)
               ? -1 : 0;
}

/* "command", "selection", "workers", "shard": what was asked for. */
static int add_selection(cJSON *doc, const struct abx_report *o)
{
    cJSON *sel, *sh;
    char shard[48];

    snprintf(shard, sizeof shard, "%ld/%ld", o->shard_k, o->shard_n);
    if (add_str_or_null(doc, "command", o->command) ||
        !(sel = cJSON_AddObjectToObject(doc, "selection")) ||
        add_str_or_null(sel, "keyword", o->keyword) ||
        add_str_or_null(sel, "markexpr", o->markexpr) ||
        add_strings(sel, "paths", o->paths, o->npaths) ||
        add_str_or_null(sel, "shard", o->shard_n ? shard : NULL) ||
        add_str_or_null(sel, "last_failed", o->last_failed) ||
        !cJSON_AddNumberToObject(doc, "workers", o->workers))
        return -1;
    if (!o->shard_n)
        return 0;
    return !(sh = cJSON_AddObjectToObject(doc, "shard")) ||
                   !cJSON_AddNumberToObject(sh, "k", (double)o->shard_k) ||
                   !cJSON_AddNumberToObject(sh, "n", (double)o->shard_n)
               ? -1 : 0;
}

static int add_tests(cJSON *doc, struct abx_result *const *results,
                     size_t n)
{
    cJSON *tests = cJSON_AddArrayToObject(doc, "tests"), *t;

    for (size_t i = 0; tests && i < n; i++) {
        t = abx_result_to_json(results[i]);
        if (!t || !cJSON_AddItemToArray(tests, t)) {
            cJSON_Delete(t);
            return -1;
        }
        if (!cJSON_AddNumberToObject(t, "duration",
                                     abx_result_duration(results[i])))
            return -1;
    }
    return tests ? 0 : -1;
}

cJSON *abx_report_json_doc(const struct abx_report *o)
{
    struct abx_result *const *results = o->results;
    size_t n = o->n;
    struct abx_summary local;
    const struct abx_summary *sum = o->sum;
    cJSON *doc, *sumo, *sbx;

    if (!sum) {
        abx_summary_init(&local);
        for (size_t i = 0; i < n; i++)
            abx_summary_add(&local, results[i]);
        sum = &local;
    }
    sbx = o->sandboxes ? cJSON_Duplicate(o->sandboxes, 1)
                       : cJSON_CreateArray();
    doc = cJSON_CreateObject();
    if (!sbx || !doc ||
        add_str_or_null(doc, "tool", o->tool) ||
        !cJSON_AddStringToObject(doc, "run_id", o->run_id ? o->run_id : "") ||
        !cJSON_AddNumberToObject(doc, "created", o->created) ||
        !cJSON_AddNumberToObject(doc, "duration", sum->duration) ||
        !cJSON_AddNumberToObject(doc, "exitcode", sum->exit_code) ||
        add_str_or_null(doc, "endpoint", o->endpoint) ||
        add_platform(doc, o) || add_selection(doc, o) ||
        !(sumo = cJSON_AddObjectToObject(doc, "summary")) ||
        add_counts(sumo, sum) || add_tests(doc, results, n) ||
        !cJSON_AddItemToObject(doc, "sandboxes", sbx))
        goto fail;
    sbx = NULL;
    /* extend after: its items are references to strings already valid */
    if (abx_report_json_fix_utf8(doc) || (o->extend && o->extend(doc, o->ctx) != 0))
        goto fail;
    return doc;
fail:
    cJSON_Delete(sbx);
    cJSON_Delete(doc);
    return NULL;
}

int abx_report_json_print(struct abx_buf *out, const cJSON *doc)
{
    size_t len = out->len;
    char *text = cJSON_Print(doc);
    int rc = -1;

    if (text && abx_buf_appends(out, text) == 0 &&
        abx_buf_appendc(out, '\n') == 0)
        rc = 0;
    else if (out->data) {
        out->len = len;
        out->data[len] = '\0';
    }
    cJSON_free(text);
    return rc;
}

int abx_report_json_write(struct abx_buf *out, const struct abx_report *r)
{
    cJSON *doc = abx_report_json_doc(r);
    int rc = doc ? abx_report_json_print(out, doc) : -1;

    cJSON_Delete(doc);
    return rc;
}
