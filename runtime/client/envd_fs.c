/* Filesystem RPCs over envd's filesystem.Filesystem service
 * (docs/protocol.md "Filesystem calls") and the WatchDir stream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envd_internal.h"
#include "jsonutil.h"

static cJSON *path_req(const char *key, const char *path)
{
    cJSON *req = cJSON_CreateObject();

    if (req && !cJSON_AddStringToObject(req, key, path)) {
        cJSON_Delete(req);
        return NULL;
    }
    return req;
}

static int check_path(const char *what, const char *path, struct abx_err *err)
{
    if (!path) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "%s: no path given", what);
        return -1;
    }
    return 0;
}

/* *entry = resp.entry (detached), a Protocol error when missing. */
static int take_entry(cJSON *resp, const char *what, cJSON **entry,
                      struct abx_err *err)
{
    cJSON *e = cJSON_DetachItemFromObjectCaseSensitive(resp, "entry");

    cJSON_Delete(resp);
    if (!cJSON_IsObject(e)) {
        cJSON_Delete(e);
        abx_err_set(err, ABX_E_PROTOCOL, 200, "",
                    "envd %s: the reply has no 'entry' object", what);
        return -1;
    }
    *entry = e;
    return 0;
}

/* The common shape: {"path": path} to filesystem.Filesystem/<method>. */
static int path_call(const struct abx_endpoint *ep, const char *method,
                     const char *what, const char *path, const char *user,
                     int idempotent, cJSON **resp, struct abx_err *err)
{
    char full[64];

    if (check_path(what, path, err) ||
        abx_envd_default_user(&ep->ver, &user, err))
        return -1;
    snprintf(full, sizeof full, "filesystem.Filesystem/%s", method);
    return abx_envd_call_json(ep, full, path_req("path", path), user,
                              idempotent, resp, err);
}

int abx_envd_stat(const struct abx_endpoint *ep, const char *path,
                  const char *user, cJSON **entry, struct abx_err *err)
{
    cJSON *resp = NULL;

    *entry = NULL;
    if (path_call(ep, "Stat", "stat", path, user, 1, &resp, err))
        return -1;
    return take_entry(resp, "Stat", entry, err);
}

int abx_envd_exists(const struct abx_endpoint *ep, const char *path,
                    const char *user, struct abx_err *err)
{
    cJSON *entry = NULL;

    if (abx_envd_stat(ep, path, user, &entry, err) == 0) {
        cJSON_Delete(entry);
        return 1;
    }
    return err->cls == ABX_E_NOT_FOUND ? 0 : -1;
}

/* UNSPECIFIED (dangling symlinks) are not listed, as the SDKs do. */
static int type_known(const cJSON *e)
{
    static const char *const names[] = {
        "FILE_TYPE_UNSPECIFIED", "FILE_TYPE_FILE", "FILE_TYPE_DIRECTORY",
        "FILE_TYPE_SYMLINK"};
    struct abx_json_err je;
    int t;

    if (abx_json_get_enum(e, "type", names, 4, &t, 0, &je) != ABX_JSON_OK)
        return 0;
    return t != 0;
}

int abx_envd_list(const struct abx_endpoint *ep, const char *path,
                  unsigned depth, const char *user, cJSON **entries,
                  struct abx_err *err)
{
    cJSON *req, *resp = NULL, *list, *e, *next;

    *entries = NULL;
    if (check_path("list", path, err) ||
        abx_envd_default_user(&ep->ver, &user, err))
        return -1;
    if (depth < 1) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "list '%.256s': depth must be at least 1", path);
        return -1;
    }
    req = path_req("path", path);
    if (req && !cJSON_AddNumberToObject(req, "depth", depth)) {
        cJSON_Delete(req);
        req = NULL;
    }
    if (abx_envd_call_json(ep, "filesystem.Filesystem/ListDir", req, user, 1,
                           &resp, err) ||
        abx_envd_take_array(resp, "entries", "envd ListDir", &list, err))
        return -1;
    for (e = list->child; e; e = next) {
        next = e->next;
        if (!cJSON_IsObject(e) || !type_known(e))
            cJSON_Delete(cJSON_DetachItemViaPointer(list, e));
    }
    *entries = list;
    return 0;
}

int abx_envd_make_dir(const struct abx_endpoint *ep, const char *path,
                      const char *user, struct abx_err *err)
{
    if (path_call(ep, "MakeDir", "make_dir", path, user, 0, NULL, err) == 0)
        return 1;
    return strcmp(err->code, "already_exists") == 0 ? 0 : -1;
}

int abx_envd_move(const struct abx_endpoint *ep, const char *src,
                  const char *dst, const char *user, cJSON **entry,
                  struct abx_err *err)
{
    cJSON *req, *resp = NULL;

    if (entry)
        *entry = NULL;
    if (check_path("move", src, err) || check_path("move", dst, err) ||
        abx_envd_default_user(&ep->ver, &user, err))
        return -1;
    req = path_req("source", src);
    if (req && !cJSON_AddStringToObject(req, "destination", dst)) {
        cJSON_Delete(req);
        req = NULL;
    }
    if (abx_envd_call_json(ep, "filesystem.Filesystem/Move", req, user, 0,
                           entry ? &resp : NULL, err))
        return -1;
    return entry ? take_entry(resp, "Move", entry, err) : 0;
}

