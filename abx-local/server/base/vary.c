/* --vary SEED: every detail FC Agent Sandbox never promised, drawn from a
 * seed. The profiles (profile.c) decide what FC documents; this table
 * decides what it leaves open, so that a suite green at every seed asserts
 * contracts, not one implementation's answers (docs/profiles.md, "Varied
 * details"). Choice 0 of each detail is the profile's own answer (upstream
 * E2B's, or the fc profile's), which is also what every detail takes
 * without --vary. A detail that a capability the profile declares
 * promises (e2b: e2b-messages, e2b-proxy) is not varied there. Set once,
 * before the listeners start: read without a lock. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "log.h"
#include "random.h"

#define MAX_CHOICES 4

struct detail {
    const char *name, *what;
    const char *choices[MAX_CHOICES];   /* [0] is the profile's own */
};

/* Indexed by enum abxl_vary (base.h). */
static const struct detail table[ABXL_V_COUNT] = {
    [ABXL_V_MESSAGES] = {"messages", "control-plane error texts (status and {code,message} kept)",
                         {"profile", "terse"}},
    [ABXL_V_TEMPLATE_ID] = {"template-id", "templateID of a sandbox: the name asked for, or an "
                            "opaque id with the name as alias",
                            {"name", "opaque"}},
    [ABXL_V_LIST_ORDER] = {"list-order", "order of GET /v2/sandboxes (pages stay consistent)",
                           {"newest", "oldest", "hashed"}},
    [ABXL_V_DEFAULT_USER] = {"default-user", "user, home and cwd of a command that names none",
                             {"user", "root"}},
    [ABXL_V_SANDBOX_ID_ENV] = {"sandbox-id-env", "E2B_SANDBOX_ID and E2B_TEMPLATE_ID in a "
                               "command's environment",
                               {"set", "absent"}},
    [ABXL_V_EXIT_TEXT] = {"exit-text", "a process's end status text and a signalled exit code "
                          "(-1 or 128+N)",
                          {"go", "plain"}},
    [ABXL_V_PROC_LIST] = {"proc-list", "fields of a process.List entry beyond pid and cmd",
                          {"full", "bare"}},
    [ABXL_V_DEAD_LISTED] = {"dead-listed", "a killed sandbox in an unfiltered list: gone, or "
                            "listed as terminated for 20 s",
                            {"gone", "terminated"}},
    [ABXL_V_DEAD_STATUS] = {"dead-status", "data-plane status for an unknown or killed sandbox",
                            {"502", "404", "410"}},
    [ABXL_V_UPLOAD_CAP] = {"upload-cap", "envd upload bodies: unlimited, or refused above "
                           "32 MiB (an FC page's figure) or 64 MiB with 413",
                           {"none", "32MiB", "64MiB"}},
    [ABXL_V_GATEWAY] = {"gateway", "in front of a sandbox's own ports: a streaming proxy, or a "
                        "gateway that buffers bodies (gateway-cap, its own HTML 413) and speaks "
                        "HTTP/1.0 or 1.1 upstream (gateway-http)",
                        {"stream", "buffer"}},
    [ABXL_V_BASE_TOOLS] = {"base-tools", "perl and python in template base",
                           {"present", "absent"}},
    [ABXL_V_MAX_TIMEOUT] = {"max-timeout", "the longest sandbox timeout accepted: 24 h (E2B, "
                            "FC's Eco and Standard plans) or 7 days (FC's Pro plan)",
                            {"24h", "7d"}},
    [ABXL_V_ID_CHECK] = {"id-check", "a sandbox id not of the platform's shape in a control-plane "
                         "route: 404 as any unknown id, or 400 (a platform that checks ids "
                         "first)",
                         {"lenient", "strict"}},
    [ABXL_V_KEY_CHECK] = {"key-check", "an X-API-KEY with a space or a byte outside printable "
                          "ASCII: 401 as any wrong key, or 400 (a gateway that checks the "
                          "header first)",
                          {"lenient", "strict"}},
    [ABXL_V_TOKEN_DENIED] = {"token-denied", "a secure sandbox's envd reached without a valid "
                             "token or signature: envd's 401, or 403 (FC's gateway in front of "
                             "it)",
                             {"401", "403"}},
    [ABXL_V_METADATA_CHECK] = {"metadata-check", "a metadata key outside [A-Za-z0-9_.-] or a "
                               "value with a byte outside printable ASCII: kept, or refused "
                               "with 400",
                               {"lenient", "strict"}},
    [ABXL_V_WATCH_EVENTS] = {"watch-events", "each watch event sent once, or twice (FC: "
                             "\"events may be duplicated\")",
                             {"once", "twice"}},
    [ABXL_V_STDIN_REFUSED] = {"stdin-refused", "the Connect code for input to a process "
                              "started without stdin: internal (E2B's envd) or "
                              "invalid_argument",
                              {"internal", "invalid"}},
    [ABXL_V_TIME_FORMAT] = {"time-format", "the control plane's times: UTC with milliseconds, "
                            "or whole seconds at +08:00 (China Standard Time)",
                            {"utc-ms", "cst-s"}},
    [ABXL_V_REAP_DELAY] = {"reap-delay", "when a sandbox past its endAt is ended: at once, "
                           "or 30 s later by a sweep (running till then)",
                           {"0s", "30s"}},
    [ABXL_V_UMASK] = {"umask", "envd's umask, so the mode of what the files API and commands "
                      "create: 022 (0644 files), or 002 (group-writable, 0664)",
                      {"022", "002"}},
    [ABXL_V_UNKNOWN_TEMPLATE] = {"unknown-template", "a create from a template that does not "
                                 "exist: 404, or 400 (a platform that validates the request "
                                 "first)",
                                 {"404", "400"}},
    [ABXL_V_WATCH_RENAME] = {"watch-rename", "the events of a rename in a watched folder: "
                             "rename naming the old name and create the new (E2B's envd), or "
                             "one rename naming the new",
                             {"from", "to"}},
    [ABXL_V_WATCH_SUBDIRS] = {"watch-subdirs", "a recursive watch takes in a new folder before "
                              "reporting it, or 0.3 s after (what happens in it meanwhile is "
                              "not reported)",
                              {"at-once", "late"}},
    [ABXL_V_LIFETIME_FROM] = {"lifetime-from", "what a create's timeout counts from: the "
                              "sandbox being up (startedAt), or the request (so endAt - "
                              "startedAt is the timeout less the start-up)",
                              {"ready", "request"}},
    [ABXL_V_PAGE_SIZE] = {"page-size", "the most sandboxes a list page holds: the profile's "
                          "(a larger limit is refused), or 20 (a larger limit is cut to 20, "
                          "the rest on later pages)",
                          {"profile", "20"}},
    [ABXL_V_GATEWAY_HTTP] = {"gateway-http", "the HTTP version the buffering gateway "
                             "(gateway=buffer) speaks to a sandbox's port: 1.0 (nginx's "
                             "default) or 1.1",
                             {"1.0", "1.1"}},
    [ABXL_V_GATEWAY_CAP] = {"gateway-cap", "the largest body the buffering gateway takes; "
                            "above it, its own HTML 413",
                            {"32MiB", "64MiB"}},
    [ABXL_V_START_ENVS] = {"start-envs", "the environment of a template's start command (a "
                           "server template's server): the template's envVars (E2B starts it "
                           "as the template is built), or those and a create's too",
                           {"template", "create"}},
    [ABXL_V_EGRESS] = {"egress", "with internet access off, a TCP connection out: refused "
                       "(network unreachable), or as FC filters it: to ports 80 and 443 it "
                       "connects and carries nothing, to others refused; nothing leaves",
                       {"unreachable", "fc"}},
};

