/* envd versions (envd_version.h): parsing as compare-versions 6.1.1,
 * ordering, every gate just below and at its version, the forced default
 * user, unknown and bad versions, and the endpoint carrying the parse. */
#include <string.h>

#include "check.h"
#include "envd.h"
#include "envd_version.h"

static struct abx_envd_version ver(const char *s)
{
    struct abx_envd_version v;
    abx_envd_version_parse(s, &v);
    return v;
}

static int cmp(const char *a, const char *b)
{
    struct abx_envd_version x = ver(a), y = ver(b);
    int r = abx_envd_version_cmp(&x, &y);
    return r < 0 ? -1 : r > 0;
}

static void parsing(void)
{
    static const char *const good[] = {
        "0.5.2", "0", "1", "0.5", "1.2.3-rc", "1.2.3-rc.1", "v1.2.3",
        "V1.2.3", "=1.2.3", ">=0.4.0", "~1.2", "^1.2.3", "1.2.3+build.5",
        "1.2.3-alpha-1+b", "1.2.3.4", "1.2.3.4-x", "1.x", "1.2.*", "1.X.3",
        "01.002.0003", "1.2.3--", "1.2.3-RC",
    };
    static const char *const bad[] = {
        "x", "0.5.", ".5", "1.2-rc", "1-rc", "1.2.3-", "1.2.3-a..b",
        "1.2.3+", "1.2.3.4.5", " 0.5.2", "0.5.2 ", "0.5.2\n", "a1.2",
        "1.2.3-rc!", "x.1.2", "1..2", "1.2.3_4", "-1.2.3",
    };
    struct abx_envd_version v;
    size_t i;

    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK_INT(abx_envd_version_parse(good[i], &v), 0);
        CHECK_MSG(v.state == ABX_ENVD_VER_OK, "good version '%s' not parsed",
                  good[i]);
        CHECK_STR(v.text, good[i]);
    }
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(abx_envd_version_parse(bad[i], &v), -1);
        CHECK_MSG(v.state == ABX_ENVD_VER_BAD, "bad version '%s' accepted",
                  bad[i]);
    }
    CHECK_INT(abx_envd_version_parse("", &v), 0);
    CHECK_INT(v.state, ABX_ENVD_VER_UNKNOWN);
    CHECK_INT(abx_envd_version_parse(NULL, &v), 0);
    CHECK_INT(v.state, ABX_ENVD_VER_UNKNOWN);

    abx_envd_version_parse("v0.12.345-rc.1+b", &v);
    CHECK_INT(v.seg[0], 0);
    CHECK_INT(v.seg[1], 12);
    CHECK_INT(v.seg[2], 345);
    CHECK_INT(v.seg[3], 0);
    CHECK_STR(v.pre, "rc.1");
    abx_envd_version_parse("0.5", &v);
    CHECK_INT(v.seg[1], 5);
    CHECK_INT(v.seg[2], 0);
    abx_envd_version_parse("1.x.3", &v);
    CHECK_INT(v.seg[1], ABX_ENVD_VER_ANY);
    /* Longer than the text buffer: still parsed, text cut. */
    abx_envd_version_parse("1.2.3-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &v);
    CHECK_INT(v.state, ABX_ENVD_VER_OK);
    CHECK_INT(strlen(v.text), sizeof v.text - 1);
    CHECK_INT(strlen(v.pre), sizeof v.pre - 1);
    abx_envd_version_parse("99999999999999999999.0.0", &v);
    CHECK_INT(v.state, ABX_ENVD_VER_OK);
}

