/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to cli/: command-line arguments as JSON strings, for the
 * requests the command sends (admin writes over the control socket, the
 * HTTP API). A JSON string is UTF-8 text, and an argument is any octets:
 * jansson gave NULL for one that is not UTF-8, and the member went
 * missing unsaid (`token create --zone` with a raw 0xE9 made a token for
 * every zone) or the request did (the command ended with no message).
 */
#pragma once

#include <stdbool.h>
#include <jansson.h>

/* A domain name as typed: UTF-8 text as it is (a label in Unicode is an
 * internationalized one, stored in Punycode where it is read:
 * dns/name_text.h), else in ASCII, its octets past ASCII written \DDD (the
 * same octets: "\xe9.test" is "\233.test"). NULL: out of memory. */
json_t *cli_json_name(const char *text);

/* text as a JSON string; NULL after "zonecast CMD: WHAT: not UTF-8 text"
 * on stderr. */
json_t *cli_json_text(const char *cmd, const char *what, const char *text);

/* Sets obj[key] to value, which it takes; false (and obj left as it was)
 * when value is NULL (the caller said why). */
bool cli_json_set(json_t *obj, const char *key, json_t *value);
