/* The HTTP engine against run_client.py's fake server (ABX_FAKE_URL):
 * sinks, save_path, body_path, multipart, retries with held-back error
 * bodies, timeouts, the cancel hook, caps, captured and collected
 * headers, concurrency
 * and flat memory on big transfers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drv.h"

static char base[512];
static char url[1024];

static const char *u(const char *path)
{
    snprintf(url, sizeof url, "%s%s", base, path);
    return url;
}

static long maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

struct count {
    size_t n;
    int bad;        /* a byte differs from the pattern */
    long status;
    struct abx_buf text;
};

static int count_sink(void *ud, long status, const char *p, size_t n)
{
    struct count *c = ud;
    c->status = status;
    if (status == 200 && c->text.max == 0) {
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)p[i] != (c->n + i) % 65536 % 251)
                c->bad = 1;
    } else {
        MUST(abx_buf_append(&c->text, p, n));
    }
    c->n += n;
    return 0;
}

static void test_download(void)
{
    enum { BIG = 48 * 1024 * 1024 };
    char path[] = "/tmp/abx-http-dl-XXXXXX";
    struct abx_http_req r = {0};
    struct abx_http_resp resp;
    struct abx_err err;
    struct count c = {0};
    struct stat st;
    char q[64];

    snprintf(q, sizeof q, "/download?n=%d", BIG);
    long rss0 = maxrss_kb();
    r.url = u(q);
    r.sink = count_sink;
    r.sink_ud = &c;
    r.what = "download";
    abx_http_resp_init(&resp);
    int rc = abx_http_do(&r, &resp, &err);
    CHECK_LOG(rc == 0 && resp.status == 200 && c.n == BIG && !c.bad,
              "sink got all %d bytes in order (%zu)", BIG, c.n);
    CHECK_LOG(resp.body.len == 0, "nothing collected when a sink is set");
    abx_http_resp_free(&resp);

    int fd = mkstemp(path);
    close(fd);
    unlink(path);
    memset(&r, 0, sizeof r);
    r.url = u(q);
    r.save_path = path;
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    CHECK_LOG(rc == 0 && stat(path, &st) == 0 && st.st_size == BIG,
              "save_path holds %d bytes", BIG);
    long grown = maxrss_kb() - rss0;
    printf("note: peak RSS grew %ld KiB over two %d MiB downloads\n", grown,
           BIG >> 20);
    CHECK_LOG(grown < 16 * 1024, "memory stays flat (< 16 MiB growth)");
    unlink(path);
    abx_http_resp_free(&resp);

    /* An error status: no file at all, the error body is in resp. */
    memset(&r, 0, sizeof r);
    r.url = u("/status/404");
    r.save_path = path;
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    CHECK_LOG(rc == 0 && resp.status == 404 && access(path, F_OK) != 0 &&
                  strstr(abx_buf_cstr(&resp.body), "error body 404"),
              "404 with save_path: no file, body kept");
    abx_http_resp_free(&resp);

    /* Over max_body: Protocol naming the cap. */
    memset(&r, 0, sizeof r);
    r.url = u("/download?n=3000000");
    r.max_body = 1000000;
    r.what = "fetch";
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_PROTOCOL && strstr(err.message, "1000000"),
              "over max_body: %s", err.message);
    abx_http_resp_free(&resp);
}

