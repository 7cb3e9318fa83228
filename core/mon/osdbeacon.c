/* osdbeacon.c — boot and beacons of an OSD (osdbeacon.h). */
#include "mon/osdbeacon.h"
#include "log/log.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tsr_osd_beacon {
	struct tsr_monc *monc;
	struct tsr_mapsub *sub;     /* the OSD map: is this OSD up in it? */
	int32_t id;
	char addr[64];
	uint32_t interval_ms;
	void (*failed)(void *arg, char *buf, size_t buflen);
	void *arg;
	pthread_t thr;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	int booted;                 /* our last boot was acknowledged ... */
	uint64_t booted_at;         /* ... at this time (mono ns) */
	int seen_up;                /* and a map since has shown us up */
	struct tsr_osd_beacon_state st;
};

/* How long after a boot a map that still shows the OSD down is taken
 * for one from before the boot (the subscription lags the boot's
 * answer by a push). */
#define BOOT_SETTLE_INTERVALS 5

/* Sleep ms unless stopped; 1 when stopped. */
static int
nap(struct tsr_osd_beacon *b, uint32_t ms)
{
	uint64_t until = tsr_mono_ns() + (uint64_t)ms * 1000000u;
	int stop;

	pthread_mutex_lock(&b->lock);
	while (!b->stop && tsr_cond_wait_until(&b->cond, &b->lock, until) != ETIMEDOUT)
		;
	stop = b->stop;
	pthread_mutex_unlock(&b->lock);
	return stop;
}

static int
stopped(struct tsr_osd_beacon *b)
{
	int stop;

	pthread_mutex_lock(&b->lock);
	stop = b->stop;
	pthread_mutex_unlock(&b->lock);
	return stop;
}

static int
boot(struct tsr_osd_beacon *b)
{
	char idw[16], *argv[] = { "osd", "boot", idw, b->addr };
	char *text = NULL;
	int rc;

	snprintf(idw, sizeof(idw), "%d", b->id);
	/* from now on a map showing us up counts, even one pushed before
	 * the boot's answer comes */
	pthread_mutex_lock(&b->lock);
	b->seen_up = 0;
	b->booted_at = tsr_mono_ns();
	pthread_mutex_unlock(&b->lock);
	rc = tsr_monc_command(b->monc, 4, argv, (uint64_t)b->interval_ms * 5 + 2000, &text);
	if (rc == 0) {
		pthread_mutex_lock(&b->lock);
		b->booted = 1;
		b->st.boots++;
		pthread_mutex_unlock(&b->lock);
		tsr_log(TSR_SUB_OSD, TSR_LOG_INFO, "osd.%d: booted at %s", b->id, b->addr);
	} else {
		tsr_log(TSR_SUB_OSD, TSR_LOG_WARN, "osd.%d: boot: %s", b->id,
			text ? text : strerror(-rc));
	}
	free(text);
	return rc;
}

/* A new OSD map.  Up in it at our address: as it should be.  Down (or
 * another address) after the map showed us up, or long after our boot:
 * the monitors marked us down while we are alive; we boot again at once
 * rather than serve with a map that says we are down. */
static void
on_map(void *arg, int which, uint64_t epoch, int full)
{
	struct tsr_osd_beacon *b = arg;
	struct tsr_osdmap m;
	int again = 0;

	(void)which;
	(void)full;
	if (tsr_mapsub_osdmap(b->sub, &m) < 0)
		return;
	const struct tsr_osdmap_osd *o = tsr_osdmap_osd(&m, b->id);
	int up = o && o->up && strcmp(o->addr, b->addr) == 0;
	pthread_mutex_lock(&b->lock);
	b->st.up = up;
	b->st.epoch = epoch;
	if (up) {
		b->seen_up = 1;
	} else if (b->booted &&
		   (b->seen_up || tsr_mono_ns() - b->booted_at >
		    (uint64_t)b->interval_ms * BOOT_SETTLE_INTERVALS * 1000000u)) {
		b->booted = 0;
		again = 1;
		pthread_cond_broadcast(&b->cond);
	}
	pthread_mutex_unlock(&b->lock);
	if (again)
		tsr_log(TSR_SUB_OSD, TSR_LOG_WARN, "osd.%d: the map (epoch %llu) has us "
			"%s while we are alive: booting again", b->id,
			(unsigned long long)epoch, o ? "down" : "removed");
	tsr_osdmap_free(&m);
}

