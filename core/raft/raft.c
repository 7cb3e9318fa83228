/* raft.c — Raft as a state machine (see raft.h).
 *
 * The log is kept whole in memory (entry i at log[i - 1]); the caller
 * persists what tsr_raft_ready() lists.  `stable` is the last index the
 * caller has made durable: a leader counts its own copy of an entry toward
 * a majority only once it is stable, and a follower's APPEND_RESP goes out
 * in the same batch as the entries it acknowledges, after they are synced.
 *
 * APPEND messages are built at ready() time for the peers marked `dirty`
 * (new entries, a heartbeat, a rejected append), with entries pointing
 * into the log; the caller must not call step/tick/propose between ready
 * and advance, so those pointers stay valid.  A leader sends from each
 * peer's `next` and moves it only on an answer, so at most a heartbeat's
 * worth of entries is ever in flight twice — simple and enough for maps.
 */
#include "raft/raft.h"
#include "util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct progress {
	uint64_t next, match;
	int dirty;     /* an APPEND is owed */
	int active;    /* heard from since the last quorum check */
	int granted;   /* candidate: 1 granted, -1 refused, 0 no answer */
	uint64_t ctx;  /* leader: the latest ctx this peer echoed */
	uint64_t current; /* leader: the latest ctx it echoed holding all we
	                   * had committed (tsr_raft_peer_current) */
};

struct tsr_raft {
	uint64_t id;
	uint64_t *peers;
	struct progress *pr;
	size_t npeers, self;
	unsigned e_ticks, hb_ticks;
	size_t max_append, max_append_bytes;
	uint64_t rng;

	enum tsr_raft_role role;
	int prevote;              /* candidate in the pre-vote phase */
	int quiet;                /* started less than an election timeout ago:
	                           * may have promised a leader its lease */
	int rejoin;               /* lost its store: no votes until a leader
	                           * has caught it up (raft.h) */
	uint64_t term, vote, leader, commit, applied;
	struct tsr_raft_entry *log;   /* entries snap_index+1 .. last */
	size_t nlog, cap;
	uint64_t snap_index, snap_term; /* the log before is in the snapshot */
	uint8_t *snap;                /* its bytes (what a lagging peer gets) */
	size_t snap_len;
	int snap_new;                 /* a received snapshot for the caller */
	uint64_t stable, unstable_from;
	unsigned elapsed, timeout, hb_elapsed;

	struct tsr_raft_msg *out;   /* votes and answers, queued */
	size_t nout, outcap;
	struct tsr_raft_msg *rd;    /* the ready batch's messages */
	size_t rdcap;
	struct tsr_raft_hardstate prev_hs;
	int in_ready;
};

/* ---- Small things ---------------------------------------------------------*/

static uint64_t
rnd(struct tsr_raft *r)
{
	/* xorshift64*: timeouts only need to differ between nodes */
	r->rng ^= r->rng >> 12;
	r->rng ^= r->rng << 25;
	r->rng ^= r->rng >> 27;
	return r->rng * 0x2545F4914F6CDD1Dull;
}

static void
reset_timeout(struct tsr_raft *r)
{
	r->elapsed = 0;
	r->timeout = r->e_ticks + (unsigned)(rnd(r) % r->e_ticks);
}

static uint64_t
last_index(const struct tsr_raft *r)
{
	return r->snap_index + r->nlog;
}

/* The entry at index (snap_index < index <= last_index). */
static struct tsr_raft_entry *
entry(const struct tsr_raft *r, uint64_t index)
{
	return &r->log[index - r->snap_index - 1];
}

static uint64_t
term_at(const struct tsr_raft *r, uint64_t index)
{
	if (index == r->snap_index)
		return r->snap_term;
	return index < r->snap_index || index > last_index(r) ? 0
							     : entry(r, index)->term;
}

static size_t
peer_slot(const struct tsr_raft *r, uint64_t id)
{
	for (size_t i = 0; i < r->npeers; i++)
		if (r->peers[i] == id)
			return i;
	return SIZE_MAX;
}

static size_t
quorum(const struct tsr_raft *r)
{
	return r->npeers / 2 + 1;
}

static int
send(struct tsr_raft *r, const struct tsr_raft_msg *m)
{
	if (r->nout == r->outcap) {
		size_t n = r->outcap ? r->outcap * 2 : 16;
		struct tsr_raft_msg *v = realloc(r->out, n * sizeof(*v));
		if (v == NULL)
			return -ENOMEM;
		r->out = v;
		r->outcap = n;
	}
	r->out[r->nout] = *m;
	r->out[r->nout].from = r->id;
	r->out[r->nout].entries = NULL;
	r->out[r->nout].nentries = 0;
	r->nout++;
	return 0;
}

