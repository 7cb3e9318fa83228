/* mapsub.h — a map subscriber: holds the latest OSD and/or MDS map and
 * keeps it current from the monitors; a module on a messenger and an event
 * loop its caller gives (a daemon's one runtime).
 *
 * Every daemon and client that places data or finds an MDS holds one.  It
 * subscribes at one monitor (MON_SUB with TSR_MON_SUB_KEEP, monmsg.h): that
 * monitor sends the incrementals from the epoch held (or the full map when
 * it lacks some, or none is held) and pushes each new epoch.  The
 * subscription is renewed every renew interval; a monitor that does not
 * answer a renewal within a try (3 s), says it is out of the quorum, or
 * whose session ends, is left for another (the leader it names, or the
 * next in the member list), with a pause (200 ms) after a round of
 * failures.  So the maps keep coming while a majority of monitors is up
 * and reachable, and epochs only move forward.
 *
 * Threads.  The session, its timers and the maps' updates run on the
 * loop's thread: create and destroy the subscriber there (or while the
 * loop does not run); the messenger's threads only post what arrives.
 * Listeners (the create callback, tsr_mapsub_listen) run on the loop once
 * for every epoch taken, in order, while it is the newest held (so an
 * OSD sees each epoch of a batch of incrementals, not only the last);
 * they may read the maps, not destroy the subscriber.  The
 * maps and counters are read from any thread (under the subscriber's
 * lock); tsr_mapsub_wait() blocks, so not on the loop's thread.
 *
 * The OSD map is held as an epoch (map/osdmap_epoch.h): each new one is
 * made beside the last, never written over it, and a reader takes a
 * reference to the newest instead of a copy, so holding a map costs
 * nothing however large it is, and a reader keeps the epoch it took for
 * as long as it likes (a request's epoch, a peering interval's).  The
 * MDS map is small and is copied.
 */
#ifndef TSR_MON_MAPSUB_H
#define TSR_MON_MAPSUB_H

#include "map/mdsmap.h"
#include "map/osdmap.h"
#include "map/osdmap_epoch.h"
#include "mon/members.h"
#include "mon/monmsg.h"
#include "msg/msgr.h"

struct tsr_mapsub;

/* which: TSR_MON_MAP_OSD or _MDS; full: it came whole (the epochs before
 * were not seen one by one). */
typedef void (*tsr_mapsub_cb)(void *arg, int which, uint64_t epoch, int full);

struct tsr_mapsub_stats {
	uint64_t fulls, incs;       /* full maps and incrementals applied */
	uint64_t hunts;             /* sessions to a monitor opened */
	uint64_t renewals;
	uint64_t refused;           /* incrementals that did not apply (asked
	                               for the full map then) */
	char mon[64];               /* the monitor subscribed at, or "" */
};

/* want: TSR_MON_SUB_OSD and/or TSR_MON_SUB_MDS, and TSR_MON_SUB_EVERY for
 * every epoch one by one while the monitors' history has them (an OSD:
 * its PGs need each), not a full map that skips some.  msgr and loop are
 * borrowed (they outlive it).  reg and host (may be NULL) are what the OSD
 * map epochs place with: the registry holding the placement plugins and
 * the host their instances get; both must outlive every epoch handed out
 * (without a registry, tsr_osdmap_epoch_map_pg says there is none).  renew_ms: 0 for 2000.  cb (may be NULL) is
 * the first listener.  *out is set before the first callback can run. */
struct tsr_loop;
TSR_API int tsr_mapsub_create(struct tsr_msgr *msgr, struct tsr_loop *loop,
			      const struct tsr_mon_members *members,
			      const struct tsr_registry *reg, const struct tsr_host *host,
			      uint32_t want,
			      uint32_t renew_ms, tsr_mapsub_cb cb, void *arg,
			      struct tsr_mapsub **out, char *err, size_t errlen);
/* The maps held go at once (epochs others took stay theirs); what the
 * messenger still has to hand over is released on the loop (memory goes
 * once the loop has run its posts, or at tsr_loop_destroy). */
TSR_API void tsr_mapsub_destroy(struct tsr_mapsub *s);

/* More listeners (on the loop's thread), up to TSR_MAPSUB_LISTENERS in
 * all: -ENOSPC beyond.  unlisten removes the one with that cb and arg. */
#define TSR_MAPSUB_LISTENERS 8
TSR_API int tsr_mapsub_listen(struct tsr_mapsub *s, tsr_mapsub_cb cb, void *arg);
TSR_API void tsr_mapsub_unlisten(struct tsr_mapsub *s, tsr_mapsub_cb cb, void *arg);
/* Start from OSD map m (a copy is taken), before the first hunt: right
 * after create, on the loop's thread or before the loop runs.  The
 * monitors are then asked for the epochs after it (an OSD restarting
 * from the map it stored).  Listeners are not called for it.  -EINVAL
 * when the subscriber keeps no OSD map or holds one already; else what
 * making the epoch returns (with err). */
TSR_API int tsr_mapsub_seed_osdmap(struct tsr_mapsub *s, const struct tsr_osdmap *m,
				   char *err, size_t errlen);
/* The maps this subscriber keeps (TSR_MON_SUB_* bits). */
TSR_API uint32_t tsr_mapsub_want(const struct tsr_mapsub *s);

/* The epoch held of a map (0: none yet). */
TSR_API uint64_t tsr_mapsub_epoch(struct tsr_mapsub *s, int which);
/* Wait until the epoch held of which is at least epoch: 0, or -ETIMEDOUT
 * (-EDEADLK on the loop's thread, which would have to bring it). */
TSR_API int tsr_mapsub_wait(struct tsr_mapsub *s, int which, uint64_t epoch,
			    uint64_t timeout_ms);
/* A reference to the newest OSD map epoch held (the caller puts it with
 * tsr_osdmap_epoch_put), or NULL before the first. */
TSR_API struct tsr_osdmap_epoch *tsr_mapsub_osdmap(struct tsr_mapsub *s);
/* A copy of the MDS map held (the caller frees it); -ENOENT before the
 * first. */
TSR_API int tsr_mapsub_mdsmap(struct tsr_mapsub *s, struct tsr_mdsmap *out);
TSR_API void tsr_mapsub_stats(struct tsr_mapsub *s, struct tsr_mapsub_stats *out);
/* The OSD map epoch held and how the maps came, as JSON members (no
 * braces): "osdmap_epoch", "fulls", "incs", "refused" — for admin
 * commands. */
struct tsr_sbuf;
TSR_API void tsr_mapsub_stats_json(struct tsr_mapsub *s, struct tsr_sbuf *out);

#endif
