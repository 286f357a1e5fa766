/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Notify targets and allow-transfer entries as text (see secondary.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/dname.h>

#include "common/error.h"
#include "transfer/secondary.h"

#define DEFAULT_PORT 53

/* Splits "WORD rest": copies the first blank-separated word into word
 * and returns what follows it (blanks skipped), or NULL when the word
 * does not fit. */
static const char *first_word(const char *text, char *word, size_t size)
{
	while (isspace((unsigned char)*text)) {
		text++;
	}
	size_t n = 0;
	while (text[n] != '\0' && !isspace((unsigned char)text[n])) {
		n++;
	}
	if (n >= size) {
		return NULL;
	}
	memcpy(word, text, n);
	word[n] = '\0';
	text += n;
	while (isspace((unsigned char)*text)) {
		text++;
	}
	return text;
}

static bool parse_port(const char *text, uint16_t *port)
{
	char *end;
	long v = strtol(text, &end, 10);
	if (text[0] == '\0' || *end != '\0' || v < 1 || v > 65535) {
		return false;
	}
	*port = (uint16_t)v;
	return true;
}

/* "ADDR", "ADDR:PORT", "[ADDR6]", "[ADDR6]:PORT" or a bare "ADDR6". */
static bool parse_addr(const char *text, struct sockaddr_storage *ss,
                       socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 1];
	uint16_t port = DEFAULT_PORT;
	const char *close = text[0] == '[' ? strchr(text, ']') : NULL;
	size_t host_len;
	if (close != NULL) {
		host_len = (size_t)(close - text - 1);
		text++;
		if (close[1] == ':' && !parse_port(close + 2, &port)) {
			return false;
		}
		if (close[1] != ':' && close[1] != '\0') {
			return false;
		}
	} else {
		const char *colon = strchr(text, ':');
		bool v4_port = colon != NULL && strchr(colon + 1, ':') == NULL;
		host_len = v4_port ? (size_t)(colon - text) : strlen(text);
		if (v4_port && !parse_port(colon + 1, &port)) {
			return false;
		}
	}
	if (host_len == 0 || host_len >= sizeof(host)) {
		return false;
	}
	memcpy(host, text, host_len);
	host[host_len] = '\0';
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		*len = sizeof(*in);
		return true;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
		return true;
	}
	return false;
}

/* "key NAME" (the rest of the text after the first word "key"). */
static bool parse_key(const char *rest, uint8_t *name)
{
	char word[KNOT_DNAME_TXT_MAXLEN + 2];
	const char *after = first_word(rest, word, sizeof(word));
	if (after == NULL || word[0] == '\0' || *after != '\0' ||
	    knot_dname_from_str(name, word, KNOT_DNAME_MAXLEN) == NULL) {
		return false;
	}
	knot_dname_to_lower(name);
	return true;
}

int secondary_notify_parse(const char *text, secondary_notify_t *out,
                           char *err, size_t err_size)
{
	memset(out, 0, sizeof(*out));
	char addr[INET6_ADDRSTRLEN + 16], word[8];
	const char *rest = first_word(text, addr, sizeof(addr));
	if (rest == NULL || !parse_addr(addr, &out->addr, &out->addr_len)) {
		snprintf(err, err_size, "'%s': want ADDR[:PORT] or [ADDR6]:PORT, "
		         "then optionally key NAME", text);
		return ZC_EUSAGE;
	}
	if (*rest == '\0') {
		return ZC_EOK;
	}
	rest = first_word(rest, word, sizeof(word));
	if (rest == NULL || strcmp(word, "key") != 0 ||
	    !parse_key(rest, out->key)) {
		snprintf(err, err_size, "'%s': after the address only "
		         "'key NAME' may follow", text);
		return ZC_EUSAGE;
	}
	out->has_key = true;
	return ZC_EOK;
}

void secondary_notify_format(const secondary_notify_t *t, bool with_key,
                             char *out, size_t size)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	bool v6 = t->addr.ss_family == AF_INET6;
	if (v6) {
		const struct sockaddr_in6 *in6 = (const void *)&t->addr;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	} else {
		const struct sockaddr_in *in = (const void *)&t->addr;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	}
	char key[KNOT_DNAME_TXT_MAXLEN + 1] = "";
	if (with_key && t->has_key) {
		knot_dname_to_str(key, t->key, sizeof(key));
		size_t len = strlen(key);
		if (len > 1 && key[len - 1] == '.') {
			key[len - 1] = '\0'; /* As written in the config. */
		}
	}
	snprintf(out, size, "%s%s%s:%u%s%s", v6 ? "[" : "", host, v6 ? "]" : "",
	         port, key[0] ? " key " : "", key);
}

int secondary_acl_parse(const char *text, zc_acl_t *acl,
                        secondary_keys_t *keys, char *err, size_t err_size)
{
	char word[INET6_ADDRSTRLEN + 8];
	const char *rest = first_word(text, word, sizeof(word));
	if (rest != NULL && strcmp(word, "key") == 0) {
		uint8_t name[KNOT_DNAME_MAXLEN];
		if (!parse_key(rest, name)) {
			snprintf(err, err_size, "'%s': want key NAME", text);
			return ZC_EUSAGE;
		}
		if (secondary_keys_has(keys, name)) {
			return ZC_EOK;
		}
		if (keys->count == SECONDARY_KEYS_MAX) {
			snprintf(err, err_size, "more than %d keys",
			         SECONDARY_KEYS_MAX);
			return ZC_EUSAGE;
		}
		memcpy(keys->name[keys->count++], name, knot_dname_size(name));
		return ZC_EOK;
	}
	if (rest == NULL || *rest != '\0' || zc_acl_add(acl, word) != ZC_EOK) {
		snprintf(err, err_size, "'%s': want ADDR[/PREFIX] or key NAME "
		         "(at most %d addresses)", text, ZC_ACL_MAX);
		return ZC_EUSAGE;
	}
	return ZC_EOK;
}

bool secondary_keys_has(const secondary_keys_t *keys, const uint8_t *name)
{
	if (keys == NULL) {
		return false;
	}
	uint8_t lower[KNOT_DNAME_MAXLEN];
	knot_dname_copy_lower(lower, name);
	for (size_t i = 0; i < keys->count; i++) {
		if (knot_dname_is_equal(keys->name[i], lower)) {
			return true;
		}
	}
	return false;
}
