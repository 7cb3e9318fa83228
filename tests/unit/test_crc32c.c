/* test_crc32c.c — CRC32C vectors, chaining, table vs SSE4.2 agreement. */
#include <tessera/crc32c.h>

#include "crc/crc32c_impl.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static bool
have_hw(void)
{
	return strcmp(tsr_crc32c_impl(), "sse4.2") == 0;
}

/* Every implementation the test can run on this CPU, by name. */
struct impl {
	const char *name;
	crc_fn fn;
};

static size_t
impls(struct impl out[3])
{
	size_t n = 0;

	out[n++] = (struct impl){ "dispatch", tsr_crc32c };
	out[n++] = (struct impl){ "sw", tsr_crc32c_sw };
	if (have_hw())
		out[n++] = (struct impl){ "hw", tsr_crc32c_hw };
	return n;
}

/* xorshift64*: fixed-seed, libc-independent, so failures reproduce. */
static uint64_t rng_state;

static uint64_t
rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

/* Exactly n bytes (one for n == 0, since malloc(0) may return NULL), so
 * that ASan flags any read past the end. */
static uint8_t *
alloc_exact(size_t n)
{
	uint8_t *p = malloc(n != 0 ? n : 1);

	ck_assert_ptr_nonnull(p);
	return p;
}

/* Check a vector against every implementation, from an exactly-sized heap
 * copy so ASan catches any read past the end. */
static void
check_vector(const char *what, const void *data, size_t len, uint32_t want)
{
	struct impl im[3];
	size_t n = impls(im);
	uint8_t *copy = alloc_exact(len);

	memcpy(copy, data, len);
	for (size_t i = 0; i < n; i++) {
		uint32_t got = im[i].fn(0, copy, len);

		ck_assert_msg(got == want, "%s via %s: got 0x%08X want 0x%08X",
			      what, im[i].name, (unsigned)got, (unsigned)want);
	}
	free(copy);
}

START_TEST(test_dispatch_matches_cpu)
{
	const char *name = tsr_crc32c_impl();

	ck_assert(strcmp(name, "sse4.2") == 0 || strcmp(name, "table") == 0);
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	ck_assert_int_eq(have_hw(), !!__builtin_cpu_supports("sse4.2"));
#else
	ck_assert_str_eq(name, "table");
#endif
}
END_TEST

START_TEST(test_rfc3720_vectors)
{
	uint8_t buf[32];

	memset(buf, 0x00, sizeof(buf));
	check_vector("32 zero bytes", buf, sizeof(buf), 0x8A9136AA);
	memset(buf, 0xFF, sizeof(buf));
	check_vector("32 0xFF bytes", buf, sizeof(buf), 0x62A8AB43);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	check_vector("32 ascending bytes", buf, sizeof(buf), 0x46DD794E);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	check_vector("32 descending bytes", buf, sizeof(buf), 0x113FDB5C);
}
END_TEST

START_TEST(test_check_value)
{
	check_vector("\"123456789\"", "123456789", 9, 0xE3069283);
}
END_TEST

START_TEST(test_empty)
{
	struct impl im[3];
	size_t n = impls(im);

	check_vector("empty", "", 0, 0);
	/* A zero-length update leaves any running value alone, even with a
	 * NULL buffer. */
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(im[i].fn(0, NULL, 0), 0);
		ck_assert_uint_eq(im[i].fn(0xE3069283, NULL, 0), 0xE3069283);
	}
}
END_TEST

START_TEST(test_chaining)
{
	enum { LEN = 300 };
	uint8_t *buf = alloc_exact(LEN);
	struct impl im[3];
	size_t n = impls(im);

	rng_state = 0x9E3779B97F4A7C15ull;
	for (size_t i = 0; i < LEN; i++)
		buf[i] = (uint8_t)rng();
	for (size_t i = 0; i < n; i++) {
		uint32_t whole = im[i].fn(0, buf, LEN);
		uint32_t bytewise = 0;

		/* Every split point, including the empty head and tail. */
		for (size_t k = 0; k <= LEN; k++) {
			uint32_t c = im[i].fn(im[i].fn(0, buf, k), buf + k,
					      LEN - k);

			ck_assert_msg(c == whole, "%s: split at %zu", im[i].name,
				      k);
		}
		for (size_t k = 0; k < LEN; k++)
			bytewise = im[i].fn(bytewise, buf + k, 1);
		ck_assert_uint_eq(bytewise, whole);
	}
	/* "123456789" in three pieces gives the check value. */
	ck_assert_uint_eq(tsr_crc32c(tsr_crc32c(tsr_crc32c(0, "1234", 4),
						 "5", 1), "6789", 4),
			  0xE3069283);
	free(buf);
}
END_TEST

