/* The parts of GitHub Actions output (ci_out.c): the texts (ci_text.c)
 * that the annotations (ci_annotate.c) and the job summary
 * (ci_summary.c) share. Every text is masked raw first, then escaped:
 * escaping first could split a secret (':' -> "%3A", '|' -> "\\|")
 * where the masker no longer sees it. */
#ifndef ABX_HOST_CI_H
#define ABX_HOST_CI_H

#include "report.h"

#define ABX_CI_TRUNCATED "\n[... truncated]"

/* Length of s cut to at most max bytes, not inside a UTF-8 sequence. */
size_t abx_ci_utf8_cut(const char *s, size_t len, size_t max);
/* The three texts below return 0, or -1 when out of memory or over
 * out's max: the caller then drops the whole note or summary. */
/* s masked by the process's masker, invalid UTF-8 as U+FFFD, appended. */
int abx_ci_masked(struct abx_buf *out, const char *s);
/* s masked, then cut to max bytes at a line end: masked first, so that a
 * cut never leaves half of a secret that the masker could not match. */
int abx_ci_masked_cut(struct abx_buf *out, const char *s, size_t max);
/* A failure as one text, masked: its message, then its traceback (which
 * repeats the message first: not twice), cut to max bytes. */
int abx_ci_failure_text(struct abx_buf *out, const char *msg, const char *lr, size_t max);
/* The test file of r, as its node id has it. */
void abx_ci_test_file(const struct abx_result *r, char *out, size_t outlen);

/* ::error/::warning lines for rep's failures and flaky tests, handed to
 * term.c to print before the closing line (ci_annotate.c). */
void abx_ci_annotate(const struct abx_report *rep);
/* The Markdown job summary of rep appended to path in one write
 * (ci_summary.c). */
void abx_ci_summary(const char *path, const struct abx_opts *o, const struct abx_env *e,
                    const struct abx_report *rep);

#endif
