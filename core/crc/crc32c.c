/* crc32c.c — CRC32C with the SSE4.2 crc32 instruction when the CPU has it
 * and a slice-by-8 table implementation otherwise. */
#include <tessera/crc32c.h>

#include "crc/crc32c_impl.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define TSR_CRC_X86 1
#include <nmmintrin.h>
#endif

/* Reflected form of 0x1EDC6F41: bits are processed LSB first. */
#define CRC32C_POLY 0x82F63B78u

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

/* crc_table[0] is the classic byte-at-a-time table; crc_table[k][b] is the
 * CRC of byte b followed by k zero bytes, which lets the loop fold eight
 * input bytes with eight independent lookups. */
static uint32_t crc_table[8][256];

#ifdef TSR_CRC_X86
/* The hardware loop runs three streams of CRC_STRIDE bytes side by side
 * (the crc32 instruction's latency is three times its issue rate) and
 * joins them with crc_shift: crc_shift[k][b] is what byte k of the CRC
 * register being b becomes after CRC_STRIDE zero bytes, so four lookups
 * advance a register over a stream.  1360 * 3 + 16 = 4096, a block. */
#define CRC_STRIDE 1360
static uint32_t crc_shift[4][256];
#endif

/* For tsr_crc32c_combine: x2n[k] is x^(2^k) modulo the polynomial (bit 31
 * is x^0, as the reflected register holds it); shift4k[k][b] is what byte
 * k of a register being b becomes after 4096 zero bytes (a stored block:
 * combining block checksums is the common case). */
#define X2N 67 /* x^(8 * len) for any 64-bit len */
static uint32_t x2n[X2N];
static uint32_t shift4k[4][256];

static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
/* Written only inside crc_init; pthread_once orders that write before
 * every caller's read, so no atomics are needed. */
static crc_fn crc_impl = tsr_crc32c_sw;
static const char *crc_impl_name = "table";

/* a * b modulo the polynomial, both reflected. */
static uint32_t
multmodp(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31, p = 0;

	if (a == 0)
		return 0;
	for (;;) {
		if (a & m) {
			p ^= b;
			if ((a & (m - 1)) == 0)
				break;
		}
		m >>= 1;
		b = (b >> 1) ^ (CRC32C_POLY & (0u - (b & 1)));
	}
	return p;
}

/* x^(8 * len): the operator that moves a register over len zero bytes. */
static uint32_t
bytes_op(uint64_t len)
{
	uint32_t p = 1u << 31;

	for (int k = 3; len != 0 && k < X2N; k++, len >>= 1)
		if (len & 1)
			p = multmodp(x2n[k], p);
	return p;
}

static void
crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		crc_table[0][i] = c;
	}
	for (int k = 1; k < 8; k++)
		for (int i = 0; i < 256; i++) {
			uint32_t c = crc_table[k - 1][i];

			crc_table[k][i] = (c >> 8) ^ crc_table[0][c & 0xff];
		}

	/* tsr_crc32c_combine's, on every architecture */
	x2n[0] = 1u << 30; /* x^1 */
	for (int k = 1; k < X2N; k++)
		x2n[k] = multmodp(x2n[k - 1], x2n[k - 1]);
	{
		uint32_t op = bytes_op(4096);

		for (int k = 0; k < 4; k++)
			for (uint32_t b = 0; b < 256; b++)
				shift4k[k][b] = multmodp(op, b << (8 * k));
	}
#ifdef TSR_CRC_X86
	{
		/* column i: the register 1 << i after CRC_STRIDE zero bytes */
		uint32_t col[32];

		for (int i = 0; i < 32; i++) {
			uint32_t c = 1u << i;

			for (int n = 0; n < CRC_STRIDE; n++)
				c = crc_table[0][c & 0xff] ^ (c >> 8);
			col[i] = c;
		}
		for (int k = 0; k < 4; k++)
			for (uint32_t b = 0; b < 256; b++) {
				uint32_t v = 0;

				for (int i = 0; i < 8; i++)
					if (b & (1u << i))
						v ^= col[8 * k + i];
				crc_shift[k][b] = v;
			}
	}
	/* Needed when called before constructors have run (e.g. from
	 * another library's constructor); harmless otherwise. */
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2")) {
		crc_impl = tsr_crc32c_hw;
		crc_impl_name = "sse4.2";
	}
