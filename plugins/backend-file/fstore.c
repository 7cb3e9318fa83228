/* fstore.c — the "file" backend: objects as files in a directory of an
 * existing file system, metadata in LevelDB (the engine's, ostore.h), and
 * atomicity and durability from a write-ahead journal of physical
 * operations.
 *
 * On-disk layout of a store at PATH:
 *
 *     PATH/meta/      LevelDB: everything but object data (ostore.h)
 *     PATH/journal    write-ahead journal (journal.h)
 *     PATH/data/XX/YY/OOOOOOOOOOOOOOOO
 *                     object data, one file per object (but small ones,
 *                     whose data is inline in LevelDB), named by the
 *                     object's 64-bit id in hex; XX and YY are bits 20-27
 *                     and 12-19 of the id, so 4096 consecutive ids share
 *                     a directory (new objects seldom need a new one) and
 *                     no directory holds more than 4096 files per 2^28
 *                     ids handed out
 *
 * Chunk c of an object lives at offset c * 64 KiB of its file (a
 * compressed chunk at the start of that slot, the rest punched).
 *
 * Why a journal of physical operations.  The engine prepares a batch of
 * transactions into an overlay; this backend turns the overlay's end state
 * into a plan of operations that read nothing — "write these bytes at this
 * offset of file N", "punch this range", "put this key", "delete the keys
 * in this range" — whose effect is the same however often, and from
 * whatever partial state, they are applied in order.  Then:
 *
 *     journal  -> the plan is appended and made durable: the commit point
 *     apply    -> files and LevelDB updated without syncing, under the
 *                 write lock so readers never see half of it
 *
 * The plan and the direct writes below are the engine's stage (fs_stage),
 * which commit threads run side by side for batches of different
 * collections; journal and apply are the seal (fs_seal), one at a time,
 * with the plans of every batch staged meanwhile in one record.
 *
 * A checkpoint (when the journal fills, and at mount and umount) syncs
 * LevelDB and the file system, then moves the journal's start past every
 * record.  Mount replays the records after the last checkpoint.  Before
 * the journal write nothing of the batch is anywhere; after it, replay
 * completes it: all or nothing, and nothing acknowledged is lost.
 *
 * New data skips the journal when that is safe (write_direct): it is
 * written in place, then the record that maps it is written unsynced
 * (jr_write), then the data files are synced — and the device cache flush
 * that ends those syncs makes the record durable too, so a commit costs
 * one flush, not two.  A crash before that flush may leave the record
 * durable without its data; only the last record can be in that state
 * (the next commit starts after the flush), so replay checks the data of
 * the last record's chunk maps against their checksums and drops the
 * record if it is not all there (record_data_present): the transaction
 * was never acknowledged.
 */
#include "errf.h"
#include "ostore/journal.h"
#include "ostore/ostore.h"

#include <tessera/backend.h>
#include <tessera/crc32c.h>
#include <tessera/encoding.h>
#include <tessera/kv.h>
#include <tessera/txn.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <sys/uio.h>
#include <unistd.h>

#define LOG_ERR TSR_LOG_ERROR
#define LOG_WARN TSR_LOG_WARN
#define LOG_INFO TSR_LOG_INFO

/* ---- Options ------------------------------------------------------------*/

enum { OPT_PATH, OPT_JOURNAL_SIZE, OPT_COMMON };

static const struct tsr_opt_def fs_options[] = {
	[OPT_PATH] = { .name = "path", .type = TSR_OPT_STRING,
		       .flags = TSR_OPT_REQUIRED,
		       .help = "directory holding the store (mkfs creates it)" },
	[OPT_JOURNAL_SIZE] = { .name = "journal_size", .type = TSR_OPT_SIZE,
			       .def = "256M", .min = "1M", .max = "64G",
			       .help = "size of the write-ahead journal, set at mkfs" },
	OS_COMMON_OPTIONS,
	{ .name = NULL },
};

/* ---- The instance -----------------------------------------------------------*/



struct fdent {
	uint64_t objid;
	int fd;                /* 0: a free slot */
	int refs;              /* commit threads using it now */
	int dead;              /* close when the last lets go */
	uint64_t used;         /* LRU stamp */
};

#define FD_CACHE 64

/* A set of object ids (0 is never an id), open addressing. */
struct idset {
	uint64_t *v;
	size_t cap, n;
};

static int
idset_has(const struct idset *s, uint64_t id)
{
	if (s->cap == 0)
		return 0;
	for (size_t i = (size_t)(id * 0x9e3779b97f4a7c15ull) & (s->cap - 1);;
	     i = (i + 1) & (s->cap - 1)) {
		if (s->v[i] == id)
			return 1;
		if (s->v[i] == 0)
			return 0;
	}
}

static int
idset_add(struct idset *s, uint64_t id)
{
	if (idset_has(s, id))
		return 0;
	if (2 * (s->n + 1) > s->cap) {
		struct idset g = { calloc(s->cap ? 2 * s->cap : 256, sizeof(uint64_t)),
				   s->cap ? 2 * s->cap : 256, 0 };
		if (g.v == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i])
				idset_add(&g, s->v[i]);
		free(s->v);
		*s = g;
	}
	for (size_t i = (size_t)(id * 0x9e3779b97f4a7c15ull) & (s->cap - 1);;
	     i = (i + 1) & (s->cap - 1))
		if (s->v[i] == 0) {
			s->v[i] = id;
			s->n++;
			return 0;
		}
}

static void
idset_clear(struct idset *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}


/* The instance: the engine's part first. */
struct ffs {
	struct os os;
	uint64_t journal_size;
	int dirfd, datafd;
	struct jr *jr;          /* the seal's (one at a time) */
	/* under setlock: stages read them, seals and checkpoints change them */
	pthread_mutex_t setlock;
	struct idset journaled; /* ids with file ops journaled since the
				 * last checkpoint (see write_direct) */
	int direct_off;         /* journal everything until the next one */
	int one_flush;          /* records of direct data go out unsynced
				 * (jr_write; see the top of this file) */
	/* read-write descriptors of the commit threads, under fdlock */
	pthread_mutex_t fdlock;
	struct fdent fds[FD_CACHE];
	uint64_t fdclock;
	/* the precreator (see precreate_main), under plock */
	pthread_t pthr;
	pthread_mutex_t plock;
	pthread_cond_t pcond;
	int prunning, pstop;
	uint64_t pnext;          /* the next object id to be handed out */
	uint64_t pdurable;       /* files of ids [pnext, pdurable) exist, durably */
	uint64_t pneed;          /* a bit per new object of late, newest
				  * lowest: 1 when it needed a file */
};

/* Files made ahead of the ids handed out, and when to make more; and how
 * many of the last 64 new objects must have needed a file (small objects
 * keep their data inline and need none) for it to be worth it. */
#define PRE_AHEAD 256
#define PRE_LOW 128
#define PRE_WANT 16

static struct ffs *
F(struct os *os)
{
	return (struct ffs *)os;
}



/* ---- Files ----------------------------------------------------------------*/

static void
obj_relpath(char *buf, size_t n, uint64_t objid)
{
	/* 4096 consecutive ids share a directory: new objects rarely need a
	 * new directory (whose entry must be synced too), and after 2^28
	 * ids the tree wraps, so a directory holds 4096 files per 2^28 ids */
	snprintf(buf, n, "%02x/%02x/%016" PRIx64, (unsigned)((objid >> 20) & 0xff),
		 (unsigned)((objid >> 12) & 0xff), objid);
}

/* Is objid's file one the precreator made and synced? */
static int
precreated(struct os *os, uint64_t objid)
{
	int yes;

	pthread_mutex_lock(&F(os)->plock);
	yes = objid < F(os)->pdurable;
	pthread_mutex_unlock(&F(os)->plock);
	return yes;
}

#define MADE_FILE 1
#define MADE_LEAF 2   /* data/XX/YY */
#define MADE_TOP 4    /* data/XX */
#define MADE_FOUND 8  /* not made here: found, its name maybe not durable */

