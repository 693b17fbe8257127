/* --json FILE: the whole run as one JSON document, built with cJSON. */
#include "report_json.h"

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

/* Replaces every string value in the tree with its UTF-8-fixed copy. */
static int fix_strings(cJSON *node)
{
    cJSON *c, *next, *repl;
    char *fixed;
    int oom = 0, idx = 0;

    for (c = node->child; c; c = next, idx++) {
        next = c->next;
        if (!cJSON_IsString(c)) {
            if ((cJSON_IsObject(c) || cJSON_IsArray(c)) && fix_strings(c))
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

/* "platform" and "capabilities": what the run could rely on. */
static int add_platform(cJSON *doc, const struct abx_json_report_opts *o)
{
    cJSON *caps;

    if (!o || !o->platform)
        return 0;
    if (!cJSON_AddStringToObject(doc, "platform", o->platform) ||
        !(caps = cJSON_AddArrayToObject(doc, "capabilities")))
        return -1;
    for (const char *const *c = o->capabilities; c && *c; c++)
        if (!cJSON_AddItemToArray(caps, cJSON_CreateString(*c)))
            return -1;
    return 0;
}

int abx_report_json_write(struct abx_buf *out,
                          struct abx_result *const *results, size_t n,
                          const struct abx_json_report_opts *opts)
{
    struct abx_summary local;
    const struct abx_summary *sum = opts ? opts->sum : NULL;
    cJSON *doc, *tests, *t, *sumo;
    char *text = NULL;
    size_t i;
    int rc = -1;

    if (!sum) {
        abx_summary_init(&local);
        for (i = 0; i < n; i++)
            abx_summary_add(&local, results[i]);
        sum = &local;
    }
    doc = cJSON_CreateObject();
    if (!doc ||
        !cJSON_AddStringToObject(doc, "run_id",
                                 opts && opts->run_id ? opts->run_id : "") ||
        !cJSON_AddNumberToObject(doc, "created", opts ? opts->created : 0) ||
        !cJSON_AddNumberToObject(doc, "duration", sum->duration) ||
        !cJSON_AddNumberToObject(doc, "exitcode", sum->exit_code) ||
        !(sumo = cJSON_AddObjectToObject(doc, "summary")) ||
        add_counts(sumo, sum) ||
        add_platform(doc, opts) ||
        !(tests = cJSON_AddArrayToObject(doc, "tests")))
        goto out;
    for (i = 0; i < n; i++) {
        t = abx_result_to_json(results[i]);
        if (!t || !cJSON_AddItemToArray(tests, t)) {
            cJSON_Delete(t);
            goto out;
        }
        if (!cJSON_AddNumberToObject(t, "duration",
                                     abx_result_duration(results[i])))
            goto out;
    }
    if (fix_strings(doc))
        goto out;
    text = cJSON_Print(doc);
    if (!text || abx_buf_appends(out, text))
        goto out;
    if (abx_buf_appendc(out, '\n')) {
        out->len -= strlen(text);
        out->data[out->len] = '\0';
        goto out;
    }
    rc = 0;
out:
    cJSON_free(text);
    cJSON_Delete(doc);
    return rc;
}
