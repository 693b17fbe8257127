/* The one report document: what every writer renders (the terminal's
 * closing sections, JUnit, JSON, HTML, the CI annotations and job
 * summary, the evidence record). Built once, from a run
 * (abx_report_of_run, reports.c) or from merged shards (merge.c); the
 * JSON form of it is report_json.h's document, which --html shows. */
#ifndef ABX_REPORT_DOC_H
#define ABX_REPORT_DOC_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "result.h"

#define ABX_REPORT_MAX_CAPS 32

struct abx_report {
    struct abx_result *const *results;
    size_t n;
    const struct abx_summary *sum;   /* counts, duration, exit code; NULL:
                                        counted from results */
    /* what the run was */
    const char *tool;                /* "abx-e2e 0.1.0" */
    const char *run_id;
    double created;                  /* epoch seconds of session start */
    const char *endpoint;            /* platform base URL, or NULL */
    const char *platform;            /* "fc", "e2b"; NULL: left out */
    const char *const *capabilities; /* declared set, NULL-terminated */
    int local;                       /* abx-local started for the run */
    const char *profile;             /* its profile, or NULL */
    /* what was asked for */
    const char *command;             /* the command line */
    const char *keyword, *markexpr;  /* -k, -m (NULL: not given) */
    const char *const *paths;        /* positional paths */
    size_t npaths;
    long shard_k, shard_n;           /* 0/0: not sharded */
    const char *last_failed;         /* "lf", "ff" or NULL */
    int workers;
    const cJSON *sandboxes;          /* lifetimes (copied), or NULL */
    /* how it ended (a run's; merged shards have none of these) */
    int stopped_maxfail;
    size_t collect_errors;           /* files that failed to load */
    const char *interrupted_at;      /* NULL: not interrupted; else the
                                        node id a signal stopped, or "" */
    /* merge: adds its own fields to the JSON form (each test's shard,
     * the shards, what was missing); NULL for a run. 0, or -1 (out of
     * memory). */
    int (*extend)(cJSON *doc, const void *ctx);
    const void *ctx;
    /* storage abx_report_of_run points capabilities into (so a report
     * built there is not to be copied) */
    const char *caps_store[ABX_REPORT_MAX_CAPS + 1];
};

#endif
