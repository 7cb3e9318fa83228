/* mds.c — tessera-mds, the metadata server (mds.h): its runtime.
 *
 *     tessera-mds --conf FILE --id NAME      (sections mds, mds-NAME)
 *
 * It beacons to the monitors as mds.NAME and stands by until the MDS map
 * gives it a rank; then it takes over the rank's journal (fencing whoever
 * held it before), replays it, says so, and serves the rank once the map
 * says `active`.  Clients open a session and send requests (mdsmsg.h);
 * the MDS reaches the metadata pool through the object client library as
 * mds.NAME.
 *
 * The lease.  The leader fails an MDS whose beacons stop for
 * mon_mds_beacon_grace, counted from the last beacon it heard, which came
 * after we sent it.  So the leader cannot fail us before (send time of
 * our latest answered beacon) + grace, and a successor cannot replay
 * before the map that fails us.  We answer requests only until (that send
 * time) + grace / 2: a paused or cut-off MDS stops answering at least
 * grace / 2 before a successor can start, which covers clock rates that
 * differ by far more than real clocks do.  Writes are fenced in the
 * journal besides (journal.c), so a lease outrun can cost a stale read,
 * never a lost or split write.
 *
 * Admin commands beyond the shared ones: `role` (as tsr-testmds), `mds
 * status` — rank, state, journal and cache figures as JSON.
 */
#include "mds.h"

#include "beacon/mdsbeacon.h"
#include "config/config.h"
#include "daemon/asok.h"
#include "daemon/daemon.h"
#include "event/loop.h"
#include "event/workq.h"
#include "log/log.h"
#include "auth/auth.h"
#include "mon/mapsub.h"
#include "mon/monmsg.h"
#include "mon/monc.h"
#include "msg/msgr.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <tessera/client.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TICK_MS 100u

int
mds_post(struct mds *m, void (*fn)(void *arg), void *arg)
{
	int rc;

	pthread_mutex_lock(&m->post_lock);
	rc = m->wq ? tsr_workq_post(m->wq, fn, arg) : -ESHUTDOWN;
	pthread_mutex_unlock(&m->post_lock);
	return rc;
}

/* Run fn on the calling thread when the MDS thread is idle, else post
 * it: a messenger I/O thread handing over a request runs it itself, and
 * the request costs no wake-up of the MDS thread (workq.h, "Running in
 * place").  Only from the MDS's own messenger: what runs may wait for the
 * object client's answers, which come on that client's threads. */
static int
mds_run(struct mds *m, void (*fn)(void *arg), void *arg)
{
	struct tsr_workq *wq;
	int rc;

	pthread_mutex_lock(&m->post_lock);
	wq = m->wq;
	if (wq == NULL || !tsr_workq_enter(wq)) {
		rc = wq ? tsr_workq_post(wq, fn, arg) : -ESHUTDOWN;
		pthread_mutex_unlock(&m->post_lock);
		return rc;
	}
	/* (entered: destroy waits for the leave) */
	pthread_mutex_unlock(&m->post_lock);
	fn(arg);
	tsr_workq_leave(wq);
	return 0;
}

int
mds_lease_ok(struct mds *m)
{
	uint64_t until;

	pthread_mutex_lock(&m->lease_lock);
	until = m->lease_until_ns;
	pthread_mutex_unlock(&m->lease_lock);
	return tsr_mono_ns() < until;
}

/* ---- Replies ---- */

/* Is an ordered message to conn waiting? */
static int
conn_waiting(const struct mds *m, const struct tsr_conn *conn)
{
	for (const struct pending_reply *p = m->replies; p; p = p->next)
		if (p->conn == conn && p->ordered)
			return 1;
	return 0;
}

static void
queue_after(struct mds *m, struct tsr_conn *conn, struct tsr_msg *msg, uint64_t seq,
	    int ordered)
{
	struct pending_reply *p;

	if (m->stopping) {
		tsr_msg_free(msg, -ESHUTDOWN);
		return;
	}
	if (seq <= m->committed && (!ordered || !conn_waiting(m, conn))) {
		tsr_conn_send(conn, msg, TSR_SEND_NOWAIT);
		return;
	}
	p = tsr_xcalloc(1, sizeof(*p));
	p->seq = seq;
	p->ordered = ordered;
	p->conn = conn;
	p->msg = msg;
	tsr_conn_get(conn);
	if (m->replies == NULL)
		m->replies_tail = &m->replies;
	*m->replies_tail = p;
	m->replies_tail = &p->next;
}

