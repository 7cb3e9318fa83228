/* ostore.h — the object-store engine the backend plugins share.
 *
 * Everything about objects that does not depend on where data bytes are
 * kept lives here: the LevelDB schema (onodes, attributes, omap, chunk
 * maps; keys.c, records.c), the transaction overlay that prepares a
 * transaction against the store (overlay.c), group commit on one commit
 * thread (commit.c), every read operation of the backend ABI (reads.c)
 * and the engine's fsck (fsck.c); ostore_int.h is what those files share.  A backend plugin supplies the rest
 * through struct os_hooks: how a prepared overlay becomes durable (a
 * journal for backend-file, copy-on-write extents for backend-blockdev),
 * where a chunk's stored bytes are, and its own mkfs, mount and fsck.
 *
 * LevelDB keys (integers big-endian, so keys sort numerically):
 *
 *     'S'                          superblock: magic, uuid, next object
 *                                  id, object count, logical bytes
 *     'L' cid                      a collection (value: empty)
 *     'O' cid name                 onode: object id, size, mtime
 *     'A' id key                   attribute
 *     'M' id key                   omap entry
 *     'C' id chunk(u32)            chunk map: how the chunk's 64 KiB are
 *                                  stored, and their checksums
 *
 *     cid = u64 pool, u32 pg, u32 (shard ^ 0x80000000): 16 bytes
 *
 * Object names sort as unsigned bytes after the 17-byte prefix: the
 * enumeration order the ABI promises.  Attributes, omap and chunk maps are
 * keyed by object id, never by name, so a removed object's keys go with
 * one range and ids are never reused.
 *
 * Data is kept in 64 KiB chunks of 16 blocks of 4 KiB.  A chunk map is
 *
 *     raw:   a bit per block saying "all zeros, nothing stored", a CRC32C
 *            per other block, and (backends that place blocks) each
 *            stored block's location;
 *     zstd:  the chunk compressed, its stored length, one CRC32C over the
 *            stored bytes, and (backends that place data) its location;
 *     inline: the chunk's first bytes themselves (the rest reads as
 *            zeros) and their CRC32C: the data of a small object
 *            (inline_max) lives in its chunk map, so the object needs no
 *            file or blocks of its own and goes with its keys.
 *
 *     envelope v1 { u8 kind | 0x80 if locations follow,
 *                   raw:    u16 zero bits, u32 crc per stored block,
 *                           [u64 location per stored block]
 *                   zstd:   u32 stored length, u32 crc, [u64 location]
 *                   inline: u32 crc, bytes (a u32 length, then
 *                           the bytes; never locations) }
 *
 * A chunk without a map reads as zeros; the bytes where it would be
 * stored mean nothing.
 *
 * Threads and order (commit.c).  Each collection has a queue: its
 * transactions commit, and their callbacks come, in submission order.
 * Commit threads (commit_threads of them) take batches of queued
 * transactions, a collection being in one batch at a time, prepare each
 * batch into an overlay and have the backend stage it (the part of a
 * commit that concerns only the batch's own objects: compress, place and
 * write data) side by side.  Staged batches are then sealed together by
 * one thread at a time: one journal record and one flush for all of them,
 * then applied.  A transaction naming several collections is queued on
 * each and taken only when it heads all of them.  Readers take the
 * store's read lock, and a seal makes its changes visible under the write
 * lock, so readers see a transaction whole or not at all.
 */
#ifndef TSR_OSTORE_H
#define TSR_OSTORE_H

#include "fileio.h"
#include "kvov.h"

#include <tessera/kv.h>

#include <tessera/backend.h>
#include <tessera/encoding.h>
#include <tessera/txn.h>

#include <pthread.h>
#include <stdint.h>
#include <zstd.h>

#define OS_BLOCK 4096u
#define OS_CHUNK 65536u
#define OS_BPC (OS_CHUNK / OS_BLOCK) /* blocks per chunk */

/* The longest key the engine writes: tag, collection, name, room. */
#define OS_KEY_MAX (1 + 16 + TSR_TXN_MAX_NAME + 8)

#define OS_CHUNK_RAW 0
#define OS_CHUNK_ZSTD 1
#define OS_CHUNK_INLINE 2
/* Inline bytes one overlay keeps at most: they are journaled and then
 * applied to LevelDB in one batch under the store's write lock; past
 * this a batch's small objects are stored as others are. */
