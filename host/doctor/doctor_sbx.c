/* `abx-e2e doctor`: the "sandbox" and "clock skew" sections. A short
 * sandbox of base, created as the suite creates them (abx_track_create:
 * tagged e2e=<run id> and e2e_test=<a node id with ' : / [>, in the run's
 * ledger, the guardian watching), then the data plane (envd /health,
 * `echo ok` through envd, envdVersion), what the suite asks of base
 * (doctor_probe.c) and the sandbox's clock against ours; then one sandbox
 * of each other template the suite starts (doctor_probe.c). Each is
 * deleted whatever happened and the run's sweep (ledger and tag) confirms
 * nothing is left. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "doctor_int.h"
#include "envd.h"
#include "http.h"
#include "ledger.h"
#include "out.h"
#include "sandbox.h"
#include "track.h"
#include "wallclock.h"

#define HEALTH_WAIT 10.0 /* s: envd readiness is known-eventual */
/* The suite tags each sandbox with its test's node id (file::group::name),
 * and names hold any character: these are the ones a platform is most
 * likely to refuse in a metadata value. */
#define TAG_TEST_ID "tests-lua/test_doctor.lua::tags: ' : / [ ]::abx-e2e doctor's sandbox"
#define PLAIN_TEST_ID "abx-e2e doctor"

struct facts {
    char id[128];
    double create_s;
    int skew_checked;
    double skew, skew_unc; /* s: sandbox minus local, and its error bar */
    char skew_err[1100];
};

/* envd /health until it answers 2xx (HEALTH_WAIT at most). */
static int health(const struct abx_endpoint *ep, struct abx_err *err)
{
    double until = abx_http_now() + HEALTH_WAIT;
    int r;

    abx_err_clear(err);
    while ((r = abx_envd_health(ep, err)) != 1 && abx_http_now() < until &&
           err->cls != ABX_E_CANCELED)
        if (abx_http_sleep(0.5, err) != 0)
            break;
    if (r == 0 && err->message[0] == '\0')
        abx_err_set(err, ABX_E_TIMEOUT, 502, "",
                    "envd answered 502 for %.0f s (the "
                    "sandbox is not running, or the proxy cannot reach it)",
                    HEALTH_WAIT);
    return r;
}

/* The sandbox's clock against ours, read around the call. */
static void clock_skew(const struct abx_endpoint *ep, struct facts *f)
{
    struct abx_err err;
    char out[128], *end = NULL;
    int code = -1;
    double t0 = abx_wall_clock(), t1, remote;

    abx_err_clear(&err);
    if (abx_doc_run(ep, "date +%s.%N", out, sizeof out, &code, &err) != 0) {
        snprintf(f->skew_err, sizeof f->skew_err, "`date` failed: %s",
                 err.message);
        return;
    }
    t1 = abx_wall_clock();
    remote = strtod(out, &end);
    if (code != 0 || end == out || remote <= 0) {
        snprintf(f->skew_err, sizeof f->skew_err,
                 "`date +%%s.%%N` printed no time (exit %d)", code);
        return;
    }
    f->skew_checked = 1;
    f->skew = remote - (t0 + t1) / 2;
    /* The call's round trip bounds when the sandbox read its clock; a date
     * without %N (busybox) is a second coarser. */
    f->skew_unc = (t1 - t0) / 2 +
                  (strchr(out, '.') && end > strchr(out, '.') + 1 ? 0 : 1);
}

/* The fix for a create that failed, by its class. */
static const char *create_fix(enum abx_errclass cls)
{
    switch (cls) {
    case ABX_E_NOT_FOUND:
        return "create a template named base (envd only) on the platform, "
               "or check that the key's account and region are the ones "
               "meant";
    case ABX_E_RATE_LIMIT:
        return "the account's sandbox limit is reached: wait, or delete "
               "leftovers (abx-e2e cleanup --all-tagged)";
    case ABX_E_AUTH:
        return "check ABX_SANDBOX_API_KEY (same region as "
               "ABX_SANDBOX_BASE_URL)";
    default:
        return "read the platform's message: quota, region, template base";
    }
}

