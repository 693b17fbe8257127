/* Driver entry: `envd_client_test <scenario>` against the abx-local named
 * by E2B_API_URL / E2B_SANDBOX_URL / E2B_DOMAIN / E2B_API_KEY. Creates
 * the scenario's sandbox with the control-plane client, runs the checks,
 * kills it. Exit 0 when every check passed. */
#include <stdlib.h>
#include <string.h>

/* This file holds the check counters all the driver's files share. */
#define CHECK_DEFINE_COUNTERS
#include "envd_test.h"
#include "http.h"

static const char *env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v && v[0] ? v : def;
}

int t_setup(struct tctx *t, const char *tmpl, int secure)
{
    struct abx_create_opts o;
    struct abx_err err;
    char msg[256];

    memset(t, 0, sizeof *t);
    if (abx_platform_init(&t->p, env_or("E2B_API_KEY", ""),
                          env_or("E2B_API_URL", ""),
                          env_or("E2B_DOMAIN", ""),
                          env_or("E2B_SANDBOX_URL", ""), msg, sizeof msg) ||
        abx_platform_init(&t->p_host, env_or("E2B_API_KEY", ""),
                          env_or("E2B_API_URL", ""),
                          env_or("E2B_DOMAIN", ""), "", msg, sizeof msg)) {
        fprintf(stderr, "platform: %s\n", msg);
        return -1;
    }
    if (!tmpl)
        return 0;   /* a fake server: no control plane */
    memset(&o, 0, sizeof o);
    o.template_id = tmpl;
    o.timeout = 600;
    o.secure = secure;
    o.allow_internet = -1;
    if (abx_api_create(&t->p, &o, &t->info, &err)) {
        fprintf(stderr, "create %s: %s: %s\n", tmpl,
                abx_errclass_name(err.cls), err.message);
        return -1;
    }
    t->have_sandbox = 1;
    if (abx_endpoint_init(&t->ep, &t->p, &t->info, ABX_ENVD_PORT, &err) ||
        abx_endpoint_init(&t->ep_host, &t->p_host, &t->info, ABX_ENVD_PORT,
                          &err)) {
        fprintf(stderr, "endpoint: %s\n", err.message);
        return -1;
    }
    return 0;
}

void t_teardown(struct tctx *t)
{
    struct abx_err err;

    abx_endpoint_free(&t->ep);
    abx_endpoint_free(&t->ep_host);
    if (t->have_sandbox &&
        abx_api_kill(&t->p, t->info.sandbox_id, &err) < 0)
        fprintf(stderr, "kill: %s\n", err.message);
    abx_sandbox_info_free(&t->info);
}

void run_result_init(struct run_result *r)
{
    memset(r, 0, sizeof *r);
    abx_buf_init(&r->out, 64 * 1024 * 1024);
    abx_buf_init(&r->err, 64 * 1024 * 1024);
}

void run_result_free(struct run_result *r)
{
    abx_buf_free(&r->out);
    abx_buf_free(&r->err);
}

int t_collect(struct abx_proc *pr, struct run_result *r, double max_s,
              struct abx_err *err)
{
    double until = abx_http_now() + max_s;
    struct abx_proc_event ev;
    int rc;

    for (;;) {
        rc = abx_proc_next(pr, &ev, until, err);
        if (rc == 0) {
            abx_err_set(err, ABX_E_TIMEOUT, 0, "", "test: no end in %.0f s",
                        max_s);
            return -1;
        }
        if (rc < 0)
            return -1;
        if (ev.type == ABX_PROC_STDOUT || ev.type == ABX_PROC_PTY)
            MUST(abx_buf_append(&r->out, ev.data, ev.len));
        else if (ev.type == ABX_PROC_STDERR)
            MUST(abx_buf_append(&r->err, ev.data, ev.len));
        else if (ev.type == ABX_PROC_END) {
            r->got_end = 1;
            r->exit_code = ev.exit_code;
            r->exited = ev.exited;
            memcpy(r->status, ev.status, sizeof r->status);
            memcpy(r->error, ev.error, sizeof r->error);
            return 0;
        }
    }
}

int t_run(const struct abx_endpoint *ep, const char *cmd, const char *user,
          const char *cwd, double timeout, struct run_result *r,
          struct abx_err *err)
{
    const char *args[] = {"-l", "-c", cmd, NULL};
    struct abx_proc_cfg cfg;
    struct abx_proc *pr;
    int rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.cmd = "/bin/bash";
    cfg.args = args;
    cfg.user = user;
    cfg.cwd = cwd;
    cfg.timeout = timeout;
    pr = abx_proc_start(ep, &cfg, err);
    if (!pr)
        return -1;
    rc = t_collect(pr, r, 120, err);
    abx_proc_close(pr);
    return rc;
}

int t_faults(const struct tctx *t, const char *json)
{
    struct abx_http_req req;
    struct abx_http_resp resp;
    struct abx_buf url, key;
    struct abx_err err;
    const char *hdr[3];
    int rc = -1;

    abx_buf_init(&url, 0);
    abx_buf_init(&key, 0);
    abx_http_resp_init(&resp);
    MUST(abx_buf_appendf(&url, "%s/admin/faults", t->p.api_url));
    MUST(abx_buf_appendf(&key, "X-API-KEY: %s", t->p.api_key));
    hdr[0] = key.data;
    hdr[1] = "Content-Type: application/json";
    hdr[2] = NULL;
    memset(&req, 0, sizeof req);
    req.method = "POST";
    req.url = url.data;
    req.headers = hdr;
    req.body = json;
    req.body_len = strlen(json);
    req.timeout = 30;
    req.what = "set faults";
    if (abx_http_do(&req, &resp, &err) == 0 && resp.status == 200)
        rc = 0;
    else
        fprintf(stderr, "faults: status %ld\n", resp.status);
    abx_http_resp_free(&resp);
    abx_buf_free(&url);
    abx_buf_free(&key);
    return rc;
}

static const struct {
    const char *name, *tmpl;
    int secure;
    int (*fn)(struct tctx *);
} scenarios[] = {
    {"process", "base", 1, scenario_process},
    {"files", "base", 1, scenario_files},
    {"fs", "base", 0, scenario_fs},
    {"watch", "base", 1, scenario_watch},
    {"signed", "base", 1, scenario_signed},
    {"faults", "code-interpreter-v1", 1, scenario_faults},
    {"code", "code-interpreter-v1", 0, scenario_code},
    {"fake", NULL, 0, scenario_fake},
    {"gates", NULL, 0, scenario_gates},
};

int main(int argc, char **argv)
{
    struct tctx t;
    size_t i;
    int found = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: %s <scenario>\n", argv[0]);
        return 2;
    }
    for (i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        if (strcmp(argv[1], scenarios[i].name) != 0)
            continue;
        found = 1;
        if (t_setup(&t, scenarios[i].tmpl, scenarios[i].secure) == 0)
            scenarios[i].fn(&t);
        else
            CHECK_MSG(0, "%s: no sandbox to test with", argv[1]);
        t_teardown(&t);
    }
    abx_http_shutdown();
    if (!found) {
        fprintf(stderr, "unknown scenario '%s'\n", argv[1]);
        return 2;
    }
    fprintf(stderr, "%s: ", argv[1]);
    return CHECK_DONE();
}
