/* test_encoding.c — codec round trips, LE layout, envelopes, hostile input. */
#include <tessera/encoding.h>

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* xorshift64*: fixed-seed, libc-independent, so failures reproduce. */
static uint64_t rng_state;

static uint64_t
rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

/* An exactly-sized heap copy (one byte for n == 0, as malloc(0) may return
 * NULL), so ASan flags any read past the end of the input. */
static uint8_t *
dup_exact(const uint8_t *src, size_t n)
{
	uint8_t *p = malloc(n != 0 ? n : 1);

	ck_assert_ptr_nonnull(p);
	if (n != 0)
		memcpy(p, src, n);
	return p;
}

static uint64_t
dbits(double v)
{
	uint64_t b;

	memcpy(&b, &v, sizeof(b));
	return b;
}

static double
bitsd(uint64_t b)
{
	double v;

	memcpy(&v, &b, sizeof(v));
	return v;
}

/* Take the encoder's buffer, asserting it succeeded. */
static uint8_t *
take_ok(struct tsr_enc *e, size_t *len)
{
	uint8_t *buf;

	ck_assert_int_eq(tsr_enc_error(e), 0);
	buf = tsr_enc_take(e, len);
	ck_assert_ptr_nonnull(buf);
	return buf;
}

/* ---- A multi-field message used by the hostile-input tests ------------ */

#define SAMPLE_MAGIC 0x54535231u
#define SAMPLE_TRAILER 0xDEADBEEFu
static const uint8_t sample_blob[] = { 1, 0, 2, 0xFF, 0 };

static uint8_t *
sample_encode(size_t *len)
{
	struct tsr_enc e;
	size_t outer, inner;

	tsr_enc_init(&e);
	tsr_enc_u32(&e, SAMPLE_MAGIC);
	outer = tsr_enc_begin_struct(&e, 2, 1);
	tsr_enc_u64(&e, 0x0123456789ABCDEFull);
	tsr_enc_str(&e, "object-name");
	tsr_enc_bytes(&e, sample_blob, sizeof(sample_blob));
	tsr_enc_i32(&e, -42);
	tsr_enc_i64(&e, INT64_MIN);
	tsr_enc_double(&e, 3.25);
	tsr_enc_u16(&e, 0xBEEF);
	tsr_enc_u8(&e, 7);
	inner = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u32(&e, 3);
	tsr_enc_str(&e, "tag");
	tsr_enc_end_struct(&e, inner);
	tsr_enc_end_struct(&e, outer);
	tsr_enc_u32(&e, SAMPLE_TRAILER);
	return take_ok(&e, len);
}

/* Decode the sample, reading every field whatever happens (as real
 * decoders do: read all, check once).  With check set, the values must be
 * the ones sample_encode wrote. */
static int
sample_decode(const uint8_t *buf, size_t len, bool check)
{
	struct tsr_dec d, sub, sub2;
	uint8_t version = 0, v2 = 0;
	char name[32], tag[8];
	const void *blob;
	size_t blobn;
	uint32_t magic, trailer, count;
	uint64_t id;
	int32_t i32;
	int64_t i64;
	double dbl;
	uint16_t u16;
	uint8_t u8;

	tsr_dec_init(&d, buf, len);
	magic = tsr_dec_u32(&d);
	tsr_dec_begin_struct(&d, 2, &version, &sub);
	id = tsr_dec_u64(&sub);
	tsr_dec_str(&sub, name, sizeof(name));
	tsr_dec_bytes(&sub, &blob, &blobn, 64);
	i32 = tsr_dec_i32(&sub);
	i64 = tsr_dec_i64(&sub);
	dbl = tsr_dec_double(&sub);
	u16 = tsr_dec_u16(&sub);
	u8 = tsr_dec_u8(&sub);
	tsr_dec_begin_struct(&sub, 1, &v2, &sub2);
	count = tsr_dec_u32(&sub2);
	tsr_dec_str(&sub2, tag, sizeof(tag));
	tsr_dec_end_struct(&sub, &sub2);
	tsr_dec_end_struct(&d, &sub);
	trailer = tsr_dec_u32(&d);
	if (tsr_dec_error(&d) == 0 && blob != NULL) {
		/* A borrowed pointer must lie inside the input. */
		ck_assert(blob >= (const void *)buf &&
			  (const uint8_t *)blob + blobn <= buf + len);
	}
	if (check) {
		ck_assert_int_eq(tsr_dec_error(&d), 0);
		ck_assert_uint_eq(tsr_dec_remaining(&d), 0);
		ck_assert_uint_eq(magic, SAMPLE_MAGIC);
		ck_assert_uint_eq(version, 2);
		ck_assert_uint_eq(id, 0x0123456789ABCDEFull);
		ck_assert_str_eq(name, "object-name");
		ck_assert_uint_eq(blobn, sizeof(sample_blob));
		ck_assert_mem_eq(blob, sample_blob, sizeof(sample_blob));
		ck_assert_int_eq(i32, -42);
		ck_assert(i64 == INT64_MIN);
		ck_assert(dbl == 3.25);
		ck_assert_uint_eq(u16, 0xBEEF);
		ck_assert_uint_eq(u8, 7);
		ck_assert_uint_eq(v2, 1);
		ck_assert_uint_eq(count, 3);
		ck_assert_str_eq(tag, "tag");
		ck_assert_uint_eq(trailer, SAMPLE_TRAILER);
	}
	return tsr_dec_error(&d);
}