/* Open an object's file under data/: read-only for readers, read-write for
 * the commit threads, creating it and its directories with create.
 * -ENOENT when it does not exist and !create.  *made (may be NULL) gets
 * MADE_* bits for the names a caller that needs them durable must sync:
 * what had to be created, or, with MADE_FOUND, a file found that the
 * precreator has not synced yet (made ahead of a new object, or of an
 * object that has had no file so far: a small one, inline in its maps). */
static int
obj_open(struct os *os, uint64_t objid, int rw, int create, int *made)
{
	char rel[64];
	int fd, flags = 0;

	if (made)
		*made = 0;
	obj_relpath(rel, sizeof(rel), objid);
	fd = openat(F(os)->datafd, rel, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd >= 0 && create && made && !precreated(os, objid))
		*made = MADE_FOUND | MADE_FILE | MADE_LEAF | MADE_TOP;
	if (fd >= 0 || errno != ENOENT || !create)
		return fd >= 0 ? fd : -errno;
	rel[2] = '\0';
	if (mkdirat(F(os)->datafd, rel, 0700) == 0)
		flags |= MADE_TOP;
	else if (errno != EEXIST)
		return -errno;
	rel[2] = '/';
	rel[5] = '\0';
	if (mkdirat(F(os)->datafd, rel, 0700) == 0)
		flags |= MADE_LEAF;
	else if (errno != EEXIST)
		return -errno;
	rel[5] = '/';
	fd = openat(F(os)->datafd, rel, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (made)
		*made = flags | MADE_FILE;
	return fd;
}

/* Make the names that made (MADE_*) says were created for the file at
 * rel durable: sync its directory, and up the tree as far as directories
 * were made.  rel is left naming the directory that failed. */
static int
sync_parents(struct os *os, char *rel, int made)
{
	static const int need[] = { MADE_FILE, MADE_LEAF, MADE_TOP };
	static const size_t cut[] = { 5, 2, 0 };

	for (int level = 0; level < 3; level++) {
		int dfd;

		if (!(made & need[level]))
			break;
		rel[cut[level]] = '\0';
		dfd = cut[level] ? openat(F(os)->datafd, rel,
					  O_DIRECTORY | O_RDONLY | O_CLOEXEC)
				 : dup(F(os)->datafd);
		if (dfd < 0 || fsync(dfd) < 0) {
			int e = errno;
			if (dfd >= 0)
				close(dfd);
			return -e;
		}
		close(dfd);
	}
	return 0;
}

/* The commit threads' cached read-write descriptors of objects' files.
 * fd_get hands one out (opening it, with create making the file, when it
 * is not cached), fd_put takes it back.  An entry in use is never closed
 * under its user: eviction skips it, and uncaching it closes it when its
 * last user lets go.  When every entry is in use the descriptor is not
 * cached, and fd_put closes it. */
static int
fd_get(struct os *os, uint64_t objid, int create)
{
	struct ffs *f = F(os);
	struct fdent *victim = NULL;
	int fd;

	pthread_mutex_lock(&f->fdlock);
	for (int i = 0; i < FD_CACHE; i++) {
		struct fdent *e = &f->fds[i];
		if (e->fd > 0 && e->objid == objid && !e->dead) {
			e->used = ++f->fdclock;
			e->refs++;
			pthread_mutex_unlock(&f->fdlock);
			return e->fd;
		}
	}
	pthread_mutex_unlock(&f->fdlock);
	/* one thread per object (its collection's): nobody else opens it */
	fd = obj_open(os, objid, 1, create, NULL);
	if (fd < 0)
		return fd;
	pthread_mutex_lock(&f->fdlock);
	for (int i = 0; i < FD_CACHE; i++) {
		struct fdent *e = &f->fds[i];
		if (e->fd <= 0) {
			victim = e;
			break;
		}
		if (e->refs == 0 && (victim == NULL || e->used < victim->used))
			victim = e;
	}
	if (victim != NULL) {
		if (victim->fd > 0)
			close(victim->fd);
		*victim = (struct fdent){ .objid = objid, .fd = fd, .refs = 1,
					  .used = ++f->fdclock };
	}
	pthread_mutex_unlock(&f->fdlock);
	return fd;
}

static void
fd_put(struct os *os, int fd)
{
	struct ffs *f = F(os);

	pthread_mutex_lock(&f->fdlock);
	for (int i = 0; i < FD_CACHE; i++) {
		struct fdent *e = &f->fds[i];
		if (e->fd == fd) {
			if (--e->refs == 0 && e->dead) {
				close(e->fd);
				e->fd = 0;
				e->dead = 0;
			}
			pthread_mutex_unlock(&f->fdlock);
			return;
		}
	}
	pthread_mutex_unlock(&f->fdlock);
	close(fd); /* it was not cached */
}

static void
uncache_fd(struct os *os, uint64_t objid)
{
	struct ffs *f = F(os);

	pthread_mutex_lock(&f->fdlock);
	for (int i = 0; i < FD_CACHE; i++) {
		struct fdent *e = &f->fds[i];
		if (e->fd > 0 && e->objid == objid && !e->dead) {
			if (e->refs > 0) {
				e->dead = 1;
			} else {
				close(e->fd);
				e->fd = 0;
			}
		}
	}
	pthread_mutex_unlock(&f->fdlock);
}

/* With no commit thread running. */
static void
uncache_all(struct os *os)
{
	for (int i = 0; i < FD_CACHE; i++)
		if (F(os)->fds[i].fd > 0) {
			close(F(os)->fds[i].fd);
			F(os)->fds[i] = (struct fdent){ 0 };
		}
}

/* ---- The plan --------------------------------------------------------------
 *
 *     envelope v1 {
 *         u32 nfile;  nfile x { u8 op, u64 objid, u64 off, u64 len,
 *                               bytes data (P_WRITE only) }
 *         u32 nkv;    nkv x   { u8 op, bytes key, bytes val_or_end }
 *     }
 *
 * Every operation reads nothing and may be applied any number of times.
 * A journal record is one plan: that of the overlays a seal commits
 * together, one after the other (they touch different objects), and the
 * superblock last. */

enum { P_WRITE = 1, P_PUNCH, P_TRUNC, P_UNLINK };

struct plan {
	struct tsr_enc f, k;
	uint32_t nf, nk;
};

/* A write waiting for sync_direct; p points into a chunk buffer, which
 * lives until the overlay is released, or into owned. */
struct dwrite {
	uint64_t off;
	const uint8_t *p;
	size_t len;
	void *owned;
};

struct direct {
	uint64_t objid;
	int fd;
	int dio;              /* the same file with O_DIRECT, or -1 */
	int made;             /* MADE_* */
	struct dwrite *w;
	size_t nw, wcap;
};

/* What the file backend keeps of an overlay from stage to unstage
 * (os_prep.be). */
struct fcommit {
	struct plan pl;         /* its plan, for the seal's record */
	struct direct *direct;  /* files written before the journal record */
	size_t ndirect, dcap;
	uint64_t *jids;         /* files the record has operations for */
	size_t njids, jcap;
	uint64_t small;         /* new data taken into the record (write_direct) */
	int keep;               /* its record may be on disk: drop nothing */
};

static struct fcommit *
FC(struct os_prep *p)
{
	return p->be;
}

static void
plan_file(struct plan *pl, uint8_t op, uint64_t objid, uint64_t off,
	  uint64_t len, const void *data)
{
	tsr_enc_u8(&pl->f, op);
	tsr_enc_u64(&pl->f, objid);
	tsr_enc_u64(&pl->f, off);
	tsr_enc_u64(&pl->f, len);
	if (op == P_WRITE)
		tsr_enc_bytes(&pl->f, data, (size_t)len);
	pl->nf++;
}

static void
plan_kv(struct plan *pl, int op, const void *k, size_t kl, const void *v,
	size_t vl)
{
	os_rec_kv(&pl->k, &pl->nk, op, k, kl, v, vl);
}

/* Queue data for a file being written directly (see write_direct);
 * write_direct_data writes it before the journal record, sync_direct
 * syncs it after.  copy_ok
 * says data lives as long as the overlay (a chunk buffer). */
static int
direct_write(struct os_prep *p, uint64_t objid, uint64_t off, const void *data,
	     size_t len, int copy_ok)
{
	struct direct *d = NULL;

	for (size_t i = 0; i < FC(p)->ndirect; i++)
		if (FC(p)->direct[i].objid == objid)
			d = &FC(p)->direct[i];
	if (d == NULL) {
		if (FC(p)->ndirect == FC(p)->dcap) {
			size_t ncap = FC(p)->dcap ? FC(p)->dcap * 2 : 8;
			struct direct *nd = realloc(FC(p)->direct, ncap * sizeof(*nd));
			if (nd == NULL)
				return -ENOMEM;
			FC(p)->direct = nd;
			FC(p)->dcap = ncap;
		}
		d = &FC(p)->direct[FC(p)->ndirect];
		memset(d, 0, sizeof(*d));
		d->objid = objid;
		d->fd = obj_open(p->os, objid, 1, 1, &d->made);
		if (d->fd < 0)
			return errf(p->err, sizeof(p->err), d->fd,
				    "%s: data file %016" PRIx64 ": %s", p->os->path,
				    objid, strerror(-d->fd));
		/* Whole blocks go out with O_DIRECT: no copy through the page
		 * cache and no delayed allocation to flush later.  The file
		 * system may refuse it (tmpfs); then everything is buffered. */
		char rel[64];
		obj_relpath(rel, sizeof(rel), objid);
		d->dio = openat(F(p->os)->datafd, rel, O_RDWR | O_DIRECT | O_CLOEXEC);
		FC(p)->ndirect++;
	}
	if (d->nw == d->wcap) {
		size_t ncap = d->wcap ? d->wcap * 2 : 64;
		struct dwrite *nw = realloc(d->w, ncap * sizeof(*nw));
		if (nw == NULL)
			return -ENOMEM;
		d->w = nw;
		d->wcap = ncap;
	}
	struct dwrite *w = &d->w[d->nw];
	w->off = off;
	w->len = len;
	w->owned = NULL;
	w->p = data;
	if (!copy_ok) {
		if ((w->owned = malloc(len ? len : 1)) == NULL)
			return -ENOMEM;
		memcpy(w->owned, data, len);
		w->p = w->owned;
	}
	d->nw++;
	return 0;
}

static void
emit_write(struct os_prep *p, struct plan *pl, int direct, uint64_t objid,
	   uint64_t off, uint64_t len, const void *data, int in_chunk, int *rc)
{
	if (*rc < 0)
		return;
	if (direct)
		*rc = direct_write(p, objid, off, data, (size_t)len, in_chunk);
	else
		plan_file(pl, P_WRITE, objid, off, len, data);
}

/* Emit the plan operations and the new map of one dirty chunk. */
static int
finalize_chunk(struct os_prep *p, struct plan *pl, struct os_file *f,
	       struct os_chunk *c, int direct)
{
	uint64_t slot = (uint64_t)c->no * OS_CHUNK;
	struct os_chunk_out out;
	uint8_t k[16];
	size_t kl = os_key_chunk(k, f->objid, c->no), vl;
	uint8_t *v;
	int rc = os_chunk_finish(p, f, c, &out);

	if (rc < 0)
		return rc;
	if (out.m.kind == OS_CHUNK_INLINE) {
		/* the data goes in the map: what the slot held is dead */
		if (c->base.present && c->base.kind != OS_CHUNK_INLINE && !direct)
			plan_file(pl, P_PUNCH, f->objid, slot, OS_CHUNK, NULL);
	} else if (out.m.kind == OS_CHUNK_ZSTD && !out.delete_map) {
		uint64_t used = (out.m.stored + OS_BLOCK - 1) / OS_BLOCK * OS_BLOCK;
		emit_write(p, pl, direct, f->objid, slot, out.m.stored, out.z, 0, &rc);
		if (rc == 0 && !direct) /* a new chunk's slot holds nothing */
			plan_file(pl, P_PUNCH, f->objid, slot + used, OS_CHUNK - used,
				  NULL);
		p->data_bytes += out.m.stored;
	} else {
		/* blocks that became zeros: their old copies are dead */
		uint16_t dead = (uint16_t)(out.was_stored & out.m.zero);
		for (unsigned b = 0; b < OS_BPC && !direct; b++)
			if (dead & (1u << b))
				plan_file(pl, P_PUNCH, f->objid, slot + b * OS_BLOCK,
					  OS_BLOCK, NULL);
		/* write runs of blocks to store */
		for (unsigned b = 0; b < OS_BPC && rc == 0;) {
			unsigned e = b;
			while (e < OS_BPC && (out.write & (1u << e)))
				e++;
			if (e == b) {
				b++;
				continue;
			}
			emit_write(p, pl, direct, f->objid, slot + b * OS_BLOCK,
				   (uint64_t)(e - b) * OS_BLOCK, c->buf + b * OS_BLOCK,
				   1, &rc);
			p->data_bytes += (uint64_t)(e - b) * OS_BLOCK;
			b = e;
		}
	}
	if (rc == 0 && out.delete_map) {
		plan_kv(pl, OS_KV_DEL, k, kl, NULL, 0);
	} else if (rc == 0) {
		v = os_cmeta_encode(&out.m, &vl);
		if (v == NULL)
			rc = -ENOMEM;
		else
			plan_kv(pl, OS_KV_PUT, k, kl, v, vl);
		free(v);
	}
	os_chunk_out_release(&out);
	return rc;
}

/* May this file's new data skip the journal?
 *
 * Journaling data means writing it twice, which halves the bandwidth of
 * large writes.  Data may instead be written in place, synced by the
 * same flush as the journal record (see the top of this file), with the
 * record holding only its chunk maps, when both hold:
 *   - every chunk written had no map before: until the record commits,
 *     nothing reads those bytes, so a crash before it loses nothing and
 *     exposes nothing;
 *   - no record since the last checkpoint has operations on the file, and
 *     this one has none but these writes: replay, which re-applies the
 *     records after the checkpoint, must never write over this data with
 *     something older.  (So a record has no file operation on a file
 *     written directly: record_data_present tells them apart by that.)
 * This is the path of every new object's data (the common case: objects
 * are written once, whole), and of clones -- except small ones: a file
 * written in place costs a sync of its own (its data and inode, and a
 * device flush each on ext4), so N new 4 KiB objects in one commit cost
 * N flushes, where in the record they share its one.  A file's new chunks
 * ride in the record when they are at most SMALL_DIRECT_MAX bytes, and
 * while the record's new data stays within SMALL_RECORD_MAX (written
 * twice, and applied under the write lock: a commit of a thousand small
 * objects writes the rest in place), as backend-blockdev's small writes
 * do.  (Objects of at most inline_max bytes are kept in their chunk maps
 * instead, up to OS_INLINE_BATCH bytes a commit: ostore.h.) */
#define SMALL_DIRECT_MAX (256u << 10)
#define SMALL_RECORD_MAX (4u << 20)

static int
write_direct(struct os_prep *p, const struct os_file *f)
{
	struct ffs *fs = F(p->os);
	uint64_t dirty = 0;
	int journaled;

	if (f->unlink || f->trunc_to != UINT64_MAX || f->npunches)
		return 0;
	for (size_t j = 0; j < f->nchunks; j++) {
		if (f->chunks[j]->dirty && f->chunks[j]->base.present)
			return 0;
		if (f->chunks[j]->dirty)
			dirty += OS_CHUNK;
	}
	if (dirty <= SMALL_DIRECT_MAX && FC(p)->small + dirty <= SMALL_RECORD_MAX) {
		FC(p)->small += dirty;
		return 0;
	}
	/* No record of another commit thread can touch f meanwhile: the
	 * object is in this overlay's collection, which is ours until it
	 * is sealed.  A checkpoint in between only clears the set. */
	pthread_mutex_lock(&fs->setlock);
	journaled = fs->direct_off || idset_has(&fs->journaled, f->objid);
	pthread_mutex_unlock(&fs->setlock);
	return !journaled;
}

static int
add_jid(struct os_prep *p, uint64_t objid)
{
	if (FC(p)->njids == FC(p)->jcap) {
		size_t ncap = FC(p)->jcap ? FC(p)->jcap * 2 : 16;
		uint64_t *n = realloc(FC(p)->jids, ncap * sizeof(*n));
		if (n == NULL)
			return -ENOMEM;
		FC(p)->jids = n;
		FC(p)->jcap = ncap;
	}
	FC(p)->jids[FC(p)->njids++] = objid;
	return 0;
}

/* Write a direct file's queued data: contiguous block-aligned pieces
 * become one O_DIRECT pwritev (a 4 MiB object is one write, not 64). */
static int
flush_dwrites(struct direct *d)
{
	struct iovec iov[64];

	for (size_t i = 0; i < d->nw;) {
		const struct dwrite *w = &d->w[i];
		int aligned = d->dio >= 0 && w->off % OS_BLOCK == 0 &&
			      w->len % OS_BLOCK == 0 && (uintptr_t)w->p % OS_BLOCK == 0;
		uint64_t off = w->off, end = w->off + w->len;
		int n = 0, rc;

		iov[n].iov_base = (void *)w->p;
		iov[n++].iov_len = w->len;
		for (i++; aligned && i < d->nw && n < 64 && d->w[i].off == end &&
			  d->w[i].len % OS_BLOCK == 0 &&
			  (uintptr_t)d->w[i].p % OS_BLOCK == 0;
		     i++) {
			iov[n].iov_base = (void *)d->w[i].p;
			iov[n++].iov_len = d->w[i].len;
			end += d->w[i].len;
		}
		rc = os_pwritev_full(aligned ? d->dio : d->fd, iov, n, off);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Write the direct data (not synced yet). */
static int
write_direct_data(struct os_prep *p)
{
	for (size_t i = 0; i < FC(p)->ndirect; i++) {
		int rc = flush_dwrites(&FC(p)->direct[i]);
		if (rc < 0)
			return errf(p->err, sizeof(p->err), rc, "%s: data file %016"
				    PRIx64 ": %s", p->os->path, FC(p)->direct[i].objid,
				    strerror(-rc));
	}
	return 0;
}

/* Make the directly written data durable, names included: a new file's
 * directory entry, and new directories' entries in their parents.  The
 * flush that ends these syncs also makes the journal record durable
 * (jr_write). */
static int
sync_direct(struct os_prep *p)
{
	struct os *os = p->os;

	/* start writeback of every file first, so the syncs below overlap
	 * and share the file system's journal commits */
	for (size_t i = 0; FC(p)->ndirect > 1 && i < FC(p)->ndirect; i++)
		sync_file_range(FC(p)->direct[i].fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	for (size_t i = 0; i < FC(p)->ndirect; i++) {
		const struct direct *d = &FC(p)->direct[i];
		char rel[64];

		if (fdatasync(d->fd) < 0)
			return errf(p->err, sizeof(p->err), -errno, "%s: data file "
				    "%016" PRIx64 ": fdatasync: %s", os->path, d->objid,
				    strerror(errno));
		obj_relpath(rel, sizeof(rel), d->objid);
		int rc = sync_parents(os, rel, d->made);
		if (rc < 0)
			return errf(p->err, sizeof(p->err), rc, "%s: data/%s: "
				    "fsync: %s", os->path, rel, strerror(-rc));
	}
	return 0;
}

static void
plan_emit(void *arg, int op, const void *k, size_t kl, const void *v, size_t vl)
{
	plan_kv(arg, op, k, kl, v, vl);
}

static void precreate_note(struct os *os, unsigned nnew, unsigned nfile);

/* Turn the overlay into its plan (FC(p)->pl, without the envelope: a
 * seal puts the plans of the overlays it commits into one record). */
static int
finalize(struct os_prep *p)
{
	struct plan *pl = &FC(p)->pl;
	unsigned nnew = 0, nfile = 0;
	int rc = 0;

	/* Range deletions first: a chunk dropped (truncate, zero) and written
	 * again in the same overlay gets its new map below, after the range
	 * that removes the old one. */
	os_emit_ranges(p, plan_emit, pl);
	FC(p)->small = 0;
	for (size_t i = 0; i < p->nfiles && rc == 0; i++) {
		struct os_file *f = p->files[i];
		int direct = write_direct(p, f);
		uint32_t before = pl->nf;
		size_t ndirect = FC(p)->ndirect;

		if (f->unlink) {
			plan_file(pl, P_UNLINK, f->objid, 0, 0, NULL);
		} else {
			if (f->trunc_to != UINT64_MAX)
				plan_file(pl, P_TRUNC, f->objid, f->trunc_to, 0, NULL);
			for (size_t j = 0; j < f->npunches; j++)
				plan_file(pl, P_PUNCH, f->objid, f->punches[j].off,
					  f->punches[j].len, NULL);
			for (size_t j = 0; j < f->nchunks && rc == 0; j++)
				if (f->chunks[j]->dirty)
					rc = finalize_chunk(p, pl, f, f->chunks[j],
							    direct);
		}
		if (rc == 0 && pl->nf != before)
			rc = add_jid(p, f->objid);
		if (!f->unlink && os_prep_is_new(p, f->objid)) {
			nnew++;
			nfile += pl->nf != before || FC(p)->ndirect != ndirect;
		}
	}
	precreate_note(p->os, nnew, nfile);
	/* the overlay's entries come after its ranges (see kvov.h) */
	if (rc == 0)
		rc = os_emit_entries(p, plan_emit, pl);
	if (rc == 0)
		rc = tsr_enc_error(&pl->f) ? tsr_enc_error(&pl->f)
					   : tsr_enc_error(&pl->k);
	return rc;
}

/* One journal record of the plans of ps[0..n), and the superblock sb
 * when with_sb (*out, malloc'd). */
static int
record_encode(struct os *os, struct os_prep *const *ps, size_t n,
	      const struct os_super *sb, int with_sb, uint8_t **out,
	      size_t *outlen)
{
	struct tsr_enc e, sk;
	uint32_t nf = 0, nk = 0, nsk = 0;
	size_t m;
	int rc;

	tsr_enc_init(&sk);
	if (with_sb) {
		size_t sl;
		uint8_t *sv = os_super_encode(sb, os->hooks->magic, &sl);
		if (sv == NULL)
			return -ENOMEM;
		os_rec_kv(&sk, &nsk, OS_KV_PUT, "S", 1, sv, sl);
		free(sv);
	}
	for (size_t i = 0; i < n; i++) {
		nf += FC(ps[i])->pl.nf;
		nk += FC(ps[i])->pl.nk;
	}
	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u32(&e, nf);
	for (size_t i = 0; i < n; i++)
		tsr_enc_raw(&e, FC(ps[i])->pl.f.buf, FC(ps[i])->pl.f.len);
	tsr_enc_u32(&e, nk + nsk);
	for (size_t i = 0; i < n; i++)
		tsr_enc_raw(&e, FC(ps[i])->pl.k.buf, FC(ps[i])->pl.k.len);
	tsr_enc_raw(&e, sk.buf, sk.len);
	tsr_enc_end_struct(&e, m);
	rc = tsr_enc_error(&sk) ? tsr_enc_error(&sk) : tsr_enc_error(&e);
	tsr_enc_release(&sk);
	if (rc < 0) {
		tsr_enc_release(&e);
		return rc;
	}
	*out = tsr_enc_take(&e, outlen);
	return *out ? 0 : -ENOMEM;
}

/* ---- Applying a plan (live and at replay) ---------------------------------*/

/* One file operation of a plan, as plan_file wrote it. */
struct pfop {
	uint8_t op;
	uint64_t objid, off, len;
	const void *data;       /* P_WRITE: len bytes */
};

/* Decode the next file operation; the decoder's error is set when it is
 * malformed. */
static void
plan_file_next(struct tsr_dec *d, struct pfop *o)
{
	size_t dl = 0;

	o->op = tsr_dec_u8(d);
	o->objid = tsr_dec_u64(d);
	o->off = tsr_dec_u64(d);
	o->len = tsr_dec_u64(d);
	o->data = NULL;
	if (o->op == P_WRITE) {
		tsr_dec_bytes(d, &o->data, &dl, OS_CHUNK);
		if (dl != o->len)
			tsr_dec_fail(d, -EBADMSG);
	}
}

static int
apply_plan(struct os *os, const void *buf, size_t len, char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	struct tsr_kv_batch *b;
	uint8_t ver;
	uint32_t n;
	int rc = 0;

	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return errf(err, errlen, -EBADMSG, "plan: bad envelope");
	n = tsr_dec_u32(&sub);
	for (uint32_t i = 0; i < n && rc == 0 && !tsr_dec_error(&sub); i++) {
		struct pfop o;
		char rel[64];
		int fd;

		plan_file_next(&sub, &o);
		if (tsr_dec_error(&sub))
			break;
		switch (o.op) {
		case P_WRITE:
			fd = fd_get(os, o.objid, 1);
			rc = fd < 0 ? fd : os_pwrite_full(fd, o.data, (size_t)o.len, o.off);
			if (fd >= 0)
				fd_put(os, fd);
			break;
		case P_PUNCH:
		case P_TRUNC:
			fd = fd_get(os, o.objid, 0);
			if (fd == -ENOENT)
				break; /* nothing there to cut */
			if (fd < 0)
				rc = fd;
			else if (o.op == P_TRUNC)
				rc = ftruncate(fd, (off_t)o.off) < 0 ? -errno : 0;
			else if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					   (off_t)o.off, (off_t)o.len) < 0 &&
				 errno != EOPNOTSUPP)
				rc = -errno; /* punching only frees space */
			if (fd >= 0)
				fd_put(os, fd);
			break;
		case P_UNLINK:
			uncache_fd(os, o.objid);
			obj_relpath(rel, sizeof(rel), o.objid);
			if (unlinkat(F(os)->datafd, rel, 0) < 0 && errno != ENOENT)
				rc = -errno;
			break;
		default:
			tsr_dec_fail(&sub, -EBADMSG);
		}
		if (rc < 0)
			return errf(err, errlen, rc, "%s: applying to data file %016" PRIx64
				    ": %s", os->path, o.objid, strerror(-rc));
	}
	b = tsr_kv_batch_create();
	if (b == NULL)
		return -ENOMEM;
	rc = os_rec_kv_decode(os, &sub, b, err, errlen);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) != 0) {
		tsr_kv_batch_destroy(b);
		return errf(err, errlen, -EBADMSG, "plan: malformed");
	}
	if (rc == 0)
		rc = tsr_kv_write(os->kv, b, 0, err, errlen);
	tsr_kv_batch_destroy(b);
	return rc;
}

