/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The unit of work of a record write (record_unit.h): its first failure,
 * the status and the message naming the field that its request is
 * answered with. */
#include <stdarg.h>
#include <stdio.h>

#include "api/record_unit.h"
#include "common/error.h"

/* Records the unit's first failure (status and message naming the field). */
int api_record_unit_fail(unit_t *u, unsigned status, const char *fmt, ...)
{
	if (u->err[0] == '\0') {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(u->err, sizeof(u->err), fmt, ap);
		va_end(ap);
		u->status = status;
	}
	return ZC_EUSAGE;
}
