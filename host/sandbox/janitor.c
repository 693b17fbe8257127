/* `abx-e2e cleanup`: the janitor for sandboxes earlier runs left behind.
 *
 * What it considers (candidates):
 *   default         the runs whose ledgers (.abx-e2e/runs/NAME.ledger) still
 *                   list sandboxes not deleted (kept ones included): their
 *                   ledger ids plus everything tagged e2e=<that run>
 *   --run-id ID     ID's ledger ids plus everything tagged e2e=ID
 *   --all-tagged    every sandbox on the platform that has an e2e tag
 *   --older-than N  only candidates started at least N minutes ago
 * It never touches a sandbox without the e2e tag: every candidate's
 * metadata is read from the platform before it is listed or deleted, and
 * a ledger id must carry its own run's tag. Runs still in progress (their
 * ledger is locked by a live runner) are skipped. Dry run by default;
 * --yes deletes. Exit: 0 ok or nothing to do, 1 a delete or a listing
 * failed, 4 usage. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ledger.h"
#include "optable.h"
#include "out.h"
#include "sandbox.h"
#include "vec.h"

struct cand {
    char id[128], tmpl[128], run[128], ledger[512];
    long age;  /* minutes, -1 unknown */
};

struct janitor {
    struct cand *c;
    size_t n, cap;
    const struct abx_platform *p;
    int failed;
};

/* A usage error, in the shape of every sub-command's (cli_help.c). */
static int usage(const char *msg, const char *arg)
{
    abx_cli_usage(ABX_CMD_CLEANUP, "%s%s%s", msg, arg ? " " : "", arg ? arg : "");
    return ABX_EXIT_USAGE_ERROR;
}

