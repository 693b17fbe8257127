/* .env parsing and the environment-first configuration layers. Error
 * messages name the file, the line and the problem, never the line's
 * text: a malformed line may well hold a credential. */
#include "dotenv.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "vec.h"

#define DOTENV_MAX_SIZE ((size_t)1 << 20)

void abx_env_list_init(struct abx_env_list *l)
{
    memset(l, 0, sizeof(*l));
}

void abx_env_list_free(struct abx_env_list *l)
{
    size_t i;

    for (i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].value);
    }
    free(l->items);
    abx_env_list_init(l);
}

const char *abx_env_list_get(const struct abx_env_list *l, const char *key)
{
    size_t i;

    for (i = l->n; i-- > 0;)
        if (!strcmp(l->items[i].key, key))
            return l->items[i].value;
    return NULL;
}

/* Takes ownership of key and value (frees them on failure). */
static int list_push(struct abx_env_list *l, char *key, char *value,
                     int line)
{
    if (ABX_VEC_RESERVE(l->items, l->cap, l->n + 1) != 0) {
        free(key);
        free(value);
        return -1;
    }
    l->items[l->n].key = key;
    l->items[l->n].value = value;
    l->items[l->n].line = line;
    l->n++;
    return 0;
}

static int seterr(char *err, size_t errlen, const char *name, int line,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int seterr(char *err, size_t errlen, const char *name, int line,
                  const char *fmt, ...)
{
    va_list ap;
    int n;

    if (!err || !errlen)
        return -1;
    n = snprintf(err, errlen, "%s:%d: ", name, line);
    if (n >= 0 && (size_t)n < errlen) {
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int blank(char c)
{
    return c == ' ' || c == '\t';
}

static int valid_key(const char *k, size_t n)
{
    size_t i;

    if (n == 0 || !(isalpha((unsigned char)k[0]) || k[0] == '_'))
        return 0;
    for (i = 1; i < n; i++)
        if (!(isalnum((unsigned char)k[i]) || k[i] == '_' || k[i] == '.' ||
              k[i] == '-'))
            return 0;
    return 1;
}

/* After a closing quote only blanks and an optional comment may follow. */
static int only_trailer(const char *p, const char *end)
{
    while (p < end && blank(*p))
        p++;
    return p == end || *p == '#';
}

/* Parses the value part p[0..end) into a new string, or returns NULL and
 * a reason in *why (NULL reason = out of memory). */
static char *parse_value(const char *p, const char *end, const char **why)
{
    const char *q;
    char *v, *o;

    *why = NULL;
    if (p < end && *p == '\'') {
        q = memchr(p + 1, '\'', (size_t)(end - p - 1));
        if (!q) {
            *why = "unterminated single quote";
            return NULL;
        }
        if (!only_trailer(q + 1, end)) {
            *why = "unexpected text after closing quote";
            return NULL;
        }
        v = malloc((size_t)(q - p));
        if (v) {
            memcpy(v, p + 1, (size_t)(q - p - 1));
            v[q - p - 1] = '\0';
        }
        return v;
    }
    if (p < end && *p == '"') {
        v = o = malloc((size_t)(end - p));
        if (!v)
            return NULL;
        for (q = p + 1; q < end && *q != '"'; q++) {
            if (*q == '\\' && q + 1 < end) {
                q++;
                switch (*q) {
                case 'n': *o++ = '\n'; break;
                case 't': *o++ = '\t'; break;
                case 'r': *o++ = '\r'; break;
                case '"': *o++ = '"'; break;
                case '\\': *o++ = '\\'; break;
                default: *o++ = '\\'; *o++ = *q; break;
                }
            } else {
                *o++ = *q;
            }
        }
        if (q >= end) {
            free(v);
            *why = "unterminated double quote";
            return NULL;
        }
        if (!only_trailer(q + 1, end)) {
            free(v);
            *why = "unexpected text after closing quote";
            return NULL;
        }
        *o = '\0';
        return v;
    }
    /* Unquoted: a '#' after a blank starts a comment; trailing blanks go. */
    for (q = p; q < end; q++)
        if (*q == '#' && q > p && blank(q[-1]))
            break;
    while (q > p && blank(q[-1]))
        q--;
    v = malloc((size_t)(q - p) + 1);
    if (v) {
        memcpy(v, p, (size_t)(q - p));
        v[q - p] = '\0';
    }
    return v;
}

static int parse_line(const char *name, int lineno, const char *p,
                      const char *end, struct abx_env_list *out, char *err,
                      size_t errlen)
{
    const char *eq, *kstart, *kend, *why;
    char *key, *value;

    while (p < end && blank(*p))
        p++;
    if (p == end || *p == '#')
        return 0;
    if (end - p > 7 && !memcmp(p, "export", 6) && blank(p[6])) {
        p += 7;
        while (p < end && blank(*p))
            p++;
    }
    kstart = p;
    eq = memchr(p, '=', (size_t)(end - p));
    if (!eq)
        return seterr(err, errlen, name, lineno,
                      "missing '=' (expected KEY=VALUE)");
    kend = eq;
    while (kend > kstart && blank(kend[-1]))
        kend--;
    if (!valid_key(kstart, (size_t)(kend - kstart)))
        return seterr(err, errlen, name, lineno,
                      "invalid key (must match [A-Za-z_][A-Za-z0-9_.-]*)");
    p = eq + 1;
    while (p < end && blank(*p))
        p++;
    value = parse_value(p, end, &why);
    if (!value)
        return seterr(err, errlen, name, lineno, "%s",
                      why ? why : "out of memory");
    key = strndup(kstart, (size_t)(kend - kstart));
    if (!key || list_push(out, key, value, lineno)) {
        if (!key)
            free(value);
        return seterr(err, errlen, name, lineno, "out of memory");
    }
    return 0;
}

int abx_dotenv_parse(const char *name, const char *text, size_t len,
                     struct abx_env_list *out, char *err, size_t errlen)
{
    const char *p = text, *end = text + len, *nl, *lend;
    int lineno = 0;

    if (err && errlen)
        err[0] = '\0';
    if (!name)
        name = ".env";
    while (p < end) {
        lineno++;
        nl = memchr(p, '\n', (size_t)(end - p));
        lend = nl ? nl : end;
        if (memchr(p, '\0', (size_t)(lend - p)))
            return seterr(err, errlen, name, lineno, "NUL byte in line");
        /* CRLF files from Windows editors. */
        if (lend > p && lend[-1] == '\r')
            lend--;
        if (parse_line(name, lineno, p, lend, out, err, errlen))
            return -1;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

int abx_dotenv_load(const char *path, struct abx_env_list *out, char *err,
                    size_t errlen)
{
    char *data = NULL;
    size_t len = 0;
    int rc;

    rc = abx_read_file(path, DOTENV_MAX_SIZE, &data, &len, err, errlen);
    if (rc != 0)
        return rc;
    rc = abx_dotenv_parse(path, data, len, out, err, errlen);
    free(data);
    return rc;
}

/* ---- configuration layers -------------------------------------------- */

struct layer {
    char *path;
    struct abx_env_list vars;
};

struct abx_layers {
    struct layer *layers;
    size_t n;
};

void abx_layers_free(struct abx_layers *c)
{
    size_t i;

    if (!c)
        return;
    for (i = 0; i < c->n; i++) {
        free(c->layers[i].path);
        abx_env_list_free(&c->layers[i].vars);
    }
    free(c->layers);
    free(c);
}

int abx_layers_load(struct abx_layers **out, const char *const *paths,
                    size_t n, char *err, size_t errlen)
{
    struct abx_layers *c;
    struct layer *l;
    size_t i;
    int rc;

    *out = NULL;
    c = calloc(1, sizeof(*c));
    if (!c || (n && !(c->layers = calloc(n, sizeof(*c->layers)))))
        goto oom;
    for (i = 0; i < n; i++) {
        l = &c->layers[c->n];
        abx_env_list_init(&l->vars);
        rc = abx_dotenv_load(paths[i], &l->vars, err, errlen);
        if (rc < 0) {
            abx_env_list_free(&l->vars);
            abx_layers_free(c);
            return -1;
        }
        if (rc == 1)
            continue;  /* missing file: not an error */
        l->path = strdup(paths[i]);
        c->n++;
        if (!l->path)
            goto oom;
    }
    *out = c;
    return 0;
oom:
    abx_layers_free(c);
    if (err && errlen)
        snprintf(err, errlen, "out of memory loading configuration");
    return -1;
}

/* Value of name in layer i (-1 = environment), empty counting as unset. */
static const char *layer_get(const struct abx_layers *c, long i,
                             const char *name, const char **source)
{
    const char *v;

    if (i < 0) {
        v = getenv(name);
        if (source)
            *source = "environment";
    } else {
        v = abx_env_list_get(&c->layers[i].vars, name);
        if (source)
            *source = c->layers[i].path;
    }
    return v && *v ? v : NULL;
}

const char *abx_layers_get_any(const struct abx_layers *c,
                               const char *const *names, const char **which,
                               const char **source)
{
    long i, nl = c ? (long)c->n : 0;
    const char *const *nm;
    const char *v, *src;

    for (i = -1; i < nl; i++)
        for (nm = names; *nm; nm++)
            if ((v = layer_get(c, i, *nm, &src))) {
                if (which)
                    *which = *nm;
                if (source)
                    *source = src;
                return v;
            }
    if (which)
        *which = NULL;
    if (source)
        *source = NULL;
    return NULL;
}

const char *abx_layers_get(const struct abx_layers *c, const char *name,
                           const char **source)
{
    const char *names[2] = {name, NULL};

    return abx_layers_get_any(c, names, NULL, source);
}

int abx_layers_get_long(const struct abx_layers *c, const char *name,
                        long def, long min, long max, long *out, char *err,
                        size_t errlen)
{
    const char *v, *src;
    char *end;
    long x;

    v = abx_layers_get(c, name, &src);
    if (!v) {
        *out = def;
        return 0;
    }
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > max) {
        if (err && errlen)
            snprintf(err, errlen,
                     "%s (from %s) must be an integer in [%ld, %ld]", name,
                     src, min, max);
        return -1;
    }
    *out = x;
    return 0;
}
