/* The sandbox's seccomp filter (docs/security.md, "System calls"): what
 * Docker's default profile refuses to a container without CAP_SYS_ADMIN
 * and the other capabilities a sandbox lacks, as a deny list: every other
 * call is allowed, these fail with EPERM (clone3 with ENOSYS, so that
 * libc falls back to clone, whose namespace flags are then checked).
 *
 * Compiled once at start-up with libseccomp into <state>/seccomp.bpf;
 * bwrap loads it (--seccomp) as the last step before envd starts, so it
 * binds envd and everything envd starts. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "log.h"
#include "sandbox.h"

/* Each name with why it is refused; names this libseccomp does not know
 * for an architecture are skipped there. */
static const struct {
    const char *name, *why;
} denied[] = {
    {"add_key", "kernel keyrings are not namespaced"},
    {"keyctl", "kernel keyrings are not namespaced"},
    {"request_key", "kernel keyrings are not namespaced"},
    {"bpf", "loads programs into the kernel"},
    {"perf_event_open", "kernel and other processes' profiling, a frequent CVE source"},
    {"kexec_load", "replaces the running kernel"},
    {"kexec_file_load", "replaces the running kernel"},
    {"init_module", "loads kernel modules"},
    {"finit_module", "loads kernel modules"},
    {"delete_module", "unloads kernel modules"},
    {"create_module", "kernel modules (obsolete)"},
    {"get_kernel_syms", "kernel modules (obsolete)"},
    {"query_module", "kernel modules (obsolete)"},
    {"open_by_handle_at", "opens host files by handle, past mount boundaries"},
    {"name_to_handle_at", "the counterpart of open_by_handle_at"},
    {"userfaultfd", "a tool of kernel exploits (races on page faults)"},
    {"mount", "mounts (the sandbox has no CAP_SYS_ADMIN)"},
    {"umount", "mounts"},
    {"umount2", "mounts"},
    {"pivot_root", "mounts"},
    {"fsopen", "the new mount API"},
    {"fsconfig", "the new mount API"},
    {"fsmount", "the new mount API"},
    {"fspick", "the new mount API"},
    {"move_mount", "the new mount API"},
    {"open_tree", "the new mount API"},
    {"mount_setattr", "the new mount API"},
    {"unshare", "new namespaces: a nested user namespace regains capabilities"},
    {"setns", "joining other namespaces"},
    {"swapon", "the host's swap"},
    {"swapoff", "the host's swap"},
    {"reboot", "the machine's power"},
    {"acct", "process accounting of the host"},
    {"quotactl", "disk quotas of the host"},
    {"quotactl_fd", "disk quotas of the host"},
    {"settimeofday", "the host's clock"},
    {"stime", "the host's clock"},
    {"clock_settime", "the host's clock"},
    {"clock_adjtime", "the host's clock"},
    {"syslog", "the kernel log (CAP_SYSLOG)"},
    {"lookup_dcookie", "kernel profiling (CAP_SYS_ADMIN)"},
    {"nfsservctl", "the kernel NFS server"},
    {"iopl", "raw I/O ports"},
    {"ioperm", "raw I/O ports"},
    {"kcmp", "compares other processes' kernel objects (CAP_SYS_PTRACE)"},
    {"process_vm_readv", "other processes' memory (CAP_SYS_PTRACE)"},
    {"process_vm_writev", "other processes' memory (CAP_SYS_PTRACE)"},
    {"uselib", "obsolete"},
    {"ustat", "obsolete"},
    {"sysfs", "obsolete"},
    {"_sysctl", "obsolete"},
    {"vm86", "obsolete"},
    {"vm86old", "obsolete"},
    {"mbind", "NUMA policy of the host (CAP_SYS_NICE)"},
    {"set_mempolicy", "NUMA policy of the host (CAP_SYS_NICE)"},
    {"move_pages", "NUMA placement of other processes (CAP_SYS_NICE)"},
    {"fanotify_init", "watches the whole file system (CAP_SYS_ADMIN)"},
    {"io_uring_setup", "io_uring: a large kernel surface, refused by Docker since 25.0"},
    {"io_uring_enter", "io_uring"},
    {"io_uring_register", "io_uring"},
};

/* The namespace flags clone may not take (Docker's rule, without
 * CAP_SYS_ADMIN). */
static const unsigned long clone_ns_flags[] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC,
                                               CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                                               CLONE_NEWCGROUP};

size_t abxl_seccomp_denied_count(void)
{
    return sizeof denied / sizeof denied[0];
}

static int deny(scmp_filter_ctx ctx, const char *name, int err, char *msg, size_t n)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
        return 0;   /* unknown to this libseccomp: no such call to refuse */
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, 0);
    if (rc != 0 && rc != -EDOM) {
        abxl_fmt(msg, n, "seccomp: cannot refuse %s: %s", name, strerror(-rc));
        return -1;
    }
    return 0;
}

int abxl_seccomp_write(const char *path, char *err, size_t errlen)
{
    int rc = -1, fd = -1;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == NULL) {
        abxl_fmt(err, errlen, "seccomp: libseccomp cannot start a filter");
        return -1;
    }
    /* 32-bit and x32 calls of an x86-64 machine take the same rules (a
     * filter of the native architecture alone would kill them). */
    if (seccomp_arch_native() == SCMP_ARCH_X86_64) {
        int a = seccomp_arch_add(ctx, SCMP_ARCH_X86), b = seccomp_arch_add(ctx, SCMP_ARCH_X32);
        if ((a != 0 && a != -EEXIST) || (b != 0 && b != -EEXIST)) {
            abxl_fmt(err, errlen, "seccomp: cannot add the x86 and x32 architectures");
            goto out;
        }
    }
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++)
        if (deny(ctx, denied[i].name, EPERM, err, errlen) != 0)
            goto out;
    if (deny(ctx, "clone3", ENOSYS, err, errlen) != 0)
        goto out;
    for (size_t i = 0; i < sizeof clone_ns_flags / sizeof clone_ns_flags[0]; i++) {
        unsigned long f = clone_ns_flags[i];
        int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                 SCMP_A0(SCMP_CMP_MASKED_EQ, f, f));
        if (r != 0) {
            abxl_fmt(err, errlen, "seccomp: cannot restrict clone's flags: %s", strerror(-r));
            goto out;
        }
    }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int x = fd < 0 ? -errno : seccomp_export_bpf(ctx, fd);
    if (x != 0) {
        abxl_fmt(err, errlen, "seccomp: cannot write %s: %s", path, strerror(-x));
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    seccomp_release(ctx);
    return rc;
}

void abxl_seccomp_print(void)
{
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++)
        abxl_out("%-20s EPERM   %s\n", denied[i].name, denied[i].why);
    abxl_out("%-20s ENOSYS  %s\n", "clone3", "libc falls back to clone, whose flags are checked");
    abxl_out("%-20s EPERM   %s\n", "clone (ns flags)",
             "CLONE_NEWNS/UTS/IPC/USER/PID/NET/CGROUP: new namespaces");
}
