/* raft.h — Raft consensus as a deterministic state machine: no I/O, no
 * clock, no threads.  The monitor feeds it ticks, messages and proposals,
 * and carries out what tsr_raft_ready() hands back, in this order:
 *
 *   1. persist rd.hs (when hs_changed), rd.snapshot (when set: stored
 *      entries up to its index go) and rd.entries (overwriting the log
 *      from rd.entries[0].index on; stored entries after rd.last_index
 *      go), and sync — a vote or an append is acknowledged only once it
 *      is durable;
 *   2. send rd.msgs;
 *   3. install rd.snapshot (when set), then apply rd.committed, in order;
 *   4. tsr_raft_advance(r, &rd).
 *
 * The algorithm is Raft as in Ongaro's thesis, with three of its
 * refinements: pre-vote (a node that cannot win an election does not
 * raise the term, so a partitioned node coming back does not depose a
 * working leader), check-quorum (a leader that has not heard from a
 * majority for an election timeout steps down, so a partitioned leader
 * stops claiming to be one), and leader stickiness (a follower that heard
 * from its leader within the election timeout ignores vote requests).
 * Membership is fixed at creation.  The caller takes snapshots of its
 * state machine and hands them over (tsr_raft_compact): the log before
 * goes, and a follower that lags behind it gets the snapshot.
 *
 * Leases.  A follower that has heard from its leader does not vote for
 * anyone else for election_ticks, and neither does a node that has just
 * started (it may have acknowledged a leader before it restarted).  So
 * when a majority has answered APPENDs that a leader sent at time T, no
 * other leader can exist before T + election_ticks: until then the
 * leader's state is current and it may serve reads from it alone.  The
 * caller stamps each APPEND's ctx with its clock and asks
 * tsr_raft_lease_since() for the T its majority has confirmed.
 *
 * Conventions: node ids are non-zero; index 0 and term 0 mean "none".
 * Functions return 0 or a negative errno.  Messages passed in are copied;
 * buffers in a ready batch belong to the raft until tsr_raft_advance().
 */
#ifndef TSR_RAFT_H
#define TSR_RAFT_H

#include <tessera/common.h>

#define TSR_RAFT_MSG_MAP(X)                                             \
	X(PREVOTE, prevote, 1)           /* may I run? (term: proposed) */ \
	X(PREVOTE_RESP, prevote_resp, 2)                                   \
	X(VOTE, vote, 3)                 /* vote for me in term */          \
	X(VOTE_RESP, vote_resp, 4)                                         \
	X(APPEND, append, 5)             /* entries after (log_term, index) */ \
	X(APPEND_RESP, append_resp, 6)                                     \
	X(SNAPSHOT, snapshot, 7)         /* the state up to index (log_term) */

enum tsr_raft_msg_type {
#define X(up, low, val) TSR_RAFT_##up = val,
	TSR_RAFT_MSG_MAP(X)
#undef X
};

enum tsr_raft_role { TSR_RAFT_FOLLOWER, TSR_RAFT_CANDIDATE, TSR_RAFT_LEADER };

struct tsr_raft_entry {
	uint64_t term, index;
	uint8_t *data;
	size_t len;
};

struct tsr_raft_msg {
	uint32_t type;
	uint64_t from, to, term;
	uint64_t log_term, index; /* (PRE)VOTE: the sender's last entry;
	                           * APPEND: the entry before entries[] */
	uint64_t commit;          /* APPEND: the leader's commit index */
	int reject;               /* *_RESP */
	uint64_t match;           /* APPEND_RESP: last index now matching, or
	                           * (reject) the follower's last index */
	const struct tsr_raft_entry *entries;
	size_t nentries;
	const uint8_t *snap;      /* SNAPSHOT: the caller's snapshot bytes */
	size_t snap_len;
	uint64_t ctx;             /* APPEND: the sender's, opaque (the monitor
	                           * puts its clock there when it sends);
	                           * APPEND_RESP: echoed from the APPEND */
};

struct tsr_raft_hardstate {
	uint64_t term, vote, commit;
};

