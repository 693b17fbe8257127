/* Configuration: environment, then tests-lua/.env, .env, client-sdk/.env
 * (README.md "Credentials and `.env`"). Credentials go into the masker
 * before anything is printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "caps.h"
#include "dotenv.h"
#include "host.h"
#include "ledger.h"
#include "out.h"

static void make_run_id(char *out, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    unsigned r = (unsigned)getpid() ^ (unsigned)now;
    FILE *f = fopen("/dev/urandom", "rb");

    if (f) {
        if (fread(&r, sizeof r, 1, f) != 1)
            r ^= (unsigned)clock();
        fclose(f);
    }
    gmtime_r(&now, &tm);
    /* 32 random bits: the run's tag is swept platform-wide at its end, so
     * two CI jobs started in the same second must not share it (16 bits
     * gave a matrix of 20 jobs a 0.3% chance of one killing another). */
    snprintf(out, len, "e2e-%04d%02d%02d%02d%02d%02d-%08x", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             r & 0xffffffffu);
}

/* A name-like knob: letters, digits, '.', '_', '-' only (it lands in
 * paths and shell words of tests). */
static int name_ok(const char *s, size_t cap)
{
    size_t n = strlen(s);

    if (n == 0 || n >= cap)
        return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789._-") == n;
}

/* E2E_PLATFORM, E2E_CAPS and E2E_DEFAULT_USER (docs/capabilities.md). */
static int load_suite_knobs(struct abx_env *e, const struct abx_layers *cfg,
                            char *err, size_t errlen)
{
    const char *kind = abx_layers_get(cfg, "E2E_PLATFORM", NULL);
    const char *spec = abx_layers_get(cfg, "E2E_CAPS", NULL);
    const char *user = abx_layers_get(cfg, "E2E_DEFAULT_USER", NULL);

    if (spec && strlen(spec) >= sizeof e->caps_spec) {
        snprintf(err, errlen, "E2E_CAPS: too long (at most %zu bytes)",
                 sizeof e->caps_spec - 1);
        return -1;
    }
    snprintf(e->caps_spec, sizeof e->caps_spec, "%s", spec ? spec : "");
    user = user && *user ? user : "user";
    if (!name_ok(user, sizeof e->default_user)) {
        snprintf(err, errlen, "E2E_DEFAULT_USER: expected a user name "
                 "(letters, digits, '.', '_', '-'; at most %zu bytes)",
                 sizeof e->default_user - 1);
        return -1;
    }
    snprintf(e->default_user, sizeof e->default_user, "%s", user);
    kind = kind && *kind ? kind : ABX_CAPS_DEFAULT_PLATFORM;
    return abx_env_set_platform(e, kind, err, errlen);
}

int abx_env_set_platform(struct abx_env *e, const char *kind, char *err,
                         size_t errlen)
{
    unsigned bits;

    if (abx_caps_of_platform(kind, &bits) != 0) {
        snprintf(err, errlen, "E2E_PLATFORM: expected fc or e2b, got "
                 "'%.64s'", kind);
        return -1;
    }
    if (abx_caps_adjust(&bits, e->caps_spec, err, errlen) != 0)
        return -1;
    snprintf(e->platform_kind, sizeof e->platform_kind, "%s", kind);
    e->caps = bits;
    return 0;
}

/* The platform and the suite's knobs. A platform value that does not
 * parse is kept as e->platform_err: fatal unless --local replaces it. */
static int load_platform(struct abx_env *e, const struct abx_layers *cfg,
                         const char *key, char *err, size_t errlen)
{
    static const char *const api[] = {"ABX_SANDBOX_BASE_URL", "E2B_API_URL",
                                      NULL};
    static const char *const dom[] = {"ABX_SANDBOX_DOMAIN", "E2B_DOMAIN",
                                      NULL};
    static const char *const sbx[] = {"ABX_SANDBOX_URL", "E2B_SANDBOX_URL",
                                      NULL};
    const char *tmpl = abx_layers_get(cfg, "E2E_SERVER_TEMPLATE", NULL);
    const char *which = NULL;
    size_t i;

    if (abx_layers_get_long(cfg, "E2E_SANDBOX_TTL", 300, 1, 86400,
                            &e->sandbox_ttl, err, errlen) != 0 ||
        abx_layers_get_long(cfg, "E2E_SERVER_PORT", 8080, 1, 65535,
                            &e->server_port, err, errlen) != 0 ||
        abx_layers_get_long(cfg, "E2E_SHORT_TTL", 20, 1, 3600,
                            &e->short_ttl, err, errlen) != 0)
        return -1;
    tmpl = tmpl && *tmpl ? tmpl : "python-hello";
    for (i = 0; tmpl[i]; i++)
        if ((unsigned char)tmpl[i] <= ' ' || tmpl[i] == 0x7f)
            break;
    if (tmpl[i] || i >= sizeof e->server_template) {
        snprintf(err, errlen, "E2E_SERVER_TEMPLATE: expected a template "
                 "name (no spaces, at most %zu bytes)",
                 sizeof e->server_template - 1);
        return -1;
    }
    memcpy(e->server_template, tmpl, i + 1);
    if (load_suite_knobs(e, cfg, err, errlen) != 0)
        return -1;
    if (!e->has_credentials)
        return 0;
    if (abx_platform_init(&e->platform, key,
                          abx_layers_get_any(cfg, api, &which, NULL),
                          abx_layers_get_any(cfg, dom, NULL, NULL),
                          abx_layers_get_any(cfg, sbx, NULL, NULL),
                          e->platform_err, sizeof e->platform_err) != 0)
        return 0;
    e->has_platform = 1;
    return 0;
}

