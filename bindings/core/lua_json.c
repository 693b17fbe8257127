/* Module e2e.json: a strict JSON codec for test code (docs/lua-api.md,
 * "e2e.json"): the module and encode (decode: lua_json_decode.c; json.null
 * and the object marks both use: lua_json_marks.c).
 *
 * encode is written by hand into a capped buffer, for what cJSON's
 * printer cannot do: int64 integers, round-trip floats, sorted keys,
 * UTF-8 checks. The buffer sits in a box on the Lua stack, so any raise
 * (a bad value, out of memory) frees it. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "buf.h"
#include "lua_json.h"
#include "lua_util.h"
#include "utf8.h"

/* ======================================================================
 * encode
 * ==================================================================== */
/* Where in the value we are, for messages: $.a[2].b */
struct path {
    const struct path *up;
    int idx;   /* stack index of the key */
};

struct enc {
    lua_State *L;
    struct abx_buf *b;
    int objects;  /* stack index of the marked-object set */
    int active;   /* stack index of the set of tables being encoded */
};

static void path_render(lua_State *L, const struct path *p, luaL_Buffer *b)
{
    const char *s;
    size_t n;

    if (!p) {
        luaL_addchar(b, '$');
        return;
    }
    path_render(L, p->up, b);
    if (lua_type(L, p->idx) == LUA_TSTRING) {
        s = lua_tolstring(L, p->idx, &n);
        luaL_addchar(b, '.');
        luaL_addlstring(b, s, n > 40 ? 40 : n);
        if (n > 40)
            luaL_addstring(b, "...");
    } else {
        lua_pushfstring(L, "[%I]", (LUAI_UACINT)lua_tointeger(L, p->idx));
        luaL_addvalue(b);
    }
}

/* Raises "json.encode: <msg> at <path>"; msg is pushed on the stack. */
static int enc_fail(struct enc *e, const struct path *p, const char *fmt, ...)
{
    lua_State *L = e->L;
    luaL_Buffer b;
    va_list ap;

    luaL_checkstack(L, 8, "json.encode");
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "json.encode: ");
    lua_pushvalue(L, -2);
    luaL_addvalue(&b);
    luaL_addstring(&b, " at ");
    path_render(L, p, &b);
    luaL_pushresult(&b);
    return lua_error(L);
}

static void enc_add(struct enc *e, const char *s, size_t n)
{
    if (abx_buf_append(e->b, s, n) != 0)
        luaL_error(e->L, "json.encode: output larger than 64 MiB "
                   "(or out of memory)");
}

/* A key as the messages show it: "name", 3, 1.5, true, a table. */
static const char *key_desc(lua_State *L, int idx)
{
    switch (lua_type(L, idx)) {
    case LUA_TSTRING: return lua_pushfstring(L, "\"%s\"", lua_tostring(L, idx));
    case LUA_TNUMBER:
    case LUA_TBOOLEAN: return luaL_tolstring(L, idx, NULL);
    default: return lua_pushfstring(L, "of type %s", luaL_typename(L, idx));
    }
}

static void enc_string(struct enc *e, int idx, const struct path *p)
{
    size_t n, i = 0, k;
    const unsigned char *s =
        (const unsigned char *)lua_tolstring(e->L, idx, &n);
    uint32_t cp;
    char esc[8];

    enc_add(e, "\"", 1);
    while (i < n) {
        if (s[i] == '"' || s[i] == '\\') {
            esc[0] = '\\';
            esc[1] = (char)s[i];
            enc_add(e, esc, 2);
            i++;
        } else if (s[i] < 0x20) {
            switch (s[i]) {
            case '\n': enc_add(e, "\\n", 2); break;
            case '\r': enc_add(e, "\\r", 2); break;
            case '\t': enc_add(e, "\\t", 2); break;
            case '\b': enc_add(e, "\\b", 2); break;
            case '\f': enc_add(e, "\\f", 2); break;
            default:
                snprintf(esc, sizeof esc, "\\u%04x", s[i]);
                enc_add(e, esc, 6);
            }
            i++;
        } else if (s[i] < 0x80) {
            for (k = i; k < n && s[k] >= 0x20 && s[k] < 0x80 && s[k] != '"' &&
                        s[k] != '\\'; k++)
                ;
            enc_add(e, (const char *)s + i, k - i);
            i = k;
        } else if ((k = abx_utf8_decode(s + i, n - i, &cp)) != 0) {
            enc_add(e, (const char *)s + i, k);
            i += k;
        } else {
            enc_fail(e, p, "invalid UTF-8 at byte %d of a string",
                     (int)(i + 1));
        }
    }
    enc_add(e, "\"", 1);
}

