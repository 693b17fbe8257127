/* JSON -> Lua, the one path: json.decode (the module and encode:
 * lua_json.c) and the SDK's replies (abx_json_push) walk a cJSON tree
 * with dec_value.
 *
 * json.decode: cJSON checks the syntax and builds the tree; we then walk
 * the tree and, in step, the source text, because cJSON keeps numbers only as doubles
 * (an id beyond 2^53 would silently change) and strings only as C strings
 * (a "\u0000" would cut them). Tree order is document order, so the n-th
 * number or string node is the n-th number or string token: the exact
 * integer and the exact bytes come from the text. The tree sits in a box
 * on the Lua stack, so any raise frees it. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <lauxlib.h>
#include <lua.h>

#include "jsonutil.h"
#include "lua_json.h"
#include "lua_util.h"
#include "utf8.h"

struct dec {
    lua_State *L;
    const char *s;
    size_t len;
    size_t pos;    /* where the next string/number token is looked for */
    int objects;   /* stack index of the marked-object set */
};
/* A reply (abx_json_push) has no text (d->s NULL): strings and numbers
 * come from the tree (abx_json_parse kept integers beyond 2^53 exact),
 * null is nil, and no object is marked. */

static int dec_fail(struct dec *d, size_t off, const char *what)
{
    char msg[160];

    if (!d->s)
        snprintf(msg, sizeof msg, "JSON reply: %s", what);
    else
        snprintf(msg, sizeof msg, "json.decode: %s at offset %zu", what, off);
    return luaL_error(d->L, "%s", msg);
}

/* The next string or number token [*a, *b). cJSON accepted the text, so
 * whatever lies between tokens is punctuation, blanks or a literal
 * (true/false/null have no digit, '-' or '"'). */
static void dec_next(struct dec *d, int want_string, size_t *a, size_t *b)
{
    const char *s = d->s;
    size_t p = d->pos;

    while (p < d->len && s[p] != '"' && s[p] != '-' &&
           !(s[p] >= '0' && s[p] <= '9'))
        p++;
    if (p >= d->len || (s[p] == '"') != want_string)
        dec_fail(d, p, "internal error: token out of step");
    *a = p;
    if (want_string) {
        for (p++; p < d->len && s[p] != '"'; p++)
            if (s[p] == '\\')
                p++;
        p++;
    } else {
        while (p < d->len && strchr("+-.eE0123456789", s[p]) && s[p])
            p++;
    }
    *b = p > d->len ? d->len : p;
    d->pos = *b;
}

static void add_utf8(luaL_Buffer *b, unsigned long cp)
{
    char u[4];
    size_t n;

    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    luaL_addlstring(b, u, n);
}

static unsigned long hex4(const char *p)
{
    char h[5];

    memcpy(h, p, 4);
    h[4] = '\0';
    return strtoul(h, NULL, 16);
}

/* Unescapes the body of a string token (cJSON has validated the escapes
 * and surrogate pairs). Used only for strings holding "\u0000", which
 * cJSON would cut. */
