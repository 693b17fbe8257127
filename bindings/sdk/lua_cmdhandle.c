/* The command handle (lua_cmdhandle.h), metatable e2e.CommandHandle.
 *
 * Ownership: every abx_proc stream is owned by a handle userdata created
 * BEFORE the stream is started, so whatever raises afterwards (a callback,
 * an out-of-memory while pushing a chunk) leaves the stream anchored, and
 * the handle's __gc closes it. Callbacks run protected: a callback error
 * closes the stream first, then goes on unchanged. Closing a handle
 * disconnects; it never kills the process. */
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "e2e_raise.h"
#include "e2e_trace.h"
#include "http.h"
#include "lua_cmdhandle.h"
#include "lua_sbxtype.h"
#include "lua_util.h"

/* Client-side guard beyond the command's own timeout (the server kills it
 * at the deadline and ends the stream): a stream that never ends cannot
 * hang the run. */
#define GUARD_S 10.0

/* User values: 1 the sandbox, 2/3 on_stdout/on_stderr given to run (used
 * by wait when it gets none). */
struct lhandle {
    struct abx_proc *pr;  /* NULL once the stream ended or was closed */
    uint32_t pid;
    int closed;           /* disconnected: by the user, __close or __gc */
    int busy;             /* inside wait (a callback may not wait again) */
    int ended;            /* the end event arrived */
    int failed;           /* the stream failed: ferr */
    int exit_code;
    int has_error;
    char error[512];      /* EndEvent.error */
    double deadline;      /* abx_http_now based guard; 0 = none */
    struct abx_err ferr;
    struct abx_buf out, err;
};

/* Streams owned by handles of this process; read by the selftest-only
 * e2e.commands._open_streams() to prove that no error path strands one. */
static size_t g_open_streams;

static void hclose(struct lhandle *h)
{
    if (h->pr)
        g_open_streams--;
    abx_proc_close(h->pr);
    h->pr = NULL;
}

size_t abx_lhandle_open_streams(void)
{
    return g_open_streams;
}

static void hfail(struct lhandle *h, const struct abx_err *e)
{
    h->ferr = *e;
    h->failed = 1;
    hclose(h);
}

/* Records one event. 0, or -1 when the output cap was hit (h failed). */
static int take_event(struct lhandle *h, const struct abx_proc_event *ev)
{
    struct abx_buf *b = ev->type == ABX_PROC_STDERR ? &h->err : &h->out;
    struct abx_err e;

    switch (ev->type) {
    case ABX_PROC_STDOUT:
    case ABX_PROC_STDERR:
        if (abx_buf_append(b, ev->data, ev->len) == 0)
            return 0;
        abx_err_clear(&e);
        abx_err_set(&e, ABX_E_PROTOCOL, 0, "output_cap",
                    "command %s exceeded the %zu MiB cap (pid %u); stream "
                    "large output to a file instead",
                    b == &h->err ? "stderr" : "stdout",
                    b->max / (1024 * 1024), (unsigned)h->pid);
        hfail(h, &e);
        return -1;
    case ABX_PROC_END:
        h->ended = 1;
        h->exit_code = ev->exit_code;
        h->has_error = ev->error[0] != '\0';
        memcpy(h->error, ev->error, sizeof h->error);
        h->error[sizeof h->error - 1] = '\0';
        hclose(h);
        return 0;
    default:
        return 0;  /* pty output: not produced by run */
    }
}

/* Takes what already arrived, without waiting (handle.stdout/.stderr).
 * Errors are kept for wait to report. */
static void hdrain(struct lhandle *h)
{
    struct abx_proc_event ev;
    struct abx_err e;
    int r;

    if (!h->pr || h->ended || h->failed || h->busy)
        return;
    abx_http_pump(0);  /* take what the sockets hold, never wait */
    while (h->pr && !h->ended && !h->failed) {
        abx_err_clear(&e);
        r = abx_proc_next(h->pr, &ev, abx_http_now(), &e);
        if (r == 0)
            break;
        if (r < 0) {
            hfail(h, &e);
            break;
        }
        if (take_event(h, &ev) < 0)
            break;
    }
}

static void push_buf(lua_State *L, const struct abx_buf *b)
{
    lua_pushlstring(L, b->data ? b->data : "", b->len);
}

static void push_result(lua_State *L, const struct lhandle *h)
{
    lua_createtable(L, 0, 4);
    push_buf(L, &h->out);
    lua_setfield(L, -2, "stdout");
    push_buf(L, &h->err);
    lua_setfield(L, -2, "stderr");
    lua_pushinteger(L, h->exit_code);
    lua_setfield(L, -2, "exit_code");
    if (h->has_error) {
        lua_pushstring(L, h->error);
        lua_setfield(L, -2, "error");
    }
}

