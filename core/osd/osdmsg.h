/* osdmsg.h — the messages OSDs exchange, and those clients send them:
 * one X-macro registry of types, each with its own versioned encoding,
 * decoded as hostile input.
 *
 *   OSD_PING        osd -> osd: "are you alive?" (from, epoch, stamp)
 *   OSD_PING_REPLY  osd -> osd: the answer (from, epoch, the stamp back)
 *   OSD_PG          osd -> osd: one message between the copies of a PG
 *                   (pgsm.h): the front is its encoding (pgmsg.c), the
 *                   message data what travels with it (a REPOP's
 *                   transaction, a PUSH's object: pgpush.h)
 *   OSD_OP          client -> osd: an operation on one object (or on one
 *                   PG), objop.h: the front is its encoding, the message
 *                   data the sub-operations' input
 *   OSD_OP_REPLY    osd -> client: its result, and the sub-operations'
 *                   output as the message data
 *
 * Types are TSR_MSG_USER + 64 + n (the monitors' are below, monmsg.h).
 * Every decoder refuses what a peer could not have sent: an envelope it
 * does not know, a field out of range, bytes left over; the reason goes
 * to err.
 */
#ifndef TSR_OSD_OSDMSG_H
#define TSR_OSD_OSDMSG_H

#include "msg/frame.h"

#include <tessera/encoding.h>

#include <stddef.h>
#include <stdint.h>

#define TSR_OSD_MESSAGES(X)                                                    \
	X(PING, 0, "osd ping", ping)                                           \
	X(PING_REPLY, 1, "osd ping reply", ping)                               \
	X(PG, 2, "osd pg", pg)                                                 \
	X(OP, 3, "osd op", objop)                                              \
	X(OP_REPLY, 4, "osd op reply", objop_reply)

enum {
#define TSR_OSD_MSG_ENUM(name, n, label, fn) TSR_MSG_OSD_##name = TSR_MSG_USER + 64 + (n),
	TSR_OSD_MESSAGES(TSR_OSD_MSG_ENUM)
#undef TSR_OSD_MSG_ENUM
};

/* A heartbeat and its answer (the same fields): who sends it, the OSD map
 * epoch it holds, and the sender's monotonic time in ns, which the reply
 * carries back so the pinger measures the round trip. */
struct tsr_osd_ping {
	int32_t from;                /* an OSD id, 0 .. TSR_OSDMAP_MAX_OSDS - 1 */
	uint64_t epoch;
	uint64_t stamp;
};

int tsr_osdmsg_ping_encode(struct tsr_enc *e, const struct tsr_osd_ping *p);
int tsr_osdmsg_ping_decode(const void *buf, size_t len, struct tsr_osd_ping *p,
			   char *err, size_t errlen);

/* The registry's label of a type ("osd ping"), or NULL for another type. */
const char *tsr_osdmsg_name(uint32_t type);
/* Decode a message of any registry type, encode what decoded again and
 * decode that: 0 when it round-trips, -EBADMSG when the input does not
 * decode (err says why), -EPROTO when it decodes but does not round-trip
 * (a bug), -ENOENT for a type outside the registry.  The fuzz target runs
 * it on every type.  For the types that carry message data (OSD_OP,
 * OSD_OP_REPLY) buf is a u32 (little-endian) front length, the front,
 * then the data (tsr_objop_check); for the others, the front alone. */
int tsr_osdmsg_check(uint32_t type, const void *buf, size_t len, char *err,
		     size_t errlen);

#endif
