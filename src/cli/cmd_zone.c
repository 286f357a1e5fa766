/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast zone import|export|list|delete|retry: zone administration on a
 * data directory, whether or not a server runs on it. import and delete
 * are writes (cli/admin.h): the running server carries them out, or, with
 * none, this process under the data directory's lock; export and list
 * read the stores; retry asks the running server's builder through the
 * edge store.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <libknot/errcode.h>

#include "builder/builder.h"
#include "cli/admin.h"
#include "cli/commands.h"
#include "cli/json_args.h"
#include "cli/zone_load.h"
#include "common/error.h"
#include "dns/name_text.h"
#include "zonefile/zonefile.h"

static void usage(FILE *out)
{
	fputs("Usage:\n"
	      "  zonecast zone import [--data-dir DIR] [--config FILE] ZONE FILE\n"
	      "  zonecast zone export [--data-dir DIR] [--config FILE] ZONE\n"
	      "  zonecast zone list   [--data-dir DIR] [--config FILE]\n"
	      "  zonecast zone delete [--data-dir DIR] [--config FILE] [--force] "
	      "ZONE\n"
	      "  zonecast zone retry  [--data-dir DIR] [--config FILE] [--wait S] "
	      "ZONE\n"
	      "  zonecast zone status [--data-dir DIR] [--config FILE] [--json] "
	      "[ZONE]\n"
	      "  zonecast zone check  [--origin ZONE] FILE\n"
	      "\n"
	      "import  replaces ZONE's records with an RFC 1035 master file\n"
	      "        and builds it into the edge store\n"
	      "export  prints ZONE as a master file\n"
	      "list    lists zones with serial and record count, and why a\n"
	      "        quarantined zone is (its builds fail)\n"
	      "delete  deletes ZONE and everything in it (on a terminal after\n"
	      "        typing the zone's name, elsewhere with --force)\n"
	      "retry   asks the running zonecast to build a quarantined ZONE\n"
	      "        again (once its cause is fixed) and waits for the verdict\n"
	      "status  asks the running zonecast, per zone: stored and served\n"
	      "        serial, signing, build state, secondaries (--help there)\n"
	      "check   checks a master file as import would, writing nothing\n"
	      "\n"
	      "Options:\n"
	      "  -d, --data-dir DIR  data directory (default: from the config,\n"
	      "                      else ./zonecast-data)\n"
	      "  -c, --config FILE   read data-dir from this config file\n"
	      "  -q, --quiet         no progress or summary output\n"
	      "  -f, --force         delete: no question asked\n"
	      "  -w, --wait S        retry: seconds to wait for the verdict "
	      "(10)\n"
	      "  -h, --help          this help\n", out);
}

static int parse_zone_name(const char *text, uint8_t *apex)
{
	if (dns_name_from_text(apex, text, KNOT_DNAME_MAXLEN) == NULL) {
		fprintf(stderr, "zonecast: invalid zone name '%s'\n", text);
		return ZC_EUSAGE;
	}
	knot_dname_to_lower(apex);
	return ZC_EOK;
}

/* "2026-12-03T06:20:01Z" */
static void format_time(int64_t ms, char *out, size_t size)
{
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&sec, &tm);
	strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int print_zone(const records_zone_t *zone, void *ctx)
{
	edge_store_t *es = ctx;
	edge_quarantine_t q;
	printf("%-40s serial %-10u records %lld", zone->name, zone->serial,
	       (long long)zone->record_count);
	if (builder_quarantine_get(es, (uint64_t)zone->id, &q) == ZC_EOK) {
		char since[32];
		format_time(q.since_ms, since, sizeof(since));
		printf("  QUARANTINED since %s (serving serial %u, %u failed "
		       "attempt(s)): %s", since, q.serial, q.attempts, q.reason);
	}
	printf("\n");
	return 0;
}

