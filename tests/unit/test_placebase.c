/* test_placebase.c — the draws the placement plugins are made of
 * (plugins/placebase/placebase.h): crush's stratified draw takes every
 * stratum once over a block and every sub-stratum once over a superblock,
 * its bulk copies (generic vector code and the AVX2 one) give exactly the
 * reference values, and its values are frozen, since they decide where
 * data lives. */
#include "placebase/placebase.h"

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
 * value once, for any device key and any block. */
START_TEST(test_strat_draw_level1)
{
	uint32_t st = 12345;

	for (int round = 0; round < 2000; round++) {
		uint32_t key = lcg(&st), x0 = lcg(&st) & ~0xffu;
		uint8_t seen[256] = { 0 };

		for (uint32_t s = 0; s < 256; s++) {
			struct pb_strat_in in = pb_strat_input(x0 + s);
			uint32_t d = pb_strat_draw(key, &in);

			ck_assert_uint_lt(d, 1u << 24);
			ck_assert_msg(!seen[d >> 16], "stratum %u twice (key %08x, x %u)",
				      d >> 16, key, x0 + s);
			seen[d >> 16] = 1;
		}
	}
}
END_TEST

/* Over the 65536 inputs of a superblock, each device's top 16 bits take
 * every value once: the 256 inputs that land in one stratum (one per
 * block) get distinct sub-strata. */
START_TEST(test_strat_draw_level2)
{
	uint32_t st = 777;
	static uint8_t seen[1u << 16];

	for (int round = 0; round < 12; round++) {
		uint32_t key = lcg(&st), x0 = lcg(&st) & ~0xffffu, low_or = 0;

		memset(seen, 0, sizeof(seen));
		for (uint32_t i = 0; i < (1u << 16); i++) {
			struct pb_strat_in in = pb_strat_input(x0 + i);
			uint32_t d = pb_strat_draw(key, &in);

			if (seen[d >> 8])
				ck_abort_msg("sub-stratum %u twice (key %08x, x %u)",
					     d >> 8, key, x0 + i);
			seen[d >> 8] = 1;
			low_or |= d & 0xff;
		}
		ck_assert_uint_eq(low_or, 0xff);
	}
	/* the level-2 key depends on the stratum: within one block (one t)
	 * the 256 strata get unrelated sub-strata, about 256 (1 - 1/e) = 162
	 * distinct ones, not one */
	for (int round = 0; round < 50; round++) {
		uint32_t key = lcg(&st), x0 = lcg(&st) & ~0xffu, distinct = 0;
		uint8_t u_seen[256] = { 0 };

		for (uint32_t s = 0; s < 256; s++) {
			struct pb_strat_in in = pb_strat_input(x0 + s);
			uint32_t u = (pb_strat_draw(key, &in) >> 8) & 0xff;

			distinct += !u_seen[u];
			u_seen[u] = 1;
		}
		ck_assert_msg(distinct > 120 && distinct < 200,
			      "%u distinct sub-strata in a block (key %08x)",
			      distinct, key);
	}
}
END_TEST

/* A device's strata are unrelated from one block to the next, and two
 * devices' strata are unrelated within a block: about 1 in 256 coincide. */
START_TEST(test_strat_draw_blocks_and_devices_differ)
{
	uint32_t same_block = 0, same_dev = 0;

	for (uint32_t q = 0; q < 4096; q++) {
		struct pb_strat_in i0 = pb_strat_input(q << 8 | 5);
		struct pb_strat_in i1 = pb_strat_input((q + 1) << 8 | 5);

		same_block += pb_strat_draw(77, &i0) >> 16 == pb_strat_draw(77, &i1) >> 16;
		same_dev += pb_strat_draw(77, &i0) >> 16 == pb_strat_draw(78, &i0) >> 16;
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
			struct pb_strat_in in = pb_strat_input(lcg(&st));
			uint32_t n = (uint32_t)round % 68;

			for (uint32_t i = 0; i < n; i++)
				keys[i] = lcg(&st);
			memset(out, 0xa5, sizeof(out));
			if (pb_strat_draws_copy(copy, keys, n, &in, out) == -ENOTSUP)
				break;
			for (uint32_t i = 0; i < n; i++)
				ck_assert_msg(out[i] == pb_strat_draw(keys[i], &in),
					      "copy %d, n %u, lane %u: %08x, reference %08x",
					      copy, n, i, out[i], pb_strat_draw(keys[i], &in));
			for (uint32_t i = n; i < 67; i++)
				ck_assert_uint_eq(out[i], 0xa5a5a5a5u);
			copies += round == 0;
		}
	}
	ck_assert_int_ge(copies, 1); /* the generic copy always exists */
	struct pb_strat_in in = pb_strat_input(0x5006);
	pb_strat_draws(keys, 67, &in, out);
	for (uint32_t i = 0; i < 67; i++)
		ck_assert_uint_eq(out[i], pb_strat_draw(keys[i], &in));
}
END_TEST

/* Frozen values: the draw is part of where data lives. */
START_TEST(test_strat_draw_golden)
{
	struct pb_strat_in in = pb_strat_input(0x123456);

	ck_assert_uint_eq(in.kq, 0x6f9a5cf3u);
	ck_assert_uint_eq(in.kQ, 0x95258e2eu);
	ck_assert_uint_eq(in.s, 0x56);
	ck_assert_uint_eq(in.t, 0x34);
	ck_assert_uint_eq(pb_strat_draw(1, &in), 0x423d99u);
}
END_TEST

static Suite *
placebase_suite(void)
{
	Suite *s = suite_create("placebase");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_strat_draw_level1);
	tcase_add_test(tc, test_strat_draw_level2);
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
