/* The ONLY path from this program to stdout, stderr and report/evidence
 * files. Nothing else may call printf, puts, fputs, fwrite or write on
 * stdout/stderr (fd 1/2), nor write a report file directly: everything
 * goes through here so that the process-global masker sees every byte.
 * (Review rule; `grep -n 'printf\|fputs\|fwrite' host bindings` must only
 * show snprintf and abx_out_*.)
 *
 * Each channel has its own mask stream, so a secret split across two
 * abx_out_write calls is still masked; the stream holds back at most a
 * possible secret prefix until the next write or abx_out_flush. Lines
 * ending in '\n' are normally written at once. Flushing before a long
 * wait is fine: it only forgoes masking of a secret whose halves are
 * printed on either side of the flush. Calls are thread-safe (one mutex
 * per channel). */
#ifndef ABX_OUT_H
#define ABX_OUT_H

#include <stdarg.h>
#include <stddef.h>

#include "mask.h"

enum abx_out_chan {
    ABX_OUT_STDOUT = 1,
    ABX_OUT_STDERR = 2,
};

/* The process-global masker (created on first use; never NULL unless out
 * of memory at start-up, in which case the abx_out functions write
 * nothing rather than something unmasked). Register secrets here:
 * abx_mask_add_str(abx_out_masker(), api_key). */
struct abx_mask *abx_out_masker(void);

/* A secret learned at run time (an access token from a create reply, a
 * signature): joins the global masker at once and is passed to the hook
 * (a worker forwards it to its parent, whose reports must mask it too).
 * Safe to call with short or known values (ignored). */
void abx_out_add_secret(const void *s, size_t len);
void abx_out_set_secret_hook(void (*hook)(const char *s, size_t len));

/* Masks and writes to the channel. Returns 0 or -1 (write error, EPIPE,
 * out of memory). Partial writes and EINTR are retried. */
int abx_out_write(int chan, const void *data, size_t len);
int abx_out_puts(int chan, const char *s);  /* no newline added */
int abx_out_printf(int chan, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int abx_out_vprintf(int chan, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Writes the held-back tails of both channels (end of run, before exit,
 * before fork). */
int abx_out_flush(void);

/* Redirects a channel to another fd (tests; a worker sending its output
 * to a pipe). Flushes the channel first. fd < 0 restores 1 or 2. */
void abx_out_set_fd(int chan, int fd);

/* Call in a child right after fork(): re-initialises the channel locks
 * (another thread may have held one at fork time) and drops held-back
 * bytes inherited from the parent (the parent writes them). */
void abx_out_after_fork_child(void);

/* Masks data as a whole with the global masker and writes it to path
 * atomically: parent dirs created (mkdir -p), path.tmp written, fsync'd,
 * renamed over path, directory fsync'd. A reader sees the old file or the
 * new one, never half of one. Returns 0, or -1 with err set (the message
 * names the path and the errno text; never the content). */
int abx_out_write_file_atomic(const char *path, const void *data, size_t len,
                              char *err, size_t errlen);
/* The same for a cache file: replaced atomically but not fsynced
 * (abx_write_file_replace). */
int abx_out_write_cache(const char *path, const void *data, size_t len,
                        char *err, size_t errlen);

#endif
