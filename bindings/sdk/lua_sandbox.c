/* Module e2e.sandbox (docs/lua-api.md): create/connect/kill and the
 * sandbox userdata (metatable e2e.Sandbox); list and the info tables are
 * in lua_sbxlist.c. Creation goes only through abx_track_create, which
 * tags, records in the ledger and registers the sandbox in the group of
 * the current scope before Lua sees the handle.
 * The tracked record outlives every handle, so __gc only frees what the
 * handle itself owns (its envd endpoint, a connected sandbox's info). */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "e2e_raise.h"
#include "e2e_trace.h"
#include "lua_code.h"
#include "lua_commands.h"
#include "lua_e2e.h"
#include "lua_files.h"
#include "lua_json.h"
#include "lua_sandbox.h"
#include "lua_sbxhttp.h"
#include "lua_sbxlist.h"
#include "lua_sbxmap.h"
#include "lua_sbxplat.h"
#include "lua_sbxtype.h"
#include "lua_util.h"

#define SCOPE_KEY "e2e.sandbox_scope"   /* prelude's group provider */
#define UV_COMMANDS 1
#define UV_FILES 2

/* ---- the sandbox userdata -------------------------------------------- */
static struct abx_lsandbox *sbx_new(lua_State *L)
{
    struct abx_lsandbox *s = lua_newuserdatauv(L, sizeof *s, 2);

    memset(s, 0, sizeof *s);
    luaL_setmetatable(L, ABX_SANDBOX_MT);
    return s;
}

/* Fills the envd endpoint once the info is known; raises on failure (the
 * userdata, already anchored, frees what was made). */
static void sbx_ready(lua_State *L, struct abx_lsandbox *s)
{
    struct abx_err err;

    if (s->t)
        s->gen = s->t->gen;
    if (abx_endpoint_init(&s->envd, abx_lsandbox_platform(L),
                          abx_lsandbox_info(s), ABX_ENVD_PORT, &err) != 0)
        abx_err_raise(L, &err);
}

static int sbx_gc(lua_State *L)
{
    struct abx_lsandbox *s = luaL_checkudata(L, 1, ABX_SANDBOX_MT);

    abx_endpoint_free(&s->envd);
    if (!s->t)
        abx_sandbox_info_free(&s->own);
    s->closed = 1;
    return 0;
}

static int sbx_tostring(lua_State *L)
{
    struct abx_lsandbox *s = luaL_checkudata(L, 1, ABX_SANDBOX_MT);

    lua_pushfstring(L, "Sandbox(%s)", abx_lsandbox_info(s)->sandbox_id);
    return 1;
}

/* Cached sbx.commands / sbx.files. */
static void push_sub(lua_State *L, int uv, void (*make)(lua_State *, int))
{
    if (lua_getiuservalue(L, 1, uv) != LUA_TNIL)
        return;
    lua_pop(L, 1);
    make(L, 1);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, 1, uv);
}

static int sbx_index(lua_State *L)
{
    struct abx_lsandbox *s = luaL_checkudata(L, 1, ABX_SANDBOX_MT);
    const struct abx_sandbox_info *i = abx_lsandbox_info(s);
    const char *k = lua_tostring(L, 2);

    if (lua_getfield(L, lua_upvalueindex(1), k ? k : "") != LUA_TNIL ||
        !k)
        return 1;
    if (strcmp(k, "id") == 0 || strcmp(k, "sandbox_id") == 0)
        lua_pushstring(L, i->sandbox_id);
    else if (strcmp(k, "template_id") == 0)
        lua_pushstring(L, i->template_id);
    else if (strcmp(k, "envd_version") == 0)
        lua_pushstring(L, i->envd_version);
    else if (strcmp(k, "domain") == 0)
        lua_pushstring(L, i->domain[0] ? i->domain
                                       : abx_lsandbox_platform(L)->domain);
    else if (strcmp(k, "commands") == 0)
        push_sub(L, UV_COMMANDS, abx_lcommands_push);
    else if (strcmp(k, "files") == 0)
        push_sub(L, UV_FILES, abx_lfiles_push);
    else
        lua_pushnil(L);
    return 1;
}

