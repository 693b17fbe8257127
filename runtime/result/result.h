/* The per-test result record shared by the host, the workers (who send it
 * to the parent as one JSON line) and the report writers, plus the run
 * summary and pytest's closing line. */
#ifndef ABX_RESULT_H
#define ABX_RESULT_H

#include <stddef.h>

#include <cjson/cJSON.h>

enum abx_outcome {
    ABX_OUTCOME_PASSED,
    ABX_OUTCOME_FAILED,   /* assertion/Lua error in the call phase, or a
                             strict XPASS (xpass_strict = 1) */
    ABX_OUTCOME_ERROR,    /* error in setup (or collection) */
    ABX_OUTCOME_SKIPPED,
    ABX_OUTCOME_XFAILED,
    ABX_OUTCOME_XPASSED,  /* non-strict: counts as success */
    ABX_OUTCOME_FLAKY,    /* failed, then passed on a rerun (attempts) */
    ABX_OUTCOME_COUNT_
};

/* Phase in which the outcome was decided (pytest's report.when). */
enum abx_phase {
    ABX_PHASE_NONE,      /* passed normally / not run */
    ABX_PHASE_COLLECT,   /* the file failed to load */
    ABX_PHASE_SETUP,
    ABX_PHASE_CALL,
    ABX_PHASE_TEARDOWN,  /* outcome ERROR decided by teardown alone */
};

/* Lower-case names as in pytest reports: "passed", "failed", "error",
 * "skipped", "xfailed", "xpassed"; and "setup"/"call"/"teardown"/
 * "collect"/"" for phases. Parsers return -1 for unknown names. */
const char *abx_outcome_name(enum abx_outcome o);
int abx_outcome_parse(const char *s);
const char *abx_phase_name(enum abx_phase p);
int abx_phase_parse(const char *s);

struct abx_strlist {
    char **items;
    size_t n, cap;
};
void abx_strlist_init(struct abx_strlist *l);
int abx_strlist_push(struct abx_strlist *l, const char *s);  /* 0 / -1 */
int abx_strlist_contains(const struct abx_strlist *l, const char *s);
void abx_strlist_free(struct abx_strlist *l);

/* An earlier attempt of a test that was run again (--reruns): what it
 * failed with. The final attempt is the result itself. */
struct abx_attempt {
    enum abx_outcome outcome;   /* FAILED or ERROR */
    enum abx_phase when;
    char *message, *longrepr, *output;
    double duration;            /* seconds, its three phases */
    double start;               /* epoch seconds it began (0 unknown) */
};

/* All strings are heap-owned by the record (NULL when absent); set them
 * with abx_result_set() so ownership stays simple. */
struct abx_result {
    char *nodeid;     /* "tests-lua/test_03_commands.lua::group::name" */
    char *file;       /* "tests-lua/test_03_commands.lua" */
    int line;         /* line of the test's definition (0 unknown) */
    char *name;       /* "name" (the it/test name) */
    struct abx_strlist groups;  /* describe path, outermost first */
    char *classname;  /* JUnit: "tests-lua.test_03_commands.group" */

    enum abx_outcome outcome;
    enum abx_phase when;    /* where the outcome was decided */
    int xpass_strict;       /* FAILED because a strict xfail passed */

    char *message;    /* short: first line of the crash message */
    char *longrepr;   /* long: traceback / diff / "[XPASS(strict)] why" */
    char *reason;     /* skip / xfail reason */
    char *skip_loc;   /* "path:line" of the skip, NULL = file:line */
    char *output;     /* captured output (already masked or not: every
                         writer masks again on the way out) */
    char *trace;      /* its trace file (docs/reports.md "Traces"), or NULL */

    /* A teardown error on top of the outcome (pytest's "ERROR at teardown
     * of"): a test can be PASSED or FAILED and also ERROR at teardown.
     * NULL when teardown was clean. If the outcome itself is ERROR with
     * when == TEARDOWN, the message is in message/longrepr instead. */
    char *teardown_message;
    char *teardown_longrepr;

    double dur_setup, dur_call, dur_teardown;  /* seconds */
    double start;     /* epoch seconds its (last) attempt began; 0 unknown:
                         the reports' timeline places it by this */
    struct abx_strlist markers;
    struct abx_strlist sandbox_ids;  /* sandboxes this test created */
    int worker;                      /* -n worker index, -1 = in-process */
    int rerun;                       /* times re-run before this result */
    struct abx_attempt *attempts;    /* the failed attempts before it */
    size_t nattempts;                /* (= rerun when sent by a worker) */
    size_t capattempts;
};

