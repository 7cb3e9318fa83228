/* mapsub.c — the map subscriber (mapsub.h).
 *
 * The session lives on the loop's thread: step() does what is due (drop a
 * failed or silent session, hunt for a monitor, renew) and arms the one
 * timer for what comes next; every event (a MON_MAPS, a fault, the timer)
 * ends in it.  The messenger's threads only post (on_msg, on_fault).  The
 * maps change on the loop too, under the lock, for readers elsewhere.
 */
#include "mon/mapsub.h"
#include "event/loop.h"
#include "log/log.h"
#include "mon/monmsg.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define TRY_NS (3000ull * 1000000u)  /* a monitor's time to answer */
#define PAUSE_NS (200ull * 1000000u) /* between rounds of monitors that failed */

struct listener {
	tsr_mapsub_cb cb;
	void *arg;
};

struct tsr_mapsub {
	struct tsr_mon_members members;
	struct tsr_msgr *msgr;
	struct tsr_loop *loop;
	const struct tsr_registry *reg;  /* the epochs' placement plugins */
	const struct tsr_host *host;
	uint32_t want;
	uint64_t renew_ns;
	struct listener ls[TSR_MAPSUB_LISTENERS];

	/* the session: the loop's thread only */
	struct tsr_conn *conn;       /* to the monitor, held */
	int bad;                     /* it failed or refused: find another */
	char hint[64];               /* a refusal's leader address */
	size_t next;                 /* the next member to try */
	size_t failed_in_row;
	uint64_t tid, awaiting;      /* the request not answered yet (0: none) */
	uint64_t asked_at, renewed_at, pause_until;
	int need_full[TSR_MON_NMAPS];
	uint64_t timer;
	int dead;                    /* destroyed: posts only give back */

	pthread_mutex_t lock;        /* below: written on the loop, read anywhere */
	pthread_cond_t cond;
	struct tsr_osdmap_epoch *osd;  /* the newest held, or NULL */
	int have_mds;
	struct tsr_mdsmap mds;
	struct tsr_mapsub_stats st;
};

static uint64_t
epoch_of(const struct tsr_mapsub *s, int which)
{
	if (which == TSR_MON_MAP_OSD)
		return s->osd ? tsr_osdmap_epoch_number(s->osd) : 0;
	return s->have_mds ? s->mds.epoch : 0;
}

/* Make ep the OSD map held (the loop's thread; takes the caller's
 * reference), and drop the one it replaces outside the lock. */
static void
set_osd(struct tsr_mapsub *s, struct tsr_osdmap_epoch *ep)
{
	struct tsr_osdmap_epoch *old;

	pthread_mutex_lock(&s->lock);
	old = s->osd;
	s->osd = ep;
	pthread_mutex_unlock(&s->lock);
	tsr_osdmap_epoch_put(old);
}

/* Apply one full map (full) or incremental of which; 1 if the epoch moved,
 * 0 if it was old news, -errno if it does not apply (-ENOENT: an
 * incremental with no map to apply it to).  On the loop's thread, the
 * maps' only writer: it reads them without the lock and takes the lock
 * only to put the new one in place.  An OSD map epoch is never changed:
 * the next one is made beside it, and readers holding the old one keep
 * it. */
