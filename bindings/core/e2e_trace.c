/* SDK calls into the running test's trace (e2e_trace.h). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "e2e_error.h"
#include "e2e_trace.h"
#include "trace.h"

#define DEPTH_MAX 3     /* nested tables described */
#define ENTRIES_MAX 30  /* entries of one table described */

/* The innermost traced call running: a raise inside it names it. */
static struct {
    char name[64];
    double t0;
} g_cur;


static void describe(lua_State *L, int idx, cJSON *into, const char *key, int depth);

/* A field whose value is a credential by its name (a header of an
 * http.request, an option): recorded as present, never its value, as
 * the HTTP trace does with request headers. */
static const char *const credential_words[] = {"authorization", "api-key", "api_key", "apikey",
                                               "access-token", "access_token", "token",
                                               "password", "secret", "cookie", NULL};

static int sensitive(const char *key)
{
    const char *const *words = credential_words;
    char low[64];
    size_t i = 0;
    for (; key[i] && i < sizeof low - 1; i++)
        low[i] = (char)tolower((unsigned char)key[i]);
    low[i] = '\0';
    for (int w = 0; words[w]; w++)
        if (strstr(low, words[w]))
            return 1;
    return 0;
}

static void describe_table(lua_State *L, int idx, cJSON *into, const char *key, int depth)
{
    cJSON *o = cJSON_AddObjectToObject(into, key);
    int n = 0;
    if (o == NULL)
        return;
    if (depth >= DEPTH_MAX) {
        cJSON_AddStringToObject(o, "...", "table");
        return;
    }
    luaL_checkstack(L, 4, "trace");
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
        char k[64];
        int kt = lua_type(L, -2);
        if (kt == LUA_TSTRING)
            snprintf(k, sizeof k, "%s", lua_tostring(L, -2));
        else if (lua_isinteger(L, -2))
            snprintf(k, sizeof k, "%lld", (long long)lua_tointeger(L, -2));
        else
            snprintf(k, sizeof k, "(%s)", lua_typename(L, kt));
        if (++n > ENTRIES_MAX) {
            lua_pop(L, 2);
            cJSON_AddStringToObject(o, "...", "more entries");
            break;
        }
        if (kt == LUA_TSTRING && sensitive(k))
            cJSON_AddStringToObject(o, k, "[not recorded]");
        else
            describe(L, lua_gettop(L), o, k, depth + 1);
        lua_pop(L, 1);
    }
}

static void describe(lua_State *L, int idx, cJSON *into, const char *key, int depth)
{
    size_t n;
    const char *s;
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
    case LUA_TNONE:
        cJSON_AddNullToObject(into, key);
        break;
    case LUA_TBOOLEAN:
        cJSON_AddBoolToObject(into, key, lua_toboolean(L, idx));
        break;
    case LUA_TNUMBER:
        /* an integer a double would round (an id beyond 2^53) goes as
         * its exact literal */
        if (lua_isinteger(L, idx) && (lua_tointeger(L, idx) > (1LL << 53) ||
                                      lua_tointeger(L, idx) < -(1LL << 53))) {
            char lit[32];
            snprintf(lit, sizeof lit, "%lld", (long long)lua_tointeger(L, idx));
            cJSON_AddRawToObject(into, key, lit);
        } else {
            cJSON_AddNumberToObject(into, key, lua_tonumber(L, idx));
        }
        break;
    case LUA_TSTRING:
        s = lua_tolstring(L, idx, &n);
        abx_trace_put_text(into, key, s, n);
        break;
    case LUA_TTABLE:
        describe_table(L, idx, into, key, depth);
        break;
    case LUA_TUSERDATA: {
        /* Ours say what they are (a sandbox its id); others their type. */
        int base = lua_gettop(L);
        int ours = luaL_getmetafield(L, idx, "__name") == LUA_TSTRING &&
                   strncmp(lua_tostring(L, -1), "e2e.", 4) == 0;
        lua_settop(L, base);
        if (ours && luaL_getmetafield(L, idx, "__tostring") != LUA_TNIL) {
            lua_settop(L, base);
            s = luaL_tolstring(L, idx, &n);
            abx_trace_put_text(into, key, s, n);
        } else {
            cJSON_AddStringToObject(into, key, luaL_typename(L, idx));
        }
        lua_settop(L, base);
        break;
    }
    default:
        cJSON_AddStringToObject(into, key, luaL_typename(L, idx));
        break;
    }
}

