/* Code interpreter (template code-interpreter-v1): state across
 * executes, output callback, errors with tracebacks, contexts, timeout;
 * and dropped streams / data-plane errors through abx-local's faults. */
#include <stdlib.h>
#include <string.h>

#include "envd_test.h"
#include "http.h"

struct outs {
    struct abx_buf text;
    int n, stop_after;
};

static int on_output(void *ud, const char *stream, const char *text)
{
    struct outs *o = ud;

    MUST(abx_buf_appendf(&o->text, "%s:%s", stream, text));
    o->n++;
    return o->stop_after && o->n >= o->stop_after;
}

static int exec(const struct abx_endpoint *ep, const char *code,
                const char *ctx, double timeout, struct outs *o, cJSON **out,
                struct abx_err *err)
{
    struct abx_exec_opts opts;

    memset(&opts, 0, sizeof opts);
    opts.code = code;
    opts.context_id = ctx;
    opts.timeout = timeout;
    if (o) {
        opts.on_output = on_output;
        opts.ud = o;
    }
    return abx_code_execute(ep, &opts, out, err);
}

/* Text of the main result, or "". */
static const char *main_text(const cJSON *out)
{
    const cJSON *r;

    cJSON_ArrayForEach(r, cJSON_GetObjectItem(out, "results")) {
        if (cJSON_IsTrue(cJSON_GetObjectItem(r, "is_main_result")))
            return cJSON_GetStringValue(cJSON_GetObjectItem(r, "text"));
    }
    return "";
}

/* logs[stream] joined (static buffer: one use per expression). */
static const char *joined(const cJSON *out, const char *stream)
{
    static char buf[4096];
    const cJSON *l;
    size_t n = 0;

    buf[0] = '\0';
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(cJSON_GetObjectItem(out, "logs"),
                                              stream)) {
        const char *s = cJSON_GetStringValue(l);
        size_t k = s ? strlen(s) : 0;
        if (n + k >= sizeof buf)
            break;
        memcpy(buf + n, s, k);
        n += k;
        buf[n] = '\0';
    }
    return buf;
}

int scenario_code(struct tctx *t)
{
    struct abx_endpoint cep;
    struct abx_exec_opts opts;
    struct abx_err err;
    struct outs o;
    cJSON *out = NULL, *ctx = NULL;
    const cJSON *e;
    const char *id;

    if (abx_endpoint_init(&cep, &t->p, &t->info, ABX_CODE_PORT, &err)) {
        CHECK_OK(-1, &err);
        return -1;
    }
    CHECK_OK(exec(&cep, "x = 41", NULL, 60, NULL, &out, &err), &err);
    CHECK(cJSON_GetObjectItem(out, "error") == NULL);
    cJSON_Delete(out);
    CHECK_OK(exec(&cep, "x + 1", NULL, 60, NULL, &out, &err), &err);
    CHECK_STR(main_text(out), "42");
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(out, "execution_count")));
    cJSON_Delete(out);

    memset(&o, 0, sizeof o);
    abx_buf_init(&o.text, 0);
    CHECK_OK(exec(&cep, "import sys\nprint('hi')\nprint('oops', "
                        "file=sys.stderr)", NULL, 60, &o, &out, &err), &err);
    /* Lines may come in pieces: compare the joined text. */
    CHECK_STR(joined(out, "stdout"), "hi\n");
    CHECK_STR(joined(out, "stderr"), "oops\n");
    CHECK(strstr(abx_buf_cstr(&o.text), "stdout:hi") != NULL);
    CHECK(strstr(abx_buf_cstr(&o.text), "stderr:oops") != NULL);
    cJSON_Delete(out);

    /* A callback that asks to stop. */
    abx_buf_reset(&o.text);
    o.n = 0;
    o.stop_after = 1;
    CHECK_ERR(exec(&cep, "import time\nfor i in range(50):\n print(i, "
                         "flush=True)\n time.sleep(0.1)", NULL, 60, &o, &out,
                   &err), &err, ABX_E_CANCELED);
    abx_buf_free(&o.text);

    CHECK_OK(exec(&cep, "1/0", NULL, 60, NULL, &out, &err), &err);
    e = cJSON_GetObjectItem(out, "error");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")),
              "ZeroDivisionError");
    CHECK(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(e, "traceback"))
                     ?: "", "ZeroDivisionError") != NULL);
    cJSON_Delete(out);

    /* Contexts keep their own state. */
    CHECK_OK(abx_code_create_context(&cep, "python", NULL, &ctx, &err),
             &err);
    id = cJSON_GetStringValue(cJSON_GetObjectItem(ctx, "id"));
    if (id) {
        CHECK_OK(exec(&cep, "y = 5", id, 60, NULL, &out, &err), &err);
        cJSON_Delete(out);
        CHECK_OK(exec(&cep, "y * 2", id, 60, NULL, &out, &err), &err);
        CHECK_STR(main_text(out), "10");
        cJSON_Delete(out);
        CHECK_OK(exec(&cep, "y", NULL, 60, NULL, &out, &err), &err);
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(
                      cJSON_GetObjectItem(out, "error"), "name")),
                  "NameError");
        cJSON_Delete(out);
        CHECK_OK(abx_code_delete_context(&cep, id, &err), &err);
        CHECK_ERR(abx_code_delete_context(&cep, id, &err), &err,
                  ABX_E_NOT_FOUND);
        CHECK_ERR(exec(&cep, "1", id, 60, NULL, &out, &err), &err,
                  ABX_E_NOT_FOUND);
    }
    cJSON_Delete(ctx);

    memset(&opts, 0, sizeof opts);
    opts.code = "1";
    opts.language = "python";
    opts.context_id = "abc";
    CHECK_ERR(abx_code_execute(&cep, &opts, &out, &err), &err,
              ABX_E_INVALID);
    opts.context_id = NULL;
    opts.language = "Python ";
    CHECK_OK(abx_code_execute(&cep, &opts, &out, &err), &err);
    cJSON_Delete(out);

    CHECK_ERR(exec(&cep, "import time\ntime.sleep(20)", NULL, 1, NULL, &out,
                   &err), &err, ABX_E_TIMEOUT);
    abx_endpoint_free(&cep);
    return 0;
}

