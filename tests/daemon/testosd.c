/* testosd.c — tsr-testosd, the monitor side of an OSD and nothing else:
 * it listens on a loopback port (the address an OSD announces), boots
 * and sends beacons through core/beacon/osdbeacon.c — the code the OSD
 * daemon uses — so the monitors' failure detection can be tested with
 * processes that are paused, killed and restarted before the OSD daemon
 * exists.  It stores nothing.
 *
 * Its runtime is the OSD's: one messenger (bound, the OSD's identity and
 * key) and the daemon's loop, with the monitor client, the OSD map
 * subscription and the beacon as modules on them.  Its threads: the main
 * thread (the loop: timers, admin socket, the modules), ms_workers I/O
 * threads and ms_dispatchers dispatch threads — nothing else.
 *
 *     tsr-testosd --conf FILE --id N      (section osd, osd-N)
 *
 * Admin commands beyond the shared ones: `beacon` — {"up": ..,
 * "osdmap_epoch": .., "boots": .., "beacons": ..}.  `status` adds
 * "messengers": the messengers alive in the process.
 */
#include "beacon/osdbeacon.h"
#include "daemon/daemon.h"
#include "mon/mapsub.h"
#include "mon/monc.h"
#include "msg/msgr.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct testosd {
	struct tsr_msgr *msgr;
	struct tsr_monc *monc;
	struct tsr_mapsub *sub;
	struct tsr_osd_beacon *beacon;
};

static int
cmd_beacon(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct testosd *t = arg;
	struct tsr_osd_beacon_state st;

	(void)argc;
	(void)argv;
	tsr_osd_beacon_state(t->beacon, &st);
	tsr_sbuf_printf(out, "{\"up\": %s, \"osdmap_epoch\": %" PRIu64 ", \"boots\": %"
			PRIu64 ", \"beacons\": %" PRIu64 "}\n", st.up ? "true" : "false",
			st.epoch, st.boots, st.beacons);
	return 0;
}

static int
testosd_start(struct tsr_daemon *d, char *err, size_t errlen)
{
	struct tsr_conf *conf = tsr_daemon_conf(d);
	struct testosd *t = tsr_xcalloc(1, sizeof(*t));
	struct tsr_mon_members mem;
	struct tsr_msgr_opts o;
	char *end;
	long id = strtol(tsr_daemon_id(d), &end, 10);
	int rc;

	tsr_daemon_set_priv(d, t);
	if (*end || id < 0 || id > 65535)
		return tsr_errf(err, errlen, -EINVAL, "an OSD id is a number, not '%s'",
				tsr_daemon_id(d));
	if ((rc = tsr_monc_conf(conf, &mem, &o, err, errlen)) < 0)
		return rc;
	o.auth = tsr_daemon_auth(d); /* our key, from `keyring` */
	o.entity_type = TSR_ENTITY_OSD;
	o.entity_id = (uint64_t)id;
	o.bind = "127.0.0.1:0";
	if ((rc = tsr_msgr_create(&o, NULL, &t->msgr, err, errlen)) < 0)
		return rc;
	tsr_msgr_start(t->msgr);
	if ((rc = tsr_monc_create(t->msgr, tsr_daemon_loop(d), &mem, &t->monc, err,
				  errlen)) < 0 ||
	    (rc = tsr_mapsub_create(t->msgr, tsr_daemon_loop(d), &mem, NULL, NULL,
				    TSR_MON_SUB_OSD,
				    0, NULL, NULL, &t->sub, err, errlen)) < 0)
		return rc;
	rc = tsr_osd_beacon_start(tsr_daemon_loop(d), t->monc, t->sub, (int32_t)id,
				  tsr_msgr_addr(t->msgr),
				  (uint32_t)tsr_conf_int(conf, "osd_beacon_interval"),
				  NULL, NULL, &t->beacon, err, errlen);
	if (rc < 0)
		return rc;
	if (tsr_daemon_asok(d))
		tsr_asok_register(tsr_daemon_asok(d), "beacon",
				  "what the monitors last said about this OSD", cmd_beacon, t);
	return 0;
}

static void
testosd_stop(struct tsr_daemon *d)
{
	struct testosd *t = tsr_daemon_priv(d);

	if (t == NULL)
		return;
	/* the modules first (the loop has stopped: none of their timers or
	 * posts runs meanwhile), then the messenger they used */
	tsr_osd_beacon_stop(t->beacon);
	tsr_mapsub_destroy(t->sub);
	tsr_monc_destroy(t->monc);
	tsr_msgr_destroy(t->msgr);
	free(t);
	tsr_daemon_set_priv(d, NULL);
}

static const struct tsr_daemon_def testosd_def = {
	.type = "osd",
	.summary = "Tessera test OSD: boots and sends beacons to the monitors, stores nothing.",
	.start = testosd_start,
	.stop = testosd_stop,
};

int
main(int argc, char **argv)
{
	return tsr_daemon_main(argc, argv, &testosd_def);
}