#endif
}

/* Little-endian load assembled from bytes: independent of host byte order
 * and alignment; compilers turn it into one load on little-endian hosts. */
static inline uint32_t
load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

uint32_t
tsr_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc_once, crc_init);
	crc = ~crc;
	while (len >= 8) {
		uint32_t lo = crc ^ load_le32(p);
		uint32_t hi = load_le32(p + 4);

		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#ifdef TSR_CRC_X86
#ifdef __x86_64__
/* The register c after CRC_STRIDE zero bytes. */
static inline uint32_t
crc_advance(uint32_t c)
{
	return crc_shift[0][c & 0xff] ^ crc_shift[1][(c >> 8) & 0xff] ^
	       crc_shift[2][(c >> 16) & 0xff] ^ crc_shift[3][c >> 24];
}
#endif

__attribute__((target("sse4.2"))) uint32_t
tsr_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
	/* Unaligned wide loads are legal on x86 but can straddle cache lines;
	 * a few single bytes first keep the main loop aligned. */
	while (len > 0 && ((uintptr_t)p & 7) != 0) {
		crc = _mm_crc32_u8(crc, *p++);
		len--;
	}
#ifdef __x86_64__
	uint64_t c = crc;

	if (len >= 3 * CRC_STRIDE)
		pthread_once(&crc_once, crc_init); /* crc_shift */
	while (len >= 3 * CRC_STRIDE) {
		/* stream 0 continues the register, 1 and 2 start at zero;
		 * the register is linear in them: advance and fold */
		uint64_t c1 = 0, c2 = 0;

		for (size_t i = 0; i < CRC_STRIDE; i += 8) {
			uint64_t v0, v1, v2;

			memcpy(&v0, p + i, 8);
			memcpy(&v1, p + CRC_STRIDE + i, 8);
			memcpy(&v2, p + 2 * CRC_STRIDE + i, 8);
			c = _mm_crc32_u64(c, v0);
			c1 = _mm_crc32_u64(c1, v1);
			c2 = _mm_crc32_u64(c2, v2);
		}
		c = crc_advance((uint32_t)c) ^ c1;
		c = crc_advance((uint32_t)c) ^ c2;
		p += 3 * CRC_STRIDE;
		len -= 3 * CRC_STRIDE;
	}
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, sizeof(v));
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	crc = (uint32_t)c;
#else
	while (len >= 4) {
		uint32_t v;

		memcpy(&v, p, sizeof(v));
		crc = _mm_crc32_u32(crc, v);
		p += 4;
		len -= 4;
	}
#endif
	while (len--)
		crc = _mm_crc32_u8(crc, *p++);
	return ~crc;
}
#else
/* No crc32 instruction here; crc_init never selects this. */
uint32_t
tsr_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return tsr_crc32c_sw(crc, buf, len);
}
#endif

uint32_t
tsr_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init);
	return crc_impl(crc, buf, len);
}

uint32_t
tsr_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2)
{
	pthread_once(&crc_once, crc_init);
	if (len2 == 4096)
		return shift4k[0][crc1 & 0xff] ^ shift4k[1][(crc1 >> 8) & 0xff] ^
		       shift4k[2][(crc1 >> 16) & 0xff] ^ shift4k[3][crc1 >> 24] ^ crc2;
	return multmodp(bytes_op(len2), crc1) ^ crc2;
}

const char *
tsr_crc32c_impl(void)
{
	pthread_once(&crc_once, crc_init);
	return crc_impl_name;
}