/* Create, probe, measure; the caller deletes *t. */
static void probe(struct abx_doc *d, struct abx_tracked **t, struct facts *f)
{
    const struct abx_env *e = d->env;
    cJSON *sec = cJSON_GetObjectItemCaseSensitive(d->root, "sandbox");
    struct abx_create_opts co;
    struct abx_endpoint ep;
    struct abx_err err;
    char out[256];
    int code = -1, h;
    double t0;

    memset(&co, 0, sizeof co);
    memset(&ep, 0, sizeof ep);
    co.template_id = "base";
    co.timeout = ABX_DOC_SANDBOX_TIMEOUT;
    co.secure = 1; /* as sandbox.create's default */
    co.allow_internet = -1;
    t0 = abx_http_now();
    *t = abx_track_create(abx_track_group_new(), d->tag_test_id, &co, &err);
    if (!*t && err.cls == ABX_E_INVALID) {
        /* Refused for the tag's characters? A plain one tells. */
        struct abx_err err2;

        *t = abx_track_create(abx_track_group_new(), PLAIN_TEST_ID, &co, &err2);
        if (*t) {
            abx_doc_problem(d, "the platform must accept any text as a metadata value (E2B "
                            "does); until it does, avoid ' : / [ ] in the suite's file, "
                            "group and test names",
                            "a sandbox tagged e2e_test=%s is refused (every test's sandbox "
                            "carries its node id): %s", TAG_TEST_ID, err.message);
            d->tag_test_id = PLAIN_TEST_ID;
        } else {
            err = err2;
        }
    }
    f->create_s = abx_http_now() - t0;
    if (!*t && err.cls == ABX_E_NOT_FOUND) {
        abx_doc_problem(d, create_fix(err.cls),
                        "template base not found (every sandbox fixture starts "
                        "from it): %s", err.message);
        return;
    }
    if (!*t) {
        abx_doc_problem(d, create_fix(err.cls),
                        "cannot create a sandbox of base (%s after %.1f s): %s",
                        abx_errclass_name(err.cls), f->create_s, err.message);
        return;
    }
    if (d->base == ABX_DOC_MISSING)
        abx_doc_line(d, "base exists although GET /templates does not list "
                        "it (a public template)");
    snprintf(f->id, sizeof f->id, "%s", (*t)->info.sandbox_id);
    abx_doc_str(sec, "sandboxID", f->id);
    cJSON_AddNumberToObject(sec, "createSeconds", f->create_s);
    abx_doc_str(sec, "envdVersion", (*t)->info.envd_version);
    abx_doc_line(d,
                 "created %s from base in %.2f s (timeout %ld s, tagged %s=%s, "
                 "ledger %s)",
                 f->id, f->create_s, ABX_DOC_SANDBOX_TIMEOUT, ABX_TAG_KEY,
                 e->run_id,
                 abx_run_ledger());
    abx_doc_line(d, "envdVersion: %s",
                 (*t)->info.envd_version[0] ? (*t)->info.envd_version
                                            : "(none reported)");
    if (abx_endpoint_init(&ep, d->cfg->lua.platform, &(*t)->info, ABX_ENVD_PORT,
                          &err) != 0) {
        abx_doc_problem(d, "check ABX_SANDBOX_DOMAIN and ABX_SANDBOX_URL",
                        "no envd address for %s: %s", f->id, err.message);
        goto out;
    }
    abx_doc_str(sec, "envdUrl", ep.base_url);
    abx_doc_line(d, "envd at %s%s", ep.base_url,
                 d->cfg->lua.platform->sandbox_url[0]
                     ? " (routed by E2b-Sandbox-Id/Port)"
                     : "");
    h = health(&ep, &err);
    cJSON_AddBoolToObject(sec, "health", h == 1);
    if (h != 1) {
        abx_doc_problem(
            d,
            "check ABX_SANDBOX_DOMAIN (sandboxes are <port>-<id>.<domain>: "
            "DNS and TLS for *.<domain>) or ABX_SANDBOX_URL",
            "data plane: envd /health at %s failed: %s", ep.base_url,
            err.message);
        goto out;
    }
    abx_doc_line(d, "envd /health: ok");
    if (abx_doc_run(&ep, "echo ok", out, sizeof out, &code, &err) != 0 ||
        code != 0 || strcmp(out, "ok\n") != 0) {
        cJSON_AddBoolToObject(sec, "echo", 0);
        abx_doc_problem(
            d,
            "check the data plane (ABX_SANDBOX_DOMAIN / ABX_SANDBOX_URL) "
            "and that envd serves process.Process (Connect JSON)",
            "data plane: `echo ok` through envd failed: %s",
            err.message[0] ? err.message : "unexpected output or exit code");
        goto out;
    }
    cJSON_AddBoolToObject(sec, "echo", 1);
    abx_doc_line(d, "`echo ok` through envd: ok");
    abx_doc_probe_base(d, sec, &ep);
    clock_skew(&ep, f);
out:
    abx_endpoint_free(&ep);
}

