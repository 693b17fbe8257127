/* The Lua states a worker keeps (worker_int.h): a state per test file,
 * opened on first use and kept while more of its tests may come (file
 * fixtures are set up once per worker and file), at most MAX_OPEN_FILES
 * (the least recently used closes first); a session state per suite
 * directory for the whole worker (each worker is its own session). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "e2e_error.h"
#include "lstate.h"
#include "out.h"
#include "worker_int.h"

#define MAX_SESSIONS 16
/* Files open at once: a run in file order needs one or two; more come
 * from --ff or a requeue after a crash. Past this the least recently
 * used one is torn down (its fixtures are set up again if needed). */
#define MAX_OPEN_FILES 8

struct session {
    char dir[1024];
    lua_State *L;
};

/* This worker's Lua host descriptions, test states' and session states':
 * its hooks and index (the settings stay in the config they point to). */
static struct abx_e2e_host g_host, g_session_host;
static struct session g_sessions[MAX_SESSIONS];
static size_t g_nsessions;
static struct abx_wfile g_open[MAX_OPEN_FILES];
static unsigned long g_stamp;
static char g_dir[1024];   /* directory of the file being run: its session */

static lua_State *session_for(const char *dir, char *err, size_t errlen)
{
    size_t i;
    lua_State *S;

    for (i = 0; i < g_nsessions; i++)
        if (strcmp(g_sessions[i].dir, dir) == 0)
            return g_sessions[i].L;
    if (g_nsessions == MAX_SESSIONS) {
        snprintf(err, errlen, "too many suite directories in one run");
        return NULL;
    }
    S = abx_lstate_open(&g_session_host, dir, err, errlen);
    if (!S)
        return NULL;
    snprintf(g_sessions[g_nsessions].dir, sizeof g_sessions[0].dir, "%s",
             dir);
    g_sessions[g_nsessions++].L = S;
    return S;
}

static void raise_in(lua_State *L, const char *cls, const char *msg)
{
    abx_err_push_new(L, cls, msg);
    lua_error(L);
}

static void session_fixture(void *ud, lua_State *L, const char *name)
{
    char err[1024] = "", cls[64] = ABX_ERR_ERROR;
    lua_State *S = session_for(g_dir, err, sizeof err);

    (void)ud;
    if (!S)
        raise_in(L, ABX_ERR_ERROR, err);
    abx_lstate_module(S);
    lua_getfield(S, -1, "_session_get");
    lua_remove(S, -2);
    lua_pushstring(S, name);
    if (abx_region_call(S, 1, 0, 1) != LUA_OK) {
        snprintf(cls, sizeof cls, "%s", abx_err_class_of(S, -1));
        snprintf(err, sizeof err, "%s", abx_err_message_of(S, -1));
        lua_settop(S, 0);
        raise_in(L, cls, err);
    }
    if (abx_lua_copy(S, -1, L, err, sizeof err) != 0) {
        char msg[1200];
        lua_settop(S, 0);
        snprintf(msg, sizeof msg, "session fixture '%s': %s", name, err);
        raise_in(L, ABX_ERR_ERROR, msg);
    }
    lua_settop(S, 0);
}

void abx_wfiles_init(const struct abx_config *cfg, int index)
{
    abx_lstate_host(&g_host, cfg);
    g_host.emit = abx_wmsg_emit;
    g_host.secret = abx_wmsg_secret;
    g_host.session_fixture = session_fixture;
    g_host.worker = index;
    g_session_host = g_host;
    g_session_host.is_session = 1;
}

/* Index (1-based) of nodeid in the collected list at ci, or 0. Jobs list
 * tests in collection order, so the search starts after the previous hit
 * (*hint): linear over a file, not quadratic in its 10 000 tests. */
/* The parent names tests as every message shows them, masked: a test
 * whose name holds a secret arrives with "[MASKED]" in its id, and is
 * the collected test whose masked id that is. */
static int same_id(const char *collected, const char *nodeid)
{
    struct abx_buf m;
    int same;

    if (strcmp(collected, nodeid) == 0)
        return 1;
    if (!strstr(nodeid, ABX_MASK_MARKER))
        return 0;
    abx_buf_init(&m, 0);
    same = abx_mask_string(abx_out_masker(), collected, strlen(collected), &m) == 0 &&
           m.len == strlen(nodeid) && memcmp(m.data, nodeid, m.len) == 0;
    abx_buf_free(&m);
    return same;
}

static int find_collected(lua_State *L, int ci, const char *nodeid,
                          lua_Integer *hint)
{
    lua_Integer k, n = (lua_Integer)lua_rawlen(L, ci);

    for (k = 0; k < n; k++) {
        lua_Integer i = (*hint + k) % n + 1;
        int found;
        lua_rawgeti(L, ci, i);
        lua_getfield(L, -1, "nodeid");
        found = lua_isstring(L, -1) && same_id(lua_tostring(L, -1), nodeid);
        lua_pop(L, 2);
        if (found) {
            *hint = i;
            return (int)i;
        }
    }
    return 0;
}

/* Calls M[name](args) protected; results stay on the stack. */
int abx_wfile_call(lua_State *L, const char *name, int nargs, int nres)
{
    abx_lstate_module(L);
    lua_getfield(L, -1, name);
    lua_remove(L, -2);
    lua_insert(L, -1 - nargs);
    return lua_pcall(L, nargs, nres, 0);
}