int abx_envd_remove(const struct abx_endpoint *ep, const char *path,
                    const char *user, struct abx_err *err)
{
    /* rm -rf semantics: a retry cannot do harm. */
    return path_call(ep, "Remove", "remove", path, user, 1, NULL, err);
}

/* ---- WatchDir ------------------------------------------------------------- */

static const char *const ev_names[] = {
    "EVENT_TYPE_UNSPECIFIED", "EVENT_TYPE_CREATE", "EVENT_TYPE_WRITE",
    "EVENT_TYPE_REMOVE", "EVENT_TYPE_RENAME", "EVENT_TYPE_CHMOD"};
static const char *const ev_short[] = {NULL, "create", "write", "remove",
                                       "rename", "chmod"};

const char *abx_envd_watch_type_name(int kind)
{
    if (kind < 1 || kind > 5)
        return NULL;
    return ev_short[kind];
}

struct abx_watch {
    struct abx_envd_stream st;
};

int abx_envd_watch_msg(struct abx_envd_stream *s, const cJSON *msg,
                       struct abx_err *err)
{
    const cJSON *fs;
    const char *name;
    struct abx_json_err je;
    struct abx_envd_qnode *n;
    int t;

    if (!s->started) {
        const cJSON *start = abx_json_field(msg, "start");

        if (!cJSON_IsObject(start)) {
            abx_err_set(err, ABX_E_PROTOCOL, s->status, "",
                        "%s: expected a start event, got '%.40s'", s->what,
                        msg->child && msg->child->string ? msg->child->string
                                                         : "nothing");
            return -1;
        }
        s->started = 1;
        return 0;
    }
    fs = abx_json_field(msg, "filesystem");
    if (!fs)
        return 0;       /* keepalive, or an event we do not know */
    if (!cJSON_IsObject(fs) ||
        abx_json_get_string(fs, "name", &name, "", &je) < 0 ||
        abx_json_get_enum(fs, "type", ev_names, 6, &t, 0, &je) < 0) {
        abx_err_set(err, ABX_E_PROTOCOL, s->status, "",
                    "%s: malformed filesystem event%s%s", s->what,
                    cJSON_IsObject(fs) ? ": " : "",
                    cJSON_IsObject(fs) ? je.msg : "");
        return -1;
    }
    if (t == 0)
        return 0;
    if (strlen(name) >= sizeof(((struct abx_fs_event *)0)->name)) {
        abx_err_set(err, ABX_E_PROTOCOL, s->status, "",
                    "%s: event name too long", s->what);
        return -1;
    }
    n = abx_envd_qnode_new(t, name, strlen(name));
    if (!n) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "%s: out of memory", s->what);
        return -1;
    }
    return abx_envd_stream_push(s, n, err);
}

struct abx_watch *abx_envd_watch(const struct abx_endpoint *ep,
                                 const char *path, int recursive,
                                 const char *user, double timeout,
                                 struct abx_err *err)
{
    struct abx_watch *w;
    cJSON *req;
    char what[320];

    if (check_path("watch", path, err) ||
        (recursive &&
         abx_envd_require(&ep->ver, ABX_ENVD_RECURSIVE_WATCH, err)) ||
        abx_envd_default_user(&ep->ver, &user, err))
        return NULL;
    snprintf(what, sizeof what, "watch '%.256s'", path);
    req = path_req("path", path);
    w = calloc(1, sizeof *w);
    if (!w || !req ||
        (recursive && !cJSON_AddTrueToObject(req, "recursive"))) {
        free(w);
        cJSON_Delete(req);
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "%s: out of memory", what);
        return NULL;
    }
    abx_envd_stream_init(&w->st, abx_envd_watch_msg, what, 0);
    if (abx_envd_stream_open(&w->st, ep, "filesystem.Filesystem/WatchDir",
                             req, user, timeout > 0 ? timeout : 0, err) ||
        abx_envd_stream_wait_start(&w->st, ep->request_timeout, err)) {
        abx_watch_close(w);
        w = NULL;
    }
    cJSON_Delete(req);
    return w;
}

int abx_watch_next(struct abx_watch *w, struct abx_fs_event *ev, double until,
                   struct abx_err *err)
{
    struct abx_envd_qnode *n;
    int r;

    memset(ev, 0, sizeof *ev);
    r = abx_envd_stream_next(&w->st, &n, until, err);
    if (r == 1) {
        memcpy(ev->name, n->data, n->len + 1);
        snprintf(ev->type, sizeof ev->type, "%s",
                 abx_envd_watch_type_name(n->kind));
        free(n);
        return 1;
    }
    if (r < 0 && err->cls == ABX_E_OK)
        abx_err_set(err, ABX_E_SANDBOX, w->st.status, "ended",
                    "%s: the watch stream ended", w->st.what);
    return r;
}

void abx_watch_close(struct abx_watch *w)
{
    if (!w)
        return;
    abx_envd_stream_free(&w->st);
    free(w);
}