static void skew_section(struct abx_doc *d, const struct facts *f,
                         const char *skipped)
{
    cJSON *sec = abx_doc_section(d, "clockSkew", "clock skew");
    double a = f->skew < 0 ? -f->skew : f->skew;

    cJSON_AddBoolToObject(sec, "checked", f->skew_checked);
    if (!f->skew_checked) {
        abx_doc_line(d, "skipped: %s",
                     skipped          ? skipped
                     : f->skew_err[0] ? f->skew_err
                                      : "no sandbox");
        return;
    }
    cJSON_AddNumberToObject(sec, "seconds", f->skew);
    cJSON_AddNumberToObject(sec, "uncertainty", f->skew_unc);
    abx_doc_line(d, "sandbox clock %s local clock by %.2f s (+/- %.2f s)",
                 f->skew >= 0 ? "ahead of" : "behind", a, f->skew_unc);
    if (a > ABX_DOC_SKEW_WARN)
        abx_doc_warn(
            d,
            "the sandbox's clock is %.1f s %s ours (over %.0f s): TLS and "
            "signed-URL expiry tests depend on agreeing clocks; sync this "
            "machine's clock (NTP)",
            a, f->skew >= 0 ? "ahead of" : "behind", ABX_DOC_SKEW_WARN);
}

void abx_doctor_sandbox(struct abx_doc *d)
{
    const struct abx_env *e = d->env;
    cJSON *sec = abx_doc_section(d, "sandbox", "sandbox");
    struct abx_tracked *t = NULL;
    struct facts f;
    struct abx_err err;
    char lerr[1024];
    const char *skipped = NULL;
    int k, left;

    memset(&f, 0, sizeof f);
    if (!d->cp_ok)
        skipped = "the control plane is not usable (see above)";
    cJSON_AddBoolToObject(sec, "checked", !skipped);
    if (skipped) {
        abx_doc_line(d, "skipped: %s", skipped);
        goto skew;
    }
    if (abx_sandboxes_begin(d->cfg, abx_local_pid(), lerr, sizeof lerr) != 0) {
        abx_doc_problem(
            d,
            "give this run its own E2E_RUN_ID, or make .abx-e2e/runs "
            "writable here",
            "sandbox ledger: %s", lerr);
        skipped = "no ledger";
        goto skew;
    }
    /* Tracking starts as in a worker, which forgets the engine it
     * inherited; here it is ours, so free it instead of leaking it. */
    abx_http_shutdown();
    abx_sandboxes_worker_init(d->cfg);
    d->tag_test_id = TAG_TEST_ID;
    probe(d, &t, &f);
    /* Deleted whatever happened above, also after ^C. */
    abx_http_set_cancel(NULL);
    if (t) {
        abx_err_clear(&err);
        k = abx_track_kill(t, &err);
        cJSON_AddBoolToObject(sec, "killed", k >= 0);
        if (k > 0)
            abx_doc_line(d, "sandbox %s killed", f.id);
        else if (k == 0)
            abx_doc_line(d, "sandbox %s was already gone", f.id);
        else
            abx_doc_problem(d, "abx-e2e cleanup --yes (its ledger lists it)",
                            "could not delete sandbox %s: %s", f.id,
                            err.message);
        /* base works: the other templates are worth starting. */
        if (f.skew_checked || f.skew_err[0])
            abx_doc_probe_templates(d, sec, abx_track_group_new());
    }
    abx_sandboxes_worker_end();
    /* The sweep's account line goes to stderr with --json: stdout holds
     * the one JSON object. */
    if (d->json)
        abx_out_set_fd(ABX_OUT_STDOUT, abx_relay_real_fd(2));
    left = abx_sandboxes_end(d->cfg, !t || abx_signal_count() > 0, 1);
    if (d->json)
        abx_out_set_fd(ABX_OUT_STDOUT, abx_relay_real_fd(1));
    cJSON_AddBoolToObject(sec, "sweptClean", left == 0);
    if (left != 0) {
        char fix[256];
        snprintf(fix, sizeof fix, "abx-e2e cleanup --run-id %s --yes",
                 e->run_id);
        abx_doc_problem(
            d, fix, "sandboxes tagged e2e=%s are still alive after the sweep",
            e->run_id);
    }
skew:
    skew_section(d, &f, skipped);
}
