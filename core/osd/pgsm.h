/* pgsm.h — one placement group on one OSD as a deterministic state
 * machine: peering, replication of writes, log-based recovery, clean.  No
 * I/O, no clock, no threads, as core/raft.  The OSD (or the simulator,
 * tests/sim) feeds it map epochs, messages from other OSDs, client
 * operations and the completions of what it asked for, and carries out
 * the actions it hands back (tsr_pgsm_actions), in order:
 *
 *   SEND      a message to another OSD (pgmsg.h); with attach OP the
 *             client operation's transaction goes along (a replicated
 *             write), with attach OBJECT the caller reads the object
 *             named and sends its contents and version (a push);
 *   PERSIST   one backend transaction on the PG's collection: the omap
 *             changes to the PG's meta object (its info, log and missing
 *             set, encoded here) and the object change (the client's
 *             operation, a received payload, or a removal); once it is
 *             durable the caller calls tsr_pgsm_committed(token), and,
 *             with `answer` set, sends msg to osd `to` (a member's
 *             answer to a replicated write: it may go straight from the
 *             backend's commit callback, before or after the call;
 *             nothing else the machine sends depends on its order);
 *   EXEC      run a client operation now: a read is answered by the
 *             caller; for a write the caller builds its transaction
 *             (against the object as earlier writes leave it) and calls
 *             tsr_pgsm_exec_done() before anything else;
 *   REPLY     answer a client operation (a write, once every member of
 *             the acting set holds it durably; an error);
 *   UP_THRU   ask the monitors to record up_thru >= epoch for this OSD;
 *   DELETE    remove this PG's collection (a stray copy, no longer needed);
 *   LIST      list this copy's objects after a name, with their versions,
 *             and hand them in with tsr_pgsm_list_done() (a backfill);
 *   PG_TEMP   ask the monitors for a temporary acting set (none: back to
 *             the up set) — while the up set's primary is being rebuilt;
 *   RESERVE   (conf reserve_backfill) a backfill of member `to` may start:
 *             take a slot of this OSD's and then one of `to`'s, and call
 *             tsr_pgsm_reserved() once both are held (backfills per OSD);
 *   RELEASE   give back the slots RESERVE asked for (held or not yet).
 *
 * The protocol (doc/architecture.md, "Peering"):
 *
 *  1. A new interval (acting or up set, pool size or min_size, or a
 *     member's incarnation changed) resets the PG.  The primary asks for
 *     the info of every OSD that may hold the PG: the up and acting sets,
 *     and the members, up now, of past intervals that may have taken
 *     writes (maybe_rw) since the newest completed start (history_les).
 *  2. Each of those intervals must be answered for by one copy that holds
 *     all it acknowledged (a write is acknowledged only when every member
 *     has it): a complete copy, one backfilled only since, or its primary
 *     if that was being backfilled when it began (it could not start).
 *     An interval with no such copy up leaves the PG "down".
 *  3. The authority is a complete copy that took part in the newest
 *     completed start (les >= history_les; none heard from: "down"),
 *     newest head first: that start had every acknowledged write before
 *     it, and its members' longest log every one since.
 *  4. The primary takes that log (GETLOG) and merges it into its own:
 *     entries of its own that are not in it are divergent (never
 *     acknowledged), their objects go back to the authoritative version;
 *     a copy whose head (or divergence) lies below the authority's log
 *     tail takes the log and is rebuilt by backfill.  A primary whose own
 *     copy needs that asks for a PG temp with the authority first.
 *  5. It waits until the map says up_thru >= this interval for it (so a
 *     later peering knows this interval may have written; asked again
 *     with every map), then sends each member the entries it lacks
 *     (ACTIVATE).  Members merge, record les = the interval (not below
 *     min_size: such a start takes no writes) and answer with their info
 *     and what they miss.  With every answer the start is complete:
 *     history_les rises.
 *  6. Active: writes flow; the primary pulls what it misses and pushes
 *     what the others miss, an object a client waits on first, then
 *     backfills members one window of objects at a time.  With nothing
 *     missing and the acting set whole and equal to the up set, the PG is
 *     clean; the copies on OSDs outside it that answered are deleted
 *     (PURGE).  A PG temp whose members are all whole is given back.
 *
 * The caller feeds a PG every map epoch from its creation, and a PG loaded
 * from the store every epoch from its interval's first (info
 * same_interval_since): a skipped epoch could hide an interval that took
 * writes (advance_map refuses the wrong one with -EINVAL).
 *
 * Below min_size the PG activates ("peered") but takes no writes.  It
 * serves reads of objects whose newest entry is at or below
 * info.committed (pglog.h): never one a lone copy logged and no one
 * acknowledged, which a later peering may drop.
 *
 * An OSD restarted in place may have lost what it did not persist: it
 * serves a PG only in an interval that begins once the map shows its new
 * incarnation up (a member's up_from changing starts a new interval), so
 * a version it handed out before the crash is never handed out again.
 *
 * Conventions: functions return 0 or a negative errno; pointers in an
 * action are valid until the next call on the machine.
 */
