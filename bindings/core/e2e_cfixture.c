/* Registry of fixtures implemented in C (the built-in sandbox fixtures
 * are Lua, fixtures.lua; only the self-test fixture is C). The prelude
 * asks here for any fixture name it does not define in Lua. Session
 * instances live in C for the whole worker and are pushed into each file
 * state that asks; test/file instances are owned by a handle that the
 * prelude puts on the scope's finalizer stack. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "buf.h"
#include "lua_e2e.h"

#define FIXTURE_MAX 64
#define HANDLE_MAX 256

static struct abx_fixture_c g_defs[FIXTURE_MAX];
static size_t g_ndefs;

struct instance {
    int used;
    size_t def;
    void *inst;
};

/* Session instances in setup order; handles for narrower scopes. */
static struct instance g_session[FIXTURE_MAX];
static size_t g_nsession;
static struct instance g_handles[HANDLE_MAX];

int abx_fixture_c_register(const struct abx_fixture_c *def)
{
    size_t i;

    if (!def || !def->name || !def->setup || !def->push || !def->teardown ||
        g_ndefs >= FIXTURE_MAX)
        return -1;
    for (i = 0; i < g_ndefs; i++)
        if (strcmp(g_defs[i].name, def->name) == 0)
            return -1;
    g_defs[g_ndefs++] = *def;
    return 0;
}

static const struct abx_fixture_c *find(const char *name, size_t *index)
{
    size_t i;

    for (i = 0; i < g_ndefs; i++) {
        if (strcmp(g_defs[i].name, name) == 0) {
            if (index)
                *index = i;
            return &g_defs[i];
        }
    }
    return NULL;
}

static const char *scope_name(enum abx_scope s)
{
    return s == ABX_SCOPE_SESSION ? "session"
           : s == ABX_SCOPE_FILE  ? "file"
                                  : "test";
}

int abx_fixture_c_info_l(lua_State *L)
{
    const struct abx_fixture_c *d = find(luaL_checkstring(L, 1), NULL);

    if (!d)
        return 0;
    lua_createtable(L, 0, 2);
    lua_pushstring(L, scope_name(d->scope));
    lua_setfield(L, -2, "scope");
    lua_pushboolean(L, d->needs_platform);
    lua_setfield(L, -2, "needs_platform");
    return 1;
}

static int push_protected(lua_State *L)
{
    const struct abx_fixture_c *d = lua_touserdata(L, 1);
    void *inst = lua_touserdata(L, 2);

    lua_settop(L, 0);
    d->push(L, inst);
    lua_settop(L, 1);
    return 1;
}

/* Pushes the value for inst, or returns non-zero with the error on top. */
static int push_value(lua_State *L, const struct abx_fixture_c *d,
                      void *inst)
{
    lua_pushcfunction(L, push_protected);
    lua_pushlightuserdata(L, (void *)d);
    lua_pushlightuserdata(L, inst);
    return lua_pcall(L, 2, 1, 0);
}

int abx_fixture_c_setup_l(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    char err[512] = "";
    size_t di, i;
    const struct abx_fixture_c *d = find(name, &di);
    void *inst = NULL;

    if (!d)
        return luaL_error(L, "no C fixture '%s'", name);
    if (d->scope == ABX_SCOPE_SESSION) {
        for (i = 0; i < g_nsession; i++) {
            if (g_session[i].used && g_session[i].def == di) {
                if (push_value(L, d, g_session[i].inst) != LUA_OK)
                    return lua_error(L);
                return 1;
            }
        }
        if (g_nsession >= FIXTURE_MAX)
            return luaL_error(L, "too many session fixtures");
        if (d->setup(d->ud, &inst, err, sizeof err) != 0)
            return luaL_error(L, "fixture '%s' setup failed: %s", name, err);
        g_session[g_nsession].used = 1;
        g_session[g_nsession].def = di;
        g_session[g_nsession].inst = inst;
        g_nsession++;
        if (push_value(L, d, inst) != LUA_OK)
            return lua_error(L);  /* torn down with the session */
        return 1;
    }
    for (i = 0; i < HANDLE_MAX && g_handles[i].used; i++)
        ;
    if (i == HANDLE_MAX)
        return luaL_error(L, "too many live C fixture instances");
    if (d->setup(d->ud, &inst, err, sizeof err) != 0)
        return luaL_error(L, "fixture '%s' setup failed: %s", name, err);
    g_handles[i].used = 1;
    g_handles[i].def = di;
    g_handles[i].inst = inst;
    if (push_value(L, d, inst) != LUA_OK) {
        /* Nothing in Lua holds the handle yet: release it here. */
        g_handles[i].used = 0;
        d->teardown(d->ud, inst, err, sizeof err);
        return lua_error(L);
    }
    lua_pushinteger(L, (lua_Integer)i + 1);
    return 2;
}

