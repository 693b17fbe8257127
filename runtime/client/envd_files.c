/* envd /files (docs/protocol.md "File download", "File upload", "Signed
 * URLs"): read into memory, download streamed to a local file,
 * multipart writes, upload streamed from a local file (octet-stream from
 * envd 0.5.7, multipart before), signed URLs. The user goes in the
 * `username` query value; the access token only ever in a header. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "envd_internal.h"
#include "filesig.h"
#include "jsonutil.h"
#include "out.h"

#define ERRBODY_MAX 65536

/* Said explicitly so that no default body type replaces it; curl adds
 * the boundary. */
static const char *const multipart[] = {"Content-Type: multipart/form-data",
                                        NULL};

/* <base>/files?path=..&username=..: users go in the query for /files,
 * not in Basic auth (none given: "user" below envd 0.4.0). */
static int prepare(struct abx_envd_call *c, const struct abx_endpoint *ep,
                   const char *method, const char *path, const char *user,
                   const char *const *extra, const char *what,
                   struct abx_err *err)
{
    const char *pairs[] = {"path", path, "username", NULL, NULL, NULL};

    if (abx_envd_default_user(&ep->ver, &user, err))
        return -1;
    pairs[3] = user;
    return abx_envd_call_prepare(c, ep, method, "/files", pairs, NULL, extra,
                                 what, err);
}

/* ---- read ----------------------------------------------------------------- */

struct read_ctx {
    struct abx_buf *out;
    struct abx_buf errbody;
    int over;
};

static int read_sink(void *ud, long status, const char *p, size_t n)
{
    struct read_ctx *c = ud;

    if (status >= 200 && status < 300) {
        if (abx_buf_append(c->out, p, n)) {
            c->over = 1;
            return 1;
        }
        return 0;
    }
    if (n > c->errbody.max - c->errbody.len)
        n = c->errbody.max - c->errbody.len;
    if (abx_buf_append(&c->errbody, p, n) != 0) {
        /* Out of memory: the error message shows less of the body. */
    }
    return 0;
}

int abx_envd_read(const struct abx_endpoint *ep, const char *path,
                  const char *user, struct abx_buf *out, struct abx_err *err)
{
    struct abx_envd_call call;
    struct abx_http_resp resp;
    struct read_ctx c;
    int rc = -1;

    abx_envd_call_init(&call);
    abx_buf_init(&c.errbody, ERRBODY_MAX);
    abx_http_resp_init(&resp);
    c.out = out;
    c.over = 0;
    if (!path) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "read: no path given");
        goto out;
    }
    if (prepare(&call, ep, "GET", path, user, NULL, "read file", err))
        goto out;
    call.req.idempotent = 1;
    call.req.sink = read_sink;
    call.req.sink_ud = &c;
    if (abx_http_do(&call.req, &resp, err)) {
        if (c.over)
            abx_err_set(err, ABX_E_PROTOCOL, resp.status, "",
                        "read file '%.256s': larger than the cap of %zu "
                        "bytes", path, out->max);
        goto out;
    }
    if (resp.status < 200 || resp.status >= 300) {
        abx_err_from_envd_http(err, "read file", resp.status,
                               c.errbody.data, c.errbody.len);
        goto out;
    }
    rc = 0;
out:
    abx_envd_call_free(&call);
    abx_buf_free(&c.errbody);
    abx_http_resp_free(&resp);
    return rc;
}

int abx_envd_download(const struct abx_endpoint *ep, const char *path,
                      const char *user, const char *local_path,
                      struct abx_err *err)
{
    struct abx_envd_call c;
    struct abx_http_resp resp;
    int rc = -1;

    abx_envd_call_init(&c);
    abx_http_resp_init(&resp);
    if (!path || !local_path || !local_path[0]) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "download: remote and local paths are required");
        goto out;
    }
    if (prepare(&c, ep, "GET", path, user, NULL, "download file", err))
        goto out;
    c.req.timeout = 0;    /* big files: the low-speed limit guards stalls */
    c.req.idempotent = 1;
    c.req.save_path = local_path;
    c.req.max_body = ERRBODY_MAX;
    if (abx_http_do(&c.req, &resp, err))
        goto out;
    if (resp.status < 200 || resp.status >= 300) {
        abx_err_from_envd_http(err, "download file", resp.status,
                               resp.body.data, resp.body.len);
        goto out;
    }
    rc = 0;
