/* A sandbox's runtime (`serve --runtime bwrap|gvisor`, docs/security.md):
 * what differs between bubblewrap (runtime_bwrap.c) and gVisor
 * (runtime_gvisor.c), one table each. The rest of the spawner asks the
 * configured one (abxl_runtime()), never for a runtime by name, so a
 * runtime is its file and its row in runtime.c. Included by sandbox.h. */
#ifndef ABXL_RUNTIME_H
#define ABXL_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

struct abxl_sbx;

/* What sandbox-enter (enter.c) hands the runtime once the root is staged. */
struct abxl_enter_run {
    int exe;        /* argv[0], opened before the stage covered /tmp (it may live there) */
    char **argv;    /* the words after sandbox-enter's `--` */
    unsigned long uid_base, uid_count;   /* the sandbox's user namespace; base 0: none */
    bool seccomp;   /* the seccomp program is open on fd 4 */
};

struct abxl_runtime {
    const char *name;   /* --runtime's value, and sandbox-enter's */
    /* Startup (machine.c): what it needs here is present and works.
     * 0, or -1 with err set. */
    int (*check)(char *err, size_t errlen);
    /* Its own part of the sandbox's folder, after sbxdir.c's (app: the
     * template has an app, bound at /opt/abx/app). NULL: none. */
    int (*prepare)(const struct abxl_sbx *s, bool app, char *err, size_t errlen);
    /* sandbox-enter's last options, `--` and the runtime's command line,
     * word by word (sbx_spawn.c). */
    void (*enter_argv)(const struct abxl_sbx *s, void (*add)(void *a, const char *w), void *a);
    /* sandbox-enter stages the sandbox's folder at ABXL_STAGE_SBX too. */
    bool stage_dir;
    /* sandbox-enter's last step, in the sandbox's mount namespace with the
     * root staged: runs the runtime. Its exit status (125: it failed). */
    int (*run)(const struct abxl_enter_run *r);
    /* Why a filesystem-only pause keeps the memory here (life.c), or NULL:
     * the sandbox's disk outlives its processes. */
    const char *fs_pause_keeps_memory;
    /* The host's pids controller counts the sandbox's processes, so its
     * limit may be held to a fair share (cgroup.c). */
    bool pids_are_processes;
};

extern const struct abxl_runtime abxl_runtime_bwrap, abxl_runtime_gvisor;
/* The runtime of that name, or NULL (runtime.c). */
const struct abxl_runtime *abxl_runtime_named(const char *name);
/* The configured one: --runtime, ABX_LOCAL_RUNTIME (main.c checked it). */
const struct abxl_runtime *abxl_runtime(void);

/* bubblewrap's probe (runtime_bwrap.c): a test sandbox with the namespaces
 * sandboxes use, running /bin/true. 0, or -1 with what bwrap said.
 * abxl_bwrap_check: bwrap present, then the probe. */
int abxl_bwrap_probe(char *err, size_t errlen);
int abxl_bwrap_check(char *err, size_t errlen);

#endif
