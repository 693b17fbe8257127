/* Build-time compiler of the embedded Lua chunks (cmake/embedded.cmake):
 * IN compiled under CHUNKNAME and written to OUT as Lua bytecode, debug
 * information kept (tracebacks still name "[e2e]" and its lines). A
 * process then loads each chunk without parsing its source.
 * Usage: abx_luac IN OUT CHUNKNAME */
#include <stdio.h>
#include <stdlib.h>

#define CHUNK_MAX ((size_t)4 * 1024 * 1024)   /* as the runtime's cache */

#include <lauxlib.h>
#include <lua.h>

static int writer(lua_State *L, const void *p, size_t n, void *ud)
{
    (void)L;
    return fwrite(p, 1, n, ud) == n ? 0 : 1;
}

int main(int argc, char **argv)
{
    lua_State *L;
    FILE *in, *out = NULL;
    char *src = malloc(CHUNK_MAX);
    size_t len = 0;
    int rc = 1;

    if (argc != 4) {
        fprintf(stderr, "usage: abx_luac IN OUT CHUNKNAME\n");
        return 2;
    }
    if (!src || !(L = luaL_newstate())) {
        free(src);
        return 1;
    }
    if (!(in = fopen(argv[1], "rb"))) {
        perror(argv[1]);
        goto out;
    }
    len = fread(src, 1, CHUNK_MAX, in);
    if (ferror(in) || !feof(in)) {
        fprintf(stderr, "abx_luac: cannot read %s (or larger than 4 MiB)\n", argv[1]);
        fclose(in);
        goto out;
    }
    fclose(in);
    /* the chunk name the runtime loads it under: tracebacks keep it */
    if (luaL_loadbufferx(L, src, len, argv[3], "t") != LUA_OK) {
        fprintf(stderr, "abx_luac: %s\n", lua_tostring(L, -1));
        goto out;
    }
    if (!(out = fopen(argv[2], "wb"))) {
        perror(argv[2]);
        goto out;
    }
    if (lua_dump(L, writer, out, 0) != 0 || fclose(out) != 0) {
        out = NULL;
        fprintf(stderr, "abx_luac: cannot write %s\n", argv[2]);
        goto out;
    }
    out = NULL;
    rc = 0;
out:
    if (out)
        fclose(out);
    lua_close(L);
    free(src);
    return rc;
}
