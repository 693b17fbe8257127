/* Control-plane client against abx-local (or a fake server): one
 * scenario per run, named by argv[1]; prints ok/FAIL lines and exits 1 if
 * any check failed. Started by run_client.py, which sets E2B_API_URL,
 * E2B_API_KEY, E2B_DOMAIN, E2B_SANDBOX_URL (and ABX_FAKE_URL). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drv.h"
#include "out.h"

static char run_tag[32];

static cJSON *meta(const char *extra_k, const char *extra_v)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "suite", "client-test");
    cJSON_AddStringToObject(m, "run", run_tag);
    if (extra_k)
        cJSON_AddStringToObject(m, extra_k, extra_v);
    return m;
}

static int create(const struct abx_platform *p, const cJSON *m, int secure,
                  struct abx_sandbox_info *out, struct abx_err *err)
{
    struct abx_create_opts o = {0};
    o.template_id = "base";
    o.timeout = 120;
    o.secure = secure;
    o.allow_internet = 0;
    o.metadata = m;
    return abx_api_create(p, &o, out, err);
}

static size_t count_list(const struct abx_platform *p, const cJSON *m,
                         const char *state)
{
    struct abx_list_query q = {0};
    struct abx_list_page pg;
    struct abx_err err;
    q.metadata = m;
    q.state = state;
    if (abx_api_list_all(p, &q, 0, &pg, &err) != 0) {
        printf("note: list failed: %s\n", err.message);
        return (size_t)-1;
    }
    size_t n = pg.n;
    abx_list_page_free(&pg);
    return n;
}

/* ---- trace capture: --trace-http lines go to a temp file ---- */

static int trace_fd = -1;

static void trace_begin(void)
{
    char path[] = "/tmp/abx-client-trace-XXXXXX";
    trace_fd = mkstemp(path);
    unlink(path);
    struct abx_http_cfg c = {.trace = 1};
    abx_http_configure(&c);
    abx_out_set_fd(ABX_OUT_STDERR, trace_fd);
}

/* Stops capturing; returns how many lines contain needle. */
static int trace_end(const char *needle, const char *secret)
{
    char buf[65536];
    struct abx_http_cfg c = {.trace = 0};
    abx_out_flush();
    abx_out_set_fd(ABX_OUT_STDERR, -1);
    abx_http_configure(&c);
    ssize_t n = pread(trace_fd, buf, sizeof buf - 1, 0);
    close(trace_fd);
    trace_fd = -1;
    if (n < 0)
        return -1;
    buf[n] = '\0';
    if (secret && secret[0] && strstr(buf, secret))
        CHECK_LOG(0, "trace never shows the API key");
    int count = 0;
    for (char *line = buf, *nl; *line; line = nl) {
        nl = strchr(line, '\n');
        if (nl)
            *nl++ = '\0';
        else
            nl = line + strlen(line);
        printf("  trace: %s\n", line);
        count += strstr(line, needle) != NULL;
    }
    return count;
}

/* A child process that clears the faults after delay s. */
static pid_t clear_faults_later(const struct abx_platform *p, double delay)
{
    fflush(stdout);
    abx_out_flush();
    pid_t pid = fork();
    if (pid == 0) {
        abx_http_after_fork();
        abx_out_after_fork_child();
        struct abx_http_cfg c = {.trace = 0};
        abx_http_configure(&c);
        usleep((useconds_t)(delay * 1e6));
        _exit(drv_faults(p, "{\"errorRate\":0}") == 0 ? 0 : 1);
    }
    return pid;
}

