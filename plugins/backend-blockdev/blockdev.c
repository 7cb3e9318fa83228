/* blockdev.c — the "blockdev" backend: object data on a raw block device or
 * one large image file, metadata in LevelDB (the engine's, ostore.h) and a
 * write-ahead journal in a directory of their own.
 *
 *     device:      [superblock 4 KiB | ... | data area from 1 MiB, 4 KiB blocks]
 *     meta_path/   LevelDB: onodes, attributes, omap, chunk maps whose
 *                  entries say which data blocks hold each chunk
 *     meta_path/journal   write-ahead journal (journal.h)
 *
 * Copy on write.  Data never overwrites data that a committed map points
 * to: every block the engine's overlay changed goes to free blocks, and a
 * commit is
 *
 *     allocate -> free blocks for every changed block (or compressed chunk)
 *     data     -> large batches: written with O_DIRECT and the device
 *                 synced now; small ones (deferred) ride in the record
 *     journal  -> one record: the new maps, metadata, deferred data; the
 *                 commit point (one O_DIRECT|O_DSYNC write)
 *     apply    -> deferred data to its new blocks and the metadata to
 *                 LevelDB, unsynced, under the write lock
 *     free     -> the old maps' blocks wait for the next checkpoint
 *
 * The first two are the engine's stage (bd_stage), which commit threads
 * run side by side for batches of different collections: the allocator is
 * shared under amu.  The rest is the seal (bd_seal), one at a time: one
 * record for every batch staged meanwhile.
 *
 * A checkpoint (journal full, mount, umount) syncs the device and LevelDB,
 * starts the journal afresh, and only then frees, discards and reuses the
 * blocks freed since the previous one (the discards on a thread of their
 * own, "Discards" below).  So within the records replay may
 * apply, no block is written twice: replaying them in any state gives the
 * same result, and a direct write can never be overwritten by an older
 * deferred one.  A crash before a record leaves the old maps pointing at
 * untouched blocks; the new ones were free and stay free.  The allocator
 * is rebuilt from the maps at mount, after replay.
 *
 * Small writes thus cost one synced write (the record) like a raw disk
 * write; large ones two (data, then record), and are written once.
 */
#include "errf.h"
#include "alloc.h"
#include "ostore/journal.h"
#include "mkfs.h"
#include "ostore/ostore.h"
#include "super.h"

#include <tessera/backend.h>
#include <tessera/crc32c.h>
#include <tessera/encoding.h>
#include <tessera/kv.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define LOG_ERR TSR_LOG_ERROR
#define LOG_INFO TSR_LOG_INFO
#define LOG_WARN TSR_LOG_WARN

/* ---- Options ------------------------------------------------------------*/

enum { OPT_PATH, OPT_META, OPT_SIZE, OPT_FORCE, OPT_ZERO, OPT_JOURNAL,
       OPT_COMMON };

static const struct tsr_opt_def bd_options[] = {
	[OPT_PATH] = { .name = "path", .type = TSR_OPT_STRING,
		       .flags = TSR_OPT_REQUIRED,
		       .help = "block device or image file holding the data" },
	[OPT_META] = { .name = "meta_path", .type = TSR_OPT_STRING, .def = "",
		       .help = "directory for the metadata store (default: PATH.meta; required for a block device)" },
	[OPT_SIZE] = { .name = "size", .type = TSR_OPT_SIZE, .def = "0",
		       .min = "0",
		       .help = "mkfs of an image file: create it with this size (0: use the existing file)" },
	[OPT_FORCE] = { .name = "force", .type = TSR_OPT_BOOL, .def = "false",
			.help = "mkfs: overwrite a device or file that holds data" },
	[OPT_ZERO] = { .name = "zero_fill", .type = TSR_OPT_BOOL, .def = "false",
		       .help = "mkfs of an image file: write zeros over it, so writes never wait for the file system to allocate (slow for large images)" },
	[OPT_JOURNAL] = { .name = "journal_size", .type = TSR_OPT_SIZE,
			  .def = "128M", .min = "1M", .max = "64G",
			  .help = "size of the write-ahead journal in meta_path, set at mkfs" },
	OS_COMMON_OPTIONS,
	{ .name = NULL },
};

/* ---- The instance -----------------------------------------------------------*/

struct bdev {
	struct os os;
	char dev_path[4096];
	uint64_t size;
	int force, zero_fill;
	int fd;                /* reads and the sync */
	int dio;               /* O_DIRECT writes, or -1 */
	int is_blk;
	int no_discard;        /* the device refused a discard once */
	struct bd_super dsb;
	uint64_t nblocks;
	struct bd_alloc *alloc;  /* under amu: commit threads take from it */
	pthread_mutex_t amu;
	uint64_t journal_size;
	struct jr *jr;           /* the seal's (one at a time) */
	/* freed since the last checkpoint: reused only after the next (the
	 * seal's, or an os_exclusive caller's) */
	struct bd_extent *quar;
	size_t nquar, qcap;
	uint64_t nquar_blocks;
	/* free blocks, quarantine and discards included, as readers and the
	 * ENOSPC check may see them: stored (atomically) under the write lock */
	uint64_t space_free;
	/* freed at a checkpoint, waiting for the discarder (under amu) */
	struct {
		pthread_t thr;
		int running, stop;
		int busy;        /* an extent is being discarded */
		pthread_cond_t cond, idle;
		struct bd_extent *v;
		size_t n, cap;
		uint64_t blocks; /* in v and in the discard under way */
	} dq;
};

/* Batches with at most this much data carry it in their journal record. */
#define DEFERRED_MAX (256u << 10)

enum { P_DEVWRITE = 1 };

static struct bdev *
B(struct os *os)
{
	return (struct bdev *)os;
}

static uint64_t
blk_off(const struct bdev *bd, uint64_t blk)
{
	return bd->dsb.data_offset + blk * OS_BLOCK;
}

/* ---- Committing an overlay ---------------------------------------------*/

struct bwrite {
	uint64_t blk;          /* device block */
	const uint8_t *p;      /* block-aligned */
	uint32_t nblk;
};

/* What blockdev keeps of an overlay from stage to unstage (os_prep.be). */
struct bcommit {
	struct bdev *bd;
	struct tsr_enc k;          /* its key/value operations for the record */
	uint32_t nk;
	struct bd_extent *taken;   /* allocated here: given back on failure */
	size_t ntaken, tcap;
	struct bd_extent *freed;   /* held by the old maps: quarantined */
	size_t nfreed, fcap;
	struct bwrite *w;
	size_t nw, wcap;
	uint8_t **owned;           /* aligned copies of compressed chunks */
	size_t nowned, ocap;
	int deferred;              /* its data rides in the record */
	int rc;
	char err[512];
};