static int
log_append(struct tsr_raft *r, uint64_t term, const void *data, size_t len)
{
	struct tsr_raft_entry *e;

	if (r->nlog == r->cap) {
		size_t n = r->cap ? r->cap * 2 : 64;
		struct tsr_raft_entry *v = realloc(r->log, n * sizeof(*v));
		if (v == NULL)
			return -ENOMEM;
		r->log = v;
		r->cap = n;
	}
	e = &r->log[r->nlog];
	e->term = term;
	e->index = last_index(r) + 1;
	e->len = len;
	e->data = NULL;
	if (len) {
		if ((e->data = malloc(len)) == NULL)
			return -ENOMEM;
		memcpy(e->data, data, len);
	}
	r->nlog++;
	if (r->unstable_from == 0 || r->unstable_from > e->index)
		r->unstable_from = e->index;
	return 0;
}

/* Drop entries from index on (never committed ones: the caller checks). */
static void
log_truncate(struct tsr_raft *r, uint64_t index)
{
	while (r->nlog > 0 && last_index(r) >= index) {
		free(r->log[r->nlog - 1].data);
		r->nlog--;
	}
	if (r->stable >= index)
		r->stable = index - 1;
	if (r->unstable_from == 0 || r->unstable_from > index)
		r->unstable_from = index;
}

/* Is a candidate's log (last_term, last) at least as up to date as ours? */
static int
up_to_date(const struct tsr_raft *r, uint64_t lterm, uint64_t lindex)
{
	uint64_t mine = term_at(r, last_index(r));

	return lterm > mine || (lterm == mine && lindex >= last_index(r));
}

/* ---- Roles --------------------------------------------------------------------*/

static void
become_follower(struct tsr_raft *r, uint64_t term, uint64_t leader)
{
	if (term != r->term) {
		r->term = term;
		r->vote = 0;
	}
	r->role = TSR_RAFT_FOLLOWER;
	r->prevote = 0;
	r->leader = leader;
	reset_timeout(r);
}

static void become_leader(struct tsr_raft *r);

/* Count answers; win or lose the (pre-)election. */
static void
tally(struct tsr_raft *r)
{
	size_t yes = 0, no = 0;

	for (size_t i = 0; i < r->npeers; i++) {
		yes += r->pr[i].granted > 0;
		no += r->pr[i].granted < 0;
	}
	if (yes >= quorum(r)) {
		if (r->prevote) {
			/* the real election: now the term goes up */
			r->prevote = 0;
			r->term++;
			r->vote = r->id;
			r->leader = 0;
			for (size_t i = 0; i < r->npeers; i++)
				r->pr[i].granted = i == r->self ? 1 : 0;
			for (size_t i = 0; i < r->npeers; i++) {
				if (i == r->self)
					continue;
				struct tsr_raft_msg m = { .type = TSR_RAFT_VOTE,
					.to = r->peers[i], .term = r->term,
					.log_term = term_at(r, last_index(r)),
					.index = last_index(r) };
				send(r, &m);
			}
			tally(r);
		} else {
			become_leader(r);
		}
	} else if (no >= quorum(r)) {
		become_follower(r, r->term, 0);
	}
}

static void
campaign(struct tsr_raft *r)
{
	if (r->term >= TSR_RAFT_TERM_MAX) {
		/* no term after the ceiling: peers would refuse it (never
		 * reached: see TSR_RAFT_TERM_MAX) */
		reset_timeout(r);
		return;
	}
	r->role = TSR_RAFT_CANDIDATE;
	r->prevote = 1;
	r->leader = 0;
	reset_timeout(r);
	for (size_t i = 0; i < r->npeers; i++)
		r->pr[i].granted = i == r->self ? 1 : 0;
	for (size_t i = 0; i < r->npeers; i++) {
		if (i == r->self)
			continue;
		struct tsr_raft_msg m = { .type = TSR_RAFT_PREVOTE, .to = r->peers[i],
					  .term = r->term + 1,
					  .log_term = term_at(r, last_index(r)),
					  .index = last_index(r) };
		send(r, &m);
	}
	tally(r); /* a one-node cluster wins at once */
}

static void maybe_commit(struct tsr_raft *r);

static void
become_leader(struct tsr_raft *r)
{
	r->role = TSR_RAFT_LEADER;
	r->prevote = 0;
	r->rejoin = 0; /* elected: our log holds every committed entry */
	r->leader = r->id;
	r->elapsed = 0;
	r->hb_elapsed = 0;
	for (size_t i = 0; i < r->npeers; i++) {
		r->pr[i].next = last_index(r) + 1;
		r->pr[i].match = 0;
		r->pr[i].dirty = 1;
		r->pr[i].active = 1;
		r->pr[i].ctx = 0;
		r->pr[i].current = 0;
	}
	/* an entry of our own term: committing it commits everything
	 * before it (Raft never counts replicas of older terms' entries) */
	log_append(r, r->term, NULL, 0);
	maybe_commit(r);
}

