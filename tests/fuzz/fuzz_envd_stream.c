/* envd stream and code-interpreter NDJSON parsers: the body is parsed
 * once in one piece and once in random splits; both runs must agree on
 * the events, the failure and the error class, and every error must be
 * a classed message. Input: byte 0 picks the parser (process stream,
 * watch stream, NDJSON) and the HTTP status (200 or an error), byte 1
 * the queue cap, the rest is the body. */
#include <stdlib.h>
#include <string.h>

#include "envd_internal.h"
#include "fuzz.h"

static const size_t qcaps[] = {0, 64, 300, 4096};

/* Summary of a run: every event, then the outcome. */
static void run_stream(const uint8_t *p, size_t n, abx_envd_msg_fn fn,
                       long status, size_t qmax, uint32_t *seed,
                       struct abx_buf *sum)
{
    struct abx_envd_stream s;
    struct abx_envd_qnode *node;
    struct abx_err none, err;
    size_t pos = 0;

    abx_envd_stream_init(&s, fn, "fuzz", qmax);
    while (pos < n) {
        size_t k = seed ? 1 + fuzz_rand(seed) % 64 : n;
        if (k > n - pos)
            k = n - pos;
        if (abx_envd_stream_feed(&s, status, (const char *)p + pos, k))
            break;
        pos += k;
    }
    abx_err_clear(&none);
    abx_envd_stream_eof(&s, 0, &none, status);
    FUZZ_CHECK(s.done);
    FUZZ_CHECK(s.qbytes <= s.qmax);
    while (abx_envd_stream_next(&s, &node, 0, &err) == 1) {
        FUZZ_CHECK(node->data[node->len] == '\0');
        MUST(abx_buf_appendf(sum, "%d:%zu:", node->kind, node->len));
        MUST(abx_buf_append(sum, node->data, node->len));
        free(node);
    }
    if (err.cls != ABX_E_OK)
        FUZZ_CHECK(err.message[0] != '\0');
    MUST(abx_buf_appendf(sum, "|%d|%d|%u|%d", (int)err.cls, s.started, s.pid,
                         s.got_end));
    abx_envd_stream_free(&s);
}

static void run_ndjson(const uint8_t *p, size_t n, long status,
                       uint32_t *seed, struct abx_buf *sum)
{
    struct abx_exec_state st;
    size_t pos = 0;
    char *js;

    FUZZ_CHECK(abx_exec_state_init(&st) == 0);
    st.callbacks = 1;
    while (pos < n) {
        size_t k = seed ? 1 + fuzz_rand(seed) % 64 : n;
        if (k > n - pos)
            k = n - pos;
        if (abx_exec_feed(&st, status, (const char *)p + pos, k))
            break;
        pos += k;
    }
    if (st.failed)
        FUZZ_CHECK(st.err.cls != ABX_E_OK && st.err.message[0]);
    js = cJSON_PrintUnformatted(st.out);
    MUST(abx_buf_appendf(sum, "%s|%d|%d|%zu", js ? js : "", st.failed,
                         st.finished, st.failed ? 0 : st.line.len));
    free(js);
    js = cJSON_PrintUnformatted(st.pending);
    MUST(abx_buf_appendf(sum, "|%s", js ? js : ""));
    free(js);
    abx_exec_state_free(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct abx_buf a, b;
    uint32_t seed;
    long status;
    size_t qmax;
    int kind;

    if (size < 2)
        return 0;
    kind = data[0] % 3;
    status = (data[0] & 0x80) ? 401 : 200;
    qmax = qcaps[data[1] % 4];
    seed = fuzz_seed(data, size);
    abx_buf_init(&a, 0);
    abx_buf_init(&b, 0);
    if (kind == 2) {
        run_ndjson(data + 2, size - 2, status, NULL, &a);
        run_ndjson(data + 2, size - 2, status, &seed, &b);
    } else {
        abx_envd_msg_fn fn = kind ? abx_envd_watch_msg : abx_envd_proc_msg;
        run_stream(data + 2, size - 2, fn, status, qmax, NULL, &a);
        run_stream(data + 2, size - 2, fn, status, qmax, &seed, &b);
    }
    /* A failed NDJSON run may stop at a different byte; its summary up
     * to the failure still agrees except for the unparsed tail. */
    FUZZ_CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    abx_buf_free(&a);
    abx_buf_free(&b);
    return 0;
}
