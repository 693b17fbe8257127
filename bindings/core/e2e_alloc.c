/* The Lua allocator of every state this process creates: realloc/free
 * with a process-wide ceiling on the bytes Lua holds. A test that builds a
 * 10 GB string gets Lua's "not enough memory" error (a clear ERROR, its
 * teardown still runs) instead of the kernel's OOM killer taking the
 * worker and every test after it. One process runs one file state plus
 * its session states at a time, so the ceiling is per worker. */
#include <stdio.h>
#include <stdlib.h>

#include "lua_e2e.h"

static size_t g_used, g_limit;  /* g_limit 0 = no ceiling */
static int g_hit;               /* the last failure was the ceiling */

void abx_alloc_set_limit(size_t bytes) { g_limit = bytes; }

void *abx_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    void *p;

    (void)ud;
    if (!ptr)
        osize = 0;  /* osize then encodes the object type */
    if (nsize == 0) {
        free(ptr);
        g_used -= osize;
        return NULL;
    }
    if (g_limit && nsize > osize && g_used + (nsize - osize) > g_limit) {
        g_hit = 1;
        return NULL;  /* Lua runs an emergency GC and retries first */
    }
    p = realloc(ptr, nsize);
    if (!p) {
        g_hit = 0;
        return NULL;
    }
    g_used = g_used - osize + nsize;
    return p;
}

const char *abx_alloc_oom_message(void)
{
    static char msg[160];

    if (!g_hit)
        return "not enough memory";
    snprintf(msg, sizeof msg, "not enough memory: the Lua heap limit of "
             "%zu MiB was reached (--max-memory)", g_limit >> 20);
    return msg;
}
