/* SPDX-License-Identifier: GPL-3.0-or-later */
/* sd_notify(3) without libsystemd (see sd_notify.h). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/sd_notify.h"

bool zc_sd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = path != NULL ? strlen(path) : 0;
	if (len == 0 || len >= sizeof(sa.sun_path) ||
	    (path[0] != '/' && path[0] != '@')) {
		return false;
	}
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@') {
		sa.sun_path[0] = '\0'; /* Linux abstract namespace. */
	}
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return false;
	}
	socklen_t sa_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	                               len);
	bool sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
	                   (struct sockaddr *)&sa, sa_len) >= 0;
	close(fd);
	return sent;
}

void zc_sd_notify_ready(const char *status)
{
	char msg[512];
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status ? status : "");
	zc_sd_notify(msg);
}

void zc_sd_notify_reloading(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	char msg[128];
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
	         (unsigned long long)ts.tv_sec * 1000000ull +
	         (unsigned long long)ts.tv_nsec / 1000);
	zc_sd_notify(msg);
}

void zc_sd_notify_stopping(void)
{
	zc_sd_notify("STOPPING=1\nSTATUS=shutting down");
}
