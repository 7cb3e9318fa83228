/* testmds.c — tsr-testmds, the monitor side of an MDS and nothing else: it
 * listens on a loopback port (the address an MDS announces), sends
 * beacons and follows the MDS map through core/beacon/mdsbeacon.c — the
 * code the MDS daemon will use — and "replays" a rank it is given by
 * waiting TSR_TESTMDS_REPLAY_MS (default 300, a timer), so failover can be
 * tested with processes that are paused, killed and restarted before the
 * MDS daemon exists.  It serves no metadata.
 *
 * Its runtime is the MDS's: one messenger and the daemon's loop, with the
 * monitor client, the MDS map subscription and the beacon as modules.
 *
 *     tsr-testmds --conf FILE --id NAME      (sections mds, mds-NAME)
 *
 * Admin commands beyond the shared ones: `role` — {"gid": .., "rank": ..,
 * "state": "..", "mdsmap_epoch": .., "incarnations": .., "beacons": ..}.
 * `status` adds "messengers": the messengers alive in the process.
 */
#include "beacon/mdsbeacon.h"
#include "daemon/daemon.h"
#include "event/loop.h"
#include "log/log.h"
#include "mon/mapsub.h"
#include "mon/monc.h"
#include "msg/msgr.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Everything on the daemon's loop. */
struct testmds {
	struct tsr_loop *loop;
	struct tsr_msgr *msgr;
	struct tsr_monc *monc;
	struct tsr_mapsub *sub;
	struct tsr_mds_beacon *beacon;
	uint32_t replay_ms;
	uint64_t replay_timer;       /* the replay in progress; 0: none */
	int32_t replay_rank;
};

static void
replayed(void *arg)
{
	struct testmds *t = arg;

	t->replay_timer = 0;
	tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "rank %d replayed: active", t->replay_rank);
	tsr_mds_beacon_active(t->beacon);
}

/* The map gave us a rank to replay: "replay" it (a timer); any other
 * change ends a replay in progress. */
static void
on_role(void *arg, const struct tsr_mds_role *r)
{
	struct testmds *t = arg;

	tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "incarnation %" PRIu64 ": rank %d, %s "
		"(MDS map epoch %" PRIu64 ")", r->gid, r->rank,
		r->rank < 0 ? "standby" : tsr_mds_state_name(r->state), r->epoch);
	if (t->replay_timer)
		tsr_loop_timer_cancel(t->loop, t->replay_timer);
	t->replay_timer = 0;
	if (r->rank >= 0 && r->state == TSR_MDS_REPLAY) {
		t->replay_rank = r->rank;
		if (tsr_loop_timer_add(t->loop, (uint64_t)t->replay_ms * 1000000u,
				       replayed, t, &t->replay_timer) < 0)
			tsr_log(TSR_SUB_MDS, TSR_LOG_ERROR, "rank %d: out of memory "
				"for the replay's timer", r->rank);
	}
}

static int
testmds_start(struct tsr_daemon *d, char *err, size_t errlen)
{
	struct tsr_conf *conf = tsr_daemon_conf(d);
	struct testmds *t = tsr_xcalloc(1, sizeof(*t));
	const char *env = getenv("TSR_TESTMDS_REPLAY_MS");
	struct tsr_mon_members mem;
	struct tsr_msgr_opts o;
	int rc;

	t->loop = tsr_daemon_loop(d);
	t->replay_ms = env ? (uint32_t)strtoul(env, NULL, 10) : 300;
	tsr_daemon_set_priv(d, t);
	if ((rc = tsr_monc_conf(conf, &mem, &o, err, errlen)) < 0)
		return rc;
	o.auth = tsr_daemon_auth(d); /* our key, from `keyring` */
	o.entity_type = TSR_ENTITY_MDS;
	o.entity_id = 0;
	o.bind = "127.0.0.1:0";
	if ((rc = tsr_msgr_create(&o, NULL, &t->msgr, err, errlen)) < 0)
		return rc;
	tsr_msgr_start(t->msgr);
	if ((rc = tsr_monc_create(t->msgr, t->loop, &mem, &t->monc, err, errlen)) < 0 ||
	    (rc = tsr_mapsub_create(t->msgr, t->loop, &mem, NULL, NULL, TSR_MON_SUB_MDS,
				    0, NULL,
				    NULL, &t->sub, err, errlen)) < 0)
		return rc;
	rc = tsr_mds_beacon_start(t->loop, t->monc, t->sub, tsr_daemon_id(d),
				  tsr_msgr_addr(t->msgr),
				  (uint32_t)tsr_conf_int(conf, "mds_beacon_interval"),
				  on_role, t, &t->beacon, err, errlen);
	if (rc < 0)
		return rc;
	if (tsr_daemon_asok(d))
		tsr_asok_register(tsr_daemon_asok(d), "role",
				  "this MDS's incarnation, rank and state",
				  tsr_mds_beacon_cmd_role, t->beacon);
	return 0;
}

static void
testmds_stop(struct tsr_daemon *d)
{
	struct testmds *t = tsr_daemon_priv(d);

	if (t == NULL)
		return;
	if (t->replay_timer)
		tsr_loop_timer_cancel(t->loop, t->replay_timer);
	tsr_mds_beacon_stop(t->beacon);
	tsr_mapsub_destroy(t->sub);
	tsr_monc_destroy(t->monc);
	tsr_msgr_destroy(t->msgr);
	free(t);
	tsr_daemon_set_priv(d, NULL);
}

static const struct tsr_daemon_def testmds_def = {
	.type = "mds",
	.summary = "Tessera test MDS: beacons, follows the MDS map, takes ranks; serves nothing.",
	.start = testmds_start,
	.stop = testmds_stop,
};

int
main(int argc, char **argv)
{
	return tsr_daemon_main(argc, argv, &testmds_def);
}
