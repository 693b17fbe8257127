/* Directory watching with inotify (recursive by watching every subdir),
 * feeding either a WatchDir stream or a CreateWatcher queue drained by
 * GetWatcherEvents. Event names are relative to the watched directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "random.h"
#include "vec.h"

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | \
                    IN_MOVED_FROM | IN_MOVED_TO)
#define QUEUE_MAX 10000
#define MAX_DIRS 8192
#define MAX_WATCHERS 256

struct wdir {
    int wd;
    char *rel;  /* "" for the root */
};

struct abxl_envd_watch {
    int ifd;
    char root[PATH_MAX];
    int recursive, include_entry;
    struct abxl_envd_stream *s;
    pthread_mutex_t mu;
    cJSON *queue;
    int stop;
    pthread_t thr;
    struct wdir *dirs;
    size_t ndirs, dcap;
};

static void add_tree(struct abxl_envd_watch *w, const char *rel)
{
    char full[PATH_MAX];
    DIR *d;
    struct dirent *de;
    int wd;

    if (w->ndirs >= MAX_DIRS ||
        snprintf(full, sizeof full, "%s%s%s", w->root, *rel ? "/" : "", rel) >=
            (int)sizeof full)
        return;
    wd = inotify_add_watch(w->ifd, full, WATCH_MASK | IN_ONLYDIR);
    if (wd < 0)
        return;
    for (size_t i = 0; i < w->ndirs; i++)
        if (w->dirs[i].wd == wd)
            return; /* already watched (same inode) */
    if (ABX_VEC_RESERVE(w->dirs, w->dcap, w->ndirs + 1) != 0)
        return;
    if (!(w->dirs[w->ndirs].rel = strdup(rel)))
        return;
    w->dirs[w->ndirs++].wd = wd;
    if (!w->recursive || !(d = opendir(full)))
        return;
    while ((de = readdir(d))) {
        char sub[PATH_MAX];
        struct stat st;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "",
                     de->d_name) >= (int)sizeof sub)
            continue;
        if (snprintf(full, sizeof full, "%s/%s", w->root, sub) <
                (int)sizeof full &&
            lstat(full, &st) == 0 && S_ISDIR(st.st_mode))
            add_tree(w, sub);
    }
    closedir(d);
}

static const char *dir_rel(struct abxl_envd_watch *w, int wd)
{
    for (size_t i = 0; i < w->ndirs; i++)
        if (w->dirs[i].wd == wd)
            return w->dirs[i].rel;
    return NULL;
}

static void drop_dir(struct abxl_envd_watch *w, int wd)
{
    for (size_t i = 0; i < w->ndirs; i++)
        if (w->dirs[i].wd == wd) {
            free(w->dirs[i].rel);
            w->dirs[i] = w->dirs[--w->ndirs];
            return;
        }
}

/* Delivers one event; -1 when the stream is over. */
static int deliver_once(struct abxl_envd_watch *w, const char *rel, const char *type)
{
    cJSON *ev = cJSON_CreateObject();
    int rc = 0;

    if (!ev)
        return 0;
    cJSON_AddStringToObject(ev, "name", rel);
    cJSON_AddStringToObject(ev, "type", type);
    if (w->include_entry && strcmp(type, "EVENT_TYPE_REMOVE") != 0 &&
        strcmp(type, "EVENT_TYPE_RENAME") != 0) {
        char full[PATH_MAX];
        cJSON *e;

        if (snprintf(full, sizeof full, "%s/%s", w->root, rel) <
                (int)sizeof full &&
            (e = abxl_envd_entry_info(full)))
            cJSON_AddItemToObject(ev, "entry", e);
    }
    if (w->s) {
        cJSON *msg = cJSON_CreateObject();

        if (msg) {
            cJSON_AddItemToObject(msg, "filesystem", ev);
            ev = NULL;
            rc = abxl_envd_stream_send(w->s, msg);
            cJSON_Delete(msg);
        }
    } else {
        pthread_mutex_lock(&w->mu);
        if (cJSON_GetArraySize(w->queue) < QUEUE_MAX) {
            cJSON_AddItemToArray(w->queue, ev);
            ev = NULL;
        }
        pthread_mutex_unlock(&w->mu);
    }
    cJSON_Delete(ev);
    return rc;
}

/* FC says its watch events may be duplicated (--vary watch-events=twice). */
static int deliver(struct abxl_envd_watch *w, const char *rel, const char *type)
{
    if (deliver_once(w, rel, type))
        return -1;
    return abxl_envd_compat.watch_twice ? deliver_once(w, rel, type) : 0;
}

