/* test_map.c — the cluster maps (core/map): encodings round trip, an
 * incremental computed from two maps brings a copy of the first exactly to
 * the second over a long random history, and decoders and checks refuse
 * hostile input. */
#include "map/mdsmap.h"
#include "map/osdmap.h"

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char err[512];
static uint64_t rng = 88172645463325252ull;

static uint32_t
rnd(uint32_t n)
{
	return (uint32_t)(tu_rnd(&rng) % n);
}

static uint8_t *
osd_bytes(const struct tsr_osdmap *m, size_t *len)
{
	struct tsr_enc e;

	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_osdmap_encode(&e, m), 0);
	return tsr_enc_take(&e, len);
}

static void
assert_same(const struct tsr_osdmap *a, const struct tsr_osdmap *b)
{
	size_t la, lb;
	uint8_t *x = osd_bytes(a, &la), *y = osd_bytes(b, &lb);

	ck_assert_uint_eq(la, lb);
	ck_assert_int_eq(memcmp(x, y, la), 0);
	free(x);
	free(y);
}

static void
add_osd(struct tsr_osdmap *m, int32_t id)
{
	struct tsr_osdmap_osd o;
	size_t at;

	memset(&o, 0, sizeof(o));
	o.id = id;
	snprintf(o.host, sizeof(o.host), "host%u", rnd(20));
	if (rnd(2))
		snprintf(o.rack, sizeof(o.rack), "rack%u", rnd(4));
	if (rnd(2))
		snprintf(o.addr, sizeof(o.addr), "127.0.0.1:%u", 6800 + rnd(1000));
	o.weight = 0.5 + rnd(8);
	o.reweight = rnd(5) / 4.0;
	o.in = (uint8_t)rnd(2);
	o.up = (uint8_t)rnd(2);
	m->osds = realloc(m->osds, (m->nosds + 1) * sizeof(o));
	for (at = 0; at < m->nosds && m->osds[at].id < id; at++)
		;
	memmove(&m->osds[at + 1], &m->osds[at], (m->nosds - at) * sizeof(o));
	m->osds[at] = o;
	m->nosds++;
}

/* One random change, and the epoch that goes with it. */
static void
mutate(struct tsr_osdmap *m)
{
	uint32_t what = rnd(9);

	m->epoch++;
	if (what == 0 || m->nosds == 0) {
		int32_t id = (int32_t)rnd(TSR_OSDMAP_MAX_OSDS);
		if (tsr_osdmap_osd(m, id) == NULL)
			add_osd(m, id);
	} else if (what == 1) {
		size_t at = rnd((uint32_t)m->nosds);
		memmove(&m->osds[at], &m->osds[at + 1],
			(m->nosds - at - 1) * sizeof(*m->osds));
		m->nosds--;
	} else if (what == 2) {
		struct tsr_osdmap_osd *o = &m->osds[rnd((uint32_t)m->nosds)];
		o->up = !o->up;
		if (o->up)
			o->up_from = m->epoch;
	} else if (what == 3) {
		struct tsr_osdmap_osd *o = &m->osds[rnd((uint32_t)m->nosds)];
		o->in = !o->in;
		o->reweight = rnd(3) / 2.0;
		o->auto_out = !o->in && rnd(2);
	} else if (what == 4 && m->npools < 20) {
		struct tsr_osdmap_pool p;
		memset(&p, 0, sizeof(p));
		p.id = m->next_pool_id++;
		snprintf(p.name, sizeof(p.name), "pool%" PRId64, p.id);
		p.pg_num = 1 + rnd(256);
		p.size = 1 + rnd(5);
		p.min_size = 1 + rnd(p.size);
		p.rule = rnd(3);
		snprintf(p.redundancy, sizeof(p.redundancy), "replica");
		if (rnd(2))
			snprintf(p.redundancy_opts, sizeof(p.redundancy_opts), "k=%u,m=2",
				 rnd(8));
		m->pools = realloc(m->pools, (m->npools + 1) * sizeof(p));
		m->pools[m->npools++] = p;
	} else if (what == 5 && m->npools) {
		size_t at = rnd((uint32_t)m->npools);
		memmove(&m->pools[at], &m->pools[at + 1],
			(m->npools - at - 1) * sizeof(*m->pools));
		m->npools--;
	} else if (what == 6 && m->npools) {
		m->pools[rnd((uint32_t)m->npools)].pg_num *= 2;
	} else if (what == 7) {
		size_t n = rnd(64);
		free(m->pmap);
		m->pmap = malloc(n ? n : 1);
		for (size_t i = 0; i < n; i++)
			((uint8_t *)m->pmap)[i] = (uint8_t)rnd(256);
		m->pmap_len = n;
		snprintf(m->placement, sizeof(m->placement), "%s",
			 rnd(2) ? "crush" : "hrw");
	} else {
		m->flags ^= TSR_OSDMAP_NOOUT;
	}
	for (size_t i = 0; i < m->npools; i++)
		if (m->pools[i].pg_num > TSR_OSDMAP_MAX_PG_NUM)
			m->pools[i].pg_num = 1;
}

