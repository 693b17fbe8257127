/* abx-local: a local E2B-compatible sandbox platform (see ../DESIGN.md).
 *
 *   abx-local serve [--listen ADDR] [--data-listen ADDR] [--state-dir DIR]
 *                   [--api-key KEY] [--templates DIR] [--cache-dir DIR]
 *                   [--envd PATH] [--bwrap PATH] [--fault-* ...]
 *   abx-local template list|build|import|rm ...   (tmplcli.c)
 *   abx-local check [--json]                      (hostcheck.c)
 *   abx-local sandbox-enter ...                   (enter.c, internal)
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "base.h"
#include "check.h"
#include "http.h"
#include "log.h"
#include "proxy.h"
#include "rootfs.h"
#include "sandbox.h"

#ifndef ABXL_VERSION
#define ABXL_VERSION "0.0.0"
#endif
/* serve's options, in `abx-local --help` and `abx-local serve --help`. */
#define SERVE_OPTIONS \
    "options of serve:\n" \
    "  --listen ADDR        control plane, IPv4:PORT (default 127.0.0.1:3000;\n" \
    "                       port 0 picks free ports)\n" \
    "  --data-listen ADDR   data plane (default: control port + 1)\n" \
    "  --state-dir DIR      sandbox folders (default /var/tmp/abx-local)\n" \
    "  --api-key KEY        API key (default: random e2b_<hex>)\n" \
    "  --templates DIR      templates dir (default: ../share/abx-local/templates\n" \
    "                       from the binary's folder, else the source tree's)\n" \
    "  --cache-dir DIR      built template roots (default $ABX_LOCAL_CACHE or\n" \
    "                       /var/cache/abx-local)\n" \
    "  --envd PATH          abx-envd binary (default: the one built or installed\n" \
    "                       with abx-local)\n" \
    "  --bwrap PATH         bubblewrap binary (default: bwrap in PATH)\n" \
    "  --runtime bwrap|gvisor\n" \
    "                       sandboxes under bubblewrap, or under gVisor's kernel\n" \
    "                       for untrusted code (default $ABX_LOCAL_RUNTIME, else\n" \
    "                       bwrap; docs/security.md)\n" \
    "  --runsc PATH         gVisor's runsc (default: runsc in PATH)\n" \
    "  --max-sandboxes N    concurrent sandboxes before create answers 429 (100)\n" \
    "  --max-memory MB      memory of all sandboxes together (default: 3/4 of\n" \
    "                       the host's)\n" \
    "  --max-pids N         processes and threads of all sandboxes together\n" \
    "                       (default: half the host's pid_max)\n" \
    "  --profile e2b|fc     the cloud to imitate: upstream E2B or FC Agent Sandbox\n" \
    "                       (default $ABX_LOCAL_PROFILE, else e2b)\n" \
    "  --switch NAME=on|off\n" \
    "                       one profile difference on or off (abx-local switches)\n" \
    "  --vary [SEED]        draw every detail FC never promised from SEED (default\n" \
    "                       $ABX_LOCAL_VARY; without SEED a random one, logged)\n" \
    "  --switch DETAIL=CHOICE\n" \
    "                       one varied detail's choice, after --vary\n" \
    "  --gateway fc|stream  FC's buffering gateway before a sandbox's own ports, or\n" \
    "                       none (--switch gateway=buffer|stream)\n" \
    "  --allow-pause        pause/resume allowed (an allow-listed FC account)\n" \
    "  --fault-latency-ms N, --fault-create-latency-ms N, --fault-delete-delay-ms N,\n" \
    "  --fault-error-rate F, --fault-data-error-rate F, --fault-error-status N,\n" \
    "  --fault-drop-stream-after N, --fault-drop-create-replies N,\n" \
    "  --fault-kill-ignored 0|1, --fault-list-filter-empty 0|1,\n" \
    "  --fault-error-body-code N, --fault-metadata-punct-refused 0|1,\n" \
    "  --fault-upload-max-bytes N, --fault-create-envs-dropped 0|1\n" \
    "                       fault injection (also POST /admin/faults at run time)\n" \
    "  -h, --help           this help\n"

#define SERVE_ABOUT \
    "Runs a local E2B-compatible sandbox platform: control plane on --listen,\n" \
    "data plane (sandbox ports, envd) on --data-listen (default: port+1).\n" \
    "Prints `export` lines for the environment, then `ready`. Needs root and\n" \
    "bubblewrap, cgroups and overlay mounts; templates whose root filesystem\n" \
    "is not built yet are built first. Sandboxes are killed on SIGTERM/SIGINT.\n"

