/* Code interpreter client (docs/protocol.md "Code interpreter"): POST
 * /execute on port 49999, NDJSON lines parsed as they arrive, and the
 * contexts API. */
#ifndef ABX_CODEINT_H
#define ABX_CODEINT_H

#include <cjson/cJSON.h>

#include "envd.h"
#include "errclass.h"

struct abx_exec_opts {
    const char *code;
    const char *language;       /* NULL = default (python) */
    const char *context_id;     /* NULL = none; exclusive with language */
    const cJSON *envs;          /* may be NULL */
    double timeout;             /* whole execution, s; 0 = none */
    /* Called for each stdout/stderr line object as it arrives (may be
     * NULL); returning non-zero aborts the execution. */
    int (*on_output)(void *ud, const char *stream, const char *text);
    void *ud;
};

/* *out = {results = [...], logs = {stdout = [...], stderr = [...]},
 * error = {name, value, traceback} | absent, execution_count = N | absent}
 * as a cJSON object (caller frees). Unknown line types are ignored; a
 * stream without end_of_execution is a Protocol error. ep is the
 * endpoint for port 49999. */
int abx_code_execute(const struct abx_endpoint *ep,
                     const struct abx_exec_opts *o, cJSON **out,
                     struct abx_err *err);
/* POST /contexts: *out = {id, language, cwd}. */
int abx_code_create_context(const struct abx_endpoint *ep,
                            const char *language, const char *cwd,
                            cJSON **out, struct abx_err *err);
int abx_code_delete_context(const struct abx_endpoint *ep, const char *id,
                            struct abx_err *err);

#endif
