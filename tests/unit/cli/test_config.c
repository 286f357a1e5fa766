/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The config key table (cli/config_keys.c): every default parses to what
 * config_defaults() fills, a table of values each key accepts or refuses
 * (with the message an operator reads), repeatable keys and their limits,
 * a file's list replacing the default, and config_diff() naming exactly
 * the key that changed.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/config.h"
#include "cli/config_keys.h"
#include "common/error.h"
#include "test.h"

/* Each key's default, written back through config_set(), leaves a
 * default config unchanged: the default column and the parser agree. */
static void test_defaults_parse(void)
{
	config_t def, cfg;
	config_defaults(&def);
	for (size_t i = 0; i < config_key_count(); i++) {
		char value[256], err[256] = "";
		config_key_default(i, value, sizeof(value));
		if (value[0] == '\0') {
			continue;
		}
		cfg = def;
		config_key_clear(&cfg, i);
		CHECK_EQ(config_set(&cfg, config_key_name(i), value, err,
		                    sizeof(err)), ZC_EOK);
		if (config_diff(&def, &cfg, NULL, NULL) != 0) {
			fprintf(stderr, "default of %s does not round-trip\n",
			        config_key_name(i));
			CHECK(false);
		}
	}
}

typedef struct {
	const char *key, *value;
	int ret;               /* ZC_EOK or ZC_EINVAL_CONFIG */
	const char *message;   /* Expected error text (NULL: any / none). */
} set_case_t;

static const set_case_t set_cases[] = {
	{ "rrl-rate", "0", ZC_EOK, NULL },
	{ "rrl-rate", "1000000", ZC_EOK, NULL },
	{ "rrl-rate", "1000001", ZC_EINVAL_CONFIG,
	  "invalid value '1000001' for 'rrl-rate'" },
	{ "rrl-rate", "-1", ZC_EINVAL_CONFIG, NULL },
	{ "rrl-rate", "", ZC_EINVAL_CONFIG, NULL },
	{ "rrl-rate", "12x", ZC_EINVAL_CONFIG, NULL },
	{ "tcp-max-clients", "0", ZC_EINVAL_CONFIG, NULL },
	{ "tcp-max-clients", "1", ZC_EOK, NULL },
	{ "default-ttl", "0", ZC_EINVAL_CONFIG, NULL },
	{ "default-ttl", "2147483647", ZC_EOK, NULL },
	{ "default-ttl", "2147483648", ZC_EINVAL_CONFIG, NULL },
	{ "journal-retention", "4294967295", ZC_EOK, NULL },
	{ "journal-retention", "4294967296", ZC_EINVAL_CONFIG, NULL },
	{ "tsig-replay-cache", "1023", ZC_EINVAL_CONFIG, NULL },
	{ "fleet-edge-timeout", "99", ZC_EINVAL_CONFIG, NULL },
	{ "update-max-size", "11", ZC_EINVAL_CONFIG, NULL },
	{ "cookies", "yes", ZC_EOK, NULL },
	{ "cookies", "false", ZC_EOK, NULL },
	{ "cookies", "maybe", ZC_EINVAL_CONFIG, NULL },
	{ "cookie-secret", "00112233445566778899aabbccddeeff", ZC_EOK, NULL },
	{ "cookie-secret", "00112233445566778899aabbccddeefg", ZC_EINVAL_CONFIG,
	  "invalid value for 'cookie-secret' (32 hexadecimal digits)" },
	{ "nats-password", "", ZC_EINVAL_CONFIG,
	  "invalid value for 'nats-password'" },
	{ "log-level", "debug", ZC_EOK, NULL },
	{ "log-level", "loud", ZC_EINVAL_CONFIG, NULL },
	{ "log-format", "json", ZC_EOK, NULL },
	{ "log-format", "xml", ZC_EINVAL_CONFIG, NULL },
	{ "log-target", "relative.log", ZC_EINVAL_CONFIG,
	  "invalid value 'relative.log' for 'log-target' (stderr, syslog, "
	  "journald or an absolute file path)" },
	{ "serial-policy", "unixtime", ZC_EOK, NULL },
	{ "serial-policy", "date", ZC_EINVAL_CONFIG, NULL },
	{ "api-listen", "none", ZC_EOK, NULL },
	{ "api-listen", "[::1]:8053", ZC_EOK, NULL },
	{ "api-listen", "localhost", ZC_EINVAL_CONFIG, NULL },
	{ "listen", "127.0.0.1:5300", ZC_EOK, NULL },
	{ "listen", "127.0.0.1", ZC_EINVAL_CONFIG, NULL },
	{ "rrl-exempt", "10.0.0.0/8", ZC_EOK, NULL },
	{ "rrl-exempt", "10.0.0.0/33", ZC_EINVAL_CONFIG, NULL },
	{ "allow-transfer", "key xfr-key", ZC_EOK, NULL },
	{ "notify", "192.0.2.1:5300 key xfr", ZC_EOK, NULL },
	{ "notify", "not an address", ZC_EINVAL_CONFIG, NULL },
	{ "fleet-prefix", "zc_1", ZC_EOK, NULL },
	{ "fleet-prefix", "zc-1", ZC_EINVAL_CONFIG, NULL },
	{ "fleet-name", "edge-1", ZC_EOK, NULL },
	{ "fleet-name", "edge.1", ZC_EINVAL_CONFIG, NULL },
	{ "node-name", "ns1 (rack 4)", ZC_EOK, NULL },
	{ "node-name", "ns1\tx", ZC_EINVAL_CONFIG, NULL },
	{ "node-name", "", ZC_EINVAL_CONFIG, NULL },
	{ "lissen", "1", ZC_EINVAL_CONFIG, "unknown setting 'lissen'" },
};

