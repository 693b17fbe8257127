/* The core `e2e` module: C mechanism (table `core`) handed to the embedded
 * Lua chunks expect.lua (errors, assertions) and prelude.lua (the DSL and
 * the runner), which build the module on top of it. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "abx_embedded.h"
#include "api.h"
#include "caps.h"
#include "envd_version.h"
#include "e2e_error.h"
#include "e2e_trace.h"
#include "lua_e2e.h"
#include "out.h"



static int core_clock(lua_State *L)
{
    lua_pushnumber(L, abx_clock());
    return 1;
}

static int core_emit(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    const struct abx_e2e_host *h = abx_e2e_host_of(L);

    if (h->emit)
        h->emit(h->ud, s, len);
    return 0;
}

/* The metatable of every e2e error value (e2e_error.h), for the Lua
 * side's own errors (expect.lua, remote.lua). */
static int core_error_mt(lua_State *L)
{
    abx_err_mt(L);
    return 1;
}

/* core.error_text(err): the text a report shows for an error value of
 * ours (e2e_error.h); anything else through tostring. */
static int core_error_text(lua_State *L)
{
    if (abx_err_is(L, 1))
        abx_err_push_text(L, 1);
    else
        luaL_tolstring(L, 1, NULL);
    return 1;
}

static int core_session_fixture(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    const struct abx_e2e_host *h = abx_e2e_host_of(L);

    if (!h->session_fixture)
        return luaL_error(L, "session fixture '%s' is not available here",
                          name);
    lua_settop(L, 1);
    h->session_fixture(h->ud, L, name);
    return 1;
}

void abx_e2e_add_secret(lua_State *L, const char *s, size_t len)
{
    const struct abx_e2e_host *h = abx_e2e_host_of(L);

    if (abx_mask_add(abx_out_masker(), s, len) == 0 && h->secret)
        h->secret(h->ud, s, len);
}

/* e2e.secret(value): masks value everywhere from now on; returns it. */
static int core_secret(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);

    if (len < ABX_MASK_MIN_LEN)
        return luaL_argerror(L, 1, "secret too short to be masked safely");
    if (len > ABX_MASK_MAX_LEN)
        return luaL_argerror(L, 1, "secret too long");
    abx_e2e_add_secret(L, s, len);
    lua_settop(L, 1);
    return 1;
}

/* Self-test only: a real crash, so the worker-crash path is tested. */
static int core_crash(lua_State *L)
{
    (void)L;
    abx_out_flush();
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    return 0;
}

/* core.envd_version_cmp(a, b) -> -1|0|1, or nil and a message when
 * either is not a version: the client's own comparison
 * (runtime/client/envd_version.h), so a test's gate agrees with the client's. */
static int core_envd_version_cmp(lua_State *L)
{
    struct abx_envd_version a, b;
    const char *sa = luaL_checkstring(L, 1), *sb = luaL_checkstring(L, 2);
    int c;

    if (abx_envd_version_parse(sa, &a) != 0 || a.state != ABX_ENVD_VER_OK ||
        abx_envd_version_parse(sb, &b) != 0 || b.state != ABX_ENVD_VER_OK) {
        lua_pushnil(L);
        lua_pushfstring(L, "not an envd version: '%s'",
                        a.state != ABX_ENVD_VER_OK ? sa : sb);
        return 2;
    }
    c = abx_envd_version_cmp(&a, &b);
    lua_pushinteger(L, c < 0 ? -1 : c > 0);
    return 1;
}

/* config.platform, config.caps {name = true} and config.cap_names (every
 * known name, for checking what a test declares). */
static void set_caps(lua_State *L, const struct abx_e2e_host *h)
{
    int i;

    lua_pushstring(L, h->set->platform_kind);
    lua_setfield(L, -2, "platform");
    lua_createtable(L, 0, ABX_CAP_COUNT);
    for (i = 0; i < ABX_CAP_COUNT; i++)
        if (h->set->caps & (1u << i)) {
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, abx_cap_name(i));
        }
    lua_setfield(L, -2, "caps");
    lua_createtable(L, ABX_CAP_COUNT, 0);
    for (i = 0; i < ABX_CAP_COUNT; i++) {
        lua_pushstring(L, abx_cap_name(i));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "cap_names");
}

