/* `abx-e2e doctor`: the "config" section. Each variable the suite reads,
 * its value and where it came from (the environment, a .env file, the
 * default, or abx-local with --local), read with the same files and
 * precedence as config.c: the option table's variables, read from the
 * config's layers. The API key appears only as its length. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_int.h"
#include "dotenv.h"
#include "optable.h"

/* The variables abx-local's values replace with --local. */
static int from_local(const char *var)
{
    static const char *const vars[] = {"ABX_SANDBOX_API_KEY", "ABX_SANDBOX_BASE_URL",
                                       "ABX_SANDBOX_DOMAIN", "ABX_SANDBOX_URL",
                                       "E2E_PLATFORM", "ABX_LOCAL_PROFILE"};

    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (strcmp(var, vars[i]) == 0)
            return 1;
    return 0;
}

/* What abx-local gave for var (--local). */
static void local_value(const struct abx_env *e, const char *var, char *out, size_t outlen)
{
    const struct abx_platform *p = &e->platform;

    if (strcmp(var, "ABX_SANDBOX_API_KEY") == 0)
        snprintf(out, outlen, "set (%zu characters, masked)", strlen(p->api_key));
    else if (strcmp(var, "ABX_SANDBOX_BASE_URL") == 0)
        snprintf(out, outlen, "%s", p->api_url);
    else if (strcmp(var, "ABX_SANDBOX_DOMAIN") == 0)
        snprintf(out, outlen, "%s", p->domain);
    else if (strcmp(var, "ABX_SANDBOX_URL") == 0)
        snprintf(out, outlen, "%s", p->sandbox_url[0] ? p->sandbox_url : "not set");
    else
        snprintf(out, outlen, "%s", e->platform_kind);
}

/* A variable nobody set and without a default: what that means. */
static void unset_value(const struct abx_env *e, const char *var, char *out, size_t outlen)
{
    if (strcmp(var, "ABX_SANDBOX_BASE_URL") == 0)
        snprintf(out, outlen, "%s (from the domain)",
                 e->has_platform ? e->platform.api_url : "https://api.<domain>");
    else if (strcmp(var, "ABX_SANDBOX_URL") == 0)
        snprintf(out, outlen, "not set (sandboxes at <port>-<id>.<domain>)");
    else if (strcmp(var, "E2E_CAPS") == 0)
        snprintf(out, outlen, "not set (the platform's documented set)");
    else if (strcmp(var, "E2E_RUN_ID") == 0)
        snprintf(out, outlen, "not set (this run's: %s)", e->run_id);
    else
        snprintf(out, outlen, "not set");
}

void abx_doctor_config(struct abx_doc *d)
{
    const struct abx_env *e = d->env;
    cJSON *sec = abx_doc_section(d, "config", "config");
    char val[640], src[640];

    /* Each variable of the option table, as abx_cli_parse read it. */
    for (size_t i = 0; i < abx_noptdefs; i++) {
        const struct abx_optdef *def = &abx_optdefs[i];
        const char *list[4] = {def->env[0], def->env[1], def->env[2], NULL};
        const char *which = NULL, *from = NULL, *v, *var = def->env[0];
        cJSON *o;

        if (!var || def->names)
            continue;
        o = cJSON_AddObjectToObject(sec, var);
        v = abx_layers_get_any(d->cfg->layers, list, &which, &from);
        if (d->o->local && from_local(var)) {
            local_value(e, var, val, sizeof val);
            /* --local set the platform kind to the profile it started */
            snprintf(src, sizeof src, "abx-local (profile %s)", e->platform_kind);
        } else if (v) {
            /* A credential: its length only, never a character of it. */
            if (def->secret)
                snprintf(val, sizeof val, "set (%zu characters, masked)", strlen(v));
            else
                snprintf(val, sizeof val, "%s", v);
            /* Found under its older name (E2B_*): say which. */
            snprintf(src, sizeof src, "%s%s%s%s", from ? from : "?",
                     strcmp(which, var) != 0 ? " (as " : "",
                     strcmp(which, var) != 0 ? which : "",
                     strcmp(which, var) != 0 ? ")" : "");
        } else if (def->def) {
            snprintf(val, sizeof val, "%s", def->def);
            snprintf(src, sizeof src, "default");
        } else {
            unset_value(e, var, val, sizeof val);
            snprintf(src, sizeof src, "unset");
        }
        abx_doc_str(o, "value", val);
        abx_doc_str(o, "source", src);
        abx_doc_line(d, "%-21s %s  [%s]", var, val, src);
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
}