START_TEST(osdmap_incrementals_follow_history)
{
	struct tsr_osdmap leader, follower, prev;
	size_t empty = 0, full = 0;

	tsr_osdmap_init(&leader);
	tsr_osdmap_init(&follower);
	for (int step = 0; step < 2000; step++) {
		struct tsr_osdmap_inc inc, dec;
		struct tsr_enc e;
		uint8_t *buf;
		size_t len;

		ck_assert_int_eq(tsr_osdmap_copy(&prev, &leader), 0);
		mutate(&leader);
		ck_assert_msg(tsr_osdmap_check(&leader, err, sizeof(err)) == 0, "%s", err);
		ck_assert_int_eq(tsr_osdmap_diff(&prev, &leader, &inc), 0);
		empty += inc.nosds + inc.nosd_rm + inc.npools + inc.npool_rm == 0;
		full += inc.nosds == leader.nosds && leader.nosds > 4;
		tsr_enc_init(&e);
		ck_assert_int_eq(tsr_osdmap_inc_encode(&e, &inc), 0);
		buf = tsr_enc_take(&e, &len);
		ck_assert_msg(tsr_osdmap_inc_decode(buf, len, &dec, err, sizeof(err)) == 0,
			      "%s", err);
		/* an incremental for another epoch is refused, the map kept */
		dec.epoch++;
		ck_assert_int_eq(tsr_osdmap_apply(&follower, &dec, err, sizeof(err)),
				 -ESTALE);
		dec.epoch--;
		ck_assert_msg(tsr_osdmap_apply(&follower, &dec, err, sizeof(err)) == 0,
			      "step %d: %s", step, err);
		assert_same(&follower, &leader);
		free(buf);
		tsr_osdmap_inc_free(&inc);
		tsr_osdmap_inc_free(&dec);
		tsr_osdmap_free(&prev);
	}
	/* the history had changes that touched no record, and no change
	 * sent every OSD again */
	ck_assert_uint_gt(empty, 100);
	ck_assert_uint_eq(full, 0);
	ck_assert_uint_gt(leader.nosds, 10);
	tsr_osdmap_free(&leader);
	tsr_osdmap_free(&follower);
}
END_TEST

static struct tsr_osdmap
sample(void)
{
	struct tsr_osdmap m;

	tsr_osdmap_init(&m);
	for (int i = 0; i < 300; i++)
		mutate(&m);
	ck_assert_int_eq(tsr_osdmap_check(&m, err, sizeof(err)), 0);
	return m;
}

