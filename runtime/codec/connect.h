/* Connect protocol codec (JSON flavour), shared by abx-envd and the abx-e2e
 * client: 5-byte envelopes for server streams, an incremental envelope
 * decoder, the error-code tables and the error JSON shapes.
 * Wire reference: docs/protocol.md "Connect RPC". */
#ifndef ABX_CONNECT_H
#define ABX_CONNECT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum abx_connect_code {
    ABX_CONNECT_OK = 0,
    ABX_CONNECT_CANCELED = 1,
    ABX_CONNECT_UNKNOWN = 2,
    ABX_CONNECT_INVALID_ARGUMENT = 3,
    ABX_CONNECT_DEADLINE_EXCEEDED = 4,
    ABX_CONNECT_NOT_FOUND = 5,
    ABX_CONNECT_ALREADY_EXISTS = 6,
    ABX_CONNECT_PERMISSION_DENIED = 7,
    ABX_CONNECT_RESOURCE_EXHAUSTED = 8,
    ABX_CONNECT_FAILED_PRECONDITION = 9,
    ABX_CONNECT_ABORTED = 10,
    ABX_CONNECT_OUT_OF_RANGE = 11,
    ABX_CONNECT_UNIMPLEMENTED = 12,
    ABX_CONNECT_INTERNAL = 13,
    ABX_CONNECT_UNAVAILABLE = 14,
    ABX_CONNECT_DATA_LOSS = 15,
    ABX_CONNECT_UNAUTHENTICATED = 16,
};

#define ABX_CONNECT_FLAG_COMPRESSED 0x01u
#define ABX_CONNECT_FLAG_END_STREAM 0x02u
#define ABX_CONNECT_PREFIX_LEN 5

/* "invalid_argument" etc.; NULL for OK or out-of-range values. */
const char *abx_connect_code_name(enum abx_connect_code code);
/* Name -> code; -1 if the name is not a Connect code. */
int abx_connect_code_from_name(const char *name);
/* HTTP status a unary error with this code is sent with
 * (docs/protocol.md "Unary calls"). */
int abx_connect_code_http_status(enum abx_connect_code code);
/* Code for a non-Connect error response (the plain-HTTP mapping of
 * docs/protocol.md "Unary calls"). */
enum abx_connect_code abx_connect_code_from_http_status(int status);

/* Appends one envelope (prefix + payload). 0 or -1 (buffer cap, or a
 * payload over 4 GiB). */
int abx_connect_envelope_append(struct abx_buf *out, unsigned flags,
                                const void *payload, size_t len);

/* Incremental decoder: feed bytes split anywhere, take whole messages. */
struct abx_connect_decoder {
    struct abx_buf in;
    size_t consumed;     /* bytes of `in` already handed out */
    size_t max_msg;      /* payload length cap */
    int failed;
    char err[128];
};

void abx_connect_decoder_init(struct abx_connect_decoder *d, size_t max_msg);
void abx_connect_decoder_free(struct abx_connect_decoder *d);
/* 0, or -1 if the decoder already failed or buffering would exceed the cap
 * (about two maximal messages: drain with _next after every feed). */
int abx_connect_decoder_feed(struct abx_connect_decoder *d, const void *p,
                             size_t n);
/* 1: a message is available (payload valid until the next call), 0: more
 * input needed, -1: malformed (length over the cap); see d->err. */
int abx_connect_decoder_next(struct abx_connect_decoder *d, unsigned *flags,
                             const char **payload, size_t *len);
/* At end of input: 0 if nothing is left over, -1 (truncated) otherwise. */
int abx_connect_decoder_finish(struct abx_connect_decoder *d);

/* {"code":"<name>","message":"<msg>"} (message omitted when empty). */
int abx_connect_error_json(struct abx_buf *out, enum abx_connect_code code,
                           const char *message);
/* End-of-stream payload: {} for OK, else {"error":{...}}. */
int abx_connect_end_stream_json(struct abx_buf *out,
                                enum abx_connect_code code,
                                const char *message);

/* Parses a unary error body. A Connect error (string "code") gives its code
 * and message; anything else falls back to the plain-HTTP mapping of
 * http_status (or an integer "code" in a JSON body), message = body
 * "message" or the body text. Always fills *code and msg. */
void abx_connect_parse_error(const char *body, size_t len, int http_status,
                             enum abx_connect_code *code, char *msg,
                             size_t msglen);
/* Parses an end-of-stream payload. 0 with *code = OK for {}, 0 with the
 * error's code/message for {"error":...}, -1 if it is not valid JSON of
 * that shape (then *code = UNKNOWN and msg says why). */
int abx_connect_parse_end_stream(const char *json, size_t len,
                                 enum abx_connect_code *code, char *msg,
                                 size_t msglen);

#endif
