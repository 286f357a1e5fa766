/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * One descriptor or a stop eventfd (wait.h). One poll() per wake-up, as
 * the loops it replaced did: a UDP worker calls it once per batch of
 * recvmmsg(), so it adds a function call to a system call, nothing more.
 */
#include <errno.h>
#include <poll.h>

#include "common/wait.h"

bool zc_wait_readable(int fd, int stop_fd)
{
	struct pollfd fds[2] = {
		{ .fd = fd, .events = POLLIN },
		{ .fd = stop_fd, .events = POLLIN },
	};
	for (;;) {
		if (poll(fds, 2, -1) < 0 && errno != EINTR) {
			return false;
		}
		if (fds[1].revents & POLLIN) {
			return false;
		}
		if (fds[0].revents & POLLIN) {
			return true;
		}
	}
}
