/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The control socket: a Unix stream socket (mode 0600, by default
 * DATA_DIR/control.sock) on which the running server answers `zonecast
 * status | reload | stop | zone status` (cmd_control.c is the client).
 *
 * Protocol: the client sends one line, a JSON object
 * {"command": "status" | "reload" | "stop" | "zone-status", "zone": NAME};
 * the server answers one line, {"ok": true, "result": {...}} or
 * {"ok": false, "error": "..."}, and closes. A request holds only its
 * command's members (control_request.c) and nothing after the object. Only the server's own user
 * (or root) may connect: the file's mode says so, and the peer's
 * credentials (SO_PEERCRED) are checked too, in case the socket sits in a
 * directory others can reach. One connection at a time, each with 5 s
 * to send its request line in all (and 5 s per write of the answer): a
 * stuck or slow client holds nothing for long.
 *
 * The zonecast command's writes (cli/admin.h: "zone-import",
 * "zone-delete", "tsig-create", "tsig-delete", "token-create",
 * "token-revoke", "secondaries-set", "dnssec") come the same
 * way, a zone import with the zone file's descriptor attached to the line
 * (SCM_RIGHTS): the server reads what the operator could read. Each runs
 * on a thread of its own (at most MAX_WRITES at once), through the
 * server's writer, and is answered once its change is served:
 * {"ok": bool, "code": N, "stdout": "...", "stderr": "..."}, the text the
 * command prints and the outcome it exits with. A stop lets the running
 * writes end first (a wait for the builder ends at once, said in the
 * reply).
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/admin.h"
#include "cli/serve.h"
#include "common/error.h"
#include "common/log.h"
#include "common/wait.h"

#define REQUEST_MAX 16384
#define IO_TIMEOUT_S 5
#define MAX_WRITES 8

struct control {
	serve_ctx_t *ctx;
	int fd;
	int stop_fd;
	pthread_t thread;
	char path[108];
	atomic_bool stopping;
	pthread_mutex_t lock;   /* Guards writes. */
	pthread_cond_t ended;   /* Signalled as each write ends. */
	unsigned writes;        /* Write threads running. */
};

/* A socket file left by a server that is gone is removed; one a live
 * server answers on is not ours to take. */
static int clear_stale(const char *path)
{
	/* Only a socket: connect() to any other file fails as to a stale
	 * socket (ECONNREFUSED), and a control-socket naming the config
	 * file removed it. */
	struct stat st;
	if (lstat(path, &st) != 0) {
		return errno == ENOENT ? ZC_EOK : -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		zc_error("control socket %s: a file that is not a socket is "
		         "there; not removed (control-socket)", path);
		return -EEXIST;
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return -errno;
	}
	int ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	int err = errno;
	close(fd);
	if (ret == 0) {
		zc_error("control socket %s: another server answers there "
		         "(control-socket)", path);
		return -EADDRINUSE;
	}
	if (err == ECONNREFUSED && unlink(path) != 0 && errno != ENOENT) {
		zc_error("control socket %s: cannot remove the stale socket: %s",
		         path, strerror(errno));
		return -errno;
	}
	return ZC_EOK;
}

static int listen_at(const char *path, int *out)
{
	int ret = clear_stale(path);
	if (ret != ZC_EOK) {
		return ret;
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return -errno;
	}
	/* Created 0600 (no moment with a wider mode), then made sure of. */
	mode_t old = umask(0177);
	ret = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (ret != 0 || chmod(path, 0600) != 0 || listen(fd, 16) != 0) {
		ret = -errno;
		zc_error("control socket %s: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	*out = fd;
	return ZC_EOK;
}

/* Whether the peer is this server's user or root; who it is, "uid=U
 * pid=P", into client (for the audit line). */
static bool peer_allowed(int fd, char *client, size_t size)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
		snprintf(client, size, "unknown");
		return false;
	}
	snprintf(client, size, "uid=%u pid=%d", (unsigned)cred.uid,
	         (int)cred.pid);
	return cred.uid == 0 || cred.uid == geteuid();
}

/* Keeps the first descriptor a message carried (*passed, -1 when none
 * yet) and closes any other. */
static void take_fds(struct msghdr *msg, int *passed)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c != NULL;
	     c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
			continue;
		}
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*passed < 0) {
				*passed = fd;
			} else {
				close(fd);
			}
		}
	}
}

/* Milliseconds left until deadline (CLOCK_MONOTONIC), at least 0. */
static int64_t ms_left(const struct timespec *deadline)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	int64_t ms = (int64_t)(deadline->tv_sec - now.tv_sec) * 1000 +
	             (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? ms : 0;
}

/* Reads one line (the request) and the descriptor sent with it (*passed,
 * -1: none) within IO_TIMEOUT_S in all: a client sending a byte every
 * few seconds held the socket, one connection at a time, for hours.
 * False on timeout, EOF or overflow. */
