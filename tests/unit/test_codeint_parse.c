/* Code interpreter /execute NDJSON parsing without a network: the same
 * bytes fed in every split, line types, unknown types and keepalives
 * ignored, malformed lines, missing end, callback queueing. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "envd_internal.h"

static const char body[] =
    "{\"type\": \"number_of_executions\", \"execution_count\": 3}\n"
    "{\"type\":\"stdout\",\"text\":\"hello\\n\",\"timestamp\":\"t\"}\n"
    "{\"type\":\"keepalive\"}\n"
    "\n"
    "{\"type\":\"weird\",\"x\":1}\n"
    "{\"type\":\"result\",\"is_main_result\":true,\"text\":\"42\","
    "\"extra\":{}}\r\n"
    "{\"type\":\"stderr\",\"text\":\"warn \\u00e9\"}\n"
    "{\"type\":\"error\",\"name\":\"A\",\"value\":\"first\","
    "\"traceback\":\"t1\"}\n"
    "{\"type\":\"error\",\"name\":\"ZeroDivisionError\",\"value\":"
    "\"division by zero\",\"traceback\":\"Traceback...\"}\n"
    "{\"type\": \"end_of_execution\"}\n"
    "{\"type\":\"stdout\",\"text\":\"after the end\"}\n";

static int check_out(const struct abx_exec_state *st)
{
    const cJSON *o = st->out, *logs, *r0, *e;
    int ok = 1;

    logs = cJSON_GetObjectItem(o, "logs");
    ok &= cJSON_GetArraySize(cJSON_GetObjectItem(logs, "stdout")) == 1;
    ok &= strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(logs, "stdout"), 0)
                     ->valuestring, "hello\n") == 0;
    ok &= strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(logs, "stderr"), 0)
                     ->valuestring, "warn \xc3\xa9") == 0;
    ok &= cJSON_GetArraySize(cJSON_GetObjectItem(o, "results")) == 1;
    r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "results"), 0);
    ok &= strcmp(cJSON_GetObjectItem(r0, "text")->valuestring, "42") == 0;
    ok &= cJSON_GetObjectItem(r0, "type") == NULL;
    ok &= cJSON_IsTrue(cJSON_GetObjectItem(r0, "is_main_result"));
    e = cJSON_GetObjectItem(o, "error");
    ok &= e && strcmp(cJSON_GetObjectItem(e, "name")->valuestring,
                      "ZeroDivisionError") == 0;
    ok &= e && cJSON_GetObjectItem(e, "type") == NULL;
    ok &= cJSON_GetObjectItem(o, "execution_count")->valueint == 3;
    ok &= st->finished && !st->failed;
    return ok;
}

static void test_every_split(void)
{
    size_t len = strlen(body), step, first;
    int bad = 0;

    for (step = 1; step <= len; step++) {
        for (first = 0; first < (step == 1 ? len : 2); first++) {
            struct abx_exec_state st;
            size_t pos = 0;

            if (abx_exec_state_init(&st)) {
                bad++;
                continue;
            }
            st.callbacks = 1;
            while (pos < len) {
                size_t n = pos == 0 && first ? first : step;
                if (n > len - pos)
                    n = len - pos;
                if (abx_exec_feed(&st, 200, body + pos, n))
                    bad++;
                pos += n;
            }
            if (!check_out(&st) || cJSON_GetArraySize(st.pending) != 2 ||
                st.line.len != 0)
                bad++;
            abx_exec_state_free(&st);
        }
    }
    CHECK_INT(bad, 0);
}

static void test_bad_lines(void)
{
    struct abx_exec_state st;
    const char *s;

    CHECK_INT(abx_exec_state_init(&st), 0);
    s = "{\"type\":\"stdout\",\"text\":\"a\"}\nnot json\n";
    CHECK_INT(abx_exec_feed(&st, 200, s, strlen(s)), -1);
    CHECK_INT(st.err.cls, ABX_E_PROTOCOL);
    CHECK(strstr(st.err.message, "malformed") != NULL);
    /* Once failed, stays failed. */
    CHECK_INT(abx_exec_feed(&st, 200, "\n", 1), -1);
    abx_exec_state_free(&st);

    CHECK_INT(abx_exec_state_init(&st), 0);
    s = "{\"type\":\"stdout\"}\n";
    CHECK_INT(abx_exec_feed(&st, 200, s, strlen(s)), -1);
    CHECK(strstr(st.err.message, "text") != NULL);
    abx_exec_state_free(&st);

    CHECK_INT(abx_exec_state_init(&st), 0);
    s = "[1,2]\n";
    CHECK_INT(abx_exec_feed(&st, 200, s, strlen(s)), -1);
    abx_exec_state_free(&st);

    /* No end line, and a last line without '\n' kept for the end. */
    CHECK_INT(abx_exec_state_init(&st), 0);
    s = "{\"type\":\"stdout\",\"text\":\"a\"}\n{\"type\":\"end_of_exec";
    CHECK_INT(abx_exec_feed(&st, 200, s, strlen(s)), 0);
    CHECK(!st.finished);
    CHECK(st.line.len > 0);
    CHECK_INT(abx_exec_feed(&st, 200, "ution\"}", 7), 0);
    CHECK_INT(abx_exec_line(&st, st.line.data, st.line.len), 0);
    CHECK(st.finished);
    /* No callbacks asked for: nothing queued. */
    CHECK_INT(cJSON_GetArraySize(st.pending), 0);
    abx_exec_state_free(&st);

    /* Non-200: the body is kept for the error, not parsed. */
    CHECK_INT(abx_exec_state_init(&st), 0);
    s = "Context abc not found";
    CHECK_INT(abx_exec_feed(&st, 404, s, strlen(s)), 0);
    CHECK_STR(abx_buf_cstr(&st.errbody), s);
    CHECK(!st.failed);
    abx_exec_state_free(&st);
}

int main(void)
{
    test_every_split();
    test_bad_lines();
    return CHECK_DONE();
}
