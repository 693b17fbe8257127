/* Integration driver for the envd and code-interpreter clients against a
 * running abx-local (E2B_* from the environment; envd_local.py starts
 * one). Shared helpers and check macros (counters shared by every file
 * of the driver, unlike tests/unit/check.h's per-file statics). */
#ifndef ABX_ENVD_TEST_H
#define ABX_ENVD_TEST_H

#include <stdio.h>
#include <string.h>

#include "api.h"
#include "buf.h"
#include "codeint.h"
#include "envd.h"

extern int t_failures, t_checks;

#define TCHECK(cond)                                                      \
    do {                                                                  \
        t_checks++;                                                       \
        if (!(cond)) {                                                    \
            t_failures++;                                                 \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__,        \
                    __LINE__, #cond);                                     \
        }                                                                 \
    } while (0)

#define TCHECK_INT(got, want)                                             \
    do {                                                                  \
        long long g_ = (long long)(got), w_ = (long long)(want);          \
        t_checks++;                                                       \
        if (g_ != w_) {                                                   \
            t_failures++;                                                 \
            fprintf(stderr, "%s:%d: %s == %lld, want %lld\n", __FILE__,   \
                    __LINE__, #got, g_, w_);                              \
        }                                                                 \
    } while (0)

#define TCHECK_STR(got, want)                                             \
    do {                                                                  \
        const char *g_ = (got), *w_ = (want);                             \
        t_checks++;                                                       \
        if (!g_ || strcmp(g_, w_) != 0) {                                 \
            t_failures++;                                                 \
            fprintf(stderr, "%s:%d: %s == \"%s\", want \"%s\"\n",         \
                    __FILE__, __LINE__, #got, g_ ? g_ : "(null)", w_);    \
        }                                                                 \
    } while (0)

/* A call that must succeed (rc >= 0); prints the error otherwise. */
#define TCHECK_OK(rc, err)                                                \
    do {                                                                  \
        t_checks++;                                                       \
        if ((rc) < 0) {                                                   \
            t_failures++;                                                 \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__,       \
                    __LINE__, #rc, abx_errclass_name((err)->cls),         \
                    (err)->message);                                      \
        }                                                                 \
    } while (0)

/* A call that must fail with class cls. */
#define TCHECK_ERR(rc, err, want_cls)                                     \
    do {                                                                  \
        t_checks++;                                                       \
        if ((rc) >= 0 || (err)->cls != (want_cls)) {                      \
            t_failures++;                                                 \
            fprintf(stderr, "%s:%d: %s: rc %d, class %s (%s), want %s\n", \
                    __FILE__, __LINE__, #rc, (int)(rc),                   \
                    abx_errclass_name((err)->cls), (err)->message,        \
                    abx_errclass_name(want_cls));                         \
        }                                                                 \
    } while (0)

struct tctx {
    struct abx_platform p;          /* as configured (one data URL) */
    struct abx_platform p_host;     /* no sandbox URL: host form */
    struct abx_sandbox_info info;
    struct abx_endpoint ep;         /* envd through the sandbox URL */
    struct abx_endpoint ep_host;    /* envd through <port>-<id>.<domain> */
    int have_sandbox;
};

/* Platform from E2B_*; a sandbox of template (secure 1/0). 0 or -1. */
int t_setup(struct tctx *t, const char *tmpl, int secure);
void t_teardown(struct tctx *t);

struct run_result {
    struct abx_buf out, err;
    int exit_code, exited, got_end;
    char status[128], error[512];
};
void run_result_init(struct run_result *r);
void run_result_free(struct run_result *r);
/* Runs /bin/bash -l -c cmd and collects everything until the end. */
int t_run(const struct abx_endpoint *ep, const char *cmd, const char *user,
          const char *cwd, double timeout, struct run_result *r,
          struct abx_err *err);
/* Collects events of pr until END (or error, returned as -1). */
int t_collect(struct abx_proc *pr, struct run_result *r, double max_s,
              struct abx_err *err);

/* POST /admin/faults with a JSON body on the control plane. 0 or -1. */
int t_faults(const struct tctx *t, const char *json);

int scenario_process(struct tctx *t);
int scenario_files(struct tctx *t);
int scenario_fs(struct tctx *t);
int scenario_watch(struct tctx *t);
int scenario_signed(struct tctx *t);
int scenario_faults(struct tctx *t);
int scenario_code(struct tctx *t);
int scenario_fake(struct tctx *t);
int scenario_gates(struct tctx *t);

#endif
