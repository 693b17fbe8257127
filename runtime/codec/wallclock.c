/* Epoch seconds with sub-second precision (wallclock.h). */
#include "wallclock.h"

#include <time.h>

double abx_wall_clock(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
