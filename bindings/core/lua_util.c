/* Strict option tables and the owning box (lua_util.h). Option errors
 * follow luaL_argerror, so a method call reports the argument number the
 * caller sees ("bad argument #2 to 'run' (option 'cwd': ...)"). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "e2e_trace.h"
#include "jsonutil.h"
#include "lua_e2e.h"
#include "lua_util.h"

#define LBOX_MT "e2e.Box"

int abx_lopt_check(lua_State *L, int arg, const char *fname,
                   const char *const *known)
{
    const char *const *k;
    const char *key;

    if (lua_isnoneornil(L, arg))
        return 0;
    luaL_checktype(L, arg, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, arg)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            return luaL_error(L, "bad option key to '%s' (string expected,"
                              " got %s)", fname, luaL_typename(L, -2));
        key = lua_tostring(L, -2);
        for (k = known; *k; k++)
            if (strcmp(*k, key) == 0)
                break;
        if (!*k)
            return luaL_error(L, "unknown option '%s' to '%s'", key, fname);
        lua_pop(L, 1);
    }
    return 1;
}

int abx_lopt_push(lua_State *L, int arg, const char *key, int type)
{
    int t;

    if (lua_type(L, arg) != LUA_TTABLE) {
        lua_pushnil(L);
        return 0;
    }
    /* Raw, as abx_lopt_check: no metamethod runs, and every string
     * returned stays anchored by the options table itself. */
    lua_pushstring(L, key);
    t = lua_rawget(L, arg);
    if (t == LUA_TNIL)
        return 0;
    if (t != type) {
        const char *msg = lua_pushfstring(L, "option '%s': %s expected, got "
                                          "%s", key, lua_typename(L, type),
                                          luaL_typename(L, -1));
        return luaL_argerror(L, arg, msg);
    }
    return 1;
}

const char *abx_lopt_string(lua_State *L, int arg, const char *key,
                            const char *def)
{
    const char *s = def;

    size_t len;

    if (abx_lopt_push(L, arg, key, LUA_TSTRING)) {
        s = lua_tolstring(L, -1, &len);  /* anchored by the options table */
        if (strlen(s) != len)
            luaL_argerror(L, arg, lua_pushfstring(L, "option '%s': "
                                                  "contains a NUL byte", key));
    }
    lua_pop(L, 1);
    return s;
}

const char *abx_lcheck_cstring(lua_State *L, int arg)
{
    size_t len;
    const char *s = luaL_checklstring(L, arg, &len);

    if (strlen(s) != len)
        luaL_argerror(L, arg, "contains a NUL byte");
    return s;
}

const char *abx_lopt_cstring(lua_State *L, int arg, const char *def)
{
    return lua_isnoneornil(L, arg) ? def : abx_lcheck_cstring(L, arg);
}

