/*
 * bench/update_client.c — RFC 2136 UPDATE load generator for bench/update_batches.
 *
 * Compiled by that script:  cc -O2 -pthread -o update_client update_client.c -lgnutls
 *
 * Sends N TSIG-signed (RFC 8945, hmac-sha256) A-record additions in UPDATE
 * messages of B records each, over C TCP connections, each keeping up to K
 * messages in flight (pipelined; a DNS server answers a TCP connection's
 * messages in order, and the client checks the ids in that order). The
 * connections are driven by a few epoll threads (--threads, default 1) so
 * that the client costs a few microseconds per message: the server is what
 * is measured.
 *
 *   update_client --server 127.0.0.1:PORT --zone ZONE. --key-file FILE
 *                 [--records N] [--batch B] [--conns C] [--depth K]
 *                 [--threads T] [--prefix P] [--verify] [--check-last] [--timeout-s S]
 *                 [--ttl T] [--fudge F] [--lat-out FILE]
 *
 * --key-file reads a BIND-style key file (key "NAME" { algorithm hmac-sha256;
 * secret "BASE64"; };), as `zonecast tsig create` and `tsig-keygen` print;
 * --key NAME:BASE64 gives it inline instead.
 *
 * Record i (0 <= i < N) is "P<i>.ZONE. TTL IN A 10.a.b.c" with a.b.c = i + 1
 * in base 256, so that a run's records are new (use a new --prefix per run on
 * the same zone). Message m holds records m*B .. m*B+B-1; messages are handed
 * to connections in order as they free a slot.
 *
 * TSIG (RFC 8945 section 4.3.3): MAC = HMAC-SHA256(key, request wire without
 * the TSIG RR (ARCOUNT 0) || key name (canonical wire) || class ANY || TTL 0
 * || algorithm name "hmac-sha256." (canonical wire) || time signed (48 bits)
 * || fudge || error 0 || other len 0). --verify checks every response's TSIG
 * the same way (section 4.3.3 / 5.3: request MAC prefixed with its length,
 * response without its TSIG RR, original id); without it the responses are
 * only checked for id, QR, opcode and rcode.
 *
 * Output (stdout), one line of key=value and a readable summary:
 *   records=.. messages=.. ok_messages=.. seconds=.. updates_per_s=..
 *   msgs_per_s=.. p50_ms=.. p90_ms=.. p99_ms=.. max_ms=.. errors=.. rcodes=..
 * Latency is per message: write of the message -> its response parsed.
 * --check-last adds serial_at_end (SOA serial queried right after the last
 * response), last_visible_ms (until the last record, index N-1, is answered
 * over UDP; -1 if not within 10 s) and serial (queried after that).
 * Exit status 0 when every message got NOERROR (and a valid MAC with
 * --verify), 1 otherwise, 2 on usage errors.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_MSG 65535
#define MAC_LEN 32

static struct {
	struct sockaddr_in addr;
	char zone[256];
	uint8_t zone_wire[256];
	int zone_wire_len;
	uint8_t key_wire[256];
	int key_wire_len;
	uint8_t secret[256];
	int secret_len;
	char prefix[64];
	long records;
	int batch, conns, depth, threads, verify, timeout_s, ttl, fudge;
	char lat_out[1024];
	int check_last;
} O = { .records = 40000, .batch = 1, .conns = 1, .depth = 1, .threads = 1,
	.timeout_s = 300, .ttl = 300, .fudge = 300, .prefix = "u" };

static const uint8_t ALG_WIRE[] = "\x0bhmac-sha256";   /* + terminating 0 byte */
#define ALG_WIRE_LEN 13

