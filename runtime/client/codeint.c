/* Code interpreter client (docs/protocol.md "Code interpreter"): POST
 * /execute with the NDJSON reply parsed line by line as bytes arrive, and
 * /contexts. The output callback runs outside curl's callbacks (it may
 * call the HTTP engine itself), from lines queued by the parser. */
#include "codeint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envd_internal.h"
#include "escape.h"
#include "jsonutil.h"

#define LINE_MAX_BYTES ((size_t)32 * 1024 * 1024)
#define ERRBODY_MAX 65536

static int st_fail(struct abx_exec_state *st, enum abx_errclass c,
                   const char *msg)
{
    if (!st->failed) {
        abx_err_set(&st->err, c, st->status, "", "execute: %s", msg);
        st->failed = 1;
    }
    return -1;
}

int abx_exec_state_init(struct abx_exec_state *st)
{
    cJSON *logs;

    memset(st, 0, sizeof *st);
    abx_buf_init(&st->line, LINE_MAX_BYTES);
    abx_buf_init(&st->errbody, ERRBODY_MAX);
    abx_err_clear(&st->err);
    st->out = cJSON_CreateObject();
    st->pending = cJSON_CreateArray();
    logs = cJSON_AddObjectToObject(st->out, "logs");
    if (!st->pending || !logs || !cJSON_AddArrayToObject(st->out, "results") ||
        !cJSON_AddArrayToObject(logs, "stdout") ||
        !cJSON_AddArrayToObject(logs, "stderr")) {
        abx_exec_state_free(st);
        return -1;
    }
    return 0;
}

void abx_exec_state_free(struct abx_exec_state *st)
{
    abx_buf_free(&st->line);
    abx_buf_free(&st->errbody);
    cJSON_Delete(st->out);
    cJSON_Delete(st->pending);
    st->out = st->pending = NULL;
}

static int add_log(struct abx_exec_state *st, const char *stream,
                   const cJSON *line)
{
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(line, "text");
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(st->out, "logs"), stream);
    cJSON *item;

    if (!cJSON_IsString(text))
        return st_fail(st, ABX_E_PROTOCOL, "a log line without 'text'");
    if (!cJSON_AddItemToArray(arr, cJSON_CreateString(text->valuestring)))
        return st_fail(st, ABX_E_SANDBOX, "out of memory");
    if (!st->callbacks)
        return 0;
    item = cJSON_CreateArray();
    if (!cJSON_AddItemToArray(st->pending, item) ||
        !cJSON_AddItemToArray(item, cJSON_CreateString(stream)) ||
        !cJSON_AddItemToArray(item, cJSON_CreateString(text->valuestring)))
        return st_fail(st, ABX_E_SANDBOX, "out of memory");
    return 0;
}

/* The line object without its "type", into out[key] (array or value). */
static int keep(struct abx_exec_state *st, const cJSON *line, const char *key,
                int append)
{
    cJSON *copy = cJSON_Duplicate(line, 1);

    if (!copy)
        return st_fail(st, ABX_E_SANDBOX, "out of memory");
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "type");
    if (append) {
        if (cJSON_AddItemToArray(
                cJSON_GetObjectItemCaseSensitive(st->out, key), copy))
            return 0;
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(st->out, key);
        if (cJSON_AddItemToObject(st->out, key, copy))
            return 0;
    }
    cJSON_Delete(copy);
    return st_fail(st, ABX_E_SANDBOX, "out of memory");
}

