/* Templates and their root filesystems: found, built, imported, cached,
 * given to the sandbox uids. */
#ifndef ABXL_ROOTFS_H
#define ABXL_ROOTFS_H

#include "base.h"

/* ---- templates (tmpl.c) and their root filesystems (rootfs*.c) ---- */
enum abxl_rootfs_kind { ABXL_ROOTFS_NONE, ABXL_ROOTFS_DEBIAN, ABXL_ROOTFS_IMAGE };

struct abxl_tmpl {
    char id[128], alias[128], dir[4096];
    enum abxl_rootfs_kind rootfs_kind;
    char release[64], variant[32];
    cJSON *packages;   /* array of strings, owned (Debian roots) */
    char source[512];  /* "debian bookworm/essential +python3", "image x.tar" */
    char key[65];      /* cache key: hash of the definition, or the image's */
    char rootfs[4200]; /* <cache>/rootfs/<key> */
    int pids_limit;
    cJSON *env_vars;   /* object or NULL, owned */
    cJSON *start;      /* object or NULL, owned */
    int ready_port;    /* 0 = none */
    char ready_path[512];
    long ready_timeout_ms;
    int cpu_count, memory_mb, disk_mb;
};
/* 0 found, 1 not found, -1 broken template (err filled). */
int abxl_tmpl_find(const char *name, struct abxl_tmpl *out, char *err, size_t errlen);
/* Whether the template ships an app (its app/ folder, shown read-only at
 * /opt/abx/app); path set to it. */
bool abxl_tmpl_app(const struct abxl_tmpl *t, char *path, size_t n);
#define ABXL_TMPL_ID_MAX 24
/* The id clients see: id itself, or an opaque one (--vary template-id). */
const char *abxl_tmpl_public_id(const char *id, char out[ABXL_TMPL_ID_MAX]);
void abxl_tmpl_free(struct abxl_tmpl *t);
/* Every template, shipped then imported; ok < 0: broken, t->dir holds the
 * reason. Stops at fn's first non-zero return, which it returns. t is
 * freed after fn. */
int abxl_tmpl_each(int (*fn)(struct abxl_tmpl *t, const char *dir, const char *entry, int ok,
                            void *arg),
                  void *arg);

int abxl_rootfs_key(struct abxl_tmpl *t, char *err, size_t errlen);   /* key, rootfs */
int abxl_rootfs_paths(struct abxl_tmpl *t);                           /* rootfs from key */
bool abxl_rootfs_built(const struct abxl_tmpl *t);
/* Builds t's root unless cached (force: rebuild). Progress on stderr. */
int abxl_rootfs_build(const struct abxl_tmpl *t, bool force, char *err, size_t errlen);
int abxl_rootfs_remove(const struct abxl_tmpl *t);
int abxl_rootfs_import(const char *name, const char *archive, char *err, size_t errlen);
/* Building blocks shared by the builder and the importer. */
int abxl_rootfs_lock(const struct abxl_tmpl *t, char *err, size_t errlen);   /* fd */
int abxl_rootfs_tmpdir(const struct abxl_tmpl *t, char *out, size_t n, char *err, size_t errlen);
int abxl_rootfs_commit(const struct abxl_tmpl *t, const char *tmp_root, int64_t started_ms,
                      char *err, size_t errlen);
int abxl_rootfs_customize(const char *root, const char *home_src, char *err, size_t errlen);
/* Gives a built root to the sandbox uids (ABXL_UID_BASE + its ids). */
int abxl_rootfs_shift(const char *root, char *err, size_t errlen);
void abxl_rootfs_progress(const struct abxl_tmpl *t, const char *verb, int pct, const char *what);
int abxl_copy_tree(int sfd, int dfd, uid_t uid);
/* `abx-local template ...` (tmplcli.c) */
int abxl_template_main(int argc, char **argv);
/* Builds every template whose root is missing; 0, or -1 (reason printed). */
int abxl_templates_build_missing(void);
/* Creates the cache dir and makes abxl_cfg.cache_dir its real path. */
int abxl_cache_prepare(char *err, size_t errlen);
/* Copies in to out until EOF; 0, or -1 (errno set). */
int abxl_copy_fd(int in, int out);

#endif
