/* -k / -m expressions: compile arbitrary text, check the error shape
 * (column within the input), then evaluate with every stock matcher and
 * with a matcher that checks what it is handed. Input: byte 0 holds
 * flags (bit 0: ABX_EXPR_NO_KWARGS, bits 1-7: answers of the checking
 * matcher), the rest is the expression (up to the first NUL). */
#include <string.h>

#include "expr.h"
#include "fuzz.h"

struct probe_ctx {
    unsigned bits;
    unsigned calls;
    int fail;  /* answer -1 on the Nth call */
};

/* A Python identifier as the matchers receive it, restated from the
 * language reference with explicit character sets (ASCII letters, digits,
 * '_'; any byte >= 0x80 stands for a non-ASCII letter). */
static int py_ident(const char *s)
{
    static const char head[] = "abcdefghijklmnopqrstuvwxyz"
                               "ABCDEFGHIJKLMNOPQRSTUVWXYZ_";
    static const char digits[] = "0123456789";
    size_t i;

    for (i = 0; s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        int ok = c >= 0x80 || strchr(head, c) != NULL ||
                 (i > 0 && strchr(digits, c) != NULL);
        if (!ok)
            return 0;
    }
    return i > 0;
}

static int probe_match(void *ctx, const char *ident,
                       const struct abx_expr_kwargs *kw)
{
    struct probe_ctx *c = ctx;
    size_t i;

    FUZZ_CHECK(ident && *ident);
    FUZZ_CHECK(kw != NULL);
    FUZZ_CHECK(kw->n == 0 || kw->items != NULL);
    for (i = 0; i < kw->n; i++) {
        const struct abx_expr_kwarg *a = &kw->items[i];

        FUZZ_CHECK(a->name && py_ident(a->name));
        FUZZ_CHECK(a->type == ABX_EXPR_V_STR ? a->str != NULL
                                             : a->str == NULL);
        if (a->type == ABX_EXPR_V_BOOL)
            FUZZ_CHECK(a->num == 0 || a->num == 1);
    }
    c->calls++;
    if (c->fail && c->calls == (unsigned)c->fail)
        return -1;
    return (c->bits >> (c->calls % 7)) & 1;
}

/* "at column N: ..." with 1 <= N <= len + 1 (len + 1: end of input). */
static void check_error(const char *err, size_t len)
{
    unsigned long col;
    char *end;

    if (!strcmp(err, "out of memory"))
        return;
    FUZZ_CHECK(!strncmp(err, "at column ", 10));
    col = strtoul(err + 10, &end, 10);
    FUZZ_CHECK(end != err + 10 && !strncmp(end, ": ", 2) && end[2] != '\0');
    FUZZ_CHECK(col >= 1 && col <= len + 1);
}

static int all_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t')
            return 0;
    return 1;
}

static void evaluate(const struct abx_expr *e, unsigned bits)
{
    static const char *const names[] = {"test_one", "Group", "file.lua",
                                        "slow", NULL};
    static const struct abx_expr_kwarg kws[] = {
        {"serial", ABX_EXPR_V_STR, "123", 0},
        {"n", ABX_EXPR_V_INT, NULL, 1},
        {"flag", ABX_EXPR_V_BOOL, NULL, 0},
        {"x", ABX_EXPR_V_NONE, NULL, 0},
    };
    static const struct abx_expr_mark marks[] = {
        {"device", {4, kws}}, {"slow", {0, NULL}}, {"n", {2, kws + 1}},
    };
    const struct abx_expr_markset set = {3, marks};
    struct probe_ctx pc;
    int r;

    r = abx_expr_eval(e, abx_expr_match_keywords, (void *)names);
    FUZZ_CHECK(r == 0 || r == 1 || (r == -1 && abx_expr_has_kwargs(e)));
    r = abx_expr_eval(e, abx_expr_match_markers, (void *)names);
    FUZZ_CHECK(r == 0 || r == 1);
    r = abx_expr_eval(e, abx_expr_match_markset, (void *)&set);
    FUZZ_CHECK(r == 0 || r == 1);

    memset(&pc, 0, sizeof pc);
    pc.bits = bits;
    r = abx_expr_eval(e, probe_match, &pc);
    FUZZ_CHECK(r == 0 || r == 1);
    /* An error from the matcher always surfaces as -1. */
    if (pc.calls) {
        pc.fail = (int)(bits % pc.calls) + 1;
        pc.calls = 0;
        r = abx_expr_eval(e, probe_match, &pc);
        FUZZ_CHECK(r == -1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct abx_expr *e = NULL;
    unsigned flags;
    char *src, err[256];
    size_t len;
    int rc;

    if (size < 1)
        return 0;
    flags = data[0] & 1 ? ABX_EXPR_NO_KWARGS : 0;
    src = malloc(size);
    if (!src)
        return 0;
    memcpy(src, data + 1, size - 1);
    src[size - 1] = '\0';
    len = strlen(src);

    memset(err, 'x', sizeof err);
    rc = abx_expr_compile_ex(src, flags, &e, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc == -1 && e == NULL);
        FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL);
        check_error(err, len);
    } else {
        FUZZ_CHECK(e != NULL);
        FUZZ_CHECK(abx_expr_is_empty(e) == all_blank(src));
        if (flags & ABX_EXPR_NO_KWARGS)
            FUZZ_CHECK(!abx_expr_has_kwargs(e));
        if (abx_expr_is_empty(e))
            FUZZ_CHECK(abx_expr_eval(e, probe_match, NULL) == 0);
        else
            evaluate(e, data[0] >> 1);
        abx_expr_free(e);
    }
    /* A tiny error buffer must truncate, not overflow. */
    {
        char small[4];

        e = NULL;
        if (abx_expr_compile_ex(src, flags, &e, small, sizeof small) != 0)
            FUZZ_CHECK(memchr(small, '\0', sizeof small) != NULL);
        abx_expr_free(e);
    }
    free(src);
    return 0;
}
