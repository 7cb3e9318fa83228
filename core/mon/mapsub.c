/* mapsub.c — the map subscriber (mapsub.h). */
#include "mon/mapsub.h"
#include "mon/monmsg.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define TRY_NS (3000ull * 1000000u)  /* a monitor's time to answer */
#define PAUSE_NS (200ull * 1000000u) /* between rounds of monitors that failed */

struct tsr_mapsub {
	struct tsr_mon_members members;
	struct tsr_msgr *msgr;
	uint32_t want;
	uint64_t renew_ns;
	tsr_mapsub_cb cb;
	void *arg;

	pthread_t thread;
	int started;
	pthread_mutex_t lock;        /* everything below */
	pthread_cond_t cond;
	int stop;
	struct tsr_conn *conn;       /* the session to the monitor, held */
	int bad;                     /* it failed or refused: find another */
	char hint[64];               /* a refusal's leader address */
	size_t next;                 /* the next member to try */
	size_t failed_in_row;
	uint64_t tid, awaiting;      /* the request not answered yet (0: none) */
	uint64_t asked_at, renewed_at;
	int need_full[TSR_MON_NMAPS];
	int have[TSR_MON_NMAPS];
	struct tsr_osdmap osd;
	struct tsr_mdsmap mds;
	struct tsr_mapsub_stats st;
};

static uint64_t
epoch_of(const struct tsr_mapsub *s, int which)
{
	if (!s->have[which])
		return 0;
	return which == TSR_MON_MAP_OSD ? s->osd.epoch : s->mds.epoch;
}

/* Apply one full map (full) or incremental of which; 1 if the epoch moved,
 * 0 if it was old news, -errno if it does not apply (-ENOENT: an
 * incremental with no map to apply it to). */
static int
take(struct tsr_mapsub *s, int which, int full, const void *p, size_t n)
{
	uint64_t cur = epoch_of(s, which);
	char err[256];
	int rc;

	if (which == TSR_MON_MAP_OSD && full) {
		struct tsr_osdmap m;
		if ((rc = tsr_osdmap_decode(p, n, &m, err, sizeof(err))) < 0)
			return rc;
		if (s->have[which] && m.epoch <= cur) {
			tsr_osdmap_free(&m);
			return 0;
		}
		tsr_osdmap_free(&s->osd);
		s->osd = m;
	} else if (which == TSR_MON_MAP_OSD) {
		struct tsr_osdmap_inc inc;
		if ((rc = tsr_osdmap_inc_decode(p, n, &inc, err, sizeof(err))) < 0)
			return rc;
		rc = !s->have[which] ? -ENOENT : inc.epoch <= cur ? 0 :
		     tsr_osdmap_apply(&s->osd, &inc, err, sizeof(err)) == 0 ? 1 : -EINVAL;
		tsr_osdmap_inc_free(&inc);
		if (rc <= 0)
			return rc;
	} else if (full) {
		struct tsr_mdsmap m;
		if ((rc = tsr_mdsmap_decode(p, n, &m, err, sizeof(err))) < 0)
			return rc;
		if (s->have[which] && m.epoch <= cur) {
			tsr_mdsmap_free(&m);
			return 0;
		}
		tsr_mdsmap_free(&s->mds);
		s->mds = m;
	} else {
		struct tsr_mdsmap_inc inc;
		if ((rc = tsr_mdsmap_inc_decode(p, n, &inc, err, sizeof(err))) < 0)
			return rc;
		rc = !s->have[which] ? -ENOENT : inc.epoch <= cur ? 0 :
		     tsr_mdsmap_apply(&s->mds, &inc, err, sizeof(err)) == 0 ? 1 : -EINVAL;
		tsr_mdsmap_inc_free(&inc);
		if (rc <= 0)
			return rc;
	}
	s->have[which] = 1;
	return 1;
}