#ifndef TSR_OSD_PGSM_H
#define TSR_OSD_PGSM_H

#include "osd/pglog.h"

#include <stddef.h>
#include <stdint.h>

/* PG states (one X-macro: name, value, label). */
#define TSR_PGSM_STATES(X)                                               \
	X(INITIAL, 0, "initial")        /* no map yet */                  \
	X(GETINFO, 1, "peering")        /* asking for infos */           \
	X(GETLOG, 2, "peering")         /* fetching the authoritative log */ \
	X(WAIT_UP_THRU, 3, "peering")   /* waiting for up_thru in the map */ \
	X(ACTIVATING, 4, "activating")  /* waiting for the members */    \
	X(ACTIVE, 5, "active")          /* the primary, serving */         \
	X(REPLICA, 6, "replica")        /* a member, activated */          \
	X(STRAY, 7, "stray")            /* holds a copy, not in acting */   \
	X(DOWN, 8, "down")              /* an interval that may have
					   written has no member up */      \
	X(INCOMPLETE, 9, "incomplete")  /* no copy can be the authority */  \
	X(DELETED, 10, "deleted")

enum tsr_pgsm_state {
#define TSR_PGSM_STATE_ENUM(name, n, label) TSR_PGSM_##name = (n),
	TSR_PGSM_STATES(TSR_PGSM_STATE_ENUM)
#undef TSR_PGSM_STATE_ENUM
};
const char *tsr_pgsm_state_name(int state);

/* The map as one PG sees it at one epoch. */
struct tsr_pg_mapview {
	uint64_t epoch;
	uint32_t nup, nacting;
	int32_t up[TSR_OSDMAP_MAX_SIZE];
	int32_t acting[TSR_OSDMAP_MAX_SIZE];   /* primary first */
	uint32_t size, min_size;               /* the pool's */
	uint64_t primary_up_thru;              /* the acting primary's up_thru */
	uint64_t acting_up_from[TSR_OSDMAP_MAX_SIZE]; /* since when each member's
						  running incarnation is up: a
						  member restarted in place
						  starts a new interval */
	/* since when osd's running incarnation is up at this epoch, 0 when
	 * it is down (the members of past intervals) */
	uint64_t (*osd_up_from)(const void *arg, int32_t osd);
	const void *osd_up_arg;                /* kept until the next epoch */
};

