/* caps.c — capabilities (mds.h): what each client may do with an inode
 * without asking, granted at open, revoked on conflict, and taken by
 * eviction from a client that does not give them back.
 *
 * Per (inode, client) the MDS keeps what the client wants (RD, WR: from
 * its opens), what it was issued, and, while a revoke is out, what it
 * must come down to.  What a holder may have (allowed):
 *   RD, WR  as it wants them;
 *   CACHE   when no other holder wants WR;
 *   BUF     when it wants WR and no other client holds the inode.
 * Caps grow only at open; they shrink by a revoke (MDS_CAP), which the
 * client answers with a CAPS ACK once it has told its size and mtime
 * (BUF) and dropped its cached data (CACHE).  A request that needs a
 * revoke answered first waits, parked, and runs again when the holders
 * have answered or been evicted.
 *
 * Eviction.  A holder that has not answered a revoke within
 * mds_cap_revoke_timeout is blocklisted in the OSD map (`osd blocklist
 * add`, for mds_blocklist_duration), then its session, capabilities and
 * locks go.  The blocklist's epoch becomes the OSD barrier that later
 * grants carry: a client reads or writes the file only with an OSD map of
 * that epoch or newer, and the OSDs wait for the client's epoch before
 * they serve it, so no write of the evicted client lands after theirs.
 *
 * Everything here runs on the MDS thread, but mds_evictions_send (on the
 * loop, where the monitor client lives). */
#include "mds.h"

#include "client_int.h"
#include "log/log.h"
#include "map/osdmap.h"
#include "map/osdmap_epoch.h"
#include "mon/mapsub.h"
#include "mon/monc.h"
#include "msg/msgr.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mcap {
	uint64_t client;             /* the peer's id */
	uint32_t wanted;             /* RD | WR, from its opens */
	uint32_t issued;
	uint32_t target;             /* what a revoke brings it down to */
	uint64_t seq;                /* bumped by every grant and revoke */
	uint64_t revoke_ns;          /* when the revoke out went (0: none) */
};

struct mcaps {
	struct mcap *h;
	size_t n;
};

/* A request waiting for revokes to be answered. */
struct parked {
	struct parked *next;
	struct tsr_conn *conn;       /* a reference */
	struct tsr_mds_request r;
	void *value;                 /* r.value's copy */
};

#define REVOCABLE (TSR_CAP_CACHE | TSR_CAP_BUF | TSR_CAP_DCACHE)

static struct mcaps *
caps_of(struct mds *m, uint64_t ino)
{
	return tsr_u64map_get(&m->caps, ino);
}

static struct mcap *
holder(struct mcaps *cs, uint64_t client)
{
	for (size_t i = 0; cs && i < cs->n; i++)
		if (cs->h[i].client == client)
			return &cs->h[i];
	return NULL;
}

/* client's record on ino, made (with the inode's) when absent. */
static struct mcap *
holder_add(struct mds *m, uint64_t ino, struct mcaps **csp, uint64_t client)
{
	struct mcaps *cs = *csp;
	struct mcap *h;

	if (cs == NULL) {
		cs = tsr_xcalloc(1, sizeof(*cs));
		if (tsr_u64map_put(&m->caps, ino, cs) < 0)
			abort();
		*csp = cs;
	}
	if ((h = holder(cs, client)) == NULL) {
		cs->h = realloc(cs->h, (cs->n + 1) * sizeof(*cs->h));
		if (cs->h == NULL)
			abort();
		h = &cs->h[cs->n++];
		memset(h, 0, sizeof(*h));
		h->client = client;
	}
	return h;
}

static uint32_t
allowed(const struct mcaps *cs, const struct mcap *h)
{
	uint32_t a = h->wanted & (TSR_CAP_RD | TSR_CAP_WR);
	int others = 0, others_wr = 0;

	for (size_t i = 0; i < cs->n; i++) {
		if (&cs->h[i] == h)
			continue;
		others = 1;
		others_wr |= (cs->h[i].wanted & TSR_CAP_WR) != 0;
	}
	if (!others_wr)
		a |= TSR_CAP_CACHE;
	if ((h->wanted & TSR_CAP_WR) && !others)
		a |= TSR_CAP_BUF;
	/* (DCACHE: a directory's holder keeps it until a change takes it) */
	return a | (h->issued & TSR_CAP_DCACHE);
}

