/* A sandbox's log: what bwrap and envd write on stdout/stderr, through a
 * pipe (no descriptor of a host file is open inside a sandbox) that one
 * thread per sandbox copies into <dir>/envd.log, up to ABXL_SBXLOG_CAP
 * bytes; beyond it the rest is read and dropped, counted in one last
 * line at the end, so a sandbox cannot fill the host's disk through it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "log.h"
#include "sandbox.h"

struct abxl_sbxlog {
    int rfd, file;
    long long written, dropped;
    bool eof;
    pthread_t tid;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static void *copier(void *arg)
{
    struct abxl_sbxlog *l = arg;
    char buf[16384];
    for (;;) {
        ssize_t n = read(l->rfd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t keep = 0;
        if (l->written < ABXL_SBXLOG_CAP) {
            long long room = ABXL_SBXLOG_CAP - l->written;
            keep = (size_t)n < (unsigned long long)room ? (size_t)n : (size_t)room;
        }
        if (keep > 0 && write(l->file, buf, keep) == (ssize_t)keep) {
            pthread_mutex_lock(&l->mu);
            l->written += (long long)keep;
            pthread_mutex_unlock(&l->mu);
        }
        l->dropped += (long long)((size_t)n - keep);
    }
    if (l->dropped > 0) {
        char line[160];
        int k = snprintf(line, sizeof line, "\nabx-local: log capped at %lld bytes, %lld more "
                         "dropped\n", (long long)ABXL_SBXLOG_CAP, l->dropped);
        if (k > 0 && write(l->file, line, (size_t)k) < 0)
            abxl_log(ABXL_LOG_WARN, "sandbox log: cannot write its last line");
    }
    pthread_mutex_lock(&l->mu);
    l->eof = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

struct abxl_sbxlog *abxl_sbxlog_open(const char *path, int *wfd, char *err, size_t errlen)
{
    struct abxl_sbxlog *l = calloc(1, sizeof *l);
    int p[2] = {-1, -1};
    if (l == NULL) {
        abxl_fmt(err, errlen, "out of memory");
        return NULL;
    }
    l->file = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (l->file < 0 || pipe2(p, O_CLOEXEC) != 0) {
        abxl_fmt(err, errlen, "cannot create the sandbox log %s: %s", path, strerror(errno));
        goto fail;
    }
    l->rfd = p[0];
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    int rc = pthread_create(&l->tid, &attr, copier, l);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        abxl_fmt(err, errlen, "cannot start the sandbox log thread: %s", strerror(rc));
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        goto fail;
    }
    *wfd = p[1];
    return l;
fail:
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    if (l->file >= 0)
        close(l->file);
    free(l);
    return NULL;
}

void abxl_sbxlog_settle(struct abxl_sbxlog *l, long timeout_ms)
{
    if (l == NULL)
        return;
    struct timespec ts;
    abxl_abstime_in(&ts, timeout_ms);
    pthread_mutex_lock(&l->mu);
    while (!l->eof && pthread_cond_timedwait(&l->cv, &l->mu, &ts) == 0) {
    }
    pthread_mutex_unlock(&l->mu);
}

void abxl_sbxlog_close(struct abxl_sbxlog *l)
{
    if (l == NULL)
        return;
    /* Every writer is dead by now (the sandbox is killed first), so the
     * copier meets EOF; a writer that escaped would block the join, so
     * after a while the read end is shut instead. */
    abxl_sbxlog_settle(l, 2000);
    pthread_mutex_lock(&l->mu);
    bool eof = l->eof;
    pthread_mutex_unlock(&l->mu);
    if (!eof)
        pthread_cancel(l->tid);
    pthread_join(l->tid, NULL);
    close(l->rfd);
    close(l->file);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}
