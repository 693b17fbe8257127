/* --local: runs abx-local for the duration of the run.
 *
 * The server is started on free loopback ports with a fresh state dir; it
 * prints `export ABX_SANDBOX_*=...` lines and then `ready` on stdout (a
 * temporary file here: a pipe nobody reads after start-up could fill and
 * block it). It gets its own process group so a terminal ^C reaches only
 * the runner, which still needs the platform to sweep; the runner stops it
 * after the sweep (SIGTERM, then SIGKILL), and the guardian does if the
 * runner is killed.
 *
 * Not root: serve runs through passwordless sudo, and only serve (and its
 * gc and the removal of the state dir it filled): everything the runner
 * writes stays the user's. sudo relays our SIGTERM; a SIGKILL goes through
 * sudo too. Without passwordless sudo abx-local is started as is and
 * refuses, naming the ways out. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "config.h"
#include "fsutil.h"
#include "out.h"
#include "sandbox.h"

#define START_TIMEOUT 600.0 /* s until `ready`: a first run builds the templates */
#define STOP_GRACE 10.0     /* s between SIGTERM and SIGKILL */

static pid_t g_pid;
static int g_sudo;   /* serve runs through sudo */
static char g_state[64], g_out[64], g_err[64], g_bin[PATH_MAX];
/* What abx-local reads of our environment (sudo resets it otherwise). */
#define SUDO_KEEP "--preserve-env=ABX_LOCAL_CACHE,ABX_LOCAL_PROFILE,ABX_LOCAL_RUNTIME," \
                  "ABX_LOCAL_VARY"

int abx_local_pid(void) { return (int)g_pid; }

static int is_exec(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
           access(path, X_OK) == 0;
}

/* $ABX_LOCAL_BIN, else the build tree next to this executable
 * (<build>/host/abx-e2e -> <build>/abx-local/server/abx-local), else
 * PATH. 0, or -1 with err. */
int abx_local_binary(char *out, size_t outlen, char *err, size_t errlen)
{
    const char *env = getenv("ABX_LOCAL_BIN"), *path = getenv("PATH");
    char self[PATH_MAX], *slash;
    ssize_t n;

    if (env && *env) {
        if (!is_exec(env)) {
            snprintf(err, errlen, "ABX_LOCAL_BIN=%s is not an executable "
                     "file", env);
            return -1;
        }
        snprintf(out, outlen, "%s", env);
        return 0;
    }
    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        if ((slash = strrchr(self, '/'))) {
            *slash = '\0';
            int k = snprintf(out, outlen, "%.*s/../abx-local/server/abx-local",
                             PATH_MAX - 64, self);
            if (k > 0 && (size_t)k < outlen && is_exec(out))
                return 0;
        }
    }
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        if (len > 0 && len < outlen - 12) {
            snprintf(out, outlen, "%.*s/abx-local", (int)len, path);
            if (is_exec(out))
                return 0;
        }
        path = end ? end + 1 : NULL;
    }
    snprintf(err, errlen, "abx-local not found (set ABX_LOCAL_BIN, build it "
             "with `make build`, or put it on PATH)");
    return -1;
}

/* The last bytes of abx-local's stderr, for an error message. */
static void stderr_tail(char *out, size_t outlen)
{
    char *data = NULL, e[256];
    size_t len = 0, start;

    out[0] = '\0';
    if (abx_read_file(g_err, 1 << 20, &data, &len, e, sizeof e) != 0)
        return;
    start = len > 2000 ? len - 2000 : 0;
    snprintf(out, outlen, "%s", data + start);
    free(data);
}

