/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The NATS side shared by the primary and the edges: names, connecting
 * (authentication, TLS, reconnecting for ever), the streams and bucket.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "common/log.h"
#include "fleet/internal.h"

#define MAX_URLS 16

void fleet_config_defaults(fleet_config_t *cfg)
{
	if (cfg->prefix == NULL || cfg->prefix[0] == '\0') {
		cfg->prefix = "zonecast";
	}
	if (cfg->snapshot_bytes == 0) {
		cfg->snapshot_bytes = (uint64_t)256 << 20;
	}
	if (cfg->stream_max_bytes == 0) {
		cfg->stream_max_bytes = (int64_t)4 << 30;
	}
	if (cfg->replicas <= 0) {
		cfg->replicas = 1;
	}
	if (cfg->edge_timeout_ms == 0) {
		cfg->edge_timeout_ms = 5000;
	}
}

int fleet_names(const char *prefix, fleet_names_t *n)
{
	for (const char *p = prefix; *p != '\0'; p++) {
		bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		          (*p >= '0' && *p <= '9') || *p == '_';
		if (!ok) {
			return ZC_EINVAL_CONFIG;
		}
	}
	if (prefix[0] == '\0' || strlen(prefix) > 64) {
		return ZC_EINVAL_CONFIG;
	}
	snprintf(n->txn_stream, sizeof(n->txn_stream), "%s-txn", prefix);
	snprintf(n->txn_subject, sizeof(n->txn_subject), "%s.txn", prefix);
	snprintf(n->snap_stream, sizeof(n->snap_stream), "%s-snap", prefix);
	snprintf(n->snap_head, sizeof(n->snap_head), "%s.snap.head", prefix);
	snprintf(n->snap_data, sizeof(n->snap_data), "%s.snap.data", prefix);
	snprintf(n->bucket, sizeof(n->bucket), "%s-edges", prefix);
	return ZC_EOK;
}

natsStatus fleet_expect_last(natsMsg *msg, const char *header, uint64_t seq)
{
	char num[32];
	snprintf(num, sizeof(num), "%" PRIu64, seq);
	return natsMsgHeader_Set(msg, header, num);
}

int64_t fleet_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t fleet_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void fleet_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* The last failure fleet_nats_error() saw in this thread (for the
 * warnings that say why publishing or a snapshot paused). */
static _Thread_local char last_error[256];

int fleet_nats_error(natsStatus s, jsErrCode jerr, const char *what)
{
	if (s == NATS_OK) {
		return ZC_EOK;
	}
	const char *detail = nats_GetLastError(NULL);
	if (jerr != 0) {
		snprintf(last_error, sizeof(last_error), "%s: %s (JetStream error "
		         "%d%s%s)", what, natsStatus_GetText(s), (int)jerr,
		         detail ? ": " : "", detail ? detail : "");
	} else {
		snprintf(last_error, sizeof(last_error), "%s: %s%s%s%s", what,
		         natsStatus_GetText(s), detail ? " (" : "",
		         detail ? detail : "", detail ? ")" : "");
	}
	zc_debug("nats: %s", last_error);
	return ZC_ENATS;
}

const char *fleet_nats_last_error(void)
{
	return last_error[0] != '\0' ? last_error : "no detail";
}

size_t fleet_payload_max(natsConnection *nc)
{
	int64_t max = nc != NULL ? natsConnection_GetMaxPayload(nc) : 0;
	/* Headers (ids, positions, the fence) go in the same limit. */
	size_t room = max > (int64_t)FLEET_HEADER_ROOM * 2 ?
	              (size_t)max - FLEET_HEADER_ROOM :
	              max > 0 ? (size_t)max / 2 : EDGE_REPL_PART_MAX;
	return room < EDGE_REPL_PART_MAX ? room : EDGE_REPL_PART_MAX;
}

static void on_disconnected(natsConnection *nc, void *ctx)
{
	(void)nc;
	zc_warn("nats: %s: disconnected, reconnecting", (const char *)ctx);
}

static void on_reconnected(natsConnection *nc, void *ctx)
{
	(void)nc;
	zc_info("nats: %s: reconnected", (const char *)ctx);
}