static int sbx_newindex(lua_State *L)
{
    return luaL_error(L, "cannot set field '%s' of a Sandbox",
                      luaL_tolstring(L, 2, NULL));
}

/* ---- module functions ------------------------------------------------- */
/* The group of the current scope (prelude: current finalizer stack). */
static lua_Integer current_group(lua_State *L)
{
    lua_Integer g;

    if (lua_getfield(L, LUA_REGISTRYINDEX, SCOPE_KEY) != LUA_TFUNCTION)
        luaL_error(L, "sandbox.create: only inside a test or a fixture");
    lua_call(L, 0, 1);
    if (!lua_isinteger(L, -1))
        luaL_error(L, "sandbox.create: only inside a test or a fixture");
    g = lua_tointeger(L, -1);
    lua_pop(L, 1);
    return g;
}

static long default_ttl(lua_State *L)
{
    return abx_e2e_host_of(L)->set->sandbox_ttl;
}

static long opt_timeout(lua_State *L, int arg, const char *key, long def)
{
    lua_Integer v = abx_lopt_integer(L, arg, key, def);

    if (v <= 0 || v > 86400L * 30)
        luaL_argerror(L, arg, lua_pushfstring(L, "option '%s': seconds out "
                      "of range (1 to 2592000)", key));
    return (long)v;
}

/* ---- create{network=} --------------------------------------------- */
static int net_error(lua_State *L, const char *problem)
{
    return luaL_argerror(L, 1, lua_pushfstring(L, "network: %s", problem));
}

/* Checks network[key] (at idx) is nil or a list of strings (keys exactly
 * 1..n, read raw); returns n, or -1 when absent. Raises on anything
 * else, before anything is allocated. */
static lua_Integer net_list_check(lua_State *L, int idx, const char *key)
{
    lua_Integer n, count = 0;
    int list;

    lua_pushstring(L, key);
    if (lua_rawget(L, idx) == LUA_TNIL) {
        lua_pop(L, 1);
        return -1;
    }
    list = lua_gettop(L);
    if (lua_type(L, list) != LUA_TTABLE)
        net_error(L, lua_pushfstring(L, "'%s' must be a list of strings, "
                                     "got %s", key, luaL_typename(L, list)));
    n = (lua_Integer)lua_rawlen(L, list);
    lua_pushnil(L);
    while (lua_next(L, list)) {
        size_t len;
        if (!lua_isinteger(L, -2) || lua_tointeger(L, -2) < 1 ||
            lua_tointeger(L, -2) > n)
            net_error(L, lua_pushfstring(L, "'%s' must be a list of "
                      "strings (1..n), has key %s", key,
                      luaL_tolstring(L, -2, NULL)));
        if (lua_type(L, -1) != LUA_TSTRING)
            net_error(L, lua_pushfstring(L, "'%s' item %d must be a string, "
                      "got %s", key, (int)lua_tointeger(L, -2),
                      luaL_typename(L, -1)));
        lua_tolstring(L, -1, &len);
        if (strlen(lua_tostring(L, -1)) != len || len == 0)
            net_error(L, lua_pushfstring(L, "'%s' item %d is empty or "
                      "contains a NUL byte", key, (int)lua_tointeger(L, -2)));
        count++;
        lua_pop(L, 1);
    }
    if (count != n)
        net_error(L, lua_pushfstring(L, "'%s' must be a list of strings "
                                     "(no holes)", key));
    lua_pop(L, 1);
    return n;
}

/* network[key] as a JSON array (checked by net_list_check); NULL when
 * out of memory. */
