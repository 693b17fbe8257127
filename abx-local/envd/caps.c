/* The capability bounding set of everything in the sandbox is what envd
 * was given, as runc bounds a container's to its configured set
 * (docs/security.md). bubblewrap (0.8) grants the kept capabilities but
 * leaves the bounding set full; abx-local adds CAP_SETPCAP for this step
 * alone: envd drops every other capability from the bounding set, then
 * CAP_SETPCAP from all of its sets. Under gVisor the bundle bounds the set
 * itself, and envd has no CAP_SETPCAP: nothing to do. */
#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon.h"

#define BIT(c) ((uint64_t)1 << (c))

int abxl_envd_bound_caps(char *err, size_t errlen)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];

    if (syscall(SYS_capget, &h, d) != 0) {
        snprintf(err, errlen, "capget: %s", strerror(errno));
        return -1;
    }
    uint64_t perm = d[0].permitted | (uint64_t)d[1].permitted << 32;
    if (!(perm & BIT(CAP_SETPCAP)))
        return 0;
    uint64_t keep = perm & ~BIT(CAP_SETPCAP);
    for (int c = 0; c < 64; c++) {
        int in = prctl(PR_CAPBSET_READ, c, 0, 0, 0);
        if (in < 0)
            break;   /* past the kernel's last capability */
        if (in == 1 && !(keep & BIT(c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0) {
            snprintf(err, errlen, "cannot drop capability %d from the bounding set: %s", c,
                     strerror(errno));
            return -1;
        }
    }
    /* CAP_SETPCAP out of the ambient set first (it needs it in the
     * permitted and inheritable sets), then out of all three. */
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_SETPCAP, 0, 0);
    d[0].effective &= ~(uint32_t)BIT(CAP_SETPCAP);
    d[0].permitted &= ~(uint32_t)BIT(CAP_SETPCAP);
    d[0].inheritable &= ~(uint32_t)BIT(CAP_SETPCAP);
    if (syscall(SYS_capset, &h, d) != 0) {
        snprintf(err, errlen, "capset: %s", strerror(errno));
        return -1;
    }
    return 0;
}
