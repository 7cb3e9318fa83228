/* placebase.h — what Tessera's placement plugins share beyond the topology
 * model: the fixed hash and logarithm every draw is made of, the per-rule
 * tables the mapping loops walk, and every operation except map() itself.
 *
 * A plugin is then its descriptor plus one function: pb_map_fn.
 *
 * Draws.  An item of weight w draws -log2(U) / w, where U in (0, 1] comes
 * from a hash of (input, item); the smallest draw wins.  This is straw2's
 * exponential race ("the largest ln(U)/w wins", the same ordering): each
 * item wins with probability proportional to its weight, and an item's
 * draw depends only on its own weight, so changing one weight moves inputs
 * only to or from that item.
 *
 * Determinism.  Hashes are integer mixes; -log2 is computed in 32.32 fixed
 * point from a constant table with linear interpolation (no libm, whose
 * last bits differ between systems); the division by the weight is one
 * correctly rounded IEEE-754 double multiplication by a precomputed
 * reciprocal, identical on every IEEE host (the plugins are built with
 * -ffp-contract=off so no fused multiply-add changes the rounding).
 */
#ifndef TSR_PLACEBASE_H
#define TSR_PLACEBASE_H

#include <float.h>
#include <tessera/placement.h>
#include "topo.h"

/* Draws are compared as doubles; on a target that evaluates them in wider
 * registers (x87 without SSE) the comparisons could differ from other
 * hosts'.  Refuse to build there rather than place differently. */
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "placement draws need FLT_EVAL_METHOD == 0 (SSE2 or another IEEE-754 double unit)"
#endif

/* Devices of one failure domain that share a map weight.  Within a class
 * the smallest draw is the largest hash, so the mapping loop needs one
 * hash per device and one logarithm per class. */
struct pb_class {
	uint32_t first;     /* index into rule->dev */
	uint32_t count;
	uint32_t weight;    /* 16.16 map weight of every device in it */
	double inv_w;       /* 65536.0 / weight */
};

struct pb_domain {
	uint32_t first_class;
	uint32_t nclasses;
	uint64_t weight;    /* sum of its devices' map weights */
	double inv_w;       /* 65536.0 / weight */
	uint32_t key;       /* hash key of the domain (its bucket id) */
	int32_t id;         /* bucket id, or the device id for CHOOSE rules */
};

struct pb_rule {
	uint32_t id;
	uint32_t mode;
	uint32_t ndomains;
	struct pb_domain *domains;
	uint32_t nclasses;
	struct pb_class *classes;
	uint32_t ndev;
	int32_t *dev;       /* device ids, grouped by domain then class, by id */
	uint32_t *key;      /* dev[i]'s hash key for its draw */
	uint32_t *key_rw;   /* dev[i]'s hash key for its reweight test */
};

/* A loaded map: only the per-rule tables (the topology is dropped once
 * they are built).  Their total size is capped (PB_MAX_ENTRIES), so a
 * small hostile blob cannot make load() allocate without bound. */
struct pb_map {
	uint32_t max_devices;
	struct pb_rule *rules[TOPO_MAX_RULES]; /* by rule id */
};

#define PB_MAX_ENTRIES (1u << 22) /* device entries over all rules */

/* Fill out[0..nrep) for input x under rule r; see tsr_placement_ops.map.
 * nrep is 1..64; weights as given by the caller. */
typedef int (*pb_map_fn)(const struct pb_map *m, const struct pb_rule *r,
			 uint32_t x, uint32_t nrep, const uint32_t *weights,
			 uint32_t nweights, int32_t *out);

/* ---- Hash and logarithm -------------------------------------------------*/

/* murmur3's 64-bit finaliser over (x, key): a bijective mix, so distinct
 * (x, key) pairs never collide before the final truncation. */
static inline uint32_t
pb_hash(uint32_t x, uint32_t key)
{
	uint64_t z = ((uint64_t)x << 32) | key;

	z ^= z >> 33;
	z *= 0xff51afd7ed558ccdull;
	z ^= z >> 33;
	z *= 0xc4ceb9fe1a85ec53ull;
	z ^= z >> 33;
	return (uint32_t)z;
}

