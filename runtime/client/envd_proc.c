/* Processes over envd's process.Process service (docs/protocol.md
 * "Process events"): Start/Connect streams (events decoded as they arrive, the first
 * one must be start, exitCode absent = 0, keepalives skipped) and the
 * unary SendSignal, SendInput, CloseStdin and List. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envd_internal.h"
#include "jsonutil.h"
#include "trace.h"

struct abx_proc {
    struct abx_envd_stream st;
    struct abx_envd_qnode *cur;     /* the event last handed out */
    int end_returned;
};

static int bad(struct abx_envd_stream *s, struct abx_err *err,
               const char *msg)
{
    abx_err_set(err, ABX_E_PROTOCOL, s->status, "", "%s: %s", s->what, msg);
    return -1;
}

static int parse_end(struct abx_envd_stream *s, const cJSON *end,
                     struct abx_err *err)
{
    struct abx_envd_qnode *n;
    struct abx_json_err je;
    int64_t code;
    int exited;
    const char *status, *error;

    if (!cJSON_IsObject(end))
        return bad(s, err, "end event is not an object");
    if (abx_json_get_int(end, "exitCode", &code, 0, INT32_MIN, INT32_MAX,
                         &je) < 0 ||
        abx_json_get_bool(end, "exited", &exited, 0, &je) < 0 ||
        abx_json_get_string(end, "status", &status, "", &je) < 0 ||
        abx_json_get_string(end, "error", &error, "", &je) < 0)
        return bad(s, err, je.msg);
    n = abx_envd_qnode_new(ABX_PROC_END, NULL, 0);
    if (!n)
        return bad(s, err, "out of memory");
    n->exit_code = (int)code;
    n->exited = exited;
    snprintf(n->status, sizeof n->status, "%s", status);
    snprintf(n->error, sizeof n->error, "%s", error);
    s->got_end = 1;
    cJSON *e = abx_trace_new("exit");
    if (e) {
        cJSON_AddNumberToObject(e, "pid", s->pid);
        cJSON_AddNumberToObject(e, "exit_code", (double)code);
        if (status[0])
            cJSON_AddStringToObject(e, "status", status);
        if (error[0])
            cJSON_AddStringToObject(e, "error", error);
        abx_trace_add(e);
    }
    return abx_envd_stream_push(s, n, err);
}

/* A command's output into the test's trace as it arrives (trace.h). */
static void trace_output(const struct abx_envd_stream *s, const char *stream,
                         const struct abx_buf *b)
{
    cJSON *e = abx_trace_new("output");
    if (e == NULL)
        return;
    cJSON_AddNumberToObject(e, "pid", s->pid);
    cJSON_AddStringToObject(e, "stream", stream);
    abx_trace_put_text(e, "data", b->data, b->len);
    abx_trace_add(e);
}

static int parse_data(struct abx_envd_stream *s, const cJSON *data,
                      struct abx_err *err)
{
    static const char *const names[] = {"stdout", "stderr", "pty"};
    static const int kinds[] = {ABX_PROC_STDOUT, ABX_PROC_STDERR,
                                ABX_PROC_PTY};
    struct abx_json_err je;
    struct abx_buf b;
    size_t i;
    int rc = 0;

    if (!cJSON_IsObject(data))
        return bad(s, err, "data event is not an object");
    abx_buf_init(&b, ABX_ENVD_MAX_MSG);
    for (i = 0; i < 3 && rc == 0; i++) {
        struct abx_envd_qnode *n;
        int r = abx_json_get_bytes(data, names[i], &b, &je);

        if (r == ABX_JSON_ABSENT)
            continue;
        if (r < 0) {
            rc = bad(s, err, je.msg);
            break;
        }
        if (b.len == 0)
            continue;
        trace_output(s, names[i], &b);
        n = abx_envd_qnode_new(kinds[i], b.data, b.len);
        if (!n)
            rc = bad(s, err, "out of memory");
        else
            rc = abx_envd_stream_push(s, n, err);
        abx_buf_reset(&b);
    }
    abx_buf_free(&b);
    return rc;
}

int abx_envd_proc_msg(struct abx_envd_stream *s, const cJSON *msg,
                      struct abx_err *err)
{
    const cJSON *ev = abx_json_field(msg, "event"), *start;
    int64_t pid;
    struct abx_json_err je;