static void
send_revoke(struct mds *m, uint64_t ino, struct mcap *h, uint32_t target)
{
	struct tsr_mds_cap c = { .op = (h->issued & TSR_CAP_DCACHE) ? TSR_MDS_CAP_REVOKE_DIR
								      : TSR_MDS_CAP_REVOKE,
				 .ino = ino };
	struct tsr_conn *conn = mds_session_conn(m, h->client);
	struct tsr_enc e;
	struct tsr_msg *msg;

	h->target = target;
	h->seq = ++m->cap_seq;
	if (h->revoke_ns == 0)
		h->revoke_ns = tsr_mono_ns();
	c.caps = target;
	c.seq = h->seq;
	if (conn == NULL)
		return; /* no session: the timeout evicts it */
	tsr_enc_init(&e);
	/* behind the answers queued before it: a grant still waiting for
	 * the journal must not reach the client after its own revoke */
	if (tsr_mdsmsg_cap_encode(&e, &c) == 0 &&
	    (msg = tsr_msg_from_enc(TSR_MSG_MDS_CAP, &e)) != NULL)
		mds_reply_after(m, conn, msg, m->applied);
	else
		tsr_enc_release(&e);
}

/* Bring every holder but client down to what it may have now: revokes
 * for the revocable caps (CACHE, BUF) it holds beyond that, and beyond
 * ~drop.  1 when some holder other than client has a revoke out. */
static int
settle(struct mds *m, uint64_t ino, struct mcaps *cs, uint64_t client, uint32_t drop)
{
	int waiting = 0;

	for (size_t i = 0; i < cs->n; i++) {
		struct mcap *h = &cs->h[i];
		if (h->client == client)
			continue;
		uint32_t keep = allowed(cs, h) & ~drop;
		uint32_t extra = h->issued & ~keep & REVOCABLE;
		if (extra && (h->revoke_ns == 0 || (h->target & extra)))
			send_revoke(m, ino, h, h->issued & keep);
		/* (a revoke out for bits this request does not mind is no
		 * reason to wait) */
		waiting |= extra != 0;
	}
	return waiting;
}

int
mds_caps_open(struct mds *m, uint64_t client, uint64_t ino, uint32_t flags,
	      struct tsr_mds_reply *rep)
{
	struct mcaps *cs = caps_of(m, ino);
	struct mcap *h;
	uint32_t want = 0;

	switch (flags & O_ACCMODE) {
	case O_RDONLY: want = TSR_CAP_RD; break;
	case O_WRONLY: want = TSR_CAP_WR; break;
	default: want = TSR_CAP_RD | TSR_CAP_WR; break;
	}
	h = holder_add(m, ino, &cs, client);
	h->wanted |= want;
	if (settle(m, ino, cs, client, 0))
		return 1;
	h = holder(cs, client);
	/* a grant answers any revoke of this holder's that is out; requests
	 * parked for it run again once this one is answered */
	if (h->revoke_ns)
		m->wake_pending = 1;
	h->issued = h->target = allowed(cs, h);
	h->revoke_ns = 0;
	h->seq = ++m->cap_seq;
	rep->caps = h->issued;
	rep->cap_seq = h->seq;
	rep->osd_barrier = m->osd_barrier;
	return 0;
}

int
mds_caps_recall(struct mds *m, uint64_t client, uint64_t ino, uint32_t bits)
{
	struct mcaps *cs = caps_of(m, ino);

	return cs ? settle(m, ino, cs, client, bits) : 0;
}

int
mds_caps_held(struct mds *m, uint64_t ino)
{
	struct mcaps *cs = caps_of(m, ino);

	return cs != NULL && cs->n > 0;
}

