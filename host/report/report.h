/* What a run tells: the terminal, the report files, the CI annotations,
 * the evidence record, traces, and the sub-commands that read reports
 * (merge, diff-records). */
#ifndef ABX_HOST_REPORT_H
#define ABX_HOST_REPORT_H

#include "config.h"
#include "report_doc.h"

/* ---- traces (traces.c) ------------------------------------------------ */
/* Removes the trace files an earlier run left in dir (the --output
 * folder); 0, or -1 with err (dir is not a folder, or cannot be read). */
int abx_traces_prepare(const char *dir, char *err, size_t errlen);
/* Whether a file name is a trace's (*.trace.jsonl). */
int abx_traces_is_file(const char *name);
/* The events of a trace file, its header left out (its node id in
 * *nodeid, caller frees, when nodeid is given), at most max bytes read.
 * strict: a line that is not a JSON object is an error; else it is left
 * out, as is a last line without its end (a file cut short). No header
 * is an error either way. NULL with err. */
cJSON *abx_traces_read(const char *path, size_t max, int strict, char **nodeid, char *err,
                       size_t errlen);
/* For the HTML page: a copy of the report document in which each failed,
 * errored or flaky test with a trace file has its events (read back, up
 * to 2 MiB a file, 32 MiB a page) as trace_events; NULL when no such
 * test has one (show doc as it is). */
cJSON *abx_traces_for_html(const cJSON *doc);

/* ---- diff-records (diffrec.c, diffrec_cmp.c) ---------------------------- */
int abx_diffrec_main(const struct abx_config *cfg);
/* The differences between two traces of one test (their events, header
 * left out): [{kind, at, field, a, b}]; NULL out of memory. */
cJSON *abx_diffrec_compare(const cJSON *a, const cJSON *b);
/* An exchange's key: method, path with ids as {id}, query names. */
void abx_diffrec_key(const char *method, const char *url, char *out, size_t outlen);

/* ---- terminal output and reports (term.c, reports.c, evidence.c) ------ */
void abx_term_header(const struct abx_config *cfg, const struct abx_collection *c);
void abx_term_result(const struct abx_opts *o, const struct abx_result *r,
                     size_t done, size_t total);
void abx_term_output(const char *s, size_t len);  /* -s passthrough */
void abx_term_finish(const struct abx_opts *o, const struct abx_report *rep);
void abx_term_collect_only(const struct abx_opts *o,
                           const struct abx_collection *c);
/* pytest's "Interrupted: N errors during collection" banner. */
void abx_term_collect_stop(const struct abx_opts *o, size_t errors);
/* Text abx_term_finish prints right before the closing line, which stays
 * the last one (the CI annotations); copied, NULL clears. */
void abx_term_epilogue(const char *text);
/* Where a failure surfaced (failsite.c), as
 * pytest-github-actions-annotate-failures finds it: the innermost
 * traceback frame in the test's own file (a helper module's assertion
 * points at the test's call of it); else the innermost in another file of
 * the run; else the test's definition (file, def_line). text: the error
 * line, then "stack traceback:" and frames, innermost first. The file
 * goes to out; returns the line (0 unknown). */
int abx_failure_site(const char *file, int def_line, const char *text, char *out,
                     size_t outlen);
/* Under GitHub Actions (GITHUB_ACTIONS=true, no --no-ci-annotations):
 * ::error/::warning annotations, printed before the closing line, and the
 * Markdown job summary appended to $GITHUB_STEP_SUMMARY (ci_out.c,
 * ci_annotate.c, ci_summary.c). Call
 * before abx_term_finish, in run mode only. */
void abx_ci_report(const struct abx_config *cfg, const struct abx_report *rep);
/* The report document of a run (report_doc.h; points into cfg, run and
 * s, which must outlive it). */
void abx_report_of_run(struct abx_report *r, const struct abx_config *cfg,
                       const struct abx_run *run, const struct abx_summary *s);
/* --junitxml, --json, --html of r (any path may be NULL); 0, or -1 with
 * the error printed. */
int abx_report_write_files(const struct abx_report *r, const char *junitxml,
                           const char *json, const char *html, int quiet);
/* Writes b to path through the masking atomic writer and says so (unless
 * quiet) as "<what> report: <path>"; 0, or -1 with the error printed. */
int abx_report_file(const char *what, const char *path, struct abx_buf *b,
                    int quiet);
int abx_evidence_write(const struct abx_config *cfg, const struct abx_report *rep);

/* `abx-e2e merge` (merge.c): shards' JSON reports into one set of
 * reports; returns the exit code. */
int abx_merge_main(const struct abx_config *cfg);

#endif
