/* osdbeacon.c — boot and beacons of an OSD (osdbeacon.h).
 *
 * One timer says when the next command goes; at most one command is in
 * flight (inflight), and its answer arms the timer for the next.  The map
 * listener asks for a boot at once: through the timer when nothing is in
 * flight, else through `again`, which the answer honours.
 */
#include "beacon/osdbeacon.h"
#include "event/loop.h"
#include "log/log.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tsr_osd_beacon {
	struct tsr_loop *loop;
	struct tsr_monc *monc;
	struct tsr_mapsub *sub;     /* the OSD map: is this OSD up in it? */
	int32_t id;
	char addr[64];
	uint32_t interval_ms;
	uint32_t (*failed)(void *arg, int32_t *ids, uint32_t max);
	void *arg;
	uint64_t timer;             /* the next command's */
	uint64_t inflight;          /* the command in flight (monc id), 0: none */
	int again;                  /* boot at once when it is answered */
	int booted;                 /* our last boot was acknowledged ... */
	uint64_t booted_at;         /* ... at this time (mono ns) */
	int seen_up;                /* and a map since has shown us up */
	struct tsr_osd_beacon_state st;
	/* what the PGs ask of the map (MON_OSD_ALIVE) */
	uint64_t want_up_thru;      /* 0: nothing asked */
	struct tsr_mon_pg_temp_req *temps; /* asked, not yet held by a map */
	size_t ntemps, temps_cap;
	uint64_t alive_inflight;    /* monc id, 0: none */
	struct tsr_mon_osd_alive *sent; /* what is in flight */
	uint64_t alive_timer;       /* a retry after a refusal */
	uint64_t alives, alive_refusals;
	char alive_last_error[160];
};

/* How long after a boot a map that still shows the OSD down is taken
 * for one from before the boot (the subscription lags the boot's
 * answer by a push). */
#define BOOT_SETTLE_INTERVALS 5

static void next_cmd(void *arg);

/* The next command in delay_ms (replacing any timer armed). */
static void
kick(struct tsr_osd_beacon *b, uint32_t delay_ms)
{
	if (b->timer)
		tsr_loop_timer_cancel(b->loop, b->timer);
	b->timer = 0;
	if (tsr_loop_timer_add(b->loop, (uint64_t)delay_ms * 1000000u, next_cmd, b,
			       &b->timer) < 0)
		tsr_log(TSR_SUB_OSD, TSR_LOG_ERROR, "osd.%d: out of memory for the "
			"beacon's timer: no more beacons", b->id);
}

static uint64_t
cmd_timeout(const struct tsr_osd_beacon *b)
{
	return (uint64_t)b->interval_ms * 5 + 2000;
}

static void on_map(void *arg, int which, uint64_t epoch, int full);

/* Look at the map held again: a map that showed us down while our boot
 * was on its way, or within the settling time, is judged now. */
static void
recheck(struct tsr_osd_beacon *b)
{
	uint64_t e = tsr_mapsub_epoch(b->sub, TSR_MON_MAP_OSD);

	if (e)
		on_map(b, TSR_MON_MAP_OSD, e, 0);
}

/* A command was answered: the next in an interval, or at once when the map
 * said so meanwhile; then the map is looked at again. */
static void
answered(struct tsr_osd_beacon *b)
{
	b->inflight = 0;
	kick(b, b->again ? 0 : b->interval_ms);
	b->again = 0;
	recheck(b);
}

static void
boot_done(void *arg, int status, const char *text)
{
	struct tsr_osd_beacon *b = arg;

	if (status == 0) {
		/* the settling time counts from the answer: a boot may take
		 * longer than the settling time itself (an election) */
		b->booted = 1;
		b->booted_at = tsr_mono_ns();
		b->st.boots++;
		tsr_log(TSR_SUB_OSD, TSR_LOG_INFO, "osd.%d: booted at %s", b->id, b->addr);
	} else {
		tsr_log(TSR_SUB_OSD, TSR_LOG_WARN, "osd.%d: boot: %s", b->id, text);
	}
	answered(b);
}

static void
beacon_done(void *arg, int status, const char *text)
{
	struct tsr_osd_beacon *b = arg;

	if (status == 0)
		b->st.beacons++;
	else
		tsr_log(TSR_SUB_OSD, TSR_LOG_WARN, "osd.%d: beacon: %s", b->id, text);
	answered(b);
}

static int
encode_boot(struct tsr_enc *e, uint64_t client, uint64_t tid, const void *body)
{
	struct tsr_mon_osd_boot m = *(const struct tsr_mon_osd_boot *)body;

	m.client = client;
	m.tid = tid;
	return tsr_monmsg_osd_boot_encode(e, &m);
}

