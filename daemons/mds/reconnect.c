/* reconnect.c — sessions that outlive their MDS (mds.h).
 *
 * Capabilities and locks live in the MDS's memory.  When another MDS
 * takes the rank, clients send again the changes the last holder
 * answered early and did not say were durable (replays, made again here
 * unless the journal had them), then re-assert what they held (a
 * RECONNECT request: the caps of every inode they hold, the locks they
 * took, in order), and the new holder serves nothing else until they
 * have, so no grant crosses a capability it has not heard of yet, and no
 * request meets a namespace without a change some client was told of.
 *
 * A session is answered early only once a write of mds<R>.sessions that
 * lists it has succeeded (mds_session_listed): a successor waits for
 * every client that may hold such changes.
 *
 * Which clients to wait for: the active MDS keeps the ids of its sessions
 * in the object mds<R>.sessions (written at the write-back tick when they
 * changed; a hint, not journaled).  The successor reads it before it goes
 * active, then waits until each of those clients has reconnected or
 * mds_reconnect_timeout has passed; with none listed (a new file system,
 * or no client), it serves at once.  Those that did not come back are
 * evicted (blocklisted): what they held, nobody here heard of — and the
 * MDS serves nothing until the OSD map has them all (a blocklist that
 * failed is asked for again at each tick), so none of their late writes
 * lands after a grant made here.
 *
 * Everything here runs on the MDS thread.
 */
#include "mds.h"

#include "client_int.h"
#include "log/log.h"
#include "msg/msgr.h"
#include "util/util.h"

#include <tessera/client.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SESSIONS_MAX 65536            /* ids the object holds at most */

static void
sessions_oid(const struct mds *m, char *buf, size_t len)
{
	snprintf(buf, len, "mds%d.sessions", m->rank);
}

int
mds_sessions_read(struct mds *m)
{
	char oid[32];
	struct tsr_op *op = tsr_op_create();
	uint64_t got = 0;
	uint8_t *buf = tsr_xcalloc(SESSIONS_MAX, 8);
	int rc, rrc = 0;

	sessions_oid(m, oid, sizeof(oid));
	free(m->expect);
	m->expect = NULL;
	m->nexpect = 0;
	tsr_op_read(op, 0, SESSIONS_MAX * 8, buf, &got, &rrc);
	rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
	tsr_op_destroy(op);
	if (rc == -ENOENT) {
		free(buf);
		return 0;
	}
	if (rc == 0 && rrc < 0)
		rc = rrc;
	if (rc < 0) {
		free(buf);
		return rc;
	}
	struct tsr_dec d;
	tsr_dec_init(&d, buf, (size_t)got);
	m->expect = tsr_xcalloc(got / 8 + 1, sizeof(*m->expect));
	while (tsr_dec_remaining(&d) >= 8) {
		uint64_t id = tsr_dec_u64(&d);
		size_t i;
		for (i = 0; i < m->nexpect && m->expect[i] != id; i++)
			;
		if (id != 0 && i == m->nexpect)
			m->expect[m->nexpect++] = id;
	}
	free(buf);
	return 0;
}

struct sessions_write {
	struct mds *m;
	uint64_t gen;                /* m->sessions_gen it wrote */
	struct tsr_op *op;
	struct tsr_enc e;            /* the ids: the write borrows them */
};

static void
sessions_written(void *arg, int result, const struct tsr_objver *ver)
{
	struct sessions_write *w = arg;

	(void)ver;
	if (result < 0) { /* written again at the next tick */
		atomic_store(&w->m->sessions_failed, 1);
	} else {
		/* the sessions it lists are answered early from now on */
		uint64_t had = atomic_load(&w->m->sessions_done_gen);
		while (had < w->gen &&
		       !atomic_compare_exchange_weak(&w->m->sessions_done_gen, &had, w->gen))
			;
	}
	tsr_op_destroy(w->op);
	tsr_enc_release(&w->e);
	free(w);
}

