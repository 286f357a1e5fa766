/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What several subcommands share: opening the stores of a data directory
 * (cli/data_dir.c says whether one may be created), and importing a
 * master file (parse, check, commit, full build).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "builder/builder.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "common/error.h"
#include "zonefile/zonefile.h"

/* At most this many check problems are printed. */
#define MAX_REPORTED 20

/* The edge store's default space reserve (ZONECAST_EDGE_RESERVE_MB). */
#define EDGE_RESERVE_MB 8

int cli_open_stores(const char *dir, bool create, records_store_t **rs,
                    edge_store_t **es)
{
	int ret = create ? cli_prepare_data_dir(dir) : cli_require_data_dir(dir);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = records_open(rs, dir);
	if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast: cannot open %s/records.db: %s\n", dir,
		        zc_strerror(ret));
		return ret;
	}
	/* The edge map is address space, not memory (64 GiB by default);
	 * tools that cannot reserve that much (valgrind) set a smaller one. */
	const char *mb = getenv("ZONECAST_EDGE_MAP_MB");
	size_t map = mb != NULL ? (size_t)strtoull(mb, NULL, 10) << 20 : 0;
	ret = edge_open(es, dir, map);
	if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast: cannot open %s/edge.mdb: %s\n", dir,
		        zc_strerror(ret));
		records_close(*rs);
		*rs = NULL;
		return ret;
	}
	/* Room kept for the builder on a disk that fills up (edge.h). */
	const char *rmb = getenv("ZONECAST_EDGE_RESERVE_MB");
	edge_set_reserve(*es, (rmb != NULL ? (size_t)strtoull(rmb, NULL, 10) :
	                       EDGE_RESERVE_MB) << 20);
	ret = builder_edge_prepare(*rs, *es);
	if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast: cannot bring %s/edge.mdb to this "
		        "version's format: %s\n", dir, zc_strerror(ret));
		edge_close(*es);
		records_close(*rs);
		*es = NULL;
		*rs = NULL;
	}
	return ret;
}

/* Files an import reads ($INCLUDE adds some): a record's tag is its file's
 * index here (high 16 bits) and its line (low 48 bits). */
#define MAX_FILES 256

typedef struct {
	records_import_t *imp;
	const knot_dname_t *apex;
	const char *path;
	uint64_t records;
	unsigned errors;
	unsigned problems;
	bool progress;
	cli_progress_t reading;
	char *files[MAX_FILES];
	unsigned file_count;
} import_t;

