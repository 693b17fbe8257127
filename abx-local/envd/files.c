/* GET /files (docs/protocol.md "File download", "Signed URLs") and what
 * POST /files shares with it: signed-URL and token checks, user and path
 * resolution; downloads streamed from the file (download.c). Uploads:
 * upload.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "filesig.h"

const char *abxl_envd_query(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* No valid token or signature: envd's 401, or the 403 of a gateway in
 * front of it (FC's, --vary token-denied). */
#define DENIED ((unsigned)abxl_envd_compat.denied_status)

unsigned abxl_envd_files_signing(struct MHD_Connection *c, const char *op,
                                char *msg, size_t msglen)
{
    const char *tok = abxl_envd_header(c, "X-Access-Token");
    const char *sig = abxl_envd_query(c, "signature");
    const char *exp = abxl_envd_query(c, "signature_expiration");
    const char *path = abxl_envd_query(c, "path");
    const char *user = abxl_envd_query(c, "username");
    char want[128];
    long long e = -1;

    if (abxl_envd_cfg.access_token && tok) {
        if (!abx_filesig_equal(tok, abxl_envd_cfg.access_token)) {
            snprintf(msg, msglen, "access token is not valid");
            return DENIED;
        }
    } else if (abxl_envd_cfg.access_token) {
        if (!sig) {
            snprintf(msg, msglen, "missing signature query parameter");
            return DENIED;
        }
        if (exp) {
            char *end;

            errno = 0;
            e = strtoll(exp, &end, 10);
            if (errno || end == exp || *end || e < 0) {
                snprintf(msg, msglen, "invalid signature_expiration");
                return 400;
            }
        }
        if (abx_filesig_compute(path ? path : "", op, user ? user : "",
                                abxl_envd_cfg.access_token, e, want, sizeof want) ||
            !abx_filesig_equal(sig, want)) {
            snprintf(msg, msglen, "invalid signature");
            return DENIED;
        }
        if (exp && e < (long long)time(NULL)) {
            snprintf(msg, msglen, "signature is already expired");
            return DENIED;
        }
    }
    return 0;
}

unsigned abxl_envd_files_user(struct MHD_Connection *c, struct abxl_envd_user *u,
                             char *msg, size_t msglen)
{
    const char *user = abxl_envd_query(c, "username");

    return abxl_envd_user_lookup(user ? user : abxl_envd_cfg.default_user, u, msg,
                                msglen) ? 401 : 0;
}

static const char *content_type_for(const char *name)
{
    static const char *const map[][2] = {
        {".txt", "text/plain; charset=utf-8"}, {".html", "text/html; charset=utf-8"},
        {".json", "application/json"}, {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"}, {".png", "image/png"},
        {".jpg", "image/jpeg"}, {".jpeg", "image/jpeg"}, {".gif", "image/gif"},
        {".svg", "image/svg+xml"}, {".pdf", "application/pdf"},
        {".csv", "text/csv; charset=utf-8"}, {".xml", "text/xml; charset=utf-8"},
        {".py", "text/x-python; charset=utf-8"}, {".md", "text/markdown; charset=utf-8"},
    };
    const char *dot = strrchr(name, '.');

    for (size_t i = 0; dot && i < sizeof map / sizeof map[0]; i++)
        if (strcasecmp(dot, map[i][0]) == 0)
            return map[i][1];
    return "application/octet-stream";
}

/* 1 gzip, 0 identity, -1 nothing acceptable, -2 identity refused for a
 * Range/conditional request (as envd, which serves those unencoded). An
 * envd before 0.5.7 looked at none of these headers. */
static int download_coding(struct MHD_Connection *c)
{
    static const char *const cond[] = {"Range", "If-Modified-Since",
                                       "If-None-Match", "If-Range"};
    const char *ae = abxl_envd_header(c, MHD_HTTP_HEADER_ACCEPT_ENCODING);

    if (!abxl_envd_compat.gzip)
        return 0;
    for (size_t i = 0; i < sizeof cond / sizeof cond[0]; i++) {
        const char *v = abxl_envd_header(c, cond[i]);

        if (v && *v)
            return abxl_envd_accept_encoding(ae, 1) < 0 ? -2 : 0;
    }
    return abxl_envd_accept_encoding(ae, 0);
}

enum MHD_Result abxl_envd_files_get(struct MHD_Connection *c)
{
    struct abxl_envd_user u;
    char msg[PATH_MAX + 128], path[PATH_MAX], disp[PATH_MAX + 64];
    struct MHD_Response *r;
    struct stat st;
    const char *base;
    unsigned status;
    enum MHD_Result rc;
    int fd, gz;

    if ((status = abxl_envd_files_signing(c, "read", msg, sizeof msg)) ||
        (status = abxl_envd_files_user(c, &u, msg, sizeof msg)))
        return abxl_envd_reply_error(c, status, msg);
    if (abxl_envd_path_resolve(abxl_envd_query(c, "path"), &u, path, sizeof path,
                              msg, sizeof msg))
        return abxl_envd_reply_error(c, 400, msg);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;

        if (fd >= 0)
            close(fd);
        if (e == ENOENT || e == ENOTDIR) {
            snprintf(msg, sizeof msg, "path '%s' does not exist", path);
            return abxl_envd_reply_error(c, 404, msg);
        }
        snprintf(msg, sizeof msg, "error opening file '%s': %s", path,
                 strerror(e));
        return abxl_envd_reply_error(c, e == EACCES ? 403 : 500, msg);
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        snprintf(msg, sizeof msg, "path '%s' is a directory", path);
        return abxl_envd_reply_error(c, 400, msg);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(msg, sizeof msg, "path '%s' is not a regular file", path);
        return abxl_envd_reply_error(c, 400, msg);
    }
    if ((gz = download_coding(c)) < 0) {
        close(fd);
        return abxl_envd_reply_error(c, 406, gz == -1
            ? "error parsing Accept-Encoding: no acceptable encoding found, "
              "supported: [gzip]"
            : "identity encoding not acceptable for Range or conditional "
              "request");
    }
    /* Streamed from the fd (closed with the response): never loaded whole. */
    if (!(r = abxl_envd_download_response(fd, &st, gz)))
        return MHD_NO;
    if (abxl_envd_compat.gzip)
        MHD_add_response_header(r, "Vary", "Accept-Encoding");
    if (gz)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    base = strrchr(path, '/');
    base = base && base[1] ? base + 1 : path;
    snprintf(disp, sizeof disp, "inline; filename=\"%s\"", base);
    MHD_add_response_header(r, "Content-Disposition", disp);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            content_type_for(base));
    rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}