/* The serial the edge store serves for apex (0: none). */
static uint32_t served_serial(edge_store_t *es, const uint8_t *apex)
{
	edge_txn_t txn = { 0 };
	edge_zone_t meta = { .serial = 0 };
	if (edge_txn_begin_read(es, &txn) == ZC_EOK) {
		if (edge_zone_get(&txn, apex, &meta) != ZC_EOK) {
			meta.serial = 0;
		}
		edge_txn_abort(&txn);
	}
	return meta.serial;
}

/* Asks the builder of the running zonecast to try a quarantined zone
 * again and waits up to wait_s seconds for its verdict. */
static int do_retry(records_store_t *rs, edge_store_t *es, const char *name,
                    unsigned wait_s)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	records_zone_t zone;
	int ret = parse_zone_name(name, apex);
	if (ret == ZC_EOK && (ret = records_zone_find(rs, apex, &zone)) ==
	    ZC_ENOZONE) {
		fprintf(stderr, "zonecast: no zone %s\n", name);
	}
	uint32_t attempts = 0;
	if (ret == ZC_EOK) {
		ret = builder_quarantine_request_retry(es, (uint64_t)zone.id,
		                                       &attempts);
	}
	if (ret == KNOT_ENOENT) {
		printf("zone %s is not quarantined (serving serial %u)\n",
		       zone.name, served_serial(es, zone.apex));
		return ZC_EOK;
	}
	edge_quarantine_t q;
	for (unsigned waited = 0; ret == ZC_EOK; waited += 50) {
		ret = builder_quarantine_get(es, (uint64_t)zone.id, &q);
		if (ret == KNOT_ENOENT) {
			printf("zone %s released: serving serial %u\n", zone.name,
			       served_serial(es, zone.apex));
			return ZC_EOK;
		}
		if (ret == ZC_EOK && q.attempts != attempts) {
			fprintf(stderr, "zonecast: zone %s is still quarantined: "
			        "%s\n", zone.name, q.reason);
			return ZC_EQUARANTINED;
		}
		if (ret == ZC_EOK && waited >= wait_s * 1000) {
			fprintf(stderr, "zonecast: no running zonecast retried %s "
			        "within %u s (`zonecast serve` tries quarantined "
			        "zones again when it starts)\n", zone.name, wait_s);
			return -ETIMEDOUT;
		}
		usleep(50000);
	}
	if (ret != ZC_EUSAGE && ret != ZC_ENOZONE) {
		fprintf(stderr, "zonecast: retry failed: %s\n", zc_strerror(ret));
	}
	return ret;
}

static int do_export(records_store_t *rs, const char *name)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	int ret = parse_zone_name(name, apex);
	if (ret == ZC_EOK) {
		ret = zonefile_export(rs, apex, stdout);
	}
	if (ret == ZC_ENOZONE) {
		fprintf(stderr, "zonecast: no zone %s\n", name);
	} else if (ret != ZC_EOK && ret != ZC_EUSAGE) {
		fprintf(stderr, "zonecast: export failed: %s\n", zc_strerror(ret));
	}
	return ret;
}

/* The zone's name as typed back: case and a final dot do not matter. */
static bool same_name(const char *typed, const char *zone)
{
	size_t n = strlen(typed), z = strlen(zone);
	while (n > 0 && (typed[n - 1] == '\n' || typed[n - 1] == '\r' ||
	                 typed[n - 1] == ' ')) {
		n--;
	}
	if (n > 0 && typed[n - 1] == '.') {
		n--;
	}
	if (z > 0 && zone[z - 1] == '.') {
		z--;
	}
	return n > 0 && n == z && strncasecmp(typed, zone, n) == 0;
}

/*
 * Deleting a zone takes it off the DNS at once: on a terminal the
 * operator types its name back; elsewhere (a script, a pipe) --force
 * says the caller means it.
 */