static atomic_long next_msg;      /* next message index to hand out */
static long n_msgs;
static atomic_long n_ok, n_err_rcode, n_err_io, n_err_mac, n_err_id;
static atomic_long rcode_count[16];
static atomic_int stop_all;
static double *lat;               /* per message latency (ms), indexed by message */

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "update_client: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* name (presentation, absolute or not) -> lowercase wire; returns length */
static int name_to_wire(const char *name, uint8_t *out, int cap)
{
	int n = 0;
	const char *p = name;
	if (strcmp(name, ".") == 0) {
		out[0] = 0;
		return 1;
	}
	while (*p) {
		const char *dot = strchr(p, '.');
		int len = dot ? (int)(dot - p) : (int)strlen(p);
		if (len == 0 || len > 63 || n + len + 2 > cap)
			die("bad name %s", name);
		out[n++] = (uint8_t)len;
		for (int i = 0; i < len; i++)
			out[n++] = (uint8_t)tolower((unsigned char)p[i]);
		p += len;
		if (*p == '.')
			p++;
	}
	out[n++] = 0;
	return n;
}

static int b64val(int c)
{
	if (c >= 'A' && c <= 'Z') return c - 'A';
	if (c >= 'a' && c <= 'z') return c - 'a' + 26;
	if (c >= '0' && c <= '9') return c - '0' + 52;
	if (c == '+') return 62;
	if (c == '/') return 63;
	return -1;
}

static int b64_decode(const char *in, uint8_t *out, int cap)
{
	int n = 0, bits = 0;
	uint32_t acc = 0;
	for (; *in; in++) {
		int v = b64val((unsigned char)*in);
		if (v < 0)
			continue;   /* '=', spaces */
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n >= cap)
				die("secret too long");
			out[n++] = (uint8_t)(acc >> bits);
		}
	}
	return n;
}

static void set_key(const char *name, const char *secret_b64)
{
	O.key_wire_len = name_to_wire(name, O.key_wire, sizeof O.key_wire);
	O.secret_len = b64_decode(secret_b64, O.secret, sizeof O.secret);
	if (O.secret_len == 0)
		die("empty secret");
}

static void read_key_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		die("cannot open %s: %s", path, strerror(errno));
	static char buf[8192];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char name[256] = "", secret[512] = "", alg[64] = "";
	char *p = strstr(buf, "key");
	if (p && sscanf(p, "key \"%255[^\"]\"", name) != 1)
		name[0] = 0;
	p = strstr(buf, "algorithm");
	if (p)
		sscanf(p, "algorithm %63[^; \t\n]", alg);
	p = strstr(buf, "secret");
	if (p)
		sscanf(p, "secret \"%511[^\"]\"", secret);
	if (!name[0] || !secret[0])
		die("%s: no key \"NAME\" { ... secret \"...\"; } found", path);
	if (alg[0] && strcasecmp(alg, "hmac-sha256") != 0)
		die("%s: algorithm %s, only hmac-sha256 is supported", path, alg);
	set_key(name, secret);
}

static void put16(uint8_t *p, unsigned v) { p[0] = v >> 8; p[1] = v; }
static void put32(uint8_t *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }
static unsigned get16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }

/* TSIG variables after the message: name, class, ttl, alg, time, fudge, error, other */
static int tsig_vars(uint8_t *p, uint64_t t, unsigned fudge, unsigned error)
{
	int n = 0;
	memcpy(p + n, O.key_wire, O.key_wire_len); n += O.key_wire_len;
	put16(p + n, 255); n += 2;              /* class ANY */
	put32(p + n, 0); n += 4;                /* TTL 0 */
	memcpy(p + n, ALG_WIRE, ALG_WIRE_LEN); n += ALG_WIRE_LEN;
	p[n++] = t >> 40; p[n++] = t >> 32; put32(p + n, (uint32_t)t); n += 4;
	put16(p + n, fudge); n += 2;
	put16(p + n, error); n += 2;
	put16(p + n, 0); n += 2;                /* other len */
	return n;
}

static void hmac(const void *data, size_t len, uint8_t *mac)
{
	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, O.secret, O.secret_len, data, len, mac) < 0)
		die("gnutls_hmac_fast failed");
}

/*
 * Build message m into buf (after the 2-byte TCP length); returns the total
 * length including the length prefix; stores the request MAC in mac.
 */
