/* test_mon.c — the monitor's building blocks that need no daemon: the
 * member list (members.h) and the monitor messages (monmsg.h), decoded
 * as hostile input. */
#include "mon/members.h"
#include "map/mdsmap.h"
#include "mon/monmsg.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err[512];

START_TEST(members_sorted_and_stable)
{
	struct tsr_mon_members a, b;

	ck_assert_int_eq(tsr_mon_members_parse("c=127.0.0.1:6791, a=127.0.0.1:6789,"
					       "b=127.0.0.1:6790", "t.conf", &a, err,
					       sizeof(err)), 0);
	ck_assert_uint_eq(a.n, 3);
	ck_assert_str_eq(a.m[0].name, "a");
	ck_assert_uint_eq(a.m[0].id, 1);
	ck_assert_str_eq(a.m[2].addr, "127.0.0.1:6791");
	ck_assert_str_eq(a.canon, "a=127.0.0.1:6789,b=127.0.0.1:6790,c=127.0.0.1:6791");
	/* any order and spacing: the same ids and fingerprint */
	ck_assert_int_eq(tsr_mon_members_parse("  b=127.0.0.1:6790 a=127.0.0.1:6789 "
					       "c=127.0.0.1:6791 ", "t.conf", &b, err,
					       sizeof(err)), 0);
	ck_assert_uint_eq(a.fp, b.fp);
	ck_assert_ptr_eq(tsr_mon_members_find(&b, "c"), &b.m[2]);
	ck_assert_ptr_null(tsr_mon_members_find(&b, "d"));
	ck_assert_ptr_eq(tsr_mon_members_by_id(&b, 2), &b.m[1]);
	ck_assert_ptr_null(tsr_mon_members_by_id(&b, 0));
	ck_assert_ptr_null(tsr_mon_members_by_id(&b, 4));
	ck_assert_ptr_eq(tsr_mon_members_by_addr(&b, "127.0.0.1:6791"), &b.m[2]);
	ck_assert_ptr_null(tsr_mon_members_by_addr(&b, "127.0.0.1:6792"));
	/* another set, another fingerprint */
	ck_assert_int_eq(tsr_mon_members_parse("a=127.0.0.1:6789,b=127.0.0.1:6790",
					       "t.conf", &b, err, sizeof(err)), 0);
	ck_assert_uint_ne(a.fp, b.fp);
}
END_TEST

static const struct {
	const char *text, *reason;
} bad_members[] = {
	{ "", "t.conf: mon_members is empty: list the monitors as \"a=127.0.0.1:6789, ...\"" },
	{ "a", "t.conf: mon_members: 'a' is not NAME=IP:PORT" },
	{ "=127.0.0.1:1", "t.conf: mon_members: '=127.0.0.1:1': a name of 1 to 31 characters is needed" },
	{ "a-b=127.0.0.1:1", "t.conf: mon_members: name 'a-b' may hold only letters, digits and '_'" },
	{ "a=localhost:1", "t.conf: mon_members: mon a: 'localhost:1' is not an IPv4 address and port (e.g. 127.0.0.1:6789)" },
	{ "a=127.0.0.1:0", "t.conf: mon_members: mon a: '127.0.0.1:0' is not an IPv4 address and port (e.g. 127.0.0.1:6789)" },
	{ "a=127.0.0.1:65536", "t.conf: mon_members: mon a: '127.0.0.1:65536' is not an IPv4 address and port (e.g. 127.0.0.1:6789)" },
	{ "a=127.0.0.1:1,a=127.0.0.1:2", "t.conf: mon_members: mon a is listed twice" },
	{ "a=127.0.0.1:1,b=127.0.0.1:1", "t.conf: mon_members: mon a and mon b have the same address 127.0.0.1:1" },
	{ "a=1.1.1.1:1 b=1.1.1.1:2 c=1.1.1.1:3 d=1.1.1.1:4 e=1.1.1.1:5 f=1.1.1.1:6 "
	  "g=1.1.1.1:7 h=1.1.1.1:8 i=1.1.1.1:9 j=1.1.1.1:10", "t.conf: mon_members: more than 9 monitors" },
};

START_TEST(members_refused)
{
	struct tsr_mon_members m;

	ck_assert_int_eq(tsr_mon_members_parse(bad_members[_i].text, "t.conf", &m, err,
					       sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, bad_members[_i].reason);
}
END_TEST

static uint8_t *
raft_msg_bytes(size_t *len)
{
	static uint8_t d1[] = "first", d2[] = "second entry";
	static const struct tsr_raft_entry ents[] = {
		{ 3, 8, d1, 5 }, { 3, 9, NULL, 0 }, { 4, 10, d2, 12 },
	};
	struct tsr_raft_msg m = { .type = TSR_RAFT_APPEND, .from = 1, .to = 3,
				  .term = 4, .log_term = 3, .index = 7, .commit = 6,
				  .reject = 0, .match = 0, .ctx = 123456789,
				  .entries = ents, .nentries = 3 };
	struct tsr_enc e;

	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_monmsg_raft_encode(&e, 0xabcdef01u, NULL, &m), 0);
	return tsr_enc_take(&e, len);
}

