/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast record list|add|edit|rm|replace|batch: record changes through
 * the HTTP API (so they take the same validation, versioning and
 * propagation path as any API client), with a token from --token,
 * $ZONECAST_TOKEN or the data directory's demo-token. Changes by name and
 * type (rm NAME TYPE, replace, a batch file, as pdnsutil's replace-rrset
 * and knotc's zone-set/zone-unset allow) look the records up by the
 * list filters (name.exact, type, content.exact) and go as one batch
 * request: all of it or nothing, one zone version; a record changed
 * meanwhile fails the batch (404) rather than being half applied.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/api_client.h"
#include "cli/commands.h"
#include "cli/json_args.h"
#include "cli/record_lines.h"
#include "common/error.h"
#include "common/id_text.h"

typedef struct {
	const char *api;
	const char *token;
	const char *name, *type, *content, *comment;
	long ttl, priority;
} opts_t;

static void usage(FILE *out)
{
	fputs("Usage:\n"
	      "  zonecast record list ZONE [--name NAME] [--type TYPE[,TYPE...]]\n"
	      "  zonecast record add  ZONE NAME TYPE CONTENT [--ttl N] "
	      "[--priority N] [--comment TEXT]\n"
	      "  zonecast record edit ZONE ID [--name NAME] [--type TYPE] "
	      "[--content TEXT] [--ttl N] [--priority N]\n"
	      "  zonecast record rm   ZONE ID\n"
	      "  zonecast record rm   ZONE NAME TYPE [CONTENT]\n"
	      "  zonecast record replace ZONE NAME TYPE CONTENT... [--ttl N]\n"
	      "  zonecast record batch ZONE FILE|-\n"
	      "\n"
	      "Options for all: --api ADDR:PORT (default: api-listen of the "
	      "config, 127.0.0.1:8053),\n"
	      "  --token TOKEN (default: $ZONECAST_TOKEN, else DATA_DIR/demo-token),"
	      "\n  --data-dir DIR, --config FILE.\n"
	      "Names are FQDNs (or relative to ZONE, or @); content is master-file "
	      "syntax\n(MX, SRV and URI content may start with the priority).\n"
	      "rm NAME TYPE deletes that RRset (or its records with CONTENT);\n"
	      "replace makes the RRset exactly CONTENT...; batch applies a file "
	      "of lines\n"
	      "  add NAME [TTL] TYPE CONTENT\n"
	      "  delete NAME TYPE [CONTENT]\n"
	      "  replace NAME [TTL] TYPE CONTENT   (the lines of one NAME TYPE "
	      "make its RRset)\n"
	      "(# starts a comment line), or a JSON body of POST .../batch. Each "
	      "of rm, replace\nand batch is one request: all of it or nothing, "
	      "one zone version.\n", out);
}

static const char *read_token(const char *dir, char *buf, size_t size)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/demo-token", dir);
	FILE *f = fopen(path, "r");
	if (f == NULL || fgets(buf, (int)size, f) == NULL) {
		if (f != NULL) {
			fclose(f);
		}
		return NULL;
	}
	fclose(f);
	buf[strcspn(buf, "\r\n")] = '\0';
	return buf;
}

/* Writes text %-escaped for a URL query value (RFC 3986 §2.1). */
static void url_escape(const char *text, char *out, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t pos = 0;
	for (const unsigned char *p = (const unsigned char *)text;
	     *p != '\0' && pos + 4 < size; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p) != NULL) {
			out[pos++] = (char)*p;
		} else {
			out[pos++] = '%';
			out[pos++] = hex[*p >> 4];
			out[pos++] = hex[*p & 15];
		}
	}
	out[pos] = '\0';
}