START_TEST(osdmap_hostile_input)
{
	struct tsr_osdmap m = sample(), d;
	size_t len;
	uint8_t *buf = osd_bytes(&m, &len);

	ck_assert_msg(tsr_osdmap_decode(buf, len, &d, err, sizeof(err)) == 0, "%s", err);
	assert_same(&m, &d);
	tsr_osdmap_free(&d);
	/* every truncation fails, and names what it was */
	for (size_t n = 0; n < len; n++) {
		err[0] = '\0';
		ck_assert_int_lt(tsr_osdmap_decode(buf, n, &d, err, sizeof(err)), 0);
		ck_assert_msg(strstr(err, "OSD map") != NULL, "%s", err);
	}
	/* trailing bytes are refused */
	uint8_t *longer = malloc(len + 1);
	memcpy(longer, buf, len);
	longer[len] = 0;
	ck_assert_int_eq(tsr_osdmap_decode(longer, len + 1, &d, err, sizeof(err)),
			 -EBADMSG);
	free(longer);
	/* flipped bytes: refused or a sane map, never a crash (ASan) */
	for (int round = 0; round < 3000; round++) {
		uint8_t *c = malloc(len);
		memcpy(c, buf, len);
		for (int k = 0; k < 1 + (int)rnd(4); k++)
			c[rnd((uint32_t)len)] ^= (uint8_t)(1u << rnd(8));
		if (tsr_osdmap_decode(c, len, &d, err, sizeof(err)) == 0) {
			ck_assert_int_eq(tsr_osdmap_check(&d, err, sizeof(err)), 0);
			tsr_osdmap_free(&d);
		}
		free(c);
	}
	free(buf);
	/* a count the input cannot back is refused before allocating */
	struct tsr_enc e;
	tsr_enc_init(&e);
	size_t mk = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u64(&e, 5);
	tsr_enc_u32(&e, 0);
	tsr_enc_i64(&e, 1);
	tsr_enc_str(&e, "");
	tsr_enc_bytes(&e, NULL, 0);
	tsr_enc_u32(&e, TSR_OSDMAP_MAX_OSDS);
	tsr_enc_end_struct(&e, mk);
	buf = tsr_enc_take(&e, &len);
	ck_assert_int_eq(tsr_osdmap_decode(buf, len, &d, err, sizeof(err)), -EBADMSG);
	free(buf);
	tsr_osdmap_free(&m);
}
END_TEST

/* Each case breaks one rule of a sane map. */
START_TEST(osdmap_check_refuses)
{
	struct tsr_osdmap m = sample(), c;
	const int i = _i;

	ck_assert_uint_gt(m.nosds, 2);
	ck_assert_uint_gt(m.npools, 1);
	ck_assert_int_eq(tsr_osdmap_copy(&c, &m), 0);
	switch (i) {
	case 0: c.osds[0].id = -1; break;
	case 1: c.osds[0].weight = 0; break;
	case 2: c.osds[0].reweight = 1.5; break;
	case 3: snprintf(c.osds[0].host, sizeof(c.osds[0].host), "a b"); break;
	case 4: c.pools[0].min_size = c.pools[0].size + 1; break;
	case 5: memcpy(c.pools[1].name, c.pools[0].name, sizeof(c.pools[0].name)); break;
	case 6: c.next_pool_id = c.pools[c.npools - 1].id; break;
	case 7: c.flags |= 0x80; break;
	case 8: c.osds[0].up_from = c.epoch + 5; break;
	case 9: c.pools[0].pg_num = 0; break;
	}
	ck_assert_int_eq(tsr_osdmap_check(&c, err, sizeof(err)), -EINVAL);
	ck_assert_uint_gt(strlen(err), 5);
	/* and an incremental that would make such a map is refused, the
	 * map kept as it was */
	struct tsr_osdmap_inc inc;
	struct tsr_osdmap before;
	c.epoch = m.epoch + 1;
	ck_assert_int_eq(tsr_osdmap_diff(&m, &c, &inc), 0);
	ck_assert_int_eq(tsr_osdmap_copy(&before, &m), 0);
	ck_assert_int_eq(tsr_osdmap_apply(&m, &inc, err, sizeof(err)), -EINVAL);
	assert_same(&m, &before);
	tsr_osdmap_inc_free(&inc);
	tsr_osdmap_free(&before);
	tsr_osdmap_free(&c);
	tsr_osdmap_free(&m);
}
END_TEST

