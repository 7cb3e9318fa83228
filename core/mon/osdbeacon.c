/* osdbeacon.c — boot and beacons of an OSD (osdbeacon.h). */
#include "mon/osdbeacon.h"
#include "log/log.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tsr_osd_beacon {
	struct tsr_monc *monc;
	int32_t id;
	char addr[64];
	uint32_t interval_ms;
	void (*failed)(void *arg, char *buf, size_t buflen);
	void *arg;
	pthread_t thr;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	struct tsr_osd_beacon_state st;
};

/* Sleep ms unless stopped; 1 when stopped. */
static int
nap(struct tsr_osd_beacon *b, uint32_t ms)
{
	struct timespec ts;
	int stop;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&b->lock);
	while (!b->stop && pthread_cond_timedwait(&b->cond, &b->lock, &ts) != ETIMEDOUT)
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

static uint64_t
json_u64(const char *s, const char *key)
{
	char pat[48];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(s, pat);
	return p ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

static int
boot(struct tsr_osd_beacon *b)
{
	char idw[16], *argv[] = { "osd", "boot", idw, b->addr };
	char *text = NULL;
	int rc;

	snprintf(idw, sizeof(idw), "%d", b->id);
	rc = tsr_monc_command(b->monc, 4, argv, (uint64_t)b->interval_ms * 5 + 2000, &text);
	if (rc == 0) {
		pthread_mutex_lock(&b->lock);
		b->st.up = 1;
		b->st.epoch = json_u64(text, "osdmap_epoch");
		b->st.boots++;
		pthread_mutex_unlock(&b->lock);
		tsr_log(TSR_SUB_OSD, TSR_LOG_INFO, "osd.%d: booted at %s (osdmap epoch %llu)",
			b->id, b->addr, (unsigned long long)b->st.epoch);
	} else {
		tsr_log(TSR_SUB_OSD, TSR_LOG_WARN, "osd.%d: boot: %s", b->id,
			text ? text : strerror(-rc));
	}
	free(text);
	return rc;
}

static void *
beacon_main(void *arg)
{
	struct tsr_osd_beacon *b = arg;
	int booted = 0;

	while (!stopped(b)) {
		char idw[16], failed[1024] = "", *argv[5] = { "osd", "beacon", idw,
							      "--failed", failed };
		char *text = NULL;
		int rc;

		if (!booted) {
			booted = boot(b) == 0;
			if (!booted && nap(b, b->interval_ms))
				break;
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
			int up = strstr(text, "\"up\": true") != NULL;
			pthread_mutex_lock(&b->lock);
			b->st.up = up;
			b->st.epoch = json_u64(text, "osdmap_epoch");
			b->st.beacons++;
			pthread_mutex_unlock(&b->lock);
			if (!up) {
				/* marked down while alive: say so again */
				tsr_log(TSR_SUB_OSD, TSR_LOG_WARN, "osd.%d: the map (epoch "
					"%llu) has us down while we are alive: booting "
					"again", b->id, (unsigned long long)b->st.epoch);
				booted = 0;
			}
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
	if ((rc = tsr_monc_create(members, opts, &b->monc, err, errlen)) < 0) {
		pthread_mutex_destroy(&b->lock);
		pthread_cond_destroy(&b->cond);
		free(b);
		return rc;
	}
	if ((rc = pthread_create(&b->thr, NULL, beacon_main, b)) != 0) {
		tsr_monc_destroy(b->monc);
		pthread_mutex_destroy(&b->lock);
		pthread_cond_destroy(&b->cond);
		free(b);
		return tsr_errf(err, errlen, -rc, "starting the beacon thread: %s",
				strerror(rc));
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
