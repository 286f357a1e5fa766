/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: the audit line of a request (audit.c). */
#pragma once

#include "api/internal.h"

/* Every write's outcome, and every request refused for its
 * credentials. */
void api_audit(const api_req_t *req, const char *url);

/* Notes a record id (API form) that a result written as text names, in
 * the result's order. */
void api_audit_id(api_req_t *req, const char *id);
