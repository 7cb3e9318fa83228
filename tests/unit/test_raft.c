/* test_raft.c — the Raft state machine in a simulated cluster: nodes with
 * durable storage that survives their crashes, a network that delays,
 * reorders and cuts, and checks after every step that no two leaders share
 * a term and every node applies the same entry at the same index; at the
 * end, nothing a leader acknowledged as committed is missing anywhere. */
#include "raft/raft.h"
#include "raft/raftstore.h"

#include "testutil.h"

#include <tessera/encoding.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 5
#define E_TICKS 10

struct stored {
	uint64_t term;
	uint64_t val;     /* 0: a leader's empty entry */
};

struct node {
	uint64_t id;
	struct tsr_raft *r;
	int up;
	struct tsr_raft_hardstate hs;    /* durable */
	struct stored *log;              /* durable, index i at [i - 1] */
	size_t nlog, cap;
	struct stored *applied;          /* what this node applied, by index */
	size_t napplied, acap;
	uint64_t snap_index, snap_term;  /* durable snapshot: applied[] up to */
	uint8_t *snap;                   /* snap_index, as (term, val) pairs */
	size_t snap_len;
	int installs;                    /* snapshots received from a leader */
};

static size_t compact_every;         /* snapshot every N applied (0: never) */
static size_t append_bytes;          /* max_append_bytes of nodes started */
static size_t most_entries;          /* in one APPEND sent, the most */

struct pkt {
	struct tsr_raft_msg m;
	struct tsr_raft_entry *e;        /* deep copies */
	uint64_t *vals;
	uint8_t *snap;
};

static struct node nodes[MAXN];
static size_t nn;
static int cut[MAXN + 1][MAXN + 1];  /* cut[a][b]: a's messages to b lost */
static struct pkt *net;
static size_t nnet, netcap;
static uint64_t leader_of_term[100000];
static uint64_t rng = 88172645463325252ull;
static uint64_t now_round;           /* the clock APPENDs are stamped with */
static uint64_t max_term_led;        /* highest term that had a leader */
static uint64_t lease_rounds;        /* rounds some leader held a lease */

/* what leaders acknowledged: index -> value, and the truth of each index */
static struct stored truth[200000];
static size_t ntruth;
static uint64_t acked_vals[200000];
static size_t nacked;
static uint64_t next_val = 1;

static uint64_t
rnd(void)
{
	return tu_rnd(&rng);
}

/* A node's state machine (its applied sequence) as snapshot bytes, and
 * back: the state machine restored.  Each restored entry must be the
 * truth at its index. */
static uint8_t *
snap_encode(const struct node *n, size_t upto, size_t *len)
{
	uint8_t *b = malloc(upto * 16 + 1);

	ck_assert_ptr_nonnull(b);
	for (size_t i = 0; i < upto; i++) {
		memcpy(b + 16 * i, &n->applied[i].term, 8);
		memcpy(b + 16 * i + 8, &n->applied[i].val, 8);
	}
	*len = upto * 16;
	return b;
}

static void
snap_restore(struct node *n, const uint8_t *b, size_t len, uint64_t index)
{
	ck_assert_uint_eq(len, index * 16);
	if (n->acap < index + 1) {
		n->acap = index + 64;
		n->applied = realloc(n->applied, n->acap * sizeof(*n->applied));
		ck_assert_ptr_nonnull(n->applied);
	}
	for (size_t i = 0; i < index; i++) {
		memcpy(&n->applied[i].term, b + 16 * i, 8);
		memcpy(&n->applied[i].val, b + 16 * i + 8, 8);
		if (i < ntruth)
			ck_assert_msg(truth[i].term == n->applied[i].term &&
					      truth[i].val == n->applied[i].val,
				      "node %llu's snapshot disagrees at %zu",
				      (unsigned long long)n->id, i + 1);
	}
	n->napplied = index;
}

static void
node_start(struct node *n)
{
	uint64_t peers[MAXN];
	struct tsr_raft_entry *log = calloc(n->nlog + 1, sizeof(*log));
	uint64_t *vals = calloc(n->nlog + 1, sizeof(*vals));
	struct tsr_raft_conf c;

	ck_assert(log && vals);
	for (size_t i = 0; i < nn; i++)
		peers[i] = nodes[i].id;
	size_t nl = 0;
	for (size_t i = n->snap_index; i < n->nlog; i++, nl++) {
		vals[nl] = n->log[i].val;
		log[nl] = (struct tsr_raft_entry){ n->log[i].term, i + 1,
						   n->log[i].val ? (uint8_t *)&vals[nl] : NULL,
						   n->log[i].val ? 8 : 0 };
	}
	memset(&c, 0, sizeof(c));
	c.id = n->id;
	c.peers = peers;
	c.npeers = nn;
	c.election_ticks = E_TICKS;
	c.max_append_bytes = append_bytes;
	c.seed = rnd();
	c.hs = n->hs;
	c.log = log;
	c.nlog = nl;
	/* the state machine: the snapshot, then the log replayed */
	c.snap_index = n->snap_index;
	c.snap_term = n->snap_term;
	c.snap = n->snap;
	c.snap_len = n->snap_len;
	c.applied = n->snap_index;
	n->napplied = 0;
	if (n->snap_index)
		snap_restore(n, n->snap, n->snap_len, n->snap_index);
	ck_assert_int_eq(tsr_raft_create(&c, &n->r), 0);
	n->up = 1;
	free(log);
	free(vals);
}

static void
node_crash(struct node *n)
{
	tsr_raft_destroy(n->r);
	n->r = NULL;
	n->up = 0;
}

static void
cluster(size_t n)
{
	for (size_t i = 0; i < nn; i++) {
		if (nodes[i].r)
			tsr_raft_destroy(nodes[i].r);
		free(nodes[i].log);
		free(nodes[i].applied);
		free(nodes[i].snap);
	}
	memset(nodes, 0, sizeof(nodes));
	memset(cut, 0, sizeof(cut));
	memset(leader_of_term, 0, sizeof(leader_of_term));
	max_term_led = 0;
	lease_rounds = 0;
	for (size_t i = 0; i < nnet; i++) {
		free(net[i].e);
		free(net[i].vals);
		free(net[i].snap);
	}
	nnet = 0;
	ntruth = nacked = 0;
	nn = n;
	for (size_t i = 0; i < n; i++)
		nodes[i].id = i + 1;
	for (size_t i = 0; i < n; i++)
		node_start(&nodes[i]);
}

static struct node *
by_id(uint64_t id)
{
	return id >= 1 && id <= nn ? &nodes[id - 1] : NULL;
}

