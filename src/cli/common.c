/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What several subcommands share: opening the stores of a data directory
 * (cli/data_dir.c says whether one may be created), opening a zone file
 * for an import or a check (read by zone_load.c), finding a zone.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libknot/errcode.h>

#include "builder/builder.h"
#include "cli/commands.h"
#include "cli/config_keys.h"
#include "cli/zone_load.h"
#include "common/error.h"
#include "dns/name_text.h"
#include "zonefile/zonefile.h"

/* The edge store's default space reserve (ZONECAST_EDGE_RESERVE_MB). */
#define EDGE_RESERVE_MB 8

void cli_records_store_text(const char *dir, char *out, size_t size)
{
	char uri[4096], shown[512];
	if (records_bound_target(dir, uri, sizeof(uri)) > 0) {
		records_uri_redact(uri, shown, sizeof(shown));
		snprintf(out, size, "the records store %s (bound to %s)", shown,
		         dir);
	} else {
		snprintf(out, size, "%s/records.db", dir);
	}
}

int cli_open_stores(const char *dir, bool create, records_store_t **rs,
                    edge_store_t **es)
{
	int ret = create ? cli_prepare_data_dir(dir) : cli_require_data_dir(dir);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = records_open(rs, dir);
	if (ret != ZC_EOK) {
		char store[600];
		cli_records_store_text(dir, store, sizeof(store));
		fprintf(stderr, "zonecast: cannot open %s: %s\n", store,
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

int cli_check_zone(const char *name, const char *path)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	if (dns_name_from_text(apex, name, sizeof(apex)) == NULL) {
		fprintf(stderr, "zonecast: invalid zone name '%s'\n", name);
		return ZC_EUSAGE;
	}
	knot_dname_to_lower(apex);
	zone_source_t src = { .name = path };
	int ret = cli_open_zone_file(path, &src);
	if (ret != ZC_EOK) {
		return ZC_EZONEFILE;
	}
	records_import_t *imp;
	ret = records_import_begin(NULL, apex, &imp);
	if (ret != ZC_EOK) {
		close(src.fd);
		return ret;
	}
	uint64_t records = 0;
	int problems = zone_load(imp, apex, &src, stderr, false, &records);
	records_import_abort(imp);
	close(src.fd);
	if (problems != 0) {
		fprintf(stderr, "zone %s: %d problem(s) found in %s\n", name,
		        problems < 0 ? 1 : problems, path);
		return ZC_EZONEFILE;
	}
	printf("zone %s: %llu records, no problems found in %s\n", name,
	       (unsigned long long)records, path);
	return ZC_EOK;
}

/* Whether path names this process's standard input. */
static bool is_stdin(const char *path)
{
	return strcmp(path, "-") == 0 || strcmp(path, "/dev/stdin") == 0 ||
	       strcmp(path, "/dev/fd/0") == 0 ||
	       strcmp(path, "/proc/self/fd/0") == 0;
}

/* An unlinked temporary file (in TMPDIR, else /tmp): an fd or -errno. */
static int spool_file(void)
{
	const char *dir = getenv("TMPDIR");
	if (dir == NULL || dir[0] == '\0') {
		dir = "/tmp";
	}
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0) {
		return fd;
	}
	char tmpl[PATH_MAX];
	snprintf(tmpl, sizeof(tmpl), "%s/zonecast-import.XXXXXX", dir);
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0) {
		return -errno;
	}
	unlink(tmpl);
	return fd;
}

/* Copies the stream `in` (a pipe, a terminal) into an unlinked temporary
 * file and returns that (rewound), or -1 after saying why: the server
 * maps regular files only, in constant memory; it read a pipe whole into
 * its memory, and /dev/zero until ENOMEM. A NUL byte, which no master
 * file holds, ends it at once (head -c 1G /dev/zero was read to its
 * end before "owner is invalid"). */
static int spool_stream(int in, const char *path)
{
	int out = spool_file();
	if (out < 0) {
		fprintf(stderr, "zonecast: cannot copy %s (standard input) to a "
		        "temporary file: %s\n", path, strerror(-out));
		return -1;
	}
	char buf[65536];
	uint64_t at = 0;
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			fprintf(stderr, "zonecast: cannot read %s: %s\n", path,
			        strerror(errno));
			break;
		}
		if (n == 0) {
			if (lseek(out, 0, SEEK_SET) == 0) {
				return out;
			}
			fprintf(stderr, "zonecast: cannot rewind the copy of %s: "
			        "%s\n", path, strerror(errno));
			break;
		}
		const char *nul = memchr(buf, '\0', (size_t)n);
		if (nul != NULL) {
			fprintf(stderr, "zonecast: %s: a NUL byte at offset %llu: "
			        "not a zone file\n", path,
			        (unsigned long long)(at + (uint64_t)(nul - buf)));
			break;
		}
		ssize_t w = 0;
		for (ssize_t off = 0; off < n; off += w) {
			w = write(out, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR) {
				w = 0;
			} else if (w <= 0) {
				break;
			}
		}
		if (w < 0) {
			fprintf(stderr, "zonecast: cannot copy %s to a temporary "
			        "file: %s\n", path, strerror(errno));
			break;
		}
		at += (uint64_t)n;
	}
	close(out);
	return -1;
}

/* Standard input as a regular file: itself when it is one, else a copy
 * (spool_stream()). Relative $INCLUDE paths are the working directory's. */
