/* pytest's -k / -m expression language: scanner, recursive-descent parser
 * building a small AST, and evaluator. Messages and columns follow
 * src/_pytest/mark/expression.py so users see the same errors. */
#include "expr.h"
#include "vec.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds recursion on hostile input like "((((...": pytest would hit
 * Python's recursion limit; we give a clear error instead. */
#define EXPR_MAX_DEPTH 256

enum tok_type {
    T_LPAREN, T_RPAREN, T_OR, T_AND, T_NOT, T_IDENT, T_EOF, T_EQUAL,
    T_STRING, T_COMMA,
};

/* Names as pytest's TokenType values, used in "expected X; got Y". */
static const char *const tok_names[] = {
    "left parenthesis", "right parenthesis", "or", "and", "not",
    "identifier", "end of input", "=", "str", ",",
};

struct tok {
    enum tok_type type;
    size_t pos;  /* 0-based byte offset */
    size_t len;
};

enum node_type { N_IDENT, N_NOT, N_AND, N_OR };

struct node {
    enum node_type type;
    struct node *a, *b;         /* children (NOT uses a) */
    char *ident;                /* N_IDENT */
    struct abx_expr_kwarg *kw;  /* N_IDENT, nkw entries */
    size_t nkw;
};

struct abx_expr {
    struct node *root;  /* NULL for the empty expression */
    int has_kwargs;
};

struct parser {
    const char *src;
    size_t len;
    struct tok cur;
    unsigned flags;
    int depth;
    int has_kwargs;
    char *err;
    size_t errlen;
    int failed;
};

