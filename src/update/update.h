/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * RFC 2136 dynamic updates (with RFC 3007 / RFC 8945 TSIG).
 *
 * Design
 *
 * The DNS workers hand every UPDATE message to update_handle() (a server
 * hook). On the worker's thread it is parsed, its TSIG checked, its
 * sections prescanned (RFC 2136 §3.1-3.4.1: FORMERR, NOTZONE, NOTAUTH)
 * and the key's update policy applied (REFUSED), reading the records store
 * through a small connection pool. What passes becomes one unit of the
 * group committer (writer/writer.h): prerequisites are evaluated and the
 * update applied inside the unit's savepoint, atomically with respect to
 * every other writer; the zone's serial moves once per message, and only
 * if something changed. The response is sent from the committer's
 * callback, after the commit's fsync (RFC 2136 §3.5), so many messages
 * from many connections share one fsync while each keeps its own rcode.
 *
 * Acknowledged means served: a message that changed its zone is answered
 * NOERROR only once the builder has applied it to the edge store (a
 * waiter of the follower, builder.h), so a query sent right after the
 * response sees the change, as with BIND and Knot. If that takes longer
 * than live_wait_ms, or the zone is quarantined meanwhile, the answer is
 * SERVFAIL (the change is committed and is served once the builder gets
 * to it). A message for a quarantined zone is refused with SERVFAIL
 * before anything is written.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "builder/builder.h"
#include "common/acl.h"
#include "server/server.h"
#include "writer/writer.h"

typedef struct {
	const char *data_dir;
	writer_t *writer;
	builder_follower_t *follower;  /* NULL: answer at commit (tests). */
	unsigned live_wait_ms;         /* 0: UPDATE_DEFAULT_LIVE_WAIT_MS. */
	const zc_acl_t *allow_update;  /* Unsigned updates from; NULL: none. */
	size_t max_size;               /* Largest message accepted. */
	unsigned tsig_max_fudge;       /* Largest TSIG time window, seconds
	                                  (0: DNS_TSIG_MAX_FUDGE_DEFAULT). */
	size_t tsig_replay_cache;      /* Signed messages remembered to refuse
	                                  replays (0: the default). */
} update_config_t;

#define UPDATE_DEFAULT_LIVE_WAIT_MS 5000u
/* Default of tsig_replay_cache. */
#define UPDATE_TSIG_REPLAY_CACHE 262144

typedef struct update_service update_service_t;

int update_start(const update_config_t *cfg, update_service_t **out);

/* Applies cfg's allow_update, max_size, live_wait_ms and tsig_max_fudge
 * to a running service (a reload): the next message is judged by them.
 * The rest of cfg is ignored. */
int update_reconfigure(update_service_t *u, const update_config_t *cfg);

/* Refuses new messages (answered SERVFAIL at once); messages already with
 * the committer are answered when it drains (stop it after this). */
void update_shutdown(update_service_t *u);

/* Frees the service (after the committer has stopped). NULL: no-op. */
void update_free(update_service_t *u);

/* The server hook (server_hooks_t.update; ctx is the service). */
void update_handle(void *ctx, const uint8_t *msg, size_t len,
                   const struct sockaddr_storage *from, bool tcp,
                   server_reply_t *reply);
