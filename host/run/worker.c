/* A worker process's loop, and a test's run with its reruns: runs the
 * tests the parent sends over the message channel (chan.h): RUN {"file",
 * "nodeids"} runs them in that file's state (worker_files.c); CLOSE
 * {"file"} tears its file fixtures down (no more of its tests here). It
 * answers START, RESULT, OUT, SECRET, AMEND, INTERRUPTED and DONE
 * {"file"} after each batch (worker_msg.c), every line masked before it
 * leaves. */
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

#include "out.h"
#include "sandbox.h"
#include "trace.h"
#include "wallclock.h"
#include "worker_int.h"

/* Secrets the C clients learn (access tokens) reach the runner too. */
static void secret_hook(const char *s, size_t len)
{
    abx_wmsg_secret(NULL, s, len);
}

static int should_stop(long maxfail, long failures)
{
    return abx_region_interrupted() || abx_stop_requested() ||
           (maxfail > 0 && failures >= maxfail);
}

static long g_failures;

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
static int run_test(struct abx_wfile *of, int idx, const char *nodeid,
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
        abx_wmsg_kv(ABX_MSG_START, "nodeid", nodeid, strlen(nodeid));
        lua_pushinteger(L, idx);
        if (abx_wfile_call(L, "_run", 1, 1) != LUA_OK) {
            r = abx_wresult_error(nodeid, path, lua_tostring(L, -1));
            lua_pop(L, 1);
            break;
        }
        lua_getfield(L, -1, "outcome");
        if (lua_isstring(L, -1) &&
            strcmp(lua_tostring(L, -1), "interrupted") == 0) {
            lua_pop(L, 2);
            abx_wmsg_kv(ABX_MSG_INTERRUPTED, "nodeid", nodeid, strlen(nodeid));
            abx_result_free(prior);
            trace_end(NULL);
            return 1;
        }
        lua_pop(L, 1);
        lua_getfield(L, -1, "no_rerun");
        no_rerun = lua_toboolean(L, -1);
        lua_pop(L, 1);
        lua_rawgeti(L, ci, idx);
        r = abx_wresult_from_lua(L, path, lua_gettop(L), lua_gettop(L) - 1);
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
        r->capattempts = prior->capattempts;
        r->rerun = prior->rerun;
        prior->attempts = NULL;
        prior->nattempts = prior->capattempts = 0;
        if (r->outcome == ABX_OUTCOME_PASSED)
            r->outcome = ABX_OUTCOME_FLAKY;
    }
    abx_result_free(prior);
    trace_end(r);
    if (!r)
        return 0;
    if (abx_result_is_failure(r) || r->teardown_message)
        g_failures++;
    abx_wmsg_result(r, &of->last);
    return 0;
}

/* Runs a RUN batch: ids (node ids of path, in order) in path's state.
 * 0, or 1 when interrupted (the worker stops). */
static int run_batch(const char *path, const cJSON *ids, const struct plan *p)
{
    char err[4096] = "";
    struct abx_wfile *of;
    const cJSON *id;

    of = abx_wfile_open(path, err, sizeof err);
    if (!of) {
        cJSON_ArrayForEach(id, ids) if (cJSON_IsString(id))
            abx_wmsg_result(abx_wresult_error(id->valuestring, path, err), NULL);
        return 0;
    }
    cJSON_ArrayForEach(id, ids) {
        int idx;

        if (!cJSON_IsString(id) || should_stop(p->fail_budget, g_failures))
            break;
        idx = abx_wfile_test(of, id->valuestring);
        if (idx == 0) {
            abx_wmsg_result(abx_wresult_error(id->valuestring, path,
                                              "test not collected by the worker "
                                              "(collection is not deterministic)"),
                            &of->last);
            continue;
        }
        if (run_test(of, idx, id->valuestring, p) != 0)
            return 1;
    }
    return 0;
}

static int stop_reading(void) { return abx_region_interrupted(); }

void abx_worker_main(int in_fd, int out_fd, int index, const struct abx_config *cfg,
                     long fail_budget, pid_t runner)
{
    const struct plan plan = {fail_budget, cfg->opt.reruns, cfg->opt.reruns_delay};
    struct abx_chan in;
    char *line = NULL;

    abx_wmsg_init(out_fd, index);
    abx_signals_worker();
    /* A runner killed outright interrupts its workers at once: their
     * teardowns delete what they track while the guardian sweeps. */
    prctl(PR_SET_PDEATHSIG, SIGUSR1);
    /* Dead before the line above: not "parent is 1", the runner may be a
     * container's pid 1 itself. */
    if (getppid() != runner)
        abx_region_interrupt();
    abx_wfiles_init(cfg, index);
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
            abx_wmsg_kv(ABX_MSG_DONE, "file", file, strlen(file));
        } else if (file && abx_msg_type(m) == ABX_MSG_CLOSE) {
            struct abx_wfile *of = abx_wfile_find(file);
            if (of)
                abx_wfile_close(of);
        }
        cJSON_Delete(m);
        if (stop)
            break;
    }
    abx_chan_free(&in);
    abx_wfiles_close_all();
    abx_wsessions_finish();
    /* Normal end, stop request or SIGTERM alike: nothing tracked
     * outlives the worker (kept ones aside). */
    abx_sandboxes_worker_end();
    abx_wmsg_lifetimes();
    abx_wmsg_free();
    _exit(0);
}
