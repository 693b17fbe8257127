/* A record of what each test did (docs/reports.md "Traces"): one file of
 * JSON lines per traced test, its events in order with their times.
 *
 * One recorder per process (a worker runs one test at a time). Layers
 * below add events while a test runs: the HTTP engine each exchange, the
 * bindings each SDK call, command output and sandbox lifecycle, the runner
 * fixtures and the result. Events are kept raw in memory and masked when
 * the file is written, at the test's end, so a secret learned late in the
 * test (an access token in a create's reply) is masked in every earlier
 * event too; text is cut to the body cap only after masking, so a cut
 * never leaves part of a secret. */
#ifndef ABX_TRACE_H
#define ABX_TRACE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define ABX_TRACE_VERSION 1
#define ABX_TRACE_SUFFIX ".trace.jsonl"

enum abx_trace_mode {
    ABX_TRACE_OFF,
    ABX_TRACE_ON,                  /* every test's file is kept */
    ABX_TRACE_RETAIN_ON_FAILURE,   /* only a failed or errored test's */
};

/* "on", "off", "retain-on-failure": 0 and *out, or -1. */
int abx_trace_mode_parse(const char *s, enum abx_trace_mode *out);
const char *abx_trace_mode_name(enum abx_trace_mode m);

/* Process-wide: the mode, the folder files go to, and the cap on each
 * text (a body, an output chunk) in a written file (0: 8 KiB). */
void abx_trace_configure(enum abx_trace_mode mode, const char *dir, size_t text_max);
enum abx_trace_mode abx_trace_get_mode(void);

/* Starts a test's record (ends one left open, unwritten). */
void abx_trace_begin(const char *nodeid);
/* Whether a test is being recorded: callers skip building events if not. */
int abx_trace_recording(void);
/* Monotonic seconds (CLOCK_MONOTONIC, the HTTP engine's clock too). */
double abx_trace_clock(void);
/* A new event of kind ev, its "t" the seconds since abx_trace_begin;
 * NULL when no test is being recorded (or out of memory). */
cJSON *abx_trace_new(const char *ev);
/* An event made when what it records ends: "t" moved back to when it
 * began, and o["ms"] its duration. */
void abx_trace_began(cJSON *event, double seconds);
/* o[key] = seconds as milliseconds, to 0.1 ms. */
void abx_trace_put_ms(cJSON *o, const char *key, double seconds);
/* Adds it to the record (consumed; NULL is ignored). Over the per-test
 * memory cap, events are counted and dropped. */
void abx_trace_add(cJSON *event);
/* o[key] = text p[0..n): NUL bytes or invalid UTF-8 make it binary and
 * only its size is kept ({"binary": true, "bytes": n}); longer than the
 * memory cap per text, the rest is dropped (o[key_bytes] = n). */
void abx_trace_put_text(cJSON *o, const char *key, const void *p, size_t n);
/* Ends the record: writes DIR/<name>.trace.jsonl if the mode keeps it
 * (failed: the test failed or errored), masked as a whole. path gets
 * the file written, or "" when none was. 0, or -1 with err set. */
int abx_trace_end(int failed, char *path, size_t pathlen, char *err, size_t errlen);

/* The file name a node id is recorded under (no folder): its characters
 * outside [A-Za-z0-9._-] as '-', cut, and a hash of the whole id. */
void abx_trace_file_name(const char *nodeid, char *out, size_t outlen);

#endif
