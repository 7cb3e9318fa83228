/* test_objop.c — a client's operation on an object and its reply
 * (core/osd/objop.h): every sub-operation type round-trips, lists walk
 * and refuse what is out of order, twice, cut or followed by bytes, and
 * every refusal the header lists (a field a sub-operation does not use,
 * a bound, PG_LIST with company or an object, a write that returns data,
 * inputs that do not add up to the data) comes with its code and a
 * reason naming the sub-operation.  Cuts and mutations of a valid message
 * are refused or round-trip, never crash (run it under the ASan build). */
#include "osd/objop.h"
#include "osd/osdmsg.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint8_t big[TSR_OBJOP_MAX_NAME + 1000];  /* 'n' bytes, for names over a bound */

/* ---- helpers -------------------------------------------------------------------- */

struct wire {
	uint8_t *front, *data;
	size_t flen, dlen;
};

/* op as it travels: its front, and the data its iovecs hold. */
static void
wire_of(const struct tsr_objop *op, struct wire *w)
{
	struct iovec iov[TSR_OBJOP_MAX_OPS];
	struct tsr_enc e;
	size_t at = 0;
	int n;

	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_objop_encode(&e, op), 0);
	w->front = tsr_enc_take(&e, &w->flen);
	n = tsr_objop_iov(op, iov);
	/* an input at NULL is one the front claims and the data lacks */
	w->dlen = 0;
	for (int i = 0; i < n; i++)
		if (iov[i].iov_base)
			w->dlen += iov[i].iov_len;
	w->data = malloc(w->dlen + 1);
	ck_assert_ptr_nonnull(w->data);
	for (int i = 0; i < n; i++)
		if (iov[i].iov_base) {
			memcpy(w->data + at, iov[i].iov_base, iov[i].iov_len);
			at += iov[i].iov_len;
		}
}

static void
wire_free(struct wire *w)
{
	free(w->front);
	free(w->data);
	memset(w, 0, sizeof(*w));
}

/* The check functions' buffer: u32 LE front length, front, data. */
static uint8_t *
check_buf(const uint8_t *front, size_t flen, const uint8_t *data, size_t dlen, size_t *len)
{
	uint8_t *b = malloc(4 + flen + dlen);

	ck_assert_ptr_nonnull(b);
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(flen >> (8 * i));
	memcpy(b + 4, front, flen);
	if (dlen)
		memcpy(b + 4 + flen, data, dlen);
	*len = 4 + flen + dlen;
	return b;
}

/* Encode op and decode it with adj bytes more (> 0, zeros) or fewer (< 0)
 * data than its inputs: the decoder's answer. */
static int
try_op(const struct tsr_objop *op, long adj, char *err, size_t errlen)
{
	struct tsr_objop out;
	struct wire w;
	size_t dlen;
	uint8_t *d;
	int rc;

	wire_of(op, &w);
	dlen = (size_t)((long)w.dlen + adj);
	d = calloc(1, (w.dlen > dlen ? w.dlen : dlen) + 1);
	ck_assert_ptr_nonnull(d);
	memcpy(d, w.data, w.dlen);
	err[0] = '\0';
	rc = tsr_objop_decode(w.front, w.flen, d, dlen, &out, err, errlen);
	free(d);
	wire_free(&w);
	return rc;
}

#define REFUSED(op, adj, rc_, word)                                                   \
	do {                                                                          \
		char err_[512];                                                       \
		int r_ = try_op((op), (adj), err_, sizeof(err_));                     \
		ck_assert_msg(r_ == (rc_) && strstr(err_, (word)) != NULL,            \
			      "line %d: expected %d with \"%s\", got %d: \"%s\"",     \
			      __LINE__, (rc_), (word), r_, err_);                     \
	} while (0)

#define ACCEPTED(op)                                                                  \
	do {                                                                          \
		char err_[512];                                                       \
		int r_ = try_op((op), 0, err_, sizeof(err_));                         \
		ck_assert_msg(r_ == 0, "line %d: refused: %d \"%s\"", __LINE__, r_,   \
			      err_);                                                  \
	} while (0)

static void
base(struct tsr_objop *op, uint32_t nops)
{
	memset(op, 0, sizeof(*op));
	op->client = 0x1122334455667788ull;
	op->tid = 42;
	op->map_epoch = 9;
	op->pool = 3;
	op->pg = 0x1f;
	op->oid = (const uint8_t *)"obj";
	op->oid_len = 3;
	op->nops = nops;
	for (uint32_t i = 0; i < nops; i++)
		op->ops[i].type = TSR_OBJOP_ASSERT_EXISTS;
}

/* lists, encoded once for all the tests */
static uint8_t *keys_ab, *kv_ab, *keys_ba;
static size_t keys_ab_len, kv_ab_len, keys_ba_len;

static uint8_t *
make_list(int kv, const char *const *k, size_t n, size_t *len)
{
	struct tsr_enc e;
	size_t mark;

	tsr_enc_init(&e);
	mark = tsr_objop_list_begin(&e);
	for (size_t i = 0; i < n; i++)
		tsr_objop_list_put(&e, k[i], strlen(k[i]), kv ? "value" : NULL, kv ? 5 : 0);
	tsr_objop_list_end(&e, mark, (uint32_t)n);
	ck_assert_int_eq(tsr_enc_error(&e), 0);
	return tsr_enc_take(&e, len);
}

static void
lists_setup(void)
{
	static const char *const ab[] = { "a", "b" }, *const ba[] = { "b", "a" };

	memset(big, 'n', sizeof(big));
	keys_ab = make_list(0, ab, 2, &keys_ab_len);
	kv_ab = make_list(1, ab, 2, &kv_ab_len);
	keys_ba = make_list(0, ba, 2, &keys_ba_len);
}

static void
lists_teardown(void)
{
	free(keys_ab);
	free(kv_ab);
	free(keys_ba);
}

/* The header's table, written out again: which fields each type uses. */
enum { T_OFF = 1, T_LEN = 2, T_NAME = 4, T_FLAGS = 8, T_IN = 16 };

static unsigned
spec_uses(uint16_t t)
{
	switch (t) {
	case TSR_OBJOP_READ: return T_OFF | T_LEN;
	case TSR_OBJOP_WRITE: return T_OFF | T_IN;
	case TSR_OBJOP_WRITE_FULL: case TSR_OBJOP_APPEND: return T_IN;
	case TSR_OBJOP_TRUNCATE: return T_OFF;
	case TSR_OBJOP_ZERO: return T_OFF | T_LEN;
	case TSR_OBJOP_CREATE: return T_FLAGS;
	case TSR_OBJOP_GETXATTR: case TSR_OBJOP_RMXATTR: return T_NAME;
	case TSR_OBJOP_SETXATTR: return T_NAME | T_IN;
	case TSR_OBJOP_CMPXATTR: return T_NAME | T_OFF | T_IN;
	case TSR_OBJOP_ASSERT_VERSION: return T_OFF | T_LEN;
	case TSR_OBJOP_OMAP_GET_KEYS: case TSR_OBJOP_OMAP_SET: case TSR_OBJOP_OMAP_RM:
		return T_IN;
	case TSR_OBJOP_OMAP_GET_RANGE: return T_NAME | T_LEN | T_IN;
	case TSR_OBJOP_OMAP_RM_RANGE: return T_NAME | T_IN;
	case TSR_OBJOP_PG_LIST: return T_NAME | T_LEN;
	case TSR_OBJOP_PG_SCRUB: return T_FLAGS;
	default: return 0;
	}
}