/* Resolves a zone name to its API id. */
static int zone_id(const opts_t *o, const char *zone, char *id, size_t size)
{
	/* The name %-escaped (a zone "a%b" or "a&b" named another zone or
	 * none); the API matches any spelling, final dot or not. */
	char path[3 * 1024 + 32], ename[3 * 1024];
	json_t *resp;
	url_escape(zone, ename, sizeof(ename));
	snprintf(path, sizeof(path), "/zones?name=%s", ename);
	int status = cli_api_request(o->api, o->token, "GET", path, NULL, &resp);
	const char *zid = json_string_value(json_object_get(
		json_array_get(json_object_get(resp, "result"), 0), "id"));
	int ret = ZC_EOK;
	if (status != 200 || zid == NULL) {
		if (status == 200) {
			fprintf(stderr, "zonecast: no zone %s\n", zone);
		} else if (status > 0) {
			cli_api_print_errors(resp, status);
		}
		ret = ZC_ENOZONE;
	} else {
		snprintf(id, size, "%s", zid);
	}
	json_decref(resp);
	return ret;
}

static void print_record(const json_t *r)
{
	json_t *prio = json_object_get(r, "priority");
	printf("%s %s %lld %s ", json_string_value(json_object_get(r, "id")),
	       json_string_value(json_object_get(r, "name")),
	       json_integer_value(json_object_get(r, "ttl")),
	       json_string_value(json_object_get(r, "type")));
	if (prio != NULL) {
		printf("%lld ", json_integer_value(prio));
	}
	printf("%s\n", json_string_value(json_object_get(r, "content")));
}

/* The record's fields as a JSON body; NULL after saying which is not
 * UTF-8 text (a name's other octets go as \DDD). */
static json_t *fields(const opts_t *o)
{
	json_t *j = json_object();
	bool ok = j != NULL &&
	          (!o->name || cli_json_set(j, "name", cli_json_name(o->name))) &&
	          (!o->type || cli_json_set(j, "type", cli_json_text("record",
	                                                  "TYPE", o->type))) &&
	          (!o->content || cli_json_set(j, "content",
	                                       cli_json_text("record", "CONTENT",
	                                                     o->content))) &&
	          (!o->comment || cli_json_set(j, "comment",
	                                       cli_json_text("record", "--comment",
	                                                     o->comment)));
	if (ok && o->ttl > 0) {
		json_object_set_new(j, "ttl", json_integer(o->ttl));
	}
	if (ok && o->priority >= 0) {
		json_object_set_new(j, "priority", json_integer(o->priority));
	}
	if (!ok) {
		json_decref(j);
		return NULL;
	}
	return j;
}

static int call(const opts_t *o, const char *method, const char *path,
                json_t *body, bool print)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_t *resp;
	int status = cli_api_request(o->api, o->token, method, path, text, &resp);
	free(text);
	json_decref(body);
	if (status < 0) {
		return 1;
	}
	if (status != 200 || !json_is_true(json_object_get(resp, "success"))) {
		cli_api_print_errors(resp, status);
		json_decref(resp);
		return 1;
	}
	json_t *result = json_object_get(resp, "result");
	if (json_is_array(result)) {
		size_t i;
		json_t *r;
		json_array_foreach(result, i, r) {
			print_record(r);
		}
	} else if (print) {
		print_record(result);
	}
	json_t *version = json_object_get(resp, "zone_version");
	if (version != NULL) {
		fprintf(stderr, "zone version %lld\n", json_integer_value(version));
	}
	json_decref(resp);
	return 0;
}

/* --- Changes by name and type, sent as one batch --- */

static bool has_priority(const char *type)
{
	return strcasecmp(type, "MX") == 0 || strcasecmp(type, "SRV") == 0 ||
	       strcasecmp(type, "URI") == 0;
}

/* MX, SRV and URI content as written in a zone file: "10 mail.example."
 * gives priority 10 and the rest; other content is left whole. */
static const char *split_priority(const char *type, const char *content,
                                  long *priority)
{
	char *end;
	*priority = -1;
	if (!has_priority(type)) {
		return content;
	}
	long p = strtol(content, &end, 10);
	if (end == content || (*end != ' ' && *end != '\t') || p < 0 ||
	    p > 65535) {
		return content;
	}
	*priority = p;
	return end + strspn(end, " \t");
}