static bool confirm_delete(const records_zone_t *zone, bool force)
{
	if (force) {
		return true;
	}
	if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO)) {
		fprintf(stderr, "zonecast zone delete: %s holds %lld records and "
		        "is served now; not on a terminal, so nothing asked and "
		        "nothing deleted: add --force to delete it\n", zone->name,
		        (long long)zone->record_count);
		return false;
	}
	fprintf(stderr, "Delete zone %s, its %lld records and its keys? It "
	        "stops being served at once.\nType the zone's name to "
	        "confirm: ", zone->name, (long long)zone->record_count);
	char line[KNOT_DNAME_TXT_MAXLEN + 4];
	if (fgets(line, sizeof(line), stdin) != NULL &&
	    same_name(line, zone->name)) {
		return true;
	}
	fprintf(stderr, "zonecast zone delete: not confirmed, %s not "
	        "deleted\n", zone->name);
	return false;
}

/* Asks first (confirm_delete()), then has the zone deleted. */
static int do_delete(const char *dir, const char *name, bool force,
                     uint64_t max_records)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	records_zone_t zone;
	records_store_t *rs;
	if (cli_require_data_dir(dir) != ZC_EOK) {
		return 1;
	}
	int ret = records_open(&rs, dir);
	if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast: cannot open %s/records.db: %s\n", dir,
		        zc_strerror(ret));
		return 1;
	}
	ret = parse_zone_name(name, apex);
	if (ret == ZC_EOK) {
		ret = records_zone_find(rs, apex, &zone);
	}
	if (ret == ZC_EOK) {
		/* records_zone_find() leaves the count at 0: what the
		 * question names is the kept count. */
		ret = records_zone_kept_count(rs, zone.id, &zone.record_count);
	}
	records_close(rs);
	if (ret == ZC_ENOZONE) {
		fprintf(stderr, "zonecast: no zone %s\n", name);
	} else if (ret != ZC_EOK && ret != ZC_EUSAGE) {
		fprintf(stderr, "zonecast: delete failed: %s\n", zc_strerror(ret));
	}
	if (ret != ZC_EOK || !confirm_delete(&zone, force)) {
		return 1;
	}
	json_t *req = json_pack("{s:s}", "command", "zone-delete");
	bool ok = req != NULL && cli_json_set(req, "zone", cli_json_name(name));
	int status = ok ? admin_request(dir, false, max_records, req, -1) : 2;
	json_decref(req);
	return status;
}

static int do_import(const char *dir, const char *name, const char *path,
                     bool quiet, uint64_t max_records)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	if (parse_zone_name(name, apex) != ZC_EOK) {
		return 1;
	}
	zone_source_t src;
	if (cli_open_zone_file(path, &src) != ZC_EOK) {
		fprintf(stderr, "zonecast: zone %s not imported, nothing "
		        "changed\n", name);
		return 1;
	}
	json_t *req = json_pack("{s:s, s:b}", "command", "zone-import",
	                        "quiet", quiet);
	bool ok = req != NULL &&
	          cli_json_set(req, "zone", cli_json_name(name)) &&
	          cli_json_set(req, "path", cli_json_text("zone import", "FILE",
	                                                  path)) &&
	          (src.include_dir == NULL ||
	           cli_json_set(req, "include_dir",
	                        cli_json_text("zone import", "the file's "
	                                      "directory", src.include_dir)));
	int status = ok ? admin_request(dir, true, max_records, req, src.fd) : 2;
	json_decref(req);
	close(src.fd);
	return status;
}

