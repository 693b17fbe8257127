/* Integration driver for the envd and code-interpreter clients against a
 * running abx-local (E2B_* from the environment; envd_local.py starts
 * one). Shared helpers, and check macros for the clients' calls built on
 * tests/lib/check.h. */
#ifndef ABX_ENVD_TEST_H
#define ABX_ENVD_TEST_H

#include <stdio.h>
#include <string.h>

/* The driver's files share one pair of check counters (envd_test_main.c
 * defines them). */
#define CHECK_SHARED_COUNTERS
#include "check.h"

#include "api.h"
#include "buf.h"
#include "codeint.h"
#include "envd.h"

/* Calls of the runtime's clients (rc < 0 and an abx_err on failure),
 * rc evaluated first. A call that must succeed: */
#define CHECK_OK(rc, err)                                                 \
    do {                                                                  \
        long long rc_ = (long long)(rc);                                  \
        CHECK_MSG(rc_ >= 0, "%s failed: %s: %s", #rc,                     \
                  abx_errclass_name((err)->cls), (err)->message);         \
    } while (0)

/* A call that must fail with class want_cls. */
#define CHECK_ERR(rc, err, want_cls)                                      \
    do {                                                                  \
        long long rc_ = (long long)(rc);                                  \
        CHECK_MSG(rc_ < 0 && (err)->cls == (want_cls),                    \
                  "%s: rc %lld, class %s (%s), want %s", #rc, rc_,        \
                  abx_errclass_name((err)->cls), (err)->message,          \
                  abx_errclass_name(want_cls));                           \
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
