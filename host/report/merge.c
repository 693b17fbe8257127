/* `abx-e2e merge`: the JSON reports of `--shard K/N` runs (one per CI
 * machine) combined into one set of reports: JUnit, JSON, HTML. Each
 * test and sandbox keeps its shard; the shards' header facts are listed;
 * a missing shard, a duplicate test and a file that cannot be read are
 * reported, on the terminal and in the merged document ("merge"), and
 * fail the merge (exit 1) without losing what the other files hold. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsutil.h"
#include "optable.h"
#include "out.h"
#include "report.h"
#include "report_json.h"
#include "report_junit.h"
#include "vec.h"

#define SHARD_FILE_MAX ((size_t)1024 * 1024 * 1024)
#define SHARDS_MAX 100000L
#define DUPLICATES_SHOWN 20    /* on the terminal; the JSON has them all */

struct merge {
    const char *junitxml, *json, *html;
    int quiet;
    const char **files;
    size_t nfiles;
    long n;                     /* shards in the matrix (0 until known) */
    unsigned char *seen;        /* [n + 1]: shard k read */
    struct abx_result **results;
    size_t nresults, cap;
    int *shard_of;              /* per result */
    size_t shard_cap;
    const char **ids;           /* their node ids (take_id) */
    size_t nids, idcap;
    cJSON *sandboxes, *shards, *duplicates, *unreadable;
    cJSON *first;               /* the first document read (header) */
    double t0, t1;              /* earliest start, latest end */
    double collected;           /* the most any shard collected */
};

static double num(const cJSON *o, const char *k, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

    return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble
                                                        : def;
}

static void note_unreadable(struct merge *m, const char *path,
                            const char *why)
{
    abx_out_printf(ABX_OUT_STDERR, "merge: %s: %s\n", path, why);
    cJSON_AddItemToArray(m->unreadable, cJSON_CreateString(path));
}

/* The shard of a document: k of n (an unsharded run is 1 of 1). 0, or
 * -1 with why. */
static int shard_of(const cJSON *doc, long *k, long *n, char *why,
                    size_t whylen)
{
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(doc, "shard");

    *k = 1;
    *n = 1;
    if (!sh || cJSON_IsNull(sh))
        return 0;
    *k = (long)num(sh, "k", 0);
    *n = (long)num(sh, "n", 0);
    if (*n < 1 || *n > SHARDS_MAX || *k < 1 || *k > *n) {
        snprintf(why, whylen, "\"shard\" is not {\"k\": K, \"n\": N} with "
                 "1 <= K <= N");
        return -1;
    }
    return 0;
}

static int push_result(struct merge *m, struct abx_result *r, int k)
{
    if (ABX_VEC_RESERVE(m->results, m->cap, m->nresults + 1) != 0 ||
        ABX_VEC_RESERVE(m->shard_of, m->shard_cap, m->nresults + 1) != 0)
        return -1;
    m->shard_of[m->nresults] = k;
    m->results[m->nresults++] = r;
    return 0;
}

/* The node ids taken so far: an open-addressing set (FNV-1a), so a
 * merge of many large shards stays linear. The strings belong to the
 * results. */
static size_t id_slot(const char *const *slots, size_t cap, const char *id)
{
    uint64_t h = 1469598103934665603ull;

    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    for (size_t i = (size_t)h & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!slots[i] || strcmp(slots[i], id) == 0)
            return i;
}

/* 1 when id was taken already, else 0 (now taken); -1 out of memory. */
static int take_id(struct merge *m, const char *id)
{
    size_t i;

    if (2 * (m->nids + 1) > m->idcap) {
        size_t cap = m->idcap ? m->idcap * 2 : 1024;
        const char **slots = calloc(cap, sizeof *slots);

        if (!slots)
            return -1;
        for (i = 0; i < m->idcap; i++)
            if (m->ids[i])
                slots[id_slot(slots, cap, m->ids[i])] = m->ids[i];
        free(m->ids);
        m->ids = slots;
        m->idcap = cap;
    }
    i = id_slot(m->ids, m->idcap, id);
    if (m->ids[i])
        return 1;
    m->ids[i] = id;
    m->nids++;
    return 0;
}

