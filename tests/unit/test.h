/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Minimal unit-test helpers: CHECK records a failure with file and line and
 * goes on; test_done() prints "N passed, N failed" and gives the exit code.
 * Each test executable works on real files in a fresh temporary directory.
 */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_passed, test_failed;

#define CHECK(cond) do { \
	if (cond) { \
		test_passed++; \
	} else { \
		test_failed++; \
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
		        #cond); \
	} \
} while (0)

#define CHECK_EQ(a, b) do { \
	long long va_ = (long long)(a), vb_ = (long long)(b); \
	if (va_ == vb_) { \
		test_passed++; \
	} else { \
		test_failed++; \
		fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
		        __FILE__, __LINE__, #a, va_, #b, vb_); \
	} \
} while (0)

static inline int test_done(void)
{
	printf("%d passed, %d failed\n", test_passed, test_failed);
	return test_failed == 0 ? 0 : 1;
}

/* Creates a fresh temporary directory; the caller removes it. */
static inline const char *test_tmpdir(void)
{
	static char dir[] = "/tmp/zonecast-test-XXXXXX";
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	return dir;
}

static inline void test_rmdir(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0) {
		fprintf(stderr, "cannot remove %s\n", dir);
	}
}
