/* tessera/backend.h — the backend plugin kind: the object store behind an OSD.
 *
 * Model.  A store holds collections (one per placement group shard), each
 * holding objects.  An object has
 *   - data: a byte array with holes (reads of holes return zeros),
 *   - attributes: a small map name -> value (xattrs),
 *   - an omap: a sorted map key -> value, keys compared as unsigned bytes.
 *
 * Writes go through transactions only: an ordered list of operations applied
 * atomically and durably.  After the commit callback fires, a crash loses
 * nothing of the transaction; before it, a crash leaves all of it or none of
 * it.
 *
 * Commit order is per collection.  The transactions naming a collection (in
 * any operation's cid) commit, and their callbacks come, in the order
 * submit() accepted them; transactions with no collection in common do not
 * wait for each other, and their callbacks may come in any order, from
 * different backend threads at once.  A transaction naming several
 * collections is ordered with each: it commits after everything submitted
 * before it on any of them, and before everything submitted after it on
 * any of them (and one naming none is ordered with the others naming
 * none).  That is the way to order across collections — a split or merge
 * of placement groups, a move between them: one transaction naming both,
 * or a transaction on a collection of its own submitted once flush() has
 * returned.  After a crash what survives is, on each collection, a prefix
 * of what was submitted to it, holding every transaction acknowledged.
 * Why per collection: one placement group's slow commit (a large write, a
 * busy disk region, a slow callback) must hold back that group only, not
 * every group of the OSD; a backend still batches durability across
 * collections, committing the transactions ready on several with one flush.
 *
 * Reads see a transaction once its commit callback has been called; before
 * that, whether they see it is unspecified (the OSD orders conflicting
 * reads and writes itself).  An operation type or flag the backend does not
 * know fails the whole transaction with -EOPNOTSUPP before anything of it
 * is applied.
 *
 * Every stored data block carries a CRC32C checked on every read; a mismatch
 * makes the read fail with -EIO and log the object and offset.  Silent
 * corruption is never returned.
 *
 * Operation semantics (the same for every backend; the conformance suite
 * checks each):
 *   - WRITE, ZERO, TRUNCATE, TOUCH, SETATTR and OMAP_SET create the object
 *     when it is missing (empty data, no attributes, empty omap).  WRITE
 *     and ZERO past the end extend it (the gap reads as zeros); ZERO never
 *     shrinks it; TRUNCATE sets the size exactly, growing or shrinking.
 *   - REMOVE, RMATTR, OMAP_RM, OMAP_CLEAR and OMAP_RMRANGE of a missing
 *     object fail with -ENOENT; RMATTR of a missing attribute and OMAP_RM
 *     of a missing key succeed (removal is idempotent).
 *   - CLONE replaces oid2 (created or overwritten) with a copy of oid's
 *     data, attributes and omap.  CLONE_RANGE copies [off, off+len) of oid
 *     to off2 of oid2 (created if missing), reading holes and bytes past
 *     oid's end as zeros and extending oid2 as a write would.  A missing
 *     source fails with -ENOENT; oid == oid2 is allowed for CLONE_RANGE
 *     only when the ranges do not overlap (-EINVAL otherwise).
 *   - OMAP_RMRANGE removes the keys in [key, val); an empty val means
 *     "to the last key", and val <= key removes nothing.
 *   - Any object operation in a missing collection fails with -ENOENT;
 *     MKCOLL of an existing collection with -EEXIST; RMCOLL of a missing one
 *     with -ENOENT, of one still holding objects with -ENOTEMPTY.
 *   - An object may not grow past the backend's max_object_size: -EFBIG.
 *   - Each operation sees the effects of the ones before it in the same
 *     transaction.  A failing operation fails the whole transaction: its
 *     on_commit gets the error and nothing of it is applied.
 *   - A transaction that tsr_txn_validate() (tessera/txn.h) refuses is
 *     refused by submit() up front with that error.
 *
 * Reads of a missing collection or object return -ENOENT; getattr of a
 * missing attribute and omap_get of a missing key -ENODATA; a read at or
 * past the end returns 0 bytes.
 *
 * Ownership.  Buffers passed in are borrowed for the duration of the call —
 * for submit(), until it returns: the backend copies or writes what it needs
 * before returning — except a WRITE's data marked TSR_TXN_F_DATA_HELD, which
 * is borrowed until on_commit.  Buffers passed to callbacks are valid only during the
 * callback.  Errors are negative errno values; -ENOENT for a missing object
 * or collection, -EEXIST for a collection that exists, -ENOSPC when the
 * store is full (returned before anything of the transaction is applied).
 *
 * Threads.  While the store is mounted every operation below may be called
 * from any thread, any number of them at once on one instance: submit()
 * and flush() from several threads, and the reads (read, stat, getattr,
 * getattrs, omap_get, omap_iter, list_colls, list_objects, statfs)
 * concurrently with each other and with transactions being submitted and
 * committed — the OSD serves its placement groups from a pool of threads.
 * mkfs, mount, umount and fsck run alone: no other call on the instance
 * overlaps them.  umount commits what was submitted before it returns
 * (every on_commit has been called).  destroy() runs alone, unmounted.
 *
 * Blocking.  Every operation may block the calling thread, so none may be
 * called on a messenger I/O thread (a TSR_MSGR_INLINE handler, a connection
 * event) or on the event-loop thread (a timer, a post): call them from
 * dispatch threads or the daemon's own workers.
 *   - Reads are synchronous: they return once the answer is in the
 *     caller's buffer, after whatever disk I/O and checksum verification
 *     it took, and block the calling thread meanwhile (milliseconds on a
 *     busy disk).  There is no asynchronous read; an OSD that must not
 *     wait runs reads on worker threads.
 *   - submit() copies what it needs and returns before the transaction is
 *     durable, but it may wait while the backend's queue of uncommitted
 *     transactions is full, until a commit makes room (backpressure).
 *   - flush() waits until every transaction submitted before it has
 *     committed.
 *
 * Callbacks.  on_commit runs on a backend thread: it must return quickly
 * and must not call any operation of the instance (a submit() might wait
 * for queue room only that thread can make, a flush() for itself); it
 * hands the result to another thread (tsr_loop_post, a work queue).  The
 * iteration callbacks (tsr_kv_cb, tsr_name_cb, tsr_coll_cb, tsr_fsck_cb)
 * run on the calling thread before the call returns, perhaps under the
 * backend's locks: they must not call the instance either.
 */
