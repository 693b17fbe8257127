/* Version gates against envd_fake.py: the client decides from the
 * sandbox's envdVersion what it may send, as the SDK 2.31.0 does. The
 * fake records what reached it (GET /_seen/<id>), so each check says
 * both what the call returned and what went over the wire: a refused
 * call sent nothing, an upload to envd 0.5.2 was multipart (and the fake
 * refuses octet-stream there, like FC), one to 0.6.4 octet-stream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "envd_test.h"
#include "http.h"

/* An endpoint for fake sandbox `id` whose envd reports `version`. */
static void gate_ep(struct tctx *t, struct abx_endpoint *ep, const char *id,
                    const char *version)
{
    struct abx_sandbox_info i;
    struct abx_err err;

    memset(&i, 0, sizeof i);
    snprintf(i.sandbox_id, sizeof i.sandbox_id, "%s", id);
    snprintf(i.envd_version, sizeof i.envd_version, "%s", version);
    if (abx_endpoint_init(ep, &t->p, &i, ABX_ENVD_PORT, &err))
        fprintf(stderr, "endpoint %s: %s\n", id, err.message);
    ep->request_timeout = 10;
}

/* What the fake recorded for id: a JSON array (caller frees). */
static cJSON *seen(struct tctx *t, const char *id)
{
    struct abx_http_req req;
    struct abx_http_resp resp;
    struct abx_err err;
    char url[700];
    cJSON *a = NULL;

    snprintf(url, sizeof url, "%s/_seen/%s", t->p.sandbox_url, id);
    memset(&req, 0, sizeof req);
    req.url = url;
    req.timeout = 10;
    req.what = "fake records";
    abx_http_resp_init(&resp);
    if (abx_http_do(&req, &resp, &err) == 0 && resp.status == 200)
        a = cJSON_ParseWithLength(abx_buf_cstr(&resp.body), resp.body.len);
    abx_http_resp_free(&resp);
    if (!cJSON_IsArray(a)) {
        cJSON_Delete(a);
        a = cJSON_CreateArray();
        fprintf(stderr, "fake records for %s: none readable\n", id);
    }
    return a;
}

static const char *rec_str(const cJSON *rec, const char *key)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(rec, key));
    return v ? v : "";
}

static const char *rec_query(const cJSON *rec, const char *key)
{
    const char *v = cJSON_GetStringValue(
        cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "query"), key));
    return v ? v : "(none)";
}

/* A local file of n bytes; its sha256 in hex into hex. */
static int make_file(char *path, size_t pathlen, size_t n, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE], block[4096];
    unsigned int mdlen = 0;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    FILE *f = NULL;
    size_t i, k;
    int fd, rc = -1;

    snprintf(path, pathlen, "/tmp/abx-gates-XXXXXX");
    if (!c || !EVP_DigestInit_ex(c, EVP_sha256(), NULL) ||
        (fd = mkstemp(path)) < 0 || !(f = fdopen(fd, "wb")))
        goto out;
    for (i = 0; i < n; i += k) {
        k = n - i < sizeof block ? n - i : sizeof block;
        for (size_t j = 0; j < k; j++)
            block[j] = (unsigned char)((i + j) * 7 % 251);
        if (!EVP_DigestUpdate(c, block, k) || fwrite(block, 1, k, f) != k)
            goto out;
    }
    if (!EVP_DigestFinal_ex(c, md, &mdlen))
        goto out;
    for (i = 0; i < mdlen; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    rc = 0;
out:
    if (f && fclose(f) != 0)
        rc = -1;
    EVP_MD_CTX_free(c);
    return rc;
}

/* envd 0.5.2 (FC) gets multipart; 0.5.7 and 0.6.4 octet-stream. The
 * file content arrives intact either way. */
