/* test_placebase.c — the draws the placement plugins are made of
 * (plugins/common/placebase.h): crush's stratified draw is a permutation
 * of the strata over every block, its bulk copies (generic vector code and
 * the AVX2 one) give exactly the reference values, and its values are
 * frozen, since they decide where data lives. */
#include "placebase.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t
lcg(uint32_t *st)
{
	*st = *st * 1664525u + 1013904223u;
	return *st ^ (*st >> 16);
}

/* Over the 256 positions of a block, each device's top 8 bits take every
 * value once, for any device key and any block; the low 16 bits vary. */
START_TEST(test_strat_draw_is_stratified)
{
	uint32_t st = 12345;

	for (int round = 0; round < 2000; round++) {
		uint32_t key = lcg(&st), kq = pb_block_key(lcg(&st));
		uint8_t seen[PB_STRAT_BLOCK] = { 0 };
		uint32_t low_or = 0, low_and = 0xffff;

		for (uint32_t s = 0; s < PB_STRAT_BLOCK; s++) {
			uint32_t d = pb_strat_draw(key, kq, s);

			ck_assert_uint_lt(d, 1u << 24);
			ck_assert_msg(!seen[d >> 16], "stratum %u twice (key %08x)",
				      d >> 16, key);
			seen[d >> 16] = 1;
			low_or |= d & 0xffff;
			low_and &= d & 0xffff;
		}
		ck_assert_uint_eq(low_or, 0xffff);
		ck_assert_uint_eq(low_and, 0);
	}
}
END_TEST

/* A device's strata are unrelated from one block to the next, and two
 * devices' strata are unrelated within a block: about 1 in 256 coincide. */
START_TEST(test_strat_draw_blocks_and_devices_differ)
{
	uint32_t same_block = 0, same_dev = 0;

	for (uint32_t q = 0; q < 4096; q++) {
		uint32_t k0 = pb_block_key(q << PB_STRAT_BITS);
		uint32_t k1 = pb_block_key((q + 1) << PB_STRAT_BITS);

		same_block += pb_strat_draw(77, k0, 5) >> 16 == pb_strat_draw(77, k1, 5) >> 16;
		same_dev += pb_strat_draw(77, k0, 5) >> 16 == pb_strat_draw(78, k0, 5) >> 16;
	}
	/* 16 expected each; independent counts stay within 4..40 */
	ck_assert_uint_lt(same_block, 40);
	ck_assert_uint_gt(same_block, 3);
	ck_assert_uint_lt(same_dev, 40);
	ck_assert_uint_gt(same_dev, 3);
}
END_TEST

/* Every bulk copy this build and CPU have gives exactly the reference
 * values, for every length around the vector width, and writes nothing
 * past n. */
START_TEST(test_strat_draws_match_reference)
{
	uint32_t st = 99, keys[67], out[67];
	int copies = 0;

	for (int copy = 0; copy < 2; copy++) {
		for (int round = 0; round < 300; round++) {
			uint32_t kq = lcg(&st), s = lcg(&st) & (PB_STRAT_BLOCK - 1);
			uint32_t n = (uint32_t)round % 68;

			for (uint32_t i = 0; i < n; i++)
				keys[i] = lcg(&st);
			memset(out, 0xa5, sizeof(out));
			if (pb_strat_draws_copy(copy, keys, n, kq, s, out) == -ENOTSUP)
				break;
			for (uint32_t i = 0; i < n; i++)
				ck_assert_msg(out[i] == pb_strat_draw(keys[i], kq, s),
					      "copy %d, n %u, lane %u: %08x, reference %08x",
					      copy, n, i, out[i], pb_strat_draw(keys[i], kq, s));
			for (uint32_t i = n; i < 67; i++)
				ck_assert_uint_eq(out[i], 0xa5a5a5a5u);
			copies += round == 0;
		}
	}
	ck_assert_int_ge(copies, 1); /* the generic copy always exists */
	pb_strat_draws(keys, 67, 5, 6, out);
	for (uint32_t i = 0; i < 67; i++)
		ck_assert_uint_eq(out[i], pb_strat_draw(keys[i], 5, 6));
}
END_TEST

/* Frozen values: the draw is part of where data lives. */
START_TEST(test_strat_draw_golden)
{
	ck_assert_uint_eq(pb_block_key(0), 0x4bc0fbebu);
	ck_assert_uint_eq(pb_strat_draw(1, pb_block_key(0x1234), 0x34), 0xb8421cu);
}
END_TEST

static Suite *
placebase_suite(void)
{
	Suite *s = suite_create("placebase");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_strat_draw_is_stratified);
	tcase_add_test(tc, test_strat_draw_blocks_and_devices_differ);
	tcase_add_test(tc, test_strat_draws_match_reference);
	tcase_add_test(tc, test_strat_draw_golden);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(placebase_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
