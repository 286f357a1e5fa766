"""An LD_PRELOAD shim for zonecast serve, compiled by the test that uses
it: it holds one transaction's BEGIN for a while, or replaces it with a
statement that fails, when a trigger file appears. Tests use it to open a
window a race would open only by chance: a session lost between BEGIN and
the first statement (test_attack_begin_queued), a builder that has not yet
read a commit (test_attack_tombstone).

Trigger files $ZC_ATK_PAUSE.1 and .2 (looked at in that order) hold
"KIND MS ACTION":

- KIND W: a write transaction's BEGIN on PostgreSQL (plain "BEGIN");
  R: a read one's (BEGIN ISOLATION LEVEL ...); B: any BEGIN, on
  PostgreSQL or SQLite, sent by the builder's thread (zc-builder);
- ACTION P: the BEGIN goes as it is after MS milliseconds; F: a statement
  that fails goes in its place.

The first matching BEGIN after a trigger appears claims it (renamed to
.hit), sleeps MS, leaves .done, and goes on."""

import os
import re
import subprocess

import pytest

import servers
from servers import wait_for

SOURCE = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libpq-fe.h>

static int by_builder(void)
{
	char name[32] = "";
	pthread_getname_np(pthread_self(), name, sizeof(name));
	return strcmp(name, "zc-builder") == 0;
}

/* sql, or the statement that fails in its place. */
static const char *maybe_pause(const char *sql, int pg)
{
	const char *base = getenv("ZC_ATK_PAUSE");
	if (base == NULL || sql == NULL || strncmp(sql, "BEGIN", 5) != 0) {
		return sql;
	}
	int is_read = strstr(sql, "ISOLATION") != NULL;
	for (int slot = 1; slot <= 2; slot++) {
		char trig[600], hit[610], done[610];
		snprintf(trig, sizeof(trig), "%s.%d", base, slot);
		FILE *f = fopen(trig, "r");
		if (f == NULL) {
			continue;
		}
		char kind = 0, action = 0;
		int ms = 0;
		int n = fscanf(f, " %c %d %c", &kind, &ms, &action);
		fclose(f);
		if (n != 3) {
			continue;
		}
		if (kind == 'B' ? !by_builder()
		                : !pg || (kind == 'R') != is_read) {
			continue;
		}
		snprintf(hit, sizeof(hit), "%s.hit", trig);
		snprintf(done, sizeof(done), "%s.done", trig);
		if (rename(trig, hit) != 0) {
			continue;
		}
		usleep((useconds_t)ms * 1000);
		close(open(done, O_CREAT | O_WRONLY, 0644));
		return action == 'F' ? "SELECT 1/0" : sql;
	}
	return sql;
}

PGresult *PQexec(PGconn *conn, const char *query)
{
	static PGresult *(*real)(PGconn *, const char *);
	if (real == NULL) {
		real = (PGresult *(*)(PGconn *, const char *))dlsym(RTLD_NEXT, "PQexec");
	}
	return real(conn, maybe_pause(query, 1));
}

int PQsendQueryParams(PGconn *conn, const char *command, int nParams,
                      const Oid *paramTypes, const char *const *paramValues,
                      const int *paramLengths, const int *paramFormats,
                      int resultFormat)
{
	static int (*real)(PGconn *, const char *, int, const Oid *,
	                   const char *const *, const int *, const int *, int);
	if (real == NULL) {
		real = (int (*)(PGconn *, const char *, int, const Oid *,
		                const char *const *, const int *, const int *,
		                int))dlsym(RTLD_NEXT, "PQsendQueryParams");
	}
	return real(conn, maybe_pause(command, 1), nParams, paramTypes,
	            paramValues, paramLengths, paramFormats, resultFormat);
}

/* SQLite's, declared here: its header need not be installed. */
typedef int (*sqlite_cb)(void *, int, char **, char **);
int sqlite3_exec(void *db, const char *sql, sqlite_cb cb, void *arg,
                 char **errmsg)
{
	static int (*real)(void *, const char *, sqlite_cb, void *, char **);
	if (real == NULL) {
		real = (int (*)(void *, const char *, sqlite_cb, void *,
		                char **))dlsym(RTLD_NEXT, "sqlite3_exec");
	}
	return real(db, maybe_pause(sql, 0), cb, arg, errmsg);
}
"""


def preload(shim):
    """LD_PRELOAD for zonecast with the shim: an ASan build needs its
    runtime first in the list (it refuses to start otherwise)."""
    ldd = subprocess.run(["ldd", servers.zonecast_bin()], capture_output=True, text=True)
    m = re.search(r"(\S*libasan\.so\S*) => (\S+)", ldd.stdout)
    return "%s:%s" % (m.group(2), shim) if m else shim


def build(tmp_path):
    """The shim compiled into tmp_path; the test is skipped without a C
    compiler or libpq's header."""
    src = tmp_path / "shim.c"
    src.write_text(SOURCE)
    out = str(tmp_path / "shim.so")
    inc = subprocess.run(["pg_config", "--includedir"], capture_output=True, text=True)
    incdir = inc.stdout.strip() if inc.returncode == 0 else "/usr/include/postgresql"
    try:
        cp = subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", out, str(src),
                             "-I", incdir, "-ldl", "-lpthread"],
                            capture_output=True, text=True)
    except OSError:
        pytest.skip("no C compiler for the LD_PRELOAD shim")
    if cp.returncode != 0:
        pytest.skip("the LD_PRELOAD shim does not build: " + cp.stderr[-500:])
    return out


def env(tmp_path):
    """(environment for a zonecast with the shim, trigger base path)."""
    base = str(tmp_path / "trigger")
    return {"LD_PRELOAD": preload(build(tmp_path)), "ZC_ATK_PAUSE": base}, base


class Pause:
    """Arms the shim (trigger slot 1 or 2) for one BEGIN of kind "W", "R"
    or "B", held ms, then sent as it is (action "P") or replaced by a
    statement that fails ("F")."""

    def __init__(self, base, slot=1):
        self.path = "%s.%d" % (base, slot)

    def arm(self, kind, ms, action="P"):
        for suffix in ("", ".hit", ".done"):
            if os.path.exists(self.path + suffix):
                os.unlink(self.path + suffix)
        with open(self.path + ".tmp", "w") as f:
            f.write("%s %d %s\n" % (kind, ms, action))
        os.rename(self.path + ".tmp", self.path)

    def claimed(self):
        return os.path.exists(self.path + ".hit")

    def hit(self, timeout=15):
        wait_for("a held BEGIN", self.claimed, timeout)

    def ended(self):
        return os.path.exists(self.path + ".done")

    def done(self, timeout=30):
        wait_for("the held BEGIN to go on", self.ended, timeout)

    def disarm(self):
        if os.path.exists(self.path):
            os.unlink(self.path)
