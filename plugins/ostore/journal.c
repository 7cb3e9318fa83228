/* journal.c — the write-ahead journal of backend-file (see journal.h). */
#include "journal.h"
#include "fileio.h"
#include "errf.h"

#include <tessera/crc32c.h>
#include <tessera/encoding.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define JR_MAGIC 0x314c4e524a525354ull /* "TSRJRNL1" little-endian */
#define JR_REC_MAGIC 0x4a524543u
#define JR_SLOT 2048u
#define JR_ALIGN 4096u

struct jr {
	int fd;           /* buffered: headers, replay */
	int dfd;          /* O_DIRECT | O_DSYNC for records, or -1 */
	int ufd;          /* O_DIRECT for records jr_write leaves unsynced, or -1 */
	uint8_t *abuf;    /* aligned staging buffer for dfd */
	size_t acap;
	char path[4096];
	uint8_t uuid[16];
	uint64_t size;
	uint64_t gen;     /* of the current header copy */
	uint64_t cp_seq;  /* records <= cp_seq are obsolete */
	uint64_t nonce;   /* this lap's checksum seed (see rec_crc) */
	uint64_t next_seq;
	uint64_t off;     /* where the next record goes */
	/* the damaged last record the last replay dropped (seq 0: none),
	 * and why; see jr_dropped */
	uint64_t drop_seq, drop_off;
	char drop_why[128];
};

struct jr_header {
	uint8_t uuid[16];
	uint64_t size;
	uint64_t gen;
	uint64_t cp_seq;
	uint64_t nonce;
};

static void
header_encode(const struct jr_header *h, uint8_t slot[JR_SLOT])
{
	struct tsr_enc e;
	size_t mark, len;
	uint32_t crc;
	uint8_t *b;

	tsr_enc_init(&e);
	mark = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u64(&e, JR_MAGIC);
	tsr_enc_raw(&e, h->uuid, 16);
	tsr_enc_u64(&e, h->size);
	tsr_enc_u64(&e, h->gen);
	tsr_enc_u64(&e, h->cp_seq);
	tsr_enc_u64(&e, h->nonce);
	tsr_enc_end_struct(&e, mark);
	crc = tsr_crc32c(0, e.buf, e.len);
	tsr_enc_u32(&e, crc);
	memset(slot, 0, JR_SLOT);
	b = tsr_enc_take(&e, &len);
	if (b != NULL && len <= JR_SLOT)
		memcpy(slot, b, len);
	free(b);
}

/* 0 with *h filled, or a negative errno with the reason in why. */
static int
header_decode(const uint8_t slot[JR_SLOT], struct jr_header *h, char *why,
	      size_t whylen)
{
	struct tsr_dec d, sub;
	uint8_t ver;
	uint64_t magic;
	size_t body;

	tsr_dec_init(&d, slot, JR_SLOT);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0) {
		if (tsr_dec_error(&d) == -EOPNOTSUPP)
			return errf(why, whylen, -EOPNOTSUPP,
				    "written by a newer version of Tessera");
		return errf(why, whylen, -EBADMSG, "no journal header");
	}
	magic = tsr_dec_u64(&sub);
	tsr_dec_raw(&sub, h->uuid, 16);
	h->size = tsr_dec_u64(&sub);
	h->gen = tsr_dec_u64(&sub);
	h->cp_seq = tsr_dec_u64(&sub);
	h->nonce = tsr_dec_u64(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0)
		return errf(why, whylen, -EBADMSG, "truncated journal header");
	if (magic != JR_MAGIC)
		return errf(why, whylen, -EBADMSG,
			    "wrong magic (not a Tessera journal)");
	body = (size_t)(d.p - slot);
	if (tsr_dec_u32(&d) != tsr_crc32c(0, slot, body) || tsr_dec_error(&d))
		return errf(why, whylen, -EBADMSG, "header checksum mismatch");
	return 0;
}

