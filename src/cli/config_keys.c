/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The one table of config keys: for each key, where config_t keeps it,
 * how a value is parsed and checked, its default (as it would be written
 * in the file), and whether a running server applies a new value at once
 * (live) or only at its next start. config_defaults(), config_set(),
 * config_diff() (what a reload changed) and `zonecast check-config --keys`
 * all walk this table, so a key cannot be parsed without being compared
 * on reload or defaulted somewhere else; tests/system/test_check.py holds
 * docs/configuration.md and docs/operations.md to the same list.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "cli/config_keys.h"
#include "common/audit.h"
#include "common/error.h"
#include "common/net.h"
#include "dns/tsig.h"
#include "metrics/metrics.h"
#include "update/update.h"

typedef struct config_key config_key_t;

/* Parses value into the key's field: 0, -1 (the generic "invalid value"
 * message), or ZC_EINVAL_CONFIG with err written. */
typedef int (*parse_fn)(const config_key_t *k, config_t *cfg,
                        const char *value, char *err, size_t err_size);

/* How a reload compares the old and the new value. */
typedef enum {
	CMP_MEM,    /* Byte for byte (numbers, flags, ACLs). */
	CMP_STR,    /* A NUL-terminated string. */
	CMP_LIST,   /* count strings of `size` bytes, the count at count_at. */
} cmp_t;

struct config_key {
	const char *key;
	bool live;
	bool secret;         /* A bad value is not echoed. */
	parse_fn parse;
	cmp_t cmp;
	size_t at;
	size_t size;         /* CMP_MEM: bytes; CMP_STR: buffer; CMP_LIST: item. */
	size_t count_at;     /* CMP_LIST */
	size_t max_count;    /* CMP_LIST */
	const char *noun;    /* CMP_LIST: "listen addresses" ("more than N ..."). */
	bool repeat;         /* CMP_MEM, given once per entry (ACLs): cleared to 0. */
	unsigned min, max;   /* parse_uint */
	const char *def;     /* The default, as written in the file (NULL: none). */
	const char *shown;   /* The default as --keys shows it, where the
	                      * field starts empty and its user fills it in
	                      * (a list's; one derived from data-dir). */
	uint64_t def_num;    /* parse_uint's default. */
	const char *hint;    /* Appended to "invalid value" messages. */
	int (*check)(const char *value, char *err, size_t err_size); /* Lists. */
};

static void *field(const config_key_t *k, config_t *cfg)
{
	return (char *)cfg + k->at;
}

/* ------------------------------------------------------------ parsers */

static int parse_uint(const config_key_t *k, config_t *cfg,
                      const char *value, char *err, size_t err_size)
{
	(void)err, (void)err_size;
	char *end;
	errno = 0;
	unsigned long v = strtoul(value, &end, 10);
	if (errno != 0 || *end != '\0' || value[0] == '\0' || value[0] == '-' ||
	    v > k->max || v < k->min) {
		return -1;
	}
	*(unsigned *)field(k, cfg) = (unsigned)v;
	return 0;
}

static int parse_bool(const config_key_t *k, config_t *cfg,
                      const char *value, char *err, size_t err_size)
{
	(void)err, (void)err_size;
	bool *out = field(k, cfg);
	if (strcmp(value, "yes") == 0 || strcmp(value, "true") == 0) {
		*out = true;
	} else if (strcmp(value, "no") == 0 || strcmp(value, "false") == 0) {
		*out = false;
	} else {
		return -1;
	}
	return 0;
}

static int copy_str(char *dst, size_t size, const char *value)
{
	size_t len = strlen(value);
	if (len >= size || len == 0) {
		return -1;
	}
	memcpy(dst, value, len + 1);
	return 0;
}

static int parse_str(const config_key_t *k, config_t *cfg,
                     const char *value, char *err, size_t err_size)
{
	(void)err, (void)err_size;
	return copy_str(field(k, cfg), k->size, value);
}

