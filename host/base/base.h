/* The bottom of the abx-e2e host (docs/ARCHITECTURE.md "Layers"): the
 * run's data (collected tests, results), signals, the stray-output relay
 * and small helpers. Every folder of host/ may use it. */
#ifndef ABX_HOST_BASE_H
#define ABX_HOST_BASE_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <lua.h>

#include "api.h"
#include "buf.h"
#include "lua_e2e.h"
#include "result.h"
#include "trace.h"

#define ABX_E2E_VERSION "0.1.0"
#define ABX_TEARDOWN_BUDGET 60.0
#define ABX_LASTFAILED_PATH ".abx-e2e/lastfailed.json"
#define ABX_DURATIONS_PATH ".abx-e2e/durations.json"
#define ABX_EVIDENCE_DIR ".agents/evidence/verify"

/* ---- the run's data: collected tests and their results ------------- */
struct abx_item {
    char *nodeid, *name;
    struct abx_strlist groups, marks;
    int line;
    double timeout;
    int selected;
    int failed_last;              /* --ff: it failed last time */
    struct abx_strlist requires;  /* capabilities the test needs */
    char *group;                  /* its `group = "name"` option, or NULL */
};

struct abx_file {
    char *path;                 /* as given / discovered, relative */
    struct abx_item *items;
    size_t n;
    struct abx_result *collect_error;  /* ERROR at collection, or NULL */
    size_t nselected;
    int whole;                  /* the file itself was named */
    struct abx_strlist only;    /* node ids named (when !whole) */
};

struct abx_collection {
    struct abx_file *files;
    size_t n, cap;
    struct abx_buf usage;       /* unknown markers etc. (exit 4) */
    unsigned deselected;
    const char *lf_status;      /* --lf/--ff header note (static text) */
};

struct abx_run {
    struct abx_result **results;
    size_t n, cap;
    int interrupted;
    char interrupted_at[512];  /* node id of the test a signal stopped */
    int internal_error;
    int stopped_maxfail;
    size_t collect_errors;  /* files that failed to load stopped the run
                               before any test (pytest's default) */
    int worker_crashed;  /* a worker died abnormally (may have left an
                            untracked sandbox: the run sweeps its tag) */
    double started;     /* abx_clock() */
    double started_wall;  /* epoch seconds */
    cJSON *sandboxes;     /* the workers' sandbox lifetimes (array), or
                             NULL: for the reports' timeline */
};

/* ---- signals (signals.c) ---------------------------------------------- */
void abx_signals_parent(void);
void abx_signals_worker(void);  /* in a child; unblocks what fork held */
/* Forks a collector or worker, the one way: output flushed first; the
 * parent's SIGUSR1/SIGUSR2/SIGTERM to a child just forked would kill it
 * (default action) before it installs its handlers, so they stay blocked
 * in the child until abx_signals_worker; the child's output goes through
 * its own relay and masker state. As fork(2): the pid, 0 in the child, or
 * -1 (errno). */
pid_t abx_fork_child(void);
int abx_signal_count(void);           /* signals received so far */
/* repl (repl.c). on: SIGINT sets the REPL's flag and interrupts the
 * running statement instead of stopping the program (nor counting as a
 * signal); every SIGINT/SIGTERM also writes a byte to wake_fd (the write
 * end of a non-blocking pipe). off: the runner's handler again. */
void abx_signals_repl(int on, int wake_fd);
int abx_repl_sigint(void);         /* a SIGINT came since the last clear */
void abx_repl_sigint_clear(void);  /* ... and the region's interrupt */
int abx_stop_requested(void);         /* worker: parent asked to stop */
void abx_signals_set_children(const int *pids, size_t n);


/* ---- stray output relay (relay.c) ------------------------------------ */
int abx_relay_start(void);   /* 0, or -1 (output stays direct) */
void abx_relay_stop(void);   /* drains, bounded */
void abx_relay_child(void);  /* after fork, in the child */
int abx_stdout_isatty(void); /* of the real stdout */
int abx_stdout_columns(void); /* its width (TIOCGWINSZ), or 0 if unknown */
int abx_relay_real_fd(int chan); /* the real fd 1/2 behind the relay */


/* Small helpers (util.c). */
char *abx_xstrdup(const char *s);  /* aborts the run on out of memory */
void *abx_xcalloc(size_t n, size_t size);
int abx_parse_long(const char *s, long min, long max, long *out);
int abx_parse_double(const char *s, double min, double max, double *out);
int abx_color_enabled(void);
/* Appends text made fit for reports: NUL shown as \0, invalid UTF-8 as
 * U+FFFD, at most max input bytes (then a "[... N more bytes]" note).
 * 0, or -1 when out of memory or over out's max (then only part of it may
 * have been appended). */
/* In a collector or worker child: stdin becomes /dev/null, so a test's
 * io.read() sees end of input instead of waiting on the user's terminal
 * (or a CI pipe) where no timeout can reach it. */
void abx_stdin_null(void);
int abx_clean_text(struct abx_buf *out, const char *text, size_t len,
                   size_t max);

#endif
