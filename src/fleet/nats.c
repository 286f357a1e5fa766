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

static bool header_u64(natsMsg *msg, const char *key, int base, uint64_t *v)
{
	const char *text = NULL;
	if (natsMsgHeader_Get(msg, key, &text) != NATS_OK || text == NULL) {
		return false;
	}
	char *end;
	*v = strtoull(text, &end, base);
	return end != text && *end == '\0';
}

fleet_headers_read_t fleet_headers_read(natsMsg *msg, fleet_headers_t *h)
{
	*h = (fleet_headers_t){ 0 };
	if (!header_u64(msg, "Zc-Epoch", 16, &h->epoch) ||
	    !header_u64(msg, "Zc-Commit", 10, &h->commit) ||
	    !header_u64(msg, "Zc-Part", 10, &h->part) ||
	    !header_u64(msg, "Zc-Flags", 10, &h->flags)) {
		return FLEET_HEADERS_NONE;
	}
	const char *has_term = NULL;
	if (natsMsgHeader_Get(msg, "Zc-Term", &has_term) == NATS_OK &&
	    !header_u64(msg, "Zc-Term", 10, &h->term)) {
		return FLEET_HEADERS_BAD_TERM;
	}
	return FLEET_HEADERS_OK;
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

/* Says clearly when the server takes messages too small for the fleet
 * (its requests to create the streams and the bucket, manifests and
 * reports do not fit): nothing works until max_payload is raised. */
static void payload_check(natsConnection *nc)
{
	static _Atomic int64_t logged;
	int64_t max = natsConnection_GetMaxPayload(nc);
	if (max > 0 && max < FLEET_PAYLOAD_MIN &&
	    zc_log_due(&logged, 30000)) {
		zc_error("nats: the server's max_payload is %" PRId64 " bytes: "
		         "the fleet needs at least %d (its stream and bucket "
		         "requests, manifests and reports do not fit in less); "
		         "raise max_payload in the NATS server's configuration",
		         max, FLEET_PAYLOAD_MIN);
	}
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
		/* Nothing is kept to be sent at a reconnect: a publish while
		 * disconnected fails at once (NATS_INSUFFICIENT_BUFFER) and is
		 * made again, cut for the server connected then. A kept one
		 * was cut for the server before, whose max_payload may have
		 * been larger: the new one closes the connection on it. */
		s = natsOptions_SetReconnectBufSize(o, 1);
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
	payload_check(*nc);
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

/* A limit as the server shows it (unset: -1). */
static int64_t limit(int64_t v)
{
	return v <= 0 ? -1 : v;
}

/* The first setting the fleet depends on in which the stream's
 * configuration (have) is not what it needs (want); NULL when none. */
static const char *stream_differs(const jsStreamConfig *have,
                                  const jsStreamConfig *want)
{
	if (have->Retention != want->Retention) {
		return "retention";
	}
	if (have->Storage != want->Storage) {
		return "storage";
	}
	if (have->Mirror != NULL || have->Sealed || have->DenyPurge) {
		return "mirror, sealed or deny-purge setting";
	}
	if (have->SubjectsLen != want->SubjectsLen) {
		return "subjects";
	}
	for (int i = 0; i < want->SubjectsLen; i++) {
		if (have->Subjects == NULL || have->Subjects[i] == NULL ||
		    strcmp(have->Subjects[i], want->Subjects[i]) != 0) {
			return "subjects";
		}
	}
	if (have->Discard != want->Discard) {
		return "discard policy";
	}
	if (limit(have->MaxMsgs) != limit(want->MaxMsgs) ||
	    limit(have->MaxBytes) != limit(want->MaxBytes) ||
	    limit(have->MaxMsgsPerSubject) != limit(want->MaxMsgsPerSubject) ||
	    limit(have->MaxMsgSize) != limit(want->MaxMsgSize) ||
	    have->MaxAge != want->MaxAge) {
		return "limits (messages, bytes, size or age)";
	}
	if (have->Replicas != want->Replicas) {
		return "replicas";
	}
	if (want->AllowDirect && !have->AllowDirect) {
		return "direct get";
	}
	if (want->Duplicates != 0 && have->Duplicates != want->Duplicates) {
		return "duplicate window";
	}
	return NULL;
}

/* Warnings about the streams and the bucket repeat at most this often
 * (they are tried again every second or so). */
static _Atomic int64_t stream_logged;

/*
 * Makes the stream what sc says: created when missing (a warning when
 * expected: someone deleted it), updated when a setting the fleet
 * depends on differs, deleted and created again when the server refuses
 * that update (retention, storage: an update cannot change them; the
 * stream is this fleet's own, under its prefix). *changed when it was
 * created or changed (its messages may be gone: a new snapshot).
 */
static int keep_stream(jsCtx *js, jsStreamConfig *sc, bool expected,
                       bool *changed)
{
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	natsStatus s = js_GetStreamInfo(&si, js, sc->Name, NULL, &jerr);
	const char *what = "create";
	if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr) {
		if (expected) {
			zc_warn("fleet: stream %s is gone from NATS (deleted?): "
			        "creating it again", sc->Name);
		}
		jsStreamInfo_Destroy(si);
		si = NULL;
		jerr = 0;
		s = js_AddStream(&si, js, sc, NULL, &jerr);
		*changed = s == NATS_OK;
	} else if (s == NATS_OK) {
		const char *differs = stream_differs(si->Config, sc);
		/* An operator's deny_delete (of single messages) is nothing
		 * the fleet depends on, and no update may take it back: the
		 * update keeps it (built without it, it was refused, and the
		 * stream deleted and made again for a setting it could have
		 * kept). */
		jsStreamConfig update = *sc;
		update.DenyDelete = si->Config != NULL && si->Config->DenyDelete;
		jsStreamInfo_Destroy(si);
		si = NULL;
		if (differs != NULL) {
			zc_warn("fleet: stream %s has another %s than the fleet "
			        "needs (made again by someone else?): updating it",
			        sc->Name, differs);
			what = "update";
			s = js_UpdateStream(&si, js, &update, NULL, &jerr);
			if (s != NATS_OK && jerr != 0) {
				zc_warn("fleet: stream %s cannot be updated (%s): deleting "
				        "it and creating it again", sc->Name,
				        nats_GetLastError(NULL));
				what = "delete and create";
				jerr = 0;
				s = js_DeleteStream(js, sc->Name, NULL, &jerr);
				if (s == NATS_OK || jerr == JSStreamNotFoundErr) {
					jsStreamInfo_Destroy(si);
					si = NULL;
					s = js_AddStream(&si, js, sc, NULL, &jerr);
				}
			}
			*changed = s == NATS_OK;
		}
	}
	jsStreamInfo_Destroy(si);
	if (s != NATS_OK) {
		int ret = fleet_nats_error(s, jerr, what);
		if (zc_log_due(&stream_logged, 10000)) {
			zc_warn("nats: cannot %s stream %s: %s", what, sc->Name,
			        fleet_nats_last_error());
		}
		return ret;
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

bool fleet_conn_closed(natsConnection *nc)
{
	if (nc == NULL) {
		return false;
	}
	int64_t max = natsConnection_GetMaxPayload(nc);
	if (!natsConnection_IsClosed(nc) && max > 0 && max < FLEET_PAYLOAD_MIN) {
		payload_check(nc);
		natsConnection_Close(nc);
	}
	return natsConnection_IsClosed(nc);
}

int fleet_conn_renew(const fleet_config_t *cfg, const char *who,
                     _Atomic bool *stop, pthread_mutex_t *lock,
                     natsConnection **nc, jsCtx **js, fleet_renew_t *r)
{
	pthread_mutex_lock(lock);
	natsConnection *old = *nc;
	jsCtx *old_js = *js;
	*nc = NULL;
	*js = NULL;
	pthread_mutex_unlock(lock);
	int64_t now = fleet_mono_ms();
	/* Closed again soon after the last time: wait longer (250 ms
	 * doubling to 8 s); a connection that lasted resets the wait. */
	r->wait_ms = r->wait_ms == 0 || now - r->last_ms > 30000 ? 250 :
	             r->wait_ms * 2 > 8000 ? 8000 : r->wait_ms * 2;
	r->last_ms = now;
	r->count++;
	const char *why = NULL;
	if (old != NULL && natsConnection_GetLastError(old, &why) == NATS_OK) {
		why = NULL;
	}
	if (r->count <= 3 || now - r->logged_ms >= 30000) {
		zc_warn("nats: %s: the connection to %s was closed (%s): a new "
		        "one in %u ms (%u so far)", who, cfg->urls,
		        why != NULL && why[0] != '\0' ? why : "no detail",
		        r->wait_ms, r->count);
		r->logged_ms = now;
	}
	jsCtx_Destroy(old_js);
	natsConnection_Destroy(old);
	for (unsigned slept = 0; slept < r->wait_ms && !*stop; slept += 50) {
		fleet_sleep_ms(50);
	}
	int ret = fleet_connect_retry(cfg, stop, lock, nc, js);
	if (ret == ZC_EOK && r->logged_ms == now) {
		zc_info("nats: %s: connected again to %s (max_payload %" PRId64
		        ")", who, cfg->urls, natsConnection_GetMaxPayload(*nc));
	}
	return ret;
}

int fleet_ensure_streams(const fleet_config_t *cfg, const fleet_names_t *n,
                         jsCtx *js, bool expected, unsigned *changed)
{
	unsigned dummy = 0;
	changed = changed != NULL ? changed : &dummy;
	*changed = 0;
	const char *txn_subj[] = { n->txn_subject };
	jsStreamConfig sc;
	jsStreamConfig_Init(&sc);
	sc.Name = n->txn_stream;
	sc.Subjects = txn_subj;
	sc.SubjectsLen = 1;
	sc.Retention = js_LimitsPolicy;
	sc.Storage = js_FileStorage;
	sc.Replicas = cfg->replicas;
	sc.MaxBytes = cfg->stream_max_bytes;
	sc.Discard = js_DiscardOld;
	sc.Duplicates = (int64_t)120 * 1000 * 1000 * 1000; /* 2 min, in ns */
	bool made = false;
	int ret = keep_stream(js, &sc, expected, &made);
	*changed |= made ? FLEET_TXN_CHANGED : 0;
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
	sc.Retention = js_LimitsPolicy;
	sc.Storage = js_FileStorage;
	sc.Discard = js_DiscardOld;
	sc.Replicas = cfg->replicas;
	sc.MaxMsgsPerSubject = 1;
	sc.AllowDirect = true;
	made = false;
	ret = keep_stream(js, &sc, expected, &made);
	*changed |= made ? FLEET_SNAP_CHANGED : 0;
	if (ret != ZC_EOK) {
		return ret;
	}
	char kv_stream[FLEET_STR_MAX + 4];
	snprintf(kv_stream, sizeof(kv_stream), "KV_%s", n->bucket);
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	natsStatus s = js_GetStreamInfo(&si, js, kv_stream, NULL, &jerr);
	jsStreamInfo_Destroy(si);
	if (s == NATS_OK) {
		return ZC_EOK; /* Its settings are its creator's. */
	}
	if (s != NATS_NOT_FOUND && jerr != JSStreamNotFoundErr) {
		return fleet_nats_error(s, jerr, "bucket info");
	}
	if (expected) {
		zc_warn("fleet: stream %s is gone from NATS (deleted?): creating "
		        "it again", kv_stream);
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
	s = js_CreateKeyValue(&kv, js, &kc);
	kvStore_Destroy(kv);
	if (s != NATS_OK) {
		int r = fleet_nats_error(s, 0, "create bucket");
		if (zc_log_due(&stream_logged, 10000)) {
			zc_warn("nats: cannot create bucket %s: %s", n->bucket,
			        fleet_nats_last_error());
		}
		return r;
	}
	*changed |= FLEET_BUCKET_CHANGED;
	return ZC_EOK;
}
