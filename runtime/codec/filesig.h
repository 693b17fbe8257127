/* Signature of envd /files URLs (docs/protocol.md "Signed URLs"), shared
 * by abx-envd (which checks it) and the abx-e2e client (which builds
 * signed URLs). */
#ifndef ABX_FILESIG_H
#define ABX_FILESIG_H

#include <stddef.h>

/* Writes "v1_" + unpadded base64(SHA-256(path:operation:username:token
 * [:expiration])) into out. expiration < 0 means "no expiration". 0, or -1
 * if out is too small or hashing failed. */
int abx_filesig_compute(const char *path, const char *operation,
                        const char *username, const char *token,
                        long long expiration, char *out, size_t outlen);

/* Constant-time string equality (for secrets). 1 if equal. */
int abx_filesig_equal(const char *a, const char *b);

#endif
