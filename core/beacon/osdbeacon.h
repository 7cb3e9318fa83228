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
 * What the OSD's PGs need of the map goes its own way (MON_OSD_ALIVE,
 * one in flight): up_thru raised to an epoch, and PG temp mappings set or
 * removed.  Asks wait until the map shows the OSD up, are merged while
 * one is in flight (the highest up_thru; the last ask per PG), and are
 * dropped once a map holds them.  A refusal is asked again with the next
 * map, or after an interval.
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
/* The admin socket's `beacon`: the state above and the asks pending, as
 * one JSON object and a newline. */
struct tsr_sbuf;
TSR_API void tsr_osd_beacon_status_json(struct tsr_osd_beacon *b,
					struct tsr_sbuf *out);

/* Ask that the map record this OSD up through epoch (up_thru): a PG it
 * leads waits for that before it takes writes in a new interval. */
TSR_API void tsr_osd_beacon_want_up_thru(struct tsr_osd_beacon *b, uint64_t epoch);
/* Ask for pgid's PG temp mapping to be osds[0..n), primary first, or (n
 * 0) removed.  -EINVAL for more than TSR_OSDMAP_MAX_SIZE OSDs or one
 * twice, -ENOMEM. */
TSR_API int tsr_osd_beacon_want_pg_temp(struct tsr_osd_beacon *b,
					struct tsr_pgid pgid, const int32_t *osds,
					uint32_t n);

#endif
