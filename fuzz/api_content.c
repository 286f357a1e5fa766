/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: the API's record fields (name, type, content, priority) as
 * parsed into wire form, then rendered back (TXT content must read back
 * as the same rdata, in the form it was written in). Input: the three strings
 * separated by NUL bytes, the last byte the priority.
 */
#include <stdlib.h>
#include <string.h>

#include "api/content.h"
#include "api/txt.h"
#include "fuzz/fuzz.h"

static api_wire_t wire;
static char content_out[70000];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	return 0;
}

/* TXT content read back from its rendering is the same rdata, in the
 * same form: what a client writes, it reads back. */
static void check_txt_round_trip(const char *name, const char *type)
{
	static api_wire_t again;
	char err[300];
	/* Plain text that is not UTF-8 (no JSON string holds it) comes
	 * back quoted. */
	uint8_t form = wire.form == API_FORM_PLAIN &&
	               api_txt_plain_ok(wire.rdata, wire.rdata_len) ?
	               API_FORM_PLAIN : API_FORM_TEXT;
	if (api_content_parse((const uint8_t *)"\x07" "example\x00", name, type,
	                      content_out, -1, 300, &again, err,
	                      sizeof(err)) != 0 ||
	    again.rdata_len != wire.rdata_len || again.form != form ||
	    memcmp(again.rdata, wire.rdata, wire.rdata_len) != 0) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4 || size > 8192) {
		return 0;
	}
	char *buf = malloc(size + 1);
	memcpy(buf, data, size);
	buf[size] = '\0';
	const char *name = buf;
	const char *type = name + strlen(name) + 1;
	const char *content = (type < buf + size) ? type + strlen(type) + 1 : NULL;
	int priority = (int)data[size - 1] - 1;
	if (content != NULL && content < buf + size) {
		char err[300];
		if (api_content_parse((const uint8_t *)"\x07" "example\x00", name,
		                      type, content, priority, 300, &wire, err,
		                      sizeof(err)) == 0) {
			int prio;
			if (api_content_format(wire.owner, wire.type, wire.rdata,
			                       wire.rdata_len, wire.form, content_out,
			                       sizeof(content_out), &prio) == 0 &&
			    api_content_is_txt(wire.type)) {
				check_txt_round_trip(name, type);
			}
		}
	}
	free(buf);
	return 0;
}
