/* Strict JSON (jsonstrict.h): a scan for what cJSON lets through, then
 * cJSON for the grammar and the values. */
#include "jsonstrict.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

bool abx_text_ok(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = abx_utf8_decode(u + i, n - i, &cp);
        if (k == 0 || cp == 0)
            return false;
        i += k;
    }
    return true;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The byte offset of the first thing refused, with why; -1 when none. */
static long scan(const unsigned char *p, size_t n, const char **why)
{
    bool in_str = false;
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c >= 0x80) {
            uint32_t cp;
            size_t k = abx_utf8_decode(p + i, n - i, &cp);
            if (k == 0) {
                *why = "invalid UTF-8";
                return (long)i;
            }
            i += k;
            continue;
        }
        if (c < 0x20 && (in_str || (c != ' ' && c != '\t' && c != '\n' && c != '\r'))) {
            *why = c == 0 ? "a NUL byte" : "a raw control character";
            return (long)i;
        }
        if (c == '"') {
            in_str = !in_str;
        } else if (in_str && c == '\\' && i + 1 < n) {
            if (p[i + 1] == 'u' && i + 5 < n) {
                int v = 0;
                for (size_t k = 2; k < 6; k++) {
                    int h = hexval(p[i + k]);
                    v = h < 0 ? -1 : v < 0 ? -1 : v * 16 + h;
                }
                if (v == 0) {
                    *why = "a \\u0000 escape";
                    return (long)i;
                }
            }
            i += 2;   /* the escaped character cannot end the string */
            continue;
        }
        i++;
    }
    return -1;
}

cJSON *abx_json_parse_strict(const char *p, size_t n, char *err, size_t errlen)
{
    const char *why = NULL;
    long at = scan((const unsigned char *)p, n, &why);
    if (at >= 0) {
        snprintf(err, errlen, "malformed JSON: %s at byte %ld", why, at);
        return NULL;
    }
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(p, n, &end, false);
    if (v == NULL) {
        const char *e = cJSON_GetErrorPtr();
        long off = e && e >= p && e <= p + n ? (long)(e - p) : 0;
        snprintf(err, errlen, "malformed JSON at byte %ld", off);
        return NULL;
    }
    size_t used = end ? (size_t)(end - p) : n;
    while (used < n && strchr(" \t\r\n", p[used]) != NULL)
        used++;
    if (used < n) {
        cJSON_Delete(v);
        snprintf(err, errlen, "malformed JSON: data after the value at byte %zu", used);
        return NULL;
    }
    return v;
}
