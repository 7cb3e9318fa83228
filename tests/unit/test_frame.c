/* test_frame.c — the messenger's wire format: frame headers and hellos
 * round trip, and every malformed header or hello is refused with its
 * reason. */
#include "msg/frame.h"

#include <tessera/crc32c.h>

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static struct tsr_frame_hdr
sample(void)
{
	return (struct tsr_frame_hdr){ .version = TSR_FRAME_VERSION, .flags = 0,
				       .type = TSR_MSG_USER + 7, .front_len = 100,
				       .data_len = 5000, .data_raw_len = 5000,
				       .seq = 0x0102030405060708ull,
				       .ack = 0x1122334455667788ull };
}

/* Re-seal bytes 0..43 after a test changed them. */
static void
reseal(uint8_t *b)
{
	uint32_t crc = tsr_crc32c(0, b, 44);

	for (int i = 0; i < 4; i++)
		b[44 + i] = (uint8_t)(crc >> (8 * i));
}

START_TEST(hdr_round_trip)
{
	struct tsr_frame_hdr h = sample(), g;
	uint8_t b[TSR_FRAME_HDR];
	const char *why = "unset";

	tsr_frame_hdr_encode(&h, b);
	ck_assert_int_eq(memcmp(b, "TSRM", 4), 0);
	ck_assert_int_eq(tsr_frame_hdr_decode(b, 1 << 20, 1 << 20, &g, &why), 0);
	ck_assert_ptr_null(why);
	ck_assert_int_eq(g.type, h.type);
	ck_assert_int_eq(g.front_len, 100);
	ck_assert_int_eq(g.data_len, 5000);
	ck_assert(g.seq == h.seq && g.ack == h.ack);
	/* little-endian on the wire whatever the host */
	ck_assert_int_eq(b[24], 0x08);
	ck_assert_int_eq(b[31], 0x01);

	/* a compressed frame */
	h.flags = TSR_FRAME_F_ZSTD;
	h.data_len = 300;
	tsr_frame_hdr_encode(&h, b);
	ck_assert_int_eq(tsr_frame_hdr_decode(b, 1 << 20, 1 << 20, &g, &why), 0);
	ck_assert_int_eq(g.data_raw_len, 5000);
	ck_assert_int_eq(g.data_len, 300);
}
END_TEST

