/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to the PostgreSQL driver (db_pg.c, db_pg_pipe.c and
 * db_pg_copy.c): its connection and statement structs, and what the
 * files share. db_pg.c is the driver; db_pg_pipe.c queues statements in
 * libpq's pipeline mode (rdb_defer()) and reads their outcomes at the
 * next synchronous call; db_pg_copy.c is its bulk load (COPY).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libpq-fe.h>

#include "records/db_driver.h"

/* libpq's TCP settings of every connection zonecast makes (db_pg.c's
 * connect_with_settings() says why; records/listen.c's own connections
 * too), as keyword and value lists to splice into PQconnectdbParams()'s
 * arrays ahead of dbname, so that a URI's own settings win. */
#define PG_KEEPALIVE_KEYS "keepalives", "keepalives_idle", \
	"keepalives_interval", "keepalives_count", "tcp_user_timeout"
#define PG_KEEPALIVE_VALUES "1", "10", "5", "3", "30000"

#define STMT_CACHE 64
#define MAX_PARAMS 32
/* Queued statements at most before the pipeline is synced on its own:
 * the server's answers to them must fit the socket's buffers while the
 * driver is still sending (libpq blocks on a full buffer, and so would
 * the server). */
#define PIPE_MAX 256

/* Type OIDs (catalog/pg_type.dat): stable across versions. */
enum {
	OID_BOOL = 16,
	OID_BYTEA = 17,
	OID_INT8 = 20,
	OID_BYTEA_ARRAY = 1001,
	OID_INT8_ARRAY = 1016,
	OID_TEXT_ARRAY = 1009,
	OID_INT2 = 21,
	OID_INT4 = 23,
	OID_TEXT = 25,
	OID_OID = 26,
	OID_FLOAT8 = 701,
	OID_VARCHAR = 1043,
	OID_NUMERIC = 1700,
};

typedef struct pg_db pg_db_t;
typedef struct pg_stmt pg_stmt_t;


/* P_ARRAY: a one-dimensional array in binary form, of type oid. */
typedef enum { P_NULL, P_INT, P_BLOB, P_TEXT, P_ARRAY } param_kind_t;

typedef struct {
	param_kind_t kind;
	const void *p;
	size_t len;
	/* P_INT: the value, and its decimal text (libpq sends it as text). */
	int64_t i64;
	char num[24];
	/* P_ARRAY: its type, and the buffer that holds it (ours). */
	Oid oid;
	void *owned;
} param_t;

struct pg_stmt {
	rdb_stmt_t base;
	pg_db_t *db;
	/* The cache's key (the text's address); NULL when not cached. */
	const char *key;
	/* The text with $N placeholders, and how many there are. */
	char *sql;
	int nparams;
	/* Which of them the text names (bit i-1 for $i): one it skips gets
	 * a type all the same, which PostgreSQL needs. */
	uint64_t used;
	/* The server-side name; prepared in connection generation gen. */
	char name[16];
	unsigned gen;
	bool prepared;
	bool busy;
	param_t params[MAX_PARAMS];
	/* The executed statement's rows, and the current one (-1 before). */
	PGresult *res;
	int row;
	/* col_text() of a number. */
	char text[32];
};

/* db_pg_gather.c: one column of gathered rows, as the elements of a
 * binary array (its 20-byte header is written at the send). */
typedef struct {
	uint8_t *buf;
	size_t len, cap;
	bool has_null;
} pg_column_t;

/* The rows of one single-row INSERT held for one statement of arrays,
 * stmt (its array form, prepared on the server as any statement). */
typedef struct {
	const char *key;        /* The INSERT's cache key; NULL: free. */
	/* The INSERT itself (its cache entry when the first row came): a
	 * single row goes as it, if the server still has it prepared. */
	pg_stmt_t *single;
	pg_stmt_t stmt;
	char types[MAX_PARAMS]; /* i int8, b bytea, t text (rdb_defer_row()) */
	pg_column_t cols[MAX_PARAMS];
	size_t rows;
	/* At the pending unit savepoint (pg_gather_mark()): the rows and
	 * each column's length then, the rows of units released before. */
	size_t mark_rows;
	size_t mark_len[MAX_PARAMS];
	bool mark_null[MAX_PARAMS];
} pg_gather_t;

#define PG_GATHERS 2