static const char usage[] =
    "usage: abx-local serve [options]   (abx-local serve --help)\n"
    "       abx-local template list|build|import|rm ...  (abx-local template --help)\n"
    "       abx-local switches   the profile switches and their values per profile\n"
    "       abx-local gc         remove what dead servers left (abx-local gc --help)\n"
    "       abx-local check      what this host offers serve (abx-local check --help)\n"
    "       abx-local seccomp    the system calls sandboxes may not make, and why\n"
    "       abx-local --help | --version\n"
    "\n" SERVE_ABOUT "\n" SERVE_OPTIONS
    "\n"
    "exit codes: 0 done (serve: stopped by SIGTERM/SIGINT), 1 failed, 2 usage error.\n";

static const char serve_help[] =
    "usage: abx-local serve [options]\n"
    "\n" SERVE_ABOUT "\n" SERVE_OPTIONS
    "\n"
    "exit codes: 0 stopped by SIGTERM/SIGINT, 1 could not start, 2 usage error.\n";

static const char switches_help[] =
    "usage: abx-local switches [--vary SEED]\n"
    "\n"
    "Prints every profile switch (a difference between upstream E2B and FC Agent\n"
    "Sandbox that abx-local imitates), whether it is on in each profile and what\n"
    "it decides. `abx-local serve --profile P --switch NAME=on|off` picks them.\n"
    "Then every varied detail (what FC never promised) with its choices, the\n"
    "first being upstream E2B's; `serve --vary SEED` draws one of each.\n"
    "\n"
    "  --vary SEED          print only what SEED draws, DETAIL=CHOICE a line\n"
    "  -h, --help           this help\n";

/* After a usage error: one line saying where the help is (the error itself
 * was said just before), and the exit code of a usage error. */
static int usage_hint(const char *cmd)
{
    char hint[160];
    snprintf(hint, sizeof hint, "usage: abx-local %s%s...   (see abx-local %s%s--help)\n",
             cmd, cmd[0] ? " " : "", cmd, cmd[0] ? " " : "");
    abxl_usage(hint, true);
    return 2;
}

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    if (colon == NULL || (size_t)(colon - s) >= sizeof host)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || port < 0 || port > 65535)
        return -1;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

/* serve's options, for serve or check (cmd, its help; json: check's
 * --json, NULL for serve): 0 go on, 1 help printed (exit 0), 2 usage
 * error (said). */
