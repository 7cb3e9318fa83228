/* reads.c — reading stored chunks (for the overlay, fsck and readers)
 * and the backend ABI's read operations. */
#include "ostore_int.h"

#include <tessera/crc32c.h>
#include <tessera/kv.h>
#include <tessera/txn.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Reading stored chunks (commit thread and readers) -------------------
 *
 * Both return -EIO after logging the object and offset when a checksum does
 * not match or stored bytes do not decompress: never bad data. */

/* Read n stored bytes of chunk cno's block b (0 for a zstd chunk) and check
 * them against the map: 0 when they match, 1 when they do not, -errno when
 * they cannot be read.  Logs nothing. */
static int
read_stored(struct os *os, int fd, const struct os_cmeta *m, uint32_t cno,
	    unsigned b, uint8_t *buf, size_t n)
{
	int rc = os_pread_full(fd, buf, n, os->hooks->stored_off(os, m, cno, b));

	if (rc < 0)
		return rc;
	return tsr_crc32c(0, buf, n) != m->crc[b];
}

/* The two ways stored data turns out bad, said the same way by every
 * reader; -EIO. */
static int
read_failed(struct os *os, const char *name, uint64_t off, int rc)
{
	os_log(os, LOG_ERR, "object %s offset %" PRIu64 ": read: %s", name, off,
	       strerror(-rc));
	return -EIO;
}

static int
crc_mismatch(struct os *os, const char *name, uint64_t objid, uint64_t off)
{
	os_log(os, LOG_ERR, "object %s (id %" PRIu64 ") offset %" PRIu64
	       ": checksum mismatch in stored data", name, objid, off);
	return -EIO;
}

int
os_read_block(struct os *os, int fd, const char *name, uint64_t objid,
	   uint32_t cno, unsigned b, const struct os_cmeta *m, uint8_t *out)
{
	uint64_t off = (uint64_t)cno * OS_CHUNK + (uint64_t)b * OS_BLOCK;
	int rc;

	if (!m->present || (m->zero & (1u << b))) {
		memset(out, 0, OS_BLOCK);
		return 0;
	}
	if (fd < 0) {
		os_log(os, LOG_ERR, "object %s (id %" PRIu64 ") offset %" PRIu64
		       ": stored data missing: %s", name, objid, off, strerror(-fd));
		return -EIO;
	}
	rc = read_stored(os, fd, m, cno, b, out, OS_BLOCK);
	if (rc < 0)
		return read_failed(os, name, off, rc);
	if (rc == 1)
		return crc_mismatch(os, name, objid, off);
	return 0;
}

int
os_read_zchunk(struct os *os, ZSTD_DCtx *dctx, int fd, const char *name,
	    uint64_t objid, uint32_t cno, const struct os_cmeta *m, uint8_t *out)
{
	uint64_t off = (uint64_t)cno * OS_CHUNK;
	uint8_t *tmp = malloc(m->stored);
	size_t got;
	int rc;

	if (tmp == NULL)
		return -ENOMEM;
	rc = fd < 0 ? fd : read_stored(os, fd, m, cno, 0, tmp, m->stored);
	if (rc == 1)
		rc = -EBADMSG;
	if (rc == 0) {
		got = ZSTD_decompressDCtx(dctx, out, OS_CHUNK, tmp, m->stored);
		if (ZSTD_isError(got) || got != OS_CHUNK)
			rc = -EBADMSG;
	}
	free(tmp);
	if (rc < 0) {
		os_log(os, LOG_ERR, "object %s (id %" PRIu64 ") offset %" PRIu64
		       ": %s in stored data", name, objid, off,
		       rc == -EBADMSG ? "checksum mismatch" : strerror(-rc));
		return rc == -ENOMEM ? rc : -EIO;
	}
	return 0;
}

/* Do an inline chunk's bytes match their checksum?  0, or -EIO (logged). */
static int
ichunk_check(struct os *os, const char *name, uint64_t objid, uint32_t cno,
	     const struct os_cmeta *m)
{
	if (m->stored > OS_CHUNK || tsr_crc32c(0, m->inl, m->stored) != m->crc[0])
		return crc_mismatch(os, name, objid, (uint64_t)cno * OS_CHUNK);
	return 0;
}

