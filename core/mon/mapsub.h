/* mapsub.h — a map subscriber: holds the latest OSD and/or MDS map and
 * keeps it current from the monitors.
 *
 * Every daemon and client that places data or finds an MDS holds one.  It
 * subscribes at one monitor (MON_SUB with TSR_MON_SUB_KEEP, monmsg.h): that
 * monitor sends the incrementals from the epoch held (or the full map when
 * it lacks some, or none is held) and pushes each new epoch.  The
 * subscription is renewed every renew interval; a monitor that does not
 * answer a renewal within a try (3 s), says it is out of the quorum, or
 * whose session ends, is left for another (the leader it names, or the
 * next in the member list).  So the maps keep coming while a majority of
 * monitors is up and reachable, and epochs only move forward.
 *
 * Threads.  One worker thread of its own keeps the session; map messages
 * are applied on the messenger's dispatch thread, under the subscriber's
 * lock.  The callback runs on that thread after each new epoch, without
 * the lock held (it may call tsr_mapsub_osdmap() and friends); it must not
 * call tsr_mapsub_destroy().
 */
#ifndef TSR_MON_MAPSUB_H
#define TSR_MON_MAPSUB_H

#include "map/mdsmap.h"
#include "map/osdmap.h"
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

/* want: TSR_MON_SUB_OSD and/or TSR_MON_SUB_MDS.  opts: fsid and ms_*
 * settings (entity and bind are set here).  renew_ms: 0 for 2000.  *out
 * is set before the first callback can run. */
TSR_API int tsr_mapsub_create(const struct tsr_mon_members *members,
			      const struct tsr_msgr_opts *opts, uint32_t want,
			      uint32_t renew_ms, tsr_mapsub_cb cb, void *arg,
			      struct tsr_mapsub **out, char *err, size_t errlen);
TSR_API void tsr_mapsub_destroy(struct tsr_mapsub *s);

/* The epoch held of a map (0: none yet). */
TSR_API uint64_t tsr_mapsub_epoch(struct tsr_mapsub *s, int which);
/* Wait until the epoch held of which is at least epoch: 0, or -ETIMEDOUT. */
TSR_API int tsr_mapsub_wait(struct tsr_mapsub *s, int which, uint64_t epoch,
			    uint64_t timeout_ms);
/* Copies of the maps held (the caller frees them); -ENOENT before the
 * first. */
TSR_API int tsr_mapsub_osdmap(struct tsr_mapsub *s, struct tsr_osdmap *out);
TSR_API int tsr_mapsub_mdsmap(struct tsr_mapsub *s, struct tsr_mdsmap *out);
TSR_API void tsr_mapsub_stats(struct tsr_mapsub *s, struct tsr_mapsub_stats *out);

#endif
