/* tessera/txn.h — the serialized form of a backend transaction.
 *
 * A transaction (tessera/backend.h) is written out whenever it must
 * outlive the call that made it: in a backend's write-ahead journal, and
 * when a primary OSD sends it to its replicas.  Both sides decode it as
 * hostile input.
 *
 *     envelope v1 compat 1 {
 *         u32 nops
 *         nops x {
 *             u32 type, u32 flags,
 *             u64 pool, u32 pg, i32 shard,
 *             bytes oid,                     (u32 length + bytes)
 *             u64 off, u64 len,
 *             bytes data                     (WRITE: exactly len bytes; else empty)
 *             bytes key, bytes val,
 *             bytes oid2, u64 off2
 *         }
 *     }
 *
 * Decoding borrows: the decoded ops point into the input buffer, which must
 * outlive them; only the op array is allocated.
 */
#ifndef TESSERA_TXN_H
#define TESSERA_TXN_H

#include <tessera/backend.h>
#include <tessera/encoding.h>

TSR_BEGIN_DECLS

#define TSR_TXN_MAX_OPS 65536u
#define TSR_TXN_MAX_NAME 4096u          /* object names and keys */
#define TSR_TXN_MAX_VALUE (1u << 20)    /* attribute and omap values */
#define TSR_TXN_MAX_DATA (64u << 20)    /* one write */

/* Check what every backend would otherwise check itself: known op types,
 * zero flags and reserved words, names and values within the limits, the
 * fields each op needs present.  The reason names the op by index. */
TSR_API int tsr_txn_validate(const struct tsr_txn *txn, char *err,
			     size_t errlen);

/* Append txn (validated first) to e; -EINVAL with the reason if invalid. */
TSR_API int tsr_txn_encode(const struct tsr_txn *txn, struct tsr_enc *e,
			   char *err, size_t errlen);

/* Decode one transaction from d.  On success out->ops is a malloc'd array
 * whose pointers borrow from d's buffer; release it with
 * tsr_txn_decoded_free.  The result is validated. */
TSR_API int tsr_txn_decode(struct tsr_dec *d, struct tsr_txn *out, char *err,
			   size_t errlen);
TSR_API void tsr_txn_decoded_free(struct tsr_txn *txn);

/* Name of an op type ("write"), or NULL if unknown. */
TSR_API const char *tsr_txn_op_name(uint32_t type);

TSR_END_DECLS

#endif
