/* The shared request plumbing of the envd clients (envd_internal.h):
 * abx_envd_call_prepare (URL for a /path or a Connect method, query,
 * headers, request defaults), the Connect header list, reply parsing
 * (JSON object, array field) and the Connect error mapping. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "envd_internal.h"

static void endpoint(struct abx_endpoint *ep, const char *token)
{
    memset(ep, 0, sizeof *ep);
    snprintf(ep->base_url, sizeof ep->base_url, "http://127.0.0.1:9");
    snprintf(ep->sandbox_id, sizeof ep->sandbox_id, "sbx1");
    ep->port = 49983;
    ep->header_routing = 1;
    ep->request_timeout = 7;
    ep->access_token = token ? strdup(token) : NULL;
}

static int has_line(const struct abx_envd_call *c, const char *line)
{
    size_t i;

    for (i = 0; i < c->hb.n; i++)
        if (strcmp(c->hb.lines[i], line) == 0)
            return 1;
    return 0;
}

static void test_prepare(void)
{
    static const char *const extra[] = {"Content-Type: application/json",
                                        NULL};
    const char *pairs[] = {"path", "/a b", "username", NULL, NULL, NULL};
    struct abx_endpoint ep;
    struct abx_envd_call c;
    struct abx_err err;

    endpoint(&ep, "tok");
    /* A Connect method goes after the base URL's '/'. */
    abx_envd_call_init(&c);
    abx_err_clear(&err);
    CHECK_INT(abx_envd_call_prepare(&c, &ep, "POST",
                                    "filesystem.Filesystem/Stat", NULL, "user",
                                    extra, "envd Stat", &err), 0);
    CHECK_STR(c.req.url, "http://127.0.0.1:9/filesystem.Filesystem/Stat");
    CHECK_STR(c.req.method, "POST");
    CHECK_STR(c.req.what, "envd Stat");
    CHECK(c.req.timeout == 7);
    CHECK(c.req.headers == (const char *const *)c.hb.lines);
    CHECK(has_line(&c, "E2b-Sandbox-Id: sbx1"));
    CHECK(has_line(&c, "X-Access-Token: tok"));
    CHECK(has_line(&c, "Content-Type: application/json"));
    CHECK(has_line(&c, "Authorization: Basic dXNlcjo="));   /* "user:" */
    abx_envd_call_free(&c);

    /* A path with a query: NULL values leave their pair out. */
    abx_envd_call_init(&c);
    CHECK_INT(abx_envd_call_prepare(&c, &ep, "GET", "/files", pairs, NULL,
                                    NULL, "read file", &err), 0);
    CHECK_STR(c.req.url, "http://127.0.0.1:9/files?path=%2Fa%20b");
    CHECK(!has_line(&c, "Authorization: Basic dXNlcjo="));
    abx_envd_call_free(&c);
    abx_envd_call_free(&c);    /* safe twice */

    /* A user that would break the header: InvalidArgument, nothing kept. */
    abx_envd_call_init(&c);
    CHECK_INT(abx_envd_call_prepare(&c, &ep, "GET", "/health", NULL, "a:b",
                                    NULL, "envd health", &err), -1);
    CHECK_INT(err.cls, ABX_E_INVALID);
    CHECK(strstr(err.message, "user") != NULL);
    CHECK(strstr(err.message, "tok") == NULL);
    CHECK_INT((int)c.hb.n, 0);
    abx_envd_call_free(&c);
    abx_endpoint_free(&ep);
}

static void test_prepare_too_long(void)
{
    struct abx_endpoint ep;
    struct abx_envd_call c;
    struct abx_err err;
    char *path = malloc(20000);

    CHECK(path != NULL);
    if (!path)
        return;
    memset(path, 'x', 19999);
    path[0] = '/';
    path[19999] = '\0';
    endpoint(&ep, NULL);
    abx_envd_call_init(&c);
    CHECK_INT(abx_envd_call_prepare(&c, &ep, "GET", path, NULL, NULL, NULL,
                                    "read file", &err), -1);
    CHECK_INT(err.cls, ABX_E_INVALID);
    CHECK_STR(err.message, "read file: URL too long");
    abx_envd_call_free(&c);
    abx_endpoint_free(&ep);
    free(path);
}

