/* Running the suite: collection, selection, the caches of last failures
 * and durations, the scheduler and its workers. */
#ifndef ABX_HOST_RUN_H
#define ABX_HOST_RUN_H

#include "config.h"

/* Discovers files from o->paths (or tests-lua/), loads each in a fresh
 * state (in a collector child) and records its tests. 0, -1 usage error
 * (err), -2 interrupted, -3 internal error (err). */
int abx_collect(const struct abx_config *cfg, struct abx_collection *c,
                char *err, size_t errlen);
void abx_collection_free(struct abx_collection *c);
/* The collector child's loop (collector.c); never returns. */
void abx_collector_main(int fd, const struct abx_config *cfg,
                        const struct abx_collection *c, size_t start)
    __attribute__((noreturn));
/* Applies node ids, -k, -m, --lf/--ff, --shard. 0 or -1 (usage, err). */
int abx_select(const struct abx_opts *o, struct abx_collection *c,
               char *err, size_t errlen);

/* ---- last-failed cache (lastfailed.c) --------------------------------- */
struct abx_strlist;
int abx_lastfailed_load(struct abx_strlist *ids);  /* 0; empty if none */
void abx_lastfailed_update(struct abx_result *const *res, size_t n,
                           const struct abx_collection *c);

/* ---- durations cache (durations.c) ------------------------------------ */
/* File indices of c, longest expected work first (the last run's test
 * durations; a test never timed counts as their mean; ties keep
 * collection order). Malloc'd, c->n entries; NULL when out of memory. */
size_t *abx_durations_order(const struct abx_collection *c);
/* Records the duration of every test that ran (skips leave theirs). */
void abx_durations_update(struct abx_result *const *res, size_t n);

/* ---- the run's results (results.c) ------------------------------------ */
int abx_run_add(struct abx_run *run, struct abx_result *r);  /* takes r */
void abx_run_free(struct abx_run *run);
/* A teardown error reported after its test's result (file or session
 * fixtures, or a worker that died after its last test): added to the
 * last result of nodeid, as pytest's "ERROR at teardown of". 1 when that
 * made a passing test a failure; without such a result, said on stderr
 * as an internal error. */
int abx_run_amend(struct abx_run *run, const char *nodeid, const char *msg, int quiet);
/* The ERROR result of test it of f, whose worker died while in phase
 * when (start: when its call began). NULL out of memory. */
struct abx_result *abx_run_crashed(const struct abx_file *f, const struct abx_item *it,
                                   int worker, enum abx_phase when, double start,
                                   const char *msg);

/* The worker loop: reads jobs from in_fd, sends JSON lines to out_fd,
 * never returns. fail_budget: the failures it may still see before it
 * stops (--maxfail less the run's so far; 0: no limit). runner: the pid
 * that forked it, whose death it watches. */
void abx_worker_main(int in_fd, int out_fd, int index, const struct abx_config *cfg,
                     long fail_budget, pid_t runner) __attribute__((noreturn));
/* Runs the selected tests on workers; fills run. */
void abx_schedule(const struct abx_config *cfg, struct abx_collection *c,
                  struct abx_run *run);

#endif