static void test_set_table(void)
{
	for (size_t i = 0; i < sizeof(set_cases) / sizeof(set_cases[0]); i++) {
		const set_case_t *c = &set_cases[i];
		config_t cfg;
		char err[256] = "";
		config_defaults(&cfg);
		int ret = config_set(&cfg, c->key, c->value, err, sizeof(err));
		if (ret != c->ret || (c->message != NULL &&
		                      strcmp(err, c->message) != 0)) {
			fprintf(stderr, "%s: %s -> %d '%s'\n", c->key, c->value, ret,
			        err);
			CHECK(false);
		} else {
			CHECK(true);
		}
		if (ret == ZC_EOK) {
			/* An accepted value is seen by a reload as that key. */
			config_t def;
			config_defaults(&def);
			size_t changed = config_diff(&def, &cfg, NULL, NULL);
			CHECK(changed <= 1);
		}
	}
}

static void count_changed(const char *key, bool live, void *ctx)
{
	(void)live;
	snprintf(ctx, 64, "%s", key);
}

static void test_diff_names_the_key(void)
{
	config_t a, b;
	char err[256], which[64] = "";
	config_defaults(&a);
	b = a;
	CHECK_EQ(config_set(&b, "tsig-max-fudge", "30", err, sizeof(err)), ZC_EOK);
	CHECK_EQ(config_diff(&a, &b, count_changed, which), 1);
	CHECK(strcmp(which, "tsig-max-fudge") == 0);
	CHECK_EQ(config_key_is_live("tsig-max-fudge"), 1);
	CHECK_EQ(config_key_is_live("workers"), 0);
	CHECK_EQ(config_key_is_live("no-such-key"), -1);
}

static void test_lists(void)
{
	config_t cfg;
	char err[256] = "", value[64];
	config_defaults(&cfg);
	for (int i = 0; i < 8; i++) {
		snprintf(value, sizeof(value), "ns%d.example.", i);
		CHECK_EQ(config_set(&cfg, "zone-ns", value, err, sizeof(err)),
		         ZC_EOK);
	}
	CHECK_EQ(cfg.zone_ns_count, 8);
	CHECK_EQ(config_set(&cfg, "zone-ns", "ns9.example.", err, sizeof(err)),
	         ZC_EINVAL_CONFIG);
	CHECK(strcmp(err, "more than 8 zone-ns names") == 0);
	CHECK_EQ(cfg.zone_ns_count, 8);
	/* A refused value leaves the list as it was. */
	config_defaults(&cfg);
	CHECK_EQ(config_set(&cfg, "listen", "bad", err, sizeof(err)),
	         ZC_EINVAL_CONFIG);
	CHECK_EQ(cfg.listen_count, 0);
}

/* A file's list replaces what was there, then adds up. */
static void test_file_replaces_lists(void)
{
	char path[] = "/tmp/zc-config-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	const char *text = "server:\n"
	                   "    log-target: stderr\n"
	                   "    log-target: /tmp/zc.log\n"
	                   "    rrl-rate: 5  # a comment\n";
	CHECK_EQ(write(fd, text, strlen(text)), (long long)strlen(text));
	close(fd);
	config_t cfg;
	char err[256] = "";
	config_defaults(&cfg);
	CHECK_EQ(config_set(&cfg, "log-target", "syslog", err, sizeof(err)),
	         ZC_EOK);
	CHECK_EQ(config_read(&cfg, path, err, sizeof(err)), ZC_EOK);
	CHECK_EQ(cfg.log_target_count, 2);
	CHECK(strcmp(cfg.log_target[0], "stderr") == 0);
	CHECK(strcmp(cfg.log_target[1], "/tmp/zc.log") == 0);
	CHECK_EQ(cfg.rrl_rate, 5);
	unlink(path);
}

