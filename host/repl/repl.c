/* abx-e2e repl: a Lua prompt with the suite's modules (lua.c's REPL shape).
 *
 * The state is exec's (abx_exec_state): bindings, plain globals, print
 * through abx_out, os.exit(n) an Exit error, and one script scope for the
 * whole session: sandboxes made at the prompt live in it and are killed
 * when the REPL ends, however it ends (main.c then kills what is still
 * tracked and sweeps the run's tag).
 *
 * A line is compiled as `return LINE`, else as it is; while the chunk is
 * incomplete (the syntax error ends in "<eof>") more lines are read. It
 * runs under the region (interruptible, no deadline): Ctrl-C stops it and
 * the prompt comes back. Its values are printed by show() (also
 * protected: a __tostring may fail or loop). Lines come from repl_line.c. */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "e2e_error.h"
#include "ledger.h"
#include "lstate.h"
#include "out.h"
#include "repl.h"
#include "repl_int.h"
#include "sandbox.h"

#define EOF_MARK "<eof>"
#define SHOW_ENTRIES 16  /* a table listing shows at most this many */
#define CTRL_C_HINT "(To exit, press Ctrl-C again or Ctrl-D)\n"

/* ---- showing values --------------------------------------------------- */

/* Text is built as a table of pieces at a fixed stack index (acc),
 * joined once at the end: linear in the size, and free of luaL_Buffer's
 * rule that nothing else may sit on the stack between its calls. */

/* Appends the string on top of the stack to the pieces at acc (pops it). */
static void add(lua_State *L, int acc)
{
    lua_rawseti(L, acc, (lua_Integer)lua_rawlen(L, acc) + 1);
}

/* Pushes the pieces at acc joined. */
static void push_joined(lua_State *L, int acc)
{
    luaL_Buffer b;
    lua_Integer i, n = (lua_Integer)lua_rawlen(L, acc);

    luaL_buffinit(L, &b);
    for (i = 1; i <= n; i++) {
        lua_rawgeti(L, acc, i);
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
}

static void add_lit(lua_State *L, int acc, const char *s)
{
    lua_pushstring(L, s);
    add(L, acc);
}

/* A key or value inside a listing: strings quoted (whole: a secret cut
 * short would escape the masker), the rest as tostring gives them. */
static void add_inner(lua_State *L, int acc, int idx)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) == LUA_TSTRING) {
        lua_pushliteral(L, "\"");
        lua_pushvalue(L, idx);
        lua_pushliteral(L, "\"");
        lua_concat(L, 3);
    } else {
        luaL_tolstring(L, idx, NULL);
    }
    add(L, acc);
}

static int is_name(lua_State *L, int idx)
{
    size_t n, i;
    const char *s;

    if (lua_type(L, idx) != LUA_TSTRING)
        return 0;
    s = lua_tolstring(L, idx, &n);
    if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (i = 0; i < n; i++) {
        char c = s[i];
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9')))
            return 0;
    }
    return 1;
}

/* One level of a plain table: {1, 2, name = "x", ["a b"] = t} with the
 * sequence first, at most SHOW_ENTRIES entries, then "... N more". */