/* ---- Tests --------------------------------------------------------------*/

START_TEST(test_roundtrip_all_types)
{
	static const uint64_t dvals[] = {
		0x0000000000000000ull,	/* +0 */
		0x8000000000000000ull,	/* -0 */
		0x3FF8000000000000ull,	/* 1.5 */
		0x7FF0000000000000ull,	/* +inf */
		0xFFF0000000000000ull,	/* -inf */
		0x7FF8000000000123ull,	/* quiet NaN with payload */
		0x7FF0000000000001ull,	/* signalling NaN */
		0xFFF8000000000000ull,	/* negative NaN */
		0x0000000000000001ull,	/* smallest subnormal */
		0x7FEFFFFFFFFFFFFFull,	/* DBL_MAX */
	};
	static const uint8_t raw[] = { 0, 1, 0x80, 0xFF };
	struct tsr_enc e;
	struct tsr_dec d;
	uint8_t *buf, rawout[sizeof(raw)];
	size_t len, n;
	const void *p;
	char s[16];

	tsr_enc_init(&e);
	tsr_enc_u8(&e, 0);
	tsr_enc_u8(&e, UINT8_MAX);
	tsr_enc_u16(&e, 0);
	tsr_enc_u16(&e, UINT16_MAX);
	tsr_enc_u32(&e, 0);
	tsr_enc_u32(&e, UINT32_MAX);
	tsr_enc_u64(&e, 0);
	tsr_enc_u64(&e, UINT64_MAX);
	tsr_enc_i32(&e, INT32_MIN);
	tsr_enc_i32(&e, -1);
	tsr_enc_i32(&e, 0);
	tsr_enc_i32(&e, INT32_MAX);
	tsr_enc_i64(&e, INT64_MIN);
	tsr_enc_i64(&e, -1);
	tsr_enc_i64(&e, 0);
	tsr_enc_i64(&e, INT64_MAX);
	for (size_t i = 0; i < sizeof(dvals) / sizeof(dvals[0]); i++)
		tsr_enc_double(&e, bitsd(dvals[i]));
	tsr_enc_raw(&e, raw, sizeof(raw));
	tsr_enc_raw(&e, NULL, 0);
	tsr_enc_bytes(&e, NULL, 0);
	tsr_enc_bytes(&e, "a\0b", 3);
	tsr_enc_str(&e, "");
	tsr_enc_str(&e, NULL);
	tsr_enc_str(&e, "hello");
	buf = take_ok(&e, &len);
	/* take leaves the encoder empty and reusable */
	ck_assert_ptr_null(e.buf);
	ck_assert_uint_eq(e.len, 0);

	tsr_dec_init(&d, buf, len);
	ck_assert_uint_eq(tsr_dec_remaining(&d), len);
	ck_assert_uint_eq(tsr_dec_u8(&d), 0);
	ck_assert_uint_eq(tsr_dec_u8(&d), UINT8_MAX);
	ck_assert_uint_eq(tsr_dec_u16(&d), 0);
	ck_assert_uint_eq(tsr_dec_u16(&d), UINT16_MAX);
	ck_assert_uint_eq(tsr_dec_u32(&d), 0);
	ck_assert_uint_eq(tsr_dec_u32(&d), UINT32_MAX);
	ck_assert_uint_eq(tsr_dec_u64(&d), 0);
	ck_assert_uint_eq(tsr_dec_u64(&d), UINT64_MAX);
	ck_assert_int_eq(tsr_dec_i32(&d), INT32_MIN);
	ck_assert_int_eq(tsr_dec_i32(&d), -1);
	ck_assert_int_eq(tsr_dec_i32(&d), 0);
	ck_assert_int_eq(tsr_dec_i32(&d), INT32_MAX);
	ck_assert(tsr_dec_i64(&d) == INT64_MIN);
	ck_assert(tsr_dec_i64(&d) == -1);
	ck_assert(tsr_dec_i64(&d) == 0);
	ck_assert(tsr_dec_i64(&d) == INT64_MAX);
	for (size_t i = 0; i < sizeof(dvals) / sizeof(dvals[0]); i++) {
		uint64_t got = dbits(tsr_dec_double(&d));

		ck_assert_msg(got == dvals[i], "double %zu: got %016llx", i,
			      (unsigned long long)got);
	}
	tsr_dec_raw(&d, rawout, sizeof(rawout));
	ck_assert_mem_eq(rawout, raw, sizeof(raw));
	tsr_dec_raw(&d, NULL, 0);
	tsr_dec_bytes(&d, &p, &n, 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_nonnull(p);
	tsr_dec_bytes(&d, &p, &n, 3);
	ck_assert_uint_eq(n, 3);
	ck_assert_mem_eq(p, "a\0b", 3);
	/* borrowed: points into the input, not a copy */
	ck_assert(p > (const void *)buf && (const uint8_t *)p + n <= buf + len);
	tsr_dec_str(&d, s, sizeof(s));
	ck_assert_str_eq(s, "");
	tsr_dec_str(&d, s, sizeof(s));
	ck_assert_str_eq(s, "");
	tsr_dec_str(&d, s, sizeof(s));
	ck_assert_str_eq(s, "hello");
	ck_assert_int_eq(tsr_dec_error(&d), 0);
	ck_assert_uint_eq(tsr_dec_remaining(&d), 0);
	free(buf);
}
END_TEST

START_TEST(test_le_layout)
{
	static const uint8_t want[] = {
		0xAB,					/* u8 */
		0x02, 0x01,				/* u16 0x0102 */
		0x04, 0x03, 0x02, 0x01,			/* u32 0x01020304 */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* u64 */
		0xFE, 0xFF, 0xFF, 0xFF,			/* i32 -2 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, /* i64 min */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF0, 0x3F, /* 1.0 */
		0x02, 0x00, 0x00, 0x00, 'a', 'b',	/* bytes "ab" */
		0x03, 0x00, 0x00, 0x00, 'x', 'y', 'z',	/* str "xyz" */
		0x02, 0x01, 0x09, 0x00, 0x00, 0x00,	/* envelope v2 c1 len 9 */
		0x07,					/*   u8 */
		0x01, 0x01, 0x02, 0x00, 0x00, 0x00,	/*   envelope v1 c1 len 2 */
		0x34, 0x12,				/*     u16 */
		0x55,					/* raw */
	};
	struct tsr_enc e;
	size_t len, outer, inner;
	uint8_t *buf;

	tsr_enc_init(&e);
	tsr_enc_u8(&e, 0xAB);
	tsr_enc_u16(&e, 0x0102);
	tsr_enc_u32(&e, 0x01020304);
	tsr_enc_u64(&e, 0x0102030405060708ull);
	tsr_enc_i32(&e, -2);
	tsr_enc_i64(&e, INT64_MIN);
	tsr_enc_double(&e, 1.0);
	tsr_enc_bytes(&e, "ab", 2);
	tsr_enc_str(&e, "xyz");
	outer = tsr_enc_begin_struct(&e, 2, 1);
	tsr_enc_u8(&e, 7);
	inner = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u16(&e, 0x1234);
	tsr_enc_end_struct(&e, inner);
	tsr_enc_end_struct(&e, outer);
	tsr_enc_raw(&e, "\x55", 1);
	buf = take_ok(&e, &len);
	ck_assert_uint_eq(len, sizeof(want));
	ck_assert_mem_eq(buf, want, sizeof(want));
	free(buf);
}
END_TEST

START_TEST(test_envelope_roundtrip)
{
	struct tsr_enc e;
	struct tsr_dec d, sub, sub2, empty;
	size_t len, m1, m2, m3;
	uint8_t *buf, ver;

	tsr_enc_init(&e);
	m1 = tsr_enc_begin_struct(&e, 5, 3);
	tsr_enc_u32(&e, 111);
	m2 = tsr_enc_begin_struct(&e, 1, 0);
	tsr_enc_str(&e, "nested");
	tsr_enc_end_struct(&e, m2);
	tsr_enc_u32(&e, 222);
	tsr_enc_end_struct(&e, m1);
	m3 = tsr_enc_begin_struct(&e, 1, 1);	/* empty body */
	tsr_enc_end_struct(&e, m3);
	tsr_enc_u32(&e, 333);
	buf = take_ok(&e, &len);

	tsr_dec_init(&d, buf, len);
	ck_assert_int_eq(tsr_dec_begin_struct(&d, 5, &ver, &sub), 0);
	ck_assert_uint_eq(ver, 5);
	/* the parent is already past the whole envelope */
	ck_assert_uint_eq(tsr_dec_remaining(&d), 6 + 4);
	ck_assert_uint_eq(tsr_dec_u32(&sub), 111);
	ck_assert_int_eq(tsr_dec_begin_struct(&sub, 1, &ver, &sub2), 0);
	ck_assert_uint_eq(ver, 1);
	{
		char s[8];

		tsr_dec_str(&sub2, s, sizeof(s));
		ck_assert_str_eq(s, "nested");
	}
	ck_assert_uint_eq(tsr_dec_remaining(&sub2), 0);
	ck_assert_int_eq(tsr_dec_end_struct(&sub, &sub2), 0);
	ck_assert_uint_eq(tsr_dec_u32(&sub), 222);
	ck_assert_uint_eq(tsr_dec_remaining(&sub), 0);
	ck_assert_int_eq(tsr_dec_end_struct(&d, &sub), 0);
	ck_assert_int_eq(tsr_dec_begin_struct(&d, 1, &ver, &empty), 0);
	ck_assert_uint_eq(tsr_dec_remaining(&empty), 0);
	ck_assert_int_eq(tsr_dec_end_struct(&d, &empty), 0);
	ck_assert_uint_eq(tsr_dec_u32(&d), 333);
	ck_assert_int_eq(tsr_dec_error(&d), 0);
	ck_assert_uint_eq(tsr_dec_remaining(&d), 0);
	free(buf);
}
END_TEST

/* Version 1 of a record: a (u32), name (str).  Version 2 appends c (u64)
 * and blob (bytes), compat stays 1. */
static uint8_t *
record_encode(uint8_t version, size_t *len)
{
	struct tsr_enc e;
	size_t m;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, version, 1);
	tsr_enc_u32(&e, 0xA1A2A3A4);
	tsr_enc_str(&e, "rec");
	if (version >= 2) {
		tsr_enc_u64(&e, 0xC0C0C0C0C0C0C0C0ull);
		tsr_enc_bytes(&e, "new-field", 9);
	}
	tsr_enc_end_struct(&e, m);
	tsr_enc_u32(&e, 0x5E5E5E5E);	/* whatever follows the record */
	return take_ok(&e, len);
}

