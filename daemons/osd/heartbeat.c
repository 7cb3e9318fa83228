/* heartbeat.c — an OSD pings the OSDs it shares placement groups with and
 * reports the silent ones to the monitors (osd.h).
 *
 * Peers: the other members of the acting sets of this OSD's PGs that are
 * up in the map, at the address the map gives (osd_hb_peers, after each
 * epoch).  Every osd_heartbeat_interval each gets an OSD_PING on a lossy
 * session of the OSD's messenger; the peer answers OSD_PING_REPLY from
 * its I/O thread (nothing to wait for), and the answer's arrival is
 * posted to the loop.  A peer is silent once it has answered nothing for
 * osd_heartbeat_grace — counted from its last answer, or from the first
 * ping when none came — and each beacon carries the silent ones to the
 * monitors (core/beacon/osdbeacon.c), which mark an OSD down once
 * mon_osd_min_down_reporters report it within its grace.  So a hung or
 * cut-off OSD is down about osd_heartbeat_grace plus a beacon interval
 * after it stopped answering, well before its own beacons' grace
 * (mon_osd_beacon_grace) runs out.  A session without an answer for two
 * intervals is made anew (lossy sessions do not come back by themselves).
 *
 * Hostile input: a ping must come from the OSD its session proved it is
 * (its key, "osd.N"), and an answer on the session we opened to the OSD
 * it names; else it is dropped (pings logged at a rate).
 *
 * Threads: the peer table, the timer and the counts belong to the loop;
 * the handler runs on I/O threads and only answers or posts.  A post
 * still pending when the module stops holds the wake, not the module.
 */
#include "osd.h"
#include "auth/auth.h"
#include "event/loop.h"
#include "log/log.h"
#include "msg/msgr.h"
#include "osd/osdmsg.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hb_peer {
	int32_t id;
	char addr[TSR_OSDMAP_NAME];
	struct tsr_conn *conn;      /* held; lossy: made anew when it goes quiet */
	uint64_t conn_at;           /* when conn was made (mono ns) */
	uint64_t first_ping;        /* mono ns of the first ping (0: none yet) */
	uint64_t last_reply;        /* mono ns of the last answer (0: none) */
	uint64_t rtt_ns;            /* the last answer's round trip */
};

/* What a reply's post holds: the module while it lives (hb NULL after). */
struct hb_wake {
	pthread_mutex_t mu;
	unsigned refs;              /* the module's, and one per pending post */
	struct osd_hb *hb;
};

struct osd_hb {
	struct tsr_loop *loop;
	struct tsr_msgr *msgr;
	int32_t whoami;
	uint64_t interval_ns, grace_ns;
	uint64_t epoch;             /* of the peer set, sent in pings */
	struct hb_peer *peers;      /* by id */
	size_t npeers;
	uint64_t timer;
	uint64_t pings, replies;
	struct hb_wake *wake;
};

struct hb_reply {
	struct hb_wake *w;
	struct tsr_conn *conn;      /* held: the session it came on */
	int32_t from;
	uint64_t stamp;
};

static struct tsr_log_rate hb_refusals = TSR_LOG_RATE_INIT(5, 10000);

static void
wake_put(struct hb_wake *w)
{
	unsigned left;

	pthread_mutex_lock(&w->mu);
	left = --w->refs;
	pthread_mutex_unlock(&w->mu);
	if (left == 0) {
		pthread_mutex_destroy(&w->mu);
		free(w);
	}
}

/* Did the session prove it is osd.from (its key)? */
static bool
proved_osd(struct tsr_conn *c, int32_t from)
{
	char id[16];

	snprintf(id, sizeof(id), "%d", from);
	return tsr_auth_is(tsr_conn_peer_auth(c), "osd", id);
}