static int
grow(void **arr, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 32;
	void *na = realloc(*arr, ncap * size);
	if (na == NULL)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

static void
plan_kv(struct bcommit *bc, int op, const void *k, size_t kl, const void *v,
	size_t vl)
{
	os_rec_kv(&bc->k, &bc->nk, op, k, kl, v, vl);
}

static int
add_freed(struct bcommit *bc, uint64_t start, uint64_t count)
{
	if (grow((void **)&bc->freed, &bc->fcap, bc->nfreed, sizeof(*bc->freed)) < 0)
		return -ENOMEM;
	bc->freed[bc->nfreed++] = (struct bd_extent){ start, count };
	return 0;
}

static int
add_write(struct bcommit *bc, uint64_t blk, const uint8_t *p, uint32_t nblk)
{
	if (grow((void **)&bc->w, &bc->wcap, bc->nw, sizeof(*bc->w)) < 0)
		return -ENOMEM;
	bc->w[bc->nw++] = (struct bwrite){ blk, p, nblk };
	return 0;
}

/* Take n blocks as at most max extents; they are recorded for rollback. */
static int
take(struct bcommit *bc, uint64_t n, struct bd_extent *ext, uint32_t max,
     uint32_t *next)
{
	int rc;

	pthread_mutex_lock(&bc->bd->amu);
	rc = bd_alloc_take(bc->bd->alloc, n, ext, max, next);
	pthread_mutex_unlock(&bc->bd->amu);
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < *next; i++) {
		if (grow((void **)&bc->taken, &bc->tcap, bc->ntaken,
			 sizeof(*bc->taken)) < 0)
			return -ENOMEM;
		bc->taken[bc->ntaken++] = ext[i];
	}
	return 0;
}

static uint32_t
zblocks(uint32_t stored)
{
	return (stored + OS_BLOCK - 1) / OS_BLOCK;
}

/* The stored blocks a map holds, into freed. */
static int
free_map(struct bcommit *bc, const struct os_cmeta *m, uint16_t which)
{
	if (!m->present || !m->has_loc)
		return 0;
	if (m->kind == OS_CHUNK_ZSTD)
		return which ? add_freed(bc, m->loc[0], zblocks(m->stored)) : 0;
	for (unsigned b = 0; b < OS_BPC; b++)
		if ((which & (1u << b)) && !(m->zero & (1u << b)) &&
		    add_freed(bc, m->loc[b], 1) < 0)
			return -ENOMEM;
	return 0;
}

/* Turn a compressed result back into a raw one (all blocks are loaded
 * when compressing); what the old map held stays as computed. */
static void
store_raw(const struct os_chunk *c, struct os_chunk_out *out)
{
	os_chunk_out_release(out);
	memset(&out->m, 0, sizeof(out->m));
	out->m.present = 1;
	out->m.kind = OS_CHUNK_RAW;
	out->m.has_loc = 1;
	out->write = 0;
	for (unsigned b = 0; b < OS_BPC; b++) {
		const uint8_t *blk = c->buf + b * OS_BLOCK;
		int zero = 1;
		for (unsigned i = 0; i < OS_BLOCK && zero; i++)
			zero = blk[i] == 0;
		if (zero) {
			out->m.zero |= (uint16_t)(1u << b);
		} else {
			out->m.crc[b] = tsr_crc32c(0, blk, OS_BLOCK);
			out->write |= (uint16_t)(1u << b);
		}
	}
}

static int
store_chunk(struct os_prep *p, struct bcommit *bc, struct os_file *f,
	    struct os_chunk *c)
{
	struct os_chunk_out out;
	struct bd_extent ext[OS_BPC];
	uint32_t next;
	uint8_t k[16];
	size_t kl = os_key_chunk(k, f->objid, c->no), vl;
	int rc = os_chunk_finish(p, f, c, &out);

