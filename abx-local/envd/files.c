/* GET/POST /files (e2b-protocol.md 3.3, 3.4): signed-URL and token
 * checks, user and path resolution, downloads streamed from the file,
 * uploads streamed to disk (multipart via MHD's post processor, or
 * octet-stream; either optionally gzip'd). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "envd.h"
#include "filesig.h"
#include "jsonutil.h"

struct abx_envd_upload {
    unsigned status;          /* 0 while all is well */
    char msg[PATH_MAX + 128];
    struct abx_envd_user user;
    const char *path_param;   /* raw query value, NULL if absent */
    z_stream z;
    int z_init, z_done;
    struct MHD_PostProcessor *pp;
    int fd;
    int nfiles;
    int part_open;            /* multipart: a 'file' part has begun */
    uint64_t part_bytes;      /* bytes of the current part so far */
    char part_name[PATH_MAX]; /* its filename */
    cJSON *result;
    cJSON *meta;              /* X-Metadata-* to store, NULL if none */
};

static const char *query(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* validateSigning + user lookup. 0, or an HTTP status with msg set. */
static unsigned check_access(struct MHD_Connection *c, const char *op,
                             struct abx_envd_user *u, char *msg, size_t msglen)
{
    const char *tok = abx_envd_header(c, "X-Access-Token");
    const char *sig = query(c, "signature");
    const char *exp = query(c, "signature_expiration");
    const char *path = query(c, "path"), *user = query(c, "username");
    char want[128];
    long long e = -1;

    if (abx_envd_cfg.access_token && tok) {
        if (!abx_filesig_equal(tok, abx_envd_cfg.access_token)) {
            snprintf(msg, msglen, "access token is not valid");
            return 401;
        }
    } else if (abx_envd_cfg.access_token) {
        if (!sig) {
            snprintf(msg, msglen, "missing signature query parameter");
            return 401;
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
                                abx_envd_cfg.access_token, e, want, sizeof want) ||
            !abx_filesig_equal(sig, want)) {
            snprintf(msg, msglen, "invalid signature");
            return 401;
        }
        if (exp && e < (long long)time(NULL)) {
            snprintf(msg, msglen, "signature is already expired");
            return 401;
        }
    }
    if (abx_envd_user_lookup(user ? user : abx_envd_cfg.default_user, u, msg,
                         msglen))
        return 401;
    return 0;
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

enum MHD_Result abx_envd_files_get(struct MHD_Connection *c)
{
    struct abx_envd_user u;
    char msg[PATH_MAX + 128], path[PATH_MAX], disp[PATH_MAX + 64];
    struct MHD_Response *r;
    struct stat st;
    const char *base;
    unsigned status;
    enum MHD_Result rc;
    int fd;

    if ((status = check_access(c, "read", &u, msg, sizeof msg)))
        return abx_envd_reply_error(c, status, msg);
    if (abx_envd_path_resolve(query(c, "path"), &u, path, sizeof path, msg,
                          sizeof msg))
        return abx_envd_reply_error(c, 400, msg);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;

        if (fd >= 0)
            close(fd);
        if (e == ENOENT || e == ENOTDIR) {
            snprintf(msg, sizeof msg, "path '%s' does not exist", path);
            return abx_envd_reply_error(c, 404, msg);
        }
        snprintf(msg, sizeof msg, "error opening file '%s': %s", path,
                 strerror(e));
        return abx_envd_reply_error(c, e == EACCES ? 403 : 500, msg);
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        snprintf(msg, sizeof msg, "path '%s' is a directory", path);
        return abx_envd_reply_error(c, 400, msg);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(msg, sizeof msg, "path '%s' is not a regular file", path);
        return abx_envd_reply_error(c, 400, msg);
    }
    /* MHD sends straight from the fd (and closes it): never loaded whole. */
    r = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
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

__attribute__((format(printf, 3, 4)))
static void fail(struct abx_envd_upload *up, unsigned status, const char *fmt,
                 ...)
{
    va_list ap;

    if (up->status)
        return;
    up->status = status;
    va_start(ap, fmt);
    vsnprintf(up->msg, sizeof up->msg, fmt, ap);
    va_end(ap);
    if (up->fd >= 0) {
        close(up->fd);
        up->fd = -1;
    }
}

static void fail_errno(struct abx_envd_upload *up, int e, const char *what,
                       const char *path)
{
    if (e == ENOSPC || e == EDQUOT)
        fail(up, 507, "not enough disk space available");
    else
        fail(up, 500, "error %s '%s': %s", what, path, strerror(e));
}

/* Opens the destination of the next file; raw = query path or filename. */
static void open_dest(struct abx_envd_upload *up, const char *raw)
{
    char path[PATH_MAX], msg[256];
    struct stat st;
    const char *name;
    cJSON *o;

    if (up->fd >= 0) {
        close(up->fd);
        up->fd = -1;
    }
    if (!raw || !*raw) {
        fail(up, 400, "missing file path (path parameter or part filename)");
        return;
    }
    if (abx_envd_path_resolve(raw, &up->user, path, sizeof path, msg, sizeof msg)) {
        fail(up, 400, "%s", msg);
        return;
    }
    cJSON_ArrayForEach(o, up->result) {
        const cJSON *pp = cJSON_GetObjectItemCaseSensitive(o, "path");

        if (cJSON_IsString(pp) && strcmp(pp->valuestring, path) == 0) {
            fail(up, 400, "you cannot upload multiple files to the same path "
                          "'%s' in one upload request, only the first "
                          "specified file was uploaded", path);
            return;
        }
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fail(up, 400, "path is a directory: %s", path);
        return;
    }
    if (abx_envd_mkdirs(path, 0, &up->user)) {
        if (errno == ENOTDIR)
            fail(up, 400, "a parent of path '%s' is not a directory", path);
        else
            fail_errno(up, errno, "creating parent directories of", path);
        return;
    }
    up->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (up->fd < 0) {
        fail_errno(up, errno, "opening", path);
        return;
    }
    if (fchown(up->fd, up->user.uid, up->user.gid) != 0) {
        fail_errno(up, errno, "changing owner of", path);
        return;
    }
    if (up->meta && abx_envd_meta_write(up->fd, up->meta) != 0) {
        if (errno == ENOTSUP)
            fail(up, 400, "the filesystem of '%s' does not support metadata",
                 path);
        else
            fail_errno(up, errno, "storing metadata of", path);
        return;
    }
    name = strrchr(path, '/');
    name = name && name[1] ? name + 1 : path;
    o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "path", path) ||
        !cJSON_AddStringToObject(o, "name", name) ||
        !cJSON_AddStringToObject(o, "type", "file") ||
        (up->meta && !cJSON_AddItemToObject(o, "metadata",
                                            cJSON_Duplicate(up->meta, 1)))) {
        cJSON_Delete(o);
        fail(up, 500, "out of memory");
        return;
    }
    cJSON_AddItemToArray(up->result, o);
    up->nfiles++;
}