/* Persist, send, apply, advance one node's ready batch, checking safety. */
static void
node_ready(struct node *n)
{
	struct tsr_raft_ready rd;

	if (!n->up || !tsr_raft_ready(n->r, &rd))
		return;
	if (rd.hs_changed)
		n->hs = rd.hs;
	if (rd.snapshot_index) {
		/* persist the leader's snapshot */
		free(n->snap);
		n->snap = malloc(rd.snapshot_len + 1);
		ck_assert_ptr_nonnull(n->snap);
		memcpy(n->snap, rd.snapshot, rd.snapshot_len);
		n->snap_len = rd.snapshot_len;
		n->snap_index = rd.snapshot_index;
		n->snap_term = rd.snapshot_term;
		if (n->cap < n->snap_index) {
			n->cap = n->snap_index + 64;
			n->log = realloc(n->log, n->cap * sizeof(*n->log));
			ck_assert_ptr_nonnull(n->log);
		}
		if (n->nlog < n->snap_index)
			n->nlog = n->snap_index; /* below it: never read again */
	}
	for (size_t i = 0; i < rd.nentries; i++) {
		const struct tsr_raft_entry *e = &rd.entries[i];
		if (i == 0)
			n->nlog = e->index - 1; /* overwrite from here on */
		if (n->nlog == n->cap) {
			n->cap = n->cap ? n->cap * 2 : 64;
			n->log = realloc(n->log, n->cap * sizeof(*n->log));
			ck_assert_ptr_nonnull(n->log);
		}
		uint64_t v = 0;
		if (e->len == 8)
			memcpy(&v, e->data, 8);
		n->log[n->nlog++] = (struct stored){ e->term, v };
	}
	ck_assert_uint_ge(rd.last_index, n->snap_index);
	if (n->nlog > rd.last_index)
		n->nlog = rd.last_index; /* a truncated tail goes */
	if (rd.snapshot_index) {
		snap_restore(n, rd.snapshot, rd.snapshot_len, rd.snapshot_index);
		n->installs++;
	}
	for (size_t i = 0; i < rd.nmsgs; i++) {
		const struct tsr_raft_msg *m = &rd.msgs[i];
		struct pkt p;

		if (m->type == TSR_RAFT_APPEND && m->nentries > most_entries)
			most_entries = m->nentries;
		if (cut[m->from][m->to] || rnd() % 100 == 0) /* 1% loss */
			continue;
		memset(&p, 0, sizeof(p));
		p.m = *m;
		if (m->type == TSR_RAFT_APPEND)
			p.m.ctx = now_round;
		if (m->nentries) {
			p.e = calloc(m->nentries, sizeof(*p.e));
			p.vals = calloc(m->nentries, sizeof(*p.vals));
			ck_assert(p.e && p.vals);
			for (size_t k = 0; k < m->nentries; k++) {
				p.e[k] = m->entries[k];
				if (m->entries[k].len == 8) {
					memcpy(&p.vals[k], m->entries[k].data, 8);
					p.e[k].data = (uint8_t *)&p.vals[k];
				}
			}
			p.m.entries = p.e;
		}
		if (m->snap_len) {
			/* the sender's snapshot may be replaced before delivery */
			p.snap = malloc(m->snap_len);
			ck_assert_ptr_nonnull(p.snap);
			memcpy(p.snap, m->snap, m->snap_len);
			p.m.snap = p.snap;
		}
		if (nnet == netcap) {
			netcap = netcap ? netcap * 2 : 256;
			net = realloc(net, netcap * sizeof(*net));
			ck_assert_ptr_nonnull(net);
		}
		net[nnet++] = p;
	}
	for (size_t i = 0; i < rd.ncommitted; i++) {
		const struct tsr_raft_entry *e = &rd.committed[i];
		uint64_t v = 0;

		if (e->len == 8)
			memcpy(&v, e->data, 8);
		ck_assert_int_eq(e->index, n->napplied + 1);
		/* state machine safety: one entry per index, everywhere */
		if (e->index <= ntruth) {
			ck_assert_msg(truth[e->index - 1].term == e->term &&
					      truth[e->index - 1].val == v,
				      "node %llu applied (%llu, %llu) at %llu, another "
				      "applied (%llu, %llu)", (unsigned long long)n->id,
				      (unsigned long long)e->term, (unsigned long long)v,
				      (unsigned long long)e->index,
				      (unsigned long long)truth[e->index - 1].term,
				      (unsigned long long)truth[e->index - 1].val);
		} else {
			ck_assert_int_eq(e->index, ntruth + 1);
			truth[ntruth++] = (struct stored){ e->term, v };
			if (v)
				acked_vals[nacked++] = v; /* committed: acknowledged */
		}
		if (n->napplied == n->acap) {
			n->acap = n->acap ? n->acap * 2 : 64;
			n->applied = realloc(n->applied, n->acap * sizeof(*n->applied));
			ck_assert_ptr_nonnull(n->applied);
		}
		n->applied[n->napplied++] = (struct stored){ e->term, v };
	}
	tsr_raft_advance(n->r, &rd);
	if (compact_every && n->napplied >= n->snap_index + compact_every) {
		size_t len;
		uint8_t *b = snap_encode(n, n->napplied, &len);
		if (tsr_raft_compact(n->r, n->napplied, b, len) == 0) {
			free(n->snap);
			n->snap = b;
			n->snap_len = len;
			n->snap_index = n->napplied;
			n->snap_term = n->applied[n->napplied - 1].term;
		} else {
			free(b);
		}
	}
}

static void
check_leaders(void)
{
	for (size_t i = 0; i < nn; i++) {
		struct node *n = &nodes[i];
		uint64_t t;

		if (!n->up || tsr_raft_role(n->r) != TSR_RAFT_LEADER)
			continue;
		t = tsr_raft_term(n->r);
		ck_assert(t < 100000);
		ck_assert_msg(leader_of_term[t] == 0 || leader_of_term[t] == n->id,
			      "two leaders in term %llu: %llu and %llu",
			      (unsigned long long)t, (unsigned long long)leader_of_term[t],
			      (unsigned long long)n->id);
		leader_of_term[t] = n->id;
		if (t > max_term_led)
			max_term_led = t;
	}
}

/* A leader whose majority answered APPENDs sent at T or later reads from
 * its own state until T + E_TICKS: no later term may have a leader by
 * then (a restarted node must not have voted one in either). */
static void
check_leases(void)
{
	int held = 0;

	for (size_t i = 0; i < nn; i++) {
		struct node *n = &nodes[i];
		uint64_t since;

		if (!n->up || tsr_raft_role(n->r) != TSR_RAFT_LEADER)
			continue;
		since = tsr_raft_lease_since(n->r, now_round);
		if (since == 0 || now_round - since >= E_TICKS)
			continue;
		held = 1;
		ck_assert_msg(max_term_led <= tsr_raft_term(n->r),
			      "node %llu holds a lease in term %llu at round %llu, "
			      "but term %llu has a leader", (unsigned long long)n->id,
			      (unsigned long long)tsr_raft_term(n->r),
			      (unsigned long long)now_round,
			      (unsigned long long)max_term_led);
	}
	lease_rounds += held;
}

/* One round: every node ticks (maybe), handles its ready batch, and the
 * network delivers what is queued, in a shuffled order. */
static void
round_(int tick)
{
	if (tick)
		now_round++;
	for (size_t i = 0; i < nn; i++)
		if (nodes[i].up && tick)
			tsr_raft_tick(nodes[i].r);
	for (size_t i = 0; i < nn; i++)
		node_ready(&nodes[i]);
	check_leaders();
	check_leases();
	for (size_t i = nnet; i > 1; i--) {
		size_t j = rnd() % i;
		struct pkt t = net[i - 1];
		net[i - 1] = net[j];
		net[j] = t;
	}
	size_t n = nnet;
	struct pkt *batch = malloc((n ? n : 1) * sizeof(*batch));
	ck_assert_ptr_nonnull(batch);
	if (n)
		memcpy(batch, net, n * sizeof(*batch));
	nnet = 0;
	for (size_t i = 0; i < n; i++) {
		struct node *to = by_id(batch[i].m.to);
		if (to && to->up && !cut[batch[i].m.from][batch[i].m.to]) {
			char why[256] = "";
			int rc = tsr_raft_step(to->r, &batch[i].m, why, sizeof(why));
			ck_assert_msg(rc == 0, "step %s from %llu to %llu: %d: %s",
				      tsr_raft_msg_name(batch[i].m.type),
				      (unsigned long long)batch[i].m.from,
				      (unsigned long long)batch[i].m.to, rc, why);
			node_ready(to);
		}
		free(batch[i].e);
		free(batch[i].vals);
		free(batch[i].snap);
	}
	free(batch);
	check_leaders();
	check_leases();
}

