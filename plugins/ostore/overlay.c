/* overlay.c — preparing transactions against the store: the overlay of
 * key/value changes (a kvov) and of data changes as whole 64 KiB chunks
 * in memory, where every operation sees the ones before it; then turning
 * dirty chunks into what a backend stores, and the overlay's key/value
 * changes into the order to apply them. */
#include "ostore_int.h"
#include "errf.h"

#include <tessera/crc32c.h>
#include <tessera/kv.h>
#include <tessera/txn.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- Preparing a transaction ---------------------------------------------
 *
 * The overlay: key/value changes in a kvov, data changes as whole chunks
 * in memory.  Every operation reads and writes through it. */

/* The overlay's data of object objid, or NULL when it has none yet. */
static struct os_file *
ov_file_find(const struct os_prep *p, uint64_t objid)
{
	for (size_t i = 0; i < p->nfiles; i++)
		if (p->files[i]->objid == objid)
			return p->files[i];
	return NULL;
}

static struct os_file *
ov_file(struct os_prep *p, uint64_t objid, const void *oid, size_t oid_len)
{
	struct os_file *found = ov_file_find(p, objid);

	if (found != NULL)
		return found;
	if (p->nfiles == p->fcap) {
		size_t ncap = p->fcap ? p->fcap * 2 : 8;
		struct os_file **nf = realloc(p->files, ncap * sizeof(*nf));
		if (nf == NULL)
			return NULL;
		p->files = nf;
		p->fcap = ncap;
	}
	struct os_file *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return NULL;
	f->objid = objid;
	f->trunc_to = UINT64_MAX;
	f->size = UINT64_MAX;
	f->name = os_oid_str(oid, oid_len, f->namebuf, sizeof(f->namebuf));
	p->files[p->nfiles++] = f;
	return f;
}

static void
chunk_buf_free(struct os_chunk *c)
{
	if (!c->borrowed)
		free(c->buf);
	c->buf = NULL;
	c->borrowed = 0;
}

/* Make a borrowed chunk's content its own before it is changed. */
static int
chunk_own(struct os_chunk *c)
{
	uint8_t *buf;

	if (!c->borrowed)
		return 0;
	if (posix_memalign((void **)&buf, OS_BLOCK, OS_CHUNK) != 0)
		return -ENOMEM;
	memcpy(buf, c->buf, OS_CHUNK);
	c->buf = buf;
	c->borrowed = 0;
	return 0;
}

static void
ov_file_free(struct os_file *f)
{
	for (size_t i = 0; i < f->nchunks; i++) {
		chunk_buf_free(f->chunks[i]);
		free(f->chunks[i]);
	}
	free(f->chunks);
	free(f->punches);
	free(f);
}

void
os_prep_release(struct os_prep *p)
{
	for (size_t i = 0; i < p->nfiles; i++)
		ov_file_free(p->files[i]);
	free(p->files);
	free(p->new_ids);
	kvov_reset(&p->kv);
}

static size_t
chunk_find(const struct os_file *f, uint32_t no, int *found)
{
	size_t lo = 0, hi = f->nchunks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->chunks[mid]->no < no)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < f->nchunks && f->chunks[lo]->no == no;
	return lo;
}

/* Chunk no's map in m; with buf, an inline chunk's bytes are checked and
 * the whole chunk goes into buf (m->inl is never left pointing into the
 * record, which goes). */
static int
get_cmeta(struct os_prep *p, const struct os_file *f, uint32_t no,
	  struct os_cmeta *m, uint8_t *buf)
{
	uint64_t objid = f->objid;
	uint8_t k[16];
	void *v;
	size_t vl, kl;
	int owned, rc;

	kl = os_key_chunk(k, objid, no);
	/* (an object this overlay made has no chunk maps in the store) */
	if (os_prep_is_new(p, objid))
		rc = kvov_get_pending(&p->kv, k, kl, &v, &vl, &owned);
	else
		rc = kvov_get(&p->kv, k, kl, &v, &vl, &owned, p->err, sizeof(p->err));
	if (rc == -ENOENT) {
		memset(m, 0, sizeof(*m));
		return 0;
	}
	if (rc < 0)
		return -EIO;
	rc = os_cmeta_decode(v, vl, m);
	if (rc == 0 && m->kind == OS_CHUNK_INLINE) {
		if (buf != NULL && os_read_ichunk(p->os, f->name, objid, no, m, buf) < 0)
			rc = errf(p->err, sizeof(p->err), -EIO, "object %s chunk %u: "
				  "inline data does not match its checksum",
				  f->name, no);
		m->inl = NULL;
	} else if (rc < 0) {
		rc = errf(p->err, sizeof(p->err), -EIO, "chunk map of object id %"
			  PRIu64 " chunk %u is damaged", objid, no);
	}
	if (owned)
		tsr_kv_free(v);
	return rc;
}

/* The chunk in the overlay, materialized on first touch.  With whole (a
 * block-aligned OS_CHUNK of a queued WRITE that replaces the chunk), the
 * chunk borrows it as its content instead of copying. */
