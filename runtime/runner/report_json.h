/* --json FILE: one JSON document for the whole run:
 * {"run_id": "...", "created": 1764530000.0 (epoch seconds),
 *  "duration": 1.23, "exitcode": 0,
 *  "summary": {"passed": N, "failed": N, "error": N, "skipped": N,
 *              "xfailed": N, "xpassed": N, "deselected": N,
 *              "total": N, "collected": N},
 *  "tests": [{"nodeid", "outcome", "when", "duration", "markers",
 *             "message", "longrepr", "reason", "file", "line",
 *             "teardown_message", "sandbox_ids", ...}]}
 * Each test object is abx_result_to_json() plus "duration" as a number
 * (total seconds) and "durations" {setup, call, teardown}. */
#ifndef ABX_REPORT_JSON_H
#define ABX_REPORT_JSON_H

#include <stddef.h>
#include <time.h>

#include "buf.h"
#include "result.h"

struct abx_json_report_opts {
    const char *run_id;
    double created;                  /* epoch seconds of session start */
    const struct abx_summary *sum;   /* duration, exit_code, counts */
    const char *platform;            /* "fc", "e2b"; NULL: left out */
    const char *const *capabilities; /* declared set, NULL-terminated */
};

/* Appends the document (pretty-printed, trailing newline) to out.
 * 0 or -1 (out of memory / out full). */
int abx_report_json_write(struct abx_buf *out,
                          struct abx_result *const *results, size_t n,
                          const struct abx_json_report_opts *opts);

#endif