static int
encode_beacon(struct tsr_enc *e, uint64_t client, uint64_t tid, const void *body)
{
	struct tsr_mon_osd_beacon m = *(const struct tsr_mon_osd_beacon *)body;

	m.client = client;
	m.tid = tid;
	return tsr_monmsg_osd_beacon_encode(e, &m);
}

/* The timer: boot, or a beacon. */
static void
next_cmd(void *arg)
{
	struct tsr_osd_beacon *b = arg;
	int rc;

	b->timer = 0;
	if (b->inflight)
		return; /* its answer arms the next */
	if (!b->booted) {
		struct tsr_mon_osd_boot m = { .osd = b->id };
		tsr_strlcpy(m.addr, b->addr, sizeof(m.addr));
		tsr_strlcpy(m.version, TSR_VERSION, sizeof(m.version));
		/* from now on a map showing us up counts, even one pushed
		 * before the boot's answer comes */
		b->seen_up = 0;
		b->booted_at = tsr_mono_ns();
		rc = tsr_monc_send_typed(b->monc, TSR_MSG_MON_OSD_BOOT, encode_boot, &m,
					 cmd_timeout(b), boot_done, b, &b->inflight);
	} else {
		struct tsr_mon_osd_beacon m = { .osd = b->id,
						.osdmap_epoch = tsr_mapsub_epoch(b->sub,
										 TSR_MON_MAP_OSD) };
		tsr_strlcpy(m.version, TSR_VERSION, sizeof(m.version));
		if (b->failed) {
			m.nfailed = b->failed(b->arg, m.failed, TSR_MONMSG_MAX_FAILED);
			if (m.nfailed > TSR_MONMSG_MAX_FAILED)
				m.nfailed = TSR_MONMSG_MAX_FAILED;
		}
		rc = tsr_monc_send_typed(b->monc, TSR_MSG_MON_OSD_BEACON, encode_beacon, &m,
					 cmd_timeout(b), beacon_done, b, &b->inflight);
	}
	if (rc < 0) {
		b->inflight = 0;
		tsr_log(TSR_SUB_OSD, TSR_LOG_WARN, "osd.%d: %s: %s", b->id,
			b->booted ? "beacon" : "boot", strerror(-rc));
		kick(b, b->interval_ms);
	}
}

/* ---- What the PGs ask of the map -------------------------------------------*/

static void alive_send(struct tsr_osd_beacon *b);

static int
encode_alive(struct tsr_enc *e, uint64_t client, uint64_t tid, const void *body)
{
	struct tsr_mon_osd_alive *m = (struct tsr_mon_osd_alive *)body;

	m->client = client;
	m->tid = tid;
	return tsr_monmsg_osd_alive_encode(e, m);
}

/* Does map m hold PG temp ask t (or is its PG gone)? */
static int
temp_held(const struct tsr_osdmap *m, const struct tsr_mon_pg_temp_req *t)
{
	const struct tsr_osdmap_pool *p = tsr_osdmap_pool(m, t->pool);
	const struct tsr_osdmap_pg_temp *cur = tsr_osdmap_pg_temp(m, t->pool, t->pg);

	if (p == NULL || t->pg >= p->pg_num)
		return 1;
	if (t->n == 0)
		return cur == NULL;
	return cur && cur->n == t->n && memcmp(cur->osds, t->osds, t->n * sizeof(t->osds[0])) == 0;
}

/* Drop the asks map m holds. */
static void
alive_prune(struct tsr_osd_beacon *b, const struct tsr_osdmap *m)
{
	const struct tsr_osdmap_osd *o = tsr_osdmap_osd(m, b->id);
	size_t k = 0;

	if (o && b->want_up_thru && o->up_thru >= b->want_up_thru)
		b->want_up_thru = 0;
	for (size_t i = 0; i < b->ntemps; i++)
		if (!temp_held(m, &b->temps[i]))
			b->temps[k++] = b->temps[i];
	b->ntemps = k;
}

static void
alive_retry(void *arg)
{
	struct tsr_osd_beacon *b = arg;

	b->alive_timer = 0;
	alive_send(b);
}

