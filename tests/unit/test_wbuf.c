/* test_wbuf.c — the file client's write-back buffer (client/wbuf.h):
 * under random writes, sends and answers, what it holds always reads as
 * a plain reference does, its ranges stay sorted, apart and counted, and
 * what it sends, applied in answer order to a stand-in for the OSDs,
 * leaves them holding the reference. */
#include "wbuf.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define OBJ 65536u
#define NOBJ 3u

/* Ranges sorted, not touching, counted in bytes and dirty_bytes. */
static int
check_obj(void *arg, uint64_t key, void *val)
{
	uint64_t *sum = arg;
	const struct wb_obj *o = val;

	ck_assert_uint_eq(key, o->objno + 1);
	ck_assert_msg(o->ndirty || o->nsending, "an empty object is kept");
	for (size_t i = 0; i < o->ndirty; i++) {
		ck_assert_uint_gt(o->dirty[i].len, 0);
		ck_assert_uint_le(o->dirty[i].len, o->dirty[i].cap);
		ck_assert_uint_le(o->dirty[i].off + o->dirty[i].len, OBJ);
		if (i > 0)
			ck_assert_uint_gt(o->dirty[i].off,
					  o->dirty[i - 1].off + o->dirty[i - 1].len);
		sum[0] += o->dirty[i].len;
	}
	for (size_t i = 0; i < o->nsending; i++)
		sum[1] += o->sending[i].len;
	ck_assert_msg(o->nsending == 0 || o->inflight > 0, "sending with nothing in flight");
	return 0;
}

static void
check_counts(const struct wbuf *wb)
{
	uint64_t sum[2] = { 0, 0 };

	tsr_u64map_each(&wb->objs, check_obj, sum);
	ck_assert_uint_eq(wb->dirty_bytes, sum[0]);
	ck_assert_uint_eq(wb->bytes, sum[0] + sum[1]);
	ck_assert_int_eq(wb->dirty_since == 0, wb->dirty_bytes == 0);
}

START_TEST(merges)
{
	struct wbuf wb;
	uint8_t a[100], out[300];

	memset(a, 'a', sizeof(a));
	wb_init(&wb, 1, 42);
	ck_assert_uint_eq(wb_put(&wb, 0, 100, a, 100, 5), 100);
	ck_assert_uint_eq(wb_put(&wb, 0, 300, a, 100, 6), 100);
	ck_assert_int_eq(wb.dirty_since, 5);
	/* the gap between them is filled: one range of 300 */
	ck_assert_uint_eq(wb_put(&wb, 0, 200, a, 100, 7), 100);
	struct wb_obj *o = tsr_u64map_get(&wb.objs, 1);
	ck_assert_uint_eq(o->ndirty, 1);
	ck_assert_uint_eq(o->dirty[0].off, 100);
	ck_assert_uint_eq(o->dirty[0].len, 300);
	/* an overwrite inside it grows nothing; touching the end grows it */
	ck_assert_uint_eq(wb_put(&wb, 0, 150, "xy", 2, 8), 0);
	ck_assert_uint_eq(wb_put(&wb, 0, 400, "z", 1, 8), 1);
	ck_assert_int_eq(wb_get(&wb, 0, 149, 3, out), WB_COVERED);
	ck_assert_int_eq(memcmp(out, "axy", 3), 0);
	ck_assert_int_eq(wb_get(&wb, 0, 99, 2, out), WB_PARTIAL);
	ck_assert_int_eq(wb_get(&wb, 0, 0, 100, out), WB_NONE);
	ck_assert_int_eq(wb_get(&wb, 0, 401, 10, out), WB_NONE);
	ck_assert_int_eq(wb_get(&wb, 1, 100, 10, out), WB_NONE);
	/* a send: one in flight per object */
	uint64_t objs[4];
	ck_assert_uint_eq(wb_ready(&wb, 0, objs, 4), 1);
	o = wb_take(&wb, 0);
	ck_assert_ptr_nonnull(o);
	o->inflight = 2;
	ck_assert_int_eq(wb.dirty_since, 0);
	uint64_t upto = wb.gen; /* (5 writes so far) */
	ck_assert_uint_eq(upto, 5);
	ck_assert_int_eq(wb_pending(&wb, 1, upto), 1);
	ck_assert_uint_eq(wb_put(&wb, 0, 100, a, 10, 9), 10);
	ck_assert_uint_eq(wb_put(&wb, 2, 0, a, 10, 9), 10);
	ck_assert_int_eq(wb_pending(&wb, 3, upto), 0); /* newer only */
	ck_assert_int_eq(wb_pending(&wb, 3, upto + 2), 1);
	ck_assert_uint_eq(wb_ready(&wb, 0, objs, 4), 1); /* object 2 alone */
	ck_assert_uint_eq(objs[0], 2);
	ck_assert_uint_eq(wb_ready(&wb, 1, objs, 4), 0);
	ck_assert_ptr_null(wb_take(&wb, 0));
	ck_assert_int_eq(wb_in_flight(&wb, 0), 1);
	ck_assert_int_eq(wb_in_flight(&wb, 1), 1);
	ck_assert_int_eq(wb_in_flight(&wb, 2), 0);
	/* being sent: a read there waits; inside the newer dirty range, not */
	ck_assert_int_eq(wb_get(&wb, 0, 200, 10, out), WB_PARTIAL);
	ck_assert_int_eq(wb_get(&wb, 0, 100, 10, out), WB_COVERED);
	ck_assert_uint_eq(wb_sent(&wb, o, 0), 0);
	ck_assert_uint_eq(wb_sent(&wb, o, -5), 301);
	ck_assert_int_eq(wb.err, -5);
	ck_assert_uint_eq(wb.bytes, 20);
	/* what was held at upto is answered: the newer writes do not count */
	ck_assert_int_eq(wb_pending(&wb, 0, upto), 0);
	ck_assert_int_eq(wb_pending(&wb, 0, upto + 1), 1);
	check_counts(&wb);
	wb_free(&wb);
	ck_assert_uint_eq(wb.bytes, 0);
}
END_TEST

