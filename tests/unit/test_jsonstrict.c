/* Strict JSON (runtime/codec/jsonstrict.h): what arrives from outside is
 * one value, valid UTF-8, with no NUL to cut a C string short. */
#include <string.h>

#include "check.h"
#include "jsonstrict.h"

static void refused(const char *what, const char *text, size_t n, const char *why)
{
    char err[128] = "";
    cJSON *v = abx_json_parse_strict(text, n, err, sizeof err);

    CHECK_MSG(v == NULL, "%s: accepted", what);
    CHECK_MSG(strstr(err, why) != NULL, "%s: error \"%s\" lacks \"%s\"", what, err, why);
    cJSON_Delete(v);
}

static void accepted(const char *what, const char *text)
{
    char err[128] = "";
    cJSON *v = abx_json_parse_strict(text, strlen(text), err, sizeof err);

    CHECK_MSG(v != NULL, "%s: refused (%s)", what, err);
    cJSON_Delete(v);
}

int main(void)
{
    static const char nul[] = "{\"a\": \"b\"}\0";

    accepted("an object", "{\"templateID\": \"base\", \"n\": [1, 2.5, true, null]}");
    accepted("whitespace after", "{\"a\": 1} \r\n\t");
    accepted("UTF-8 and escapes", "{\"k\": \"caf\xc3\xa9 \\u00e9 \\\\u0000 \\\"\\n\"}");
    accepted("a \\u0000 that is text", "{\"k\": \"\\\\u0000\"}");
    refused("data after the value", "{\"a\": 1} x", 10, "data after the value at byte 9");
    refused("a second value", "{\"a\": 1}{\"b\": 2}", 16, "data after the value");
    refused("a raw NUL after it", nul, sizeof nul - 1, "NUL byte at byte 10");
    refused("a raw NUL inside", "{\"a\": \"b\0c\"}", 12, "NUL byte at byte 8");
    refused("\\u0000", "{\"a\": \"ba\\u0000se\"}", 19, "\\u0000 escape at byte 9");
    refused("\\u0000 upper case", "{\"a\": \"\\U0000\"}", 15, "malformed JSON");
    refused("a raw control byte", "{\"a\": \"x\x01y\"}", 12, "raw control character");
    refused("a raw tab in a string", "{\"a\": \"x\ty\"}", 12, "raw control character");
    refused("invalid UTF-8", "{\"a\": \"\xff\"}", 10, "invalid UTF-8 at byte 7");
    refused("an overlong form", "{\"a\": \"\xc0\xaf\"}", 11, "invalid UTF-8");
    refused("a surrogate", "{\"a\": \"\xed\xa0\x80\"}", 12, "invalid UTF-8");
    refused("not JSON", "{\"a\": ", 6, "malformed JSON at byte");
    refused("empty", "", 0, "malformed JSON");
    CHECK(abx_text_ok("/tmp/caf\xc3\xa9", 10));
    CHECK(!abx_text_ok("/etc/passwd\0.txt", 16));
    CHECK(!abx_text_ok("/tmp/\xff", 6));
    return CHECK_DONE();
}
