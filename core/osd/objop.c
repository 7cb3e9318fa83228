/* objop.c — a client's operation on one object and its reply (objop.h). */
#include "osd/objop.h"
#include "osd/pglog.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the sub-operations' table --------------------------------------------- */

const char *
tsr_objop_name(uint16_t type)
{
	switch (type) {
#define TSR_OBJOP_NAME(name, n, label, writes) case (n): return label;
	TSR_OBJOP_TYPES(TSR_OBJOP_NAME)
#undef TSR_OBJOP_NAME
	}
	return NULL;
}

int
tsr_objop_writes(uint16_t type)
{
	switch (type) {
#define TSR_OBJOP_WRITES(name, n, label, writes) case (n): return (writes);
	TSR_OBJOP_TYPES(TSR_OBJOP_WRITES)
#undef TSR_OBJOP_WRITES
	}
	return 0;
}

int
tsr_objop_reads(uint16_t type)
{
	switch (type) {
	case TSR_OBJOP_READ:
	case TSR_OBJOP_STAT:
	case TSR_OBJOP_GETXATTR:
	case TSR_OBJOP_GETXATTRS:
	case TSR_OBJOP_OMAP_GET_KEYS:
	case TSR_OBJOP_OMAP_GET_RANGE:
	case TSR_OBJOP_PG_LIST:
	case TSR_OBJOP_PG_SCRUB:
		return 1;
	}
	return 0;
}

int
tsr_objop_is_write(const struct tsr_objop *op)
{
	for (uint32_t i = 0; i < op->nops && i < TSR_OBJOP_MAX_OPS; i++)
		if (tsr_objop_writes(op->ops[i].type))
			return 1;
	return 0;
}

/* The fields each type uses (the header's table); the others must be zero
 * or empty, so that a field means the same to every OSD that will ever
 * read it. */
enum {
	USE_OFF = 1 << 0,
	USE_LEN = 1 << 1,
	USE_NAME = 1 << 2,      /* 1 .. TSR_OBJOP_MAX_NAME bytes */
	USE_NAME0 = 1 << 3,     /* may be empty */
	USE_FLAGS = 1 << 4,
};
/* what the input holds */
enum { IN_NONE, IN_DATA, IN_VALUE, IN_KEYS, IN_KV, IN_PREFIX, IN_KEY };

static void
uses(uint16_t type, unsigned *fields, int *in)
{
	*fields = 0;
	*in = IN_NONE;
	switch (type) {
	case TSR_OBJOP_READ: *fields = USE_OFF | USE_LEN; break;
	case TSR_OBJOP_WRITE: *fields = USE_OFF; *in = IN_DATA; break;
	case TSR_OBJOP_WRITE_FULL:
	case TSR_OBJOP_APPEND: *in = IN_DATA; break;
	case TSR_OBJOP_TRUNCATE: *fields = USE_OFF; break;
	case TSR_OBJOP_ZERO: *fields = USE_OFF | USE_LEN; break;
	case TSR_OBJOP_CREATE: *fields = USE_FLAGS; break;
	case TSR_OBJOP_GETXATTR:
	case TSR_OBJOP_RMXATTR: *fields = USE_NAME; break;
	case TSR_OBJOP_SETXATTR: *fields = USE_NAME; *in = IN_VALUE; break;
	case TSR_OBJOP_CMPXATTR: *fields = USE_NAME | USE_OFF; *in = IN_VALUE; break;
	case TSR_OBJOP_ASSERT_VERSION: *fields = USE_OFF | USE_LEN; break;
	case TSR_OBJOP_OMAP_GET_KEYS: *in = IN_KEYS; break;
	case TSR_OBJOP_OMAP_GET_RANGE: *fields = USE_NAME0 | USE_LEN; *in = IN_PREFIX; break;
	case TSR_OBJOP_OMAP_SET: *in = IN_KV; break;
	case TSR_OBJOP_OMAP_RM: *in = IN_KEYS; break;
	case TSR_OBJOP_OMAP_RM_RANGE: *fields = USE_NAME; *in = IN_KEY; break;
	case TSR_OBJOP_PG_LIST: *fields = USE_NAME0 | USE_LEN; break;
	case TSR_OBJOP_PG_SCRUB: *fields = USE_FLAGS; break;
	default: break;   /* STAT, REMOVE, GETXATTRS, ASSERT_EXISTS, OMAP_CLEAR */
	}
}

