/* JSON parsed with cJSON, integers exact: cJSON keeps a number only as a
 * double, which rounds every integer beyond 2^53 (an id of 2^60 + 1 would
 * reach Lua as 2^60). abx_json_parse keeps such an integer's literal in
 * its node's valuestring (a number node has none otherwise, and
 * cJSON_Delete and cJSON_Duplicate handle it as for a string), matched
 * by order: the text's number tokens and the tree's number nodes come in
 * the same document order. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"

#define EXACT_LIMIT 9007199254740992.0   /* 2^53: doubles are exact below */

/* The next number token of text at or after *pos (strings skipped);
 * *start and *len set; 0, or -1 when there is none. */
static int next_number(const char *s, size_t n, size_t *pos, size_t *start, size_t *len)
{
    size_t i = *pos;

    while (i < n) {
        char c = s[i];

        if (c == '"') {   /* a string: to its closing quote */
            for (i++; i < n && s[i] != '"'; i++)
                if (s[i] == '\\')
                    i++;
            i++;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t j = i + 1;
            while (j < n && strchr("0123456789+-.eE", s[j]) && s[j] != '\0')
                j++;
            *start = i;
            *len = j - i;
            *pos = j;
            return 0;
        } else {
            i++;
        }
    }
    *pos = n;
    return -1;
}

/* Walks v in document order; each number node takes the next number
 * token. -1 when the two disagree (then nothing more is marked). */
static int mark(cJSON *v, const char *s, size_t n, size_t *pos)
{
    for (; v; v = v->next) {
        if (cJSON_IsNumber(v)) {
            size_t at, len;

            if (next_number(s, n, pos, &at, &len) != 0)
                return -1;
            /* an integer literal beyond what the double keeps exactly
             * (the text need not end in a NUL: bounded by len) */
            if (!memchr(s + at, '.', len) && !memchr(s + at, 'e', len) &&
                !memchr(s + at, 'E', len) && len < 32 &&
                (v->valuedouble >= EXACT_LIMIT || v->valuedouble <= -EXACT_LIMIT)) {
                v->valuestring = malloc(len + 1);
                if (!v->valuestring)
                    return -1;
                memcpy(v->valuestring, s + at, len);
                v->valuestring[len] = '\0';
            }
        } else if ((cJSON_IsArray(v) || cJSON_IsObject(v)) &&
                   mark(v->child, s, n, pos) != 0) {
            return -1;
        }
    }
    return 0;
}

cJSON *abx_json_parse(const char *text, size_t len)
{
    cJSON *doc = cJSON_ParseWithLength(text, len);
    size_t pos = 0;

    if (doc)
        mark(doc, text, len, &pos);
    return doc;
}

int abx_json_exact_int(const cJSON *v, long long *out)
{
    char *end;

    if (!cJSON_IsNumber(v) || !v->valuestring)
        return -1;
    errno = 0;
    *out = strtoll(v->valuestring, &end, 10);
    return errno || *end ? -1 : 0;
}