/* Values from..to into e[key] as {"1": ..., "2": ...}. */
static void describe_list(lua_State *L, int from, int to, cJSON *e, const char *key)
{
    cJSON *o = cJSON_AddObjectToObject(e, key);
    for (int i = from; o && i <= to; i++) {
        char k[16];
        snprintf(k, sizeof k, "%d", i - from + 1);
        describe(L, i, o, k, 0);
    }
}

static int traced(lua_State *L)
{
    lua_CFunction f = lua_tocfunction(L, lua_upvalueindex(2));
    if (!abx_trace_recording())
        return f(L);
    const char *name = lua_tostring(L, lua_upvalueindex(1));
    int top = lua_gettop(L);
    /* A method's self (a userdata) is in the name already. */
    int first = top >= 1 && lua_type(L, 1) == LUA_TUSERDATA ? 2 : 1;
    int mark = lua_gettop(L);
    cJSON *e = abx_trace_new("call");
    if (e) {
        cJSON_AddStringToObject(e, "name", name);
        describe_list(L, first, top, e, "args");
        abx_trace_add(e);
    }
    lua_settop(L, mark);
    char saved[sizeof g_cur.name];
    double saved_t0 = g_cur.t0, t0 = abx_trace_clock();
    memcpy(saved, g_cur.name, sizeof saved);
    snprintf(g_cur.name, sizeof g_cur.name, "%s", name);
    g_cur.t0 = t0;
    /* The real function on this very frame: its arguments, upvalue-free
     * (luaL_Reg), errors and argument numbering unchanged. */
    int nres = f(L);
    e = abx_trace_new("return");
    if (e) {
        int end = lua_gettop(L);
        cJSON_AddStringToObject(e, "name", name);
        abx_trace_put_ms(e, "ms", abx_trace_clock() - t0);
        describe_list(L, end - nres + 1, end, e, "results");
        abx_trace_add(e);
    }
    memcpy(g_cur.name, saved, sizeof saved);
    g_cur.t0 = saved_t0;
    return nres;
}

void abx_ltrace_setfuncs(lua_State *L, const luaL_Reg *l, const char *prefix)
{
    if (abx_trace_get_mode() == ABX_TRACE_OFF) {
        luaL_setfuncs(L, l, 0);
        return;
    }
    luaL_checkstack(L, 3, "trace");
    for (; l->name; l++) {
        if (l->func == NULL) {
            lua_pushboolean(L, 0);
        } else {
            lua_pushfstring(L, "%s.%s", prefix, l->name);
            lua_pushcfunction(L, l->func);
            lua_pushcclosure(L, traced, 2);
        }
        lua_setfield(L, -2, l->name);
    }
}

void abx_ltrace_newlib(lua_State *L, const luaL_Reg *l, const char *prefix)
{
    int n = 0;
    while (l[n].name)
        n++;
    lua_createtable(L, 0, n);
    abx_ltrace_setfuncs(L, l, prefix);
}

/* What a raise event keeps of an error value (docs/reports.md "Traces"). */
static const char *const raise_fields[] = {"class", "message", "status", "code", "exit_code",
                                           "stderr", NULL};

void abx_ltrace_raise(lua_State *L, int idx)
{
    cJSON *e = abx_trace_new("raise");
    if (e == NULL)
        return;
    idx = lua_absindex(L, idx);
    if (g_cur.name[0]) {
        cJSON_AddStringToObject(e, "call", g_cur.name);
        abx_trace_put_ms(e, "ms", abx_trace_clock() - g_cur.t0);
    }
    if (lua_istable(L, idx)) {
        for (int i = 0; raise_fields[i]; i++) {
            lua_getfield(L, idx, raise_fields[i]);
            if (!lua_isnil(L, -1))
                describe(L, lua_gettop(L), e, raise_fields[i], DEPTH_MAX);
            lua_pop(L, 1);
        }
    } else {
        describe(L, idx, e, "message", DEPTH_MAX);
    }
    abx_trace_add(e);
}

int abx_ltrace_event_l(lua_State *L)
{
    const char *kind = luaL_checkstring(L, 1);
    const char *name = luaL_optstring(L, 2, "");
    cJSON *e = abx_trace_new(kind);
    if (e) {
        cJSON_AddStringToObject(e, "name", name);
        if (!lua_isnoneornil(L, 3))
            describe(L, 3, e, "detail", 0);
        abx_trace_add(e);
    }
    return 0;
}
