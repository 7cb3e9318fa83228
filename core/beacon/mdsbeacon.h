/* mdsbeacon.h — an MDS's side of the MDS map: beacons to the monitors,
 * and the rank they give it.  A module of the MDS's runtime: it sends
 * through the daemon's monitor client (mon/monc.h) and follows the
 * daemon's map subscription (mon/mapsub.h), on their loop.
 *
 * The MDS runs as one incarnation (a gid drawn at random) at a time.
 * Every interval it sends a beacon (MON_MDS_BEACON, mon/monmsg.h: name,
 * gid, address, state, software version; the leader
 * boots a new incarnation into the map as a standby, fails one whose
 * beacons stop); it follows the MDS map and learns from it when it holds
 * a rank and in which state: `replay` — replay the rank's journal, then
 * call tsr_mds_beacon_active(); `active` — serve the rank.  When the map
 * drops its incarnation while it is alive (it was failed: paused, or cut
 * off, longer than the grace), it must not serve that rank any more —
 * another MDS may hold it: the callback says so, and the beacon goes on
 * as a new incarnation, which stands by.  A new MDS map, or the end of a
 * replay, sends a beacon at once (after the one in flight is answered).
 *
 * Threads: everything on the loop's thread — start, stop, active, role,
 * and the role callback.
 */
#ifndef TSR_BEACON_MDSBEACON_H
#define TSR_BEACON_MDSBEACON_H

#include "mon/mapsub.h"
#include "mon/monc.h"

struct tsr_mds_beacon;
struct tsr_loop;

struct tsr_mds_role {
	uint64_t gid;              /* this incarnation */
	int32_t rank;              /* -1: standby (or not in the map yet) */
	uint32_t state;            /* enum tsr_mds_state as the map says */
	uint64_t epoch;            /* of the MDS map that said it */
	uint64_t incarnations;     /* gids used so far (1 at start) */
	uint64_t beacons;          /* beacons answered */
	uint64_t acked_sent_ns;    /* when (tsr_mono_ns) the latest answered
				      beacon was sent: the leader heard from
				      us after it, so it fails us no sooner
				      than mon_mds_beacon_grace after it */
};

/* Beacon as mds NAME at addr, through monc, watching sub (which must keep
 * the MDS map); all three on loop, and outliving the beacon.
 * role_cb(arg, role): the map changed what this MDS is (a rank given, its
 * state, or the incarnation dropped — then role->rank is -1 and gid new). */
TSR_API int tsr_mds_beacon_start(struct tsr_loop *loop, struct tsr_monc *monc,
				 struct tsr_mapsub *sub, const char *name,
				 const char *addr, uint32_t interval_ms,
				 void (*role_cb)(void *arg, const struct tsr_mds_role *role),
				 void *arg, struct tsr_mds_beacon **out, char *err,
				 size_t errlen);
TSR_API void tsr_mds_beacon_stop(struct tsr_mds_beacon *b);
/* Replay of the rank held is done: the next beacons say `active`. */
TSR_API void tsr_mds_beacon_active(struct tsr_mds_beacon *b);
TSR_API void tsr_mds_beacon_role(struct tsr_mds_beacon *b, struct tsr_mds_role *out);
/* The admin command `role` of an MDS: {"gid": .., "rank": .., "state":
 * "..", "mdsmap_epoch": .., "incarnations": .., "beacons": ..} (arg: the
 * beacon; the admin socket runs it on the daemon's loop). */
struct tsr_sbuf;
TSR_API int tsr_mds_beacon_cmd_role(void *arg, int argc, char **argv, struct tsr_sbuf *out);

#endif
