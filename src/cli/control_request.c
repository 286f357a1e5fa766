/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What a control request may hold: each command's members and their JSON
 * types, checked before the request runs. A member the command does not
 * take, or one of another type, is refused naming it: the commands read
 * their members with json_string_value() and friends, which give NULL or
 * 0 for a member of the wrong type, so {"command": "token-create",
 * "zone": 5} made a token for every zone, and a misspelt member
 * ("zonee") was silently not there.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/admin.h"

typedef enum { TEXT, FLAG, NUMBER, TEXTS } kind_t;

typedef struct {
	const char *key;
	kind_t kind;
} member_t;

#define MEMBERS_MAX 10

static const struct {
	const char *command;
	member_t members[MEMBERS_MAX];
} commands[] = {
	{ "status", { { NULL } } },
	{ "reload", { { NULL } } },
	{ "stop", { { NULL } } },
	{ "zone-status", { { "zone", TEXT } } },
	{ "zone-import", { { "zone", TEXT }, { "path", TEXT },
	                   { "include_dir", TEXT }, { "quiet", FLAG } } },
	{ "zone-delete", { { "zone", TEXT }, { "quiet", FLAG } } },
	{ "tsig-create", { { "name", TEXT }, { "zone", TEXT },
	                   { "grants", TEXT }, { "algorithm", TEXT },
	                   { "transfer", FLAG }, { "format", TEXT } } },
	{ "tsig-delete", { { "name", TEXT } } },
	{ "token-create", { { "name", TEXT }, { "zone", TEXT },
	                    { "read_only", FLAG }, { "expires_on", NUMBER } } },
	{ "token-revoke", { { "which", TEXT } } },
	{ "secondaries-set", { { "zone", TEXT }, { "notify", TEXTS },
	                       { "allow_transfer", TEXTS } } },
	{ "dnssec", { { "verb", TEXT }, { "zone", TEXT },
	              { "algorithm", NUMBER }, { "split", FLAG },
	              { "keys_asked", FLAG },
	              { "force", FLAG }, { "ds_ttl", NUMBER },
	              { "role", TEXT }, { "step", TEXT } } },
};

#define COMMAND_COUNT (sizeof(commands) / sizeof(commands[0]))

static bool is_kind(const json_t *v, kind_t kind)
{
	switch (kind) {
	case TEXT:
		return json_is_string(v);
	case FLAG:
		return json_is_boolean(v);
	case NUMBER:
		return json_is_integer(v) && json_integer_value(v) >= 0;
	case TEXTS: {
		size_t i;
		const json_t *item;
		json_array_foreach(v, i, item) {
			if (!json_is_string(item)) {
				return false;
			}
		}
		return json_is_array(v);
	}
	}
	return false;
}

static const char *kind_name(kind_t kind)
{
	static const char *names[] = {
		[TEXT] = "a string", [FLAG] = "true or false",
		[NUMBER] = "a whole number of at least 0",
		[TEXTS] = "an array of strings",
	};
	return names[kind];
}

bool control_request_check(const json_t *req, char *err, size_t size)
{
	if (!json_is_object(req)) {
		snprintf(err, size, "the request is not a JSON object");
		return false;
	}
	const json_t *cmd = json_object_get(req, "command");
	if (!json_is_string(cmd)) {
		snprintf(err, size, "the request has no \"command\" string");
		return false;
	}
	size_t c = 0;
	while (c < COMMAND_COUNT &&
	       strcmp(commands[c].command, json_string_value(cmd)) != 0) {
		c++;
	}
	if (c == COMMAND_COUNT) {
		snprintf(err, size, "unknown command '%.64s'",
		         json_string_value(cmd));
		return false;
	}
	const char *key;
	const json_t *value;
	json_object_foreach((json_t *)req, key, value) {
		if (strcmp(key, "command") == 0) {
			continue;
		}
		const member_t *m = commands[c].members;
		while (m < commands[c].members + MEMBERS_MAX && m->key != NULL &&
		       strcmp(m->key, key) != 0) {
			m++;
		}
		if (m == commands[c].members + MEMBERS_MAX || m->key == NULL) {
			snprintf(err, size, "%s takes no member \"%.64s\"",
			         commands[c].command, key);
			return false;
		}
		if (!is_kind(value, m->kind)) {
			snprintf(err, size, "%s: \"%s\" must be %s",
			         commands[c].command, key, kind_name(m->kind));
			return false;
		}
	}
	return true;
}