/* ---- Leader -------------------------------------------------------------------*/

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0; /* descending */
}

static void
maybe_commit(struct tsr_raft *r)
{
	uint64_t m[64], n;

	if (r->role != TSR_RAFT_LEADER || r->npeers > 64)
		return;
	for (size_t i = 0; i < r->npeers; i++)
		m[i] = i == r->self ? r->stable : r->pr[i].match;
	qsort(m, r->npeers, sizeof(m[0]), cmp_u64);
	n = m[quorum(r) - 1]; /* the highest index a majority holds */
	if (n > r->commit && term_at(r, n) == r->term) {
		r->commit = n;
		for (size_t i = 0; i < r->npeers; i++)
			r->pr[i].dirty = 1; /* tell them */
	}
}

int
tsr_raft_propose(struct tsr_raft *r, const void *data, size_t len,
		 uint64_t *index)
{
	int rc;

	if (r->role != TSR_RAFT_LEADER || r->in_ready)
		return -EAGAIN;
	if ((rc = log_append(r, r->term, data, len)) < 0)
		return rc;
	for (size_t i = 0; i < r->npeers; i++)
		r->pr[i].dirty = 1;
	if (index)
		*index = last_index(r);
	maybe_commit(r); /* a one-node cluster (once stable) */
	return 0;
}

void
tsr_raft_tick(struct tsr_raft *r)
{
	if (r->in_ready)
		return;
	r->elapsed++;
	if (r->quiet && r->elapsed >= r->e_ticks)
		r->quiet = 0;
	if (r->role != TSR_RAFT_LEADER) {
		if (r->elapsed >= r->timeout)
			campaign(r);
		return;
	}
	if (++r->hb_elapsed >= r->hb_ticks) {
		r->hb_elapsed = 0;
		for (size_t i = 0; i < r->npeers; i++)
			r->pr[i].dirty = 1;
	}
	if (r->elapsed >= r->e_ticks) {
		/* check quorum: a leader cut off from the majority stops
		 * acting as one, so it never serves its maps as current */
		size_t active = 0;

		r->elapsed = 0;
		for (size_t i = 0; i < r->npeers; i++) {
			active += i == r->self || r->pr[i].active;
			r->pr[i].active = 0;
		}
		if (active < quorum(r))
			become_follower(r, r->term, 0);
	}
}

/* ---- Messages --------------------------------------------------------------------*/

static void
answer(struct tsr_raft *r, const struct tsr_raft_msg *m, uint32_t type,
       uint64_t term, int reject, uint64_t match)
{
	/* an accepted APPEND or SNAPSHOT echoes the leader's commit index
	 * with it, so the leader can tell whether we hold all it had
	 * committed (tsr_raft_peer_current) */
	struct tsr_raft_msg a = { .type = type, .to = m->from, .term = term,
				  .reject = reject, .match = match, .ctx = m->ctx,
				  .commit = type == TSR_RAFT_APPEND_RESP && !reject
						    ? m->commit : 0 };
	send(r, &a);
}

/* A leader's APPEND in our term. */
static int
on_append(struct tsr_raft *r, const struct tsr_raft_msg *m)
{
	uint64_t last;

	if (m->index > last_index(r)) {
		answer(r, m, TSR_RAFT_APPEND_RESP, r->term, 1, last_index(r));
		return 0;
	}
	/* entries up to our snapshot are committed, so they match */
	if (m->index >= r->snap_index && term_at(r, m->index) != m->log_term) {
		/* our entry there is from another term: back up past it */
		answer(r, m, TSR_RAFT_APPEND_RESP, r->term, 1, m->index - 1);
		return 0;
	}
	for (size_t i = 0; i < m->nentries; i++) {
		const struct tsr_raft_entry *e = &m->entries[i];
		if (e->index <= r->snap_index)
			continue;
		if (e->index <= last_index(r)) {
			if (term_at(r, e->index) == e->term)
				continue;
			if (e->index <= r->commit)
				return -EPROTO; /* a leader rewriting history */
			log_truncate(r, e->index);
		}
		if (log_append(r, e->term, e->data, e->len) < 0)
			return -ENOMEM;
	}
	last = m->index + m->nentries;
	if (last < r->snap_index)
		last = r->snap_index; /* we hold that much, committed */
	if (m->commit > r->commit)
		r->commit = m->commit < last ? m->commit : last;
	if (last >= m->commit)
		r->rejoin = 0; /* we hold all the leader has committed */
	answer(r, m, TSR_RAFT_APPEND_RESP, r->term, 0, last);
	return 0;
}

