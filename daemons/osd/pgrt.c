/* pgrt.c — the placement groups an OSD runs (osd.h): one PG machine
 * (core/osd/pgsm.c) per copy, fed every map epoch and the other copies'
 * messages, its actions carried out on the OSD's store and messenger.
 *
 * Threads.  Each PG belongs to one shard, a work queue (core/event/
 * workq.h): its events (an epoch, a message, a commit) run there one at a
 * time, in order, so a machine needs no lock, and the backend's blocking
 * calls never run on the loop.  The loop hands each new epoch to every PG
 * (osd_pgrt_map); the messenger's I/O threads hand each PG message to its
 * PG (decoding it and posting it, which never blocks), except that a
 * write's REPOP and REPOP_REPLY, like a client's write (ops.c, route),
 * run on the I/O thread itself when their shard is idle
 * (osd_pg_run_entered; sends below); the backend's commit threads post
 * commits.
 * What a PG asks of the monitors (up_thru, PG temp) waits in the runtime
 * for the loop to take (osd_pgrt_asks), which gives it to the beacon.
 *
 * Copies.  A PG gets a copy here when an epoch puts this OSD in its up or
 * acting set; the copy's machine is fed from the epoch its pool appeared
 * in this OSD's epochs (the machine needs every epoch since the PG was
 * last clean: doc/architecture.md).  Copies found in the store at start
 * are loaded and fed from their interval's first epoch, from the epochs
 * the OSD stored (mapstore.c).  A copy the machine deletes is removed from
 * the store a batch of objects at a time; an epoch that puts the PG here
 * again meanwhile makes a new copy, whose work runs after the removal on
 * the same worker (purge()).
 *
 * Messages.  A PG message goes on this OSD's own lossless session to the
 * peer (opened to it by name, so the peer's key proves who it reaches); a
 * PG message is taken only on a session the sender opened, whose key
 * names the OSD the message says it comes from.  A QUERY for a PG with no
 * copy here is answered at once: nothing held.
 *
 * Clients' operations (EXEC, REPLY, a REPOP's transaction) are ops.c's:
 * carry_out hands those actions to it.
 */
#include "pgrt.h"
#include "auth/auth.h"
#include "event/workq.h"
#include "log/log.h"
#include "mon/monmsg.h"
#include "msg/msgr.h"
#include "osd/osdmsg.h"
#include "osd/pgpush.h"
#include "osd/pgsm.h"
#include "osd/pgstore.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOGE(...) TSR_LOG_ERR(OSD, __VA_ARGS__)
#define LOGW(...) TSR_LOG_WARN(OSD, __VA_ARGS__)
#define LOGI(...) TSR_LOG_INFO(OSD, __VA_ARGS__)
#define LOGD(...) TSR_LOG_DEBUG(OSD, __VA_ARGS__)

#define DELETE_BATCH 256

static struct tsr_log_rate pg_refusals = TSR_LOG_RATE_INIT(5, 10000);

static void store_failed(struct pgi *g, const char *what, int rc);

/* ---- Status --------------------------------------------------------------------*/

/* The state bits the monitors are told (monmsg.h), and whether this copy
 * is the one that tells them (the primary's). */
static int
stat_of(struct pgi *g, struct tsr_mon_pg_stat *st)
{
	const struct tsr_pg_info *in = tsr_pgsm_info(g->sm);
	const struct tsr_pg_mapview *mv = tsr_pgsm_mapview(g->sm);
	uint32_t b = 0;

	memset(st, 0, sizeof(*st));
	switch (tsr_pgsm_state(g->sm)) {
	case TSR_PGSM_ACTIVE: {
		size_t degraded = tsr_pgsm_degraded(g->sm);
		int remapped = mv->nup != mv->nacting ||
			       memcmp(mv->up, mv->acting, mv->nup * sizeof(mv->up[0])) != 0;
		/* below min_size it takes no writes: peered, not active */
		b = mv->nacting < mv->min_size ? TSR_PG_ST_PEERED : TSR_PG_ST_ACTIVE;
		if (tsr_pgsm_is_clean(g->sm))
			b |= TSR_PG_ST_CLEAN;
		if (mv->nacting < mv->size)
			b |= TSR_PG_ST_UNDERSIZED | TSR_PG_ST_DEGRADED;
		if (degraded)
			b |= TSR_PG_ST_DEGRADED | TSR_PG_ST_RECOVERING;
		if (remapped)
			b |= TSR_PG_ST_REMAPPED;
		if (tsr_pgsm_backfill_waiting(g->sm))
			b |= TSR_PG_ST_BACKFILL_WAIT;
		else if (tsr_pgsm_backfilling(g->sm))
			b |= TSR_PG_ST_BACKFILLING;
		st->degraded = degraded;
		break;
	}
	case TSR_PGSM_GETINFO:
	case TSR_PGSM_GETLOG:
	case TSR_PGSM_WAIT_UP_THRU:
		b = TSR_PG_ST_PEERING;
		break;
	case TSR_PGSM_ACTIVATING:
		b = TSR_PG_ST_ACTIVATING;
		break;
	case TSR_PGSM_DOWN:
		b = TSR_PG_ST_DOWN;
		break;
	case TSR_PGSM_INCOMPLETE:
		b = TSR_PG_ST_INCOMPLETE;
		break;
	default:
		return 0; /* a replica, a stray: the primary tells */
	}
	if (mv->nacting == 0 || mv->acting[0] != g->rt->whoami)
		return 0;
	st->pool = g->pgid.pool;
	st->pg = g->pgid.pg;
	st->state = b;
	st->epoch = mv->epoch;
	st->les = in->les;
	st->lec = in->lec;
	st->sis = in->same_interval_since;
	st->lu_epoch = in->last_update.epoch;
	st->lu_ver = in->last_update.ver;
	st->missing = tsr_pgsm_missing(g->sm)->n;
	st->nacting = mv->nacting;
	memcpy(st->acting, mv->acting, mv->nacting * sizeof(mv->acting[0]));
	osd_scrub_stat(g, st);
	return 1;
}

static void
status_take(struct pgi *g)
{
	const struct tsr_pg_info *in = tsr_pgsm_info(g->sm);
	struct tsr_mon_pg_stat st;
	int primary = stat_of(g, &st);

	pthread_mutex_lock(&g->rt->lock);
	/* a state the monitors have not heard: reported soon (osd.c) */
	if (primary && (!g->primary || g->stat.state != st.state))
		g->rt->stats_changed = 1;
	g->primary = primary;
	g->stat = st;
	/* (an active primary below min_size takes no writes: "peered", as
	 * the monitors are told) */
	snprintf(g->state, sizeof(g->state), "%s",
		 tsr_pgsm_state(g->sm) == TSR_PGSM_ACTIVE &&
		 tsr_pgsm_mapview(g->sm)->nacting < tsr_pgsm_mapview(g->sm)->min_size
		 ? "peered" : tsr_pgsm_state_name(tsr_pgsm_state(g->sm)));
	snprintf(g->why, sizeof(g->why), "%s", tsr_pgsm_why(g->sm));
	g->clean = tsr_pgsm_is_clean(g->sm);
	g->commit_due = tsr_pgsm_commit_due(g->sm);
	g->les = in->les;
	g->sis = in->same_interval_since;
	osd_resv_sweep(g);
	g->head = in->last_update;
	g->committed = in->committed;
	g->fed = g->ep ? tsr_osdmap_epoch_number(g->ep) : 0;
	pthread_mutex_unlock(&g->rt->lock);
}

/* ---- Sending ---------------------------------------------------------------------
 *
 * Sends run on a shard's worker (which may wait for room in the
 * session's queue: the messenger's backpressure), never on the loop.  Two
 * other threads send when the session has room, and leave the message to
 * the worker otherwise:
 *   - a backend commit thread, a member's answer to a replicated write
 *     (send_answer);
 *   - an I/O thread running a shard's event in place (osd_pg_run_entered),
 *     which may not wait for a peer to read (its other sessions would
 *     wait too): a send that finds no room is kept, and so is every send
 *     of the event after it, and when the event is done they go to the
 *     worker together, to run before whatever was posted to the shard
 *     meanwhile (tsr_workq_leave_first) — so one PG's messages to a peer
 *     keep their order (a replica takes a write's REPOP only after the
 *     one before: on_repop drops one at or below its head). */

/* This thread runs a shard's event in place; the event's sends left to
 * the worker, in order (once one is, every later one is too). */
static __thread int in_place;
static __thread struct held *deferred, **deferred_tail;

/* Our session to osd.to, at the newest address any caller has seen for
 * it (held by the caller), or NULL when ep has it down.  A caller whose
 * epoch is older than the address's keeps the newer session: shards that
 * lag must not close what a newer one opened. */
static struct tsr_conn *
peer_conn(struct osd_pgrt *rt, const struct tsr_osdmap_epoch *ep, int32_t to)
{
	const struct tsr_osdmap_osd *o = tsr_osdmap_osd(tsr_osdmap_epoch_map(ep), to);
	uint64_t e = tsr_osdmap_epoch_number(ep);
	struct peer_conn *p = NULL;
	struct tsr_conn *c = NULL;
	char target[32];

	if (o == NULL || !o->up || o->addr[0] == '\0')
		return NULL;
	pthread_mutex_lock(&rt->lock);
	for (size_t i = 0; i < rt->npeers && p == NULL; i++)
		if (rt->peers[i].osd == to)
			p = &rt->peers[i];
	if (p == NULL) {
		struct peer_conn *v = realloc(rt->peers, (rt->npeers + 1) * sizeof(*v));
		if (v == NULL) {
			pthread_mutex_unlock(&rt->lock);
			return NULL;
		}
		rt->peers = v;
		p = &v[rt->npeers++];
		memset(p, 0, sizeof(*p));
		p->osd = to;
	}
	if (strcmp(p->addr, o->addr) != 0 && e > p->addr_epoch) {
		/* restarted elsewhere: a new session */
		if (p->conn) {
			tsr_conn_close(p->conn);
			tsr_conn_put(p->conn);
			p->conn = NULL;
		}
		snprintf(p->addr, sizeof(p->addr), "%s", o->addr);
		p->addr_epoch = e;
	}
	if (p->conn == NULL) {
		snprintf(target, sizeof(target), "osd.%d", to);
		if (tsr_msgr_connect_to(rt->msgr, p->addr, target, 1, &p->conn) < 0)
			p->conn = NULL;
	}
	if ((c = p->conn) != NULL)
		tsr_conn_get(c);
	pthread_mutex_unlock(&rt->lock);
	return c;
}