struct tsr_raft_conf {
	uint64_t id;
	const uint64_t *peers;    /* every voter, this node included */
	size_t npeers;
	unsigned election_ticks;  /* timeout is random in [e, 2e) (10) */
	unsigned heartbeat_ticks; /* (1) */
	uint64_t seed;            /* for the random timeouts */
	size_t max_append;        /* entries per APPEND (64) */
	/* state restored from storage */
	struct tsr_raft_hardstate hs;
	uint64_t snap_index, snap_term; /* the last snapshot (0, 0: none) */
	const uint8_t *snap;      /* its bytes (sent to peers that lag) */
	size_t snap_len;
	const struct tsr_raft_entry *log; /* snap_index+1 .. snap_index+nlog */
	size_t nlog;
	uint64_t applied;         /* entries the caller has applied (at
	                           * least snap_index: it restored that) */
};

struct tsr_raft_ready {
	struct tsr_raft_hardstate hs;
	int hs_changed;
	const struct tsr_raft_entry *entries;   /* to persist */
	size_t nentries;
	const struct tsr_raft_msg *msgs;        /* to send, after persisting */
	size_t nmsgs;
	const struct tsr_raft_entry *committed; /* to apply */
	size_t ncommitted;
	/* a snapshot from the leader: persist it (stored entries up to its
	 * index go), then install it before applying committed[] */
	const uint8_t *snapshot;
	size_t snapshot_len;
	uint64_t snapshot_index, snapshot_term;
	uint64_t last_index;      /* the log ends here now: stored entries
	                           * after it go */
};

struct tsr_raft;

TSR_API int tsr_raft_create(const struct tsr_raft_conf *conf, struct tsr_raft **out);
TSR_API void tsr_raft_destroy(struct tsr_raft *r);

/* One unit of time (the caller's choice: 100 ms for monitors). */
TSR_API void tsr_raft_tick(struct tsr_raft *r);
/* A message from a peer.  -EINVAL for one that is malformed or not for
 * us (the caller logs it). */
TSR_API int tsr_raft_step(struct tsr_raft *r, const struct tsr_raft_msg *m);
/* Append data to the log (leader only: -EAGAIN elsewhere; see
 * tsr_raft_leader); *index gets its index.  It is committed when it
 * appears in a ready batch's committed list. */
TSR_API int tsr_raft_propose(struct tsr_raft *r, const void *data, size_t len,
		     uint64_t *index);

/* The caller has the state up to index (<= applied) in a durable
 * snapshot, data: the log up to it goes, and a peer that lags behind it
 * is sent the snapshot.  -EINVAL for an index outside (snapshot, applied]. */
TSR_API int tsr_raft_compact(struct tsr_raft *r, uint64_t index, const void *data,
			     size_t len);

/* Anything to do?  1 and rd filled, or 0. */
TSR_API int tsr_raft_ready(struct tsr_raft *r, struct tsr_raft_ready *rd);
TSR_API void tsr_raft_advance(struct tsr_raft *r, const struct tsr_raft_ready *rd);

TSR_API enum tsr_raft_role tsr_raft_role(const struct tsr_raft *r);
TSR_API uint64_t tsr_raft_term(const struct tsr_raft *r);
TSR_API uint64_t tsr_raft_leader(const struct tsr_raft *r); /* 0: unknown */
TSR_API uint64_t tsr_raft_commit(const struct tsr_raft *r);
TSR_API uint64_t tsr_raft_last_index(const struct tsr_raft *r);
/* Leader only, and only once an entry of its own term is committed: the
 * largest T such that a majority (this node counting as now) answered
 * APPENDs stamped T or later.  0 otherwise. */
TSR_API uint64_t tsr_raft_lease_since(const struct tsr_raft *r, uint64_t now);
/* Leader only: the latest ctx peer id echoed (0: none, or not leader). */
TSR_API uint64_t tsr_raft_peer_ctx(const struct tsr_raft *r, uint64_t id);
TSR_API const char *tsr_raft_msg_name(uint32_t type);

#endif
