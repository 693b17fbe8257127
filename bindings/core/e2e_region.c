/* Deadlines and interrupts for Lua code (after Redis' luaMaskCountHook and
 * lua.c's laction/lstop).
 *
 * Every state gets a permanent count hook at creation, so coroutines
 * created later inherit it. core.region() arms a process-wide deadline
 * around one call. When the deadline passes (or an interrupt arrives in an
 * interruptible region) the hook raises a typed error and switches the
 * thread to a line+count(1) hook: from then on every hook call raises
 * again, so a test's own pcall cannot swallow the timeout. The state is
 * restored in C as soon as the region's pcall returns, before any Lua code
 * of the caller runs. Signal handlers only set a flag. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "e2e_error.h"
#include "lua_e2e.h"

#define HOOK_COUNT 1000

enum { FIRED_NONE, FIRED_TIMEOUT, FIRED_INTERRUPT };

struct region {
    int armed;          /* a deadline is set */
    double deadline;    /* abx_clock() value */
    double budget;
    int interruptible;  /* a pending interrupt raises here */
    int fired;
};

static struct region g_region;
static volatile sig_atomic_t g_interrupt;

double abx_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void abx_region_interrupt(void) { g_interrupt = 1; }
int abx_region_interrupted(void) { return g_interrupt != 0; }
void abx_region_reset_interrupt(void) { g_interrupt = 0; }

static void push_timeout(lua_State *L)
{
    char msg[160];

    snprintf(msg, sizeof msg, "%s %g s",
             g_region.interruptible ? "test exceeded"
                                    : "teardown step exceeded",
             g_region.budget);
    abx_err_push_new(L, ABX_ERR_TEST_TIMEOUT, msg);
}

static void hook(lua_State *L, lua_Debug *ar)
{
    int fired = g_region.fired;

    (void)ar;
    if (fired == FIRED_NONE) {
        if (g_region.interruptible && g_interrupt)
            fired = FIRED_INTERRUPT;
        else if (g_region.armed && abx_clock() >= g_region.deadline)
            fired = FIRED_TIMEOUT;
        else
            return;
        g_region.fired = fired;
    }
    /* Keep raising at every line and instruction until the region ends. */
    lua_sethook(L, hook, LUA_MASKCOUNT | LUA_MASKLINE, 1);
    if (fired == FIRED_INTERRUPT)
        abx_err_push_new(L, ABX_ERR_INTERRUPTED, "run stopped by a signal");
    else
        push_timeout(L);
    lua_error(L);
}

double abx_region_deadline(void)
{
    return g_region.armed ? g_region.deadline : 0;
}

int abx_region_interruptible(void) { return g_region.interruptible; }

void abx_region_check(lua_State *L) { hook(L, NULL); }

void abx_region_install(lua_State *L)
{
    lua_sethook(L, hook, LUA_MASKCOUNT, HOOK_COUNT);
}

/* Pushes "<message>\nstack traceback:..." built from the string at
 * msgidx as a Lua value, so NUL bytes in the message survive. */
static void push_traceback(lua_State *L, int msgidx)
{
    if (lua_type(L, msgidx) == LUA_TSTRING) {
        lua_pushvalue(L, msgidx);
        lua_pushliteral(L, "\n");
        luaL_traceback(L, L, NULL, 1);
        lua_concat(L, 3);
    } else {
        luaL_traceback(L, L, NULL, 1);
    }
}

static int call_tostring(lua_State *L)
{
    luaL_callmeta(L, 1, "__tostring");
    return 1;
}

/* Message handler: keeps our own error values (adding a traceback), wraps
 * anything else as class Error, the raised value in .value. Runs in C so
 * that a fired hook cannot interfere.
 * A __tostring that fails or returns a non-string is said so, not obeyed. */