/* Forget our session to osd.to (it closed: the next send opens another). */
static void
peer_drop(struct osd_pgrt *rt, int32_t to, struct tsr_conn *c)
{
	pthread_mutex_lock(&rt->lock);
	for (size_t i = 0; i < rt->npeers; i++)
		if (rt->peers[i].osd == to && rt->peers[i].conn == c) {
			tsr_conn_close(c);
			tsr_conn_put(c);
			rt->peers[i].conn = NULL;
		}
	pthread_mutex_unlock(&rt->lock);
}

static int
send_once_(struct tsr_conn *c, const struct tsr_pgmsg *m, struct tsr_rbuf *pl, unsigned flags)
{
	struct tsr_msg *msg;
	struct tsr_enc e;

	tsr_enc_init(&e);
	if (tsr_pgmsg_encode(&e, m) < 0 || (msg = tsr_msg_from_enc(TSR_MSG_OSD_PG, &e)) == NULL) {
		tsr_enc_release(&e);
		return -ENOMEM;
	}
	if (pl)
		tsr_msg_set_rbuf(msg, pl);
	return tsr_conn_send(c, msg, flags);
}

static int
send_once(struct tsr_conn *c, const struct tsr_pgmsg *m, struct tsr_rbuf *pl)
{
	return send_once_(c, m, pl, 0);
}

static int hold(struct osd_pgrt *rt, const struct tsr_osdmap_epoch *ep, int32_t to,
		const struct tsr_pgmsg *m, struct tsr_rbuf *pl);

/* Send m to osd.to (its address as ep has it), with pl (a reference the
 * call takes, or NULL) as its data; paced: osd_pace let it go already. */
static void send_pg_(struct osd_pgrt *rt, const struct tsr_osdmap_epoch *ep, int32_t to,
		     const struct tsr_pgmsg *m, struct tsr_rbuf *pl, int paced);

struct deferred {
	struct osd_pgrt *rt;
	struct held *first;
};

/* Send (or, stopping, only free) the sends an in-place event left. */
static void
send_deferred(void *arg)
{
	struct deferred *d = arg;

	for (struct held *h = d->first, *n; h; h = n) {
		n = h->next;
		if (d->rt)
			send_pg_(d->rt, h->ep, h->to, &h->m, h->pl, 1);
		else
			tsr_rbuf_put(h->pl);
		tsr_osdmap_epoch_put(h->ep);
		tsr_pgmsg_free(&h->m);
		free(h);
	}
	free(d);
}

/* Leave the send of m (and pl, whose reference this takes) to the worker
 * of the shard this thread holds: osd_pg_run_entered hands it over when
 * the event is done, ahead of what was posted to the shard meanwhile. */
static void
defer_send(struct osd_pgrt *rt, const struct tsr_osdmap_epoch *ep, int32_t to,
	   const struct tsr_pgmsg *m, struct tsr_rbuf *pl)
{
	struct held *h = tsr_xcalloc(1, sizeof(*h));

	if (tsr_pgmsg_clone(m, &h->m) < 0) {
		LOGE("pg %" PRId64 ".%x: out of memory for %s to osd.%d; not sent",
		     m->pgid.pool, m->pgid.pg, tsr_pgmsg_name(m->type), to);
		tsr_rbuf_put(pl);
		free(h);
		return;
	}
	__atomic_add_fetch(&rt->sends_deferred, 1, __ATOMIC_RELAXED);
	h->to = to;
	h->pl = pl;
	h->ep = tsr_osdmap_epoch_get((struct tsr_osdmap_epoch *)ep);
	*deferred_tail = h;
	deferred_tail = &h->next;
}

static void
send_pg_(struct osd_pgrt *rt, const struct tsr_osdmap_epoch *ep, int32_t to,
	 const struct tsr_pgmsg *m, struct tsr_rbuf *pl, int paced)
{
	struct tsr_conn *c;
	int rc;

	pthread_rwlock_rdlock(&rt->send_lock);
	if (rt->stopping || to == rt->whoami) {
		pthread_rwlock_unlock(&rt->send_lock);
		tsr_rbuf_put(pl);
		return;
	}
	if (hold(rt, ep, to, m, pl) == 0) {
		pthread_rwlock_unlock(&rt->send_lock);
		return; /* not ready: it goes when the OSD is */
	}
	if (!paced && osd_pace(rt, ep, to, m, pl) == 0) {
		pthread_rwlock_unlock(&rt->send_lock);
		return; /* its turn comes (pace.c) */
	}
	if (in_place && deferred != NULL) {
		pthread_rwlock_unlock(&rt->send_lock);
		defer_send(rt, ep, to, m, pl);
		return;
	}
	if ((c = peer_conn(rt, ep, to)) == NULL) {
		pthread_rwlock_unlock(&rt->send_lock);
		tsr_rbuf_put(pl);
		return; /* down: peering asks again when it is up */
	}
	rc = send_once(c, m, pl);
	if (rc < 0 && rc != -EINVAL && rc != -ENOMEM && rc != -EAGAIN) {
		/* the session closed for good (a refusal): once more on a new one */
		peer_drop(rt, to, c);
		tsr_conn_put(c);
		c = peer_conn(rt, ep, to);
		rc = c ? send_once(c, m, pl) : -ENOTCONN;
	}
	if (rc == -EAGAIN && in_place) {
		/* no room, and this thread may not wait for it */
		if (c)
			tsr_conn_put(c);
		pthread_rwlock_unlock(&rt->send_lock);
		defer_send(rt, ep, to, m, pl);
		return;
	}
	if (rc == 0)
		__atomic_add_fetch(&rt->sent, 1, __ATOMIC_RELAXED);
	else
		tsr_log(TSR_SUB_OSD, rc == -EINVAL ? TSR_LOG_ERROR : TSR_LOG_WARN,
			"pg %" PRId64 ".%x: %s to osd.%d not sent: %s", m->pgid.pool,
			m->pgid.pg, tsr_pgmsg_name(m->type), to,
			rc == -EINVAL ? "larger than a message may be (ms_max_front, "
					"ms_max_data)" : strerror(-rc));
	if (c)
		tsr_conn_put(c);
	tsr_rbuf_put(pl);
	pthread_rwlock_unlock(&rt->send_lock);
}

static void
send_pg(struct osd_pgrt *rt, const struct tsr_osdmap_epoch *ep, int32_t to,
	const struct tsr_pgmsg *m, struct tsr_rbuf *pl)
{
	send_pg_(rt, ep, to, m, pl, 0);
}

void
osd_pg_send_now(struct osd_pgrt *rt, const struct tsr_osdmap_epoch *ep, int32_t to,
		const struct tsr_pgmsg *m, struct tsr_rbuf *pl)
{
	send_pg_(rt, ep, to, m, pl, 1);
}

void
osd_pg_send(struct pgi *g, int32_t to, const struct tsr_pgmsg *m)
{
	send_pg(g->rt, g->ep, to, m, NULL);
}

/* May m, a member's answer to a replicated write, still go: is the PG's
 * machine in the write's interval (and the copy not deleted)? */
static int
answer_current(struct pgi *g, const struct tsr_pgmsg *m)
{
	return m->interval == __atomic_load_n(&g->answer_interval, __ATOMIC_ACQUIRE);
}

/* From the backend's commit callback: a member's answer to a replicated
 * write, sent at once when that cannot wait — the OSD is ready (what it
 * held went first) and the session to the primary has room.  0 if sent;
 * otherwise the PG's thread sends it like any other (send_pg).  Going
 * straight from here spares the answer a turn through the PG's queue,
 * which on a busy OSD took longer than the rest of its way. */
static int
send_answer(struct pgi *g, const struct tsr_osdmap_epoch *ep, int32_t to,
	    const struct tsr_pgmsg *m)
{
	struct osd_pgrt *rt = g->rt;
	struct tsr_conn *c;
	int rc = -EAGAIN;

	/* a machine that has left the write's interval (or the copy) says
	 * nothing more of it, as when it hears of the commit itself */
	if (!answer_current(g, m))
		return -ESTALE;
	if (ep == NULL || to == rt->whoami || !__atomic_load_n(&rt->ready, __ATOMIC_ACQUIRE))
		return -EAGAIN;
	pthread_rwlock_rdlock(&rt->send_lock);
	if (!rt->stopping && (c = peer_conn(rt, ep, to)) != NULL) {
		rc = send_once_(c, m, NULL, TSR_SEND_NOWAIT);
		tsr_conn_put(c);
	}
	pthread_rwlock_unlock(&rt->send_lock);
	if (rc == 0)
		__atomic_add_fetch(&rt->sent, 1, __ATOMIC_RELAXED);
	return rc;
}

/* Until the OSD is ready, keep m (a copy) and pl (the reference), with
 * the epoch it was sent under: 0.  Ready: -EAGAIN (send it now). */
static int
hold(struct osd_pgrt *rt, const struct tsr_osdmap_epoch *ep, int32_t to,
     const struct tsr_pgmsg *m, struct tsr_rbuf *pl)
{
	struct held *h;

	if (__atomic_load_n(&rt->ready, __ATOMIC_ACQUIRE))
		return -EAGAIN;
	h = tsr_xcalloc(1, sizeof(*h));
	if (tsr_pgmsg_clone(m, &h->m) < 0) {
		free(h);
		return -EAGAIN; /* (no memory) sent at once, to be refused */
	}
	h->to = to;
	h->pl = pl;
	pthread_mutex_lock(&rt->lock);
	if (rt->ready) {
		pthread_mutex_unlock(&rt->lock);
		tsr_pgmsg_free(&h->m);
		free(h);
		return -EAGAIN;
	}
	h->ep = tsr_osdmap_epoch_get((struct tsr_osdmap_epoch *)ep);
	*rt->held_tail = h;
	rt->held_tail = &h->next;
	pthread_mutex_unlock(&rt->lock);
	return 0;
}

/* (a worker) Send what was held, in order, until none is left; then the
 * OSD is ready and sends go at once. */