int
os_read_ichunk(struct os *os, const char *name, uint64_t objid, uint32_t cno,
	       const struct os_cmeta *m, uint8_t *out)
{
	int rc = ichunk_check(os, name, objid, cno, m);

	if (rc < 0)
		return rc;
	memcpy(out, m->inl, m->stored);
	memset(out + m->stored, 0, OS_CHUNK - m->stored);
	return 0;
}

int
os_chunk_stored_ok(struct os *os, int fd, uint32_t cno, const struct os_cmeta *m)
{
	size_t n = m->kind == OS_CHUNK_ZSTD ? m->stored : OS_BLOCK;
	uint8_t *buf;
	int rc = 0;

	if (!m->present || m->kind == OS_CHUNK_INLINE)
		return 1; /* nothing stored outside the map */
	if (n == 0 || n > OS_CHUNK)
		return 0;
	if ((buf = malloc(n)) == NULL)
		return -ENOMEM;
	if (m->kind == OS_CHUNK_ZSTD)
		rc = read_stored(os, fd, m, cno, 0, buf, n);
	for (unsigned b = 0; m->kind == OS_CHUNK_RAW && b < OS_BPC && rc == 0; b++)
		if (!(m->zero & (1u << b)))
			rc = read_stored(os, fd, m, cno, b, buf, OS_BLOCK);
	free(buf);
	return rc < 0 ? rc : rc == 0;
}

/* ---- Reads ------------------------------------------------------------------
 *
 * Readers take the read lock, so a transaction being applied is seen
 * whole or not at all, and read LevelDB and the files directly. */

static int
get_onode(struct os *os, const struct tsr_coll_id *cid, const void *oid,
	  size_t oid_len, struct onode *on)
{
	uint8_t k[KEY_MAX];
	void *v;
	size_t vl;
	char nb[96], err[256];
	int rc;

	if (oid_len == 0 || oid_len > TSR_TXN_MAX_NAME)
		return -EINVAL;
	rc = tsr_kv_get(os->kv, k, os_key_obj(k, cid, oid, oid_len), &v, &vl, err,
			sizeof(err));
	if (rc == -ENOENT)
		return rc;
	if (rc < 0) {
		os_log(os, LOG_ERR, "%s", err);
		return -EIO;
	}
	rc = os_onode_decode(v, vl, on);
	tsr_kv_free(v);
	if (rc < 0)
		os_log(os, LOG_ERR, "%s: onode of object %s is damaged", os->path,
		       os_oid_str(oid, oid_len, nb, sizeof(nb)));
	return rc;
}

struct cmaps {
	uint32_t first, n;
	struct os_cmeta *m;
	int bad;
};

static int
cmaps_add(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct cmaps *c = arg;
	uint64_t objid;
	uint32_t no;

	if (!os_key_is_chunk(k, kl, &objid, &no))
		return 0;
	if (no < c->first || no - c->first >= c->n)
		return 0;
	struct os_cmeta *m = &c->m[no - c->first];
	if (os_cmeta_decode(v, vl, m) < 0) {
		if (c->bad == 0)
			c->bad = 1;
	} else if (m->kind == OS_CHUNK_INLINE) {
		/* the record goes when this returns: the bytes are kept */
		uint8_t *copy = malloc(m->stored);
		if (copy == NULL) {
			m->present = 0;
			c->bad = -ENOMEM;
			return 0;
		}
		memcpy(copy, m->inl, m->stored);
		m->inl = copy;
	}
	return 0;
}

static void
cmaps_free(struct cmaps *c)
{
	for (uint32_t i = 0; c->m != NULL && i < c->n; i++)
		if (c->m[i].present && c->m[i].kind == OS_CHUNK_INLINE)
			free((void *)c->m[i].inl);
	free(c->m);
}

/* A run of whole raw blocks: logically consecutive in the object and
 * stored consecutively, read with one pread straight into the caller's
 * buffer and then checked block by block.  A 4 MiB object on the file
 * backend is one run: one system call instead of 1024.  A run of at least
 * direct_read_min bytes into an aligned buffer is read with O_DIRECT: the
 * device writes into the buffer, with no copy through the page cache
 * (which on this kind of read costs more CPU than the copy saves). */
