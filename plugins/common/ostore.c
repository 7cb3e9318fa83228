/* ostore.c — the object-store engine shared by the backend plugins (see
 * ostore.h): the transaction overlay, group commit, and the reads.
 *
 * Preparing.  A transaction as given cannot be made durable by logging it
 * and replaying it after a crash: a replayed clone would copy data that a
 * later write already changed.  So the commit thread first prepares each
 * transaction against an overlay of the store — key/value changes in a
 * kvov, data changes as whole 64 KiB chunks in memory — where every
 * operation sees the ones before it and a failing one fails the whole
 * transaction with nothing written.  The backend's commit hook then makes
 * the overlay's end state durable in whatever way suits its storage: as a
 * journal of operations that read nothing (backend-file), or as new
 * extents plus one metadata batch (backend-blockdev).
 *
 * Group commit.  Transactions waiting in the queue are prepared into one
 * overlay and committed together; one that fails is left out and the
 * overlay rebuilt without it (failures are rare, and a batch is small).
 */
#include "ostore.h"
#include "errf.h"

#include <tessera/crc32c.h>
#include <tessera/encoding.h>
#include <tessera/kv.h>
#include <tessera/txn.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG_ERR TSR_LOG_ERROR
#define LOG_WARN TSR_LOG_WARN
#define LOG_INFO TSR_LOG_INFO

const char *const os_compression_choices[] = { "none", "zstd", NULL };

void
os_log(struct os *os, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	os->host->logv(os->host->ctx, level, fmt, ap);
	va_end(ap);
}

/* An object name for messages: printable bytes as is, others as \xNN, cut
 * at 80 characters. */
const char *
os_oid_str(const void *oid, size_t n, char *buf, size_t buflen)
{
	const uint8_t *p = oid;
	size_t o = 0;

	for (size_t i = 0; i < n && o + 5 < buflen; i++) {
		if (o > 80) {
			o += (size_t)snprintf(buf + o, buflen - o, "...");
			break;
		}
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
			buf[o++] = (char)p[i];
		else
			o += (size_t)snprintf(buf + o, buflen - o, "\\x%02x", p[i]);
	}
	buf[o < buflen ? o : buflen - 1] = '\0';
	return buf;
}

/* ---- Keys -----------------------------------------------------------------*/

#define CID_LEN 16
#define KEY_MAX OS_KEY_MAX

static void
be64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (56 - 8 * i));
}

static void
be32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (24 - 8 * i));
}

static uint64_t
get_be64(const uint8_t *b)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

static uint32_t
get_be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void
cid_put(uint8_t *b, const struct tsr_coll_id *c)
{
	be64(b, c->pool);
	be32(b + 8, c->pg);
	be32(b + 12, (uint32_t)c->shard ^ 0x80000000u);
}

static void
cid_get(const uint8_t *b, struct tsr_coll_id *c)
{
	c->pool = get_be64(b);
	c->pg = get_be32(b + 8);
	c->shard = (int32_t)(get_be32(b + 12) ^ 0x80000000u);
}

static size_t
key_coll(uint8_t *k, const struct tsr_coll_id *c)
{
	k[0] = 'L';
	cid_put(k + 1, c);
	return 1 + CID_LEN;
}

static size_t
key_obj(uint8_t *k, const struct tsr_coll_id *c, const void *oid, size_t n)
{
	k[0] = 'O';
	cid_put(k + 1, c);
	if (n) /* the collection's prefix when n is 0 (oid may be NULL) */
		memcpy(k + 1 + CID_LEN, oid, n);
	return 1 + CID_LEN + n;
}

/* 'A'/'M' id key, or with key NULL the prefix; 'C' id chunk. */
static size_t
key_sub(uint8_t *k, char tag, uint64_t objid, const void *key, size_t n)
{
	k[0] = (uint8_t)tag;
	be64(k + 1, objid);
	if (n)
		memcpy(k + 9, key, n);
	return 9 + n;
}

size_t
os_key_chunk(uint8_t *k, uint64_t objid, uint32_t cno)
{
	k[0] = 'C';
	be64(k + 1, objid);
	be32(k + 9, cno);
	return 13;
}

int
os_key_is_chunk(const void *k, size_t kl, uint64_t *objid, uint32_t *cno)
{
	const uint8_t *b = k;

	if (kl != 13 || b[0] != 'C')
		return 0;
	*objid = get_be64(b + 1);
	*cno = get_be32(b + 9);
	return 1;
}

/* The key just past every key starting with prefix (prefix's last byte
 * incremented; the prefixes used here never end in 0xff runs that matter:
 * ids and tags are below 0xff in their top byte for the life of a store,
 * and where they are not, the carry is propagated). */
size_t
os_key_after(uint8_t *k, const uint8_t *prefix, size_t n)
{
	memcpy(k, prefix, n);
	while (n > 0) {
		if (k[n - 1] != 0xff) {
			k[n - 1]++;
			return n;
		}
		n--;
	}
	k[0] = 0xff; /* unreachable for our tags */
	return 1;
}

/* ---- Records: superblock, onode, chunk map -------------------------------*/

static uint8_t *
enc_finish(struct tsr_enc *e, size_t *len)
{
	return tsr_enc_take(e, len);
}

uint8_t *
os_super_encode(const struct os_super *s, const char *magic, size_t *len)
{
	struct tsr_enc e;
	size_t m;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_raw(&e, magic, 8);
	tsr_enc_raw(&e, s->uuid, 16);
	tsr_enc_u32(&e, OS_BLOCK);
	tsr_enc_u32(&e, OS_CHUNK);
	tsr_enc_u64(&e, s->next_objid);
	tsr_enc_u64(&e, s->objects);
	tsr_enc_u64(&e, s->bytes);
	tsr_enc_end_struct(&e, m);
	return enc_finish(&e, len);
}