START_TEST(raft_round_trip_and_truncations)
{
	struct tsr_raft_msg m;
	uint32_t fp;
	size_t len;
	uint8_t *buf = raft_msg_bytes(&len);

	ck_assert_int_eq(tsr_monmsg_raft_decode(buf, len, &fp, NULL, &m, err, sizeof(err)), 0);
	ck_assert_uint_eq(fp, 0xabcdef01u);
	ck_assert_uint_eq(m.type, TSR_RAFT_APPEND);
	ck_assert_uint_eq(m.ctx, 123456789);
	ck_assert_uint_eq(m.nentries, 3);
	ck_assert_uint_eq(m.entries[2].index, 10);
	ck_assert_uint_eq(m.entries[2].len, 12);
	ck_assert_int_eq(memcmp(m.entries[2].data, "second entry", 12), 0);
	ck_assert_uint_eq(m.entries[1].len, 0);
	tsr_monmsg_raft_free(&m);
	for (size_t n = 0; n < len; n++) {
		uint8_t *cut = malloc(n ? n : 1);
		memcpy(cut, buf, n);
		ck_assert_int_lt(tsr_monmsg_raft_decode(cut, n, &fp, NULL, &m, err, sizeof(err)), 0);
		ck_assert_ptr_null(m.entries);
		free(cut);
	}
	free(buf);
}
END_TEST

/* An entry count the message cannot hold is refused before allocating. */
START_TEST(raft_count_bomb)
{
	struct tsr_raft_msg m = { .type = TSR_RAFT_APPEND, .from = 1, .to = 2, .term = 1 };
	struct tsr_enc e;
	uint32_t fp;
	size_t len;
	uint8_t *buf;

	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_monmsg_raft_encode(&e, 1, NULL, &m), 0);
	buf = tsr_enc_take(&e, &len);
	/* the count is the last u32 of the body before the u64 features and
	 * the version (an empty string: a u32 length) */
	buf[len - 16] = 0x00;
	buf[len - 15] = 0x10;
	buf[len - 14] = 0x00;
	buf[len - 13] = 0x00;
	ck_assert_int_eq(tsr_monmsg_raft_decode(buf, len, &fp, NULL, &m, err, sizeof(err)),
			 -EBADMSG);
	ck_assert_msg(strstr(err, "more than") != NULL, "%s", err);
	free(buf);
}
END_TEST

START_TEST(cmd_and_reply)
{
	char *words[] = { "pool", "create", "rbd", "64", NULL };
	struct tsr_mon_cmd c = { .client = 77, .tid = 5, .argc = 4, .argv = words }, d;
	struct tsr_mon_reply r = { .tid = 5, .status = -EEXIST, .text = "pool 'rbd' exists" }, q;
	struct tsr_enc e;
	size_t len;
	uint8_t *buf;

	snprintf(r.leader, sizeof(r.leader), "127.0.0.1:6790");
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_monmsg_cmd_encode(&e, &c), 0);
	buf = tsr_enc_take(&e, &len);
	ck_assert_int_eq(tsr_monmsg_cmd_decode(buf, len, &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.client, 77);
	ck_assert_uint_eq(d.argc, 4);
	ck_assert_str_eq(d.argv[3], "64");
	ck_assert_ptr_null(d.argv[4]);
	tsr_monmsg_cmd_free(&d);
	for (size_t n = 0; n < len; n++)
		ck_assert_int_lt(tsr_monmsg_cmd_decode(buf, n, &d, err, sizeof(err)), 0);
	free(buf);

	/* no words, and too many */
	c.argc = 0;
	tsr_enc_init(&e);
	tsr_monmsg_cmd_encode(&e, &c);
	buf = tsr_enc_take(&e, &len);
	ck_assert_int_eq(tsr_monmsg_cmd_decode(buf, len, &d, err, sizeof(err)), -EBADMSG);
	ck_assert_str_eq(err, "command of 0 words; 1 to 64 expected");
	free(buf);

	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_monmsg_reply_encode(&e, &r), 0);
	buf = tsr_enc_take(&e, &len);
	ck_assert_int_eq(tsr_monmsg_reply_decode(buf, len, &q, err, sizeof(err)), 0);
	ck_assert_int_eq(q.status, -EEXIST);
	ck_assert_str_eq(q.text, "pool 'rbd' exists");
	ck_assert_str_eq(q.leader, "127.0.0.1:6790");
	free(q.text);
	for (size_t n = 0; n < len; n++)
		ck_assert_int_lt(tsr_monmsg_reply_decode(buf, n, &q, err, sizeof(err)), 0);
	free(buf);
	/* a positive status is not an answer */
	r.status = 3;
	tsr_enc_init(&e);
	tsr_monmsg_reply_encode(&e, &r);
	buf = tsr_enc_take(&e, &len);
	ck_assert_int_eq(tsr_monmsg_reply_decode(buf, len, &q, err, sizeof(err)), -EBADMSG);
	free(buf);
}
END_TEST

/* Bug: a command word of 1024 bytes or more was dropped by the monitor,
 * and its client waited out its timeout.  The decoder names the word and
 * the limit, and keeps the tid so the monitor can answer with that. */