static int run(const char *sub, int nargs, char **args, const char *dir,
               bool quiet, bool force, uint64_t max_records, unsigned wait_s)
{
	struct {
		const char *name;
		int nargs;
	} subs[] = { { "import", 2 }, { "export", 1 }, { "list", 0 },
	             { "delete", 1 }, { "retry", 1 } };
	int want = -1;
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		if (strcmp(sub, subs[i].name) == 0) {
			want = subs[i].nargs;
		}
	}
	if (want < 0 || nargs != want) {
		fprintf(stderr, want < 0 ? "zonecast zone: unknown subcommand '%s'\n"
		        : "zonecast zone %s: wrong number of arguments\n", sub);
		usage(stderr);
		return 2;
	}
	if (strcmp(sub, "import") == 0) {
		return do_import(dir, args[0], args[1], quiet, max_records);
	}
	if (strcmp(sub, "delete") == 0) {
		return do_delete(dir, args[0], force, max_records);
	}
	records_store_t *rs = NULL;
	edge_store_t *es = NULL;
	int ret = cli_open_stores(dir, false, &rs, &es);
	if (ret != ZC_EOK) {
		return 1;
	}
	if (strcmp(sub, "export") == 0) {
		ret = do_export(rs, args[0]);
	} else if (strcmp(sub, "list") == 0) {
		ret = records_zone_list(rs, true, print_zone, es);
	} else {
		ret = do_retry(rs, es, args[0], wait_s);
	}
	edge_close(es);
	records_close(rs);
	return ret == ZC_EOK ? 0 : 1;
}

/* The subcommand's index: the first argument that is no option or
 * option value (options may come first). */
static int find_sub(int argc, char **argv)
{
	static const char *const with_value[] = { "-d", "--data-dir", "-c",
	                                          "--config", "-w", "--wait",
	                                          "-s", "--socket", "-o",
	                                          "--origin" };
	int i = 1;
	while (i < argc && argv[i][0] == '-') {
		bool value = false;
		for (size_t k = 0; k < sizeof(with_value) / sizeof(with_value[0]);
		     k++) {
			value |= strcmp(argv[i], with_value[k]) == 0;
		}
		i += value ? 2 : 1;
	}
	return i;
}

/* zone status and zone check have options of their own: they get the
 * arguments with the subcommand first. */
static int other_sub(int argc, char **argv, int (*fn)(int, char **),
                     int sub)
{
	char **args = malloc(sizeof(*args) * ((size_t)argc + 1));
	if (args == NULL) {
		return 1;
	}
	int n = 0;
	args[n++] = argv[sub];
	for (int i = 1; i < argc; i++) {
		if (i != sub) {
			args[n++] = argv[i];
		}
	}
	args[n] = NULL;
	int ret = fn(n, args);
	free(args);
	return ret;
}

static int zone_status(int argc, char **argv)
{
	return cmd_control("zone status", argc, argv);
}

int cmd_zone(int argc, char **argv)
{
	int sub_at = find_sub(argc, argv);
	if (sub_at < argc && strcmp(argv[sub_at], "status") == 0) {
		return other_sub(argc, argv, zone_status, sub_at);
	}
	if (sub_at < argc && strcmp(argv[sub_at], "check") == 0) {
		return other_sub(argc, argv, cmd_zone_check, sub_at);
	}
	static const struct option opts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "force", no_argument, NULL, 'f' },
		{ "wait", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	config_t cfg;
	config_defaults(&cfg);
	const char *dir = NULL;
	bool quiet = false, force = false;
	unsigned wait_s = 10;
	char *end;
	int c;
	/* GNU getopt permutes: options may come before or after the
	 * subcommand and its arguments. */
	while ((c = getopt_long(argc, argv, "d:c:qfw:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'c':
			if (config_load(&cfg, optarg) != ZC_EOK) {
				return 1;
			}
			break;
		case 'q':
			quiet = true;
			break;
		case 'f':
			force = true;
			break;
		case 'w':
			wait_s = (unsigned)strtoul(optarg, &end, 10);
			if (*end != '\0' || optarg[0] == '\0' || wait_s > 3600) {
				fprintf(stderr, "zonecast zone: --wait takes 0 to "
				        "3600 seconds\n");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	const char *sub = argv[optind];
	char **args = argv + optind + 1;
	int nargs = argc - optind - 1;
	return run(sub, nargs, args, dir ? dir : cfg.data_dir, quiet, force,
	           cfg.zone_max_records, wait_s);
}