START_TEST(test_newer_writer_older_reader)
{
	struct tsr_dec d, sub;
	uint8_t ver;
	size_t len;
	uint8_t *buf = record_encode(2, &len);
	char name[8];

	/* A version-1 reader knows a and name only. */
	tsr_dec_init(&d, buf, len);
	ck_assert_int_eq(tsr_dec_begin_struct(&d, 1, &ver, &sub), 0);
	ck_assert_uint_eq(ver, 2);
	ck_assert_uint_eq(tsr_dec_u32(&sub), 0xA1A2A3A4);
	tsr_dec_str(&sub, name, sizeof(name));
	ck_assert_str_eq(name, "rec");
	ck_assert_uint_gt(tsr_dec_remaining(&sub), 0);	/* the unknown tail */
	ck_assert_int_eq(tsr_dec_end_struct(&d, &sub), 0);
	ck_assert_uint_eq(tsr_dec_u32(&d), 0x5E5E5E5E);
	ck_assert_int_eq(tsr_dec_error(&d), 0);
	ck_assert_uint_eq(tsr_dec_remaining(&d), 0);
	free(buf);
}
END_TEST

START_TEST(test_older_writer_newer_reader)
{
	struct tsr_dec d, sub;
	uint8_t ver;
	size_t len;
	uint8_t *buf = record_encode(1, &len);
	char name[8];

	/* A version-2 reader sees version 1 and decodes only its fields. */
	tsr_dec_init(&d, buf, len);
	ck_assert_int_eq(tsr_dec_begin_struct(&d, 2, &ver, &sub), 0);
	ck_assert_uint_eq(ver, 1);
	ck_assert_uint_eq(tsr_dec_u32(&sub), 0xA1A2A3A4);
	tsr_dec_str(&sub, name, sizeof(name));
	ck_assert_str_eq(name, "rec");
	ck_assert_uint_eq(tsr_dec_remaining(&sub), 0);
	ck_assert_int_eq(tsr_dec_end_struct(&d, &sub), 0);
	ck_assert_uint_eq(tsr_dec_u32(&d), 0x5E5E5E5E);
	ck_assert_int_eq(tsr_dec_error(&d), 0);
	free(buf);
}
END_TEST

