/* Error classes and the status/code -> class mappings of errclass.h. */
#include "errclass.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A server's text inside our message: enough to diagnose, never a
 * whole page of HTML. */
#define BODY_CAP 300

const char *abx_errclass_name(enum abx_errclass c)
{
    switch (c) {
    case ABX_E_OK: return "OK";
    case ABX_E_AUTH: return "Authentication";
    case ABX_E_NOT_FOUND: return "NotFound";
    case ABX_E_RATE_LIMIT: return "RateLimit";
    case ABX_E_TIMEOUT: return "Timeout";
    case ABX_E_INVALID: return "InvalidArgument";
    case ABX_E_NO_SPACE: return "NotEnoughSpace";
    case ABX_E_SANDBOX: return "Sandbox";
    case ABX_E_CONNECTION: return "Connection";
    case ABX_E_PROTOCOL: return "Protocol";
    case ABX_E_CANCELED: return "Canceled";
    case ABX_E_TEMPLATE: return "Template";
    }
    return "Sandbox";
}

void abx_err_clear(struct abx_err *e)
{
    e->cls = ABX_E_OK;
    e->status = 0;
    e->code[0] = '\0';
    e->message[0] = '\0';
    e->body_code = 0;
}

/* Copies at most cap bytes of s into out (size outlen), control bytes
 * turned into spaces, never ending inside a UTF-8 sequence; "..." marks
 * a cut. Server text may hold anything; our messages are one line. */
static void clean_copy(char *out, size_t outlen, const char *s, size_t n,
                       size_t cap)
{
    size_t lim = n, o = 0;
    int cut = 0;

    if (outlen < 8) {
        if (outlen)
            out[0] = '\0';
        return;
    }
    if (lim > cap) {
        lim = cap;
        cut = 1;
    }
    if (lim > outlen - 4) {
        lim = outlen - 4;
        cut = 1;
    }
    /* Back off to a sequence start so the cut leaves valid UTF-8. */
    if (cut)
        while (lim > 0 && ((unsigned char)s[lim] & 0xC0) == 0x80)
            lim--;
    for (size_t i = 0; i < lim; i++) {
        unsigned char c = (unsigned char)s[i];
        out[o++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
    }
    while (o > 0 && out[o - 1] == ' ')
        o--;
    if (cut) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

void abx_err_set(struct abx_err *e, enum abx_errclass c, long status,
                 const char *code, const char *fmt, ...)
{
    char tmp[sizeof e->message];
    va_list ap;

    e->cls = c;
    e->status = status;
    e->body_code = 0;
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    clean_copy(e->message, sizeof e->message, tmp, strlen(tmp),
               sizeof e->message);
}

/* The readable part of an error body: its "message" string, else the
 * text itself; plus "error_code" when the API gives one. */
static void body_message(const char *body, size_t len, long status,
                         char *msg, size_t msglen, char *code, size_t codelen,
                         long *body_code)
{
    cJSON *o = (body && len) ? cJSON_ParseWithLength(body, len) : NULL;
    const cJSON *m = cJSON_IsObject(o)
                         ? cJSON_GetObjectItemCaseSensitive(o, "message")
                         : NULL;
    const cJSON *ec = cJSON_IsObject(o)
                          ? cJSON_GetObjectItemCaseSensitive(o, "error_code")
                          : NULL;

    if (code && codelen)
        code[0] = '\0';
    if (cJSON_IsString(m) && m->valuestring[0])
        clean_copy(msg, msglen, m->valuestring, strlen(m->valuestring),
                   BODY_CAP);
    else if (body && len)
        clean_copy(msg, msglen, body, len, BODY_CAP);
    else
        snprintf(msg, msglen, "HTTP status %ld", status);
    if (body_code) {
        const cJSON *bc = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "code") : NULL;
        double d = cJSON_IsNumber(bc) ? bc->valuedouble : 0;
        *body_code = d >= 1 && d <= 999 && d == (double)(long)d ? (long)d : 0;
    }
    if (code && cJSON_IsString(ec))
        clean_copy(code, codelen, ec->valuestring, strlen(ec->valuestring),
                   codelen);
    cJSON_Delete(o);
}

static void set_with_what(struct abx_err *e, enum abx_errclass c,
                          long status, const char *code, const char *what,
                          const char *text)
{
    if (what && what[0])
        abx_err_set(e, c, status, code, "%s: %s", what, text);
    else
        abx_err_set(e, c, status, code, "%s", text);
}

void abx_err_from_api(struct abx_err *e, const char *what, long status,
                      const char *body, size_t len)
{
    char msg[BODY_CAP + 8], code[sizeof e->code], text[BODY_CAP + 32];
    enum abx_errclass c;
    long body_code;

    body_message(body, len, status, msg, sizeof msg, code, sizeof code, &body_code);
    switch (status) {
    case 400: c = ABX_E_INVALID; break;
    case 401: c = ABX_E_AUTH; break;
    case 404: c = ABX_E_NOT_FOUND; break;
    case 429: c = ABX_E_RATE_LIMIT; break;
    default: c = ABX_E_SANDBOX; break;
    }
    snprintf(text, sizeof text, "%ld: %s", status, msg);
    set_with_what(e, c, status, code, what, text);
    e->body_code = body_code;
}

void abx_err_from_envd_http(struct abx_err *e, const char *what,
                            long status, const char *body, size_t len)
{
    char msg[BODY_CAP + 8], text[BODY_CAP + 96];
    enum abx_errclass c;

    body_message(body, len, status, msg, sizeof msg, NULL, 0, NULL);
    switch (status) {
    case 400: c = ABX_E_INVALID; break;
    case 401: c = ABX_E_AUTH; break;
    case 404: c = ABX_E_NOT_FOUND; break;
    case 429: c = ABX_E_RATE_LIMIT; break;
    case 502: c = ABX_E_TIMEOUT; break;
    case 507: c = ABX_E_NO_SPACE; break;
    default: c = ABX_E_SANDBOX; break;
    }
    if (status == 502)
        snprintf(text, sizeof text,
                 "502: %s (the sandbox is probably not running)", msg);
    else
        snprintf(text, sizeof text, "%ld: %s", status, msg);
    set_with_what(e, c, status, "", what, text);
}

void abx_err_from_connect(struct abx_err *e, const char *what,
                          enum abx_connect_code code, const char *message,
                          long status)
{
    const char *name = abx_connect_code_name(code);
    char msg[BODY_CAP + 8], text[BODY_CAP + 64];
    enum abx_errclass c;

    if (name == NULL)
        name = "unknown";
    switch (code) {
    case ABX_CONNECT_INVALID_ARGUMENT: c = ABX_E_INVALID; break;
    case ABX_CONNECT_UNAUTHENTICATED: c = ABX_E_AUTH; break;
    case ABX_CONNECT_NOT_FOUND: c = ABX_E_NOT_FOUND; break;
    case ABX_CONNECT_UNAVAILABLE:
    case ABX_CONNECT_CANCELED:
    case ABX_CONNECT_DEADLINE_EXCEEDED: c = ABX_E_TIMEOUT; break;
    case ABX_CONNECT_RESOURCE_EXHAUSTED: c = ABX_E_RATE_LIMIT; break;
    default: c = ABX_E_SANDBOX; break;
    }
    if (message && message[0])
        clean_copy(msg, sizeof msg, message, strlen(message), BODY_CAP);
    else
        msg[0] = '\0';
    if (msg[0])
        snprintf(text, sizeof text, "%s: %s", name, msg);
    else
        snprintf(text, sizeof text, "%s", name);
    set_with_what(e, c, status, name, what, text);
}