static int
chunk_get(struct os_prep *p, struct os_file *f, uint32_t no,
	  const uint8_t *whole, struct os_chunk **out)
{
	int found, rc;
	size_t i = chunk_find(f, no, &found);
	struct os_chunk *c;

	if (found) {
		c = f->chunks[i];
		if (whole != NULL) {
			chunk_buf_free(c);
			c->buf = (uint8_t *)whole;
			c->borrowed = 1;
			c->loaded = 0xffff;
		}
		*out = c;
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	if (whole != NULL) {
		c->buf = (uint8_t *)whole;
		c->borrowed = 1;
	} else if (posix_memalign((void **)&c->buf, OS_BLOCK, OS_CHUNK) != 0) {
		/* block-aligned, so a direct write can use O_DIRECT */
		free(c);
		return -ENOMEM;
	}
	c->no = no;
	rc = get_cmeta(p, f, no, &c->base, whole != NULL ? NULL : c->buf);
	if (rc == 0 && whole != NULL) {
		c->loaded = 0xffff;
	} else if (rc == 0 && !c->base.present) {
		memset(c->buf, 0, OS_CHUNK);
		c->loaded = 0xffff;
	} else if (rc == 0 && c->base.kind == OS_CHUNK_INLINE) {
		c->loaded = 0xffff; /* get_cmeta put it in buf */
	} else if (rc == 0 && c->base.kind == OS_CHUNK_ZSTD) {
		int fd = p->os->hooks->data_fd(p->os, f->objid, 0);
		rc = os_read_zchunk(p->os, p->dctx, fd, f->name, f->objid, no,
				 &c->base, c->buf);
		if (fd >= 0)
			p->os->hooks->data_fd_done(p->os, fd, 0);
		/* the slot holds compressed bytes: every block must be
		 * written again if the chunk is stored raw */
		c->loaded = 0xffff;
	}
	if (rc == 0 && f->nchunks == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : 16;
		struct os_chunk **nc = realloc(f->chunks, ncap * sizeof(*nc));
		if (nc == NULL)
			rc = -ENOMEM;
		else {
			f->chunks = nc;
			f->cap = ncap;
		}
	}
	if (rc < 0) {
		chunk_buf_free(c);
		free(c);
		return rc;
	}
	memmove(&f->chunks[i + 1], &f->chunks[i], (f->nchunks - i) * sizeof(*f->chunks));
	f->chunks[i] = c;
	f->nchunks++;
	*out = c;
	return 0;
}

static int
chunk_load_block(struct os_prep *p, struct os_file *f, struct os_chunk *c,
		 unsigned b)
{
	int fd, rc;

	if (c->loaded & (1u << b))
		return 0;
	fd = (c->base.zero & (1u << b)) ? -1 : p->os->hooks->data_fd(p->os, f->objid, 0);
	rc = os_read_block(p->os, fd, f->name, f->objid, c->no, b, &c->base,
			c->buf + b * OS_BLOCK);
	if (fd >= 0)
		p->os->hooks->data_fd_done(p->os, fd, 0);
	if (rc < 0)
		return errf(p->err, sizeof(p->err), rc,
			    "object %s offset %" PRIu64 ": stored data unreadable",
			    f->name, (uint64_t)c->no * OS_CHUNK + b * OS_BLOCK);
	c->loaded |= (uint16_t)(1u << b);
	return 0;
}

/* Write len bytes (data, or zeros when data is NULL) at off.  With
 * borrow (data is a queued WRITE's, which outlives the overlay: see
 * pending_copy), whole chunks of it that are block-aligned in memory are
 * borrowed, not copied. */
static int
ov_write(struct os_prep *p, struct os_file *f, uint64_t off, uint64_t len,
	 const uint8_t *data, int borrow)
{
	while (len > 0) {
		uint32_t no = (uint32_t)(off / OS_CHUNK);
		uint32_t coff = (uint32_t)(off % OS_CHUNK);
		uint32_t n = len < OS_CHUNK - coff ? (uint32_t)len : OS_CHUNK - coff;
		const uint8_t *whole = borrow && data != NULL && n == OS_CHUNK &&
				       (uintptr_t)data % OS_BLOCK == 0 ? data : NULL;
		struct os_chunk *c;
		int rc = chunk_get(p, f, no, whole, &c);

		if (rc == 0 && whole == NULL)
			rc = chunk_own(c);
		if (rc < 0)
			return rc;
		for (unsigned b = coff / OS_BLOCK; b <= (coff + n - 1) / OS_BLOCK; b++) {
			uint32_t bs = b * OS_BLOCK;
			int covered = coff <= bs && coff + n >= bs + OS_BLOCK;
			if (!covered && (rc = chunk_load_block(p, f, c, b)) < 0)
				return rc;
			c->loaded |= (uint16_t)(1u << b);
			c->dirty |= (uint16_t)(1u << b);
		}
		if (whole != NULL)
			data += n;
		else if (data != NULL) {
			memcpy(c->buf + coff, data, n);
			data += n;
		} else {
			memset(c->buf + coff, 0, n);
		}
		off += n;
		len -= n;
	}
	return 0;
}

/* Read [off, off+len) of an object of the given size; bytes past size read
 * as zeros. */
static int
ov_read(struct os_prep *p, struct os_file *f, uint64_t size, uint64_t off,
	uint64_t len, uint8_t *out)
{
	while (len > 0) {
		uint32_t no = (uint32_t)(off / OS_CHUNK);
		uint32_t coff = (uint32_t)(off % OS_CHUNK);
		uint32_t n = len < OS_CHUNK - coff ? (uint32_t)len : OS_CHUNK - coff;
		struct os_chunk *c;
		int rc;

		if (off >= size) {
			memset(out, 0, len);
			return 0;
		}
		if ((rc = chunk_get(p, f, no, NULL, &c)) < 0)
			return rc;
		for (unsigned b = coff / OS_BLOCK; b <= (coff + n - 1) / OS_BLOCK; b++)
			if ((rc = chunk_load_block(p, f, c, b)) < 0)
				return rc;
		memcpy(out, c->buf + coff, n);
		out += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int
add_punch(struct os_file *f, uint64_t off, uint64_t len)
{
	if (len == 0)
		return 0;
	if (f->npunches == f->pcap) {
		size_t ncap = f->pcap ? f->pcap * 2 : 8;
		struct os_punch *np = realloc(f->punches, ncap * sizeof(*np));
		if (np == NULL)
			return -ENOMEM;
		f->punches = np;
		f->pcap = ncap;
	}
	f->punches[f->npunches++] = (struct os_punch){ off, len };
	return 0;
}

/* Delete the keys [a, b) of object objid: those of an object this overlay
 * made are in the overlay alone (the store has none: ids are never
 * reused), and a range the commit would look up key by key in the store
 * (a write_full's truncation of a new object) is not recorded. */
static int
del_range(struct os_prep *p, uint64_t objid, const void *a, size_t al, const void *b,
	  size_t bl)
{
	if (os_prep_is_new(p, objid)) {
		kvov_forget_range(&p->kv, a, al, b, bl);
		return 0;
	}
	return kvov_del_range(&p->kv, a, al, b, bl);
}

/* Forget chunks [from, to) (to UINT32_MAX: all the rest): their maps go,
 * and they read as zeros from now on. */
static int
drop_chunks(struct os_prep *p, struct os_file *f, uint32_t from, uint64_t to)
{
	uint8_t a[16], b[16];
	size_t al, bl;
	int found, rc;
	size_t i = chunk_find(f, from, &found), j = i;

	while (j < f->nchunks && f->chunks[j]->no < to) {
		chunk_buf_free(f->chunks[j]);
		free(f->chunks[j]);
		j++;
	}
	if (j > i) {
		memmove(&f->chunks[i], &f->chunks[j],
			(f->nchunks - j) * sizeof(*f->chunks));
		f->nchunks -= j - i;
	}
	al = os_key_chunk(a, f->objid, from);
	if (to > UINT32_MAX)
		bl = os_key_after(b, a, 9);
	else
		bl = os_key_chunk(b, f->objid, (uint32_t)to);
	if (to > UINT32_MAX) {
		uint64_t t = (uint64_t)from * OS_CHUNK;
		if (t < f->trunc_to)
			f->trunc_to = t;
		return del_range(p, f->objid, a, al, b, bl);
	}
	rc = del_range(p, f->objid, a, al, b, bl);
	return rc < 0 ? rc
		      : add_punch(f, (uint64_t)from * OS_CHUNK,
				  (to - from) * (uint64_t)OS_CHUNK);
}

/* Zero [off, end) of an object whose current size is at least end. */
static int
ov_zero(struct os_prep *p, struct os_file *f, uint64_t off, uint64_t end)
{
	uint64_t c0 = (off + OS_CHUNK - 1) / OS_CHUNK, c1 = end / OS_CHUNK;
	int rc;

	if (off >= end)
		return 0;
	if (c0 >= c1) /* inside one or two chunks */
		return ov_write(p, f, off, end - off, NULL, 0);
	if ((rc = ov_write(p, f, off, c0 * OS_CHUNK - off, NULL, 0)) < 0)
		return rc;
	if ((rc = drop_chunks(p, f, (uint32_t)c0, c1)) < 0)
		return rc;
	return ov_write(p, f, c1 * OS_CHUNK, end - c1 * OS_CHUNK, NULL, 0);
}

/* Shrink to size: the tail of the last chunk is zeroed, later chunks go. */
static int
ov_truncate(struct os_prep *p, struct os_file *f, uint64_t oldsize, uint64_t size)
{
	uint64_t keep = (size + OS_CHUNK - 1) / OS_CHUNK;
	uint64_t tail_end = keep * OS_CHUNK < oldsize ? keep * OS_CHUNK : oldsize;
	int rc;

	if (size >= oldsize)
		return 0;
	if (tail_end > size && (rc = ov_write(p, f, size, tail_end - size, NULL, 0)) < 0)
		return rc;
	return drop_chunks(p, f, (uint32_t)keep, (uint64_t)UINT32_MAX + 1);
}

/* ---- Onodes and collections through the overlay --------------------------*/

struct objref {
	const struct tsr_coll_id *cid;
	const void *oid;
	size_t oid_len;
	uint8_t key[KEY_MAX];
	size_t klen;
	int exists;
	struct onode on;
};

static void
coll_known(struct os_prep *p, const struct tsr_coll_id *cid, int exists)
{
	p->ccid = *cid;
	p->cknown = 1;
	p->cexists = exists;
}

/* Whether collection cid exists.  Every op asks, and a transaction's ops
 * name one collection as a rule: the last answer is kept (MKCOLL and
 * RMCOLL set it), which saves the store a lookup per op. */
static int
coll_exists(struct os_prep *p, const struct tsr_coll_id *cid)
{
	uint8_t k[1 + CID_LEN];
	void *v;
	size_t vl;
	int owned, rc;

	if (p->cknown && p->ccid.pool == cid->pool && p->ccid.pg == cid->pg &&
	    p->ccid.shard == cid->shard)
		return p->cexists;
	rc = kvov_get(&p->kv, k, os_key_coll(k, cid), &v, &vl, &owned, p->err,
		      sizeof(p->err));
	if (rc == 0 && owned)
		tsr_kv_free(v);
	if (rc < 0 && rc != -ENOENT)
		return -EIO;
	coll_known(p, cid, rc == 0);
	return rc == 0;
}

static int
obj_lookup(struct os_prep *p, struct objref *r, const struct tsr_coll_id *cid,
	   const void *oid, size_t oid_len)
{
	void *v;
	size_t vl;
	int owned, rc;

	r->cid = cid;
	r->oid = oid;
	r->oid_len = oid_len;
	r->klen = os_key_obj(r->key, cid, oid, oid_len);
	rc = kvov_get(&p->kv, r->key, r->klen, &v, &vl, &owned, p->err,
		      sizeof(p->err));
	if (rc == -ENOENT) {
		r->exists = 0;
		memset(&r->on, 0, sizeof(r->on));
		return 0;
	}
	if (rc < 0)
		return -EIO;
	rc = os_onode_decode(v, vl, &r->on);
	if (owned)
		tsr_kv_free(v);
	if (rc < 0) {
		char nb[96];
		return errf(p->err, sizeof(p->err), -EIO, "onode of object %s is damaged",
			    os_oid_str(oid, oid_len, nb, sizeof(nb)));
	}
	r->exists = 1;
	return 0;
}

static int
obj_store(struct os_prep *p, struct objref *r)
{
	size_t vl;
	uint8_t *v;
	int rc;

	r->on.mtime = p->now;
	v = os_onode_encode(&r->on, &vl);
	if (v == NULL)
		return -ENOMEM;
	rc = kvov_put(&p->kv, r->key, r->klen, v, vl);
	free(v);
	return rc;
}

int
os_prep_is_new(const struct os_prep *p, uint64_t objid)
{
	size_t lo = 0, hi = p->nnew;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->new_ids[mid] < objid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->nnew && p->new_ids[lo] == objid;
}

static int
obj_create(struct os_prep *p, struct objref *r)
{
	if (p->nnew == p->newcap) {
		size_t ncap = p->newcap ? 2 * p->newcap : 16;
		uint64_t *n = realloc(p->new_ids, ncap * sizeof(*n));
		if (n == NULL)
			return -ENOMEM;
		p->new_ids = n;
		p->newcap = ncap;
	}
	r->exists = 1;
	/* ids come from one counter for every commit thread: never
	 * reused, also when this overlay does not commit */
	r->on.objid = __atomic_fetch_add(&p->os->next_id, 1, __ATOMIC_RELAXED);
	p->new_ids[p->nnew++] = r->on.objid; /* ascending: one thread's */
	r->on.size = 0;
	p->dobjects++;
	return obj_store(p, r);
}

/* The object's data in the overlay; its size kept current there, for
 * os_chunk_finish (obj_set_size). */
static struct os_file *
obj_file(struct os_prep *p, struct objref *r)
{
	struct os_file *f = ov_file(p, r->on.objid, r->oid, r->oid_len);

	if (f != NULL)
		f->size = r->on.size;
	return f;
}

static int
obj_set_size(struct os_prep *p, struct objref *r, uint64_t size)
{
	p->dbytes += (int64_t)(size - r->on.size); /* negative when shrinking */
	r->on.size = size;
	struct os_file *f = ov_file_find(p, r->on.objid);
	if (f != NULL)
		f->size = size;
	return obj_store(p, r);
}

static int
obj_remove(struct os_prep *p, struct objref *r)
{
	static const char tags[] = { 'A', 'M', 'C' };
	struct os_file *f = obj_file(p, r);
	int rc;

	if (f == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(tags); i++) {
		uint8_t a[16], b[16];
		size_t al = os_key_sub(a, tags[i], r->on.objid, NULL, 0);
		size_t bl = os_key_after(b, a, al);
		if ((rc = del_range(p, r->on.objid, a, al, b, bl)) < 0)
			return rc;
	}
	for (size_t i = 0; i < f->nchunks; i++) {
		chunk_buf_free(f->chunks[i]);
		free(f->chunks[i]);
	}
	f->nchunks = 0;
	f->npunches = 0;
	f->unlink = 1;
	p->dobjects--;
	p->dbytes -= (int64_t)r->on.size;
	r->exists = 0;
	return kvov_del(&p->kv, r->key, r->klen);
}

/* Copy every key under (tag, from) to (tag, to). */
struct kvcopy {
	uint8_t **keys;
	size_t *klens;
	uint8_t **vals;
	size_t *vlens;
	size_t n, cap;
};

static int
kvcopy_add(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct kvcopy *c = arg;

	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 32;
		void *a = realloc(c->keys, ncap * sizeof(*c->keys));
		if (a) c->keys = a;
		void *b = realloc(c->vals, ncap * sizeof(*c->vals));
		if (b) c->vals = b;
		void *d = realloc(c->klens, ncap * sizeof(*c->klens));
		if (d) c->klens = d;
		void *e = realloc(c->vlens, ncap * sizeof(*c->vlens));
		if (e) c->vlens = e;
		if (!a || !b || !d || !e)
			return -ENOMEM;
		c->cap = ncap;
	}
	c->keys[c->n] = malloc(kl);
	c->vals[c->n] = malloc(vl ? vl : 1);
	if (c->keys[c->n] == NULL || c->vals[c->n] == NULL) {
		free(c->keys[c->n]);
		free(c->vals[c->n]);
		return -ENOMEM;
	}
	memcpy(c->keys[c->n], k, kl);
	if (vl)
		memcpy(c->vals[c->n], v, vl);
	c->klens[c->n] = kl;
	c->vlens[c->n] = vl;
	c->n++;
	return 0;
}

static void
kvcopy_free(struct kvcopy *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->keys[i]);
		free(c->vals[i]);
	}
	free(c->keys);
	free(c->vals);
	free(c->klens);
	free(c->vlens);
}

