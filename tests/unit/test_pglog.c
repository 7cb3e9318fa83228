/* test_pglog.c — a PG's log, missing set and intervals (core/osd/pglog.h)
 * and the messages between its copies (core/osd/pgsm.h, pgmsg.c): the
 * log's operations, every message type round-trips and every cut of one is
 * refused, and what a peer could not have sent (entries out of order, a
 * log that does not reach its own head, two entries in one write, an
 * unknown operation) is refused with a reason.  What the PG machine does
 * with them is tested by the simulation (tests/sim/pgsim.c). */
#include "osd/pgsm.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tsr_pglog_entry
entry(uint64_t epoch, uint64_t ver, const char *oid, uint8_t op)
{
	struct tsr_pglog_entry x;

	memset(&x, 0, sizeof(x));
	x.ev = (struct tsr_ev){ epoch, ver };
	x.prior = (struct tsr_ev){ epoch, ver - 1 };
	x.op = op;
	x.reqid = (struct tsr_reqid){ 7, ver };
	x.oid = (uint8_t *)oid;
	x.oid_len = strlen(oid);
	return x;
}

START_TEST(log_operations)
{
	struct tsr_pglog l;
	struct tsr_pglog_entry x;

	tsr_pglog_init(&l);
	for (uint64_t v = 1; v <= 10; v++) {
		x = entry(v < 6 ? 3 : 8, v, v % 2 ? "a" : "b", TSR_PGLOG_MODIFY);
		ck_assert_int_eq(tsr_pglog_append(&l, &x), 0);
	}
	/* not above the head */
	x = entry(8, 10, "c", TSR_PGLOG_MODIFY);
	ck_assert_int_eq(tsr_pglog_append(&l, &x), -EINVAL);
	x = entry(7, 11, "c", TSR_PGLOG_MODIFY);  /* an older epoch */
	ck_assert_int_eq(tsr_pglog_append(&l, &x), -EINVAL);
	ck_assert_uint_eq(l.n, 10);
	ck_assert_int_eq(tsr_pglog_find(&l, (struct tsr_ev){ 3, 4 }), 3);
	ck_assert_int_eq(tsr_pglog_find(&l, (struct tsr_ev){ 8, 4 }), -1);
	ck_assert_uint_eq(tsr_pglog_after(&l, (struct tsr_ev){ 3, 5 }), 5);
	ck_assert_uint_eq(tsr_pglog_after(&l, (struct tsr_ev){ 0, 0 }), 0);
	ck_assert_int_eq(tsr_pglog_find_reqid(&l, (struct tsr_reqid){ 7, 9 }), 8);
	ck_assert_int_eq(tsr_pglog_find_reqid(&l, (struct tsr_reqid){ 8, 9 }), -1);
	ck_assert_int_eq(tsr_pglog_find_reqid(&l, (struct tsr_reqid){ 0, 9 }), -1);
	tsr_pglog_trim(&l, (struct tsr_ev){ 3, 3 });
	ck_assert_uint_eq(l.n, 7);
	ck_assert(tsr_ev_cmp(l.tail, (struct tsr_ev){ 3, 3 }) == 0);
	ck_assert(tsr_pglog_covers(&l, (struct tsr_ev){ 3, 3 }));
	ck_assert(!tsr_pglog_covers(&l, (struct tsr_ev){ 3, 2 }));
	tsr_pglog_rewind(&l, (struct tsr_ev){ 8, 7 });
	ck_assert_uint_eq(l.n, 4);
	ck_assert(tsr_ev_cmp(l.head, (struct tsr_ev){ 8, 7 }) == 0);
	x = entry(9, 8, "d", TSR_PGLOG_DELETE);
	ck_assert_int_eq(tsr_pglog_append(&l, &x), 0);
	tsr_pglog_free(&l);
}
END_TEST

/* An active PG trims one entry per write once its log is full: over many
 * rounds the entries stay right, rewinds and finds keep working, and the
 * slots a trim frees are reused (the allocation stays within twice the
 * log: 512 entries for 300), not left to grow. */