static void
flush_held(void *arg)
{
	struct osd_pgrt *rt = arg;

	for (int rounds = 0; rounds < 1 << 20; rounds++) {
		struct held *h;
		pthread_mutex_lock(&rt->lock);
		h = rt->held;
		rt->held = NULL;
		rt->held_tail = &rt->held;
		if (h == NULL)
			__atomic_store_n(&rt->ready, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&rt->lock);
		if (h == NULL)
			return;
		while (h) {
			struct held *n = h->next;
			pthread_rwlock_rdlock(&rt->send_lock);
			struct tsr_conn *c = rt->stopping ? NULL : peer_conn(rt, h->ep, h->to);
			if (c) {
				if (send_once(c, &h->m, h->pl) == 0)
					__atomic_add_fetch(&rt->sent, 1, __ATOMIC_RELAXED);
				tsr_conn_put(c);
			}
			pthread_rwlock_unlock(&rt->send_lock);
			tsr_rbuf_put(h->pl);
			tsr_osdmap_epoch_put(h->ep);
			tsr_pgmsg_free(&h->m);
			free(h);
			h = n;
		}
	}
}

void
osd_pgrt_ready(struct osd_pgrt *rt)
{
	if (__atomic_load_n(&rt->ready, __ATOMIC_ACQUIRE))
		return;
	if (tsr_workq_post(rt->q[0], flush_held, rt) < 0)
		LOGE("osd.%d: cannot send what the PGs held", rt->whoami);
}

/* ---- Events ----------------------------------------------------------------------*/

static void answer_nothing(struct osd_pgrt *rt, const struct tsr_pgmsg *query);

static void
ev_free(struct ev *e)
{
	if (e->ep)
		tsr_osdmap_epoch_put(e->ep);
	if (e->type == EV_MSG)
		tsr_pgmsg_free(&e->m);
	if (e->op)
		osd_op_abort(e->op, -EAGAIN, 0); /* stopping: the client resends */
	if (e->raw)
		tsr_msg_free(e->raw, 0);
	if (e->paced)
		osd_pace_drop(e->g->rt, e);
	if (e->answer)
		tsr_pgmsg_free(&e->m);
	free(e);
}

/* A message that goes no further: it and its decoded form are freed. */
static void
drop_msg(struct ev *e, struct tsr_msg *msg)
{
	e->type = EV_MSG;
	e->raw = msg;
	ev_free(e);
}

void
osd_pg_post(struct pgi *g, struct ev *e)
{
	e->g = g;
	if (tsr_workq_post(g->q, osd_pg_run, e) < 0)
		ev_free(e); /* stopping */
}

void
osd_pg_run_entered(struct ev *e)
{
	struct tsr_workq *q = e->g->q;

	struct osd_pgrt *rt = e->g->rt;
	struct deferred *d;

	in_place = 1;
	deferred = NULL;
	deferred_tail = &deferred;
	osd_pg_run(e); /* (frees e; the copy lives while the shard is held) */
	in_place = 0;
	if (deferred == NULL) {
		tsr_workq_leave(q);
		return;
	}
	d = tsr_xcalloc(1, sizeof(*d));
	d->rt = rt;
	d->first = deferred;
	deferred = NULL;
	/* first on the worker: an event posted while this one ran (a write
	 * of the same PG) sends after it */
	if (tsr_workq_leave_first(q, send_deferred, d) < 0) {
		/* stopping (nothing is sent any more) */
		d->rt = NULL;
		send_deferred(d);
	}
}

/* ---- Carrying out a machine's actions -------------------------------------------*/

struct commit_arg {
	struct pgi *g;
	uint64_t token;
	uint8_t *wr_oid;             /* a client's write to it (osd_op_wr_add) */
	size_t wr_len;
	int answer;                  /* the PERSIST's answer: msg to osd `to` */
	int32_t to;
	struct tsr_pgmsg msg;
	struct tsr_osdmap_epoch *ep; /* (a reference) the epoch it was made in */
};

static void
commit_arg_free(struct commit_arg *c)
{
	if (c->answer)
		tsr_pgmsg_free(&c->msg);
	if (c->ep)
		tsr_osdmap_epoch_put(c->ep);
	free(c);
}

static void
on_commit(void *arg, int rc)
{
	struct commit_arg *c = arg;
	struct osd_pgrt *rt = c->g->rt;
	struct ev *e;

	if (c->wr_oid) {
		osd_op_wr_done(c->g, c->wr_oid, c->wr_len);
		free(c->wr_oid);
	}
	if (__atomic_load_n(&rt->closing, __ATOMIC_ACQUIRE)) {
		/* the workers are going: durable all the same */
		commit_arg_free(c);
		return;
	}
	if (c->answer && rc == 0) {
		int sent = send_answer(c->g, c->ep, c->to, &c->msg);
		if (sent == 0 || sent == -ESTALE) {
			tsr_pgmsg_free(&c->msg);
			c->answer = 0;
		}
	}
	if ((e = calloc(1, sizeof(*e))) == NULL) {
		LOGE("osd: out of memory for a commit: the PG stalls");
		commit_arg_free(c);
		return;
	}
	e->type = EV_COMMIT;
	e->token = c->token;
	e->rc = rc;
	if (c->answer && rc == 0) {
		/* the PG's thread sends it, in its epoch */
		e->answer = 1;
		e->to = c->to;
		e->m = c->msg;
		c->answer = 0;
	}
	osd_pg_post(c->g, e);
	commit_arg_free(c);
}

/* The object change of a PERSIST whose payload is the message being
 * handled: a push (the object, or its removal). */
static int
payload_ops(struct pgi *g, const struct tsr_pgsm_action *x, struct tsr_pgpush *push,
	    struct tsr_txn_op **ops, size_t *nops, const struct tsr_pgmsg *m)
{
	const struct tsr_msg *raw = g->payload;
	char err[200];
	int rc;

	*ops = NULL;
	*nops = 0;
	(void)x;
	if (m != NULL && m->type == TSR_PGMSG_REPOP)
		return osd_op_repop_ops(g, m, raw, ops, nops);
	if (m == NULL || m->type != TSR_PGMSG_PUSH)
		return -EINVAL;
	if (m->op == TSR_PGLOG_DELETE) {
		struct tsr_txn_op *v = calloc(2, sizeof(*v));
		if (v == NULL)
			return -ENOMEM;
		for (int i = 0; i < 2; i++) {
			v[i].type = i ? TSR_TXN_REMOVE : TSR_TXN_TOUCH;
			v[i].cid = g->ps.cid;
			v[i].oid = m->oid;
			v[i].oid_len = m->oid_len;
		}
		*ops = v;
		*nops = 2;
		return 0;
	}
	if (raw == NULL || raw->data_len == 0 ||
	    (rc = tsr_pgpush_decode(raw->data_iov[0].iov_base, raw->data_len, push, err,
				    sizeof(err))) < 0) {
		tsr_log_rated(&pg_refusals, TSR_SUB_OSD, TSR_LOG_WARN, "pg %" PRId64 ".%x: a "
			      "push from osd.%d whose object does not decode: %s",
			      g->pgid.pool, g->pgid.pg, m->from, raw ? err : "no data");
		return -EBADMSG;
	}
	return tsr_pgpush_ops(push, g->ps.cid, m->oid, m->oid_len, ops, nops);
}

static void
do_persist(struct pgi *g, struct tsr_pgsm_action *x, const struct tsr_pgmsg *m)
{
	struct osd_pgrt *rt = g->rt;
	struct tsr_pgstore_txn t;
	struct tsr_pgpush push;
	struct tsr_txn_op *ops = NULL;
	const struct tsr_txn_op *cops = NULL;
	size_t nops = 0;
	const void *oid = NULL;
	size_t oid_len = 0;
	const struct tsr_ev *ev = NULL;
	struct commit_arg *c;
	int rc = 0;

	memset(&push, 0, sizeof(push));
	if (x->obj == TSR_PGSM_OBJ_OP) {
		/* a client's write, built at its EXEC */
		rc = osd_op_persist(g, x, &cops, &nops, &oid, &oid_len, &ev);
	} else if (x->obj == TSR_PGSM_OBJ_PAYLOAD) {
		rc = payload_ops(g, x, &push, &ops, &nops, m);
		cops = ops;
		if (rc == 0 && m->type == TSR_PGMSG_REPOP) {
			const struct tsr_pglog_entry *en = &m->log.e[0];
			oid = en->oid;
			oid_len = en->oid_len;
			ev = en->op == TSR_PGLOG_MODIFY ? &en->ev : NULL;
		} else if (rc == 0) {
			oid = m->oid;
			oid_len = m->oid_len;
			ev = m->op != TSR_PGLOG_DELETE ? &m->ev : NULL;
		}
	}
	if (rc < 0) {
		/* never acknowledged: the machine waits, and peering starts over
		 * with the next interval */
		LOGE("pg %" PRId64 ".%x: a change it cannot make here (%s); not "
		     "persisted", g->pgid.pool, g->pgid.pg, strerror(-rc));
		tsr_pgpush_free(&push);
		return;
	}
	rc = tsr_pgstore_persist(&g->ps, x, cops, nops, ev ? oid : NULL, ev ? oid_len : 0, ev,
				 &t);
	if (rc == 0) {
		c = tsr_xcalloc(1, sizeof(*c));
		c->g = g;
		c->token = x->token;
		if (x->answer) {
			/* the message moves to the commit */
			c->answer = 1;
			c->to = x->to;
			c->msg = x->msg;
			memset(&x->msg, 0, sizeof(x->msg));
			c->ep = g->ep ? tsr_osdmap_epoch_get(g->ep) : NULL;
		}
		if (x->obj == TSR_PGSM_OBJ_OP) {
			/* later writes to it are built once it committed */
			c->wr_oid = tsr_pglog_dup(oid, oid_len);
			c->wr_len = oid_len;
			if (c->wr_oid)
				osd_op_wr_add(g, oid, oid_len);
		}
		rc = rt->st->ops->submit(rt->st->h, &t.txn, on_commit, c);
		if (rc < 0) {
			if (c->wr_oid)
				osd_op_wr_done(g, c->wr_oid, c->wr_len);
			free(c->wr_oid);
			commit_arg_free(c);
		} else {
			__atomic_add_fetch(&rt->persists, 1, __ATOMIC_RELAXED);
		}
		tsr_pgstore_txn_free(&t);
	}
	if (rc < 0)
		store_failed(g, "refused a change", rc);
	free(ops);
	tsr_pgpush_free(&push);
}

struct wait_commit {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done, rc;
};

static void
waited(void *arg, int rc)
{
	struct wait_commit *w = arg;

	pthread_mutex_lock(&w->mu);
	w->done = 1;
	w->rc = rc;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* Submit and wait (the shard's thread: a deletion's batches in turn). */
int
osd_pg_submit_wait(struct osd_pgrt *rt, const struct tsr_txn *t)
{
	struct wait_commit w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
	int rc = rt->st->ops->submit(rt->st->h, t, waited, &w);

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&w.mu);
	while (!w.done)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
	return w.rc;
}

