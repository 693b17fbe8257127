/* The gVisor runtime (runtime.h; `serve --runtime gvisor`, docs/security.md): the
 * sandbox's processes run on gVisor's kernel in user space (runsc's
 * "sentry"), so their system calls never reach the host's kernel directly.
 * sandbox-enter prepares the same root as for bubblewrap, stages it with
 * the sandbox's folder under ABXL_STAGE, and runs `runsc run` as pid 1 of
 * fresh pid and network namespaces: envd's port is a real socket in that
 * network namespace (--network=host of a namespace with only loopback),
 * reached like a bwrap sandbox's. The sentry and its gofer run in the
 * bundle's user namespace, as host uid ABXL_UID_BASE. The platform is
 * ptrace: it runs wherever runsc does (KVM's hung at boot in a nested VM).
 *
 * The OCI bundle: <dir>/oci/config.json, written here; runsc's state in
 * <dir>/runsc. Both go with the sandbox's folder. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base.h"
#include "log.h"
#include "sandbox.h"

static cJSON *strings(const char *const *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

static cJSON *mount_of(const char *dest, const char *type, const char *src,
                       const char *const *opts, size_t nopts)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "destination", dest);
    cJSON_AddStringToObject(m, "type", type);
    cJSON_AddStringToObject(m, "source", src);
    if (nopts)
        cJSON_AddItemToObject(m, "options", strings(opts, nopts));
    return m;
}

static void add_string(void *a, const char *w)
{
    cJSON_AddItemToArray(a, cJSON_CreateString(w));
}

/* The process: envd as under bwrap, with the same capabilities (gVisor
 * checks them against its own kernel). */
static cJSON *process(void)
{
    static const char *const env[] = {
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
    cJSON *args = cJSON_CreateArray();
    if (args)
        abxl_envd_cmdline(add_string, args);
    cJSON *p = cJSON_CreateObject(), *user = cJSON_CreateObject(), *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(user, "uid", 0);
    cJSON_AddNumberToObject(user, "gid", 0);
    cJSON_AddItemToObject(p, "user", user);
    cJSON_AddItemToObject(p, "args", args);
    cJSON_AddItemToObject(p, "env", strings(env, 1));
    cJSON_AddStringToObject(p, "cwd", "/");
    static const char *const sets[] = {"bounding", "effective", "permitted"};
    for (size_t i = 0; i < 3; i++)
        cJSON_AddItemToObject(c, sets[i], strings(abxl_sandbox_caps, ABXL_SANDBOX_NCAPS));
    cJSON_AddItemToObject(p, "capabilities", c);
    cJSON_AddBoolToObject(p, "noNewPrivileges", true);
    return p;
}

/* The sandbox's folder: the bundle runsc runs (sbxdir.c made the rest). */
static int bundle(const struct abxl_sbx *s, bool app, char *err, size_t errlen)
{
    static const char *const nosuid[] = {"nosuid", "noexec", "nodev"};
    static const char *const pts[] = {"nosuid", "noexec", "newinstance", "ptmxmode=0666",
                                      "mode=0620"};
    static const char *const shm[] = {"nosuid", "nodev", "mode=1777"};
    static const char *const ns[] = {"pid", "ipc", "uts", "mount", "user"};
    char dir[4400], path[4500];
    int rc = -1;
    abxl_fmt(dir, sizeof dir, "%s/oci", s->dir);
    cJSON *spec = cJSON_CreateObject(), *root = cJSON_CreateObject();
    cJSON *mounts = cJSON_CreateArray(), *linux = cJSON_CreateObject();
    cJSON *nss = cJSON_CreateArray();
    if (!spec || !root || !mounts || !linux || !nss) {
        cJSON_Delete(root);
        cJSON_Delete(mounts);
        cJSON_Delete(linux);
        cJSON_Delete(nss);
        goto out;
    }
    cJSON_AddStringToObject(spec, "ociVersion", "1.0.2");
    cJSON_AddItemToObject(spec, "process", process());
    cJSON_AddStringToObject(root, "path", ABXL_STAGE_ROOT);
    cJSON_AddBoolToObject(root, "readonly", false);
    cJSON_AddItemToObject(spec, "root", root);
    cJSON_AddStringToObject(spec, "hostname", s->id);
    cJSON_AddItemToArray(mounts, mount_of("/proc", "proc", "proc", NULL, 0));
    cJSON_AddItemToArray(mounts, mount_of("/dev", "tmpfs", "tmpfs", nosuid, 1));
    cJSON_AddItemToArray(mounts, mount_of("/dev/pts", "devpts", "devpts", pts, 5));
    cJSON_AddItemToArray(mounts, mount_of("/dev/shm", "tmpfs", "shm", shm, 3));
    /* The read-only binds sandbox-enter made in the root, as mounts of
     * their own: gVisor's overlay (--overlay2=root:self) covers the root
     * only, so these stay read-only, as under bwrap. */
    static const char *const ro[] = {"rbind", "ro", "nosuid", "nodev"};
    const char *const dests[] = {"/opt/abx/bin", "/run/abx", app ? "/opt/abx/app" : NULL};
    for (size_t i = 0; i < sizeof dests / sizeof dests[0] && dests[i]; i++) {
        abxl_fmt(path, sizeof path, "%s%s", ABXL_STAGE_ROOT, dests[i]);
        cJSON_AddItemToArray(mounts, mount_of(dests[i], "bind", path, ro, 4));
    }
    cJSON_AddItemToObject(spec, "mounts", mounts);
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", ns[i]);
        cJSON_AddItemToArray(nss, o);
    }
    cJSON_AddItemToObject(linux, "namespaces", nss);
    /* The sentry itself runs in that user namespace: root inside gVisor
     * is the sandbox's host uid, as under bubblewrap, and the template
     * root (idmapped to its range by sandbox-enter) is shown to it as 0.. */
    static const char *const maps[] = {"uidMappings", "gidMappings"};
    for (size_t i = 0; i < 2; i++) {
        cJSON *arr = cJSON_CreateArray(), *m = cJSON_CreateObject();
        cJSON_AddNumberToObject(m, "containerID", 0);
        cJSON_AddNumberToObject(m, "hostID", (double)s->uid_base);
        cJSON_AddNumberToObject(m, "size", (double)ABXL_UID_COUNT);
        cJSON_AddItemToArray(arr, m);
        cJSON_AddItemToObject(linux, maps[i], arr);
    }
    cJSON_AddItemToObject(spec, "linux", linux);
    char *text = cJSON_PrintUnformatted(spec);
    abxl_fmt(path, sizeof path, "%s/config.json", dir);
    if (text && (mkdir(dir, 0700) == 0 || errno == EEXIST) &&
        abxl_write_small(path, text, 0600) == 0)
        rc = 0;
    free(text);
out:
    cJSON_Delete(spec);
    if (rc != 0)
        abxl_fmt(err, errlen, "cannot write the sandbox's OCI bundle %s: %s", dir,
                 strerror(errno));
    return rc;
}