/* Raises the CommandExit error value (docs/lua-api.md "Errors"). */
static int raise_exit(lua_State *L, const struct lhandle *h)
{
    struct abx_err e;

    abx_err_clear(&e);
    abx_err_set(&e, ABX_E_SANDBOX, 0, NULL, "Command exited with code %d",
                h->exit_code);
    abx_err_push(L, &e);
    lua_pushliteral(L, "CommandExit");
    lua_setfield(L, -2, "class");
    lua_pushfstring(L, "Command exited with code %d and error:\n",
                    h->exit_code);
    push_buf(L, &h->err);
    lua_concat(L, 2);
    lua_setfield(L, -2, "message");
    lua_pushnil(L);
    lua_setfield(L, -2, "status");
    lua_pushnil(L);
    lua_setfield(L, -2, "code");
    lua_pushinteger(L, h->exit_code);
    lua_setfield(L, -2, "exit_code");
    push_buf(L, &h->out);
    lua_setfield(L, -2, "stdout");
    push_buf(L, &h->err);
    lua_setfield(L, -2, "stderr");
    if (h->has_error) {
        lua_pushstring(L, h->error);
        lua_setfield(L, -2, "error");
    }
    abx_ltrace_raise(L, -1);
    return lua_error(L);
}

/* ---- handle userdata -------------------------------------------------- */
static struct lhandle *check_handle(lua_State *L)
{
    return luaL_checkudata(L, 1, ABX_CMDHANDLE_MT);
}

/* The handle's sandbox (raises "sandbox <id> was killed"); a handle kept
 * past its sandbox's end releases its stream first, unless a wait of its
 * own is reading that stream (a callback calling kill). */
static struct abx_lsandbox *owner(lua_State *L, struct lhandle *h)
{
    if (!h->busy && abx_lowner_killed(L, 1))
        hclose(h);
    return abx_lowner(L, 1);
}

static int h_wait(lua_State *L)
{
    static const char *const known[] = {"on_stdout", "on_stderr", NULL};
    struct lhandle *h = check_handle(L);
    int cbo, cbe;

    if (h->closed)
        return luaL_error(L, "command handle is closed");
    if (h->busy)
        return luaL_error(L, "command handle is busy (wait called from "
                          "one of its own callbacks)");
    owner(L, h);
    abx_lopt_check(L, 2, "wait", known);
    cbo = abx_lopt_push(L, 2, "on_stdout", LUA_TFUNCTION) ? lua_gettop(L) : 0;
    cbe = abx_lopt_push(L, 2, "on_stderr", LUA_TFUNCTION) ? lua_gettop(L) : 0;
    return abx_lhandle_wait(L, 1, cbo, cbe);
}

static int h_kill(lua_State *L)
{
    struct lhandle *h = check_handle(L);
    struct abx_lsandbox *s = owner(L, h);
    struct abx_err e;
    int r;

    abx_err_clear(&e);
    if ((r = abx_envd_signal(&s->envd, h->pid, 9, &e)) < 0)
        return abx_err_raise(L, &e);
    lua_pushboolean(L, r);
    return 1;
}

/* Base64 makes 4 MiB about 5.6 MB of JSON: well under envd's request
 * cap (16 MiB here, and E2B's envd is no larger). */
#define STDIN_PIECE ((size_t)4 << 20)

int abx_lsend_stdin(lua_State *L, const struct abx_endpoint *envd,
                    uint32_t pid, const char *data, size_t len)
{
    struct abx_err e;
    size_t off = 0, n;

    do {  /* an empty string is still one (empty) input */
        n = len - off < STDIN_PIECE ? len - off : STDIN_PIECE;
        abx_err_clear(&e);
        if (abx_envd_send_stdin(envd, pid, data + off, n, &e) < 0)
            return abx_err_raise(L, &e);
        off += n;
    } while (off < len);
    return 0;
}

static int h_send_stdin(lua_State *L)
{
    struct lhandle *h = check_handle(L);
    size_t len;
    const char *data = luaL_checklstring(L, 2, &len);
    struct abx_lsandbox *s = owner(L, h);

    return abx_lsend_stdin(L, &s->envd, h->pid, data, len);
}

static int h_close_stdin(lua_State *L)
{
    struct lhandle *h = check_handle(L);
    struct abx_lsandbox *s = owner(L, h);
    struct abx_err e;

    abx_err_clear(&e);
    if (abx_envd_close_stdin(&s->envd, h->pid, &e) < 0)
        return abx_err_raise(L, &e);
    return 0;
}

/* disconnect, __close: one idempotent close (never kills). */
static int h_disconnect(lua_State *L)
{
    struct lhandle *h = check_handle(L);

    hclose(h);
    h->closed = 1;
    return 0;
}

static int h_gc(lua_State *L)
{
    struct lhandle *h = check_handle(L);

    hclose(h);
    h->closed = 1;
    abx_buf_free(&h->out);
    abx_buf_free(&h->err);
    return 0;
}

static int h_index(lua_State *L)
{
    struct lhandle *h = check_handle(L);
    const char *k = lua_tostring(L, 2);

    if (lua_type(L, 2) == LUA_TSTRING && strcmp(k, "pid") == 0) {
        lua_pushinteger(L, (lua_Integer)h->pid);
        return 1;
    }
    if (lua_type(L, 2) == LUA_TSTRING &&
        (strcmp(k, "stdout") == 0 || strcmp(k, "stderr") == 0)) {
        hdrain(h);
        push_buf(L, k[3] == 'o' ? &h->out : &h->err);
        return 1;
    }
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));  /* the methods */
    return 1;
}

