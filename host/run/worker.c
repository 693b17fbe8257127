/* A worker process: runs the tests the parent sends over the message
 * channel (chan.h): RUN {"file", "nodeids"} runs them in that file's
 * state, opened on first use and kept while more of its tests may come,
 * so file fixtures are set up lazily once per worker and file; CLOSE
 * {"file"} tears its file fixtures down (no more of its tests here).
 * It answers START, RESULT, OUT, SECRET, AMEND, INTERRUPTED and DONE
 * {"file"} after each batch. Every line is masked before it leaves.
 * Session states (one per suite directory) live for the whole worker:
 * each worker is its own session. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <lauxlib.h>

#include "chan.h"
#include "e2e_error.h"
#include "jsonutil.h"
#include "lstate.h"
#include "out.h"
#include "run.h"
#include "sandbox.h"
#include "trace.h"
#include "track.h"
#include "wallclock.h"

#define MAX_SESSIONS 16
/* Files open at once: a run in file order needs one or two; more come
 * from --ff or a requeue after a crash. Past this the least recently
 * used one is torn down (its fixtures are set up again if needed). */
#define MAX_OPEN_FILES 8

struct session {
    char dir[1024];
    lua_State *L;
};

/* A test file's state: its collected list sits at stack index 1. */
struct open_file {
    char *path;
    lua_State *L;
    lua_Integer hint;   /* where the last node id was found */
    char *last;         /* node id of its last result sent */
    unsigned long used; /* LRU stamp */
};

static int g_out_fd = -1;
static int g_index;
/* This worker's Lua host descriptions, test states' and session states':
 * its hooks and index (the settings stay in the config they point to). */
static struct abx_e2e_host g_host, g_session_host;
static struct session g_sessions[MAX_SESSIONS];
static size_t g_nsessions;
static struct open_file g_open[MAX_OPEN_FILES];
static unsigned long g_stamp;
static char g_dir[1024];            /* directory of the file being run */
static char *g_last;                /* node id of the last result sent */

/* If the parent is gone (killed), the worker stops as if interrupted, so
 * every pending teardown still runs (releasing sandboxes matters more
 * than reporting them). */
static int g_parent_gone;

/* Sends msg (consumed) as one line, masked unless raw is set. */
static void send_line(cJSON *msg, int raw)
{
    if (g_parent_gone) {
        cJSON_Delete(msg);
        return;
    }
    if (abx_chan_send(g_out_fd, msg, raw ? NULL : abx_out_masker()) == -1) {
        g_parent_gone = 1;
        abx_region_interrupt();
    }
}

static void send_json(cJSON *msg) { send_line(msg, 0); }

static void send_kv(enum abx_msg type, const char *key, const char *val,
                    size_t len)
{
    cJSON *m = abx_msg_new(type);
    char *copy = strndup(val, len);

    if (m && copy) {
        cJSON_AddStringToObject(m, key, copy);
        send_json(m);
    } else {
        cJSON_Delete(m);
    }
    free(copy);
}

static void secret_to_parent(void *ud, const char *s, size_t len);

/* Secrets the C clients learn (access tokens) reach the parent too. */
static void secret_hook(const char *s, size_t len)
{
    secret_to_parent(NULL, s, len);
}

static void emit_to_parent(void *ud, const char *s, size_t len)
{
    (void)ud;
    send_kv(ABX_MSG_OUT, "s", s, len);
}

static void secret_to_parent(void *ud, const char *s, size_t len)
{
    cJSON *m = abx_msg_new(ABX_MSG_SECRET);
    char *copy = strndup(s, len);

    (void)ud;
    if (m && copy) {
        cJSON_AddStringToObject(m, "s", copy);
        /* Raw on purpose: the parent must learn the value to mask it; the
         * pipe is private to this process pair, not an output. */
        send_line(m, 1);
    } else {
        cJSON_Delete(m);
    }
    free(copy);
}

