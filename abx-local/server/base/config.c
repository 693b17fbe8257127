/* The server's configuration (abxl_cfg: defaults here, `serve` flags in
 * main.c) and the shutdown flag every long wait checks. Defined apart
 * from main.c so that the files reading them do not depend on the
 * program's entry point. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"

#ifndef ABXL_TEMPLATES_DIR
#define ABXL_TEMPLATES_DIR ""
#endif

struct abxl_srv_config abxl_cfg;
volatile int abxl_shutting_down;

/* This binary's path (sandbox-enter is run from it) and its folder. */
static void exe_dir(char *out, size_t n)
{
    char p[4096];
    ssize_t len = readlink("/proc/self/exe", p, sizeof p - 1);
    p[len > 0 ? len : 0] = '\0';
    abxl_fmt(abxl_cfg.self_exe, sizeof abxl_cfg.self_exe, "%s", p);
    snprintf(out, n, "%s", len > 0 ? dirname(p) : ".");
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* name's first executable in $PATH, else /usr/bin/name. */
static void in_path(const char *name, char *out, size_t n)
{
    char p[4200];
    abxl_fmt(out, n, "/usr/bin/%s", name);
    const char *path = getenv("PATH");
    char *copy = path ? strdup(path) : NULL, *save = NULL;
    for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
        abxl_fmt(p, sizeof p, "%s/%s", d, name);
        if (access(p, X_OK) == 0) {
            abxl_fmt(out, n, "%s", p);
            break;
        }
    }
    free(copy);
}

void abxl_config_defaults(void)
{
    char ed[4096], p[4200];
    exe_dir(ed, sizeof ed);
    snprintf(abxl_cfg.listen, sizeof abxl_cfg.listen, "127.0.0.1:3000");
    abxl_cfg.max_sandboxes = 100;
    snprintf(abxl_cfg.state_dir, sizeof abxl_cfg.state_dir, "/var/tmp/abx-local");
    snprintf(p, sizeof p, "%s/../share/abx-local/templates", ed);
    abxl_fmt(abxl_cfg.templates_dir, sizeof abxl_cfg.templates_dir, "%s",
            is_dir(p) || ABXL_TEMPLATES_DIR[0] == '\0' ? p : ABXL_TEMPLATES_DIR);
    snprintf(p, sizeof p, "%s/../envd/abx-envd", ed);
    if (access(p, X_OK) != 0)
        snprintf(p, sizeof p, "%s/abx-envd", ed);
    abxl_fmt(abxl_cfg.envd_path, sizeof abxl_cfg.envd_path, "%s", access(p, X_OK) == 0 ? p : "");
    const char *cache = getenv("ABX_LOCAL_CACHE");
    abxl_fmt(abxl_cfg.cache_dir, sizeof abxl_cfg.cache_dir, "%s",
            cache && cache[0] ? cache : "/var/cache/abx-local");
    in_path("bwrap", abxl_cfg.bwrap, sizeof abxl_cfg.bwrap);
    in_path("runsc", abxl_cfg.runsc, sizeof abxl_cfg.runsc);
    const char *rt = getenv("ABX_LOCAL_RUNTIME");
    abxl_fmt(abxl_cfg.runtime, sizeof abxl_cfg.runtime, "%s", rt && rt[0] ? rt : "bwrap");
}
