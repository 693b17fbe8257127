/* POST /sandboxes, the one create call FC accepts, with the recovery of
 * lost replies: a create is never simply repeated (it would make a second
 * sandbox); when its reply is lost and the caller tagged it with a nonce,
 * we first look for the sandbox by that nonce and adopt it. */
#include "api_int.h"
#include "envd_version.h"

#include <stdio.h>
#include <string.h>

#define MAX_LOST_ROUNDS 3   /* lost create replies we recover from */

static int string_map(const cJSON *m)
{
    const cJSON *v;
    if (m == NULL)
        return 1;
    if (!cJSON_IsObject(m))
        return 0;
    cJSON_ArrayForEach(v, m)
        if (!cJSON_IsString(v))
            return 0;
    return 1;
}

static int add_map(cJSON *b, const char *name, const cJSON *m)
{
    cJSON *d;
    if (m == NULL)
        return 0;
    d = cJSON_Duplicate(m, 1);
    return d && cJSON_AddItemToObject(b, name, d) ? 0 : (cJSON_Delete(d), -1);
}

static int string_list(const cJSON *a)
{
    const cJSON *v;
    if (a == NULL)
        return 1;
    if (!cJSON_IsArray(a))
        return 0;
    cJSON_ArrayForEach(v, a)
        if (!cJSON_IsString(v))
            return 0;
    return 1;
}

/* "network": {allowPublicTraffic, allowOut, denyOut}, each member only
 * when given (the SDK's buildNetworkBody); no object when none is. */
static int add_network(cJSON *b, const struct abx_create_opts *o)
{
    cJSON *n;
    if (o->public_traffic == ABX_PUBLIC_TRAFFIC_UNSET && o->allow_out == NULL &&
        o->deny_out == NULL)
        return 0;
    if ((n = cJSON_AddObjectToObject(b, "network")) == NULL ||
        (o->public_traffic != ABX_PUBLIC_TRAFFIC_UNSET &&
         cJSON_AddBoolToObject(n, "allowPublicTraffic",
                               o->public_traffic == ABX_PUBLIC_TRAFFIC_ALLOW)
             == NULL) ||
        add_map(n, "allowOut", o->allow_out) != 0 ||
        add_map(n, "denyOut", o->deny_out) != 0)
        return -1;
    return 0;
}

static cJSON *create_body(const struct abx_create_opts *o)
{
    cJSON *b = cJSON_CreateObject();
    if (b == NULL ||
        cJSON_AddStringToObject(b, "templateID", o->template_id) == NULL ||
        cJSON_AddNumberToObject(b, "timeout", (double)o->timeout) == NULL ||
        cJSON_AddBoolToObject(b, "secure", o->secure != 0) == NULL ||
        (o->allow_internet >= 0 &&
         cJSON_AddBoolToObject(b, "allow_internet_access",
                               o->allow_internet != 0) == NULL) ||
        add_map(b, "metadata", o->metadata) != 0 ||
        add_map(b, "envVars", o->envs) != 0 || add_network(b, o) != 0) {
        cJSON_Delete(b);
        return NULL;
    }
    return b;
}

static int check_opts(const struct abx_create_opts *o, const char **nonce,
                      struct abx_err *err)
{
    *nonce = NULL;
    if (o->template_id == NULL || o->template_id[0] == '\0') {
        abx_err_set(err, ABX_E_INVALID, 0, "", "create sandbox: no template");
        return -1;
    }
    if (o->timeout <= 0) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "create sandbox: timeout must be > 0 s (got %ld)",
                    o->timeout);
        return -1;
    }
    if (!string_map(o->metadata) || !string_map(o->envs)) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "create sandbox: %s must map strings to strings",
                    string_map(o->metadata) ? "envs" : "metadata");
        return -1;
    }
    if (!string_list(o->allow_out) || !string_list(o->deny_out)) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "create sandbox: network.%s must be an array of strings",
                    string_list(o->allow_out) ? "denyOut" : "allowOut");
        return -1;
    }
    if ((unsigned)o->public_traffic > ABX_PUBLIC_TRAFFIC_DENY) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "create sandbox: bad network.allowPublicTraffic value %d",
                    (int)o->public_traffic);
        return -1;
    }
    if (o->nonce_key) {
        const cJSON *v = o->metadata ? cJSON_GetObjectItemCaseSensitive(
                                           o->metadata, o->nonce_key)
                                     : NULL;
        if (!cJSON_IsString(v) || v->valuestring[0] == '\0') {
            abx_err_set(err, ABX_E_INVALID, 0, "",
                        "create sandbox: nonce key '%.64s' is not in metadata",
                        o->nonce_key);
            return -1;
        }
        *nonce = v->valuestring;
    }
    return 0;
}

/* Looks for the sandbox a lost create made. 1 adopted (out filled),
 * 0 none, -1 error. The list does not return the access token, so the
 * sandbox is adopted through POST /connect, which does. */