static int handle(struct abxl_envd_watch *w, const struct inotify_event *e)
{
    const char *base = dir_rel(w, e->wd);
    char rel[PATH_MAX];

    if (e->mask & IN_IGNORED) {
        drop_dir(w, e->wd);
        return 0;
    }
    if (!base || !e->len)
        return 0;
    if (snprintf(rel, sizeof rel, "%s%s%s", base, *base ? "/" : "", e->name) >=
        (int)sizeof rel)
        return 0;
    int new_dir = w->recursive && (e->mask & IN_ISDIR) && (e->mask & (IN_CREATE | IN_MOVED_TO));
    int late = abxl_envd_compat.watch_subdirs_late;
    int rename_to = abxl_envd_compat.watch_rename_to;

    if (new_dir && !late)
        add_tree(w, rel);
    /* envd's order when one event carries several kinds. A rename that
     * names its new name (--vary watch-rename=to) says nothing of the old. */
    if (((e->mask & IN_CREATE) || ((e->mask & IN_MOVED_TO) && !rename_to)) &&
        deliver(w, rel, "EVENT_TYPE_CREATE"))
        return -1;
    if ((e->mask & IN_MOVED_TO) && rename_to && deliver(w, rel, "EVENT_TYPE_RENAME"))
        return -1;
    if ((e->mask & IN_MOVED_FROM) && !rename_to && deliver(w, rel, "EVENT_TYPE_RENAME"))
        return -1;
    /* A watcher that adds a new folder after reporting it (--vary
     * watch-subdirs=late): what happens in it meanwhile goes unseen. */
    if (new_dir && late) {
        struct timespec ts = {0, 300 * 1000 * 1000};
        nanosleep(&ts, NULL);
        add_tree(w, rel);
    }
    if ((e->mask & IN_ATTRIB) && deliver(w, rel, "EVENT_TYPE_CHMOD"))
        return -1;
    if ((e->mask & IN_MODIFY) && deliver(w, rel, "EVENT_TYPE_WRITE"))
        return -1;
    if ((e->mask & IN_DELETE) && deliver(w, rel, "EVENT_TYPE_REMOVE"))
        return -1;
    return 0;
}

static void watch_free(struct abxl_envd_watch *w)
{
    for (size_t i = 0; i < w->ndirs; i++)
        free(w->dirs[i].rel);
    free(w->dirs);
    if (w->ifd >= 0)
        close(w->ifd);
    if (w->s) {
        abxl_envd_stream_end(w->s, ABX_CONNECT_OK, NULL);
        abxl_envd_stream_unref(w->s);
    }
    cJSON_Delete(w->queue);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

static int should_stop(struct abxl_envd_watch *w)
{
    int stop;

    if (w->s)
        return abxl_envd_stream_gone(w->s);
    pthread_mutex_lock(&w->mu);
    stop = w->stop;
    pthread_mutex_unlock(&w->mu);
    return stop;
}

static void *watch_thread(void *arg)
{
    struct abxl_envd_watch *w = arg;
    char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));

    while (!should_stop(w)) {
        struct pollfd p = {.fd = w->ifd, .events = POLLIN};
        ssize_t n;

        if (poll(&p, 1, 250) <= 0)
            continue;
        n = read(w->ifd, buf, sizeof buf);
        if (n <= 0)
            continue;
        for (char *q = buf; q < buf + n;) {
            const struct inotify_event *e = (const struct inotify_event *)q;

            if (handle(w, e))
                goto out;
            q += sizeof *e + e->len;
        }
    }
out:
    if (w->s)
        watch_free(w); /* stream watches own themselves */
    return NULL;
}

/* inotify sees no remote changes on these, so envd refuses them unless
 * the caller allows network mounts. */
static int is_network_fs(const char *dir)
{
    static const unsigned long magic[] = {
        0x6969,      /* NFS */
        0x517B,      /* SMB */
        0xFF534D42,  /* CIFS */
        0xFE534D42,  /* SMB2 */
        0x01021997,  /* 9P */
        0x00C36400,  /* Ceph */
        0x65735546,  /* FUSE (sshfs, gcsfuse, ...) */
    };
    struct statfs sf;

    if (statfs(dir, &sf) != 0)
        return 0;
    for (size_t i = 0; i < sizeof magic / sizeof magic[0]; i++)
        if ((unsigned long)sf.f_type == magic[i])
            return 1;
    return 0;
}