/* Appends one value to a repeatable key's list. */
static int parse_list(const config_key_t *k, config_t *cfg,
                      const char *value, char *err, size_t err_size)
{
	size_t *count = (size_t *)((char *)cfg + k->count_at);
	if (*count == k->max_count) {
		snprintf(err, err_size, "more than %zu %s", k->max_count, k->noun);
		return ZC_EINVAL_CONFIG;
	}
	if (k->check != NULL) {
		int ret = k->check(value, err, err_size);
		if (ret != 0) {
			return ret;
		}
	}
	char *item = (char *)field(k, cfg) + *count * k->size;
	if (copy_str(item, k->size, value) != 0) {
		return -1;
	}
	(*count)++;
	return 0;
}

static int parse_acl(const config_key_t *k, config_t *cfg,
                     const char *value, char *err, size_t err_size)
{
	zc_acl_t *acl = field(k, cfg);
	if (acl->count == ZC_ACL_MAX) {
		snprintf(err, err_size, "more than %d entries for '%s'",
		         ZC_ACL_MAX, k->key);
		return ZC_EINVAL_CONFIG;
	}
	return zc_acl_add(acl, value) == ZC_EOK ? 0 : -1;
}

static int parse_hex16(const config_key_t *k, config_t *cfg,
                       const char *value, char *err, size_t err_size)
{
	(void)err, (void)err_size;
	uint8_t *out = field(k, cfg), bytes[16];
	if (strlen(value) != 32) {
		return -1;
	}
	for (size_t i = 0; i < 16; i++) {
		unsigned byte;
		if (!isxdigit((unsigned char)value[2 * i]) ||
		    !isxdigit((unsigned char)value[2 * i + 1]) ||
		    sscanf(value + 2 * i, "%2x", &byte) != 1) {
			return -1;
		}
		bytes[i] = (uint8_t)byte;
	}
	memcpy(out, bytes, sizeof(bytes));
	return 0;
}

static int check_addr(const char *value, char *err, size_t err_size)
{
	struct sockaddr_storage ss;
	socklen_t len;
	if (zc_addr_mapped(value)) {
		snprintf(err, err_size, "'%s' is an IPv4-mapped IPv6 address, "
		         "which no listener binds (IPv6 sockets are IPv6-only): "
		         "give the IPv4 address", value);
		return ZC_EINVAL_CONFIG;
	}
	return zc_addr_parse(value, &ss, &len) == ZC_EOK ? 0 : -1;
}

/* An address, or "none" (the listener is off: ""). */
static int parse_addr_or_none(const config_key_t *k, config_t *cfg,
                              const char *value, char *err, size_t err_size)
{
	char *out = field(k, cfg);
	if (strcmp(value, "none") == 0) {
		out[0] = '\0';
		return 0;
	}
	int ret = check_addr(value, err, err_size);
	if (ret != 0) {
		return ret;
	}
	return copy_str(out, k->size, value);
}

static int parse_log_level(const config_key_t *k, config_t *cfg,
                           const char *value, char *err, size_t err_size)
{
	(void)err, (void)err_size;
	int level = zc_log_level_parse(value);
	if (level < 0) {
		return -1;
	}
	*(int *)field(k, cfg) = level;
	return 0;
}

/* Text of one line: no control characters (it is printed by status). */
static int parse_line(const config_key_t *k, config_t *cfg,
                      const char *value, char *err, size_t err_size)
{
	for (const char *p = value; *p; p++) {
		if (iscntrl((unsigned char)*p)) {
			return -1;
		}
	}
	return parse_str(k, cfg, value, err, err_size);
}

/* One of a few words, stored as its index. */
static int choose(const config_key_t *k, config_t *cfg, const char *value,
                  const char *const *words, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(value, words[i]) == 0) {
			*(int *)field(k, cfg) = (int)i;
			return 0;
		}
	}
	return -1;
}

static int parse_log_format(const config_key_t *k, config_t *cfg,
                            const char *value, char *err, size_t err_size)
{
	(void)err, (void)err_size;
	static const char *const words[] = { [ZC_LOG_TEXT] = "text",
	                                     [ZC_LOG_JSON] = "json" };
	return choose(k, cfg, value, words, 2);
}

static int parse_serial_policy(const config_key_t *k, config_t *cfg,
                               const char *value, char *err, size_t err_size)
{
	(void)err, (void)err_size;
	static const char *const words[] = { "increment", "unixtime" };
	return choose(k, cfg, value, words, 2);
}