/* ---- Stratified draws (the crush plugin) -----------------------------------
 *
 * Independent draws make every device's count over many inputs binomial:
 * with 3000 placements per device the largest of 1000 devices sits ~5.5%
 * above the mean.  Much of that variance is how often the device's own
 * draw lands high, so the crush plugin stratifies it, on two levels.
 *
 * Level 1: inputs are taken in aligned blocks of 256 (position s = x & 255
 * in block x >> 8); for each (device, block) a keyed permutation of 0..255
 * gives the device's draw at each position its own stratum v, the top 8
 * bits of the 24-bit draw.  Over a whole block each device draws exactly
 * once from each 1/256 of the range (Latin hypercube sampling).
 *
 * Level 2: blocks are taken in aligned superblocks of 256 (block t =
 * (x >> 8) & 255 in superblock x >> 16); in each block a device has one
 * input in stratum v, and for each (device, superblock, v) a second keyed
 * permutation gives those 256 inputs distinct sub-strata u, the next 8
 * bits.  So over a superblock each device draws exactly once from each
 * 1/65536 of the range.  The last 8 bits break ties.
 *
 * Why two: the strata only help where a device's winning draws span
 * several of them.  With many devices a device wins only with a draw in
 * its top 1/256, which level 1 alone leaves to chance (4000 devices, 3
 * replicas: level 1 alone gives 0.90x the binomial spread; both: 0.56x).
 *
 * For a single input the draw is as uniform as an independent one, so
 * weights, ties and the movement properties are unchanged; keys are fresh
 * for every block and superblock, so two devices' strata are unrelated
 * from one to the next.  (The level-2 key multiplies by 2v + 1 after the
 * superblock key is XORed in, not XORs v in: with XOR alone, two devices
 * whose keys differ by the XOR of two strata's constants would share
 * level-2 keys in every superblock.)  Core's tsr_pg_seed keeps a pool's groups together
 * in such blocks and superblocks, so a pool's groups get the benefit, not
 * only a test's range of inputs.
 *
 * All arithmetic is 32-bit integer: identical on every host, and it
 * vectorises (pb_strat_draws processes eight devices at a time where the
 * CPU allows).  The two macros below are the single definition of the
 * mixing; they work alike on a uint32_t and on a vector of them. */
#define PB_SEED_BLOCK 0x7f4a7c15u
#define PB_SEED_SUPER 0x165667b1u

/* a: a key made from a device key and a block key (in place). */
#define PB_KEYMIX(a)                  \
	do {                          \
		(a) *= 0x9e3779b1u;   \
		(a) ^= (a) >> 15;     \
		(a) *= 0x85ebca6bu;   \
		(a) ^= (a) >> 13;     \
	} while (0)

/* v = the image of i in 0..255 under the permutation keyed by a: every
 * step is a bijection of 0..255. */
#define PB_PERM8(v, i, a)                                          \
	do {                                                       \
		(v) = ((i) * ((a) | 1) + ((a) >> 11)) & 0xff;      \
		(v) ^= (v) >> 4;                                   \
		(v) = (((v) ^ ((a) >> 24)) * 0x2c1b3c6du) & 0xff;  \
		(v) ^= (v) >> 5;                                   \
	} while (0)

/* murmur3's 32-bit finaliser: a bijection. */
static inline uint32_t
pb_fmix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/* What every device's draw for input x is made from. */
struct pb_strat_in {
	uint32_t kq;  /* key of the block */
	uint32_t kQ;  /* key of the superblock */
	uint32_t s;   /* position in the block */
	uint32_t t;   /* position of the block in the superblock */
};

static inline struct pb_strat_in
pb_strat_input(uint32_t x)
{
	struct pb_strat_in in = {
		.kq = pb_fmix32((x >> 8) * 0x9e3779b9u + PB_SEED_BLOCK),
		.kQ = pb_fmix32((x >> 16) * 0x85ebca77u + PB_SEED_SUPER),
		.s = x & 0xff,
		.t = (x >> 8) & 0xff,
	};
	return in;
}

/* The 24-bit draw of the device with hash key `key` for the input in:
 * the reference definition (pb_strat_draws computes the same in bulk). */
static inline uint32_t
pb_strat_draw(uint32_t key, const struct pb_strat_in *in)
{
	uint32_t a = key ^ in->kq, b, v, u;

	PB_KEYMIX(a);                   /* the (device, block) key */
	PB_PERM8(v, in->s, a);          /* level 1: the stratum */
	b = (key ^ in->kQ) * (2 * v + 1);
	PB_KEYMIX(b);                   /* the (device, superblock, v) key */
	PB_PERM8(u, in->t, b);          /* level 2: the sub-stratum */
	return (v << 16) | (u << 8) | (((in->s ^ a) * 0x27d4eb2du) >> 24);
}

/* out[i] = pb_strat_draw(keys[i], in) for i < n. */
void pb_strat_draws(const uint32_t *keys, uint32_t n,
		    const struct pb_strat_in *in, uint32_t *out);

/* For tests: the same with a given copy of the loop, 0 the generic one, 1
 * the AVX2 one; -ENOTSUP if this build or CPU has no such copy. */
int pb_strat_draws_copy(int copy, const uint32_t *keys, uint32_t n,
			const struct pb_strat_in *in, uint32_t *out);

extern const uint64_t pb_log2_table[257];

/* -log2(v / 2^24) in 32.32 fixed point, for v in [1, 2^24]: 0 for v = 2^24,
 * growing as v shrinks; monotone. */