/* Reads text (len bytes: it may hold NULs) as a config file; the error
 * text in err, or "" when read. */
static int read_text(config_t *cfg, const char *text, size_t len, char *err,
                     size_t err_size)
{
	char path[] = "/tmp/zc-config-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, text, len), (long long)len);
	close(fd);
	config_defaults(cfg);
	err[0] = '\0';
	int ret = config_read(cfg, path, err, err_size);
	unlink(path);
	return ret;
}

/* Found by an outside tester: the address lists (allow-update,
 * allow-transfer, rrl-exempt), documented as repeatable, were refused
 * when a file gave them twice ("given twice ... it takes one value"),
 * and a file's entries were not emptied first as the other lists' are. */
static void test_acls_repeat_in_a_file(void)
{
	const char *text = "server:\n"
	                   "  allow-update: 127.0.0.1\n"
	                   "  allow-update: 10.0.0.0/8\n"
	                   "  allow-transfer: 192.0.2.1\n"
	                   "  allow-transfer: 192.0.2.2\n"
	                   "  rrl-exempt: 198.51.100.0/24\n"
	                   "  rrl-exempt: 2001:db8::/32\n";
	config_t cfg;
	char err[256];
	CHECK_EQ(read_text(&cfg, text, strlen(text), err, sizeof(err)), ZC_EOK);
	CHECK(err[0] == '\0');
	CHECK_EQ(cfg.allow_update.count, 2);
	CHECK_EQ(cfg.allow_transfer.count, 2);
	CHECK_EQ(cfg.rrl_exempt.count, 2);
	/* A key that takes one value still may not be given twice. */
	const char *twice = "server:\n  rrl-rate: 5\n  rrl-rate: 6\n";
	CHECK(read_text(&cfg, twice, strlen(twice), err, sizeof(err)) != ZC_EOK);
	CHECK(strstr(err, "given twice") != NULL);
}

/* Found by an outside tester: a line past the reader's buffer went on as
 * a line of its own (a long comment's tail "allow-update: 0.0.0.0/0" let
 * anyone update), a directory read as an empty file, '#' inside quotes
 * cut the value, a NUL byte ended its line unsaid, and a key given twice
 * took the later value unsaid. Each is refused with FILE:LINE now. */
