/* scrub.h — comparing the copies of a PG's objects: scrub and deep scrub.
 *
 * Each copy of a PG describes a range of its objects in a scrub map
 * (tsr_scrub_map_build): per object its version, size, a digest of its
 * attributes and of its omap and, for a deep scrub, a CRC32C of its data;
 * an object that could not be read is flagged.  The primary gathers the
 * maps of every member of the acting set for the same range and compares
 * them (tsr_scrub_compare): for each object whose copies disagree, the
 * authoritative copy and what differs from it in each of the others.
 *
 * The authority, among the copies that hold the object and were read
 * whole (no read error, a version):
 *   - the newest version;
 *   - among copies at that version, the largest group that agree in
 *     size, attributes, omap and (deep) data;
 *   - a tie goes to the group with the lowest index (the primary is 0),
 *     and is flagged (tie): nothing says which group is right.
 * A copy that lacks the object while another holds it is missing it: a
 * scrub never decides that an object should not exist (a deleted object
 * is gone from every copy when its delete is acknowledged).
 *
 * Copies that differ only in their versions, or in whether they hold the
 * object at all, may be caught in the middle of a write, a create or a
 * delete: without final, such objects are counted as unsettled and left
 * out (the caller scrubs the range again a little later); with final,
 * they are reported (TSR_SCRUB_ERR_VERSION, _MISSING).  Copies at the
 * newest version that disagree, read errors and missing versions are
 * reported at once.
 *
 * Threads: tsr_scrub_map_build reads the store and blocks (pgstore.h);
 * the rest is pure.
 */
#ifndef TSR_OSD_SCRUB_H
#define TSR_OSD_SCRUB_H

#include "osd/pgsm.h"
#include "osd/pgstore.h"

#include <stddef.h>
#include <stdint.h>

/* One copy's map of a range: objects in name order (tsr_oid_cmp). */
struct tsr_scrub_map {
	struct tsr_scrub_obj *objs;
	size_t n;
};

/* The objects of the copy in ps after name after (after_len 0: from the
 * first) and up to and including upto (upto_len 0: no bound), at most max
 * of them, described into *objs (malloc'd, each name too:
 * tsr_scrub_objs_free).  *end: no object of the range follows them.  With
 * deep, each object's data is read whole (in pieces) for its CRC.  An
 * object whose read fails with -EIO or whose version attribute is damaged
 * is flagged, not an error; other errors of the store are returned. */
int tsr_scrub_map_build(struct tsr_pgstore *ps, const void *after, size_t after_len,
			const void *upto, size_t upto_len, uint32_t max, int deep,
			struct tsr_scrub_obj **objs, size_t *n, int *end);
void tsr_scrub_objs_free(struct tsr_scrub_obj *objs, size_t n);

/* What one copy's object has wrong, against the authority (bits). */
#define TSR_SCRUB_ERRS(X)                                      \
	X(MISSING, 0, "missing")       /* the copy lacks it */  \
	X(READ, 1, "read error")                                \
	X(NO_VERSION, 2, "no version")                          \
	X(VERSION, 3, "version")                                \
	X(SIZE, 4, "size")                                      \
	X(ATTRS, 5, "attributes")                               \
	X(OMAP, 6, "omap")                                      \
	X(DATA, 7, "data")
enum {
#define TSR_SCRUB_ERR_BIT(name, n, label) TSR_SCRUB_ERR_##name = 1u << (n),
	TSR_SCRUB_ERRS(TSR_SCRUB_ERR_BIT)
#undef TSR_SCRUB_ERR_BIT
};
/* "size+data" into out (at most len bytes, NUL included): out. */
char *tsr_scrub_errs_str(uint32_t errs, char *out, size_t len);

/* An object whose copies disagree. */
struct tsr_scrub_bad {
	const uint8_t *oid;          /* points into the maps compared */
	size_t oid_len;
	int auth;                    /* the authoritative copy's index; -1
					when no copy was read whole */
	struct tsr_ev ev;            /* its version (auth >= 0) */
	int tie;                     /* another group of copies as large as the
					authority's holds other contents at its
					version: no majority (a repair would
					only guess) */
	uint32_t errs[TSR_OSDMAP_MAX_SIZE]; /* per copy: TSR_SCRUB_ERR_* bits
					(0: it agrees with the authority) */
};

/* Compare the maps of ncopies copies (at most TSR_OSDMAP_MAX_SIZE; copy 0
 * is the primary's) of one range.  Only objects named up to and including
 * upto count (upto_len 0: all): a copy may have described less of the
 * range than the others.  *bad (malloc'd; free()) gets *nbad objects in
 * name order; *unsettled the objects left out because their copies differ
 * in version or presence only (not final).  0, -EINVAL (too many copies, a map out of
 * order) or -ENOMEM. */
int tsr_scrub_compare(const struct tsr_scrub_map *maps, size_t ncopies, const void *upto,
		      size_t upto_len, int final, struct tsr_scrub_bad **bad, size_t *nbad,
		      size_t *unsettled);

#endif
