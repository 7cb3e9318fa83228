/* topo_bin.c — the binary form of the topology model: encode, and a
 * bounds-checked decode that verifies the trailing CRC32C (layout in topo.h). */
#include "topo_int.h"

#include <tessera/crc32c.h>
#include <tessera/encoding.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Smallest encoded record of each kind (every name has at least one byte),
 * used to bound a count by the bytes left before allocating for it. */
#define TYPE_REC_MIN (4 + 1)
#define DEVICE_REC_MIN (4 + 5 + 4 + 4)
#define BUCKET_REC_MIN (4 + 4 + 5 + 4)
#define RULE_REC_MIN (4 + 5 + 4 + 4 + 4)

/* ---- Binary form ----------------------------------------------------------*/

int
topo_encode(const struct topo *t, uint8_t **buf, size_t *len)
{
	struct tsr_enc e;
	size_t mark;
	int rc;

	if (t == NULL || buf == NULL || len == NULL)
		return -EINVAL;
	*buf = NULL;
	*len = 0;
	tsr_enc_init(&e);
	mark = tsr_enc_begin_struct(&e, TOPO_VERSION, TOPO_VERSION);
	tsr_enc_u32(&e, TOPO_MAGIC);
	tsr_enc_u32(&e, t->ntypes);
	for (uint32_t i = 0; i < t->ntypes; i++)
		tsr_enc_str(&e, t->types[i]);
	tsr_enc_u32(&e, t->ndevices);
	for (uint32_t i = 0; i < t->ndevices; i++) {
		const struct topo_device *d = &t->devices[i];

		tsr_enc_i32(&e, d->id);
		tsr_enc_str(&e, d->name);
		tsr_enc_u32(&e, d->weight);
		tsr_enc_i32(&e, d->parent);
	}
	tsr_enc_u32(&e, t->nbuckets);
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		const struct topo_bucket *b = &t->buckets[i];

		tsr_enc_i32(&e, b->id);
		tsr_enc_u32(&e, b->type);
		tsr_enc_str(&e, b->name);
		tsr_enc_i32(&e, b->parent);
	}
	tsr_enc_u32(&e, t->nrules);
	for (uint32_t i = 0; i < t->nrules; i++) {
		const struct topo_rule *r = &t->rules[i];

		tsr_enc_u32(&e, r->id);
		tsr_enc_str(&e, r->name);
		tsr_enc_i32(&e, r->root);
		tsr_enc_u32(&e, r->domain_type);
		tsr_enc_u32(&e, r->mode);
	}
	tsr_enc_end_struct(&e, mark);
	/* the checksum of everything before it (topo.h) */
	if (tsr_enc_error(&e) == 0)
		tsr_enc_u32(&e, tsr_crc32c(0, e.buf, e.len));
	rc = tsr_enc_error(&e);
	if (rc != 0) {
		tsr_enc_release(&e);
		return rc;
	}
	*buf = tsr_enc_take(&e, len);
	return 0;
}

/* A name: length-prefixed, 1..TOPO_NAME_MAX name characters.  NULL with
 * *bad set for a well-formed string that is not a name, NULL with the
 * decoder failed for a short or malformed one, or NULL on ENOMEM. */
static char *
dec_name(struct tsr_dec *d, bool *bad)
{
	const void *p;
	size_t n;

	*bad = false;
	/* No cap here (the length is still checked against the bytes left),
	 * so that a long name is reported as a bad name, not as garbage. */
	tsr_dec_bytes(d, &p, &n, SIZE_MAX);
	if (tsr_dec_error(d) != 0)
		return NULL;
	if (!topo_name_ok(p, n)) {
		*bad = true;
		return NULL;
	}
	return topo_strndup(p, n);
}

