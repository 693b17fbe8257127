/* Helpers shared by the sandbox-facing modules (lua_sbxerr.h): error
 * values, JSON <-> Lua conversion, the platform of a state, and the
 * cancellation check of the HTTP engine. */
#include <math.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "e2e_error.h"
#include "e2e_trace.h"
#include "http.h"
#include "jsonutil.h"
#include "lua_e2e.h"
#include "lua_sbxerr.h"
#include "lua_sbxtype.h"

/* ---- error values (e2e_error.h) -------------------------------------- */
void abx_lerr_push(lua_State *L, const struct abx_err *e)
{
    abx_error_push(L, abx_errclass_name(e->cls), e->message);
    if (e->status) {
        lua_pushinteger(L, e->status);
        lua_setfield(L, -2, "status");
    }
    if (e->code[0]) {
        lua_pushstring(L, e->code);
        lua_setfield(L, -2, "code");
    }
    if (e->body_code) {
        lua_pushinteger(L, e->body_code);
        lua_setfield(L, -2, "body_code");
    }
}

int abx_lerr_raise(lua_State *L, const struct abx_err *e)
{
    /* A call cut short by the test's deadline or an interrupt ends the
     * test as the runner's own timeout/interrupt, not as an error. */
    if (e->cls == ABX_E_CANCELED || e->cls == ABX_E_TIMEOUT)
        abx_region_check(L);
    abx_lerr_push(L, e);
    abx_ltrace_raise(L, -1);
    return lua_error(L);
}

/* ---- JSON ------------------------------------------------------------- */
void abx_ljson_push(lua_State *L, const cJSON *v)
{
    const cJSON *c;
    lua_Integer i = 1;

    luaL_checkstack(L, 4, "JSON value too deeply nested");
    if (!v || cJSON_IsNull(v) || cJSON_IsInvalid(v)) {
        lua_pushnil(L);
    } else if (cJSON_IsBool(v)) {
        lua_pushboolean(L, cJSON_IsTrue(v));
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        long long exact;
        if (abx_json_exact_int(v, &exact) == 0)   /* beyond 2^53 (jsonexact.c) */
            lua_pushinteger(L, (lua_Integer)exact);
        else if (floor(d) == d && fabs(d) < 9007199254740992.0)
            lua_pushinteger(L, (lua_Integer)d);
        else
            lua_pushnumber(L, d);
    } else if (cJSON_IsString(v)) {
        lua_pushstring(L, v->valuestring ? v->valuestring : "");
    } else if (cJSON_IsArray(v)) {
        lua_createtable(L, cJSON_GetArraySize(v), 0);
        cJSON_ArrayForEach(c, v) {
            abx_ljson_push(L, c);
            lua_rawseti(L, -2, i++);
        }
    } else {  /* object */
        lua_newtable(L);
        cJSON_ArrayForEach(c, v) {
            if (!c->string)
                continue;
            abx_ljson_push(L, c);
            lua_setfield(L, -2, c->string);
        }
    }
}

/* Raises a luaL_argerror naming the option (if any) and the problem. */
static int map_error(lua_State *L, int arg, const char *what,
                     const char *problem)
{
    if (what)
        lua_pushfstring(L, "%s: %s", what, problem);
    else
        lua_pushstring(L, problem);
    return luaL_argerror(L, arg, lua_tostring(L, -1));
}

cJSON *abx_ljson_string_map_opt(lua_State *L, int idx, int arg,
                                const char *what)
{
    cJSON *obj;

    idx = lua_absindex(L, idx);
    if (lua_isnoneornil(L, idx))
        return NULL;
    if (lua_type(L, idx) != LUA_TTABLE)
        map_error(L, arg, what, lua_pushfstring(L, "table of strings "
                  "expected, got %s", luaL_typename(L, idx)));
    /* First pass: every check that may raise, before anything is owned. */
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        size_t kl, vl;
        const char *k;
        if (lua_type(L, -2) != LUA_TSTRING)
            map_error(L, arg, what, lua_pushfstring(L, "keys must be "
                      "strings, got %s", luaL_typename(L, -2)));
        k = lua_tolstring(L, -2, &kl);
        if (lua_type(L, -1) != LUA_TSTRING)
            map_error(L, arg, what, lua_pushfstring(L, "value of '%s' must "
                      "be a string, got %s", k, luaL_typename(L, -1)));
        lua_tolstring(L, -1, &vl);
        if (kl == 0)
            map_error(L, arg, what, "keys must not be empty");
        if (strlen(k) != kl || strlen(lua_tostring(L, -1)) != vl)
            map_error(L, arg, what, lua_pushfstring(L, "key '%s' or its "
                      "value contains a NUL byte", k));
        lua_pop(L, 1);
    }
    /* Second pass: building cannot raise. */
    obj = cJSON_CreateObject();
    if (!obj)
        goto oom;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (!cJSON_AddStringToObject(obj, lua_tostring(L, -2),
                                     lua_tostring(L, -1))) {
            lua_pop(L, 2);
            cJSON_Delete(obj);
            goto oom;
        }
        lua_pop(L, 1);
    }
    return obj;
oom:
    luaL_error(L, "out of memory");
    return NULL;
}

cJSON *abx_ljson_env_map(lua_State *L, int idx, int arg)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) == LUA_TTABLE) {
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            if (lua_type(L, -2) == LUA_TSTRING &&
                strchr(lua_tostring(L, -2), '='))
                map_error(L, arg, "envs", lua_pushfstring(L, "name '%s' "
                          "contains '='", lua_tostring(L, -2)));
            lua_pop(L, 1);
        }
    }
    return abx_ljson_string_map_opt(L, idx, arg, "envs");
}

cJSON *abx_ljson_string_map(lua_State *L, int idx, int arg)
{
    return abx_ljson_string_map_opt(L, idx, arg, NULL);
}

/* ---- platform and cancellation ---------------------------------------- */
const struct abx_platform *abx_lsandbox_platform(lua_State *L)
{
    const struct abx_e2e_host *h = abx_e2e_host_of(L);

    if (!h->set->platform)
        luaL_error(L, "no sandbox platform configured (missing credentials:"
                   " %s): set them, or add --local to run on a local "
                   "abx-local", h->set->missing_credentials &&
                   h->set->missing_credentials[0] ? h->set->missing_credentials
                                             : "ABX_SANDBOX_API_KEY");
    return h->set->platform;
}

/* 1: interrupted (only where the region may be interrupted: teardown
 * steps keep going so that sandboxes are still deleted on SIGINT);
 * 2: the region's deadline passed. */
static int cancel_check(void)
{
    double dl;

    if (abx_region_interrupted() && abx_region_interruptible())
        return 1;
    dl = abx_region_deadline();
    if (dl > 0 && abx_clock() >= dl)
        return 2;
    return 0;
}

void abx_lsandbox_install_cancel(void)
{
    abx_http_set_cancel(cancel_check);
}