START_TEST(test_compat_too_new)
{
	struct tsr_enc e;
	struct tsr_dec d, sub;
	uint8_t *buf, ver = 99;
	size_t len, m;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 3, 3);
	tsr_enc_u32(&e, 1);
	tsr_enc_end_struct(&e, m);
	tsr_enc_u32(&e, 2);
	buf = take_ok(&e, &len);

	tsr_dec_init(&d, buf, len);
	ck_assert_int_eq(tsr_dec_begin_struct(&d, 2, &ver, &sub), -EOPNOTSUPP);
	ck_assert_int_eq(tsr_dec_error(&d), -EOPNOTSUPP);
	ck_assert_uint_eq(ver, 0);
	/* sub must not be readable, and d is failed for good */
	ck_assert_uint_eq(tsr_dec_u32(&sub), 0);
	ck_assert_int_ne(tsr_dec_error(&sub), 0);
	ck_assert_int_eq(tsr_dec_end_struct(&d, &sub), -EOPNOTSUPP);
	ck_assert_uint_eq(tsr_dec_u32(&d), 0);
	ck_assert_int_eq(tsr_dec_error(&d), -EOPNOTSUPP);

	/* the same record is fine for a reader that knows version 3 */
	tsr_dec_init(&d, buf, len);
	ck_assert_int_eq(tsr_dec_begin_struct(&d, 3, &ver, &sub), 0);
	ck_assert_uint_eq(ver, 3);
	ck_assert_uint_eq(tsr_dec_u32(&sub), 1);
	ck_assert_int_eq(tsr_dec_end_struct(&d, &sub), 0);
	ck_assert_uint_eq(tsr_dec_u32(&d), 2);
	free(buf);
}
END_TEST