/* No seccomp program of ours nor user namespace (runsc makes its own),
 * then runsc's command line after `--` of sandbox-enter: its state with the
 * sandbox, the namespace's network as its own, our overlay as the root
 * with gVisor's own overlay over it (its default, root:self: what the
 * sandbox writes lands in a file in our root, so on the sandbox's disk;
 * a gofer root alone has no extended attributes and looks like a network
 * file system to envd, so no file metadata and no watch), our cgroups
 * (none of its own). */
static void enter_argv(const struct abxl_sbx *s, void (*add)(void *a, const char *), void *a)
{
    add(a, "--");
    add(a, abxl_cfg.runsc);
    add(a, "--root=" ABXL_STAGE_SBX "/runsc");
    add(a, "--network=host");
    add(a, "--platform=ptrace");
    add(a, "--overlay2=root:self");
    add(a, "--ignore-cgroups");
    add(a, "run");
    add(a, "--bundle");
    add(a, ABXL_STAGE_SBX "/oci");
    add(a, s->id);
}

static int die(const char *what)
{
    abxl_log(ABXL_LOG_ERROR, "sandbox root: %s: %s", what, strerror(errno));
    return 125;
}

static int loopback_up(void)
{
    struct ifreq ifr = {0};
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = -1;
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    if (fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

/* sandbox-enter's last step: runsc as pid 1 of fresh pid, network, ipc
 * and uts namespaces (its --network=host is this network namespace,
 * loopback only, where the server reaches envd as under bwrap). We stay
 * outside as its parent: the info fd gets its host pid as bwrap's would,
 * we die with the server and it dies with us. */
static int run(const struct abxl_enter_run *r)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 ||
        unshare(CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) != 0)
        return die("cannot create the sandbox's namespaces");
    pid_t pid = fork();
    if (pid < 0)
        return die("cannot fork");
    if (pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || loopback_up() != 0)
            _exit(die("cannot bring up the loopback interface"));
        /* runsc finds its own processes in /proc by pid: this namespace's
         * pids, not the host's. */
        if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
            _exit(die("cannot mount the namespace's /proc"));
        close(3);
        close_range(4, ~0U, CLOSE_RANGE_CLOEXEC);
        char *empty[] = {NULL};
        syscall(SYS_execveat, r->exe, "", r->argv, empty, AT_EMPTY_PATH);
        abxl_log(ABXL_LOG_ERROR, "sandbox root: cannot run %s: %s", r->argv[0],
                 strerror(errno));
        _exit(125);
    }
    char info[64];
    int n = snprintf(info, sizeof info, "{\"child-pid\": %d}\n", (int)pid);
    if (write(3, info, (size_t)n) != n)
        abxl_log(ABXL_LOG_ERROR, "sandbox root: cannot report the sandbox's pid: %s",
                 strerror(errno));
    close(3);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* runsc present; bubblewrap too, and its probe: the namespaces it tries
 * are the ones run() makes (and bubblewrap stays abx-local's tool). */
static int check(char *err, size_t errlen)
{
    if (access(abxl_cfg.runsc, X_OK) != 0) {
        snprintf(err, errlen, "gVisor not found: %s is not executable (install the 'runsc' "
                 "package or pass --runsc PATH)", abxl_cfg.runsc);
        return -1;
    }
    return abxl_bwrap_check(err, errlen);
}

const struct abxl_runtime abxl_runtime_gvisor = {
    .name = "gvisor",
    .check = check,
    .prepare = bundle,
    .enter_argv = enter_argv,
    .stage_dir = true,   /* runsc's bundle and state, at ABXL_STAGE_SBX */
    .run = run,
    .fs_pause_keeps_memory = "gVisor: the root's writable layer is in the sentry's memory",
    .pids_are_processes = false,   /* the sentry's threads and address spaces */
};