	if (rc < 0)
		return rc;
	if ((rc = free_map(bc, &c->base, out.was_stored)) < 0)
		goto out;
	if (out.delete_map) {
		plan_kv(bc, OS_KV_DEL, k, kl, NULL, 0);
		goto out;
	}
	/* an inline chunk's data is in its map: no blocks, no locations */
	out.m.has_loc = out.m.kind != OS_CHUNK_INLINE;
	/* compressed bytes need one run of blocks; with none that long
	 * (fragmented space), the chunk is stored raw */
	if (out.m.kind == OS_CHUNK_ZSTD &&
	    (rc = take(bc, zblocks(out.m.stored), ext, 1, &next)) < 0) {
		if (rc != -ENOSPC)
			goto out;
		store_raw(c, &out);
		rc = 0;
	}
	if (out.m.kind == OS_CHUNK_ZSTD) {
		uint32_t n = zblocks(out.m.stored);
		uint8_t *z;

		if (posix_memalign((void **)&z, OS_BLOCK, (size_t)n * OS_BLOCK) != 0 ||
		    grow((void **)&bc->owned, &bc->ocap, bc->nowned, sizeof(z)) < 0) {
			rc = -ENOMEM;
			goto out;
		}
		bc->owned[bc->nowned++] = z;
		memcpy(z, out.z, out.m.stored);
		memset(z + out.m.stored, 0, (size_t)n * OS_BLOCK - out.m.stored);
		out.m.loc[0] = ext[0].start;
		rc = add_write(bc, ext[0].start, z, n);
		p->data_bytes += (uint64_t)n * OS_BLOCK;
	} else {
		unsigned want = (unsigned)__builtin_popcount(out.write);
		unsigned b = 0;

		if (want && (rc = take(bc, want, ext, OS_BPC, &next)) < 0)
			goto out;
		/* hand the extents out to the blocks in order; a run of
		 * blocks adjacent in the chunk and on the device is one write */
		for (uint32_t e = 0; want && e < next && rc == 0; e++) {
			for (uint64_t i = 0; i < ext[e].count && rc == 0; i++) {
				while (!(out.write & (1u << b)))
					b++;
				out.m.loc[b] = ext[e].start + i;
				if (bc->nw && bc->w[bc->nw - 1].blk + bc->w[bc->nw - 1].nblk ==
						      out.m.loc[b] &&
				    bc->w[bc->nw - 1].p + (size_t)bc->w[bc->nw - 1].nblk * OS_BLOCK ==
					    c->buf + b * OS_BLOCK)
					bc->w[bc->nw - 1].nblk++;
				else
					rc = add_write(bc, out.m.loc[b], c->buf + b * OS_BLOCK, 1);
				b++;
			}
		}
		p->data_bytes += (uint64_t)want * OS_BLOCK;
	}
	if (rc == 0) {
		uint8_t *v = os_cmeta_encode(&out.m, &vl);
		if (v == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		plan_kv(bc, OS_KV_PUT, k, kl, v, vl);
		free(v);
	}
out:
	os_chunk_out_release(&out);
	return rc;
}

/* Old maps inside the overlay's deleted ranges of chunk keys: their blocks
 * are freed with the commit. */
static int
free_scanned(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct bcommit *bc = arg;
	struct os_cmeta m;

	(void)k;
	if (kl != 13 || os_cmeta_decode(v, vl, &m) < 0)
		return 0; /* a damaged map frees nothing; fsck reports it */
	return free_map(bc, &m, 0xffff) < 0 ? -ENOMEM : 0;
}

static void
batch_emit(void *arg, int op, const void *k, size_t kl, const void *v,
	   size_t vl)
{
	struct bcommit *bc = arg;

	if (bc->rc < 0)
		return;
	if (op == OS_KV_PUT) {
		plan_kv(bc, OS_KV_PUT, k, kl, v, vl);
	} else if (op == OS_KV_DEL) {
		plan_kv(bc, OS_KV_DEL, k, kl, NULL, 0);
	} else {
		/* a range: the maps in it give their blocks back */
		if (kl > 0 && ((const uint8_t *)k)[0] == 'C')
			bc->rc = tsr_kv_scan(bc->bd->os.kv, k, kl, v, vl, free_scanned,
					     bc, bc->err, sizeof(bc->err));
		plan_kv(bc, OS_KV_DELRANGE, k, kl, v, vl);
	}
}

static int
write_all(struct bcommit *bc)
{
	struct bdev *bd = bc->bd;
	struct iovec iov[64];

	for (size_t i = 0; i < bc->nw;) {
		uint64_t blk = bc->w[i].blk, end = blk;
		int n = 0;

		while (i < bc->nw && n < 64 && bc->w[i].blk == end) {
			iov[n].iov_base = (void *)bc->w[i].p;
			iov[n++].iov_len = (size_t)bc->w[i].nblk * OS_BLOCK;
			end += bc->w[i].nblk;
			i++;
		}
		uint64_t off = blk_off(bd, blk);
		int rc = os_pwritev_full(bd->dio >= 0 ? bd->dio : bd->fd, iov, n, off);
		if (rc < 0)
			return errf(bc->err, sizeof(bc->err), rc, "%s: write at %" PRIu64
				    ": %s", bd->dev_path, off, strerror(-rc));
	}
	if (bc->nw && fdatasync(bd->fd) < 0)
		return errf(bc->err, sizeof(bc->err), -errno, "%s: sync: %s",
			    bd->dev_path, strerror(errno));
	return 0;
}

static int
cmp_write(const void *a, const void *b)
{
	const struct bwrite *x = a, *y = b;

	return x->blk < y->blk ? -1 : x->blk > y->blk;
}

/* ---- Discards ---------------------------------------------------------------
 *
 * The blocks a checkpoint frees go to the discarder thread, which tells the
 * device they hold nothing (thin provisioning, SSD wear, a sparse image
 * file's space) and only then hands them back to the allocator: a discard
 * that came after the blocks' reuse would destroy the new data.  A discard
 * can be slow -- on an image file whose file system is mounted with
 * -o discard, each punched hole waits for the disk -- and done inline, under
 * the write lock and in the seal that found the journal full, thousands of
 * them held every commit and read of the store for tens of seconds.  An
 * extent is discarded DISCARD_PIECE blocks at a time, so that a punch,
 * which holds the image file's inode, never keeps an apply's write to it
 * waiting long.  When a commit runs out of space, the extents still
 * waiting go back to the allocator undiscarded, after the discard under
 * way (discard_skip).  The ones waiting at umount are not
 * discarded: the next mount finds them free and unreferenced. */

/* Tell the device a freed extent holds nothing; refused discards are
 * remembered and not tried again. */
static void
discard(struct bdev *bd, const struct bd_extent *e)
{
	uint64_t off = blk_off(bd, e->start), len = e->count * OS_BLOCK;
	int rc;

	/* an image file written with zeros at mkfs stays fully allocated:
	 * punching it would bring back the allocation cost zero_fill avoids */
	if (bd->no_discard || (!bd->is_blk && bd->zero_fill))
		return;
	if (bd->is_blk) {
		uint64_t range[2] = { off, len };
		rc = ioctl(bd->fd, BLKDISCARD, range);
	} else {
		rc = fallocate(bd->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       (off_t)off, (off_t)len);
	}
	if (rc < 0)
		bd->no_discard = 1;
}

/* Give e back to the allocator; call with amu held. */
static void
release_locked(struct bdev *bd, const struct bd_extent *e)
{
	if (bd->alloc != NULL && bd_alloc_release(bd->alloc, e->start, e->count) < 0)
		os_log(&bd->os, LOG_ERR, "%s: freeing blocks %" PRIu64 "+%" PRIu64
		       " twice (run fsck)", bd->dev_path, e->start, e->count);
}

#define DISCARD_PIECE 1024u /* blocks: 4 MiB */

static void *
discarder(void *arg)
{
	struct bdev *bd = arg;

	pthread_mutex_lock(&bd->amu);
	for (;;) {
		struct bd_extent e;

		while (bd->dq.n == 0 && !bd->dq.stop)
			pthread_cond_wait(&bd->dq.cond, &bd->amu);
		if (bd->dq.stop)
			break;
		e = bd->dq.v[bd->dq.n - 1];
		if (e.count > DISCARD_PIECE) {
			/* the rest stays waiting */
			bd->dq.v[bd->dq.n - 1].start += DISCARD_PIECE;
			bd->dq.v[bd->dq.n - 1].count -= DISCARD_PIECE;
			e.count = DISCARD_PIECE;
		} else {
			bd->dq.n--;
		}
		bd->dq.busy = 1;
		pthread_mutex_unlock(&bd->amu);
		discard(bd, &e);
		pthread_mutex_lock(&bd->amu);
		release_locked(bd, &e);
		bd->dq.blocks -= e.count;
		bd->dq.busy = 0;
		pthread_cond_broadcast(&bd->dq.idle);
	}
	pthread_mutex_unlock(&bd->amu);
	return NULL;
}

/* Start the discarder when this store discards at all: an image file
 * written with zeros at mkfs stays fully allocated (discard() says why). */
static void
discarder_start(struct bdev *bd)
{
	if (bd->no_discard || (!bd->is_blk && bd->zero_fill))
		return;
	bd->dq.stop = 0;
	if (pthread_create(&bd->dq.thr, NULL, discarder, bd) == 0)
		bd->dq.running = 1; /* else freed blocks are released undiscarded */
}

/* Stop it; extents still waiting are dropped (see above). */
static void
discarder_stop(struct bdev *bd)
{
	if (bd->dq.running) {
		pthread_mutex_lock(&bd->amu);
		bd->dq.stop = 1;
		pthread_cond_signal(&bd->dq.cond);
		pthread_mutex_unlock(&bd->amu);
		pthread_join(bd->dq.thr, NULL);
		bd->dq.running = 0;
	}
	free(bd->dq.v);
	bd->dq.v = NULL;
	bd->dq.n = bd->dq.cap = 0;
	bd->dq.blocks = 0;
}

/* Everything waiting for a discard goes back to the allocator now, and
 * the piece being discarded once it is; 1 when something did.  Call with
 * amu held. */
static int
discard_skip(struct bdev *bd)
{
	int any = bd->dq.n > 0 || bd->dq.busy;

	/* the waiting ones first: the discarder then finds nothing more */
	for (size_t i = 0; i < bd->dq.n; i++) {
		release_locked(bd, &bd->dq.v[i]);
		bd->dq.blocks -= bd->dq.v[i].count;
	}
	bd->dq.n = 0;
	while (bd->dq.busy)
		pthread_cond_wait(&bd->dq.idle, &bd->amu);
	return any;
}

static int
extent_cmp(const void *a, const void *b)
{
	const struct bd_extent *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Hand the quarantine to the discarder, sorted and with neighbours merged
 * (a thousand small objects removed together are one discard), or straight
 * to the allocator when no discarder runs.  Call with amu held. */
static void
free_quarantine(struct bdev *bd)
{
	size_t m = 0;

	if (bd->nquar == 0)
		return; /* quar may be NULL, which qsort must not see */
	qsort(bd->quar, bd->nquar, sizeof(*bd->quar), extent_cmp);
	for (size_t i = 0; i < bd->nquar; i++) {
		if (m > 0 && bd->quar[m - 1].start + bd->quar[m - 1].count == bd->quar[i].start)
			bd->quar[m - 1].count += bd->quar[i].count;
		else
			bd->quar[m++] = bd->quar[i];
	}
	for (size_t i = 0; i < m; i++) {
		if (bd->dq.running &&
		    grow((void **)&bd->dq.v, &bd->dq.cap, bd->dq.n, sizeof(*bd->dq.v)) == 0) {
			bd->dq.v[bd->dq.n++] = bd->quar[i];
			bd->dq.blocks += bd->quar[i].count;
		} else {
			release_locked(bd, &bd->quar[i]);
		}
	}
	if (bd->dq.n > 0)
		pthread_cond_signal(&bd->dq.cond);
}

/* Apply a record (live, and at replay): deferred data to its blocks, the
 * key/value operations in one unsynced LevelDB batch.  Reads nothing it
 * writes, so applying it again, from any state, ends the same. */
static int
apply_plan(struct bdev *bd, const void *buf, size_t len, char *err,
	   size_t errlen)
{
	struct tsr_dec d, sub;
	struct tsr_kv_batch *b;
	uint8_t ver;
	uint32_t n;
	int rc = 0;

	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return errf(err, errlen, -EBADMSG, "record: bad envelope");
	n = tsr_dec_u32(&sub);
	for (uint32_t i = 0; i < n && rc == 0 && !tsr_dec_error(&sub); i++) {
		uint64_t blk = tsr_dec_u64(&sub);
		const void *data;
		size_t dl;

		tsr_dec_bytes(&sub, &data, &dl, DEFERRED_MAX);
		if (tsr_dec_error(&sub))
			break;
		if (dl % OS_BLOCK || blk > bd->nblocks || dl / OS_BLOCK > bd->nblocks - blk) {
			tsr_dec_fail(&sub, -EBADMSG);
			break;
		}
		rc = os_pwrite_full(bd->fd, data, dl, blk_off(bd, blk));
		if (rc < 0)
			return errf(err, errlen, rc, "%s: deferred write at block %"
				    PRIu64 ": %s", bd->dev_path, blk, strerror(-rc));
	}
	if ((b = tsr_kv_batch_create()) == NULL)
		return -ENOMEM;
	rc = os_rec_kv_decode(&bd->os, &sub, b, err, errlen);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) != 0) {
		tsr_kv_batch_destroy(b);
		return errf(err, errlen, -EBADMSG, "record: malformed");
	}
	if (rc == 0)
		rc = tsr_kv_write(bd->os.kv, b, 0, err, errlen);
	tsr_kv_batch_destroy(b);
	return rc;
}

