/* Earlier attempts of a rerun test (runtime/result/attempts.c): kept on the
 * result, carried through its JSON both ways, bad values refused. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "result.h"

static struct abx_result *failed(const char *msg, enum abx_outcome o)
{
    struct abx_result *r = abx_result_new();

    r->outcome = o;
    r->when = o == ABX_OUTCOME_ERROR ? ABX_PHASE_SETUP : ABX_PHASE_CALL;
    abx_result_set(&r->message, msg);
    abx_result_set(&r->longrepr, "trace <&>");
    abx_result_set(&r->output, "out\n");
    r->dur_call = 0.25;
    return r;
}

static void round_trip(void)
{
    struct abx_result *r = abx_result_new(), *a = failed("first", ABX_OUTCOME_FAILED);
    struct abx_result *b = failed("second", ABX_OUTCOME_ERROR), *back = NULL;
    char err[256];
    cJSON *j;

    abx_result_set(&r->nodeid, "f.lua::t");
    r->outcome = ABX_OUTCOME_FLAKY;
    CHECK_INT(abx_result_add_attempt(r, a), 0);
    CHECK_INT(abx_result_add_attempt(r, b), 0);
    abx_result_free(a);
    abx_result_free(b);
    CHECK_INT(r->rerun, 2);
    CHECK_INT(r->nattempts, 2);
    CHECK(!abx_result_is_failure(r));
    j = abx_result_to_json(r);
    CHECK(j != NULL);
    CHECK_STR(cJSON_GetObjectItem(j, "outcome")->valuestring, "flaky");
    CHECK_INT(abx_result_from_json(j, &back, err, sizeof err), 0);
    CHECK(back != NULL);
    if (back) {
        CHECK_INT(back->outcome, ABX_OUTCOME_FLAKY);
        CHECK_INT(back->rerun, 2);
        CHECK_INT(back->nattempts, 2);
        CHECK_STR(back->attempts[0].message, "first");
        CHECK_INT(back->attempts[0].outcome, ABX_OUTCOME_FAILED);
        CHECK_INT(back->attempts[1].outcome, ABX_OUTCOME_ERROR);
        CHECK_INT(back->attempts[1].when, ABX_PHASE_SETUP);
        CHECK_STR(back->attempts[1].longrepr, "trace <&>");
        CHECK_STR(back->attempts[1].output, "out\n");
        CHECK(back->attempts[1].duration == 0.25);
    }
    abx_result_free(back);
    cJSON_Delete(j);
    abx_result_free(r);
}

static void refused(void)
{
    static const char *const bad[] = {
        "{\"nodeid\":\"x\",\"outcome\":\"flaky\",\"attempts\":5}",
        "{\"nodeid\":\"x\",\"outcome\":\"flaky\",\"attempts\":[{\"outcome\":\"bogus\"}]}",
        "{\"nodeid\":\"x\",\"outcome\":\"flaky\",\"attempts\":[{\"outcome\":\"failed\","
        "\"duration\":-1}]}",
        "{\"nodeid\":\"x\",\"outcome\":\"flaky\",\"attempts\":[{\"outcome\":\"failed\","
        "\"message\":7}]}",
        "{\"nodeid\":\"x\",\"outcome\":\"flaky\",\"attempts\":[3]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cJSON *j = cJSON_Parse(bad[i]);
        struct abx_result *r = (struct abx_result *)1;
        char err[256] = "";
        CHECK_INT(abx_result_from_json(j, &r, err, sizeof err), -1);
        CHECK(r == NULL);
        CHECK(strstr(err, "attempts") != NULL);
        cJSON_Delete(j);
    }
}

static void summary(void)
{
    struct abx_summary s;
    struct abx_result *r = abx_result_new();
    char line[256];

    abx_summary_init(&s);
    r->outcome = ABX_OUTCOME_FLAKY;
    r->rerun = 2;
    abx_summary_add(&s, r);
    r->outcome = ABX_OUTCOME_PASSED;
    r->rerun = 0;
    abx_summary_add(&s, r);
    abx_summary_line(&s, line, sizeof line);
    CHECK_STR(line, "1 passed, 1 flaky, 2 rerun in 0.00s");
    CHECK_INT(abx_summary_exit_code(&s, 0), 0);
    abx_result_free(r);
}

int main(void)
{
    round_trip();
    refused();
    summary();
    return CHECK_DONE();
}
