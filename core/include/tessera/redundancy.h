/* tessera/redundancy.h — the redundancy plugin kind: replication, erasure
 * coding.
 *
 * A redundancy scheme turns one logical object into n shards stored on the
 * n OSDs of a placement group's acting set, and back.  Replication has n
 * identical shards and needs any one to read; a k+m erasure code has n = k+m
 * shards of which any k suffice.  The OSD drives the protocol (ordering,
 * logs, acknowledgements); the plugin only says how bytes map to shards and
 * which shards are needed.
 *
 * Shard sets are bitmasks: bit i is shard i, so a scheme has at most 64
 * shards.
 *
 * Ownership: encode() writes each shard into shards[i].data, a buffer of
 * shard_size(len) bytes the caller provides — except when info() reports
 * TSR_REDUNDANCY_SHARES_INPUT: then the caller passes data = NULL and
 * encode() sets every shards[i].data to point into the input (replication
 * costs no copy); those pointers live as long as the input.  decode() and
 * repair() read shards[i] for the shards in `have` and write into caller
 * buffers.
 *
 * Offsets and lengths are logical (object) bytes; off must be a multiple
 * of the stripe width (stripe_unit * ndata, or any value when
 * stripe_unit is 0), so a partial overwrite re-encodes whole stripes.
 *
 * Threads.  An instance is immutable once create() has returned: every
 * operation may be called from any thread, any number of them at once on
 * one instance, and none blocks (no I/O, no lock a caller could wait on:
 * CPU time only, in proportion to len).  destroy() runs alone, after every
 * other call on the instance has returned.
 *
 * PROVISIONAL.  No daemon uses this kind yet (the OSD will): until one
 * does, its ABI may change in any release, unlike the backend and
 * placement kinds, which follow the growth rules of tessera/plugin.h.  The
 * ops table says which version of this header a plugin was built for
 * (abi_version); the loader refuses a plugin built for another one, with a
 * message naming both, rather than call it through a mismatched table.
 * A plugin of this kind must expect to be rebuilt for every release.
 *
 *   version 2: encode, decode and repair take an error buffer (err,
 *              errlen) like the other kinds' operations.
 *   before:    no error buffer; such plugins carry 0 in abi_version (the
 *              member did not exist) and are refused.
 */
#ifndef TESSERA_REDUNDANCY_H
#define TESSERA_REDUNDANCY_H

#include <tessera/plugin.h>

TSR_BEGIN_DECLS

typedef uint64_t tsr_shard_set;

/* info.flags */
#define TSR_REDUNDANCY_SHARES_INPUT 0x1u /* encode() points every shard at
					    the input instead of copying */

struct tsr_redundancy_info {
	uint32_t size;          /* sizeof(struct tsr_redundancy_info) */
	uint32_t nshards;       /* n: shards written per object */
	uint32_t ndata;         /* k: shards needed to read or rebuild */
	uint32_t stripe_unit;   /* logical bytes per data shard per stripe;
				   0: no striping (replication) */
	uint32_t flags;
};

struct tsr_shard_buf {
	void *data;             /* encode: output; decode: input or NULL */
	size_t len;
};

/* The version of this header's ops table (see PROVISIONAL above). */
#define TSR_REDUNDANCY_ABI_VERSION 2

struct tsr_redundancy_ops {
	uint32_t size; /* sizeof(struct tsr_redundancy_ops) as built */
	uint32_t abi_version; /* TSR_REDUNDANCY_ABI_VERSION as built */

	void (*info)(void *inst, struct tsr_redundancy_info *info);
	/* Bytes each shard stores for len logical bytes. */
	uint64_t (*shard_size)(void *inst, uint64_t len);

	/* Split the len logical bytes at object offset off (a whole number of
	 * stripes, or the object's tail) into nshards shards.  0, or a
	 * negative errno with the reason in err (e.g. -EINVAL for an off that
	 * is not on a stripe boundary, naming both). */
	int (*encode)(void *inst, uint64_t off, const void *data, size_t len,
		      struct tsr_shard_buf *shards, char *err, size_t errlen);
	/* Rebuild the len logical bytes at offset off from the shards whose
	 * bit is set in have (the others are ignored).  -EIO when have does
	 * not suffice, -EINVAL when a shard is too short; the reason names
	 * the shard. */
	int (*decode)(void *inst, uint64_t off, tsr_shard_set have,
		      const struct tsr_shard_buf *shards, void *out,
		      size_t len, char *err, size_t errlen);
	/* Rebuild the shards in want from the shards in have.  Errors as
	 * decode's. */
	int (*repair)(void *inst, tsr_shard_set have, tsr_shard_set want,
		      struct tsr_shard_buf *shards, char *err, size_t errlen);

	/* The smallest subset of available shards from which want can be read
	 * or rebuilt, preferring lower shard numbers (the primary first).
	 * -EIO when available does not suffice. */
	int (*minimum_to_read)(void *inst, tsr_shard_set want,
			       tsr_shard_set available, tsr_shard_set *need);

	/* Version 2 ends here.  Provisional: not frozen (see above). */
};

TSR_END_DECLS

#endif
