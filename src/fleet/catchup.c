/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A leader's own build against the records store (fleet.h, "Catching
 * up"): a new leader waits for its build to reach the store's head as it
 * was when the lead was taken, before its history begins; a leader whose
 * build has stopped moving while the store moved on steps down; a node
 * that gave the lead back for either waits for its build before it tries
 * again. The build's progress is its applied position and its edge
 * store's commit: a full build in steps moves the commit at each step,
 * the applied position only at its end.
 */
#include <inttypes.h>

#include "common/error.h"
#include "common/log.h"
#include "fleet/primary.h"

#define CATCH_UP_MS 3000 /* the longest a new leader waits for its build */
#define STALL_MS 3000    /* a leader's build stuck this long: steps down */
#define CHECK_MS 500     /* a leader looks at its build this often */
#define NAP_MS 5         /* a new leader looks at its build this often */
#define WAIT_NAP_MS 100  /* a node waiting to lead again, this often */

/* Whether the leadership can tell the records store's head and this
 * node's build (fleet.h: head and built, both or neither). */
static bool watching(const fleet_primary_t *fp)
{
	return fp->lead.head != NULL && fp->lead.built != NULL;
}

/* Where this node's build is; false when the edge store cannot say. */
static bool build_pos(fleet_primary_t *fp, uint64_t *built, uint64_t *commit)
{
	edge_repl_pos_t pos;
	if (fp->lead.built(fp->lead.ctx, built) != ZC_EOK ||
	    edge_repl_pos(fp->es, &pos) != ZC_EOK) {
		return false;
	}
	*commit = pos.commit;
	return true;
}

int fleet_catch_up(fleet_primary_t *fp, uint64_t term, uint64_t *behind)
{
	*behind = 0;
	if (!watching(fp)) {
		return ZC_EOK;
	}
	uint64_t head = 0, built = 0, commit = 0;
	int ret = fp->lead.head(fp->lead.ctx, &head);
	if (ret != ZC_EOK) {
		return ret;
	}
	int64_t start = fleet_now_ms();
	bool known = false, waited = false;
	while (!fp->stop && fp->lead.held(fp->lead.ctx) &&
	       !((known = build_pos(fp, &built, &commit)) && built >= head)) {
		if (fleet_now_ms() - start >= CATCH_UP_MS) {
			zc_warn("fleet: term %" PRIu64 " taken, but this node's build "
			        "is behind the records store (applied %" PRIu64 " of %"
			        PRIu64 ") after %d ms; giving the lead back until it "
			        "catches up", term, built, head, CATCH_UP_MS);
			*behind = head;
			return ZC_EBUSY;
		}
		fleet_sleep_ms(NAP_MS);
		waited = true;
	}
	if (!known || built < head) {
		return fp->stop ? ZC_EBUSY : ZC_EUNAVAILABLE; /* lead lost */
	}
	if (waited) {
		zc_info("fleet: term %" PRIu64 ": this node's build reached the "
		        "records store's head after %" PRId64 " ms", term,
		        fleet_now_ms() - start);
	}
	return ZC_EOK;
}

void fleet_build_watch_start(fleet_primary_t *fp, fleet_build_watch_t *w)
{
	*w = (fleet_build_watch_t){ .moved_ms = fleet_now_ms() };
	w->checked_ms = w->moved_ms;
	if (watching(fp)) {
		build_pos(fp, &w->built, &w->commit);
	}
}

bool fleet_build_stalled(fleet_primary_t *fp, fleet_build_watch_t *w,
                         uint64_t *head)
{
	int64_t now = fleet_now_ms();
	if (!watching(fp) || now - w->checked_ms < CHECK_MS) {
		return false;
	}
	w->checked_ms = now;
	uint64_t built, commit;
	if (!build_pos(fp, &built, &commit)) {
		return false; /* No verdict: a store that cannot be read fails
		               * publishing too. */
	}
	if (built != w->built || commit != w->commit) {
		w->built = built;
		w->commit = commit;
		w->moved_ms = now;
		return false;
	}
	if (fp->lead.head(fp->lead.ctx, head) != ZC_EOK) {
		return false; /* Leadership lost: held() says so. */
	}
	if (*head <= built) {
		w->moved_ms = now; /* Caught up: nothing to build. */
		return false;
	}
	if (now - w->moved_ms < STALL_MS) {
		return false;
	}
	zc_warn("fleet: this node's build has not moved for %" PRId64 " ms "
	        "while the records store did (applied %" PRIu64 " of %" PRIu64
	        ")", now - w->moved_ms, built, *head);
	return true;
}

void fleet_wait_built(fleet_primary_t *fp, uint64_t pos)
{
	if (pos == 0 || !watching(fp)) {
		return;
	}
	uint64_t built = 0;
	int64_t start = fleet_now_ms();
	bool said = false;
	while (!fp->stop && (fp->lead.built(fp->lead.ctx, &built) != ZC_EOK ||
	                     built < pos)) {
		if (!said) {
			zc_info("fleet: this node leads again only once its build "
			        "reaches %" PRIu64 " (at %" PRIu64 ")", pos, built);
			said = true;
		}
		fleet_sleep_ms(WAIT_NAP_MS);
	}
	if (said && !fp->stop) {
		zc_info("fleet: this node's build caught up after %" PRId64
		        " ms: it may lead again", fleet_now_ms() - start);
	}
}