struct run {
	struct os *os;
	const struct cmaps *cm;
	const char *name;
	uint64_t objid;
	int fd;          /* buffered */
	int dfd;         /* O_DIRECT: -1 not yet asked for, < -1 none */
	uint64_t lb;     /* the object's first block in the run */
	uint64_t stored; /* where it is stored */
	uint32_t n;      /* blocks */
	uint8_t *dst;
	uint32_t *crc;   /* the CRC32C of what was read so far, or NULL */
	int cache;       /* reread_cache applies (read_crc: clients' reads) */
};

/* Fold n more bytes of the answer, whose CRC32C is c, into r->crc. */
static void
crc_fold(struct run *r, uint32_t c, uint64_t n)
{
	if (r->crc)
		*r->crc = tsr_crc32c_combine(*r->crc, c, n);
}

/* Fold the n bytes at p into r->crc (computed only when it is wanted). */
static void
crc_fold_bytes(struct run *r, const uint8_t *p, uint64_t n)
{
	if (r->crc)
		crc_fold(r, tsr_crc32c(0, p, n), n);
}

/* Read len bytes at off into dst with O_DIRECT as far as the store lets
 * (a file's end need not be aligned: the rest comes through the page
 * cache); 0 or -errno. */
static int
pread_direct(struct run *r, uint8_t *dst, size_t len, uint64_t off)
{
	size_t done = 0;

	if (r->dfd == -1) {
		r->dfd = r->os->hooks->data_fd(r->os, r->objid, 2);
		if (r->dfd < 0)
			r->dfd = -2;
	}
	while (r->dfd >= 0 && done < len) {
		ssize_t got = pread(r->dfd, dst + done, len - done, (off_t)(off + done));

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno != EINVAL)
			return -errno;
		if (got <= 0)
			break; /* the end of the file, or O_DIRECT refused here */
		done += (size_t)got;
		if (done % OS_BLOCK)
			break;
	}
	return done < len ? os_pread_full(r->fd, dst + done, len - done, off + done) : 0;
}

/* reread_cache: a large run read directly for the second time (as far as
 * a small table of hashes remembers) is then read into the page cache by
 * the kernel in the background (WILLNEED), and read through the cache
 * from then on; so data read again and again comes from memory, while a
 * scan, which reads each range once, stays out of the cache and costs no
 * second read of the device.  (Asking the cache first would not do: a
 * read that finds nothing there starts the kernel's readahead all the
 * same, even one that must not wait.)  A range the kernel has evicted
 * since is read through the cache, and so cached again.  Writes are
 * direct or go through the same cache, so the kernel keeps it coherent;
 * every block's checksum is checked all the same.  Only clients' reads
 * (read_crc, which the OSD serves them with) take part: scrub and
 * recovery read with plain read, always from the device, so a deep scrub
 * checks what is stored, never a cached copy.  The slot holds the
 * range's hash with its state in the low bits: 1 read once, 2 cached. */
static uint64_t *
reread_slot(struct run *r, size_t len, uint64_t *key)
{
	size_t n = sizeof(r->os->seen) / sizeof(r->os->seen[0]);

	*key = (r->objid * 0x9E3779B97F4A7C15ull ^ r->stored ^ ((uint64_t)len << 40)) & ~3ull;
	return &r->os->seen[(*key >> 20) % n];
}