static inline uint64_t
pb_neglog2(uint32_t v)
{
	int e = 31 - __builtin_clz(v);
	uint32_t t = v << (31 - e);
	uint32_t idx = (t >> 23) & 0xff;
	uint64_t rem = (t >> 7) & 0xffff;
	uint64_t lo = pb_log2_table[idx], hi = pb_log2_table[idx + 1];
	uint64_t l2 = ((uint64_t)e << 32) + lo + (((hi - lo) * rem) >> 16);

	return ((uint64_t)24 << 32) - l2;
}

/* The draw of a 24-bit hash value h for weight 1/inv_w. */
static inline double
pb_draw24(uint32_t h, double inv_w)
{
	return (double)pb_neglog2(h + 1) * inv_w;
}

/* Whether device d takes part for input x given its runtime weight:
 * always at TSR_WEIGHT_ONE, never at 0, else for a deterministic
 * weight/65536 share of inputs. */
static inline int
pb_accept(const struct pb_rule *r, uint32_t i, uint32_t x, const uint32_t *w,
	  uint32_t nw)
{
	int32_t d = r->dev[i];
	uint32_t rw = (uint32_t)d < nw ? w[d] : 0;

	if (rw >= TSR_WEIGHT_ONE)
		return 1;
	if (rw == 0)
		return 0;
	return (pb_hash(x, r->key_rw[i]) & 0xffff) < rw;
}

/* Whether any device of domain dm may take part (runtime weight > 0):
 * a cheap test that needs no hashing. */
static inline int
pb_domain_alive(const struct pb_rule *r, const struct pb_domain *dm,
		const uint32_t *w, uint32_t nw)
{
	for (uint32_t ci = 0; ci < dm->nclasses; ci++) {
		const struct pb_class *c = &r->classes[dm->first_class + ci];
		for (uint32_t i = c->first; i < c->first + c->count; i++)
			if ((uint32_t)r->dev[i] < nw && w[r->dev[i]] != 0)
				return 1;
	}
	return 0;
}

/* Where a device's 24-bit hash value comes from: hr(ctx, i) for the
 * device at index i of the rule (a constant function at every call site,
 * so the compiler inlines it). */
typedef uint32_t (*pb_hash24_fn)(void *ctx, uint32_t i);

/* The best device of domain dm for input x among those taking part, with
 * its draw in *draw; -1 if none takes part.  One hash value per device,
 * one logarithm per weight class (the best of equal-weight draws is the
 * largest hash).  Only the 24 bits that the draw uses are compared, so
 * equal draws are ties everywhere, and every tie goes to the lower device
 * id (devices are stored in id order: '>' keeps the first). */
static inline int32_t
pb_domain_best(const struct pb_rule *r, const struct pb_domain *dm,
	       uint32_t x, const uint32_t *w, uint32_t nw, pb_hash24_fn hr,
	       void *ctx, double *draw)
{
	double best = 0;
	int32_t dev = -1;

	for (uint32_t ci = 0; ci < dm->nclasses; ci++) {
		const struct pb_class *c = &r->classes[dm->first_class + ci];
		uint32_t maxh = 0;
		int32_t arg = -1;

		for (uint32_t i = c->first; i < c->first + c->count; i++) {
			uint32_t h = hr(ctx, i);
			if ((arg < 0 || h > maxh) && pb_accept(r, i, x, w, nw)) {
				maxh = h;
				arg = r->dev[i];
			}
		}
		if (arg < 0)
			continue;
		double dr = pb_draw24(maxh, c->inv_w);
		if (dev < 0 || dr < best || (dr == best && arg < dev)) {
			best = dr;
			dev = arg;
		}
	}
	*draw = best;
	return dev;
}

/* ---- Operations shared by every placement plugin ---------------------------*/

int pb_create(const struct tsr_host *host, const struct tsr_opts *opts,
	      void **instance, char *err, size_t errlen);
void pb_destroy(void *instance);
int pb_encode(void *inst, const struct tsr_topology *topo,
	      struct tsr_buf *out, char *err, size_t errlen);
int pb_compile(void *inst, const char *text, size_t len, struct tsr_buf *out,
	       char *err, size_t errlen);
int pb_decompile(void *inst, const void *map, size_t len, struct tsr_buf *out,
		 char *err, size_t errlen);
int pb_load(void *inst, const void *map, size_t len, char *err, size_t errlen);
uint32_t pb_max_devices(void *inst);
int pb_rule_width(void *inst, uint32_t rule, uint32_t *width);
/* map() for a plugin whose algorithm is fn: checks the arguments, fills
 * out with TSR_PLACEMENT_NONE, calls fn, counts the filled positions. */
int pb_map(void *inst, pb_map_fn fn, uint32_t rule, uint32_t x,
	   uint32_t nrep, const uint32_t *weights, uint32_t nweights,
	   int32_t *out);

#define PB_MAX_REP 64

#endif