/* Small lengths at every alignment exercise each head/tail combination. */
START_TEST(test_sw_hw_small_exhaustive)
{
	if (!have_hw())
		return;
	rng_state = 12345;
	for (size_t off = 0; off < 16; off++)
		for (size_t len = 0; len <= 80; len++) {
			uint8_t *buf = alloc_exact(off + len);

			for (size_t i = 0; i < off + len; i++)
				buf[i] = (uint8_t)rng();
			ck_assert_msg(tsr_crc32c_sw(0, buf + off, len) ==
					      tsr_crc32c_hw(0, buf + off, len),
				      "off %zu len %zu", off, len);
			free(buf);
		}
}
END_TEST

/* Around the lengths where the hardware loop's three streams start,
 * repeat and hand over to the tail: 3 * 1360 = 4080. */
START_TEST(test_sw_hw_stream_edges)
{
	static const size_t base[] = { 4080, 4096, 8160, 12240, 65536 };

	if (!have_hw())
		return;
	rng_state = 777;
	for (size_t b = 0; b < sizeof(base) / sizeof(base[0]); b++)
		for (size_t off = 0; off < 9; off++)
			for (size_t len = base[b] - 9; len <= base[b] + 9; len++) {
				uint8_t *buf = alloc_exact(off + len);
				uint32_t seed = (uint32_t)rng();

				for (size_t i = 0; i < off + len; i++)
					buf[i] = (uint8_t)rng();
				ck_assert_msg(tsr_crc32c_sw(seed, buf + off, len) ==
						      tsr_crc32c_hw(seed, buf + off, len),
					      "off %zu len %zu", off, len);
				free(buf);
			}
}
END_TEST

START_TEST(test_sw_hw_random)
{
	if (!have_hw())
		return;
	rng_state = 0xC0FFEE;
	for (int iter = 0; iter < 2000; iter++) {
		size_t off = rng() % 16;
		/* half short, half past the three-stream loop's 4080 bytes
		 * (once or several times) */
		size_t len = iter % 2 ? rng() % 4097 : 4000 + rng() % 12000;
		uint32_t seed = (uint32_t)rng();
		uint8_t *buf = alloc_exact(off + len);

		for (size_t i = 0; i < off + len; i++)
			buf[i] = (uint8_t)rng();
		ck_assert_msg(tsr_crc32c_sw(seed, buf + off, len) ==
				      tsr_crc32c_hw(seed, buf + off, len),
			      "iter %d off %zu len %zu", iter, off, len);
		free(buf);
	}
}
END_TEST

/* combine(crc(a), crc(b), |b|) == crc(a||b): every length of b up to a few
 * blocks (4096 takes the table path), empty a and b, and a chain of
 * blocks folded one at a time as the store's reads do. */
START_TEST(test_combine)
{
	size_t cap = 3 * 4096 + 100;
	uint8_t *buf = alloc_exact(cap);
	uint32_t folded = 0;

	rng_state = 0xFEED;
	for (size_t i = 0; i < cap; i++)
		buf[i] = (uint8_t)rng();
	for (int iter = 0; iter < 3000; iter++) {
		size_t a = iter < 10 ? (size_t)iter : rng() % 5000;
		size_t b = iter % 3 == 0 ? 4096 : iter % 3 == 1 ? rng() % 64 : rng() % (cap - 5000);
		uint32_t ca = tsr_crc32c(0, buf, a), cb = tsr_crc32c(0, buf + a, b);

		ck_assert_msg(tsr_crc32c_combine(ca, cb, b) == tsr_crc32c(0, buf, a + b),
			      "a %zu b %zu", a, b);
	}
	for (int i = 0; i < 3; i++)
		folded = i == 0 ? tsr_crc32c(0, buf, 4096)
				: tsr_crc32c_combine(folded, tsr_crc32c(0, buf + 4096 * i, 4096), 4096);
	ck_assert_uint_eq(folded, tsr_crc32c(0, buf, 3 * 4096));
	ck_assert_uint_eq(tsr_crc32c_combine(0, 0, 0), 0);
	ck_assert_uint_eq(tsr_crc32c_combine(tsr_crc32c(0, buf, 77), 0, 0), tsr_crc32c(0, buf, 77));
	/* a long length goes through many powers: a megabyte of zeros */
	{
		size_t n = 1 << 20;
		uint8_t *z = calloc(1, n);

		ck_assert_ptr_nonnull(z);
		ck_assert_uint_eq(tsr_crc32c_combine(tsr_crc32c(0, buf, 100), tsr_crc32c(0, z, n), n),
				  tsr_crc32c(tsr_crc32c(0, buf, 100), z, n));
		free(z);
	}
	free(buf);
}
END_TEST

static Suite *
crc32c_suite(void)
{
	Suite *s = suite_create("crc32c");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_dispatch_matches_cpu);
	tcase_add_test(tc, test_rfc3720_vectors);
	tcase_add_test(tc, test_check_value);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_chaining);
	tcase_add_test(tc, test_sw_hw_stream_edges);
	tcase_add_test(tc, test_sw_hw_small_exhaustive);
	tcase_add_test(tc, test_sw_hw_random);
	tcase_add_test(tc, test_combine);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(crc32c_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
