/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Injected build failures and pauses, test hooks. When the environment variable
 * ZONECAST_FAULT_BUILD names a file, every build of a zone listed in it
 * (one zone name per line) fails with ZC_EINJECTED, after it has written
 * its nodes and before its serial moves, for as long as the name is
 * listed: the system tests make one zone's builds fail on demand and "fix
 * the cause" by emptying the file, then check that the zone was
 * quarantined, that the other zones went on, and that it is released.
 *
 * When ZONECAST_FAULT_PAUSE names a file, a full build of a zone listed
 * in it waits before each of its steps but the first, for as long as the
 * name is listed (at most 60 s): a chunked build is held half-way, so a
 * test can land a newer version of the zone in the middle of it (the
 * fencing of builder/full.c) and let the build go on by emptying the file.
 *
 * The variables are read once; without them a build pays a pthread_once
 * check and a pointer test. With one, its file is read at every zone build
 * or step (a test's cost, not production's), and zonecast says so at start.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "builder/fault.h"
#include "common/error.h"
#include "common/log.h"

/* The longest a build is held, so a test that forgets a file ends. */
#define PAUSE_MAX_MS 60000
#define PAUSE_POLL_MS 20

static const char *fault_file;
static const char *pause_file;
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;

static void fault_init(void)
{
	const char *path = getenv("ZONECAST_FAULT_BUILD");
	if (path != NULL && path[0] != '\0') {
		fault_file = path;
		zc_warn("ZONECAST_FAULT_BUILD=%s: builds of the zones listed in "
		        "that file fail on purpose (a test hook)", path);
	}
	path = getenv("ZONECAST_FAULT_PAUSE");
	if (path != NULL && path[0] != '\0') {
		pause_file = path;
		zc_warn("ZONECAST_FAULT_PAUSE=%s: full builds of the zones listed "
		        "in that file are held between two steps (a test hook)",
		        path);
	}
}

/* Whether the file lists apex (a name per line, any case, dot or not). */
static bool listed(const char *file, const knot_dname_t *apex)
{
	FILE *f = fopen(file, "r");
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
	return listed(fault_file, apex) ? ZC_EINJECTED : ZC_EOK;
}

void builder_fault_pause(const knot_dname_t *apex)
{
	pthread_once(&fault_once, fault_init);
	if (pause_file == NULL || !listed(pause_file, apex)) {
		return;
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, apex, sizeof(name));
	zc_warn("zone %s: full build held between two steps "
	        "(ZONECAST_FAULT_PAUSE)", name);
	struct timespec nap = { .tv_nsec = PAUSE_POLL_MS * 1000000L };
	for (int waited = 0; waited < PAUSE_MAX_MS && listed(pause_file, apex);
	     waited += PAUSE_POLL_MS) {
		nanosleep(&nap, NULL);
	}
	zc_warn("zone %s: full build goes on (ZONECAST_FAULT_PAUSE)", name);
}