static int
set_snap(struct tsr_raft *r, uint64_t index, uint64_t term, const void *data,
	 size_t len)
{
	uint8_t *copy = NULL;

	if (len && (copy = malloc(len)) == NULL)
		return -ENOMEM;
	if (len)
		memcpy(copy, data, len);
	free(r->snap);
	r->snap = copy;
	r->snap_len = len;
	/* drop the entries the snapshot covers (all of them if our log
	 * does not reach it) */
	size_t drop = index >= last_index(r) ? r->nlog : (size_t)(index - r->snap_index);
	for (size_t i = 0; i < drop; i++)
		free(r->log[i].data);
	if (drop && drop < r->nlog) /* (a node that never had a log has none) */
		memmove(r->log, r->log + drop, (r->nlog - drop) * sizeof(*r->log));
	r->nlog -= drop;
	r->snap_index = index;
	r->snap_term = term;
	if (r->stable < index)
		r->stable = index;
	if (r->unstable_from && r->unstable_from <= index)
		r->unstable_from = r->nlog ? index + 1 : 0;
	return 0;
}

/* A leader's snapshot in our term: our state up to its index. */
static int
on_snapshot(struct tsr_raft *r, const struct tsr_raft_msg *m)
{
	if (m->index <= r->commit) {
		/* we have all of it already */
		if (r->commit >= m->commit)
			r->rejoin = 0;
		answer(r, m, TSR_RAFT_APPEND_RESP, r->term, 0, r->commit);
		return 0;
	}
	if (term_at(r, m->index) != m->log_term)
		log_truncate(r, r->snap_index + 1); /* our log disagrees: all goes */
	if (set_snap(r, m->index, m->log_term, m->snap, m->snap_len) < 0)
		return -ENOMEM;
	r->commit = m->index;
	r->snap_new = 1;
	if (m->index >= m->commit)
		r->rejoin = 0;
	answer(r, m, TSR_RAFT_APPEND_RESP, r->term, 0, m->index);
	return 0;
}

int
tsr_raft_compact(struct tsr_raft *r, uint64_t index, const void *data, size_t len)
{
	if (r->in_ready || index > r->applied || index < r->snap_index ||
	    index > r->stable)
		return -EINVAL;
	if (index == r->snap_index && r->snap)
		return 0;
	return set_snap(r, index, term_at(r, index), data, len);
}


#define U(x) ((unsigned long long)(x))

/* Can m have come from a member?  -EINVAL when it is malformed or not for
 * us; -ERANGE when it claims what no member could truthfully (raft.h,
 * "Hostile input").  Every bound is checked before anything adds to a
 * term or an index, so no sum below can wrap. */
