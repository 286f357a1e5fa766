/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to api/: the group committer.
 *
 * One thread owns the write connection. Callers submit units of work and
 * block; the thread takes every unit queued, runs each in a savepoint of
 * one transaction (a failing unit is rolled back alone), commits once
 * (one fsync for all), reports each unit's result, and wakes the builder.
 * While it commits, new units queue up: under load batches grow by
 * themselves, with no timer.
 */
#pragma once

#include "builder/builder.h"
#include "records/records.h"

typedef struct api_writer api_writer_t;

/* A unit of work: runs inside a savepoint; returns ZC_EOK or an error. */
typedef int (*api_unit_fn)(records_store_t *rs, void *ctx);

int api_writer_start(const char *data_dir, builder_follower_t *follower,
                     api_writer_t **out);
void api_writer_stop(api_writer_t *w);

/* Runs fn(ctx) in the next group commit and waits for the outcome: the
 * unit's own error, or the commit's. ZC_EOK means durably committed. */
int api_writer_run(api_writer_t *w, api_unit_fn fn, void *ctx);
