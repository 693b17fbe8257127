/* Text encodings a value can take on its way out: percent-encoding, JSON
 * string escaping, XML escaping. The masker derives secret forms with
 * these, and the report writers use the same functions, so the form a
 * report writes is by construction a form the masker knows. */
#ifndef ABX_ESCAPE_H
#define ABX_ESCAPE_H

#include <stddef.h>

#include "buf.h"

/* Percent-encoding: every byte but RFC 3986 unreserved (A-Z a-z 0-9
 * - . _ ~) as %XX. */
#define ABX_ESC_PCT_LOWER 0x1  /* %2f rather than %2F */
#define ABX_ESC_PCT_FORM  0x2  /* ' ' as '+' (x-www-form-urlencoded) */
int abx_esc_pct(struct abx_buf *o, const void *s, size_t n, unsigned fl);

/* JSON string body (no quotes): \" \\ \b \f \n \r \t, \u00xx for other
 * control bytes (cJSON's output with fl == 0). */
#define ABX_ESC_JSON_SLASH 0x1  /* '/' as "\/" */
#define ABX_ESC_JSON_UPPER 0x2  /* \u001F rather than \u001f */
#define ABX_ESC_JSON_ASCII 0x4  /* non-ASCII as \uXXXX (Python) */
#define ABX_ESC_JSON_HTML  0x8  /* < > & as \u003c... (Go) */
#define ABX_ESC_JSON_ALL   0xf  /* all flag combinations are < 16 */
/* Returns 0, -1 (buffer full), or 1 when ABX_ESC_JSON_ASCII is asked
 * for and s is not valid UTF-8 (o then holds a partial result). */
int abx_esc_json(struct abx_buf *o, const void *s, size_t n, unsigned fl);

/* XML 1.0 text or attribute value. & < > " are escaped as entities;
 * characters XML 1.0 forbids (and DEL) and invalid UTF-8 bytes become
 * the visible text "#xNN" / "#xNNNN" as pytest's bin_xml_escape does;
 * '\r' is "&#13;" so it survives parsing. */
#define ABX_ESC_XML_ATTR     0x1   /* '\n' '\t' as &#10; &#9; too */
#define ABX_ESC_XML_NOQUOT   0x2   /* leave '"' (ElementTree text) */
#define ABX_ESC_XML_NOGT     0x4   /* leave '>' */
#define ABX_ESC_XML_APOS     0x8   /* '\'' as &apos; */
#define ABX_ESC_XML_APOS_NUM 0x10  /* '\'' as &#39; (Python html.escape) */
#define ABX_ESC_XML_ALL      0x1f
int abx_esc_xml(struct abx_buf *o, const void *s, size_t n, unsigned fl);

#endif
