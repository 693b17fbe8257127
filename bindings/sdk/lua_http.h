/* `require "e2e.http"` (lua_http.c): a plain HTTP client for signed file
 * URLs and services reached by their host name, plus the header helpers
 * it shares with sbx:http (lua_sbxhttp.c). */
#ifndef ABX_LUA_HTTP_H
#define ABX_LUA_HTTP_H

#include <stddef.h>

#include <lua.h>

#include "buf.h"

/* 1 when s is a non-empty HTTP token (RFC 9110 5.6.2). */
int abx_lhttp_is_token(const char *s);

/* Pushes one "Name: value" string per entry of the headers table at idx
 * (anchoring them on the stack) and points extra[0..n) at them, extra[n]
 * = NULL; extra holds max + 1 slots. Raises a luaL_argerror for argument
 * arg (option 'headers') on a non-string entry, a name that is not a
 * token, a value with CR, LF or NUL, or more than max entries. */
size_t abx_lhttp_push_headers(lua_State *L, int arg, int idx,
                              const char **extra, size_t max);

/* Pushes {name = value} from the "name: value\n" lines of h (http.h's
 * collected reply headers); repeated names joined with ", " in arrival
 * order (RFC 9110 5.3). */
void abx_lhttp_push_reply_headers(lua_State *L, const struct abx_buf *h);

/* 1 for methods safe to retry on a 502/503 (GET, HEAD, OPTIONS). */
int abx_lhttp_is_safe_method(const char *m);

struct abx_http_resp;
struct abx_lbox;
/* Moves resp's body and headers into the boxes (which free them from now
 * on, even if Lua raises), frees resp, then pushes {status=, body=,
 * headers=} and releases the boxes. */
void abx_lhttp_push_reply(lua_State *L, struct abx_http_resp *resp,
                          struct abx_lbox *box, struct abx_lbox *hbox);

int luaopen_e2e_http(lua_State *L);

#endif
