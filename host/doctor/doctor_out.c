/* `abx-e2e doctor`'s record: each finding goes both to the terminal
 * (masked, through out.c) and into the JSON record's sections. Every
 * doctor_*.c check writes through these; doctor.c runs them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_int.h"
#include "out.h"

/* ---- recording and printing ------------------------------------------ */

void abx_doc_str(cJSON *o, const char *key, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

cJSON *abx_doc_section(struct abx_doc *d, const char *key, const char *title)
{
    if (!d->json)
        abx_out_printf(ABX_OUT_STDOUT, "\n== %s ==\n", title);
    return cJSON_AddObjectToObject(d->root, key);
}

void abx_doc_line(struct abx_doc *d, const char *fmt, ...)
{
    va_list ap;

    if (d->json)
        return;
    abx_out_puts(ABX_OUT_STDOUT, "  ");
    va_start(ap, fmt);
    abx_out_vprintf(ABX_OUT_STDOUT, fmt, ap);
    va_end(ap);
    abx_out_puts(ABX_OUT_STDOUT, "\n");
}

void abx_doc_problem(struct abx_doc *d, const char *fix, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;
    cJSON *o = cJSON_CreateObject();

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    d->nproblems++;
    abx_doc_str(o, "problem", msg);
    abx_doc_str(o, "fix", fix);
    cJSON_AddItemToArray(d->problems, o);
    abx_doc_line(d, "PROBLEM: %s", msg);
}

void abx_doc_warn(struct abx_doc *d, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    d->nwarnings++;
    cJSON_AddItemToArray(d->warnings, cJSON_CreateString(msg));
    abx_doc_line(d, "WARNING: %s", msg);
}