static int
copy_keys(struct os_prep *p, char tag, uint64_t from, uint64_t to)
{
	struct kvcopy c = { 0 };
	uint8_t a[16], b[16];
	size_t al = os_key_sub(a, tag, from, NULL, 0), bl = os_key_after(b, a, al);
	int rc;

	/* collect first: the scan reads the overlay the puts would change */
	rc = kvov_scan(&p->kv, a, al, b, bl, kvcopy_add, &c, p->err, sizeof(p->err));
	for (size_t i = 0; i < c.n && rc == 0; i++) {
		uint8_t *nk = malloc(c.klens[i]);
		if (nk == NULL) {
			rc = -ENOMEM;
			break;
		}
		memcpy(nk, c.keys[i], c.klens[i]);
		be64(nk + 1, to);
		rc = kvov_put(&p->kv, nk, c.klens[i], c.vals[i], c.vlens[i]);
		free(nk);
	}
	kvcopy_free(&c);
	return rc;
}

/* Is chunk no of the file stored or in the overlay? */
static int
chunk_present(struct os_prep *p, struct os_file *f, uint32_t no, int *present)
{
	struct os_cmeta m;
	int found;

	chunk_find(f, no, &found);
	if (found) {
		*present = 1;
		return 0;
	}
	int rc = get_cmeta(p, f, no, &m, NULL);
	*present = m.present;
	return rc;
}

