/* tessera/partitioner.h — the partitioner plugin kind: which MDS rank is
 * authoritative for which part of the namespace.
 *
 * The namespace is a tree of directories; a large directory is split into
 * fragments, each a range of the 32-bit hash of entry names, written as
 * (value, bits): fragment 0b01/2 holds the names whose hash's top 2 bits are
 * 01.  A unit of authority is one directory fragment ("dirfrag").
 *
 * The MDS asks the partitioner three questions:
 *   - where: which rank should own a dirfrag that nobody owns yet (a new
 *     directory, or the whole tree at start-up);
 *   - balance: given each rank's recent load, which subtrees should move
 *     and to whom;
 *   - fragment: should a dirfrag be split or merged.
 * Ranks are 0 .. nranks-1, all active when the question is asked (the MDS
 * renumbers nothing: a failed rank is taken over by a standby under the same
 * number before the partitioner is consulted again).  Fragments are defined
 * on the MDS's name hash, which the partitioner never computes.
 *
 * The answers are advice: the MDS cluster carries out migrations with its
 * own protocol and records the result in its journal, so a partitioner may
 * keep soft state (load history) but is never the source of truth.
 *
 * Threads.  The MDS calls one instance from one thread at a time (where,
 * balance and fragment never overlap on an instance), so a plugin may
 * update its soft state without locking; different instances may be called
 * concurrently.  The operations do no I/O and must not block: the MDS
 * asks them on its request path.  balance() calls cb on the calling thread,
 * before it returns.  destroy() runs alone.
 *
 * PROVISIONAL.  No daemon uses this kind yet (the MDS will): until one
 * does, its ABI may change in any release, unlike the backend and
 * placement kinds, which follow the growth rules of tessera/plugin.h.  The
 * ops table says which version of this header a plugin was built for
 * (abi_version); the loader refuses a plugin built for another one.  A
 * plugin of this kind must expect to be rebuilt for every release.
 *
 *   version 1: this layout.
 */
#ifndef TESSERA_PARTITIONER_H
#define TESSERA_PARTITIONER_H

#include <tessera/plugin.h>

TSR_BEGIN_DECLS

struct tsr_dirfrag {
	uint64_t ino;           /* directory inode number */
	uint32_t frag_value;    /* top frag_bits bits of the name hash */
	uint32_t frag_bits;     /* 0: the whole directory */
};

/* A dirfrag and what the MDS knows of its place in the tree. */
struct tsr_part_dir {
	struct tsr_dirfrag df;
	const uint64_t *ancestors; /* inode numbers from the root down to the
				      parent, nancestors of them */
	uint32_t nancestors;
	int32_t pin;            /* rank pinned by the administrator on this
				   directory or its nearest pinned ancestor,
				   or -1 */
	int32_t parent_rank;    /* rank owning the parent dirfrag, or -1 */
};

/* Load of one subtree root on one rank, as measured by the MDS (decayed
 * operations per second). */
struct tsr_part_load {
	struct tsr_dirfrag root;
	int32_t rank;
	double read_load;
	double write_load;
	uint64_t entries;       /* number of dentries held */
};

struct tsr_part_move {
	struct tsr_dirfrag root;
	int32_t from;
	int32_t to;
};

struct tsr_part_fragstat {
	struct tsr_dirfrag df;
	uint64_t entries;
	double ops_per_sec;
};

/* Called once per proposed move; a non-zero return stops balance(), which
 * then returns that value. */
typedef int (*tsr_part_move_cb)(void *arg, const struct tsr_part_move *mv);

/* The version of this header's ops table (see PROVISIONAL above). */
#define TSR_PARTITIONER_ABI_VERSION 1

struct tsr_partitioner_ops {
	uint32_t size; /* sizeof(struct tsr_partitioner_ops) as built */
	uint32_t abi_version; /* TSR_PARTITIONER_ABI_VERSION as built */

	/* The rank in [0, nranks) that should own dir, in *rank.  Returns 0,
	 * or a negative errno (-EINVAL for nranks 0). */
	int (*where)(void *inst, const struct tsr_part_dir *dir,
		     uint32_t nranks, int32_t *rank);
	/* Propose migrations; cb is called once per proposed move.  loads
	 * covers every subtree root of every active rank. */
	int (*balance)(void *inst, const struct tsr_part_load *loads,
		       uint32_t nloads, uint32_t nranks, tsr_part_move_cb cb,
		       void *arg);
	/* What to do with a fragment, in *action: n > 0 splits it into 2^n
	 * fragments, -1 merges it with its siblings, 0 leaves it.  Returns 0
	 * or a negative errno. */
	int (*fragment)(void *inst, const struct tsr_part_fragstat *st,
			int *action);

	/* Version 1 ends here.  Provisional: not frozen (see above). */
};

TSR_END_DECLS

#endif
