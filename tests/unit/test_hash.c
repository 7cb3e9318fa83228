/* test_hash.c — the fixed object -> PG -> placement-input functions:
 * XXH32 against published vectors, stable modulo's split property, and
 * golden values that must never change. */
#include <tessera/hash.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(xxh32_vectors)
{
	/* from the xxHash reference implementation and python-xxhash docs */
	ck_assert_uint_eq(tsr_xxh32("", 0, 0), 0x02cc5d05u);
	ck_assert_uint_eq(tsr_xxh32("a", 1, 0), 0x550d7456u);
	ck_assert_uint_eq(tsr_xxh32("abc", 3, 0), 0x32d153ffu);
	ck_assert_uint_eq(tsr_xxh32("Nobody inspects the spammish repetition", 39, 0),
			  0xe2293b2fu);
	/* the seed matters */
	ck_assert_uint_ne(tsr_xxh32("abc", 3, 1), 0x32d153ffu);
}
END_TEST

START_TEST(xxh32_alignment)
{
	char buf[128 + 8];
	const char *text = "the quick brown fox jumps over the lazy dog, twice over";
	size_t n = strlen(text);
	uint32_t want = tsr_xxh32(text, n, 7);

	/* the same bytes at every alignment give the same hash */
	for (size_t off = 0; off < 8; off++) {
		memcpy(buf + off, text, n);
		ck_assert_uint_eq(tsr_xxh32(buf + off, n, 7), want);
	}
}
END_TEST

START_TEST(pg_mask_values)
{
	ck_assert_uint_eq(tsr_pg_mask(1), 0);
	ck_assert_uint_eq(tsr_pg_mask(2), 1);
	ck_assert_uint_eq(tsr_pg_mask(3), 3);
	ck_assert_uint_eq(tsr_pg_mask(4), 3);
	ck_assert_uint_eq(tsr_pg_mask(5), 7);
	ck_assert_uint_eq(tsr_pg_mask(128), 127);
	ck_assert_uint_eq(tsr_pg_mask(129), 255);
}
END_TEST

/* Raising pg_num from n to n+1 moves only objects into the new group, and
 * only from the one group it splits from. */
START_TEST(stable_mod_splits)
{
	for (uint32_t n = 1; n < 300; n++) {
		uint32_t parent = n & (tsr_pg_mask(n + 1) >> 1);
		for (uint32_t i = 0; i < 2000; i++) {
			char name[32];
			int l = snprintf(name, sizeof(name), "%u.%08x", n, i);
			uint32_t a = tsr_object_pg(name, (size_t)l, n);
			uint32_t b = tsr_object_pg(name, (size_t)l, n + 1);
			ck_assert_uint_lt(a, n);
			ck_assert_uint_lt(b, n + 1);
			if (a != b) {
				ck_assert_uint_eq(b, n);
				ck_assert_uint_eq(a, parent);
			}
		}
	}
}
END_TEST

START_TEST(pg_seed_golden)
{
	/* Part of the placement contract: these values must never change
	 * (tsr_pg_seed changed once, before any daemon used it; see hash.h). */
	/* x = (XXH32(pool u64 LE, pg >> 16 u32 LE) & ~255) ^ (pg & 65535) */
	uint8_t b[12] = { 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	uint32_t h0 = tsr_xxh32(b, 12, 0) & ~0xffu;
	ck_assert_uint_eq(tsr_pg_seed(3, 0), h0);
	ck_assert_uint_eq(tsr_pg_seed(3, 0x1234), h0 ^ 0x1234);
	b[8] = 0x01;
	ck_assert_uint_eq(tsr_pg_seed(3, 0x12345),
			  (tsr_xxh32(b, 12, 0) & ~0xffu) ^ 0x2345);
	ck_assert_uint_eq(tsr_pg_seed(3, 0), 0x6100de00u);
	ck_assert_uint_eq(tsr_pg_seed(0, 0), 0x31b8da00u);
	/* group 7 of different pools lands on different inputs */
	ck_assert_uint_ne(tsr_pg_seed(1, 7), tsr_pg_seed(2, 7));
	/* every 256 groups of a pool are one aligned block of inputs, in
	 * order, and 65536 groups one aligned run of 65536 */
	for (uint32_t pg = 0; pg < 1024; pg++)
		ck_assert_uint_eq(tsr_pg_seed(9, pg), tsr_pg_seed(9, pg & ~0xffu) + (pg & 0xff));
	for (uint32_t pg = 0; pg < 65536; pg += 97)
		ck_assert_uint_eq(tsr_pg_seed(9, pg) >> 16, tsr_pg_seed(9, 0) >> 16);
	ck_assert_uint_eq(tsr_pg_seed(9, 256) & 0xff, 0);
	ck_assert_uint_ne(tsr_pg_seed(9, 256) >> 8, tsr_pg_seed(9, 0) >> 8);
	ck_assert_uint_ne(tsr_pg_seed(9, 65536) >> 16, tsr_pg_seed(9, 0) >> 16);
	ck_assert_uint_eq(tsr_object_hash("rbd_data.1", 10), tsr_xxh32("rbd_data.1", 10, 0));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("hash");
	TCase *tc = tcase_create("hash");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, xxh32_vectors);
	tcase_add_test(tc, xxh32_alignment);
	tcase_add_test(tc, pg_mask_values);
	tcase_add_test(tc, stable_mod_splits);
	tcase_add_test(tc, pg_seed_golden);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