/* Sends r (consumed); of, when known, remembers it as its file's last. */
static void send_result(struct abx_result *r, struct open_file *of)
{
    cJSON *m = abx_msg_new(ABX_MSG_RESULT), *j = abx_result_to_json(r);

    if (!m || !j) {
        cJSON_Delete(m);
        cJSON_Delete(j);
        abx_result_free(r);
        return;
    }
    cJSON_AddItemToObject(m, "r", j);
    send_json(m);
    free(g_last);
    g_last = strdup(r->nodeid ? r->nodeid : "");
    if (of) {
        free(of->last);
        of->last = strdup(r->nodeid ? r->nodeid : "");
    }
    abx_result_free(r);
}

/* A teardown error after the result was sent (file or session scope):
 * the parent adds it to that result, as pytest's "ERROR at teardown of"
 * the last test. */
static void send_amend(const char *nodeid, const char *msg)
{
    cJSON *m = abx_msg_new(ABX_MSG_AMEND);

    if (!m || !nodeid)
        goto out;
    cJSON_AddStringToObject(m, "nodeid", nodeid);
    cJSON_AddStringToObject(m, "teardown_message", msg);
    send_json(m);
    return;
out:
    cJSON_Delete(m);
}

/* ---- session states --------------------------------------------------- */
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

/* ---- results from Lua ------------------------------------------------- */
/* Report texts are bounded: a 100 MB error message must neither flood the
 * terminal nor outgrow the pipe line limit (the result would be lost). */
#define FIELD_MAX ((size_t)1024 * 1024 + 4096)  /* capture cap + note */
#define MESSAGE_MAX 4096  /* the one-line message */

/* Copies a Lua string field for the reports (abx_clean_text: NULs shown,
 * invalid UTF-8 replaced, capped at FIELD_MAX with a note). */
static void set_field(lua_State *L, int idx, const char *key, char **dst)
{
    struct abx_buf b;
    const char *s;
    size_t len;

    lua_getfield(L, idx, key);
    if (lua_type(L, -1) != LUA_TSTRING) {
        lua_pop(L, 1);
        return;
    }
    s = lua_tolstring(L, -1, &len);
    abx_buf_init(&b, FIELD_MAX + 256);
    abx_clean_text(&b, s, len, FIELD_MAX);
    abx_result_set(dst, abx_buf_cstr(&b));
    abx_buf_free(&b);
    lua_pop(L, 1);
}

static double num_field(lua_State *L, int idx, const char *key)
{
    double v;

    lua_getfield(L, idx, key);
    v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    return v;
}

static void strlist_field(lua_State *L, int idx, const char *key,
                          struct abx_strlist *out)
{
    lua_Integer i, n;

