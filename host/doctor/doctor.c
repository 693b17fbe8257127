/* `abx-e2e doctor`: a read-only preflight for a new platform or account.
 * In order: with --local, the host abx-local would run on and abx-local
 * started (doctor_local.c); config (doctor_config.c), control plane (reachable, key
 * accepted), templates (base, code-interpreter-v1, the server template,
 * by GET /templates), sandbox and clock skew (doctor_sbx.c), capabilities
 * and the tests they skip (doctor_caps.c), then every blocking problem
 * with its FIX line and `doctor: N problems, N warnings`. Exit 0 when
 * nothing blocks, else 1.
 * --json prints the same facts as one object instead. Nothing here prints
 * a request header; all output goes through the masker. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_int.h"
#include "http.h"
#include "out.h"

/* ---- control plane ---------------------------------------------------- */

static void control_plane(struct abx_doc *d)
{
    const struct abx_platform *p = &d->env->platform;
    cJSON *sec = abx_doc_section(d, "controlPlane", "control plane");
    struct abx_list_query q;
    struct abx_list_page pg;
    struct abx_err err;
    double t0, secs;
    int rc;

    if (!d->env->has_platform) {
        abx_doc_line(d,
                     "skipped: no usable platform configuration (see config)");
        cJSON_AddBoolToObject(sec, "checked", 0);
        return;
    }
    memset(&q, 0, sizeof q);
    memset(&pg, 0, sizeof pg);
    abx_err_clear(&err);
    abx_doc_str(sec, "url", p->api_url);
    t0 = abx_http_now();
    rc = abx_api_list(p, &q, &pg, &err);
    secs = abx_http_now() - t0;
    cJSON_AddBoolToObject(sec, "checked", 1);
    cJSON_AddNumberToObject(sec, "status",
                            (double)(rc == 0 ? 200 : err.status));
    cJSON_AddNumberToObject(sec, "seconds", secs);
    if (rc == 0) {
        d->cp_ok = 1;
        cJSON_AddBoolToObject(sec, "ok", 1);
        cJSON_AddNumberToObject(sec, "sandboxes", (double)pg.n);
        abx_doc_line(
            d, "%s: reachable, authenticated (list sandboxes: %zu%s, %.0f ms)",
            p->api_url, pg.n, pg.next_token[0] ? " and more" : "", secs * 1000);
        goto out;
    }
    cJSON_AddBoolToObject(sec, "ok", 0);
    abx_doc_str(sec, "error", err.message);
    if (err.status == 0 &&
        (err.cls == ABX_E_CONNECTION || err.cls == ABX_E_TIMEOUT))
        abx_doc_problem(
            d,
            "check ABX_SANDBOX_BASE_URL (or ABX_SANDBOX_DOMAIN: the API is "
            "https://api.<domain>), DNS, proxy and firewall",
            "cannot reach the control plane at %s: %s", p->api_url,
            err.message);
    else if (err.cls == ABX_E_AUTH || err.status == 401 || err.status == 403)
        abx_doc_problem(
            d,
            "check ABX_SANDBOX_API_KEY (same region as ABX_SANDBOX_BASE_URL)",
            "authentication failed at %s (HTTP %ld: %s)", p->api_url,
            err.status, err.message);
    else
        abx_doc_problem(
            d,
            "check that ABX_SANDBOX_BASE_URL is an E2B-compatible API "
            "(GET /v2/sandboxes) and the platform is up",
            "listing sandboxes at %s failed (%s, HTTP %ld): %s", p->api_url,
            abx_errclass_name(err.cls), err.status, err.message);
out:
    abx_list_page_free(&pg);
}

/* ---- templates -------------------------------------------------------- */

static int names_template(const cJSON *t, const char *name)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(t, "templateID"), *a;

    if (cJSON_IsString(id) && strcmp(id->valuestring, name) == 0)
        return 1;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(t, "aliases"))
    {
        if (cJSON_IsString(a) && strcmp(a->valuestring, name) == 0)
            return 1;
    }
    return 0;
}

/* GET {API}/templates (runtime/api): the array, or NULL with why. */
static cJSON *list_templates(const struct abx_platform *p, long *status,
                             char *why, size_t whylen)
{
    struct abx_err err;
    cJSON *arr = NULL;

    abx_err_clear(&err);
    if (abx_api_templates(p, &arr, &err) == 0) {
        *status = 200;
        return arr;
    }
    *status = err.status;
    if (err.status)
        snprintf(why, whylen, "HTTP %ld", err.status);
    else
        snprintf(why, whylen, "%s", err.message);
    return NULL;
}

