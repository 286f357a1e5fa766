/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zc_strerror() names every code of the shared error space: zonecast's own,
 * libknot's (-1000..-501), libdnssec's (-1500..-1001) and -errno.
 */
#include <errno.h>
#include <string.h>
#include <libdnssec/error.h>
#include <libknot/errcode.h>
#include <libknot/error.h>

#include "common/error.h"
#include "tests/unit/test.h"

static void named(int code)
{
	const char *text = zc_strerror(code);
	CHECK(text != NULL && strcmp(text, "unknown error") != 0 &&
	      strcmp(text, "Unknown error") != 0 &&
	      strncmp(text, "Unknown error ", 14) != 0);
	if (text == NULL || strncmp(text, "Unknown", 7) == 0 ||
	    strcmp(text, "unknown error") == 0) {
		fprintf(stderr, "code %d: %s\n", code, text ? text : "(null)");
	}
}

int main(void)
{
	for (int code = KNOT_ERROR_MIN; code <= KNOT_ERROR_MAX; code++) {
		if (strcmp(knot_strerror(code), "unknown error") != 0 &&
		    strncmp(knot_strerror(code), "Unknown error", 13) != 0) {
			named(code); /* Every code libknot itself names. */
		}
	}
	named(KNOT_EMALF);
	named(KNOT_ETRAIL);
	named(DNSSEC_INVALID_KEY_SIZE);
	named(DNSSEC_NOT_FOUND);
	named(DNSSEC_SIGN_ERROR);
	named(-ENOENT);
	named(-ENOSPC);
	named(ZC_ENOZONE);
	named(ZC_ENATS);
	CHECK(strcmp(zc_strerror(ZC_EOK), "OK") == 0);
	CHECK(strcmp(zc_strerror(-ENOENT), strerror(ENOENT)) == 0);
	CHECK(strcmp(zc_strerror(12345), "unknown error") == 0);
	return test_done();
}
