/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to builder/: one pass over the change log (see pass.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "builder/builder.h"

#define PASS_MAX_FULL 64

/* What the follower carries from pass to pass. */
typedef struct {
	records_store_t *rs;       /* Log reads and per-record builds. */
	records_store_t *full_rs;  /* The running full build's snapshot. */
	edge_store_t *es;
	size_t budget;             /* Nodes per full-build step. */
	uint64_t read_seq;         /* Log read up to here. */
	uint64_t applied;          /* Persisted: everything before is built. */
	builder_job_t *job;        /* Running full build, or NULL. */
	bool job_again;            /* Its zone changed again meanwhile. */
	builder_touch_t *deferred; /* Record events of the job's zone. */
	size_t deferred_count, deferred_cap;
	uint8_t full[PASS_MAX_FULL][KNOT_DNAME_MAXLEN]; /* Zones waiting. */
	uint64_t full_seq[PASS_MAX_FULL];
	unsigned full_count;
} pass_state_t;

/* Starts from the edge store's applied_seq. */
int pass_init(pass_state_t *st, records_store_t *rs, records_store_t *full_rs,
              edge_store_t *es, size_t budget);
void pass_deinit(pass_state_t *st);

/*
 * Reads the log past read_seq, runs per-record builds, and one step of the
 * running full build. Returns 1 when work remains (call again without
 * waiting), 0 when idle, or an error.
 */
int pass_run(pass_state_t *st);
