/* osd.c — tessera-osd, an object storage daemon: one per device.
 *
 *     tessera-osd --mkfs --id N [--conf FILE]   prepare osd.N's store
 *     tessera-osd --id N [--conf FILE] [-f]     run osd.N
 *
 * What it does: it opens the store its section names (backend,
 * backend_options, osd_data) and refuses one of another cluster or
 * another OSD (store.c); keeps the OSD map epochs it takes in the store
 * and restarts from them (mapstore.c); boots into the OSD map at osd_addr
 * once it holds the OSDs' service keys, and sends beacons
 * (core/beacon/osdbeacon.c); computes, under each new epoch, the placement
 * groups it is in the acting set of (pgs.c) and pings the OSDs it shares
 * them with, reporting the silent ones in its beacons (heartbeat.c); and
 * runs a PG machine for each PG copy it holds: peering, recovery,
 * backfill, removal (pgrt.c).  It serves no client operations yet.
 *
 * Its runtime is one messenger (bound at osd_addr, the OSD's identity and
 * key) and the daemon's loop, with the monitor client, the map
 * subscription (whose epochs place with this daemon's plugins) and the
 * beacon as modules on them.
 *
 * Admin commands beyond the shared ones: `beacon` (what the monitors last
 * said of this OSD), `pg ls` (the PGs it serves under the epoch it
 * holds, with its role in each), `heartbeat` (its peers and their last
 * answers), `store` (the superblock, the backend and the path), `maps`
 * (the OSD map epoch held, full maps and incrementals taken, the epochs
 * stored), `pg dump` (each PG copy run here: its state and why).
 */
#include "osd.h"
#include "auth/auth.h"
#include "beacon/osdbeacon.h"
#include "daemon/daemon.h"
#include "event/loop.h"
#include "log/log.h"
#include "mon/mapsub.h"
#include "mon/monc.h"
#include "msg/msgr.h"
#include "util/util.h"

#include <ctype.h>
#include <sched.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOGE(...) TSR_LOG_ERR(OSD, __VA_ARGS__)
#define LOGW(...) TSR_LOG_WARN(OSD, __VA_ARGS__)
#define LOGI(...) TSR_LOG_INFO(OSD, __VA_ARGS__)

struct osd {
	struct tsr_daemon *d;
	int32_t whoami;
	struct osd_store store;
	struct tsr_core_host place_host;  /* what the epochs' placement gets */
	struct tsr_msgr *msgr;
	struct tsr_monc *monc;
	struct tsr_mapsub *sub;
	struct tsr_osd_beacon *beacon;
	struct osd_hb *hb;
	struct osd_mapstore *maps;   /* the epochs taken, stored */
	struct osd_pgrt *rt;         /* the PGs run here */
	uint32_t beacon_ms;          /* the beacon starts with the service keys */
	uint64_t asks_timer;         /* hands the PGs' asks to the beacon */
	/* where its PGs stand, to the monitors every stats_ms */
	uint32_t stats_ms;
	uint64_t stats_last_ns, stats_inflight;
	struct tsr_osdmap_epoch *map_ep; /* the last epoch taken (the loop's) */
	/* the OSDs' service keys from the monitors (auth.h) */
	uint64_t keys_timer, keys_inflight;
	int have_keys;
	/* the PGs served under pgs_ep (the loop's thread) */
	struct tsr_osdmap_epoch *pgs_ep;
	struct osd_pg *pgs;
	size_t npgs, nprimary, unplaced;
};

/* The OSD id: --id is a number below the map's limit. */
static int
parse_id(const char *s, int32_t *out, char *err, size_t errlen)
{
	char *end, canon[16];
	long id = strtol(s, &end, 10);

	/* canonical ("7", not "07"): the id names the keyring, the store and
	 * the entity the monitors check, which must all agree */
	snprintf(canon, sizeof(canon), "%ld", id);
	if (*s == '\0' || *end || id < 0 || id >= TSR_OSDMAP_MAX_OSDS ||
	    strcmp(canon, s) != 0)
		return tsr_errf(err, errlen, -EINVAL, "--id %s: an OSD id is a number "
				"from 0 to %d, without leading zeros", s,
				TSR_OSDMAP_MAX_OSDS - 1);
	*out = (int32_t)id;
	return 0;
}

