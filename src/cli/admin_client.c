/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The command's side of an administrative write (admin.h): whoever holds
 * the data directory's lock (data_dir.c) decides where it runs.
 *
 *   held by `zonecast serve`: the request goes over the control socket
 *     the serve named in the lock file, as one line of JSON with the zone
 *     file's descriptor attached (SCM_RIGHTS); the reply carries the
 *     outcome and the text to print (control.c);
 *   free: the lock is taken here for the duration and the request runs
 *     here (admin_run_local());
 *   held by another command, or by a serve whose control socket is not
 *     listening yet (starting, stopping): it waits, saying so after a
 *     second, and looks again.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/admin.h"
#include "cli/commands.h"
#include "common/error.h"

#define RETRY_MS 100
#define SAY_WAITING_MS 1000
/* A serve that wrote only its pid (an older version) gets this long to
 * answer on DATA_DIR/control.sock; a newer one starting says it is one. */
#define OLD_SERVE_WAIT_MS 30000

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "zonecast zone import", "zonecast dnssec enable": the lock file's who. */
static void command_name(const json_t *req, char *out, size_t size)
{
	const char *cmd = json_string_value(json_object_get(req, "command"));
	const char *verb = json_string_value(json_object_get(req, "verb"));
	snprintf(out, size, "zonecast %s%s%s", cmd ? cmd : "?", verb ? " " : "",
	         verb ? verb : "");
	for (char *p = out; *p != '\0'; p++) {
		*p = *p == '-' ? ' ' : *p;
	}
}

/* Runs the request here, under the lock. */
static int run_here(const char *dir, bool create, uint64_t max_records,
                    const json_t *req, int fd)
{
	records_store_t *rs;
	edge_store_t *es;
	int ret = cli_open_stores(dir, create, &rs, &es);
	if (ret == ZC_EOK) {
		ret = admin_run_local(rs, es, dir, max_records, req, fd);
		edge_close(es);
		records_close(rs);
	}
	return ret;
}