static int reap(pid_t pid)
{
    int st = 0;
    if (pid <= 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- scenarios ---- */

static void scenario_basic(const struct abx_platform *p)
{
    struct abx_sandbox_info a, b, g, c;
    struct abx_err err;
    const char *weird = "a&b=c% d+\xc3\xa9";
    cJSON *ma = meta("weird", weird), *mb = meta("idx", "2");

    int rc = create(p, ma, 1, &a, &err);
    CHECK_LOG(rc == 0, "create secure sandbox (%s)", rc ? err.message : a.sandbox_id);
    if (rc != 0)
        goto out0;
    CHECK_LOG(a.sandbox_id[0] && a.envd_version[0] && a.envd_access_token,
              "create reply has id, envdVersion and an access token");
    rc = create(p, mb, 0, &b, &err);
    CHECK_LOG(rc == 0, "create plain sandbox (%s)", rc ? err.message : b.sandbox_id);
    if (rc != 0)
        goto out1;
    CHECK_LOG(b.envd_access_token == NULL, "no access token when not secure");

    rc = abx_api_get(p, a.sandbox_id, &g, &err);
    CHECK_LOG(rc == 0, "get (%s)", rc ? err.message : g.state);
    if (rc == 0) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(g.metadata, "weird");
        CHECK_LOG(strcmp(g.state, "running") == 0, "get: state running");
        CHECK_LOG(cJSON_IsString(w) && strcmp(w->valuestring, weird) == 0,
                  "get: metadata round-trips '&', '=', '%%', ' ', '+', unicode");
        CHECK_LOG(strcmp(g.template_id, a.template_id) == 0 && g.end_at[0],
                  "get: template and endAt");
    }

    cJSON *run = meta(NULL, NULL), *only_a = meta("weird", weird);
    CHECK_LOG(count_list(p, run, NULL) == 2, "list by run tag: 2 sandboxes");
    CHECK_LOG(count_list(p, only_a, NULL) == 1,
              "list by a metadata value with '&', '=', '%%', space: 1 sandbox");
    CHECK_LOG(count_list(p, run, "paused") == 0, "list state=paused: none");
    CHECK_LOG(count_list(p, run, "running") == 2, "list state=running: 2");

    struct abx_list_query q = {.metadata = run, .limit = 1};
    struct abx_list_page p1, p2;
    rc = abx_api_list(p, &q, &p1, &err);
    CHECK_LOG(rc == 0 && p1.n == 1 && p1.next_token[0],
              "list limit=1: one item and an X-Next-Token (%s)",
              rc ? err.message : "");
    if (rc == 0) {
        q.next_token = p1.next_token;
        rc = abx_api_list(p, &q, &p2, &err);
        CHECK_LOG(rc == 0 && p2.n == 1 &&
                      strcmp(p2.items[0].sandbox_id, p1.items[0].sandbox_id),
                  "list page 2: the other sandbox");
        if (rc == 0)
            abx_list_page_free(&p2);
        abx_list_page_free(&p1);
    }
    q.next_token = NULL;
    rc = abx_api_list_all(p, &q, 0, &p1, &err);
    CHECK_LOG(rc == 0 && p1.n == 2 && p1.next_token[0] == '\0',
              "list_all with limit=1 follows tokens: 2 items");
    if (rc == 0)
        abx_list_page_free(&p1);
    q.limit = 500;
    rc = abx_api_list(p, &q, &p1, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_INVALID, "limit 500 refused: %s",
              err.message);

    rc = abx_api_set_timeout(p, a.sandbox_id, 30, &err);
    CHECK_LOG(rc == 0, "set_timeout 30 s");
    if (rc == 0 && abx_api_get(p, a.sandbox_id, &c, &err) == 0) {
        CHECK_LOG(strcmp(c.end_at, g.end_at) != 0, "set_timeout moved endAt (%s -> %s)",
                  g.end_at, c.end_at);
        abx_sandbox_info_free(&c);
    }
    rc = abx_api_connect(p, a.sandbox_id, 60, &c, &err);
    CHECK_LOG(rc == 0 && c.envd_access_token && a.envd_access_token &&
                  strcmp(c.envd_access_token, a.envd_access_token) == 0,
              "connect returns the same access token");
    if (rc == 0)
        abx_sandbox_info_free(&c);

    rc = abx_api_get(p, "nosuchsandbox0000000", &c, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_NOT_FOUND && err.status == 404,
              "get unknown: NotFound (%s)", err.message);
    rc = abx_api_set_timeout(p, "nosuchsandbox0000000", 10, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_NOT_FOUND, "set_timeout unknown: NotFound");
    rc = abx_api_connect(p, "nosuchsandbox0000000", 10, &c, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_NOT_FOUND, "connect unknown: NotFound");
    rc = abx_api_get(p, "", &c, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_INVALID, "get with empty id: InvalidArgument");

    struct abx_platform bad = *p;
    snprintf(bad.api_key, sizeof bad.api_key, "e2b_0000000000wrong");
    rc = abx_api_get(&bad, a.sandbox_id, &c, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_AUTH && !strstr(err.message, "wrong"),
              "wrong key: Authentication, key not in message (%s)", err.message);

    cJSON *mx = NULL;
    rc = abx_api_metrics(p, a.sandbox_id, 0, 0, &mx, &err);
    CHECK_LOG(rc == 0 && cJSON_IsArray(mx), "metrics: a JSON array");
    cJSON_Delete(mx);
    CHECK_LOG(abx_api_pause(p, b.sandbox_id, 1, &err) == 1, "pause: 1");
    CHECK_LOG(abx_api_pause(p, b.sandbox_id, 1, &err) == 0, "pause again: 0 (already paused)");
    CHECK_LOG(count_list(p, run, "paused") == 1, "list state=paused: 1");
    rc = abx_api_resume(p, b.sandbox_id, 60, &c, &err);
    CHECK_LOG(rc == 0 && strcmp(c.sandbox_id, b.sandbox_id) == 0, "resume (%s)",
              rc ? err.message : "ok");
    if (rc == 0)
        abx_sandbox_info_free(&c);
    CHECK_LOG(abx_api_pause(p, b.sandbox_id, 1, &err) == 1, "pause once more");
    rc = abx_api_connect(p, b.sandbox_id, 60, &c, &err);
    CHECK_LOG(rc == 0, "connect resumes a paused sandbox (%s)", rc ? err.message : "ok");
    if (rc == 0)
        abx_sandbox_info_free(&c);
    CHECK_LOG(count_list(p, run, "running") == 2, "both running again");

    double t0 = abx_http_now();
    CHECK_LOG(abx_api_kill(p, a.sandbox_id, &err) == 1, "kill: 1");
    double t1 = abx_http_now();
    CHECK_LOG(abx_api_kill(p, a.sandbox_id, &err) == 0, "kill again: 0 (not found)");
    printf("note: kill %.1f ms, second kill %.1f ms\n", (t1 - t0) * 1000,
           (abx_http_now() - t1) * 1000);
    const char *ids[] = {b.sandbox_id, "nosuchsandbox0000000"};
    int res[2];
    struct abx_err errs[2];
    int nerr = abx_api_kill_many(p, ids, 2, res, errs, 30);
    CHECK_LOG(nerr == 0 && res[0] == 1 && res[1] == 0,
              "kill_many: [1, 0] (got [%d, %d])", res[0], res[1]);
    CHECK_LOG(count_list(p, run, NULL) == 0, "list after kills: none");
    abx_sandbox_info_free(&g);
    cJSON_Delete(run);
    cJSON_Delete(only_a);
    abx_sandbox_info_free(&b);
out1:
    abx_sandbox_info_free(&a);
out0:
    cJSON_Delete(ma);
    cJSON_Delete(mb);
}

static void scenario_retry(const struct abx_platform *p)
{
    struct abx_sandbox_info a, g;
    struct abx_err err;
    cJSON *m = meta(NULL, NULL);
    struct abx_http_cfg slow = {.backoff_base = 0.3};
    abx_http_configure(&slow);

    /* 429 on a create: retried (nothing was created). */
    drv_faults(p, "{\"errorRate\":1.0,\"errorStatus\":429}");
    pid_t kid = clear_faults_later(p, 0.5);
    trace_begin();
    int rc = create(p, m, 1, &a, &err);
    int posts = trace_end("POST", p->api_key);
    CHECK_LOG(reap(kid) == 0, "faults cleared by a forked child (after_fork)");
    CHECK_LOG(rc == 0, "create under 429 for 0.5 s succeeds (%s)", rc ? err.message : "");
    CHECK_LOG(posts >= 2, "create was retried on 429: %d attempts", posts);
    if (rc != 0)
        goto out;

    /* 503 on an idempotent GET: retried. */
    drv_faults(p, "{\"errorRate\":1.0,\"errorStatus\":503}");
    kid = clear_faults_later(p, 0.5);
    trace_begin();
    rc = abx_api_get(p, a.sandbox_id, &g, &err);
    int gets = trace_end("GET", p->api_key);
    reap(kid);
    CHECK_LOG(rc == 0, "get under 503 for 0.5 s succeeds");
    CHECK_LOG(gets >= 2, "get was retried on 503: %d attempts", gets);
    if (rc == 0)
        abx_sandbox_info_free(&g);

    /* 503 that stays: a GET gives up after 1 + max_retries attempts, a
     * non-idempotent POST is never repeated. */
    drv_faults(p, "{\"errorRate\":1.0,\"errorStatus\":503}");
    trace_begin();
    rc = abx_api_get(p, a.sandbox_id, &g, &err);
    gets = trace_end("GET", p->api_key);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_SANDBOX && err.status == 503,
              "get under lasting 503: Sandbox error (%s)", err.message);
    CHECK_LOG(gets == 4, "get tried 4 times (1 + 3 retries): %d", gets);
    trace_begin();
    rc = create(p, m, 0, &g, &err);
    posts = trace_end("POST", p->api_key);
    CHECK_LOG(rc == -1 && err.status == 503, "create under 503 fails: %s", err.message);
    CHECK_LOG(posts == 1, "create without nonce not retried on 503: %d attempt(s)", posts);
    trace_begin();
    rc = abx_api_pause(p, a.sandbox_id, 1, &err);
    posts = trace_end("POST", p->api_key);
    CHECK_LOG(rc == -1 && posts == 1, "pause (POST) not retried on 503: %d attempt(s)",
              posts);
    drv_faults(p, "{\"errorRate\":0}");
    CHECK_LOG(count_list(p, m, NULL) == 1, "exactly one sandbox exists");
    abx_api_kill(p, a.sandbox_id, &err);
    abx_sandbox_info_free(&a);
out:
    drv_faults(p, "{\"errorRate\":0}");
    cJSON_Delete(m);
}