/* Splits the comma-separated list into servers (in place). */
static int split_urls(char *list, const char **urls)
{
	int n = 0;
	for (char *save = NULL, *u = strtok_r(list, ",", &save);
	     u != NULL && n < MAX_URLS; u = strtok_r(NULL, ",", &save)) {
		while (*u == ' ') {
			u++;
		}
		if (*u != '\0') {
			urls[n++] = u;
		}
	}
	return n;
}

static natsStatus set_auth(natsOptions *o, const fleet_config_t *cfg)
{
	natsStatus s = NATS_OK;
	if (cfg->creds_file != NULL && cfg->creds_file[0] != '\0') {
		s = natsOptions_SetUserCredentialsFromFiles(o, cfg->creds_file,
		                                            NULL);
	}
	if (s == NATS_OK && cfg->token != NULL && cfg->token[0] != '\0') {
		s = natsOptions_SetToken(o, cfg->token);
	}
	if (s == NATS_OK && cfg->user != NULL && cfg->user[0] != '\0') {
		s = natsOptions_SetUserInfo(o, cfg->user, cfg->password);
	}
	bool tls = cfg->tls || (cfg->tls_ca != NULL && cfg->tls_ca[0] != '\0');
	if (s == NATS_OK && tls) {
		s = natsOptions_SetSecure(o, true);
	}
	if (s == NATS_OK && cfg->tls_ca != NULL && cfg->tls_ca[0] != '\0') {
		s = natsOptions_LoadCATrustedCertificates(o, cfg->tls_ca);
	}
	if (s == NATS_OK && cfg->tls_cert != NULL && cfg->tls_cert[0] != '\0') {
		s = natsOptions_LoadCertificatesChain(o, cfg->tls_cert,
		                                      cfg->tls_key);
	}
	return s;
}

int fleet_connect(const fleet_config_t *cfg, natsConnection **nc, jsCtx **js)
{
	char *list = strdup(cfg->urls != NULL ? cfg->urls : "");
	const char *urls[MAX_URLS];
	int count = list != NULL ? split_urls(list, urls) : 0;
	if (count == 0) {
		free(list);
		zc_error("nats: no server address given");
		return ZC_EINVAL_CONFIG;
	}
	natsOptions *o = NULL;
	natsStatus s = natsOptions_Create(&o);
	if (s == NATS_OK) {
		s = natsOptions_SetServers(o, urls, count);
	}
	if (s == NATS_OK) {
		s = natsOptions_SetName(o, cfg->name ? cfg->name : "zonecast");
	}
	if (s == NATS_OK) {
		s = natsOptions_SetMaxReconnect(o, -1);
	}
	if (s == NATS_OK) {
		s = natsOptions_SetReconnectWait(o, 250);
	}
	if (s == NATS_OK) {
		s = natsOptions_SetTimeout(o, 2000);
	}
	if (s == NATS_OK) {
		s = natsOptions_SetDisconnectedCB(o, on_disconnected,
		                                  (void *)cfg->urls);
	}
	if (s == NATS_OK) {
		s = natsOptions_SetReconnectedCB(o, on_reconnected,
		                                 (void *)cfg->urls);
	}
	if (s == NATS_OK) {
		s = set_auth(o, cfg);
	}
	if (s != NATS_OK) {
		zc_error("nats: invalid connection settings: %s (%s)",
		         natsStatus_GetText(s), nats_GetLastError(NULL));
		natsOptions_Destroy(o);
		free(list);
		return ZC_EINVAL_CONFIG;
	}
	s = natsConnection_Connect(nc, o);
	natsOptions_Destroy(o);
	free(list);
	if (s != NATS_OK) {
		*nc = NULL;
		zc_debug("nats: cannot connect to %s: %s (%s)", cfg->urls,
		         natsStatus_GetText(s), nats_GetLastError(NULL));
		return s == NATS_CONNECTION_AUTH_FAILED || s == NATS_NOT_PERMITTED ?
		       ZC_EACCES_NATS : ZC_ENATS;
	}
	jsOptions jo;
	jsOptions_Init(&jo);
	jo.Wait = 5000;
	s = natsConnection_JetStream(js, *nc, &jo);
	if (s != NATS_OK) {
		natsConnection_Destroy(*nc);
		*nc = NULL;
		return fleet_nats_error(s, 0, "jetstream context");
	}
	return ZC_EOK;
}