static int parse_args(int argc, char **argv, const char *cmd, const char *help, bool *json)
{
    struct {
        const char *flag;
        char *dst;
        size_t n;
    } opts[] = {{"--listen", abxl_cfg.listen, sizeof abxl_cfg.listen},
                {"--data-listen", abxl_cfg.data_listen, sizeof abxl_cfg.data_listen},
                {"--state-dir", abxl_cfg.state_dir, sizeof abxl_cfg.state_dir},
                {"--api-key", abxl_cfg.api_key, sizeof abxl_cfg.api_key},
                {"--templates", abxl_cfg.templates_dir, sizeof abxl_cfg.templates_dir},
                {"--cache-dir", abxl_cfg.cache_dir, sizeof abxl_cfg.cache_dir},
                {"--envd", abxl_cfg.envd_path, sizeof abxl_cfg.envd_path},
                {"--bwrap", abxl_cfg.bwrap, sizeof abxl_cfg.bwrap},
                {"--runtime", abxl_cfg.runtime, sizeof abxl_cfg.runtime},
                {"--runsc", abxl_cfg.runsc, sizeof abxl_cfg.runsc}};
    char err[256];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            abxl_usage(help, false);
            return 1;
        }
        if (json != NULL && strcmp(a, "--json") == 0) {
            *json = true;
            continue;
        }
        if (strcmp(a, "--allow-pause") == 0) {
            abxl_switch_set("pause=on", err, sizeof err);
            continue;
        }
        /* --vary [SEED]: without a seed (or "random"), one is drawn and logged. */
        if (strcmp(a, "--vary") == 0) {
            bool has = i + 1 < argc && argv[i + 1][0] != '-';
            if (abxl_vary_seed_set(has ? argv[i + 1] : "random", err, sizeof err) != 0) {
                abxl_log_cmd(cmd, ABXL_LOG_ERROR, "%s", err);
                return usage_hint(cmd);
            }
            i += has;
            continue;
        }
        size_t k;
        for (k = 0; k < sizeof opts / sizeof opts[0]; k++)
            if (strcmp(a, opts[k].flag) == 0)
                break;
        bool known = k < sizeof opts / sizeof opts[0] || strcmp(a, "--max-sandboxes") == 0 ||
                     strcmp(a, "--max-memory") == 0 || strcmp(a, "--max-pids") == 0 ||
                     strcmp(a, "--profile") == 0 || strcmp(a, "--switch") == 0 ||
                     strcmp(a, "--gateway") == 0 ||
                     abxl_faults_flag(a, NULL, err, sizeof err) == 0;
        if (!known) {
            abxl_log_cmd(cmd, ABXL_LOG_ERROR, a[0] == '-' ? "unknown option %s"
                                                              : "unexpected argument %s", a);
            return usage_hint(cmd);
        }
        if (i + 1 >= argc) {
            abxl_log_cmd(cmd, ABXL_LOG_ERROR, "%s needs a value", a);
            return usage_hint(cmd);
        }
        if (k < sizeof opts / sizeof opts[0]) {
            if (strlen(argv[i + 1]) >= opts[k].n || argv[i + 1][0] == '\0') {
                abxl_log(ABXL_LOG_ERROR, "%s: value empty or too long", a);
                return 2;
            }
            snprintf(opts[k].dst, opts[k].n, "%s", argv[++i]);
            continue;
        }
        static const struct {
            const char *flag;
            long long min, max;
        } nums[] = {{"--max-sandboxes", 1, 100000}, {"--max-memory", 64, 1LL << 40},
                    {"--max-pids", 64, 1LL << 22}};
        size_t q;
        for (q = 0; q < sizeof nums / sizeof nums[0]; q++)
            if (strcmp(a, nums[q].flag) == 0)
                break;
        if (q < sizeof nums / sizeof nums[0]) {
            char *end;
            errno = 0;
            long long n = strtoll(argv[i + 1], &end, 10);
            if (argv[i + 1][0] == '\0' || *end != '\0' || errno != 0 || n < nums[q].min ||
                n > nums[q].max) {
                abxl_log_cmd(cmd, ABXL_LOG_ERROR, "%s wants an integer from %lld to %lld",
                             a, nums[q].min, nums[q].max);
                return usage_hint(cmd);
            }
            if (q == 0)
                abxl_cfg.max_sandboxes = (long)n;
            else if (q == 1)
                abxl_cfg.max_memory_mb = n;
            else
                abxl_cfg.max_pids = (long)n;
            i++;
            continue;
        }
        /* --gateway fc: FC's buffering gateway before a sandbox's own ports
         * (--switch gateway=buffer); stream: none. After --vary, as --switch. */
        if (strcmp(a, "--gateway") == 0) {
            const char *g = argv[++i];
            if (strcmp(g, "fc") != 0 && strcmp(g, "stream") != 0) {
                abxl_log(ABXL_LOG_ERROR, "--gateway: fc or stream, not '%.32s'", g);
                return 2;
            }
            abxl_vary_choice_set(g[0] == 'f' ? "gateway=buffer" : "gateway=stream", err,
                                 sizeof err);
            continue;
        }
        /* Profile flags are applied in order: --profile first resets all. */
        if (strcmp(a, "--profile") == 0 || strcmp(a, "--switch") == 0) {
            int vr = a[2] == 's' ? abxl_vary_choice_set(argv[i + 1], err, sizeof err) : 1;
            if (vr < 0 || (vr > 0 && (a[2] == 'p' ? abxl_profile_set(argv[i + 1], err, sizeof err)
                                                  : abxl_switch_set(argv[i + 1], err,
                                                                    sizeof err)) != 0)) {
                abxl_log(ABXL_LOG_ERROR, "%s: %s", a, err);
                return 2;
            }
            i++;
            continue;
        }
        if (abxl_faults_flag(a, argv[i + 1], err, sizeof err) != 0) {
            abxl_log(ABXL_LOG_ERROR, "%s: %s", a, err);
            return 2;
        }
        i++;
    }
    if (abxl_runtime_named(abxl_cfg.runtime) == NULL) {
        abxl_log_cmd(cmd, ABXL_LOG_ERROR, "--runtime (or ABX_LOCAL_RUNTIME) is bwrap or "
                     "gvisor, not '%s'", abxl_cfg.runtime);
        return usage_hint(cmd);
    }
    return 0;
}

