/* Worker -> parent result records: abx_result_from_json on arbitrary
 * input; an accepted record must round-trip through to_json, the printed
 * JSON line, and from_json again, to the same JSON. Errors name a key.
 * An accepted record's outcome is one of pytest's names, kept as is; it
 * fails the run (exit 1, else 0: pytest's codes) exactly when the input
 * says "failed" or "error" or has a teardown message: this file's own
 * reading of the input, not result.c's. */
#include <string.h>

#include "fuzz.h"
#include "result.h"

/* pytest's report outcomes, plus the rerun plugin's "flaky". */
static const char *const ref_outcomes[] = {
    "passed", "failed", "error", "skipped", "xfailed", "xpassed", "flaky",
};
#define REF_EXIT_OK 0
#define REF_EXIT_FAILED 1

static const char *str_of(const cJSON *j, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, key));
}

/* The input, read as the protocol says: its outcome is a known name, and
 * whether the record counts as a failure. */
static int ref_failure(const cJSON *j)
{
    const char *o = str_of(j, "outcome");
    size_t i, known = 0;

    FUZZ_CHECK(o != NULL);
    for (i = 0; i < sizeof ref_outcomes / sizeof ref_outcomes[0]; i++)
        known += !strcmp(o, ref_outcomes[i]);
    FUZZ_CHECK(known == 1);
    return !strcmp(o, "failed") || !strcmp(o, "error") ||
           str_of(j, "teardown_message") != NULL;
}

static char *print(const struct abx_result *r)
{
    cJSON *j = abx_result_to_json(r);
    char *s;

    FUZZ_CHECK(j != NULL);
    s = cJSON_PrintUnformatted(j);
    FUZZ_CHECK(s != NULL);
    cJSON_Delete(j);
    return s;
}

static void check_err(const char *err)
{
    FUZZ_CHECK(!strcmp(err, "result is not a JSON object") ||
               !strcmp(err, "out of memory") ||
               !strncmp(err, "result JSON: missing or invalid \"", 33));
}

static void use(const struct abx_result *r, int failure)
{
    struct abx_summary s;
    char line[256];
    int n;

    FUZZ_CHECK(r->nodeid && *r->nodeid);
    FUZZ_CHECK((unsigned)r->outcome < ABX_OUTCOME_COUNT_);
    FUZZ_CHECK((unsigned)r->when <= ABX_PHASE_TEARDOWN);
    FUZZ_CHECK(r->line >= 0 && r->worker >= -1 && r->rerun >= 0);
    FUZZ_CHECK(abx_result_duration(r) >= 0);
    abx_summary_init(&s);
    abx_summary_add(&s, r);
    s.duration = abx_result_duration(r);
    FUZZ_CHECK(abx_summary_total(&s) == 1);
    n = abx_summary_line(&s, line, sizeof line);
    FUZZ_CHECK(n > 0 && (size_t)n < sizeof line);
    FUZZ_CHECK(abx_result_is_failure(r) == failure);
    FUZZ_CHECK(abx_summary_exit_code(&s, 0) ==
               (failure ? REF_EXIT_FAILED : REF_EXIT_OK));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *j = cJSON_ParseWithLength((const char *)data, size), *j2;
    struct abx_result *r = NULL, *r2 = NULL;
    char err[128], *s1, *s2;
    int rc;

    if (!j)
        return 0;
    memset(err, 'x', sizeof err);
    rc = abx_result_from_json(j, &r, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc == -1 && r == NULL);
        FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL);
        check_err(err);
        /* NULL err buffer is allowed. */
        FUZZ_CHECK(abx_result_from_json(j, &r, NULL, 0) == -1);
        cJSON_Delete(j);
        return 0;
    }
    use(r, ref_failure(j));
    s1 = print(r);
    j2 = cJSON_Parse(s1);
    FUZZ_CHECK(j2 != NULL);
    FUZZ_CHECK(!strcmp(str_of(j2, "outcome"), str_of(j, "outcome")));
    FUZZ_CHECK(abx_result_from_json(j2, &r2, err, sizeof err) == 0);
    s2 = print(r2);
    if (strcmp(s1, s2))
        fprintf(stderr, "round trip differs:\n%s\n%s\n", s1, s2);
    FUZZ_CHECK(!strcmp(s1, s2));
    cJSON_free(s1);
    cJSON_free(s2);
    cJSON_Delete(j2);
    abx_result_free(r);
    abx_result_free(r2);
    cJSON_Delete(j);
    return 0;
}
