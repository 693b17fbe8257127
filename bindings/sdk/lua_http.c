/* `require "e2e.http"`: http.request{url=, method="GET", body=, headers=,
 * timeout=30} -> {status=, body=, headers={[lower-name] = value}}.
 *
 * A plain client for what needs no credential of ours: signed file URLs
 * and services reached by their host name. It sends only what the caller
 * gives (plus curl's Host, Accept and User-Agent): no API key, no envd
 * access token, no routing headers, so a test can prove that a URL works
 * on its own. Non-2xx answers are returned; transport failures raise a
 * Connection or Timeout error (e2e_error.h), as sbx:http does.
 *
 * The request-header and reply-header helpers here are shared with
 * sbx:http (lua_sbxhttp.c). */
#include <string.h>
#include <strings.h>

#include <lauxlib.h>
#include <lua.h>

#include "e2e_raise.h"
#include "e2e_trace.h"
#include "http.h"
#include "lua_http.h"
#include "lua_sbxtype.h"
#include "lua_util.h"

#define HTTP_MAX_HEADERS 32
#define HTTP_MAX_BODY ((size_t)64 << 20)
#define HTTP_MAX_URL 65536

int abx_lhttp_is_token(const char *s)
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

size_t abx_lhttp_push_headers(lua_State *L, int arg, int idx,
                              const char **extra, size_t max)
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
        if (!abx_lhttp_is_token(k))
            luaL_argerror(L, arg, lua_pushfstring(L, "option 'headers': "
                          "invalid header name '%s'", k));
        if (strlen(v) != vl || strpbrk(v, "\r\n"))
            luaL_argerror(L, arg, lua_pushfstring(L, "option 'headers': "
                          "value of '%s' contains CR, LF or NUL", k));
        if (n == max)
            luaL_argerror(L, arg, lua_pushfstring(L, "option 'headers': "
                          "at most %d headers", (int)max));
        lua_pop(L, 1);
        /* Below the key, so lua_next keeps working. */
        lua_pushfstring(L, "%s: %s", k, v);
        lua_insert(L, -2);
        extra[n++] = lua_tostring(L, -2);
    }
    extra[n] = NULL;
    return n;
}

void abx_lhttp_push_reply_headers(lua_State *L, const struct abx_buf *h)
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

/* An absolute http(s) URL with a host and no space or control byte;
 * anything else is misuse, named at once. */
static const char *check_url(lua_State *L, int arg, const char *url)
{
    const unsigned char *p;
    size_t skip = 0;

    if (!url)
        luaL_argerror(L, arg, "option 'url': string expected, got nil");
    if (strncasecmp(url, "http://", 7) == 0)
        skip = 7;
    else if (strncasecmp(url, "https://", 8) == 0)
        skip = 8;
    else
        luaL_argerror(L, arg, "option 'url': only http:// and https:// "
                      "URLs");
    if (strlen(url) > HTTP_MAX_URL)
        luaL_argerror(L, arg, "option 'url': too long");
    if (url[skip] == '\0' || url[skip] == '/' || url[skip] == '?' ||
        url[skip] == '#')
        luaL_argerror(L, arg, "option 'url': no host");
    for (p = (const unsigned char *)url; *p; p++)
        if (*p <= 0x20 || *p == 0x7f)
            luaL_argerror(L, arg, "option 'url': contains a space or "
                          "control byte");
    return url;
}

int abx_lhttp_is_safe_method(const char *m)
{
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 ||
           strcmp(m, "OPTIONS") == 0;
}

static int l_request(lua_State *L)
{
    static const char *const known[] = {"url", "method", "body", "headers",
                                        "timeout", NULL};
    const char *extra[HTTP_MAX_HEADERS + 1];
    const char *url, *method, *body = NULL;
    struct abx_http_req req;
    struct abx_http_resp resp;
    struct abx_lbox *box, *hbox;
    struct abx_err err;
    size_t body_len = 0;
    double timeout;

    luaL_checktype(L, 1, LUA_TTABLE);
    abx_lopt_check(L, 1, "request", known);
    lua_settop(L, 1);
    url = check_url(L, 1, abx_lopt_string(L, 1, "url", NULL));
    method = abx_lopt_string(L, 1, "method", "GET");
    if (!abx_lhttp_is_token(method))
        luaL_argerror(L, 1, "option 'method': not a valid HTTP method");
    if (abx_lopt_push(L, 1, "body", LUA_TSTRING))
        body = lua_tolstring(L, -1, &body_len);  /* stays on the stack */
    timeout = abx_lopt_seconds(L, 1, "timeout", 30);
    extra[0] = NULL;
    if (abx_lopt_push(L, 1, "headers", LUA_TTABLE))
        abx_lhttp_push_headers(L, 1, -1, extra, HTTP_MAX_HEADERS);
    /* From here the reply is owned by the boxes: a Lua error while the
     * result table is built strands nothing. */
    box = abx_lbox_push(L, HTTP_MAX_BODY);
    hbox = abx_lbox_push(L, ABX_HTTP_HEADERS_MAX);
    abx_http_resp_init(&resp);
    memset(&req, 0, sizeof req);
    req.method = method;
    req.url = url;
    req.headers = extra;
    req.body = body;
    req.body_len = body_len;
    req.timeout = timeout;
    req.idempotent = abx_lhttp_is_safe_method(method);
    req.max_body = HTTP_MAX_BODY;
    req.what = "http.request";
    req.collect_headers = 1;
    if (abx_http_do(&req, &resp, &err) != 0) {
        abx_http_resp_free(&resp);
        return abx_err_raise(L, &err);
    }
    abx_lhttp_push_reply(L, &resp, box, hbox);
    return 1;
}

void abx_lhttp_push_reply(lua_State *L, struct abx_http_resp *resp,
                          struct abx_lbox *box, struct abx_lbox *hbox)
{
    long status = resp->status;

    box->buf = resp->body;
    abx_buf_init(&resp->body, 0);
    hbox->buf = resp->headers;
    abx_buf_init(&resp->headers, 0);
    abx_http_resp_free(resp);
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, status);
    lua_setfield(L, -2, "status");
    lua_pushlstring(L, box->buf.data ? box->buf.data : "", box->buf.len);
    lua_setfield(L, -2, "body");
    abx_lhttp_push_reply_headers(L, &hbox->buf);
    lua_setfield(L, -2, "headers");
    abx_lbox_release(box);
    abx_lbox_release(hbox);
}

int luaopen_e2e_http(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        {"request", l_request},
        {NULL, NULL},
    };

    abx_ltrace_newlib(L, funcs, "http");
    return 1;
}
