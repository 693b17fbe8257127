/* The message channel between abx-e2e's processes: see chan.h. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chan.h"
#include "jsonutil.h"

static const char *const names[ABX_MSG_COUNT_] = {
    [ABX_MSG_UNKNOWN] = "?",        [ABX_MSG_RUN] = "run",
    [ABX_MSG_CLOSE] = "close",      [ABX_MSG_START] = "start",
    [ABX_MSG_RESULT] = "result",    [ABX_MSG_OUT] = "out",
    [ABX_MSG_SECRET] = "secret",    [ABX_MSG_AMEND] = "amend",
    [ABX_MSG_INTERRUPTED] = "interrupted", [ABX_MSG_DONE] = "done",
    [ABX_MSG_COLLECTED] = "collected",
    [ABX_MSG_SANDBOXES] = "sandboxes",
};

const char *abx_msg_name(enum abx_msg t)
{
    return (unsigned)t < ABX_MSG_COUNT_ ? names[t] : names[0];
}

enum abx_msg abx_msg_type(const cJSON *m)
{
    const char *t = abx_msg_str(m, "t");
    int i;

    for (i = 1; t && i < ABX_MSG_COUNT_; i++)
        if (strcmp(t, names[i]) == 0)
            return (enum abx_msg)i;
    return ABX_MSG_UNKNOWN;
}

cJSON *abx_msg_new(enum abx_msg t)
{
    cJSON *m = cJSON_CreateObject();

    if (m && !cJSON_AddStringToObject(m, "t", abx_msg_name(t))) {
        cJSON_Delete(m);
        m = NULL;
    }
    return m;
}

const char *abx_msg_str(const cJSON *m, const char *key)
{
    const cJSON *v = cJSON_IsObject(m)
                         ? cJSON_GetObjectItemCaseSensitive(m, key) : NULL;

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int abx_chan_write(int fd, const void *p, size_t n)
{
    const char *s = p;

    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {  /* a non-blocking end: wait */
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
                return -1;
            continue;
        }
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

int abx_chan_send(int fd, cJSON *m, struct abx_mask *mask)
{
    struct abx_buf text, masked;
    struct abx_buf *line = &text;
    int rc = -2;

    abx_buf_init(&text, ABX_CHAN_LINE_MAX);
    abx_buf_init(&masked, ABX_CHAN_LINE_MAX);
    if (!m || abx_json_append(&text, m) != 0)
        goto out;
    if (mask) {
        if (abx_mask_string(mask, text.data, text.len, &masked) != 0)
            goto out;
        line = &masked;
    }
    /* cJSON escapes control characters: a line never holds a newline. */
    if (abx_buf_appendc(line, '\n') == 0)
        rc = abx_chan_write(fd, line->data, line->len);
out:
    abx_buf_free(&text);
    abx_buf_free(&masked);
    cJSON_Delete(m);
    return rc;
}

void abx_chan_init(struct abx_chan *c, int fd, size_t max)
{
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->max = max ? max : ABX_CHAN_LINE_MAX;
    /* Room for a whole line, its newline and one read's worth beyond. */
    abx_buf_init(&c->in, c->max + 1 + 65536);
}

void abx_chan_free(struct abx_chan *c)
{
    abx_buf_free(&c->in);
    c->eof = 1;
}

int abx_chan_feed(struct abx_chan *c, const void *p, size_t n)
{
    const char *start, *nl;
    size_t tail;

    if (c->overflow)
        return -1;
    if (c->off > 0) {  /* drop taken lines once per feed, not per line */
        abx_buf_consume(&c->in, c->off);
        c->off = 0;
    }
    if (abx_buf_append(&c->in, p, n) != 0) {
        c->overflow = 1;  /* lines were not drained, or one is too long */
        return -1;
    }
    /* An unfinished line over the cap ends the channel, but only after
     * the whole lines before it are taken (abx_chan_line). */
    start = c->in.data;
    nl = memrchr(start, '\n', c->in.len);
    tail = nl ? c->in.len - (size_t)(nl - start) - 1 : c->in.len;
    c->long_tail = tail > c->max;
    return 0;
}

int abx_chan_fill(struct abx_chan *c)
{
    char chunk[65536];
    ssize_t n;

    if (c->eof || c->overflow)
        return -1;
    n = read(c->fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (n <= 0) {
        c->eof = 1;
        return -1;
    }
    return abx_chan_feed(c, chunk, (size_t)n) == 0 ? 1 : -1;
}

int abx_chan_line(struct abx_chan *c, char **line, size_t *len)
{
    const char *p, *nl;
    size_t n;

    *line = NULL;
    if (c->overflow || !c->in.data)
        return 0;
    p = c->in.data + c->off;
    nl = memchr(p, '\n', c->in.len - c->off);
    if (!nl) {
        if (c->long_tail)
            c->overflow = 1;
        return 0;
    }
    n = (size_t)(nl - p);
    if (n > c->max) {
        c->overflow = 1;
        return 0;
    }
    *line = malloc(n + 1);
    if (!*line) {
        c->overflow = 1;  /* cannot keep up: treat as a broken peer */
        return 0;
    }
    memcpy(*line, p, n);
    (*line)[n] = '\0';
    if (len)
        *len = n;
    c->off += n + 1;
    return 1;
}

int abx_chan_read_line(struct abx_chan *c, char **line, int (*stop)(void))
{
    for (;;) {
        int rc;

        if (abx_chan_line(c, line, NULL))
            return 1;
        if (c->overflow)
            return -1;
        rc = abx_chan_fill(c);
        if (rc < 0)
            return c->overflow ? -1 : 0;
        if (rc == 0 && stop && stop())
            return 0;
    }
}
