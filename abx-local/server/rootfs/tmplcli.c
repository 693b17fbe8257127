/* `abx-local template list|build|import|rm`, and the build `serve` does
 * before it is ready. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "log.h"
#include "rootfs.h"

static const char usage[] =
    "usage: abx-local template list\n"
    "       abx-local template build [NAME ...] [--force] [--profile e2b|fc]\n"
    "       abx-local template import NAME IMAGE.tar\n"
    "       abx-local template rm NAME ...\n"
    "\n"
    "Template root filesystems: built with mmdebstrap from this machine's Debian\n"
    "sources (a template's \"rootfs\": {\"debian\": RELEASE, \"packages\": [...]}),\n"
    "or imported from an OCI image archive or a `docker save` archive (skopeo\n"
    "and umoci). Cached by a hash of the definition under the cache dir and\n"
    "rebuilt when the definition changes. `build` with no NAME builds every\n"
    "template that is missing; --force rebuilds. `rm` drops a cached root (and an\n"
    "imported template's definition).\n"
    "\n"
    "options (anywhere):\n"
    "  --templates DIR   shipped templates (default: beside the binary)\n"
    "  --cache-dir DIR   roots and imports (default $ABX_LOCAL_CACHE or\n"
    "                    /var/cache/abx-local)\n"
    "  --profile P       e2b or fc: whose image a template's root is (its\n"
    "                    rootfs.profilePackages; default $ABX_LOCAL_PROFILE, else e2b)\n"
    "  -h, --help        this help\n"
    "\n"
    "exit codes: 0 done, 1 failed, 2 usage error.\n";

int abxl_cache_prepare(char *err, size_t errlen)
{
    char real[PATH_MAX];
    if ((mkdir(abxl_cfg.cache_dir, 0755) != 0 && errno != EEXIST) ||
        realpath(abxl_cfg.cache_dir, real) == NULL) {
        abxl_fmt(err, errlen, "cannot create the template cache %s: %s", abxl_cfg.cache_dir,
                strerror(errno));
        return -1;
    }
    if (strpbrk(real, ",:\\") != NULL) {
        abxl_fmt(err, errlen, "the template cache path %s has ',' ':' or '\\\\', which overlay "
                "mounts cannot take", real);
        return -1;
    }
    return abxl_fmt(abxl_cfg.cache_dir, sizeof abxl_cfg.cache_dir, "%s", real);
}

#define MAX_NAMES 64

struct each {
    char *const *names;
    int n, done, failed;
    bool matched[MAX_NAMES];
    bool force, missing_only;
    const char *skip_key;   /* on_refs: a key, and how often others use it */
    int refs;
};

/* A template named on the command line (by id, alias or folder name);
 * every name that matched something is marked. */
static bool wanted(struct each *e, const struct abxl_tmpl *t, const char *entry)
{
    bool hit = e->n == 0;
    for (int i = 0; i < e->n; i++)
        if (strcmp(e->names[i], t->id) == 0 || strcmp(e->names[i], entry) == 0 ||
            (t->alias[0] && strcmp(e->names[i], t->alias) == 0)) {
            e->matched[i] = true;
            hit = true;
        }
    return hit;
}

static int on_build(struct abxl_tmpl *t, const char *dir, const char *entry, int ok, void *arg)
{
    struct each *e = arg;
    (void)dir;
    if (ok < 0) {
        if (e->n > 0 && wanted(e, t, entry)) {
            abxl_log(ABXL_LOG_ERROR, "template %s is broken: %s", entry, t->dir);
            e->failed++;
            e->done++;
        } else if (e->n == 0) {
            abxl_log(ABXL_LOG_WARN, "skipping broken template %s: %s", entry,
                    t->dir);
        }
        return 0;
    }
    if (!wanted(e, t, entry))
        return 0;
    e->done++;
    if (e->missing_only && abxl_rootfs_built(t))
        return 0;
    char err[1024];
    if (abxl_rootfs_build(t, e->force, err, sizeof err) != 0) {
        abxl_log(ABXL_LOG_ERROR, "%s", err);
        /* serve: an import whose root is gone cannot be rebuilt; it is
         * unusable, the other templates are not. */
        if (e->n == 0 && t->rootfs_kind == ABXL_ROOTFS_IMAGE)
            abxl_log(ABXL_LOG_WARN, "template %s stays unusable", t->id);
        else
            e->failed++;
    }
    return 0;
}