/* A refusal naming sub-operation i: "op 3 (setxattr): ...". */
static int TSR_PRINTF(6, 7)
op_fail(char *err, size_t errlen, int rc, uint32_t i, uint16_t type, const char *fmt, ...)
{
	const char *label = tsr_objop_name(type);
	va_list ap;
	int n;

	if (err == NULL || errlen == 0)
		return rc;
	n = label ? snprintf(err, errlen, "op %" PRIu32 " (%s): ", i, label)
		  : snprintf(err, errlen, "op %" PRIu32 ": ", i);
	if (n < 0 || (size_t)n >= errlen)
		return rc;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return rc;
}

/* The fixed fields of sub-operation i (its input is checked once it is
 * placed in the data). */
static int
sub_fields(const struct tsr_objop_sub *s, uint32_t in_len, uint32_t i, char *err,
	   size_t errlen)
{
	size_t name_max = s->type == TSR_OBJOP_PG_LIST ? TSR_OBJOP_MAX_OID : TSR_OBJOP_MAX_NAME;
	unsigned f;
	int in;

	if (tsr_objop_name(s->type) == NULL)
		return op_fail(err, errlen, -EBADMSG, i, s->type, "unknown type %u", s->type);
	uses(s->type, &f, &in);
	if (!(f & USE_FLAGS) && s->flags)
		return op_fail(err, errlen, -EBADMSG, i, s->type, "flags 0x%x, which only "
			       "create and pg-scrub take", s->flags);
	if (s->type == TSR_OBJOP_PG_SCRUB &&
	    (s->flags & ~(TSR_OBJOP_SCRUB_DEEP | TSR_OBJOP_SCRUB_REPAIR)))
		return op_fail(err, errlen, -EBADMSG, i, s->type, "flags 0x%x, only 0x%x "
			       "(deep) and 0x%x (repair) are defined", s->flags,
			       TSR_OBJOP_SCRUB_DEEP, TSR_OBJOP_SCRUB_REPAIR);
	if (s->type != TSR_OBJOP_PG_SCRUB && (s->flags & ~TSR_OBJOP_EXCL))
		return op_fail(err, errlen, -EBADMSG, i, s->type, "flags 0x%x, only 0x%x "
			       "(exclusive) is defined", s->flags, TSR_OBJOP_EXCL);
	if (!(f & USE_OFF) && s->off)
		return op_fail(err, errlen, -EBADMSG, i, s->type, "off %" PRIu64 ", which "
			       "it does not use (must be 0)", s->off);
	if (!(f & USE_LEN) && s->len)
		return op_fail(err, errlen, -EBADMSG, i, s->type, "len %" PRIu64 ", which "
			       "it does not use (must be 0)", s->len);
	if (!(f & (USE_NAME | USE_NAME0)) && s->name_len)
		return op_fail(err, errlen, -EBADMSG, i, s->type, "a name of %zu bytes, "
			       "which it does not use (must be empty)", s->name_len);
	if ((f & USE_NAME) && s->name_len == 0)
		return op_fail(err, errlen, -EBADMSG, i, s->type, "empty name");
	if (s->name_len > name_max)
		return op_fail(err, errlen, -EBADMSG, i, s->type, "name of %zu bytes, at "
			       "most %zu", s->name_len, name_max);
	switch (in) {
	case IN_NONE:
		if (in_len)
			return op_fail(err, errlen, -EBADMSG, i, s->type, "%" PRIu32 " bytes "
				       "of input, which it takes none of", in_len);
		break;
	case IN_VALUE:
		if (in_len > TSR_OBJOP_MAX_VALUE)
			return op_fail(err, errlen, -EBADMSG, i, s->type, "a value of %"
				       PRIu32 " bytes, at most %u", in_len, TSR_OBJOP_MAX_VALUE);
		break;
	case IN_PREFIX:
		if (in_len > TSR_OBJOP_MAX_NAME)
			return op_fail(err, errlen, -EBADMSG, i, s->type, "a prefix of %"
				       PRIu32 " bytes, at most %u", in_len, TSR_OBJOP_MAX_NAME);
		break;
	case IN_KEY:
		if (in_len == 0 || in_len > TSR_OBJOP_MAX_NAME)
			return op_fail(err, errlen, -EBADMSG, i, s->type, "an end key of %"
				       PRIu32 " bytes, 1 .. %u", in_len, TSR_OBJOP_MAX_NAME);
		break;
	default:        /* data and lists: bounded as one input */
		if (in_len > TSR_OBJOP_MAX_DATA)
			return op_fail(err, errlen, -EBADMSG, i, s->type, "input of %" PRIu32
				       " bytes, at most %u", in_len, TSR_OBJOP_MAX_DATA);
		break;
	}
	switch (s->type) {
	case TSR_OBJOP_READ:
		if (s->len == 0 || s->len > TSR_OBJOP_MAX_DATA)
			return op_fail(err, errlen, -EBADMSG, i, s->type, "len %" PRIu64
				       ", 1 .. %u", s->len, TSR_OBJOP_MAX_DATA);
		/* fall through */
	case TSR_OBJOP_ZERO:
		if (s->off > UINT64_MAX - s->len)
			return op_fail(err, errlen, -EBADMSG, i, s->type, "off %" PRIu64
				       " + len %" PRIu64 " overflows", s->off, s->len);
		break;
	case TSR_OBJOP_WRITE:
		if (s->off > UINT64_MAX - in_len)
			return op_fail(err, errlen, -EBADMSG, i, s->type, "off %" PRIu64
				       " + %" PRIu32 " bytes overflows", s->off, in_len);
		break;
	case TSR_OBJOP_CMPXATTR:
		if (s->off < TSR_OBJOP_CMP_EQ || s->off > TSR_OBJOP_CMP_LE)
			return op_fail(err, errlen, -EBADMSG, i, s->type, "comparison %"
				       PRIu64 ", 1 .. %d", s->off, TSR_OBJOP_CMP_LE);
		break;
	case TSR_OBJOP_OMAP_GET_RANGE:
	case TSR_OBJOP_PG_LIST:
		if (s->len == 0 || s->len > TSR_OBJOP_MAX_KEYS)
			return op_fail(err, errlen, -EBADMSG, i, s->type, "len %" PRIu64
				       ", 1 .. %u keys", s->len, TSR_OBJOP_MAX_KEYS);
		break;
	}
	return 0;
}

