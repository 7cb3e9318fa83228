/* test_bd_alloc.c — backend-blockdev's block allocator, checked against a
 * plain array model through random takes and releases, plus its edges:
 * exact fill, -ENOSPC leaving nothing changed, double free, overlap at
 * mount, ranges past the end, sizes that are not multiples of 64. */
#include "alloc.h"

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

START_TEST(fill_exactly_then_enospc)
{
	struct bd_alloc *a;
	struct bd_extent e[4];
	uint32_t n;

	ck_assert_int_eq(bd_alloc_create(1000, &a), 0);
	ck_assert_int_eq(bd_alloc_take(a, 600, e, 4, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(e[0].start, 0);
	ck_assert_uint_eq(e[0].count, 600);
	ck_assert_int_eq(bd_alloc_take(a, 400, e, 4, &n), 0);
	ck_assert_uint_eq(e[0].start, 600);
	ck_assert_uint_eq(bd_alloc_free_blocks(a), 0);
	ck_assert_int_eq(bd_alloc_take(a, 1, e, 4, &n), -ENOSPC);
	ck_assert_uint_eq(n, 0);
	bd_alloc_destroy(a);
}
END_TEST

START_TEST(fragmented_take_and_rollback)
{
	struct bd_alloc *a;
	struct bd_extent e[8];
	uint32_t n;

	ck_assert_int_eq(bd_alloc_create(130, &a), 0);
	/* free: [10,20) [50,60) [100,130), everything else used */
	ck_assert_int_eq(bd_alloc_mark_used(a, 0, 10), 0);
	ck_assert_int_eq(bd_alloc_mark_used(a, 20, 30), 0);
	ck_assert_int_eq(bd_alloc_mark_used(a, 60, 40), 0);
	ck_assert_uint_eq(bd_alloc_free_blocks(a), 50);
	/* 45 blocks do not fit in 2 extents: refused, nothing taken */
	ck_assert_int_eq(bd_alloc_take(a, 45, e, 2, &n), -ENOSPC);
	ck_assert_uint_eq(bd_alloc_free_blocks(a), 50);
	/* 30 contiguous exist: one extent */
	ck_assert_int_eq(bd_alloc_take(a, 30, e, 8, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(e[0].start, 100);
	/* 20 more: the two holes of 10 */
	ck_assert_int_eq(bd_alloc_take(a, 20, e, 8, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(e[0].count + e[1].count, 20);
	ck_assert_uint_eq(bd_alloc_free_blocks(a), 0);
	bd_alloc_destroy(a);
}
END_TEST

START_TEST(errors_change_nothing)
{
	struct bd_alloc *a;

	ck_assert_int_eq(bd_alloc_create(0, &a), -EINVAL);
	ck_assert_int_eq(bd_alloc_create(100, &a), 0);
	ck_assert_int_eq(bd_alloc_mark_used(a, 90, 11), -ERANGE);
	ck_assert_int_eq(bd_alloc_mark_used(a, 100, 1), -ERANGE);
	ck_assert_int_eq(bd_alloc_mark_used(a, 0, 0), -ERANGE);
	ck_assert_int_eq(bd_alloc_mark_used(a, 10, 10), 0);
	/* overlapping claims at mount: the second is refused whole */
	ck_assert_int_eq(bd_alloc_mark_used(a, 5, 10), -EEXIST);
	ck_assert_uint_eq(bd_alloc_free_blocks(a), 90);
	/* double free, even partial, is refused whole */
	ck_assert_int_eq(bd_alloc_release(a, 15, 10), -EINVAL);
	ck_assert_uint_eq(bd_alloc_free_blocks(a), 90);
	ck_assert_int_eq(bd_alloc_release(a, 10, 10), 0);
	ck_assert_int_eq(bd_alloc_release(a, 10, 1), -EINVAL);
	ck_assert_uint_eq(bd_alloc_free_blocks(a), 100);
	bd_alloc_destroy(a);
}
END_TEST

/* Random takes and releases against a model array; after every step the
 * allocator's free count equals the model's, and nothing is handed out
 * twice. */
START_TEST(random_against_model)
{
	const uint64_t N = 777; /* not a multiple of 64 */
	struct bd_alloc *a;
	bool *model = calloc(N, 1);
	struct { uint64_t s, c; } held[2048];
	int nheld = 0;
	uint64_t r = 12345, freec = N;

	ck_assert_int_eq(bd_alloc_create(N, &a), 0);
	for (int step = 0; step < 20000; step++) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		if ((r & 3) != 0 && nheld < 2000) {
			struct bd_extent e[6];
			uint32_t n;
			uint64_t want = 1 + (r >> 8) % 40;
			int rc = bd_alloc_take(a, want, e, 6, &n);
			if (rc == 0) {
				uint64_t sum = 0;
				for (uint32_t i = 0; i < n; i++) {
					for (uint64_t b = e[i].start; b < e[i].start + e[i].count; b++) {
						ck_assert_uint_lt(b, N);
						ck_assert_msg(!model[b], "block %llu handed out twice",
							      (unsigned long long)b);
						model[b] = true;
					}
					sum += e[i].count;
					held[nheld].s = e[i].start;
					held[nheld].c = e[i].count;
					nheld++;
				}
				ck_assert_uint_eq(sum, want);
				freec -= want;
			} else {
				ck_assert_int_eq(rc, -ENOSPC);
			}
		} else if (nheld > 0) {
			int k = (int)((r >> 20) % (uint64_t)nheld);
			ck_assert_int_eq(bd_alloc_release(a, held[k].s, held[k].c), 0);
			for (uint64_t b = held[k].s; b < held[k].s + held[k].c; b++)
				model[b] = false;
			freec += held[k].c;
			held[k] = held[--nheld];
		}
		ck_assert_uint_eq(bd_alloc_free_blocks(a), freec);
	}
	/* rebuild from the model, as a mount rebuilds from extent maps */
	struct bd_alloc *b2;
	ck_assert_int_eq(bd_alloc_create(N, &b2), 0);
	for (int k = 0; k < nheld; k++)
		ck_assert_int_eq(bd_alloc_mark_used(b2, held[k].s, held[k].c), 0);
	ck_assert_uint_eq(bd_alloc_free_blocks(b2), freec);
	bd_alloc_destroy(b2);
	bd_alloc_destroy(a);
	free(model);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("bd_alloc");
	TCase *tc = tcase_create("alloc");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, fill_exactly_then_enospc);
	tcase_add_test(tc, fragmented_take_and_rollback);
	tcase_add_test(tc, errors_change_nothing);
	tcase_add_test(tc, random_against_model);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
