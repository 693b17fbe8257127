/* Sandbox tracking inside a worker (track.h): tag merging, the ledger
 * line before the handle is returned, the registry, groups (scopes) and
 * their concurrent kill, and --keep-failed. One thread per process, like
 * the HTTP engine, so no locking. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ledger.h"
#include "random.h"
#include "trace.h"
#include "track.h"
#include "vec.h"
#include "wallclock.h"

#define TEST_ID_MAX 128
#define KILL_TIMEOUT 30.0   /* s for a whole group: kills run concurrently */

static struct {
    int ready;
    const struct abx_platform *platform;
    char run_id[128];
    char session[64];       /* e2e_session tag ("" none) */
    int ledger;             /* append ledger lines */
    int keep_failed;
    char test_id[1024];     /* current test (node id) */
    unsigned serial;        /* current test's serial (0 = none yet) */
    uint64_t next_group;
    /* Registry: every sandbox this process created, for its lifetime.
     * Records are never freed, so Lua userdata may point at them. */
    struct abx_tracked **all;
    size_t n, cap;
} g;

int abx_track_init(const struct abx_track_cfg *cfg, char *err, size_t errlen)
{
    if (!cfg || !cfg->platform || !cfg->run_id || !cfg->run_id[0]) {
        snprintf(err, errlen, "sandbox tracking needs a platform and a run id");
        return -1;
    }
    if (strlen(cfg->run_id) >= sizeof g.run_id) {
        snprintf(err, errlen, "run id too long (max %zu bytes)",
                 sizeof g.run_id - 1);
        return -1;
    }
    if (cfg->session && strlen(cfg->session) >= sizeof g.session) {
        snprintf(err, errlen, "session id too long");
        return -1;
    }
    g.platform = cfg->platform;
    memcpy(g.run_id, cfg->run_id, strlen(cfg->run_id) + 1);
    snprintf(g.session, sizeof g.session, "%s",
             cfg->session ? cfg->session : "");
    /* The ledger itself is opened by the host (before workers fork, so
     * they share one file); here we only know whether to write to it. */
    g.ledger = cfg->ledger_path != NULL;
    g.keep_failed = cfg->keep_failed;
    g.ready = 1;
    return 0;
}

int abx_track_ready(void) { return g.ready; }

uint64_t abx_track_group_new(void) { return ++g.next_group; }

void abx_track_begin_test(unsigned serial, const char *test_id)
{
    g.serial = serial;
    snprintf(g.test_id, sizeof g.test_id, "%s", test_id ? test_id : "");
}

void abx_track_touch(struct abx_tracked *t)
{
    if (t && g.serial)
        t->touched = g.serial;
}

size_t abx_track_test_failed(struct abx_buf *ids)
{
    size_t i, count = 0;

    if (!g.serial)
        return 0;
    for (i = 0; i < g.n; i++) {
        struct abx_tracked *t = g.all[i];
        if (t->touched != g.serial || !t->alive)
            continue;
        t->failed = 1;
        count++;
        if (ids && abx_buf_appendf(ids, "%s\n", t->info.sandbox_id) != 0) {
            /* Out of memory: the id is missing from the report only; the
             * sandbox is marked (kept) and in the ledger all the same. */
        }
    }
    return count;
}

/* Printable ASCII only, capped: the tag must be a valid metadata value
 * whatever bytes a test name carries. */