static void test_upload(void)
{
    char path[] = "/tmp/abx-http-up-XXXXXX";
    int fd = mkstemp(path);
    enum { N = 3 * 1024 * 1024 + 7 };
    char *data = malloc(N);
    for (size_t i = 0; i < N; i++)
        data[i] = (char)(i * 7);
    CHECK_LOG(write(fd, data, N) == N, "wrote upload file");
    close(fd);

    struct abx_http_req r = {0};
    struct abx_http_resp resp;
    struct abx_err err;
    r.method = "POST";
    r.url = u("/echo");
    r.body_path = path;
    abx_http_resp_init(&resp);
    int rc = abx_http_do(&r, &resp, &err);
    cJSON *o = rc == 0 ? cJSON_Parse(abx_buf_cstr(&resp.body)) : NULL;
    const cJSON *len = cJSON_GetObjectItem(o, "len");
    CHECK_LOG(cJSON_IsNumber(len) && len->valuedouble == N,
              "body_path streamed %d bytes", N);
    cJSON_Delete(o);
    abx_http_resp_free(&resp);

    const char *hdrs[] = {"Content-Type: text/x-mine", NULL};
    memset(&r, 0, sizeof r);
    r.method = "PUT";
    r.url = u("/echo");
    r.body = "hello";
    r.body_len = 5;
    r.headers = hdrs;
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    CHECK_LOG(rc == 0 && strstr(abx_buf_cstr(&resp.body), "\"len\": 5") &&
                  strstr(abx_buf_cstr(&resp.body), "text/x-mine") &&
                  strstr(abx_buf_cstr(&resp.body), "PUT"),
              "PUT with an in-memory body and own Content-Type: %s",
              abx_buf_cstr(&resp.body));
    abx_http_resp_free(&resp);

    /* Multipart: one part in memory, one streamed from the file. */
    struct abx_http_part parts[2] = {
        {.name = "meta", .data = "M-E-T-A", .len = 7, .type = "text/plain"},
        {.name = "file", .filename = "x.bin", .path = path},
    };
    memset(&r, 0, sizeof r);
    r.method = "POST";
    r.url = u("/echo-raw");
    r.parts = parts;
    r.nparts = 2;
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    const char *b = abx_buf_cstr(&resp.body);
    CHECK_LOG(rc == 0 && resp.body.len > N && strstr(b, "name=\"meta\"") &&
                  strstr(b, "M-E-T-A") && strstr(b, "filename=\"x.bin\""),
              "multipart: both parts arrive (%zu bytes)", resp.body.len);
    CHECK_LOG(memmem(b, resp.body.len, data, 4096) != NULL, "file part content");
    abx_http_resp_free(&resp);
    r.url = u("/echo");
    r.nparts = 1;
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    CHECK_LOG(rc == 0 && strstr(abx_buf_cstr(&resp.body), "multipart/form-data; boundary="),
              "multipart Content-Type with boundary: %s", abx_buf_cstr(&resp.body));
    abx_http_resp_free(&resp);

    memset(&r, 0, sizeof r);
    r.url = u("/echo");
    r.body_path = "/nonexistent/file";
    rc = abx_http_do(&r, NULL, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_INVALID && strstr(err.message, "/nonexistent/file"),
              "missing body file: %s", err.message);
    memset(&r, 0, sizeof r);
    const char *evil[] = {"X-A: b\r\nX-Injected: 1", NULL};
    r.url = u("/echo");
    r.headers = evil;
    rc = abx_http_do(&r, NULL, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_INVALID && !strstr(err.message, "Injected"),
              "header with CR/LF refused: %s", err.message);
    unlink(path);
    free(data);
}

static void test_retry(void)
{
    struct abx_http_req r = {0};
    struct abx_http_resp resp;
    struct abx_err err;
    struct count c = {0};
    abx_buf_init(&c.text, 4096);

    r.url = u("/flaky?k=get");
    r.idempotent = 1;
    r.sink = count_sink;
    r.sink_ud = &c;
    abx_http_resp_init(&resp);
    int rc = abx_http_do(&r, &resp, &err);
    CHECK_LOG(rc == 0 && resp.status == 200 && resp.attempts == 3,
              "idempotent GET: 503, 503, 200 in %d attempts", resp.attempts);
    CHECK_LOG(strcmp(abx_buf_cstr(&c.text), "done") == 0,
              "the sink saw only the final body ('%s')", abx_buf_cstr(&c.text));
    abx_http_resp_free(&resp);

    memset(&r, 0, sizeof r);
    r.method = "POST";
    r.url = u("/flaky?k=post");
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    CHECK_LOG(rc == 0 && resp.status == 503 && resp.attempts == 1,
              "non-idempotent POST: 503 returned after 1 attempt (%d)", resp.attempts);
    abx_http_resp_free(&resp);

    memset(&r, 0, sizeof r);
    r.url = u("/flaky?k=noretry");
    r.idempotent = 1;
    r.no_retry = 1;
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    CHECK_LOG(rc == 0 && resp.status == 503 && resp.attempts == 1, "no_retry: 1 attempt");
    abx_http_resp_free(&resp);
    abx_buf_free(&c.text);
}

static double cancel_at;
static int cancel_kind;

static int cancel_hook(void)
{
    return abx_http_now() >= cancel_at ? cancel_kind : 0;
}

static void test_timeouts(void)
{
    struct abx_http_req r = {0};
    struct abx_err err;
    double t0 = abx_http_now();

    r.url = u("/slow?s=3");
    r.timeout = 0.3;
    r.what = "slow call";
    int rc = abx_http_do(&r, NULL, &err);
    double t = abx_http_now() - t0;
    CHECK_LOG(rc == -1 && err.cls == ABX_E_TIMEOUT && strstr(err.message, "slow call"),
              "timeout 0.3 s: Timeout after %.2f s (%s)", t, err.message);

    r.timeout = 0;
    r.stall_timeout = 1;
    t0 = abx_http_now();
    rc = abx_http_do(&r, NULL, &err);
    t = abx_http_now() - t0;
    CHECK_LOG(rc == -1 && err.cls == ABX_E_TIMEOUT && t < 2.8,
              "stall_timeout 1 s: Timeout after %.2f s (%s)", t, err.message);
    r.stall_timeout = 0;
    abx_http_set_cancel(cancel_hook);
    cancel_kind = 1;
    cancel_at = abx_http_now() + 0.3;
    t0 = abx_http_now();
    rc = abx_http_do(&r, NULL, &err);
    t = abx_http_now() - t0;
    CHECK_LOG(rc == -1 && err.cls == ABX_E_CANCELED && t < 1.5,
              "cancel hook: Canceled after %.2f s (%s)", t, err.message);
    cancel_kind = 2;
    cancel_at = abx_http_now() + 0.2;
    rc = abx_http_do(&r, NULL, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_TIMEOUT && strstr(err.message, "deadline"),
              "cancel hook 2: Timeout (%s)", err.message);
    abx_http_set_cancel(NULL);
}