void
mds_reply_after(struct mds *m, struct tsr_conn *conn, struct tsr_msg *msg, uint64_t seq)
{
	queue_after(m, conn, msg, seq, 1);
}

void
mds_safe_after(struct mds *m, struct tsr_conn *conn, struct tsr_msg *msg, uint64_t seq)
{
	queue_after(m, conn, msg, seq, 0);
}

#define BLOCKED_MAX 64

void
mds_replies_release(struct mds *m)
{
	/* in the order queued.  One waiting for a later event holds back
	 * the ordered messages to its connection queued after it (a grant
	 * must not pass a revoke queued before it, nor a revoke its grant);
	 * a SAFE holds back nothing */
	const struct tsr_conn *blocked[BLOCKED_MAX];
	size_t nblocked = 0;
	int all_blocked = 0;
	/* what goes to one connection goes in one write (an append answers
	 * several requests: their SAFEs leave together) */
	struct tsr_conn *sent[BLOCKED_MAX];
	size_t nsent = 0;

	m->replies_tail = &m->replies;
	for (struct pending_reply **pp = &m->replies; *pp;) {
		struct pending_reply *p = *pp;
		int known = 0;
		for (size_t i = 0; p->ordered && i < nblocked; i++)
			known |= blocked[i] == p->conn;
		if (p->seq > m->committed || (p->ordered && (known || all_blocked))) {
			if (p->ordered && !known) {
				if (nblocked < BLOCKED_MAX)
					blocked[nblocked++] = p->conn;
				else
					all_blocked = 1; /* (at the next release) */
			}
			m->replies_tail = &p->next;
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		size_t i = 0;
		while (i < nsent && sent[i] != p->conn)
			i++;
		int kept = i == nsent && nsent < BLOCKED_MAX;
		if (kept)
			sent[nsent++] = p->conn; /* (its reference, until flushed) */
		/* (past BLOCKED_MAX connections: written at once) */
		tsr_conn_send(p->conn, p->msg,
			      TSR_SEND_NOWAIT | (i < nsent ? TSR_SEND_MORE : 0));
		if (!kept)
			tsr_conn_put(p->conn);
		free(p);
	}
	for (size_t i = 0; i < nsent; i++) {
		tsr_conn_flush(sent[i]);
		tsr_conn_put(sent[i]);
	}
	mds_purges_run(m, 0);
}

static void
replies_drop(struct mds *m)
{
	while (m->replies) {
		struct pending_reply *p = m->replies;
		m->replies = p->next;
		tsr_msg_free(p->msg, -ESHUTDOWN);
		tsr_conn_put(p->conn);
		free(p);
	}
	m->replies_tail = &m->replies;
}

void
mds_lost_rank(struct mds *m, const char *why)
{
	if (m->stopping)
		return;
	tsr_log(TSR_SUB_MDS, TSR_LOG_ERROR, "mds.%s: rank %d lost: %s; no more answers "
		"from this process, which ends (restart it to stand by)", m->name, m->rank,
		why);
	m->active = 0;
	m->stopping = 1;
	/* replies waiting for the journal never go: their events may not be
	 * in it (a successor's replay decides) */
	replies_drop(m);
	_exit(3);
}

/* ---- Messages (on the messenger's threads, then the MDS thread) ---- */

struct inmsg {
	struct mds *m;
	struct tsr_conn *conn;
	struct tsr_msg *msg;
};

static void
send_error(struct tsr_conn *conn, uint64_t tid, int rc, const char *why)
{
	struct tsr_mds_reply rep = { .tid = tid, .result = rc };
	struct tsr_enc e;
	struct tsr_msg *msg;

	tsr_strlcpy(rep.why, why, sizeof(rep.why));
	tsr_enc_init(&e);
	if (tsr_mdsmsg_reply_encode(&e, &rep) == 0 &&
	    (msg = tsr_msg_from_enc(TSR_MSG_MDS_REPLY, &e)) != NULL)
		tsr_conn_send(conn, msg, TSR_SEND_NOWAIT);
	else
		tsr_enc_release(&e);
}

static struct tsr_log_rate bad_lines = TSR_LOG_RATE_INIT(10, 10000);

static void
on_request_mds(void *arg)
{
	struct inmsg *im = arg;
	struct mds *m = im->m;
	struct tsr_mds_request r;
	char err[256];

	if (tsr_mdsmsg_request_decode(im->msg->front, im->msg->front_len, &r, err,
				      sizeof(err)) < 0) {
		tsr_log_rated(&bad_lines, TSR_SUB_MDS, TSR_LOG_WARN, "%s: a bad request: %s",
			      tsr_conn_peer(im->conn), err);
		send_error(im->conn, r.tid, -EINVAL, err);
	} else {
		mds_handle_request(m, im->conn, &r);
	}
	tsr_msg_free(im->msg, 0);
	tsr_conn_put(im->conn);
	free(im);
}

static void
on_session_mds(void *arg)
{
	struct inmsg *im = arg;
	struct mds *m = im->m;
	struct tsr_mds_session s;
	struct tsr_mds_reply rep = { 0 };
	struct tsr_enc e;
	struct tsr_msg *msg;
	char err[256];

	if (tsr_mdsmsg_session_decode(im->msg->front, im->msg->front_len, &s, err,
				      sizeof(err)) < 0) {
		tsr_log_rated(&bad_lines, TSR_SUB_MDS, TSR_LOG_WARN, "%s: a bad session "
			      "message: %s", tsr_conn_peer(im->conn), err);
		send_error(im->conn, s.tid, -EINVAL, err);
		goto out;
	}
	rep.tid = s.tid;
	if (mds_refused(m, tsr_conn_peer_id(im->conn))) {
		rep.result = -EKEYREVOKED;
		snprintf(rep.why, sizeof(rep.why), "this client was evicted: mount again");
	} else if ((!m->active || !mds_lease_ok(m)) &&
		   !(s.op == TSR_MDS_SESSION_OPEN && m->rank >= 0 && !m->replaying)) {
		/* (a session opens as soon as replay is over: clients
		 * reconnect then, and revokes need it) */
		rep.result = -EAGAIN;
		snprintf(rep.why, sizeof(rep.why), "mds.%s does not serve a rank now",
			 m->name);
	} else if (s.op == TSR_MDS_SESSION_CLOSE) {
		/* its locks and capabilities go with it (the peer's id: what
		 * requests carry) */
		mds_locks_drop(m, tsr_conn_peer_id(im->conn));
		mds_caps_drop_client(m, tsr_conn_peer_id(im->conn));
		for (size_t i = 0; i < m->nsess; i++)
			if (m->sess[i].client == s.client) {
				tsr_conn_put(m->sess[i].conn);
				m->sess[i] = m->sess[--m->nsess];
				m->sessions_dirty = 1;
				break;
			}
	} else {
		size_t i;
		for (i = 0; i < m->nsess; i++)
			if (m->sess[i].client == s.client)
				break;
		if (i == m->nsess) {
			m->sess = realloc(m->sess, (m->nsess + 1) * sizeof(*m->sess));
			if (m->sess == NULL)
				abort();
			m->sess[i].client = s.client;
			m->sess[i].listed_gen = 0;
			m->sess[i].conn = im->conn;
			tsr_conn_get(im->conn);
			m->nsess++;
			m->sessions_dirty = 1;
			tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "session of %s (%" PRIx64 ") opened",
				tsr_conn_peer(im->conn), s.client);
		}
		m->sess[i].last_seen_ns = tsr_mono_ns();
	}
	tsr_enc_init(&e);
	if (tsr_mdsmsg_reply_encode(&e, &rep) == 0 &&
	    (msg = tsr_msg_from_enc(TSR_MSG_MDS_REPLY, &e)) != NULL)
		mds_reply_after(m, im->conn, msg, m->applied);
	else
		tsr_enc_release(&e);
out:
	tsr_msg_free(im->msg, 0);
	tsr_conn_put(im->conn);
	free(im);
}