/* Scans the stdout file: fills the four values and says if `ready` came. */
static int scan_output(char vals[5][1024])
{
    static const char *const names[5] = {
        "ABX_SANDBOX_API_KEY", "ABX_SANDBOX_BASE_URL", "ABX_SANDBOX_DOMAIN",
        "ABX_SANDBOX_URL", "ABX_LOCAL_VARY"};
    char *data = NULL, *line, *save = NULL, e[256];
    size_t len = 0;
    int ready = 0, i;

    if (abx_read_file(g_out, 1 << 20, &data, &len, e, sizeof e) != 0)
        return 0;
    for (line = strtok_r(data, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (strcmp(line, "ready") == 0)
            ready = 1;
        if (strncmp(line, "export ", 7) != 0)
            continue;
        for (i = 0; i < 5; i++) {
            size_t nl = strlen(names[i]);
            if (strncmp(line + 7, names[i], nl) == 0 && line[7 + nl] == '=')
                snprintf(vals[i], sizeof vals[i], "%s", line + 8 + nl);
        }
    }
    free(data);
    return ready;
}

int abx_local_run(const char *const argv[], int sudo, int out_fd, double limit,
                  int interruptible)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    const char *args[16];
    int status, n = 0;
    pid_t pid;

    if (sudo) {
        args[n++] = "sudo";
        args[n++] = "-n";
        args[n++] = "--";
    }
    for (int i = 0; argv[i] && n < 15; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    abx_out_flush();
    if ((pid = fork()) < 0)
        return -1;
    if (pid == 0) {
        int nul = open("/dev/null", O_RDWR);

        setpgid(0, 0);   /* its own group: nothing it starts outlives it */
        if (nul >= 0) {
            dup2(nul, STDIN_FILENO);
            dup2(out_fd >= 0 ? out_fd : nul, STDOUT_FILENO);
            dup2(nul, STDERR_FILENO);
        }
        execvp(args[0], (char *const *)args);   /* exec does not write them */
        _exit(127);
    }
    for (double waited = 0; waited < limit && !(interruptible && abx_signal_count());
         waited += 0.02) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            kill(-pid, SIGKILL);
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* Not root, with passwordless sudo (said in one line). */
static int want_sudo(void)
{
    const char *const probe[] = {"true", NULL};

    if (geteuid() == 0 || abx_local_run(probe, 1, -1, 10.0, 0) != 0)
        return 0;
    abx_out_printf(ABX_OUT_STDERR, "abx-local: not root: abx-local serve runs through "
                   "passwordless sudo (it alone)\n");
    return 1;
}

static int spawn(const char *bin, int allow_pause, char *err, size_t errlen)
{
    int out, errf, nul;

    snprintf(g_out, sizeof g_out, "/tmp/abx-e2e-local-out.XXXXXX");
    snprintf(g_err, sizeof g_err, "/tmp/abx-e2e-local-err.XXXXXX");
    snprintf(g_state, sizeof g_state, "/tmp/abx-e2e-local.XXXXXX");
    out = mkostemp(g_out, O_CLOEXEC);
    errf = mkostemp(g_err, O_CLOEXEC);
    nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || errf < 0 || nul < 0 || !mkdtemp(g_state)) {
        snprintf(err, errlen, "cannot create temporary files: %s",
                 strerror(errno));
        g_state[0] = '\0';
        goto fail;
    }
    snprintf(g_bin, sizeof g_bin, "%s", bin);
    g_sudo = want_sudo();
    abx_out_flush();
    g_pid = fork();
    if (g_pid == 0) {
        const char *argv[16];
        int n = 0;

        setpgid(0, 0);
        dup2(nul, STDIN_FILENO);
        dup2(out, STDOUT_FILENO);
        dup2(errf, STDERR_FILENO);
        if (g_sudo) {
            argv[n++] = "sudo";
            argv[n++] = "-n";
            argv[n++] = SUDO_KEEP;
            argv[n++] = "--";
        }
        argv[n++] = bin;
        argv[n++] = "serve";
        argv[n++] = "--listen";
        argv[n++] = "127.0.0.1:0";
        argv[n++] = "--data-listen";
        argv[n++] = "127.0.0.1:0";
        argv[n++] = "--state-dir";
        argv[n++] = g_state;
        if (allow_pause)
            argv[n++] = "--allow-pause";
        argv[n] = NULL;
        execvp(argv[0], (char *const *)argv);   /* exec does not write them */
        _exit(127);
    }
    if (g_pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        g_pid = 0;
        goto fail;
    }
    close(out);
    close(errf);
    close(nul);
    return 0;
fail:
    if (out >= 0)
        close(out);
    if (errf >= 0)
        close(errf);
    if (nul >= 0)
        close(nul);
    return -1;
}

int abx_local_start(struct abx_env *e, const struct abx_opts *o, char *err, size_t errlen)
{
    struct timespec ts = {0, 50 * 1000 * 1000};
    char bin[PATH_MAX], vals[5][1024], tail[2100], perr[512], vary[48] = "";
    const char *prof;
    double waited = 0;
    int status;

    memset(vals, 0, sizeof vals);
    /* The suite has the capability set of the profile it starts since its
     * config was built (config.c; E2E_CAPS still adjusts it); +pause on fc
     * is an allow-listed account, which abx-local imitates with
     * --allow-pause. */
    prof = o->profile;   /* --local always has one (cli.c); the child gets it
                            as ABX_LOCAL_PROFILE (main.c) */
    if (abx_local_binary(bin, sizeof bin, err, errlen) != 0 ||
        spawn(bin, strcmp(prof, "fc") == 0 &&
                       (e->caps & (1u << ABX_CAP_PAUSE)),
              err, errlen) != 0)
        goto fail;
    for (;;) {
        int ready = scan_output(vals);
        /* The key is a secret from the moment we can see it. */
        if (vals[0][0])
            abx_mask_add_str(abx_out_masker(), vals[0]);
        if (ready)
            break;
        if (waitpid(g_pid, &status, WNOHANG) == g_pid) {
            g_pid = 0;
            stderr_tail(tail, sizeof tail);
            snprintf(err, errlen, "%s exited (%s %d) before it was ready; "
                     "its stderr:\n%s", bin,
                     WIFSIGNALED(status) ? "signal" : "status",
                     WIFSIGNALED(status) ? WTERMSIG(status)
                                         : WEXITSTATUS(status),
                     tail[0] ? tail : "(empty)");
            goto fail;
        }
        if (abx_signal_count()) {
            snprintf(err, errlen, "interrupted while starting abx-local");
            goto fail;
        }
        if (waited >= START_TIMEOUT) {
            stderr_tail(tail, sizeof tail);
            snprintf(err, errlen, "%s was not ready after %.0f s; its "
                     "stderr:\n%s", bin, START_TIMEOUT,
                     tail[0] ? tail : "(empty)");
            goto fail;
        }
        nanosleep(&ts, NULL);
        waited += 0.05;
    }
    if (!vals[0][0] || !vals[1][0]) {
        snprintf(err, errlen, "%s printed no ABX_SANDBOX_API_KEY / "
                 "ABX_SANDBOX_BASE_URL before ready", bin);
        goto fail;
    }
    if (abx_platform_init(&e->platform, vals[0], vals[1], vals[2], vals[3],
                          perr, sizeof perr) != 0) {
        snprintf(err, errlen, "abx-local's values: %s", perr);
        goto fail;
    }
    e->has_credentials = 1;
    e->has_platform = 1;
    e->missing[0] = '\0';
    e->platform_err[0] = '\0';
    /* The header and reports name the cloud a local run stood in for. */
    const char *rt = getenv("ABX_LOCAL_RUNTIME");   /* abx-local's too: inherited */
    int gv = rt && strcmp(rt, "gvisor") == 0;
    /* A varied run names its seed: a red one is replayed with VARY=N. */
    if (vals[4][0])
        snprintf(vary, sizeof vary, ", vary seed %.20s", vals[4]);
    snprintf(e->endpoint, sizeof e->endpoint, "%.420s (abx-local, profile %.8s%s%s)", vals[1],
             prof, gv ? ", runtime gvisor" : "", vary);
    abx_out_printf(ABX_OUT_STDERR, "abx-local: %s, data plane %s, profile %s%s%s\n", vals[1],
                   vals[3][0] ? vals[3] : vals[2], prof, gv ? ", runtime gvisor" : "", vary);
    return 0;
fail:
    abx_local_stop();
    return -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

/* `abx-local gc`: what a server that did not stop cleanly left (its
 * sandboxes' processes and cgroups live outside its state dir, which is
 * removed below). Bounded: a stuck gc must not hold the run. */
static void run_gc(void)
{
    const char *const gc[] = {g_bin, "gc", NULL};

    if (g_bin[0])
        abx_local_run(gc, g_sudo, -1, 30.0, 0);
}

/* SIGKILL to sudo and what it runs (this user may signal neither). */
static void sudo_kill(pid_t pid)
{
    char path[64], pids[8][24];
    const char *argv[12];
    FILE *f;
    int n = 0, k = 0;
    long child;

    argv[n++] = "kill";
    argv[n++] = "-KILL";
    snprintf(pids[k], sizeof pids[k], "%d", (int)pid);
    argv[n++] = pids[k++];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    if ((f = fopen(path, "re")) != NULL) {
        while (k < 8 && fscanf(f, "%ld", &child) == 1) {
            snprintf(pids[k], sizeof pids[k], "%ld", child);
            argv[n++] = pids[k++];
        }
        fclose(f);
    }
    argv[n] = NULL;
    abx_local_run(argv, 1, -1, 10.0, 0);
}

void abx_local_stop(void)
{
    struct timespec ts = {0, 50 * 1000 * 1000};
    double waited = 0;
    int status = -1;
    int clean = 1;

    if (g_pid > 0) {
        kill(g_pid, SIGTERM);
        /* Not our child in the guardian (a fork of the runner): there
         * waitpid fails with ECHILD and we watch the pid instead. */
        for (;;) {
            pid_t w = waitpid(g_pid, &status, WNOHANG);
            if (w == g_pid || (w < 0 && errno != ECHILD) ||
                (w < 0 && kill(g_pid, 0) != 0)) {
                /* Died before (a crash, a SIGKILL) or exited with an error. */
                clean = w == g_pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
                break;
            }
            if (waited >= STOP_GRACE) {
                if (g_sudo)
                    sudo_kill(g_pid);
                kill(g_pid, SIGKILL);
                if (waitpid(g_pid, &status, 0) < 0)
                    nanosleep(&ts, NULL);
                clean = 0;
                break;
            }
            nanosleep(&ts, NULL);
            waited += 0.05;
        }
        /* Whatever it left in its process group (set up by spawn) goes
         * too: a wrapper script's children must not outlive the run. */
        kill(-g_pid, SIGKILL);
        g_pid = 0;
        if (!clean) {
            abx_out_printf(ABX_OUT_STDERR, "abx-local: it did not stop cleanly on SIGTERM "
                           "(a crash, an error, or still running after %.0f s): `abx-local "
                           "gc` removes what it left\n", STOP_GRACE);
            run_gc();
        }
    }
    if (g_state[0] && g_sudo) {   /* root's files: removed as root */
        const char *const rm[] = {"rm", "-rf", "--one-file-system", "--", g_state, NULL};
        abx_local_run(rm, 1, -1, 60.0, 0);
    }
    if (g_state[0])
        nftw(g_state, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    if (g_out[0])
        unlink(g_out);
    if (g_err[0])
        unlink(g_err);
    g_state[0] = g_out[0] = g_err[0] = '\0';
}