static void ordering(void)
{
    CHECK_INT(cmp("0.5.2", "0.5.2"), 0);
    CHECK_INT(cmp("0.5.1", "0.5.2"), -1);
    CHECK_INT(cmp("0.5.10", "0.5.9"), 1);      /* numeric, not lexical */
    CHECK_INT(cmp("0.10.0", "0.9.99"), 1);
    CHECK_INT(cmp("1.0.0", "0.99.99"), 1);
    CHECK_INT(cmp("0.5", "0.5.0"), 0);         /* missing segments are 0 */
    CHECK_INT(cmp("0.5", "0.5.7"), -1);
    CHECK_INT(cmp("1", "1.0.0"), 0);
    CHECK_INT(cmp("v0.5.7", "0.5.7"), 0);
    CHECK_INT(cmp("01.02.03", "1.2.3"), 0);
    CHECK_INT(cmp("1.2.3-rc", "1.2.3"), -1);   /* pre-release first */
    CHECK_INT(cmp("1.2.3", "1.2.3-rc"), 1);
    CHECK_INT(cmp("1.2.4-rc", "1.2.3"), 1);
    CHECK_INT(cmp("1.2.3-alpha", "1.2.3-beta"), -1);
    CHECK_INT(cmp("1.2.3-rc.2", "1.2.3-rc.10"), -1);  /* numeric ids */
    CHECK_INT(cmp("1.2.3-rc", "1.2.3-rc.1"), -1);
    CHECK_INT(cmp("1.2.3-1", "1.2.3-a"), -1);  /* "1" < "a" as strings */
    CHECK_INT(cmp("1.2.3+b1", "1.2.3+b2"), 0); /* build ignored */
    CHECK_INT(cmp("0.5.7.1", "0.5.7"), 1);     /* a fourth segment counts */
    CHECK_INT(cmp("0.5.6.9", "0.5.7"), -1);
    CHECK_INT(cmp("0.5.7.0-rc", "0.5.7"), -1);
    CHECK_INT(cmp("0.x", "0.5.0"), 0);         /* wildcards equal anything */
    CHECK_INT(cmp("0.x", "0.5.7"), -1);        /* ... but the patch is 0 */
    CHECK_INT(cmp("0.5.*", "0.5.7"), 0);
    CHECK_INT(cmp("x", "0.5.7"), 0);           /* not versions: equal */
}

struct gate_case {
    enum abx_envd_feature f;
    const char *below, *at;
    enum abx_errclass cls;  /* raised below; OK = a fallback, no error */
    const char *name;
};

static const struct gate_case gates[] = {
    {ABX_ENVD_ANY_USE, "0.0.9", "0.1.0", ABX_E_TEMPLATE, "this client"},
    {ABX_ENVD_RECURSIVE_WATCH, "0.1.3", "0.1.4", ABX_E_TEMPLATE,
     "recursive watch"},
    {ABX_ENVD_METRICS, "0.1.4", "0.1.5", ABX_E_TEMPLATE, "metrics"},
    {ABX_ENVD_DISK_METRICS, "0.2.3", "0.2.4", ABX_E_OK, "disk metrics"},
    {ABX_ENVD_STDIN_CHOICE, "0.2.99", "0.3.0", ABX_E_SANDBOX, "stdin=false"},
    {ABX_ENVD_DEFAULT_USER, "0.3.9", "0.4.0", ABX_E_OK, "a default user"},
    {ABX_ENVD_CLOSE_STDIN, "0.5.1", "0.5.2", ABX_E_SANDBOX, "close_stdin"},
    {ABX_ENVD_OCTET_UPLOAD, "0.5.6", "0.5.7", ABX_E_OK,
     "octet-stream upload"},
    {ABX_ENVD_FILE_METADATA, "0.6.1", "0.6.2", ABX_E_TEMPLATE,
     "file metadata"},
    {ABX_ENVD_WATCH_ENTRY, "0.6.2", "0.6.3", ABX_E_TEMPLATE, "include_entry"},
    {ABX_ENVD_WATCH_NET_MOUNTS, "0.6.3", "0.6.4", ABX_E_TEMPLATE,
     "allow_network_mounts"},
};

