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
 * "osdmap_epoch": .., "boots": .., "beacons": .., and the asks pending}.
 * `want up_thru EPOCH` and `want pg_temp POOL.PG [ID,ID...]` ask what a
 * PG would ask of the map (osdbeacon.h), for the monitors' tests.
 * `maps` says which OSD map epoch it holds and how many full maps and
 * incrementals it took (it subscribes for every epoch, as an OSD does).
 * `status` adds "messengers": the messengers alive in the process.
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
	(void)argc;
	(void)argv;
	tsr_osd_beacon_status_json(((struct testosd *)arg)->beacon, out);
	return 0;
}

/* maps: the OSD map held and how it came (full maps, incrementals) */
static int
cmd_maps(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	(void)argc;
	(void)argv;
	tsr_sbuf_printf(out, "{");
	tsr_mapsub_stats_json(((struct testosd *)arg)->sub, out);
	tsr_sbuf_printf(out, "}\n");
	return 0;
}

/* want up_thru EPOCH | want pg_temp POOL.PG [ID,ID,...] */
static int
cmd_want(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct testosd *t = arg;
	char *end;

	if (argc == 2 && strcmp(argv[0], "up_thru") == 0) {
		unsigned long long e = strtoull(argv[1], &end, 10);
		if (*argv[1] == '\0' || *end)
			return tsr_sbuf_printf(out, "want up_thru EPOCH\n"), -EINVAL;
		tsr_osd_beacon_want_up_thru(t->beacon, e);
		tsr_sbuf_printf(out, "{\"want_up_thru\": %llu}\n", e);
		return 0;
	}
	if ((argc == 2 || argc == 3) && strcmp(argv[0], "pg_temp") == 0) {
		struct tsr_pgid pgid;
		int32_t osds[TSR_OSDMAP_MAX_SIZE];
		uint32_t n = 0;
		long long pool = strtoll(argv[1], &end, 10);
		if (end == argv[1] || *end != '.')
			return tsr_sbuf_printf(out, "POOL.PG, not '%s'\n", argv[1]), -EINVAL;
		pgid.pool = pool;
		pgid.pg = (uint32_t)strtoul(end + 1, &end, 16);
		if (*end)
			return tsr_sbuf_printf(out, "POOL.PG, not '%s'\n", argv[1]), -EINVAL;
		for (char *p = argc == 3 ? argv[2] : NULL; p && *p && n < TSR_OSDMAP_MAX_SIZE;) {
			osds[n++] = (int32_t)strtol(p, &end, 10);
			p = *end == ',' ? end + 1 : end;
			if (end == p && *p)
				return tsr_sbuf_printf(out, "ID,ID,...\n"), -EINVAL;
		}
		int rc = tsr_osd_beacon_want_pg_temp(t->beacon, pgid, osds, n);
		tsr_sbuf_printf(out, "{\"pg_temp\": %d}\n", rc);
		return rc;
	}
	tsr_sbuf_printf(out, "want up_thru EPOCH | want pg_temp POOL.PG [ID,ID,...]\n");
	return -EINVAL;
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
				    TSR_MON_SUB_OSD | TSR_MON_SUB_EVERY,
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
	if (tsr_daemon_asok(d))
		tsr_asok_register(tsr_daemon_asok(d), "maps",
				  "the OSD map epoch held; full maps and incrementals taken",
				  cmd_maps, t);
	if (tsr_daemon_asok(d))
		tsr_asok_register(tsr_daemon_asok(d), "want",
				  "ask the map for up_thru or a PG temp mapping", cmd_want, t);
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