/* ---- Placement groups --------------------------------------------------------*/

/* A new OSD map epoch: the PGs we serve under it. */
static void
on_map(void *arg, int which, uint64_t epoch, int full)
{
	struct osd *o = arg;
	struct tsr_osdmap_epoch *ep;
	struct osd_pg *pgs;
	size_t n, unplaced, primary = 0;
	char err[512];

	(void)full;
	if (which != TSR_MON_MAP_OSD || (ep = tsr_mapsub_osdmap(o->sub)) == NULL)
		return;
	/* every epoch goes into the store, in order */
	osd_mapstore_add(o->maps, o->map_ep ? tsr_osdmap_epoch_map(o->map_ep) : NULL,
			 tsr_osdmap_epoch_map(ep));
	tsr_osdmap_epoch_put(o->map_ep);
	o->map_ep = tsr_osdmap_epoch_get(ep);
	osd_pgrt_map(o->rt, ep);
	if (osd_pgs_compute(ep, o->whoami, &pgs, &n, &unplaced, err, sizeof(err)) < 0) {
		/* keep serving what the last epoch said; the next tries again */
		LOGE("osd.%d: epoch %" PRIu64 ": %s", o->whoami, epoch, err);
		tsr_osdmap_epoch_put(ep);
		return;
	}
	for (size_t i = 0; i < n; i++)
		primary += pgs[i].role == 0;
	if (unplaced && unplaced != o->unplaced)
		LOGW("osd.%d: epoch %" PRIu64 ": %zu PGs cannot be placed (%s)",
		     o->whoami, tsr_osdmap_epoch_number(ep), unplaced, err);
	if (n != o->npgs || primary != o->nprimary)
		LOGI("osd.%d: epoch %" PRIu64 ": in the acting set of %zu PGs, primary "
		     "of %zu", o->whoami, tsr_osdmap_epoch_number(ep), n, primary);
	free(o->pgs);
	tsr_osdmap_epoch_put(o->pgs_ep);
	o->pgs = pgs;
	o->npgs = n;
	o->nprimary = primary;
	o->unplaced = unplaced;
	o->pgs_ep = ep;
	osd_hb_peers(o->hb, ep, pgs, n);
}

/* The store failed a change: stop, as SIGTERM would (any thread). */
static void
osd_fail_stop(void *arg)
{
	tsr_daemon_request_stop(arg);
}

/* What the PGs asked of the monitors goes to the beacon (which sends it)
 * every ASKS_MS, on the loop; the PGs' stats go every stats_ms. */
#define ASKS_MS 50
#define STATS_SOON_MS 500

static int
encode_stats(struct tsr_enc *e, uint64_t client, uint64_t tid, const void *body)
{
	struct tsr_mon_pg_stats s = *(const struct tsr_mon_pg_stats *)body;

	s.client = client;
	s.tid = tid;
	return tsr_monmsg_pg_stats_encode(e, &s);
}

static void
stats_done(void *arg, int status, const char *text)
{
	struct osd *o = arg;

	o->stats_inflight = 0;
	if (status < 0)
		tsr_log(TSR_SUB_OSD, TSR_LOG_INFO, "osd.%d: PG stats not taken: %s",
			o->whoami, text ? text : strerror(-status));
}

/* The PGs this OSD is the primary of, to the leader (one report at a
 * time: the next waits for its answer). */
static void
send_stats(struct osd *o)
{
	struct tsr_mon_pg_stat *v = NULL;
	size_t n = osd_pgrt_stats(o->rt, &v);
	struct tsr_mon_pg_stats s;
	struct tsr_statfs sf;

	memset(&s, 0, sizeof(s));
	s.osd = o->whoami;
	s.pgs = v;
	s.epoch = o->map_ep ? tsr_osdmap_epoch_number(o->map_ep) : 0;
	if (osd_pgrt_usage(o->rt, &sf) == 0) {
		s.total = sf.total;
		s.used = sf.used < sf.total ? sf.used : sf.total;
		s.avail = sf.available < sf.total ? sf.available : sf.total;
		s.objects = sf.objects;
	}
	s.n = (uint32_t)(n < TSR_MONMSG_MAX_PG_STATS ? n : TSR_MONMSG_MAX_PG_STATS);
	if (n > TSR_MONMSG_MAX_PG_STATS)
		tsr_log(TSR_SUB_OSD, TSR_LOG_WARN, "osd.%d: primary of %zu PGs: the stats of "
			"the first %d only are reported", o->whoami, n, TSR_MONMSG_MAX_PG_STATS);
	if (tsr_monc_send_typed(o->monc, TSR_MSG_MON_PG_STATS, encode_stats, &s,
				(uint64_t)o->stats_ms * 2, stats_done, o, &o->stats_inflight) < 0)
		o->stats_inflight = 0;
	free(v);
}