static void
do_delete(struct pgi *g)
{
	int last = 0;

	pthread_mutex_lock(&g->rt->lock);
	g->deleting = 1;
	pthread_mutex_unlock(&g->rt->lock);
	for (int steps = 0; !last && steps < 1 << 20; steps++) {
		struct tsr_pgstore_txn t;
		int rc = tsr_pgstore_delete_step(&g->ps, DELETE_BATCH, &t, &last);
		if (rc == 0 && t.txn.nops)
			rc = osd_pg_submit_wait(g->rt, &t.txn);
		tsr_pgstore_txn_free(&t);
		if (rc < 0) {
			LOGE("pg %" PRId64 ".%x: removing the copy: %s", g->pgid.pool,
			     g->pgid.pg, strerror(-rc));
			return;
		}
	}
	pthread_mutex_lock(&g->rt->lock);
	g->gone = 1;
	osd_resv_sweep(g);
	pthread_mutex_unlock(&g->rt->lock);
	osd_scrub_drop(g);
	osd_ops_drop(g);
	LOGI("pg %" PRId64 ".%x: the copy here is no longer needed: removed",
	     g->pgid.pool, g->pgid.pg);
}

static void
ask_monitors(struct pgi *g, const struct tsr_pgsm_action *x)
{
	struct osd_pgrt *rt = g->rt;

	pthread_mutex_lock(&rt->lock);
	if (x->type == TSR_PGSM_A_UP_THRU) {
		if (x->epoch > rt->want_up_thru)
			rt->want_up_thru = x->epoch;
	} else {
		size_t i;
		for (i = 0; i < rt->ntemps; i++)
			if (rt->temps[i].pool == g->pgid.pool && rt->temps[i].pg == g->pgid.pg)
				break;
		if (i == rt->ntemps) {
			struct tsr_mon_pg_temp_req *v = realloc(rt->temps, (i + 1) * sizeof(*v));
			if (v == NULL) {
				pthread_mutex_unlock(&rt->lock);
				return; /* asked again with the next map */
			}
			rt->temps = v;
			rt->ntemps++;
		}
		memset(&rt->temps[i], 0, sizeof(rt->temps[i]));
		rt->temps[i].pool = g->pgid.pool;
		rt->temps[i].pg = g->pgid.pg;
		rt->temps[i].n = x->ntemp <= TSR_OSDMAP_MAX_SIZE ? x->ntemp : 0;
		memcpy(rt->temps[i].osds, x->temp, rt->temps[i].n * sizeof(x->temp[0]));
	}
	pthread_mutex_unlock(&rt->lock);
}

static void
do_send(struct pgi *g, struct tsr_pgsm_action *x)
{
	uint8_t *payload = NULL;
	size_t plen = 0;

	if (x->attach == TSR_PGSM_ATTACH_OP) {
		struct tsr_rbuf *pl = osd_op_repop_payload(g, x->handle);
		if (pl == NULL) {
			LOGE("pg %" PRId64 ".%x: a replicated write whose operation is not "
			     "here; not sent", g->pgid.pool, g->pgid.pg);
			return;
		}
		send_pg(g->rt, g->ep, x->to, &x->msg, pl);
		return;
	}
	if (x->attach == TSR_PGSM_ATTACH_OBJECT) {
		struct tsr_pgpush p;
		int rc = tsr_pgpush_read(&g->ps, x->msg.oid, x->msg.oid_len, &p);
		if (rc == -ENOENT) {
			x->msg.op = TSR_PGLOG_DELETE;
		} else if (rc < 0) {
			LOGE("pg %" PRId64 ".%x: reading an object to push: %s", g->pgid.pool,
			     g->pgid.pg, strerror(-rc));
			return;
		} else {
			struct tsr_enc e;
			x->msg.op = TSR_PGLOG_MODIFY;
			if (tsr_pgstore_version(&g->ps, x->msg.oid, x->msg.oid_len,
						&x->msg.ev) < 0)
				x->msg.ev = (struct tsr_ev){ 0, 0 };
			tsr_enc_init(&e);
			if (tsr_pgpush_encode(&e, &p) < 0 ||
			    (payload = tsr_enc_take(&e, &plen)) == NULL) {
				tsr_enc_release(&e);
				tsr_pgpush_free(&p);
				return;
			}
		}
		tsr_pgpush_free(&p);
	}
	send_pg(g->rt, g->ep, x->to, &x->msg, payload ? tsr_rbuf_new(payload, plen) : NULL);
}

/* Publish the interval a commit thread may answer in (see pgi). */
static void
publish_interval(struct pgi *g)
{
	uint64_t v = 0;

	if (!g->gone && !g->damaged && tsr_pgsm_state(g->sm) != TSR_PGSM_DELETED)
		v = tsr_pgsm_info(g->sm)->same_interval_since;
	__atomic_store_n(&g->answer_interval, v, __ATOMIC_RELEASE);
}

static void
carry_out(struct pgi *g, const struct tsr_pgmsg *m)
{
	/* before any message of a new interval goes out */
	publish_interval(g);
	for (int round = 0; round < 10000 && !g->gone; round++) {
		size_t n;
		struct tsr_pgsm_action *a = tsr_pgsm_actions(g->sm, &n), *acts;

		if (n == 0)
			break;
		acts = tsr_xcalloc(n, sizeof(*acts));
		memcpy(acts, a, n * sizeof(*acts));
		memset(a, 0, n * sizeof(*a));
		tsr_pgsm_actions_clear(g->sm);
		/* A replicated write's copies go to the other members first:
		 * their round trip is the longest part of the write, and the
		 * local submission can wait for a commit thread it wakes.
		 * (Nothing orders a message against this PG's own store
		 * submissions: the members commit on their own.) */
		for (size_t i = 0; i < n; i++)
			if (acts[i].type == TSR_PGSM_A_SEND &&
			    acts[i].attach == TSR_PGSM_ATTACH_OP) {
				do_send(g, &acts[i]);
				acts[i].type = 0; /* done */
			}
		for (size_t i = 0; i < n; i++) {
			struct tsr_pgsm_action *x = &acts[i];
			switch (x->type) {
			case 0:
				break; /* sent above */
			case TSR_PGSM_A_SEND:
				do_send(g, x);
				break;
			case TSR_PGSM_A_PERSIST:
				do_persist(g, x, m);
				break;
			case TSR_PGSM_A_UP_THRU:
			case TSR_PGSM_A_PG_TEMP:
				ask_monitors(g, x);
				break;
			case TSR_PGSM_A_RESERVE:
			case TSR_PGSM_A_RELEASE:
				osd_resv_action(g, x);
				break;
			case TSR_PGSM_A_DELETE:
				do_delete(g);
				break;
			case TSR_PGSM_A_LIST: {
				struct tsr_pgsm_objver *objs = NULL;
				size_t nobj = 0;
				int end = 1;
				if (tsr_pgstore_list(&g->ps, x->msg.oid, x->msg.oid_len, x->msg.max,
						     &objs, &nobj, &end) < 0)
					LOGE("pg %" PRId64 ".%x: listing for a backfill failed",
					     g->pgid.pool, g->pgid.pg);
				else
					tsr_pgsm_list_done(g->sm, x->token, objs, nobj, end);
				tsr_pgstore_list_free(objs, nobj);
				break;
			}
			case TSR_PGSM_A_EXEC:
				osd_op_exec(g, x);
				break;
			case TSR_PGSM_A_REPLY:
				osd_op_reply(g, x);
				break;
			default:
				LOGE("pg %" PRId64 ".%x: an action of unknown type %d", g->pgid.pool,
				     g->pgid.pg, x->type);
			}
		}
		for (size_t i = 0; i < n; i++)
			tsr_pgsm_action_free(&acts[i]);
		free(acts);
	}
	publish_interval(g); /* (0 once the copy is gone) */
	status_take(g);
}

/* ---- The machine's inputs ------------------------------------------------------*/

static uint64_t
up_from_of(const void *arg, int32_t osd)
{
	const struct tsr_osdmap_osd *o = tsr_osdmap_osd(arg, osd);

	return o && o->up ? o->up_from : 0;
}

/* The map as PG g sees it at ep: 0, -ENOENT when the pool is gone, -EIO
 * when the epoch cannot place the PG. */
static int
mapview(const struct pgi *g, const struct tsr_osdmap_epoch *ep, struct tsr_pg_mapview *mv)
{
	const struct tsr_osdmap *m = tsr_osdmap_epoch_map(ep);
	const struct tsr_osdmap_pool *pool = tsr_osdmap_pool(m, g->pgid.pool);
	struct tsr_pg_mapping pm;
	char err[200];

	memset(mv, 0, sizeof(*mv));
	mv->epoch = m->epoch;
	if (pool == NULL)
		return -ENOENT;
	if (tsr_osdmap_epoch_map_pg(ep, g->pgid.pool, g->pgid.pg, &pm, err, sizeof(err)) < 0) {
		/* a placement that fails (a plugin missing, a rule the map
		 * cannot satisfy): never taken for the pool going */
		tsr_log_rated(&pg_refusals, TSR_SUB_OSD, TSR_LOG_ERROR, "pg %" PRId64 ".%x: "
			      "epoch %" PRIu64 " cannot place it (%s): the copy waits",
			      g->pgid.pool, g->pgid.pg, m->epoch, err);
		return -EIO;
	}
	mv->nup = pm.nup;
	mv->nacting = pm.nacting;
	memcpy(mv->up, pm.up, sizeof(mv->up));
	memcpy(mv->acting, pm.acting, sizeof(mv->acting));
	mv->size = pool->size;
	mv->min_size = pool->min_size;
	for (uint32_t i = 0; i < pm.nacting; i++) {
		const struct tsr_osdmap_osd *o = tsr_osdmap_osd(m, pm.acting[i]);
		mv->acting_up_from[i] = o ? o->up_from : 0;
		if (i == 0 && o)
			mv->primary_up_thru = o->up_thru;
	}
	mv->osd_up_from = up_from_of;
	mv->osd_up_arg = m;
	return 0;
}