START_TEST(long_word_answered)
{
	static char word[TSR_MONMSG_MAX_ARG + 1];
	char *words[] = { "pool", "create", word, NULL };
	struct tsr_mon_cmd c = { .client = 9, .tid = 41, .argc = 3, .argv = words }, d;
	struct tsr_enc e;
	size_t len;
	uint8_t *buf;

	/* the longest word there may be goes through */
	memset(word, 'w', TSR_MONMSG_MAX_ARG - 1);
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_monmsg_cmd_encode(&e, &c), 0);
	buf = tsr_enc_take(&e, &len);
	ck_assert_int_eq(tsr_monmsg_cmd_decode(buf, len, &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(strlen(d.argv[2]), TSR_MONMSG_MAX_ARG - 1);
	tsr_monmsg_cmd_free(&d);
	free(buf);
	/* one byte more: refused, saying which word and the limit */
	memset(word, 'w', TSR_MONMSG_MAX_ARG);
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_monmsg_cmd_encode(&e, &c), 0);
	buf = tsr_enc_take(&e, &len);
	ck_assert_int_eq(tsr_monmsg_cmd_decode(buf, len, &d, err, sizeof(err)), -E2BIG);
	ck_assert_str_eq(err, "command word 3 is 1024 bytes long; a word may have at "
			 "most 1023");
	ck_assert_uint_eq(d.tid, 41);
	ck_assert_uint_eq(d.client, 9);
	ck_assert_ptr_null(d.argv);
	ck_assert_uint_eq(d.argc, 0);
	free(buf);
}
END_TEST

/* One registry of the monitors' message types: each has a name and a
 * check, and a number of its own. */
START_TEST(registry_complete)
{
	size_t n = 0;

	for (const struct tsr_monmsg_type *t; (t = tsr_monmsg_type_at(n)) != NULL; n++) {
		ck_assert_ptr_nonnull(t->check);
		ck_assert_uint_gt(strlen(t->name), 0);
		ck_assert_ptr_eq(tsr_monmsg_type(t->type), t);
		for (size_t k = 0; k < n; k++)
			ck_assert_uint_ne(tsr_monmsg_type_at(k)->type, t->type);
	}
	ck_assert_uint_eq(n, 11);
	ck_assert_ptr_nonnull(tsr_monmsg_type(TSR_MSG_MON_PG_STATS));
	ck_assert_ptr_nonnull(tsr_monmsg_type(TSR_MSG_MON_OSD_BEACON));
	ck_assert_ptr_nonnull(tsr_monmsg_type(TSR_MSG_MON_SVC_KEYS));
	ck_assert_ptr_nonnull(tsr_monmsg_type(TSR_MSG_MON_OSD_ALIVE));
	ck_assert_ptr_null(tsr_monmsg_type(TSR_MSG_USER + 999));
}
END_TEST

/* A primary's PG report: round trip, every cut refused, and what no OSD
 * could send refused with a reason (a bad state bit, an OSD id out of
 * range, a count the bytes cannot hold); the state names join with '+'. */
START_TEST(pg_stats_codec)
{
	struct tsr_mon_pg_stat pgs[2] = {
		{ .pool = 1, .pg = 0x1f, .state = TSR_PG_ST_ACTIVE | TSR_PG_ST_CLEAN, .epoch = 9,
		  .les = 8, .lec = 8, .sis = 8, .lu_epoch = 8, .lu_ver = 3, .nacting = 3,
		  .acting = { 2, 0, 1 } },
		{ .pool = 1, .pg = 0x20, .state = TSR_PG_ST_ACTIVE | TSR_PG_ST_UNDERSIZED |
						   TSR_PG_ST_DEGRADED, .epoch = 9, .degraded = 7,
		  .nacting = 2, .acting = { 1, 2 } },
	};
	struct tsr_mon_pg_stats s = { 1, 2, 2, 9, 100 << 20, 10 << 20, 80 << 20, 12, 2, pgs }, d;
	const struct tsr_monmsg_type *t = tsr_monmsg_type(TSR_MSG_MON_PG_STATS);
	struct tsr_enc e;
	char name[128];

	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_monmsg_pg_stats_encode(&e, &s), 0);
	ck_assert_int_eq(t->check(e.buf, e.len, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_monmsg_pg_stats_decode(e.buf, e.len, &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.n, 2);
	ck_assert_uint_eq(d.pgs[1].degraded, 7);
	ck_assert_int_eq(d.pgs[0].acting[0], 2);
	tsr_monmsg_pg_stats_free(&d);
	for (size_t cut = 0; cut < e.len; cut++)
		ck_assert_int_lt(t->check(e.buf, cut, 0, err, sizeof(err)), 0);
	tsr_enc_release(&e);
	ck_assert_str_eq(tsr_pg_state_str(pgs[1].state, name, sizeof(name)),
			 "active+undersized+degraded");
	ck_assert_str_eq(tsr_pg_state_str(0, name, sizeof(name)), "unknown");

	pgs[0].state = 1u << 20;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_monmsg_pg_stats_encode(&e, &s), 0);
	ck_assert_int_eq(tsr_monmsg_pg_stats_decode(e.buf, e.len, &d, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "state"));
	tsr_enc_release(&e);
	pgs[0].state = TSR_PG_ST_ACTIVE;
	pgs[1].acting[1] = TSR_OSDMAP_MAX_OSDS;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_monmsg_pg_stats_encode(&e, &s), 0);
	ck_assert_int_eq(tsr_monmsg_pg_stats_decode(e.buf, e.len, &d, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "names OSD"));
	tsr_enc_release(&e);
	pgs[1].acting[1] = 2;
	s.used = s.total + 1;   /* more used than there is */
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_monmsg_pg_stats_encode(&e, &s), 0);
	ck_assert_int_eq(tsr_monmsg_pg_stats_decode(e.buf, e.len, &d, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "used"));
	tsr_enc_release(&e);
	/* a count the message cannot hold: refused before any allocation */
	{
		struct tsr_enc b;
		size_t mark;
		tsr_enc_init(&b);
		mark = tsr_enc_begin_struct(&b, 1, 1);
		tsr_enc_u64(&b, 1);
		tsr_enc_u64(&b, 2);
		tsr_enc_i32(&b, 2);
		tsr_enc_u64(&b, 9);
		for (int i = 0; i < 4; i++)
			tsr_enc_u64(&b, 0);
		tsr_enc_u32(&b, 4000);
		tsr_enc_end_struct(&b, mark);
		ck_assert_int_eq(tsr_monmsg_pg_stats_decode(b.buf, b.len, &d, err, sizeof(err)),
				 -EINVAL);
		tsr_enc_release(&b);
	}
}
END_TEST

