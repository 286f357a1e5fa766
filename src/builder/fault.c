/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Injected build failures, a test hook. When the environment variable
 * ZONECAST_FAULT_BUILD names a file, every build of a zone listed in it
 * (one zone name per line) fails with ZC_EINJECTED, after it has written
 * its nodes and before its serial moves, for as long as the name is
 * listed: the system tests make one zone's builds fail on demand and "fix
 * the cause" by emptying the file, then check that the zone was
 * quarantined, that the other zones went on, and that it is released.
 *
 * The variable is read once; without it a build pays a pthread_once check
 * and a pointer test. With it, the file is read at every zone build (a
 * test's cost, not production's), and zonecast says so at start.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/fault.h"
#include "common/error.h"
#include "common/log.h"

static const char *fault_file;
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;

static void fault_init(void)
{
	const char *path = getenv("ZONECAST_FAULT_BUILD");
	if (path != NULL && path[0] != '\0') {
		fault_file = path;
		zc_warn("ZONECAST_FAULT_BUILD=%s: builds of the zones listed in "
		        "that file fail on purpose (a test hook)", path);
	}
}

/* Whether the file lists apex (a name per line, any case, dot or not). */
static bool listed(const knot_dname_t *apex)
{
	FILE *f = fopen(fault_file, "r");
	if (f == NULL) {
		return false;
	}
	char line[KNOT_DNAME_TXT_MAXLEN + 2];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, " \t\r\n")] = '\0';
		uint8_t name[KNOT_DNAME_MAXLEN];
		found = line[0] != '\0' &&
		        knot_dname_from_str(name, line, sizeof(name)) != NULL &&
		        knot_dname_is_case_equal(name, apex);
	}
	fclose(f);
	return found;
}

void builder_fault_init(void)
{
	pthread_once(&fault_once, fault_init);
}

int builder_fault_check(const knot_dname_t *apex)
{
	pthread_once(&fault_once, fault_init);
	if (fault_file == NULL) {
		return ZC_EOK;
	}
	return listed(apex) ? ZC_EINJECTED : ZC_EOK;
}
