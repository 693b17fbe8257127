/* Filesystem RPCs (stat, exists, list depth, make_dir, move, remove),
 * WatchDir, signed URLs on a secure sandbox, the token check. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "envd_internal.h"
#include "envd_test.h"
#include "http.h"

static const char *str_of(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItem(o, k));
}

static int has_path(const cJSON *entries, const char *path)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, entries) {
        const char *p = str_of(e, "path");
        if (p && strcmp(p, path) == 0)
            return 1;
    }
    return 0;
}

int scenario_fs(struct tctx *t)
{
    struct abx_err err;
    cJSON *e = NULL, *list = NULL;

    CHECK_INT(abx_envd_make_dir(&t->ep, "d1/sub", NULL, &err), 1);
    CHECK_INT(abx_envd_make_dir(&t->ep, "d1/sub", NULL, &err), 0);
    CHECK_OK(abx_envd_write(&t->ep, "d1/sub/f.txt", NULL, "12345", 5, NULL,
                            &err), &err);
    CHECK_OK(abx_envd_write(&t->ep, "d1/g.txt", NULL, "x", 1, NULL, &err),
             &err);
    CHECK_ERR(abx_envd_make_dir(&t->ep, "d1/g.txt", NULL, &err), &err,
              ABX_E_INVALID);

    CHECK_OK(abx_envd_list(&t->ep, "d1", 1, NULL, &list, &err), &err);
    CHECK_INT(cJSON_GetArraySize(list), 2);
    CHECK(has_path(list, "/home/user/d1/g.txt"));
    CHECK(has_path(list, "/home/user/d1/sub"));
    cJSON_Delete(list);
    CHECK_OK(abx_envd_list(&t->ep, "/home/user/d1", 2, NULL, &list, &err),
             &err);
    CHECK_INT(cJSON_GetArraySize(list), 3);
    CHECK(has_path(list, "/home/user/d1/sub/f.txt"));
    cJSON_Delete(list);
    CHECK_ERR(abx_envd_list(&t->ep, "d1", 0, NULL, &list, &err), &err,
              ABX_E_INVALID);
    CHECK_ERR(abx_envd_list(&t->ep, "nope", 1, NULL, &list, &err), &err,
              ABX_E_NOT_FOUND);

    CHECK_OK(abx_envd_stat(&t->ep, "d1/sub/f.txt", NULL, &e, &err), &err);
    CHECK_STR(str_of(e, "type"), "FILE_TYPE_FILE");
    CHECK_STR(str_of(e, "name"), "f.txt");
    CHECK_STR(str_of(e, "path"), "/home/user/d1/sub/f.txt");
    CHECK_STR(str_of(e, "size"), "5");
    CHECK_STR(str_of(e, "owner"), "user");
    cJSON_Delete(e);
    CHECK_OK(abx_envd_stat(&t->ep, "/etc", "root", &e, &err), &err);
    CHECK_STR(str_of(e, "type"), "FILE_TYPE_DIRECTORY");
    cJSON_Delete(e);
    CHECK_ERR(abx_envd_stat(&t->ep, "nope", NULL, &e, &err), &err,
              ABX_E_NOT_FOUND);

    CHECK_INT(abx_envd_exists(&t->ep, "d1/g.txt", NULL, &err), 1);
    CHECK_INT(abx_envd_exists(&t->ep, "d1/nope", NULL, &err), 0);

    CHECK_OK(abx_envd_move(&t->ep, "d1/g.txt", "d2/h.txt", NULL, &e, &err),
             &err);
    CHECK_STR(str_of(e, "path"), "/home/user/d2/h.txt");
    cJSON_Delete(e);
    CHECK_INT(abx_envd_exists(&t->ep, "d1/g.txt", NULL, &err), 0);
    CHECK_ERR(abx_envd_move(&t->ep, "d1/g.txt", "d3", NULL, NULL, &err),
              &err, ABX_E_NOT_FOUND);

    CHECK_OK(abx_envd_remove(&t->ep, "missing/thing", NULL, &err), &err);
    CHECK_OK(abx_envd_remove(&t->ep, "d2", NULL, &err), &err);
    CHECK_INT(abx_envd_exists(&t->ep, "d2/h.txt", NULL, &err), 0);
    return 0;
}

/* Waits for an event named name of type type; 1 found. */
static int wait_event(struct abx_watch *w, const char *name, const char *type)
{
    double until = abx_http_now() + 15;
    struct abx_fs_event ev;
    struct abx_err err;
    int r;

    while ((r = abx_watch_next(w, &ev, until, &err)) == 1) {
        if (strcmp(ev.name, name) == 0 && strcmp(ev.type, type) == 0)
            return 1;
    }
    if (r < 0)
        fprintf(stderr, "watch: %s\n", err.message);
    return 0;
}

