/* SPDX-License-Identifier: GPL-3.0-or-later */
/* zonecast.conf reader (see config.h for the format; config_keys.c has
 * the keys). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/config.h"
#include "cli/config_keys.h"
#include "common/audit.h"
#include "common/error.h"
#include "common/log.h"
#include "fleet/fleet.h"

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

/* The longest line the file may have: a longer one is refused, never cut
 * (its tail read as a line of its own: a long comment's end became a
 * setting). */
#define CONFIG_LINE_MAX 4096

/* The value after "key:": quoted ("...", where '#' is data; only a
 * comment may follow the closing quote) or not ('#' starts a comment).
 * NULL with err set when a quote is left open or text follows it. */
static char *clean_value(char *v, char *err, size_t err_size)
{
	v = trim(v);
	if (v[0] == '"') {
		char *close = strchr(v + 1, '"');
		if (close == NULL) {
			snprintf(err, err_size, "a quote left open");
			return NULL;
		}
		char *rest = trim(close + 1);
		if (*rest != '\0' && *rest != '#') {
			snprintf(err, err_size, "text after the closing quote");
			return NULL;
		}
		*close = '\0';
		return v + 1;
	}
	char *hash = strchr(v, '#');
	if (hash != NULL) {
		*hash = '\0';
	}
	return trim(v);
}

/* Opens path for reading: a regular file. A directory read as an empty
 * file (a reload applied every default); a FIFO held the reload, and the
 * control socket and the stop with it, until someone wrote to it; a
 * device (/dev/zero) never ends. Opened without blocking, then read as
 * usual. */