/* One damaged header per case, each with its own reason. */
START_TEST(hdr_refused)
{
	static const struct {
		const char *name;
		int off, val;     /* byte to set (then reseal), or -1 */
		int no_reseal;
		const char *why;
	} cases[] = {
		{ "magic", 0, 'X', 0, "bad magic" },
		{ "crc", 10, 0x55, 1, "header checksum" },
		{ "version", 4, 9, 0, "frame version" },
		{ "flags", 6, 0x80, 0, "unknown frame flags" },
		{ "reserved", 41, 1, 0, "reserved" },
		{ "front", 15, 0x7f, 0, "front longer" },
		{ "data", 19, 0x7f, 0, "data longer" },
		{ "raw", 23, 0x7f, 0, "data longer" },
		{ "raw mismatch", 20, 1, 0, "disagree" },
		{ "type 0", -2, 0, 0, "type 0" },
		{ "control seq", -3, 0, 0, "control frame with a sequence" },
		{ "no seq", -4, 0, 0, "without a sequence" },
		{ "zstd empty", -5, 0, 0, "compressed frame without data" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tsr_frame_hdr h = sample(), g;
		uint8_t b[TSR_FRAME_HDR];
		const char *why = NULL;

		if (cases[i].off == -2)
			h.type = 0;
		if (cases[i].off == -3)
			h.type = TSR_MSG_ACK;
		if (cases[i].off == -4)
			h.seq = 0;
		if (cases[i].off == -5) {
			h.flags = TSR_FRAME_F_ZSTD;
			h.data_len = 0;
		}
		tsr_frame_hdr_encode(&h, b);
		if (cases[i].off >= 0) {
			b[cases[i].off] = (uint8_t)cases[i].val;
			if (!cases[i].no_reseal)
				reseal(b);
		}
		ck_assert_msg(tsr_frame_hdr_decode(b, 1 << 20, 1 << 20, &g, &why) ==
				      -EBADMSG, "%s: accepted", cases[i].name);
		ck_assert_msg(why != NULL && strstr(why, cases[i].why),
			      "%s: reason \"%s\", want \"%s\"", cases[i].name,
			      why ? why : "(none)", cases[i].why);
		ck_assert_int_eq(g.front_len, 0); /* nothing half-decoded */
	}
}
END_TEST

static struct tsr_hello
hello_sample(void)
{
	struct tsr_hello h;

	memset(&h, 0, sizeof(h));
	memset(h.fsid, 0xab, 16);
	h.entity_type = TSR_ENTITY_OSD;
	h.entity_id = 3;
	h.nonce = 0xdeadbeefcafef00dull;
	h.proto_min = 1;
	h.proto_max = 1;
	h.features = TSR_FEATURE_ZSTD;
	h.lossless = 1;
	h.session = 77;
	h.in_seq = 12345;
	strcpy(h.addr, "127.0.0.1:6800");
	return h;
}

START_TEST(hello_round_trip)
{
	struct tsr_hello h = hello_sample(), g;
	struct tsr_enc e;
	const char *why = "unset";

	tsr_enc_init(&e);
	tsr_hello_encode(&h, &e);
	ck_assert_int_eq(tsr_enc_error(&e), 0);
	ck_assert_int_eq(tsr_hello_decode(e.buf, e.len, &g, &why), 0);
	ck_assert_ptr_null(why);
	ck_assert_int_eq(memcmp(&h, &g, sizeof(h)), 0);

	/* every truncation is refused, none crashes */
	for (size_t n = 0; n < e.len; n++)
		ck_assert_int_eq(tsr_hello_decode(e.buf, n, &g, &why), -EBADMSG);
	tsr_enc_release(&e);
}
END_TEST

START_TEST(hello_refused)
{
	struct {
		const char *name;
		struct tsr_hello h;
		const char *why;
	} cases[4];
	const char *why;
	struct tsr_hello g;

	for (int i = 0; i < 4; i++)
		cases[i].h = hello_sample();
	cases[0].name = "entity";
	cases[0].h.entity_type = 99;
	cases[0].why = "unknown entity type";
	cases[1].name = "range";
	cases[1].h.proto_min = 3;
	cases[1].h.proto_max = 2;
	cases[1].why = "empty protocol";
	cases[2].name = "zero";
	cases[2].h.proto_min = 0;
	cases[2].why = "empty protocol";
	cases[3].name = "policy";
	cases[3].h.lossless = 7;
	cases[3].why = "bad policy";
	for (int i = 0; i < 4; i++) {
		struct tsr_enc e;

		tsr_enc_init(&e);
		tsr_hello_encode(&cases[i].h, &e);
		why = NULL;
		ck_assert_int_eq(tsr_hello_decode(e.buf, e.len, &g, &why), -EBADMSG);
		ck_assert_msg(why && strstr(why, cases[i].why), "%s: %s", cases[i].name,
			      why ? why : "(none)");
		tsr_enc_release(&e);
	}
	/* garbage, and trailing bytes */
	{
		uint8_t junk[64];
		struct tsr_enc e;
		struct tsr_hello h = hello_sample();

		for (int i = 0; i < 64; i++)
			junk[i] = (uint8_t)(i * 37 + 11);
		ck_assert_int_eq(tsr_hello_decode(junk, sizeof(junk), &g, &why), -EBADMSG);
		tsr_enc_init(&e);
		tsr_hello_encode(&h, &e);
		tsr_enc_u8(&e, 1);
		ck_assert_int_eq(tsr_hello_decode(e.buf, e.len, &g, &why), -EBADMSG);
		ck_assert_contains(why, "after the hello");
		tsr_enc_release(&e);
	}
	ck_assert_str_eq(tsr_entity_type_name(TSR_ENTITY_MDS), "mds");
	ck_assert_ptr_null(tsr_entity_type_name(0));
	ck_assert_str_eq(tsr_msg_control_name(TSR_MSG_KEEPALIVE), "keepalive");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("frame");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, hdr_round_trip);
	tcase_add_test(tc, hdr_refused);
	tcase_add_test(tc, hello_round_trip);
	tcase_add_test(tc, hello_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