static void
asks(void *arg)
{
	struct osd *o = arg;
	struct tsr_mon_pg_temp_req *temps;
	size_t n;
	uint64_t up_thru;

	o->asks_timer = 0;
	temps = NULL;
	n = 0;
	up_thru = 0;
	if (o->beacon)
		osd_pgrt_asks(o->rt, &up_thru, &temps, &n);
	if (up_thru)
		tsr_osd_beacon_want_up_thru(o->beacon, up_thru);
	for (size_t i = 0; i < n; i++) {
		struct tsr_pgid pgid = { temps[i].pool, temps[i].pg };
		if (tsr_osd_beacon_want_pg_temp(o->beacon, pgid, temps[i].osds, temps[i].n) < 0)
			LOGW("osd.%d: a PG temp ask for %" PRId64 ".%x refused", o->whoami,
			     pgid.pool, pgid.pg);
	}
	free(temps);
	/* every stats_ms, and soon (STATS_SOON_MS after the last) once a PG
	 * changed state: `status` follows peering and recovery closely, and
	 * a storm of changes costs the leader two reports a second an OSD */
	if (o->beacon && !o->stats_inflight) {
		uint64_t since = tsr_now_ns() - o->stats_last_ns;
		int due = since >= (uint64_t)o->stats_ms * 1000000u;
		if (due)
			(void)osd_pgrt_stats_changed(o->rt);    /* (this report has it) */
		if (due || (since >= STATS_SOON_MS * 1000000ull &&
			    osd_pgrt_stats_changed(o->rt))) {
			o->stats_last_ns = tsr_now_ns();
			send_stats(o);
		}
	}
	if (o->beacon) {
		osd_scrub_tick(o->rt);
		osd_pgrt_tick(o->rt);
		osd_pgrt_pace_tick(o->rt);
	}
	/* the stored epochs the copies may need at a restart stay */
	osd_mapstore_floor(o->maps, osd_pgrt_min_sis(o->rt));
	if (tsr_loop_timer_add(tsr_daemon_loop(o->d), ASKS_MS * 1000000ull, asks, o,
			       &o->asks_timer) < 0)
		o->asks_timer = 0;
}

/* A stored epoch at start: the copies loaded from the store take it. */
static void
replayed(void *arg, struct tsr_osdmap_epoch *ep)
{
	osd_pgrt_replay(arg, ep);
}

/* ---- Service keys ---------------------------------------------------------------
 *
 * Other OSDs check this one, and it checks them, with the OSDs' service
 * keys, which the monitors seal for it (core/auth/auth.h): asked for at
 * start, again every KEYS_REFRESH_MS (a rotation of the cluster secret
 * brings new ones), every KEYS_RETRY_MS until a monitor answers. */
#define KEYS_REFRESH_MS (10 * 60 * 1000)
#define KEYS_RETRY_MS 1000

static void fetch_keys(void *arg);

static void
keys_arm(struct osd *o, uint64_t ms)
{
	if (tsr_loop_timer_add(tsr_daemon_loop(o->d), ms * 1000000u, fetch_keys, o,
			       &o->keys_timer) < 0) {
		o->keys_timer = 0;
		LOGE("osd.%d: out of memory for the service key timer", o->whoami);
	}
}

static int
encode_keys(struct tsr_enc *e, uint64_t client, uint64_t tid, const void *body)
{
	struct tsr_mon_svc_keys k = *(const struct tsr_mon_svc_keys *)body;

	k.client = client;
	k.tid = tid;
	return tsr_monmsg_svc_keys_encode(e, &k);
}

