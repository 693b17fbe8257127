/* Against envd_fake.py: the real transport with replies abx-local does
 * not give: envelopes dripped in 1..7-byte chunks, a stream without an
 * end event, a first event that is not start, garbage, huge lengths,
 * connections cut mid-envelope, stalls, plain HTTP errors before a
 * stream, NDJSON dripped, cut or without its end. */
#include <stdlib.h>
#include <string.h>

#include "envd_test.h"
#include "http.h"

/* An endpoint whose sandbox id names the fake's behaviour. */
static void fake_ep(struct tctx *t, struct abx_endpoint *ep, const char *id,
                    int port)
{
    struct abx_sandbox_info i;
    struct abx_err err;

    memset(&i, 0, sizeof i);
    snprintf(i.sandbox_id, sizeof i.sandbox_id, "%s", id);
    if (abx_endpoint_init(ep, &t->p, &i, port, &err))
        fprintf(stderr, "endpoint %s: %s\n", id, err.message);
    ep->request_timeout = 10;
}

static struct abx_proc *start(struct tctx *t, struct abx_endpoint *ep,
                              const char *id, struct abx_err *err)
{
    const char *args[] = {"-c", "x", NULL};
    struct abx_proc_cfg cfg;

    fake_ep(t, ep, id, ABX_ENVD_PORT);
    memset(&cfg, 0, sizeof cfg);
    cfg.cmd = "/bin/bash";
    cfg.args = args;
    cfg.timeout = 30;
    return abx_proc_start(ep, &cfg, err);
}

static void streams(struct tctx *t)
{
    struct abx_endpoint ep;
    struct abx_proc *pr;
    struct abx_proc_event ev;
    struct run_result r;
    struct abx_err err;
    double t0;

    pr = start(t, &ep, "drip", &err);
    CHECK_OK(pr ? 0 : -1, &err);
    if (pr) {
        CHECK_INT(abx_proc_pid(pr), 812);
        run_result_init(&r);
        CHECK_OK(t_collect(pr, &r, 10, &err), &err);
        CHECK_STR(abx_buf_cstr(&r.out), "hi\n");
        CHECK_STR(abx_buf_cstr(&r.err), "err");
        CHECK_INT(r.exit_code, 0);
        CHECK_INT(r.exited, 1);
        run_result_free(&r);
        abx_proc_close(pr);
    }
    abx_endpoint_free(&ep);

    pr = start(t, &ep, "noend", &err);
    CHECK_OK(pr ? 0 : -1, &err);
    if (pr) {
        CHECK_INT(abx_proc_next(pr, &ev, 0, &err), 1);
        CHECK_INT(ev.type, ABX_PROC_STDOUT);
        CHECK_INT(abx_proc_next(pr, &ev, 0, &err), -1);
        CHECK_INT(err.cls, ABX_E_PROTOCOL);
        CHECK(strstr(err.message, "Command ended without an end event"));
        abx_proc_close(pr);
    }
    abx_endpoint_free(&ep);

    CHECK(start(t, &ep, "notstart", &err) == NULL);
    CHECK_INT(err.cls, ABX_E_PROTOCOL);
    CHECK(strstr(err.message, "expected a start event") != NULL);
    abx_endpoint_free(&ep);

    CHECK(start(t, &ep, "huge", &err) == NULL);
    CHECK_INT(err.cls, ABX_E_PROTOCOL);
    CHECK(strstr(err.message, "exceeds") != NULL);
    abx_endpoint_free(&ep);

    CHECK(start(t, &ep, "plain401", &err) == NULL);
    CHECK_INT(err.cls, ABX_E_AUTH);
    CHECK_INT(err.status, 401);
    abx_endpoint_free(&ep);

    pr = start(t, &ep, "garbage", &err);
    CHECK_OK(pr ? 0 : -1, &err);
    if (pr) {
        CHECK_INT(abx_proc_next(pr, &ev, 0, &err), -1);
        CHECK_INT(err.cls, ABX_E_PROTOCOL);
        abx_proc_close(pr);
    }
    abx_endpoint_free(&ep);

    pr = start(t, &ep, "enderr", &err);
    CHECK_OK(pr ? 0 : -1, &err);
    if (pr) {
        CHECK_INT(abx_proc_next(pr, &ev, 0, &err), -1);
        CHECK_INT(err.cls, ABX_E_TIMEOUT);
        CHECK_STR(err.code, "deadline_exceeded");
        abx_proc_close(pr);
    }
    abx_endpoint_free(&ep);

    pr = start(t, &ep, "cut", &err);
    CHECK_OK(pr ? 0 : -1, &err);
    if (pr) {
        CHECK_INT(abx_proc_next(pr, &ev, abx_http_now() + 10, &err), -1);
        CHECK_INT(err.cls, ABX_E_PROTOCOL);
        CHECK(strstr(err.message, "truncated") != NULL);
        abx_proc_close(pr);
    }
    abx_endpoint_free(&ep);

    /* A quiet stream: next gives 0 at `until`; close does not hang. */
    pr = start(t, &ep, "silent", &err);
    CHECK_OK(pr ? 0 : -1, &err);
    if (pr) {
        t0 = abx_http_now();
        CHECK_INT(abx_proc_next(pr, &ev, t0 + 0.3, &err), 0);
        CHECK(abx_http_now() - t0 < 2);
        abx_proc_close(pr);
    }
    abx_endpoint_free(&ep);

    /* No start event within the request timeout. */
    fake_ep(t, &ep, "stall", ABX_ENVD_PORT);
    ep.request_timeout = 1;
    {
        const char *args[] = {"-c", "x", NULL};
        struct abx_proc_cfg cfg;

        memset(&cfg, 0, sizeof cfg);
        cfg.cmd = "/bin/bash";
        cfg.args = args;
        t0 = abx_http_now();
        CHECK(abx_proc_start(&ep, &cfg, &err) == NULL);
        CHECK_INT(err.cls, ABX_E_TIMEOUT);
        CHECK(abx_http_now() - t0 < 2.5);
    }
    abx_endpoint_free(&ep);
}