static struct hb_peer *
peer_find(struct osd_hb *hb, int32_t id)
{
	size_t lo = 0, hi = hb->npeers;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (hb->peers[mid].id == id)
			return &hb->peers[mid];
		if (hb->peers[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* An answer arrived (the loop). */
static void
run_reply(void *arg)
{
	struct hb_reply *r = arg;
	struct osd_hb *hb = r->w->hb;
	struct hb_peer *p;

	/* an answer counts on the session we opened to that peer: the
	 * acceptor proved a key of the OSDs' domain, and we dialed the
	 * address the map gives for r->from */
	if (hb != NULL && (p = peer_find(hb, r->from)) != NULL && p->conn == r->conn) {
		uint64_t now = tsr_mono_ns();
		p->last_reply = now;
		p->rtt_ns = now > r->stamp ? now - r->stamp : 0;
		hb->replies++;
	}
	tsr_conn_put(r->conn);
	wake_put(r->w);
	free(r);
}

/* OSD_PING or OSD_PING_REPLY (an I/O thread). */
static void
on_ping(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	struct osd_hb *hb = arg;
	struct tsr_osd_ping p;
	char err[128] = "";

	/* a ping comes on a session its sender opened, which proved its
	 * name; an answer on one we opened (checked on the loop) */
	if (tsr_osdmsg_ping_decode(m->front, m->front_len, &p, err, sizeof(err)) < 0 ||
	    (m->type == TSR_MSG_OSD_PING && !proved_osd(c, p.from))) {
		tsr_log_rated(&hb_refusals, TSR_SUB_OSD, TSR_LOG_WARN, "%s: %s; dropped",
			      tsr_conn_peer(c), err[0] ? err : "a heartbeat naming "
			      "another OSD than the session's key");
		tsr_msg_free(m, 0);
		return;
	}
	if (m->type == TSR_MSG_OSD_PING) {
		struct tsr_osd_ping r = { .from = hb->whoami,
					  .epoch = __atomic_load_n(&hb->epoch, __ATOMIC_RELAXED),
					  .stamp = p.stamp };
		struct tsr_msg *rm;
		struct tsr_enc e;

		tsr_enc_init(&e);
		if (tsr_osdmsg_ping_encode(&e, &r) == 0 &&
		    (rm = tsr_msg_from_enc(TSR_MSG_OSD_PING_REPLY, &e)) != NULL)
			tsr_conn_send(c, rm, TSR_SEND_NOWAIT); /* lost: it pings again */
		else
			tsr_enc_release(&e);
	} else {
		struct hb_reply *r = malloc(sizeof(*r));
		struct hb_wake *w = hb->wake;

		if (r != NULL) {
			pthread_mutex_lock(&w->mu);
			w->refs++;
			pthread_mutex_unlock(&w->mu);
			tsr_conn_get(c);
			*r = (struct hb_reply){ w, c, p.from, p.stamp };
			if (tsr_loop_post(hb->loop, run_reply, r) < 0) {
				tsr_conn_put(c);
				wake_put(w);
				free(r); /* as if lost on the wire */
			}
		}
	}
	tsr_msg_free(m, 0);
}

static void
peer_drop_conn(struct hb_peer *p)
{
	if (p->conn) {
		tsr_conn_close(p->conn);
		tsr_conn_put(p->conn);
	}
	p->conn = NULL;
}

static void tick(void *arg);

static void
arm(struct osd_hb *hb)
{
	if (tsr_loop_timer_add(hb->loop, hb->interval_ns, tick, hb, &hb->timer) < 0) {
		hb->timer = 0;
		tsr_log(TSR_SUB_OSD, TSR_LOG_ERROR, "osd.%d: out of memory for the "
			"heartbeat timer: no more heartbeats", hb->whoami);
	}
}

/* Ping every peer (the loop, every interval). */
static void
tick(void *arg)
{
	struct osd_hb *hb = arg;
	uint64_t now = tsr_mono_ns();

	hb->timer = 0;
	for (size_t i = 0; i < hb->npeers; i++) {
		struct hb_peer *p = &hb->peers[i];
		struct tsr_osd_ping ping = { hb->whoami, hb->epoch, now };
		uint64_t heard = p->last_reply > p->conn_at ? p->last_reply : p->conn_at;
		char target[32];
		struct tsr_msg *m;
		struct tsr_enc e;

		if (p->conn && now - heard > 2 * hb->interval_ns)
			peer_drop_conn(p);
		if (p->conn == NULL) {
			snprintf(target, sizeof(target), "osd.%d", p->id);
			if (tsr_msgr_connect_to(hb->msgr, p->addr, target, 0, &p->conn) < 0)
				p->conn = NULL;
			p->conn_at = now;
		}
		if (p->first_ping == 0)
			p->first_ping = now;
		if (p->conn == NULL)
			continue;
		tsr_enc_init(&e);
		if (tsr_osdmsg_ping_encode(&e, &ping) < 0 ||
		    (m = tsr_msg_from_enc(TSR_MSG_OSD_PING, &e)) == NULL) {
			tsr_enc_release(&e);
			continue;
		}
		if (tsr_conn_send(p->conn, m, TSR_SEND_NOWAIT) < 0)
			peer_drop_conn(p);
		else
			hb->pings++;
	}
	arm(hb);
}

int
osd_hb_create(struct tsr_loop *loop, struct tsr_msgr *msgr, int32_t whoami,
	      uint64_t interval_ns, uint64_t grace_ns, struct osd_hb **out,
	      char *err, size_t errlen)
{
	struct osd_hb *hb = tsr_xcalloc(1, sizeof(*hb));

	hb->loop = loop;
	hb->msgr = msgr;
	hb->whoami = whoami;
	hb->interval_ns = interval_ns;
	hb->grace_ns = grace_ns;
	hb->wake = tsr_xcalloc(1, sizeof(*hb->wake));
	pthread_mutex_init(&hb->wake->mu, NULL);
	hb->wake->refs = 1;
	hb->wake->hb = hb;
	if (tsr_msgr_register(msgr, TSR_MSG_OSD_PING, on_ping, hb, TSR_MSGR_INLINE) < 0 ||
	    tsr_msgr_register(msgr, TSR_MSG_OSD_PING_REPLY, on_ping, hb,
			      TSR_MSGR_INLINE) < 0) {
		osd_hb_destroy(hb);
		return tsr_errf(err, errlen, -ENOMEM, "heartbeat: cannot register "
				"its messages");
	}
	arm(hb);
	*out = hb;
	return 0;
}

void
osd_hb_destroy(struct osd_hb *hb)
{
	if (hb == NULL)
		return;
	if (hb->timer)
		tsr_loop_timer_cancel(hb->loop, hb->timer);
	for (size_t i = 0; i < hb->npeers; i++)
		peer_drop_conn(&hb->peers[i]);
	free(hb->peers);
	pthread_mutex_lock(&hb->wake->mu);
	hb->wake->hb = NULL;
	pthread_mutex_unlock(&hb->wake->mu);
	wake_put(hb->wake);
	free(hb);
}

static int
id_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return x < y ? -1 : x > y;
}

void
osd_hb_peers(struct osd_hb *hb, const struct tsr_osdmap_epoch *ep,
	     const struct osd_pg *pgs, size_t npgs)
{
	const struct tsr_osdmap *m = tsr_osdmap_epoch_map(ep);
	int32_t *ids = NULL;
	size_t n = 0, k = 0;
	struct hb_peer *np;

	for (size_t i = 0; i < npgs; i++)
		n += pgs[i].nacting;
	if (n && (ids = malloc(n * sizeof(*ids))) == NULL)
		return; /* keep the peers we have */
	n = 0;
	for (size_t i = 0; i < npgs; i++)
		for (uint32_t j = 0; j < pgs[i].nacting; j++)
			if (pgs[i].acting[j] != hb->whoami)
				ids[n++] = pgs[i].acting[j];
	if (n > 1)
		qsort(ids, n, sizeof(*ids), id_cmp);
	np = calloc(n ? n : 1, sizeof(*np));
	if (np == NULL) {
		free(ids);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct tsr_osdmap_osd *o;
		struct hb_peer *old;

		if (i > 0 && ids[i] == ids[i - 1])
			continue;
		o = tsr_osdmap_osd(m, ids[i]);
		if (o == NULL || !o->up || o->addr[0] == '\0')
			continue;
		old = peer_find(hb, ids[i]);
		if (old != NULL && strcmp(old->addr, o->addr) == 0) {
			np[k++] = *old;   /* its session and history come along */
			old->conn = NULL;
			continue;
		}
		np[k].id = ids[i];
		tsr_strlcpy(np[k].addr, o->addr, sizeof(np[k].addr));
		k++;
	}
	for (size_t i = 0; i < hb->npeers; i++)
		peer_drop_conn(&hb->peers[i]);   /* those no longer peers */
	free(hb->peers);
	free(ids);
	hb->peers = np;
	hb->npeers = k;
	/* read by the I/O threads' answers */
	__atomic_store_n(&hb->epoch, tsr_osdmap_epoch_number(ep), __ATOMIC_RELAXED);
}

uint32_t
osd_hb_failed(void *arg, int32_t *ids, uint32_t max)
{
	struct osd_hb *hb = arg;
	uint64_t now = tsr_mono_ns();
	uint32_t n = 0;

	for (size_t i = 0; i < hb->npeers && n < max; i++) {
		const struct hb_peer *p = &hb->peers[i];
		uint64_t since = p->last_reply ? p->last_reply : p->first_ping;

		if (since && now - since > hb->grace_ns)
			ids[n++] = p->id;
	}
	return n;
}

void
osd_hb_status(struct osd_hb *hb, struct tsr_sbuf *out)
{
	uint64_t now = tsr_mono_ns();
	int32_t silent[64];
	uint32_t ns = osd_hb_failed(hb, silent, 64);

	tsr_sbuf_printf(out, "{\"epoch\": %" PRIu64 ", \"pings\": %" PRIu64 ", "
			"\"replies\": %" PRIu64 ", \"silent\": [", hb->epoch, hb->pings,
			hb->replies);
	for (uint32_t i = 0; i < ns; i++)
		tsr_sbuf_printf(out, "%s%d", i ? ", " : "", silent[i]);
	tsr_sbuf_printf(out, "], \"peers\": [");
	for (size_t i = 0; i < hb->npeers; i++) {
		const struct hb_peer *p = &hb->peers[i];

		tsr_sbuf_printf(out, "%s\n  {\"osd\": %d, \"addr\": \"%s\", "
				"\"last_reply_ms_ago\": %.0f, \"rtt_us\": %.0f}",
				i ? "," : "", p->id, p->addr,
				p->last_reply ? (double)(now - p->last_reply) / 1e6 : -1.0,
				(double)p->rtt_ns / 1e3);
	}
	tsr_sbuf_printf(out, "%s]}\n", hb->npeers ? "\n" : "");
}