static bool read_line(int fd, char *buf, size_t size, size_t *got,
                      int *passed)
{
	size_t len = 0;
	*passed = -1;
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += IO_TIMEOUT_S;
	while (len < size - 1) {
		int64_t left = ms_left(&deadline);
		struct timeval tv = { .tv_sec = left / 1000,
		                      .tv_usec = (left % 1000) * 1000 };
		if (left == 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
		                            sizeof(tv)) != 0) {
			return false;
		}
		union {
			struct cmsghdr hdr;
			char buf[CMSG_SPACE(4 * sizeof(int))];
		} control;
		struct iovec iov = { .iov_base = buf + len,
		                     .iov_len = size - 1 - len };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
		                      .msg_control = control.buf,
		                      .msg_controllen = sizeof(control.buf) };
		ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
		if (n <= 0) {
			return false;
		}
		take_fds(&msg, passed);
		len += (size_t)n;
		buf[len] = '\0';
		if (memchr(buf, '\n', len) != NULL) {
			*got = len;
			return true;
		}
	}
	return false;
}

static void send_json(int fd, json_t *reply)
{
	char *text = json_dumps(reply, JSON_COMPACT);
	if (text != NULL) {
		size_t len = strlen(text), off = 0;
		while (off < len) {
			ssize_t n = send(fd, text + off, len - off, MSG_NOSIGNAL);
			if (n <= 0) {
				break;
			}
			off += (size_t)n;
		}
		send(fd, "\n", 1, MSG_NOSIGNAL);
		free(text);
	}
	json_decref(reply);
}

static json_t *ok(json_t *result)
{
	return json_pack("{s:b, s:o}", "ok", 1, "result", result);
}

static json_t *fail(const char *error)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", error);
}

/* Runs one command; *stop set when the server is to stop after the
 * answer is sent. */
static json_t *run_command(serve_ctx_t *ctx, const json_t *req, bool *stop)
{
	const char *cmd = json_string_value(json_object_get(req, "command"));
	if (cmd == NULL) {
		return fail("the request has no \"command\"");
	}
	if (strcmp(cmd, "status") == 0) {
		return ok(serve_status(ctx));
	}
	if (strcmp(cmd, "zone-status") == 0) {
		char err[600];
		const char *zone = json_string_value(json_object_get(req, "zone"));
		json_t *r = serve_zone_status(ctx, zone, err, sizeof(err));
		return r != NULL ? ok(r) : fail(err);
	}
	if (strcmp(cmd, "reload") == 0) {
		char msg[2048];
		zc_info("control: reload asked for");
		int ret = serve_reload(ctx, msg, sizeof(msg));
		return ret == ZC_EOK ? ok(json_pack("{s:s}", "message", msg)) :
		       fail(msg);
	}
	if (strcmp(cmd, "stop") == 0) {
		*stop = true;
		zc_info("control: stop asked for");
		return ok(json_pack("{s:i}", "pid", (int)getpid()));
	}
	char err[128];
	snprintf(err, sizeof(err), "unknown command '%.64s'", cmd);
	return fail(err);
}

/* A write of the zonecast command, on a thread of its own. */
typedef struct {
	control_t *c;
	int fd;          /* The client. */
	int file_fd;     /* The zone file of an import, or -1. */
	json_t *req;
	char client[64]; /* Who asked: "uid=U pid=P". */
} write_t;

