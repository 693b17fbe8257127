/* envd versions and the features they gate (envd_version.h). The
 * grammar and the ordering are compare-versions 6.1.1's (the JS SDK
 * 2.31.0 locks that release): [v^~<>=]* major[.minor[.patch[.n]
 * [-pre][+build]]], case-insensitive; a segment is digits or a
 * wildcard x, X or *. */
#include "envd_version.h"

#include <stdio.h>
#include <string.h>

#define SEG_CAP 1000000000000000LL  /* beyond: compared as equal (absurd) */

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int is_ident_char(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           c == '-';
}

/* One main segment at *p: digits, or (unless major) x / X / *. */
static int parse_seg(const char **p, int major, long *out)
{
    const char *s = *p;
    long long v = 0;

    if (!major && (*s == 'x' || *s == 'X' || *s == '*')) {
        *out = ABX_ENVD_VER_ANY;
        *p = s + 1;
        return 0;
    }
    if (!is_digit(*s))
        return -1;
    for (; is_digit(*s); s++)
        if (v < SEG_CAP)
            v = v * 10 + (*s - '0');
    *out = (long)(v < SEG_CAP ? v : SEG_CAP);
    *p = s;
    return 0;
}

/* Dot-separated identifiers of [0-9A-Za-z-]+ (pre-release, build). */
static int parse_idents(const char **p)
{
    const char *s = *p;

    for (;;) {
        if (!is_ident_char(*s))
            return -1;
        while (is_ident_char(*s))
            s++;
        if (*s != '.')
            break;
        s++;
    }
    *p = s;
    return 0;
}

int abx_envd_version_parse(const char *s, struct abx_envd_version *v)
{
    const char *p = s, *pre = NULL;
    size_t n;

    memset(v, 0, sizeof *v);
    if (!s || !s[0])
        return 0;   /* unknown: state stays UNKNOWN */
    snprintf(v->text, sizeof v->text, "%s", s);
    v->state = ABX_ENVD_VER_BAD;
    while (*p && strchr("vV^~<>=", *p))
        p++;
    if (parse_seg(&p, 1, &v->seg[0]))
        return -1;
    if (*p == '.') {
        p++;
        if (parse_seg(&p, 0, &v->seg[1]))
            return -1;
        /* Pre-release and build only come after a patch. */
        if (*p == '.') {
            p++;
            if (parse_seg(&p, 0, &v->seg[2]))
                return -1;
            if (*p == '.') {
                p++;
                if (parse_seg(&p, 0, &v->seg[3]))
                    return -1;
            }
            if (*p == '-') {
                pre = ++p;
                if (parse_idents(&p))
                    return -1;
                n = (size_t)(p - pre);
                if (n >= sizeof v->pre)
                    n = sizeof v->pre - 1;
                memcpy(v->pre, pre, n);
                v->pre[n] = '\0';
            }
            if (*p == '+') {
                p++;
                if (parse_idents(&p))
                    return -1;
            }
        }
    }
    if (*p)
        return -1;
    v->state = ABX_ENVD_VER_OK;
    return 0;
}

/* A pre-release identifier as JS parseInt sees it: a number when it
 * starts with digits (an optional '-' first), else the string itself. */
struct ident {
    int is_num;
    long long num;
    char str[32];
};

static void ident_of(const char *s, size_t len, struct ident *id)
{
    size_t i = 0;
    int neg = 0;
    long long v = 0;

    if (len >= sizeof id->str)
        len = sizeof id->str - 1;
    memcpy(id->str, s, len);
    id->str[len] = '\0';
    id->is_num = 0;
    if (i < len && s[i] == '-') {
        neg = 1;
        i++;
    }
    if (i >= len || !is_digit(s[i]))
        return;
    for (; i < len && is_digit(s[i]); i++)
        if (v < SEG_CAP)
            v = v * 10 + (s[i] - '0');
    id->is_num = 1;
    id->num = neg ? -v : v;
}

static int is_wild(const struct ident *id)
{
    return !id->is_num && (strcmp(id->str, "x") == 0 ||
                           strcmp(id->str, "X") == 0 ||
                           strcmp(id->str, "*") == 0);
}

/* compareStrings of compare-versions: numbers numerically; a number
 * against a string both as strings. */
static int ident_cmp(const struct ident *a, const struct ident *b)
{
    char as[32], bs[32];

    if (is_wild(a) || is_wild(b))
        return 0;
    if (a->is_num && b->is_num)
        return a->num > b->num ? 1 : a->num < b->num ? -1 : 0;
    if (a->is_num == b->is_num)
        return strcmp(a->str, b->str) > 0 ? 1
               : strcmp(a->str, b->str) < 0 ? -1 : 0;
    snprintf(as, sizeof as, "%s", a->str);
    snprintf(bs, sizeof bs, "%s", b->str);
    if (a->is_num)
        snprintf(as, sizeof as, "%lld", a->num);
    else
        snprintf(bs, sizeof bs, "%lld", b->num);
    return strcmp(as, bs) > 0 ? 1 : strcmp(as, bs) < 0 ? -1 : 0;
}

/* The next dot-separated identifier of *p ("0" once none is left, as
 * compareSegments pads the shorter list). */
static void next_ident(const char **p, struct ident *id)
{
    const char *s = *p, *dot;
    size_t len;

    if (!s) {
        ident_of("0", 1, id);
        return;
    }
    dot = strchr(s, '.');
    len = dot ? (size_t)(dot - s) : strlen(s);
    ident_of(s, len, id);
    *p = dot ? dot + 1 : NULL;
}

