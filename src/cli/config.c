/* SPDX-License-Identifier: GPL-3.0-or-later */
/* zonecast.conf reader (see config.h for the format). */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "cli/config.h"
#include "common/error.h"
#include "common/log.h"
#include "dns/tsig.h"
#include "fleet/fleet.h"
#include "metrics/metrics.h"
#include "update/update.h"
#include "transfer/secondary.h"

void config_defaults(config_t *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->data_dir, sizeof(cfg->data_dir), "zonecast-data");
	cfg->log_level = ZC_LOG_INFO;
	cfg->tcp_idle_timeout = 10;
	cfg->tcp_max_clients = 1024;
	cfg->tcp_max_clients_per_ip = 64;
	cfg->tcp_max_pending = 256;
	cfg->transfer_max_concurrent = 16;
	cfg->cookies = true;
	cfg->rrl_rate = 200;
	cfg->rrl_slip = 2;
	cfg->rrl_ipv4_prefix = 24;
	cfg->rrl_ipv6_prefix = 56;
	cfg->rrl_table_size = 262144;
	cfg->demo = true;
	cfg->default_ttl = 3600;
	cfg->journal_retention = 7 * 86400;
	cfg->notify_retries = 5;
	cfg->notify_timeout = 1000;
	cfg->update_max_size = 65535;
	cfg->live_wait = 5000;
	cfg->tsig_max_fudge = DNS_TSIG_MAX_FUDGE_DEFAULT;
	cfg->tsig_replay_cache = UPDATE_TSIG_REPLAY_CACHE;
	cfg->signature_cache = 65536;
	snprintf(cfg->api_listen, sizeof(cfg->api_listen), "127.0.0.1:8053");
	cfg->metrics_zone_limit = METRICS_DEFAULT_ZONE_LIMIT;
	cfg->api_max_body = API_DEFAULT_MAX_BODY;
	cfg->api_timeout = API_DEFAULT_TIMEOUT_S;
	cfg->api_max_clients = API_DEFAULT_MAX_CLIENTS;
	cfg->api_max_clients_per_ip = API_DEFAULT_MAX_CLIENTS_PER_IP;
	cfg->zone_max_records = CONFIG_ZONE_MAX_RECORDS;
	snprintf(cfg->fleet_prefix, sizeof(cfg->fleet_prefix), "zonecast");
	cfg->fleet_snapshot_mib = 256;
	cfg->fleet_stream_max_mib = 4096;
	cfg->fleet_replicas = 1;
	cfg->fleet_edge_timeout = 5000;
}