static void *signal_main(void *arg)
{
    sigset_t *set = arg;
    int sig = 0;
    sigwait(set, &sig);
    abxl_log(ABXL_LOG_INFO, "signal %d, stopping and killing all sandboxes", sig);
    abxl_shutting_down = 1;
    abxl_spawner_stop();
    /* Watchdog: a stuck connection must not keep us (and sandboxes) alive. */
    abxl_sleep_ms(30000);
    abxl_log(ABXL_LOG_ERROR, "shutdown took over 30s, exiting");
    abxl_life_kill_all();
    _exit(2);
}

static int lock_state_dir(void)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/lock", abxl_cfg.state_dir);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        abxl_log(ABXL_LOG_ERROR, "state dir %s is in use by another abx-local (%s)",
                abxl_cfg.state_dir, strerror(errno));
        return -1;
    }
    return fd;   /* held until exit */
}

static int serve(void)
{
    char err[1024];
    struct sockaddr_in csa, dsa;
    if (parse_addr(abxl_cfg.listen, &csa) != 0 ||
        (abxl_cfg.data_listen[0] && parse_addr(abxl_cfg.data_listen, &dsa) != 0)) {
        abxl_log(ABXL_LOG_ERROR, "bad listen address (want IPV4:PORT)");
        return 2;
    }
    /* Absolute paths: bwrap binds them from its own working directory. */
    char abs[PATH_MAX];
    if (abxl_cfg.envd_path[0] && realpath(abxl_cfg.envd_path, abs) != NULL)
        abxl_fmt(abxl_cfg.envd_path, sizeof abxl_cfg.envd_path, "%s", abs);
    if (realpath(abxl_cfg.templates_dir, abs) != NULL)
        abxl_fmt(abxl_cfg.templates_dir, sizeof abxl_cfg.templates_dir, "%s", abs);
    if (abxl_spawn_check_machine(err, sizeof err) != 0) {
        abxl_log(ABXL_LOG_ERROR, "cannot run sandboxes here: %s", err);
        return 1;
    }
    /* Sandbox pid 1s that bwrap leaves unreaped (envd died on its own)
     * come to us instead of the machine's init, which may never reap
     * them; abxl_spawn_destroy reaps them. After the probe, whose own
     * leftovers we do not track. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L) != 0) {
        abxl_log(ABXL_LOG_ERROR, "cannot become a child subreaper: %s", strerror(errno));
        return 1;
    }
    if (abxl_cfg.api_key[0] == '\0') {
        char hex[41];
        if (abxl_random_hex(hex, 20) != 0)
            return 1;
        snprintf(abxl_cfg.api_key, sizeof abxl_cfg.api_key, "e2b_%s", hex);
    }
    const char *k = abxl_cfg.api_key;
    if (strncmp(k, "e2b_", 4) != 0 || k[4] == '\0' ||
        strspn(k + 4, "0123456789abcdef") != strlen(k + 4))
        abxl_log(ABXL_LOG_WARN, "the API key is not e2b_<lowercase hex>; newer E2B "
                "SDKs refuse such keys unless E2B_VALIDATE_API_KEY=false");
    char sd[4200], real[PATH_MAX];
    snprintf(sd, sizeof sd, "%s/sandboxes", abxl_cfg.state_dir);
    if ((mkdir(abxl_cfg.state_dir, 0700) != 0 && errno != EEXIST) ||
        (mkdir(sd, 0700) != 0 && errno != EEXIST) ||
        realpath(abxl_cfg.state_dir, real) == NULL ||
        abxl_fmt(abxl_cfg.state_dir, sizeof abxl_cfg.state_dir, "%s", real) != 0 ||
        abxl_fmt(abxl_cfg.sandboxes_dir, sizeof abxl_cfg.sandboxes_dir, "%s/sandboxes",
                 real) != 0) {
        abxl_log(ABXL_LOG_ERROR, "cannot create state dir %s: %s", abxl_cfg.state_dir,
                strerror(errno));
        return 1;
    }
    if (lock_state_dir() < 0)
        return 1;
    snprintf(abxl_cfg.seccomp_bpf, sizeof abxl_cfg.seccomp_bpf, "%s/seccomp.bpf", real);
    if (abxl_seccomp_write(abxl_cfg.seccomp_bpf, err, sizeof err) != 0) {
        abxl_log(ABXL_LOG_ERROR, "cannot run sandboxes here: %s", err);
        return 1;
    }
    int left = abxl_cgroup_gc();
    if (left > 0)
        abxl_log(ABXL_LOG_INFO, "removed %d group(s) of sandboxes left by dead servers", left);
    if (abxl_overlay_check(err, sizeof err) != 0 || abxl_envd_bundle(err, sizeof err) != 0) {
        abxl_log(ABXL_LOG_ERROR, "cannot run sandboxes here: %s", err);
        return 1;
    }
    if (!abxl_disk_check(err, sizeof err)) {
        abxl_cfg.disk_tmpfs = true;
        abxl_log(ABXL_LOG_WARN, "sandbox disks are tmpfs, charged to each sandbox's memory: "
                 "%s", err);
    }
    abxl_cfg.uid_ranges = abxl_uidrange_check(err, sizeof err);
    if (!abxl_cfg.uid_ranges)
        abxl_log(ABXL_LOG_WARN, "every sandbox's root is host uid %lu (no idmapped template "
                 "roots here: %s): the kernel's per-user budgets, pipe buffers among them, "
                 "are shared by all sandboxes", ABXL_UID_BASE, err);
    abxl_spawn_recover();
    /* Before `ready`: a create must never wait for a build. */
    if (abxl_templates_build_missing() != 0)
        return 1;
    if (abxl_nsnet_init() != 0 || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        abxl_log(ABXL_LOG_ERROR, "cannot initialise network namespaces or libcurl");
        return 1;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);   /* inherited by every thread */
    signal(SIGPIPE, SIG_IGN);
    struct MHD_Daemon *cd = NULL, *dd = NULL;
    bool pick = csa.sin_port == 0 && !abxl_cfg.data_listen[0];
    /* Port 0: try for a free pair P, P+1; when the machine's ports are
     * crowded (TIME_WAIT), settle for any free data port. */
    for (int attempt = 0; attempt < 21 && dd == NULL; attempt++) {
        struct sockaddr_in c = csa;
        cd = abxl_http_start(&c, &abxl_ctl_plane, 120);
        if (cd == NULL)
            break;
        struct sockaddr_in d = c;
        if (abxl_cfg.data_listen[0])
            d = dsa;
        else
            d.sin_port = htons(attempt == 20 ? 0 : (uint16_t)(ntohs(c.sin_port) + 1));
        /* Idle timeout only: a request blocked in the proxy is not idle. */
        dd = ntohs(c.sin_port) < 65535 ? abxl_http_start(&d, &abxl_proxy_plane, 600) : NULL;
        if (dd == NULL) {
            MHD_stop_daemon(cd);
            cd = NULL;
            if (!pick)
                break;
            continue;
        }
        csa = c;
        dsa = d;
    }
    if (cd == NULL || dd == NULL) {
        abxl_log(ABXL_LOG_ERROR, "cannot listen on %s (and the data port)", abxl_cfg.listen);
        return 1;
    }
    char host[INET_ADDRSTRLEN], dhost[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &csa.sin_addr, host, sizeof host);
    inet_ntop(AF_INET, &dsa.sin_addr, dhost, sizeof dhost);
    unsigned cport = ntohs(csa.sin_port), dport = ntohs(dsa.sin_port);
    snprintf(abxl_cfg.data_domain, sizeof abxl_cfg.data_domain, "localhost:%u", dport);
    if (abxl_reaper_start() != 0)
        return 1;
    pthread_t sig_tid;
    pthread_create(&sig_tid, NULL, signal_main, &set);
    pthread_detach(sig_tid);
    /* Logged before "ready": whoever reads the log once ready finds the
     * seed and the settings in it. */
    abxl_log(ABXL_LOG_INFO, "serving control plane on %s:%u, data plane on %s:%u "
            "(profile %s, runtime %s, envd %s, templates %s, state %s)", host, cport, dhost,
            dport, abxl_profile_name(), abxl_cfg.runtime, abxl_envd_version(),
            abxl_cfg.templates_dir, abxl_cfg.state_dir);
    abxl_vary_log();
    if (abxl_vary_seed() >= 0)
        abxl_out("export ABX_LOCAL_VARY=%lld\n", abxl_vary_seed());
    abxl_out("export ABX_SANDBOX_BASE_URL=http://%s:%u\n"
             "export ABX_SANDBOX_URL=http://%s:%u\n"
             "export ABX_SANDBOX_DOMAIN=%s\n"
             "export ABX_SANDBOX_API_KEY=%s\n"
             "export E2B_API_URL=http://%s:%u\n"
             "export E2B_SANDBOX_URL=http://%s:%u\n"
             "export E2B_DOMAIN=%s\n"
             "export E2B_API_KEY=%s\n"
             "ready\n",
             host, cport, dhost, dport, abxl_cfg.data_domain, abxl_cfg.api_key, host, cport, dhost,
             dport, abxl_cfg.data_domain, abxl_cfg.api_key);
    abxl_out_flush();
    abxl_spawner_run();   /* until SIGTERM/SIGINT */
    abxl_reaper_stop();
    abxl_life_kill_all();
    MHD_stop_daemon(dd);
    MHD_stop_daemon(cd);
    abxl_life_kill_all();
    abxl_cgroup_shutdown();
    curl_global_cleanup();
    abxl_log(ABXL_LOG_INFO, "stopped");
    return 0;
}

