/* pglog.h — what a placement group remembers: its log of changes, its
 * info (how far it got, when it last started and was clean), the intervals
 * since then, and the objects it is missing.  Plain data and their
 * encodings; the decisions over them are the PG machine's (pgsm.h).
 *
 * Versions.  Every change to a PG gets a version (epoch, ver): ver counts
 * the PG's changes, one by one, for its whole life; epoch is the OSD map
 * epoch in which the primary that ordered the change held it.  Versions
 * compare epoch first.  A version names one change: a map epoch has one
 * primary per PG, and that primary hands out each ver once (an OSD that
 * restarts serves again only in a later epoch, pgsm.h), so two OSDs whose
 * logs hold the same version hold the same history up to it.  (0, 0) is
 * "none": before the first change, or an object that did not exist.
 *
 * The log.  The entries (tail, head], oldest first, each naming the object
 * changed, how (modified or deleted), the object's version before, and
 * the client's request id with the answer it got (so a request sent again
 * after a change of primary is recognised and answered, not applied
 * twice).  The log is bounded: entries every member of the acting set
 * holds are trimmed from the tail (a request sent again after its entry
 * was trimmed is not recognised yet: the log must outlast a client's
 * resends; a list of trimmed request ids is to come).  The log orders
 * replication and drives
 * recovery: a member whose head is inside another's log knows exactly
 * which objects changed since.
 *
 * The missing set.  Objects this copy of the PG does not hold at the
 * version its log says they have: (object, need, have).  need (0, 0)
 * never occurs: an object whose authoritative state is "absent" is simply
 * removed.
 *
 * Encodings (every one a versioned envelope, tessera/encoding.h):
 *
 *   ev       = u64 epoch, u64 ver
 *   reqid    = u64 client, u64 tid                  (client 0: none)
 *   entry    = envelope v1 { ev, ev prior, u8 op, i32 result, reqid,
 *                            bytes oid }
 *   info     = envelope v1 { i64 pool, u32 pg, ev last_update,
 *                            ev last_complete, ev log_tail, u64 les,
 *                            u64 created, u64 history_les, u64 lec,
 *                            u64 same_interval_since, u8 backfilling,
 *                            bytes last_backfill, u64 backfill_since }
 *   interval = u64 first, u64 last, i32 primary, u8 maybe_rw, u32 n,
 *              n x i32 acting
 *   intervals= envelope v1 { u32 n, n x interval }
 *   missing  = envelope v1 { u32 n, n x { bytes oid, ev need, ev have } }
 *   entries  = envelope v1 { u32 n, n x entry }
 *
 * Decoders treat their input as hostile: lengths and counts are bounded
 * (TSR_PGLOG_MAX_*) before anything is allocated, and an entry whose
 * version does not follow the one before is refused.
 */
#ifndef TSR_OSD_PGLOG_H
#define TSR_OSD_PGLOG_H

#include <tessera/encoding.h>

#include <stddef.h>
#include <stdint.h>

#include "map/osdmap.h"

#define TSR_PGLOG_MAX_OID 4096u       /* tessera/txn.h's name bound */
#define TSR_PGLOG_MAX_ENTRIES 65536u  /* in one log or one message */
#define TSR_PGLOG_MAX_MISSING 1048576u
#define TSR_PGLOG_MAX_INTERVALS 65536u

struct tsr_ev {
	uint64_t epoch, ver;
};

static inline int
tsr_ev_cmp(struct tsr_ev a, struct tsr_ev b)
{
	if (a.epoch != b.epoch)
		return a.epoch < b.epoch ? -1 : 1;
	return a.ver < b.ver ? -1 : a.ver > b.ver;
}

static inline int
tsr_ev_none(struct tsr_ev a)
{
	return a.epoch == 0 && a.ver == 0;
}

struct tsr_reqid {
	uint64_t client;    /* the client's id (its session's); 0: none */
	uint64_t tid;       /* its request number */
};

#define TSR_PGLOG_OPS(X)                         \
	X(MODIFY, 1, "modify")                   \
	X(DELETE, 2, "delete")

enum {
#define TSR_PGLOG_OP_ENUM(name, n, label) TSR_PGLOG_##name = (n),
	TSR_PGLOG_OPS(TSR_PGLOG_OP_ENUM)
#undef TSR_PGLOG_OP_ENUM
};
const char *tsr_pglog_op_name(uint8_t op);