/* The records of NAME TYPE (those with CONTENT when it is not NULL) into
 * *out (a new array); ZC_EOK, or 1 after printing the API's error. */
static int find_records(const opts_t *o, const char *zid, const char *name,
                        const char *type, const char *content, json_t **out)
{
	char path[8192], ename[1100], etype[100], econtent[4 * 4096 + 1] = "";
	long priority;
	/* The API's type filter takes a list (type=A,AAAA); an RRset is of
	 * one type, and a list here would remove or replace several. */
	if (strchr(type, ',') != NULL) {
		fprintf(stderr, "zonecast record: %s: one type (a list of types "
		        "is for record list --type)\n", type);
		return 1;
	}
	const char *target = content ? split_priority(type, content, &priority) :
	                     NULL;
	url_escape(name, ename, sizeof(ename));
	url_escape(type, etype, sizeof(etype));
	if (target != NULL) {
		url_escape(target, econtent, sizeof(econtent));
	}
	snprintf(path, sizeof(path), "/zones/%s/dns_records?per_page=50000"
	         "&name.exact=%s&type=%s%s%s", zid, ename, etype,
	         content ? "&content.exact=" : "", econtent);
	json_t *resp;
	int status = cli_api_request(o->api, o->token, "GET", path, NULL, &resp);
	if (status != 200 || !json_is_array(json_object_get(resp, "result"))) {
		if (status > 0) {
			cli_api_print_errors(resp, status);
		}
		json_decref(resp);
		return 1;
	}
	*out = json_array();
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(resp, "result"), i, r) {
		json_t *p = json_object_get(r, "priority");
		if (content == NULL || priority < 0 ||
		    (p != NULL && json_integer_value(p) == priority)) {
			json_array_append(*out, r);
		}
	}
	json_decref(resp);
	return ZC_EOK;
}

/* A batch being built: deletes (each id once) and posts. */
typedef struct {
	json_t *deletes, *posts;
	json_t *ids;             /* id -> true */
	bool bad;                /* A field was not UTF-8 text (said). */
} changes_t;

static void changes_init(changes_t *c)
{
	c->deletes = json_array();
	c->posts = json_array();
	c->ids = json_object();
	c->bad = false;
}

static void changes_clear(changes_t *c)
{
	json_decref(c->deletes);
	json_decref(c->posts);
	json_decref(c->ids);
}

static void delete_all(changes_t *c, json_t *records)
{
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r) {
		const char *id = json_string_value(json_object_get(r, "id"));
		if (id != NULL && json_object_get(c->ids, id) == NULL) {
			json_object_set_new(c->ids, id, json_true());
			json_array_append_new(c->deletes, json_pack("{s:s}", "id", id));
		}
	}
}

static void post(changes_t *c, const char *name, const char *type,
                 const char *content, long ttl)
{
	long priority;
	const char *rest = split_priority(type, content, &priority);
	json_t *j = json_object();
	if (j == NULL || !cli_json_set(j, "name", cli_json_name(name)) ||
	    !cli_json_set(j, "type", cli_json_text("record", "TYPE", type)) ||
	    !cli_json_set(j, "content", cli_json_text("record", "CONTENT",
	                                              rest))) {
		json_decref(j);
		c->bad = true;
		return;
	}
	if (ttl > 0) {
		json_object_set_new(j, "ttl", json_integer(ttl));
	}
	if (priority >= 0) {
		json_object_set_new(j, "priority", json_integer(priority));
	}
	json_array_append_new(c->posts, j);
}