/* Call with the write lock held (or no reader possible). */
static void
publish_space(struct bdev *bd)
{
	uint64_t nfree;

	pthread_mutex_lock(&bd->amu);
	nfree = (bd->alloc ? bd_alloc_free_blocks(bd->alloc) : 0) + bd->nquar_blocks +
		bd->dq.blocks;
	pthread_mutex_unlock(&bd->amu);
	__atomic_store_n(&bd->space_free, nfree, __ATOMIC_RELAXED);
}

/* Everything applied becomes durable without the journal; then the
 * journal starts afresh and the quarantined blocks are free again, once
 * discarded. */
static int
checkpoint(struct bdev *bd, char *err, size_t errlen)
{
	int rc;

	if (fdatasync(bd->fd) < 0)
		return errf(err, errlen, -errno, "%s: sync: %s", bd->dev_path,
			    strerror(errno));
	if ((rc = os_super_store(&bd->os, 1, err, errlen)) < 0 ||
	    (rc = jr_checkpoint(bd->jr, err, errlen)) < 0)
		return rc;
	pthread_rwlock_wrlock(&bd->os.lock);
	pthread_mutex_lock(&bd->amu);
	free_quarantine(bd);
	pthread_mutex_unlock(&bd->amu);
	bd->nquar = 0;
	bd->nquar_blocks = 0;
	publish_space(bd);
	pthread_rwlock_unlock(&bd->os.lock);
	return 0;
}