static int
take(struct tsr_mapsub *s, int which, int full, const void *p, size_t n)
{
	uint64_t cur = epoch_of(s, which);
	char err[256];
	int rc;

	if (which == TSR_MON_MAP_OSD && full) {
		struct tsr_osdmap m;
		struct tsr_osdmap_epoch *ep;
		if ((rc = tsr_osdmap_decode(p, n, &m, err, sizeof(err))) < 0)
			return rc;
		if (s->osd != NULL && m.epoch <= cur) {
			tsr_osdmap_free(&m);
			return 0;
		}
		rc = tsr_osdmap_epoch_create(&m, s->reg, s->host, &ep, err, sizeof(err));
		tsr_osdmap_free(&m);
		if (rc < 0)
			return rc;
		set_osd(s, ep);
	} else if (which == TSR_MON_MAP_OSD) {
		struct tsr_osdmap_inc inc;
		struct tsr_osdmap_epoch *ep = NULL;
		if ((rc = tsr_osdmap_inc_decode(p, n, &inc, err, sizeof(err))) < 0)
			return rc;
		rc = s->osd == NULL ? -ENOENT : inc.epoch <= cur ? 0 :
		     tsr_osdmap_epoch_next(s->osd, &inc, &ep, err, sizeof(err)) == 0 ? 1 :
		     -EINVAL;
		tsr_osdmap_inc_free(&inc);
		if (rc <= 0)
			return rc;
		set_osd(s, ep);
	} else if (full) {
		struct tsr_mdsmap m;
		if ((rc = tsr_mdsmap_decode(p, n, &m, err, sizeof(err))) < 0)
			return rc;
		if (s->have_mds && m.epoch <= cur) {
			tsr_mdsmap_free(&m);
			return 0;
		}
		pthread_mutex_lock(&s->lock);
		tsr_mdsmap_free(&s->mds);
		s->mds = m;
		s->have_mds = 1;
		pthread_mutex_unlock(&s->lock);
	} else {
		/* the MDS map is small: applied in place, under the lock */
		struct tsr_mdsmap_inc inc;
		if ((rc = tsr_mdsmap_inc_decode(p, n, &inc, err, sizeof(err))) < 0)
			return rc;
		pthread_mutex_lock(&s->lock);
		rc = !s->have_mds ? -ENOENT : inc.epoch <= cur ? 0 :
		     tsr_mdsmap_apply(&s->mds, &inc, err, sizeof(err)) == 0 ? 1 : -EINVAL;
		pthread_mutex_unlock(&s->lock);
		tsr_mdsmap_inc_free(&inc);
		if (rc <= 0)
			return rc;
	}
	return 1;
}

/* A MON_MAPS on our session (loop thread). */
static void
handle_maps(struct tsr_mapsub *s, struct tsr_msg *m)
{
	struct tsr_mon_maps mm;
	char err[256];
	static const uint8_t none[1];
	const uint8_t *data = m->data_len ? m->data_iov[0].iov_base : none;
	int which;
	uint64_t epoch = 0;

	/* a broken message counts as none: the renewal times out */
	if (m->type != TSR_MSG_MON_MAPS ||
	    tsr_monmsg_maps_decode(m->front, m->front_len, m->data_len, &mm, err,
				   sizeof(err)) < 0)
		return;
	if (m->data_len && m->data_iovcnt != 1)
		goto out;
	which = mm.which;
	if (mm.tid && mm.tid == s->awaiting) {
		s->awaiting = 0;
		s->renewed_at = tsr_mono_ns();
		if (mm.status >= 0)
			s->failed_in_row = 0;
	}
	if (mm.status < 0) {
		/* out of the quorum: go where it points, or anywhere else */
		s->bad = 1;
		tsr_strlcpy(s->hint, mm.leader, sizeof(s->hint));
		goto out;
	}
	if (s->want & (1u << which)) {
		size_t at = 0;
		for (uint32_t i = 0; i < mm.n; i++) {
			int rc = take(s, which, mm.full, data + at, mm.len[i]);
			at += mm.len[i];
			if (rc < 0) {
				/* a gap (or a map we cannot read): start over from
				 * a full map */
				pthread_mutex_lock(&s->lock);
				s->st.refused++;
				pthread_mutex_unlock(&s->lock);
				s->need_full[which] = 1;
				break;
			}
			if (rc == 0)
				continue;
			pthread_mutex_lock(&s->lock);
			*(mm.full ? &s->st.fulls : &s->st.incs) += 1;
			pthread_cond_broadcast(&s->cond);
			pthread_mutex_unlock(&s->lock);
			/* each epoch in turn, while it is the newest held (an
			 * OSD's PGs need every one); by index: a listener may
			 * unlisten itself or another */
			epoch = epoch_of(s, which);
			for (size_t k = 0; k < TSR_MAPSUB_LISTENERS; k++)
				if (s->ls[k].cb)
					s->ls[k].cb(s->ls[k].arg, which, epoch, mm.full);
		}
	}
out:
	tsr_monmsg_maps_free(&mm);
}

static void step(struct tsr_mapsub *s);

/* ---- Events from the messenger's threads --------------------------------*/

struct mev {
	struct tsr_mapsub *s;
	struct tsr_conn *conn;       /* held */
	struct tsr_msg *m;           /* a message, or NULL: a fault */
};