/* Parses every test of a document, or none (a file is taken whole or
 * not at all). The array (NULL-terminated) or NULL with why. */
static struct abx_result **parse_tests(const cJSON *tests, char *why,
                                       size_t whylen)
{
    struct abx_result **v = calloc((size_t)cJSON_GetArraySize(tests) + 1,
                                   sizeof *v);
    const cJSON *t;
    char err[256];
    size_t n = 0;

    if (!v) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    cJSON_ArrayForEach(t, tests) {
        if (abx_result_from_json(t, &v[n], err, sizeof err) != 0) {
            snprintf(why, whylen, "test #%zu: %s", n + 1, err);
            while (n > 0)
                abx_result_free(v[--n]);
            free(v);
            return NULL;
        }
        n++;
    }
    return v;
}

/* Adds r unless its node id was taken (a duplicate: named, freed).
 * 0, or -1 out of memory (r freed). */
static int add_test(struct merge *m, const char *path, struct abx_result *r,
                    long k)
{
    int dup;

    if (push_result(m, r, (int)k) != 0) {
        abx_result_free(r);
        return -1;
    }
    dup = take_id(m, r->nodeid);
    if (dup == 0)
        return 0;
    m->nresults--;
    if (dup == 1) {
        if (cJSON_GetArraySize(m->duplicates) < DUPLICATES_SHOWN)
            abx_out_printf(ABX_OUT_STDERR, "merge: %s: %s is in an earlier "
                           "file already (kept that one)\n", path, r->nodeid);
        cJSON_AddItemToArray(m->duplicates, cJSON_CreateString(r->nodeid));
    }
    abx_result_free(r);
    return dup == 1 ? 0 : -1;
}

/* The tests and sandboxes of one shard's document. 0, or -1 (why). */
static int take_doc(struct merge *m, const char *path, const cJSON *doc,
                    long k, char *why, size_t whylen)
{
    const cJSON *tests = cJSON_GetObjectItemCaseSensitive(doc, "tests"), *t;
    const cJSON *sbx = cJSON_GetObjectItemCaseSensitive(doc, "sandboxes");
    struct abx_result **rs = parse_tests(tests, why, whylen);
    cJSON *copy, *info;
    double created = num(doc, "created", 0);
    int oom = 0;

    if (!rs)
        return -1;
    for (size_t i = 0; rs[i]; i++) {
        if (oom)
            abx_result_free(rs[i]);   /* the rest, after out of memory */
        else if (add_test(m, path, rs[i], k) != 0)
            oom = 1;
    }
    free(rs);
    if (oom) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    cJSON_ArrayForEach(t, sbx) {
        if (cJSON_IsObject(t) && (copy = cJSON_Duplicate(t, 1))) {
            cJSON_DeleteItemFromObjectCaseSensitive(copy, "shard");
            cJSON_AddNumberToObject(copy, "shard", (double)k);
            cJSON_AddItemToArray(m->sandboxes, copy);
        }
    }
    if (created > 0 && (m->t0 == 0 || created < m->t0))
        m->t0 = created;
    if (created + num(doc, "duration", 0) > m->t1)
        m->t1 = created + num(doc, "duration", 0);
    m->collected = fmax(m->collected,
                        num(cJSON_GetObjectItemCaseSensitive(doc, "summary"),
                            "collected", 0));
    info = cJSON_CreateObject();
    if (info) {
        const cJSON *rid = cJSON_GetObjectItemCaseSensitive(doc, "run_id");
        cJSON_AddNumberToObject(info, "k", (double)k);
        cJSON_AddNumberToObject(info, "n", (double)m->n);
        cJSON_AddStringToObject(info, "file", path);
        cJSON_AddStringToObject(info, "run_id", cJSON_IsString(rid)
                                                    ? rid->valuestring : "");
        cJSON_AddNumberToObject(info, "created", created);
        cJSON_AddNumberToObject(info, "duration", num(doc, "duration", 0));
        cJSON_AddNumberToObject(info, "exitcode", num(doc, "exitcode", 0));
        cJSON_AddItemToArray(m->shards, info);
    }
    return 0;
}

