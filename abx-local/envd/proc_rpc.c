/* process.Process handlers: request parsing (proto3 JSON) on top of the
 * process table in proc.c. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "jsonutil.h"
#include "names.h"

/* ProcessSelector {pid | tag}. 0, or an error code set on rpc. */
static int get_selector(struct abxl_envd_rpc *rpc, struct abxl_envd_selector *sel)
{
    struct abx_json_err je;
    const cJSON *ps;
    const char *tag;
    int64_t pid;
    int rt;

    memset(sel, 0, sizeof *sel);
    if (abx_json_get_object(rpc->req, "process", &ps, &je) ==
        ABX_JSON_EBADTYPE)
        return abxl_envd_rpc_fail(rpc, ABX_CONNECT_INVALID_ARGUMENT, "%s", je.msg);
    if (abx_json_get_int(ps, "pid", &pid, 0, 0, UINT32_MAX, &je) ==
            ABX_JSON_EBADTYPE ||
        (rt = abx_json_get_string(ps, "tag", &tag, NULL, &je)) ==
            ABX_JSON_EBADTYPE)
        return abxl_envd_rpc_fail(rpc, ABX_CONNECT_INVALID_ARGUMENT, "%s", je.msg);
    if (rt == ABX_JSON_OK) {
        sel->by_tag = 1;
        sel->tag = tag;
    } else if (abx_json_field(ps, "pid")) {
        sel->pid = (uint32_t)pid;
    } else {
        return abxl_envd_rpc_fail(rpc, ABX_CONNECT_INVALID_ARGUMENT,
                             "process selector (pid or tag) is required");
    }
    return 0;
}

/* PTY {size {cols, rows}}; 0 or -1 with je filled. */
static int get_size(const cJSON *pty, unsigned *rows, unsigned *cols,
                    struct abx_json_err *je)
{
    const cJSON *size;
    int64_t r, c;

    if (abx_json_get_object(pty, "size", &size, je) == ABX_JSON_EBADTYPE ||
        abx_json_get_int(size, "rows", &r, 24, 0, 65535, je) == ABX_JSON_EBADTYPE ||
        abx_json_get_int(size, "cols", &c, 80, 0, 65535, je) == ABX_JSON_EBADTYPE)
        return -1;
    *rows = (unsigned)r;
    *cols = (unsigned)c;
    return 0;
}

static void h_start(struct abxl_envd_rpc *rpc)
{
    struct abx_json_err je;
    struct abxl_envd_spawn sp;
    const cJSON *pc, *pty;
    char err[1024];
    uint32_t pid;

    memset(&sp, 0, sizeof sp);
    if (abx_json_get_object(rpc->req, "process", &pc, &je) == ABX_JSON_EBADTYPE ||
        abx_json_get_object(rpc->req, "pty", &pty, &je) == ABX_JSON_EBADTYPE ||
        abx_json_get_string(rpc->req, "tag", &sp.tag, NULL, &je) == ABX_JSON_EBADTYPE ||
        abx_json_get_bool(rpc->req, "stdin", &sp.stdin_pipe, 1, &je) == ABX_JSON_EBADTYPE ||
        abx_json_get_string(pc, "cmd", &sp.cmd, "", &je) == ABX_JSON_EBADTYPE ||
        abx_json_get_array(pc, "args", &sp.args, &je) == ABX_JSON_EBADTYPE ||
        abx_json_get_object(pc, "envs", &sp.envs, &je) == ABX_JSON_EBADTYPE ||
        abx_json_get_string(pc, "cwd", &sp.cwd, NULL, &je) == ABX_JSON_EBADTYPE) {
        abxl_envd_stream_end(rpc->stream, ABX_CONNECT_INVALID_ARGUMENT, je.msg);
        return;
    }
    if (pty && get_size(pty, &sp.rows, &sp.cols, &je)) {
        abxl_envd_stream_end(rpc->stream, ABX_CONNECT_INVALID_ARGUMENT, je.msg);
        return;
    }
    sp.pty = pty != NULL;
    if (sp.envs) {
        const cJSON *it;

        cJSON_ArrayForEach(it, sp.envs) {
            if (!cJSON_IsString(it)) {
                abxl_envd_stream_end(rpc->stream, ABX_CONNECT_INVALID_ARGUMENT,
                                "field 'envs': values must be strings");
                return;
            }
            if (!abxl_env_name(it->string)) {   /* as the control plane (names.h) */
                char msg[160];
                snprintf(msg, sizeof msg, "field 'envs': '%.64s' is not a variable name",
                         it->string);
                abxl_envd_stream_end(rpc->stream, ABX_CONNECT_INVALID_ARGUMENT, msg);
                return;
            }
        }
    }
    if (!pc || !*sp.cmd) {
        abxl_envd_stream_end(rpc->stream, ABX_CONNECT_INVALID_ARGUMENT,
                        "process.cmd is required");
        return;
    }
    sp.user = rpc->user;
    /* The RPC deadline is also the process's lifetime (envd behaviour). */
    sp.deadline_ms = rpc->deadline_ms;
    if (abxl_envd_proc_start(&sp, rpc->stream, &pid, err, sizeof err))
        abxl_envd_stream_end(rpc->stream, ABX_CONNECT_INVALID_ARGUMENT, err);
}