int abx_exec_line(struct abx_exec_state *st, const char *p, size_t n)
{
    const cJSON *type;
    cJSON *line;
    int rc = 0;
    size_t i;

    for (i = 0; i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'); i++)
        ;
    if (i == n || st->finished)
        return 0;       /* blank lines; anything after the end */
    line = abx_json_parse(p, n);
    type = cJSON_GetObjectItemCaseSensitive(line, "type");
    if (!cJSON_IsObject(line) || !cJSON_IsString(type)) {
        cJSON_Delete(line);
        return st_fail(st, ABX_E_PROTOCOL,
                       "malformed output line (not a JSON object with a "
                       "'type')");
    }
    if (strcmp(type->valuestring, "stdout") == 0 ||
        strcmp(type->valuestring, "stderr") == 0) {
        rc = add_log(st, type->valuestring, line);
    } else if (strcmp(type->valuestring, "result") == 0) {
        rc = keep(st, line, "results", 1);
    } else if (strcmp(type->valuestring, "error") == 0) {
        rc = keep(st, line, "error", 0);    /* the last one wins */
    } else if (strcmp(type->valuestring, "number_of_executions") == 0) {
        const cJSON *c =
            cJSON_GetObjectItemCaseSensitive(line, "execution_count");
        cJSON_DeleteItemFromObjectCaseSensitive(st->out, "execution_count");
        if (cJSON_IsNumber(c) &&
            !cJSON_AddNumberToObject(st->out, "execution_count",
                                     c->valuedouble))
            rc = st_fail(st, ABX_E_SANDBOX, "out of memory");
    } else if (strcmp(type->valuestring, "end_of_execution") == 0) {
        st->finished = 1;
    }
    /* keepalive and unknown types: ignored. */
    cJSON_Delete(line);
    return rc;
}

int abx_exec_feed(struct abx_exec_state *st, long status, const char *p,
                  size_t n)
{
    const char *nl;

    if (st->failed)
        return -1;
    st->status = status;
    if (status != 200) {
        size_t room = st->errbody.max - st->errbody.len;
        if (abx_buf_append(&st->errbody, p, n < room ? n : room) != 0) {
            /* Out of memory: the error message shows less of the body. */
        }
        return 0;
    }
    while (n > 0) {
        nl = memchr(p, '\n', n);
        if (!nl) {
            if (abx_buf_append(&st->line, p, n))
                return st_fail(st, ABX_E_PROTOCOL,
                               "an output line over the 32 MiB cap");
            return 0;
        }
        if (st->line.len) {
            if (abx_buf_append(&st->line, p, (size_t)(nl - p)))
                return st_fail(st, ABX_E_PROTOCOL,
                               "an output line over the 32 MiB cap");
            if (abx_exec_line(st, st->line.data, st->line.len))
                return -1;
            abx_buf_reset(&st->line);
        } else if (abx_exec_line(st, p, (size_t)(nl - p))) {
            return -1;
        }
        n -= (size_t)(nl - p) + 1;
        p = nl + 1;
    }
    return 0;
}

/* ---- HTTP ------------------------------------------------------------- */

struct exec_ctx {
    struct abx_exec_state st;
    struct abx_http_xfer *x;
};

static int exec_sink(void *ud, long status, const char *p, size_t n)
{
    struct exec_ctx *c = ud;

    if (abx_exec_feed(&c->st, status, p, n) == 0)
        return 0;
    if (c->x)
        abx_http_xfer_fail(c->x, &c->st.err);
    return 1;
}

static void http_err(struct abx_err *err, const char *what, long status,
                     const char *body, size_t len)
{
    char text[512];
    size_t n = len < sizeof text - 1 ? len : sizeof text - 1;

    if (status == 400 || status == 401 || status == 429 || status == 507) {
        abx_err_from_envd_http(err, what, status, body, len);
        return;
    }
    /* The interpreter's errors are plain text. */
    memcpy(text, body ? body : "", body ? n : 0);
    text[body ? n : 0] = '\0';
    if (status == 404)
        abx_err_set(err, ABX_E_NOT_FOUND, status, "", "%s: %s", what, text);
    else if (status == 502)
        abx_err_set(err, ABX_E_TIMEOUT, status, "",
                    "%s: 502: the sandbox is probably not running: %s", what,
                    text);
    else
        abx_err_set(err, ABX_E_SANDBOX, status, "", "%s: %ld: %s", what,
                    status, text);
}

/* Runs the queued output callbacks. 0, or -1 when one asked to stop. */
static int dispatch(struct exec_ctx *c, const struct abx_exec_opts *o)
{
    cJSON *item;

    while ((item = c->st.pending->child) != NULL) {
        int stop;

        cJSON_DetachItemViaPointer(c->st.pending, item);
        stop = o->on_output(o->ud, item->child->valuestring,
                            item->child->next->valuestring);
        cJSON_Delete(item);
        if (stop)
            return -1;
    }
    return 0;
}

static int exec_request(const struct abx_endpoint *ep,
                        const struct abx_exec_opts *o, struct exec_ctx *c,
                        struct abx_err *err)
{
    static const char *const extra[] = {"Content-Type: application/json",
                                        NULL};
    struct abx_envd_call call;
    struct abx_http_resp resp;
    struct abx_buf body;
    cJSON *j = cJSON_CreateObject();
    int rc = -1, r, trc;
    struct abx_err terr;

    abx_envd_call_init(&call);
    abx_buf_init(&body, 0);
    abx_http_resp_init(&resp);
    if (!j || !cJSON_AddStringToObject(j, "code", o->code) ||
        (o->context_id &&
         !cJSON_AddStringToObject(j, "context_id", o->context_id)) ||
        (o->language && !cJSON_AddStringToObject(j, "language", o->language)) ||
        (o->envs && !cJSON_AddItemToObject(j, "env_vars",
                                           cJSON_Duplicate(o->envs, 1))) ||
        abx_json_append(&body, j)) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "execute: out of memory");
        goto out;
    }
    if (abx_envd_call_prepare(&call, ep, "POST", "/execute", NULL, NULL,
                              extra, "execute", err))
        goto out;
    call.req.body = body.data;
    call.req.body_len = body.len;
    call.req.timeout = o->timeout > 0 ? o->timeout : 0;
    call.req.sink = exec_sink;
    call.req.sink_ud = c;
    c->x = abx_http_start(&call.req, err);
    if (!c->x)
        goto out;
    for (;;) {
        r = abx_envd_drive(c->x, 0.1, err);
        if (r < 0)
            goto out;
        if (o->on_output && dispatch(c, o)) {
            abx_err_set(err, ABX_E_CANCELED, 0, "",
                        "execute: aborted by the output callback");
            goto out;
        }
        if (r == 1)
            break;
    }
    abx_err_clear(&terr);
    trc = abx_http_finish(c->x, &resp, &terr);
    c->x = NULL;
    if (c->st.failed) {
        *err = c->st.err;
        goto out;
    }
    if (trc) {
        if (terr.cls == ABX_E_TIMEOUT)
            abx_err_set(err, ABX_E_TIMEOUT, 0, "",
                        "execute: execution timed out (%s)", terr.message);
        else if (c->st.status == 200 && terr.cls != ABX_E_CANCELED)
            abx_err_set(err, ABX_E_PROTOCOL, 200, "",
                        "execute: stream truncated before its end (%s)",
                        terr.message);
        else
            *err = terr;
        goto out;
    }
    if (resp.status != 200) {
        http_err(err, "execute", resp.status, c->st.errbody.data,
                 c->st.errbody.len);
        goto out;
    }
    /* A last line without its '\n'. */
    if (c->st.line.len &&
        abx_exec_line(&c->st, c->st.line.data, c->st.line.len)) {
        *err = c->st.err;
        goto out;
    }
    if (o->on_output && dispatch(c, o)) {
        abx_err_set(err, ABX_E_CANCELED, 0, "",
                    "execute: aborted by the output callback");
        goto out;
    }
    if (!c->st.finished) {
        abx_err_set(err, ABX_E_PROTOCOL, 200, "",
                    "execute: stream truncated: no end_of_execution line");
        goto out;
    }
    rc = 0;