int abx_envd_version_cmp(const struct abx_envd_version *a,
                         const struct abx_envd_version *b)
{
    const char *pa, *pb;
    struct ident ia, ib;
    int i, r;

    if (a->state != ABX_ENVD_VER_OK || b->state != ABX_ENVD_VER_OK)
        return 0;
    for (i = 0; i < 4; i++) {
        if (a->seg[i] == ABX_ENVD_VER_ANY || b->seg[i] == ABX_ENVD_VER_ANY)
            continue;
        if (a->seg[i] != b->seg[i])
            return a->seg[i] > b->seg[i] ? 1 : -1;
    }
    if (a->pre[0] && b->pre[0]) {
        pa = a->pre;
        pb = b->pre;
        while (pa || pb) {
            next_ident(&pa, &ia);
            next_ident(&pb, &ib);
            if ((r = ident_cmp(&ia, &ib)) != 0)
                return r;
        }
        return 0;
    }
    if (a->pre[0] || b->pre[0])
        return a->pre[0] ? -1 : 1;
    return 0;
}

/* ---- gates ------------------------------------------------------------ */

struct gate {
    const char *min;
    const char *name;           /* the feature, as a caller names it */
    enum abx_errclass cls;      /* what the SDK raises; OK = no error */
    const char *hint;           /* the SDK's advice */
};

static const struct gate gates[ABX_ENVD_FEATURE_COUNT] = {
    [ABX_ENVD_ANY_USE] = {"0.1.0", "this client", ABX_E_TEMPLATE,
        "You need to update the template to use the new SDK."},
    [ABX_ENVD_RECURSIVE_WATCH] = {"0.1.4", "recursive watch", ABX_E_TEMPLATE,
        "You need to update the template to use recursive watching."},
    [ABX_ENVD_METRICS] = {"0.1.5", "metrics", ABX_E_TEMPLATE,
        "You need to update the template to use the new SDK."},
    [ABX_ENVD_DISK_METRICS] = {"0.2.4", "disk metrics", ABX_E_OK, ""},
    [ABX_ENVD_STDIN_CHOICE] = {"0.3.0", "stdin=false", ABX_E_SANDBOX,
        "stdin is always on there. Please rebuild your template if you "
        "need this feature."},
    [ABX_ENVD_DEFAULT_USER] = {"0.4.0", "a default user", ABX_E_OK, ""},
    [ABX_ENVD_CLOSE_STDIN] = {"0.5.2", "close_stdin", ABX_E_SANDBOX,
        "Please rebuild your template to pick up the latest sandbox "
        "version."},
    [ABX_ENVD_OCTET_UPLOAD] = {"0.5.7", "octet-stream upload", ABX_E_OK, ""},
    [ABX_ENVD_FILE_METADATA] = {"0.6.2", "file metadata", ABX_E_TEMPLATE,
        "File metadata requires envd 0.6.2 or later."},
    [ABX_ENVD_WATCH_ENTRY] = {"0.6.3", "include_entry", ABX_E_TEMPLATE,
        "You need to update the template to include entry info in watch "
        "events."},
    [ABX_ENVD_WATCH_NET_MOUNTS] = {"0.6.4", "allow_network_mounts",
        ABX_E_TEMPLATE, "You need to update the template to watch "
        "directories on network mounts."},
};

const char *abx_envd_feature_min(enum abx_envd_feature f)
{
    return (unsigned)f < ABX_ENVD_FEATURE_COUNT ? gates[f].min : "";
}

int abx_envd_has(const struct abx_envd_version *v, enum abx_envd_feature f,
                 struct abx_err *err)
{
    struct abx_envd_version min;

    if ((unsigned)f >= ABX_ENVD_FEATURE_COUNT) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "unknown envd feature %d",
                    (int)f);
        return -1;
    }
    if (v->state == ABX_ENVD_VER_UNKNOWN)
        return 1;
    if (v->state != ABX_ENVD_VER_OK) {
        abx_err_set(err, ABX_E_PROTOCOL, 0, "",
                    "the sandbox's envd version '%s' is not a version: "
                    "cannot tell whether it supports %s (envd %s or later)",
                    v->text, gates[f].name, gates[f].min);
        return -1;
    }
    abx_envd_version_parse(gates[f].min, &min);
    return abx_envd_version_cmp(v, &min) >= 0;
}

int abx_envd_require(const struct abx_envd_version *v,
                     enum abx_envd_feature f, struct abx_err *err)
{
    int r = abx_envd_has(v, f, err);

    if (r != 0)
        return r > 0 ? 0 : -1;
    abx_err_set(err, gates[f].cls != ABX_E_OK ? gates[f].cls : ABX_E_SANDBOX,
                0, "", "%s needs envd %s or later; the sandbox's envd is "
                "%s. %s", gates[f].name, gates[f].min, v->text,
                gates[f].hint);
    return -1;
}

int abx_envd_default_user(const struct abx_envd_version *v,
                          const char **user, struct abx_err *err)
{
    int r;

    if (*user)
        return 0;   /* the SDK compares only when the caller gave none */
    r = abx_envd_has(v, ABX_ENVD_DEFAULT_USER, err);
    if (r < 0)
        return -1;
    if (r == 0)
        *user = "user";
    return 0;
}