static cJSON *net_list_build(lua_State *L, int idx, const char *key,
                             lua_Integer n)
{
    cJSON *a = cJSON_CreateArray();
    lua_Integer i;

    lua_pushstring(L, key);
    lua_rawget(L, idx);
    for (i = 1; a && i <= n; i++) {
        cJSON *v;
        lua_rawgeti(L, -1, i);
        v = cJSON_CreateString(lua_tostring(L, -1));
        lua_pop(L, 1);
        if (!v || !cJSON_AddItemToArray(a, v)) {
            cJSON_Delete(v);
            cJSON_Delete(a);
            a = NULL;
        }
    }
    lua_pop(L, 1);
    return a;
}

/* create's network = {allow_public_traffic=, allow_out=, deny_out=} into
 * o (lists owned by the boxes, which the caller releases). */
static void net_opts(lua_State *L, struct abx_create_opts *o,
                     struct abx_lbox *allow, struct abx_lbox *deny)
{
    static const char *const known[] = {"allow_public_traffic", "allow_out",
                                        "deny_out", NULL};
    const char *const *k;
    lua_Integer na, nd;
    int net;

    if (!abx_lopt_push(L, 1, "network", LUA_TTABLE)) {
        lua_pop(L, 1);
        return;
    }
    net = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, net)) {
        for (k = known; lua_type(L, -2) == LUA_TSTRING && *k; k++)
            if (strcmp(*k, lua_tostring(L, -2)) == 0)
                break;
        if (lua_type(L, -2) != LUA_TSTRING || !*k)
            net_error(L, lua_pushfstring(L, "unknown option '%s'",
                                         luaL_tolstring(L, -2, NULL)));
        lua_pop(L, 1);
    }
    lua_pushstring(L, "allow_public_traffic");
    switch (lua_rawget(L, net)) {
    case LUA_TNIL:
        break;
    case LUA_TBOOLEAN:
        o->public_traffic = lua_toboolean(L, -1) ? ABX_PUBLIC_TRAFFIC_ALLOW
                                                 : ABX_PUBLIC_TRAFFIC_DENY;
        break;
    default:
        net_error(L, lua_pushfstring(L, "'allow_public_traffic' must be a "
                                     "boolean, got %s", luaL_typename(L, -1)));
    }
    lua_pop(L, 1);
    na = net_list_check(L, net, "allow_out");
    nd = net_list_check(L, net, "deny_out");
    if ((na >= 0 && !(allow->json = net_list_build(L, net, "allow_out", na))) ||
        (nd >= 0 && !(deny->json = net_list_build(L, net, "deny_out", nd)))) {
        abx_lbox_release(allow);
        luaL_error(L, "out of memory");
    }
    o->allow_out = allow->json;
    o->deny_out = deny->json;
    lua_pop(L, 1);
}

/* sandbox.create{template=, timeout=, metadata=, envs=, secure=,
 * allow_internet_access=, network=} */