#ifndef TESSERA_BACKEND_H
#define TESSERA_BACKEND_H

#include <tessera/plugin.h>

TSR_BEGIN_DECLS

/* A collection: one placement group of one pool, and for erasure-coded pools
 * one shard of it (TSR_SHARD_NONE otherwise). */
struct tsr_coll_id {
	uint64_t pool;
	uint32_t pg;
	int32_t shard;
};
#define TSR_SHARD_NONE (-1)

/* Transaction operations.  Values are part of the ABI. */
#define TSR_TXN_OP_MAP(X)                                                   \
	X(MKCOLL, mkcoll, 1)         /* create collection cid */             \
	X(RMCOLL, rmcoll, 2)         /* remove collection cid (must be empty) */ \
	X(TOUCH, touch, 3)           /* create oid if missing */             \
	X(WRITE, write, 4)           /* write data[0..len) at off */         \
	X(ZERO, zero, 5)             /* zero [off, off+len) */               \
	X(TRUNCATE, truncate, 6)     /* set size to off */                   \
	X(REMOVE, remove, 7)         /* remove oid and all it holds */       \
	X(CLONE, clone, 8)           /* copy oid (data, attrs, omap) to oid2 */ \
	X(CLONE_RANGE, clone_range, 9) /* copy oid[off,+len) to oid2 at off2 */ \
	X(SETATTR, setattr, 10)      /* attr key = val */                    \
	X(RMATTR, rmattr, 11)        /* remove attr key */                   \
	X(OMAP_SET, omap_set, 12)    /* omap key = val */                    \
	X(OMAP_RM, omap_rm, 13)      /* remove omap key */                   \
	X(OMAP_CLEAR, omap_clear, 14) /* remove every omap key */            \
	X(OMAP_RMRANGE, omap_rmrange, 15) /* remove omap keys in [key, val) */

