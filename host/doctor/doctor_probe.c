/* `abx-e2e doctor`: what the suite will ask of its sandboxes, tried once.
 * In base's sandbox: the default user, home and working directory the
 * suite expects, the tools its commands run, and an upload of the size
 * its default run writes. Then a sandbox of each other template the suite
 * starts: the server template's server answers on E2E_SERVER_PORT and
 * sees an env given at create; code-interpreter-v1 runs code on 49999.
 * Each finding that would fail tests is a problem with its fix. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codeint.h"
#include "doctor_int.h"
#include "envd.h"
#include "http.h"
#include "random.h"
#include "track.h"

#define CMD_TIMEOUT 30.0     /* s for each command in a sandbox */
#define SERVER_WAIT 60.0     /* s: as the server_sandbox fixture waits */
#define CODE_WAIT 60.0       /* s for the code interpreter's first answer */
#define UPLOAD_BYTES (10L << 20) /* the default run's largest write */
#define UPLOAD_PATH "/tmp/abx-doctor-upload.bin"
#define PROBE_ENV "ABX_DOCTOR_PROBE"
/* What the suite's commands run in base (tests-lua/): a template without
 * one fails those tests. */
#define BASE_TOOLS "bash cat chmod date env head id ln ls mkdir od perl printenv rm setsid " \
                   "sha256sum sleep tail whoami"

int abx_doc_run(const struct abx_endpoint *ep, const char *cmd, char *out, size_t outlen,
                int *exit_code, struct abx_err *err)
{
    const char *args[] = {"-l", "-c", cmd, NULL};
    struct abx_proc_cfg cfg;
    struct abx_proc *pr;
    double until = abx_http_now() + CMD_TIMEOUT;
    size_t n = 0;
    int rc = -1;

    memset(&cfg, 0, sizeof cfg);
    cfg.cmd = "/bin/bash";
    cfg.args = args;
    cfg.timeout = CMD_TIMEOUT;
    out[0] = '\0';
    if (!(pr = abx_proc_start(ep, &cfg, err)))
        return -1;
    for (;;) {
        struct abx_proc_event ev;
        int r = abx_proc_next(pr, &ev, until, err);

        if (r == 0)
            abx_err_set(err, ABX_E_TIMEOUT, 0, "", "`%s` did not end within %.0f s", cmd,
                        CMD_TIMEOUT);
        if (r <= 0)
            break;
        if (ev.type == ABX_PROC_STDOUT && n + 1 < outlen) {
            size_t k = ev.len < outlen - 1 - n ? ev.len : outlen - 1 - n;
            memcpy(out + n, ev.data, k);
            out[n += k] = '\0';
        } else if (ev.type == ABX_PROC_END) {
            *exit_code = ev.exit_code;
            rc = 0;
            break;
        }
    }
    abx_proc_close(pr);
    return rc;
}

/* The next line of *s (cut at '\n'), advancing *s. */
static const char *next_line(char **s)
{
    char *l = *s, *nl = strchr(l, '\n');

    if (nl) {
        *nl = '\0';
        *s = nl + 1;
    } else {
        *s = l + strlen(l);
    }
    return l;
}

