/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * TSIG (RFC 8945) for requests zonecast answers: checking a request's
 * signature and signing the response (one message, or each message of a
 * transfer), on top of libknot's TSIG primitives.
 *
 * The caller parses the request with knot_pkt_parse() (which takes the
 * TSIG RR off the message, as the MAC is computed without it), looks the
 * key up by the TSIG owner name and calls dns_tsig_check(); whatever the
 * outcome, dns_tsig_sign() then makes the response RFC 8945 §5.3 expects:
 * signed on success and on BADTIME, an unsigned TSIG carrying the error
 * on BADKEY and BADSIG.
 *
 * The time window (RFC 8945 §5.2.3) is the request's fudge, but never
 * more than the server's maximum (tsig-max-fudge): a client that asks for
 * a fudge of 65535 s would otherwise make its messages replayable for 18
 * hours. Within the window, a replay cache (tsig_replay.c), when the
 * caller gives one, refuses an exact copy of a request already accepted:
 * NOTAUTH with BADTIME, as for a request out of its window, since in both
 * cases the message is not fresh (RFC 8945 §5.2.3 answers an earlier Time
 * Signed than the last seen the same way).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libknot/packet/pkt.h>
#include <libknot/tsig.h>

/* Room to leave at the end of a response for its TSIG RR. */
#define DNS_TSIG_ROOM 512

#define DNS_TSIG_SECRET_MAX 128

/* The default of the largest time window accepted (tsig-max-fudge), the
 * fudge RFC 8945 §10 recommends. */
#define DNS_TSIG_MAX_FUDGE_DEFAULT 300

/* Outcome of the replay check (dns_tsig_replay_check()). */
typedef enum {
	DNS_TSIG_FRESH = 0,   /* Not seen before: remembered. */
	DNS_TSIG_FRESH_FULL,  /* Not seen; remembered in place of a live
	                         entry (the cache is too small). */
	DNS_TSIG_REPLAYED,    /* The same key and MAC were accepted within
	                         the window: a replay. */
	DNS_TSIG_UNPROVEN,    /* Signed before an entry the full cache had
	                         to drop: could be a replay of it. */
} dns_tsig_replay_result_t;

typedef struct dns_tsig_replay dns_tsig_replay_t;

/* How dns_tsig_check() judges time; NULL: the default maximum, no replay
 * check. */
typedef struct {
	uint16_t max_fudge;           /* 0: DNS_TSIG_MAX_FUDGE_DEFAULT */
	dns_tsig_replay_t *replay;    /* NULL: replays not checked. */
} dns_tsig_policy_t;

typedef struct dns_tsig {
	bool present;               /* The request was signed. */
	uint16_t error;             /* 0 or KNOT_RCODE_BADSIG/BADKEY/BADTIME/
	                               BADTRUNC */
	knot_tsig_key_t key;        /* Valid unless error is BADKEY. */
	uint8_t name[KNOT_DNAME_MAXLEN];
	uint8_t secret[DNS_TSIG_SECRET_MAX];
	uint8_t digest[64];         /* Request MAC, then the last one sent. */
	size_t digest_len;
	uint64_t time_signed;       /* The request's. */
	uint16_t fudge;             /* The request's. */
	uint16_t window;            /* Accepted: min(fudge, max_fudge). */
	uint64_t came;              /* Unix seconds when its time was checked
	                               (when it came): the replay check judges
	                               it as of then, however late it runs. */
	dns_tsig_replay_result_t replay; /* With error BADTIME: REPLAYED or
	                               UNPROVEN when the replay check, not the
	                               clock, refused it. */
	knot_rrset_t rr;            /* Copy of the request's TSIG RR header. */
	uint8_t rr_data[512];       /* ... and its rdata. */
	size_t messages;            /* Responses signed so far. */
} dns_tsig_t;

/*
 * Checks q's TSIG with the key (algorithm name as in "hmac-sha256",
 * secret), or records BADKEY when key_found is false or the algorithm
 * differs. t->present is false for an unsigned request. Returns ZC_EOK
 * when the request is unsigned or verified; KNOT_EMALF for a MAC of a
 * size RFC 8945 §5.2.2.1 answers with FORMERR (t->present is then false:
 * the answer is unsigned); else an rcode is in t->error (NOTAUTH).
 * BADTIME: the server's time is more than t->window seconds from the
 * request's, or (policy->replay) t->replay says why a fresh-looking
 * request was refused. A verified request is remembered in the replay
 * cache.
 */
int dns_tsig_check(const knot_pkt_t *q, bool key_found, const char *algorithm,
                   const uint8_t *secret, size_t secret_len,
                   const dns_tsig_policy_t *policy, dns_tsig_t *t);