static void
sessions_encode(const struct mds *m, struct tsr_enc *e)
{
	for (size_t i = 0; i < m->nsess && i < SESSIONS_MAX; i++)
		tsr_enc_u64(e, tsr_conn_peer_id(m->sess[i].conn));
	/* (while the window is open, those still expected too: a successor
	 * must wait for them as well) */
	for (size_t i = 0; m->reconnect_until_ns && i < m->nexpect &&
			   m->nsess + i < SESSIONS_MAX; i++)
		tsr_enc_u64(e, m->expect[i]);
}

void
mds_sessions_write(struct mds *m)
{
	struct sessions_write *w;
	char oid[32];

	if (atomic_exchange(&m->sessions_failed, 0))
		m->sessions_dirty = 1;
	if (!m->sessions_dirty || m->rank < 0)
		return;
	m->sessions_dirty = 0;
	w = tsr_xcalloc(1, sizeof(*w));
	w->m = m;
	w->gen = ++m->sessions_gen;
	for (size_t i = 0; i < m->nsess; i++)
		if (m->sess[i].listed_gen == 0)
			m->sess[i].listed_gen = w->gen;
	tsr_enc_init(&w->e);
	sessions_encode(m, &w->e);
	sessions_oid(m, oid, sizeof(oid));
	w->op = tsr_op_create();
	tsr_op_write_full(w->op, w->e.buf, w->e.len);
	if (tsr_op_submit(m->oc, m->meta_pool, oid, strlen(oid), w->op, sessions_written,
			  w) < 0) {
		tsr_op_destroy(w->op);
		tsr_enc_release(&w->e);
		free(w);
		m->sessions_dirty = 1;
	}
}

int
mds_session_listed(struct mds *m, struct tsr_conn *conn)
{
	uint64_t id = tsr_conn_peer_id(conn);

	if (m->reconnect_timeout_ns == 0)
		return 0; /* (a successor would not wait for anyone) */
	for (size_t i = 0; i < m->nsess; i++)
		if (tsr_conn_peer_id(m->sess[i].conn) == id)
			return m->sess[i].listed_gen != 0 &&
			       m->sess[i].listed_gen <= atomic_load(&m->sessions_done_gen);
	return 0;
}

/* The stop-time write's deadline: an OSD going away with us must not hold
 * the stop for client_op_timeout. */
#define STOP_WRITE_MS 2000

void
mds_sessions_write_now(struct mds *m)
{
	struct tsr_op *op;
	struct tsr_enc e;
	char oid[32];
	int rc;

	if (m->rank < 0 || !mds_lease_ok(m))
		return; /* (not ours to write: a successor may hold the rank) */
	tsr_enc_init(&e);
	sessions_encode(m, &e);
	sessions_oid(m, oid, sizeof(oid));
	op = tsr_op_create();
	tsr_op_write_full(op, e.buf, e.len);
	tsr_op_timeout_(op, STOP_WRITE_MS);
	if ((rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL)) < 0)
		tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "mds.%s: writing %s at stop: %s (a "
			"successor may wait for clients gone)", m->name, oid, strerror(-rc));
	tsr_op_destroy(op);
	tsr_enc_release(&e);
}

void
mds_reconnect_begin(struct mds *m)
{
	/* grants and revokes of this incarnation number above any before
	 * (the fence: the MDS map epoch the rank was taken in) */
	if (m->cap_seq < m->fence << 32)
		m->cap_seq = m->fence << 32;
	/* clients an MDS before us evicted: the OSD map we hold has them, so
	 * no grant of ours lets another client's I/O pass it */
	if (m->oc && tsr_client_epoch(m->oc) > m->osd_barrier)
		m->osd_barrier = tsr_client_epoch(m->oc);
	if (m->nexpect == 0 || m->reconnect_timeout_ns == 0) {
		m->nexpect = 0;
		return;
	}
	m->reconnect_until_ns = tsr_mono_ns() + m->reconnect_timeout_ns;
	tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "mds.%s: rank %d: waiting up to %" PRIu64 " ms for "
		"%zu clients to reconnect", m->name, m->rank,
		m->reconnect_timeout_ns / 1000000u, m->nexpect);
}

