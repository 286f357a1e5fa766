/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The primary's fleet (see fleet.h): turns recording on (or, with
 * leadership, off until the publisher leads), starts the publisher (which
 * connects, then starts the receipts' watcher), and stops them in order.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "common/error.h"
#include "common/log.h"
#include "fleet/primary.h"

static void on_outbox(void *ctx)
{
	fleet_primary_t *fp = ctx;
	pthread_mutex_lock(&fp->lock);
	fp->pending = true;
	pthread_cond_signal(&fp->wake);
	pthread_mutex_unlock(&fp->lock);
}

int fleet_primary_start(const fleet_config_t *cfg,
                        const fleet_leadership_t *leadership,
                        edge_store_t *es, fleet_primary_t **out)
{
	fleet_primary_t *fp = calloc(1, sizeof(*fp));
	if (fp == NULL) {
		return ZC_ENOSPACE;
	}
	fp->ring = calloc(FLEET_RING, sizeof(*fp->ring));
	fp->cfg = *cfg;
	fleet_config_defaults(&fp->cfg);
	fp->es = es;
	if (leadership != NULL) {
		fp->lead = *leadership;
	}
	pthread_mutex_init(&fp->lock, NULL);
	pthread_cond_init(&fp->wake, NULL);
	pthread_cond_init(&fp->changed, NULL);
	int ret = fp->ring != NULL ? fleet_names(fp->cfg.prefix, &fp->names) :
	                             ZC_ENOSPACE;
	if (ret == ZC_EOK && (uint64_t)fp->cfg.stream_max_bytes <
	                     2 * fp->cfg.snapshot_bytes) {
		/* Edges following the stream would lose messages that no
		 * snapshot covers yet, and load snapshots in a loop. */
		zc_error("fleet: fleet-stream-max-mib must be at least twice "
		         "fleet-snapshot-mib");
		ret = ZC_EINVAL_CONFIG;
	}
	edge_repl_pos_t pos;
	if (ret == ZC_EOK) {
		/* A node that does not lead yet records nothing: when it
		 * leads, its term begins a history of its own. */
		ret = edge_repl_enable(es, fp->lead.take == NULL, &pos);
	}
	if (ret == ZC_EOK) {
		fp->epoch = pos.epoch;
		fp->leading = fp->lead.take == NULL;
		fp->published = 0;
		edge_repl_on_outbox(es, on_outbox, fp);
		fp->publisher_started = pthread_create(&fp->publisher, NULL,
		                                       fleet_publisher_main, fp) == 0;
		ret = fp->publisher_started ? ZC_EOK : ZC_ENOSPACE;
	}
	if (ret != ZC_EOK) {
		fleet_primary_stop(fp);
		return ret;
	}
	if (fp->leading) {
		zc_info("fleet: publishing to %s (history %016" PRIx64 ", commit %"
		        PRIu64 ")", fp->cfg.urls, pos.epoch, pos.commit);
	}
	*out = fp;
	return ZC_EOK;
}

void fleet_leading(fleet_primary_t *fp, bool *leading, uint64_t *term)
{
	pthread_mutex_lock(&fp->lock);
	*leading = fp->leading;
	*term = fp->term;
	pthread_mutex_unlock(&fp->lock);
}

void fleet_primary_stop(fleet_primary_t *fp)
{
	if (fp == NULL) {
		return;
	}
	pthread_mutex_lock(&fp->lock);
	fp->stop = true;
	pthread_cond_broadcast(&fp->wake);
	pthread_mutex_unlock(&fp->lock);
	/* The publisher first: it sends what it holds, then nothing waits. */
	if (fp->publisher_started) {
		pthread_join(fp->publisher, NULL);
	}
	pthread_mutex_lock(&fp->lock);
	if (fp->nc != NULL) {
		natsConnection_Close(fp->nc);
	}
	if (fp->wnc != NULL) {
		natsConnection_Close(fp->wnc);
	}
	pthread_mutex_unlock(&fp->lock);
	if (fp->watcher_started) {
		pthread_join(fp->watcher, NULL);
	}
	edge_repl_on_outbox(fp->es, NULL, NULL);
	jsCtx_Destroy(fp->js);
	natsConnection_Destroy(fp->nc);
	jsCtx_Destroy(fp->wjs);
	natsConnection_Destroy(fp->wnc);
	pthread_cond_destroy(&fp->wake);
	pthread_cond_destroy(&fp->changed);
	pthread_mutex_destroy(&fp->lock);
	free(fp->ring);
	free(fp);
}