static int build_update(long m, uint16_t id, uint8_t *buf, uint8_t *mac)
{
	uint8_t *w = buf + 2;
	long first = m * O.batch, last = first + O.batch;
	if (last > O.records)
		last = O.records;
	int n = 0;
	put16(w + 0, id);
	put16(w + 2, 0x2800);                   /* opcode UPDATE */
	put16(w + 4, 1);                        /* ZOCOUNT */
	put16(w + 6, 0);                        /* PRCOUNT */
	put16(w + 8, (unsigned)(last - first)); /* UPCOUNT */
	put16(w + 10, 0);                       /* ADCOUNT: 0 for the MAC */
	n = 12;
	memcpy(w + n, O.zone_wire, O.zone_wire_len); n += O.zone_wire_len;
	put16(w + n, 6); put16(w + n + 2, 1); n += 4;   /* SOA IN */
	for (long i = first; i < last; i++) {
		char label[96];
		int ll = snprintf(label, sizeof label, "%s%ld", O.prefix, i);
		w[n++] = (uint8_t)ll;
		memcpy(w + n, label, ll); n += ll;
		w[n++] = 0xC0; w[n++] = 12;     /* pointer to the zone name */
		put16(w + n, 1); put16(w + n + 2, 1); put32(w + n + 4, O.ttl); put16(w + n + 8, 4);
		n += 10;
		uint32_t a = (uint32_t)(i + 1);
		w[n++] = 10; w[n++] = a >> 16; w[n++] = a >> 8; w[n++] = a;
	}
	/* MAC over message + TSIG variables */
	uint64_t t = (uint64_t)time(NULL);
	static __thread uint8_t tmp[MAX_MSG + 512];
	memcpy(tmp, w, n);
	int vl = tsig_vars(tmp + n, t, O.fudge, 0);
	hmac(tmp, n + vl, mac);
	/* the TSIG RR */
	memcpy(w + n, O.key_wire, O.key_wire_len); n += O.key_wire_len;
	put16(w + n, 250); put16(w + n + 2, 255); put32(w + n + 4, 0);
	int rdlen_at = n + 8;
	n += 10;
	int rd0 = n;
	memcpy(w + n, ALG_WIRE, ALG_WIRE_LEN); n += ALG_WIRE_LEN;
	w[n++] = t >> 40; w[n++] = t >> 32; put32(w + n, (uint32_t)t); n += 4;
	put16(w + n, O.fudge); n += 2;
	put16(w + n, MAC_LEN); n += 2;
	memcpy(w + n, mac, MAC_LEN); n += MAC_LEN;
	put16(w + n, id); n += 2;               /* original id */
	put16(w + n, 0); n += 2;                /* error */
	put16(w + n, 0); n += 2;                /* other len */
	put16(w + rdlen_at, n - rd0);
	put16(w + 10, 1);                       /* ADCOUNT */
	if (n > MAX_MSG)
		die("message too large (%d bytes): smaller --batch", n);
	put16(buf, n);
	return n + 2;
}

/* skip a (possibly compressed) name; returns new offset or -1 */
static int skip_name(const uint8_t *m, int len, int off)
{
	while (off < len) {
		uint8_t c = m[off];
		if (c == 0)
			return off + 1;
		if ((c & 0xC0) == 0xC0)
			return off + 2 <= len ? off + 2 : -1;
		if (c & 0xC0)
			return -1;
		off += 1 + c;
	}
	return -1;
}

/*
 * Check a response: returns rcode (0..15, extended by nothing), or -1 on a
 * malformed message. With --verify also checks its TSIG (sets *mac_ok).
 */