static int parse_uint(const char *value, unsigned max, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(value, &end, 10);
	if (errno != 0 || *end != '\0' || value[0] == '\0' || value[0] == '-' ||
	    v > max) {
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

static int parse_bool(const char *value, bool *out)
{
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
	if (strlen(value) >= size || value[0] == '\0') {
		return -1;
	}
	memcpy(dst, value, strlen(value) + 1);
	return 0;
}

static int parse_hex16(const char *value, uint8_t out[16])
{
	if (strlen(value) != 32) {
		return -1;
	}
	for (size_t i = 0; i < 16; i++) {
		unsigned byte;
		if (sscanf(value + 2 * i, "%2x", &byte) != 1 ||
		    !isxdigit((unsigned char)value[2 * i]) ||
		    !isxdigit((unsigned char)value[2 * i + 1])) {
			return -1;
		}
		out[i] = (uint8_t)byte;
	}
	return 0;
}

/* Abuse resistance: RRL, cookies, TCP and transfer limits. True when key
 * is one of these (bad tells whether value was). */
static bool set_abuse_key(config_t *cfg, const char *key, const char *value,
                          int *bad)
{
	if (strcmp(key, "tcp-max-clients-per-ip") == 0) {
		*bad = parse_uint(value, 1000000, &cfg->tcp_max_clients_per_ip);
	} else if (strcmp(key, "tcp-max-pending") == 0) {
		*bad = parse_uint(value, 65536, &cfg->tcp_max_pending) ||
		       cfg->tcp_max_pending == 0;
	} else if (strcmp(key, "transfer-max-concurrent") == 0) {
		*bad = parse_uint(value, 1024, &cfg->transfer_max_concurrent) ||
		       cfg->transfer_max_concurrent == 0;
	} else if (strcmp(key, "cookies") == 0) {
		*bad = parse_bool(value, &cfg->cookies);
	} else if (strcmp(key, "cookie-secret") == 0) {
		*bad = parse_hex16(value, cfg->cookie_secret);
	} else if (strcmp(key, "rrl-rate") == 0) {
		*bad = parse_uint(value, 1000000, &cfg->rrl_rate);
	} else if (strcmp(key, "rrl-slip") == 0) {
		*bad = parse_uint(value, 100, &cfg->rrl_slip);
	} else if (strcmp(key, "rrl-ipv4-prefix") == 0) {
		*bad = parse_uint(value, 32, &cfg->rrl_ipv4_prefix);
	} else if (strcmp(key, "rrl-ipv6-prefix") == 0) {
		*bad = parse_uint(value, 128, &cfg->rrl_ipv6_prefix);
	} else if (strcmp(key, "rrl-table-size") == 0) {
		*bad = parse_uint(value, 1u << 26, &cfg->rrl_table_size);
	} else if (strcmp(key, "rrl-exempt") == 0) {
		*bad = zc_acl_add(&cfg->rrl_exempt, value) != ZC_EOK;
	} else {
		return false;
	}
	return true;
}

void config_fleet(const config_t *cfg, void *out)
{
	fleet_config_t *f = out;
	memset(f, 0, sizeof(*f));
	f->urls = cfg->nats;
	f->user = cfg->nats_user;
	f->password = cfg->nats_password;
	f->token = cfg->nats_token;
	f->creds_file = cfg->nats_creds;
	f->tls = cfg->nats_tls;
	f->tls_ca = cfg->nats_tls_ca;
	f->tls_cert = cfg->nats_tls_cert;
	f->tls_key = cfg->nats_tls_key;
	f->prefix = cfg->fleet_prefix;
	f->name = cfg->fleet_name[0] ? cfg->fleet_name : NULL;
	f->snapshot_bytes = (uint64_t)cfg->fleet_snapshot_mib << 20;
	f->stream_max_bytes = (int64_t)cfg->fleet_stream_max_mib << 20;
	f->replicas = (int)cfg->fleet_replicas;
	f->edge_timeout_ms = cfg->fleet_edge_timeout;
}

/* Letters, digits, '_' and '-' (at most 63). */
static bool is_prefix_or_dash(const char *v)
{
	size_t n = 0;
	for (const char *p = v; *p; p++, n++) {
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-') {
			return false;
		}
	}
	return n > 0 && n < 64;
}

static bool is_prefix(const char *v)
{
	for (const char *p = v; *p; p++) {
		if (!isalnum((unsigned char)*p) && *p != '_') {
			return false;
		}
	}
	return v[0] != '\0';
}

/* The fleet's NATS connection and stream settings. True when key is one
 * of these (bad tells whether value was). */
static bool set_fleet_key(config_t *cfg, const char *key, const char *value,
                          int *bad)
{
	if (strcmp(key, "nats") == 0) {
		*bad = copy_str(cfg->nats, sizeof(cfg->nats), value);
	} else if (strcmp(key, "nats-user") == 0) {
		*bad = copy_str(cfg->nats_user, sizeof(cfg->nats_user), value);
	} else if (strcmp(key, "nats-password") == 0) {
		*bad = copy_str(cfg->nats_password, sizeof(cfg->nats_password),
		                value);
	} else if (strcmp(key, "nats-token") == 0) {
		*bad = copy_str(cfg->nats_token, sizeof(cfg->nats_token), value);
	} else if (strcmp(key, "nats-creds") == 0) {
		*bad = copy_str(cfg->nats_creds, sizeof(cfg->nats_creds), value);
	} else if (strcmp(key, "nats-tls") == 0) {
		*bad = parse_bool(value, &cfg->nats_tls);
	} else if (strcmp(key, "nats-tls-ca") == 0) {
		*bad = copy_str(cfg->nats_tls_ca, sizeof(cfg->nats_tls_ca), value);
	} else if (strcmp(key, "nats-tls-cert") == 0) {
		*bad = copy_str(cfg->nats_tls_cert, sizeof(cfg->nats_tls_cert),
		                value);
	} else if (strcmp(key, "nats-tls-key") == 0) {
		*bad = copy_str(cfg->nats_tls_key, sizeof(cfg->nats_tls_key),
		                value);
	} else if (strcmp(key, "fleet-prefix") == 0) {
		*bad = !is_prefix(value) || copy_str(cfg->fleet_prefix,
		                                     sizeof(cfg->fleet_prefix), value);
	} else if (strcmp(key, "fleet-name") == 0) {
		/* A key of the report bucket and a subject token. */
		*bad = !is_prefix_or_dash(value) ||
		       copy_str(cfg->fleet_name, sizeof(cfg->fleet_name), value);
	} else if (strcmp(key, "fleet-snapshot-mib") == 0) {
		*bad = parse_uint(value, 1u << 20, &cfg->fleet_snapshot_mib) ||
		       cfg->fleet_snapshot_mib == 0;
	} else if (strcmp(key, "fleet-stream-max-mib") == 0) {
		*bad = parse_uint(value, 1u << 24, &cfg->fleet_stream_max_mib) ||
		       cfg->fleet_stream_max_mib == 0;
	} else if (strcmp(key, "fleet-replicas") == 0) {
		*bad = parse_uint(value, 5, &cfg->fleet_replicas) ||
		       cfg->fleet_replicas == 0;
	} else if (strcmp(key, "fleet-edge-timeout") == 0) {
		*bad = parse_uint(value, 3600000, &cfg->fleet_edge_timeout) ||
		       cfg->fleet_edge_timeout < 100;
	} else {
		return false;
	}
	return true;
}

int config_set(config_t *cfg, const char *key, const char *value,
               char *err, size_t err_size)
{
	int bad = 0;
	if (strcmp(key, "data-dir") == 0) {
		bad = copy_str(cfg->data_dir, sizeof(cfg->data_dir), value);
	} else if (strcmp(key, "listen") == 0) {
		struct sockaddr_storage ss;
		socklen_t len;
		if (cfg->listen_count == SERVER_MAX_LISTEN) {
			snprintf(err, err_size, "more than %d listen addresses",
			         SERVER_MAX_LISTEN);
			return ZC_EINVAL_CONFIG;
		}
		bad = server_parse_addr(value, &ss, &len) != ZC_EOK ||
		      copy_str(cfg->listen[cfg->listen_count],
		               sizeof(cfg->listen[0]), value);
		cfg->listen_count += !bad;
	} else if (strcmp(key, "api-listen") == 0) {
		struct sockaddr_storage ss;
		socklen_t len;
		if (strcmp(value, "none") == 0) {
			cfg->api_listen[0] = '\0';
			return ZC_EOK;
		}
		bad = server_parse_addr(value, &ss, &len) != ZC_EOK ||
		      copy_str(cfg->api_listen, sizeof(cfg->api_listen), value);
	} else if (strcmp(key, "metrics-listen") == 0) {
		struct sockaddr_storage ss;
		socklen_t len;
		if (strcmp(value, "none") == 0) {
			cfg->metrics_listen[0] = '\0';
			return ZC_EOK;
		}
		bad = server_parse_addr(value, &ss, &len) != ZC_EOK ||
		      copy_str(cfg->metrics_listen, sizeof(cfg->metrics_listen),
		               value);
	} else if (strcmp(key, "metrics-zone-limit") == 0) {
		bad = parse_uint(value, 10000000, &cfg->metrics_zone_limit);
	} else if (strcmp(key, "workers") == 0) {
		bad = parse_uint(value, 256, &cfg->workers);
	} else if (strcmp(key, "log-level") == 0) {
		cfg->log_level = zc_log_level_parse(value);
		bad = cfg->log_level < 0;
	} else if (strcmp(key, "log-format") == 0) {
		cfg->log_format = strcmp(value, "text") == 0 ? ZC_LOG_TEXT :
		                  strcmp(value, "json") == 0 ? ZC_LOG_JSON : -1;
		bad = cfg->log_format < 0;
	} else if (strcmp(key, "log-target") == 0) {
		if (cfg->log_target_count == ZC_LOG_TARGETS_MAX) {
			snprintf(err, err_size, "more than %d log targets",
			         ZC_LOG_TARGETS_MAX);
			return ZC_EINVAL_CONFIG;
		}
		bad = !zc_log_target_valid(value) ||
		      copy_str(cfg->log_target[cfg->log_target_count],
		               sizeof(cfg->log_target[0]), value);
		cfg->log_target_count += !bad;
	} else if (strcmp(key, "control-socket") == 0) {
		bad = copy_str(cfg->control_socket, sizeof(cfg->control_socket),
		               value);
	} else if (strcmp(key, "pidfile") == 0) {
		bad = copy_str(cfg->pidfile, sizeof(cfg->pidfile), value);
	} else if (strcmp(key, "nsid") == 0) {
		bad = copy_str(cfg->nsid, sizeof(cfg->nsid), value);
	} else if (strcmp(key, "identity") == 0) {
		bad = copy_str(cfg->identity, sizeof(cfg->identity), value);
	} else if (strcmp(key, "version") == 0) {
		bad = copy_str(cfg->version, sizeof(cfg->version), value);
	} else if (strcmp(key, "hide-identity") == 0) {
		bad = parse_bool(value, &cfg->hide_identity);
	} else if (strcmp(key, "hide-version") == 0) {
		bad = parse_bool(value, &cfg->hide_version);
	} else if (strcmp(key, "tcp-idle-timeout") == 0) {
		bad = parse_uint(value, 3600, &cfg->tcp_idle_timeout);
	} else if (strcmp(key, "tcp-max-clients") == 0) {
		bad = parse_uint(value, 1000000, &cfg->tcp_max_clients) ||
		      cfg->tcp_max_clients == 0;
	} else if (set_abuse_key(cfg, key, value, &bad)) {
		/* Parsed there. */
	} else if (set_fleet_key(cfg, key, value, &bad)) {
		/* Parsed there. */
	} else if (strcmp(key, "zone-ns") == 0) {
		if (cfg->zone_ns_count == 8) {
			snprintf(err, err_size, "more than 8 zone-ns names");
			return ZC_EINVAL_CONFIG;
		}
		bad = copy_str(cfg->zone_ns[cfg->zone_ns_count],
		               sizeof(cfg->zone_ns[0]), value);
		cfg->zone_ns_count += !bad;
	} else if (strcmp(key, "zone-hostmaster") == 0) {
		bad = copy_str(cfg->zone_hostmaster, sizeof(cfg->zone_hostmaster),
		               value);
	} else if (strcmp(key, "default-ttl") == 0) {
		bad = parse_uint(value, INT32_MAX, &cfg->default_ttl) ||
		      cfg->default_ttl == 0;
	} else if (strcmp(key, "demo-zone") == 0) {
		bad = parse_bool(value, &cfg->demo);
	} else if (strcmp(key, "journal-retention") == 0) {
		bad = parse_uint(value, UINT32_MAX, &cfg->journal_retention);
	} else if (strcmp(key, "allow-update") == 0) {
		bad = zc_acl_add(&cfg->allow_update, value) != ZC_EOK;
	} else if (strcmp(key, "allow-transfer") == 0) {
		if (secondary_acl_parse(value, &cfg->allow_transfer,
		                        &cfg->allow_transfer_keys, err,
		                        err_size) != ZC_EOK) {
			return ZC_EINVAL_CONFIG;
		}
	} else if (strcmp(key, "notify") == 0) {
		secondary_notify_t target;
		if (cfg->notify_count == CONFIG_NOTIFY_MAX) {
			snprintf(err, err_size, "more than %d notify addresses",
			         CONFIG_NOTIFY_MAX);
			return ZC_EINVAL_CONFIG;
		}
		if (secondary_notify_parse(value, &target, err,
		                           err_size) != ZC_EOK) {
			return ZC_EINVAL_CONFIG;
		}
		bad = copy_str(cfg->notify[cfg->notify_count],
		               sizeof(cfg->notify[0]), value);
		cfg->notify_count += !bad;
	} else if (strcmp(key, "notify-retries") == 0) {
		bad = parse_uint(value, 100, &cfg->notify_retries);
	} else if (strcmp(key, "notify-timeout") == 0) {
		bad = parse_uint(value, 600000, &cfg->notify_timeout) ||
		      cfg->notify_timeout == 0;
	} else if (strcmp(key, "serial-policy") == 0) {
		cfg->serial_policy = strcmp(value, "increment") == 0 ? 0 :
		                     strcmp(value, "unixtime") == 0 ? 1 : -1;
		bad = cfg->serial_policy < 0;
	} else if (strcmp(key, "user") == 0) {
		bad = copy_str(cfg->user, sizeof(cfg->user), value);
	} else if (strcmp(key, "signature-cache") == 0) {
		bad = parse_uint(value, 16 * 1024 * 1024, &cfg->signature_cache);
	} else if (strcmp(key, "live-wait") == 0) {
		bad = parse_uint(value, 600000, &cfg->live_wait) ||
		      cfg->live_wait == 0;
	} else if (strcmp(key, "tsig-max-fudge") == 0) {
		bad = parse_uint(value, 65535, &cfg->tsig_max_fudge) ||
		      cfg->tsig_max_fudge == 0;
	} else if (strcmp(key, "tsig-replay-cache") == 0) {
		bad = parse_uint(value, 1u << 24, &cfg->tsig_replay_cache) ||
		      cfg->tsig_replay_cache < 1024;
	} else if (strcmp(key, "update-max-size") == 0) {
		bad = parse_uint(value, 65535, &cfg->update_max_size) ||
		      cfg->update_max_size < 12;
	} else if (strcmp(key, "api-max-body") == 0) {
		bad = parse_uint(value, 1u << 30, &cfg->api_max_body) ||
		      cfg->api_max_body < 1024;
	} else if (strcmp(key, "api-timeout") == 0) {
		bad = parse_uint(value, 3600, &cfg->api_timeout) ||
		      cfg->api_timeout == 0;
	} else if (strcmp(key, "api-max-clients") == 0) {
		bad = parse_uint(value, 65536, &cfg->api_max_clients) ||
		      cfg->api_max_clients == 0;
	} else if (strcmp(key, "api-max-clients-per-ip") == 0) {
		bad = parse_uint(value, 65536, &cfg->api_max_clients_per_ip) ||
		      cfg->api_max_clients_per_ip == 0;
	} else if (strcmp(key, "zone-max-records") == 0) {
		bad = parse_uint(value, UINT32_MAX, &cfg->zone_max_records) ||
		      cfg->zone_max_records == 0;
	} else {
		snprintf(err, err_size, "unknown setting '%s'", key);
		return ZC_EINVAL_CONFIG;
	}
	if (bad && (strcmp(key, "cookie-secret") == 0 ||
	            strcmp(key, "nats-password") == 0 ||
	            strcmp(key, "nats-token") == 0)) {
		/* A secret, even a mistyped one, is not echoed to the log. */
		snprintf(err, err_size, "invalid value for '%s'%s", key,
		         key[0] == 'c' ? " (32 hexadecimal digits)" : "");
		return ZC_EINVAL_CONFIG;
	}
	if (bad && strcmp(key, "log-target") == 0) {
		snprintf(err, err_size, "invalid value '%s' for 'log-target' "
		         "(stderr, syslog, journald or an absolute file path)",
		         value);
		return ZC_EINVAL_CONFIG;
	}
	if (bad) {
		snprintf(err, err_size, "invalid value '%s' for '%s'", value, key);
		return ZC_EINVAL_CONFIG;
	}
	return ZC_EOK;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s)) {
		s++;
	}
	char *end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1])) {
		*--end = '\0';
	}
	return s;
}

