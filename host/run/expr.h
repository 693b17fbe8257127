/* pytest's -k / -m expression language (src/_pytest/mark/expression.py),
 * restated in C.
 *
 *   expression := [ or_expr ] END
 *   or_expr    := and_expr { "or" and_expr }
 *   and_expr   := not_expr { "and" not_expr }
 *   not_expr   := "not" not_expr | "(" or_expr ")" | IDENT [ call_args ]
 *   IDENT      := 1+ of: letters, digits, '_', ':' '+' '-' '.' '[' ']' '\' '/'
 *                 (also any non-ASCII byte, as Python's \w is Unicode-aware)
 *   call_args  := "(" NAME "=" VALUE { "," NAME "=" VALUE } ")"
 *   VALUE      := 'str' | "str" (no backslash) | [-]digits
 *                 | True | False | None
 *
 * Compile once, evaluate once per test with a matcher callback. The same
 * compiled expression may be evaluated from several threads at once (it is
 * never modified after compilation). */
#ifndef ABX_EXPR_H
#define ABX_EXPR_H

#include <stddef.h>

struct abx_expr;

enum abx_expr_vtype {
    ABX_EXPR_V_STR,   /* str holds the text (quotes removed) */
    ABX_EXPR_V_INT,   /* num holds the value */
    ABX_EXPR_V_BOOL,  /* num is 0 or 1 */
    ABX_EXPR_V_NONE,
};

struct abx_expr_kwarg {
    const char *name;
    enum abx_expr_vtype type;
    const char *str;  /* ABX_EXPR_V_STR only, else NULL */
    long long num;    /* ABX_EXPR_V_INT / ABX_EXPR_V_BOOL */
};

/* Keyword arguments of one identifier, e.g. device(serial='123').
 * n == 0 when the identifier had no call_args. */
struct abx_expr_kwargs {
    size_t n;
    const struct abx_expr_kwarg *items;
};

/* Returns 1 if ident matches the item, 0 if not, -1 on a usage error
 * (e.g. kwargs given to a matcher that does not support them); -1 makes
 * abx_expr_eval return -1. kw is never NULL. */
typedef int (*abx_expr_match_fn)(void *ctx, const char *ident,
                                 const struct abx_expr_kwargs *kw);

/* Flags for abx_expr_compile_ex. */
#define ABX_EXPR_NO_KWARGS 0x1  /* -k: reject call_args at compile time with
                                   "Keyword expressions do not support call
                                   parameters." */

/* Parses src. On success returns 0 and *out (free with abx_expr_free).
 * On a syntax error returns -1, *out = NULL, and err gets pytest's message
 * shape, e.g. "at column 5: expected not OR left parenthesis OR identifier;
 * got end of input" (columns are 1-based byte offsets). An empty or
 * all-blank src compiles to an "empty" expression (abx_expr_is_empty). */
int abx_expr_compile(const char *src, struct abx_expr **out, char *err,
                     size_t errlen);
int abx_expr_compile_ex(const char *src, unsigned flags,
                        struct abx_expr **out, char *err, size_t errlen);

void abx_expr_free(struct abx_expr *e);

/* True for an expression compiled from "" / blanks: it means "no filter"
 * to the caller (abx_expr_eval on it returns 0, as pytest's does). */
int abx_expr_is_empty(const struct abx_expr *e);

/* True if any identifier carries call_args. */
int abx_expr_has_kwargs(const struct abx_expr *e);

/* Evaluates e: 1 true, 0 false, -1 if the matcher reported an error. */
int abx_expr_eval(const struct abx_expr *e, abx_expr_match_fn match,
                  void *ctx);

/* -k matcher. ctx is a NULL-terminated array of names (const char *const *):
 * the test name, its groups, its file name, its markers. An identifier
 * matches if it is a case-insensitive (ASCII) substring of any name.
 * Kwargs -> -1. */
int abx_expr_match_keywords(void *ctx, const char *ident,
                            const struct abx_expr_kwargs *kw);

/* -m matcher over plain names. ctx is a NULL-terminated array of marker
 * names; an identifier matches a name exactly (case-sensitive). An
 * identifier with kwargs never matches a plain name (it has no kwargs). */
int abx_expr_match_markers(void *ctx, const char *ident,
                           const struct abx_expr_kwargs *kw);

/* -m matcher over markers that carry keyword arguments. ctx is a
 * struct abx_expr_markset *. An identifier matches if some marker has the
 * same name and every kwarg of the identifier is present on the marker
 * with an equal value (Python equality: True == 1, False == 0). */
struct abx_expr_mark {
    const char *name;
    struct abx_expr_kwargs kw;
};
struct abx_expr_markset {
    size_t n;
    const struct abx_expr_mark *marks;
};
int abx_expr_match_markset(void *ctx, const char *ident,
                           const struct abx_expr_kwargs *kw);

#endif
