/* The core `e2e` Lua module and the seams the host and the other bindings
 * use.
 *
 * - The host describes itself with struct abx_e2e_host (config, output
 *   sink, session-fixture provider) and calls abx_bindings_open() on every
 *   new lua_State; `require "e2e"` then yields the DSL (prelude.lua).
 * - Deadlines and interrupts: abx_region_* (e2e_region.c). Every state gets
 *   a permanent count hook; core.region() arms a deadline around a call.
 * - C fixtures: abx_fixture_c_register() (e2e_cfixture.c): fixtures
 *   written in C, which tests request by parameter name exactly like Lua
 *   fixtures. The built-in fixtures (base_sandbox etc.) are Lua
 *   (fixtures.lua); only the self-test fixture is registered in C. */
#ifndef ABX_LUA_E2E_H
#define ABX_LUA_E2E_H

#include <stddef.h>

#include <lua.h>

struct abx_platform;

/* ---- host description ------------------------------------------------ */
/* The settings the bindings read: a part of the runner's one config
 * (host/config/config.h, struct abx_config), built once and never changed after. The
 * strings and the platform belong to that config. */
struct abx_e2e_settings {
    double timeout;          /* default per-test budget, s (0 = none) */
    double teardown_budget;  /* per finalizer, s */
    int capture;             /* capture print/io.write per test */
    int plain;               /* exec, repl: plain Lua (debug.sethook allowed) */
    int has_credentials;
    const char *missing_credentials;  /* e.g. "ABX_SANDBOX_API_KEY" */
    const char *run_id;      /* e2e.run_id: tags everything of this run */
    int selftest;            /* ABX_E2E_SELFTEST=1: test-only hooks */
    /* The platform (NULL without one) and the suite's knobs. */
    const struct abx_platform *platform;
    long sandbox_ttl;          /* E2E_SANDBOX_TTL, s */
    const char *server_template;  /* E2E_SERVER_TEMPLATE */
    long server_port;          /* E2E_SERVER_PORT */
    long short_ttl;            /* E2E_SHORT_TTL, s: TTL-expiry tests */
    int allow_skips;           /* --allow-skips (prelude.lua: unexplained skips) */
    int keep_failed;           /* --keep-failed */
    /* Capabilities (docs/capabilities.md): platform kind ("fc", "e2b")
     * and the declared set (1u << enum abx_cap). */
    const char *platform_kind;
    unsigned caps;
    const char *default_user;  /* E2E_DEFAULT_USER */
    int local_platform;        /* --local: abx-local started for the run */
};

/* What a Lua state's process gives it: the settings, and its own hooks
 * and place (a worker's, the collector's, exec's). */
struct abx_e2e_host {
    const struct abx_e2e_settings *set;
    void *ud;
    /* Output that is not captured (-s, exec mode, stray writes). */
    void (*emit)(void *ud, const char *s, size_t len);
    /* Pushes the value of session fixture `name` onto L (copied from the
     * worker's session state) or raises. NULL: session fixtures run in L. */
    void (*session_fixture)(void *ud, lua_State *L, const char *name);
    /* A secret learned at run time (e2e.secret); already in the masker. */
    void (*secret)(void *ud, const char *s, size_t len);
    int is_session;          /* this state is a worker's session state */
    int worker;              /* e2e.worker_id = "gw<N>"; -1 outside workers */
};
/* The host description of L (raises if none; e2e_host.c). */
const struct abx_e2e_host *abx_e2e_host_of(lua_State *L);

/* Process-wide registrations of every binding (C fixtures); call once at
 * start-up, before any state is opened or any worker forked. */
void abx_bindings_init(int selftest);

/* Opens the standard libraries and preloads every binding module
 * (`e2e`, `e2e.sandbox`, ...: the list in bindings.c). h must outlive L.
 * Raises on failure: call it inside lua_pcall. */
void abx_bindings_open(lua_State *L, const struct abx_e2e_host *h);

/* Loads an embedded Lua chunk (bytecode compiled at build time,
 * cmake/abx_luac.c) as chunk name (e2e_chunks.c). A Lua status code; the
 * function or the error is pushed, as luaL_loadbuffer. */
int abx_load_embedded(lua_State *L, const unsigned char *src, size_t len,
                      const char *name);
/* core.known_issue_ids(test_path) (e2e_known.c). */
int abx_known_issue_ids_l(lua_State *L);

/* luaopen_e2e: returns the DSL module table (needs the host registered by
 * abx_bindings_open). */
int luaopen_e2e(lua_State *L);