/* Read a count and check it against the limit and the bytes left. */
static int
dec_count(struct tsr_dec *d, const char *what, uint32_t limit,
	  size_t recmin, uint32_t *n, char *err, size_t errlen)
{
	*n = tsr_dec_u32(d);
	if (tsr_dec_error(d) != 0)
		return errf(err, errlen, -EBADMSG,
			    "truncated before the %s count", what);
	if (*n > limit)
		return errf(err, errlen, -EBADMSG,
			    "%s count %u exceeds the limit %u", what, *n,
			    limit);
	if (*n > tsr_dec_remaining(d) / recmin)
		return errf(err, errlen, -EBADMSG,
			    "%s count %u exceeds the data (%zu bytes "
			    "left)", what, *n, tsr_dec_remaining(d));
	return 0;
}

/* Shared exits for a record that did not decode. */
static int
dec_record_fail(struct tsr_dec *d, bool bad, const char *what, uint32_t i,
		char *err, size_t errlen)
{
	if (bad)
		return errf(err, errlen, -EBADMSG,
			    "%s record %u: bad name", what, i);
	if (tsr_dec_error(d) != 0)
		return errf(err, errlen, -EBADMSG,
			    "%s record %u: truncated or malformed", what,
			    i);
	return errf(err, errlen, -ENOMEM, "out of memory");
}

static int
decode_body(struct tsr_dec *d, struct topo *t, char *err, size_t errlen)
{
	uint32_t magic, n;
	bool bad;
	int rc;

	magic = tsr_dec_u32(d);
	if (tsr_dec_error(d) != 0)
		return errf(err, errlen, -EBADMSG,
			    "truncated before the magic");
	if (magic != TOPO_MAGIC)
		return errf(err, errlen, -EBADMSG,
			    "bad magic 0x%08x (want 0x%08x)", magic,
			    TOPO_MAGIC);

	if ((rc = dec_count(d, "type", TOPO_MAX_TYPES, TYPE_REC_MIN, &n, err,
			    errlen)) != 0)
		return rc;
	t->types = calloc(n > 0 ? n : 1, sizeof(*t->types));
	if (t->types == NULL)
		return errf(err, errlen, -ENOMEM, "out of memory");
	for (; t->ntypes < n; t->ntypes++) {
		t->types[t->ntypes] = dec_name(d, &bad);
		if (t->types[t->ntypes] == NULL)
			return dec_record_fail(d, bad, "type", t->ntypes, err,
					       errlen);
	}

	if ((rc = dec_count(d, "device", TOPO_MAX_DEVICES, DEVICE_REC_MIN, &n,
			    err, errlen)) != 0)
		return rc;
	t->devices = calloc(n > 0 ? n : 1, sizeof(*t->devices));
	if (t->devices == NULL)
		return errf(err, errlen, -ENOMEM, "out of memory");
	for (; t->ndevices < n; t->ndevices++) {
		struct topo_device *dv = &t->devices[t->ndevices];

		dv->id = tsr_dec_i32(d);
		dv->name = dec_name(d, &bad);
		dv->weight = tsr_dec_u32(d);
		dv->parent = tsr_dec_i32(d);
		if (dv->name == NULL || tsr_dec_error(d) != 0) {
			/* Count it so topo_free releases the name. */
			t->ndevices++;
			return dec_record_fail(d, bad, "device",
					       t->ndevices - 1, err, errlen);
		}
	}

	if ((rc = dec_count(d, "bucket", TOPO_MAX_BUCKETS, BUCKET_REC_MIN, &n,
			    err, errlen)) != 0)
		return rc;
	t->buckets = calloc(n > 0 ? n : 1, sizeof(*t->buckets));
	if (t->buckets == NULL)
		return errf(err, errlen, -ENOMEM, "out of memory");
	for (; t->nbuckets < n; t->nbuckets++) {
		struct topo_bucket *b = &t->buckets[t->nbuckets];

		b->id = tsr_dec_i32(d);
		b->type = tsr_dec_u32(d);
		b->name = dec_name(d, &bad);
		b->parent = tsr_dec_i32(d);
		if (b->name == NULL || tsr_dec_error(d) != 0) {
			t->nbuckets++;
			return dec_record_fail(d, bad, "bucket",
					       t->nbuckets - 1, err, errlen);
		}
	}

	if ((rc = dec_count(d, "rule", TOPO_MAX_RULES, RULE_REC_MIN, &n, err,
			    errlen)) != 0)
		return rc;
	t->rules = calloc(n > 0 ? n : 1, sizeof(*t->rules));
	if (t->rules == NULL)
		return errf(err, errlen, -ENOMEM, "out of memory");
	for (; t->nrules < n; t->nrules++) {
		struct topo_rule *r = &t->rules[t->nrules];

		r->id = tsr_dec_u32(d);
		r->name = dec_name(d, &bad);
		r->root = tsr_dec_i32(d);
		r->domain_type = tsr_dec_u32(d);
		r->mode = tsr_dec_u32(d);
		if (r->name == NULL || tsr_dec_error(d) != 0) {
			t->nrules++;
			return dec_record_fail(d, bad, "rule", t->nrules - 1,
					       err, errlen);
		}
	}
	/* Whatever follows in the body was appended by a newer writer; the
	 * envelope's length lets us skip it (tsr_dec_end_struct). */
	return 0;
}