/* ---- Checkpoints and commits ----------------------------------------------*/

/* Make everything applied durable without the journal, then empty it.
 * The synced LevelDB write flushes LevelDB's log; syncfs() the object
 * files and directories. */
static int
checkpoint(struct os *os, char *err, size_t errlen)
{
	int rc = os_super_store(os, 1, err, errlen);

	if (rc < 0)
		return rc;
	if (syncfs(F(os)->dirfd) < 0)
		return errf(err, errlen, -errno, "%s: syncfs: %s", os->path,
			    strerror(errno));
	if ((rc = jr_checkpoint(F(os)->jr, err, errlen)) < 0)
		return rc;
	/* no record is left to replay over anything */
	pthread_mutex_lock(&F(os)->setlock);
	idset_clear(&F(os)->journaled);
	F(os)->direct_off = 0;
	pthread_mutex_unlock(&F(os)->setlock);
	return 0;
}

/* ---- The precreator -------------------------------------------------------*/

/* Make the files of ids [from, to) and their names durable; the first id
 * not done (to when all are). */
static uint64_t
precreate_range(struct os *os, uint64_t from, uint64_t to, char *err,
		size_t errlen)
{
	uint64_t id, synced_leaf = UINT64_MAX;
	int made_dirs = 0, rc = 0;
	char rel[64];

	for (id = from; id < to && rc == 0; id++) {
		int made = 0, fd;

		if (synced_leaf != UINT64_MAX && (id >> 12) != synced_leaf) {
			/* leaving a directory: its new names go down first */
			obj_relpath(rel, sizeof(rel), id - 1);
			if ((rc = sync_parents(os, rel, MADE_FILE | made_dirs)) < 0)
				break;
			from = id;
			made_dirs = 0;
		}
		fd = obj_open(os, id, 1, 1, &made);
		if (fd < 0) {
			rc = fd;
			break;
		}
		close(fd);
		made_dirs |= made & (MADE_LEAF | MADE_TOP);
		synced_leaf = id >> 12;
	}
	if (rc < 0) {
		errf(err, errlen, rc, "%s: data file %016" PRIx64 ": %s", os->path,
		     id, strerror(-rc));
		to = id;
	}
	if (to > from) {
		obj_relpath(rel, sizeof(rel), to - 1);
		if (sync_parents(os, rel, MADE_FILE | made_dirs) < 0)
			return from;
	}
	return to;
}