static int
op_clone(struct os_prep *p, struct objref *src, struct objref *dst)
{
	struct os_file *sf, *df;
	uint8_t *buf;
	int rc;

	if (dst->exists && (rc = obj_remove(p, dst)) < 0)
		return rc;
	if ((rc = obj_create(p, dst)) < 0)
		return rc;
	if ((rc = copy_keys(p, 'A', src->on.objid, dst->on.objid)) < 0 ||
	    (rc = copy_keys(p, 'M', src->on.objid, dst->on.objid)) < 0)
		return rc;
	sf = obj_file(p, src);
	df = obj_file(p, dst);
	buf = malloc(OS_CHUNK);
	if (sf == NULL || df == NULL || buf == NULL) {
		free(buf);
		return -ENOMEM;
	}
	for (uint64_t off = 0; off < src->on.size && rc == 0; off += OS_CHUNK) {
		uint64_t n = src->on.size - off < OS_CHUNK ? src->on.size - off : OS_CHUNK;
		int present;
		if ((rc = chunk_present(p, sf, (uint32_t)(off / OS_CHUNK), &present)) < 0 ||
		    !present)
			continue;
		if ((rc = ov_read(p, sf, src->on.size, off, n, buf)) == 0)
			rc = ov_write(p, df, off, n, buf, 0);
	}
	free(buf);
	if (rc == 0)
		rc = obj_set_size(p, dst, src->on.size);
	return rc;
}

