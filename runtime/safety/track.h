/* Sandbox tracking inside a worker: the only way a sandbox is created.
 *
 * abx_track_create merges the run's tags into the metadata (e2e=<run id>,
 * e2e_test=<test id>, e2e_nonce=<random>; a caller's values for these keys
 * are overwritten, never dropped), creates through the control plane,
 * appends the id to the ledger (fsync'd) and registers it in a group, and
 * only then returns. Groups are scopes: the bindings open one per
 * finalizer stack (test, file, session) and kill it when the scope ends,
 * all members concurrently. Whatever is still registered when the worker
 * ends is killed by abx_track_kill_all.
 *
 * --keep-failed: sandboxes touched by a failed test are marked; a group
 * kill leaves them alive (ledger "keep"), and the run prints them. */
#ifndef ABX_TRACK_H
#define ABX_TRACK_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "api.h"
#include "buf.h"
#include "errclass.h"

struct abx_track_cfg {
    const struct abx_platform *platform;
    const char *run_id;
    const char *session;       /* e2e_session tag (NULL: none) */
    const char *ledger_path;   /* NULL: no ledger (tests of this module) */
    int keep_failed;
};
/* Copies cfg (the platform pointer must outlive the process). 0 or -1. */
int abx_track_init(const struct abx_track_cfg *cfg, char *err,
                   size_t errlen);

/* Opaque handle of a tracked sandbox (shared by every Lua handle of it;
 * lives until the process ends, so Lua userdata may point at it). */
struct abx_tracked {
    struct abx_sandbox_info info;
    uint64_t group;
    int alive;        /* 0 once killed (by scope end or explicitly) */
    int failed;       /* touched by a failed test */
    int kept;
    unsigned touched; /* serial of the last test that used it */
    unsigned gen;     /* bumped whenever info's tokens or envd version
                         change: handles rebuild their endpoints then */
    /* Its lifetime for the reports' timeline: epoch seconds from the
     * create request to the end of the delete (0: not ended here), and
     * the test that created it. */
    double created_at, ended_at;
    char *test_id;
};

/* The current test (serial increases per test; test_id = node id). */
void abx_track_begin_test(unsigned serial, const char *test_id);
/* Records that the current test used t. */
void abx_track_touch(struct abx_tracked *t);
/* The current test failed: marks what it touched; appends their ids
 * (one per line) to ids if not NULL. Returns how many. */
size_t abx_track_test_failed(struct abx_buf *ids);

/* test_id NULL or "": the current test's (abx_track_begin_test). */
struct abx_tracked *abx_track_create(uint64_t group, const char *test_id,
                                     const struct abx_create_opts *o,
                                     struct abx_err *err);
/* Kills one (ledger "kill"); 1 killed, 0 was gone, -1 error. */
int abx_track_kill(struct abx_tracked *t, struct abx_err *err);
/* A connect (or resume) reply for t: its tokens (envdAccessToken,
 * trafficAccessToken: taken from fresh, absent ones dropped, as the SDK
 * builds its sandbox from that reply), envd version and domain replace
 * t's, and t->gen moves on. fresh keeps the rest (free it as usual). */
void abx_track_refresh(struct abx_tracked *t, struct abx_sandbox_info *fresh);
/* Finds a live tracked sandbox by id (NULL if not ours or dead). */
struct abx_tracked *abx_track_find(const char *id);

/* Kills every live member of group concurrently (kept ones aside when
 * keep_failed). Errors appended to errs as "<id>: <message>" lines.
 * Returns the number of errors. */
int abx_track_kill_group(uint64_t group, struct abx_buf *errs);
int abx_track_kill_all(struct abx_buf *errs);
/* Lines "<id> <template>" of sandboxes kept so far. 0, or -1 when out of
 * memory or over out's max. */
int abx_track_kept(struct abx_buf *out);
/* Every sandbox this process created, as report records: [{"id",
 * "template", "test", "worker", "created", "ended" (null while alive),
 * "kept"}]. NULL when out of memory. */
cJSON *abx_track_lifetimes(int worker);

/* 16 random hex digits into out (a create's nonce, a run's session).
 * 0, or -1 when the system has no random bytes (errno set). */
int abx_track_random_id(char out[17]);

/* 1 once abx_track_init succeeded. */
int abx_track_ready(void);
/* A new group id (never 0; unique within the process). */
uint64_t abx_track_group_new(void);

/* The metadata sent on create: a copy of user (object of strings, may be
 * NULL) with e2e=<run_id>, e2e_test=<test_id sanitized to printable
 * ASCII, at most 128 bytes>, e2e_nonce=<nonce> and, when session is not
 * NULL, e2e_session=<session> set over whatever the caller gave for
 * those keys. NULL on out of memory. (Exposed for the unit tests.) */
cJSON *abx_track_tags(const cJSON *user, const char *run_id,
                      const char *session, const char *test_id,
                      const char *nonce);

#endif
