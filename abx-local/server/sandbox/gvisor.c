/* The gVisor runtime (`serve --runtime gvisor`, docs/security.md): the
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "sandbox.h"

bool abxl_gvisor(void)
{
    return strcmp(abxl_cfg.runtime, "gvisor") == 0;
}

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

int abxl_gvisor_bundle(const struct abxl_sbx *s, bool app, char *err, size_t errlen)
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

/* runsc's command line after `--` of sandbox-enter: its state with the
 * sandbox, the namespace's network as its own, our overlay as the root
 * with gVisor's own overlay over it (its default, root:self: what the
 * sandbox writes lands in a file in our root, so on the sandbox's disk;
 * a gofer root alone has no extended attributes and looks like a network
 * file system to envd, so no file metadata and no watch), our cgroups
 * (none of its own). */
void abxl_gvisor_argv(const struct abxl_sbx *s, void (*add)(void *a, const char *), void *a)
{
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