int abxl_envd_watch_new(const char *dir, int recursive, int include_entry,
                   int allow_network, struct abxl_envd_stream *s,
                   struct abxl_envd_watch **out, enum abx_connect_code *code,
                   char *err, size_t errlen)
{
    struct abxl_envd_watch *w;
    struct stat st;

    if (stat(dir, &st) != 0) {
        *code = errno == ENOENT || errno == ENOTDIR ? ABX_CONNECT_NOT_FOUND
                                                    : ABX_CONNECT_INTERNAL;
        snprintf(err, errlen, "path %s not found: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        *code = ABX_CONNECT_INVALID_ARGUMENT;
        snprintf(err, errlen, "path %s not a directory", dir);
        return -1;
    }
    /* envd's code and text (0.5.2, which always refused, and 0.6.4). */
    if (!allow_network && is_network_fs(dir)) {
        *code = ABX_CONNECT_INVALID_ARGUMENT;
        snprintf(err, errlen, "cannot watch path on network filesystem: %s",
                 dir);
        return -1;
    }
    if (!(w = calloc(1, sizeof *w))) {
        *code = ABX_CONNECT_INTERNAL;
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&w->mu, NULL);
    snprintf(w->root, sizeof w->root, "%s", dir);
    w->recursive = recursive;
    w->include_entry = include_entry;
    w->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    w->queue = s ? NULL : cJSON_CreateArray();
    if (w->ifd < 0 || (!s && !w->queue)) {
        *code = ABX_CONNECT_INTERNAL;
        snprintf(err, errlen, "cannot create watcher: %s", strerror(errno));
        watch_free(w);
        return -1;
    }
    add_tree(w, "");
    if (w->ndirs == 0) {
        *code = ABX_CONNECT_INTERNAL;
        snprintf(err, errlen, "cannot watch %s", dir);
        watch_free(w);
        return -1;
    }
    if (s) {
        cJSON *start = cJSON_CreateObject();

        cJSON_AddItemToObject(start, "start", cJSON_CreateObject());
        abxl_envd_stream_send(s, start);
        cJSON_Delete(start);
        abxl_envd_stream_ref(s);
        w->s = s;
    }
    {
        pthread_attr_t attr;
        int rc;

        /* A stream watch's thread owns (and frees) w: it must not be
         * touched once the thread runs, so it starts detached. */
        pthread_attr_init(&attr);
        if (s)
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&w->thr, &attr, watch_thread, w);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            *code = ABX_CONNECT_INTERNAL;
            snprintf(err, errlen, "cannot start watcher thread");
            w->s = NULL;
            if (s)
                abxl_envd_stream_unref(s);
            watch_free(w);
            return -1;
        }
    }
    if (out)
        *out = w;
    return 0;
}

/* Joins the watch thread and frees w. */
static void watch_stop(struct abxl_envd_watch *w)
{
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thr, NULL);
    watch_free(w);
}

/* The events queued since the last drain, as an array. */
static cJSON *watch_drain(struct abxl_envd_watch *w)
{
    cJSON *q, *fresh = cJSON_CreateArray();

    if (!fresh)
        return NULL;
    pthread_mutex_lock(&w->mu);
    q = w->queue;
    w->queue = fresh;
    pthread_mutex_unlock(&w->mu);
    return q;
}

/* ---- the CreateWatcher registry ---- */

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char id[32];
    struct abxl_envd_watch *w;
} reg[MAX_WATCHERS];

/* 0, or -1 (no random bytes: no watcher, an id must not be guessed). */
static int random_id(char *id, size_t len)
{
    static const char al[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char r[20];

    if (abx_random_bytes(r, sizeof r) != 0)
        return -1;
    id[0] = 'w';
    for (size_t i = 0; i < sizeof r && i + 2 < len; i++) {
        id[i + 1] = al[r[i] % 36];
        id[i + 2] = '\0';
    }
    return 0;
}

int abxl_envd_watchers_create(const char *dir, int recursive, int include_entry,
                         int allow_network, char *id, size_t idlen, enum abx_connect_code *code,
                         char *err, size_t errlen)
{
    struct abxl_envd_watch *w;
    int slot = -1;

    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < MAX_WATCHERS && slot < 0; i++)
        if (!reg[i].w)
            slot = i;
    if (slot < 0) {
        pthread_mutex_unlock(&reg_mu);
        *code = ABX_CONNECT_RESOURCE_EXHAUSTED;
        snprintf(err, errlen, "too many watchers");
        return -1;
    }
    if (abxl_envd_watch_new(dir, recursive, include_entry, allow_network, NULL, &w,
                       code, err, errlen))
        w = NULL;
    if (w && random_id(reg[slot].id, sizeof reg[slot].id) != 0) {
        *code = ABX_CONNECT_INTERNAL;
        snprintf(err, errlen, "no random bytes for a watcher id: %s", strerror(errno));
        pthread_mutex_unlock(&reg_mu);
        watch_stop(w);
        return -1;
    }
    if (w) {
        reg[slot].w = w;
        snprintf(id, idlen, "%s", reg[slot].id);
    }
    pthread_mutex_unlock(&reg_mu);
    return w ? 0 : -1;
}

cJSON *abxl_envd_watchers_events(const char *id)
{
    cJSON *ev = NULL;

    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < MAX_WATCHERS; i++)
        if (reg[i].w && strcmp(reg[i].id, id) == 0) {
            ev = watch_drain(reg[i].w);
            break;
        }
    pthread_mutex_unlock(&reg_mu);
    return ev;
}

int abxl_envd_watchers_remove(const char *id)
{
    struct abxl_envd_watch *w = NULL;

    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < MAX_WATCHERS; i++)
        if (reg[i].w && strcmp(reg[i].id, id) == 0) {
            w = reg[i].w;
            reg[i].w = NULL;
            break;
        }
    pthread_mutex_unlock(&reg_mu);
    if (!w)
        return -1;
    watch_stop(w);
    return 0;
}