START_TEST(log_trim_each_append)
{
	enum { KEEP = 300, ROUNDS = 20000 };
	struct tsr_pglog l;
	struct tsr_pglog_entry x;
	char oid[32];
	uint64_t v = 0;

	tsr_pglog_init(&l);
	for (int r = 0; r < ROUNDS; r++) {
		snprintf(oid, sizeof(oid), "obj%llu", (unsigned long long)v + 1);
		x = entry(5, ++v, oid, TSR_PGLOG_MODIFY);
		ck_assert_int_eq(tsr_pglog_append(&l, &x), 0);
		if (l.n > KEEP)
			tsr_pglog_trim(&l, l.e[l.n - KEEP - 1].ev);
		if (r % 997 == 996) {
			/* an uncommitted tail dropped at a new interval */
			tsr_pglog_rewind(&l, l.e[l.n - 4].ev);
			ck_assert_uint_eq(l.e[l.n - 1].ev.ver, v - 3);
			v -= 3;
			for (uint64_t d = 1; d <= 3; d++)
				ck_assert_int_eq(tsr_pglog_find_reqid(
					&l, (struct tsr_reqid){ 7, v + d }), -1);
		}
		ck_assert_uint_le(l.n, KEEP);
		ck_assert_uint_le(l.skip + l.cap, 2 * KEEP);
		ck_assert_uint_eq(l.e[l.n - 1].ev.ver, v);
		ck_assert_uint_eq(l.head.ver, v);
		ck_assert_uint_eq(l.e[0].ev.ver, l.tail.ver + 1);
		/* the request ids: the newest, one in the middle, one
		 * trimmed, and (after a rewind) one dropped */
		ck_assert_int_eq(tsr_pglog_find_reqid(&l, (struct tsr_reqid){ 7, v }),
				 (long)l.n - 1);
		ck_assert_int_eq(tsr_pglog_find_reqid(&l, (struct tsr_reqid){ 7, v - l.n / 2 }),
				 (long)(l.n - 1 - l.n / 2));
		ck_assert_int_eq(tsr_pglog_find_reqid(&l, (struct tsr_reqid){ 7, l.tail.ver }), -1);
		ck_assert_int_eq(tsr_pglog_find_reqid(&l, (struct tsr_reqid){ 7, v + 1 }), -1);
		ck_assert_int_eq(tsr_pglog_find_reqid(&l, (struct tsr_reqid){ 8, v }), -1);
	}
	ck_assert_ptr_nonnull(l.rix);
	ck_assert_uint_eq(l.rn, l.n);
	ck_assert_uint_eq(l.n, KEEP);
	for (size_t i = 0; i < l.n; i++) {
		snprintf(oid, sizeof(oid), "obj%llu", (unsigned long long)l.e[i].ev.ver);
		ck_assert_uint_eq(l.e[i].ev.ver, l.e[0].ev.ver + i);
		ck_assert_mem_eq(l.e[i].oid, oid, strlen(oid));
		ck_assert_int_eq(tsr_pglog_find(&l, l.e[i].ev), (long)i);
	}
	ck_assert_int_eq(tsr_pglog_find_reqid(&l, (struct tsr_reqid){ 7, v }),
			 (long)l.n - 1);
	ck_assert_int_eq(tsr_pglog_find_reqid(&l, (struct tsr_reqid){ 7, v - KEEP }), -1);
	/* trimmed to nothing, then grown again */
	tsr_pglog_trim(&l, l.head);
	ck_assert_uint_eq(l.n, 0);
	x = entry(6, 1, "again", TSR_PGLOG_DELETE);
	ck_assert_int_eq(tsr_pglog_append(&l, &x), 0);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_mem_eq(l.e[0].oid, "again", 5);
	tsr_pglog_free(&l);
}
END_TEST

