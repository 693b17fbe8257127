/* Processes: run, exit codes, stderr, 5 MiB output, users, envs,
 * background start + stdin + close stdin + disconnect + Connect +
 * SIGKILL, List, Connect-Timeout-Ms, bad cwd, health. */
#include <stdlib.h>
#include <string.h>

#include "envd_test.h"
#include "http.h"

static void basics(struct tctx *t)
{
    struct run_result r;
    struct abx_err err;
    size_t i, bad = 0;
    int rc;

    run_result_init(&r);
    rc = t_run(&t->ep, "echo hello", NULL, NULL, 60, &r, &err);
    CHECK_OK(rc, &err);
    CHECK_STR(abx_buf_cstr(&r.out), "hello\n");
    CHECK_INT(r.exit_code, 0);     /* exitCode absent on the wire */
    CHECK_INT(r.exited, 1);
    CHECK_STR(r.status, "exit status 0");
    CHECK_STR(r.error, "");
    run_result_free(&r);

    run_result_init(&r);
    rc = t_run(&t->ep, "echo out; echo err >&2; exit 3", NULL, NULL, 60, &r,
               &err);
    CHECK_OK(rc, &err);
    CHECK_STR(abx_buf_cstr(&r.out), "out\n");
    CHECK_STR(abx_buf_cstr(&r.err), "err\n");
    CHECK_INT(r.exit_code, 3);
    CHECK_STR(r.error, "exit status 3");
    run_result_free(&r);

    /* 5 MiB of output, arriving in many envelopes. */
    run_result_init(&r);
    rc = t_run(&t->ep, "head -c 5242880 /dev/zero | tr '\\0' a", NULL, NULL,
               120, &r, &err);
    CHECK_OK(rc, &err);
    CHECK_INT(r.out.len, 5242880);
    for (i = 0; i < r.out.len; i++)
        bad += r.out.data[i] != 'a';
    CHECK_INT(bad, 0);
    run_result_free(&r);

    /* Users (Basic auth), envs, cwd. */
    run_result_init(&r);
    rc = t_run(&t->ep, "whoami; pwd", "root", "/tmp", 60, &r, &err);
    CHECK_OK(rc, &err);
    CHECK_STR(abx_buf_cstr(&r.out), "root\n/tmp\n");
    run_result_free(&r);
    run_result_init(&r);
    rc = t_run(&t->ep, "whoami; pwd", NULL, NULL, 0, &r, &err);
    CHECK_OK(rc, &err);
    CHECK_STR(abx_buf_cstr(&r.out), "user\n/home/user\n");
    run_result_free(&r);

    /* The same through the <port>-<id>.<domain> host form. */
    run_result_init(&r);
    rc = t_run(&t->ep_host, "echo via-host", NULL, NULL, 60, &r, &err);
    CHECK_OK(rc, &err);
    CHECK_STR(abx_buf_cstr(&r.out), "via-host\n");
    run_result_free(&r);
}

