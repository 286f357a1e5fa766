/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to builder/: injected build failures and pauses for the system
 * tests (fault.c).
 */
#pragma once

#include <libknot/dname.h>

/*
 * ZC_EINJECTED when ZONECAST_FAULT_BUILD names a file that lists the zone
 * `apex`, else ZC_EOK. Without the variable (production) this costs one
 * test of a pointer.
 */
int builder_fault_check(const knot_dname_t *apex);

/* Reads the variable now (so that zonecast says it at start). */
void builder_fault_init(void);

/*
 * Holds a full build of `apex` between two of its steps for as long as
 * ZONECAST_FAULT_PAUSE names a file that lists the zone (at most 60 s), so
 * a system test can land a change in the middle of a chunked build.
 * Without the variable (production) this costs one test of a pointer.
 */
void builder_fault_pause(const knot_dname_t *apex);