/* dns_tsig_check() without counting a refusal in the metrics, for a
 * caller that may check again with a fresher key (update/service.c keeps
 * keys a while); it then passes the last outcome to dns_tsig_count(),
 * which returns it. */
int dns_tsig_verify(const knot_pkt_t *q, bool key_found,
                    const char *algorithm, const uint8_t *secret,
                    size_t secret_len, const dns_tsig_policy_t *policy,
                    dns_tsig_t *t);
int dns_tsig_count(int ret, const dns_tsig_t *t);

/* The replay check alone (policy->replay; nothing without one), for a
 * request verified with a policy that had none: KNOT_TSIG_EBADTIME when
 * refused (t->error, t->replay), else ZC_EOK and the request is
 * remembered. dns_tsig_check() does it after verifying. */
int dns_tsig_replay(const dns_tsig_policy_t *policy, dns_tsig_t *t);

/*
 * The replay cache (tsig_replay.c): at most `capacity` requests
 * remembered, in memory; thread-safe. NULL when out of memory or capacity
 * is 0.
 */
dns_tsig_replay_t *dns_tsig_replay_new(size_t capacity);
void dns_tsig_replay_free(dns_tsig_replay_t *c);

/* Whether the verified request t (key name, MAC, time signed) was seen
 * within its window (seconds), as of when it came (t->came; 0: now, Unix
 * seconds); remembers it when not. dns_tsig_check() calls it. A request
 * judged at its window's end is no longer fresh for a copy of it that
 * came within the window and waits (a writer's queue) to be judged: so
 * entries stay DNS_TSIG_REPLAY_GRACE seconds past their window, and a
 * request judged later than that after it came is refused (UNPROVEN). */
#define DNS_TSIG_REPLAY_GRACE 60
dns_tsig_replay_result_t dns_tsig_replay_check(dns_tsig_replay_t *c,
                                               const dns_tsig_t *t,
                                               uint16_t window, uint64_t now);

/* The windows grew (tsig-max-fudge raised by a reload) from old_window
 * to new_window seconds: a request signed before now - old_window - the
 * grace, which the cache may have forgotten, would pass the time check
 * again; it is refused from now on (UNPROVEN), as after an eviction; the
 * entries held are kept as long as the new window lets their copies
 * pass. */
void dns_tsig_replay_window_grew(dns_tsig_replay_t *c, uint16_t old_window,
                                 uint16_t new_window, uint64_t now);

/* Whether dns_tsig_replay_check() would refuse the request (REPLAYED or
 * UNPROVEN), without remembering it. */
bool dns_tsig_replay_known(dns_tsig_replay_t *c, const dns_tsig_t *t);

/* Where a request remembered came from and what it was answered: a
 * copy from the same place (REPLAYED: a client's retry over UDP, the same
 * bytes from the same socket) is the client's, whose answer was lost or
 * is still to come, instead of a replay: dropped while its first is in
 * progress (the first's answer goes to it), answered as the first was
 * once that went out, instead of BADTIME ("clocks are unsynchronized")
 * for a change that was made. dns_tsig_replay_tag() notes the origin (a
 * caller's non-zero hash of transport, address and port) of the verified
 * request t, dns_tsig_replay_answered() its answer's rcode and when it
 * went out (c NULL: nothing); dns_tsig_replay_copy() says what a copy of
 * t from origin that came at since_ns (CLOCK_MONOTONIC nanoseconds) is:
 * PENDING when its first was not answered then, ANSWERED (*rcode set)
 * when it was, NONE when t is not remembered from that origin. */
typedef enum {
	DNS_TSIG_COPY_NONE,
	DNS_TSIG_COPY_PENDING,
	DNS_TSIG_COPY_ANSWERED,
} dns_tsig_copy_t;

void dns_tsig_replay_tag(dns_tsig_replay_t *c, const dns_tsig_t *t,
                         uint64_t origin);
void dns_tsig_replay_answered(dns_tsig_replay_t *c, const dns_tsig_t *t,
                              uint8_t rcode);
dns_tsig_copy_t dns_tsig_replay_copy(dns_tsig_replay_t *c,
                                     const dns_tsig_t *t, uint64_t origin,
                                     uint64_t since_ns, uint8_t *rcode);

/* Signs a response of len bytes in msg (max: buffer size); nothing
 * happens for an unsigned request. The first call signs with the
 * request MAC, later ones (transfers) with the previous response's. */
int dns_tsig_sign(dns_tsig_t *t, uint8_t *msg, size_t *len, size_t max);

/* Copies t (its pointers point into itself: a plain struct copy would
 * leave dst pointing into src). */
void dns_tsig_copy(dns_tsig_t *dst, const dns_tsig_t *src);

/* The TSIG algorithm names zonecast accepts ("hmac-sha256", ...). */
bool dns_tsig_algorithm_ok(const char *name);