/* ABX_LOCAL_PROFILE, before any flag: flags override it. */
static int profile_default(void)
{
    char err[128];
    const char *p = getenv("ABX_LOCAL_PROFILE");
    if (abxl_profile_set(p && p[0] ? p : "e2b", err, sizeof err) != 0) {
        abxl_log(ABXL_LOG_ERROR, "ABX_LOCAL_PROFILE: %s", err);
        return -1;
    }
    p = getenv("ABX_LOCAL_VARY");
    if (p && p[0] && abxl_vary_seed_set(p, err, sizeof err) != 0) {
        abxl_log(ABXL_LOG_ERROR, "ABX_LOCAL_VARY: %s", err);
        return -1;
    }
    return 0;
}

static int switches(int argc, char **argv)
{
    if (argc > 2 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
        abxl_usage(switches_help, false);
        return 0;
    }
    /* --vary SEED: the draw of that seed, DETAIL=CHOICE a line (for tools). */
    if (argc == 4 && strcmp(argv[2], "--vary") == 0) {
        char err[160];
        if (abxl_vary_seed_set(argv[3], err, sizeof err) != 0) {
            abxl_log_cmd("switches", ABXL_LOG_ERROR, "%s", err);
            return usage_hint("switches");
        }
        abxl_vary_print_draw();
        return 0;
    }
    if (argc > 2) {
        abxl_log_cmd("switches", ABXL_LOG_ERROR, argv[2][0] == '-' ? "unknown option %s"
                                                                   : "unexpected argument %s",
                     argv[2]);
        return usage_hint("switches");
    }
    abxl_switches_print();
    abxl_vary_print();
    return 0;
}