/* Adds the sandbox-tracking functions (e2e_track.c) to the core table at
 * the top of L: track_group_new, track_kill_group, track_begin_test,
 * track_test_failed, set_sandbox_scope. */
void abx_track_core_add(lua_State *L);

/* luaopen for `e2e.fixtures` (lua_fixtures.c): registers the built-in
 * fixtures (base_sandbox, ...) in L's e2e module. The host loads it into
 * every state before conftest.lua, which may override them. */
int luaopen_e2e_fixtures(lua_State *L);

/* Registers a secret with the process masker and tells the host. */
void abx_e2e_add_secret(lua_State *L, const char *s, size_t len);

/* ---- deadlines and interrupts (e2e_region.c) -------------------------- */

/* Allocator with a process-wide ceiling (e2e_alloc.c); 0 = none. */
void abx_alloc_set_limit(size_t bytes);
void *abx_alloc(void *ud, void *ptr, size_t osize, size_t nsize);
const char *abx_alloc_oom_message(void);  /* for LUA_ERRMEM */

double abx_clock(void);              /* monotonic seconds */
void abx_region_install(lua_State *L);  /* permanent count hook */
void abx_region_interrupt(void);     /* async-signal-safe: request stop */
int abx_region_interrupted(void);
void abx_region_reset_interrupt(void);
/* The armed deadline of the current region (abx_clock() value), 0 if
 * none; whether a pending interrupt stops the current region. */
double abx_region_deadline(void);
int abx_region_interruptible(void);
/* Raises the region's typed timeout/interrupt error now if its deadline
 * passed or an interrupt is pending (as the hook would at the next
 * instruction); returns otherwise. For C calls that were cut short. */
void abx_region_check(lua_State *L);
/* Lua: core.region(budget_or_nil, interruptible, fn, ...) ->
 *   true, ... | false, error value (e2e_error.h) with its traceback */
int abx_region_l(lua_State *L);
/* Lua: core.sleep(seconds); returns early on an interrupt or deadline. */
int abx_region_sleep_l(lua_State *L);
/* C helper: protected call of the function below its nargs arguments at
 * the top of L, inside a region (budget <= 0: keep the enclosing deadline).
 * Results (LUA_MULTRET) replace them; on error an error table is left and
 * the status returned. */
int abx_region_call(lua_State *L, int nargs, double budget,
                    int interruptible);
/* ---- C fixtures (e2e_cfixture.c) -------------------------------------- */
enum abx_scope { ABX_SCOPE_TEST = 1, ABX_SCOPE_FILE = 2, ABX_SCOPE_SESSION = 3 };

struct abx_fixture_c {
    const char *name;     /* parameter name tests use */
    enum abx_scope scope;
    int needs_platform;   /* skipped without credentials */
    void *ud;
    /* Creates the resource. 0 and *inst, or -1 with a message in err.
     * Runs inside the requesting test's deadline region. */
    int (*setup)(void *ud, void **inst, char *err, size_t errlen);
    /* Pushes exactly one Lua value for inst onto L; may raise (the
     * instance is then torn down). Called once per requesting state (a
     * session instance is shared by every file state of the worker). */
    void (*push)(lua_State *L, void *inst);
    /* Releases the resource. 0, or -1 with err (reported as an ERROR at
     * teardown). Called exactly once per successful setup. */
    int (*teardown)(void *ud, void *inst, char *err, size_t errlen);
};

/* def is copied (its strings must be static). 0, or -1 if the table is
 * full or the name is taken. */
int abx_fixture_c_register(const struct abx_fixture_c *def);
/* Tears down session instances (reverse setup order); appends each error
 * message to errs (one per line). Returns the number of errors. */
struct abx_buf;
int abx_fixture_c_finish_session(struct abx_buf *errs);
/* Tears down test/file instances a closed state left behind. */
int abx_fixture_c_release_leftovers(struct abx_buf *errs);
/* Lua entry points used by the prelude. */
int abx_fixture_c_info_l(lua_State *L);
int abx_fixture_c_setup_l(lua_State *L);
int abx_fixture_c_teardown_l(lua_State *L);
/* Test-only fixture `c_session_probe` (ABX_E2E_SELFTEST=1). */
void abx_fixture_c_register_selftest(void);

/* ---- copying plain values between states (e2e_copy.c) ----------------- */
/* Pushes onto `to` a deep copy of from[idx] (nil, boolean, number,
 * string, tables of those). 0, or -1 with err naming the offending type;
 * nothing pushed on failure. */
int abx_lua_copy(lua_State *from, int idx, lua_State *to, char *err,
                 size_t errlen);

#endif