#define OS_INLINE_BATCH (4u << 20)

/* A chunk map, decoded. */
struct os_cmeta {
	int present;          /* 0: no map, the chunk reads as zeros */
	uint8_t kind;         /* OS_CHUNK_RAW, _ZSTD or _INLINE */
	uint8_t has_loc;      /* locations are recorded */
	uint16_t zero;        /* raw: bit b set = block b is zeros */
	uint32_t stored;      /* zstd, inline: bytes stored */
	uint32_t crc[OS_BPC]; /* raw: per block; zstd, inline: crc[0] over
	                       * the stored bytes */
	uint64_t loc[OS_BPC]; /* raw: per stored block; zstd: loc[0] */
	const uint8_t *inl;   /* inline: the stored bytes (decoded: inside
	                       * the record, valid while it is) */
};

struct os_super {
	uint8_t uuid[16];
	uint64_t next_objid;
	uint64_t objects;
	uint64_t bytes;        /* sum of object sizes */
};

struct os;
struct os_prep;
struct os_fsck;

struct os_hooks {
	/* 8 characters that open the superblock record ("TSRFILE1"). */
	const char *magic;
	/* The part of a prepared overlay's commit that concerns its own
	 * objects only, run by several commit threads at once (each with its
	 * own overlay: different collections, so different objects): turn
	 * dirty chunks into what is stored, place data, write what goes in
	 * place, and keep in p->be what seal needs, with p->rec_bytes its
	 * part of the journal record.  0, or a negative errno that every
	 * transaction of the overlay gets (unstage then undoes the rest). */
	int (*stage)(struct os *os, struct os_prep *p);
	/* Make staged overlays durable and visible together: one journal
	 * record with the superblock os_seal_super gives, one flush, then
	 * applied under os->lock held for writing.  One seal runs at a time
	 * (os_exclusive).  rcs[i] gets ps[i]'s result; -EFBIG for an overlay
	 * too large for one record even alone. */
	void (*seal)(struct os *os, struct os_prep **ps, size_t n, int *rcs);
	/* Release p->be after seal (committed 1) or after stage or seal
	 * failed (0: undo what nothing will refer to). */
	void (*unstage)(struct os *os, struct os_prep *p, int committed);
	/* A descriptor to read objid's stored data with; reader is 1 on a
	 * reader thread (released with data_fd_done), 0 on a commit
	 * thread, 2 on a reader thread for O_DIRECT reads of whole aligned
	 * blocks (an error when the store cannot: the reader then reads
	 * through the other).  -ENOENT when nothing is stored. */
	int (*data_fd)(struct os *os, uint64_t objid, int reader);
	void (*data_fd_done)(struct os *os, int fd, int reader);
	/* Byte offset on data_fd of block b (raw) or of the stored bytes
	 * (zstd, b 0) of chunk cno with map m. */
	uint64_t (*stored_off)(struct os *os, const struct os_cmeta *m,
			       uint32_t cno, unsigned b);
	/* Capacity for statfs and the ENOSPC check. */
	int (*space)(struct os *os, uint64_t *total, uint64_t *avail);
	/* fsck's backend part, after the engine's checks.  May be NULL. */
	void (*fsck_extra)(struct os_fsck *c);
};

/* A queued transaction: a deep copy of the caller's (submit() borrows its
 * buffers only until it returns), in one block-aligned allocation that
 * starts with this header. */
#define OS_SPARE 16               /* spare transaction allocations kept */
#define OS_SPARE_BYTES (32u << 20) /* and their bytes at most */

struct os_seq;
struct os_worker;

/* A queued transaction's place in the queue of one collection it names. */
struct os_link {
	struct os_link *next;
	struct os_pending *pd;
	struct os_seq *seq;
};

struct os_pending {
	struct os_pending *next;   /* in a batch */
	struct os_pending *older, *newer; /* every uncommitted one (flush) */
	uint64_t no;               /* submission number, from 1 */
	struct tsr_txn txn;        /* points into the same allocation */
	size_t len;                /* bytes of it in use */
	size_t cap;                /* bytes allocated */
	tsr_commit_cb cb;
	void *arg;
	uint32_t nlinks;           /* collections it names (at least 1) */
	struct os_link *links;     /* &link0, or an array of nlinks */
	struct os_link link0;
};

