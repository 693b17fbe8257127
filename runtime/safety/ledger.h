/* The run ledger (the sweeper that reads it: sweep.h).
 *
 * Ledger: an append-only text file per run (.abx-e2e/runs/<run id>.ledger),
 * written by every worker with O_APPEND (one line per write, < PIPE_BUF,
 * so lines never interleave):
 *   create <sandbox id> <unix time> <test id>     fsync'd before the
 *                                                 handle reaches Lua
 *   kill <sandbox id>                             deleted (or gone)
 *   keep <sandbox id>                             --keep-failed: leave it
 * A hard-killed run leaves the exact list of what may still be alive. */
#ifndef ABX_LEDGER_H
#define ABX_LEDGER_H

#include <stddef.h>

#include "api.h"
#include "buf.h"

#define ABX_RUNS_DIR ".abx-e2e/runs"
#define ABX_TAG_KEY "e2e"             /* metadata e2e=<run id> */
#define ABX_TAG_TEST_KEY "e2e_test"   /* the test (node id) that created it */
#define ABX_TAG_NONCE_KEY "e2e_nonce" /* unique per create (retry check) */
/* The abx-e2e process that created it: runs on several machines may share
 * one run id (the shards of a CI pipeline, one janitor for all); each
 * sweeps only its own session's sandboxes, the janitor the whole run. */
#define ABX_TAG_SESSION_KEY "e2e_session"

/* Path of the ledger of run_id into out ("<dir>/<run id>.ledger"). */
int abx_ledger_path(const char *run_id, char *out, size_t outlen);
/* Opens (creating dirs and file) for appending; the fd is kept for the
 * process (after fork, children append to the same file) and holds a
 * shared flock (abx_ledger_in_use). 0 or -1 (also if another process
 * holds it exclusively). */
int abx_ledger_open(const char *path, char *err, size_t errlen);
void abx_ledger_after_fork(void);   /* keeps the fd; placeholder for reopen */
/* Appends a line; "create" lines are fsync'd. event: "create", "kill"
 * or "keep"; detail: for create the test id (the unix time is added
 * here), else an optional note. Control bytes in detail become spaces;
 * the line is capped below PIPE_BUF. 0 or -1 (err). */
int abx_ledger_append(const char *event, const char *sandbox_id,
                      const char *detail, char *err, size_t errlen);

/* Appends to another run's ledger (the janitor); the file must exist. */
int abx_ledger_append_to(const char *path, const char *event,
                         const char *sandbox_id, const char *detail,
                         char *err, size_t errlen);
/* 1 while a live run holds the ledger (abx_ledger_open takes a shared
 * lock that its forked workers inherit), else 0. */
int abx_ledger_in_use(const char *path);

struct abx_ledger_entry {
    char id[128];
    long created;        /* unix s */
    char test[256];
    int killed, kept;
};
struct abx_ledger {
    struct abx_ledger_entry *e;
    size_t n;
    char run_id[128];
};
/* Reads a ledger (a torn last line is ignored). 0, 1 missing, -1 error. */
int abx_ledger_load(const char *path, struct abx_ledger *out, char *err,
                    size_t errlen);
void abx_ledger_free(struct abx_ledger *l);

#endif