static struct node *
leader(void)
{
	struct node *l = NULL;

	for (size_t i = 0; i < nn; i++)
		if (nodes[i].up && tsr_raft_role(nodes[i].r) == TSR_RAFT_LEADER &&
		    (l == NULL || tsr_raft_term(nodes[i].r) > tsr_raft_term(l->r)))
			l = &nodes[i];
	return l;
}

/* Run rounds until a leader exists among the connected (bounded). */
static struct node *
await_leader(int max_ticks)
{
	for (int t = 0; t < max_ticks; t++) {
		struct node *l = leader();
		if (l)
			return l;
		round_(1);
	}
	return leader();
}

static int
propose(uint64_t *val)
{
	struct node *l = leader();
	uint64_t v = next_val;

	if (l == NULL)
		return -EAGAIN;
	if (tsr_raft_propose(l->r, &v, 8, NULL) < 0)
		return -EAGAIN;
	next_val++;
	if (val)
		*val = v;
	return 0;
}

/* Every node that is up applies the whole truth (bounded). */
static int
converge(int max_ticks)
{
	for (int t = 0; t < max_ticks; t++) {
		int all = 1;
		for (size_t i = 0; i < nn; i++)
			all &= !nodes[i].up || nodes[i].napplied == ntruth;
		if (all && t > 3 * E_TICKS)
			return 1;
		round_(1);
	}
	return 0;
}

/* Every acknowledged value is in every up node's applied sequence. */
static void
check_acked(void)
{
	for (size_t i = 0; i < nn; i++) {
		struct node *n = &nodes[i];
		size_t k = 0;

		if (!n->up)
			continue;
		ck_assert_int_eq(n->napplied, ntruth);
		for (size_t a = 0; a < nacked; a++) {
			while (k < n->napplied && n->applied[k].val != acked_vals[a])
				k++;
			ck_assert_msg(k < n->napplied, "node %llu lost acknowledged "
				      "value %llu", (unsigned long long)n->id,
				      (unsigned long long)acked_vals[a]);
		}
	}
}

static void
partition(const int *side, int on)
{
	/* side[i] = 0 or 1; messages between sides are cut */
	for (size_t a = 0; a < nn; a++)
		for (size_t b = 0; b < nn; b++)
			cut[a + 1][b + 1] = on && side[a] != side[b];
}

START_TEST(elect_and_replicate)
{
	struct node *l;

	cluster(3);
	l = await_leader(20 * E_TICKS);
	ck_assert_ptr_nonnull(l);
	for (int i = 0; i < 100; i++) {
		ck_assert_int_eq(propose(NULL), 0);
		round_(i % 3 == 0);
	}
	ck_assert(converge(50 * E_TICKS));
	ck_assert_int_ge(nacked, 100);
	check_acked();
	/* one node: leads itself and commits alone */
	cluster(1);
	ck_assert_ptr_nonnull(await_leader(5 * E_TICKS));
	ck_assert_int_eq(propose(NULL), 0);
	ck_assert(converge(10 * E_TICKS));
	ck_assert_int_eq(nacked, 1);
}
END_TEST

/* The leader crashes: a new one within a few election timeouts; nothing
 * acknowledged is lost; the old leader comes back and catches up. */
START_TEST(leader_crash)
{
	struct node *l, *l2;
	int t;

	cluster(3);
	l = await_leader(20 * E_TICKS);
	for (int i = 0; i < 50; i++) {
		propose(NULL);
		round_(1);
	}
	node_crash(l);
	for (t = 0; t < 10 * E_TICKS; t++) {
		if ((l2 = leader()) != NULL)
			break;
		round_(1);
	}
	ck_assert_msg(l2 != NULL, "no new leader in %d ticks", t);
	fprintf(stderr, "leader_crash: new leader after %d ticks (election "
		"timeout %d..%d)\n", t, E_TICKS, 2 * E_TICKS);
	ck_assert_int_le(t, 6 * E_TICKS); /* a split vote or a lost message may cost a round or two */
	for (int i = 0; i < 50; i++) {
		propose(NULL);
		round_(1);
	}
	node_start(l);
	ck_assert(converge(50 * E_TICKS));
	check_acked();
}
END_TEST

/* The leader alone on one side: it cannot commit, steps down; the
 * majority elects and commits; after healing the old leader's
 * uncommitted entries are gone and everyone agrees. */
START_TEST(minority_cannot_commit)
{
	struct node *l, *l2 = NULL;
	int side[MAXN] = { 0 };
	size_t before;

	cluster(3);
	l = await_leader(20 * E_TICKS);
	for (int i = 0; i < 20; i++) {
		propose(NULL);
		round_(1);
	}
	ck_assert(converge(20 * E_TICKS));
	side[l->id - 1] = 1;
	partition(side, 1);
	before = ntruth;
	/* the cut-off leader still takes proposals, never commits them */
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(tsr_raft_propose(l->r, &next_val, 8, NULL), 0);
		next_val++;
	}
	int t;
	for (t = 0; t < 5 * E_TICKS && tsr_raft_role(l->r) == TSR_RAFT_LEADER; t++)
		round_(1);
	ck_assert_msg(tsr_raft_role(l->r) != TSR_RAFT_LEADER,
		      "the cut-off leader still leads after %d ticks", t);
	for (int i = 0; i < 20 * E_TICKS && (l2 == NULL || l2 == l); i++) {
		round_(1);
		l2 = leader();
	}
	ck_assert_ptr_nonnull(l2);
	ck_assert_ptr_ne(l2, l);
	for (int i = 0; i < 20; i++) {
		propose(NULL);
		round_(1);
	}
	partition(side, 0);
	ck_assert(converge(50 * E_TICKS));
	check_acked();
	ck_assert_int_gt(ntruth, before);
}
END_TEST

/* A follower cut off for a long time does not raise its term (pre-vote),
 * so coming back it does not depose the leader. */
START_TEST(prevote_keeps_leader)
{
	struct node *l, *f = NULL;
	int side[MAXN] = { 0 };
	uint64_t term;

	cluster(3);
	l = await_leader(20 * E_TICKS);
	ck_assert(converge(10 * E_TICKS));
	term = tsr_raft_term(l->r);
	for (size_t i = 0; i < nn; i++)
		if (&nodes[i] != l)
			f = &nodes[i];
	side[f->id - 1] = 1;
	partition(side, 1);
	for (int i = 0; i < 30 * E_TICKS; i++)
		round_(1);
	ck_assert_int_eq(tsr_raft_term(f->r), term);
	partition(side, 0);
	for (int i = 0; i < 10 * E_TICKS; i++)
		round_(1);
	ck_assert_ptr_eq(leader(), l);
	ck_assert_int_eq(tsr_raft_term(l->r), term);
}
END_TEST

/* A node that acknowledged a leader and restarted at once must not help
 * elect another before the leader's lease is over.  L leads 3 nodes; the
 * link L-Y is cut, so Y stops hearing from L; A, which has just answered L,
 * restarts and is cut from L too; Y's clock runs ahead and it campaigns
 * right away, asking only A.  If A voted (it remembers no leader), Y would
 * lead while L still holds its lease on A's answer: check_leases() fails. */