/* Under plock: have enough new objects of late needed files? */
static int
precreate_wanted(const struct ffs *f)
{
	return __builtin_popcountll(f->pneed) >= PRE_WANT;
}

/* The precreator thread keeps the files of the next PRE_AHEAD object ids
 * made, their names durable, so that a new object's data goes into a file
 * that already exists and its commit syncs the file only, not a directory
 * too.  A file of an id not yet handed out is a spare, empty: mount and
 * fsck leave it alone, and a crash loses nothing.  While most new objects
 * are small enough to be inline (inline_max) it rests: their files would
 * be made for nothing (and kept, empty, until the objects go).  An object
 * that needs a file meanwhile has it made when its data is first
 * written: in place (write_direct) with a sync of the directory, or when
 * its record is applied, durable with the next checkpoint. */
static void *
precreate_main(void *arg)
{
	struct os *os = arg;
	struct ffs *f = F(os);
	char err[512];

	pthread_mutex_lock(&f->plock);
	while (!f->pstop) {
		uint64_t from, to, done;

		if (f->pdurable >= f->pnext + PRE_LOW || !precreate_wanted(f)) {
			pthread_cond_wait(&f->pcond, &f->plock);
			continue;
		}
		from = f->pdurable > f->pnext ? f->pdurable : f->pnext;
		to = f->pnext + PRE_AHEAD;
		pthread_mutex_unlock(&f->plock);
		done = precreate_range(os, from, to, err, sizeof(err));
		pthread_mutex_lock(&f->plock);
		if (done > f->pdurable)
			f->pdurable = done;
		if (done < to) {
			os_log(os, LOG_WARN, "%s; files of new objects are made "
			       "as they come from now on", err);
			break;
		}
	}
	pthread_mutex_unlock(&f->plock);
	return NULL;
}

