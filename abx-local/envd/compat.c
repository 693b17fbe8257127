/* The `compat` object of config.json: which E2B envd abx-envd imitates
 * (abx-local's platform profiles, abx-local/DESIGN.md "envd compat").
 * Absent object or member = the e2b profile (envd 0.6.4, all on). */
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "jsonutil.h"
#include "version.h"

struct abxl_envd_compat abxl_envd_compat = {
    .version = ABXL_ENVD_VERSION,
    .octet_upload = 1,
    .gzip = 1,
    .file_metadata = 1,
    .watch_include_entry = 1,
    .watch_network_mounts = 1,
    .proto_codec = 1,
    .signed_urls = 1,
    .sudo = 1,
    .keepalive_default_s = 90,
    .keepalive_max_s = 0,
    .sandbox_id_env = 1,
    .go_exit_text = 1,
    .proc_list_full = 1,
    .denied_status = 401,
    .umask = 022,
};

/* The version goes into a response header: a short printable token. */
static int version_ok(const char *v)
{
    size_t n = strlen(v);

    if (n == 0 || n >= sizeof abxl_envd_compat.version)
        return 0;
    for (; *v; v++)
        if (*v <= ' ' || *v > '~')
            return 0;
    return 1;
}

int abxl_envd_compat_load(const cJSON *cfg, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        size_t off;
    } flags[] = {
        {"octetUpload", offsetof(struct abxl_envd_compat, octet_upload)},
        {"gzip", offsetof(struct abxl_envd_compat, gzip)},
        {"fileMetadata", offsetof(struct abxl_envd_compat, file_metadata)},
        {"watchIncludeEntry", offsetof(struct abxl_envd_compat, watch_include_entry)},
        {"watchNetworkMounts", offsetof(struct abxl_envd_compat, watch_network_mounts)},
        {"protoCodec", offsetof(struct abxl_envd_compat, proto_codec)},
        {"signedUrls", offsetof(struct abxl_envd_compat, signed_urls)},
        {"sudo", offsetof(struct abxl_envd_compat, sudo)},
        {"sandboxIdEnv", offsetof(struct abxl_envd_compat, sandbox_id_env)},
        {"goExitText", offsetof(struct abxl_envd_compat, go_exit_text)},
        {"procListFull", offsetof(struct abxl_envd_compat, proc_list_full)},
        {"watchTwice", offsetof(struct abxl_envd_compat, watch_twice)},
        {"watchRenameTo", offsetof(struct abxl_envd_compat, watch_rename_to)},
        {"watchSubdirsLate", offsetof(struct abxl_envd_compat, watch_subdirs_late)},
        {"stdinRefusedInvalid", offsetof(struct abxl_envd_compat, stdin_refused_invalid)},
    };
    struct abxl_envd_compat c = abxl_envd_compat;
    struct abx_json_err je = {{0}};
    const cJSON *o;
    const char *v;
    int rc = -1;

    if (abx_json_get_object(cfg, "compat", &o, &je) == ABX_JSON_EBADTYPE) {
        snprintf(je.msg, sizeof je.msg, "not an object");
        goto out;
    }
    if (!o) {
        rc = 0;
        goto out;
    }
    if (abx_json_get_string(o, "version", &v, NULL, &je) == ABX_JSON_EBADTYPE)
        goto out;
    if (v && !version_ok(v)) {
        snprintf(je.msg, sizeof je.msg, "field 'version': expected 1 to %zu "
                 "printable characters without spaces", sizeof c.version - 1);
        goto out;
    }
    if (v)
        snprintf(c.version, sizeof c.version, "%s", v);
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        int *p = (int *)(void *)((char *)&c + flags[i].off);

        if (abx_json_get_bool(o, flags[i].name, p, *p, &je) == ABX_JSON_EBADTYPE)
            goto out;
    }
    /* 86400 s: the longest interval parse_keepalive_ms (rpc.c) accepts. */
    if (abx_json_get_int(o, "keepaliveDefaultS", &c.keepalive_default_s,
                         c.keepalive_default_s, 1, 86400, &je) ==
            ABX_JSON_EBADTYPE ||
        abx_json_get_int(o, "keepaliveMaxS", &c.keepalive_max_s,
                         c.keepalive_max_s, 0, 86400, &je) == ABX_JSON_EBADTYPE ||
        abx_json_get_int(o, "uploadMaxBytes", &c.upload_max_bytes,
                         c.upload_max_bytes, 0, (int64_t)1 << 40, &je) == ABX_JSON_EBADTYPE ||
        abx_json_get_int(o, "deniedStatus", &c.denied_status, c.denied_status, 401, 403,
                         &je) == ABX_JSON_EBADTYPE ||
        abx_json_get_int(o, "umask", &c.umask, c.umask, 0, 0777, &je) == ABX_JSON_EBADTYPE)
        goto out;
    if (c.denied_status == 402) {
        snprintf(je.msg, sizeof je.msg, "field 'deniedStatus': expected 401 or 403");
        goto out;
    }
    abxl_envd_compat = c;
    rc = 0;
out:
    if (rc)
        snprintf(err, errlen, "config: compat: %s", je.msg);
    return rc;
}