/* Messages between the copies of a PG (their encodings: pgmsg.c). */
#define TSR_PGMSG_TYPES(X)                                               \
	X(QUERY, 1, "pg query")            /* primary -> any: your info */ \
	X(NOTIFY, 2, "pg notify")          /* info, intervals, missing */    \
	X(GETLOG, 3, "pg getlog")          /* primary -> the authority */  \
	X(LOG, 4, "pg log")                /* its info, log and missing */   \
	X(ACTIVATE, 5, "pg activate")      /* entries to merge, start */    \
	X(ACTIVATE_ACK, 6, "pg activated") /* durable; what it misses */    \
	X(REPOP, 7, "pg repop")            /* one write (payload along) */  \
	X(REPOP_REPLY, 8, "pg repop reply")                               \
	X(PULL, 9, "pg pull")              /* send me this object */         \
	X(PUSH, 10, "pg push")             /* an object (payload along) */   \
	X(PUSH_ACK, 11, "pg push ack")                                     \
	X(PURGE, 12, "pg purge")           /* the PG is clean without you */ \
	X(SCAN, 13, "pg scan")             /* backfill: list your objects */  \
	X(SCAN_REPLY, 14, "pg scan reply")                                 \
	X(PROGRESS, 15, "pg backfill progress") /* you hold all up to */   \
	X(PROGRESS_ACK, 16, "pg backfill progress ack")                   \
	X(REPAIR, 17, "pg repair")         /* your copy of oid is bad: you
					      miss it at ev */              \
	X(SCRUB, 18, "pg scrub")           /* your scrub map of a range */ \
	X(SCRUB_MAP, 19, "pg scrub map")                                   \
	X(COMMIT, 20, "pg commit")         /* writes up to ev are held by
					      every member */               \
	X(BACKFILL_RESERVE, 21, "pg backfill reserve") /* a slot to be
					      backfilled (the OSDs') */     \
	X(BACKFILL_GRANT, 22, "pg backfill grant")                        \
	X(BACKFILL_RELEASE, 23, "pg backfill release")

enum {
#define TSR_PGMSG_ENUM(name, n, label) TSR_PGMSG_##name = (n),
	TSR_PGMSG_TYPES(TSR_PGMSG_ENUM)
#undef TSR_PGMSG_ENUM
};
const char *tsr_pgmsg_name(int type);

/* An object and its version, as a backfill scan lists them. */
struct tsr_pgsm_objver {
	uint8_t *oid;                /* owned */
	size_t oid_len;
	struct tsr_ev ev;
};
#define TSR_PGMSG_MAX_SCAN 4096u     /* objects in one SCAN_REPLY */

