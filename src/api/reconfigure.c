/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The API settings a reload changes on a running API: the body limit and
 * the ?wait=live bound, read per request with relaxed atomic loads. The
 * daemon's own settings (connections, timeouts) are fixed at its start.
 */
#include "api/internal.h"

void api_reconfigure(api_t *api, size_t max_body, unsigned live_wait_ms)
{
	if (api == NULL) {
		return;
	}
	__atomic_store_n(&api->cfg.max_body, max_body, __ATOMIC_RELAXED);
	__atomic_store_n(&api->cfg.live_wait_ms, live_wait_ms,
	                 __ATOMIC_RELAXED);
}