static void
remove_holder(struct mds *m, uint64_t ino, struct mcaps *cs, struct mcap *h)
{
	*h = cs->h[--cs->n];
	if (cs->n == 0) {
		tsr_u64map_del(&m->caps, ino);
		free(cs->h);
		free(cs);
	}
}

void
mds_caps_reassert(struct mds *m, uint64_t client, uint64_t ino, uint32_t wanted,
		  uint32_t issued)
{
	struct mcaps *cs = caps_of(m, ino);
	struct mcap *h;

	h = holder_add(m, ino, &cs, client);
	h->wanted |= wanted & (TSR_CAP_RD | TSR_CAP_WR);
	h->issued |= issued & TSR_CAP_ALL;
	h->target = h->issued;
	/* (seq starts again: the client set its own to 0 when it sent this) */
}

static int
settle_one(void *arg, uint64_t ino, void *val)
{
	settle(arg, ino, val, 0, 0);
	return 0;
}

void
mds_caps_settle_all(struct mds *m)
{
	tsr_u64map_each(&m->caps, settle_one, m);
}

void
mds_caps_ack(struct mds *m, uint64_t client, uint64_t ino, uint64_t seq, uint32_t kept)
{
	struct mcaps *cs = caps_of(m, ino);
	struct mcap *h = holder(cs, client);

	if (h == NULL || seq != h->seq)
		return; /* an answer to an older revoke, or after a release */
	h->issued &= kept | (TSR_CAP_RD | TSR_CAP_WR);
	if ((h->issued & ~h->target & REVOCABLE) == 0)
		h->revoke_ns = 0;
	mds_parked_wake(m);
}

uint64_t
mds_caps_grant_dir(struct mds *m, uint64_t client, uint64_t dir)
{
	struct mcaps *cs = caps_of(m, dir);
	struct mcap *h = holder(cs, client);

	/* not while a revoke of it is out, nor while a change waits for
	 * one: a client looking names up all the time would keep another's
	 * change waiting */
	uint64_t *until = tsr_u64map_get(&m->dir_busy, dir);
	if (until && *until > tsr_mono_ns())
		return 0;
	if (until)
		free(tsr_u64map_del(&m->dir_busy, dir));
	if ((h && h->revoke_ns) || mds_session_conn(m, client) == NULL)
		return 0; /* (no session: no revoke could reach it) */
	h = holder_add(m, dir, &cs, client);
	h->issued = h->target = TSR_CAP_DCACHE;
	h->seq = ++m->cap_seq;
	return h->seq;
}

int
mds_caps_dir_change(struct mds *m, uint64_t client, uint64_t dir)
{
	struct mcaps *cs = caps_of(m, dir);
	uint64_t *until;

	if (cs == NULL || !settle(m, dir, cs, client, TSR_CAP_DCACHE)) {
		/* (a change that waited goes on now: grants may again) */
		if ((until = tsr_u64map_get(&m->dir_busy, dir)) != NULL)
			free(tsr_u64map_del(&m->dir_busy, dir));
		return 0;
	}
	/* no grant on it for a while: the change goes first */
	if ((until = tsr_u64map_get(&m->dir_busy, dir)) == NULL) {
		until = tsr_xcalloc(1, sizeof(*until));
		if (tsr_u64map_put(&m->dir_busy, dir, until) < 0)
			abort();
	}
	*until = tsr_mono_ns() + 1000000000u;
	return 1;
}

void
mds_caps_release(struct mds *m, uint64_t client, uint64_t ino, uint64_t size,
		 uint64_t seq)
{
	struct mcaps *cs = caps_of(m, ino);
	struct mcap *h = holder(cs, client);

	if (h == NULL || (seq != 0 && seq < h->seq))
		return; /* (given back before a newer grant: that one holds) */
	remove_holder(m, ino, cs, h);
	mds_purge_size(m, ino, size);
	if (caps_of(m, ino) == NULL)
		mds_purges_run(m, 0);
	mds_parked_wake(m);
}

