/* objop.h — a client's operation on one object (or on one PG), as it
 * travels to the primary OSD and back: the OSD_OP and OSD_OP_REPLY
 * messages of the OSD message registry (osdmsg.h).
 *
 * An operation is compound: up to TSR_OBJOP_MAX_OPS sub-operations on one
 * object, applied in order and atomically — all of them or, when one
 * fails (a guard that does not hold, an object that is not there), none.
 * A compound is a write when any sub-operation changes the object; a
 * write may hold guards (ASSERT_*, CMPXATTR, CREATE exclusive) but no
 * sub-operation that returns data (a write's answer must be the same when
 * it is sent again after a change of primary, and only its result and
 * version are kept for that).  PG_LIST and PG_SCRUB stand alone, with no
 * object.
 *
 * The request (OSD_OP):
 *
 *   front = envelope v1 {
 *       u64 client, u64 tid      the request id (reqid, pglog.h): client
 *                                is the client's, random, nonzero; tid
 *                                counts its requests
 *       u64 map_epoch            the OSD map the client placed it with
 *       i64 pool, u32 pg         the PG it placed it in (its seed)
 *       u32 flags                TSR_OBJOP_F_*
 *       bytes oid                1 .. TSR_OBJOP_MAX_OID bytes, the first
 *                                not zero (names starting with a zero
 *                                byte are the OSD's own); empty for
 *                                PG_LIST
 *       u32 nops                 1 .. TSR_OBJOP_MAX_OPS
 *       nops x { u16 type, u16 flags, u64 off, u64 len,
 *                bytes name, u32 indata_len }
 *   }
 *   data  = the sub-operations' input, concatenated in their order: the
 *           sum of indata_len is the message's data length
 *
 * The reply (OSD_OP_REPLY):
 *
 *   front = envelope v1 {
 *       u64 tid
 *       i32 result               0 or -errno (below)
 *       u64 map_epoch            the OSD's map when it answered
 *       u64 ver_epoch, u64 ver   the version the object has after a
 *                                write; a read's: the version read
 *       u32 nops                 as many as asked (0 when result < 0 came
 *                                before any sub-operation ran)
 *       nops x { i32 rc, u32 outdata_len }
 *   }
 *   data  = the sub-operations' output, concatenated in their order
 *
 * Results the client acts on:
 *   -ESTALE    this OSD is not the PG's primary in its map (map_epoch):
 *              the client gets a map at least that new, places the
 *              operation again and resends it (same tid)
 *   -EAGAIN    the PG cannot take it now (the OSD is stopping): resend
 *   -ENOENT, -EEXIST, -ECANCELED (a guard failed), -ERANGE, -EINVAL,
 *   -ENOSPC, -EIO: the operation's own answer
 *
 * Sub-operations (type; the fields each uses; its input; its output):
 *
 *   READ        off, len             -> up to len bytes (short at the end)
 *   STAT                             -> u64 size, u64 mtime_ns,
 *                                       u64 ver_epoch, u64 ver
 *                                       (tsr_objop_stat_*)
 *   WRITE       off; data            write data at off
 *   WRITE_FULL  data                 the object becomes data
 *   APPEND      data                 write data at the end
 *   TRUNCATE    off                  set the size to off
 *   ZERO        off, len             zero a range (holes where it can)
 *   REMOVE                           remove the object (-ENOENT: none)
 *   CREATE      flags EXCL           create it empty if absent; with
 *                                    EXCL, -EEXIST if present
 *   GETXATTR    name                 -> the value (-ENODATA: none)
 *   GETXATTRS                        -> kvlist of every attribute
 *   SETXATTR    name; value
 *   RMXATTR     name                 (-ENODATA: none)
 *   CMPXATTR    name, off = a TSR_OBJOP_CMP_*; value
 *                                    a guard: the attribute compared with
 *                                    value (bytes, unsigned, shorter
 *                                    first); a missing attribute is the
 *                                    empty value; -ECANCELED if false
 *   ASSERT_VERSION  off = epoch, len = ver
 *                                    a guard: the object's version is
 *                                    exactly that ((0,0): it is absent);
 *                                    -ECANCELED otherwise
 *   ASSERT_EXISTS                    a guard: -ENOENT if absent
 *   OMAP_GET_KEYS   keylist          -> kvlist of those present
 *   OMAP_GET_RANGE  name = start after (empty: from the first),
 *                   len = at most this many (1 .. TSR_OBJOP_MAX_KEYS);
 *                   prefix (input: only keys starting with it)
 *                                    -> u8 more, kvlist
 *   OMAP_SET        kvlist
 *   OMAP_RM         keylist
 *   OMAP_RM_RANGE   name = first key; the end key (input, exclusive)
 *   OMAP_CLEAR
 *   PG_LIST     name = list after this object (empty: from the first),
 *               len = at most this many (1 .. TSR_OBJOP_MAX_KEYS)
 *                                    -> u8 more, keylist of object names
 *   PG_SCRUB    flags = TSR_OBJOP_SCRUB_DEEP, _REPAIR
 *                                    scrub the PG (doc/operations.md);
 *                                    answered when it is over:
 *                                    -> u64 objects, u32 errors (objects
 *                                       inconsistent and not repaired),
 *                                       u32 repaired, u8 more, kvlist of
 *                                       inconsistent objects, repaired or
 *                                       not (name -> what differs, text),
 *                                       more: not all of them are named
 *
 * Lists (input and output):
 *   keylist = u32 n, n x bytes key
 *   kvlist  = u32 n, n x { bytes key, bytes val }
 * keys in strictly increasing order (bytes, unsigned), each 1 ..
 * TSR_OBJOP_MAX_NAME bytes, values at most TSR_OBJOP_MAX_VALUE, n at most
 * TSR_OBJOP_MAX_KEYS.
 *
 * Decoders treat their input as hostile: every length and count is
 * bounded before anything is allocated, fields a sub-operation does not
 * use must be zero or empty, and the reason for a refusal names the
 * sub-operation by index.
 */