static void
on_msg(struct tsr_conn *c, struct tsr_msg *msg, void *arg)
{
	struct mds *m = arg;
	struct inmsg *im = tsr_xcalloc(1, sizeof(*im));

	im->m = m;
	im->conn = c;
	im->msg = msg;
	tsr_conn_get(c);
	if (mds_run(m, msg->type == TSR_MSG_MDS_REQUEST ? on_request_mds : on_session_mds,
		    im) < 0) {
		tsr_msg_free(msg, 0);
		tsr_conn_put(c);
		free(im);
	}
}

/* ---- The rank ---- */

struct takeover {
	struct mds *m;
	int32_t rank;
	uint64_t fence;
};

static void
told_active(void *arg)
{
	struct mds *m = arg;

	tsr_mds_beacon_active(m->beacon);
}

static int
pools(struct mds *m, char *err, size_t errlen)
{
	if (tsr_client_pool(m->oc, m->meta_pool_name, &m->meta_pool) < 0)
		return tsr_errf(err, errlen, -ENOENT, "no metadata pool \"%s\" (mds_metadata_"
				"pool): make it with `tessera pool create %s`",
				m->meta_pool_name, m->meta_pool_name);
	if (tsr_client_pool(m->oc, m->data_pool_name, &m->data_pool) < 0)
		return tsr_errf(err, errlen, -ENOENT, "no data pool \"%s\" (mds_data_pool): "
				"make it with `tessera pool create %s`", m->data_pool_name,
				m->data_pool_name);
	return 0;
}

