/* Sandbox metrics and logs. Metrics are samples kept per sandbox, taken
 * by the reaper every second and by each query (e2b), or a minute apart
 * (fc), so a range query (start/end) answers what
 * was sampled then and an old range answers []. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>

#include "base.h"
#include "sandbox.h"

#define RING 1440   /* a day of FC's minutes; 24 min of e2b's seconds */

struct sample {
    int64_t ms;
    double cpu_pct;
    long long mem, disk_used, disk_total;
};

struct abxl_metrics {
    struct sample v[RING];
    size_t next, n;
    double cpu_s;   /* CPU seconds at the last sample */
};

/* One lock for every ring: samples are rare and small. */
static pthread_mutex_t mx = PTHREAD_MUTEX_INITIALIZER;

void abxl_metrics_free(struct abxl_metrics *m)
{
    free(m);
}

/* E2B's metrics are fresh when asked for (a query samples); FC's come a
 * minute apart whoever asks. */
static int64_t interval_ms(bool asked)
{
    return abxl_sw(ABXL_SW_METRICS_FULL) ? (asked ? 1 : 1000) : 60000;
}

/* The sandbox's disk: the file system under its root's upper layer, which
 * the overlay's statfs reports (seen through its pid 1's root). */
static void disk_usage(const struct abxl_sbx *s, long long *used, long long *total)
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

static const struct sample *newest(const struct abxl_metrics *m)
{
    return m && m->n ? &m->v[(m->next + RING - 1) % RING] : NULL;
}

void abxl_metrics_sample(struct abxl_sbx *s, bool asked)
{
    int64_t now = abxl_now_ms();
    pthread_mutex_lock(&mx);
    const struct sample *last = newest(s->metrics);
    bool due = last == NULL || now - last->ms >= interval_ms(asked);
    if (due && s->metrics == NULL)
        s->metrics = calloc(1, sizeof *s->metrics);
    pthread_mutex_unlock(&mx);
    if (!due || s->metrics == NULL)
        return;
    long long rss = -1;
    double cpu = -1;
    bool oom = false;
    struct sample x = {.ms = now};
    if (s->cgroup)
        abxl_cgroup_usage(s->id, &rss, &cpu, &oom);
    if (rss < 0 || cpu < 0)
        abxl_procs_usage(s, &rss, &cpu);
    disk_usage(s, &x.disk_used, &x.disk_total);
    x.mem = rss;
    pthread_mutex_lock(&mx);
    struct abxl_metrics *m = s->metrics;
    last = newest(m);
    /* Between two samples, or since the start for the first one. */
    int64_t from = last ? last->ms : s->started_ms;
    double base = last ? m->cpu_s : 0, secs = (double)(now - from) / 1000.0;
    if (last == NULL || now > last->ms) {
        x.cpu_pct = secs > 0 && s->cpu_count > 0 ? 100.0 * (cpu - base) / secs / s->cpu_count : 0;
        x.cpu_pct = x.cpu_pct < 0 ? 0 : x.cpu_pct > 100 ? 100 : x.cpu_pct;
        m->cpu_s = cpu;
        m->v[m->next] = x;
        m->next = (m->next + 1) % RING;
        if (m->n < RING)
            m->n++;
    }
    pthread_mutex_unlock(&mx);
}

static cJSON *sample_json(const struct abxl_sbx *s, const struct sample *x)
{
    bool full = abxl_sw(ABXL_SW_METRICS_FULL);
    char ts[64];
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    abxl_rfc3339(x->ms, ts, sizeof ts);
    cJSON_AddStringToObject(o, "timestamp", ts);
    cJSON_AddNumberToObject(o, "timestampUnix", (double)(x->ms / 1000));
    cJSON_AddNumberToObject(o, "cpuCount", s->cpu_count);
    cJSON_AddNumberToObject(o, "cpuUsedPct", (double)(long long)(x->cpu_pct * 100) / 100.0);
    cJSON_AddNumberToObject(o, "memUsed", (double)x->mem);
    cJSON_AddNumberToObject(o, "memTotal", (double)s->memory_mb * 1024 * 1024);
    cJSON_AddNumberToObject(o, "memCache", 0);
    /* FC reports CPU and memory only: its disk fields are placeholders. */
    cJSON_AddNumberToObject(o, "diskUsed", full ? (double)x->disk_used : 0);
    cJSON_AddNumberToObject(o, "diskTotal", full ? (double)x->disk_total : 0);
    return o;
}

cJSON *abxl_metrics_range(struct abxl_sbx *s, int64_t start_s, int64_t end_s)
{
    abxl_metrics_sample(s, true);
    cJSON *a = cJSON_CreateArray();
    pthread_mutex_lock(&mx);
    const struct abxl_metrics *m = s->metrics;
    for (size_t i = 0; a && m && i < m->n; i++) {
        const struct sample *x = &m->v[(m->next + RING - m->n + i) % RING];
        int64_t t = x->ms / 1000;
        if (t >= start_s && t <= end_s)
            cJSON_AddItemToArray(a, sample_json(s, x));
    }
    pthread_mutex_unlock(&mx);
    return a;
}

cJSON *abxl_metrics_latest(struct abxl_sbx *s)
{
    abxl_metrics_sample(s, true);
    pthread_mutex_lock(&mx);
    const struct sample *x = newest(s->metrics);
    cJSON *o = x ? sample_json(s, x) : cJSON_CreateNull();
    pthread_mutex_unlock(&mx);
    return o;
}

/* GET /sandboxes/{id}/logs: envd's own log lines (E2B shows the
 * sandbox's logs there; FC answers empty lists). Lines carry no time of
 * their own: each gets the sandbox's start. */
cJSON *abxl_logs_json(const struct abxl_sbx *s, long limit)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *logs = cJSON_AddArrayToObject(o, "logs");
    cJSON *entries = cJSON_AddArrayToObject(o, "logEntries");
    char p[4300], ts[64], *text = NULL;
    if (logs == NULL || entries == NULL || !abxl_sw(ABXL_SW_LOGS))
        return o;
    abxl_rfc3339(s->started_ms, ts, sizeof ts);
    snprintf(p, sizeof p, "%s/envd.log", s->dir);
    text = abxl_read_text(p, 1024 * 1024);
    char *save = NULL;
    for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l && limit > 0;
         l = strtok_r(NULL, "\n", &save), limit--) {
        cJSON *a = cJSON_CreateObject(), *b = cJSON_CreateObject();
        cJSON_AddStringToObject(a, "timestamp", ts);
        cJSON_AddStringToObject(a, "line", l);
        cJSON_AddItemToArray(logs, a);
        cJSON_AddStringToObject(b, "timestamp", ts);
        cJSON_AddStringToObject(b, "level", "info");
        cJSON_AddStringToObject(b, "message", l);
        cJSON_AddObjectToObject(b, "fields");
        cJSON_AddItemToArray(entries, b);
    }
    free(text);
    return o;
}
