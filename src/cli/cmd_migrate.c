/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast migrate --data-dir DIR --to postgresql://...|sqlite: moves a
 * data directory's records store to the other engine (docs/postgresql.md,
 * docs/design-postgresql.md §1.3) and binds the directory to it; the edge
 * store, the signed view and the rest of DIR stay as they are.
 *
 * Design
 *
 * - Only with no server: the command takes DIR/serve.lock as the writing
 *   commands do (data_dir.c) and refuses while anything holds it. A serve
 *   started meanwhile refuses to start.
 * - The copy is records_copy() (records/migrate.c): one transaction on the
 *   target, which must be empty, every id and change-log sequence kept,
 *   and every table's id high-water mark, so IXFR goes on from the same
 *   journal and no id is handed out twice. Nothing is changed before it
 *   committed.
 * - The edge store (DIR/edge.mdb) stays valid for the new store: the
 *   position of the change log it applied is translated into the new
 *   store's numbering by the copy (sequences on SQLite, commit positions
 *   on PostgreSQL: changelog.h, "Positions"), and once DIR is switched
 *   over, the edge is restamped with it (builder_edge_migrated(): fences
 *   capped, the numbering and applied_seq in one LMDB transaction). The
 *   next start goes on from there as after a restart: no full build, a
 *   quarantined zone still served from its last good build and still in
 *   quarantine. Should that fail, or the position have no place in the
 *   new numbering, the edge keeps the old numbering and the next start
 *   builds every zone again (builder_edge_prepare()). A crash between the
 *   switch and the restamp ends the same way.
 * - Then DIR is switched over, the old store kept but out of the way:
 *   - to PostgreSQL: DIR/records-store is written first
 *     (records_bind_replacing(); from then on the binding wins over
 *     records.db), then records.db (with any -wal/-shm) is renamed
 *     records.db.migrated-TIME; should that fail, the binding is removed;
 *   - to SQLite: the new store is made in DIR/migrate.tmp/records.db,
 *     moved to DIR/records.db once committed and closed, then
 *     records-store is renamed records-store.migrated-TIME (until then the
 *     binding wins, so a crash in between leaves DIR on PostgreSQL).
 *   The PostgreSQL database left behind is not touched. Each step is made
 *   durable (the directory fsynced) before the next, so a crash anywhere
 *   leaves DIR on one whole store, the old or the new.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "builder/builder.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "common/error.h"
#include "common/fs.h"

#define WHO "zonecast migrate"

static void usage(FILE *out)
{
	fputs("Usage: zonecast migrate --data-dir DIR --to postgresql://...|sqlite\n"
	      "                        [--config FILE] [--quiet]\n"
	      "\n"
	      "Moves the records store of DIR (zones, records, tokens, TSIG and\n"
	      "DNSSEC keys, secondaries, the change log) to the other engine, in\n"
	      "one transaction, keeping every id, and binds DIR to it:\n"
	      "  --to postgresql://...  from DIR/records.db into an empty\n"
	      "                         PostgreSQL database; records.db is kept\n"
	      "                         as records.db.migrated-TIME\n"
	      "  --to sqlite            from the PostgreSQL store DIR is bound to\n"
	      "                         into a new DIR/records.db; the binding is\n"
	      "                         kept as records-store.migrated-TIME\n"
	      "No zonecast serve may run on DIR. The edge store stays: start\n"
	      "zonecast serve again afterwards. --quiet: no progress line.\n", out);
}

typedef struct {
	const char *dir;
	const char *to;
	bool quiet;
	char stamp[32];        /* The suffix of what is kept aside. */
	char from_where[4400]; /* For the summary. */
	char to_where[4400];
	edge_store_t *es;      /* DIR/edge.mdb, when there is one. */
	bool edge_usable;      /* It applied the old store's numbering. */
	uint64_t applied;      /* The position it applied, in it. */
	unsigned numbering[2]; /* The old store's, the new store's. */
	records_copy_summary_t sum;
} migrate_t;