/* Sends the request line, with fd attached when there is one. */
static int send_request(int sock, const json_t *req, int fd)
{
	char *text = json_dumps(req, JSON_COMPACT);
	if (text == NULL) {
		return -ENOMEM;
	}
	size_t len = strlen(text);
	text[len] = '\n'; /* json_dumps' NUL, replaced: one line. */
	struct iovec iov = { .iov_base = text, .iov_len = len + 1 };
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		memset(&control, 0, sizeof(control));
		msg.msg_control = control.buf;
		msg.msg_controllen = sizeof(control.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	int ret = n < 0 ? -errno : ZC_EOK;
	/* A long line (a long path) may go out in pieces; the descriptor
	 * went with the first. */
	for (size_t off = n > 0 ? (size_t)n : 0; ret == ZC_EOK &&
	     off < len + 1; off += (size_t)n) {
		n = send(sock, text + off, len + 1 - off, MSG_NOSIGNAL);
		ret = n <= 0 ? -errno : ZC_EOK;
	}
	free(text);
	return ret;
}

/* Prints the server's reply; returns the exit status. */
static int print_reply(const json_t *reply, const cli_holder_t *h)
{
	json_t *code = json_object_get(reply, "code");
	if (!json_is_integer(code)) {
		const char *err = json_string_value(json_object_get(reply, "error"));
		fprintf(stderr, "zonecast: zonecast serve (pid %ld) refused the "
		        "request: %s\n", h->pid, err ? err : "no reason given");
		return 1;
	}
	const char *out = json_string_value(json_object_get(reply, "stdout"));
	const char *err = json_string_value(json_object_get(reply, "stderr"));
	fputs(out != NULL ? out : "", stdout);
	fputs(err != NULL ? err : "", stderr);
	return json_integer_value(code) == ZC_EOK ? 0 : 1;
}

/* The serve's control socket as this process reaches it. */
static int socket_address(const char *dir, const cli_holder_t *h,
                          struct sockaddr_un *sa)
{
	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	const char *path = h->control[0] != '\0' ? h->control : "control.sock";
	int len = path[0] == '/' ?
	          snprintf(sa->sun_path, sizeof(sa->sun_path), "%s", path) :
	          snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", dir, path);
	return len < (int)sizeof(sa->sun_path) ? ZC_EOK : -ENAMETOOLONG;
}

/*
 * Asks the serve that holds the lock to run the request. Returns the exit
 * status, or -1 when no serve answered there (starting or stopping: look
 * again).
 */
/* How long a write waits in all for the server to take it, while the
 * server runs as many writes as it takes at once (control.c). */
#define BUSY_WAIT_MS 600000

static int ask_server_once(const char *dir, const cli_holder_t *h,
                           const json_t *req, int fd, bool *busy);

/* Asks the server; while it answers that it runs as many writes as it
 * takes, waits its turn and asks again, as a writing command waits for
 * another (40 concurrent token creates: 24 failed "try again"). */
static int ask_server(const char *dir, const cli_holder_t *h,
                      const json_t *req, int fd)
{
	int64_t waited = 0;
	for (unsigned pause = 10;; pause = pause < 500 ? pause * 2 : 500) {
		bool busy = false;
		int status = ask_server_once(dir, h, req, fd, &busy);
		if (!busy) {
			return status;
		}
		if (waited >= BUSY_WAIT_MS) {
			fprintf(stderr, "zonecast: zonecast serve (pid %ld) ran as "
			        "many writes as it takes at once for %d s: try "
			        "again\n", h->pid, BUSY_WAIT_MS / 1000);
			return 1;
		}
		struct timespec ts = { .tv_sec = pause / 1000,
		                       .tv_nsec = (long)(pause % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		waited += pause;
	}
}

static int ask_server_once(const char *dir, const cli_holder_t *h,
                           const json_t *req, int fd, bool *busy)
{
	struct sockaddr_un sa;
	int ret = socket_address(dir, h, &sa);
	int sock = ret == ZC_EOK ? socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)
	           : -1;
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int err = sock < 0 && ret != ZC_EOK ? -ret : errno;
		if (sock >= 0) {
			close(sock);
		}
		if (err == ENOENT || err == ECONNREFUSED) {
			return -1;
		}
		fprintf(stderr, "zonecast: zonecast serve (pid %ld) runs on %s, "
		        "but its control socket %s cannot be reached: %s%s\n",
		        h->pid, dir, sa.sun_path, strerror(err),
		        err == EACCES ? " (run this as the server's user)" : "");
		return 1;
	}
	json_t *reply = NULL;
	if (send_request(sock, req, fd) == ZC_EOK) {
		FILE *f = fdopen(sock, "r");
		json_error_t jerr;
		reply = f != NULL ? json_loadf(f, JSON_DISABLE_EOF_CHECK, &jerr) :
		        NULL;
		if (f != NULL) {
			fclose(f);
			sock = -1;
		}
	}
	if (sock >= 0) {
		close(sock);
	}
	if (reply == NULL) {
		fprintf(stderr, "zonecast: zonecast serve (pid %ld) gave no answer "
		        "on %s (did it stop? `zonecast zone list` shows what the "
		        "data directory holds)\n", h->pid, sa.sun_path);
		return 1;
	}
	*busy = json_is_true(json_object_get(reply, "busy"));
	int status = *busy ? 1 : print_reply(reply, h);
	json_decref(reply);
	return status;
}

/* Says once why the command waits. */
static void say_waiting(const char *dir, const cli_holder_t *h)
{
	if (cli_holder_is_serve(h)) {
		fprintf(stderr, "zonecast: waiting for zonecast serve (pid %ld) "
		        "on %s to answer on its control socket\n", h->pid, dir);
	} else {
		fprintf(stderr, "zonecast: waiting for `%s` (pid %ld) to finish "
		        "with %s\n", h->who, h->pid, dir);
	}
}

int admin_request(const char *dir, bool create, uint64_t max_records,
                  json_t *req, int fd)
{
	int ret = create ? cli_prepare_data_dir(dir) : cli_require_data_dir(dir);
	if (ret != ZC_EOK) {
		return 1;
	}
	char who[64];
	command_name(req, who, sizeof(who));
	int64_t start = mono_ms();
	bool said = false;
	for (;;) {
		int lock_fd;
		cli_holder_t h;
		ret = cli_claim_data_dir(dir, who, &lock_fd, &h);
		if (ret < 0) {
			return 1;
		}
		if (ret == 0) {
			ret = run_here(dir, create, max_records, req, fd);
			close(lock_fd);
			return ret == ZC_EOK ? 0 : 1;
		}
		if (cli_holder_is_serve(&h) && strcmp(h.control, "none") == 0) {
			fprintf(stderr, "zonecast: zonecast serve (pid %ld) runs on %s "
			        "without a control socket (control-socket: none), so "
			        "it cannot take this write; give it one, or stop it "
			        "first\n", h.pid, dir);
			return 1;
		}
		if (cli_holder_is_serve(&h) && h.pid != 0) {
			int status = ask_server(dir, &h, req, fd);
			if (status >= 0) {
				return status;
			}
		}
		if (h.who[0] == '\0' && h.pid != 0 &&
		    mono_ms() - start >= OLD_SERVE_WAIT_MS) {
			fprintf(stderr, "zonecast: a zonecast serve (pid %ld) of an "
			        "older version holds %s and answers on no control "
			        "socket at %s/control.sock; restart it with this "
			        "version, or stop it first\n", h.pid, dir, dir);
			return 1;
		}
		if (!said && mono_ms() - start >= SAY_WAITING_MS) {
			say_waiting(dir, &h);
			said = true;
		}
		struct timespec nap = { .tv_nsec = RETRY_MS * 1000000L };
		nanosleep(&nap, NULL);
	}
}
