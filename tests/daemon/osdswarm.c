/* osdswarm.c — tsr-osdswarm: the boots and beacons of many OSDs from one
 * process, to measure how the monitors scale (issue 17; bench/mon-scale.sh
 * and test_mon's `scale` case run it).
 *
 *     tsr-osdswarm --conf FILE --secret KEYRING --osds N [--first ID]
 *                  [--silent K] [--interval MS] [--timeout S]
 *
 * The OSDs first .. first+N-1 must be in the OSD map (`osd add
 * FIRST-LAST`).  KEYRING holds the cluster secret (a monitor's keyring):
 * the swarm derives each OSD's key from it, so each OSD's session proves
 * that OSD, as the real daemon's would.  One messenger carries them all,
 * one session per OSD to the leader; a subscription follows the OSD map.
 *
 * It boots every OSD at once (MON_OSD_BOOT), then sends each a beacon
 * (MON_OSD_BEACON) every interval.  Once the map has all of them up, the
 * last K stop their beacons.  It prints one JSON line: how long until all
 * were up in the map and in how many epochs, how long until the silent
 * ones were down, and the OSD map's encoded size.  Exit 0 when both
 * happened within the timeout, 1 otherwise, 2 for a usage error.
 */
#include "auth/auth.h"
#include "config/config.h"
#include "event/loop.h"
#include "log/log.h"
#include "mon/mapsub.h"
#include "mon/monc.h"
#include "mon/monmsg.h"
#include "msg/msgr.h"
#include "util/util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct swarm {
	struct tsr_mon_members mem;
	struct tsr_msgr *msgr;
	struct tsr_mapsub *sub;
	uint8_t secret[TSR_AUTH_KEY_LEN];
	int32_t first;
	uint32_t n, silent, interval_ms;
	struct tsr_auth **auth;          /* each OSD's key */
	struct tsr_conn **conn;          /* each OSD's session to the leader */
	const struct tsr_mon_member **at;/* the monitor each session goes to */
	char leader[64];
	atomic_uint_fast64_t replies, refused, tid;
	atomic_int stop_beacons, quiet;  /* quiet: the last `silent` stop */
	char last_refusal[256];
	pthread_mutex_t lock;            /* leader, last_refusal */
	pthread_mutex_t conn_lock;       /* conn, at: two threads send */
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: tsr-osdswarm --conf FILE --secret KEYRING --osds N [--first ID]\n"
		"                    [--silent K] [--interval MS] [--timeout S]\n"
		"Boot N OSDs at once from one process, beacon for them, silence the\n"
		"last K once all are up; print how long the monitors took (JSON).\n"
		"  --conf FILE       the cluster file (mon_members, fsid)\n"
		"  --secret KEYRING  a keyring holding the cluster secret\n"
		"  --osds N          how many OSDs (1..65536), ids FIRST.. (default 0)\n"
		"  --silent K        how many go silent once all are up (default 0)\n"
		"  --interval MS     beacon interval (default 1000)\n"
		"  --timeout S       give up after S seconds per phase (default 120)\n");
}

static void
on_reply(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	struct swarm *s = arg;
	struct tsr_mon_reply r;
	char err[128];

	(void)c;
	if (tsr_monmsg_reply_decode(m->front, m->front_len, &r, err, sizeof(err)) == 0) {
		atomic_fetch_add(&s->replies, 1);
		if (r.status < 0) {
			atomic_fetch_add(&s->refused, 1);
			pthread_mutex_lock(&s->lock);
			snprintf(s->last_refusal, sizeof(s->last_refusal), "%d %s%s%s",
				 r.status, r.text, r.leader[0] ? "; leader " : "", r.leader);
			if (r.leader[0])
				tsr_strlcpy(s->leader, r.leader, sizeof(s->leader));
			pthread_mutex_unlock(&s->lock);
		}
		free(r.text);
	}
	tsr_msg_free(m, 0);
}

/* The session of OSD i to the leader (the monitor named in the last
 * refusal, else the first member), opened with OSD i's key. */
static struct tsr_conn *
conn_of(struct swarm *s, uint32_t i)
{
	const struct tsr_mon_member *t;
	char who[TSR_MON_NAME_MAX + 8], leader[64];

	pthread_mutex_lock(&s->lock);
	tsr_strlcpy(leader, s->leader, sizeof(leader));
	pthread_mutex_unlock(&s->lock);
	t = tsr_mon_members_by_addr(&s->mem, leader);
	if (t == NULL)
		t = &s->mem.m[0];
	if (s->conn[i] && s->at[i] == t)
		return s->conn[i];
	if (s->conn[i]) {
		tsr_conn_close(s->conn[i]);
		tsr_conn_put(s->conn[i]);
		s->conn[i] = NULL;
	}
	tsr_mon_member_entity(t, who, sizeof(who));
	if (tsr_msgr_connect_as(s->msgr, t->addr, who, s->auth[i], &s->conn[i]) < 0)
		return NULL;
	s->at[i] = t;
	return s->conn[i];
}