static int
super_decode(const void *p, size_t n, const char *want, struct os_super *s,
	     char *why, size_t wl)
{
	struct tsr_dec d, sub;
	uint8_t ver;
	char magic[8];
	uint32_t bs, cs;

	tsr_dec_init(&d, p, n);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return errf(why, wl, tsr_dec_error(&d) == -EOPNOTSUPP ? -EOPNOTSUPP
								    : -EBADMSG,
			    tsr_dec_error(&d) == -EOPNOTSUPP
				    ? "superblock written by a newer version"
				    : "superblock damaged");
	tsr_dec_raw(&sub, magic, 8);
	tsr_dec_raw(&sub, s->uuid, 16);
	bs = tsr_dec_u32(&sub);
	cs = tsr_dec_u32(&sub);
	s->next_objid = tsr_dec_u64(&sub);
	s->objects = tsr_dec_u64(&sub);
	s->bytes = tsr_dec_u64(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0)
		return errf(why, wl, -EBADMSG, "superblock damaged");
	if (memcmp(magic, want, 8) != 0)
		return errf(why, wl, -EINVAL, "superblock of another kind of store "
			    "(%.8s, expected %.8s)", magic, want);
	if (bs != OS_BLOCK || cs != OS_CHUNK)
		return errf(why, wl, -EOPNOTSUPP,
			    "block/chunk size %u/%u, this build supports %u/%u",
			    bs, cs, OS_BLOCK, OS_CHUNK);
	return 0;
}

struct onode {
	uint64_t objid;
	uint64_t size;
	uint64_t mtime;
};

static uint8_t *
onode_encode(const struct onode *o, size_t *len)
{
	struct tsr_enc e;
	size_t m;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u64(&e, o->objid);
	tsr_enc_u64(&e, o->size);
	tsr_enc_u64(&e, o->mtime);
	tsr_enc_end_struct(&e, m);
	return enc_finish(&e, len);
}

static int
onode_decode(const void *p, size_t n, struct onode *o)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	tsr_dec_init(&d, p, n);
	tsr_dec_begin_struct(&d, 1, &ver, &sub);
	o->objid = tsr_dec_u64(&sub);
	o->size = tsr_dec_u64(&sub);
	o->mtime = tsr_dec_u64(&sub);
	tsr_dec_end_struct(&d, &sub);
	if (tsr_dec_error(&d) || tsr_dec_remaining(&d) != 0 || o->objid == 0)
		return -EIO;
	return 0;
}

#define CM_LOC 0x80 /* kind flag: locations follow */

uint8_t *
os_cmeta_encode(const struct os_cmeta *c, size_t *len)
{
	struct tsr_enc e;
	size_t m;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u8(&e, (uint8_t)(c->kind | (c->has_loc ? CM_LOC : 0)));
	if (c->kind == OS_CHUNK_RAW) {
		tsr_enc_u16(&e, c->zero);
		for (unsigned b = 0; b < OS_BPC; b++)
			if (!(c->zero & (1u << b)))
				tsr_enc_u32(&e, c->crc[b]);
		for (unsigned b = 0; c->has_loc && b < OS_BPC; b++)
			if (!(c->zero & (1u << b)))
				tsr_enc_u64(&e, c->loc[b]);
	} else {
		tsr_enc_u32(&e, c->stored);
		tsr_enc_u32(&e, c->crc[0]);
		if (c->has_loc)
			tsr_enc_u64(&e, c->loc[0]);
	}
	tsr_enc_end_struct(&e, m);
	return enc_finish(&e, len);
}

int
os_cmeta_decode(const void *p, size_t n, struct os_cmeta *c)
{
	struct tsr_dec d, sub;
	uint8_t ver, kind;

	memset(c, 0, sizeof(*c));
	tsr_dec_init(&d, p, n);
	tsr_dec_begin_struct(&d, 1, &ver, &sub);
	kind = tsr_dec_u8(&sub);
	c->kind = kind & (uint8_t)~CM_LOC;
	c->has_loc = (kind & CM_LOC) != 0;
	if (c->kind == OS_CHUNK_RAW) {
		c->zero = tsr_dec_u16(&sub);
		for (unsigned b = 0; b < OS_BPC; b++)
			if (!(c->zero & (1u << b)))
				c->crc[b] = tsr_dec_u32(&sub);
		for (unsigned b = 0; c->has_loc && b < OS_BPC; b++)
			if (!(c->zero & (1u << b)))
				c->loc[b] = tsr_dec_u64(&sub);
	} else if (c->kind == OS_CHUNK_ZSTD) {
		c->stored = tsr_dec_u32(&sub);
		c->crc[0] = tsr_dec_u32(&sub);
		if (c->has_loc)
			c->loc[0] = tsr_dec_u64(&sub);
		if (c->stored == 0 || c->stored > OS_CHUNK)
			tsr_dec_fail(&sub, -EBADMSG);
	} else {
		tsr_dec_fail(&sub, -EBADMSG);
	}
	tsr_dec_end_struct(&d, &sub);
	if (tsr_dec_error(&d) || tsr_dec_remaining(&d) != 0)
		return -EIO;
	c->present = 1;
	return 0;
}

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

static int
read_block(struct os *os, int fd, const char *name, uint64_t objid,
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
	if (rc < 0) {
		os_log(os, LOG_ERR, "object %s offset %" PRIu64 ": read: %s", name,
		       off, strerror(-rc));
		return -EIO;
	}
	if (rc == 1) {
		os_log(os, LOG_ERR, "object %s (id %" PRIu64 ") offset %" PRIu64
		       ": checksum mismatch in stored data", name, objid, off);
		return -EIO;
	}
	return 0;
}

