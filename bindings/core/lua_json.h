/* Module e2e.json (lua_json.c): a strict JSON codec for test code,
 * documented in docs/lua-api.md ("e2e.json"). */
#ifndef ABX_LUA_JSON_H
#define ABX_LUA_JSON_H

#include <cjson/cJSON.h>
#include <lua.h>

/* Returns the module table {decode, encode, null, object, is_object}. */
int luaopen_e2e_json(lua_State *L);

/* JSON -> Lua for a reply's tree (abx_json_parse: integers beyond 2^53
 * exact): objects become tables, arrays sequences, null nil. The same
 * walk as json.decode (lua_json_decode.c). Raises past 200 levels. */
void abx_json_push(lua_State *L, const cJSON *v);

/* ---- shared by lua_json.c, lua_json_decode.c, lua_json_marks.c ------- */
#define ABX_JSON_MAX_DEPTH 200
#define ABX_JSON_MAX_SIZE ((size_t)64 * 1024 * 1024)
/* Its address is json.null (a light userdata): unique, equal to itself in
 * every state, immutable. */
extern const char abx_json_null;
/* Pushes the weak set of tables marked as objects (json.object, or an
 * empty object decoded). */
void abx_json_push_objects(lua_State *L);
/* json.decode(s). */
int abx_json_decode_l(lua_State *L);

#endif