#ifndef TSR_OSD_OBJOP_H
#define TSR_OSD_OBJOP_H

#include <tessera/encoding.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define TSR_OBJOP_MAX_OPS 64u
#define TSR_OBJOP_MAX_OID 4096u       /* = TSR_PGLOG_MAX_OID */
#define TSR_OBJOP_MAX_NAME 4096u      /* xattr names, omap keys */
#define TSR_OBJOP_MAX_VALUE (1u << 20)
#define TSR_OBJOP_MAX_KEYS 65536u     /* in one list */
#define TSR_OBJOP_MAX_DATA (64u << 20) /* one sub-operation's input or output */

#define TSR_OBJOP_TYPES(X)                                      \
	X(READ, 1, "read", 0)                                   \
	X(STAT, 2, "stat", 0)                                   \
	X(WRITE, 3, "write", 1)                                 \
	X(WRITE_FULL, 4, "write-full", 1)                       \
	X(APPEND, 5, "append", 1)                               \
	X(TRUNCATE, 6, "truncate", 1)                           \
	X(ZERO, 7, "zero", 1)                                   \
	X(REMOVE, 8, "remove", 1)                               \
	X(CREATE, 9, "create", 1)                               \
	X(GETXATTR, 10, "getxattr", 0)                          \
	X(GETXATTRS, 11, "getxattrs", 0)                        \
	X(SETXATTR, 12, "setxattr", 1)                          \
	X(RMXATTR, 13, "rmxattr", 1)                            \
	X(CMPXATTR, 14, "cmpxattr", 0)                          \
	X(ASSERT_VERSION, 15, "assert-version", 0)              \
	X(ASSERT_EXISTS, 16, "assert-exists", 0)                \
	X(OMAP_GET_KEYS, 17, "omap-get-keys", 0)                \
	X(OMAP_GET_RANGE, 18, "omap-get-range", 0)              \
	X(OMAP_SET, 19, "omap-set", 1)                          \
	X(OMAP_RM, 20, "omap-rm", 1)                            \
	X(OMAP_RM_RANGE, 21, "omap-rm-range", 1)                \
	X(OMAP_CLEAR, 22, "omap-clear", 1)                      \
	X(PG_LIST, 23, "pg-list", 0)                            \
	X(PG_SCRUB, 24, "pg-scrub", 0)

enum {
#define TSR_OBJOP_ENUM(name, n, label, writes) TSR_OBJOP_##name = (n),
	TSR_OBJOP_TYPES(TSR_OBJOP_ENUM)
#undef TSR_OBJOP_ENUM
};

/* Its label ("write-full"), or NULL for an unknown type. */
const char *tsr_objop_name(uint16_t type);
/* Does a sub-operation of this type change the object? */
int tsr_objop_writes(uint16_t type);
/* Does it return data (READ, STAT, GET*, OMAP_GET_*, PG_LIST, PG_SCRUB)? */
int tsr_objop_reads(uint16_t type);

/* sub-operation flags */
#define TSR_OBJOP_EXCL 0x1u           /* CREATE: fail if it exists */
#define TSR_OBJOP_SCRUB_DEEP 0x1u     /* PG_SCRUB: data CRCs too */
#define TSR_OBJOP_SCRUB_REPAIR 0x2u   /* PG_SCRUB: repair what differs */
#define TSR_OBJOP_SCRUB_MAX_NAMED 100u /* objects a PG_SCRUB answer names */

/* request flags: none yet (must be 0) */

/* CMPXATTR's comparisons (off) */
#define TSR_OBJOP_CMP_EQ 1
#define TSR_OBJOP_CMP_NE 2
#define TSR_OBJOP_CMP_GT 3
#define TSR_OBJOP_CMP_GE 4
#define TSR_OBJOP_CMP_LT 5
#define TSR_OBJOP_CMP_LE 6

