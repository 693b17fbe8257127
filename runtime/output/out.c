/* Every byte to stdout, stderr and report files passes through here and
 * the process-global masker. */
#include "out.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "buf.h"
#include "fsutil.h"

/* Input is masked in slices of this size so one huge write never needs a
 * huge buffer. */
#define OUT_SLICE ((size_t)1 << 20)

struct chan {
    pthread_mutex_t mu;
    int fd;
    int started;
    struct abx_mask_stream st;
};

static struct abx_mask *g_mask;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct chan g_chan[2] = {
    {PTHREAD_MUTEX_INITIALIZER, 1, 0, {NULL, {NULL, 0, 0, 0}}},
    {PTHREAD_MUTEX_INITIALIZER, 2, 0, {NULL, {NULL, 0, 0, 0}}},
};

static void out_init(void)
{
    g_mask = abx_mask_new();
}

struct abx_mask *abx_out_masker(void)
{
    pthread_once(&g_once, out_init);
    return g_mask;
}

static void (*g_secret_hook)(const char *s, size_t len);

void abx_out_set_secret_hook(void (*hook)(const char *s, size_t len))
{
    g_secret_hook = hook;
}

void abx_out_add_secret(const void *s, size_t len)
{
    if (!s || !abx_out_masker())
        return;
    if (abx_mask_add(g_mask, s, len) == 0 && g_secret_hook)
        g_secret_hook(s, len);
}

static struct chan *chan_of(int c)
{
    if (c == ABX_OUT_STDOUT)
        return &g_chan[0];
    if (c == ABX_OUT_STDERR)
        return &g_chan[1];
    return NULL;
}

static int write_all(int fd, const char *p, size_t n)
{
    ssize_t w;

    while (n > 0) {
        w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Caller holds c->mu. Masks data (or, with data == NULL, flushes the held
 * tail) and writes the result. */
static int chan_emit(struct chan *c, const char *data, size_t len)
{
    struct abx_buf o;
    size_t n;
    int rc = 0;

    if (!abx_out_masker())
        return -1;  /* no masker: write nothing rather than leak */
    if (!c->started) {
        abx_mask_stream_init(&c->st, g_mask);
        c->started = 1;
    }
    abx_buf_init(&o, 0);
    if (!data) {
        rc = abx_mask_stream_flush(&c->st, &o);
        if (!rc && o.len)
            rc = write_all(c->fd, o.data, o.len);
    }
    while (data && len > 0 && !rc) {
        n = len < OUT_SLICE ? len : OUT_SLICE;
        abx_buf_reset(&o);
        rc = abx_mask_stream_write(&c->st, data, n, &o);
        if (!rc && o.len)
            rc = write_all(c->fd, o.data, o.len);
        data += n;
        len -= n;
    }
    abx_buf_free(&o);
    return rc;
}

int abx_out_write(int chan, const void *data, size_t len)
{
    struct chan *c = chan_of(chan);
    int rc;

    if (!c)
        return -1;
    if (!len)
        return 0;
    pthread_mutex_lock(&c->mu);
    rc = chan_emit(c, data, len);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int abx_out_puts(int chan, const char *s)
{
    size_t n = 0;

    while (s && s[n])
        n++;
    return abx_out_write(chan, s, n);
}

int abx_out_vprintf(int chan, const char *fmt, va_list ap)
{
    struct abx_buf b;
    int rc;

    abx_buf_init(&b, 0);
    rc = abx_buf_vappendf(&b, fmt, ap);
    if (!rc)
        rc = abx_out_write(chan, b.data, b.len);
    abx_buf_free(&b);
    return rc;
}

int abx_out_printf(int chan, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = abx_out_vprintf(chan, fmt, ap);
    va_end(ap);
    return rc;
}

static int chan_flush(struct chan *c)
{
    int rc;

    pthread_mutex_lock(&c->mu);
    rc = chan_emit(c, NULL, 0);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int abx_out_flush(void)
{
    int a = chan_flush(&g_chan[0]), b = chan_flush(&g_chan[1]);

    return a || b ? -1 : 0;
}

void abx_out_set_fd(int chan, int fd)
{
    struct chan *c = chan_of(chan);

    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    (void)chan_emit(c, NULL, 0);
    c->fd = fd >= 0 ? fd : chan;
    pthread_mutex_unlock(&c->mu);
}

void abx_out_after_fork_child(void)
{
    size_t i;

    for (i = 0; i < 2; i++) {
        pthread_mutex_init(&g_chan[i].mu, NULL);
        if (g_chan[i].started)
            abx_buf_reset(&g_chan[i].st.pending);
    }
    /* The masker's rwlock may also have been held by another thread at
     * fork time; it is only write-locked during abx_mask_add, which the
     * host does before forking workers. */
}

static int write_masked(const char *path, const void *data, size_t len,
                        int durable, char *err, size_t errlen)
{
    struct abx_buf o;
    int rc = -1;

    abx_buf_init(&o, (size_t)-1);
    if (!abx_out_masker() || abx_mask_string(g_mask, data, len, &o)) {
        if (err && errlen)
            snprintf(err, errlen, "cannot write %s: out of memory", path);
        goto out;
    }
    rc = (durable ? abx_write_file_atomic : abx_write_file_replace)(
        path, o.data ? o.data : "", o.len, err, errlen);
out:
    abx_buf_free(&o);
    return rc;
}

int abx_out_write_file_atomic(const char *path, const void *data, size_t len,
                              char *err, size_t errlen)
{
    return write_masked(path, data, len, 1, err, errlen);
}

int abx_out_write_cache(const char *path, const void *data, size_t len,
                        char *err, size_t errlen)
{
    return write_masked(path, data, len, 0, err, errlen);
}