static void scenario_kill_many(const struct abx_platform *p)
{
    enum { N = 4, DELAY_MS = 1000 };
    struct abx_sandbox_info s[N];
    const char *ids[N];
    int res[N], made = 0;
    struct abx_err err, errs[N];
    cJSON *m = meta(NULL, NULL);

    for (int i = 0; i < N; i++) {
        if (create(p, m, 0, &s[i], &err) != 0) {
            CHECK_LOG(0, "create %d: %s", i, err.message);
            break;
        }
        ids[i] = s[i].sandbox_id;
        made++;
    }
    CHECK_LOG(made == N, "created %d sandboxes", made);
    char f[96];
    snprintf(f, sizeof f, "{\"deleteDelayMs\":%d}", DELAY_MS);
    drv_faults(p, f);
    double t0 = abx_http_now();
    int nerr = abx_api_kill_many(p, ids, (size_t)made, res, errs, 60);
    double t = abx_http_now() - t0;
    drv_faults(p, "{\"deleteDelayMs\":0}");
    int killed = 0;
    for (int i = 0; i < made; i++)
        killed += res[i] == 1;
    CHECK_LOG(nerr == 0 && killed == made, "kill_many killed %d/%d", killed, made);
    printf("note: kill_many of %d with %d ms delay each: %.2f s (serial would be "
           "%.2f s)\n", made, DELAY_MS, t, made * DELAY_MS / 1000.0);
    CHECK_LOG(t < made * DELAY_MS / 1000.0, "kill_many ran concurrently");
    CHECK_LOG(count_list(p, m, NULL) == 0, "none left");

    /* A deadline shorter than the delay: Timeout errors, not a hang. */
    drv_faults(p, "{\"deleteDelayMs\":3000}");
    const char *ghost[] = {"nosuchsandbox0000001", "nosuchsandbox0000002"};
    t0 = abx_http_now();
    nerr = abx_api_kill_many(p, ghost, 2, res, errs, 0.5);
    t = abx_http_now() - t0;
    drv_faults(p, "{\"deleteDelayMs\":0}");
    CHECK_LOG(nerr == 2 && errs[0].cls == ABX_E_TIMEOUT,
              "kill_many past its deadline: Timeout (%s) after %.2f s", errs[0].message, t);
    for (int i = 0; i < made; i++)
        abx_sandbox_info_free(&s[i]);
    cJSON_Delete(m);
}

