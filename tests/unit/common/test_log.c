/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Log lines and targets (common/log.h, audit.h): text and JSON formats
 * with their escaping, a file reopened after a move, a target that cannot
 * be opened refused with the old ones kept, syslog and journald datagrams
 * read from real sockets, the level filter, and the limit on refusal
 * lines with its count of the lines left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "common/audit.h"
#include "common/error.h"
#include "common/log.h"
#include "test.h"

static const char *dir;

static char *slurp(const char *path)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = '\0';
	if (f != NULL) {
		fclose(f);
	}
	return buf;
}

static int to_file(const char *path, zc_log_format_t format, int level)
{
	zc_log_config_t cfg = { .level = level, .format = format,
	                        .target_count = 1 };
	snprintf(cfg.target[0], sizeof(cfg.target[0]), "%s", path);
	char err[256];
	return zc_log_configure(&cfg, err, sizeof(err));
}

static void test_text_and_json(void)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/text.log", dir);
	CHECK_EQ(to_file(path, ZC_LOG_TEXT, ZC_LOG_INFO), ZC_EOK);
	zc_info("plain %d", 42);
	zc_debug("not written at info");
	zc_audit_t a;
	zc_audit_begin(&a, "update", "accepted");
	zc_audit_str(&a, "zone", "example.com.");
	zc_audit_str(&a, "reason", "two words \"quoted\"");
	zc_audit_num(&a, "serial", 7);
	zc_audit_end(&a);
	const char *text = slurp(path);
	CHECK(strstr(text, "Z info: plain 42\n") != NULL);
	CHECK(strstr(text, "not written") == NULL);
	CHECK(strstr(text, "info: audit: update accepted zone=example.com. "
	                   "reason=\"two words \\\"quoted\\\"\" serial=7\n") != NULL);
	CHECK(strstr(text, "outcome=") == NULL); /* The message says it. */

	snprintf(path, sizeof(path), "%s/json.log", dir);
	CHECK_EQ(to_file(path, ZC_LOG_JSON, ZC_LOG_INFO), ZC_EOK);
	zc_warn("a \"quote\", a \\ and a\nnewline\x01");
	zc_audit_begin(&a, "api", "refused");
	zc_audit_num(&a, "status", 401);
	zc_audit_end(&a);
	text = slurp(path);
	CHECK(strstr(text, "\"level\":\"warning\",\"message\":\"a \\\"quote\\\", "
	                   "a \\\\ and a\\u000anewline\\u0001\"}\n") != NULL);
	CHECK(strstr(text, "\"message\":\"audit: api refused\",\"audit\":\"api\","
	                   "\"outcome\":\"refused\",\"status\":401}\n") != NULL);
	CHECK(strncmp(text, "{\"time\":\"", 9) == 0);

	/* Bytes that are not UTF-8 (a request path's %FF%C3) have no JSON
	 * form: written as \xHH so that the line stays valid JSON; UTF-8,
	 * 2 to 4 bytes, as it is. Overlong forms, surrogates and past
	 * U+10FFFF are not UTF-8. */
	snprintf(path, sizeof(path), "%s/utf8.log", dir);
	CHECK_EQ(to_file(path, ZC_LOG_JSON, ZC_LOG_INFO), ZC_EOK);
	zc_audit_begin(&a, "api", "refused");
	zc_audit_str(&a, "operation", "POST /zones/x\xff\xc3/r \xc3\xa9 "
	             "\xe2\x82\xac \xf0\x9f\x98\x80 \xc0\xaf \xed\xa0\x80 "
	             "\xf4\x90\x80\x80 \xe2\x82");
	zc_audit_end(&a);
	text = slurp(path);
	CHECK(strstr(text, "\"operation\":\"POST /zones/x\\\\xff\\\\xc3/r "
	                   "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 "
	                   "\\\\xc0\\\\xaf \\\\xed\\\\xa0\\\\x80 "
	                   "\\\\xf4\\\\x90\\\\x80\\\\x80 "
	                   "\\\\xe2\\\\x82\"}\n") != NULL);
}