int abxl_templates_build_missing(void)
{
    char err[1024];
    if (abxl_cache_prepare(err, sizeof err) != 0) {
        abxl_log(ABXL_LOG_ERROR, "%s", err);
        return -1;
    }
    struct each e = {.missing_only = true};
    abxl_tmpl_each(on_build, &e);
    return e.failed ? -1 : 0;
}

static int on_list(struct abxl_tmpl *t, const char *dir, const char *entry, int ok, void *arg)
{
    (void)dir;
    (void)arg;
    if (ok < 0) {
        abxl_out("%-22s %-22s %-12s %s\n", entry, "-", "-", "broken");
        return 0;
    }
    char state[128] = "missing", meta[4300];
    abxl_fmt(meta, sizeof meta, "%s.json", t->rootfs);
    if (abxl_rootfs_built(t)) {
        char *text = abxl_read_text(meta, 4096);
        cJSON *m = text ? cJSON_Parse(text) : NULL;
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(m, "bytes");
        abxl_fmt(state, sizeof state, "built, %.0f MiB",
                 cJSON_IsNumber(b) ? b->valuedouble / 1048576 : 0);
        cJSON_Delete(m);
        free(text);
    }
    char key[13];
    abxl_fmt(key, sizeof key, "%.12s", t->key);
    abxl_out("%-22s %-22s %-12s %-16s %s\n", t->id, t->alias[0] ? t->alias : "-", key, state,
             t->source);
    return 0;
}

/* Counts the templates other than e->names that use the root e->skip_key
 * (two imports of one archive share it). */
static int on_refs(struct abxl_tmpl *t, const char *dir, const char *entry, int ok, void *arg)
{
    struct each *e = arg;
    (void)dir;
    struct each probe = {.names = e->names, .n = e->n};
    if (ok == 0 && strcmp(t->key, e->skip_key) == 0 && !wanted(&probe, t, entry))
        e->refs++;
    return 0;
}

static int on_rm(struct abxl_tmpl *t, const char *dir, const char *entry, int ok, void *arg)
{
    struct each *e = arg;
    if (ok < 0 || !wanted(e, t, entry))
        return 0;
    e->done++;
    bool had = abxl_rootfs_built(t);
    struct each refs = {.names = e->names, .n = e->n, .skip_key = t->key};
    abxl_tmpl_each(on_refs, &refs);
    if (refs.refs > 0) {
        had = false;   /* still another template's root */
    } else if (abxl_rootfs_remove(t) != 0) {
        abxl_log(ABXL_LOG_ERROR, "cannot remove %s", t->rootfs);
        e->failed++;
    }
    char imports[4200];
    abxl_fmt(imports, sizeof imports, "%s/imports/", abxl_cfg.cache_dir);
    bool imported = strncmp(dir, imports, strlen(imports)) == 0;
    if (imported && abxl_rm_rf(dir) != 0)
        e->failed++;
    abxl_out("%s: %s%s\n", t->id, had ? "root removed" : "no root was built",
             imported ? ", imported definition removed" : "");
    return 0;
}

/* After a usage error (said just before): where the help is; exit 2. */
static int bad_usage(void)
{
    abxl_usage("usage: abx-local template list|build|import|rm ...   (see abx-local template "
               "--help)\n", true);
    return 2;
}

/* The command's shape, checked before anything needs root: "" or the
 * problem. */
static const char *shape_error(const char *cmd, int nargs)
{
    if (strcmp(cmd, "list") == 0)
        return nargs == 0 ? "" : "list takes no NAME";
    if (strcmp(cmd, "build") == 0)
        return "";
    if (strcmp(cmd, "rm") == 0)
        return nargs > 0 ? "" : "rm needs a NAME";
    if (strcmp(cmd, "import") == 0)
        return nargs == 2 ? "" : "import needs NAME IMAGE.tar";
    return NULL;  /* not a command */
}