int main(int argc, char **argv)
{
    /* What abx-local writes for sandboxes (envd's bundle, run/, template
     * roots) is read by each sandbox's own uids: a starter's umask of 077
     * made envd's loader unreadable there ("Permission denied"). */
    umask(022);
    abxl_config_defaults();
    if (profile_default() != 0)
        return 2;
    const char *cmd = argc >= 2 ? argv[1] : "";
    if (strcmp(cmd, "switches") == 0)
        return switches(argc, argv);
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        abxl_usage(usage, false);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        abxl_out("abx-local %s (envd %s, profile %s)\n", ABXL_VERSION, abxl_envd_version(),
                 abxl_profile_name());
        return 0;
    }
    if (strcmp(cmd, "gc") == 0)
        return abxl_gc_main(argc, argv);
    if (strcmp(cmd, "check") == 0) {
        bool json = false;
        int rc = parse_args(argc, argv, "check", abxl_check_help, &json);
        return rc == 1 ? 0 : rc != 0 ? rc : abxl_check_main(json);
    }
    if (strcmp(cmd, "seccomp") == 0 && argc == 2) {
        abxl_seccomp_print();
        return 0;
    }
    if (strcmp(cmd, "sandbox-enter") == 0)
        return abxl_enter_main(argc, argv);
    if (strcmp(cmd, "template") == 0)
        return abxl_template_main(argc, argv);
    if (strcmp(cmd, "serve") == 0) {
        int rc = parse_args(argc, argv, "serve", serve_help, NULL);
        if (rc == 0)
            abxl_cgroup_scope_exec(argv);
        return rc == 1 ? 0 : rc != 0 ? rc : serve();
    }
    if (cmd[0] == '\0')
        abxl_log(ABXL_LOG_ERROR, "a command is needed: serve, template or switches");
    else
        abxl_log(ABXL_LOG_ERROR, cmd[0] == '-' ? "unknown option %s" : "unknown command %s",
                 cmd);
    return usage_hint("");
}
