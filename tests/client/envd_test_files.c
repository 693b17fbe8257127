/* /files: all 256 byte values, 0 bytes, 10 MiB upload/download with a
 * SHA-256 compare (MB/s printed, never asserted), write_many, errors. */
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "envd_test.h"
#include "http.h"

#define MD_LEN 32

static int sha_file(const char *path, unsigned char md[MD_LEN])
{
    unsigned char buf[65536];
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    FILE *f = fopen(path, "rb");
    size_t n;
    int rc = -1;

    if (!f || !c || !EVP_DigestInit_ex(c, EVP_sha256(), NULL))
        goto out;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (!EVP_DigestUpdate(c, buf, n))
            goto out;
    if (EVP_DigestFinal_ex(c, md, NULL))
        rc = 0;
out:
    if (f)
        fclose(f);
    EVP_MD_CTX_free(c);
    return rc;
}

static void small(struct tctx *t)
{
    unsigned char all[256];
    struct abx_buf b;
    struct abx_err err;
    cJSON *info = NULL;
    int i;

    for (i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    CHECK_OK(abx_envd_write(&t->ep, "bytes.bin", NULL, all, sizeof all,
                            &info, &err), &err);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(info, "path")),
              "/home/user/bytes.bin");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(info, "name")),
              "bytes.bin");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(info, "type")),
              "file");
    cJSON_Delete(info);
    abx_buf_init(&b, 0);
    CHECK_OK(abx_envd_read(&t->ep, "/home/user/bytes.bin", NULL, &b, &err),
             &err);
    CHECK_INT(b.len, 256);
    CHECK(b.len == 256 && memcmp(b.data, all, 256) == 0);

    /* 0 bytes. */
    CHECK_OK(abx_envd_write(&t->ep, "empty", NULL, NULL, 0, NULL, &err),
             &err);
    abx_buf_reset(&b);
    CHECK_OK(abx_envd_read(&t->ep, "empty", NULL, &b, &err), &err);
    CHECK_INT(b.len, 0);

    /* Read cap. */
    b.max = 100;
    abx_buf_reset(&b);
    CHECK_ERR(abx_envd_read(&t->ep, "bytes.bin", NULL, &b, &err), &err,
              ABX_E_PROTOCOL);
    CHECK(strstr(err.message, "cap") != NULL);
    b.max = ABX_BUF_DEFAULT_MAX;

    /* As root, in root's home; the user cannot read it back. */
    CHECK_OK(abx_envd_write(&t->ep, "r.txt", "root", "secret", 6, &info,
                            &err), &err);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(info, "path")),
              "/root/r.txt");
    cJSON_Delete(info);
    abx_buf_reset(&b);
    CHECK_OK(abx_envd_read(&t->ep, "/root/r.txt", "root", &b, &err), &err);
    CHECK_STR(abx_buf_cstr(&b), "secret");

    /* Errors. */
    CHECK_ERR(abx_envd_read(&t->ep, "/no/such/file", NULL, &b, &err), &err,
              ABX_E_NOT_FOUND);
    CHECK_ERR(abx_envd_read(&t->ep, "/home/user", NULL, &b, &err), &err,
              ABX_E_INVALID);
    CHECK_ERR(abx_envd_read(&t->ep, "x", "nosuchuser", &b, &err), &err,
              ABX_E_AUTH);
    CHECK_ERR(abx_envd_write(&t->ep, "/home/user", NULL, "x", 1, NULL, &err),
              &err, ABX_E_INVALID);
    abx_buf_free(&b);
}

static void write_many(struct tctx *t)
{
    struct abx_write_item items[3] = {
        {"/tmp/wm/a.txt", "alpha", 5},
        {"wm/b/c.txt", "", 0},
        {"/home/user/wm/d.bin", "\0\1\2", 3},
    };
    struct abx_buf b;
    struct abx_err err;
    cJSON *infos = NULL;

    CHECK_OK(abx_envd_write_many(&t->ep, items, 3, NULL, &infos, &err),
             &err);
    CHECK_INT(cJSON_GetArraySize(infos), 3);
    cJSON_Delete(infos);
    abx_buf_init(&b, 0);
    CHECK_OK(abx_envd_read(&t->ep, "/tmp/wm/a.txt", NULL, &b, &err), &err);
    CHECK_STR(abx_buf_cstr(&b), "alpha");
    abx_buf_reset(&b);
    CHECK_OK(abx_envd_read(&t->ep, "/home/user/wm/b/c.txt", NULL, &b, &err),
             &err);
    CHECK_INT(b.len, 0);
    abx_buf_reset(&b);
    CHECK_OK(abx_envd_read(&t->ep, "wm/d.bin", NULL, &b, &err), &err);
    CHECK(b.len == 3 && memcmp(b.data, "\0\1\2", 3) == 0);
    abx_buf_free(&b);
    CHECK_OK(abx_envd_write_many(&t->ep, items, 0, NULL, &infos, &err),
             &err);
    CHECK_INT(cJSON_GetArraySize(infos), 0);
    cJSON_Delete(infos);
}

static void big(struct tctx *t)
{
    char src[] = "/tmp/envd-up-XXXXXX";
    char dst[64];
    unsigned char md1[MD_LEN], md2[MD_LEN];
    unsigned char *data;
    size_t size = 10u * 1024 * 1024, i;
    struct abx_err err;
    cJSON *info = NULL;
    unsigned seed = 12345;
    double t0, up, down;
    int fd;

    fd = mkstemp(src);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    data = malloc(size);
    for (i = 0; i < size; i++) {
        seed = seed * 1103515245u + 12345u;
        data[i] = (unsigned char)(seed >> 16);
    }
    CHECK(write(fd, data, size) == (ssize_t)size);
    close(fd);
    free(data);
    snprintf(dst, sizeof dst, "%s.down", src);

    t0 = abx_http_now();
    CHECK_OK(abx_envd_upload(&t->ep, src, "big/ten.bin", NULL, &info, &err),
             &err);
    up = abx_http_now() - t0;
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(info, "path")),
              "/home/user/big/ten.bin");
    cJSON_Delete(info);
    t0 = abx_http_now();
    CHECK_OK(abx_envd_download(&t->ep, "big/ten.bin", NULL, dst, &err),
             &err);
    down = abx_http_now() - t0;
    CHECK(sha_file(src, md1) == 0 && sha_file(dst, md2) == 0 &&
          memcmp(md1, md2, sizeof md1) == 0);
    printf("10 MiB upload %.1f MB/s, download %.1f MB/s\n",
           10.0 / (up > 0 ? up : 1e-9), 10.0 / (down > 0 ? down : 1e-9));
    unlink(dst);

    /* A failed download leaves no file behind. */
    CHECK_ERR(abx_envd_download(&t->ep, "big/missing", NULL, dst, &err),
              &err, ABX_E_NOT_FOUND);
    CHECK(access(dst, F_OK) != 0);
    CHECK_ERR(abx_envd_upload(&t->ep, "/no/such/local", "x", NULL, NULL,
                              &err), &err, ABX_E_INVALID);
    unlink(src);
}

int scenario_files(struct tctx *t)
{
    small(t);
    write_many(t);
    big(t);
    return 0;
}