static void
take_rank(void *arg)
{
	struct takeover *t = arg;
	struct mds *m = t->m;
	char err[512];
	int rc;

	if (m->rank >= 0 || m->stopping) {
		free(t);
		return;
	}
	m->rank = t->rank;
	m->fence = t->fence;
	m->replaying = 1;
	tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "mds.%s: taking rank %d (fence %" PRIu64 ")",
		m->name, m->rank, m->fence);
	for (int tries = 0;; tries++) {
		if ((rc = pools(m, err, sizeof(err))) == 0 &&
		    (rc = mds_journal_open(m, err, sizeof(err))) == 0)
			break;
		if (m->closing)
			break;
		/* a later holder, or a journal that will not replay however
		 * often it is read: give the rank up (-EUCLEAN: damaged; the
		 * journal is left as it is, for an operator) */
		if (rc == -ESTALE || rc == -EUCLEAN || tries == 600)
			mds_lost_rank(m, err);
		tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "mds.%s: rank %d: %s; again in a second",
			m->name, m->rank, err);
		mds_cache_free(m);
		mds_done_free(m);
		sleep(1);
	}
	if (rc < 0) {
		free(t);
		return; /* stopping */
	}
	mds_replay_done(m);
	/* the clients the last holder served, which come back to us */
	if ((rc = mds_sessions_read(m)) < 0)
		tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "mds.%s: rank %d: reading its sessions: %s "
			"(no client waited for)", m->name, m->rank, strerror(-rc));
	m->replaying = 0;
	tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "mds.%s: rank %d replayed (%" PRIu64 " events "
		"in the journal): telling the monitors", m->name, m->rank, m->applied);
	tsr_loop_post(m->loop, told_active, m);
	free(t);
}

static void
set_active(void *arg)
{
	struct mds *m = arg;

	if (m->rank >= 0 && !m->replaying && !m->active) {
		m->active = 1;
		mds_reconnect_begin(m);
		tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "mds.%s: rank %d active", m->name, m->rank);
	}
}

static void
lost_on_mds(void *arg)
{
	struct mds *m = arg;

	if (m->rank >= 0)
		mds_lost_rank(m, "the MDS map dropped this incarnation");
}

/* The map changed what we are (on the loop). */
static void
on_role(void *arg, const struct tsr_mds_role *r)
{
	struct mds *m = arg;

	tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "incarnation %" PRIu64 ": rank %d, %s (MDS map "
		"epoch %" PRIu64 ")", r->gid, r->rank,
		r->rank < 0 ? "standby" : tsr_mds_state_name(r->state), r->epoch);
	if (r->rank < 0) {
		mds_post(m, lost_on_mds, m);
	} else if (r->state == TSR_MDS_REPLAY) {
		struct takeover *t = tsr_xcalloc(1, sizeof(*t));
		t->m = m;
		t->rank = r->rank;
		t->fence = r->epoch;
		if (mds_post(m, take_rank, t) < 0)
			free(t);
	} else if (r->state == TSR_MDS_ACTIVE) {
		mds_post(m, set_active, m);
	}
}

/* ---- The tick (on the loop): the lease, write-back ---- */

/* Sessions silent for mds_session_timeout (no renewal, no request) end,
 * and the locks of their clients go: a client that died holds nothing. */
static void
expire_sessions(struct mds *m)
{
	uint64_t now = tsr_mono_ns();

	for (size_t i = 0; i < m->nsess;) {
		struct mds_session *s = &m->sess[i];
		if (now - s->last_seen_ns < m->session_timeout_ns) {
			i++;
			continue;
		}
		uint64_t id = tsr_conn_peer_id(s->conn);
		char why[96];
		if (mds_caps_client_holds(m, id)) {
			/* what it holds goes to others only once the OSDs
			 * refuse it: eviction ends the session */
			snprintf(why, sizeof(why), "its session silent for %" PRIu64 " s",
				 m->session_timeout_ns / 1000000000u);
			mds_evict(m, id, why);
			i++;
			continue;
		}
		tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "session of %s (%" PRIx64 ") silent for %"
			PRIu64 " s: closed, its locks released", tsr_conn_peer(s->conn),
			s->client, m->session_timeout_ns / 1000000000u);
		mds_locks_drop(m, id);
		mds_caps_drop_client(m, id); /* (names it cached) */
		tsr_conn_put(s->conn);
		*s = m->sess[--m->nsess];
		m->sessions_dirty = 1;
	}
}

