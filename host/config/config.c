/* The one config (config.h, struct abx_config): the environment and the
 * .env files (tests-lua/.env, .env, client-sdk/.env; README "Credentials
 * and `.env`") and the command line, read once through the option table
 * (optable.c), then what they make: the platform, the run id, the
 * capabilities, and the settings the bindings read. Credentials go into
 * the masker before anything is printed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "caps.h"
#include "config.h"
#include "dotenv.h"
#include "out.h"
#include "random.h"

const char *const abx_env_files[] = {"tests-lua/.env", ".env", "client-sdk/.env"};
const size_t abx_nenv_files = sizeof abx_env_files / sizeof abx_env_files[0];

/* "e2e-<UTC time>-<32 random bits>". 0, or -1 with errno (no random
 * bytes: no run id, the run's tag must be its own). */
static int make_run_id(char *out, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    char r[9];

    if (abx_random_hex(r, 4) != 0)
        return -1;
    gmtime_r(&now, &tm);
    /* 32 random bits: the run's tag is swept platform-wide at its end, so
     * two CI jobs started in the same second must not share it (16 bits
     * gave a matrix of 20 jobs a 0.3% chance of one killing another). */
    snprintf(out, len, "e2e-%04d%02d%02d%02d%02d%02d-%s", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, r);
    return 0;
}

/* The platform kind ("fc" or "e2b") and its capability set, adjusted by
 * o->caps_spec (E2E_CAPS). 0, or -1 with err (usage error). */
static int set_platform(struct abx_env *e, const struct abx_opts *o, const char *kind,
                        char *err, size_t errlen)
{
    unsigned bits;

    if (abx_caps_of_platform(kind, &bits) != 0) {
        snprintf(err, errlen, "E2E_PLATFORM expects fc or e2b, got '%.64s'", kind);
        return -1;
    }
    if (abx_caps_adjust(&bits, o->caps_spec ? o->caps_spec : "", err, errlen) != 0)
        return -1;
    snprintf(e->platform_kind, sizeof e->platform_kind, "%s", kind);
    e->caps = bits;
    return 0;
}

/* What the variables make. A platform value that does not parse is kept
 * as e->platform_err: fatal unless --local replaces it. 0, or -1 with
 * err (usage error). */
static int derive_env(struct abx_env *e, const struct abx_opts *o, char *err, size_t errlen)
{
    memset(e, 0, sizeof *e);
    e->has_credentials = o->api_key != NULL;
    snprintf(e->missing, sizeof e->missing, "%s",
             e->has_credentials ? "" : "ABX_SANDBOX_API_KEY");
    snprintf(e->endpoint, sizeof e->endpoint, "%s",
             o->api_url ? o->api_url : o->domain ? o->domain : "(default)");
    if (o->run_id)
        snprintf(e->run_id, sizeof e->run_id, "%s", o->run_id);
    else if (make_run_id(e->run_id, sizeof e->run_id) != 0) {
        snprintf(err, errlen, "no random bytes for a run id (getrandom: %s): set E2E_RUN_ID",
                 strerror(errno));
        return -1;
    }
    /* --local: the cloud its profile imitates, known before it starts */
    if (set_platform(e, o, o->local ? o->profile : o->platform, err, errlen) != 0)
        return -1;
    if (e->has_credentials &&
        abx_platform_init(&e->platform, o->api_key, o->api_url, o->domain, o->sandbox_url,
                          e->platform_err, sizeof e->platform_err) == 0)
        e->has_platform = 1;
    return 0;
}

/* Every credential value is masked, the older names' too: before any
 * word of the command line is printed. */
static void mask_credentials(const struct abx_layers *layers)
{
    static const char *const secrets[] = {"ABX_SANDBOX_API_KEY", "E2B_API_KEY",
                                          "E2B_ACCESS_TOKEN", NULL};

    for (size_t i = 0; secrets[i]; i++) {
        const char *s = abx_layers_get(layers, secrets[i], NULL);
        if (s && *s)
            abx_mask_add_str(abx_out_masker(), s);
    }
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
    int rc;

    memset(cfg, 0, sizeof *cfg);
    load_selftest(cfg);
    /* A .env that does not load is said after argv is read: --help
     * still works. */
    if (abx_layers_load(&cfg->layers, abx_env_files, abx_nenv_files, err, sizeof err) == 0)
        mask_credentials(cfg->layers);
    rc = abx_cli_parse(argc, argv, cfg->layers, &cfg->opt);
    if (rc == 1) {               /* --help, --version: printed */
        *exit_code = ABX_EXIT_OK;
        return -1;
    }
    if (!cfg->layers) {
        abx_out_printf(ABX_OUT_STDERR, "ERROR: configuration: %s\n", err);
        *exit_code = ABX_EXIT_USAGE_ERROR;
        return -1;
    }
    if (rc != 0) {
        *exit_code = ABX_EXIT_USAGE_ERROR;
        return -1;
    }
    if (derive_env(&cfg->env, &cfg->opt, err, sizeof err) != 0) {
        abx_out_printf(ABX_OUT_STDERR, "ERROR: configuration: %s\n", err);
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
    l->sandbox_ttl = o->sandbox_ttl;
    l->server_template = o->server_template;
    l->server_port = o->server_port;
    l->short_ttl = o->short_ttl;
    l->allow_skips = o->allow_skips;
    l->keep_failed = o->keep_failed;
    l->platform_kind = e->platform_kind;
    l->caps = e->caps;
    l->default_user = o->default_user;
    l->local_platform = o->local;
}

void abx_config_free(struct abx_config *cfg)
{
    abx_cli_free(&cfg->opt);
    abx_layers_free(cfg->layers);
    cfg->layers = NULL;
}
