/* reserve.c — backfill reservations: how many backfills an OSD takes part
 * in at once (osd_max_backfills).
 *
 * A PG's primary that would backfill a member asks (the machine's
 * RESERVE action) for a slot of its own OSD's *local* reserver; once it
 * has one it sends BACKFILL_RESERVE to the member's OSD, whose *remote*
 * reserver grants a slot in turn and answers BACKFILL_GRANT; then the
 * machine is told (tsr_pgsm_reserved) and the backfill starts.  Its end
 * (the machine's RELEASE) frees the local slot and sends BACKFILL_RELEASE.
 * Both reservers are FIFO queues of osd_max_backfills slots, and apart:
 * a remote grant never waits for anything else, so two primaries that
 * each hold a local slot and wait for the other's OSD cannot deadlock.
 *
 * Nothing is lost for good when a daemon dies or a message goes: a
 * primary's new interval makes its machine release (RELEASE), and a
 * member's copy moving to a newer interval than a remote slot's, or
 * going, frees that slot (osd_resv_sweep) — an interval change reaches
 * every copy of the PG, and a dead OSD's slots die with it.
 *
 * Under rt->lock; the sends happen on the PG's shard (EV_RESV).
 */
#include "pgrt.h"

#include "log/log.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define LOGE(...) TSR_LOG_ERR(OSD, __VA_ARGS__)
#define LOGD(...) TSR_LOG_DEBUG(OSD, __VA_ARGS__)

static struct osd_reserver *
side(struct osd_pgrt *rt, int remote)
{
	return remote ? &rt->resv_remote : &rt->resv_local;
}

/* Grant free slots to the oldest requests whose copy is still here. */
static void
grant_some(struct osd_pgrt *rt, int remote)
{
	struct osd_reserver *r = side(rt, remote);

	for (size_t i = 0; i < r->n && r->held < rt->max_backfills;) {
		struct osd_resv *v = &r->v[i];
		struct pgi *g;
		struct ev *e;

		if (v->held) {
			i++;
			continue;
		}
		g = osd_pgi_find(rt, v->pgid);
		if (g == NULL || g->damaged) {
			memmove(v, v + 1, (r->n - i - 1) * sizeof(*v));
			r->n--;
			continue;
		}
		if ((e = calloc(1, sizeof(*e))) == NULL)
			return;          /* (kept: the next release grants it) */
		v->held = 1;
		r->held++;
		r->granted++;
		if (r->held > r->most_held)
			r->most_held = r->held;
		e->type = EV_RESV;
		e->g = g;
		e->rc = remote;
		e->m.from = v->peer;
		e->m.interval = v->interval;
		osd_pg_post(g, e);
		i++;
	}
}

/* Drop the requests of pgid toward (or from) peer (-1: any) whose
 * interval is below `below` (0: any); under lock.  How many held. */
static unsigned
drop_locked(struct osd_pgrt *rt, int remote, struct tsr_pgid pgid, int32_t peer,
	    uint64_t below, uint64_t *interval)
{
	struct osd_reserver *r = side(rt, remote);
	unsigned held = 0;

	for (size_t i = 0; i < r->n;) {
		struct osd_resv *v = &r->v[i];
		if (v->pgid.pool != pgid.pool || v->pgid.pg != pgid.pg ||
		    (peer >= 0 && v->peer != peer) || (below && v->interval >= below)) {
			i++;
			continue;
		}
		if (v->held) {
			held++;
			r->held--;
			if (interval)
				*interval = v->interval;
		}
		memmove(v, v + 1, (r->n - i - 1) * sizeof(*v));
		r->n--;
	}
	if (held)
		grant_some(rt, remote);
	return held;
}

static void
request(struct pgi *g, int remote, int32_t peer, uint64_t interval)
{
	struct osd_pgrt *rt = g->rt;
	struct osd_reserver *r = side(rt, remote);

	pthread_mutex_lock(&rt->lock);
	/* (asked again for the same: the first stands) */
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].pgid.pool == g->pgid.pool && r->v[i].pgid.pg == g->pgid.pg &&
		    r->v[i].peer == peer && r->v[i].interval == interval) {
			pthread_mutex_unlock(&rt->lock);
			return;
		}
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		struct osd_resv *v = realloc(r->v, cap * sizeof(*v));
		if (v == NULL) {
			pthread_mutex_unlock(&rt->lock);
			LOGE("pg %" PRId64 ".%x: no memory for a backfill reservation",
			     g->pgid.pool, g->pgid.pg);
			return;
		}
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (struct osd_resv){ g->pgid, interval, peer, 0 };
	grant_some(rt, remote);
	pthread_mutex_unlock(&rt->lock);
}

