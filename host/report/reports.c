/* --junitxml, --json and --html: rendered by the runtime writers, written
 * whole through the masking atomic writer (never half a file). The JSON
 * and HTML reports hold one document, built once. */
#include <stdio.h>
#include <stdlib.h>
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

int abx_report_docs(const char *json, const char *html, const cJSON *doc,
                    int quiet)
{
    struct abx_buf b;
    int rc = 0;

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
    return rc;
}

static int write_junit(const struct abx_opts *o, const struct abx_env *e,
                       const struct abx_run *run, const struct abx_summary *s)
{
    const char *props[3][2] = {{"platform", e->platform_kind},
                               {"capabilities", NULL}, {NULL, NULL}};
    char capstr[256];
    struct abx_buf b;
    int rc = 0;

    abx_caps_format(e->caps, capstr, sizeof capstr);
    props[1][1] = capstr;
    struct abx_junit_opts jo = {
        .suite_name = "abx-e2e",
        .timestamp = (time_t)run->started_wall,
        .duration = s->duration,
        .properties = (const char *const (*)[2])props,
    };
    abx_buf_init(&b, ABX_BUF_DEFAULT_MAX);
    if (abx_junit_write(&b, run->results, run->n, &jo) != 0 ||
        abx_report_file("JUnit XML", o->junitxml, &b, o->quiet) != 0)
        rc = -1;
    abx_buf_free(&b);
    return rc;
}

/* The JSON document of this run (what --json writes, --html shows). */
static cJSON *run_doc(const struct abx_opts *o, const struct abx_env *e,
                      const struct abx_run *run, const struct abx_summary *s)
{
    const char *caps[ABX_CAP_COUNT + 1];
    const char *profile = o->profile;
    size_t k = 0;

    for (int i = 0; i < ABX_CAP_COUNT; i++)
        if (e->caps & (1u << i))
            caps[k++] = abx_cap_name(i);
    caps[k] = NULL;
    struct abx_json_report_opts jo = {
        .tool = "abx-e2e " ABX_E2E_VERSION,
        .run_id = e->run_id,
        .created = run->started_wall,
        .sum = s,
        .endpoint = e->endpoint,
        .platform = e->platform_kind,
        .capabilities = caps,
        .local = o->local,
        .profile = o->local ? (profile && *profile ? profile : "e2b") : NULL,
        .command = o->argv_line,
        .keyword = o->keyword,
        .markexpr = o->markexpr,
        .paths = o->paths,
        .npaths = o->npaths,
        .shard_k = o->shard_k,
        .shard_n = o->shard_n,
        .last_failed = o->lf ? "lf" : o->ff ? "ff" : NULL,
        .workers = o->workers > 0 ? o->workers : 1,
        .sandboxes = run->sandboxes,
    };
    return abx_report_json_doc(run->results, run->n, &jo);
}

int abx_reports_write(const struct abx_config *cfg, const struct abx_run *run,
                      const struct abx_summary *s)
{
    const struct abx_opts *o = &cfg->opt;
    const struct abx_env *e = &cfg->env;
    cJSON *doc = NULL;
    int rc = 0;

    if (o->junitxml && write_junit(o, e, run, s) != 0)
        rc = -1;
    if (!o->json && !o->html)
        return rc;
    if (!(doc = run_doc(o, e, run, s))) {
        abx_out_puts(ABX_OUT_STDERR, "abx-e2e: cannot build the JSON/HTML "
                     "report: out of memory\n");
        return -1;
    }
    if (abx_report_docs(o->json, o->html, doc, o->quiet) != 0)
        rc = -1;
    cJSON_Delete(doc);
    return rc;
}
