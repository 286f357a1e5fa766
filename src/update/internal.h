/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to update/: one UPDATE message on its way through. */
#pragma once

#include <stdbool.h>
#include <libknot/packet/pkt.h>

#include "builder/builder.h"
#include "dns/tsig.h"
#include "records/records.h"
#include "server/server.h"
#include "update/net.h"
#include "writer/writer.h"

typedef struct update_service update_service_t;

typedef struct {
	writer_unit_t unit;          /* First: the committer's handle. */
	builder_waiter_t waiter;     /* Until the edge serves the change. */
	update_service_t *service;
	server_reply_t *reply;
	bool tcp;
	uint8_t *wire;               /* The message (owned copy). */
	size_t wire_len;
	knot_pkt_t *pkt;             /* Parsed over wire. */
	dns_tsig_t tsig;
	int64_t key_id;              /* The TSIG key's, whose existence the
	                                committer checks (update_key_check). */
	bool key_kept;               /* Verified with a key kept by the
	                                service, not read from the store. */
	bool replay_pending;         /* Its replay check is the committer's
	                                (a kept key: service.c). */
	records_zone_t zone;         /* From the zone section. */
	uint8_t rcode;               /* Outcome (RFC 2136 §2.2). */
	/* Refused by the committer with a verdict that was logged, audited,
	 * counted or put in the replay cache: should the writer run the
	 * unit again (writer.h), it answers the same, deciding nothing
	 * twice (update_apply()). */
	bool refused;
	/* Its refusal has an audit line (update_audit_refused(), or the
	 * TSIG failure's): respond() writes one for any other answer. */
	bool audited;
	/* A copy over UDP of a signed message taken before from the same
	 * address and port (take_copy()): drop, its first still in
	 * progress, not answered; copy, its first answered, answered the
	 * same (rcode). Nothing of either is applied. */
	bool drop, copy;
	uint64_t arrived_ns;         /* CLOCK_MONOTONIC, when it came. */
	bool changed;                /* The zone's serial moved. */
	/* The message's SOA (RFC 2136 §3.4.2.2): the newest serial of the
	 * apex SOAs it adds (0 when none is newer than the zone's), which is
	 * then the message's one version, and the serial of the last SOA
	 * it took so far. */
	bool soa_new;
	uint32_t soa_serial, soa_taken;
	/* Net effect, to tell a message whose changes cancel out (RFC 2136
	 * §3.6: then the serial does not move). */
	update_net_t net;            /* What it removed and added (net.h). */
	bool serial_moved;           /* An SOA it took (the serial moves). */
	/* Owners an add took past a size rule (records/rules.h) in a
	 * message that also deletes: the rules hold for what the message
	 * leaves (its changes are made in order, RFC 2136 §3.4.2, and a
	 * later one may delete a type), checked once it ends. */
	bool deletes;
	uint8_t (*over)[KNOT_DNAME_MAXLEN];
	size_t over_count, over_cap;
	struct sockaddr_storage from; /* The client (audit lines). */
} update_msg_t;

/* Drops a zone from the service's lookups (service.c), when the writer
 * found it deleted. */
void update_zone_forget(update_service_t *u, const knot_dname_t *apex);

/* Drops a TSIG key from the service's lookups (service.c), when the
 * writer found it deleted. */
void update_key_forget(update_service_t *u, const knot_dname_t *name);

/* The replay check of a message verified with a kept key (service.c),
 * counted and logged as dns_tsig_check()'s: ZC_EOK, or KNOT_TSIG_EBADTIME
 * with m->tsig.error set. */
int update_tsig_replay(update_service_t *u, update_msg_t *m);

/* The service's TSIG policy as now (time window, replay cache). */
dns_tsig_policy_t update_tsig_policy(update_service_t *u);

/* Whether a zone takes no writes: it is quarantined (its builds fail). */
bool update_zone_quarantined(update_service_t *u, int64_t zone_id);

/* Audit lines (audit.c, common/audit.h): an UPDATE answered NOERROR, and
 * one refused (why says what refused it; marks m audited). An answer
 * other than NOERROR or SERVFAIL that has no line yet gets one as it is
 * sent, its reason from its rcode (update_audit_answer()): a zone name
 * outside the zone, a failed prerequisite, a malformed message. */
