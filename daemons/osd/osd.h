/* osd.h — the parts of tessera-osd: the store (store.c: the backend the
 * configuration names, and the superblock that ties it to one OSD of one
 * cluster), the placement groups this OSD serves under each map epoch
 * (pgs.c), the heartbeats with the OSDs it shares them with
 * (heartbeat.c), the OSD map epochs it took (mapstore.c), and the daemon
 * around them (osd.c).
 *
 * Threads: everything here runs on the daemon's loop thread, but for the
 * backend's own commit threads behind the store and the map store's
 * writer.
 */
#ifndef TSR_OSD_DAEMON_H
#define TSR_OSD_DAEMON_H

#include "config/config.h"
#include "map/osdmap_epoch.h"
#include "plugin/host.h"

#include <tessera/backend.h>

#include <stddef.h>
#include <stdint.h>

struct tsr_registry;
struct tsr_instance;
struct tsr_host;

/* The OSD's own collection (pool ids are non-negative: none is this). */
#define OSD_META_POOL UINT64_MAX
extern const struct tsr_coll_id osd_meta_coll;

/* What ties a store to one OSD of one cluster. */
struct osd_super {
	char fsid[128];              /* the cluster's (configuration: fsid) */
	int32_t whoami;              /* the OSD id */
	uint8_t uuid[16];            /* this store's, made by mkfs */
	uint64_t created_ns;         /* wall clock, at mkfs */
};

struct osd_store {
	char backend[64];            /* the plugin's name */
	char path[4096];             /* where the store lives */
	struct tsr_core_host host;   /* what the backend instance gets */
	struct tsr_instance *inst;
	const struct tsr_backend_ops *ops;
	void *h;
	int mounted;
	uint64_t max_object;         /* the backend's max_object_size (0: none) */
	struct osd_super sb;         /* once mounted (or made) */
};

/* Create the backend instance the configuration names (backend,
 * backend_options, osd_data as the path unless the options name one). */
int osd_store_open(struct osd_store *st, struct tsr_conf *conf,
		   const struct tsr_registry *reg, char *err, size_t errlen);
/* mkfs the backend, mount it, and write the superblock (a new uuid); on
 * success err holds one line saying what was made. */
int osd_store_mkfs(struct osd_store *st, const char *fsid, int32_t whoami,
		   char *err, size_t errlen);
/* Mount and check the superblock against the cluster and the OSD id. */
int osd_store_mount(struct osd_store *st, const char *fsid, int32_t whoami,
		    char *err, size_t errlen);
void osd_store_close(struct osd_store *st);

/* One placement group this OSD is in the acting set of. */
struct osd_pg {
	struct tsr_pgid pgid;
	int32_t role;                /* its index in acting: 0 is the primary */
	uint32_t nacting;
	int32_t acting[TSR_OSDMAP_MAX_SIZE];
};

/* The PGs whoami serves under ep, in pool and PG order: a malloc'd array
 * (*out, *n), or -errno with the reason (a pool whose PGs cannot be
 * placed is skipped and counted in *unplaced, its first reason in err). */
int osd_pgs_compute(const struct tsr_osdmap_epoch *ep, int32_t whoami,
		    struct osd_pg **out, size_t *n, size_t *unplaced,
		    char *err, size_t errlen);

/* Heartbeats with the OSDs this one shares PGs with (heartbeat.c), a
 * module on the OSD's messenger and loop: create before the messenger
 * starts (it registers its messages), destroy after the messenger is gone
 * (the loop not running). */
struct osd_hb;
struct tsr_loop;
struct tsr_msgr;
struct tsr_sbuf;
int osd_hb_create(struct tsr_loop *loop, struct tsr_msgr *msgr, int32_t whoami,
		  uint64_t interval_ns, uint64_t grace_ns, struct osd_hb **out,
		  char *err, size_t errlen);
void osd_hb_destroy(struct osd_hb *hb);
/* The peers under a new epoch: the others of the acting sets of pgs. */
void osd_hb_peers(struct osd_hb *hb, const struct tsr_osdmap_epoch *ep,
		  const struct osd_pg *pgs, size_t npgs);
/* The peers silent for longer than the grace, for the beacon (its failed
 * callback: arg is the struct osd_hb). */
uint32_t osd_hb_failed(void *arg, int32_t *ids, uint32_t max);
/* JSON for the `heartbeat` admin command. */
void osd_hb_status(struct osd_hb *hb, struct tsr_sbuf *out);

/* The OSD map epochs this OSD took, in its store (mapstore.c), so that it
 * restarts where it stopped.  open loads the newest epoch stored into
 * *loaded (epoch 0: none; what does not decode is left out with a
 * warning) and starts the writer; keep: epochs held (at least 64). */
struct osd_mapstore;
int osd_mapstore_open(struct osd_store *st, size_t keep, struct osd_mapstore **out,
		      struct tsr_osdmap *loaded, char *err, size_t errlen);
/* Store epoch cur (on the loop, each epoch in order; prev the one before
 * it, or NULL): an incremental, or a full map every 64 epochs and after a
 * gap.  Written in order by the store's worker. */
void osd_mapstore_add(struct osd_mapstore *ms, const struct tsr_osdmap *prev,
		      const struct tsr_osdmap *cur);
/* The oldest epoch a PG copy still needs (0: none): the trimming keeps
 * it. */
