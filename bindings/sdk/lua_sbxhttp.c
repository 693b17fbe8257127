/* sbx:http(port, {method=, path=, body=, headers=, timeout=}): one HTTP
 * request to a service inside the sandbox, through the data plane with
 * the routing headers (so it works with one header-routed data-plane URL
 * too). Non-2xx answers are returned with every reply header; transport
 * failures raise. The header helpers are shared with e2e.http
 * (lua_http.c). */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "e2e_raise.h"
#include "http.h"
#include "lua_http.h"
#include "lua_sbxhttp.h"
#include "lua_sbxplat.h"
#include "lua_sbxtype.h"
#include "lua_util.h"

#define MAX_EXTRA 12   /* abx_headers holds 16 lines; routing takes 2-3 */

int abx_lsandbox_http(lua_State *L)
{
    static const char *const known[] = {"method", "path", "body", "headers",
                                        "timeout", NULL};
    struct abx_lsandbox *s = abx_lsandbox_check(L, 1);
    const struct abx_platform *plat = abx_lsandbox_platform(L);
    lua_Integer port = luaL_checkinteger(L, 2);
    const char *extra[MAX_EXTRA + 1];
    const char *method, *path, *body = NULL;
    struct abx_http_req req;
    struct abx_http_resp resp;
    struct abx_endpoint ep;
    struct abx_headers hb;
    struct abx_lbox *box, *hbox;
    struct abx_err err;
    size_t body_len = 0;
    double timeout;
    const unsigned char *p;
    char url[sizeof ep.base_url + 4096];
    char *token = NULL;
    int rc;

    luaL_argcheck(L, port >= 1 && port <= 65535, 2,
                  "port out of range (1 to 65535)");
    abx_lopt_check(L, 3, "http", known);
    lua_settop(L, 3);
    method = abx_lopt_string(L, 3, "method", "GET");
    if (!abx_lhttp_is_token(method))
        luaL_argerror(L, 3, "option 'method': not a valid HTTP method");
    path = abx_lopt_string(L, 3, "path", "/");
    if (path[0] != '/')
        luaL_argerror(L, 3, "option 'path': must start with '/'");
    for (p = (const unsigned char *)path; *p; p++)
        if (*p <= 0x20 || *p == 0x7f)
            luaL_argerror(L, 3, "option 'path': contains a space or "
                          "control byte");
    if (abx_lopt_push(L, 3, "body", LUA_TSTRING))
        body = lua_tolstring(L, -1, &body_len);  /* stays on the stack */
    timeout = abx_lopt_seconds(L, 3, "timeout", 30);
    extra[0] = NULL;
    if (abx_lopt_push(L, 3, "headers", LUA_TTABLE))
        abx_lhttp_push_headers(L, 3, -1, extra, MAX_EXTRA);
    /* Everything below is C until the reply is in the box. */
    box = abx_lbox_push(L, 16u << 20);
    hbox = abx_lbox_push(L, ABX_HTTP_HEADERS_MAX);
    abx_http_resp_init(&resp);
    memset(&hb, 0, sizeof hb);
    rc = abx_endpoint_init(&ep, plat, abx_lsandbox_info(s), (int)port, &err);
    if (rc != 0)
        goto out;
    /* The envd access token is for envd only, not a user's service: held
     * aside while the headers are built, so that abx_endpoint_free still
     * wipes it. */
    if ((int)port != ABX_ENVD_PORT) {
        token = ep.access_token;
        ep.access_token = NULL;
    }
    rc = -1;
    if (abx_headers_build(&hb, &ep, NULL, extra) != 0) {
        abx_err_set(&err, ABX_E_INVALID, 0, "", "http: a header is too long");
        goto out;
    }
    if ((size_t)snprintf(url, sizeof url, "%s%s", ep.base_url, path) >=
        sizeof url) {
        abx_err_set(&err, ABX_E_INVALID, 0, "", "http: URL too long");
        goto out;
    }
    memset(&req, 0, sizeof req);
    req.method = method;
    req.url = url;
    req.headers = (const char *const *)hb.lines;
    req.body = body;
    req.body_len = body_len;
    req.timeout = timeout;
    req.idempotent = abx_lhttp_is_safe_method(method);
    req.max_body = 16u << 20;
    req.what = "sandbox http";
    req.collect_headers = 1;
    rc = abx_http_do(&req, &resp, &err);
out:
    abx_headers_free(&hb);
    if (token)
        ep.access_token = token;
    abx_endpoint_free(&ep);
    if (rc != 0) {
        abx_http_resp_free(&resp);
        return abx_err_raise(L, &err);
    }
    abx_lhttp_push_reply(L, &resp, box, hbox);
    return 1;
}