/* The engine's part of a backend instance; a backend embeds it first in
 * its own structure. */
struct os {
	const struct tsr_host *host;
	const struct os_hooks *hooks;
	char path[4000];
	uint64_t max_object, min_free, queue_max;
	uint64_t direct_min;  /* direct_read_min; 0: never */
	int reread_cache;     /* reread_cache (reads.c) */
	uint64_t inline_max;  /* inline_max: largest object kept inline */
	struct tsr_kv_tuning kv_tuning; /* meta_write_buffer */
	uint64_t seen[16384]; /* its ranges read once, by hash (relaxed atomics) */
	int compress, level;

	int mounted;
	struct tsr_kv *kv;
	char meta_path[4096];  /* where kv lives, for messages */
	struct os_super sb;
	int failed;            /* a commit failed half-way: read-only */
	pthread_rwlock_t lock; /* readers vs commits */

	/* The queues (commit.c), under qlock. */
	unsigned nthreads;     /* commit threads to run */
	pthread_t *thr;
	unsigned nstarted;
	pthread_mutex_t qlock;
	pthread_cond_t qcond;  /* a batch done: for flush and queue room */
	struct os_worker *idle; /* commit threads waiting for work, the
				 * last to go idle first */
	struct os_seq **seqs;  /* collections with queued or busy work */
	size_t nbuckets;
	struct os_seq *ready_head, *ready_tail; /* queued work, not busy */
	struct os_pending *oldest, *newest; /* uncommitted, by submission */
	size_t qbytes;
	uint64_t submitted;
	int stop;
	uint64_t batch_limit;  /* bytes of queued transactions per batch,
				* and of staged overlays per seal */
	/* Allocations of committed transactions kept for the next ones (under
	 * qlock): fresh pages cost a fault each, which on a virtual machine
	 * is more than copying the data into warm ones. */
	struct os_pending *spare[OS_SPARE];
	size_t nspare, spare_bytes;

	/* The seal (commit.c), under slock: staged overlays waiting, and
	 * whether a seal (or an os_exclusive caller) runs. */
	pthread_mutex_t slock;
	pthread_cond_t scond;
	struct os_prep *seal_head, *seal_tail;
	int sealing;

	uint64_t next_id;      /* the next object id handed out (atomic) */
	struct os_worker *workers; /* the commit threads' own */
};

/* ---- The overlay (see overlay.c) --------------------------------------- */

struct os_chunk {
	uint32_t no;
	uint16_t loaded;      /* blocks whose content is in buf */
	uint16_t dirty;       /* blocks changed by this overlay */
	struct os_cmeta base; /* the map when the chunk was first touched */
	uint8_t *buf;         /* OS_CHUNK bytes, block-aligned */
	int borrowed;         /* buf is a queued transaction's data: never
	                       * written or freed (chunk_own makes a copy) */
};

struct os_punch {
	uint64_t off, len;
};

/* An object's data as the overlay changes it. */
struct os_file {
	uint64_t objid;
	const char *name;     /* for messages */
	char namebuf[96];
	uint64_t trunc_to;    /* UINT64_MAX: nothing past it was dropped */
	uint64_t size;        /* its size as the overlay leaves it
	                       * (UINT64_MAX: not known, nothing inline) */
	int unlink;           /* the object was removed */
	struct os_chunk **chunks; /* sorted by no */
	size_t nchunks, cap;
	struct os_punch *punches; /* byte ranges whose chunks were dropped */
	size_t npunches, pcap;
};

struct os_prep {
	struct os *os;
	struct kvov kv;
	struct os_file **files;
	size_t nfiles, fcap;
	int64_t dobjects;     /* what the overlay adds to the superblock's */
	int64_t dbytes;       /* object count and byte total */
	uint64_t *new_ids;    /* ids of the objects it made, ascending */
	size_t nnew, newcap;
	struct tsr_coll_id ccid; /* coll_exists' last answer: the collection */
	int cknown;           /* (0: none yet) */
	int cexists;          /* and whether it exists */
	uint64_t now;
	uint64_t data_bytes;  /* bytes the commit stores (set by stage) */
	uint64_t inline_bytes; /* of them kept inline (os_chunk_finish) */
	size_t rec_bytes;     /* its part of the journal record (stage) */
	ZSTD_CCtx *cctx;      /* the commit thread's */
	ZSTD_DCtx *dctx;
	void *be;             /* the backend's, from stage to unstage */
	/* waiting for the seal (commit.c, under slock) */
	struct os_prep *snext;
	int sealed, seal_rc;
	char err[512];
};