static void gate_table(void)
{
    struct abx_envd_version v;
    struct abx_err err;
    char want[128];
    size_t i;

    CHECK_INT(sizeof gates / sizeof gates[0], ABX_ENVD_FEATURE_COUNT);
    for (i = 0; i < sizeof gates / sizeof gates[0]; i++) {
        const struct gate_case *g = &gates[i];

        CHECK_STR(abx_envd_feature_min(g->f), g->at);
        v = ver(g->below);
        CHECK_INT(abx_envd_has(&v, g->f, &err), 0);
        abx_err_clear(&err);
        CHECK_INT(abx_envd_require(&v, g->f, &err), -1);
        CHECK_INT(err.cls, g->cls == ABX_E_OK ? ABX_E_SANDBOX : g->cls);
        /* The message names the feature, what it needs and what is there. */
        snprintf(want, sizeof want, "%s needs envd %s or later; the "
                 "sandbox's envd is %s.", g->name, g->at, g->below);
        CHECK_MSG(strstr(err.message, want) != NULL,
                  "gate %zu message '%s' lacks '%s'", i, err.message, want);
        /* Below by a pre-release of the gate version too. */
        snprintf(want, sizeof want, "%s-rc.1", g->at);
        v = ver(want);
        CHECK_INT(abx_envd_has(&v, g->f, &err), 0);
        v = ver(g->at);
        CHECK_INT(abx_envd_has(&v, g->f, &err), 1);
        abx_err_clear(&err);
        CHECK_INT(abx_envd_require(&v, g->f, &err), 0);
        CHECK_INT(err.cls, ABX_E_OK);
        v = ver("0.6.4");                   /* abx-local's e2b profile */
        CHECK_INT(abx_envd_has(&v, g->f, &err), 1);
        v = ver("");                        /* not reported: all pass */
        CHECK_INT(abx_envd_has(&v, g->f, &err), 1);
        CHECK_INT(abx_envd_require(&v, g->f, &err), 0);
        v = ver("garbage");
        abx_err_clear(&err);
        CHECK_INT(abx_envd_has(&v, g->f, &err), -1);
        CHECK_INT(err.cls, ABX_E_PROTOCOL);
        CHECK(strstr(err.message, "'garbage' is not a version") != NULL);
        CHECK_INT(abx_envd_require(&v, g->f, &err), -1);
        CHECK_INT(err.cls, ABX_E_PROTOCOL);
    }
    /* FC's envd 0.5.2: close_stdin yes, octet-stream and metadata no. */
    v = ver("0.5.2");
    CHECK_INT(abx_envd_has(&v, ABX_ENVD_CLOSE_STDIN, &err), 1);
    CHECK_INT(abx_envd_has(&v, ABX_ENVD_OCTET_UPLOAD, &err), 0);
    CHECK_INT(abx_envd_has(&v, ABX_ENVD_FILE_METADATA, &err), 0);
    CHECK_INT(abx_envd_has(&v, ABX_ENVD_FEATURE_COUNT, &err), -1);
    CHECK_INT(err.cls, ABX_E_INVALID);
    CHECK_STR(abx_envd_feature_min(ABX_ENVD_FEATURE_COUNT), "");
    /* The SDK's own texts follow. */
    v = ver("0.5.1");
    abx_envd_require(&v, ABX_ENVD_CLOSE_STDIN, &err);
    CHECK(strstr(err.message, "Please rebuild your template") != NULL);
    v = ver("0.6.1");
    abx_envd_require(&v, ABX_ENVD_FILE_METADATA, &err);
    CHECK(strstr(err.message, "File metadata requires envd 0.6.2 or later.")
          != NULL);
}