static int
check(const struct tsr_raft *r, const struct tsr_raft_msg *m, char *err,
      size_t errlen)
{
	int vote = m->type == TSR_RAFT_PREVOTE || m->type == TSR_RAFT_VOTE;

	if (m->to != r->id)
		return tsr_errf(err, errlen, -EINVAL, "addressed to node %llu, not "
			      "to us (%llu)", U(m->to), U(r->id));
	if (m->from == r->id || peer_slot(r, m->from) == SIZE_MAX)
		return tsr_errf(err, errlen, -EINVAL, "from node %llu, not another "
			      "member", U(m->from));
	if (tsr_raft_msg_name(m->type) == NULL)
		return tsr_errf(err, errlen, -EINVAL, "of unknown type %u", m->type);
	/* a refused pre-vote carries the refuser's term, 0 on a new node */
	if (m->term == 0 && m->type != TSR_RAFT_PREVOTE_RESP)
		return tsr_errf(err, errlen, -EINVAL, "of term 0");
	if (m->term > TSR_RAFT_TERM_MAX || m->log_term > TSR_RAFT_TERM_MAX)
		return tsr_errf(err, errlen, -ERANGE, "of term %llu (last entry's "
			      "term %llu): above 2^62, the most a term may reach",
			      U(m->term), U(m->log_term));
	if (m->index > TSR_RAFT_INDEX_MAX || m->commit > TSR_RAFT_INDEX_MAX ||
	    m->match > TSR_RAFT_INDEX_MAX)
		return tsr_errf(err, errlen, -ERANGE, "with index %llu, commit %llu, "
			      "match %llu: above 2^62, the most an index may reach",
			      U(m->index), U(m->commit), U(m->match));
	if (!r->rejoin && m->term > r->term + TSR_RAFT_TERM_AHEAD)
		return tsr_errf(err, errlen, -ERANGE, "of term %llu, %llu ahead of "
			      "ours (%llu): terms rise one election at a time, and "
			      "never that far while we were away", U(m->term),
			      U(m->term - r->term), U(r->term));
	if (m->type != TSR_RAFT_APPEND && m->nentries)
		return tsr_errf(err, errlen, -EINVAL, "with %zu entries (only an "
			      "append has entries)", m->nentries);
	if ((vote || m->type == TSR_RAFT_APPEND) &&
	    (m->index == 0) != (m->log_term == 0))
		return tsr_errf(err, errlen, -EINVAL, "naming entry %llu of term %llu "
			      "(index and term are 0 together or not at all)",
			      U(m->index), U(m->log_term));
	/* a candidate's log is from before the term it asks for; a leader's
	 * and its snapshot's from its term or before */
	if ((vote && m->log_term >= m->term) ||
	    ((m->type == TSR_RAFT_APPEND || m->type == TSR_RAFT_SNAPSHOT) &&
	     m->log_term > m->term))
		return tsr_errf(err, errlen, -ERANGE, "of term %llu naming an entry "
			      "of term %llu", U(m->term), U(m->log_term));
	if (m->type == TSR_RAFT_SNAPSHOT) {
		if (m->index == 0 || m->log_term == 0 || (m->snap_len && !m->snap))
			return tsr_errf(err, errlen, -EINVAL, "of entry %llu, term %llu, "
				      "%zu bytes (no data)", U(m->index),
				      U(m->log_term), m->snap_len);
		/* a leader snapshots only what it has applied */
		if (m->index > m->commit)
			return tsr_errf(err, errlen, -ERANGE, "up to %llu, beyond the "
				      "sender's commit index %llu", U(m->index),
				      U(m->commit));
	}
	if (m->type != TSR_RAFT_APPEND)
		return 0;
	if (m->nentries && m->entries == NULL)
		return tsr_errf(err, errlen, -EINVAL, "with %zu entries and no array",
			      m->nentries);
	if (m->nentries > TSR_RAFT_INDEX_MAX - m->index)
		return tsr_errf(err, errlen, -ERANGE, "with %zu entries after %llu: "
			      "beyond 2^62", m->nentries, U(m->index));
	for (size_t i = 0; i < m->nentries; i++) {
		const struct tsr_raft_entry *e = &m->entries[i];
		uint64_t before = i ? m->entries[i - 1].term : m->log_term;

		if (e->index != m->index + 1 + i || (e->len && e->data == NULL))
			return tsr_errf(err, errlen, -EINVAL, "whose entry %zu has index "
				      "%llu (%llu expected)%s", i, U(e->index),
				      U(m->index + 1 + i), e->len && e->data == NULL
				      ? " and no data" : "");
		/* a log's terms never go down, and none is after its leader's */
		if (e->term == 0 || e->term < before || e->term > m->term)
			return tsr_errf(err, errlen, -ERANGE, "of term %llu whose entry "
				      "%llu has term %llu (after one of term %llu)",
				      U(m->term), U(e->index), U(e->term), U(before));
	}
	return 0;
}