static int check_log_target(const char *value, char *err, size_t err_size)
{
	(void)err, (void)err_size;
	return zc_log_target_valid(value) ? 0 : -1;
}

static int check_notify(const char *value, char *err, size_t err_size)
{
	secondary_notify_t target;
	return secondary_notify_parse(value, &target, err, err_size) == ZC_EOK ?
	       0 : ZC_EINVAL_CONFIG;
}

static int parse_allow_transfer(const config_key_t *k, config_t *cfg,
                                const char *value, char *err,
                                size_t err_size)
{
	(void)k;
	return secondary_acl_parse(value, &cfg->allow_transfer,
	                           &cfg->allow_transfer_keys, err, err_size) ==
	       ZC_EOK ? 0 : ZC_EINVAL_CONFIG;
}

/* Letters, digits and '_' (and '-' when dash), 1 to 63 of them. */
static bool is_token(const char *v, bool dash)
{
	size_t n = 0;
	for (const char *p = v; *p; p++, n++) {
		if (!isalnum((unsigned char)*p) && *p != '_' && !(dash && *p == '-')) {
			return false;
		}
	}
	return n > 0 && n < 64;
}

/* A stream name prefix. */
static int parse_prefix(const config_key_t *k, config_t *cfg,
                        const char *value, char *err, size_t err_size)
{
	return is_token(value, false) ? parse_str(k, cfg, value, err, err_size) :
	       -1;
}

/* A key of the report bucket and a subject token. */
static int parse_name(const config_key_t *k, config_t *cfg,
                      const char *value, char *err, size_t err_size)
{
	return is_token(value, true) ? parse_str(k, cfg, value, err, err_size) :
	       -1;
}

/* ------------------------------------------------------------- table */

#define FIELD(f) .at = offsetof(config_t, f), .size = sizeof(((config_t *)0)->f)
#define UINT(k, l, f, lo, hi, d) { .key = k, .live = l, .parse = parse_uint, \
	.cmp = CMP_MEM, FIELD(f), .min = lo, .max = hi, .def_num = d }
#define BOOL(k, l, f, d) { .key = k, .live = l, .parse = parse_bool, \
	.cmp = CMP_MEM, FIELD(f), .def = d }
#define STR(k, l, f, d) { .key = k, .live = l, .parse = parse_str, \
	.cmp = CMP_STR, FIELD(f), .def = d }
#define ACL(k, l, f) { .key = k, .live = l, .parse = parse_acl, \
	.cmp = CMP_MEM, FIELD(f), .repeat = true }
#define LIST(k, l, f, n, what, chk) { .key = k, .live = l, \
	.parse = parse_list, .cmp = CMP_LIST, .at = offsetof(config_t, f), \
	.size = sizeof(((config_t *)0)->f[0]), .count_at = offsetof(config_t, n), \
	.max_count = sizeof(((config_t *)0)->f) / sizeof(((config_t *)0)->f[0]), \
	.noun = what, .check = chk }
#define WITH(k, l, f, fn, d) { .key = k, .live = l, .parse = fn, \
	.cmp = CMP_MEM, FIELD(f), .def = d }

