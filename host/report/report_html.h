/* --html FILE: one self-contained page (no external script, style or
 * font) that renders the JSON report document (report_json.h) in the
 * browser: run header, counts, a filterable table, failures in full, a
 * timeline of workers and sandboxes, the slowest tests. The page itself
 * is runner/report_html.html, embedded at build time; this file only
 * puts the document into it. */
#ifndef ABX_REPORT_HTML_H
#define ABX_REPORT_HTML_H

#include <cjson/cJSON.h>

#include "buf.h"

/* The line of the page that the document replaces. */
#define ABX_REPORT_HTML_SLOT "<!--ABX-REPORT-DATA-->"

/* Appends the page holding doc to out. 0, or -1 (out of memory, out
 * full, or a page without the slot: out is left as it was). */
int abx_report_html_write(struct abx_buf *out, const cJSON *doc);

/* The same with another page (tests). */
int abx_report_html_write_page(struct abx_buf *out, const cJSON *doc,
                               const char *page, size_t page_len);

#endif
