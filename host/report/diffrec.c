/* abx-e2e diff-records A B: two runs of the same tests, each recorded with
 * --record, compared test by test (docs/reports.md "Comparing two
 * platforms"). What is compared is in diffrec_cmp.c. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optable.h"
#include "out.h"
#include "report.h"
#include "vec.h"

#define FILE_MAX ((size_t)64 << 20)

struct rec {
    char *nodeid;
    cJSON *evs;   /* the events, header left out */
};

struct side {
    const char *dir;
    struct rec *v;
    size_t n, cap;
};

static int by_nodeid(const void *a, const void *b)
{
    return strcmp(((const struct rec *)a)->nodeid, ((const struct rec *)b)->nodeid);
}

/* One trace file into s; 0, or -1 with err (not a trace). */
static int load_file(struct side *s, const char *path, char *err, size_t errlen)
{
    char *id = NULL;
    cJSON *evs = abx_traces_read(path, FILE_MAX, 1, &id, err, errlen);
    if (evs == NULL)
        return -1;
    if (ABX_VEC_RESERVE(s->v, s->cap, s->n + 1) != 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        free(id);
        cJSON_Delete(evs);
        return -1;
    }
    s->v[s->n].nodeid = id;
    s->v[s->n++].evs = evs;
    return 0;
}

static int load_side(struct side *s, char *err, size_t errlen)
{
    DIR *d = opendir(s->dir);
    int rc = 0;

    if (d == NULL) {
        snprintf(err, errlen, "cannot read the folder %s: %s", s->dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        char path[4200];
        if (!abx_traces_is_file(e->d_name))
            continue;
        snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
        rc = load_file(s, path, err, errlen);
    }
    closedir(d);
    if (rc == 0 && s->n == 0) {
        snprintf(err, errlen, "%s holds no trace (*%s): record a run with --record %s",
                 s->dir, ABX_TRACE_SUFFIX, s->dir);
        rc = -1;
    }
    if (s->n)
        qsort(s->v, s->n, sizeof *s->v, by_nodeid);
    return rc;
}

static void free_side(struct side *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].nodeid);
        cJSON_Delete(s->v[i].evs);
    }
    free(s->v);
}

static void print_value(const cJSON *v, char *out, size_t outlen)
{
    if (cJSON_IsString(v))
        snprintf(out, outlen, "%s", v->valuestring);
    else if (cJSON_IsNumber(v))
        snprintf(out, outlen, "%g", v->valuedouble);
    else
        snprintf(out, outlen, "?");
}

static void print_test(const char *nodeid, const cJSON *diffs)
{
    const cJSON *d;
    abx_out_printf(ABX_OUT_STDOUT, "%s\n", nodeid);
    cJSON_ArrayForEach(d, diffs) {
        char a[256], b[256];
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(d, "at");
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(d, "field");
        print_value(cJSON_GetObjectItemCaseSensitive(d, "a"), a, sizeof a);
        print_value(cJSON_GetObjectItemCaseSensitive(d, "b"), b, sizeof b);
        if (cJSON_IsString(at) && cJSON_IsString(f) && strcmp(at->valuestring, f->valuestring))
            abx_out_printf(ABX_OUT_STDOUT, "  %s: %s: %s | %s\n", at->valuestring,
                           f->valuestring, a, b);
        else
            abx_out_printf(ABX_OUT_STDOUT, "  %s: %s | %s\n",
                           cJSON_IsString(f) ? f->valuestring : "?", a, b);
    }
}

static cJSON *compare(const struct side *a, const struct side *b, int quiet, size_t *ndiff)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON *tests = cJSON_AddArrayToObject(doc, "tests");
    cJSON *only_a = cJSON_AddArrayToObject(doc, "only_a");
    cJSON *only_b = cJSON_AddArrayToObject(doc, "only_b");
    size_t i = 0, j = 0;

    cJSON_AddStringToObject(doc, "a", a->dir);
    cJSON_AddStringToObject(doc, "b", b->dir);
    *ndiff = 0;
    while (i < a->n || j < b->n) {
        int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->v[i].nodeid, b->v[j].nodeid);
        if (c < 0) {
            cJSON_AddItemToArray(only_a, cJSON_CreateString(a->v[i++].nodeid));
            continue;
        }
        if (c > 0) {
            cJSON_AddItemToArray(only_b, cJSON_CreateString(b->v[j++].nodeid));
            continue;
        }
        cJSON *d = abx_diffrec_compare(a->v[i].evs, b->v[j].evs);
        if (d && cJSON_GetArraySize(d) > 0) {
            cJSON *t = cJSON_CreateObject();
            cJSON_AddStringToObject(t, "nodeid", a->v[i].nodeid);
            if (!quiet)
                print_test(a->v[i].nodeid, d);
            cJSON_AddItemToObject(t, "differences", d);
            cJSON_AddItemToArray(tests, t);
            (*ndiff)++;
        } else {
            cJSON_Delete(d);
        }
        i++, j++;
    }
    const cJSON *o;
    if (!quiet) {
        cJSON_ArrayForEach(o, only_a)
            abx_out_printf(ABX_OUT_STDOUT, "only in %s: %s\n", a->dir, o->valuestring);
        cJSON_ArrayForEach(o, only_b)
            abx_out_printf(ABX_OUT_STDOUT, "only in %s: %s\n", b->dir, o->valuestring);
    }
    return doc;
}

int abx_diffrec_main(const struct abx_config *cfg)
{
    const struct abx_opts *o = &cfg->opt;
    struct side a = {0}, b = {0};
    const char *json = o->json;
    int quiet = o->quiet > 0, rc = ABX_EXIT_USAGE_ERROR;
    char err[8192];
    cJSON *doc = NULL;

    a.dir = o->paths[0];
    b.dir = o->paths[1];
    if (load_side(&a, err, sizeof err) != 0 || load_side(&b, err, sizeof err) != 0) {
        abx_cli_usage(ABX_CMD_DIFF, "%s", err);
        goto out;
    }
    size_t ndiff;
    doc = compare(&a, &b, quiet, &ndiff);
    size_t oa = (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "only_a"));
    size_t ob = (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "only_b"));
    if (json) {
        char *text = cJSON_Print(doc);
        if (text == NULL || abx_out_write_file_atomic(json, text, strlen(text), err,
                                                      sizeof err) != 0) {
            abx_out_printf(ABX_OUT_STDERR, "ERROR: diff-records: %s\n",
                           text ? err : "out of memory");
            free(text);
            rc = ABX_EXIT_INTERNAL_ERROR;
            goto out;
        }
        free(text);
    }
    abx_out_printf(ABX_OUT_STDOUT, "diff-records: %zu of %zu tests differ, %zu only in %s, "
                   "%zu only in %s\n", ndiff, a.n - oa, oa, a.dir, ob, b.dir);
    rc = ndiff || oa || ob ? ABX_EXIT_TESTS_FAILED : ABX_EXIT_OK;
out:
    cJSON_Delete(doc);
    free_side(&a);
    free_side(&b);
    return rc;
}
