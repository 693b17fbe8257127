/* abx-keeper PID: the keeper of command PID (keeper.h), exec'd by the
 * fork of envd that forked the command; its control pipe is fd 3. Static
 * and small: one runs for each command that lives. */
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "keeper.h"

int main(int argc, char **argv)
{
    long pid = 0;
    const char *p = argc == 2 ? argv[1] : "";

    for (; *p >= '0' && *p <= '9' && pid < 1L << 30; p++)
        pid = pid * 10 + (*p - '0');
    if (argc != 2 || *p || pid <= 0)
        return 2;   /* only envd runs it: nobody to tell */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);   /* kept across exec too */
    abxl_keeper_run((pid_t)pid, ABXL_KEEPER_CTL_FD);
}
