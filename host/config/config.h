/* The settings (docs/ARCHITECTURE.md "A flag's way to a worker"): the
 * options and variables of the one table (optable.h), read once into
 * struct abx_config and passed down by const pointer. */
#ifndef ABX_HOST_CONFIG_H
#define ABX_HOST_CONFIG_H

#include "base.h"

/* ---- options (cli.c) -------------------------------------------------- */
/* --dist, as pytest-xdist: which tests a worker may take (sched.c). */
enum abx_dist {
    ABX_DIST_LOAD = 0,   /* any test on any worker */
    ABX_DIST_LOADFILE,   /* a file's tests on one worker */
    ABX_DIST_LOADGROUP,  /* a describe's (or `group`'s) tests on one */
};

struct abx_opts {
    const char *keyword;       /* -k */
    const char *markexpr;      /* -m */
    long maxfail;              /* -x = 1; 0 = unlimited */
    long reruns;               /* --reruns N (0: none) */
    double reruns_delay;       /* --reruns-delay S */
    int fail_on_flaky;         /* --fail-on-flaky */
    int allow_skips;           /* --allow-skips: an unexplained skip stays a skip */
    int lf, ff;
    int lfnf_none;             /* --lfnf none: no failures -> run nothing */
    int collect_only;
    int continue_on_collection_errors;  /* else errors stop the run */
    long shard_k, shard_n;     /* 0/0 = no sharding */
    long durations;            /* -1 = off, 0 = all */
    double timeout;            /* per test, s; 0 = none */
    long max_memory_mb;        /* Lua heap ceiling per worker; 0 = none */
    int workers;               /* -n; 0 = not given (one worker) */
    enum abx_dist dist;        /* --dist (ABX_DIST_LOAD) */
    int verbose;               /* -v count */
    int quiet;                 /* -q count */
    int no_capture;            /* -s */
    char report_chars[32];     /* -r, expanded */
    const char *junitxml, *json, *evidence;
    const char *html;          /* --html FILE: the self-contained page */
    enum abx_trace_mode trace_mode;   /* --trace (retain-on-failure) */
    int trace_given;           /* --trace was on the command line */
    const char *output;        /* --output DIR: traces (test-results) */
    const char *record;        /* --record DIR: --trace on --output DIR */
    long trace_body_max;       /* --trace-body-max (0: 8192) */
    int no_ci_annotations;     /* --no-ci-annotations: no GitHub Actions
                                  annotations or job summary */
    const char *evidence_dir;  /* --evidence-dir (ABX_EVIDENCE_DIR) */
    int color;                 /* 1 on, 0 off */
    const char **paths;        /* positional PATH|NODEID */
    size_t npaths;
    /* exec SCRIPT [ARGS] */
    int exec;
    const char *script;
    char **script_args;
    int nscript_args;
    char *argv_line;           /* the command line, for evidence */
    /* sandboxes: --local, --keep-failed, --trace-http */
    int local;                 /* --local: start abx-local for the run */
    const char *profile;       /* --profile e2b|fc for abx-local, or NULL */
    int keep_failed;           /* --keep-failed */
    int trace_http;            /* --trace-http */
    /* cleanup: the janitor (janitor.c) */
    int cleanup;
    int cleanup_yes;           /* -y, --yes: delete, not a dry run */
    int cleanup_all;           /* --all-tagged */
    const char *cleanup_run;   /* --run-id ID */
    long cleanup_older;        /* --older-than MINUTES; -1: any age */
    /* doctor [--local [--profile P]] [--json]: the preflight (doctor*.c) */
    int doctor;
    int doctor_json;           /* --json: one JSON object instead of text */
    /* merge SHARD.json ... (merge.c), diff-records A B (diffrec.c):
       their operands in paths */
    int merge;
    int diff;
    /* repl [--local [--profile P]] [--trace-http]: the Lua prompt */
    int repl;
    /* The variables of the table (the environment, then the .env files;
       README "Credentials and `.env`"): strings owned by them. */
    const char *api_key;          /* ABX_SANDBOX_API_KEY (E2B_API_KEY) */
    const char *api_url;          /* ABX_SANDBOX_BASE_URL (E2B_API_URL) */
    const char *domain;           /* ABX_SANDBOX_DOMAIN (E2B_DOMAIN) */
    const char *sandbox_url;      /* ABX_SANDBOX_URL (E2B_SANDBOX_URL) */
    const char *run_id;           /* E2E_RUN_ID; NULL: one is made */
    long sandbox_ttl;             /* E2E_SANDBOX_TTL, s */
    const char *server_template;  /* E2E_SERVER_TEMPLATE */
    long server_port;             /* E2E_SERVER_PORT */
    long short_ttl;               /* E2E_SHORT_TTL, s */
    const char *platform;         /* E2E_PLATFORM: fc or e2b */
    const char *caps_spec;        /* E2E_CAPS: +name,-name; NULL: none */
    const char *default_user;     /* E2E_DEFAULT_USER */
    const char *local_profile;    /* ABX_LOCAL_PROFILE: --profile's default */
};