/* Look at the map held again: a map that showed us down while our boot
 * was on its way, or within the settling time, is judged now. */
static void
recheck(struct tsr_osd_beacon *b)
{
	uint64_t e = tsr_mapsub_epoch(b->sub, TSR_MON_MAP_OSD);

	if (e)
		on_map(b, TSR_MON_MAP_OSD, e, 0);
}

static void *
beacon_main(void *arg)
{
	struct tsr_osd_beacon *b = arg;

	while (!stopped(b)) {
		char idw[16], failed[1024] = "", *argv[5] = { "osd", "beacon", idw,
							      "--failed", failed };
		char *text = NULL;
		int rc, booted;

		pthread_mutex_lock(&b->lock);
		booted = b->booted;
		pthread_mutex_unlock(&b->lock);
		if (!booted) {
			if (boot(b) < 0 && nap(b, b->interval_ms))
				break;
			recheck(b);
			continue;
		}
		if (nap(b, b->interval_ms))
			break;
		snprintf(idw, sizeof(idw), "%d", b->id);
		if (b->failed)
			b->failed(b->arg, failed, sizeof(failed));
		rc = tsr_monc_command(b->monc, failed[0] ? 5 : 3, argv,
				      (uint64_t)b->interval_ms * 5 + 2000, &text);
		if (rc == 0) {
			pthread_mutex_lock(&b->lock);
			b->st.beacons++;
			pthread_mutex_unlock(&b->lock);
			recheck(b);
		} else {
			tsr_log(TSR_SUB_OSD, TSR_LOG_WARN, "osd.%d: beacon: %s", b->id,
				text ? text : strerror(-rc));
		}
		free(text);
	}
	return NULL;
}

int
tsr_osd_beacon_start(const struct tsr_mon_members *members,
		     const struct tsr_msgr_opts *opts, int32_t id, const char *addr,
		     uint32_t interval_ms,
		     void (*failed)(void *arg, char *buf, size_t buflen), void *arg,
		     struct tsr_osd_beacon **out, char *err, size_t errlen)
{
	struct tsr_osd_beacon *b = tsr_xcalloc(1, sizeof(*b));
	int rc;

	b->id = id;
	snprintf(b->addr, sizeof(b->addr), "%s", addr);
	b->interval_ms = interval_ms ? interval_ms : 2000;
	b->failed = failed;
	b->arg = arg;
	pthread_mutex_init(&b->lock, NULL);
	tsr_cond_init_mono(&b->cond);
	rc = tsr_monc_create(members, opts, &b->monc, err, errlen);
	if (rc == 0)
		rc = tsr_mapsub_create(members, opts, TSR_MON_SUB_OSD, 0, on_map, b,
				       &b->sub, err, errlen);
	if (rc == 0 && (rc = -pthread_create(&b->thr, NULL, beacon_main, b)) < 0)
		tsr_errf(err, errlen, rc, "starting the beacon thread: %s", strerror(-rc));
	if (rc < 0) {
		tsr_mapsub_destroy(b->sub);
		tsr_monc_destroy(b->monc);
		pthread_mutex_destroy(&b->lock);
		pthread_cond_destroy(&b->cond);
		free(b);
		return rc;
	}
	*out = b;
	return 0;
}

void
tsr_osd_beacon_stop(struct tsr_osd_beacon *b)
{
	if (b == NULL)
		return;
	pthread_mutex_lock(&b->lock);
	b->stop = 1;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	pthread_join(b->thr, NULL);
	tsr_mapsub_destroy(b->sub);
	tsr_monc_destroy(b->monc);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	free(b);
}

void
tsr_osd_beacon_state(struct tsr_osd_beacon *b, struct tsr_osd_beacon_state *out)
{
	pthread_mutex_lock(&b->lock);
	*out = b->st;
	pthread_mutex_unlock(&b->lock);
}
