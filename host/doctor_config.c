/* `abx-e2e doctor`: the "config" section. Each variable the suite reads,
 * its value and where it came from (the environment, a .env file, the
 * default, or abx-local with --local), read with the same files and
 * precedence as config.c. The API key appears only as its length. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_int.h"
#include "dotenv.h"

/* The variables the suite reads, with their fallback names. */
enum var_id { V_KEY, V_API, V_DOMAIN, V_SBX_URL, V_PLATFORM, V_CAPS, V_TMPL,
              V_USER, V_TTL };
static const struct var {
    enum var_id id;
    const char *names[3];
    int from_local;  /* --local: abx-local's value replaces the configured */
} VARS[] = {
    {V_KEY, {"ABX_SANDBOX_API_KEY", "E2B_API_KEY", NULL}, 1},
    {V_API, {"ABX_SANDBOX_BASE_URL", "E2B_API_URL", NULL}, 1},
    {V_DOMAIN, {"ABX_SANDBOX_DOMAIN", "E2B_DOMAIN", NULL}, 1},
    {V_SBX_URL, {"ABX_SANDBOX_URL", "E2B_SANDBOX_URL", NULL}, 1},
    {V_PLATFORM, {"E2E_PLATFORM", NULL, NULL}, 1},
    {V_CAPS, {"E2E_CAPS", NULL, NULL}, 0},
    {V_TMPL, {"E2E_SERVER_TEMPLATE", NULL, NULL}, 0},
    {V_USER, {"E2E_DEFAULT_USER", NULL, NULL}, 0},
    {V_TTL, {"E2E_SANDBOX_TTL", NULL, NULL}, 0},
};

/* The value in effect when nothing configures v; 1 when that means the
 * variable is simply unset rather than a default value. */
static int default_value(const struct abx_env *e, enum var_id v, char *out,
                         size_t outlen)
{
    switch (v) {
    case V_KEY: snprintf(out, outlen, "not set"); return 1;
    case V_API:
        if (e->has_platform)
            snprintf(out, outlen, "%s (from the domain)", e->platform.api_url);
        else
            snprintf(out, outlen, "https://api.<domain>");
        return 0;
    case V_DOMAIN: snprintf(out, outlen, "%s", ABX_DEFAULT_DOMAIN); return 0;
    case V_SBX_URL:
        snprintf(out, outlen, "not set (sandboxes at <port>-<id>.<domain>)");
        return 1;
    case V_PLATFORM: snprintf(out, outlen, "%s", e->platform_kind); return 0;
    case V_CAPS:
        snprintf(out, outlen, "not set (the platform's documented set)");
        return 1;
    case V_TMPL: snprintf(out, outlen, "%s", e->server_template); return 0;
    case V_USER: snprintf(out, outlen, "%s", e->default_user); return 0;
    case V_TTL: snprintf(out, outlen, "%ld", e->sandbox_ttl); return 0;
    }
    return 0;
}

/* What abx-local gave for v (--local; only the from_local ones). */
static void local_value(const struct abx_env *e, enum var_id v, char *out,
                        size_t outlen)
{
    const struct abx_platform *p = &e->platform;

    if (v == V_KEY)
        snprintf(out, outlen, "set (%zu characters, masked)",
                 strlen(p->api_key));
    else if (v == V_API)
        snprintf(out, outlen, "%s", p->api_url);
    else if (v == V_DOMAIN)
        snprintf(out, outlen, "%s", p->domain);
    else if (v == V_SBX_URL)
        snprintf(out, outlen, "%s",
                 p->sandbox_url[0] ? p->sandbox_url : "not set");
    else
        snprintf(out, outlen, "%s", e->platform_kind);
}

void abx_doctor_config(struct abx_doc *d)
{
    static const char *const files[] = {"tests-lua/.env", ".env",
                                        "client-sdk/.env"};
    const struct abx_env *e = d->env;
    cJSON *sec = abx_doc_section(d, "config", "config");
    struct abx_layers *cfg = NULL;
    char err[512], val[640], src[640];
    size_t i;

    if (abx_layers_load(&cfg, files, sizeof files / sizeof *files, err,
                        sizeof err) != 0) {
        abx_doc_problem(d, "correct the file and line named",
                        "configuration: %s", err);
        goto out;
    }
    for (i = 0; i < sizeof VARS / sizeof *VARS; i++) {
        const struct var *var = &VARS[i];
        const char *which = NULL, *from = NULL, *v;
        cJSON *o = cJSON_AddObjectToObject(sec, var->names[0]);
        int alias;

        v = abx_layers_get_any(cfg, var->names, &which, &from);
        if (d->o->local && var->from_local) {
            local_value(e, var->id, val, sizeof val);
            /* --local set the platform kind to the profile it started */
            snprintf(src, sizeof src, "abx-local (profile %s)",
                     e->platform_kind);
        } else if (v && *v) {
            /* The key: its length only, never a character of it. */
            if (var->id == V_KEY)
                snprintf(val, sizeof val, "set (%zu characters, masked)",
                         strlen(v));
            else
                snprintf(val, sizeof val, "%s", v);
            /* Found under its fallback name (E2B_*): say which. */
            alias = which && strcmp(which, var->names[0]) != 0;
            snprintf(src, sizeof src, "%s%s%s%s", from ? from : "?",
                     alias ? " (as " : "", alias ? which : "",
                     alias ? ")" : "");
        } else {
            snprintf(src, sizeof src, "%s",
                     default_value(e, var->id, val, sizeof val) ? "unset"
                                                                : "default");
        }
        abx_doc_str(o, "value", val);
        abx_doc_str(o, "source", src);
        abx_doc_line(d, "%-21s %s  [%s]", var->names[0], val, src);
    }
    abx_doc_line(d, "run id: %s (tag e2e=%s)", e->run_id, e->run_id);
    abx_doc_str(sec, "runId", e->run_id);
    if (d->o->local && !e->has_platform)   /* abx-local did not start: said above */
        abx_doc_line(d, "no platform: abx-local did not start (see local host)");
    else if (!e->has_credentials)
        abx_doc_problem(
            d,
            "set ABX_SANDBOX_API_KEY (environment or .env, see "
            ".env.example), or run `abx-e2e doctor --local`",
            "no API key: ABX_SANDBOX_API_KEY (or E2B_API_KEY) is not set");
    else if (!e->has_platform)
        abx_doc_problem(d,
                        "correct ABX_SANDBOX_BASE_URL, ABX_SANDBOX_DOMAIN or "
                        "ABX_SANDBOX_URL (http(s) URLs, a bare domain)",
                        "the platform settings are unusable: %s",
                        e->platform_err);
out:
    abx_layers_free(cfg);
}