/* The table's defaults, then its variables from layers (NULL: none: a
 * .env that did not load), then argv. 0 ok (run), 1 printed
 * --help/--version (exit 0), -1 usage error (message printed, exit 4).
 * Owns nothing of argv or layers, which must outlive o. */
struct abx_layers;
int abx_cli_parse(int argc, char **argv, const struct abx_layers *layers,
                  struct abx_opts *o);
void abx_cli_free(struct abx_opts *o);

/* ---- configuration (config.c) ----------------------------------------- */
#define ABX_RUN_ID_MAX 96   /* E2E_RUN_ID, with its NUL */
#define ABX_NAME_MAX 128    /* E2E_SERVER_TEMPLATE */
#define ABX_USER_MAX 64     /* E2E_DEFAULT_USER */
/* What the variables (struct abx_opts) make: the platform, the run id
 * and the capabilities. */
struct abx_env {
    int has_credentials;
    char missing[128];     /* "ABX_SANDBOX_API_KEY" */
    char endpoint[512];    /* base URL for evidence ("(default)") */
    char run_id[ABX_RUN_ID_MAX];  /* E2E_RUN_ID, or made up */
    /* The platform (valid when has_platform). */
    struct abx_platform platform;
    int has_platform;
    char platform_err[512];  /* why the configured platform is unusable */
    /* Capabilities (docs/capabilities.md): the platform whose documented
     * set applies (E2E_PLATFORM, or --local's profile) and the set
     * E2E_CAPS makes of it (1u << cap). */
    char platform_kind[8];
    unsigned caps;
};

/* ---- the settings: one config (config.c) ------------------------------
 * Everything the command line, the environment and the .env files say,
 * read and checked once by abx_config_build, then passed down by const
 * pointer (docs/ARCHITECTURE.md "A flag's way to a worker"). No file
 * keeps a setting of its own. */
struct abx_config {
    struct abx_opts opt;          /* argv, through the option table */
    struct abx_env env;           /* the environment and .env files */
    struct abx_e2e_settings lua;  /* what the bindings read: made from both */
    int selftest;                 /* ABX_E2E_SELFTEST=1: test-only hooks */
    double watchdog_extra;        /* ABX_E2E_WATCHDOG_EXTRA (self-tests
                                     only; -1: the built-in margins) */
    struct abx_layers *layers;    /* the environment and .env files, which
                                     opt's strings point into */
};
/* The .env files, in the order they are read (after the environment). */
extern const char *const abx_env_files[];
extern const size_t abx_nenv_files;
/* Reads the environment and .env files (credentials into the masker
 * before anything is printed), then argv. 0: go on; -1: stop with
 * *exit_code (help printed: 0; a usage error, said: 4). */
int abx_config_build(struct abx_config *cfg, int argc, char **argv, int *exit_code);
/* Derives cfg->lua once the platform is known (after --local started
 * abx-local): the last step of building. */
void abx_config_seal(struct abx_config *cfg);
void abx_config_free(struct abx_config *cfg);

#endif