START_TEST(test_sample_roundtrip)
{
	size_t len;
	uint8_t *buf = sample_encode(&len);
	uint8_t *copy = dup_exact(buf, len);

	ck_assert_int_eq(sample_decode(copy, len, true), 0);
	free(copy);
	free(buf);
}
END_TEST

START_TEST(test_every_truncation_fails)
{
	size_t len;
	uint8_t *buf = sample_encode(&len);

	for (size_t k = 0; k < len; k++) {
		uint8_t *copy = dup_exact(buf, k);
		int rc = sample_decode(copy, k, false);

		ck_assert_msg(rc == -EBADMSG, "prefix %zu of %zu: rc %d", k,
			      len, rc);
		free(copy);
	}
	/* and with no buffer at all */
	ck_assert_int_eq(sample_decode(NULL, 0, false), -EBADMSG);
	free(buf);
}
END_TEST

START_TEST(test_random_corruption)
{
	size_t len;
	uint8_t *buf = sample_encode(&len);

	rng_state = 0x7E55E4A;
	for (int iter = 0; iter < 20000; iter++) {
		/* Sometimes also cut the buffer, so corrupt lengths meet a
		 * short end. */
		size_t n = rng() % 4 == 0 ? rng() % (len + 1) : len;
		uint8_t *copy = dup_exact(buf, n);
		int flips = 1 + (int)(rng() % 4);
		int rc;

		for (int f = 0; f < flips && n > 0; f++)
			copy[rng() % n] = (uint8_t)rng();
		rc = sample_decode(copy, n, false);
		ck_assert(rc == 0 || rc == -EBADMSG || rc == -EOPNOTSUPP);
		free(copy);
	}
	/* Pure noise, too. */
	for (int iter = 0; iter < 5000; iter++) {
		size_t n = rng() % 96;
		uint8_t *copy = malloc(n != 0 ? n : 1);

		ck_assert_ptr_nonnull(copy);
		for (size_t i = 0; i < n; i++)
			copy[i] = (uint8_t)rng();
		(void)sample_decode(copy, n, false);
		free(copy);
	}
	free(buf);
}
END_TEST