static void scenario_lost_create(const struct abx_platform *p)
{
    struct abx_sandbox_info a, g;
    struct abx_err err;
    char nonce[64];
    snprintf(nonce, sizeof nonce, "n-%s-%ld", run_tag, (long)getpid());
    cJSON *m = meta("abx-nonce", nonce);
    struct abx_create_opts o = {.template_id = "base", .timeout = 120,
                                .secure = 1, .allow_internet = -1,
                                .metadata = m, .nonce_key = "abx-nonce"};

    drv_faults(p, "{\"dropCreateReplies\":1}");
    trace_begin();
    int rc = abx_api_create(p, &o, &a, &err);
    int posts = trace_end("POST", p->api_key);
    CHECK_LOG(rc == 0, "create with a lost reply recovers (%s)", rc ? err.message : a.sandbox_id);
    CHECK_LOG(count_list(p, m, NULL) == 1, "exactly one sandbox with the nonce");
    if (rc == 0) {
        CHECK_LOG(a.envd_access_token != NULL,
                  "adopted sandbox has its access token (via connect)");
        CHECK_LOG(posts == 2, "one create POST and one connect POST: %d", posts);
        if (abx_api_get(p, a.sandbox_id, &g, &err) == 0) {
            CHECK_LOG(strcmp(g.state, "running") == 0, "adopted sandbox runs");
            abx_sandbox_info_free(&g);
        }
        abx_api_kill(p, a.sandbox_id, &err);
        abx_sandbox_info_free(&a);
    }

    /* Without a nonce the lost reply is an error, never a second create. */
    o.nonce_key = NULL;
    drv_faults(p, "{\"dropCreateReplies\":1}");
    rc = abx_api_create(p, &o, &a, &err);
    CHECK_LOG(rc == -1 && err.status == 503, "without nonce: error (%s)", err.message);
    struct abx_list_query q = {.metadata = m};
    struct abx_list_page pg;
    if (abx_api_list(p, &q, &pg, &err) == 0) {
        CHECK_LOG(pg.n == 1, "the orphan exists once (%zu)", pg.n);
        for (size_t i = 0; i < pg.n; i++)
            abx_api_kill(p, pg.items[i].sandbox_id, &err);
        abx_list_page_free(&pg);
    }
    drv_faults(p, "{\"dropCreateReplies\":0}");
    cJSON_Delete(m);
}