int
tsr_raft_step(struct tsr_raft *r, const struct tsr_raft_msg *m, char *err,
	      size_t errlen)
{
	size_t slot;
	int lease, rc;

	if (r->in_ready)
		return tsr_errf(err, errlen, -EBUSY, "stepped between ready and advance");
	if ((rc = check(r, m, err, errlen)) < 0)
		return rc;
	slot = peer_slot(r, m->from);
	/* leader stickiness: a follower that heard from its leader within
	 * the minimum election timeout does not help anyone replace it */
	lease = ((r->leader != 0 && r->leader != m->from) || r->quiet) &&
		r->elapsed < r->e_ticks;

	if (m->term > r->term) {
		if (m->type == TSR_RAFT_PREVOTE ||
		    (m->type == TSR_RAFT_PREVOTE_RESP && !m->reject)) {
			/* pre-vote traffic never moves terms */
		} else if (m->type == TSR_RAFT_VOTE && lease) {
			return 0;
		} else {
			become_follower(r, m->term,
					m->type == TSR_RAFT_APPEND ||
					m->type == TSR_RAFT_SNAPSHOT ? m->from : 0);
		}
	} else if (m->term < r->term) {
		/* a stale leader learns the term from our answer; a stale
		 * pre-candidate from our refusal */
		if (m->type == TSR_RAFT_APPEND || m->type == TSR_RAFT_SNAPSHOT)
			answer(r, m, TSR_RAFT_APPEND_RESP, r->term, 1, last_index(r));
		else if (m->type == TSR_RAFT_PREVOTE)
			answer(r, m, TSR_RAFT_PREVOTE_RESP, r->term, 1, 0);
		return 0;
	}

	switch (m->type) {
	case TSR_RAFT_PREVOTE: {
		/* rejoining, we may lack entries we once acknowledged: only a
		 * new cluster's candidate, with an empty log, gets our voice */
		int grant = m->term > r->term && !lease &&
			    !(r->role == TSR_RAFT_LEADER) &&
			    (!r->rejoin || m->index == 0) &&
			    up_to_date(r, m->log_term, m->index);
		answer(r, m, TSR_RAFT_PREVOTE_RESP, grant ? m->term : r->term, !grant, 0);
		return 0;
	}
	case TSR_RAFT_VOTE: {
		int grant = (r->vote == 0 || r->vote == m->from) &&
			    (!r->rejoin || m->index == 0) &&
			    up_to_date(r, m->log_term, m->index);
		if (grant) {
			r->vote = m->from;
			reset_timeout(r);
		}
		answer(r, m, TSR_RAFT_VOTE_RESP, r->term, !grant, 0);
		return 0;
	}
	case TSR_RAFT_PREVOTE_RESP:
		if (r->role == TSR_RAFT_CANDIDATE && r->prevote &&
		    (m->reject || m->term == r->term + 1)) {
			r->pr[slot].granted = m->reject ? -1 : 1;
			tally(r);
		}
		return 0;
	case TSR_RAFT_VOTE_RESP:
		if (r->role == TSR_RAFT_CANDIDATE && !r->prevote && m->term == r->term) {
			r->pr[slot].granted = m->reject ? -1 : 1;
			tally(r);
		}
		return 0;
	case TSR_RAFT_APPEND:
	case TSR_RAFT_SNAPSHOT:
		/* one leader per term: we, or the one we follow */
		if (r->role == TSR_RAFT_LEADER ||
		    (r->role == TSR_RAFT_FOLLOWER && r->leader && r->leader != m->from))
			return tsr_errf(err, errlen, -EPROTO, "as leader of term %llu, "
				      "which node %llu leads", U(m->term),
				      U(r->role == TSR_RAFT_LEADER ? r->id : r->leader));
		if (r->role != TSR_RAFT_FOLLOWER || r->leader != m->from)
			become_follower(r, r->term, m->from);
		r->elapsed = 0;
		return m->type == TSR_RAFT_APPEND ? on_append(r, m) : on_snapshot(r, m);
	case TSR_RAFT_APPEND_RESP: {
		struct progress *p = &r->pr[slot];

		if (r->role != TSR_RAFT_LEADER)
			return 0;
		if (!m->reject && (m->match > last_index(r) || m->commit > r->commit))
			return tsr_errf(err, errlen, -ERANGE, "acknowledging entries up "
				      "to %llu (commit %llu); our log ends at %llu "
				      "(commit %llu)", U(m->match), U(m->commit),
				      U(last_index(r)), U(r->commit));
		p->active = 1;
		if (m->ctx > p->ctx)
			p->ctx = m->ctx;
		if (m->reject) {
			if (m->match < p->match) {
				/* its log ends (or differs) before what it
				 * acknowledged in our term: it lost its store
				 * (or this answer is older than that
				 * acknowledgement).  Forget it: the follower
				 * counts toward commits, and as current, only
				 * for what it acknowledges from now on, and
				 * gets our log (or snapshot) from its end. */
				p->match = 0;
				p->current = 0;
			}
			/* back up: to what the follower has, or one before */
			uint64_t next = m->match + 1 < p->next ? m->match + 1
							      : p->next - 1;
			p->next = next > p->match + 1 ? next : p->match + 1;
			if (p->next == 0)
				p->next = 1;
			p->dirty = 1;
		} else {
			if (m->match > p->match)
				p->match = m->match;
			if (m->match >= m->commit && m->ctx > p->current)
				p->current = m->ctx;
			p->next = p->match + 1;
			maybe_commit(r);
			if (p->next <= last_index(r))
				p->dirty = 1;
		}
		return 0;
	}
	}
	return -EINVAL;
}

/* ---- Ready / advance -----------------------------------------------------------*/