struct pg_db {
	rdb_t base;
	PGconn *conn;
	char *target;
	const char *label;
	bool read_only;
	/* A transaction is open (begun and not yet ended by us): never
	 * reconnect inside one, its statements would run on their own. */
	bool txn;
	/* Bumped at every reconnection: prepared statements are gone. */
	unsigned gen;
	unsigned next_name;
	int64_t changes;
	pg_stmt_t cache[STMT_CACHE];
	/* Pipeline mode (db_pg_pipe.c): on, and the statements sent and not
	 * yet answered; for each, the statement it prepares (NULL: not a
	 * PREPARE), which is unprepared again if the PREPARE failed. */
	bool piped;
	int queued;
	/* The open transaction is a write one: only there are statements
	 * queued (a read snapshot's end would drop their failures). */
	bool writing;
	/* When the open transaction last heard from the server (monotonic
	 * ms; its BEGIN, each pipeline sync): the server's idle time since. */
	int64_t answered_ms;
	/* The session was reset inside the open transaction, or its
	 * queued BEGIN failed: the transaction is gone, and its next
	 * statements must fail (none may run on its own). */
	bool severed;
	/* The queued BEGIN's place in the queue plus one (0: none queued):
	 * a transaction's BEGIN goes with its first statement that waits
	 * (db_pg.c begin()), and its failure severs the transaction. */
	int begin_slot;
	/* A queued COMMIT's place plus one (0: none), and what became of
	 * it (db_pg_pipe.c pg_pipe_commit()). */
	int commit_slot;
	enum {
		PG_COMMIT_NONE,     /* Not sent. */
		PG_COMMIT_SENT,     /* Sent, no answer: in doubt. */
		PG_COMMIT_DONE,     /* Committed. */
		PG_COMMIT_ROLLBACK, /* Answered ROLLBACK: the transaction had
		                       failed. */
		PG_COMMIT_FAILED,   /* Failed, or skipped after a failure. */
	} commit_state;
	/* The place plus one of the last RELEASE queued without waiting
	 * (rdb_release_later(); 0: none in the queue): a failure at or
	 * before it is an earlier unit's, and the transaction wants its
	 * units run again (replay, until it ends). */
	int released_slot;
	bool replay;
	/* The open unit's SAVEPOINT is not sent yet (rdb_savepoint_later()):
	 * every row gathered since its mark is the unit's; the rows before
	 * it are units' released already. */
	bool unit_pending;
	/* Rows held (before the pending unit's mark, if any) are units'
	 * released already: once sent, a failure among them is theirs. */
	bool released_rows;
	/* A unit of this transaction took a late savepoint: what the commit
	 * queues before COMMIT (the versions' index, the zone's serial) is
	 * released units' work, its failure a replay. */
	bool lazy_txn;
	pg_stmt_t *queue[PIPE_MAX];
	/* Rows gathered and not sent yet (db_pg_gather.c). */
	pg_gather_t gather[PG_GATHERS];
};

/* Writes v in network order at w; returns w + 4 (binary arrays). */
static inline uint8_t *pg_put_be32(uint8_t *w, uint32_t v)
{
	w[0] = (uint8_t)(v >> 24);
	w[1] = (uint8_t)(v >> 16);
	w[2] = (uint8_t)(v >> 8);
	w[3] = (uint8_t)v;
	return w + 4;
}

/* Writes v in decimal and a NUL at out (21 octets at most: "-" and 19
 * digits), without printf's format parsing: a batch binds several
 * integers per row. */
static inline void pg_int64_text(char *out, int64_t v)
{
	char tmp[20];
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0) {
		*out++ = '-';
	}
	while (n > 0) {
		*out++ = tmp[--n];
	}
	*out = '\0';
}

/* db_pg.c: a failed result (NULL: the connection's) as a zonecast code. */
int pg_map_error(pg_db_t *d, const PGresult *res);
/* db_pg.c: keeps a statement's rows in s->res, or maps its error. */
int pg_keep_result(pg_stmt_t *s, PGresult *res);
/* db_pg.c: the statement's parameters as libpq takes them, and their
 * types. */
void pg_param_arrays(const pg_stmt_t *s, const char **values, int *lengths,
                     int *formats);
void pg_param_types(const pg_stmt_t *s, Oid *types);

/* db_pg_pipe.c: queues the statement's execution (and its PREPARE when
 * the server does not have it yet), entering pipeline mode. */