int abx_lopt_bool(lua_State *L, int arg, const char *key, int def)
{
    int v = def;

    if (abx_lopt_push(L, arg, key, LUA_TBOOLEAN))
        v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

double abx_lopt_seconds(lua_State *L, int arg, const char *key, double def)
{
    double v = def;

    if (abx_lopt_push(L, arg, key, LUA_TNUMBER)) {
        v = (double)lua_tonumber(L, -1);
        if (!(v >= 0 && v <= 1e9))  /* also rejects NaN */
            return (double)luaL_argerror(
                L, arg, lua_pushfstring(L, "option '%s': seconds out of "
                                        "range (0 to 1e9)", key));
    }
    lua_pop(L, 1);
    return v;
}

lua_Integer abx_lopt_integer(lua_State *L, int arg, const char *key,
                             lua_Integer def)
{
    lua_Integer v = def;
    int ok;

    if (abx_lopt_push(L, arg, key, LUA_TNUMBER)) {
        v = lua_tointegerx(L, -1, &ok);
        if (!ok)
            return luaL_argerror(
                L, arg, lua_pushfstring(L, "option '%s': number has no "
                                        "integer representation", key));
    }
    lua_pop(L, 1);
    return v;
}

void abx_lset_jstring(lua_State *L, const cJSON *o, const char *name,
                      const char *key)
{
    const cJSON *v = abx_json_field(o, name);   /* camelCase or snake_case */

    if (cJSON_IsString(v)) {
        lua_pushstring(L, v->valuestring);
        lua_setfield(L, -2, key);
    }
}

/* [fn, lightuserdata p, n]: fn(p[0..n)). */
static int call_bytes(lua_State *L)
{
    const char *p = lua_touserdata(L, 2);
    size_t n = (size_t)lua_tointeger(L, 3);

    lua_settop(L, 1);
    lua_pushlstring(L, p, n);
    lua_call(L, 1, 0);
    return 0;
}

int abx_lpcall_bytes(lua_State *L, int fn_idx, const char *p, size_t n)
{
    fn_idx = lua_absindex(L, fn_idx);
    /* None of these four pushes allocates. */
    lua_pushcfunction(L, call_bytes);
    lua_pushvalue(L, fn_idx);
    lua_pushlightuserdata(L, (void *)p);
    lua_pushinteger(L, (lua_Integer)n);
    return lua_pcall(L, 3, 0, 0);
}


/* ---- sub-objects ------------------------------------------------------ */
static int lsub_tostring(lua_State *L)
{
    const char *mt = lua_tostring(L, lua_upvalueindex(1));

    lua_pushfstring(L, "%s: %p", mt, luaL_checkudata(L, 1, mt));
    return 1;
}

/* Pushes the metatable of d (created on first use, so a sandbox can hand
 * out its sub-objects before anyone required their module). */
static void lsub_mt(lua_State *L, const struct abx_lsub *d)
{
    if (luaL_newmetatable(L, d->mt)) {
        lua_newtable(L);
        /* "e2e.Commands" traces its methods as "commands.NAME" */
        char prefix[32];
        snprintf(prefix, sizeof prefix, "%s", strncmp(d->mt, "e2e.", 4) == 0 ? d->mt + 4 : d->mt);
        for (char *c = prefix; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        abx_ltrace_setfuncs(L, d->methods, prefix);
        if (d->selftest_name && abx_e2e_host_of(L)->set->selftest) {
            lua_pushcfunction(L, d->selftest_fn);
            lua_setfield(L, -2, d->selftest_name);
        }
        lua_setfield(L, -2, "__index");
        lua_pushstring(L, d->mt);
        lua_pushcclosure(L, lsub_tostring, 1);
        lua_setfield(L, -2, "__tostring");
    }
}

void abx_lsub_push(lua_State *L, int sbx_idx, const struct abx_lsub *d)
{
    sbx_idx = lua_absindex(L, sbx_idx);
    lua_newuserdatauv(L, sizeof(int), 1);  /* all state is the sandbox */
    lua_pushvalue(L, sbx_idx);
    lua_setiuservalue(L, -2, 1);
    lsub_mt(L, d);
    lua_setmetatable(L, -2);
}

int abx_lsub_open(lua_State *L, const struct abx_lsub *d)
{
    lsub_mt(L, d);
    lua_getfield(L, -1, "__index");
    return 1;
}

/* ---- owning box ------------------------------------------------------- */
void abx_lbox_release(struct abx_lbox *b)
{
    cJSON_Delete(b->json);
    b->json = NULL;
    abx_buf_free(&b->buf);
}

static int lbox_gc(lua_State *L)
{
    abx_lbox_release(luaL_checkudata(L, 1, LBOX_MT));
    return 0;
}

struct abx_lbox *abx_lbox_push(lua_State *L, size_t bufmax)
{
    struct abx_lbox *b = lua_newuserdatauv(L, sizeof *b, 0);

    b->json = NULL;
    abx_buf_init(&b->buf, bufmax ? bufmax : ABX_BUF_DEFAULT_MAX);
    if (luaL_newmetatable(L, LBOX_MT)) {
        lua_pushcfunction(L, lbox_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushcfunction(L, lbox_gc);
        lua_setfield(L, -2, "__close");
    }
    lua_setmetatable(L, -2);
    return b;
}
