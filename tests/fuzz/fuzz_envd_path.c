/* abx-envd request paths: abxl_envd_path_resolve (users.c, callable without a
 * server) on arbitrary paths. A resolved path is absolute and clean
 * (no empty, "." or ".." segments, no trailing '/'), fits the output,
 * and resolving it again gives it back. Input: byte 0 picks the home
 * directory and the output size, the rest is the path (to its first
 * NUL). */
#include <limits.h>
#include <string.h>

#include "daemon.h"
#include "fuzz.h"

static const char *const homes[] = {"/root", "/home/user", "/", "",
                                    "/home/u/../v/./w//", "relative"};
static const size_t outlens[] = {PATH_MAX, 1, 2, 8, 32, 4096 * 3};

static void check_clean(const char *s)
{
    const char *seg = s + 1, *q;
    size_t n;

    FUZZ_CHECK(s[0] == '/');
    if (!s[1])
        return;
    for (;;) {
        q = strchr(seg, '/');
        n = q ? (size_t)(q - seg) : strlen(seg);
        FUZZ_CHECK(n > 0);
        FUZZ_CHECK(!(n == 1 && seg[0] == '.'));
        FUZZ_CHECK(!(n == 2 && seg[0] == '.' && seg[1] == '.'));
        if (!q)
            break;
        seg = q + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct abxl_envd_user u;
    char *in, *out, *again, err[128];
    size_t outlen;
    int rc;

    if (size < 1)
        return 0;
    memset(&u, 0, sizeof u);
    snprintf(u.home, sizeof u.home, "%s",
             homes[data[0] % (sizeof homes / sizeof homes[0])]);
    outlen = outlens[(data[0] >> 3) % (sizeof outlens / sizeof outlens[0])];
    in = strndup((const char *)data + 1, size - 1);
    out = malloc(outlen);
    again = malloc(outlen);
    FUZZ_CHECK(in && out && again);

    memset(err, 'x', sizeof err);
    rc = abxl_envd_path_resolve(in, &u, out, outlen, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(memchr(out, '\0', outlen) != NULL);
        check_clean(out);
        FUZZ_CHECK(abxl_envd_path_resolve(out, &u, again, outlen, err,
                                     sizeof err) == 0);
        FUZZ_CHECK(!strcmp(out, again));
        /* Relative and "~" paths land under the (clean) home. */
        if (in[0] != '/' && !strstr(in, "..") && u.home[0] == '/' &&
            !strstr(u.home, "..") && !strstr(u.home, "/.") &&
            !strstr(u.home, "//") && strlen(u.home) > 1) {
            size_t hl = strlen(u.home);

            FUZZ_CHECK(!strncmp(out, u.home, hl) &&
                       (out[hl] == '/' || out[hl] == '\0'));
        }
    } else {
        FUZZ_CHECK(rc == -1);
        FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL);
        FUZZ_CHECK(!strcmp(err, "path is too long") ||
                   !strcmp(err, "cannot expand user-specific home dir"));
    }
    free(in);
    free(out);
    free(again);
    return 0;
}