static void
alive_done(void *arg, int status, const char *text)
{
	struct tsr_osd_beacon *b = arg;

	struct tsr_mon_osd_alive *sent = b->sent;

	b->alive_inflight = 0;
	b->sent = NULL;
	if (status == 0 && sent) {
		/* the monitors' map holds what was sent: asked no more (asks
		 * made since for the same PGs stay) */
		size_t k = 0;
		if (b->want_up_thru <= sent->want_up_thru)
			b->want_up_thru = 0;
		for (size_t i = 0; i < b->ntemps; i++) {
			int done = 0;
			for (uint32_t j = 0; j < sent->npg_temp && !done; j++)
				done = memcmp(&sent->pg_temp[j], &b->temps[i],
					      sizeof(b->temps[i])) == 0;
			if (!done)
				b->temps[k++] = b->temps[i];
		}
		b->ntemps = k;
	}
	free(sent);
	if (status < 0) {
		b->alive_refusals++;
		snprintf(b->alive_last_error, sizeof(b->alive_last_error), "%s", text);
		tsr_log(TSR_SUB_OSD, TSR_LOG_INFO, "osd.%d: asking for up_thru and PG "
			"temp: %s", b->id, text);
		if (b->alive_timer == 0 &&
		    tsr_loop_timer_add(b->loop, (uint64_t)b->interval_ms * 1000000u,
				       alive_retry, b, &b->alive_timer) < 0)
			b->alive_timer = 0;
		return;
	}
	b->alives++;
	recheck(b); /* prunes what the map holds, sends what is left */
}

/* Send what is asked and not held by the newest map, if the map has us
 * up and nothing is in flight. */
static void
alive_send(struct tsr_osd_beacon *b)
{
	struct tsr_osdmap_epoch *ep;
	const struct tsr_osdmap_osd *o;
	struct tsr_mon_osd_alive *m;
	int rc;

	if (b->alive_inflight || b->alive_timer || (b->want_up_thru == 0 && b->ntemps == 0))
		return;
	if ((ep = tsr_mapsub_osdmap(b->sub)) == NULL)
		return;
	alive_prune(b, tsr_osdmap_epoch_map(ep));
	o = tsr_osdmap_osd(tsr_osdmap_epoch_map(ep), b->id);
	if ((b->want_up_thru == 0 && b->ntemps == 0) || o == NULL || !o->up ||
	    strcmp(o->addr, b->addr) != 0) {
		tsr_osdmap_epoch_put(ep);
		return; /* nothing to ask, or not up yet: the next map */
	}
	m = tsr_xcalloc(1, sizeof(*m));
	m->osd = b->id;
	m->up_from = o->up_from;
	m->want_up_thru = b->want_up_thru >= o->up_from ? b->want_up_thru : 0;
	tsr_osdmap_epoch_put(ep);
	for (size_t i = 0; i < b->ntemps && m->npg_temp < TSR_MONMSG_MAX_PG_TEMP; i++)
		m->pg_temp[m->npg_temp++] = b->temps[i];
	if (m->want_up_thru == 0 && m->npg_temp == 0) {
		b->want_up_thru = 0; /* asked for an earlier incarnation */
		free(m);
		return;
	}
	rc = tsr_monc_send_typed(b->monc, TSR_MSG_MON_OSD_ALIVE, encode_alive, m,
				 cmd_timeout(b), alive_done, b, &b->alive_inflight);
	b->sent = m;
	if (rc < 0) {
		b->alive_inflight = 0;
		alive_done(b, rc, strerror(-rc));
	}
}

void
tsr_osd_beacon_want_up_thru(struct tsr_osd_beacon *b, uint64_t epoch)
{
	if (epoch > b->want_up_thru)
		b->want_up_thru = epoch;
	alive_send(b);
}

int
tsr_osd_beacon_want_pg_temp(struct tsr_osd_beacon *b, struct tsr_pgid pgid,
			    const int32_t *osds, uint32_t n)
{
	struct tsr_mon_pg_temp_req t = { .pool = pgid.pool, .pg = pgid.pg, .n = n };
	size_t i;

	if (n > TSR_OSDMAP_MAX_SIZE)
		return -EINVAL;
	for (uint32_t j = 0; j < n; j++) {
		for (uint32_t k = 0; k < j; k++)
			if (osds[k] == osds[j])
				return -EINVAL;
		t.osds[j] = osds[j];
	}
	for (i = 0; i < b->ntemps; i++)
		if (b->temps[i].pool == pgid.pool && b->temps[i].pg == pgid.pg)
			break;
	if (i == b->ntemps) {
		if (b->ntemps == b->temps_cap) {
			size_t cap = b->temps_cap ? 2 * b->temps_cap : 16;
			struct tsr_mon_pg_temp_req *v = realloc(b->temps, cap * sizeof(*v));
			if (v == NULL)
				return -ENOMEM;
			b->temps = v;
			b->temps_cap = cap;
		}
		b->ntemps++;
	}
	b->temps[i] = t;
	alive_send(b);
	return 0;
}

