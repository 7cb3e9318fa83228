/* test_txn.c — serialized backend transactions: round trip of every op,
 * validation errors, and hostile input (every truncation, random
 * corruption, count bombs). */
#include <tessera/txn.h>

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static char err[512];

#define CID { .pool = 7, .pg = 42, .shard = TSR_SHARD_NONE }

/* One op of every type, with every field it uses set. */
static const struct tsr_txn_op all_ops[] = {
	{ .type = TSR_TXN_MKCOLL, .cid = CID },
	{ .type = TSR_TXN_TOUCH, .cid = CID, .oid = "obj", .oid_len = 3 },
	{ .type = TSR_TXN_WRITE, .cid = CID, .oid = "obj", .oid_len = 3, .off = 4096,
	  .len = 5, .data = "hello" },
	{ .type = TSR_TXN_ZERO, .cid = CID, .oid = "obj", .oid_len = 3, .off = 1, .len = 2 },
	{ .type = TSR_TXN_TRUNCATE, .cid = CID, .oid = "obj", .oid_len = 3, .off = 9000 },
	{ .type = TSR_TXN_CLONE, .cid = CID, .oid = "obj", .oid_len = 3, .oid2 = "copy",
	  .oid2_len = 4 },
	{ .type = TSR_TXN_CLONE_RANGE, .cid = CID, .oid = "obj", .oid_len = 3, .off = 0,
	  .len = 100, .oid2 = "copy", .oid2_len = 4, .off2 = 50 },
	{ .type = TSR_TXN_SETATTR, .cid = CID, .oid = "obj", .oid_len = 3, .key = "_",
	  .key_len = 1, .val = "v\0v", .val_len = 3 },
	{ .type = TSR_TXN_RMATTR, .cid = CID, .oid = "obj", .oid_len = 3, .key = "_",
	  .key_len = 1 },
	{ .type = TSR_TXN_OMAP_SET, .cid = CID, .oid = "obj", .oid_len = 3, .key = "k1",
	  .key_len = 2, .val = "x", .val_len = 1 },
	{ .type = TSR_TXN_OMAP_RM, .cid = CID, .oid = "obj", .oid_len = 3, .key = "k1",
	  .key_len = 2 },
	{ .type = TSR_TXN_OMAP_CLEAR, .cid = CID, .oid = "obj", .oid_len = 3 },
	{ .type = TSR_TXN_OMAP_RMRANGE, .cid = CID, .oid = "obj", .oid_len = 3,
	  .key = "a", .key_len = 1, .val = "m", .val_len = 1 },
	{ .type = TSR_TXN_REMOVE, .cid = CID, .oid = "copy", .oid_len = 4 },
	{ .type = TSR_TXN_RMCOLL, .cid = { .pool = 7, .pg = 43, .shard = 2 } },
};
#define NALL (sizeof(all_ops) / sizeof(all_ops[0]))

static uint8_t *
encode_all(size_t *len)
{
	struct tsr_txn t = { .nops = NALL, .ops = all_ops };
	struct tsr_enc e;

	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_txn_encode(&t, &e, err, sizeof(err)), 0);
	return tsr_enc_take(&e, len);
}

static void
same_bytes(const void *a, size_t al, const void *b, size_t bl)
{
	ck_assert_uint_eq(al, bl);
	ck_assert(al == 0 || memcmp(a, b, al) == 0);
}

START_TEST(round_trip_every_op)
{
	size_t len;
	uint8_t *buf = encode_all(&len);
	struct tsr_dec d;
	struct tsr_txn t;

	tsr_dec_init(&d, buf, len);
	ck_assert_int_eq(tsr_txn_decode(&d, &t, err, sizeof(err)), 0);
	ck_assert_uint_eq(tsr_dec_remaining(&d), 0);
	ck_assert_uint_eq(t.nops, NALL);
	for (size_t i = 0; i < NALL; i++) {
		const struct tsr_txn_op *a = &all_ops[i], *b = &t.ops[i];
		ck_assert_uint_eq(a->type, b->type);
		ck_assert_uint_eq(a->cid.pool, b->cid.pool);
		ck_assert_uint_eq(a->cid.pg, b->cid.pg);
		ck_assert_int_eq(a->cid.shard, b->cid.shard);
		same_bytes(a->oid, a->oid_len, b->oid, b->oid_len);
		ck_assert_uint_eq(a->off, b->off);
		ck_assert_uint_eq(a->len, b->len);
		if (a->type == TSR_TXN_WRITE)
			same_bytes(a->data, a->len, b->data, b->len);
		else
			ck_assert_ptr_null(b->data);
		same_bytes(a->key, a->key_len, b->key, b->key_len);
		same_bytes(a->val, a->val_len, b->val, b->val_len);
		same_bytes(a->oid2, a->oid2_len, b->oid2, b->oid2_len);
		ck_assert_uint_eq(a->off2, b->off2);
		/* borrowed: the decoded names point into the buffer */
		if (b->oid_len)
			ck_assert((const uint8_t *)b->oid >= buf &&
				  (const uint8_t *)b->oid < buf + len);
	}
	tsr_txn_decoded_free(&t);
	/* re-encoding the decoded transaction gives the same bytes */
	struct tsr_enc e;
	size_t len2;
	tsr_dec_init(&d, buf, len);
	ck_assert_int_eq(tsr_txn_decode(&d, &t, err, sizeof(err)), 0);
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_txn_encode(&t, &e, err, sizeof(err)), 0);
	uint8_t *buf2 = tsr_enc_take(&e, &len2);
	same_bytes(buf, len, buf2, len2);
	tsr_txn_decoded_free(&t);
	free(buf2);
	free(buf);
}
END_TEST