/* A little-endian u32 at p. */
static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int
topo_decode(const void *buf, size_t len, struct topo **out, char *err,
	    size_t errlen)
{
	const uint8_t *b = buf;
	struct tsr_dec d, sub;
	struct topo *t;
	uint32_t stored, computed;
	uint8_t version;
	int rc;

	if (out == NULL)
		return errf(err, errlen, -EINVAL, "no output");
	*out = NULL;
	/* The checksum first: a damaged map is named as such whatever the
	 * damage hit, before any field of it is believed. */
	if (b == NULL || len < TOPO_ENVELOPE_HDR + TOPO_CRC_LEN)
		return errf(err, errlen, -EBADMSG,
			    "truncated: %zu bytes, less than an envelope "
			    "and its checksum", b == NULL ? 0 : len);
	stored = le32(b + len - TOPO_CRC_LEN);
	computed = tsr_crc32c(0, b, len - TOPO_CRC_LEN);
	if (stored != computed) {
		/* what version 1 wrote: the envelope alone, no checksum */
		if (b[0] == 1 && b[1] == 1 &&
		    le32(b + 2) == len - TOPO_ENVELOPE_HDR)
			return errf(err, errlen, -EBADMSG,
				    "a version 1 map, which carries no "
				    "checksum: compile it again from its "
				    "text form");
		return errf(err, errlen, -EBADMSG,
			    "checksum mismatch (crc32c 0x%08x stored, "
			    "0x%08x computed over %zu bytes): the map is "
			    "damaged or truncated", stored, computed,
			    len - TOPO_CRC_LEN);
	}
	tsr_dec_init(&d, b, len - TOPO_CRC_LEN);
	rc = tsr_dec_begin_struct(&d, TOPO_VERSION, &version, &sub);
	if (rc == -EOPNOTSUPP)
		return errf(err, errlen, rc,
			    "map needs a newer decoder (envelope compat "
			    "above %d)", TOPO_VERSION);
	if (rc != 0)
		return errf(err, errlen, -EBADMSG,
			    "truncated or malformed envelope");
	if (version < TOPO_VERSION)
		return errf(err, errlen, -EBADMSG,
			    "envelope version %u: not a map with a "
			    "checksum (version %d and later)", version,
			    TOPO_VERSION);
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return errf(err, errlen, -ENOMEM, "out of memory");
	rc = decode_body(&sub, t, err, errlen);
	if (rc == 0 && tsr_dec_end_struct(&d, &sub) != 0)
		rc = errf(err, errlen, -EBADMSG, "malformed envelope");
	if (rc == 0 && tsr_dec_remaining(&d) != 0)
		rc = errf(err, errlen, -EBADMSG,
			  "trailing data after the envelope (%zu bytes)",
			  tsr_dec_remaining(&d));
	if (rc == 0)
		rc = topo_finish(t, false, err, errlen);
	if (rc != 0) {
		topo_free(t);
		return rc;
	}
	*out = t;
	return 0;
}
