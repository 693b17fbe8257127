/* Template root filesystems: built once with mmdebstrap from the machine's
 * Debian sources, cached under <cache>/rootfs/<key> where key is a hash of
 * the definition, rebuilt when the definition changes.
 *
 * A build happens in <cache>/tmp and is renamed into place only when
 * complete, under a per-key lock, so a failed or interrupted build never
 * leaves a cache entry and two servers never build one key at once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server.h"

/* Part of every key: bump when the customize step or the layout changes. */
#define ROOTFS_FORMAT "abx-rootfs-2"

int abx_rootfs_paths(struct abx_tmpl *t)
{
    return abx_fmt(t->rootfs, sizeof t->rootfs, "%s/rootfs/%s", abx_cfg.cache_dir, t->key);
}

int abx_rootfs_key(struct abx_tmpl *t, char *err, size_t errlen)
{
    if (t->rootfs_kind == ABX_ROOTFS_IMAGE)
        return abx_rootfs_paths(t);
    struct abx_sha256 h;
    abx_sha256_init(&h);
    abx_sha256_str(&h, ROOTFS_FORMAT);
    abx_sha256_str(&h, t->release);
    abx_sha256_str(&h, t->variant);
    /* Sorted, so reordering the list does not rebuild. */
    int n = cJSON_GetArraySize(t->packages);
    const char *names[256];
    if (n > 256) {
        abx_fmt(err, errlen, "template '%s': more than 256 packages", t->id);
        return -1;
    }
    for (int i = 0; i < n; i++)
        names[i] = cJSON_GetArrayItem(t->packages, i)->valuestring;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *x = names[j];
            names[j] = names[j - 1];
            names[j - 1] = x;
        }
    for (int i = 0; i < n; i++)
        abx_sha256_str(&h, names[i]);
    char home[4200];
    abx_fmt(home, sizeof home, "%s/home", t->dir);
    abx_sha256_str(&h, "home");
    if (abx_sha256_tree(&h, home) != 0) {
        abx_fmt(err, errlen, "template '%s': cannot read %s: %s", t->id, home, strerror(errno));
        return -1;
    }
    abx_sha256_hex(&h, t->key);
    return abx_rootfs_paths(t);
}

bool abx_rootfs_built(const struct abx_tmpl *t)
{
    struct stat st;
    return t->key[0] && stat(t->rootfs, &st) == 0 && S_ISDIR(st.st_mode);
}

static int mkdirs(const char *sub, char *err, size_t errlen)
{
    char p[4200];
    abx_fmt(p, sizeof p, "%s%s%s", abx_cfg.cache_dir, sub[0] ? "/" : "", sub);
    if (mkdir(p, 0755) == 0 || errno == EEXIST)
        return 0;
    abx_fmt(err, errlen, "cannot create the template cache %s: %s", p, strerror(errno));
    return -1;
}

int abx_rootfs_lock(const struct abx_tmpl *t, char *err, size_t errlen)
{
    static const char *const subs[] = {"", "rootfs", "tmp", "locks", "imports"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (mkdirs(subs[i], err, errlen) != 0)
            return -1;
    char p[4200];
    abx_fmt(p, sizeof p, "%s/locks/%s.lock", abx_cfg.cache_dir, t->key);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        abx_fmt(err, errlen, "cannot open %s: %s", p, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr, "abx-local: template %s: waiting for another build of it\n", t->id);
        while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
        }
    }
    return fd;
}

/* <cache>/tmp/<key>: left by an interrupted build of this key (we hold
 * its lock, so nobody else uses it). */
int abx_rootfs_tmpdir(const struct abx_tmpl *t, char *out, size_t n, char *err, size_t errlen)
{
    abx_fmt(out, n, "%s/tmp/%s", abx_cfg.cache_dir, t->key);
    abx_rm_rf(out);
    if (mkdir(out, 0700) == 0)
        return 0;
    abx_fmt(err, errlen, "cannot create %s: %s", out, strerror(errno));
    return -1;
}

int abx_rootfs_commit(const struct abx_tmpl *t, const char *tmp_root, int64_t started_ms,
                      char *err, size_t errlen)
{
    char meta[4300], mtmp[4300], body[512];
    abx_fmt(meta, sizeof meta, "%s.json", t->rootfs);
    abx_fmt(mtmp, sizeof mtmp, "%s.json.tmp", t->rootfs);
    long long bytes = abx_du(tmp_root);
    double secs = (double)(abx_now_ms() - started_ms) / 1000.0;
    abx_fmt(body, sizeof body, "{\"template\":\"%s\",\"bytes\":%lld,\"buildSeconds\":%.1f,"
            "\"builtAt\":%lld}\n", t->id, bytes, secs, (long long)(abx_now_ms() / 1000));
    abx_rm_rf(t->rootfs);   /* --force: the old entry goes only now */
    if (abx_write_small(mtmp, body, 0644) != 0 || rename(tmp_root, t->rootfs) != 0 ||
        rename(mtmp, meta) != 0) {
        abx_fmt(err, errlen, "cannot move the built root into %s: %s", t->rootfs,
                strerror(errno));
        abx_rm_rf(t->rootfs);
        unlink(mtmp);
        return -1;
    }
    fprintf(stderr, "abx-local: template %s ready in %.1f s (%lld MiB, %s)\n", t->id, secs,
            bytes >> 20, t->rootfs);
    return 0;
}

void abx_rootfs_progress(const struct abx_tmpl *t, const char *verb, int pct, const char *what)
{
    fprintf(stderr, "abx-local: %s template %s: %d %% (%s)\n", verb, t->id, pct, what);
}

/* ---- mmdebstrap ---- */
struct build_state {
    const struct abx_tmpl *t;
    char step[64];
    char errors[1024];
};

