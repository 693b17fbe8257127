/* GET /templates: the templates the key's team can use (FC documents it
 * with X-API-KEY; abx-e2e doctor checks the suite's templates with it).
 * Sent through the one control-plane request path (api.c), so the key
 * header is built, and wiped, in one place. */
#include "api_int.h"

int abx_api_templates(const struct abx_platform *p, cJSON **out,
                      struct abx_err *err)
{
    const struct abx_apix_call c = {"GET", "/templates", NULL, 1,
                                    "list templates"};
    struct abx_http_resp r;
    int rc = -1;

    *out = NULL;
    abx_http_resp_init(&r);
    if (abx_apix_do(p, &c, &r, err) != 0)
        goto out;
    if (r.status < 200 || r.status > 299) {
        abx_err_from_api(err, "list templates", r.status, r.body.data,
                         r.body.len);
        goto out;
    }
    *out = abx_apix_json(&r, "list templates", err);
    if (*out && !cJSON_IsArray(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        abx_err_set(err, ABX_E_PROTOCOL, r.status, "",
                    "list templates: reply is not a JSON array");
        goto out;
    }
    rc = *out ? 0 : -1;
out:
    abx_http_resp_free(&r);
    return rc;
}
