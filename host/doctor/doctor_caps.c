/* `abx-e2e doctor`: the "capabilities" section. The platform kind and the
 * capability set the suite will use (declared, never probed:
 * docs/capabilities.md), and which collected tests that set skips, by
 * capability; also the tests that need the server template when it is
 * missing. Collection is the suite's own (tests-lua/, as a run finds it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caps.h"
#include "doctor_int.h"
#include "fsutil.h"
#include "out.h"
#include "run.h"

/* A file whose tests ask for the server_sandbox fixture: all of them need
 * E2E_SERVER_TEMPLATE (the fixture is per file). */
static int uses_server_sandbox(const char *path)
{
    char *text = NULL, err[256];
    size_t len = 0;
    int hit;

    if (abx_read_file(path, 4u << 20, &text, &len, err, sizeof err) != 0)
        return 0;
    hit = strstr(text, "server_sandbox") != NULL;
    free(text);
    return hit;
}

/* 1 if item needs a capability absent from caps; adds its node id to
 * that capability's list (skips[cap]). */
static int skipped_by_caps(const struct abx_item *it, unsigned caps,
                           cJSON *const *skips)
{
    int any = 0;
    size_t i;

    for (i = 0; i < it->requires.n; i++) {
        const char *name = it->requires.items[i];
        int cap = abx_cap_lookup(name, strlen(name));

        if (cap < 0 || (caps & (1u << cap)))
            continue;
        cJSON_AddItemToArray(skips[cap], cJSON_CreateString(it->nodeid));
        any = 1;
    }
    return any;
}

static void print_ids(struct abx_doc *d, const cJSON *ids)
{
    const cJSON *id;

    cJSON_ArrayForEach(id, ids)
    {
        abx_doc_line(d, "    - %s", id->valuestring);
    }
}

/* Collects the suite and lists what the set (and a missing server
 * template) skips. */
static void skipped_tests(struct abx_doc *d, cJSON *sec, cJSON *const *skips)
{
    const struct abx_env *e = d->env;
    struct abx_collection c;
    char err[2048];
    size_t i, k, total = 0, nskip = 0, broken = 0;
    cJSON *srv = cJSON_AddArrayToObject(sec, "serverTemplateSkips");
    int rc;

    rc = abx_collect(d->cfg, &c, err, sizeof err);
    if (rc != 0) {
        abx_doc_str(sec, "collectError", rc == -2 ? "interrupted" : err);
        abx_doc_line(d, "tests skipped: unknown (collection failed: %s)",
                     rc == -2 ? "interrupted" : err);
        goto out;
    }
    for (i = 0; i < c.n; i++) {
        const struct abx_file *f = &c.files[i];
        int server =
            d->server == ABX_DOC_MISSING && uses_server_sandbox(f->path);

        broken += f->collect_error != NULL;
        for (k = 0; k < f->n; k++) {
            total++;
            nskip += skipped_by_caps(&f->items[k], e->caps, skips);
            if (server)
                cJSON_AddItemToArray(srv,
                                     cJSON_CreateString(f->items[k].nodeid));
        }
    }
    cJSON_AddNumberToObject(sec, "collected", (double)total);
    cJSON_AddNumberToObject(sec, "skippedByCaps", (double)nskip);
    abx_doc_line(d, "tests skipped by this set: %zu of %zu collected", nskip,
                 total);
    for (i = 0; i < ABX_CAP_COUNT; i++) {
        int n = cJSON_GetArraySize(skips[i]);
        if (n == 0)
            continue;
        abx_doc_line(d, "  without %s (%d):", abx_cap_name((int)i), n);
        print_ids(d, skips[i]);
    }
    if (d->server == ABX_DOC_MISSING) {
        abx_doc_line(d, "tests that fail without the server template %s (%d):",
                     d->o->server_template, cJSON_GetArraySize(srv));
        print_ids(d, srv);
    }
    if (broken)
        abx_doc_warn(
            d, "%zu test file(s) fail to collect: see `abx-e2e --collect-only`",
            broken);
out:
    abx_collection_free(&c);
}

void abx_doctor_caps(struct abx_doc *d)
{
    const struct abx_env *e = d->env;
    cJSON *sec = abx_doc_section(d, "capabilities", "capabilities");
    cJSON *items = cJSON_AddArrayToObject(sec, "items");
    cJSON *skips[ABX_CAP_COUNT];
    char set[512];
    int i;

    abx_caps_format(e->caps, set, sizeof set);
    abx_doc_str(sec, "platform", e->platform_kind);
    abx_doc_str(sec, "set", set);
    abx_doc_str(sec, "capsSpec", d->o->caps_spec);
    abx_doc_line(d, "platform %s%s, capability set: %s%s%s%s", e->platform_kind,
                 d->o->local ? " (the abx-local profile)" : "", set,
                 d->o->caps_spec ? " (E2E_CAPS " : "", d->o->caps_spec ? d->o->caps_spec : "",
                 d->o->caps_spec ? ")" : "");
    for (i = 0; i < ABX_CAP_COUNT; i++) {
        int has = (e->caps & (1u << i)) != 0;
        cJSON *o = cJSON_CreateObject();

        abx_doc_str(o, "name", abx_cap_name(i));
        cJSON_AddBoolToObject(o, "present", has);
        abx_doc_str(o, "summary", abx_cap_summary(i));
        skips[i] = cJSON_AddArrayToObject(o, "skips");
        cJSON_AddItemToArray(items, o);
        abx_doc_line(d, "%-14s %-8s %s", abx_cap_name(i),
                     has ? "present" : "absent", abx_cap_summary(i));
    }
    skipped_tests(d, sec, skips);
}