    if (ev && !cJSON_IsObject(ev))
        return bad(s, err, "'event' is not an object");
    start = ev ? abx_json_field(ev, "start") : NULL;
    if (!s->started) {
        const cJSON *first = ev ? ev->child : NULL;

        if (!start) {
            abx_err_set(err, ABX_E_PROTOCOL, s->status, "",
                        "%s: failed to start process: expected a start "
                        "event, got '%.40s'", s->what,
                        first && first->string ? first->string : "nothing");
            return -1;
        }
        if (!cJSON_IsObject(start))
            return bad(s, err, "start event is not an object");
        if (abx_json_get_int(start, "pid", &pid, 0, 0, UINT32_MAX, &je) < 0)
            return bad(s, err, je.msg);
        s->pid = (uint32_t)pid;
        s->started = 1;
        return 0;
    }
    if (!ev || s->got_end)
        return 0;       /* nothing we know, or after the end: ignored */
    if (start)
        return bad(s, err, "a second start event");
    if (abx_json_field(ev, "data"))
        return parse_data(s, abx_json_field(ev, "data"), err);
    if (abx_json_field(ev, "end"))
        return parse_end(s, abx_json_field(ev, "end"), err);
    return 0;           /* keepalive, or an event type we do not know */
}

static struct abx_proc *open_proc(const struct abx_endpoint *ep,
                                  const char *method, const cJSON *req,
                                  const char *user, double timeout,
                                  const char *what, struct abx_err *err)
{
    struct abx_proc *pr = calloc(1, sizeof *pr);

    if (!pr) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "%s: out of memory", what);
        return NULL;
    }
    abx_envd_stream_init(&pr->st, abx_envd_proc_msg, what, 0);
    if (abx_envd_stream_open(&pr->st, ep, method, req, user, timeout, err) ||
        abx_envd_stream_wait_start(&pr->st, ep->request_timeout, err)) {
        abx_proc_close(pr);
        return NULL;
    }
    return pr;
}

struct abx_proc *abx_proc_start(const struct abx_endpoint *ep,
                                const struct abx_proc_cfg *cfg,
                                struct abx_err *err)
{
    cJSON *req = NULL, *proc, *args;
    const char *const *a;
    const char *user;
    struct abx_proc *pr = NULL;

    if (!cfg->cmd || !cfg->cmd[0]) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "start process: empty cmd");
        return NULL;
    }
    if (cfg->timeout < 0) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "start process: negative timeout");
        return NULL;
    }
    if (cfg->envs && !cJSON_IsObject(cfg->envs)) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "start process: envs is not an object");
        return NULL;
    }
    /* As the SDK: only an explicit stdin=false is refused by an envd that
     * always opens stdin; left unsaid, "stdin": false is sent anyway. */
    user = cfg->user;
    if ((cfg->stdin_given && !cfg->stdin_open &&
         abx_envd_require(&ep->ver, ABX_ENVD_STDIN_CHOICE, err)) ||
        abx_envd_default_user(&ep->ver, &user, err))
        return NULL;
    req = cJSON_CreateObject();
    proc = cJSON_AddObjectToObject(req, "process");
    args = cJSON_AddArrayToObject(proc, "args");
    if (!proc || !args || !cJSON_AddStringToObject(proc, "cmd", cfg->cmd))
        goto oom;
    for (a = cfg->args; a && *a; a++)
        if (!cJSON_AddItemToArray(args, cJSON_CreateString(*a)))
            goto oom;
    if (cfg->envs &&
        !cJSON_AddItemToObject(proc, "envs", cJSON_Duplicate(cfg->envs, 1)))
        goto oom;
    if (cfg->cwd && !cJSON_AddStringToObject(proc, "cwd", cfg->cwd))
        goto oom;
    if (cfg->tag && !cJSON_AddStringToObject(req, "tag", cfg->tag))
        goto oom;
    if (!cJSON_AddBoolToObject(req, "stdin", cfg->stdin_open ? 1 : 0))
        goto oom;
    pr = open_proc(ep, "process.Process/Start", req, user, cfg->timeout,
                   "start process", err);
    cJSON_Delete(req);
    return pr;
oom:
    cJSON_Delete(req);
    abx_err_set(err, ABX_E_SANDBOX, 0, "", "start process: out of memory");
    return NULL;
}

/* {"process":{"pid":N}} */
static cJSON *selector(uint32_t pid)
{
    cJSON *req = cJSON_CreateObject();
    cJSON *p = cJSON_AddObjectToObject(req, "process");

    if (!p || !cJSON_AddNumberToObject(p, "pid", (double)pid)) {
        cJSON_Delete(req);
        return NULL;
    }
    return req;
}

