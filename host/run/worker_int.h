/* A worker's parts (worker.c is the loop and a test's run with its
 * reruns): the channel to the runner and the secret relay
 * (worker_msg.c), results made from Lua's (worker_result.c), and the
 * Lua states it keeps: test files, least recently used closed first,
 * and sessions (worker_files.c). */
#ifndef ABX_HOST_WORKER_INT_H
#define ABX_HOST_WORKER_INT_H

#include <cjson/cJSON.h>
#include <lua.h>

#include "chan.h"
#include "run.h"

/* ---- to the runner (worker_msg.c) -------------------------------------- */
/* Where messages go, and which worker this is (in every result). */
void abx_wmsg_init(int out_fd, int index);
int abx_wmsg_index(void);
/* Sends m (consumed) as one line, masked. A runner gone (the pipe
 * broken) interrupts the worker: its teardowns still run, releasing
 * sandboxes matters more than reporting them. */
void abx_wmsg_send(cJSON *m);
/* Sends {"t": type, key: val[0..len)}. */
void abx_wmsg_kv(enum abx_msg type, const char *key, const char *val, size_t len);
/* The host hooks of this worker's states: a test's output, a secret a
 * test declared (raw: the runner must learn it to mask it). */
void abx_wmsg_emit(void *ud, const char *s, size_t len);
void abx_wmsg_secret(void *ud, const char *s, size_t len);
/* Sends r (consumed); *file_last, when given, becomes its node id too
 * (the last result of its file). */
void abx_wmsg_result(struct abx_result *r, char **file_last);
/* The node id of the last result sent, or NULL. */
const char *abx_wmsg_last(void);
/* A teardown error after the result was sent (file or session scope):
 * the runner adds it to that result, as pytest's "ERROR at teardown of"
 * the last test. */
void abx_wmsg_amend(const char *nodeid, const char *msg);
/* The lifetimes of this worker's sandboxes, for the reports' timeline. */
void abx_wmsg_lifetimes(void);
void abx_wmsg_free(void);

/* ---- results from Lua (worker_result.c) -------------------------------- */
/* A result from the collected test at ii and the run table at ri. */
struct abx_result *abx_wresult_from_lua(lua_State *L, const char *file, int ii, int ri);
/* An ERROR at collection (the file did not load, the test is gone), raw
 * made fit for the reports. */
struct abx_result *abx_wresult_error(const char *nodeid, const char *file, const char *raw);

/* ---- Lua states (worker_files.c) --------------------------------------- */
/* A test file's state: its collected list sits at stack index 1. */
struct abx_wfile {
    char *path;
    lua_State *L;
    lua_Integer hint;   /* where the last node id was found */
    char *last;         /* node id of its last result sent */
    unsigned long used; /* LRU stamp */
};

/* The host descriptions of this worker's states (test files', sessions'). */
void abx_wfiles_init(const struct abx_config *cfg, int index);
/* The open state of path, loading it on first use (the least recently
 * used one closes when all slots are taken). NULL with err when the file
 * does not load. */
struct abx_wfile *abx_wfile_open(const char *path, char *err, size_t errlen);
struct abx_wfile *abx_wfile_find(const char *path);   /* open only */
/* Tears down f's file fixtures and closes its state; errors amend its
 * last result. */
void abx_wfile_close(struct abx_wfile *f);
void abx_wfiles_close_all(void);
/* Index (1-based) of nodeid in f's collected list, or 0. */
int abx_wfile_test(struct abx_wfile *f, const char *nodeid);
/* Calls M[name](args) in L protected; results stay on the stack. */
int abx_wfile_call(lua_State *L, const char *name, int nargs, int nres);
/* Tears every session state down; errors amend the last result. */
void abx_wsessions_finish(void);

#endif
