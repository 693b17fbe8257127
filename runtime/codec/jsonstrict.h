/* Strict JSON for what arrives from outside (request bodies of abx-local's
 * control plane and envd): exactly one value and nothing after it but
 * whitespace, valid UTF-8, no raw control byte inside a string and no
 * \u0000 escape (C strings would end there: "ba\u0000se" must not become
 * "ba"). cJSON parses what passes. */
#ifndef ABX_JSONSTRICT_H
#define ABX_JSONSTRICT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* NULL with err naming the first problem (and its byte offset). */
cJSON *abx_json_parse_strict(const char *p, size_t n, char *err, size_t errlen);

/* s[0..n) is valid UTF-8 without NUL: what a path or a name may be. */
bool abx_text_ok(const char *s, size_t n);

#endif
