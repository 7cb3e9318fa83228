/* raftstore.h — a Raft node's durable state in the key/value store: the
 * hard state (term, vote, commit) and the log, written as tsr_raft_ready()
 * lists them, in one synced batch, and read back at start.
 *
 *   "raft/hs"                  envelope v1 { u64 term, u64 vote, u64 commit,
 *                                            u64 rejoin (absent: 0) }
 *   "raft/log/" + u64 BE index envelope v1 { u64 term, bytes data }
 *   "raft/snap"                envelope v1 { u64 index, u64 term, bytes data }
 *
 * The log holds the entries after the snapshot's index (all of them when
 * there is none); a snapshot and the deletion of the entries it covers go
 * in one batch.
 *
 * Big-endian index keys keep the log in order in the store.  Loading
 * checks what it reads as hostile: an undecodable value, a gap in the
 * indexes or a term that goes down is an error naming the store and the
 * entry (-EIO), never a silently shorter log.
 */
#ifndef TSR_RAFTSTORE_H
#define TSR_RAFTSTORE_H

#include "raft/raft.h"

#include <tessera/kv.h>

struct tsr_raftstore {
	struct tsr_kv *kv;
	char path[640];       /* for messages */
	uint64_t first, last; /* indexes of the entries stored */
	/* the snapshot, after load (snap is malloc'd: tsr_raftstore_close) */
	uint64_t snap_index, snap_term;
	uint8_t *snap;
	size_t snap_len;
};

/* Read the hard state, the snapshot (into s) and the log after it
 * (entries malloc'd; release with tsr_raftstore_free_log).  An empty store
 * gives zeros, no snapshot and no entries. */
TSR_API int tsr_raftstore_load(struct tsr_raftstore *s, struct tsr_raft_hardstate *hs,
		       struct tsr_raft_entry **log, size_t *nlog, char *err,
		       size_t errlen);
TSR_API void tsr_raftstore_free_log(struct tsr_raft_entry *log, size_t nlog);

/* Make what rd asks durable (one batch, synced): the hard state when it
 * changed, a received snapshot (the entries it covers go), the entries
 * (stored entries after rd->last_index go). */
TSR_API int tsr_raftstore_save(struct tsr_raftstore *s, const struct tsr_raft_ready *rd,
		       char *err, size_t errlen);
/* Store a snapshot of the state up to index (of term) and delete the
 * entries it covers, in one synced batch. */
TSR_API int tsr_raftstore_compact(struct tsr_raftstore *s, uint64_t index,
				  uint64_t term, const void *data, size_t len,
				  char *err, size_t errlen);
/* Free what load kept (the snapshot bytes). */
TSR_API void tsr_raftstore_close(struct tsr_raftstore *s);

#endif