void
mds_caps_drop_ino(struct mds *m, uint64_t ino)
{
	struct mcaps *cs = tsr_u64map_del(&m->caps, ino);

	if (cs) {
		free(cs->h);
		free(cs);
		m->wake_pending = 1; /* (a request may have waited on one) */
	}
}

struct drop_ctx {
	struct mds *m;
	uint64_t client;
	uint64_t *inos;
	size_t n, cap;
};

static int
collect(void *arg, uint64_t ino, void *val)
{
	struct drop_ctx *x = arg;

	if (holder(val, x->client) == NULL)
		return 0;
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 16;
		if ((x->inos = realloc(x->inos, x->cap * sizeof(*x->inos))) == NULL)
			abort();
	}
	x->inos[x->n++] = ino;
	return 0;
}

void
mds_caps_drop_client(struct mds *m, uint64_t client)
{
	struct drop_ctx x = { .m = m, .client = client };

	tsr_u64map_each(&m->caps, collect, &x);
	for (size_t i = 0; i < x.n; i++) {
		struct mcaps *cs = caps_of(m, x.inos[i]);
		remove_holder(m, x.inos[i], cs, holder(cs, client));
	}
	free(x.inos);
	if (x.n) {
		mds_purges_run(m, 0);
		mds_parked_wake(m);
	}
}

/* ---- Eviction ---- */

struct evict {
	struct evict *next;          /* on m->evict_out */
	struct mds *m;
	uint64_t client;
	int status;
	uint64_t epoch;
};

static int
evicting(struct mds *m, uint64_t client)
{
	for (size_t i = 0; i < m->nevicting; i++)
		if (m->evicting[i] == client)
			return 1;
	return 0;
}

static void
evicting_del(struct mds *m, uint64_t client)
{
	for (size_t i = 0; i < m->nevicting; i++)
		if (m->evicting[i] == client) {
			m->evicting[i] = m->evicting[--m->nevicting];
			return;
		}
}

/* On the MDS thread: the blocklist is in the OSD map (or the monitors
 * said no). */
static void
evicted(void *arg)
{
	struct evict *v = arg;
	struct mds *m = v->m;

	evicting_del(m, v->client);
	if (v->status < 0) {
		/* tried again at the next tick while the revoke stays out */
		free(v);
		return;
	}
	mds_evicted_add(m, v->client);
	if (v->epoch > m->osd_barrier)
		m->osd_barrier = v->epoch;
	tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "client %" PRIx64 " evicted: blocklisted at OSD "
		"map epoch %" PRIu64 "; its session, capabilities and locks are gone",
		v->client, v->epoch);
	m->n_evictions++;
	mds_session_end(m, v->client);
	mds_caps_drop_client(m, v->client);
	mds_locks_drop(m, v->client);
	mds_parked_wake(m);
	free(v);
}

/* On the loop: the monitors' answer. */
static void
blocklist_done(void *arg, int status, const char *text)
{
	struct evict *v = arg;
	const char *p;

	v->status = status;
	if (status == 0 && ((p = strstr(text, "\"osdmap_epoch\": ")) == NULL ||
			    (v->epoch = strtoull(p + 16, NULL, 10)) == 0))
		v->status = status = -EPROTO; /* no epoch: no barrier to give */
	if (status < 0)
		tsr_log(TSR_SUB_MDS, TSR_LOG_ERROR, "evicting client %" PRIx64 ": osd blocklist "
			"add failed: %s (tried again)", v->client, text);
	if (mds_post(v->m, evicted, v) < 0)
		free(v);
}

/* On the loop (its tick): the blocklist commands the MDS thread asked
 * for. */