/* Allocate and place the overlay's data, writing it in place when it is
 * more than its record should carry. */
static int
stage_once(struct os_prep *p, struct bcommit *bc)
{
	uint64_t bytes = 0;
	int rc;

	/* key/value changes in order: ranges, then the chunk maps, then the
	 * overlay's entries (kvov.h) */
	os_emit_ranges(p, batch_emit, bc);
	rc = bc->rc;
	for (size_t i = 0; i < p->nfiles && rc == 0; i++)
		for (size_t j = 0; j < p->files[i]->nchunks && rc == 0; j++)
			if (p->files[i]->chunks[j]->dirty)
				rc = store_chunk(p, bc, p->files[i], p->files[i]->chunks[j]);
	if (rc == 0 && (rc = os_emit_entries(p, batch_emit, bc)) == 0)
		rc = bc->rc;
	if (rc == 0 && bc->nw > 1)
		qsort(bc->w, bc->nw, sizeof(*bc->w), cmp_write);
	for (size_t i = 0; i < bc->nw; i++)
		bytes += (uint64_t)bc->w[i].nblk * OS_BLOCK;
	/* small overlays carry their data in the record: one synced write;
	 * large ones write it in place first and sync the device */
	bc->deferred = bytes <= DEFERRED_MAX;
	if (rc == 0 && !bc->deferred)
		rc = write_all(bc);
	if (rc == 0)
		rc = tsr_enc_error(&bc->k);
	p->rec_bytes = bc->k.len + (bc->deferred ? bytes : 0);
	return rc;
}

/* Give back what stage_once took and forget what it did. */
static void
bcommit_reset(struct bcommit *bc)
{
	struct bdev *bd = bc->bd;

	pthread_mutex_lock(&bd->amu);
	for (size_t i = 0; i < bc->ntaken; i++) /* not committed: still free */
		bd_alloc_release(bd->alloc, bc->taken[i].start, bc->taken[i].count);
	pthread_mutex_unlock(&bd->amu);
	for (size_t i = 0; i < bc->nowned; i++)
		free(bc->owned[i]);
	tsr_enc_release(&bc->k);
	free(bc->owned);
	free(bc->taken);
	free(bc->freed);
	free(bc->w);
	*bc = (struct bcommit){ .bd = bd };
	tsr_enc_init(&bc->k);
}

/* A checkpoint when blocks wait in quarantine, and the blocks waiting
 * for a discard back to the allocator undiscarded (os_exclusive: no seal
 * runs); 1 when it freed some, 0 when there were none. */
static int
checkpoint_for_space(struct os *os, void *arg)
{
	struct bdev *bd = B(os);
	char err[512];
	int freed = 0;

	(void)arg;
	if (bd->nquar > 0) {
		if (checkpoint(bd, err, sizeof(err)) < 0) {
			os_log(os, LOG_ERR, "%s", err);
			return -EIO;
		}
		freed = 1;
	}
	pthread_mutex_lock(&bd->amu);
	freed |= discard_skip(bd);
	pthread_mutex_unlock(&bd->amu);
	return freed;
}

/* The engine's stage hook. */
static int
bd_stage(struct os *os, struct os_prep *p)
{
	struct bdev *bd = B(os);
	struct bcommit *bc = calloc(1, sizeof(*bc));
	int rc;

	if (bc == NULL)
		return -ENOMEM;
	bc->bd = bd;
	tsr_enc_init(&bc->k);
	p->be = bc;
	rc = stage_once(p, bc);
	/* blocks freed since the last checkpoint count as free space (see
	 * bd_space): when they are what is missing, a checkpoint frees them */
	if (rc == -ENOSPC) {
		bcommit_reset(bc);
		rc = os_exclusive(os, checkpoint_for_space, NULL);
		if (rc == 1)
			rc = stage_once(p, bc);
		else if (rc == 0)
			rc = -ENOSPC;
	}
	if (rc < 0 && rc != -ENOSPC && rc != -EFBIG && bc->err[0])
		os_log(os, LOG_ERR, "%s", bc->err);
	return rc == -ENOSPC || rc == -ENOMEM || rc == -EFBIG ? rc : rc < 0 ? -EIO : 0;
}

/* Journal and apply the staged overlays ps[0..n) as one record: 0 or a
 * negative errno for all of them. */
static int
seal_group(struct os *os, struct os_prep *const *ps, size_t n)
{
	struct bdev *bd = B(os);
	struct os_super sb;
	int with_sb = os_seal_super(os, ps, n, &sb);
	struct tsr_enc e, sk;
	uint32_t nw = 0, nk = 0, nsk = 0;
	uint64_t seq;
	uint8_t *rec = NULL;
	size_t rlen = 0, mark;
	char err[512] = "";
	int rc = 0;

	tsr_enc_init(&sk);
	if (with_sb) {
		size_t sl;
		uint8_t *sv = os_super_encode(&sb, os->hooks->magic, &sl);
		if (sv == NULL)
			return -ENOMEM;
		os_rec_kv(&sk, &nsk, OS_KV_PUT, "S", 1, sv, sl);
		free(sv);
	}
	for (size_t i = 0; i < n; i++) {
		struct bcommit *bc = ps[i]->be;
		if (bc->deferred)
			nw += (uint32_t)bc->nw;
		nk += bc->nk;
	}
	tsr_enc_init(&e);
	mark = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u32(&e, nw);
	for (size_t i = 0; i < n; i++) {
		struct bcommit *bc = ps[i]->be;
		for (size_t j = 0; bc->deferred && j < bc->nw; j++) {
			tsr_enc_u64(&e, bc->w[j].blk);
			tsr_enc_bytes(&e, bc->w[j].p, (size_t)bc->w[j].nblk * OS_BLOCK);
		}
	}
	tsr_enc_u32(&e, nk + nsk);
	for (size_t i = 0; i < n; i++) {
		struct bcommit *bc = ps[i]->be;
		tsr_enc_raw(&e, bc->k.buf, bc->k.len);
	}
	tsr_enc_raw(&e, sk.buf, sk.len);
	tsr_enc_end_struct(&e, mark);
	rc = tsr_enc_error(&sk) ? tsr_enc_error(&sk) : tsr_enc_error(&e);
	tsr_enc_release(&sk);
	if (rc == 0 && (rec = tsr_enc_take(&e, &rlen)) == NULL)
		rc = -ENOMEM;
	tsr_enc_release(&e);
	if (rc == 0) {
		rc = jr_append(bd->jr, rec, rlen, &seq, err, sizeof(err));
		if (rc == -ENOSPC && (rc = checkpoint(bd, err, sizeof(err))) == 0)
			rc = jr_append(bd->jr, rec, rlen, &seq, err, sizeof(err));
		if (rc == -E2BIG)
			rc = -EFBIG;
	}
	if (rc < 0) {
		if (rc != -ENOSPC && rc != -EFBIG && err[0])
			os_log(os, LOG_ERR, "%s", err);
		free(rec);
		return rc == -ENOSPC || rc == -ENOMEM || rc == -EFBIG ? rc : -EIO;
	}
	/* committed; the old blocks wait for the next checkpoint */
	pthread_rwlock_wrlock(&os->lock);
	rc = apply_plan(bd, rec, rlen, err, sizeof(err));
	if (rc == 0)
		os->sb = sb;
	for (size_t i = 0; i < n; i++) {
		struct bcommit *bc = ps[i]->be;

		bc->ntaken = 0; /* the record holds them now */
		for (size_t j = 0; j < bc->nfreed; j++) {
			if (grow((void **)&bd->quar, &bd->qcap, bd->nquar,
				 sizeof(*bd->quar)) < 0) {
				/* not freed until the next mount: a leak, not a loss */
				break;
			}
			bd->quar[bd->nquar++] = bc->freed[j];
			bd->nquar_blocks += bc->freed[j].count;
		}
	}
	publish_space(bd);
	pthread_rwlock_unlock(&os->lock);
	free(rec);
	if (rc < 0) {
		os->failed = 1;
		os_log(os, LOG_ERR, "%s: applying committed journal record %"
		       PRIu64 " failed (%s); the store is now read-only and the "
		       "record will be replayed at the next mount", bd->dev_path,
		       seq, err);
		return -EIO;
	}
	return 0;
}

