/* SHA-256 (OpenSSL) of a template definition and its folders, for the
 * root filesystem cache key; folder sizes for the cache listing. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"

void abxl_sha256_init(struct abxl_sha256 *h)
{
    h->ctx = EVP_MD_CTX_new();
    if (h->ctx && EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(h->ctx);
        h->ctx = NULL;
    }
}

static void sha_add(struct abxl_sha256 *h, const void *p, size_t n)
{
    if (h->ctx)
        EVP_DigestUpdate(h->ctx, p, n);
}

/* Length-prefixed, so ("ab","c") and ("a","bc") differ. */
void abxl_sha256_str(struct abxl_sha256 *h, const char *s)
{
    char len[32];
    size_t n = strlen(s);
    abxl_fmt(len, sizeof len, "%zu:", n);
    sha_add(h, len, strlen(len));
    sha_add(h, s, n);
}

/* Hex digest into out (65 bytes); "" if OpenSSL failed. Frees h. */
void abxl_sha256_hex(struct abxl_sha256 *h, char out[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    out[0] = '\0';
    if (h->ctx && EVP_DigestFinal_ex(h->ctx, md, &n) == 1 && n == 32)
        for (int i = 0; i < 32; i++)
            snprintf(out + 2 * i, 3, "%02x", md[i]);
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
}

static int hash_fd(struct abxl_sha256 *h, int fd)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        sha_add(h, buf, (size_t)n);
    }
}

int abxl_sha256_file(struct abxl_sha256 *h, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = hash_fd(h, fd);
    close(fd);
    return rc;
}

static int tree(struct abxl_sha256 *h, const char *path, int depth)
{
    struct dirent **v = NULL;
    if (depth > 32)
        return errno = ELOOP, -1;
    int n = scandir(path, &v, NULL, alphasort);
    if (n < 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *name = v[i]->d_name;
        char p[4200], mode[32], link[4096];
        struct stat st;
        if (rc != 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            goto next;
        if (abxl_fmt(p, sizeof p, "%s/%s", path, name) != 0 || lstat(p, &st) != 0) {
            rc = -1;
            goto next;
        }
        abxl_sha256_str(h, name);
        abxl_fmt(mode, sizeof mode, "%o", (unsigned)st.st_mode);
        abxl_sha256_str(h, mode);
        if (S_ISDIR(st.st_mode)) {
            rc = tree(h, p, depth + 1);
            abxl_sha256_str(h, "..");
        } else if (S_ISLNK(st.st_mode)) {
            ssize_t l = readlink(p, link, sizeof link - 1);
            link[l > 0 ? l : 0] = '\0';
            abxl_sha256_str(h, link);
        } else if (S_ISREG(st.st_mode)) {
            rc = abxl_sha256_file(h, p);
        }
    next:
        free(v[i]);
    }
    free(v);
    return rc;
}

int abxl_sha256_tree(struct abxl_sha256 *h, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;   /* no folder: hashes as empty */
    return tree(h, path, 0);
}

static __thread long long du_total;

static int du_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)p;
    (void)flag;
    (void)f;
    du_total += (long long)st->st_blocks * 512;
    return 0;
}

/* Bytes on disk under path (thread-local total: nftw takes no argument). */
long long abxl_du(const char *path)
{
    du_total = 0;
    nftw(path, du_one, 32, FTW_PHYS | FTW_MOUNT);
    return du_total;
}
