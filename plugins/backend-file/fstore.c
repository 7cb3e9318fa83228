/* fstore.c — the "file" backend: objects as files in a directory of an
 * existing file system, metadata in LevelDB, atomicity and durability from a
 * write-ahead journal of physical operations.
 *
 * Why physical operations.  A journal that records the transaction as
 * given (write X, clone A to B) cannot be replayed safely: after a crash
 * the files hold some unknown mix of the operations already applied, so a
 * replayed clone could copy data a later write had already changed.  So
 * each transaction is first *prepared* against the current state into a
 * plan of operations that read nothing — "write these bytes at this offset
 * of file N", "punch this range", "put this key", "delete keys in this
 * range" — whose final effect is the same however often, and from
 * whatever partial state, they are applied in order.  Clones become
 * writes of the copied bytes; partial-block writes become whole blocks
 * with their new checksums.
 *
 * The commit protocol, one transaction after another on the commit thread:
 *
 *     prepare  -> plan (in memory; the transaction can still fail whole)
 *     journal  -> the plan is appended and fdatasync'd: the commit point
 *     apply    -> files and LevelDB updated without syncing, under the
 *                 write lock so readers never see half of it
 *     callback -> on_commit(0)
 *
 * A checkpoint (when the journal fills, and at umount) syncs LevelDB and
 * the file system, then moves the journal's start past every record.
 * Mount replays the records after the last checkpoint.  Before the journal
 * write nothing of the transaction is anywhere; after it, replay completes
 * it: all or nothing, and nothing acknowledged is lost.
 *
 * Space: before journaling, the plan's bytes plus min_free must be free on
 * the file system, so a full disk fails the transaction with -ENOSPC before
 * anything is written rather than in the middle of applying it.
 */
#include "errf.h"
#include "fstore.h"
#include "journal.h"
#include "kvov.h"

#include <tessera/backend.h>
#include <tessera/crc32c.h>
#include <tessera/encoding.h>
#include <tessera/kv.h>
#include <tessera/txn.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zstd.h>

/* ---- Options ------------------------------------------------------------*/

static const char *const compression_choices[] = { "none", "zstd", NULL };

enum { OPT_PATH, OPT_JOURNAL_SIZE, OPT_COMPRESSION, OPT_LEVEL,
       OPT_MAX_OBJECT, OPT_MIN_FREE, OPT_QUEUE };

static const struct tsr_opt_def fs_options[] = {
	[OPT_PATH] = { .name = "path", .type = TSR_OPT_STRING,
		       .flags = TSR_OPT_REQUIRED,
		       .help = "directory holding the store (mkfs creates it)" },
	[OPT_JOURNAL_SIZE] = { .name = "journal_size", .type = TSR_OPT_SIZE,
			       .def = "256M", .min = "1M", .max = "64G",
			       .help = "size of the write-ahead journal, set at mkfs" },
	[OPT_COMPRESSION] = { .name = "compression", .type = TSR_OPT_STRING,
			      .def = "none", .choices = compression_choices,
			      .help = "compress data at rest: none or zstd" },
	[OPT_LEVEL] = { .name = "compression_level", .type = TSR_OPT_INT,
			.def = "3", .min = "1", .max = "19",
			.help = "zstd level when compression is zstd" },
	[OPT_MAX_OBJECT] = { .name = "max_object_size", .type = TSR_OPT_SIZE,
			     .def = "128M", .min = "64K", .max = "1T",
			     .help = "largest object size; growing past it fails with EFBIG" },
	[OPT_MIN_FREE] = { .name = "min_free", .type = TSR_OPT_SIZE,
			   .def = "64M", .min = "0",
			   .help = "free space kept on the file system; writes that would eat into it fail with ENOSPC" },
	[OPT_QUEUE] = { .name = "queue_bytes", .type = TSR_OPT_SIZE,
			.def = "256M", .min = "1M", .max = "16G",
			.help = "bytes of submitted, uncommitted transactions before submit() waits" },
	{ .name = NULL },
};

/* ---- The instance ---------------------------------------------------------*/

struct pending {
	struct pending *next;
	uint8_t *buf;          /* the encoded transaction */
	size_t len;
	tsr_commit_cb cb;
	void *arg;
};

struct fdent {
	uint64_t objid;
	int fd;
	uint64_t used;         /* LRU stamp */
};
#define FD_CACHE 64

struct super {
	uint8_t uuid[16];
	uint64_t next_objid;
	uint64_t objects;
	uint64_t bytes;        /* sum of object sizes */
};

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

struct fs {
	const struct tsr_host *host;
	char path[PATH_MAX - 64];
	uint64_t journal_size, max_object, min_free, queue_max;
	int compress, level;

	/* mounted state */
	int mounted;
	int dirfd, datafd;
	struct tsr_kv *kv;
	struct jr *jr;
	struct super sb;
	int failed;            /* an apply failed after commit: read-only */
	pthread_rwlock_t lock; /* readers vs apply */

	/* the commit thread and its queue */
	pthread_t thr;
	pthread_mutex_t qlock;
	pthread_cond_t qcond;  /* work arrived / space freed / idle */
	struct pending *head, *tail;
	size_t qbytes;
	uint64_t submitted, completed;
	int stop;

	/* commit thread only */
	struct idset journaled; /* ids with file ops journaled since the
				 * last checkpoint (see write_direct) */
	int direct_off;         /* journal everything until the next one */
	struct fdent fds[FD_CACHE];
	uint64_t fdclock;
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;       /* commit thread's; readers make their own */
};