/* A PURGE: the primary is clean without this copy.  The machine takes
 * it only once it has every epoch posted to the copy, and under rt->lock,
 * so an epoch that puts the PG on this OSD again either was posted first
 * (the PURGE goes behind it, and the machine, in the new interval, ignores
 * it) or finds the copy deleting and makes a new one beside it
 * (osd_pgrt_map), whose events run on the same worker after the removal.
 * Without this, that epoch went to a copy about to be removed and the OSD
 * kept no copy of a PG it serves until yet another epoch.  1: posted
 * again; 0: taken, its result in *rc. */
static int
purge(struct pgi *g, struct ev *e, int *rc)
{
	struct osd_pgrt *rt = g->rt;

	pthread_mutex_lock(&rt->lock);
	if (g->posted > g->taken) {
		pthread_mutex_unlock(&rt->lock);
		osd_pg_post(g, e);
		return 1;
	}
	*rc = tsr_pgsm_recv(g->sm, &e->m, 1);
	if (tsr_pgsm_state(g->sm) == TSR_PGSM_DELETED)
		g->deleting = 1;
	pthread_mutex_unlock(&rt->lock);
	return 0;
}

static void
retry_parked(struct pgi *g)
{
	struct ev *p = g->parked;

	g->parked = NULL;
	g->parked_tail = &g->parked;
	g->nparked = 0;
	while (p) {
		struct ev *e = p;
		p = p->next;
		e->next = NULL;
		osd_pg_run(e);
	}
}

void
osd_pg_run(void *arg)
{
	struct ev *e = arg;
	struct pgi *g = e->g;
	int rc = 0;

	if (e->type == EV_OP && (g->damaged || g->gone ||
				 tsr_pgsm_state(g->sm) == TSR_PGSM_DELETED)) {
		/* not served here: the client places it again */
		osd_op_abort(e->op, -ESTALE, g->ep ? tsr_osdmap_epoch_number(g->ep) : 0);
		e->op = NULL;
		ev_free(e);
		return;
	}
	if (g->damaged) {
		ev_free(e);
		return;
	}
	if (g->gone || tsr_pgsm_state(g->sm) == TSR_PGSM_DELETED) {
		/* removed, or being removed: a query learns there is nothing */
		if (e->type == EV_MSG && e->m.type == TSR_PGMSG_QUERY)
			answer_nothing(g->rt, &e->m);
		ev_free(e);
		return;
	}
	switch (e->type) {
	case EV_MAP: {
		struct tsr_pg_mapview mv;
		if (tsr_osdmap_epoch_number(e->ep) > g->taken)
			g->taken = tsr_osdmap_epoch_number(e->ep);
		if (g->ep && tsr_osdmap_epoch_number(e->ep) <= tsr_osdmap_epoch_number(g->ep))
			break; /* fed already */
		rc = mapview(g, e->ep, &mv);
		if (rc == -ENOENT) {
			/* the pool went: the copy goes with it */
			tsr_osdmap_epoch_put(g->ep);
			g->ep = tsr_osdmap_epoch_get(e->ep);
			do_delete(g);
			break;
		}
		if (rc < 0)
			break; /* this epoch cannot place it: the next may */
		rc = tsr_pgsm_advance_map(g->sm, &mv);
		if (rc < 0) {
			/* the machine keeps the epoch it had (its view points
			 * into it): the copy waits */
			tsr_log_rated(&pg_refusals, TSR_SUB_OSD, TSR_LOG_ERROR, "pg %" PRId64
				      ".%x: epoch %" PRIu64 " refused (%s): the copy waits",
				      g->pgid.pool, g->pgid.pg, mv.epoch, strerror(-rc));
			break;
		}
		tsr_osdmap_epoch_put(g->ep);
		g->ep = tsr_osdmap_epoch_get(e->ep);
		carry_out(g, NULL);
		retry_parked(g);
		break;
	}
	case EV_MSG:
		g->payload = e->raw;
		if (e->m.type == TSR_PGMSG_SCRUB || e->m.type == TSR_PGMSG_SCRUB_MAP)
			rc = osd_scrub_msg(g, &e->m);
		else if (e->m.type == TSR_PGMSG_BACKFILL_RESERVE ||
			 e->m.type == TSR_PGMSG_BACKFILL_GRANT ||
			 e->m.type == TSR_PGMSG_BACKFILL_RELEASE)
			rc = osd_resv_msg(g, &e->m);
		else if (e->m.type == TSR_PGMSG_PURGE) {
			if (purge(g, e, &rc)) {
				g->payload = NULL;
				return; /* behind the epochs posted since */
			}
		} else
			rc = tsr_pgsm_recv(g->sm, &e->m, 1);
		if (rc == -EAGAIN) {
			/* from a newer map: once we have it (a bounded number:
			 * a sender that runs that far ahead sends again) */
			g->payload = NULL;
			if (g->nparked >= MAX_PARKED) {
				tsr_log_rated(&pg_refusals, TSR_SUB_OSD, TSR_LOG_WARN, "pg %"
					      PRId64 ".%x: %u messages wait for a newer map; "
					      "%s from osd.%d dropped", g->pgid.pool, g->pgid.pg,
					      MAX_PARKED, tsr_pgmsg_name(e->m.type), e->m.from);
				break;
			}
			e->next = NULL;
			*g->parked_tail = e;
			g->parked_tail = &e->next;
			g->nparked++;
			return;
		}
		if (rc < 0)
			tsr_log_rated(&pg_refusals, TSR_SUB_OSD, TSR_LOG_WARN, "pg %" PRId64
				      ".%x: %s from osd.%d: %s", g->pgid.pool, g->pgid.pg,
				      tsr_pgmsg_name(e->m.type), e->m.from, strerror(-rc));
		carry_out(g, &e->m);
		g->payload = NULL;
		break;
	case EV_OP:
		if (g->ep == NULL || tsr_osdmap_epoch_number(g->ep) < e->op->op.map_epoch) {
			/* the client's map is newer than this copy's: once it has
			 * it (bounded as the messages are) */
			if (g->nparked >= MAX_PARKED) {
				osd_op_abort(e->op, -EAGAIN, g->ep ? tsr_osdmap_epoch_number(g->ep)
								  : 0);
				e->op = NULL;
				break;
			}
			e->next = NULL;
			*g->parked_tail = e;
			g->parked_tail = &e->next;
			g->nparked++;
			return;
		}
		osd_op_start(g, e->op);
		e->op = NULL;
		carry_out(g, NULL);
		break;
	case EV_COMMIT:
		/* (before the machine hears of it, as from the commit thread) */
		if (e->answer && answer_current(g, &e->m))
			send_pg(g->rt, g->ep, e->to, &e->m, NULL);
		if (e->rc < 0)
			store_failed(g, "failed a change", e->rc);
		else if (tsr_pgsm_committed(g->sm, e->token) == 0)
			carry_out(g, NULL);
		break;
	case EV_SCRUB:
		osd_scrub_event(g, e->rc);
		carry_out(g, NULL);
		break;
	case EV_RESV:
		osd_resv_event(g, e);
		carry_out(g, NULL);
		break;
	case EV_SEND:
		osd_pace_send(g, e);
		break;
	case EV_TICK:
		if ((rc = tsr_pgsm_tick(g->sm)) < 0)
			tsr_log_rated(&pg_refusals, TSR_SUB_OSD, TSR_LOG_WARN, "pg %" PRId64
				      ".%x: a tick failed: %s", g->pgid.pool, g->pgid.pg,
				      strerror(-rc));
		carry_out(g, NULL);
		break;
	}
	if (!g->gone && !g->damaged && g->scrub.running) {
		osd_scrub_check(g);
		if (!g->scrub.running)
			carry_out(g, NULL); /* stopped: the stats say so */
	}
	ev_free(e);
}

#define COMMIT_TICK_MS 1000

void
osd_pgrt_tick(struct osd_pgrt *rt)
{
	uint64_t now = tsr_now_ns();

	if (now - rt->commit_tick_ns < COMMIT_TICK_MS * 1000000ull)
		return;
	rt->commit_tick_ns = now;
	pthread_mutex_lock(&rt->lock);
	for (struct pgi *g = rt->pgs; g; g = g->next) {
		struct ev *e;
		if (g->gone || g->damaged || !g->commit_due ||
		    (e = calloc(1, sizeof(*e))) == NULL)
			continue;
		g->commit_due = 0;   /* (status_take says again if need be) */
		e->type = EV_TICK;
		e->g = g;
		osd_pg_post(g, e);
	}
	pthread_mutex_unlock(&rt->lock);
}

/* ---- Copies ------------------------------------------------------------------------*/

/* The copy of pgid here (one being loaded, or damaged, too: no other is
 * made beside it), or NULL.  Under rt->lock. */
struct pgi *
osd_pgi_find(struct osd_pgrt *rt, struct tsr_pgid pgid)
{
	for (struct pgi *g = rt->pgs; g; g = g->next)
		if (g->pgid.pool == pgid.pool && g->pgid.pg == pgid.pg && !g->gone &&
		    !g->deleting)
			return g;
	return NULL;
}

static void
pgi_link(struct osd_pgrt *rt, struct pgi *g)
{
	pthread_mutex_lock(&rt->lock);
	g->next = rt->pgs;
	rt->pgs = g;
	rt->npgs++;
	pthread_mutex_unlock(&rt->lock);
}

/* A copy's runtime: its machine, and its store as it is (exists: the
 * collection is there, known without asking the store).  Not linked. */
static struct pgi *
pgi_new(struct osd_pgrt *rt, struct tsr_pgid pgid, uint64_t created, int exists,
	char *err, size_t errlen)
{
	struct pgi *g = tsr_xcalloc(1, sizeof(*g));
	struct tsr_pgsm_conf conf = rt->defaults;
	struct tsr_coll_id cid = { (uint64_t)pgid.pool, pgid.pg, TSR_SHARD_NONE };
	int rc;

	g->rt = rt;
	g->pgid = pgid;
	g->parked_tail = &g->parked;
	g->q = osd_shard_of(rt, pgid);
	pthread_mutex_init(&g->wr_mu, NULL);
	pthread_cond_init(&g->wr_cv, NULL);
	conf.pgid = pgid;
	conf.whoami = rt->whoami;
	conf.created = created;
	snprintf(g->state, sizeof(g->state), "initial");
	tsr_pgstore_init(&g->ps, rt->st->ops, rt->st->h, cid, exists);
	if ((rc = tsr_pgsm_create(&conf, &g->sm)) < 0) {
		tsr_errf(err, errlen, rc, "pg %" PRId64 ".%x: %s", pgid.pool, pgid.pg,
			 strerror(-rc));
		free(g);
		return NULL;
	}
	return g;
}