static void
keys_done(void *arg, int status, const char *text)
{
	struct osd *o = arg;
	char err[256] = "";
	int rc = -EBADMSG;

	o->keys_inflight = 0;
	if (status == 0)
		rc = tsr_auth_service_open_answer(tsr_daemon_auth(o->d), text, err,
						  sizeof(err));
	if (rc == 0) {
		if (!o->have_keys)
			LOGI("osd.%d: has the OSDs' service keys (%d)", o->whoami,
			     tsr_auth_service_count(tsr_daemon_auth(o->d)));
		o->have_keys = 1;
		keys_arm(o, KEYS_REFRESH_MS);
		osd_pgrt_ready(o->rt);
		if (o->beacon == NULL &&
		    tsr_osd_beacon_start(tsr_daemon_loop(o->d), o->monc, o->sub, o->whoami,
					 tsr_msgr_addr(o->msgr), o->beacon_ms, osd_hb_failed,
					 o->hb, &o->beacon, err, sizeof(err)) < 0)
			LOGE("osd.%d: cannot boot: %s", o->whoami, err);
	} else {
		tsr_log(TSR_SUB_OSD, o->have_keys ? TSR_LOG_WARN : TSR_LOG_INFO,
			"osd.%d: no service keys from the monitors yet: %s", o->whoami,
			status < 0 ? (text ? text : strerror(-status))
				   : err[0] ? err : "a malformed answer");
		keys_arm(o, KEYS_RETRY_MS);
	}
}

static void
fetch_keys(void *arg)
{
	struct osd *o = arg;
	struct tsr_mon_svc_keys k = { .osd = o->whoami };

	o->keys_timer = 0;
	if (o->keys_inflight)
		return;
	if (tsr_monc_send_typed(o->monc, TSR_MSG_MON_SVC_KEYS, encode_keys, &k, 10000,
				keys_done, o, &o->keys_inflight) < 0) {
		o->keys_inflight = 0;
		keys_arm(o, KEYS_RETRY_MS);
	}
}

/* ---- Admin commands -----------------------------------------------------------*/

static int
cmd_beacon(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct osd *o = arg;

	(void)argc;
	(void)argv;
	if (o->beacon == NULL)
		tsr_sbuf_printf(out, "{\"up\": false, \"boots\": 0, \"why\": \"waiting for "
				"the OSDs' service keys from the monitors\"}\n");
	else
		tsr_osd_beacon_status_json(o->beacon, out);
	return 0;
}

static int
cmd_maps(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct osd *o = arg;

	(void)argc;
	(void)argv;
	tsr_sbuf_printf(out, "{");
	tsr_mapsub_stats_json(o->sub, out);
	tsr_sbuf_printf(out, ", \"stored\": ");
	osd_mapstore_status(o->maps, out);
	tsr_sbuf_printf(out, "}\n");
	return 0;
}

static int
cmd_pg_dump(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	(void)argc;
	(void)argv;
	osd_pgrt_status(((struct osd *)arg)->rt, out);
	tsr_sbuf_printf(out, "\n");
	return 0;
}

static int
cmd_pg_ls(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct osd *o = arg;

	(void)argc;
	(void)argv;
	tsr_sbuf_printf(out, "{\"osdmap_epoch\": %" PRIu64 ", \"count\": %zu, "
			"\"primary\": %zu, \"unplaced\": %zu, \"pgs\": [",
			o->pgs_ep ? tsr_osdmap_epoch_number(o->pgs_ep) : 0, o->npgs,
			o->nprimary, o->unplaced);
	for (size_t i = 0; i < o->npgs; i++) {
		const struct osd_pg *p = &o->pgs[i];

		tsr_sbuf_printf(out, "%s\n  {\"pgid\": \"%" PRId64 ".%x\", \"role\": %d, "
				"\"acting\": [", i ? "," : "", p->pgid.pool, p->pgid.pg,
				p->role);
		for (uint32_t j = 0; j < p->nacting; j++)
			tsr_sbuf_printf(out, "%s%d", j ? ", " : "", p->acting[j]);
		tsr_sbuf_printf(out, "]}");
	}
	tsr_sbuf_printf(out, "%s]}\n", o->npgs ? "\n" : "");
	return 0;
}

