/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast.conf: the server's configuration file.
 *
 * The format is the one NSD and Unbound operators know: a "server:"
 * section header, then indented "key: value" lines; '#' starts a comment.
 * Repeatable keys (listen) may appear several times; a file's first value
 * of one replaces its defaults. Every key is a row of one table
 * (config_keys.c: parser, limits, default, live or restart), which
 * docs/configuration.md documents (tests/system/test_check.py holds the
 * two to the same keys, classes and defaults).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/acl.h"
#include "common/log.h"
#include "server/server.h"
#include "transfer/secondary.h"

/* Default of zone-max-records. */
#define CONFIG_ZONE_MAX_RECORDS 10000000u

#define CONFIG_NOTIFY_MAX 16

#define CONFIG_STR_MAX 1024
/* serve's listen address when none is given (serve_parse_args()). */
#define CONFIG_DEFAULT_LISTEN "127.0.0.1:5300"

typedef struct {
	char data_dir[CONFIG_STR_MAX];
	/* records-store: "" for the data directory's SQLite records.db, or
	 * a postgresql:// URI (records_bind(), docs/postgresql.md). */
	char records_store[CONFIG_STR_MAX];
	/* node-name: this server among the nodes sharing a records store
	 * (status, the nodes table); "" until config_node_name_default()
	 * gives it HOST:DATA_DIR. */
	char node_name[CONFIG_STR_MAX];
	char listen[SERVER_MAX_LISTEN][128];
	size_t listen_count;
	char api_listen[128];
	char metrics_listen[128];   /* "": no metrics endpoint */
	unsigned metrics_zone_limit; /* Zones with per-zone series. */
	unsigned workers;           /* 0: one per core */
	int log_level;              /* zc_log_level_t */
	int log_format;             /* zc_log_format_t */
	char log_target[ZC_LOG_TARGETS_MAX][ZC_LOG_TARGET_LEN]; /* none: stderr */
	size_t log_target_count;
	unsigned audit_refusal_rate; /* Refusal audit lines a second; 0: all. */
	char control_socket[CONFIG_STR_MAX]; /* "": DATA_DIR/control.sock */
	char pidfile[CONFIG_STR_MAX];        /* "": DATA_DIR/zonecast.pid */
	char nsid[256];
	char identity[256];         /* CH TXT id.server ("": NSID or host name) */
	char version[256];          /* CH TXT version.bind ("": zonecast X.Y) */
	bool hide_identity;         /* Those queries get REFUSED. */
	bool hide_version;
	unsigned tcp_idle_timeout;  /* seconds */
	unsigned tcp_max_clients;
	unsigned tcp_max_clients_per_ip;
	unsigned tcp_max_pending;   /* Replies owed per TCP connection. */
	unsigned transfer_max_concurrent;
	bool cookies;               /* DNS Cookies (RFC 7873/9018). */
	uint8_t cookie_secret[16];  /* All zero: random at start. */
	unsigned rrl_rate;          /* Responses/s per RRL bucket; 0: off. */
	unsigned rrl_slip;
	unsigned rrl_ipv4_prefix;
	unsigned rrl_ipv6_prefix;
	unsigned rrl_table_size;
	zc_acl_t rrl_exempt;
	bool demo;                  /* Seed a demo zone into an empty store. */
	char zone_ns[8][256];       /* NS for zones created by the API. */
	size_t zone_ns_count;
	char zone_hostmaster[256];  /* SOA RNAME for them ("" : hostmaster.ZONE) */
	unsigned default_ttl;       /* TTL for them and for "automatic" (1). */
	unsigned journal_retention; /* Seconds the change log is kept. */
	zc_acl_t allow_update;      /* Unsigned UPDATEs accepted from. */
	zc_acl_t allow_transfer;    /* Unsigned AXFR/IXFR accepted from. */
	secondary_keys_t allow_transfer_keys; /* Keys that may transfer all. */
	char notify[CONFIG_NOTIFY_MAX][384]; /* "ADDR[:PORT] [key NAME]" */
	size_t notify_count;
	unsigned notify_retries;
	unsigned notify_timeout;    /* ms before the first resend */
	int serial_policy;          /* records_serial_policy_t for new zones */
	unsigned update_max_size;   /* bytes */
	unsigned live_wait;         /* ms an UPDATE (API ?wait=live) waits to
	                             * be served before SERVFAIL (202). */
	unsigned tsig_max_fudge;    /* Largest TSIG time window, seconds. */
	unsigned tsig_replay_cache; /* Signed UPDATEs remembered (replays). */
	unsigned signature_cache;   /* RRSIGs cached per DNS worker */
	char user[64];              /* Run as this user after binding ("": no). */
	unsigned api_max_body;      /* bytes */
	unsigned api_timeout;       /* seconds of inactivity */
	unsigned api_max_clients;
	unsigned api_max_clients_per_ip;
	unsigned zone_max_records;
	/* Fleet (NATS JetStream): "" nats = no fleet. */
	char nats[CONFIG_STR_MAX];          /* server URLs, comma-separated */
	char nats_user[256];
	char nats_password[256];
	char nats_token[256];
	char nats_creds[CONFIG_STR_MAX];    /* credentials file (NKey/JWT) */
	bool nats_tls;
	char nats_tls_ca[CONFIG_STR_MAX];
	char nats_tls_cert[CONFIG_STR_MAX];
	char nats_tls_key[CONFIG_STR_MAX];
	char fleet_prefix[65];
	char fleet_name[64];                /* this server's name in the fleet */
	unsigned fleet_snapshot_mib;        /* a snapshot after this much sent */
	unsigned fleet_stream_max_mib;
	unsigned fleet_replicas;
	unsigned fleet_edge_timeout;        /* ms */
} config_t;

/* Fills the built-in defaults. */
void config_defaults(config_t *cfg);

/*
 * Reads a config file over the current values. On error prints
 * "FILE:LINE: message" to stderr and returns ZC_EINVAL_CONFIG.
 */
int config_load(config_t *cfg, const char *path);

/* As config_load(), the first error written to err instead (the lines
 * after it are still applied). */
int config_read(config_t *cfg, const char *path, char *err, size_t err_size);

/* Applies the log settings (zc_log_configure(): the one step that may
 * fail, err then says why and nothing changed) and the audit's refusal
 * rate. reload: a running log file that cannot be opened again is kept,
 * with a warning in err and ZC_EOK. */
int config_log_apply(const config_t *cfg, bool reload, char *err,
                     size_t err_size);

/* The control socket's and the pidfile's paths (defaults in data-dir). */
void config_control_socket(const config_t *cfg, char *out, size_t size);
void config_pidfile(const config_t *cfg, char *out, size_t size);

/*
 * Gives node_name its default when the configuration left it empty:
 * "HOST:DATA_DIR", the host name and the data directory's absolute path,
 * made from the working directory when relative and normalised as text
 * (".", ".." and repeated slashes; symlinks are not followed), so it is
 * the same before the directory exists and after, at every start and
 * reload with the same configuration. Cut at CONFIG_STR_MAX - 1 bytes.
 */
void config_node_name_default(config_t *cfg);

/* The fleet settings as fleet/fleet.h takes them (pointers into cfg). */
void config_fleet(const config_t *cfg, void *fleet_config);

/* Applies one "key: value" setting (from a file or the command line). */
int config_set(config_t *cfg, const char *key, const char *value,
               char *err, size_t err_size);
