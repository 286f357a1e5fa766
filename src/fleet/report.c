/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * An edge's reports (see fleet.h): its position (history, commit, stream
 * sequence), time, instance and leader term, put to the bucket under its name after
 * each applied commit and every second.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <jansson.h>

#include "common/error.h"
#include "common/log.h"
#include "fleet/edge_node.h"

#define REPORT_EVERY_MS 1000
#define RETRY_MS 250

static void report(fleet_edge_t *fe, kvStore *kv)
{
	pthread_mutex_lock(&fe->lock);
	uint64_t epoch = fe->epoch, commit = fe->commit, seq = fe->seq;
	fe->dirty = false;
	pthread_mutex_unlock(&fe->lock);
	char e[17];
	snprintf(e, sizeof(e), "%016" PRIx64, epoch);
	/* The term tells the leader when this edge is fenced off it (it
	 * loaded a snapshot of a higher term: publisher_history.c,
	 * pub_rise_above()). */
	json_t *j = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "name",
	                      fe->cfg.name, "epoch", e, "commit",
	                      (json_int_t)commit, "seq", (json_int_t)seq,
	                      "time_ms", (json_int_t)fleet_now_ms(),
	                      "instance", (json_int_t)(fe->instance >> 1),
	                      "term", (json_int_t)fe->term);
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (text != NULL) {
		natsStatus s = kvStore_PutString(NULL, kv, fe->cfg.name, text);
		free(text);
		if (s != NATS_OK && zc_log_due(&fe->report_logged, 10000)) {
			zc_warn("fleet: cannot report to %s: %s (%s)", fe->names.bucket,
			        natsStatus_GetText(s), nats_GetLastError(NULL));
		}
	}
}

/* Reports right after each applied commit and every second, on a
 * connection of its own, replaced (and its bucket handle with it) when
 * the library closes it. */
void *fleet_reporter_main(void *arg)
{
	fleet_edge_t *fe = arg;
	kvStore *kv = NULL;
	fleet_renew_t renew = { 0 };
	if (fleet_connect_retry(&fe->cfg, &fe->stop, &fe->lock, &fe->rnc,
	                        &fe->rjs) != ZC_EOK) {
		return NULL;
	}
	while (!fe->stop) {
		if (fe->rnc == NULL || fleet_conn_closed(fe->rnc)) {
			kvStore_Destroy(kv);
			kv = NULL;
			fleet_conn_renew(&fe->cfg, "reporter", &fe->stop, &fe->lock,
			                 &fe->rnc, &fe->rjs, &renew);
			continue;
		}
		if (kv == NULL && js_KeyValue(&kv, fe->rjs, fe->names.bucket) !=
		                  NATS_OK) {
			kv = NULL;
			fleet_sleep_ms(RETRY_MS);
			continue;
		}
		report(fe, kv);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += REPORT_EVERY_MS / 1000;
		pthread_mutex_lock(&fe->lock);
		while (!fe->dirty && !fe->stop) {
			if (pthread_cond_timedwait(&fe->changed, &fe->lock, &ts) != 0) {
				break;
			}
		}
		pthread_mutex_unlock(&fe->lock);
	}
	kvStore_Destroy(kv);
	return NULL;
}

