/* diff-records: how two traces of one test differ (docs/reports.md
 * "Comparing two platforms"). Only what a contract can name is compared:
 * a reply's status, media type, X-Next-Token and body shape (keys and
 * types, never values); whether a call returned or raised, and its error
 * class; the envd version of its sandboxes; the test's outcome. Ids,
 * times, query values and text are left alone: they differ on every run. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

#define KEY_MAX 300

static cJSON *diff_add(cJSON *out, const char *kind, const char *at, const char *field,
                       cJSON *a, cJSON *b)
{
    cJSON *d = cJSON_CreateObject();
    if (d == NULL) {
        cJSON_Delete(a);
        cJSON_Delete(b);
        return NULL;
    }
    cJSON_AddStringToObject(d, "kind", kind);
    cJSON_AddStringToObject(d, "at", at);
    cJSON_AddStringToObject(d, "field", field);
    cJSON_AddItemToObject(d, "a", a ? a : cJSON_CreateNull());
    cJSON_AddItemToObject(d, "b", b ? b : cJSON_CreateNull());
    cJSON_AddItemToArray(out, d);
    return d;
}

static const char *sget(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A path segment that is an id (a sandbox's, a template's, a process's):
 * 8+ characters of letters, digits, - and _, with a digit in it, or 16+
 * without one (an E2B id may have none); no word of a route is that long. */
static int is_id(const char *s, size_t n)
{
    int digit = 0;
    if (n < 8)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_')
            return 0;
        digit |= isdigit((unsigned char)s[i]) != 0;
    }
    return digit || n >= 16;
}

/* "GET /sandboxes/{id}/timeout?k1&k2": the method, the path with ids as
 * {id}, the query's names without values, in their order. */
void abx_diffrec_key(const char *method, const char *url, char *out, size_t outlen)
{
    const char *p = strstr(url, "://");
    size_t o = (size_t)snprintf(out, outlen, "%s ", method ? method : "?");
    p = p ? strchr(p + 3, '/') : url;
    if (p == NULL)
        p = "/";
    while (*p && *p != '?' && o + 1 < outlen) {
        size_t n = strcspn(p + 1, "/?");
        if (*p == '/' && is_id(p + 1, n)) {
            o += (size_t)snprintf(out + o, outlen - o, "/{id}");
            p += n + 1;
        } else {
            out[o++] = *p++;
        }
    }
    if (o >= outlen)
        o = outlen - 1;
    for (int first = 1; *p == '?' || *p == '&';) {
        size_t n = strcspn(p + 1, "=&");
        if (o + n + 2 < outlen) {
            out[o++] = first ? '?' : '&';
            memcpy(out + o, p + 1, n);
            o += n;
        }
        first = 0;
        p += 1 + strcspn(p + 1, "&");
    }
    out[o < outlen ? o : outlen - 1] = '\0';
}

/* ---- body shapes ------------------------------------------------------ */
static cJSON *shape_of(const cJSON *v);

/* Objects whose keys are data, not a contract: a sandbox's metadata, a
 * command's or a template's environment. Their shape is "map". */
static int is_map(const char *key)
{
    static const char *const maps[] = {"metadata", "envs", "envVars", "headers", NULL};
    for (int i = 0; key && maps[i]; i++)
        if (strcmp(key, maps[i]) == 0)
            return 1;
    return 0;
}

static void shape_merge(cJSON *into, const cJSON *s)
{
    /* Elements of one list: the keys every element has (a list holds
     * what the platform holds then: other tests' sandboxes, with other
     * optional fields), a type that differs between them as "mixed". */
    if (cJSON_IsObject(into) && cJSON_IsObject(s)) {
        cJSON *c = into->child;
        while (c) {
            cJSON *next = c->next;
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(s, c->string);
            if (o == NULL)
                cJSON_DeleteItemFromObjectCaseSensitive(into, c->string);
            else
                shape_merge(c, o);
            c = next;
        }
    } else if (!(cJSON_IsString(into) && cJSON_IsString(s) &&
                 strcmp(into->valuestring, s->valuestring) == 0) &&
               !(cJSON_IsObject(into) && cJSON_IsObject(s))) {
        if (cJSON_IsString(into))
            cJSON_SetValuestring(into, "mixed");
    }
}

