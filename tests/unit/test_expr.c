/* -k / -m expression parser: grammar, precedence, errors, matchers. */
#include "buf.h"
#include "check.h"
#include "expr.h"

#include <stdlib.h>

/* Matcher over a set of true identifiers, recording how often it ran. */
struct truth {
    const char *const *on;
    int calls;
};

static int truth_match(void *ctx, const char *ident,
                       const struct abx_expr_kwargs *kw)
{
    struct truth *t = ctx;
    const char *const *p;

    (void)kw;
    t->calls++;
    for (p = t->on; *p; p++)
        if (!strcmp(*p, ident))
            return 1;
    return 0;
}

/* Evaluates src with the identifiers in on true; -2 on compile error. */
static int ev(const char *src, const char *const *on)
{
    struct abx_expr *e;
    struct truth t = {on, 0};
    char err[256];
    int r;

    if (abx_expr_compile(src, &e, err, sizeof(err))) {
        fprintf(stderr, "compile %s: %s\n", src, err);
        return -2;
    }
    r = abx_expr_eval(e, truth_match, &t);
    abx_expr_free(e);
    return r;
}

/* Compile error text for src ("" if it compiled). */
static const char *cerr(const char *src, unsigned flags)
{
    static char err[256];
    struct abx_expr *e = NULL;

    if (abx_expr_compile_ex(src, flags, &e, err, sizeof(err)) == 0) {
        abx_expr_free(e);
        return "";
    }
    CHECK(e == NULL);
    return err;
}

static int keywords(const char *src, const char *const *names)
{
    struct abx_expr *e;
    char err[256];
    int r;

    if (abx_expr_compile_ex(src, ABX_EXPR_NO_KWARGS, &e, err, sizeof(err)))
        return -2;
    r = abx_expr_eval(e, abx_expr_match_keywords, (void *)names);
    abx_expr_free(e);
    return r;
}

static int markers(const char *src, const struct abx_expr_markset *set)
{
    struct abx_expr *e;
    char err[256];
    int r;

    if (abx_expr_compile(src, &e, err, sizeof(err))) {
        fprintf(stderr, "compile %s: %s\n", src, err);
        return -2;
    }
    r = abx_expr_eval(e, abx_expr_match_markset, (void *)set);
    abx_expr_free(e);
    return r;
}

static void test_precedence(void)
{
    static const char *const a[] = {"a", NULL};
    static const char *const b[] = {"b", NULL};
    static const char *const c[] = {"c", NULL};
    static const char *const none[] = {NULL};
    static const char *const ab[] = {"a", "b", NULL};

    CHECK_INT(ev("a", a), 1);
    CHECK_INT(ev("a", none), 0);
    CHECK_INT(ev("not a", a), 0);
    CHECK_INT(ev("not not a", a), 1);
    /* and binds tighter than or: a or (b and c) */
    CHECK_INT(ev("a or b and c", a), 1);
    CHECK_INT(ev("(a or b) and c", a), 0);
    CHECK_INT(ev("c or a and b", c), 1);
    CHECK_INT(ev("c or a and b", a), 0);
    /* not binds tighter than and: (not a) and b */
    CHECK_INT(ev("not a and b", b), 1);
    CHECK_INT(ev("not a and b", ab), 0);
    CHECK_INT(ev("not (a and b)", ab), 0);
    CHECK_INT(ev("not (a and b)", a), 1);
    CHECK_INT(ev("((a))", a), 1);
    CHECK_INT(ev(" \ta\t or\tb ", b), 1);
    CHECK_INT(ev("a and b or not c", none), 1);
    /* left to right chains */
    CHECK_INT(ev("a or b or c", c), 1);
    CHECK_INT(ev("a and b and c", ab), 0);
}

