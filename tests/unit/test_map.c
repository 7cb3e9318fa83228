/* test_map.c — the cluster maps (core/map): encodings round trip (and
 * version 1 still decodes), an incremental computed from two maps brings a
 * copy of the first exactly to the second over a long random history (with
 * up_thru and PG temp mappings), apply agrees with a rebuild-and-check
 * model on random and broken incrementals and changes the map in place,
 * and decoders and checks refuse hostile input. */
#include "map/mdsmap.h"
#include "map/osdmap.h"
#include "util/util.h"

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

static int
cmp_pgid(int64_t pa, uint32_t ga, int64_t pb, uint32_t gb)
{
	if (pa != pb)
		return pa < pb ? -1 : 1;
	return ga < gb ? -1 : ga > gb;
}

/* Set (n > 0) or drop (n = 0) the PG temp mapping of pool.pg, keeping the
 * list sorted. */
static void
set_pg_temp(struct tsr_osdmap *m, int64_t pool, uint32_t pg, const int32_t *osds,
	    uint32_t n)
{
	size_t at;

	for (at = 0; at < m->npg_temp && cmp_pgid(m->pg_temp[at].pgid.pool,
						  m->pg_temp[at].pgid.pg, pool, pg) < 0; at++)
		;
	if (at < m->npg_temp && cmp_pgid(m->pg_temp[at].pgid.pool, m->pg_temp[at].pgid.pg,
					 pool, pg) == 0) {
		if (n == 0) {
			memmove(&m->pg_temp[at], &m->pg_temp[at + 1],
				(m->npg_temp - at - 1) * sizeof(*m->pg_temp));
			m->npg_temp--;
			return;
		}
	} else {
		if (n == 0)
			return;
		m->pg_temp = realloc(m->pg_temp, (m->npg_temp + 1) * sizeof(*m->pg_temp));
		memmove(&m->pg_temp[at + 1], &m->pg_temp[at],
			(m->npg_temp - at) * sizeof(*m->pg_temp));
		m->npg_temp++;
	}
	memset(&m->pg_temp[at], 0, sizeof(*m->pg_temp));
	m->pg_temp[at].pgid.pool = pool;
	m->pg_temp[at].pgid.pg = pg;
	m->pg_temp[at].n = n;
	memcpy(m->pg_temp[at].osds, osds, n * sizeof(*osds));
}

/* Drop the PG temp mappings of pool from pg up (the pool went or shrank). */
static void
drop_pg_temp(struct tsr_osdmap *m, int64_t pool, uint32_t pg)
{
	size_t k = 0;

	for (size_t i = 0; i < m->npg_temp; i++)
		if (m->pg_temp[i].pgid.pool != pool || m->pg_temp[i].pgid.pg < pg)
			m->pg_temp[k++] = m->pg_temp[i];
	m->npg_temp = k;
}

/* A random PG temp mapping on a PG of m (which has a pool). */
static void
random_pg_temp(struct tsr_osdmap *m)
{
	const struct tsr_osdmap_pool *p = &m->pools[rnd((uint32_t)m->npools)];
	int32_t osds[TSR_OSDMAP_MAX_SIZE];
	uint32_t n = 1 + rnd(4);

	for (uint32_t i = 0; i < n; i++) {
		int dup;
		do {
			/* mostly OSDs of the map, sometimes ids it lacks */
			osds[i] = m->nosds && rnd(4) ? m->osds[rnd((uint32_t)m->nosds)].id
						     : (int32_t)rnd(TSR_OSDMAP_MAX_OSDS);
			dup = 0;
			for (uint32_t j = 0; j < i; j++)
				dup |= osds[j] == osds[i];
		} while (dup);
	}
	set_pg_temp(m, p->id, rnd(p->pg_num), osds, n);
}

/* A client blocklisted, its entry moved, or one removed (no epoch: it
 * goes with mutate's), as k says: mutate's random sequence stays as the
 * other cases know it. */
static void
mutate_blocklist(struct tsr_osdmap *m, uint32_t k)
{
	if (k % 3 != 2 && m->nblocklist < 30) {
		uint64_t id = 1 + (k * 7919u) % 40;
		size_t at = 0;
		while (at < m->nblocklist && m->blocklist[at].client < id)
			at++;
		if (at == m->nblocklist || m->blocklist[at].client != id) {
			m->blocklist = realloc(m->blocklist,
					       (m->nblocklist + 1) * sizeof(*m->blocklist));
			memmove(&m->blocklist[at + 1], &m->blocklist[at],
				(m->nblocklist - at) * sizeof(*m->blocklist));
			m->nblocklist++;
			m->blocklist[at].client = id;
		}
		m->blocklist[at].until = 1000 + (k * 104729u) % 1000;
	} else if (m->nblocklist) {
		size_t at = (k * 31u) % m->nblocklist;
		memmove(&m->blocklist[at], &m->blocklist[at + 1],
			(m->nblocklist - at - 1) * sizeof(*m->blocklist));
		m->nblocklist--;
	}
}

