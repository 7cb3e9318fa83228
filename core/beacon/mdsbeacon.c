/* mdsbeacon.c — an MDS's beacons and its rank (mdsbeacon.h).
 *
 * As the OSD's beacon: one timer for the next beacon, at most one in
 * flight, its answer arms the next; a nudge (a new map, a replay done)
 * sends at once, or right after the answer when one is in flight.
 */
#include "beacon/mdsbeacon.h"
#include "event/loop.h"
#include "log/log.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

struct tsr_mds_beacon {
	struct tsr_loop *loop;
	struct tsr_monc *monc;
	struct tsr_mapsub *sub;
	char name[TSR_MDSMAP_NAME];
	char addr[TSR_MDSMAP_NAME];
	uint32_t interval_ms;
	void (*role_cb)(void *arg, const struct tsr_mds_role *role);
	void *arg;

	uint64_t timer;              /* the next beacon's */
	uint64_t inflight;           /* the beacon in flight (monc id), 0: none */
	uint64_t inflight_sent_ns;   /* when it was sent */
	int again;                   /* the next at once when it is answered */
	struct tsr_mds_role role;
	int replayed;                /* tsr_mds_beacon_active() for this rank */
	int seen;                    /* this incarnation has been in the map */
};

static uint64_t
new_gid(void)
{
	uint64_t g = 0;

	if (getrandom(&g, sizeof(g), 0) != sizeof(g))
		g = tsr_now_ns() ^ (uint64_t)getpid() << 32;
	g &= INT64_MAX;
	return g ? g : 1;
}

static void send_beacon(void *arg);

/* The next beacon in delay_ms (replacing any timer armed). */
static void
kick(struct tsr_mds_beacon *b, uint32_t delay_ms)
{
	if (b->timer)
		tsr_loop_timer_cancel(b->loop, b->timer);
	b->timer = 0;
	if (tsr_loop_timer_add(b->loop, (uint64_t)delay_ms * 1000000u, send_beacon,
			       b, &b->timer) < 0)
		tsr_log(TSR_SUB_MDS, TSR_LOG_ERROR, "mds.%s: out of memory for the "
			"beacon's timer: no more beacons", b->name);
}

/* Say it now: at once, or as soon as the beacon in flight is answered. */
static void
nudge(struct tsr_mds_beacon *b)
{
	if (b->inflight)
		b->again = 1;
	else
		kick(b, 0);
}

static void
beacon_done(void *arg, int status, const char *text)
{
	struct tsr_mds_beacon *b = arg;

	b->inflight = 0;
	if (status == 0) {
		b->role.beacons++;
		b->role.acked_sent_ns = b->inflight_sent_ns;
	}
	else
		tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "mds.%s: beacon: %s", b->name, text);
	kick(b, b->again ? 0 : b->interval_ms);
	b->again = 0;
}

static int
encode_beacon(struct tsr_enc *e, uint64_t client, uint64_t tid, const void *body)
{
	struct tsr_mon_mds_beacon m = *(const struct tsr_mon_mds_beacon *)body;

	m.client = client;
	m.tid = tid;
	return tsr_monmsg_mds_beacon_encode(e, &m);
}

static void
send_beacon(void *arg)
{
	struct tsr_mds_beacon *b = arg;
	struct tsr_mon_mds_beacon m = { .gid = b->role.gid };
	int rc;

	b->timer = 0;
	if (b->inflight)
		return; /* its answer arms the next */
	tsr_strlcpy(m.name, b->name, sizeof(m.name));
	tsr_strlcpy(m.addr, b->addr, sizeof(m.addr));
	tsr_strlcpy(m.version, TSR_VERSION, sizeof(m.version));
	b->inflight_sent_ns = tsr_mono_ns();
	m.state = b->role.rank < 0 ? TSR_MDS_STANDBY : b->replayed ? TSR_MDS_ACTIVE
								   : TSR_MDS_REPLAY;
	rc = tsr_monc_send_typed(b->monc, TSR_MSG_MON_MDS_BEACON, encode_beacon, &m,
				 (uint64_t)b->interval_ms * 5 + 2000, beacon_done, b,
				 &b->inflight);
	if (rc < 0) {
		b->inflight = 0;
		tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "mds.%s: beacon: %s", b->name,
			strerror(-rc));
		kick(b, b->interval_ms);
	}
}