static cJSON *shape_of(const cJSON *v)
{
    if (cJSON_IsObject(v)) {
        cJSON *o = cJSON_CreateObject();
        const cJSON *c;
        cJSON_ArrayForEach(c, v)
            cJSON_AddItemToObject(o, c->string, is_map(c->string) && cJSON_IsObject(c)
                                                    ? cJSON_CreateString("map")
                                                    : shape_of(c));
        return o;
    }
    if (cJSON_IsArray(v)) {
        cJSON *o = cJSON_CreateObject(), *el = NULL;
        const cJSON *c;
        cJSON_ArrayForEach(c, v) {
            cJSON *s = shape_of(c);
            if (el == NULL)
                el = s;
            else {
                shape_merge(el, s);
                cJSON_Delete(s);
            }
        }
        cJSON_AddItemToObject(o, "[]", el ? el : cJSON_CreateString("empty"));
        return o;
    }
    return cJSON_CreateString(cJSON_IsString(v) ? "string" : cJSON_IsNumber(v) ? "number"
                              : cJSON_IsBool(v) ? "boolean" : "null");
}

static const char *shape_name(const cJSON *s)
{
    if (cJSON_IsString(s))
        return s->valuestring;
    return cJSON_GetObjectItemCaseSensitive(s, "[]") ? "array" : "object";
}

/* Whether a key present on one side only says something: not inside a
 * list's elements (which optional keys they carry is what the platform
 * holds then), and not for a list (proto3 JSON leaves an empty one out). */
static int presence_counts(const cJSON *shape, int in_list)
{
    return !in_list && !(cJSON_IsObject(shape) && cJSON_GetObjectItemCaseSensitive(shape, "[]"));
}

static void shape_diff(const cJSON *a, const cJSON *b, const char *path, const char *at,
                       int in_list, cJSON *out)
{
    char sub[KEY_MAX];
    const char *na = shape_name(a), *nb = shape_name(b);
    if (strcmp(na, nb) != 0) {
        /* an empty list has no element shape: nothing to compare */
        if (strcmp(na, "empty") && strcmp(nb, "empty"))
            diff_add(out, "http", at, path, cJSON_CreateString(na), cJSON_CreateString(nb));
        return;
    }
    if (cJSON_IsString(a))
        return;
    const cJSON *c;
    cJSON_ArrayForEach(c, a) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(b, c->string);
        snprintf(sub, sizeof sub, "%s%s%s", path, strcmp(c->string, "[]") ? "." : "",
                 c->string);
        if (o == NULL) {
            if (presence_counts(c, in_list))
                diff_add(out, "http", at, sub, cJSON_CreateString("present"),
                         cJSON_CreateString("absent"));
        } else {
            shape_diff(c, o, sub, at, in_list || strcmp(c->string, "[]") == 0, out);
        }
    }
    cJSON_ArrayForEach(c, b) {
        if (cJSON_GetObjectItemCaseSensitive(a, c->string) == NULL && presence_counts(c, in_list)) {
            snprintf(sub, sizeof sub, "%s%s%s", path, strcmp(c->string, "[]") ? "." : "",
                     c->string);
            diff_add(out, "http", at, sub, cJSON_CreateString("absent"),
                     cJSON_CreateString("present"));
        }
    }
}

/* A reply body as JSON, or NULL: not JSON, binary, or cut by the trace. */
static cJSON *body_json(const cJSON *http)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(http, "response");
    const char *body = sget(r, "body");
    if (body == NULL || cJSON_GetObjectItemCaseSensitive(r, "body_bytes") != NULL)
        return NULL;
    return cJSON_Parse(body);
}

/* ---- exchanges -------------------------------------------------------- */
struct xch {
    char key[KEY_MAX];
    const cJSON *ev;
    int nth;        /* occurrence of key before it */
    int paired;
};

static size_t exchanges(const cJSON *evs, struct xch *x, size_t max)
{
    size_t n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, evs) {
        const char *ev = sget(e, "ev");
        if (ev == NULL || strcmp(ev, "http") != 0 ||
            cJSON_GetObjectItemCaseSensitive(e, "retry_in") != NULL || n == max)
            continue;   /* an attempt that was retried: the last one counts */
        abx_diffrec_key(sget(e, "method"), sget(e, "url") ? sget(e, "url") : "", x[n].key,
                        sizeof x[n].key);
        /* A poll (the same exchange again and again, until it answers
         * as wanted) is one, its last answer: how many times it ran and
         * what it met before is timing, not contract. */
        if (n > 0 && strcmp(x[n - 1].key, x[n].key) == 0) {
            x[n - 1].ev = e;
            continue;
        }
        x[n].ev = e;
        x[n].nth = 0;
        x[n].paired = 0;
        for (size_t i = 0; i < n; i++)
            x[n].nth += strcmp(x[i].key, x[n].key) == 0;
        n++;
    }
    return n;
}

