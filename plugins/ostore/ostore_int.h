/* ostore_int.h — what the object-store engine's files share among
 * themselves (ostore.h is what the backends see): key layout helpers,
 * the onode record, reading stored chunks, and the overlay's entry points
 * the commit thread calls.  Nothing here leaves the engine.
 *
 *     ostore.c   set-up, logging, names for messages
 *     keys.c     the LevelDB key layout (ostore.h draws it)
 *     records.c  superblock, onode and chunk-map records; the key/value
 *                part of journal records
 *     overlay.c  preparing transactions against the store (the overlay),
 *                finishing chunks and emitting key/value changes
 *     reads.c    reading stored chunks, and the ABI's read operations
 *     fsck.c     the engine's checks
 *     commit.c   the queue, group commit, submit and flush
 */
#ifndef TSR_OSTORE_INT_H
#define TSR_OSTORE_INT_H

#include "ostore.h"

#include <stdint.h>
#include <string.h>

#define LOG_ERR TSR_LOG_ERROR
#define LOG_WARN TSR_LOG_WARN
#define LOG_INFO TSR_LOG_INFO

/* ---- Keys (keys.c) ------------------------------------------------------*/

#define CID_LEN 16
#define KEY_MAX OS_KEY_MAX

static inline void
be64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (56 - 8 * i));
}

static inline void
be32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (24 - 8 * i));
}

static inline uint64_t
get_be64(const uint8_t *b)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

static inline uint32_t
get_be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

void os_cid_put(uint8_t *b, const struct tsr_coll_id *c);
void os_cid_get(const uint8_t *b, struct tsr_coll_id *c);
/* 'L' cid */
size_t os_key_coll(uint8_t *k, const struct tsr_coll_id *c);
/* 'O' cid name; with n 0 the collection's prefix */
size_t os_key_obj(uint8_t *k, const struct tsr_coll_id *c, const void *oid,
		  size_t n);
/* 'A'/'M' id key, or with key NULL the prefix */
size_t os_key_sub(uint8_t *k, char tag, uint64_t objid, const void *key,
		  size_t n);

/* ---- Records (records.c) -----------------------------------------------*/

struct onode {
	uint64_t objid;
	uint64_t size;
	uint64_t mtime;
};

uint8_t *os_onode_encode(const struct onode *o, size_t *len);
/* -EIO when damaged (objid 0 is never valid). */
int os_onode_decode(const void *p, size_t n, struct onode *o);

/* ---- Reading stored chunks (reads.c) -------------------------------------
 *
 * Both return -EIO after logging the object and offset when a checksum does
 * not match or stored bytes do not decompress: never bad data.  fd < 0 is
 * the error data_fd gave. */
int os_read_block(struct os *os, int fd, const char *name, uint64_t objid,
		  uint32_t cno, unsigned b, const struct os_cmeta *m,
		  uint8_t *out);
int os_read_zchunk(struct os *os, ZSTD_DCtx *dctx, int fd, const char *name,
		   uint64_t objid, uint32_t cno, const struct os_cmeta *m,
		   uint8_t *out);
/* An inline chunk (m->inl valid): checked, and the whole chunk into out. */
int os_read_ichunk(struct os *os, const char *name, uint64_t objid,
		   uint32_t cno, const struct os_cmeta *m, uint8_t *out);

/* ---- The overlay (overlay.c), as the commit thread uses it ---------------*/

void os_prep_init(struct os_prep *p, struct os *os, uint64_t now,
		  ZSTD_CCtx *cctx, ZSTD_DCtx *dctx);
/* Prepare one queued transaction into the overlay.  On failure the
 * overlay holds part of it and must be rebuilt without it. */
int os_prep_txn(struct os_prep *p, const struct os_pending *pd);
void os_prep_release(struct os_prep *p);
/* Room for the overlay's worst case on disk? */
int os_room_for(struct os *os, const struct os_prep *p);

#endif