static int check_response(uint8_t *m, int len, const uint8_t *req_mac, int *mac_ok)
{
	*mac_ok = 0;
	if (len < 12)
		return -1;
	unsigned flags = get16(m + 2);
	if (!(flags & 0x8000) || ((flags >> 11) & 15) != 5)
		return -1;
	int rcode = flags & 15;
	if (!O.verify)
		return rcode;
	/* walk to the additional section, find the last RR (TSIG) */
	unsigned qd = get16(m + 4), an = get16(m + 6), ns = get16(m + 8), ar = get16(m + 10);
	if (ar == 0)
		return rcode;
	int off = 12;
	for (unsigned i = 0; i < qd; i++) {
		off = skip_name(m, len, off);
		if (off < 0 || off + 4 > len) return -1;
		off += 4;
	}
	int tsig_off = -1;
	for (unsigned i = 0; i < an + ns + ar; i++) {
		int start = off;
		off = skip_name(m, len, off);
		if (off < 0 || off + 10 > len) return -1;
		unsigned rdlen = get16(m + off + 8);
		if (i == an + ns + ar - 1 && get16(m + off) == 250)
			tsig_off = start;
		off += 10 + rdlen;
		if (off > len) return -1;
	}
	if (tsig_off < 0)
		return rcode;
	/* parse TSIG RDATA */
	int p = skip_name(m, len, tsig_off);
	int rd = p + 10;
	int q = skip_name(m, len, rd);      /* algorithm */
	if (q < 0 || q + 10 > len) return -1;
	const uint8_t *tp = m + q;
	uint64_t t = ((uint64_t)tp[0] << 40) | ((uint64_t)tp[1] << 32) | ((uint64_t)tp[2] << 24) |
		     ((uint64_t)tp[3] << 16) | ((uint64_t)tp[4] << 8) | tp[5];
	unsigned fudge = get16(tp + 6), maclen = get16(tp + 8);
	if (q + 10 + (int)maclen + 6 > len) return -1;
	const uint8_t *rmac = tp + 10;
	unsigned orig_id = get16(rmac + maclen), error = get16(rmac + maclen + 2);
	unsigned olen = get16(rmac + maclen + 4);
	if (maclen != MAC_LEN || olen != 0)
		return rcode;
	/* digest: req mac len + req mac + response without TSIG (ARCOUNT-1, orig id) + vars */
	static __thread uint8_t tmp[MAX_MSG + 1024];
	int n = 0;
	put16(tmp, MAC_LEN); n = 2;
	memcpy(tmp + n, req_mac, MAC_LEN); n += MAC_LEN;
	memcpy(tmp + n, m, tsig_off);
	put16(tmp + n, orig_id);
	put16(tmp + n + 10, ar - 1);
	n += tsig_off;
	n += tsig_vars(tmp + n, t, fudge, error);
	uint8_t mac[MAC_LEN];
	hmac(tmp, n, mac);
	*mac_ok = memcmp(mac, rmac, MAC_LEN) == 0;
	return rcode;
}

typedef struct {
	int fd;
	long msg[1024];               /* in-flight message indexes, by slot */
	uint8_t mac[1024][MAC_LEN];   /* request MACs, indexed by slot % 1024 */
	double sent_at[1024];
	uint16_t ids[1024];
	int head, count;              /* ring over 1024 slots */
	uint8_t *out; int out_len, out_off;
	uint8_t *in; int in_len;
	uint16_t next_id;
	int dead, done;
	int want_out;                 /* EPOLLOUT currently requested */
} conn_t;

static int conn_open(conn_t *c)
{
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (c->fd < 0)
		return -1;
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(c->fd, (struct sockaddr *)&O.addr, sizeof O.addr) < 0 && errno != EINPROGRESS) {
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	return 0;
}

/* fill the output buffer with new messages while the depth allows */
static void conn_fill(conn_t *c)
{
	while (!c->done && c->count < O.depth && !atomic_load(&stop_all) &&
	       c->out_len <= 6 * (MAX_MSG + 2)) {   /* room for one more message */
		long m = atomic_fetch_add(&next_msg, 1);
		if (m >= n_msgs) {
			c->done = 1;
			break;
		}
		int slot = (c->head + c->count) % 1024;
		uint16_t id = c->next_id++;
		int l = build_update(m, id, c->out + c->out_len, c->mac[slot]);
		c->out_len += l;
		c->msg[slot] = m;
		c->ids[slot] = id;
		c->sent_at[slot] = now_s();
		c->count++;
	}
}