START_TEST(restart_keeps_lease)
{
	struct node *l, *a = NULL, *y = NULL;
	uint64_t term;
	int t;

	cluster(3);
	l = await_leader(20 * E_TICKS);
	ck_assert(converge(10 * E_TICKS));
	term = tsr_raft_term(l->r);
	for (size_t i = 0; i < nn; i++)
		if (&nodes[i] != l)
			*(a == NULL ? &a : &y) = &nodes[i];
	cut[l->id][y->id] = cut[y->id][l->id] = 1;
	round_(1);
	round_(1);
	ck_assert(tsr_raft_lease_since(l->r, now_round) != 0);
	node_crash(a);
	node_start(a);
	cut[l->id][a->id] = cut[a->id][l->id] = 1;
	for (t = 0; t < 4 * E_TICKS && tsr_raft_role(y->r) != TSR_RAFT_CANDIDATE; t++)
		tsr_raft_tick(y->r);
	ck_assert_int_eq(tsr_raft_role(y->r), TSR_RAFT_CANDIDATE);
	for (t = 0; t < 6 * E_TICKS; t++)
		round_(1); /* check_leases() runs in every round */
	/* liveness still: A and Y elect one of them once it is safe */
	ck_assert_ptr_nonnull(leader());
	ck_assert_int_gt(tsr_raft_term(leader()->r), term);
	ck_assert(leader() == a || leader() == y);
}
END_TEST

/* A follower crashes, misses entries, restarts from its storage and
 * catches up. */
START_TEST(restart_catches_up)
{
	struct node *l, *f = NULL;

	cluster(3);
	l = await_leader(20 * E_TICKS);
	for (size_t i = 0; i < nn; i++)
		if (&nodes[i] != l)
			f = &nodes[i];
	for (int i = 0; i < 10; i++) {
		propose(NULL);
		round_(1);
	}
	node_crash(f);
	for (int i = 0; i < 100; i++) {
		propose(NULL);
		round_(i % 2);
	}
	node_start(f);
	ck_assert(converge(50 * E_TICKS));
	check_acked();
	ck_assert_int_ge(f->napplied, 110);
}
END_TEST

/* A follower far behind gets its entries in APPENDs of at most
 * max_append_bytes (8-byte entries, counted with 32 bytes of framing
 * each: 2 in 100 bytes), never in one too large for a message. */
START_TEST(append_bytes_bounded)
{
	struct node *l, *f = NULL;

	append_bytes = 100;
	cluster(3);
	l = await_leader(20 * E_TICKS);
	for (size_t i = 0; i < nn; i++)
		if (&nodes[i] != l)
			f = &nodes[i];
	node_crash(f);
	for (int i = 0; i < 100; i++) {
		propose(NULL);
		round_(i % 2);
	}
	most_entries = 0;
	node_start(f);
	ck_assert(converge(200 * E_TICKS));
	check_acked();
	ck_assert_int_ge(f->napplied, 100);
	ck_assert_uint_ge(most_entries, 1);
	ck_assert_uint_le(most_entries, 2);
	append_bytes = 0;
}
END_TEST

/* Every node takes a snapshot every 25 entries applied; a follower down
 * while 200 entries commit comes back behind the leader's snapshot: it
 * gets the snapshot, then the log after it, and crashes and restarts
 * from its own stored snapshot once more. */
START_TEST(snapshot_catch_up)
{
	struct node *l, *f = NULL;

	cluster(3);
	compact_every = 25;
	l = await_leader(20 * E_TICKS);
	for (size_t i = 0; i < nn; i++)
		if (&nodes[i] != l)
			f = &nodes[i];
	for (int i = 0; i < 30; i++) {
		propose(NULL);
		round_(1);
	}
	node_crash(f);
	for (int i = 0; i < 200; i++) {
		propose(NULL);
		round_(i % 2);
	}
	ck_assert_uint_gt(l->snap_index, 100);
	node_start(f);
	ck_assert(converge(50 * E_TICKS));
	check_acked();
	ck_assert_int_ge(f->installs, 1);
	ck_assert_uint_ge(f->napplied, 230);
	/* restart from its own snapshot and log */
	node_crash(f);
	node_start(f);
	ck_assert_uint_ge(f->napplied, f->snap_index);
	ck_assert(converge(50 * E_TICKS));
	check_acked();
	fprintf(stderr, "snapshot_catch_up: the follower installed %d snapshot(s); "
		"the leader's is at %llu of %zu\n", f->installs,
		(unsigned long long)l->snap_index, ntruth);
	compact_every = 0;
}
END_TEST

/* Random crashes, restarts and partitions of 5 nodes while proposals
 * flow; safety is checked every round; at the end, with everyone back,
 * every acknowledged value is everywhere. */
START_TEST(nemesis)
{
	int side[MAXN];
	size_t rounds = 6000;
	int installs = 0;

	cluster(5);
	compact_every = 40; /* snapshots and compaction all along */
	for (size_t t = 0; t < rounds; t++) {
		if (t % 40 == 0 || t % 40 == 7) {
			switch (rnd() % 6) {
			case 0: { /* crash one, unless two are down already */
				size_t down = 0, k = rnd() % nn;
				for (size_t i = 0; i < nn; i++)
					down += !nodes[i].up;
				if (down < 2 && nodes[k].up)
					node_crash(&nodes[k]);
				break;
			}
			case 1: /* restart everyone down */
				for (size_t i = 0; i < nn; i++)
					if (!nodes[i].up)
						node_start(&nodes[i]);
				break;
			case 4: { /* crash one and restart it at once: it may
				   * have just confirmed a leader's lease */
				size_t k = rnd() % nn;
				if (nodes[k].up) {
					node_crash(&nodes[k]);
					node_start(&nodes[k]);
				}
				break;
			}
			case 5: { /* cut one link, both ways: a partition
				   * that is not two sides (a and c both reach
				   * b, but not each other) */
				size_t a = rnd() % nn + 1, b = rnd() % nn + 1;
				cut[a][b] = cut[b][a] = a != b;
				break;
			}
			case 2: /* a random partition */
				for (size_t i = 0; i < nn; i++)
					side[i] = (int)(rnd() % 2);
				partition(side, 1);
				break;
			default:
				partition(side, 0);
			}
		}
		if (rnd() % 2)
			propose(NULL);
		round_(1);
	}
	partition(side, 0);
	for (size_t i = 0; i < nn; i++)
		if (!nodes[i].up)
			node_start(&nodes[i]);
	ck_assert(converge(100 * E_TICKS));
	check_acked();
	for (size_t i = 0; i < nn; i++)
		installs += nodes[i].installs;
	fprintf(stderr, "nemesis: %zu rounds, %zu entries committed, %zu values "
		"acknowledged, all present on all 5 nodes; a leader held a lease in "
		"%llu rounds; %d snapshots installed\n", rounds, ntruth, nacked,
		(unsigned long long)lease_rounds, installs);
	compact_every = 0;
	ck_assert_int_gt(nacked, 100);
	ck_assert_int_gt(lease_rounds, rounds / 4);
}
END_TEST

/* ---- Hostile input (issue 16) ----------------------------------------------
 *
 * A member's messages are forged here by hand and stepped into one node:
 * each must be refused (-ERANGE or -EINVAL, with a reason), leave the
 * node's term and log as they were, and the cluster must go on. */

/* Step a forged message into n; its return, the reason in why. */
static int
forge(struct node *n, struct tsr_raft_msg m, char *why, size_t whylen)
{
	why[0] = '\0';
	m.to = n->id;
	return tsr_raft_step(n->r, &m, why, whylen);
}

/* Some node other than the ones given (NULL: none). */
static struct node *
other_than(const struct node *a, const struct node *b)
{
	for (size_t i = 0; i < nn; i++)
		if (&nodes[i] != a && &nodes[i] != b && nodes[i].up)
			return &nodes[i];
	return NULL;
}