out:
    if (c->x) {
        abx_http_finish(c->x, &resp, &terr);
        c->x = NULL;
    }
    cJSON_Delete(j);
    abx_envd_call_free(&call);
    abx_buf_free(&body);
    abx_http_resp_free(&resp);
    return rc;
}

int abx_code_execute(const struct abx_endpoint *ep,
                     const struct abx_exec_opts *o, cJSON **out,
                     struct abx_err *err)
{
    struct exec_ctx c;
    int rc;

    *out = NULL;
    if (!o->code) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "execute: no code given");
        return -1;
    }
    if (o->language && o->context_id) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "execute: language and context are mutually exclusive");
        return -1;
    }
    if (o->envs && !cJSON_IsObject(o->envs)) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "execute: envs is not an object");
        return -1;
    }
    if (abx_exec_state_init(&c.st)) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "execute: out of memory");
        return -1;
    }
    c.st.callbacks = o->on_output != NULL;
    c.x = NULL;
    rc = exec_request(ep, o, &c, err);
    if (rc == 0) {
        *out = c.st.out;
        c.st.out = NULL;
    }
    abx_exec_state_free(&c.st);
    return rc;
}

/* ---- contexts ------------------------------------------------------------ */

static int ci_call(const struct abx_endpoint *ep, const char *method,
                   const char *path, const cJSON *json, const char *what,
                   cJSON **out, struct abx_err *err)
{
    static const char *const extra[] = {"Content-Type: application/json",
                                        NULL};
    struct abx_envd_call c;
    struct abx_http_resp resp;
    struct abx_buf body;
    int rc = -1;

    if (out)
        *out = NULL;
    abx_envd_call_init(&c);
    abx_buf_init(&body, 0);
    abx_http_resp_init(&resp);
    if (json && abx_json_append(&body, json)) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "%s: request too long", what);
        goto out;
    }
    if (abx_envd_call_prepare(&c, ep, method, path, NULL, NULL,
                              json ? extra : NULL, what, err))
        goto out;
    c.req.body = json ? body.data : NULL;
    c.req.body_len = json ? body.len : 0;
    if (abx_http_do(&c.req, &resp, err))
        goto out;
    if (resp.status < 200 || resp.status >= 300) {
        http_err(err, what, resp.status, resp.body.data, resp.body.len);
        goto out;
    }
    rc = out ? abx_envd_parse_object(&resp, what, out, err) : 0;
