/* Control-plane client pieces that need no server: the metadata query
 * encoding (checked against a decoder that does what infra's
 * parseFilters does), sandbox info parsing, URL helpers and platform
 * settings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "buf.h"
#include "check.h"
#include "http.h"
#include "out.h"

/* Go's url.QueryUnescape: %XX and '+' as space. */
static void unescape(const char *s, size_t n, struct abx_buf *out)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n) {
            char hex[3] = {s[i + 1], s[i + 2], 0};
            MUST(abx_buf_appendc(out, (char)strtol(hex, NULL, 16)));
            i += 2;
        } else {
            MUST(abx_buf_appendc(out, s[i] == '+' ? ' ' : s[i]));
        }
    }
}

/* Server side of the three layers: decode the query parameter, then the
 * whole string, split on '&' and '=', decode each part; the result is
 * re-serialised as "k1\tv1\n..." for comparison. */
static void server_decode(const char *param, struct abx_buf *res)
{
    struct abx_buf l1, whole;
    abx_buf_init(&l1, 0);
    abx_buf_init(&whole, 0);
    unescape(param, strlen(param), &l1);
    unescape(abx_buf_cstr(&l1), l1.len, &whole);
    const char *p = abx_buf_cstr(&whole), *end = p + whole.len;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *pe = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(pe - p));
        if (eq == NULL) {
            MUST(abx_buf_appends(res, "<bad pair>"));
            break;
        }
        unescape(p, (size_t)(eq - p), res);
        MUST(abx_buf_appendc(res, '\t'));
        unescape(eq + 1, (size_t)(pe - eq - 1), res);
        MUST(abx_buf_appendc(res, '\n'));
        p = pe + 1;
    }
    abx_buf_free(&l1);
    abx_buf_free(&whole);
}

static void test_metadata_query(void)
{
    struct abx_buf q, wire, dec;
    cJSON *m = cJSON_CreateObject();
    abx_buf_init(&q, 0);
    abx_buf_init(&wire, 0);
    abx_buf_init(&dec, 0);

    cJSON_AddStringToObject(m, "user", "abc");
    cJSON_AddStringToObject(m, "app", "prod");
    CHECK_INT(abx_api_metadata_query(m, &q), 0);
    CHECK_STR(abx_buf_cstr(&q), "user=abc&app=prod");
    CHECK_INT(abx_url_escape(&wire, q.data, q.len), 0);
    CHECK_STR(abx_buf_cstr(&wire), "user%3Dabc%26app%3Dprod");
    cJSON_Delete(m);

    /* Hostile bytes: every layer must be undone exactly once. */
    m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "k&=%", "a&b=c% d+e");
    cJSON_AddStringToObject(m, "caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac");
    cJSON_AddStringToObject(m, "empty", "");
    abx_buf_reset(&q);
    CHECK_INT(abx_api_metadata_query(m, &q), 0);
    CHECK(strstr(abx_buf_cstr(&q), "k%2526%253D%2525=a%2526b%253Dc%2525%2520d%252Be") != NULL);
    CHECK(strstr(abx_buf_cstr(&q), "caf%25C3%25A9=%25E6%2597%25A5") != NULL);
    abx_buf_reset(&wire);
    abx_url_escape(&wire, q.data, q.len);
    server_decode(abx_buf_cstr(&wire), &dec);
    CHECK_STR(abx_buf_cstr(&dec),
              "k&=%\ta&b=c% d+e\ncaf\xc3\xa9\t\xe6\x97\xa5\xe6\x9c\xac\nempty\t\n");
    cJSON_Delete(m);

    /* Not a map of strings. */
    m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "n", 1);
    abx_buf_reset(&q);
    CHECK_INT(abx_api_metadata_query(m, &q), -1);
    cJSON_Delete(m);
    m = cJSON_CreateArray();
    CHECK_INT(abx_api_metadata_query(m, &q), -1);
    cJSON_Delete(m);
    abx_buf_reset(&q);
    CHECK_INT(abx_api_metadata_query(NULL, &q), 0);
    CHECK_INT(q.len, 0);

    abx_buf_free(&q);
    abx_buf_free(&wire);
    abx_buf_free(&dec);
}

static const char *full =
    "{\"templateID\":\"base\",\"sandboxID\":\"i1a2b3c4d5e6f7g8h9j0\","
    "\"clientID\":\"6532622b\",\"envdVersion\":\"0.5.7\",\"alias\":\"b\","
    "\"envdAccessToken\":\"tok-SECRET-envd-1234567890\","
    "\"trafficAccessToken\":null,\"domain\":\"example.test\","
    "\"state\":\"running\",\"startedAt\":\"2026-01-01T00:00:00Z\","
    "\"endAt\":\"2026-01-01T00:05:00Z\",\"cpuCount\":2,\"memoryMB\":512,"
    "\"diskSizeMB\":1024,\"metadata\":{\"a\":\"1\"},\"extra\":[1,2]}";

