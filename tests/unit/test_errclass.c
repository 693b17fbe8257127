/* Error classes: names, setters, API / envd REST / Connect mappings and
 * the cleaning of server text in messages. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "errclass.h"
#include "utf8.h"

static int has_ctl(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

static int valid_utf8(const char *s)
{
    size_t n = strlen(s), i = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = abx_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (k == 0)
            return 0;
        i += k;
    }
    return 1;
}

static void test_names(void)
{
    CHECK_STR(abx_errclass_name(ABX_E_OK), "OK");
    CHECK_STR(abx_errclass_name(ABX_E_AUTH), "Authentication");
    CHECK_STR(abx_errclass_name(ABX_E_NOT_FOUND), "NotFound");
    CHECK_STR(abx_errclass_name(ABX_E_RATE_LIMIT), "RateLimit");
    CHECK_STR(abx_errclass_name(ABX_E_TIMEOUT), "Timeout");
    CHECK_STR(abx_errclass_name(ABX_E_INVALID), "InvalidArgument");
    CHECK_STR(abx_errclass_name(ABX_E_NO_SPACE), "NotEnoughSpace");
    CHECK_STR(abx_errclass_name(ABX_E_SANDBOX), "Sandbox");
    CHECK_STR(abx_errclass_name(ABX_E_CONNECTION), "Connection");
    CHECK_STR(abx_errclass_name(ABX_E_PROTOCOL), "Protocol");
    CHECK_STR(abx_errclass_name(ABX_E_CANCELED), "Canceled");
    CHECK_STR(abx_errclass_name(ABX_E_TEMPLATE), "Template");
}

static void test_set_clear(void)
{
    struct abx_err e;
    abx_err_set(&e, ABX_E_TIMEOUT, 504, "deadline", "took %d s\nline2", 3);
    CHECK_INT(e.cls, ABX_E_TIMEOUT);
    CHECK_INT(e.status, 504);
    CHECK_STR(e.code, "deadline");
    CHECK_STR(e.message, "took 3 s line2");
    abx_err_clear(&e);
    CHECK_INT(e.cls, ABX_E_OK);
    CHECK_INT(e.status, 0);
    CHECK_STR(e.message, "");
    CHECK_STR(e.code, "");

    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    abx_err_set(&e, ABX_E_SANDBOX, 0, NULL, "%s", big);
    CHECK(strlen(e.message) < sizeof e.message);
    CHECK_STR(e.code, "");
}

struct api_case {
    long status;
    const char *body;
    enum abx_errclass cls;
    const char *msg;
};

static void test_api(void)
{
    static const struct api_case cases[] = {
        {401, "{\"code\":401,\"message\":\"invalid API key\"}", ABX_E_AUTH,
         "create sandbox: 401: invalid API key"},
        {404, "{\"code\":404,\"message\":\"sandbox x not found\"}",
         ABX_E_NOT_FOUND, "create sandbox: 404: sandbox x not found"},
        {429, "{\"code\":429,\"message\":\"slow down\"}", ABX_E_RATE_LIMIT,
         "create sandbox: 429: slow down"},
        {400, "{\"code\":400,\"message\":\"bad timeout\"}", ABX_E_INVALID,
         "create sandbox: 400: bad timeout"},
        {500, "{\"code\":500,\"message\":\"boom\"}", ABX_E_SANDBOX,
         "create sandbox: 500: boom"},
        {409, "conflict\r\nhere", ABX_E_SANDBOX,
         "create sandbox: 409: conflict  here"},
        {503, "", ABX_E_SANDBOX, "create sandbox: 503: HTTP status 503"},
        {502, "{\"message\": 7}", ABX_E_SANDBOX,
         "create sandbox: 502: {\"message\": 7}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct abx_err e;
        const struct api_case *c = &cases[i];
        abx_err_from_api(&e, "create sandbox", c->status, c->body,
                         strlen(c->body));
        CHECK_INT(e.cls, c->cls);
        CHECK_INT(e.status, c->status);
        CHECK_STR(e.message, c->msg);
    }
    struct abx_err e;
    const char *b = "{\"code\":503,\"message\":\"full\","
                    "\"error_code\":\"sandbox_capacity_unavailable\"}";
    abx_err_from_api(&e, NULL, 503, b, strlen(b));
    CHECK_STR(e.code, "sandbox_capacity_unavailable");
    CHECK_STR(e.message, "503: full");
    CHECK_INT(e.body_code, 503);

    /* The body's own integer code, as given (E2B's JS SDK reads it): a
     * 404 whose body says 500 keeps 500; none, or not an integer: 0. */
    static const struct {
        const char *body;
        long want;
    } codes[] = {{"{\"code\":500,\"message\":\"x\"}", 500}, {"{\"message\":\"x\"}", 0},
                 {"{\"code\":\"404\"}", 0},                {"{\"code\":404.5}", 0},
                 {"not json", 0},                           {"{\"code\":1e300}", 0}};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        abx_err_from_api(&e, "connect sandbox x", 404, codes[i].body, strlen(codes[i].body));
        CHECK_INT(e.status, 404);
        CHECK_INT(e.body_code, codes[i].want);
    }
    abx_err_set(&e, ABX_E_SANDBOX, 500, "", "later");
    CHECK_INT(e.body_code, 0);

    /* A long HTML page: capped, one line, cut on a UTF-8 boundary. */
    char page[5000];
    size_t n = 0;
    while (n + 3 < sizeof page) {
        page[n++] = '\n';
        page[n++] = (char)0xC3;
        page[n++] = (char)0xA9;
    }
    abx_err_from_api(&e, "get sandbox", 500, page, n);
    CHECK(strlen(e.message) < 400);
    CHECK(!has_ctl(e.message));
    CHECK(valid_utf8(e.message));
    CHECK(strstr(e.message, "...") != NULL);
}

