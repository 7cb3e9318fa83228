/* osdbeacon.h — an OSD's side of failure detection: boot, then a beacon
 * every interval; and the OSD map, to know what the monitors think of it.
 * A module of the OSD's runtime: it sends through the daemon's monitor
 * client (mon/monc.h) and follows the daemon's map subscription
 * (mon/mapsub.h), on their loop.
 *
 * Boot (MON_OSD_BOOT, mon/monmsg.h) registers the OSD's address and marks
 * it up; each beacon (MON_OSD_BEACON) tells the leader the OSD is alive,
 * which map epoch it holds and which peers it found silent.  Both carry
 * the software version.  One command is in
 * flight at a time; the next beacon is due an interval after the last was
 * answered (a timer).  When the OSD map has the OSD down while it is
 * alive (after it has shown it up, or well after its boot), it boots
 * again at once (once the command in flight is answered), instead of
 * serving with a map that says it is down.
 *
 * Threads: everything on the loop's thread — start, stop, state, and the
 * failed callback.
 */
#ifndef TSR_BEACON_OSDBEACON_H
#define TSR_BEACON_OSDBEACON_H

#include "mon/mapsub.h"
#include "mon/monc.h"

struct tsr_osd_beacon;
struct tsr_loop;

/* Start booting and beaconing for osd id at addr, through monc, watching
 * sub (which must keep the OSD map); all three on loop, and outliving the
 * beacon.  failed(arg, ids, max) may fill ids with up to max peers silent
 * now and return how many (or be NULL). */
TSR_API int tsr_osd_beacon_start(struct tsr_loop *loop, struct tsr_monc *monc,
				 struct tsr_mapsub *sub, int32_t id,
				 const char *addr, uint32_t interval_ms,
				 uint32_t (*failed)(void *arg, int32_t *ids, uint32_t max),
				 void *arg, struct tsr_osd_beacon **out,
				 char *err, size_t errlen);
TSR_API void tsr_osd_beacon_stop(struct tsr_osd_beacon *b);

struct tsr_osd_beacon_state {
	int up;                /* the OSD map, as of its last epoch */
	uint64_t epoch;        /* that epoch */
	uint64_t boots;        /* boots that succeeded */
	uint64_t beacons;      /* beacons answered */
};
TSR_API void tsr_osd_beacon_state(struct tsr_osd_beacon *b,
				  struct tsr_osd_beacon_state *out);

#endif