int
mds_reconnecting(struct mds *m)
{
	if (m->reconnect_until_ns == 0)
		return 0;
	if (m->nexpect > 0 && !m->window_closed && tsr_mono_ns() < m->reconnect_until_ns)
		return 1;
	if (m->nexpect > 0 && !m->window_closed) {
		tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "mds.%s: rank %d: %zu clients did not "
			"reconnect within %" PRIu64 " ms (the first: %" PRIx64 "): evicting "
			"them before serving", m->name, m->rank, m->nexpect,
			m->reconnect_timeout_ns / 1000000u, m->expect[0]);
		m->window_closed = 1;
		m->window_retry_ns = 0;
		mds_reconnect_tick(m);
	}
	/* what they held (BUF, CACHE, locks) we never heard of: the OSDs
	 * refuse them before anyone is granted it (mds_evict asks again for
	 * one whose blocklist failed, and does nothing while one is out) */
	for (size_t i = 0; i < m->nexpect;) {
		uint64_t epoch = 0;
		if (mds_is_evicted(m, m->expect[i])) {
			m->expect[i] = m->expect[--m->nexpect];
		} else if (mds_map_blocked(m, m->expect[i], &epoch)) {
			/* (evicted before this MDS: it cannot come back, and the
			 * OSDs refuse it from that epoch) */
			if (epoch > m->osd_barrier)
				m->osd_barrier = epoch;
			m->expect[i] = m->expect[--m->nexpect];
		} else {
			i++;
		}
	}
	if (m->nexpect > 0)
		return 1;
	if (m->window_closed)
		tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "mds.%s: rank %d: those that did not "
			"reconnect are blocklisted; serving", m->name, m->rank);
	else
		tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "mds.%s: rank %d: every client "
			"reconnected; serving", m->name, m->rank);
	m->window_closed = 0;
	m->reconnect_until_ns = 0;
	m->nexpect = 0;
	/* what two clients claimed that cannot stand together is revoked */
	mds_caps_settle_all(m);
	return 0;
}

void
mds_reconnect_tick(struct mds *m)
{
	uint64_t now = tsr_mono_ns();

	if (!m->window_closed || now < m->window_retry_ns)
		return;
	m->window_retry_ns = now + 1000000000u;
	for (size_t i = 0; i < m->nexpect; i++) /* (nothing while one is out) */
		mds_evict(m, m->expect[i], "did not reconnect after the takeover");
}

int
mds_reconnect(struct mds *m, uint64_t client, const void *value, size_t len, int last,
	      char *why, size_t whylen)
{
	struct tsr_mds_reconnect r;
	int rc;

	if ((rc = tsr_mdsmsg_reconnect_decode(value, len, &r, why, whylen)) < 0)
		return rc;
	for (uint32_t i = 0; i < r.ncaps; i++)
		mds_caps_reassert(m, client, r.caps[i].ino, r.caps[i].wanted,
				  r.caps[i].issued);
	for (uint32_t i = 0; i < r.nlocks; i++)
		if (mds_lock_set(m, r.locks[i].ino, client, &r.locks[i].lk) < 0)
			tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "client %" PRIx64 " re-asserts a "
				"lock on %" PRIx64 " that another holds now: dropped",
				client, r.locks[i].ino);
	for (size_t i = 0; last && i < m->nexpect;)
		if (m->expect[i] == client)
			m->expect[i] = m->expect[--m->nexpect];
		else
			i++;
	/* (every new session sends one, the first too, mostly empty) */
	tsr_log(TSR_SUB_MDS, r.ncaps || r.nlocks ? TSR_LOG_INFO : TSR_LOG_DEBUG,
		"client %" PRIx64 " reconnected: %" PRIu32 " capabilities, %" PRIu32
		" locks", client, r.ncaps, r.nlocks);
	/* late (the window is over): what it claims beyond its due goes,
	 * once it has told everything */
	if (m->reconnect_until_ns == 0 && r.ncaps > 0)
		m->late_claims = 1;
	if (m->reconnect_until_ns == 0 && last && m->late_claims) {
		m->late_claims = 0;
		mds_caps_settle_all(m);
	}
	tsr_mdsmsg_reconnect_free(&r);
	return 0;
}