static int path_in(char *out, size_t size, const char *dir, const char *name)
{
	int n = snprintf(out, size, "%s/%s", dir, name);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : ZC_EOK;
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* Renames DIR/name to DIR/name.migrated-STAMP (nothing when absent, unless
 * required). */
static int put_aside(const migrate_t *m, const char *name, bool required)
{
	char from[4200], to[4300];
	int ret = path_in(from, sizeof(from), m->dir, name);
	if (ret != ZC_EOK) {
		return ret;
	}
	snprintf(to, sizeof(to), "%s.migrated-%s", from, m->stamp);
	if (!required && !exists(from)) {
		return ZC_EOK;
	}
	if (rename(from, to) != 0) {
		int err = errno;
		fprintf(stderr, WHO ": cannot rename %s to %s: %s\n", from, to,
		        strerror(err));
		return -err;
	}
	return zc_fs_sync_dir(m->dir);
}

/* Undoes records_bind_replacing() (after a failure, best effort). */
static void unbind(const migrate_t *m)
{
	char path[4200];
	if (path_in(path, sizeof(path), m->dir, RECORDS_STORE_FILE) == ZC_EOK &&
	    (unlink(path) != 0 || zc_fs_sync_dir(m->dir) != 0)) {
		fprintf(stderr, WHO ": cannot remove %s: %s\n", path,
		        strerror(errno));
	}
}

/* Undoes put_aside() (after a failure, best effort). */
static void take_back(const migrate_t *m, const char *name)
{
	char from[4200], to[4300];
	if (path_in(from, sizeof(from), m->dir, name) == ZC_EOK) {
		snprintf(to, sizeof(to), "%s.migrated-%s", from, m->stamp);
		if (exists(to) && rename(to, from) != 0) {
			fprintf(stderr, WHO ": cannot rename %s back to %s: %s\n",
			        to, from, strerror(errno));
		}
	}
}

static void on_rows(uint64_t rows, void *ctx)
{
	cli_progress_set(ctx, rows);
}

/* Opens DIR/edge.mdb when there is one and reads the position it applied
 * of from's change log. Without one (or unreadable) nothing is carried:
 * the next start builds it. */
static void open_edge(migrate_t *m, records_store_t *from)
{
	char path[4200];
	struct stat st;
	if (path_in(path, sizeof(path), m->dir, "edge.mdb") != ZC_EOK ||
	    stat(path, &st) != 0) {
		return;
	}
	const char *mb = getenv("ZONECAST_EDGE_MAP_MB");
	size_t map = mb != NULL ? (size_t)strtoull(mb, NULL, 10) << 20 : 0;
	int ret = edge_open(&m->es, m->dir, map);
	if (ret == ZC_EOK) {
		m->numbering[0] = records_changelog_numbering(from);
		ret = builder_edge_applied_by(m->es, m->numbering[0], &m->applied,
		                              &m->edge_usable);
	}
	if (ret != ZC_EOK) {
		fprintf(stderr, WHO ": cannot read %s: %s; it will be built "
		        "again at the next start\n", path, zc_strerror(ret));
		m->edge_usable = false;
	}
}

/* Once DIR is on the new store: the edge store goes on from the position
 * it applied, translated by the copy. */
static void carry_edge(migrate_t *m)
{
	if (m->es == NULL) {
		return;
	}
	int ret = ZC_EOK;
	if (m->edge_usable && m->sum.position_kept) {
		ret = builder_edge_migrated(m->es, m->numbering[0],
		                            m->numbering[1], m->sum.position);
		if (ret == ZC_EOK) {
			printf("the edge store goes on from the change log's "
			       "position %llu (its zones as served, quarantined "
			       "ones too)\n", (unsigned long long)m->sum.position);
			return;
		}
	}
	if (ret != ZC_EOK) {
		fprintf(stderr, WHO ": cannot carry %s/edge.mdb over: %s\n",
		        m->dir, zc_strerror(ret));
	}
	printf("the edge store will be built again at the next start\n");
}

/* Copies from into to with a progress line, then prints the summary. */
static int copy(migrate_t *m, records_store_t *from, records_store_t *to)
{
	uint64_t total = 0;
	int ret = records_copy_count(from, &total);
	if (ret != ZC_EOK) {
		fprintf(stderr, WHO ": cannot read %s: %s\n", m->from_where,
		        zc_strerror(ret));
		return ret;
	}
	open_edge(m, from);
	m->numbering[1] = records_changelog_numbering(to);
	cli_progress_t p;
	cli_progress_begin(&p, !m->quiet, "copying", total);
	p.unit = "rows";
	records_copy_summary_t *sum = &m->sum;
	ret = records_copy(from, to, m->edge_usable ? m->applied : 0, on_rows,
	                   &p, sum);
	double secs = cli_progress_elapsed(&p);
	cli_progress_end(&p);
	if (ret == ZC_EEXISTS) {
		fprintf(stderr, WHO ": %s is not empty (table %s has rows): "
		        "migrate only into an empty store; nothing was changed\n",
		        m->to_where, sum->not_empty);
		return ret;
	}
	if (ret != ZC_EOK) {
		fprintf(stderr, WHO ": copying into %s failed: %s; nothing was "
		        "changed\n", m->to_where, zc_strerror(ret));
		return ret;
	}
	printf("copied %s\n    -> %s\n", m->from_where, m->to_where);
	for (size_t i = 0; i < RECORDS_COPY_TABLES; i++) {
		printf("  %-18s %10llu rows\n", sum->tables[i].table,
		       (unsigned long long)sum->tables[i].rows);
	}
	printf("  %-18s %10llu rows in %.1f s (change log up to sequence "
	       "%llu)\n", "total", (unsigned long long)sum->rows, secs,
	       (unsigned long long)sum->last_seq);
	return ZC_EOK;
}

/* Names a store for the messages (a URI without its password). */
static void describe(const char *target, char *out, size_t size)
{
	const char *backend;
	char where[4096];
	if (records_describe(target, &backend, where, sizeof(where)) != ZC_EOK) {
		snprintf(out, size, "%s", target);
		return;
	}
	snprintf(out, size, "%s %s", strcmp(backend, "sqlite") == 0 ?
	         "SQLite" : "PostgreSQL", where);
}

static int to_postgresql(migrate_t *m)
{
	describe(m->dir, m->from_where, sizeof(m->from_where));
	describe(m->to, m->to_where, sizeof(m->to_where));
	records_store_t *from = NULL, *to = NULL;
	int ret = records_open(&from, m->dir);
	if (ret != ZC_EOK) {
		fprintf(stderr, WHO ": cannot open %s: %s\n", m->from_where,
		        zc_strerror(ret));
		return ret;
	}
	ret = records_open(&to, m->to);
	if (ret != ZC_EOK) {
		fprintf(stderr, WHO ": cannot open %s: %s; nothing was changed\n",
		        m->to_where, zc_strerror(ret));
		records_close(from);
		return ret;
	}
	ret = copy(m, from, to);
	records_close(to);
	records_close(from);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = records_bind_replacing(m->dir, m->to);
	if (ret != ZC_EOK) {
		fprintf(stderr, WHO ": cannot bind %s to %s: %s\n", m->dir,
		        m->to_where, zc_strerror(ret));
		fprintf(stderr, WHO ": %s stays on %s (the copy in %s is left "
		        "as it is)\n", m->dir, m->from_where, m->to_where);
		return ret;
	}
	ret = put_aside(m, "records.db", true);
	if (ret == ZC_EOK) {
		ret = put_aside(m, "records.db-wal", false);
	}
	if (ret == ZC_EOK) {
		ret = put_aside(m, "records.db-shm", false);
	}
	if (ret != ZC_EOK) {
		unbind(m);
		take_back(m, "records.db-shm");
		take_back(m, "records.db-wal");
		take_back(m, "records.db");
		fprintf(stderr, WHO ": %s stays on %s (the copy in %s is left "
		        "as it is)\n", m->dir, m->from_where, m->to_where);
		return ret;
	}
	printf("%s now uses %s; the old store is kept as "
	       "%s/records.db.migrated-%s\n", m->dir, m->to_where, m->dir,
	       m->stamp);
	carry_edge(m);
	return ZC_EOK;
}

/* Moves DIR/migrate.tmp/NAME to DIR/NAME (nothing when absent). */
static int move_up(const migrate_t *m, const char *tmp, const char *name)
{
	char from[4300], to[4200];
	snprintf(from, sizeof(from), "%s/%s", tmp, name);
	int ret = path_in(to, sizeof(to), m->dir, name);
	if (ret != ZC_EOK || !exists(from)) {
		return ret;
	}
	if (rename(from, to) != 0) {
		int err = errno;
		fprintf(stderr, WHO ": cannot rename %s to %s: %s\n", from, to,
		        strerror(err));
		return -err;
	}
	return ZC_EOK;
}

/* Removes DIR/migrate.tmp and what a stopped run left in it. */
static void remove_tmp(const char *tmp)
{
	static const char *const files[] = { "records.db", "records.db-wal",
	                                     "records.db-shm", "serve.lock" };
	char path[4300];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmp, files[i]);
		unlink(path);
	}
	rmdir(tmp);
}