/* The cluster goes on as before: same leader and term, new entries
 * commit everywhere, nothing acknowledged is lost. */
static void
goes_on(struct node *l, uint64_t term)
{
	ck_assert_ptr_eq(leader(), l);
	ck_assert_uint_eq(tsr_raft_term(l->r), term);
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(propose(NULL), 0);
		round_(i % 2);
	}
	ck_assert(converge(50 * E_TICKS));
	check_acked();
	ck_assert_ptr_eq(leader(), l);
	ck_assert_uint_eq(tsr_raft_term(l->r), term);
}

/* The probe of issue 16: one APPEND of term 2^64 - 1 left every monitor
 * a candidate of that term for good (term + 1 wrapped), and the term was
 * stored.  Terms above 2^62 are refused, by the leader and followers. */
START_TEST(forged_append_huge_term_refused)
{
	static const uint64_t terms[] = { UINT64_MAX, UINT64_MAX - 1,
					  TSR_RAFT_TERM_MAX + 1, 1ull << 63 };
	struct node *l, *f, *g;
	uint64_t term;
	char why[256];

	cluster(3);
	ck_assert_ptr_nonnull(l = await_leader(20 * E_TICKS));
	ck_assert(converge(10 * E_TICKS));
	term = tsr_raft_term(l->r);
	f = other_than(l, NULL);
	g = other_than(l, f);
	for (size_t i = 0; i < sizeof(terms) / sizeof(terms[0]); i++) {
		struct tsr_raft_msg m = { .type = TSR_RAFT_APPEND, .from = f->id,
					  .term = terms[i] };
		ck_assert_int_eq(forge(l, m, why, sizeof(why)), -ERANGE);
		ck_assert_contains(why, "above 2^62");
		m.from = l->id;
		ck_assert_int_eq(forge(g, m, why, sizeof(why)), -ERANGE);
		/* and every other kind of message */
		for (uint32_t t = TSR_RAFT_PREVOTE; t <= TSR_RAFT_SNAPSHOT; t++) {
			m = (struct tsr_raft_msg){ .type = t, .from = f->id,
						   .term = terms[i], .index = 1,
						   .log_term = 1, .commit = 1 };
			ck_assert_int_eq(forge(l, m, why, sizeof(why)), -ERANGE);
			ck_assert_int_eq(forge(g, m, why, sizeof(why)), -ERANGE);
		}
		ck_assert_uint_eq(tsr_raft_term(l->r), term);
		ck_assert_uint_eq(tsr_raft_term(g->r), term);
		ck_assert_int_eq(tsr_raft_role(l->r), TSR_RAFT_LEADER);
	}
	goes_on(l, term);
}
END_TEST

/* A term far ahead of ours (more than TSR_RAFT_TERM_AHEAD) is refused:
 * with pre-vote a member cannot fall that far behind.  A node that lost
 * its store has no term to measure from and is not held to it. */
START_TEST(forged_append_far_term_refused)
{
	struct node *l, *f, *g;
	uint64_t term, big = 3 * TSR_RAFT_TERM_AHEAD;
	char why[256];

	cluster(3);
	ck_assert_ptr_nonnull(l = await_leader(20 * E_TICKS));
	ck_assert(converge(10 * E_TICKS));
	term = tsr_raft_term(l->r);
	f = other_than(l, NULL);
	g = other_than(l, f);
	struct tsr_raft_msg m = { .type = TSR_RAFT_APPEND, .from = f->id,
				  .term = term + TSR_RAFT_TERM_AHEAD + 1 };
	ck_assert_int_eq(forge(l, m, why, sizeof(why)), -ERANGE);
	ck_assert_contains(why, "ahead of ours");
	m.from = l->id;
	ck_assert_int_eq(forge(g, m, why, sizeof(why)), -ERANGE);
	m = (struct tsr_raft_msg){ .type = TSR_RAFT_VOTE, .from = f->id,
				   .term = term + 5000000, .index = 1, .log_term = 1 };
	ck_assert_int_eq(forge(g, m, why, sizeof(why)), -ERANGE);
	m.type = TSR_RAFT_VOTE_RESP;
	ck_assert_int_eq(forge(l, m, why, sizeof(why)), -ERANGE);
	ck_assert_uint_eq(tsr_raft_term(l->r), term);
	ck_assert_uint_eq(tsr_raft_term(g->r), term);
	goes_on(l, term);

	/* a node without a store (term 0) takes a leader's term, however
	 * high; with a term of its own (1) the same APPEND is refused */
	{
		uint64_t peers[3] = { 1, 2, 3 };
		struct tsr_raft_conf c = { .id = 1, .peers = peers, .npeers = 3 };
		struct tsr_raft *r;

		m = (struct tsr_raft_msg){ .type = TSR_RAFT_APPEND, .from = 2, .to = 1,
					   .term = big };
		ck_assert_int_eq(tsr_raft_create(&c, &r), 0);
		ck_assert(tsr_raft_rejoining(r));
		ck_assert_int_eq(tsr_raft_step(r, &m, why, sizeof(why)), 0);
		ck_assert_uint_eq(tsr_raft_term(r), big);
		ck_assert_uint_eq(tsr_raft_leader(r), 2);
		ck_assert(!tsr_raft_rejoining(r)); /* it holds all (nothing) */
		tsr_raft_destroy(r);
		c.hs.term = 1;
		ck_assert_int_eq(tsr_raft_create(&c, &r), 0);
		ck_assert(!tsr_raft_rejoining(r));
		ck_assert_int_eq(tsr_raft_step(r, &m, why, sizeof(why)), -ERANGE);
		ck_assert_uint_eq(tsr_raft_term(r), 1);
		tsr_raft_destroy(r);
	}
}
END_TEST

/* No term + 1 wraps: a stored term above 2^62 is refused at start, and a
 * node at the ceiling does not campaign into a term its peers refuse. */
START_TEST(term_overflow)
{
	uint64_t peers[3] = { 1, 2, 3 };
	struct tsr_raft_conf c;
	struct tsr_raft *r;
	struct tsr_raft_ready rd;
	struct tsr_raft_msg m;
	char why[256];

	memset(&c, 0, sizeof(c));
	c.id = 1;
	c.peers = peers;
	c.npeers = 1;
	c.hs.term = UINT64_MAX;
	ck_assert_int_eq(tsr_raft_create(&c, &r), -EINVAL);
	c.hs.term = TSR_RAFT_TERM_MAX + 1;
	ck_assert_int_eq(tsr_raft_create(&c, &r), -EINVAL);
	/* one node at the ceiling: it would win alone, with term + 1 */
	c.hs.term = TSR_RAFT_TERM_MAX;
	ck_assert_int_eq(tsr_raft_create(&c, &r), 0);
	for (int t = 0; t < 10 * E_TICKS; t++) {
		tsr_raft_tick(r);
		while (tsr_raft_ready(r, &rd))
			tsr_raft_advance(r, &rd);
		ck_assert_uint_eq(tsr_raft_term(r), TSR_RAFT_TERM_MAX);
	}
	ck_assert_int_ne(tsr_raft_role(r), TSR_RAFT_LEADER);
	tsr_raft_destroy(r);
	/* three at the ceiling: pre-votes for the term after it refused */
	c.npeers = 3;
	ck_assert_int_eq(tsr_raft_create(&c, &r), 0);
	m = (struct tsr_raft_msg){ .type = TSR_RAFT_PREVOTE, .from = 2, .to = 1,
				   .term = TSR_RAFT_TERM_MAX + 1 };
	ck_assert_int_eq(tsr_raft_step(r, &m, why, sizeof(why)), -ERANGE);
	m.type = TSR_RAFT_PREVOTE_RESP;
	ck_assert_int_eq(tsr_raft_step(r, &m, why, sizeof(why)), -ERANGE);
	ck_assert_uint_eq(tsr_raft_term(r), TSR_RAFT_TERM_MAX);
	tsr_raft_destroy(r);
}
END_TEST

