/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The secondaries' last NOTIFY and transfer per zone (see activity.h). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/dname.h>

#include "transfer/activity.h"

#define BUCKETS 4096

typedef struct entry {
	struct entry *next;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	transfer_activity_t a;
} entry_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry_t *buckets[BUCKETS];
static size_t entries;

static int64_t unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* FNV-1a of the apex, lowercased. */
static unsigned bucket_of(const uint8_t *apex)
{
	uint32_t h = 2166136261u;
	size_t n = knot_dname_size(apex);
	for (size_t i = 0; i < n; i++) {
		uint8_t c = apex[i];
		h = (h ^ (c >= 'A' && c <= 'Z' ? c + 32 : c)) * 16777619u;
	}
	return h % BUCKETS;
}

/* When the entry was last noted. */
static int64_t last_ms(const entry_t *e)
{
	return e->a.notify_ms > e->a.transfer_ms ? e->a.notify_ms :
	       e->a.transfer_ms;
}

/* Whether all the entry says is a refused transfer (no NOTIFY goes to
 * it, no transfer of it succeeded last). */
static bool refusal_only(const entry_t *e)
{
	return !e->a.notified && e->a.transferred &&
	       strncmp(e->a.transfer_result, "refused", 7) == 0;
}

/* The entry to give up for a newcomer among those considered (one
 * zone's, or the whole table's), by the link that leads to it: the least
 * recently noted refusal and the least recently noted of all. */
typedef struct {
	entry_t **refused;       /* Links to the entry, NULL: none yet. */
	entry_t **any;
} victim_t;

static void consider(entry_t **link, victim_t *v)
{
	entry_t *e = *link;
	if (refusal_only(e) &&
	    (v->refused == NULL || last_ms(e) < last_ms(*v->refused))) {
		v->refused = link;
	}
	if (v->any == NULL || last_ms(e) < last_ms(*v->any)) {
		v->any = link;
	}
}

/* Unlinks the chosen victim for a newcomer (refusal: whether it is a
 * refused transfer), or NULL when there is none to give up. */
static entry_t *take_victim(const victim_t *v, bool refusal)
{
	entry_t **link = v->refused != NULL ? v->refused :
	                 refusal ? NULL : v->any;
	if (link == NULL) {
		return NULL;
	}
	entry_t *e = *link;
	*link = e->next;
	return e;
}

/* The entry of (apex, peer), made when missing, in the place of another
 * when the zone or the table is full (activity.h); NULL when it is not
 * noted. refusal: the newcomer's news is a refused transfer. Under lock. */
static transfer_activity_t *find(const uint8_t *apex, const char *peer,
                                 bool refusal)
{
	unsigned b = bucket_of(apex);
	size_t of_zone = 0;
	victim_t zone_v = { 0 };
	for (entry_t **link = &buckets[b]; *link != NULL;
	     link = &(*link)->next) {
		entry_t *e = *link;
		if (!knot_dname_is_case_equal(e->apex, apex)) {
			continue;
		}
		if (strcmp(e->a.peer, peer) == 0) {
			return &e->a;
		}
		of_zone++;
		consider(link, &zone_v);
	}
	entry_t *e = NULL;
	if (of_zone >= TRANSFER_ACTIVITY_PER_ZONE) {
		e = take_victim(&zone_v, refusal);
		if (e == NULL) {
			return NULL;
		}
	} else if (entries >= TRANSFER_ACTIVITY_MAX) {
		/* Full: a walk of the whole table, only when it is full. */
		victim_t all = { 0 };
		for (unsigned i = 0; i < BUCKETS; i++) {
			for (entry_t **link = &buckets[i]; *link != NULL;
			     link = &(*link)->next) {
				consider(link, &all);
			}
		}
		e = take_victim(&all, refusal);
		if (e == NULL) {
			return NULL;
		}
	} else {
		e = malloc(sizeof(*e));
		if (e == NULL) {
			return NULL;
		}
		entries++;
	}
	memset(e, 0, sizeof(*e));
	knot_dname_copy_lower(e->apex, apex);
	snprintf(e->a.peer, sizeof(e->a.peer), "%s", peer);
	e->next = buckets[b];
	buckets[b] = e;
	return &e->a;
}

void transfer_activity_notify(const uint8_t *apex, const char *peer,
                              uint32_t serial, unsigned tries,
                              const char *result)
{
	pthread_mutex_lock(&lock);
	transfer_activity_t *a = find(apex, peer, false);
	if (a != NULL) {
		a->notified = true;
		a->notify_serial = serial;
		a->notify_tries = tries;
		a->notify_ms = unix_ms();
		snprintf(a->notify_result, sizeof(a->notify_result), "%s", result);
	}
	pthread_mutex_unlock(&lock);
}

/* The client's address without its port (a secondary's source port
 * changes at every transfer). */
static void client_text(const struct sockaddr_storage *ss, char *out,
                        size_t size)
{
	const void *addr = ss->ss_family == AF_INET6 ?
	                   (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr :
	                   (const void *)&((const struct sockaddr_in *)ss)->sin_addr;
	if (inet_ntop(ss->ss_family, addr, out, (socklen_t)size) == NULL) {
		snprintf(out, size, "?");
	}
}

void transfer_activity_transfer(const uint8_t *apex,
                                const struct sockaddr_storage *client,
                                const char *kind, uint32_t serial,
                                const char *result)
{
	char peer[ZC_ADDR_TEXT_MAX];
	client_text(client, peer, sizeof(peer));
	pthread_mutex_lock(&lock);
	transfer_activity_t *a = find(apex, peer,
	                              strncmp(result, "refused", 7) == 0);
	if (a != NULL) {
		a->transferred = true;
		snprintf(a->transfer_kind, sizeof(a->transfer_kind), "%s", kind);
		a->transfer_serial = serial;
		a->transfer_ms = unix_ms();
		snprintf(a->transfer_result, sizeof(a->transfer_result), "%s",
		         result);
	}
	pthread_mutex_unlock(&lock);
}

void transfer_activity_list(const uint8_t *apex,
                            int (*cb)(const transfer_activity_t *a,
                                      void *ctx),
                            void *ctx)
{
	/* Copied out first: cb runs without the lock. */
	size_t n = 0, cap = 16;
	transfer_activity_t *copy = malloc(cap * sizeof(*copy));
	pthread_mutex_lock(&lock);
	for (entry_t *e = buckets[bucket_of(apex)]; e != NULL && copy != NULL;
	     e = e->next) {
		if (!knot_dname_is_case_equal(e->apex, apex)) {
			continue;
		}
		if (n == cap) {
			transfer_activity_t *grown = realloc(copy, 2 * cap *
			                                     sizeof(*copy));
			if (grown == NULL) {
				break;
			}
			copy = grown;
			cap *= 2;
		}
		copy[n++] = e->a;
	}
	pthread_mutex_unlock(&lock);
	for (size_t i = 0; i < n; i++) {
		if (cb(&copy[i], ctx) != 0) {
			break;
		}
	}
	free(copy);
}
