/* tessera/hash.h — the fixed hash functions every party must compute alike:
 * object name -> placement group, placement group -> placement input.
 *
 * These functions are part of the on-disk and on-wire contract: an object
 * written by one client is found by every other only because all of them
 * hash its name the same way.  They never change; a different function
 * would be a new, separately versioned one.
 *
 *   object --(tsr_object_hash: XXH32 of the name, seed 0)--> 32-bit hash
 *          --(tsr_stable_mod with pg_num)--------------------> pg in [0, pg_num)
 *   (pool, pg) --(tsr_pg_seed)-------------------------------> placement input x
 *
 * Stable modulo (as in Ceph) instead of plain `% pg_num`: when pg_num grows
 * by one, the objects of exactly one placement group are split between it
 * and the new one, and every other object stays where it was.  Doubling
 * pg_num splits every group in two.
 */
#ifndef TESSERA_HASH_H
#define TESSERA_HASH_H

#include <tessera/common.h>

TSR_BEGIN_DECLS

/* XXH32 (xxHash, 32-bit variant) of len bytes with seed. */
TSR_API uint32_t tsr_xxh32(const void *data, size_t len, uint32_t seed);

/* The hash of an object name: tsr_xxh32(name, len, 0). */
TSR_API uint32_t tsr_object_hash(const void *name, size_t len);

/* The smallest 2^k - 1 >= pg_num - 1 (pg_num >= 1). */
TSR_API uint32_t tsr_pg_mask(uint32_t pg_num);

/* x mod b, stable under growth of b: (x & mask) if that is < b, else
 * (x & (mask >> 1)), with mask = tsr_pg_mask(b). */
TSR_API uint32_t tsr_stable_mod(uint32_t x, uint32_t b, uint32_t mask);

/* The placement group of an object in a pool of pg_num groups. */
TSR_API uint32_t tsr_object_pg(const void *name, size_t len, uint32_t pg_num);

/* The input handed to the placement plugin for group pg of pool:
 *
 *     h = XXH32(pool as u64 LE, pg >> 16 as u32 LE; seed 0)
 *     x = (h & ~0xff) ^ (pg & 0xffff)
 *
 * The groups of a pool stay together: every 256 groups (pg >> 8) fill one
 * aligned block of 256 consecutive inputs, in order, and every 65536
 * groups (a whole pool while pg_num is at most 65536) fill one aligned run
 * of 65536 inputs, the blocks in an order set by h; a plugin may spread
 * each device's draws evenly over blocks and runs (crush does).
 *
 * Two pools share inputs only when their h agree in the top 16 bits (odds
 * 2^-16 per pair of pools) and their blocks overlap (likely for big pools,
 * 1 in 256 for two pools of one block each); the groups that overlap are
 * then placed alike, which costs balance, never correctness.  On average
 * as many blocks collide as if every block were placed at random (2^-24
 * per pair of blocks), but they come a pair of pools at a time.  For
 * 400,000 groups in all: in 1,562 pools of 256 groups the odds that any
 * two share inputs are about 7%; in six pools of 65,536, about 0.02%.
 *
 * Changed on 2026-12-04 (in three steps that day), before any daemon
 * placed data with it: it was XXH32 of (pool u64 LE, pg u32 LE), one
 * unrelated input per group. */
TSR_API uint32_t tsr_pg_seed(uint64_t pool, uint32_t pg);

TSR_END_DECLS

#endif