/* Indexes, counts and terms inside a message that no member could send:
 * refused, the receiver unchanged. */
START_TEST(forged_index_refused)
{
	struct node *l, *f, *g;
	uint64_t term, last, commit;
	char why[256];
	struct tsr_raft_entry e[3] = { { 0 } };

	cluster(3);
	ck_assert_ptr_nonnull(l = await_leader(20 * E_TICKS));
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(propose(NULL), 0);
		round_(0);
	}
	ck_assert(converge(20 * E_TICKS));
	term = tsr_raft_term(l->r);
	f = other_than(l, NULL);
	g = other_than(l, f);
	last = tsr_raft_last_index(g->r);
	commit = tsr_raft_commit(g->r);
	const struct {
		const char *what;
		struct tsr_raft_msg m;
		int rc;
		const char *why;
	} bad[] = {
		{ "append after an index beyond 2^62",
		  { .type = TSR_RAFT_APPEND, .index = TSR_RAFT_INDEX_MAX + 1,
		    .log_term = 1 }, -ERANGE, "above 2^62" },
		{ "append with a commit index of 2^63",
		  { .type = TSR_RAFT_APPEND, .index = 1, .log_term = 1,
		    .commit = 1ull << 63 }, -ERANGE, "above 2^62" },
		{ "append after entry 0 of term 5 (its answer was index 0 - 1)",
		  { .type = TSR_RAFT_APPEND, .index = 0, .log_term = 5 }, -EINVAL,
		  "0 together" },
		{ "append whose entries end beyond 2^62",
		  { .type = TSR_RAFT_APPEND, .index = TSR_RAFT_INDEX_MAX - 1,
		    .log_term = 1, .entries = e, .nentries = 3 }, -ERANGE,
		  "beyond 2^62" },
		{ "append after an entry of a later term",
		  { .type = TSR_RAFT_APPEND, .index = 1, .log_term = term + 1 },
		  -ERANGE, "naming an entry" },
		{ "append whose entries' terms go down",
		  { .type = TSR_RAFT_APPEND, .index = last, .log_term = term,
		    .entries = e, .nentries = 2 }, -ERANGE, "after one of term" },
		{ "snapshot beyond the sender's commit index",
		  { .type = TSR_RAFT_SNAPSHOT, .index = last + 100, .log_term = term,
		    .commit = last }, -ERANGE, "beyond the sender's commit" },
		{ "vote for a log newer than the term asked",
		  { .type = TSR_RAFT_VOTE, .index = last + 100, .log_term = term + 1 },
		  -ERANGE, "naming an entry" },
		{ "a count of entries on an answer",
		  { .type = TSR_RAFT_APPEND_RESP, .entries = e, .nentries = 1 },
		  -EINVAL, "only an append" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tsr_raft_msg m = bad[i].m;

		/* (the entries, when there are any, as the case needs) */
		e[0] = (struct tsr_raft_entry){ term, m.index + 1, NULL, 0 };
		e[1] = (struct tsr_raft_entry){ term - 1, m.index + 2, NULL, 0 };
		e[2] = (struct tsr_raft_entry){ term, m.index + 3, NULL, 0 };
		m.from = l->id;
		m.term = term;
		ck_assert_msg(forge(g, m, why, sizeof(why)) == bad[i].rc,
			      "%s: not refused (%s)", bad[i].what, why);
		ck_assert_msg(strstr(why, bad[i].why) != NULL, "%s: \"%s\"",
			      bad[i].what, why);
		ck_assert_uint_eq(tsr_raft_term(g->r), term);
		ck_assert_uint_eq(tsr_raft_last_index(g->r), last);
		ck_assert_uint_eq(tsr_raft_commit(g->r), commit);
	}
	/* the leader: an acknowledgement of entries it never had */
	struct tsr_raft_msg m = { .type = TSR_RAFT_APPEND_RESP, .from = f->id,
				  .term = term, .match = tsr_raft_last_index(l->r) + 1 };
	ck_assert_int_eq(forge(l, m, why, sizeof(why)), -ERANGE);
	ck_assert_contains(why, "our log ends at");
	goes_on(l, term);
}
END_TEST

/* One leader per term: an APPEND of our term from a member that is not
 * the leader we follow is refused, and we keep following ours. */
START_TEST(forged_append_other_leader_refused)
{
	struct node *l, *f, *g;
	uint64_t term;
	char why[256];

	cluster(3);
	ck_assert_ptr_nonnull(l = await_leader(20 * E_TICKS));
	ck_assert(converge(10 * E_TICKS));
	term = tsr_raft_term(l->r);
	f = other_than(l, NULL);
	g = other_than(l, f);
	ck_assert_uint_eq(tsr_raft_leader(g->r), l->id);
	struct tsr_raft_msg m = { .type = TSR_RAFT_APPEND, .from = f->id, .term = term,
				  .index = tsr_raft_last_index(g->r),
				  .log_term = term, .commit = tsr_raft_commit(g->r) };
	ck_assert_int_eq(forge(g, m, why, sizeof(why)), -EPROTO);
	ck_assert_contains(why, "which node");
	ck_assert_uint_eq(tsr_raft_leader(g->r), l->id);
	goes_on(l, term);
}
END_TEST

/* ---- A store lost (issue 16) ------------------------------------------------*/

/* Node n loses everything it stored (its data directory moved away) and
 * starts again. */
static void
node_wipe_and_start(struct node *n)
{
	node_crash(n);
	memset(&n->hs, 0, sizeof(n->hs));
	n->nlog = 0;
	free(n->snap);
	n->snap = NULL;
	n->snap_len = 0;
	n->snap_index = n->snap_term = 0;
	n->napplied = 0;
	n->installs = 0;
	node_start(n);
}

/* A follower restarted with an empty store: its answers show a log
 * shorter than what the leader remembers it acknowledged.  The leader
 * forgets that (its match index for it drops), sends the log, or the
 * snapshot when the log is compacted, and the follower catches up.  Until
 * then it is not current (tsr_raft_peer_current), and it is rejoining. */
