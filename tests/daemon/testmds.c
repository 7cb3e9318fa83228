/* testmds.c — tsr-testmds, the monitor side of an MDS and nothing else: it
 * listens on a loopback port (the address an MDS announces), sends
 * beacons and follows the MDS map through core/mon/mdsbeacon.c — the code
 * the MDS daemon will use — and "replays" a rank it is given by waiting
 * TSR_TESTMDS_REPLAY_MS (default 300), so failover can be tested with
 * processes that are paused, killed and restarted before the MDS daemon
 * exists.  It serves no metadata.
 *
 *     tsr-testmds --conf FILE --id NAME      (sections mds, mds-NAME)
 *
 * Admin commands beyond the shared ones: `role` — {"gid": .., "rank": ..,
 * "state": "..", "mdsmap_epoch": .., "incarnations": .., "beacons": ..}.
 */
#include "daemon/daemon.h"
#include "log/log.h"
#include "mon/mdsbeacon.h"
#include "mon/monc.h"
#include "msg/msgr.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct testmds {
	struct tsr_msgr *msgr;
	struct tsr_mds_beacon *beacon;
	uint32_t replay_ms;
	pthread_t replayer;
	int replayer_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t replay_gid;         /* the incarnation to replay for; 0: none */
	int32_t replay_rank;
	int stop;
};

static int
cmd_role(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct testmds *t = arg;
	struct tsr_mds_role r;

	(void)argc;
	(void)argv;
	tsr_mds_beacon_role(t->beacon, &r);
	tsr_sbuf_printf(out, "{\"gid\": %" PRIu64 ", \"rank\": %d, \"state\": \"%s\", "
			"\"mdsmap_epoch\": %" PRIu64 ", \"incarnations\": %" PRIu64 ", "
			"\"beacons\": %" PRIu64 "}\n", r.gid, r.rank,
			r.rank < 0 ? "standby" : tsr_mds_state_name(r.state), r.epoch,
			r.incarnations, r.beacons);
	return 0;
}

/* The map gave us a rank to replay: do it (wait) on the replayer thread. */
static void
on_role(void *arg, const struct tsr_mds_role *r)
{
	struct testmds *t = arg;

	tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "incarnation %" PRIu64 ": rank %d, %s "
		"(MDS map epoch %" PRIu64 ")", r->gid, r->rank,
		r->rank < 0 ? "standby" : tsr_mds_state_name(r->state), r->epoch);
	pthread_mutex_lock(&t->lock);
	if (r->rank >= 0 && r->state == TSR_MDS_REPLAY) {
		t->replay_gid = r->gid;
		t->replay_rank = r->rank;
		pthread_cond_broadcast(&t->cond);
	} else {
		t->replay_gid = 0;
	}
	pthread_mutex_unlock(&t->lock);
}

static void *
replayer(void *arg)
{
	struct testmds *t = arg;

	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		if (t->replay_gid == 0) {
			pthread_cond_wait(&t->cond, &t->lock);
			continue;
		}
		uint64_t gid = t->replay_gid;
		uint64_t until = tsr_mono_ns() + (uint64_t)t->replay_ms * 1000000u;
		while (!t->stop && t->replay_gid == gid &&
		       tsr_cond_wait_until(&t->cond, &t->lock, until) != ETIMEDOUT)
			;
		if (t->stop || t->replay_gid != gid)
			continue;
		tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "rank %d replayed: active",
			t->replay_rank);
		t->replay_gid = 0;
		pthread_mutex_unlock(&t->lock);
		tsr_mds_beacon_active(t->beacon);
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
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

	pthread_mutex_init(&t->lock, NULL);
	tsr_cond_init_mono(&t->cond);
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
	if ((rc = pthread_create(&t->replayer, NULL, replayer, t)) != 0)
		return tsr_errf(err, errlen, -rc, "starting a thread: %s", strerror(rc));
	t->replayer_started = 1;
	o.bind = NULL;
	rc = tsr_mds_beacon_start(&mem, &o, tsr_daemon_id(d), tsr_msgr_addr(t->msgr),
				  (uint32_t)tsr_conf_int(conf, "mds_beacon_interval"),
				  on_role, t, &t->beacon, err, errlen);
	if (rc < 0)
		return rc;
	if (tsr_daemon_asok(d))
		tsr_asok_register(tsr_daemon_asok(d), "role",
				  "this MDS's incarnation, rank and state", cmd_role, t);
	return 0;
}

static void
testmds_stop(struct tsr_daemon *d)
{
	struct testmds *t = tsr_daemon_priv(d);

	if (t == NULL)
		return;
	if (t->replayer_started) {
		pthread_mutex_lock(&t->lock);
		t->stop = 1;
		pthread_cond_broadcast(&t->cond);
		pthread_mutex_unlock(&t->lock);
		pthread_join(t->replayer, NULL);
	}
	tsr_mds_beacon_stop(t->beacon);
	tsr_msgr_destroy(t->msgr);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->cond);
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