static void test_reopen_and_refused_target(void)
{
	char path[256], moved[300];
	snprintf(path, sizeof(path), "%s/rotate.log", dir);
	snprintf(moved, sizeof(moved), "%s.1", path);
	CHECK_EQ(to_file(path, ZC_LOG_TEXT, ZC_LOG_INFO), ZC_EOK);
	zc_info("before the move");
	CHECK_EQ(rename(path, moved), 0);
	zc_info("after the move, before the reopen");
	zc_log_reopen();
	zc_info("after the reopen");
	CHECK(strstr(slurp(moved), "before the reopen") != NULL);
	const char *text = slurp(path);
	CHECK(strstr(text, "after the reopen") != NULL);
	CHECK(strstr(text, "before") == NULL);

	/* A target that cannot be opened: refused, the old one stays. */
	zc_log_config_t cfg = { .level = ZC_LOG_INFO, .target_count = 2 };
	snprintf(cfg.target[0], sizeof(cfg.target[0]), "stderr");
	snprintf(cfg.target[1], sizeof(cfg.target[1]), "/nonexistent/x.log");
	char err[256] = "";
	CHECK_EQ(zc_log_configure(&cfg, err, sizeof(err)), ZC_EINVAL_CONFIG);
	CHECK(strstr(err, "cannot open log file /nonexistent/x.log") != NULL);
	zc_info("still to the old file");
	CHECK(strstr(slurp(path), "still to the old file") != NULL);
	CHECK(!zc_log_target_valid("relative.log"));
	CHECK(zc_log_target_valid("journald"));
}