static void write_all(struct abx_envd_upload *up, const char *p, size_t n)
{
    while (n && up->fd >= 0) {
        ssize_t w = write(up->fd, p, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fail_errno(up, w < 0 ? errno : EIO, "writing", "file");
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static enum MHD_Result part_cb(void *cls, enum MHD_ValueKind kind,
                               const char *key, const char *filename,
                               const char *ctype, const char *tenc,
                               const char *data, uint64_t off, size_t size)
{
    struct abx_envd_upload *up = cls;

    (void)kind;
    (void)ctype;
    (void)tenc;
    if (up->status || !key || strcmp(key, "file") != 0)
        return MHD_YES;
    /* MHD has no "part begins" callback and may call with off == 0 more
     * than once for one part (headers and data in different chunks): a new
     * part is off == 0 after data was written, or under another name. */
    if (off == 0 && (!up->part_open || up->part_bytes > 0 ||
                     strcmp(filename ? filename : "", up->part_name) != 0)) {
        snprintf(up->part_name, sizeof up->part_name, "%s",
                 filename ? filename : "");
        up->part_open = 1;
        up->part_bytes = 0;
        open_dest(up, up->path_param ? up->path_param : filename);
    }
    if (size) {
        up->part_bytes += size;
        write_all(up, data, size);
    }
    return MHD_YES;
}

struct abx_envd_upload *abx_envd_upload_begin(struct MHD_Connection *c)
{
    struct abx_envd_upload *up = calloc(1, sizeof *up);
    const char *ct = abx_envd_header(c, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *ce = abx_envd_header(c, MHD_HTTP_HEADER_CONTENT_ENCODING);
    unsigned status;

    if (!up)
        return NULL;
    up->fd = -1;
    if (!(up->result = cJSON_CreateArray())) {
        free(up);
        return NULL;
    }
    if ((status = check_access(c, "write", &up->user, up->msg,
                               sizeof up->msg))) {
        up->status = status;
        return up;
    }
    up->path_param = query(c, "path");
    if (abx_envd_meta_from_headers(c, &up->meta, up->msg, sizeof up->msg) < 0) {
        up->status = 400;
        return up;
    }
    /* A gzip'd body (either content type) is inflated as it arrives. */
    if (ce && strcasecmp(ce, "gzip") == 0) {
        if (inflateInit2(&up->z, 15 + 16) != Z_OK) {
            fail(up, 500, "cannot start gzip decoder");
            return up;
        }
        up->z_init = 1;
    } else if (ce && *ce && strcasecmp(ce, "identity") != 0) {
        fail(up, 400, "unsupported Content-Encoding '%s'", ce);
        return up;
    }
    if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
        up->pp = MHD_create_post_processor(c, 64 * 1024, part_cb, up);
        if (!up->pp)
            fail(up, 400, "invalid multipart/form-data request");
    } else if (ct && strncasecmp(ct, "application/octet-stream", 24) == 0) {
        if (!up->path_param)
            fail(up, 400, "path query parameter is required for "
                          "application/octet-stream uploads");
        else
            open_dest(up, up->path_param);
    } else {
        fail(up, 400, "unsupported content type: %s, expected "
                      "multipart/form-data or application/octet-stream",
             ct ? ct : "");
    }
    return up;
}

/* Decoded body bytes: to the multipart parser or straight to the file. */
static void consume(struct abx_envd_upload *up, const char *d, size_t n)
{
    if (!up->pp)
        write_all(up, d, n);
    else if (MHD_post_process(up->pp, d, n) != MHD_YES)
        fail(up, 400, "malformed multipart/form-data body");
}

static void inflate_data(struct abx_envd_upload *up, const char *data, size_t n)
{
    unsigned char out[64 * 1024];
    int zr;

    up->z.next_in = (unsigned char *)(uintptr_t)data;
    up->z.avail_in = (uInt)n;
    do {
        if (up->z_done) {
            if (up->z.avail_in)
                fail(up, 400, "data after the end of the gzip body");
            return;
        }
        up->z.next_out = out;
        up->z.avail_out = sizeof out;
        zr = inflate(&up->z, Z_NO_FLUSH);
        if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
            fail(up, 400, "error decompressing request body: invalid gzip");
            return;
        }
        up->z_done = zr == Z_STREAM_END;
        consume(up, (const char *)out, sizeof out - up->z.avail_out);
        if (zr == Z_BUF_ERROR)
            break; /* needs more input */
    } while (!up->status && (up->z.avail_out == 0 || up->z.avail_in));
}

void abx_envd_upload_data(struct abx_envd_upload *up, const char *data, size_t n)
{
    if (up->status)
        return;
    if (!up->z_init) {
        consume(up, data, n);
        return;
    }
    /* zlib takes uInt lengths: feed in slices. */
    while (n && !up->status) {
        size_t k = n > (1u << 30) ? (1u << 30) : n;

        inflate_data(up, data, k);
        data += k;
        n -= k;
    }
}

int abx_envd_upload_failed(const struct abx_envd_upload *up)
{
    return up->status != 0;
}

enum MHD_Result abx_envd_upload_finish(struct abx_envd_upload *up,
                                   struct MHD_Connection *c)
{
    struct abx_buf b;
    enum MHD_Result rc;

    if (!up->status && up->z_init && !up->z_done)
        fail(up, 400, "error decompressing request body: truncated gzip");
    if (up->pp) {
        /* Flushes what the processor still holds (the last part). */
        int ok = MHD_destroy_post_processor(up->pp) == MHD_YES;

        up->pp = NULL;
        if (!ok)
            fail(up, 400, "truncated multipart/form-data body");
        else if (!up->status && up->nfiles == 0)
            fail(up, 400, "no 'file' part in the multipart body");
    }
    if (!up->status && up->fd >= 0) {
        int fd = up->fd;

        up->fd = -1;
        if (close(fd) != 0 && (errno == ENOSPC || errno == EDQUOT))
            fail(up, 507, "not enough disk space available");
    }
    if (up->status)
        return abx_envd_reply_error(c, up->status, up->msg);
    abx_buf_init(&b, 0);
    if (abx_json_append(&b, up->result))
        rc = abx_envd_reply_error(c, 500, "out of memory");
    else
        rc = abx_envd_reply_json(c, 200, "application/json", b.data, b.len);
    abx_buf_free(&b);
    return rc;
}

void abx_envd_upload_free(struct abx_envd_upload *up)
{
    if (!up)
        return;
    if (up->pp)
        MHD_destroy_post_processor(up->pp);
    if (up->z_init)
        inflateEnd(&up->z);
    if (up->fd >= 0)
        close(up->fd);
    cJSON_Delete(up->result);
    cJSON_Delete(up->meta);
    free(up);
}