START_TEST(osdmap_inc_removing_missing)
{
	struct tsr_osdmap m = sample();
	struct tsr_osdmap_inc inc;
	int32_t gone = -1;

	for (int32_t id = 0; gone < 0; id++)
		if (tsr_osdmap_osd(&m, id) == NULL)
			gone = id;
	memset(&inc, 0, sizeof(inc));
	inc.epoch = m.epoch + 1;
	inc.next_pool_id = m.next_pool_id;
	inc.osd_rm = &gone;
	inc.nosd_rm = 1;
	ck_assert_int_eq(tsr_osdmap_apply(&m, &inc, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "lacks") != NULL, "%s", err);
	tsr_osdmap_free(&m);
}
END_TEST

/* ---- MDS map -----------------------------------------------------------------*/

static uint8_t *
mds_bytes(const struct tsr_mdsmap *m, size_t *len)
{
	struct tsr_enc e;

	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_mdsmap_encode(&e, m), 0);
	return tsr_enc_take(&e, len);
}

/* A random sane change: boot a standby, remove one, give a vacant rank to
 * a standby, move a rank holder on, change max_mds. */
static void
mds_mutate(struct tsr_mdsmap *m)
{
	uint32_t what = rnd(5);

	m->epoch++;
	if (what == 0 || m->nmds == 0) {
		char name[TSR_MDSMAP_NAME];
		snprintf(name, sizeof(name), "m%u", rnd(40));
		if (tsr_mdsmap_find(m, name))
			return;
		size_t at;
		for (at = 0; at < m->nmds && strcmp(m->mds[at].name, name) < 0; at++)
			;
		m->mds = realloc(m->mds, (m->nmds + 1) * sizeof(*m->mds));
		memmove(&m->mds[at + 1], &m->mds[at], (m->nmds - at) * sizeof(*m->mds));
		memset(&m->mds[at], 0, sizeof(*m->mds));
		memcpy(m->mds[at].name, name, sizeof(name));
		m->mds[at].gid = rng;
		snprintf(m->mds[at].addr, sizeof(m->mds[at].addr), "127.0.0.1:%u",
			 7000 + rnd(100));
		m->mds[at].rank = -1;
		m->mds[at].state = TSR_MDS_STANDBY;
		m->nmds++;
	} else if (what == 1) {
		size_t at = rnd((uint32_t)m->nmds);
		memmove(&m->mds[at], &m->mds[at + 1], (m->nmds - at - 1) * sizeof(*m->mds));
		m->nmds--;
	} else if (what == 2) {
		for (uint32_t r = 0; r < m->max_mds; r++)
			if (tsr_mdsmap_rank(m, (int32_t)r) == NULL)
				for (size_t i = 0; i < m->nmds; i++)
					if (m->mds[i].state == TSR_MDS_STANDBY) {
						m->mds[i].rank = (int32_t)r;
						m->mds[i].state = TSR_MDS_REPLAY;
						return;
					}
	} else if (what == 3) {
		for (size_t i = 0; i < m->nmds; i++)
			if (m->mds[i].state == TSR_MDS_REPLAY) {
				m->mds[i].state = TSR_MDS_ACTIVE;
				return;
			}
	} else if (m->max_mds < 4) {
		m->max_mds++;
	}
}