static void *write_main(void *arg)
{
	write_t *w = arg;
	pthread_setname_np(pthread_self(), "zc-control-wr");
	serve_ctx_t *ctx = w->c->ctx;
	send_json(w->fd, admin_serve(ctx->boot->data_dir, ctx->es, ctx->writer,
	                             ctx->follower, &w->c->stopping,
	                             w->client, w->fd, w->req, w->file_fd));
	close(w->fd);
	if (w->file_fd >= 0) {
		close(w->file_fd);
	}
	json_decref(w->req);
	control_t *c = w->c;
	free(w);
	pthread_mutex_lock(&c->lock);
	c->writes--;
	pthread_cond_broadcast(&c->ended);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Hands the client to a write thread; false (answered) when it cannot
 * take one now. The thread owns fd, file_fd and req once started. */
static bool start_write(control_t *c, int fd, json_t *req, int file_fd,
                        const char *client)
{
	write_t *w = malloc(sizeof(*w));
	pthread_mutex_lock(&c->lock);
	bool room = w != NULL && c->writes < MAX_WRITES;
	c->writes += room;
	pthread_mutex_unlock(&c->lock);
	pthread_attr_t attr;
	pthread_t thread;
	bool started = false;
	if (room) {
		*w = (write_t){ .c = c, .fd = fd, .file_fd = file_fd, .req = req };
		snprintf(w->client, sizeof(w->client), "%s", client);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		started = pthread_create(&thread, &attr, write_main, w) == 0;
		pthread_attr_destroy(&attr);
	}
	if (started) {
		return true;
	}
	if (room) {
		pthread_mutex_lock(&c->lock);
		c->writes--;
		pthread_mutex_unlock(&c->lock);
	}
	free(w);
	json_t *reply = fail(room ? "cannot start a thread for the write" :
	                     "too many writes at once: try again");
	if (!room) {
		/* The command waits its turn and asks again (admin_client.c). */
		json_object_set_new(reply, "busy", json_true());
	}
	send_json(fd, reply);
	return false;
}

/* Answers one client; true when a write thread took it over (and closes
 * it), false when the caller closes fd. */
static bool serve_client(control_t *c, int fd)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	char buf[REQUEST_MAX], client[64], why[240];
	int file_fd = -1;
	json_error_t jerr;
	json_t *req = NULL;
	bool stop = false, taken = false;
	/* Who asks, before anything they send is read. */
	bool allowed = peer_allowed(fd, client, sizeof(client));
	size_t len = 0;
	bool got = allowed && read_line(fd, buf, sizeof(buf), &len, &file_fd);
	if (!allowed) {
		zc_warn("control: refused a client of another user (%s)", client);
		send_json(fd, fail("permission denied"));
	} else if (!got) {
		send_json(fd, fail("no request line (at most 16384 bytes)"));
	} else if ((req = json_loadb(buf, len, JSON_REJECT_DUPLICATES,
	                             &jerr)) == NULL) {
		/* A key given twice is refused: {"command": "status",
		 * "command": "stop"} stopped the server. So is text after
		 * the object, on the line or after it. */
		snprintf(why, sizeof(why), "the request is not one JSON "
		         "object on one line: %.160s", jerr.text);
		send_json(fd, fail(why));
	} else if (!control_request_check(req, why, sizeof(why))) {
		send_json(fd, fail(why));
	} else if (admin_is_write(json_string_value(json_object_get(req,
	                                                         "command")))) {
		taken = start_write(c, fd, req, file_fd, client);
	} else {
		send_json(fd, run_command(c->ctx, req, &stop));
	}
	if (!taken) {
		json_decref(req);
		if (file_fd >= 0) {
			close(file_fd);
		}
	}
	if (stop) {
		/* The main thread takes it as it takes a SIGTERM. */
		kill(getpid(), SIGTERM);
	}
	return taken;
}

static void *control_main(void *arg)
{
	control_t *c = arg;
	pthread_setname_np(pthread_self(), "zc-control");
	while (zc_wait_readable(c->fd, c->stop_fd)) {
		int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0 && !serve_client(c, fd)) {
			close(fd);
		}
	}
	return NULL;
}

int control_start(serve_ctx_t *ctx, control_t **out)
{
	control_t *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		return -ENOMEM;
	}
	c->ctx = ctx;
	c->fd = -1;
	atomic_init(&c->stopping, false);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->ended, NULL);
	snprintf(c->path, sizeof(c->path), "%s", ctx->control_path);
	int ret = listen_at(c->path, &c->fd);
	c->stop_fd = ret == ZC_EOK ? eventfd(0, EFD_CLOEXEC) : -1;
	if (ret == ZC_EOK && c->stop_fd < 0) {
		ret = -errno;
	}
	if (ret == ZC_EOK && pthread_create(&c->thread, NULL, control_main,
	                                    c) != 0) {
		ret = -ENOMEM;
	}
	if (ret != ZC_EOK) {
		if (c->fd >= 0) {
			close(c->fd);
			unlink(c->path);
		}
		if (c->stop_fd >= 0) {
			close(c->stop_fd);
		}
		pthread_cond_destroy(&c->ended);
		pthread_mutex_destroy(&c->lock);
		free(c);
		return ret;
	}
	zc_info("control socket %s", c->path);
	*out = c;
	return ZC_EOK;
}

void control_stop(control_t *c)
{
	if (c == NULL) {
		return;
	}
	uint64_t one = 1;
	atomic_store(&c->stopping, true);
	ssize_t w = write(c->stop_fd, &one, sizeof(one));
	(void)w;
	pthread_join(c->thread, NULL);
	/* The writes in flight end (their waits for the builder see the
	 * stop) before the stages they use go. */
	pthread_mutex_lock(&c->lock);
	if (c->writes > 0) {
		zc_info("control: waiting for %u write(s) of the zonecast "
		        "command to end", c->writes);
	}
	while (c->writes > 0) {
		pthread_cond_wait(&c->ended, &c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	pthread_cond_destroy(&c->ended);
	pthread_mutex_destroy(&c->lock);
	close(c->stop_fd);
	close(c->fd);
	unlink(c->path);
	free(c);
}