enum tsr_txn_op_type {
#define X(up, low, val) TSR_TXN_##up = val,
	TSR_TXN_OP_MAP(X)
#undef X
};

struct tsr_txn_op {
	uint32_t type;           /* enum tsr_txn_op_type */
	uint32_t flags;          /* TSR_TXN_F_*; others must be 0 */
	struct tsr_coll_id cid;
	const void *oid;         /* object name; unused by MKCOLL/RMCOLL */
	size_t oid_len;
	uint64_t off;
	uint64_t len;
	const void *data;        /* WRITE: len bytes */
	const void *key;         /* SETATTR, RMATTR, OMAP_*: key */
	size_t key_len;
	const void *val;         /* SETATTR, OMAP_SET: value; OMAP_RMRANGE: end key */
	size_t val_len;
	const void *oid2;        /* CLONE, CLONE_RANGE: destination */
	size_t oid2_len;
	uint64_t off2;
	uint64_t reserved[2];    /* must be zero (room for later operations) */
};

/* Operation flags. */
/* WRITE only: the caller keeps data valid and unchanged until on_commit has
 * been called (not merely until submit() returns), so the backend may write
 * it to disk from where it is instead of copying it first.  Typical for a
 * buffer the caller owns anyway, like a received message's data.  Never
 * serialized: tsr_txn_encode drops it, tsr_txn_decode refuses it. */
#define TSR_TXN_F_DATA_HELD 0x1u

struct tsr_txn {
	uint32_t nops;
	const struct tsr_txn_op *ops;
};

struct tsr_obj_stat {
	uint64_t size;
	uint64_t mtime_ns;      /* time of the last transaction touching it */
};

struct tsr_statfs {
	uint64_t total;         /* bytes */
	uint64_t used;          /* bytes held by objects and metadata */
	uint64_t available;     /* bytes a client may still write */
	uint64_t objects;
};

/* Callbacks.  Returning non-zero from an iteration callback stops the
 * iteration; the iterating call then returns that value. */
typedef void (*tsr_commit_cb)(void *arg, int rc);
typedef int (*tsr_kv_cb)(void *arg, const void *key, size_t key_len,
			 const void *val, size_t val_len);
typedef int (*tsr_name_cb)(void *arg, const void *oid, size_t oid_len);
typedef int (*tsr_coll_cb)(void *arg, const struct tsr_coll_id *cid);
/* fsck reports each problem found; repaired says whether it was fixed. */
typedef void (*tsr_fsck_cb)(void *arg, const char *problem, int repaired);

/* Enumeration cursor: opaque to the caller, at most TSR_CURSOR_MAX bytes.
 * An empty cursor (len 0) means "from the start"; list_objects returns the
 * cursor to resume from, empty when the collection is exhausted.  Every
 * backend lists in the same order — object names compared as unsigned
 * bytes, a prefix before its extensions — so scrub and backfill can walk
 * the copies of a placement group on OSDs with different backends side by
 * side.  A walk resumed after other writes sees every object that existed
 * throughout the walk exactly once. */
#define TSR_CURSOR_MAX 4160 /* an object name (4096, tessera/txn.h) and room */
struct tsr_cursor {
	uint32_t len;
	uint8_t bytes[TSR_CURSOR_MAX];
};

struct tsr_backend_ops {
	uint32_t size; /* sizeof(struct tsr_backend_ops) as built */

	/* Every backend plugin declares a string option "path": where its
	 * store lives (a directory, a device, an image file).  mkfs refuses a
	 * location that already holds a store or other data (-EEXIST) and
	 * mount one that holds none (-ENOENT), each with a message naming
	 * the path. */