/* (rt->lock held) */
static void
post_map(struct pgi *g, struct tsr_osdmap_epoch *ep)
{
	struct ev *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return;
	if (tsr_osdmap_epoch_number(ep) > g->posted)
		g->posted = tsr_osdmap_epoch_number(ep);
	e->type = EV_MAP;
	e->ep = tsr_osdmap_epoch_get(ep);
	osd_pg_post(g, e);
}

/* The epochs kept, from `from` (at least the first kept). */
static void
feed_from(struct osd_pgrt *rt, struct pgi *g, uint64_t from)
{
	pthread_mutex_lock(&rt->lock);
	for (uint64_t k = 0; k < rt->ring_n; k++) {
		struct tsr_osdmap_epoch *ep = rt->ring[(rt->ring_first + k) % RING];
		if (tsr_osdmap_epoch_number(ep) >= from)
			post_map(g, ep);
	}
	pthread_mutex_unlock(&rt->lock);
}

static uint64_t
pool_since(struct osd_pgrt *rt, int64_t pool, uint64_t epoch)
{
	for (size_t i = 0; i < rt->npools; i++)
		if (rt->pools[i].pool == pool)
			return rt->pools[i].since;
	if (rt->npools < TSR_OSDMAP_MAX_POOLS) {
		rt->pools[rt->npools].pool = pool;
		rt->pools[rt->npools++].since = epoch;
	}
	return epoch;
}

void
osd_pgrt_map(struct osd_pgrt *rt, struct tsr_osdmap_epoch *ep)
{
	const struct tsr_osdmap *m = tsr_osdmap_epoch_map(ep);
	uint64_t e = m->epoch;
	char err[256];

	/* keep it for copies that start later */
	if (rt->ring_n && tsr_osdmap_epoch_number(rt->ring[(rt->ring_first + rt->ring_n - 1) %
							   RING]) >= e)
		return;
	if (rt->ring_n == RING) {
		tsr_osdmap_epoch_put(rt->ring[rt->ring_first % RING]);
		rt->ring_first++;
		rt->ring_n--;
	}
	rt->ring[(rt->ring_first + rt->ring_n) % RING] = tsr_osdmap_epoch_get(ep);
	rt->ring_n++;
	/* every copy gets every epoch */
	pthread_mutex_lock(&rt->lock);
	for (struct pgi *g = rt->pgs; g; g = g->next)
		if (!g->gone && !g->damaged && !g->deleting)
			post_map(g, ep);
	pthread_mutex_unlock(&rt->lock);
	/* new copies: PGs this epoch puts this OSD in the up or acting set of */
	for (size_t i = 0; i < m->npools; i++) {
		const struct tsr_osdmap_pool *p = &m->pools[i];
		uint64_t since = pool_since(rt, p->id, e);
		for (uint32_t pg = 0; pg < p->pg_num; pg++) {
			struct tsr_pg_mapping pm;
			struct tsr_pgid pgid = { p->id, pg };
			int mine = 0;
			if (tsr_osdmap_epoch_map_pg(ep, p->id, pg, &pm, err, sizeof(err)) < 0)
				break;
			for (uint32_t k = 0; k < pm.nup; k++)
				mine |= pm.up[k] == rt->whoami;
			for (uint32_t k = 0; k < pm.nacting; k++)
				mine |= pm.acting[k] == rt->whoami;
			pthread_mutex_lock(&rt->lock);
			int have = osd_pgi_find(rt, pgid) != NULL;
			pthread_mutex_unlock(&rt->lock);
			if (!mine || have)
				continue;
			/* (every collection in the store was found at start: a
			 * PG with no copy then has no collection) */
			struct pgi *g = pgi_new(rt, pgid, since, 0, err, sizeof(err));
			if (g == NULL) {
				LOGE("osd.%d: %s", rt->whoami, err);
				continue;
			}
			pgi_link(rt, g);
			feed_from(rt, g, since);
		}
	}
	/* the epoch is the OSD's now that its copies are made (until then a
	 * message of it for a copy not made yet waits, below), and the
	 * messages that waited for them go, ahead of any that follow */
	pthread_mutex_lock(&rt->lock);
	tsr_osdmap_epoch_put(rt->latest);
	rt->latest = tsr_osdmap_epoch_get(ep);
	struct ev *early = rt->early, *nothing = NULL;
	rt->early = NULL;
	rt->early_tail = &rt->early;
	rt->nearly = 0;
	rt->early_bytes = 0;
	while (early) {
		struct ev *x = early;
		struct pgi *g = osd_pgi_find(rt, x->m.pgid);
		early = x->next;
		x->next = NULL;
		if (g == NULL && x->m.map_epoch > e) {
			/* still no copy: a later map may make it */
			*rt->early_tail = x;
			rt->early_tail = &x->next;
			rt->nearly++;
			rt->early_bytes += x->raw ? x->raw->front_len + x->raw->data_len : 0;
			continue;
		}
		if (g && !g->damaged) {
			/* (one from a newer map still waits, in the copy) */
			osd_pg_post(g, x);
		} else if (x->m.type == TSR_PGMSG_QUERY) {
			x->next = nothing; /* answered below, out of the lock */
			nothing = x;
		} else {
			ev_free(x); /* not made here after all */
		}
	}
	pthread_mutex_unlock(&rt->lock);
	while (nothing) {
		struct ev *x = nothing;
		nothing = x->next;
		answer_nothing(rt, &x->m);
		ev_free(x);
	}
	/* client operations that waited for this epoch */
	osd_ops_map(rt, e);
}

/* ---- Messages from other OSDs ----------------------------------------------------*/

/* Does m name only objects a client could (no name the OSD keeps for
 * itself: pgstore.h)?  A peer that names one would have a copy rewrite or
 * ship the PG's own meta object. */
static int
names_ok(const struct tsr_pgmsg *m)
{
	if (tsr_pgstore_reserved(m->oid, m->oid_len) ||
	    tsr_pgstore_reserved(m->oid2, m->oid2_len))
		return 0;
	for (size_t i = 0; i < m->nsobjs; i++)
		if (tsr_pgstore_reserved(m->sobjs[i].oid, m->sobjs[i].oid_len))
			return 0;
	for (size_t i = 0; i < m->nobjs; i++)
		if (tsr_pgstore_reserved(m->objs[i].oid, m->objs[i].oid_len))
			return 0;
	for (size_t i = 0; i < m->log.n; i++)
		if (tsr_pgstore_reserved(m->log.e[i].oid, m->log.e[i].oid_len))
			return 0;
	for (size_t i = 0; i < m->missing.n; i++)
		if (tsr_pgstore_reserved(m->missing.m[i].oid, m->missing.m[i].oid_len))
			return 0;
	return !tsr_pgstore_reserved(m->info.last_backfill, m->info.last_backfill_len);
}

/* A QUERY for a PG with no copy here (or one being removed): "nothing
 * held", sent from a worker. */
struct nothing {
	struct osd_pgrt *rt;
	struct tsr_osdmap_epoch *ep;
	int32_t to;
	struct tsr_pgmsg n;
};

static void
send_nothing(void *arg)
{
	struct nothing *x = arg;

	send_pg(x->rt, x->ep, x->to, &x->n, NULL);
	tsr_osdmap_epoch_put(x->ep);
	tsr_pgmsg_free(&x->n);
	free(x);
}

static void
answer_nothing(struct osd_pgrt *rt, const struct tsr_pgmsg *query)
{
	struct nothing *x = calloc(1, sizeof(*x));

	if (x == NULL)
		return;
	pthread_mutex_lock(&rt->lock);
	x->ep = rt->latest ? tsr_osdmap_epoch_get(rt->latest) : NULL;
	pthread_mutex_unlock(&rt->lock);
	if (x->ep == NULL) {
		free(x);
		return; /* no map yet: the query is asked again */
	}
	x->rt = rt;
	tsr_pgmsg_empty_notify(query, rt->whoami, query->map_epoch, &x->n);
	x->to = query->from;
	if (tsr_workq_post(rt->q[(uint64_t)(query->pgid.pool * 31 + query->pgid.pg) %
				 rt->nshards], send_nothing, x) < 0) {
		tsr_osdmap_epoch_put(x->ep);
		tsr_pgmsg_free(&x->n);
		free(x);
	}
}

/* Does a message for pgid wait for a map (under rt->lock)? */
static int
early_has(const struct osd_pgrt *rt, struct tsr_pgid pgid)
{
	for (const struct ev *x = rt->early; x; x = x->next)
		if (x->m.pgid.pool == pgid.pool && x->m.pgid.pg == pgid.pg)
			return 1;
	return 0;
}