static int l_create(lua_State *L)
{
    static const char *const known[] = {"template", "timeout", "metadata",
        "envs", "secure", "allow_internet_access", "network", NULL};
    struct abx_create_opts o;
    struct abx_lbox *md, *envs, *allow, *deny;
    struct abx_lsandbox *s;
    struct abx_tracked *t;
    struct abx_err err;
    lua_Integer group;

    memset(&o, 0, sizeof o);
    abx_lopt_check(L, 1, "create", known);
    o.template_id = abx_lopt_string(L, 1, "template", "base");
    if (!o.template_id[0])
        luaL_argerror(L, 1, "option 'template': must not be empty");
    o.timeout = opt_timeout(L, 1, "timeout", default_ttl(L));
    o.secure = abx_lopt_bool(L, 1, "secure", 1);
    o.allow_internet = -1;
    if (abx_lopt_push(L, 1, "allow_internet_access", LUA_TBOOLEAN))
        o.allow_internet = lua_toboolean(L, -1);
    lua_pop(L, 1);
    /* Each map goes into a box as it is built, so a bad envs table after a
     * good metadata one strands nothing. */
    abx_lopt_push(L, 1, "metadata", LUA_TTABLE);
    abx_lopt_push(L, 1, "envs", LUA_TTABLE);
    md = abx_lbox_push(L, 0);
    envs = abx_lbox_push(L, 0);
    md->json = abx_lopt_string_map(L, -4, 1, "metadata");
    envs->json = abx_lopt_env_map(L, -3, 1);
    o.metadata = md->json;
    o.envs = envs->json;
    allow = abx_lbox_push(L, 0);
    deny = abx_lbox_push(L, 0);
    net_opts(L, &o, allow, deny);
    group = current_group(L);
    abx_lsandbox_platform(L);  /* raises now without a platform */
    s = sbx_new(L);
    t = abx_track_create((uint64_t)group, NULL, &o, &err);
    abx_lbox_release(md);
    abx_lbox_release(envs);
    abx_lbox_release(allow);
    abx_lbox_release(deny);
    if (!t)
        return abx_err_raise(L, &err);
    s->t = t;
    sbx_ready(L, s);
    return 1;
}

/* Connects the userdata s (at the top) to id; tracked ids share their
 * record. */
static void do_connect(lua_State *L, struct abx_lsandbox *s, const char *id,
                       long timeout)
{
    const struct abx_platform *p = abx_lsandbox_platform(L);
    struct abx_tracked *t = abx_track_find(id);
    struct abx_linfobox *b = abx_linfobox_push(L);
    struct abx_err err;

    if (abx_api_connect(p, id, timeout, t ? &b->info : &s->own, &err) != 0)
        abx_err_raise(L, &err);
    /* Every connect reply carries the tokens: the tracked record (and so
     * every handle of it) takes them. */
    if (t)
        abx_track_refresh(t, &b->info);
    lua_pop(L, 1);  /* the box: its info (if used) freed by __gc */
    s->t = t;
    abx_track_touch(t);
    sbx_ready(L, s);
}

/* sandbox.connect(id, {timeout=}) and sbx:connect{timeout=}: the id is
 * arg 1, or the one of `from`; the options are arg 2. */
static int connect_common(lua_State *L, struct abx_lsandbox *from)
{
    static const char *const known[] = {"timeout", NULL};
    long timeout;

    abx_lopt_check(L, 2, "connect", known);
    timeout = opt_timeout(L, 2, "timeout", default_ttl(L));
    lua_settop(L, 2);
    if (from)
        lua_pushstring(L, abx_lsandbox_info(from)->sandbox_id);
    else
        lua_pushvalue(L, 1);
    do_connect(L, sbx_new(L), lua_tostring(L, 3), timeout);
    return 1;
}

static int l_connect(lua_State *L)
{
    abx_lcheck_cstring(L, 1);
    return connect_common(L, NULL);
}

/* Pushes rc == 1 as a boolean, or raises err when rc < 0. */
static int bool_result(lua_State *L, int rc, const struct abx_err *err)
{
    if (rc < 0)
        return abx_err_raise(L, err);
    lua_pushboolean(L, rc == 1);
    return 1;
}

/* sandbox.kill(id) -> bool */
static int l_kill(lua_State *L)
{
    const char *id = abx_lcheck_cstring(L, 1);
    const struct abx_platform *p = abx_lsandbox_platform(L);
    struct abx_tracked *t = abx_track_find(id);
    struct abx_err err;

    if (t)
        return bool_result(L, abx_track_kill(t, &err), &err);
    return bool_result(L, abx_api_kill(p, id, &err), &err);
}

/* ---- methods ---------------------------------------------------------- */
static int m_info(lua_State *L)
{
    struct abx_lsandbox *s = abx_lsandbox_check(L, 1);
    struct abx_linfobox *b = abx_linfobox_push(L);
    struct abx_err err;

    if (abx_api_get(abx_lsandbox_platform(L), abx_lsandbox_info(s)->sandbox_id,
                    &b->info, &err) != 0)
        return abx_err_raise(L, &err);
    abx_linfo_push(L, &b->info);
    return 1;
}