/* mmdebstrap's "I:" lines name its stages; they map to a share of the
 * build (downloading and unpacking take most of it). */
static void on_line(const char *line, void *arg)
{
    struct build_state *b = arg;
    static const struct {
        const char *prefix, *step;
        int pct;
    } stages[] = {{"I: running apt-get update", "updating package lists", 5},
                  {"I: downloading packages", "downloading", 15},
                  {"I: extracting archives", "unpacking", 45},
                  {"I: installing essential packages", "installing", 60},
                  {"I: installing remaining packages", "installing packages", 75},
                  {"I: cleaning package lists", "cleaning", 85}};
    for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++)
        if (strncmp(line, stages[i].prefix, strlen(stages[i].prefix)) == 0) {
            abx_fmt(b->step, sizeof b->step, "%s", stages[i].step);
            abx_rootfs_progress(b->t, "building", stages[i].pct, stages[i].step);
            return;
        }
    /* apt's and mmdebstrap's errors ("E: Unable to locate package x"). */
    if (strncmp(line, "E: ", 3) == 0 && strlen(b->errors) < sizeof b->errors - 200) {
        size_t l = strlen(b->errors);
        abx_fmt(b->errors + l, sizeof b->errors - l, "%s%.190s", l ? "; " : "", line);
    }
}

static const char *debian_sources(void)
{
    static const char *const cands[] = {"/etc/apt/sources.list.d/debian.sources",
                                        "/etc/apt/sources.list"};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        struct stat st;
        if (stat(cands[i], &st) == 0 && st.st_size > 0)
            return cands[i];
    }
    return NULL;
}

static int run_mmdebstrap(const struct abx_tmpl *t, const char *root, char *err, size_t errlen)
{
    char variant[64], include[4096];
    abx_fmt(variant, sizeof variant, "--variant=%s", t->variant);
    abx_fmt(include, sizeof include, "--include=");
    size_t l = strlen(include);
    int n = cJSON_GetArraySize(t->packages);
    for (int i = 0; i < n; i++) {
        const char *pk = cJSON_GetArrayItem(t->packages, i)->valuestring;
        if (abx_fmt(include + l, sizeof include - l, "%s%s", i ? "," : "", pk) != 0) {
            abx_fmt(err, errlen, "template '%s': package list too long", t->id);
            return -1;
        }
        l = strlen(include);
    }
    char src[256] = "";
    const char *found = debian_sources();
    abx_fmt(src, sizeof src, "%s", found ? found : "");
    char release[64];
    abx_fmt(release, sizeof release, "%s", t->release);
    char *argv[12] = {"mmdebstrap", "--mode=root", "--format=directory", variant,
                      "--aptopt=Apt::Install-Recommends \"false\""};
    int k = 5;
    if (n > 0)
        argv[k++] = include;
    argv[k++] = release;
    argv[k++] = (char *)root;
    if (src[0])
        argv[k++] = src;
    argv[k] = NULL;
    struct build_state b = {.t = t};
    abx_fmt(b.step, sizeof b.step, "starting mmdebstrap");
    char rerr[256] = "";
    if (abx_run_lines(argv, on_line, &b, rerr, sizeof rerr) == 0)
        return 0;
    abx_fmt(err, errlen, "building template %s failed at step '%s': %s", t->id, b.step,
            b.errors[0] ? b.errors : rerr);
    return -1;
}

int abx_rootfs_build(const struct abx_tmpl *t, bool force, char *err, size_t errlen)
{
    char tmp[4300] = "", root[4400], home[4200];
    int rc = -1;
    if (t->rootfs_kind == ABX_ROOTFS_IMAGE) {
        if (abx_rootfs_built(t))
            return 0;
        abx_fmt(err, errlen, "template %s: its imported root filesystem is gone from %s; "
                "import the image again (abx-local template import %s IMAGE.tar)",
                t->id, t->rootfs, t->id);
        return -1;
    }
    int lock = abx_rootfs_lock(t, err, errlen);
    if (lock < 0)
        return -1;
    if (abx_rootfs_built(t) && !force) {
        rc = 0;
        goto out;
    }
    if (access("/usr/bin/mmdebstrap", X_OK) != 0) {
        abx_fmt(err, errlen, "building template %s needs mmdebstrap (install the Debian "
                "package 'mmdebstrap')", t->id);
        goto out;
    }
    if (abx_rootfs_tmpdir(t, tmp, sizeof tmp, err, errlen) != 0)
        goto out;
    int64_t t0 = abx_now_ms();
    abx_fmt(root, sizeof root, "%s/root", tmp);
    abx_rootfs_progress(t, "building", 0, "starting");
    if (run_mmdebstrap(t, root, err, errlen) != 0)
        goto out;
    abx_rootfs_progress(t, "building", 90, "customizing");
    abx_fmt(home, sizeof home, "%s/home", t->dir);
    struct stat st;
    bool has_home = stat(home, &st) == 0 && S_ISDIR(st.st_mode);
    if (abx_rootfs_customize(root, has_home ? home : NULL, err, errlen) != 0)
        goto out;
    rc = abx_rootfs_commit(t, root, t0, err, errlen);
    if (rc == 0)
        abx_rootfs_progress(t, "building", 100, "done");
out:
    if (rc != 0 && tmp[0])
        abx_rm_rf(tmp);
    else if (tmp[0])
        rmdir(tmp);
    close(lock);
    return rc;
}

int abx_rootfs_remove(const struct abx_tmpl *t)
{
    char meta[4300];
    abx_fmt(meta, sizeof meta, "%s.json", t->rootfs);
    unlink(meta);
    return abx_rm_rf(t->rootfs);
}
