/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: what the DNS server serves of a zone, as the API
 * tells it (live.c). */
#pragma once

#include "api/internal.h"

/* The zone's quarantine as JSON (null: none). */
json_t *api_quarantine_json(api_req_t *req, int64_t zone_id);
/* false after a 409: the zone is quarantined and takes no writes. */
bool api_zone_writable(api_req_t *req, const records_zone_t *zone);
/* Reads ?wait= of a write ("live" only); false after a 400. */
bool api_wait_arg(api_req_t *req);
/* Runs a write unit; with ?wait=live it also keeps the commit's position
 * in req->live_seq, by which api_wait_live() tells a zone deleted after
 * the write from one not built yet. req->write_lost: the unit's own
 * failure message (if any) must not be answered, the result is the lost
 * transaction's. */
int api_write(api_req_t *req, writer_fn fn, void *ctx);
/* With ?wait=live: waits until the edge store serves req->version of
 * req->live_zone_id (or live-wait passes, or the zone was deleted after
 * the write: 202 and a note). */
void api_wait_live(api_req_t *req);
/* GET /zones/{id}/propagation. */
void api_propagation(api_req_t *req, const records_zone_t *zone);
/* POST /zones/{id}/retry; zone_json renders the zone. */
void api_zone_retry(api_req_t *req, const records_zone_t *zone,
                    json_t *(*zone_json)(api_req_t *, const records_zone_t *));