static void envs_and_errors(struct tctx *t)
{
    const char *args[] = {"-l", "-c", "echo \"$FOO-$E2B_SANDBOX\"", NULL};
    struct abx_proc_cfg cfg;
    struct abx_proc *pr;
    struct run_result r;
    struct abx_err err;
    cJSON *envs = cJSON_CreateObject();
    double t0;
    int rc;

    cJSON_AddStringToObject(envs, "FOO", "bar baz");
    memset(&cfg, 0, sizeof cfg);
    cfg.cmd = "/bin/bash";
    cfg.args = args;
    cfg.envs = envs;
    cfg.timeout = 60;
    run_result_init(&r);
    pr = abx_proc_start(&t->ep, &cfg, &err);
    CHECK_OK(pr ? 0 : -1, &err);
    if (pr) {
        CHECK(abx_proc_pid(pr) > 0);
        rc = t_collect(pr, &r, 60, &err);
        CHECK_OK(rc, &err);
        CHECK_STR(abx_buf_cstr(&r.out), "bar baz-true\n");
        abx_proc_close(pr);
    }
    run_result_free(&r);
    cJSON_Delete(envs);

    /* Bad cwd: an end-of-stream invalid_argument. */
    run_result_init(&r);
    rc = t_run(&t->ep, "true", NULL, "/no/such/dir", 60, &r, &err);
    CHECK_ERR(rc, &err, ABX_E_INVALID);
    CHECK(strstr(err.message, "/no/such/dir") != NULL);
    run_result_free(&r);

    /* Unknown user: unauthenticated. */
    run_result_init(&r);
    rc = t_run(&t->ep, "true", "nobody-here", NULL, 60, &r, &err);
    CHECK_ERR(rc, &err, ABX_E_AUTH);
    run_result_free(&r);

    /* Connect-Timeout-Ms bounds the process: Timeout class, soon. */
    run_result_init(&r);
    t0 = abx_http_now();
    rc = t_run(&t->ep, "sleep 30", NULL, NULL, 1, &r, &err);
    CHECK_ERR(rc, &err, ABX_E_TIMEOUT);
    CHECK(abx_http_now() - t0 < 20);
    printf("timeout after %.2f s: %s\n", abx_http_now() - t0, err.message);
    run_result_free(&r);
}

static int list_has(const cJSON *procs, uint32_t pid, const char *tag)
{
    const cJSON *p;

    cJSON_ArrayForEach(p, procs) {
        const cJSON *jp = cJSON_GetObjectItem(p, "pid");
        const cJSON *jt = cJSON_GetObjectItem(p, "tag");
        if (cJSON_IsNumber(jp) && (uint32_t)jp->valuedouble == pid)
            return !tag || (cJSON_IsString(jt) &&
                            strcmp(jt->valuestring, tag) == 0);
    }
    return 0;
}

static void background(struct tctx *t)
{
    const char *args[] = {"-l", "-c", "cat > /tmp/stdin.txt; echo got; "
                                      "sleep 100", NULL};
    struct abx_proc_cfg cfg;
    struct abx_proc *pr, *pr2;
    struct abx_proc_event ev;
    struct run_result r;
    struct abx_err err;
    struct abx_buf file;
    cJSON *procs = NULL;
    uint32_t pid;
    int rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.cmd = "/bin/bash";
    cfg.args = args;
    cfg.stdin_open = 1;
    cfg.tag = "bg-tag";
    cfg.timeout = 120;
    pr = abx_proc_start(&t->ep, &cfg, &err);
    CHECK_OK(pr ? 0 : -1, &err);
    if (!pr)
        return;
    pid = abx_proc_pid(pr);
    CHECK_OK(abx_envd_send_stdin(&t->ep, pid, "ping\n", 5, &err), &err);
    CHECK_OK(abx_envd_send_stdin(&t->ep, pid, "", 0, &err), &err);
    CHECK_OK(abx_envd_close_stdin(&t->ep, pid, &err), &err);
    /* "got" once cat saw the end of its input. */
    rc = abx_proc_next(pr, &ev, abx_http_now() + 30, &err);
    CHECK_INT(rc, 1);
    CHECK_INT(ev.type, ABX_PROC_STDOUT);
    CHECK(ev.len == 4 && memcmp(ev.data, "got\n", 4) == 0);
    /* Nothing more for a while: next times out with 0. */
    CHECK_INT(abx_proc_next(pr, &ev, abx_http_now() + 0.3, &err), 0);
    abx_proc_close(pr);     /* disconnect: the process keeps running */

    CHECK_OK(abx_envd_proc_list(&t->ep, &procs, &err), &err);
    CHECK(list_has(procs, pid, "bg-tag"));
    cJSON_Delete(procs);

    pr2 = abx_proc_connect(&t->ep, pid, 60, &err);
    CHECK_OK(pr2 ? 0 : -1, &err);
    if (pr2) {
        CHECK_INT(abx_proc_pid(pr2), pid);
        CHECK_INT(abx_envd_signal(&t->ep, pid, 9, &err), 1);
        run_result_init(&r);
        CHECK_OK(t_collect(pr2, &r, 30, &err), &err);
        CHECK_INT(r.exit_code, -1);
        CHECK_STR(r.status, "signal: killed");
        /* After the end: "ended". */
        CHECK_INT(abx_proc_next(pr2, &ev, 0, &err), -1);
        CHECK_STR(err.code, "ended");
        run_result_free(&r);
        abx_proc_close(pr2);
    }
    abx_proc_close(NULL);
    CHECK_INT(abx_envd_signal(&t->ep, pid, 9, &err), 0);
    CHECK_INT(abx_envd_signal(&t->ep, pid, 2, &err), -1);
    CHECK_INT(err.cls, ABX_E_INVALID);
    CHECK_ERR(abx_envd_send_stdin(&t->ep, pid, "x", 1, &err), &err,
              ABX_E_NOT_FOUND);
    CHECK(abx_proc_connect(&t->ep, pid + 100000, 5, &err) == NULL);
    CHECK_INT(err.cls, ABX_E_NOT_FOUND);

    CHECK_OK(abx_envd_proc_list(&t->ep, &procs, &err), &err);
    CHECK(procs && !list_has(procs, pid, NULL));
    cJSON_Delete(procs);

    abx_buf_init(&file, 0);
    CHECK_OK(abx_envd_read(&t->ep, "/tmp/stdin.txt", NULL, &file, &err),
             &err);
    CHECK_STR(abx_buf_cstr(&file), "ping\n");
    abx_buf_free(&file);
}

