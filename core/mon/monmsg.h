/* monmsg.h — messages to and between monitors, and their encodings.
 *
 *   MON_RAFT       monitor -> monitor: one Raft message
 *       envelope v2, compat 1 {
 *                     u32 members_fp, u32 type, u64 from, to, term,
 *                     log_term, index, commit, u8 reject, u64 match, ctx,
 *                     u32 n, n x { u64 term, u64 index, bytes data },
 *                     u64 features, string version }   v2 on:
 *                     TSR_MON_FEAT_*, and the monitor's software
 *       A monitor that sends features announces what its log entries
 *       may hold (a leader proposes decisions only once every member
 *       has shown it applies them: the rolling upgrade, mon.c).
 *   MON_CMD        anyone -> a monitor: a command, as words
 *       envelope v1 { u64 client, u64 tid, u32 argc, argc x string }
 *   MON_CMD_REPLY  the monitor's answer
 *       envelope v1 { u64 tid, i32 status, string text, string leader }
 *   MON_SUB        anyone -> a monitor: bring me up to date on the maps
 *                  in want, from the epochs I have (0: none), and, with
 *                  TSR_MON_SUB_KEEP, push every later epoch on this session;
 *                  with TSR_MON_SUB_EVERY, every epoch one by one while
 *                  the monitor's history has them
 *       envelope v1 { u64 tid, u32 want, u64 have[2] }       [0] OSD, [1] MDS
 *   MON_MAPS       the monitor's answer (tid as asked) or push (tid 0), one
 *                  per map; the maps themselves travel as message data:
 *       front: envelope v1 { u64 tid, i32 status, string text,
 *                            string leader, u8 which, u64 epoch, u8 full,
 *                            u32 n, n x u32 len }
 *       data:  n encodings back to back (osdmap.h, mdsmap.h): one full map
 *              of epoch `epoch`, or the incrementals have+1 .. epoch (a
 *              long run of them in several messages, in order)
 *   MON_OSD_BOOT   osd.N -> the leader: it starts serving at addr
 *       envelope v1 { u64 client, u64 tid, i32 osd, string addr,
 *                     string version, u64 features }
 *   MON_OSD_BEACON osd.N -> the leader: alive, with the map epoch it holds
 *                  and the peers it found silent
 *       envelope v1 { u64 client, u64 tid, i32 osd, u64 osdmap_epoch,
 *                     u32 n, n x i32 failed, string version }
 *   MON_MDS_BEACON mds.NAME -> the leader: alive, as incarnation gid
 *       envelope v1 { u64 client, u64 tid, string name, u64 gid,
 *                     string addr, u32 state, string version }
 *   MON_SVC_KEYS   osd.N -> any monitor: the OSDs' service keys, sealed
 *                  for osd.N (auth.h, "Service keys"); the answer's text
 *                  is {"osd": N, "service_keys": "HEX"}.  With osd -1
 *                  from a client or an MDS: its own key toward OSDs,
 *                  sealed for it ({"name": ..., "service_keys": ...})
 *       envelope v1 { u64 client, u64 tid, i32 osd }
 *   MON_PG_STATS   osd.N -> the leader: where the PGs it is the primary of
 *                  stand (pg.h-style state bits, below), taken at epoch
 *                  and its store's usage (bytes in all, used, free for
 *                  clients, objects); v2 on, what the PGs' scrubs found
 *       envelope v2, compat 1 {
 *                     u64 client, u64 tid, i32 osd, u64 epoch,
 *                     u64 total, u64 used, u64 avail, u64 objects, u32 n,
 *                     n x { i64 pool, u32 pg, u32 state, u64 epoch,
 *                           u64 les, u64 lec, u64 sis, u64 lu_epoch,
 *                           u64 lu_ver, u64 degraded, u64 missing,
 *                           u32 nacting, nacting x i32 },
 *                     n x { u32 state_v2, u64 last_scrub,   v2 on: the
 *                           u64 last_deep_scrub,            same PGs in
 *                           u32 scrub_errors, u32 nbad,     the same order
 *                           nbad x string bad } }
 *                  state holds only the v1 bits (TSR_PG_ST_V1: a v1
 *                  decoder refuses any other), state_v2 only the bits from
 *                  SCRUBBING on; a PG's state is the two OR'ed.  A v1
 *                  monitor skips the second section (the envelope's
 *                  length) and sees a scrubbing PG as, say, active+clean.
 *                  A v1 report decodes with the scrub fields all 0.
 *                  Each is answered with MON_CMD_REPLY (the same tid).
 *                  version is the daemon's software (TSR_VERSION).
 *
 * A command's (client, tid) names it across retries: a client that sends
 * the same change again (its monitor died, or lost the leadership before
 * answering) gets the first result, and the change is applied once.
 * status is 0 or a negative errno; text is the JSON result, or on error
 * one line saying why.  leader, when set, is the address of the monitor
 * that leads (status -EAGAIN: ask it instead).
 *
 * Decoding treats the input as hostile: counts and lengths are bounded
 * (TSR_MONMSG_*) before anything is allocated.
 */