static void test_short_circuit(void)
{
    static const char *const a[] = {"a", NULL};
    struct abx_expr *e;
    struct truth t = {a, 0};
    char err[64];

    CHECK_INT(abx_expr_compile("a or b or c", &e, err, sizeof(err)), 0);
    CHECK_INT(abx_expr_eval(e, truth_match, &t), 1);
    CHECK_INT(t.calls, 1);
    abx_expr_free(e);
    t.calls = 0;
    CHECK_INT(abx_expr_compile("b and a", &e, err, sizeof(err)), 0);
    CHECK_INT(abx_expr_eval(e, truth_match, &t), 0);
    CHECK_INT(t.calls, 1);
    /* evaluated many times with the same result */
    CHECK_INT(abx_expr_eval(e, truth_match, &t), 0);
    abx_expr_free(e);
}

static void test_idents(void)
{
    static const char *const on[] = {
        "name[case-1]", "tests-lua/test_03.lua", "a::b", "x+y",
        "back\\slash", "1", "True", "ORACLE", "andy", "notes", "or_", NULL,
    };

    CHECK_INT(ev("name[case-1]", on), 1);
    CHECK_INT(ev("tests-lua/test_03.lua", on), 1);
    CHECK_INT(ev("a::b", on), 1);
    CHECK_INT(ev("x+y", on), 1);
    CHECK_INT(ev("back\\slash", on), 1);
    CHECK_INT(ev("1", on), 1);
    CHECK_INT(ev("True", on), 1);  /* legal identifier */
    /* reserved words are whole tokens only */
    CHECK_INT(ev("ORACLE and andy and notes and or_", on), 1);
    CHECK_INT(ev("not-a-name", on), 0);  /* one identifier, not "not" */
}

static void test_errors(void)
{
    CHECK_STR(cerr("a and", 0),
              "at column 6: expected not OR left parenthesis OR identifier; "
              "got end of input");
    CHECK_STR(cerr("not", 0),
              "at column 4: expected not OR left parenthesis OR identifier; "
              "got end of input");
    CHECK_STR(cerr("(a", 0),
              "at column 3: expected right parenthesis; got end of input");
    CHECK_STR(cerr("a)", 0),
              "at column 2: expected end of input; got right parenthesis");
    CHECK_STR(cerr("a b", 0),
              "at column 3: expected end of input; got identifier");
    CHECK_STR(cerr("or", 0),
              "at column 1: expected not OR left parenthesis OR identifier; "
              "got or");
    CHECK_STR(cerr("a and or b", 0),
              "at column 7: expected not OR left parenthesis OR identifier; "
              "got or");
    CHECK_STR(cerr("()", 0),
              "at column 2: expected not OR left parenthesis OR identifier; "
              "got right parenthesis");
    CHECK_STR(cerr("a & b", 0), "at column 3: unexpected character \"&\"");
    CHECK_STR(cerr("'abc'", 0),
              "at column 1: expected not OR left parenthesis OR identifier; "
              "got str");
    CHECK_STR(cerr("m(x='abc)", 0),
              "at column 5: closing quote \"'\" is missing");
    CHECK_STR(cerr("m(x='a\\b')", 0),
              "at column 5: escaping not supported in marker expression");
    CHECK_STR(cerr("m(x=)", 0),
              "at column 5: expected identifier; got right parenthesis");
    CHECK_STR(cerr("m()", 0),
              "at column 3: expected identifier; got right parenthesis");
    CHECK_STR(cerr("m(x)", 0),
              "at column 4: expected =; got right parenthesis");
    CHECK_STR(cerr("m(x=abc)", 0),
              "at column 5: unexpected character/s \"abc\"");
    CHECK_STR(cerr("m(x=1.5)", 0),
              "at column 5: unexpected character/s \"1.5\"");
    CHECK_STR(cerr("m(1x=1)", 0), "at column 3: unexpected character/s \"1x\"");
    CHECK_STR(cerr("m(class=1)", 0),
              "at column 3: unexpected character/s \"class\"");
    CHECK_STR(cerr("m(a=1 b=2)", 0),
              "at column 7: expected right parenthesis; got identifier");
    CHECK_STR(cerr("m(a=1,b=2)", 0), "");
    CHECK_STR(cerr("m(a=1, b=\"x y\", c=True, d=None, e=-3)", 0), "");
    /* -k rejects call parameters */
    CHECK_STR(cerr("slow(a=1)", ABX_EXPR_NO_KWARGS),
              "at column 5: Keyword expressions do not support call "
              "parameters.");
    /* deep nesting is an error, not a stack overflow */
    {
        char deep[2100];
        size_t i;

        for (i = 0; i < 1000; i++)
            deep[i] = '(';
        deep[i++] = 'a';
        for (; i < 2001; i++)
            deep[i] = ')';
        deep[i] = '\0';
        CHECK(strstr(cerr(deep, 0), "nested too deeply") != NULL);
    }
    /* a NULL err buffer is fine */
    {
        struct abx_expr *e = (struct abx_expr *)1;

        CHECK_INT(abx_expr_compile("a and", &e, NULL, 0), -1);
        CHECK(e == NULL);
    }
}