	/* Initialise an empty store at the configured location (mkfs).  The
	 * instance was created with the same options. */
	int (*mkfs)(void *inst, char *err, size_t errlen);
	/* Open the store; every other operation needs an open store. */
	int (*mount)(void *inst, char *err, size_t errlen);
	/* Flush and close; the instance may be mounted again. */
	int (*umount)(void *inst);

	/* Apply txn atomically.  Returns 0 if accepted (on_commit will be
	 * called exactly once, from a backend thread, with the final result) or
	 * a negative errno if rejected up front (on_commit is never called). */
	int (*submit)(void *inst, const struct tsr_txn *txn,
		      tsr_commit_cb on_commit, void *arg);
	/* Wait until every transaction submitted so far, on every collection,
	 * has committed and its callback has returned. */
	int (*flush)(void *inst);

	/* Read up to len bytes at off into buf; *out_len gets the number read
	 * (short only at end of object).  This and every read below block
	 * until answered: never on an I/O or event-loop thread (see Threads
	 * above).  A page-aligned buf lets a backend read large ranges into
	 * it from the device directly (O_DIRECT); any buf works. */
	int (*read)(void *inst, const struct tsr_coll_id *cid, const void *oid,
		    size_t oid_len, uint64_t off, uint64_t len, void *buf,
		    uint64_t *out_len);
	int (*stat)(void *inst, const struct tsr_coll_id *cid, const void *oid,
		    size_t oid_len, struct tsr_obj_stat *st);
	/* Copy attribute key into buf; *val_len gets its full length (-ERANGE if
	 * buf is too small, -ENODATA if missing). */
	int (*getattr)(void *inst, const struct tsr_coll_id *cid,
		       const void *oid, size_t oid_len, const void *key,
		       size_t key_len, void *buf, size_t buflen,
		       size_t *val_len);
	int (*getattrs)(void *inst, const struct tsr_coll_id *cid,
			const void *oid, size_t oid_len, tsr_kv_cb cb,
			void *arg);
	int (*omap_get)(void *inst, const struct tsr_coll_id *cid,
			const void *oid, size_t oid_len, const void *key,
			size_t key_len, void *buf, size_t buflen,
			size_t *val_len);
	/* Omap entries with key >= start, in key order. */
	int (*omap_iter)(void *inst, const struct tsr_coll_id *cid,
			 const void *oid, size_t oid_len, const void *start,
			 size_t start_len, tsr_kv_cb cb, void *arg);

	int (*list_colls)(void *inst, tsr_coll_cb cb, void *arg);
	/* Up to max objects from cursor; cursor is updated in place. */
	int (*list_objects)(void *inst, const struct tsr_coll_id *cid,
			    struct tsr_cursor *cursor, uint32_t max,
			    tsr_name_cb cb, void *arg);

	int (*statfs)(void *inst, struct tsr_statfs *st);
	/* Check the store (unmounted); with repair, fix what can be fixed.
	 * Returns the number of problems left unrepaired, or a negative errno. */
	int (*fsck)(void *inst, int repair, tsr_fsck_cb cb, void *arg);

	/* ABI 1.0 ends here. */

	/* ABI 1.1.  As read, and *crc gets the CRC32C of the bytes read
	 * (tsr_crc32c(0, buf, *out_len)), made from the stored blocks' own
	 * checksums, which the read checks anyway, wherever whole blocks
	 * were read: the caller need not pass over the data again (the OSD
	 * puts it in the checksum of the frame that carries the data).  It
	 * may serve data a cache holds (the OSD answers clients with it);
	 * read may not: scrub relies on read to check what is stored.  NULL
	 * in a backend without it; a caller checks size first. */
	int (*read_crc)(void *inst, const struct tsr_coll_id *cid, const void *oid,
			size_t oid_len, uint64_t off, uint64_t len, void *buf,
			uint64_t *out_len, uint32_t *crc);
};

TSR_END_DECLS

#endif
