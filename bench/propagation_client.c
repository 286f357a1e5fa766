/*
 * bench/propagation_client.c — load generator and stopwatch for
 * bench/propagation (compiled by that script: cc -O2 -pthread, no other libs).
 *
 * One raw HTTP/1.1 keep-alive connection (TCP_NODELAY) and one connected UDP
 * socket per thread. A propagation sample is:
 *
 *   t0 = now; send the write (HTTP request, or an RFC 2136 UPDATE over UDP);
 *   read its response (t_api); then send "NAME A?" over UDP, wait for the
 *   answer, and resend at once until the answer carries the new address
 *   (t_visible). Every answer is checked: same id, rcode NOERROR, an A record
 *   in the answer section whose owner is NAME and whose address is the new one.
 *
 * The query loop is tight (one query in flight, resent as soon as the old
 * answer arrives) for the first 100 ms of a sample, then paced at one query
 * per millisecond, so that a slow peer is not flooded for 30 s; resolution
 * is therefore about 0.1 ms below 100 ms and about 1 ms above.
 *
 * Usage (every mode prints one line per sample or a summary on stdout; times
 * are microseconds):
 *
 *   propagation_client prop  --proto zc|pdns|bind OPTIONS   propagation samples
 *       --http ADDR:PORT --dns ADDR:PORT --zone ZONE. [--zone-id ID]
 *       [--token T | --api-key K] --targets FILE --samples N [--null]
 *       [--timeout-ms MS] [--budget-s S] [--stop-file F] [--seq-base B]
 *       [--wait-live]
 *     prints "sample total_us api_us polls status" (status ok|timeout|error)
 *     --wait-live (zc): every write (here, in batch and concurrent) asks
 *     for ?wait=live, its response coming once the DNS server serves it.
 *     --null: instead of the write, a read of the same cost class (zc: GET
 *     of the record, pdns: GET /api/v1/servers/localhost, bind: an SOA query)
 *     and then the query of the unchanged record (any A answer counts): the
 *     client + round-trip floor.
 *   propagation_client resolve --http --zone-id --token --targets IN --out OUT
 *     zonecast only: looks up the id of each target's A record (lines
 *     "name addr [id]": an id already given is checked with a GET by id and
 *     kept when it is still that name's A record); writes "name addr id".
 *   propagation_client fullbuild --http --dns --zone --zone-id --token
 *       --refresh N [--timeout-ms MS] [--stop-file F]
 *     PATCH /zones/ID {"soa":{"refresh":N}}, then polls the SOA until its
 *     refresh is N; prints "total_us api_us polls status"; creates F at the end.
 *   propagation_client batch --proto zc|pdns|bind --http --dns --zone
 *       [--zone-id --token | --api-key] --batch-size N --batches M [--tag T]
 *     M writes of N new A records each (zc: POST .../dns_records/batch posts,
 *     pdns: one PATCH with N rrsets, bind: one UPDATE over TCP with N adds),
 *     then polls the last record until visible. Prints a summary line.
 *   propagation_client concurrent --proto zc|pdns|bind --threads T --seconds S ...
 *     T threads, each with its own connection, writing one new record per
 *     request for S seconds. Prints a summary line (+ per-request latencies
 *     to --out FILE if given).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum proto { P_ZC, P_PDNS, P_BIND };

typedef struct {
	enum proto proto;
	char http[64], dns[64], zone[256], zone_id[128], token[256], api_key[256];
	char targets[1024], out[1024], stop_file[1024], tag[64];
	int samples, null_mode, timeout_ms, budget_s, refresh, batch_size, batches;
	int threads, seconds, no_warm, do_bit;
	int wait_live; /* zc: writes with ?wait=live (answered once served) */
	unsigned seq_base;
} opts_t;

static opts_t O = { .timeout_ms = 30000, .samples = 1000, .batch_size = 1000,
                    .batches = 50, .threads = 8, .seconds = 10, .tag = "b" };

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "propagation_client: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void parse_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *c = strrchr(s, ':');
	if (c == NULL || (size_t)(c - s) >= sizeof(host)) {
		die("bad address %s (want IP:PORT)", s);
	}
	memcpy(host, s, c - s);
	host[c - s] = 0;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(atoi(c + 1));
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
		die("bad address %s", s);
	}
}

/* ------------------------------------------------------------------ HTTP */

typedef struct {
	int fd;
	struct sockaddr_in sa;
	char *buf;
	size_t cap, len;       /* received bytes in buf */
	char *body;            /* points into buf after a request */
	size_t body_len;
	int status;
	unsigned reconnects;
	unsigned connects;
} http_t;

static int http_connect(http_t *h)
{
	if (h->fd > 0) {
		close(h->fd);
	}
	h->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (h->fd < 0) {
		return -1;
	}
	int one = 1;
	setsockopt(h->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(h->fd, (struct sockaddr *)&h->sa, sizeof(h->sa)) != 0) {
		close(h->fd);
		h->fd = -1;
		return -1;
	}
	h->len = 0;
	h->connects++;
	return 0;
}

