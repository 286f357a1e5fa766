/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Bump allocator with chained blocks (see arena.h). */
#include <stdint.h>
#include <stdlib.h>

#include "common/arena.h"

struct zc_arena_block {
	zc_arena_block_t *next;
	size_t size;
	size_t used;
	_Alignas(16) unsigned char data[];
};

static void *mm_alloc(void *ctx, size_t size)
{
	return zc_arena_alloc(ctx, size);
}

static void mm_free(void *ptr)
{
	(void)ptr; /* Arena memory is released by zc_arena_reset(). */
}

void zc_arena_init(zc_arena_t *arena, size_t block_size)
{
	arena->head = NULL;
	arena->block_size = block_size;
	arena->mm.ctx = arena;
	arena->mm.alloc = mm_alloc;
	arena->mm.free = mm_free;
}

void zc_arena_deinit(zc_arena_t *arena)
{
	zc_arena_block_t *b = arena->head;
	while (b != NULL) {
		zc_arena_block_t *next = b->next;
		free(b);
		b = next;
	}
	arena->head = NULL;
}

void *zc_arena_alloc(zc_arena_t *arena, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	zc_arena_block_t *b = arena->head;
	if (b == NULL || b->size - b->used < size) {
		size_t bsize = size > arena->block_size ? size : arena->block_size;
		zc_arena_block_t *nb = malloc(sizeof(*nb) + bsize);
		if (nb == NULL) {
			return NULL;
		}
		nb->size = bsize;
		nb->used = 0;
		nb->next = b;
		arena->head = nb;
		b = nb;
	}
	void *ptr = b->data + b->used;
	b->used += size;
	return ptr;
}

void zc_arena_reset(zc_arena_t *arena)
{
	zc_arena_block_t *b = arena->head;
	if (b == NULL) {
		return;
	}
	if (b->next == NULL) {
		b->used = 0;
		return;
	}
	/* The request outgrew one block: replace the chain with one block as
	 * large as the whole chain, so the steady state needs no malloc. */
	size_t total = 0;
	while (b != NULL) {
		zc_arena_block_t *next = b->next;
		total += b->size;
		free(b);
		b = next;
	}
	arena->head = NULL;
	size_t saved = arena->block_size;
	arena->block_size = total;
	if (zc_arena_alloc(arena, 0) != NULL || arena->head != NULL) {
		arena->head->used = 0;
	}
	arena->block_size = saved > total ? saved : total;
}

void *zc_mm_alloc(knot_mm_t *mm, size_t size)
{
	if (mm == NULL) {
		return malloc(size);
	}
	return mm->alloc(mm->ctx, size);
}