static int
cmd_heartbeat(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct osd *o = arg;

	(void)argc;
	(void)argv;
	osd_hb_status(o->hb, out);
	return 0;
}

static int
cmd_store(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct osd *o = arg;
	char us[37];

	(void)argc;
	(void)argv;
	tsr_uuid_str(o->store.sb.uuid, us);
	tsr_sbuf_printf(out, "{\"whoami\": %d, \"fsid\": ", o->store.sb.whoami);
	tsr_sbuf_json_str(out, o->store.sb.fsid);
	tsr_sbuf_printf(out, ", \"uuid\": \"%s\", \"backend\": ", us);
	tsr_sbuf_json_str(out, o->store.backend);
	tsr_sbuf_printf(out, ", \"path\": ");
	tsr_sbuf_json_str(out, o->store.path);
	/* no usage here: statfs may block, and this runs on the loop
	 * (backend.h, Threads); `osd df` will report it */
	tsr_sbuf_printf(out, "}\n");
	return 0;
}

/* ---- Life ------------------------------------------------------------------------*/

static int
osd_mkfs(struct tsr_daemon *d, char *err, size_t errlen)
{
	struct tsr_conf *conf = tsr_daemon_conf(d);
	struct osd_store st;
	int32_t id;
	int rc;

	if ((rc = parse_id(tsr_daemon_id(d), &id, err, errlen)) < 0)
		return rc;
	if ((rc = osd_store_open(&st, conf, tsr_daemon_registry(d), err, errlen)) == 0)
		rc = osd_store_mkfs(&st, tsr_conf_str(conf, "fsid"), id, err, errlen);
	osd_store_close(&st);
	return rc;
}

/* SCHED_BATCH for this thread and every thread made after it (the
 * store's, the messenger's, the PG workers', LevelDB's): a woken thread
 * does not preempt the one that woke it, which goes on to the end of its
 * work and often hands over several items at once.  A policy any user
 * may choose; where it is refused the OSD runs as it is. */
static void
sched_batch(int32_t whoami)
{
	struct sched_param sp = { .sched_priority = 0 };

	if (sched_setscheduler(0, SCHED_BATCH, &sp) < 0)
		LOGW("osd.%d: cannot run under SCHED_BATCH (%s); going on without "
		     "(osd_sched_batch)", whoami, strerror(errno));
}