/* The shortest of %.15g..%.17g that reads back as the same double, with
 * ".0" added to integral values so they decode as floats again. */
static void enc_float(struct enc *e, lua_Number x, const struct path *p)
{
    char s[40];
    int prec, n = 0;

    if (isnan(x) || isinf(x))
        enc_fail(e, p, "cannot encode %s", isnan(x) ? "NaN" : "infinity");
    for (prec = 15; prec <= 17; prec++) {
        n = snprintf(s, sizeof s, "%.*g", prec, (double)x);
        if (strtod(s, NULL) == (double)x)
            break;
    }
    if (!strpbrk(s, ".eE") && n > 0 && (size_t)n + 2 < sizeof s) {
        memcpy(s + n, ".0", 3);
        n += 2;
    }
    enc_add(e, s, (size_t)n);
}

static void enc_value(struct enc *e, int idx, int depth, const struct path *p);

struct skey {
    const char *s;
    size_t n;
};

static int skey_cmp(const void *a, const void *b)
{
    const struct skey *x = a, *y = b;
    int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);

    return c ? c : (x->n > y->n) - (x->n < y->n);
}

static void enc_object(struct enc *e, int idx, size_t n, int depth,
                       const struct path *p)
{
    lua_State *L = e->L;
    struct skey *keys = lua_newuserdatauv(L, (n ? n : 1) * sizeof *keys, 0);
    struct path sub;
    size_t i = 0;

    lua_pushnil(L);
    while (lua_next(L, idx)) {  /* every key is a string (checked) */
        lua_pop(L, 1);
        keys[i].s = lua_tolstring(L, -1, &keys[i].n);
        i++;
    }
    qsort(keys, n, sizeof *keys, skey_cmp);
    enc_add(e, "{", 1);
    for (i = 0; i < n; i++) {
        if (i)
            enc_add(e, ",", 1);
        lua_pushlstring(L, keys[i].s, keys[i].n);
        sub.up = p;
        sub.idx = lua_gettop(L);
        enc_string(e, sub.idx, &sub);
        enc_add(e, ":", 1);
        lua_pushvalue(L, -1);
        lua_rawget(L, idx);
        enc_value(e, lua_gettop(L), depth + 1, &sub);
        lua_pop(L, 2);
    }
    enc_add(e, "}", 1);
    lua_pop(L, 1);  /* keys */
}

static void enc_table(struct enc *e, int idx, int depth, const struct path *p)
{
    lua_State *L = e->L;
    size_t n = 0, nstr = 0;
    lua_Integer max = 0, k;
    int is_obj, bad = 0;
    struct path sub;

    if (depth > ABX_JSON_MAX_DEPTH)
        enc_fail(e, p, "nesting deeper than %d levels", ABX_JSON_MAX_DEPTH);
    luaL_checkstack(L, 8, "json.encode");
    lua_pushvalue(L, idx);
    if (lua_rawget(L, e->active) != LUA_TNIL)
        enc_fail(e, p, "cycle (a table contains itself)");
    lua_pop(L, 1);
    lua_pushvalue(L, idx);
    is_obj = lua_rawget(L, e->objects) != LUA_TNIL;
    lua_pop(L, 1);

    lua_pushnil(L);  /* classify the keys */
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        n++;
        if (lua_type(L, -1) == LUA_TSTRING)
            nstr++;
        else if (lua_isinteger(L, -1) && (k = lua_tointeger(L, -1)) >= 1)
            max = k > max ? k : max;
        else
            bad = 1;
    }
    if (bad || (nstr > 0 && nstr < n) || (is_obj && nstr < n)) {
        /* name the first key that is wrong here: not a string in a
         * table with string keys, else not a positive integer */
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            lua_pop(L, 1);
            if (lua_type(L, -1) != LUA_TSTRING &&
                (nstr > 0 || is_obj || !lua_isinteger(L, -1) ||
                 lua_tointeger(L, -1) < 1))
                break;
        }
        if (nstr > 0 || is_obj)
            enc_fail(e, p, "mixed or non-string key %s in a table (JSON "
                     "objects need string keys)", key_desc(L, -1));
        enc_fail(e, p, "key %s is neither a string nor an array index "
                 "1..n", key_desc(L, -1));
    }
    if (nstr == 0 && (lua_Integer)n != max && !is_obj)
        enc_fail(e, p, "sparse array: key %I but only %I keys (arrays need "
                 "keys 1..n)", (LUAI_UACINT)max, (LUAI_UACINT)n);

    lua_pushvalue(L, idx);
    lua_pushboolean(L, 1);
    lua_rawset(L, e->active);
    if (is_obj || nstr > 0) {
        enc_object(e, idx, n, depth, p);
    } else {
        enc_add(e, "[", 1);
        for (k = 1; k <= max; k++) {
            if (k > 1)
                enc_add(e, ",", 1);
            lua_pushinteger(L, k);
            sub.up = p;
            sub.idx = lua_gettop(L);
            lua_rawgeti(L, idx, k);
            enc_value(e, lua_gettop(L), depth + 1, &sub);
            lua_pop(L, 2);
        }
        enc_add(e, "]", 1);
    }
    lua_pushvalue(L, idx);
    lua_pushnil(L);
    lua_rawset(L, e->active);
}