static int
op_clone_range(struct os_prep *p, struct objref *src, struct objref *dst,
	       const struct tsr_txn_op *op)
{
	struct os_file *sf, *df;
	uint8_t *buf;
	int rc = 0;

	if (!dst->exists && (rc = obj_create(p, dst)) < 0)
		return rc;
	sf = obj_file(p, src);
	df = obj_file(p, dst);
	buf = malloc(OS_CHUNK);
	if (sf == NULL || df == NULL || buf == NULL) {
		free(buf);
		return -ENOMEM;
	}
	for (uint64_t done = 0; done < op->len && rc == 0;) {
		uint64_t n = op->len - done < OS_CHUNK ? op->len - done : OS_CHUNK;
		if ((rc = ov_read(p, sf, src->on.size, op->off + done, n, buf)) == 0)
			rc = ov_write(p, df, op->off2 + done, n, buf, 0);
		done += n;
	}
	free(buf);
	if (rc == 0 && op->len && op->off2 + op->len > dst->on.size)
		rc = obj_set_size(p, dst, op->off2 + op->len);
	return rc;
}

static int
check_size(struct os_prep *p, const struct objref *r, uint64_t end)
{
	char nb[96];

	if (end <= p->os->max_object)
		return 0;
	return errf(p->err, sizeof(p->err), -EFBIG,
		    "object %s: %" PRIu64 " bytes is past max_object_size %" PRIu64,
		    os_oid_str(r->oid, r->oid_len, nb, sizeof(nb)), end,
		    p->os->max_object);
}

