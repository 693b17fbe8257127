/* filesystem.Filesystem handlers. Paths resolve as for /files (relative to
 * the selected user's home); created directories belong to that user.
 * Error texts follow envd's ("file not found: lstat /x: no such file or
 * directory"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "daemon.h"
#include "jsonutil.h"

#define LIST_MAX_ENTRIES 100000

/* Resolves the string field `field` of the request into out. */
/* A write refused by the file system (read-only mount, permissions): a
 * client error, permission_denied, not an internal one. */
static enum abx_connect_code write_code(int e, enum abx_connect_code other)
{
    return e == EACCES || e == EPERM || e == EROFS ? ABX_CONNECT_PERMISSION_DENIED : other;
}

/* Whether dir refuses a new file (read-only, or not ours): a file made and
 * removed at once. gVisor reports no ST_RDONLY for read-only host mounts,
 * so asking the file system is the one answer both runtimes give. */
static bool refuses_writes(const char *dir)
{
    char probe[PATH_MAX];
    struct statvfs vs;
    if (statvfs(dir, &vs) == 0 && (vs.f_flag & ST_RDONLY))
        return true;
    if (snprintf(probe, sizeof probe, "%s/.abx-move-probe-%ld", dir, (long)getpid()) >=
        (int)sizeof probe)
        return false;
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return errno == EROFS || errno == EACCES || errno == EPERM;
    close(fd);
    unlink(probe);
    return false;
}

/* A rename's failure: across mounts (EXDEV) onto a read-only one is a
 * write refused by the file system too. */
static enum abx_connect_code rename_code(int e, const char *dst)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(dst, '/');
    if (e == ENOTDIR || e == EISDIR || e == ENOTEMPTY || e == EINVAL)
        return ABX_CONNECT_INVALID_ARGUMENT;
    if (e == EXDEV && slash) {
        snprintf(dir, sizeof dir, "%.*s", slash == dst ? 1 : (int)(slash - dst), dst);
        if (refuses_writes(dir))
            return ABX_CONNECT_PERMISSION_DENIED;
    }
    return write_code(e, ABX_CONNECT_INTERNAL);
}

static int get_path(struct abxl_envd_rpc *rpc, const char *field, char *out,
                    size_t outlen)
{
    struct abx_json_err je;
    const char *p;
    char msg[256];

    if (abx_json_get_string(rpc->req, field, &p, "", &je) == ABX_JSON_EBADTYPE)
        return abxl_envd_rpc_fail(rpc, ABX_CONNECT_INVALID_ARGUMENT, "%s", je.msg);
    if (abxl_envd_path_resolve(p, rpc->user, out, outlen, msg, sizeof msg))
        return abxl_envd_rpc_fail(rpc, ABX_CONNECT_INVALID_ARGUMENT, "%s", msg);
    return 0;
}

static void set_entry(struct abxl_envd_rpc *rpc, const char *path)
{
    cJSON *e = abxl_envd_entry_info(path);

    if (!e) {
        abxl_envd_rpc_fail(rpc, errno == ENOENT ? ABX_CONNECT_NOT_FOUND
                                           : ABX_CONNECT_INTERNAL,
                      "error getting file info: lstat %s: %s", path,
                      strerror(errno));
        return;
    }
    rpc->resp = cJSON_CreateObject();
    if (!rpc->resp) {
        cJSON_Delete(e);
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_INTERNAL, "out of memory");
        return;
    }
    cJSON_AddItemToObject(rpc->resp, "entry", e);
}

static void h_stat(struct abxl_envd_rpc *rpc)
{
    char path[PATH_MAX];
    struct stat st;

    if (get_path(rpc, "path", path, sizeof path))
        return;
    if (lstat(path, &st) != 0) {
        abxl_envd_rpc_fail(rpc, errno == ENOENT || errno == ENOTDIR
                               ? ABX_CONNECT_NOT_FOUND
                               : ABX_CONNECT_INTERNAL,
                      "file not found: lstat %s: %s", path,
                      errno == ENOENT ? "no such file or directory"
                                      : strerror(errno));
        return;
    }
    set_entry(rpc, path);
}