static int msgh(lua_State *L)
{
    int m;

    if (abx_err_is(L, 1)) {
        lua_pushliteral(L, "traceback");
        if (lua_rawget(L, 1) == LUA_TNIL) {
            lua_pushliteral(L, "traceback");
            abx_err_push_text(L, 1);
            push_traceback(L, lua_gettop(L));
            lua_remove(L, -2);
            lua_rawset(L, 1);
        }
        lua_settop(L, 1);
        return 1;
    }
    if (lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TNUMBER) {
        lua_pushvalue(L, 1);
        lua_tolstring(L, -1, NULL);  /* numbers become strings */
    } else if (luaL_getmetafield(L, 1, "__tostring") != LUA_TNIL) {
        int st;
        lua_pop(L, 1);
        lua_pushcfunction(L, call_tostring);
        lua_pushvalue(L, 1);
        st = lua_pcall(L, 1, 1, 0);
        if (st != LUA_OK) {
            const char *why = lua_tostring(L, -1);
            lua_pushfstring(L, "(error object is a %s value whose __tostring "
                            "failed: %s)", luaL_typename(L, 1),
                            why ? why : luaL_typename(L, -1));
        } else if (lua_type(L, -1) != LUA_TSTRING) {
            lua_pushfstring(L, "(error object is a %s value whose __tostring "
                            "returned a %s)", luaL_typename(L, 1),
                            luaL_typename(L, -1));
        }
    } else {
        lua_pushfstring(L, "(error object is a %s value)",
                        luaL_typename(L, 1));
    }
    m = lua_gettop(L);
    abx_err_push_new(L, ABX_ERR_ERROR, "");
    lua_pushvalue(L, m);
    lua_setfield(L, -2, "message");
    lua_pushvalue(L, 1);  /* the error as raised: its class, for matching */
    lua_setfield(L, -2, "value");
    push_traceback(L, m);
    lua_setfield(L, -2, "traceback");
    return 1;
}

/* Ensures the error value at the top is a typed table (memory errors and
 * errors in the handler bypass msgh). */
static void normalise_error(lua_State *L, int status)
{
    if (abx_err_is(L, -1))
        return;
    {
        const char *m = lua_tostring(L, -1);
        char buf[256];
        if (status == LUA_ERRMEM)
            m = abx_alloc_oom_message();
        snprintf(buf, sizeof buf, "%s", m ? m : "error in error handling");
        lua_pop(L, 1);
        abx_err_push_new(L, ABX_ERR_ERROR, buf);
    }
}

/* Runs the function at stack index fidx with the args above it. */
static int region_pcall(lua_State *L, int fidx, double budget, int intr)
{
    struct region saved = g_region;
    int nargs = lua_gettop(L) - fidx, status, own = 0;

    /* No budget of its own: the enclosing deadline (if any) still holds. */
    if (budget > 0 && isfinite(budget)) {
        double dl = abx_clock() + budget;
        own = 1;
        g_region.armed = 1;
        g_region.budget = budget;
        g_region.deadline = dl;
    }
    g_region.interruptible = intr;
    g_region.fired = FIRED_NONE;
    lua_pushcfunction(L, msgh);
    lua_insert(L, fidx);
    status = lua_pcall(L, nargs, LUA_MULTRET, fidx);
    /* A call that returned past its deadline overran it all the same
     * (the time went in C: os.execute("sleep 4"), a blocking read): the
     * hook never ran after the deadline, the clock decides. */
    if (status == LUA_OK && own && abx_clock() >= g_region.deadline) {
        lua_settop(L, fidx);
        push_timeout(L);
        status = LUA_ERRRUN;
    }
    lua_remove(L, fidx);
    g_region = saved;
    abx_region_install(L);  /* back to the cheap hook on this thread */
    if (status != LUA_OK)
        normalise_error(L, status);
    return status;
}

int abx_region_call(lua_State *L, int nargs, double budget,
                    int interruptible)
{
    return region_pcall(L, lua_gettop(L) - nargs, budget, interruptible);
}

int abx_region_l(lua_State *L)
{
    double budget = luaL_optnumber(L, 1, 0);
    int intr = lua_toboolean(L, 2), status;

    luaL_checktype(L, 3, LUA_TFUNCTION);
    status = region_pcall(L, 3, budget, intr);
    /* stack: budget intr results... | budget intr err */
    lua_pushboolean(L, status == LUA_OK);
    lua_insert(L, 3);
    return lua_gettop(L) - 2;
}

int abx_region_sleep_l(lua_State *L)
{
    double s = luaL_checknumber(L, 1), end;

    if (!(s > 0))
        return 0;
    end = abx_clock() + s;
    if (g_region.armed && g_region.deadline < end)
        end = g_region.deadline;
    for (;;) {
        double left = end - abx_clock();
        struct timespec ts;

        if (left <= 0 || (g_region.interruptible && g_interrupt))
            break;
        if (left > 0.05)
            left = 0.05;
        ts.tv_sec = 0;
        ts.tv_nsec = (long)(left * 1e9);
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
            if (g_interrupt)
                break;
        }
    }
    hook(L, NULL);  /* raises now if the deadline passed or a stop came */
    return 0;
}