/* One random change, and the epoch that goes with it. */
static void
mutate(struct tsr_osdmap *m)
{
	uint32_t what = rnd(12);

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
		drop_pg_temp(m, m->pools[at].id, 0);
		memmove(&m->pools[at], &m->pools[at + 1],
			(m->npools - at - 1) * sizeof(*m->pools));
		m->npools--;
	} else if (what == 6 && m->npools) {
		struct tsr_osdmap_pool *p = &m->pools[rnd((uint32_t)m->npools)];
		if (rnd(2)) {
			p->pg_num *= 2;
		} else {
			/* the map allows shrinking; its PG temp mappings
			 * above the new pg_num go with it */
			p->pg_num = p->pg_num > 1 ? p->pg_num / 2 : 1;
			drop_pg_temp(m, p->id, p->pg_num);
		}
	} else if (what == 7) {
		size_t n = rnd(64);
		free(m->pmap);
		m->pmap = malloc(n ? n : 1);
		for (size_t i = 0; i < n; i++)
			((uint8_t *)m->pmap)[i] = (uint8_t)rnd(256);
		m->pmap_len = n;
		snprintf(m->placement, sizeof(m->placement), "%s",
			 rnd(2) ? "crush" : "hrw");
	} else if (what == 9) {
		/* a primary asked to be known up through this epoch */
		m->osds[rnd((uint32_t)m->nosds)].up_thru = m->epoch;
	} else if (what == 10 && m->npools) {
		random_pg_temp(m);
	} else if (what == 11 && m->npg_temp) {
		const struct tsr_osdmap_pg_temp *t = &m->pg_temp[rnd((uint32_t)m->npg_temp)];
		set_pg_temp(m, t->pgid.pool, t->pgid.pg, NULL, 0);
	} else {
		m->flags ^= TSR_OSDMAP_NOOUT;
	}
	for (size_t i = 0; i < m->npools; i++)
		if (m->pools[i].pg_num > TSR_OSDMAP_MAX_PG_NUM) {
			m->pools[i].pg_num = 1 + rnd(4);
			drop_pg_temp(m, m->pools[i].id, m->pools[i].pg_num);
		}
}

