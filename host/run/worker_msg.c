/* A worker's side of the channel to the runner (worker_int.h): every
 * line masked before it leaves, but for the secrets themselves, which the
 * runner must learn to mask them too. */
#include <stdlib.h>
#include <string.h>

#include "e2e_error.h"
#include "lua_e2e.h"
#include "out.h"
#include "track.h"
#include "worker_int.h"

static int g_out_fd = -1;
static int g_index;
static char *g_last;        /* node id of the last result sent */
/* If the runner is gone (killed), the worker stops as if interrupted, so
 * every pending teardown still runs. */
static int g_parent_gone;

void abx_wmsg_init(int out_fd, int index)
{
    g_out_fd = out_fd;
    g_index = index;
}

int abx_wmsg_index(void) { return g_index; }

const char *abx_wmsg_last(void) { return g_last; }

/* Sends msg (consumed) as one line, masked unless raw is set. */
static void send_line(cJSON *msg, int raw)
{
    if (g_parent_gone) {
        cJSON_Delete(msg);
        return;
    }
    if (abx_chan_send(g_out_fd, msg, raw ? NULL : abx_out_masker()) == -1) {
        g_parent_gone = 1;
        abx_region_interrupt();
    }
}

void abx_wmsg_send(cJSON *msg) { send_line(msg, 0); }

void abx_wmsg_kv(enum abx_msg type, const char *key, const char *val, size_t len)
{
    cJSON *m = abx_msg_new(type);
    char *copy = strndup(val, len);

    if (m && copy) {
        cJSON_AddStringToObject(m, key, copy);
        abx_wmsg_send(m);
    } else {
        cJSON_Delete(m);
    }
    free(copy);
}

void abx_wmsg_emit(void *ud, const char *s, size_t len)
{
    (void)ud;
    abx_wmsg_kv(ABX_MSG_OUT, "s", s, len);
}

void abx_wmsg_secret(void *ud, const char *s, size_t len)
{
    cJSON *m = abx_msg_new(ABX_MSG_SECRET);
    char *copy = strndup(s, len);

    (void)ud;
    if (m && copy) {
        cJSON_AddStringToObject(m, "s", copy);
        /* Raw on purpose: the parent must learn the value to mask it; the
         * pipe is private to this process pair, not an output. */
        send_line(m, 1);
    } else {
        cJSON_Delete(m);
    }
    free(copy);
}

void abx_wmsg_result(struct abx_result *r, char **file_last)
{
    cJSON *m = abx_msg_new(ABX_MSG_RESULT), *j = abx_result_to_json(r);

    if (!m || !j) {
        cJSON_Delete(m);
        cJSON_Delete(j);
        abx_result_free(r);
        return;
    }
    cJSON_AddItemToObject(m, "r", j);
    abx_wmsg_send(m);
    free(g_last);
    g_last = strdup(r->nodeid ? r->nodeid : "");
    if (file_last) {
        free(*file_last);
        *file_last = strdup(r->nodeid ? r->nodeid : "");
    }
    abx_result_free(r);
}

void abx_wmsg_amend(const char *nodeid, const char *msg)
{
    cJSON *m = abx_msg_new(ABX_MSG_AMEND);

    if (!m || !nodeid)
        goto out;
    cJSON_AddStringToObject(m, "nodeid", nodeid);
    cJSON_AddStringToObject(m, "teardown_message", msg);
    abx_wmsg_send(m);
    return;
out:
    cJSON_Delete(m);
}

void abx_wmsg_lifetimes(void)
{
    cJSON *m, *list;

    if (!abx_track_ready() || !(list = abx_track_lifetimes(g_index)))
        return;
    m = cJSON_GetArraySize(list) > 0 ? abx_msg_new(ABX_MSG_SANDBOXES) : NULL;
    if (!m || !cJSON_AddItemToObject(m, "list", list)) {
        cJSON_Delete(list);
        cJSON_Delete(m);
        return;
    }
    abx_wmsg_send(m);
}

void abx_wmsg_free(void)
{
    free(g_last);
    g_last = NULL;
}
