/* The message channel between abx-e2e's processes (runner and workers,
 * runner and collector, runner and guardian): one JSON object per line,
 * its type in "t". Both ends use this one module: the framing (a line
 * capped in size), the type names, the write loop and the line reader.
 *
 * A pipe is private to its two processes, but a line may still reach a
 * report or a terminal, so abx_chan_send masks it unless told otherwise
 * (a secret learned at run time must travel raw once, to be masked). */
#ifndef ABX_CHAN_H
#define ABX_CHAN_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "mask.h"

/* Message types. Runner -> worker: RUN {"file", "nodeids"}, CLOSE
 * {"file"} (tear its file fixtures down: no more of its tests here).
 * Worker -> runner: START {"nodeid"}, RESULT {"r"}, OUT {"s"}, SECRET
 * {"s"}, AMEND {"nodeid", "teardown_message"}, INTERRUPTED {"nodeid"},
 * DONE {"file"} (a RUN batch is finished), SANDBOXES {"list"} (at its
 * end: the lifetime of every sandbox it created, for the reports). Collector -> runner:
 * COLLECTED {"file", "items", "error", "usage"}, INTERRUPTED. Runner ->
 * guardian: DONE. */
enum abx_msg {
    ABX_MSG_UNKNOWN = 0,
    ABX_MSG_RUN,
    ABX_MSG_CLOSE,
    ABX_MSG_START,
    ABX_MSG_RESULT,
    ABX_MSG_OUT,
    ABX_MSG_SECRET,
    ABX_MSG_AMEND,
    ABX_MSG_INTERRUPTED,
    ABX_MSG_DONE,
    ABX_MSG_COLLECTED,
    ABX_MSG_SANDBOXES,
    ABX_MSG_COUNT_
};

/* A line may hold a whole result (captured output is capped at 1 MiB per
 * field); anything longer is a broken or hostile peer. */
#define ABX_CHAN_LINE_MAX ((size_t)64 * 1024 * 1024)

const char *abx_msg_name(enum abx_msg t);
/* The type of a parsed message (UNKNOWN for a missing or unknown "t"). */
enum abx_msg abx_msg_type(const cJSON *m);
/* A new message object of type t; NULL when out of memory. */
cJSON *abx_msg_new(enum abx_msg t);
/* The string member key of m, or NULL. */
const char *abx_msg_str(const cJSON *m, const char *key);

/* Writes all n bytes to fd (EINTR retried, EAGAIN waited out). 0, or -1
 * when the peer is gone. */
int abx_chan_write(int fd, const void *p, size_t n);
/* Sends m (consumed) as one line, masked by mask unless it is NULL.
 * 0, -1 when the peer is gone, -2 when the line could not be made (out
 * of memory, over the cap): nothing was written. */
int abx_chan_send(int fd, cJSON *m, struct abx_mask *mask);

/* The reading end: bytes in, whole lines out. */
struct abx_chan {
    int fd;
    struct abx_buf in;
    size_t off;     /* in.data[0..off) is taken already */
    size_t max;     /* longest accepted line */
    int eof;        /* the peer closed its end */
    int long_tail;  /* the unfinished line is over max already */
    int overflow;   /* a line outgrew max: the peer is broken */
};

void abx_chan_init(struct abx_chan *c, int fd, size_t max);
void abx_chan_free(struct abx_chan *c);
/* One read(2) into the buffer: 1 bytes read, 0 nothing now (EINTR or
 * EAGAIN on a non-blocking fd), -1 end of input (eof or a read error:
 * c->eof set) or overflow. Lines read before an overflow are still
 * handed out; c->overflow is set once they are taken. */
int abx_chan_fill(struct abx_chan *c);
/* Feeds bytes as if read (the reader's one entry point for data). 0, or
 * -1 when the bytes cannot be kept (overflow, or lines left undrained
 * past the buffer's room). */
int abx_chan_feed(struct abx_chan *c, const void *p, size_t n);
/* The next complete line, without its newline, malloc'd (the caller
 * frees it): 1, or 0 when no whole line is buffered. A line that was
 * cut by the end of input is never returned. */
int abx_chan_line(struct abx_chan *c, char **line, size_t *len);
/* Blocking: the next line, reading as needed. 1 a line, 0 end of input
 * (or a read error), -1 overflow. stop() (may be NULL) is asked after
 * each interrupted read; non-zero ends the wait as end of input. The fd
 * must be blocking. */
int abx_chan_read_line(struct abx_chan *c, char **line, int (*stop)(void));

#endif