static int to_sqlite(migrate_t *m)
{
	char db[4200], tmp[4200];
	int ret = path_in(db, sizeof(db), m->dir, "records.db");
	if (ret == ZC_EOK) {
		ret = path_in(tmp, sizeof(tmp), m->dir, "migrate.tmp");
	}
	if (ret != ZC_EOK) {
		fprintf(stderr, WHO ": data directory path too long: %s\n", m->dir);
		return ret;
	}
	if (exists(db)) {
		fprintf(stderr, WHO ": %s already exists: move it away first; "
		        "nothing was changed\n", db);
		return ZC_EEXISTS;
	}
	describe(m->dir, m->from_where, sizeof(m->from_where));
	snprintf(m->to_where, sizeof(m->to_where), "SQLite %s", db);
	remove_tmp(tmp);
	if (mkdir(tmp, 0700) != 0) {
		int err = errno;
		fprintf(stderr, WHO ": cannot create %s: %s\n", tmp, strerror(err));
		return -err;
	}
	records_store_t *from = NULL, *to = NULL;
	ret = records_open(&from, m->dir);
	if (ret != ZC_EOK) {
		fprintf(stderr, WHO ": cannot open %s: %s; nothing was changed\n",
		        m->from_where, zc_strerror(ret));
		remove_tmp(tmp);
		return ret;
	}
	ret = records_open(&to, tmp);
	if (ret != ZC_EOK) {
		fprintf(stderr, WHO ": cannot create %s/records.db: %s\n", tmp,
		        zc_strerror(ret));
	} else {
		ret = copy(m, from, to);
	}
	records_close(to);
	records_close(from);
	for (const char *const *f = (const char *const[]){ "records.db",
	     "records.db-wal", "records.db-shm", NULL }; ret == ZC_EOK && *f;
	     f++) {
		ret = move_up(m, tmp, *f);
	}
	if (ret == ZC_EOK) {
		ret = zc_fs_sync_dir(m->dir); /* The store in place, durably. */
	}
	remove_tmp(tmp);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = put_aside(m, RECORDS_STORE_FILE, true);
	if (ret != ZC_EOK) {
		unlink(db);
		fprintf(stderr, WHO ": %s stays on %s\n", m->dir, m->from_where);
		return ret;
	}
	printf("%s now uses %s; its binding to %s is kept as "
	       "%s/" RECORDS_STORE_FILE ".migrated-%s (the database is left as "
	       "it is)\n", m->dir, m->to_where, m->from_where, m->dir, m->stamp);
	carry_edge(m);
	return ZC_EOK;
}