static void http_init(http_t *h, const char *addr)
{
	memset(h, 0, sizeof(*h));
	h->fd = -1;
	parse_addr(addr, &h->sa);
	h->cap = 1 << 16;
	h->buf = malloc(h->cap);
	if (http_connect(h) != 0) {
		die("cannot connect to %s: %s", addr, strerror(errno));
	}
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR) {
			continue;
		}
		if (w <= 0) {
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int fill(http_t *h, int timeout_ms)
{
	if (h->len + 4096 > h->cap) {
		h->cap *= 2;
		h->buf = realloc(h->buf, h->cap);
	}
	struct pollfd p = { .fd = h->fd, .events = POLLIN };
	int r = poll(&p, 1, timeout_ms);
	if (r <= 0) {
		return -1;
	}
	ssize_t n = recv(h->fd, h->buf + h->len, h->cap - h->len - 1, 0);
	if (n <= 0) {
		return -1;
	}
	h->len += (size_t)n;
	h->buf[h->len] = 0;
	return 0;
}

/* Reads one full response; returns 0 or -1 (connection broken/timeout). */
static int http_read_response(http_t *h, int timeout_ms)
{
	char *hdr_end;
	while ((hdr_end = memmem(h->buf, h->len, "\r\n\r\n", 4)) == NULL) {
		if (fill(h, timeout_ms) != 0) {
			return -1;
		}
	}
	size_t hlen = (size_t)(hdr_end - h->buf) + 4;
	if (sscanf(h->buf, "HTTP/1.%*d %d", &h->status) != 1) {
		return -1;
	}
	long clen = -1;
	int chunked = 0, close_after = 0;
	for (char *l = strstr(h->buf, "\r\n"); l != NULL && l < hdr_end;
	     l = strstr(l + 2, "\r\n")) {
		if (strncasecmp(l + 2, "connection:", 11) == 0 &&
		    strncasecmp(l + 13 + strspn(l + 13, " "), "close", 5) == 0) {
			close_after = 1;
		}
		if (strncasecmp(l + 2, "content-length:", 15) == 0) {
			clen = strtol(l + 17, NULL, 10);
		} else if (strncasecmp(l + 2, "transfer-encoding:", 18) == 0 &&
		           strcasestr(l + 2, "chunked") != NULL &&
		           strcasestr(l + 2, "chunked") < strstr(l + 2, "\r\n")) {
			chunked = 1;
		}
	}
	if (h->status == 204 || h->status == 304 || (h->status >= 100 && h->status < 200)) {
		clen = 0;
	}
	if (chunked) {
		/* De-chunk in place into a fresh buffer. */
		size_t pos = hlen;
		char *out = malloc(h->cap);
		size_t olen = 0, ocap = h->cap;
		for (;;) {
			char *eol;
			while ((eol = memmem(h->buf + pos, h->len - pos, "\r\n", 2)) == NULL) {
				if (fill(h, timeout_ms) != 0) {
					free(out);
					return -1;
				}
			}
			long sz = strtol(h->buf + pos, NULL, 16);
			size_t data = (size_t)(eol - h->buf) + 2;
			while (h->len < data + (size_t)sz + 2) {
				if (fill(h, timeout_ms) != 0) {
					free(out);
					return -1;
				}
			}
			if (sz == 0) {
				pos = data + 2;
				break;
			}
			if (olen + (size_t)sz + 1 > ocap) {
				ocap = (olen + (size_t)sz + 1) * 2;
				out = realloc(out, ocap);
			}
			memcpy(out + olen, h->buf + data, (size_t)sz);
			olen += (size_t)sz;
			pos = data + (size_t)sz + 2;
		}
		/* One request in flight: nothing follows; the body replaces buf. */
		if (olen + 1 > h->cap) {
			h->cap = olen + 1;
			h->buf = realloc(h->buf, h->cap);
		}
		memcpy(h->buf, out, olen);
		free(out);
		h->buf[olen] = 0;
		h->body = h->buf;
		h->body_len = olen;
		h->len = 0;
		if (close_after) {
			close(h->fd);
			h->fd = -1;
		}
		return 0;
	}
	if (clen < 0) {
		/* Until close (HTTP/1.0 style): read all, then reconnect next time. */
		while (fill(h, timeout_ms) == 0) {
		}
		h->body = h->buf + hlen;
		h->body_len = h->len - hlen;
		close(h->fd);
		h->fd = -1;
		h->len = 0;
		return 0;
	}
	while (h->len < hlen + (size_t)clen) {
		if (fill(h, timeout_ms) != 0) {
			return -1;
		}
	}
	h->body = h->buf + hlen;
	h->body_len = (size_t)clen;
	h->len = 0; /* one request in flight: nothing can follow */
	h->body[clen] = 0;
	if (close_after) {
		close(h->fd); /* the server closes: reconnect before the next request */
		h->fd = -1;
	}
	return 0;
}

/*
 * Sends a request and reads the response (status in h->status, body in
 * h->body). A broken keep-alive connection is reopened and the request sent
 * once more (counted in h->reconnects). Returns 0, or -1 on failure.
 */
static int http_request(http_t *h, const char *method, const char *path,
                        const char *hdrs, const char *body, int timeout_ms)
{
	size_t blen = body ? strlen(body) : 0;
	size_t need = strlen(path) + strlen(hdrs) + blen + 256;
	char *req = malloc(need);
	int n = snprintf(req, need,
	                 "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s"
	                 "Content-Length: %zu\r\n\r\n",
	                 method, path, hdrs, blen);
	if (body != NULL) {
		memcpy(req + n, body, blen);
	}
	int ret = -1;
	for (int attempt = 0; attempt < 2 && ret != 0; attempt++) {
		if (h->fd < 0 || attempt > 0) {
			if (attempt > 0) {
				h->reconnects++;
			}
			if (http_connect(h) != 0) {
				continue;
			}
		}
		h->len = 0;
		if (write_all(h->fd, req, (size_t)n + blen) != 0) {
			continue;
		}
		ret = http_read_response(h, timeout_ms);
	}
	free(req);
	return ret;
}

/* ------------------------------------------------------------------- DNS */

static int name_to_wire(const char *name, uint8_t *out)
{
	int len = 0;
	const char *p = name;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);
		if (l == 0 || l > 63) {
			break;
		}
		out[len++] = (uint8_t)l;
		memcpy(out + len, p, l);
		len += (int)l;
		p += l;
		if (*p == '.') {
			p++;
		}
	}
	out[len++] = 0;
	return len;
}

static int build_query(uint8_t *b, uint16_t id, const uint8_t *qname, int qlen,
                       uint16_t qtype)
{
	memset(b, 0, 12);
	b[0] = id >> 8;
	b[1] = id & 0xff;
	b[5] = 1; /* QDCOUNT */
	memcpy(b + 12, qname, qlen);
	int n = 12 + qlen;
	b[n++] = qtype >> 8;
	b[n++] = qtype & 0xff;
	b[n++] = 0;
	b[n++] = 1;
	if (O.do_bit) {
		/* EDNS OPT with DO=1 (--do): signed zones answer with RRSIGs. */
		static const uint8_t opt[11] = { 0, 0, 41, 0x04, 0xd0, 0, 0,
		                                 0x80, 0, 0, 0 };
		b[11] = 1; /* ARCOUNT */
		memcpy(b + n, opt, sizeof(opt));
		n += sizeof(opt);
	}
	return n;
}