/* A v2 report's scrub fields: they round-trip with the state bits from
 * SCRUBBING on, every cut is refused, and the states read as `tessera
 * status` shows them. */
START_TEST(pg_stats_scrub_round_trip)
{
	struct tsr_mon_pg_stat pgs[3] = {
		{ .pool = 1, .pg = 0x1a, .state = TSR_PG_ST_ACTIVE | TSR_PG_ST_CLEAN |
						  TSR_PG_ST_INCONSISTENT, .epoch = 9,
		  .nacting = 2, .acting = { 0, 1 }, .last_scrub = 1700000100,
		  .last_deep_scrub = 1700000000, .scrub_errors = 6, .nbad = 2,
		  .bad = { "obj-17", "obj-3" } },
		{ .pool = 1, .pg = 0x1b, .state = TSR_PG_ST_ACTIVE | TSR_PG_ST_CLEAN |
						  TSR_PG_ST_SCRUBBING | TSR_PG_ST_DEEP, .epoch = 9,
		  .nacting = 1, .acting = { 2 } },
		{ .pool = 2, .pg = 0, .state = TSR_PG_ST_ACTIVE | TSR_PG_ST_CLEAN |
					       TSR_PG_ST_SCRUBBING | TSR_PG_ST_DEEP |
					       TSR_PG_ST_INCONSISTENT | TSR_PG_ST_REPAIR,
		  .epoch = 9, .scrub_errors = 4, .nbad = 4,
		  .bad = { " ", "~x~", "a\"b\\c", "" } },
	};
	struct tsr_mon_pg_stats s = { 1, 2, 2, 9, 0, 0, 0, 0, 3, pgs }, d;
	const struct tsr_monmsg_type *t = tsr_monmsg_type(TSR_MSG_MON_PG_STATS);
	struct tsr_enc e;
	char name[200];

	memset(pgs[2].bad[3], 'n', TSR_PG_STAT_BAD_NAME - 1); /* the longest name */
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_monmsg_pg_stats_encode(&e, &s), 0);
	ck_assert_uint_eq(e.buf[0], 2);    /* version 2 */
	ck_assert_uint_eq(e.buf[1], 1);    /* compat 1: a v1 monitor reads it */
	ck_assert_int_eq(t->check(e.buf, e.len, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_monmsg_pg_stats_decode(e.buf, e.len, &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.n, 3);
	for (int i = 0; i < 3; i++) {
		const struct tsr_mon_pg_stat *a = &pgs[i], *b = &d.pgs[i];
		ck_assert_uint_eq(b->state, a->state);
		ck_assert_uint_eq(b->last_scrub, a->last_scrub);
		ck_assert_uint_eq(b->last_deep_scrub, a->last_deep_scrub);
		ck_assert_uint_eq(b->scrub_errors, a->scrub_errors);
		ck_assert_uint_eq(b->nbad, a->nbad);
		for (int j = 0; j < TSR_PG_STAT_MAX_BAD; j++)
			ck_assert_mem_eq(b->bad[j], a->bad[j], TSR_PG_STAT_BAD_NAME);
		ck_assert_int_eq(b->acting[0], a->acting[0]);
	}
	tsr_monmsg_pg_stats_free(&d);
	for (size_t cut = 0; cut < e.len; cut++)
		ck_assert_int_lt(t->check(e.buf, cut, 0, err, sizeof(err)), 0);
	tsr_enc_release(&e);
	ck_assert_str_eq(tsr_pg_state_str(pgs[1].state, name, sizeof(name)),
			 "active+clean+scrubbing+deep");
	ck_assert_str_eq(tsr_pg_state_str(pgs[0].state & ~TSR_PG_ST_SCRUBBING, name,
					  sizeof(name)), "active+clean+inconsistent");
	ck_assert_str_eq(tsr_pg_state_str(pgs[2].state, name, sizeof(name)),
			 "active+clean+scrubbing+deep+inconsistent+repair");
	ck_assert_str_eq(tsr_pg_state_str(TSR_PG_ST_ALL, name, sizeof(name)),
			 "active+clean+peering+activating+down+incomplete+undersized+"
			 "degraded+recovering+backfilling+remapped+stale+unknown+"
			 "scrubbing+deep+inconsistent+repair+peered+backfill_wait");
}
END_TEST

/* One PG, active+clean (the v1 fields), written as v1 or as v2 with the
 * scrub section as given: a message no encoder of ours writes. */
static void
pg_report_raw(struct tsr_enc *b, int v2, uint32_t state, uint32_t st2, uint32_t errors,
	      uint32_t nbad, const char *const *names, const size_t *lens)
{
	size_t mark;

	tsr_enc_init(b);
	mark = tsr_enc_begin_struct(b, v2 ? 2 : 1, 1);
	tsr_enc_u64(b, 1);            /* client */
	tsr_enc_u64(b, 2);            /* tid */
	tsr_enc_i32(b, 3);            /* osd */
	tsr_enc_u64(b, 9);            /* epoch */
	for (int i = 0; i < 4; i++)
		tsr_enc_u64(b, 0);    /* total, used, avail, objects */
	tsr_enc_u32(b, 1);
	tsr_enc_i64(b, 1);            /* pool */
	tsr_enc_u32(b, 0x1a);         /* pg */
	tsr_enc_u32(b, state);
	for (int i = 0; i < 8; i++)
		tsr_enc_u64(b, 9);    /* epoch .. missing */
	tsr_enc_u32(b, 1);
	tsr_enc_i32(b, 3);
	if (v2) {
		tsr_enc_u32(b, st2);
		tsr_enc_u64(b, 1700000000);
		tsr_enc_u64(b, 1700000000);
		tsr_enc_u32(b, errors);
		tsr_enc_u32(b, nbad);
		for (uint32_t j = 0; j < nbad; j++)
			tsr_enc_bytes(b, names[j], lens[j]);
	}
	tsr_enc_end_struct(b, mark);
	ck_assert_int_eq(tsr_enc_error(b), 0);
}

/* Versions: a v1 report (an OSD not yet upgraded) decodes with the scrub
 * fields 0; a v2 report reads, as a v1 monitor reads it, as the v1
 * layout with no state bit a v1 decoder refuses, and the envelope skips
 * the scrub section. */
START_TEST(pg_stats_versions)
{
	struct tsr_mon_pg_stats d;
	struct tsr_enc b;
	const char *names[] = { "x" };
	const size_t lens[] = { 1 };

	pg_report_raw(&b, 0, TSR_PG_ST_ACTIVE | TSR_PG_ST_CLEAN, 0, 0, 0, NULL, NULL);
	ck_assert_int_eq(tsr_monmsg_pg_stats_decode(b.buf, b.len, &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_uint_eq(d.pgs[0].state, TSR_PG_ST_ACTIVE | TSR_PG_ST_CLEAN);
	ck_assert_uint_eq(d.pgs[0].last_scrub, 0);
	ck_assert_uint_eq(d.pgs[0].last_deep_scrub, 0);
	ck_assert_uint_eq(d.pgs[0].scrub_errors, 0);
	ck_assert_uint_eq(d.pgs[0].nbad, 0);
	ck_assert_uint_eq(d.pgs[0].lu_ver, 9);
	ck_assert_int_eq(tsr_monmsg_type(TSR_MSG_MON_PG_STATS)->check(b.buf, b.len, 0, err,
								      sizeof(err)), 0);
	tsr_monmsg_pg_stats_free(&d);
	tsr_enc_release(&b);
	/* a v1 report with a bit from scrubbing on: refused as before */
	pg_report_raw(&b, 0, TSR_PG_ST_ACTIVE | TSR_PG_ST_SCRUBBING, 0, 0, 0, NULL, NULL);
	ck_assert_int_eq(tsr_monmsg_pg_stats_decode(b.buf, b.len, &d, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not a state"));
	tsr_enc_release(&b);
	/* the raw v2 builder agrees with the encoder */
	pg_report_raw(&b, 1, TSR_PG_ST_ACTIVE, TSR_PG_ST_SCRUBBING | TSR_PG_ST_INCONSISTENT,
		      1, 1, names, lens);
	ck_assert_int_eq(tsr_monmsg_pg_stats_decode(b.buf, b.len, &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.pgs[0].state, TSR_PG_ST_ACTIVE | TSR_PG_ST_SCRUBBING |
					  TSR_PG_ST_INCONSISTENT);
	ck_assert_str_eq(d.pgs[0].bad[0], "x");
	{
		struct tsr_enc e;
		tsr_enc_init(&e);
		ck_assert_int_eq(tsr_monmsg_pg_stats_encode(&e, &d), 0);
		ck_assert_uint_eq(e.len, b.len);
		ck_assert_mem_eq(e.buf, b.buf, b.len);
		tsr_enc_release(&e);
	}
	tsr_monmsg_pg_stats_free(&d);
	/* as a v1 monitor reads it: the v1 fields, then the envelope's end */
	{
		struct tsr_dec dec, sub;
		uint8_t ver;
		tsr_dec_init(&dec, b.buf, b.len);
		ck_assert_int_eq(tsr_dec_begin_struct(&dec, 1, &ver, &sub), 0);
		ck_assert_uint_eq(ver, 2);
		(void)tsr_dec_u64(&sub);         /* client, tid */
		(void)tsr_dec_u64(&sub);
		ck_assert_int_eq(tsr_dec_i32(&sub), 3);
		for (int i = 0; i < 5; i++)
			(void)tsr_dec_u64(&sub); /* epoch, total .. objects */
		ck_assert_uint_eq(tsr_dec_u32(&sub), 1);
		(void)tsr_dec_i64(&sub);
		(void)tsr_dec_u32(&sub);
		ck_assert_uint_eq(tsr_dec_u32(&sub), TSR_PG_ST_ACTIVE);
		for (int i = 0; i < 8; i++)
			(void)tsr_dec_u64(&sub);
		ck_assert_uint_eq(tsr_dec_u32(&sub), 1);
		ck_assert_int_eq(tsr_dec_i32(&sub), 3);
		ck_assert_uint_gt(tsr_dec_remaining(&sub), 0); /* the scrub section */
		ck_assert_int_eq(tsr_dec_end_struct(&dec, &sub), 0);
		ck_assert_uint_eq(tsr_dec_remaining(&dec), 0);
	}
	tsr_enc_release(&b);
}
END_TEST

/* What no OSD may send in the scrub section, each refused with a reason;
 * and the encoder refuses to write it. */
static const struct {
	uint32_t st2, errors, nbad;
	const char *names[5];
	size_t lens[5];                 /* 0: strlen */
	const char *why;
} scrub_refusals[] = {
	{ 0, 5, 5, { "a", "b", "c", "d", "e" }, { 0 }, "5 inconsistent objects, more than 4" },
	{ 0, 1, 2, { "a", "b" }, { 0 }, "but counts 1 scrub errors" },
	{ 0, 1, 1, { "" }, { 0 }, "object 0 has 0 bytes, not 1..95" },
	{ 0, 2, 2, { "a", "" }, { 0 }, "object 1 has 0 bytes" },
	{ 0, 1, 1, { NULL }, { 96 }, "has 96 bytes, not 1..95" },
	{ 0, 1, 1, { "a\nb" }, { 0 }, "byte 0x0a at 1, not printable" },
	{ 0, 1, 1, { "ab\x7f" }, { 0 }, "byte 0x7f at 2" },
	{ 0, 1, 1, { "\xc3\xa9" }, { 0 }, "byte 0xc3 at 0" },
	{ 0, 1, 1, { "a\0b" }, { 3 }, "byte 0x00 at 1" },
	{ TSR_PG_ST_ACTIVE, 0, 0, { NULL }, { 0 }, "v2 state 0x1: not a state" },
	{ 1u << 19, 0, 0, { NULL }, { 0 }, "v2 state 0x80000: not a state" },
};

START_TEST(pg_stats_scrub_refused)
{
	static char longname[96];
	struct tsr_mon_pg_stats d;
	struct tsr_enc b;
	const char *names[5];
	size_t lens[5];
	uint32_t n = scrub_refusals[_i].nbad;

	memset(longname, 'n', sizeof(longname));
	for (uint32_t j = 0; j < n; j++) {
		names[j] = scrub_refusals[_i].names[j] ? scrub_refusals[_i].names[j] : longname;
		lens[j] = scrub_refusals[_i].lens[j] ? scrub_refusals[_i].lens[j]
						    : strlen(names[j]);
	}
	pg_report_raw(&b, 1, TSR_PG_ST_ACTIVE, scrub_refusals[_i].st2,
		      scrub_refusals[_i].errors, n, names, lens);
	ck_assert_int_eq(tsr_monmsg_pg_stats_decode(b.buf, b.len, &d, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, scrub_refusals[_i].why) != NULL, "%s", err);
	ck_assert_ptr_nonnull(strstr(err, "PG 1.1a"));
	ck_assert_ptr_null(d.pgs);
	ck_assert_int_eq(tsr_monmsg_type(TSR_MSG_MON_PG_STATS)->check(b.buf, b.len, 0, err,
								      sizeof(err)), -EINVAL);
	tsr_enc_release(&b);
	/* the encoder refuses the same fields (but the state bits, which it
	 * splits, and a NUL, which a C string cannot hold) */
	if (scrub_refusals[_i].st2 == 0 && (n == 0 || memchr(names[0], 0, lens[0]) == NULL)) {
		struct tsr_mon_pg_stat pg = { .pool = 1, .pg = 0x1a, .state = TSR_PG_ST_ACTIVE,
					      .scrub_errors = scrub_refusals[_i].errors,
					      .nbad = n };
		struct tsr_mon_pg_stats s = { .osd = 3, .epoch = 9, .n = 1, .pgs = &pg };
		for (uint32_t j = 0; j < n && j < TSR_PG_STAT_MAX_BAD; j++)
			memcpy(pg.bad[j], names[j], lens[j] < TSR_PG_STAT_BAD_NAME
						    ? lens[j] : TSR_PG_STAT_BAD_NAME);
		tsr_enc_init(&b);
		ck_assert_int_eq(tsr_monmsg_pg_stats_encode(&b, &s), -EINVAL);
		tsr_enc_release(&b);
	}
}
END_TEST

/* The daemons' typed messages: each encodes, passes its registry check
 * (a round trip to the same values), and every cut of it is refused. */
START_TEST(daemon_messages_round_trip)
{
	struct tsr_mon_osd_boot boot = { .client = 1, .tid = 2, .osd = 7,
					 .addr = "10.0.0.1:6800", .version = "0.1.0",
					 .features = 3 };
	struct tsr_mon_osd_beacon ob = { .client = 1, .tid = 3, .osd = 7, .osdmap_epoch = 42,
					 .nfailed = 2, .failed = { 1, 9 }, .version = "0.1.0" };
	struct tsr_mon_mds_beacon mb = { .client = 1, .tid = 4, .name = "a", .gid = 99,
					 .addr = "10.0.0.2:6801", .state = TSR_MDS_ACTIVE,
					 .version = "0.1.0" };
	struct tsr_mon_svc_keys sk = { .client = 1, .tid = 5, .osd = 7 };
	static struct tsr_mon_osd_alive al = {
		.client = 1, .tid = 6, .osd = 7, .up_from = 40, .want_up_thru = 42,
		.npg_temp = 2, .pg_temp = { { .pool = 3, .pg = 0x1f, .n = 3, .osds = { 7, 2, 5 } },
					    { .pool = 4, .pg = 0 } } };
	struct { uint32_t type; struct tsr_enc e; } m[5];

	for (int i = 0; i < 5; i++) {
		tsr_enc_init(&m[i].e);
		m[i].type = i == 0 ? TSR_MSG_MON_OSD_BOOT : i == 1 ? TSR_MSG_MON_OSD_BEACON
			  : i == 2 ? TSR_MSG_MON_MDS_BEACON : i == 3 ? TSR_MSG_MON_SVC_KEYS
			  : TSR_MSG_MON_OSD_ALIVE;
	}
	ck_assert_int_eq(tsr_monmsg_osd_boot_encode(&m[0].e, &boot), 0);
	ck_assert_int_eq(tsr_monmsg_osd_beacon_encode(&m[1].e, &ob), 0);
	ck_assert_int_eq(tsr_monmsg_mds_beacon_encode(&m[2].e, &mb), 0);
	ck_assert_int_eq(tsr_monmsg_svc_keys_encode(&m[3].e, &sk), 0);
	ck_assert_int_eq(tsr_monmsg_osd_alive_encode(&m[4].e, &al), 0);
	for (int i = 0; i < 5; i++) {
		const struct tsr_monmsg_type *t = tsr_monmsg_type(m[i].type);
		ck_assert_msg(t->check(m[i].e.buf, m[i].e.len, 0, err, sizeof(err)) == 0,
			      "%s: %s", t->name, err);
		for (size_t cut = 0; cut < m[i].e.len; cut++)
			ck_assert_int_lt(t->check(m[i].e.buf, cut, 0, err, sizeof(err)), 0);
		tsr_enc_release(&m[i].e);
	}
	/* the service keys: an OSD's id, or -1 (a client's or an MDS's own
	 * key); nothing below */
	for (int32_t id = -3; id <= 0; id++) {
		struct tsr_mon_svc_keys k = { .client = 1, .tid = 5, .osd = id }, k2;
		struct tsr_enc ke;
		tsr_enc_init(&ke);
		ck_assert_int_eq(tsr_monmsg_svc_keys_encode(&ke, &k), 0);
		ck_assert_int_eq(tsr_monmsg_svc_keys_decode(ke.buf, ke.len, &k2, err, sizeof(err)),
				 id >= -1 ? 0 : -EINVAL);
		tsr_enc_release(&ke);
	}
	struct tsr_mon_osd_beacon ob2;
	struct tsr_enc e;
	tsr_enc_init(&e);
	tsr_monmsg_osd_beacon_encode(&e, &ob);
	ck_assert_int_eq(tsr_monmsg_osd_beacon_decode(e.buf, e.len, &ob2, err, sizeof(err)), 0);
	ck_assert_int_eq(ob2.osd, 7);
	ck_assert_uint_eq(ob2.osdmap_epoch, 42);
	ck_assert_uint_eq(ob2.nfailed, 2);
	ck_assert_int_eq(ob2.failed[1], 9);
	ck_assert_str_eq(ob2.version, "0.1.0");
	tsr_enc_release(&e);
}
END_TEST

/* An OSD's asks for its PGs: what no OSD could truthfully ask is refused,
 * naming it. */
START_TEST(osd_alive_refused)
{
	static const char *const what[] = {
		"up_thru 3 asked by the incarnation up from epoch 5", "names PG 0.1",
		"names osd.4 twice", "asked for twice", "-1 is not an OSD id",
		"up from epoch 0",
	};
	for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		static struct tsr_mon_osd_alive a, b;
		struct tsr_enc e;
		int rc;

		memset(&a, 0, sizeof(a));
		a.osd = 1;
		a.up_from = 5;
		a.want_up_thru = 6;
		a.npg_temp = 2;
		a.pg_temp[0] = (struct tsr_mon_pg_temp_req){ .pool = 1, .pg = 1, .n = 2,
							     .osds = { 4, 2 } };
		a.pg_temp[1] = (struct tsr_mon_pg_temp_req){ .pool = 1, .pg = 2 };
		switch (i) {
		case 0: a.want_up_thru = 3; break;
		case 1: a.pg_temp[0].pool = 0; break;
		case 2: a.pg_temp[0].osds[1] = 4; break;
		case 3: a.pg_temp[1].pg = 1; break;
		case 4: a.pg_temp[0].osds[0] = -1; break;
		default: a.up_from = 0; a.want_up_thru = 0; break;
		}
		tsr_enc_init(&e);
		tsr_monmsg_osd_alive_encode(&e, &a);
		rc = tsr_monmsg_osd_alive_decode(e.buf, e.len, &b, err, sizeof(err));
		ck_assert_msg(rc == -EINVAL, "case %zu accepted (%d)", i, rc);
		ck_assert_msg(strstr(err, what[i]) != NULL, "case %zu: '%s' lacks '%s'", i,
			      err, what[i]);
		tsr_enc_release(&e);
	}
}
END_TEST

/* What a daemon's message may not hold is refused, naming the field. */
START_TEST(daemon_messages_refused)
{
	static const struct {
		int kind;        /* 0 boot, 1 osd beacon, 2 mds beacon */
		const char *what;
	} cases[] = {
		{ 0, "the address is not IP:PORT" }, { 0, "OSD id 70000 is not in" },
		{ 0, "the version is not printable" }, { 1, "silent peer 0 is -1" },
		{ 1, "silent peers, more than 64" }, { 2, "unknown state 9" },
		{ 2, "gid 0 is not in" }, { 2, "the name is not" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tsr_mon_osd_boot boot = { .osd = 1, .addr = "1.2.3.4:5",
						 .version = "v" };
		struct tsr_mon_osd_beacon ob = { .osd = 1, .version = "v" };
		struct tsr_mon_mds_beacon mb = { .name = "a", .gid = 1, .addr = "1.2.3.4:5",
						 .version = "v" };
		struct tsr_enc e;
		int rc;

		switch (i) {
		case 0: strcpy(boot.addr, "1.2.3.4 5"); break;
		case 1: boot.osd = 70000; break;
		case 2: strcpy(boot.version, "0.1 beta"); break;
		case 3: ob.nfailed = 1; ob.failed[0] = -1; break;
		case 5: mb.state = 9; break;
		case 6: mb.gid = 0; break;
		case 7: strcpy(mb.name, "a b"); break;
		default: break;
		}
		tsr_enc_init(&e);
		if (cases[i].kind == 0) {
			tsr_monmsg_osd_boot_encode(&e, &boot);
			rc = tsr_monmsg_osd_boot_decode(e.buf, e.len, &boot, err, sizeof(err));
		} else if (cases[i].kind == 1) {
			ob.nfailed = i == 4 ? 64 : ob.nfailed;
			tsr_monmsg_osd_beacon_encode(&e, &ob);
			if (i == 4) {
				/* the count says 65: patch it where it is (after the
				 * envelope, client, tid, osd and epoch) */
				e.buf[6 + 8 + 8 + 4 + 8] = 65;
			}
			rc = tsr_monmsg_osd_beacon_decode(e.buf, e.len, &ob, err, sizeof(err));
		} else {
			tsr_monmsg_mds_beacon_encode(&e, &mb);
			rc = tsr_monmsg_mds_beacon_decode(e.buf, e.len, &mb, err, sizeof(err));
		}
		ck_assert_msg(rc < 0, "case %zu (%s) accepted", i, cases[i].what);
		ck_assert_msg(strstr(err, cases[i].what) != NULL, "case %zu: '%s' lacks '%s'", i,
			      err, cases[i].what);
		tsr_enc_release(&e);
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("mon");
	TCase *tc = tcase_create("mon");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, members_sorted_and_stable);
	tcase_add_loop_test(tc, members_refused, 0,
			    (int)(sizeof(bad_members) / sizeof(bad_members[0])));
	tcase_add_test(tc, raft_round_trip_and_truncations);
	tcase_add_test(tc, raft_count_bomb);
	tcase_add_test(tc, cmd_and_reply);
	tcase_add_test(tc, long_word_answered);
	tcase_add_test(tc, registry_complete);
	tcase_add_test(tc, pg_stats_codec);
	tcase_add_test(tc, pg_stats_scrub_round_trip);
	tcase_add_test(tc, pg_stats_versions);
	tcase_add_loop_test(tc, pg_stats_scrub_refused, 0,
			    (int)(sizeof(scrub_refusals) / sizeof(scrub_refusals[0])));
	tcase_add_test(tc, daemon_messages_round_trip);
	tcase_add_test(tc, daemon_messages_refused);
	tcase_add_test(tc, osd_alive_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
