#include "buf.h"
#include "check.h"

#include <stdlib.h>

int main(void)
{
    struct abx_buf b;
    char *s;
    size_t n;

    abx_buf_init(&b, 16);
    CHECK_STR(abx_buf_cstr(&b), "");
    CHECK_INT(abx_buf_appends(&b, "hello"), 0);
    CHECK_INT(abx_buf_appendf(&b, " %d", 42), 0);
    CHECK_STR(abx_buf_cstr(&b), "hello 42");
    /* over the cap: refused, buffer unchanged */
    CHECK_INT(abx_buf_appends(&b, "0123456789"), -1);
    CHECK_STR(abx_buf_cstr(&b), "hello 42");
    CHECK_INT(abx_buf_appendf(&b, "%s", "0123456789"), -1);
    CHECK_INT((int)b.len, 8);
    abx_buf_consume(&b, 6);
    CHECK_STR(abx_buf_cstr(&b), "42");
    abx_buf_consume(&b, 100);
    CHECK_STR(abx_buf_cstr(&b), "");
    CHECK_INT(abx_buf_append(&b, "a\0b", 3), 0);
    CHECK_INT((int)b.len, 3);
    s = abx_buf_steal(&b, &n);
    CHECK_INT((int)n, 3);
    CHECK(s[0] == 'a' && s[1] == '\0' && s[2] == 'b');
    free(s);
    CHECK(b.data == NULL && b.len == 0);
    abx_buf_free(&b);
    return CHECK_DONE();
}