struct abx_proc *abx_proc_connect(const struct abx_endpoint *ep,
                                  uint32_t pid, double timeout,
                                  struct abx_err *err)
{
    char what[64];
    cJSON *req = selector(pid);
    struct abx_proc *pr;

    snprintf(what, sizeof what, "connect to process %u", pid);
    if (!req) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "%s: out of memory", what);
        return NULL;
    }
    if (timeout < 0)
        timeout = 0;
    pr = open_proc(ep, "process.Process/Connect", req, NULL, timeout, what,
                   err);
    cJSON_Delete(req);
    return pr;
}

uint32_t abx_proc_pid(const struct abx_proc *pr)
{
    return pr ? pr->st.pid : 0;
}

int abx_proc_next(struct abx_proc *pr, struct abx_proc_event *ev,
                  double until, struct abx_err *err)
{
    struct abx_envd_qnode *n;
    int r;

    free(pr->cur);
    pr->cur = NULL;
    memset(ev, 0, sizeof *ev);
    if (pr->end_returned) {
        abx_err_set(err, ABX_E_INVALID, 0, "ended",
                    "%s: the process already ended", pr->st.what);
        return -1;
    }
    r = abx_envd_stream_next(&pr->st, &n, until, err);
    if (r == 1) {
        pr->cur = n;
        ev->type = (enum abx_proc_ev_type)n->kind;
        ev->data = n->data;
        ev->len = n->len;
        if (n->kind == ABX_PROC_END) {
            ev->exit_code = n->exit_code;
            ev->exited = n->exited;
            memcpy(ev->status, n->status, sizeof ev->status);
            memcpy(ev->error, n->error, sizeof ev->error);
            pr->end_returned = 1;
        }
        return 1;
    }
    if (r < 0 && err->cls == ABX_E_OK)
        abx_err_set(err, ABX_E_PROTOCOL, pr->st.status, "",
                    "%s: Command ended without an end event", pr->st.what);
    return r;
}

void abx_proc_close(struct abx_proc *pr)
{
    if (!pr)
        return;
    free(pr->cur);
    abx_envd_stream_free(&pr->st);
    free(pr);
}

/* ---- unary ------------------------------------------------------------- */

int abx_envd_signal(const struct abx_endpoint *ep, uint32_t pid, int sig,
                    struct abx_err *err)
{
    cJSON *req;

    if (sig != 9 && sig != 15) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "signal %d not supported (9 or 15)", sig);
        return -1;
    }
    req = selector(pid);
    if (req && !cJSON_AddStringToObject(req, "signal", sig == 9
                                                          ? "SIGNAL_SIGKILL"
                                                          : "SIGNAL_SIGTERM")) {
        cJSON_Delete(req);
        req = NULL;
    }
    if (abx_envd_call_json(ep, "process.Process/SendSignal", req, NULL, 1,
                           NULL, err) == 0)
        return 1;
    return err->cls == ABX_E_NOT_FOUND ? 0 : -1;
}

int abx_envd_send_stdin(const struct abx_endpoint *ep, uint32_t pid,
                        const void *data, size_t len, struct abx_err *err)
{
    cJSON *req = selector(pid), *input;

    input = req ? cJSON_AddObjectToObject(req, "input") : NULL;
    if (!input || abx_json_add_bytes(input, "stdin", data, len)) {
        cJSON_Delete(req);
        req = NULL;
    }
    /* Not idempotent: a retried input would be written twice. */
    return abx_envd_call_json(ep, "process.Process/SendInput", req, NULL, 0,
                              NULL, err);
}

int abx_envd_close_stdin(const struct abx_endpoint *ep, uint32_t pid,
                         struct abx_err *err)
{
    /* Refused before anything is sent: an older envd has no such RPC. */
    if (abx_envd_require(&ep->ver, ABX_ENVD_CLOSE_STDIN, err))
        return -1;
    return abx_envd_call_json(ep, "process.Process/CloseStdin", selector(pid),
                              NULL, 1, NULL, err);
}

int abx_envd_proc_list(const struct abx_endpoint *ep, cJSON **out,
                       struct abx_err *err)
{
    cJSON *resp = NULL;

    *out = NULL;
    if (abx_envd_rpc_ex(ep, "process.Process/List", NULL, NULL, 0, 1, &resp,
                        err))
        return -1;
    return abx_envd_take_array(resp, "processes", "envd process.Process/List",
                               out, err);
}
