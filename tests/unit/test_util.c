/* test_util.c — sbuf growth/reset/JSON escaping, strlcpy, errf, clocks. */
#include "util/sbuf.h"
#include "util/util.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The buffer's invariants, after any operation that succeeded. */
static void
check_sbuf_shape(const struct tsr_sbuf *sb)
{
	ck_assert_int_eq(tsr_sbuf_error(sb), 0);
	if (sb->len > 0) {
		ck_assert_ptr_nonnull(sb->buf);
		ck_assert_uint_ge(sb->cap, sb->len + 1);
		ck_assert_int_eq(sb->buf[sb->len], '\0');
	}
	ck_assert_uint_eq(strlen(tsr_sbuf_str(sb)), sb->len);
}

/* s as JSON via tsr_sbuf_json_str, compared with want. */
static void
check_json(const char *s, const char *want)
{
	struct tsr_sbuf sb;

	tsr_sbuf_init(&sb);
	tsr_sbuf_json_str(&sb, s);
	check_sbuf_shape(&sb);
	ck_assert_str_eq(tsr_sbuf_str(&sb), want);
	tsr_sbuf_release(&sb);
}

START_TEST(test_sbuf_empty)
{
	struct tsr_sbuf sb;

	tsr_sbuf_init(&sb);
	ck_assert_str_eq(tsr_sbuf_str(&sb), "");
	ck_assert_uint_eq(sb.len, 0);
	ck_assert_int_eq(tsr_sbuf_error(&sb), 0);
	/* An empty add still leaves a valid, empty string. */
	tsr_sbuf_add(&sb, "", 0);
	check_sbuf_shape(&sb);
	ck_assert_str_eq(tsr_sbuf_str(&sb), "");
	tsr_sbuf_printf(&sb, "%s", "");
	check_sbuf_shape(&sb);
	ck_assert_str_eq(tsr_sbuf_str(&sb), "");
	tsr_sbuf_release(&sb);
	ck_assert_ptr_null(sb.buf);
	ck_assert_uint_eq(sb.len, 0);
	ck_assert_uint_eq(sb.cap, 0);
	/* Releasing twice is harmless (release re-initialises). */
	tsr_sbuf_release(&sb);
}
END_TEST

/* Many small appends, mixing add and printf, across many reallocations;
 * the result is compared byte for byte with an independently built copy. */
START_TEST(test_sbuf_growth)
{
	enum { ROUNDS = 5000 };
	struct tsr_sbuf sb;
	char *want = malloc(ROUNDS * 32);
	size_t wlen = 0;
	size_t grows = 0, cap = 0;

	ck_assert_ptr_nonnull(want);
	tsr_sbuf_init(&sb);
	for (int i = 0; i < ROUNDS; i++) {
		char tmp[32];
		int n;

		if (i % 2 == 0) {
			tsr_sbuf_add(&sb, "ab", 2);
			memcpy(want + wlen, "ab", 2);
			wlen += 2;
		} else {
			tsr_sbuf_printf(&sb, "[%d]", i);
			n = snprintf(tmp, sizeof(tmp), "[%d]", i);
			memcpy(want + wlen, tmp, (size_t)n);
			wlen += (size_t)n;
		}
		if (sb.cap != cap) {
			grows++;
			cap = sb.cap;
		}
		ck_assert_uint_eq(sb.len, wlen);
	}
	check_sbuf_shape(&sb);
	ck_assert_uint_eq(sb.len, wlen);
	ck_assert_int_eq(memcmp(sb.buf, want, wlen), 0);
	/* Geometric growth: tens of kilobytes in a handful of reallocations. */
	ck_assert_uint_gt(grows, 1);
	ck_assert_uint_lt(grows, 20);
	tsr_sbuf_release(&sb);
	free(want);
}
END_TEST

/* One printf far larger than the initial capacity. */
START_TEST(test_sbuf_printf_large)
{
	struct tsr_sbuf sb;
	char big[10001];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	tsr_sbuf_init(&sb);
	tsr_sbuf_add(&sb, "<", 1);
	tsr_sbuf_printf(&sb, "%s|%d", big, 42);
	tsr_sbuf_add(&sb, ">", 1);
	check_sbuf_shape(&sb);
	ck_assert_uint_eq(sb.len, 1 + 10000 + 3 + 1);
	ck_assert_int_eq(sb.buf[0], '<');
	ck_assert_int_eq(memcmp(sb.buf + 1, big, 10000), 0);
	ck_assert_str_eq(sb.buf + 10001, "|42>");
	tsr_sbuf_release(&sb);
}
END_TEST

/* Data with embedded NULs is kept whole; len counts every byte. */
START_TEST(test_sbuf_binary)
{
	struct tsr_sbuf sb;
	static const char data[] = { 'a', '\0', 'b', '\0', 'c' };

	tsr_sbuf_init(&sb);
	tsr_sbuf_add(&sb, data, sizeof(data));
	ck_assert_uint_eq(sb.len, sizeof(data));
	ck_assert_int_eq(memcmp(sb.buf, data, sizeof(data)), 0);
	ck_assert_int_eq(sb.buf[sb.len], '\0');
	tsr_sbuf_release(&sb);
}
END_TEST

