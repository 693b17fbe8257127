/* Small helpers shared by the sandbox-facing modules (lua_commands.c,
 * lua_files.c): strict option tables, the sub-object userdata and a box that anchors C-owned
 * results (cJSON trees, byte buffers) on the Lua stack, so a Lua error
 * raised while converting them (out of memory, a bad value) never strands
 * them: the box's __gc frees whatever it still holds. */
#ifndef ABX_LUA_UTIL_H
#define ABX_LUA_UTIL_H

#include <stddef.h>

#include <cjson/cJSON.h>
#include <lauxlib.h>
#include <lua.h>

#include "buf.h"

/* ---- option tables ---------------------------------------------------- */
/* Checks the options argument at arg: none/nil gives 0; a table whose keys
 * are all strings named in known (NULL-terminated) gives 1. Raises
 * "unknown option 'x' to '<fname>'" or a luaL_argerror otherwise. */
int abx_lopt_check(lua_State *L, int arg, const char *fname,
                   const char *const *known);
/* Pushes opts[key] (nil when opts is absent); raises
 * "bad argument #n to 'f' (option 'key': <type> expected, got <type>)"
 * unless it is nil or of the given type. Returns 1 when non-nil. */
int abx_lopt_push(lua_State *L, int arg, const char *key, int type);
/* Typed getters (the value stays anchored in the options table).
 * abx_lopt_string raises when the string holds a NUL byte: C would
 * silently cut it there (a path, a user name, a template). */
const char *abx_lopt_string(lua_State *L, int arg, const char *key,
                            const char *def);
int abx_lopt_bool(lua_State *L, int arg, const char *key, int def);
/* A number >= 0 (raises otherwise). */
double abx_lopt_seconds(lua_State *L, int arg, const char *key, double def);
lua_Integer abx_lopt_integer(lua_State *L, int arg, const char *key,
                             lua_Integer def);

/* The string at arg (numbers converted, as luaL_checkstring); raises
 * "bad argument #n to 'f' (contains a NUL byte)" when it holds one,
 * since every C consumer (paths, commands, ids) would cut it there. */
const char *abx_lcheck_cstring(lua_State *L, int arg);
/* Same, or def when the argument is absent or nil. */
const char *abx_lopt_cstring(lua_State *L, int arg, const char *def);

/* ---- JSON replies ------------------------------------------------------- */
/* table_at_top[key] = o[name] (abx_json_field: camelCase, or its
 * snake_case) when that is a JSON string; else nothing is set. */
void abx_lset_jstring(lua_State *L, const cJSON *o, const char *name,
                      const char *key);

/* ---- callbacks ---------------------------------------------------------- */
/* Calls the function at fn_idx with the string p[0..n) as its argument,
 * protected, the string itself made inside the protected call: nothing
 * raises out of here (out of memory included), so a caller holding C
 * resources may use it. Needs 4 free stack slots. Returns lua_pcall's
 * status; the error value is left on top when it is not LUA_OK. */
int abx_lpcall_bytes(lua_State *L, int fn_idx, const char *p, size_t n);


/* ---- sub-objects of a sandbox (sbx.commands, sbx.files) --------------- */
struct abx_lsub {
    const char *mt;              /* metatable name */
    const luaL_Reg *methods;
    const char *selftest_name;   /* extra method in selftest runs, or NULL */
    lua_CFunction selftest_fn;
};
/* Pushes a new userdata of metatable d->mt (created on first use, with
 * the methods as __index and a __tostring "<mt>: <address>") bound to the
 * sandbox at sbx_idx, kept in user value 1. */
void abx_lsub_push(lua_State *L, int sbx_idx, const struct abx_lsub *d);
/* Module opener: creates the metatable, returns the methods table. */
int abx_lsub_open(lua_State *L, const struct abx_lsub *d);

/* ---- owning box ------------------------------------------------------- */
struct abx_lbox {
    cJSON *json;         /* freed with the box */
    struct abx_buf buf;  /* freed with the box */
};
/* Pushes an empty box (buf capped at bufmax; 0 = ABX_BUF_DEFAULT_MAX). */
struct abx_lbox *abx_lbox_push(lua_State *L, size_t bufmax);
/* Frees what the box holds now (idempotent; the box stays usable). */
void abx_lbox_release(struct abx_lbox *b);

#endif
