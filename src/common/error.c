/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Names for every code of zonecast's error space (see error.h). */
#include <errno.h>
#include <string.h>
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
	if (code <= -900 && code >= -1000) {
		return knot_strerror(code);
	}
	if (code < 0 && code > -900) {
		return strerror(-code);
	}
	return "unknown error";
}

bool zc_storage_error(int code)
{
	return code == -ENOSPC || code == -EROFS || code == -EACCES;
}