static const struct {
	struct tsr_txn_op op;
	int rc;
	const char *reason;
} bad_ops[] = {
	{ { .type = 99, .oid = "o", .oid_len = 1 }, -EOPNOTSUPP, "op 0: unknown type 99" },
	{ { .type = TSR_TXN_TOUCH, .flags = 2, .oid = "o", .oid_len = 1 }, -EOPNOTSUPP,
	  "op 0 (touch): unknown flags or reserved words set" },
	{ { .type = TSR_TXN_TOUCH, .flags = TSR_TXN_F_DATA_HELD, .oid = "o", .oid_len = 1 },
	  -EINVAL, "op 0 (touch): data-held flag on an op without data" },
	{ { .type = TSR_TXN_TOUCH, .oid = "o", .oid_len = 1, .reserved = { 0, 5 } },
	  -EOPNOTSUPP, "op 0 (touch): unknown flags or reserved words set" },
	{ { .type = TSR_TXN_TOUCH }, -EINVAL, "op 0 (touch): empty object name" },
	{ { .type = TSR_TXN_MKCOLL, .oid = "o", .oid_len = 1 }, -EINVAL,
	  "op 0 (mkcoll): a collection op names no object" },
	{ { .type = TSR_TXN_WRITE, .oid = "o", .oid_len = 1, .len = 3 }, -EINVAL,
	  "op 0 (write): no data" },
	{ { .type = TSR_TXN_WRITE, .oid = "o", .oid_len = 1, .len = (64u << 20) + 1,
	    .data = "" }, -E2BIG, "op 0 (write): 67108865 bytes, more than 67108864 in one write" },
	{ { .type = TSR_TXN_ZERO, .oid = "o", .oid_len = 1, .off = UINT64_MAX, .len = 2 },
	  -EOVERFLOW, "op 0 (zero): offset + length overflows" },
	{ { .type = TSR_TXN_SETATTR, .oid = "o", .oid_len = 1, .val = "v", .val_len = 1 },
	  -EINVAL, "op 0 (setattr): empty attribute name" },
	{ { .type = TSR_TXN_CLONE, .oid = "o", .oid_len = 1 }, -EINVAL,
	  "op 0 (clone): no destination object" },
	{ { .type = TSR_TXN_CLONE_RANGE, .oid = "o", .oid_len = 1, .oid2 = "p", .oid2_len = 1,
	    .off2 = UINT64_MAX, .len = 1 }, -EOVERFLOW,
	  "op 0 (clone_range): offset + length overflows" },
	{ { .type = TSR_TXN_TOUCH, .oid_len = 4 }, -EINVAL,
	  "op 0 (touch): a length without its buffer" },
	{ { .type = TSR_TXN_TOUCH, .oid = "o", .oid_len = 4097 }, -ENAMETOOLONG,
	  "op 0 (touch): a name or key longer than 4096 bytes" },
	{ { .type = TSR_TXN_OMAP_SET, .oid = "o", .oid_len = 1, .key = "k", .key_len = 1,
	    .val = "", .val_len = (1u << 20) + 1 }, -E2BIG,
	  "op 0 (omap_set): a value longer than 1048576 bytes" },
};

START_TEST(invalid_op_refused)
{
	struct tsr_txn t = { .nops = 1, .ops = &bad_ops[_i].op };
	struct tsr_enc e;

	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_txn_encode(&t, &e, err, sizeof(err)), bad_ops[_i].rc);
	ck_assert_str_eq(err, bad_ops[_i].reason);
	ck_assert_uint_eq(e.len, 0); /* nothing written for a refused txn */
	tsr_enc_release(&e);
}
END_TEST

START_TEST(every_truncation_fails)
{
	size_t len;
	uint8_t *buf = encode_all(&len);

	for (size_t n = 0; n < len; n++) {
		uint8_t *copy = malloc(n ? n : 1);
		struct tsr_dec d;
		struct tsr_txn t;
		memcpy(copy, buf, n);
		tsr_dec_init(&d, copy, n);
		ck_assert_int_lt(tsr_txn_decode(&d, &t, err, sizeof(err)), 0);
		ck_assert_ptr_null(t.ops);
		free(copy);
	}
	free(buf);
}
END_TEST