static void test_empty(void)
{
    struct abx_expr *e;
    char err[64];

    CHECK_INT(abx_expr_compile("", &e, err, sizeof(err)), 0);
    CHECK(abx_expr_is_empty(e));
    CHECK_INT(abx_expr_eval(e, truth_match, NULL), 0);
    abx_expr_free(e);
    CHECK_INT(abx_expr_compile(" \t ", &e, err, sizeof(err)), 0);
    CHECK(abx_expr_is_empty(e));
    abx_expr_free(e);
    CHECK_INT(abx_expr_compile(NULL, &e, err, sizeof(err)), 0);
    CHECK(abx_expr_is_empty(e));
    abx_expr_free(e);
    CHECK_INT(abx_expr_compile("x", &e, err, sizeof(err)), 0);
    CHECK(!abx_expr_is_empty(e));
    CHECK(!abx_expr_has_kwargs(e));
    abx_expr_free(e);
}

static void test_keywords(void)
{
    static const char *const names[] = {
        "run captures stdout", "commands", "test_03_commands.lua",
        "e2e_slow", "case[x-1]", NULL,
    };
    struct abx_expr *e;
    char err[64];

    CHECK_INT(keywords("CAPTURES", names), 1);
    CHECK_INT(keywords("test_03", names), 1);
    CHECK_INT(keywords("commands and not pty", names), 1);
    CHECK_INT(keywords("pty", names), 0);
    CHECK_INT(keywords("case[x-1]", names), 1);
    CHECK_INT(keywords("lua::commands", names), 0);  /* ids never match */
    /* a -k matcher given kwargs anyway reports a usage error */
    CHECK_INT(abx_expr_compile("zzz or slow(x=1)", &e, err, sizeof(err)), 0);
    CHECK(abx_expr_has_kwargs(e));
    CHECK_INT(abx_expr_eval(e, abx_expr_match_keywords, (void *)names), -1);
    abx_expr_free(e);
}

static void test_markers(void)
{
    static const struct abx_expr_kwarg dev_kw[] = {
        {"serial", ABX_EXPR_V_STR, "123", 0},
        {"n", ABX_EXPR_V_INT, NULL, 1},
        {"off", ABX_EXPR_V_NONE, NULL, 0},
    };
    static const struct abx_expr_mark marks[] = {
        {"e2e", {0, NULL}},
        {"device", {3, dev_kw}},
    };
    static const struct abx_expr_markset set = {2, marks};
    static const char *const plain[] = {"e2e", "e2e_slow", NULL};
    struct abx_expr *e;
    char err[64];

    CHECK_INT(markers("e2e", &set), 1);
    CHECK_INT(markers("E2E", &set), 0);  /* exact, case-sensitive */
    CHECK_INT(markers("e2", &set), 0);   /* no substring match */
    CHECK_INT(markers("e2e and not e2e_slow", &set), 1);
    CHECK_INT(markers("device", &set), 1);
    CHECK_INT(markers("device(serial='123')", &set), 1);
    CHECK_INT(markers("device(serial=\"123\")", &set), 1);
    CHECK_INT(markers("device(serial='124')", &set), 0);
    CHECK_INT(markers("device(serial=123)", &set), 0);  /* int != str */
    CHECK_INT(markers("device(n=1, serial='123')", &set), 1);
    CHECK_INT(markers("device(n=True)", &set), 1);  /* True == 1 */
    CHECK_INT(markers("device(n=-1)", &set), 0);
    CHECK_INT(markers("device(off=None)", &set), 1);
    CHECK_INT(markers("device(off=False)", &set), 0);
    CHECK_INT(markers("device(missing=1)", &set), 0);
    CHECK_INT(markers("e2e(x=1)", &set), 0);

    CHECK_INT(abx_expr_compile("e2e and not e2e_slow", &e, err, sizeof(err)),
              0);
    CHECK_INT(abx_expr_eval(e, abx_expr_match_markers, (void *)plain), 0);
    abx_expr_free(e);
    CHECK_INT(abx_expr_compile("e2e_slow(x=1) or e2e", &e, err, sizeof(err)),
              0);
    CHECK_INT(abx_expr_eval(e, abx_expr_match_markers, (void *)plain), 1);
    abx_expr_free(e);
}

