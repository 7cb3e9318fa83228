/* mdsmap.h — the MDS map: the file system's metadata ranks, which MDS
 * holds each, and the standbys; and its incrementals.
 *
 * A rank is a share of the namespace (rank 0 holds the root); max_mds says
 * how many ranks the file system has.  Every MDS daemon that has booted is
 * in the map under its name, either holding a rank (in a state that says
 * how far it got in taking the rank over) or standing by.  A rank no MDS
 * holds is vacant: the monitors give it to a standby.
 *
 * Conventions as in osdmap.h: 0 or a negative errno with the reason in
 * err; a map owns its array; decoders hand over only a whole, sane map.
 * MDSs are kept sorted by name.
 *
 *   envelope v1 { u64 epoch, string fs_name, u32 max_mds,
 *                 u32 n, n x mds }
 *   mds = envelope v1 { string name, u64 gid, string addr, i32 rank,
 *                       u32 state }
 *   incremental = envelope v1 { u64 epoch, string fs_name, u32 max_mds,
 *                               u32 n, n x mds        new or changed
 *                               u32 n, n x string     removed (names) }
 */
#ifndef TSR_MAP_MDSMAP_H
#define TSR_MAP_MDSMAP_H

#include <tessera/encoding.h>

#define TSR_MDSMAP_MAX_MDS 256
#define TSR_MDSMAP_MAX_RANKS 64
#define TSR_MDSMAP_NAME 64

/* X(enum, value, name, holds a rank) */
#define TSR_MDS_STATE_MAP(X)                                                   \
	X(STANDBY, 0, "standby", 0)   /* booted, waiting for a rank */         \
	X(REPLAY, 1, "replay", 1)     /* took a rank, replaying its journal */ \
	X(ACTIVE, 2, "active", 1)     /* serving its rank */

enum tsr_mds_state {
#define X(e, v, n, r) TSR_MDS_##e = v,
	TSR_MDS_STATE_MAP(X)
#undef X
	TSR_MDS_STATE_COUNT
};

/* "active", ..., or NULL for a value outside the table. */
TSR_API const char *tsr_mds_state_name(uint32_t state);

struct tsr_mdsmap_mds {
	char name[TSR_MDSMAP_NAME];
	uint64_t gid;                  /* this incarnation: a new one per boot */
	char addr[TSR_MDSMAP_NAME];    /* IP:PORT */
	int32_t rank;                  /* -1 for a standby */
	uint32_t state;                /* enum tsr_mds_state */
};

struct tsr_mdsmap {
	uint64_t epoch;
	char fs_name[TSR_MDSMAP_NAME];
	uint32_t max_mds;              /* ranks 0 .. max_mds - 1 */
	struct tsr_mdsmap_mds *mds;
	size_t nmds;
};

struct tsr_mdsmap_inc {
	uint64_t epoch;
	char fs_name[TSR_MDSMAP_NAME];
	uint32_t max_mds;
	struct tsr_mdsmap_mds *mds;    /* new or changed */
	size_t nmds;
	char (*rm)[TSR_MDSMAP_NAME];   /* removed */
	size_t nrm;
};

/* Epoch 1, file system "tessera", one rank, no MDS. */
TSR_API void tsr_mdsmap_init(struct tsr_mdsmap *m);
TSR_API void tsr_mdsmap_free(struct tsr_mdsmap *m);
TSR_API int tsr_mdsmap_copy(struct tsr_mdsmap *dst, const struct tsr_mdsmap *src);
/* Names sorted and valid, states known, a rank only in a rank-holding
 * state and below max_mds, no rank held twice. */
TSR_API int tsr_mdsmap_check(const struct tsr_mdsmap *m, char *err, size_t errlen);
TSR_API struct tsr_mdsmap_mds *tsr_mdsmap_find(const struct tsr_mdsmap *m,
					       const char *name);
/* The MDS holding rank, or NULL when it is vacant. */
TSR_API struct tsr_mdsmap_mds *tsr_mdsmap_rank(const struct tsr_mdsmap *m,
					       int32_t rank);

TSR_API int tsr_mdsmap_encode(struct tsr_enc *e, const struct tsr_mdsmap *m);
TSR_API int tsr_mdsmap_decode(const void *buf, size_t len, struct tsr_mdsmap *out,
			      char *err, size_t errlen);
TSR_API int tsr_mdsmap_diff(const struct tsr_mdsmap *a, const struct tsr_mdsmap *b,
			    struct tsr_mdsmap_inc *inc);
TSR_API int tsr_mdsmap_apply(struct tsr_mdsmap *m, const struct tsr_mdsmap_inc *inc,
			     char *err, size_t errlen);
TSR_API void tsr_mdsmap_inc_free(struct tsr_mdsmap_inc *inc);
TSR_API int tsr_mdsmap_inc_encode(struct tsr_enc *e, const struct tsr_mdsmap_inc *inc);
TSR_API int tsr_mdsmap_inc_decode(const void *buf, size_t len,
				  struct tsr_mdsmap_inc *out, char *err,
				  size_t errlen);

#endif