static void enc_value(struct enc *e, int idx, int depth, const struct path *p)
{
    lua_State *L = e->L;
    char num[32];
    int n;

    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        enc_add(e, "null", 4);
        break;
    case LUA_TBOOLEAN:
        if (lua_toboolean(L, idx))
            enc_add(e, "true", 4);
        else
            enc_add(e, "false", 5);
        break;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            n = snprintf(num, sizeof num, "%lld",
                         (long long)lua_tointeger(L, idx));
            enc_add(e, num, (size_t)n);
        } else {
            enc_float(e, lua_tonumber(L, idx), p);
        }
        break;
    case LUA_TSTRING:
        enc_string(e, idx, p);
        break;
    case LUA_TTABLE:
        enc_table(e, idx, depth, p);
        break;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == (void *)&abx_json_null) {
            enc_add(e, "null", 4);
            break;
        }
        /* fall through */
    default:
        enc_fail(e, p, "cannot encode a %s", luaL_typename(L, idx));
    }
}

static int json_encode(lua_State *L)
{
    struct enc e;
    struct abx_lbox *box;

    luaL_checkany(L, 1);
    lua_settop(L, 1);
    box = abx_lbox_push(L, ABX_JSON_MAX_SIZE);
    abx_json_push_objects(L);
    lua_newtable(L);
    e.L = L;
    e.b = &box->buf;
    e.objects = 3;
    e.active = 4;
    enc_value(&e, 1, 1, NULL);
    lua_pushlstring(L, abx_buf_cstr(e.b), e.b->len);
    abx_lbox_release(box);
    return 1;
}

/* json.object([t]) -> t marked as an object (a new table without t). */
static int json_object(lua_State *L)
{
    if (lua_isnoneornil(L, 1)) {
        lua_settop(L, 0);
        lua_newtable(L);
    } else {
        luaL_checktype(L, 1, LUA_TTABLE);
        lua_settop(L, 1);
    }
    abx_json_push_objects(L);
    lua_pushvalue(L, 1);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_settop(L, 1);
    return 1;
}

static int json_is_object(lua_State *L)
{
    luaL_checkany(L, 1);
    if (lua_type(L, 1) != LUA_TTABLE) {
        lua_pushboolean(L, 0);
        return 1;
    }
    abx_json_push_objects(L);
    lua_pushvalue(L, 1);
    lua_pushboolean(L, lua_rawget(L, -2) != LUA_TNIL);
    return 1;
}

int luaopen_e2e_json(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        {"decode", abx_json_decode_l},
        {"encode", json_encode},
        {"object", json_object},
        {"is_object", json_is_object},
        {NULL, NULL},
    };

    luaL_newlib(L, funcs);
    lua_pushlightuserdata(L, (void *)&abx_json_null);
    lua_setfield(L, -2, "null");
    return 1;
}