static const config_key_t keys[] = {
	STR("data-dir", false, data_dir, "zonecast-data"),
	/* A URI may hold a password: a refused one is not echoed. */
	{ .key = "records-store", .secret = true, .parse = parse_str,
	  .cmp = CMP_STR, FIELD(records_store) },
	/* Default HOST:DATA_DIR, given by config_node_name_default(). */
	{ .key = "node-name", .parse = parse_line, .cmp = CMP_STR,
	  FIELD(node_name), .shown = "HOST:DATA_DIR" },
	{ .key = "listen", .parse = parse_list, .cmp = CMP_LIST,
	  .at = offsetof(config_t, listen), .size = sizeof(((config_t *)0)->listen[0]),
	  .count_at = offsetof(config_t, listen_count),
	  .max_count = sizeof(((config_t *)0)->listen) /
	               sizeof(((config_t *)0)->listen[0]),
	  .noun = "listen addresses", .check = check_addr,
	  .shown = CONFIG_DEFAULT_LISTEN /* serve_parse_args() */ },
	{ .key = "api-listen", .parse = parse_addr_or_none, .cmp = CMP_STR,
	  FIELD(api_listen), .def = "127.0.0.1:8053" },
	{ .key = "metrics-listen", .parse = parse_addr_or_none, .cmp = CMP_STR,
	  FIELD(metrics_listen) },
	UINT("metrics-zone-limit", false, metrics_zone_limit, 0, 10000000,
	     METRICS_DEFAULT_ZONE_LIMIT),
	UINT("workers", false, workers, 0, 256, 0),
	STR("user", false, user, NULL),
	/* Derived from data-dir (config_control_socket(), config_pidfile()). */
	{ .key = "control-socket", .parse = parse_str, .cmp = CMP_STR,
	  FIELD(control_socket), .shown = "DATA_DIR/control.sock" },
	{ .key = "pidfile", .parse = parse_str, .cmp = CMP_STR,
	  FIELD(pidfile), .shown = "DATA_DIR/zonecast.pid" },
	WITH("log-level", true, log_level, parse_log_level, "info"),
	WITH("log-format", true, log_format, parse_log_format, "text"),
	{ .key = "log-target", .live = true, .parse = parse_list,
	  .cmp = CMP_LIST, .at = offsetof(config_t, log_target),
	  .size = ZC_LOG_TARGET_LEN, .count_at = offsetof(config_t,
	  log_target_count), .max_count = ZC_LOG_TARGETS_MAX,
	  .noun = "log targets", .check = check_log_target,
	  .shown = "stderr" /* zc_log_configure() with none */,
	  .hint = " (stderr, syslog, journald or an absolute file path)" },
	UINT("audit-refusal-rate", true, audit_refusal_rate, 0, 1000000,
	     ZC_AUDIT_REFUSALS_PER_S),
	STR("nsid", true, nsid, NULL),
	STR("identity", false, identity, NULL),
	STR("version", false, version, NULL),
	BOOL("hide-identity", false, hide_identity, "no"),
	BOOL("hide-version", false, hide_version, "no"),
	UINT("tcp-idle-timeout", true, tcp_idle_timeout, 0, 3600, 10),
	UINT("tcp-max-clients", true, tcp_max_clients, 1, 1000000, 1024),
	UINT("tcp-max-clients-per-ip", true, tcp_max_clients_per_ip, 0,
	     1000000, 64),
	UINT("tcp-max-pending", true, tcp_max_pending, 1, 65536, 256),
	UINT("transfer-max-concurrent", false, transfer_max_concurrent, 1, 1024,
	     16),
	BOOL("cookies", true, cookies, "yes"),
	{ .key = "cookie-secret", .live = true, .secret = true,
	  .parse = parse_hex16, .cmp = CMP_MEM, FIELD(cookie_secret),
	  .hint = " (32 hexadecimal digits)" },
	UINT("rrl-rate", true, rrl_rate, 0, 1000000, 200),
	UINT("rrl-slip", true, rrl_slip, 0, 100, 2),
	UINT("rrl-ipv4-prefix", true, rrl_ipv4_prefix, 0, 32, 24),
	UINT("rrl-ipv6-prefix", true, rrl_ipv6_prefix, 0, 128, 56),
	UINT("rrl-table-size", false, rrl_table_size, 0, 1u << 26, 262144),
	ACL("rrl-exempt", true, rrl_exempt),
	BOOL("demo-zone", false, demo, "yes"),
	LIST("zone-ns", false, zone_ns, zone_ns_count, "zone-ns names", NULL),
	STR("zone-hostmaster", false, zone_hostmaster, NULL),
	UINT("default-ttl", false, default_ttl, 1, INT32_MAX, 3600),
	WITH("serial-policy", false, serial_policy, parse_serial_policy,
	     "increment"),
	UINT("journal-retention", true, journal_retention, 0, UINT32_MAX,
	     7 * 86400),
	UINT("zone-max-records", true, zone_max_records, 1, UINT32_MAX,
	     CONFIG_ZONE_MAX_RECORDS),
	ACL("allow-update", true, allow_update),
	/* Its addresses and its keys, side by side in config_t. */
	{ .key = "allow-transfer", .live = true, .parse = parse_allow_transfer,
	  .cmp = CMP_MEM, .repeat = true, .at = offsetof(config_t, allow_transfer),
	  .size = offsetof(config_t, allow_transfer_keys) +
	          sizeof(secondary_keys_t) - offsetof(config_t, allow_transfer) },
	LIST("notify", true, notify, notify_count, "notify addresses",
	     check_notify),
	UINT("notify-retries", true, notify_retries, 0, 100, 5),
	UINT("notify-timeout", true, notify_timeout, 1, 600000, 1000),
	UINT("update-max-size", true, update_max_size, 12, 65535, 65535),
	UINT("live-wait", true, live_wait, 1, 600000, 5000),
	UINT("tsig-max-fudge", true, tsig_max_fudge, 1, 65535,
	     DNS_TSIG_MAX_FUDGE_DEFAULT),
	UINT("tsig-replay-cache", false, tsig_replay_cache, 1024, 1u << 24,
	     UPDATE_TSIG_REPLAY_CACHE),
	UINT("signature-cache", false, signature_cache, 0, 16 * 1024 * 1024,
	     65536),
	UINT("api-max-body", true, api_max_body, 1024, 1u << 30,
	     API_DEFAULT_MAX_BODY),
	UINT("api-timeout", false, api_timeout, 1, 3600, API_DEFAULT_TIMEOUT_S),
	UINT("api-max-clients", false, api_max_clients, 1, 65536,
	     API_DEFAULT_MAX_CLIENTS),
	UINT("api-max-clients-per-ip", false, api_max_clients_per_ip, 1, 65536,
	     API_DEFAULT_MAX_CLIENTS_PER_IP),
	STR("nats", false, nats, NULL),
	STR("nats-user", false, nats_user, NULL),
	{ .key = "nats-password", .secret = true, .parse = parse_str,
	  .cmp = CMP_STR, FIELD(nats_password) },
	{ .key = "nats-token", .secret = true, .parse = parse_str,
	  .cmp = CMP_STR, FIELD(nats_token) },
	STR("nats-creds", false, nats_creds, NULL),
	BOOL("nats-tls", false, nats_tls, "no"),
	STR("nats-tls-ca", false, nats_tls_ca, NULL),
	STR("nats-tls-cert", false, nats_tls_cert, NULL),
	STR("nats-tls-key", false, nats_tls_key, NULL),
	{ .key = "fleet-prefix", .parse = parse_prefix, .cmp = CMP_STR,
	  FIELD(fleet_prefix), .def = "zonecast" },
	{ .key = "fleet-name", .parse = parse_name, .cmp = CMP_STR,
	  FIELD(fleet_name) },
	UINT("fleet-snapshot-mib", false, fleet_snapshot_mib, 1, 1u << 20, 256),
	UINT("fleet-stream-max-mib", false, fleet_stream_max_mib, 1, 1u << 24,
	     4096),
	UINT("fleet-replicas", false, fleet_replicas, 1, 5, 1),
	UINT("fleet-edge-timeout", false, fleet_edge_timeout, 100, 3600000,
	     5000),
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const config_key_t *find(const char *key)
{
	for (size_t i = 0; i < NKEYS; i++) {
		if (strcmp(keys[i].key, key) == 0) {
			return &keys[i];
		}
	}
	return NULL;
}

/* ---------------------------------------------------------- the uses */

void config_defaults(config_t *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < NKEYS; i++) {
		const config_key_t *k = &keys[i];
		char err[256];
		if (k->parse == parse_uint) {
			*(unsigned *)field(k, cfg) = (unsigned)k->def_num;
		} else if (k->def != NULL &&
		           k->parse(k, cfg, k->def, err, sizeof(err)) != 0) {
			abort(); /* A default its own parser refuses: a bug. */
		}
	}
}

