/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to api/: Cloudflare's "data" object of a record (the rdata's
 * fields one by one: SRV {"priority", "weight", "port", "target"}, CAA
 * {"flags", "tag", "value"}, ...) read as the content it stands for
 * (record_data.c). A write that gives both must have them agree
 * (record_fields.c): neither is silently dropped.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <libknot/dname.h>

/*
 * Writes the content `data` stands for, for a record of that type, into
 * out, the priority of MX, SRV and URI included (parse it with priority
 * -1): data's own "priority", else `priority` (the record's top-level
 * one; -1: none). *own_priority gets data's own priority (-1: none).
 * ZC_EOK, or ZC_EUSAGE with "data...: message" in err (a type without a
 * data form, a member missing, of the wrong kind or not of the type's).
 */
int api_data_content(uint16_t type, json_t *data, int priority, char *out,
                     size_t size, int *own_priority, char *err,
                     size_t err_size);

/*
 * The owner an SRV record's data names (Cloudflare's older form, which
 * octoDNS sends: "service" and "proto" labels, and "name", the rest of
 * the owner: "@", a name relative to the zone or an FQDN in it) into
 * owner, a lower-case wire name. -ENOENT when data names none, ZC_EOK,
 * or ZC_EUSAGE with "data...: message" in err (one of the three without
 * the others, a label that is not one, a name outside the zone).
 */
int api_data_srv_owner(const knot_dname_t *apex, const json_t *data,
                       uint8_t owner[KNOT_DNAME_MAXLEN], char *err,
                       size_t err_size);

/*
 * Cloudflare's "data" object of a record of a type that has one, read
 * from its content (as api_content_format() writes it) and its priority
 * (-1: none), for the record as the API shows it; NULL for other types
 * or content not to be read field by field (a mnemonic, escapes in a
 * character-string). api_data_content() of it gives the same record.
 */
json_t *api_content_data(uint16_t type, const char *content, int priority);
