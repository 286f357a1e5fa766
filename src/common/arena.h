/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Request arena: a bump allocator reset when a request ends.
 *
 * A query, a builder batch or an import chunk allocates from one arena and
 * never frees objects one by one. The arena grows by chained blocks; after
 * a reset the first block is kept, so steady-state requests do no malloc.
 * zc_arena_mm() exposes it to libknot as a knot_mm_t.
 */
#pragma once

#include <stddef.h>
#include <libknot/mm_ctx.h>

typedef struct zc_arena_block zc_arena_block_t;

typedef struct {
	zc_arena_block_t *head;   /* Block being filled. */
	size_t block_size;        /* Default size of a new block. */
	knot_mm_t mm;             /* libknot view of this arena. */
} zc_arena_t;

/* Prepares an arena in caller storage; blocks are block_size bytes. */
void zc_arena_init(zc_arena_t *arena, size_t block_size);

/* Releases every block. */
void zc_arena_deinit(zc_arena_t *arena);

/* Returns 16-byte aligned memory, or NULL when out of memory. */
void *zc_arena_alloc(zc_arena_t *arena, size_t size);

/* Forgets every allocation; keeps the first block for reuse. */
void zc_arena_reset(zc_arena_t *arena);

/* Returns the knot_mm_t that allocates from this arena. */
static inline knot_mm_t *zc_arena_mm(zc_arena_t *arena)
{
	return &arena->mm;
}

/* Allocates from a knot_mm_t, or from the heap when mm is NULL. */
void *zc_mm_alloc(knot_mm_t *mm, size_t size);