START_TEST(mdsmap_incrementals_and_refusals)
{
	struct tsr_mdsmap leader, follower, prev, d;
	size_t len;
	uint8_t *buf;

	tsr_mdsmap_init(&leader);
	tsr_mdsmap_init(&follower);
	for (int step = 0; step < 1000; step++) {
		struct tsr_mdsmap_inc inc, dec;
		struct tsr_enc e;
		size_t la, lb;

		ck_assert_int_eq(tsr_mdsmap_copy(&prev, &leader), 0);
		mds_mutate(&leader);
		ck_assert_msg(tsr_mdsmap_check(&leader, err, sizeof(err)) == 0, "%s", err);
		ck_assert_int_eq(tsr_mdsmap_diff(&prev, &leader, &inc), 0);
		tsr_enc_init(&e);
		ck_assert_int_eq(tsr_mdsmap_inc_encode(&e, &inc), 0);
		buf = tsr_enc_take(&e, &len);
		ck_assert_int_eq(tsr_mdsmap_inc_decode(buf, len, &dec, err, sizeof(err)), 0);
		ck_assert_msg(tsr_mdsmap_apply(&follower, &dec, err, sizeof(err)) == 0,
			      "%s", err);
		free(buf);
		uint8_t *x = mds_bytes(&leader, &la), *y = mds_bytes(&follower, &lb);
		ck_assert_uint_eq(la, lb);
		ck_assert_int_eq(memcmp(x, y, la), 0);
		free(x);
		free(y);
		tsr_mdsmap_inc_free(&inc);
		tsr_mdsmap_inc_free(&dec);
		tsr_mdsmap_free(&prev);
	}
	/* the history ends where rank 0 is held and another MDS exists (the
	 * refusals below need both) */
	for (int k = 0; k < 1000 && (tsr_mdsmap_rank(&leader, 0) == NULL ||
				     leader.nmds < 2); k++)
		mds_mutate(&leader);
	ck_assert_ptr_nonnull(tsr_mdsmap_rank(&leader, 0));
	buf = mds_bytes(&leader, &len);
	ck_assert_int_eq(tsr_mdsmap_decode(buf, len, &d, err, sizeof(err)), 0);
	tsr_mdsmap_free(&d);
	for (size_t n = 0; n < len; n++)
		ck_assert_int_lt(tsr_mdsmap_decode(buf, n, &d, err, sizeof(err)), 0);
	free(buf);
	/* a rank held twice, a standby with a rank, a rank past max_mds, an
	 * unknown state: each refused */
	struct tsr_mdsmap_mds *holder = tsr_mdsmap_rank(&leader, 0);
	ck_assert_uint_gt(leader.nmds, 1);
	struct tsr_mdsmap_mds *other = holder == &leader.mds[0] ? &leader.mds[1]
								 : &leader.mds[0];
	struct tsr_mdsmap_mds keep = *other;
	other->rank = 0;
	other->state = TSR_MDS_ACTIVE;
	ck_assert_int_eq(tsr_mdsmap_check(&leader, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "held by") != NULL, "%s", err);
	other->state = TSR_MDS_STANDBY;
	ck_assert_int_eq(tsr_mdsmap_check(&leader, err, sizeof(err)), -EINVAL);
	other->rank = (int32_t)leader.max_mds;
	other->state = TSR_MDS_REPLAY;
	ck_assert_int_eq(tsr_mdsmap_check(&leader, err, sizeof(err)), -EINVAL);
	*other = keep;
	other->state = TSR_MDS_STATE_COUNT;
	ck_assert_int_eq(tsr_mdsmap_check(&leader, err, sizeof(err)), -EINVAL);
	*other = keep;
	ck_assert_int_eq(tsr_mdsmap_check(&leader, err, sizeof(err)), 0);
	ck_assert_str_eq(tsr_mds_state_name(TSR_MDS_ACTIVE), "active");
	ck_assert_ptr_null(tsr_mds_state_name(TSR_MDS_STATE_COUNT));
	tsr_mdsmap_free(&leader);
	tsr_mdsmap_free(&follower);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("map");
	TCase *tc = tcase_create("map");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, osdmap_incrementals_follow_history);
	tcase_add_test(tc, osdmap_hostile_input);
	tcase_add_loop_test(tc, osdmap_check_refuses, 0, 10);
	tcase_add_test(tc, osdmap_inc_removing_missing);
	tcase_add_test(tc, mdsmap_incrementals_and_refusals);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