static void push_unescaped(lua_State *L, const char *p, const char *e)
{
    luaL_Buffer b;
    unsigned long cp, lo;

    luaL_buffinit(L, &b);
    while (p < e) {
        if (*p != '\\') {
            luaL_addchar(&b, *p++);
            continue;
        }
        switch (p[1]) {
        case 'b': luaL_addchar(&b, '\b'); break;
        case 'f': luaL_addchar(&b, '\f'); break;
        case 'n': luaL_addchar(&b, '\n'); break;
        case 'r': luaL_addchar(&b, '\r'); break;
        case 't': luaL_addchar(&b, '\t'); break;
        case 'u':
            cp = hex4(p + 2);
            p += 6;
            if (cp >= 0xD800 && cp <= 0xDBFF && e - p >= 6) {
                lo = hex4(p + 2);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            add_utf8(&b, cp);
            continue;
        default: luaL_addchar(&b, p[1]); break;  /* " \ / */
        }
        p += 2;
    }
    luaL_pushresult(&b);
}

/* Pushes the string of token [a, b) (node: its cJSON value, or NULL for a
 * key whose text is `key`). Raw control bytes and ill-formed UTF-8 are
 * refused, as RFC 8259 requires. */
static void dec_string(struct dec *d, const char *cjs, size_t a, size_t b)
{
    const unsigned char *s = (const unsigned char *)d->s;
    size_t p = a + 1, e = b - 1, n;
    uint32_t cp;
    int has_nul = 0;
    char what[64];

    while (p < e) {
        if (s[p] < 0x20) {
            snprintf(what, sizeof what, "raw control byte 0x%02x in a string",
                     s[p]);
            dec_fail(d, p, what);
        }
        if (s[p] == '\\') {
            if (s[p + 1] == 'u' && e - p >= 6 &&
                memcmp(s + p + 2, "0000", 4) == 0)
                has_nul = 1;
            p += 2;
        } else if (s[p] < 0x80) {
            p++;
        } else if ((n = abx_utf8_decode(s + p, e - p, &cp)) != 0) {
            p += n;
        } else {
            dec_fail(d, p, "invalid UTF-8");
        }
    }
    if (has_nul)
        push_unescaped(d->L, d->s + a + 1, d->s + e);
    else
        lua_pushstring(d->L, cjs ? cjs : "");
}

/* Integers that fit an int64 exactly stay integers; the rest are floats
 * (cJSON's strtod value). */
static void dec_number(struct dec *d, const cJSON *v, size_t a, size_t b)
{
    char tmp[32], *end;
    size_t n = b - a;
    long long i;

    if (n < sizeof tmp && !memchr(d->s + a, '.', n) &&
        !memchr(d->s + a, 'e', n) && !memchr(d->s + a, 'E', n)) {
        memcpy(tmp, d->s + a, n);
        tmp[n] = '\0';
        errno = 0;
        i = strtoll(tmp, &end, 10);
        if (errno == 0 && end == tmp + n) {
            lua_pushinteger(d->L, (lua_Integer)i);
            return;
        }
    }
    lua_pushnumber(d->L, (lua_Number)v->valuedouble);
}

/* A reply's number: exact beyond 2^53 (jsonexact.c), an integer when
 * integral, else a float. */
static void tree_number(lua_State *L, const cJSON *v)
{
    double x = v->valuedouble;
    long long exact;

    if (abx_json_exact_int(v, &exact) == 0)
        lua_pushinteger(L, (lua_Integer)exact);
    else if (floor(x) == x && fabs(x) < 9007199254740992.0)
        lua_pushinteger(L, (lua_Integer)x);
    else
        lua_pushnumber(L, x);
}

static void dec_value(struct dec *d, const cJSON *v, int depth)
{
    lua_State *L = d->L;
    const cJSON *c;
    size_t a, b;
    lua_Integer i = 1;

    if (depth > ABX_JSON_MAX_DEPTH) {
        char what[64];
        snprintf(what, sizeof what, "nesting deeper than %d levels",
                 ABX_JSON_MAX_DEPTH);
        dec_fail(d, d->pos, what);
    }
    luaL_checkstack(L, 4, "JSON -> Lua");
    if (!v || cJSON_IsNull(v)) {
        if (d->s)
            lua_pushlightuserdata(L, (void *)&abx_json_null);
        else
            lua_pushnil(L);
    } else if (cJSON_IsBool(v)) {
        lua_pushboolean(L, cJSON_IsTrue(v));
    } else if (cJSON_IsNumber(v) && !d->s) {
        tree_number(L, v);
    } else if (cJSON_IsNumber(v)) {
        dec_next(d, 0, &a, &b);
        dec_number(d, v, a, b);
    } else if (cJSON_IsString(v) && !d->s) {
        lua_pushstring(L, v->valuestring ? v->valuestring : "");
    } else if (cJSON_IsString(v)) {
        dec_next(d, 1, &a, &b);
        dec_string(d, v->valuestring, a, b);
    } else if (cJSON_IsArray(v)) {
        lua_createtable(L, cJSON_GetArraySize(v), 0);
        for (c = v->child; c; c = c->next) {
            dec_value(d, c, depth + 1);
            lua_rawseti(L, -2, i++);
        }
    } else if (cJSON_IsObject(v)) {
        lua_newtable(L);
        if (!v->child && d->s) {  /* keep {} an object when encoded again */
            lua_pushvalue(L, -1);
            lua_pushboolean(L, 1);
            lua_rawset(L, d->objects);
        }
        for (c = v->child; c; c = c->next) {
            if (!d->s && !c->string)
                continue;
            if (d->s) {
                dec_next(d, 1, &a, &b);
                dec_string(d, c->string, a, b);
            } else {
                lua_pushstring(L, c->string);
            }
            dec_value(d, c, depth + 1);
            lua_rawset(L, -3);
        }
    } else if (d->s) {
        dec_fail(d, d->pos, "internal error: unknown node");
    } else {
        lua_pushnil(L);   /* an invalid node of a reply: as null */
    }
}

void abx_json_push(lua_State *L, const cJSON *v)
{
    struct dec d = {.L = L};

    dec_value(&d, v, 1);
}

int abx_json_decode_l(lua_State *L)
{
    struct dec d;
    struct abx_lbox *box;
    const char *end = NULL;
    char what[64];
    size_t off;
    unsigned char c;

    d.L = L;
    d.s = luaL_checklstring(L, 1, &d.len);
    d.pos = 0;
    if (d.len > ABX_JSON_MAX_SIZE)
        return luaL_error(L, "json.decode: input of %I bytes is larger "
                          "than 64 MiB", (LUAI_UACINT)d.len);
    lua_settop(L, 1);
    box = abx_lbox_push(L, 1);
    box->json = cJSON_ParseWithLengthOpts(d.s, d.len, &end, 0);
    if (!box->json) {
        off = end && end >= d.s ? (size_t)(end - d.s) : 0;
        if (off >= d.len)
            return dec_fail(&d, d.len, "unexpected end of input");
        c = (unsigned char)d.s[off];
        if (c > 0x20 && c < 0x7f)
            snprintf(what, sizeof what, "syntax error (unexpected '%c')", c);
        else
            snprintf(what, sizeof what, "syntax error (unexpected byte "
                     "0x%02x)", c);
        return dec_fail(&d, off, what);
    }
    off = (size_t)(end - d.s);
    while (off < d.len && strchr(" \t\r\n", d.s[off]) && d.s[off])
        off++;
    if (off < d.len)
        return dec_fail(&d, off, "trailing characters after the value");
    abx_json_push_objects(L);
    d.objects = lua_gettop(L);
    dec_value(&d, box->json, 1);
    abx_lbox_release(box);
    return 1;
}
