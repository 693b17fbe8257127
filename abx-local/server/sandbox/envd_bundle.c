/* envd inside a template it was not built for: at startup abx-local copies
 * abx-envd and the shared libraries it links (as `ldd` resolves them on
 * this machine, the dynamic loader included) into <state-dir>/envd/, bound
 * read-only at /opt/abx/bin in every sandbox. envd runs through that loader
 * with --library-path, so it needs nothing from the template, as E2B's
 * static envd needs nothing; the processes it starts exec the template's
 * own programs with the template's own libraries (no LD_* variable is set).
 * A sanitizer build's runtime libraries come along the same way. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "rootfs.h"
#include "sandbox.h"

struct libs {
    char dir[4300];
    int count, failed;
    char failure[512];
};

static int copy_file(const char *src, const char *dst, mode_t mode)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    int out = in < 0 ? -1 : open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    int rc = out < 0 ? -1 : abxl_copy_fd(in, out);
    if (out >= 0 && close(out) != 0)
        rc = -1;
    if (in >= 0)
        close(in);
    return rc;
}

static void add_lib(struct libs *l, const char *path, const char *as)
{
    char dst[4600];
    if (abxl_fmt(dst, sizeof dst, "%s/%s", l->dir, as) != 0 || copy_file(path, dst, 0755) != 0) {
        l->failed++;
        abxl_fmt(l->failure, sizeof l->failure, "cannot copy %s: %s", path, strerror(errno));
        return;
    }
    l->count++;
}

/* ldd lines: "\tlibx.so.1 => /lib/.../libx.so.1 (0x...)", the loader as
 * "\t/lib64/ld-linux-x86-64.so.2 (0x...)", the vDSO without a path;
 * "not found" for a library this machine lacks. */
static void on_ldd(const char *line, void *arg)
{
    struct libs *l = arg;
    char path[4096];
    const char *arrow = strstr(line, "=> ");
    const char *p = arrow ? arrow + 3 : line + strspn(line, " \t");
    if (strstr(line, "not found")) {
        l->failed++;
        abxl_fmt(l->failure, sizeof l->failure, "abx-envd needs a library this machine lacks: "
                "%.200s", line + strspn(line, " \t"));
        return;
    }
    if (p[0] != '/')
        return;
    size_t n = strcspn(p, " ");
    if (n >= sizeof path)
        return;
    memcpy(path, p, n);
    path[n] = '\0';
    const char *base = strrchr(path, '/') + 1;
    if (arrow == NULL)
        abxl_fmt(abxl_cfg.envd_loader, sizeof abxl_cfg.envd_loader, "%s", base);
    add_lib(l, path, base);
}

/* A static helper from beside abx-envd, if it is there, into the bundle
 * as `as`: abx-keeper, each command's keeper (envd's keeper.c; without it
 * envd keeps its commands in forks of itself), and abx-sudo, the
 * sandbox's sudo (/usr/bin/sudo points at it; envd serves it). */
static int copy_helper(const char *name, const char *as, bool *have, char *err, size_t errlen)
{
    char src[4200], dst[4400];
    const char *slash = strrchr(abxl_cfg.envd_path, '/');
    int dirlen = slash ? (int)(slash - abxl_cfg.envd_path) : 1;
    *have = false;
    abxl_fmt(src, sizeof src, "%.*s/%s", dirlen, slash ? abxl_cfg.envd_path : ".", name);
    if (access(src, X_OK) != 0)
        return 0;
    abxl_fmt(dst, sizeof dst, "%s/%s", abxl_cfg.envd_bundle, as);
    if (copy_file(src, dst, 0755) != 0) {
        abxl_fmt(err, errlen, "cannot copy %s into %s: %s", src, abxl_cfg.envd_bundle,
                 strerror(errno));
        return -1;
    }
    *have = true;
    return 0;
}

int abxl_envd_bundle(char *err, size_t errlen)
{
    struct libs l = {.count = 0};
    char bin[4400];
    abxl_fmt(abxl_cfg.envd_bundle, sizeof abxl_cfg.envd_bundle, "%s/envd", abxl_cfg.state_dir);
    abxl_fmt(l.dir, sizeof l.dir, "%s/lib", abxl_cfg.envd_bundle);
    abxl_fmt(bin, sizeof bin, "%s/abx-envd", abxl_cfg.envd_bundle);
    abxl_rm_rf(abxl_cfg.envd_bundle);
    if (mkdir(abxl_cfg.envd_bundle, 0755) != 0 || mkdir(l.dir, 0755) != 0 ||
        copy_file(abxl_cfg.envd_path, bin, 0755) != 0) {
        abxl_fmt(err, errlen, "cannot copy abx-envd into %s: %s", abxl_cfg.envd_bundle,
                strerror(errno));
        return -1;
    }
    bool sudo;
    if (copy_helper("abx-keeper", "abx-keeper", &abxl_cfg.envd_keeper, err, errlen) != 0 ||
        copy_helper("abx-sudo", "sudo", &sudo, err, errlen) != 0)
        return -1;
    abxl_cfg.envd_loader[0] = '\0';
    const char *argv[] = {"ldd", abxl_cfg.envd_path, NULL};
    char rerr[256] = "";
    /* ldd exits 1 for a static binary ("not a dynamic executable"). */
    if (abxl_run_lines(argv, on_ldd, &l, rerr, sizeof rerr) != 0 && l.count > 0) {
        abxl_fmt(err, errlen, "ldd %s: %s", abxl_cfg.envd_path, rerr);
        return -1;
    }
    if (l.failed > 0) {
        abxl_fmt(err, errlen, "%s", l.failure);
        return -1;
    }
    if (l.count > 0 && abxl_cfg.envd_loader[0] == '\0') {
        abxl_fmt(err, errlen, "ldd %s named no dynamic loader", abxl_cfg.envd_path);
        return -1;
    }
    return 0;
}

/* What envd needs to run commands as `user`; all else is dropped. */
const char *const abxl_sandbox_caps[ABXL_SANDBOX_NCAPS] = {
    "CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER"};

/* envd inside, through the loader copied with it. */
void abxl_envd_cmdline(void (*add_w)(void *a, const char *w), void *a)
{
    char loader[300];
    if (abxl_cfg.envd_loader[0]) {
        abxl_fmt(loader, sizeof loader, "/opt/abx/bin/lib/%s", abxl_cfg.envd_loader);
        add_w(a, loader);
        add_w(a, "--library-path");
        add_w(a, "/opt/abx/bin/lib");
        add_w(a, "--argv0");
        add_w(a, "abx-envd");
    }
    add_w(a, "/opt/abx/bin/abx-envd");
    add_w(a, "--config");
    add_w(a, "/run/abx/config.json");
    if (abxl_cfg.envd_keeper) {
        add_w(a, "--keeper");
        add_w(a, "/opt/abx/bin/abx-keeper");
    }
}