/* kill and is_running ask the platform even after a kill, as E2B's SDK
 * does (false: gone), so a test of a kill checks the platform's answer,
 * not the handle's memory of it. */
static int m_kill(lua_State *L)
{
    struct abx_lsandbox *s = abx_lsandbox_check_open(L, 1);
    struct abx_err err;
    int rc;

    if (s->t && !abx_lsandbox_killed(s))
        rc = abx_track_kill(s->t, &err);
    else
        rc = abx_api_kill(abx_lsandbox_platform(L), abx_lsandbox_info(s)->sandbox_id, &err);
    if (rc >= 0)
        s->killed = 1;
    return bool_result(L, rc, &err);
}

static int m_set_timeout(lua_State *L)
{
    struct abx_lsandbox *s = abx_lsandbox_check(L, 1);
    lua_Integer sec = luaL_checkinteger(L, 2);
    struct abx_err err;

    luaL_argcheck(L, sec > 0 && sec <= 86400L * 30, 2,
                  "seconds out of range (1 to 2592000)");
    if (abx_api_set_timeout(abx_lsandbox_platform(L),
                            abx_lsandbox_info(s)->sandbox_id, (long)sec,
                            &err) != 0)
        return abx_err_raise(L, &err);
    return 0;
}

static int m_is_running(lua_State *L)
{
    struct abx_lsandbox *s = abx_lsandbox_check_open(L, 1);
    struct abx_err err;
    int rc;

    abx_lsandbox_sync(L, s);
    abx_track_touch(s->t);
    rc = abx_envd_health(&s->envd, &err);
    if (rc < 0 && err.cls == ABX_E_NOT_FOUND)
        rc = 0;
    return bool_result(L, rc, &err);
}

static int m_connect(lua_State *L)
{
    return connect_common(L, abx_lsandbox_check(L, 1));
}

/* sbx:pause{keep_memory=true} */
static int m_pause(lua_State *L)
{
    static const char *const known[] = {"keep_memory", NULL};
    struct abx_lsandbox *s = abx_lsandbox_check(L, 1);
    struct abx_err err;
    int keep;

    abx_lopt_check(L, 2, "pause", known);
    keep = abx_lopt_bool(L, 2, "keep_memory", 1);
    return bool_result(L, abx_api_pause(abx_lsandbox_platform(L),
                                        abx_lsandbox_info(s)->sandbox_id,
                                        keep, &err), &err);
}

static int m_metrics(lua_State *L)
{
    struct abx_lsandbox *s = abx_lsandbox_check(L, 1);
    struct abx_lbox *b = abx_lbox_push(L, 0);
    struct abx_err err;

    /* Before 0.1.5 the SDK refuses; before 0.2.4 it only logs a warning
     * (to a logger nobody sets by default): nothing to do there. */
    if (abx_envd_require(&s->envd.ver, ABX_ENVD_METRICS, &err) != 0)
        return abx_err_raise(L, &err);
    if (abx_api_metrics(abx_lsandbox_platform(L),
                        abx_lsandbox_info(s)->sandbox_id, 0, 0, &b->json,
                        &err) != 0)
        return abx_err_raise(L, &err);
    abx_json_push(L, b->json);
    abx_lbox_release(b);
    return 1;
}

static int check_port(lua_State *L, int arg)
{
    lua_Integer port = luaL_checkinteger(L, arg);

    luaL_argcheck(L, port >= 1 && port <= 65535, arg,
                  "port out of range (1 to 65535)");
    return (int)port;
}

static int m_get_host(lua_State *L)
{
    struct abx_lsandbox *s = abx_lsandbox_check(L, 1);
    int port = check_port(L, 2);
    char host[512];

    if (abx_endpoint_host(abx_lsandbox_platform(L), abx_lsandbox_info(s),
                          port, host, sizeof host) != 0)
        return luaL_error(L, "get_host: host name too long");
    lua_pushstring(L, host);
    return 1;
}