START_TEST(test_sbuf_reset)
{
	struct tsr_sbuf sb;
	size_t cap;

	tsr_sbuf_init(&sb);
	/* reset of a never-used buffer is fine */
	tsr_sbuf_reset(&sb);
	ck_assert_str_eq(tsr_sbuf_str(&sb), "");
	for (int i = 0; i < 100; i++)
		tsr_sbuf_printf(&sb, "line %d\n", i);
	cap = sb.cap;
	tsr_sbuf_reset(&sb);
	ck_assert_uint_eq(sb.len, 0);
	ck_assert_str_eq(tsr_sbuf_str(&sb), "");
	/* the memory is kept for reuse */
	ck_assert_uint_eq(sb.cap, cap);
	tsr_sbuf_printf(&sb, "%s-%u", "again", 7u);
	check_sbuf_shape(&sb);
	ck_assert_str_eq(tsr_sbuf_str(&sb), "again-7");
	tsr_sbuf_release(&sb);
}
END_TEST

/* An error is sticky: later appends are dropped until reset. */
START_TEST(test_sbuf_sticky_error)
{
	struct tsr_sbuf sb;

	tsr_sbuf_init(&sb);
	tsr_sbuf_add(&sb, "ok", 2);
	/* A length that cannot fit must fail before touching the source. */
	tsr_sbuf_add(&sb, "", SIZE_MAX);
	ck_assert_int_eq(tsr_sbuf_error(&sb), -ENOMEM);
	ck_assert_uint_eq(sb.len, 2);
	ck_assert_str_eq(tsr_sbuf_str(&sb), "ok");
	tsr_sbuf_add(&sb, "more", 4);
	tsr_sbuf_printf(&sb, "%d", 12345);
	tsr_sbuf_json_str(&sb, "x");
	ck_assert_int_eq(tsr_sbuf_error(&sb), -ENOMEM);
	ck_assert_str_eq(tsr_sbuf_str(&sb), "ok");
	tsr_sbuf_reset(&sb);
	ck_assert_int_eq(tsr_sbuf_error(&sb), 0);
	tsr_sbuf_add(&sb, "fresh", 5);
	check_sbuf_shape(&sb);
	ck_assert_str_eq(tsr_sbuf_str(&sb), "fresh");
	tsr_sbuf_release(&sb);
}
END_TEST

START_TEST(test_json_plain)
{
	check_json("", "\"\"");
	check_json("hello world", "\"hello world\"");
	check_json("osd.3 /var/lib/x", "\"osd.3 /var/lib/x\"");
}
END_TEST

START_TEST(test_json_quote_backslash)
{
	check_json("say \"hi\"", "\"say \\\"hi\\\"\"");
	check_json("C:\\dir\\", "\"C:\\\\dir\\\\\"");
	check_json("\\\"", "\"\\\\\\\"\"");
}
END_TEST

START_TEST(test_json_control)
{
	check_json("a\nb\rc\td", "\"a\\nb\\rc\\td\"");
	check_json("\x01", "\"\\u0001\"");
	check_json("x\x1fy", "\"x\\u001fy\"");
	check_json("\x1b[0m", "\"\\u001b[0m\"");
	check_json("\b\f", "\"\\u0008\\u000c\"");
}
END_TEST

/* Bytes >= 0x20 pass through untouched, including DEL and UTF-8. */
START_TEST(test_json_high_bytes)
{
	check_json("\x7f", "\"\x7f\"");
	check_json("caf\xc3\xa9", "\"caf\xc3\xa9\"");
	check_json("\xff\x80", "\"\xff\x80\"");
}
END_TEST

/* Appending a JSON string extends, never replaces. */
START_TEST(test_json_appends)
{
	struct tsr_sbuf sb;

	tsr_sbuf_init(&sb);
	tsr_sbuf_add(&sb, "{\"k\": ", 6);
	tsr_sbuf_json_str(&sb, "v\"1");
	tsr_sbuf_add(&sb, "}", 1);
	ck_assert_str_eq(tsr_sbuf_str(&sb), "{\"k\": \"v\\\"1\"}");
	tsr_sbuf_release(&sb);
}
END_TEST

