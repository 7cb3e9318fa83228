/* pgstore.h — one PG's copy in an object store: how the OSD keeps what
 * the PG machine (pgsm.h) persists, and reads back what it asks for.
 *
 * A copy is one backend collection (pool, pg, shard).  In it:
 *
 *   - the meta object TSR_PGSTORE_META, whose omap holds the pairs the
 *     machine's PERSIST actions set and remove (its info and past
 *     intervals, its log, its missing set: pgsm.c);
 *   - the PG's objects under their own names, each with its version (the
 *     log entry that last wrote it, an encoded tsr_ev) in the attribute
 *     TSR_PGSTORE_VER.
 *
 * Internal names and attribute keys begin with a zero byte, which no name
 * or key a client gives may begin with (the OSD's client operations must
 * refuse those: tsr_pgstore_reserved), so they never meet a client's.  Backends list names as unsigned bytes, so the
 * meta object comes first and listings skip it.
 *
 * A PERSIST becomes one backend transaction (tsr_pgstore_persist): the
 * collection and its meta object when the copy is new, the removals, the
 * object's change and its version, the omap changes — all or nothing, so
 * the log never says more or less than the objects hold.
 *
 * Threads: the functions that read the store block (backend.h), so they
 * run on the OSD's workers, never on an I/O or loop thread.  A struct
 * tsr_pgstore is used by one thread at a time.
 */
#ifndef TSR_OSD_PGSTORE_H
#define TSR_OSD_PGSTORE_H

#include "osd/pgsm.h"

#include <tessera/backend.h>

#include <stddef.h>
#include <stdint.h>

#define TSR_PGSTORE_META "\0pgmeta"
#define TSR_PGSTORE_META_LEN 7
#define TSR_PGSTORE_VER "\0v"
#define TSR_PGSTORE_VER_LEN 2

/* Is this a name or attribute key the OSD keeps for itself? */
static inline int
tsr_pgstore_reserved(const void *name, size_t len)
{
	return len > 0 && ((const uint8_t *)name)[0] == 0;
}

struct tsr_pgstore {
	const struct tsr_backend_ops *ops;
	void *inst;
	struct tsr_coll_id cid;
	int exists;                  /* the collection is there (or a PERSIST
					that makes it went to the backend) */
	struct tsr_cursor *cur;      /* where the last listing ended, after */
	uint8_t *cur_after;          /* this name (tsr_pgstore_list, */
	size_t cur_after_len;        /* tsr_pgstore_list_range) */
};

/* Bind ps to collection cid of the mounted store (ops, inst), and find
 * whether the copy exists: 0, or the backend's error. */
int tsr_pgstore_open(struct tsr_pgstore *ps, const struct tsr_backend_ops *ops,
		     void *inst, struct tsr_coll_id cid);

/* Bind ps without asking the store (no call that blocks): for a copy
 * known to be there (exists 1) or known not to be (0). */
void tsr_pgstore_init(struct tsr_pgstore *ps, const struct tsr_backend_ops *ops,
		      void *inst, struct tsr_coll_id cid, int exists);

/* Forget what ps keeps between listings. */
void tsr_pgstore_close(struct tsr_pgstore *ps);

/* Feed sm (just created, before its first map) what the copy's meta
 * object holds, in key order (tsr_pgsm_load): 0, -ENOENT when there is no
 * copy, or an error naming the collection and what did not load. */
int tsr_pgstore_load(struct tsr_pgstore *ps, struct tsr_pgsm *sm, char *err,
		     size_t errlen);

/* The version of object oid in the copy: 0, -ENOENT when it is not there,
 * -EIO when its version attribute is missing or damaged. */
int tsr_pgstore_version(struct tsr_pgstore *ps, const void *oid, size_t oid_len,
			struct tsr_ev *ev);

/* The backend transaction of PERSIST action a.  obj[0..nobj) is the
 * object's change (ops on ps->cid: a client's operation, a push's
 * contents, a removal), oid its name and ev its new version (NULL when
 * the change removes the object, or there is none).  The ops point into
 * a, obj and t, which must outlive the submit (tsr_pgstore_txn_free
 * then).  -ENOMEM, or -EINVAL for an action that is no PERSIST. */
struct tsr_pgstore_txn {
	struct tsr_txn txn;
	struct tsr_txn_op *ops;
	size_t cap;
	uint8_t ver[32];             /* the encoded version */
	uint8_t **names;             /* names the ops point into (delete) */
	size_t nnames;
};
int tsr_pgstore_persist(struct tsr_pgstore *ps, const struct tsr_pgsm_action *a,
			const struct tsr_txn_op *obj, size_t nobj, const void *oid,
			size_t oid_len, const struct tsr_ev *ev,
			struct tsr_pgstore_txn *t);
void tsr_pgstore_txn_free(struct tsr_pgstore_txn *t);

/* The LIST action: up to max objects after name after (after_len 0: from
 * the first), in name order, with their versions (*objs malloc'd, each
 * name too: free with tsr_pgstore_list_free); *end when no objects
 * follow them.  An object whose version attribute is missing or damaged
 * is listed with version 0'0, so a backfill replaces it. */
int tsr_pgstore_list(struct tsr_pgstore *ps, const void *after, size_t after_len,
		     uint32_t max, struct tsr_pgsm_objver **objs, size_t *n, int *end);
void tsr_pgstore_list_free(struct tsr_pgsm_objver *objs, size_t n);

/* The names of the copy's objects after `after` (after_len 0: from the
 * first) up to and including upto (upto_len 0: no bound), at most max (0
 * counts as 1), in name order: (*names)[i], (*lens)[i] bytes, *n of them
 * (the arrays and each name malloc'd: tsr_pgstore_names_free).  *end
 * exactly when no object of the range follows them (the listing reads a
 * name ahead).  The next window resumes where this one ended when it goes
 * on after the last name returned, or after upto (a scrub's walk). */
int tsr_pgstore_list_range(struct tsr_pgstore *ps, const void *after, size_t after_len,
			   const void *upto, size_t upto_len, uint32_t max, uint8_t ***names,
			   size_t **lens, size_t *n, int *end);
void tsr_pgstore_names_free(uint8_t **names, size_t *lens, size_t n);

/* The DELETE action, a step at a time: a transaction removing up to max
 * of the copy's objects, and the collection once none is left (*last
 * set); the next step once it has committed.  Objects named in t point into t (tsr_pgstore_txn_free).  A copy
 * that is not there gives an empty transaction with *last set. */
int tsr_pgstore_delete_step(struct tsr_pgstore *ps, uint32_t max,
			    struct tsr_pgstore_txn *t, int *last);

#endif