struct tsr_pglog_entry {
	struct tsr_ev ev;        /* this change */
	struct tsr_ev prior;     /* the object's version before: (0,0) none */
	uint8_t op;              /* TSR_PGLOG_MODIFY, TSR_PGLOG_DELETE */
	int32_t result;          /* what the client was answered */
	struct tsr_reqid reqid;
	uint8_t *oid;            /* owned (malloc) */
	size_t oid_len;
};

/* A log: entries (tail, head] in version order, e[0..n).  A trim moves
 * e forward over the slots it frees (skip of them lie before e, cap after
 * it) instead of moving the rest down: an active PG trims one entry per
 * write, and moving a full log (thousands of entries) each time cost more
 * than the write's own work.  An append that finds no room after e reuses
 * the skipped slots, moving the log down, when they are at least a
 * quarter as many as the entries; else the allocation doubles. */
struct tsr_pglog_rix;

struct tsr_pglog {
	struct tsr_ev tail, head;
	struct tsr_pglog_entry *e;
	size_t n, cap, skip;
	/* Entries are numbered as appended: e[i] is number first + i.  The
	 * index maps a request id to the numbers of its entries, so that the
	 * primary's check of each write against the log (a resend?) does not
	 * read the whole log; built by the first tsr_pglog_find_reqid (logs
	 * carried in messages never need one), kept up from then on. */
	uint64_t first;
	struct tsr_pglog_rix *rix;
	size_t rcap, rn;
};

void tsr_pglog_init(struct tsr_pglog *l);
void tsr_pglog_free(struct tsr_pglog *l);
void tsr_pglog_entry_free(struct tsr_pglog_entry *e);
/* Copy src into dst (dst's old contents freed first). */
int tsr_pglog_entry_copy(struct tsr_pglog_entry *dst,
			 const struct tsr_pglog_entry *src);
/* Append a copy of e, whose version must be above the head (-EINVAL). */
int tsr_pglog_append(struct tsr_pglog *l, const struct tsr_pglog_entry *e);
/* Index of the entry with version ev, or -1. */
long tsr_pglog_find(const struct tsr_pglog *l, struct tsr_ev ev);
/* Index of the first entry above ev (n when none). */
size_t tsr_pglog_after(const struct tsr_pglog *l, struct tsr_ev ev);
/* Index of the newest entry with this request id, or -1. */
long tsr_pglog_find_reqid(struct tsr_pglog *l, struct tsr_reqid r);
/* Drop the entries at or below to (to becomes the tail). */
void tsr_pglog_trim(struct tsr_pglog *l, struct tsr_ev to);
/* Drop the entries above to (to becomes the head; to >= tail). */
void tsr_pglog_rewind(struct tsr_pglog *l, struct tsr_ev to);
/* Whether ev lies within the log's reach: tail <= ev <= head. */
int tsr_pglog_covers(const struct tsr_pglog *l, struct tsr_ev ev);

/* One object this copy lacks. */
struct tsr_missing_item {
	uint8_t *oid;            /* owned */
	size_t oid_len;
	struct tsr_ev need;      /* the version to hold */
	struct tsr_ev have;      /* the version held ((0,0): none) */
};

/* Missing objects, sorted by name (bytes, unsigned). */
struct tsr_missing {
	struct tsr_missing_item *m;
	size_t n, cap;
};

void tsr_missing_init(struct tsr_missing *ms);
void tsr_missing_free(struct tsr_missing *ms);
/* The item for oid, or NULL. */
struct tsr_missing_item *tsr_missing_find(const struct tsr_missing *ms,
					  const void *oid, size_t oid_len);
/* oid is needed at version need (keeps the older have of an item already
 * there; need only rises). */
int tsr_missing_add(struct tsr_missing *ms, const void *oid, size_t oid_len,
		    struct tsr_ev need, struct tsr_ev have);
/* oid is no longer missing (absent: nothing happens). */
void tsr_missing_rm(struct tsr_missing *ms, const void *oid, size_t oid_len);
int tsr_missing_copy(struct tsr_missing *dst, const struct tsr_missing *src);

/* A malloc'd copy of n bytes (n may be 0: a 1-byte allocation), or NULL;
 * the one byte-string copier of core/osd. */
uint8_t *tsr_pglog_dup(const void *p, size_t n);

/* Compare object names as the backends order them (tessera/backend.h). */
int tsr_oid_cmp(const void *a, size_t alen, const void *b, size_t blen);