static void uploads(struct tctx *t)
{
    static const struct {
        const char *id, *version, *ctype;
    } cases[] = {
        {"gate-old-052", "0.5.2", "multipart/form-data"},
        {"gate-old-056", "0.5.6", "multipart/form-data"},
        {"gate-new-057", "0.5.7", "application/octet-stream"},
        {"gate-new-064", "0.6.4", "application/octet-stream"},
    };
    struct abx_endpoint ep;
    struct abx_err err;
    char local[64], hex[65];
    cJSON *info = NULL, *recs;
    size_t i;

    if (make_file(local, sizeof local, 300 * 1024 + 5, hex) != 0) {
        CHECK(!"local file");
        return;
    }
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gate_ep(t, &ep, cases[i].id, cases[i].version);
        CHECK_OK(abx_envd_upload(&ep, local, "/home/user/up.bin", NULL,
                                 &info, &err), &err);
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(info, "path")),
                  "/home/user/up.bin");
        cJSON_Delete(info);
        info = NULL;
        recs = seen(t, cases[i].id);
        CHECK_INT(cJSON_GetArraySize(recs), 1);
        if (cJSON_GetArraySize(recs) == 1) {
            const cJSON *r = cJSON_GetArrayItem(recs, 0);
            if (strcmp(rec_str(r, "ctype"), cases[i].ctype) != 0)
                fprintf(stderr, "envd %s: upload sent as %s\n",
                        cases[i].version, rec_str(r, "ctype"));
            CHECK_STR(rec_str(r, "ctype"), cases[i].ctype);
            CHECK_STR(rec_str(r, "sha256"), hex);
            CHECK_STR(rec_query(r, "path"), "/home/user/up.bin");
            if (cases[i].ctype[0] == 'm')
                CHECK_STR(rec_str(r, "filename"), "/home/user/up.bin");
        }
        cJSON_Delete(recs);
        abx_endpoint_free(&ep);
    }
    /* The fake refuses octet-stream for an "old" envd, as FC does: the
     * multipart fallback is what makes the 0.5.2 upload above pass. */
    gate_ep(t, &ep, "gate-old-lies", "0.6.4");
    CHECK_ERR(abx_envd_upload(&ep, local, "/x", NULL, &info, &err), &err,
              ABX_E_INVALID);
    abx_endpoint_free(&ep);
    unlink(local);
}

static int n_seen(struct tctx *t, const char *id)
{
    cJSON *recs = seen(t, id);
    int n = cJSON_GetArraySize(recs);

    cJSON_Delete(recs);
    return n;
}

/* Refused before anything is sent, and allowed at the gate version. */
static void refusals(struct tctx *t)
{
    const char *args[] = {"-c", "true", NULL};
    struct abx_endpoint ep;
    struct abx_proc_cfg cfg;
    struct abx_proc *pr;
    struct abx_watch *w;
    struct abx_err err;

    gate_ep(t, &ep, "gate-stdin-051", "0.5.1");
    CHECK_ERR(abx_envd_close_stdin(&ep, 7, &err), &err, ABX_E_SANDBOX);
    CHECK(strstr(err.message, "close_stdin needs envd 0.5.2 or later; the "
                 "sandbox's envd is 0.5.1") != NULL);
    CHECK_INT(n_seen(t, "gate-stdin-051"), 0);
    abx_endpoint_free(&ep);
    gate_ep(t, &ep, "gate-stdin-052", "0.5.2");
    CHECK_OK(abx_envd_close_stdin(&ep, 7, &err), &err);
    CHECK_INT(n_seen(t, "gate-stdin-052"), 1);
    abx_endpoint_free(&ep);

    gate_ep(t, &ep, "gate-watch-013", "0.1.3");
    CHECK(abx_envd_watch(&ep, "/d", 1, NULL, 5, &err) == NULL);
    CHECK_INT(err.cls, ABX_E_TEMPLATE);
    CHECK(strstr(err.message, "recursive watch needs envd 0.1.4") != NULL);
    CHECK_INT(n_seen(t, "gate-watch-013"), 0);
    /* Not recursive: no gate. */
    w = abx_envd_watch(&ep, "/d", 0, NULL, 5, &err);
    CHECK_OK(w ? 0 : -1, &err);
    abx_watch_close(w);
    CHECK_INT(n_seen(t, "gate-watch-013"), 1);
    abx_endpoint_free(&ep);
    gate_ep(t, &ep, "gate-watch-014", "0.1.4");
    w = abx_envd_watch(&ep, "/d", 1, NULL, 5, &err);
    CHECK_OK(w ? 0 : -1, &err);
    abx_watch_close(w);
    abx_endpoint_free(&ep);

    /* stdin=false asked for on an envd that always opens stdin. */
    memset(&cfg, 0, sizeof cfg);
    cfg.cmd = "/bin/bash";
    cfg.args = args;
    cfg.timeout = 5;
    cfg.stdin_given = 1;
    gate_ep(t, &ep, "gate-proc-029", "0.2.9");
    CHECK(abx_proc_start(&ep, &cfg, &err) == NULL);
    CHECK_INT(err.cls, ABX_E_SANDBOX);
    CHECK_INT(n_seen(t, "gate-proc-029"), 0);
    /* Not asked for: "stdin": false goes out, as the SDK sends it. */
    cfg.stdin_given = 0;
    pr = abx_proc_start(&ep, &cfg, &err);
    CHECK_OK(pr ? 0 : -1, &err);
    abx_proc_close(pr);
    {
        cJSON *recs = seen(t, "gate-proc-029");
        const char *b = rec_str(cJSON_GetArrayItem(recs, 0), "body");
        if (!strstr(b, "\"stdin\":false"))
            fprintf(stderr, "start body: %s\n", b);
        CHECK(strstr(b, "\"stdin\":false") != NULL);
        cJSON_Delete(recs);
    }
    abx_endpoint_free(&ep);
}