/* Random token soup: every input compiles or fails with a message,
 * never crashes (run under ASan in CI). */
static void test_fuzz(void)
{
    static const char *const toks[] = {
        "a", "not", "and", "or", "(", ")", "m(", "x=", "1", "'s'", ",",
        " ", "\"", "=", "&", "b[1]", "-", "None",
    };
    static const char *const on[] = {"a", NULL};
    unsigned x = 99;
    int i, j, ok = 0, failed = 0;
    char src[256], err[128];
    struct abx_expr *e;
    struct truth t = {on, 0};

    for (i = 0; i < 20000; i++) {
        size_t pos = 0, n;

        for (j = 0; j < 12; j++) {
            x = x * 1103515245u + 12345u;
            n = strlen(toks[(x >> 16) % 18]);
            memcpy(src + pos, toks[(x >> 16) % 18], n);  /* <= 12*5 bytes */
            pos += n;
        }
        src[pos] = '\0';
        if (abx_expr_compile(src, &e, err, sizeof(err)) == 0) {
            ok++;
            CHECK(abx_expr_eval(e, truth_match, &t) >= 0);
            abx_expr_free(e);
        } else {
            failed++;
            CHECK(strncmp(err, "at column ", 10) == 0);
        }
    }
    CHECK(ok > 0 && failed > 0);
}

/* 200 000-term chains: evaluation and freeing must not recurse per term
 * (fuzzing found a stack overflow there). Last term decides each one. */
static void test_long_chains(void)
{
    static const char *const only_z[] = {"z", NULL};
    const char *ops[] = {" or ", " and "};
    size_t terms = 200000, i, k;
    struct abx_buf b;
    int want[] = {1, 0};

    for (k = 0; k < 2; k++) {
        abx_buf_init(&b, 0);
        for (i = 0; i < terms; i++) {
            if (i)
                MUST(abx_buf_appends(&b, ops[k]));
            MUST(abx_buf_appends(&b, i + 1 == terms ? "z" : (k ? "z" : "a")));
        }
        /* or-chain: a or a or ... or z is true; and-chain of z... and z
         * with z true is true too, so negate one term to get false. */
        if (k == 1)
            MUST(abx_buf_appends(&b, " and not z"));
        CHECK_INT(ev(abx_buf_cstr(&b), only_z), want[k]);
        abx_buf_free(&b);
    }
    /* mixed precedence inside one long chain */
    CHECK_INT(ev("a or b and z or c and d", only_z), 0);
    CHECK_INT(ev("a or z and z or c", only_z), 1);
    CHECK_INT(ev("a and (z or b) and z", only_z), 0);
    CHECK_INT(ev("(z or b) and (z and (z or a))", only_z), 1);
}

int main(void)
{
    test_precedence();
    test_long_chains();
    test_short_circuit();
    test_idents();
    test_errors();
    test_empty();
    test_keywords();
    test_markers();
    test_fuzz();
    return CHECK_DONE();
}
