/* objhash.c — XXH32 and the object -> PG -> placement input chain. */
#include <tessera/hash.h>

#include <string.h>

/* XXH32 as specified by its author (github.com/Cyan4973/xxHash, "xxHash
 * fast digest algorithm", 32-bit variant): five primes, 16-byte stripes
 * over four accumulators, then the tail, then an avalanche. */
#define P1 0x9E3779B1u
#define P2 0x85EBCA77u
#define P3 0xC2B2AE3Du
#define P4 0x27D4EB2Fu
#define P5 0x165667B1u

static inline uint32_t
rotl(uint32_t x, int r)
{
	return (x << r) | (x >> (32 - r));
}

/* Little-endian load, whatever the host's byte order or alignment. */
static inline uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint32_t
round32(uint32_t acc, uint32_t in)
{
	acc += in * P2;
	acc = rotl(acc, 13);
	return acc * P1;
}

uint32_t
tsr_xxh32(const void *data, size_t len, uint32_t seed)
{
	const uint8_t *p = data, *end = p + len;
	uint32_t h;

	if (len >= 16) {
		const uint8_t *limit = end - 16;
		uint32_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed,
			 v4 = seed - P1;
		do {
			v1 = round32(v1, le32(p));
			v2 = round32(v2, le32(p + 4));
			v3 = round32(v3, le32(p + 8));
			v4 = round32(v4, le32(p + 12));
			p += 16;
		} while (p <= limit);
		h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
	} else {
		h = seed + P5;
	}
	h += (uint32_t)len;
	while (end - p >= 4) {
		h += le32(p) * P3;
		h = rotl(h, 17) * P4;
		p += 4;
	}
	while (p < end) {
		h += (uint32_t)*p * P5;
		h = rotl(h, 11) * P1;
		p++;
	}
	h ^= h >> 15;
	h *= P2;
	h ^= h >> 13;
	h *= P3;
	h ^= h >> 16;
	return h;
}

uint32_t
tsr_object_hash(const void *name, size_t len)
{
	return tsr_xxh32(name, len, 0);
}

uint32_t
tsr_pg_mask(uint32_t pg_num)
{
	uint32_t m = 0;

	while (m < pg_num - 1 && m != UINT32_MAX)
		m = (m << 1) | 1;
	return m;
}

uint32_t
tsr_stable_mod(uint32_t x, uint32_t b, uint32_t mask)
{
	return (x & mask) < b ? x & mask : x & (mask >> 1);
}

uint32_t
tsr_object_pg(const void *name, size_t len, uint32_t pg_num)
{
	if (pg_num == 0)
		return 0;
	return tsr_stable_mod(tsr_object_hash(name, len), pg_num,
			      tsr_pg_mask(pg_num));
}

uint32_t
tsr_pg_seed(uint64_t pool, uint32_t pg)
{
	uint8_t b[12];
	uint32_t run = pg >> 16;

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(pool >> (8 * i));
	for (int i = 0; i < 4; i++)
		b[8 + i] = (uint8_t)(run >> (8 * i));
	return (tsr_xxh32(b, sizeof(b), 0) & ~(uint32_t)0xff) ^ (pg & 0xffff);
}