static void
send_typed(struct swarm *s, uint32_t i, int beacon)
{
	struct tsr_conn *c;
	struct tsr_enc e;
	uint64_t tid = atomic_fetch_add(&s->tid, 1) + 1;

	pthread_mutex_lock(&s->conn_lock);
	if ((c = conn_of(s, i)) != NULL)
		tsr_conn_get(c);
	pthread_mutex_unlock(&s->conn_lock);
	if (c == NULL)
		return;
	tsr_enc_init(&e);
	if (beacon) {
		struct tsr_mon_osd_beacon b = { .client = 0x5a4d, .tid = tid,
						.osd = s->first + (int32_t)i };
		tsr_strlcpy(b.version, TSR_VERSION, sizeof(b.version));
		tsr_monmsg_osd_beacon_encode(&e, &b);
	} else {
		struct tsr_mon_osd_boot b = { .client = 0x5a4d, .tid = tid,
					      .osd = s->first + (int32_t)i };
		/* an address of its own: the map records one per OSD */
		snprintf(b.addr, sizeof(b.addr), "127.0.0.%u:%u", 1 + (i >> 16) % 250,
			 1024 + (i & 0xffff) % 60000);
		tsr_strlcpy(b.version, TSR_VERSION, sizeof(b.version));
		tsr_monmsg_osd_boot_encode(&e, &b);
	}
	struct tsr_msg *m = tsr_msg_from_enc(beacon ? TSR_MSG_MON_OSD_BEACON
						    : TSR_MSG_MON_OSD_BOOT, &e);
	/* a session that failed (a connect refused in the storm, a monitor
	 * gone) is dropped: the next send opens another, as an OSD does */
	int rc = m ? tsr_conn_send(c, m, TSR_SEND_NOWAIT) : -ENOMEM;
	if (rc < 0 && rc != -EAGAIN && rc != -ENOMEM) {
		pthread_mutex_lock(&s->conn_lock);
		if (s->conn[i] == c) {
			tsr_conn_close(c);
			tsr_conn_put(c);
			s->conn[i] = NULL;
			s->at[i] = NULL;
		}
		pthread_mutex_unlock(&s->conn_lock);
	}
	tsr_conn_put(c);
}

/* Each OSD beacons every interval, the OSDs spread over it as real ones
 * are (each keeps its own clock): a slice every 10 ms. */
static void *
beacons(void *arg)
{
	struct swarm *s = arg;
	uint32_t slices = s->interval_ms / 10 ? s->interval_ms / 10 : 1, next = 0;

	while (!atomic_load(&s->stop_beacons)) {
		for (uint32_t k = 0; k < slices && !atomic_load(&s->stop_beacons); k++) {
			uint32_t upto = atomic_load(&s->quiet) ? s->n - s->silent : s->n;
			uint32_t end = (uint32_t)((uint64_t)s->n * (k + 1) / slices);
			for (; next < end; next++)
				if (next < upto)
					send_typed(s, next, 1);
			struct timespec ts = { 0, 10 * 1000000L };
			nanosleep(&ts, NULL);
		}
		next = 0;
	}
	return NULL;
}

/* How many of the swarm's OSDs [from, to) the map held has up. */
static uint32_t
count_up(struct swarm *s, uint32_t from, uint32_t to, uint64_t *epoch, size_t *bytes)
{
	struct tsr_osdmap_epoch *ep = tsr_mapsub_osdmap(s->sub);
	const struct tsr_osdmap *m;
	uint32_t up = 0;

	if (ep == NULL)
		return 0;
	m = tsr_osdmap_epoch_map(ep);
	for (uint32_t i = from; i < to; i++) {
		const struct tsr_osdmap_osd *o = tsr_osdmap_osd(m, s->first + (int32_t)i);
		up += o && o->up;
	}
	*epoch = m->epoch;
	if (bytes) {
		struct tsr_enc e;
		tsr_enc_init(&e);
		tsr_osdmap_encode(&e, m);
		*bytes = e.len;
		tsr_enc_release(&e);
	}
	tsr_osdmap_epoch_put(ep);
	return up;
}

