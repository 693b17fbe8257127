/* Small helpers: randomness, ids, time, rm -rf, small files, query strings. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "jsonstrict.h"
#include "log.h"
#include "random.h"

int abxl_random_hex(char *out, size_t nbytes)
{
    return abx_random_hex(out, nbytes);
}

static const char e2b[] = "abcdefghijklmnopqrstuvwxyz0123456789";
static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

bool abxl_id_shaped(const char *id)
{
    bool fc = abxl_sw(ABXL_SW_FC_IDS);
    const char *tail = fc ? (strncmp(id, "sbx-", 4) == 0 ? id + 4 : NULL) : id;

    return tail && strlen(tail) == (fc ? 26u : (size_t)ABXL_ID_LEN) &&
           strspn(tail, fc ? crockford : e2b) == strlen(tail);
}

int abxl_random_id(char out[ABXL_ID_MAX + 1])
{
    bool fc = abxl_sw(ABXL_SW_FC_IDS);
    const char *al = fc ? crockford : e2b;
    size_t k = fc ? 32 : 36, len = fc ? 26 : ABXL_ID_LEN, off = fc ? 4 : 0;
    unsigned char raw[32];
    if (abx_random_bytes(raw, len) != 0)
        return -1;
    if (fc)
        memcpy(out, "sbx-", 4);
    for (size_t i = 0; i < len; i++)
        out[off + i] = al[raw[i] % k];
    out[off + len] = '\0';
    return 0;
}

int64_t abxl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void abxl_abstime_in(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

void abxl_sleep_ms(long ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void abxl_rfc3339(int64_t ms, char *out, size_t n)
{
    /* --vary time-format=cst-s: whole seconds in China Standard Time. */
    bool cst = abxl_vary(ABXL_V_TIME_FORMAT) == 1;
    time_t t = (time_t)(ms / 1000) + (cst ? 8 * 3600 : 0);
    struct tm tm;
    gmtime_r(&t, &tm);
    if (cst)
        snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d+08:00", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    else
        snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (int)(ms % 1000));
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)f;
    /* FTW_PHYS: a symlink a sandbox planted is removed, never followed. */
    int r = (flag == FTW_DP) ? rmdir(p) : unlink(p);
    if (r != 0 && errno != ENOENT)
        abxl_log(ABXL_LOG_ERROR, "cannot remove %s: %s", p, strerror(errno));
    return 0;
}

int abxl_rm_rf(const char *path)
{
    if (access(path, F_OK) != 0)
        return 0;
    nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    return access(path, F_OK) == 0 ? -1 : 0;
}

int abxl_write_value(const char *path, const char *val)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = strlen(val);
    ssize_t w = write(fd, val, n);
    int saved = errno;
    close(fd);
    errno = saved;
    return w == (ssize_t)n ? 0 : -1;
}

int abxl_read_value(const char *path, char *out, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t r = read(fd, out, n - 1);
    int saved = errno;
    close(fd);
    errno = saved;
    if (r < 0)
        return -1;
    out[r] = '\0';
    return 0;
}

int abxl_write_small(const char *path, const char *data, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return -1;
    size_t len = strlen(data), off = 0;
    int rc = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            rc = -1;
            break;
        }
        off += (size_t)w;
    }
    if (fchmod(fd, mode) != 0)
        rc = -1;
    if (close(fd) != 0)
        rc = -1;
    return rc;
}

char *abxl_read_text(const char *path, size_t max)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return NULL;
    struct abx_buf b;
    abx_buf_init(&b, max);
    char chunk[4096];
    size_t n;
    int ok = 1;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (abx_buf_append(&b, chunk, n) != 0) {
            ok = 0;
            break;
        }
    fclose(f);
    /* The empty append makes an empty file "" (an allocation), not NULL. */
    if (!ok || abx_buf_appends(&b, "") != 0) {
        abx_buf_free(&b);
        return NULL;
    }
    size_t len;
    return abx_buf_steal(&b, &len);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Go's url.QueryUnescape: %XX and '+' -> ' '; a bad escape is an error. */
int abxl_unescape(const char *in, size_t n, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int h = hexval(in[i + 1]), l = hexval(in[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            c = (char)(h * 16 + l);
            i += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (c == '\0' || o + 1 >= outlen)
            return -1;   /* a NUL would cut the value short in C */
        out[o++] = c;
    }
    out[o] = '\0';
    return abx_text_ok(out, o) ? 0 : -1;
}

int abxl_query_get(const char *uri, const char *name, char *out, size_t outlen)
{
    const char *q = strchr(uri, '?');
    if (q == NULL)
        return 0;
    q++;
    size_t nlen = strlen(name);
    while (*q) {
        const char *end = strchr(q, '&');
        size_t len = end ? (size_t)(end - q) : strlen(q);
        const char *eq = memchr(q, '=', len);
        size_t klen = eq ? (size_t)(eq - q) : len;
        char key[128];
        if (abxl_unescape(q, klen, key, sizeof key) == 0 && strlen(key) == nlen &&
            memcmp(key, name, nlen) == 0) {
            if (eq == NULL) {
                out[0] = '\0';
                return 1;
            }
            return abxl_unescape(eq + 1, len - klen - 1, out, outlen) == 0 ? 1 : -1;
        }
        if (end == NULL)
            break;
        q = end + 1;
    }
    return 0;
}

int abxl_fmt(char *dst, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(dst, n, fmt, ap);
    va_end(ap);
    return r < 0 || (size_t)r >= n ? -1 : 0;
}