static void add_table(lua_State *L, int acc, int t)
{
    lua_Integer i, seq;
    size_t shown = 0, more = 0;

    add_lit(L, acc, "{");
    for (seq = 0; lua_rawgeti(L, t, seq + 1) != LUA_TNIL; seq++) {
        if (shown < SHOW_ENTRIES) {
            add_lit(L, acc, shown++ ? ", " : "");
            add_inner(L, acc, -1);
        } else {
            more++;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
        if (lua_isinteger(L, -2) && (i = lua_tointeger(L, -2)) >= 1 &&
            i <= seq) {
            lua_pop(L, 1);
            continue;  /* listed above */
        }
        if (shown < SHOW_ENTRIES) {
            add_lit(L, acc, shown++ ? ", " : "");
            if (is_name(L, -2)) {
                lua_pushvalue(L, -2);
                add(L, acc);
            } else {
                add_lit(L, acc, "[");
                add_inner(L, acc, -2);
                add_lit(L, acc, "]");
            }
            add_lit(L, acc, " = ");
            add_inner(L, acc, -1);
        } else {
            more++;
        }
        lua_pop(L, 1);
    }
    if (more) {
        lua_pushfstring(L, "%s... %I more", shown ? ", " : "",
                        (lua_Integer)more);
        add(L, acc);
    }
    add_lit(L, acc, "}");
}

/* Lua: show(...) -> the values as one line (tab-separated, like print; a
 * table without __tostring or __name as a listing). */
static int show_l(lua_State *L)
{
    int i, n = lua_gettop(L), acc;

    lua_newtable(L);
    acc = lua_gettop(L);
    for (i = 1; i <= n; i++) {
        if (i > 1)
            add_lit(L, acc, "\t");
        if (lua_type(L, i) == LUA_TTABLE &&
            luaL_getmetafield(L, i, "__tostring") == LUA_TNIL &&
            luaL_getmetafield(L, i, "__name") == LUA_TNIL) {
            add_table(L, acc, i);
        } else {
            lua_settop(L, acc);  /* a metafield found above */
            luaL_tolstring(L, i, NULL);
            add(L, acc);
        }
    }
    lua_settop(L, acc);
    push_joined(L, acc);
    return 1;
}

/* ---- the loop --------------------------------------------------------- */

enum step { STEP_GO_ON, STEP_END };

/* An error value of a statement at the top: Exit and SIGTERM end the
 * REPL (code set), anything else is printed. Pops it. */
static enum step failed(lua_State *L, int *code)
{
    const char *cls = abx_err_class_of(L, -1);
    enum step st = STEP_GO_ON;

    if (strcmp(cls, ABX_ERR_EXIT) == 0) {
        lua_getfield(L, -1, "code");
        *code = (int)lua_tointeger(L, -1);
        lua_pop(L, 1);
        st = STEP_END;
    } else if (strcmp(cls, ABX_ERR_INTERRUPTED) == 0 &&
               abx_signal_count() > 0) {
        *code = ABX_EXIT_INTERRUPTED;  /* SIGTERM */
        st = STEP_END;
    } else if (strcmp(cls, ABX_ERR_INTERRUPTED) == 0) {
        abx_out_puts(ABX_OUT_STDERR, "interrupted (Ctrl-C)\n");
    } else {
        abx_err_push_text(L, -1);
        abx_out_printf(ABX_OUT_STDERR, "error: %s\n", lua_tostring(L, -1));
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return st;
}

/* Runs the chunk at the top and prints its values. */
static enum step run(lua_State *L, int *code)
{
    int base = lua_gettop(L) - 1, n;
    enum step st = STEP_GO_ON;

    /* (A Ctrl-C since the line was read stops it at once.) */
    if (abx_region_call(L, 0, 0, 1) != LUA_OK) {
        st = failed(L, code);
    } else if ((n = lua_gettop(L) - base) > 0) {
        lua_pushcfunction(L, show_l);
        lua_insert(L, base + 1);
        if (abx_region_call(L, n, 0, 1) != LUA_OK) {
            st = failed(L, code);
        } else {
            lua_pushliteral(L, "\n");
            lua_concat(L, 2);
            abx_out_puts(ABX_OUT_STDOUT, lua_tostring(L, -1));
        }
    }
    lua_settop(L, base);
    abx_repl_sigint_clear();  /* the Ctrl-C that stopped it is spent */
    return st;
}

static int incomplete(lua_State *L, int status)
{
    size_t n, m = sizeof EOF_MARK - 1;
    const char *msg;

    if (status != LUA_ERRSYNTAX)
        return 0;
    msg = lua_tolstring(L, -1, &n);
    return msg && n >= m && strcmp(msg + n - m, EOF_MARK) == 0;
}

/* Compiles stmt as `return <stmt>`, else as it is: 1 the function pushed,
 * 0 the syntax error pushed, -1 incomplete (nothing pushed). */
static int compile(lua_State *L, const struct abx_buf *stmt,
                   struct abx_buf *tmp)
{
    int st, more = 0;

    abx_buf_reset(tmp);
    if (abx_buf_appends(tmp, "return ") == 0 &&
        abx_buf_append(tmp, stmt->data, stmt->len) == 0) {
        st = luaL_loadbuffer(L, tmp->data, tmp->len, "=stdin");
        if (st == LUA_OK)
            return 1;
        more = incomplete(L, st);
        lua_pop(L, 1);
    }
    st = luaL_loadbuffer(L, abx_buf_cstr(stmt), stmt->len, "=stdin");
    if (st == LUA_OK)
        return 1;
    if (more || incomplete(L, st)) {
        lua_pop(L, 1);
        return -1;
    }
    return 0;
}

#define HELP_NAMES 128

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void add_names(lua_State *L, int acc, const char **names, size_t n)
{
    size_t i;

    qsort(names, n, sizeof *names, by_name);
    for (i = 0; i < n; i++) {
        add_lit(L, acc, i ? ", " : "");
        add_lit(L, acc, names[i]);
    }
    add_lit(L, acc, "\n");
}

static int known(const char **names, size_t n, const char *name)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

/* Lua: help() -> the text of .help, the modules as registered now:
 * package.preload and package.loaded; a loaded one that is also the
 * global of its name is one of Lua's libraries. Raw reads only, so no
 * Lua code runs while the names are borrowed from the two tables. */
static int help_l(lua_State *L)
{
    const char *mods[HELP_NAMES], *libs[HELP_NAMES];
    size_t nm = 0, nl = 0;
    int k, acc;

    for (k = 0; k < 2; k++) {
        lua_getfield(L, LUA_REGISTRYINDEX,
                     k ? LUA_LOADED_TABLE : LUA_PRELOAD_TABLE);
        lua_pushnil(L);
        while (lua_next(L, -2) != 0) {
            const char *name = lua_type(L, -2) == LUA_TSTRING
                                   ? lua_tostring(L, -2) : "_";
            if (name[0] != '_') {
                lua_pushglobaltable(L);
                lua_pushvalue(L, -3);
                lua_rawget(L, -2);
                if (k == 1 && lua_rawequal(L, -1, -3)) {
                    if (nl < HELP_NAMES)
                        libs[nl++] = name;
                } else if (nm < HELP_NAMES && !known(mods, nm, name)) {
                    mods[nm++] = name;
                }
                lua_pop(L, 2);
            }
            lua_pop(L, 1);
        }
    }  /* both tables stay on the stack: the names stay alive */
    lua_newtable(L);
    acc = lua_gettop(L);
    add_lit(L, acc, "modules (require \"NAME\"): ");
    add_names(L, acc, mods, nm);
    add_lit(L, acc, "Lua's libraries (globals): ");
    add_names(L, acc, libs, nl);
    add_lit(L, acc,
            "commands:\n"
            "  .help   this text\n"
            "  .exit   leave (so do Ctrl-D, os.exit(n), Ctrl-C twice)\n"
            "A line is an expression (its values are printed) or a "
            "statement; an\nincomplete one continues on a \">> \" line. "
            "Each line is its own chunk:\nkeep values in globals (x = 1), "
            "not locals. Ctrl-C interrupts a running\nstatement. "
            "Sandboxes created here are killed when the REPL ends.\n");
    push_joined(L, acc);
    return 1;
}

/* .help, .exit; anything else of that shape is an unknown command. */
static int is_command(const struct abx_buf *line)
{
    const char *s = abx_buf_cstr(line);

    s += strspn(s, " \t");
    if (s[0] != '.' || !(s[1] >= 'a' && s[1] <= 'z'))
        return 0;
    s += 1 + strspn(s + 1, "abcdefghijklmnopqrstuvwxyz");
    return s[strspn(s, " \t\r")] == '\0';
}

static enum step command(lua_State *L, const struct abx_buf *line)
{
    const char *s = abx_buf_cstr(line);
    size_t n;

    s += strspn(s, " \t");
    n = strcspn(s, " \t\r");
    if (n == 5 && memcmp(s, ".exit", 5) == 0)
        return STEP_END;
    if (n == 5 && memcmp(s, ".help", 5) == 0) {
        lua_pushcfunction(L, help_l);
        if (lua_pcall(L, 0, 1, 0) == LUA_OK)
            abx_out_puts(ABX_OUT_STDOUT, lua_tostring(L, -1));
        else
            abx_out_printf(ABX_OUT_STDERR, "error: %s\n",
                           lua_tostring(L, -1));
        lua_pop(L, 1);
        return STEP_GO_ON;
    }
    abx_out_printf(ABX_OUT_STDERR, "error: unknown command '%.*s' (.help "
                   "lists them)\n", (int)n, s);
    return STEP_GO_ON;
}

enum got {
    GOT_CHUNK,    /* a function pushed */
    GOT_ERROR,    /* a syntax error pushed */
    GOT_COMMAND,  /* stmt holds .help, .exit, ... */
    GOT_NOTHING,  /* a blank line, or one too long (said) */
    GOT_SIGINT,   /* Ctrl-C: what was typed is dropped */
    GOT_END,      /* end of input, SIGTERM (*why) */
};

/* Reads lines into stmt until they compile or fail to. */
static enum got read_statement(lua_State *L, struct abx_buf *stmt,
                               struct abx_buf *line, struct abx_buf *tmp,
                               enum abx_repl_got *why)
{
    for (;;) {
        int c;

        *why = abx_repl_line(stmt->len ? ">> " : "> ", line);
        if (*why == ABX_REPL_SIGINT)
            return GOT_SIGINT;
        if (*why == ABX_REPL_EOF || *why == ABX_REPL_STOP)
            return GOT_END;
        if (*why == ABX_REPL_TOOLONG ||
            (stmt->len && abx_buf_appendc(stmt, '\n') != 0) ||
            abx_buf_appends(stmt, abx_buf_cstr(line)) != 0) {
            abx_out_printf(ABX_OUT_STDERR, "error: statement longer than "
                           "%d bytes (dropped)\n", ABX_REPL_LINE_MAX);
            return GOT_NOTHING;
        }
        if (stmt->len == line->len && is_command(stmt))
            return GOT_COMMAND;
        if (stmt->data[strspn(stmt->data, " \t\r\n")] == '\0')
            return GOT_NOTHING;
        c = compile(L, stmt, tmp);
        if (c >= 0)
            return c ? GOT_CHUNK : GOT_ERROR;
    }
}

/* Sandboxes of the run's ledger neither killed nor kept. */
static size_t ledger_alive(void)
{
    struct abx_ledger l;
    char err[512];
    size_t i, n = 0;

    if (!abx_run_ledger()[0] ||
        abx_ledger_load(abx_run_ledger(), &l, err, sizeof err) != 0)
        return 0;
    for (i = 0; i < l.n; i++)
        n += !l.e[i].killed && !l.e[i].kept;
    abx_ledger_free(&l);
    return n;
}

/* The session's scope ends: its finalizers run, its sandboxes die. */
static int teardown(lua_State *L, int code)
{
    struct abx_buf errs;
    size_t before = ledger_alive(), after;

    lua_settop(L, 0);
    abx_buf_init(&errs, 64 * 1024);
    if (abx_exec_scope(L, "_finish_script", &errs) != 0 && code == 0)
        code = 1;
    if (errs.len)
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e repl: teardown: %s",
                       abx_buf_cstr(&errs));
    after = ledger_alive();
    if (before > after)
        abx_out_printf(ABX_OUT_STDOUT, "repl: killed %zu sandbox%s at "
                       "exit\n", before - after, before - after == 1 ? ""
                                                                    : "es");
    abx_buf_reset(&errs);
    lua_close(L);
    abx_fixture_c_finish_session(&errs);
    abx_buf_free(&errs);
    return code;
}

static void banner(const struct abx_config *cfg)
{
    abx_out_printf(ABX_OUT_STDOUT, "abx-e2e repl (%s): .help lists the "
                   "modules and commands; .exit or Ctrl-D leaves\n",
                   LUA_RELEASE);
    if (!cfg->lua.platform)
        abx_out_puts(ABX_OUT_STDOUT, "no sandbox platform: set "
                     "ABX_SANDBOX_API_KEY (and its URLs) or start with "
                     "--local\n");
}

int abx_repl_main(const struct abx_config *cfg)
{
    struct abx_e2e_host h;
    struct abx_buf stmt, line, tmp;
    char err[4096];
    lua_State *L;
    int code = 0, ctrl_c = 0;
    enum step st = STEP_GO_ON;

    abx_lstate_host(&h, cfg);
    L = abx_exec_state(&h, ".", err, sizeof err);
    if (!L) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e repl: %s\n", err);
        return ABX_EXIT_INTERNAL_ERROR;
    }
    if (abx_repl_line_open(err, sizeof err) != 0) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e repl: %s\n", err);
        lua_close(L);
        return ABX_EXIT_INTERNAL_ERROR;
    }
    abx_buf_init(&stmt, ABX_REPL_LINE_MAX);
    abx_buf_init(&line, ABX_REPL_LINE_MAX);
    abx_buf_init(&tmp, ABX_REPL_LINE_MAX + 16);
    abx_exec_scope(L, "_begin_script", NULL);
    if (abx_repl_tty())
        banner(cfg);
    while (st == STEP_GO_ON) {
        enum abx_repl_got why = ABX_REPL_EOF;
        enum got g;

        abx_buf_reset(&stmt);
        g = read_statement(L, &stmt, &line, &tmp, &why);
        if (g == GOT_SIGINT) {
            abx_repl_sigint_clear();
            abx_out_puts(ABX_OUT_STDOUT, ctrl_c ? "\n" : "\n" CTRL_C_HINT);
            st = ctrl_c++ ? STEP_END : STEP_GO_ON;
            continue;
        }
        ctrl_c = 0;
        if (g != GOT_END && g != GOT_NOTHING)
            abx_repl_history_add(stmt.data, stmt.len);
        if (g == GOT_END) {
            if (why == ABX_REPL_STOP)
                code = ABX_EXIT_INTERRUPTED;
            else if (abx_repl_tty())
                abx_out_puts(ABX_OUT_STDOUT, "\n");  /* after the ^D */
            st = STEP_END;
        } else if (g == GOT_COMMAND) {
            st = command(L, &stmt);
        } else if (g == GOT_ERROR) {
            abx_out_printf(ABX_OUT_STDERR, "error: %s\n", lua_tostring(L, -1));
            lua_pop(L, 1);
        } else if (g == GOT_CHUNK) {
            st = run(L, &code);
        }
    }
    abx_out_flush();
    abx_buf_free(&stmt);
    abx_buf_free(&line);
    abx_buf_free(&tmp);
    /* The history first (the teardown may take a while), and SIGINT back
     * to the runner: during the teardown it shortens the sweep, a second
     * one exits (the guardian sweeps). */
    abx_repl_line_close();
    return teardown(L, code);
}
