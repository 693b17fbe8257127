/* The sandbox userdata type (metatable e2e.Sandbox, struct abx_lsandbox in
 * lua_sbxtype.h): checking a handle, its info, whether it was killed, and
 * finding the sandbox that owns a sub-object (commands, files, a command
 * handle, a watcher). The modules built on a sandbox use only this file,
 * so none of them needs lua_sandbox.c, which pushes them. */
#include <lauxlib.h>
#include <lua.h>

#include "e2e_raise.h"
#include "lua_sbxplat.h"
#include "lua_sbxtype.h"

const struct abx_sandbox_info *abx_lsandbox_info(struct abx_lsandbox *s)
{
    return s->t ? &s->t->info : &s->own;
}

/* Raises once __gc has run (a test can call getmetatable(sbx).__gc): the
 * endpoint and its token are gone, so every call would fail obscurely. */
static void check_open(lua_State *L, const struct abx_lsandbox *s)
{
    if (s->closed)
        luaL_error(L, "sandbox handle is closed");
}

static int is_killed(const struct abx_lsandbox *s)
{
    return s->killed || (s->t && !s->t->alive);
}

int abx_lsandbox_killed(const struct abx_lsandbox *s)
{
    return is_killed(s);
}

/* Rebuilds the envd endpoint when the tracked record changed since it
 * was built (another handle's connect refreshed the tokens). */
void abx_lsandbox_sync(lua_State *L, struct abx_lsandbox *s)
{
    struct abx_err err;

    if (!s->t || s->gen == s->t->gen)
        return;
    abx_endpoint_free(&s->envd);
    if (abx_endpoint_init(&s->envd, abx_lsandbox_platform(L), &s->t->info,
                          ABX_ENVD_PORT, &err) != 0)
        abx_err_raise(L, &err);
    s->gen = s->t->gen;
}

struct abx_lsandbox *abx_lsandbox_check_open(lua_State *L, int idx)
{
    struct abx_lsandbox *s = luaL_checkudata(L, idx, ABX_SANDBOX_MT);

    check_open(L, s);
    return s;
}

struct abx_lsandbox *abx_lsandbox_check(lua_State *L, int idx)
{
    struct abx_lsandbox *s = abx_lsandbox_check_open(L, idx);

    if (is_killed(s))
        luaL_error(L, "sandbox %s was killed", abx_lsandbox_info(s)->sandbox_id);
    abx_lsandbox_sync(L, s);
    abx_track_touch(s->t);
    return s;
}

struct abx_lsandbox *abx_lowner(lua_State *L, int idx)
{
    struct abx_lsandbox *s;

    lua_getiuservalue(L, idx, 1);
    s = abx_lsandbox_check(L, -1);
    lua_pop(L, 1);  /* still anchored by the userdata at idx */
    if (s->t)
        abx_track_touch(s->t);
    return s;
}

int abx_lowner_killed(lua_State *L, int idx)
{
    struct abx_lsandbox *s;

    lua_getiuservalue(L, idx, 1);
    s = luaL_testudata(L, -1, ABX_SANDBOX_MT);
    lua_pop(L, 1);
    return s && abx_lsandbox_killed(s);
}
