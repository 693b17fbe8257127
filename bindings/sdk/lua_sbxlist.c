/* sandbox.list (docs/lua-api.md) and the info tables it shares with
 * sbx:info() and sandbox.connect (lua_sandbox.c): C-owned replies are
 * anchored in a box userdata while they are turned into Lua, so a raise
 * strands nothing. */
#define _DEFAULT_SOURCE  /* explicit_bzero */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "e2e_raise.h"
#include "lua_json.h"
#include "lua_sbxlist.h"
#include "lua_sbxmap.h"
#include "lua_sbxplat.h"
#include "lua_sbxtype.h"
#include "lua_util.h"

#define INFOBOX_MT "e2e.SandboxInfoBox"

/* ---- an anchor for C-owned replies while they are turned into Lua ---- */
static int infobox_gc(lua_State *L)
{
    struct abx_linfobox *b = luaL_checkudata(L, 1, INFOBOX_MT);
    abx_sandbox_info_free(&b->info);
    abx_list_page_free(&b->page);
    return 0;
}

struct abx_linfobox *abx_linfobox_push(lua_State *L)
{
    struct abx_linfobox *b = lua_newuserdatauv(L, sizeof *b, 0);

    memset(b, 0, sizeof *b);
    if (luaL_newmetatable(L, INFOBOX_MT)) {
        lua_pushcfunction(L, infobox_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return b;
}

static void set_str(lua_State *L, const char *key, const char *v)
{
    if (v && v[0]) {
        lua_pushstring(L, v);
        lua_setfield(L, -2, key);
    }
}

static void set_int(lua_State *L, const char *key, long v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, key);
}

/* info.network: the reply's network object in the create option's
 * names (allowPublicTraffic -> allow_public_traffic, allowOut ->
 * allow_out, denyOut -> deny_out); other members pass unrenamed. */
static void push_network(lua_State *L, const cJSON *net)
{
    static const char *const names[][2] = {
        {"allowPublicTraffic", "allow_public_traffic"},
        {"allowOut", "allow_out"},
        {"denyOut", "deny_out"},
    };
    const cJSON *m;
    size_t k;

    lua_newtable(L);
    cJSON_ArrayForEach(m, net) {
        const char *key = m->string;
        if (!key || cJSON_IsNull(m))
            continue;
        for (k = 0; k < sizeof names / sizeof names[0]; k++)
            if (strcmp(key, names[k][0]) == 0)
                key = names[k][1];
        abx_json_push(L, m);
        lua_setfield(L, -2, key);
    }
}

void abx_linfo_push(lua_State *L, const struct abx_sandbox_info *i)
{
    const cJSON *net = cJSON_GetObjectItemCaseSensitive(i->raw, "network");

    lua_createtable(L, 0, 12);
    set_str(L, "sandbox_id", i->sandbox_id);
    set_str(L, "template_id", i->template_id);
    set_str(L, "name", i->alias);
    set_str(L, "client_id", i->client_id);
    set_str(L, "started_at", i->started_at);
    set_str(L, "end_at", i->end_at);
    set_str(L, "state", i->state);
    set_str(L, "envd_version", i->envd_version);
    set_int(L, "cpu_count", i->cpu_count);
    set_int(L, "memory_mb", i->memory_mb);
    set_int(L, "disk_size_mb", i->disk_size_mb);
    if (i->metadata)
        abx_json_push(L, i->metadata);
    else
        lua_newtable(L);
    lua_setfield(L, -2, "metadata");
    if (cJSON_IsObject(net)) {
        push_network(L, net);
        lua_setfield(L, -2, "network");
    }
}

/* list{api_key=}: another key, checked before anything holds a copy of
 * it. Messages never quote it: it is no configured secret, so the masker
 * does not know it. NULL when absent. */
static const char *opt_api_key(lua_State *L, size_t cap)
{
    const char *k = abx_lopt_string(L, 1, "api_key", NULL);

    if (k && strlen(k) >= cap)
        luaL_argerror(L, 1, lua_pushfstring(L, "option 'api_key': longer "
                      "than %d bytes", (int)cap - 1));
    if (k && strpbrk(k, "\r\n"))
        luaL_argerror(L, 1, "option 'api_key': contains a line break");
    return k;
}

/* sandbox.list{metadata=, state=, limit=, api_key=} -> array of infos */
int abx_lsandbox_list(lua_State *L)
{
    static const char *const known[] = {"metadata", "state", "limit",
                                        "api_key", NULL};
    const struct abx_platform *p;
    struct abx_platform other;
    struct abx_list_query q;
    struct abx_lbox *md;
    struct abx_linfobox *b;
    struct abx_err err;
    lua_Integer limit;
    const char *key;
    int given, rc;
    size_t i;

    memset(&q, 0, sizeof q);
    abx_lopt_check(L, 1, "list", known);
    q.state = abx_lopt_string(L, 1, "state", NULL);
    if (q.state && strcmp(q.state, "running") != 0 &&
        strcmp(q.state, "paused") != 0 &&
        strcmp(q.state, "running,paused") != 0 &&
        strcmp(q.state, "paused,running") != 0)
        luaL_argerror(L, 1, "option 'state': expected \"running\", "
                      "\"paused\" or \"running,paused\"");
    /* Absent: the platform's page size (0); given: 1..100. */
    given = abx_lopt_push(L, 1, "limit", LUA_TNUMBER);
    lua_pop(L, 1);
    limit = abx_lopt_integer(L, 1, "limit", 0);
    if (given && (limit < 1 || limit > 100))
        luaL_argerror(L, 1, "option 'limit': page size out of range (1 to "
                      "100)");
    q.limit = (long)limit;
    abx_lopt_push(L, 1, "metadata", LUA_TTABLE);
    md = abx_lbox_push(L, 0);
    md->json = abx_lopt_string_map(L, -2, 1, "metadata");
    q.metadata = md->json;
    key = opt_api_key(L, sizeof other.api_key);
    p = abx_lsandbox_platform(L);
    b = abx_linfobox_push(L);
    if (key) {
        other = *p;
        memset(other.api_key, 0, sizeof other.api_key);
        memcpy(other.api_key, key, strlen(key));
        p = &other;
    }
    rc = abx_api_list_all(p, &q, 0, &b->page, &err);
    if (key)  /* the copy held the configured key, then this one */
        explicit_bzero(other.api_key, sizeof other.api_key);
    if (rc != 0)
        return abx_err_raise(L, &err);
    lua_createtable(L, (int)b->page.n, 0);
    for (i = 0; i < b->page.n; i++) {
        abx_linfo_push(L, &b->page.items[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}
