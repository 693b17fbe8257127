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

#include "base.h"
#include "log.h"
#include "rootfs.h"

/* Part of every key: bump when the customize step or the layout changes. */
#define ROOTFS_FORMAT "abx-rootfs-4"   /* 3: owned by the sandbox uids; 4: /usr/bin/sudo */

int abxl_rootfs_paths(struct abxl_tmpl *t)
{
    return abxl_fmt(t->rootfs, sizeof t->rootfs, "%s/rootfs/%s", abxl_cfg.cache_dir, t->key);
}

int abxl_rootfs_key(struct abxl_tmpl *t, char *err, size_t errlen)
{
    if (t->rootfs_kind == ABXL_ROOTFS_IMAGE)
        return abxl_rootfs_paths(t);
    struct abxl_sha256 h;
    abxl_sha256_init(&h);
    abxl_sha256_str(&h, ROOTFS_FORMAT);
    abxl_sha256_str(&h, t->release);
    abxl_sha256_str(&h, t->variant);
    /* Sorted, so reordering the list does not rebuild. */
    int n = cJSON_GetArraySize(t->packages);
    const char *names[256];
    if (n > 256) {
        abxl_fmt(err, errlen, "template '%s': more than 256 packages", t->id);
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
        abxl_sha256_str(&h, names[i]);
    char home[4200];
    abxl_fmt(home, sizeof home, "%s/home", t->dir);
    abxl_sha256_str(&h, "home");
    if (abxl_sha256_tree(&h, home) != 0) {
        abxl_fmt(err, errlen, "template '%s': cannot read %s: %s", t->id, home, strerror(errno));
        return -1;
    }
    abxl_sha256_hex(&h, t->key);
    return abxl_rootfs_paths(t);
}

/* Built, and by a layout that gives it to the sandbox uids: its
 * <key>.json says which uid base it was shifted to (rootfs_shift.c). */
bool abxl_rootfs_built(const struct abxl_tmpl *t)
{
    struct stat st;
    if (!t->key[0] || stat(t->rootfs, &st) != 0 || !S_ISDIR(st.st_mode))
        return false;
    char meta[4300];
    abxl_fmt(meta, sizeof meta, "%s.json", t->rootfs);
    char *text = abxl_read_text(meta, 4096);
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "uidBase");
    bool ok = cJSON_IsNumber(b) && b->valuedouble == (double)ABXL_UID_BASE;
    cJSON_Delete(o);
    free(text);
    return ok;
}

static int mkdirs(const char *sub, char *err, size_t errlen)
{
    char p[4200];
    abxl_fmt(p, sizeof p, "%s%s%s", abxl_cfg.cache_dir, sub[0] ? "/" : "", sub);
    if (mkdir(p, 0755) == 0 || errno == EEXIST)
        return 0;
    abxl_fmt(err, errlen, "cannot create the template cache %s: %s", p, strerror(errno));
    return -1;
}

int abxl_rootfs_lock(const struct abxl_tmpl *t, char *err, size_t errlen)
{
    static const char *const subs[] = {"", "rootfs", "tmp", "locks", "imports"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (mkdirs(subs[i], err, errlen) != 0)
            return -1;
    char p[4200];
    abxl_fmt(p, sizeof p, "%s/locks/%s.lock", abxl_cfg.cache_dir, t->key);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        abxl_fmt(err, errlen, "cannot open %s: %s", p, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        abxl_log(ABXL_LOG_INFO, "template %s: waiting for another build of it", t->id);
        while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
        }
    }
    return fd;
}

/* <cache>/tmp/<key>: left by an interrupted build of this key (we hold
 * its lock, so nobody else uses it). */
int abxl_rootfs_tmpdir(const struct abxl_tmpl *t, char *out, size_t n, char *err, size_t errlen)
{
    abxl_fmt(out, n, "%s/tmp/%s", abxl_cfg.cache_dir, t->key);
    abxl_rm_rf(out);
    if (mkdir(out, 0700) == 0)
        return 0;
    abxl_fmt(err, errlen, "cannot create %s: %s", out, strerror(errno));
    return -1;
}

int abxl_rootfs_commit(const struct abxl_tmpl *t, const char *tmp_root, int64_t started_ms,
                      char *err, size_t errlen)
{
    char meta[4300], mtmp[4300], body[512];
    abxl_fmt(meta, sizeof meta, "%s.json", t->rootfs);
    abxl_fmt(mtmp, sizeof mtmp, "%s.json.tmp", t->rootfs);
    if (abxl_rootfs_shift(tmp_root, err, errlen) != 0)
        return -1;
    long long bytes = abxl_du(tmp_root);
    double secs = (double)(abxl_now_ms() - started_ms) / 1000.0;
    abxl_fmt(body, sizeof body, "{\"template\":\"%s\",\"bytes\":%lld,\"buildSeconds\":%.1f,"
            "\"builtAt\":%lld,\"uidBase\":%lu}\n", t->id, bytes, secs,
            (long long)(abxl_now_ms() / 1000), ABXL_UID_BASE);
    abxl_rm_rf(t->rootfs);   /* --force: the old entry goes only now */
    if (abxl_write_small(mtmp, body, 0644) != 0 || rename(tmp_root, t->rootfs) != 0 ||
        rename(mtmp, meta) != 0) {
        abxl_fmt(err, errlen, "cannot move the built root into %s: %s", t->rootfs,
                strerror(errno));
        abxl_rm_rf(t->rootfs);
        unlink(mtmp);
        return -1;
    }
    abxl_log(ABXL_LOG_INFO, "template %s ready in %.1f s (%lld MiB, %s)", t->id, secs,
            bytes >> 20, t->rootfs);
    return 0;
}

