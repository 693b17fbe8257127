/* --html: the embedded page with the report document in its data slot. */
#include "report_html.h"

#include <string.h>

#include "abx_embedded.h"

/* The document as script data: "<", ">" and "&" as JSON escapes, so no
 * string in it can close the element ("</script>") or open a comment;
 * U+2028/U+2029 are fine in JSON read by JSON.parse. */
static int append_data(struct abx_buf *out, const char *json)
{
    static const char *const esc[] = {['<'] = "\\u003c", ['>'] = "\\u003e",
                                      ['&'] = "\\u0026"};
    const char *p = json, *q;

    while ((q = strpbrk(p, "<>&"))) {
        if (abx_buf_append(out, p, (size_t)(q - p)) ||
            abx_buf_appends(out, esc[(unsigned char)*q]))
            return -1;
        p = q + 1;
    }
    return abx_buf_appends(out, p);
}

int abx_report_html_write_page(struct abx_buf *out, const cJSON *doc,
                               const char *page, size_t page_len)
{
    const char *slot = memmem(page, page_len, ABX_REPORT_HTML_SLOT,
                              strlen(ABX_REPORT_HTML_SLOT));
    size_t len = out->len, head;
    char *json;
    int rc = -1;

    if (!slot)
        return -1;
    head = (size_t)(slot - page);
    json = cJSON_PrintUnformatted(doc);
    if (json && abx_buf_append(out, page, head) == 0 &&
        abx_buf_appends(out, "<script type=\"application/json\" "
                             "id=\"abx-report-data\">") == 0 &&
        append_data(out, json) == 0 &&
        abx_buf_appends(out, "</script>") == 0 &&
        abx_buf_append(out, slot + strlen(ABX_REPORT_HTML_SLOT),
                       page_len - head - strlen(ABX_REPORT_HTML_SLOT)) == 0)
        rc = 0;
    cJSON_free(json);
    if (rc != 0 && out->data) {
        out->len = len;
        out->data[len] = '\0';
    }
    return rc;
}

int abx_report_html_write(struct abx_buf *out, const cJSON *doc)
{
    return abx_report_html_write_page(out, doc,
                                      (const char *)abx_report_html_page,
                                      abx_report_html_page_len);
}
