/* POST /sandboxes (and /v2/sandboxes where the profile has it): the
 * template, limits, tokens and options of a new sandbox. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "base.h"
#include "http.h"
#include "log.h"
#include "rootfs.h"
#include "sandbox.h"

/* v2 create (NewSandboxV2) is always secured: no `secure` flag. */
/* lifecycle.autoResume as the SDK sends it: {"enabled": bool}. */
static int get_auto_resume(const cJSON *o, bool *out, char *err, size_t errlen)
{
    const cJSON *ar = cJSON_GetObjectItemCaseSensitive(o, "autoResume");
    if (ar == NULL || cJSON_IsNull(ar))
        return 0;
    if (!cJSON_IsObject(ar)) {
        snprintf(err, errlen, "field 'autoResume' must be an object {\"enabled\": bool}");
        return -1;
    }
    return abxl_body_bool(ar, "enabled", out, err, errlen) < 0 ? -1 : 1;
}

/* An array of strings, or absent. */
static int string_list(const cJSON *o, const char *name, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name), *e;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsArray(v))
        goto bad;
    cJSON_ArrayForEach(e, v) if (!cJSON_IsString(e)) goto bad;
    return 1;
bad:
    snprintf(err, errlen, "field 'network.%s' must be an array of strings", name);
    return -1;
}

/* network {allowPublicTraffic, allowOut[], denyOut[], ...}: the sandbox
 * has no route out anyway (DESIGN.md); the object is kept and echoed,
 * and allowPublicTraffic=false gives it a traffic token. */
static int get_network(const cJSON *o, const cJSON **net, bool *public_traffic, char *err,
                       size_t errlen)
{
    *net = cJSON_GetObjectItemCaseSensitive(o, "network");
    if (*net == NULL || cJSON_IsNull(*net)) {
        *net = NULL;
        return 0;
    }
    if (!cJSON_IsObject(*net)) {
        snprintf(err, errlen, "field 'network' must be an object");
        return -1;
    }
    if (abxl_body_bool(*net, "allowPublicTraffic", public_traffic, err, errlen) < 0 ||
        string_list(*net, "allowOut", err, errlen) < 0 ||
        string_list(*net, "denyOut", err, errlen) < 0)
        return -1;
    const cJSON *mask = cJSON_GetObjectItemCaseSensitive(*net, "maskRequestHost");
    if (mask && !cJSON_IsNull(mask) &&
        (!cJSON_IsString(mask) || strlen(mask->valuestring) > ABXL_MASK_HOST_MAX ||
         strpbrk(mask->valuestring, "\r\n") != NULL)) {
        snprintf(err, errlen, "field 'network.maskRequestHost' must be a host name of at most "
                 "%d characters", ABXL_MASK_HOST_MAX);
        return -1;
    }
    return 1;
}

/* Fault injection (metadataPunctRefused): a platform that refuses
 * metadata values holding ' or [, as the suite's node-id tags do. */
static bool faulted_metadata(const cJSON *meta, char *err, size_t errlen)
{
    struct abxl_faults f;
    const cJSON *it;

    abxl_faults_get(&f);
    if (!f.metadata_punct_refused)
        return false;
    cJSON_ArrayForEach(it, meta) {
        if (cJSON_IsString(it) && strpbrk(it->valuestring, "'[") != NULL) {
            snprintf(err, errlen, "metadata value of '%.64s' holds a character not allowed "
                     "(fault injection)", it->string);
            return true;
        }
    }
    return false;
}

/* --vary metadata-check=strict: a platform that keeps metadata as
 * cloud tags takes plain keys and printable ASCII values only. */
static int varied_metadata(const cJSON *meta, char *err, size_t errlen)
{
    const cJSON *e;

    if (meta == NULL || !abxl_vary(ABXL_V_METADATA_CHECK))
        return 0;
    cJSON_ArrayForEach(e, meta) {
        const unsigned char *p;

        if (strspn(e->string, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              "0123456789_.-") != strlen(e->string)) {
            snprintf(err, errlen, "metadata key '%.64s' may hold letters, digits, '_', '.' "
                     "and '-' only", e->string);
            return -1;
        }
        for (p = (const unsigned char *)e->valuestring; p && *p; p++)
            if (*p < 0x20 || *p > 0x7e) {
                snprintf(err, errlen, "metadata value of '%.64s' may hold printable ASCII "
                         "only", e->string);
                return -1;
            }
    }
    return 0;
}

/* FC reserves metadata keys starting "fc." for its extensions (VPC, OSS
 * mounts, RAM role): those are accepted (and have no effect here), any
 * other fc. key is refused. */
