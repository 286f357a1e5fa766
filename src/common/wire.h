/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Byte cursor with a sticky error, for stored formats.
 *
 * Reads and writes are big-endian. The first out-of-bounds access sets
 * `error` and every later call does nothing, so a caller checks once at
 * the end (CZ-NIC/knot's wire_ctx does the same).
 */
#pragma once

#include <stdint.h>
#include <string.h>

#include "common/error.h"

typedef struct {
	uint8_t *pos;
	uint8_t *end;
	int error;
} zc_wire_t;

static inline zc_wire_t zc_wire_init(void *buf, size_t len)
{
	zc_wire_t w = { .pos = buf, .end = (uint8_t *)buf + len, .error = ZC_EOK };
	return w;
}

static inline size_t zc_wire_avail(const zc_wire_t *w)
{
	return w->error ? 0 : (size_t)(w->end - w->pos);
}

static inline int zc_wire_need(zc_wire_t *w, size_t n)
{
	if (w->error == ZC_EOK && (size_t)(w->end - w->pos) < n) {
		w->error = ZC_EFORMAT;
	}
	return w->error;
}

static inline void zc_wire_write(zc_wire_t *w, const void *src, size_t n)
{
	if (zc_wire_need(w, n) == ZC_EOK) {
		if (n > 0) {
			memcpy(w->pos, src, n);
		}
		w->pos += n;
	}
}

static inline void zc_wire_read(zc_wire_t *w, void *dst, size_t n)
{
	if (zc_wire_need(w, n) == ZC_EOK) {
		if (n > 0) {
			memcpy(dst, w->pos, n);
		}
		w->pos += n;
	}
}

/* Returns a pointer to the next n bytes and skips them (NULL on error). */
static inline const uint8_t *zc_wire_take(zc_wire_t *w, size_t n)
{
	if (zc_wire_need(w, n) != ZC_EOK) {
		return NULL;
	}
	const uint8_t *p = w->pos;
	w->pos += n;
	return p;
}

static inline void zc_wire_u8(zc_wire_t *w, uint8_t v)
{
	zc_wire_write(w, &v, 1);
}

static inline void zc_wire_u16(zc_wire_t *w, uint16_t v)
{
	uint8_t b[2] = { v >> 8, v };
	zc_wire_write(w, b, 2);
}

static inline void zc_wire_u32(zc_wire_t *w, uint32_t v)
{
	uint8_t b[4] = { v >> 24, v >> 16, v >> 8, v };
	zc_wire_write(w, b, 4);
}

static inline void zc_wire_u64(zc_wire_t *w, uint64_t v)
{
	zc_wire_u32(w, (uint32_t)(v >> 32));
	zc_wire_u32(w, (uint32_t)v);
}

static inline uint8_t zc_wire_get_u8(zc_wire_t *w)
{
	uint8_t b = 0;
	zc_wire_read(w, &b, 1);
	return b;
}

static inline uint16_t zc_wire_get_u16(zc_wire_t *w)
{
	uint8_t b[2] = { 0 };
	zc_wire_read(w, b, 2);
	return (uint16_t)(b[0] << 8 | b[1]);
}

static inline uint32_t zc_wire_get_u32(zc_wire_t *w)
{
	uint8_t b[4] = { 0 };
	zc_wire_read(w, b, 4);
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | b[3];
}

static inline uint64_t zc_wire_get_u64(zc_wire_t *w)
{
	uint64_t hi = zc_wire_get_u32(w);
	return hi << 32 | zc_wire_get_u32(w);
}