static int h_tostring(lua_State *L)
{
    struct lhandle *h = check_handle(L);

    lua_pushfstring(L, "e2e.CommandHandle (pid %d%s)", (int)h->pid,
                    h->closed ? ", closed" : h->ended ? ", ended" : "");
    return 1;
}

static void handle_mt(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"wait", h_wait},
        {"kill", h_kill},
        {"send_stdin", h_send_stdin},
        {"close_stdin", h_close_stdin},
        {"disconnect", h_disconnect},
        {NULL, NULL},
    };
    static const luaL_Reg meta[] = {
        {"__gc", h_gc},
        {"__close", h_disconnect},
        {"__tostring", h_tostring},
        {NULL, NULL},
    };

    if (luaL_newmetatable(L, ABX_CMDHANDLE_MT)) {
        luaL_setfuncs(L, meta, 0);
        abx_ltrace_newlib(L, methods, "handle");
        lua_pushcclosure(L, h_index, 1);
        lua_setfield(L, -2, "__index");
    }
}

void abx_lhandle_push(lua_State *L, int sbx_idx, int cbo, int cbe)
{
    struct lhandle *h;

    sbx_idx = lua_absindex(L, sbx_idx);
    cbo = cbo ? lua_absindex(L, cbo) : 0;
    cbe = cbe ? lua_absindex(L, cbe) : 0;
    h = lua_newuserdatauv(L, sizeof *h, 3);
    memset(h, 0, sizeof *h);
    abx_buf_init(&h->out, ABX_BUF_DEFAULT_MAX);
    abx_buf_init(&h->err, ABX_BUF_DEFAULT_MAX);
    handle_mt(L);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, sbx_idx);
    lua_setiuservalue(L, -2, 1);
    if (cbo) {
        lua_pushvalue(L, cbo);
        lua_setiuservalue(L, -2, 2);
    }
    if (cbe) {
        lua_pushvalue(L, cbe);
        lua_setiuservalue(L, -2, 3);
    }
}

void abx_lhandle_own(lua_State *L, int hidx, struct abx_proc *pr,
                     double timeout)
{
    struct lhandle *h = lua_touserdata(L, hidx);

    h->pr = pr;
    h->pid = abx_proc_pid(pr);
    h->deadline = timeout > 0 ? abx_http_now() + timeout + GUARD_S : 0;
    g_open_streams++;
}

/* Waits for the end of the command behind the handle at hidx, calling
 * the functions at cbo/cbe (0: the handle's own, from its start, if any)
 * with each chunk, protected: a callback error closes the stream and is
 * re-raised as is. Pushes the result, or raises CommandExit / the
 * stream's error. */
int abx_lhandle_wait(lua_State *L, int hidx, int cbo, int cbe)
{
    struct lhandle *h;
    struct abx_proc_event ev;
    struct abx_err e;
    int r, cb;

    hidx = lua_absindex(L, hidx);
    h = lua_touserdata(L, hidx);
    if (!cbo) {
        lua_getiuservalue(L, hidx, 2);
        cbo = lua_isfunction(L, -1) ? lua_gettop(L) : 0;
    }
    if (!cbe) {
        lua_getiuservalue(L, hidx, 3);
        cbe = lua_isfunction(L, -1) ? lua_gettop(L) : 0;
    }
    luaL_checkstack(L, 4, "command output callback");
    h->busy = 1;
    while (!h->ended && !h->failed) {
        if (!h->pr) {  /* disconnected by one of its own callbacks */
            h->busy = 0;
            return luaL_error(L, "command handle is closed");
        }
        abx_err_clear(&e);
        r = abx_proc_next(h->pr, &ev, h->deadline, &e);
        if (r == 0)
            abx_err_set(&e, ABX_E_TIMEOUT, 0, "deadline_exceeded",
                        "command (pid %u) did not end before its timeout",
                        (unsigned)h->pid);
        if (r <= 0) {
            hfail(h, &e);
            break;
        }
        if (take_event(h, &ev) < 0)
            break;
        cb = ev.type == ABX_PROC_STDOUT ? cbo
             : ev.type == ABX_PROC_STDERR ? cbe : 0;
        if (!cb)
            continue;
        /* Nothing raises here (not even out of memory), so busy is
         * always reset on the way out. */
        if (abx_lpcall_bytes(L, cb, ev.data, ev.len) != LUA_OK) {
            h->busy = 0;
            hclose(h);  /* the stream first, then the error goes on */
            return lua_error(L);
        }
    }
    h->busy = 0;
    /* Killed meanwhile (by a callback, another handle): the cut stream
     * says only "truncated"; say what happened, as every later call will. */
    if (h->failed && abx_lowner_killed(L, hidx))
        abx_lowner(L, hidx);
    if (h->failed)
        return abx_err_raise(L, &h->ferr);
    if (h->exit_code != 0)
        return raise_exit(L, h);
    push_result(L, h);
    return 1;
}