#define TSR_OBJOP_STAT_LEN 32u        /* STAT's output */

struct tsr_objop_sub {
	uint16_t type, flags;
	uint64_t off, len;
	const uint8_t *name;          /* borrowed */
	size_t name_len;
	const uint8_t *in;            /* input (borrowed: the message data) */
	size_t in_len;
};

struct tsr_objop {
	uint64_t client, tid;
	uint64_t map_epoch;
	int64_t pool;
	uint32_t pg;
	uint32_t flags;
	const uint8_t *oid;           /* borrowed */
	size_t oid_len;
	uint32_t nops;
	struct tsr_objop_sub ops[TSR_OBJOP_MAX_OPS];
};

/* Is the compound a write (any sub-operation changes the object)? */
int tsr_objop_is_write(const struct tsr_objop *op);

/* Encode op's front into e; its input goes as the message data: the
 * caller sends op->ops[i].in in order (tsr_objop_iov fills them in). */
int tsr_objop_encode(struct tsr_enc *e, const struct tsr_objop *op);
/* The input as iovecs (at most TSR_OBJOP_MAX_OPS, empty ones left out):
 * how many. */
int tsr_objop_iov(const struct tsr_objop *op, struct iovec *iov);
/* Decode a request: front and its data (contiguous, data_len bytes),
 * which op borrows.  Checks everything above: -EBADMSG or -EINVAL with
 * the reason; then op holds nothing but the client and tid, when they
 * decoded (0 otherwise), so that the refusal can be answered. */
int tsr_objop_decode(const void *front, size_t front_len, const void *data,
		     size_t data_len, struct tsr_objop *op, char *err, size_t errlen);

struct tsr_objop_reply_sub {
	int32_t rc;
	const uint8_t *out;           /* borrowed */
	size_t out_len;
};

struct tsr_objop_reply {
	uint64_t tid;
	int32_t result;
	uint64_t map_epoch;
	uint64_t ver_epoch, ver;
	uint32_t nops;
	struct tsr_objop_reply_sub ops[TSR_OBJOP_MAX_OPS];
};

int tsr_objop_reply_encode(struct tsr_enc *e, const struct tsr_objop_reply *r);
int tsr_objop_reply_iov(const struct tsr_objop_reply *r, struct iovec *iov);
int tsr_objop_reply_decode(const void *front, size_t front_len, const void *data,
			   size_t data_len, struct tsr_objop_reply *r, char *err,
			   size_t errlen);
/* The request id of an encoded reply's front without decoding the rest (a
 * messenger's tag function: tsr_msgr_set_rx_tag); 0 if it does not
 * decode. */
uint64_t tsr_objop_reply_tid(const void *front, size_t front_len);

/* Lists.  Encoding: begin (a count to come), put each key (and value:
 * NULL for a keylist), end with the count; the caller keeps the order
 * and the bounds (the decoder refuses what breaks them).  Decoding walks
 * a list without allocating: init, then next until it returns 0 (the end)
 * or -EBADMSG (with the reason: malformed, out of order, over a bound);
 * keys and values borrow from the buffer. */
size_t tsr_objop_list_begin(struct tsr_enc *e);
void tsr_objop_list_put(struct tsr_enc *e, const void *key, size_t key_len,
			const void *val, size_t val_len);
void tsr_objop_list_end(struct tsr_enc *e, size_t mark, uint32_t n);

struct tsr_objop_list {
	struct tsr_dec d;
	uint32_t left;
	const uint8_t *prev;
	size_t prev_len;
	int kv;                       /* values follow the keys */
};
/* buf holds the list and nothing after it (OMAP_GET_RANGE's and
 * PG_LIST's output: the list follows the u8 more). */
int tsr_objop_list_init(struct tsr_objop_list *l, const void *buf, size_t len, int kv,
			char *err, size_t errlen);
/* 1 with the next key (and value), 0 at the end, or -EBADMSG. */
int tsr_objop_list_next(struct tsr_objop_list *l, const uint8_t **key, size_t *key_len,
			const uint8_t **val, size_t *val_len, char *err, size_t errlen);

/* STAT's output */
void tsr_objop_stat_encode(uint8_t out[TSR_OBJOP_STAT_LEN], uint64_t size,
			   uint64_t mtime_ns, uint64_t ver_epoch, uint64_t ver);
int tsr_objop_stat_decode(const void *buf, size_t len, uint64_t *size,
			  uint64_t *mtime_ns, uint64_t *ver_epoch, uint64_t *ver);

/* Decode, encode, decode again: 0 when both decodings agree, -EBADMSG
 * when buf is no request (or reply), -EPROTO when it does not round-trip.
 * buf is the front followed by the data; the fuzz target splits it at
 * its first four bytes' value.  (osdmsg.c's check runs these.) */
int tsr_objop_check(const void *buf, size_t len, char *err, size_t errlen);
int tsr_objop_reply_check(const void *buf, size_t len, char *err, size_t errlen);

#endif
