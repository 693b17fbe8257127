/* Small filesystem helpers. These write RAW bytes: report and evidence
 * files must go through abx_out_write_file_atomic (out.h), which masks
 * first; call these directly only for data that is not output (ledgers,
 * state files that hold no secret). */
#ifndef ABX_FSUTIL_H
#define ABX_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

/* mkdir -p: creates dir and missing parents with mode. 0 or -1 (err). */
int abx_mkdir_p(const char *dir, mode_t mode, char *err, size_t errlen);

/* Writes data to path.tmp (mode 0644), fsyncs, renames over path and
 * fsyncs the directory; creates parent dirs. 0 or -1 with err naming
 * the path and strerror. The temp file is removed on failure. */
int abx_write_file_atomic(const char *path, const void *data, size_t len,
                          char *err, size_t errlen);
/* The same without the fsyncs, for caches: a reader sees the old file or
 * the new one, never half of one, but a power cut may lose the update
 * (the --lf and durations caches are hints; a damaged one is rebuilt). */
int abx_write_file_replace(const char *path, const void *data, size_t len,
                           char *err, size_t errlen);

/* Reads a whole file (at most max bytes) into *data (NUL-terminated,
 * caller frees). 0, 1 if it does not exist, -1 on error or if too big. */
int abx_read_file(const char *path, size_t max, char **data, size_t *len,
                  char *err, size_t errlen);

#endif