static void
on_maps(struct tsr_conn *conn, struct tsr_msg *m, void *arg)
{
	struct tsr_mapsub *s = arg;
	struct tsr_mon_maps mm;
	char err[256];
	static const uint8_t none[1];
	const uint8_t *data = m->data_len ? m->data_iov[0].iov_base : none;
	int moved = 0, full = 0, which;
	uint64_t epoch = 0;

	if (tsr_monmsg_maps_decode(m->front, m->front_len, m->data_len, &mm, err,
				   sizeof(err)) < 0) {
		/* a broken message counts as none: the renewal times out */
		tsr_msg_free(m, 0);
		return;
	}
	if (m->data_len && m->data_iovcnt != 1)
		goto out;
	which = mm.which;
	pthread_mutex_lock(&s->lock);
	if (conn != s->conn) {
		pthread_mutex_unlock(&s->lock);
		goto out;
	}
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
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
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
				s->st.refused++;
				s->need_full[which] = 1;
				break;
			}
			moved |= rc;
			if (rc > 0)
				*(mm.full ? &s->st.fulls : &s->st.incs) += 1;
		}
		full = mm.full;
		epoch = epoch_of(s, which);
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (moved && s->cb)
		s->cb(s->arg, which, epoch, full);
out:
	tsr_monmsg_maps_free(&mm);
	tsr_msg_free(m, 0);
}