int
tsr_raft_ready(struct tsr_raft *r, struct tsr_raft_ready *rd)
{
	size_t n = r->nout, k = 0;

	memset(rd, 0, sizeof(*rd));
	if (r->role == TSR_RAFT_LEADER)
		for (size_t i = 0; i < r->npeers; i++)
			n += i != r->self && r->pr[i].dirty;
	if (n > r->rdcap) {
		struct tsr_raft_msg *v = realloc(r->rd, n * sizeof(*v));
		if (v == NULL)
			return 0;
		r->rd = v;
		r->rdcap = n;
	}
	if (r->nout)
		memcpy(r->rd, r->out, r->nout * sizeof(*r->rd));
	k = r->nout;
	if (r->role == TSR_RAFT_LEADER)
		for (size_t i = 0; i < r->npeers; i++) {
			struct progress *p = &r->pr[i];
			uint64_t prev;
			size_t cnt;

			if (i == r->self || !p->dirty)
				continue;
			if (p->next <= r->snap_index) {
				/* what it lacks is compacted away: the snapshot;
				 * the next heartbeat tells whether it took it */
				r->rd[k++] = (struct tsr_raft_msg){
					.type = TSR_RAFT_SNAPSHOT, .from = r->id,
					.to = r->peers[i], .term = r->term,
					.log_term = r->snap_term, .index = r->snap_index,
					.commit = r->commit, .snap = r->snap,
					.snap_len = r->snap_len };
				p->next = r->snap_index + 1;
				continue;
			}
			if (p->next > last_index(r) + 1)
				p->next = last_index(r) + 1;
			prev = p->next - 1;
			cnt = (size_t)(last_index(r) - prev);
			if (cnt > r->max_append)
				cnt = r->max_append;
			if (r->max_append_bytes) {
				/* entries (with their index, term and length)
				 * up to the byte limit, one at least: a follower
				 * that lags gets its entries in several messages,
				 * never one too large to send */
				size_t bytes = 0, j;
				for (j = 0; j < cnt; j++) {
					bytes += entry(r, prev + 1 + j)->len + 32;
					if (j > 0 && bytes > r->max_append_bytes)
						break;
				}
				cnt = j;
			}
			r->rd[k++] = (struct tsr_raft_msg){
				.type = TSR_RAFT_APPEND, .from = r->id, .to = r->peers[i],
				.term = r->term, .log_term = term_at(r, prev),
				.index = prev, .commit = r->commit,
				.entries = cnt ? entry(r, prev + 1) : NULL, .nentries = cnt };
		}
	rd->msgs = r->rd;
	rd->nmsgs = k;
	rd->hs = (struct tsr_raft_hardstate){ r->term, r->vote, r->commit,
					      (uint64_t)r->rejoin };
	rd->hs_changed = memcmp(&rd->hs, &r->prev_hs, sizeof(rd->hs)) != 0;
	if (r->unstable_from && r->unstable_from <= last_index(r)) {
		rd->entries = entry(r, r->unstable_from);
		rd->nentries = (size_t)(last_index(r) - r->unstable_from + 1);
	}
	rd->last_index = last_index(r);
	uint64_t from = r->applied;
	if (r->snap_new) {
		rd->snapshot = r->snap;
		rd->snapshot_len = r->snap_len;
		rd->snapshot_index = r->snap_index;
		rd->snapshot_term = r->snap_term;
		from = r->snap_index;
	}
	if (r->commit > from) {
		uint64_t upto = r->commit < last_index(r) ? r->commit : last_index(r);
		if (upto > from) {
			rd->committed = entry(r, from + 1);
			rd->ncommitted = (size_t)(upto - from);
		}
	}
	if (rd->nmsgs || rd->hs_changed || rd->nentries || rd->ncommitted ||
	    r->snap_new) {
		r->in_ready = 1;
		return 1;
	}
	return 0;
}

void
tsr_raft_advance(struct tsr_raft *r, const struct tsr_raft_ready *rd)
{
	r->in_ready = 0;
	r->prev_hs = rd->hs;
	if (rd->nentries)
		r->stable = rd->entries[rd->nentries - 1].index;
	r->unstable_from = 0;
	if (rd->snapshot_index) {
		r->applied = rd->snapshot_index;
		r->snap_new = 0;
	}
	r->applied += rd->ncommitted;
	r->nout = 0;
	if (r->role == TSR_RAFT_LEADER)
		for (size_t i = 0; i < r->npeers; i++)
			r->pr[i].dirty = 0;
	maybe_commit(r); /* our own copies are durable now */
}

/* ---- Life -------------------------------------------------------------------------*/

