/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The signed view's thread (see sigview.h for the design): on each cue
 * (a builder pass) and every few seconds it lists the edge store's signed
 * zones, brings each one whose serial moved up to date (zone.c), drops
 * zones no longer signed, asks for a version of its own for a zone whose
 * signatures are due, and trims the journal.
 *
 * Locking: lock guards zones[] (read by sigview_zone_serial() from the
 * notifier's thread); everything else belongs to the thread.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "sigview/internal.h"

#define TICK_MS 5000
/* The journal is trimmed as often as the change log is (writer.c): every
 * minute, or every journal-retention seconds when that is shorter (it
 * was hourly, whatever the retention: outside tester 33 saw signed.db
 * hold 20 minutes of a 60-second retention). */
#define TRIM_EVERY_S 60

typedef struct {
	int64_t zone_id;
	uint32_t serial;          /* The view's (valid when ready). */
	bool ready;
	bool seen;                /* Listed signed in this pass. */
	int64_t touched_at;       /* Unix seconds of the last touch asked. */
	int64_t failed_at;        /* Of the last failure logged. */
	uint8_t apex[KNOT_DNAME_MAXLEN];
} vz_t;

struct sigview {
	sigview_config_t cfg;
	pthread_t thread;
	bool started;
	int efd;
	atomic_bool cue;
	atomic_bool stop;
	pthread_mutex_t lock;     /* Guards zones, count, cap. */
	vz_t *zones;              /* Sorted by zone_id. */
	size_t count, cap;
	/* The thread's. */
	view_db_t db;
	records_store_t *rs;
	edge_txn_t txn;
	zc_arena_t arena;
	int64_t refresh_checked, trimmed;
	_Atomic unsigned retention_s; /* journal-retention (reloads). */
};

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

static sigview_timing_t timing;
static pthread_once_t timing_once = PTHREAD_ONCE_INIT;

static void timing_init(void)
{
	timing = (sigview_timing_t) {
		.validity = VIEW_VALIDITY, .jitter = VIEW_JITTER,
		.refresh_before = VIEW_REFRESH_BEFORE, .check_every = 60,
		.batch = VIEW_REFRESH_BATCH,
	};
	const char *v = getenv("ZONECAST_SIGVIEW_VALIDITY");
	long s = v != NULL ? strtol(v, NULL, 10) : 0;
	if (s >= 20 && s <= VIEW_VALIDITY) {
		timing.validity = (uint32_t)s;
		timing.jitter = (uint32_t)s / 4;
		timing.refresh_before = (uint32_t)s / 2;
		timing.check_every = (uint32_t)s / 20;
	}
	const char *b = getenv("ZONECAST_SIGVIEW_BATCH");
	long n = b != NULL ? strtol(b, NULL, 10) : 0;
	if (n > 0 && n <= 1000000) {
		timing.batch = (size_t)n;
	}
}

const sigview_timing_t *sigview_timing(void)
{
	pthread_once(&timing_once, timing_init);
	return &timing;
}

/* The zone's entry (lock held); NULL when absent. */
static vz_t *find(sigview_t *v, int64_t zone_id)
{
	size_t lo = 0, hi = v->count;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v->zones[mid].zone_id == zone_id) {
			return &v->zones[mid];
		}
		if (v->zones[mid].zone_id < zone_id) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return NULL;
}

/* Adds an entry (lock held), keeping the order; NULL without memory. */
static vz_t *add(sigview_t *v, int64_t zone_id, const uint8_t *apex)
{
	if (v->count == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		vz_t *grown = realloc(v->zones, cap * sizeof(*grown));
		if (grown == NULL) {
			return NULL;
		}
		v->zones = grown;
		v->cap = cap;
	}
	size_t i = v->count;
	while (i > 0 && v->zones[i - 1].zone_id > zone_id) {
		i--;
	}
	memmove(v->zones + i + 1, v->zones + i, (v->count - i) * sizeof(vz_t));
	v->count++;
	vz_t *z = &v->zones[i];
	memset(z, 0, sizeof(*z));
	z->zone_id = zone_id;
	memcpy(z->apex, apex, knot_dname_size(apex));
	return z;
}

typedef struct {
	sigview_t *v;
	struct listed {
		int64_t zone_id;
		uint32_t serial;
		uint8_t apex[KNOT_DNAME_MAXLEN];
	} *list;
	size_t count, cap;
} listing_t;