static int
osd_start(struct tsr_daemon *d, char *err, size_t errlen)
{
	struct tsr_conf *conf = tsr_daemon_conf(d);
	struct osd *o = tsr_xcalloc(1, sizeof(*o));
	struct tsr_loop *loop = tsr_daemon_loop(d);
	struct tsr_mon_members mem;
	struct tsr_msgr_opts mo;
	char us[37];
	int rc;

	o->d = d;
	tsr_daemon_set_priv(d, o);
	if ((rc = parse_id(tsr_daemon_id(d), &o->whoami, err, errlen)) < 0)
		return rc;
	if (tsr_conf_bool(conf, "osd_sched_batch"))
		sched_batch(o->whoami);
	if ((rc = osd_store_open(&o->store, conf, tsr_daemon_registry(d), err,
				 errlen)) < 0 ||
	    (rc = osd_store_mount(&o->store, tsr_conf_str(conf, "fsid"), o->whoami,
				  err, errlen)) < 0)
		return rc;
	tsr_uuid_str(o->store.sb.uuid, us);
	LOGI("osd.%d: %s store at %s (uuid %s)", o->whoami, o->store.backend,
	     o->store.path, us);

	if ((rc = tsr_monc_conf(conf, &mem, &mo, err, errlen)) < 0)
		return rc;
	mo.auth = tsr_daemon_auth(d);
	mo.entity_type = TSR_ENTITY_OSD;
	mo.entity_id = (uint64_t)o->whoami;
	mo.bind = tsr_conf_str(conf, "osd_addr");
	if ((rc = tsr_msgr_create(&mo, NULL, &o->msgr, err, errlen)) < 0 ||
	    (rc = osd_hb_create(loop, o->msgr, o->whoami,
				(uint64_t)tsr_conf_int(conf, "osd_heartbeat_interval") * 1000000u,
				(uint64_t)tsr_conf_int(conf, "osd_heartbeat_grace") * 1000000u,
				&o->hb, err, errlen)) < 0 ||
	    (rc = osd_pgrt_create(&o->store, o->msgr, o->whoami,
				  (size_t)tsr_conf_int(conf, "osd_op_shards"), &o->rt, err,
				  errlen)) < 0)
		return rc;
	osd_pgrt_set_max_data(o->rt, mo.max_data, mo.max_front);
	osd_pgrt_set_fail_stop(o->rt, osd_fail_stop, d);
	osd_pgrt_set_pg_limits(o->rt, (uint32_t)tsr_conf_int(conf, "osd_pg_log_max"),
			       (uint32_t)tsr_conf_int(conf, "osd_recovery_max_active"),
			       (uint32_t)tsr_conf_int(conf, "osd_backfill_window"),
			       (uint32_t)tsr_conf_int(conf, "osd_pg_queue_max"));
	osd_pgrt_set_max_backfills(o->rt, (uint32_t)tsr_conf_int(conf, "osd_max_backfills"));
	osd_pgrt_set_recovery_bps(o->rt, (uint64_t)tsr_conf_int(conf, "osd_recovery_max_bytes"));
	osd_pgrt_set_full_ratio(o->rt, tsr_conf_double(conf, "osd_full_ratio"));
	osd_pgrt_set_scrub(o->rt, (uint64_t)tsr_conf_int(conf, "osd_scrub_interval") / 1000,
			   (uint64_t)tsr_conf_int(conf, "osd_deep_scrub_interval") / 1000,
			   (uint32_t)tsr_conf_int(conf, "osd_scrub_chunk_max"),
			   (uint32_t)tsr_conf_int(conf, "osd_max_scrubs"),
			   tsr_conf_bool(conf, "osd_scrub_auto_repair"));
	/* the PG copies in the store, loaded before any message can reach
	 * them (fed the stored epochs below) */
	uint64_t oldest;
	if ((rc = osd_pgrt_load(o->rt, &oldest, err, errlen)) < 0)
		return rc;
	tsr_msgr_start(o->msgr);
	tsr_core_host_init(&o->place_host, "placement", conf, loop);
	struct tsr_osdmap stored;
	if ((rc = osd_mapstore_open(&o->store, (size_t)tsr_conf_int(conf, "osd_map_keep"),
				    &o->maps, &stored, err, errlen)) < 0)
		return rc;
	if ((rc = tsr_monc_create(o->msgr, loop, &mem, &o->monc, err, errlen)) < 0 ||
	    (rc = tsr_mapsub_create(o->msgr, loop, &mem, tsr_daemon_registry(d),
				    &o->place_host.host, TSR_MON_SUB_OSD | TSR_MON_SUB_EVERY, 0, on_map, o,
				    &o->sub, err, errlen)) < 0) {
		tsr_osdmap_free(&stored);
		return rc;
	}
	if (stored.epoch) {
		/* from where we stopped: the monitors send the epochs after */
		char why[256];
		if (tsr_mapsub_seed_osdmap(o->sub, &stored, why, sizeof(why)) < 0)
			LOGW("osd.%d: the stored OSD map of epoch %" PRIu64 " is not usable "
			     "(%s): starting from the monitors' map", o->whoami, stored.epoch,
			     why);
		else
			LOGI("osd.%d: starting from the stored OSD map of epoch %" PRIu64,
			     o->whoami, stored.epoch);
	}
	if (stored.epoch && (o->map_ep = tsr_mapsub_osdmap(o->sub)) == NULL)
		stored.epoch = 0;
	tsr_osdmap_free(&stored);
	/* the PG copies in the store take the stored epochs since each one's
	 * interval began */
	if (oldest) {
		int n = osd_mapstore_replay(o->maps, oldest, tsr_daemon_registry(d),
					    &o->place_host.host, replayed, o->rt);
		LOGI("osd.%d: the PGs in the store took %d stored epochs from %" PRIu64,
		     o->whoami, n, oldest);
	}
	asks(o);
	/* the boot waits for the service keys: an OSD the map shows up must
	 * be able to check the peers that then open sessions to it */
	o->beacon_ms = (uint32_t)tsr_conf_int(conf, "osd_beacon_interval");
	o->stats_ms = (uint32_t)tsr_conf_int(conf, "osd_pg_stats_interval");
	fetch_keys(o);
	if (tsr_daemon_asok(d)) {
		tsr_asok_register(tsr_daemon_asok(d), "beacon",
				  "what the monitors last said about this OSD", cmd_beacon, o);
		tsr_asok_register(tsr_daemon_asok(d), "pg ls",
				  "the PGs this OSD is in the acting set of, and its role",
				  cmd_pg_ls, o);
		tsr_asok_register(tsr_daemon_asok(d), "heartbeat",
				  "the peers pinged, their last answers, the silent ones",
				  cmd_heartbeat, o);
		tsr_asok_register(tsr_daemon_asok(d), "store",
				  "the store: its identity, backend and path",
				  cmd_store, o);
		tsr_asok_register(tsr_daemon_asok(d), "pg dump",
				  "each PG copy run here: its state, why, its log head",
				  cmd_pg_dump, o);
		tsr_asok_register(tsr_daemon_asok(d), "maps",
				  "the OSD map held, how it came, and the epochs stored",
				  cmd_maps, o);
	}
	LOGI("osd.%d at %s", o->whoami, tsr_msgr_addr(o->msgr));
	return 0;
}