void osd_mapstore_floor(struct osd_mapstore *ms, uint64_t epoch);
/* JSON: the epochs stored, writes, errors. */
void osd_mapstore_status(struct osd_mapstore *ms, struct tsr_sbuf *out);
/* Write what is queued, then stop (before the store closes). */
void osd_mapstore_close(struct osd_mapstore *ms);
/* Give fn every stored epoch from `from` to the last, in order, as epochs
 * made with reg and host (the first whole, then each from the one
 * before): how many, or -errno (what does not decode ends it early). */
int osd_mapstore_replay(struct osd_mapstore *ms, uint64_t from,
			const struct tsr_registry *reg, const struct tsr_host *host,
			void (*fn)(void *arg, struct tsr_osdmap_epoch *ep), void *arg);

/* The placement groups this OSD runs (pgrt.c): one PG machine per copy,
 * on nshards work queues.  create registers the PG message on msgr
 * (before it starts); load finds the copies in the store (*oldest: the
 * first epoch one needs, 0: none), replay feeds them a stored epoch (at
 * start, in order), map feeds every copy each new epoch and makes the
 * copies it puts here (on the loop).  asks hands over what the PGs asked
 * of the monitors since the last call (the caller frees *temps).
 * quiesce stops sending (before the messenger goes), destroy waits for
 * the workers and the store. */
struct osd_pgrt;
struct tsr_mon_pg_temp_req;
int osd_pgrt_create(struct osd_store *st, struct tsr_msgr *msgr, int32_t whoami,
		    size_t nshards, struct osd_pgrt **out, char *err, size_t errlen);
int osd_pgrt_load(struct osd_pgrt *rt, uint64_t *oldest, char *err, size_t errlen);
void osd_pgrt_replay(struct osd_pgrt *rt, struct tsr_osdmap_epoch *ep);
void osd_pgrt_map(struct osd_pgrt *rt, struct tsr_osdmap_epoch *ep);
/* The oldest interval start of the copies (0: none): the map epochs
 * they may need at a restart. */
uint64_t osd_pgrt_min_sis(struct osd_pgrt *rt);
/* The largest data a message may carry (ms_max_data): a write whose
 * replication would not fit is refused. */
void osd_pgrt_set_max_data(struct osd_pgrt *rt, uint64_t max_data, uint32_t max_front);
/* What each PG machine is made with (osd_pg_log_max,
 * osd_recovery_max_active, osd_backfill_window, osd_pg_queue_max): for
 * copies made from now on. */
void osd_pgrt_set_pg_limits(struct osd_pgrt *rt, uint32_t log_max, uint32_t recovery_max,
			    uint32_t backfill_window, uint32_t queue_max);
/* Past this share of its store used, the OSD (as a primary) refuses
 * writes that may grow what it holds with -ENOSPC (osd_full_ratio). */
void osd_pgrt_set_full_ratio(struct osd_pgrt *rt, double ratio);
/* Scrub: every interval_s and deep_interval_s (0: never on a schedule),
 * chunk objects compared at a time, at most max_scrubs scheduled runs at
 * once, repairs without being asked (scrub.c). */
void osd_pgrt_set_scrub(struct osd_pgrt *rt, uint64_t interval_s, uint64_t deep_interval_s,
			uint32_t chunk, uint32_t max_scrubs, int auto_repair);
/* (the loop) scrubs that are due start; retries and timeouts are seen */
void osd_scrub_tick(struct osd_pgrt *rt);
/* Backfills this OSD takes part in at once, as a primary and (apart) as
 * the copy filled (osd_max_backfills; reserve.c). */
void osd_pgrt_set_max_backfills(struct osd_pgrt *rt, uint32_t n);
/* Bytes a second of objects pushed to other OSDs (osd_recovery_max_bytes,
 * 0: no limit; pace.c), and the timer that lets them go. */
void osd_pgrt_set_recovery_bps(struct osd_pgrt *rt, uint64_t bps);
void osd_pgrt_pace_tick(struct osd_pgrt *rt);
/* Called often (the loop's timer): about once a second, each PG whose
 * machine wants time to pass (tsr_pgsm_tick) gets it on its shard. */
void osd_pgrt_tick(struct osd_pgrt *rt);
/* The store's usage as last measured (on a PG worker, every call asks
 * for a new measure): 0, or -EAGAIN before the first. */
struct tsr_statfs;
int osd_pgrt_usage(struct osd_pgrt *rt, struct tsr_statfs *out);
/* When the store fails a change a PG made (a write, a recovery): fn(arg),
 * once, from any thread; the OSD stops.  A copy that cannot store what it
 * is sent must not go on serving: its PG would wait for it forever, while
 * without it the PG peers on the other copies. */
void osd_pgrt_set_fail_stop(struct osd_pgrt *rt, void (*fn)(void *arg), void *arg);
/* The OSD has its service keys: what the PGs sent meanwhile goes. */
void osd_pgrt_ready(struct osd_pgrt *rt);
void osd_pgrt_asks(struct osd_pgrt *rt, uint64_t *up_thru,
		   struct tsr_mon_pg_temp_req **temps, size_t *ntemps);
/* Where the PGs this OSD is the primary of stand, for the monitors
 * (malloc'd into *out: how many). */
struct tsr_mon_pg_stat;
size_t osd_pgrt_stats(struct osd_pgrt *rt, struct tsr_mon_pg_stat **out);
/* Did a PG this OSD leads change state since the last call? */
int osd_pgrt_stats_changed(struct osd_pgrt *rt);
/* JSON: each copy, its state and why, and the message counts. */
void osd_pgrt_status(struct osd_pgrt *rt, struct tsr_sbuf *out);
void osd_pgrt_quiesce(struct osd_pgrt *rt);
void osd_pgrt_destroy(struct osd_pgrt *rt);

#endif
