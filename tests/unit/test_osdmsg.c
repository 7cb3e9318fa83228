/* test_osdmsg.c — the OSD message registry (core/osd/osdmsg.h): every type
 * round-trips through its check, every cut of a valid message is refused,
 * and what an OSD could not have sent (an id out of range, bytes left
 * over, another envelope) is refused with a reason. */
#include "osd/osdmsg.h"
#include "osd/pgsm.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

START_TEST(registry)
{
	ck_assert_str_eq(tsr_osdmsg_name(TSR_MSG_OSD_PING), "osd ping");
	ck_assert_str_eq(tsr_osdmsg_name(TSR_MSG_OSD_PING_REPLY), "osd ping reply");
	ck_assert_str_eq(tsr_osdmsg_name(TSR_MSG_OSD_PG), "osd pg");
	ck_assert_ptr_null(tsr_osdmsg_name(TSR_MSG_USER + 63));
	ck_assert_int_eq(tsr_osdmsg_check(TSR_MSG_USER + 63, "", 0, NULL, 0), -ENOENT);
	/* above the monitors' types */
	ck_assert_uint_ge(TSR_MSG_OSD_PING, TSR_MSG_USER + 64);
}
END_TEST

START_TEST(ping_round_trip_and_refusals)
{
	struct tsr_osd_ping p = { .from = 42, .epoch = 7, .stamp = 123456789 }, q;
	struct tsr_enc e;
	char err[128];

	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_osdmsg_ping_encode(&e, &p), 0);
	ck_assert_int_eq(tsr_osdmsg_check(TSR_MSG_OSD_PING, e.buf, e.len, err,
					  sizeof(err)), 0);
	ck_assert_int_eq(tsr_osdmsg_ping_decode(e.buf, e.len, &q, err, sizeof(err)), 0);
	ck_assert_int_eq(q.from, 42);
	ck_assert_uint_eq(q.epoch, 7);
	ck_assert_uint_eq(q.stamp, 123456789);
	for (size_t cut = 0; cut < e.len; cut++)
		ck_assert_int_eq(tsr_osdmsg_check(TSR_MSG_OSD_PING_REPLY, e.buf, cut, err,
						  sizeof(err)), -EBADMSG);
	tsr_enc_u8(&e, 0); /* a byte left over */
	ck_assert_int_eq(tsr_osdmsg_ping_decode(e.buf, e.len, &q, err, sizeof(err)),
			 -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "trailing"));
	tsr_enc_release(&e);
	p.from = -1;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_osdmsg_ping_encode(&e, &p), 0);
	ck_assert_int_eq(tsr_osdmsg_ping_decode(e.buf, e.len, &q, err, sizeof(err)),
			 -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "out of range"));
	tsr_enc_release(&e);
}
END_TEST

/* A PG message through the registry: its own codec checks it, and a cut
 * is refused with a reason. */
START_TEST(pg_message)
{
	struct tsr_pgmsg m;
	struct tsr_enc e;
	char err[256];

	memset(&m, 0, sizeof(m));
	m.type = TSR_PGMSG_QUERY;
	m.pgid = (struct tsr_pgid){ 3, 0x1f };
	m.from = 4;
	m.map_epoch = 12;
	m.interval = 10;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_pgmsg_encode(&e, &m), 0);
	ck_assert_int_eq(tsr_osdmsg_check(TSR_MSG_OSD_PG, e.buf, e.len, err, sizeof(err)), 0);
	for (size_t cut = 0; cut < e.len; cut++) {
		err[0] = '\0';
		ck_assert_int_eq(tsr_osdmsg_check(TSR_MSG_OSD_PG, e.buf, cut, err, sizeof(err)),
				 -EBADMSG);
		ck_assert_msg(err[0] != '\0', "a cut at %zu refused without a reason", cut);
	}
	tsr_enc_release(&e);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("osdmsg");
	TCase *tc = tcase_create("osdmsg");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, registry);
	tcase_add_test(tc, ping_round_trip_and_refusals);
	tcase_add_test(tc, pg_message);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