START_TEST(missing_set)
{
	struct tsr_missing ms;
	struct tsr_missing_item *it;

	tsr_missing_init(&ms);
	ck_assert_int_eq(tsr_missing_add(&ms, "m", 1, (struct tsr_ev){ 2, 5 },
					 (struct tsr_ev){ 1, 1 }), 0);
	ck_assert_int_eq(tsr_missing_add(&ms, "b", 1, (struct tsr_ev){ 2, 3 },
					 (struct tsr_ev){ 0, 0 }), 0);
	ck_assert_int_eq(tsr_missing_add(&ms, "mm", 2, (struct tsr_ev){ 2, 4 },
					 (struct tsr_ev){ 0, 0 }), 0);
	ck_assert_uint_eq(ms.n, 3);
	/* sorted as the backends list: a prefix before its extensions */
	ck_assert_int_eq(memcmp(ms.m[0].oid, "b", 1), 0);
	ck_assert_uint_eq(ms.m[1].oid_len, 1);
	ck_assert_uint_eq(ms.m[2].oid_len, 2);
	/* need only rises; the older have stays */
	ck_assert_int_eq(tsr_missing_add(&ms, "m", 1, (struct tsr_ev){ 3, 9 },
					 (struct tsr_ev){ 2, 5 }), 0);
	it = tsr_missing_find(&ms, "m", 1);
	ck_assert_ptr_nonnull(it);
	ck_assert(tsr_ev_cmp(it->need, (struct tsr_ev){ 3, 9 }) == 0);
	ck_assert(tsr_ev_cmp(it->have, (struct tsr_ev){ 1, 1 }) == 0);
	ck_assert_int_eq(tsr_missing_add(&ms, "m", 1, (struct tsr_ev){ 2, 1 },
					 (struct tsr_ev){ 0, 0 }), 0);
	ck_assert(tsr_ev_cmp(tsr_missing_find(&ms, "m", 1)->need, (struct tsr_ev){ 3, 9 }) == 0);
	tsr_missing_rm(&ms, "m", 1);
	tsr_missing_rm(&ms, "zz", 2);
	ck_assert_ptr_null(tsr_missing_find(&ms, "m", 1));
	ck_assert_uint_eq(ms.n, 2);
	tsr_missing_free(&ms);
}
END_TEST

START_TEST(intervals_merge_and_trim)
{
	struct tsr_pg_intervals p, q;
	struct tsr_pg_interval iv;

	memset(&p, 0, sizeof(p));
	memset(&q, 0, sizeof(q));
	memset(&iv, 0, sizeof(iv));
	iv.n = 2;
	iv.acting[0] = 1;
	iv.acting[1] = 2;
	for (uint64_t f = 10; f <= 40; f += 10) {
		iv.first = f;
		iv.last = f + 5;
		ck_assert_int_eq(tsr_pg_intervals_add(f % 20 ? &p : &q, &iv), 0);
	}
	ck_assert_int_eq(tsr_pg_intervals_merge(&p, &q), 0);
	ck_assert_uint_eq(p.n, 4);
	for (size_t i = 1; i < p.n; i++)
		ck_assert_uint_gt(p.iv[i].first, p.iv[i - 1].first);
	tsr_pg_intervals_trim(&p, 26);
	ck_assert_uint_eq(p.n, 2);
	ck_assert_uint_eq(p.iv[0].first, 30);
	tsr_pg_intervals_free(&p);
	tsr_pg_intervals_free(&q);
}
END_TEST

/* A copy that started late (an OSD new to the PG) dates its first
 * interval from its start, inside one its peers saw begin earlier: merged,
 * the fuller view holds where both reach and the intervals stay apart, so
 * that they encode into what a peer decodes (they once did not: a new
 * OSD's PGs never peered). */
