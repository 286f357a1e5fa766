/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The wait of a thread that serves one descriptor until it is told to
 * stop through an eventfd: the UDP workers (server/udp.c) and the control
 * socket (cli/control.c). A thread with more to watch (the TCP workers'
 * epoll, the NOTIFY sender's timers) keeps its own loop.
 */
#pragma once

#include <stdbool.h>

/*
 * Blocks until fd is readable (true) or stop_fd is (false: the thread is
 * to end; the stop wins when both are). A signal's interruption and a
 * wake-up without input on fd are waited through. false too when poll()
 * fails otherwise, so the thread ends rather than spins.
 */
bool zc_wait_readable(int fd, int stop_fd);
