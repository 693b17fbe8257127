/* envd client addressing without a network: endpoint base URLs (sandbox
 * URL vs host form, http for localhost and IP literals), get_host,
 * request headers (routing, token, Basic user, injection), query
 * escaping and signed /files URLs on the vectors of docs/protocol.md
 * "Signed URLs". */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "envd_internal.h"
#include "out.h"

static void platform(struct abx_platform *p, const char *domain,
                     const char *sandbox_url)
{
    memset(p, 0, sizeof *p);
    snprintf(p->domain, sizeof p->domain, "%s", domain);
    snprintf(p->sandbox_url, sizeof p->sandbox_url, "%s", sandbox_url);
    p->request_timeout = 42;
}

static void info(struct abx_sandbox_info *i, const char *id,
                 const char *domain, const char *token)
{
    memset(i, 0, sizeof *i);
    snprintf(i->sandbox_id, sizeof i->sandbox_id, "%s", id);
    snprintf(i->domain, sizeof i->domain, "%s", domain);
    i->envd_access_token = token ? strdup(token) : NULL;
}

static void test_endpoint(void)
{
    struct abx_platform p;
    struct abx_sandbox_info i;
    struct abx_endpoint ep;
    struct abx_err err;
    char host[256];

    platform(&p, "localhost:5001", "");
    info(&i, "abc123", "", "tok");
    CHECK_INT(abx_endpoint_init(&ep, &p, &i, 49983, &err), 0);
    CHECK_STR(ep.base_url, "http://49983-abc123.localhost:5001");
    CHECK_STR(ep.sandbox_id, "abc123");
    CHECK_INT(ep.port, 49983);
    CHECK(ep.header_routing);
    CHECK(ep.access_token && ep.access_token != i.envd_access_token);
    CHECK_STR(ep.access_token, "tok");
    CHECK(ep.request_timeout == 42);
    CHECK(ep.traffic_token == NULL);
    abx_endpoint_free(&ep);
    CHECK(ep.access_token == NULL);
    abx_endpoint_free(&ep);    /* idempotent */

    /* The reply's domain wins over the configured one. */
    snprintf(i.domain, sizeof i.domain, "e2b.app");
    i.traffic_access_token = strdup("ttok");
    CHECK_INT(abx_endpoint_init(&ep, &p, &i, 49999, &err), 0);
    CHECK_STR(ep.base_url, "https://49999-abc123.e2b.app");
    CHECK(ep.traffic_token && strcmp(ep.traffic_token, "ttok") == 0);
    abx_endpoint_free(&ep);
    CHECK_INT(abx_endpoint_host(&p, &i, 8080, host, sizeof host), 0);
    CHECK_STR(host, "8080-abc123.e2b.app");
    CHECK_INT(abx_endpoint_host(&p, &i, 8080, host, 10), -1);

    i.domain[0] = '\0';
    platform(&p, "127.0.0.1:80", "");
    CHECK_INT(abx_endpoint_init(&ep, &p, &i, 49983, &err), 0);
    CHECK(strncmp(ep.base_url, "http://", 7) == 0);
    abx_endpoint_free(&ep);
    platform(&p, "[::1]:80", "");
    CHECK_INT(abx_endpoint_init(&ep, &p, &i, 49983, &err), 0);
    CHECK(strncmp(ep.base_url, "http://", 7) == 0);
    abx_endpoint_free(&ep);
    platform(&p, "cn-hangzhou.e2b.fc.aliyuncs.com", "");
    CHECK_INT(abx_endpoint_init(&ep, &p, &i, 49983, &err), 0);
    CHECK_STR(ep.base_url,
              "https://49983-abc123.cn-hangzhou.e2b.fc.aliyuncs.com");
    abx_endpoint_free(&ep);
    platform(&p, "mylocalhost.com", "");
    CHECK_INT(abx_endpoint_init(&ep, &p, &i, 49983, &err), 0);
    CHECK(strncmp(ep.base_url, "https://", 8) == 0);
    abx_endpoint_free(&ep);

    /* One data-plane URL: verbatim, trailing '/' dropped. */
    platform(&p, "localhost:5001", "http://127.0.0.1:5001/");
    CHECK_INT(abx_endpoint_init(&ep, &p, &i, 49999, &err), 0);
    CHECK_STR(ep.base_url, "http://127.0.0.1:5001");
    abx_endpoint_free(&ep);

    /* Bad input. */
    snprintf(i.sandbox_id, sizeof i.sandbox_id, "a/b");
    CHECK_INT(abx_endpoint_init(&ep, &p, &i, 49983, &err), -1);
    CHECK_INT(err.cls, ABX_E_INVALID);
    snprintf(i.sandbox_id, sizeof i.sandbox_id, "ok");
    CHECK_INT(abx_endpoint_init(&ep, &p, &i, 0, &err), -1);
    platform(&p, "", "");
    CHECK_INT(abx_endpoint_init(&ep, &p, &i, 49983, &err), -1);
    CHECK(strstr(err.message, "domain") != NULL);
    abx_sandbox_info_free(&i);
}