static int
stop_at_first(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	(void)arg;
	(void)k;
	(void)kl;
	(void)v;
	(void)vl;
	return 1;
}

/* The object an op names, created when the op creates missing objects. */
static int
op_target(struct os_prep *p, const struct tsr_txn_op *op, struct objref *r,
	  int create)
{
	int rc = obj_lookup(p, r, &op->cid, op->oid, op->oid_len);

	if (rc < 0)
		return rc;
	if (!r->exists)
		return create ? obj_create(p, r) : -ENOENT;
	return 0;
}

static int
prep_op(struct os_prep *p, const struct tsr_txn_op *op)
{
	uint8_t k[KEY_MAX], k2[KEY_MAX];
	size_t kl, kl2;
	struct objref r, r2;
	struct os_file *f;
	uint64_t end;
	int ex, rc;

	if ((ex = coll_exists(p, &op->cid)) < 0)
		return ex;
	switch (op->type) {
	case TSR_TXN_MKCOLL:
		if (ex)
			return -EEXIST;
		kl = os_key_coll(k, &op->cid);
		if ((rc = kvov_put(&p->kv, k, kl, "", 0)) == 0)
			coll_known(p, &op->cid, 1);
		return rc;
	case TSR_TXN_RMCOLL:
		if (!ex)
			return -ENOENT;
		kl = os_key_obj(k, &op->cid, NULL, 0);
		kl2 = os_key_after(k2, k, kl);
		rc = kvov_scan(&p->kv, k, kl, k2, kl2, stop_at_first, NULL, p->err,
			       sizeof(p->err));
		if (rc != 0)
			return rc == 1 ? -ENOTEMPTY : -EIO;
		kl = os_key_coll(k, &op->cid);
		if ((rc = kvov_del(&p->kv, k, kl)) == 0)
			coll_known(p, &op->cid, 0);
		return rc;
	default:
		break;
	}
	if (!ex)
		return -ENOENT;

	switch (op->type) {
	case TSR_TXN_TOUCH:
		if ((rc = op_target(p, op, &r, 1)) < 0)
			return rc;
		return obj_store(p, &r);
	case TSR_TXN_WRITE:
	case TSR_TXN_ZERO:
		end = op->off + op->len;
		if ((rc = op_target(p, op, &r, 1)) < 0 ||
		    (op->len && (rc = check_size(p, &r, end)) < 0))
			return rc;
		if (op->len == 0)
			return obj_store(p, &r);
		if ((f = obj_file(p, &r)) == NULL)
			return -ENOMEM;
		if (op->type == TSR_TXN_WRITE)
			rc = ov_write(p, f, op->off, op->len, op->data, 1);
		else
			rc = ov_zero(p, f, op->off, end < r.on.size ? end : r.on.size);
		if (rc < 0)
			return rc;
		return obj_set_size(p, &r, end > r.on.size ? end : r.on.size);
	case TSR_TXN_TRUNCATE:
		if ((rc = op_target(p, op, &r, 1)) < 0 ||
		    (rc = check_size(p, &r, op->off)) < 0)
			return rc;
		if (op->off < r.on.size) {
			if ((f = obj_file(p, &r)) == NULL)
				return -ENOMEM;
			if ((rc = ov_truncate(p, f, r.on.size, op->off)) < 0)
				return rc;
		}
		return obj_set_size(p, &r, op->off);
	case TSR_TXN_REMOVE:
		if ((rc = op_target(p, op, &r, 0)) < 0)
			return rc;
		return obj_remove(p, &r);
	case TSR_TXN_CLONE:
	case TSR_TXN_CLONE_RANGE:
		if ((rc = op_target(p, op, &r, 0)) < 0)
			return rc;
		if ((rc = obj_lookup(p, &r2, &op->cid, op->oid2, op->oid2_len)) < 0)
			return rc;
		if (op->type == TSR_TXN_CLONE) {
			if (r.on.objid == r2.on.objid)
				return 0; /* a copy of itself */
			return op_clone(p, &r, &r2);
		}
		if (r2.exists && r.on.objid == r2.on.objid && op->len &&
		    op->off < op->off2 + op->len && op->off2 < op->off + op->len)
			return errf(p->err, sizeof(p->err), -EINVAL,
				    "clone_range within one object with overlapping ranges");
		if ((rc = check_size(p, &r2, op->off2 + op->len)) < 0)
			return rc;
		return op_clone_range(p, &r, &r2, op);
	case TSR_TXN_SETATTR:
	case TSR_TXN_OMAP_SET:
		if ((rc = op_target(p, op, &r, 1)) < 0)
			return rc;
		kl = os_key_sub(k, op->type == TSR_TXN_SETATTR ? 'A' : 'M', r.on.objid,
			     op->key, op->key_len);
		if ((rc = kvov_put(&p->kv, k, kl, op->val, op->val_len)) < 0)
			return rc;
		return obj_store(p, &r);
	case TSR_TXN_RMATTR:
	case TSR_TXN_OMAP_RM:
		if ((rc = op_target(p, op, &r, 0)) < 0)
			return rc;
		kl = os_key_sub(k, op->type == TSR_TXN_RMATTR ? 'A' : 'M', r.on.objid,
			     op->key, op->key_len);
		if ((rc = kvov_del(&p->kv, k, kl)) < 0)
			return rc;
		return obj_store(p, &r);
	case TSR_TXN_OMAP_CLEAR:
	case TSR_TXN_OMAP_RMRANGE:
		if ((rc = op_target(p, op, &r, 0)) < 0)
			return rc;
		kl = os_key_sub(k, 'M', r.on.objid, NULL, 0);
		if (op->type == TSR_TXN_OMAP_CLEAR || op->val_len == 0) {
			kl2 = os_key_after(k2, k, kl);
			if (op->type == TSR_TXN_OMAP_RMRANGE)
				kl = os_key_sub(k, 'M', r.on.objid, op->key, op->key_len);
		} else {
			kl = os_key_sub(k, 'M', r.on.objid, op->key, op->key_len);
			kl2 = os_key_sub(k2, 'M', r.on.objid, op->val, op->val_len);
		}
		if ((rc = kvov_del_range(&p->kv, k, kl, k2, kl2)) < 0)
			return rc;
		return obj_store(p, &r);
	}
	return -EOPNOTSUPP; /* tsr_txn_validate let through an op we lack */
}