static uint64_t make_tag(import_t *imp, const char *file, uint64_t line)
{
	unsigned i = 0;
	while (i < imp->file_count && strcmp(imp->files[i], file) != 0) {
		i++;
	}
	if (i == imp->file_count && i < MAX_FILES) {
		imp->files[i] = strdup(file);
		imp->file_count += (imp->files[i] != NULL);
	}
	return (uint64_t)(i < imp->file_count ? i : MAX_FILES) << 48 |
	       (line & 0xffffffffffffULL);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_parse_error(const char *file, uint64_t line, const char *msg,
                           void *ctx)
{
	import_t *imp = ctx;
	imp->errors++;
	fprintf(stderr, "%s:%llu: error: %s\n", file, (unsigned long long)line,
	        msg);
}

static int on_record(const knot_dname_t *owner, uint16_t type, uint32_t ttl,
                     const uint8_t *rdata, uint16_t rdata_len,
                     const char *file, uint64_t line, void *ctx)
{
	import_t *imp = ctx;
	const char *why = NULL;
	int ret = zonefile_record_check(owner, type, ttl, rdata,
	                                rdata_len, &why);
	if (ret == ZC_ERDATA || ret == ZC_EUNSTORABLE) {
		char name[KNOT_DNAME_TXT_MAXLEN + 1], tname[32];
		knot_dname_to_str(name, owner, sizeof(name));
		knot_rrtype_to_string(type, tname, sizeof(tname));
		fprintf(stderr, "%s:%llu: error: %s %s: %s\n", file,
		        (unsigned long long)line, name, tname, why);
		imp->errors++;
		return imp->errors >= 100;
	}
	if (ret == ZC_EOK) {
		ret = records_import_add(imp->imp, owner, type, ttl, rdata,
		                         rdata_len, make_tag(imp, file, line));
	}
	if (ret == KNOT_EOUTOFZONE) {
		char name[KNOT_DNAME_TXT_MAXLEN + 1];
		knot_dname_to_str(name, owner, sizeof(name));
		fprintf(stderr, "%s:%llu: error: %s is outside the zone\n", file,
		        (unsigned long long)line, name);
		imp->errors++;
		return imp->errors >= 100;
	}
	if (ret == ZC_ETOOMANY) {
		fprintf(stderr, "%s:%llu: error: more records than the zone may "
		        "hold (zone-max-records)\n", file,
		        (unsigned long long)line);
		imp->errors++;
		return 1;
	}
	if (ret != ZC_EOK) {
		fprintf(stderr, "%s:%llu: error: %s\n", file,
		        (unsigned long long)line, zc_strerror(ret));
		return 1;
	}
	cli_progress_set(&imp->reading, ++imp->records);
	return 0;
}

/* Prints a check problem with the file and line it comes from. */
static void on_problem(const knot_dname_t *owner, uint16_t type, uint64_t tag,
                       const char *what, void *ctx)
{
	import_t *imp = ctx;
	if (imp->problems++ >= MAX_REPORTED) {
		return;
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	char tname[32];
	knot_dname_to_str(name, owner, sizeof(name));
	knot_rrtype_to_string(type, tname, sizeof(tname));
	unsigned file = (unsigned)(tag >> 48);
	unsigned long long line = tag & 0xffffffffffffULL;
	if (tag != 0 && file < imp->file_count) {
		fprintf(stderr, "%s:%llu: error: %s %s: %s\n", imp->files[file],
		        line, name, tname, what);
	} else {
		fprintf(stderr, "%s: error: %s %s: %s\n",
		        imp->path ? imp->path : "-", name, tname, what);
	}
}

/* On a terminal, names a step that shows no count ("checking 400,002
 * records..."), and clears it (what NULL) when it is over. */
static void phase(import_t *imp, const char *what)
{
	if (!imp->progress || imp->records < 10000) {
		return;
	}
	if (what != NULL) {
		fprintf(stderr, "%s %llu records...", what,
		        (unsigned long long)imp->records);
	} else {
		fprintf(stderr, "\r\033[K");
	}
	fflush(stderr);
}

/* Parses and checks into an open import; returns problems found or <0. */
static int load(import_t *imp, const char *text)
{
	zonefile_handler_t h = { .record = on_record, .error = on_parse_error,
	                         .ctx = imp };
	cli_progress_begin(&imp->reading, imp->progress, "reading", 0);
	int ret = (text != NULL) ?
	          zonefile_parse_text(text, strlen(text), imp->apex, 3600, &h) :
	          zonefile_parse(imp->path, imp->apex, 3600, &h);
	cli_progress_end(&imp->reading);
	if (ret != ZC_EOK || imp->errors > 0) {
		return (int)(imp->errors > 0 ? imp->errors : 1);
	}
	phase(imp, "checking");
	int problems = records_import_check(imp->imp, on_problem, imp);
	phase(imp, NULL);
	if (problems > MAX_REPORTED) {
		fprintf(stderr, "... and %d more problems\n",
		        problems - MAX_REPORTED);
	}
	return problems;
}

static void free_files(import_t *imp)
{
	for (unsigned i = 0; i < imp->file_count; i++) {
		free(imp->files[i]);
	}
	free(imp);
}

int cli_import_zone(records_store_t *rs, edge_store_t *es, const char *name,
                    const char *path, const char *text, bool quiet)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	if (knot_dname_from_str(apex, name, sizeof(apex)) == NULL) {
		fprintf(stderr, "zonecast: invalid zone name '%s'\n", name);
		return ZC_EUSAGE;
	}
	knot_dname_to_lower(apex);
	import_t *imp = calloc(1, sizeof(*imp));
	if (imp == NULL) {
		return KNOT_ENOMEM;
	}
	imp->apex = apex;
	imp->path = path;
	imp->progress = !quiet && cli_progress_tty();
	double start = now_s();
	int ret = records_import_begin(rs, apex, &imp->imp);
	if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast: cannot start the import: %s\n",
		        zc_strerror(ret));
		free(imp);
		return ret;
	}
	int problems = load(imp, text);
	if (problems != 0) {
		records_import_abort(imp->imp);
		fprintf(stderr, "zonecast: zone %s not imported, nothing "
		        "changed\n", name);
		free_files(imp);
		return problems < 0 ? problems : ZC_EZONEFILE;
	}
	uint64_t seq;
	records_zone_t zone;
	phase(imp, "storing");
	ret = records_import_commit(imp->imp, &seq, &zone);
	phase(imp, NULL);
	double loaded = now_s();
	builder_stats_t stats = { 0 };
	if (ret == ZC_EOK) {
		cli_progress_t building;
		cli_progress_begin(&building, imp->progress, "building",
		                   imp->records);
		ret = builder_full_build(rs, es, apex, &stats, imp->progress ?
		                         cli_progress_records : NULL, &building);
		cli_progress_set(&building, stats.records);
		cli_progress_end(&building);
	}
	if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast: import of %s failed: %s\n", name,
		        zc_strerror(ret));
	} else if (!quiet) {
		fprintf(stderr, "zone %s: %llu records, serial %u, stored in "
		        "%.2f s, built in %.2f s\n", zone.name,
		        (unsigned long long)imp->records, zone.serial,
		        loaded - start, now_s() - loaded);
	}
	free_files(imp);
	return ret;
}