/* What a dirty chunk becomes (os_chunk_finish): its new map, without
 * locations, and what must be stored. */
struct os_chunk_out {
	struct os_cmeta m;
	int delete_map;       /* all zeros: the map goes */
	uint16_t write;       /* raw: blocks to store from the chunk's buf
	                       * (inline: none, m.inl is the chunk's buf) */
	const uint8_t *z;     /* zstd: the stored bytes (m.stored of them) */
	uint16_t was_stored;  /* base blocks whose stored copy is now dead */
};

/* ---- The engine's functions ---------------------------------------------*/

void os_log(struct os *os, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *os_oid_str(const void *oid, size_t n, char *buf, size_t buflen);

/* Instance set-up from the common options (see OS_COMMON_OPTIONS). */
void os_init(struct os *os, const struct tsr_host *host,
	     const struct os_hooks *hooks, const char *path, int compress,
	     int level, uint64_t max_object, uint64_t min_free,
	     uint64_t queue_max, unsigned nthreads);
void os_fini(struct os *os);

/* Superblock record in the kv store. */
int os_super_load(struct os *os, char *err, size_t errlen);
int os_super_store(struct os *os, int sync, char *err, size_t errlen);
void os_super_new(struct os *os, int next_objid_start);

/* The commit threads: start after mount, stop (draining) before umount. */
int os_start(struct os *os, char *err, size_t errlen);
void os_stop(struct os *os);

/* For a seal: the superblock after the overlays ps[0..n) (os->sb with
 * their counts added, and every object id handed out so far below its
 * next id).  1 when it differs from os->sb (a record must carry it). */
int os_seal_super(struct os *os, struct os_prep *const *ps, size_t n,
		  struct os_super *sb);
/* Run fn(os, arg) while no seal runs and none starts (a backend's
 * checkpoint outside a seal); its result. */
int os_exclusive(struct os *os, int (*fn)(struct os *os, void *arg),
		 void *arg);

/* Did the overlay make objid's object (1), or was it there before (0)?
 * A new object's id is never handed out again, whether the overlay
 * commits or not. */
int os_prep_is_new(const struct os_prep *p, uint64_t objid);

/* Turn a dirty chunk into its new map and what to store. */
int os_chunk_finish(struct os_prep *p, struct os_file *f, struct os_chunk *c,
		    struct os_chunk_out *out);
void os_chunk_out_release(struct os_chunk_out *out);
/* Encode a map (with locations when m->has_loc). */
uint8_t *os_cmeta_encode(const struct os_cmeta *m, size_t *len);
int os_cmeta_decode(const void *p, size_t n, struct os_cmeta *m);
/* Whether the bytes stored on fd for chunk cno match its map's checksums
 * (1) or not (0: short or different), or -errno when they cannot be read
 * (a read error says nothing about them).  Logs nothing: replay asks this
 * of data that may never have reached the disk. */
int os_chunk_stored_ok(struct os *os, int fd, uint32_t cno,
		       const struct os_cmeta *m);
size_t os_key_chunk(uint8_t *k, uint64_t objid, uint32_t cno);
/* Whether k is a chunk map's key, and whose. */
int os_key_is_chunk(const void *k, size_t kl, uint64_t *objid, uint32_t *cno);
size_t os_key_after(uint8_t *k, const uint8_t *prefix, size_t n);
uint8_t *os_super_encode(const struct os_super *s, const char *magic,
			 size_t *len);

/* Key/value changes of an overlay, in the order to apply them: ranges
 * first, then entries (kvov.h).  The superblock is the seal's
 * (os_seal_super): overlays sealed together share one. */
typedef void (*os_kv_emit)(void *arg, int op, const void *k, size_t kl,
			   const void *v, size_t vl);
#define OS_KV_PUT 1
#define OS_KV_DEL 2
#define OS_KV_DELRANGE 3
int os_emit_ranges(struct os_prep *p, os_kv_emit emit, void *arg);
int os_emit_entries(struct os_prep *p, os_kv_emit emit, void *arg);

/* Put a kv batch's range deletion in terms of the keys now in the store. */
int os_batch_del_range(struct os *os, struct tsr_kv_batch *b, const void *start,
		       size_t sl, const void *end, size_t el, char *err,
		       size_t errlen);

/* The key/value part of a journal record, as both backends write it:
 *
 *     u32 count, count x { u8 OS_KV_*, bytes key, bytes value }
 *
 * (OS_KV_DELRANGE: the value is the range's end).  os_rec_kv appends one
 * operation to e and counts it in *n; the caller writes *n before e's
 * bytes.  os_rec_kv_decode reads the part from d into b, the range
 * deletions as the keys the store holds now; malformed input fails d. */
void os_rec_kv(struct tsr_enc *e, uint32_t *n, int op, const void *k,
	       size_t kl, const void *v, size_t vl);
/* One key/value operation of such a part, bounds checked (the decoder's
 * error is set when it is malformed); os_rec_kv_decode reads them so. */
void os_rec_kv_next(struct tsr_dec *d, uint8_t *op, const void **k, size_t *kl,
		    const void **v, size_t *vl);
int os_rec_kv_decode(struct os *os, struct tsr_dec *d, struct tsr_kv_batch *b,
		     char *err, size_t errlen);



/* Backend ABI operations the engine implements. */
int os_submit(void *inst, const struct tsr_txn *txn, tsr_commit_cb on_commit,
	      void *arg);
int os_flush(void *inst);
int os_read(void *inst, const struct tsr_coll_id *cid, const void *oid,
	    size_t oid_len, uint64_t off, uint64_t len, void *buf,
	    uint64_t *out_len);
int os_read_crc(void *inst, const struct tsr_coll_id *cid, const void *oid,
		size_t oid_len, uint64_t off, uint64_t len, void *buf,
		uint64_t *out_len, uint32_t *crc);
int os_stat(void *inst, const struct tsr_coll_id *cid, const void *oid,
	    size_t oid_len, struct tsr_obj_stat *st);
int os_getattr(void *inst, const struct tsr_coll_id *cid, const void *oid,
	       size_t oid_len, const void *key, size_t key_len, void *buf,
	       size_t buflen, size_t *val_len);
int os_getattrs(void *inst, const struct tsr_coll_id *cid, const void *oid,
		size_t oid_len, tsr_kv_cb cb, void *arg);
int os_omap_get(void *inst, const struct tsr_coll_id *cid, const void *oid,
		size_t oid_len, const void *key, size_t key_len, void *buf,
		size_t buflen, size_t *val_len);
int os_omap_iter(void *inst, const struct tsr_coll_id *cid, const void *oid,
		 size_t oid_len, const void *start, size_t start_len,
		 tsr_kv_cb cb, void *arg);
int os_list_colls(void *inst, tsr_coll_cb cb, void *arg);
int os_list_objects(void *inst, const struct tsr_coll_id *cid,
		    struct tsr_cursor *cursor, uint32_t max, tsr_name_cb cb,
		    void *arg);
int os_statfs(void *inst, struct tsr_statfs *st);

/* fsck: the engine's checks on an opened (not mounted) store, then the
 * backend's fsck_extra.  Returns problems left unrepaired, or -errno. */
struct os_fsck {
	struct os *os;
	int repair;
	tsr_fsck_cb cb;
	void *arg;
	int unrepaired;
	struct tsr_kv_batch *fix;
	uint64_t *ids, *sizes;   /* live objects, sorted by id */
	size_t nids, cap;
	uint64_t bytes;
	uint64_t max_id;
	ZSTD_DCtx *dctx;
	uint8_t *tmp;
	void *be;                /* the backend's */
	/* every chunk map seen (for backends that check space): called
	 * with each live object's maps */
	int (*on_map)(struct os_fsck *c, uint64_t objid, uint32_t cno,
		      const struct os_cmeta *m);
};
int os_fsck_run(struct os *os, int repair, tsr_fsck_cb cb, void *arg,
		int (*on_map)(struct os_fsck *, uint64_t, uint32_t,
			      const struct os_cmeta *),
		void *be);
void os_fsck_report(struct os_fsck *c, int fixable, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Is objid a live object (after the engine's pass)? */
int os_fsck_live(const struct os_fsck *c, uint64_t objid);

/* The ops table of a backend on the engine: its own life cycle and fsck,
 * everything else the engine's. */
#define OS_BACKEND_OPS(mkfs_fn, mount_fn, umount_fn, fsck_fn)               \
	{                                                                    \
		.size = sizeof(struct tsr_backend_ops), .mkfs = (mkfs_fn),   \
		.mount = (mount_fn), .umount = (umount_fn),                  \
		.submit = os_submit, .flush = os_flush, .read = os_read,     \
		.stat = os_stat, .getattr = os_getattr,                      \
		.getattrs = os_getattrs, .omap_get = os_omap_get,            \
		.omap_iter = os_omap_iter, .list_colls = os_list_colls,      \
		.list_objects = os_list_objects, .statfs = os_statfs,        \
		.fsck = (fsck_fn), .read_crc = os_read_crc,                  \
	}

/* Options every backend built on the engine takes, and where they sit in
 * its table (the backend's own come after). */
#define OS_COMMON_OPTIONS                                                    \
	{ .name = "compression", .type = TSR_OPT_STRING, .def = "none",      \
	  .choices = os_compression_choices,                                 \
	  .help = "compress data at rest: none or zstd" },                   \
	{ .name = "compression_level", .type = TSR_OPT_INT, .def = "3",      \
	  .min = "1", .max = "19",                                           \
	  .help = "zstd level when compression is zstd" },                   \
	{ .name = "max_object_size", .type = TSR_OPT_SIZE, .def = "128M",    \
	  .min = "64K", .max = "1T",                                         \
	  .help = "largest object size; growing past it fails with EFBIG" }, \
	{ .name = "min_free", .type = TSR_OPT_SIZE, .def = "64M",            \
	  .min = "0",                                                        \
	  .help = "free space kept; writes that would eat into it fail with ENOSPC" }, \
	{ .name = "queue_bytes", .type = TSR_OPT_SIZE, .def = "256M",        \
	  .min = "1M", .max = "16G",                                         \
	  .help = "bytes of submitted, uncommitted transactions before submit() waits" }, \
	{ .name = "commit_threads", .type = TSR_OPT_INT, .def = "4",         \
	  .min = "1", .max = "64",                                           \
	  .help = "threads committing transactions of different collections side by side" }, \
	{ .name = "direct_read_min", .type = TSR_OPT_SIZE, .def = "512K",    \
	  .min = "0", .max = "1G",                                           \
	  .help = "reads of at least this many stored bytes in a row bypass the page cache (O_DIRECT); 0: never" }, \
	{ .name = "reread_cache", .type = TSR_OPT_BOOL, .def = "true",       \
	  .help = "a direct read of a range read once before lets the kernel cache it, so later reads come from memory" }, \
	{ .name = "inline_max", .type = TSR_OPT_SIZE, .def = "8K",           \
	  .min = "0", .max = "64K",                                          \
	  .help = "objects of at most this many bytes keep their data in the metadata store, with no file or blocks of their own; 0: never" }, \
	{ .name = "meta_write_buffer", .type = TSR_OPT_SIZE, .def = "16M",   \
	  .min = "1M", .max = "1G",                                          \
	  .help = "changes the metadata store (LevelDB) keeps in memory before writing them out as a table; up to twice this is held" }, \
	{ .name = "meta_compression", .type = TSR_OPT_STRING, .def = "none", \
	  .choices = os_meta_compression_choices,                            \
	  .help = "how the metadata store compresses its tables: snappy or none" }
#define OS_NCOMMON 11
extern const char *const os_compression_choices[];
extern const char *const os_meta_compression_choices[];
/* Set up os from the OS_NCOMMON values starting at vals[first]. */
void os_init_opts(struct os *os, const struct tsr_host *host,
		  const struct os_hooks *hooks, const char *path,
		  const struct tsr_opt_val *vals);

#endif