/* Tell the precreator how far ids have been handed out. */
static void
precreate_kick(struct os *os, uint64_t next)
{
	struct ffs *f = F(os);

	pthread_mutex_lock(&f->plock);
	if (next > f->pnext)
		f->pnext = next;
	if (f->pdurable < f->pnext + PRE_LOW && precreate_wanted(f))
		pthread_cond_signal(&f->pcond);
	pthread_mutex_unlock(&f->plock);
}

/* An overlay made nnew objects, of which nfile needed a file. */
static void
precreate_note(struct os *os, unsigned nnew, unsigned nfile)
{
	struct ffs *f = F(os);

	if (nnew == 0)
		return;
	/* the last 64 of them, those that needed files spread evenly */
	pthread_mutex_lock(&f->plock);
	for (unsigned i = nnew > 64 ? nnew - 64 : 0; i < nnew; i++)
		f->pneed = f->pneed << 1 |
			   ((uint64_t)(i + 1) * nfile / nnew != (uint64_t)i * nfile / nnew);
	pthread_mutex_unlock(&f->plock);
}

static void
precreate_start(struct os *os)
{
	struct ffs *f = F(os);

	f->pnext = f->pdurable = os->sb.next_objid;
	f->pneed = ~0ull;
	f->pstop = 0;
	f->prunning = pthread_create(&f->pthr, NULL, precreate_main, os) == 0;
	if (!f->prunning)
		os_log(os, LOG_WARN, "%s: no precreator thread: files of new "
		       "objects are made as they come", os->path);
}

