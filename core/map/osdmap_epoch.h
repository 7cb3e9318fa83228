/* osdmap_epoch.h — OSD map epochs: one map each, immutable and shared by
 * reference, and the placement of placement groups under them.
 *
 * A daemon holds several epochs at once: the newest, the one each request
 * was sent under, and, while a PG peers, the epochs of its past intervals.
 * So an epoch is made once, never changed, and shared across threads by
 * counting references (get, put) instead of copying the map.  Bringing an
 * epoch forward by an incremental makes a new epoch object and leaves the
 * old one as it was.
 *
 * Placement.  The placement plugin the map names (struct tsr_osdmap's
 * placement, loaded in the registry given at creation) gets one instance
 * per placement blob: it is created and load()ed the first time a PG of an
 * epoch is mapped, kept with the epoch, and shared by the epochs made from
 * it by incrementals that bring no new blob; so marking an OSD down or up
 * costs no reload of the plugin's map.  A failure to create or load it is
 * kept too (every later call returns it) unless it was -ENOMEM.
 *
 * A PG's sets under an epoch, computed as Ceph computes them:
 *
 *   raw     = the plugin's map(pool's rule, tsr_pg_seed(pool, pg), size,
 *             weights), weights[d] = d's reweight in 16.16 if d is in,
 *             else 0 (and 0 for ids the map lacks)
 *   up      = raw without the OSDs that are down (or not in the map),
 *             order kept: the first is the up primary
 *   acting  = the PG temp mapping's OSDs without those that are down (or
 *             not in the map), when the PG has a mapping and any of its
 *             OSDs is left; else up.  The first is the acting primary.
 *
 * Up/down is not in the weights on purpose: a down OSD that is still in
 * keeps its place in raw, so the PG runs degraded on the others instead of
 * moving data to a new OSD, until the OSD comes back (nothing moves) or
 * is marked out (mon_osd_down_out_interval, not while `noout` is set).
 * The rule modes so far are "firstn" (placement.h), where a missing member
 * shifts the rest forward; a positional mode for erasure coding would keep
 * its place empty instead.
 *
 * Conventions: 0 or a negative errno, the reason in err[errlen].  The map
 * returned by tsr_osdmap_epoch_map() is read-only and lives as long as a
 * reference to the epoch is held.  Any thread may call anything here at
 * any time on an epoch it holds a reference to.
 */
#ifndef TSR_MAP_OSDMAP_EPOCH_H
#define TSR_MAP_OSDMAP_EPOCH_H

#include "map/osdmap.h"

struct tsr_osdmap_epoch;
struct tsr_registry;
struct tsr_host;

/* Make the first epoch a process holds from a map (a decoded full map, for
 * instance): -EINVAL when the map is not sane (tsr_osdmap_check).  On
 * success the epoch owns what *map held and *map is left empty (as after
 * tsr_osdmap_free); on failure *map is unchanged.  reg holds the placement
 * plugins and host is what their instances get; both must outlive every
 * epoch made from this one.  The caller holds the one reference. */
TSR_API int tsr_osdmap_epoch_create(struct tsr_osdmap *map,
				    const struct tsr_registry *reg,
				    const struct tsr_host *host,
				    struct tsr_osdmap_epoch **out, char *err,
				    size_t errlen);

/* The epoch inc makes of prev (tsr_osdmap_apply's errors: -ESTALE when inc
 * is not for the epoch after prev's, -EINVAL when it does not apply);
 * prev is unchanged.  The caller holds the one reference to *out. */
TSR_API int tsr_osdmap_epoch_next(const struct tsr_osdmap_epoch *prev,
				  const struct tsr_osdmap_inc *inc,
				  struct tsr_osdmap_epoch **out, char *err,
				  size_t errlen);

/* Take a reference (returns ep); drop one (NULL is ignored): the last
 * frees the epoch. */
TSR_API struct tsr_osdmap_epoch *tsr_osdmap_epoch_get(struct tsr_osdmap_epoch *ep);
TSR_API void tsr_osdmap_epoch_put(struct tsr_osdmap_epoch *ep);

TSR_API const struct tsr_osdmap *tsr_osdmap_epoch_map(const struct tsr_osdmap_epoch *ep);
TSR_API uint64_t tsr_osdmap_epoch_number(const struct tsr_osdmap_epoch *ep);

/* Where a placement group lives under one epoch. */
struct tsr_pg_mapping {
	uint64_t epoch;
	struct tsr_pgid pgid;
	uint32_t nup, nacting;        /* at most the pool's size */
	int32_t up[TSR_OSDMAP_MAX_SIZE];
	int32_t acting[TSR_OSDMAP_MAX_SIZE];
	int32_t up_primary;           /* up[0], or -1 when up is empty */
	int32_t acting_primary;       /* acting[0], or -1 */
};

/* The sets of group pg of pool: -ENOENT when the epoch has no such pool,
 * no placement map, or its placement plugin is not in the registry;
 * -ERANGE for pg at or above the pool's pg_num; the plugin's errors when
 * it cannot load the map or place with the pool's rule.  Placing costs one
 * map() call of the plugin (and a load on an epoch's first call) the first
 * time a PG is placed under a blob, weights and pools: the raw sets are
 * kept, and epochs made from one another that differ only in which OSDs
 * are up, or in PG temp, share them (so the boots and failures of a large
 * cluster cost no placement); later calls derive up and acting from the
 * kept raw set. */
TSR_API int tsr_osdmap_epoch_map_pg(const struct tsr_osdmap_epoch *ep, int64_t pool,
				    uint32_t pg, struct tsr_pg_mapping *out,
				    char *err, size_t errlen);

/* The same for the group object name[len] falls in (tessera/hash.h). */
TSR_API int tsr_osdmap_epoch_map_object(const struct tsr_osdmap_epoch *ep,
					int64_t pool, const void *name, size_t len,
					struct tsr_pg_mapping *out, char *err,
					size_t errlen);

#endif