int abxl_template_main(int argc, char **argv)
{
    char *args[MAX_NAMES + 1];
    int n = 0;
    bool force = false;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            abxl_usage(usage, false);
            return 0;
        }
        if (strcmp(argv[i], "--force") == 0) {
            force = true;
        } else if (strcmp(argv[i], "--profile") == 0) {
            /* Templates can differ per profile (rootfs.profilePackages). */
            char perr[128];
            if (i + 1 >= argc || abxl_profile_set(argv[i + 1], perr, sizeof perr) != 0) {
                abxl_log_cmd("template", ABXL_LOG_ERROR, "--profile: %s",
                             i + 1 >= argc ? "needs e2b or fc" : perr);
                return bad_usage();
            }
            i++;
        } else if (strcmp(argv[i], "--templates") == 0 || strcmp(argv[i], "--cache-dir") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0' || strlen(argv[i + 1]) >= 4096) {
                abxl_log_cmd("template", ABXL_LOG_ERROR, "%s needs a folder", argv[i]);
                return bad_usage();
            }
            char *dst = argv[i][2] == 't' ? abxl_cfg.templates_dir : abxl_cfg.cache_dir;
            abxl_fmt(dst, 4096, "%s", argv[++i]);
        } else if (argv[i][0] == '-') {
            abxl_log_cmd("template", ABXL_LOG_ERROR, "unknown option %s", argv[i]);
            return bad_usage();
        } else if (n <= MAX_NAMES) {
            args[n++] = argv[i];
        } else {
            abxl_log_cmd("template", ABXL_LOG_ERROR, "at most %d names", MAX_NAMES);
            return bad_usage();
        }
    }
    const char *bad = n ? shape_error(args[0], n - 1) : "a command is needed: list, build, "
                                                         "import or rm";
    if (bad == NULL || bad[0]) {
        if (bad)
            abxl_log_cmd("template", ABXL_LOG_ERROR, "%s", bad);
        else
            abxl_log_cmd("template", ABXL_LOG_ERROR, "unknown command %s", args[0]);
        return bad_usage();
    }
    char err[1024];
    if (geteuid() != 0) {
        abxl_log_cmd("template", ABXL_LOG_ERROR, "must run as root (root filesystems hold "
                     "files of every owner)");
        return 1;
    }
    if (abxl_cache_prepare(err, sizeof err) != 0) {
        abxl_log(ABXL_LOG_ERROR, "%s", err);
        return 1;
    }
    struct stat st;
    if (stat(abxl_cfg.templates_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        abxl_log(ABXL_LOG_ERROR, "templates dir not found: %s (pass --templates DIR)",
                abxl_cfg.templates_dir);
        return 1;
    }
    const char *cmd = args[0];
    struct each e = {.names = args + 1, .n = n - 1, .force = force};
    if (strcmp(cmd, "list") == 0) {
        abxl_out("%-22s %-22s %-12s %-16s %s\n", "TEMPLATE", "ALIAS", "KEY", "ROOT", "SOURCE");
        abxl_tmpl_each(on_list, NULL);
        return 0;
    }
    if (strcmp(cmd, "build") == 0) {
        e.missing_only = false;
        if (e.n == 0 && !force)
            e.missing_only = true;
        abxl_tmpl_each(on_build, &e);
    } else if (strcmp(cmd, "rm") == 0) {
        abxl_tmpl_each(on_rm, &e);
    } else {  /* import (shape_error checked the rest) */
        struct abxl_tmpl t;
        if (abxl_tmpl_find(args[1], &t, err, sizeof err) == 0) {
            bool imported = strstr(t.dir, "/imports/") != NULL;
            abxl_tmpl_free(&t);
            if (!imported) {
                abxl_log(ABXL_LOG_ERROR, "template %s exists already (shipped); pick "
                        "another name", args[1]);
                return 1;
            }
        }
        if (abxl_rootfs_import(args[1], args[2], err, sizeof err) != 0) {
            abxl_log(ABXL_LOG_ERROR, "%s", err);
            return 1;
        }
        return 0;
    }
    for (int i = 0; i < e.n; i++)
        if (!e.matched[i]) {
            abxl_log(ABXL_LOG_ERROR, "no template named %s", e.names[i]);
            e.failed++;
        }
    return e.failed ? 1 : 0;
}