static void
run_ev(void *arg)
{
	struct mev *e = arg;
	struct tsr_mapsub *s = e->s;

	/* from a session given up already: old news */
	if (!s->dead && e->conn == s->conn) {
		if (e->m)
			handle_maps(s, e->m);
		else
			s->bad = 1;
		step(s);
	}
	tsr_msg_free(e->m, 0);
	tsr_conn_put(e->conn);
	free(e);
}

/* An I/O thread: hand the event to the loop.  Lost (no memory), it is as
 * if the monitor had not answered: the renewal times out. */
static void
post_ev(struct tsr_mapsub *s, struct tsr_conn *conn, struct tsr_msg *m)
{
	struct mev *e = malloc(sizeof(*e));

	if (e == NULL) {
		tsr_msg_free(m, 0);
		return;
	}
	*e = (struct mev){ s, conn, m };
	tsr_conn_get(conn);
	if (tsr_loop_post(s->loop, run_ev, e) < 0) {
		tsr_conn_put(conn);
		tsr_msg_free(m, 0);
		free(e);
	}
}

static void
on_msg(struct tsr_conn *conn, struct tsr_msg *m, void *arg)
{
	post_ev(arg, conn, m);
}

static void
on_fault(struct tsr_conn *conn, int err, void *arg)
{
	(void)err;
	post_ev(arg, conn, NULL);
}

/* ---- The session (loop thread) --------------------------------------------*/

/* Ask for the maps held (a failed send marks the session bad). */
static void
send_sub(struct tsr_mapsub *s)
{
	struct tsr_mon_sub rq = { .tid = ++s->tid, .want = s->want | TSR_MON_SUB_KEEP };
	struct tsr_msg *m;
	struct tsr_enc e;

	for (int w = 0; w < TSR_MON_NMAPS; w++) {
		rq.have[w] = s->need_full[w] ? 0 : tsr_mapsub_epoch(s, w);
		s->need_full[w] = 0;
	}
	s->awaiting = rq.tid;
	s->asked_at = tsr_mono_ns();
	tsr_enc_init(&e);
	tsr_monmsg_sub_encode(&e, &rq);
	m = tsr_msg_from_enc(TSR_MSG_MON_SUB, &e);
	/* a full queue to a monitor: as good as dead */
	if (m == NULL || tsr_conn_send(s->conn, m, TSR_SEND_NOWAIT) < 0)
		s->bad = 1;
}

static void
timer_cb(void *arg)
{
	struct tsr_mapsub *s = arg;

	s->timer = 0;
	step(s);
}

static void
arm(struct tsr_mapsub *s, uint64_t at)
{
	uint64_t now = tsr_mono_ns();

	if (s->timer)
		tsr_loop_timer_cancel(s->loop, s->timer);
	s->timer = 0;
	if (tsr_loop_timer_add(s->loop, at > now ? at - now : 0, timer_cb, s,
			       &s->timer) < 0)
		tsr_log(TSR_SUB_MON, TSR_LOG_ERROR, "map subscriber: out of memory "
			"for a timer: the maps may stop coming");
}

static void
drop_session(struct tsr_mapsub *s)
{
	struct tsr_conn *c = s->conn;

	s->conn = NULL;
	s->awaiting = 0;
	s->failed_in_row++;
	pthread_mutex_lock(&s->lock);
	s->st.mon[0] = '\0';
	pthread_mutex_unlock(&s->lock);
	tsr_conn_close(c);
	tsr_conn_put(c);
}

/* Do what is due, then wait (a timer) for what comes next.  Each pass
 * acts or returns: a round of failed connects ends in the pause. */