static void h_connect(struct abxl_envd_rpc *rpc)
{
    struct abxl_envd_selector sel;
    char err[256];

    if (get_selector(rpc, &sel)) {
        abxl_envd_stream_end(rpc->stream, rpc->code, rpc->msg);
        return;
    }
    if (abxl_envd_proc_connect(&sel, rpc->stream, err, sizeof err))
        abxl_envd_stream_end(rpc->stream, ABX_CONNECT_NOT_FOUND, err);
}

static void h_list(struct abxl_envd_rpc *rpc)
{
    cJSON *arr;

    rpc->resp = cJSON_CreateObject();
    arr = cJSON_CreateArray();
    if (!rpc->resp || !arr) {
        cJSON_Delete(arr);
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_INTERNAL, "out of memory");
        return;
    }
    abxl_envd_proc_list(arr);
    if (cJSON_GetArraySize(arr) > 0)
        cJSON_AddItemToObject(rpc->resp, "processes", arr);
    else
        cJSON_Delete(arr);
}

static void h_send_input(struct abxl_envd_rpc *rpc)
{
    struct abx_json_err je;
    struct abxl_envd_selector sel;
    const cJSON *in;
    struct abx_buf data;
    char err[256];
    int rc;

    if (get_selector(rpc, &sel))
        return;
    abx_buf_init(&data, 0);
    if (abx_json_get_object(rpc->req, "input", &in, &je) == ABX_JSON_EBADTYPE ||
        abx_json_get_bytes(in, "stdin", &data, &je) == ABX_JSON_EBADTYPE ||
        abx_json_get_bytes(in, "pty", &data, &je) == ABX_JSON_EBADTYPE) {
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_INVALID_ARGUMENT, "%s", je.msg);
        goto out;
    }
    rc = abxl_envd_proc_input(&sel, abx_json_field(in, "pty") != NULL, data.data,
                         data.len, err, sizeof err);
    if (rc)
        abxl_envd_rpc_fail(rpc, rc, "%s", err);
out:
    abx_buf_free(&data);
}

static const char *const signal_names[] = {
    [0] = "SIGNAL_UNSPECIFIED", [9] = "SIGNAL_SIGKILL", [15] = "SIGNAL_SIGTERM",
};

static void h_send_signal(struct abxl_envd_rpc *rpc)
{
    struct abx_json_err je;
    struct abxl_envd_selector sel;
    char err[256];
    int sig, rc;

    if (get_selector(rpc, &sel))
        return;
    if (abx_json_get_enum(rpc->req, "signal", signal_names, 16, &sig, 0, &je) ==
        ABX_JSON_EBADTYPE) {
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_INVALID_ARGUMENT, "%s", je.msg);
        return;
    }
    if (sig != SIGKILL && sig != SIGTERM) {
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_UNIMPLEMENTED, "invalid signal: %d", sig);
        return;
    }
    rc = abxl_envd_proc_signal(&sel, sig, err, sizeof err);
    if (rc)
        abxl_envd_rpc_fail(rpc, rc, "%s", err);
}

static void h_close_stdin(struct abxl_envd_rpc *rpc)
{
    struct abxl_envd_selector sel;
    char err[256];
    int rc;

    if (get_selector(rpc, &sel))
        return;
    rc = abxl_envd_proc_close_stdin(&sel, err, sizeof err);
    if (rc)
        abxl_envd_rpc_fail(rpc, rc, "%s", err);
}

static void h_update(struct abxl_envd_rpc *rpc)
{
    struct abx_json_err je;
    struct abxl_envd_selector sel;
    const cJSON *pty;
    unsigned rows, cols;
    char err[256];
    int rc;

    if (get_selector(rpc, &sel))
        return;
    if (abx_json_get_object(rpc->req, "pty", &pty, &je) == ABX_JSON_EBADTYPE ||
        (pty && get_size(pty, &rows, &cols, &je))) {
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_INVALID_ARGUMENT, "%s", je.msg);
        return;
    }
    rc = pty ? abxl_envd_proc_resize(&sel, rows, cols, err, sizeof err)
             : abxl_envd_proc_exists(&sel, err, sizeof err);
    if (rc)
        abxl_envd_rpc_fail(rpc, rc, "%s", err);
}

static void h_stream_input(struct abxl_envd_rpc *rpc)
{
    /* Client streaming needs a request body that stays open; SDKs do not
     * use it. */
    abxl_envd_stream_end(rpc->stream, ABX_CONNECT_UNIMPLEMENTED,
                    "process.Process.StreamInput is not implemented");
}

const struct abxl_envd_method abxl_envd_process_methods[] = {
    {"Start", h_start, 1},           {"Connect", h_connect, 1},
    {"List", h_list, 0},             {"SendInput", h_send_input, 0},
    {"SendSignal", h_send_signal, 0}, {"CloseStdin", h_close_stdin, 0},
    {"Update", h_update, 0},         {"StreamInput", h_stream_input, 1},
    {NULL, NULL, 0},
};
