/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The transfer service's configuration (transfer_start(), transfer.h),
 * in a header of its own so that the files behind transfer.h
 * (internal.h) need it without needing transfer.h: the includes stay a
 * graph without cycles.
 */
#pragma once

#include "common/acl.h"
#include "edge/edge.h"
#include "transfer/secondary.h"

/* Transfers queued or running at once, by default. */
#define TRANSFER_DEFAULT_CONCURRENT 16

typedef struct {
	const char *data_dir;            /* Records store (keys, journal). */
	edge_store_t *edge;
	const zc_acl_t *allow_transfer;  /* NULL: signed requests only. */
	const secondary_keys_t *allow_transfer_keys; /* Any zone; NULL: none. */
	unsigned max_concurrent;         /* 0: TRANSFER_DEFAULT_CONCURRENT */
	unsigned tsig_max_fudge;         /* Largest TSIG time window, seconds
	                                    (0: DNS_TSIG_MAX_FUDGE_DEFAULT). */
} transfer_config_t;