static void templates_section(struct abx_doc *d)
{
    const char *server = d->o->server_template;
    cJSON *sec = abx_doc_section(d, "templates", "templates"), *arr, *t, *o;
    const char *names[3] = {"base", "code-interpreter-v1", server};
    enum abx_doc_presence *pres[3] = {&d->base, &d->code, &d->server};
    char why[1200] = "";
    long status;
    size_t i;

    d->base = d->code = d->server = ABX_DOC_UNKNOWN;
    if (!d->cp_ok) {
        abx_doc_line(d, "skipped: the control plane is not usable (see above)");
        cJSON_AddBoolToObject(sec, "checked", 0);
        return;
    }
    cJSON_AddBoolToObject(sec, "checked", 1);
    arr = list_templates(&d->env->platform, &status, why, sizeof why);
    cJSON_AddNumberToObject(sec, "status", (double)status);
    cJSON_AddBoolToObject(sec, "endpoint", arr != NULL);
    if (arr)
        abx_doc_line(d, "GET /templates: %d templates",
                     cJSON_GetArraySize(arr));
    else
        abx_doc_line(d,
                     "GET /templates not available (%s): presence unknown, the "
                     "sandbox check below still tries base",
                     why);
    for (i = 0; i < 3; i++) {
        int found = 0;
        cJSON_ArrayForEach(t, arr)
        {
            found |= names_template(t, names[i]);
        }
        *pres[i] = !arr    ? ABX_DOC_UNKNOWN
                   : found ? ABX_DOC_PRESENT
                           : ABX_DOC_MISSING;
        abx_doc_line(d, "%s%s: %s", names[i],
                     i == 2 ? " (E2E_SERVER_TEMPLATE)" : "",
                     !arr    ? "unknown"
                     : found ? "present"
                             : "missing");
    }
    o = cJSON_AddObjectToObject(sec, "present");
    for (i = 0; i < 3; i++) {
        if (*pres[i] == ABX_DOC_UNKNOWN)
            cJSON_AddNullToObject(o, names[i]);
        else
            cJSON_AddBoolToObject(o, names[i], *pres[i] == ABX_DOC_PRESENT);
    }
    abx_doc_str(sec, "serverTemplate", server);
    /* A platform may leave public templates out of a team's list (E2B
     * does): the create below decides whether base is really missing. */
    if (d->base == ABX_DOC_MISSING)
        abx_doc_line(d, "base is not listed: the sandbox check below tells "
                        "whether it exists");
    if (d->code == ABX_DOC_MISSING)
        abx_doc_warn(d, "template code-interpreter-v1 not listed: the code "
                        "execution tests (code_sandbox) fail unless it "
                        "exists as a public template");
    /* A run fails without it (green means ran): a problem, not a warning. */
    if (d->server == ABX_DOC_MISSING)
        abx_doc_problem(
            d,
            "build and deploy it (docs/fc-server-template.md), or set "
            "E2E_SERVER_TEMPLATE to a template that exists",
            "server template %s (E2E_SERVER_TEMPLATE) not found: the tests "
            "that need it will fail",
            server);
    cJSON_Delete(arr);
}

/* ---- the whole run ---------------------------------------------------- */

/* ^C stops a wait on the network at once; the sandbox is still deleted. */
static int interrupted(void)
{
    return abx_signal_count() > 0;
}

static void closing(struct abx_doc *d)
{
    const cJSON *it;
    int i = 0;

    if (d->json)
        return;
    abx_out_puts(ABX_OUT_STDOUT, "\n");
    if (d->nproblems)
        abx_out_puts(ABX_OUT_STDOUT, "blocking problems:\n");
    cJSON_ArrayForEach(it, d->problems)
    {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(it, "problem");
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(it, "fix");
        abx_out_printf(ABX_OUT_STDOUT, "  %d. %s\n     FIX: %s\n", ++i,
                       cJSON_IsString(p) ? p->valuestring : "?",
                       cJSON_IsString(f) ? f->valuestring : "?");
    }
    if (d->nwarnings)
        abx_out_puts(ABX_OUT_STDOUT, "warnings:\n");
    i = 0;
    cJSON_ArrayForEach(it, d->warnings)
    {
        abx_out_printf(ABX_OUT_STDOUT, "  %d. %s\n", ++i,
                       cJSON_IsString(it) ? it->valuestring : "?");
    }
}

int abx_doctor_main(struct abx_config *cfg)
{
    const struct abx_opts *o = &cfg->opt;
    struct abx_doc d;
    char *text = NULL;
    int code;

    memset(&d, 0, sizeof d);
    d.cfg = cfg;
    d.o = o;
    d.env = &cfg->env;
    d.json = o->doctor_json;
    d.root = cJSON_CreateObject();
    d.problems = cJSON_CreateArray();
    d.warnings = cJSON_CreateArray();
    if (!d.root || !d.problems || !d.warnings) {
        abx_out_puts(ABX_OUT_STDERR, "abx-e2e doctor: out of memory\n");
        cJSON_Delete(d.problems);
        cJSON_Delete(d.warnings);
        code = ABX_EXIT_INTERNAL_ERROR;
        goto out;
    }
    abx_http_set_cancel(interrupted);
    abx_doc_str(d.root, "version", ABX_E2E_VERSION);
    if (!d.json)
        abx_out_printf(ABX_OUT_STDOUT,
                       "abx-e2e doctor %s: a read-only preflight of the "
                       "platform the suite would use\n",
                       ABX_E2E_VERSION);
    if (o->local)
        abx_doctor_local(&d, cfg);
    abx_doctor_config(&d);
    control_plane(&d);
    templates_section(&d);
    abx_doctor_sandbox(&d);
    abx_doctor_caps(&d);
    code = d.nproblems ? ABX_EXIT_TESTS_FAILED : ABX_EXIT_OK;
    if (abx_signal_count() > 0)
        code = ABX_EXIT_INTERRUPTED;
    cJSON_AddItemToObject(d.root, "problems", d.problems);
    cJSON_AddItemToObject(d.root, "warnings", d.warnings);
    cJSON_AddNumberToObject(d.root, "exitCode", code);
    closing(&d);
    if (d.json && (text = cJSON_Print(d.root)) != NULL)
        abx_out_printf(ABX_OUT_STDOUT, "%s\n", text);
    else if (!d.json)
        abx_out_printf(ABX_OUT_STDOUT, "doctor: %d problems, %d warnings\n",
                       d.nproblems, d.nwarnings);
    free(text);
out:
    abx_http_set_cancel(NULL);
    cJSON_Delete(d.root);
    return code;
}
