/* SPDX-License-Identifier: GPL-3.0-or-later */
/* GET /fleet: the primary's position and every edge's (zonecast fleet
 * status reads it). */
#include <inttypes.h>
#include <stdio.h>

#include "api/fleet.h"
#include "api/format.h"
#include "api/reply.h"
#include "fleet/fleet.h"

#define MAX_EDGES 256

void api_fleet(api_req_t *req, char **parts, int count)
{
	(void)parts;
	/* router.c's table lets only GET /fleet through. */
	if (count != 1) {
		api_error(req, 404, 7003, "url: no such resource");
		return;
	}
	if (strcmp(req->method, "GET") != 0) {
		api_method_not_allowed(req);
		return;
	}
	if (req->token_zone != 0) {
		api_error(req, 403, 9109, "token: the fleet needs a token valid "
		          "for every zone");
		return;
	}
	fleet_primary_t *fleet = req->api->cfg.fleet;
	if (fleet == NULL) {
		req->result = json_pack("{s:b, s:[]}", "enabled", false, "edges");
		return;
	}
	uint64_t epoch, committed, published;
	bool connected;
	fleet_position(fleet, &epoch, &committed, &published, &connected);
	static _Thread_local fleet_edge_status_t st[MAX_EDGES];
	size_t n = fleet_edges(fleet, 0, 0, st, MAX_EDGES);
	json_t *edges = json_array();
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(edges, json_pack(
			"{s:s, s:b, s:b, s:b, s:I, s:b, s:I, s:I, s:I, s:o}",
			"name", st[i].name,
			"up", st[i].up, "current", st[i].live,
			"duplicate", st[i].duplicate,
			"term", (json_int_t)st[i].term,
			"same_history", st[i].same_history,
			"commit", (json_int_t)st[i].commit,
			"lag_commits", (json_int_t)st[i].lag_commits,
			"lag_ms", (json_int_t)st[i].lag_ms,
			"last_seen", api_time(st[i].last_seen_ms)));
	}
	char e[17];
	snprintf(e, sizeof(e), "%016" PRIx64, epoch);
	bool leading;
	uint64_t term;
	fleet_leading(fleet, &leading, &term);
	/* While the primary cannot see its edges' reports, their up and
	 * current say nothing: why (null when it sees them). */
	char unseen[160] = "";
	bool seen = fleet_edges_seen(fleet, unseen, sizeof(unseen));
	req->result = json_pack("{s:b, s:b, s:I, s:s, s:I, s:I, s:b, s:o, s:o}",
	                        "enabled", true, "leading", leading,
	                        "term", (json_int_t)term,
	                        "history", e, "commit", (json_int_t)committed,
	                        "published", (json_int_t)published,
	                        "connected", connected, "edges", edges,
	                        "edges_unknown", seen ? json_null() :
	                        json_string(unseen));
}