static int
run_read_large(struct run *r, size_t len)
{
	uint64_t key, *slot = reread_slot(r, len, &key), v;
	int rc;

	if (!r->os->reread_cache || !r->cache)
		return pread_direct(r, r->dst, len, r->stored);
	v = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (v == (key | 2))
		return os_pread_full(r->fd, r->dst, len, r->stored);
	if ((rc = pread_direct(r, r->dst, len, r->stored)) < 0)
		return rc;
	if (v == (key | 1)) {
		posix_fadvise(r->fd, (off_t)r->stored, (off_t)len, POSIX_FADV_WILLNEED);
		__atomic_store_n(slot, key | 2, __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(slot, key | 1, __ATOMIC_RELAXED);
	}
	return 0;
}

static int
run_flush(struct run *r)
{
	size_t len = (size_t)r->n * OS_BLOCK;
	int rc;

	if (r->n == 0)
		return 0;
	if (r->os->direct_min && len >= r->os->direct_min && r->dfd != -2 &&
	    (uintptr_t)r->dst % OS_BLOCK == 0 && r->stored % OS_BLOCK == 0)
		rc = run_read_large(r, len);
	else
		rc = os_pread_full(r->fd, r->dst, len, r->stored);
	if (rc < 0)
		return read_failed(r->os, r->name, r->lb * OS_BLOCK, rc);
	for (uint32_t i = 0; i < r->n; i++) {
		uint64_t lb = r->lb + i;
		const struct os_cmeta *m = &r->cm->m[lb / OS_BPC - r->cm->first];

		if (tsr_crc32c(0, r->dst + (size_t)i * OS_BLOCK, OS_BLOCK) !=
		    m->crc[lb % OS_BPC])
			return crc_mismatch(r->os, r->name, r->objid, lb * OS_BLOCK);
		crc_fold(r, m->crc[lb % OS_BPC], OS_BLOCK);
	}
	r->n = 0;
	return 0;
}

/* Add block lb (stored at `stored`, read into dst) to the run, flushing
 * the run first when the block does not continue it. */
static int
run_add(struct run *r, uint64_t lb, uint64_t stored, uint8_t *dst)
{
	int rc;

	if (r->n > 0 && r->lb + r->n == lb &&
	    r->stored + (uint64_t)r->n * OS_BLOCK == stored &&
	    r->dst + (size_t)r->n * OS_BLOCK == dst)
		return r->n++, 0;
	if ((rc = run_flush(r)) < 0)
		return rc;
	r->lb = lb;
	r->stored = stored;
	r->n = 1;
	r->dst = dst;
	return 0;
}

static int
read_locked(struct os *os, const struct tsr_coll_id *cid, const void *oid,
	    size_t oid_len, uint64_t off, uint64_t len, uint8_t *out,
	    uint64_t *out_len, uint32_t *crc)
{
	struct cmaps cm;
	struct onode on;
	struct run run = { .os = os, .cm = &cm, .dfd = -1, .crc = crc, .cache = crc != NULL };
	uint8_t a[16], b[16], *tmp = NULL;
	ZSTD_DCtx *dctx = NULL;
	char nb[96], err[256];
	int fd = -ENOENT, fd_tried = 0, rc;
	uint64_t n, done = 0;

	if ((rc = get_onode(os, cid, oid, oid_len, &on)) < 0)
		return rc;
	*out_len = 0;
	if (off >= on.size || len == 0)
		return 0;
	n = on.size - off < len ? on.size - off : len;
	cm.first = (uint32_t)(off / OS_CHUNK);
	cm.n = (uint32_t)((off + n - 1) / OS_CHUNK - cm.first + 1);
	cm.bad = 0;
	cm.m = calloc(cm.n, sizeof(*cm.m));
	tmp = malloc(OS_CHUNK);
	if (cm.m == NULL || tmp == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rc = tsr_kv_scan(os->kv, a, os_key_chunk(a, on.objid, cm.first), b,
			 os_key_chunk(b, on.objid, cm.first + cm.n), cmaps_add, &cm,
			 err, sizeof(err));
	os_oid_str(oid, oid_len, nb, sizeof(nb));
	run.name = nb;
	run.objid = on.objid;
	if (rc == 0 && cm.bad == -ENOMEM) {
		rc = -ENOMEM;
		goto out;
	}
	if (rc < 0 || cm.bad) {
		os_log(os, LOG_ERR, "%s: object %s: chunk maps unreadable: %s",
		       os->path, nb, rc < 0 ? err : "damaged record");
		rc = -EIO;
		goto out;
	}
	while (done < n) {
		uint64_t pos = off + done;
		uint32_t no = (uint32_t)(pos / OS_CHUNK);
		uint32_t coff = (uint32_t)(pos % OS_CHUNK);
		uint32_t take = n - done < OS_CHUNK - coff ? (uint32_t)(n - done)
							   : OS_CHUNK - coff;
		const struct os_cmeta *m = &cm.m[no - cm.first];

		if (m->present && m->kind != OS_CHUNK_INLINE && !fd_tried) {
			fd = os->hooks->data_fd(os, on.objid, 1);
			fd_tried = 1;
			run.fd = fd;
		}
		if (m->present && m->kind == OS_CHUNK_INLINE) {
			/* checked whole, and only the range asked for copied
			 * (the rest of the chunk reads as zeros) */
			uint32_t have = m->stored > coff ? m->stored - coff : 0;
			if (have > take)
				have = take;
			if ((rc = run_flush(&run)) < 0 ||
			    (rc = ichunk_check(os, nb, on.objid, no, m)) < 0)
				goto out;
			if (have > 0)
				memcpy(out + done, m->inl + coff, have);
			memset(out + done + have, 0, take - have);
			crc_fold_bytes(&run, out + done, take);
			done += take;
			continue;
		}
		if (m->present && m->kind == OS_CHUNK_ZSTD) {
			/* the whole chunk at once */
			if ((rc = run_flush(&run)) < 0)
				goto out;
			if (dctx == NULL && (dctx = ZSTD_createDCtx()) == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			if ((rc = os_read_zchunk(os, dctx, fd, nb, on.objid, no, m, tmp)) < 0)
				goto out;
			memcpy(out + done, tmp + coff, take);
			crc_fold_bytes(&run, out + done, take);
			done += take;
			continue;
		}
		for (uint32_t bo = coff / OS_BLOCK * OS_BLOCK; bo < coff + take;
		     bo += OS_BLOCK) {
			uint32_t s = bo > coff ? bo : coff;
			uint32_t e = bo + OS_BLOCK < coff + take ? bo + OS_BLOCK
								 : coff + take;
			unsigned bi = bo / OS_BLOCK;
			uint8_t *dst = out + done + (s - coff);

			if (s == bo && e == bo + OS_BLOCK && fd >= 0 && m->present &&
			    !(m->zero & (1u << bi))) {
				rc = run_add(&run, (uint64_t)no * OS_BPC + bi,
					     os->hooks->stored_off(os, m, no, bi), dst);
				if (rc < 0)
					goto out;
				continue;
			}
			if ((rc = run_flush(&run)) < 0 ||
			    (rc = os_read_block(os, fd, nb, on.objid, no, bi, m, tmp)) < 0)
				goto out;
			memcpy(dst, tmp + (s - bo), e - s);
			crc_fold_bytes(&run, dst, e - s);
		}
		done += take;
	}
	if ((rc = run_flush(&run)) < 0)
		goto out;
	*out_len = n;
	rc = 0;
out:
	if (fd >= 0)
		os->hooks->data_fd_done(os, fd, 1);
	if (run.dfd >= 0)
		os->hooks->data_fd_done(os, run.dfd, 2);
	ZSTD_freeDCtx(dctx);
	cmaps_free(&cm);
	free(tmp);
	return rc;
}

/* crc NULL: none computed. */
static int
read_mounted(void *inst, const struct tsr_coll_id *cid, const void *oid,
	     size_t oid_len, uint64_t off, uint64_t len, void *buf,
	     uint64_t *out_len, uint32_t *crc)
{
	struct os *os = inst;
	int rc;

	if (!os->mounted)
		return -EINVAL;
	pthread_rwlock_rdlock(&os->lock);
	rc = read_locked(os, cid, oid, oid_len, off, len, buf, out_len, crc);
	pthread_rwlock_unlock(&os->lock);
	return rc;
}

int
os_read(void *inst, const struct tsr_coll_id *cid, const void *oid,
	size_t oid_len, uint64_t off, uint64_t len, void *buf, uint64_t *out_len)
{
	return read_mounted(inst, cid, oid, oid_len, off, len, buf, out_len, NULL);
}

/* The CRC32C folded from the blocks' own (a pass over partial blocks,
 * holes and compressed chunks only). */
int
os_read_crc(void *inst, const struct tsr_coll_id *cid, const void *oid,
	    size_t oid_len, uint64_t off, uint64_t len, void *buf,
	    uint64_t *out_len, uint32_t *crc)
{
	*crc = 0;
	return read_mounted(inst, cid, oid, oid_len, off, len, buf, out_len, crc);
}

int
os_stat(void *inst, const struct tsr_coll_id *cid, const void *oid,
	size_t oid_len, struct tsr_obj_stat *st)
{
	struct os *os = inst;
	struct onode on;
	int rc;

	if (!os->mounted)
		return -EINVAL;
	pthread_rwlock_rdlock(&os->lock);
	rc = get_onode(os, cid, oid, oid_len, &on);
	pthread_rwlock_unlock(&os->lock);
	if (rc == 0) {
		st->size = on.size;
		st->mtime_ns = on.mtime;
	}
	return rc;
}

static int
get_sub(struct os *os, char tag, const struct tsr_coll_id *cid, const void *oid,
	size_t oid_len, const void *key, size_t key_len, void *buf,
	size_t buflen, size_t *val_len)
{
	uint8_t k[KEY_MAX];
	struct onode on = { 0 }; /* objid 0: the object is missing */
	char err[256];
	void *v;
	size_t vl;
	int rc;

	if (!os->mounted)
		return -EINVAL;
	if (key_len > TSR_TXN_MAX_NAME)
		return -ENAMETOOLONG;
	pthread_rwlock_rdlock(&os->lock);
	rc = get_onode(os, cid, oid, oid_len, &on);
	if (rc == 0)
		rc = tsr_kv_get(os->kv, k, os_key_sub(k, tag, on.objid, key, key_len),
				&v, &vl, err, sizeof(err));
	pthread_rwlock_unlock(&os->lock);
	if (rc == -ENOENT && on.objid)
		return -ENODATA;
	if (rc < 0)
		return rc;
	*val_len = vl;
	if (vl > buflen) {
		tsr_kv_free(v);
		return -ERANGE;
	}
	if (vl)
		memcpy(buf, v, vl);
	tsr_kv_free(v);
	return 0;
}

int
os_getattr(void *inst, const struct tsr_coll_id *cid, const void *oid,
	   size_t oid_len, const void *key, size_t key_len, void *buf,
	   size_t buflen, size_t *val_len)
{
	return get_sub(inst, 'A', cid, oid, oid_len, key, key_len, buf, buflen,
		       val_len);
}

int
os_omap_get(void *inst, const struct tsr_coll_id *cid, const void *oid,
	    size_t oid_len, const void *key, size_t key_len, void *buf,
	    size_t buflen, size_t *val_len)
{
	return get_sub(inst, 'M', cid, oid, oid_len, key, key_len, buf, buflen,
		       val_len);
}

struct subscan {
	tsr_kv_cb cb;
	void *arg;
};

static int
subscan_one(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct subscan *s = arg;

	return s->cb(s->arg, (const uint8_t *)k + 9, kl - 9, v, vl);
}

static int
scan_sub(struct os *os, char tag, const struct tsr_coll_id *cid,
	 const void *oid, size_t oid_len, const void *start, size_t start_len,
	 tsr_kv_cb cb, void *arg)
{
	uint8_t a[KEY_MAX], b[16];
	struct subscan s = { cb, arg };
	struct onode on;
	char err[256];
	size_t al, bl;
	int rc;

	if (!os->mounted)
		return -EINVAL;
	if (start_len > TSR_TXN_MAX_NAME)
		return -ENAMETOOLONG;
	pthread_rwlock_rdlock(&os->lock);
	rc = get_onode(os, cid, oid, oid_len, &on);
	if (rc == 0) {
		bl = os_key_after(b, a, os_key_sub(a, tag, on.objid, NULL, 0));
		al = os_key_sub(a, tag, on.objid, start, start_len);
		rc = tsr_kv_scan(os->kv, a, al, b, bl, subscan_one, &s, err,
				 sizeof(err));
	}
	pthread_rwlock_unlock(&os->lock);
	return rc;
}

int
os_getattrs(void *inst, const struct tsr_coll_id *cid, const void *oid,
	    size_t oid_len, tsr_kv_cb cb, void *arg)
{
	return scan_sub(inst, 'A', cid, oid, oid_len, NULL, 0, cb, arg);
}

int
os_omap_iter(void *inst, const struct tsr_coll_id *cid, const void *oid,
	     size_t oid_len, const void *start, size_t start_len, tsr_kv_cb cb,
	     void *arg)
{
	return scan_sub(inst, 'M', cid, oid, oid_len, start, start_len, cb, arg);
}

struct collscan {
	tsr_coll_cb cb;
	void *arg;
};

static int
coll_one(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct collscan *s = arg;
	struct tsr_coll_id cid;

	(void)v;
	(void)vl;
	if (kl != 1 + CID_LEN)
		return 0;
	os_cid_get((const uint8_t *)k + 1, &cid);
	return s->cb(s->arg, &cid);
}

int
os_list_colls(void *inst, tsr_coll_cb cb, void *arg)
{
	struct os *os = inst;
	struct collscan s = { cb, arg };
	char err[256];
	int rc;

	if (!os->mounted)
		return -EINVAL;
	pthread_rwlock_rdlock(&os->lock);
	rc = tsr_kv_scan(os->kv, "L", 1, "M", 1, coll_one, &s, err, sizeof(err));
	pthread_rwlock_unlock(&os->lock);
	return rc;
}

struct objscan {
	tsr_name_cb cb;
	void *arg;
	uint32_t max, seen;
	struct tsr_cursor *cursor;
	int more, stopped;
};

static int
obj_one(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct objscan *s = arg;
	const uint8_t *name = (const uint8_t *)k + 1 + CID_LEN;
	size_t n = kl - 1 - CID_LEN;
	int rc;

	(void)v;
	(void)vl;
	if (s->seen == s->max) {
		s->more = 1;
		return 1;
	}
	s->seen++;
	memcpy(s->cursor->bytes, name, n);
	s->cursor->len = (uint32_t)n;
	rc = s->cb(s->arg, name, n);
	if (rc != 0)
		s->stopped = rc;
	return rc;
}

int
os_list_objects(void *inst, const struct tsr_coll_id *cid,
		struct tsr_cursor *cursor, uint32_t max, tsr_name_cb cb, void *arg)
{
	struct os *os = inst;
	struct objscan s = { cb, arg, max, 0, cursor, 0, 0 };
	uint8_t a[KEY_MAX + 1], b[1 + CID_LEN];
	size_t al, bl;
	char err[256];
	int rc, owned;
	void *v;
	size_t vl;

	if (!os->mounted)
		return -EINVAL;
	if (cursor->len > TSR_TXN_MAX_NAME)
		return -EINVAL;
	if (max == 0)
		return 0;
	pthread_rwlock_rdlock(&os->lock);
	al = os_key_coll(a, cid);
	rc = tsr_kv_get(os->kv, a, al, &v, &vl, err, sizeof(err));
	(void)owned;
	if (rc == 0) {
		tsr_kv_free(v);
		al = os_key_obj(a, cid, cursor->bytes, cursor->len);
		if (cursor->len)
			a[al++] = 0; /* strictly after the last name returned */
		bl = os_key_after(b, a, 1 + CID_LEN);
		rc = tsr_kv_scan(os->kv, a, al, b, bl, obj_one, &s, err, sizeof(err));
		if (rc == 1 && s.more)
			rc = 0;
		else if (rc == 0)
			cursor->len = 0; /* exhausted */
	}
	pthread_rwlock_unlock(&os->lock);
	return rc;
}

int
os_statfs(void *inst, struct tsr_statfs *st)
{
	struct os *os = inst;
	uint64_t total, avail;
	int rc;

	if (!os->mounted)
		return -EINVAL;
	pthread_rwlock_rdlock(&os->lock);
	st->used = os->sb.bytes;
	st->objects = os->sb.objects;
	rc = os->hooks->space(os, &total, &avail);
	pthread_rwlock_unlock(&os->lock);
	if (rc < 0)
		return rc;
	st->total = total;
	st->available = avail > os->min_free ? avail - os->min_free : 0;
	return 0;
}
