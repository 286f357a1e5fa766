/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast serve's arguments: the config file first, then every flag over
 * it. At start and at each reload (serve.h), which reads them again.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/serve.h"
#include "common/error.h"

#define DEFAULT_LISTEN "127.0.0.1:5300"

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "data-dir", required_argument, NULL, 'd' },
	{ "listen", required_argument, NULL, 'l' },
	{ "api-listen", required_argument, NULL, 'a' },
	{ "workers", required_argument, NULL, 'w' },
	{ "log-level", required_argument, NULL, 'L' },
	{ "nsid", required_argument, NULL, 'N' },
	{ "no-demo", no_argument, NULL, 'D' },
	{ "nats", required_argument, NULL, 'n' },
	{ "option", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char *const flag_keys[128] = {
	['d'] = "data-dir", ['a'] = "api-listen", ['w'] = "workers",
	['L'] = "log-level", ['N'] = "nsid", ['n'] = "nats",
};

/* The config file (-c), before any flag. */
static int read_file(int argc, char **argv, config_t *cfg, char *err,
                     size_t err_size)
{
	int c;
	optind = 0; /* GNU: start over (a reload parses again). */
	while ((c = getopt_long(argc, argv, "c:d:l:a:w:L:o:h", opts, NULL)) != -1) {
		if (c == 'c' && config_read(cfg, optarg, err, err_size) != ZC_EOK) {
			return 1;
		}
		if (c == 'h') {
			return -1;
		}
		if (c == '?') {
			return 2;
		}
	}
	if (optind < argc) {
		snprintf(err, err_size, "unexpected argument '%s'", argv[optind]);
		return 2;
	}
	return 0;
}

/* "-o KEY=VALUE" */
static void set_option(config_t *cfg, const char *arg, bool *log_flag,
                       char *err, size_t err_size)
{
	char key[64];
	const char *eq = strchr(arg, '=');
	if (eq == NULL || (size_t)(eq - arg) >= sizeof(key)) {
		snprintf(err, err_size, "-o wants KEY=VALUE, not '%s'", arg);
		return;
	}
	memcpy(key, arg, eq - arg);
	key[eq - arg] = '\0';
	if (strcmp(key, "log-target") == 0 && !*log_flag) {
		cfg->log_target_count = 0; /* Flags replace the file's. */
		*log_flag = true;
	}
	config_set(cfg, key, eq + 1, err, err_size);
}

int serve_parse_args(int argc, char **argv, config_t *cfg, char *err,
                     size_t err_size)
{
	err[0] = '\0';
	config_defaults(cfg);
	int ret = read_file(argc, argv, cfg, err, err_size);
	if (ret != 0) {
		return ret;
	}
	bool listen_flag = false, log_flag = false;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "c:d:l:a:w:L:o:h", opts, NULL)) != -1) {
		if (c == 'l') {
			if (!listen_flag) {
				cfg->listen_count = 0; /* Flags replace the file's. */
				listen_flag = true;
			}
			config_set(cfg, "listen", optarg, err, err_size);
		} else if (c == 'D') {
			cfg->demo = false;
		} else if (c == 'o') {
			set_option(cfg, optarg, &log_flag, err, err_size);
		} else if (c < 128 && flag_keys[c] != NULL) {
			config_set(cfg, flag_keys[c], optarg, err, err_size);
		}
		if (err[0] != '\0') {
			return 2;
		}
	}
	if (cfg->listen_count == 0) {
		strcpy(cfg->listen[0], DEFAULT_LISTEN);
		cfg->listen_count = 1;
	}
	return 0;
}