/* attempts.c: keeps failed (its outcome, phase, texts, duration) as an
 * earlier attempt of r and bumps r->rerun. 0, or -1 out of memory. */
int abx_result_add_attempt(struct abx_result *r,
                           const struct abx_result *failed);
/* Frees r's attempts (result.c: they belong to the record). */
void abx_result_free_attempts(struct abx_result *r);
/* Frees one attempt's strings and zeroes it (result.c). */
void abx_attempt_free(struct abx_attempt *a);
/* "attempts": [{outcome, when, message, longrepr, output, duration,
 * start}] into
 * o (nothing without attempts); and back. 0, or -1 (bad value / OOM). */
int abx_attempts_to_json(cJSON *o, const struct abx_result *r);
int abx_attempts_from_json(const cJSON *j, struct abx_result *r);

struct abx_result *abx_result_new(void);  /* zeroed, worker = -1 */
void abx_result_free(struct abx_result *r);

/* Replaces *field (a char * member of r) with a copy of s (NULL clears).
 * 0 or -1 on out of memory. Example:
 *   abx_result_set(&r->message, "expected 1, got 2"); */
int abx_result_set(char **field, const char *s);

/* Fills nodeid, file, line, name, groups and classname from the file path,
 * the group path and the test name; classname follows pytest: path without
 * ".lua", '/' -> '.', plus each group joined by '.'. */
int abx_result_set_identity(struct abx_result *r, const char *file, int line,
                            const char *const *groups, size_t ngroups,
                            const char *name);

/* Total of the three durations. */
double abx_result_duration(const struct abx_result *r);

/* Counts as a failure/error for exit codes and -x/--maxfail. */
int abx_result_is_failure(const struct abx_result *r);

/* JSON (cJSON) form, lossless; keys: nodeid file line name groups
 * classname outcome when xpass_strict message longrepr reason skip_loc
 * output teardown_message teardown_longrepr durations{setup,call,teardown}
 * markers sandbox_ids worker rerun start. to_json returns NULL on out of memory.
 * from_json returns 0 and *out, or -1 with err naming the bad key. */
cJSON *abx_result_to_json(const struct abx_result *r);
int abx_result_from_json(const cJSON *j, struct abx_result **out, char *err,
                         size_t errlen);

/* ---- run summary ---------------------------------------------------- */
struct abx_summary {
    unsigned counts[ABX_OUTCOME_COUNT_];
    unsigned teardown_errors;  /* extra ERRORs from teardown_message */
    unsigned deselected;
    unsigned warnings;
    unsigned rerun;
    double duration;           /* seconds, wall clock of the session */
    int exit_code;             /* set by the host (abx_summary_exit_code) */
};

void abx_summary_init(struct abx_summary *s);
void abx_summary_add(struct abx_summary *s, const struct abx_result *r);
/* All errors: outcome ERROR plus teardown errors. */
unsigned abx_summary_errors(const struct abx_summary *s);
/* Tests that ran (every outcome; deselected excluded). */
unsigned abx_summary_total(const struct abx_summary *s);

/* pytest's closing line without the '=' padding, e.g.
 * "1 failed, 2 passed, 1 skipped, 3 deselected, 1 xfailed, 1 xpassed,
 *  1 warning, 2 errors, 1 rerun in 1.23s" ("in 81.22s (0:01:21)" from a
 * minute on), or "no tests ran in 0.01s". Zero counts are omitted.
 * Returns the length snprintf would produce (truncated if >= len). */
int abx_summary_line(const struct abx_summary *s, char *buf, size_t len);

/* pytest exit codes. */
enum abx_exit {
    ABX_EXIT_OK = 0,
    ABX_EXIT_TESTS_FAILED = 1,
    ABX_EXIT_INTERRUPTED = 2,
    ABX_EXIT_INTERNAL_ERROR = 3,
    ABX_EXIT_USAGE_ERROR = 4,
    ABX_EXIT_NO_TESTS_COLLECTED = 5,
};
/* 2 if interrupted, else 1 if any failure/error, else 5 if no test ran,
 * else 0. */
int abx_summary_exit_code(const struct abx_summary *s, int interrupted);

#endif
