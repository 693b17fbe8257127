/* `abx-local check` (hostcheck.c), for main.c. */
#ifndef ABXL_CHECK_H
#define ABXL_CHECK_H

#include <stdbool.h>

/* `abx-local check [--json]` (hostcheck.c), after serve's options were
 * parsed into abxl_cfg: its exit code. */
extern const char abxl_check_help[];
int abxl_check_main(bool json);

#endif