/* Skips a (possibly compressed) name; returns the new offset or -1. */
static int skip_name(const uint8_t *p, int len, int off)
{
	while (off < len) {
		uint8_t l = p[off];
		if (l == 0) {
			return off + 1;
		}
		if ((l & 0xc0) == 0xc0) {
			return off + 2 <= len ? off + 2 : -1;
		}
		off += l + 1;
	}
	return -1;
}

/* Compares the (possibly compressed) name at off with wire name w. */
static int name_eq(const uint8_t *p, int len, int off, const uint8_t *w)
{
	int hops = 0;
	for (;;) {
		if (off >= len) {
			return 0;
		}
		uint8_t l = p[off];
		if ((l & 0xc0) == 0xc0) {
			if (off + 1 >= len || ++hops > 32) {
				return 0;
			}
			off = ((l & 0x3f) << 8) | p[off + 1];
			continue;
		}
		if (l != *w) {
			return 0;
		}
		if (l == 0) {
			return 1;
		}
		if (off + 1 + l > len || strncasecmp((const char *)p + off + 1,
		                                      (const char *)w + 1, l) != 0) {
			return 0;
		}
		off += l + 1;
		w += l + 1;
	}
}

/*
 * Looks through the answer section of response p for an RR of type qtype
 * owned by qname. For A: returns 1 if one has rdata == *addr. For SOA:
 * stores the refresh field in *addr and returns 1. Returns 0 when absent,
 * -1 for a bad/foreign response, -2 for an rcode other than NOERROR.
 */
static int answer_check(const uint8_t *p, int len, uint16_t id,
                        const uint8_t *qname, uint16_t qtype, uint32_t *val)
{
	if (len < 12 || ((p[0] << 8) | p[1]) != id || !(p[2] & 0x80)) {
		return -1;
	}
	if ((p[3] & 0x0f) != 0) {
		return -2;
	}
	int qd = (p[4] << 8) | p[5], an = (p[6] << 8) | p[7];
	int off = 12;
	for (int i = 0; i < qd; i++) {
		off = skip_name(p, len, off);
		if (off < 0 || off + 4 > len) {
			return -1;
		}
		off += 4;
	}
	for (int i = 0; i < an; i++) {
		int rr = off;
		off = skip_name(p, len, off);
		if (off < 0 || off + 10 > len) {
			return -1;
		}
		uint16_t type = (p[off] << 8) | p[off + 1];
		uint16_t rdlen = (p[off + 8] << 8) | p[off + 9];
		int rdata = off + 10;
		if (rdata + rdlen > len) {
			return -1;
		}
		if (type == qtype && name_eq(p, len, rr, qname)) {
			if (qtype == 1 && rdlen == 4 && memcmp(p + rdata, val, 4) == 0) {
				return 1;
			}
			if (qtype == 6) {
				int o = skip_name(p, len, rdata);
				if (o > 0) {
					o = skip_name(p, len, o);
				}
				if (o > 0 && o + 8 <= rdata + rdlen) {
					*val = ((uint32_t)p[o + 4] << 24) | (p[o + 5] << 16) |
					       (p[o + 6] << 8) | p[o + 7];
					return 1;
				}
			}
		}
		off = rdata + rdlen;
	}
	return 0;
}

typedef struct {
	int fd;
	uint16_t id;
	struct sockaddr_in sa;
} udp_t;

static void udp_init(udp_t *u, const char *addr)
{
	parse_addr(addr, &u->sa);
	u->fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (u->fd < 0 || connect(u->fd, (struct sockaddr *)&u->sa, sizeof(u->sa)) != 0) {
		die("udp socket: %s", strerror(errno));
	}
	u->id = (uint16_t)(getpid() * 7919 + (uintptr_t)u);
}

/* One query for qname/A and its answer (or 1 s): brings the old data into
 * the server's caches, as a record that resolvers ask for would be. */
static void warm_query(udp_t *u, const uint8_t *qname, int qlen)
{
	uint8_t q[512], r[4096];
	uint16_t id = ++u->id;
	int n = build_query(q, id, qname, qlen, 1);
	if (send(u->fd, q, n, 0) != n) {
		return;
	}
	double until = now_us() + 1e6;
	for (;;) {
		int wait = (int)((until - now_us()) / 1000) + 1;
		struct pollfd p = { .fd = u->fd, .events = POLLIN };
		if (wait <= 0 || poll(&p, 1, wait) <= 0) {
			return;
		}
		ssize_t got = recv(u->fd, r, sizeof(r), 0);
		if (got >= 2 && ((r[0] << 8) | r[1]) == id) {
			return;
		}
	}
}

/* Drains stale datagrams (late answers of earlier samples). */
static void udp_drain(udp_t *u)
{
	uint8_t b[4096];
	while (recv(u->fd, b, sizeof(b), MSG_DONTWAIT) > 0) {
	}
}

/*
 * Queries qname/qtype until the answer matches (A: address *val; SOA:
 * refresh == *val), or the deadline passes. Returns 1 (matched), 0 (timeout).
 * *queries gets the number of queries sent.
 */