static void
on_fault(struct tsr_conn *conn, int err, void *arg)
{
	struct tsr_mapsub *s = arg;

	(void)err;
	pthread_mutex_lock(&s->lock);
	if (conn == s->conn) {
		s->bad = 1;
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
}

/* The subscription request for the maps held (lock held). */
static struct tsr_msg *
sub_msg(struct tsr_mapsub *s)
{
	struct tsr_mon_sub rq = { .tid = ++s->tid, .want = s->want | TSR_MON_SUB_KEEP };
	struct tsr_enc e;

	for (int w = 0; w < TSR_MON_NMAPS; w++) {
		rq.have[w] = s->need_full[w] ? 0 : epoch_of(s, w);
		s->need_full[w] = 0;
	}
	s->awaiting = rq.tid;
	s->asked_at = tsr_mono_ns();
	tsr_enc_init(&e);
	tsr_monmsg_sub_encode(&e, &rq);
	return tsr_msg_from_enc(TSR_MSG_MON_SUB, &e);
}

/* The worker: keep one session subscribed, renew it, move on when it
 * fails. */
static void *
worker(void *arg)
{
	struct tsr_mapsub *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		uint64_t now = tsr_mono_ns();
		struct tsr_conn *send_on = NULL;
		struct tsr_msg *m = NULL;

		if (s->conn && (s->bad || (s->awaiting && now - s->asked_at > TRY_NS))) {
			struct tsr_conn *c = s->conn;
			s->conn = NULL;
			s->st.mon[0] = '\0';
			s->failed_in_row++;
			pthread_mutex_unlock(&s->lock);
			tsr_conn_close(c);
			tsr_conn_put(c);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		if (s->conn == NULL) {
			const struct tsr_mon_member *t =
				tsr_mon_members_by_addr(&s->members, s->hint);
			struct tsr_conn *c;
			int rc;

			if (s->failed_in_row >= s->members.n) {
				/* a round of failures: a pause before the next */
				s->failed_in_row = 0;
				tsr_cond_wait_until(&s->cond, &s->lock, now + PAUSE_NS);
				continue;
			}
			if (t == NULL)
				t = &s->members.m[s->next++ % s->members.n];
			s->hint[0] = '\0';
			pthread_mutex_unlock(&s->lock);
			char who[TSR_MON_NAME_MAX + 8];
			tsr_mon_member_entity(t, who, sizeof(who));
			rc = tsr_msgr_connect_to(s->msgr, t->addr, who, 0, &c);
			pthread_mutex_lock(&s->lock);
			if (rc < 0) {
				s->failed_in_row++;
				continue;
			}
			s->conn = c;
			s->bad = 0;
			s->st.hunts++;
			tsr_strlcpy(s->st.mon, t->addr, sizeof(s->st.mon));
			m = sub_msg(s);
		} else if (!s->awaiting &&
			   (s->need_full[0] || s->need_full[1] ||
			    now - s->renewed_at >= s->renew_ns)) {
			s->st.renewals++;
			m = sub_msg(s);
		}
		if (m) {
			send_on = s->conn;
			tsr_conn_get(send_on);
			pthread_mutex_unlock(&s->lock);
			if (tsr_conn_send(send_on, m, TSR_SEND_NOWAIT) < 0) {
				pthread_mutex_lock(&s->lock);
				if (s->conn == send_on)
					s->bad = 1;
				pthread_mutex_unlock(&s->lock);
			}
			tsr_conn_put(send_on);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		uint64_t until = s->awaiting ? s->asked_at + TRY_NS
					     : s->renewed_at + s->renew_ns;
		if (until > now + s->renew_ns)
			until = now + s->renew_ns;
		/* a full map wanted is asked for once the request in flight
		 * is answered: until then, wait like any other time */
		if (!s->bad && !s->stop &&
		    (s->awaiting || (!s->need_full[0] && !s->need_full[1])))
			tsr_cond_wait_until(&s->cond, &s->lock, until);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int
tsr_mapsub_create(const struct tsr_mon_members *members,
		  const struct tsr_msgr_opts *opts, uint32_t want, uint32_t renew_ms,
		  tsr_mapsub_cb cb, void *arg, struct tsr_mapsub **out, char *err,
		  size_t errlen)
{
	struct tsr_msgr_events ev = { .fault = on_fault };
	struct tsr_msgr_opts o = *opts;
	struct tsr_mapsub *s;
	uint64_t id;
	int rc;

	if (members->n == 0 || (want & ~(TSR_MON_SUB_OSD | TSR_MON_SUB_MDS)) || !want)
		return tsr_errf(err, errlen, -EINVAL, "map subscriber: no monitors, "
				"or no map wanted");
	s = tsr_xcalloc(1, sizeof(*s));
	s->members = *members;
	s->want = want;
	s->renew_ns = (renew_ms ? renew_ms : 2000) * 1000000ull;
	s->cb = cb;
	s->arg = arg;
	tsr_osdmap_init(&s->osd);
	tsr_mdsmap_init(&s->mds);
	pthread_mutex_init(&s->lock, NULL);
	tsr_cond_init_mono(&s->cond);
	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = tsr_now_ns() ^ (uint64_t)getpid() << 32;
	s->next = (size_t)(id % members->n);
	o.entity_type = TSR_ENTITY_TOOL;
	o.entity_id = id >> 1;
	o.bind = NULL;
	o.workers = 1;
	o.dispatchers = 1;
	ev.arg = s;
	rc = tsr_msgr_create(&o, &ev, &s->msgr, err, errlen);
	if (rc == 0)
		rc = tsr_msgr_register(s->msgr, TSR_MSG_MON_MAPS, on_maps, s, 0);
	if (rc == 0) {
		/* the caller's handle is set before any map can arrive: a
		 * callback may use it */
		*out = s;
		tsr_msgr_start(s->msgr);
		if ((rc = -pthread_create(&s->thread, NULL, worker, s)) < 0)
			tsr_errf(err, errlen, rc, "map subscriber: starting its "
				 "thread: %s", strerror(-rc));
		s->started = rc == 0;
	}
	if (rc < 0) {
		*out = NULL;
		tsr_mapsub_destroy(s);
		return rc;
	}
	return 0;
}

void
tsr_mapsub_destroy(struct tsr_mapsub *s)
{
	if (s == NULL)
		return;
	if (s->started) {
		pthread_mutex_lock(&s->lock);
		s->stop = 1;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	if (s->conn) {
		tsr_conn_close(s->conn);
		tsr_conn_put(s->conn);
		s->conn = NULL;
	}
	tsr_msgr_destroy(s->msgr);
	tsr_osdmap_free(&s->osd);
	tsr_mdsmap_free(&s->mds);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
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

int
tsr_mapsub_osdmap(struct tsr_mapsub *s, struct tsr_osdmap *out)
{
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = s->have[TSR_MON_MAP_OSD] ? tsr_osdmap_copy(out, &s->osd) : -ENOENT;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int
tsr_mapsub_mdsmap(struct tsr_mapsub *s, struct tsr_mdsmap *out)
{
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = s->have[TSR_MON_MAP_MDS] ? tsr_mdsmap_copy(out, &s->mds) : -ENOENT;
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