/* What one copy of a PG says about itself. */
struct tsr_pg_info {
	struct tsr_pgid pgid;
	struct tsr_ev last_update;    /* the log's head */
	struct tsr_ev last_complete;  /* nothing at or below is missing */
	struct tsr_ev log_tail;
	uint64_t les;                 /* last epoch started: the start of the
					 last interval in which this copy was
					 activated (0: never) */
	/* history: what the PG as a whole is known to have done (merged
	 * upwards from every copy heard from) */
	uint64_t created;             /* the epoch the pool made the PG in */
	uint64_t history_les;         /* the newest les of any copy */
	uint64_t lec;                 /* last epoch clean: the interval start
					 at which the PG was last clean */
	uint64_t same_interval_since; /* the current interval's first epoch */
	/* backfill: a copy being filled holds the objects up to last_backfill
	 * (by name); everything above is still to come.  backfilling 0: the
	 * copy is complete. */
	uint8_t backfilling;
	uint8_t *last_backfill;       /* owned; NULL with length 0: before
					 every object */
	size_t last_backfill_len;
	uint64_t backfill_since;      /* the interval in which this copy became
					 one being backfilled */
	/* every write at or below is held by every member of the interval
	 * that made it (acknowledged, or as good as: no later peering drops
	 * it).  Known late on members (the primary says so with its next
	 * write or its tick); 0'0: nothing known.  At most last_update. */
	struct tsr_ev committed;
};

void tsr_pg_info_free(struct tsr_pg_info *i);
int tsr_pg_info_copy(struct tsr_pg_info *dst, const struct tsr_pg_info *src);
/* Whether a copy with this info holds oid's latest state as far as
 * backfill goes (a complete copy, or oid at or below last_backfill). */
int tsr_pg_info_has_backfilled(const struct tsr_pg_info *i, const void *oid,
			       size_t oid_len);

/* One interval: a run of map epochs over which the PG's acting set and
 * primary stayed the same. */
struct tsr_pg_interval {
	uint64_t first, last;
	int32_t primary;
	uint8_t maybe_rw;             /* it may have accepted writes: its
					 acting set reached min_size and its
					 primary's up_thru reached first */
	uint32_t n;
	int32_t acting[TSR_OSDMAP_MAX_SIZE];
};

struct tsr_pg_intervals {
	struct tsr_pg_interval *iv;
	size_t n, cap;
};

void tsr_pg_intervals_free(struct tsr_pg_intervals *p);
int tsr_pg_intervals_add(struct tsr_pg_intervals *p,
			 const struct tsr_pg_interval *iv);
int tsr_pg_intervals_copy(struct tsr_pg_intervals *dst,
			  const struct tsr_pg_intervals *src);
/* Add the intervals of src that p lacks (by first epoch), keeping order. */
int tsr_pg_intervals_merge(struct tsr_pg_intervals *p,
			   const struct tsr_pg_intervals *src);
/* Drop the intervals that ended before epoch. */
void tsr_pg_intervals_trim(struct tsr_pg_intervals *p, uint64_t epoch);

/* Encoders append to e (errors sticky in e); decoders read from d (errors
 * sticky in d, the reason in err when given). */
void tsr_ev_encode(struct tsr_enc *e, struct tsr_ev v);
struct tsr_ev tsr_ev_decode(struct tsr_dec *d);
void tsr_pglog_entry_encode(struct tsr_enc *e, const struct tsr_pglog_entry *x);
int tsr_pglog_entry_decode(struct tsr_dec *d, struct tsr_pglog_entry *x,
			   char *err, size_t errlen);
/* Entries [from, to) of l. */
void tsr_pglog_entries_encode(struct tsr_enc *e, const struct tsr_pglog *l,
			      size_t from, size_t to);
/* Into out (initialised here, tail and head (0,0) then the entries' own):
 * refuses entries not in rising version order. */
int tsr_pglog_entries_decode(struct tsr_dec *d, struct tsr_pglog *out,
			     char *err, size_t errlen);
void tsr_pg_info_encode(struct tsr_enc *e, const struct tsr_pg_info *i);
int tsr_pg_info_decode(struct tsr_dec *d, struct tsr_pg_info *i, char *err,
		       size_t errlen);
void tsr_pg_intervals_encode(struct tsr_enc *e, const struct tsr_pg_intervals *p);
int tsr_pg_intervals_decode(struct tsr_dec *d, struct tsr_pg_intervals *p,
			    char *err, size_t errlen);
void tsr_missing_encode(struct tsr_enc *e, const struct tsr_missing *ms);
int tsr_missing_decode(struct tsr_dec *d, struct tsr_missing *ms, char *err,
		       size_t errlen);

#endif