/* Takes DIR's lock for the command; says who holds it when taken. */
static int lock_dir(const char *dir, int *fd)
{
	cli_holder_t h;
	int ret = cli_claim_data_dir(dir, WHO, fd, &h);
	if (ret == 1) {
		if (cli_holder_is_serve(&h)) {
			fprintf(stderr, WHO ": data directory %s is in use by "
			        "zonecast serve (pid %ld): stop it first; nothing "
			        "was changed\n", dir, h.pid);
		} else {
			fprintf(stderr, WHO ": data directory %s is in use by `%s` "
			        "(pid %ld): run migrate once it is done; nothing was "
			        "changed\n", dir, h.who, h.pid);
		}
		return -EWOULDBLOCK;
	}
	return ret;
}

static int run(migrate_t *m)
{
	char uri[4096];
	int bound = records_bound_target(m->dir, uri, sizeof(uri));
	if (bound < 0) {
		return bound;
	}
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(m->stamp, sizeof(m->stamp), "%Y%m%dT%H%M%SZ", &tm);
	if (strcmp(m->to, "sqlite") == 0) {
		if (bound == 0) {
			fprintf(stderr, WHO ": %s already keeps its records in "
			        "SQLite (records.db)\n", m->dir);
			return ZC_EEXISTS;
		}
		return to_sqlite(m);
	}
	if (bound == 1) {
		char where[4200];
		describe(m->dir, where, sizeof(where));
		fprintf(stderr, WHO ": %s already keeps its records in %s; "
		        "migrate --to sqlite first to move them elsewhere\n",
		        m->dir, where);
		return ZC_EEXISTS;
	}
	return to_postgresql(m);
}

