/* --junitxml, --json and --html of one report document (report_doc.h),
 * a run's or merged shards': rendered by the writers (report_*.c),
 * written whole through the masking atomic writer (never half a file).
 * The JSON and HTML reports hold one JSON form, built once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "caps.h"
#include "out.h"
#include "report.h"
#include "report_html.h"
#include "report_json.h"
#include "report_junit.h"

int abx_report_file(const char *what, const char *path, struct abx_buf *b,
                    int quiet)
{
    char err[512];

    if (abx_out_write_file_atomic(path, b->data ? b->data : "", b->len, err,
                                  sizeof err) != 0) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: cannot write the %s "
                       "report: %s\n", what, err);
        return -1;
    }
    if (!quiet)
        abx_out_printf(ABX_OUT_STDOUT, "%s report: %s\n", what, path);
    return 0;
}

/* The --json and --html files of the report's JSON form (built once). */
static int write_docs(const struct abx_report *r, const char *json, const char *html, int quiet)
{
    struct abx_buf b;
    cJSON *doc = abx_report_json_doc(r);
    int rc = 0;

    if (!doc) {
        abx_out_puts(ABX_OUT_STDERR, "abx-e2e: cannot build the JSON/HTML "
                     "report: out of memory\n");
        return -1;
    }
    if (json) {
        abx_buf_init(&b, ABX_BUF_DEFAULT_MAX);
        if (abx_report_json_print(&b, doc) != 0 ||
            abx_report_file("JSON", json, &b, quiet) != 0)
            rc = -1;
        abx_buf_free(&b);
    }
    if (html) {
        cJSON *traced = abx_traces_for_html(doc);
        abx_buf_init(&b, ABX_BUF_DEFAULT_MAX);
        if (abx_report_html_write(&b, traced ? traced : doc) != 0 ||
            abx_report_file("HTML", html, &b, quiet) != 0)
            rc = -1;
        abx_buf_free(&b);
        cJSON_Delete(traced);
    }
    cJSON_Delete(doc);
    return rc;
}

int abx_report_write_files(const struct abx_report *r, const char *junitxml,
                           const char *json, const char *html, int quiet)
{
    struct abx_buf b;
    int rc = 0;

    if (junitxml) {
        abx_buf_init(&b, ABX_BUF_DEFAULT_MAX);
        if (abx_junit_write(&b, r, NULL) != 0 ||
            abx_report_file("JUnit XML", junitxml, &b, quiet) != 0)
            rc = -1;
        abx_buf_free(&b);
    }
    if ((json || html) && write_docs(r, json, html, quiet) != 0)
        rc = -1;
    return rc;
}

void abx_report_of_run(struct abx_report *r, const struct abx_config *cfg,
                       const struct abx_run *run, const struct abx_summary *s)
{
    const struct abx_opts *o = &cfg->opt;
    const struct abx_env *e = &cfg->env;
    const char *profile = o->profile;
    size_t k = 0;

    memset(r, 0, sizeof *r);
    for (int i = 0; i < ABX_CAP_COUNT && k < ABX_REPORT_MAX_CAPS; i++)
        if (e->caps & (1u << i))
            r->caps_store[k++] = abx_cap_name(i);
    r->caps_store[k] = NULL;
    r->results = run->results;
    r->n = run->n;
    r->sum = s;
    r->tool = "abx-e2e " ABX_E2E_VERSION;
    r->run_id = e->run_id;
    r->created = run->started_wall;
    r->endpoint = e->endpoint;
    r->platform = e->platform_kind;
    r->capabilities = r->caps_store;
    r->local = o->local;
    r->profile = o->local ? (profile && *profile ? profile : "e2b") : NULL;
    r->command = o->argv_line;
    r->keyword = o->keyword;
    r->markexpr = o->markexpr;
    r->paths = o->paths;
    r->npaths = o->npaths;
    r->shard_k = o->shard_k;
    r->shard_n = o->shard_n;
    r->last_failed = o->lf ? "lf" : o->ff ? "ff" : NULL;
    r->workers = o->workers > 0 ? o->workers : 1;
    r->sandboxes = run->sandboxes;
    r->stopped_maxfail = run->stopped_maxfail;
    r->collect_errors = run->collect_errors;
    r->interrupted_at = run->interrupted ? run->interrupted_at : NULL;
}