static void perr(struct parser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records the first error only: it is the one pytest would raise. */
static void perr(struct parser *p, size_t pos, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (p->failed)
        return;
    p->failed = 1;
    if (!p->err || !p->errlen)
        return;
    n = snprintf(p->err, p->errlen, "at column %zu: ", pos + 1);
    if (n < 0 || (size_t)n >= p->errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

/* Python's \w is Unicode-aware; any non-ASCII byte is taken as part of a
 * word so UTF-8 test names can be typed. */
static int ident_char(unsigned char c)
{
    return isalnum(c) || c == '_' || c >= 0x80 || c == ':' || c == '+' ||
           c == '-' || c == '.' || c == '[' || c == ']' || c == '\\' ||
           c == '/';
}

/* Scans the token at or after pos into p->cur. */
static void lex_at(struct parser *p, size_t pos)
{
    const char *s = p->src;
    size_t i = pos, j;
    char c, q;
    const char *close;

    while (i < p->len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    p->cur.pos = i;
    p->cur.len = 1;
    if (i >= p->len) {
        p->cur.type = T_EOF;
        p->cur.len = 0;
        return;
    }
    c = s[i];
    switch (c) {
    case '(': p->cur.type = T_LPAREN; return;
    case ')': p->cur.type = T_RPAREN; return;
    case '=': p->cur.type = T_EQUAL; return;
    case ',': p->cur.type = T_COMMA; return;
    default: break;
    }
    if (c == '\'' || c == '"') {
        q = c;
        close = memchr(s + i + 1, q, p->len - i - 1);
        if (!close) {
            perr(p, i, "closing quote \"%c\" is missing", q);
            p->cur.type = T_EOF;
            return;
        }
        p->cur.len = (size_t)(close - (s + i)) + 1;
        if (memchr(s + i, '\\', p->cur.len)) {
            perr(p, i, "escaping not supported in marker expression");
            p->cur.type = T_EOF;
            return;
        }
        p->cur.type = T_STRING;
        return;
    }
    for (j = i; j < p->len && ident_char((unsigned char)s[j]); j++)
        ;
    if (j == i) {
        perr(p, i, "unexpected character \"%c\"", c);
        p->cur.type = T_EOF;
        return;
    }
    p->cur.len = j - i;
    p->cur.type = T_IDENT;
    if (p->cur.len == 2 && !memcmp(s + i, "or", 2))
        p->cur.type = T_OR;
    else if (p->cur.len == 3 && !memcmp(s + i, "and", 3))
        p->cur.type = T_AND;
    else if (p->cur.len == 3 && !memcmp(s + i, "not", 3))
        p->cur.type = T_NOT;
}

static void advance(struct parser *p)
{
    if (p->cur.type != T_EOF)
        lex_at(p, p->cur.pos + p->cur.len);
}

/* pytest's Scanner.accept: consumes the token if it has the type. */
static int accept(struct parser *p, enum tok_type t, struct tok *got)
{
    if (p->failed || p->cur.type != t)
        return 0;
    if (got)
        *got = p->cur;
    advance(p);
    return 1;
}

static void reject1(struct parser *p, enum tok_type t)
{
    perr(p, p->cur.pos, "expected %s; got %s", tok_names[t],
         tok_names[p->cur.type]);
}

static int expect(struct parser *p, enum tok_type t, struct tok *got)
{
    if (accept(p, t, got))
        return 1;
    reject1(p, t);
    return 0;
}

/* and/or chains are built right-deep (see binary_chain), so walking the
 * `b` side in a loop keeps recursion bounded by the nesting depth however
 * many terms a chain has. */
static void node_free(struct node *n)
{
    struct node *next;
    size_t i;

    while (n) {
        next = n->b;
        node_free(n->a);
        free(n->ident);
        for (i = 0; i < n->nkw; i++) {
            free((char *)n->kw[i].name);
            free((char *)n->kw[i].str);
        }
        free(n->kw);
        free(n);
        n = next;
    }
}

static struct node *node_new(struct parser *p, enum node_type t,
                             struct node *a, struct node *b)
{
    struct node *n = calloc(1, sizeof(*n));

    if (!n) {
        perr(p, p->cur.pos, "out of memory");
        node_free(a);
        node_free(b);
        return NULL;
    }
    n->type = t;
    n->a = a;
    n->b = b;
    return n;
}

static char *tokdup(const struct parser *p, size_t pos, size_t len)
{
    char *s = malloc(len + 1);

    if (s) {
        memcpy(s, p->src + pos, len);
        s[len] = '\0';
    }
    return s;
}

/* Python keywords cannot be keyword-argument names. */
static int py_keyword(const char *s)
{
    static const char *const kws[] = {
        "False", "None", "True", "and", "as", "assert", "async", "await",
        "break", "class", "continue", "def", "del", "elif", "else",
        "except", "finally", "for", "from", "global", "if", "import", "in",
        "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield", NULL,
    };
    size_t i;

    for (i = 0; kws[i]; i++)
        if (!strcmp(s, kws[i]))
            return 1;
    return 0;
}

static int py_identifier(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;

    if (!(isalpha(*u) || *u == '_' || *u >= 0x80))
        return 0;
    for (u++; *u; u++)
        if (!(isalnum(*u) || *u == '_' || *u >= 0x80))
            return 0;
    return 1;
}

/* Parses one NAME=VALUE into kw (fields heap-owned). */
static int single_kwarg(struct parser *p, struct abx_expr_kwarg *kw)
{
    struct tok name, val;
    char *v = NULL, *end;
    long long num;

    if (!expect(p, T_IDENT, &name))
        return -1;
    kw->name = tokdup(p, name.pos, name.len);
    if (!kw->name) {
        perr(p, name.pos, "out of memory");
        return -1;
    }
    if (!py_identifier(kw->name) || py_keyword(kw->name)) {
        perr(p, name.pos, "unexpected character/s \"%s\"", kw->name);
        return -1;
    }
    if (!expect(p, T_EQUAL, NULL))
        return -1;
    if (accept(p, T_STRING, &val)) {
        kw->type = ABX_EXPR_V_STR;
        kw->str = tokdup(p, val.pos + 1, val.len - 2);
        if (!kw->str) {
            perr(p, val.pos, "out of memory");
            return -1;
        }
        return 0;
    }
    if (!expect(p, T_IDENT, &val))
        return -1;
    v = tokdup(p, val.pos, val.len);
    if (!v) {
        perr(p, val.pos, "out of memory");
        return -1;
    }
    if (!strcmp(v, "True") || !strcmp(v, "False")) {
        kw->type = ABX_EXPR_V_BOOL;
        kw->num = v[0] == 'T';
    } else if (!strcmp(v, "None")) {
        kw->type = ABX_EXPR_V_NONE;
    } else {
        /* Only "digits" or "-digits": no '+', no blanks, which strtoll
         * would accept, so check the shape first. */
        const char *d = v[0] == '-' ? v + 1 : v;
        size_t k;
        int ok = *d != '\0';

        for (k = 0; ok && d[k]; k++)
            ok = isdigit((unsigned char)d[k]) != 0;
        errno = 0;
        num = ok ? strtoll(v, &end, 10) : 0;
        if (!ok || errno || *end) {
            perr(p, val.pos, "unexpected character/s \"%s\"", v);
            free(v);
            return -1;
        }
        kw->type = ABX_EXPR_V_INT;
        kw->num = num;
    }
    free(v);
    return 0;
}

static int call_args(struct parser *p, struct node *n, size_t lparen_pos)
{
    size_t cap = 0;

    if (p->flags & ABX_EXPR_NO_KWARGS) {
        perr(p, lparen_pos,
             "Keyword expressions do not support call parameters.");
        return -1;
    }
    p->has_kwargs = 1;
    do {
        if (ABX_VEC_RESERVE(n->kw, cap, n->nkw + 1) != 0) {
            perr(p, p->cur.pos, "out of memory");
            return -1;
        }
        memset(&n->kw[n->nkw], 0, sizeof(n->kw[0]));
        n->nkw++;  /* counted before filling so node_free frees it */
        if (single_kwarg(p, &n->kw[n->nkw - 1]))
            return -1;
    } while (accept(p, T_COMMA, NULL));
    return expect(p, T_RPAREN, NULL) ? 0 : -1;
}

static struct node *or_expr(struct parser *p);

static struct node *not_expr(struct parser *p)
{
    struct node *n, *child;
    struct tok t;

    if (++p->depth > EXPR_MAX_DEPTH) {
        perr(p, p->cur.pos, "expression nested too deeply (over %d levels)",
             EXPR_MAX_DEPTH);
        return NULL;
    }
    n = NULL;
    if (accept(p, T_NOT, NULL)) {
        child = not_expr(p);
        if (child)
            n = node_new(p, N_NOT, child, NULL);
    } else if (accept(p, T_LPAREN, NULL)) {
        n = or_expr(p);
        if (n && !expect(p, T_RPAREN, NULL)) {
            node_free(n);
            n = NULL;
        }
    } else if (accept(p, T_IDENT, &t)) {
        n = node_new(p, N_IDENT, NULL, NULL);
        if (n && !(n->ident = tokdup(p, t.pos, t.len)))
            perr(p, t.pos, "out of memory");
        if (n && !p->failed && p->cur.type == T_LPAREN) {
            size_t lp = p->cur.pos;

            advance(p);
            call_args(p, n, lp);
        }
        if (p->failed) {
            node_free(n);
            n = NULL;
        }
    } else if (!p->failed) {
        perr(p, p->cur.pos,
             "expected not OR left parenthesis OR identifier; got %s",
             tok_names[p->cur.type]);
    }
    p->depth--;
    return n;
}

/* operand { op operand }, built right-deep: "a and b and c" becomes
 * and(a, and(b, c)). and/or are associative and evaluation still goes
 * left to right, but eval_node and node_free can then follow the chain in
 * a loop instead of recursing once per term (a 100 000-term -k would
 * otherwise overflow the stack). */
static struct node *binary_chain(struct parser *p, enum tok_type op,
                                 enum node_type type,
                                 struct node *(*operand)(struct parser *))
{
    struct node *first = operand(p), *root, *tail, *rhs, *link;

    if (!first || !accept(p, op, NULL))
        return first;
    root = tail = node_new(p, type, first, NULL);
    while (tail) {
        if (!(rhs = operand(p))) {
            node_free(root);
            return NULL;
        }
        if (!accept(p, op, NULL)) {
            tail->b = rhs;
            return root;
        }
        if (!(link = node_new(p, type, rhs, NULL))) {
            node_free(root);
            return NULL;
        }
        tail->b = link;
        tail = link;
    }
    return NULL;  /* node_new failed for root; it freed first */
}

static struct node *and_expr(struct parser *p)
{
    return binary_chain(p, T_AND, N_AND, not_expr);
}

static struct node *or_expr(struct parser *p)
{
    return binary_chain(p, T_OR, N_OR, and_expr);
}

int abx_expr_compile_ex(const char *src, unsigned flags,
                        struct abx_expr **out, char *err, size_t errlen)
{
    struct parser p;
    struct abx_expr *e;
    struct node *root = NULL;

    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    memset(&p, 0, sizeof(p));
    p.src = src ? src : "";
    p.len = strlen(p.src);
    p.flags = flags;
    p.err = err;
    p.errlen = errlen;
    lex_at(&p, 0);
    if (!p.failed && p.cur.type != T_EOF) {
        root = or_expr(&p);
        if (root && !p.failed && p.cur.type != T_EOF)
            reject1(&p, T_EOF);
    }
    if (p.failed) {
        node_free(root);
        return -1;
    }
    e = calloc(1, sizeof(*e));
    if (!e) {
        node_free(root);
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        return -1;
    }
    e->root = root;
    e->has_kwargs = p.has_kwargs;
    *out = e;
    return 0;
}

int abx_expr_compile(const char *src, struct abx_expr **out, char *err,
                     size_t errlen)
{
    return abx_expr_compile_ex(src, 0, out, err, errlen);
}

void abx_expr_free(struct abx_expr *e)
{
    if (!e)
        return;
    node_free(e->root);
    free(e);
}

int abx_expr_is_empty(const struct abx_expr *e)
{
    return !e || !e->root;
}

int abx_expr_has_kwargs(const struct abx_expr *e)
{
    return e && e->has_kwargs;
}

/* Short-circuits like Python's `and`/`or`, so a matcher is asked exactly
 * what pytest would ask. */
static int eval_node(const struct node *n, abx_expr_match_fn match,
                     void *ctx)
{
    struct abx_expr_kwargs kw;
    int r;

    switch (n->type) {
    case N_IDENT:
        kw.n = n->nkw;
        kw.items = n->kw;
        r = match(ctx, n->ident, &kw);
        return r < 0 ? -1 : r != 0;
    case N_NOT:
        r = eval_node(n->a, match, ctx);
        return r < 0 ? -1 : !r;
    case N_AND:
    case N_OR:
        /* Follow a right-deep chain of the same operator iteratively. */
        for (;;) {
            r = eval_node(n->a, match, ctx);
            if (n->type == N_AND ? r != 1 : r != 0)
                return r;
            if (n->b->type != n->type)
                return eval_node(n->b, match, ctx);
            n = n->b;
        }
    }
    return -1;
}

int abx_expr_eval(const struct abx_expr *e, abx_expr_match_fn match,
                  void *ctx)
{
    if (abx_expr_is_empty(e))
        return 0;
    return eval_node(e->root, match, ctx);
}

/* ASCII case-insensitive strstr (pytest lowercases both sides). */
static int icontains(const char *hay, const char *needle)
{
    size_t hn = strlen(hay), nn = strlen(needle), i, j;

    if (nn > hn)
        return 0;
    for (i = 0; i + nn <= hn; i++) {
        for (j = 0; j < nn; j++)
            if (tolower((unsigned char)hay[i + j]) !=
                tolower((unsigned char)needle[j]))
                break;
        if (j == nn)
            return 1;
    }
    return 0;
}

int abx_expr_match_keywords(void *ctx, const char *ident,
                            const struct abx_expr_kwargs *kw)
{
    const char *const *names = ctx;

    if (kw && kw->n)
        return -1;
    for (; names && *names; names++)
        if (icontains(*names, ident))
            return 1;
    return 0;
}

int abx_expr_match_markers(void *ctx, const char *ident,
                           const struct abx_expr_kwargs *kw)
{
    const char *const *names = ctx;

    if (kw && kw->n)
        return 0;
    for (; names && *names; names++)
        if (!strcmp(*names, ident))
            return 1;
    return 0;
}

/* Python equality of two kwarg values (bool is an int subclass). */
static int value_eq(const struct abx_expr_kwarg *a,
                    const struct abx_expr_kwarg *b)
{
    int anum = a->type == ABX_EXPR_V_INT || a->type == ABX_EXPR_V_BOOL;
    int bnum = b->type == ABX_EXPR_V_INT || b->type == ABX_EXPR_V_BOOL;

    if (anum && bnum)
        return a->num == b->num;
    if (a->type != b->type)
        return 0;
    if (a->type == ABX_EXPR_V_NONE)
        return 1;
    return a->str && b->str && !strcmp(a->str, b->str);
}

static int mark_has_all(const struct abx_expr_mark *m,
                        const struct abx_expr_kwargs *want)
{
    size_t i, j;

    for (i = 0; i < want->n; i++) {
        for (j = 0; j < m->kw.n; j++)
            if (!strcmp(m->kw.items[j].name, want->items[i].name))
                break;
        if (j == m->kw.n || !value_eq(&m->kw.items[j], &want->items[i]))
            return 0;
    }
    return 1;
}

int abx_expr_match_markset(void *ctx, const char *ident,
                           const struct abx_expr_kwargs *kw)
{
    const struct abx_expr_markset *set = ctx;
    static const struct abx_expr_kwargs none = {0, NULL};
    size_t i;

    if (!kw)
        kw = &none;
    for (i = 0; set && i < set->n; i++)
        if (!strcmp(set->marks[i].name, ident) &&
            mark_has_all(&set->marks[i], kw))
            return 1;
    return 0;
}
