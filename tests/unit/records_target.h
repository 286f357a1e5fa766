/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The records store a unit test opens (docs/postgresql.md "Tests"): its
 * temporary directory (SQLite), or, when ZC_TEST_BACKEND=pg, a fresh
 * PostgreSQL database of its own on the cluster whose socket directory is
 * $ZC_TEST_PGHOST (dev/pg start). A pg run without ZC_TEST_PGHOST, or
 * built without libpq, exits 77: meson counts the test as skipped. Every
 * call in one process gives the same target.
 */
#pragma once

#include <stdbool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef ZC_HAVE_LIBPQ
#include <libpq-fe.h>
#endif

static inline bool test_backend_is_pg(void)
{
	const char *b = getenv("ZC_TEST_BACKEND");
	return b != NULL && strcmp(b, "pg") == 0;
}

static inline const char *test_records_target(const char *dir)
{
	static char uri[512];
	if (!test_backend_is_pg()) {
		return dir;
	}
	if (uri[0] != '\0') {
		return uri;
	}
	const char *host = getenv("ZC_TEST_PGHOST");
#ifdef ZC_HAVE_LIBPQ
	if (host != NULL && host[0] != '\0') {
		char conninfo[300], sql[96];
		snprintf(conninfo, sizeof(conninfo),
		         "host=%s user=zc dbname=postgres", host);
		PGconn *c = PQconnectdb(conninfo);
		/* A name of this process and moment: a cluster kept across
		 * runs holds the databases of earlier processes, whose pids
		 * come round again. */
		PGresult *r = NULL;
		for (int i = 0; i < 5 && PQstatus(c) == CONNECTION_OK; i++) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			snprintf(sql, sizeof(sql), "CREATE DATABASE t_%ld_%ld%09ld",
			         (long)getpid(), (long)ts.tv_sec % 100000,
			         (long)ts.tv_nsec);
			PQclear(r);
			r = PQexec(c, sql);
			if (PQresultStatus(r) == PGRES_COMMAND_OK) {
				break;
			}
		}
		if (r == NULL || PQresultStatus(r) != PGRES_COMMAND_OK) {
			fprintf(stderr, "cannot make a test database: %s\n",
			        PQerrorMessage(c));
			exit(1);
		}
		PQclear(r);
		PQfinish(c);
		snprintf(uri, sizeof(uri), "postgresql://zc@/%s?host=%s",
		         sql + strlen("CREATE DATABASE "), host);
		return uri;
	}
#endif
	(void)host;
	fprintf(stderr, "no PostgreSQL for this test (ZC_TEST_PGHOST unset"
	        " or no libpq): skipped\n");
	exit(77);
}

/* Runs SQL on the test's store behind the store's back (as a bug or a
 * manual edit would): 0 when it ran. */
#include <sqlite3.h>
static inline int test_records_exec(const char *dir, const char *sql)
{
	const char *target = test_records_target(dir);
#ifdef ZC_HAVE_LIBPQ
	if (test_backend_is_pg()) {
		PGconn *c = PQconnectdb(target);
		PGresult *r = PQexec(c, sql);
		int ok = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -1;
		PQclear(r);
		PQfinish(c);
		return ok;
	}
#endif
	char path[512];
	snprintf(path, sizeof(path), "%s/records.db", target);
	sqlite3 *db;
	int rc = sqlite3_open(path, &db);
	if (rc == SQLITE_OK) {
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	}
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -1;
}