int config_set(config_t *cfg, const char *key, const char *value,
               char *err, size_t err_size)
{
	const config_key_t *k = find(key);
	if (k == NULL) {
		snprintf(err, err_size, "unknown setting '%s'", key);
		return ZC_EINVAL_CONFIG;
	}
	/* No value holds a control character: a carriage return inside
	 * one ("nsid: a\rversion: EVIL") went into the NSID, and -o passed
	 * line breaks. */
	for (const unsigned char *c = (const unsigned char *)value; *c; c++) {
		if ((*c < 0x20 && *c != '\t') || *c == 0x7f) {
			snprintf(err, err_size, "a control character (0x%02x) in the "
			         "value of '%s'", *c, key);
			return ZC_EINVAL_CONFIG;
		}
	}
	int ret = k->parse(k, cfg, value, err, err_size);
	if (ret == 0) {
		return ZC_EOK;
	}
	if (ret != -1) {
		return ZC_EINVAL_CONFIG; /* err says why. */
	}
	if (k->secret) {
		/* A secret, even a mistyped one, is not echoed to the log. */
		snprintf(err, err_size, "invalid value for '%s'%s", key,
		         k->hint != NULL ? k->hint : "");
	} else {
		snprintf(err, err_size, "invalid value '%s' for '%s'%s", value, key,
		         k->hint != NULL ? k->hint : "");
	}
	return ZC_EINVAL_CONFIG;
}