static void user_home_cwd(struct abx_doc *d, cJSON *sec, const struct abx_endpoint *ep)
{
    const char *want_user = d->o->default_user;
    char home[128], out[1024], *p = out;
    const char *user, *h, *cwd;
    struct abx_err err;
    int code = -1;

    /* sandbox.default_home's rule (bindings/sdk/lua_sandbox.c). */
    if (strcmp(want_user, "root") == 0)
        snprintf(home, sizeof home, "/root");
    else
        snprintf(home, sizeof home, "/home/%s", want_user);
    abx_err_clear(&err);
    if (abx_doc_run(ep, "id -un; printf '%s\\n' \"$HOME\"; pwd", out, sizeof out, &code,
                    &err) != 0 || code != 0) {
        abx_doc_problem(d, "check that base runs bash commands as its default user",
                        "cannot read the default user, home and cwd: %s",
                        err.message[0] ? err.message : "non-zero exit");
        return;
    }
    user = next_line(&p);
    h = next_line(&p);
    cwd = next_line(&p);
    abx_doc_str(sec, "defaultUser", user);
    abx_doc_str(sec, "home", h);
    abx_doc_str(sec, "cwd", cwd);
    abx_doc_line(d, "default user %s, home %s, cwd %s", user, h, cwd);
    /* The suite reads who the default user is (the platform's to choose);
     * it holds the platform to that user starting in its own home. */
    if (strcmp(cwd, h) != 0)
        abx_doc_problem(d, "use a template whose default user starts in its home, as E2B's "
                        "templates do",
                        "commands start in %s, not in the default user's home %s", cwd, h);
    else if (strcmp(user, want_user) != 0 || strcmp(h, home) != 0)
        abx_doc_warn(d, "commands run as %s (home %s), not as %s (E2E_DEFAULT_USER): set "
                     "E2E_DEFAULT_USER=%.64s, which the tests that name the default user's "
                     "home use", user, h, want_user, user);
}

static void base_tools(struct abx_doc *d, cJSON *sec, const struct abx_endpoint *ep)
{
    char out[512];
    struct abx_err err;
    int code = -1;

    abx_err_clear(&err);
    if (abx_doc_run(ep, "for t in " BASE_TOOLS "; do command -v \"$t\" >/dev/null || "
                        "printf '%s ' \"$t\"; done",
                    out, sizeof out, &code, &err) != 0) {
        abx_doc_problem(d, "check the data plane", "cannot look for base's tools: %s",
                        err.message);
        return;
    }
    cJSON_AddStringToObject(sec, "missingTools", out);
    if (out[0] == '\0') {
        abx_doc_line(d, "the tools the suite runs in base: all present");
        return;
    }
    abx_doc_problem(d, "use E2B's base template (or add them to it): the tests that run them "
                    "fail",
                    "base lacks tools the suite runs: %s", out);
}

static void upload(struct abx_doc *d, cJSON *sec, const struct abx_endpoint *ep)
{
    char *data = malloc(UPLOAD_BYTES), out[128];
    struct abx_err err;
    double t0 = abx_http_now();
    int code = -1, ok = 0;

    abx_err_clear(&err);
    if (!data) {
        abx_doc_warn(d, "upload not tried: out of memory");
        return;
    }
    for (long i = 0; i < UPLOAD_BYTES; i++)
        data[i] = (char)(i * 131 >> 3);
    if (abx_envd_write(ep, UPLOAD_PATH, NULL, data, UPLOAD_BYTES, NULL, &err) == 0 &&
        abx_doc_run(ep, "stat -c %s " UPLOAD_PATH "; rm -f " UPLOAD_PATH, out, sizeof out, &code,
                    &err) == 0)
        ok = code == 0 && strtol(out, NULL, 10) == UPLOAD_BYTES;
    free(data);
    cJSON_AddBoolToObject(sec, "upload", ok);
    if (ok) {
        abx_doc_line(d, "upload of %ld MiB: ok in %.2f s", UPLOAD_BYTES >> 20,
                     abx_http_now() - t0);
        return;
    }
    abx_doc_problem(d, "lift the body-size limit of whatever sits in front of the data plane "
                    "(a proxy's client_max_body_size): the suite writes files of 10 MiB, "
                    "100 MiB with -m e2e_slow",
                    "an upload of %ld MiB failed: %s", UPLOAD_BYTES >> 20,
                    err.message[0] ? err.message : out);
}

void abx_doc_probe_base(struct abx_doc *d, cJSON *sec, const struct abx_endpoint *ep)
{
    user_home_cwd(d, sec, ep);
    base_tools(d, sec, ep);
    upload(d, sec, ep);
}