struct tsr_conn *
mds_session_conn(struct mds *m, uint64_t client)
{
	for (size_t i = 0; i < m->nsess; i++)
		if (tsr_conn_peer_id(m->sess[i].conn) == client)
			return m->sess[i].conn;
	return NULL;
}

void
mds_session_end(struct mds *m, uint64_t client)
{
	for (size_t i = 0; i < m->nsess; i++)
		if (tsr_conn_peer_id(m->sess[i].conn) == client) {
			tsr_conn_close(m->sess[i].conn);
			tsr_conn_put(m->sess[i].conn);
			m->sess[i] = m->sess[--m->nsess];
			m->sessions_dirty = 1;
			return;
		}
}

void
mds_session_touch(struct mds *m, struct tsr_conn *conn)
{
	uint64_t id = tsr_conn_peer_id(conn);

	for (size_t i = 0; i < m->nsess; i++)
		if (tsr_conn_peer_id(m->sess[i].conn) == id) {
			m->sess[i].last_seen_ns = tsr_mono_ns();
			return;
		}
}

static void
writeback_mds(void *arg)
{
	struct mds *m = arg;

	if (m->rank >= 0 && !m->replaying && !m->stopping) {
		/* (not once the lease is gone: a successor may serve these
		 * clients, and owns mds<R>.sessions) */
		if (m->active && mds_lease_ok(m)) {
			expire_sessions(m);
			mds_caps_tick(m);
			mds_reconnecting(m); /* (ends the window when it is over) */
			mds_reconnect_tick(m);
			mds_sessions_write(m);
			/* (what a bounded wake left parked) */
			if (m->parked)
				mds_parked_wake(m);
		}
		mds_writeback(m);
		mds_journal_trim(m);
		mds_cache_trim(m);
		if (m->purges && m->active)
			mds_purges_run(m, 0); /* (once clients are quiet) */
	}
}

static void
tick(void *arg)
{
	struct mds *m = arg;
	struct tsr_mds_role r;
	static uint64_t last_wb;
	uint64_t now = tsr_mono_ns();

	m->wb_timer = 0;
	tsr_mds_beacon_role(m->beacon, &r);
	pthread_mutex_lock(&m->lease_lock);
	m->lease_until_ns = r.acked_sent_ns ? r.acked_sent_ns + m->grace_ns / 2 : 0;
	pthread_mutex_unlock(&m->lease_lock);
	if (now - last_wb >= (uint64_t)m->writeback_ms * 1000000u) {
		last_wb = now;
		mds_post(m, writeback_mds, m);
	}
	if (mds_lease_ok(m))
		mds_evictions_send(m);
	tsr_loop_timer_add(m->loop, (uint64_t)TICK_MS * 1000000u, tick, m, &m->wb_timer);
}

/* ---- Service keys (on the loop) ----
 *
 * Clients prove themselves to an MDS with keys of the MDSs' domain
 * (auth/auth.h), which the monitors seal for this MDS: asked for at start
 * (until then clients are refused, saying so) and again now and then, so
 * that a rotated cluster secret reaches us. */

#define KEYS_RETRY_MS 1000u
#define KEYS_REFRESH_MS 600000u

static void fetch_keys(void *arg);

static void
keys_arm(struct mds *m, uint32_t ms)
{
	if (m->keys_timer)
		tsr_loop_timer_cancel(m->loop, m->keys_timer);
	m->keys_timer = 0;
	tsr_loop_timer_add(m->loop, (uint64_t)ms * 1000000u, fetch_keys, m, &m->keys_timer);
}

static int
encode_keys(struct tsr_enc *e, uint64_t client, uint64_t tid, const void *body)
{
	struct tsr_mon_svc_keys k = { client, tid, -1 };

	(void)body;
	return tsr_monmsg_svc_keys_encode(e, &k);
}