START_TEST(intervals_partial_views_merge_apart)
{
	struct tsr_pg_intervals p, late;
	struct tsr_pg_interval iv;
	struct tsr_enc e;
	struct tsr_dec d;
	char err[256];

	memset(&p, 0, sizeof(p));
	memset(&late, 0, sizeof(late));
	memset(&iv, 0, sizeof(iv));
	iv.n = 3;
	iv.acting[0] = 0;
	iv.acting[1] = 1;
	iv.acting[2] = 2;
	/* the full view: [10,15] [16,22] [23,25] */
	iv.first = 10, iv.last = 15;
	ck_assert_int_eq(tsr_pg_intervals_add(&p, &iv), 0);
	iv.first = 16, iv.last = 22;
	ck_assert_int_eq(tsr_pg_intervals_add(&p, &iv), 0);
	iv.first = 23, iv.last = 25;
	ck_assert_int_eq(tsr_pg_intervals_add(&p, &iv), 0);
	/* the late copy: [21,22] [23,27] */
	iv.first = 21, iv.last = 22;
	ck_assert_int_eq(tsr_pg_intervals_add(&late, &iv), 0);
	iv.first = 23, iv.last = 27;
	ck_assert_int_eq(tsr_pg_intervals_add(&late, &iv), 0);
	/* either way round */
	for (int round = 0; round < 2; round++) {
		struct tsr_pg_intervals m, back;
		memset(&m, 0, sizeof(m));
		ck_assert_int_eq(tsr_pg_intervals_copy(&m, round ? &late : &p), 0);
		ck_assert_int_eq(tsr_pg_intervals_merge(&m, round ? &p : &late), 0);
		ck_assert_uint_eq(m.n, 3);
		ck_assert_uint_eq(m.iv[0].first, 10);
		ck_assert_uint_eq(m.iv[1].first, 16);
		ck_assert_uint_eq(m.iv[1].last, 22);
		ck_assert_uint_eq(m.iv[2].first, 23);
		ck_assert_uint_eq(m.iv[2].last, 27);
		tsr_enc_init(&e);
		tsr_pg_intervals_encode(&e, &m);
		tsr_dec_init(&d, e.buf, e.len);
		ck_assert_msg(tsr_pg_intervals_decode(&d, &back, err, sizeof(err)) == 0, "%s", err);
		ck_assert_uint_eq(back.n, 3);
		tsr_pg_intervals_free(&back);
		tsr_enc_release(&e);
		tsr_pg_intervals_free(&m);
	}
	/* a partial view wholly inside a fuller one adds nothing */
	iv.first = 17, iv.last = 20;
	ck_assert_int_eq(tsr_pg_intervals_add(&p, &iv), 0);
	ck_assert_uint_eq(p.n, 3);
	tsr_pg_intervals_free(&p);
	tsr_pg_intervals_free(&late);
}
END_TEST

/* One message of each type, filled as the machine fills them. */
static void
sample(int type, struct tsr_pgmsg *m)
{
	struct tsr_pglog_entry x;
	struct tsr_pg_interval iv;

	memset(m, 0, sizeof(*m));
	m->type = (uint8_t)type;
	m->pgid.pool = 3;
	m->pgid.pg = 17;
	m->from = 4;
	m->map_epoch = 90;
	m->interval = 88;
	m->info.pgid = m->pgid;
	m->info.last_update = (struct tsr_ev){ 88, 12 };
	m->info.last_complete = (struct tsr_ev){ 88, 11 };
	m->info.log_tail = (struct tsr_ev){ 80, 10 };
	m->info.les = 85;
	m->info.history_les = 85;
	m->info.same_interval_since = 88;
	m->info.committed = (struct tsr_ev){ 88, 10 };
	memset(&iv, 0, sizeof(iv));
	iv.first = 80;
	iv.last = 87;
	iv.primary = 4;
	iv.maybe_rw = 1;
	iv.n = 3;
	iv.acting[0] = 4;
	iv.acting[1] = 5;
	iv.acting[2] = 6;
	ck_assert_int_eq(tsr_pg_intervals_add(&m->past, &iv), 0);
	ck_assert_int_eq(tsr_missing_add(&m->missing, "obj", 3, (struct tsr_ev){ 88, 11 },
					 (struct tsr_ev){ 80, 2 }), 0);
	m->log.tail = m->log.head = m->info.log_tail;
	if (type == TSR_PGMSG_REPOP) {
		m->log.tail = m->log.head = (struct tsr_ev){ 0, 0 };
		x = entry(88, 13, "obj", TSR_PGLOG_MODIFY);
		ck_assert_int_eq(tsr_pglog_append(&m->log, &x), 0);
	} else {
		x = entry(88, 11, "obj", TSR_PGLOG_MODIFY);
		ck_assert_int_eq(tsr_pglog_append(&m->log, &x), 0);
		x = entry(88, 12, "other", TSR_PGLOG_DELETE);
		ck_assert_int_eq(tsr_pglog_append(&m->log, &x), 0);
	}
	m->ev = (struct tsr_ev){ 88, 11 };
	m->trim_to = (struct tsr_ev){ 80, 10 };
	m->committed = (struct tsr_ev){ 88, 12 };
	m->oid = malloc(3);
	memcpy(m->oid, "obj", 3);
	m->oid_len = 3;
	m->op = TSR_PGLOG_MODIFY;
	m->result = -2;
	m->max = 64;
	m->done = 1;
	if (type == TSR_PGMSG_SCAN_REPLY) {
		m->objs = calloc(2, sizeof(*m->objs));
		for (int i = 0; i < 2; i++) {
			m->objs[i].oid = malloc(2);
			memcpy(m->objs[i].oid, i ? "ob" : "oa", 2);
			m->objs[i].oid_len = 2;
			m->objs[i].ev = (struct tsr_ev){ 88, 5 + (uint64_t)i };
		}
		m->nobjs = 2;
	}
	if (type == TSR_PGMSG_SCRUB) {
		m->oid2 = malloc(3);
		memcpy(m->oid2, "zzz", 3);
		m->oid2_len = 3;
		m->deep = 1;
		m->token = 7;
	}
	if (type == TSR_PGMSG_SCRUB_MAP) {
		m->token = 7;
		m->sobjs = calloc(2, sizeof(*m->sobjs));
		for (int i = 0; i < 2; i++) {
			struct tsr_scrub_obj *o = &m->sobjs[i];
			o->oid = malloc(2);
			memcpy(o->oid, i ? "ob" : "oa", 2);
			o->oid_len = 2;
			o->ev = (struct tsr_ev){ 88, 5 + (uint64_t)i };
			o->size = 4096u << i;
			o->attr_crc = 0x1234u + (uint32_t)i;
			o->omap_crc = 0x5678u;
			o->data_crc = 0x9abcu;
			o->flags = i ? TSR_SCRUB_F_READ_ERR : 0;
		}
		m->nsobjs = 2;
	}
}