/* One teardown error line for the test's message (errs is capped). */
static void add_teardown_error(struct abx_buf *errs, const char *msg)
{
    if (abx_buf_appendf(errs, "%s\n", msg) != 0) {
        /* Past the 1 MiB cap or out of memory: dropped; the message shows
         * the lines before it. */
    }
}

static int open_count(void)
{
    int i, n = 0;

    for (i = 0; i < MAX_OPEN_FILES; i++)
        n += g_open[i].L != NULL;
    return n;
}

/* Tears down of's file-scope fixtures and closes its state; errors amend
 * the file's last result here (pytest's "ERROR at teardown of"). */
void abx_wfile_close(struct abx_wfile *of)
{
    struct abx_buf errs;
    lua_State *L = of->L;
    lua_Integer i, n;

    if (!L)
        return;
    of->L = NULL;
    abx_buf_init(&errs, 1024 * 1024);
    lua_settop(L, 1);
    if (abx_wfile_call(L, "_finish_file", 0, 2) != LUA_OK) {
        add_teardown_error(&errs, lua_tostring(L, -1));
    } else {
        n = (lua_Integer)lua_rawlen(L, -2);
        for (i = 1; i <= n; i++) {
            lua_rawgeti(L, -2, i);
            add_teardown_error(&errs, lua_tostring(L, -1));
            lua_pop(L, 1);
        }
    }
    lua_settop(L, 0);
    lua_close(L);
    /* C handles no Lua teardown released: only when no other file's
     * fixtures could own them. */
    if (open_count() == 0)
        abx_fixture_c_release_leftovers(&errs);
    if (errs.len > 0) {
        errs.data[--errs.len] = '\0';  /* last newline */
        abx_wmsg_amend(of->last ? of->last : abx_wmsg_last() ? abx_wmsg_last() : of->path,
                       abx_buf_cstr(&errs));
    }
    abx_buf_free(&errs);
    free(of->path);
    free(of->last);
    memset(of, 0, sizeof *of);
}

struct abx_wfile *abx_wfile_find(const char *path)
{
    int i;

    for (i = 0; i < MAX_OPEN_FILES; i++)
        if (g_open[i].L && strcmp(g_open[i].path, path) == 0)
            return &g_open[i];
    return NULL;
}

/* The open state of path, loading the file on first use (the least
 * recently used one closes when all slots are taken). NULL with err
 * when the file does not load. */
struct abx_wfile *abx_wfile_open(const char *path, char *err, size_t errlen)
{
    struct abx_wfile *of = abx_wfile_find(path), *slot = NULL;
    lua_State *L;
    int i;

    abx_dirname(path, g_dir, sizeof g_dir);   /* its tests' session, from now */
    if (of)
        goto out;
    for (i = 0; i < MAX_OPEN_FILES; i++) {  /* a free slot, else the LRU */
        if (!g_open[i].L) {
            slot = &g_open[i];
            break;
        }
        if (!slot || g_open[i].used < slot->used)
            slot = &g_open[i];
    }
    if (slot->L)
        abx_wfile_close(slot);
    L = abx_lstate_open(&g_host, g_dir, err, errlen);
    if (L && abx_lstate_load_test(L, path, err, errlen) != 0) {
        lua_close(L);
        L = NULL;
    }
    if (L && abx_wfile_call(L, "_collected", 0, 1) != LUA_OK) {
        snprintf(err, errlen, "%s", lua_tostring(L, -1));
        lua_close(L);
        L = NULL;
    }
    if (!L)
        return NULL;
    of = slot;
    of->L = L;
    of->path = abx_xstrdup(path);
out:
    of->used = ++g_stamp;
    return of;
}

void abx_wfiles_close_all(void)
{
    int i;

    for (i = 0; i < MAX_OPEN_FILES; i++)
        abx_wfile_close(&g_open[i]);
}

int abx_wfile_test(struct abx_wfile *f, const char *nodeid)
{
    return find_collected(f->L, 1, nodeid, &f->hint);
}

void abx_wsessions_finish(void)
{
    struct abx_buf errs;
    size_t i;

    abx_buf_init(&errs, 1024 * 1024);
    for (i = 0; i < g_nsessions; i++) {
        lua_State *S = g_sessions[i].L;
        if (abx_wfile_call(S, "_finish_session", 0, 1) != LUA_OK) {
            add_teardown_error(&errs, lua_tostring(S, -1));
        } else {
            lua_Integer k, n = (lua_Integer)lua_rawlen(S, -1);
            for (k = 1; k <= n; k++) {
                lua_rawgeti(S, -1, k);
                add_teardown_error(&errs, lua_tostring(S, -1));
                lua_pop(S, 1);
            }
        }
        lua_close(S);
    }
    g_nsessions = 0;
    abx_fixture_c_finish_session(&errs);
    if (errs.len > 0 && abx_wmsg_last()) {
        errs.data[--errs.len] = '\0';
        abx_wmsg_amend(abx_wmsg_last(), abx_buf_cstr(&errs));
    }
    abx_buf_free(&errs);
}