/* A valid sub-operation of type t. */
static void
valid_sub(struct tsr_objop_sub *s, uint16_t t)
{
	memset(s, 0, sizeof(*s));
	s->type = t;
	switch (t) {
	case TSR_OBJOP_READ: s->off = 100; s->len = 4096; break;
	case TSR_OBJOP_WRITE: s->off = 8; s->in = (const uint8_t *)"hello"; s->in_len = 5; break;
	case TSR_OBJOP_WRITE_FULL: s->in = (const uint8_t *)"full"; s->in_len = 4; break;
	case TSR_OBJOP_APPEND: s->in = (const uint8_t *)"more"; s->in_len = 4; break;
	case TSR_OBJOP_TRUNCATE: s->off = 3; break;
	case TSR_OBJOP_ZERO: s->off = 5; s->len = 10; break;
	case TSR_OBJOP_CREATE: s->flags = TSR_OBJOP_EXCL; break;
	case TSR_OBJOP_GETXATTR: case TSR_OBJOP_RMXATTR:
		s->name = (const uint8_t *)"user.a"; s->name_len = 6; break;
	case TSR_OBJOP_SETXATTR:
		s->name = (const uint8_t *)"user.a"; s->name_len = 6;
		s->in = (const uint8_t *)"v1"; s->in_len = 2; break;
	case TSR_OBJOP_CMPXATTR:
		s->name = (const uint8_t *)"user.a"; s->name_len = 6; s->off = TSR_OBJOP_CMP_GE;
		s->in = (const uint8_t *)"v0"; s->in_len = 2; break;
	case TSR_OBJOP_ASSERT_VERSION: s->off = 7; s->len = 12; break;
	case TSR_OBJOP_OMAP_GET_KEYS: case TSR_OBJOP_OMAP_RM:
		s->in = keys_ab; s->in_len = keys_ab_len; break;
	case TSR_OBJOP_OMAP_SET: s->in = kv_ab; s->in_len = kv_ab_len; break;
	case TSR_OBJOP_OMAP_GET_RANGE:
		s->name = (const uint8_t *)"k1"; s->name_len = 2; s->len = 100;
		s->in = (const uint8_t *)"k"; s->in_len = 1; break;
	case TSR_OBJOP_OMAP_RM_RANGE:
		s->name = (const uint8_t *)"a"; s->name_len = 1;
		s->in = (const uint8_t *)"m"; s->in_len = 1; break;
	case TSR_OBJOP_PG_LIST: s->name = (const uint8_t *)"after"; s->name_len = 5;
		s->len = 1000; break;
	case TSR_OBJOP_PG_SCRUB:
		s->flags = TSR_OBJOP_SCRUB_DEEP | TSR_OBJOP_SCRUB_REPAIR; break;
	default: break;
	}
}

/* A compound for type t: t at index 1 behind a guard, or PG_LIST or
 * PG_SCRUB alone. */
static void
compound_for(struct tsr_objop *op, uint16_t t)
{
	if (t == TSR_OBJOP_PG_LIST || t == TSR_OBJOP_PG_SCRUB) {
		base(op, 1);
		op->oid = NULL;
		op->oid_len = 0;
		valid_sub(&op->ops[0], t);
		return;
	}
	base(op, 2);
	valid_sub(&op->ops[1], t);
}

static void
assert_same(const struct tsr_objop *a, const struct tsr_objop *b)
{
	ck_assert_uint_eq(a->client, b->client);
	ck_assert_uint_eq(a->tid, b->tid);
	ck_assert_uint_eq(a->map_epoch, b->map_epoch);
	ck_assert_int_eq(a->pool, b->pool);
	ck_assert_uint_eq(a->pg, b->pg);
	ck_assert_uint_eq(a->flags, b->flags);
	ck_assert_uint_eq(a->oid_len, b->oid_len);
	ck_assert(a->oid_len == 0 || memcmp(a->oid, b->oid, a->oid_len) == 0);
	ck_assert_uint_eq(a->nops, b->nops);
	for (uint32_t i = 0; i < a->nops; i++) {
		const struct tsr_objop_sub *x = &a->ops[i], *y = &b->ops[i];

		ck_assert_uint_eq(x->type, y->type);
		ck_assert_uint_eq(x->flags, y->flags);
		ck_assert_uint_eq(x->off, y->off);
		ck_assert_uint_eq(x->len, y->len);
		ck_assert_uint_eq(x->name_len, y->name_len);
		ck_assert(x->name_len == 0 || memcmp(x->name, y->name, x->name_len) == 0);
		ck_assert_uint_eq(x->in_len, y->in_len);
		ck_assert(x->in_len == 0 || memcmp(x->in, y->in, x->in_len) == 0);
	}
}

/* Round trip op: decode what encoded, compare, and run the checks. */
static void
round_trip(const struct tsr_objop *op)
{
	struct tsr_objop out;
	struct wire w;
	char err[256] = "";
	uint8_t *b;
	size_t len;

	wire_of(op, &w);
	ck_assert_msg(tsr_objop_decode(w.front, w.flen, w.data, w.dlen, &out, err,
				       sizeof(err)) == 0, "refused: %s", err);
	assert_same(op, &out);
	b = check_buf(w.front, w.flen, w.data, w.dlen, &len);
	ck_assert_msg(tsr_objop_check(b, len, err, sizeof(err)) == 0, "check: %s", err);
	ck_assert_msg(tsr_osdmsg_check(TSR_MSG_OSD_OP, b, len, err, sizeof(err)) == 0,
		      "osdmsg check: %s", err);
	free(b);
	wire_free(&w);
}

/* ---- tests ---------------------------------------------------------------------- */

START_TEST(names_and_kinds)
{
	struct tsr_objop op;

	ck_assert_str_eq(tsr_objop_name(TSR_OBJOP_READ), "read");
	ck_assert_str_eq(tsr_objop_name(TSR_OBJOP_WRITE_FULL), "write-full");
	ck_assert_str_eq(tsr_objop_name(TSR_OBJOP_PG_LIST), "pg-list");
	ck_assert_ptr_null(tsr_objop_name(0));
	ck_assert_str_eq(tsr_objop_name(TSR_OBJOP_PG_SCRUB), "pg-scrub");
	ck_assert_ptr_null(tsr_objop_name(25));
	ck_assert(tsr_objop_writes(TSR_OBJOP_OMAP_SET));
	ck_assert(!tsr_objop_writes(TSR_OBJOP_CMPXATTR));
	ck_assert(!tsr_objop_writes(0));
	for (uint16_t t = 1; t <= 24; t++) {
		int reads = t == TSR_OBJOP_READ || t == TSR_OBJOP_STAT ||
			    t == TSR_OBJOP_GETXATTR || t == TSR_OBJOP_GETXATTRS ||
			    t == TSR_OBJOP_OMAP_GET_KEYS || t == TSR_OBJOP_OMAP_GET_RANGE ||
			    t == TSR_OBJOP_PG_LIST || t == TSR_OBJOP_PG_SCRUB;

		ck_assert_ptr_nonnull(tsr_objop_name(t));
		ck_assert_int_eq(tsr_objop_reads(t), reads);
		ck_assert(!(reads && tsr_objop_writes(t)));
	}
	base(&op, 2);
	ck_assert(!tsr_objop_is_write(&op));
	op.ops[1].type = TSR_OBJOP_REMOVE;
	ck_assert(tsr_objop_is_write(&op));
	/* the registry */
	ck_assert_str_eq(tsr_osdmsg_name(TSR_MSG_OSD_OP), "osd op");
	ck_assert_str_eq(tsr_osdmsg_name(TSR_MSG_OSD_OP_REPLY), "osd op reply");
	ck_assert_uint_eq(TSR_MSG_OSD_OP, TSR_MSG_USER + 64 + 3);
	ck_assert_uint_eq(TSR_MSG_OSD_OP_REPLY, TSR_MSG_USER + 64 + 4);
}
END_TEST