/* Two streams at once: events of one arrive while we wait on the other. */
static void concurrent(struct tctx *t)
{
    const char *a1[] = {"-l", "-c", "for i in 1 2 3; do echo a$i; sleep 0.2;"
                                    " done", NULL};
    const char *a2[] = {"-l", "-c", "sleep 0.3; echo b", NULL};
    struct abx_proc_cfg c1, c2;
    struct abx_proc *p1, *p2;
    struct run_result r1, r2;
    struct abx_err err;

    memset(&c1, 0, sizeof c1);
    c1.cmd = "/bin/bash";
    c1.args = a1;
    c1.timeout = 60;
    c2 = c1;
    c2.args = a2;
    p1 = abx_proc_start(&t->ep, &c1, &err);
    p2 = abx_proc_start(&t->ep, &c2, &err);
    CHECK(p1 && p2);
    run_result_init(&r1);
    run_result_init(&r2);
    if (p2)
        CHECK_OK(t_collect(p2, &r2, 30, &err), &err);
    if (p1)
        CHECK_OK(t_collect(p1, &r1, 30, &err), &err);
    CHECK_STR(abx_buf_cstr(&r1.out), "a1\na2\na3\n");
    CHECK_STR(abx_buf_cstr(&r2.out), "b\n");
    run_result_free(&r1);
    run_result_free(&r2);
    abx_proc_close(p1);
    abx_proc_close(p2);
}

static void health(struct tctx *t)
{
    struct abx_sandbox_info gone;
    struct abx_endpoint ep;
    struct abx_err err;

    CHECK_INT(abx_envd_health(&t->ep, &err), 1);
    CHECK_INT(abx_envd_health(&t->ep_host, &err), 1);
    memset(&gone, 0, sizeof gone);
    snprintf(gone.sandbox_id, sizeof gone.sandbox_id, "nosuchsandbox");
    if (abx_endpoint_init(&ep, &t->p, &gone, ABX_ENVD_PORT, &err) == 0) {
        CHECK_INT(abx_envd_health(&ep, &err), 0);
        abx_endpoint_free(&ep);
    }
}

int scenario_process(struct tctx *t)
{
    basics(t);
    envs_and_errors(t);
    background(t);
    concurrent(t);
    health(t);
    return 0;
}