/* The engine's seal hook: one record for all, unless together they are
 * more than a record holds; then one each. */
static void
bd_seal(struct os *os, struct os_prep **ps, size_t n, int *rcs)
{
	int rc = seal_group(os, ps, n);

	if (rc == -EFBIG && n > 1) {
		for (size_t i = 0; i < n; i++)
			rcs[i] = seal_group(os, &ps[i], 1);
		return;
	}
	for (size_t i = 0; i < n; i++)
		rcs[i] = rc;
}

/* The engine's unstage hook: what the overlay took goes back unless its
 * record holds it (seal_group cleared it then). */
static void
bd_unstage(struct os *os, struct os_prep *p, int committed)
{
	struct bcommit *bc = p->be;

	(void)os;
	(void)committed;
	if (bc == NULL)
		return;
	bcommit_reset(bc);
	free(bc);
	p->be = NULL;
}

/* ---- The engine's other hooks ---------------------------------------------*/

static int
bd_data_fd(struct os *os, uint64_t objid, int reader)
{
	(void)objid;
	if (reader == 2)
		return B(os)->dio >= 0 ? B(os)->dio : -EINVAL;
	return B(os)->fd;
}

static void
bd_data_fd_done(struct os *os, int fd, int reader)
{
	(void)os;
	(void)fd;
	(void)reader; /* the device stays open */
}

static uint64_t
bd_stored_off(struct os *os, const struct os_cmeta *m, uint32_t cno, unsigned b)
{
	(void)cno;
	return blk_off(B(os), m->kind == OS_CHUNK_ZSTD ? m->loc[0] : m->loc[b]);
}

static int
bd_space(struct os *os, uint64_t *total, uint64_t *avail)
{
	struct bdev *bd = B(os);

	*total = bd->nblocks * OS_BLOCK;
	*avail = __atomic_load_n(&bd->space_free, __ATOMIC_RELAXED) * OS_BLOCK;
	return 0;
}

/* ---- Mount: the allocator from the maps ----------------------------------*/

struct rebuild {
	struct bdev *bd;
	struct bd_alloc *a;
	uint64_t bad, first_bad_id;
	struct os_fsck *fsck;
};

static int
claim(struct rebuild *r, uint64_t objid, uint64_t start, uint64_t count)
{
	int rc = bd_alloc_mark_used(r->a, start, count);

	if (rc == 0)
		return 0;
	if (r->bad++ == 0)
		r->first_bad_id = objid;
	if (r->fsck)
		os_fsck_report(r->fsck, 0, "object id %" PRIu64 ": blocks %" PRIu64
			       "+%" PRIu64 " %s", objid, start, count,
			       rc == -EEXIST ? "are claimed twice"
					     : "lie past the end of the device");
	return 0;
}

static int
claim_map(struct rebuild *r, uint64_t objid, const struct os_cmeta *m)
{
	if (!m->present || !m->has_loc)
		return 0;
	if (m->kind == OS_CHUNK_ZSTD)
		return claim(r, objid, m->loc[0], zblocks(m->stored));
	for (unsigned b = 0; b < OS_BPC; b++)
		if (!(m->zero & (1u << b)))
			claim(r, objid, m->loc[b], 1);
	return 0;
}

static int
rebuild_one(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct rebuild *r = arg;
	struct os_cmeta m;
	uint64_t objid = 0;

	if (kl != 13)
		return 0;
	for (int i = 1; i < 9; i++)
		objid = objid << 8 | ((const uint8_t *)k)[i];
	if (os_cmeta_decode(v, vl, &m) < 0) {
		if (r->bad++ == 0)
			r->first_bad_id = objid;
		return 0;
	}
	return claim_map(r, objid, &m);
}

/* ---- mkfs, mount, umount -------------------------------------------------*/

/* Does the start of an existing file or device hold anything? */
static int
holds_data(const char *path)
{
	uint8_t buf[OS_BLOCK];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = pread(fd, buf, sizeof(buf), 0);
	close(fd);
	for (ssize_t i = 0; i < n; i++)
		if (buf[i])
			return 1;
	return 0;
}

