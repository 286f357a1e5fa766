/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What a reload may change: every config key with where config_t keeps
 * it and whether a running server applies a new value at once (live) or
 * only at its next start (docs/configuration.md marks the same keys).
 * config_diff() walks the table to tell a reload which keys changed.
 */
#include <stddef.h>
#include <string.h>

#include "cli/config_keys.h"

typedef enum {
	FIELD_MEM,    /* Compared byte for byte (numbers, flags, lists). */
	FIELD_STR,    /* A NUL-terminated string. */
	FIELD_LIST,   /* count strings of `item` bytes, count at count_at. */
} field_kind_t;

typedef struct {
	const char *key;
	bool live;
	field_kind_t kind;
	size_t at;
	size_t size;      /* FIELD_MEM: bytes; FIELD_LIST: one item's. */
	size_t count_at;  /* FIELD_LIST */
} config_key_t;

#define MEM(k, live, f) { k, live, FIELD_MEM, offsetof(config_t, f), \
	                  sizeof(((config_t *)0)->f), 0 }
#define STR(k, live, f) { k, live, FIELD_STR, offsetof(config_t, f), 0, 0 }
#define LIST(k, live, f, n) { k, live, FIELD_LIST, offsetof(config_t, f), \
	                      sizeof(((config_t *)0)->f[0]), \
	                      offsetof(config_t, n) }

static const config_key_t keys[] = {
	STR("data-dir", false, data_dir),
	LIST("listen", false, listen, listen_count),
	STR("api-listen", false, api_listen),
	STR("metrics-listen", false, metrics_listen),
	MEM("metrics-zone-limit", false, metrics_zone_limit),
	MEM("workers", false, workers),
	MEM("user", false, user),
	STR("control-socket", false, control_socket),
	STR("pidfile", false, pidfile),
	MEM("log-level", true, log_level),
	MEM("log-format", true, log_format),
	LIST("log-target", true, log_target, log_target_count),
	STR("nsid", true, nsid),
	STR("identity", false, identity),
	STR("version", false, version),
	MEM("hide-identity", false, hide_identity),
	MEM("hide-version", false, hide_version),
	MEM("tcp-idle-timeout", true, tcp_idle_timeout),
	MEM("tcp-max-clients", true, tcp_max_clients),
	MEM("tcp-max-clients-per-ip", true, tcp_max_clients_per_ip),
	MEM("tcp-max-pending", true, tcp_max_pending),
	MEM("transfer-max-concurrent", false, transfer_max_concurrent),
	MEM("cookies", true, cookies),
	MEM("cookie-secret", true, cookie_secret),
	MEM("rrl-rate", true, rrl_rate),
	MEM("rrl-slip", true, rrl_slip),
	MEM("rrl-ipv4-prefix", true, rrl_ipv4_prefix),
	MEM("rrl-ipv6-prefix", true, rrl_ipv6_prefix),
	MEM("rrl-table-size", false, rrl_table_size),
	MEM("rrl-exempt", true, rrl_exempt),
	MEM("demo-zone", false, demo),
	LIST("zone-ns", false, zone_ns, zone_ns_count),
	STR("zone-hostmaster", false, zone_hostmaster),
	MEM("default-ttl", false, default_ttl),
	MEM("serial-policy", false, serial_policy),
	MEM("journal-retention", true, journal_retention),
	MEM("zone-max-records", true, zone_max_records),
	MEM("allow-update", true, allow_update),
	/* Its addresses and its keys, side by side in config_t. */
	{ "allow-transfer", true, FIELD_MEM, offsetof(config_t, allow_transfer),
	  offsetof(config_t, allow_transfer_keys) +
	  sizeof(secondary_keys_t) - offsetof(config_t, allow_transfer), 0 },
	LIST("notify", true, notify, notify_count),
	MEM("notify-retries", true, notify_retries),
	MEM("notify-timeout", true, notify_timeout),
	MEM("update-max-size", true, update_max_size),
	MEM("live-wait", true, live_wait),
	MEM("tsig-max-fudge", true, tsig_max_fudge),
	MEM("tsig-replay-cache", false, tsig_replay_cache),
	MEM("signature-cache", false, signature_cache),
	MEM("api-max-body", true, api_max_body),
	MEM("api-timeout", false, api_timeout),
	MEM("api-max-clients", false, api_max_clients),
	MEM("api-max-clients-per-ip", false, api_max_clients_per_ip),
	STR("nats", false, nats),
	STR("nats-user", false, nats_user),
	STR("nats-password", false, nats_password),
	STR("nats-token", false, nats_token),
	STR("nats-creds", false, nats_creds),
	MEM("nats-tls", false, nats_tls),
	STR("nats-tls-ca", false, nats_tls_ca),
	STR("nats-tls-cert", false, nats_tls_cert),
	STR("nats-tls-key", false, nats_tls_key),
	STR("fleet-prefix", false, fleet_prefix),
	STR("fleet-name", false, fleet_name),
	MEM("fleet-snapshot-mib", false, fleet_snapshot_mib),
	MEM("fleet-stream-max-mib", false, fleet_stream_max_mib),
	MEM("fleet-replicas", false, fleet_replicas),
	MEM("fleet-edge-timeout", false, fleet_edge_timeout),
};

static bool same(const config_key_t *k, const config_t *a, const config_t *b)
{
	const char *pa = (const char *)a + k->at, *pb = (const char *)b + k->at;
	switch (k->kind) {
	case FIELD_MEM:
		return memcmp(pa, pb, k->size) == 0;
	case FIELD_STR:
		return strcmp(pa, pb) == 0;
	case FIELD_LIST: {
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
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!same(&keys[i], old_cfg, new_cfg)) {
			n++;
			if (changed != NULL) {
				changed(keys[i].key, keys[i].live, ctx);
			}
		}
	}
	return n;
}

int config_key_is_live(const char *key)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strcmp(keys[i].key, key) == 0) {
			return keys[i].live;
		}
	}
	return -1;
}

size_t config_key_count(void)
{
	return sizeof(keys) / sizeof(keys[0]);
}

const char *config_key_name(size_t i)
{
	return i < config_key_count() ? keys[i].key : NULL;
}