static void sanitize(const char *in, char *out, size_t outlen)
{
    size_t i = 0;

    for (; in && *in && i + 1 < outlen && i < TEST_ID_MAX; in++) {
        unsigned char c = (unsigned char)*in;
        out[i++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    out[i] = '\0';
}

/* Replaces (or adds) key in obj with a string value. 0 or -1. */
static int set_string(cJSON *obj, const char *key, const char *val)
{
    cJSON *v = cJSON_CreateString(val);

    if (!v)
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v) ? 0 : -1;
    if (!cJSON_AddItemToObject(obj, key, v)) {
        cJSON_Delete(v);
        return -1;
    }
    return 0;
}

cJSON *abx_track_tags(const cJSON *user, const char *run_id,
                      const char *session, const char *test_id,
                      const char *nonce)
{
    char tid[TEST_ID_MAX + 1];
    cJSON *md = user ? cJSON_Duplicate(user, 1) : cJSON_CreateObject();

    if (!md)
        return NULL;
    if (!cJSON_IsObject(md)) {
        cJSON_Delete(md);
        return NULL;
    }
    sanitize(test_id, tid, sizeof tid);
    if (set_string(md, ABX_TAG_KEY, run_id ? run_id : "") != 0 ||
        set_string(md, ABX_TAG_TEST_KEY, tid) != 0 ||
        set_string(md, ABX_TAG_NONCE_KEY, nonce ? nonce : "") != 0 ||
        (session && set_string(md, ABX_TAG_SESSION_KEY, session) != 0)) {
        cJSON_Delete(md);
        return NULL;
    }
    return md;
}

int abx_track_random_id(char out[17])
{
    return abx_random_hex(out, 8);
}

static int registry_add(struct abx_tracked *t)
{
    if (ABX_VEC_RESERVE(g.all, g.cap, g.n + 1) != 0)
        return -1;
    g.all[g.n++] = t;
    return 0;
}

static void ledger_line(const char *event, const char *id)
{
    char lerr[256];

    /* kill/keep lines only shorten what the sweeper retries; a failure
     * here leaves a harmless extra delete, so it is not an error. */
    if (g.ledger)
        (void)abx_ledger_append(event, id, NULL, lerr, sizeof lerr);
}

/* A sandbox's life into the running test's trace (trace.h). */
static void trace_life(const char *what, const struct abx_tracked *t)
{
    cJSON *e = abx_trace_new("sandbox");
    if (e == NULL)
        return;
    cJSON_AddStringToObject(e, "what", what);
    cJSON_AddStringToObject(e, "id", t->info.sandbox_id);
    if (t->info.template_id[0])
        cJSON_AddStringToObject(e, "template", t->info.template_id);
    if (t->info.envd_version[0])
        cJSON_AddStringToObject(e, "envd_version", t->info.envd_version);
    abx_trace_add(e);
}

struct abx_tracked *abx_track_create(uint64_t group, const char *test_id,
                                     const struct abx_create_opts *o,
                                     struct abx_err *err)
{
    struct abx_create_opts opts;
    struct abx_tracked *t = NULL;
    cJSON *md = NULL;
    char nonce[33], tid[TEST_ID_MAX + 1], detail[TEST_ID_MAX + 32];
    char lerr[256];

    abx_err_clear(err);
    if (!g.ready) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "create sandbox: sandbox "
                    "tracking is not initialised (no platform configured)");
        return NULL;
    }
    if (!o || !o->template_id || !o->template_id[0] || o->timeout <= 0) {
        abx_err_set(err, ABX_E_INVALID, 0, "", "create sandbox: a template "
                    "and a positive timeout are required");
        return NULL;
    }
    if (!test_id || !test_id[0])
        test_id = g.test_id;
    if (abx_track_random_id(nonce) != 0) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "create sandbox: no random "
                    "bytes for the nonce: %s", strerror(errno));
        return NULL;
    }
    md = abx_track_tags(o->metadata, g.run_id, g.session[0] ? g.session : NULL,
                        test_id, nonce);
    t = calloc(1, sizeof *t);
    if (!md || !t || registry_add(t) != 0) {
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "create sandbox: out of memory");
        goto fail;
    }
    opts = *o;
    opts.metadata = md;
    t->created_at = abx_wall_clock();
    t->test_id = strdup(test_id);
    opts.nonce_key = ABX_TAG_NONCE_KEY;
    if (abx_api_create(g.platform, &opts, &t->info, err) != 0) {
        g.n--;  /* registry_add put it last */
        goto fail;
    }
    t->group = group;
    t->alive = 1;
    t->touched = g.serial;
    sanitize(test_id, tid, sizeof tid);
    snprintf(detail, sizeof detail, "%s", tid[0] ? tid : "-");
    /* The guarantee: the id is on disk before any Lua code sees it. */
    if (g.ledger && abx_ledger_append("create", t->info.sandbox_id, detail,
                                      lerr, sizeof lerr) != 0) {
        struct abx_err kerr;
        if (abx_api_kill(g.platform, t->info.sandbox_id, &kerr) >= 0) {
            t->alive = 0;
            t->ended_at = abx_wall_clock();
        }
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "create sandbox: cannot "
                    "record %s in the run ledger (%s); %s", t->info.sandbox_id,
                    lerr, t->alive ? "it is still alive" : "it was deleted");
        /* Left registered: if the delete failed, kill_all retries. */
        t = NULL;
        goto out;
    }
    trace_life("created", t);
    goto out;
fail:
    if (t) {
        abx_sandbox_info_free(&t->info);
        free(t->test_id);
    }
    free(t);
    t = NULL;
out:
    cJSON_Delete(md);
    return t;
}

static void drop_secret(char **s)
{
    if (*s) {
        explicit_bzero(*s, strlen(*s));
        free(*s);
    }
    *s = NULL;
}

void abx_track_refresh(struct abx_tracked *t, struct abx_sandbox_info *fresh)
{
    struct abx_sandbox_info *i = &t->info;

    /* Both tokens are already in the masker (parsed replies add them). */
    drop_secret(&i->envd_access_token);
    drop_secret(&i->traffic_access_token);
    i->envd_access_token = fresh->envd_access_token;
    i->traffic_access_token = fresh->traffic_access_token;
    fresh->envd_access_token = NULL;
    fresh->traffic_access_token = NULL;
    memcpy(i->envd_version, fresh->envd_version, sizeof i->envd_version);
    memcpy(i->domain, fresh->domain, sizeof i->domain);
    t->gen++;
}

