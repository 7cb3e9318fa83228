/* raftstore.h — a Raft node's durable state in the key/value store: the
 * hard state (term, vote, commit) and the log, written as tsr_raft_ready()
 * lists them, in one synced batch, and read back at start.
 *
 *   "raft/hs"                  envelope v1 { u64 term, u64 vote, u64 commit }
 *   "raft/log/" + u64 BE index envelope v1 { u64 term, bytes data }
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
	uint64_t last;        /* last index stored */
};

/* Read the hard state and the log (entries malloc'd; release with
 * tsr_raftstore_free_log).  An empty store gives zeros and no entries. */
TSR_API int tsr_raftstore_load(struct tsr_raftstore *s, struct tsr_raft_hardstate *hs,
		       struct tsr_raft_entry **log, size_t *nlog, char *err,
		       size_t errlen);
TSR_API void tsr_raftstore_free_log(struct tsr_raft_entry *log, size_t nlog);

/* Make what rd asks durable (one batch, synced): the hard state when it
 * changed, the entries (stored entries after the last of them go). */
TSR_API int tsr_raftstore_save(struct tsr_raftstore *s, const struct tsr_raft_ready *rd,
		       char *err, size_t errlen);

#endif