static int adopt(const struct abx_platform *p, const struct abx_create_opts *o,
                 const char *nonce, struct abx_sandbox_info *out,
                 struct abx_err *err)
{
    struct abx_list_page pg = {0};
    struct abx_list_query q = {0};
    cJSON *filter = cJSON_CreateObject();
    int rc = -1;

    if (filter == NULL ||
        cJSON_AddStringToObject(filter, o->nonce_key, nonce) == NULL) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "create sandbox: out of memory");
        goto out;
    }
    q.metadata = filter;
    q.state = "running,paused";
    if (abx_api_list(p, &q, &pg, err) != 0)
        goto out;
    if (pg.n == 0) {
        rc = 0;
        goto out;
    }
    rc = abx_api_connect(p, pg.items[0].sandbox_id, o->timeout, out, err) == 0
             ? 1
             : -1;
out:
    abx_list_page_free(&pg);
    cJSON_Delete(filter);
    return rc;
}

/* The SDK refuses a sandbox whose envd predates 0.1.0 (or whose version
 * it cannot compare) after the create: it is killed here, before anyone
 * holds it. 0, or -1 with err and *out freed. */
static int envd_gate(const struct abx_platform *p,
                     struct abx_sandbox_info *out, struct abx_err *err)
{
    struct abx_envd_version v;
    struct abx_err kerr;
    char m[sizeof err->message];
    int killed;

    abx_envd_version_parse(out->envd_version, &v);
    if (v.state == ABX_ENVD_VER_UNKNOWN) {
        abx_err_set(err, ABX_E_PROTOCOL, 0, "",
                    "the reply has no envdVersion");
    } else if (abx_envd_require(&v, ABX_ENVD_ANY_USE, err) == 0) {
        return 0;
    }
    abx_err_clear(&kerr);
    killed = abx_api_kill(p, out->sandbox_id, &kerr);
    snprintf(m, sizeof m, "%s", err->message);
    if (killed >= 0)
        abx_err_set(err, err->cls, 0, "", "create sandbox %s: %s (the "
                    "sandbox was killed)", out->sandbox_id, m);
    else
        abx_err_set(err, err->cls, 0, "", "create sandbox %s: %s (killing "
                    "it failed: %.200s)", out->sandbox_id, m, kerr.message);
    abx_sandbox_info_free(out);
    return -1;
}

int abx_api_create(const struct abx_platform *p,
                   const struct abx_create_opts *o,
                   struct abx_sandbox_info *out, struct abx_err *err)
{
    const char *nonce;
    cJSON *body = NULL;
    char what[160];
    int rc = -1;

    memset(out, 0, sizeof *out);
    if (check_opts(o, &nonce, err) != 0)
        return -1;
    /* The template is named whatever the platform's message says (FC's
     * texts are not promised; a refusal may be 404 or 400). */
    snprintf(what, sizeof what, "create sandbox from template '%.100s'", o->template_id);
    if ((body = create_body(o)) == NULL) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "create sandbox: out of memory");
        return -1;
    }
    for (int n = 0;; n++) {
        struct abx_apix_call c = {"POST", "/sandboxes", body, 0, what};
        struct abx_http_resp r;
        int lost, sent;

        /* The engine retries what is safe for a POST: a connect failure
         * and a 429. Everything else is decided here. */
        abx_http_resp_init(&r);
        sent = abx_apix_do(p, &c, &r, err);
        if (sent == 0 && (r.status == 200 || r.status == 201)) {
            rc = abx_apix_parse_sandbox(&r, "create sandbox", out, err);
            abx_http_resp_free(&r);
            if (rc == 0)
                rc = envd_gate(p, out, err);
            break;
        }
        if (sent == 0) {
            lost = r.status == 502 || r.status == 503;
            abx_err_from_api(err, what, r.status, r.body.data, r.body.len);
        } else {
            lost = err->cls == ABX_E_CONNECTION || err->cls == ABX_E_TIMEOUT ||
                   err->cls == ABX_E_PROTOCOL;
        }
        abx_http_resp_free(&r);
        if (!lost || nonce == NULL || n >= MAX_LOST_ROUNDS)
            break;
        /* The sandbox may exist: give the platform a moment, then look. */
        struct abx_err lerr;
        abx_err_clear(&lerr);
        if (abx_http_sleep(0.5 * (n + 1), &lerr) != 0) {
            *err = lerr;
            break;
        }
        int found = adopt(p, o, nonce, out, &lerr);
        if (found == 1) {
            rc = envd_gate(p, out, &lerr);
            if (rc != 0)
                *err = lerr;
            break;
        }
        if (found < 0)
            break;   /* keep the create's own error: it is the cause */
    }
    cJSON_Delete(body);
    return rc;
}
