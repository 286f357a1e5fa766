/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Names for every code of zonecast's error space (see error.h). */
#include <errno.h>
#include <string.h>
#include <libdnssec/error.h>
#include <libknot/errcode.h>
#include <libknot/error.h>

#include "common/error.h"

const char *zc_strerror(int code)
{
	switch (code) {
	case ZC_EOK:
		return "OK";
#define ZC_ERROR_CASE(name, value, text) case value: return text;
	ZC_ERROR_MAP(ZC_ERROR_CASE)
#undef ZC_ERROR_CASE
	default:
		break;
	}
	/* libknot's own codes are -1000..-501 (with -errno ones below
	 * them), libdnssec's -1500..-1001 (docs in their error headers). */
	if (code >= KNOT_ERROR_MIN && code <= KNOT_ERROR_MAX) {
		return knot_strerror(code);
	}
	if (code >= DNSSEC_ERROR_MIN && code <= DNSSEC_ERROR_MAX) {
		return dnssec_strerror(code);
	}
	if (code < 0 && code > KNOT_ERROR_MAX) {
		return strerror(-code);
	}
	return "unknown error";
}

bool zc_storage_error(int code)
{
	return code == -ENOSPC || code == -EROFS || code == -EACCES;
}