/* The token, printed, comes out masked. */
static int printed_masked(const char *secret)
{
    char path[] = "/tmp/test_api_parse_XXXXXX", got[512] = "";
    int fd = mkstemp(path);
    if (fd < 0)
        return 0;
    abx_out_set_fd(ABX_OUT_STDOUT, fd);
    abx_out_printf(ABX_OUT_STDOUT, "token=%s\n", secret);
    abx_out_flush();
    abx_out_set_fd(ABX_OUT_STDOUT, -1);
    ssize_t n = pread(fd, got, sizeof got - 1, 0);
    close(fd);
    unlink(path);
    if (n < 0)
        return 0;
    got[n] = '\0';
    return strstr(got, secret) == NULL && strstr(got, "token=") != NULL;
}

static void test_info_parse(void)
{
    struct abx_sandbox_info i;
    struct abx_err e;
    cJSON *o = cJSON_Parse(full);

    CHECK_INT(abx_sandbox_info_parse(o, &i, &e), 0);
    CHECK_STR(i.sandbox_id, "i1a2b3c4d5e6f7g8h9j0");
    CHECK_STR(i.template_id, "base");
    CHECK_STR(i.client_id, "6532622b");
    CHECK_STR(i.envd_version, "0.5.7");
    CHECK_STR(i.alias, "b");
    CHECK_STR(i.domain, "example.test");
    CHECK_STR(i.state, "running");
    CHECK_STR(i.end_at, "2026-01-01T00:05:00Z");
    CHECK_INT(i.cpu_count, 2);
    CHECK_INT(i.memory_mb, 512);
    CHECK_INT(i.disk_size_mb, 1024);
    CHECK(i.envd_access_token != NULL);
    CHECK(i.traffic_access_token == NULL);
    CHECK(i.raw != NULL && cJSON_GetObjectItem(i.raw, "extra") != NULL);
    CHECK(cJSON_IsString(cJSON_GetObjectItem(i.metadata, "a")));
    CHECK(printed_masked("tok-SECRET-envd-1234567890"));
    abx_sandbox_info_free(&i);
    abx_sandbox_info_free(&i);   /* idempotent */
    cJSON_Delete(o);

    /* Minimal create reply: only the two fields we need. */
    o = cJSON_Parse("{\"sandboxID\":\"s\",\"templateID\":\"t\"}");
    CHECK_INT(abx_sandbox_info_parse(o, &i, &e), 0);
    CHECK_STR(i.state, "");
    CHECK(i.metadata == NULL && i.envd_access_token == NULL);
    abx_sandbox_info_free(&i);
    cJSON_Delete(o);

    static const struct {
        const char *json, *field, *why;
    } bad[] = {
        {"{\"templateID\":\"t\"}", "sandboxID", "missing"},
        {"{\"sandboxID\":null,\"templateID\":\"t\"}", "sandboxID", "missing"},
        {"{\"sandboxID\":\"\",\"templateID\":\"t\"}", "sandboxID", "empty"},
        {"{\"sandboxID\":\"s\",\"templateID\":5}", "templateID", "not a string"},
        {"{\"sandboxID\":\"s\",\"templateID\":\"t\",\"cpuCount\":\"2\"}",
         "cpuCount", "not a non-negative number"},
        {"{\"sandboxID\":\"s\",\"templateID\":\"t\",\"envdAccessToken\":1}",
         "envdAccessToken", "not a string"},
        {"{\"sandboxID\":\"s\",\"templateID\":\"t\",\"metadata\":[]}",
         "metadata", "not an object"},
        {"{\"sandboxID\":\"s\",\"templateID\":\"t\",\"metadata\":{\"a\":1}}",
         "metadata", "not a string"},
        {"{\"sandboxID\":\"s\",\"templateID\":\"t\",\"state\":true}", "state",
         "not a string"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        o = cJSON_Parse(bad[k].json);
        CHECK(o != NULL);
        CHECK_INT(abx_sandbox_info_parse(o, &i, &e), -1);
        CHECK_INT(e.cls, ABX_E_PROTOCOL);
        CHECK(strstr(e.message, bad[k].field) != NULL);
        CHECK(strstr(e.message, bad[k].why) != NULL);
        CHECK(i.raw == NULL && i.envd_access_token == NULL);
        cJSON_Delete(o);
    }
    o = cJSON_Parse("[1]");
    CHECK_INT(abx_sandbox_info_parse(o, &i, &e), -1);
    CHECK_INT(e.cls, ABX_E_PROTOCOL);
    cJSON_Delete(o);
    CHECK_INT(abx_sandbox_info_parse(NULL, &i, &e), -1);
}

static void test_url(void)
{
    char out[256];
    struct abx_buf b;

    abx_url_redact("https://h.test/files?path=%2Fa&username=user&signature="
                   "v1_abc&signature_expiration=9&x_token=zz&accessToken=q#f",
                   out, sizeof out);
    CHECK_STR(out, "https://h.test/files?path=%2Fa&username=user&signature="
                   "[MASKED]&signature_expiration=9&x_token=[MASKED]&"
                   "accessToken=[MASKED]#f");
    abx_url_redact("http://u:pw@h:1/p?token=t", out, sizeof out);
    CHECK_STR(out, "http://[MASKED]@h:1/p?token=[MASKED]");
    abx_url_redact("http://h/p", out, sizeof out);
    CHECK_STR(out, "http://h/p");
    abx_url_redact("http://h/p?signature=abcdef", out, 12);
    CHECK_INT(strlen(out), 11);
    CHECK(strstr(out, "abc") == NULL);
    abx_url_redact(NULL, out, sizeof out);
    CHECK_STR(out, "");

    abx_buf_init(&b, 0);
    CHECK_INT(abx_url_escape(&b, "a b/\xc3\xa9~-._", 10), 0);
    CHECK_STR(abx_buf_cstr(&b), "a%20b%2F%C3%A9~-._");
    abx_buf_free(&b);
    abx_buf_init(&b, 4);
    CHECK_INT(abx_url_escape(&b, "////", 4), -1);
    abx_buf_free(&b);
}

static void test_platform(void)
{
    struct abx_platform p;
    char err[256];

    CHECK_INT(abx_platform_init(&p, "e2b_abc", NULL, NULL, NULL, err,
                                sizeof err), 0);
    CHECK_STR(p.domain, ABX_DEFAULT_DOMAIN);
    CHECK_STR(p.api_url, "https://api." ABX_DEFAULT_DOMAIN);
    CHECK_STR(p.sandbox_url, "");
    CHECK_STR(p.api_key, "e2b_abc");
    CHECK(p.request_timeout == 60);

    CHECK_INT(abx_platform_init(&p, "k", "", "eu.example.test", "", err,
                                sizeof err), 0);
    CHECK_STR(p.api_url, "https://api.eu.example.test");
    CHECK_INT(abx_platform_init(&p, "k", NULL, "eu.example.test/", NULL, err,
                                sizeof err), 0);
    CHECK_STR(p.domain, "eu.example.test");
    CHECK_INT(abx_platform_init(&p, "k", NULL, "a/b", NULL, err, sizeof err),
              -1);
    CHECK_INT(abx_platform_init(&p, "k", "http://127.0.0.1:3000///", "d",
                                "http://127.0.0.1:4000/", err, sizeof err), 0);
    CHECK_STR(p.api_url, "http://127.0.0.1:3000");
    CHECK_STR(p.sandbox_url, "http://127.0.0.1:4000");

    CHECK_INT(abx_platform_init(&p, "k", "ftp://x", NULL, NULL, err,
                                sizeof err), -1);
    CHECK(strstr(err, "http://") != NULL && strstr(err, "API URL") != NULL);
    CHECK_INT(abx_platform_init(&p, "k", "api.test", NULL, NULL, err,
                                sizeof err), -1);
    CHECK_INT(abx_platform_init(&p, "k", NULL, NULL, "localhost:9", err,
                                sizeof err), -1);
    CHECK(strstr(err, "sandbox URL") != NULL);
    CHECK_INT(abx_platform_init(&p, "k", NULL, "https://d.test", NULL, err,
                                sizeof err), -1);
    CHECK(strstr(err, "domain") != NULL);

    char longkey[2000];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    CHECK_INT(abx_platform_init(&p, longkey, NULL, NULL, NULL, err,
                                sizeof err), -1);
    CHECK(strstr(err, "too long") != NULL);
    CHECK(strstr(err, "kkkk") == NULL);
    CHECK_INT(abx_platform_init(&p, "a\nb", NULL, NULL, NULL, err,
                                sizeof err), -1);
    char longurl[700] = "http://";
    memset(longurl + 7, 'h', sizeof longurl - 8);
    longurl[sizeof longurl - 1] = '\0';
    CHECK_INT(abx_platform_init(&p, "k", longurl, NULL, NULL, err,
                                sizeof err), -1);
}

int main(void)
{
    test_metadata_query();
    test_info_parse();
    test_url();
    test_platform();
    return CHECK_DONE();
}
