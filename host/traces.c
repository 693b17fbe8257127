/* The --output folder of a run's traces (docs/reports.md "Traces"). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "host.h"

/* A run's traces are its own: the *.trace.jsonl files an earlier run left
 * in dir go (nothing else there is touched), so --record DIR holds one
 * run and a retained trace is never an old one. */
int abx_traces_prepare(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    size_t sl = strlen(ABX_TRACE_SUFFIX);
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
        size_t n = strlen(e->d_name);
        char path[4200];
        if (n <= sl || strcmp(e->d_name + n - sl, ABX_TRACE_SUFFIX) != 0)
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

/* The lines of a trace file as an array of events; NULL if unreadable. */
static cJSON *read_trace(const char *path, size_t *used)
{
    char *data = NULL;
    size_t len = 0;
    char err[256];
    if (abx_read_file(path, TRACE_READ_MAX, &data, &len, err, sizeof err) != 0)
        return NULL;
    cJSON *a = cJSON_CreateArray();
    for (char *p = data, *nl; a && p < data + len; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(data + len - p));
        if (nl == NULL)
            break;   /* a last line without its end: cut short, left out */
        cJSON *ev = cJSON_ParseWithLength(p, (size_t)(nl - p));
        if (cJSON_IsObject(ev))
            cJSON_AddItemToArray(a, ev);
        else
            cJSON_Delete(ev);
    }
    free(data);
    *used += len;
    return a;
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
        cJSON *evs = read_trace(p->valuestring, &used);
        if (evs)
            cJSON_AddItemToObject(ct, "trace_events", evs);
    }
    return copy;
}
