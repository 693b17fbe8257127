/* The collector: a child process that loads each test file in a fresh
 * state and reports its tests over the message channel (chan.h), one
 * COLLECTED message per file:
 *   {"t":"collected", "file": INDEX, "items": [{nodeid, name, groups,
 *    group, marks, requires, line, timeout}], "error": MSG, "usage": [...]}
 *   {"t":"interrupted"}
 * Running file top-level code in a child keeps a crash (or a stuck C call)
 * in a test file from taking the parent, and its reports, down with it. */
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <lauxlib.h>

#include "chan.h"
#include "jsonutil.h"
#include "lstate.h"
#include "out.h"
#include "run.h"

static cJSON *strlist_json(lua_State *L, int idx, const char *key)
{
    cJSON *a = cJSON_CreateArray();
    lua_Integer i, n;

    if (key)
        lua_getfield(L, idx, key);
    else
        lua_pushvalue(L, idx);
    n = lua_type(L, -1) == LUA_TTABLE ? (lua_Integer)lua_rawlen(L, -1) : 0;
    for (i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        if (lua_type(L, -1) == LUA_TSTRING)
            cJSON_AddItemToArray(a, cJSON_CreateString(lua_tostring(L, -1)));
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return a;
}

static int get_list(lua_State *L, const char *fn)
{
    abx_lstate_module(L);
    lua_getfield(L, -1, fn);
    lua_remove(L, -2);
    return lua_pcall(L, 0, 1, 0);
}

/* Fills line with the file's record; returns -2 if interrupted. */
static int collect_file(const struct abx_e2e_host *h, const char *path, cJSON *line)
{
    char dir[4096], err[4096];
    cJSON *items = cJSON_AddArrayToObject(line, "items");
    lua_State *L;
    lua_Integer i, n;
    int rc;

    abx_dirname(path, dir, sizeof dir);
    L = abx_lstate_open(h, dir, err, sizeof err);
    if (!L) {
        cJSON_AddStringToObject(line, "error", err);
        return abx_region_interrupted() ? -2 : 0;
    }
    rc = abx_lstate_load_test(L, path, err, sizeof err);
    if (rc != 0) {
        cJSON_AddStringToObject(line, "error", err);
        lua_close(L);
        return rc == -2 ? -2 : 0;
    }
    if (get_list(L, "_usage_errors") == LUA_OK)
        cJSON_AddItemToObject(line, "usage", strlist_json(L, -1, NULL));
    lua_settop(L, 0);
    if (get_list(L, "_collected") != LUA_OK) {
        cJSON_AddStringToObject(line, "error", lua_tostring(L, -1));
        lua_close(L);
        return 0;
    }
    n = (lua_Integer)lua_rawlen(L, -1);
    for (i = 1; i <= n; i++) {
        cJSON *it = cJSON_CreateObject();

        lua_rawgeti(L, -1, i);
        lua_getfield(L, -1, "nodeid");
        cJSON_AddStringToObject(it, "nodeid", lua_tostring(L, -1));
        lua_getfield(L, -2, "name");
        cJSON_AddStringToObject(it, "name", lua_tostring(L, -1));
        lua_getfield(L, -3, "line");
        cJSON_AddNumberToObject(it, "line", (double)lua_tointeger(L, -1));
        lua_getfield(L, -4, "timeout");
        cJSON_AddNumberToObject(it, "timeout",
                                lua_isnumber(L, -1) ? lua_tonumber(L, -1) : 0);
        lua_getfield(L, -5, "group");
        if (lua_type(L, -1) == LUA_TSTRING)
            cJSON_AddStringToObject(it, "group", lua_tostring(L, -1));
        lua_pop(L, 5);
        cJSON_AddItemToObject(it, "groups", strlist_json(L, -1, "groups"));
        cJSON_AddItemToObject(it, "marks", strlist_json(L, -1, "marks"));
        cJSON_AddItemToObject(it, "requires",
                              strlist_json(L, -1, "requires"));
        lua_pop(L, 1);
        cJSON_AddItemToArray(items, it);
    }
    lua_close(L);
    return 0;
}

static void send(int fd, cJSON *msg)
{
    if (abx_chan_send(fd, msg, abx_out_masker()) == -1)
        _exit(ABX_EXIT_INTERNAL_ERROR);  /* the runner is gone */
}

void abx_collector_main(int fd, const struct abx_config *cfg,
                        const struct abx_collection *c, size_t start)
{
    struct abx_e2e_host h;
    size_t i;

    abx_signals_worker();
    abx_lstate_host(&h, cfg);
    for (i = start; i < c->n; i++) {
        cJSON *line = abx_msg_new(ABX_MSG_COLLECTED);
        int rc;

        cJSON_AddNumberToObject(line, "file", (double)i);
        rc = collect_file(&h, c->files[i].path, line);
        if (rc == -2) {
            cJSON_Delete(line);
            break;
        }
        send(fd, line);
    }
    if (abx_region_interrupted()) {
        send(fd, abx_msg_new(ABX_MSG_INTERRUPTED));
    }
    _exit(0);
}