/* Prints a batch's result: "- " deleted records, "+ " written ones. */
static void print_changes(json_t *result)
{
	static const char *const lists[] = { "deletes", "patches", "puts",
	                                     "posts" };
	for (size_t k = 0; k < 4; k++) {
		size_t i;
		json_t *r;
		json_array_foreach(json_object_get(result, lists[k]), i, r) {
			fputs(k == 0 ? "- " : "+ ", stdout);
			print_record(r);
		}
	}
}

/* Sends a batch body (takes it): one request, all of it or nothing. */
static int send_batch(const opts_t *o, const char *zid, json_t *body)
{
	char path[256];
	snprintf(path, sizeof(path), "/zones/%s/dns_records/batch", zid);
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	json_t *resp;
	int status = text ? cli_api_request(o->api, o->token, "POST", path, text,
	                                    &resp) : -ENOMEM;
	free(text);
	if (status < 0) {
		return 1;
	}
	if (status != 200 || !json_is_true(json_object_get(resp, "success"))) {
		cli_api_print_errors(resp, status);
		json_decref(resp);
		return 1;
	}
	print_changes(json_object_get(resp, "result"));
	json_t *version = json_object_get(resp, "zone_version");
	if (version != NULL) {
		fprintf(stderr, "zone version %lld\n", json_integer_value(version));
	}
	json_decref(resp);
	return 0;
}

static int send_changes(const opts_t *o, const char *zid, changes_t *c)
{
	if (c->bad) {
		changes_clear(c);
		return 2;
	}
	json_t *body = json_pack("{s:O, s:O}", "deletes", c->deletes, "posts",
	                         c->posts);
	changes_clear(c);
	return send_batch(o, zid, body);
}

/* rm ZONE NAME TYPE [CONTENT]: the RRset, or its records with CONTENT. */
static int remove_rrset(const opts_t *o, const char *zid, const char *name,
                        const char *type, const char *content)
{
	json_t *found;
	if (find_records(o, zid, name, type, content, &found) != ZC_EOK) {
		return 1;
	}
	if (json_array_size(found) == 0) {
		fprintf(stderr, "zonecast record: no %s record at %s%s%s\n", type,
		        name, content ? " with content " : "", content ? content : "");
		json_decref(found);
		return 1;
	}
	changes_t c;
	changes_init(&c);
	delete_all(&c, found);
	json_decref(found);
	return send_changes(o, zid, &c);
}

/* replace ZONE NAME TYPE CONTENT...: the RRset becomes exactly those. */
static int replace_rrset(const opts_t *o, const char *zid, const char *name,
                         const char *type, char **contents, int count)
{
	json_t *found;
	if (find_records(o, zid, name, type, NULL, &found) != ZC_EOK) {
		return 1;
	}
	changes_t c;
	changes_init(&c);
	delete_all(&c, found);
	json_decref(found);
	for (int i = 0; i < count; i++) {
		post(&c, name, type, contents[i], o->ttl);
		if (o->comment != NULL) {
			c.bad |= !cli_json_set(json_array_get(c.posts, i), "comment",
			                       cli_json_text("record", "--comment",
			                                     o->comment));
		}
	}
	return send_changes(o, zid, &c);
}

/* Applies one parsed line to the batch being built. */
static int apply_line(const opts_t *o, const char *zid,
                      const record_line_t *l, changes_t *c,
                      json_t *replaced)
{
	json_t *found = NULL;
	if (strcmp(l->verb, "add") == 0) {
		post(c, l->name, l->type, l->content, l->ttl);
		return ZC_EOK;
	}
	char key[1200];
	snprintf(key, sizeof(key), "%s %s", l->name, l->type);
	bool replace = strcmp(l->verb, "replace") == 0;
	if (!replace || json_object_get(replaced, key) == NULL) {
		if (find_records(o, zid, l->name, l->type, replace ? NULL : l->content,
		                 &found) != ZC_EOK) {
			return 1;
		}
		if (!replace && json_array_size(found) == 0) {
			fprintf(stderr, "zonecast record: no %s record at %s%s%s\n",
			        l->type, l->name, l->content ? " with content " : "",
			        l->content ? l->content : "");
			json_decref(found);
			return 1;
		}
		delete_all(c, found);
		json_decref(found);
		json_object_set_new(replaced, key, json_true());
	}
	if (replace) {
		post(c, l->name, l->type, l->content, l->ttl);
	}
	return ZC_EOK;
}