static void
precreate_stop(struct os *os)
{
	struct ffs *f = F(os);

	if (!f->prunning)
		return;
	pthread_mutex_lock(&f->plock);
	f->pstop = 1;
	pthread_cond_signal(&f->pcond);
	pthread_mutex_unlock(&f->plock);
	pthread_join(f->pthr, NULL);
	f->prunning = 0;
	f->pnext = f->pdurable = 0;
}

/* The overlay did not commit: remove the files its direct writes made,
 * and those of its new objects (their ids are never handed out again).
 * Data written into files of existing objects lies in chunks without
 * maps, which nothing reads. */
static void
drop_direct(struct os_prep *p)
{
	for (size_t i = 0; i < FC(p)->ndirect; i++) {
		const struct direct *d = &FC(p)->direct[i];
		char rel[64];

		if ((d->made & (MADE_FILE | MADE_FOUND)) == MADE_FILE ||
		    os_prep_is_new(p, d->objid)) {
			obj_relpath(rel, sizeof(rel), d->objid);
			uncache_fd(p->os, d->objid);
			if (unlinkat(F(p->os)->datafd, rel, 0) < 0 && errno != ENOENT)
				os_log(p->os, LOG_WARN, "%s: removing data/%s of a "
				       "transaction that failed: %s", p->os->path,
				       rel, strerror(errno));
		}
	}
}

/* The engine's stage hook: the plan, and the new data of files that skip
 * the journal written in place (synced now only where one flush cannot
 * cover the data and the record: one_flush off). */
static int
fs_stage(struct os *os, struct os_prep *p)
{
	struct fcommit *fc = calloc(1, sizeof(*fc));
	int rc;

	if (fc == NULL)
		return -ENOMEM;
	tsr_enc_init(&fc->pl.f);
	tsr_enc_init(&fc->pl.k);
	p->be = fc;
	if ((rc = finalize(p)) < 0 || (rc = write_direct_data(p)) < 0) {
		if (p->err[0])
			os_log(os, LOG_ERR, "%s", p->err);
		return rc == -ENOSPC ? rc : rc == -ENOMEM ? rc : -EIO;
	}
	if (fc->ndirect > 0 && !F(os)->one_flush && (rc = sync_direct(p)) < 0) {
		/* the data is synced before the record: not committed */
		os_log(os, LOG_ERR, "%s", p->err);
		return -EIO;
	}
	p->rec_bytes = fc->pl.f.len + fc->pl.k.len;
	return 0;
}

/* Journal and apply the plans of ps[0..n) as one record: 0 or a negative
 * errno for all of them. */
static int
seal_group(struct os *os, struct os_prep *const *ps, size_t n)
{
	struct os_super sb;
	int with_sb = os_seal_super(os, ps, n, &sb), direct = 0, rc;
	uint8_t *rec = NULL;
	size_t rlen = 0;
	char err[512] = "";
	uint64_t seq = 0;

	for (size_t i = 0; i < n; i++)
		direct |= FC(ps[i])->ndirect > 0;
	/* With direct data, the record is written before the data is synced
	 * and one flush makes both durable (jr_write); replay drops the last
	 * record if its data did not make it (replay_record).  The record is
	 * the seal's only one until that flush: so the last. */
	direct = direct && F(os)->one_flush;
	if ((rc = record_encode(os, ps, n, &sb, with_sb, &rec, &rlen)) < 0)
		return rc;
	int (*put)(struct jr *, const void *, size_t, uint64_t *, char *,
		   size_t) = direct ? jr_write : jr_append;
	rc = put(F(os)->jr, rec, rlen, &seq, err, sizeof(err));
	if (rc == -ENOSPC) {
		/* every record before is applied: a seal applies its own */
		pthread_rwlock_wrlock(&os->lock);
		rc = checkpoint(os, err, sizeof(err));
		pthread_rwlock_unlock(&os->lock);
		if (rc == 0)
			rc = put(F(os)->jr, rec, rlen, &seq, err, sizeof(err));
	}
	if (rc < 0) {
		if (rc != -E2BIG)
			os_log(os, LOG_ERR, "%s", err);
		free(rec);
		return rc == -E2BIG ? -EFBIG /* more than the journal holds */ : rc;
	}
	for (size_t i = 0; direct && i < n && rc == 0; i++)
		if (FC(ps[i])->ndirect > 0 && (rc = sync_direct(ps[i])) < 0) {
			/* The record is written and may be durable; whether
			 * the data is cannot be known.  The next mount decides
			 * (replay drops the record if its data is not all
			 * there); until then nothing more may be committed
			 * after it. */
			os->failed = 1;
			os_log(os, LOG_ERR, "%s; the store is now read-only, and the "
			       "next mount completes or drops journal record %"
			       PRIu64, ps[i]->err, seq);
		}
	if (rc < 0) {
		for (size_t i = 0; i < n; i++)
			FC(ps[i])->keep = 1;
		free(rec);
		return -EIO;
	}
	/* Committed: only a failure of the file system can stop it now, and
	 * replay at the next mount will finish it. */
	pthread_mutex_lock(&F(os)->setlock);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < FC(ps[i])->njids; j++)
			if (idset_add(&F(os)->journaled, FC(ps[i])->jids[j]) < 0) {
				/* cannot track it: make every file
				 * journal-only until the next checkpoint */
				F(os)->direct_off = 1;
			}
	pthread_mutex_unlock(&F(os)->setlock);
	pthread_rwlock_wrlock(&os->lock);
	rc = apply_plan(os, rec, rlen, err, sizeof(err));
	if (rc == 0)
		os->sb = sb;
	pthread_rwlock_unlock(&os->lock);
	free(rec);
	if (rc < 0) {
		os->failed = 1;
		for (size_t i = 0; i < n; i++)
			FC(ps[i])->keep = 1;
		os_log(os, LOG_ERR, "%s: applying committed journal record %" PRIu64
		       " failed (%s); the store is now read-only and the record "
		       "will be replayed at the next mount", os->path, seq, err);
		return -EIO;
	}
	precreate_kick(os, sb.next_objid);
	return 0;
}

/* The engine's seal hook: one record for all, unless together they are
 * more than a record holds; then one each. */
static void
fs_seal(struct os *os, struct os_prep **ps, size_t n, int *rcs)
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

static void
fs_unstage(struct os *os, struct os_prep *p, int committed)
{
	struct fcommit *fc = p->be;

	(void)os;
	if (fc == NULL)
		return;
	if (!committed && !fc->keep)
		drop_direct(p);
	for (size_t i = 0; i < fc->ndirect; i++) {
		struct direct *d = &fc->direct[i];
		close(d->fd);
		if (d->dio >= 0)
			close(d->dio);
		for (size_t j = 0; j < d->nw; j++)
			free(d->w[j].owned);
		free(d->w);
	}
	free(fc->direct);
	free(fc->jids);
	tsr_enc_release(&fc->pl.f);
	tsr_enc_release(&fc->pl.k);
	free(fc);
	p->be = NULL;
}

/* ---- mkfs, mount, umount --------------------------------------------------*/

