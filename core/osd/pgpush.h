/* pgpush.h — an object's whole state as it travels in a push (recovery
 * and backfill, pgsm.h PUSH): its data, its attributes and its omap, read
 * from one copy's store and written into another's.
 *
 *     envelope v1 { bytes data, u32 n, n x { bytes key, bytes val },
 *                   u32 m, m x { bytes key, bytes val } }
 *
 * attributes first, then the omap, each in key order.  The OSD's own
 * attributes (a zero first byte: the version, pgstore.h) do not travel:
 * the receiver sets the version the PUSH names.  Decoding is bounded by
 * tessera/txn.h's limits (a name or key 4 KiB, a value 1 MiB, the data
 * 64 MiB) and by the bytes at hand, and refuses keys out of order, twice
 * or reserved.
 */
#ifndef TSR_OSD_PGPUSH_H
#define TSR_OSD_PGPUSH_H

#include "osd/pgstore.h"

#include <tessera/encoding.h>

#include <stddef.h>
#include <stdint.h>

struct tsr_pgpush_kv {
	const uint8_t *key, *val;    /* borrowed (decoded) or owned (read) */
	size_t key_len, val_len;
};

struct tsr_pgpush {
	const uint8_t *data;
	uint64_t len;
	struct tsr_pgpush_kv *attrs, *omap;
	size_t nattrs, nomap;
	/* what tsr_pgpush_read allocated (NULL when decoded); owned is from
	 * the messenger's pool of large buffers (tsr_msg_buf_get) */
	uint8_t *owned;
	size_t owned_cap;
	uint8_t **owned_kv;
	size_t nowned_kv;
};

void tsr_pgpush_free(struct tsr_pgpush *p);
int tsr_pgpush_encode(struct tsr_enc *e, const struct tsr_pgpush *p);
/* Decode buf (which the result borrows: keep it while p is used). */
int tsr_pgpush_decode(const void *buf, size_t len, struct tsr_pgpush *p, char *err,
		      size_t errlen);

/* Decode, encode, decode again: 0 when both decodings agree, -EBADMSG
 * (err says why) when buf is no push, -EPROTO when it decodes but does
 * not round-trip (a bug).  The fuzz target runs it. */
int tsr_pgpush_check(const void *buf, size_t len, char *err, size_t errlen);

/* Read object oid of ps's copy: 0, -ENOENT when it is not there, or the
 * backend's error (a blocking read: on a worker). */
int tsr_pgpush_read(struct tsr_pgstore *ps, const void *oid, size_t oid_len,
		    struct tsr_pgpush *p);

/* The ops that make oid in cid hold exactly p (it is removed first if
 * there): malloc'd into *ops (*nops of them), pointing into p and oid.
 * Give them to tsr_pgstore_persist with the PUSH's version. */
int tsr_pgpush_ops(const struct tsr_pgpush *p, struct tsr_coll_id cid, const void *oid,
		   size_t oid_len, struct tsr_txn_op **ops, size_t *nops);

#endif
