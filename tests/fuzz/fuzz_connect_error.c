/* Connect error bodies: abx_connect_parse_error and
 * abx_connect_parse_end_stream on arbitrary bytes. Input: byte 0 picks
 * the HTTP status, byte 1 the message buffer size (exact-size heap
 * buffers, so ASan sees any overrun), the rest is the body. */
#include <string.h>

#include "connect.h"
#include "fuzz.h"

static const int statuses[] = {
    0, 200, 400, 401, 403, 404, 409, 413, 429, 499, 500, 501, 502, 503,
    504, 505, 418, -1, 999, 2147483647,
};

/* msg must be a C string inside its buffer. */
static void check_msg(const char *msg, size_t msglen)
{
    if (msglen)
        FUZZ_CHECK(memchr(msg, '\0', msglen) != NULL);
}

static void check_code(enum abx_connect_code code)
{
    FUZZ_CHECK((int)code >= ABX_CONNECT_OK &&
               (int)code <= ABX_CONNECT_UNAUTHENTICATED);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum abx_connect_code code;
    const char *body;
    size_t len, msglen;
    char *msg;
    int status, rc;

    if (size < 2)
        return 0;
    status = statuses[data[0] % (sizeof statuses / sizeof statuses[0])];
    msglen = data[1];
    body = (const char *)data + 2;
    len = size - 2;
    msg = malloc(msglen ? msglen : 1);
    if (!msg)
        return 0;

    code = (enum abx_connect_code)-7;
    abx_connect_parse_error(body, len, status, &code, msg, msglen);
    check_code(code);
    /* Unary errors never decode to OK: the response was an error. */
    FUZZ_CHECK(code != ABX_CONNECT_OK);
    check_msg(msg, msglen);
    /* The code maps back to some HTTP status (section 5.2 table). */
    FUZZ_CHECK(abx_connect_code_http_status(code) >= 200);

    code = (enum abx_connect_code)-7;
    rc = abx_connect_parse_end_stream(body, len, &code, msg, msglen);
    check_code(code);
    check_msg(msg, msglen);
    FUZZ_CHECK(rc == 0 || rc == -1);
    if (rc < 0)
        FUZZ_CHECK(code == ABX_CONNECT_UNKNOWN);
    if (rc < 0 && msglen > 1)
        FUZZ_CHECK(msg[0] != '\0');

    /* A name round-trips through the code tables. */
    if (code != ABX_CONNECT_OK)
        FUZZ_CHECK(abx_connect_code_from_name(abx_connect_code_name(code)) ==
                   (int)code);
    free(msg);
    return 0;
}