static int reserved_metadata(const cJSON *meta, char *err, size_t errlen)
{
    static const char *const known[] = {"fc.sandbox.network.vpc", "fc.sandbox.storage.oss",
                                        "fc.sandbox.auth.role"};
    const cJSON *e;
    if (meta == NULL || !abxl_sw(ABXL_SW_FC_METADATA))
        return 0;
    cJSON_ArrayForEach(e, meta)
    {
        bool ok = strncmp(e->string, "fc.", 3) != 0;
        for (size_t i = 0; !ok && i < sizeof known / sizeof known[0]; i++)
            ok = strcmp(e->string, known[i]) == 0;
        if (!ok) {
            snprintf(err, errlen, "metadata key '%.64s' is reserved: keys starting with 'fc.' "
                     "are FC extensions", e->string);
            return -1;
        }
    }
    return 0;
}

enum MHD_Result abxl_ctl_create(struct MHD_Connection *c, const struct abx_buf *body, bool v2)
{
    enum MHD_Result bad;
    char err[512];
    struct abxl_tmpl t = {0};
    bool have_tmpl = false;
    struct abxl_sbx *s = NULL;
    enum MHD_Result ret;
    int64_t asked_ms = abxl_now_ms();
    cJSON *o = abxl_body_parse(c, body, &bad);
    if (o == NULL) {
        ret = body->len ? bad : abxl_http_error(c, 400, "request body with templateID is required");
        goto out;
    }
    const cJSON *tid = cJSON_GetObjectItemCaseSensitive(o, "templateID");
    if (tid == NULL || cJSON_IsNull(tid)) {
        ret = abxl_http_error(c, 400, "field 'templateID' is required");
        goto out;
    }
    if (!cJSON_IsString(tid) || tid->valuestring[0] == '\0' || strlen(tid->valuestring) > 120) {
        ret = abxl_http_error(c, 400, "field 'templateID' must be a non-empty string (max 120)");
        goto out;
    }
    long timeout = v2 ? 300 : 15;   /* NewSandboxV2 / NewSandbox defaults */
    bool secure = false, internet = true, auto_pause = false, auto_resume = false;
    bool public_traffic = true, pause_memory = true;
    const cJSON *meta, *envs, *net;
    if (abxl_body_int(o, "timeout", 1, abxl_max_timeout_s(), &timeout, err, sizeof err) < 0 ||
        abxl_body_bool(o, "secure", &secure, err, sizeof err) < 0 ||
        abxl_body_bool(o, "allow_internet_access", &internet, err, sizeof err) < 0 ||
        abxl_body_bool(o, "autoPause", &auto_pause, err, sizeof err) < 0 ||
        abxl_body_bool(o, "autoPauseMemory", &pause_memory, err, sizeof err) < 0 ||
        abxl_body_map(o, "metadata", ABXL_KEYS_NONEMPTY, &meta, err, sizeof err) < 0 ||
        abxl_body_map(o, "envVars", ABXL_KEYS_ENV, &envs, err, sizeof err) < 0 ||
        get_auto_resume(o, &auto_resume, err, sizeof err) < 0 ||
        get_network(o, &net, &public_traffic, err, sizeof err) < 0 ||
        reserved_metadata(meta, err, sizeof err) < 0 ||
        varied_metadata(meta, err, sizeof err) < 0 || faulted_metadata(meta, err, sizeof err)) {
        ret = abxl_http_error(c, 400, "%s", err);
        goto out;
    }
    if (auto_pause && !abxl_sw(ABXL_SW_PAUSE)) {
        ret = abxl_http_error(c, 403, "autoPause needs pause, which is available to allow-listed "
                             "accounts only (not on the Eco plan)");
        goto out;
    }
    if (v2)
        secure = true;
    int fr = abxl_tmpl_find(tid->valuestring, &t, err, sizeof err);
    if (fr == 1) {
        ret = abxl_http_error(c, abxl_vary(ABXL_V_UNKNOWN_TEMPLATE) ? 400 : 404,
                             "template '%s' not found", tid->valuestring);
        goto out;
    }
    if (fr < 0) {
        ret = abxl_http_error(c, 500, "template '%s' is broken: %s", tid->valuestring, err);
        goto out;
    }
    have_tmpl = true;
    if (abxl_reg_count() >= (size_t)abxl_cfg.max_sandboxes) {
        /* E2B answers a concurrency limit with 429 too. Checked early so
         * that a full server answers at once; abxl_reg_add decides. */
        ret = abxl_http_error(c, 429, "maximum number of concurrent sandboxes reached (%ld)",
                             abxl_cfg.max_sandboxes);
        goto out;
    }
    struct abxl_faults f;
    abxl_faults_get(&f);
    abxl_sleep_ms(f.create_latency_ms);
    s = abxl_sbx_new();
    if (s == NULL) {
        ret = abxl_http_error(c, 500, "out of memory");
        goto out;
    }
    struct abxl_sbx *dup;
    do {
        if (abxl_random_id(s->id) != 0) {
            ret = abxl_http_error(c, 500, "no random bytes for a sandbox id");
            goto out;
        }
        dup = abxl_reg_get(s->id);
        abxl_sbx_unref(dup);
    } while (dup != NULL);
    char pub[ABXL_TMPL_ID_MAX];
    snprintf(s->template_id, sizeof s->template_id, "%s", abxl_tmpl_public_id(t.id, pub));
    /* The alias is the name asked for; asked by id, the template's own
     * (its first alias, or its name when the id is opaque). */
    const char *alias = t.alias;
    if (strcmp(tid->valuestring, s->template_id) != 0)
        alias = tid->valuestring;
    else if (!t.alias[0] && strcmp(s->template_id, t.id) != 0)
        alias = t.id;
    snprintf(s->alias, sizeof s->alias, "%s", alias);
    if ((secure && abxl_random_hex(s->access_token, 32) != 0) ||
        (!public_traffic && abxl_random_hex(s->traffic_token, 32) != 0)) {
        ret = abxl_http_error(c, 500, "no randomness for the access tokens");
        goto out;
    }
    if (net && (s->network = cJSON_Duplicate(net, 1)) == NULL) {
        ret = abxl_http_error(c, 500, "out of memory");
        goto out;
    }
    if (meta) {
        cJSON *copy = cJSON_Duplicate(meta, 1);
        if (copy == NULL) {
            ret = abxl_http_error(c, 500, "out of memory");
            goto out;
        }
        cJSON_Delete(s->metadata);
        s->metadata = copy;   /* never NULL (sandbox.h) */
    }
    s->cpu_count = t.cpu_count;
    s->memory_mb = t.memory_mb;
    s->disk_mb = t.disk_mb;
    s->allow_internet = internet;
    s->auto_pause = auto_pause;
    s->auto_pause_fs = !pause_memory;
    s->auto_resume = auto_resume;
    s->timeout_ms = (int64_t)timeout * 1000;
    if (f.create_envs_dropped && envs)
        abxl_log(ABXL_LOG_INFO, "dropping the envVars of a create (fault injection)");
    int sr = abxl_spawn(s, &t, f.create_envs_dropped ? NULL : envs, err, sizeof err);
    if (sr > 0) {   /* lost a race for the last slot; nothing to clean up */
        ret = abxl_http_error(c, 429, "%s", err);
        goto out;
    }
    if (sr != 0 || abxl_spawn_wait_ready(s, &t, err, sizeof err) != 0) {
        char tail[256];
        abxl_spawn_log_tail(s, tail, sizeof tail);
        abxl_log(ABXL_LOG_ERROR, "sandbox %s failed to start: %s%s%s", s->id, err,
                tail[0] ? "; envd.log: " : "", tail);
        abxl_life_kill(s);
        ret = abxl_http_error(c, 500, "sandbox failed to start: %s", err);
        goto out;
    }
    pthread_mutex_lock(&abxl_reg_lock);
    bool alive = s->state == ABXL_SBX_STARTING;
    if (alive) {
        s->started_ms = abxl_now_ms();
        /* --vary lifetime-from=request: the start-up comes out of it. */
        s->end_ms = (abxl_vary(ABXL_V_LIFETIME_FROM) ? asked_ms : s->started_ms) + timeout * 1000;
        s->state = ABXL_SBX_RUNNING;
    }
    pthread_mutex_unlock(&abxl_reg_lock);
    if (!alive) {
        ret = abxl_http_error(c, 500, "sandbox was killed while starting");
        goto out;
    }
    abxl_metrics_sample(s, false);   /* the first sample: its start */
    abxl_log(ABXL_LOG_INFO, "sandbox %s created (template %s, timeout %lds)", s->id, t.id,
            timeout);
    if (abxl_faults_take_create_drop())   /* a lost reply: the sandbox stays */
        ret = abxl_http_error(c, 503, "injected fault: create reply dropped (sandbox %s exists)",
                             s->id);
    else
        ret = abxl_http_json(c, 201, abxl_json_sandbox(s));
out:
    abxl_sbx_unref(s);
    if (have_tmpl)
        abxl_tmpl_free(&t);
    cJSON_Delete(o);
    return ret;
}