static void scenario_unreachable(const struct abx_platform *p)
{
    struct abx_sandbox_info g;
    struct abx_err err;
    const char *url = drv_env("ABX_DEAD_URL");   /* a closed port */
    struct abx_platform d = *p;
    snprintf(d.api_url, sizeof d.api_url, "%s", url);
    const char *host = strstr(url, "://") ? strstr(url, "://") + 3 : url;

    trace_begin();
    double t0 = abx_http_now();
    int rc = abx_api_get(&d, "abc", &g, &err);
    double t = abx_http_now() - t0;
    int tries = trace_end("GET", p->api_key);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_CONNECTION, "closed port: Connection (%s)",
              err.message);
    CHECK_LOG(strstr(err.message, host) != NULL, "message names the host %s", host);
    CHECK_LOG(tries == 4, "connect failures retried: %d attempts in %.2f s", tries, t);
    struct abx_create_opts o = {.template_id = "base", .timeout = 10};
    rc = abx_api_create(&d, &o, &g, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_CONNECTION, "create: Connection too");
}

static void scenario_malformed(const struct abx_platform *p)
{
    struct abx_platform f = *p;
    struct abx_sandbox_info g;
    struct abx_list_page pg;
    struct abx_list_query q = {0};
    struct abx_err err;
    snprintf(f.api_url, sizeof f.api_url, "%s", drv_env("ABX_FAKE_URL"));

    int rc = abx_api_list(&f, &q, &pg, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_PROTOCOL, "broken JSON list: Protocol (%s)",
              err.message);
    rc = abx_api_get(&f, "trunc", &g, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_PROTOCOL, "truncated body: Protocol (%s)",
              err.message);
    rc = abx_api_get(&f, "badtype", &g, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_PROTOCOL && strstr(err.message, "sandboxID"),
              "wrong-typed field: Protocol naming it (%s)", err.message);
    rc = abx_api_get(&f, "html", &g, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_SANDBOX && err.status == 500 &&
                  !strchr(err.message, '\n') && strlen(err.message) < 500,
              "HTML 500 page: Sandbox error, one capped line (%s)", err.message);
    rc = abx_api_get(&f, "hangup", &g, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_CONNECTION, "no reply at all: Connection (%s)",
              err.message);
    struct abx_create_opts o = {.template_id = "base", .timeout = 10};
    rc = abx_api_create(&f, &o, &g, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_PROTOCOL, "create reply not JSON: Protocol (%s)",
              err.message);
    const char *ids[] = {"x"};
    int res[1];
    struct abx_err errs[1];
    abx_api_kill_many(&f, ids, 1, res, errs, 10);
    CHECK_LOG(res[0] == -1 && errs[0].cls == ABX_E_SANDBOX,
              "kill answered 418: Sandbox error (%s)", errs[0].message);
}