static void h_make_dir(struct abxl_envd_rpc *rpc)
{
    char path[PATH_MAX];
    struct stat st;

    if (get_path(rpc, "path", path, sizeof path))
        return;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            abxl_envd_rpc_fail(rpc, ABX_CONNECT_ALREADY_EXISTS,
                          "directory already exists: %s", path);
        else
            abxl_envd_rpc_fail(rpc, ABX_CONNECT_INVALID_ARGUMENT,
                          "path already exists but it is not a directory: %s",
                          path);
        return;
    }
    if (abxl_envd_mkdirs(path, 1, rpc->user)) {
        abxl_envd_rpc_fail(rpc, errno == ENOTDIR ? ABX_CONNECT_INVALID_ARGUMENT
                                            : write_code(errno, ABX_CONNECT_INTERNAL),
                      "error creating directory %s: %s", path,
                      strerror(errno));
        return;
    }
    set_entry(rpc, path);
}

static void h_move(struct abxl_envd_rpc *rpc)
{
    char src[PATH_MAX], dst[PATH_MAX];
    struct stat st;

    if (get_path(rpc, "source", src, sizeof src) ||
        get_path(rpc, "destination", dst, sizeof dst))
        return;
    if (lstat(src, &st) != 0) {
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_NOT_FOUND,
                      "source file not found: lstat %s: %s", src,
                      strerror(errno));
        return;
    }
    if (abxl_envd_mkdirs(dst, 0, rpc->user)) {
        abxl_envd_rpc_fail(rpc, write_code(errno, ABX_CONNECT_INTERNAL),
                      "error creating destination directory: %s",
                      strerror(errno));
        return;
    }
    if (rename(src, dst) != 0) {
        int e = errno;
        abxl_envd_rpc_fail(rpc, rename_code(e, dst), "error renaming: rename %s %s: %s", src,
                           dst, strerror(e));
        return;
    }
    set_entry(rpc, dst);
}

static int cmp_names(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int skip_dots(const struct dirent *d)
{
    return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

/* Pre-order walk, lexical per directory; dir is the path as reported. */
static int walk(const char *dir, int depth, cJSON *arr, int *count)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, skip_dots, cmp_names);

    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        char child[PATH_MAX];
        cJSON *e;
        struct stat st;

        if (*count < LIST_MAX_ENTRIES &&
            snprintf(child, sizeof child, "%s/%s",
                     strcmp(dir, "/") == 0 ? "" : dir, names[i]->d_name) <
                (int)sizeof child &&
            (e = abxl_envd_entry_info(child))) {
            cJSON_AddItemToArray(arr, e);
            (*count)++;
            /* Descend into real directories only (no symlink loops). */
            if (depth > 1 && lstat(child, &st) == 0 && S_ISDIR(st.st_mode))
                walk(child, depth - 1, arr, count);
        }
        free(names[i]);
    }
    free(names);
    return 0;
}

static void h_list_dir(struct abxl_envd_rpc *rpc)
{
    struct abx_json_err je;
    char path[PATH_MAX];
    struct stat st;
    int64_t depth;
    int count = 0;
    cJSON *arr;

    if (get_path(rpc, "path", path, sizeof path))
        return;
    if (abx_json_get_int(rpc->req, "depth", &depth, 0, 0, UINT32_MAX, &je) ==
        ABX_JSON_EBADTYPE) {
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_INVALID_ARGUMENT, "%s", je.msg);
        return;
    }
    if (depth == 0)
        depth = 1;
    if (stat(path, &st) != 0) {
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_NOT_FOUND,
                      "directory not found: stat %s: %s", path,
                      strerror(errno));
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_INVALID_ARGUMENT,
                      "path is not a directory: %s", path);
        return;
    }
    arr = cJSON_CreateArray();
    rpc->resp = cJSON_CreateObject();
    if (!arr || !rpc->resp) {
        cJSON_Delete(arr);
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_INTERNAL, "out of memory");
        return;
    }
    if (walk(path, depth > 1000 ? 1000 : (int)depth, arr, &count)) {
        cJSON_Delete(arr);
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_INTERNAL, "error reading directory %s: %s",
                      path, strerror(errno));
        return;
    }
    if (cJSON_GetArraySize(arr) > 0) /* proto3: empty repeated omitted */
        cJSON_AddItemToObject(rpc->resp, "entries", arr);
    else
        cJSON_Delete(arr);
}

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        return rmdir(p) == 0 || errno == ENOENT ? 0 : -1;
    return unlink(p) == 0 || errno == ENOENT ? 0 : -1;
}