static void
step(struct tsr_mapsub *s)
{
	const struct tsr_conn_events ev = { .fault = on_fault, .msg = on_msg,
					    .flags = TSR_MSGR_INLINE, .arg = s };

	for (;;) {
		uint64_t now = tsr_mono_ns();

		if (s->conn && (s->bad || (s->awaiting && now - s->asked_at >= TRY_NS))) {
			drop_session(s);
			continue;
		}
		if (s->conn == NULL) {
			const struct tsr_mon_member *t =
				tsr_mon_members_by_addr(&s->members, s->hint);
			char who[TSR_MON_NAME_MAX + 8];

			if (s->failed_in_row >= s->members.n) {
				/* a round of failures: a pause before the next */
				if (s->pause_until == 0)
					s->pause_until = now + PAUSE_NS;
				if (now < s->pause_until) {
					arm(s, s->pause_until);
					return;
				}
				s->pause_until = 0;
				s->failed_in_row = 0;
			}
			if (t == NULL)
				t = &s->members.m[s->next++ % s->members.n];
			s->hint[0] = '\0';
			tsr_mon_member_entity(t, who, sizeof(who));
			if (tsr_msgr_connect_ev(s->msgr, t->addr, who, 0, &ev, &s->conn) < 0) {
				s->conn = NULL;
				s->failed_in_row++;
				continue;
			}
			s->bad = 0;
			pthread_mutex_lock(&s->lock);
			s->st.hunts++;
			tsr_strlcpy(s->st.mon, t->addr, sizeof(s->st.mon));
			pthread_mutex_unlock(&s->lock);
			send_sub(s);
			continue;
		}
		if (!s->awaiting && (s->need_full[0] || s->need_full[1] ||
				     now - s->renewed_at >= s->renew_ns)) {
			pthread_mutex_lock(&s->lock);
			s->st.renewals++;
			pthread_mutex_unlock(&s->lock);
			send_sub(s);
			continue;
		}
		/* a full map wanted is asked for once the request in flight
		 * is answered: until then, wait like any other time */
		arm(s, s->awaiting ? s->asked_at + TRY_NS : s->renewed_at + s->renew_ns);
		return;
	}
}

/* ---- The subscriber --------------------------------------------------------*/

int
tsr_mapsub_create(struct tsr_msgr *msgr, struct tsr_loop *loop,
		  const struct tsr_mon_members *members,
		  const struct tsr_registry *reg, const struct tsr_host *host,
		  uint32_t want,
		  uint32_t renew_ms, tsr_mapsub_cb cb, void *arg,
		  struct tsr_mapsub **out, char *err, size_t errlen)
{
	struct tsr_mapsub *s;
	uint64_t id;

	if (msgr == NULL || loop == NULL || members->n == 0 ||
	    (want & ~(TSR_MON_SUB_OSD | TSR_MON_SUB_MDS | TSR_MON_SUB_EVERY)) ||
	    !(want & (TSR_MON_SUB_OSD | TSR_MON_SUB_MDS)))
		return tsr_errf(err, errlen, -EINVAL, "map subscriber: no messenger, "
				"loop or monitors, or no map wanted");
	s = tsr_xcalloc(1, sizeof(*s));
	s->members = *members;
	s->msgr = msgr;
	s->loop = loop;
	s->reg = reg;
	s->host = host;
	s->want = want;
	s->renew_ns = (renew_ms ? renew_ms : 2000) * 1000000ull;
	s->ls[0] = (struct listener){ cb, arg };
	tsr_mdsmap_init(&s->mds);
	pthread_mutex_init(&s->lock, NULL);
	tsr_cond_init_mono(&s->cond);
	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = tsr_now_ns() ^ (uint64_t)getpid() << 32;
	s->next = (size_t)(id % members->n);
	/* the caller's handle is set before any map can arrive: a listener
	 * may use it */
	*out = s;
	arm(s, 0); /* the first hunt, on the loop */
	if (s->timer == 0) {
		*out = NULL;
		tsr_mapsub_destroy(s);
		return tsr_errf(err, errlen, -ENOMEM, "map subscriber: out of memory");
	}
	return 0;
}