/* Every type, valid, in a compound of its own kind, and two compounds
 * holding all the reads and all the writes. */
START_TEST(request_round_trip_every_type)
{
	static const uint16_t reads[] = {
		TSR_OBJOP_ASSERT_EXISTS, TSR_OBJOP_READ, TSR_OBJOP_STAT, TSR_OBJOP_GETXATTR,
		TSR_OBJOP_GETXATTRS, TSR_OBJOP_CMPXATTR, TSR_OBJOP_ASSERT_VERSION,
		TSR_OBJOP_OMAP_GET_KEYS, TSR_OBJOP_OMAP_GET_RANGE,
	};
	static const uint16_t writes[] = {
		TSR_OBJOP_ASSERT_VERSION, TSR_OBJOP_CMPXATTR, TSR_OBJOP_CREATE,
		TSR_OBJOP_WRITE, TSR_OBJOP_WRITE_FULL, TSR_OBJOP_APPEND, TSR_OBJOP_TRUNCATE,
		TSR_OBJOP_ZERO, TSR_OBJOP_SETXATTR, TSR_OBJOP_RMXATTR, TSR_OBJOP_OMAP_SET,
		TSR_OBJOP_OMAP_RM, TSR_OBJOP_OMAP_RM_RANGE, TSR_OBJOP_OMAP_CLEAR,
		TSR_OBJOP_REMOVE, TSR_OBJOP_ASSERT_EXISTS,
	};
	struct tsr_objop op;

	for (uint16_t t = 1; t <= 23; t++) {
		compound_for(&op, t);
		round_trip(&op);
	}
	base(&op, sizeof(reads) / sizeof(reads[0]));
	op.pool = -1;
	for (uint32_t i = 0; i < op.nops; i++)
		valid_sub(&op.ops[i], reads[i]);
	ck_assert(!tsr_objop_is_write(&op));
	round_trip(&op);
	base(&op, sizeof(writes) / sizeof(writes[0]));
	for (uint32_t i = 0; i < op.nops; i++)
		valid_sub(&op.ops[i], writes[i]);
	ck_assert(tsr_objop_is_write(&op));
	round_trip(&op);
	/* as many as allowed, and the longest oid */
	base(&op, TSR_OBJOP_MAX_OPS);
	op.oid = big;
	op.oid_len = TSR_OBJOP_MAX_OID;
	round_trip(&op);
	/* the iovecs leave out empty inputs */
	struct iovec iov[TSR_OBJOP_MAX_OPS];
	base(&op, 3);
	valid_sub(&op.ops[0], TSR_OBJOP_WRITE);
	valid_sub(&op.ops[2], TSR_OBJOP_APPEND);
	ck_assert_int_eq(tsr_objop_iov(&op, iov), 2);
	ck_assert_ptr_eq(iov[1].iov_base, op.ops[2].in);
	ck_assert_uint_eq(iov[1].iov_len, 4);
}
END_TEST

START_TEST(reply_round_trip_and_refusals)
{
	struct tsr_objop_reply r, q;
	struct tsr_enc e;
	struct iovec iov[TSR_OBJOP_MAX_OPS];
	uint8_t st[TSR_OBJOP_STAT_LEN], *b, *d;
	char err[256] = "";
	size_t len, flen;
	uint8_t *front;

	memset(&r, 0, sizeof(r));
	r.tid = 42;
	r.result = 0;
	r.map_epoch = 10;
	r.ver_epoch = 9;
	r.ver = 77;
	r.nops = 3;
	tsr_objop_stat_encode(st, 5, 6, 9, 77);
	r.ops[0] = (struct tsr_objop_reply_sub){ 0, st, sizeof(st) };
	r.ops[1] = (struct tsr_objop_reply_sub){ -ENODATA, NULL, 0 };
	r.ops[2] = (struct tsr_objop_reply_sub){ 0, (const uint8_t *)"bytes", 5 };
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_objop_reply_encode(&e, &r), 0);
	front = tsr_enc_take(&e, &flen);
	ck_assert_int_eq(tsr_objop_reply_iov(&r, iov), 2);
	d = malloc(sizeof(st) + 5);
	memcpy(d, st, sizeof(st));
	memcpy(d + sizeof(st), "bytes", 5);
	ck_assert_int_eq(tsr_objop_reply_decode(front, flen, d, sizeof(st) + 5, &q, err,
						sizeof(err)), 0);
	ck_assert_uint_eq(q.tid, 42);
	ck_assert_uint_eq(q.map_epoch, 10);
	ck_assert_uint_eq(q.ver_epoch, 9);
	ck_assert_uint_eq(q.ver, 77);
	ck_assert_uint_eq(q.nops, 3);
	ck_assert_int_eq(q.ops[1].rc, -ENODATA);
	ck_assert_uint_eq(q.ops[1].out_len, 0);
	ck_assert_uint_eq(q.ops[2].out_len, 5);
	ck_assert_mem_eq(q.ops[2].out, "bytes", 5);
	ck_assert_mem_eq(q.ops[0].out, st, sizeof(st));
	b = check_buf(front, flen, d, sizeof(st) + 5, &len);
	ck_assert_int_eq(tsr_objop_reply_check(b, len, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_osdmsg_check(TSR_MSG_OSD_OP_REPLY, b, len, err, sizeof(err)), 0);
	free(b);
	/* the outputs must add up to the data, exactly */
	ck_assert_int_eq(tsr_objop_reply_decode(front, flen, d, sizeof(st) + 4, &q, err,
						sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "op 2: output of 5 bytes past the end of the data");
	b = check_buf(front, flen, d, sizeof(st) + 5, &len);
	ck_assert_int_eq(tsr_objop_reply_decode(front, flen, b, sizeof(st) + 6, &q, err,
						sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "the outputs take 37 bytes of the data's 38");
	free(b);
	/* every cut of the front; a byte after it */
	for (size_t cut = 0; cut < flen; cut++) {
		err[0] = '\0';
		ck_assert_int_eq(tsr_objop_reply_decode(front, cut, d, sizeof(st) + 5, &q, err,
							sizeof(err)), -EBADMSG);
		ck_assert_msg(err[0] != '\0', "cut at %zu without a reason", cut);
	}
	free(d);
	free(front);
	/* an output over the bound (the front alone claims it) */
	r.nops = 1;
	r.ops[0] = (struct tsr_objop_reply_sub){ 0, NULL, TSR_OBJOP_MAX_DATA + 1 };
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_objop_reply_encode(&e, &r), 0);
	ck_assert_int_eq(tsr_objop_reply_decode(e.buf, e.len, NULL, 0, &q, err, sizeof(err)),
			 -EBADMSG);
	ck_assert_contains(err, "op 0: output of 67108865 bytes, at most");
	tsr_enc_release(&e);
	/* no sub-operation: an answer before any ran */
	memset(&r, 0, sizeof(r));
	r.tid = 1;
	r.result = -ESTALE;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_objop_reply_encode(&e, &r), 0);
	ck_assert_int_eq(tsr_objop_reply_decode(e.buf, e.len, NULL, 0, &q, err, sizeof(err)), 0);
	ck_assert_int_eq(q.result, -ESTALE);
	ck_assert_uint_eq(q.nops, 0);
	/* a byte after the envelope */
	tsr_enc_u8(&e, 0);
	ck_assert_int_eq(tsr_objop_reply_decode(e.buf, e.len, NULL, 0, &q, err, sizeof(err)),
			 -EBADMSG);
	ck_assert_contains(err, "left over after the envelope");
	/* 65 sub-operations: the count is the last u32 of the front */
	e.len--;
	e.buf[e.len - 4] = 65;
	ck_assert_int_eq(tsr_objop_reply_decode(e.buf, e.len, NULL, 0, &q, err, sizeof(err)),
			 -EBADMSG);
	ck_assert_contains(err, "65 sub-operations, at most 64");
	tsr_enc_release(&e);
	r.nops = TSR_OBJOP_MAX_OPS + 1;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_objop_reply_encode(&e, &r), -EINVAL);
	tsr_enc_release(&e);
}
END_TEST

