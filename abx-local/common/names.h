/* Names abx-local and envd take from clients, checked alike by both. */
#ifndef ABXL_NAMES_H
#define ABXL_NAMES_H

#include <stdbool.h>

/* An environment variable's name: what a shell can set ([A-Za-z_]
 * [A-Za-z0-9_]*), and nothing that would make "K=V" mean another
 * variable (a '=', a space, an empty name). */
bool abxl_env_name(const char *k);

#endif