#ifndef TSR_MON_MONMSG_H
#define TSR_MON_MONMSG_H

#include "map/osdmap.h"
#include "msg/frame.h"
#include "raft/raft.h"

#include <tessera/encoding.h>

/* Every message to and from the monitors, in one table:
 * X(NAME, number, label, fn) — its type is TSR_MSG_MON_NAME, that is
 * TSR_MSG_USER + number (on the wire: a number is never reused), its
 * encoding is documented above, and tsr_monmsg_types[] holds its check
 * (monmsg.c, check_fn), which the fuzz target runs on every type. */
#define TSR_MON_MESSAGES(X)                                                    \
	X(RAFT, 0, "raft", raft)                                               \
	X(CMD, 1, "command", cmd)                                              \
	X(CMD_REPLY, 2, "reply", reply)                                        \
	X(SUB, 3, "subscription", sub)                                         \
	X(MAPS, 4, "maps", maps)                                               \
	X(OSD_BOOT, 5, "osd boot", osd_boot)                                   \
	X(OSD_BEACON, 6, "osd beacon", osd_beacon)                             \
	X(MDS_BEACON, 7, "mds beacon", mds_beacon)                             \
	X(SVC_KEYS, 8, "service keys", svc_keys)                               \
	X(OSD_ALIVE, 9, "osd alive", osd_alive)                                \
	X(PG_STATS, 10, "pg stats", pg_stats)

enum {
#define TSR_MON_MSG_ENUM(name, n, label, fn) TSR_MSG_MON_##name = TSR_MSG_USER + (n),
	TSR_MON_MESSAGES(TSR_MON_MSG_ENUM)
#undef TSR_MON_MSG_ENUM
};

/* The registry: each type's name, and a check that decodes a message
 * (front[0..len), with data_len bytes of data), encodes what it decoded,
 * and decodes that again to the same thing.  The check returns 0, the
 * decoder's error with the reason in err (the input is not such a
 * message), or -EPROTO when the round trip differs (a bug). */
struct tsr_monmsg_type {
	uint32_t type;
	const char *name;
	int (*check)(const void *front, size_t len, size_t data_len, char *err,
		     size_t errlen);
};
/* The i-th type (registry order), or NULL past the last. */
TSR_API const struct tsr_monmsg_type *tsr_monmsg_type_at(size_t i);
/* The type's entry, or NULL when it is not a monitor message. */
TSR_API const struct tsr_monmsg_type *tsr_monmsg_type(uint32_t type);

/* What a monitor can do (MON_RAFT features). */
#define TSR_MON_FEAT_DECISIONS 0x1ull  /* applies version 2 log entries
                                         * (decisions, daemons/mon/state.h) */
#define TSR_MON_FEAT_UP_THRU 0x2ull    /* keeps up_thru and PG temp in the
                                         * OSD map (v2 records, osdmap.h) */
#define TSR_MON_FEATURES (TSR_MON_FEAT_DECISIONS | TSR_MON_FEAT_UP_THRU)

#define TSR_MONMSG_MAX_ENTRIES 4096
#define TSR_MONMSG_MAX_ENTRY (1u << 20)
#define TSR_MONMSG_MAX_ARGS 64
#define TSR_MONMSG_MAX_ARG 1024
#define TSR_MONMSG_MAX_TEXT (1u << 20)
#define TSR_MONMSG_VERSION_MAX 64     /* a software version, with its NUL */
#define TSR_MONMSG_ADDR_MAX 64        /* IP:PORT, with its NUL */
#define TSR_MONMSG_MAX_FAILED 64      /* peers one OSD beacon reports */

/* Raft messages.  Decoded entries borrow from the input buffer; the array
 * is malloc'd (tsr_monmsg_raft_free). */
