/* Platform profiles: which cloud abx-local imitates. Every difference
 * between upstream E2B and FC Agent Sandbox is one named switch in this
 * table and is decided nowhere else (docs/profiles.md lists
 * them with their sources). Switches are set once, before the listeners
 * start, so they are read without a lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../envd/version.h"   /* what abx-envd implements: the e2b answer */
#include "base.h"
#include "log.h"

struct sw {
    const char *name;
    bool e2b, fc;
    const char *what;
};

/* Indexed by enum abxl_switch (base.h). */
static const struct sw table[ABXL_SW_COUNT] = {
    [ABXL_SW_ENVD_052] = {"envd-0.5.2", false, true,
                         "envd reports 0.5.2: no octet-stream upload, gzip, file metadata, "
                         "includeEntry, allowNetworkMounts"},
    [ABXL_SW_PROTO_CODEC] = {"proto-codec", true, false,
                            "envd answers the Connect protobuf codec 415, as a JSON-only envd "
                            "(off: FC's 400)"},
    [ABXL_SW_KEEPALIVE_30] = {"keepalive-30s", false, true,
                             "stream keepalive every 30 s by default, requests above 60 s clamped"},
    [ABXL_SW_V2_LIFECYCLE] = {"v2-lifecycle", true, false,
                             "POST /v2/sandboxes and POST /v2/sandboxes/{id}/connect"},
    [ABXL_SW_PAUSE] = {"pause", true, false,
                      "pause and resume (off: refused unless the account is allow-listed)"},
    [ABXL_SW_FC_METADATA] = {"fc-metadata", false, true,
                            "metadata keys starting with fc. are reserved"},
    [ABXL_SW_TOKENS_IN_INFO] = {"tokens-in-info", true, false,
                               "GET /sandboxes/{id} carries envdAccessToken"},
    [ABXL_SW_TRAFFIC_GATE_ENVD] = {"traffic-gate-envd", false, true,
                                  "allowPublicTraffic=false gates envd too "
                                  "(X-Access-Token passes)"},
    [ABXL_SW_SIGNED_URLS] = {"signed-urls", true, false,
                            "envd honours signed file URLs on secure sandboxes"},
    [ABXL_SW_LOGS] = {"logs", true, false, "GET /sandboxes/{id}/logs has entries (off: empty)"},
    [ABXL_SW_METRICS_FULL] = {"metrics-full", true, false,
                             "metrics carry disk and page cache, sampled every second "
                             "(off: CPU and memory only, one sample a minute)"},
    [ABXL_SW_FC_IDS] = {"fc-ids", false, true, "sandbox ids sbx-<26 base32> (assumed)"},
    [ABXL_SW_GATEWAY_ERRORS] = {"gateway-errors", false, true,
                               "data-plane errors are a gateway's 502 page, not E2B's JSON "
                               "(assumed)"},
    [ABXL_SW_FC_MESSAGES] = {"fc-messages", false, true,
                            "control-plane error messages in other words (assumed)"},
    [ABXL_SW_LIST_PAGE_50] = {"list-page-50", false, true,
                             "list pages hold 50 sandboxes by default, not 100 (assumed)"},
    [ABXL_SW_SUDO] = {"sudo", true, false,
                     "sudo works for a template's default user, served by envd (off: no "
                     "sudo service; FC's documentation names none)"},
    [ABXL_SW_MASK_HOST] = {"mask-request-host", true, false,
                          "network.maskRequestHost is the Host of requests the data plane "
                          "forwards, ${PORT} their port (off: ignored, as FC does)"},
};

static bool on[ABXL_SW_COUNT];
static bool fc_profile;

bool abxl_sw(enum abxl_switch s)
{
    return (unsigned)s < ABXL_SW_COUNT && on[s];
}

const char *abxl_profile_name(void)
{
    return fc_profile ? "fc" : "e2b";
}

int abxl_profile_set(const char *name, char *err, size_t errlen)
{
    if (strcmp(name, "e2b") != 0 && strcmp(name, "fc") != 0) {
        snprintf(err, errlen, "unknown profile '%.64s' (e2b or fc)", name);
        return -1;
    }
    fc_profile = name[0] == 'f';
    for (int i = 0; i < ABXL_SW_COUNT; i++)
        on[i] = fc_profile ? table[i].fc : table[i].e2b;
    return 0;
}

int abxl_switch_set(const char *spec, char *err, size_t errlen)
{
    const char *eq = strchr(spec, '=');
    size_t n = eq ? (size_t)(eq - spec) : 0;
    bool v;
    if (eq && (strcmp(eq + 1, "on") == 0 || strcmp(eq + 1, "true") == 0))
        v = true;
    else if (eq && (strcmp(eq + 1, "off") == 0 || strcmp(eq + 1, "false") == 0))
        v = false;
    else {
        snprintf(err, errlen, "'%.64s' is not NAME=on|off", spec);
        return -1;
    }
    for (int i = 0; i < ABXL_SW_COUNT; i++)
        if (strlen(table[i].name) == n && strncmp(table[i].name, spec, n) == 0) {
            on[i] = v;
            return 0;
        }
    snprintf(err, errlen, "unknown switch '%.*s' (abx-local switches lists them)",
             (int)(n < 64 ? n : 64), spec);
    return -1;
}

const char *abxl_envd_version(void)
{
    return on[ABXL_SW_ENVD_052] ? "0.5.2" : ABXL_ENVD_VERSION;
}

cJSON *abxl_profile_envd_compat(void)
{
    cJSON *o = cJSON_CreateObject();
    bool modern = !on[ABXL_SW_ENVD_052];
    bool ka = on[ABXL_SW_KEEPALIVE_30];
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "version", abxl_envd_version());
    cJSON_AddBoolToObject(o, "octetUpload", modern);
    cJSON_AddBoolToObject(o, "gzip", modern);
    cJSON_AddBoolToObject(o, "fileMetadata", modern);
    cJSON_AddBoolToObject(o, "watchIncludeEntry", modern);
    cJSON_AddBoolToObject(o, "watchNetworkMounts", modern);
    cJSON_AddBoolToObject(o, "protoCodec", on[ABXL_SW_PROTO_CODEC]);
    cJSON_AddBoolToObject(o, "signedUrls", on[ABXL_SW_SIGNED_URLS]);
    cJSON_AddBoolToObject(o, "sudo", on[ABXL_SW_SUDO]);
    cJSON_AddNumberToObject(o, "keepaliveDefaultS", ka ? 30 : 90);
    cJSON_AddNumberToObject(o, "keepaliveMaxS", ka ? 60 : 0);
    return o;
}

/* GET /admin/profile and `abx-local switches`: what a run imitates. */
cJSON *abxl_profile_json(void)
{
    cJSON *o = cJSON_CreateObject(), *a;
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "profile", abxl_profile_name());
    cJSON_AddStringToObject(o, "envdVersion", abxl_envd_version());
    a = cJSON_AddObjectToObject(o, "switches");
    for (int i = 0; a && i < ABXL_SW_COUNT; i++)
        cJSON_AddBoolToObject(a, table[i].name, on[i]);
    return o;
}

void abxl_switches_print(void)
{
    abxl_out("%-18s %-4s %-4s %s\n", "switch", "e2b", "fc", "what it decides");
    for (int i = 0; i < ABXL_SW_COUNT; i++)
        abxl_out("%-18s %-4s %-4s %s\n", table[i].name, table[i].e2b ? "on" : "off",
                 table[i].fc ? "on" : "off", table[i].what);
}