START_TEST(random_ops)
{
	static uint8_t ref[NOBJ][OBJ], osd[NOBJ][OBJ], buf[OBJ];
	struct wbuf wb;
	struct wb_obj *flying[NOBJ] = { NULL };
	unsigned seed = 12345;

	memset(ref, 0, sizeof(ref));
	memset(osd, 0, sizeof(osd));
	wb_init(&wb, 1, 7);
	for (int step = 0; step < 20000; step++) {
		int what = rand_r(&seed) % 10;
		uint64_t k = (uint64_t)rand_r(&seed) % NOBJ;
		uint64_t off = (uint64_t)rand_r(&seed) % OBJ;
		size_t len = 1 + (size_t)rand_r(&seed) % (rand_r(&seed) % 4 ? 64 : 8192);
		if (off + len > OBJ)
			len = (size_t)(OBJ - off);
		if (what < 6) { /* a write */
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)rand_r(&seed);
			wb_put(&wb, k, off, buf, len, (uint64_t)step + 1);
			memcpy(ref[k] + off, buf, len);
		} else if (what < 8) { /* a read: held, or the OSDs' (when nothing is held) */
			int r = wb_get(&wb, k, off, len, buf);
			if (r == WB_COVERED)
				ck_assert_int_eq(memcmp(buf, ref[k] + off, len), 0);
			else if (r == WB_NONE)
				ck_assert_int_eq(memcmp(osd[k] + off, ref[k] + off, len), 0);
		} else if (what == 8 && flying[k] == NULL) { /* a send starts */
			if ((flying[k] = wb_take(&wb, k)) != NULL)
				flying[k]->inflight = 1;
		} else if (flying[k]) { /* and is answered: the OSDs hold it */
			struct wb_obj *o = flying[k];
			for (size_t i = 0; i < o->nsending; i++)
				memcpy(osd[k] + o->sending[i].off, o->sending[i].data,
				       o->sending[i].len);
			wb_sent(&wb, o, 0);
			flying[k] = NULL;
		}
		if (step % 97 == 0)
			check_counts(&wb);
	}
	/* everything goes */
	for (int round = 0; round < 2; round++)
		for (uint64_t k = 0; k < NOBJ; k++) {
			struct wb_obj *o = flying[k] ? flying[k] : wb_take(&wb, k);
			if (o == NULL)
				continue;
			if (!flying[k])
				o->inflight = 1;
			for (size_t i = 0; i < o->nsending; i++)
				memcpy(osd[k] + o->sending[i].off, o->sending[i].data,
				       o->sending[i].len);
			wb_sent(&wb, o, 0);
			flying[k] = NULL;
		}
	ck_assert_uint_eq(wb.bytes, 0);
	ck_assert_uint_eq(wb.objs.n, 0);
	ck_assert_int_eq(wb.err, 0);
	ck_assert_int_eq(memcmp(osd, ref, sizeof(ref)), 0);
	wb_free(&wb);
}
END_TEST

static Suite *
wbuf_suite(void)
{
	Suite *s = suite_create("wbuf");
	TCase *tc = tcase_create("wbuf");

	tcase_add_test(tc, merges);
	tcase_add_test(tc, random_ops);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(wbuf_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