START_TEST(test_strlcpy)
{
	char dst[8];
	size_t n;

	/* truncation: returns strlen(src), copies dstlen - 1 bytes plus NUL */
	n = tsr_strlcpy(dst, "hello world", sizeof(dst));
	ck_assert_uint_eq(n, 11);
	ck_assert_str_eq(dst, "hello w");
	/* exact fit */
	n = tsr_strlcpy(dst, "1234567", sizeof(dst));
	ck_assert_uint_eq(n, 7);
	ck_assert_str_eq(dst, "1234567");
	/* one over */
	n = tsr_strlcpy(dst, "12345678", sizeof(dst));
	ck_assert_uint_eq(n, 8);
	ck_assert_str_eq(dst, "1234567");
	/* empty source */
	n = tsr_strlcpy(dst, "", sizeof(dst));
	ck_assert_uint_eq(n, 0);
	ck_assert_str_eq(dst, "");
	/* dstlen 1: only the NUL */
	memset(dst, 'z', sizeof(dst));
	n = tsr_strlcpy(dst, "abc", 1);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(dst[0], '\0');
	ck_assert_int_eq(dst[1], 'z');
	/* dstlen 0: nothing written at all */
	memset(dst, 'z', sizeof(dst));
	n = tsr_strlcpy(dst, "abc", 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(dst[0], 'z');
}
END_TEST

START_TEST(test_errf)
{
	char err[16];

	/* NULL buffer: rc comes back, nothing is written */
	ck_assert_int_eq(tsr_errf(NULL, 0, -EINVAL, "x %d", 1), -EINVAL);
	ck_assert_int_eq(tsr_errf(NULL, 100, -ENOENT, "x %s", "y"), -ENOENT);
	/* errlen 0 with a buffer: untouched */
	memset(err, 'q', sizeof(err));
	ck_assert_int_eq(tsr_errf(err, 0, -EIO, "abc"), -EIO);
	ck_assert_int_eq(err[0], 'q');
	/* formatted */
	ck_assert_int_eq(tsr_errf(err, sizeof(err), -EPERM, "key %s=%d", "a", 5),
			 -EPERM);
	ck_assert_str_eq(err, "key a=5");
	/* truncated to the buffer, always NUL-terminated */
	ck_assert_int_eq(tsr_errf(err, sizeof(err), -E2BIG, "%s",
				  "0123456789abcdefghij"),
			 -E2BIG);
	ck_assert_str_eq(err, "0123456789abcde");
	/* rc is passed through whatever it is */
	ck_assert_int_eq(tsr_errf(err, sizeof(err), 0, "fine"), 0);
	ck_assert_str_eq(err, "fine");
}
END_TEST

START_TEST(test_clock_monotonic)
{
	uint64_t prev = tsr_mono_ns(), start = prev;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	for (int i = 0; i < 100000; i++) {
		uint64_t t = tsr_mono_ns();

		ck_assert_uint_ge(t, prev);
		prev = t;
	}
	nanosleep(&ts, NULL);
	prev = tsr_mono_ns();
	ck_assert_uint_ge(prev - start, 20ull * 1000 * 1000);
	ck_assert_uint_lt(prev - start, 5ull * 1000 * 1000 * 1000);
}
END_TEST

START_TEST(test_clock_wall)
{
	struct timespec b, a;
	uint64_t now, lo, hi;

	/* time() may lag CLOCK_REALTIME by a tick: compare with the clock */
	clock_gettime(CLOCK_REALTIME, &b);
	now = tsr_now_ns();
	clock_gettime(CLOCK_REALTIME, &a);
	lo = (uint64_t)b.tv_sec * 1000000000ull + (uint64_t)b.tv_nsec;
	hi = (uint64_t)a.tv_sec * 1000000000ull + (uint64_t)a.tv_nsec;
	ck_assert_uint_ge(now, lo);
	ck_assert_uint_le(now, hi);
	/* and it is this century's wall clock, not the monotonic one */
	ck_assert_uint_gt(now / 1000000000ull, 1600000000ull);
}
END_TEST

START_TEST(test_xalloc)
{
	char *s = tsr_xstrdup("tessera");
	unsigned char *z = tsr_xcalloc(64, 4);
	int arr[7];

	ck_assert_str_eq(s, "tessera");
	for (size_t i = 0; i < 256; i++)
		ck_assert_int_eq(z[i], 0);
	ck_assert_uint_eq(TSR_ARRAY_SIZE(arr), 7);
	free(s);
	free(z);
	/* zero-sized: may return NULL, must not abort */
	free(tsr_xcalloc(0, 8));
}
END_TEST

static Suite *
util_suite(void)
{
	Suite *s = suite_create("util");
	TCase *sb = tcase_create("sbuf");
	TCase *js = tcase_create("json");
	TCase *misc = tcase_create("misc");

	tcase_add_test(sb, test_sbuf_empty);
	tcase_add_test(sb, test_sbuf_growth);
	tcase_add_test(sb, test_sbuf_printf_large);
	tcase_add_test(sb, test_sbuf_binary);
	tcase_add_test(sb, test_sbuf_reset);
	tcase_add_test(sb, test_sbuf_sticky_error);
	suite_add_tcase(s, sb);

	tcase_add_test(js, test_json_plain);
	tcase_add_test(js, test_json_quote_backslash);
	tcase_add_test(js, test_json_control);
	tcase_add_test(js, test_json_high_bytes);
	tcase_add_test(js, test_json_appends);
	suite_add_tcase(s, js);

	tcase_add_test(misc, test_strlcpy);
	tcase_add_test(misc, test_errf);
	tcase_add_test(misc, test_clock_monotonic);
	tcase_add_test(misc, test_clock_wall);
	tcase_add_test(misc, test_xalloc);
	suite_add_tcase(s, misc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(util_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