static void default_user(void)
{
    struct abx_envd_version v;
    struct abx_err err;
    const char *u;

    v = ver("0.3.9");
    u = NULL;
    CHECK_INT(abx_envd_default_user(&v, &u, &err), 0);
    CHECK_STR(u, "user");
    u = "root";                 /* a caller's user is never replaced */
    CHECK_INT(abx_envd_default_user(&v, &u, &err), 0);
    CHECK_STR(u, "root");
    v = ver("0.4.0");
    u = NULL;
    CHECK_INT(abx_envd_default_user(&v, &u, &err), 0);
    CHECK(u == NULL);
    v = ver("0.4.0-rc");
    CHECK_INT(abx_envd_default_user(&v, &u, &err), 0);
    CHECK_STR(u, "user");
    v = ver("");
    u = NULL;
    CHECK_INT(abx_envd_default_user(&v, &u, &err), 0);
    CHECK(u == NULL);
    v = ver("x");
    CHECK_INT(abx_envd_default_user(&v, &u, &err), -1);
    CHECK_INT(err.cls, ABX_E_PROTOCOL);
    u = "root";                 /* no comparison needed: no error */
    CHECK_INT(abx_envd_default_user(&v, &u, &err), 0);
}

static void endpoint(void)
{
    struct abx_platform p;
    struct abx_sandbox_info i;
    struct abx_endpoint ep;
    struct abx_err err;
    char e[128];

    CHECK_INT(abx_platform_init(&p, "k", "http://127.0.0.1:1", "localhost:1",
                                NULL, e, sizeof e), 0);
    memset(&i, 0, sizeof i);
    snprintf(i.sandbox_id, sizeof i.sandbox_id, "abc");
    snprintf(i.envd_version, sizeof i.envd_version, "0.5.2");
    CHECK_INT(abx_endpoint_init(&ep, &p, &i, ABX_ENVD_PORT, &err), 0);
    CHECK_INT(ep.ver.state, ABX_ENVD_VER_OK);
    CHECK_INT(ep.ver.seg[2], 2);
    CHECK_STR(ep.ver.text, "0.5.2");
    abx_endpoint_free(&ep);
    snprintf(i.envd_version, sizeof i.envd_version, "x");
    CHECK_INT(abx_endpoint_init(&ep, &p, &i, ABX_ENVD_PORT, &err), 0);
    CHECK_INT(ep.ver.state, ABX_ENVD_VER_BAD);
    abx_endpoint_free(&ep);
}

/* Gated envd calls fail before anything is sent: the endpoint points at
 * a closed port, so a call that went out would be a Connection error. */
static void refused_before_sending(void)
{
    struct abx_platform p;
    struct abx_sandbox_info i;
    struct abx_endpoint ep;
    struct abx_proc_cfg cfg;
    struct abx_err err;
    char e[128];

    CHECK_INT(abx_platform_init(&p, "k", "http://127.0.0.1:1", "localhost:1",
                                NULL, e, sizeof e), 0);
    memset(&i, 0, sizeof i);
    snprintf(i.sandbox_id, sizeof i.sandbox_id, "abc");
    snprintf(i.envd_version, sizeof i.envd_version, "0.1.3");
    CHECK_INT(abx_endpoint_init(&ep, &p, &i, ABX_ENVD_PORT, &err), 0);
    CHECK_INT(abx_envd_close_stdin(&ep, 1, &err), -1);
    CHECK_INT(err.cls, ABX_E_SANDBOX);
    CHECK(strstr(err.message, "close_stdin needs envd 0.5.2") != NULL);
    CHECK(abx_envd_watch(&ep, "/tmp", 1, NULL, 1, &err) == NULL);
    CHECK_INT(err.cls, ABX_E_TEMPLATE);
    memset(&cfg, 0, sizeof cfg);
    cfg.cmd = "/bin/true";
    cfg.stdin_given = 1;
    CHECK(abx_proc_start(&ep, &cfg, &err) == NULL);
    CHECK_INT(err.cls, ABX_E_SANDBOX);
    CHECK(strstr(err.message, "stdin=false needs envd 0.3.0") != NULL);
    abx_endpoint_free(&ep);
}

int main(void)
{
    parsing();
    ordering();
    gate_table();
    default_user();
    endpoint();
    refused_before_sending();
    return CHECK_DONE();
}