long abxl_max_timeout_s(void)
{
    return abxl_vary(ABXL_V_MAX_TIMEOUT) ? 7 * 86400L : 86400L;
}

static int drawn[ABXL_V_COUNT];
static long long cur_seed = -1;

static int n_choices(const struct detail *d)
{
    int n = 0;
    while (n < MAX_CHOICES && d->choices[n])
        n++;
    return n;
}

/* splitmix64: a seed gives the same draw on every machine. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

int abxl_vary(enum abxl_vary v)
{
    if ((unsigned)v >= ABXL_V_COUNT)
        return 0;
    if ((v == ABXL_V_MESSAGES || v == ABXL_V_EXIT_TEXT || v == ABXL_V_UNKNOWN_TEMPLATE) &&
        !abxl_sw(ABXL_SW_FC_MESSAGES))
        return 0;   /* e2b-messages: upstream's words and codes are promised */
    if ((v == ABXL_V_DEAD_STATUS || v == ABXL_V_TOKEN_DENIED) && !abxl_sw(ABXL_SW_GATEWAY_ERRORS))
        return 0;   /* e2b-proxy: upstream's 502 and envd's own 401 are promised */
    return drawn[v];
}

long long abxl_vary_seed(void)
{
    return cur_seed;
}

static int parse_seed(const char *spec, long long *out)
{
    char *end;
    if (strcmp(spec, "random") == 0) {
        uint32_t r = 0;
        if (abx_random_bytes(&r, sizeof r) != 0)
            return -2;
        *out = (long long)(r % 1000000u) + 1;
        return 0;
    }
    if (spec[0] < '0' || spec[0] > '9')
        return -1;
    *out = strtoll(spec, &end, 10);
    return *end == '\0' && *out >= 0 && *out <= 1000000000LL ? 0 : -1;
}