void
mds_evictions_send(struct mds *m)
{
	struct evict *list;

	pthread_mutex_lock(&m->post_lock);
	list = m->evict_out;
	m->evict_out = NULL;
	pthread_mutex_unlock(&m->post_lock);
	while (list) {
		struct evict *v = list;
		char id[24], secs[24];
		char *argv[] = { "osd", "blocklist", "add", id, secs };
		list = v->next;
		snprintf(id, sizeof(id), "%" PRIx64, v->client);
		snprintf(secs, sizeof(secs), "%" PRIu64, m->blocklist_s);
		if (tsr_monc_send(m->monc, 5, argv, 30000, blocklist_done, v, NULL) < 0) {
			v->status = -ESHUTDOWN;
			if (mds_post(m, evicted, v) < 0)
				free(v);
		}
	}
}

static void
evict(struct mds *m, uint64_t client, const char *why)
{
	struct evict *v;

	if (evicting(m, client))
		return;
	tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "evicting client %" PRIx64 ": %s", client, why);
	v = tsr_xcalloc(1, sizeof(*v));
	v->m = m;
	v->client = client;
	pthread_mutex_lock(&m->post_lock);
	v->next = m->evict_out;
	m->evict_out = v;
	pthread_mutex_unlock(&m->post_lock);
	m->evicting = realloc(m->evicting, (m->nevicting + 1) * sizeof(*m->evicting));
	if (m->evicting == NULL)
		abort();
	m->evicting[m->nevicting++] = client;
}

struct late_ctx {
	struct mds *m;
	uint64_t now;
	uint64_t late[16];
	size_t n;
};

static int
find_late(void *arg, uint64_t ino, void *val)
{
	struct late_ctx *x = arg;
	struct mcaps *cs = val;

	(void)ino;
	for (size_t i = 0; i < cs->n && x->n < 16; i++) {
		size_t j;
		if (cs->h[i].revoke_ns == 0 ||
		    x->now - cs->h[i].revoke_ns < x->m->revoke_timeout_ns ||
		    evicting(x->m, cs->h[i].client))
			continue;
		for (j = 0; j < x->n && x->late[j] != cs->h[i].client; j++)
			;
		if (j == x->n)
			x->late[x->n++] = cs->h[i].client;
	}
	return 0;
}

void
mds_caps_tick(struct mds *m)
{
	struct late_ctx x = { .m = m, .now = tsr_mono_ns() };
	char why[96];

	tsr_u64map_each(&m->caps, find_late, &x);
	for (size_t i = 0; i < x.n; i++) {
		snprintf(why, sizeof(why), "a revoke unanswered for %" PRIu64 " s",
			 m->revoke_timeout_ns / 1000000000u);
		evict(m, x.late[i], why);
	}
}

void
mds_evict(struct mds *m, uint64_t client, const char *why)
{
	evict(m, client, why);
}

/* ---- Requests waiting for revokes ---- */

void
mds_park(struct mds *m, struct tsr_conn *conn, const struct tsr_mds_request *r)
{
	struct parked *p = tsr_xcalloc(1, sizeof(*p)), **pp = &m->parked;

	p->conn = conn;
	tsr_conn_get(conn);
	p->r = *r;
	if (r->value_len) {
		p->value = tsr_xcalloc(1, r->value_len);
		memcpy(p->value, r->value, r->value_len);
		p->r.value = p->value;
	}
	while (*pp)
		pp = &(*pp)->next;
	*pp = p;
}

void
mds_parked_wake(struct mds *m)
{
	static __thread int running;

	/* (a wake while one runs: the running one goes round again, so the
	 * parked keep their order) */
	if (running) {
		m->wake_pending = 1;
		return;
	}
	running = 1;
	int rounds = 0;
	do {
		struct parked *list = m->parked;
		m->wake_pending = 0;
		/* each runs again once; one that must still wait parks again */
		m->parked = NULL;
		while (list) {
			struct parked *p = list;
			list = p->next;
			mds_handle_request(m, p->conn, &p->r);
			tsr_conn_put(p->conn);
			free(p->value);
			free(p);
		}
	} while (m->wake_pending && m->parked && ++rounds < 8);
	m->wake_pending = 0;
	running = 0;
}

size_t
mds_parked_count(struct mds *m)
{
	size_t n = 0;

	for (struct parked *p = m->parked; p; p = p->next)
		n++;
	return n;
}

