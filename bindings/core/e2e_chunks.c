/* The embedded Lua (expect.lua, prelude.lua, fixtures.lua, remote.lua)
 * compiled once per process, not once per state: every test file gets a
 * fresh state, and parsing 48 KB of Lua each time was most of a short
 * run's CPU. The first load dumps the compiled chunk (debug info kept:
 * tracebacks name "[e2e]" lines); later loads read that bytecode. The
 * runner warms the cache before it forks, so its children inherit it. */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "buf.h"
#include "lua_e2e.h"

#define CHUNKS_MAX 8
#define CHUNK_MAX ((size_t)4 * 1024 * 1024)

struct chunk {
    const unsigned char *src;   /* the embedded source: its identity */
    char *code;
    size_t len;
};

static struct chunk g_chunks[CHUNKS_MAX];

static int writer(lua_State *L, const void *p, size_t n, void *ud)
{
    (void)L;
    return abx_buf_append(ud, p, n);
}

static struct chunk *cached(const unsigned char *src)
{
    int i;

    for (i = 0; i < CHUNKS_MAX; i++)
        if (g_chunks[i].src == src)
            return &g_chunks[i];
    return NULL;
}

/* Keeps the function at the top of L's stack as src's bytecode. */
static void keep(lua_State *L, const unsigned char *src)
{
    struct abx_buf b;
    int i;

    for (i = 0; i < CHUNKS_MAX && g_chunks[i].src; i++)
        ;
    if (i == CHUNKS_MAX)
        return;
    abx_buf_init(&b, CHUNK_MAX);
    if (lua_dump(L, writer, &b, 0) == 0 && b.len > 0) {
        g_chunks[i].code = abx_buf_steal(&b, &g_chunks[i].len);
        g_chunks[i].src = src;
    }
    abx_buf_free(&b);
}

int abx_load_embedded(lua_State *L, const unsigned char *src, size_t len,
                      const char *name)
{
    struct chunk *c = cached(src);
    int rc;

    if (c && luaL_loadbufferx(L, c->code, c->len, name, "b") == LUA_OK)
        return LUA_OK;
    if (c)
        lua_pop(L, 1);  /* cannot happen: our own dump; use the source */
    rc = luaL_loadbufferx(L, (const char *)src, len, name, "t");
    if (rc == LUA_OK && !c)
        keep(L, src);
    return rc;
}