int cli_check_zone(const char *name, const char *path)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	if (knot_dname_from_str(apex, name, sizeof(apex)) == NULL) {
		fprintf(stderr, "zonecast: invalid zone name '%s'\n", name);
		return ZC_EUSAGE;
	}
	knot_dname_to_lower(apex);
	import_t *imp = calloc(1, sizeof(*imp));
	if (imp == NULL) {
		return KNOT_ENOMEM;
	}
	imp->apex = apex;
	imp->path = path;
	int ret = records_import_begin(NULL, apex, &imp->imp);
	if (ret != ZC_EOK) {
		free(imp);
		return ret;
	}
	int problems = load(imp, NULL);
	uint64_t records = imp->records;
	records_import_abort(imp->imp);
	free_files(imp);
	if (problems != 0) {
		fprintf(stderr, "zone %s: %d problem(s) found in %s\n", name,
		        problems < 0 ? 1 : problems, path);
		return ZC_EZONEFILE;
	}
	printf("zone %s: %llu records, no problems found in %s\n", name,
	       (unsigned long long)records, path);
	return ZC_EOK;
}

int cli_find_zone(records_store_t *rs, const char *cmd, const char *name,
                  records_zone_t *zone)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	int ret = knot_dname_from_str(apex, name, sizeof(apex)) != NULL ?
	          ZC_EOK : ZC_EUSAGE;
	if (ret == ZC_EOK) {
		knot_dname_to_lower(apex);
		ret = records_zone_find(rs, apex, zone);
	}
	if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast %s: no zone %s\n", cmd, name);
	}
	return ret;
}

/* RFC 4892 identity: the configured one, else the NSID, else the host
 * name (as NSD and Knot); NULL when hidden. */
static const char *server_identity(const config_t *cfg)
{
	static char host[256];
	if (cfg->hide_identity) {
		return NULL;
	}
	if (cfg->identity[0] != '\0') {
		return cfg->identity;
	}
	if (cfg->nsid[0] != '\0') {
		return cfg->nsid;
	}
	if (gethostname(host, sizeof(host)) != 0) {
		return NULL;
	}
	host[sizeof(host) - 1] = '\0';
	return host;
}