static int
is_zero(const uint8_t *p, size_t n)
{
	/* zero at the start, and every byte equal to the one before it */
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

static int
enough_space(struct os *os, uint64_t need, uint64_t reserve)
{
	uint64_t total, avail;

	if (os->hooks->space(os, &total, &avail) < 0)
		return 1; /* cannot tell: let the write find out */
	return avail >= need + reserve;
}

/* Prepare one queued transaction into the overlay.  On failure the
 * overlay holds part of it and must be rebuilt without it. */
int
os_prep_txn(struct os_prep *p, const struct os_pending *pd)
{
	struct os *os = p->os;
	int rc = 0;

	for (uint32_t i = 0; i < pd->txn.nops && rc == 0; i++) {
		p->err[0] = '\0';
		rc = prep_op(p, &pd->txn.ops[i]);
		if (rc == -EIO || (rc == -EINVAL && p->err[0]))
			os_log(os, rc == -EIO ? LOG_ERR : LOG_WARN,
			       "%s: transaction op %u (%s) failed: %s", os->path, i,
			       tsr_txn_op_name(pd->txn.ops[i].type),
			       p->err[0] ? p->err : strerror(-rc));
	}
	return rc;
}

void
os_prep_init(struct os_prep *p, struct os *os, uint64_t now, ZSTD_CCtx *cctx,
	     ZSTD_DCtx *dctx)
{
	memset(p, 0, sizeof(*p));
	p->os = os;
	kvov_init(&p->kv, os->kv);
	p->cctx = cctx;
	p->dctx = dctx;
	p->now = now;
}

/* What the overlay may need on disk: *data for its dirty chunks (whole),
 * *meta for its keys. */
static void
overlay_bytes(const struct os_prep *p, uint64_t *data, uint64_t *meta)
{
	*data = *meta = 0;
	for (size_t i = 0; i < p->nfiles; i++)
		for (size_t j = 0; j < p->files[i]->nchunks; j++)
			if (p->files[i]->chunks[j]->dirty)
				*data += OS_CHUNK;
	for (size_t i = 0; i < p->kv.nents; i++)
		*meta += p->kv.ents[i].klen + p->kv.ents[i].vlen;
}

/* Room for an overlay?  Data may not eat into min_free; a transaction that
 * writes no data may, since removing objects is how a full store is
 * emptied and min_free is the room kept for their metadata. */
int
os_room_for(struct os *os, const struct os_prep *p)
{
	uint64_t data, meta;

	overlay_bytes(p, &data, &meta);
	return data ? enough_space(os, data + meta, os->min_free)
		    : enough_space(os, meta, 0);
}


/* ---- Finishing chunks and emitting key/value changes ---------------------*/

/* A small object's chunk goes inline, in its map, when the object ends
 * at most inline_max bytes long: its bytes up to the object's end, less
 * trailing zeros (which the rest of the chunk reads as), while the
 * overlay's inline bytes stay within OS_INLINE_BATCH.  1 when it does,
 * 0 when it is stored otherwise (all zeros included), or -errno. */
static int
chunk_inline(struct os_prep *p, struct os_file *f, struct os_chunk *c,
	     struct os_chunk_out *out)
{
	uint64_t slot = (uint64_t)c->no * OS_CHUNK;
	uint32_t n;
	int rc;

	if (p->os->inline_max == 0 || f->size > p->os->inline_max || f->size <= slot)
		return 0;
	n = f->size - slot < OS_CHUNK ? (uint32_t)(f->size - slot) : OS_CHUNK;
	for (unsigned b = 0; b * OS_BLOCK < n; b++)
		if ((rc = chunk_load_block(p, f, c, b)) < 0)
			return rc;
	while (n > 0 && c->buf[n - 1] == 0)
		n--;
	if (n == 0 || p->inline_bytes + n > OS_INLINE_BATCH)
		return 0;
	p->inline_bytes += n;
	/* every block stored before is dead */
	if (c->base.present && c->base.kind == OS_CHUNK_RAW)
		out->was_stored = (uint16_t)~c->base.zero;
	out->m.present = 1;
	out->m.kind = OS_CHUNK_INLINE;
	out->m.stored = n;
	out->m.crc[0] = tsr_crc32c(0, c->buf, n);
	out->m.inl = c->buf;
	return 1;
}

int
os_chunk_finish(struct os_prep *p, struct os_file *f, struct os_chunk *c,
		struct os_chunk_out *out)
{
	struct os *os = p->os;
	int rc;

	memset(out, 0, sizeof(*out));
	if (c->base.present && c->base.kind != OS_CHUNK_RAW)
		c->dirty = 0xffff; /* the old form is compressed or inline */
	/* the old stored copies of rewritten blocks are dead */
	if (c->base.present && c->base.kind == OS_CHUNK_ZSTD)
		out->was_stored = 1;
	else if (c->base.present && c->base.kind == OS_CHUNK_RAW)
		out->was_stored = (uint16_t)(c->dirty & ~c->base.zero);
	if ((rc = chunk_inline(p, f, c, out)) != 0)
		return rc < 0 ? rc : 0;
	if (os->compress) {
		for (unsigned b = 0; b < OS_BPC; b++)
			if ((rc = chunk_load_block(p, f, c, b)) < 0)
				return rc;
		if (!is_zero(c->buf, OS_CHUNK)) {
			size_t cap = ZSTD_compressBound(OS_CHUNK);
			uint8_t *z = malloc(cap);
			size_t n;
			if (z == NULL)
				return -ENOMEM;
			n = ZSTD_compressCCtx(p->cctx, z, cap, c->buf, OS_CHUNK, os->level);
			if (!ZSTD_isError(n) && n <= OS_CHUNK - OS_BLOCK) {
				out->m.present = 1;
				out->m.kind = OS_CHUNK_ZSTD;
				out->m.stored = (uint32_t)n;
				out->m.crc[0] = tsr_crc32c(0, z, n);
				out->z = z;
				if (c->base.present && c->base.kind == OS_CHUNK_RAW)
					out->was_stored = (uint16_t)~c->base.zero;
				return 0;
			}
			free(z);
		}
		c->dirty = 0xffff; /* stored raw: every block is written */
		if (c->base.present && c->base.kind == OS_CHUNK_RAW)
			out->was_stored = (uint16_t)~c->base.zero;
	}
	out->m.present = 1;
	out->m.kind = OS_CHUNK_RAW;
	for (unsigned b = 0; b < OS_BPC; b++) {
		uint16_t bit = (uint16_t)(1u << b);
		const uint8_t *blk = c->buf + b * OS_BLOCK;

		if (!(c->dirty & bit)) {
			if (!c->base.present || (c->base.zero & bit)) {
				out->m.zero |= bit;
			} else {
				out->m.crc[b] = c->base.crc[b];
				out->m.loc[b] = c->base.loc[b];
			}
			continue;
		}
		if (is_zero(blk, OS_BLOCK)) {
			out->m.zero |= bit;
			continue;
		}
		out->m.crc[b] = tsr_crc32c(0, blk, OS_BLOCK);
		out->write |= bit;
	}
	if (out->m.zero == 0xffff)
		out->delete_map = 1;
	return 0;
}

void
os_chunk_out_release(struct os_chunk_out *out)
{
	free((void *)out->z);
	out->z = NULL;
}

int
os_emit_ranges(struct os_prep *p, os_kv_emit emit, void *arg)
{
	for (size_t i = 0; i < p->kv.nranges; i++) {
		const struct kvov_range *r = &p->kv.ranges[i];
		emit(arg, OS_KV_DELRANGE, r->start, r->slen, r->end, r->elen);
	}
	return 0;
}

int
os_emit_entries(struct os_prep *p, os_kv_emit emit, void *arg)
{
	for (size_t i = 0; i < p->kv.nents; i++) {
		const struct kvov_ent *en = &p->kv.ents[i];
		emit(arg, en->val ? OS_KV_PUT : OS_KV_DEL, en->key, en->klen,
		     en->val, en->vlen);
	}
	return 0;
}
