/* abx_http_header_collect: raw reply header lines (as curl's header
 * callback gets them) to "name: value\n" lines, with the cap. */
#include <string.h>

#include "check.h"
#include "http.h"

static int add(struct abx_buf *b, const char *line)
{
    return abx_http_header_collect(b, line, strlen(line));
}

int main(void)
{
    struct abx_buf b;

    abx_buf_init(&b, ABX_HTTP_HEADERS_MAX);
    CHECK_INT(add(&b, "HTTP/1.1 200 OK\r\n"), 0);
    CHECK_INT(add(&b, "Content-Type: text/plain\r\n"), 0);
    CHECK_INT(add(&b, "X-Multi:one\r\n"), 0);
    CHECK_INT(add(&b, "x-MULTI: \t two \t\r\n"), 0);
    CHECK_INT(add(&b, "Empty:\r\n"), 0);
    CHECK_INT(add(&b, "\r\n"), 0);
    CHECK_STR(abx_buf_cstr(&b), "content-type: text/plain\nx-multi: one\n"
                                "x-multi: two\nempty: \n");

    /* Not headers: skipped, nothing else changes. */
    abx_buf_reset(&b);
    CHECK_INT(add(&b, "no colon here\r\n"), 0);
    CHECK_INT(add(&b, ": no name\r\n"), 0);
    CHECK_INT(add(&b, "Bad Name: x\r\n"), 0);
    CHECK_INT(add(&b, "Bad(name): x\r\n"), 0);
    CHECK_INT(abx_http_header_collect(&b, "X-Nul: a\0b\r\n", 12), 0);
    CHECK_INT(abx_http_header_collect(&b, "", 0), 0);
    CHECK_INT(add(&b, "  orphan continuation\r\n"), 0);
    CHECK_INT((long long)b.len, 0);

    /* An obs-fold continuation joins the previous value. */
    CHECK_INT(add(&b, "X-Long: first\r\n"), 0);
    CHECK_INT(add(&b, " \t second part \r\n"), 0);
    CHECK_INT(add(&b, "\t\r\n"), 0);
    CHECK_STR(abx_buf_cstr(&b), "x-long: first second part\n");

    /* Token characters other than letters survive; a colon in the value
     * stays in the value; lone LF endings work too. */
    abx_buf_reset(&b);
    CHECK_INT(add(&b, "X-A_b.c~1: http://h:1/p\n"), 0);
    CHECK_STR(abx_buf_cstr(&b), "x-a_b.c~1: http://h:1/p\n");
    abx_buf_free(&b);

    /* The cap: a line that does not fit whole is refused, nothing of it
     * is kept, and the lines before stay. */
    abx_buf_init(&b, 32);
    CHECK_INT(add(&b, "A: 123456789\r\n"), 0);       /* 13 bytes */
    CHECK_INT(add(&b, "B: 1234567890123456\r\n"), -1); /* would be 33 */
    CHECK_STR(abx_buf_cstr(&b), "a: 123456789\n");
    CHECK_INT(add(&b, "B: 123456789012345\r\n"), 0); /* exactly 32 */
    CHECK_INT((long long)b.len, 32);
    CHECK_INT(add(&b, " x\r\n"), -1);
    CHECK_INT((long long)b.len, 32);
    CHECK_STR(abx_buf_cstr(&b), "a: 123456789\nb: 123456789012345\n");
    abx_buf_free(&b);

    /* A response object starts and ends with an empty header buffer. */
    struct abx_http_resp r;
    abx_http_resp_init(&r);
    CHECK_INT((long long)r.headers.len, 0);
    CHECK_INT((long long)r.headers.max, (long long)ABX_HTTP_HEADERS_MAX);
    abx_http_resp_free(&r);
    return CHECK_DONE();
}
