/* osdmap.h — the OSD map: which OSDs exist, where they are and whether they
 * serve, the placement map, the pools, the PG temp mappings; and its
 * incrementals.
 *
 * The monitors own the map and change it one epoch at a time; everyone
 * else (OSDs, clients, MDSs) holds a copy and brings it forward with the
 * incrementals the monitors send (osdmap.c computes an incremental as the
 * difference of two consecutive maps, so what is sent is exactly what
 * changed).  A copy that misses an epoch asks for the full map.  Holders
 * that keep several epochs at once share them as immutable, counted
 * objects (osdmap_epoch.h), which also place PGs.
 *
 * Conventions: functions return 0 or a negative errno, with the reason in
 * err[errlen] when they take one.  A map owns its arrays and its placement
 * blob (tsr_osdmap_free); decoders build a new map and hand it over only
 * when the input decoded whole and passed tsr_osdmap_check(), so a caller's
 * map is never left half-changed.  OSDs are kept sorted by id, pools by id,
 * PG temp mappings by (pool, pg); an incremental's lists are sorted the
 * same way, each key at most once.
 *
 * Full map (the core's versioned encoding, tessera/encoding.h):
 *
 *   envelope v2 (compat 1) {
 *     u64 epoch, u32 flags, i64 next_pool_id,
 *     string placement,            the placement plugin's name
 *     bytes  pmap,                 its binary map (tsr_placement_ops)
 *     u32 n, n x osd,              sorted by id
 *     u32 n, n x pool,             sorted by id
 *     u32 n, n x pg_temp           v2; sorted by (pool, pg)
 *   }
 *   osd  = envelope v2 (compat 1) { i32 id, string host, string rack,
 *                        string addr, f64 weight, f64 reweight, u8 in,
 *                        u8 up, u8 auto_out, u64 up_from,
 *                        u64 up_thru }                          up_thru: v2
 *   pool = envelope v1 { i64 id, string name, u32 pg_num, u32 size,
 *                        u32 min_size, u32 rule, string redundancy,
 *                        string redundancy_opts }
 *   pg_temp = { i64 pool, u32 pg, u32 n, n x i32 osd }   n in 1..MAX_SIZE
 *   pgid    = { i64 pool, u32 pg }
 *
 * (pg_temp and pgid are fixed layouts, not envelopes: a new per-PG
 * override, such as a primary, comes as a new list in a new version.)
 *
 * Incremental (from epoch - 1 to epoch):
 *
 *   envelope v2 (compat 1) {
 *     u64 epoch, u32 flags, i64 next_pool_id,
 *     u8 has_pmap, [string placement, bytes pmap]   when the blob changed
 *     u32 n, n x osd               OSDs new or changed (whole records)
 *     u32 n, n x i32               OSDs removed
 *     u32 n, n x pool              pools new or changed
 *     u32 n, n x i64               pools removed
 *     u32 n, n x pg_temp           v2: PG temp mappings new or changed
 *     u32 n, n x pgid              v2: PG temp mappings removed
 *   }
 *
 * Version 1 (everything above but the fields marked v2) is what monitors
 * wrote before up_thru and PG temp existed, and what their snapshots may
 * hold: it decodes with up_thru 0 and no PG temp.  The new fields are
 * appended, so compat stays 1 (encoding.h): a version-1 reader skips them,
 * and would drop them if it re-encoded the map.  So the monitors set no
 * up_thru and no PG temp mapping until every monitor runs code that keeps
 * them (monitors are upgraded first).
 *
 * up_thru is the last epoch through which the monitors know an OSD was up
 * and serving: a primary asks for it to be raised to the current epoch
 * before it accepts writes in a new interval, so an interval whose primary
 * never got that promise cannot have accepted writes, which is what peering
 * needs to prove about past intervals.  A PG temp mapping replaces a PG's
 * acting set for a while (say, while a new up set backfills); a PG's
 * mapping is computed in osdmap_epoch.h.
 *
 * A PG temp mapping must name a pool of the map and a PG below its
 * pg_num, so an incremental that removes a pool or lowers pg_num must
 * remove the PG temp mappings that would be left pointing nowhere (diff
 * does); its OSDs need not exist (mapping skips those that do not, or are
 * down).
 */
#ifndef TSR_MAP_OSDMAP_H
#define TSR_MAP_OSDMAP_H