int abxl_vary_seed_set(const char *spec, char *err, size_t errlen)
{
    long long seed;
    int rc = parse_seed(spec, &seed);
    if (rc == -2) {
        snprintf(err, errlen, "--vary random: no random bytes for a seed: %s", strerror(errno));
        return -1;
    }
    if (rc != 0) {
        snprintf(err, errlen, "--vary wants a seed from 0 to 1000000000 or 'random', not "
                 "'%.32s'", spec);
        return -1;
    }
    cur_seed = seed;
    for (int i = 0; i < ABXL_V_COUNT; i++)
        drawn[i] = seed == 0 ? 0
                             : (int)(mix((uint64_t)seed * 1000003u + (uint64_t)i) %
                                     (uint64_t)n_choices(&table[i]));
    return 0;
}

int abxl_vary_choice_set(const char *spec, char *err, size_t errlen)
{
    const char *eq = strchr(spec, '=');
    size_t n = eq ? (size_t)(eq - spec) : 0;
    for (int i = 0; eq && i < ABXL_V_COUNT; i++) {
        if (strlen(table[i].name) != n || strncmp(table[i].name, spec, n) != 0)
            continue;
        for (int k = 0; k < n_choices(&table[i]); k++)
            if (strcmp(table[i].choices[k], eq + 1) == 0) {
                drawn[i] = k;
                return 0;
            }
        snprintf(err, errlen, "'%.64s': %s is one of", spec, table[i].name);
        for (int k = 0; k < n_choices(&table[i]); k++) {
            size_t L = strlen(err);
            snprintf(err + L, errlen - L, " %s", table[i].choices[k]);
        }
        return -1;
    }
    return 1;   /* not a varied detail: the caller tries the profile switches */
}

/* GET /admin/profile's "vary": the seed and each detail's choice in force
 * (a detail the profile's capabilities promise is its own). */
cJSON *abxl_vary_json(void)
{
    cJSON *o = cJSON_CreateObject(), *d;
    if (o == NULL)
        return NULL;
    if (cur_seed >= 0)
        cJSON_AddNumberToObject(o, "seed", (double)cur_seed);
    else
        cJSON_AddNullToObject(o, "seed");
    d = cJSON_AddObjectToObject(o, "details");
    for (int i = 0; d && i < ABXL_V_COUNT; i++)
        cJSON_AddStringToObject(d, table[i].name, table[i].choices[abxl_vary(i)]);
    return o;
}