START_TEST(osdmap_incrementals_follow_history)
{
	struct tsr_osdmap leader, follower, prev;
	size_t empty = 0, full = 0, pg_temp = 0, thru = 0, most = 0, blocks = 0;

	tsr_osdmap_init(&leader);
	tsr_osdmap_init(&follower);
	for (int step = 0; step < 2000; step++) {
		struct tsr_osdmap_inc inc, dec;
		struct tsr_enc e;
		uint8_t *buf;
		size_t len;

		ck_assert_int_eq(tsr_osdmap_copy(&prev, &leader), 0);
		mutate(&leader);
		if (step % 4 == 0)
			mutate_blocklist(&leader, (uint32_t)step / 4);
		ck_assert_msg(tsr_osdmap_check(&leader, err, sizeof(err)) == 0, "%s", err);
		ck_assert_int_eq(tsr_osdmap_diff(&prev, &leader, &inc), 0);
		empty += inc.nosds + inc.nosd_rm + inc.npools + inc.npool_rm == 0;
		full += inc.nosds == leader.nosds && leader.nosds > 4;
		pg_temp += inc.npg_temp + inc.npg_temp_rm;
		blocks += inc.nblocklist + inc.nblocklist_rm;
		most = leader.npg_temp > most ? leader.npg_temp : most;
		for (size_t i = 0; i < inc.nosds; i++)
			thru += inc.osds[i].up_thru == inc.epoch;
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
	/* and carried PG temp mappings and up_thru both ways */
	ck_assert_uint_gt(pg_temp, 100);
	ck_assert_uint_gt(thru, 50);
	ck_assert_uint_gt(most, 3);
	/* and blocklist entries, added, moved and removed */
	ck_assert_uint_gt(blocks, 100);
	ck_assert_uint_gt(leader.nblocklist, 3);
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
	for (int i = 0; i < 100 && m.npools && m.npg_temp < 4; i++)
		random_pg_temp(&m);
	ck_assert_msg(tsr_osdmap_check(&m, err, sizeof(err)) == 0, "%s", err);
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
	/* nor a count of PG temp mappings, nor more OSDs in one than the
	 * fixed array holds (the bytes for them present) */
	for (int k = 0; k < 2; k++) {
		tsr_enc_init(&e);
		mk = tsr_enc_begin_struct(&e, 2, 1);
		tsr_enc_u64(&e, 5);
		tsr_enc_u32(&e, 0);
		tsr_enc_i64(&e, 2);
		tsr_enc_str(&e, "");
		tsr_enc_bytes(&e, NULL, 0);
		tsr_enc_u32(&e, 0);
		tsr_enc_u32(&e, 0);
		tsr_enc_u32(&e, k == 0 ? TSR_OSDMAP_MAX_PG_TEMP : 1);
		tsr_enc_i64(&e, 1);
		tsr_enc_u32(&e, 0);
		tsr_enc_u32(&e, TSR_OSDMAP_MAX_SIZE + 1);
		for (int i = 0; i <= TSR_OSDMAP_MAX_SIZE; i++)
			tsr_enc_i32(&e, i);
		tsr_enc_end_struct(&e, mk);
		buf = tsr_enc_take(&e, &len);
		ck_assert_int_eq(tsr_osdmap_decode(buf, len, &d, err, sizeof(err)),
				 -EBADMSG);
		free(buf);
	}
	/* the same for an incremental's PG temp lists */
	for (int k = 0; k < 2; k++) {
		struct tsr_osdmap_inc inc;
		tsr_enc_init(&e);
		mk = tsr_enc_begin_struct(&e, 2, 1);
		tsr_enc_u64(&e, 5);
		tsr_enc_u32(&e, 0);
		tsr_enc_i64(&e, 2);
		tsr_enc_u8(&e, 0);
		for (int i = 0; i < 4; i++)
			tsr_enc_u32(&e, 0);
		tsr_enc_u32(&e, k == 0 ? 0 : TSR_OSDMAP_MAX_PG_TEMP);
		tsr_enc_u32(&e, k == 0 ? TSR_OSDMAP_MAX_PG_TEMP + 1 : 0);
		tsr_enc_end_struct(&e, mk);
		buf = tsr_enc_take(&e, &len);
		ck_assert_int_eq(tsr_osdmap_inc_decode(buf, len, &inc, err, sizeof(err)),
				 -EBADMSG);
		free(buf);
	}
	tsr_osdmap_free(&m);
}
END_TEST

/* Encodings written before up_thru and PG temp existed (version 1; these
 * bytes come from that code, and monitors' snapshots hold such maps)
 * still decode, and an incremental of that version still applies. */
static const uint8_t v1_map[] = {
	0x01, 0x01, 0xde, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x63, 0x72, 0x75, 0x73, 0x68, 0x03,
	0x00, 0x00, 0x00, 0x61, 0x62, 0x63, 0x02, 0x00, 0x00, 0x00, 0x01, 0x01,
	0x3c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
	0x68, 0x31, 0x02, 0x00, 0x00, 0x00, 0x72, 0x31, 0x0d, 0x00, 0x00, 0x00,
	0x31, 0x30, 0x2e, 0x30, 0x2e, 0x30, 0x2e, 0x31, 0x3a, 0x36, 0x38, 0x30,
	0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0xf0, 0x3f, 0x01, 0x01, 0x00, 0x04, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x2d, 0x00, 0x00, 0x00, 0x05, 0x00,
	0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x68, 0x32, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0x3f, 0x00, 0x00, 0x01, 0x06,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
	0x01, 0x37, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x04, 0x00, 0x00, 0x00, 0x64, 0x61, 0x74, 0x61, 0x40, 0x00, 0x00,
	0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x07, 0x00, 0x00, 0x00, 0x72, 0x65, 0x70, 0x6c, 0x69, 0x63, 0x61,
	0x08, 0x00, 0x00, 0x00, 0x63, 0x6f, 0x70, 0x69, 0x65, 0x73, 0x3d, 0x33,
};
/* epoch 8: osd.5 boots (up, in, up_from 8) */
static const uint8_t v1_inc[] = {
	0x01, 0x01, 0x58, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x2d, 0x00, 0x00,
	0x00, 0x05, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x68, 0x32, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0x3f, 0x01,
	0x01, 0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

/* A blocklisted client is refused until its entry ends; the list must
 * be sorted, and an incremental's lists too. */
START_TEST(osdmap_blocklist)
{
	struct tsr_osdmap m, next;
	struct tsr_osdmap_inc inc;

	tsr_osdmap_init(&m);
	m.blocklist = calloc(2, sizeof(*m.blocklist));
	m.blocklist[0] = (struct tsr_osdmap_block){ .client = 0x10, .until = 500 };
	m.blocklist[1] = (struct tsr_osdmap_block){ .client = 0x20, .until = 900 };
	m.nblocklist = 2;
	ck_assert_msg(tsr_osdmap_check(&m, err, sizeof(err)) == 0, "%s", err);
	ck_assert(tsr_osdmap_blocked(&m, 0x10, 499));
	ck_assert(!tsr_osdmap_blocked(&m, 0x10, 500));
	ck_assert(tsr_osdmap_blocked(&m, 0x20, 500));
	ck_assert(!tsr_osdmap_blocked(&m, 0x30, 0));
	/* an incremental adding one and removing another */
	ck_assert_int_eq(tsr_osdmap_copy(&next, &m), 0);
	next.epoch++;
	next.blocklist[0] = (struct tsr_osdmap_block){ .client = 0x15, .until = 700 };
	ck_assert_int_eq(tsr_osdmap_diff(&m, &next, &inc), 0);
	ck_assert_uint_eq(inc.nblocklist, 1);
	ck_assert_uint_eq(inc.nblocklist_rm, 1);
	ck_assert_msg(tsr_osdmap_apply(&m, &inc, err, sizeof(err)) == 0, "%s", err);
	assert_same(&m, &next);
	ck_assert(tsr_osdmap_blocked(&m, 0x15, 600));
	ck_assert(!tsr_osdmap_blocked(&m, 0x10, 0));
	/* removing what the map lacks is refused, the map kept */
	inc.epoch = m.epoch + 1;
	inc.nblocklist = 0;
	ck_assert_int_eq(tsr_osdmap_apply(&m, &inc, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "client 10") != NULL, "%s", err);
	tsr_osdmap_inc_free(&inc);
	/* out of order */
	next.blocklist[0].client = 0x30;
	ck_assert_int_eq(tsr_osdmap_check(&next, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "blocklist out of order") != NULL, "%s", err);
	tsr_osdmap_free(&next);
	tsr_osdmap_free(&m);
}
END_TEST

START_TEST(osdmap_reads_version_1)
{
	struct tsr_osdmap m, again;
	struct tsr_osdmap_inc inc;
	size_t len;
	uint8_t *buf;

	ck_assert_msg(tsr_osdmap_decode(v1_map, sizeof(v1_map), &m, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(m.epoch, 7);
	ck_assert_uint_eq(m.flags, TSR_OSDMAP_NOOUT);
	ck_assert_str_eq(m.placement, "crush");
	ck_assert_uint_eq(m.pmap_len, 3);
	ck_assert_uint_eq(m.nosds, 2);
	ck_assert_str_eq(m.osds[0].addr, "10.0.0.1:6800");
	ck_assert_uint_eq(m.osds[0].up_from, 4);
	ck_assert_uint_eq(m.osds[0].up_thru, 0);
	ck_assert_int_eq(m.osds[1].id, 5);
	ck_assert(m.osds[1].auto_out && !m.osds[1].up);
	ck_assert_uint_eq(m.npools, 1);
	ck_assert_str_eq(m.pools[0].redundancy_opts, "copies=3");
	ck_assert_uint_eq(m.npg_temp, 0);
	/* written again it is version 3, and reads back the same */
	buf = osd_bytes(&m, &len);
	ck_assert_uint_eq(buf[0], 3);
	ck_assert_uint_eq(buf[1], 1);
	ck_assert_int_eq(tsr_osdmap_decode(buf, len, &again, err, sizeof(err)), 0);
	assert_same(&m, &again);
	free(buf);
	tsr_osdmap_free(&again);

	ck_assert_msg(tsr_osdmap_inc_decode(v1_inc, sizeof(v1_inc), &inc, err,
					    sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(inc.npg_temp + inc.npg_temp_rm, 0);
	ck_assert_msg(tsr_osdmap_apply(&m, &inc, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(m.epoch, 8);
	ck_assert(m.osds[1].up && m.osds[1].in);
	ck_assert_uint_eq(m.osds[1].up_from, 8);
	tsr_osdmap_inc_free(&inc);
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
	ck_assert_uint_gt(m.npg_temp, 1);
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
	case 10: c.osds[0].up_thru = c.epoch + 2; break;
	/* PG temp mappings: on a pool the map lacks, on a PG beyond pg_num,
	 * with no OSD, an OSD twice, an id out of range, out of order */
	case 11: c.pg_temp[c.npg_temp - 1].pgid.pool = c.next_pool_id; break;
	case 12:
		c.pg_temp[c.npg_temp - 1].pgid.pg =
			tsr_osdmap_pool(&c, c.pg_temp[c.npg_temp - 1].pgid.pool)->pg_num;
		break;
	case 13: c.pg_temp[0].n = 0; break;
	case 14: c.pg_temp[0].n = 2; c.pg_temp[0].osds[1] = c.pg_temp[0].osds[0]; break;
	case 15: c.pg_temp[0].osds[0] = TSR_OSDMAP_MAX_OSDS; break;
	case 16: {
		struct tsr_osdmap_pg_temp t = c.pg_temp[0];
		c.pg_temp[0] = c.pg_temp[1];
		c.pg_temp[1] = t;
		break;
	}
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

/* ---- tsr_osdmap_apply against a model ----------------------------------------
 *
 * apply checks an incremental against the map without copying it, then
 * changes the map in place.  The model below is the plain way: check the
 * lists are sorted, each key once, removals present and not also changed;
 * rebuild the whole map; keep it if tsr_osdmap_check() passes.  Both must
 * agree on every incremental, valid or broken, and a refused one must
 * leave the map as it was, byte for byte. */

static int
cmp_osd_rec(const void *x, const void *y)
{
	const struct tsr_osdmap_osd *a = x, *b = y;
	return (a->id > b->id) - (a->id < b->id);
}

static int
cmp_pool_rec(const void *x, const void *y)
{
	const struct tsr_osdmap_pool *a = x, *b = y;
	return (a->id > b->id) - (a->id < b->id);
}

static int
cmp_pg_temp_rec(const void *x, const void *y)
{
	const struct tsr_osdmap_pg_temp *a = x, *b = y;
	return cmp_pgid(a->pgid.pool, a->pgid.pg, b->pgid.pool, b->pgid.pg);
}

/* Are keys (n records of size sz, key compared by cmp) strictly sorted? */
static int
sorted(const void *v, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
	for (size_t i = 1; i < n; i++)
		if (cmp((const char *)v + (i - 1) * sz, (const char *)v + i * sz) >= 0)
			return 0;
	return 1;
}

static int
model_apply(const struct tsr_osdmap *m, const struct tsr_osdmap_inc *inc,
	    struct tsr_osdmap *out)
{
	struct tsr_osdmap n;
	char why[256];

	if (inc->epoch != m->epoch + 1)
		return -ESTALE;
	if (!sorted(inc->osds, inc->nosds, sizeof(*inc->osds), cmp_osd_rec) ||
	    !sorted(inc->pools, inc->npools, sizeof(*inc->pools), cmp_pool_rec) ||
	    !sorted(inc->pg_temp, inc->npg_temp, sizeof(*inc->pg_temp), cmp_pg_temp_rec))
		return -EINVAL;
	for (size_t i = 0; i < inc->nosd_rm; i++) {
		if ((i && inc->osd_rm[i - 1] >= inc->osd_rm[i]) ||
		    !tsr_osdmap_osd(m, inc->osd_rm[i]))
			return -EINVAL;
		for (size_t k = 0; k < inc->nosds; k++)
			if (inc->osds[k].id == inc->osd_rm[i])
				return -EINVAL;
	}
	for (size_t i = 0; i < inc->npool_rm; i++) {
		if ((i && inc->pool_rm[i - 1] >= inc->pool_rm[i]) ||
		    !tsr_osdmap_pool(m, inc->pool_rm[i]))
			return -EINVAL;
		for (size_t k = 0; k < inc->npools; k++)
			if (inc->pools[k].id == inc->pool_rm[i])
				return -EINVAL;
	}
	for (size_t i = 0; i < inc->npg_temp_rm; i++) {
		const struct tsr_pgid *g = &inc->pg_temp_rm[i];
		if ((i && cmp_pgid(g[-1].pool, g[-1].pg, g->pool, g->pg) >= 0) ||
		    !tsr_osdmap_pg_temp(m, g->pool, g->pg))
			return -EINVAL;
		for (size_t k = 0; k < inc->npg_temp; k++)
			if (cmp_pgid(inc->pg_temp[k].pgid.pool, inc->pg_temp[k].pgid.pg,
				     g->pool, g->pg) == 0)
				return -EINVAL;
	}
	memset(&n, 0, sizeof(n));
	n.epoch = inc->epoch;
	n.flags = inc->flags;
	n.next_pool_id = inc->next_pool_id;
	memcpy(n.placement, inc->has_pmap ? inc->placement : m->placement,
	       sizeof(n.placement));
	n.pmap_len = inc->has_pmap ? inc->pmap_len : m->pmap_len;
	n.pmap = malloc(n.pmap_len + 1);
	if (n.pmap_len)
		memcpy(n.pmap, inc->has_pmap ? inc->pmap : m->pmap, n.pmap_len);
	n.osds = calloc(m->nosds + inc->nosds + 1, sizeof(*n.osds));
	n.pools = calloc(m->npools + inc->npools + 1, sizeof(*n.pools));
	n.pg_temp = calloc(m->npg_temp + inc->npg_temp + 1, sizeof(*n.pg_temp));
	for (size_t i = 0; i < m->nosds; i++) {
		int gone = 0;
		for (size_t k = 0; k < inc->nosd_rm; k++)
			gone |= inc->osd_rm[k] == m->osds[i].id;
		for (size_t k = 0; k < inc->nosds; k++)
			gone |= inc->osds[k].id == m->osds[i].id;
		if (!gone)
			n.osds[n.nosds++] = m->osds[i];
	}
	for (size_t k = 0; k < inc->nosds; k++)
		n.osds[n.nosds++] = inc->osds[k];
	for (size_t i = 0; i < m->npools; i++) {
		int gone = 0;
		for (size_t k = 0; k < inc->npool_rm; k++)
			gone |= inc->pool_rm[k] == m->pools[i].id;
		for (size_t k = 0; k < inc->npools; k++)
			gone |= inc->pools[k].id == m->pools[i].id;
		if (!gone)
			n.pools[n.npools++] = m->pools[i];
	}
	for (size_t k = 0; k < inc->npools; k++)
		n.pools[n.npools++] = inc->pools[k];
	for (size_t i = 0; i < m->npg_temp; i++) {
		const struct tsr_pgid *g = &m->pg_temp[i].pgid;
		int gone = 0;
		for (size_t k = 0; k < inc->npg_temp_rm; k++)
			gone |= cmp_pgid(inc->pg_temp_rm[k].pool, inc->pg_temp_rm[k].pg,
					 g->pool, g->pg) == 0;
		for (size_t k = 0; k < inc->npg_temp; k++)
			gone |= cmp_pgid(inc->pg_temp[k].pgid.pool, inc->pg_temp[k].pgid.pg,
					 g->pool, g->pg) == 0;
		if (!gone)
			n.pg_temp[n.npg_temp++] = m->pg_temp[i];
	}
	for (size_t k = 0; k < inc->npg_temp; k++)
		n.pg_temp[n.npg_temp++] = inc->pg_temp[k];
	qsort(n.osds, n.nosds, sizeof(*n.osds), cmp_osd_rec);
	qsort(n.pools, n.npools, sizeof(*n.pools), cmp_pool_rec);
	qsort(n.pg_temp, n.npg_temp, sizeof(*n.pg_temp), cmp_pg_temp_rec);
	if (tsr_osdmap_check(&n, why, sizeof(why)) < 0) {
		tsr_osdmap_free(&n);
		return -EINVAL;
	}
	*out = n;
	return 0;
}

/* Grow one of inc's arrays by one element (they are malloc'd). */
#define INC_PUSH(arr, n, val)                                                    \
	do {                                                                     \
		(arr) = realloc((arr), ((n) + 1) * sizeof(*(arr)));              \
		(arr)[(n)++] = (val);                                            \
	} while (0)

/* Break inc in one of many ways (some of which still make a sane map:
 * the model decides). */
static void
corrupt(const struct tsr_osdmap *m, struct tsr_osdmap_inc *inc)
{
	switch (rnd(14)) {
	case 0:
		if (inc->nosds >= 2) {
			struct tsr_osdmap_osd t = inc->osds[0];
			inc->osds[0] = inc->osds[inc->nosds - 1];
			inc->osds[inc->nosds - 1] = t;
		}
		break;
	case 1:
		if (inc->nosds) {
			struct tsr_osdmap_osd last = inc->osds[inc->nosds - 1];
			INC_PUSH(inc->osds, inc->nosds, last);
		}
		break;
	case 2: {
		int32_t id = m->nosds && rnd(2) ? m->osds[rnd((uint32_t)m->nosds)].id
						: (int32_t)rnd(TSR_OSDMAP_MAX_OSDS);
		if (inc->nosd_rm == 0 || inc->osd_rm[inc->nosd_rm - 1] < id || rnd(4) == 0)
			INC_PUSH(inc->osd_rm, inc->nosd_rm, id);
		break;
	}
	case 3:
		if (m->npools) {
			int64_t id = m->pools[rnd((uint32_t)m->npools)].id;
			if (inc->npool_rm == 0 || inc->pool_rm[inc->npool_rm - 1] < id)
				INC_PUSH(inc->pool_rm, inc->npool_rm, id);
		}
		break;
	case 4:
		if (inc->nosds) {
			struct tsr_osdmap_osd *o = &inc->osds[rnd((uint32_t)inc->nosds)];
			if (rnd(2))
				o->up_thru = inc->epoch + rnd(2);
			else
				o->weight = rnd(2) ? 0 : 1;
		}
		break;
	case 5: {
		struct tsr_osdmap_pg_temp t;
		memset(&t, 0, sizeof(t));
		t.pgid.pool = m->npools && rnd(4) ? m->pools[rnd((uint32_t)m->npools)].id
						  : (int64_t)rnd(30);
		t.pgid.pg = rnd(300);
		t.n = rnd(TSR_OSDMAP_MAX_SIZE + 1);
		for (uint32_t i = 0; i < t.n; i++)
			t.osds[i] = (int32_t)rnd(20) - 1;
		if (inc->npg_temp == 0 || rnd(3) == 0 ||
		    cmp_pg_temp_rec(&inc->pg_temp[inc->npg_temp - 1], &t) < 0)
			INC_PUSH(inc->pg_temp, inc->npg_temp, t);
		break;
	}
	case 6: {
		struct tsr_pgid g;
		memset(&g, 0, sizeof(g));
		if (m->npg_temp && rnd(3)) {
			g = m->pg_temp[rnd((uint32_t)m->npg_temp)].pgid;
		} else {
			g.pool = (int64_t)rnd(30);
			g.pg = rnd(300);
		}
		INC_PUSH(inc->pg_temp_rm, inc->npg_temp_rm, g);
		break;
	}
	case 7:
		/* shrink a pool, perhaps leaving PG temp mappings behind */
		if (m->npools) {
			struct tsr_osdmap_pool p = m->pools[rnd((uint32_t)m->npools)];
			p.pg_num = 1 + rnd(p.pg_num);
			if (!tsr_osdmap_pool(m, p.id) ||
			    (inc->npools && inc->pools[inc->npools - 1].id >= p.id))
				break;
			INC_PUSH(inc->pools, inc->npools, p);
		}
		break;
	case 8:
		if (inc->npools && m->npools)
			memcpy(inc->pools[0].name, m->pools[rnd((uint32_t)m->npools)].name,
			       sizeof(inc->pools[0].name));
		break;
	case 9:
		inc->next_pool_id = (int64_t)rnd(25);
		break;
	case 10:
		inc->flags |= 1u << rnd(32);
		break;
	case 11:
		inc->has_pmap = 1;
		snprintf(inc->placement, sizeof(inc->placement), "%s",
			 rnd(2) ? "-bad" : "hrw");
		break;
	case 12:
		if (inc->npg_temp_rm >= 2) {
			struct tsr_pgid t = inc->pg_temp_rm[0];
			inc->pg_temp_rm[0] = inc->pg_temp_rm[1];
			inc->pg_temp_rm[1] = t;
		}
		break;
	default:
		/* a new OSD with the highest id, or past the last */
		if (m->nosds) {
			struct tsr_osdmap_osd o = m->osds[m->nosds - 1];
			o.id = o.id + 1 + (int32_t)rnd(3);
			if (inc->nosds == 0 || inc->osds[inc->nosds - 1].id < o.id)
				INC_PUSH(inc->osds, inc->nosds, o);
		}
		break;
	}
}

START_TEST(osdmap_apply_matches_model)
{
	struct tsr_osdmap m = sample();
	size_t took = 0, refused = 0;

	for (int round = 0; round < 4000; round++) {
		struct tsr_osdmap next, before, want;
		struct tsr_osdmap_inc inc;
		int rc, rm;

		ck_assert_int_eq(tsr_osdmap_copy(&next, &m), 0);
		mutate(&next);
		ck_assert_int_eq(tsr_osdmap_diff(&m, &next, &inc), 0);
		for (uint32_t k = rnd(3); k > 0; k--)
			corrupt(&m, &inc);
		ck_assert_int_eq(tsr_osdmap_copy(&before, &m), 0);
		rm = model_apply(&m, &inc, &want);
		err[0] = '\0';
		rc = tsr_osdmap_apply(&m, &inc, err, sizeof(err));
		ck_assert_msg((rc == 0) == (rm == 0), "round %d: apply %d (%s), model %d",
			      round, rc, err, rm);
		if (rc == 0) {
			assert_same(&m, &want);
			tsr_osdmap_free(&want);
			took++;
		} else {
			ck_assert_int_eq(rc, -EINVAL);
			ck_assert_uint_gt(strlen(err), 10);
			assert_same(&m, &before);
			refused++;
		}
		tsr_osdmap_free(&before);
		tsr_osdmap_free(&next);
		tsr_osdmap_inc_free(&inc);
	}
	ck_assert_uint_gt(took, 1000);
	ck_assert_uint_gt(refused, 1000);
	tsr_osdmap_free(&m);
}
END_TEST

/* A map of n OSDs, ids 0..n-1, 20 per host, all up and in, two pools. */
static struct tsr_osdmap
big_map(int32_t n)
{
	struct tsr_osdmap m;

	tsr_osdmap_init(&m);
	m.epoch = 10;
	m.osds = calloc((size_t)n, sizeof(*m.osds));
	for (int32_t i = 0; i < n; i++) {
		struct tsr_osdmap_osd *o = &m.osds[m.nosds++];
		o->id = i;
		snprintf(o->host, sizeof(o->host), "host%d", i / 20);
		snprintf(o->rack, sizeof(o->rack), "rack%d", i / 400);
		snprintf(o->addr, sizeof(o->addr), "10.%d.%d.%d:6800", i >> 16,
			 (i >> 8) & 255, i & 255);
		o->weight = 4;
		o->reweight = 1;
		o->in = o->up = 1;
		o->up_from = o->up_thru = 3;
	}
	m.pools = calloc(2, sizeof(*m.pools));
	for (int i = 0; i < 2; i++) {
		struct tsr_osdmap_pool *p = &m.pools[m.npools++];
		p->id = i + 1;
		snprintf(p->name, sizeof(p->name), "pool%d", i + 1);
		p->pg_num = 65536;
		p->size = 3;
		p->min_size = 2;
		snprintf(p->redundancy, sizeof(p->redundancy), "replica");
	}
	m.next_pool_id = 3;
	ck_assert_msg(tsr_osdmap_check(&m, err, sizeof(err)) == 0, "%s", err);
	return m;
}

/* Bug (found by the fuzz target): an incremental for epoch 0 applied to
 * a map at epoch 2^64-1 "followed" it (epoch + 1 wrapped), and the
 * in-place apply left a map at epoch 0, which the check refuses and no
 * holder may keep.  It is refused, and the map is unchanged. */
START_TEST(osdmap_apply_refuses_epoch_wrap)
{
	struct tsr_osdmap m;
	struct tsr_osdmap_inc inc;

	tsr_osdmap_init(&m);
	m.epoch = UINT64_MAX;
	memset(&inc, 0, sizeof(inc));
	inc.epoch = 0;
	inc.next_pool_id = m.next_pool_id;
	ck_assert_int_eq(tsr_osdmap_apply(&m, &inc, err, sizeof(err)), -ESTALE);
	ck_assert_uint_eq(m.epoch, UINT64_MAX);
	tsr_osdmap_free(&m);
}
END_TEST

/* Regression: apply rebuilt and re-checked the whole map for every
 * incremental (a copy of both maps per change), so a monitor applying
 * thousands of OSD marks to a map of 10,000 OSDs spent seconds on it.  A
 * change of records now changes them where they are: the arrays stay put,
 * and 20,000 changes take far less than a second. */
START_TEST(osdmap_apply_copied_whole_map)
{
	struct tsr_osdmap m = big_map(10000);
	const struct tsr_osdmap_osd *osds = m.osds;
	int rc = 0, moved = 0, others = 0;
	uint64_t t0 = tsr_mono_ns();

	for (int step = 0; step < 20000; step++) {
		struct tsr_osdmap_inc inc;
		struct tsr_osdmap_osd o;
		struct tsr_osdmap_pg_temp t;
		struct tsr_pgid g;

		memset(&inc, 0, sizeof(inc));
		inc.epoch = m.epoch + 1;
		inc.flags = m.flags;
		inc.next_pool_id = m.next_pool_id;
		o = m.osds[rnd(10000)];
		o.up = !o.up;
		if (o.up)
			o.up_from = inc.epoch;
		o.up_thru = o.up ? inc.epoch : o.up_thru;
		inc.osds = &o;
		inc.nosds = 1;
		/* a PG temp mapping set, and (from the second step) the
		 * one before dropped */
		memset(&t, 0, sizeof(t));
		t.pgid.pool = 1;
		t.pgid.pg = (uint32_t)step;
		t.n = 2;
		t.osds[0] = o.id;
		t.osds[1] = (o.id + 1) % 10000;
		inc.pg_temp = &t;
		inc.npg_temp = 1;
		memset(&g, 0, sizeof(g));
		g.pool = 1;
		g.pg = (uint32_t)step - 1;
		inc.pg_temp_rm = &g;
		inc.npg_temp_rm = step > 0;
		/* (no ck_assert in the loop: each one writes to Check's pipe) */
		if ((rc = tsr_osdmap_apply(&m, &inc, err, sizeof(err))) < 0)
			break;
		moved += m.osds != osds;
		others += m.npg_temp != 1;
	}
	uint64_t ms = (tsr_mono_ns() - t0) / 1000000;
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_int_eq(moved, 0);
	ck_assert_int_eq(others, 0);
	ck_assert_msg(ms < 1500, "20,000 changes took %llu ms", (unsigned long long)ms);
	ck_assert_uint_eq(m.nosds, 10000);
	ck_assert_int_eq(tsr_osdmap_check(&m, err, sizeof(err)), 0);
	/* new OSDs with the highest ids join at the end, and the map stays
	 * sorted when they do not */
	{
		struct tsr_osdmap_inc inc;
		struct tsr_osdmap_osd add[2];
		int32_t rm = 17;

		memset(&inc, 0, sizeof(inc));
		inc.epoch = m.epoch + 1;
		inc.next_pool_id = m.next_pool_id;
		add[0] = m.osds[5];
		add[0].id = 20000;
		add[1] = m.osds[5];
		add[1].id = 65535;
		inc.osds = add;
		inc.nosds = 2;
		inc.osd_rm = &rm;
		inc.nosd_rm = 1;
		ck_assert_msg(tsr_osdmap_apply(&m, &inc, err, sizeof(err)) == 0, "%s", err);
		ck_assert_uint_eq(m.nosds, 10001);
		ck_assert_ptr_null(tsr_osdmap_osd(&m, 17));
		ck_assert_int_eq(m.osds[10000].id, 65535);
		ck_assert_int_eq(tsr_osdmap_check(&m, err, sizeof(err)), 0);
	}
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
	tcase_add_loop_test(tc, osdmap_check_refuses, 0, 17);
	tcase_add_test(tc, osdmap_inc_removing_missing);
	tcase_add_test(tc, osdmap_reads_version_1);
	tcase_add_test(tc, osdmap_blocklist);
	tcase_add_test(tc, osdmap_apply_matches_model);
	tcase_add_test(tc, osdmap_apply_refuses_epoch_wrap);
	tcase_add_test(tc, osdmap_apply_copied_whole_map);
	tcase_add_test(tc, mdsmap_incrementals_and_refusals);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