out:
    abx_envd_call_free(&c);
    abx_http_resp_free(&resp);
    return rc;
}

/* ---- writes ------------------------------------------------------------- */

/* Sends c->req and turns a 2xx JSON array reply into *infos. */
static int post_files(struct abx_envd_call *c, cJSON **infos,
                      struct abx_err *err)
{
    struct abx_http_resp resp;
    const char *what = c->req.what;
    cJSON *arr;
    int rc = -1;

    *infos = NULL;
    abx_http_resp_init(&resp);
    c->req.max_body = 4 * 1024 * 1024;
    c->req.idempotent = 1;    /* overwrites with the same bytes */
    if (abx_http_do(&c->req, &resp, err))
        goto out;
    if (resp.status < 200 || resp.status >= 300) {
        abx_err_from_envd_http(err, what, resp.status, resp.body.data,
                               resp.body.len);
        goto out;
    }
    /* envd sends no Content-Type here: parse the body regardless. */
    arr = abx_json_parse(abx_buf_cstr(&resp.body), resp.body.len);
    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        abx_err_set(err, ABX_E_PROTOCOL, resp.status, "",
                    "%s: the reply is not a JSON array", what);
        goto out;
    }
    *infos = arr;
    rc = 0;
out:
    abx_http_resp_free(&resp);
    return rc;
}

/* post_files, keeping the first WriteInfo of the array (or NULL). */
static int post_file(struct abx_envd_call *c, cJSON **info,
                     struct abx_err *err)
{
    cJSON *arr = NULL;

    if (post_files(c, &arr, err))
        return -1;
    if (info)
        *info = arr->child ? cJSON_DetachItemViaPointer(arr, arr->child)
                           : NULL;
    cJSON_Delete(arr);
    return 0;
}

int abx_envd_write(const struct abx_endpoint *ep, const char *path,
                   const char *user, const void *data, size_t len,
                   cJSON **info, struct abx_err *err)
{
    struct abx_http_part part;
    struct abx_envd_call c;
    int rc = -1;

    if (info)
        *info = NULL;
    abx_envd_call_init(&c);
    if (!path || (!data && len)) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "write: no path given");
        goto out;
    }
    if (prepare(&c, ep, "POST", path, user, multipart, "write file", err))
        goto out;
    memset(&part, 0, sizeof part);
    part.name = "file";
    part.filename = path;
    part.type = "application/octet-stream";
    part.data = data ? data : "";
    part.len = len;
    c.req.parts = &part;
    c.req.nparts = 1;
    rc = post_file(&c, info, err);
out:
    abx_envd_call_free(&c);
    return rc;
}

int abx_envd_write_many(const struct abx_endpoint *ep,
                        const struct abx_write_item *items, size_t n,
                        const char *user, cJSON **infos,
                        struct abx_err *err)
{
    struct abx_http_part *parts = NULL;
    struct abx_envd_call c;
    const char *pairs[] = {"username", user, NULL, NULL};
    size_t i;
    int rc = -1;

    *infos = NULL;
    abx_envd_call_init(&c);
    if (n == 0) {
        *infos = cJSON_CreateArray();
        rc = *infos ? 0 : -1;
        goto out;
    }
    parts = calloc(n, sizeof *parts);
    if (!parts) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "write files: out of memory");
        goto out;
    }
    for (i = 0; i < n; i++) {
        if (!items[i].path || !items[i].path[0] ||
            (!items[i].data && items[i].len)) {
            abx_err_set(err, ABX_E_INVALID, 0, "",
                        "write files: item %zu has no path", i + 1);
            goto out;
        }
        /* No path query: envd takes each part's filename as its path. */
        parts[i].name = "file";
        parts[i].filename = items[i].path;
        parts[i].type = "application/octet-stream";
        parts[i].data = items[i].data ? items[i].data : "";
        parts[i].len = items[i].len;
    }
    if (abx_envd_default_user(&ep->ver, &pairs[1], err) ||
        abx_envd_call_prepare(&c, ep, "POST", "/files", pairs, NULL,
                              multipart, "write files", err))
        goto out;
    c.req.parts = parts;
    c.req.nparts = n;
    rc = post_files(&c, infos, err);
out:
    free(parts);
    abx_envd_call_free(&c);
    return rc;
}