void abxl_rootfs_progress(const struct abxl_tmpl *t, const char *verb, int pct, const char *what)
{
    abxl_log(ABXL_LOG_INFO, "%s template %s: %d %% (%s)", verb, t->id, pct, what);
}

/* ---- mmdebstrap ---- */
struct build_state {
    const struct abxl_tmpl *t;
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
            abxl_fmt(b->step, sizeof b->step, "%s", stages[i].step);
            abxl_rootfs_progress(b->t, "building", stages[i].pct, stages[i].step);
            return;
        }
    /* apt's and mmdebstrap's errors ("E: Unable to locate package x"). */
    if (strncmp(line, "E: ", 3) == 0 && strlen(b->errors) < sizeof b->errors - 200) {
        size_t l = strlen(b->errors);
        abxl_fmt(b->errors + l, sizeof b->errors - l, "%s%.190s", l ? "; " : "", line);
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

static int run_mmdebstrap(const struct abxl_tmpl *t, const char *root, char *err, size_t errlen)
{
    char variant[64], include[4096];
    abxl_fmt(variant, sizeof variant, "--variant=%s", t->variant);
    abxl_fmt(include, sizeof include, "--include=");
    size_t l = strlen(include);
    int n = cJSON_GetArraySize(t->packages);
    for (int i = 0; i < n; i++) {
        const char *pk = cJSON_GetArrayItem(t->packages, i)->valuestring;
        if (abxl_fmt(include + l, sizeof include - l, "%s%s", i ? "," : "", pk) != 0) {
            abxl_fmt(err, errlen, "template '%s': package list too long", t->id);
            return -1;
        }
        l = strlen(include);
    }
    char src[256] = "";
    const char *found = debian_sources();
    abxl_fmt(src, sizeof src, "%s", found ? found : "");
    char release[64];
    abxl_fmt(release, sizeof release, "%s", t->release);
    const char *argv[12] = {"mmdebstrap", "--mode=root", "--format=directory", variant,
                      "--aptopt=Apt::Install-Recommends \"false\""};
    int k = 5;
    if (n > 0)
        argv[k++] = include;
    argv[k++] = release;
    argv[k++] = root;
    if (src[0])
        argv[k++] = src;
    argv[k] = NULL;
    struct build_state b = {.t = t};
    abxl_fmt(b.step, sizeof b.step, "starting mmdebstrap");
    char rerr[256] = "";
    if (abxl_run_lines(argv, on_line, &b, rerr, sizeof rerr) == 0)
        return 0;
    abxl_fmt(err, errlen, "building template %s failed at step '%s': %s", t->id, b.step,
            b.errors[0] ? b.errors : rerr);
    return -1;
}

int abxl_rootfs_build(const struct abxl_tmpl *t, bool force, char *err, size_t errlen)
{
    char tmp[4300] = "", root[4400], home[4200];
    int rc = -1;
    if (t->rootfs_kind == ABXL_ROOTFS_IMAGE) {
        if (abxl_rootfs_built(t))
            return 0;
        abxl_fmt(err, errlen, "template %s: its imported root filesystem is gone from %s, "
                "or was imported by an abx-local older than its user namespaces; import "
                "the image again (abx-local template import %s IMAGE.tar)",
                t->id, t->rootfs, t->id);
        return -1;
    }
    int lock = abxl_rootfs_lock(t, err, errlen);
    if (lock < 0)
        return -1;
    if (abxl_rootfs_built(t) && !force) {
        rc = 0;
        goto out;
    }
    if (access("/usr/bin/mmdebstrap", X_OK) != 0) {
        abxl_fmt(err, errlen, "building template %s needs mmdebstrap (install the Debian "
                "package 'mmdebstrap')", t->id);
        goto out;
    }
    if (abxl_rootfs_tmpdir(t, tmp, sizeof tmp, err, errlen) != 0)
        goto out;
    int64_t t0 = abxl_now_ms();
    abxl_fmt(root, sizeof root, "%s/root", tmp);
    abxl_rootfs_progress(t, "building", 0, "starting");
    if (run_mmdebstrap(t, root, err, errlen) != 0)
        goto out;
    abxl_rootfs_progress(t, "building", 90, "customizing");
    abxl_fmt(home, sizeof home, "%s/home", t->dir);
    struct stat st;
    bool has_home = stat(home, &st) == 0 && S_ISDIR(st.st_mode);
    if (abxl_rootfs_customize(root, has_home ? home : NULL, err, errlen) != 0)
        goto out;
    rc = abxl_rootfs_commit(t, root, t0, err, errlen);
    if (rc == 0)
        abxl_rootfs_progress(t, "building", 100, "done");
out:
    if (rc != 0 && tmp[0])
        abxl_rm_rf(tmp);
    else if (tmp[0])
        rmdir(tmp);
    close(lock);
    return rc;
}

int abxl_rootfs_remove(const struct abxl_tmpl *t)
{
    char meta[4300];
    abxl_fmt(meta, sizeof meta, "%s.json", t->rootfs);
    unlink(meta);
    return abxl_rm_rf(t->rootfs);
}