static void media_type(const cJSON *http, char *out, size_t outlen)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(http, "response"), "headers");
    const char *ct = sget(h, "content-type");
    size_t n = ct ? strcspn(ct, "; ") : 0;
    snprintf(out, outlen, "%.*s", (int)n, ct ? ct : "");
    for (char *p = out; *p; p++)
        *p = (char)tolower((unsigned char)*p);
}

static void compare_pair(const cJSON *a, const cJSON *b, const char *at, cJSON *out)
{
    const cJSON *sa = cJSON_GetObjectItemCaseSensitive(a, "status");
    const cJSON *sb = cJSON_GetObjectItemCaseSensitive(b, "status");
    double va = cJSON_IsNumber(sa) ? sa->valuedouble : 0;
    double vb = cJSON_IsNumber(sb) ? sb->valuedouble : 0;
    if (va != vb) {
        diff_add(out, "http", at, "status",
                 va ? cJSON_CreateNumber(va) : cJSON_CreateString("no reply"),
                 vb ? cJSON_CreateNumber(vb) : cJSON_CreateString("no reply"));
        return;   /* another status: its headers and body differ as a matter of course */
    }
    char ma[128], mb[128];
    media_type(a, ma, sizeof ma);
    media_type(b, mb, sizeof mb);
    if (strcmp(ma, mb) != 0)
        diff_add(out, "http", at, "content-type", cJSON_CreateString(ma), cJSON_CreateString(mb));
    const cJSON *ha = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(a, "response"), "headers");
    const cJSON *hb = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(b, "response"), "headers");
    int ta = sget(ha, "x-next-token") != NULL, tb = sget(hb, "x-next-token") != NULL;
    if (ta != tb)
        diff_add(out, "http", at, "x-next-token", cJSON_CreateString(ta ? "present" : "absent"),
                 cJSON_CreateString(tb ? "present" : "absent"));
    cJSON *ja = body_json(a), *jb = body_json(b);
    if (ja && jb) {
        cJSON *pa = shape_of(ja), *pb = shape_of(jb);
        shape_diff(pa, pb, "body", at, 0, out);
        cJSON_Delete(pa);
        cJSON_Delete(pb);
    }
    cJSON_Delete(ja);
    cJSON_Delete(jb);
}

static void compare_http(const cJSON *ea, const cJSON *eb, cJSON *out)
{
    enum { MAXX = 4096 };
    static struct xch xa[MAXX], xb[MAXX];
    size_t na = exchanges(ea, xa, MAXX), nb = exchanges(eb, xb, MAXX);
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            if (!xb[j].paired && xb[j].nth == xa[i].nth && strcmp(xa[i].key, xb[j].key) == 0) {
                xa[i].paired = xb[j].paired = 1;
                compare_pair(xa[i].ev, xb[j].ev, xa[i].key, out);
                break;
            }
    for (size_t i = 0; i < na; i++)
        if (!xa[i].paired)
            diff_add(out, "http", xa[i].key, "exchange", cJSON_CreateString("present"),
                     cJSON_CreateString("absent"));
    for (size_t j = 0; j < nb; j++)
        if (!xb[j].paired)
            diff_add(out, "http", xb[j].key, "exchange", cJSON_CreateString("absent"),
                     cJSON_CreateString("present"));
}

/* ---- calls ------------------------------------------------------------ */
/* Each SDK call's outcome, in order: "name#k" -> "returned" or
 * "raised <class>". */
