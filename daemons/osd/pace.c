/* pace.c — the recovery bandwidth of an OSD (osd_recovery_max_bytes):
 * the objects it pushes to other OSDs (recovery, backfill, answers to
 * pulls) go out at no more than that many bytes a second, so the disks
 * and the network keep room for the clients.
 *
 * A token bucket, filled on the loop's timer (osd_pace_tick), at most a
 * tenth of a second's worth ahead; a push goes at once while the bucket
 * is not empty (it may overdraw it by one object), else it waits in a
 * queue, and the timer hands it to its PG's shard (EV_SEND) as tokens
 * come.  A PG's messages to one peer keep their order: behind a push that
 * waits, every later message of that PG to that peer waits too (the
 * machine counts on a session's order, pgsm.h) — but for a replicated
 * write and its answer (REPOP, REPOP_REPLY), so that clients' writes do
 * not queue behind recovery.  Those may pass a push: a write never
 * concerns an object being pushed (the machine holds writes to an object
 * until its recovery, or its backfill window, is over), and the rest of
 * the flow keeps its order.  The machine sees a slower network, nothing
 * else: its own limit (osd_recovery_max_active) keeps what waits here
 * small.
 *
 * Under rt->lock.
 */
#include "pgrt.h"

#include "event/workq.h"
#include "log/log.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct paced {
	struct paced *next;
	int32_t to;
	struct tsr_osdmap_epoch *ep;
	struct tsr_pgmsg m;
	struct tsr_rbuf *pl;
	size_t bytes;                /* what it costs (a push's object) */
};

static struct pace_flow *
flow_find(struct osd_pgrt *rt, struct tsr_pgid pgid, int32_t to, int make)
{
	struct pace_flow *f;

	for (size_t i = 0; i < rt->pace.nflows; i++) {
		f = &rt->pace.flows[i];
		if (f->pgid.pool == pgid.pool && f->pgid.pg == pgid.pg && f->to == to)
			return f;
	}
	if (!make)
		return NULL;
	if (rt->pace.nflows == rt->pace.capflows) {
		size_t cap = rt->pace.capflows ? 2 * rt->pace.capflows : 16;
		f = realloc(rt->pace.flows, cap * sizeof(*f));
		if (f == NULL)
			return NULL;
		rt->pace.flows = f;
		rt->pace.capflows = cap;
	}
	f = &rt->pace.flows[rt->pace.nflows++];
	memset(f, 0, sizeof(*f));
	f->pgid = pgid;
	f->to = to;
	return f;
}

static void
flow_done(struct osd_pgrt *rt, struct tsr_pgid pgid, int32_t to)
{
	struct pace_flow *f = flow_find(rt, pgid, to, 0);

	if (f && --f->n == 0) {
		*f = rt->pace.flows[--rt->pace.nflows];
	}
}

static void
refill(struct osd_pgrt *rt)
{
	uint64_t now = tsr_now_ns();
	double burst = (double)rt->pace.bps / 10;

	rt->pace.tokens += (double)rt->pace.bps * (double)(now - rt->pace.refill_ns) / 1e9;
	if (rt->pace.tokens > burst)
		rt->pace.tokens = burst;
	rt->pace.refill_ns = now;
}

static void
paced_free(struct paced *p)
{
	tsr_rbuf_put(p->pl);
	tsr_osdmap_epoch_put(p->ep);
	tsr_pgmsg_free(&p->m);
	free(p);
}