static void
wiped_follower_catches_up(size_t every)
{
	struct node *l, *f;
	uint64_t before, lowest, wiped_at;
	int t;

	cluster(3);
	compact_every = every;
	ck_assert_ptr_nonnull(l = await_leader(20 * E_TICKS));
	for (int i = 0; i < 60; i++) {
		ck_assert_int_eq(propose(NULL), 0);
		round_(i % 2);
	}
	ck_assert(converge(20 * E_TICKS));
	f = other_than(l, NULL);
	before = tsr_raft_peer_match(l->r, f->id);
	ck_assert_uint_ge(before, 60);
	ck_assert_uint_gt(tsr_raft_peer_current(l->r, f->id), 0);
	if (every)
		ck_assert_uint_gt(l->snap_index, 1);

	node_wipe_and_start(f);
	ck_assert(tsr_raft_rejoining(f->r));
	wiped_at = now_round;
	lowest = before;
	for (t = 0; t < 30 * E_TICKS && (f->napplied < ntruth || t < 2 * E_TICKS); t++) {
		if (t % 3 == 0)
			ck_assert_int_eq(propose(NULL), 0);
		round_(1);
		ck_assert_ptr_eq(leader(), l);
		if (tsr_raft_peer_match(l->r, f->id) < lowest)
			lowest = tsr_raft_peer_match(l->r, f->id);
		/* current again only once it holds all that was committed */
		if (tsr_raft_peer_current(l->r, f->id) > wiped_at)
			ck_assert(!tsr_raft_rejoining(f->r));
	}
	fprintf(stderr, "wiped follower (compaction every %zu): the leader's match "
		"for it went %llu -> %llu; it applied %zu of %zu in %d ticks, "
		"%d snapshot(s)\n", every, (unsigned long long)before,
		(unsigned long long)lowest, f->napplied, ntruth, t, f->installs);
	ck_assert_msg(lowest < before, "the leader's match index for the wiped "
		      "follower stayed at %llu", (unsigned long long)before);
	ck_assert(converge(50 * E_TICKS));
	check_acked();
	ck_assert(!tsr_raft_rejoining(f->r));
	ck_assert_uint_ge(tsr_raft_peer_match(l->r, f->id), ntruth - 1);
	ck_assert_uint_gt(tsr_raft_peer_current(l->r, f->id), wiped_at);
	if (every)
		ck_assert_int_ge(f->installs, 1);
	compact_every = 0;
}

START_TEST(empty_store_follower_catches_up)
{
	wiped_follower_catches_up(0);
}
END_TEST

START_TEST(empty_store_follower_catches_up_by_snapshot)
{
	wiped_follower_catches_up(25);
}
END_TEST

/* A follower that lost its store may have acknowledged entries that now
 * exist on a minority only.  Here C acknowledges what L commits while B
 * is cut off; C loses its store; L goes down.  B and C must not elect B
 * (whose log lacks the committed entries): C votes for no candidate with
 * a log until a leader has caught it up.  L back, all is there. */
START_TEST(empty_store_follower_votes_only_when_caught_up)
{
	struct node *l, *b, *c;
	size_t before;

	cluster(3);
	ck_assert_ptr_nonnull(l = await_leader(20 * E_TICKS));
	ck_assert(converge(10 * E_TICKS));
	b = other_than(l, NULL);
	c = other_than(l, b);
	cut[l->id][b->id] = cut[b->id][l->id] = 1;
	before = ntruth;
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(propose(NULL), 0);
		round_(i % 2);
	}
	for (int t = 0; t < 10 * E_TICKS && c->napplied < before + 20; t++)
		round_(1);
	ck_assert_uint_ge(c->napplied, before + 20); /* committed by L and C */
	ck_assert_uint_lt(tsr_raft_last_index(b->r), before + 20);

	node_wipe_and_start(c);
	cut[l->id][c->id] = cut[c->id][l->id] = 1;
	node_crash(l);
	for (int t = 0; t < 40 * E_TICKS; t++) {
		round_(1);
		ck_assert_msg(leader() == NULL, "node %llu leads without the "
			      "entries committed before node %llu lost its store",
			      (unsigned long long)leader()->id,
			      (unsigned long long)c->id);
	}
	ck_assert(tsr_raft_rejoining(c->r));
	memset(cut, 0, sizeof(cut));
	node_start(l);
	ck_assert_ptr_nonnull(await_leader(40 * E_TICKS));
	ck_assert(converge(50 * E_TICKS));
	check_acked();
	ck_assert(!tsr_raft_rejoining(c->r));
}
END_TEST

START_TEST(bad_input)
{
	struct tsr_raft *r;
	struct tsr_raft_conf c;
	uint64_t peers[3] = { 1, 2, 3 };
	struct tsr_raft_entry e[2] = { { 1, 1, NULL, 0 }, { 1, 3, NULL, 0 } };
	struct tsr_raft_msg m;

	memset(&c, 0, sizeof(c));
	c.id = 1;
	c.peers = peers;
	c.npeers = 3;
	ck_assert_int_eq(tsr_raft_create(&c, &r), 0);
	/* not for us, from a stranger, unknown type, gaps in entries */
	m = (struct tsr_raft_msg){ .type = TSR_RAFT_APPEND, .from = 2, .to = 9, .term = 1 };
	ck_assert_int_eq(tsr_raft_step(r, &m, NULL, 0), -EINVAL);
	m.to = 1;
	m.from = 7;
	ck_assert_int_eq(tsr_raft_step(r, &m, NULL, 0), -EINVAL);
	m.from = 2;
	m.type = 99;
	ck_assert_int_eq(tsr_raft_step(r, &m, NULL, 0), -EINVAL);
	m.type = TSR_RAFT_APPEND;
	m.entries = e;
	m.nentries = 2;
	ck_assert_int_eq(tsr_raft_step(r, &m, NULL, 0), -EINVAL);
	/* proposals refused by a follower */
	ck_assert_int_eq(tsr_raft_propose(r, "x", 1, NULL), -EAGAIN);
	tsr_raft_destroy(r);
	/* a stored log with a gap, or newer than the stored term */
	c.log = e;
	c.nlog = 2;
	c.hs.term = 1;
	ck_assert_int_eq(tsr_raft_create(&c, &r), -EINVAL);
	e[1].index = 2;
	e[1].term = 5;
	ck_assert_int_eq(tsr_raft_create(&c, &r), -EINVAL);
	c.id = 4; /* not a member */
	c.nlog = 0;
	ck_assert_int_eq(tsr_raft_create(&c, &r), -EINVAL);
}
END_TEST

/* The durable side: save what ready batches list, load it back; a
 * truncated tail goes; damage and gaps are errors naming the entry. */
static char store_root[] = "/tmp/tsr-test-raftstore-XXXXXX";

