/* out.c: channels mask across writes, printf, flush, atomic files. */
#include "check.h"
#include "fsutil.h"
#include "out.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define M ABX_MASK_MARKER

static char *slurp(const char *path)
{
    char *data = NULL, err[256];
    size_t len;

    if (abx_read_file(path, 1 << 20, &data, &len, err, sizeof(err)) != 0)
        return NULL;
    return data;
}

int main(void)
{
    char dir[] = "/tmp/abx-out-XXXXXX";
    char path[256], rep[256], tmp[300], err[256];
    static const char key[] = "e2b_outtestsecret_42";
    struct stat st;
    char *got;
    int fd;

    CHECK(mkdtemp(dir) != NULL);
    CHECK(abx_out_masker() != NULL);
    CHECK(abx_out_masker() == abx_out_masker());
    CHECK_INT(abx_mask_add_str(abx_out_masker(), key), 0);

    snprintf(path, sizeof(path), "%s/stdout.txt", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    abx_out_set_fd(ABX_OUT_STDOUT, fd);
    /* a secret split across writes and printf calls */
    CHECK_INT(abx_out_write(ABX_OUT_STDOUT, "key: e2b_out", 12), 0);
    CHECK_INT(abx_out_printf(ABX_OUT_STDOUT, "test%s_%d\n", "secret", 42), 0);
    CHECK_INT(abx_out_puts(ABX_OUT_STDOUT, "plain line\n"), 0);
    CHECK_INT(abx_out_printf(ABX_OUT_STDOUT, "tail %s", "e2b_outtest"), 0);
    /* the held-back prefix is not on disk before the flush */
    got = slurp(path);
    CHECK_STR(got, "key: " M "\nplain line\ntail ");
    free(got);
    CHECK_INT(abx_out_flush(), 0);
    got = slurp(path);
    CHECK_STR(got, "key: " M "\nplain line\ntail e2b_outtest");
    free(got);
    CHECK_INT(abx_out_write(ABX_OUT_STDOUT, "", 0), 0);
    CHECK_INT(abx_out_write(99, "x", 1), -1);  /* unknown channel */
    abx_out_set_fd(ABX_OUT_STDOUT, -1);
    close(fd);

    /* atomic, masked report file in a directory that does not exist */
    snprintf(rep, sizeof(rep), "%s/a/b/report.xml", dir);
    CHECK_INT(abx_out_write_file_atomic(rep, "<x>e2b_outtestsecret_42</x>",
                                        27, err, sizeof(err)),
              0);
    got = slurp(rep);
    CHECK_STR(got, "<x>" M "</x>");
    free(got);
    snprintf(tmp, sizeof(tmp), "%s.tmp", rep);
    CHECK(stat(tmp, &st) != 0);
    /* replacing keeps a whole file */
    CHECK_INT(abx_out_write_file_atomic(rep, "second", 6, err, sizeof(err)), 0);
    got = slurp(rep);
    CHECK_STR(got, "second");
    free(got);
    CHECK_INT(abx_out_write_file_atomic(rep, "", 0, err, sizeof(err)), 0);
    CHECK(stat(rep, &st) == 0 && st.st_size == 0);
    /* failure names the path */
    snprintf(tmp, sizeof(tmp), "%s/a/b/report.xml/sub/x", dir);
    CHECK_INT(abx_out_write_file_atomic(tmp, "x", 1, err, sizeof(err)), -1);
    CHECK(strstr(err, "report.xml") != NULL);
    fprintf(stderr, "expected error: %s\n", err);

    unlink(rep);
    unlink(path);
    snprintf(tmp, sizeof(tmp), "%s/a/b", dir);
    rmdir(tmp);
    snprintf(tmp, sizeof(tmp), "%s/a", dir);
    rmdir(tmp);
    rmdir(dir);
    return CHECK_DONE();
}