static int
fs_mkfs(void *inst, char *err, size_t errlen)
{
	struct os *os = inst;
	char sub[PATH_MAX];
	struct tsr_kv *kv;
	struct stat st;
	int dirfd, rc;

	if (os->mounted)
		return errf(err, errlen, -EBUSY, "%s: store is mounted", os->path);
	if (stat(os->path, &st) == 0) {
		if (!S_ISDIR(st.st_mode) || !os_dir_is_empty(os->path))
			return errf(err, errlen, -EEXIST,
				    "%s: already exists and is not an empty directory "
				    "(a store is there, or other data)", os->path);
	} else if (errno != ENOENT || mkdir(os->path, 0700) < 0) {
		return errf(err, errlen, -errno, "%s: %s", os->path, strerror(errno));
	}
	dirfd = open(os->path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dirfd < 0)
		return errf(err, errlen, -errno, "%s: %s", os->path, strerror(errno));
	os_super_new(os, 1);
	if (getrandom(os->sb.uuid, sizeof(os->sb.uuid), 0) != sizeof(os->sb.uuid)) {
		close(dirfd);
		return errf(err, errlen, -EIO, "%s: no random uuid", os->path);
	}
	if (mkdirat(dirfd, "data", 0700) < 0) {
		rc = errf(err, errlen, -errno, "%s/data: %s", os->path, strerror(errno));
		close(dirfd);
		return rc;
	}
	snprintf(sub, sizeof(sub), "%s/meta", os->path);
	rc = tsr_kv_open(sub, TSR_KV_CREATE, &kv, err, errlen);
	if (rc == 0) {
		os->kv = kv;
		rc = os_super_store(os, 1, err, errlen);
		tsr_kv_close(kv);
		os->kv = NULL;
	}
	snprintf(sub, sizeof(sub), "%s/journal", os->path);
	if (rc == 0)
		rc = jr_create(dirfd, "journal", sub, F(os)->journal_size, os->sb.uuid,
			       err, errlen);
	if (rc == 0 && fsync(dirfd) < 0)
		rc = errf(err, errlen, -errno, "%s: fsync: %s", os->path, strerror(errno));
	close(dirfd);
	return rc;
}

/* Is the data that the last record's chunk maps describe on disk?  A
 * record written with jr_write (new data written in place) may be durable
 * while its data is not, when the crash came before their common flush;
 * the transaction was not acknowledged then.  Every chunk map the record
 * puts for an object it has no file operation on (the direct files: their
 * data is not in the record) is checked against the stored bytes.  1 yes,
 * 0 no (*bad gets the object), <0 an error. */
static int
record_data_present(struct os *os, const void *buf, size_t len, uint64_t *bad)
{
	struct tsr_dec d, sub;
	uint64_t *fids = NULL, fd_obj = 0;
	size_t nf = 0;
	uint32_t n;
	uint8_t ver;
	int rc = 1, fd = -1;

	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return -EBADMSG;
	n = tsr_dec_u32(&sub);
	if (n > len / 25) /* an operation takes at least 25 bytes */
		return -EBADMSG;
	if (n && (fids = malloc(n * sizeof(*fids))) == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n && !tsr_dec_error(&sub); i++) {
		struct pfop o;

		plan_file_next(&sub, &o);
		fids[nf++] = o.objid;
	}
	n = tsr_dec_u32(&sub);
	for (uint32_t i = 0; i < n && rc == 1 && !tsr_dec_error(&sub); i++) {
		uint8_t op;
		const void *k, *v;
		size_t kl, vl, j;
		struct os_cmeta m;

		os_rec_kv_next(&sub, &op, &k, &kl, &v, &vl);
		uint64_t objid;
		uint32_t cno;
		if (tsr_dec_error(&sub) || op != OS_KV_PUT ||
		    !os_key_is_chunk(k, kl, &objid, &cno))
			continue;
		for (j = 0; j < nf && fids[j] != objid; j++)
			;
		if (j < nf || os_cmeta_decode(v, vl, &m) < 0 ||
		    m.kind == OS_CHUNK_INLINE)
			continue; /* its data is in the record / apply reports it */
		if (fd < 0 || fd_obj != objid) {
			if (fd >= 0)
				close(fd);
			fd_obj = objid;
			fd = obj_open(os, objid, 0, 0, NULL);
		}
		/* no file: its name never reached the disk */
		rc = fd == -ENOENT ? 0 : fd < 0 ? fd : os_chunk_stored_ok(os, fd, cno, &m);
		if (rc <= 0)
			*bad = objid;
	}
	if (fd >= 0)
		close(fd);
	free(fids);
	if (rc == 1 && tsr_dec_error(&sub))
		rc = tsr_dec_error(&sub);
	return rc;
}

static int
replay_record(void *arg, uint64_t seq, const void *p, size_t n, int last)
{
	struct os *os = arg;
	char err[512];
	uint64_t bad = 0;
	int rc;

	if (last) {
		rc = record_data_present(os, p, n, &bad);
		if (rc == 0) {
			os_log(os, LOG_WARN, "%s/journal: record %" PRIu64 " is the "
			       "last and the data of object %016" PRIx64 " it maps "
			       "did not reach the disk before the crash: its "
			       "transaction was never acknowledged and is dropped",
			       os->path, seq, bad);
			return JR_DROP;
		}
		if (rc < 0 && rc != -EBADMSG) {
			/* cannot tell: neither drop nor apply it */
			os_log(os, LOG_ERR, "%s/journal: record %" PRIu64 ": checking "
			       "the data of object %016" PRIx64 " it maps: %s",
			       os->path, seq, bad, strerror(-rc));
			return rc;
		}
		/* a malformed record: apply_plan says what is wrong */
	}
	rc = apply_plan(os, p, n, err, sizeof(err));

	if (rc < 0)
		os_log(os, LOG_ERR, "%s/journal: record %" PRIu64 ": %s", os->path,
		       seq, err);
	return rc;
}

static void
close_store(struct os *os)
{
	uncache_all(os);
	idset_clear(&F(os)->journaled);
	F(os)->direct_off = 0;
	jr_close(F(os)->jr);
	F(os)->jr = NULL;
	if (os->kv)
		tsr_kv_close(os->kv);
	os->kv = NULL;
	if (F(os)->datafd >= 0)
		close(F(os)->datafd);
	if (F(os)->dirfd >= 0)
		close(F(os)->dirfd);
	F(os)->datafd = F(os)->dirfd = -1;
}

/* May records of direct data go out unsynced (jr_write)?  Only where the
 * data files' fdatasync is known to end with a cache flush of the device
 * that holds the journal too, and the journal's O_DIRECT overwrites of its
 * preallocated blocks need no metadata of their own: ext4 and XFS, with
 * the journal and the data on one device.  Elsewhere (btrfs or ZFS, which
 * copy on write; network and FUSE file systems; a journal symlinked to
 * another device) every record is synced on its own and the data before
 * it. */
static int
one_flush_ok(struct os *os, const char *jpath)
{
	struct statfs sf;
	struct stat d, j;

	if (fstatfs(F(os)->datafd, &sf) < 0 || fstat(F(os)->datafd, &d) < 0 ||
	    stat(jpath, &j) < 0 || d.st_dev != j.st_dev)
		return 0;
	return sf.f_type == EXT4_SUPER_MAGIC || sf.f_type == XFS_SUPER_MAGIC;
}

