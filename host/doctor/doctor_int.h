/* `abx-e2e doctor`: internals shared by doctor.c (flow, control plane,
 * templates, closing report), doctor_config.c (the values and their
 * sources), doctor_sbx.c (one sandbox, clock skew) and doctor_caps.c
 * (capabilities and the tests they skip). Not part of the host's
 * interface (doctor.h has abx_doctor_main only).
 *
 * Every fact is recorded in one cJSON tree (printed whole with --json)
 * and, without --json, printed as it is learned, through abx_out_* (the
 * masker): a slow create shows where the doctor is. */
#ifndef ABX_DOCTOR_INT_H
#define ABX_DOCTOR_INT_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "envd.h"

#include "doctor.h"

#define ABX_DOC_SANDBOX_TIMEOUT 60L /* s: the doctor's one sandbox */
#define ABX_DOC_SKEW_WARN 2.0       /* s of clock skew worth a warning */

/* Presence of a template: known present, known missing, or unknown
 * (GET /templates not available, or not asked). */
enum abx_doc_presence {
    ABX_DOC_UNKNOWN = -1,
    ABX_DOC_MISSING = 0,
    ABX_DOC_PRESENT = 1
};

struct abx_doc {
    const struct abx_config *cfg;
    const struct abx_opts *o;      /* &cfg->opt */
    const struct abx_env *env;     /* &cfg->env */
    int json;    /* --json: print only the tree, at the end */
    cJSON *root; /* every fact, by section */
    cJSON *problems, *warnings;
    int nproblems, nwarnings;
    int cp_ok; /* control plane reachable and authenticated */
    /* e2e_test of the doctor's sandboxes: a node id as the suite's are,
     * with the characters a platform might refuse in a metadata value. */
    const char *tag_test_id;
    enum abx_doc_presence base, code, server;
};

/* A section: its heading (text) and its object in the tree. */
cJSON *abx_doc_section(struct abx_doc *d, const char *key, const char *title);
/* One indented line of text (nothing with --json). */
void abx_doc_line(struct abx_doc *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A blocking problem and its one-line fix (exit 1). */
void abx_doc_problem(struct abx_doc *d, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A warning: worth fixing, the suite still runs. */
void abx_doc_warn(struct abx_doc *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* cJSON string member, also when v is NULL (then null). */
void abx_doc_str(cJSON *o, const char *key, const char *v);

/* doctor_config.c: the "config" section. */
void abx_doctor_config(struct abx_doc *d);
/* doctor_sbx.c: the "sandbox" and "clock skew" sections. */
void abx_doctor_sandbox(struct abx_doc *d);
/* doctor_probe.c: `bash -l -c cmd` as the default user, as commands.run
 * does; its stdout (capped) and exit code. 0, or -1 with err. */
int abx_doc_run(const struct abx_endpoint *ep, const char *cmd, char *out, size_t outlen,
                int *exit_code, struct abx_err *err);
/* In base's sandbox: default user, home and cwd, the suite's tools, an
 * upload of the default run's largest size. */
void abx_doc_probe_base(struct abx_doc *d, cJSON *sec, const struct abx_endpoint *ep);
/* The server template's server (port, create-time envs) and
 * code-interpreter-v1 (code on 49999), each in a sandbox of group. */
void abx_doc_probe_templates(struct abx_doc *d, cJSON *sec, uint64_t group);
/* doctor_local.c, with --local: the "local host" section (abx-local
 * check), then abx-local started into env when nothing blocks it. */
void abx_doctor_local(struct abx_doc *d, struct abx_config *cfg);
/* doctor_caps.c: the "capabilities" section. */
void abx_doctor_caps(struct abx_doc *d);

#endif
