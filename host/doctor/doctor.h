/* `abx-e2e doctor`, the preflight (doctor_int.h: its sections). */
#ifndef ABX_HOST_DOCTOR_H
#define ABX_HOST_DOCTOR_H

#include "config.h"

/* `abx-e2e doctor` (doctor.c): the preflight; returns the exit code (0
 * nothing blocks, 1 a blocking problem, 2 interrupted). */
int abx_doctor_main(struct abx_config *cfg);

#endif
