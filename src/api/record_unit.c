/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The unit of work of a record write (record_unit.h): its first failure,
 * the status and the message naming the field that its request is
 * answered with, and the place in the request of the op that failed. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api/record_unit.h"
#include "common/error.h"

/* Whether msg starts with a field's name and ": " ("content: ...",
 * "data.priority: ..."): it then follows a batch op's place after a dot,
 * as the members' checks name theirs ("posts[2].content"). */
static bool names_field(const char *msg)
{
	size_t n = strspn(msg, "abcdefghijklmnopqrstuvwxyz_.[]0123456789");
	return n > 0 && msg[n] == ':' && msg[n + 1] == ' ';
}

/* Records the unit's first failure (status and message naming the
 * field), after the place of the op that failed when the request has
 * several: a batch's "posts[2].", an import's "file: line 7: " (a batch
 * of 1,000 changes, or a file of as many lines, said which field but not
 * which of them). */
int api_record_unit_fail(unit_t *u, unsigned status, const char *fmt, ...)
{
	if (u->err[0] != '\0') {
		return ZC_EUSAGE;
	}
	char msg[sizeof(u->err) - 64]; /* Room for the place before it. */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	const op_t *op = u->op;
	if (op != NULL && op->list != NULL) {
		snprintf(u->err, sizeof(u->err), "%s[%zu]%s%s", op->list,
		         op->index, names_field(msg) ? "." : ": ", msg);
	} else if (op != NULL && op->line > 0) {
		snprintf(u->err, sizeof(u->err), "file: line %llu: %s",
		         (unsigned long long)op->line, msg);
	} else {
		snprintf(u->err, sizeof(u->err), "%s", msg);
	}
	u->status = status;
	return ZC_EUSAGE;
}