static int conn_flush(conn_t *c)
{
	while (c->out_off < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOTCONN)
				return 0;
			return -1;
		}
		c->out_off += (int)w;
	}
	c->out_off = c->out_len = 0;
	return 0;
}

static void conn_fail(conn_t *c)
{
	/* every message in flight on it is lost */
	atomic_fetch_add(&n_err_io, c->count);
	c->count = 0;
	c->dead = 1;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* consume complete responses from the input buffer */
static int conn_read(conn_t *c)
{
	for (;;) {
		ssize_t r = recv(c->fd, c->in + c->in_len, 2 * (MAX_MSG + 2) - c->in_len, 0);
		if (r == 0)
			return c->count ? -1 : 1;  /* EOF */
		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -1;
		}
		c->in_len += (int)r;
		int off = 0;
		while (c->in_len - off >= 2) {
			int l = (int)get16(c->in + off);
			if (c->in_len - off < 2 + l)
				break;
			uint8_t *m = c->in + off + 2;
			if (c->count == 0) {
				atomic_fetch_add(&n_err_id, 1);
				off += 2 + l;
				continue;
			}
			int slot = c->head;
			if (l < 2 || get16(m) != c->ids[slot]) {
				atomic_fetch_add(&n_err_id, 1);
				return -1;       /* out of order or garbage: give up on the connection */
			}
			int mac_ok;
			int rc = check_response(m, l, c->mac[slot], &mac_ok);
			lat[c->msg[slot]] = (now_s() - c->sent_at[slot]) * 1e3;
			if (rc < 0) {
				atomic_fetch_add(&n_err_id, 1);
			} else {
				atomic_fetch_add(&rcode_count[rc], 1);
				if (rc != 0)
					atomic_fetch_add(&n_err_rcode, 1);
				else if (O.verify && !mac_ok)
					atomic_fetch_add(&n_err_mac, 1);
				else
					atomic_fetch_add(&n_ok, 1);
			}
			c->head = (c->head + 1) % 1024;
			c->count--;
			off += 2 + l;
		}
		if (off) {
			memmove(c->in, c->in + off, c->in_len - off);
			c->in_len -= off;
		}
	}
	return 0;
}

typedef struct {
	int first, n;
} thr_arg_t;

static conn_t *conns;

static void *worker(void *arg)
{
	thr_arg_t *a = arg;
	int ep = epoll_create1(0);
	int live = 0;
	double deadline = now_s() + O.timeout_s;
	for (int i = a->first; i < a->first + a->n; i++) {
		conn_t *c = &conns[i];
		c->out = malloc(8 * (MAX_MSG + 2));
		c->in = malloc(2 * (MAX_MSG + 2));
		c->next_id = (uint16_t)(i * 7919 + 1);
		if (!c->out || !c->in)
			die("out of memory");
		if (conn_open(c) < 0) {
			c->dead = 1;
			atomic_fetch_add(&n_err_io, 1);
			continue;
		}
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };
		epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
		c->want_out = 1;
		conn_fill(c);
		live++;
	}
	struct epoll_event evs[256];
	while (live > 0 && !atomic_load(&stop_all)) {
		if (now_s() > deadline) {
			fprintf(stderr, "update_client: timeout after %d s\n", O.timeout_s);
			atomic_store(&stop_all, 1);
			break;
		}
		int k = epoll_wait(ep, evs, 256, 200);
		for (int e = 0; e < k; e++) {
			conn_t *c = evs[e].data.ptr;
			if (c->dead)
				continue;
			int rc = 0;
			if (evs[e].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
				rc = conn_read(c);
			if (rc == 0) {
				conn_fill(c);
				if (conn_flush(c) < 0)
					rc = -1;
			}
			if (rc == 0 && c->done && c->count == 0)
				rc = 1;
			if (rc != 0) {
				epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
				if (rc < 0)
					conn_fail(c);
				else {
					close(c->fd);
					c->fd = -1;
					c->dead = 1;
				}
				live--;
				continue;
			}
			/* re-arm only when the interest in EPOLLOUT changes (saves a syscall per event) */
			int want = c->out_len > 0;
			if (want != c->want_out) {
				struct epoll_event ev = { .events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c };
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
				c->want_out = want;
			}
		}
	}
	close(ep);
	return NULL;
}

