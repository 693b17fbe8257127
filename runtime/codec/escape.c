#include "escape.h"

#include <stdint.h>

#include "utf8.h"

static const char hexu[] = "0123456789ABCDEF", hexl[] = "0123456789abcdef";

int abx_esc_pct(struct abx_buf *o, const void *s, size_t n, unsigned fl)
{
    const unsigned char *u = s;
    const char *hex = (fl & ABX_ESC_PCT_LOWER) ? hexl : hexu;
    char e[3] = {'%', 0, 0};
    size_t i;
    int rc = 0;

    for (i = 0; i < n && !rc; i++) {
        unsigned char c = u[i];

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
            c == '~')
            rc = abx_buf_appendc(o, (char)c);
        else if (c == ' ' && (fl & ABX_ESC_PCT_FORM))
            rc = abx_buf_appendc(o, '+');
        else {
            e[1] = hex[c >> 4];
            e[2] = hex[c & 15];
            rc = abx_buf_append(o, e, 3);
        }
    }
    return rc;
}

static int json_u(struct abx_buf *o, uint32_t c, unsigned fl)
{
    return abx_buf_appendf(o, (fl & ABX_ESC_JSON_UPPER) ? "\\u%04X" : "\\u%04x",
                           (unsigned)c);
}

int abx_esc_json(struct abx_buf *o, const void *s, size_t n, unsigned fl)
{
    const unsigned char *u = s;
    size_t i, k;
    uint32_t cp;
    int rc = 0;

    for (i = 0; i < n && !rc; i++) {
        unsigned char c = u[i];

        switch (c) {
        case '"': rc = abx_buf_append(o, "\\\"", 2); continue;
        case '\\': rc = abx_buf_append(o, "\\\\", 2); continue;
        case '\b': rc = abx_buf_append(o, "\\b", 2); continue;
        case '\f': rc = abx_buf_append(o, "\\f", 2); continue;
        case '\n': rc = abx_buf_append(o, "\\n", 2); continue;
        case '\r': rc = abx_buf_append(o, "\\r", 2); continue;
        case '\t': rc = abx_buf_append(o, "\\t", 2); continue;
        default: break;
        }
        if (c == '/' && (fl & ABX_ESC_JSON_SLASH))
            rc = abx_buf_append(o, "\\/", 2);
        else if (c < 0x20 || ((fl & ABX_ESC_JSON_HTML) &&
                              (c == '<' || c == '>' || c == '&')))
            rc = json_u(o, c, fl);
        else if (c >= 0x80 && (fl & ABX_ESC_JSON_ASCII)) {
            k = abx_utf8_decode(u + i, n - i, &cp);
            if (!k)
                return 1;
            i += k - 1;
            if (cp >= 0x10000) {
                cp -= 0x10000;
                rc = json_u(o, 0xd800 + (cp >> 10), fl) ||
                     json_u(o, 0xdc00 + (cp & 0x3ff), fl);
            } else {
                rc = json_u(o, cp, fl);
            }
        } else
            rc = abx_buf_appendc(o, (char)c);
    }
    return rc ? -1 : 0;
}

/* XML 1.0 Char production, minus DEL as pytest's bin_xml_escape does. */
static int xml_char_ok(uint32_t c)
{
    return c == 0x9 || c == 0xa || c == 0xd || (c >= 0x20 && c <= 0x7e) ||
           (c >= 0x80 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) ||
           (c >= 0x10000 && c <= 0x10ffff);
}

int abx_esc_xml(struct abx_buf *o, const void *s, size_t n, unsigned fl)
{
    const unsigned char *u = s;
    int attr = (fl & ABX_ESC_XML_ATTR) != 0;
    const char *apos = (fl & ABX_ESC_XML_APOS)       ? "&apos;"
                       : (fl & ABX_ESC_XML_APOS_NUM) ? "&#39;"
                                                     : "'";
    size_t i, k;
    uint32_t c;
    int rc = 0;

    for (i = 0; i < n && !rc; i += k) {
        k = abx_utf8_decode(u + i, n - i, &c);
        if (k == 0) {
            rc = abx_buf_appendf(o, "#x%02X", u[i]);
            k = 1;
            continue;
        }
        if (!xml_char_ok(c)) {
            rc = abx_buf_appendf(o, c <= 0xff ? "#x%02X" : "#x%04X",
                                 (unsigned)c);
            continue;
        }
        switch (c) {
        case '&': rc = abx_buf_appends(o, "&amp;"); break;
        case '<': rc = abx_buf_appends(o, "&lt;"); break;
        case '>':
            rc = abx_buf_appends(o, (fl & ABX_ESC_XML_NOGT) ? ">" : "&gt;");
            break;
        case '"':
            rc = abx_buf_appends(o,
                                 (fl & ABX_ESC_XML_NOQUOT) ? "\"" : "&quot;");
            break;
        case '\'': rc = abx_buf_appends(o, apos); break;
        case '\r': rc = abx_buf_appends(o, "&#13;"); break;
        case '\n': rc = abx_buf_appends(o, attr ? "&#10;" : "\n"); break;
        case '\t': rc = abx_buf_appends(o, attr ? "&#9;" : "\t"); break;
        default: rc = abx_buf_append(o, u + i, k); break;
        }
    }
    return rc ? -1 : 0;
}
