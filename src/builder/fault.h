/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to builder/: injected build failures for the system tests
 * (fault.c).
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