static cJSON *outcomes(const cJSON *evs)
{
    cJSON *o = cJSON_CreateObject();
    const char *open[64];
    char keys[64][96], last[96] = "";
    int depth = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, evs) {
        const char *ev = sget(e, "ev"), *name = sget(e, "name");
        if (ev == NULL)
            continue;
        if (strcmp(ev, "call") == 0 && name && depth < 64) {
            int k = 0;
            char key[96];
            size_t nl = strlen(name);
            /* A poll (the same call again, nothing between) is one, its
             * last outcome: how often it ran is timing, not contract. */
            if (depth == 0 && strncmp(last, name, nl) == 0 && last[nl] == '#') {
                snprintf(key, sizeof key, "%s", last);
            } else {
                do
                    snprintf(key, sizeof key, "%s#%d", name, ++k);
                while (cJSON_GetObjectItemCaseSensitive(o, key));
                cJSON_AddStringToObject(o, key, "unfinished");
            }
            last[0] = '\0';
            open[depth] = name;
            snprintf(keys[depth++], sizeof keys[0], "%s", key);
        } else if ((strcmp(ev, "return") == 0 && name) ||
                   (strcmp(ev, "raise") == 0 && (name = sget(e, "call")) != NULL)) {
            /* the innermost open call of that name; a raise unwinds
             * the calls inside it */
            int i = depth - 1;
            while (i >= 0 && strcmp(open[i], name) != 0)
                i--;
            if (i < 0)
                continue;
            char what[160];
            if (ev[0] == 'r' && ev[1] == 'a')
                snprintf(what, sizeof what, "raised %s", sget(e, "class") ? sget(e, "class") : "?");
            else
                snprintf(what, sizeof what, "returned");
            cJSON_ReplaceItemInObjectCaseSensitive(o, keys[i], cJSON_CreateString(what));
            depth = i;
            if (depth == 0)
                snprintf(last, sizeof last, "%s", keys[0]);
        }
    }
    return o;
}

static void compare_calls(const cJSON *ea, const cJSON *eb, cJSON *out)
{
    cJSON *oa = outcomes(ea), *ob = outcomes(eb);
    const cJSON *c;
    cJSON_ArrayForEach(c, oa) {
        const char *other = sget(ob, c->string);
        if (other == NULL || strcmp(other, c->valuestring) != 0)
            diff_add(out, "call", c->string, "outcome", cJSON_CreateString(c->valuestring),
                     cJSON_CreateString(other ? other : "not called"));
    }
    cJSON_ArrayForEach(c, ob)
        if (sget(oa, c->string) == NULL)
            diff_add(out, "call", c->string, "outcome", cJSON_CreateString("not called"),
                     cJSON_CreateString(c->valuestring));
    cJSON_Delete(oa);
    cJSON_Delete(ob);
}

/* ---- facts ------------------------------------------------------------ */
static const cJSON *first_of(const cJSON *evs, const char *ev, const char *field)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, evs) {
        const char *k = sget(e, "ev");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, field);
        if (k && strcmp(k, ev) == 0 && v)
            return v;
    }
    return NULL;
}

static void compare_fact(const cJSON *ea, const cJSON *eb, const char *ev, const char *field,
                         const char *kind, cJSON *out)
{
    const cJSON *a = first_of(ea, ev, field), *b = first_of(eb, ev, field);
    if (a && b && !cJSON_Compare(a, b, 1))
        diff_add(out, kind, field, field, cJSON_Duplicate(a, 1), cJSON_Duplicate(b, 1));
}

/* The events of the test itself: a file or session fixture is set up by
 * whichever of its tests comes first on a worker, which differs between
 * runs, so what its set-up did is left out (its teardown happens outside
 * any test, and is not recorded). */
static cJSON *own_events(const cJSON *evs)
{
    cJSON *out = cJSON_CreateArray();
    int wide = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, evs) {
        const char *ev = sget(e, "ev"), *scope = sget(e, "detail");
        if (ev && strcmp(ev, "fixture_setup") == 0 &&
            (wide || (scope && strcmp(scope, "test") != 0))) {
            wide++;
            continue;
        }
        if (ev && strcmp(ev, "fixture_ready") == 0 && wide > 0) {
            wide--;
            continue;
        }
        if (!wide)
            cJSON_AddItemReferenceToArray(out, (cJSON *)e);
    }
    return out;
}

static int skipped(const cJSON *evs)
{
    const cJSON *o = first_of(evs, "result", "outcome");
    return cJSON_IsString(o) && strcmp(o->valuestring, "skipped") == 0;
}

cJSON *abx_diffrec_compare(const cJSON *a, const cJSON *b)
{
    cJSON *out = cJSON_CreateArray();
    cJSON *oa = own_events(a), *ob = own_events(b);
    if (out == NULL || oa == NULL || ob == NULL)
        goto out;
    compare_fact(a, b, "result", "outcome", "result", out);
    /* a test skipped on one side ran nothing there to compare */
    if (skipped(a) || skipped(b))
        goto out;
    compare_fact(a, b, "sandbox", "envd_version", "sandbox", out);
    compare_calls(oa, ob, out);
    compare_http(oa, ob, out);
out:
    cJSON_Delete(oa);
    cJSON_Delete(ob);
    return out;
}