/* A list input is walked to its end now, so that what executes it meets
 * only keys in order and within bounds. */
static int
sub_input(const struct tsr_objop_sub *s, uint32_t i, char *err, size_t errlen)
{
	struct tsr_objop_list l;
	const uint8_t *k, *v;
	size_t kl, vl;
	char why[160] = "";
	unsigned f;
	int in, rc;

	uses(s->type, &f, &in);
	if (in != IN_KEYS && in != IN_KV)
		return 0;
	rc = tsr_objop_list_init(&l, s->in, s->in_len, in == IN_KV, why, sizeof(why));
	while (rc == 0 && (rc = tsr_objop_list_next(&l, &k, &kl, &v, &vl, why,
						     sizeof(why))) == 1)
		rc = 0;
	if (rc < 0)
		return op_fail(err, errlen, -EBADMSG, i, s->type, "%s", why);
	return 0;
}

/* ---- the request ------------------------------------------------------------ */

int
tsr_objop_encode(struct tsr_enc *e, const struct tsr_objop *op)
{
	size_t mark;

	if (op->nops > TSR_OBJOP_MAX_OPS)
		return -EINVAL;
	for (uint32_t i = 0; i < op->nops; i++)
		if (op->ops[i].in_len > UINT32_MAX)
			return -EOVERFLOW;
	mark = tsr_enc_begin_struct(e, 1, 1);
	tsr_enc_u64(e, op->client);
	tsr_enc_u64(e, op->tid);
	tsr_enc_u64(e, op->map_epoch);
	tsr_enc_i64(e, op->pool);
	tsr_enc_u32(e, op->pg);
	tsr_enc_u32(e, op->flags);
	tsr_enc_bytes(e, op->oid, op->oid_len);
	tsr_enc_u32(e, op->nops);
	for (uint32_t i = 0; i < op->nops; i++) {
		const struct tsr_objop_sub *s = &op->ops[i];

		tsr_enc_u16(e, s->type);
		tsr_enc_u16(e, s->flags);
		tsr_enc_u64(e, s->off);
		tsr_enc_u64(e, s->len);
		tsr_enc_bytes(e, s->name, s->name_len);
		tsr_enc_u32(e, (uint32_t)s->in_len);
	}
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

int
tsr_objop_iov(const struct tsr_objop *op, struct iovec *iov)
{
	int n = 0;

	for (uint32_t i = 0; i < op->nops && i < TSR_OBJOP_MAX_OPS; i++)
		if (op->ops[i].in_len) {
			iov[n].iov_base = (void *)op->ops[i].in;
			iov[n++].iov_len = op->ops[i].in_len;
		}
	return n;
}

static int
decode_op(const void *front, size_t front_len, const uint8_t *data, size_t data_len,
	  struct tsr_objop *op, char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	const void *p;
	uint64_t at = 0;        /* where the next input starts in data */
	uint8_t ver;
	int rc;

	if (data == NULL && data_len)
		return tsr_errf(err, errlen, -EBADMSG, "osd op: %zu bytes of data at NULL",
				data_len);
	tsr_dec_init(&d, front, front_len);
	if ((rc = tsr_dec_begin_struct(&d, 1, &ver, &sub)) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "osd op: bad envelope (%s)",
				rc == -EOPNOTSUPP ? "a newer encoding" : "truncated or malformed");
	op->client = tsr_dec_u64(&sub);
	op->tid = tsr_dec_u64(&sub);
	op->map_epoch = tsr_dec_u64(&sub);
	op->pool = tsr_dec_i64(&sub);
	op->pg = tsr_dec_u32(&sub);
	op->flags = tsr_dec_u32(&sub);
	/* lengths are bounded by the bytes at hand here, and by the limits
	 * below with a reason that says which */
	tsr_dec_bytes(&sub, &p, &op->oid_len, UINT32_MAX);
	op->oid = p;
	op->nops = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub))
		return tsr_errf(err, errlen, -EBADMSG, "osd op: truncated before its "
				"sub-operations");
	if (op->flags)
		return tsr_errf(err, errlen, -EBADMSG, "osd op: flags 0x%" PRIx32 ", none "
				"is defined (must be 0)", op->flags);
	if (op->nops == 0 || op->nops > TSR_OBJOP_MAX_OPS)
		return tsr_errf(err, errlen, -EBADMSG, "osd op: %" PRIu32 " sub-operations, "
				"1 .. %u", op->nops, TSR_OBJOP_MAX_OPS);
	for (uint32_t i = 0; i < op->nops; i++) {
		struct tsr_objop_sub *s = &op->ops[i];
		uint32_t in_len;

		s->type = tsr_dec_u16(&sub);
		s->flags = tsr_dec_u16(&sub);
		s->off = tsr_dec_u64(&sub);
		s->len = tsr_dec_u64(&sub);
		tsr_dec_bytes(&sub, &p, &s->name_len, UINT32_MAX);
		s->name = p;
		in_len = tsr_dec_u32(&sub);
		if (tsr_dec_error(&sub))
			return op_fail(err, errlen, -EBADMSG, i, s->type, "truncated");
		if ((rc = sub_fields(s, in_len, i, err, errlen)) < 0)
			return rc;
		if (in_len > data_len - at)
			return op_fail(err, errlen, -EBADMSG, i, s->type, "input of %" PRIu32
				       " bytes past the end of the data (%zu bytes, %" PRIu64
				       " taken before)", in_len, data_len, at);
		s->in = in_len ? data + at : NULL;
		s->in_len = in_len;
		at += in_len;
		if ((rc = sub_input(s, i, err, errlen)) < 0)
			return rc;
	}
	/* A version 1 writer puts nothing after the sub-operations; a newer
	 * one's fields are skipped. */
	if (ver == 1 && tsr_dec_remaining(&sub))
		return tsr_errf(err, errlen, -EBADMSG, "osd op: %zu bytes left over after "
				"the sub-operations", tsr_dec_remaining(&sub));
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d))
		return tsr_errf(err, errlen, -EBADMSG, "osd op: %zu bytes left over after "
				"the envelope", tsr_dec_remaining(&d));
	if (at != data_len)
		return tsr_errf(err, errlen, -EBADMSG, "osd op: the inputs take %" PRIu64
				" bytes of the data's %zu", at, data_len);
	/* PG_LIST and PG_SCRUB name no object: each stands alone with an
	 * empty oid */
	for (uint32_t i = 0; i < op->nops; i++)
		if ((op->ops[i].type == TSR_OBJOP_PG_LIST ||
		     op->ops[i].type == TSR_OBJOP_PG_SCRUB) && op->nops > 1)
			return op_fail(err, errlen, -EBADMSG, i, op->ops[i].type,
				       "must be the only sub-operation (there are %" PRIu32 ")",
				       op->nops);
	if (op->ops[0].type == TSR_OBJOP_PG_LIST || op->ops[0].type == TSR_OBJOP_PG_SCRUB) {
		if (op->oid_len)
			return tsr_errf(err, errlen, -EBADMSG, "osd op: %s with an oid of %zu "
					"bytes (it acts on a PG: no object)",
					tsr_objop_name(op->ops[0].type), op->oid_len);
	} else if (op->oid_len == 0) {
		return tsr_errf(err, errlen, -EBADMSG, "osd op: empty oid");
	} else if (op->oid_len > TSR_OBJOP_MAX_OID) {
		return tsr_errf(err, errlen, -EBADMSG, "osd op: oid of %zu bytes, at most %u",
				op->oid_len, TSR_OBJOP_MAX_OID);
	} else if (op->oid[0] == 0) {
		return tsr_errf(err, errlen, -EBADMSG, "osd op: oid starts with a zero byte "
				"(the OSD's own names)");
	}
	/* A write is answered again, after a change of primary, from its
	 * result and version alone (objop.h): it cannot return data. */
	if (tsr_objop_is_write(op))
		for (uint32_t i = 0; i < op->nops; i++)
			if (tsr_objop_reads(op->ops[i].type))
				return op_fail(err, errlen, -EINVAL, i, op->ops[i].type,
					       "returns data, in a write (a write returns "
					       "none)");
	return 0;
}