static void test_connect_headers(void)
{
    const char *extra[5];
    char tmo[64];

    CHECK_INT((int)abx_envd_connect_headers(extra, "Content-Type: x", 0, tmo,
                                            sizeof tmo), 2);
    CHECK_STR(extra[0], "Content-Type: x");
    CHECK_STR(extra[1], "Connect-Protocol-Version: 1");
    CHECK(extra[2] == NULL);
    CHECK_INT((int)abx_envd_connect_headers(extra, "Content-Type: x", 2.5, tmo,
                                            sizeof tmo), 3);
    CHECK_STR(extra[2], "Connect-Timeout-Ms: 2500");
    CHECK(extra[3] == NULL);
}

static void resp_with(struct abx_http_resp *r, long status, const char *body)
{
    abx_http_resp_init(r);
    r->status = status;
    MUST(abx_buf_appends(&r->body, body));
}

static void test_replies(void)
{
    struct abx_http_resp r;
    struct abx_err err;
    cJSON *o, *a;

    resp_with(&r, 200, "{\"entries\":[1,2]}");
    CHECK_INT(abx_envd_parse_object(&r, "envd ListDir", &o, &err), 0);
    CHECK_INT(abx_envd_take_array(o, "entries", "envd ListDir", &a, &err), 0);
    CHECK_INT(cJSON_GetArraySize(a), 2);
    cJSON_Delete(a);
    abx_http_resp_free(&r);

    /* proto3 leaves an empty list out: absent is []. */
    o = cJSON_Parse("{}");
    CHECK_INT(abx_envd_take_array(o, "processes", "x", &a, &err), 0);
    CHECK(cJSON_IsArray(a) && cJSON_GetArraySize(a) == 0);
    cJSON_Delete(a);

    o = cJSON_Parse("{\"entries\":{}}");
    CHECK_INT(abx_envd_take_array(o, "entries", "envd ListDir", &a, &err), -1);
    CHECK(a == NULL);
    CHECK_INT(err.cls, ABX_E_PROTOCOL);
    CHECK_STR(err.message, "envd ListDir: 'entries' is not an array");

    resp_with(&r, 200, "[1]");
    CHECK_INT(abx_envd_parse_object(&r, "envd Stat", &o, &err), -1);
    CHECK(o == NULL);
    CHECK_INT(err.cls, ABX_E_PROTOCOL);
    CHECK_STR(err.message, "envd Stat: the reply is not a JSON object");
    abx_http_resp_free(&r);

    {
        static const char body[] =
            "{\"code\":\"not_found\",\"message\":\"no such file\"}";
        abx_envd_connect_error(&err, "envd Stat", 404, body, sizeof body - 1);
    }
    CHECK_INT(err.cls, ABX_E_NOT_FOUND);
    CHECK(strstr(err.message, "no such file") != NULL);
}

static void test_call_json_oom_path(void)
{
    struct abx_endpoint ep;
    struct abx_err err;
    cJSON *resp = (cJSON *)&ep;    /* must be reset */

    /* A request that could not be built is an error, not a call. */
    endpoint(&ep, NULL);
    CHECK_INT(abx_envd_call_json(&ep, "process.Process/CloseStdin", NULL,
                                 NULL, 1, &resp, &err), -1);
    CHECK(resp == NULL);
    CHECK_INT(err.cls, ABX_E_SANDBOX);
    CHECK(strstr(err.message, "out of memory") != NULL);
    abx_endpoint_free(&ep);
}

int main(void)
{
    test_prepare();
    test_prepare_too_long();
    test_connect_headers();
    test_replies();
    test_call_json_oom_path();
    return CHECK_DONE();
}
