/* The JSON shapes of the control plane (Sandbox, SandboxDetail,
 * ListedSandbox, SandboxMetric), as in shared/reference/e2b-protocol.md. */
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>

#include "server.h"

#if defined(__has_include)
#if __has_include("../envd/version.h")
#include "../envd/version.h"
#endif
#endif
#ifndef ABX_ENVD_VERSION
/* Fallback until abx-local/envd/version.h exists. */
#define ABX_ENVD_VERSION "0.5.7"
#endif

const char *abx_envd_version(void)
{
    return ABX_ENVD_VERSION;
}

/* A consistent copy of the mutable fields. */
struct snap {
    enum abx_sbx_state state;
    int64_t end_ms;
};

static struct snap take(const struct abx_sbx *s)
{
    pthread_mutex_lock(&abx_reg_lock);
    struct snap n = {s->state, s->end_ms};
    pthread_mutex_unlock(&abx_reg_lock);
    return n;
}

cJSON *abx_json_sandbox(const struct abx_sbx *s)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "templateID", s->template_id);
    cJSON_AddStringToObject(o, "sandboxID", s->id);
    cJSON_AddStringToObject(o, "clientID", ABX_CLIENT_ID);
    cJSON_AddStringToObject(o, "envdVersion", abx_envd_version());
    if (s->alias[0])
        cJSON_AddStringToObject(o, "alias", s->alias);
    if (s->access_token[0])
        cJSON_AddStringToObject(o, "envdAccessToken", s->access_token);
    cJSON_AddNullToObject(o, "trafficAccessToken");
    cJSON_AddNullToObject(o, "domain");
    return o;
}

cJSON *abx_json_detail(const struct abx_sbx *s, bool listed)
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
    cJSON_AddStringToObject(o, "clientID", ABX_CLIENT_ID);
    abx_rfc3339(s->started_ms, ts, sizeof ts);
    cJSON_AddStringToObject(o, "startedAt", ts);
    abx_rfc3339(n.end_ms, ts, sizeof ts);
    cJSON_AddStringToObject(o, "endAt", ts);
    cJSON_AddNumberToObject(o, "cpuCount", s->cpu_count);
    cJSON_AddNumberToObject(o, "memoryMB", s->memory_mb);
    cJSON_AddNumberToObject(o, "diskSizeMB", s->disk_mb);
    cJSON_AddStringToObject(o, "state", n.state == ABX_SBX_PAUSED ? "paused" : "running");
    cJSON_AddStringToObject(o, "envdVersion", abx_envd_version());
    cJSON_AddItemToObject(o, "metadata", cJSON_Duplicate(s->metadata, 1));
    if (!listed) {
        if (s->access_token[0])
            cJSON_AddStringToObject(o, "envdAccessToken", s->access_token);
        cJSON_AddNullToObject(o, "domain");
        cJSON_AddBoolToObject(o, "allowInternetAccess", s->allow_internet);
        cJSON *lc = cJSON_AddObjectToObject(o, "lifecycle");
        if (lc) {
            cJSON_AddBoolToObject(lc, "autoResume", 0);
            cJSON_AddStringToObject(lc, "onTimeout", s->auto_pause ? "pause" : "kill");
        }
    }
    return o;
}

/* The sandbox's disk: the tmpfs under its root's upper layer, which
 * the overlay's statfs reports (seen through its pid 1's root). */
static void disk_usage(const struct abx_sbx *s, long long *used, long long *total)
{
    char p[64];
    struct statfs sf;
    *used = 0;
    *total = (long long)s->disk_mb * 1024 * 1024;
    snprintf(p, sizeof p, "/proc/%d/root/", (int)s->init_pid);
    if (s->init_pid > 0 && statfs(p, &sf) == 0) {
        *used = (long long)(sf.f_blocks - sf.f_bfree) * (long long)sf.f_bsize;
        *total = (long long)sf.f_blocks * (long long)sf.f_bsize;
    }
}

cJSON *abx_json_metric(const struct abx_sbx *s)
{
    long long rss = -1, disk_used, disk_total;
    double cpu = -1;
    bool oom = false;
    if (s->cgroup)
        abx_cgroup_usage(s->id, &rss, &cpu, &oom);
    (void)oom;
    if (rss < 0 || cpu < 0)
        abx_procs_usage(s, &rss, &cpu);
    disk_usage(s, &disk_used, &disk_total);
    int64_t now = abx_now_ms();
    double secs = (double)(now - s->started_ms) / 1000.0;
    double pct = secs > 0 && s->cpu_count > 0 ? 100.0 * cpu / secs / s->cpu_count : 0;
    if (pct > 100)
        pct = 100;
    char ts[64];
    abx_rfc3339(now, ts, sizeof ts);
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "timestamp", ts);
    cJSON_AddNumberToObject(o, "timestampUnix", (double)(now / 1000));
    cJSON_AddNumberToObject(o, "cpuCount", s->cpu_count);
    cJSON_AddNumberToObject(o, "cpuUsedPct", (double)(long long)(pct * 100) / 100.0);
    cJSON_AddNumberToObject(o, "memUsed", (double)rss);
    cJSON_AddNumberToObject(o, "memTotal", (double)s->memory_mb * 1024 * 1024);
    cJSON_AddNumberToObject(o, "memCache", 0);
    cJSON_AddNumberToObject(o, "diskUsed", (double)disk_used);
    cJSON_AddNumberToObject(o, "diskTotal", (double)disk_total);
    return o;
}