/* one UDP query NAME/TYPE; returns the answer length or -1 */
static int udp_query(int fd, const char *label, uint16_t qtype, uint8_t *ans, int cap)
{
	uint8_t q[512];
	int n = 0;
	uint16_t id = (uint16_t)rand();
	put16(q, id); put16(q + 2, 0); put16(q + 4, 1); put16(q + 6, 0); put16(q + 8, 0); put16(q + 10, 0);
	n = 12;
	if (label) {
		int ll = (int)strlen(label);
		q[n++] = (uint8_t)ll;
		memcpy(q + n, label, ll); n += ll;
	}
	memcpy(q + n, O.zone_wire, O.zone_wire_len); n += O.zone_wire_len;
	put16(q + n, qtype); put16(q + n + 2, 1); n += 4;
	if (send(fd, q, n, 0) != n)
		return -1;
	for (;;) {
		ssize_t r = recv(fd, ans, cap, 0);
		if (r < 0)
			return -1;              /* SO_RCVTIMEO */
		if (r >= 12 && get16(ans) == id)
			return (int)r;
	}
}

/* first answer RR of TYPE: offset of its RDATA (and *rdlen), or -1 */
static int first_answer(const uint8_t *m, int len, uint16_t type, int *rdlen)
{
	if (len < 12 || (get16(m + 2) & 15) != 0)
		return -1;
	int off = 12;
	for (unsigned i = 0; i < get16(m + 4); i++) {
		off = skip_name(m, len, off);
		if (off < 0) return -1;
		off += 4;
	}
	for (unsigned i = 0; i < get16(m + 6); i++) {
		off = skip_name(m, len, off);
		if (off < 0 || off + 10 > len) return -1;
		unsigned t = get16(m + off), rl = get16(m + off + 8);
		if (off + 10 + (int)rl > len) return -1;
		if (t == type) {
			*rdlen = (int)rl;
			return off + 10;
		}
		off += 10 + rl;
	}
	return -1;
}

static long soa_serial(int fd)
{
	uint8_t a[4096];
	int l = udp_query(fd, NULL, 6, a, sizeof a), rl;
	if (l < 0)
		return -1;
	int o = first_answer(a, l, 6, &rl);
	if (o < 0)
		return -1;
	o = skip_name(a, l, o);
	if (o < 0) return -1;
	o = skip_name(a, l, o);
	if (o < 0 || o + 4 > l) return -1;
	return (long)((uint32_t)a[o] << 24 | (uint32_t)a[o + 1] << 16 | (uint32_t)a[o + 2] << 8 | a[o + 3]);
}

/*
 * --check-last: right after the last response, the zone's SOA serial, then
 * the last record (index N-1) queried over UDP every 0.2 ms until answered
 * with its address (10 s max): how long an acknowledged change takes to show.
 */
static void check_last(long *serial_at_end, double *vis_ms, long *serial_final)
{
	*serial_at_end = *serial_final = -1;
	*vis_ms = -1;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct timeval tv = { 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&O.addr, sizeof O.addr) < 0) {
		close(fd);
		return;
	}
	double t0 = now_s();
	*serial_at_end = soa_serial(fd);
	char label[96];
	long i = O.records - 1;
	snprintf(label, sizeof label, "%s%ld", O.prefix, i);
	uint32_t x = (uint32_t)(i + 1);
	uint8_t want[4] = { 10, (uint8_t)(x >> 16), (uint8_t)(x >> 8), (uint8_t)x };
	while (now_s() - t0 < 10) {
		uint8_t a[4096];
		int l = udp_query(fd, label, 1, a, sizeof a), rl;
		int o = l > 0 ? first_answer(a, l, 1, &rl) : -1;
		if (o >= 0 && rl == 4 && memcmp(a + o, want, 4) == 0) {
			*vis_ms = (now_s() - t0) * 1e3;
			break;
		}
		usleep(200);
	}
	*serial_final = soa_serial(fd);
	close(fd);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static const char *RCODE_NAMES[16] = { "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP",
	"REFUSED", "YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE", "RC11", "RC12",
	"RC13", "RC14", "RC15" };

