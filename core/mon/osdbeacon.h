/* osdbeacon.h — an OSD's side of failure detection: boot, then a beacon
 * every interval, on a thread of its own; and the OSD map, to know what
 * the monitors think of it.
 *
 * Boot registers the OSD's address and marks it up (`osd boot ID ADDR`);
 * each beacon (`osd beacon ID [--failed PEERS]`) tells the leader the OSD
 * is alive and carries the peers it found silent.  The OSD follows the
 * OSD map through a subscription (mapsub.h): when the map has it down
 * while it is alive (after it has shown it up, or well after its boot),
 * it boots again, at once, instead of serving with a map that says it
 * is down.
 */
#ifndef TSR_MON_OSDBEACON_H
#define TSR_MON_OSDBEACON_H

#include "mon/mapsub.h"
#include "mon/monc.h"

struct tsr_osd_beacon;

/* Start booting and beaconing for osd id at addr.  failed(arg, buf,
 * buflen) may fill buf with "1,5" (peers silent now), or be NULL. */
TSR_API int tsr_osd_beacon_start(const struct tsr_mon_members *members,
				 const struct tsr_msgr_opts *opts, int32_t id,
				 const char *addr, uint32_t interval_ms,
				 void (*failed)(void *arg, char *buf, size_t buflen),
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