static void
keys_done(void *arg, int status, const char *text)
{
	struct mds *m = arg;
	char err[256] = "";
	int rc = -EBADMSG;

	m->keys_inflight = 0;
	if (status == 0)
		rc = tsr_auth_service_open_answer(tsr_daemon_auth(m->d), text, err,
						  sizeof(err));
	if (rc == 0) {
		if (!m->have_keys)
			tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "mds.%s: has the MDSs' service "
				"keys (%d): clients may connect", m->name,
				tsr_auth_service_count_mds(tsr_daemon_auth(m->d)));
		m->have_keys = 1;
		keys_arm(m, KEYS_REFRESH_MS);
	} else {
		tsr_log(TSR_SUB_MDS, m->have_keys ? TSR_LOG_WARN : TSR_LOG_INFO,
			"mds.%s: no service keys from the monitors yet: %s", m->name,
			status < 0 ? (text ? text : strerror(-status))
				   : err[0] ? err : "a malformed answer");
		keys_arm(m, KEYS_RETRY_MS);
	}
}

static void
fetch_keys(void *arg)
{
	struct mds *m = arg;

	m->keys_timer = 0;
	if (m->keys_inflight)
		return;
	if (tsr_monc_send_typed(m->monc, TSR_MSG_MON_SVC_KEYS, encode_keys, NULL, 10000,
				keys_done, m, &m->keys_inflight) < 0) {
		m->keys_inflight = 0;
		keys_arm(m, KEYS_RETRY_MS);
	}
}

/* ---- Admin ---- */

/* `mds status` asks the MDS thread for its figures.  The admin socket
 * runs on the daemon's loop, which the beacons need: it waits at most
 * STATUS_WAIT_MS (the MDS thread may be in a long replay) and then says
 * so; the ask is freed by whichever side is last. */
#define STATUS_WAIT_MS 2000u

struct status_ask {
	struct mds *m;
	struct tsr_sbuf text;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int done, abandoned;
};

static void
status_free(struct status_ask *a)
{
	tsr_sbuf_release(&a->text);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

static void
status_on_mds(void *arg)
{
	struct status_ask *a = arg;
	struct mds *m = a->m;
	int gone;

	tsr_sbuf_printf(&a->text, "{\"rank\": %d, \"active\": %s, \"replaying\": %s, "
			"\"lease_ok\": %s, \"fence\": %" PRIu64 ", \"applied\": %" PRIu64
			", \"committed\": %" PRIu64 ", \"journal\": {\"first_segment\": %"
			PRIu64 ", \"segment\": %" PRIu64 ", \"segment_bytes\": %" PRIu64
			", \"appends\": %" PRIu64 ", \"trimmed\": %" PRIu64 "}, "
			"\"cache\": {\"dirs\": %zu, \"inode_objects\": %zu, \"inodes\": %zu, "
			"\"loads\": %" PRIu64 ", \"writebacks\": %" PRIu64 ", \"evicted\": %"
			PRIu64 "}, "
			"\"requests\": %" PRIu64 ", \"events\": %" PRIu64 ", \"early_replies\": %"
			PRIu64 ", \"replays\": %" PRIu64 ", \"sessions\": %zu, "
			"\"caps\": {\"inodes\": %zu, \"parked\": %zu, \"evictions\": %" PRIu64
			", \"osd_barrier\": %" PRIu64 "}, "
			"\"purges\": %zu, \"next_ino\": %" PRIu64 "}\n", m->rank, m->active ? "true" : "false",
			m->replaying ? "true" : "false", mds_lease_ok(m) ? "true" : "false",
			m->fence, m->applied, m->committed, m->first_seg, m->seg, m->seg_off,
			m->n_appends, m->n_trims, m->dirs.n, m->objs.n, m->where.n, m->n_loads,
			m->n_flushes, m->n_evicted, m->n_requests, m->n_events, m->n_early,
			m->n_replays, m->nsess,
			m->caps.n, mds_parked_count(m), m->n_evictions, m->osd_barrier,
			m->npurges, m->next_ino);
	pthread_mutex_lock(&a->lock);
	a->done = 1;
	gone = a->abandoned;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->lock);
	if (gone)
		status_free(a);
}

