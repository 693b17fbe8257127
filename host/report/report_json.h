/* --json FILE: one JSON document for the whole run; --html embeds the same
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
#include "result.h"

struct abx_json_report_opts {
    const char *tool;                /* "abx-e2e 0.1.0" */
    const char *run_id;
    double created;                  /* epoch seconds of session start */
    const struct abx_summary *sum;   /* duration, exit_code, counts */
    const char *endpoint;            /* platform base URL, or NULL */
    const char *platform;            /* "fc", "e2b"; NULL: left out */
    const char *const *capabilities; /* declared set, NULL-terminated */
    int local;                       /* abx-local started for the run */
    const char *profile;             /* its profile, or NULL */
    const char *command;             /* the command line */
    const char *keyword, *markexpr;  /* -k, -m (NULL: not given) */
    const char *const *paths;        /* positional paths */
    size_t npaths;
    long shard_k, shard_n;           /* 0/0: not sharded */
    const char *last_failed;         /* "lf", "ff" or NULL */
    int workers;
    const cJSON *sandboxes;          /* lifetimes (copied), or NULL */
};

/* The document, every string valid UTF-8 (invalid bytes as U+FFFD).
 * NULL when out of memory. */
cJSON *abx_report_json_doc(struct abx_result *const *results, size_t n,
                           const struct abx_json_report_opts *opts);

/* Appends doc pretty-printed, with a trailing newline, to out. 0, or -1
 * (out of memory / out full: out is left as it was). */
int abx_report_json_print(struct abx_buf *out, const cJSON *doc);

/* Both of the above. 0 or -1. */
int abx_report_json_write(struct abx_buf *out,
                          struct abx_result *const *results, size_t n,
                          const struct abx_json_report_opts *opts);

/* Every string value in the tree made valid UTF-8. 0, or -1 OOM. */
int abx_report_json_fix_utf8(cJSON *node);

#endif