int main(int argc, char **argv)
{
	const char *server = NULL, *key_file = NULL, *key_inline = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
#define ARG() (i + 1 < argc ? argv[++i] : (die("%s needs a value", a), ""))
		if (!strcmp(a, "--server")) server = ARG();
		else if (!strcmp(a, "--zone")) snprintf(O.zone, sizeof O.zone, "%s", ARG());
		else if (!strcmp(a, "--key-file")) key_file = ARG();
		else if (!strcmp(a, "--key")) key_inline = ARG();
		else if (!strcmp(a, "--records")) O.records = atol(ARG());
		else if (!strcmp(a, "--batch")) O.batch = atoi(ARG());
		else if (!strcmp(a, "--conns")) O.conns = atoi(ARG());
		else if (!strcmp(a, "--depth")) O.depth = atoi(ARG());
		else if (!strcmp(a, "--threads")) O.threads = atoi(ARG());
		else if (!strcmp(a, "--prefix")) snprintf(O.prefix, sizeof O.prefix, "%s", ARG());
		else if (!strcmp(a, "--verify")) O.verify = 1;
		else if (!strcmp(a, "--timeout-s")) O.timeout_s = atoi(ARG());
		else if (!strcmp(a, "--ttl")) O.ttl = atoi(ARG());
		else if (!strcmp(a, "--fudge")) O.fudge = atoi(ARG());
		else if (!strcmp(a, "--check-last")) O.check_last = 1;
		else if (!strcmp(a, "--lat-out")) snprintf(O.lat_out, sizeof O.lat_out, "%s", ARG());
		else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: update_client --server ADDR:PORT --zone ZONE --key-file F | --key NAME:B64\n"
			       "       [--records N] [--batch B] [--conns C] [--depth K] [--threads T]\n"
			       "       [--prefix P] [--verify] [--check-last] [--timeout-s S] [--ttl T] [--fudge F]\n"
			       "       [--lat-out F]\n");
			return 0;
		} else
			die("unknown option %s", a);
	}
	if (!server || !O.zone[0] || (!key_file && !key_inline))
		die("--server, --zone and --key-file (or --key) are required (see --help)");
	if (O.batch < 1 || O.batch > 3000 || O.conns < 1 || O.conns > 4096 || O.depth < 1 ||
	    O.depth > 1024 || O.threads < 1 || O.records < 1)
		die("bad numbers (batch 1..3000, conns 1..4096, depth 1..1024)");
	if (O.threads > O.conns)
		O.threads = O.conns;
	char host[64];
	int port;
	if (sscanf(server, "%63[^:]:%d", host, &port) != 2)
		die("--server ADDR:PORT");
	O.addr.sin_family = AF_INET;
	O.addr.sin_port = htons(port);
	if (inet_pton(AF_INET, host, &O.addr.sin_addr) != 1)
		die("bad address %s", host);
	O.zone_wire_len = name_to_wire(O.zone, O.zone_wire, sizeof O.zone_wire);
	if (key_file)
		read_key_file(key_file);
	else {
		char buf[512];
		snprintf(buf, sizeof buf, "%s", key_inline);
		char *colon = strchr(buf, ':');
		if (!colon)
			die("--key NAME:BASE64");
		*colon = 0;
		set_key(buf, colon + 1);
	}
	struct rlimit rl = { 65536, 65536 };
	setrlimit(RLIMIT_NOFILE, &rl);
	gnutls_global_init();

	n_msgs = (O.records + O.batch - 1) / O.batch;
	lat = malloc(sizeof(double) * n_msgs);
	conns = calloc(O.conns, sizeof(conn_t));
	if (!lat || !conns)
		die("out of memory");
	for (long i = 0; i < n_msgs; i++)
		lat[i] = -1;

	pthread_t th[64];
	thr_arg_t ta[64];
	if (O.threads > 64)
		O.threads = 64;
	double t0 = now_s();
	int per = O.conns / O.threads, extra = O.conns % O.threads, first = 0;
	for (int t = 0; t < O.threads; t++) {
		ta[t].first = first;
		ta[t].n = per + (t < extra);
		first += ta[t].n;
		pthread_create(&th[t], NULL, worker, &ta[t]);
	}
	for (int t = 0; t < O.threads; t++)
		pthread_join(th[t], NULL);
	double secs = now_s() - t0;
	long serial_end = -1, serial_final = -1;
	double vis_ms = -1;
	if (O.check_last)
		check_last(&serial_end, &vis_ms, &serial_final);

	long ok = atomic_load(&n_ok);
	/* records acknowledged with NOERROR */
	double *l = malloc(sizeof(double) * n_msgs);
	long nl = 0;
	for (long i = 0; i < n_msgs; i++)
		if (lat[i] >= 0)
			l[nl++] = lat[i];
	qsort(l, nl, sizeof(double), cmp_d);