int scenario_watch(struct tctx *t)
{
    struct abx_watch *w, *wr;
    struct abx_err err;

    CHECK_INT(abx_envd_make_dir(&t->ep, "wd", NULL, &err), 1);
    w = abx_envd_watch(&t->ep, "wd", 0, NULL, 120, &err);
    CHECK_OK(w ? 0 : -1, &err);
    wr = abx_envd_watch(&t->ep, "/home/user/wd", 1, NULL, 120, &err);
    CHECK_OK(wr ? 0 : -1, &err);
    if (w && wr) {
        CHECK_OK(abx_envd_write(&t->ep, "wd/new.txt", NULL, "a", 1, NULL,
                                &err), &err);
        CHECK(wait_event(w, "new.txt", "create"));
        CHECK(wait_event(wr, "new.txt", "create"));
        CHECK_OK(abx_envd_make_dir(&t->ep, "wd/sub", NULL, &err), &err);
        CHECK_OK(abx_envd_write(&t->ep, "wd/sub/deep.txt", NULL, "b", 1,
                                NULL, &err), &err);
        CHECK(wait_event(wr, "sub/deep.txt", "create"));
        CHECK_OK(abx_envd_remove(&t->ep, "wd/new.txt", NULL, &err), &err);
        CHECK(wait_event(w, "new.txt", "remove"));
    }
    abx_watch_close(w);
    abx_watch_close(wr);
    abx_watch_close(NULL);
    CHECK(abx_envd_watch(&t->ep, "nope", 0, NULL, 10, &err) == NULL);
    CHECK_INT(err.cls, ABX_E_NOT_FOUND);
    CHECK_OK(abx_envd_write(&t->ep, "afile", NULL, "a", 1, NULL, &err),
             &err);
    CHECK(abx_envd_watch(&t->ep, "afile", 0, NULL, 10, &err) == NULL);
    CHECK_INT(err.cls, ABX_E_INVALID);
    return 0;
}

/* A request with no header at all: what a browser or plain curl does. */
static long plain(const char *method, const char *url, const char *data,
                  struct abx_buf *body)
{
    struct abx_http_req req;
    struct abx_http_resp resp;
    struct abx_http_part part;
    struct abx_err err;
    long status = -1;
    static const char *const mp[] = {"Content-Type: multipart/form-data",
                                      NULL};

    memset(&req, 0, sizeof req);
    memset(&part, 0, sizeof part);
    req.method = method;
    req.url = url;
    req.timeout = 30;
    req.what = "plain request";
    if (data) {
        part.name = "file";
        part.filename = "ignored";
        part.data = data;
        part.len = strlen(data);
        req.parts = &part;
        req.nparts = 1;
        req.headers = mp;
    }
    abx_http_resp_init(&resp);
    if (abx_http_do(&req, &resp, &err) == 0)
        status = resp.status;
    if (body) {
        abx_buf_reset(body);
        MUST(abx_buf_append(body, resp.body.data, resp.body.len));
    }
    abx_http_resp_free(&resp);
    return status;
}

int scenario_signed(struct tctx *t)
{
    const char *path = "/home/user/signed.txt";
    struct abx_endpoint notoken;
    struct abx_err err;
    struct abx_buf body;
    char url[2048], *sig;
    cJSON *e = NULL;

    CHECK(t->ep_host.access_token != NULL);
    abx_buf_init(&body, 0);
    CHECK_OK(abx_envd_file_url(&t->ep_host, path, "write", NULL, 60, url,
                               sizeof url, &err), &err);
    CHECK(strstr(url, "/files?path=%2Fhome%2Fuser%2Fsigned.txt&signature="));
    CHECK_INT(plain("POST", url, "signed data", NULL), 200);
    CHECK_OK(abx_envd_file_url(&t->ep_host, path, "read", NULL, -1, url,
                               sizeof url, &err), &err);
    CHECK_INT(plain("GET", url, NULL, &body), 200);
    CHECK_STR(abx_buf_cstr(&body), "signed data");
    /* A read signature does not write. */
    CHECK_INT(plain("POST", url, "x", NULL), 401);

    /* Expired. */
    CHECK_OK(abx_envd_file_url_at(&t->ep_host, path, "read", NULL,
                                  (long long)time(NULL) - 10, url,
                                  sizeof url, &err), &err);
    CHECK_INT(plain("GET", url, NULL, NULL), 401);
    /* Tampered. */
    CHECK_OK(abx_envd_file_url(&t->ep_host, path, "read", "user", 60, url,
                               sizeof url, &err), &err);
    CHECK_INT(plain("GET", url, NULL, &body), 200);
    sig = strstr(url, "signature=v1_");
    if (sig) {
        sig[13] = sig[13] == 'A' ? 'B' : 'A';
        CHECK_INT(plain("GET", url, NULL, NULL), 401);
    }
    /* No signature. */
    snprintf(url, sizeof url, "%s/files?path=%%2Fhome%%2Fuser%%2Fsigned.txt",
             t->ep_host.base_url);
    CHECK_INT(plain("GET", url, NULL, NULL), 401);

    /* Without the token header, RPCs are refused (plain-JSON 401). */
    notoken = t->ep;
    notoken.access_token = NULL;
    CHECK_ERR(abx_envd_stat(&notoken, path, NULL, &e, &err), &err,
              ABX_E_AUTH);
    CHECK(abx_proc_connect(&notoken, 1, 5, &err) == NULL);
    CHECK_INT(err.cls, ABX_E_AUTH);
    CHECK_ERR(abx_envd_read(&notoken, path, NULL, &body, &err), &err,
              ABX_E_AUTH);
    CHECK_INT(abx_envd_health(&notoken, &err), 1);
    /* With it, fine. */
    CHECK_OK(abx_envd_stat(&t->ep, path, NULL, &e, &err), &err);
    cJSON_Delete(e);
    abx_buf_free(&body);
    return 0;
}