/* RFC 3339 "2026-01-02T03:04:05[.frac](Z|+hh:mm)" -> minutes ago. */
static long age_minutes(const char *ts)
{
    struct tm tm;
    int oh = 0, om = 0, k = 0;
    const char *z;
    time_t t;

    memset(&tm, 0, sizeof tm);
    if (sscanf(ts, "%d-%d-%dT%d:%d:%d%n", &tm.tm_year, &tm.tm_mon,
               &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &k) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    t = timegm(&tm);
    z = ts + k + strspn(ts + k, ".0123456789");
    if ((*z == '+' || *z == '-') && sscanf(z + 1, "%d:%d", &oh, &om) == 2)
        t -= (*z == '+' ? 1 : -1) * (time_t)(oh * 3600 + om * 60);
    return t <= time(NULL) ? (long)((time(NULL) - t) / 60) : 0;
}

static const char *tag_of(const struct abx_sandbox_info *i)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(i->metadata,
                                                      ABX_TAG_KEY);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static struct cand *find(struct janitor *j, const char *id)
{
    size_t i;

    for (i = 0; i < j->n; i++)
        if (strcmp(j->c[i].id, id) == 0)
            return &j->c[i];
    return NULL;
}

static void add(struct janitor *j, const struct abx_sandbox_info *i,
                const char *ledger)
{
    struct cand *c = find(j, i->sandbox_id);

    if (c) {
        if (ledger && !c->ledger[0])
            snprintf(c->ledger, sizeof c->ledger, "%s", ledger);
        return;
    }
    if (ABX_VEC_RESERVE(j->c, j->cap, j->n + 1) != 0)
        return;
    c = &j->c[j->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->id, sizeof c->id, "%s", i->sandbox_id);
    snprintf(c->tmpl, sizeof c->tmpl, "%s",
             i->alias[0] ? i->alias : i->template_id);
    snprintf(c->run, sizeof c->run, "%s", tag_of(i));
    snprintf(c->ledger, sizeof c->ledger, "%s", ledger ? ledger : "");
    c->age = age_minutes(i->started_at);
}

/* Lists live sandboxes (tagged e2e=run, or any e2e tag when run is NULL)
 * and adds them. */
static void add_listed(struct janitor *j, const char *run, const char *ledger)
{
    struct abx_list_query q;
    struct abx_list_page pg;
    struct abx_err err;
    cJSON *md = run ? cJSON_CreateObject() : NULL;
    size_t i;

    memset(&q, 0, sizeof q);
    memset(&pg, 0, sizeof pg);
    if (run && (!md || !cJSON_AddStringToObject(md, ABX_TAG_KEY, run)))
        goto out;
    q.metadata = md;
    q.state = "running,paused";
    q.limit = 100;
    abx_err_clear(&err);
    if (abx_api_list_all(j->p, &q, 0, &pg, &err) != 0) {
        abx_out_printf(ABX_OUT_STDERR, "abx-e2e cleanup: listing %s%s: "
                       "%s: %s\n", run ? "e2e=" : "tagged sandboxes",
                       run ? run : "", abx_errclass_name(err.cls),
                       err.message);
        j->failed = 1;
        goto out;
    }
    for (i = 0; i < pg.n; i++) {
        const char *tag = tag_of(&pg.items[i]);
        /* The filter is the platform's; the check is ours. */
        if (tag && (!run || strcmp(tag, run) == 0))
            add(j, &pg.items[i], ledger);
    }
out:
    abx_list_page_free(&pg);
    cJSON_Delete(md);
}

/* A run's ledger: ids not yet deleted are checked one by one (the tag
 * listing may miss a paused or just-created one). 1 if it listed any. */
static int add_ledger(struct janitor *j, const char *path, int yes)
{
    struct abx_ledger l;
    char err[512];
    size_t i;
    int any = 0;

    if (abx_ledger_load(path, &l, err, sizeof err) != 0)
        return 0;
    for (i = 0; i < l.n; i++) {
        struct abx_sandbox_info info;
        struct abx_err aerr;
        const char *tag;

        if (l.e[i].killed || find(j, l.e[i].id))
            continue;
        any = 1;
        memset(&info, 0, sizeof info);
        abx_err_clear(&aerr);
        if (abx_api_get(j->p, l.e[i].id, &info, &aerr) != 0) {
            if (aerr.cls == ABX_E_NOT_FOUND) {
                if (yes)  /* already gone: close its ledger entry */
                    abx_ledger_append_to(path, "kill", l.e[i].id, "gone",
                                         err, sizeof err);
            } else {
                abx_out_printf(ABX_OUT_STDERR, "abx-e2e cleanup: %s: %s: "
                               "%s\n", l.e[i].id, abx_errclass_name(aerr.cls),
                               aerr.message);
                j->failed = 1;
            }
        } else if (!(tag = tag_of(&info)) || strcmp(tag, l.run_id) != 0) {
            abx_out_printf(ABX_OUT_STDERR, "abx-e2e cleanup: %s (in the "
                           "ledger of %s) is not tagged e2e=%s: left alone\n",
                           l.e[i].id, l.run_id, l.run_id);
        } else {
            add(j, &info, path);
        }
        abx_sandbox_info_free(&info);
    }
    abx_ledger_free(&l);
    return any;
}

static int run_in_progress(const char *path, const char *run)
{
    if (!abx_ledger_in_use(path))
        return 0;
    abx_out_printf(ABX_OUT_STDERR, "abx-e2e cleanup: run %s is in progress "
                   "(its ledger is held by a live runner): skipped\n", run);
    return 1;
}

static void drop_finished_ledger(const char *path);

/* Default: every run whose ledger still lists a sandbox. */
static void add_ledger_runs(struct janitor *j, int yes)
{
    DIR *d = opendir(ABX_RUNS_DIR);
    struct dirent *de;
    char path[1024], run[256];

    if (!d)
        return;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n <= 7 || n - 7 >= sizeof run ||
            strcmp(de->d_name + n - 7, ".ledger") != 0)
            continue;
        snprintf(run, sizeof run, "%.*s", (int)(n - 7), de->d_name);
        if (abx_ledger_path(run, path, sizeof path) != 0 ||
            run_in_progress(path, run))
            continue;
        if (add_ledger(j, path, yes))
            add_listed(j, run, path);
        else if (yes)
            drop_finished_ledger(path);
    }
    closedir(d);
}

/* Drops runs in progress (--all-tagged) and what --older-than excludes. */
static void filter(struct janitor *j, long older)
{
    size_t i, k = 0;
    char path[1024];

    for (i = 0; i < j->n; i++) {
        struct cand *c = &j->c[i];
        if (abx_ledger_path(c->run, path, sizeof path) == 0 &&
            abx_ledger_in_use(path))
            continue;
        if (older >= 0 && (c->age < 0 || c->age < older))
            continue;
        j->c[k++] = *c;
    }
    j->n = k;
}

