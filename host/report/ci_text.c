/* The masked texts GitHub Actions output is made of (ci.h): shared by
 * the annotations (ci_annotate.c) and the job summary (ci_summary.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ci.h"
#include "out.h"

/* s masked by the process's masker, invalid UTF-8 as U+FFFD, appended. */
int abx_ci_masked(struct abx_buf *out, const char *s)
{
    struct abx_mask *m = abx_out_masker();
    size_t len = s ? strlen(s) : 0;
    struct abx_buf t;
    int rc;

    abx_buf_init(&t, 3 * len + 64);  /* a marker is at most 2x a secret */
    if (m && abx_mask_string(m, s ? s : "", len, &t) == 0)
        rc = abx_clean_text(out, abx_buf_cstr(&t), t.len, t.len);
    else
        rc = abx_buf_appends(out, "[not shown: masking failed]");
    abx_buf_free(&t);
    return rc;
}

/* Length of s cut to at most max bytes, not inside a UTF-8 sequence. */
size_t abx_ci_utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

/* s masked, then cut to max bytes at a line end: masked first, so that a
 * cut never leaves half of a secret that the masker could not match. */
int abx_ci_masked_cut(struct abx_buf *out, const char *s, size_t max)
{
    struct abx_buf m;
    size_t cut, k;
    int rc;

    abx_buf_init(&m, ABX_BUF_DEFAULT_MAX);
    rc = abx_ci_masked(&m, s);
    if (rc || m.len <= max) {
        rc = rc || abx_buf_append(out, abx_buf_cstr(&m), m.len);
        abx_buf_free(&m);
        return rc ? -1 : 0;
    }
    cut = abx_ci_utf8_cut(m.data, m.len, max - sizeof ABX_CI_TRUNCATED);
    for (k = cut; k > 0 && m.data[k] != '\n'; k--)
        ;
    rc = abx_buf_append(out, m.data, k > 0 ? k : cut) ||
         abx_buf_appends(out, ABX_CI_TRUNCATED);
    abx_buf_free(&m);
    return rc ? -1 : 0;
}

/* A failure as one text, masked: its message, then its traceback (which
 * repeats the message first: not twice), cut to max bytes. */
int abx_ci_failure_text(struct abx_buf *out, const char *msg, const char *lr,
                        size_t max)
{
    struct abx_buf full;
    size_t ml = msg ? strlen(msg) : 0;
    int rc;

    abx_buf_init(&full, ABX_BUF_DEFAULT_MAX);
    if (lr && (!msg || strncmp(lr, msg, ml) == 0))
        rc = abx_buf_appends(&full, lr);
    else
        rc = abx_buf_appends(&full, msg ? msg : "(no message)") ||
             (lr && *lr && abx_buf_appendf(&full, "\n%s", lr));
    rc = rc || abx_ci_masked_cut(out, abx_buf_cstr(&full), max);
    abx_buf_free(&full);
    return rc ? -1 : 0;
}

/* The test file of r, as its node id has it. */
void abx_ci_test_file(const struct abx_result *r, char *out, size_t outlen)
{
    const char *id = r->nodeid ? r->nodeid : "";
    const char *sep = strstr(id, "::");

    if (r->file && *r->file)
        snprintf(out, outlen, "%s", r->file);
    else
        snprintf(out, outlen, "%.*s", sep ? (int)(sep - id) : (int)strlen(id),
                 id);
}