static int ensure_stream(jsCtx *js, jsStreamConfig *sc)
{
	jsErrCode jerr = 0;
	jsStreamInfo *si = NULL;
	natsStatus s = js_AddStream(&si, js, sc, NULL, &jerr);
	if (s != NATS_OK && jerr == JSStreamNameExistErr) {
		s = js_UpdateStream(&si, js, sc, NULL, &jerr);
	}
	jsStreamInfo_Destroy(si);
	if (s != NATS_OK) {
		zc_warn("nats: cannot create or update stream %s: %s (%s)",
		        sc->Name, natsStatus_GetText(s), nats_GetLastError(NULL));
		return ZC_ENATS;
	}
	return ZC_EOK;
}

int fleet_connect_retry(const fleet_config_t *cfg, _Atomic bool *stop,
                        pthread_mutex_t *lock, natsConnection **nc, jsCtx **js)
{
	int64_t logged = 0;
	unsigned failures = 0;
	while (!*stop) {
		natsConnection *c = NULL;
		jsCtx *j = NULL;
		int ret = fleet_connect(cfg, &c, &j);
		if (ret == ZC_EOK) {
			pthread_mutex_lock(lock);
			*nc = c;
			*js = j;
			pthread_mutex_unlock(lock);
			if (failures > 0) {
				zc_info("nats: connected to %s", cfg->urls);
			}
			return ZC_EOK;
		}
		if (ret == ZC_EINVAL_CONFIG) {
			return ret;
		}
		int64_t now = fleet_now_ms();
		if (failures++ == 0 || now - logged >= 30000) {
			zc_error("nats: cannot connect to %s: %s; retrying",
			         cfg->urls, ret == ZC_EACCES_NATS ? "authentication "
			         "refused (user, password, token or credentials)" :
			         nats_GetLastError(NULL));
			logged = now;
		}
		struct timespec ts = { 0, 500 * 1000000L };
		nanosleep(&ts, NULL);
	}
	return ZC_ENATS;
}

int fleet_ensure_streams(const fleet_config_t *cfg, const fleet_names_t *n,
                         jsCtx *js)
{
	const char *txn_subj[] = { n->txn_subject };
	jsStreamConfig sc;
	jsStreamConfig_Init(&sc);
	sc.Name = n->txn_stream;
	sc.Subjects = txn_subj;
	sc.SubjectsLen = 1;
	sc.Storage = js_FileStorage;
	sc.Replicas = cfg->replicas;
	sc.MaxBytes = cfg->stream_max_bytes;
	sc.Discard = js_DiscardOld;
	sc.Duplicates = (int64_t)120 * 1000 * 1000 * 1000; /* 2 min, in ns */
	int ret = ensure_stream(js, &sc);
	if (ret != ZC_EOK) {
		return ret;
	}
	char snap_subj[FLEET_STR_MAX + 8];
	snprintf(snap_subj, sizeof(snap_subj), "%s.snap.>", cfg->prefix);
	const char *ssubj[] = { snap_subj };
	jsStreamConfig_Init(&sc);
	sc.Name = n->snap_stream;
	sc.Subjects = ssubj;
	sc.SubjectsLen = 1;
	sc.Storage = js_FileStorage;
	sc.Replicas = cfg->replicas;
	sc.MaxMsgsPerSubject = 1;
	sc.AllowDirect = true;
	ret = ensure_stream(js, &sc);
	if (ret != ZC_EOK) {
		return ret;
	}
	kvConfig kc;
	kvConfig_Init(&kc);
	kc.Bucket = n->bucket;
	kc.History = 1;
	/* A name not heard of for a day is forgotten (edges report every
	 * second; renamed or retired ones would pile up). */
	kc.TTL = (int64_t)86400 * 1000 * 1000 * 1000;
	kc.Replicas = cfg->replicas;
	kvStore *kv = NULL;
	natsStatus s = js_CreateKeyValue(&kv, js, &kc);
	kvStore_Destroy(kv);
	if (s != NATS_OK) {
		zc_warn("nats: cannot create bucket %s: %s (%s)", n->bucket,
		        natsStatus_GetText(s), nats_GetLastError(NULL));
		return ZC_ENATS;
	}
	return ZC_EOK;
}