/* A new MDS map: what does it say of this incarnation? */
static void
on_map(void *arg, int which, uint64_t epoch, int full)
{
	struct tsr_mds_beacon *b = arg;
	struct tsr_mdsmap m;
	int changed = 0;

	(void)epoch;
	(void)full;
	if (which != TSR_MON_MAP_MDS || tsr_mapsub_mdsmap(b->sub, &m) < 0)
		return;
	const struct tsr_mdsmap_mds *d = tsr_mdsmap_find(&m, b->name);
	if (d && d->gid == b->role.gid) {
		b->seen = 1;
		if (d->rank != b->role.rank || d->state != b->role.state) {
			if (d->rank != b->role.rank)
				b->replayed = 0;
			b->role.rank = d->rank;
			b->role.state = d->state;
			changed = 1;
		}
	} else if (b->seen) {
		/* failed while alive: the rank may be another's by now */
		tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "mds.%s: the MDS map (epoch %" PRIu64
			") no longer has incarnation %" PRIu64 "%s; standing by as a "
			"new one", b->name, m.epoch, b->role.gid,
			b->role.rank >= 0 ? ": giving up its rank" : "");
		b->role.gid = new_gid();
		b->role.incarnations++;
		b->role.rank = -1;
		b->role.state = TSR_MDS_STANDBY;
		b->seen = 0;
		b->replayed = 0;
		changed = 1;
	}
	b->role.epoch = m.epoch;
	tsr_mdsmap_free(&m);
	nudge(b);
	if (changed && b->role_cb) {
		struct tsr_mds_role copy = b->role;
		b->role_cb(b->arg, &copy);
	}
}

int
tsr_mds_beacon_start(struct tsr_loop *loop, struct tsr_monc *monc,
		     struct tsr_mapsub *sub, const char *name, const char *addr,
		     uint32_t interval_ms,
		     void (*role_cb)(void *arg, const struct tsr_mds_role *role), void *arg,
		     struct tsr_mds_beacon **out, char *err, size_t errlen)
{
	struct tsr_mds_beacon *b;
	int rc;

	if (!tsr_osdmap_name_ok(name) || strlen(addr) >= TSR_MDSMAP_NAME)
		return tsr_errf(err, errlen, -EINVAL, "an MDS name is 1 to 63 of "
				"letters, digits, '-', '_', '.', not '%s'", name);
	if (!(tsr_mapsub_want(sub) & TSR_MON_SUB_MDS))
		return tsr_errf(err, errlen, -EINVAL, "mds.%s: the beacon needs a map "
				"subscription that keeps the MDS map", name);
	b = tsr_xcalloc(1, sizeof(*b));
	b->loop = loop;
	b->monc = monc;
	b->sub = sub;
	tsr_strlcpy(b->name, name, sizeof(b->name));
	tsr_strlcpy(b->addr, addr, sizeof(b->addr));
	b->interval_ms = interval_ms ? interval_ms : 2000;
	b->role_cb = role_cb;
	b->arg = arg;
	b->role.gid = new_gid();
	b->role.rank = -1;
	b->role.incarnations = 1;
	if ((rc = tsr_mapsub_listen(sub, on_map, b)) < 0) {
		free(b);
		return tsr_errf(err, errlen, rc, "mds.%s: the map subscription has "
				"no room for the beacon's listener", name);
	}
	kick(b, 0); /* the first beacon at once */
	if (b->timer == 0) {
		tsr_mds_beacon_stop(b);
		return tsr_errf(err, errlen, -ENOMEM, "mds.%s: out of memory", name);
	}
	*out = b;
	return 0;
}

void
tsr_mds_beacon_stop(struct tsr_mds_beacon *b)
{
	if (b == NULL)
		return;
	if (b->timer)
		tsr_loop_timer_cancel(b->loop, b->timer);
	if (b->inflight)
		tsr_monc_cancel(b->monc, b->inflight);
	tsr_mapsub_unlisten(b->sub, on_map, b);
	free(b);
}

void
tsr_mds_beacon_active(struct tsr_mds_beacon *b)
{
	if (b->role.rank >= 0 && !b->replayed) {
		b->replayed = 1;
		nudge(b); /* say so now, not at the next interval */
	}
}

void
tsr_mds_beacon_role(struct tsr_mds_beacon *b, struct tsr_mds_role *out)
{
	*out = b->role;
}

int
tsr_mds_beacon_cmd_role(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct tsr_mds_role r;

	(void)argc;
	(void)argv;
	tsr_mds_beacon_role(arg, &r);
	tsr_sbuf_printf(out, "{\"gid\": %" PRIu64 ", \"rank\": %d, \"state\": \"%s\", "
			"\"mdsmap_epoch\": %" PRIu64 ", \"incarnations\": %" PRIu64 ", "
			"\"beacons\": %" PRIu64 "}\n", r.gid, r.rank,
			r.rank < 0 ? "standby" : tsr_mds_state_name(r.state), r.epoch,
			r.incarnations, r.beacons);
	return 0;
}
