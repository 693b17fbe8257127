/* The directory watcher of sbx.files:watch_dir (metatable e2e.Watcher):
 * owns one WatchDir stream (envd.h), created before the stream starts so
 * that no Lua error strands it; stop, __close and __gc share one
 * idempotent close. Lua API: docs/lua-api.md "sbx.files". */
#include <lauxlib.h>
#include <lua.h>

#include "e2e_raise.h"
#include "e2e_trace.h"
#include "http.h"
#include "lua_sbxtype.h"
#include "lua_util.h"
#include "lua_watcher.h"

#define DEFAULT_WATCH_TIMEOUT_S 60.0

struct lwatcher {
    struct abx_watch *w;  /* NULL once stopped */
};

/* Watch streams owned by watchers of this process (selftest-only
 * e2e.files._open_watchers()). */
static size_t g_open_watchers;

static void wclose(struct lwatcher *w)
{
    if (w->w)
        g_open_watchers--;
    abx_watch_close(w->w);
    w->w = NULL;
}

size_t abx_lwatchers_open(void)
{
    return g_open_watchers;
}

static struct lwatcher *check_watcher(lua_State *L)
{
    return luaL_checkudata(L, 1, ABX_WATCHER_MT);
}

static int w_next(lua_State *L)
{
    struct lwatcher *w = check_watcher(L);
    struct abx_fs_event ev;
    struct abx_err e;
    double wait_s = -1, until = 0;
    int r;

    if (!lua_isnoneornil(L, 2)) {
        wait_s = (double)luaL_checknumber(L, 2);
        luaL_argcheck(L, wait_s >= 0 && wait_s <= 1e9, 2,
                      "seconds out of range (0 to 1e9)");
        until = abx_http_now() + wait_s;
    }
    if (!w->w)
        return luaL_error(L, "watcher is stopped");
    if (abx_lowner_killed(L, 1))
        wclose(w);  /* its sandbox is gone: let the stream go, then raise */
    abx_lowner(L, 1);
    if (wait_s == 0)
        abx_http_pump(0);  /* a poll still takes what already arrived */
    abx_err_clear(&e);
    r = abx_watch_next(w->w, &ev, until, &e);
    if (r < 0) {  /* the stream ended: the watcher is done */
        wclose(w);
        return abx_err_raise(L, &e);
    }
    if (r == 0) {
        lua_pushnil(L);
        return 1;
    }
    lua_createtable(L, 0, 2);
    lua_pushstring(L, ev.name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, ev.type);
    lua_setfield(L, -2, "type");
    return 1;
}

/* stop, __close and __gc: one idempotent close. */
static int w_stop(lua_State *L)
{
    wclose(check_watcher(L));
    return 0;
}

static int w_tostring(lua_State *L)
{
    struct lwatcher *w = check_watcher(L);

    lua_pushfstring(L, "e2e.Watcher (%s)", w->w ? "running" : "stopped");
    return 1;
}

static void watcher_mt(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"next", w_next},
        {"stop", w_stop},
        {NULL, NULL},
    };
    static const luaL_Reg meta[] = {
        {"__gc", w_stop},
        {"__close", w_stop},
        {"__tostring", w_tostring},
        {NULL, NULL},
    };

    if (luaL_newmetatable(L, ABX_WATCHER_MT)) {
        luaL_setfuncs(L, meta, 0);
        abx_ltrace_newlib(L, methods, "watcher");
        lua_setfield(L, -2, "__index");
    }
}

int abx_lfiles_watch_dir(lua_State *L)
{
    static const char *const known[] = {"recursive", "timeout", "user", NULL};
    struct abx_lsandbox *s;
    const char *path;
    struct lwatcher *w;
    struct abx_err e;
    const char *user;
    double timeout;
    int recursive;

    luaL_checkudata(L, 1, ABX_FILES_MT);
    s = abx_lowner(L, 1);
    path = abx_lcheck_cstring(L, 2);
    abx_lopt_check(L, 3, "watch_dir", known);
    recursive = abx_lopt_bool(L, 3, "recursive", 0);
    timeout = abx_lopt_seconds(L, 3, "timeout", DEFAULT_WATCH_TIMEOUT_S);
    user = abx_lopt_string(L, 3, "user", NULL);
    w = lua_newuserdatauv(L, sizeof *w, 1);
    w->w = NULL;
    watcher_mt(L);
    lua_setmetatable(L, -2);
    lua_getiuservalue(L, 1, 1);
    lua_setiuservalue(L, -2, 1);
    abx_err_clear(&e);
    if (!(w->w = abx_envd_watch(&s->envd, path, recursive, user, timeout,
                                &e)))
        return abx_err_raise(L, &e);
    g_open_watchers++;
    return 1;
}