static int open_stdin(const char *path, zone_source_t *src)
{
	static char dir[PATH_MAX];
	struct stat st;
	if (fstat(STDIN_FILENO, &st) != 0) {
		int err = errno;
		fprintf(stderr, "zonecast: cannot read %s: %s\n", path,
		        strerror(err));
		return -err;
	}
	src->fd = S_ISREG(st.st_mode) ?
	          fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3) :
	          spool_stream(STDIN_FILENO, path);
	if (src->fd < 0) {
		return ZC_EZONEFILE;
	}
	src->include_dir = getcwd(dir, sizeof(dir));
	src->name = path;
	return ZC_EOK;
}

int cli_open_zone_file(const char *path, zone_source_t *src)
{
	static char dir[PATH_MAX];
	if (is_stdin(path)) {
		return open_stdin(path, src);
	}
	/* Without waiting, a regular file only (zonefile_open()): a FIFO's
	 * open waited for a writer, a device is no zone file. */
	char why[PATH_MAX + 160];
	src->fd = zonefile_open(path, why, sizeof(why));
	if (src->fd < 0) {
		int err = errno;
		fprintf(stderr, "zonecast: %s%s\n", why, err == EINVAL ?
		        " (standard input, - or /dev/stdin, may be a pipe)" : "");
		return -err;
	}
	/* Relative $INCLUDE paths are the file's directory's, wherever the
	 * file is read (the server has another working directory). */
	char *real = realpath(path, NULL);
	src->include_dir = NULL;
	if (real != NULL) {
		snprintf(dir, sizeof(dir), "%s", dirname(real));
		src->include_dir = dir;
		free(real);
	}
	src->name = path;
	return ZC_EOK;
}

int cli_find_zone(records_store_t *rs, const char *cmd, const char *name,
                  records_zone_t *zone)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	int ret = dns_name_from_text(apex, name, sizeof(apex)) != NULL ?
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

/* One flag's value for key: the first flag of a repeatable key replaces
 * the file's entries (config_key_clear()), the next ones add to it; an
 * empty value empties its list (-o allow-update=: no address at all). */
static void flag_set(config_t *cfg, bool *seen, const char *key,
                     const char *value, char *err, size_t err_size)
{
	int i = config_key_find(key);
	bool repeatable = i >= 0 && config_key_repeatable((size_t)i);
	if (repeatable && (!seen[i] || value[0] == '\0')) {
		config_key_clear(cfg, (size_t)i);
		seen[i] = true;
	}
	if (!repeatable || value[0] != '\0') {
		config_set(cfg, key, value, err, err_size);
	}
}

int cli_parse_server_args(const cli_args_t *a, int argc, char **argv,
                          config_t *cfg)
{
	int ret = read_config_file(a, argc, argv, cfg);
	if (ret != 0) {
		return ret;
	}
	/* A repeatable key's flags replace the file's list: the first
	 * empties it (listen, log-target, the ACLs...). */
	bool *seen = calloc(config_key_count(), sizeof(*seen));
	if (seen == NULL) {
		args_error(a, "out of memory");
		return 2;
	}
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, a->shortopts, a->opts, NULL)) != -1) {
		char err[256] = "";
		if (c == 'l') {
			flag_set(cfg, seen, "listen", optarg, err, sizeof(err));
		} else if (c == 'o') {
			char key[64];
			const char *eq = strchr(optarg, '=');
			if (eq == NULL || (size_t)(eq - optarg) >= sizeof(key)) {
				snprintf(err, sizeof(err), "-o wants KEY=VALUE, not "
				         "'%s'", optarg);
			} else {
				memcpy(key, optarg, eq - optarg);
				key[eq - optarg] = '\0';
				/* A value in quotes as the file takes one
				 * (-o 'nsid="ns1 #2"'); # is data here. */
				char value[CONFIG_STR_MAX * 2];
				/* Blanks around the value go, as in the file. */
				const char *v = eq + 1 + strspn(eq + 1, " \t");
				size_t vlen = strlen(v);
				while (vlen > 0 && (v[vlen - 1] == ' ' ||
				                    v[vlen - 1] == '\t')) {
					vlen--;
				}
				bool quoted = v[0] == '"';
				const char *close = quoted ?
				                    memchr(v + 1, '"', vlen - 1) : NULL;
				snprintf(value, sizeof(value), "%.*s",
				         (int)(quoted && close ? close - v - 1 :
				               (long)vlen), v + quoted);
				if (vlen >= sizeof(value)) {
					snprintf(err, sizeof(err), "-o %s: the value is "
					         "too long", key);
				} else if (quoted && close == NULL) {
					snprintf(err, sizeof(err), "-o %s: a quote left "
					         "open", key);
				} else if (quoted && close != v + vlen - 1) {
					snprintf(err, sizeof(err), "-o %s: text after the "
					         "closing quote", key);
				} else {
					flag_set(cfg, seen, key, value, err,
					         sizeof(err));
				}
			}
		} else if (c > 0 && c < 128 && a->flag_keys[c] != NULL) {
			flag_set(cfg, seen, a->flag_keys[c], optarg, err,
			         sizeof(err));
		} else if (a->flag != NULL) {
			a->flag(cfg, c);
		}
		if (err[0] != '\0') {
			free(seen);
			args_error(a, "%s", err);
			return 2;
		}
	}
	free(seen);
	return 0;
}

void cli_hold_signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
}