/* Collects the signed zones of the edge (edge_zone_foreach's callback). */
static int list_zone(const edge_zone_t *z, void *ctx)
{
	listing_t *l = ctx;
	const uint8_t *raw;
	size_t len;
	if (edge_keys_get(&l->v->txn, z->zone_id, &raw, &len) != ZC_EOK) {
		return 0; /* Not signed. */
	}
	if (l->count == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct listed *grown = realloc(l->list, cap * sizeof(*grown));
		if (grown == NULL) {
			return 1;
		}
		l->list = grown;
		l->cap = cap;
	}
	struct listed *e = &l->list[l->count++];
	e->zone_id = (int64_t)z->zone_id;
	e->serial = z->serial;
	memcpy(e->apex, z->apex, z->apex_len);
	return 0;
}

/* Brings one zone up to its edge serial. */
static int update_zone(sigview_t *v, const uint8_t *apex, bool *moved)
{
	*moved = false;
	int ret = v->rs == NULL ? records_open(&v->rs, v->cfg.data_dir) : ZC_EOK;
	if (ret != ZC_EOK) {
		return ret;
	}
	view_update_t u = { .db = &v->db, .rs = v->rs, .txn = &v->txn,
	                    .arena = &v->arena, .now = (uint32_t)now_s(),
	                    .stop = &v->stop };
	signer_keyset_t ks;
	bool have_keys = false;
	const uint8_t *raw;
	size_t len;
	ret = edge_txn_begin_read(v->cfg.edge, &v->txn);
	if (ret == ZC_EOK) {
		ret = edge_zone_get(&v->txn, apex, &u.ez);
	}
	if (ret == ZC_EOK) {
		ret = edge_keys_get(&v->txn, u.ez.zone_id, &raw, &len);
	}
	if (ret == ZC_EOK) {
		ret = signer_keyset_decode(u.ez.apex, raw, len, &ks);
		have_keys = ret == ZC_EOK;
	}
	view_zone_t old;
	if (ret == ZC_EOK && view_db_zone_get(&v->db, (int64_t)u.ez.zone_id,
	                                      &old) == ZC_EOK &&
	    old.serial == u.ez.serial) {
		edge_txn_reset(&v->txn);
		signer_keyset_free(&ks);
		return ZC_EOK; /* Up to date (a restart). */
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (ret == ZC_EOK) {
		u.ks = &ks;
		ret = view_zone_update(&u);
	}
	edge_txn_reset(&v->txn);
	if (have_keys) {
		signer_keyset_free(&ks);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long long ms = (long long)(t1.tv_sec - t0.tv_sec) * 1000 +
	               (t1.tv_nsec - t0.tv_nsec) / 1000000;
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, apex, sizeof(name));
	zc_log(u.full ? ZC_LOG_INFO : ZC_LOG_DEBUG, "signed view: zone %s "
	       "serial %u -> %u%s, %zu signatures, %zu changes, %lld ms",
	       name, u.from_serial, u.ez.serial, u.full ? " (full pass)" : "",
	       u.signatures, u.changes, ms);
	pthread_mutex_lock(&v->lock);
	vz_t *z = find(v, (int64_t)u.ez.zone_id);
	if (z != NULL) {
		z->serial = u.ez.serial;
		z->ready = true;
	}
	pthread_mutex_unlock(&v->lock);
	*moved = true;
	return ZC_EOK;
}

/* Drops from the view the zones not listed signed any more. */
static void drop_unlisted(sigview_t *v)
{
	for (size_t i = 0; i < v->count;) {
		vz_t *z = &v->zones[i];
		if (z->seen) {
			i++;
			continue;
		}
		int64_t id = z->zone_id;
		pthread_mutex_lock(&v->lock);
		memmove(z, z + 1, (v->count - i - 1) * sizeof(*z));
		v->count--;
		pthread_mutex_unlock(&v->lock);
		int ret = view_db_begin(&v->db, true);
		ret = ret == ZC_EOK ? view_db_zone_delete(&v->db, id) : ret;
		ret = ret == ZC_EOK ? view_db_commit(&v->db) : ret;
		if (ret != ZC_EOK) {
			view_db_rollback(&v->db);
		}
	}
}

/* Lists the signed zones and brings each up to date; true when one
 * moved. */
static bool pass(sigview_t *v)
{
	listing_t l = { .v = v };
	int ret = edge_txn_begin_read(v->cfg.edge, &v->txn);
	if (ret == ZC_EOK) {
		ret = edge_zone_foreach(&v->txn, list_zone, &l);
	}
	edge_txn_reset(&v->txn);
	if (ret != ZC_EOK) {
		zc_warn("signed view: cannot list zones: %s", zc_strerror(ret));
		free(l.list);
		return false;
	}
	for (size_t i = 0; i < v->count; i++) {
		v->zones[i].seen = false;
	}
	bool moved_any = false;
	bool cut = false;           /* The stop gave a pass up. */
	for (size_t i = 0; i < l.count && !cut; i++) {
		pthread_mutex_lock(&v->lock);
		vz_t *z = find(v, l.list[i].zone_id);
		if (z == NULL) {
			z = add(v, l.list[i].zone_id, l.list[i].apex);
		}
		bool due = z != NULL && (!z->ready || z->serial != l.list[i].serial);
		if (z != NULL) {
			z->seen = true;
		}
		pthread_mutex_unlock(&v->lock);
		if (!due) {
			continue;
		}
		bool moved;
		ret = update_zone(v, l.list[i].apex, &moved);
		moved_any |= moved;
		if (ret == -ECANCELED) {
			char name[KNOT_DNAME_TXT_MAXLEN + 1];
			knot_dname_to_str(name, l.list[i].apex, sizeof(name));
			zc_info("signed view: zone %s: its pass given up for the "
			        "stop (done again at the next start)", name);
			cut = true;
			continue;
		}
		if (ret != ZC_EOK) {
			char name[KNOT_DNAME_TXT_MAXLEN + 1];
			knot_dname_to_str(name, l.list[i].apex, sizeof(name));
			zc_error("signed view: zone %s: %s; transfers of it stay "
			         "at the view's last serial", name, zc_strerror(ret));
		} else if (!moved) {
			/* The view already had it (a restart): ready. */
			pthread_mutex_lock(&v->lock);
			vz_t *z2 = find(v, l.list[i].zone_id);
			if (z2 != NULL) {
				z2->ready = true;
				z2->serial = l.list[i].serial;
			}
			pthread_mutex_unlock(&v->lock);
			moved_any = true;
		}
	}
	if (!cut) {
		/* Not after a pass given up: the zones listed after it were
		 * not looked at, and were dropped from the view as deleted
		 * (outside tester 38). */
		drop_unlisted(v);
	}
	free(l.list);
	return moved_any;
}

/* Asks for a version of their own for zones whose signatures are due and
 * do not change by themselves. */
static void check_refresh(sigview_t *v)
{
	int64_t now = now_s();
	const sigview_timing_t *t = sigview_timing();
	if (v->cfg.touch == NULL ||
	    now - v->refresh_checked < (int64_t)t->check_every) {
		return;
	}
	v->refresh_checked = now;
	for (size_t i = 0; i < v->count; i++) {
		vz_t *z = &v->zones[i];
		uint32_t first = 0;
		if (!z->ready || now - z->touched_at < (int64_t)t->check_every ||
		    view_db_sigs_first_expire(&v->db, z->zone_id, &first) != ZC_EOK ||
		    first == 0 || (int64_t)first >= now + t->refresh_before) {
			continue;
		}
		z->touched_at = now;
		int ret = v->cfg.touch(v->cfg.touch_ctx, z->zone_id);
		if (ret != ZC_EOK) {
			zc_warn("signed view: cannot give zone id %lld a version "
			        "for its signature refresh: %s",
			        (long long)z->zone_id, zc_strerror(ret));
		}
	}
}

/* Trims each zone's journal to the retention. */
static void trim(sigview_t *v)
{
	int64_t now = now_s();
	unsigned retention = atomic_load(&v->retention_s);
	int64_t every = retention < TRIM_EVERY_S ? retention : TRIM_EVERY_S;
	if (retention == 0 || now - v->trimmed < every) {
		return;
	}
	v->trimmed = now;
	int64_t before = (now - (int64_t)retention) * 1000;
	for (size_t i = 0; i < v->count; i++) {
		view_zone_t z;
		bool has;
		uint32_t from;
		int ret = view_db_begin(&v->db, true);
		if (ret == ZC_EOK) {
			ret = view_db_zone_get(&v->db, v->zones[i].zone_id, &z);
		}
		if (ret == ZC_EOK) {
			ret = view_db_journal_trim(&v->db, z.zone_id, before, &has,
			                           &from);
		}
		if (ret == ZC_EOK) {
			z.journal_from = has ? from : z.serial;
			ret = view_db_zone_put(&v->db, &z);
		}
		ret = ret == ZC_EOK ? view_db_commit(&v->db) : ret;
		if (ret != ZC_EOK) {
			view_db_rollback(&v->db);
		}
	}
}

static void *view_main(void *arg)
{
	sigview_t *v = arg;
	pthread_setname_np(pthread_self(), "zc-sigview");
	bool first = true;
	while (!atomic_load(&v->stop)) {
		if (first || atomic_exchange(&v->cue, false)) {
			first = false;
			if (pass(v) && v->cfg.on_update != NULL) {
				v->cfg.on_update(v->cfg.on_update_ctx);
			}
		}
		check_refresh(v);
		trim(v);
		struct pollfd pfd = { .fd = v->efd, .events = POLLIN };
		int tick = (int)sigview_timing()->check_every * 1000;
		if (poll(&pfd, 1, tick < TICK_MS ? tick : TICK_MS) == 0) {
			atomic_store(&v->cue, true); /* Missed nothing, ever. */
		}
		if (pfd.revents & POLLIN) {
			uint64_t x;
			ssize_t r = read(v->efd, &x, sizeof(x));
			(void)r;
		}
	}
	return NULL;
}

static void view_free(sigview_t *v)
{
	if (v->efd >= 0) {
		close(v->efd);
	}
	edge_txn_abort(&v->txn);
	records_close(v->rs);
	view_db_close(&v->db);
	zc_arena_deinit(&v->arena);
	pthread_mutex_destroy(&v->lock);
	free(v->zones);
	free(v);
}

static int view_new(const sigview_config_t *cfg, sigview_t **out)
{
	sigview_t *v = calloc(1, sizeof(*v));
	if (v == NULL) {
		return KNOT_ENOMEM;
	}
	v->cfg = *cfg;
	v->efd = -1;
	pthread_mutex_init(&v->lock, NULL);
	zc_arena_init(&v->arena, 64 * 1024);
	int ret = view_db_open(&v->db, cfg->data_dir, false);
	if (ret != ZC_EOK) {
		view_free(v);
		return ret;
	}
	*out = v;
	return ZC_EOK;
}

int sigview_start(const sigview_config_t *cfg, sigview_t **out)
{
	if (cfg == NULL || cfg->data_dir == NULL || cfg->edge == NULL ||
	    out == NULL) {
		return ZC_EUSAGE;
	}
	sigview_t *v;
	int ret = view_new(cfg, &v);
	if (ret != ZC_EOK) {
		zc_error("signed view: cannot open %s/signed.db: %s",
		         cfg->data_dir, zc_strerror(ret));
		return ret;
	}
	atomic_init(&v->retention_s, cfg->journal_retention_s);
	v->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ret = v->efd < 0 ? -errno :
	      -pthread_create(&v->thread, NULL, view_main, v);
	if (ret != ZC_EOK) {
		view_free(v);
		return ret;
	}
	v->started = true;
	*out = v;
	return ZC_EOK;
}

void sigview_reconfigure(sigview_t *v, unsigned journal_retention_s)
{
	if (v != NULL) {
		atomic_store(&v->retention_s, journal_retention_s);
	}
}

void sigview_on_pass(void *ctx)
{
	sigview_t *v = ctx;
	if (v == NULL) {
		return;
	}
	atomic_store(&v->cue, true);
	uint64_t one = 1;
	ssize_t w = write(v->efd, &one, sizeof(one));
	(void)w;
}

void sigview_stop(sigview_t *v)
{
	if (v == NULL) {
		return;
	}
	atomic_store(&v->stop, true);
	if (v->started) {
		sigview_on_pass(v);
		pthread_join(v->thread, NULL);
	}
	view_free(v);
}

int sigview_zone_serial(void *ctx, int64_t zone_id, uint32_t *serial)
{
	sigview_t *v = ctx;
	if (v == NULL) {
		return 0;
	}
	pthread_mutex_lock(&v->lock);
	vz_t *z = find(v, zone_id);
	int ret = z == NULL || !z->ready ? -1 : 1;
	if (ret == 1) {
		*serial = z->serial;
	}
	pthread_mutex_unlock(&v->lock);
	return ret;
}

int sigview_sync(const char *data_dir, edge_store_t *edge)
{
	sigview_config_t cfg = { .data_dir = data_dir, .edge = edge };
	sigview_t *v;
	int ret = view_new(&cfg, &v);
	if (ret == ZC_EOK) {
		pass(v);
		view_free(v);
	}
	return ret;
}