static int
write_header(struct jr *j, uint64_t cp_seq, char *err, size_t errlen)
{
	struct jr_header h;
	uint8_t slot[JR_SLOT];
	uint64_t gen = j->gen + 1;
	int rc;

	memcpy(h.uuid, j->uuid, 16);
	h.size = j->size;
	h.gen = gen;
	h.cp_seq = cp_seq;
	/* a new lap, a new seed: records of earlier laps, and record-shaped
	 * bytes inside payloads (client data), never check out */
	if (getrandom(&h.nonce, sizeof(h.nonce), 0) != sizeof(h.nonce))
		return errf(err, errlen, -EIO, "%s: no random seed", j->path);
	header_encode(&h, slot);
	/* alternate copies: the one being overwritten is never the current */
	rc = os_pwrite_full(j->fd, slot, JR_SLOT, (gen & 1) * JR_SLOT);
	if (rc == 0 && fdatasync(j->fd) < 0)
		rc = -errno;
	if (rc < 0)
		return errf(err, errlen, rc, "%s: writing the journal header: %s",
			    j->path, strerror(-rc));
	j->gen = gen;
	j->cp_seq = cp_seq;
	j->nonce = h.nonce;
	return 0;
}

int
jr_create(int dirfd, const char *name, const char *path, uint64_t size,
	  const uint8_t uuid[16], char *err, size_t errlen)
{
	struct jr j;
	uint8_t *zeros;
	int rc = 0;

	if (size < JR_MIN_SIZE)
		return errf(err, errlen, -EINVAL,
			    "%s: journal size %llu is below the minimum %u",
			    path, (unsigned long long)size, JR_MIN_SIZE);
	memset(&j, 0, sizeof(j));
	j.fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (j.fd < 0)
		return errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
	snprintf(j.path, sizeof(j.path), "%s", path);
	memcpy(j.uuid, uuid, 16);
	j.size = size;
	zeros = calloc(1, 1u << 20);
	if (zeros == NULL) {
		rc = -ENOMEM;
	} else {
		for (uint64_t off = 0; off < size && rc == 0; off += 1u << 20) {
			uint64_t n = size - off < (1u << 20) ? size - off : 1u << 20;
			rc = os_pwrite_full(j.fd, zeros, (size_t)n, off);
		}
		free(zeros);
	}
	if (rc < 0) {
		errf(err, errlen, rc, "%s: filling the journal: %s", path,
		     strerror(-rc));
	} else if ((rc = write_header(&j, 0, err, errlen)) == 0 &&
		   (fsync(j.fd) < 0 || fsync(dirfd) < 0)) {
		rc = -errno;
		errf(err, errlen, rc, "%s: sync: %s", path, strerror(errno));
	}
	close(j.fd);
	if (rc < 0)
		unlinkat(dirfd, name, 0);
	return rc;
}