static void test_async(void)
{
    struct abx_http_xfer *x[4];
    struct abx_http_req r = {0};
    struct abx_err err;
    struct abx_http_resp resp;
    double t0 = abx_http_now();

    r.url = u("/slow?s=1");
    for (int i = 0; i < 4; i++)
        x[i] = abx_http_start(&r, &err);
    int ok = 0;
    for (int i = 0; i < 4; i++) {
        if (x[i] == NULL)
            continue;
        abx_http_wait(x[i], 0, &err);
        abx_http_resp_init(&resp);
        ok += abx_http_finish(x[i], &resp, &err) == 0 && resp.status == 200;
        abx_http_resp_free(&resp);
    }
    double t = abx_http_now() - t0;
    printf("note: 4 concurrent 1 s requests took %.2f s\n", t);
    CHECK_LOG(ok == 4 && t < 3.5, "4 async transfers ran concurrently (%.2f s)", t);

    /* wait with a time limit, then finish aborts it. */
    r.url = u("/slow?s=2");
    struct abx_http_xfer *y = abx_http_start(&r, &err);
    int w = abx_http_wait(y, abx_http_now() + 0.2, &err);
    CHECK_LOG(w == 0 && !abx_http_done(y), "wait until: 0 while still running");
    CHECK_LOG(abx_http_pump(0.05) >= 1, "pump reports it running");
    int rc = abx_http_finish(y, NULL, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_CANCELED, "finish aborts a running transfer");
    CHECK_LOG(abx_http_finish(NULL, NULL, &err) == -1, "finish(NULL) is -1");

    r.url = u("/token");
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    CHECK_LOG(rc == 0 && strcmp(resp.next_token, "tok123") == 0 &&
                  strcmp(resp.content_type, "application/x-test") == 0,
              "X-Next-Token and Content-Type captured ('%s', '%s')",
              resp.next_token, resp.content_type);
    abx_http_resp_free(&resp);
}

/* collect_headers: every reply header, final response only, capped;
 * off by default; request headers never appear. */
static void test_headers(void)
{
    static const char *const hdrs[] = {"X-Req-Secret: not-in-reply", NULL};
    struct abx_http_req r = {0};
    struct abx_http_resp resp;
    struct abx_err err;
    int rc;

    r.url = u("/headers");
    r.headers = hdrs;
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    CHECK_LOG(rc == 0 && resp.headers.len == 0, "headers not collected unless asked");
    abx_http_resp_free(&resp);

    r.collect_headers = 1;
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    const char *h = abx_buf_cstr(&resp.headers);
    CHECK_LOG(rc == 0 && strstr(h, "content-type: text/x-h\n") &&
                  strstr(h, "x-multi: one\nset-cookie: a=1\nx-multi: two\n") &&
                  strstr(h, "x-req-seen: not-in-reply\n") &&
                  strstr(h, "content-length: 2\n") && !strstr(h, "X-") &&
                  !strstr(h, "x-req-secret") && strncmp(h, "HTTP/", 5) != 0 &&
                  !strstr(h, "\nHTTP/"),
              "reply headers collected in order, names lower-case: [%s]", h);
    abx_http_resp_free(&resp);

    /* Retried 503s: only the final response's headers are kept. */
    r.url = u("/flaky?k=hdr");
    r.headers = NULL;
    r.idempotent = 1;
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    h = abx_buf_cstr(&resp.headers);
    CHECK_LOG(rc == 0 && resp.status == 200 && resp.attempts == 3 &&
                  strstr(h, "x-attempt: 3\n") && !strstr(h, "x-attempt: 1") &&
                  !strstr(h, "x-attempt: 2"),
              "after retries only the last reply's headers: [%s]", h);
    abx_http_resp_free(&resp);

    r.url = u("/bigheaders");
    r.idempotent = 0;
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_PROTOCOL && strstr(err.message, "65536-byte cap"),
              "headers over the cap: Protocol error naming it (%s)", rc ? err.message : "no error");
    abx_http_resp_free(&resp);
    r.collect_headers = 0;
    abx_http_resp_init(&resp);
    rc = abx_http_do(&r, &resp, &err);
    CHECK_LOG(rc == 0 && resp.status == 200, "the same reply without collection is fine");
    abx_http_resp_free(&resp);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    snprintf(base, sizeof base, "%s", drv_env("ABX_FAKE_URL"));
    struct abx_http_cfg cfg = {.backoff_base = 0.05, .backoff_max = 0.2};
    abx_http_configure(&cfg);
    test_download();
    test_upload();
    test_retry();
    test_timeouts();
    test_async();
    test_headers();
    abx_http_shutdown();
    return CHECK_DONE();
}
