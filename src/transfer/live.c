/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The transfer settings a reload may change (transfer_reconfigure()):
 * allow-transfer (addresses and keys) and the TSIG time window. The pool threads read them
 * under a lock once per request; a request is judged whole by the
 * settings it found.
 */
#include <string.h>

#include "transfer/internal.h"

void xfr_live_init(xfr_live_t *l, const transfer_config_t *cfg)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	xfr_live_set(l, cfg->allow_transfer, cfg->allow_transfer_keys,
	             cfg->tsig_max_fudge);
}

void xfr_live_deinit(xfr_live_t *l)
{
	pthread_mutex_destroy(&l->lock);
}

void xfr_live_set(xfr_live_t *l, const zc_acl_t *allow,
                  const secondary_keys_t *keys, unsigned max_fudge)
{
	pthread_mutex_lock(&l->lock);
	l->allow = allow != NULL ? *allow : (zc_acl_t){ .count = 0 };
	if (keys != NULL) {
		l->keys = *keys;
	} else {
		l->keys.count = 0;
	}
	l->max_fudge = max_fudge;
	pthread_mutex_unlock(&l->lock);
}

unsigned xfr_live_max_fudge(const xfr_worker_t *w)
{
	if (w->live == NULL) {
		return w->cfg->tsig_max_fudge;
	}
	pthread_mutex_lock(&w->live->lock);
	unsigned fudge = w->live->max_fudge;
	pthread_mutex_unlock(&w->live->lock);
	return fudge;
}

bool xfr_live_allows(const xfr_worker_t *w,
                     const struct sockaddr_storage *from)
{
	if (w->live == NULL) {
		return w->cfg->allow_transfer != NULL &&
		       zc_acl_match(w->cfg->allow_transfer, from);
	}
	pthread_mutex_lock(&w->live->lock);
	bool ok = zc_acl_match(&w->live->allow, from);
	pthread_mutex_unlock(&w->live->lock);
	return ok;
}

bool xfr_live_allows_key(const xfr_worker_t *w, const uint8_t *key_name)
{
	if (w->live == NULL) {
		return secondary_keys_has(w->cfg->allow_transfer_keys, key_name);
	}
	pthread_mutex_lock(&w->live->lock);
	bool ok = secondary_keys_has(&w->live->keys, key_name);
	pthread_mutex_unlock(&w->live->lock);
	return ok;
}