static int
cmd_status(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct status_ask *a = tsr_xcalloc(1, sizeof(*a));
	uint64_t until = tsr_mono_ns() + (uint64_t)STATUS_WAIT_MS * 1000000u;
	int done;

	(void)argc;
	(void)argv;
	a->m = arg;
	tsr_sbuf_init(&a->text);
	pthread_mutex_init(&a->lock, NULL);
	tsr_cond_init_mono(&a->cv);
	if (mds_post(a->m, status_on_mds, a) < 0) {
		tsr_sbuf_printf(out, "{\"error\": \"stopping\"}\n");
		status_free(a);
		return 0;
	}
	pthread_mutex_lock(&a->lock);
	while (!a->done && tsr_cond_wait_until(&a->cv, &a->lock, until) == 0)
		;
	done = a->done;
	if (!done)
		a->abandoned = 1;
	pthread_mutex_unlock(&a->lock);
	if (!done) {
		tsr_sbuf_printf(out, "{\"busy\": true, \"why\": \"the MDS thread did not answer "
				"within %u ms (a replay, or a directory loading)\"}\n",
				STATUS_WAIT_MS);
		return 0;
	}
	tsr_sbuf_printf(out, "%s", tsr_sbuf_str(&a->text));
	status_free(a);
	return 0;
}

/* ---- Start and stop ---- */

static int
mds_start(struct tsr_daemon *d, char *err, size_t errlen)
{
	struct tsr_conf *conf = tsr_daemon_conf(d);
	struct mds *m = tsr_xcalloc(1, sizeof(*m));
	struct tsr_mon_members mem;
	struct tsr_msgr_opts o;
	char who[96];
	int rc;

	m->d = d;
	m->loop = tsr_daemon_loop(d);
	m->rank = -1;
	m->replies_tail = &m->replies;
	pthread_mutex_init(&m->lease_lock, NULL);
	pthread_mutex_init(&m->post_lock, NULL);
	tsr_daemon_set_priv(d, m);
	tsr_strlcpy(m->name, tsr_daemon_id(d), sizeof(m->name));
	tsr_strlcpy(m->meta_pool_name, tsr_conf_str(conf, "mds_metadata_pool"),
		    sizeof(m->meta_pool_name));
	tsr_strlcpy(m->data_pool_name, tsr_conf_str(conf, "mds_data_pool"),
		    sizeof(m->data_pool_name));
	m->segment_bytes = (uint64_t)tsr_conf_int(conf, "mds_journal_segment_size");
	m->writeback_ms = (uint32_t)tsr_conf_int(conf, "mds_writeback_interval");
	m->cache_max = (uint64_t)tsr_conf_int(conf, "mds_cache_max_entries");
	m->session_timeout_ns = (uint64_t)tsr_conf_int(conf, "mds_session_timeout") * 1000000u;
	m->revoke_timeout_ns = (uint64_t)tsr_conf_int(conf, "mds_cap_revoke_timeout") * 1000000u;
	m->reconnect_timeout_ns = (uint64_t)tsr_conf_int(conf, "mds_reconnect_timeout") *
				  1000000u;
	m->blocklist_s = (uint64_t)tsr_conf_int(conf, "mds_blocklist_duration") / 1000u;
	m->grace_ns = (uint64_t)tsr_conf_int(conf, "mon_mds_beacon_grace") * 1000000u;
	if ((rc = tsr_workq_create("mds", &m->wq)) < 0)
		return tsr_errf(err, errlen, rc, "starting the MDS thread: %s", strerror(-rc));
	snprintf(who, sizeof(who), "mds.%s", m->name);
	if ((rc = tsr_client_connect(tsr_conf_path(conf), who, 30000, &m->oc, err,
				     errlen)) < 0)
		return rc;
	if ((rc = tsr_monc_conf(conf, &mem, &o, err, errlen)) < 0)
		return rc;
	o.auth = tsr_daemon_auth(d);
	o.entity_type = TSR_ENTITY_MDS;
	o.entity_id = 0;
	o.bind = tsr_conf_str(conf, "mds_addr");
	if ((rc = tsr_msgr_create(&o, NULL, &m->msgr, err, errlen)) < 0)
		return rc;
	if ((rc = tsr_msgr_register(m->msgr, TSR_MSG_MDS_SESSION, on_msg, m,
				    TSR_MSGR_INLINE)) < 0 ||
	    (rc = tsr_msgr_register(m->msgr, TSR_MSG_MDS_REQUEST, on_msg, m,
				    TSR_MSGR_INLINE)) < 0)
		return tsr_errf(err, errlen, rc, "registering handlers: %s", strerror(-rc));
	tsr_msgr_start(m->msgr);
	/* the monitors' sessions on a messenger of their own: a request run
	 * on a client connection's I/O thread (mds_run) may wait there for
	 * an OSD, and the beacons' acks that keep our lease must not wait
	 * behind it (a lease run out stops every answer) */
	o.bind = NULL;
	if ((rc = tsr_msgr_create(&o, NULL, &m->mon_msgr, err, errlen)) < 0)
		return rc;
	tsr_msgr_start(m->mon_msgr);
	if ((rc = tsr_monc_create(m->mon_msgr, m->loop, &mem, &m->monc, err, errlen)) < 0 ||
	    (rc = tsr_mapsub_create(m->mon_msgr, m->loop, &mem, NULL, NULL, TSR_MON_SUB_MDS,
				    0, NULL, NULL, &m->sub, err, errlen)) < 0)
		return rc;
	if ((rc = tsr_mds_beacon_start(m->loop, m->monc, m->sub, m->name,
				       tsr_msgr_addr(m->msgr),
				       (uint32_t)tsr_conf_int(conf, "mds_beacon_interval"),
				       on_role, m, &m->beacon, err, errlen)) < 0)
		return rc;
	if (tsr_loop_timer_add(m->loop, (uint64_t)TICK_MS * 1000000u, tick, m,
			       &m->wb_timer) < 0)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	keys_arm(m, 0);
	if (tsr_daemon_asok(d)) {
		tsr_asok_register(tsr_daemon_asok(d), "role",
				  "this MDS's incarnation, rank and state",
				  tsr_mds_beacon_cmd_role, m->beacon);
		tsr_asok_register(tsr_daemon_asok(d), "mds status",
				  "the rank, the journal and the cache", cmd_status, m);
	}
	tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "mds.%s: listening on %s; metadata pool \"%s\", "
		"data pool \"%s\"", m->name, tsr_msgr_addr(m->msgr), m->meta_pool_name,
		m->data_pool_name);
	return 0;
}

