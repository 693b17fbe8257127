/* --json FILE: the report document (report_doc.h) in JSON, one for
 * the whole run; --html embeds the same
 * document, and `abx-e2e merge` reads shards' documents back:
 * {"tool", "run_id", "created" (epoch s), "duration", "exitcode",
 *  "endpoint", "platform", "capabilities", "local", "profile", "command",
 *  "selection": {"keyword", "markexpr", "paths", "shard", "last_failed"},
 *  "workers", "shard": {"k", "n"} (with --shard),
 *  "summary": {"passed": N, "failed": N, "error": N, "skipped": N,
 *              "xfailed": N, "xpassed": N, "flaky": N, "deselected": N,
 *              "total": N, "collected": N},
 *  "tests": [...], "sandboxes": [...]}
 * Each test object is abx_result_to_json() plus "duration" (total
 * seconds); "sandboxes" holds each sandbox's lifetime:
 * {"id", "template", "test", "worker", "created", "ended" (null: alive
 * when its worker ended), "kept"}. docs/reports.md has the whole shape. */
#ifndef ABX_REPORT_JSON_H
#define ABX_REPORT_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "report_doc.h"

/* The document, every string valid UTF-8 (invalid bytes as U+FFFD).
 * NULL when out of memory. */
cJSON *abx_report_json_doc(const struct abx_report *r);

/* Appends doc pretty-printed, with a trailing newline, to out. 0, or -1
 * (out of memory / out full: out is left as it was). */
int abx_report_json_print(struct abx_buf *out, const cJSON *doc);

/* Both of the above. 0 or -1. */
int abx_report_json_write(struct abx_buf *out, const struct abx_report *r);

/* Every string value in the tree made valid UTF-8. 0, or -1 OOM. */
int abx_report_json_fix_utf8(cJSON *node);

#endif
