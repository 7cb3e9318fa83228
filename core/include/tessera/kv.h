/* tessera/kv.h — an ordered key/value store on disk (LevelDB underneath),
 * for everything that keeps small sorted metadata: backends' attributes,
 * omaps and extent maps, monitors' logs and maps.
 *
 * Conventions: keys and values are (pointer, length) byte strings, ordered
 * as unsigned bytes.  Every error names the store's path and what LevelDB
 * said; a damaged store is reported (paranoid checks are on), never
 * silently half-read.  A batch is applied atomically: after a crash either
 * all of it is there or none; with sync it is durable when tsr_kv_write
 * returns.  Values returned by tsr_kv_get are the caller's, released with
 * tsr_kv_free.  A store handle may be used from several threads; a batch
 * by one thread at a time.
 */
#ifndef TESSERA_KV_H
#define TESSERA_KV_H

#include <tessera/common.h>

TSR_BEGIN_DECLS

struct tsr_kv;
struct tsr_kv_batch;

/* How tsr_kv_open treats a directory that holds no store.
 *
 * A store is only ever made where there is nothing to lose: an absent or
 * empty directory (LevelDB's own LOCK and LOG, which it writes before it
 * looks for a store, count as nothing).  A directory that holds other
 * files but no CURRENT is a damaged store (CURRENT names the manifest that
 * names the tables; without it LevelDB would start a new store and delete
 * the old tables as garbage) or someone else's data: it is refused with
 * -EIO in either mode, naming the path and what is missing, and left as it
 * is.  That rule lives here so that every store the project opens — the
 * monitors', the backends' metadata, later daemons' — gets it. */
enum tsr_kv_mode {
	TSR_KV_OPEN = 0,   /* open the store that is there: -ENOENT when the
			      directory is absent or empty */
	TSR_KV_CREATE = 1  /* the same, but make a new store in an absent or
			      empty directory (mkfs, a daemon's first start) */
};

/* Open the store at path (a directory), as mode says.  -ENOENT when there
 * is none (TSR_KV_OPEN), -EIO for a damaged store. */
TSR_API int tsr_kv_open(const char *path, enum tsr_kv_mode mode,
			struct tsr_kv **out, char *err, size_t errlen);

/* How a store uses memory, for tsr_kv_open_tuned; zero fields keep
 * LevelDB's defaults. */
struct tsr_kv_tuning {
	/* Bytes of changes kept in memory before they are written out as a
	 * sorted table (LevelDB's write_buffer_size, 4 MiB by default).  A
	 * store written all the time (an object store's metadata) gains
	 * from more: each table written is merged into the levels below
	 * later, and fewer, larger ones cost that merging less CPU.  Up to
	 * twice this is held while one buffer is written out. */
	size_t write_buffer;
	/* 1: tables are written uncompressed (LevelDB compresses their
	 * blocks with Snappy by default).  Either way tables written with
	 * the other setting are read as before. */
	int uncompressed;
};

/* tsr_kv_open with tuning (NULL: the defaults). */
TSR_API int tsr_kv_open_tuned(const char *path, enum tsr_kv_mode mode,
			      const struct tsr_kv_tuning *tuning,
			      struct tsr_kv **out, char *err, size_t errlen);
TSR_API void tsr_kv_close(struct tsr_kv *kv);

/* -ENOENT when the key is absent. */
TSR_API int tsr_kv_get(struct tsr_kv *kv, const void *key, size_t klen,
		       void **val, size_t *vlen, char *err, size_t errlen);
TSR_API void tsr_kv_free(void *val);

TSR_API struct tsr_kv_batch *tsr_kv_batch_create(void);
TSR_API void tsr_kv_batch_put(struct tsr_kv_batch *b, const void *key,
			      size_t klen, const void *val, size_t vlen);
TSR_API void tsr_kv_batch_del(struct tsr_kv_batch *b, const void *key,
			      size_t klen);
TSR_API void tsr_kv_batch_clear(struct tsr_kv_batch *b);
TSR_API void tsr_kv_batch_destroy(struct tsr_kv_batch *b);
TSR_API int tsr_kv_write(struct tsr_kv *kv, struct tsr_kv_batch *b, int sync,
			 char *err, size_t errlen);

/* Visit keys in [start, end) in order (end NULL: to the last key).  cb
 * returning non-zero stops the scan, which then returns that value. */
typedef int (*tsr_kv_scan_cb)(void *arg, const void *key, size_t klen,
			      const void *val, size_t vlen);
TSR_API int tsr_kv_scan(struct tsr_kv *kv, const void *start, size_t slen,
			const void *end, size_t elen, tsr_kv_scan_cb cb,
			void *arg, char *err, size_t errlen);

/* LevelDB's repair of a damaged store (closed); what it cannot recover is
 * lost, so callers verify their own invariants afterwards (fsck). */
TSR_API int tsr_kv_repair(const char *path, char *err, size_t errlen);

TSR_END_DECLS

#endif