static void
on_pg_msg(struct tsr_conn *c, struct tsr_msg *msg, void *arg)
{
	struct osd_pgrt *rt = arg;
	struct ev *e = calloc(1, sizeof(*e));
	char err[256] = "", id[16];
	struct pgi *g;

	if (e == NULL) {
		tsr_msg_free(msg, 0);
		return;
	}
	if (tsr_pgmsg_decode(msg->front, msg->front_len, &e->m, err, sizeof(err)) < 0) {
		tsr_log_rated(&pg_refusals, TSR_SUB_OSD, TSR_LOG_WARN, "%s: a PG message that "
			      "does not decode: %s; dropped", tsr_conn_peer(c), err);
		__atomic_add_fetch(&rt->refused, 1, __ATOMIC_RELAXED);
		free(e);
		tsr_msg_free(msg, 0);
		return;
	}
	if (!names_ok(&e->m)) {
		tsr_log_rated(&pg_refusals, TSR_SUB_OSD, TSR_LOG_WARN, "%s: a PG message (%s "
			      "from osd.%d) naming an object the OSD keeps for itself; dropped",
			      tsr_conn_peer(c), tsr_pgmsg_name(e->m.type), e->m.from);
		__atomic_add_fetch(&rt->refused, 1, __ATOMIC_RELAXED);
		drop_msg(e, msg);
		return;
	}
	snprintf(id, sizeof(id), "%d", e->m.from);
	if (!tsr_auth_is(tsr_conn_peer_auth(c), "osd", id)) {
		tsr_log_rated(&pg_refusals, TSR_SUB_OSD, TSR_LOG_WARN, "%s: a PG message "
			      "claiming to come from osd.%d on a session that is not its; "
			      "dropped", tsr_conn_peer(c), e->m.from);
		__atomic_add_fetch(&rt->refused, 1, __ATOMIC_RELAXED);
		drop_msg(e, msg);
		return;
	}
	__atomic_add_fetch(&rt->received, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&rt->lock);
	g = osd_pgi_find(rt, e->m.pgid);
	if ((g == NULL && (rt->latest == NULL ||
			   tsr_osdmap_epoch_number(rt->latest) < e->m.map_epoch)) ||
	    early_has(rt, e->m.pgid)) {
		/* the map that makes the copy here has not come yet: it waits
		 * for it (osd_pgrt_map; a query is answered then, by the copy
		 * or with "nothing held": its sender does not ask again), and
		 * so does what follows it for the same PG, to keep the order */
		size_t bytes = msg->front_len + msg->data_len;
		if (rt->nearly >= MAX_EARLY || rt->early_bytes + bytes > MAX_EARLY_BYTES) {
			pthread_mutex_unlock(&rt->lock);
			tsr_log_rated(&pg_refusals, TSR_SUB_OSD, TSR_LOG_WARN, "%s: %s for pg %"
				      PRId64 ".%x from epoch %" PRIu64 " dropped: %zu messages "
				      "(%zu bytes) already wait for maps this OSD lacks",
				      tsr_conn_peer(c), tsr_pgmsg_name(e->m.type), e->m.pgid.pool,
				      e->m.pgid.pg, e->m.map_epoch, rt->nearly, rt->early_bytes);
			drop_msg(e, msg);
			return;
		}
		e->type = EV_MSG;
		e->raw = msg;
		e->next = NULL;
		*rt->early_tail = e;
		rt->early_tail = &e->next;
		rt->nearly++;
		rt->early_bytes += bytes;
		pthread_mutex_unlock(&rt->lock);
		return;
	}
	pthread_mutex_unlock(&rt->lock);
	if (g == NULL) {
		/* no copy here: a query learns that at once (on our own session
		 * to the sender); anything else is for a copy that went */
		if (e->m.type == TSR_PGMSG_QUERY)
			answer_nothing(rt, &e->m);
		drop_msg(e, msg);
		return;
	}
	if (g->damaged) {
		/* not served: silent, so no primary takes it for empty */
		drop_msg(e, msg);
		return;
	}
	e->type = EV_MSG;
	e->raw = msg;
	/* a write's messages between the copies run here when the shard is
	 * idle, as clients' operations do (route, ops.c); the rest (peering,
	 * recovery's pushes and pulls, scrub maps) may read the store */
	if ((e->m.type == TSR_PGMSG_REPOP || e->m.type == TSR_PGMSG_REPOP_REPLY) &&
	    tsr_workq_enter(g->q)) {
		e->g = g;
		__atomic_add_fetch(&rt->msgs_in_place, 1, __ATOMIC_RELAXED);
		osd_pg_run_entered(e);
		return;
	}
	osd_pg_post(g, e);
}

/* ---- Life ----------------------------------------------------------------------*/

struct load_ctx {
	struct osd_pgrt *rt;
	struct tsr_pgid *pgids;
	size_t n;
};

static int
found_coll(void *arg, const struct tsr_coll_id *cid)
{
	struct load_ctx *l = arg;
	struct tsr_pgid *v;

	if (cid->pool > INT64_MAX || cid->shard != TSR_SHARD_NONE)
		return 0; /* the OSD's own collection */
	if ((v = realloc(l->pgids, (l->n + 1) * sizeof(*v))) == NULL)
		return -ENOMEM;
	l->pgids = v;
	v[l->n].pool = (int64_t)cid->pool;
	v[l->n++].pg = cid->pg;
	return 0;
}

int
osd_pgrt_create(struct osd_store *st, struct tsr_msgr *msgr, int32_t whoami,
		size_t nshards, struct osd_pgrt **out, char *err, size_t errlen)
{
	struct osd_pgrt *rt = tsr_xcalloc(1, sizeof(*rt));
	int rc;

	rt->whoami = whoami;
	rt->st = st;
	rt->msgr = msgr;
	pthread_mutex_init(&rt->lock, NULL);
	pthread_rwlock_init(&rt->send_lock, NULL);
	rt->held_tail = &rt->held;
	rt->early_tail = &rt->early;
	rt->defaults.log_max = 3000;
	rt->defaults.recovery_max = 1;
	rt->defaults.reserve_backfill = 1;
	rt->max_backfills = 1;
	rt->pace.tail = &rt->pace.q;
	rt->defaults.queue_max = 1024;
	rt->defaults.backfill_window = 64;
	rt->max_data = 64u << 20;
	rt->nshards = nshards ? nshards : 1;
	rt->q = tsr_xcalloc(rt->nshards, sizeof(*rt->q));
	for (size_t i = 0; i < rt->nshards; i++) {
		char name[32];
		snprintf(name, sizeof(name), "tsr-osd-pg%u", (unsigned)(i % 100));
		if ((rc = tsr_workq_create(name, &rt->q[i])) < 0) {
			osd_pgrt_destroy(rt);
			return tsr_errf(err, errlen, rc, "the PG workers: %s", strerror(-rc));
		}
	}
	/* on the I/O thread, as clients' operations (ops.c) */
	if (tsr_msgr_register(msgr, TSR_MSG_OSD_PG, on_pg_msg, rt, TSR_MSGR_INLINE) < 0 ||
	    osd_ops_register(rt) < 0) {
		osd_pgrt_destroy(rt);
		return tsr_errf(err, errlen, -ENOMEM, "cannot register the PG messages");
	}
	*out = rt;
	return 0;
}

int
osd_pgrt_load(struct osd_pgrt *rt, uint64_t *oldest, char *err, size_t errlen)
{
	struct load_ctx l = { rt, NULL, 0 };
	int rc;

	*oldest = 0;
	rc = rt->st->ops->list_colls(rt->st->h, found_coll, &l);
	if (rc < 0) {
		free(l.pgids);
		return tsr_errf(err, errlen, rc, "listing the PGs in the store: %s",
				strerror(-rc));
	}
	for (size_t i = 0; i < l.n; i++) {
		char why[256];
		struct pgi *g = pgi_new(rt, l.pgids[i], 0, 1, why, sizeof(why));
		struct tsr_obj_stat st;
		if (g == NULL) {
			LOGE("osd.%d: %s", rt->whoami, why);
			continue;
		}
		rc = rt->st->ops->stat(rt->st->h, &g->ps.cid, TSR_PGSTORE_META,
				       TSR_PGSTORE_META_LEN, &st);
		if (rc < 0)
			snprintf(why, sizeof(why), "a collection without its PG meta object "
				 "(%s)", strerror(-rc));
		if (rc < 0 || tsr_pgstore_load(&g->ps, g->sm, why, sizeof(why)) < 0) {
			/* kept as it is, not served, and no other copy made
			 * over it: an operator looks at it */
			LOGE("osd.%d: pg %" PRId64 ".%x: %s; the copy is left as it is, not "
			     "served", rt->whoami, g->pgid.pool, g->pgid.pg, why);
			g->damaged = 1;
			snprintf(g->state, sizeof(g->state), "damaged");
			snprintf(g->why, sizeof(g->why), "%.150s", why);
			pgi_link(rt, g);
			continue;
		}
		g->sis0 = tsr_pgsm_info(g->sm)->same_interval_since;
		if (g->sis0 && (*oldest == 0 || g->sis0 < *oldest))
			*oldest = g->sis0;
		status_take(g);
		pgi_link(rt, g);
	}
	free(l.pgids);
	return 0;
}

void
osd_pgrt_replay(struct osd_pgrt *rt, struct tsr_osdmap_epoch *ep)
{
	uint64_t e = tsr_osdmap_epoch_number(ep);

	pthread_mutex_lock(&rt->lock);
	for (struct pgi *g = rt->pgs; g; g = g->next)
		if (!g->gone && !g->damaged && !g->deleting && g->sis0 && e >= g->sis0)
			post_map(g, ep);
	pthread_mutex_unlock(&rt->lock);
}

uint64_t
osd_pgrt_min_sis(struct osd_pgrt *rt)
{
	uint64_t min = 0;

	pthread_mutex_lock(&rt->lock);
	for (struct pgi *g = rt->pgs; g; g = g->next) {
		uint64_t s = g->sis ? g->sis : g->sis0;
		if (!g->gone && s && (min == 0 || s < min))
			min = s;
	}
	pthread_mutex_unlock(&rt->lock);
	return min;
}

void
osd_pgrt_set_max_data(struct osd_pgrt *rt, uint64_t max_data, uint32_t max_front)
{
	rt->max_data = max_data;
	rt->max_front = max_front;
}

void
osd_pgrt_set_pg_limits(struct osd_pgrt *rt, uint32_t log_max, uint32_t recovery_max,
		       uint32_t backfill_window, uint32_t queue_max)
{
	rt->defaults.log_max = log_max;
	rt->defaults.recovery_max = recovery_max;
	rt->defaults.backfill_window = backfill_window;
	rt->defaults.queue_max = queue_max;
}

int
osd_pgrt_stats_changed(struct osd_pgrt *rt)
{
	int changed;

	pthread_mutex_lock(&rt->lock);
	changed = rt->stats_changed;
	rt->stats_changed = 0;
	pthread_mutex_unlock(&rt->lock);
	return changed;
}

void
osd_pgrt_set_recovery_bps(struct osd_pgrt *rt, uint64_t bps)
{
	pthread_mutex_lock(&rt->lock);
	rt->pace.bps = bps;
	rt->pace.refill_ns = tsr_now_ns();
	pthread_mutex_unlock(&rt->lock);
}

void
osd_pgrt_set_max_backfills(struct osd_pgrt *rt, uint32_t n)
{
	pthread_mutex_lock(&rt->lock);
	rt->max_backfills = n ? n : 1;
	pthread_mutex_unlock(&rt->lock);
}

void
osd_pgrt_set_fail_stop(struct osd_pgrt *rt, void (*fn)(void *arg), void *arg)
{
	rt->fail_stop = fn;
	rt->fail_arg = arg;
}

/* The store failed a change of PG g (what, rc): the OSD stops (once). */
static void
store_failed(struct pgi *g, const char *what, int rc)
{
	struct osd_pgrt *rt = g->rt;

	LOGE("pg %" PRId64 ".%x: the store %s: %s", g->pgid.pool, g->pgid.pg, what,
	     strerror(-rc));
	if (__atomic_exchange_n(&rt->failed, 1, __ATOMIC_ACQ_REL))
		return;
	tsr_log(TSR_SUB_OSD, TSR_LOG_ERROR, "osd.%d: stopping: its store failed a change "
		"(%s); a copy that cannot store what it is sent must not serve, and its "
		"PGs go on with their other copies.  Check the device (and free space: "
		"`tessera osd df`) before starting it again", rt->whoami, strerror(-rc));
	if (rt->fail_stop)
		rt->fail_stop(rt->fail_arg);
}

