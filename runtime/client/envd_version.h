/* envd version gates (docs/lua-api.md "envd version
 * gates"): a sandbox's envdVersion parsed and compared as the E2B JS SDK
 * 2.31.0 does (compare-versions 6.1.1 on its semver pattern), and the
 * features each version unlocks, with the error the SDK raises when a
 * caller asks for one the sandbox's envd lacks.
 *
 * An empty version means "not reported": every gate passes (the SDK's
 * watch and metrics gates do the same; elsewhere it would throw). A
 * non-empty string that is not a version fails every gate with a
 * Protocol error naming it (the SDK's compareVersions throws there). */
#ifndef ABX_ENVD_VERSION_H
#define ABX_ENVD_VERSION_H

#include "errclass.h"

enum abx_envd_ver_state {
    ABX_ENVD_VER_UNKNOWN = 0,   /* "" */
    ABX_ENVD_VER_OK,
    ABX_ENVD_VER_BAD,           /* not a version */
};

#define ABX_ENVD_VER_ANY (-1L)  /* an x / X / * segment: equal to any */

struct abx_envd_version {
    char text[32];              /* as reported (cut to 31 bytes) */
    enum abx_envd_ver_state state;
    long seg[4];                /* major, minor, patch, a fourth; missing
                                   ones are 0 */
    char pre[32];               /* pre-release after '-', "" if none */
};

/* Parses s ("0.5.2", "v1.2", "1.2.3-rc.1+b7"; NULL or "" = unknown).
 * 0, or -1 when s is not a version (v->state BAD). v is always set. */
int abx_envd_version_parse(const char *s, struct abx_envd_version *v);
/* <0, 0, >0 as compare-versions: missing segments count as 0, a wildcard
 * equals anything, a pre-release sorts before its release. Both must be
 * ABX_ENVD_VER_OK (anything else compares equal). */
int abx_envd_version_cmp(const struct abx_envd_version *a,
                         const struct abx_envd_version *b);

enum abx_envd_feature {
    ABX_ENVD_ANY_USE,           /* 0.1.0: create refuses older (Template) */
    ABX_ENVD_RECURSIVE_WATCH,   /* 0.1.4 (Template) */
    ABX_ENVD_METRICS,           /* 0.1.5 (Template) */
    ABX_ENVD_DISK_METRICS,      /* 0.2.4: below, the SDK only warns */
    ABX_ENVD_STDIN_CHOICE,      /* 0.3.0: stdin=false (Sandbox) */
    ABX_ENVD_DEFAULT_USER,      /* 0.4.0: below, user "user" is forced */
    ABX_ENVD_CLOSE_STDIN,       /* 0.5.2 (Sandbox) */
    ABX_ENVD_OCTET_UPLOAD,      /* 0.5.7: below, uploads are multipart */
    ABX_ENVD_FILE_METADATA,     /* 0.6.2 (Template) */
    ABX_ENVD_WATCH_ENTRY,       /* 0.6.3: includeEntry (Template) */
    ABX_ENVD_WATCH_NET_MOUNTS,  /* 0.6.4: allowNetworkMounts (Template) */
    ABX_ENVD_FEATURE_COUNT
};

/* The first envd version with f ("0.5.2"); "" for an unknown f. */
const char *abx_envd_feature_min(enum abx_envd_feature f);
/* 1 v has f (also when v is unknown), 0 v is older, -1 v is not a
 * version (err: Protocol naming it and the feature). */
int abx_envd_has(const struct abx_envd_version *v, enum abx_envd_feature f,
                 struct abx_err *err);
/* 0 when v has f; else -1 with err set as the SDK raises it (Template or
 * Sandbox; Protocol for a bad version), naming the feature, the version
 * it needs and the sandbox's version. */
int abx_envd_require(const struct abx_envd_version *v,
                     enum abx_envd_feature f, struct abx_err *err);
/* *user unchanged, or "user" when it is NULL and v predates envd's own
 * default user (0.4.0), as the SDK does. 0, or -1 (bad version). */
int abx_envd_default_user(const struct abx_envd_version *v,
                          const char **user, struct abx_err *err);

#endif
