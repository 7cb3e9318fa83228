/* tessera/client.h — the object client library: a program's way to the
 * objects of a Tessera cluster (libtessera-client, pkg-config
 * tessera-client).  doc/client.md has a worked example.
 *
 * A client connects as an entity (client.admin, client.NAME) with the key
 * its keyring holds: it gets the cluster's maps from the monitors and
 * keeps them current, places each operation itself (the pool's placement
 * from the OSD map: there is no lookup) and sends it to the primary OSD of
 * the object's placement group.  When the map changes, the session to an
 * OSD breaks or the OSD says it no longer serves the group, the operation
 * is sent again, to whoever serves it then, under the same request id: a
 * write is applied once however often it travels.
 *
 * Operations are compound: one tsr_op holds up to 64 steps on one object,
 * applied in order and atomically (all of them, or — when one fails, a
 * guard that does not hold — none).  A compound that changes the object
 * may hold guards but no step that returns data.  Build it, run it
 * (tsr_op_run: blocking) or submit it (tsr_op_submit: a callback when it
 * completes), then destroy it.  The buffers a step names (the data of a
 * write, where a read puts what it read) are the caller's, borrowed until
 * the operation completes.
 *
 * Errors are negative errno values; tsr_op_why() and tsr_client_why() say
 * why in words.  -ETIMEDOUT: no OSD answered within client_op_timeout
 * (an unanswered write may or may not have been applied: run it again,
 * it applies once).
 *
 * Threads: every call may come from any thread; callbacks run on the
 * library's threads and must not block.  One tsr_op is one operation:
 * not shared between threads while in flight.
 */
#ifndef TESSERA_CLIENT_H
#define TESSERA_CLIENT_H

#include <tessera/common.h>

#include <stddef.h>
#include <stdint.h>

TSR_BEGIN_DECLS

struct tsr_client;
struct tsr_op;

/* Connect: read the configuration file conf_path (NULL: the default,
 * /etc/tessera/tessera.conf or $TESSERA_CONF), as entity name (NULL:
 * "client.admin"; an MDS connects as "mds.NAME" for its metadata pool), get the maps and this client's key toward the OSDs
 * from the monitors, within timeout_ms (0: 30 s).  0, or a negative errno
 * with the reason in err. */
TSR_API int tsr_client_connect(const char *conf_path, const char *name,
			       uint64_t timeout_ms, struct tsr_client **out,
			       char *err, size_t errlen);
/* Operations still in flight complete with -ESHUTDOWN first. */
TSR_API void tsr_client_shutdown(struct tsr_client *c);

/* The id of the pool named name: 0 and *id, or -ENOENT. */
TSR_API int tsr_client_pool(struct tsr_client *c, const char *name, int64_t *id);
/* The OSD map epoch the client holds. */
TSR_API uint64_t tsr_client_epoch(struct tsr_client *c);

/* ---- Building an operation ---- */

TSR_API struct tsr_op *tsr_op_create(void);
TSR_API void tsr_op_destroy(struct tsr_op *op);
/* Why the last run of op failed ("" when it did not). */
TSR_API const char *tsr_op_why(const struct tsr_op *op);

/* Each step's own result goes to *rc when rc is not NULL (0, or its
 * error: the step that failed the operation). */

/* Reads.  buf must stay valid until the operation completes; its bytes
 * are the object's only once it succeeded (an operation of one large
 * read is received straight into buf, so a failed or retried one may
 * have written there). */
TSR_API void tsr_op_read(struct tsr_op *op, uint64_t off, uint64_t len, void *buf,
			 uint64_t *got, int *rc);
TSR_API void tsr_op_stat(struct tsr_op *op, uint64_t *size, uint64_t *mtime_ns, int *rc);
/* An attribute into buf[cap]: *len its length (-ERANGE when cap is too
 * small: *len says how much it needs). */
TSR_API void tsr_op_getxattr(struct tsr_op *op, const char *name, void *buf, size_t cap,
			     size_t *len, int *rc);

/* Pairs of keys and values, as some steps return them (freed with
 * tsr_kvs_free). */
struct tsr_kv {
	const void *key, *val;
	size_t key_len, val_len;
};
struct tsr_kvs {
	size_t n;
	struct tsr_kv *kv;
	int more;                    /* a range read stopped at its max */
	void *buf_;                  /* the library's */
};
TSR_API void tsr_kvs_free(struct tsr_kvs *kvs);
TSR_API void tsr_op_getxattrs(struct tsr_op *op, struct tsr_kvs *out, int *rc);
/* The omap values of keys[0..n), those present. */
TSR_API void tsr_op_omap_get_keys(struct tsr_op *op, const void *const *keys,
				  const size_t *key_lens, size_t n, struct tsr_kvs *out,
				  int *rc);
/* At most max pairs after key after (NULL: from the first) whose keys
 * start with prefix (NULL: all); out->more when more follow. */
TSR_API void tsr_op_omap_get_range(struct tsr_op *op, const void *after, size_t after_len,
				   const void *prefix, size_t prefix_len, uint32_t max,
				   struct tsr_kvs *out, int *rc);