int
jr_open(const char *path, const uint8_t uuid[16], struct jr **out, char *err,
	size_t errlen)
{
	uint8_t slot[2][JR_SLOT];
	struct jr_header h[2];
	char why[2][128];
	int ok[2], cur, rc;
	struct stat st;
	struct jr *j;

	j = calloc(1, sizeof(*j));
	if (j == NULL)
		return errf(err, errlen, -ENOMEM, "%s: out of memory", path);
	snprintf(j->path, sizeof(j->path), "%s", path);
	j->fd = open(path, O_RDWR | O_CLOEXEC);
	if (j->fd < 0) {
		rc = errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
		free(j);
		return rc;
	}
	if (fstat(j->fd, &st) < 0) {
		rc = errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	rc = os_pread_exact(j->fd, slot, sizeof(slot), 0);
	if (rc < 0) {
		rc = errf(err, errlen, rc == -ENODATA ? -EBADMSG : rc,
			  "%s: cannot read the journal header: %s", path,
			  rc == -ENODATA ? "file too short" : strerror(-rc));
		goto fail;
	}
	for (int i = 0; i < 2; i++)
		ok[i] = header_decode(slot[i], &h[i], why[i], sizeof(why[i])) == 0;
	if (!ok[0] && !ok[1]) {
		rc = errf(err, errlen, -EBADMSG, "%s: journal header damaged: %s",
			  path, why[0]);
		goto fail;
	}
	cur = !ok[0] || (ok[1] && h[1].gen > h[0].gen);
	if (memcmp(h[cur].uuid, uuid, 16) != 0) {
		rc = errf(err, errlen, -EINVAL,
			  "%s: journal belongs to another store (uuid mismatch)",
			  path);
		goto fail;
	}
	if (h[cur].size < JR_MIN_SIZE) {
		rc = errf(err, errlen, -EBADMSG,
			  "%s: journal header damaged: size %llu below the minimum",
			  path, (unsigned long long)h[cur].size);
		goto fail;
	}
	if ((uint64_t)st.st_size < h[cur].size) {
		rc = errf(err, errlen, -EBADMSG,
			  "%s: journal truncated: %lld bytes, its header says %llu",
			  path, (long long)st.st_size,
			  (unsigned long long)h[cur].size);
		goto fail;
	}
	/* Records go out with O_DIRECT | O_DSYNC: one write that is durable
	 * when it returns, no page-cache copy, no separate fdatasync.  File
	 * systems without O_DIRECT (tmpfs) get the buffered path. */
	j->dfd = open(path, O_RDWR | O_CLOEXEC | O_DIRECT | O_DSYNC);
	j->ufd = open(path, O_RDWR | O_CLOEXEC | O_DIRECT);
	memcpy(j->uuid, uuid, 16);
	j->size = h[cur].size;
	j->gen = h[cur].gen;
	j->cp_seq = h[cur].cp_seq;
	j->nonce = h[cur].nonce;
	j->next_seq = j->cp_seq + 1;
	j->off = JR_HEADER_SIZE;
	*out = j;
	return 0;
fail:
	close(j->fd);
	free(j);
	return rc;
}

void
jr_close(struct jr *j)
{
	if (j == NULL)
		return;
	close(j->fd);
	if (j->dfd >= 0)
		close(j->dfd);
	if (j->ufd >= 0)
		close(j->ufd);
	free(j->abuf);
	free(j);
}

static void
rec_header(uint8_t hdr[JR_REC_HEADER], uint32_t len, uint64_t seq)
{
	struct tsr_enc e;
	size_t n;
	uint8_t *b;

	tsr_enc_init(&e);
	tsr_enc_u32(&e, JR_REC_MAGIC);
	tsr_enc_u32(&e, len);
	tsr_enc_u64(&e, seq);
	tsr_enc_u32(&e, 0); /* crc, filled below */
	tsr_enc_u32(&e, 0);
	b = tsr_enc_take(&e, &n);
	memset(hdr, 0, JR_REC_HEADER);
	if (b != NULL && n == JR_REC_HEADER)
		memcpy(hdr, b, n);
	free(b);
}

static uint32_t
rec_crc(const struct jr *j, const uint8_t hdr[JR_REC_HEADER], const void *p,
	size_t n)
{
	uint8_t seed[8];

	for (int i = 0; i < 8; i++)
		seed[i] = (uint8_t)(j->nonce >> (8 * i));
	return tsr_crc32c(tsr_crc32c(tsr_crc32c(0, seed, 8), hdr, 16), p, n);
}

static void
put_le32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

/* Bytes a record takes: header and payload, padded to a block so every
 * record starts aligned (for O_DIRECT). */
static uint64_t
rec_span(uint64_t n)
{
	return (JR_REC_HEADER + n + JR_ALIGN - 1) / JR_ALIGN * JR_ALIGN;
}

/* The len bytes of payload of the record at off into *buf, grown to fit:
 * 1, 0 when the file ends before them, or -errno. */
static int
read_payload(struct jr *j, uint64_t off, uint32_t len, uint8_t **buf,
	     size_t *cap)
{
	int rc;

	if (len > *cap) {
		uint8_t *nb = realloc(*buf, len ? len : 1);
		if (nb == NULL)
			return -ENOMEM;
		*buf = nb;
		*cap = len;
	}
	rc = os_pread_exact(j->fd, *buf, len, off + JR_REC_HEADER);
	if (rc < 0)
		return rc == -ENODATA ? 0 : rc;
	return 1;
}

/* A record's header as it lies on disk. */
struct rec_head {
	uint8_t raw[JR_REC_HEADER];
	uint32_t magic, len, crc;
	uint64_t seq;
};

/* The header at off: 1, 0 when the journal or the file ends before it,
 * or -errno. */
static int
read_head(struct jr *j, uint64_t off, struct rec_head *h)
{
	struct tsr_dec d;
	int rc;

	if (off + JR_REC_HEADER > j->size)
		return 0;
	rc = os_pread_exact(j->fd, h->raw, JR_REC_HEADER, off);
	if (rc < 0)
		return rc == -ENODATA ? 0 : rc;
	tsr_dec_init(&d, h->raw, JR_REC_HEADER);
	h->magic = tsr_dec_u32(&d);
	h->len = tsr_dec_u32(&d);
	h->seq = tsr_dec_u64(&d);
	h->crc = tsr_dec_u32(&d);
	return 1;
}

/* Read the record with sequence number seq at off into *buf: 1 if it is
 * intact, 0 if there is none (never written, stale or torn: the end of the
 * records), or -errno.  *hint gets where the record after it would start
 * when its header is intact, else 0 (see damage_behind). */
static int
read_record(struct jr *j, uint64_t off, uint64_t seq, uint8_t **buf,
	    size_t *cap, size_t *lenp, uint64_t *hint)
{
	struct rec_head h;
	int rc;

	*hint = 0;
	if ((rc = read_head(j, off, &h)) <= 0)
		return rc;
	if (h.magic != JR_REC_MAGIC || h.seq != seq ||
	    rec_span(h.len) > j->size - off)
		return 0;
	*hint = off + rec_span(h.len);
	rc = read_payload(j, off, h.len, buf, cap);
	if (rc <= 0)
		return rc;
	put_le32(h.raw + 16, 0);
	if (rec_crc(j, h.raw, *buf, h.len) != h.crc)
		return 0; /* torn: the crash interrupted this append */
	*lenp = h.len;
	return 1;
}

/* Is there an intact record with sequence number seq at off? */
static int
valid_record_at(struct jr *j, uint64_t off, uint64_t seq, uint8_t **buf,
		size_t *cap)
{
	size_t len;
	uint64_t hint;

	return off % JR_ALIGN == 0 &&
	       read_record(j, off, seq, buf, cap, &len, &hint) == 1;
}

/* Replay stopped at off, where record seq should be, and found no intact
 * record there.  Is a record there all the same, damaged?  Zeros, a record
 * of an earlier lap and the end of the file are the normal end of the
 * records; a header with our magic and that seq whose length or checksum
 * is wrong is a record that was written, and so is one whose magic or seq
 * alone is wrong but whose checksum holds when they are put right (one
 * flipped byte in its header).  1 with the reason in why, 0, or -errno. */
static int
damaged_record_at(struct jr *j, uint64_t off, uint64_t seq, uint8_t **buf,
		  size_t *cap, char *why, size_t whylen)
{
	uint8_t fixed[JR_REC_HEADER];
	struct rec_head h;
	uint32_t magic, len, crc;
	uint64_t rseq;
	int rc;

	if (off % JR_ALIGN != 0 || (rc = read_head(j, off, &h)) <= 0)
		return off % JR_ALIGN != 0 ? 0 : rc;
	magic = h.magic;
	len = h.len;
	rseq = h.seq;
	crc = h.crc;
	if (magic != JR_REC_MAGIC && rseq != seq)
		return 0; /* not ours, or two things wrong: the end */
	if (magic != JR_REC_MAGIC || rseq != seq) {
		/* one flipped byte, not a record of an earlier lap (which
		 * would not check out anyway, but may be long to read) */
		uint64_t x = magic != JR_REC_MAGIC ? magic ^ JR_REC_MAGIC : rseq ^ seq;
		while ((x & 0xff) == 0)
			x >>= 8;
		if (x > 0xff)
			return 0;
	}
	if (rec_span(len) > j->size - off) {
		if (magic != JR_REC_MAGIC || rseq != seq)
			return 0;
		return errf(why, whylen, 1, "has a length (%u bytes) that runs "
			    "past the journal's end", len);
	}
	rc = read_payload(j, off, len, buf, cap);
	if (rc <= 0)
		return rc;
	if (magic == JR_REC_MAGIC && rseq == seq)
		return errf(why, whylen, 1, "fails its checksum");
	/* the checksum covers magic and seq: with the one that is wrong put
	 * right, does it hold?  A record of an earlier lap never does (its
	 * lap's nonce seeded it). */
	rec_header(fixed, len, seq);
	if (rec_crc(j, fixed, *buf, len) != crc)
		return 0;
	return errf(why, whylen, 1, "has a damaged %s in its header",
		    magic != JR_REC_MAGIC ? "magic" : "sequence number");
}

/* Replay stopped at off, where record seq should be.  A crash can only
 * tear the last record, so if the record after it is intact, the stop is
 * damage to a committed record,
 * and mounting would lose transactions that were acknowledged.  Where the
 * next record would start is known when the damaged record's header is
 * intact (hint, or 0); otherwise the aligned offsets of the next
 * JR_SCAN_WINDOW bytes are tried. */
#define JR_SCAN_WINDOW (16u << 20)

static int
damage_behind(struct jr *j, uint64_t off, uint64_t seq, uint64_t hint,
	      uint8_t **buf, size_t *cap)
{
	uint64_t end = off + JR_SCAN_WINDOW < j->size ? off + JR_SCAN_WINDOW
						      : j->size;

	if (hint && valid_record_at(j, hint, seq + 1, buf, cap))
		return 1;
	for (uint64_t o = off + JR_ALIGN; o < end; o += JR_ALIGN)
		if (valid_record_at(j, o, seq + 1, buf, cap))
			return 1;
	return 0;
}

int
jr_replay(struct jr *j, jr_record_cb cb, void *arg, uint64_t *nrec, char *err,
	  size_t errlen)
{
	uint8_t *buf = NULL, *nbuf = NULL;
	size_t cap = 0, ncap = 0, len = 0, nlen = 0;
	uint64_t count = 0, stop_hint = 0;
	int rc, cb_rc = 0, dropped = 0;

	j->off = JR_HEADER_SIZE;
	j->next_seq = j->cp_seq + 1;
	j->drop_seq = 0;
	rc = read_record(j, j->off, j->next_seq, &buf, &cap, &len, &stop_hint);
	while (rc > 0) {
		/* read one ahead, so the callback knows the last record */
		uint64_t next = j->off + rec_span(len);
		int more = read_record(j, next, j->next_seq + 1, &nbuf, &ncap, &nlen,
				       &stop_hint);
		if (more < 0) {
			rc = more;
			break;
		}
		cb_rc = cb(arg, j->next_seq, buf, len, more == 0);
		if (cb_rc == JR_DROP && more == 0) {
			/* The caller found the last record incomplete: appends
			 * go over it.  Unless the record after it is damaged
			 * and one after that intact: then this was not the
			 * last record written, and the damage is checked for
			 * from past it (below). */
			cb_rc = 0;
			rc = 0;
			dropped = 1;
			break;
		}
		if (cb_rc != 0) {
			if (cb_rc == JR_DROP)
				cb_rc = errf(err, errlen, -EINVAL, "%s: record %llu "
					     "dropped but it is not the last",
					     j->path, (unsigned long long)j->next_seq);
			rc = 0;
			break;
		}
		count++;
		j->next_seq++;
		j->off = next;
		uint8_t *tb = buf;
		buf = nbuf;
		nbuf = tb;
		size_t tc = cap;
		cap = ncap;
		ncap = tc;
		len = nlen;
		rc = more;
	}
	/* look for damage past a dropped record as if it had been taken */
	uint64_t stop_off = dropped ? j->off + rec_span(len) : j->off;
	uint64_t stop_seq = dropped ? j->next_seq + 1 : j->next_seq;
	if (rc == 0 && cb_rc == 0 &&
	    damage_behind(j, stop_off, stop_seq, stop_hint, &buf, &cap)) {
		free(buf);
		free(nbuf);
		if (nrec != NULL)
			*nrec = count;
		return errf(err, errlen, -EBADMSG,
			    "%s: record %llu at offset %llu is damaged but the "
			    "record after it is intact: replaying would lose "
			    "committed transactions, so the store is not mounted",
			    j->path, (unsigned long long)stop_seq,
			    (unsigned long long)stop_off);
	}
	/* The stop is the end of what was written.  A record there that was
	 * written but does not check out is dropped, as a crash in the middle
	 * of its write requires; but it may as well have been damaged after
	 * it was acknowledged, so it is never dropped without a word (the
	 * store logs jr_dropped, fsck reports it). */
	if (rc == 0 && cb_rc == 0 && !dropped) {
		rc = damaged_record_at(j, stop_off, stop_seq, &buf, &cap,
				       j->drop_why, sizeof(j->drop_why));
		if (rc > 0) {
			j->drop_seq = stop_seq;
			j->drop_off = stop_off;
			rc = 0;
		}
	}
	free(buf);
	free(nbuf);
	if (nrec != NULL)
		*nrec = count;
	if (cb_rc != 0)
		return cb_rc; /* the callback's, passed through as it is */
	if (rc == -ENOMEM)
		errf(err, errlen, rc, "%s: out of memory during replay", j->path);
	else if (rc < 0)
		errf(err, errlen, rc, "%s: replaying record %llu at offset %llu: %s",
		     j->path, (unsigned long long)j->next_seq,
		     (unsigned long long)j->off, strerror(-rc));
	return rc < 0 ? rc : 0;
}

int
jr_dropped(const struct jr *j, char *msg, size_t msglen)
{
	if (j->drop_seq == 0)
		return 0;
	errf(msg, msglen, 1, "%s: last record at offset %llu (seq %llu) %s; "
	     "dropped as a torn write (a crash cut its write short; or the disk "
	     "damaged it after it was acknowledged, and this store lost that "
	     "transaction)", j->path, (unsigned long long)j->drop_off,
	     (unsigned long long)j->drop_seq, j->drop_why);
	return 1;
}

/* Header, payload and zero padding in the aligned buffer. */
static int
stage(struct jr *j, const uint8_t hdr[JR_REC_HEADER], const void *p, size_t n,
      uint64_t span)
{
	if (span > j->acap) {
		void *nb;
		if (posix_memalign(&nb, JR_ALIGN, span) != 0)
			return -ENOMEM;
		free(j->abuf);
		j->abuf = nb;
		j->acap = span;
	}
	memcpy(j->abuf, hdr, JR_REC_HEADER);
	memcpy(j->abuf + JR_REC_HEADER, p, n);
	memset(j->abuf + JR_REC_HEADER + n, 0, span - JR_REC_HEADER - n);
	return 0;
}

static int
append_direct(struct jr *j, const uint8_t hdr[JR_REC_HEADER], const void *p,
	      size_t n, uint64_t span)
{
	int rc = stage(j, hdr, p, n, span);

	return rc < 0 ? rc : os_pwrite_full(j->dfd, j->abuf, span, j->off);
}

static int
append_buffered(struct jr *j, uint8_t hdr[JR_REC_HEADER], const void *p,
		size_t n)
{
	struct iovec iov[2] = { { hdr, JR_REC_HEADER }, { (void *)p, n } };
	int rc = os_pwritev_full(j->fd, iov, 2, j->off);

	if (rc < 0)
		return rc;
	return fdatasync(j->fd) < 0 ? -errno : 0;
}

/* Put a record on the device, not necessarily durable: written with
 * O_DIRECT, and in case the file system quietly buffered it (or has no
 * O_DIRECT), its pages written back and waited for. */
static int
write_unsynced(struct jr *j, uint8_t hdr[JR_REC_HEADER], const void *p,
	       size_t n, uint64_t span)
{
	int rc;

	if (j->ufd >= 0) {
		rc = stage(j, hdr, p, n, span);
		if (rc == 0)
			rc = os_pwrite_full(j->ufd, j->abuf, span, j->off);
	} else {
		struct iovec iov[2] = { { hdr, JR_REC_HEADER }, { (void *)p, n } };
		rc = os_pwritev_full(j->fd, iov, 2, j->off);
	}
	if (rc == 0 &&
	    sync_file_range(j->ufd >= 0 ? j->ufd : j->fd, (off_t)j->off,
			    (off_t)span, SYNC_FILE_RANGE_WAIT_BEFORE |
			    SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) < 0)
		rc = -errno;
	return rc;
}

static int
append(struct jr *j, const void *p, size_t n, int durable, uint64_t *seq,
       char *err, size_t errlen)
{
	uint8_t hdr[JR_REC_HEADER];
	uint64_t span = rec_span(n);
	int rc;

	if (n > jr_max_payload(j))
		return errf(err, errlen, -E2BIG,
			    "%s: a %zu-byte record can never fit in the journal",
			    j->path, n);
	if (span > j->size - j->off)
		return -ENOSPC;
	rec_header(hdr, (uint32_t)n, j->next_seq);
	put_le32(hdr + 16, rec_crc(j, hdr, p, n));
	if (!durable)
		rc = write_unsynced(j, hdr, p, n, span);
	else
		rc = j->dfd >= 0 ? append_direct(j, hdr, p, n, span)
				 : append_buffered(j, hdr, p, n);
	if (rc < 0)
		return errf(err, errlen, rc, "%s: journal write: %s", j->path,
			    strerror(-rc));
	*seq = j->next_seq++;
	j->off += span;
	return 0;
}

int
jr_append(struct jr *j, const void *p, size_t n, uint64_t *seq, char *err,
	  size_t errlen)
{
	return append(j, p, n, 1, seq, err, errlen);
}

int
jr_write(struct jr *j, const void *p, size_t n, uint64_t *seq, char *err,
	 size_t errlen)
{
	return append(j, p, n, 0, seq, err, errlen);
}

int
jr_checkpoint(struct jr *j, char *err, size_t errlen)
{
	int rc = write_header(j, j->next_seq - 1, err, errlen);

	if (rc == 0)
		j->off = JR_HEADER_SIZE;
	return rc;
}

uint64_t
jr_used(const struct jr *j)
{
	return j->off - JR_HEADER_SIZE;
}

uint64_t
jr_capacity(const struct jr *j)
{
	return j->size - JR_HEADER_SIZE;
}

uint64_t
jr_max_payload(const struct jr *j)
{
	uint64_t n = (j->size - JR_HEADER_SIZE) / JR_ALIGN * JR_ALIGN - JR_REC_HEADER;

	/* the record header's length field is 32 bits */
	return n < UINT32_MAX - JR_ALIGN ? n : UINT32_MAX - JR_ALIGN;
}
