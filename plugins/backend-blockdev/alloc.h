/* alloc.h — the free space of a block device, in blocks of one size.
 *
 * backend-blockdev writes new data only into free space and makes it
 * visible with one metadata commit, so it needs an allocator that can
 * hand out space, take it back, and be rebuilt at mount from the extent
 * maps in the metadata store (which are the truth; the allocator is
 * derived state and is never written to disk itself).
 *
 * A bitmap, one bit per block (1 = in use): 32 MiB of memory per TiB of
 * 4 KiB blocks, exact, and simple enough to check against a model.
 * Allocation is next-fit from a moving hint, which keeps consecutive
 * writes contiguous and spreads wear; a request is satisfied by one run
 * when one exists, else by the fewest runs found in one pass.
 *
 * Not thread-safe: the backend serializes calls.
 */
#ifndef TSR_BD_ALLOC_H
#define TSR_BD_ALLOC_H

#include <stdint.h>

struct bd_extent {
	uint64_t start;  /* first block */
	uint64_t count;  /* blocks */
};

struct bd_alloc;

/* Every block free.  -ENOMEM, or -EINVAL for nblocks 0. */
int bd_alloc_create(uint64_t nblocks, struct bd_alloc **out);
void bd_alloc_destroy(struct bd_alloc *a);

/* Mark [start, start+count) in use (mount-time rebuild).  -EEXIST if any
 * block of it already is (two objects claim it: the caller's fsck must
 * know), -ERANGE if it passes the end; nothing changes on error. */
int bd_alloc_mark_used(struct bd_alloc *a, uint64_t start, uint64_t count);

/* Take want blocks as at most max_ext extents (written to ext, *next
 * gets how many).  -ENOSPC when that cannot be done, and then nothing
 * changes: a transaction either gets all its space or fails before it
 * writes anything. */
int bd_alloc_take(struct bd_alloc *a, uint64_t want, struct bd_extent *ext,
		  uint32_t max_ext, uint32_t *next);

/* Give back [start, start+count).  -EINVAL if any block of it is free
 * already (a double free), -ERANGE past the end; nothing changes on error. */
int bd_alloc_release(struct bd_alloc *a, uint64_t start, uint64_t count);

uint64_t bd_alloc_free_blocks(const struct bd_alloc *a);
uint64_t bd_alloc_total_blocks(const struct bd_alloc *a);

#endif