static void test_file_refusals(void)
{
	config_t cfg;
	char err[512], text[6000];
	/* A comment over the limit, a setting at its tail. */
	int n = snprintf(text, sizeof(text), "server:\n    # ");
	memset(text + n, 'x', 4200);
	n += 4200;
	n += snprintf(text + n, sizeof(text) - n, "allow-update: 0.0.0.0/0\n");
	CHECK_EQ(read_text(&cfg, text, (size_t)n, err, sizeof(err)),
	         ZC_EINVAL_CONFIG);
	CHECK(strstr(err, ":2: a line over 4096 bytes") != NULL);
	CHECK_EQ(cfg.allow_update.count, 0);
	/* A long line under the limit is read whole. */
	n = snprintf(text, sizeof(text), "server:\n    # ");
	memset(text + n, 'y', 3000);
	n += 3000;
	n += snprintf(text + n, sizeof(text) - n, "\n    rrl-rate: 7\n");
	CHECK_EQ(read_text(&cfg, text, (size_t)n, err, sizeof(err)), ZC_EOK);
	CHECK_EQ(cfg.rrl_rate, 7);
	/* '#' inside quotes is data; after them, a comment. */
	const char *quoted = "server:\n    nsid: \"ns1 #2\"  # the first\n";
	CHECK_EQ(read_text(&cfg, quoted, strlen(quoted), err, sizeof(err)),
	         ZC_EOK);
	CHECK(strcmp(cfg.nsid, "ns1 #2") == 0);
	static const struct {
		const char *text;
		size_t len;
		const char *err;
	} bad[] = {
		{ "server:\n    nsid: \"ns1\n", 0, ":2: a quote left open" },
		{ "server:\n    nsid: \"a\" b\n", 0,
		  ":2: text after the closing quote" },
		{ "server:\n    nsid: ab\0cd\n", 24, ":2: a NUL byte" },
		{ "server:\n\0    rrl-rate: 0\n", 25, ":2: a NUL byte" },
		{ "server:\n    rrl-rate: 5\n    log-level: info\n"
		  "    rrl-rate: 0\n", 0,
		  ":4: 'rrl-rate' given twice (first on line 2)" },
		{ "server:\n    nsid: a\rversion: EVIL\n", 0,
		  ":2: a control character (0x0d) in the value of 'nsid'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);
		CHECK_EQ(read_text(&cfg, bad[i].text, len, err, sizeof(err)),
		         ZC_EINVAL_CONFIG);
		if (strstr(err, bad[i].err) == NULL) {
			fprintf(stderr, "case %zu: %s\n", i, err);
			CHECK(false);
		}
	}
	/* Past the 64 entries of an address list: the limit, named. */
	config_defaults(&cfg);
	for (int i = 0; i < 64; i++) {
		char v[32];
		snprintf(v, sizeof(v), "10.0.%d.0/24", i);
		CHECK_EQ(config_set(&cfg, "allow-update", v, err, sizeof(err)),
		         ZC_EOK);
	}
	CHECK_EQ(config_set(&cfg, "allow-update", "10.1.0.0/24", err,
	                    sizeof(err)), ZC_EINVAL_CONFIG);
	CHECK(strcmp(err, "more than 64 entries for 'allow-update'") == 0);
	/* A directory is not a file; nor a FIFO (a reload waited on it
	 * with the control socket), nor a device (/dev/zero never ends). */
	char dir[] = "/tmp/zc-config-dir-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	config_defaults(&cfg);
	CHECK_EQ(config_read(&cfg, dir, err, sizeof(err)), ZC_EINVAL_CONFIG);
	CHECK(strstr(err, "cannot open: Is a directory") != NULL);
	char fifo[300];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	CHECK_EQ(mkfifo(fifo, 0600), 0);
	CHECK_EQ(config_read(&cfg, fifo, err, sizeof(err)), ZC_EINVAL_CONFIG);
	CHECK(strstr(err, "cannot open: not a regular file") != NULL);
	unlink(fifo);
	CHECK_EQ(config_read(&cfg, "/dev/zero", err, sizeof(err)),
	         ZC_EINVAL_CONFIG);
	CHECK(strstr(err, "cannot open: not a regular file") != NULL);
	rmdir(dir);
	/* A line of any length costs the reader no more memory than the
	 * limit: 64 MiB of comment, then a line read as usual. */
	char big[] = "/tmp/zc-config-big-XXXXXX";
	int fd = mkstemp(big);
	CHECK(fd >= 0);
	FILE *bf = fdopen(fd, "w");
	fputs("server:\n    #", bf);
	for (int i = 0; i < 64 * 1024; i++) {
		static char kb[1024];
		memset(kb, 'z', sizeof(kb));
		fwrite(kb, 1, sizeof(kb), bf);
	}
	fputs("\n    rrl-rate: 9\n", bf);
	fclose(bf);
	config_defaults(&cfg);
	CHECK_EQ(config_read(&cfg, big, err, sizeof(err)), ZC_EINVAL_CONFIG);
	CHECK(strstr(err, ":2: a line over 4096 bytes") != NULL);
	CHECK_EQ(cfg.rrl_rate, 9);
	unlink(big);
}

/* node-name's default: HOST:DATA_DIR, the directory absolute and
 * normalised as text; a name given is kept. */
static void test_node_name_default(void)
{
	static const struct {
		const char *data_dir, *path; /* path: NULL for cwd + data_dir */
	} cases[] = {
		{ "/var/lib/zonecast", "/var/lib/zonecast" },
		{ "//var/./lib//zonecast/", "/var/lib/zonecast" },
		{ "/var/lib/../zonecast", "/var/zonecast" },
		{ "/..", "/" },
		{ "zonecast-data", NULL },
	};
	char host[256], cwd[1024], want[2048];
	CHECK(gethostname(host, sizeof(host)) == 0);
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		config_t cfg;
		config_defaults(&cfg);
		CHECK_EQ(cfg.node_name[0], '\0');
		snprintf(cfg.data_dir, sizeof(cfg.data_dir), "%s",
		         cases[i].data_dir);
		config_node_name_default(&cfg);
		if (cases[i].path != NULL) {
			snprintf(want, sizeof(want), "%s:%s", host, cases[i].path);
		} else {
			snprintf(want, sizeof(want), "%s:%s/%s", host,
			         strcmp(cwd, "/") == 0 ? "" : cwd, cases[i].data_dir);
		}
		if (strcmp(cfg.node_name, want) != 0) {
			fprintf(stderr, "node-name of %s: %s, expected %s\n",
			        cases[i].data_dir, cfg.node_name, want);
			CHECK(false);
		}
	}
	config_t cfg;
	char err[256];
	config_defaults(&cfg);
	CHECK_EQ(config_set(&cfg, "node-name", "ns1", err, sizeof(err)), ZC_EOK);
	config_node_name_default(&cfg);
	CHECK(strcmp(cfg.node_name, "ns1") == 0);
}

int main(void)
{
	test_node_name_default();
	test_defaults_parse();
	test_set_table();
	test_diff_names_the_key();
	test_lists();
	test_file_replaces_lists();
	test_file_refusals();
	test_acls_repeat_in_a_file();
	return test_done();
}