static int release(size_t i, char *err, size_t errlen)
{
    const struct abx_fixture_c *d = &g_defs[g_handles[i].def];
    void *inst = g_handles[i].inst;

    g_handles[i].used = 0;  /* idempotent even if teardown fails */
    return d->teardown(d->ud, inst, err, errlen);
}

int abx_fixture_c_teardown_l(lua_State *L)
{
    lua_Integer h = luaL_checkinteger(L, 1);
    char err[512] = "";

    if (h < 1 || h > HANDLE_MAX || !g_handles[h - 1].used)
        return 0;
    if (release((size_t)h - 1, err, sizeof err) != 0)
        return luaL_error(L, "fixture '%s' teardown failed: %s",
                          g_defs[g_handles[h - 1].def].name, err);
    return 0;
}

/* A failed teardown's line in errs, which is only the message (capped):
 * a line that does not fit is dropped; the count returned still has it. */
static void add_teardown_error(struct abx_buf *errs, const char *name,
                               const char *err)
{
    if (abx_buf_appendf(errs, "fixture '%s' teardown failed: %s\n", name,
                        err) != 0) {
        /* dropped, counted */
    }
}

int abx_fixture_c_release_leftovers(struct abx_buf *errs)
{
    char err[512];
    int n = 0;
    size_t i;

    for (i = HANDLE_MAX; i-- > 0;) {
        if (!g_handles[i].used)
            continue;
        err[0] = '\0';
        if (release(i, err, sizeof err) != 0) {
            add_teardown_error(errs, g_defs[g_handles[i].def].name, err);
            n++;
        }
    }
    return n;
}

int abx_fixture_c_finish_session(struct abx_buf *errs)
{
    char err[512];
    int n = abx_fixture_c_release_leftovers(errs);

    while (g_nsession > 0) {
        struct instance *s = &g_session[--g_nsession];
        const struct abx_fixture_c *d = &g_defs[s->def];

        if (!s->used)
            continue;
        s->used = 0;
        err[0] = '\0';
        if (d->teardown(d->ud, s->inst, err, sizeof err) != 0) {
            add_teardown_error(errs, d->name, err);
            n++;
        }
    }
    return n;
}

/* ---- self-test fixture: proves the seam end to end ------------------- */
struct probe {
    int serial;
};

static int probe_setups;

static int probe_setup(void *ud, void **inst, char *err, size_t errlen)
{
    struct probe *p = malloc(sizeof *p);

    (void)ud;
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    p->serial = ++probe_setups;
    *inst = p;
    return 0;
}

static void probe_push(lua_State *L, void *inst)
{
    const struct probe *p = inst;

    lua_createtable(L, 0, 1);
    lua_pushinteger(L, p->serial);
    lua_setfield(L, -2, "serial");
}

static int probe_teardown(void *ud, void *inst, char *err, size_t errlen)
{
    (void)ud;
    (void)err;
    (void)errlen;
    free(inst);
    return 0;
}

void abx_fixture_c_register_selftest(void)
{
    static const struct abx_fixture_c def = {
        .name = "c_session_probe",
        .scope = ABX_SCOPE_SESSION,
        .needs_platform = 0,
        .setup = probe_setup,
        .push = probe_push,
        .teardown = probe_teardown,
    };
    abx_fixture_c_register(&def);
}
