/* GET /v2/sandboxes (filters, order, pagination) and the v1 GET /sandboxes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "base.h"
#include "http.h"
#include "sandbox.h"
#include "vec.h"

#define MAX_FILTERS 64

struct filter {
    char key[512], val[1024];
};

/* The metadata triple encoding (docs/protocol.md "List and paging"): the
 * framework decoded the parameter once already; unescape the whole
 * string, split on & and =, unescape each key and value. */
static int parse_metadata(const char *raw, struct filter *f, int *nf, char *err, size_t errlen)
{
    size_t n = strlen(raw);
    char *whole = malloc(n + 1);
    int rc = -1;
    *nf = 0;
    if (whole == NULL || abxl_unescape(raw, n, whole, n + 1) != 0) {
        snprintf(err, errlen, "query parameter 'metadata' is badly encoded");
        goto out;
    }
    char *save = NULL;
    for (char *pair = strtok_r(whole, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(pair, '=');
        if (eq == NULL || strchr(eq + 1, '=') != NULL) {
            snprintf(err, errlen, "invalid metadata filter '%.64s': want key=value", pair);
            goto out;
        }
        if (*nf >= MAX_FILTERS) {
            snprintf(err, errlen, "too many metadata filters (max %d)", MAX_FILTERS);
            goto out;
        }
        if (abxl_unescape(pair, (size_t)(eq - pair), f[*nf].key, sizeof f[*nf].key) != 0 ||
            abxl_unescape(eq + 1, strlen(eq + 1), f[*nf].val, sizeof f[*nf].val) != 0) {
            snprintf(err, errlen, "metadata filter '%.64s' is badly encoded", pair);
            goto out;
        }
        (*nf)++;
    }
    rc = 0;
out:
    free(whole);
    return rc;
}

static bool meta_match(const struct abxl_sbx *s, const struct filter *f, int nf)
{
    for (int i = 0; i < nf; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(s->metadata, f[i].key);
        if (!cJSON_IsString(v) || strcmp(v->valuestring, f[i].val) != 0)
            return false;
    }
    return true;
}

/* Position of (started, id) in the list order; >0 means a comes later. */
static int cmp_key(int64_t sa, const char *ia, int64_t sb, const char *ib, bool desc)
{
    int c = sa < sb ? -1 : sa > sb ? 1 : strcmp(ia, ib);
    return desc ? -c : c;
}

/* What the list is ordered by: the start time, or (--vary list-order=
 * hashed) a hash of the id, an order no client can predict. */
static int64_t order_key(const struct abxl_sbx *s)
{
    uint64_t h = 1469598103934665603ULL;
    if (abxl_vary(ABXL_V_LIST_ORDER) != 2)
        return s->started_ms;
    for (const char *p = s->id; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return (int64_t)(h >> 1);
}

static int cmp_sbx(const void *a, const void *b, void *arg)
{
    const struct abxl_sbx *x = *(struct abxl_sbx *const *)a, *y = *(struct abxl_sbx *const *)b;
    return cmp_key(order_key(x), x->id, order_key(y), y->id, *(bool *)arg);
}

/* The kept records of killed sandboxes that pass the filters, after v's
 * n (v is reallocated); the rest are released. */
static struct abxl_sbx **add_graves(struct abxl_sbx **v, size_t *n, const struct filter *f,
                                    int nf, int64_t after_ms, const char *tmpl)
{
    size_t ng = 0, cap = 0;   /* 0: v's size is not known, it is made anew */
    struct abxl_sbx **g = abxl_grave_all(&ng), **w;
    w = g ? abx_vec_grow(v, &cap, *n + ng + 1, sizeof *v) : NULL;
    for (size_t i = 0; i < ng; i++) {
        struct abxl_sbx *s = g[i];
        if (w && meta_match(s, f, nf) && s->started_ms > after_ms &&
            (tmpl[0] == '\0' || strcmp(tmpl, s->template_id) == 0 ||
             strcmp(tmpl, s->alias) == 0))
            w[(*n)++] = s;
        else
            abxl_sbx_unref(s);
    }
    free(g);
    return w ? w : v;
}

static int parse_rfc3339(const char *s, int64_t *ms)
{
    struct tm tm = {0};
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (p == NULL)
        return -1;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++) {
        }
    int64_t off = 0;
    if ((*p == '+' || *p == '-') && p[1] >= '0' && p[1] <= '2' && p[2] >= '0' && p[2] <= '9' &&
        p[3] == ':' && p[4] >= '0' && p[4] <= '5' && p[5] >= '0' && p[5] <= '9' && !p[6])
        off = (*p == '+' ? 1 : -1) *
              (((p[1] - '0') * 10 + (p[2] - '0')) * 3600 + ((p[4] - '0') * 10 + (p[5] - '0')) * 60);
    else if (strcmp(p, "Z") != 0)
        return -1;
    *ms = ((int64_t)timegm(&tm) - off) * 1000;
    return 0;
}

enum MHD_Result abxl_ctl_list(struct MHD_Connection *c, const char *uri, bool v2)
{
    char val[8192], err[256];
    struct filter *flt = calloc(MAX_FILTERS, sizeof *flt);
    int nf = 0, q;
    bool want_run = true, want_pause = v2, state_given = false;
    bool desc = abxl_vary(ABXL_V_LIST_ORDER) != 1;   /* newest first, as E2B */
    long limit = abxl_sw(ABXL_SW_LIST_PAGE_50) ? 50 : 100;
    long page_cap = abxl_vary(ABXL_V_PAGE_SIZE) ? 20 : 100;   /* --vary page-size=20 */
    int64_t after_ms = -1, cur_started = 0;
    char cur_id[ABXL_ID_MAX + 1] = "", tmpl[128] = "";
    bool have_cursor = false;
    size_t n = 0;
    struct abxl_sbx **v = NULL;
    enum MHD_Result ret;
    if (flt == NULL)
        return abxl_http_error(c, 500, "out of memory");
#define BADQ(...)                                     \
    do {                                              \
        ret = abxl_http_error(c, 400, __VA_ARGS__);    \
        goto out;                                     \
    } while (0)
    if ((q = abxl_query_get(uri, "metadata", val, sizeof val)) < 0)
        BADQ("query parameter 'metadata' is badly encoded");
    if (q > 0 && parse_metadata(val, flt, &nf, err, sizeof err) != 0)
        BADQ("%s", err);
    if (v2) {
        if ((q = abxl_query_get(uri, "state", val, sizeof val)) < 0)
            BADQ("query parameter 'state' is badly encoded");
        if (q > 0) {
            want_run = want_pause = false;
            state_given = true;
            char *save = NULL;
            for (char *st = strtok_r(val, ",", &save); st; st = strtok_r(NULL, ",", &save)) {
                if (strcmp(st, "running") == 0)
                    want_run = true;
                else if (strcmp(st, "paused") == 0)
                    want_pause = true;
                else
                    BADQ("invalid state '%.32s' (want running or paused)", st);
            }
        }
        if ((q = abxl_query_get(uri, "limit", val, sizeof val)) < 0)
            BADQ("query parameter 'limit' is badly encoded");
        if (q > 0) {
            char *end;
            limit = strtol(val, &end, 10);
            if (val[0] == '\0' || *end != '\0' || limit < 1 || limit > 100)
                BADQ("query parameter 'limit' must be an integer from 1 to 100");
        }
        if (limit > page_cap)
            limit = page_cap;
        if ((q = abxl_query_get(uri, "order", val, sizeof val)) > 0) {
            if (strcmp(val, "asc") == 0)
                desc = false;
            else if (strcmp(val, "desc") != 0)
                BADQ("query parameter 'order' must be asc or desc");
        }
        if ((q = abxl_query_get(uri, "startedAfter", val, sizeof val)) > 0 &&
            parse_rfc3339(val, &after_ms) != 0)
            BADQ("query parameter 'startedAfter' must be an RFC3339 time");
        if (abxl_query_get(uri, "template", tmpl, sizeof tmpl) < 0)
            BADQ("query parameter 'template' is badly encoded");
        if ((q = abxl_query_get(uri, "nextToken", val, sizeof val)) > 0) {
            /* Opaque to clients: hex of "<started ms>_<id>". */
            char dec[128];
            size_t L = strlen(val), k = 0;
            bool okhex = L % 2 == 0 && L / 2 < sizeof dec;
            for (size_t i = 0; okhex && i < L; i += 2) {
                unsigned x;
                if (sscanf(val + i, "%2x", &x) != 1)
                    okhex = false;
                dec[k++] = (char)x;
            }
            dec[okhex ? k : 0] = '\0';
            char *us = strchr(dec, '_'), *end = NULL;
            if (okhex && us)
                cur_started = strtoll(dec, &end, 10);
            if (!okhex || us == NULL || end != us || strlen(us + 1) == 0 ||
                strlen(us + 1) > ABXL_ID_MAX)
                BADQ("query parameter 'nextToken' is not a token this server issued");
            memcpy(cur_id, us + 1, strlen(us + 1) + 1);
            have_cursor = true;
        }
    }
    struct abxl_faults f;
    abxl_faults_get(&f);
    v = abxl_reg_all(&n, false);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        struct abxl_sbx *s = v[i];
        pthread_mutex_lock(&abxl_reg_lock);
        enum abxl_sbx_state st = s->state;
        pthread_mutex_unlock(&abxl_reg_lock);
        bool keep = ((st == ABXL_SBX_RUNNING && want_run) ||
                     (st == ABXL_SBX_PAUSED && want_pause)) &&
                    !(nf > 0 && f.list_filter_empty) &&
                    meta_match(s, flt, nf) && s->started_ms > after_ms &&
                    (tmpl[0] == '\0' || strcmp(tmpl, s->template_id) == 0 ||
                     strcmp(tmpl, s->alias) == 0);
        if (keep)
            v[k++] = s;
        else
            abxl_sbx_unref(s);
    }
    n = k;
    if (!state_given && abxl_vary(ABXL_V_DEAD_LISTED) == 1)
        v = add_graves(v, &n, flt, nf, after_ms, tmpl);
    qsort_r(v, n, sizeof *v, cmp_sbx, &desc);
    cJSON *arr = cJSON_CreateArray();
    size_t emitted = 0;
    const struct abxl_sbx *last = NULL;
    bool more = false;
    for (size_t i = 0; i < n && arr; i++) {
        if (have_cursor && cmp_key(order_key(v[i]), v[i]->id, cur_started, cur_id, desc) <= 0)
            continue;
        if (v2 && emitted == (size_t)limit) {
            more = true;
            break;
        }
        cJSON_AddItemToArray(arr, abxl_json_detail(v[i], true));
        last = v[i];
        emitted++;
    }
    char tok[128] = "";
    if (more && last) {
        char raw[64];
        int len = snprintf(raw, sizeof raw, "%lld_%s", (long long)order_key(last), last->id);
        for (int i = 0; i < len && i < 60; i++)
            snprintf(tok + 2 * i, 3, "%02x", (unsigned char)raw[i]);
    }
    ret = abxl_http_json_hdr(c, 200, arr, tok[0] ? "X-Next-Token" : NULL, tok[0] ? tok : NULL);
out:
#undef BADQ
    abxl_reg_put_all(v, n);
    free(flt);
    return ret;
}
