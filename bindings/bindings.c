/* The list of binding modules: what every Lua state gets preloaded, and
 * the process-wide registrations made once at start-up (today only the
 * self-test C fixture). A new binding adds its luaopen_* here. */
#include <lauxlib.h>
#include <lualib.h>

#include "lua_commands.h"
#include "lua_e2e.h"
#include "lua_files.h"
#include "lua_http.h"
#include "lua_json.h"
#include "lua_remote.h"
#include "lua_sandbox.h"

extern const char abx_e2e_host_key;

void abx_bindings_init(int selftest)
{
    /* Fixtures written in C are registered here with
     * abx_fixture_c_register(); the built-in ones (base_sandbox & co.)
     * are Lua, in fixtures.lua. */
    if (selftest)
        abx_fixture_c_register_selftest();
}

void abx_bindings_open(lua_State *L, const struct abx_e2e_host *h)
{
    static const luaL_Reg modules[] = {
        {"e2e", luaopen_e2e},
        {"e2e.sandbox", luaopen_e2e_sandbox},
        {"e2e.commands", luaopen_e2e_commands},
        {"e2e.files", luaopen_e2e_files},
        {"e2e.fixtures", luaopen_e2e_fixtures},
        {"e2e.http", luaopen_e2e_http},
        {"e2e.json", luaopen_e2e_json},
        {"e2e.remote", luaopen_e2e_remote},
        {NULL, NULL},
    };
    const luaL_Reg *m;

    lua_pushlightuserdata(L, (void *)h);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &abx_e2e_host_key);
    luaL_openlibs(L);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    for (m = modules; m->name; m++) {
        lua_pushcfunction(L, m->func);
        lua_setfield(L, -2, m->name);
    }
    lua_pop(L, 1);
}