static uint64_t
ms_since(uint64_t t0)
{
	return (tsr_mono_ns() - t0) / 1000000u;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "conf", required_argument, NULL, 'c' },
		{ "secret", required_argument, NULL, 's' },
		{ "osds", required_argument, NULL, 'n' },
		{ "first", required_argument, NULL, 'f' },
		{ "silent", required_argument, NULL, 'k' },
		{ "interval", required_argument, NULL, 'i' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *conf_path = NULL, *secret_path = NULL;
	struct swarm s = { .interval_ms = 1000 };
	struct tsr_conf *conf = NULL;
	struct tsr_msgr_opts mo;
	struct tsr_loop *loop = NULL;
	struct tsr_loop_thread *lt = NULL;
	struct tsr_auth *admin = NULL;
	uint8_t secrets[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN];
	char err[1024];
	long timeout_s = 120, v;
	int c, rc = 1;
	pthread_t bt;
	int bt_started = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		v = optarg ? strtol(optarg, &end, 10) : 0;
		if (optarg && (c == 'n' || c == 'f' || c == 'k' || c == 'i' || c == 't') &&
		    (*end || v < 0)) {
			fprintf(stderr, "tsr-osdswarm: --%s takes a number, not '%s'\n",
				c == 'n' ? "osds" : c == 'f' ? "first" : c == 'k' ? "silent"
				: c == 'i' ? "interval" : "timeout", optarg);
			return 2;
		}
		switch (c) {
		case 'c': conf_path = optarg; break;
		case 's': secret_path = optarg; break;
		case 'n': s.n = (uint32_t)v; break;
		case 'f': s.first = v > TSR_OSDMAP_MAX_OSDS ? -1 : (int32_t)v; break;
		case 'k': s.silent = (uint32_t)v; break;
		case 'i': s.interval_ms = (uint32_t)v; break;
		case 't': timeout_s = v; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!conf_path || !secret_path || s.n == 0 || s.first < 0 ||
	    (uint64_t)s.first + s.n > TSR_OSDMAP_MAX_OSDS || s.silent > s.n ||
	    s.interval_ms == 0 || optind != argc) {
		usage(stderr);
		return 2;
	}
	tsr_log_set_level(TSR_SUB_MSG, TSR_LOG_ERROR);
	pthread_mutex_init(&s.lock, NULL);
	pthread_mutex_init(&s.conn_lock, NULL);
	if (tsr_conf_load(conf_path, &conf, err, sizeof(err)) < 0 ||
	    tsr_conf_resolve(conf, "client", "admin", NULL, err, sizeof(err)) < 0 ||
	    tsr_monc_conf(conf, &s.mem, &mo, err, sizeof(err)) < 0 ||
	    tsr_auth_load(secret_path, "client.admin", &admin, err, sizeof(err)) < 0) {
		fprintf(stderr, "tsr-osdswarm: %s\n", err);
		goto out;
	}
	if (tsr_auth_secrets(admin, secrets) < 1) {
		fprintf(stderr, "tsr-osdswarm: %s holds no cluster secret\n", secret_path);
		goto out;
	}
	s.auth = tsr_xcalloc(s.n, sizeof(*s.auth));
	s.conn = tsr_xcalloc(s.n, sizeof(*s.conn));
	s.at = tsr_xcalloc(s.n, sizeof(*s.at));
	for (uint32_t i = 0; i < s.n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "osd.%d", s.first + (int32_t)i);
		if (tsr_auth_from_secret(secrets[0], name, &s.auth[i]) < 0) {
			fprintf(stderr, "tsr-osdswarm: no memory for %u keys\n", s.n);
			goto out;
		}
	}
	mo.auth = admin;
	mo.entity_type = TSR_ENTITY_TOOL;
	mo.bind = NULL;
	/* modules are made while their loop does not run yet (mon/mapsub.h) */
	err[0] = '\0';
	if (tsr_loop_create(&loop) < 0 ||
	    tsr_msgr_create(&mo, NULL, &s.msgr, err, sizeof(err)) < 0 ||
	    tsr_msgr_register(s.msgr, TSR_MSG_MON_CMD_REPLY, on_reply, &s,
			      TSR_MSGR_INLINE) < 0) {
		fprintf(stderr, "tsr-osdswarm: %s\n", err[0] ? err : "cannot start");
		goto out;
	}
	tsr_msgr_start(s.msgr);
	if (tsr_mapsub_create(s.msgr, loop, &s.mem, NULL, NULL, TSR_MON_SUB_OSD, 500,
			      NULL, NULL,
			      &s.sub, err, sizeof(err)) < 0 ||
	    tsr_loop_thread_start(loop, &lt) < 0) {
		fprintf(stderr, "tsr-osdswarm: %s\n", err[0] ? err : "cannot start the loop");
		goto out;
	}
	if (tsr_mapsub_wait(s.sub, TSR_MON_MAP_OSD, 1, (uint64_t)timeout_s * 1000) < 0) {
		fprintf(stderr, "tsr-osdswarm: no OSD map from the monitors within %ld s\n",
			timeout_s);
		goto out;
	}

	/* one boot first, to learn the leader from its answer */
	uint64_t e0 = 0, e1 = 0, e2 = 0, t0, up_ms = 0, down_ms = 0;
	size_t map_bytes = 0;
	count_up(&s, 0, s.n, &e0, NULL);
	t0 = tsr_mono_ns();
	send_typed(&s, 0, 0);
	while (atomic_load(&s.replies) == 0 && ms_since(t0) < (uint64_t)timeout_s * 1000)
		usleep(10000);
	if (atomic_load(&s.replies) == 0) {
		fprintf(stderr, "tsr-osdswarm: no monitor answered a boot within %ld s\n",
			timeout_s);
		goto out;
	}
	t0 = tsr_mono_ns();
	for (uint32_t i = 0; i < s.n; i++)
		send_typed(&s, i, 0);
	uint64_t last_boot = tsr_mono_ns();
	/* and beacons from now on, as each OSD sends them once booted */
	if (pthread_create(&bt, NULL, beacons, &s) == 0)
		bt_started = 1;
	for (;;) {
		uint32_t up = count_up(&s, 0, s.n, &e1, NULL);
		if (up == s.n) {
			up_ms = ms_since(t0);
			count_up(&s, 0, s.n, &e1, &map_bytes);
			break;
		}
		if (ms_since(t0) > (uint64_t)timeout_s * 1000) {
			fprintf(stderr, "tsr-osdswarm: %u of %u OSDs up after %ld s (last "
				"refusal: %s)\n", up, s.n, timeout_s, s.last_refusal);
			goto out;
		}
		/* a boot refused (another leader, a change that came first)
		 * is sent again, as the OSD daemon does */
		if (ms_since(last_boot) > 2000) {
			struct tsr_osdmap_epoch *ep = tsr_mapsub_osdmap(s.sub);
			if (ep != NULL) {
				for (uint32_t i = 0; i < s.n; i++) {
					const struct tsr_osdmap_osd *o =
						tsr_osdmap_osd(tsr_osdmap_epoch_map(ep),
							       s.first + (int32_t)i);
					if (o && !o->up)
						send_typed(&s, i, 0);
				}
				tsr_osdmap_epoch_put(ep);
			}
			last_boot = tsr_mono_ns();
		}
		usleep(s.n > 2000 ? 100000 : 20000);
	}
	if (s.silent) {
		/* two beacons from everyone first: the leader has heard them */
		usleep(2 * s.interval_ms * 1000);
		atomic_store(&s.quiet, 1);
		uint64_t t1 = tsr_mono_ns();
		for (;;) {
			uint32_t up = count_up(&s, s.n - s.silent, s.n, &e2, NULL);
			if (up == 0) {
				down_ms = ms_since(t1);
				break;
			}
			if (ms_since(t1) > (uint64_t)timeout_s * 1000) {
				fprintf(stderr, "tsr-osdswarm: %u of %u silent OSDs still up "
					"after %ld s\n", up, s.silent, timeout_s);
				goto out;
			}
			usleep(s.n > 2000 ? 100000 : 20000);
		}
		/* and the others stayed up */
		uint64_t e3;
		uint32_t still = count_up(&s, 0, s.n - s.silent, &e3, NULL);
		if (still != s.n - s.silent) {
			fprintf(stderr, "tsr-osdswarm: %u OSDs that kept beaconing were "
				"marked down too\n", s.n - s.silent - still);
			goto out;
		}
	}
	printf("{\"osds\": %u, \"up_s\": %.3f, \"up_epochs\": %" PRIu64 ", \"silent\": %u, "
	       "\"down_s\": %.3f, \"down_epochs\": %" PRIu64 ", \"osdmap_bytes\": %zu, "
	       "\"replies\": %" PRIu64 ", \"refused\": %" PRIu64 "}\n",
	       s.n, (double)up_ms / 1000, e1 - e0, s.silent, (double)down_ms / 1000,
	       s.silent ? e2 - e1 : 0, map_bytes, (uint64_t)atomic_load(&s.replies),
	       (uint64_t)atomic_load(&s.refused));
	rc = 0;
out:
	atomic_store(&s.stop_beacons, 1);
	if (bt_started)
		pthread_join(bt, NULL);
	/* and taken down once it stopped */
	if (lt)
		tsr_loop_thread_stop(lt);
	tsr_mapsub_destroy(s.sub);
	for (uint32_t i = 0; s.conn && i < s.n; i++)
		if (s.conn[i]) {
			tsr_conn_close(s.conn[i]);
			tsr_conn_put(s.conn[i]);
		}
	tsr_msgr_destroy(s.msgr);
	if (loop)
		tsr_loop_destroy(loop);
	for (uint32_t i = 0; s.auth && i < s.n; i++)
		tsr_auth_destroy(s.auth[i]);
	free(s.auth);
	free(s.conn);
	free(s.at);
	tsr_auth_destroy(admin);
	tsr_conf_destroy(conf);
	pthread_mutex_destroy(&s.lock);
	pthread_mutex_destroy(&s.conn_lock);
	return rc;
}