out:
    abx_envd_call_free(&c);
    abx_buf_free(&body);
    abx_http_resp_free(&resp);
    return rc;
}

int abx_code_create_context(const struct abx_endpoint *ep,
                            const char *language, const char *cwd,
                            cJSON **out, struct abx_err *err)
{
    cJSON *j = cJSON_CreateObject();
    int rc;

    *out = NULL;
    if (!j || (language && !cJSON_AddStringToObject(j, "language", language)) ||
        (cwd && !cJSON_AddStringToObject(j, "cwd", cwd))) {
        cJSON_Delete(j);
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "create context: out of memory");
        return -1;
    }
    rc = ci_call(ep, "POST", "/contexts", j, "create context", out, err);
    cJSON_Delete(j);
    if (rc == 0 &&
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(*out, "id"))) {
        cJSON_Delete(*out);
        *out = NULL;
        abx_err_set(err, ABX_E_PROTOCOL, 200, "",
                    "create context: the reply has no 'id'");
        return -1;
    }
    return rc;
}

int abx_code_delete_context(const struct abx_endpoint *ep, const char *id,
                            struct abx_err *err)
{
    struct abx_buf path;
    int rc = -1;

    abx_buf_init(&path, 4096);
    if (!id || !id[0]) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "delete context: no id");
        goto out;
    }
    if (abx_buf_appends(&path, "/contexts/") ||
        abx_esc_pct(&path, id, strlen(id), 0)) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "delete context: id too long");
        goto out;
    }
    rc = ci_call(ep, "DELETE", path.data, NULL, "delete context", NULL, err);
out:
    abx_buf_free(&path);
    return rc;
}