int pg_pipe_send(pg_stmt_t *s);
/* Queues SQL text without parameters (one statement). */
int pg_pipe_send_text(pg_db_t *d, const char *sql);
/* Queues COMMIT, then after's execution (NULL: none), and syncs: after's
 * rows are kept in after->res. d->commit_state says how the commit
 * ended; the return value is the sync's (its first failure). */
int pg_pipe_commit(pg_db_t *d, pg_stmt_t *after);
/* Queues the PREPARE of s with these parameter types (it counts as
 * prepared; a failure unprepares it at the sync). */
int pg_pipe_prepare(pg_stmt_t *s, const Oid *types);
/* Queues a statement prepared on the server, by name. */
int pg_pipe_prepared(pg_db_t *d, const char *name, int n,
                     const char *const *values, const int *lengths,
                     const int *formats);
/* Queues SQL text with parameters, unprepared. */
int pg_pipe_params(pg_db_t *d, const char *sql, int n, const Oid *types,
                   const char *const *values, const int *lengths,
                   const int *formats);
/* Syncs: reads every queued statement's outcome and leaves pipeline mode.
 * The last one's rows go to keep (when not NULL). Returns the first error
 * among them, or ZC_EOK. */
int pg_pipe_sync(pg_db_t *d, pg_stmt_t *keep);

/* db_pg_gather.c: holds the statement's bound row for a statement of
 * arrays (*gathered), or leaves it to be queued as it is (*gathered
 * false: not of the single-row INSERT form, or a value not of its
 * column's type). */
int pg_gather_row(pg_stmt_t *s, const char *types, bool *gathered);
/* Sends what is gathered into the pipeline (every queued statement, sync
 * and COPY does first). */
int pg_gather_flush(pg_db_t *d);
/* Whether rows are held. */
bool pg_gathering(const pg_db_t *d);
/* The pending unit savepoint (rdb_savepoint_later()): _mark() notes
 * where its rows begin and makes it pending; _unmark() drops its rows
 * (its rollback, nothing sent); _materialize() sends, when one is
 * pending, the rows before the mark (released units', so a failure among
 * them is theirs: ZC_EREPLAY), then its SAVEPOINT, and leaves the unit's
 * own rows held. pg_gather_flush() and every statement that is not a
 * gathered row materialize first. */
void pg_gather_mark(pg_db_t *d);
void pg_gather_unmark(pg_db_t *d);
int pg_gather_materialize(pg_db_t *d);
/* With a unit savepoint pending: sends the rows before its mark (released
 * units') and keeps it pending with no row before its mark, so that what
 * is queued next goes ahead of its SAVEPOINT too (rdb_defer_released()). */
int pg_gather_send_released(pg_db_t *d);
/* Drops the rows held (a rollback, a lost session), and frees all. */
void pg_gather_drop(pg_db_t *d);
void pg_gather_free(pg_db_t *d);

/* db_pg_copy.c: the bulk load (db.h, rdb_copy_*()), the driver's copy. */
extern const rdb_copy_ops_t rdb_pg_copy_ops;
/* db_pg.c: the connection ready for a statement of COPY's own: connected
 * (never again inside a transaction), and the pipeline synced and left
 * (its first failure returned). */
int pg_conn_ready(pg_db_t *d);

/*
 * Settings every zonecast session sets itself, whatever the role or the
 * database sets (ALTER ROLE ... SET): zonecast's statements run as long
 * as their work takes (an import of millions of records is one
 * transaction), its pooled connections stay open while idle (the leader's
 * connection sets its own idle_session_timeout on purpose, leader.c), and
 * its writers rely on READ COMMITTED (row locks, not serialisation
 * failures). A backslash escapes the space inside a value.
 */
#define PG_SESSION_SETTINGS \
	"-c statement_timeout=0 -c idle_session_timeout=0" \
	" -c default_transaction_isolation=read\\ committed"

/*
 * How long a transaction of the records store's connections may stay open
 * and idle, waiting for its client (idle_in_transaction_session_timeout),
 * before the server ends the session: a healthy writer never waits for
 * itself that long (a batch or an import sends its statements back to
 * back; waiting for a lock is not idle), while a paused node's
 * transaction would otherwise keep its zones' rows locked for as long as
 * it stays paused. ZONECAST_PG_IDLE_IN_TRANSACTION_MS overrides it
 * (tests; 1 to 86400000).
 */
#define PG_IDLE_IN_TRANSACTION_MS 60000
unsigned pg_idle_in_transaction_ms(void);
/* Monotonic milliseconds. */
int64_t pg_now_ms(void);