int
tsr_objop_decode(const void *front, size_t front_len, const void *data, size_t data_len,
		 struct tsr_objop *op, char *err, size_t errlen)
{
	int rc;

	memset(op, 0, sizeof(*op));
	if ((rc = decode_op(front, front_len, data, data_len, op, err, errlen)) < 0) {
		/* nothing half-decoded to act on, but whom to answer */
		uint64_t client = op->client, tid = op->tid;
		memset(op, 0, sizeof(*op));
		op->client = client;
		op->tid = tid;
	}
	return rc;
}

/* ---- the reply -------------------------------------------------------------- */

int
tsr_objop_reply_encode(struct tsr_enc *e, const struct tsr_objop_reply *r)
{
	size_t mark;

	if (r->nops > TSR_OBJOP_MAX_OPS)
		return -EINVAL;
	for (uint32_t i = 0; i < r->nops; i++)
		if (r->ops[i].out_len > UINT32_MAX)
			return -EOVERFLOW;
	mark = tsr_enc_begin_struct(e, 1, 1);
	tsr_enc_u64(e, r->tid);
	tsr_enc_i32(e, r->result);
	tsr_enc_u64(e, r->map_epoch);
	tsr_enc_u64(e, r->ver_epoch);
	tsr_enc_u64(e, r->ver);
	tsr_enc_u32(e, r->nops);
	for (uint32_t i = 0; i < r->nops; i++) {
		tsr_enc_i32(e, r->ops[i].rc);
		tsr_enc_u32(e, (uint32_t)r->ops[i].out_len);
	}
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

int
tsr_objop_reply_iov(const struct tsr_objop_reply *r, struct iovec *iov)
{
	int n = 0;

	for (uint32_t i = 0; i < r->nops && i < TSR_OBJOP_MAX_OPS; i++)
		if (r->ops[i].out_len) {
			iov[n].iov_base = (void *)r->ops[i].out;
			iov[n++].iov_len = r->ops[i].out_len;
		}
	return n;
}

static int
decode_reply(const void *front, size_t front_len, const uint8_t *data, size_t data_len,
	     struct tsr_objop_reply *r, char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	uint64_t at = 0;
	uint8_t ver;
	int rc;

	if (data == NULL && data_len)
		return tsr_errf(err, errlen, -EBADMSG, "osd op reply: %zu bytes of data at "
				"NULL", data_len);
	tsr_dec_init(&d, front, front_len);
	if ((rc = tsr_dec_begin_struct(&d, 1, &ver, &sub)) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "osd op reply: bad envelope (%s)",
				rc == -EOPNOTSUPP ? "a newer encoding" : "truncated or malformed");
	r->tid = tsr_dec_u64(&sub);
	r->result = tsr_dec_i32(&sub);
	r->map_epoch = tsr_dec_u64(&sub);
	r->ver_epoch = tsr_dec_u64(&sub);
	r->ver = tsr_dec_u64(&sub);
	r->nops = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub))
		return tsr_errf(err, errlen, -EBADMSG, "osd op reply: truncated before its "
				"sub-operations");
	if (r->nops > TSR_OBJOP_MAX_OPS)
		return tsr_errf(err, errlen, -EBADMSG, "osd op reply: %" PRIu32
				" sub-operations, at most %u", r->nops, TSR_OBJOP_MAX_OPS);
	for (uint32_t i = 0; i < r->nops; i++) {
		uint32_t out_len;

		r->ops[i].rc = tsr_dec_i32(&sub);
		out_len = tsr_dec_u32(&sub);
		if (tsr_dec_error(&sub))
			return tsr_errf(err, errlen, -EBADMSG, "osd op reply: op %" PRIu32
					": truncated", i);
		if (out_len > TSR_OBJOP_MAX_DATA)
			return tsr_errf(err, errlen, -EBADMSG, "osd op reply: op %" PRIu32
					": output of %" PRIu32 " bytes, at most %u", i, out_len,
					TSR_OBJOP_MAX_DATA);
		if (out_len > data_len - at)
			return tsr_errf(err, errlen, -EBADMSG, "osd op reply: op %" PRIu32
					": output of %" PRIu32 " bytes past the end of the "
					"data (%zu bytes, %" PRIu64 " taken before)", i,
					out_len, data_len, at);
		r->ops[i].out = out_len ? data + at : NULL;
		r->ops[i].out_len = out_len;
		at += out_len;
	}
	if (ver == 1 && tsr_dec_remaining(&sub))
		return tsr_errf(err, errlen, -EBADMSG, "osd op reply: %zu bytes left over "
				"after the sub-operations", tsr_dec_remaining(&sub));
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d))
		return tsr_errf(err, errlen, -EBADMSG, "osd op reply: %zu bytes left over "
				"after the envelope", tsr_dec_remaining(&d));
	if (at != data_len)
		return tsr_errf(err, errlen, -EBADMSG, "osd op reply: the outputs take %"
				PRIu64 " bytes of the data's %zu", at, data_len);
	return 0;
}

