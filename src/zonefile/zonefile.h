/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * RFC 1035 master files: reading with libzscanner, writing with libknot.
 *
 * Reading understands $ORIGIN, $TTL, $INCLUDE (in the operator's files
 * only, not in text from the API) and every type libknot knows (unknown
 * types in RFC 3597 form). An input whose last line ends in a CR is
 * refused, as libzscanner refuses every other CR (it dropped that line).
 * Records reach the caller one at a time from a mapped regular file (never
 * a pipe or a device: the zonecast command copies its standard input to
 * a file first), so a file of any size is read in constant memory.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <libknot/dname.h>

#include "records/records.h"

typedef struct {
	/* A parsed record. Return non-zero to stop (reported as an error). */
	int (*record)(const knot_dname_t *owner, uint16_t type, uint32_t ttl,
	              const uint8_t *rdata, uint16_t rdata_len,
	              const char *file, uint64_t line, void *ctx);
	/* A syntax error, with file and line. */
	void (*error)(const char *file, uint64_t line, const char *message,
	              void *ctx);
	void *ctx;
} zonefile_handler_t;

/*
 * Parses the master file open at fd (by a zonecast command, passed to the
 * server over its control socket) with the given origin and default TTL.
 * fd must be a regular file (anything else is refused: a pipe's content
 * was read whole into memory); $INCLUDE files are opened with
 * zonefile_open(), at most 32 deep.
 * Returns ZC_EOK, or ZC_EZONEFILE after reporting errors through the
 * handler (parsing goes on after errors, up to 100 of them). fd is read
 * (mapped) as it is, with the rights of whoever opened it, and never
 * closed here.
 * `name` names it in messages (the path the operator typed); relative
 * $INCLUDE paths are taken from include_dir (the file's directory, an
 * absolute path; NULL: the working directory), and the files they name
 * are opened by this process.
 */
int zonefile_parse_fd(int fd, const char *name, const char *include_dir,
                      const knot_dname_t *origin, uint32_t default_ttl,
                      const zonefile_handler_t *handler);

/*
 * Opens a zone file (an import's, an $INCLUDE's) for reading without
 * waiting: O_NONBLOCK (a FIFO's open waits for a writer, a device's may),
 * and only a regular file is taken (a FIFO, device, socket or directory
 * is refused). An fd, or -1 with errno and why (a sentence naming path).
 */
int zonefile_open(const char *path, char *why, size_t why_size);

/* As zonefile_parse_fd(), on text in memory ("-" named as the file), from
 * a client: an $INCLUDE is never opened; it ends the parse with an error
 * at its line. */
int zonefile_parse_text(const char *text, size_t len,
                        const knot_dname_t *origin, uint32_t default_ttl,
                        const zonefile_handler_t *handler);

/*
 * As zonefile_parse_text() for one absolute record line with an explicit
 * TTL (the API's records): reuses the thread's scanner, initialised once
 * per origin, instead of initialising one per call.
 */
int zonefile_parse_record(const char *text, size_t len,
                          const knot_dname_t *origin,
                          const zonefile_handler_t *handler);

/*
 * Writes a zone from the records store as a master file: $ORIGIN, the SOA
 * first (carrying the zone's current serial), then every record in name
 * order, one line each with its own TTL. Re-importing the output gives
 * the same zone (every record passed zonefile_record_check()). Stored
 * rdata malformed for its type (from a version without the check) is
 * written in RFC 3597's generic form after a comment saying so.
 */
int zonefile_export(records_store_t *store, const knot_dname_t *apex,
                    FILE *out);

/*
 * Writes the rdata of a record as a master file holds it (`"a" "b"` for
 * a TXT, `\# 1 00` for a TYPE65000) into out, NUL-terminated, and returns
 * the length (ZC_ENOSPACE when out is too small; 4 * 65535 + 64 bytes
 * always suffice). The form is libknot's presentation format, or RFC
 * 3597's generic form (*generic set) for types libzscanner has no
 * mnemonic for (NULL, SIG) and for rdata malformed for its type, which
 * libknot's writer must not be given (dns/rdata.h).
 */
int zonefile_rdata_text(uint16_t type, const uint8_t *rdata, uint16_t len,
                        char *out, size_t size, bool *generic);

/* Writes the type as the rdata written by zonefile_rdata_text() needs it:
 * its mnemonic, or TYPEnnn when that wrote the generic form. */
void zonefile_type_text(uint16_t type, bool generic, char *out, size_t size);

/*
 * Whether a record may be stored, so that what the API, UPDATE and
 * imports accept comes back unchanged from `zone export` and `zone
 * import`, and loads in BIND and Knot: the type is data (not 0, OPT or
 * 128-255, RFC 6895 §3.1), no NS at a wildcard owner (RFC 4592 §4.2; owner
 * may be NULL to skip this), the TTL at most 2^31-1 (RFC 2181 §8), the
 * rdata well-formed for its type (dns_rdata_valid()), and the text
 * zonefile_rdata_text() writes for it reads back with libzscanner as the
 * same type and octets. Returns ZC_EOK; ZC_ERDATA for malformed rdata (a
 * client's format error); ZC_EUNSTORABLE for the other refusals;
 * KNOT_ENOMEM. *why (when not NULL) gets a static sentence on failure.
 * Thread-safe: each thread keeps its own scanner.
 */
int zonefile_record_check(const knot_dname_t *owner, uint16_t type,
                          uint32_t ttl, const uint8_t *rdata, uint16_t len,
                          const char **why);