int abx_env_load(struct abx_env *e, char *err, size_t errlen)
{
    static const char *const files[] = {"tests-lua/.env", ".env",
                                        "client-sdk/.env"};
    static const char *const keys[] = {"ABX_SANDBOX_API_KEY", "E2B_API_KEY",
                                       NULL};
    static const char *const urls[] = {"ABX_SANDBOX_BASE_URL",
                                       "E2B_API_URL", "ABX_SANDBOX_DOMAIN",
                                       "E2B_DOMAIN", NULL};
    struct abx_layers *cfg = NULL;
    const char *key, *url, *rid, *secret_names[] = {
        "ABX_SANDBOX_API_KEY", "E2B_API_KEY", "E2B_ACCESS_TOKEN", NULL};
    size_t i;
    int rc = -1;

    memset(e, 0, sizeof *e);
    if (abx_layers_load(&cfg, files, sizeof files / sizeof *files, err,
                        errlen) != 0)
        goto out;
    /* Every credential value is masked, including the fallback's. */
    for (i = 0; secret_names[i]; i++) {
        const char *s = abx_layers_get(cfg, secret_names[i], NULL);
        if (s && *s)
            abx_mask_add_str(abx_out_masker(), s);
    }
    key = abx_layers_get_any(cfg, keys, NULL, NULL);
    e->has_credentials = key && *key;
    snprintf(e->missing, sizeof e->missing, "%s",
             e->has_credentials ? "" : "ABX_SANDBOX_API_KEY");
    url = abx_layers_get_any(cfg, urls, NULL, NULL);
    snprintf(e->endpoint, sizeof e->endpoint, "%s",
             url && *url ? url : "(default)");
    rid = abx_layers_get(cfg, "E2E_RUN_ID", NULL);
    if (rid && *rid) {
        char path[512];
        /* It names the ledger file and the metadata tag. */
        if (strlen(rid) >= sizeof e->run_id ||
            abx_ledger_path(rid, path, sizeof path) != 0) {
            snprintf(err, errlen, "E2E_RUN_ID: expected letters, digits, "
                     "'.', '_' or '-' (at most %zu, not starting with "
                     "'.')", sizeof e->run_id - 1);
            goto out;
        }
        snprintf(e->run_id, sizeof e->run_id, "%s", rid);
    } else {
        make_run_id(e->run_id, sizeof e->run_id);
    }
    if (load_platform(e, cfg, key, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    abx_layers_free(cfg);
    return rc;
}

/* The self-tests' knobs: never read outside them. */
static void load_selftest(struct abx_config *cfg)
{
    const char *st = getenv("ABX_E2E_SELFTEST");
    const char *g = getenv("ABX_E2E_WATCHDOG_EXTRA");

    cfg->selftest = st && strcmp(st, "1") == 0;
    cfg->watchdog_extra = -1;
    if (cfg->selftest && g)
        abx_parse_double(g, 0, 3600, &cfg->watchdog_extra);
}

int abx_config_build(struct abx_config *cfg, int argc, char **argv, int *exit_code)
{
    char err[1024];
    int env_rc, rc;

    memset(cfg, 0, sizeof *cfg);
    load_selftest(cfg);
    /* Credentials first: nothing may be printed before the masker knows
     * them (not even a usage error echoing an argument). */
    env_rc = abx_env_load(&cfg->env, err, sizeof err);
    rc = abx_cli_parse(argc, argv, &cfg->opt);
    if (rc == 1) {               /* --help, --version: printed */
        *exit_code = ABX_EXIT_OK;
        return -1;
    }
    if (env_rc != 0) {
        abx_out_printf(ABX_OUT_STDERR, "ERROR: configuration: %s\n", err);
        *exit_code = ABX_EXIT_USAGE_ERROR;
        return -1;
    }
    if (rc != 0) {
        *exit_code = ABX_EXIT_USAGE_ERROR;
        return -1;
    }
    abx_config_seal(cfg);
    return 0;
}

void abx_config_seal(struct abx_config *cfg)
{
    const struct abx_opts *o = &cfg->opt;
    const struct abx_env *e = &cfg->env;
    struct abx_e2e_settings *l = &cfg->lua;

    memset(l, 0, sizeof *l);
    l->timeout = o->timeout;
    l->teardown_budget = ABX_TEARDOWN_BUDGET;
    if (o->timeout > 0 && o->timeout < ABX_TEARDOWN_BUDGET)
        l->teardown_budget = o->timeout;
    l->capture = !o->no_capture && !o->exec && !o->repl;
    l->plain = o->exec || o->repl;
    l->has_credentials = e->has_credentials;
    l->missing_credentials = e->missing;
    l->run_id = e->run_id;
    l->selftest = cfg->selftest;
    l->platform = e->has_platform ? &e->platform : NULL;
    l->sandbox_ttl = e->sandbox_ttl;
    l->server_template = e->server_template;
    l->server_port = e->server_port;
    l->short_ttl = e->short_ttl;
    l->allow_skips = o->allow_skips;
    l->keep_failed = o->keep_failed;
    l->platform_kind = e->platform_kind;
    l->caps = e->caps;
    l->default_user = e->default_user;
    l->local_platform = o->local;
}

void abx_config_free(struct abx_config *cfg)
{
    abx_cli_free(&cfg->opt);
}
