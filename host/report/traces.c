/* The --output folder of a run's traces (docs/reports.md "Traces"). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "report.h"

int abx_traces_is_file(const char *name)
{
    size_t n = strlen(name), sl = strlen(ABX_TRACE_SUFFIX);
    return n > sl && strcmp(name + n - sl, ABX_TRACE_SUFFIX) == 0;
}

/* A run's traces are its own: the *.trace.jsonl files an earlier run left
 * in dir go (nothing else there is touched), so --record DIR holds one
 * run and a retained trace is never an old one. */
int abx_traces_prepare(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    int rc = 0;

    if (stat(dir, &st) != 0)
        return 0;   /* made when the first trace is written */
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "--output %s is not a folder", dir);
        return -1;
    }
    DIR *d = opendir(dir);
    if (d == NULL) {
        snprintf(err, errlen, "--output %s: %s", dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[4200];
        if (!abx_traces_is_file(e->d_name))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0 && errno != ENOENT) {
            snprintf(err, errlen, "--output %s: cannot remove an earlier trace %s: %s", dir,
                     e->d_name, strerror(errno));
            rc = -1;
            break;
        }
    }
    closedir(d);
    return rc;
}

#define TRACE_READ_MAX ((size_t)2 << 20)    /* one trace file, read back */
#define TRACES_HTML_MAX ((size_t)32 << 20)  /* all of a page's traces */

static int shows_trace(const cJSON *t)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(t, "outcome");
    const char *s = cJSON_IsString(o) ? o->valuestring : "";
    return strcmp(s, "failed") == 0 || strcmp(s, "error") == 0 || strcmp(s, "flaky") == 0 ||
           cJSON_IsString(cJSON_GetObjectItemCaseSensitive(t, "teardown_message"));
}

cJSON *abx_traces_read(const char *path, size_t max, int strict, char **nodeid, char *err,
                       size_t errlen)
{
    char *data = NULL, ferr[256];
    size_t len = 0, line = 0;
    cJSON *evs = cJSON_CreateArray(), *head = NULL;

    if (evs == NULL || abx_read_file(path, max, &data, &len, ferr, sizeof ferr) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, evs ? ferr : "out of memory");
        goto fail;
    }
    for (char *p = data, *nl; p < data + len; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(data + len - p));
        line++;
        if (nl == NULL && !strict)
            break;   /* a last line without its end: cut short, left out */
        if (nl == NULL)
            nl = data + len;
        cJSON *ev = cJSON_ParseWithLength(p, (size_t)(nl - p));
        if (!cJSON_IsObject(ev)) {
            cJSON_Delete(ev);
            if (!strict)
                continue;
            snprintf(err, errlen, "%s: line %zu is not a JSON object: not a trace", path, line);
            goto fail;
        }
        if (head == NULL)
            head = ev;
        else
            cJSON_AddItemToArray(evs, ev);
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(head, "nodeid");
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(head, "ev");
    if (!cJSON_IsString(ev) || strcmp(ev->valuestring, "trace") != 0 || !cJSON_IsString(id)) {
        snprintf(err, errlen, "%s: no trace header (format in docs/reports.md)", path);
        goto fail;
    }
    if (nodeid && (*nodeid = strdup(id->valuestring)) == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    cJSON_Delete(head);
    free(data);
    return evs;
fail:
    cJSON_Delete(head);
    cJSON_Delete(evs);
    free(data);
    return NULL;
}

cJSON *abx_traces_for_html(const cJSON *doc)
{
    const cJSON *tests = cJSON_GetObjectItemCaseSensitive(doc, "tests"), *t;
    size_t used = 0;
    int any = 0;
    cJSON_ArrayForEach(t, tests)
        any |= cJSON_IsString(cJSON_GetObjectItemCaseSensitive(t, "trace")) && shows_trace(t);
    if (!any)
        return NULL;
    cJSON *copy = cJSON_Duplicate(doc, 1);
    cJSON *ct, *ctests = cJSON_GetObjectItemCaseSensitive(copy, "tests");
    cJSON_ArrayForEach(ct, ctests) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(ct, "trace");
        if (!cJSON_IsString(p) || !shows_trace(ct) || used > TRACES_HTML_MAX)
            continue;
        char err[512];
        struct stat st;
        cJSON *evs = abx_traces_read(p->valuestring, TRACE_READ_MAX, 0, NULL, err, sizeof err);
        if (evs)
            cJSON_AddItemToObject(ct, "trace_events", evs);
        used += stat(p->valuestring, &st) == 0 ? (size_t)st.st_size : 0;
    }
    return copy;
}