static void
free_cb(void *arg)
{
	struct tsr_mapsub *s = arg;

	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

void
tsr_mapsub_destroy(struct tsr_mapsub *s)
{
	if (s == NULL)
		return;
	s->dead = 1;
	if (s->timer)
		tsr_loop_timer_cancel(s->loop, s->timer);
	s->timer = 0;
	/* close waits for callbacks running on the messenger's threads:
	 * after it, only what they posted refers to s, and runs before
	 * free_cb */
	if (s->conn) {
		tsr_conn_close(s->conn);
		tsr_conn_put(s->conn);
		s->conn = NULL;
	}
	/* the maps go now, not with the posts: an epoch's placement
	 * instance belongs to the caller's registry, which may be gone by
	 * the time the loop runs them (a daemon's teardown) */
	pthread_mutex_lock(&s->lock);
	tsr_osdmap_epoch_put(s->osd);
	s->osd = NULL;
	tsr_mdsmap_free(&s->mds);
	s->have_mds = 0;
	pthread_mutex_unlock(&s->lock);
	if (tsr_loop_post(s->loop, free_cb, s) < 0)
		tsr_log(TSR_SUB_MON, TSR_LOG_WARN, "map subscriber: out of memory: "
			"its maps are left behind");
}

int
tsr_mapsub_listen(struct tsr_mapsub *s, tsr_mapsub_cb cb, void *arg)
{
	if (cb == NULL)
		return -EINVAL;
	for (size_t i = 0; i < TSR_MAPSUB_LISTENERS; i++)
		if (s->ls[i].cb == NULL) {
			s->ls[i] = (struct listener){ cb, arg };
			return 0;
		}
	return -ENOSPC;
}

void
tsr_mapsub_unlisten(struct tsr_mapsub *s, tsr_mapsub_cb cb, void *arg)
{
	for (size_t i = 0; i < TSR_MAPSUB_LISTENERS; i++)
		if (s->ls[i].cb == cb && s->ls[i].arg == arg) {
			s->ls[i] = (struct listener){ NULL, NULL };
			return;
		}
}

void
tsr_mapsub_stats_json(struct tsr_mapsub *s, struct tsr_sbuf *out)
{
	struct tsr_mapsub_stats st;

	tsr_mapsub_stats(s, &st);
	tsr_sbuf_printf(out, "\"osdmap_epoch\": %" PRIu64 ", \"fulls\": %" PRIu64
			", \"incs\": %" PRIu64 ", \"refused\": %" PRIu64,
			tsr_mapsub_epoch(s, TSR_MON_MAP_OSD), st.fulls, st.incs, st.refused);
}

int
tsr_mapsub_seed_osdmap(struct tsr_mapsub *s, const struct tsr_osdmap *m, char *err,
		       size_t errlen)
{
	struct tsr_osdmap copy;
	struct tsr_osdmap_epoch *ep;
	int rc;

	if (!(s->want & TSR_MON_SUB_OSD) || s->osd != NULL || m->epoch == 0)
		return tsr_errf(err, errlen, -EINVAL, "map subscriber: seeded twice, with "
				"no map, or without keeping the OSD map");
	if (tsr_osdmap_copy(&copy, m) < 0)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	rc = tsr_osdmap_epoch_create(&copy, s->reg, s->host, &ep, err, errlen);
	tsr_osdmap_free(&copy);
	if (rc < 0)
		return rc;
	set_osd(s, ep);
	return 0;
}

uint32_t
tsr_mapsub_want(const struct tsr_mapsub *s)
{
	return s->want;
}

uint64_t
tsr_mapsub_epoch(struct tsr_mapsub *s, int which)
{
	uint64_t e;

	pthread_mutex_lock(&s->lock);
	e = which >= 0 && which < TSR_MON_NMAPS ? epoch_of(s, which) : 0;
	pthread_mutex_unlock(&s->lock);
	return e;
}

int
tsr_mapsub_wait(struct tsr_mapsub *s, int which, uint64_t epoch, uint64_t timeout_ms)
{
	uint64_t end = tsr_mono_ns() + timeout_ms * 1000000u;
	int rc = 0;

	if (which < 0 || which >= TSR_MON_NMAPS)
		return -EINVAL;
	if (tsr_loop_current() == s->loop)
		return -EDEADLK;
	pthread_mutex_lock(&s->lock);
	while (epoch_of(s, which) < epoch) {
		if (tsr_mono_ns() >= end) {
			rc = -ETIMEDOUT;
			break;
		}
		tsr_cond_wait_until(&s->cond, &s->lock, end);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

struct tsr_osdmap_epoch *
tsr_mapsub_osdmap(struct tsr_mapsub *s)
{
	struct tsr_osdmap_epoch *ep;

	pthread_mutex_lock(&s->lock);
	ep = s->osd ? tsr_osdmap_epoch_get(s->osd) : NULL;
	pthread_mutex_unlock(&s->lock);
	return ep;
}

int
tsr_mapsub_mdsmap(struct tsr_mapsub *s, struct tsr_mdsmap *out)
{
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = s->have_mds ? tsr_mdsmap_copy(out, &s->mds) : -ENOENT;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void
tsr_mapsub_stats(struct tsr_mapsub *s, struct tsr_mapsub_stats *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->st;
	pthread_mutex_unlock(&s->lock);
}
