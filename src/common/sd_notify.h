/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The service manager's readiness protocol (sd_notify(3)), written out:
 * one datagram of "KEY=VALUE" lines to the AF_UNIX socket named by
 * $NOTIFY_SOCKET (a path, or an abstract name starting with '@'). Without
 * that variable (not started by systemd with Type=notify) every call does
 * nothing, so the server calls them unconditionally. Twenty lines are not
 * worth a dependency on libsystemd.
 *
 * zonecast.service (dist/) is Type=notify: READY=1 once DNS is served,
 * RELOADING=1 ... READY=1 around a reload (with MONOTONIC_USEC, which
 * systemd 253's Type=notify-reload wants), STOPPING=1 when shutting down.
 */
#pragma once

#include <stdbool.h>

/* Sends state (newline-separated assignments); true when sent. */
bool zc_sd_notify(const char *state);

/* READY=1 with a STATUS line (status may be NULL). */
void zc_sd_notify_ready(const char *status);

/* RELOADING=1 and MONOTONIC_USEC: a reload starts (READY=1 ends it). */
void zc_sd_notify_reloading(void);

/* STOPPING=1: the shutdown has begun. */
void zc_sd_notify_stopping(void);