/* What a sender says of itself beside a Raft message. */
struct tsr_mon_peer_info {
	uint64_t features;       /* 0 from a monitor that sends none (v1) */
	char version[TSR_MONMSG_VERSION_MAX]; /* "" when not sent */
};
TSR_API int tsr_monmsg_raft_encode(struct tsr_enc *e, uint32_t fp,
				   const struct tsr_mon_peer_info *info,
				   const struct tsr_raft_msg *m);
/* info may be NULL. */
TSR_API int tsr_monmsg_raft_decode(const void *buf, size_t len, uint32_t *fp,
				   struct tsr_mon_peer_info *info,
				   struct tsr_raft_msg *m, char *err, size_t errlen);
TSR_API void tsr_monmsg_raft_free(struct tsr_raft_msg *m);

struct tsr_mon_cmd {
	uint64_t client, tid;
	uint32_t argc;
	char **argv;           /* argc strings, NULL-terminated array */
};

TSR_API int tsr_monmsg_cmd_encode(struct tsr_enc *e, const struct tsr_mon_cmd *c);
/* argv and its strings are malloc'd: tsr_monmsg_cmd_free.  A word holds
 * at most TSR_MONMSG_MAX_ARG - 1 bytes (-E2BIG names the word and the
 * limit); senders check it first (the CLI does).  On any failure argv is
 * freed, but client and tid keep what was read (0 when the envelope
 * itself was bad), so that a monitor can answer the sender with the
 * reason instead of leaving it to time out. */
TSR_API int tsr_monmsg_cmd_decode(const void *buf, size_t len,
				  struct tsr_mon_cmd *c, char *err,
				  size_t errlen);
TSR_API void tsr_monmsg_cmd_free(struct tsr_mon_cmd *c);

struct tsr_mon_reply {
	uint64_t tid;
	int32_t status;
	char *text;            /* malloc'd when decoded */
	char leader[64];
};

TSR_API int tsr_monmsg_reply_encode(struct tsr_enc *e, const struct tsr_mon_reply *r);
TSR_API int tsr_monmsg_reply_decode(const void *buf, size_t len,
				    struct tsr_mon_reply *r, char *err,
				    size_t errlen);

/* The maps (MON_SUB want bits, MON_MAPS which). */
enum { TSR_MON_MAP_OSD = 0, TSR_MON_MAP_MDS = 1, TSR_MON_NMAPS = 2 };
#define TSR_MON_SUB_OSD (1u << TSR_MON_MAP_OSD)
#define TSR_MON_SUB_MDS (1u << TSR_MON_MAP_MDS)
#define TSR_MON_SUB_KEEP 0x100u   /* stay subscribed */
#define TSR_MON_SUB_EVERY 0x200u  /* every epoch: the incrementals while the
                                   * monitor's history has them, even when a
                                   * full map would be smaller (an OSD's PGs
                                   * need each epoch) */
#define TSR_MON_SUB_KNOWN 0x303u
#define TSR_MONMSG_MAX_INCS 1024

struct tsr_mon_sub {
	uint64_t tid;
	uint32_t want;
	uint64_t have[TSR_MON_NMAPS];
};

TSR_API int tsr_monmsg_sub_encode(struct tsr_enc *e, const struct tsr_mon_sub *s);
TSR_API int tsr_monmsg_sub_decode(const void *buf, size_t len, struct tsr_mon_sub *s,
				  char *err, size_t errlen);

struct tsr_mon_maps {
	uint64_t tid;
	int32_t status;
	char *text;            /* malloc'd when decoded */
	char leader[64];
	uint8_t which;         /* TSR_MON_MAP_* */
	uint64_t epoch;
	uint8_t full;
	uint32_t n;
	uint32_t *len;         /* n lengths, malloc'd when decoded */
};

TSR_API int tsr_monmsg_maps_encode(struct tsr_enc *e, const struct tsr_mon_maps *m);
/* Checks the lengths add up to data_len (the message's data). */
TSR_API int tsr_monmsg_maps_decode(const void *buf, size_t len, size_t data_len,
				   struct tsr_mon_maps *m, char *err, size_t errlen);
TSR_API void tsr_monmsg_maps_free(struct tsr_mon_maps *m);

/* The daemons' messages.  Decoders check what every field may hold: an
 * OSD id in 0 .. TSR_OSDMAP_MAX_OSDS - 1, an address IP:PORT of
 * printable bytes without blanks, a version of printable bytes, a name
 * as the maps take it, a known MDS state, at most TSR_MONMSG_MAX_FAILED
 * peers; -EBADMSG or -EINVAL naming the field otherwise. */
