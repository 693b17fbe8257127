/* A server-stream response: producers append envelopes, MHD's content
 * reader (one thread per connection, so it may block) drains them, sends
 * keepalives after idle time, enforces the RPC deadline and notices a
 * client that went away. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "jsonutil.h"

#define STREAM_PENDING_MAX ((size_t)16 * 1024 * 1024)

struct abxl_envd_stream {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    struct abx_buf pending;
    size_t off;             /* bytes of pending already handed to MHD */
    int ended;              /* end-of-stream envelope appended */
    int gone;               /* client disconnected or MHD dropped us */
    int64_t keepalive_ms;
    int64_t deadline_ms;
    int64_t last_send_ms;
    char *keepalive_json;
    int fd;                 /* our dup of the connection's socket, or -1 */
};

int64_t abxl_envd_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct abxl_envd_stream *abxl_envd_stream_new(int64_t keepalive_ms, int64_t deadline_ms,
                                    const char *keepalive_json)
{
    struct abxl_envd_stream *s = calloc(1, sizeof *s);
    pthread_condattr_t ca;

    if (!s)
        return NULL;
    if (!(s->keepalive_json = strdup(keepalive_json))) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    abx_buf_init(&s->pending, STREAM_PENDING_MAX);
    s->refs = 1;
    s->keepalive_ms = keepalive_ms;
    s->deadline_ms = deadline_ms;
    s->last_send_ms = abxl_envd_now_ms();
    s->fd = -1;
    return s;
}

void abxl_envd_stream_ref(struct abxl_envd_stream *s)
{
    pthread_mutex_lock(&s->mu);
    s->refs++;
    pthread_mutex_unlock(&s->mu);
}

