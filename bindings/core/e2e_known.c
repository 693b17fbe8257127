/* core.known_issue_ids(test_path): the ids of the KNOWN-ISSUES.md that
 * governs a test file (the first one found from the file's directory up
 * to the filesystem root), so a known_issue pin names an entry that
 * exists. Returns {ids = {["KI-001"] = true, ...}, path = "..."}, or nil
 * when there is no such file (a project without one pins freely). */
#define _DEFAULT_SOURCE  /* realpath, PATH_MAX */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "fsutil.h"
#include "lua_e2e.h"

#define KNOWN_MAX ((size_t)4 * 1024 * 1024)
#define KNOWN_NAME "KNOWN-ISSUES.md"

/* Entries are level-3 headings "### KI-<digits>: <symptom>". */
static void push_ids(lua_State *L, const char *text)
{
    const char *p = text;

    lua_newtable(L);
    while (p && *p) {
        if (strncmp(p, "### KI-", 7) == 0 && isdigit((unsigned char)p[7])) {
            size_t n = 7;
            while (isdigit((unsigned char)p[n]))
                n++;
            if (p[n] == ':') {
                lua_pushlstring(L, p + 4, n - 4);
                lua_pushboolean(L, 1);
                lua_rawset(L, -3);
            }
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
}

int abx_known_issue_ids_l(lua_State *L)
{
    const char *test = luaL_checkstring(L, 1);
    char dir[PATH_MAX], path[PATH_MAX + sizeof KNOWN_NAME + 1], err[256];
    char *slash, *data = NULL;
    size_t len = 0;

    snprintf(path, sizeof path, "%s", test);
    slash = strrchr(path, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(path, sizeof path, ".");
    if (!realpath(path, dir))
        return 0;
    for (;;) {
        snprintf(path, sizeof path, "%s%s" KNOWN_NAME, dir,
                 strcmp(dir, "/") == 0 ? "" : "/");
        if (abx_read_file(path, KNOWN_MAX, &data, &len, err, sizeof err) == 0)
            break;
        if (strcmp(dir, "/") == 0)
            return 0;
        slash = strrchr(dir, '/');
        if (slash == dir)
            slash[1] = '\0';
        else
            *slash = '\0';
    }
    lua_createtable(L, 0, 2);
    push_ids(L, data);
    lua_setfield(L, -2, "ids");
    lua_pushstring(L, path);
    lua_setfield(L, -2, "path");
    free(data);
    return 1;
}