static void
stop_on_mds(void *arg)
{
	struct mds *m = arg;

	m->stopping = 1;
	m->active = 0;
}

static void
mds_stop(struct tsr_daemon *d)
{
	struct mds *m = tsr_daemon_priv(d);
	struct tsr_workq *wq;

	if (m == NULL)
		return;
	/* The order matters.  The MDS thread first: it may wait on the
	 * object client (a takeover gives up once closing is seen), and what
	 * it runs sends on the clients' connections.  Then the object
	 * client: what completes now finds no MDS thread to post to and
	 * frees itself.  Then our connection references, then the messenger. */
	m->closing = 1;
	if (m->wb_timer)
		tsr_loop_timer_cancel(m->loop, m->wb_timer);
	if (m->keys_timer)
		tsr_loop_timer_cancel(m->loop, m->keys_timer);
	if (m->keys_inflight)
		tsr_monc_cancel(m->monc, m->keys_inflight);
	tsr_mds_beacon_stop(m->beacon);
	tsr_mapsub_destroy(m->sub);
	tsr_monc_destroy(m->monc);
	tsr_msgr_destroy(m->mon_msgr);
	if (m->wq)
		mds_post(m, stop_on_mds, m);
	pthread_mutex_lock(&m->post_lock);
	wq = m->wq;
	m->wq = NULL;
	pthread_mutex_unlock(&m->post_lock);
	if (wq)
		tsr_workq_destroy(wq);
	/* the clients that closed their sessions before us (an unmount,
	 * then the cluster stopped) are not waited for at the next start */
	mds_sessions_write_now(m);
	if (m->purges)
		mds_purges_drain(m);
	tsr_client_shutdown(m->oc);
	m->oc = NULL;
	replies_drop(m);
	mds_purges_run(m, 1);
	tsr_u64map_free(&m->purge_of);
	for (size_t i = 0; i < m->nsess; i++)
		tsr_conn_put(m->sess[i].conn);
	free(m->sess);
	mds_caps_free(m); /* (parked requests hold connections) */
	tsr_msgr_destroy(m->msgr);
	mds_cache_free(m);
	mds_journal_free(m);
	mds_done_free(m);
	mds_locks_drop(m, 0);
	free(m->expect);
	pthread_mutex_destroy(&m->lease_lock);
	pthread_mutex_destroy(&m->post_lock);
	free(m);
	tsr_daemon_set_priv(d, NULL);
}

static void
mds_status(struct tsr_daemon *d, struct tsr_sbuf *out)
{
	struct mds *m = tsr_daemon_priv(d);

	if (m == NULL)
		return;
	tsr_sbuf_printf(out, ",\n  \"rank\": %d", m->rank);
}

static const struct tsr_daemon_def mds_def = {
	.type = "mds",
	.summary = "Tessera metadata server: serves the file system's namespace.",
	.start = mds_start,
	.stop = mds_stop,
	.status = mds_status,
};

int
main(int argc, char **argv)
{
	return tsr_daemon_main(argc, argv, &mds_def);
}