#include <tessera/encoding.h>

/* Bounds on what a map may hold; decoders check counts against them (and
 * against the bytes left) before they allocate.  A full map at every
 * bound encodes to about 40 MiB (65,536 OSDs with 63-byte names: 15 MiB;
 * the blob: 4 MiB; 2^18 PG temp mappings of 16 OSDs: 20 MiB), within the
 * messenger's 64 MiB of message data. */
#define TSR_OSDMAP_MAX_OSDS 65536       /* ids 0 .. MAX_OSDS - 1 */
#define TSR_OSDMAP_MAX_POOLS 1024
#define TSR_OSDMAP_MAX_PMAP (4u << 20)
#define TSR_OSDMAP_NAME 64
#define TSR_OSDMAP_OPTS 256
#define TSR_OSDMAP_MAX_PG_NUM 65536
#define TSR_OSDMAP_MAX_SIZE 16
#define TSR_OSDMAP_MAX_PG_TEMP (1u << 18)
#define TSR_OSDMAP_MAX_BLOCKLIST 65536

/* flags */
#define TSR_OSDMAP_NOOUT 0x1u   /* down OSDs are not marked out */
#define TSR_OSDMAP_FLAGS_KNOWN 0x1u

struct tsr_osdmap_osd {
	int32_t id;                   /* first: the record's key */
	char host[TSR_OSDMAP_NAME];
	char rack[TSR_OSDMAP_NAME];   /* "" when the host is in no rack */
	char addr[TSR_OSDMAP_NAME];   /* IP:PORT from its last boot, or "" */
	double weight;                /* capacity weight (TiB by convention), > 0 */
	double reweight;              /* 0..1 */
	uint8_t in, up;
	uint8_t auto_out;             /* marked out by the monitors, not a person:
					 in again when it boots */
	uint64_t up_from;             /* the epoch of its last boot */
	uint64_t up_thru;             /* up and serving through this epoch (0:
					 never asked); at most the map's epoch */
};

struct tsr_osdmap_pool {
	int64_t id;                   /* > 0, never reused; first: the key */
	char name[TSR_OSDMAP_NAME];
	uint32_t pg_num, size, min_size;
	uint32_t rule;                /* placement rule id */
	char redundancy[TSR_OSDMAP_NAME];       /* redundancy plugin */
	char redundancy_opts[TSR_OSDMAP_OPTS];  /* its options, "k=v,k=v" */
};

/* A placement group: group pg of pool. */
struct tsr_pgid {
	int64_t pool;
	uint32_t pg;
};

/* A PG temp mapping: the PG's acting set is osds[0..n) (primary first)
 * instead of its up set. */
struct tsr_osdmap_pg_temp {
	struct tsr_pgid pgid;         /* first: the key */
	uint32_t n;                   /* 1 .. TSR_OSDMAP_MAX_SIZE */
	int32_t osds[TSR_OSDMAP_MAX_SIZE];  /* distinct ids */
};

/* A client the OSDs refuse until a time: one an MDS evicted (its
 * capabilities went to others, so its writes must not land after theirs). */
struct tsr_osdmap_block {
	uint64_t client;              /* first: the key; the client's entity id
					 (its messenger's, tsr_conn_peer_id) */
	uint64_t until;               /* unix seconds: refused before then */
};

struct tsr_osdmap {
	uint64_t epoch;
	uint32_t flags;
	int64_t next_pool_id;
	char placement[TSR_OSDMAP_NAME];
	void *pmap;                   /* malloc'd, or NULL */
	size_t pmap_len;
	struct tsr_osdmap_osd *osds;
	size_t nosds;
	struct tsr_osdmap_pool *pools;
	size_t npools;
	struct tsr_osdmap_pg_temp *pg_temp;
	size_t npg_temp;
	struct tsr_osdmap_block *blocklist;   /* sorted by client */
	size_t nblocklist;
};