static void watch_and_unary(struct tctx *t)
{
    struct abx_endpoint ep;
    struct abx_watch *w;
    struct abx_fs_event fe;
    struct abx_err err;
    cJSON *e = NULL;
    double t0;

    fake_ep(t, &ep, "watch-drip", ABX_ENVD_PORT);
    w = abx_envd_watch(&ep, "/d", 0, NULL, 10, &err);
    CHECK_OK(w ? 0 : -1, &err);
    if (w) {
        CHECK_INT(abx_watch_next(w, &fe, 0, &err), 1);
        CHECK_STR(fe.name, "a.txt");
        CHECK_STR(fe.type, "create");
        CHECK_INT(abx_watch_next(w, &fe, 0, &err), -1);
        CHECK_STR(err.code, "ended");
        abx_watch_close(w);
    }
    abx_endpoint_free(&ep);

    fake_ep(t, &ep, "badjson", ABX_ENVD_PORT);
    CHECK_ERR(abx_envd_stat(&ep, "/x", NULL, &e, &err), &err,
              ABX_E_PROTOCOL);
    abx_endpoint_free(&ep);
    fake_ep(t, &ep, "notfound", ABX_ENVD_PORT);
    CHECK_ERR(abx_envd_stat(&ep, "/x", NULL, &e, &err), &err,
              ABX_E_NOT_FOUND);
    CHECK_INT(abx_envd_exists(&ep, "/x", NULL, &err), 0);
    abx_endpoint_free(&ep);
    fake_ep(t, &ep, "proxy502", ABX_ENVD_PORT);
    CHECK_ERR(abx_envd_stat(&ep, "/x", NULL, &e, &err), &err,
              ABX_E_TIMEOUT);
    abx_endpoint_free(&ep);
    fake_ep(t, &ep, "slow", ABX_ENVD_PORT);
    ep.request_timeout = 1;
    t0 = abx_http_now();
    CHECK_ERR(abx_envd_stat(&ep, "/x", NULL, &e, &err), &err,
              ABX_E_TIMEOUT);
    CHECK(abx_http_now() - t0 < 2.5);
    abx_endpoint_free(&ep);
}

static void executes(struct tctx *t)
{
    static const struct {
        const char *id;
        enum abx_errclass cls;
        const char *msg;
    } bad[] = {
        {"exec-noend", ABX_E_PROTOCOL, "truncated"},
        {"exec-cut", ABX_E_PROTOCOL, "truncated"},
        {"exec-badline", ABX_E_PROTOCOL, "malformed"},
        {"exec-404", ABX_E_NOT_FOUND, "Context abc not found"},
        {"exec-502", ABX_E_TIMEOUT, "502"},
        {"exec-500", ABX_E_SANDBOX, "500: Internal Server Error"},
    };
    struct abx_endpoint ep;
    struct abx_exec_opts o;
    struct abx_err err;
    cJSON *out = NULL;
    size_t i;

    memset(&o, 0, sizeof o);
    o.code = "1 + 1";
    o.timeout = 10;
    fake_ep(t, &ep, "exec-drip", ABX_CODE_PORT);
    CHECK_OK(abx_code_execute(&ep, &o, &out, &err), &err);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(
                  cJSON_GetArrayItem(cJSON_GetObjectItem(out, "results"), 0),
                  "text")), "2");
    CHECK_INT(cJSON_GetObjectItem(out, "execution_count")->valueint, 1);
    cJSON_Delete(out);
    abx_endpoint_free(&ep);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fake_ep(t, &ep, bad[i].id, ABX_CODE_PORT);
        CHECK_ERR(abx_code_execute(&ep, &o, &out, &err), &err, bad[i].cls);
        CHECK_MSG(strstr(err.message, bad[i].msg) != NULL,
                  "%s: message '%s' lacks '%s'", bad[i].id, err.message,
                  bad[i].msg);
        abx_endpoint_free(&ep);
    }
}

int scenario_fake(struct tctx *t)
{
    streams(t);
    watch_and_unary(t);
    executes(t);
    return 0;
}
