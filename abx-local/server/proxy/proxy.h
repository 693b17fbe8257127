/* The data plane: requests for <port>-<id>.<domain> proxied into the
 * sandbox's network namespace. */
#ifndef ABXL_PROXY_H
#define ABXL_PROXY_H

#include "http.h"
#include "sandbox.h"

extern const struct abxl_plane abxl_proxy_plane;

#endif
