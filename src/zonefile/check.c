/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Whether a record can be stored (zonefile.h): what the API, UPDATE and
 * imports accept must come back unchanged from an export and an import.
 *
 * The check writes the rdata as the exporter does and reads the text back
 * with libzscanner, as an import does; the record passes when the same
 * octets come back. Every kind of disagreement between libknot's writer
 * and libzscanner's reader is caught by this one comparison, found or not
 * yet found. Each thread keeps a scanner (200 KiB, initialised once).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libzscanner/scanner.h>

#include "common/error.h"
#include "dns/rdata.h"
#include "zonefile/zonefile.h"

/* Longest text of one rdata: 65535 octets as "\DDD" escapes. */
#define TEXT_MAX (4 * 65535 + 64)

typedef struct {
	zs_scanner_t scanner;
	bool ready;
	char text[TEXT_MAX];
	char line[TEXT_MAX + 64];
	/* What the scanner read back. */
	int records;
	uint16_t type;
	uint16_t rdata_len;
	uint8_t rdata[65535];
} reader_t;

static pthread_key_t reader_key;
static pthread_once_t reader_once = PTHREAD_ONCE_INIT;

static void free_reader(void *ptr)
{
	reader_t *r = ptr;
	if (r->ready) {
		zs_deinit(&r->scanner);
	}
	free(r);
}

static void make_key(void)
{
	pthread_key_create(&reader_key, free_reader);
}

static void on_record(zs_scanner_t *s)
{
	reader_t *r = s->process.data;
	if (r->records++ == 0) {
		r->type = s->r_type;
		r->rdata_len = (uint16_t)s->r_data_length;
		memcpy(r->rdata, s->r_data, s->r_data_length);
	}
}

static void on_error(zs_scanner_t *s)
{
	reader_t *r = s->process.data;
	r->records = -1;
	s->state = ZS_STATE_STOP;
}

/* The thread's reader with a scanner ready for absolute names. */
static reader_t *get_reader(void)
{
	pthread_once(&reader_once, make_key);
	reader_t *r = pthread_getspecific(reader_key);
	if (r == NULL) {
		r = calloc(1, sizeof(*r));
		if (r == NULL || pthread_setspecific(reader_key, r) != 0) {
			free(r);
			return NULL;
		}
	}
	if (!r->ready) {
		if (zs_init(&r->scanner, ".", KNOT_CLASS_IN, 0) != 0 ||
		    zs_set_processing(&r->scanner, on_record, on_error, r) != 0) {
			zs_deinit(&r->scanner);
			return NULL;
		}
		r->ready = true;
	}
	return r;
}

/* Writes the record as an export does and reads it back as an import
 * does: true when the same type and rdata come back. */
static bool reads_back(uint16_t type, const uint8_t *rdata, uint16_t len,
                       int *ret)
{
	reader_t *r = get_reader();
	if (r == NULL) {
		*ret = KNOT_ENOMEM;
		return false;
	}
	bool generic = false;
	char name[32];
	int text = zonefile_rdata_text(type, rdata, len, r->text,
	                               sizeof(r->text), &generic);
	if (text < 0) {
		return false;
	}
	zonefile_type_text(type, generic, name, sizeof(name));
	int n = snprintf(r->line, sizeof(r->line), ". 0 IN %s %s", name, r->text);
	if (n < 0 || (size_t)n + 2 > sizeof(r->line)) {
		return false;
	}
	memcpy(r->line + n, "\n", 2);
	r->records = 0;
	if (zs_set_input_string(&r->scanner, r->line, n + 1) != 0 ||
	    zs_parse_all(&r->scanner) != 0 || r->records != 1) {
		/* Start from a clean scanner after an error. */
		zs_deinit(&r->scanner);
		r->ready = false;
		return false;
	}
	return r->type == type && r->rdata_len == len &&
	       (len == 0 || memcmp(r->rdata, rdata, len) == 0);
}

int zonefile_record_check(const knot_dname_t *owner, uint16_t type,
                          uint32_t ttl, const uint8_t *rdata, uint16_t len,
                          const char **why)
{
	const char *reason = NULL;
	int ret = ZC_EOK;
	if (!dns_rdata_type_storable(type)) {
		reason = "the type is a meta-type or QTYPE, not data (RFC 6895 "
		         "§3.1)";
		ret = ZC_EUNSTORABLE;
	} else if (type == KNOT_RRTYPE_NS && owner != NULL &&
	           knot_dname_is_wildcard(owner)) {
		/* BIND refuses to load such a zone. */
		reason = "NS at a wildcard name (RFC 4592 §4.2)";
		ret = ZC_EUNSTORABLE;
	} else if (ttl > INT32_MAX) {
		reason = "the TTL exceeds 2^31-1 (RFC 2181 §8)";
		ret = ZC_EUNSTORABLE;
	} else if (!dns_rdata_valid(type, rdata, len, &reason)) {
		ret = ZC_ERDATA;
	} else if (!reads_back(type, rdata, len, &ret) && ret == ZC_EOK) {
		reason = "the rdata has no master-file form that reads back "
		         "as the same octets";
		ret = ZC_EUNSTORABLE;
	}
	if (why != NULL) {
		*why = ret == ZC_EOK ? NULL : reason != NULL ? reason :
		       "out of memory";
	}
	return ret;
}
