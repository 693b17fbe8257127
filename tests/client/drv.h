/* Shared bits of the client test drivers: the platform from the
 * environment the wrapper sets, and a raw admin call to abx-local. Their
 * checks are tests/lib/check.h's CHECK_LOG: ok/FAIL lines the python
 * wrapper shows. */
#ifndef ABX_TEST_DRV_H
#define ABX_TEST_DRV_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "check.h"
#include "http.h"

static inline const char *drv_env(const char *name)
{
    const char *v = getenv(name);
    return v ? v : "";
}

/* The platform the wrapper points us at (abx-local, or a fake). */
static inline int drv_platform(struct abx_platform *p, const char *api_url)
{
    char err[256];
    if (abx_platform_init(p, drv_env("E2B_API_KEY"),
                          api_url ? api_url : drv_env("E2B_API_URL"),
                          drv_env("E2B_DOMAIN"), drv_env("E2B_SANDBOX_URL"),
                          err, sizeof err) != 0) {
        CHECK_LOG(0, "platform: %s", err);
        return -1;
    }
    return 0;
}

/* POST /admin/faults with a JSON body; 0 on 200. */
static inline int drv_faults(const struct abx_platform *p, const char *json)
{
    char url[600], key[1100];
    const char *hdrs[] = {key, "Content-Type: application/json", NULL};
    struct abx_http_req req = {0};
    struct abx_http_resp resp;
    struct abx_err err;
    int rc;

    snprintf(url, sizeof url, "%s/admin/faults", p->api_url);
    snprintf(key, sizeof key, "X-API-KEY: %s", p->api_key);
    req.method = "POST";
    req.url = url;
    req.headers = hdrs;
    req.body = json;
    req.body_len = strlen(json);
    req.what = "set faults";
    req.timeout = 10;
    abx_http_resp_init(&resp);
    rc = abx_http_do(&req, &resp, &err);
    if (rc == 0 && resp.status != 200)
        rc = -1;
    if (rc != 0)
        printf("note: set faults %s failed: %s\n", json,
               resp.status ? abx_buf_cstr(&resp.body) : err.message);
    abx_http_resp_free(&resp);
    return rc;
}

#endif