/* GET path on the sandbox's port (no envd token: a user's service). */
static int port_get(const struct abx_doc *d, const struct abx_tracked *t, long port,
                    const char *path, struct abx_http_resp *resp, struct abx_err *err)
{
    struct abx_endpoint ep;
    struct abx_headers hb;
    struct abx_http_req req;
    char url[sizeof ep.base_url + 256];
    char *token;
    int rc = -1;

    memset(&hb, 0, sizeof hb);
    if (abx_endpoint_init(&ep, d->cfg->lua.platform, &t->info, (int)port, err) != 0)
        return -1;
    token = ep.access_token;
    ep.access_token = NULL;
    if (abx_headers_build(&hb, &ep, NULL, NULL) != 0) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "a header is too long");
        goto out;
    }
    snprintf(url, sizeof url, "%s%s", ep.base_url, path);
    memset(&req, 0, sizeof req);
    req.url = url;
    req.headers = (const char *const *)hb.lines;
    req.timeout = 10;
    req.max_body = 1u << 20;
    req.what = "doctor: sandbox http";
    rc = abx_http_do(&req, resp, err);
out:
    abx_headers_free(&hb);
    ep.access_token = token;
    abx_endpoint_free(&ep);
    return rc;
}

/* A sandbox of tmpl for this probe, tracked like the suite's; NULL (and a
 * problem) when it cannot be created. */
static struct abx_tracked *create(struct abx_doc *d, uint64_t group, const char *tmpl,
                                  const cJSON *envs)
{
    struct abx_create_opts co;
    struct abx_tracked *t;
    struct abx_err err;

    memset(&co, 0, sizeof co);
    co.template_id = tmpl;
    co.timeout = ABX_DOC_SANDBOX_TIMEOUT;
    co.secure = 1;
    co.allow_internet = -1;
    co.envs = envs;
    t = abx_track_create(group, d->tag_test_id, &co, &err);
    if (!t)
        abx_doc_problem(d, "read the platform's message: quota, region, the template",
                        "cannot create a sandbox of %s: %s", tmpl, err.message);
    return t;
}

static void server_template(struct abx_doc *d, cJSON *sec, uint64_t group)
{
    cJSON *o = cJSON_AddObjectToObject(sec, "server"), *envs = cJSON_CreateObject();
    char val[24], out[64], fix[256];
    struct abx_endpoint ep;
    struct abx_http_resp r;
    struct abx_tracked *t = NULL;
    struct abx_err err;
    double t0 = abx_http_now(), until = t0 + SERVER_WAIT;
    int up = 0, seen, code = -1;

    memset(&ep, 0, sizeof ep);
    abx_http_resp_init(&r);
    if (abx_random_hex(val, 8) != 0) {   /* 16 hex digits */
        abx_doc_problem(d, "check the kernel's random source (getrandom)",
                        "no random bytes for the server probe: %s", strerror(errno));
        goto out;
    }
    if (!envs || !cJSON_AddStringToObject(envs, PROBE_ENV, val) ||
        !(t = create(d, group, d->o->server_template, envs)))
        goto out;
    /* Any answer of the server itself; 502-504 are the proxy's while the
     * port is not open yet (as the server_sandbox fixture waits). */
    while (!up && abx_http_now() < until && !abx_http_check_cancel(&err)) {
        abx_http_resp_free(&r);
        abx_http_resp_init(&r);
        up = port_get(d, t, d->o->server_port, "/", &r, &err) == 0 && r.status != 502 &&
             r.status != 503 && r.status != 504;
        if (!up && abx_http_sleep(0.5, &err) != 0)
            break;
    }
    cJSON_AddBoolToObject(o, "answers", up);
    if (!up) {
        snprintf(fix, sizeof fix, "set E2E_SERVER_PORT to the port %.64s's server listens on "
                 "(8080 for python-hello), and check that the template starts it "
                 "(docs/fc-server-template.md)", d->o->server_template);
        abx_doc_problem(d, fix, "the server in %s did not answer GET / on port %ld within "
                        "%.0f s: test_06 fails", d->o->server_template, d->o->server_port,
                        SERVER_WAIT);
        goto out;
    }
    abx_doc_line(d, "server template %s: its server answers on port %ld (%.2f s after the "
                 "create)", d->o->server_template, d->o->server_port, abx_http_now() - t0);
    /* A create's envs reach what envd starts there (test_06 starts a
     * server so), not the template's start command: E2B runs that as the
     * template is built. */
    if (abx_endpoint_init(&ep, d->cfg->lua.platform, &t->info, ABX_ENVD_PORT, &err) != 0 ||
        abx_doc_run(&ep, "printenv " PROBE_ENV, out, sizeof out, &code, &err) != 0) {
        abx_doc_warn(d, "envs given at create not checked: %s", err.message);
        goto out;
    }
    out[strcspn(out, "\n")] = '\0';
    seen = code == 0 && strcmp(out, val) == 0;
    cJSON_AddBoolToObject(o, "envReachesCommands", seen);
    if (seen)
        abx_doc_line(d, "an env given at create reaches a command in %s", d->o->server_template);
    else
        abx_doc_problem(d, "the platform must give a create's envVars to the processes envd "
                        "starts, as E2B does",
                        "an env given at create does not reach a command in %s: test_06's "
                        "env test fails", d->o->server_template);
out:
    abx_endpoint_free(&ep);
    cJSON_Delete(envs);
    abx_http_resp_free(&r);
    if (t)
        abx_track_kill(t, &err);
}