int
tsr_raft_create(const struct tsr_raft_conf *c, struct tsr_raft **out)
{
	struct tsr_raft *r;

	if (c->id == 0 || c->npeers == 0 || c->npeers > 64 ||
	    c->hs.term > TSR_RAFT_TERM_MAX || c->snap_index > TSR_RAFT_INDEX_MAX ||
	    c->nlog > TSR_RAFT_INDEX_MAX - c->snap_index ||
	    c->hs.commit > c->snap_index + c->nlog || c->applied > c->hs.commit ||
	    c->applied < c->snap_index || c->snap_term > c->hs.term ||
	    (c->snap_index == 0) != (c->snap_term == 0))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	r->peers = calloc(c->npeers, sizeof(*r->peers));
	r->pr = calloc(c->npeers, sizeof(*r->pr));
	if (r->peers == NULL || r->pr == NULL) {
		tsr_raft_destroy(r);
		return -ENOMEM;
	}
	r->self = SIZE_MAX;
	for (size_t i = 0; i < c->npeers; i++) {
		if (c->peers[i] == 0)
			goto bad;
		for (size_t j = 0; j < i; j++)
			if (c->peers[j] == c->peers[i])
				goto bad;
		r->peers[i] = c->peers[i];
		if (c->peers[i] == c->id)
			r->self = i;
	}
	if (r->self == SIZE_MAX)
		goto bad;
	r->npeers = c->npeers;
	r->id = c->id;
	r->e_ticks = c->election_ticks ? c->election_ticks : 10;
	r->hb_ticks = c->heartbeat_ticks ? c->heartbeat_ticks : 1;
	r->max_append = c->max_append ? c->max_append : 64;
	r->max_append_bytes = c->max_append_bytes;
	r->rng = (c->seed ^ (c->id * 0x9E3779B97F4A7C15ull)) | 1;
	r->term = c->hs.term;
	r->vote = c->hs.vote;
	r->commit = c->hs.commit;
	r->applied = c->applied;
	r->snap_index = c->snap_index;
	r->snap_term = c->snap_term;
	if (c->snap_len) {
		if ((r->snap = malloc(c->snap_len)) == NULL) {
			tsr_raft_destroy(r);
			return -ENOMEM;
		}
		memcpy(r->snap, c->snap, c->snap_len);
		r->snap_len = c->snap_len;
	}
	for (size_t i = 0; i < c->nlog; i++) {
		if (c->log[i].index != c->snap_index + i + 1 || c->log[i].term == 0 ||
		    c->log[i].term > c->hs.term ||
		    c->log[i].term < (i ? c->log[i - 1].term : c->snap_term))
			goto bad;
		if (log_append(r, c->log[i].term, c->log[i].data, c->log[i].len) < 0) {
			tsr_raft_destroy(r);
			return -ENOMEM;
		}
	}
	r->stable = last_index(r); /* it came from storage */
	r->unstable_from = 0;
	r->prev_hs = c->hs;
	/* nothing stored at all: a new node, or one whose store was lost —
	 * it cannot tell which, so it rejoins (raft.h); the next ready batch
	 * makes that durable */
	r->rejoin = c->hs.rejoin != 0 ||
		    (c->hs.term == 0 && c->hs.vote == 0 && c->hs.commit == 0 &&
		     c->nlog == 0 && c->snap_index == 0);
	r->role = TSR_RAFT_FOLLOWER;
	r->quiet = 1;
	reset_timeout(r);
	*out = r;
	return 0;
bad:
	tsr_raft_destroy(r);
	return -EINVAL;
}

void
tsr_raft_destroy(struct tsr_raft *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->nlog; i++)
		free(r->log[i].data);
	free(r->log);
	free(r->snap);
	free(r->peers);
	free(r->pr);
	free(r->out);
	free(r->rd);
	free(r);
}

enum tsr_raft_role
tsr_raft_role(const struct tsr_raft *r)
{
	return r->role;
}

uint64_t
tsr_raft_term(const struct tsr_raft *r)
{
	return r->term;
}

uint64_t
tsr_raft_leader(const struct tsr_raft *r)
{
	return r->leader;
}

uint64_t
tsr_raft_commit(const struct tsr_raft *r)
{
	return r->commit;
}

uint64_t
tsr_raft_last_index(const struct tsr_raft *r)
{
	return last_index(r);
}

uint64_t
tsr_raft_lease_since(const struct tsr_raft *r, uint64_t now)
{
	uint64_t v[64];

	if (r->role != TSR_RAFT_LEADER || r->npeers > 64 ||
	    term_at(r, r->commit) != r->term)
		return 0;
	for (size_t i = 0; i < r->npeers; i++)
		v[i] = i == r->self ? now : r->pr[i].ctx;
	qsort(v, r->npeers, sizeof(v[0]), cmp_u64);
	return v[quorum(r) - 1];
}

uint64_t
tsr_raft_peer_current(const struct tsr_raft *r, uint64_t id)
{
	size_t slot = peer_slot(r, id);

	return r->role == TSR_RAFT_LEADER && slot != SIZE_MAX ? r->pr[slot].current : 0;
}

uint64_t
tsr_raft_peer_match(const struct tsr_raft *r, uint64_t id)
{
	size_t slot = peer_slot(r, id);

	return r->role == TSR_RAFT_LEADER && slot != SIZE_MAX ? r->pr[slot].match : 0;
}

int
tsr_raft_rejoining(const struct tsr_raft *r)
{
	return r->rejoin;
}

const char *
tsr_raft_msg_name(uint32_t type)
{
	switch (type) {
#define X(up, low, val) case val: return #low;
		TSR_RAFT_MSG_MAP(X)
#undef X
	}
	return NULL;
}