/* Reads one file. 0 taken or noted as unreadable, or an exit code (a
 * shard count that disagrees: the files are not one matrix). */
static int read_one(struct merge *m, const char *path)
{
    char why[512], *text = NULL;
    size_t len;
    cJSON *doc = NULL;
    long k, n;
    int rc = 0, r;

    r = abx_read_file(path, SHARD_FILE_MAX, &text, &len, why, sizeof why);
    if (r != 0) {
        note_unreadable(m, path, r == 1 ? "no such file" : why);
        goto out;
    }
    doc = cJSON_ParseWithLength(text, len);
    if (!cJSON_IsObject(doc) ||
        !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "tests"))) {
        note_unreadable(m, path, doc ? "not an abx-e2e JSON report (no "
                                       "\"tests\" list)"
                                     : "not valid JSON");
        goto out;
    }
    if (shard_of(doc, &k, &n, why, sizeof why) != 0) {
        note_unreadable(m, path, why);
        goto out;
    }
    if (m->n && n != m->n) {
        abx_cli_usage(ABX_CMD_MERGE, "%s is shard %ld/%ld, but the files before it are "
                      "of %ld shards", path, k, n, m->n);
        rc = ABX_EXIT_USAGE_ERROR;
        goto out;
    }
    if (!m->n) {
        m->n = n;
        m->seen = abx_xcalloc((size_t)n + 1, 1);
    }
    if (m->seen[k])
        abx_out_printf(ABX_OUT_STDERR, "merge: %s: shard %ld/%ld was read "
                       "already\n", path, k, n);
    if (take_doc(m, path, doc, k, why, sizeof why) != 0) {
        note_unreadable(m, path, why);   /* its shard stays missing */
        goto out;
    }
    m->seen[k] = 1;
    if (!m->first) {
        m->first = doc;
        doc = NULL;
    }
out:
    cJSON_Delete(doc);
    free(text);
    return rc;
}

static const char *str_field(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* merge's own fields of the JSON form: each test's shard, the shards,
 * the problems found (struct abx_report's extend). */
struct merge_extra {
    const struct merge *m;
    const cJSON *missing;
};

static int extend_doc(cJSON *doc, const void *ctx)
{
    const struct merge_extra *x = ctx;
    const struct merge *m = x->m;
    size_t i = 0;
    cJSON *mo, *t;

    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(doc, "tests"))
        if (!cJSON_AddNumberToObject(t, "shard", m->shard_of[i++]))
            return -1;
    if (!cJSON_AddItemReferenceToObject(doc, "shards", m->shards))
        return -1;
    mo = cJSON_AddObjectToObject(doc, "merge");
    return !mo ||
                   !cJSON_AddItemToObject(mo, "missing", cJSON_Duplicate(x->missing, 1)) ||
                   !cJSON_AddItemReferenceToObject(mo, "duplicates", m->duplicates) ||
                   !cJSON_AddItemReferenceToObject(mo, "unreadable", m->unreadable)
               ? -1 : 0;
}

/* The report document of the merged tests: what the first shard says the
 * run was, the merged results and summary. */
static void merged_report(struct abx_report *r, const struct merge *m,
                          const struct abx_summary *sum, const struct merge_extra *x)
{
    const cJSON *f = m->first, *c;
    size_t ncaps = 0;

    memset(r, 0, sizeof *r);
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(f, "capabilities"))
        if (cJSON_IsString(c) && ncaps < ABX_REPORT_MAX_CAPS)
            r->caps_store[ncaps++] = c->valuestring;
    r->caps_store[ncaps] = NULL;
    r->results = m->results;
    r->n = m->nresults;
    r->sum = sum;
    r->tool = "abx-e2e " ABX_E2E_VERSION " (merge)";
    r->run_id = str_field(f, "run_id");
    r->created = m->t0;
    r->endpoint = str_field(f, "endpoint");
    r->platform = str_field(f, "platform");
    r->capabilities = r->caps_store;
    r->local = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "local"));
    r->profile = str_field(f, "profile");
    r->workers = (int)num(f, "workers", 1);
    r->sandboxes = m->sandboxes;
    r->extend = extend_doc;
    r->ctx = x;
}