int abx_envd_upload(const struct abx_endpoint *ep, const char *local_path,
                    const char *path, const char *user, cJSON **info,
                    struct abx_err *err)
{
    static const char *const octet_ct[] = {
        "Content-Type: application/octet-stream", NULL};
    struct abx_http_part part;
    struct abx_envd_call c;
    int octet, rc = -1;

    if (info)
        *info = NULL;
    abx_envd_call_init(&c);
    if (!path || !local_path || !local_path[0]) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "upload: local and remote paths are required");
        goto out;
    }
    /* An envd before 0.5.7 only parses multipart: the SDK falls back to
     * it there, and so do we, still streaming the file from disk. */
    octet = abx_envd_has(&ep->ver, ABX_ENVD_OCTET_UPLOAD, err);
    if (octet < 0 ||
        prepare(&c, ep, "POST", path, user, octet ? octet_ct : multipart,
                "upload file", err))
        goto out;
    if (octet) {
        c.req.body_path = local_path;
    } else {
        memset(&part, 0, sizeof part);
        part.name = "file";
        part.filename = path;
        part.type = "application/octet-stream";
        part.path = local_path;
        c.req.parts = &part;
        c.req.nparts = 1;
    }
    c.req.timeout = 0;    /* big files: the low-speed limit guards stalls */
    rc = post_file(&c, info, err);
out:
    abx_envd_call_free(&c);
    return rc;
}

/* ---- signed URLs ---------------------------------------------------------- */

int abx_envd_file_url_at(const struct abx_endpoint *ep, const char *path,
                         const char *op, const char *user,
                         long long expiration, char *out, size_t outlen,
                         struct abx_err *err)
{
    char sig[128], exp[32];
    const char *pairs[] = {"path", path, "username", NULL, "signature", NULL,
                           "signature_expiration", NULL, NULL, NULL};
    struct abx_buf url;
    int rc = -1;

    if (outlen)
        out[0] = '\0';
    abx_buf_init(&url, 65536);
    if (!path || !op || (strcmp(op, "read") != 0 && strcmp(op, "write") != 0)) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "file URL: a path and an operation 'read' or 'write' "
                    "are required");
        goto out;
    }
    /* The forced user of an old envd is signed and named, as the SDK. */
    if (abx_envd_default_user(&ep->ver, &user, err))
        goto out;
    pairs[3] = user;
    if (ep->access_token) {
        if (abx_filesig_compute(path, op, user ? user : "", ep->access_token,
                                expiration, sig, sizeof sig)) {
            abx_err_set(err, ABX_E_SANDBOX, 0, "",
                        "file URL: cannot compute the signature");
            goto out;
        }
        abx_out_add_secret(sig, strlen(sig));
        /* And as it sits in the URL (percent-encoded): a test that copies
         * it out of the URL and re-encodes it must not show it either. */
        {
            struct abx_buf esc;
            abx_buf_init(&esc, 1024);
            if (abx_url_escape(&esc, sig, strlen(sig)) == 0)
                abx_out_add_secret(esc.data, esc.len);
            abx_buf_free(&esc);
        }
        pairs[5] = sig;
        if (expiration >= 0) {
            snprintf(exp, sizeof exp, "%lld", expiration);
            pairs[7] = exp;
        }
    } else if (expiration >= 0) {
        abx_err_set(err, ABX_E_INVALID, 0, "",
                    "file URL: an expiration needs a secure sandbox "
                    "(this one has no access token)");
        goto out;
    }
    /* Signed URLs go to clients without our routing headers: the
     * host-name form when there is one (as the SDKs' direct envd URL). */
    if (abx_buf_appendf(&url, "%s/files",
                        ep->direct_url[0] ? ep->direct_url : ep->base_url) ||
        abx_envd_query(&url, pairs) ||
        url.len >= outlen) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "file URL: too long");
        goto out;
    }
    memcpy(out, url.data, url.len + 1);
    /* The URL as a whole too: its other encodings (base64 of it, or
     * URL-encoded inside another URL) hide the signature's own forms. */
    if (pairs[5])
        abx_out_add_secret(url.data, url.len);
    rc = 0;
out:
    abx_buf_free(&url);
    return rc;
}

int abx_envd_file_url(const struct abx_endpoint *ep, const char *path,
                      const char *op, const char *user, long expires_in,
                      char *out, size_t outlen, struct abx_err *err)
{
    long long exp = -1;

    if (expires_in >= 0)
        exp = (long long)time(NULL) + expires_in;
    return abx_envd_file_url_at(ep, path, op, user, exp, out, outlen, err);
}