/* Validates a URL path: starts with '/', no whitespace or control bytes. */
static const char *check_path(lua_State *L, int arg, const char *path)
{
    const unsigned char *p = (const unsigned char *)path;

    if (path[0] != '/')
        luaL_argerror(L, arg, "path must start with '/'");
    for (; *p; p++)
        if (*p <= 0x20 || *p == 0x7f)
            luaL_argerror(L, arg, "path contains a space or control byte");
    return path;
}

static int m_url(lua_State *L)
{
    struct abx_lsandbox *s = abx_lsandbox_check(L, 1);
    int port = check_port(L, 2);
    const char *path = check_path(L, 3, abx_lopt_cstring(L, 3, "/"));
    struct abx_endpoint ep;
    struct abx_err err;
    char base[sizeof ep.base_url];

    if (abx_endpoint_init(&ep, abx_lsandbox_platform(L), abx_lsandbox_info(s),
                          port, &err) != 0)
        return abx_err_raise(L, &err);
    /* The host-name form when there is a domain: a URL that works as it
     * is, in any client (the single data-plane URL needs our routing
     * headers, which only sbx:http sends). */
    memcpy(base, ep.direct_url[0] ? ep.direct_url : ep.base_url, sizeof base);
    abx_endpoint_free(&ep);
    lua_pushfstring(L, "%s%s", base, path);
    return 1;
}

static const luaL_Reg sbx_methods[] = {
    {"info", m_info},
    {"kill", m_kill},
    {"set_timeout", m_set_timeout},
    {"is_running", m_is_running},
    {"connect", m_connect},
    {"pause", m_pause},
    {"metrics", m_metrics},
    {"get_host", m_get_host},
    {"url", m_url},
    {"http", abx_lsandbox_http},
    {"run_code", abx_lcode_run},
    {"create_code_context", abx_lcode_create_context},
    {NULL, NULL},
};

/* default_user (E2E_DEFAULT_USER) and default_home: /root for root, else
 * /home/<user>, as E2B's templates lay them out. */
static void push_default_user(lua_State *L, const char *user)
{
    lua_pushstring(L, user);
    lua_setfield(L, -2, "default_user");
    if (strcmp(user, "root") == 0)
        lua_pushliteral(L, "/root");
    else
        lua_pushfstring(L, "/home/%s", user);
    lua_setfield(L, -2, "default_home");
}

int luaopen_e2e_sandbox(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        {"create", l_create},
        {"connect", l_connect},
        {"list", abx_lsandbox_list},
        {"kill", l_kill},
        {NULL, NULL},
    };
    const struct abx_e2e_host *h = abx_e2e_host_of(L);

    if (luaL_newmetatable(L, ABX_SANDBOX_MT)) {
        abx_ltrace_newlib(L, sbx_methods, "sandbox");
        lua_pushcclosure(L, sbx_index, 1);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, sbx_newindex);
        lua_setfield(L, -2, "__newindex");
        lua_pushcfunction(L, sbx_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushcfunction(L, sbx_tostring);
        lua_setfield(L, -2, "__tostring");
    }
    lua_pop(L, 1);
    abx_lsandbox_install_cancel();
    abx_ltrace_newlib(L, funcs, "sandbox");
    lua_pushinteger(L, default_ttl(L));
    lua_setfield(L, -2, "default_timeout");
    lua_pushstring(L, h->set->server_template);
    lua_setfield(L, -2, "server_template");
    lua_pushinteger(L, h->set->server_port);
    lua_setfield(L, -2, "server_port");
    lua_pushinteger(L, h->set->short_ttl);
    lua_setfield(L, -2, "short_ttl");
    push_default_user(L, h->set->default_user);
    return 1;
}
