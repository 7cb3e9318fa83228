/* members.h — the monitor set, from the configuration key mon_members.
 *
 *     mon_members = "a=127.0.0.1:6789, b=127.0.0.1:6790, c=127.0.0.1:6791";
 *
 * Names are what `tessera-mon --id NAME` runs as (letters, digits, '_');
 * addresses are IPv4 host:port.  Members are kept sorted by name; a
 * member's Raft node id is its position in that order plus one, so every
 * monitor and client that reads the same list agrees on the ids.  The
 * fingerprint (a CRC32C of the canonical text, "a=addr,b=addr,...") goes
 * into every monitor-to-monitor message: two monitors configured with
 * different sets refuse each other's messages instead of electing with
 * different ideas of a majority.
 */
#ifndef TSR_MON_MEMBERS_H
#define TSR_MON_MEMBERS_H

#include <tessera/common.h>

#include <stdio.h>

#define TSR_MON_MAX 9
#define TSR_MON_NAME_MAX 32
#define TSR_MON_ADDR_MAX 64

struct tsr_mon_member {
	char name[TSR_MON_NAME_MAX];
	char addr[TSR_MON_ADDR_MAX];
	uint64_t id;                 /* Raft node id: position + 1 */
};

struct tsr_mon_members {
	struct tsr_mon_member m[TSR_MON_MAX];
	size_t n;
	char canon[TSR_MON_MAX * (TSR_MON_NAME_MAX + TSR_MON_ADDR_MAX + 2)];
	uint32_t fp;                 /* CRC32C of canon */
};

/* Parse text (the value of mon_members; where names its origin, for
 * messages).  -EINVAL with the reason: an empty list, a bad name or
 * address, a name or address given twice, more than TSR_MON_MAX. */
TSR_API int tsr_mon_members_parse(const char *text, const char *where,
				  struct tsr_mon_members *out, char *err,
				  size_t errlen);
/* A member's entity name ("mon.a"), the name its key is for. */
static inline void
tsr_mon_member_entity(const struct tsr_mon_member *m, char *out, size_t len)
{
	snprintf(out, len, "mon.%s", m->name);
}

/* The member of that name, id or address, or NULL. */
TSR_API const struct tsr_mon_member *
tsr_mon_members_find(const struct tsr_mon_members *ms, const char *name);
TSR_API const struct tsr_mon_member *
tsr_mon_members_by_id(const struct tsr_mon_members *ms, uint64_t id);
TSR_API const struct tsr_mon_member *
tsr_mon_members_by_addr(const struct tsr_mon_members *ms, const char *addr);

#endif