START_TEST(test_oversized_length)
{
	/* prefix 0xFFFFFFFF with only 3 bytes behind it */
	static const uint8_t huge[] = { 0xFF, 0xFF, 0xFF, 0xFF, 'a', 'b', 'c' };
	/* prefix 3 that fits the input but not the caller's max of 2 */
	static const uint8_t over_max[] = { 3, 0, 0, 0, 'a', 'b', 'c' };
	/* envelope claiming a 16-byte body with 2 bytes present */
	static const uint8_t env[] = { 1, 1, 16, 0, 0, 0, 'x', 'y' };
	struct tsr_dec d, sub;
	const void *p = (const void *)1;
	size_t n = 99;
	uint8_t ver, *copy;
	char s[64];

	copy = dup_exact(huge, sizeof(huge));
	tsr_dec_init(&d, copy, sizeof(huge));
	tsr_dec_bytes(&d, &p, &n, SIZE_MAX);
	ck_assert_int_eq(tsr_dec_error(&d), -EBADMSG);
	ck_assert_ptr_null(p);
	ck_assert_uint_eq(n, 0);
	tsr_dec_init(&d, copy, sizeof(huge));
	tsr_dec_str(&d, s, sizeof(s));
	ck_assert_int_eq(tsr_dec_error(&d), -EBADMSG);
	ck_assert_str_eq(s, "");
	free(copy);

	copy = dup_exact(over_max, sizeof(over_max));
	tsr_dec_init(&d, copy, sizeof(over_max));
	tsr_dec_bytes(&d, &p, &n, 2);
	ck_assert_int_eq(tsr_dec_error(&d), -EBADMSG);
	ck_assert_ptr_null(p);
	tsr_dec_init(&d, copy, sizeof(over_max));
	tsr_dec_bytes(&d, &p, &n, 3);
	ck_assert_int_eq(tsr_dec_error(&d), 0);
	ck_assert_uint_eq(n, 3);
	free(copy);

	copy = dup_exact(env, sizeof(env));
	tsr_dec_init(&d, copy, sizeof(env));
	ck_assert_int_eq(tsr_dec_begin_struct(&d, 1, &ver, &sub), -EBADMSG);
	ck_assert_uint_eq(tsr_dec_u8(&sub), 0);
	ck_assert_int_eq(tsr_dec_end_struct(&d, &sub), -EBADMSG);
	/* a short body is malformed framing, whatever the versions say */
	copy[1] = 3;
	copy[0] = 3;
	tsr_dec_init(&d, copy, sizeof(env));
	ck_assert_int_eq(tsr_dec_begin_struct(&d, 1, &ver, &sub), -EBADMSG);
	free(copy);
}
END_TEST

START_TEST(test_envelope_compat_above_version)
{
	/* compat 2 on a version-1 layout cannot be right */
	static const uint8_t env[] = { 1, 2, 0, 0, 0, 0 };
	struct tsr_dec d, sub;
	uint8_t ver;

	tsr_dec_init(&d, env, sizeof(env));
	ck_assert_int_eq(tsr_dec_begin_struct(&d, 9, &ver, &sub), -EBADMSG);
}
END_TEST