static int bind_dgram(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("bind");
		exit(1);
	}
	struct timeval tv = { .tv_sec = 1 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void test_syslog_and_journal(void)
{
	char sys_path[256], jour_path[256], buf[4096];
	snprintf(sys_path, sizeof(sys_path), "%s/syslog.sock", dir);
	snprintf(jour_path, sizeof(jour_path), "%s/journal.sock", dir);
	int sys_fd = bind_dgram(sys_path), jour_fd = bind_dgram(jour_path);
	setenv("ZONECAST_SYSLOG_SOCKET", sys_path, 1);
	setenv("ZONECAST_JOURNAL_SOCKET", jour_path, 1);
	zc_log_config_t cfg = { .level = ZC_LOG_INFO, .target_count = 2 };
	snprintf(cfg.target[0], sizeof(cfg.target[0]), "syslog");
	snprintf(cfg.target[1], sizeof(cfg.target[1]), "journald");
	char err[256];
	CHECK_EQ(zc_log_configure(&cfg, err, sizeof(err)), ZC_EOK);
	zc_warn("to the daemons");
	ssize_t n = recv(sys_fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	char want[64];
	snprintf(want, sizeof(want), " zonecast[%d]: to the daemons", getpid());
	CHECK(strncmp(buf, "<28>", 4) == 0); /* daemon.warning */
	CHECK(strstr(buf, want) != NULL);
	n = recv(jour_fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	CHECK(strstr(buf, "PRIORITY=4\n") != NULL);
	CHECK(strstr(buf, "SYSLOG_IDENTIFIER=zonecast\n") != NULL);
	CHECK(strstr(buf, "MESSAGE=to the daemons\n") != NULL);
	zc_audit_t a;
	zc_audit_begin(&a, "transfer", "refused");
	zc_audit_str(&a, "zone", "example.net.");
	zc_audit_end(&a);
	recv(sys_fd, buf, sizeof(buf) - 1, 0);
	n = recv(jour_fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	CHECK(strstr(buf, "ZONECAST_AUDIT=transfer\n") != NULL);
	CHECK(strstr(buf, "ZONECAST_OUTCOME=refused\n") != NULL);
	CHECK(strstr(buf, "ZONECAST_ZONE=example.net.\n") != NULL);
	CHECK(strstr(buf, "MESSAGE=audit: transfer refused zone=example.net.\n")
	      != NULL);
	close(sys_fd);
	close(jour_fd);
	/* The daemon gone: lines are dropped, nothing blocks or fails. */
	unlink(sys_path);
	zc_warn("nobody listens");
}

/* Sleeps to the start of the next monotonic second. */
static void next_second(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	struct timespec rest = { .tv_nsec = 1000000000L - ts.tv_nsec + 1000000 };
	if (rest.tv_nsec >= 1000000000L) {
		rest.tv_sec = 1;
		rest.tv_nsec -= 1000000000L;
	}
	nanosleep(&rest, NULL);
}

static unsigned count(const char *text, const char *what)
{
	unsigned n = 0;
	for (const char *p = strstr(text, what); p != NULL;
	     p = strstr(p + 1, what)) {
		n++;
	}
	return n;
}

static void test_refusal_limit(void)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/limit.log", dir);
	CHECK_EQ(to_file(path, ZC_LOG_TEXT, ZC_LOG_INFO), ZC_EOK);
	next_second();
	zc_audit_t a;
	for (int i = 0; i < 120; i++) {
		zc_audit_begin(&a, "update", "refused");
		zc_audit_end(&a);
	}
	for (int i = 0; i < 10; i++) { /* Accepted lines are never cut. */
		zc_audit_begin(&a, "update", "accepted");
		zc_audit_end(&a);
	}
	const char *text = slurp(path);
	CHECK_EQ(count(text, "update refused"), ZC_AUDIT_REFUSALS_PER_S);
	CHECK_EQ(count(text, "update accepted"), 10);
	next_second();
	zc_audit_begin(&a, "update", "refused");
	zc_audit_end(&a);
	text = slurp(path);
	CHECK(strstr(text, "update refused suppressed=70\n") != NULL);
}

/* The last line of a file. */
static const char *last_line(const char *text)
{
	static char line[1 << 14];
	size_t n = strlen(text);
	if (n > 0 && text[n - 1] == '\n') {
		n--;
	}
	size_t start = n;
	while (start > 0 && text[start - 1] != '\n') {
		start--;
	}
	snprintf(line, sizeof(line), "%.*s", (int)(n - start), text + start);
	return line;
}

/* A text line's quotes are balanced: every value read back whole. */
static bool quotes_closed(const char *line)
{
	bool in = false;
	for (const char *p = line; *p; p++) {
		if (in && *p == '\\' && p[1] != '\0') {
			p++;
		} else if (*p == '"') {
			in = !in;
		}
	}
	return !in;
}

/* The UPDATE a client names zone and key with odd octets (printed as
 * \000, 1000 characters each): every field is in the line, the names
 * shortened with their marker, none of them cut inside an escape. */
static void test_audit_long_values(void)
{
	char path[256], name[1100] = "";
	for (int i = 0; i < 250; i++) {
		strcat(name, "\\000");
	}
	strcat(name, ".");
	snprintf(path, sizeof(path), "%s/long.log", dir);
	for (int format = ZC_LOG_TEXT; format <= ZC_LOG_JSON; format++) {
		CHECK_EQ(to_file(path, (zc_log_format_t)format, ZC_LOG_INFO), ZC_EOK);
		zc_audit_t a;
		zc_audit_begin(&a, "update", "refused");
		zc_audit_str(&a, "zone", name);
		zc_audit_str(&a, "key", name);
		zc_audit_fixed(&a, "client", "192.0.2.1#5353");
		zc_audit_fixed(&a, "rcode", "NOTAUTH");
		zc_audit_fixed(&a, "tsig_error", "BADKEY");
		zc_audit_str(&a, "reason", "the key is not known");
		zc_audit_end(&a);
		const char *line = last_line(slurp(path));
		CHECK(strlen(line) < 4096);
		CHECK(strstr(line, "truncated") == NULL); /* Never cut by the log. */
		if (format == ZC_LOG_TEXT) {
			CHECK(strstr(line, " client=192.0.2.1#5353 rcode=NOTAUTH "
			                   "tsig_error=BADKEY reason=\"the key is not "
			                   "known\"") != NULL);
			/* Quoted (the marker has a space), backslashes escaped. */
			CHECK(strstr(line, " zone=\"\\\\000") != NULL);
			CHECK(strstr(line, " key=\"\\\\000") != NULL);
			CHECK(strstr(line, "\\\\000\xe2\x80\xa6(1001 octets)\" key=") != NULL);
			continue;
		}
		json_error_t e;
		json_t *o = json_loads(line, 0, &e);
		CHECK(o != NULL);
		CHECK(strcmp(json_string_value(json_object_get(o, "client")),
		             "192.0.2.1#5353") == 0);
		CHECK(json_object_get(o, "rcode") != NULL);
		CHECK(json_object_get(o, "tsig_error") != NULL);
		CHECK(json_object_get(o, "reason") != NULL);
		const char *keys[] = { "zone", "key" };
		for (size_t k = 0; k < 2; k++) {
			const char *v = json_string_value(json_object_get(o, keys[k]));
			CHECK(v != NULL);
			const char *m = v != NULL ? strstr(v, "\xe2\x80\xa6(1001 octets)")
			                          : NULL;
			CHECK(m != NULL && m[strlen("\xe2\x80\xa6(1001 octets)")] == '\0');
			/* Whole escapes before the marker. */
			CHECK(m != NULL && (m - v) % 4 == 0 && m - v >= 64);
			CHECK(v != NULL && strncmp(v, name, (size_t)(m - v)) == 0);
		}
		json_decref(o);
	}

	/* An API write: the path a client chose is shortened, the ids (and
	 * "+N more") and the version never. */
	char op[2000] = "DELETE /client/v4/zones/", ids[800] = "";
	for (int i = 0; i < 600; i++) {
		strcat(op, "\x01");
	}
	for (int i = 0; i < 20; i++) {
		snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%032x",
		         i ? "," : "", i);
	}
	strcat(ids, ",+7 more");
	CHECK_EQ(to_file(path, ZC_LOG_JSON, ZC_LOG_INFO), ZC_EOK);
	zc_audit_t a;
	zc_audit_begin(&a, "api", "accepted");
	zc_audit_str(&a, "operation", op);
	zc_audit_num(&a, "token", 3);
	zc_audit_fixed(&a, "client", "127.0.0.1");
	zc_audit_str(&a, "zone", name);
	zc_audit_num(&a, "status", 200);
	zc_audit_fixed(&a, "ids", ids);
	zc_audit_num(&a, "version", 42);
	zc_audit_end(&a);
	json_error_t e;
	json_t *o = json_loads(last_line(slurp(path)), 0, &e);
	CHECK(o != NULL);
	CHECK(strcmp(json_string_value(json_object_get(o, "ids")), ids) == 0);
	CHECK_EQ(json_integer_value(json_object_get(o, "version")), 42);
	CHECK_EQ(json_integer_value(json_object_get(o, "status")), 200);
	const char *v = json_string_value(json_object_get(o, "operation"));
	CHECK(v != NULL && strstr(v, "\xe2\x80\xa6(624 octets)") != NULL);
	CHECK(v != NULL && strncmp(v, "DELETE /client/v4/zones/\x01", 25) == 0);
	CHECK(json_object_get(o, "zone") != NULL);
	json_decref(o);
}

/* A line longer than the log takes (not an audit line: those fit) is cut
 * between characters, stays one JSON object or keeps its text quoting,
 * and says it was cut: control bytes (6 octets each in JSON) and UTF-8
 * sequences at every cut position. */
static void test_truncated_lines(void)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/cut.log", dir);
	for (int format = ZC_LOG_TEXT; format <= ZC_LOG_JSON; format++) {
		CHECK_EQ(to_file(path, (zc_log_format_t)format, ZC_LOG_INFO), ZC_EOK);
		for (size_t shift = 0; shift < 8; shift++) {
			char value[6000];
			size_t n = 0;
			for (size_t i = 0; i < shift; i++) {
				value[n++] = 'a';
			}
			while (n < sizeof(value) - 8) {
				static const char *const pieces[] = {
					"\x01", "\xe2\x82\xac", "\"", "\xf0\x9f\x98\x80", "\\",
					"\xff", " ",
				};
				const char *piece = pieces[(n / 3) % 7];
				memcpy(value + n, piece, strlen(piece));
				n += strlen(piece);
			}
			value[n] = '\0';
			zc_log_field_t f[] = {
				{ .key = "path", .value = value },
				{ .key = "after", .value = "never reached" },
			};
			zc_log_fields(ZC_LOG_INFO, "a long line", f, 2);
			const char *line = last_line(slurp(path));
			CHECK(strlen(line) < 4096);
			if (format == ZC_LOG_TEXT) {
				size_t len = strlen(line);
				CHECK(len > 15 &&
				      strcmp(line + len - 15, " truncated=true") == 0);
				CHECK(quotes_closed(line));
				CHECK(strstr(line, "\xe2\x80\xa6\" truncated=true") != NULL);
				continue;
			}
			json_error_t e;
			json_t *o = json_loads(line, 0, &e);
			CHECK(o != NULL);
			if (o == NULL) {
				fprintf(stderr, "not JSON (%s): ...%s\n", e.text,
				        line + strlen(line) - 40);
				continue;
			}
			CHECK(json_is_true(json_object_get(o, "truncated")));
			CHECK(json_object_get(o, "after") == NULL);
			const char *v = json_string_value(json_object_get(o, "path"));
			CHECK(v != NULL && strlen(v) > 1000);
			/* The value is a prefix of the one logged (UTF-8 whole). */
			size_t vl = v != NULL ? strlen(v) : 0;
			CHECK(vl > 3 && strcmp(v + vl - 3, "\xe2\x80\xa6") == 0);
			CHECK(v != NULL && strncmp(v, value, shift) == 0);
			json_decref(o);
		}
		/* A short line is whole and unmarked. */
		zc_info("short %s", "line");
		CHECK(strstr(last_line(slurp(path)), "truncated") == NULL);
	}
}

int main(void)
{
	dir = test_tmpdir();
	test_text_and_json();
	test_reopen_and_refused_target();
	test_syslog_and_journal();
	test_refusal_limit();
	test_audit_long_values();
	test_truncated_lines();
	zc_log_close();
	test_rmdir(dir);
	return test_done();
}