struct tsr_osdmap_inc {
	uint64_t epoch;
	uint32_t flags;
	int64_t next_pool_id;
	int has_pmap;
	char placement[TSR_OSDMAP_NAME];
	void *pmap;
	size_t pmap_len;
	struct tsr_osdmap_osd *osds;  /* new or changed */
	size_t nosds;
	int32_t *osd_rm;
	size_t nosd_rm;
	struct tsr_osdmap_pool *pools;
	size_t npools;
	int64_t *pool_rm;
	size_t npool_rm;
	struct tsr_osdmap_pg_temp *pg_temp;  /* new or changed */
	size_t npg_temp;
	struct tsr_pgid *pg_temp_rm;
	size_t npg_temp_rm;
	struct tsr_osdmap_block *blocklist;   /* new or changed */
	size_t nblocklist;
	uint64_t *blocklist_rm;
	size_t nblocklist_rm;
};

/* An empty map at epoch 1. */
TSR_API void tsr_osdmap_init(struct tsr_osdmap *m);
TSR_API void tsr_osdmap_free(struct tsr_osdmap *m);
/* A deep copy of src into *dst (which is overwritten, not freed). */
TSR_API int tsr_osdmap_copy(struct tsr_osdmap *dst, const struct tsr_osdmap *src);

/* Is m sane: ids sorted and in range, names valid and unique, weights,
 * sizes and flags in range, PG temp mappings on existing PGs?  -EINVAL
 * naming the first thing wrong. */
TSR_API int tsr_osdmap_check(const struct tsr_osdmap *m, char *err, size_t errlen);

/* Lookups, by binary search (NULL: none). */
TSR_API struct tsr_osdmap_osd *tsr_osdmap_osd(const struct tsr_osdmap *m, int32_t id);
TSR_API struct tsr_osdmap_pool *tsr_osdmap_pool(const struct tsr_osdmap *m, int64_t id);
TSR_API struct tsr_osdmap_pg_temp *tsr_osdmap_pg_temp(const struct tsr_osdmap *m,
						      int64_t pool, uint32_t pg);
/* Is client refused at unix time now_s (blocklisted until later)? */
TSR_API int tsr_osdmap_blocked(const struct tsr_osdmap *m, uint64_t client,
			       uint64_t now_s);
TSR_API struct tsr_osdmap_pool *tsr_osdmap_pool_by_name(const struct tsr_osdmap *m,
							const char *name);

/* Is name a host, rack or pool name: 1 to 63 of letters, digits, '-', '_',
 * '.', not starting with '-'. */
TSR_API int tsr_osdmap_name_ok(const char *name);

TSR_API int tsr_osdmap_encode(struct tsr_enc *e, const struct tsr_osdmap *m);
/* Decode a full map into *out (a fresh map the caller frees) — -EBADMSG
 * for malformed input, -EINVAL for a map that decodes but is not sane. */
TSR_API int tsr_osdmap_decode(const void *buf, size_t len, struct tsr_osdmap *out,
			      char *err, size_t errlen);

/* The incremental that takes a to b (b->epoch must be a->epoch + 1). */
TSR_API int tsr_osdmap_diff(const struct tsr_osdmap *a, const struct tsr_osdmap *b,
			    struct tsr_osdmap_inc *inc);
/* Bring m forward by inc, in place: -ESTALE unless inc->epoch ==
 * m->epoch + 1; -EINVAL when inc is malformed (lists out of order, a key
 * twice, a record out of range), removes what m lacks, or the result would
 * not be sane; -ENOMEM.  On any error m is unchanged.  m must be sane.
 *
 * Cost: inc is checked against m without copying m, then applied in place.
 * Records that change (up/down, in/out, up_thru, PG temp) cost O(log n)
 * each; adding or removing records moves the records after the first one
 * added or removed (nothing, when new OSD ids are the highest). */
TSR_API int tsr_osdmap_apply(struct tsr_osdmap *m, const struct tsr_osdmap_inc *inc,
			     char *err, size_t errlen);
TSR_API void tsr_osdmap_inc_free(struct tsr_osdmap_inc *inc);
TSR_API int tsr_osdmap_inc_encode(struct tsr_enc *e, const struct tsr_osdmap_inc *inc);
/* The decoded inc owns its arrays (tsr_osdmap_inc_free); its records are
 * checked when it is applied. */
TSR_API int tsr_osdmap_inc_decode(const void *buf, size_t len,
				  struct tsr_osdmap_inc *out, char *err,
				  size_t errlen);

/* The number of OSDs up and in. */
TSR_API void tsr_osdmap_counts(const struct tsr_osdmap *m, size_t *up, size_t *in);

#endif