static void
osd_stop(struct tsr_daemon *d)
{
	struct osd *o = tsr_daemon_priv(d);

	if (o == NULL)
		return;
	/* the modules first (the loop has stopped: none of their timers or
	 * posts runs meanwhile), then the messenger they used, then the
	 * store (every transaction submitted commits before umount returns) */
	tsr_osd_beacon_stop(o->beacon);
	if (o->asks_timer)
		tsr_loop_timer_cancel(tsr_daemon_loop(d), o->asks_timer);
	if (o->keys_timer)
		tsr_loop_timer_cancel(tsr_daemon_loop(d), o->keys_timer);
	if (o->keys_inflight)
		tsr_monc_cancel(o->monc, o->keys_inflight);
	if (o->stats_inflight)
		tsr_monc_cancel(o->monc, o->stats_inflight);
	tsr_mapsub_destroy(o->sub);
	tsr_monc_destroy(o->monc);
	osd_pgrt_quiesce(o->rt);
	tsr_msgr_destroy(o->msgr);
	osd_pgrt_destroy(o->rt);
	osd_hb_destroy(o->hb);
	free(o->pgs);
	tsr_osdmap_epoch_put(o->pgs_ep);
	tsr_osdmap_epoch_put(o->map_ep);
	osd_mapstore_close(o->maps);
	osd_store_close(&o->store);
	free(o);
	tsr_daemon_set_priv(d, NULL);
}

static void
osd_status(struct tsr_daemon *d, struct tsr_sbuf *out)
{
	struct osd *o = tsr_daemon_priv(d);

	if (o == NULL || o->beacon == NULL)
		return;
	tsr_sbuf_printf(out, ",\n  \"osdmap_epoch\": %" PRIu64 ",\n  \"pgs\": %zu,\n"
			"  \"primary\": %zu", o->pgs_ep ? tsr_osdmap_epoch_number(o->pgs_ep) : 0,
			o->npgs, o->nprimary);
}

static const struct tsr_daemon_def osd_def = {
	.type = "osd",
	.summary = "Tessera object storage daemon: stores objects on one device "
		   "and serves its placement groups.",
	.start = osd_start,
	.stop = osd_stop,
	.status = osd_status,
	.mkfs = osd_mkfs,
	.mkfs_help = "--mkfs makes the store the section osd-ID names (backend, "
		     "backend_options,\nosd_data) and stamps it with the cluster's "
		     "fsid, the OSD id and a new uuid;\nthe OSD then refuses to start "
		     "on a store stamped otherwise.  Add the OSD\nto the map "
		     "(`tessera osd add ID --host HOST`) before starting it.",
};

int
main(int argc, char **argv)
{
	return tsr_daemon_main(argc, argv, &osd_def);
}
