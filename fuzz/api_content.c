/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: the API's record fields (name, type, content, priority) as
 * parsed into wire form, then rendered back. Input: the three strings
 * separated by NUL bytes, the last byte the priority.
 */
#include <stdlib.h>
#include <string.h>

#include "api/content.h"
#include "fuzz/fuzz.h"

static api_wire_t wire;
static char content_out[70000];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	return 0;
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
			api_content_format(wire.owner, wire.type, wire.rdata,
			                   wire.rdata_len, content_out,
			                   sizeof(content_out), &prio);
		}
	}
	free(buf);
	return 0;
}