START_TEST(test_dec_str_rejects)
{
	struct tsr_enc e;
	struct tsr_dec d;
	size_t len;
	uint8_t *buf, *copy;
	char s[8];

	tsr_enc_init(&e);
	tsr_enc_bytes(&e, "ab\0cd", 5);
	tsr_enc_str(&e, "hello");
	buf = take_ok(&e, &len);
	copy = dup_exact(buf, len);

	/* embedded NUL */
	memset(s, 'x', sizeof(s));
	tsr_dec_init(&d, copy, len);
	tsr_dec_str(&d, s, sizeof(s));
	ck_assert_int_eq(tsr_dec_error(&d), -EBADMSG);
	ck_assert_str_eq(s, "");

	/* "hello" needs 6 bytes with its NUL: 5 is too short, 6 fits */
	tsr_dec_init(&d, copy + 9, len - 9);
	tsr_dec_str(&d, s, 5);
	ck_assert_int_eq(tsr_dec_error(&d), -EBADMSG);
	ck_assert_str_eq(s, "");
	tsr_dec_init(&d, copy + 9, len - 9);
	tsr_dec_str(&d, s, 6);
	ck_assert_int_eq(tsr_dec_error(&d), 0);
	ck_assert_str_eq(s, "hello");

	/* no room at all, not even for "" */
	tsr_dec_init(&d, copy + 9, len - 9);
	tsr_dec_str(&d, NULL, 0);
	ck_assert_int_eq(tsr_dec_error(&d), -EBADMSG);
	free(copy);
	free(buf);
}
END_TEST