static void
send_plain(struct pgi *g, int type, int32_t to, uint64_t interval)
{
	struct tsr_pgmsg m;

	memset(&m, 0, sizeof(m));
	m.type = (uint8_t)type;
	m.pgid = g->pgid;
	m.from = g->rt->whoami;
	m.map_epoch = g->ep ? tsr_osdmap_epoch_number(g->ep) : 0;
	m.interval = interval;
	osd_pg_send(g, to, &m);
}

void
osd_resv_action(struct pgi *g, const struct tsr_pgsm_action *x)
{
	uint64_t interval = 0;
	unsigned held;

	if (x->type == TSR_PGSM_A_RESERVE) {
		request(g, 0, x->to, tsr_pgsm_info(g->sm)->same_interval_since);
		return;
	}
	pthread_mutex_lock(&g->rt->lock);
	held = drop_locked(g->rt, 0, g->pgid, x->to, 0, &interval);
	pthread_mutex_unlock(&g->rt->lock);
	/* (held: the member may have been asked; one never asked ignores it) */
	if (held)
		send_plain(g, TSR_PGMSG_BACKFILL_RELEASE, x->to, interval);
}

void
osd_resv_event(struct pgi *g, const struct ev *e)
{
	const struct osd_reserver *r = side(g->rt, e->rc);
	int still = 0;

	/* unless the request went meanwhile (a RELEASE, the copy's new
	 * interval): a grant sent means a slot held */
	pthread_mutex_lock(&g->rt->lock);
	for (size_t i = 0; i < r->n; i++) {
		const struct osd_resv *v = &r->v[i];
		still |= v->held && v->pgid.pool == g->pgid.pool && v->pgid.pg == g->pgid.pg &&
			 v->peer == e->m.from && v->interval == e->m.interval;
	}
	pthread_mutex_unlock(&g->rt->lock);
	if (!still)
		return;
	/* a remote slot: the primary may start; a local one: ask the member */
	send_plain(g, e->rc ? TSR_PGMSG_BACKFILL_GRANT : TSR_PGMSG_BACKFILL_RESERVE, e->m.from,
		   e->m.interval);
}

int
osd_resv_msg(struct pgi *g, const struct tsr_pgmsg *m)
{
	const struct tsr_pg_info *in = tsr_pgsm_info(g->sm);

	switch (m->type) {
	case TSR_PGMSG_BACKFILL_RESERVE:
		/* (for an interval this copy has left: it is over.  A member's
		 * interval begins where its primary's does: joining the acting
		 * set, or restarting, starts one for every copy) */
		if (m->interval >= in->same_interval_since)
			request(g, 1, m->from, m->interval);
		else
			LOGD("pg %" PRId64 ".%x: a backfill reservation from osd.%d for the "
			     "interval of epoch %" PRIu64 " refused: this copy is in %" PRIu64,
			     g->pgid.pool, g->pgid.pg, m->from, m->interval, in->same_interval_since);
		return 0;
	case TSR_PGMSG_BACKFILL_RELEASE:
		pthread_mutex_lock(&g->rt->lock);
		(void)drop_locked(g->rt, 1, g->pgid, m->from, m->interval + 1, NULL);
		pthread_mutex_unlock(&g->rt->lock);
		return 0;
	case TSR_PGMSG_BACKFILL_GRANT:
		return tsr_pgsm_reserved(g->sm, m->from, m->interval);
	}
	return 0;
}

void
osd_resv_sweep(struct pgi *g)
{
	if (g->gone || g->damaged) {
		(void)drop_locked(g->rt, 0, g->pgid, -1, 0, NULL);
		(void)drop_locked(g->rt, 1, g->pgid, -1, 0, NULL);
	} else if (g->sis) {
		/* a primary's machine releases at its new interval; this is the
		 * backstop should that RELEASE have been lost */
		(void)drop_locked(g->rt, 0, g->pgid, -1, g->sis, NULL);
		(void)drop_locked(g->rt, 1, g->pgid, -1, g->sis, NULL);
	}
}

void
osd_resv_status(struct osd_pgrt *rt, struct tsr_sbuf *out)
{
	tsr_sbuf_printf(out, "{\"max\": %u", rt->max_backfills);
	for (int remote = 0; remote < 2; remote++) {
		const struct osd_reserver *r = side(rt, remote);
		tsr_sbuf_printf(out, ", \"%s\": {\"held\": %u, \"waiting\": %zu, \"most_held\": %u, "
				"\"granted\": %" PRIu64 "}", remote ? "remote" : "local", r->held,
				r->n - r->held, r->most_held, r->granted);
	}
	tsr_sbuf_printf(out, "}");
}

void
osd_resv_free(struct osd_pgrt *rt)
{
	free(rt->resv_local.v);
	free(rt->resv_remote.v);
	memset(&rt->resv_local, 0, sizeof(rt->resv_local));
	memset(&rt->resv_remote, 0, sizeof(rt->resv_remote));
}
