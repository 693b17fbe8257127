/* --junitxml and --json: rendered by the runtime writers, written whole
 * through the masking atomic writer (never half a file). */
#include <stdio.h>
#include <time.h>

#include "caps.h"
#include "host.h"
#include "out.h"
#include "report_json.h"
#include "report_junit.h"

static int write_buf(const char *what, const char *path, struct abx_buf *b)
{
    char err[512];

    if (abx_out_write_file_atomic(path, b->data ? b->data : "", b->len, err,
                                  sizeof err) != 0) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e: cannot write the %s "
                       "report: %s\n", what, err);
        return -1;
    }
    return 0;
}

int abx_reports_write(const struct abx_opts *o, const struct abx_env *e,
                      const struct abx_run *run, const struct abx_summary *s)
{
    struct abx_buf b;
    const char *caps[ABX_CAP_COUNT + 1];
    const char *props[3][2] = {{"platform", e->platform_kind},
                               {"capabilities", NULL}, {NULL, NULL}};
    char capstr[256];
    size_t k = 0;
    int rc = 0;

    for (int i = 0; i < ABX_CAP_COUNT; i++)
        if (e->caps & (1u << i))
            caps[k++] = abx_cap_name(i);
    caps[k] = NULL;
    abx_caps_format(e->caps, capstr, sizeof capstr);
    props[1][1] = capstr;
    if (o->junitxml) {
        struct abx_junit_opts jo = {
            .suite_name = "abx-e2e",
            .timestamp = (time_t)run->started_wall,
            .duration = s->duration,
            .properties = (const char *const (*)[2])props,
        };
        abx_buf_init(&b, ABX_BUF_DEFAULT_MAX);
        if (abx_junit_write(&b, run->results, run->n, &jo) != 0 ||
            write_buf("JUnit", o->junitxml, &b) != 0)
            rc = -1;
        else if (!o->quiet)
            abx_out_printf(ABX_OUT_STDOUT, "JUnit XML report: %s\n",
                           o->junitxml);
        abx_buf_free(&b);
    }
    if (o->json) {
        struct abx_json_report_opts jo = {
            .run_id = e->run_id,
            .created = run->started_wall,
            .sum = s,
            .platform = e->platform_kind,
            .capabilities = caps,
        };
        abx_buf_init(&b, ABX_BUF_DEFAULT_MAX);
        if (abx_report_json_write(&b, run->results, run->n, &jo) != 0 ||
            write_buf("JSON", o->json, &b) != 0)
            rc = -1;
        else if (!o->quiet)
            abx_out_printf(ABX_OUT_STDOUT, "JSON report: %s\n", o->json);
        abx_buf_free(&b);
    }
    return rc;
}