START_TEST(test_sticky_decoder_error)
{
	static const uint8_t in[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	struct tsr_dec d, sub;
	uint8_t raw[4], ver;
	const void *p;
	size_t n;
	char s[4];

	/* A u64 does not fit in the last 3 bytes; nothing after it reads. */
	tsr_dec_init(&d, in, sizeof(in));
	ck_assert_uint_eq(tsr_dec_u32(&d), 0x04030201);
	ck_assert_uint_eq(tsr_dec_u16(&d), 0x0605);
	ck_assert_uint_eq(tsr_dec_u64(&d), 0);
	ck_assert_int_eq(tsr_dec_error(&d), -EBADMSG);
	ck_assert_uint_eq(tsr_dec_remaining(&d), 0);
	ck_assert_uint_eq(tsr_dec_u8(&d), 0);	/* bytes are there, but no */
	ck_assert_uint_eq(tsr_dec_u16(&d), 0);
	ck_assert_int_eq(tsr_dec_i32(&d), 0);
	ck_assert(tsr_dec_i64(&d) == 0);
	ck_assert(dbits(tsr_dec_double(&d)) == 0);
	memset(raw, 0xAA, sizeof(raw));
	tsr_dec_raw(&d, raw, sizeof(raw));
	ck_assert_mem_eq(raw, "\0\0\0\0", 4);
	tsr_dec_bytes(&d, &p, &n, 100);
	ck_assert_ptr_null(p);
	ck_assert_uint_eq(n, 0);
	tsr_dec_str(&d, s, sizeof(s));
	ck_assert_str_eq(s, "");
	ck_assert_int_eq(tsr_dec_begin_struct(&d, 1, &ver, &sub), -EBADMSG);
	ck_assert_int_ne(tsr_dec_error(&sub), 0);
	tsr_dec_fail(&d, -ERANGE);
	ck_assert_int_eq(tsr_dec_error(&d), -EBADMSG);

	/* A caller's failure comes first and stays. */
	tsr_dec_init(&d, in, sizeof(in));
	tsr_dec_fail(&d, -ERANGE);
	ck_assert_uint_eq(tsr_dec_u8(&d), 0);
	ck_assert_int_eq(tsr_dec_error(&d), -ERANGE);

	/* An envelope body is a hard limit even when the parent has more. */
	{
		static const uint8_t env[] = { 1, 1, 2, 0, 0, 0, 0xAA, 0xBB,
					       1, 2, 3, 4, 5, 6, 7, 8 };

		tsr_dec_init(&d, env, sizeof(env));
		ck_assert_int_eq(tsr_dec_begin_struct(&d, 1, &ver, &sub), 0);
		ck_assert_uint_eq(tsr_dec_u32(&sub), 0);
		ck_assert_int_eq(tsr_dec_error(&sub), -EBADMSG);
		ck_assert_int_eq(tsr_dec_error(&d), 0);
		ck_assert_int_eq(tsr_dec_end_struct(&d, &sub), -EBADMSG);
		ck_assert_int_eq(tsr_dec_error(&d), -EBADMSG);
		ck_assert_uint_eq(tsr_dec_u64(&d), 0);
	}
}
END_TEST

START_TEST(test_encoder_failure_sticky)
{
	struct tsr_enc e;
	size_t len = 123, m;
	/* Never dereferenced: the size checks fail first. */
	const void *bogus = (const void *)(uintptr_t)0x1;

	tsr_enc_init(&e);
	tsr_enc_u32(&e, 1);
#if SIZE_MAX > UINT32_MAX
	tsr_enc_bytes(&e, bogus, (size_t)UINT32_MAX + 1);
	ck_assert_int_eq(tsr_enc_error(&e), -EOVERFLOW);
	ck_assert_uint_eq(e.len, 4);
#endif
	/* size_t overflow of len + n is caught without allocating */
	tsr_enc_raw(&e, bogus, SIZE_MAX);
#if SIZE_MAX > UINT32_MAX
	ck_assert_int_eq(tsr_enc_error(&e), -EOVERFLOW);	/* first error */
#else
	ck_assert_int_eq(tsr_enc_error(&e), -ENOMEM);
#endif
	/* later puts are no-ops */
	tsr_enc_u64(&e, 2);
	tsr_enc_str(&e, "x");
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_end_struct(&e, m);
	ck_assert_uint_eq(e.len, 4);
	/* a failed encoding is never handed out */
	ck_assert_ptr_null(tsr_enc_take(&e, &len));
	ck_assert_uint_eq(len, 0);
	ck_assert_int_ne(tsr_enc_error(&e), 0);
	tsr_enc_release(&e);
	ck_assert_int_eq(tsr_enc_error(&e), 0);

	tsr_enc_init(&e);
	tsr_enc_u8(&e, 1);
	tsr_enc_raw(&e, bogus, SIZE_MAX);
	ck_assert_int_eq(tsr_enc_error(&e), -ENOMEM);
	tsr_enc_release(&e);

	/* an end_struct mark that begin_struct never returned */
	tsr_enc_init(&e);
	tsr_enc_u32(&e, 1);
	tsr_enc_end_struct(&e, 2);
	ck_assert_int_eq(tsr_enc_error(&e), -EINVAL);
	tsr_enc_release(&e);
}
END_TEST

START_TEST(test_encoder_growth)
{
	enum { N = 100000 };
	struct tsr_enc e;
	struct tsr_dec d;
	uint8_t *buf;
	size_t len;

	tsr_enc_init(&e);
	for (uint32_t i = 0; i < N; i++) {
		tsr_enc_u32(&e, i * 2654435761u);
		ck_assert_uint_le(e.len, e.cap);
	}
	buf = take_ok(&e, &len);
	ck_assert_uint_eq(len, (size_t)N * 4);
	tsr_dec_init(&d, buf, len);
	for (uint32_t i = 0; i < N; i++)
		ck_assert_uint_eq(tsr_dec_u32(&d), i * 2654435761u);
	ck_assert_int_eq(tsr_dec_error(&d), 0);
	free(buf);

	/* release without take frees; an empty encoder hands out nothing */
	tsr_enc_init(&e);
	tsr_enc_str(&e, "discarded");
	tsr_enc_release(&e);
	ck_assert_ptr_null(e.buf);
	ck_assert_ptr_null(tsr_enc_take(&e, &len));
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(tsr_enc_error(&e), 0);
}
END_TEST

static Suite *
encoding_suite(void)
{
	Suite *s = suite_create("encoding");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_roundtrip_all_types);
	tcase_add_test(tc, test_le_layout);
	tcase_add_test(tc, test_envelope_roundtrip);
	tcase_add_test(tc, test_newer_writer_older_reader);
	tcase_add_test(tc, test_older_writer_newer_reader);
	tcase_add_test(tc, test_compat_too_new);
	tcase_add_test(tc, test_sample_roundtrip);
	tcase_add_test(tc, test_every_truncation_fails);
	tcase_add_test(tc, test_random_corruption);
	tcase_add_test(tc, test_oversized_length);
	tcase_add_test(tc, test_envelope_compat_above_version);
	tcase_add_test(tc, test_dec_str_rejects);
	tcase_add_test(tc, test_sticky_decoder_error);
	tcase_add_test(tc, test_encoder_failure_sticky);
	tcase_add_test(tc, test_encoder_growth);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(encoding_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