static int
bd_mkfs_op(void *inst, char *err, size_t errlen)
{
	struct bdev *bd = inst;
	struct os *os = &bd->os;
	struct bd_mkfs_opts mo = { bd->size, OS_BLOCK, bd->force, bd->zero_fill };
	struct stat st;
	int rc;

	if (os->mounted)
		return errf(err, errlen, -EBUSY, "%s: store is mounted", bd->dev_path);
	if (stat(bd->dev_path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return errf(err, errlen, -EEXIST, "%s: is a directory, not a device "
				    "or image file", bd->dev_path);
		if (!bd->force && holds_data(bd->dev_path))
			return errf(err, errlen, -EEXIST, "%s: already holds data (a store "
				    "or something else); pass force=true to overwrite it",
				    bd->dev_path);
		if (S_ISREG(st.st_mode) && st.st_size > 0 && mo.size == 0)
			mo.size = 0; /* format the file as it is */
	} else if (bd->size == 0) {
		return errf(err, errlen, -ENOENT, "%s: does not exist; give size= to "
			    "create an image file", bd->dev_path);
	}
	if (stat(os->meta_path, &st) == 0 && (!S_ISDIR(st.st_mode) ||
					      !os_dir_is_empty(os->meta_path)))
		return errf(err, errlen, -EEXIST, "%s: the metadata directory already "
			    "exists and is not empty", os->meta_path);
	mo.force = 1; /* the checks above decided */
	if ((rc = bd_mkfs(bd->dev_path, &mo, &bd->dsb, err, errlen)) < 0)
		return rc;
	os_super_new(os, 1);
	memcpy(os->sb.uuid, bd->dsb.uuid, sizeof(os->sb.uuid));
	if ((rc = tsr_kv_open_tuned(os->meta_path, TSR_KV_CREATE,
				    &os->kv_tuning, &os->kv, err, errlen)) < 0)
		return rc;
	rc = os_super_store(os, 1, err, errlen);
	tsr_kv_close(os->kv);
	os->kv = NULL;
	if (rc == 0) {
		char jpath[sizeof(os->meta_path) + 16];
		int dfd = open(os->meta_path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
		snprintf(jpath, sizeof(jpath), "%s/journal", os->meta_path);
		rc = dfd < 0 ? errf(err, errlen, -errno, "%s: %s", os->meta_path,
				    strerror(errno))
			     : jr_create(dfd, "journal", jpath, bd->journal_size,
					 bd->dsb.uuid, err, errlen);
		if (dfd >= 0)
			close(dfd);
	}
	return rc;
}

static void
close_dev(struct bdev *bd)
{
	discarder_stop(bd);
	bd_alloc_destroy(bd->alloc);
	bd->alloc = NULL;
	jr_close(bd->jr);
	bd->jr = NULL;
	free(bd->quar);
	bd->quar = NULL;
	bd->nquar = bd->qcap = 0;
	bd->nquar_blocks = 0;
	bd->space_free = 0;
	if (bd->os.kv)
		tsr_kv_close(bd->os.kv);
	bd->os.kv = NULL;
	if (bd->dio >= 0)
		close(bd->dio);
	if (bd->fd >= 0)
		close(bd->fd);
	bd->fd = bd->dio = -1;
}

static int
replay_record(void *arg, uint64_t seq, const void *p, size_t n, int last)
{
	struct bdev *bd = arg;
	char err[512];

	(void)last; /* records are appended durably (jr_append) */
	int rc = apply_plan(bd, p, n, err, sizeof(err));

	if (rc < 0)
		os_log(&bd->os, LOG_ERR, "%s/journal: record %" PRIu64 ": %s",
		       bd->os.meta_path, seq, err);
	return rc;
}

/* Open the device and the metadata, check they belong together, replay
 * the journal, rebuild the allocator (unless fsck does that itself). */
static int
open_dev(struct bdev *bd, int rebuild, char *err, size_t errlen)
{
	struct os *os = &bd->os;
	struct stat st;
	int rc;

	bd->fd = open(bd->dev_path, O_RDWR | O_CLOEXEC);
	if (bd->fd < 0)
		return errf(err, errlen, -errno, "%s: %s%s", bd->dev_path,
			    strerror(errno),
			    errno == ENOENT ? " (no store here: run mkfs first)" : "");
	if (fstat(bd->fd, &st) == 0)
		bd->is_blk = S_ISBLK(st.st_mode);
	if ((rc = bd_super_read(bd->fd, bd->dev_path, &bd->dsb, err, errlen)) < 0)
		goto fail;
	if (bd->dsb.block_size != OS_BLOCK) {
		rc = errf(err, errlen, -EOPNOTSUPP, "%s: block size %u, this build "
			  "supports %u", bd->dev_path, bd->dsb.block_size, OS_BLOCK);
		goto fail;
	}
	bd->nblocks = (bd->dsb.device_bytes - bd->dsb.data_offset) / OS_BLOCK;
	if ((rc = tsr_kv_open_tuned(os->meta_path, TSR_KV_OPEN,
				    &os->kv_tuning, &os->kv, err, errlen)) < 0) {
		if (rc == -ENOENT)
			errf(err, errlen, -ENOENT, "%s: no metadata store (meta_path) for "
			     "the device %s", os->meta_path, bd->dev_path);
		goto fail;
	}
	if ((rc = os_super_load(os, err, errlen)) < 0)
		goto fail;
	if (memcmp(os->sb.uuid, bd->dsb.uuid, sizeof(os->sb.uuid)) != 0) {
		rc = errf(err, errlen, -EINVAL, "%s: the metadata store belongs to "
			  "another device than %s (uuid mismatch)", os->meta_path,
			  bd->dev_path);
		goto fail;
	}
	char jpath[sizeof(os->meta_path) + 16];
	uint64_t nrec = 0;
	snprintf(jpath, sizeof(jpath), "%s/journal", os->meta_path);
	if ((rc = jr_open(jpath, bd->dsb.uuid, &bd->jr, err, errlen)) < 0 ||
	    (rc = jr_replay(bd->jr, replay_record, bd, &nrec, err, errlen)) < 0)
		goto fail;
	char why[512];
	if (jr_dropped(bd->jr, why, sizeof(why)))
		os_log(os, LOG_WARN, "%s", why);
	if ((rc = os_super_load(os, err, errlen)) < 0 ||
	    (rc = checkpoint(bd, err, errlen)) < 0)
		goto fail;
	if (nrec)
		os_log(os, LOG_INFO, "%s: replayed %" PRIu64 " journal records",
		       bd->dev_path, nrec);
	if ((rc = bd_alloc_create(bd->nblocks, &bd->alloc)) < 0) {
		errf(err, errlen, rc, "%s: no allocator: %s", bd->dev_path, strerror(-rc));
		goto fail;
	}
	if (rebuild) {
		struct rebuild r = { bd, bd->alloc, 0, 0, NULL };
		rc = tsr_kv_scan(os->kv, "C", 1, "D", 1, rebuild_one, &r, err, errlen);
		if (rc == 0 && r.bad)
			rc = errf(err, errlen, -EIO, "%s: %" PRIu64 " chunk maps are "
				  "damaged or claim blocks twice (first: object id %"
				  PRIu64 "); run fsck", bd->dev_path, r.bad,
				  r.first_bad_id);
		if (rc < 0)
			goto fail;
	}
	bd->dio = open(bd->dev_path, O_RDWR | O_DIRECT | O_CLOEXEC);
	return 0;
fail:
	close_dev(bd);
	return rc;
}

static int
bd_mount(void *inst, char *err, size_t errlen)
{
	struct bdev *bd = inst;
	int rc;

	if (bd->os.mounted)
		return errf(err, errlen, -EBUSY, "%s: already mounted", bd->dev_path);
	if ((rc = open_dev(bd, 1, err, errlen)) < 0)
		return rc;
	bd->no_discard = 0;
	bd->os.batch_limit = jr_max_payload(bd->jr) / 4;
	publish_space(bd);
	discarder_start(bd);
	if ((rc = os_start(&bd->os, err, errlen)) < 0)
		close_dev(bd);
	return rc;
}

static int
bd_umount(void *inst)
{
	struct bdev *bd = inst;

	char err[512];
	int rc = 0;

	if (!bd->os.mounted)
		return -EINVAL;
	os_stop(&bd->os);
	discarder_stop(bd); /* the last checkpoint's frees are not discarded */
	if (!bd->os.failed && (rc = checkpoint(bd, err, sizeof(err))) < 0)
		os_log(&bd->os, LOG_ERR, "%s", err);
	close_dev(bd);
	return rc;
}

/* ---- fsck -------------------------------------------------------------------*/

static int
fsck_map(struct os_fsck *c, uint64_t objid, uint32_t cno,
	 const struct os_cmeta *m)
{
	struct rebuild *r = c->be;

	r->fsck = c; /* claim() reports through it */
	if (m->present && !m->has_loc && m->kind != OS_CHUNK_INLINE) {
		os_fsck_report(c, 0, "object id %" PRIu64 " chunk %u: map without "
			       "block locations", objid, cno);
		return 0;
	}
	return claim_map(r, objid, m);
}

static int
bd_fsck(void *inst, int repair, tsr_fsck_cb cb, void *arg)
{
	struct bdev *bd = inst;
	char err[512];
	int rc;

	if (bd->os.mounted)
		return -EBUSY;
	if ((rc = open_dev(bd, 0, err, sizeof(err))) < 0) {
		if (cb)
			cb(arg, err, 0);
		return rc;
	}
	/* replay dropped it, repair or not: the store is whole without it */
	if (jr_dropped(bd->jr, err, sizeof(err)) && cb)
		cb(arg, err, 1);
	struct rebuild r = { bd, bd->alloc, 0, 0, NULL };
	/* claim every map's blocks as fsck walks them: overlaps and blocks
	 * past the end are reported by claim() through r.fsck */
	rc = os_fsck_run(&bd->os, repair, cb, arg, fsck_map, &r);
	close_dev(bd);
	return rc;
}

/* ---- The plugin -------------------------------------------------------------*/

static const struct os_hooks bd_hooks = {
	.magic = "TSRBDEV1",
	.stage = bd_stage,
	.seal = bd_seal,
	.unstage = bd_unstage,
	.data_fd = bd_data_fd,
	.data_fd_done = bd_data_fd_done,
	.stored_off = bd_stored_off,
	.space = bd_space,
};

static int
bd_create(const struct tsr_host *host, const struct tsr_opts *opts,
	  void **instance, char *err, size_t errlen)
{
	const struct tsr_opt_val *v = opts->vals;
	const char *path = v[OPT_PATH].s, *meta = v[OPT_META].s;
	struct stat st;
	struct bdev *bd;

	if (path[0] == '\0' || strlen(path) + 8 >= sizeof(bd->dev_path))
		return errf(err, errlen, -EINVAL, "path: empty or too long");
	if (meta[0] == '\0' && stat(path, &st) == 0 && S_ISBLK(st.st_mode))
		return errf(err, errlen, -EINVAL, "meta_path: required when path (%s) "
			    "is a block device", path);
	if (strlen(meta) >= sizeof(bd->os.meta_path))
		return errf(err, errlen, -EINVAL, "meta_path: too long");
	bd = calloc(1, sizeof(*bd));
	if (bd == NULL)
		return errf(err, errlen, -ENOMEM, "out of memory");
	os_init_opts(&bd->os, host, &bd_hooks, path, &v[OPT_COMMON]);
	snprintf(bd->dev_path, sizeof(bd->dev_path), "%s", path);
	if (meta[0])
		snprintf(bd->os.meta_path, sizeof(bd->os.meta_path), "%s", meta);
	else
		snprintf(bd->os.meta_path, sizeof(bd->os.meta_path), "%s.meta", path);
	bd->size = (uint64_t)v[OPT_SIZE].i;
	bd->force = (int)v[OPT_FORCE].i;
	bd->zero_fill = (int)v[OPT_ZERO].i;
	bd->journal_size = (uint64_t)v[OPT_JOURNAL].i;
	bd->fd = bd->dio = -1;
	pthread_mutex_init(&bd->amu, NULL);
	pthread_cond_init(&bd->dq.cond, NULL);
	pthread_cond_init(&bd->dq.idle, NULL);
	*instance = bd;
	return 0;
}

static void
bd_destroy(void *inst)
{
	struct bdev *bd = inst;

	if (bd->os.mounted)
		bd_umount(bd);
	pthread_mutex_destroy(&bd->amu);
	pthread_cond_destroy(&bd->dq.cond);
	pthread_cond_destroy(&bd->dq.idle);
	os_fini(&bd->os);
	free(bd);
}

static const struct tsr_backend_ops bd_ops =
	OS_BACKEND_OPS(bd_mkfs_op, bd_mount, bd_umount, bd_fsck);

TSR_PLUGIN_EXPORT const struct tsr_plugin_desc tessera_plugin = {
	.abi_major = TSR_PLUGIN_ABI_MAJOR,
	.abi_minor = TSR_PLUGIN_ABI_MINOR,
	.desc_size = sizeof(struct tsr_plugin_desc),
	.kind = TSR_KIND_BACKEND,
	.name = "blockdev",
	.version = "1.0.0",
	.summary = "objects on a raw block device or image file, copy-on-write, metadata in LevelDB",
	.options = bd_options,
	.create = bd_create,
	.destroy = bd_destroy,
	.ops = &bd_ops,
};
