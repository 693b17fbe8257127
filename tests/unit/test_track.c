/* Sandbox tracking without a server: the tags merged over a caller's
 * metadata (they cannot be overridden or dropped), test-id sanitizing,
 * and the refusals before anything is sent. The create/kill paths run
 * against abx-local in tests/bindings. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ledger.h"
#include "track.h"

static const char *val(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_tags_override(void)
{
    cJSON *user = cJSON_Parse("{\"e2e\":\"evil\",\"e2e_test\":\"x\","
                              "\"e2e_nonce\":\"n\",\"e2e_session\":\"s\","
                              "\"team\":\"qa\"}");
    cJSON *md = abx_track_tags(user, "run-1", "s-9", "tests/a.lua::t", "00ff");

    CHECK(md != NULL);
    CHECK_STR(val(md, ABX_TAG_KEY), "run-1");
    CHECK_STR(val(md, ABX_TAG_TEST_KEY), "tests/a.lua::t");
    CHECK_STR(val(md, ABX_TAG_NONCE_KEY), "00ff");
    CHECK_STR(val(md, ABX_TAG_SESSION_KEY), "s-9");
    CHECK_STR(val(md, "team"), "qa");
    CHECK_INT(cJSON_GetArraySize(md), 5);
    /* The caller's object is untouched. */
    CHECK_STR(val(user, ABX_TAG_KEY), "evil");
    cJSON_Delete(md);
    cJSON_Delete(user);
}

static void test_tags_no_user(void)
{
    cJSON *md = abx_track_tags(NULL, "r", NULL, NULL, NULL);

    CHECK(md != NULL);
    CHECK_STR(val(md, ABX_TAG_KEY), "r");
    CHECK_STR(val(md, ABX_TAG_TEST_KEY), "");
    CHECK_INT(cJSON_GetArraySize(md), 3);
    cJSON_Delete(md);
}

static void test_tags_sanitize(void)
{
    char long_id[400];
    cJSON *md;

    md = abx_track_tags(NULL, "r", NULL, "a\tb\n\xc3\xa9::z", "n");
    CHECK_STR(val(md, ABX_TAG_TEST_KEY), "a?b???::z");
    cJSON_Delete(md);
    memset(long_id, 'x', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    md = abx_track_tags(NULL, "r", NULL, long_id, "n");
    CHECK_INT(strlen(val(md, ABX_TAG_TEST_KEY)), 128);
    cJSON_Delete(md);
}

static void test_not_an_object(void)
{
    cJSON *arr = cJSON_Parse("[1]");

    CHECK(abx_track_tags(arr, "r", NULL, "t", "n") == NULL);
    cJSON_Delete(arr);
}

static void test_refusals(void)
{
    struct abx_platform p;
    struct abx_track_cfg cfg;
    struct abx_create_opts o;
    struct abx_err err;
    char e[256];

    memset(&o, 0, sizeof o);
    o.template_id = "base";
    o.timeout = 10;
    CHECK(abx_track_ready() == 0);
    CHECK(abx_track_create(1, "t", &o, &err) == NULL);
    CHECK_INT(err.cls, ABX_E_INVALID);
    CHECK(strstr(err.message, "not initialised") != NULL);

    memset(&cfg, 0, sizeof cfg);
    CHECK_INT(abx_track_init(&cfg, e, sizeof e), -1);
    memset(&p, 0, sizeof p);
    cfg.platform = &p;
    cfg.run_id = "run-x";
    CHECK_INT(abx_track_init(&cfg, e, sizeof e), 0);
    CHECK(abx_track_ready() == 1);
    o.timeout = 0;
    CHECK(abx_track_create(1, "t", &o, &err) == NULL);
    CHECK(strstr(err.message, "positive timeout") != NULL);

    /* Nothing tracked: groups, kills and failures are empty. */
    CHECK(abx_track_group_new() != abx_track_group_new());
    CHECK_INT(abx_track_kill_group(1, NULL), 0);
    CHECK_INT(abx_track_kill_all(NULL), 0);
    abx_track_begin_test(1, "t");
    CHECK_INT(abx_track_test_failed(NULL), 0);
    CHECK(abx_track_find("nope") == NULL);
}

/* A connect reply's tokens, version and domain replace the record's,
 * an absent token is dropped, and the generation moves on. */
static void test_refresh(void)
{
    struct abx_tracked t;
    struct abx_sandbox_info fresh;

    memset(&t, 0, sizeof t);
    memset(&fresh, 0, sizeof fresh);
    snprintf(t.info.sandbox_id, sizeof t.info.sandbox_id, "sbx1");
    snprintf(t.info.envd_version, sizeof t.info.envd_version, "0.5.2");
    t.info.envd_access_token = strdup("old-envd");
    t.info.traffic_access_token = strdup("old-traffic");
    fresh.envd_access_token = strdup("new-envd");
    snprintf(fresh.envd_version, sizeof fresh.envd_version, "0.6.4");
    snprintf(fresh.domain, sizeof fresh.domain, "example.test");
    abx_track_refresh(&t, &fresh);
    CHECK_STR(t.info.envd_access_token, "new-envd");
    CHECK(t.info.traffic_access_token == NULL);
    CHECK_STR(t.info.envd_version, "0.6.4");
    CHECK_STR(t.info.domain, "example.test");
    CHECK_STR(t.info.sandbox_id, "sbx1");
    CHECK_INT(t.gen, 1);
    CHECK(fresh.envd_access_token == NULL);    /* moved, not copied */
    fresh.traffic_access_token = strdup("new-traffic");
    abx_track_refresh(&t, &fresh);
    CHECK(t.info.envd_access_token == NULL);
    CHECK_STR(t.info.traffic_access_token, "new-traffic");
    CHECK_INT(t.gen, 2);
    abx_sandbox_info_free(&fresh);
    abx_sandbox_info_free(&t.info);
}

int main(void)
{
    test_refresh();
    test_tags_override();
    test_tags_no_user();
    test_tags_sanitize();
    test_not_an_object();
    test_refusals();
    return CHECK_DONE();
}