void
osd_pgrt_set_scrub(struct osd_pgrt *rt, uint64_t interval_s, uint64_t deep_interval_s,
		   uint32_t chunk, uint32_t max_scrubs, int auto_repair)
{
	rt->scrub_interval_s = interval_s;
	rt->deep_interval_s = deep_interval_s;
	rt->scrub_chunk = chunk;
	rt->max_scrubs = max_scrubs;
	rt->scrub_auto_repair = auto_repair;
}

void
osd_pgrt_set_full_ratio(struct osd_pgrt *rt, double ratio)
{
	rt->full_ratio = ratio;
}

/* (shard 0) measure the store */
static void
measure(void *arg)
{
	struct osd_pgrt *rt = arg;
	struct tsr_statfs sf;
	int rc = rt->st->ops->statfs ? rt->st->ops->statfs(rt->st->h, &sf) : -EOPNOTSUPP;

	pthread_mutex_lock(&rt->lock);
	rt->usage_asked = 0;
	if (rc == 0 && sf.total > 0) {
		int was = rt->full;
		rt->usage = sf;
		rt->usage_ok = 1;
		rt->full = rt->full_ratio > 0 &&
			   (double)(sf.total - (sf.available < sf.total ? sf.available : sf.total)) >=
				   rt->full_ratio * (double)sf.total;
		if (rt->full != was)
			tsr_log(TSR_SUB_OSD, rt->full ? TSR_LOG_ERROR : TSR_LOG_INFO,
				"osd.%d: the store is %s: %" PRIu64 " of %" PRIu64 " bytes free "
				"(osd_full_ratio %.2f)%s", rt->whoami, rt->full ? "full" : "no "
				"longer full", sf.available, sf.total, rt->full_ratio,
				rt->full ? "; writes that may grow it get ENOSPC" : "");
	}
	pthread_mutex_unlock(&rt->lock);
}

int
osd_pgrt_usage(struct osd_pgrt *rt, struct tsr_statfs *out)
{
	int ok, ask;

	pthread_mutex_lock(&rt->lock);
	ok = rt->usage_ok;
	*out = rt->usage;
	ask = !rt->usage_asked;
	rt->usage_asked = 1;
	pthread_mutex_unlock(&rt->lock);
	if (ask && tsr_workq_post(rt->q[0], measure, rt) < 0) {
		pthread_mutex_lock(&rt->lock);
		rt->usage_asked = 0;
		pthread_mutex_unlock(&rt->lock);
	}
	return ok ? 0 : -EAGAIN;
}

void
osd_pgrt_asks(struct osd_pgrt *rt, uint64_t *up_thru, struct tsr_mon_pg_temp_req **temps,
	      size_t *ntemps)
{
	pthread_mutex_lock(&rt->lock);
	*up_thru = rt->want_up_thru;
	rt->want_up_thru = 0;
	*temps = rt->temps;
	*ntemps = rt->ntemps;
	rt->temps = NULL;
	rt->ntemps = 0;
	pthread_mutex_unlock(&rt->lock);
}

void
osd_pgrt_status(struct osd_pgrt *rt, struct tsr_sbuf *out)
{
	size_t active = 0, clean = 0, n = 0;

	pthread_mutex_lock(&rt->lock);
	tsr_sbuf_printf(out, "{\"pgs\": [");
	for (struct pgi *g = rt->pgs; g; g = g->next) {
		if (g->gone)
			continue;
		tsr_sbuf_printf(out, "%s\n  {\"pgid\": \"%" PRId64 ".%x\", \"state\": \"%s%s\", "
				"\"epoch\": %" PRIu64 ", \"les\": %" PRIu64 ", \"head\": \"%"
				PRIu64 "'%" PRIu64 "\", \"committed\": \"%" PRIu64 "'%" PRIu64
				"\", \"why\": ", n ? "," : "", g->pgid.pool, g->pgid.pg, g->state,
				g->clean ? "+clean" : "", g->fed, g->les, g->head.epoch, g->head.ver,
				g->committed.epoch, g->committed.ver);
		tsr_sbuf_json_str(out, g->why);
		tsr_sbuf_printf(out, "}");
		n++;
		active += strcmp(g->state, "active") == 0;
		clean += g->clean;
	}
	tsr_sbuf_printf(out, "],\n \"copies\": %zu, \"active\": %zu, \"clean\": %zu, "
			"\"sent\": %" PRIu64 ", \"received\": %" PRIu64 ", \"refused\": %"
			PRIu64 ", \"persists\": %" PRIu64 ", \"client_ops\": %" PRIu64
			", \"client_ops_answered\": %" PRIu64 ", \"client_ops_waiting_map\": %zu"
			", \"client_ops_in_place\": %" PRIu64 ", \"pg_msgs_in_place\": %" PRIu64
			", \"pg_sends_deferred\": %" PRIu64
			", \"limits\": {\"log_max\": %u, \"recovery_max\": %u, "
			"\"backfill_window\": %u, \"queue_max\": %u}, \"backfill_slots\": ",
			n, active, clean, rt->sent, rt->received, rt->refused, rt->persists,
			rt->ops_in, rt->ops_done, rt->nopwait,
			__atomic_load_n(&rt->ops_in_place, __ATOMIC_RELAXED),
			__atomic_load_n(&rt->msgs_in_place, __ATOMIC_RELAXED),
			__atomic_load_n(&rt->sends_deferred, __ATOMIC_RELAXED), rt->defaults.log_max,
			rt->defaults.recovery_max, rt->defaults.backfill_window,
			rt->defaults.queue_max);
	osd_resv_status(rt, out);
	tsr_sbuf_printf(out, ", \"recovery_pace\": ");
	osd_pace_status(rt, out);
	tsr_sbuf_printf(out, "}");
	pthread_mutex_unlock(&rt->lock);
}

size_t
osd_pgrt_stats(struct osd_pgrt *rt, struct tsr_mon_pg_stat **out)
{
	struct tsr_mon_pg_stat *v = NULL;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&rt->lock);
	for (struct pgi *g = rt->pgs; g; g = g->next) {
		if (g->gone || g->damaged || !g->primary)
			continue;
		if (n == cap) {
			struct tsr_mon_pg_stat *w;
			cap = cap ? 2 * cap : 64;
			if ((w = realloc(v, cap * sizeof(*w))) == NULL)
				break;
			v = w;
		}
		v[n++] = g->stat;
	}
	pthread_mutex_unlock(&rt->lock);
	*out = v;
	return n;
}

void
osd_pgrt_quiesce(struct osd_pgrt *rt)
{
	if (rt == NULL)
		return;
	osd_ops_quiesce(rt);
	pthread_rwlock_wrlock(&rt->send_lock);
	rt->stopping = 1;
	pthread_rwlock_unlock(&rt->send_lock);
	/* our sessions go while the messenger runs: its destroy wants the
	 * handles given back first (msgr.h); no send opens another now */
	pthread_mutex_lock(&rt->lock);
	for (size_t i = 0; i < rt->npeers; i++)
		if (rt->peers[i].conn) {
			tsr_conn_close(rt->peers[i].conn);
			tsr_conn_put(rt->peers[i].conn);
			rt->peers[i].conn = NULL;
		}
	pthread_mutex_unlock(&rt->lock);
}

void
osd_pgrt_destroy(struct osd_pgrt *rt)
{
	if (rt == NULL)
		return;
	/* what was posted runs, and the commits it makes post more: until the
	 * backend has nothing in flight and the workers nothing queued */
	for (int round = 0; round < 1000; round++) {
		size_t pending = 0;
		if (rt->st->ops->flush)
			rt->st->ops->flush(rt->st->h);
		for (size_t i = 0; i < rt->nshards; i++)
			if (rt->q[i])
				pending += tsr_workq_pending(rt->q[i]);
		if (pending == 0)
			break;
		struct timespec ts = { 0, 5 * 1000000 };
		nanosleep(&ts, NULL);
	}
	/* commits from here on are not posted; the workers run what they
	 * hold, and the flush after waits for the commits that makes */
	__atomic_store_n(&rt->closing, 1, __ATOMIC_RELEASE);
	for (size_t i = 0; i < rt->nshards; i++)
		if (rt->q[i])
			tsr_workq_destroy(rt->q[i]);
	if (rt->st->ops->flush)
		rt->st->ops->flush(rt->st->h);
	free(rt->q);
	osd_resv_free(rt);
	osd_pace_free(rt);
	while (rt->pgs) {
		struct pgi *g = rt->pgs;
		rt->pgs = g->next;
		while (g->parked) {
			struct ev *e = g->parked;
			g->parked = e->next;
			ev_free(e);
		}
		osd_scrub_drop(g);
		osd_ops_drop(g);
		tsr_pgsm_destroy(g->sm);
		tsr_pgstore_close(&g->ps);
		tsr_osdmap_epoch_put(g->ep);
		for (size_t i = 0; i < g->nwr; i++)
			free(g->wr[i].oid);
		free(g->wr);
		pthread_mutex_destroy(&g->wr_mu);
		pthread_cond_destroy(&g->wr_cv);
		free(g);
	}
	for (size_t i = 0; i < rt->npeers; i++)
		if (rt->peers[i].conn) { /* (quiesce was not called: a failed start) */
			tsr_conn_close(rt->peers[i].conn);
			tsr_conn_put(rt->peers[i].conn);
		}
	free(rt->peers);
	for (uint64_t k = 0; k < rt->ring_n; k++)
		tsr_osdmap_epoch_put(rt->ring[(rt->ring_first + k) % RING]);
	tsr_osdmap_epoch_put(rt->latest);
	free(rt->temps);
	while (rt->early) {
		struct ev *x = rt->early;
		rt->early = x->next;
		ev_free(x);
	}
	while (rt->held) {
		struct held *h = rt->held;
		rt->held = h->next;
		tsr_pgmsg_free(&h->m);
		tsr_rbuf_put(h->pl);
		tsr_osdmap_epoch_put(h->ep);
		free(h);
	}
	pthread_rwlock_destroy(&rt->send_lock);
	pthread_mutex_destroy(&rt->lock);
	free(rt);
}
