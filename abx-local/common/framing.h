/* Request framing that two HTTP parsers could read two ways (RFC 9112
 * 6.1, 6.3), refused alike by abx-local's listeners and by envd's: a
 * request with both Content-Length and Transfer-Encoding, with either
 * twice, or with a transfer coding other than chunked. It gets a 400 and
 * its connection is closed, so no second request can hide in its body
 * (docs/security.md, "Inputs"). */
#ifndef ABXL_FRAMING_H
#define ABXL_FRAMING_H

#include <microhttpd.h>

/* NULL when the framing is sound, else why it is not. */
const char *abxl_framing_problem(struct MHD_Connection *c);
/* Queues the 400 ({"code":400,"message":why}) with Connection: close. */
enum MHD_Result abxl_framing_refuse(struct MHD_Connection *c, const char *why);

#endif