uint64_t
tsr_objop_reply_tid(const void *front, size_t front_len)
{
	struct tsr_dec d, sub;
	uint8_t ver;
	uint64_t tid;

	tsr_dec_init(&d, front, front_len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return 0;
	tid = tsr_dec_u64(&sub);
	return tsr_dec_error(&sub) ? 0 : tid;
}

int
tsr_objop_reply_decode(const void *front, size_t front_len, const void *data,
		       size_t data_len, struct tsr_objop_reply *r, char *err, size_t errlen)
{
	int rc;

	memset(r, 0, sizeof(*r));
	if ((rc = decode_reply(front, front_len, data, data_len, r, err, errlen)) < 0)
		memset(r, 0, sizeof(*r));
	return rc;
}

/* ---- lists ------------------------------------------------------------------ */

size_t
tsr_objop_list_begin(struct tsr_enc *e)
{
	size_t mark = e->len;

	tsr_enc_u32(e, 0);      /* the count, once known (tsr_objop_list_end) */
	return mark;
}

/* val NULL: a keylist's entry (a kvlist's empty value is a non-NULL val
 * of length 0). */
void
tsr_objop_list_put(struct tsr_enc *e, const void *key, size_t key_len, const void *val,
		   size_t val_len)
{
	tsr_enc_bytes(e, key, key_len);
	if (val != NULL)
		tsr_enc_bytes(e, val, val_len);
}

void
tsr_objop_list_end(struct tsr_enc *e, size_t mark, uint32_t n)
{
	if (e->err != 0)
		return;
	/* a mark tsr_objop_list_begin did not return: fail, rather than
	 * write outside the list */
	if (mark > e->len || e->len - mark < 4) {
		e->err = -EINVAL;
		return;
	}
	/* little-endian, as tsr_enc_u32 wrote the placeholder */
	for (size_t i = 0; i < 4; i++)
		e->buf[mark + i] = (uint8_t)(n >> (8 * i));
}

int
tsr_objop_list_init(struct tsr_objop_list *l, const void *buf, size_t len, int kv,
		    char *err, size_t errlen)
{
	memset(l, 0, sizeof(*l));
	l->kv = kv != 0;
	tsr_dec_init(&l->d, buf, len);
	l->left = tsr_dec_u32(&l->d);
	if (tsr_dec_error(&l->d))
		return tsr_errf(err, errlen, -EBADMSG, "list: %zu bytes, no count", len);
	/* a key takes 4 bytes at least (8 with its value): the count is
	 * bounded by the bytes at hand as well */
	if (l->left > TSR_OBJOP_MAX_KEYS || l->left > tsr_dec_remaining(&l->d) / (l->kv ? 8 : 4)) {
		uint32_t n = l->left;

		tsr_dec_fail(&l->d, -EBADMSG);
		l->left = 0;
		return tsr_errf(err, errlen, -EBADMSG, "list: %" PRIu32 " keys in %zu bytes "
				"(at most %u)", n, len, TSR_OBJOP_MAX_KEYS);
	}
	return 0;
}

int
tsr_objop_list_next(struct tsr_objop_list *l, const uint8_t **key, size_t *key_len,
		    const uint8_t **val, size_t *val_len, char *err, size_t errlen)
{
	const void *k, *v = NULL;
	size_t kl, vl = 0;

	*key = NULL;
	*key_len = 0;
	if (val) {
		*val = NULL;
		*val_len = 0;
	}
	/* a refusal is final: a walk never resumes past it */
	if (tsr_dec_error(&l->d))
		return tsr_errf(err, errlen, -EBADMSG, "list: already refused");
	if (l->left == 0) {
		if (tsr_dec_remaining(&l->d) == 0)
			return 0;
		size_t extra = tsr_dec_remaining(&l->d);

		tsr_dec_fail(&l->d, -EBADMSG);
		return tsr_errf(err, errlen, -EBADMSG, "list: %zu bytes after the last key",
				extra);
	}
	tsr_dec_bytes(&l->d, &k, &kl, UINT32_MAX);
	if (l->kv)
		tsr_dec_bytes(&l->d, &v, &vl, UINT32_MAX);
	if (tsr_dec_error(&l->d))
		return tsr_errf(err, errlen, -EBADMSG, "list: truncated, %" PRIu32 " keys "
				"short", l->left);
	if (kl == 0 || kl > TSR_OBJOP_MAX_NAME) {
		tsr_dec_fail(&l->d, -EBADMSG);
		return tsr_errf(err, errlen, -EBADMSG, "list: a key of %zu bytes, 1 .. %u",
				kl, TSR_OBJOP_MAX_NAME);
	}
	if (vl > TSR_OBJOP_MAX_VALUE) {
		tsr_dec_fail(&l->d, -EBADMSG);
		return tsr_errf(err, errlen, -EBADMSG, "list: a value of %zu bytes, at most %u",
				vl, TSR_OBJOP_MAX_VALUE);
	}
	if (l->prev && tsr_oid_cmp(l->prev, l->prev_len, k, kl) >= 0) {
		tsr_dec_fail(&l->d, -EBADMSG);
		return tsr_errf(err, errlen, -EBADMSG, "list: a key out of order or twice "
				"(%" PRIu32 " keys before the end)", l->left);
	}
	l->prev = k;
	l->prev_len = kl;
	l->left--;
	*key = k;
	*key_len = kl;
	if (val) {
		*val = v;
		*val_len = vl;
	}
	return 1;
}

/* ---- STAT's output ---------------------------------------------------------- */

static void
put_le64(uint8_t *p, uint64_t v)
{
	for (size_t i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (size_t i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

void
tsr_objop_stat_encode(uint8_t out[TSR_OBJOP_STAT_LEN], uint64_t size, uint64_t mtime_ns,
		      uint64_t ver_epoch, uint64_t ver)
{
	put_le64(out, size);
	put_le64(out + 8, mtime_ns);
	put_le64(out + 16, ver_epoch);
	put_le64(out + 24, ver);
}

int
tsr_objop_stat_decode(const void *buf, size_t len, uint64_t *size, uint64_t *mtime_ns,
		      uint64_t *ver_epoch, uint64_t *ver)
{
	const uint8_t *p = buf;

	if (buf == NULL || len != TSR_OBJOP_STAT_LEN)
		return -EBADMSG;
	*size = get_le64(p);
	*mtime_ns = get_le64(p + 8);
	*ver_epoch = get_le64(p + 16);
	*ver = get_le64(p + 24);
	return 0;
}

/* ---- decode, encode, decode again ------------------------------------------- */

/* The checks take a message as one buffer — a u32 (little-endian) front
 * length, the front, then the data — which is how the fuzz targets and
 * tsr_osdmsg_check hand it over. */
static int
split(const void *buf, size_t len, const uint8_t **front, size_t *front_len,
      const uint8_t **data, size_t *data_len, const char *what, char *err, size_t errlen)
{
	const uint8_t *p = buf;
	uint32_t n;

	if (buf == NULL || len < 4)
		return tsr_errf(err, errlen, -EBADMSG, "%s: %zu bytes, no front length",
				what, buf ? len : 0);
	n = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
	if (n > len - 4)
		return tsr_errf(err, errlen, -EBADMSG, "%s: a front of %" PRIu32 " bytes in "
				"%zu", what, n, len - 4);
	*front = p + 4;
	*front_len = n;
	*data = p + 4 + n;
	*data_len = len - 4 - n;
	return 0;
}

/* The data the iovecs hold, in one malloc'd buffer (NULL: no memory). */
static uint8_t *
gather(const struct iovec *iov, int n, size_t *len)
{
	size_t total = 0, at = 0;
	uint8_t *b;

	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	if ((b = malloc(total ? total : 1)) == NULL)
		return NULL;
	for (int i = 0; i < n; i++) {
		memcpy(b + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	*len = total;
	return b;
}

static int
same_bytes(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static int
same_op(const struct tsr_objop *a, const struct tsr_objop *b)
{
	if (a->client != b->client || a->tid != b->tid || a->map_epoch != b->map_epoch ||
	    a->pool != b->pool || a->pg != b->pg || a->flags != b->flags ||
	    !same_bytes(a->oid, a->oid_len, b->oid, b->oid_len) || a->nops != b->nops)
		return 0;
	for (uint32_t i = 0; i < a->nops; i++) {
		const struct tsr_objop_sub *x = &a->ops[i], *y = &b->ops[i];

		if (x->type != y->type || x->flags != y->flags || x->off != y->off ||
		    x->len != y->len || !same_bytes(x->name, x->name_len, y->name, y->name_len) ||
		    !same_bytes(x->in, x->in_len, y->in, y->in_len))
			return 0;
	}
	return 1;
}

int
tsr_objop_check(const void *buf, size_t len, char *err, size_t errlen)
{
	struct tsr_objop a, b;
	struct iovec iov[TSR_OBJOP_MAX_OPS];
	const uint8_t *front, *data;
	size_t front_len, data_len, cat_len = 0;
	struct tsr_enc e;
	char why[256] = "";
	uint8_t *cat;
	int rc, same;

	if (split(buf, len, &front, &front_len, &data, &data_len, "osd op", err, errlen) < 0)
		return -EBADMSG;
	if (tsr_objop_decode(front, front_len, data, data_len, &a, err, errlen) < 0)
		return -EBADMSG;        /* -EINVAL too: no request to act on */
	tsr_enc_init(&e);
	if ((rc = tsr_objop_encode(&e, &a)) < 0) {
		tsr_enc_release(&e);
		return rc == -ENOMEM ? rc : tsr_errf(err, errlen, -EPROTO, "osd op: what "
						     "decoded does not encode (%d)", rc);
	}
	if ((cat = gather(iov, tsr_objop_iov(&a, iov), &cat_len)) == NULL) {
		tsr_enc_release(&e);
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	}
	if (tsr_objop_decode(e.buf, e.len, cat, cat_len, &b, why, sizeof(why)) < 0) {
		rc = tsr_errf(err, errlen, -EPROTO, "osd op: its encoding does not decode "
			      "(%s)", why);
	} else {
		same = same_op(&a, &b);
		rc = same ? 0 : tsr_errf(err, errlen, -EPROTO, "osd op: the round trip "
					 "differs");
	}
	free(cat);
	tsr_enc_release(&e);
	return rc;
}

static int
same_reply(const struct tsr_objop_reply *a, const struct tsr_objop_reply *b)
{
	if (a->tid != b->tid || a->result != b->result || a->map_epoch != b->map_epoch ||
	    a->ver_epoch != b->ver_epoch || a->ver != b->ver || a->nops != b->nops)
		return 0;
	for (uint32_t i = 0; i < a->nops; i++)
		if (a->ops[i].rc != b->ops[i].rc ||
		    !same_bytes(a->ops[i].out, a->ops[i].out_len, b->ops[i].out,
				b->ops[i].out_len))
			return 0;
	return 1;
}

int
tsr_objop_reply_check(const void *buf, size_t len, char *err, size_t errlen)
{
	struct tsr_objop_reply a, b;
	struct iovec iov[TSR_OBJOP_MAX_OPS];
	const uint8_t *front, *data;
	size_t front_len, data_len, cat_len = 0;
	struct tsr_enc e;
	char why[256] = "";
	uint8_t *cat;
	int rc;

	if (split(buf, len, &front, &front_len, &data, &data_len, "osd op reply", err,
		  errlen) < 0)
		return -EBADMSG;
	if (tsr_objop_reply_decode(front, front_len, data, data_len, &a, err, errlen) < 0)
		return -EBADMSG;
	tsr_enc_init(&e);
	if ((rc = tsr_objop_reply_encode(&e, &a)) < 0) {
		tsr_enc_release(&e);
		return rc == -ENOMEM ? rc : tsr_errf(err, errlen, -EPROTO, "osd op reply: "
						     "what decoded does not encode (%d)", rc);
	}
	if ((cat = gather(iov, tsr_objop_reply_iov(&a, iov), &cat_len)) == NULL) {
		tsr_enc_release(&e);
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	}
	if (tsr_objop_reply_decode(e.buf, e.len, cat, cat_len, &b, why, sizeof(why)) < 0)
		rc = tsr_errf(err, errlen, -EPROTO, "osd op reply: its encoding does not "
			      "decode (%s)", why);
	else
		rc = same_reply(&a, &b) ? 0 : tsr_errf(err, errlen, -EPROTO, "osd op reply: "
						       "the round trip differs");
	free(cat);
	tsr_enc_release(&e);
	return rc;
}