START_TEST(messages_round_trip_and_cuts)
{
	char err[256];

	for (int type = 1; type <= TSR_PGMSG_BACKFILL_RELEASE; type++) {
		struct tsr_pgmsg m, d;
		struct tsr_enc e;

		ck_assert_ptr_nonnull(tsr_pgmsg_name(type));
		sample(type, &m);
		tsr_enc_init(&e);
		ck_assert_int_eq(tsr_pgmsg_encode(&e, &m), 0);
		ck_assert_msg(tsr_pgmsg_check(e.buf, e.len, err, sizeof(err)) == 0, "%s: %s",
			      tsr_pgmsg_name(type), err);
		ck_assert_int_eq(tsr_pgmsg_decode(e.buf, e.len, &d, err, sizeof(err)), 0);
		ck_assert_uint_eq(d.type, type);
		ck_assert_int_eq(d.from, 4);
		ck_assert_uint_eq(d.interval, 88);
		if (type == TSR_PGMSG_LOG || type == TSR_PGMSG_ACTIVATE) {
			ck_assert_uint_eq(d.log.n, 2);
			ck_assert(tsr_ev_cmp(d.log.head, (struct tsr_ev){ 88, 12 }) == 0);
		}
		if (type == TSR_PGMSG_PUSH || type == TSR_PGMSG_REPAIR)
			ck_assert_int_eq(memcmp(d.oid, "obj", 3), 0);
		if (type == TSR_PGMSG_REPOP)
			ck_assert(tsr_ev_cmp(d.committed, (struct tsr_ev){ 88, 12 }) == 0);
		if (type == TSR_PGMSG_NOTIFY)
			ck_assert(tsr_ev_cmp(d.info.committed, (struct tsr_ev){ 88, 10 }) == 0);
		if (type == TSR_PGMSG_COMMIT)
			ck_assert(tsr_ev_cmp(d.ev, (struct tsr_ev){ 88, 11 }) == 0);
		if (type == TSR_PGMSG_SCRUB) {
			ck_assert_uint_eq(d.oid2_len, 3);
			ck_assert_uint_eq(d.deep, 1);
			ck_assert_uint_eq(d.token, 7);
		}
		if (type == TSR_PGMSG_SCRUB_MAP) {
			ck_assert_uint_eq(d.nsobjs, 2);
			ck_assert_uint_eq(d.sobjs[1].size, 8192);
			ck_assert_uint_eq(d.sobjs[1].flags, TSR_SCRUB_F_READ_ERR);
			ck_assert_uint_eq(d.sobjs[0].attr_crc, 0x1234u);
		}
		tsr_pgmsg_free(&d);
		{
			/* a clone encodes as the original does */
			struct tsr_enc e2;
			ck_assert_int_eq(tsr_pgmsg_clone(&m, &d), 0);
			tsr_enc_init(&e2);
			ck_assert_int_eq(tsr_pgmsg_encode(&e2, &d), 0);
			ck_assert_uint_eq(e2.len, e.len);
			ck_assert_int_eq(memcmp(e2.buf, e.buf, e.len), 0);
			tsr_enc_release(&e2);
			tsr_pgmsg_free(&d);
		}
		for (size_t cut = 0; cut < e.len; cut++)
			ck_assert_msg(tsr_pgmsg_check(e.buf, cut, err, sizeof(err)) == -EBADMSG,
				      "%s cut at %zu", tsr_pgmsg_name(type), cut);
		tsr_enc_u8(&e, 0);
		ck_assert_int_eq(tsr_pgmsg_decode(e.buf, e.len, &d, err, sizeof(err)), -EBADMSG);
		tsr_enc_release(&e);
		tsr_pgmsg_free(&m);
	}
}
END_TEST