#define PCT(p) (nl ? l[(long)((p) * (nl - 1) + 0.5)] : 0.0)
	long unanswered = n_msgs - nl;
	long errors = atomic_load(&n_err_rcode) + atomic_load(&n_err_mac) + atomic_load(&n_err_id) + unanswered;
	char rcodes[512] = "";
	for (int r = 0; r < 16; r++) {
		long v = atomic_load(&rcode_count[r]);
		if (v) {
			size_t used = strlen(rcodes);
			snprintf(rcodes + used, sizeof rcodes - used, "%s%s:%ld", used ? "," : "", RCODE_NAMES[r], v);
		}
	}
	if (!rcodes[0])
		strcpy(rcodes, "none");
	long ok_records = ok * O.batch;
	if (ok == n_msgs)
		ok_records = O.records;
	printf("records=%ld batch=%d conns=%d depth=%d messages=%ld ok_messages=%ld seconds=%.3f "
	       "updates_per_s=%.0f msgs_per_s=%.0f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f "
	       "errors=%ld err_rcode=%ld err_mac=%ld err_proto=%ld unanswered=%ld io_lost=%ld rcodes=%s verify=%d",
	       O.records, O.batch, O.conns, O.depth, n_msgs, ok, secs, ok_records / secs, ok / secs,
	       PCT(0.50), PCT(0.90), PCT(0.99), nl ? l[nl - 1] : 0.0, errors,
	       atomic_load(&n_err_rcode), atomic_load(&n_err_mac), atomic_load(&n_err_id), unanswered,
	       atomic_load(&n_err_io), rcodes, O.verify);
	if (O.check_last)
		printf(" serial_at_end=%ld last_visible_ms=%.2f serial=%ld", serial_end, vis_ms, serial_final);
	printf("\n");
	fprintf(stderr, "update_client: %ld records in %ld messages of %d over %d conns x depth %d: %.3f s, "
		"%.0f updates/s, %.0f msgs/s, latency p50 %.2f ms p99 %.2f ms, %ld errors (%s)\n",
		O.records, n_msgs, O.batch, O.conns, O.depth, secs, ok_records / secs, ok / secs,
		PCT(0.50), PCT(0.99), errors, rcodes);
	if (O.lat_out[0]) {
		FILE *f = fopen(O.lat_out, "w");
		if (f) {
			for (long i = 0; i < n_msgs; i++)
				fprintf(f, "%.3f\n", lat[i]);
			fclose(f);
		}
	}
	return errors ? 1 : 0;
}