static void test_envd(void)
{
    static const struct api_case cases[] = {
        {400, "{\"code\":400,\"message\":\"bad path\"}", ABX_E_INVALID,
         "read file: 400: bad path"},
        {401, "{\"code\":401,\"message\":\"no token\"}", ABX_E_AUTH,
         "read file: 401: no token"},
        {404, "{\"code\":404,\"message\":\"no such file\"}", ABX_E_NOT_FOUND,
         "read file: 404: no such file"},
        {429, "x", ABX_E_RATE_LIMIT, "read file: 429: x"},
        {507, "{\"message\":\"disk full\"}", ABX_E_NO_SPACE,
         "read file: 507: disk full"},
        {500, "oops", ABX_E_SANDBOX, "read file: 500: oops"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct abx_err e;
        const struct api_case *c = &cases[i];
        abx_err_from_envd_http(&e, "read file", c->status, c->body,
                               strlen(c->body));
        CHECK_INT(e.cls, c->cls);
        CHECK_STR(e.message, c->msg);
    }
    struct abx_err e;
    const char *b = "{\"sandboxId\":\"x\",\"message\":\"The sandbox was not "
                    "found\",\"code\":502}";
    abx_err_from_envd_http(&e, "read file", 502, b, strlen(b));
    CHECK_INT(e.cls, ABX_E_TIMEOUT);
    CHECK(strstr(e.message, "The sandbox was not found") != NULL);
    CHECK(strstr(e.message, "probably not running") != NULL);
}

static void test_connect(void)
{
    static const struct {
        enum abx_connect_code code;
        enum abx_errclass cls;
    } map[] = {
        {ABX_CONNECT_INVALID_ARGUMENT, ABX_E_INVALID},
        {ABX_CONNECT_UNAUTHENTICATED, ABX_E_AUTH},
        {ABX_CONNECT_NOT_FOUND, ABX_E_NOT_FOUND},
        {ABX_CONNECT_UNAVAILABLE, ABX_E_TIMEOUT},
        {ABX_CONNECT_CANCELED, ABX_E_TIMEOUT},
        {ABX_CONNECT_DEADLINE_EXCEEDED, ABX_E_TIMEOUT},
        {ABX_CONNECT_RESOURCE_EXHAUSTED, ABX_E_RATE_LIMIT},
        {ABX_CONNECT_INTERNAL, ABX_E_SANDBOX},
        {ABX_CONNECT_ALREADY_EXISTS, ABX_E_SANDBOX},
        {ABX_CONNECT_UNKNOWN, ABX_E_SANDBOX},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        struct abx_err e;
        abx_err_from_connect(&e, "stat", map[i].code, "m", 400);
        CHECK_INT(e.cls, map[i].cls);
        CHECK_STR(e.code, abx_connect_code_name(map[i].code));
    }
    struct abx_err e;
    abx_err_from_connect(&e, "stat /nope", ABX_CONNECT_NOT_FOUND,
                         "file not found:\n/nope", 404);
    CHECK_STR(e.message, "stat /nope: not_found: file not found: /nope");
    CHECK_INT(e.status, 404);
    abx_err_from_connect(&e, NULL, ABX_CONNECT_INTERNAL, NULL, 500);
    CHECK_STR(e.message, "internal");
    abx_err_from_connect(&e, "x", (enum abx_connect_code)99, "m", 0);
    CHECK_INT(e.cls, ABX_E_SANDBOX);
    CHECK_STR(e.message, "x: unknown: m");

    /* With the codec's parser: a plain-HTTP 503 body becomes Timeout. */
    enum abx_connect_code code;
    char msg[256];
    const char *b = "{\"code\":503,\"message\":\"busy\"}";
    abx_connect_parse_error(b, strlen(b), 503, &code, msg, sizeof msg);
    abx_err_from_connect(&e, "run", code, msg, 503);
    CHECK_INT(e.cls, ABX_E_TIMEOUT);
    CHECK_STR(e.message, "run: unavailable: busy");
}

int main(void)
{
    test_names();
    test_set_clear();
    test_api();
    test_envd();
    test_connect();
    return CHECK_DONE();
}