void abxl_envd_stream_unref(struct abxl_envd_stream *s)
{
    int last;

    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    last = --s->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (!last)
        return;
    if (s->fd >= 0)
        close(s->fd);
    abx_buf_free(&s->pending);
    free(s->keepalive_json);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Called with s->mu held. */
static void end_locked(struct abxl_envd_stream *s, enum abx_connect_code code,
                       const char *msg)
{
    struct abx_buf j;

    if (s->ended)
        return;
    abx_buf_init(&j, 64 * 1024);
    if (abx_connect_end_stream_json(&j, code, msg)) {
        abx_buf_reset(&j);
        abx_connect_end_stream_json(&j, ABX_CONNECT_INTERNAL,
                                    "error message too large");
    }
    /* The end envelope must get through even when pending is at its cap. */
    s->pending.max += j.len + ABX_CONNECT_PREFIX_LEN;
    abx_connect_envelope_append(&s->pending, ABX_CONNECT_FLAG_END_STREAM,
                                j.data ? j.data : "{}", j.len);
    abx_buf_free(&j);
    s->ended = 1;
    pthread_cond_broadcast(&s->cv);
}

/* A peer that closed its side shows up as readable-with-EOF or HUP. */
static int peer_closed(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};

    if (fd < 0 || poll(&p, 1, 0) <= 0)
        return 0;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

int abxl_envd_stream_send_raw(struct abxl_envd_stream *s, const char *env, size_t n)
{
    int rc = -1;

    pthread_mutex_lock(&s->mu);
    if (s->ended || s->gone)
        goto out;
    /* Notice a client that left now, so that output is kept for the next
     * Connect instead of being written to a dead socket. */
    if (peer_closed(s->fd)) {
        s->gone = 1;
        pthread_cond_broadcast(&s->cv);
        goto out;
    }
    if (abx_buf_append(&s->pending, env, n)) {
        /* A client this far behind is not reading: give up on it. */
        end_locked(s, ABX_CONNECT_RESOURCE_EXHAUSTED,
                   "client is not reading the stream fast enough");
        goto out;
    }
    s->last_send_ms = abxl_envd_now_ms();
    pthread_cond_broadcast(&s->cv);
    rc = 0;
out:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int abxl_envd_stream_send(struct abxl_envd_stream *s, const cJSON *msg)
{
    struct abx_buf j, e;
    int rc = -1;

    abx_buf_init(&j, 0);
    abx_buf_init(&e, 0);
    if (abx_json_append(&j, msg) == 0 &&
        abx_connect_envelope_append(&e, 0, j.data, j.len) == 0)
        rc = abxl_envd_stream_send_raw(s, e.data, e.len);
    abx_buf_free(&j);
    abx_buf_free(&e);
    return rc;
}

void abxl_envd_stream_end(struct abxl_envd_stream *s, enum abx_connect_code code,
                     const char *msg)
{
    pthread_mutex_lock(&s->mu);
    end_locked(s, code, msg);
    pthread_mutex_unlock(&s->mu);
}

size_t abxl_envd_stream_backlog(struct abxl_envd_stream *s)
{
    size_t n;

    pthread_mutex_lock(&s->mu);
    n = s->gone || s->ended ? 0 : s->pending.len - s->off;
    pthread_mutex_unlock(&s->mu);
    return n;
}

int abxl_envd_stream_gone(struct abxl_envd_stream *s)
{
    int g;

    pthread_mutex_lock(&s->mu);
    if (!s->gone && !s->ended && peer_closed(s->fd))
        s->gone = 1;
    g = s->gone;
    pthread_mutex_unlock(&s->mu);
    return g;
}

static void append_keepalive_locked(struct abxl_envd_stream *s)
{
    size_t n = strlen(s->keepalive_json);

    if (abx_connect_envelope_append(&s->pending, 0, s->keepalive_json, n) == 0)
        s->last_send_ms = abxl_envd_now_ms();
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct abxl_envd_stream *s = cls;
    ssize_t rc;

    (void)pos;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        int64_t now = abxl_envd_now_ms(), wake = now + 1000;
        struct timespec ts;

        if (s->pending.len > s->off) {
            size_t n = s->pending.len - s->off;

            if (n > max)
                n = max;
            memcpy(buf, s->pending.data + s->off, n);
            s->off += n;
            if (s->off == s->pending.len) {
                abx_buf_reset(&s->pending);
                s->off = 0;
            } else if (s->off >= 256 * 1024) {
                /* A producer that never lets pending drain would otherwise
                 * grow it to the cap although the client keeps up. */
                abx_buf_consume(&s->pending, s->off);
                s->off = 0;
            }
            rc = (ssize_t)n;
            break;
        }
        if (s->ended) {
            rc = MHD_CONTENT_READER_END_OF_STREAM;
            break;
        }
        if (s->gone || peer_closed(s->fd)) {
            s->gone = 1;
            pthread_cond_broadcast(&s->cv);
            rc = MHD_CONTENT_READER_END_WITH_ERROR;
            break;
        }
        if (s->deadline_ms && now >= s->deadline_ms) {
            end_locked(s, ABX_CONNECT_DEADLINE_EXCEEDED,
                       "context deadline exceeded");
            continue;
        }
        if (s->keepalive_ms > 0 && now - s->last_send_ms >= s->keepalive_ms) {
            append_keepalive_locked(s);
            continue;
        }
        if (s->keepalive_ms > 0 && s->last_send_ms + s->keepalive_ms < wake)
            wake = s->last_send_ms + s->keepalive_ms;
        if (s->deadline_ms && s->deadline_ms < wake)
            wake = s->deadline_ms;
        ts.tv_sec = (time_t)(wake / 1000);
        ts.tv_nsec = (long)(wake % 1000) * 1000000L;
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static void reader_free(void *cls)
{
    struct abxl_envd_stream *s = cls;

    pthread_mutex_lock(&s->mu);
    s->gone = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    abxl_envd_stream_unref(s);
}

struct MHD_Response *abxl_envd_stream_response(struct abxl_envd_stream *s,
                                          struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct MHD_Response *r;

    abxl_envd_stream_ref(s);
    pthread_mutex_lock(&s->mu);
    /* A dup stays valid (same socket) however MHD closes its own fd. */
    if (s->fd < 0 && ci)
        s->fd = fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0);
    pthread_mutex_unlock(&s->mu);
    r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024 + 64,
                                          reader, s, reader_free);
    if (!r) {
        abxl_envd_stream_unref(s);
        return NULL;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "application/connect+json");
    return r;
}