/* The shards absent from 1..n, as a JSON array (and on the terminal). */
static cJSON *find_missing(const struct merge *m)
{
    cJSON *missing = cJSON_CreateArray();

    for (long k = 1; missing && k <= m->n; k++) {
        if (m->seen[k])
            continue;
        abx_out_printf(ABX_OUT_STDERR, "merge: shard %ld/%ld is missing\n",
                       k, m->n);
        cJSON_AddItemToArray(missing, cJSON_CreateNumber((double)k));
    }
    return missing;
}

static int merge_run(struct merge *m)
{
    struct abx_summary sum;
    struct abx_report rep;
    struct merge_extra x = {m, NULL};
    cJSON *missing = NULL;
    char line[512];
    int code;

    for (size_t i = 0; i < m->nfiles; i++)
        if ((code = read_one(m, m->files[i])) != 0)
            return code;
    if (!m->first) {
        abx_out_puts(ABX_OUT_STDERR, "merge: no report could be read\n");
        return ABX_EXIT_TESTS_FAILED;
    }
    if (cJSON_GetArraySize(m->duplicates) > DUPLICATES_SHOWN)
        abx_out_printf(ABX_OUT_STDERR, "merge: %d more duplicate tests (all "
                       "listed in the merged JSON report)\n",
                       cJSON_GetArraySize(m->duplicates) - DUPLICATES_SHOWN);
    missing = find_missing(m);
    abx_summary_init(&sum);
    for (size_t i = 0; i < m->nresults; i++)
        abx_summary_add(&sum, m->results[i]);
    if (m->collected > abx_summary_total(&sum))
        sum.deselected = (unsigned)(m->collected - abx_summary_total(&sum));
    sum.duration = m->t1 > m->t0 ? m->t1 - m->t0 : 0;
    code = abx_summary_exit_code(&sum, 0);
    if (code == ABX_EXIT_OK &&
        (cJSON_GetArraySize(missing) || cJSON_GetArraySize(m->duplicates) ||
         cJSON_GetArraySize(m->unreadable)))
        code = ABX_EXIT_TESTS_FAILED;
    sum.exit_code = code;
    x.missing = missing;
    merged_report(&rep, m, &sum, &x);
    if (!missing || abx_report_write_files(&rep, m->junitxml, m->json, m->html, m->quiet) != 0)
        code = ABX_EXIT_INTERNAL_ERROR;
    abx_summary_line(&sum, line, sizeof line);
    abx_out_printf(ABX_OUT_STDOUT, "merged %zu file(s), %ld shard(s): %s\n",
                   m->nfiles, m->n, line);
    cJSON_Delete(missing);
    return code;
}

int abx_merge_main(const struct abx_config *cfg)
{
    const struct abx_opts *o = &cfg->opt;
    struct merge m;
    int code;

    memset(&m, 0, sizeof m);
    m.sandboxes = cJSON_CreateArray();
    m.shards = cJSON_CreateArray();
    m.duplicates = cJSON_CreateArray();
    m.unreadable = cJSON_CreateArray();
    m.junitxml = o->junitxml;
    m.json = o->json;
    m.html = o->html;
    m.quiet = o->quiet > 0;
    m.files = o->paths;
    m.nfiles = o->npaths;
    code = m.sandboxes && m.shards && m.duplicates && m.unreadable ? merge_run(&m)
                                                                   : ABX_EXIT_INTERNAL_ERROR;
    for (size_t i = 0; i < m.nresults; i++)
        abx_result_free(m.results[i]);
    free(m.results);
    free(m.shard_of);
    free(m.ids);
    free(m.seen);
    cJSON_Delete(m.sandboxes);
    cJSON_Delete(m.shards);
    cJSON_Delete(m.duplicates);
    cJSON_Delete(m.unreadable);
    cJSON_Delete(m.first);
    return code;
}
