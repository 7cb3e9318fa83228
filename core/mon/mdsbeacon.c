/* mdsbeacon.c — an MDS's beacons and its rank (mdsbeacon.h). */
#include "mon/mdsbeacon.h"
#include "log/log.h"
#include "mon/monc.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

struct tsr_mds_beacon {
	struct tsr_monc *monc;
	struct tsr_mapsub *sub;
	char name[TSR_MDSMAP_NAME];
	char addr[TSR_MDSMAP_NAME];
	uint32_t interval_ms;
	void (*role_cb)(void *arg, const struct tsr_mds_role *role);
	void *arg;

	pthread_t thr;
	int started;
	pthread_mutex_t lock;        /* everything below */
	pthread_cond_t cond;
	int stop, kick;
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

/* A new MDS map: what does it say of this incarnation? */
static void
on_map(void *arg, int which, uint64_t epoch, int full)
{
	struct tsr_mds_beacon *b = arg;
	struct tsr_mdsmap m;
	struct tsr_mds_role copy;
	int changed = 0;

	(void)epoch;
	(void)full;
	if (which != TSR_MON_MAP_MDS || tsr_mapsub_mdsmap(b->sub, &m) < 0)
		return;
	pthread_mutex_lock(&b->lock);
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
	copy = b->role;
	b->kick = 1;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	tsr_mdsmap_free(&m);
	if (changed && b->role_cb)
		b->role_cb(b->arg, &copy);
}

/* Wait ms, or until kicked or stopped; 1 when stopped. */
static int
nap(struct tsr_mds_beacon *b, uint32_t ms)
{
	uint64_t until = tsr_mono_ns() + (uint64_t)ms * 1000000u;
	int stop;

	pthread_mutex_lock(&b->lock);
	while (!b->stop && !b->kick &&
	       tsr_cond_wait_until(&b->cond, &b->lock, until) != ETIMEDOUT)
		;
	b->kick = 0;
	stop = b->stop;
	pthread_mutex_unlock(&b->lock);
	return stop;
}

static void *
beacon_main(void *arg)
{
	struct tsr_mds_beacon *b = arg;

	for (;;) {
		char gidw[24], state[16], *text = NULL;
		char *argv[] = { "mds", "beacon", b->name, gidw, b->addr, state };
		int rc;

		pthread_mutex_lock(&b->lock);
		if (b->stop) {
			pthread_mutex_unlock(&b->lock);
			break;
		}
		snprintf(gidw, sizeof(gidw), "%" PRIu64, b->role.gid);
		snprintf(state, sizeof(state), "%s",
			 b->role.rank < 0 ? "standby" : b->replayed ? "active" : "replay");
		pthread_mutex_unlock(&b->lock);
		rc = tsr_monc_command(b->monc, 6, argv, (uint64_t)b->interval_ms * 5 + 2000,
				      &text);
		if (rc == 0) {
			pthread_mutex_lock(&b->lock);
			b->role.beacons++;
			pthread_mutex_unlock(&b->lock);
		} else {
			tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "mds.%s: beacon: %s", b->name,
				text ? text : strerror(-rc));
		}
		free(text);
		if (nap(b, b->interval_ms))
			break;
	}
	return NULL;
}

int
tsr_mds_beacon_start(const struct tsr_mon_members *members,
		     const struct tsr_msgr_opts *opts, const char *name, const char *addr,
		     uint32_t interval_ms,
		     void (*role_cb)(void *arg, const struct tsr_mds_role *role), void *arg,
		     struct tsr_mds_beacon **out, char *err, size_t errlen)
{
	struct tsr_mds_beacon *b;
	int rc;

	if (!tsr_osdmap_name_ok(name) || strlen(addr) >= TSR_MDSMAP_NAME)
		return tsr_errf(err, errlen, -EINVAL, "an MDS name is 1 to 63 of "
				"letters, digits, '-', '_', '.', not '%s'", name);
	b = tsr_xcalloc(1, sizeof(*b));
	tsr_strlcpy(b->name, name, sizeof(b->name));
	tsr_strlcpy(b->addr, addr, sizeof(b->addr));
	b->interval_ms = interval_ms ? interval_ms : 2000;
	b->role_cb = role_cb;
	b->arg = arg;
	b->role.gid = new_gid();
	b->role.rank = -1;
	b->role.incarnations = 1;
	pthread_mutex_init(&b->lock, NULL);
	tsr_cond_init_mono(&b->cond);
	rc = tsr_monc_create(members, opts, &b->monc, err, errlen);
	if (rc == 0)
		rc = tsr_mapsub_create(members, opts, TSR_MON_SUB_MDS, 0, on_map, b,
				       &b->sub, err, errlen);
	if (rc == 0 && (rc = -pthread_create(&b->thr, NULL, beacon_main, b)) < 0)
		tsr_errf(err, errlen, rc, "starting the beacon thread: %s", strerror(-rc));
	b->started = rc == 0;
	if (rc < 0) {
		tsr_mds_beacon_stop(b);
		return rc;
	}
	*out = b;
	return 0;
}

void
tsr_mds_beacon_stop(struct tsr_mds_beacon *b)
{
	if (b == NULL)
		return;
	if (b->started) {
		pthread_mutex_lock(&b->lock);
		b->stop = 1;
		pthread_cond_broadcast(&b->cond);
		pthread_mutex_unlock(&b->lock);
		pthread_join(b->thr, NULL);
	}
	tsr_mapsub_destroy(b->sub);
	tsr_monc_destroy(b->monc);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	free(b);
}

void
tsr_mds_beacon_active(struct tsr_mds_beacon *b)
{
	pthread_mutex_lock(&b->lock);
	if (b->role.rank >= 0 && !b->replayed) {
		b->replayed = 1;
		b->kick = 1; /* say so now, not at the next interval */
		pthread_cond_broadcast(&b->cond);
	}
	pthread_mutex_unlock(&b->lock);
}

void
tsr_mds_beacon_role(struct tsr_mds_beacon *b, struct tsr_mds_role *out)
{
	pthread_mutex_lock(&b->lock);
	*out = b->role;
	pthread_mutex_unlock(&b->lock);
}
