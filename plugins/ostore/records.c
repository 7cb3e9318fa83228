/* records.c — what the engine's keys hold: the superblock, onodes and
 * chunk maps, encoded in the core's versioned envelopes; and the
 * key/value part of a journal record, as both backends write it. */
#include "ostore_int.h"
#include "errf.h"

#include <tessera/encoding.h>
#include <tessera/kv.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- Records: superblock, onode, chunk map -------------------------------*/

static uint8_t *
enc_finish(struct tsr_enc *e, size_t *len)
{
	return tsr_enc_take(e, len);
}

uint8_t *
os_super_encode(const struct os_super *s, const char *magic, size_t *len)
{
	struct tsr_enc e;
	size_t m;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_raw(&e, magic, 8);
	tsr_enc_raw(&e, s->uuid, 16);
	tsr_enc_u32(&e, OS_BLOCK);
	tsr_enc_u32(&e, OS_CHUNK);
	tsr_enc_u64(&e, s->next_objid);
	tsr_enc_u64(&e, s->objects);
	tsr_enc_u64(&e, s->bytes);
	tsr_enc_end_struct(&e, m);
	return enc_finish(&e, len);
}

static int
super_decode(const void *p, size_t n, const char *want, struct os_super *s,
	     char *why, size_t wl)
{
	struct tsr_dec d, sub;
	uint8_t ver;
	char magic[8];
	uint32_t bs, cs;

	tsr_dec_init(&d, p, n);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return errf(why, wl, tsr_dec_error(&d) == -EOPNOTSUPP ? -EOPNOTSUPP
								    : -EBADMSG,
			    tsr_dec_error(&d) == -EOPNOTSUPP
				    ? "superblock written by a newer version"
				    : "superblock damaged");
	tsr_dec_raw(&sub, magic, 8);
	tsr_dec_raw(&sub, s->uuid, 16);
	bs = tsr_dec_u32(&sub);
	cs = tsr_dec_u32(&sub);
	s->next_objid = tsr_dec_u64(&sub);
	s->objects = tsr_dec_u64(&sub);
	s->bytes = tsr_dec_u64(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0)
		return errf(why, wl, -EBADMSG, "superblock damaged");
	if (memcmp(magic, want, 8) != 0)
		return errf(why, wl, -EINVAL, "superblock of another kind of store "
			    "(%.8s, expected %.8s)", magic, want);
	if (bs != OS_BLOCK || cs != OS_CHUNK)
		return errf(why, wl, -EOPNOTSUPP,
			    "block/chunk size %u/%u, this build supports %u/%u",
			    bs, cs, OS_BLOCK, OS_CHUNK);
	return 0;
}

uint8_t *
os_onode_encode(const struct onode *o, size_t *len)
{
	struct tsr_enc e;
	size_t m;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u64(&e, o->objid);
	tsr_enc_u64(&e, o->size);
	tsr_enc_u64(&e, o->mtime);
	tsr_enc_end_struct(&e, m);
	return enc_finish(&e, len);
}

int
os_onode_decode(const void *p, size_t n, struct onode *o)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	tsr_dec_init(&d, p, n);
	tsr_dec_begin_struct(&d, 1, &ver, &sub);
	o->objid = tsr_dec_u64(&sub);
	o->size = tsr_dec_u64(&sub);
	o->mtime = tsr_dec_u64(&sub);
	tsr_dec_end_struct(&d, &sub);
	if (tsr_dec_error(&d) || tsr_dec_remaining(&d) != 0 || o->objid == 0)
		return -EIO;
	return 0;
}

#define CM_LOC 0x80 /* kind flag: locations follow */

uint8_t *
os_cmeta_encode(const struct os_cmeta *c, size_t *len)
{
	struct tsr_enc e;
	size_t m;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u8(&e, (uint8_t)(c->kind | (c->has_loc ? CM_LOC : 0)));
	if (c->kind == OS_CHUNK_RAW) {
		tsr_enc_u16(&e, c->zero);
		for (unsigned b = 0; b < OS_BPC; b++)
			if (!(c->zero & (1u << b)))
				tsr_enc_u32(&e, c->crc[b]);
		for (unsigned b = 0; c->has_loc && b < OS_BPC; b++)
			if (!(c->zero & (1u << b)))
				tsr_enc_u64(&e, c->loc[b]);
	} else if (c->kind == OS_CHUNK_INLINE) {
		tsr_enc_u32(&e, c->crc[0]);
		tsr_enc_bytes(&e, c->inl, c->stored);
	} else {
		tsr_enc_u32(&e, c->stored);
		tsr_enc_u32(&e, c->crc[0]);
		if (c->has_loc)
			tsr_enc_u64(&e, c->loc[0]);
	}
	tsr_enc_end_struct(&e, m);
	return enc_finish(&e, len);
}