void cli_server_config(const config_t *cfg, server_config_t *scfg)
{
	*scfg = (server_config_t){
		.workers = cfg->workers,
		.nsid = cfg->nsid[0] ? cfg->nsid : NULL,
		.identity = server_identity(cfg),
		.version = cfg->hide_version ? NULL : cfg->version[0] ?
		           cfg->version : "zonecast " ZONECAST_VERSION,
		.tcp_idle_timeout_ms = cfg->tcp_idle_timeout * 1000,
		.tcp_max_clients = cfg->tcp_max_clients,
		.tcp_max_clients_per_ip = cfg->tcp_max_clients_per_ip,
		.tcp_max_pending = cfg->tcp_max_pending,
		.cookies = cfg->cookies,
		.rrl = {
			.rate = cfg->rrl_rate, .slip = cfg->rrl_slip,
			.ipv4_prefix = cfg->rrl_ipv4_prefix,
			.ipv6_prefix = cfg->rrl_ipv6_prefix,
			.table_size = cfg->rrl_table_size,
			.exempt = cfg->rrl_exempt.count > 0 ? &cfg->rrl_exempt : NULL,
		},
		.signature_cache = cfg->signature_cache,
		.listen_count = cfg->listen_count,
	};
	for (size_t i = 0; i < cfg->listen_count; i++) {
		scfg->listen[i] = cfg->listen[i];
	}
	memcpy(scfg->cookie_secret, cfg->cookie_secret,
	       sizeof(scfg->cookie_secret));
}

/* Says a problem of the command line: in a->err, or on stderr. */
__attribute__((format(printf, 2, 3)))
static void args_error(const cli_args_t *a, const char *fmt, ...)
{
	char msg[1400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (a->err != NULL) {
		snprintf(a->err, a->err_size, "%s", msg);
	} else {
		fprintf(stderr, "zonecast %s: %s\n", a->cmd, msg);
	}
}

/* The config file (-c), before any flag. */
static int read_config_file(const cli_args_t *a, int argc, char **argv,
                            config_t *cfg)
{
	int c;
	optind = 0; /* GNU: a full restart (a reload parses again). */
	while ((c = getopt_long(argc, argv, a->shortopts, a->opts, NULL)) != -1) {
		char err[1400];
		if (c == 'c' && config_read(cfg, optarg, err, sizeof(err)) !=
		    ZC_EOK) {
			if (a->err != NULL) {
				snprintf(a->err, a->err_size, "%s", err);
			} else {
				fprintf(stderr, "%s\n", err); /* FILE:LINE: ... */
			}
			return 1;
		}
		if (c == 'h' && a->usage != NULL) {
			a->usage(stdout);
		}
		if (c == 'h') {
			return -1;
		}
		if (c == '?') {
			if (a->usage != NULL) {
				a->usage(stderr);
			}
			return 2;
		}
	}
	if (optind < argc) {
		args_error(a, "unexpected argument '%s'", argv[optind]);
		return 2;
	}
	return 0;
}

int cli_parse_server_args(const cli_args_t *a, int argc, char **argv,
                          config_t *cfg)
{
	int ret = read_config_file(a, argc, argv, cfg);
	if (ret != 0) {
		return ret;
	}
	bool listen_flag = false, log_flag = false;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, a->shortopts, a->opts, NULL)) != -1) {
		char err[256] = "";
		if (c == 'l') {
			if (!listen_flag) {
				cfg->listen_count = 0; /* Flags replace the file's. */
				listen_flag = true;
			}
			config_set(cfg, "listen", optarg, err, sizeof(err));
		} else if (c == 'o') {
			char key[64];
			const char *eq = strchr(optarg, '=');
			if (eq == NULL || (size_t)(eq - optarg) >= sizeof(key)) {
				snprintf(err, sizeof(err), "-o wants KEY=VALUE, not "
				         "'%s'", optarg);
			} else {
				memcpy(key, optarg, eq - optarg);
				key[eq - optarg] = '\0';
				if (strcmp(key, "log-target") == 0 && !log_flag) {
					cfg->log_target_count = 0;
					log_flag = true;
				}
				config_set(cfg, key, eq + 1, err, sizeof(err));
			}
		} else if (c > 0 && c < 128 && a->flag_keys[c] != NULL) {
			config_set(cfg, a->flag_keys[c], optarg, err, sizeof(err));
		} else if (a->flag != NULL) {
			a->flag(cfg, c);
		}
		if (err[0] != '\0') {
			args_error(a, "%s", err);
			return 2;
		}
	}
	return 0;
}