int
osd_pace(struct osd_pgrt *rt, const struct tsr_osdmap_epoch *ep, int32_t to,
	 const struct tsr_pgmsg *m, struct tsr_rbuf *pl)
{
	size_t bytes = m->type == TSR_PGMSG_PUSH && pl ? pl->len : 0;
	struct pace_flow *f;
	struct paced *p;

	if (__atomic_load_n(&rt->pace.bps, __ATOMIC_RELAXED) == 0 ||
	    m->type == TSR_PGMSG_REPOP || m->type == TSR_PGMSG_REPOP_REPLY) {
		if (bytes)              /* (counted with or without a limit) */
			__atomic_add_fetch(&rt->pace.bytes, bytes, __ATOMIC_RELAXED);
		return -EAGAIN;
	}
	pthread_mutex_lock(&rt->lock);
	f = flow_find(rt, m->pgid, to, 0);
	if (f == NULL || f->n == 0) {
		if (bytes == 0) {
			pthread_mutex_unlock(&rt->lock);
			return -EAGAIN;
		}
		refill(rt);
		if (rt->pace.tokens > 0) {
			rt->pace.tokens -= (double)bytes;
			__atomic_add_fetch(&rt->pace.bytes, bytes, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&rt->lock);
			return -EAGAIN;
		}
	}
	pthread_mutex_unlock(&rt->lock);
	/* it waits: a copy */
	p = tsr_xcalloc(1, sizeof(*p));
	if (tsr_pgmsg_clone(m, &p->m) < 0) {
		free(p);
		return -EAGAIN; /* (no memory) sent at once */
	}
	p->to = to;
	p->pl = pl;
	p->bytes = bytes;
	p->ep = tsr_osdmap_epoch_get((struct tsr_osdmap_epoch *)ep);
	pthread_mutex_lock(&rt->lock);
	if ((f = flow_find(rt, m->pgid, to, 1)) == NULL) {
		pthread_mutex_unlock(&rt->lock);
		p->pl = NULL;            /* (the caller's: it sends it at once) */
		paced_free(p);
		return -EAGAIN;
	}
	f->n++;
	*rt->pace.tail = p;
	rt->pace.tail = &p->next;
	rt->pace.queued++;
	rt->pace.waits += bytes != 0;
	pthread_mutex_unlock(&rt->lock);
	return 0;
}

void
osd_pgrt_pace_tick(struct osd_pgrt *rt)
{
	pthread_mutex_lock(&rt->lock);
	if (rt->pace.bps == 0 && rt->pace.q == NULL) {
		pthread_mutex_unlock(&rt->lock);
		return;
	}
	refill(rt);
	while (rt->pace.q && (rt->pace.q->bytes == 0 || rt->pace.tokens > 0 || rt->pace.bps == 0)) {
		struct paced *p = rt->pace.q;
		struct pgi *g = osd_pgi_find(rt, p->m.pgid);
		struct ev *e;

		if ((rt->pace.q = p->next) == NULL)
			rt->pace.tail = &rt->pace.q;
		rt->pace.queued--;
		rt->pace.tokens -= (double)p->bytes;
		if (g == NULL || g->damaged || (e = calloc(1, sizeof(*e))) == NULL) {
			flow_done(rt, p->m.pgid, p->to);
			paced_free(p);
			continue;
		}
		__atomic_add_fetch(&rt->pace.bytes, p->bytes, __ATOMIC_RELAXED);
		e->type = EV_SEND;
		e->g = g;
		e->paced = p;
		/* not osd_pg_post: a failed post frees the event through
		 * osd_pace_drop, which takes rt->lock, held here */
		if (tsr_workq_post(g->q, osd_pg_run, e) < 0) {
			flow_done(rt, p->m.pgid, p->to);
			paced_free(p);
			free(e);
		}
	}
	pthread_mutex_unlock(&rt->lock);
}

void
osd_pace_send(struct pgi *g, struct ev *e)
{
	struct paced *p = e->paced;

	e->paced = NULL;
	osd_pg_send_now(g->rt, p->ep, p->to, &p->m, p->pl);
	p->pl = NULL;                    /* (send_now took it) */
	pthread_mutex_lock(&g->rt->lock);
	flow_done(g->rt, p->m.pgid, p->to);
	pthread_mutex_unlock(&g->rt->lock);
	paced_free(p);
}

void
osd_pace_drop(struct osd_pgrt *rt, struct ev *e)
{
	struct paced *p = e->paced;

	e->paced = NULL;
	pthread_mutex_lock(&rt->lock);
	flow_done(rt, p->m.pgid, p->to);
	pthread_mutex_unlock(&rt->lock);
	paced_free(p);
}

void
osd_pace_status(struct osd_pgrt *rt, struct tsr_sbuf *out)
{
	tsr_sbuf_printf(out, "{\"max_bytes_per_sec\": %" PRIu64 ", \"bytes\": %" PRIu64
			", \"waits\": %" PRIu64 ", \"waiting\": %zu}", rt->pace.bps,
			__atomic_load_n(&rt->pace.bytes, __ATOMIC_RELAXED), rt->pace.waits,
			rt->pace.queued);
}

void
osd_pace_free(struct osd_pgrt *rt)
{
	while (rt->pace.q) {
		struct paced *p = rt->pace.q;
		rt->pace.q = p->next;
		paced_free(p);
	}
	rt->pace.tail = &rt->pace.q;
	free(rt->pace.flows);
	rt->pace.flows = NULL;
	rt->pace.nflows = rt->pace.capflows = 0;
}
