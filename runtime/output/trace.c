/* The per-test trace recorder (trace.h). */
#include "trace.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "mask.h"
#include "out.h"
#include "utf8.h"
#include "wallclock.h"

#define TEXT_KEEP ((size_t)1 << 20)         /* raw bytes kept per text */
#define TEST_KEEP ((size_t)32 << 20)        /* raw bytes kept per test */
#define TEXT_MAX_DEFAULT ((size_t)8 << 10)  /* per text, written */

static enum abx_trace_mode g_mode = ABX_TRACE_OFF;
static char g_dir[1024] = "test-results";
static size_t g_text_max = TEXT_MAX_DEFAULT;

static struct {
    int open;
    char *nodeid;
    double t0, mono0;
    cJSON *events;     /* array, in order */
    size_t kept;       /* raw text bytes held */
    long dropped;      /* events over TEST_KEEP */
} g;

int abx_trace_mode_parse(const char *s, enum abx_trace_mode *out)
{
    static const char *const names[] = {"off", "on", "retain-on-failure"};
    for (int i = 0; i < 3; i++)
        if (s && strcmp(s, names[i]) == 0) {
            *out = (enum abx_trace_mode)i;
            return 0;
        }
    return -1;
}

const char *abx_trace_mode_name(enum abx_trace_mode m)
{
    return m == ABX_TRACE_ON ? "on" : m == ABX_TRACE_OFF ? "off" : "retain-on-failure";
}

void abx_trace_configure(enum abx_trace_mode mode, const char *dir, size_t text_max)
{
    g_mode = mode;
    if (dir && dir[0])
        snprintf(g_dir, sizeof g_dir, "%s", dir);
    g_text_max = text_max ? text_max : TEXT_MAX_DEFAULT;
}

enum abx_trace_mode abx_trace_get_mode(void)
{
    return g_mode;
}

double abx_trace_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void discard(void)
{
    cJSON_Delete(g.events);
    free(g.nodeid);
    memset(&g, 0, sizeof g);
}

void abx_trace_begin(const char *nodeid)
{
    discard();
    if (g_mode == ABX_TRACE_OFF)
        return;
    g.events = cJSON_CreateArray();
    g.nodeid = strdup(nodeid ? nodeid : "");
    if (g.events == NULL || g.nodeid == NULL) {
        discard();
        return;
    }
    g.t0 = abx_wall_clock();
    g.mono0 = abx_trace_clock();
    g.open = 1;
}

int abx_trace_recording(void)
{
    return g.open;
}

/* Seconds to the microsecond: what a reader needs, not cJSON's 17 digits. */
static double to_us(double s)
{
    return (double)(long long)(s * 1e6) / 1e6;
}

cJSON *abx_trace_new(const char *ev)
{
    if (!g.open)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    /* "ev" and "t" first: a reader scanning a line sees them at once. */
    if (o && (cJSON_AddStringToObject(o, "ev", ev) == NULL ||
              cJSON_AddNumberToObject(o, "t", to_us(abx_trace_clock() - g.mono0)) == NULL)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void abx_trace_began(cJSON *event, double seconds)
{
    cJSON *t = cJSON_GetObjectItemCaseSensitive(event, "t");
    if (t)
        cJSON_SetNumberValue(t, to_us(t->valuedouble > seconds ? t->valuedouble - seconds : 0));
    abx_trace_put_ms(event, "ms", seconds);
}

void abx_trace_put_ms(cJSON *o, const char *key, double seconds)
{
    cJSON_AddNumberToObject(o, key, (double)(long long)(seconds * 1e4) / 10);
}

void abx_trace_add(cJSON *event)
{
    if (event == NULL)
        return;
    if (!g.open || g.kept > TEST_KEEP) {
        g.dropped += g.open;
        cJSON_Delete(event);
        return;
    }
    cJSON_AddItemToArray(g.events, event);
}

static int is_text(const unsigned char *p, size_t n, int cut)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = abx_utf8_decode(p + i, n - i, &cp);
        if (k == 0) {
            /* A sequence cut by the keep limit is still text. */
            return cut && n - i < 4;
        }
        if (cp == 0)
            return 0;
        i += k;
    }
    return 1;
}

void abx_trace_put_text(cJSON *o, const char *key, const void *p, size_t n)
{
    size_t keep = n < TEXT_KEEP ? n : TEXT_KEEP;
    char sizekey[64];
    if (o == NULL || key == NULL)
        return;
    if (p == NULL)
        keep = n = 0;
    if (!is_text(p, keep, keep < n)) {
        cJSON *b = cJSON_AddObjectToObject(o, key);
        if (b) {
            cJSON_AddBoolToObject(b, "binary", 1);
            cJSON_AddNumberToObject(b, "bytes", (double)n);
        }
        return;
    }
    char *s = malloc(keep + 1);
    if (s == NULL)
        return;
    if (keep)
        memcpy(s, p, keep);
    s[keep] = '\0';
    /* cJSON_CreateString copies: one short-lived copy per text. */
    cJSON_AddStringToObject(o, key, s);
    free(s);
    g.kept += keep;
    if (keep < n) {
        snprintf(sizekey, sizeof sizekey, "%s_bytes", key);
        cJSON_AddNumberToObject(o, sizekey, (double)n);
    }
}

/* Each string of v masked, then cut to the text cap; a text kept in part
 * (key_bytes beside it) is masked as a stream left unflushed, so the
 * prefix of a secret cut at the keep limit is held back, not written. */
