/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * One error space for all of zonecast.
 *
 * A fallible function returns ZC_EOK (0) or a negative code: -errno,
 * libknot's codes (KNOT_E*, -1000..-900 and -errno aliases), or ours in
 * -2999..-2000 defined here. zc_strerror() names every one of them.
 *
 * Storage failures keep their errno: -ENOSPC (disk full, also for EDQUOT),
 * -EROFS (read-only file system) and -EACCES (permission denied), so
 * that the API and UPDATE can tell the client why nothing was written.
 */
#pragma once

#include <stdbool.h>

#define ZC_EOK 0

#define ZC_ERROR_MAP(X) \
	X(ZC_EINVAL_CONFIG, -2000, "invalid configuration") \
	X(ZC_ESQL,          -2001, "records store SQL error") \
	X(ZC_ELMDB,         -2002, "edge store (LMDB) error") \
	X(ZC_ENOZONE,       -2003, "no such zone") \
	X(ZC_EEXISTS,       -2004, "already exists") \
	X(ZC_ESCHEMA,       -2005, "unsupported schema version") \
	X(ZC_EFORMAT,       -2006, "malformed stored value") \
	X(ZC_EZONEFILE,     -2007, "invalid zone file") \
	X(ZC_ENOSPACE,      -2008, "buffer too small") \
	X(ZC_EBUSY,         -2009, "database busy") \
	X(ZC_ESTALE,        -2010, "stale write fenced off") \
	X(ZC_ETOOBIG,       -2011, "value too large") \
	X(ZC_EUSAGE,        -2012, "invalid arguments") \
	X(ZC_ENOJOURNAL,    -2013, "journal does not reach that serial") \
	X(ZC_ENOKEY,        -2014, "no such key") \
	X(ZC_ETOOMANY,      -2015, "too many records in the zone") \
	X(ZC_EMAPFULL,      -2016, "edge store map full") \
	X(ZC_ENAMEKEY,      -2017, "name too long for a store key (root " \
	  "zone names with over 240 octets 0x00 or 0x01)") \
	X(ZC_EINJECTED,     -2018, "build failure injected for a test " \
	  "(ZONECAST_FAULT_BUILD)") \
	X(ZC_EQUARANTINED,  -2019, "zone quarantined: its last build failed") \
	X(ZC_ERDATA,        -2020, "rdata malformed for its type") \
	X(ZC_EUNSTORABLE,   -2021, "record not stored: a meta-type, a TTL " \
	  "over 2^31-1, NS at a wildcard, or no master-file form that reads " \
	  "back the same") \
	X(ZC_EVERSION,      -2022, "stored value of an unknown format version " \
	  "(written by a newer zonecast?)") \
	X(ZC_ETRUNCATED,    -2023, "stored value truncated") \
	X(ZC_ETRAILING,     -2024, "stored value followed by trailing bytes") \
	X(ZC_EKEYSIZE,      -2025, "DNSSEC private key empty or over 65,535 " \
	  "bytes (PEM): the edge store cannot hold it") \
	X(ZC_EKEYCOUNT,     -2026, "a signed zone has 1 to 8 DNSSEC keys") \
	X(ZC_ENATS,         -2030, "NATS/JetStream error") \
	X(ZC_EACCES_NATS,   -2032, "NATS refused the credentials") \
	X(ZC_EUNAVAILABLE,  -2033, "records store unavailable (PostgreSQL " \
	  "down or unreachable): try again") \
	X(ZC_EINDOUBT,      -2034, "records store connection lost at commit: " \
	  "the write may or may not have been made (check before retrying)") \
	X(ZC_ETRIMMED,      -2035, "the change log was trimmed past what this " \
	  "edge store applied (another node trimmed it): every zone is " \
	  "built again") \
	X(ZC_EFENCED,       -2036, "a newer fleet leader took over: this " \
	  "node no longer publishes") \
	X(ZC_EREPLAY,       -2037, "a statement of a unit released without " \
	  "waiting failed: the batch must run again, unit by unit") \
	X(ZC_EREPLGAP,      -2031, "replication stream has a gap (bootstrap " \
	  "from a snapshot)") \
	X(ZC_ETYPES,        -2038, "a name would hold more than an edge " \
	  "store node holds (504 types, 65535 records of one type)") \
	X(ZC_EDISABLING,    -2039, "the zone's DNSSEC is being disabled (CDS " \
	  "and CDNSKEY DELETE published, RFC 8078 section 4): enable it again " \
	  "or finish the disable first") \
	X(ZC_EDNAME,        -2040, "a record below a DNAME, or a DNAME above " \
	  "records (RFC 6672 section 2.4)") \
	X(ZC_ESESSIONEND,   -2041, "records store session ended by " \
	  "PostgreSQL: its transaction stayed idle past " \
	  "idle_in_transaction_session_timeout (or the session past " \
	  "idle_session_timeout), and was rolled back: try again")

enum {
#define ZC_ERROR_ENUM(name, code, text) name = code,
	ZC_ERROR_MAP(ZC_ERROR_ENUM)
#undef ZC_ERROR_ENUM
};

/* Names any code of the shared error space. Never returns NULL. */
const char *zc_strerror(int code);

/* Whether code says the data directory cannot take writes now (disk full,
 * read-only, permission denied): a condition for the operator, not a bug. */
bool zc_storage_error(int code);
