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
 * A node that lost its store.  A node started with no durable state at
 * all (term 0, no log, no snapshot) cannot tell a new cluster from one
 * whose history it held before its store was lost or removed: it may
 * have voted in the current term and acknowledged entries that now exist
 * only on a minority.  So it rejoins: it takes the leader's log or
 * snapshot and acknowledges it, but grants no vote or pre-vote to a
 * candidate that has a log, until a leader has brought it up to that
 * leader's commit index (then its log holds every committed entry again).
 * A new cluster still elects: there every candidate's log is empty.  The
 * flag is part of the hard state, so a crash while catching up does not
 * end it.  A leader likewise forgets what a follower acknowledged when
 * the follower's answers show a log shorter than that: it counts toward
 * commits only what it acknowledges again.
 *
 * Hostile input.  A message is refused, never adopted, when a member
 * could not truthfully have sent it (tsr_raft_step: -ERANGE): a term
 * above TSR_RAFT_TERM_MAX or more than TSR_RAFT_TERM_AHEAD ahead of ours,
 * an index above TSR_RAFT_INDEX_MAX, entries that do not fit after their
 * index, a snapshot beyond the sender's commit index, an acknowledgement
 * of entries we never had (and, -EPROTO, an APPEND from a second leader
 * of one term).  Authentication (who may send) is the messenger's; these
 * bounds keep one bad message from stopping the cluster for good, as a
 * term of 2^64 - 1 that no election can pass would.
 *
 * Conventions: node ids are non-zero; index 0 and term 0 mean "none".
 * Functions return 0 or a negative errno.  Messages passed in are copied;
 * buffers in a ready batch belong to the raft until tsr_raft_advance().
 */
#ifndef TSR_RAFT_H
#define TSR_RAFT_H

#include <tessera/common.h>

/* Terms and indexes stay below 2^62: a cluster electing a leader every
 * millisecond would take 146 million years to reach it, so a larger
 * value is forged or damaged, and term + 1 or index + n never wraps. */
#define TSR_RAFT_TERM_MAX (1ull << 62)
#define TSR_RAFT_INDEX_MAX (1ull << 62)
/* How far ahead of ours a peer's term may be.  Terms rise one election at
 * a time, and with pre-vote only an election a majority takes part in
 * raises one: a member cut off for a long time keeps its term, and one
 * that comes back is behind by the elections the others held meanwhile.
 * Each needs an election timeout of silence from the last leader (1 s
 * with the monitors' defaults), so 2^20 of them is twelve days of nothing
 * but elections: a gap that large comes from a forged or damaged message.
 * A node that lost its store (rejoining, above) has no term to measure
 * from and is not held to it.  A member that really fell that far behind
 * is rebuilt: stop it, move its data directory away, start it
 * (doc/operations.md).  A modest forged term is within these bounds:
 * keeping strangers out is authentication's part. */
#define TSR_RAFT_TERM_AHEAD (1ull << 20)

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
	uint64_t commit;          /* APPEND, SNAPSHOT: the leader's commit
	                           * index; APPEND_RESP: the one the answered
	                           * message carried (0: a reject) */
	int reject;               /* *_RESP */
	uint64_t match;           /* APPEND_RESP: last index now matching, or
	                           * (reject) the follower's last index, or the
	                           * index before its entry that conflicts */
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
	uint64_t rejoin;          /* 1: this node lost its store and has not
	                           * caught up with a leader since (above) */
};

struct tsr_raft_conf {
	uint64_t id;
	const uint64_t *peers;    /* every voter, this node included */
	size_t npeers;
	unsigned election_ticks;  /* timeout is random in [e, 2e) (10) */
	unsigned heartbeat_ticks; /* (1) */
	uint64_t seed;            /* for the random timeouts */
	size_t max_append;        /* entries per APPEND (64) */
	size_t max_append_bytes;  /* and their data's bytes, at most (0: no
	                           * limit), except that an APPEND always
	                           * carries one entry: the caller's message
	                           * size limit (ms_max_front) */
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
 * us, -ERANGE for one no member could truthfully send (a term or index
 * out of bounds: see "Hostile input"), -EPROTO for one that breaks the
 * protocol (two leaders in a term); nothing of it is taken, and err (may
 * be NULL) says why, for the caller to log with the sender's name. */
TSR_API int tsr_raft_step(struct tsr_raft *r, const struct tsr_raft_msg *m,
			  char *err, size_t errlen);
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
/* Leader only: the latest ctx peer id echoed in an answer showing that
 * its log holds every entry this leader had committed when it sent the
 * message answered — a member of the quorum, not one that is catching up
 * or lost its log (0: none, or not leader). */
TSR_API uint64_t tsr_raft_peer_current(const struct tsr_raft *r, uint64_t id);
/* Leader only: the last index peer id has acknowledged holding in our
 * term, as counted toward commits (0: none, or not leader). */
TSR_API uint64_t tsr_raft_peer_match(const struct tsr_raft *r, uint64_t id);
/* Is this node rejoining: started without a store, and not yet brought
 * up to a leader's commit index (it does not vote meanwhile)? */
TSR_API int tsr_raft_rejoining(const struct tsr_raft *r);
TSR_API const char *tsr_raft_msg_name(uint32_t type);

#endif