static int
decode_err(const struct tsr_pgmsg *m, char *err, size_t errlen)
{
	struct tsr_enc e;
	struct tsr_pgmsg d;
	int rc;

	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_pgmsg_encode(&e, m), 0);
	rc = tsr_pgmsg_decode(e.buf, e.len, &d, err, errlen);
	if (rc == 0)
		tsr_pgmsg_free(&d);
	tsr_enc_release(&e);
	return rc;
}

START_TEST(hostile_messages)
{
	struct tsr_pgmsg m;
	struct tsr_pglog_entry x;
	char err[256];

	/* a log that does not reach the head its info claims */
	sample(TSR_PGMSG_LOG, &m);
	m.info.last_update = (struct tsr_ev){ 88, 20 };
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "pg log"));
	tsr_pgmsg_free(&m);
	/* entries at or below the tail they follow */
	sample(TSR_PGMSG_ACTIVATE, &m);
	m.log.tail = (struct tsr_ev){ 88, 11 };
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	tsr_pgmsg_free(&m);
	/* two entries in one replicated write */
	sample(TSR_PGMSG_REPOP, &m);
	x = entry(88, 14, "b", TSR_PGLOG_MODIFY);
	ck_assert_int_eq(tsr_pglog_append(&m.log, &x), 0);
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "exactly one"));
	tsr_pgmsg_free(&m);
	/* an operation no log has */
	sample(TSR_PGMSG_REPOP, &m);
	m.log.e[0].op = 9;
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "unknown operation"));
	tsr_pgmsg_free(&m);
	/* an entry older than the object's prior version */
	sample(TSR_PGMSG_REPOP, &m);
	m.log.e[0].prior = (struct tsr_ev){ 89, 1 };
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "prior"));
	tsr_pgmsg_free(&m);
	/* a sender that is no OSD, a type that is none */
	sample(TSR_PGMSG_QUERY, &m);
	m.from = -3;
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "out of range"));
	m.from = 3;
	m.type = 77;
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "unknown type 77"));
	tsr_pgmsg_free(&m);
	/* an entry from a map the sender does not have yet */
	sample(TSR_PGMSG_REPOP, &m);
	m.map_epoch = 87;
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "newer than the sender's map"));
	tsr_pgmsg_free(&m);
	/* a scan's objects out of order, or too many asked for */
	sample(TSR_PGMSG_SCAN_REPLY, &m);
	m.objs[1].oid[1] = 'a';
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "out of order"));
	tsr_pgmsg_free(&m);
	sample(TSR_PGMSG_SCAN, &m);
	m.max = TSR_PGMSG_MAX_SCAN + 1;
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	tsr_pgmsg_free(&m);
	/* a scrub map out of order or with unknown flags; a scrub of an empty
	 * range, or of too many objects */
	sample(TSR_PGMSG_SCRUB_MAP, &m);
	m.sobjs[1].oid[1] = 'a';
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "out of order"));
	tsr_pgmsg_free(&m);
	sample(TSR_PGMSG_SCRUB_MAP, &m);
	m.sobjs[0].flags = 0x80;
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "flagged unknown"));
	tsr_pgmsg_free(&m);
	sample(TSR_PGMSG_SCRUB, &m);
	m.oid2[0] = 'a'; /* "azz" is below "obj" */
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "bad range"));
	m.oid2[0] = 'z';
	m.max = TSR_PGMSG_MAX_SCRUB + 1;
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	tsr_pgmsg_free(&m);
	/* a repair with no version to recover */
	sample(TSR_PGMSG_REPAIR, &m);
	m.ev = (struct tsr_ev){ 0, 0 };
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "pg repair"));
	tsr_pgmsg_free(&m);
	/* an info whose tail is above its head */
	sample(TSR_PGMSG_NOTIFY, &m);
	m.info.log_tail = (struct tsr_ev){ 99, 1 };
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "above last update"));
	tsr_pgmsg_free(&m);
	/* an info that says more is committed than it holds; a write whose
	 * primary says it is committed already */
	sample(TSR_PGMSG_NOTIFY, &m);
	m.info.committed = (struct tsr_ev){ 88, 13 };
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "committed 88'13 above last update"));
	tsr_pgmsg_free(&m);
	sample(TSR_PGMSG_REPOP, &m);
	m.committed = (struct tsr_ev){ 88, 13 };
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "committed at or above"));
	tsr_pgmsg_free(&m);
	/* a missing set out of order */
	sample(TSR_PGMSG_ACTIVATE_ACK, &m);
	ck_assert_int_eq(tsr_missing_add(&m.missing, "a", 1, (struct tsr_ev){ 88, 3 },
					 (struct tsr_ev){ 0, 0 }), 0);
	{
		struct tsr_missing_item t = m.missing.m[0];
		m.missing.m[0] = m.missing.m[1];
		m.missing.m[1] = t;
	}
	ck_assert_int_eq(decode_err(&m, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "out of order"));
	tsr_pgmsg_free(&m);
}
END_TEST