static void code_interpreter(struct abx_doc *d, cJSON *sec, uint64_t group)
{
    cJSON *o = cJSON_AddObjectToObject(sec, "codeInterpreter"), *res = NULL;
    struct abx_tracked *t = create(d, group, "code-interpreter-v1", NULL);
    struct abx_exec_opts xo;
    struct abx_endpoint ep;
    struct abx_err err;
    double t0 = abx_http_now(), until = t0 + CODE_WAIT;
    const cJSON *rs, *first, *text;
    int rc = -1, ok;

    memset(&ep, 0, sizeof ep);
    if (!t)
        return;
    memset(&xo, 0, sizeof xo);
    xo.code = "6 * 7";
    xo.timeout = CMD_TIMEOUT;
    if (abx_endpoint_init(&ep, d->cfg->lua.platform, &t->info, ABX_CODE_PORT, &err) == 0) {
        /* 502 (Timeout) while the interpreter starts. */
        while ((rc = abx_code_execute(&ep, &xo, &res, &err)) != 0 &&
               err.cls == ABX_E_TIMEOUT && abx_http_now() < until &&
               abx_http_sleep(0.5, &err) == 0)
            ;
    }
    rs = rc == 0 ? cJSON_GetObjectItemCaseSensitive(res, "results") : NULL;
    first = cJSON_GetArrayItem(rs, 0);
    text = cJSON_GetObjectItemCaseSensitive(first, "text");
    ok = cJSON_IsString(text) && strcmp(text->valuestring, "42") == 0;
    cJSON_AddBoolToObject(o, "runsCode", ok);
    if (ok)
        abx_doc_line(d, "code-interpreter-v1: `6 * 7` gives 42 on port %d (%.2f s after the "
                     "create)", ABX_CODE_PORT, abx_http_now() - t0);
    else
        abx_doc_problem(d, "check the template code-interpreter-v1: its code interpreter "
                        "serves POST /execute on port 49999",
                        "code-interpreter-v1 did not run `6 * 7`: %s",
                        rc != 0 ? err.message : "no result 42");
    cJSON_Delete(res);
    abx_endpoint_free(&ep);
    abx_track_kill(t, &err);
}

void abx_doc_probe_templates(struct abx_doc *d, cJSON *sec, uint64_t group)
{
    if (d->server != ABX_DOC_MISSING)
        server_template(d, sec, group);
    if (d->code != ABX_DOC_MISSING)
        code_interpreter(d, sec, group);
}