static void h_remove(struct abxl_envd_rpc *rpc)
{
    char path[PATH_MAX];
    struct stat st;

    if (get_path(rpc, "path", path, sizeof path))
        return;
    if (lstat(path, &st) != 0)
        return; /* rm -rf: missing is fine */
    if (strcmp(path, "/") == 0 ||
        (S_ISDIR(st.st_mode)
             ? nftw(path, rm_one, 64, FTW_DEPTH | FTW_PHYS) != 0
             : unlink(path) != 0))
        abxl_envd_rpc_fail(rpc, write_code(errno, ABX_CONNECT_INTERNAL),
                      "error removing %s: %s", path, strerror(errno));
}

static int get_watch_args(struct abxl_envd_rpc *rpc, char *path, size_t len,
                          int *recursive, int *include_entry, int *allow_net)
{
    struct abx_json_err je;

    if (get_path(rpc, "path", path, len))
        return -1;
    /* An envd that predates a field never reads it: Connect's JSON codec
     * discards unknown fields (whatever their type). */
    *include_entry = *allow_net = 0;
    if (abx_json_get_bool(rpc->req, "recursive", recursive, 0, &je) ==
            ABX_JSON_EBADTYPE ||
        (abxl_envd_compat.watch_include_entry &&
         abx_json_get_bool(rpc->req, "includeEntry", include_entry, 0, &je) ==
             ABX_JSON_EBADTYPE) ||
        (abxl_envd_compat.watch_network_mounts &&
         abx_json_get_bool(rpc->req, "allowNetworkMounts", allow_net, 0, &je) ==
             ABX_JSON_EBADTYPE))
        return abxl_envd_rpc_fail(rpc, ABX_CONNECT_INVALID_ARGUMENT, "%s", je.msg);
    return 0;
}

static void h_watch_dir(struct abxl_envd_rpc *rpc)
{
    char path[PATH_MAX], err[512];
    enum abx_connect_code code;
    int rec, inc, net;

    if (get_watch_args(rpc, path, sizeof path, &rec, &inc, &net)) {
        abxl_envd_stream_end(rpc->stream, rpc->code, rpc->msg);
        return;
    }
    if (abxl_envd_watch_new(path, rec, inc, net, rpc->stream, NULL, &code, err,
                       sizeof err))
        abxl_envd_stream_end(rpc->stream, code, err);
}

static void h_create_watcher(struct abxl_envd_rpc *rpc)
{
    char path[PATH_MAX], err[512], id[32];
    enum abx_connect_code code;
    int rec, inc, net;

    if (get_watch_args(rpc, path, sizeof path, &rec, &inc, &net))
        return;
    if (abxl_envd_watchers_create(path, rec, inc, net, id, sizeof id, &code, err,
                             sizeof err)) {
        abxl_envd_rpc_fail(rpc, code, "%s", err);
        return;
    }
    rpc->resp = cJSON_CreateObject();
    if (rpc->resp)
        cJSON_AddStringToObject(rpc->resp, "watcherId", id);
}

static const char *watcher_id(struct abxl_envd_rpc *rpc)
{
    struct abx_json_err je;
    const char *id;

    if (abx_json_get_string(rpc->req, "watcherId", &id, "", &je) ==
        ABX_JSON_EBADTYPE) {
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_INVALID_ARGUMENT, "%s", je.msg);
        return NULL;
    }
    return id;
}

static void h_get_watcher_events(struct abxl_envd_rpc *rpc)
{
    const char *id = watcher_id(rpc);
    cJSON *ev;

    if (!id)
        return;
    if (!(ev = abxl_envd_watchers_events(id))) {
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_NOT_FOUND, "watcher with id %s not found",
                      id);
        return;
    }
    rpc->resp = cJSON_CreateObject();
    if (rpc->resp && cJSON_GetArraySize(ev) > 0)
        cJSON_AddItemToObject(rpc->resp, "events", ev);
    else
        cJSON_Delete(ev);
}

static void h_remove_watcher(struct abxl_envd_rpc *rpc)
{
    const char *id = watcher_id(rpc);

    if (id && abxl_envd_watchers_remove(id))
        abxl_envd_rpc_fail(rpc, ABX_CONNECT_NOT_FOUND, "watcher with id %s not found",
                      id);
}

const struct abxl_envd_method abxl_envd_filesystem_methods[] = {
    {"Stat", h_stat, 0},
    {"MakeDir", h_make_dir, 0},
    {"Move", h_move, 0},
    {"ListDir", h_list_dir, 0},
    {"Remove", h_remove, 0},
    {"WatchDir", h_watch_dir, 1},
    {"CreateWatcher", h_create_watcher, 0},
    {"GetWatcherEvents", h_get_watcher_events, 0},
    {"RemoveWatcher", h_remove_watcher, 0},
    {NULL, NULL, 0},
};