int
os_cmeta_decode(const void *p, size_t n, struct os_cmeta *c)
{
	struct tsr_dec d, sub;
	uint8_t ver, kind;

	memset(c, 0, sizeof(*c));
	tsr_dec_init(&d, p, n);
	tsr_dec_begin_struct(&d, 1, &ver, &sub);
	kind = tsr_dec_u8(&sub);
	c->kind = kind & (uint8_t)~CM_LOC;
	c->has_loc = (kind & CM_LOC) != 0;
	if (c->kind == OS_CHUNK_RAW) {
		c->zero = tsr_dec_u16(&sub);
		for (unsigned b = 0; b < OS_BPC; b++)
			if (!(c->zero & (1u << b)))
				c->crc[b] = tsr_dec_u32(&sub);
		for (unsigned b = 0; c->has_loc && b < OS_BPC; b++)
			if (!(c->zero & (1u << b)))
				c->loc[b] = tsr_dec_u64(&sub);
	} else if (c->kind == OS_CHUNK_ZSTD) {
		c->stored = tsr_dec_u32(&sub);
		c->crc[0] = tsr_dec_u32(&sub);
		if (c->has_loc)
			c->loc[0] = tsr_dec_u64(&sub);
		if (c->stored == 0 || c->stored > OS_CHUNK)
			tsr_dec_fail(&sub, -EBADMSG);
	} else if (c->kind == OS_CHUNK_INLINE && !c->has_loc) {
		const void *bytes = NULL;
		size_t len = 0;

		c->crc[0] = tsr_dec_u32(&sub);
		tsr_dec_bytes(&sub, &bytes, &len, OS_CHUNK);
		if (len == 0)
			tsr_dec_fail(&sub, -EBADMSG);
		c->inl = bytes;
		c->stored = (uint32_t)len;
	} else {
		tsr_dec_fail(&sub, -EBADMSG);
	}
	tsr_dec_end_struct(&d, &sub);
	if (tsr_dec_error(&d) || tsr_dec_remaining(&d) != 0)
		return -EIO;
	c->present = 1;
	return 0;
}

int
os_super_store(struct os *os, int sync, char *err, size_t errlen)
{
	struct tsr_kv_batch *b = tsr_kv_batch_create();
	size_t sl;
	uint8_t *s = os_super_encode(&os->sb, os->hooks->magic, &sl);
	int rc;

	if (b == NULL || s == NULL) {
		tsr_kv_batch_destroy(b);
		free(s);
		return errf(err, errlen, -ENOMEM, "%s: out of memory", os->path);
	}
	tsr_kv_batch_put(b, "S", 1, s, sl);
	rc = tsr_kv_write(os->kv, b, sync, err, errlen);
	tsr_kv_batch_destroy(b);
	free(s);
	return rc;
}

int
os_super_load(struct os *os, char *err, size_t errlen)
{
	void *v;
	size_t vl;
	char why[160];
	int rc = tsr_kv_get(os->kv, "S", 1, &v, &vl, err, errlen);

	if (rc == -ENOENT)
		return errf(err, errlen, -EINVAL,
			    "%s: no superblock: not a %.8s store", os->meta_path,
			    os->hooks->magic);
	if (rc < 0)
		return rc;
	rc = super_decode(v, vl, os->hooks->magic, &os->sb, why, sizeof(why));
	tsr_kv_free(v);
	if (rc < 0)
		return errf(err, errlen, rc, "%s: %s", os->meta_path, why);
	return 0;
}

void
os_super_new(struct os *os, int next_objid_start)
{
	memset(&os->sb, 0, sizeof(os->sb));
	os->sb.next_objid = (uint64_t)next_objid_start;
}

/* ---- The key/value part of journal records ----------------------------*/

struct delrange {
	struct tsr_kv_batch *b;
};

static int
delrange_key(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct delrange *d = arg;

	(void)v;
	(void)vl;
	tsr_kv_batch_del(d->b, k, kl);
	return 0;
}

void
os_rec_kv(struct tsr_enc *e, uint32_t *n, int op, const void *k, size_t kl,
	  const void *v, size_t vl)
{
	tsr_enc_u8(e, (uint8_t)op);
	tsr_enc_bytes(e, k, kl);
	tsr_enc_bytes(e, v, vl);
	(*n)++;
}

void
os_rec_kv_next(struct tsr_dec *d, uint8_t *op, const void **k, size_t *kl,
	       const void **v, size_t *vl)
{
	*op = tsr_dec_u8(d);
	tsr_dec_bytes(d, k, kl, OS_KEY_MAX);
	tsr_dec_bytes(d, v, vl, TSR_TXN_MAX_VALUE + 64);
}

int
os_rec_kv_decode(struct os *os, struct tsr_dec *d, struct tsr_kv_batch *b,
		 char *err, size_t errlen)
{
	uint32_t n = tsr_dec_u32(d);
	int rc = 0;

	for (uint32_t i = 0; i < n && rc == 0 && !tsr_dec_error(d); i++) {
		uint8_t op;
		const void *k, *v;
		size_t kl, vl;

		os_rec_kv_next(d, &op, &k, &kl, &v, &vl);
		if (tsr_dec_error(d))
			break;
		if (op == OS_KV_PUT)
			tsr_kv_batch_put(b, k, kl, v, vl);
		else if (op == OS_KV_DEL)
			tsr_kv_batch_del(b, k, kl);
		else if (op == OS_KV_DELRANGE)
			rc = os_batch_del_range(os, b, k, kl, v, vl, err, errlen);
		else
			tsr_dec_fail(d, -EBADMSG);
	}
	return rc;
}

int
os_batch_del_range(struct os *os, struct tsr_kv_batch *b, const void *start,
		   size_t sl, const void *end, size_t el, char *err, size_t errlen)
{
	struct delrange dr = { b };

	return tsr_kv_scan(os->kv, start, sl, end, el, delrange_key, &dr, err,
			   errlen);
}