static int
read_zchunk(struct os *os, ZSTD_DCtx *dctx, int fd, const char *name,
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

int
os_chunk_stored_ok(struct os *os, int fd, uint32_t cno, const struct os_cmeta *m)
{
	size_t n = m->kind == OS_CHUNK_ZSTD ? m->stored : OS_BLOCK;
	uint8_t *buf;
	int rc = 0;

	if (!m->present)
		return 1;
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

/* ---- Preparing a transaction ---------------------------------------------
 *
 * The overlay: key/value changes in a kvov, data changes as whole chunks
 * in memory.  Every operation reads and writes through it. */

static struct os_file *
ov_file(struct os_prep *p, uint64_t objid, const void *oid, size_t oid_len)
{
	for (size_t i = 0; i < p->nfiles; i++)
		if (p->files[i]->objid == objid)
			return p->files[i];
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

static void
prep_release(struct os_prep *p)
{
	for (size_t i = 0; i < p->nfiles; i++)
		ov_file_free(p->files[i]);
	free(p->files);
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

static int
get_cmeta(struct os_prep *p, uint64_t objid, uint32_t no, struct os_cmeta *m)
{
	uint8_t k[16];
	void *v;
	size_t vl;
	int owned, rc;

	rc = kvov_get(&p->kv, k, os_key_chunk(k, objid, no), &v, &vl, &owned,
		      p->err, sizeof(p->err));
	if (rc == -ENOENT) {
		memset(m, 0, sizeof(*m));
		return 0;
	}
	if (rc < 0)
		return -EIO;
	rc = os_cmeta_decode(v, vl, m);
	if (owned)
		tsr_kv_free(v);
	if (rc < 0)
		return errf(p->err, sizeof(p->err), -EIO,
			    "chunk map of object id %" PRIu64 " chunk %u is damaged",
			    objid, no);
	return 0;
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
	rc = get_cmeta(p, f->objid, no, &c->base);
	if (rc == 0 && whole != NULL) {
		c->loaded = 0xffff;
	} else if (rc == 0 && !c->base.present) {
		memset(c->buf, 0, OS_CHUNK);
		c->loaded = 0xffff;
	} else if (rc == 0 && c->base.kind == OS_CHUNK_ZSTD) {
		int fd = p->os->hooks->data_fd(p->os, f->objid, 0);
		rc = read_zchunk(p->os, p->os->dctx, fd, f->name, f->objid, no,
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
	rc = read_block(p->os, fd, f->name, f->objid, c->no, b, &c->base,
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
		return kvov_del_range(&p->kv, a, al, b, bl);
	}
	rc = kvov_del_range(&p->kv, a, al, b, bl);
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

static int
coll_exists(struct os_prep *p, const struct tsr_coll_id *cid)
{
	uint8_t k[1 + CID_LEN];
	void *v;
	size_t vl;
	int owned, rc;

	rc = kvov_get(&p->kv, k, key_coll(k, cid), &v, &vl, &owned, p->err,
		      sizeof(p->err));
	if (rc == 0 && owned)
		tsr_kv_free(v);
	return rc == 0 ? 1 : rc == -ENOENT ? 0 : -EIO;
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
	r->klen = key_obj(r->key, cid, oid, oid_len);
	rc = kvov_get(&p->kv, r->key, r->klen, &v, &vl, &owned, p->err,
		      sizeof(p->err));
	if (rc == -ENOENT) {
		r->exists = 0;
		memset(&r->on, 0, sizeof(r->on));
		return 0;
	}
	if (rc < 0)
		return -EIO;
	rc = onode_decode(v, vl, &r->on);
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
	v = onode_encode(&r->on, &vl);
	if (v == NULL)
		return -ENOMEM;
	rc = kvov_put(&p->kv, r->key, r->klen, v, vl);
	free(v);
	return rc;
}

static int
obj_create(struct os_prep *p, struct objref *r)
{
	r->exists = 1;
	r->on.objid = p->sb.next_objid++;
	r->on.size = 0;
	p->sb.objects++;
	return obj_store(p, r);
}

static struct os_file *
obj_file(struct os_prep *p, struct objref *r)
{
	return ov_file(p, r->on.objid, r->oid, r->oid_len);
}

static int
obj_set_size(struct os_prep *p, struct objref *r, uint64_t size)
{
	p->sb.bytes += size - r->on.size; /* wraps correctly when shrinking */
	r->on.size = size;
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
		size_t al = key_sub(a, tags[i], r->on.objid, NULL, 0);
		size_t bl = os_key_after(b, a, al);
		if ((rc = kvov_del_range(&p->kv, a, al, b, bl)) < 0)
			return rc;
	}
	for (size_t i = 0; i < f->nchunks; i++) {
		chunk_buf_free(f->chunks[i]);
		free(f->chunks[i]);
	}
	f->nchunks = 0;
	f->npunches = 0;
	f->unlink = 1;
	p->sb.objects--;
	p->sb.bytes -= r->on.size;
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
	size_t al = key_sub(a, tag, from, NULL, 0), bl = os_key_after(b, a, al);
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
	int rc = get_cmeta(p, f->objid, no, &m);
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
		kl = key_coll(k, &op->cid);
		return ex ? -EEXIST : kvov_put(&p->kv, k, kl, "", 0);
	case TSR_TXN_RMCOLL:
		if (!ex)
			return -ENOENT;
		kl = key_obj(k, &op->cid, NULL, 0);
		kl2 = os_key_after(k2, k, kl);
		rc = kvov_scan(&p->kv, k, kl, k2, kl2, stop_at_first, NULL, p->err,
			       sizeof(p->err));
		if (rc != 0)
			return rc == 1 ? -ENOTEMPTY : -EIO;
		kl = key_coll(k, &op->cid);
		return kvov_del(&p->kv, k, kl);
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
		kl = key_sub(k, op->type == TSR_TXN_SETATTR ? 'A' : 'M', r.on.objid,
			     op->key, op->key_len);
		if ((rc = kvov_put(&p->kv, k, kl, op->val, op->val_len)) < 0)
			return rc;
		return obj_store(p, &r);
	case TSR_TXN_RMATTR:
	case TSR_TXN_OMAP_RM:
		if ((rc = op_target(p, op, &r, 0)) < 0)
			return rc;
		kl = key_sub(k, op->type == TSR_TXN_RMATTR ? 'A' : 'M', r.on.objid,
			     op->key, op->key_len);
		if ((rc = kvov_del(&p->kv, k, kl)) < 0)
			return rc;
		return obj_store(p, &r);
	case TSR_TXN_OMAP_CLEAR:
	case TSR_TXN_OMAP_RMRANGE:
		if ((rc = op_target(p, op, &r, 0)) < 0)
			return rc;
		kl = key_sub(k, 'M', r.on.objid, NULL, 0);
		if (op->type == TSR_TXN_OMAP_CLEAR || op->val_len == 0) {
			kl2 = os_key_after(k2, k, kl);
			if (op->type == TSR_TXN_OMAP_RMRANGE)
				kl = key_sub(k, 'M', r.on.objid, op->key, op->key_len);
		} else {
			kl = key_sub(k, 'M', r.on.objid, op->key, op->key_len);
			kl2 = key_sub(k2, 'M', r.on.objid, op->val, op->val_len);
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

int
os_super_store(struct os *os, int sync, char *err, size_t errlen)
{
	struct tsr_kv_batch *b = tsr_kv_batch_create();
	size_t sl;
	uint8_t *s = os_super_encode(&os->sb, os->hooks->magic, &sl);
	int rc;

	if (b == NULL || s == NULL) {
		tsr_kv_batch_destroy(b);
		free(s);
		return errf(err, errlen, -ENOMEM, "%s: out of memory", os->path);
	}
	tsr_kv_batch_put(b, "S", 1, s, sl);
	rc = tsr_kv_write(os->kv, b, sync, err, errlen);
	tsr_kv_batch_destroy(b);
	free(s);
	return rc;
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
static int
prep_txn(struct os_prep *p, const struct os_pending *pd)
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

static void
prep_init(struct os_prep *p, struct os *os, uint64_t now)
{
	memset(p, 0, sizeof(*p));
	p->os = os;
	kvov_init(&p->kv, os->kv);
	p->sb = os->sb;
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
static int
room_for(struct os *os, const struct os_prep *p)
{
	uint64_t data, meta;

	overlay_bytes(p, &data, &meta);
	return data ? enough_space(os, data + meta, os->min_free)
		    : enough_space(os, meta, 0);
}

/* Group commit: the transactions of a batch are prepared one after the
 * other into one overlay (each sees the ones before it) and committed
 * together by the backend, with one sync for the batch.  A transaction that
 * fails leaves part of itself in the overlay, so the overlay is rebuilt
 * from the batch without it; failures are rare, and a batch is small. */
static void
commit_batch(struct os *os, struct os_pending **batch, int *rcs, size_t n)
{
	uint64_t now = os->host->now_ns(os->host->ctx);
	struct os_prep p;
	size_t ok;
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		rcs[i] = os->failed ? -EIO : 1; /* 1: not decided yet */
	for (;;) {
		size_t i;

		prep_init(&p, os, now);
		ok = 0;
		for (i = 0; i < n; i++) {
			if (rcs[i] <= 0 && rcs[i] != 0)
				continue;
			rc = prep_txn(&p, batch[i]);
			if (rc < 0)
				break;
			rcs[i] = 0;
			ok++;
		}
		if (i == n)
			break;
		rcs[i] = rc;
		prep_release(&p);
	}
	/* Before anything is written, the overlay's worst case must fit, so
	 * a full store fails a transaction with ENOSPC instead of
	 * half-applying it. */
	if (ok && !room_for(os, &p))
		rc = -ENOSPC;
	else
		rc = ok ? os->hooks->commit(os, &p) : 0;
	prep_release(&p);
	if (rc == -EFBIG && ok > 1) {
		/* the batch outgrew what the backend commits at once (a
		 * journal record): one at a time */
		for (size_t i = 0; i < n; i++)
			if (rcs[i] == 0)
				commit_batch(os, &batch[i], &rcs[i], 1);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (rcs[i] == 0)
			rcs[i] = rc;
}

#define BATCH_MAX 64

/* Keep a committed transaction's allocation for a later one, or free it
 * (qlock held).  When the spares are full, a larger one replaces the
 * smallest. */
static void
pending_recycle(struct os *os, struct os_pending *pd)
{
	size_t small = 0;

	for (size_t i = 1; i < os->nspare; i++)
		if (os->spare[i]->cap < os->spare[small]->cap)
			small = i;
	if (os->nspare == OS_SPARE ||
	    os->spare_bytes + pd->cap > OS_SPARE_BYTES) {
		struct os_pending *out = os->nspare ? os->spare[small] : NULL;

		if (out == NULL || out->cap >= pd->cap ||
		    os->spare_bytes - out->cap + pd->cap > OS_SPARE_BYTES) {
			free(pd);
			return;
		}
		os->spare_bytes -= out->cap;
		os->spare[small] = os->spare[--os->nspare];
		free(out);
	}
	os->spare[os->nspare++] = pd;
	os->spare_bytes += pd->cap;
}

static void *
commit_main(void *arg)
{
	struct os *os = arg;
	struct os_pending *batch[BATCH_MAX];
	int rcs[BATCH_MAX];
	uint64_t limit = os->batch_limit;

	pthread_mutex_lock(&os->qlock);
	for (;;) {
		size_t n = 0, bytes = 0, freed = 0;

		while (os->head == NULL && !os->stop)
			pthread_cond_wait(&os->qcond, &os->qlock);
		if (os->head == NULL)
			break;
		while (os->head != NULL && n < BATCH_MAX &&
		       (n == 0 || bytes + os->head->len <= limit)) {
			struct os_pending *pd = os->head;
			os->head = pd->next;
			bytes += pd->len;
			batch[n++] = pd;
		}
		if (os->head == NULL)
			os->tail = NULL;
		pthread_mutex_unlock(&os->qlock);

		commit_batch(os, batch, rcs, n);
		for (size_t i = 0; i < n; i++) {
			batch[i]->cb(batch[i]->arg, rcs[i]);
			freed += batch[i]->len;
		}

		pthread_mutex_lock(&os->qlock);
		for (size_t i = 0; i < n; i++)
			pending_recycle(os, batch[i]);
		os->qbytes -= freed;
		os->completed += n;
		pthread_cond_broadcast(&os->qcond);
	}
	pthread_mutex_unlock(&os->qlock);
	return NULL;
}

/* A WRITE whose data the caller holds until the commit callback
 * (TSR_TXN_F_DATA_HELD) and whose object blocks already fall on memory
 * blocks is not copied: the overlay borrows its whole chunks in place, as
 * it does a copy's, and they go to disk straight from the caller's
 * buffer.  Held data laid out otherwise is copied like any other. */
static int
data_borrowable(const struct tsr_txn_op *op)
{
	return (op->flags & TSR_TXN_F_DATA_HELD) &&
	       (uintptr_t)op->data % OS_BLOCK == op->off % OS_BLOCK;
}

/* Bytes the copy of a transaction takes: the header, the ops, the names,
 * keys and values, then each WRITE's data placed so that its object-block
 * boundaries fall on memory-block boundaries (see pending_copy). */
static size_t
pending_size(const struct tsr_txn *txn)
{
	size_t n = sizeof(struct os_pending) + txn->nops * sizeof(struct tsr_txn_op);

	for (uint32_t i = 0; i < txn->nops; i++) {
		const struct tsr_txn_op *op = &txn->ops[i];
		n += op->oid_len + op->key_len + op->val_len + op->oid2_len;
	}
	for (uint32_t i = 0; i < txn->nops; i++)
		if (txn->ops[i].type == TSR_TXN_WRITE && !data_borrowable(&txn->ops[i]))
			n += 2 * OS_BLOCK + txn->ops[i].len;
	return n;
}

static const void *
copy_field(uint8_t **at, const void *src, size_t n)
{
	uint8_t *dst = *at;

	if (n == 0)
		return src != NULL ? dst : NULL; /* never the caller's pointer */
	memcpy(dst, src, n);
	*at += n;
	return dst;
}

/* A deep copy of a validated transaction.  A WRITE's data lands at an
 * address congruent to its object offset modulo the block size, so every
 * whole chunk of it is block-aligned in memory: the overlay borrows such
 * chunks instead of copying them again, and they go to disk with O_DIRECT
 * straight from here. */
static struct os_pending *
pending_copy(struct os *os, const struct tsr_txn *txn)
{
	size_t size = pending_size(txn), best = SIZE_MAX;
	struct os_pending *pd = NULL;
	struct tsr_txn_op *ops;
	uint8_t *at;

	/* the smallest spare that fits */
	pthread_mutex_lock(&os->qlock);
	for (size_t i = 0; i < os->nspare; i++)
		if (os->spare[i]->cap >= size &&
		    (best == SIZE_MAX || os->spare[i]->cap < os->spare[best]->cap))
			best = i;
	if (best != SIZE_MAX) {
		pd = os->spare[best];
		os->spare[best] = os->spare[--os->nspare];
		os->spare_bytes -= pd->cap;
	}
	pthread_mutex_unlock(&os->qlock);
	if (pd == NULL) {
		if (posix_memalign((void **)&pd, OS_BLOCK, size) != 0)
			return NULL;
		pd->cap = size;
	}
	size_t cap = pd->cap;
	memset(pd, 0, sizeof(*pd));
	pd->cap = cap;
	pd->len = size;
	ops = (struct tsr_txn_op *)(pd + 1);
	if (txn->nops)
		memcpy(ops, txn->ops, txn->nops * sizeof(*ops));
	pd->txn.nops = txn->nops;
	pd->txn.ops = ops;
	at = (uint8_t *)(ops + txn->nops);
	for (uint32_t i = 0; i < txn->nops; i++) {
		ops[i].oid = copy_field(&at, ops[i].oid, ops[i].oid_len);
		ops[i].key = copy_field(&at, ops[i].key, ops[i].key_len);
		ops[i].val = copy_field(&at, ops[i].val, ops[i].val_len);
		ops[i].oid2 = copy_field(&at, ops[i].oid2, ops[i].oid2_len);
	}
	for (uint32_t i = 0; i < txn->nops; i++) {
		uintptr_t a;

		if (ops[i].type != TSR_TXN_WRITE || data_borrowable(&ops[i]))
			continue;
		a = ((uintptr_t)at + OS_BLOCK - 1) & ~(uintptr_t)(OS_BLOCK - 1);
		at = (uint8_t *)a + ops[i].off % OS_BLOCK;
		ops[i].data = copy_field(&at, ops[i].data, ops[i].len);
	}
	return pd;
}

int
os_submit(void *inst, const struct tsr_txn *txn, tsr_commit_cb on_commit,
	  void *arg)
{
	struct os *os = inst;
	struct os_pending *pd;
	char err[256];
	int rc;

	if (!os->mounted)
		return -EINVAL;
	if (os->failed)
		return -EIO;
	if ((rc = tsr_txn_validate(txn, err, sizeof(err))) < 0)
		return rc;
	if ((pd = pending_copy(os, txn)) == NULL)
		return -ENOMEM;
	pd->cb = on_commit;
	pd->arg = arg;
	pthread_mutex_lock(&os->qlock);
	while (os->qbytes > 0 && os->qbytes + pd->len > os->queue_max)
		pthread_cond_wait(&os->qcond, &os->qlock);
	if (os->tail)
		os->tail->next = pd;
	else
		os->head = pd;
	os->tail = pd;
	os->qbytes += pd->len;
	os->submitted++;
	pthread_cond_broadcast(&os->qcond);
	pthread_mutex_unlock(&os->qlock);
	return 0;
}

int
os_flush(void *inst)
{
	struct os *os = inst;

	if (!os->mounted)
		return -EINVAL;
	pthread_mutex_lock(&os->qlock);
	while (os->completed < os->submitted)
		pthread_cond_wait(&os->qcond, &os->qlock);
	pthread_mutex_unlock(&os->qlock);
	return 0;
}

int
os_super_load(struct os *os, char *err, size_t errlen)
{
	void *v;
	size_t vl;
	char why[160];
	int rc = tsr_kv_get(os->kv, "S", 1, &v, &vl, err, errlen);

	if (rc == -ENOENT)
		return errf(err, errlen, -EINVAL,
			    "%s: no superblock: not a %.8s store", os->meta_path,
			    os->hooks->magic);
	if (rc < 0)
		return rc;
	rc = super_decode(v, vl, os->hooks->magic, &os->sb, why, sizeof(why));
	tsr_kv_free(v);
	if (rc < 0)
		return errf(err, errlen, rc, "%s: %s", os->meta_path, why);
	return 0;
}

void
os_super_new(struct os *os, int next_objid_start)
{
	memset(&os->sb, 0, sizeof(os->sb));
	os->sb.next_objid = (uint64_t)next_objid_start;
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
	rc = tsr_kv_get(os->kv, k, key_obj(k, cid, oid, oid_len), &v, &vl, err,
			sizeof(err));
	if (rc == -ENOENT)
		return rc;
	if (rc < 0) {
		os_log(os, LOG_ERR, "%s", err);
		return -EIO;
	}
	rc = onode_decode(v, vl, on);
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
	if (os_cmeta_decode(v, vl, &c->m[no - c->first]) < 0)
		c->bad = 1;
	return 0;
}

static int
read_locked(struct os *os, const struct tsr_coll_id *cid, const void *oid,
	    size_t oid_len, uint64_t off, uint64_t len, uint8_t *out,
	    uint64_t *out_len)
{
	struct cmaps cm;
	struct onode on;
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

		if (m->present && !fd_tried) {
			fd = os->hooks->data_fd(os, on.objid, 1);
			fd_tried = 1;
		}
		if (m->present && m->kind == OS_CHUNK_ZSTD) {
			if (dctx == NULL && (dctx = ZSTD_createDCtx()) == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			if ((rc = read_zchunk(os, dctx, fd, nb, on.objid, no, m, tmp)) < 0)
				goto out;
			memcpy(out + done, tmp + coff, take);
		} else {
			for (uint32_t bo = coff / OS_BLOCK * OS_BLOCK; bo < coff + take;
			     bo += OS_BLOCK) {
				uint32_t s = bo > coff ? bo : coff;
				uint32_t e = bo + OS_BLOCK < coff + take ? bo + OS_BLOCK
									 : coff + take;
				rc = read_block(os, fd, nb, on.objid, no, bo / OS_BLOCK, m, tmp);
				if (rc < 0)
					goto out;
				memcpy(out + done + (s - coff), tmp + (s - bo), e - s);
			}
		}
		done += take;
	}
	*out_len = n;
	rc = 0;
out:
	if (fd >= 0)
		os->hooks->data_fd_done(os, fd, 1);
	ZSTD_freeDCtx(dctx);
	free(cm.m);
	free(tmp);
	return rc;
}

int
os_read(void *inst, const struct tsr_coll_id *cid, const void *oid,
	size_t oid_len, uint64_t off, uint64_t len, void *buf, uint64_t *out_len)
{
	struct os *os = inst;
	int rc;

	if (!os->mounted)
		return -EINVAL;
	pthread_rwlock_rdlock(&os->lock);
	rc = read_locked(os, cid, oid, oid_len, off, len, buf, out_len);
	pthread_rwlock_unlock(&os->lock);
	return rc;
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
		rc = tsr_kv_get(os->kv, k, key_sub(k, tag, on.objid, key, key_len),
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
		bl = os_key_after(b, a, key_sub(a, tag, on.objid, NULL, 0));
		al = key_sub(a, tag, on.objid, start, start_len);
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
	cid_get((const uint8_t *)k + 1, &cid);
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
	al = key_coll(a, cid);
	rc = tsr_kv_get(os->kv, a, al, &v, &vl, err, sizeof(err));
	(void)owned;
	if (rc == 0) {
		tsr_kv_free(v);
		al = key_obj(a, cid, cursor->bytes, cursor->len);
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

/* ---- fsck -------------------------------------------------------------------
 *
 * Checks, on an unmounted store (after replaying its journal):
 *   - every onode decodes, names an existing collection, and has a unique
 *     id below the superblock's next id;
 *   - attributes, omap entries and chunk maps belong to a live object
 *     (orphans are removed by repair), chunk maps decode and lie within
 *     the object's size (stale ones are removed by repair);
 *   - every stored block and compressed chunk matches its checksum (not
 *     repairable here: the OSD recovers the object from a replica);
 *   - every data file belongs to a live object (orphans are unlinked);
 *   - the superblock's object count and byte total (repair rewrites them).
 */


void
os_fsck_report(struct os_fsck *c, int fixable, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!(fixable && c->repair))
		c->unrepaired++;
	if (c->cb)
		c->cb(c->arg, msg, fixable && c->repair);
}

static int
fsck_onode(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct os_fsck *c = arg;
	struct tsr_coll_id cid;
	struct onode on;
	uint8_t ck[1 + CID_LEN];
	char nb[96], err[256];
	void *cv;
	size_t cvl;

	if (kl <= 1 + CID_LEN) {
		os_fsck_report(c, 1, "malformed object key of %zu bytes", kl);
		tsr_kv_batch_del(c->fix, k, kl);
		return 0;
	}
	os_oid_str((const uint8_t *)k + 1 + CID_LEN, kl - 1 - CID_LEN, nb, sizeof(nb));
	if (onode_decode(v, vl, &on) < 0) {
		os_fsck_report(c, 0, "object %s: onode damaged", nb);
		return 0;
	}
	if (on.objid > c->max_id)
		c->max_id = on.objid;
	cid_get((const uint8_t *)k + 1, &cid);
	if (tsr_kv_get(c->os->kv, ck, key_coll(ck, &cid), &cv, &cvl, err,
		       sizeof(err)) == 0) {
		tsr_kv_free(cv);
	} else {
		os_fsck_report(c, 1, "object %s: its collection %" PRIu64 ".%u.%d is "
			    "missing (repair recreates it)", nb, cid.pool, cid.pg,
			    cid.shard);
		tsr_kv_batch_put(c->fix, ck, sizeof(ck), "", 0);
	}
	if (c->nids == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 1024;
		uint64_t *ni = realloc(c->ids, ncap * sizeof(*ni));
		if (ni == NULL)
			return -ENOMEM;
		c->ids = ni;
		uint64_t *ns = realloc(c->sizes, ncap * sizeof(*ns));
		if (ns == NULL)
			return -ENOMEM;
		c->sizes = ns;
		c->cap = ncap;
	}
	c->ids[c->nids] = on.objid;
	c->sizes[c->nids++] = on.size;
	c->bytes += on.size;
	return 0;
}

/* Index of objid among the live ids, or -1. */
static ssize_t
fsck_find(const struct os_fsck *c, uint64_t objid)
{
	size_t lo = 0, hi = c->nids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->ids[mid] < objid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nids && c->ids[lo] == objid ? (ssize_t)lo : -1;
}

static int
fsck_sub(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct os_fsck *c = arg;
	const uint8_t *kb = k;
	struct os_cmeta m;
	uint64_t objid;
	ssize_t i;

	if (kl < 9 || (kb[0] == 'C' && kl != 13)) {
		os_fsck_report(c, 1, "malformed '%c' key of %zu bytes", kb[0], kl);
		tsr_kv_batch_del(c->fix, k, kl);
		return 0;
	}
	objid = get_be64(kb + 1);
	if ((i = fsck_find(c, objid)) < 0) {
		os_fsck_report(c, 1, "'%c' record of object id %" PRIu64
			    " that does not exist", kb[0], objid);
		tsr_kv_batch_del(c->fix, k, kl);
		return 0;
	}
	if (kb[0] != 'C')
		return 0;
	uint32_t no = get_be32(kb + 9);
	if (os_cmeta_decode(v, vl, &m) < 0) {
		os_fsck_report(c, 0, "object id %" PRIu64 " chunk %u: chunk map damaged",
			    objid, no);
		return 0;
	}
	if ((uint64_t)no * OS_CHUNK >= c->sizes[i]) {
		os_fsck_report(c, 1, "object id %" PRIu64 " chunk %u: past the object's "
			    "end", objid, no);
		tsr_kv_batch_del(c->fix, k, kl);
		return 0;
	}
	/* the backend accounts for the space the map holds */
	if (c->on_map && c->on_map(c, objid, no, &m) < 0)
		return -ENOMEM;
	int fd = c->os->hooks->data_fd(c->os, objid, 1);
	char label[32];
	snprintf(label, sizeof(label), "id %" PRIu64, objid);
	int rc = 0;
	if (m.kind == OS_CHUNK_ZSTD)
		rc = read_zchunk(c->os, c->dctx, fd, label, objid, no, &m, c->tmp);
	else
		for (unsigned b = 0; b < OS_BPC && rc == 0; b++)
			rc = read_block(c->os, fd, label, objid, no, b, &m, c->tmp);
	if (fd >= 0)
		c->os->hooks->data_fd_done(c->os, fd, 1);
	if (rc == -EIO)
		os_fsck_report(c, 0, "object id %" PRIu64 " chunk %u: stored data does "
			    "not match its checksum", objid, no);
	return rc == -ENOMEM ? rc : 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int
os_fsck_live(const struct os_fsck *c, uint64_t objid)
{
	return fsck_find(c, objid) >= 0;
}

/* The engine's checks on an opened store (see the list above); the
 * backend's fsck_extra runs after them, then repairs are written. */
int
os_fsck_run(struct os *os, int repair, tsr_fsck_cb cb, void *arg,
	    int (*on_map)(struct os_fsck *, uint64_t, uint32_t,
			  const struct os_cmeta *),
	    void *be)
{
	static const char *const ranges[][2] = { { "A", "B" }, { "C", "D" },
						 { "M", "N" } };
	struct os_fsck c;
	char err[512] = "";
	int rc;

	memset(&c, 0, sizeof(c));
	c.os = os;
	c.repair = repair;
	c.cb = cb;
	c.arg = arg;
	c.on_map = on_map;
	c.be = be;
	c.fix = tsr_kv_batch_create();
	c.dctx = ZSTD_createDCtx();
	c.tmp = malloc(OS_CHUNK);
	if (c.fix == NULL || c.dctx == NULL || c.tmp == NULL) {
		rc = errf(err, sizeof(err), -ENOMEM, "%s: out of memory", os->path);
		goto out;
	}
	rc = tsr_kv_scan(os->kv, "O", 1, "P", 1, fsck_onode, &c, err, sizeof(err));
	if (rc < 0)
		goto out;
	/* sort ids, keeping sizes with them */
	uint64_t *pairs = malloc((c.nids ? c.nids : 1) * 2 * sizeof(*pairs));
	if (pairs == NULL) {
		rc = errf(err, sizeof(err), -ENOMEM, "%s: out of memory", os->path);
		goto out;
	}
	for (size_t i = 0; i < c.nids; i++) {
		pairs[2 * i] = c.ids[i];
		pairs[2 * i + 1] = c.sizes[i];
	}
	qsort(pairs, c.nids, 2 * sizeof(*pairs), cmp_u64);
	for (size_t i = 0; i < c.nids; i++) {
		c.ids[i] = pairs[2 * i];
		c.sizes[i] = pairs[2 * i + 1];
		if (i && c.ids[i] == c.ids[i - 1])
			os_fsck_report(&c, 0, "two objects share id %" PRIu64, c.ids[i]);
	}
	free(pairs);
	for (size_t i = 0; i < 3 && rc == 0; i++)
		rc = tsr_kv_scan(os->kv, ranges[i][0], 1, ranges[i][1], 1, fsck_sub,
				 &c, err, sizeof(err));
	if (rc < 0)
		goto out;
	if (os->hooks->fsck_extra)
		os->hooks->fsck_extra(&c);
	if (c.max_id >= os->sb.next_objid) {
		/* handing out an id in use would make two objects share data */
		os_fsck_report(&c, 1, "superblock's next object id %" PRIu64 " is not "
			       "above id %" PRIu64 ", which is in use (repair raises it)",
			       os->sb.next_objid, c.max_id);
		os->sb.next_objid = c.max_id + 1;
		if (repair && (rc = os_super_store(os, 1, err, sizeof(err))) < 0)
			goto out;
	}
	if (c.nids != os->sb.objects || c.bytes != os->sb.bytes) {
		os_fsck_report(&c, 1, "superblock counts %" PRIu64 " objects / %" PRIu64
			       " bytes, the store holds %zu / %" PRIu64, os->sb.objects,
			       os->sb.bytes, c.nids, c.bytes);
		os->sb.objects = c.nids;
		os->sb.bytes = c.bytes;
		if (repair && (rc = os_super_store(os, 1, err, sizeof(err))) < 0)
			goto out;
	}
	if (repair)
		rc = tsr_kv_write(os->kv, c.fix, 1, err, sizeof(err));
out:
	if (rc < 0 && cb)
		cb(arg, err, 0);
	tsr_kv_batch_destroy(c.fix);
	ZSTD_freeDCtx(c.dctx);
	free(c.tmp);
	free(c.ids);
	free(c.sizes);
	return rc < 0 ? rc : c.unrepaired;
}

/* ---- Set-up, the commit thread --------------------------------------------*/

void
os_init(struct os *os, const struct tsr_host *host, const struct os_hooks *hooks,
	const char *path, int compress, int level, uint64_t max_object,
	uint64_t min_free, uint64_t queue_max)
{
	os->host = host;
	os->hooks = hooks;
	snprintf(os->path, sizeof(os->path), "%s", path);
	os->compress = compress;
	os->level = level;
	os->max_object = max_object;
	os->min_free = min_free;
	os->queue_max = queue_max;
	os->batch_limit = 64u << 20;
	pthread_rwlock_init(&os->lock, NULL);
	pthread_mutex_init(&os->qlock, NULL);
	pthread_cond_init(&os->qcond, NULL);
}

void
os_init_opts(struct os *os, const struct tsr_host *host,
	     const struct os_hooks *hooks, const char *path,
	     const struct tsr_opt_val *v)
{
	os_init(os, host, hooks, path, strcmp(v[0].s, "zstd") == 0, (int)v[1].i,
		(uint64_t)v[2].i, (uint64_t)v[3].i, (uint64_t)v[4].i);
}

void
os_fini(struct os *os)
{
	pthread_rwlock_destroy(&os->lock);
	pthread_mutex_destroy(&os->qlock);
	pthread_cond_destroy(&os->qcond);
}

int
os_start(struct os *os, char *err, size_t errlen)
{
	int rc;

	os->failed = 0;
	os->stop = 0;
	os->head = os->tail = NULL;
	os->qbytes = 0;
	os->submitted = os->completed = 0;
	if (os->cctx == NULL)
		os->cctx = ZSTD_createCCtx();
	if (os->dctx == NULL)
		os->dctx = ZSTD_createDCtx();
	if (os->cctx == NULL || os->dctx == NULL)
		return errf(err, errlen, -ENOMEM, "%s: out of memory", os->path);
	if ((rc = pthread_create(&os->thr, NULL, commit_main, os)) != 0)
		return errf(err, errlen, -rc, "%s: commit thread: %s", os->path,
			    strerror(rc));
	os->mounted = 1;
	return 0;
}

void
os_stop(struct os *os)
{
	pthread_mutex_lock(&os->qlock);
	os->stop = 1;
	pthread_cond_broadcast(&os->qcond);
	pthread_mutex_unlock(&os->qlock);
	pthread_join(os->thr, NULL);
	os->mounted = 0;
	while (os->nspare > 0)
		free(os->spare[--os->nspare]);
	os->spare_bytes = 0;
	ZSTD_freeCCtx(os->cctx);
	ZSTD_freeDCtx(os->dctx);
	os->cctx = NULL;
	os->dctx = NULL;
}

/* ---- Finishing chunks and emitting key/value changes ---------------------*/

int
os_chunk_finish(struct os_prep *p, struct os_file *f, struct os_chunk *c,
		struct os_chunk_out *out)
{
	struct os *os = p->os;
	int rc;

	memset(out, 0, sizeof(*out));
	if (c->base.present && c->base.kind == OS_CHUNK_ZSTD)
		c->dirty = 0xffff; /* the old stored form is compressed */
	/* the old stored copies of rewritten blocks are dead */
	if (c->base.present) {
		if (c->base.kind == OS_CHUNK_ZSTD)
			out->was_stored = 1;
		else
			out->was_stored = (uint16_t)(c->dirty & ~c->base.zero);
	}
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
			n = ZSTD_compressCCtx(os->cctx, z, cap, c->buf, OS_CHUNK, os->level);
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
	if (memcmp(&p->sb, &p->os->sb, sizeof(p->sb)) != 0) {
		size_t sl;
		uint8_t *s = os_super_encode(&p->sb, p->os->hooks->magic, &sl);
		if (s == NULL)
			return -ENOMEM;
		emit(arg, OS_KV_PUT, "S", 1, s, sl);
		free(s);
	}
	return 0;
}

struct delrange {
	struct tsr_kv_batch *b;
};

static int
delrange_key(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct delrange *d = arg;

	(void)v;
	(void)vl;
	tsr_kv_batch_del(d->b, k, kl);
	return 0;
}

void
os_rec_kv(struct tsr_enc *e, uint32_t *n, int op, const void *k, size_t kl,
	  const void *v, size_t vl)
{
	tsr_enc_u8(e, (uint8_t)op);
	tsr_enc_bytes(e, k, kl);
	tsr_enc_bytes(e, v, vl);
	(*n)++;
}

void
os_rec_kv_next(struct tsr_dec *d, uint8_t *op, const void **k, size_t *kl,
	       const void **v, size_t *vl)
{
	*op = tsr_dec_u8(d);
	tsr_dec_bytes(d, k, kl, OS_KEY_MAX);
	tsr_dec_bytes(d, v, vl, TSR_TXN_MAX_VALUE + 64);
}

int
os_rec_kv_decode(struct os *os, struct tsr_dec *d, struct tsr_kv_batch *b,
		 char *err, size_t errlen)
{
	uint32_t n = tsr_dec_u32(d);
	int rc = 0;

	for (uint32_t i = 0; i < n && rc == 0 && !tsr_dec_error(d); i++) {
		uint8_t op;
		const void *k, *v;
		size_t kl, vl;

		os_rec_kv_next(d, &op, &k, &kl, &v, &vl);
		if (tsr_dec_error(d))
			break;
		if (op == OS_KV_PUT)
			tsr_kv_batch_put(b, k, kl, v, vl);
		else if (op == OS_KV_DEL)
			tsr_kv_batch_del(b, k, kl);
		else if (op == OS_KV_DELRANGE)
			rc = os_batch_del_range(os, b, k, kl, v, vl, err, errlen);
		else
			tsr_dec_fail(d, -EBADMSG);
	}
	return rc;
}

int
os_batch_del_range(struct os *os, struct tsr_kv_batch *b, const void *start,
		   size_t sl, const void *end, size_t el, char *err, size_t errlen)
{
	struct delrange dr = { b };

	return tsr_kv_scan(os->kv, start, sl, end, el, delrange_key, &dr, err,
			   errlen);
}