static int
walk(const uint8_t *buf, size_t len, int kv, size_t *n, char *err, size_t errlen)
{
	struct tsr_objop_list l;
	const uint8_t *k, *v;
	size_t kl, vl;
	int rc;

	*n = 0;
	err[0] = '\0';
	if ((rc = tsr_objop_list_init(&l, buf, len, kv, err, errlen)) < 0)
		return rc;
	for (int guard = 0; guard < 100000; guard++) {
		if ((rc = tsr_objop_list_next(&l, &k, &kl, &v, &vl, err, errlen)) <= 0)
			return rc;
		(*n)++;
	}
	return -EDEADLK;        /* never reached: a walk ends */
}

START_TEST(lists)
{
	static const char *const keys[] = { "a", "ab", "b", "\xff" };
	struct tsr_objop_list l;
	const uint8_t *k, *v;
	size_t kl, vl, n, mark, len;
	struct tsr_enc e;
	char err[256];
	uint8_t *b;

	/* kv: round trip, an empty value too */
	tsr_enc_init(&e);
	mark = tsr_objop_list_begin(&e);
	ck_assert_uint_eq(mark, 0);
	for (int i = 0; i < 4; i++)
		tsr_objop_list_put(&e, keys[i], strlen(keys[i]), i == 1 ? "" : "val",
				   i == 1 ? 0 : 3);
	tsr_objop_list_end(&e, mark, 4);
	ck_assert_int_eq(tsr_enc_error(&e), 0);
	ck_assert_uint_eq(e.buf[0], 4);    /* little-endian, as tsr_enc_u32 */
	ck_assert_uint_eq(e.buf[1] | e.buf[2] | e.buf[3], 0);
	ck_assert_int_eq(tsr_objop_list_init(&l, e.buf, e.len, 1, err, sizeof(err)), 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(tsr_objop_list_next(&l, &k, &kl, &v, &vl, err, sizeof(err)), 1);
		ck_assert_uint_eq(kl, strlen(keys[i]));
		ck_assert_mem_eq(k, keys[i], kl);
		ck_assert_uint_eq(vl, i == 1 ? 0 : 3);
	}
	ck_assert_int_eq(tsr_objop_list_next(&l, &k, &kl, &v, &vl, err, sizeof(err)), 0);
	/* every cut refused */
	for (size_t cut = 0; cut < e.len; cut++)
		ck_assert_int_eq(walk(e.buf, cut, 1, &n, err, sizeof(err)), -EBADMSG);
	ck_assert_int_eq(walk(e.buf, e.len - 1, 1, &n, err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "truncated");
	/* a byte after the last key */
	tsr_enc_u8(&e, 0);
	ck_assert_int_eq(walk(e.buf, e.len, 1, &n, err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "1 bytes after the last key");
	ck_assert_uint_eq(n, 4);
	/* read as a keylist, values are keys out of order */
	ck_assert_int_eq(walk(e.buf, e.len - 1, 0, &n, err, sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);

	/* keys: round trip */
	tsr_enc_init(&e);
	mark = tsr_objop_list_begin(&e);
	for (int i = 0; i < 4; i++)
		tsr_objop_list_put(&e, keys[i], strlen(keys[i]), NULL, 0);
	tsr_objop_list_end(&e, mark, 4);
	ck_assert_int_eq(walk(e.buf, e.len, 0, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 4);
	for (size_t cut = 0; cut < e.len; cut++)
		ck_assert_int_eq(walk(e.buf, cut, 0, &n, err, sizeof(err)), -EBADMSG);
	tsr_enc_u8(&e, 'x');
	ck_assert_int_eq(walk(e.buf, e.len, 0, &n, err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "after the last key");
	tsr_enc_release(&e);

	/* out of order, and twice */
	ck_assert_int_eq(walk(keys_ba, keys_ba_len, 0, &n, err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "out of order or twice");
	ck_assert_uint_eq(n, 1);
	tsr_enc_init(&e);
	mark = tsr_objop_list_begin(&e);
	tsr_objop_list_put(&e, "k", 1, "1", 1);
	tsr_objop_list_put(&e, "k", 1, "2", 1);
	tsr_objop_list_end(&e, mark, 2);
	ck_assert_int_eq(walk(e.buf, e.len, 1, &n, err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "out of order or twice");
	/* a refusal is final */
	ck_assert_int_eq(tsr_objop_list_init(&l, e.buf, e.len, 1, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_objop_list_next(&l, &k, &kl, &v, &vl, err, sizeof(err)), 1);
	ck_assert_int_eq(tsr_objop_list_next(&l, &k, &kl, &v, &vl, err, sizeof(err)), -EBADMSG);
	ck_assert_int_eq(tsr_objop_list_next(&l, &k, &kl, &v, &vl, err, sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);

	/* an empty key; a key and a value over their bounds */
	tsr_enc_init(&e);
	mark = tsr_objop_list_begin(&e);
	tsr_objop_list_put(&e, "", 0, NULL, 0);
	tsr_objop_list_end(&e, mark, 1);
	ck_assert_int_eq(walk(e.buf, e.len, 0, &n, err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "a key of 0 bytes");
	tsr_enc_release(&e);
	tsr_enc_init(&e);
	mark = tsr_objop_list_begin(&e);
	tsr_objop_list_put(&e, big, TSR_OBJOP_MAX_NAME + 1, NULL, 0);
	tsr_objop_list_end(&e, mark, 1);
	ck_assert_int_eq(walk(e.buf, e.len, 0, &n, err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "a key of 4097 bytes");
	tsr_enc_release(&e);
	b = calloc(1, TSR_OBJOP_MAX_VALUE + 1);
	tsr_enc_init(&e);
	mark = tsr_objop_list_begin(&e);
	tsr_objop_list_put(&e, "k", 1, b, TSR_OBJOP_MAX_VALUE + 1);
	tsr_objop_list_end(&e, mark, 1);
	ck_assert_int_eq(walk(e.buf, e.len, 1, &n, err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "a value of 1048577 bytes");
	tsr_enc_release(&e);
	free(b);

	/* counts: over the bound, over the bytes at hand; none */
	tsr_enc_init(&e);
	tsr_enc_u32(&e, TSR_OBJOP_MAX_KEYS + 1);
	ck_assert_int_eq(walk(e.buf, e.len, 0, &n, err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "65537 keys");
	e.len = 0;
	tsr_enc_u32(&e, 3);
	tsr_enc_bytes(&e, "a", 1);
	ck_assert_int_eq(walk(e.buf, e.len, 0, &n, err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "3 keys in 9 bytes");
	e.len = 0;
	tsr_enc_u32(&e, 0);
	ck_assert_int_eq(walk(e.buf, e.len, 1, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(walk(e.buf, 0, 1, &n, err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "no count");
	/* a mark list_begin did not return fails the encoder */
	len = e.len;
	tsr_objop_list_end(&e, len, 1);
	ck_assert_int_eq(tsr_enc_error(&e), -EINVAL);
	tsr_enc_release(&e);
}
END_TEST

/* Every field a type does not use is refused, naming the sub-operation;
 * the same sub-operation with only its own fields is accepted. */
START_TEST(unused_fields_refused)
{
	static const uint8_t one[] = "x";
	struct tsr_objop op;
	char word[64];

	for (uint16_t t = 1; t <= 24; t++) {
		uint32_t at = t == TSR_OBJOP_PG_LIST || t == TSR_OBJOP_PG_SCRUB ? 0 : 1;
		unsigned u = spec_uses(t);

		compound_for(&op, t);
		ACCEPTED(&op);
		snprintf(word, sizeof(word), "op %u (%s): ", at, tsr_objop_name(t));
		if (!(u & T_OFF)) {
			compound_for(&op, t);
			op.ops[at].off = 1;
			REFUSED(&op, 0, -EBADMSG, word);
			REFUSED(&op, 0, -EBADMSG, "off 1, which it does not use");
		}
		if (!(u & T_LEN)) {
			compound_for(&op, t);
			op.ops[at].len = 1;
			REFUSED(&op, 0, -EBADMSG, word);
			REFUSED(&op, 0, -EBADMSG, "len 1, which it does not use");
		}
		if (!(u & T_NAME)) {
			compound_for(&op, t);
			op.ops[at].name = one;
			op.ops[at].name_len = 1;
			REFUSED(&op, 0, -EBADMSG, word);
			REFUSED(&op, 0, -EBADMSG, "a name of 1 bytes, which it does not use");
		}
		if (!(u & T_FLAGS)) {
			compound_for(&op, t);
			op.ops[at].flags = TSR_OBJOP_EXCL;
			REFUSED(&op, 0, -EBADMSG, word);
			REFUSED(&op, 0, -EBADMSG, "flags 0x1, which only create and pg-scrub "
				"take");
		}
		if (!(u & T_IN)) {
			compound_for(&op, t);
			op.ops[at].in = one;
			op.ops[at].in_len = 1;
			REFUSED(&op, 0, -EBADMSG, word);
			REFUSED(&op, 0, -EBADMSG, "1 bytes of input, which it takes none of");
		}
	}
	/* STAT with an offset, the brief's example */
	base(&op, 1);
	op.ops[0].type = TSR_OBJOP_STAT;
	op.ops[0].off = 4096;
	REFUSED(&op, 0, -EBADMSG, "op 0 (stat): off 4096, which it does not use");
	/* CREATE: only EXCL */
	base(&op, 1);
	op.ops[0].type = TSR_OBJOP_CREATE;
	op.ops[0].flags = 0x2;
	REFUSED(&op, 0, -EBADMSG, "op 0 (create): flags 0x2, only 0x1");
	op.ops[0].flags = 0;
	ACCEPTED(&op);
}
END_TEST

START_TEST(bounds_refused)
{
	struct tsr_objop op;

	/* names: over the bound, empty where one is needed */
	base(&op, 4);
	valid_sub(&op.ops[3], TSR_OBJOP_SETXATTR);
	op.ops[3].name = big;
	op.ops[3].name_len = 5000;
	REFUSED(&op, 0, -EBADMSG, "op 3 (setxattr): name of 5000 bytes, at most 4096");
	op.ops[3].name_len = TSR_OBJOP_MAX_NAME;
	ACCEPTED(&op);
	static const uint16_t named[] = { TSR_OBJOP_GETXATTR, TSR_OBJOP_SETXATTR,
					  TSR_OBJOP_RMXATTR, TSR_OBJOP_CMPXATTR,
					  TSR_OBJOP_OMAP_RM_RANGE };
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		compound_for(&op, named[i]);
		op.ops[1].name_len = 0;
		REFUSED(&op, 0, -EBADMSG, "op 1");
		REFUSED(&op, 0, -EBADMSG, "empty name");
		op.ops[1].name = big;
		op.ops[1].name_len = TSR_OBJOP_MAX_NAME + 1;
		REFUSED(&op, 0, -EBADMSG, "name of 4097 bytes, at most 4096");
	}
	/* may be empty: OMAP_GET_RANGE's start, PG_LIST's */
	compound_for(&op, TSR_OBJOP_OMAP_GET_RANGE);
	op.ops[1].name_len = 0;
	ACCEPTED(&op);
	op.ops[1].name = big;
	op.ops[1].name_len = TSR_OBJOP_MAX_NAME + 1;
	REFUSED(&op, 0, -EBADMSG, "op 1 (omap-get-range): name of 4097 bytes");
	compound_for(&op, TSR_OBJOP_PG_LIST);
	op.ops[0].name_len = 0;
	ACCEPTED(&op);
	op.ops[0].name = big;
	op.ops[0].name_len = TSR_OBJOP_MAX_OID;
	ACCEPTED(&op);
	op.ops[0].name_len = TSR_OBJOP_MAX_OID + 1;
	REFUSED(&op, 0, -EBADMSG, "op 0 (pg-list): name of 4097 bytes");

	/* READ: len 1 .. MAX_DATA, and no overflow */
	compound_for(&op, TSR_OBJOP_READ);
	op.ops[1].len = 0;
	REFUSED(&op, 0, -EBADMSG, "op 1 (read): len 0, 1 .. 67108864");
	op.ops[1].len = TSR_OBJOP_MAX_DATA + 1;
	REFUSED(&op, 0, -EBADMSG, "op 1 (read): len 67108865");
	op.ops[1].len = TSR_OBJOP_MAX_DATA;
	ACCEPTED(&op);
	op.ops[1].len = 2;
	op.ops[1].off = UINT64_MAX - 1;
	REFUSED(&op, 0, -EBADMSG, "op 1 (read): off 18446744073709551614 + len 2 overflows");
	op.ops[1].len = 1;
	ACCEPTED(&op);
	compound_for(&op, TSR_OBJOP_ZERO);
	op.ops[1].off = UINT64_MAX;
	REFUSED(&op, 0, -EBADMSG, "op 1 (zero): off 18446744073709551615 + len 10 overflows");
	compound_for(&op, TSR_OBJOP_WRITE);
	op.ops[1].off = UINT64_MAX - 4;
	REFUSED(&op, 0, -EBADMSG, "op 1 (write): off 18446744073709551611 + 5 bytes overflows");
	op.ops[1].off = UINT64_MAX - 5;
	ACCEPTED(&op);

	/* CMPXATTR: a comparison 1 .. 6 */
	compound_for(&op, TSR_OBJOP_CMPXATTR);
	op.ops[1].off = 0;
	REFUSED(&op, 0, -EBADMSG, "op 1 (cmpxattr): comparison 0, 1 .. 6");
	op.ops[1].off = 7;
	REFUSED(&op, 0, -EBADMSG, "op 1 (cmpxattr): comparison 7");
	for (op.ops[1].off = 1; op.ops[1].off <= 6; op.ops[1].off++)
		ACCEPTED(&op);

	/* at most this many keys */
	compound_for(&op, TSR_OBJOP_OMAP_GET_RANGE);
	op.ops[1].len = 0;
	REFUSED(&op, 0, -EBADMSG, "op 1 (omap-get-range): len 0, 1 .. 65536 keys");
	op.ops[1].len = TSR_OBJOP_MAX_KEYS + 1;
	REFUSED(&op, 0, -EBADMSG, "len 65537");
	op.ops[1].len = TSR_OBJOP_MAX_KEYS;
	ACCEPTED(&op);
	compound_for(&op, TSR_OBJOP_PG_LIST);
	op.ops[0].len = 0;
	REFUSED(&op, 0, -EBADMSG, "op 0 (pg-list): len 0");
	op.ops[0].len = TSR_OBJOP_MAX_KEYS + 1;
	REFUSED(&op, 0, -EBADMSG, "op 0 (pg-list): len 65537");

	/* inputs: prefix, end key, value, data (the front alone claims the
	 * long ones: the bound is checked before the data is looked at) */
	compound_for(&op, TSR_OBJOP_OMAP_GET_RANGE);
	op.ops[1].in_len = 0;
	ACCEPTED(&op);
	op.ops[1].in = big;
	op.ops[1].in_len = TSR_OBJOP_MAX_NAME + 1;
	REFUSED(&op, 0, -EBADMSG, "op 1 (omap-get-range): a prefix of 4097 bytes");
	compound_for(&op, TSR_OBJOP_OMAP_RM_RANGE);
	op.ops[1].in_len = 0;
	REFUSED(&op, 0, -EBADMSG, "op 1 (omap-rm-range): an end key of 0 bytes");
	op.ops[1].in = big;
	op.ops[1].in_len = TSR_OBJOP_MAX_NAME + 1;
	REFUSED(&op, 0, -EBADMSG, "an end key of 4097 bytes");
	op.ops[1].in_len = TSR_OBJOP_MAX_NAME;
	ACCEPTED(&op);
	static const uint16_t valued[] = { TSR_OBJOP_SETXATTR, TSR_OBJOP_CMPXATTR };
	for (size_t i = 0; i < 2; i++) {
		compound_for(&op, valued[i]);
		op.ops[1].in = NULL;
		op.ops[1].in_len = TSR_OBJOP_MAX_VALUE + 1;
		REFUSED(&op, 0, -EBADMSG,
			"a value of 1048577 bytes, at most 1048576");
		op.ops[1].in_len = 0;   /* an empty value is one */
		ACCEPTED(&op);
	}
	static const uint16_t data[] = { TSR_OBJOP_WRITE, TSR_OBJOP_WRITE_FULL,
					 TSR_OBJOP_APPEND, TSR_OBJOP_OMAP_SET };
	for (size_t i = 0; i < 4; i++) {
		compound_for(&op, data[i]);
		op.ops[1].in = NULL;
		op.ops[1].in_len = TSR_OBJOP_MAX_DATA + 1;
		REFUSED(&op, 0, -EBADMSG,
			"input of 67108865 bytes, at most 67108864");
	}
}
END_TEST

START_TEST(lists_in_requests)
{
	struct tsr_objop op;
	uint8_t cut[64];

	compound_for(&op, TSR_OBJOP_OMAP_GET_KEYS);
	op.ops[1].in = keys_ba;
	op.ops[1].in_len = keys_ba_len;
	REFUSED(&op, 0, -EBADMSG, "op 1 (omap-get-keys): list: a key out of order");
	compound_for(&op, TSR_OBJOP_OMAP_RM);
	op.ops[1].in_len = 0;
	REFUSED(&op, 0, -EBADMSG, "op 1 (omap-rm): list: 0 bytes, no count");
	op.ops[1].in_len = keys_ab_len - 1;
	REFUSED(&op, 0, -EBADMSG, "op 1 (omap-rm): list: truncated");
	memcpy(cut, keys_ab, keys_ab_len);
	cut[keys_ab_len] = 0;
	op.ops[1].in = cut;
	op.ops[1].in_len = keys_ab_len + 1;
	REFUSED(&op, 0, -EBADMSG, "op 1 (omap-rm): list: 1 bytes after the last key");
	/* a keylist is no kvlist, nor the other way round */
	compound_for(&op, TSR_OBJOP_OMAP_SET);
	op.ops[1].in = keys_ab;
	op.ops[1].in_len = keys_ab_len;
	REFUSED(&op, 0, -EBADMSG, "op 1 (omap-set): list:");
	compound_for(&op, TSR_OBJOP_OMAP_RM);
	op.ops[1].in = kv_ab;
	op.ops[1].in_len = kv_ab_len;
	REFUSED(&op, 0, -EBADMSG, "op 1 (omap-rm): list:");
}
END_TEST

START_TEST(compound_refused)
{
	struct tsr_objop op;

	/* a write may not return data: every read type, in a write */
	for (uint16_t t = 1; t <= 24; t++) {
		if (!tsr_objop_reads(t) || t == TSR_OBJOP_PG_LIST || t == TSR_OBJOP_PG_SCRUB)
			continue;
		base(&op, 3);
		valid_sub(&op.ops[0], TSR_OBJOP_WRITE_FULL);
		valid_sub(&op.ops[2], t);
		char word[64];
		snprintf(word, sizeof(word), "op 2 (%s): returns data, in a write",
			 tsr_objop_name(t));
		REFUSED(&op, 0, -EINVAL, word);
	}
	base(&op, 2);
	valid_sub(&op.ops[0], TSR_OBJOP_READ);
	valid_sub(&op.ops[1], TSR_OBJOP_REMOVE);
	REFUSED(&op, 0, -EINVAL, "op 0 (read): returns data, in a write");
	/* guards are fine in a write */
	base(&op, 4);
	valid_sub(&op.ops[0], TSR_OBJOP_CMPXATTR);
	valid_sub(&op.ops[1], TSR_OBJOP_ASSERT_VERSION);
	valid_sub(&op.ops[2], TSR_OBJOP_CREATE);
	valid_sub(&op.ops[3], TSR_OBJOP_WRITE);
	ACCEPTED(&op);

	/* PG_LIST: alone, with no object */
	compound_for(&op, TSR_OBJOP_PG_LIST);
	op.oid = (const uint8_t *)"obj";
	op.oid_len = 3;
	REFUSED(&op, 0, -EBADMSG, "pg-list with an oid of 3 bytes");
	base(&op, 2);
	valid_sub(&op.ops[1], TSR_OBJOP_PG_LIST);
	REFUSED(&op, 0, -EBADMSG, "op 1 (pg-list): must be the only sub-operation");
	op.oid_len = 0;
	REFUSED(&op, 0, -EBADMSG, "op 1 (pg-list): must be the only sub-operation");
	base(&op, 2);
	valid_sub(&op.ops[0], TSR_OBJOP_PG_LIST);
	op.oid_len = 0;
	REFUSED(&op, 0, -EBADMSG, "op 0 (pg-list): must be the only sub-operation");

	/* PG_SCRUB: alone, with no object, with its two flags only */
	compound_for(&op, TSR_OBJOP_PG_SCRUB);
	ACCEPTED(&op);
	op.oid = (const uint8_t *)"obj";
	op.oid_len = 3;
	REFUSED(&op, 0, -EBADMSG, "pg-scrub with an oid of 3 bytes");
	compound_for(&op, TSR_OBJOP_PG_SCRUB);
	op.ops[0].flags = 0x4;
	REFUSED(&op, 0, -EBADMSG, "op 0 (pg-scrub): flags 0x4, only 0x1 (deep) and 0x2 "
		"(repair) are defined");
	base(&op, 2);
	valid_sub(&op.ops[1], TSR_OBJOP_PG_SCRUB);
	REFUSED(&op, 0, -EBADMSG, "op 1 (pg-scrub): must be the only sub-operation");

	/* the oid */
	base(&op, 1);
	op.oid_len = 0;
	REFUSED(&op, 0, -EBADMSG, "empty oid");
	op.oid = big;
	op.oid_len = TSR_OBJOP_MAX_OID + 1;
	REFUSED(&op, 0, -EBADMSG, "oid of 4097 bytes, at most 4096");
	op.oid = (const uint8_t *)"\0osd";
	op.oid_len = 4;
	REFUSED(&op, 0, -EBADMSG, "oid starts with a zero byte");

	/* request flags, the count */
	base(&op, 1);
	op.flags = 4;
	REFUSED(&op, 0, -EBADMSG, "flags 0x4, none is defined");
	base(&op, 0);
	REFUSED(&op, 0, -EBADMSG, "0 sub-operations, 1 .. 64");

	/* unknown types */
	base(&op, 3);
	op.ops[2].type = 0;
	REFUSED(&op, 0, -EBADMSG, "op 2: unknown type 0");
	op.ops[2].type = 25;
	REFUSED(&op, 0, -EBADMSG, "op 2: unknown type 25");
	op.ops[2].type = 0xffff;
	REFUSED(&op, 0, -EBADMSG, "op 2: unknown type 65535");

	/* the inputs add up to the data, exactly */
	base(&op, 3);
	valid_sub(&op.ops[0], TSR_OBJOP_WRITE);
	valid_sub(&op.ops[2], TSR_OBJOP_SETXATTR);
	ACCEPTED(&op);
	REFUSED(&op, 1, -EBADMSG, "the inputs take 7 bytes of the data's 8");
	REFUSED(&op, -1, -EBADMSG, "op 2 (setxattr): input of 2 bytes past the end of the data");
	REFUSED(&op, -7, -EBADMSG, "op 0 (write): input of 5 bytes past the end of the data");
	base(&op, 1);
	REFUSED(&op, 3, -EBADMSG, "the inputs take 0 bytes of the data's 3");
}
END_TEST

/* What tsr_objop_encode cannot produce: other envelopes, more than 64
 * sub-operations, bytes left over; and every cut of a front. */
START_TEST(front_refused)
{
	struct tsr_objop op, out;
	struct wire w;
	char err[256];
	uint8_t *f;
	size_t nops_at;

	base(&op, 2);
	valid_sub(&op.ops[1], TSR_OBJOP_WRITE);
	wire_of(&op, &w);
	/* the layout the header draws: 6 bytes of envelope, 40 of ids, the
	 * oid, the count, then 28 bytes and a name per sub-operation */
	nops_at = 6 + 40 + 4 + op.oid_len;
	ck_assert_uint_eq(w.flen, nops_at + 4 + 2 * 28);
	ck_assert_uint_eq(w.front[nops_at], 2);
	ck_assert_uint_eq(w.front[nops_at + 4], TSR_OBJOP_ASSERT_EXISTS);
	ck_assert_int_eq(tsr_objop_decode(w.front, w.flen, w.data, w.dlen, &out, err,
					  sizeof(err)), 0);
	/* every cut of the front, with a reason */
	for (size_t cut = 0; cut < w.flen; cut++) {
		err[0] = '\0';
		ck_assert_int_eq(tsr_objop_decode(w.front, cut, w.data, w.dlen, &out, err,
						  sizeof(err)), -EBADMSG);
		ck_assert_msg(err[0] != '\0', "cut at %zu without a reason", cut);
	}
	/* a refused decode leaves nothing behind but who asked, once that
	 * decoded (the refusal is answered to it): a cut envelope decodes
	 * nothing */
	ck_assert_uint_eq(out.nops, 0);
	ck_assert_ptr_null(out.oid);
	ck_assert_uint_eq(out.client, 0);
	ck_assert_uint_eq(out.tid, 0);
	ck_assert_int_eq(tsr_objop_decode(w.front, w.flen, w.data, w.dlen + 1, &out, err,
					  sizeof(err)), -EBADMSG);
	ck_assert_uint_eq(out.client, op.client);
	ck_assert_uint_eq(out.tid, 42);
	ck_assert_uint_eq(out.nops, 0);
	ck_assert_uint_eq(out.map_epoch, 0);
	ck_assert_ptr_null(out.oid);

	f = malloc(w.flen + 1);
	memcpy(f, w.front, w.flen);
	/* 65 sub-operations */
	f[nops_at] = 65;
	ck_assert_int_eq(tsr_objop_decode(f, w.flen, w.data, w.dlen, &out, err, sizeof(err)),
			 -EBADMSG);
	ck_assert_contains(err, "65 sub-operations, 1 .. 64");
	f[nops_at] = 2;
	/* envelopes: a newer compat, a compat above its version */
	f[0] = 2;
	f[1] = 2;
	ck_assert_int_eq(tsr_objop_decode(f, w.flen, w.data, w.dlen, &out, err, sizeof(err)),
			 -EBADMSG);
	ck_assert_contains(err, "bad envelope (a newer encoding)");
	f[0] = 1;
	ck_assert_int_eq(tsr_objop_decode(f, w.flen, w.data, w.dlen, &out, err, sizeof(err)),
			 -EBADMSG);
	ck_assert_contains(err, "bad envelope");
	f[1] = 1;
	/* a byte after the envelope */
	f[w.flen] = 0;
	ck_assert_int_eq(tsr_objop_decode(f, w.flen + 1, w.data, w.dlen, &out, err,
					  sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "1 bytes left over after the envelope");
	/* a byte inside a version 1 envelope: left over; in a version 2 one,
	 * a newer writer's field, skipped */
	f[2]++;
	ck_assert_int_eq(tsr_objop_decode(f, w.flen + 1, w.data, w.dlen, &out, err,
					  sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "1 bytes left over after the sub-operations");
	f[0] = 2;
	ck_assert_int_eq(tsr_objop_decode(f, w.flen + 1, w.data, w.dlen, &out, err,
					  sizeof(err)), 0);
	assert_same(&op, &out);
	/* an envelope of the ids alone: truncated, answered to them */
	memcpy(f, w.front, w.flen);
	f[2] = 16;
	f[3] = f[4] = f[5] = 0;
	ck_assert_int_eq(tsr_objop_decode(f, 6 + 16, w.data, w.dlen, &out, err, sizeof(err)),
			 -EBADMSG);
	ck_assert_contains(err, "truncated before its sub-operations");
	ck_assert_uint_eq(out.client, op.client);
	ck_assert_uint_eq(out.tid, 42);
	/* data at NULL */
	ck_assert_int_eq(tsr_objop_decode(w.front, w.flen, NULL, w.dlen, &out, err,
					  sizeof(err)), -EBADMSG);
	free(f);
	wire_free(&w);
	/* the encoder refuses more than it can describe */
	struct tsr_enc e;
	base(&op, 1);
	op.nops = TSR_OBJOP_MAX_OPS + 1;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_objop_encode(&e, &op), -EINVAL);
	ck_assert_uint_eq(e.len, 0);
	tsr_enc_release(&e);
}
END_TEST

START_TEST(stat_output)
{
	uint8_t b[TSR_OBJOP_STAT_LEN + 1];
	uint64_t size, mtime, ve, v;

	tsr_objop_stat_encode(b, 0x0102030405060708ull, 2, 3, UINT64_MAX);
	ck_assert_uint_eq(b[0], 0x08);      /* little-endian */
	ck_assert_uint_eq(b[7], 0x01);
	ck_assert_uint_eq(b[8], 2);
	ck_assert_int_eq(tsr_objop_stat_decode(b, TSR_OBJOP_STAT_LEN, &size, &mtime, &ve, &v), 0);
	ck_assert_uint_eq(size, 0x0102030405060708ull);
	ck_assert_uint_eq(mtime, 2);
	ck_assert_uint_eq(ve, 3);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(tsr_objop_stat_decode(b, TSR_OBJOP_STAT_LEN - 1, &size, &mtime, &ve,
					       &v), -EBADMSG);
	ck_assert_int_eq(tsr_objop_stat_decode(b, TSR_OBJOP_STAT_LEN + 1, &size, &mtime, &ve,
					       &v), -EBADMSG);
}
END_TEST

START_TEST(checks)
{
	static const uint8_t garbage[] = { 0x20, 0, 0, 0, 1, 1, 0xff, 0xff, 0xff, 0x7f, 'x' };
	struct tsr_objop op;
	struct wire w;
	char err[256];
	uint8_t *b;
	size_t len;

	base(&op, 2);
	valid_sub(&op.ops[1], TSR_OBJOP_WRITE);
	wire_of(&op, &w);
	b = check_buf(w.front, w.flen, w.data, w.dlen, &len);
	ck_assert_int_eq(tsr_objop_check(b, len, err, sizeof(err)), 0);
	/* a request is no reply, and the other way round */
	err[0] = '\0';
	ck_assert_int_eq(tsr_objop_reply_check(b, len, err, sizeof(err)), -EBADMSG);
	ck_assert(err[0] != '\0');
	free(b);
	wire_free(&w);
	ck_assert_int_eq(tsr_objop_check(garbage, sizeof(garbage), err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "osd op: a front of 32 bytes in 7");
	ck_assert_int_eq(tsr_objop_check(garbage + 4, sizeof(garbage) - 4, err, sizeof(err)),
			 -EBADMSG);
	ck_assert_int_eq(tsr_objop_check(garbage, 3, err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "no front length");
	ck_assert_int_eq(tsr_objop_check(NULL, 0, err, sizeof(err)), -EBADMSG);
	ck_assert_int_eq(tsr_objop_reply_check(garbage, sizeof(garbage), err, sizeof(err)),
			 -EBADMSG);
	ck_assert_contains(err, "osd op reply:");
	ck_assert_int_eq(tsr_osdmsg_check(TSR_MSG_OSD_OP, garbage, sizeof(garbage), err,
					  sizeof(err)), -EBADMSG);
	ck_assert_int_eq(tsr_osdmsg_check(TSR_MSG_OSD_OP_REPLY, garbage, sizeof(garbage), err,
					  sizeof(err)), -EBADMSG);
	/* a write that returns data decodes to -EINVAL: no request, for check */
	base(&op, 2);
	valid_sub(&op.ops[0], TSR_OBJOP_READ);
	valid_sub(&op.ops[1], TSR_OBJOP_TRUNCATE);
	wire_of(&op, &w);
	b = check_buf(w.front, w.flen, w.data, w.dlen, &len);
	ck_assert_int_eq(tsr_objop_check(b, len, err, sizeof(err)), -EBADMSG);
	ck_assert_contains(err, "returns data");
	free(b);
	wire_free(&w);
}
END_TEST

/* Every prefix and every single-byte mutation of a valid request and
 * reply, then random ones: refused with a reason or round-tripped, never
 * a crash or a round trip that differs.  Bounded in count and in time. */
static void
mutate_all(uint8_t *buf, size_t len, int reply, uint64_t *seed, time_t deadline)
{
	static const uint8_t vals[] = { 0x00, 0x01, 0x7f, 0x80, 0xff };
	int (*check)(const void *, size_t, char *, size_t) =
		reply ? tsr_objop_reply_check : tsr_objop_check;
	char err[256];
	int rc;

	for (size_t cut = 0; cut < len; cut++) {
		err[0] = '\0';
		rc = check(buf, cut, err, sizeof(err));
		ck_assert_msg(rc == -EBADMSG && err[0], "prefix %zu: %d \"%s\"", cut, rc, err);
	}
	for (size_t i = 0; i < len; i++) {
		uint8_t keep = buf[i];

		for (size_t v = 0; v < sizeof(vals) + 1; v++) {
			buf[i] = v < sizeof(vals) ? vals[v] : (uint8_t)(keep ^ 0x10);
			err[0] = '\0';
			rc = check(buf, len, err, sizeof(err));
			ck_assert_msg(rc == 0 || (rc == -EBADMSG && err[0]),
				      "byte %zu = 0x%02x: %d \"%s\"", i, buf[i], rc, err);
		}
		buf[i] = keep;
	}
	uint8_t *copy = malloc(len);
	for (int round = 0; round < 20000 && time(NULL) < deadline; round++) {
		memcpy(copy, buf, len);
		for (int k = 1 + (int)(tu_rnd(seed) % 4); k > 0; k--)
			copy[tu_rnd(seed) % len] = (uint8_t)tu_rnd(seed);
		err[0] = '\0';
		rc = check(copy, len, err, sizeof(err));
		ck_assert_msg(rc == 0 || (rc == -EBADMSG && err[0]), "round %d: %d \"%s\"",
			      round, rc, err);
	}
	free(copy);
}

START_TEST(cuts_and_mutations)
{
	static const uint16_t types[] = { TSR_OBJOP_CMPXATTR, TSR_OBJOP_WRITE,
					  TSR_OBJOP_OMAP_SET, TSR_OBJOP_OMAP_RM,
					  TSR_OBJOP_OMAP_RM_RANGE, TSR_OBJOP_CREATE };
	time_t deadline = time(NULL) + 20;
	struct tsr_objop_reply r;
	struct tsr_objop op;
	struct tsr_enc e;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	struct wire w;
	uint8_t *b, *front;
	size_t len, flen;

	base(&op, sizeof(types) / sizeof(types[0]));
	for (uint32_t i = 0; i < op.nops; i++)
		valid_sub(&op.ops[i], types[i]);
	wire_of(&op, &w);
	b = check_buf(w.front, w.flen, w.data, w.dlen, &len);
	mutate_all(b, len, 0, &seed, deadline);
	free(b);
	wire_free(&w);
	compound_for(&op, TSR_OBJOP_PG_LIST);
	wire_of(&op, &w);
	b = check_buf(w.front, w.flen, w.data, w.dlen, &len);
	mutate_all(b, len, 0, &seed, deadline);
	free(b);
	wire_free(&w);

	memset(&r, 0, sizeof(r));
	r.tid = 5;
	r.nops = 2;
	r.ops[0] = (struct tsr_objop_reply_sub){ 0, (const uint8_t *)"abc", 3 };
	r.ops[1] = (struct tsr_objop_reply_sub){ -ENOENT, NULL, 0 };
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_objop_reply_encode(&e, &r), 0);
	front = tsr_enc_take(&e, &flen);
	b = check_buf(front, flen, (const uint8_t *)"abc", 3, &len);
	ck_assert_int_eq(tsr_objop_reply_check(b, len, NULL, 0), 0);
	mutate_all(b, len, 1, &seed, deadline);
	free(b);
	free(front);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("objop");
	TCase *tc = tcase_create("objop");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, lists_setup, lists_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, names_and_kinds);
	tcase_add_test(tc, request_round_trip_every_type);
	tcase_add_test(tc, reply_round_trip_and_refusals);
	tcase_add_test(tc, lists);
	tcase_add_test(tc, unused_fields_refused);
	tcase_add_test(tc, bounds_refused);
	tcase_add_test(tc, lists_in_requests);
	tcase_add_test(tc, compound_refused);
	tcase_add_test(tc, front_refused);
	tcase_add_test(tc, stat_output);
	tcase_add_test(tc, checks);
	tcase_add_test(tc, cuts_and_mutations);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
