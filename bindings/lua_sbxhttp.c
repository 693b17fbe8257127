/* sbx:http(port, {method=, path=, body=, headers=, timeout=}): one HTTP
 * request to a service inside the sandbox, through the data plane with
 * the routing headers (so it works with one header-routed data-plane URL
 * too). Non-2xx answers are returned with every reply header; transport
 * failures raise. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "http.h"
#include "lua_sandbox.h"
#include "lua_util.h"

#define MAX_EXTRA 12   /* abx_headers holds 16 lines; routing takes 2-3 */

static int is_token(const char *s)
{
    static const char extra[] = "!#$%&'*+-.^_`|~";

    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || strchr(extra, *s)))
            return 0;
    return 1;
}

/* Pushes "Name: value" strings for opts.headers (at idx) on the stack,
 * anchoring them, and points extra[] at them. Returns how many. */
static size_t push_headers(lua_State *L, int arg, int idx,
                           const char *extra[MAX_EXTRA + 1])
{
    size_t n = 0;

    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        const char *k, *v;
        size_t vl;
        if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
            luaL_argerror(L, arg, "option 'headers': a table of string "
                          "names to string values expected");
        k = lua_tostring(L, -2);
        v = lua_tolstring(L, -1, &vl);
        if (!is_token(k))
            luaL_argerror(L, arg, lua_pushfstring(L, "option 'headers': "
                          "invalid header name '%s'", k));
        if (strlen(v) != vl || strpbrk(v, "\r\n"))
            luaL_argerror(L, arg, lua_pushfstring(L, "option 'headers': "
                          "value of '%s' contains CR, LF or NUL", k));
        if (n == MAX_EXTRA)
            luaL_argerror(L, arg, "option 'headers': at most 12 headers");
        lua_pop(L, 1);
        /* Below the key, so lua_next keeps working. */
        lua_pushfstring(L, "%s: %s", k, v);
        lua_insert(L, -2);
        extra[n++] = lua_tostring(L, -2);
    }
    extra[n] = NULL;
    return n;
}

/* Pushes {name = value} from "name: value\n" lines (http.h), repeated
 * names joined with ", " as RFC 9110 5.3 allows. */
static void push_reply_headers(lua_State *L, const struct abx_buf *h)
{
    const char *p = h->data ? h->data : "", *end = p + h->len;

    lua_newtable(L);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *sep;
        if (!nl)
            nl = end;
        sep = memchr(p, ':', (size_t)(nl - p));
        if (sep && sep + 1 < nl) {
            lua_pushlstring(L, p, (size_t)(sep - p));
            lua_pushvalue(L, -1);
            if (lua_rawget(L, -3) == LUA_TSTRING) {
                lua_pushliteral(L, ", ");
                lua_pushlstring(L, sep + 2, (size_t)(nl - sep - 2));
                lua_concat(L, 3);
            } else {
                lua_pop(L, 1);
                lua_pushlstring(L, sep + 2, (size_t)(nl - sep - 2));
            }
            lua_rawset(L, -3);
        }
        p = nl + 1;
    }
}

static int is_2xx_safe(const char *m)
{
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 ||
           strcmp(m, "OPTIONS") == 0;
}

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
    if (!is_token(method))
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
        push_headers(L, 3, -1, extra);
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
    req.idempotent = is_2xx_safe(method);
    req.max_body = 16u << 20;
    req.what = "sandbox http";
    req.collect_headers = 1;
    rc = abx_http_do(&req, &resp, &err);
    if (rc == 0) {
        /* The boxes free them from now on, even if Lua raises below. */
        box->buf = resp.body;
        abx_buf_init(&resp.body, 0);
        hbox->buf = resp.headers;
        abx_buf_init(&resp.headers, 0);
    }
out:
    abx_headers_free(&hb);
    if (token)
        ep.access_token = token;
    abx_endpoint_free(&ep);
    if (rc != 0) {
        abx_http_resp_free(&resp);
        return abx_lerr_raise(L, &err);
    }
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, resp.status);
    lua_setfield(L, -2, "status");
    lua_pushlstring(L, box->buf.data ? box->buf.data : "", box->buf.len);
    lua_setfield(L, -2, "body");
    push_reply_headers(L, &hbox->buf);
    lua_setfield(L, -2, "headers");
    abx_http_resp_free(&resp);
    abx_lbox_release(box);
    abx_lbox_release(hbox);
    return 1;
}