int config_key_find(const char *key)
{
	const config_key_t *k = find(key);
	return k == NULL ? -1 : (int)(k - keys);
}

bool config_key_repeatable(size_t i)
{
	return i < NKEYS && (keys[i].cmp == CMP_LIST || keys[i].repeat);
}

void config_key_clear(config_t *cfg, size_t i)
{
	if (i < NKEYS && keys[i].cmp == CMP_LIST) {
		*(size_t *)((char *)cfg + keys[i].count_at) = 0;
	} else if (i < NKEYS && keys[i].repeat) {
		memset((char *)cfg + keys[i].at, 0, keys[i].size); /* empty */
	}
}

static bool same(const config_key_t *k, const config_t *a, const config_t *b)
{
	const char *pa = (const char *)a + k->at, *pb = (const char *)b + k->at;
	switch (k->cmp) {
	case CMP_MEM:
		return memcmp(pa, pb, k->size) == 0;
	case CMP_STR:
		return strcmp(pa, pb) == 0;
	case CMP_LIST: {
		size_t na = *(const size_t *)((const char *)a + k->count_at);
		size_t nb = *(const size_t *)((const char *)b + k->count_at);
		if (na != nb) {
			return false;
		}
		for (size_t i = 0; i < na; i++) {
			if (strcmp(pa + i * k->size, pb + i * k->size) != 0) {
				return false;
			}
		}
		return true;
	}
	}
	return false;
}

size_t config_diff(const config_t *old_cfg, const config_t *new_cfg,
                   void (*changed)(const char *key, bool live, void *ctx),
                   void *ctx)
{
	size_t n = 0;
	for (size_t i = 0; i < NKEYS; i++) {
		if (!same(&keys[i], old_cfg, new_cfg)) {
			n++;
			if (changed != NULL) {
				changed(keys[i].key, keys[i].live, ctx);
			}
		}
	}
	return n;
}

void config_keep_restart(config_t *cfg, const config_t *running)
{
	for (size_t i = 0; i < NKEYS; i++) {
		const config_key_t *k = &keys[i];
		if (k->live) {
			continue;
		}
		size_t size = k->cmp == CMP_LIST ? k->size * k->max_count : k->size;
		memcpy((char *)cfg + k->at, (const char *)running + k->at, size);
		if (k->cmp == CMP_LIST) {
			memcpy((char *)cfg + k->count_at,
			       (const char *)running + k->count_at, sizeof(size_t));
		}
	}
}

int config_key_is_live(const char *key)
{
	const config_key_t *k = find(key);
	return k == NULL ? -1 : k->live;
}

size_t config_key_count(void)
{
	return NKEYS;
}

const char *config_key_name(size_t i)
{
	return i < NKEYS ? keys[i].key : NULL;
}

void config_key_default(size_t i, char *out, size_t size)
{
	out[0] = '\0';
	if (i >= NKEYS) {
		return;
	}
	if (keys[i].parse == parse_uint) {
		snprintf(out, size, "%llu", (unsigned long long)keys[i].def_num);
	} else if (keys[i].def != NULL) {
		snprintf(out, size, "%s", keys[i].def);
	}
}

void config_key_default_shown(size_t i, char *out, size_t size)
{
	config_key_default(i, out, size);
	if (out[0] == '\0' && i < NKEYS && keys[i].shown != NULL) {
		snprintf(out, size, "%s", keys[i].shown);
	}
}
