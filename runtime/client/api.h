/* Control-plane client (docs/protocol.md "Control plane", FC's
 * differences in "FC Agent Sandbox"): create (POST /sandboxes only), get,
 * list (GET /v2/sandboxes with metadata/state filters and X-Next-Token
 * pagination), kill, set timeout, connect, pause, resume, metrics.
 * Errors map to classes as the E2B SDKs do (errclass.h). */
#ifndef ABX_API_H
#define ABX_API_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "errclass.h"

#define ABX_DEFAULT_DOMAIN "cn-hangzhou.e2b.fc.aliyuncs.com"
#define ABX_ENVD_PORT 49983
#define ABX_CODE_PORT 49999

/* Where the platform is. Filled by the host from its configuration. */
struct abx_platform {
    char api_key[1024];      /* secret: never printed (the masker knows it) */
    char api_url[512];       /* control plane base, no trailing '/' */
    char domain[256];        /* data-plane domain */
    char sandbox_url[512];   /* "" or the one data-plane URL (E2B_SANDBOX_URL):
                                requests are routed by E2b-Sandbox-* headers */
    double request_timeout;  /* per unary call, s (60) */
};

/* Fills p from the configured values (NULL/"" = unset): domain defaults
 * to ABX_DEFAULT_DOMAIN, api_url to https://api.<domain>; trailing '/'
 * removed. 0, or -1 with err when a value is too long or a URL is not
 * http(s)://. */
int abx_platform_init(struct abx_platform *p, const char *api_key,
                      const char *api_url, const char *domain,
                      const char *sandbox_url, char *err, size_t errlen);

/* What create/connect/get return (Sandbox / SandboxDetail). Strings are
 * "" when absent. */
struct abx_sandbox_info {
    char sandbox_id[128];
    char template_id[128];
    char alias[128];
    char client_id[64];
    char envd_version[32];
    char domain[256];          /* from the reply, else "" */
    char state[16];            /* "running" | "paused" ("" from create) */
    char started_at[48], end_at[48];
    long cpu_count, memory_mb, disk_size_mb;
    char *envd_access_token;   /* malloc'd secret or NULL; already added
                                  to the masker when parsed */
    char *traffic_access_token;/* same */
    cJSON *metadata;           /* object of strings, or NULL */
    cJSON *raw;                /* the whole reply object (owned) */
};
void abx_sandbox_info_free(struct abx_sandbox_info *i);  /* idempotent */

/* network.allowPublicTraffic; 0 (a zeroed struct) sends nothing. DENY
 * gets a traffic access token back, which the proxy then wants on the
 * sandbox's user ports. */
enum abx_public_traffic {
    ABX_PUBLIC_TRAFFIC_UNSET = 0,
    ABX_PUBLIC_TRAFFIC_ALLOW,
    ABX_PUBLIC_TRAFFIC_DENY,
};

struct abx_create_opts {
    const char *template_id;     /* required */
    long timeout;                /* s; > 0 */
    int secure;                  /* 1/0 */
    int allow_internet;          /* -1 = not sent */
    const cJSON *metadata;       /* object string->string, may be NULL */
    const cJSON *envs;           /* object string->string, may be NULL */
    /* "network": sent only when one of these is set. */
    enum abx_public_traffic public_traffic;  /* allowPublicTraffic */
    const cJSON *allow_out;      /* allowOut: array of strings, or NULL */
    const cJSON *deny_out;       /* denyOut: same */
    /* Key of a metadata entry unique to this create (a nonce): when a
     * reply is lost (timeout, reset, 502/503), the client lists by it
     * before retrying, and adopts the sandbox if it exists, so a retried
     * create never makes a second sandbox. NULL: no retry of lost
     * replies. */
    const char *nonce_key;
};

/* 0 with *out filled (caller frees), -1 with err. A sandbox whose envd
 * predates 0.1.0 (or reports no version at all) is killed before this
 * returns Template (Protocol for a version that is none), as the SDK
 * refuses it, so nothing is left behind. */
int abx_api_create(const struct abx_platform *p,
                   const struct abx_create_opts *o,
                   struct abx_sandbox_info *out, struct abx_err *err);
int abx_api_get(const struct abx_platform *p, const char *id,
                struct abx_sandbox_info *out, struct abx_err *err);
/* Connect: 0 (was running) / 0 (resumed); err NotFound on 404. */
int abx_api_connect(const struct abx_platform *p, const char *id,
                    long timeout, struct abx_sandbox_info *out,
                    struct abx_err *err);
/* 1 killed, 0 not found, -1 error. */
int abx_api_kill(const struct abx_platform *p, const char *id,
                 struct abx_err *err);
/* Kills ids[0..n) concurrently (one transfer each, retried as
 * idempotent). results[i]: 1 killed, 0 not found, -1 error (errs[i]).
 * Returns the number of errors. */
int abx_api_kill_many(const struct abx_platform *p, const char *const *ids,
                      size_t n, int *results, struct abx_err *errs,
                      double timeout);
int abx_api_set_timeout(const struct abx_platform *p, const char *id,
                        long seconds, struct abx_err *err);
/* Body {"memory": keep_memory} as the SDK 2.31.0 (keepMemory, default
 * true). 1 paused, 0 already paused (409), -1 error. */
int abx_api_pause(const struct abx_platform *p, const char *id,
                  int keep_memory, struct abx_err *err);
int abx_api_resume(const struct abx_platform *p, const char *id,
                   long timeout, struct abx_sandbox_info *out,
                   struct abx_err *err);
/* GET /sandboxes/{id}/metrics: *out = the JSON array (caller frees). */
int abx_api_metrics(const struct abx_platform *p, const char *id,
                    long start, long end, cJSON **out, struct abx_err *err);

struct abx_list_query {
    const cJSON *metadata;     /* object of exact matches, may be NULL */
    const char *state;         /* "running", "paused", "running,paused" */
    long limit;                /* 1..100, 0 = server default */
    const char *next_token;    /* NULL = first page */
};
struct abx_list_page {
    struct abx_sandbox_info *items;
    size_t n;
    char next_token[1024];     /* "" = last page */
};
void abx_list_page_free(struct abx_list_page *pg);
int abx_api_list(const struct abx_platform *p, const struct abx_list_query *q,
                 struct abx_list_page *out, struct abx_err *err);
/* Follows next tokens up to max_items (0 = 10000); out->next_token is ""
 * unless the cap stopped it. */
int abx_api_list_all(const struct abx_platform *p,
                     const struct abx_list_query *q, size_t max_items,
                     struct abx_list_page *out, struct abx_err *err);

/* The metadata query value (docs/protocol.md "List and paging":
 * percent-encoded k=v joined by '&', before the HTTP layer's own
 * escaping). 0 or -1. */
struct abx_buf;
/* GET /templates -> *out a JSON array of Template objects (caller frees).
 * 0, or -1 with err (err->status the HTTP status of a non-2xx reply). */
int abx_api_templates(const struct abx_platform *p, cJSON **out,
                      struct abx_err *err);
int abx_api_metadata_query(const cJSON *metadata, struct abx_buf *out);

/* Parses a Sandbox/SandboxDetail/ListedSandbox object; tokens go into
 * the masker. 0, or -1 with err (Protocol) naming a missing required
 * field or a wrong type. Takes ownership of nothing: copies. */
int abx_sandbox_info_parse(const cJSON *obj, struct abx_sandbox_info *out,
                           struct abx_err *err);

#endif