static int has_line(const struct abx_headers *hb, const char *line)
{
    size_t k;

    for (k = 0; k < hb->n; k++)
        if (strcmp(hb->lines[k], line) == 0)
            return 1;
    return 0;
}

static void test_headers(void)
{
    struct abx_endpoint ep;
    struct abx_headers hb;
    const char *extra[] = {"Content-Type: application/json", NULL};
    const char *evil[] = {"X: a\r\nX-Access-Token: forged", NULL};

    memset(&ep, 0, sizeof ep);
    snprintf(ep.sandbox_id, sizeof ep.sandbox_id, "sbx1");
    ep.port = 49983;
    ep.header_routing = 1;
    ep.access_token = strdup("secret-tok");

    CHECK_INT(abx_headers_build(&hb, &ep, "user", extra), 0);
    CHECK_INT(hb.n, 5);
    CHECK(hb.lines[hb.n] == NULL);
    CHECK(has_line(&hb, "E2b-Sandbox-Id: sbx1"));
    CHECK(has_line(&hb, "E2b-Sandbox-Port: 49983"));
    CHECK(has_line(&hb, "X-Access-Token: secret-tok"));
    CHECK(has_line(&hb, "Authorization: Basic dXNlcjo="));
    CHECK(has_line(&hb, "Content-Type: application/json"));
    abx_headers_free(&hb);
    CHECK_INT(hb.n, 0);

    CHECK_INT(abx_headers_build(&hb, &ep, "root", NULL), 0);
    CHECK(has_line(&hb, "Authorization: Basic cm9vdDo="));
    abx_headers_free(&hb);

    /* No token, no user: routing only. */
    free(ep.access_token);
    ep.access_token = NULL;
    CHECK_INT(abx_headers_build(&hb, &ep, NULL, NULL), 0);
    CHECK_INT(hb.n, 2);
    abx_headers_free(&hb);
    ep.traffic_token = strdup("traffic-tok");
    CHECK_INT(abx_headers_build(&hb, &ep, NULL, NULL), 0);
    CHECK(has_line(&hb, "E2B-Traffic-Access-Token: traffic-tok"));
    abx_headers_free(&hb);
    free(ep.traffic_token);
    ep.traffic_token = NULL;

    CHECK_INT(abx_headers_build(&hb, &ep, NULL, evil), -1);
    CHECK_INT(abx_headers_build(&hb, &ep, "a:b", NULL), -1);
    CHECK_INT(abx_headers_build(&hb, &ep, "", NULL), -1);
    CHECK_INT(abx_headers_build(&hb, &ep, "u\n", NULL), -1);
}

static void test_query(void)
{
    struct abx_buf b;
    const char *pairs[] = {"path", "/a b+c/~x_y-z.é", "username", NULL,
                           "k", "", NULL, NULL};

    abx_buf_init(&b, 0);
    CHECK_INT(abx_envd_query(&b, pairs), 0);
    CHECK_STR(abx_buf_cstr(&b), "?path=%2Fa%20b%2Bc%2F~x_y-z.%C3%A9&k=");
    abx_buf_free(&b);
}