/* The envd side of the draw, into run/config.json's "compat" (envd/compat.c). */
void abxl_vary_envd_compat(cJSON *o)
{
    if (o == NULL)
        return;
    cJSON_AddBoolToObject(o, "sandboxIdEnv", abxl_vary(ABXL_V_SANDBOX_ID_ENV) == 0);
    cJSON_AddBoolToObject(o, "goExitText", abxl_vary(ABXL_V_EXIT_TEXT) == 0);
    cJSON_AddBoolToObject(o, "procListFull", abxl_vary(ABXL_V_PROC_LIST) == 0);
    static const double cap_mib[] = {0, 32, 64};   /* upload-cap's choices; 0: none */
    cJSON_AddNumberToObject(o, "uploadMaxBytes", cap_mib[abxl_vary(ABXL_V_UPLOAD_CAP)] * 1048576);
    cJSON_AddNumberToObject(o, "deniedStatus", abxl_vary(ABXL_V_TOKEN_DENIED) ? 403 : 401);
    cJSON_AddBoolToObject(o, "watchTwice", abxl_vary(ABXL_V_WATCH_EVENTS) == 1);
    cJSON_AddBoolToObject(o, "watchRenameTo", abxl_vary(ABXL_V_WATCH_RENAME) == 1);
    cJSON_AddBoolToObject(o, "watchSubdirsLate", abxl_vary(ABXL_V_WATCH_SUBDIRS) == 1);
    cJSON_AddBoolToObject(o, "stdinRefusedInvalid", abxl_vary(ABXL_V_STDIN_REFUSED) == 1);
    cJSON_AddNumberToObject(o, "umask", abxl_vary(ABXL_V_UMASK) ? 002 : 022);
}

/* One log line: what this server draws, so a red run names its seed. */
void abxl_vary_log(void)
{
    char line[1024] = "";
    size_t L = 0;
    if (cur_seed < 0)
        return;
    for (int i = 0; i < ABXL_V_COUNT && L < sizeof line; i++)
        if (abxl_vary(i) != 0)
            L += (size_t)snprintf(line + L, sizeof line - L, " %s=%s", table[i].name,
                                  table[i].choices[abxl_vary(i)]);
    abxl_log(ABXL_LOG_INFO, "vary seed %lld:%s", cur_seed, L ? line : " (all upstream's)");
}

void abxl_vary_print(void)
{
    abxl_out("\nvaried details (serve --vary SEED draws one choice each; the first is the\n"
             "profile's own; messages, exit-text, unknown-template, dead-status and\n"
             "token-denied vary on fc only):\n");
    abxl_out("%-16s %-28s %s\n", "detail", "choices", "what it decides");
    for (int i = 0; i < ABXL_V_COUNT; i++) {
        char ch[64] = "";
        size_t L = 0;
        for (int k = 0; k < n_choices(&table[i]) && L < sizeof ch; k++)
            L += (size_t)snprintf(ch + L, sizeof ch - L, "%s%s", k ? "," : "",
                                  table[i].choices[k]);
        abxl_out("%-16s %-28s %s\n", table[i].name, ch, table[i].what);
    }
    /* Undocumented by FC, yet not drawn: each is E2B's envd's documented
     * answer, and FC's sandboxes run that envd (docs/profiles.md). */
    abxl_out("\nnot varied (E2B's envd documents them, and FC runs that envd; or the\n"
             "template's contract decides):\n"
             "list-depth       a list's depth option: entries that deep, no deeper\n"
             "symlink-entry    a symlink's entry: its target's type and symlinkTarget\n"
             "process-group    a command's process group ends with it\n"
             "ports            a server template's /ports: the sandbox's own "
             "/proc/net/tcp (its CONTRACT.md)\n");
}

/* `abx-local switches --vary SEED`: the draw of one seed, one detail a line. */
void abxl_vary_print_draw(void)
{
    for (int i = 0; i < ABXL_V_COUNT; i++)
        abxl_out("%s=%s\n", table[i].name, table[i].choices[drawn[i]]);
}