START_TEST(corruption_never_crashes)
{
	size_t len;
	uint8_t *buf = encode_all(&len);
	uint64_t s = 0x9e3779b97f4a7c15ull;
	int decoded = 0;

	for (int iter = 0; iter < 20000; iter++) {
		uint8_t *copy = malloc(len);
		memcpy(copy, buf, len);
		for (int k = 0; k < 1 + iter % 4; k++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			copy[s % len] ^= (uint8_t)(s >> 32) | 1;
		}
		struct tsr_dec d;
		struct tsr_txn t;
		tsr_dec_init(&d, copy, len);
		if (tsr_txn_decode(&d, &t, err, sizeof(err)) == 0) {
			/* whatever decodes is valid */
			ck_assert_int_eq(tsr_txn_validate(&t, err, sizeof(err)), 0);
			tsr_txn_decoded_free(&t);
			decoded++;
		} else {
			ck_assert(err[0] != '\0');
		}
		free(copy);
	}
	ck_assert_int_lt(decoded, 20000);
	free(buf);
}
END_TEST

START_TEST(count_bomb_refused)
{
	struct tsr_enc e;
	struct tsr_dec d;
	struct tsr_txn t;
	size_t len;

	/* an envelope claiming 65536 ops in 8 bytes: refused before any
	 * allocation proportional to the claim */
	tsr_enc_init(&e);
	size_t mark = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u32(&e, 65536);
	tsr_enc_u32(&e, 0);
	tsr_enc_end_struct(&e, mark);
	uint8_t *buf = tsr_enc_take(&e, &len);
	tsr_dec_init(&d, buf, len);
	ck_assert_int_eq(tsr_txn_decode(&d, &t, err, sizeof(err)), -EBADMSG);
	ck_assert_str_eq(err, "transaction claims 65536 ops, more than its 4 bytes can hold");
	free(buf);

	/* a write whose data length disagrees with its len */
	static const struct tsr_txn_op w = { .type = TSR_TXN_WRITE, .oid = "o", .oid_len = 1,
					     .len = 2, .data = "ab" };
	struct tsr_txn one = { .nops = 1, .ops = &w };
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_txn_encode(&one, &e, err, sizeof(err)), 0);
	buf = tsr_enc_take(&e, &len);
	/* len is the u64 after the header (6), nops, type, flags, pool, pg,
	 * shard, oid (4+1), off: offset 6+4+4+4+8+4+4+5+8 = 47 */
	buf[47] = 3;
	tsr_dec_init(&d, buf, len);
	ck_assert_int_eq(tsr_txn_decode(&d, &t, err, sizeof(err)), -EBADMSG);
	ck_assert_str_eq(err, "op 0: 2 bytes of data for a write of 3");
	free(buf);
}
END_TEST

/* The held flag describes the caller's memory: encoding drops it, and a
 * serialized transaction that carries any flag is refused (a peer must not
 * make a replica promise to keep a buffer it frees). */
START_TEST(held_flag_never_serialized)
{
	static const struct tsr_txn_op w = { .type = TSR_TXN_WRITE,
		.flags = TSR_TXN_F_DATA_HELD, .oid = "o", .oid_len = 1, .len = 2,
		.data = "ab" };
	struct tsr_txn one = { .nops = 1, .ops = &w }, t;
	struct tsr_enc e;
	struct tsr_dec d;
	size_t len;
	uint8_t *buf;

	ck_assert_int_eq(tsr_txn_validate(&one, err, sizeof(err)), 0);
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_txn_encode(&one, &e, err, sizeof(err)), 0);
	buf = tsr_enc_take(&e, &len);
	tsr_dec_init(&d, buf, len);
	ck_assert_int_eq(tsr_txn_decode(&d, &t, err, sizeof(err)), 0);
	ck_assert_uint_eq(t.ops[0].flags, 0);
	tsr_txn_decoded_free(&t);
	/* flags are the u32 after the header (6), nops (4), type (4) */
	buf[14] = TSR_TXN_F_DATA_HELD;
	tsr_dec_init(&d, buf, len);
	ck_assert_int_eq(tsr_txn_decode(&d, &t, err, sizeof(err)), -EBADMSG);
	ck_assert_str_eq(err, "op 0: flags 0x1 set in a serialized transaction");
	free(buf);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("txn");
	TCase *tc = tcase_create("txn");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, round_trip_every_op);
	tcase_add_loop_test(tc, invalid_op_refused, 0,
			    (int)(sizeof(bad_ops) / sizeof(bad_ops[0])));
	tcase_add_test(tc, every_truncation_fails);
	tcase_add_test(tc, corruption_never_crashes);
	tcase_add_test(tc, count_bomb_refused);
	tcase_add_test(tc, held_flag_never_serialized);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