/* batch ZONE FILE: the file's lines (or its JSON body) as one batch. */
static int batch_file(const opts_t *o, const char *zid, const char *path)
{
	char *text = record_read_all(path);
	if (text == NULL) {
		return 1;
	}
	if (text[strspn(text, " \t\r\n")] == '{') {
		json_error_t err;
		json_t *body = json_loads(text, 0, &err);
		free(text);
		if (body == NULL) {
			fprintf(stderr, "zonecast record: %s: line %d: %s\n", path,
			        err.line, err.text);
			return 2;
		}
		return send_batch(o, zid, body);
	}
	changes_t c;
	changes_init(&c);
	json_t *replaced = json_object();
	int ret = ZC_EOK, lineno = 0;
	for (char *save = NULL, *line = strtok_r(text, "\n", &save);
	     line != NULL && ret == ZC_EOK; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		line[strcspn(line, "\r")] = '\0';
		const char *first = line + strspn(line, " \t");
		if (*first == '\0' || *first == '#') {
			continue;
		}
		record_line_t l;
		if (!record_parse_line(line, &l) || (strcmp(l.verb, "add") != 0 &&
		                              strcmp(l.verb, "delete") != 0 &&
		                              strcmp(l.verb, "replace") != 0)) {
			fprintf(stderr, "zonecast record: %s: line %d: expected add|"
			        "replace NAME [TTL] TYPE CONTENT or delete NAME TYPE "
			        "[CONTENT]\n", path, lineno);
			ret = 2;
			break;
		}
		ret = apply_line(o, zid, &l, &c, replaced);
	}
	json_decref(replaced);
	if (ret == ZC_EOK && json_array_size(c.deletes) + json_array_size(c.posts)
	    == 0) {
		fprintf(stderr, "zonecast record: %s: no changes\n", path);
		ret = 2;
	}
	if (ret != ZC_EOK) {
		changes_clear(&c);
		free(text);
		return ret;
	}
	ret = send_changes(o, zid, &c);
	free(text);
	return ret;
}