static int query_until(udp_t *u, const uint8_t *qname, int qlen, uint16_t qtype,
                       uint32_t want, double start, double deadline,
                       int *queries, double *t_match)
{
	uint8_t q[512], r[65536];
	*queries = 0;
	for (;;) {
		double t = now_us();
		if (t >= deadline) {
			return 0;
		}
		if (t - start > 100000) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL); /* paced: 1 query per ms after 100 ms */
		}
		uint16_t id = ++u->id;
		int n = build_query(q, id, qname, qlen, qtype);
		if (send(u->fd, q, n, 0) != n) {
			continue;
		}
		(*queries)++;
		for (;;) {
			t = now_us();
			int wait = (int)((deadline - t) / 1000) + 1;
			if (wait > 500) {
				wait = 500; /* a lost datagram: resend after 0.5 s */
			}
			struct pollfd p = { .fd = u->fd, .events = POLLIN };
			if (poll(&p, 1, wait) <= 0) {
				break;
			}
			ssize_t got = recv(u->fd, r, sizeof(r), 0);
			if (got <= 0) {
				break;
			}
			uint32_t v = want;
			int m = answer_check(r, (int)got, id, qname, qtype, &v);
			if (m == -1) {
				continue; /* not ours (a late answer): keep waiting */
			}
			if ((m == 1 && (qtype == 1 || v == want)) ||
			    (O.null_mode && qtype == 1 && m == 0 && ((r[6] << 8) | r[7]) > 0)) {
				*t_match = now_us();
				return 1;
			}
			break; /* answered, not yet the new data: ask again */
		}
	}
}

/* ---------------------------------------------------- RFC 2136 UPDATE */

static int put16(uint8_t *b, int n, uint16_t v)
{
	b[n] = v >> 8;
	b[n + 1] = v & 0xff;
	return n + 2;
}

static int put32(uint8_t *b, int n, uint32_t v)
{
	n = put16(b, n, v >> 16);
	return put16(b, n, v & 0xffff);
}

/* Header + zone section; returns length. count = UPCOUNT. */
static int update_header(uint8_t *b, uint16_t id, const uint8_t *zone, int zlen,
                         unsigned count)
{
	memset(b, 0, 12);
	put16(b, 0, id);
	b[2] = 5 << 3; /* opcode UPDATE */
	put16(b, 4, 1);
	put16(b, 8, (uint16_t)count);
	memcpy(b + 12, zone, zlen);
	int n = 12 + zlen;
	n = put16(b, n, 6);
	return put16(b, n, 1);
}

/* Appends "delete RRset NAME A" (if del) and "add NAME 60 A addr". */
static int update_add(uint8_t *b, int n, const uint8_t *name, int nlen,
                      const uint8_t addr[4], int del)
{
	if (del) {
		memcpy(b + n, name, nlen);
		n += nlen;
		n = put16(b, n, 1);
		n = put16(b, n, 255); /* class ANY: delete the RRset */
		n = put32(b, n, 0);
		n = put16(b, n, 0);
	}
	memcpy(b + n, name, nlen);
	n += nlen;
	n = put16(b, n, 1);
	n = put16(b, n, 1);
	n = put32(b, n, 60);
	n = put16(b, n, 4);
	memcpy(b + n, addr, 4);
	return n + 4;
}

/* Sends an UPDATE over UDP and waits for its response; returns the rcode or -1. */
static int update_udp(udp_t *u, uint8_t *msg, int len, int timeout_ms)
{
	uint8_t r[4096];
	uint16_t id = (msg[0] << 8) | msg[1];
	for (int attempt = 0; attempt < 3; attempt++) {
		if (send(u->fd, msg, len, 0) != len) {
			return -1;
		}
		double until = now_us() + timeout_ms * 1000.0 / 3;
		for (;;) {
			int wait = (int)((until - now_us()) / 1000) + 1;
			struct pollfd p = { .fd = u->fd, .events = POLLIN };
			if (wait <= 0 || poll(&p, 1, wait) <= 0) {
				break;
			}
			ssize_t got = recv(u->fd, r, sizeof(r), 0);
			if (got >= 12 && ((r[0] << 8) | r[1]) == id && (r[2] & 0x80)) {
				return r[3] & 0x0f;
			}
		}
	}
	return -1;
}

/* UPDATE over TCP (length-prefixed); returns the rcode or -1. */
static int update_tcp(const struct sockaddr_in *sa, uint8_t *msg, int len)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) != 0) {
		close(fd);
		return -1;
	}
	uint8_t lenb[2] = { len >> 8, len & 0xff };
	int rc = -1;
	uint8_t r[4096];
	if (write_all(fd, (char *)lenb, 2) == 0 && write_all(fd, (char *)msg, len) == 0) {
		size_t got = 0;
		while (got < 14) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			if (poll(&p, 1, 60000) <= 0) {
				break;
			}
			ssize_t n = recv(fd, r + got, sizeof(r) - got, 0);
			if (n <= 0) {
				break;
			}
			got += (size_t)n;
		}
		if (got >= 14) {
			rc = r[5] & 0x0f;
		}
	}
	close(fd);
	return rc;
}

/* ----------------------------------------------------------- targets */

typedef struct {
	char name[256];     /* FQDN with the final dot */
	char id[128];       /* zonecast record id (may be empty) */
	uint8_t wire[256];
	int wlen;
	uint8_t cur[4];     /* address currently published (null mode) */
} target_t;

static target_t *load_targets(const char *file, int *count)
{
	FILE *f = fopen(file, "r");
	if (f == NULL) {
		die("cannot open %s", file);
	}
	int cap = 1024, n = 0;
	target_t *t = calloc(cap, sizeof(*t));
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		char name[256] = "", id[128] = "", addr[64] = "";
		if (sscanf(line, "%255s %63s %127s", name, addr, id) < 2) {
			continue;
		}
		if (n == cap) {
			cap *= 2;
			t = realloc(t, cap * sizeof(*t));
		}
		memset(&t[n], 0, sizeof(t[n]));
		snprintf(t[n].name, sizeof(t[n].name), "%s", name);
		snprintf(t[n].id, sizeof(t[n].id), "%s", id);
		inet_pton(AF_INET, addr, t[n].cur);
		t[n].wlen = name_to_wire(name, t[n].wire);
		n++;
	}
	fclose(f);
	if (n == 0) {
		die("no targets in %s", file);
	}
	*count = n;
	return t;
}

/* "name." -> "name" for zonecast's API. */
static void api_name(const char *fqdn, char *out, size_t cap)
{
	snprintf(out, cap, "%s", fqdn);
	size_t l = strlen(out);
	if (l > 1 && out[l - 1] == '.') {
		out[l - 1] = 0;
	}
}