static void mask_strings(cJSON *v, struct abx_mask *m)
{
    for (cJSON *c = v ? v->child : NULL; c; c = c->next) {
        if (!cJSON_IsString(c)) {
            mask_strings(c, m);
            continue;
        }
        char sizekey[64];
        snprintf(sizekey, sizeof sizekey, "%s_bytes", c->string ? c->string : "");
        int cut = c->string && cJSON_GetObjectItemCaseSensitive(v, sizekey) != NULL;
        struct abx_buf out;
        abx_buf_init(&out, ABX_BUF_DEFAULT_MAX);
        size_t n = strlen(c->valuestring);
        if (cut) {
            struct abx_mask_stream st;
            abx_mask_stream_init(&st, m);
            abx_mask_stream_write(&st, c->valuestring, n, &out);
            abx_mask_stream_free(&st);
        } else if (abx_mask_string(m, c->valuestring, n, &out) != 0) {
            abx_buf_reset(&out);
        }
        size_t len = out.len;
        int over = len > g_text_max;
        if (over) {
            len = g_text_max;
            while (len > 0 && ((unsigned char)out.data[len] & 0xC0) == 0x80)
                len--;   /* never half a UTF-8 sequence */
        }
        char *s = malloc(len + 4);
        if (s) {
            if (len)
                memcpy(s, out.data, len);
            memcpy(s + len, over ? "\xE2\x80\xA6" : "", over ? 4 : 1);
            cJSON_SetValuestring(c, s);
            free(s);
        }
        abx_buf_free(&out);
        if (over && c->string && !cut) {
            cJSON *b = cJSON_CreateNumber((double)n);
            if (b)
                cJSON_AddItemToObject(v, sizekey, b);
        }
    }
}

void abx_trace_file_name(const char *nodeid, char *out, size_t outlen)
{
    uint64_t h = 1469598103934665603ULL;   /* FNV-1a: short, stable names */
    size_t j = 0;
    for (const unsigned char *p = (const unsigned char *)nodeid; *p; p++) {
        h = (h ^ *p) * 1099511628211ULL;
        if (j + 1 < outlen && j < 120) {
            int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-';
            out[j++] = ok ? (char)*p : '-';
        }
    }
    if (j < outlen)
        snprintf(out + j, outlen - j, "-%08x%s", (unsigned)(h ^ (h >> 32)), ABX_TRACE_SUFFIX);
}

static cJSON *header(void)
{
    cJSON *h = cJSON_CreateObject();
    if (h == NULL)
        return NULL;
    cJSON_AddStringToObject(h, "ev", "trace");
    cJSON_AddNumberToObject(h, "version", ABX_TRACE_VERSION);
    cJSON_AddStringToObject(h, "nodeid", g.nodeid);
    cJSON_AddNumberToObject(h, "start", g.t0);
    return h;
}

static double t_of(const cJSON *ev)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev, "t");
    return cJSON_IsNumber(t) ? t->valuedouble : 0;
}

struct keyed {
    double t;
    size_t i;
    cJSON *ev;
};

static int by_time(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;   /* stable */
}

/* Events in the order they began (an exchange is recorded as it ends,
 * timed from its start). Out of memory, they stay as recorded. */
static void sort_by_time(void)
{
    size_t n = (size_t)cJSON_GetArraySize(g.events);
    struct keyed *k = n ? calloc(n, sizeof *k) : NULL;
    if (k == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        k[i].ev = cJSON_DetachItemFromArray(g.events, 0);
        k[i].t = t_of(k[i].ev);
        k[i].i = i;
    }
    qsort(k, n, sizeof *k, by_time);
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(g.events, k[i].ev);
    free(k);
}

static int append_line(struct abx_buf *b, cJSON *ev)
{
    char *s = cJSON_PrintUnformatted(ev);
    int rc = s && abx_buf_appends(b, s) == 0 && abx_buf_appendc(b, '\n') == 0 ? 0 : -1;
    free(s);
    return rc;
}

int abx_trace_end(int failed, char *path, size_t pathlen, char *err, size_t errlen)
{
    int rc = 0;
    struct abx_buf b;
    abx_buf_init(&b, ABX_BUF_DEFAULT_MAX);
    path[0] = '\0';
    if (!g.open || (g_mode == ABX_TRACE_RETAIN_ON_FAILURE && !failed))
        goto out;
    struct abx_mask *m = abx_out_masker();
    cJSON *h = header();
    rc = -1;
    if (m == NULL || h == NULL || append_line(&b, h) != 0) {
        cJSON_Delete(h);
        snprintf(err, errlen, "trace of %s: out of memory", g.nodeid);
        goto out;
    }
    cJSON_Delete(h);
    sort_by_time();
    cJSON *ev;
    cJSON_ArrayForEach(ev, g.events) {
        mask_strings(ev, m);
        if (append_line(&b, ev) != 0) {
            snprintf(err, errlen, "trace of %s: out of memory", g.nodeid);
            goto out;
        }
    }
    if (g.dropped > 0 &&
        abx_buf_appendf(&b, "{\"ev\":\"dropped\",\"events\":%ld}\n", g.dropped) != 0)
        goto out;
    char name[200];
    abx_trace_file_name(g.nodeid, name, sizeof name);
    snprintf(path, pathlen, "%s/%s", g_dir, name);
    /* Replaced atomically, not fsynced: a record, not a ledger (a run
     * of 10,000 tests spent 5 s in fsync). */
    rc = abx_out_write_cache(path, b.data, b.len, err, errlen);
    if (rc != 0)
        path[0] = '\0';
out:
    abx_buf_free(&b);
    discard();
    return rc;
}