/* Drops a trailing comment and surrounding quotes. */
static char *clean_value(char *v)
{
	char *hash = strchr(v, '#');
	if (hash != NULL) {
		*hash = '\0';
	}
	v = trim(v);
	size_t len = strlen(v);
	if (len >= 2 && v[0] == '"' && v[len - 1] == '"') {
		v[len - 1] = '\0';
		v++;
	}
	return v;
}

int config_read(config_t *cfg, const char *path, char *errbuf,
                size_t errbuf_size)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		snprintf(errbuf, errbuf_size, "%s: cannot open: %s", path,
		         strerror(errno));
		return ZC_EINVAL_CONFIG;
	}
	char line[2048];
	unsigned lineno = 0;
	bool in_server = false;
	bool listen_from_file = false;
	bool log_target_from_file = false;
	int ret = ZC_EOK;
	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		char *s = trim(line);
		if (*s == '\0' || *s == '#') {
			continue;
		}
		char *colon = strchr(s, ':');
		char err[256] = "";
		if (colon == NULL) {
			snprintf(err, sizeof(err), "expected 'key: value'");
		} else {
			*colon = '\0';
			char *key = trim(s);
			char *value = clean_value(colon + 1);
			if (*value == '\0' && strcmp(key, "server") == 0) {
				in_server = true;
				continue;
			} else if (*value == '\0') {
				snprintf(err, sizeof(err), "unknown section '%s'", key);
			} else if (!in_server) {
				snprintf(err, sizeof(err), "'%s' outside a 'server:' "
				         "section", key);
			} else {
				if (strcmp(key, "listen") == 0 && !listen_from_file) {
					cfg->listen_count = 0; /* The file replaces defaults. */
					listen_from_file = true;
				}
				if (strcmp(key, "log-target") == 0 &&
				    !log_target_from_file) {
					cfg->log_target_count = 0;
					log_target_from_file = true;
				}
				config_set(cfg, key, value, err, sizeof(err));
			}
		}
		if (err[0] != '\0' && ret == ZC_EOK) {
			/* The first error is reported; the lines after it are
			 * read on (a tool that only needs data-dir finds it). */
			snprintf(errbuf, errbuf_size, "%s:%u: %s", path, lineno, err);
			ret = ZC_EINVAL_CONFIG;
		}
	}
	fclose(f);
	return ret;
}

int config_load(config_t *cfg, const char *path)
{
	char err[1400];
	int ret = config_read(cfg, path, err, sizeof(err));
	if (ret != ZC_EOK) {
		fprintf(stderr, "%s\n", err);
	}
	return ret;
}

void config_log(const config_t *cfg, zc_log_config_t *out)
{
	memset(out, 0, sizeof(*out));
	out->level = cfg->log_level;
	out->format = (zc_log_format_t)cfg->log_format;
	out->target_count = cfg->log_target_count;
	memcpy(out->target, cfg->log_target, sizeof(out->target));
}

void config_control_socket(const config_t *cfg, char *out, size_t size)
{
	if (cfg->control_socket[0] != '\0') {
		snprintf(out, size, "%s", cfg->control_socket);
	} else {
		snprintf(out, size, "%s/control.sock", cfg->data_dir);
	}
}

void config_pidfile(const config_t *cfg, char *out, size_t size)
{
	if (cfg->pidfile[0] != '\0') {
		snprintf(out, size, "%s", cfg->pidfile);
	} else {
		snprintf(out, size, "%s/zonecast.pid", cfg->data_dir);
	}
}