static void print_table(const struct janitor *j)
{
    size_t i;

    abx_out_printf(ABX_OUT_STDOUT, "%-28s %-22s %8s  %s\n", "SANDBOX",
                   "TEMPLATE", "AGE", "RUN");
    for (i = 0; i < j->n; i++) {
        char age[32];
        if (j->c[i].age < 0)
            snprintf(age, sizeof age, "?");
        else
            snprintf(age, sizeof age, "%ldm", j->c[i].age);
        abx_out_printf(ABX_OUT_STDOUT, "%-28s %-22s %8s  %s\n", j->c[i].id,
                       j->c[i].tmpl[0] ? j->c[i].tmpl : "?", age,
                       j->c[i].run);
    }
}

/* A ledger with every sandbox deleted has nothing left to say. */
static void drop_finished_ledger(const char *path)
{
    struct abx_ledger l;
    char err[256];
    size_t i;

    if (abx_ledger_load(path, &l, err, sizeof err) != 0)
        return;
    for (i = 0; i < l.n && l.e[i].killed; i++)
        ;
    if (i == l.n && !abx_ledger_in_use(path))
        unlink(path);
    abx_ledger_free(&l);
}

static void delete_all(struct janitor *j)
{
    const char **ids = calloc(j->n, sizeof *ids);
    int *res = calloc(j->n, sizeof *res);
    struct abx_err *errs = calloc(j->n, sizeof *errs);
    size_t i, done = 0;
    char err[512];

    if (!ids || !res || !errs) {
        j->failed = 1;
        goto out;
    }
    for (i = 0; i < j->n; i++)
        ids[i] = j->c[i].id;
    abx_api_kill_many(j->p, ids, j->n, res, errs, 120.0);
    for (i = 0; i < j->n; i++) {
        if (res[i] < 0) {
            abx_out_printf(ABX_OUT_STDOUT, "FAILED %s: %s: %s\n", ids[i],
                           abx_errclass_name(errs[i].cls), errs[i].message);
            j->failed = 1;
            continue;
        }
        done++;
        abx_out_printf(ABX_OUT_STDOUT, "deleted %s%s\n", ids[i],
                       res[i] == 0 ? " (already gone)" : "");
        if (j->c[i].ledger[0])
            abx_ledger_append_to(j->c[i].ledger, "kill", ids[i], "cleanup",
                                 err, sizeof err);
    }
    for (i = 0; i < j->n; i++)
        if (j->c[i].ledger[0])
            drop_finished_ledger(j->c[i].ledger);
    abx_out_printf(ABX_OUT_STDOUT, "cleanup: %zu deleted, %zu failed\n",
                   done, j->n - done);
out:
    free(ids);
    free(res);
    free(errs);
}

int abx_janitor_main(const struct abx_config *cfg)
{
    const struct abx_opts *o = &cfg->opt;
    const struct abx_env *e = &cfg->env;
    struct janitor j;
    const char *run = o->cleanup_run;
    char path[1024];
    long older = o->cleanup_older;
    int i, yes = o->cleanup_yes, all = o->cleanup_all;

    if (run && abx_ledger_path(run, path, sizeof path) != 0)
        return usage("--run-id: not a run id:", run);   /* checked by the parser too */
    if (!e->has_credentials)
        return usage("no credentials: set ABX_SANDBOX_API_KEY (and "
                     "ABX_SANDBOX_BASE_URL / ABX_SANDBOX_DOMAIN)", NULL);
    if (!e->has_platform)
        return usage("configuration:", e->platform_err);
    memset(&j, 0, sizeof j);
    j.p = &e->platform;
    if (run) {
        if (!run_in_progress(path, run)) {
            add_ledger(&j, path, yes);
            add_listed(&j, run, NULL);
        }
    } else if (all) {
        add_listed(&j, NULL, NULL);
    } else {
        add_ledger_runs(&j, yes);
    }
    filter(&j, older);
    for (i = 0; i < (int)j.n; i++) {  /* ledger of a tag-found one */
        if (!j.c[i].ledger[0] &&
            abx_ledger_path(j.c[i].run, path, sizeof path) == 0 &&
            access(path, F_OK) == 0)
            snprintf(j.c[i].ledger, sizeof j.c[i].ledger, "%.500s", path);
    }
    if (j.n == 0) {
        abx_out_puts(ABX_OUT_STDOUT, "cleanup: nothing to delete\n");
    } else if (!yes) {
        print_table(&j);
        abx_out_printf(ABX_OUT_STDOUT, "cleanup: would delete %zu sandbox%s "
                       "(dry run; add --yes to delete)\n", j.n,
                       j.n == 1 ? "" : "es");
    } else {
        delete_all(&j);
    }
    free(j.c);
    return j.failed ? ABX_EXIT_TESTS_FAILED : ABX_EXIT_OK;
}