static void auth_headers(char *h, size_t cap)
{
	if (O.proto == P_ZC) {
		snprintf(h, cap, "Authorization: Bearer %s\r\nContent-Type: application/json\r\n",
		         O.token);
	} else {
		snprintf(h, cap, "X-API-Key: %s\r\nContent-Type: application/json\r\n",
		         O.api_key);
	}
}

/* The n-th unique address: 100.64.0.0/10 (+ 198.18/15 high bits), never in the zones. */
static void unique_addr(unsigned n, uint8_t a[4], char *txt)
{
	n %= (1u << 22);
	a[0] = 100;
	a[1] = 64 + ((n >> 16) & 63);
	a[2] = (n >> 8) & 255;
	a[3] = n & 255;
	sprintf(txt, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
}

/* ------------------------------------------------------------- writes */

/* Writes target t := addr through the peer's interface; returns 0 on success. */
static int do_write(http_t *h, udp_t *u, const target_t *t, const char *addr_txt,
                    const uint8_t addr[4], const uint8_t *zwire, int zlen)
{
	char path[512], body[1024], hdrs[512];
	if (O.proto == P_BIND) {
		uint8_t msg[1024];
		int n = update_header(msg, ++u->id, zwire, zlen, 2);
		n = update_add(msg, n, t->wire, t->wlen, addr, 1);
		return update_udp(u, msg, n, O.timeout_ms) == 0 ? 0 : -1;
	}
	auth_headers(hdrs, sizeof(hdrs));
	if (O.proto == P_ZC) {
		snprintf(path, sizeof(path), "/client/v4/zones/%s/dns_records/%s%s",
		         O.zone_id, t->id, O.wait_live ? "?wait=live" : "");
		snprintf(body, sizeof(body), "{\"content\":\"%s\"}", addr_txt);
		if (http_request(h, "PATCH", path, hdrs, body, O.timeout_ms) != 0) {
			return -1;
		}
	} else {
		snprintf(path, sizeof(path), "/api/v1/servers/localhost/zones/%s", O.zone);
		snprintf(body, sizeof(body),
		         "{\"rrsets\":[{\"name\":\"%s\",\"type\":\"A\",\"ttl\":60,"
		         "\"changetype\":\"REPLACE\",\"records\":[{\"content\":\"%s\","
		         "\"disabled\":false}]}]}", t->name, addr_txt);
		if (http_request(h, "PATCH", path, hdrs, body, O.timeout_ms) != 0) {
			return -1;
		}
	}
	if (h->status / 100 != 2) {
		fprintf(stderr, "write %s: HTTP %d: %.300s\n", t->name, h->status, h->body);
		return -1;
	}
	return 0;
}

/* The null write: a read of the same kind (connection, parse) that changes nothing. */
static int do_null(http_t *h, udp_t *u, const target_t *t, const uint8_t *zwire, int zlen)
{
	char path[512], hdrs[512];
	if (O.proto == P_BIND) {
		uint8_t q[512];
		int n = build_query(q, ++u->id, zwire, zlen, 6);
		return update_udp(u, q, n, O.timeout_ms) == 0 ? 0 : -1;
	}
	auth_headers(hdrs, sizeof(hdrs));
	if (O.proto == P_ZC) {
		snprintf(path, sizeof(path), "/client/v4/zones/%s/dns_records/%s",
		         O.zone_id, t->id);
	} else {
		snprintf(path, sizeof(path), "/api/v1/servers/localhost");
	}
	if (http_request(h, "GET", path, hdrs, NULL, O.timeout_ms) != 0 ||
	    h->status / 100 != 2) {
		return -1;
	}
	return 0;
}

static int stop_requested(void)
{
	struct stat st;
	return O.stop_file[0] && stat(O.stop_file, &st) == 0;
}

static int cmd_prop(void)
{
	int nt;
	target_t *t = load_targets(O.targets, &nt);
	http_t h = { .fd = -1 };
	if (O.proto != P_BIND) {
		http_init(&h, O.http);
	}
	udp_t u;
	udp_init(&u, O.dns);
	uint8_t zwire[256];
	int zlen = name_to_wire(O.zone, zwire);
	FILE *out = O.out[0] ? fopen(O.out, "w") : stdout;
	if (out == NULL) {
		die("cannot write %s", O.out);
	}
	double run_start = now_us();
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	int done = 0, timeouts = 0, errors = 0;
	long total_polls = 0;
	for (int i = 0; i < O.samples; i++) {
		if (stop_requested()) {
			break;
		}
		if (O.budget_s > 0 && now_us() - run_start > O.budget_s * 1e6) {
			break;
		}
		target_t *tg = &t[i % nt];
		uint8_t addr[4];
		char addr_txt[32];
		if (O.null_mode) {
			memcpy(addr, tg->cur, 4);
		} else {
			unique_addr(O.seq_base + (unsigned)i, addr, addr_txt);
		}
		udp_drain(&u);
		if (!O.no_warm) {
			warm_query(&u, tg->wire, tg->wlen);
		}
		double t0 = now_us();
		int w = O.null_mode ? do_null(&h, &u, tg, zwire, zlen) :
		        do_write(&h, &u, tg, addr_txt, addr, zwire, zlen);
		double t_api = now_us();
		int polls = 0, ok = 0;
		double t_match = 0;
		if (w == 0) {
			uint32_t want;
			memcpy(&want, addr, 4);
			ok = query_until(&u, tg->wire, tg->wlen, 1, want, t_api,
			                 t0 + O.timeout_ms * 1000.0, &polls, &t_match);
		}
		const char *st = w != 0 ? "error" : ok ? "ok" : "timeout";
		errors += w != 0;
		timeouts += w == 0 && !ok;
		total_polls += polls;
		fprintf(out, "%d %.1f %.1f %d %s\n", i,
		        ok ? t_match - t0 : now_us() - t0, t_api - t0, polls, st);
		if (!O.null_mode && ok) {
			memcpy(tg->cur, addr, 4);
		}
		done++;
		if (w != 0 && errors > 20) {
			fprintf(stderr, "too many errors, giving up\n");
			break;
		}
	}
	getrusage(RUSAGE_SELF, &ru1);
	double cpu = (ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) * 1e6 +
	             (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) +
	             (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1e6 +
	             (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec);
	fprintf(out, "# samples %d timeouts %d errors %d polls %ld connects %u reconnects %u "
	        "client_cpu_us_per_sample %.1f wall_s %.2f\n", done, timeouts, errors,
	        total_polls, h.connects, h.reconnects, done ? cpu / done : 0,
	        (now_us() - run_start) / 1e6);
	if (out != stdout) {
		fclose(out);
	}
	return errors > 20 ? 1 : 0;
}

/* zonecast: target "name addr" -> "name addr id" (id of its A record). */
static int cmd_resolve(void)
{
	int nt;
	target_t *t = load_targets(O.targets, &nt);
	http_t h;
	http_init(&h, O.http);
	char hdrs[512], path[1024], nm[256];
	auth_headers(hdrs, sizeof(hdrs));
	FILE *out = fopen(O.out, "w");
	if (out == NULL) {
		die("cannot write %s", O.out);
	}
	int ok = 0, kept = 0;
	for (int i = 0; i < nt; i++) {
		api_name(t[i].name, nm, sizeof(nm));
		if (t[i].id[0]) {
			/* A cached id: keep it if it is still this name's A record. */
			char want[300];
			snprintf(path, sizeof(path), "/client/v4/zones/%s/dns_records/%s",
			         O.zone_id, t[i].id);
			snprintf(want, sizeof(want), "\"name\":\"%s\"", nm);
			if (http_request(&h, "GET", path, hdrs, NULL, 30000) == 0 &&
			    h.status == 200 && strstr(h.body, want) != NULL &&
			    strstr(h.body, "\"type\":\"A\"") != NULL) {
				char *c = strstr(h.body, "\"content\":\"");
				char *ce = c ? strchr(c + 11, '"') : NULL;
				if (c && ce) {
					fprintf(out, "%s %.*s %s\n", t[i].name, (int)(ce - c - 11),
					        c + 11, t[i].id);
					ok++;
					kept++;
					continue;
				}
			}
		}
		snprintf(path, sizeof(path),
		         "/client/v4/zones/%s/dns_records?name=%s&type=A", O.zone_id, nm);
		if (http_request(&h, "GET", path, hdrs, NULL, 300000) != 0 || h.status != 200) {
			die("GET %s: HTTP %d %.200s", path, h.status, h.body ? h.body : "");
		}
		char *id = strstr(h.body, "\"id\":\"");
		char *c = strstr(h.body, "\"content\":\"");
		if (id == NULL || c == NULL) {
			continue;
		}
		id += 6;
		c += 11;
		char *e = strchr(id, '"'), *ce = strchr(c, '"');
		fprintf(out, "%s %.*s %.*s\n", t[i].name, (int)(ce - c), c, (int)(e - id), id);
		ok++;
	}
	fprintf(stderr, "%d cached ids still valid, ", kept);
	fclose(out);
	fprintf(stderr, "resolved %d/%d record ids\n", ok, nt);
	return ok == nt ? 0 : 1;
}

static int cmd_fullbuild(void)
{
	http_t h;
	http_init(&h, O.http);
	udp_t u;
	udp_init(&u, O.dns);
	uint8_t zwire[256];
	int zlen = name_to_wire(O.zone, zwire);
	char hdrs[512], path[512], body[256];
	auth_headers(hdrs, sizeof(hdrs));
	snprintf(path, sizeof(path), "/client/v4/zones/%s", O.zone_id);
	snprintf(body, sizeof(body), "{\"soa\":{\"refresh\":%d}}", O.refresh);
	double t0 = now_us();
	int w = http_request(&h, "PATCH", path, hdrs, body, O.timeout_ms);
	double t_api = now_us();
	int polls = 0, ok = 0;
	double t_match = 0;
	if (w != 0 || h.status / 100 != 2) {
		fprintf(stderr, "PATCH zone: HTTP %d %.300s\n", h.status, h.body ? h.body : "");
	} else {
		ok = query_until(&u, zwire, zlen, 6, (uint32_t)O.refresh, t_api,
		                 t0 + O.timeout_ms * 1000.0, &polls, &t_match);
	}
	printf("%.1f %.1f %d %s\n", ok ? t_match - t0 : now_us() - t0, t_api - t0,
	       polls, w != 0 || h.status / 100 != 2 ? "error" : ok ? "ok" : "timeout");
	if (O.stop_file[0]) {
		FILE *f = fopen(O.stop_file, "w");
		if (f) {
			fclose(f);
		}
	}
	return ok ? 0 : 1;
}

/* --------------------------------------------------- throughput modes */

typedef struct {
	int idx;
	long writes, changes, errors;
	double *lat;     /* per-request latency (us) */
	long lat_n, lat_cap;
	char last_name[512];
	uint8_t last_addr[4];
	double deadline;
} worker_t;

static char *zone_noddot(void)
{
	static char z[256];
	api_name(O.zone, z, sizeof(z));
	return z;
}

/* PowerDNS takes PATCH, not POST, for rrset changes. */
static const char *method_for_proto(void)
{
	return O.proto == P_PDNS ? "PATCH" : "POST";
}

/* One write of `count` new records named TAG<k>-<i>.ZONE; returns 0 on success. */
static int write_new(http_t *h, const struct sockaddr_in *dns_sa, udp_t *u,
                     worker_t *wk, unsigned k, int count)
{
	char hdrs[512], path[512];
	size_t cap = (size_t)count * 200 + 256, n = 0;
	char *body = malloc(cap);
	uint8_t addr[4];
	char atxt[32], name[512];
	int rc = -1;
	if (O.proto == P_BIND) {
		uint8_t zw[256], nw[256];
		int zlen = name_to_wire(O.zone, zw);
		uint8_t *msg = malloc((size_t)count * 300 + 512);
		int len = update_header(msg, ++u->id, zw, zlen, (unsigned)count);
		for (int i = 0; i < count; i++) {
			snprintf(name, sizeof(name), "%s%u-%d.%s", O.tag, k, i, O.zone);
			unique_addr(k * 65536u + (unsigned)i, addr, atxt);
			int nl = name_to_wire(name, nw);
			len = update_add(msg, len, nw, nl, addr, 0);
		}
		rc = count == 1 ? update_udp(u, msg, len, 30000) : update_tcp(dns_sa, msg, len);
		free(msg);
		free(body);
		snprintf(wk->last_name, sizeof(wk->last_name), "%s%u-%d.%s", O.tag, k,
		         count - 1, O.zone);
		unique_addr(k * 65536u + (unsigned)(count - 1), wk->last_addr, atxt);
		return rc == 0 ? 0 : -1;
	}
	auth_headers(hdrs, sizeof(hdrs));
	if (O.proto == P_ZC) {
		const char *live = O.wait_live ? "?wait=live" : "";
		if (count == 1) {
			snprintf(path, sizeof(path), "/client/v4/zones/%s/dns_records%s",
			         O.zone_id, live);
		} else {
			snprintf(path, sizeof(path), "/client/v4/zones/%s/dns_records/batch%s",
			         O.zone_id, live);
			n += snprintf(body + n, cap - n, "{\"posts\":[");
		}
		for (int i = 0; i < count; i++) {
			unique_addr(k * 65536u + (unsigned)i, addr, atxt);
			n += snprintf(body + n, cap - n,
			              "%s{\"name\":\"%s%u-%d.%s\",\"type\":\"A\",\"content\":\"%s\","
			              "\"ttl\":60}", i ? "," : "", O.tag, k, i, zone_noddot(), atxt);
		}
		if (count != 1) {
			n += snprintf(body + n, cap - n, "]}");
		}
	} else {
		snprintf(path, sizeof(path), "/api/v1/servers/localhost/zones/%s", O.zone);
		n += snprintf(body + n, cap - n, "{\"rrsets\":[");
		for (int i = 0; i < count; i++) {
			unique_addr(k * 65536u + (unsigned)i, addr, atxt);
			n += snprintf(body + n, cap - n,
			              "%s{\"name\":\"%s%u-%d.%s\",\"type\":\"A\",\"ttl\":60,"
			              "\"changetype\":\"REPLACE\",\"records\":[{\"content\":\"%s\","
			              "\"disabled\":false}]}", i ? "," : "", O.tag, k, i, O.zone, atxt);
		}
		n += snprintf(body + n, cap - n, "]}");
	}
	if (http_request(h, method_for_proto(), path, hdrs, body, 120000) == 0) {
		rc = h->status / 100 == 2 ? 0 : -1;
		if (rc != 0 && wk->errors < 3) {
			fprintf(stderr, "write: HTTP %d %.300s\n", h->status, h->body);
		}
	}
	free(body);
	snprintf(wk->last_name, sizeof(wk->last_name), "%s%u-%d.%s", O.tag, k, count - 1,
	         O.zone);
	unique_addr(k * 65536u + (unsigned)(count - 1), wk->last_addr, atxt);
	return rc;
}

static void lat_add(worker_t *w, double v)
{
	if (w->lat_n == w->lat_cap) {
		w->lat_cap = w->lat_cap ? w->lat_cap * 2 : 4096;
		w->lat = realloc(w->lat, w->lat_cap * sizeof(double));
	}
	w->lat[w->lat_n++] = v;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double pct(double *v, long n, double p)
{
	if (n == 0) {
		return 0;
	}
	long i = (long)(p * n + 0.999999) - 1;
	if (i < 0) {
		i = 0;
	}
	if (i >= n) {
		i = n - 1;
	}
	return v[i];
}

/* Waits until the last written record answers; returns the time it did. */
static double wait_visible(const char *name, const uint8_t addr[4], int *ok)
{
	udp_t u;
	udp_init(&u, O.dns);
	uint8_t w[256];
	int wl = name_to_wire(name, w);
	uint32_t want;
	memcpy(&want, addr, 4);
	int polls;
	double t = now_us(), tm = 0;
	*ok = query_until(&u, w, wl, 1, want, t, t + 120e6, &polls, &tm);
	close(u.fd);
	return *ok ? tm : now_us();
}

static int cmd_batch(void)
{
	http_t h = { .fd = -1 };
	if (O.proto != P_BIND) {
		http_init(&h, O.http);
	}
	udp_t u;
	udp_init(&u, O.dns);
	struct sockaddr_in dns_sa;
	parse_addr(O.dns, &dns_sa);
	worker_t wk = { 0 };
	double t0 = now_us();
	for (int b = 0; b < O.batches; b++) {
		if (b > 0 && O.budget_s > 0 && now_us() - t0 > O.budget_s * 1e6) {
			break; /* time budget used up: report what was done */
		}
		double s = now_us();
		if (write_new(&h, &dns_sa, &u, &wk, (unsigned)b, O.batch_size) == 0) {
			wk.writes++;
			wk.changes += O.batch_size;
		} else {
			wk.errors++;
		}
		lat_add(&wk, now_us() - s);
	}
	double t_acked = now_us();
	int ok;
	double t_vis = wait_visible(wk.last_name, wk.last_addr, &ok);
	qsort(wk.lat, wk.lat_n, sizeof(double), dcmp);
	printf("batch proto=%d zone=%s batches=%ld size=%d errors=%ld changes=%ld acked_s=%.3f "
	       "visible_s=%.3f last_visible=%s acked_per_s=%.0f visible_per_s=%.0f "
	       "req_p50_ms=%.2f req_p99_ms=%.2f req_max_ms=%.2f\n",
	       (int)O.proto, O.zone, wk.writes, O.batch_size, wk.errors, wk.changes,
	       (t_acked - t0) / 1e6, (t_vis - t0) / 1e6, ok ? "yes" : "NO",
	       wk.changes / ((t_acked - t0) / 1e6), wk.changes / ((t_vis - t0) / 1e6),
	       pct(wk.lat, wk.lat_n, .5) / 1e3, pct(wk.lat, wk.lat_n, .99) / 1e3,
	       pct(wk.lat, wk.lat_n, 1) / 1e3);
	return wk.errors ? 1 : 0;
}

static void *conc_main(void *arg)
{
	worker_t *wk = arg;
	http_t h = { .fd = -1 };
	if (O.proto != P_BIND) {
		http_init(&h, O.http);
	}
	udp_t u;
	udp_init(&u, O.dns);
	struct sockaddr_in dns_sa;
	parse_addr(O.dns, &dns_sa);
	for (unsigned k = 0; now_us() < wk->deadline; k++) {
		double s = now_us();
		/* record k of thread idx: tag "<tag><idx>x" keeps names unique */
		unsigned key = (unsigned)wk->idx * 100000u + k;
		if (write_new(&h, &dns_sa, &u, wk, key, 1) == 0) {
			wk->writes++;
			wk->changes++;
		} else {
			wk->errors++;
			if (wk->errors > 50) {
				break;
			}
		}
		lat_add(wk, now_us() - s);
	}
	if (h.fd >= 0) {
		close(h.fd);
	}
	close(u.fd);
	return NULL;
}

static int cmd_concurrent(void)
{
	pthread_t th[256];
	worker_t wk[256];
	int n = O.threads > 256 ? 256 : O.threads;
	double t0 = now_us();
	for (int i = 0; i < n; i++) {
		memset(&wk[i], 0, sizeof(wk[i]));
		wk[i].idx = i;
		wk[i].deadline = t0 + O.seconds * 1e6;
		pthread_create(&th[i], NULL, conc_main, &wk[i]);
	}
	long changes = 0, errors = 0, lat_n = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		changes += wk[i].changes;
		errors += wk[i].errors;
		lat_n += wk[i].lat_n;
	}
	double t_acked = now_us();
	/* every thread's last record must be visible */
	double t_vis = t_acked;
	int all_ok = 1;
	for (int i = 0; i < n; i++) {
		if (wk[i].last_name[0]) {
			int ok;
			double t = wait_visible(wk[i].last_name, wk[i].last_addr, &ok);
			all_ok &= ok;
			if (t > t_vis) {
				t_vis = t;
			}
		}
	}
	double *all = malloc((lat_n + 1) * sizeof(double));
	long k = 0;
	for (int i = 0; i < n; i++) {
		memcpy(all + k, wk[i].lat, wk[i].lat_n * sizeof(double));
		k += wk[i].lat_n;
	}
	qsort(all, lat_n, sizeof(double), dcmp);
	printf("concurrent proto=%d zone=%s threads=%d changes=%ld errors=%ld acked_s=%.3f "
	       "visible_s=%.3f last_visible=%s acked_per_s=%.0f visible_per_s=%.0f "
	       "req_p50_ms=%.2f req_p99_ms=%.2f req_max_ms=%.2f\n",
	       (int)O.proto, O.zone, n, changes, errors, (t_acked - t0) / 1e6, (t_vis - t0) / 1e6,
	       all_ok ? "yes" : "NO", changes / ((t_acked - t0) / 1e6),
	       changes / ((t_vis - t0) / 1e6), pct(all, lat_n, .5) / 1e3,
	       pct(all, lat_n, .99) / 1e3, pct(all, lat_n, 1) / 1e3);
	return errors ? 1 : 0;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	if (argc < 2) {
		die("usage: propagation_client prop|resolve|fullbuild|batch|concurrent OPTIONS "
		    "(see the header of propagation_client.c)");
	}
	const char *cmd = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define S(opt, field) if (strcmp(a, opt) == 0 && v) { snprintf(O.field, sizeof(O.field), "%s", v); i++; continue; }
#define I(opt, field) if (strcmp(a, opt) == 0 && v) { O.field = atoi(v); i++; continue; }
		S("--http", http) S("--dns", dns) S("--zone", zone) S("--zone-id", zone_id)
		S("--token", token) S("--api-key", api_key) S("--targets", targets)
		S("--out", out) S("--stop-file", stop_file) S("--tag", tag)
		I("--samples", samples) I("--timeout-ms", timeout_ms) I("--budget-s", budget_s)
		I("--refresh", refresh) I("--batch-size", batch_size) I("--batches", batches)
		I("--threads", threads) I("--seconds", seconds)
		if (strcmp(a, "--seq-base") == 0 && v) {
			O.seq_base = (unsigned)strtoul(v, NULL, 10);
			i++;
			continue;
		}
		if (strcmp(a, "--no-warm") == 0) {
			O.no_warm = 1;
			continue;
		}
		if (strcmp(a, "--null") == 0) {
			O.null_mode = 1;
			continue;
		}
		if (strcmp(a, "--do") == 0) {
			O.do_bit = 1;
			continue;
		}
		if (strcmp(a, "--wait-live") == 0) {
			O.wait_live = 1;
			continue;
		}
		if (strcmp(a, "--proto") == 0 && v) {
			O.proto = strcmp(v, "pdns") == 0 ? P_PDNS : strcmp(v, "bind") == 0 ? P_BIND :
			          strcmp(v, "zc") == 0 ? P_ZC : (die("bad --proto %s", v), P_ZC);
			i++;
			continue;
		}
		die("unknown option %s", a);
	}
	size_t zl = strlen(O.zone);
	if (zl && O.zone[zl - 1] != '.' && zl + 1 < sizeof(O.zone)) {
		strcat(O.zone, ".");
	}
	if (strcmp(cmd, "prop") == 0) {
		return cmd_prop();
	}
	if (strcmp(cmd, "resolve") == 0) {
		return cmd_resolve();
	}
	if (strcmp(cmd, "fullbuild") == 0) {
		return cmd_fullbuild();
	}
	if (strcmp(cmd, "batch") == 0) {
		return cmd_batch();
	}
	if (strcmp(cmd, "concurrent") == 0) {
		return cmd_concurrent();
	}
	die("unknown command %s", cmd);
	return 1;
}