int scenario_faults(struct tctx *t)
{
    struct abx_endpoint cep;
    struct run_result r;
    struct abx_err err;
    struct abx_buf b;
    cJSON *out = NULL, *e = NULL;
    char big[200000];
    double t0;

    if (abx_endpoint_init(&cep, &t->p, &t->info, ABX_CODE_PORT, &err)) {
        CHECK_OK(-1, &err);
        return -1;
    }
    memset(big, 'z', sizeof big);
    CHECK_OK(abx_envd_write(&t->ep, "big.txt", NULL, big, sizeof big, NULL,
                            &err), &err);

    CHECK_INT(t_faults(t, "{\"dropStreamAfterBytes\": 3000}"), 0);
    run_result_init(&r);
    t0 = abx_http_now();
    CHECK_ERR(t_run(&t->ep, "head -c 200000 /dev/zero | tr '\\0' a", NULL,
                    NULL, 60, &r, &err), &err, ABX_E_PROTOCOL);
    CHECK(strstr(err.message, "truncated") != NULL);
    printf("dropped stream: %s (%.2f s)\n", err.message,
           abx_http_now() - t0);
    run_result_free(&r);
    CHECK_ERR(exec(&cep, "for i in range(3000): print(i)", NULL, 60, NULL,
                   &out, &err), &err, ABX_E_PROTOCOL);
    CHECK(strstr(err.message, "truncated") != NULL);
    abx_buf_init(&b, 0);
    CHECK(abx_envd_read(&t->ep, "big.txt", NULL, &b, &err) < 0);
    printf("dropped read: %s: %s\n", abx_errclass_name(err.cls), err.message);
    abx_buf_free(&b);

    /* Every data-plane request answered 503: retried, then Timeout
     * (unavailable); 429: RateLimit. */
    CHECK_INT(t_faults(t, "{\"dropStreamAfterBytes\": 0, "
                          "\"dataErrorRate\": 1.0, \"errorStatus\": 503}"),
              0);
    CHECK_ERR(abx_envd_stat(&t->ep, "big.txt", NULL, &e, &err), &err,
              ABX_E_TIMEOUT);
    CHECK_INT(t_faults(t, "{\"errorStatus\": 429}"), 0);
    CHECK_ERR(abx_envd_stat(&t->ep, "big.txt", NULL, &e, &err), &err,
              ABX_E_RATE_LIMIT);
    run_result_init(&r);
    CHECK_ERR(t_run(&t->ep, "true", NULL, NULL, 60, &r, &err), &err,
              ABX_E_RATE_LIMIT);
    run_result_free(&r);

    CHECK_INT(t_faults(t, "{\"dataErrorRate\": 0}"), 0);
    run_result_init(&r);
    CHECK_OK(t_run(&t->ep, "echo back", NULL, NULL, 60, &r, &err), &err);
    CHECK_STR(abx_buf_cstr(&r.out), "back\n");
    run_result_free(&r);
    abx_endpoint_free(&cep);
    return 0;
}