/* What the machine persists, it loads; a store of another PG, or a key it
 * never writes, is refused with a reason. */
START_TEST(machine_load_checks)
{
	struct tsr_pgsm_conf c = { .pgid = { 1, 2 }, .whoami = 0, .created = 1 };
	struct tsr_pgsm *sm;
	struct tsr_pg_info info;
	struct tsr_pg_intervals past;
	struct tsr_enc e;
	char err[256];

	ck_assert_int_eq(tsr_pgsm_create(&c, &sm), 0);
	memset(&info, 0, sizeof(info));
	memset(&past, 0, sizeof(past));
	info.pgid.pool = 1;
	info.pgid.pg = 3;
	tsr_enc_init(&e);
	tsr_pg_info_encode(&e, &info);
	tsr_pg_intervals_encode(&e, &past);
	ck_assert_int_eq(tsr_pgsm_load(sm, "I", 1, e.buf, e.len, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "PG info of 1.3 in the store of PG 1.2"));
	ck_assert_int_eq(tsr_pgsm_load(sm, "Q", 1, e.buf, e.len, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not one this OSD writes"));
	ck_assert_int_eq(tsr_pgsm_load(sm, "I", 1, e.buf, e.len - 1, err, sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);
	tsr_pgsm_destroy(sm);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("pglog");
	TCase *tc = tcase_create("pglog");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, log_operations);
	tcase_add_test(tc, log_trim_each_append);
	tcase_add_test(tc, missing_set);
	tcase_add_test(tc, intervals_merge_and_trim);
	tcase_add_test(tc, intervals_partial_views_merge_apart);
	tcase_add_test(tc, messages_round_trip_and_cuts);
	tcase_add_test(tc, hostile_messages);
	tcase_add_test(tc, machine_load_checks);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