void update_audit_accepted(const update_msg_t *m);
void update_audit_refused(update_msg_t *m, uint8_t rcode,
                          const char *why);
void update_audit_answer(update_msg_t *m);
/* The line of a copy of a message in progress (update_msg_t.drop), and
 * of one answered before (update_msg_t.copy: its rcode with it). */
void update_audit_dropped(update_msg_t *m, const char *what);
void update_audit_copy(update_msg_t *m, const char *what);

/* What the answer to a message waits for once the committer is done with
 * it (service.c): nothing, the answers before it on its TCP connection, or
 * the edge store serving the zone version it was applied to (its new
 * serial, or the serial it read when it changed nothing). */
typedef enum {
	UPDATE_ANSWER_NOW,
	UPDATE_AWAIT_ORDER,
	UPDATE_AWAIT_SERVED,
} update_wait_t;

/* The wait of a message whose unit ended with `result` and `rcode`: every
 * NOERROR waits until it is served, a change or not (acknowledged =
 * servable); other answers only keep their TCP connection's order. */
update_wait_t update_live_wait(int result, uint8_t rcode, bool tcp);

/* Parses an UPDATE message (service.c): rdata as sent, owners lowercased.
 * Returns a libknot code (KNOT_EOK). */
int update_parse(knot_pkt_t *pkt);

/* The committer unit (apply.c): prerequisites, then the update. Sets
 * msg->rcode; returns ZC_EOK only when everything was applied. */
int update_apply(records_store_t *rs, void *msg);
/* The writer's hint for update_apply() (writer.h): names the owners of
 * the prerequisite and update sections, whose nodes it reads. */
void update_hint(records_store_t *rs, void *msg);

/* Prescan of the update section (apply.c): RFC 2136 §3.4.1, and the
 * types zonecast refuses. Returns an rcode (0: fine). log: say why a
 * record is refused (not for a look that precheck() then repeats). */
uint8_t update_prescan(const update_msg_t *msg, bool log);

/*
 * Prerequisite section format checks (apply.c), RFC 2136 §3.2, made on the
 * worker's thread: NOERROR, or the rcode (FORMERR, NOTZONE) of the first
 * malformed prerequisite. That rcode is the answer only when *final is
 * set: when an ANY or NONE prerequisite comes before the malformed one,
 * its existence check may fail first (§3.2.5 checks one prerequisite after
 * the other), so update_prereq_check() decides in the committer.
 */
uint8_t update_prereq_prescan(const knot_pktsection_t *sec,
                              const knot_dname_t *apex, bool *final);

/*
 * The prerequisite section (apply.c), RFC 2136 §3.2.5, against the zone's
 * records in rs, in the pseudocode's order: each prerequisite's form
 * (FORMERR, NOTZONE) and, for class ANY or NONE, the state it asks for
 * (NXDOMAIN, YXDOMAIN, NXRRSET, YXRRSET), one after the other, the first
 * failure deciding; then the value-dependent ones (class IN: NXRRSET for
 * the first RRset that differs). Returns the rcode; a store error is put
 * in *ret and answered SERVFAIL.
 */
uint8_t update_prereq_check(records_store_t *rs, const records_zone_t *zone,
                            const knot_pktsection_t *sec, int *ret);

/* The key's update policy (policy.c): true when every update RR is
 * within the grants (dns/tsig_grants.h; an empty list means the whole
 * zone). */
bool update_policy_allows(const char *grants, const knot_dname_t *key_name,
                          const update_msg_t *msg);

/* In the committer's transaction (apply.c): the message's TSIG key
 * (m->key_id) still exists, and then a kept key's replay check; or it was
 * deleted, and the message is judged again with the key now under its
 * name, as the precheck would have judged it (BADKEY when none, BADSIG,
 * REFUSED for another zone's key or outside its grants). Else sets
 * m->rcode (and m->tsig.error) and returns non-zero. */
int update_key_check(records_store_t *rs, update_msg_t *m);

/* The zone of a message verified with a kept key was deleted since the
 * precheck: the message is judged as precheck() would judge it now, the
 * zone and the key looked up by their names (a zone made again under the
 * name, with a key of the name for it: *zone is that zone). */
int update_key_judge_again(records_store_t *rs, update_msg_t *m,
                           records_zone_t *zone);