static void set_config(lua_State *L, const struct abx_e2e_host *h)
{
    lua_createtable(L, 0, 6);
    lua_pushnumber(L, h->set->timeout);
    lua_setfield(L, -2, "timeout");
    lua_pushnumber(L, h->set->teardown_budget);
    lua_setfield(L, -2, "teardown_budget");
    lua_pushboolean(L, h->set->capture);
    lua_setfield(L, -2, "capture");
    lua_pushboolean(L, h->set->has_credentials);
    lua_setfield(L, -2, "has_credentials");
    lua_pushboolean(L, h->set->allow_skips);
    lua_setfield(L, -2, "allow_skips");
    lua_pushstring(L, h->set->missing_credentials);
    lua_setfield(L, -2, "missing_credentials");
    lua_pushstring(L, h->set->run_id);
    lua_setfield(L, -2, "run_id");
    if (h->worker >= 0)
        lua_pushfstring(L, "gw%d", h->worker);
    else
        lua_pushliteral(L, "master");
    lua_setfield(L, -2, "worker_id");
    /* The one data-plane URL that routes by headers, if configured:
     * sbx:url gives the host-name form, which needs none. */
    lua_pushstring(L, h->set->platform ? h->set->platform->sandbox_url : "");
    lua_setfield(L, -2, "data_plane_url");
    lua_pushboolean(L, h->set->local_platform);
    lua_setfield(L, -2, "is_local");
    set_caps(L, h);
    lua_setfield(L, -2, "config");
}

int luaopen_e2e(lua_State *L)
{
    static const luaL_Reg core[] = {
        {"clock", core_clock},
        {"emit", core_emit},
        {"error_mt", core_error_mt},
        {"error_text", core_error_text},
        {"region", abx_region_l},
        {"sleep", abx_region_sleep_l},
        {"session_fixture", core_session_fixture},
        {"cfixture_info", abx_fixture_c_info_l},
        {"cfixture_setup", abx_fixture_c_setup_l},
        {"cfixture_teardown", abx_fixture_c_teardown_l},
        {"secret", core_secret},
        {"envd_version_cmp", core_envd_version_cmp},
        {"known_issue_ids", abx_known_issue_ids_l},
        {"trace", abx_ltrace_event_l},
        {"crash", NULL},
        {NULL, NULL},
    };
    const struct abx_e2e_host *h = abx_e2e_host_of(L);

    luaL_newlib(L, core);  /* stack: core */
    abx_track_core_add(L);
    set_config(L, h);
    lua_pushboolean(L, h->is_session);
    lua_setfield(L, -2, "is_session");
    lua_pushboolean(L, h->set->selftest);
    lua_setfield(L, -2, "selftest");
    if (h->set->selftest) {
        lua_pushcfunction(L, core_crash);
        lua_setfield(L, -2, "crash");
    }
    if (abx_load_embedded(L, abx_expect_lua, abx_expect_lua_len,
                          abx_expect_lua_name) != LUA_OK)
        return lua_error(L);
    lua_pushvalue(L, -2);
    lua_call(L, 1, 2);  /* stack: core M internal */
    if (abx_load_embedded(L, abx_prelude_lua, abx_prelude_lua_len,
                          abx_prelude_lua_name) != LUA_OK)
        return lua_error(L);
    lua_insert(L, -4);  /* stack: prelude core M internal */
    lua_call(L, 3, 1);  /* stack: M */
    lua_getfield(L, -1, "secret");
    if (lua_isnil(L, -1)) {
        lua_pushcfunction(L, core_secret);
        lua_setfield(L, -3, "secret");
    }
    lua_pop(L, 1);
    return 1;
}
