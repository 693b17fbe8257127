/* THE masker: replaces every known secret and its derived forms by
 * ABX_MASK_MARKER in any byte stream.
 *
 * For each secret S (>= ABX_MASK_MIN_LEN bytes) the forms masked are:
 *   - S itself (so "Bearer S" becomes "Bearer [MASKED]": the prefix is kept
 *     for readability, nothing of S remains);
 *   - base64 of S: standard and URL-safe alphabets, with and without '='
 *     padding; also the part of base64(S) that is fixed whatever S is
 *     preceded by (3 alignments; for S of 8+ bytes), which covers S
 *     inside a longer encoded value such as Basic base64("user:S") (best
 *     effort: edges may keep up to 2 characters carrying a few bits of
 *     S's first/last byte);
 *   - base64 of "S:" and ":S" (HTTP Basic with S as user or password);
 *   - percent-encoding (everything but RFC 3986 unreserved bytes encoded),
 *     upper- and lower-case hex, and form style with ' ' as '+';
 *   - JSON string escaping as cJSON writes it (\" \\ \b \f \n \r \t,
 *     \u00xx for other control bytes) and the variants other encoders
 *     use: "\/" for '/', upper-case hex, \uXXXX for non-ASCII (Python's
 *     ensure_ascii) when S is valid UTF-8, \u003c for < > & (Go);
 *   - the percent and JSON encodings of every base64 form above (a
 *     base64 token inside a URL or a JSON string);
 *   - S's bytes in hex (lower, upper; bare, space- or colon-separated),
 *     %XX, \u00XX and \xNN each;
 *   - for a key with a public prefix (up to 8 letters or digits and '_'
 *     or '-', as "e2b_"), all of the above for the part after it as well.
 * Each form is also found with what tools insert into a value they print
 * after its first two bytes, up to ABX_MASK_NOISE_MAX bytes of it: line
 * breaks (fold, base64 -w, xxd -p), ANSI CSI sequences (grep --color),
 * and a hex dump's layout (xxd, hexdump -C, od: spaces, text and offset
 * columns; the dump's last line is masked to its end, its text column
 * holding the value's last bytes). A break after a form's first byte
 * leaves that byte (the rest is a form of its own): a line ending in one
 * byte that may start a form is emitted whole, not held for the next line.
 * Matching is leftmost, longest-first; a match that overlaps another is
 * merged with it, so the output holds no fragment of either secret.
 *
 * Thread safety: abx_mask_add may run while other threads mask (a rwlock
 * guards the pattern table). A stream belongs to one thread at a time. */
#ifndef ABX_MASK_H
#define ABX_MASK_H

#include <stddef.h>

#include "buf.h"

#define ABX_MASK_MARKER "[MASKED]"

/* Secrets shorter than this are ignored: masking "ab" or "1" would shred
 * every line of output and, worse, the pattern of replaced bytes would
 * itself reveal the value. Real credentials are far longer. */
#define ABX_MASK_MIN_LEN 4

/* Bytes of line breaks and escape sequences one match may span. */
#define ABX_MASK_NOISE_MAX 2048

/* Longest secret accepted: bounds the held-back tail of a stream. */
#define ABX_MASK_MAX_LEN 4096

struct abx_mask;

struct abx_mask *abx_mask_new(void);  /* NULL on out of memory */
void abx_mask_free(struct abx_mask *m);

/* Registers a secret (binary-safe) and all its forms. Returns 0 when
 * added, 1 when ignored (shorter than ABX_MASK_MIN_LEN, already known, or
 * NULL), -1 on out of memory or when longer than ABX_MASK_MAX_LEN. */
int abx_mask_add(struct abx_mask *m, const void *secret, size_t len);
int abx_mask_add_str(struct abx_mask *m, const char *secret);

/* Number of distinct secrets registered (not forms). */
size_t abx_mask_count(struct abx_mask *m);

/* Length of the longest form plus ABX_MASK_NOISE_MAX; a stream holds back
 * less than this, except
 * a run of overlapping matches still growing at the end of a write, held
 * whole (up to 64 KiB, see mask.c) so that it becomes one marker.
 * 0 when no secret is known. */
size_t abx_mask_max_form_len(struct abx_mask *m);

/* One-shot: appends the masked form of in[0..len) to out. Returns 0, or
 * -1 if out is full (out then holds a masked prefix: never a secret). */
int abx_mask_string(struct abx_mask *m, const void *in, size_t len,
                    struct abx_buf *out);

/* Streaming: data may arrive in arbitrary pieces; a secret split across
 * two writes is still masked. Bytes that could be the start of a form are
 * held back until the next write decides them or until flush. Only the
 * shortest necessary tail is held (a line ending in '\n' is normally
 * emitted whole). */
struct abx_mask_stream {
    struct abx_mask *m;
    struct abx_buf pending;  /* held-back input, not yet masked */
};

void abx_mask_stream_init(struct abx_mask_stream *s, struct abx_mask *m);
/* Appends to out the masked bytes that are now decided. 0 or -1 (out of
 * memory / out full). */
int abx_mask_stream_write(struct abx_mask_stream *s, const void *data,
                          size_t len, struct abx_buf *out);
/* Appends the masked held-back tail to out (end of stream). */
int abx_mask_stream_flush(struct abx_mask_stream *s, struct abx_buf *out);
void abx_mask_stream_free(struct abx_mask_stream *s);

#endif