static void test_signed_urls(void)
{
    struct abx_endpoint ep;
    struct abx_err err;
    struct abx_buf masked;
    char url[1024];

    memset(&ep, 0, sizeof ep);
    snprintf(ep.base_url, sizeof ep.base_url, "https://49983-abc.e2b.app");
    ep.access_token = strdup("tok");

    CHECK_INT(abx_envd_file_url_at(&ep, "/home/user/a.txt", "read", NULL, -1,
                                   url, sizeof url, &err), 0);
    CHECK_STR(url, "https://49983-abc.e2b.app/files?path=%2Fhome%2Fuser%2F"
                   "a.txt&signature=v1_Zkbb3914oLJLvMBzCAHQhm2ydBLxbSx2eQUR"
                   "%2FkLdvIY");
    /* The signature joined the masker. */
    abx_buf_init(&masked, 0);
    abx_mask_string(abx_out_masker(), url, strlen(url), &masked);
    CHECK(strstr(abx_buf_cstr(&masked), "Zkbb3914") == NULL);
    /* ... and so did the URL as a whole. */
    CHECK(strstr(abx_buf_cstr(&masked), "files?path") == NULL);
    abx_buf_free(&masked);

    CHECK_INT(abx_envd_file_url_at(&ep, "/home/user/a.txt", "write", "root",
                                   1700000000LL, url, sizeof url, &err), 0);
    CHECK_STR(url, "https://49983-abc.e2b.app/files?path=%2Fhome%2Fuser%2F"
                   "a.txt&username=root&signature=v1_3hlIyTfkHTdfJKgNFUJamAQ7q"
                   "%2BSOj3624i%2BgeS%2FjqCM&signature_expiration=1700000000");
    CHECK(strstr(url, "tok") == NULL);

    /* Relative expiration: a future timestamp appears. */
    CHECK_INT(abx_envd_file_url(&ep, "a.txt", "read", NULL, 60, url,
                                sizeof url, &err), 0);
    CHECK(strstr(url, "&signature_expiration=") != NULL);

    CHECK_INT(abx_envd_file_url_at(&ep, "/a", "delete", NULL, -1, url,
                                   sizeof url, &err), -1);
    CHECK_INT(err.cls, ABX_E_INVALID);
    CHECK_INT(abx_envd_file_url_at(&ep, "/a", "read", NULL, -1, url, 20,
                                   &err), -1);
    CHECK_STR(url, "");

    /* No token: unsigned; an expiration is an argument error. */
    free(ep.access_token);
    ep.access_token = NULL;
    CHECK_INT(abx_envd_file_url(&ep, "/a b", "read", "user", -1, url,
                                sizeof url, &err), 0);
    CHECK_STR(url, "https://49983-abc.e2b.app/files?path=%2Fa%20b"
                   "&username=user");
    /* Unsigned URLs are not secrets. */
    abx_buf_init(&masked, 0);
    abx_mask_string(abx_out_masker(), url, strlen(url), &masked);
    CHECK_STR(abx_buf_cstr(&masked), url);
    abx_buf_free(&masked);
    CHECK_INT(abx_envd_file_url(&ep, "/a", "read", NULL, 10, url,
                                sizeof url, &err), -1);
    CHECK_INT(err.cls, ABX_E_INVALID);
}

static void test_timeout_header(void)
{
    char h[64];

    abx_envd_timeout_header(h, sizeof h, 60);
    CHECK_STR(h, "Connect-Timeout-Ms: 60000");
    abx_envd_timeout_header(h, sizeof h, 0.0001);
    CHECK_STR(h, "Connect-Timeout-Ms: 1");
    abx_envd_timeout_header(h, sizeof h, 1e12);
    CHECK_STR(h, "Connect-Timeout-Ms: 9999999999");
}

int main(void)
{
    test_endpoint();
    test_headers();
    test_query();
    test_signed_urls();
    test_timeout_header();
    return CHECK_DONE();
}