/* Changes (every change but remove makes the object when it is absent). */
TSR_API void tsr_op_write(struct tsr_op *op, uint64_t off, const void *buf, size_t len);
TSR_API void tsr_op_write_full(struct tsr_op *op, const void *buf, size_t len);
TSR_API void tsr_op_append(struct tsr_op *op, const void *buf, size_t len);
TSR_API void tsr_op_truncate(struct tsr_op *op, uint64_t size);
TSR_API void tsr_op_zero(struct tsr_op *op, uint64_t off, uint64_t len);
TSR_API void tsr_op_remove(struct tsr_op *op);
/* Make it empty if absent; exclusive: fail with -EEXIST if present. */
TSR_API void tsr_op_create_obj(struct tsr_op *op, int exclusive);
TSR_API void tsr_op_setxattr(struct tsr_op *op, const char *name, const void *val,
			     size_t len);
TSR_API void tsr_op_rmxattr(struct tsr_op *op, const char *name);
TSR_API void tsr_op_omap_set(struct tsr_op *op, const void *const *keys,
			     const size_t *key_lens, const void *const *vals,
			     const size_t *val_lens, size_t n);
TSR_API void tsr_op_omap_rm(struct tsr_op *op, const void *const *keys,
			    const size_t *key_lens, size_t n);
/* Remove the keys in [first, end). */
TSR_API void tsr_op_omap_rm_range(struct tsr_op *op, const void *first, size_t first_len,
				  const void *end, size_t end_len);
TSR_API void tsr_op_omap_clear(struct tsr_op *op);

/* Guards: the operation fails (-ECANCELED, -ENOENT) unless they hold, on
 * the object as it stood before the operation. */
#define TSR_CMP_EQ 1
#define TSR_CMP_NE 2
#define TSR_CMP_GT 3
#define TSR_CMP_GE 4
#define TSR_CMP_LT 5
#define TSR_CMP_LE 6
TSR_API void tsr_op_cmpxattr(struct tsr_op *op, const char *name, int cmp,
			     const void *val, size_t len);
/* The object's version is exactly (epoch, ver) ((0, 0): it is absent). */
TSR_API void tsr_op_assert_version(struct tsr_op *op, uint64_t epoch, uint64_t ver);
TSR_API void tsr_op_assert_exists(struct tsr_op *op);

/* ---- Running it ---- */

/* The version an object has after a write, or had when read. */
struct tsr_objver {
	uint64_t epoch, ver;
};

/* Run op on object oid[0..oid_len) of pool: 0, or the first failure.
 * *ver (may be NULL) gets the object's version. */
TSR_API int tsr_op_run(struct tsr_client *c, int64_t pool, const void *oid, size_t oid_len,
		       struct tsr_op *op, struct tsr_objver *ver);
/* The same, answered through done(arg, result, ver) on a library thread
 * (which must not block).  0 (done will run), or an error (it will not). */
typedef void (*tsr_op_done)(void *arg, int result, const struct tsr_objver *ver);
TSR_API int tsr_op_submit(struct tsr_client *c, int64_t pool, const void *oid,
			  size_t oid_len, struct tsr_op *op, tsr_op_done done, void *arg);

/* ---- Listing a pool ---- */

/* Names of a pool's objects, in pages: fn(arg, name, len) for each
 * (non-zero stops), from cursor (start zeroed), at most max names (0: all
 * of them); *cursor keeps where it stopped and cursor->done says the end
 * was reached.  0, or an error.  Objects written while the listing runs
 * may or may not be listed. */
struct tsr_list_cursor {
	uint32_t pg;
	uint8_t after[4096];
	size_t after_len;
	int done;
};
TSR_API int tsr_client_list(struct tsr_client *c, int64_t pool,
			    struct tsr_list_cursor *cursor, uint64_t max,
			    int (*fn)(void *arg, const void *name, size_t len), void *arg);

/* ---- Scrubbing a PG ---- */

/* Scrub PG pg of pool (doc/operations.md, "Scrub"): its primary compares
 * the copies of every object — versions, sizes, attributes, omaps and,
 * deep, the data — and, asked to repair, rebuilds each bad copy from the
 * authoritative one.  Returns when the scrub is over, within timeout_ms (0:
 * client_op_timeout): 0 with *out filled (tsr_kvs_free(&out->bad) after),
 * -EBUSY when the PG is not active+clean, or another error.  A scrub
 * interrupted by a change of the acting set is run again on the new
 * primary. */
#define TSR_SCRUB_DEEP 0x1u          /* read and compare the data too */
#define TSR_SCRUB_REPAIR 0x2u        /* repair what differs (deep) */
struct tsr_scrub_report {
	uint64_t objects;            /* objects compared */
	uint32_t errors;             /* inconsistent, not repaired */
	uint32_t repaired;           /* inconsistent, being repaired */
	struct tsr_kvs bad;          /* inconsistent objects, repaired or not:
					name -> what differs (text); more: not
					every one is named */
};
TSR_API int tsr_pg_scrub(struct tsr_client *c, int64_t pool, uint32_t pg, unsigned flags,
			 uint64_t timeout_ms, struct tsr_scrub_report *out);

/* Why the last failed call on c failed (this thread's). */
TSR_API const char *tsr_client_why(void);

TSR_END_DECLS

#endif
