/* The JSON shapes of the control plane (Sandbox, SandboxDetail,
 * ListedSandbox, SandboxMetric), as in docs/protocol.md "Sandbox
 * object". */
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>

#include "api.h"
#include "base.h"
#include "sandbox.h"

/* A consistent copy of the mutable fields. */
struct snap {
    enum abxl_sbx_state state;
    int64_t end_ms;
};

static struct snap take(const struct abxl_sbx *s)
{
    pthread_mutex_lock(&abxl_reg_lock);
    struct snap n = {s->state, s->end_ms};
    pthread_mutex_unlock(&abxl_reg_lock);
    return n;
}

cJSON *abxl_json_sandbox(const struct abxl_sbx *s)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "templateID", s->template_id);
    cJSON_AddStringToObject(o, "sandboxID", s->id);
    cJSON_AddStringToObject(o, "clientID", ABXL_CLIENT_ID);
    cJSON_AddStringToObject(o, "envdVersion", abxl_envd_version());
    if (s->alias[0])
        cJSON_AddStringToObject(o, "alias", s->alias);
    if (s->access_token[0])
        cJSON_AddStringToObject(o, "envdAccessToken", s->access_token);
    /* Create and connect replies only: FC never shows it again (getInfo,
     * list), and neither does E2B's SandboxDetail. */
    if (s->traffic_token[0])
        cJSON_AddStringToObject(o, "trafficAccessToken", s->traffic_token);
    else
        cJSON_AddNullToObject(o, "trafficAccessToken");
    cJSON_AddNullToObject(o, "domain");
    return o;
}

cJSON *abxl_json_detail(const struct abxl_sbx *s, bool listed)
{
    struct snap n = take(s);
    char ts[64];
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "templateID", s->template_id);
    if (s->alias[0])
        cJSON_AddStringToObject(o, "alias", s->alias);
    cJSON_AddStringToObject(o, "sandboxID", s->id);
    cJSON_AddStringToObject(o, "clientID", ABXL_CLIENT_ID);
    abxl_rfc3339(s->started_ms, ts, sizeof ts);
    cJSON_AddStringToObject(o, "startedAt", ts);
    abxl_rfc3339(n.end_ms, ts, sizeof ts);
    cJSON_AddStringToObject(o, "endAt", ts);
    cJSON_AddNumberToObject(o, "cpuCount", s->cpu_count);
    cJSON_AddNumberToObject(o, "memoryMB", s->memory_mb);
    cJSON_AddNumberToObject(o, "diskSizeMB", s->disk_mb);
    cJSON_AddStringToObject(o, "state", n.state == ABXL_SBX_PAUSED ? "paused"
                                        : n.state == ABXL_SBX_DEAD ? "terminated"
                                                                   : "running");
    cJSON_AddStringToObject(o, "envdVersion", abxl_envd_version());
    cJSON_AddItemToObject(o, "metadata", cJSON_Duplicate(s->metadata, 1));
    if (!listed) {
        if (s->access_token[0] && abxl_sw(ABXL_SW_TOKENS_IN_INFO))
            cJSON_AddStringToObject(o, "envdAccessToken", s->access_token);
        cJSON_AddNullToObject(o, "domain");
        cJSON_AddBoolToObject(o, "allowInternetAccess", s->allow_internet);
        if (s->network)
            cJSON_AddItemToObject(o, "network", cJSON_Duplicate(s->network, 1));
        cJSON *lc = cJSON_AddObjectToObject(o, "lifecycle");
        if (lc) {
            cJSON_AddBoolToObject(lc, "autoResume", s->auto_resume);
            cJSON_AddStringToObject(lc, "onTimeout", s->auto_pause ? "pause" : "kill");
        }
    }
    return o;
}