static FILE *open_config(const char *path, char *errbuf, size_t errbuf_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	const char *why = NULL;
	if (fd < 0) {
		why = strerror(errno);
	} else if (fstat(fd, &st) != 0) {
		why = strerror(errno);
	} else if (S_ISDIR(st.st_mode)) {
		why = strerror(EISDIR);
	} else if (!S_ISREG(st.st_mode)) {
		why = "not a regular file";
	}
	FILE *f = why == NULL ? fdopen(fd, "r") : NULL;
	if (why == NULL && f == NULL) {
		why = strerror(errno);
	}
	if (f == NULL) {
		if (fd >= 0) {
			close(fd);
		}
		snprintf(errbuf, errbuf_size, "%s: cannot open: %s", path, why);
		return NULL;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return f;
}

/* Reads one line into buf (at most size - 1 bytes kept, the rest of a
 * longer line read and dropped: memory stays bounded whatever the file);
 * *len is the line's whole length without its newline, *nul whether it
 * held a NUL byte. False at the end of the file, nothing read. */
static bool next_line(FILE *f, char *buf, size_t size, size_t *len,
                      bool *nul)
{
	size_t kept = 0, total = 0;
	int c = EOF;
	*nul = false;
	while ((c = getc(f)) != EOF && c != '\n') {
		*nul |= c == '\0';
		if (kept + 1 < size) {
			buf[kept++] = (char)c;
		}
		total++;
	}
	buf[kept] = '\0';
	*len = total;
	return c != EOF || total > 0;
}

/* One "key: value" line of the server section; err set when refused.
 * first_line[i]: the line key i was first met on (0: not yet). */
static void read_setting(config_t *cfg, char *s, unsigned lineno,
                         unsigned *first_line, bool *in_server, char *err,
                         size_t err_size)
{
	char *colon = strchr(s, ':');
	if (colon == NULL) {
		snprintf(err, err_size, "expected 'key: value'");
		return;
	}
	*colon = '\0';
	char *key = trim(s);
	char *value = clean_value(colon + 1, err, err_size);
	if (value == NULL) {
		return;
	}
	if (*value == '\0' && strcmp(key, "server") == 0) {
		*in_server = true;
		return;
	}
	if (*value == '\0') {
		snprintf(err, err_size, "unknown section '%s'", key);
		return;
	}
	if (!*in_server) {
		snprintf(err, err_size, "'%s' outside a 'server:' section", key);
		return;
	}
	int i = config_key_find(key);
	if (i >= 0 && first_line[i] != 0 && !config_key_repeatable((size_t)i)) {
		/* The later value won, unsaid: one of the two is a mistake. */
		snprintf(err, err_size, "'%s' given twice (first on line %u); "
		         "it takes one value", key, first_line[i]);
		return;
	}
	if (i >= 0 && first_line[i] == 0) {
		if (config_key_repeatable((size_t)i)) {
			/* The file's list replaces the defaults. */
			config_key_clear(cfg, (size_t)i);
		}
		first_line[i] = lineno;
	}
	config_set(cfg, key, value, err, err_size);
}

int config_read(config_t *cfg, const char *path, char *errbuf,
                size_t errbuf_size)
{
	FILE *f = open_config(path, errbuf, errbuf_size);
	if (f == NULL) {
		return ZC_EINVAL_CONFIG;
	}
	unsigned *first_line = calloc(config_key_count(), sizeof(*first_line));
	if (first_line == NULL) {
		fclose(f);
		snprintf(errbuf, errbuf_size, "%s: out of memory", path);
		return -ENOMEM;
	}
	static __thread char line[CONFIG_LINE_MAX + 2];
	size_t len;
	bool nul;
	unsigned lineno = 0;
	bool in_server = false;
	int ret = ZC_EOK;
	while (next_line(f, line, sizeof(line), &len, &nul)) {
		lineno++;
		char err[256] = "";
		char *s = trim(line);
		if (len > CONFIG_LINE_MAX) {
			snprintf(err, sizeof(err), "a line over %d bytes",
			         CONFIG_LINE_MAX);
		} else if (nul) {
			snprintf(err, sizeof(err), "a NUL byte");
		} else if (*s != '\0' && *s != '#') {
			read_setting(cfg, s, lineno, first_line, &in_server, err,
			             sizeof(err));
		}
		if (err[0] != '\0' && ret == ZC_EOK) {
			/* The first error is reported; the lines after it are
			 * read on (a tool that only needs data-dir finds it). */
			snprintf(errbuf, errbuf_size, "%s:%u: %s", path, lineno, err);
			ret = ZC_EINVAL_CONFIG;
		}
	}
	if (ferror(f) && ret == ZC_EOK) {
		snprintf(errbuf, errbuf_size, "%s: cannot read: %s", path,
		         strerror(errno));
		ret = ZC_EINVAL_CONFIG;
	}
	fclose(f);
	free(first_line);
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

int config_log_apply(const config_t *cfg, bool reload, char *err,
                     size_t err_size)
{
	zc_log_config_t out;
	memset(&out, 0, sizeof(out));
	out.level = cfg->log_level;
	out.format = (zc_log_format_t)cfg->log_format;
	out.target_count = cfg->log_target_count;
	memcpy(out.target, cfg->log_target, sizeof(out.target));
	out.keep_running_files = reload;
	int ret = zc_log_configure(&out, err, err_size);
	if (ret == ZC_EOK) {
		zc_audit_refusal_rate(cfg->audit_refusal_rate);
	}
	return ret;
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

/* path made absolute (against the working directory) and normalised as
 * text into out: no ".", no "..", no repeated or trailing slash. */
static void absolute_path(const char *path, char *out, size_t size)
{
	char joined[2 * PATH_MAX];
	char cwd[PATH_MAX] = "";
	if (path[0] != '/' && getcwd(cwd, sizeof(cwd)) == NULL) {
		cwd[0] = '\0'; /* Gone: the path as given, from the root. */
	}
	snprintf(joined, sizeof(joined), "%s/%s", cwd, path);
	size_t len = 0;
	out[0] = '\0';
	for (char *save = NULL, *part = strtok_r(joined, "/", &save);
	     part != NULL; part = strtok_r(NULL, "/", &save)) {
		if (strcmp(part, ".") == 0) {
			continue;
		}
		if (strcmp(part, "..") == 0) {
			char *slash = strrchr(out, '/');
			len = slash != NULL ? (size_t)(slash - out) : 0;
			out[len] = '\0';
			continue;
		}
		int n = snprintf(out + len, size - len, "/%s", part);
		len = n > 0 && (size_t)n < size - len ? len + (size_t)n : size - 1;
	}
	if (len == 0) {
		snprintf(out, size, "/");
	}
}

void config_node_name_default(config_t *cfg)
{
	if (cfg->node_name[0] != '\0') {
		return;
	}
	char host[256], dir[PATH_MAX];
	if (gethostname(host, sizeof(host)) != 0) {
		snprintf(host, sizeof(host), "localhost");
	}
	host[sizeof(host) - 1] = '\0';
	absolute_path(cfg->data_dir, dir, sizeof(dir));
	snprintf(cfg->node_name, sizeof(cfg->node_name), "%s:%s", host, dir);
}