void
tsr_osd_beacon_status_json(struct tsr_osd_beacon *b, struct tsr_sbuf *out)
{
	tsr_sbuf_printf(out, "{\"up\": %s, \"osdmap_epoch\": %" PRIu64 ", \"boots\": %"
			PRIu64 ", \"beacons\": %" PRIu64 ", \"want_up_thru\": %" PRIu64
			", \"pg_temp_asked\": %zu, \"alives\": %" PRIu64 ", "
			"\"alive_refusals\": %" PRIu64 ", \"alive_last_error\": ",
			b->st.up ? "true" : "false", b->st.epoch, b->st.boots, b->st.beacons,
			b->want_up_thru, b->ntemps, b->alives, b->alive_refusals);
	tsr_sbuf_json_str(out, b->alive_last_error);
	tsr_sbuf_printf(out, "}\n");
}

/* A new OSD map.  Up in it at our address: as it should be.  Down (or
 * another address) after the map showed us up, or long after our boot:
 * the monitors marked us down while we are alive; we boot again at once
 * rather than serve with a map that says we are down. */
static void
on_map(void *arg, int which, uint64_t epoch, int full)
{
	struct tsr_osd_beacon *b = arg;
	struct tsr_osdmap_epoch *ep;

	(void)full;
	if (which != TSR_MON_MAP_OSD || (ep = tsr_mapsub_osdmap(b->sub)) == NULL)
		return;
	const struct tsr_osdmap_osd *o = tsr_osdmap_osd(tsr_osdmap_epoch_map(ep), b->id);
	int up = o && o->up && strcmp(o->addr, b->addr) == 0;
	b->st.up = up;
	b->st.epoch = epoch;
	if (up) {
		b->seen_up = 1;
	} else if (b->booted &&
		   (b->seen_up || tsr_mono_ns() - b->booted_at >
		    (uint64_t)b->interval_ms * BOOT_SETTLE_INTERVALS * 1000000u)) {
		tsr_log(TSR_SUB_OSD, TSR_LOG_WARN, "osd.%d: the map (epoch %llu) has us "
			"%s while we are alive: booting again", b->id,
			(unsigned long long)epoch, o ? "down" : "removed");
		b->booted = 0;
		if (b->inflight)
			b->again = 1;
		else
			kick(b, 0);
	}
	tsr_osdmap_epoch_put(ep);
	if (up)
		alive_send(b);
}

int
tsr_osd_beacon_start(struct tsr_loop *loop, struct tsr_monc *monc,
		     struct tsr_mapsub *sub, int32_t id, const char *addr,
		     uint32_t interval_ms,
		     uint32_t (*failed)(void *arg, int32_t *ids, uint32_t max), void *arg,
		     struct tsr_osd_beacon **out, char *err, size_t errlen)
{
	struct tsr_osd_beacon *b;
	int rc;

	if (!(tsr_mapsub_want(sub) & TSR_MON_SUB_OSD))
		return tsr_errf(err, errlen, -EINVAL, "osd.%d: the beacon needs a map "
				"subscription that keeps the OSD map", id);
	if (strlen(addr) >= sizeof(b->addr))
		return tsr_errf(err, errlen, -EINVAL, "osd.%d: address '%s' is too "
				"long", id, addr);
	b = tsr_xcalloc(1, sizeof(*b));
	b->loop = loop;
	b->monc = monc;
	b->sub = sub;
	b->id = id;
	tsr_strlcpy(b->addr, addr, sizeof(b->addr));
	b->interval_ms = interval_ms ? interval_ms : 2000;
	b->failed = failed;
	b->arg = arg;
	if ((rc = tsr_mapsub_listen(sub, on_map, b)) < 0) {
		free(b);
		return tsr_errf(err, errlen, rc, "osd.%d: the map subscription has "
				"no room for the beacon's listener", id);
	}
	kick(b, 0); /* boot */
	if (b->timer == 0) {
		tsr_osd_beacon_stop(b);
		return tsr_errf(err, errlen, -ENOMEM, "osd.%d: out of memory", id);
	}
	*out = b;
	return 0;
}

void
tsr_osd_beacon_stop(struct tsr_osd_beacon *b)
{
	if (b == NULL)
		return;
	if (b->timer)
		tsr_loop_timer_cancel(b->loop, b->timer);
	if (b->inflight)
		tsr_monc_cancel(b->monc, b->inflight);
	if (b->alive_timer)
		tsr_loop_timer_cancel(b->loop, b->alive_timer);
	if (b->alive_inflight)
		tsr_monc_cancel(b->monc, b->alive_inflight);
	free(b->sent);
	tsr_mapsub_unlisten(b->sub, on_map, b);
	free(b->temps);
	free(b);
}

void
tsr_osd_beacon_state(struct tsr_osd_beacon *b, struct tsr_osd_beacon_state *out)
{
	*out = b->st;
}