struct tsr_mon_osd_boot {
	uint64_t client, tid;
	int32_t osd;
	char addr[TSR_MONMSG_ADDR_MAX];
	char version[TSR_MONMSG_VERSION_MAX];
	uint64_t features;
};
TSR_API int tsr_monmsg_osd_boot_encode(struct tsr_enc *e, const struct tsr_mon_osd_boot *b);
TSR_API int tsr_monmsg_osd_boot_decode(const void *buf, size_t len,
				       struct tsr_mon_osd_boot *b, char *err,
				       size_t errlen);

struct tsr_mon_osd_beacon {
	uint64_t client, tid;
	int32_t osd;
	uint64_t osdmap_epoch;       /* the map epoch the OSD holds */
	uint32_t nfailed;
	int32_t failed[TSR_MONMSG_MAX_FAILED];
	char version[TSR_MONMSG_VERSION_MAX];
};
TSR_API int tsr_monmsg_osd_beacon_encode(struct tsr_enc *e,
					 const struct tsr_mon_osd_beacon *b);
TSR_API int tsr_monmsg_osd_beacon_decode(const void *buf, size_t len,
					 struct tsr_mon_osd_beacon *b, char *err,
					 size_t errlen);

struct tsr_mon_mds_beacon {
	uint64_t client, tid;
	char name[TSR_MONMSG_ADDR_MAX];
	uint64_t gid;                /* > 0 */
	char addr[TSR_MONMSG_ADDR_MAX];
	uint32_t state;              /* enum tsr_mds_state */
	char version[TSR_MONMSG_VERSION_MAX];
};
TSR_API int tsr_monmsg_mds_beacon_encode(struct tsr_enc *e,
					 const struct tsr_mon_mds_beacon *b);
TSR_API int tsr_monmsg_mds_beacon_decode(const void *buf, size_t len,
					 struct tsr_mon_mds_beacon *b, char *err,
					 size_t errlen);

/* What an OSD asks of the map for its PGs (osdbeacon.h): that its up_thru
 * be raised to want_up_thru (0: not asked), and PG temp mappings set (n
 * OSDs, primary first) or removed (n 0).  up_from names the incarnation
 * asking (its up_from in the map it holds): the monitors refuse what an
 * earlier one asked.  Decoding checks the ids, the bounds, that want is
 * not below up_from and that no PG comes twice.
 *     envelope v1 { u64 client, u64 tid, i32 osd, u64 up_from,
 *                   u64 want_up_thru, u32 n, n x { i64 pool, u32 pg,
 *                   u32 k, k x i32 osd } } */
#define TSR_MONMSG_MAX_PG_TEMP 64     /* PG temp requests in one message */
struct tsr_mon_pg_temp_req {
	int64_t pool;
	uint32_t pg;
	uint32_t n;                  /* 0: remove the mapping */
	int32_t osds[TSR_OSDMAP_MAX_SIZE];
};
struct tsr_mon_osd_alive {
	uint64_t client, tid;
	int32_t osd;
	uint64_t up_from;
	uint64_t want_up_thru;
	uint32_t npg_temp;
	struct tsr_mon_pg_temp_req pg_temp[TSR_MONMSG_MAX_PG_TEMP];
};
TSR_API int tsr_monmsg_osd_alive_encode(struct tsr_enc *e,
					const struct tsr_mon_osd_alive *a);
TSR_API int tsr_monmsg_osd_alive_decode(const void *buf, size_t len,
					struct tsr_mon_osd_alive *a, char *err,
					size_t errlen);

/* A PG's state, as its primary reports it: bits, shown joined by '+'
 * ("active+clean", "active+undersized+degraded"). */
#define TSR_PG_STATES(X)                        \
	X(ACTIVE, 0, "active")                  \
	X(CLEAN, 1, "clean")                    \
	X(PEERING, 2, "peering")                \
	X(ACTIVATING, 3, "activating")          \
	X(DOWN, 4, "down")                      \
	X(INCOMPLETE, 5, "incomplete")          \
	X(UNDERSIZED, 6, "undersized")          \
	X(DEGRADED, 7, "degraded")              \
	X(RECOVERING, 8, "recovering")          \
	X(BACKFILLING, 9, "backfilling")        \
	X(REMAPPED, 10, "remapped")             \
	X(STALE, 11, "stale")                   \
	X(UNKNOWN, 12, "unknown")               \
	X(SCRUBBING, 13, "scrubbing")           \
	X(DEEP, 14, "deep")                     \
	X(INCONSISTENT, 15, "inconsistent")     \
	X(REPAIR, 16, "repair")                 \
	X(PEERED, 17, "peered")                 \
	X(BACKFILL_WAIT, 18, "backfill_wait")
