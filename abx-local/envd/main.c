/* abx-envd: the in-sandbox daemon of abx-local.
 *   abx-envd --config FILE [--port 49983] [--listen-addr 127.0.0.1]
 * Serves envd's REST API and the Connect JSON services process.Process and
 * filesystem.Filesystem (docs/protocol.md "envd REST", "Connect RPC"). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "version.h"

static void usage(bool error)
{
    abxl_usage("usage: abx-envd --config FILE [--port N] [--listen-addr IPV4]"
               " [--keeper PATH]\n"
               "       abx-envd --version\n", error);
}

/* The template's start command, run once at boot and never listed. */
static void run_start_command(void)
{
    struct abxl_envd_user u;
    struct abxl_envd_spawn sp;
    char err[512];
    uint32_t pid;
    cJSON *args;

    if (!abxl_envd_cfg.start_cmd)
        return;
    if (abxl_envd_user_lookup(abxl_envd_cfg.start_user, &u, err, sizeof err)) {
        abxl_log(ABXL_LOG_ERROR, "start command not run: %s", err);
        return;
    }
    /* Without all three arguments bash would start interactive. */
    if (!(args = cJSON_CreateArray()) ||
        !cJSON_AddItemToArray(args, cJSON_CreateString("-l")) ||
        !cJSON_AddItemToArray(args, cJSON_CreateString("-c")) ||
        !cJSON_AddItemToArray(args, cJSON_CreateString(abxl_envd_cfg.start_cmd))) {
        abxl_log(ABXL_LOG_ERROR, "start command not run: out of memory");
        cJSON_Delete(args);
        return;
    }
    memset(&sp, 0, sizeof sp);
    sp.cmd = "/bin/bash";
    sp.args = args;
    sp.cwd = abxl_envd_cfg.start_cwd;
    sp.hidden = 1;
    sp.user = &u;
    sp.base_envs = abxl_envd_cfg.start_env_vars;
    if (abxl_envd_proc_start(&sp, NULL, &pid, err, sizeof err))
        abxl_log(ABXL_LOG_ERROR, "start command failed: %s", err);
    else
        abxl_log(ABXL_LOG_INFO, "start command running as pid %u", pid);
    cJSON_Delete(args);
}

#if defined(__SANITIZE_ADDRESS__)
/* The sanitizer build's envd runs under the sandbox's memory limit (a
 * cgroup): ASan's default 256 MiB quarantine of freed memory would fill
 * it. A small one still catches use-after-free of recent frees. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "quarantine_size_mb=16";
}
#endif

int main(int argc, char **argv)
{
    const char *config = NULL, *addr = "127.0.0.1";
    unsigned long port = 49983;
    char err[512];
    sigset_t term;
    int sig = 0;

    /* abx-local runs envd through its own dynamic loader (so it needs
     * nothing from the template): keep the name `ps` shows envd's. */
    prctl(PR_SET_NAME, "abx-envd", 0, 0, 0);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--version") == 0) {
            abxl_out("%s\n", ABXL_ENVD_VERSION);
            return 0;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(false);
            return 0;
        } else if (strcmp(a, "--config") == 0 && v) {
            config = v;
            i++;
        } else if (strcmp(a, "--listen-addr") == 0 && v) {
            addr = v;
            i++;
        } else if (strcmp(a, "--keeper") == 0 && v) {   /* abx-keeper (keeper.c) */
            abxl_envd_keeper_set_path(v);
            i++;
        } else if (strcmp(a, "--port") == 0 && v) {
            char *end;

            errno = 0;
            port = strtoul(v, &end, 10);
            if (errno || end == v || *end || port == 0 || port > 65535) {
                abxl_log(ABXL_LOG_ERROR, "invalid --port '%s'", v);
                return 2;
            }
            i++;
        } else {
            abxl_log(ABXL_LOG_ERROR, "unknown or incomplete option '%s'", a);
            usage(true);
            return 2;
        }
    }
    if (!config) {
        abxl_log(ABXL_LOG_ERROR, "--config FILE is required");
        usage(true);
        return 2;
    }
    if (abxl_envd_config_load(config, err, sizeof err)) {
        abxl_log(ABXL_LOG_ERROR, "%s", err);
        return 1;
    }
    if (abxl_envd_bound_caps(err, sizeof err)) {   /* before any command */
        abxl_log(ABXL_LOG_ERROR, "capabilities: %s", err);
        return 1;
    }
    abxl_envd_init_if_pid1();
    /* SIGTERM/SIGINT are taken by sigwait below for an orderly stop;
     * blocked before any thread starts so that all threads inherit it. */
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigaddset(&term, SIGINT);
    pthread_sigmask(SIG_BLOCK, &term, NULL);
    abxl_envd_proc_init();
    if (abxl_envd_http_start(addr, (unsigned)port, err, sizeof err)) {
        abxl_log(ABXL_LOG_ERROR, "%s", err);
        return 1;
    }
    abxl_log_banner("%s (as envd %s) listening on %s:%lu", ABXL_ENVD_VERSION,
                    abxl_envd_compat.version, addr, port);
    /* Only as the sandbox's root: the service runs commands as root. */
    if (abxl_envd_compat.sudo && geteuid() == 0 && abxl_envd_sudo_start(err, sizeof err))
        abxl_log(ABXL_LOG_ERROR, "%s", err);
    run_start_command();
    while (sigwait(&term, &sig) != 0)
        ;
    abxl_log(ABXL_LOG_INFO, "stopping on signal %d", sig);
    abxl_envd_http_stop();
    return 0;
}