/* Open the store and replay the journal; no commit thread. */
static int
open_store(struct os *os, char *err, size_t errlen)
{
	char sub[PATH_MAX];
	uint64_t nrec = 0;
	int rc;

	F(os)->dirfd = open(os->path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (F(os)->dirfd < 0)
		return errf(err, errlen, -errno, "%s: %s%s", os->path, strerror(errno),
			    errno == ENOENT ? " (no store here: run mkfs first)" : "");
	F(os)->datafd = openat(F(os)->dirfd, "data", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	snprintf(sub, sizeof(sub), "%s/meta", os->path);
	if (F(os)->datafd < 0) {
		rc = errf(err, errlen, errno == ENOENT ? -ENOENT : -errno,
			  "%s: no data/ directory: not a backend-file store",
			  os->path);
		goto fail;
	}
	snprintf(os->meta_path, sizeof(os->meta_path), "%s", sub);
	if ((rc = tsr_kv_open_tuned(sub, TSR_KV_OPEN, &os->kv_tuning, &os->kv, err,
				     errlen)) < 0 ||
	    (rc = os_super_load(os, err, errlen)) < 0)
		goto fail;
	snprintf(sub, sizeof(sub), "%s/journal", os->path);
	if ((rc = jr_open(sub, os->sb.uuid, &F(os)->jr, err, errlen)) < 0)
		goto fail;
	F(os)->one_flush = one_flush_ok(os, sub);
	rc = jr_replay(F(os)->jr, replay_record, os, &nrec, err, errlen);
	if (rc < 0) {
		if (err && !err[0])
			errf(err, errlen, rc, "%s/journal: replay failed (see log)",
			     os->path);
		goto fail;
	}
	char why[512];
	if (jr_dropped(F(os)->jr, why, sizeof(why)))
		os_log(os, LOG_WARN, "%s", why);
	if ((rc = os_super_load(os, err, errlen)) < 0 ||
	    (rc = checkpoint(os, err, errlen)) < 0)
		goto fail;
	if (nrec)
		os_log(os, LOG_INFO, "%s: replayed %" PRIu64 " journal records",
		       os->path, nrec);
	return 0;
fail:
	close_store(os);
	return rc;
}

static int
fs_mount(void *inst, char *err, size_t errlen)
{
	struct os *os = inst;
	int rc;

	if (os->mounted)
		return errf(err, errlen, -EBUSY, "%s: already mounted", os->path);
	if ((rc = open_store(os, err, errlen)) < 0)
		return rc;
	/* a batch must fit a journal record with room to spare */
	os->batch_limit = jr_max_payload(F(os)->jr) / 4;
	if ((rc = os_start(os, err, errlen)) < 0)
		close_store(os);
	else
		precreate_start(os);
	return rc;
}

static int
fs_umount(void *inst)
{
	struct os *os = inst;
	char err[512];
	int rc = 0;

	if (!os->mounted)
		return -EINVAL;
	precreate_stop(os);
	os_stop(os);
	if (!os->failed && (rc = checkpoint(os, err, sizeof(err))) < 0)
		os_log(os, LOG_ERR, "%s", err);
	close_store(os);
	return rc;
}

/* ---- fsck -------------------------------------------------------------------*/

/* A file the precreator made ahead of the ids handed out: empty, and of
 * an id no object holds.  Usually one above the superblock's next id; but
 * commit threads hand ids out side by side, and one whose transaction did
 * not commit (it failed, or a crash came first) is never handed out
 * again, so its file may stay empty below it. */
static int
spare_file(DIR *d, const char *name)
{
	struct stat st;

	return fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode) && st.st_size == 0;
}

static void
fsck_files(struct os_fsck *c)
{
	for (unsigned x = 0; x < 256; x++)
		for (unsigned y = 0; y < 256; y++) {
			char rel[16];
			int dfd;
			DIR *d;
			struct dirent *de;

			snprintf(rel, sizeof(rel), "%02x/%02x", x, y);
			dfd = openat(F(c->os)->datafd, rel, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
			if (dfd < 0)
				continue;
			d = fdopendir(dfd);
			if (d == NULL) {
				close(dfd);
				continue;
			}
			while ((de = readdir(d)) != NULL) {
				char *end;
				uint64_t id;
				if (de->d_name[0] == '.')
					continue;
				id = strtoull(de->d_name, &end, 16);
				if (*end == '\0' && strlen(de->d_name) == 16 &&
				    (os_fsck_live(c, id) || spare_file(d, de->d_name)))
					continue;
				os_fsck_report(c, 1, "data/%s/%s: file of no object", rel,
					    de->d_name);
				if (c->repair)
					unlinkat(dirfd(d), de->d_name, 0);
			}
			closedir(d);
		}
}

static int
fs_fsck(void *inst, int repair, tsr_fsck_cb cb, void *arg)
{
	struct os *os = inst;
	char err[512];
	int rc;

	if (os->mounted)
		return -EBUSY;
	if ((rc = open_store(os, err, sizeof(err))) < 0) {
		if (cb)
			cb(arg, err, 0);
		return rc;
	}
	/* replay dropped it, repair or not: the store is whole without it */
	if (jr_dropped(F(os)->jr, err, sizeof(err)) && cb)
		cb(arg, err, 1);
	rc = os_fsck_run(os, repair, cb, arg, NULL, NULL);
	close_store(os);
	return rc;
}

/* ---- The engine's hooks and the plugin -------------------------------------*/

static int
fs_data_fd(struct os *os, uint64_t objid, int reader)
{
	char rel[64];
	int fd;

	if (reader != 2)
		return reader ? obj_open(os, objid, 0, 0, NULL) : fd_get(os, objid, 0);
	obj_relpath(rel, sizeof(rel), objid);
	fd = openat(F(os)->datafd, rel, O_RDONLY | O_DIRECT | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

static void
fs_data_fd_done(struct os *os, int fd, int reader)
{
	if (reader)
		close(fd);
	else
		fd_put(os, fd); /* the commit threads' stay cached */
}

static uint64_t
fs_stored_off(struct os *os, const struct os_cmeta *m, uint32_t cno, unsigned b)
{
	(void)os;
	(void)m;
	return (uint64_t)cno * OS_CHUNK + (uint64_t)b * OS_BLOCK;
}

static int
fs_space(struct os *os, uint64_t *total, uint64_t *avail)
{
	struct statvfs sv;

	if (fstatvfs(F(os)->dirfd, &sv) < 0)
		return -errno;
	*total = (uint64_t)sv.f_blocks * sv.f_frsize;
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}

static const struct os_hooks fs_hooks = {
	.magic = "TSRFILE1",
	.stage = fs_stage,
	.seal = fs_seal,
	.unstage = fs_unstage,
	.data_fd = fs_data_fd,
	.data_fd_done = fs_data_fd_done,
	.stored_off = fs_stored_off,
	.space = fs_space,
	.fsck_extra = fsck_files,
};

static int
fs_create(const struct tsr_host *host, const struct tsr_opts *opts,
	  void **instance, char *err, size_t errlen)
{
	const struct tsr_opt_val *v = opts->vals;
	struct ffs *f;

	if (strlen(v[OPT_PATH].s) >= sizeof(f->os.path) || v[OPT_PATH].s[0] == '\0')
		return errf(err, errlen, -EINVAL, "path: empty or longer than %zu bytes",
			    sizeof(f->os.path) - 1);
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return errf(err, errlen, -ENOMEM, "out of memory");
	os_init_opts(&f->os, host, &fs_hooks, v[OPT_PATH].s, &v[OPT_COMMON]);
	f->journal_size = (uint64_t)v[OPT_JOURNAL_SIZE].i;
	f->dirfd = f->datafd = -1;
	pthread_mutex_init(&f->setlock, NULL);
	pthread_mutex_init(&f->fdlock, NULL);
	pthread_mutex_init(&f->plock, NULL);
	pthread_cond_init(&f->pcond, NULL);
	*instance = f;
	return 0;
}

static void
fs_destroy(void *inst)
{
	struct os *os = inst;

	if (os->mounted)
		fs_umount(os);
	pthread_mutex_destroy(&F(os)->setlock);
	pthread_mutex_destroy(&F(os)->fdlock);
	pthread_mutex_destroy(&F(os)->plock);
	pthread_cond_destroy(&F(os)->pcond);
	os_fini(os);
	free(os);
}

static const struct tsr_backend_ops fs_ops =
	OS_BACKEND_OPS(fs_mkfs, fs_mount, fs_umount, fs_fsck);

TSR_PLUGIN_EXPORT const struct tsr_plugin_desc tessera_plugin = {
	.abi_major = TSR_PLUGIN_ABI_MAJOR,
	.abi_minor = TSR_PLUGIN_ABI_MINOR,
	.desc_size = sizeof(struct tsr_plugin_desc),
	.kind = TSR_KIND_BACKEND,
	.name = "file",
	.version = "1.0.0",
	.summary = "objects as files in a directory, metadata in LevelDB, a write-ahead journal",
	.options = fs_options,
	.create = fs_create,
	.destroy = fs_destroy,
	.ops = &fs_ops,
};