int cmd_migrate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "to", required_argument, NULL, 't' },
		{ "config", required_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	config_t cfg;
	config_defaults(&cfg);
	migrate_t m = { 0 };
	int c;
	while ((c = getopt_long(argc, argv, "d:t:c:qh", opts, NULL)) != -1) {
		if (c == 'd') {
			m.dir = optarg;
		} else if (c == 't') {
			m.to = optarg;
		} else if (c == 'c') {
			if (config_load(&cfg, optarg) != ZC_EOK) {
				return 1;
			}
		} else if (c == 'q') {
			m.quiet = true;
		} else {
			usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind < argc || m.to == NULL ||
	    (strcmp(m.to, "sqlite") != 0 && !records_target_is_pg(m.to))) {
		if (m.to != NULL && optind >= argc) {
			fprintf(stderr, WHO ": --to takes a postgresql:// URI or "
			        "'sqlite', not '%s'\n", m.to);
		}
		usage(stderr);
		return 2;
	}
	m.dir = m.dir ? m.dir : cfg.data_dir;
	if (cli_require_data_dir(m.dir) != ZC_EOK) {
		return 1;
	}
	int lock_fd;
	if (lock_dir(m.dir, &lock_fd) != 0) {
		return 1;
	}
	/* Root works in the data directory as its owner: it removes, makes
	 * and renames files there (migrate.tmp/...), and a link of the
	 * owner's (migrate.tmp -> a directory of root's) made it delete
	 * root's files there. */
	zc_fs_ids_t ids;
	zc_fs_as_owner(m.dir, NULL, &ids);
	int ret = run(&m);
	zc_fs_as_root(&ids);
	if (m.es != NULL) {
		edge_close(m.es);
	}
	close(lock_fd);
	return ret == ZC_EOK ? 0 : ret == ZC_EUSAGE ? 2 : 1;
}