/* BACKFILL_WAIT: a backfill waits for its OSDs' slots (osd_max_backfills).
 * PEERED: peered below the pool's min_size: it serves reads of what is
 * known committed, writes wait (not active).
 * DEEP: with SCRUBBING, the scrub is a deep one (it reads and compares
 * the data, not only sizes and attributes); REPAIR: with SCRUBBING, it
 * repairs what it finds.  INCONSISTENT: the last scrub found objects
 * whose copies differ and they are not repaired since. */
enum {
#define TSR_PG_STATE_BIT(name, n, label) TSR_PG_ST_##name = 1u << (n),
	TSR_PG_STATES(TSR_PG_STATE_BIT)
#undef TSR_PG_STATE_BIT
};
#define TSR_PG_ST_ALL ((1u << 19) - 1)
#define TSR_PG_ST_V1 ((1u << 13) - 1)   /* the bits a v1 report may carry */
/* "active+clean" into out (at most len bytes, NUL included): out. */
TSR_API char *tsr_pg_state_str(uint32_t state, char *out, size_t len);

#define TSR_MONMSG_MAX_PG_STATS 4096  /* PGs in one report */
#define TSR_PG_STAT_MAX_BAD 4         /* inconsistent objects named per PG */
#define TSR_PG_STAT_BAD_NAME 96       /* one such name, with its NUL */

struct tsr_mon_pg_stat {
	int64_t pool;
	uint32_t pg;
	uint32_t state;               /* TSR_PG_ST_* bits */
	uint64_t epoch;               /* the primary's map when taken */
	uint64_t les, lec, sis;       /* last epoch started, clean; interval */
	uint64_t lu_epoch, lu_ver;    /* its log's head */
	uint64_t degraded;            /* object copies the acting set lacks */
	uint64_t missing;             /* objects the primary lacks */
	uint32_t nacting;
	int32_t acting[TSR_OSDMAP_MAX_SIZE];
	/* v2 on (0 from a v1 sender).  Wall-clock Unix seconds when the last
	 * scrub and the last deep scrub of the PG completed (0: never; a deep
	 * scrub sets both); the objects that scrub found inconsistent and
	 * that are not repaired since, and up to TSR_PG_STAT_MAX_BAD of their
	 * names: 1..95 printable ASCII bytes (0x20..0x7e, the OSD escapes and
	 * truncates longer or other names), NUL-terminated, the rest of each
	 * array zero.  Decoding refuses nbad > TSR_PG_STAT_MAX_BAD, a name
	 * that is empty, too long or not printable, and scrub_errors < nbad;
	 * encoding refuses them with -EINVAL. */
	uint64_t last_scrub, last_deep_scrub;
	uint32_t scrub_errors;
	uint32_t nbad;
	char bad[TSR_PG_STAT_MAX_BAD][TSR_PG_STAT_BAD_NAME];
};

struct tsr_mon_pg_stats {
	uint64_t client, tid;
	int32_t osd;
	uint64_t epoch;
	uint64_t total, used, avail, objects; /* the OSD's store (0: not known) */
	uint32_t n;
	struct tsr_mon_pg_stat *pgs;  /* n of them (decode: malloc'd) */
};
/* Writes v2; -EINVAL (nothing usable written) when a count exceeds its
 * bound or a PG's scrub fields are what decoding refuses (above). */
TSR_API int tsr_monmsg_pg_stats_encode(struct tsr_enc *e, const struct tsr_mon_pg_stats *s);
/* Decode (s->pgs malloc'd: tsr_monmsg_pg_stats_free). */
TSR_API int tsr_monmsg_pg_stats_decode(const void *buf, size_t len,
				       struct tsr_mon_pg_stats *s, char *err, size_t errlen);
TSR_API void tsr_monmsg_pg_stats_free(struct tsr_mon_pg_stats *s);

struct tsr_mon_svc_keys {
	uint64_t client, tid;
	int32_t osd;
};
TSR_API int tsr_monmsg_svc_keys_encode(struct tsr_enc *e, const struct tsr_mon_svc_keys *k);
TSR_API int tsr_monmsg_svc_keys_decode(const void *buf, size_t len,
				       struct tsr_mon_svc_keys *k, char *err,
				       size_t errlen);

#endif