    lua_getfield(L, idx, key);
    if (lua_type(L, -1) == LUA_TTABLE) {
        n = (lua_Integer)lua_rawlen(L, -1);
        for (i = 1; i <= n; i++) {
            if (lua_rawgeti(L, -1, i) == LUA_TSTRING)
                abx_strlist_push(out, lua_tostring(L, -1));
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
}

/* Builds a result from the collected info at ii and the run table at ri. */
static struct abx_result *result_from_lua(lua_State *L, const char *file,
                                          int ii, int ri)
{
    struct abx_result *r = abx_result_new();
    struct abx_strlist groups;
    char *full = NULL, *nl;
    int o;

    if (!r)
        return NULL;
    abx_strlist_init(&groups);
    strlist_field(L, ii, "groups", &groups);
    lua_getfield(L, ii, "name");
    abx_result_set_identity(r, file, (int)num_field(L, ii, "line"),
                            (const char *const *)groups.items, groups.n,
                            lua_tostring(L, -1));
    lua_pop(L, 1);
    abx_strlist_free(&groups);
    strlist_field(L, ii, "marks", &r->markers);
    /* Ids of the sandboxes a failed test used (the prelude sets them). */
    strlist_field(L, ri, "sandboxes", &r->sandbox_ids);

    lua_getfield(L, ri, "outcome");
    o = abx_outcome_parse(lua_tostring(L, -1));
    lua_pop(L, 1);
    r->outcome = o < 0 ? ABX_OUTCOME_ERROR : (enum abx_outcome)o;
    lua_getfield(L, ri, "when");
    o = lua_isstring(L, -1) ? abx_phase_parse(lua_tostring(L, -1)) : -1;
    lua_pop(L, 1);
    r->when = o < 0 ? ABX_PHASE_NONE : (enum abx_phase)o;
    lua_getfield(L, ri, "xpass_strict");
    r->xpass_strict = lua_toboolean(L, -1);
    lua_pop(L, 1);
    /* message: first line; longrepr: the whole text and traceback. */
    set_field(L, ri, "message", &full);
    if (full) {
        set_field(L, ri, "longrepr", &r->longrepr);
        if (!r->longrepr)
            abx_result_set(&r->longrepr, full);
        if ((nl = strchr(full, '\n')))
            *nl = '\0';
        if (strlen(full) > MESSAGE_MAX) {
            size_t cut = MESSAGE_MAX - 3;
            while (cut > 0 && ((unsigned char)full[cut] & 0xC0) == 0x80)
                cut--;  /* never split a UTF-8 sequence */
            memcpy(full + cut, "...", 4);
        }
        abx_result_set(&r->message, full);
        free(full);
    }
    set_field(L, ri, "reason", &r->reason);
    set_field(L, ri, "skip_loc", &r->skip_loc);
    set_field(L, ri, "output", &r->output);
    set_field(L, ri, "teardown_message", &r->teardown_message);
    set_field(L, ri, "teardown_longrepr", &r->teardown_longrepr);
    r->dur_setup = num_field(L, ri, "setup");
    r->dur_call = num_field(L, ri, "call");
    r->dur_teardown = num_field(L, ri, "teardown");
    r->worker = g_index;
    return r;
}

static struct abx_result *error_result(const char *nodeid, const char *file,
                                       const char *raw)
{
    struct abx_result *r = abx_result_new();
    struct abx_buf clean;
    const char *msg;

    if (!r)
        return NULL;
    abx_buf_init(&clean, FIELD_MAX + 256);
    abx_clean_text(&clean, raw ? raw : "", raw ? strlen(raw) : 0, FIELD_MAX);
    msg = abx_buf_cstr(&clean);
    abx_result_set(&r->nodeid, nodeid);
    abx_result_set(&r->file, file);
    abx_result_set(&r->name, nodeid);
    r->outcome = ABX_OUTCOME_ERROR;
    r->when = ABX_PHASE_COLLECT;
    abx_result_set(&r->message, msg);
    abx_result_set(&r->longrepr, msg);
    abx_buf_free(&clean);
    r->worker = g_index;
    return r;
}

static int should_stop(long maxfail, long failures)
{
    return abx_region_interrupted() || abx_stop_requested() ||
           (maxfail > 0 && failures >= maxfail);
}

static long g_failures;

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
static int call_m(lua_State *L, const char *name, int nargs, int nres)
{
    abx_lstate_module(L);
    lua_getfield(L, -1, name);
    lua_remove(L, -2);
    lua_insert(L, -1 - nargs);
    return lua_pcall(L, nargs, nres, 0);
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
static void close_file(struct open_file *of)
{
    struct abx_buf errs;
    lua_State *L = of->L;
    lua_Integer i, n;

    if (!L)
        return;
    of->L = NULL;
    abx_buf_init(&errs, 1024 * 1024);
    lua_settop(L, 1);
    if (call_m(L, "_finish_file", 0, 2) != LUA_OK) {
        abx_buf_appendf(&errs, "%s\n", lua_tostring(L, -1));
    } else {
        n = (lua_Integer)lua_rawlen(L, -2);
        for (i = 1; i <= n; i++) {
            lua_rawgeti(L, -2, i);
            abx_buf_appendf(&errs, "%s\n", lua_tostring(L, -1));
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
        send_amend(of->last ? of->last : g_last ? g_last : of->path,
                   abx_buf_cstr(&errs));
    }
    abx_buf_free(&errs);
    free(of->path);
    free(of->last);
    memset(of, 0, sizeof *of);
}

static struct open_file *find_open(const char *path)
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
static struct open_file *open_file(const char *path, char *err,
                                   size_t errlen)
{
    struct open_file *of = find_open(path), *slot = NULL;
    lua_State *L;
    int i;

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
        close_file(slot);
    L = abx_lstate_open(&g_host, g_dir, err, errlen);
    if (L && abx_lstate_load_test(L, path, err, errlen) != 0) {
        lua_close(L);
        L = NULL;
    }
    if (L && call_m(L, "_collected", 0, 1) != LUA_OK) {
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

static void close_all_files(void)
{
    int i;

    for (i = 0; i < MAX_OPEN_FILES; i++)
        close_file(&g_open[i]);
}

/* What this worker's tests run under, from the config and the runner. */
struct plan {
    long fail_budget;     /* failures before it stops (0: no limit) */
    long reruns;          /* --reruns (a test's own option wins) */
    double reruns_delay;  /* --reruns-delay, s */
};

/* The reruns a test gets: its own `reruns` option, else --reruns; none
 * for a known issue (a strict xfail must not be retried into a pass). */
static long reruns_for(lua_State *L, int ci, int idx, long reruns)
{
    long n = reruns;

    lua_rawgeti(L, ci, idx);
    if (lua_getfield(L, -1, "reruns") == LUA_TNUMBER)
        n = (long)lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (lua_getfield(L, -1, "known_issue") != LUA_TNIL)
        n = 0;
    lua_pop(L, 2);
    return n;
}

/* --reruns-delay: sleeps, but a stop request (signal, -x elsewhere) ends
 * the wait at once (nanosleep returns on the signal). */
static void rerun_pause(const struct plan *p)
{
    struct timespec ts, rem;

    if (p->reruns_delay <= 0)
        return;
    ts.tv_sec = (time_t)p->reruns_delay;
    ts.tv_nsec = (long)((p->reruns_delay - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &rem) != 0 && errno == EINTR &&
           !should_stop(p->fail_budget, g_failures))
        ts = rem;
}

/* Ends the test's trace (docs/reports.md "Traces") with its result; the
 * file written, if any, becomes r->trace. A trace that cannot be written
 * is said on stderr and costs the test nothing. */
static void trace_end(struct abx_result *r)
{
    char path[1400], err[512];
    int failed = r == NULL || abx_result_is_failure(r) || r->teardown_message;
    cJSON *e = r ? abx_trace_new("result") : NULL;

    if (e) {
        cJSON_AddStringToObject(e, "outcome", abx_outcome_name(r->outcome));
        cJSON_AddStringToObject(e, "when", abx_phase_name(r->when));
        if (r->message)
            cJSON_AddStringToObject(e, "message", r->message);
        if (r->teardown_message)
            cJSON_AddStringToObject(e, "teardown_message", r->teardown_message);
        abx_trace_add(e);
    }
    if (abx_trace_end(failed, path, sizeof path, err, sizeof err) != 0)
        abx_out_printf(ABX_OUT_STDERR, "WARNING: %s\n", err);
    else if (r && path[0])
        abx_result_set(&r->trace, path);
}

/* Runs collected test idx, again after a failure while reruns are left
 * (fresh test fixtures each time; the test's sandboxes die with its
 * scope), and sends one result carrying the failed attempts: FLAKY when
 * a rerun passed. Never rerun: an interrupted test, a failure a wider
 * fixture keeps for its scope (no_rerun), or once the run must stop.
 * 0, or 1 when interrupted (stop the file). */
static int run_test(struct open_file *of, int idx, const char *nodeid,
                    const struct plan *p)
{
    lua_State *L = of->L;
    const char *path = of->path;
    const int ci = 1;
    struct abx_result *prior = NULL, *r = NULL;
    long left = reruns_for(L, ci, idx, p->reruns);

    abx_trace_begin(nodeid);   /* one record for all its attempts */
    for (;;) {
        int no_rerun;
        double start = abx_wall_clock();

        /* Each attempt restarts the parent's watchdog for the test. */
        send_kv(ABX_MSG_START, "nodeid", nodeid, strlen(nodeid));
        lua_pushinteger(L, idx);
        if (call_m(L, "_run", 1, 1) != LUA_OK) {
            r = error_result(nodeid, path, lua_tostring(L, -1));
            lua_pop(L, 1);
            break;
        }
        lua_getfield(L, -1, "outcome");
        if (lua_isstring(L, -1) &&
            strcmp(lua_tostring(L, -1), "interrupted") == 0) {
            lua_pop(L, 2);
            send_kv(ABX_MSG_INTERRUPTED, "nodeid", nodeid, strlen(nodeid));
            abx_result_free(prior);
            trace_end(NULL);
            return 1;
        }
        lua_pop(L, 1);
        lua_getfield(L, -1, "no_rerun");
        no_rerun = lua_toboolean(L, -1);
        lua_pop(L, 1);
        lua_rawgeti(L, ci, idx);
        r = result_from_lua(L, path, lua_gettop(L), lua_gettop(L) - 1);
        lua_pop(L, 2);
        if (r)
            r->start = start;
        if (!r || left <= 0 || no_rerun || r->xpass_strict ||
            (r->outcome != ABX_OUTCOME_FAILED &&
             r->outcome != ABX_OUTCOME_ERROR) ||
            should_stop(p->fail_budget, g_failures))
            break;
        if (!prior && !(prior = abx_result_new()))
            break;
        if (abx_result_add_attempt(prior, r) != 0)
            break;
        abx_result_free(r);
        r = NULL;
        left--;
        rerun_pause(p);
        if (should_stop(p->fail_budget, g_failures))
            break;
    }
    if (r && prior) {
        r->attempts = prior->attempts;
        r->nattempts = prior->nattempts;
        r->rerun = prior->rerun;
        prior->attempts = NULL;
        prior->nattempts = 0;
        if (r->outcome == ABX_OUTCOME_PASSED)
            r->outcome = ABX_OUTCOME_FLAKY;
    }
    abx_result_free(prior);
    trace_end(r);
    if (!r)
        return 0;
    if (abx_result_is_failure(r) || r->teardown_message)
        g_failures++;
    send_result(r, of);
    return 0;
}

/* Runs a RUN batch: ids (node ids of path, in order) in path's state.
 * 0, or 1 when interrupted (the worker stops). */
static int run_batch(const char *path, const cJSON *ids, const struct plan *p)
{
    char err[4096] = "";
    struct open_file *of;
    const cJSON *id;

    abx_dirname(path, g_dir, sizeof g_dir);
    of = open_file(path, err, sizeof err);
    if (!of) {
        cJSON_ArrayForEach(id, ids) if (cJSON_IsString(id))
            send_result(error_result(id->valuestring, path, err), NULL);
        return 0;
    }
    cJSON_ArrayForEach(id, ids) {
        int idx;

        if (!cJSON_IsString(id) || should_stop(p->fail_budget, g_failures))
            break;
        idx = find_collected(of->L, 1, id->valuestring, &of->hint);
        if (idx == 0) {
            send_result(error_result(id->valuestring, path,
                                     "test not collected by the worker "
                                     "(collection is not deterministic)"),
                        of);
            continue;
        }
        if (run_test(of, idx, id->valuestring, p) != 0)
            return 1;
    }
    return 0;
}

static void finish_sessions(void)
{
    struct abx_buf errs;
    size_t i;

    abx_buf_init(&errs, 1024 * 1024);
    for (i = 0; i < g_nsessions; i++) {
        lua_State *S = g_sessions[i].L;
        if (call_m(S, "_finish_session", 0, 1) != LUA_OK) {
            abx_buf_appendf(&errs, "%s\n", lua_tostring(S, -1));
        } else {
            lua_Integer k, n = (lua_Integer)lua_rawlen(S, -1);
            for (k = 1; k <= n; k++) {
                lua_rawgeti(S, -1, k);
                abx_buf_appendf(&errs, "%s\n", lua_tostring(S, -1));
                lua_pop(S, 1);
            }
        }
        lua_close(S);
    }
    g_nsessions = 0;
    abx_fixture_c_finish_session(&errs);
    if (errs.len > 0 && g_last) {
        errs.data[--errs.len] = '\0';
        send_amend(g_last, abx_buf_cstr(&errs));
    }
    abx_buf_free(&errs);
}

static int stop_reading(void) { return abx_region_interrupted(); }

/* The lifetimes of this worker's sandboxes, for the reports' timeline. */
static void send_lifetimes(void)
{
    cJSON *m, *list;

    if (!abx_track_ready() || !(list = abx_track_lifetimes(g_index)))
        return;
    m = cJSON_GetArraySize(list) > 0 ? abx_msg_new(ABX_MSG_SANDBOXES) : NULL;
    if (!m || !cJSON_AddItemToObject(m, "list", list)) {
        cJSON_Delete(list);
        cJSON_Delete(m);
        return;
    }
    send_json(m);
}

void abx_worker_main(int in_fd, int out_fd, int index, const struct abx_config *cfg,
                     long fail_budget, pid_t runner)
{
    const struct plan plan = {fail_budget, cfg->opt.reruns, cfg->opt.reruns_delay};
    struct abx_chan in;
    char *line = NULL;

    g_out_fd = out_fd;
    g_index = index;
    abx_signals_worker();
    /* A runner killed outright interrupts its workers at once: their
     * teardowns delete what they track while the guardian sweeps. */
    prctl(PR_SET_PDEATHSIG, SIGUSR1);
    /* Dead before the line above: not "parent is 1", the runner may be a
     * container's pid 1 itself. */
    if (getppid() != runner)
        abx_region_interrupt();
    abx_lstate_host(&g_host, cfg);
    g_host.emit = emit_to_parent;
    g_host.secret = secret_to_parent;
    g_host.session_fixture = session_fixture;
    g_host.worker = index;
    g_session_host = g_host;
    g_session_host.is_session = 1;
    abx_out_set_secret_hook(secret_hook);
    abx_sandboxes_worker_init(cfg);
    abx_chan_init(&in, in_fd, 0);
    while (!abx_region_interrupted() &&
           abx_chan_read_line(&in, &line, stop_reading) == 1) {
        cJSON *m = cJSON_Parse(line);
        const char *file = abx_msg_str(m, "file");
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(m, "nodeids");
        int stop = 0;

        free(line);
        line = NULL;
        if (file && abx_msg_type(m) == ABX_MSG_RUN && cJSON_IsArray(ids)) {
            stop = run_batch(file, ids, &plan);
            send_kv(ABX_MSG_DONE, "file", file, strlen(file));
        } else if (file && abx_msg_type(m) == ABX_MSG_CLOSE) {
            struct open_file *of = find_open(file);
            if (of)
                close_file(of);
        }
        cJSON_Delete(m);
        if (stop)
            break;
    }
    abx_chan_free(&in);
    close_all_files();
    finish_sessions();
    /* Normal end, stop request or SIGTERM alike: nothing tracked
     * outlives the worker (kept ones aside). */
    abx_sandboxes_worker_end();
    send_lifetimes();
    free(g_last);
    _exit(0);
}