static void
fs_log(struct fs *fs, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
fs_log(struct fs *fs, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fs->host->logv(fs->host->ctx, level, fmt, ap);
	va_end(ap);
}

#define LOG_ERR TSR_LOG_ERROR
#define LOG_WARN TSR_LOG_WARN
#define LOG_INFO TSR_LOG_INFO

/* An object name for messages: printable bytes as is, others as \xNN, cut
 * at 80 characters. */
static const char *
oid_str(const void *oid, size_t n, char *buf, size_t buflen)
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
#define KEY_MAX (1 + CID_LEN + TSR_TXN_MAX_NAME + 8)

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

static size_t
key_chunk(uint8_t *k, uint64_t objid, uint32_t cno)
{
	k[0] = 'C';
	be64(k + 1, objid);
	be32(k + 9, cno);
	return 13;
}

/* The key just past every key starting with prefix (prefix's last byte
 * incremented; the prefixes used here never end in 0xff runs that matter:
 * ids and tags are below 0xff in their top byte for the life of a store,
 * and where they are not, the carry is propagated). */
static size_t
key_after(uint8_t *k, const uint8_t *prefix, size_t n)
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

static uint8_t *
super_encode(const struct super *s, size_t *len)
{
	struct tsr_enc e;
	size_t m;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_raw(&e, "TSRFILE1", 8);
	tsr_enc_raw(&e, s->uuid, 16);
	tsr_enc_u32(&e, FS_BLOCK);
	tsr_enc_u32(&e, FS_CHUNK);
	tsr_enc_u64(&e, s->next_objid);
	tsr_enc_u64(&e, s->objects);
	tsr_enc_u64(&e, s->bytes);
	tsr_enc_end_struct(&e, m);
	return enc_finish(&e, len);
}

static int
super_decode(const void *p, size_t n, struct super *s, char *why, size_t wl)
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
	if (tsr_dec_end_struct(&d, &sub) < 0 || memcmp(magic, "TSRFILE1", 8) != 0)
		return errf(why, wl, -EBADMSG, "superblock damaged or not a file store");
	if (bs != FS_BLOCK || cs != FS_CHUNK)
		return errf(why, wl, -EOPNOTSUPP,
			    "block/chunk size %u/%u, this build supports %u/%u",
			    bs, cs, FS_BLOCK, FS_CHUNK);
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

static uint8_t *
cmeta_encode(const struct fs_cmeta *c, size_t *len)
{
	struct tsr_enc e;
	size_t m;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u8(&e, c->kind);
	if (c->kind == FS_CHUNK_RAW) {
		tsr_enc_u16(&e, c->zero);
		for (unsigned b = 0; b < FS_BPC; b++)
			if (!(c->zero & (1u << b)))
				tsr_enc_u32(&e, c->crc[b]);
	} else {
		tsr_enc_u32(&e, c->stored);
		tsr_enc_u32(&e, c->crc[0]);
	}
	tsr_enc_end_struct(&e, m);
	return enc_finish(&e, len);
}

static int
cmeta_decode(const void *p, size_t n, struct fs_cmeta *c)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	memset(c, 0, sizeof(*c));
	tsr_dec_init(&d, p, n);
	tsr_dec_begin_struct(&d, 1, &ver, &sub);
	c->kind = tsr_dec_u8(&sub);
	if (c->kind == FS_CHUNK_RAW) {
		c->zero = tsr_dec_u16(&sub);
		for (unsigned b = 0; b < FS_BPC; b++)
			if (!(c->zero & (1u << b)))
				c->crc[b] = tsr_dec_u32(&sub);
	} else if (c->kind == FS_CHUNK_ZSTD) {
		c->stored = tsr_dec_u32(&sub);
		c->crc[0] = tsr_dec_u32(&sub);
		if (c->stored == 0 || c->stored > FS_CHUNK)
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

/* Open an object's file under data/: read-only for readers, read-write for
 * the commit thread, creating it and its directories with create.
 * -ENOENT when it does not exist and !create.  *made (may be NULL) gets
 * MADE_* bits for what had to be created, so a caller that needs the new
 * names durable knows which directories to sync. */
#define MADE_FILE 1
#define MADE_LEAF 2   /* data/XX/YY */
#define MADE_TOP 4    /* data/XX */

static int
obj_open(struct fs *fs, uint64_t objid, int rw, int create, int *made)
{
	char rel[64];
	int fd, flags = 0;

	if (made)
		*made = 0;
	obj_relpath(rel, sizeof(rel), objid);
	fd = openat(fs->datafd, rel, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd >= 0 || errno != ENOENT || !create)
		return fd >= 0 ? fd : -errno;
	rel[2] = '\0';
	if (mkdirat(fs->datafd, rel, 0700) == 0)
		flags |= MADE_TOP;
	else if (errno != EEXIST)
		return -errno;
	rel[2] = '/';
	rel[5] = '\0';
	if (mkdirat(fs->datafd, rel, 0700) == 0)
		flags |= MADE_LEAF;
	else if (errno != EEXIST)
		return -errno;
	rel[5] = '/';
	fd = openat(fs->datafd, rel, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (made)
		*made = flags | MADE_FILE;
	return fd;
}

/* The commit thread's cached read-write descriptor for an object's file. */
static int
cached_fd(struct fs *fs, uint64_t objid, int create, int *made)
{
	struct fdent *victim = &fs->fds[0];

	if (made)
		*made = 0;
	for (int i = 0; i < FD_CACHE; i++) {
		struct fdent *e = &fs->fds[i];
		if (e->fd > 0 && e->objid == objid) {
			e->used = ++fs->fdclock;
			return e->fd;
		}
		if (e->fd <= 0 || e->used < victim->used)
			victim = e;
	}
	int fd = obj_open(fs, objid, 1, create, made);
	if (fd < 0)
		return fd;
	if (victim->fd > 0)
		close(victim->fd);
	victim->objid = objid;
	victim->fd = fd;
	victim->used = ++fs->fdclock;
	return fd;
}

static void
uncache_fd(struct fs *fs, uint64_t objid)
{
	for (int i = 0; i < FD_CACHE; i++)
		if (fs->fds[i].fd > 0 && fs->fds[i].objid == objid) {
			close(fs->fds[i].fd);
			fs->fds[i].fd = 0;
		}
}

static void
uncache_all(struct fs *fs)
{
	for (int i = 0; i < FD_CACHE; i++)
		if (fs->fds[i].fd > 0) {
			close(fs->fds[i].fd);
			fs->fds[i].fd = 0;
		}
}

static int
pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	uint8_t *b = buf;

	while (n > 0) {
		ssize_t r = pread(fd, b, n, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0) { /* past the end of the file: a hole */
			memset(b, 0, n);
			return 0;
		}
		b += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static int
pwrite_full(int fd, const void *buf, size_t n, uint64_t off)
{
	const uint8_t *b = buf;

	while (n > 0) {
		ssize_t w = pwrite(fd, b, n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* ---- Reading stored chunks (commit thread and readers) -------------------
 *
 * Both return -EIO after logging the object and offset when a checksum does
 * not match or stored bytes do not decompress: never bad data. */

static int
read_block(struct fs *fs, int fd, const char *name, uint64_t objid,
	   uint32_t cno, unsigned b, const struct fs_cmeta *m, uint8_t *out)
{
	uint64_t off = (uint64_t)cno * FS_CHUNK + (uint64_t)b * FS_BLOCK;
	int rc;

	if (!m->present || (m->zero & (1u << b))) {
		memset(out, 0, FS_BLOCK);
		return 0;
	}
	if (fd < 0) {
		fs_log(fs, LOG_ERR, "object %s (id %" PRIu64 ") offset %" PRIu64
		       ": data file missing: %s", name, objid, off, strerror(-fd));
		return -EIO;
	}
	rc = pread_full(fd, out, FS_BLOCK, off);
	if (rc < 0) {
		fs_log(fs, LOG_ERR, "object %s offset %" PRIu64 ": read: %s", name,
		       off, strerror(-rc));
		return -EIO;
	}
	if (tsr_crc32c(0, out, FS_BLOCK) != m->crc[b]) {
		fs_log(fs, LOG_ERR, "object %s (id %" PRIu64 ") offset %" PRIu64
		       ": checksum mismatch in stored data", name, objid, off);
		return -EIO;
	}
	return 0;
}

static int
read_zchunk(struct fs *fs, ZSTD_DCtx *dctx, int fd, const char *name,
	    uint64_t objid, uint32_t cno, const struct fs_cmeta *m, uint8_t *out)
{
	uint64_t off = (uint64_t)cno * FS_CHUNK;
	uint8_t *tmp = malloc(m->stored);
	size_t got;
	int rc;

	if (tmp == NULL)
		return -ENOMEM;
	rc = fd < 0 ? fd : pread_full(fd, tmp, m->stored, off);
	if (rc == 0 && tsr_crc32c(0, tmp, m->stored) != m->crc[0])
		rc = -EBADMSG;
	if (rc == 0) {
		got = ZSTD_decompressDCtx(dctx, out, FS_CHUNK, tmp, m->stored);
		if (ZSTD_isError(got) || got != FS_CHUNK)
			rc = -EBADMSG;
	}
	free(tmp);
	if (rc < 0) {
		fs_log(fs, LOG_ERR, "object %s (id %" PRIu64 ") offset %" PRIu64
		       ": %s in stored data", name, objid, off,
		       rc == -EBADMSG ? "checksum mismatch" : strerror(-rc));
		return rc == -ENOMEM ? rc : -EIO;
	}
	return 0;
}

/* ---- Preparing a transaction ---------------------------------------------
 *
 * The overlay: key/value changes in a kvov, data changes as whole chunks
 * in memory.  Every operation reads and writes through it. */

struct ov_chunk {
	uint32_t no;
	uint16_t loaded;      /* blocks whose content is in buf */
	uint16_t dirty;       /* blocks changed by this transaction */
	struct fs_cmeta base; /* the map when the chunk was first touched */
	uint8_t *buf;         /* FS_CHUNK bytes */
};

struct punch {
	uint64_t off, len;
};

struct ov_file {
	uint64_t objid;
	const char *name;     /* for messages */
	char namebuf[96];
	uint64_t trunc_to;    /* UINT64_MAX: no truncation */
	int unlink;
	struct ov_chunk **chunks; /* sorted by no */
	size_t nchunks, cap;
	struct punch *punches;
	size_t npunches, pcap;
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

struct prep {
	struct fs *fs;
	struct kvov kv;
	struct ov_file **files;
	size_t nfiles, fcap;
	struct super sb;      /* the superblock as this transaction leaves it */
	uint64_t now;
	uint64_t data_bytes;  /* bytes the plan writes to files */
	struct direct *direct;  /* files written before the journal record */
	size_t ndirect, dcap;
	uint64_t *jids;       /* files the record has operations for */
	size_t njids, jcap;
	char err[512];
};

static struct ov_file *
ov_file(struct prep *p, uint64_t objid, const void *oid, size_t oid_len)
{
	for (size_t i = 0; i < p->nfiles; i++)
		if (p->files[i]->objid == objid)
			return p->files[i];
	if (p->nfiles == p->fcap) {
		size_t ncap = p->fcap ? p->fcap * 2 : 8;
		struct ov_file **nf = realloc(p->files, ncap * sizeof(*nf));
		if (nf == NULL)
			return NULL;
		p->files = nf;
		p->fcap = ncap;
	}
	struct ov_file *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return NULL;
	f->objid = objid;
	f->trunc_to = UINT64_MAX;
	f->name = oid_str(oid, oid_len, f->namebuf, sizeof(f->namebuf));
	p->files[p->nfiles++] = f;
	return f;
}

static void
ov_file_free(struct ov_file *f)
{
	for (size_t i = 0; i < f->nchunks; i++) {
		free(f->chunks[i]->buf);
		free(f->chunks[i]);
	}
	free(f->chunks);
	free(f->punches);
	free(f);
}

static void
prep_release(struct prep *p)
{
	for (size_t i = 0; i < p->nfiles; i++)
		ov_file_free(p->files[i]);
	free(p->files);
	for (size_t i = 0; i < p->ndirect; i++) {
		struct direct *d = &p->direct[i];
		close(d->fd);
		if (d->dio >= 0)
			close(d->dio);
		for (size_t j = 0; j < d->nw; j++)
			free(d->w[j].owned);
		free(d->w);
	}
	free(p->direct);
	free(p->jids);
	kvov_reset(&p->kv);
}

static size_t
chunk_find(const struct ov_file *f, uint32_t no, int *found)
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
get_cmeta(struct prep *p, uint64_t objid, uint32_t no, struct fs_cmeta *m)
{
	uint8_t k[16];
	void *v;
	size_t vl;
	int owned, rc;

	rc = kvov_get(&p->kv, k, key_chunk(k, objid, no), &v, &vl, &owned,
		      p->err, sizeof(p->err));
	if (rc == -ENOENT) {
		memset(m, 0, sizeof(*m));
		return 0;
	}
	if (rc < 0)
		return -EIO;
	rc = cmeta_decode(v, vl, m);
	if (owned)
		tsr_kv_free(v);
	if (rc < 0)
		return errf(p->err, sizeof(p->err), -EIO,
			    "chunk map of object id %" PRIu64 " chunk %u is damaged",
			    objid, no);
	return 0;
}

/* The chunk in the overlay, materialized on first touch. */
static int
chunk_get(struct prep *p, struct ov_file *f, uint32_t no, struct ov_chunk **out)
{
	int found, rc;
	size_t i = chunk_find(f, no, &found);
	struct ov_chunk *c;

	if (found) {
		*out = f->chunks[i];
		return 0;
	}
	c = calloc(1, sizeof(*c));
	/* block-aligned, so a direct write can use O_DIRECT */
	if (c == NULL || posix_memalign((void **)&c->buf, FS_BLOCK, FS_CHUNK) != 0) {
		free(c);
		return -ENOMEM;
	}
	c->no = no;
	rc = get_cmeta(p, f->objid, no, &c->base);
	if (rc == 0 && !c->base.present) {
		memset(c->buf, 0, FS_CHUNK);
		c->loaded = 0xffff;
	} else if (rc == 0 && c->base.kind == FS_CHUNK_ZSTD) {
		int fd = cached_fd(p->fs, f->objid, 0, NULL);
		rc = read_zchunk(p->fs, p->fs->dctx, fd, f->name, f->objid, no,
				 &c->base, c->buf);
		/* the slot holds compressed bytes: every block must be
		 * written again if the chunk is stored raw */
		c->loaded = 0xffff;
	}
	if (rc == 0 && f->nchunks == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : 16;
		struct ov_chunk **nc = realloc(f->chunks, ncap * sizeof(*nc));
		if (nc == NULL)
			rc = -ENOMEM;
		else {
			f->chunks = nc;
			f->cap = ncap;
		}
	}
	if (rc < 0) {
		free(c->buf);
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
chunk_load_block(struct prep *p, struct ov_file *f, struct ov_chunk *c,
		 unsigned b)
{
	int fd, rc;

	if (c->loaded & (1u << b))
		return 0;
	fd = (c->base.zero & (1u << b)) ? -1 : cached_fd(p->fs, f->objid, 0, NULL);
	rc = read_block(p->fs, fd, f->name, f->objid, c->no, b, &c->base,
			c->buf + b * FS_BLOCK);
	if (rc < 0)
		return errf(p->err, sizeof(p->err), rc,
			    "object %s offset %" PRIu64 ": stored data unreadable",
			    f->name, (uint64_t)c->no * FS_CHUNK + b * FS_BLOCK);
	c->loaded |= (uint16_t)(1u << b);
	return 0;
}

/* Write len bytes (data, or zeros when data is NULL) at off. */
static int
ov_write(struct prep *p, struct ov_file *f, uint64_t off, uint64_t len,
	 const uint8_t *data)
{
	while (len > 0) {
		uint32_t no = (uint32_t)(off / FS_CHUNK);
		uint32_t coff = (uint32_t)(off % FS_CHUNK);
		uint32_t n = len < FS_CHUNK - coff ? (uint32_t)len : FS_CHUNK - coff;
		struct ov_chunk *c;
		int rc = chunk_get(p, f, no, &c);

		if (rc < 0)
			return rc;
		for (unsigned b = coff / FS_BLOCK; b <= (coff + n - 1) / FS_BLOCK; b++) {
			uint32_t bs = b * FS_BLOCK;
			int whole = coff <= bs && coff + n >= bs + FS_BLOCK;
			if (!whole && (rc = chunk_load_block(p, f, c, b)) < 0)
				return rc;
			c->loaded |= (uint16_t)(1u << b);
			c->dirty |= (uint16_t)(1u << b);
		}
		if (data != NULL) {
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
ov_read(struct prep *p, struct ov_file *f, uint64_t size, uint64_t off,
	uint64_t len, uint8_t *out)
{
	while (len > 0) {
		uint32_t no = (uint32_t)(off / FS_CHUNK);
		uint32_t coff = (uint32_t)(off % FS_CHUNK);
		uint32_t n = len < FS_CHUNK - coff ? (uint32_t)len : FS_CHUNK - coff;
		struct ov_chunk *c;
		int rc;

		if (off >= size) {
			memset(out, 0, len);
			return 0;
		}
		if ((rc = chunk_get(p, f, no, &c)) < 0)
			return rc;
		for (unsigned b = coff / FS_BLOCK; b <= (coff + n - 1) / FS_BLOCK; b++)
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
add_punch(struct ov_file *f, uint64_t off, uint64_t len)
{
	if (len == 0)
		return 0;
	if (f->npunches == f->pcap) {
		size_t ncap = f->pcap ? f->pcap * 2 : 8;
		struct punch *np = realloc(f->punches, ncap * sizeof(*np));
		if (np == NULL)
			return -ENOMEM;
		f->punches = np;
		f->pcap = ncap;
	}
	f->punches[f->npunches++] = (struct punch){ off, len };
	return 0;
}

/* Forget chunks [from, to) (to UINT32_MAX: all the rest): their maps go,
 * and they read as zeros from now on. */
static int
drop_chunks(struct prep *p, struct ov_file *f, uint32_t from, uint64_t to)
{
	uint8_t a[16], b[16];
	size_t al, bl;
	int found;
	size_t i = chunk_find(f, from, &found), j = i;

	while (j < f->nchunks && f->chunks[j]->no < to) {
		free(f->chunks[j]->buf);
		free(f->chunks[j]);
		j++;
	}
	if (j > i) {
		memmove(&f->chunks[i], &f->chunks[j],
			(f->nchunks - j) * sizeof(*f->chunks));
		f->nchunks -= j - i;
	}
	al = key_chunk(a, f->objid, from);
	if (to > UINT32_MAX)
		bl = key_after(b, a, 9);
	else
		bl = key_chunk(b, f->objid, (uint32_t)to);
	if (to > UINT32_MAX) {
		uint64_t t = (uint64_t)from * FS_CHUNK;
		if (t < f->trunc_to)
			f->trunc_to = t;
		return kvov_del_range(&p->kv, a, al, b, bl);
	}
	int rc = kvov_del_range(&p->kv, a, al, b, bl);
	return rc < 0 ? rc
		      : add_punch(f, (uint64_t)from * FS_CHUNK,
				  (to - from) * (uint64_t)FS_CHUNK);
}

/* Zero [off, end) of an object whose current size is at least end. */
static int
ov_zero(struct prep *p, struct ov_file *f, uint64_t off, uint64_t end)
{
	uint64_t c0 = (off + FS_CHUNK - 1) / FS_CHUNK, c1 = end / FS_CHUNK;
	int rc;

	if (off >= end)
		return 0;
	if (c0 >= c1) /* inside one or two chunks */
		return ov_write(p, f, off, end - off, NULL);
	if ((rc = ov_write(p, f, off, c0 * FS_CHUNK - off, NULL)) < 0)
		return rc;
	if ((rc = drop_chunks(p, f, (uint32_t)c0, c1)) < 0)
		return rc;
	return ov_write(p, f, c1 * FS_CHUNK, end - c1 * FS_CHUNK, NULL);
}

/* Shrink to size: the tail of the last chunk is zeroed, later chunks go. */
static int
ov_truncate(struct prep *p, struct ov_file *f, uint64_t oldsize, uint64_t size)
{
	uint64_t keep = (size + FS_CHUNK - 1) / FS_CHUNK;
	uint64_t tail_end = keep * FS_CHUNK < oldsize ? keep * FS_CHUNK : oldsize;
	int rc;

	if (size >= oldsize)
		return 0;
	if (tail_end > size && (rc = ov_write(p, f, size, tail_end - size, NULL)) < 0)
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
coll_exists(struct prep *p, const struct tsr_coll_id *cid)
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
obj_lookup(struct prep *p, struct objref *r, const struct tsr_coll_id *cid,
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
			    oid_str(oid, oid_len, nb, sizeof(nb)));
	}
	r->exists = 1;
	return 0;
}

static int
obj_store(struct prep *p, struct objref *r)
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
obj_create(struct prep *p, struct objref *r)
{
	r->exists = 1;
	r->on.objid = p->sb.next_objid++;
	r->on.size = 0;
	p->sb.objects++;
	return obj_store(p, r);
}

static struct ov_file *
obj_file(struct prep *p, struct objref *r)
{
	return ov_file(p, r->on.objid, r->oid, r->oid_len);
}

static int
obj_set_size(struct prep *p, struct objref *r, uint64_t size)
{
	p->sb.bytes += size - r->on.size; /* wraps correctly when shrinking */
	r->on.size = size;
	return obj_store(p, r);
}

static int
obj_remove(struct prep *p, struct objref *r)
{
	static const char tags[] = { 'A', 'M', 'C' };
	struct ov_file *f = obj_file(p, r);
	int rc;

	if (f == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(tags); i++) {
		uint8_t a[16], b[16];
		size_t al = key_sub(a, tags[i], r->on.objid, NULL, 0);
		size_t bl = key_after(b, a, al);
		if ((rc = kvov_del_range(&p->kv, a, al, b, bl)) < 0)
			return rc;
	}
	for (size_t i = 0; i < f->nchunks; i++) {
		free(f->chunks[i]->buf);
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
copy_keys(struct prep *p, char tag, uint64_t from, uint64_t to)
{
	struct kvcopy c = { 0 };
	uint8_t a[16], b[16];
	size_t al = key_sub(a, tag, from, NULL, 0), bl = key_after(b, a, al);
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
chunk_present(struct prep *p, struct ov_file *f, uint32_t no, int *present)
{
	struct fs_cmeta m;
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
op_clone(struct prep *p, struct objref *src, struct objref *dst)
{
	struct ov_file *sf, *df;
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
	buf = malloc(FS_CHUNK);
	if (sf == NULL || df == NULL || buf == NULL) {
		free(buf);
		return -ENOMEM;
	}
	for (uint64_t off = 0; off < src->on.size && rc == 0; off += FS_CHUNK) {
		uint64_t n = src->on.size - off < FS_CHUNK ? src->on.size - off : FS_CHUNK;
		int present;
		if ((rc = chunk_present(p, sf, (uint32_t)(off / FS_CHUNK), &present)) < 0 ||
		    !present)
			continue;
		if ((rc = ov_read(p, sf, src->on.size, off, n, buf)) == 0)
			rc = ov_write(p, df, off, n, buf);
	}
	free(buf);
	if (rc == 0)
		rc = obj_set_size(p, dst, src->on.size);
	return rc;
}

static int
op_clone_range(struct prep *p, struct objref *src, struct objref *dst,
	       const struct tsr_txn_op *op)
{
	struct ov_file *sf, *df;
	uint8_t *buf;
	int rc = 0;

	if (!dst->exists && (rc = obj_create(p, dst)) < 0)
		return rc;
	sf = obj_file(p, src);
	df = obj_file(p, dst);
	buf = malloc(FS_CHUNK);
	if (sf == NULL || df == NULL || buf == NULL) {
		free(buf);
		return -ENOMEM;
	}
	for (uint64_t done = 0; done < op->len && rc == 0;) {
		uint64_t n = op->len - done < FS_CHUNK ? op->len - done : FS_CHUNK;
		if ((rc = ov_read(p, sf, src->on.size, op->off + done, n, buf)) == 0)
			rc = ov_write(p, df, op->off2 + done, n, buf);
		done += n;
	}
	free(buf);
	if (rc == 0 && op->len && op->off2 + op->len > dst->on.size)
		rc = obj_set_size(p, dst, op->off2 + op->len);
	return rc;
}

static int
check_size(struct prep *p, const struct objref *r, uint64_t end)
{
	char nb[96];

	if (end <= p->fs->max_object)
		return 0;
	return errf(p->err, sizeof(p->err), -EFBIG,
		    "object %s: %" PRIu64 " bytes is past max_object_size %" PRIu64,
		    oid_str(r->oid, r->oid_len, nb, sizeof(nb)), end,
		    p->fs->max_object);
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
op_target(struct prep *p, const struct tsr_txn_op *op, struct objref *r,
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
prep_op(struct prep *p, const struct tsr_txn_op *op)
{
	uint8_t k[KEY_MAX], k2[KEY_MAX];
	size_t kl, kl2;
	struct objref r, r2;
	struct ov_file *f;
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
		kl2 = key_after(k2, k, kl);
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
			rc = ov_write(p, f, op->off, op->len, op->data);
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
			kl2 = key_after(k2, k, kl);
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

/* ---- The plan --------------------------------------------------------------
 *
 *     envelope v1 {
 *         u32 nfile;  nfile x { u8 op, u64 objid, u64 off, u64 len,
 *                               bytes data (P_WRITE only) }
 *         u32 nkv;    nkv x   { u8 op, bytes key, bytes val_or_end }
 *     }
 *
 * Every operation reads nothing and may be applied any number of times. */

enum { P_WRITE = 1, P_PUNCH, P_TRUNC, P_UNLINK };
enum { K_PUT = 1, K_DEL, K_DELRANGE };

struct plan {
	struct tsr_enc f, k;
	uint32_t nf, nk;
};

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
plan_kv(struct plan *pl, uint8_t op, const void *k, size_t kl, const void *v,
	size_t vl)
{
	tsr_enc_u8(&pl->k, op);
	tsr_enc_bytes(&pl->k, k, kl);
	tsr_enc_bytes(&pl->k, v, vl);
	pl->nk++;
}

static int
is_zero(const uint8_t *p, size_t n)
{
	/* zero at the start, and every byte equal to the one before it */
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Queue data for a file being written directly (see write_direct);
 * sync_direct writes and syncs it before the journal record.  copy_ok
 * says data lives as long as the overlay (a chunk buffer). */
static int
direct_write(struct prep *p, uint64_t objid, uint64_t off, const void *data,
	     size_t len, int copy_ok)
{
	struct direct *d = NULL;

	for (size_t i = 0; i < p->ndirect; i++)
		if (p->direct[i].objid == objid)
			d = &p->direct[i];
	if (d == NULL) {
		if (p->ndirect == p->dcap) {
			size_t ncap = p->dcap ? p->dcap * 2 : 8;
			struct direct *nd = realloc(p->direct, ncap * sizeof(*nd));
			if (nd == NULL)
				return -ENOMEM;
			p->direct = nd;
			p->dcap = ncap;
		}
		d = &p->direct[p->ndirect];
		memset(d, 0, sizeof(*d));
		d->objid = objid;
		d->fd = obj_open(p->fs, objid, 1, 1, &d->made);
		if (d->fd < 0)
			return errf(p->err, sizeof(p->err), d->fd,
				    "%s: data file %016" PRIx64 ": %s", p->fs->path,
				    objid, strerror(-d->fd));
		/* Whole blocks go out with O_DIRECT: no copy through the page
		 * cache and no delayed allocation to flush later.  The file
		 * system may refuse it (tmpfs); then everything is buffered. */
		char rel[64];
		obj_relpath(rel, sizeof(rel), objid);
		d->dio = openat(p->fs->datafd, rel, O_RDWR | O_DIRECT | O_CLOEXEC);
		p->ndirect++;
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
emit_write(struct prep *p, struct plan *pl, int direct, uint64_t objid,
	   uint64_t off, uint64_t len, const void *data, int in_chunk, int *rc)
{
	if (*rc < 0)
		return;
	if (direct)
		*rc = direct_write(p, objid, off, data, (size_t)len, in_chunk);
	else
		plan_file(pl, P_WRITE, objid, off, len, data);
}

static int
finalize_chunk(struct prep *p, struct plan *pl, struct ov_file *f,
	       struct ov_chunk *c, int direct)
{
	struct fs *fs = p->fs;
	uint64_t slot = (uint64_t)c->no * FS_CHUNK;
	struct fs_cmeta m;
	uint8_t k[16];
	size_t kl = key_chunk(k, f->objid, c->no), vl;
	uint8_t *v;
	int rc;

	memset(&m, 0, sizeof(m));
	if (c->base.present && c->base.kind == FS_CHUNK_ZSTD)
		c->dirty = 0xffff; /* the slot holds compressed bytes */
	if (fs->compress) {
		for (unsigned b = 0; b < FS_BPC; b++)
			if ((rc = chunk_load_block(p, f, c, b)) < 0)
				return rc;
		if (!is_zero(c->buf, FS_BLOCK) || !is_zero(c->buf, FS_CHUNK)) {
			size_t cap = ZSTD_compressBound(FS_CHUNK);
			uint8_t *z = malloc(cap);
			size_t n;
			if (z == NULL)
				return -ENOMEM;
			n = ZSTD_compressCCtx(fs->cctx, z, cap, c->buf, FS_CHUNK, fs->level);
			if (!ZSTD_isError(n) && n <= FS_CHUNK - FS_BLOCK) {
				uint64_t used = (n + FS_BLOCK - 1) / FS_BLOCK * FS_BLOCK;
				rc = 0;
				emit_write(p, pl, direct, f->objid, slot, n, z, 0, &rc);
				if (rc < 0) {
					free(z);
					return rc;
				}
				if (!direct) /* a new chunk's slot holds nothing */
					plan_file(pl, P_PUNCH, f->objid, slot + used,
						  FS_CHUNK - used, NULL);
				m.kind = FS_CHUNK_ZSTD;
				m.stored = (uint32_t)n;
				m.crc[0] = tsr_crc32c(0, z, n);
				p->data_bytes += n;
				free(z);
				goto store;
			}
			free(z);
		}
		c->dirty = 0xffff; /* stored raw: every block is written */
	}
	m.kind = FS_CHUNK_RAW;
	for (unsigned b = 0; b < FS_BPC; b++) {
		uint16_t bit = (uint16_t)(1u << b);
		const uint8_t *blk = c->buf + b * FS_BLOCK;

		if (!(c->dirty & bit)) {
			if (!c->base.present || (c->base.zero & bit))
				m.zero |= bit;
			else
				m.crc[b] = c->base.crc[b];
			continue;
		}
		if (is_zero(blk, FS_BLOCK)) {
			m.zero |= bit;
			if (c->base.present && !(c->base.zero & bit))
				plan_file(pl, P_PUNCH, f->objid, slot + b * FS_BLOCK,
					  FS_BLOCK, NULL);
			continue;
		}
		m.crc[b] = tsr_crc32c(0, blk, FS_BLOCK);
	}
	/* write runs of dirty non-zero blocks */
	rc = 0;
	for (unsigned b = 0; b < FS_BPC && rc == 0;) {
		unsigned e = b;
		while (e < FS_BPC && (c->dirty & (1u << e)) && !(m.zero & (1u << e)))
			e++;
		if (e == b) {
			b++;
			continue;
		}
		emit_write(p, pl, direct, f->objid, slot + b * FS_BLOCK,
			   (uint64_t)(e - b) * FS_BLOCK, c->buf + b * FS_BLOCK, 1, &rc);
		p->data_bytes += (uint64_t)(e - b) * FS_BLOCK;
		b = e;
	}
	if (rc < 0)
		return rc;
	if (m.zero == 0xffff) {
		plan_kv(pl, K_DEL, k, kl, NULL, 0);
		return 0;
	}
store:
	m.present = 1;
	v = cmeta_encode(&m, &vl);
	if (v == NULL)
		return -ENOMEM;
	plan_kv(pl, K_PUT, k, kl, v, vl);
	free(v);
	return 0;
}

/* May this file's new data skip the journal?
 *
 * Journaling data means writing it twice, which halves the bandwidth of
 * large writes.  Data may instead be written in place before the journal
 * record (and synced), with the record holding only its chunk maps, when
 * both hold:
 *   - every chunk written had no map before: until the record commits,
 *     nothing reads those bytes, so a crash before it loses nothing and
 *     exposes nothing;
 *   - no record since the last checkpoint has operations on the file, and
 *     this one has none but these writes: replay, which re-applies the
 *     records after the checkpoint, must never write over this data with
 *     something older.
 * This is the path of every new object's data (the common case: objects
 * are written once, whole), and of clones. */
static int
write_direct(struct prep *p, const struct ov_file *f)
{
	if (f->unlink || f->trunc_to != UINT64_MAX || f->npunches ||
	    p->fs->direct_off || idset_has(&p->fs->journaled, f->objid))
		return 0;
	for (size_t j = 0; j < f->nchunks; j++)
		if (f->chunks[j]->dirty && f->chunks[j]->base.present)
			return 0;
	return 1;
}

static int
add_jid(struct prep *p, uint64_t objid)
{
	if (p->njids == p->jcap) {
		size_t ncap = p->jcap ? p->jcap * 2 : 16;
		uint64_t *n = realloc(p->jids, ncap * sizeof(*n));
		if (n == NULL)
			return -ENOMEM;
		p->jids = n;
		p->jcap = ncap;
	}
	p->jids[p->njids++] = objid;
	return 0;
}

static int
writev_full(int fd, struct iovec *iov, int n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwritev(fd, iov, n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (uint64_t)w;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
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
		int aligned = d->dio >= 0 && w->off % FS_BLOCK == 0 &&
			      w->len % FS_BLOCK == 0 && (uintptr_t)w->p % FS_BLOCK == 0;
		uint64_t off = w->off, end = w->off + w->len;
		int n = 0, rc;

		iov[n].iov_base = (void *)w->p;
		iov[n++].iov_len = w->len;
		for (i++; aligned && i < d->nw && n < 64 && d->w[i].off == end &&
			  d->w[i].len % FS_BLOCK == 0 &&
			  (uintptr_t)d->w[i].p % FS_BLOCK == 0;
		     i++) {
			iov[n].iov_base = (void *)d->w[i].p;
			iov[n++].iov_len = d->w[i].len;
			end += d->w[i].len;
		}
		rc = writev_full(aligned ? d->dio : d->fd, iov, n, off);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Make the directly written data durable, names included: a new file's
 * directory entry, and new directories' entries in their parents. */
static int
sync_direct(struct prep *p)
{
	struct fs *fs = p->fs;

	for (size_t i = 0; i < p->ndirect; i++) {
		int rc = flush_dwrites(&p->direct[i]);
		if (rc < 0)
			return errf(p->err, sizeof(p->err), rc, "%s: data file %016"
				    PRIx64 ": %s", fs->path, p->direct[i].objid,
				    strerror(-rc));
	}
	/* start writeback of every file first, so the syncs below overlap
	 * and share the file system's journal commits */
	for (size_t i = 0; p->ndirect > 1 && i < p->ndirect; i++)
		sync_file_range(p->direct[i].fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	for (size_t i = 0; i < p->ndirect; i++) {
		const struct direct *d = &p->direct[i];
		char rel[64];

		if (fdatasync(d->fd) < 0)
			return errf(p->err, sizeof(p->err), -errno, "%s: data file "
				    "%016" PRIx64 ": fdatasync: %s", fs->path, d->objid,
				    strerror(errno));
		obj_relpath(rel, sizeof(rel), d->objid);
		for (int level = 0; level < 3; level++) {
			static const int need[] = { MADE_FILE, MADE_LEAF, MADE_TOP };
			static const size_t cut[] = { 5, 2, 0 };
			int dfd;

			if (!(d->made & need[level]))
				break;
			rel[cut[level]] = '\0';
			dfd = cut[level] ? openat(fs->datafd, rel,
						  O_DIRECTORY | O_RDONLY | O_CLOEXEC)
					 : dup(fs->datafd);
			if (dfd < 0 || fsync(dfd) < 0) {
				int e = errno;
				if (dfd >= 0)
					close(dfd);
				return errf(p->err, sizeof(p->err), -e, "%s: data/%s: "
					    "fsync: %s", fs->path, rel, strerror(e));
			}
			close(dfd);
		}
	}
	return 0;
}

/* Turn the overlay into the encoded plan (*out, malloc'd). */
static int
finalize(struct prep *p, uint8_t **out, size_t *outlen)
{
	struct fs *fs = p->fs;
	struct plan pl;
	struct tsr_enc e;
	size_t m;
	int rc = 0;

	memset(&pl, 0, sizeof(pl));
	tsr_enc_init(&pl.f);
	tsr_enc_init(&pl.k);
	/* Range deletions first: a chunk dropped (truncate, zero) and written
	 * again in the same overlay gets its new map below, after the range
	 * that removes the old one. */
	for (size_t i = 0; i < p->kv.nranges; i++) {
		const struct kvov_range *r = &p->kv.ranges[i];
		plan_kv(&pl, K_DELRANGE, r->start, r->slen, r->end, r->elen);
	}
	for (size_t i = 0; i < p->nfiles && rc == 0; i++) {
		struct ov_file *f = p->files[i];
		int direct = write_direct(p, f);
		uint32_t before = pl.nf;

		if (f->unlink) {
			plan_file(&pl, P_UNLINK, f->objid, 0, 0, NULL);
		} else {
			if (f->trunc_to != UINT64_MAX)
				plan_file(&pl, P_TRUNC, f->objid, f->trunc_to, 0, NULL);
			for (size_t j = 0; j < f->npunches; j++)
				plan_file(&pl, P_PUNCH, f->objid, f->punches[j].off,
					  f->punches[j].len, NULL);
			for (size_t j = 0; j < f->nchunks && rc == 0; j++)
				if (f->chunks[j]->dirty)
					rc = finalize_chunk(p, &pl, f, f->chunks[j],
							    direct);
		}
		if (rc == 0 && pl.nf != before)
			rc = add_jid(p, f->objid);
	}
	/* the overlay's entries come after its ranges (see kvov.h) */
	for (size_t i = 0; i < p->kv.nents; i++) {
		const struct kvov_ent *en = &p->kv.ents[i];
		plan_kv(&pl, en->val ? K_PUT : K_DEL, en->key, en->klen, en->val,
			en->vlen);
		p->data_bytes += en->klen + en->vlen;
	}
	if (memcmp(&p->sb, &fs->sb, sizeof(p->sb)) != 0) {
		size_t sl;
		uint8_t *s = super_encode(&p->sb, &sl);
		if (s == NULL)
			rc = -ENOMEM;
		else
			plan_kv(&pl, K_PUT, "S", 1, s, sl);
		free(s);
	}
	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u32(&e, pl.nf);
	tsr_enc_raw(&e, pl.f.buf, pl.f.len);
	tsr_enc_u32(&e, pl.nk);
	tsr_enc_raw(&e, pl.k.buf, pl.k.len);
	tsr_enc_end_struct(&e, m);
	if (rc == 0)
		rc = tsr_enc_error(&pl.f) ? tsr_enc_error(&pl.f)
		     : tsr_enc_error(&pl.k) ? tsr_enc_error(&pl.k)
					    : tsr_enc_error(&e);
	tsr_enc_release(&pl.f);
	tsr_enc_release(&pl.k);
	if (rc < 0) {
		tsr_enc_release(&e);
		return rc;
	}
	*out = tsr_enc_take(&e, outlen);
	return *out ? 0 : -ENOMEM;
}

/* ---- Applying a plan (live and at replay) ---------------------------------*/

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

static int
apply_plan(struct fs *fs, const void *buf, size_t len, char *err, size_t errlen)
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
		uint8_t op = tsr_dec_u8(&sub);
		uint64_t objid = tsr_dec_u64(&sub);
		uint64_t off = tsr_dec_u64(&sub);
		uint64_t l = tsr_dec_u64(&sub);
		const void *data = NULL;
		size_t dl = 0;
		char rel[64];
		int fd;

		if (op == P_WRITE) {
			tsr_dec_bytes(&sub, &data, &dl, FS_CHUNK);
			if (dl != l)
				tsr_dec_fail(&sub, -EBADMSG);
		}
		if (tsr_dec_error(&sub))
			break;
		switch (op) {
		case P_WRITE:
			fd = cached_fd(fs, objid, 1, NULL);
			rc = fd < 0 ? fd : pwrite_full(fd, data, dl, off);
			break;
		case P_PUNCH:
		case P_TRUNC:
			fd = cached_fd(fs, objid, 0, NULL);
			if (fd == -ENOENT)
				break; /* nothing there to cut */
			if (fd < 0)
				rc = fd;
			else if (op == P_TRUNC)
				rc = ftruncate(fd, (off_t)off) < 0 ? -errno : 0;
			else if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					   (off_t)off, (off_t)l) < 0 &&
				 errno != EOPNOTSUPP)
				rc = -errno; /* punching only frees space */
			break;
		case P_UNLINK:
			uncache_fd(fs, objid);
			obj_relpath(rel, sizeof(rel), objid);
			if (unlinkat(fs->datafd, rel, 0) < 0 && errno != ENOENT)
				rc = -errno;
			break;
		default:
			tsr_dec_fail(&sub, -EBADMSG);
		}
		if (rc < 0)
			return errf(err, errlen, rc, "%s: applying to data file %016" PRIx64
				    ": %s", fs->path, objid, strerror(-rc));
	}
	n = tsr_dec_u32(&sub);
	b = tsr_kv_batch_create();
	if (b == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n && rc == 0 && !tsr_dec_error(&sub); i++) {
		uint8_t op = tsr_dec_u8(&sub);
		const void *k, *v;
		size_t kl, vl;

		tsr_dec_bytes(&sub, &k, &kl, KEY_MAX);
		tsr_dec_bytes(&sub, &v, &vl, TSR_TXN_MAX_VALUE + 64);
		if (tsr_dec_error(&sub))
			break;
		if (op == K_PUT) {
			tsr_kv_batch_put(b, k, kl, v, vl);
		} else if (op == K_DEL) {
			tsr_kv_batch_del(b, k, kl);
		} else if (op == K_DELRANGE) {
			struct delrange dr = { b };
			rc = tsr_kv_scan(fs->kv, k, kl, v, vl, delrange_key, &dr, err,
					 errlen);
		} else {
			tsr_dec_fail(&sub, -EBADMSG);
		}
	}
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) != 0) {
		tsr_kv_batch_destroy(b);
		return errf(err, errlen, -EBADMSG, "plan: malformed");
	}
	if (rc == 0)
		rc = tsr_kv_write(fs->kv, b, 0, err, errlen);
	tsr_kv_batch_destroy(b);
	return rc;
}

/* ---- Checkpoints ---------------------------------------------------------*/

static int
write_super(struct fs *fs, int sync, char *err, size_t errlen)
{
	struct tsr_kv_batch *b = tsr_kv_batch_create();
	size_t sl;
	uint8_t *s = super_encode(&fs->sb, &sl);
	int rc;

	if (b == NULL || s == NULL) {
		tsr_kv_batch_destroy(b);
		free(s);
		return errf(err, errlen, -ENOMEM, "%s: out of memory", fs->path);
	}
	tsr_kv_batch_put(b, "S", 1, s, sl);
	rc = tsr_kv_write(fs->kv, b, sync, err, errlen);
	tsr_kv_batch_destroy(b);
	free(s);
	return rc;
}

/* Make everything applied durable without the journal, then empty it.
 * The synced LevelDB write flushes LevelDB's log; syncfs() the object
 * files and directories. */
static int
checkpoint(struct fs *fs, char *err, size_t errlen)
{
	int rc = write_super(fs, 1, err, errlen);

	if (rc < 0)
		return rc;
	if (syncfs(fs->dirfd) < 0)
		return errf(err, errlen, -errno, "%s: syncfs: %s", fs->path,
			    strerror(errno));
	if ((rc = jr_checkpoint(fs->jr, err, errlen)) < 0)
		return rc;
	/* no record is left to replay over anything */
	idset_clear(&fs->journaled);
	fs->direct_off = 0;
	return 0;
}

/* ---- The commit thread ---------------------------------------------------*/

static int
enough_space(struct fs *fs, uint64_t need)
{
	struct statvfs sv;

	if (fstatvfs(fs->dirfd, &sv) < 0)
		return 1; /* cannot tell: let the write find out */
	return (uint64_t)sv.f_bavail * sv.f_frsize >= need + fs->min_free;
}

/* Prepare one encoded transaction into the overlay.  On failure the
 * overlay holds part of it and must be rebuilt without it. */
static int
prep_txn(struct prep *p, const struct pending *pd)
{
	struct fs *fs = p->fs;
	struct tsr_txn txn;
	struct tsr_dec d;
	int rc;

	tsr_dec_init(&d, pd->buf, pd->len);
	if ((rc = tsr_txn_decode(&d, &txn, NULL, 0)) < 0)
		return rc;
	for (uint32_t i = 0; i < txn.nops && rc == 0; i++) {
		p->err[0] = '\0';
		rc = prep_op(p, &txn.ops[i]);
		if (rc == -EIO || (rc == -EINVAL && p->err[0]))
			fs_log(fs, rc == -EIO ? LOG_ERR : LOG_WARN,
			       "%s: transaction op %u (%s) failed: %s", fs->path, i,
			       tsr_txn_op_name(txn.ops[i].type),
			       p->err[0] ? p->err : strerror(-rc));
	}
	tsr_txn_decoded_free(&txn);
	return rc;
}

static void
prep_init(struct prep *p, struct fs *fs, uint64_t now)
{
	memset(p, 0, sizeof(*p));
	p->fs = fs;
	kvov_init(&p->kv, fs->kv);
	p->sb = fs->sb;
	p->now = now;
}

/* The transaction did not commit: remove the files its direct writes
 * created (nothing refers to them).  Data written into files that existed
 * lies in chunks without maps, which nothing reads. */
static void
drop_direct(struct prep *p)
{
	for (size_t i = 0; i < p->ndirect; i++) {
		char rel[64];

		if (!(p->direct[i].made & MADE_FILE))
			continue;
		obj_relpath(rel, sizeof(rel), p->direct[i].objid);
		uncache_fd(p->fs, p->direct[i].objid);
		unlinkat(p->fs->datafd, rel, 0);
	}
}

/* What the overlay may need on disk: dirty chunks whole, and its keys. */
static uint64_t
overlay_bytes(const struct prep *p)
{
	uint64_t n = 0;

	for (size_t i = 0; i < p->nfiles; i++)
		for (size_t j = 0; j < p->files[i]->nchunks; j++)
			if (p->files[i]->chunks[j]->dirty)
				n += FS_CHUNK;
	for (size_t i = 0; i < p->kv.nents; i++)
		n += p->kv.ents[i].klen + p->kv.ents[i].vlen;
	return n;
}

/* Journal and apply a prepared overlay.  Returns the result for every
 * transaction in it. */
static int
commit_overlay(struct fs *fs, struct prep *p)
{
	uint8_t *plan = NULL;
	size_t plen = 0;
	char err[512] = "";
	uint64_t seq = 0;
	int rc;

	if (!enough_space(fs, overlay_bytes(p)))
		return -ENOSPC;
	if ((rc = finalize(p, &plan, &plen)) < 0 || (rc = sync_direct(p)) < 0) {
		if (p->err[0])
			fs_log(fs, LOG_ERR, "%s", p->err);
		free(plan);
		drop_direct(p);
		return rc == -ENOSPC ? rc : rc == -ENOMEM ? rc : -EIO;
	}
	rc = jr_append(fs->jr, plan, plen, &seq, err, sizeof(err));
	if (rc == -ENOSPC) {
		pthread_rwlock_wrlock(&fs->lock);
		rc = checkpoint(fs, err, sizeof(err));
		pthread_rwlock_unlock(&fs->lock);
		if (rc == 0)
			rc = jr_append(fs->jr, plan, plen, &seq, err, sizeof(err));
	}
	if (rc < 0) {
		if (rc != -E2BIG)
			fs_log(fs, LOG_ERR, "%s", err);
		free(plan);
		drop_direct(p);
		return rc == -E2BIG ? -EFBIG /* more than the journal holds */ : rc;
	}
	/* Committed: only a failure of the file system can stop it now, and
	 * replay at the next mount will finish it. */
	for (size_t i = 0; i < p->njids; i++)
		if (idset_add(&fs->journaled, p->jids[i]) < 0) {
			/* cannot track it: make every file journal-only
			 * until the next checkpoint */
			fs->direct_off = 1;
		}
	pthread_rwlock_wrlock(&fs->lock);
	rc = apply_plan(fs, plan, plen, err, sizeof(err));
	if (rc == 0)
		fs->sb = p->sb;
	pthread_rwlock_unlock(&fs->lock);
	free(plan);
	if (rc < 0) {
		fs->failed = 1;
		fs_log(fs, LOG_ERR, "%s: applying committed journal record %" PRIu64
		       " failed (%s); the store is now read-only and the record "
		       "will be replayed at the next mount", fs->path, seq, err);
		return -EIO;
	}
	return 0;
}

/* Group commit: the transactions of a batch are prepared one after the
 * other into one overlay (each sees the ones before it), journaled as one
 * record with one fdatasync, and applied together.  A transaction that
 * fails leaves part of itself in the overlay, so the overlay is rebuilt
 * from the batch without it; failures are rare, and a batch is small. */
static void
commit_batch(struct fs *fs, struct pending **batch, int *rcs, size_t n)
{
	uint64_t now = fs->host->now_ns(fs->host->ctx);
	struct prep p;
	size_t ok;
	int rc;

	for (size_t i = 0; i < n; i++)
		rcs[i] = fs->failed ? -EIO : 1; /* 1: not decided yet */
	for (;;) {
		size_t i;

		prep_init(&p, fs, now);
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
	rc = ok ? commit_overlay(fs, &p) : 0;
	prep_release(&p);
	if (rc == -EFBIG && ok > 1) {
		/* the batch outgrew the journal: one at a time */
		for (size_t i = 0; i < n; i++)
			if (rcs[i] == 0)
				commit_batch(fs, &batch[i], &rcs[i], 1);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (rcs[i] == 0)
			rcs[i] = rc;
}

#define BATCH_MAX 64

static void *
commit_main(void *arg)
{
	struct fs *fs = arg;
	struct pending *batch[BATCH_MAX];
	int rcs[BATCH_MAX];
	uint64_t limit = jr_max_payload(fs->jr) / 4;

	pthread_mutex_lock(&fs->qlock);
	for (;;) {
		size_t n = 0, bytes = 0, freed = 0;

		while (fs->head == NULL && !fs->stop)
			pthread_cond_wait(&fs->qcond, &fs->qlock);
		if (fs->head == NULL)
			break;
		while (fs->head != NULL && n < BATCH_MAX &&
		       (n == 0 || bytes + fs->head->len <= limit)) {
			struct pending *pd = fs->head;
			fs->head = pd->next;
			bytes += pd->len;
			batch[n++] = pd;
		}
		if (fs->head == NULL)
			fs->tail = NULL;
		pthread_mutex_unlock(&fs->qlock);

		commit_batch(fs, batch, rcs, n);
		for (size_t i = 0; i < n; i++) {
			batch[i]->cb(batch[i]->arg, rcs[i]);
			freed += batch[i]->len;
			free(batch[i]->buf);
			free(batch[i]);
		}

		pthread_mutex_lock(&fs->qlock);
		fs->qbytes -= freed;
		fs->completed += n;
		pthread_cond_broadcast(&fs->qcond);
	}
	pthread_mutex_unlock(&fs->qlock);
	return NULL;
}

static int
fs_submit(void *inst, const struct tsr_txn *txn, tsr_commit_cb on_commit,
	  void *arg)
{
	struct fs *fs = inst;
	struct pending *pd;
	struct tsr_enc e;
	char err[256];
	int rc;

	if (!fs->mounted)
		return -EINVAL;
	if (fs->failed)
		return -EIO;
	if ((rc = tsr_txn_validate(txn, err, sizeof(err))) < 0)
		return rc;
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL)
		return -ENOMEM;
	tsr_enc_init(&e);
	if ((rc = tsr_txn_encode(txn, &e, err, sizeof(err))) < 0 ||
	    (pd->buf = tsr_enc_take(&e, &pd->len)) == NULL) {
		tsr_enc_release(&e);
		free(pd);
		return rc < 0 ? rc : -ENOMEM;
	}
	pd->cb = on_commit;
	pd->arg = arg;
	pthread_mutex_lock(&fs->qlock);
	while (fs->qbytes > 0 && fs->qbytes + pd->len > fs->queue_max)
		pthread_cond_wait(&fs->qcond, &fs->qlock);
	if (fs->tail)
		fs->tail->next = pd;
	else
		fs->head = pd;
	fs->tail = pd;
	fs->qbytes += pd->len;
	fs->submitted++;
	pthread_cond_broadcast(&fs->qcond);
	pthread_mutex_unlock(&fs->qlock);
	return 0;
}

static int
fs_flush(void *inst)
{
	struct fs *fs = inst;

	if (!fs->mounted)
		return -EINVAL;
	pthread_mutex_lock(&fs->qlock);
	while (fs->completed < fs->submitted)
		pthread_cond_wait(&fs->qcond, &fs->qlock);
	pthread_mutex_unlock(&fs->qlock);
	return 0;
}

/* ---- mkfs, mount, umount --------------------------------------------------*/

static int
dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int empty = 1;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			empty = 0;
			break;
		}
	closedir(d);
	return empty;
}

static int
fs_mkfs(void *inst, char *err, size_t errlen)
{
	struct fs *fs = inst;
	char sub[PATH_MAX];
	struct tsr_kv *kv;
	struct stat st;
	int dirfd, rc;

	if (fs->mounted)
		return errf(err, errlen, -EBUSY, "%s: store is mounted", fs->path);
	if (stat(fs->path, &st) == 0) {
		if (!S_ISDIR(st.st_mode) || !dir_is_empty(fs->path))
			return errf(err, errlen, -EEXIST,
				    "%s: already exists and is not an empty directory "
				    "(a store is there, or other data)", fs->path);
	} else if (errno != ENOENT || mkdir(fs->path, 0700) < 0) {
		return errf(err, errlen, -errno, "%s: %s", fs->path, strerror(errno));
	}
	dirfd = open(fs->path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dirfd < 0)
		return errf(err, errlen, -errno, "%s: %s", fs->path, strerror(errno));
	memset(&fs->sb, 0, sizeof(fs->sb));
	if (getrandom(fs->sb.uuid, sizeof(fs->sb.uuid), 0) != sizeof(fs->sb.uuid)) {
		close(dirfd);
		return errf(err, errlen, -EIO, "%s: no random uuid", fs->path);
	}
	fs->sb.next_objid = 1;
	if (mkdirat(dirfd, "data", 0700) < 0) {
		rc = errf(err, errlen, -errno, "%s/data: %s", fs->path, strerror(errno));
		close(dirfd);
		return rc;
	}
	snprintf(sub, sizeof(sub), "%s/meta", fs->path);
	rc = tsr_kv_open(sub, 1, &kv, err, errlen);
	if (rc == 0) {
		fs->kv = kv;
		rc = write_super(fs, 1, err, errlen);
		tsr_kv_close(kv);
		fs->kv = NULL;
	}
	snprintf(sub, sizeof(sub), "%s/journal", fs->path);
	if (rc == 0)
		rc = jr_create(dirfd, "journal", sub, fs->journal_size, fs->sb.uuid,
			       err, errlen);
	if (rc == 0 && fsync(dirfd) < 0)
		rc = errf(err, errlen, -errno, "%s: fsync: %s", fs->path, strerror(errno));
	close(dirfd);
	return rc;
}

static int
replay_record(void *arg, uint64_t seq, const void *p, size_t n)
{
	struct fs *fs = arg;
	char err[512];
	int rc = apply_plan(fs, p, n, err, sizeof(err));

	if (rc < 0)
		fs_log(fs, LOG_ERR, "%s/journal: record %" PRIu64 ": %s", fs->path,
		       seq, err);
	return rc;
}

static int
load_super(struct fs *fs, char *err, size_t errlen)
{
	void *v;
	size_t vl;
	char why[160];
	int rc = tsr_kv_get(fs->kv, "S", 1, &v, &vl, err, errlen);

	if (rc == -ENOENT)
		return errf(err, errlen, -EINVAL,
			    "%s/meta: no superblock: not a backend-file store", fs->path);
	if (rc < 0)
		return rc;
	rc = super_decode(v, vl, &fs->sb, why, sizeof(why));
	tsr_kv_free(v);
	if (rc < 0)
		return errf(err, errlen, rc, "%s/meta: %s", fs->path, why);
	return 0;
}

static void
close_store(struct fs *fs)
{
	uncache_all(fs);
	idset_clear(&fs->journaled);
	fs->direct_off = 0;
	jr_close(fs->jr);
	fs->jr = NULL;
	if (fs->kv)
		tsr_kv_close(fs->kv);
	fs->kv = NULL;
	if (fs->datafd >= 0)
		close(fs->datafd);
	if (fs->dirfd >= 0)
		close(fs->dirfd);
	fs->datafd = fs->dirfd = -1;
	ZSTD_freeCCtx(fs->cctx);
	ZSTD_freeDCtx(fs->dctx);
	fs->cctx = NULL;
	fs->dctx = NULL;
}

/* Open the store and replay the journal; no commit thread. */
static int
open_store(struct fs *fs, char *err, size_t errlen)
{
	char sub[PATH_MAX];
	uint64_t nrec = 0;
	int rc;

	fs->dirfd = open(fs->path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (fs->dirfd < 0)
		return errf(err, errlen, -errno, "%s: %s%s", fs->path, strerror(errno),
			    errno == ENOENT ? " (no store here: run mkfs first)" : "");
	fs->datafd = openat(fs->dirfd, "data", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	snprintf(sub, sizeof(sub), "%s/meta", fs->path);
	if (fs->datafd < 0) {
		rc = errf(err, errlen, errno == ENOENT ? -ENOENT : -errno,
			  "%s: no data/ directory: not a backend-file store",
			  fs->path);
		goto fail;
	}
	if ((rc = tsr_kv_open(sub, 0, &fs->kv, err, errlen)) < 0 ||
	    (rc = load_super(fs, err, errlen)) < 0)
		goto fail;
	snprintf(sub, sizeof(sub), "%s/journal", fs->path);
	if ((rc = jr_open(sub, fs->sb.uuid, &fs->jr, err, errlen)) < 0)
		goto fail;
	fs->cctx = ZSTD_createCCtx();
	fs->dctx = ZSTD_createDCtx();
	if (fs->cctx == NULL || fs->dctx == NULL) {
		rc = errf(err, errlen, -ENOMEM, "%s: out of memory", fs->path);
		goto fail;
	}
	rc = jr_replay(fs->jr, replay_record, fs, &nrec, err, errlen);
	if (rc < 0) {
		if (err && !err[0])
			errf(err, errlen, rc, "%s/journal: replay failed (see log)",
			     fs->path);
		goto fail;
	}
	if ((rc = load_super(fs, err, errlen)) < 0 ||
	    (rc = checkpoint(fs, err, errlen)) < 0)
		goto fail;
	if (nrec)
		fs_log(fs, LOG_INFO, "%s: replayed %" PRIu64 " journal records",
		       fs->path, nrec);
	return 0;
fail:
	close_store(fs);
	return rc;
}

static int
fs_mount(void *inst, char *err, size_t errlen)
{
	struct fs *fs = inst;
	int rc;

	if (fs->mounted)
		return errf(err, errlen, -EBUSY, "%s: already mounted", fs->path);
	if ((rc = open_store(fs, err, errlen)) < 0)
		return rc;
	fs->failed = 0;
	fs->stop = 0;
	fs->head = fs->tail = NULL;
	fs->qbytes = 0;
	fs->submitted = fs->completed = 0;
	if ((rc = pthread_create(&fs->thr, NULL, commit_main, fs)) != 0) {
		close_store(fs);
		return errf(err, errlen, -rc, "%s: commit thread: %s", fs->path,
			    strerror(rc));
	}
	fs->mounted = 1;
	return 0;
}

static int
fs_umount(void *inst)
{
	struct fs *fs = inst;
	char err[512];
	int rc = 0;

	if (!fs->mounted)
		return -EINVAL;
	pthread_mutex_lock(&fs->qlock);
	fs->stop = 1;
	pthread_cond_broadcast(&fs->qcond);
	pthread_mutex_unlock(&fs->qlock);
	pthread_join(fs->thr, NULL);
	if (!fs->failed && (rc = checkpoint(fs, err, sizeof(err))) < 0)
		fs_log(fs, LOG_ERR, "%s", err);
	close_store(fs);
	fs->mounted = 0;
	return rc;
}

/* ---- Reads ------------------------------------------------------------------
 *
 * Readers take the read lock, so a transaction being applied is seen
 * whole or not at all, and read LevelDB and the files directly. */

static int
get_onode(struct fs *fs, const struct tsr_coll_id *cid, const void *oid,
	  size_t oid_len, struct onode *on)
{
	uint8_t k[KEY_MAX];
	void *v;
	size_t vl;
	char nb[96], err[256];
	int rc;

	if (oid_len == 0 || oid_len > TSR_TXN_MAX_NAME)
		return -EINVAL;
	rc = tsr_kv_get(fs->kv, k, key_obj(k, cid, oid, oid_len), &v, &vl, err,
			sizeof(err));
	if (rc == -ENOENT)
		return rc;
	if (rc < 0) {
		fs_log(fs, LOG_ERR, "%s", err);
		return -EIO;
	}
	rc = onode_decode(v, vl, on);
	tsr_kv_free(v);
	if (rc < 0)
		fs_log(fs, LOG_ERR, "%s: onode of object %s is damaged", fs->path,
		       oid_str(oid, oid_len, nb, sizeof(nb)));
	return rc;
}

struct cmaps {
	uint32_t first, n;
	struct fs_cmeta *m;
	int bad;
};

static int
cmaps_add(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct cmaps *c = arg;
	uint32_t no;

	if (kl != 13)
		return 0;
	no = get_be32((const uint8_t *)k + 9);
	if (no < c->first || no - c->first >= c->n)
		return 0;
	if (cmeta_decode(v, vl, &c->m[no - c->first]) < 0)
		c->bad = 1;
	return 0;
}

static int
read_locked(struct fs *fs, const struct tsr_coll_id *cid, const void *oid,
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

	if ((rc = get_onode(fs, cid, oid, oid_len, &on)) < 0)
		return rc;
	*out_len = 0;
	if (off >= on.size || len == 0)
		return 0;
	n = on.size - off < len ? on.size - off : len;
	cm.first = (uint32_t)(off / FS_CHUNK);
	cm.n = (uint32_t)((off + n - 1) / FS_CHUNK - cm.first + 1);
	cm.bad = 0;
	cm.m = calloc(cm.n, sizeof(*cm.m));
	tmp = malloc(FS_CHUNK);
	if (cm.m == NULL || tmp == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rc = tsr_kv_scan(fs->kv, a, key_chunk(a, on.objid, cm.first), b,
			 key_chunk(b, on.objid, cm.first + cm.n), cmaps_add, &cm,
			 err, sizeof(err));
	oid_str(oid, oid_len, nb, sizeof(nb));
	if (rc < 0 || cm.bad) {
		fs_log(fs, LOG_ERR, "%s: object %s: chunk maps unreadable: %s",
		       fs->path, nb, rc < 0 ? err : "damaged record");
		rc = -EIO;
		goto out;
	}
	while (done < n) {
		uint64_t pos = off + done;
		uint32_t no = (uint32_t)(pos / FS_CHUNK);
		uint32_t coff = (uint32_t)(pos % FS_CHUNK);
		uint32_t take = n - done < FS_CHUNK - coff ? (uint32_t)(n - done)
							   : FS_CHUNK - coff;
		const struct fs_cmeta *m = &cm.m[no - cm.first];

		if (m->present && !fd_tried) {
			fd = obj_open(fs, on.objid, 0, 0, NULL);
			fd_tried = 1;
		}
		if (m->present && m->kind == FS_CHUNK_ZSTD) {
			if (dctx == NULL && (dctx = ZSTD_createDCtx()) == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			if ((rc = read_zchunk(fs, dctx, fd, nb, on.objid, no, m, tmp)) < 0)
				goto out;
			memcpy(out + done, tmp + coff, take);
		} else {
			for (uint32_t bo = coff / FS_BLOCK * FS_BLOCK; bo < coff + take;
			     bo += FS_BLOCK) {
				uint32_t s = bo > coff ? bo : coff;
				uint32_t e = bo + FS_BLOCK < coff + take ? bo + FS_BLOCK
									 : coff + take;
				rc = read_block(fs, fd, nb, on.objid, no, bo / FS_BLOCK, m, tmp);
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
		close(fd);
	ZSTD_freeDCtx(dctx);
	free(cm.m);
	free(tmp);
	return rc;
}

static int
fs_read(void *inst, const struct tsr_coll_id *cid, const void *oid,
	size_t oid_len, uint64_t off, uint64_t len, void *buf, uint64_t *out_len)
{
	struct fs *fs = inst;
	int rc;

	if (!fs->mounted)
		return -EINVAL;
	pthread_rwlock_rdlock(&fs->lock);
	rc = read_locked(fs, cid, oid, oid_len, off, len, buf, out_len);
	pthread_rwlock_unlock(&fs->lock);
	return rc;
}

static int
fs_stat(void *inst, const struct tsr_coll_id *cid, const void *oid,
	size_t oid_len, struct tsr_obj_stat *st)
{
	struct fs *fs = inst;
	struct onode on;
	int rc;

	if (!fs->mounted)
		return -EINVAL;
	pthread_rwlock_rdlock(&fs->lock);
	rc = get_onode(fs, cid, oid, oid_len, &on);
	pthread_rwlock_unlock(&fs->lock);
	if (rc == 0) {
		st->size = on.size;
		st->mtime_ns = on.mtime;
	}
	return rc;
}

static int
get_sub(struct fs *fs, char tag, const struct tsr_coll_id *cid, const void *oid,
	size_t oid_len, const void *key, size_t key_len, void *buf,
	size_t buflen, size_t *val_len)
{
	uint8_t k[KEY_MAX];
	struct onode on = { 0 }; /* objid 0: the object is missing */
	char err[256];
	void *v;
	size_t vl;
	int rc;

	if (!fs->mounted)
		return -EINVAL;
	if (key_len > TSR_TXN_MAX_NAME)
		return -ENAMETOOLONG;
	pthread_rwlock_rdlock(&fs->lock);
	rc = get_onode(fs, cid, oid, oid_len, &on);
	if (rc == 0)
		rc = tsr_kv_get(fs->kv, k, key_sub(k, tag, on.objid, key, key_len),
				&v, &vl, err, sizeof(err));
	pthread_rwlock_unlock(&fs->lock);
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

static int
fs_getattr(void *inst, const struct tsr_coll_id *cid, const void *oid,
	   size_t oid_len, const void *key, size_t key_len, void *buf,
	   size_t buflen, size_t *val_len)
{
	return get_sub(inst, 'A', cid, oid, oid_len, key, key_len, buf, buflen,
		       val_len);
}

static int
fs_omap_get(void *inst, const struct tsr_coll_id *cid, const void *oid,
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
scan_sub(struct fs *fs, char tag, const struct tsr_coll_id *cid,
	 const void *oid, size_t oid_len, const void *start, size_t start_len,
	 tsr_kv_cb cb, void *arg)
{
	uint8_t a[KEY_MAX], b[16];
	struct subscan s = { cb, arg };
	struct onode on;
	char err[256];
	size_t al, bl;
	int rc;

	if (!fs->mounted)
		return -EINVAL;
	if (start_len > TSR_TXN_MAX_NAME)
		return -ENAMETOOLONG;
	pthread_rwlock_rdlock(&fs->lock);
	rc = get_onode(fs, cid, oid, oid_len, &on);
	if (rc == 0) {
		bl = key_after(b, a, key_sub(a, tag, on.objid, NULL, 0));
		al = key_sub(a, tag, on.objid, start, start_len);
		rc = tsr_kv_scan(fs->kv, a, al, b, bl, subscan_one, &s, err,
				 sizeof(err));
	}
	pthread_rwlock_unlock(&fs->lock);
	return rc;
}

static int
fs_getattrs(void *inst, const struct tsr_coll_id *cid, const void *oid,
	    size_t oid_len, tsr_kv_cb cb, void *arg)
{
	return scan_sub(inst, 'A', cid, oid, oid_len, NULL, 0, cb, arg);
}

static int
fs_omap_iter(void *inst, const struct tsr_coll_id *cid, const void *oid,
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

static int
fs_list_colls(void *inst, tsr_coll_cb cb, void *arg)
{
	struct fs *fs = inst;
	struct collscan s = { cb, arg };
	char err[256];
	int rc;

	if (!fs->mounted)
		return -EINVAL;
	pthread_rwlock_rdlock(&fs->lock);
	rc = tsr_kv_scan(fs->kv, "L", 1, "M", 1, coll_one, &s, err, sizeof(err));
	pthread_rwlock_unlock(&fs->lock);
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

static int
fs_list_objects(void *inst, const struct tsr_coll_id *cid,
		struct tsr_cursor *cursor, uint32_t max, tsr_name_cb cb, void *arg)
{
	struct fs *fs = inst;
	struct objscan s = { cb, arg, max, 0, cursor, 0, 0 };
	uint8_t a[KEY_MAX + 1], b[1 + CID_LEN];
	size_t al, bl;
	char err[256];
	int rc, owned;
	void *v;
	size_t vl;

	if (!fs->mounted)
		return -EINVAL;
	if (cursor->len > TSR_TXN_MAX_NAME)
		return -EINVAL;
	if (max == 0)
		return 0;
	pthread_rwlock_rdlock(&fs->lock);
	al = key_coll(a, cid);
	rc = tsr_kv_get(fs->kv, a, al, &v, &vl, err, sizeof(err));
	(void)owned;
	if (rc == 0) {
		tsr_kv_free(v);
		al = key_obj(a, cid, cursor->bytes, cursor->len);
		if (cursor->len)
			a[al++] = 0; /* strictly after the last name returned */
		bl = key_after(b, a, 1 + CID_LEN);
		rc = tsr_kv_scan(fs->kv, a, al, b, bl, obj_one, &s, err, sizeof(err));
		if (rc == 1 && s.more)
			rc = 0;
		else if (rc == 0)
			cursor->len = 0; /* exhausted */
	}
	pthread_rwlock_unlock(&fs->lock);
	return rc;
}

static int
fs_statfs(void *inst, struct tsr_statfs *st)
{
	struct fs *fs = inst;
	struct statvfs sv;

	if (!fs->mounted)
		return -EINVAL;
	if (fstatvfs(fs->dirfd, &sv) < 0)
		return -errno;
	pthread_rwlock_rdlock(&fs->lock);
	st->used = fs->sb.bytes;
	st->objects = fs->sb.objects;
	pthread_rwlock_unlock(&fs->lock);
	st->total = (uint64_t)sv.f_blocks * sv.f_frsize;
	uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	st->available = avail > fs->min_free ? avail - fs->min_free : 0;
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

struct fsck {
	struct fs *fs;
	int repair;
	tsr_fsck_cb cb;
	void *arg;
	int unrepaired;
	struct tsr_kv_batch *fix;
	uint64_t *ids, *sizes;   /* live objects, sorted by id at the end */
	size_t nids, cap;
	uint64_t bytes;
	uint64_t max_id;         /* the largest object id in use */
	ZSTD_DCtx *dctx;
	uint8_t *tmp;
};

static void
fsck_report(struct fsck *c, int fixable, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
fsck_report(struct fsck *c, int fixable, const char *fmt, ...)
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
	struct fsck *c = arg;
	struct tsr_coll_id cid;
	struct onode on;
	uint8_t ck[1 + CID_LEN];
	char nb[96], err[256];
	void *cv;
	size_t cvl;

	if (kl <= 1 + CID_LEN) {
		fsck_report(c, 1, "malformed object key of %zu bytes", kl);
		tsr_kv_batch_del(c->fix, k, kl);
		return 0;
	}
	oid_str((const uint8_t *)k + 1 + CID_LEN, kl - 1 - CID_LEN, nb, sizeof(nb));
	if (onode_decode(v, vl, &on) < 0) {
		fsck_report(c, 0, "object %s: onode damaged", nb);
		return 0;
	}
	if (on.objid > c->max_id)
		c->max_id = on.objid;
	cid_get((const uint8_t *)k + 1, &cid);
	if (tsr_kv_get(c->fs->kv, ck, key_coll(ck, &cid), &cv, &cvl, err,
		       sizeof(err)) == 0) {
		tsr_kv_free(cv);
	} else {
		fsck_report(c, 1, "object %s: its collection %" PRIu64 ".%u.%d is "
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
fsck_find(const struct fsck *c, uint64_t objid)
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
	struct fsck *c = arg;
	const uint8_t *kb = k;
	struct fs_cmeta m;
	uint64_t objid;
	ssize_t i;

	if (kl < 9 || (kb[0] == 'C' && kl != 13)) {
		fsck_report(c, 1, "malformed '%c' key of %zu bytes", kb[0], kl);
		tsr_kv_batch_del(c->fix, k, kl);
		return 0;
	}
	objid = get_be64(kb + 1);
	if ((i = fsck_find(c, objid)) < 0) {
		fsck_report(c, 1, "'%c' record of object id %" PRIu64
			    " that does not exist", kb[0], objid);
		tsr_kv_batch_del(c->fix, k, kl);
		return 0;
	}
	if (kb[0] != 'C')
		return 0;
	uint32_t no = get_be32(kb + 9);
	if (cmeta_decode(v, vl, &m) < 0) {
		fsck_report(c, 0, "object id %" PRIu64 " chunk %u: chunk map damaged",
			    objid, no);
		return 0;
	}
	if ((uint64_t)no * FS_CHUNK >= c->sizes[i]) {
		fsck_report(c, 1, "object id %" PRIu64 " chunk %u: past the object's "
			    "end", objid, no);
		tsr_kv_batch_del(c->fix, k, kl);
		return 0;
	}
	int fd = obj_open(c->fs, objid, 0, 0, NULL);
	char label[32];
	snprintf(label, sizeof(label), "id %" PRIu64, objid);
	int rc = 0;
	if (m.kind == FS_CHUNK_ZSTD)
		rc = read_zchunk(c->fs, c->dctx, fd, label, objid, no, &m, c->tmp);
	else
		for (unsigned b = 0; b < FS_BPC && rc == 0; b++)
			rc = read_block(c->fs, fd, label, objid, no, b, &m, c->tmp);
	if (fd >= 0)
		close(fd);
	if (rc == -EIO)
		fsck_report(c, 0, "object id %" PRIu64 " chunk %u: stored data does "
			    "not match its checksum", objid, no);
	return rc == -ENOMEM ? rc : 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void
fsck_files(struct fsck *c)
{
	for (unsigned x = 0; x < 256; x++)
		for (unsigned y = 0; y < 256; y++) {
			char rel[16];
			int dfd;
			DIR *d;
			struct dirent *de;

			snprintf(rel, sizeof(rel), "%02x/%02x", x, y);
			dfd = openat(c->fs->datafd, rel, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
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
				    fsck_find(c, id) >= 0)
					continue;
				fsck_report(c, 1, "data/%s/%s: file of no object", rel,
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
	struct fs *fs = inst;
	struct fsck c;
	char err[512];
	int rc;

	if (fs->mounted)
		return -EBUSY;
	if ((rc = open_store(fs, err, sizeof(err))) < 0) {
		if (cb)
			cb(arg, err, 0);
		return rc;
	}
	memset(&c, 0, sizeof(c));
	c.fs = fs;
	c.repair = repair;
	c.cb = cb;
	c.arg = arg;
	c.fix = tsr_kv_batch_create();
	c.dctx = ZSTD_createDCtx();
	c.tmp = malloc(FS_CHUNK);
	if (c.fix == NULL || c.dctx == NULL || c.tmp == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rc = tsr_kv_scan(fs->kv, "O", 1, "P", 1, fsck_onode, &c, err, sizeof(err));
	if (rc < 0)
		goto out;
	/* sort ids, keeping sizes with them */
	{
		uint64_t *pairs = malloc((c.nids ? c.nids : 1) * 2 * sizeof(*pairs));
		if (pairs == NULL) {
			rc = -ENOMEM;
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
				fsck_report(&c, 0, "two objects share id %" PRIu64, c.ids[i]);
		}
		free(pairs);
	}
	static const char *const ranges[][2] = { { "A", "B" }, { "C", "D" },
						 { "M", "N" } };
	for (size_t i = 0; i < 3 && rc == 0; i++)
		rc = tsr_kv_scan(fs->kv, ranges[i][0], 1, ranges[i][1], 1, fsck_sub,
				 &c, err, sizeof(err));
	if (rc < 0)
		goto out;
	fsck_files(&c);
	if (c.max_id >= fs->sb.next_objid) {
		/* handing out an id in use would make two objects share data */
		fsck_report(&c, 1, "superblock's next object id %" PRIu64 " is not "
			    "above id %" PRIu64 ", which is in use (repair raises it)",
			    fs->sb.next_objid, c.max_id);
		fs->sb.next_objid = c.max_id + 1;
		if (repair && (rc = write_super(fs, 1, err, sizeof(err))) < 0)
			goto out;
	}
	if (c.nids != fs->sb.objects || c.bytes != fs->sb.bytes) {
		fsck_report(&c, 1, "superblock counts %" PRIu64 " objects / %" PRIu64
			    " bytes, the store holds %zu / %" PRIu64, fs->sb.objects,
			    fs->sb.bytes, c.nids, c.bytes);
		fs->sb.objects = c.nids;
		fs->sb.bytes = c.bytes;
		if (repair && (rc = write_super(fs, 1, err, sizeof(err))) < 0)
			goto out;
	}
	if (repair)
		rc = tsr_kv_write(fs->kv, c.fix, 1, err, sizeof(err));
out:
	if (rc < 0 && cb)
		cb(arg, err, 0);
	tsr_kv_batch_destroy(c.fix);
	ZSTD_freeDCtx(c.dctx);
	free(c.tmp);
	free(c.ids);
	free(c.sizes);
	close_store(fs);
	return rc < 0 ? rc : c.unrepaired;
}

/* ---- The plugin -------------------------------------------------------------*/

static int
fs_create(const struct tsr_host *host, const struct tsr_opts *opts,
	  void **instance, char *err, size_t errlen)
{
	const struct tsr_opt_val *v = opts->vals;
	struct fs *fs;

	if (strlen(v[OPT_PATH].s) >= sizeof(fs->path) || v[OPT_PATH].s[0] == '\0')
		return errf(err, errlen, -EINVAL, "path: empty or longer than %zu bytes",
			    sizeof(fs->path) - 1);
	fs = calloc(1, sizeof(*fs));
	if (fs == NULL)
		return errf(err, errlen, -ENOMEM, "out of memory");
	fs->host = host;
	snprintf(fs->path, sizeof(fs->path), "%s", v[OPT_PATH].s);
	fs->journal_size = (uint64_t)v[OPT_JOURNAL_SIZE].i;
	fs->compress = strcmp(v[OPT_COMPRESSION].s, "zstd") == 0;
	fs->level = (int)v[OPT_LEVEL].i;
	fs->max_object = (uint64_t)v[OPT_MAX_OBJECT].i;
	fs->min_free = (uint64_t)v[OPT_MIN_FREE].i;
	fs->queue_max = (uint64_t)v[OPT_QUEUE].i;
	fs->dirfd = fs->datafd = -1;
	pthread_rwlock_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->qlock, NULL);
	pthread_cond_init(&fs->qcond, NULL);
	*instance = fs;
	return 0;
}

static void
fs_destroy(void *inst)
{
	struct fs *fs = inst;

	if (fs->mounted)
		fs_umount(fs);
	pthread_rwlock_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->qlock);
	pthread_cond_destroy(&fs->qcond);
	free(fs);
}

static const struct tsr_backend_ops fs_ops = {
	.size = sizeof(struct tsr_backend_ops),
	.mkfs = fs_mkfs,
	.mount = fs_mount,
	.umount = fs_umount,
	.submit = fs_submit,
	.flush = fs_flush,
	.read = fs_read,
	.stat = fs_stat,
	.getattr = fs_getattr,
	.getattrs = fs_getattrs,
	.omap_get = fs_omap_get,
	.omap_iter = fs_omap_iter,
	.list_colls = fs_list_colls,
	.list_objects = fs_list_objects,
	.statfs = fs_statfs,
	.fsck = fs_fsck,
};

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
