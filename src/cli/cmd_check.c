/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Checks that write nothing, as `knotc conf-check` and `kzonecheck` do:
 *
 *   zonecast check-config [-c FILE] [serve's flags]  the configuration
 *     serve would run with: its syntax, then config_check()'s problems;
 *   zonecast zone check [--origin ZONE] FILE  a master file, with the
 *     very checks and messages of `zonecast zone import`.
 *
 * Both exit 0 when nothing is wrong (warnings are printed), 1 when
 * something is, 2 on a usage error.
 */
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/config_check.h"
#include "cli/config_keys.h"
#include "cli/serve.h"
#include "common/error.h"

static void config_usage(FILE *out)
{
	fputs("Usage: zonecast check-config [-c FILE] [SERVE OPTIONS]\n"
	      "       zonecast check-config --keys\n"
	      "\n"
	      "Checks the configuration `zonecast serve` would run with (the\n"
	      "same file and flags): syntax, then what cannot work here (a\n"
	      "user that does not exist, a log file that cannot be written,\n"
	      "an address listed twice...) and likely mistakes (warnings).\n"
	      "Nothing is started or written. Exit 0: fit to run; 1: not.\n"
	      "\n"
	      "  --keys   lists every key, whether a reload applies it (live)\n"
	      "           or it needs a restart, and its default (-: none;\n"
	      "           DATA_DIR, HOST: derived from data-dir, the host name)\n",
	      out);
}

typedef struct {
	unsigned errors, warnings;
} tally_t;

static void print_problem(bool error, const char *msg, void *arg)
{
	tally_t *t = arg;
	if (error) {
		t->errors++;
	} else {
		t->warnings++;
	}
	fprintf(stderr, "%s: %s\n", error ? "error" : "warning", msg);
}

static int list_keys(void)
{
	for (size_t i = 0; i < config_key_count(); i++) {
		const char *key = config_key_name(i);
		char def[256];
		config_key_default_shown(i, def, sizeof(def));
		printf("%-26s %-8s %s\n", key, config_key_is_live(key) ? "live" :
		       "restart", def[0] != '\0' ? def : "-");
	}
	return 0;
}

/* The -c FILE among serve's arguments, for the summary ("" if none). */
static const char *config_path(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if ((strcmp(argv[i], "-c") == 0 ||
		     strcmp(argv[i], "--config") == 0) && i + 1 < argc) {
			return argv[i + 1];
		}
		if (strncmp(argv[i], "--config=", 9) == 0) {
			return argv[i] + 9;
		}
	}
	return "";
}

int cmd_check_config(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--keys") == 0) {
		return list_keys();
	}
	config_t *cfg = malloc(sizeof(*cfg));
	if (cfg == NULL) {
		return 1;
	}
	char err[1400];
	int ret = serve_parse_args(argc, argv, cfg, err, sizeof(err));
	if (ret != 0) {
		if (err[0] != '\0') {
			fprintf(stderr, "error: %s\n", err);
		}
		if (ret < 0 || (ret == 2 && err[0] == '\0')) {
			config_usage(ret < 0 ? stdout : stderr);
		}
		free(cfg);
		return ret < 0 ? 0 : ret;
	}
	tally_t t = { 0 };
	config_check(cfg, print_problem, &t);
	free(cfg);
	const char *path = config_path(argc, argv);
	const char *what = path[0] ? path : "built-in defaults and flags";
	if (t.errors > 0) {
		fprintf(stderr, "%s: %u error(s), %u warning(s): not fit to run\n",
		        what, t.errors, t.warnings);
		return 1;
	}
	printf("%s: OK%s", what, t.warnings ? " (" : "\n");
	if (t.warnings) {
		printf("%u warning(s))\n", t.warnings);
	}
	return 0;
}

static void zone_usage(FILE *out)
{
	fputs("Usage: zonecast zone check [--origin ZONE] FILE\n"
	      "       zonecast zone check ZONE FILE\n"
	      "\n"
	      "Parses and checks an RFC 1035 master file as `zonecast zone\n"
	      "import` would (syntax, rdata, names outside the zone, CNAME and\n"
	      "other data, SOA and NS at the apex), writing nothing. The zone\n"
	      "is --origin, else the file's name without .zone/.db/.txt.\n"
	      "Exit 0: importable; 1: problems (listed with file and line).\n",
	      out);
}

/* "example.com.zone" -> "example.com" (also "db.example.com"). */
static void origin_from_path(const char *path, char *out, size_t size)
{
	char copy[4096];
	snprintf(copy, sizeof(copy), "%s", path);
	const char *base = basename(copy);
	if (strncmp(base, "db.", 3) == 0) {
		base += 3;
	}
	snprintf(out, size, "%s", base);
	static const char *const suffixes[] = { ".zone", ".db", ".txt" };
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t n = strlen(out), k = strlen(suffixes[i]);
		if (n > k && strcmp(out + n - k, suffixes[i]) == 0) {
			out[n - k] = '\0';
			break;
		}
	}
}

int cmd_zone_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "origin", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *origin = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		if (c == 'o') {
			origin = optarg;
		} else if (c == 'h') {
			zone_usage(stdout);
			return 0;
		} else {
			zone_usage(stderr);
			return 2;
		}
	}
	int left = argc - optind;
	if (left == 2 && origin == NULL) {
		origin = argv[optind++];
	} else if (left != 1) {
		zone_usage(stderr);
		return 2;
	}
	const char *path = argv[optind];
	char derived[512];
	if (origin == NULL) {
		origin_from_path(path, derived, sizeof(derived));
		origin = derived;
		fprintf(stderr, "zone check: zone %s (from the file name; "
		        "--origin names another)\n", origin);
	}
	int ret = cli_check_zone(origin, path);
	return ret == ZC_EOK ? 0 : ret == ZC_EUSAGE ? 2 : 1;
}