/* The fake's record of the gates scenario (GET /_fake/state). */
static cJSON *fake_state(const struct abx_platform *f)
{
    struct abx_http_req req = {0};
    struct abx_http_resp resp;
    struct abx_err err;
    char url[600];
    cJSON *st = NULL;

    snprintf(url, sizeof url, "%s/_fake/state", f->api_url);
    req.url = url;
    req.timeout = 10;
    req.what = "fake state";
    abx_http_resp_init(&resp);
    if (abx_http_do(&req, &resp, &err) == 0 && resp.status == 200)
        st = cJSON_ParseWithLength(abx_buf_cstr(&resp.body), resp.body.len);
    abx_http_resp_free(&resp);
    return st ? st : cJSON_CreateObject();
}

/* 1 when id is in the fake's list of deleted sandboxes. */
static int was_deleted(const struct abx_platform *f, const char *id)
{
    cJSON *st = fake_state(f), *d;
    int found = 0;

    cJSON_ArrayForEach(d, cJSON_GetObjectItem(st, "deleted"))
        found |= cJSON_IsString(d) && strcmp(d->valuestring, id) == 0;
    cJSON_Delete(st);
    return found;
}

/* The last create body the fake got, printed compactly (caller frees). */
static char *last_create(const struct abx_platform *f, const char *member)
{
    cJSON *st = fake_state(f);
    cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "creates"),
                                  cJSON_GetArraySize(cJSON_GetObjectItem(
                                      st, "creates")) - 1);
    cJSON *m = cJSON_GetObjectItem(c, member);
    char *out = m ? cJSON_PrintUnformatted(m) : strdup("(none)");

    cJSON_Delete(st);
    return out;
}

/* Against the fake: an envd too old (or without a version) makes create
 * kill the sandbox and raise; the network option's wire form; the pause
 * body. */