/* Below envd 0.4.0, no user means user "user": Basic auth on RPCs, the
 * username query on /files. From 0.4.0 nothing is added. */
static void default_user(struct tctx *t)
{
    static const char *const ids[] = {"gate-user-039", "gate-user-040"};
    static const char *const vers[] = {"0.3.9", "0.4.0"};
    struct abx_endpoint ep;
    struct abx_err err;
    struct abx_buf out;
    cJSON *e = NULL, *recs;
    char url[2048];
    size_t i;

    for (i = 0; i < 2; i++) {
        gate_ep(t, &ep, ids[i], vers[i]);
        CHECK_OK(abx_envd_stat(&ep, "/x", NULL, &e, &err), &err);
        cJSON_Delete(e);
        e = NULL;
        abx_buf_init(&out, 1024);
        CHECK_OK(abx_envd_read(&ep, "/x", NULL, &out, &err), &err);
        abx_buf_free(&out);
        CHECK_OK(abx_envd_stat(&ep, "/x", "root", &e, &err), &err);
        cJSON_Delete(e);
        e = NULL;
        CHECK_OK(abx_envd_file_url(&ep, "/x", "read", NULL, -1, url,
                                   sizeof url, &err), &err);
        recs = seen(t, ids[i]);
        CHECK_INT(cJSON_GetArraySize(recs), 3);
        if (i == 0) {
            /* base64("user:") */
            CHECK_STR(rec_str(cJSON_GetArrayItem(recs, 0), "auth"),
                      "Basic dXNlcjo=");
            CHECK_STR(rec_query(cJSON_GetArrayItem(recs, 1), "username"),
                      "user");
            CHECK(strstr(url, "username=user") != NULL);
        } else {
            CHECK_STR(rec_str(cJSON_GetArrayItem(recs, 0), "auth"), "");
            CHECK_STR(rec_query(cJSON_GetArrayItem(recs, 1), "username"),
                      "(none)");
            CHECK(strstr(url, "username=") == NULL);
        }
        /* A caller's user is never replaced: base64("root:"). */
        CHECK_STR(rec_str(cJSON_GetArrayItem(recs, 2), "auth"),
                  "Basic cm9vdDo=");
        cJSON_Delete(recs);
        abx_endpoint_free(&ep);
    }
    /* A version that is none: the call fails before sending. */
    gate_ep(t, &ep, "gate-user-bad", "not-a-version");
    CHECK_ERR(abx_envd_stat(&ep, "/x", NULL, &e, &err), &err,
              ABX_E_PROTOCOL);
    CHECK(strstr(err.message, "'not-a-version' is not a version") != NULL);
    CHECK_INT(n_seen(t, "gate-user-bad"), 0);
    abx_endpoint_free(&ep);
}

int scenario_gates(struct tctx *t)
{
    uploads(t);
    refusals(t);
    default_user(t);
    return 0;
}