static int run(opts_t *o, int argc, char **argv)
{
	const char *sub = argv[0];
	char zid[64], path[2048];
	if (argc < 2 || zone_id(o, argv[1], zid, sizeof(zid)) != ZC_EOK) {
		return argc < 2 ? (usage(stderr), 2) : 1;
	}
	/* Names take master-file escapes as record batch's do ("b\ c"),
	 * an escaped blank sent as the API takes it, \DDD. */
	static char arg_name[sizeof(((record_line_t *)0)->name)];
	static char opt_name[sizeof(((record_line_t *)0)->name)];
	if (argc >= 3 && !zc_id_text_form(argv[2])) {
		snprintf(arg_name, sizeof(arg_name), "%s", argv[2]);
		if (!record_escape_blanks(arg_name, sizeof(arg_name))) {
			fprintf(stderr, "zonecast: %s: too long a name\n", argv[2]);
			return 2;
		}
		argv[2] = arg_name;
	}
	if (o->name != NULL) {
		snprintf(opt_name, sizeof(opt_name), "%s", o->name);
		if (!record_escape_blanks(opt_name, sizeof(opt_name))) {
			fprintf(stderr, "zonecast: --name: too long a name\n");
			return 2;
		}
		o->name = opt_name;
	}
	if (strcmp(sub, "list") == 0 && argc == 2) {
		char name[1100] = "", type[100] = "";
		url_escape(o->name ? o->name : "", name, sizeof(name));
		url_escape(o->type ? o->type : "", type, sizeof(type));
		snprintf(path, sizeof(path), "/zones/%s/dns_records?per_page=50000%s%s"
		         "%s%s", zid, o->name ? "&name=" : "", name,
		         o->type ? "&type=" : "", type);
		return call(o, "GET", path, NULL, false);
	}
	if (strcmp(sub, "add") == 0 && argc == 5) {
		o->name = argv[2], o->type = argv[3], o->content = argv[4];
		snprintf(path, sizeof(path), "/zones/%s/dns_records", zid);
		json_t *body = fields(o);
		return body != NULL ? call(o, "POST", path, body, true) : 2;
	}
	if ((strcmp(sub, "edit") == 0 || strcmp(sub, "rm") == 0) && argc == 3 &&
	    !zc_id_text_form(argv[2])) {
		/* It goes into the request's path: only an id's form. */
		fprintf(stderr, "zonecast: %s is not a record id (32 lower-case "
		        "hex digits, as record list shows)\n", argv[2]);
		return 2;
	}
	if (strcmp(sub, "edit") == 0 && argc == 3) {
		snprintf(path, sizeof(path), "/zones/%s/dns_records/%s", zid, argv[2]);
		json_t *body = fields(o);
		return body != NULL ? call(o, "PATCH", path, body, true) : 2;
	}
	if (strcmp(sub, "rm") == 0 && argc == 3) {
		snprintf(path, sizeof(path), "/zones/%s/dns_records/%s", zid, argv[2]);
		return call(o, "DELETE", path, NULL, false);
	}
	if (strcmp(sub, "rm") == 0 && (argc == 4 || argc == 5)) {
		return remove_rrset(o, zid, argv[2], argv[3],
		                    argc == 5 ? argv[4] : NULL);
	}
	if (strcmp(sub, "replace") == 0 && argc >= 5) {
		return replace_rrset(o, zid, argv[2], argv[3], argv + 4, argc - 4);
	}
	if (strcmp(sub, "batch") == 0 && argc == 3) {
		return batch_file(o, zid, argv[2]);
	}
	usage(stderr);
	return 2;
}

int cmd_record(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "api", required_argument, NULL, 'a' },
		{ "token", required_argument, NULL, 't' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "name", required_argument, NULL, 'n' },
		{ "type", required_argument, NULL, 'T' },
		{ "content", required_argument, NULL, 'C' },
		{ "comment", required_argument, NULL, 'm' },
		{ "ttl", required_argument, NULL, 'l' },
		{ "priority", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	config_t cfg;
	config_defaults(&cfg);
	opts_t o = { .priority = -1 };
	const char *dir = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "a:t:d:c:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'a': o.api = optarg; break;
		case 't': o.token = optarg; break;
		case 'd': dir = optarg; break;
		case 'c':
			if (config_load(&cfg, optarg) != ZC_EOK) {
				return 1;
			}
			break;
		case 'n': o.name = optarg; break;
		case 'T': o.type = optarg; break;
		case 'C': o.content = optarg; break;
		case 'm': o.comment = optarg; break;
		case 'l': o.ttl = strtol(optarg, NULL, 10); break;
		case 'p': o.priority = strtol(optarg, NULL, 10); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	char token[128];
	o.api = o.api ? o.api : cfg.api_listen;
	o.token = o.token ? o.token : getenv("ZONECAST_TOKEN");
	if (o.token == NULL) {
		/* The token comes from the data directory: a mistyped one is
		 * said as such, not as a missing token. */
		dir = dir ? dir : cfg.data_dir;
		if (cli_require_data_dir(dir) != ZC_EOK) {
			return 1;
		}
		o.token = read_token(dir, token, sizeof(token));
	}
	if (o.token == NULL) {
		fprintf(stderr, "zonecast record: no token (--token, "
		        "$ZONECAST_TOKEN, or DATA_DIR/demo-token)\n");
		return 2;
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	return run(&o, argc - optind, argv + optind);
}