int abx_track_kill(struct abx_tracked *t, struct abx_err *err)
{
    int rc;

    abx_err_clear(err);
    if (!t || !t->alive)
        return 0;
    rc = abx_api_kill(g.platform, t->info.sandbox_id, err);
    if (rc >= 0) {
        t->alive = 0;
        t->ended_at = abx_wall_clock();
        ledger_line("kill", t->info.sandbox_id);
        trace_life("killed", t);
    }
    return rc;
}

struct abx_tracked *abx_track_find(const char *id)
{
    size_t i;

    for (i = 0; id && i < g.n; i++)
        if (g.all[i]->alive && strcmp(g.all[i]->info.sandbox_id, id) == 0)
            return g.all[i];
    return NULL;
}

/* Kills the live members selected by (all || group match), concurrently;
 * failed ones are kept aside under --keep-failed. */
static int kill_where(int all, uint64_t group, struct abx_buf *errs)
{
    struct abx_tracked **sel = NULL;
    const char **ids = NULL;
    int *res = NULL, nerr = 0;
    struct abx_err *kerr = NULL;
    size_t i, n = 0;

    for (i = 0; i < g.n; i++) {
        struct abx_tracked *t = g.all[i];
        if (!t->alive || (!all && t->group != group))
            continue;
        if (g.keep_failed && t->failed) {
            if (!t->kept) {
                t->kept = 1;
                ledger_line("keep", t->info.sandbox_id);
            }
            continue;
        }
        n++;
    }
    if (n == 0)
        return 0;
    sel = calloc(n, sizeof *sel);
    ids = calloc(n, sizeof *ids);
    res = calloc(n, sizeof *res);
    kerr = calloc(n, sizeof *kerr);
    if (!sel || !ids || !res || !kerr) {
        nerr = 1;
        if (errs && abx_buf_appends(errs, "kill sandboxes: out of memory\n") != 0) {
            /* errs is only the message: the count returned fails the caller. */
        }
        goto out;
    }
    n = 0;
    for (i = 0; i < g.n; i++) {
        struct abx_tracked *t = g.all[i];
        if (t->alive && (all || t->group == group) && !t->kept) {
            sel[n] = t;
            ids[n++] = t->info.sandbox_id;
        }
    }
    abx_api_kill_many(g.platform, ids, n, res, kerr, KILL_TIMEOUT);
    for (i = 0; i < n; i++) {
        if (res[i] >= 0) {
            sel[i]->alive = 0;
            sel[i]->ended_at = abx_wall_clock();
            ledger_line("kill", ids[i]);
            trace_life("killed", sel[i]);
        } else {
            nerr++;
            if (errs && abx_buf_appendf(errs, "%s: %s\n", ids[i],
                                        kerr[i].message) != 0) {
                /* errs is capped, only the message: the count returned
                 * says how many failed all the same. */
            }
        }
    }
out:
    free(sel);
    free(ids);
    free(res);
    free(kerr);
    return nerr;
}

int abx_track_kill_group(uint64_t group, struct abx_buf *errs)
{
    return kill_where(0, group, errs);
}

int abx_track_kill_all(struct abx_buf *errs)
{
    return kill_where(1, 0, errs);
}

int abx_track_kept(struct abx_buf *out)
{
    size_t i;
    int bad = 0;

    for (i = 0; i < g.n; i++)
        if (g.all[i]->kept && g.all[i]->alive)
            bad |= abx_buf_appendf(out, "%s %s\n", g.all[i]->info.sandbox_id,
                                   g.all[i]->info.template_id);
    return bad ? -1 : 0;
}

static int add_lifetime(cJSON *arr, const struct abx_tracked *t, int worker)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || !cJSON_AddItemToArray(arr, o))
        goto fail;
    if (!cJSON_AddStringToObject(o, "id", t->info.sandbox_id) ||
        !cJSON_AddStringToObject(o, "template", t->info.template_id) ||
        !(t->test_id && t->test_id[0]
              ? cJSON_AddStringToObject(o, "test", t->test_id)
              : cJSON_AddNullToObject(o, "test")) ||
        !cJSON_AddNumberToObject(o, "worker", worker) ||
        !cJSON_AddNumberToObject(o, "created", t->created_at) ||
        !(t->ended_at > 0 ? cJSON_AddNumberToObject(o, "ended", t->ended_at)
                          : cJSON_AddNullToObject(o, "ended")) ||
        !cJSON_AddBoolToObject(o, "kept", t->kept))
        return -1;
    return 0;
fail:
    cJSON_Delete(o);
    return -1;
}

cJSON *abx_track_lifetimes(int worker)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t i = 0; arr && i < g.n; i++) {
        if (add_lifetime(arr, g.all[i], worker) != 0) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}
