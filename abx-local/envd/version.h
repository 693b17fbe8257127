/* The E2B envd version abx-envd claims to be compatible with.
 *
 * SDKs gate features on this number (docs/protocol.md "envd version
 * gates"), so it must be the highest version whose gated features
 * abx-envd all implements: recursive watch (0.1.4), stdin
 * flag (0.3.0), server-side default user (0.4.0), CloseStdin (0.5.2),
 * octet-stream (+gzip) uploads (0.5.7), X-Metadata-* file metadata as
 * user.e2b.* xattrs (0.6.2), include_entry on watches (0.6.3) and
 * allow_network_mounts on watches (0.6.4). The abx-local server copies it
 * into API answers. */
#ifndef ABXL_ENVD_VERSION_H
#define ABXL_ENVD_VERSION_H

#define ABXL_ENVD_VERSION "0.6.4"

#endif