/* An object as one copy describes it to a scrub (core/osd/scrub.h). */
#define TSR_SCRUB_F_READ_ERR 1u      /* reading it failed: digests void */
#define TSR_SCRUB_F_NO_VERSION 2u    /* its version attribute is missing or
					damaged (ev 0'0) */
#define TSR_SCRUB_F_ALL 3u
struct tsr_scrub_obj {
	uint8_t *oid;                /* owned */
	size_t oid_len;
	struct tsr_ev ev;
	uint64_t size;
	uint32_t attr_crc;           /* its attributes but the version, names
					and values in name order (CRC32C) */
	uint32_t omap_crc;           /* its omap, keys and values in order */
	uint32_t data_crc;           /* its data (a deep scrub; else 0) */
	uint8_t flags;               /* TSR_SCRUB_F_* */
};
#define TSR_PGMSG_MAX_SCRUB 1024u    /* objects in one SCRUB_MAP */

struct tsr_pgmsg {
	uint8_t type;
	struct tsr_pgid pgid;
	int32_t from;
	uint64_t map_epoch;          /* the sender's map */
	uint64_t interval;           /* the interval it belongs to (the
					primary's same_interval_since) */
	struct tsr_pg_info info;     /* NOTIFY, LOG, ACTIVATE */
	struct tsr_pg_intervals past;/* NOTIFY, ACTIVATE */
	struct tsr_missing missing;  /* NOTIFY, LOG, ACTIVATE_ACK */
	struct tsr_pglog log;        /* LOG, ACTIVATE (entries), REPOP (one) */
	uint8_t whole;               /* ACTIVATE: log is the whole log (the
					member diverged), else what follows
					its last_update */
	struct tsr_ev ev;            /* REPOP_REPLY, PULL, PUSH, PUSH_ACK,
					COMMIT */
	struct tsr_ev trim_to;       /* REPOP: entries at or below may go */
	struct tsr_ev committed;     /* REPOP: the primary's info.committed */
	uint8_t *oid;                /* PULL, PUSH, PUSH_ACK (owned) */
	size_t oid_len;
	uint8_t op;                  /* PUSH: MODIFY (contents along) or
					DELETE (the sender has no copy) */
	int32_t result;              /* REPOP_REPLY */
	uint8_t backfill;            /* PUSH: part of a backfill (applies
					whether or not the object is missing) */
	uint8_t done;                /* SCAN_REPLY: no objects after these;
					PROGRESS(_ACK): the backfill is over */
	uint32_t max;                /* SCAN: at most this many */
	struct tsr_pgsm_objver *objs;/* SCAN_REPLY: names and versions, in
					order (owned) */
	size_t nobjs;
	/* SCRUB: the objects after oid (none: from the first) up to and
	 * including oid2 (none: to the last), at most max of them;
	 * SCRUB_MAP: those (done: none is left in the range), in order */
	uint8_t *oid2;               /* owned */
	size_t oid2_len;
	uint8_t deep;                /* SCRUB: data CRCs too */
	uint64_t token;              /* SCRUB, SCRUB_MAP: the scrub's */
	struct tsr_scrub_obj *sobjs; /* SCRUB_MAP (owned) */
	size_t nsobjs;
};

void tsr_pgmsg_free(struct tsr_pgmsg *m);
int tsr_pgmsg_encode(struct tsr_enc *e, const struct tsr_pgmsg *m);
int tsr_pgmsg_decode(const void *buf, size_t len, struct tsr_pgmsg *m,
		     char *err, size_t errlen);
/* A deep copy of m into *out (through the codec): 0, or -ENOMEM with
 * *out empty. */
int tsr_pgmsg_clone(const struct tsr_pgmsg *m, struct tsr_pgmsg *out);
/* Decode, encode, decode and encode again: 0 when both encodings agree,
 * -EBADMSG when the input does not decode (err says why), -EPROTO when
 * it decodes but does not round-trip (a bug).  The fuzz target runs it. */
int tsr_pgmsg_check(const void *buf, size_t len, char *err, size_t errlen);

/* Client operations, as the machine sees them. */
#define TSR_PGSM_OP_READ 1
#define TSR_PGSM_OP_WRITE 2          /* modifies or deletes the object */

struct tsr_pgsm_op {
	uint64_t handle;             /* the caller's */
	struct tsr_reqid reqid;
	uint8_t kind;                /* TSR_PGSM_OP_* */
	const void *oid;
	size_t oid_len;
};

/* The NOTIFY an OSD that holds no copy of pgid answers a QUERY with
 * (into out, which the caller frees with tsr_pgmsg_free). */
void tsr_pgmsg_empty_notify(const struct tsr_pgmsg *query, int32_t whoami,
			    uint64_t map_epoch, struct tsr_pgmsg *out);

/* Actions. */
#define TSR_PGSM_ACTIONS(X)          \
	X(SEND, 1, "send")           \
	X(PERSIST, 2, "persist")     \
	X(EXEC, 3, "exec")           \
	X(REPLY, 4, "reply")         \
	X(UP_THRU, 5, "up_thru")     \
	X(DELETE, 6, "delete")       \
	X(LIST, 7, "list")           \
	X(PG_TEMP, 8, "pg_temp")     \
	X(RESERVE, 9, "reserve")     \
	X(RELEASE, 10, "release")

enum {
#define TSR_PGSM_ACTION_ENUM(name, n, label) TSR_PGSM_A_##name = (n),
	TSR_PGSM_ACTIONS(TSR_PGSM_ACTION_ENUM)
#undef TSR_PGSM_ACTION_ENUM
};

#define TSR_PGSM_ATTACH_NONE 0
#define TSR_PGSM_ATTACH_OP 1         /* the client op's transaction (handle) */
#define TSR_PGSM_ATTACH_OBJECT 2     /* the object msg.oid as stored here:
					its version into msg.ev, op DELETE
					when absent */

/* PERSIST's object change */
#define TSR_PGSM_OBJ_NONE 0
#define TSR_PGSM_OBJ_OP 1            /* the client op (handle) */
#define TSR_PGSM_OBJ_PAYLOAD 2       /* the payload of the message being
					handled (tsr_pgsm_recv's payload) */

/* One omap change on the PG's meta object: set key to val, or (val NULL)
 * remove key, or (range) remove the keys in [key, key2). */
struct tsr_pgsm_kv {
	uint8_t *key;
	size_t key_len;
	uint8_t *val;                /* NULL: remove */
	size_t val_len;
	uint8_t range;
	uint8_t *key2;
	size_t key2_len;
};

struct tsr_pgsm_name {
	uint8_t *p;
	size_t n;
};

struct tsr_pgsm_action {
	int type;
	/* SEND */
	int32_t to;
	struct tsr_pgmsg msg;
	int attach;
	/* SEND attach OP, EXEC, REPLY, PERSIST obj OP */
	uint64_t handle;
	/* EXEC, REPLY: the version written (writes) */
	struct tsr_ev ev;
	int32_t result;              /* REPLY: 0 or -errno */
	/* PERSIST */
	struct tsr_pgsm_kv *kv;
	size_t nkv;
	int obj;
	uint64_t payload;
	struct tsr_pgsm_name *rm;    /* objects to remove first */
	size_t nrm;
	uint64_t token;              /* tsr_pgsm_committed() */
	int answer;                  /* send msg to `to` once durable */
	/* UP_THRU */
	uint64_t epoch;
	/* LIST: the objects after oid (msg.oid; none: from the first), at most
	 * max (msg.max), with their versions: tsr_pgsm_list_done(token) */
	/* RESERVE, RELEASE: to (the backfill's target) */
	/* PG_TEMP: ask the monitors for this acting set (n 0: none) */
	uint32_t ntemp;
	int32_t temp[TSR_OSDMAP_MAX_SIZE];
};

/* Free what an action owns (its message, omap changes and names); the
 * caller that took actions out of the machine's list frees them so. */
void tsr_pgsm_action_free(struct tsr_pgsm_action *a);
void tsr_pgsm_kv_free(struct tsr_pgsm_kv *kv, size_t nkv, struct tsr_pgsm_name *rm,
		      size_t nrm);

struct tsr_pgsm_conf {
	struct tsr_pgid pgid;
	int32_t whoami;
	uint64_t created;            /* the epoch that created the PG */
	uint32_t log_max;            /* entries kept (trimmed when more) */
	uint32_t recovery_max;       /* pulls and pushes in flight */
	uint32_t queue_max;          /* client ops waiting (peering, recovery) */
	uint32_t backfill_window;    /* objects compared per backfill window (64) */
	int reserve_backfill;        /* a backfill waits for RESERVE's slots */
};

struct tsr_pgsm;

int tsr_pgsm_create(const struct tsr_pgsm_conf *conf, struct tsr_pgsm **out);
/* Load what a PERSIST stored: the meta object's omap pairs, in key order
 * (before the first map). */
int tsr_pgsm_load(struct tsr_pgsm *sm, const void *key, size_t key_len,
		  const void *val, size_t val_len, char *err, size_t errlen);
void tsr_pgsm_destroy(struct tsr_pgsm *sm);

/* The next map epoch (every epoch, in order, from the PG's creation or
 * the last one it saw). */
int tsr_pgsm_advance_map(struct tsr_pgsm *sm, const struct tsr_pg_mapview *mv);
/* A message for this PG.  -EAGAIN: it comes from a newer map; hand it in
 * again once advance_map has reached m->map_epoch.  payload is the
 * caller's name for what travelled with it (REPOP, PUSH). */
int tsr_pgsm_recv(struct tsr_pgsm *sm, const struct tsr_pgmsg *m, uint64_t payload);
/* A PERSIST is durable. */
int tsr_pgsm_committed(struct tsr_pgsm *sm, uint64_t token);
/* Time passes: the caller calls this about once a second while
 * tsr_pgsm_commit_due() says so.  A primary whose writes went quiet tells
 * its members how far they are committed (info.committed), which is as
 * far as a member left alone below min_size serves reads. */
int tsr_pgsm_tick(struct tsr_pgsm *sm);
/* The slots a RESERVE toward osd asked for, in the interval that began
 * at epoch interval, are held: the backfill starts (an answer for
 * another interval or target is ignored). */
int tsr_pgsm_reserved(struct tsr_pgsm *sm, int32_t osd, uint64_t interval);
/* A backfill waits for its reservation. */
int tsr_pgsm_backfill_waiting(const struct tsr_pgsm *sm);
int tsr_pgsm_commit_due(const struct tsr_pgsm *sm);
/* A client operation (the caller checked its map epoch). */
int tsr_pgsm_op(struct tsr_pgsm *sm, const struct tsr_pgsm_op *op);
/* The write EXEC named has been built: prior is the object's version
 * before it, op TSR_PGLOG_MODIFY or _DELETE; result < 0: the op fails
 * (a guard) and changes nothing.  */
int tsr_pgsm_exec_done(struct tsr_pgsm *sm, uint64_t handle, struct tsr_ev prior,
		       uint8_t op, int32_t result);

/* Scrub and repair (the primary, active).  Is a write to oid under way
 * or the object missing on a member, so that its copies may differ for
 * now? */
int tsr_pgsm_object_busy(const struct tsr_pgsm *sm, const void *oid, size_t oid_len);
/* Writes under way (not yet held by every member) on objects named after
 * after (after_len 0: any). */
size_t tsr_pgsm_writes_after(const struct tsr_pgsm *sm, const void *after, size_t after_len);
/* The copies of oid on osds[0..n) are bad (a scrub found them so): each
 * is missing there at version ev, the authoritative copy's, and recovery
 * copies it back from a copy not among them.  A member is told (REPAIR)
 * and records it; this copy records it at once.  All are marked before
 * recovery starts, so no bad copy is a source.  -EBUSY while the object
 * is busy (above), -ESTALE when a write followed ev, -EINVAL when an osd
 * is no member of the acting set or every member is named, -EAGAIN when
 * the PG is not active. */
int tsr_pgsm_repair(struct tsr_pgsm *sm, const void *oid, size_t oid_len,
		    const int32_t *osds, size_t n, struct tsr_ev ev);
/* The version of the newest entry of this copy's log on oid (1), or 0
 * when the log has none. */
int tsr_pgsm_last_write(const struct tsr_pgsm *sm, const void *oid, size_t oid_len,
			struct tsr_ev *ev);

/* The actions queued since the last call: *n of them, valid until the
 * next call on the machine.  Take them all, then carry them out. */
struct tsr_pgsm_action *tsr_pgsm_actions(struct tsr_pgsm *sm, size_t *n);
void tsr_pgsm_actions_clear(struct tsr_pgsm *sm);

/* The answer to LIST (its token): n objects in name order with their
 * versions, as committed when listed; end: no objects after them.  It may
 * come any time later; an answer to a LIST the machine no longer waits
 * for is dropped.  (A copy answers a SCAN from its primary the
 * same way: the machine sends the SCAN_REPLY.) */
int tsr_pgsm_list_done(struct tsr_pgsm *sm, uint64_t token,
		       const struct tsr_pgsm_objver *objs, size_t n, int end);

/* Status. */
int tsr_pgsm_state(const struct tsr_pgsm *sm);
int tsr_pgsm_is_clean(const struct tsr_pgsm *sm);
const struct tsr_pg_info *tsr_pgsm_info(const struct tsr_pgsm *sm);
const struct tsr_pglog *tsr_pgsm_log(const struct tsr_pgsm *sm);
const struct tsr_missing *tsr_pgsm_missing(const struct tsr_pgsm *sm);
/* Objects missing on the members of the acting set, this one included
 * (the primary's count: degraded objects). */
size_t tsr_pgsm_degraded(const struct tsr_pgsm *sm);
/* Is the primary backfilling a member? */
int tsr_pgsm_backfilling(const struct tsr_pgsm *sm);
/* The map as the machine sees it now (the last epoch fed). */
const struct tsr_pg_mapview *tsr_pgsm_mapview(const struct tsr_pgsm *sm);
/* One line on why the PG is where it is (down: which interval; waiting
 * for which OSD). */
const char *tsr_pgsm_why(const struct tsr_pgsm *sm);

#endif