START_TEST(store)
{
	char dir[sizeof(store_root) + 8], err[512];
	struct tsr_raftstore st;
	struct tsr_raft_hardstate hs;
	struct tsr_raft_entry ents[5], *log;
	struct tsr_raft_ready rd;
	size_t n;

	/* inside main's scratch directory: main removes it, also after a
	 * failure here */
	snprintf(dir, sizeof(dir), "%s/store", store_root);
	memset(&st, 0, sizeof(st));
	snprintf(st.path, sizeof(st.path), "%s", dir);
	ck_assert_int_eq(tsr_kv_open(dir, 1, &st.kv, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_raftstore_load(&st, &hs, &log, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(hs.term, 0);
	for (int i = 0; i < 5; i++)
		ents[i] = (struct tsr_raft_entry){ (uint64_t)(i < 3 ? 1 : 2),
						   (uint64_t)i + 1, (uint8_t *)"abcde" + i,
						   (size_t)(5 - i) };
	memset(&rd, 0, sizeof(rd));
	rd.hs = (struct tsr_raft_hardstate){ .term = 2, .vote = 3, .commit = 4,
					     .rejoin = 1 };
	rd.hs_changed = 1;
	rd.entries = ents;
	rd.nentries = 5;
	rd.last_index = 5;
	ck_assert_int_eq(tsr_raftstore_save(&st, &rd, err, sizeof(err)), 0);
	tsr_kv_close(st.kv);
	ck_assert_int_eq(tsr_kv_open(dir, 0, &st.kv, err, sizeof(err)), 0);
	ck_assert_msg(tsr_raftstore_load(&st, &hs, &log, &n, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(n, 5);
	ck_assert(hs.term == 2 && hs.vote == 3 && hs.commit == 4 && hs.rejoin == 1);
	/* a hard state written before the rejoin flag: not rejoining */
	{
		struct tsr_kv_batch *b = tsr_kv_batch_create();
		struct tsr_enc e;
		size_t mk;
		struct tsr_raft_entry *l2;
		size_t n2;

		tsr_enc_init(&e);
		mk = tsr_enc_begin_struct(&e, 1, 1);
		tsr_enc_u64(&e, 2);
		tsr_enc_u64(&e, 3);
		tsr_enc_u64(&e, 4);
		tsr_enc_end_struct(&e, mk);
		ck_assert_int_eq(tsr_enc_error(&e), 0);
		tsr_kv_batch_put(b, "raft/hs", 7, e.buf, e.len);
		ck_assert_int_eq(tsr_kv_write(st.kv, b, 1, err, sizeof(err)), 0);
		tsr_enc_release(&e);
		tsr_kv_batch_destroy(b);
		ck_assert_int_eq(tsr_raftstore_load(&st, &hs, &l2, &n2, err, sizeof(err)), 0);
		ck_assert(hs.term == 2 && hs.vote == 3 && hs.commit == 4 && hs.rejoin == 0);
		tsr_raftstore_free_log(l2, n2);
	}
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(log[i].index, (uint64_t)i + 1);
		ck_assert_int_eq(log[i].len, (size_t)(5 - i));
		ck_assert_int_eq(memcmp(log[i].data, "abcde" + i, log[i].len), 0);
	}
	tsr_raftstore_free_log(log, n);
	/* a new leader overwrote from index 3: entries 3, 4 stay, 5 goes */
	ents[2].term = ents[3].term = 2;
	rd.hs_changed = 0;
	rd.entries = &ents[2];
	rd.nentries = 2;
	rd.last_index = 4;
	ck_assert_int_eq(tsr_raftstore_save(&st, &rd, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_raftstore_load(&st, &hs, &log, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(log[2].term, 2);
	tsr_raftstore_free_log(log, n);
	/* a snapshot up to 2: the log keeps 3 and 4 */
	ck_assert_int_eq(tsr_raftstore_compact(&st, 2, 1, "SNAP", 4, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_raftstore_load(&st, &hs, &log, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(st.snap_index, 2);
	ck_assert_int_eq(st.snap_term, 1);
	ck_assert_int_eq(st.snap_len, 4);
	ck_assert_int_eq(memcmp(st.snap, "SNAP", 4), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(log[0].index, 3);
	tsr_raftstore_free_log(log, n);
	/* a snapshot from a leader at 6 whose log disagrees: all goes */
	memset(&rd, 0, sizeof(rd));
	rd.snapshot = (const uint8_t *)"LEADER";
	rd.snapshot_len = 6;
	rd.snapshot_index = 6;
	rd.snapshot_term = 2;
	rd.last_index = 6;
	ck_assert_int_eq(tsr_raftstore_save(&st, &rd, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_raftstore_load(&st, &hs, &log, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(st.snap_index, 6);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(memcmp(st.snap, "LEADER", 6), 0);
	/* and entries after it */
	ents[0] = (struct tsr_raft_entry){ 2, 7, (uint8_t *)"x", 1 };
	memset(&rd, 0, sizeof(rd));
	rd.entries = ents;
	rd.nentries = 1;
	rd.last_index = 7;
	ck_assert_int_eq(tsr_raftstore_save(&st, &rd, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_raftstore_load(&st, &hs, &log, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(log[0].index, 7);
	tsr_raftstore_free_log(log, n);
	/* a damaged snapshot is named */
	{
		struct tsr_kv_batch *b = tsr_kv_batch_create();
		tsr_kv_batch_put(b, "raft/snap", 9, "junk", 4);
		ck_assert_int_eq(tsr_kv_write(st.kv, b, 1, err, sizeof(err)), 0);
		ck_assert_int_eq(tsr_raftstore_load(&st, &hs, &log, &n, err, sizeof(err)), -EIO);
		ck_assert_contains(err, "the raft snapshot is damaged");
		tsr_kv_batch_clear(b);
		tsr_kv_batch_del(b, "raft/snap", 9);
		tsr_kv_batch_del(b, "raft/log/\0\0\0\0\0\0\0\7", 17);
		ck_assert_int_eq(tsr_kv_write(st.kv, b, 1, err, sizeof(err)), 0);
		tsr_kv_batch_destroy(b);
	}
	/* back to a plain log for the damage cases below */
	memset(&rd, 0, sizeof(rd));
	rd.hs = (struct tsr_raft_hardstate){ .term = 2, .vote = 3 };
	rd.hs_changed = 1;
	for (int i = 0; i < 4; i++)
		ents[i] = (struct tsr_raft_entry){ 1, (uint64_t)i + 1, (uint8_t *)"e", 1 };
	rd.entries = ents;
	rd.nentries = 4;
	rd.last_index = 4;
	ck_assert_int_eq(tsr_raftstore_save(&st, &rd, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_raftstore_load(&st, &hs, &log, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, 4);
	tsr_raftstore_free_log(log, n);
	/* damage: an entry that does not decode, then a gap */
	{
		struct tsr_kv_batch *b = tsr_kv_batch_create();
		uint8_t k[17] = "raft/log/";
		memset(k + 9, 0, 8);
		k[16] = 2;
		tsr_kv_batch_put(b, k, 17, "junk", 4);
		ck_assert_int_eq(tsr_kv_write(st.kv, b, 1, err, sizeof(err)), 0);
		ck_assert_int_eq(tsr_raftstore_load(&st, &hs, &log, &n, err, sizeof(err)), -EIO);
		ck_assert_contains(err, "raft log entry 2 is damaged");
		ck_assert_contains(err, dir);
		tsr_kv_batch_clear(b);
		tsr_kv_batch_del(b, k, 17);
		ck_assert_int_eq(tsr_kv_write(st.kv, b, 1, err, sizeof(err)), 0);
		ck_assert_int_eq(tsr_raftstore_load(&st, &hs, &log, &n, err, sizeof(err)), -EIO);
		ck_assert_contains(err, "raft log entry 2 missing");
		tsr_kv_batch_destroy(b);
	}
	tsr_raftstore_close(&st);
	tsr_kv_close(st.kv);
	ck_assert_int_eq(tu_rm_rf(dir), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("raft");
	TCase *tc = tcase_create("sim");
	SRunner *sr;
	int failed;

	/* RAFT_SEED=N explores another schedule (the default is fixed, so a
	 * failure in CI repeats) */
	if (getenv("RAFT_SEED"))
		rng = strtoull(getenv("RAFT_SEED"), NULL, 0) | 1;
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, elect_and_replicate);
	tcase_add_test(tc, leader_crash);
	tcase_add_test(tc, minority_cannot_commit);
	tcase_add_test(tc, prevote_keeps_leader);
	tcase_add_test(tc, restart_keeps_lease);
	tcase_add_test(tc, restart_catches_up);
	tcase_add_test(tc, snapshot_catch_up);
	tcase_add_test(tc, append_bytes_bounded);
	tcase_add_test(tc, nemesis);
	tcase_add_test(tc, bad_input);
	tcase_add_test(tc, forged_append_huge_term_refused);
	tcase_add_test(tc, forged_append_far_term_refused);
	tcase_add_test(tc, term_overflow);
	tcase_add_test(tc, forged_index_refused);
	tcase_add_test(tc, forged_append_other_leader_refused);
	tcase_add_test(tc, empty_store_follower_catches_up);
	tcase_add_test(tc, empty_store_follower_catches_up_by_snapshot);
	tcase_add_test(tc, empty_store_follower_votes_only_when_caught_up);
	tcase_add_test(tc, store);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	if (mkdtemp(store_root) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	srunner_run_all(sr, CK_NORMAL);
	tu_rm_rf(store_root);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