static void scenario_gates(const struct abx_platform *p)
{
    static const struct {
        const char *tmpl;
        enum abx_errclass cls;
        const char *msg;
    } old[] = {
        {"old-envd", ABX_E_TEMPLATE,
         "this client needs envd 0.1.0 or later; the sandbox's envd is 0.0.9"},
        {"bad-envd", ABX_E_PROTOCOL, "'x' is not a version"},
        {"no-envd", ABX_E_PROTOCOL, "the reply has no envdVersion"},
    };
    struct abx_platform f = *p;
    struct abx_create_opts o = {0};
    struct abx_sandbox_info g;
    struct abx_err err;
    char id[64], *body;
    size_t i;
    int rc;

    snprintf(f.api_url, sizeof f.api_url, "%s", drv_env("ABX_FAKE_URL"));
    o.timeout = 10;
    o.allow_internet = -1;
    for (i = 0; i < sizeof old / sizeof old[0]; i++) {
        o.template_id = old[i].tmpl;
        snprintf(id, sizeof id, "gate-%s", old[i].tmpl);
        rc = abx_api_create(&f, &o, &g, &err);
        CHECK_LOG(rc == -1 && err.cls == old[i].cls &&
                      strstr(err.message, old[i].msg) &&
                      strstr(err.message, "(the sandbox was killed)"),
                  "%s: create raises %s (%s)", old[i].tmpl,
                  abx_errclass_name(old[i].cls), err.message);
        CHECK_LOG(g.sandbox_id[0] == '\0' && g.envd_access_token == NULL,
                  "%s: nothing handed out", old[i].tmpl);
        CHECK_LOG(was_deleted(&f, id), "%s: the sandbox was deleted",
                  old[i].tmpl);
    }

    o.template_id = "net";
    rc = abx_api_create(&f, &o, &g, &err);
    CHECK_LOG(rc == 0 && strcmp(g.envd_version, "0.5.2") == 0,
              "envd 0.5.2 is accepted (%s)", rc ? err.message : "ok");
    abx_sandbox_info_free(&g);
    body = last_create(&f, "network");
    CHECK_LOG(strcmp(body, "(none)") == 0, "no network option: no 'network' "
              "member (%s)", body);
    free(body);

    cJSON *allow = cJSON_Parse("[\"1.1.1.1\",\"8.8.8.0/24\"]");
    cJSON *deny = cJSON_Parse("[\"0.0.0.0/0\"]");
    o.public_traffic = ABX_PUBLIC_TRAFFIC_DENY;
    o.allow_out = allow;
    o.deny_out = deny;
    rc = abx_api_create(&f, &o, &g, &err);
    CHECK_LOG(rc == 0, "create with network (%s)", rc ? err.message : "ok");
    abx_sandbox_info_free(&g);
    body = last_create(&f, "network");
    CHECK_LOG(strcmp(body, "{\"allowPublicTraffic\":false,\"allowOut\":"
                     "[\"1.1.1.1\",\"8.8.8.0/24\"],\"denyOut\":"
                     "[\"0.0.0.0/0\"]}") == 0,
              "network sent as allowPublicTraffic/allowOut/denyOut: %s", body);
    free(body);
    o.public_traffic = ABX_PUBLIC_TRAFFIC_UNSET;
    o.deny_out = NULL;
    rc = abx_api_create(&f, &o, &g, &err);
    abx_sandbox_info_free(&g);
    body = last_create(&f, "network");
    CHECK_LOG(rc == 0 && strcmp(body, "{\"allowOut\":[\"1.1.1.1\","
                                "\"8.8.8.0/24\"]}") == 0,
              "only what was given is sent: %s", body);
    free(body);
    o.public_traffic = ABX_PUBLIC_TRAFFIC_ALLOW;
    o.allow_out = NULL;
    rc = abx_api_create(&f, &o, &g, &err);
    abx_sandbox_info_free(&g);
    body = last_create(&f, "network");
    CHECK_LOG(rc == 0 && strcmp(body, "{\"allowPublicTraffic\":true}") == 0,
              "allowPublicTraffic true: %s", body);
    free(body);
    cJSON *bad = cJSON_Parse("[\"ok\", 5]");
    o.deny_out = bad;
    rc = abx_api_create(&f, &o, &g, &err);
    CHECK_LOG(rc == -1 && err.cls == ABX_E_INVALID &&
                  strstr(err.message, "network.denyOut"),
              "a non-string in denyOut: InvalidArgument before sending (%s)",
              err.message);
    cJSON_Delete(bad);
    cJSON_Delete(allow);
    cJSON_Delete(deny);

    CHECK_LOG(abx_api_pause(&f, "gate-net", 1, &err) == 1, "pause");
    CHECK_LOG(abx_api_pause(&f, "gate-net", 0, &err) == 1, "pause, no memory");
    cJSON *st = fake_state(&f);
    cJSON *pz = cJSON_GetObjectItem(st, "pauses");
    const char *p0 = cJSON_GetStringValue(cJSON_GetArrayItem(pz, 0));
    const char *p1 = cJSON_GetStringValue(cJSON_GetArrayItem(pz, 1));
    CHECK_LOG(p0 && strcmp(p0, "{\"memory\":true}") == 0,
              "pause body {\"memory\":true} (%s)", p0 ? p0 : "none");
    CHECK_LOG(p1 && strcmp(p1, "{\"memory\":false}") == 0,
              "keep_memory 0: {\"memory\":false} (%s)", p1 ? p1 : "none");
    cJSON_Delete(st);
}

int main(int argc, char **argv)
{
    struct abx_platform p;
    const char *sc = argc > 1 ? argv[1] : "";

    snprintf(run_tag, sizeof run_tag, "r%ld", (long)getpid());
    if (drv_platform(&p, NULL) != 0)
        return 1;
    if (strcmp(sc, "basic") == 0)
        scenario_basic(&p);
    else if (strcmp(sc, "retry") == 0)
        scenario_retry(&p);
    else if (strcmp(sc, "kill_many") == 0)
        scenario_kill_many(&p);
    else if (strcmp(sc, "lost_create") == 0)
        scenario_lost_create(&p);
    else if (strcmp(sc, "unreachable") == 0)
        scenario_unreachable(&p);
    else if (strcmp(sc, "malformed") == 0)
        scenario_malformed(&p);
    else if (strcmp(sc, "gates") == 0)
        scenario_gates(&p);
    else {
        printf("usage: api_driver basic|retry|kill_many|lost_create|"
               "unreachable|malformed|gates\n");
        return 2;
    }
    abx_http_shutdown();
    return CHECK_DONE();
}
