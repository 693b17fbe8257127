/* The wall clock, as epoch seconds: what reports and timelines show (a
 * test's start, a sandbox's lifetime). Durations use a monotonic clock. */
#ifndef ABX_WALLCLOCK_H
#define ABX_WALLCLOCK_H

double abx_wall_clock(void);

#endif
