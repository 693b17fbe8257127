/* POST /files (docs/protocol.md "File upload"): uploads streamed to disk,
 * multipart via MHD's post processor or octet-stream, either optionally
 * gzip'd; X-Metadata-* stored with each file (meta.c). What envd 0.5.2
 * did instead, where compat says so: multipart only, Content-Encoding
 * and metadata ignored. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "daemon.h"
#include "jsonutil.h"

struct abxl_envd_upload {
    unsigned status;          /* 0 while all is well */
    char msg[PATH_MAX + 128];
    struct abxl_envd_user user;
    const char *path_param;   /* raw query value, NULL if absent */
    z_stream z;
    int z_init, z_done;
    struct MHD_PostProcessor *pp;
    int fd;
    int nfiles;
    int any_part;             /* multipart: some part was found */
    int part_open;            /* multipart: a 'file' part has begun */
    uint64_t part_bytes;      /* bytes of the current part so far */
    char part_name[PATH_MAX]; /* its filename */
    cJSON *result;
    cJSON *meta;              /* X-Metadata-* to store, NULL if none */
    uint64_t raw_bytes;       /* of the request body, as sent */
    int answer_late;          /* refused, but answered once the body is read */
};

__attribute__((format(printf, 3, 4)))
static void fail(struct abxl_envd_upload *up, unsigned status, const char *fmt,
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

static void fail_errno(struct abxl_envd_upload *up, int e, const char *what,
                       const char *path)
{
    if ((e == ENOSPC || e == EDQUOT) && abxl_envd_cfg.disk_mb > 0)
        /* The cap by name, as the sandbox was created with it (under
         * gVisor, statfs inside tells its overlay's size, not the disk's). */
        fail(up, 507, "not enough disk space available: the sandbox's disk is %ld MiB",
             abxl_envd_cfg.disk_mb);
    else if (e == ENOSPC || e == EDQUOT)
        fail(up, 507, "not enough disk space available");
    else if (e == EACCES || e == EPERM || e == EROFS)   /* a client error */
        fail(up, 403, "error %s '%s': %s", what, path, strerror(e));
    else
        fail(up, 500, "error %s '%s': %s", what, path, strerror(e));
}

/* Opens the destination of the next file; raw = query path or filename. */
static void open_dest(struct abxl_envd_upload *up, const char *raw)
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
    if (abxl_envd_path_resolve(raw, &up->user, path, sizeof path, msg, sizeof msg)) {
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
    if (abxl_envd_mkdirs(path, 0, &up->user)) {
        if (errno == ENOTDIR)
            fail(up, 400, "a parent of path '%s' is not a directory", path);
        else
            fail_errno(up, errno, "creating parent directories of", path);
        return;
    }
    up->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);   /* less the umask */
    if (up->fd < 0) {
        fail_errno(up, errno, "opening", path);
        return;
    }
    if (fchown(up->fd, up->user.uid, up->user.gid) != 0) {
        fail_errno(up, errno, "changing owner of", path);
        return;
    }
    /* Every write replaces the whole set, none given included (O_TRUNC
     * keeps xattrs); where xattrs are unsupported there is none to clear.
     * An envd without metadata never touched them. */
    if (abxl_envd_compat.file_metadata &&
        abxl_envd_meta_write(up->fd, up->meta) != 0 &&
        (up->meta || errno != ENOTSUP)) {
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

static void write_all(struct abxl_envd_upload *up, const char *p, size_t n)
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
    struct abxl_envd_upload *up = cls;

    (void)kind;
    (void)ctype;
    (void)tenc;
    up->any_part = 1;
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

/* envd 0.5.2's check (Go's Request.MultipartReader): 0, or 500 with msg.
 * Go also takes multipart/mixed, which MHD cannot parse: refused here. */
static unsigned legacy_multipart(const char *ct, char *msg, size_t msglen)
{
    static const char want[] = "multipart/form-data";
    const char *p = ct ? ct : "";

    while (*p == ' ' || *p == '\t')
        p++;
    if (strncasecmp(p, want, sizeof want - 1) != 0 ||
        !strchr(" \t;", p[sizeof want - 1]) /* '\0' included */) {
        snprintf(msg, msglen, "error parsing multipart form: request "
                 "Content-Type isn't multipart/form-data");
        return 500;
    }
    for (p = strchr(p, ';'); p; p = strchr(p + 1, ';')) {
        const char *q = p + 1;

        while (*q == ' ' || *q == '\t')
            q++;
        if (strncasecmp(q, "boundary", 8) == 0) {
            for (q += 8; *q == ' ' || *q == '\t'; q++)
                ;
            if (*q == '=' && q[1] && q[1] != ';')
                return 0;
        }
    }
    snprintf(msg, msglen, "error parsing multipart form: no multipart "
             "boundary param in Content-Type");
    return 500;
}

/* The platform's cap on a request body (compat uploadMaxBytes; FC once
 * documented 32 MiB with multipart overhead, "EntityTooLarge"). */
static void too_large(struct abxl_envd_upload *up)
{
    fail(up, 413, "EntityTooLarge: the request body is above the limit of %lld bytes",
         (long long)abxl_envd_compat.upload_max_bytes);
}

struct abxl_envd_upload *abxl_envd_upload_begin(struct MHD_Connection *c)
{
    struct abxl_envd_upload *up = calloc(1, sizeof *up);
    const char *ct = abxl_envd_header(c, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *ce = abxl_envd_header(c, MHD_HTTP_HEADER_CONTENT_ENCODING);
    const char *cl = abxl_envd_header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned status;

    if (!up)
        return NULL;
    up->fd = -1;
    if (!(up->result = cJSON_CreateArray())) {
        free(up);
        return NULL;
    }
    /* envd 0.5.2 took multipart only, and asked for it before the user. */
    if ((status = abxl_envd_files_signing(c, "write", up->msg, sizeof up->msg)) ||
        (!abxl_envd_compat.octet_upload &&
         (status = legacy_multipart(ct, up->msg, sizeof up->msg))) ||
        (status = abxl_envd_files_user(c, &up->user, up->msg, sizeof up->msg))) {
        up->status = status;
        return up;
    }
    /* A declared length above the cap is refused before a byte is written,
     * and answered after the body is read and dropped, as a gateway with a
     * lingering close does: answered early, MHD would close on the unread
     * body and the sender could see a reset instead of the 413. */
    if (abxl_envd_compat.upload_max_bytes > 0 && cl &&
        strtoull(cl, NULL, 10) > (unsigned long long)abxl_envd_compat.upload_max_bytes) {
        too_large(up);
        up->answer_late = 1;
        return up;
    }
    up->path_param = abxl_envd_query(c, "path");
    if (abxl_envd_compat.file_metadata &&
        abxl_envd_meta_from_headers(c, &up->meta, up->msg, sizeof up->msg) < 0) {
        up->status = 400;
        return up;
    }
    /* A gzip'd body (either content type) is inflated as it arrives; an
     * envd before 0.5.7 never looked at Content-Encoding. */
    if (!abxl_envd_compat.gzip) {
        /* the body is taken as it is */
    } else if (ce && strcasecmp(ce, "gzip") == 0) {
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

/* A bad multipart body; envd 0.5.2 (Go's multipart reader) answered 500
 * with the error of the read that failed. */
static void fail_multipart(struct abxl_envd_upload *up, const char *why)
{
    if (abxl_envd_compat.octet_upload)
        fail(up, 400, "%s", why);
    else if (up->part_open)
        fail(up, 500, "error writing file: unexpected EOF");
    else
        fail(up, 500, "error reading form: multipart: NextPart: EOF");
}

/* Decoded body bytes: to the multipart parser or straight to the file. */
static void consume(struct abxl_envd_upload *up, const char *d, size_t n)
{
    if (!up->pp)
        write_all(up, d, n);
    else if (MHD_post_process(up->pp, d, n) != MHD_YES)
        fail_multipart(up, "malformed multipart/form-data body");
}

static void inflate_data(struct abxl_envd_upload *up, const char *data, size_t n)
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

void abxl_envd_upload_data(struct abxl_envd_upload *up, const char *data, size_t n)
{
    if (up->status)
        return;
    up->raw_bytes += n;
    if (abxl_envd_compat.upload_max_bytes > 0 &&
        up->raw_bytes > (uint64_t)abxl_envd_compat.upload_max_bytes) {
        too_large(up);
        return;
    }
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

int abxl_envd_upload_failed(const struct abxl_envd_upload *up)
{
    return up->status != 0 && !up->answer_late;
}

enum MHD_Result abxl_envd_upload_finish(struct abxl_envd_upload *up,
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
        if (!ok || (!up->any_part && !abxl_envd_compat.octet_upload))
            fail_multipart(up, "truncated multipart/form-data body");
        else if (!up->status && up->nfiles == 0 && abxl_envd_compat.octet_upload)
            fail(up, 400, "no 'file' part in the multipart body");
    }
    if (!up->status && up->fd >= 0) {
        int fd = up->fd;

        up->fd = -1;
        if (close(fd) != 0 && (errno == ENOSPC || errno == EDQUOT))
            fail(up, 507, "not enough disk space available");
    }
    if (up->status)
        return abxl_envd_reply_error(c, up->status, up->msg);
    abx_buf_init(&b, 0);
    if (abx_json_append(&b, up->result))
        rc = abxl_envd_reply_error(c, 500, "out of memory");
    else
        rc = abxl_envd_reply_json(c, 200, "application/json", b.data, b.len);
    abx_buf_free(&b);
    return rc;
}

void abxl_envd_upload_free(struct abxl_envd_upload *up)
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