static int
holds(void *arg, uint64_t ino, void *val)
{
	struct mcap *h = holder(val, *(uint64_t *)arg);

	(void)ino;
	/* (names cached only: the client drops them itself when it hears
	 * nothing, before a session expires) */
	return h != NULL && ((h->issued | h->wanted) & ~TSR_CAP_DCACHE) != 0;
}

int
mds_caps_writer_other(struct mds *m, uint64_t client, uint64_t ino)
{
	struct mcaps *cs = caps_of(m, ino);

	for (size_t i = 0; cs && i < cs->n; i++)
		if (cs->h[i].client != client && (cs->h[i].wanted & TSR_CAP_WR))
			return 1;
	return 0;
}

int
mds_caps_client_holds(struct mds *m, uint64_t client)
{
	return tsr_u64map_each(&m->caps, holds, &client) != 0;
}

static int
free_caps(void *arg, uint64_t key, void *val)
{
	struct mcaps *cs = val;

	(void)arg;
	(void)key;
	free(cs->h);
	free(cs);
	return 0;
}

static int
free_busy(void *arg, uint64_t key, void *val)
{
	(void)arg;
	(void)key;
	free(val);
	return 0;
}

void
mds_caps_free(struct mds *m)
{
	tsr_u64map_each(&m->caps, free_caps, NULL);
	tsr_u64map_free(&m->caps);
	tsr_u64map_each(&m->dir_busy, free_busy, NULL);
	tsr_u64map_free(&m->dir_busy);
	while (m->parked) {
		struct parked *p = m->parked;
		m->parked = p->next;
		tsr_conn_put(p->conn);
		free(p->value);
		free(p);
	}
	free(m->evicting);
	m->evicting = NULL;
	m->nevicting = 0;
	while (m->evict_out) {
		struct evict *v = m->evict_out;
		m->evict_out = v->next;
		free(v);
	}
	free(m->evicted);
	m->evicted = NULL;
	m->nevicted = 0;
}

/* ---- Clients evicted: refused by the MDS too, while blocklisted ---- */

void
mds_evicted_add(struct mds *m, uint64_t client)
{
	uint64_t now = tsr_mono_ns();
	size_t w = 0;

	/* (entries past their time go) */
	for (size_t i = 0; i < m->nevicted; i++)
		if (m->evicted[i].until_ns > now)
			m->evicted[w++] = m->evicted[i];
	m->nevicted = w;
	m->evicted = realloc(m->evicted, (m->nevicted + 1) * sizeof(*m->evicted));
	if (m->evicted == NULL)
		abort();
	m->evicted[m->nevicted].client = client;
	m->evicted[m->nevicted].until_ns = now + m->blocklist_s * 1000000000u;
	m->nevicted++;
}

int
mds_map_blocked(struct mds *m, uint64_t client, uint64_t *epoch)
{
	struct tsr_osdmap_epoch *ep;
	int blocked = 0;

	if (m->oc && (ep = tsr_mapsub_osdmap(tsr_client_mapsub_(m->oc))) != NULL) {
		blocked = tsr_osdmap_blocked(tsr_osdmap_epoch_map(ep), client,
					     (uint64_t)time(NULL));
		if (epoch)
			*epoch = tsr_osdmap_epoch_number(ep);
		tsr_osdmap_epoch_put(ep);
	}
	return blocked;
}

int
mds_refused(struct mds *m, uint64_t client)
{
	/* evicted by an MDS before us too (the list of mds_is_evicted dies
	 * with it): the OSD map our object client follows says so */
	return mds_is_evicted(m, client) || mds_map_blocked(m, client, NULL);
}

int
mds_is_evicted(struct mds *m, uint64_t client)
{
	uint64_t now = tsr_mono_ns();

	for (size_t i = 0; i < m->nevicted; i++)
		if (m->evicted[i].client == client && m->evicted[i].until_ns > now)
			return 1;
	return 0;
}
