/* journal.c — a rank's journal (mds.h; object names in mds/fsmeta.h).
 *
 * Records go to the segment being written, one append at a time (what
 * came meanwhile waits in jbuf and goes in the next: group commit), each
 * as a write at the segment's known length, so a write sent again after a
 * timeout lands in the same place.  A segment holds about
 * mds_journal_segment_size bytes; then the next is made.
 *
 * Fencing.  Every segment and the header carry the holder's fence: the
 * MDS map epoch in which it was given the rank (epochs only grow, so a
 * successor's fence is larger).  Appends are guarded by "fence equals
 * mine"; a new segment is made exclusively.  A successor, before it
 * replays, raises the fence of the header and of every segment it finds,
 * then makes the next segment itself.  From then on, whatever the MDS
 * before it still sends fails: an append meets a fence that is not its
 * own (-ECANCELED), a new segment exists already (-EEXIST).  So no event
 * can be acknowledged that the successor did not replay.  (The lease in
 * mds.c keeps a paused MDS from answering even reads; fencing is what
 * holds when clocks or pauses outrun it.)
 *
 * Trimming.  A closed segment is trimmed once every event in it is
 * written back (mds_dirty_floor is past its last seq): the header first
 * (its first segment moves on), then the segment's object.
 */
#include "mds.h"

#include "event/loop.h"
#include "log/log.h"
#include "util/util.h"

#include <tessera/client.h>
#include <tessera/crc32c.h>

#include <endian.h>
#include <stdatomic.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC_HDR 8u
#define MAX_SEGMENT (64u << 20)

static void
fence_hex(const struct mds *m, char buf[17])
{
	tsr_fs_hex16(m->fence, buf);
}

/* Raise oid's fence to ours unless it is higher: 0, -ENOENT (no such
 * object), -ESTALE (a successor's), or another error. */
static int
raise_fence(struct mds *m, const char *oid)
{
	struct tsr_op *op = tsr_op_create();
	char f[17];
	int rc;

	fence_hex(m, f);
	tsr_op_cmpxattr(op, "fence", TSR_CMP_LE, f, 16);
	tsr_op_setxattr(op, "fence", f, 16);
	rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
	tsr_op_destroy(op);
	return rc == -ECANCELED ? -ESTALE : rc;
}

/* Make segment seg (exclusive), fenced, its first event to be seq0: 0,
 * -EEXIST when it exists with another fence, or an error.  One that
 * exists with our fence is ours (an earlier try).
 *
 * seq0 ("seq0" xattr, 16 hex) is why event numbers go on across a
 * takeover even when every earlier segment was trimmed: a successor that
 * finds only empty segments starts after seq0 - 1, never at 1 again
 * (versions on directories would then stop ordering events). */
static int
make_segment(struct mds *m, uint64_t seg, uint64_t seq0)
{
	char oid[96], f[17], got[17], s0[17];
	size_t glen = 0;
	int rc, rc1 = 0;
	struct tsr_op *op = tsr_op_create();

	tsr_fs_segment_oid(m->rank, seg, oid, sizeof(oid));
	fence_hex(m, f);
	tsr_fs_hex16(seq0, s0);
	tsr_op_create_obj(op, 1);
	tsr_op_setxattr(op, "fence", f, 16);
	tsr_op_setxattr(op, "seq0", s0, 16);
	rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
	tsr_op_destroy(op);
	if (rc != -EEXIST)
		return rc;
	op = tsr_op_create();
	tsr_op_getxattr(op, "fence", got, sizeof(got), &glen, &rc1);
	rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
	tsr_op_destroy(op);
	if (rc == 0 && glen == 16 && memcmp(got, f, 16) == 0)
		return 0;
	return rc < 0 ? rc : -EEXIST;
}

static void
seg_closed(struct mds *m, uint64_t seg, uint64_t last)
{
	size_t i = (size_t)(seg - m->first_seg);
	uint64_t *n;

	if (seg < m->first_seg)
		return;
	if (i >= m->nseg_last) {
		n = realloc(m->seg_last, (i + 1) * sizeof(*n));
		if (n == NULL)
			return; /* not trimmed until the next start */
		for (size_t k = m->nseg_last; k <= i; k++)
			n[k] = 0;
		m->seg_last = n;
		m->nseg_last = i + 1;
	}
	m->seg_last[i] = last;
}

/* The inos an event made: the next given out must be above them, even
 * when the inos object was not written before a crash. */
static void
note_inos(struct mds *m, const struct tsr_fs_event *ev)
{
	for (uint32_t i = 0; i < ev->n; i++) {
		const struct tsr_fs_update *u = &ev->u[i];
		uint64_t ino = u->type == TSR_FSU_LINK ? u->de.ino :
			       u->type == TSR_FSU_IOBJ || u->type == TSR_FSU_DIR_NEW ? u->ino : 0;
		if (ino >= m->next_ino && ino >= tsr_fs_rank_ino_base(m->rank))
			m->next_ino = ino + 1;
	}
}

/* Read segment seg whole and replay it: 0, -ENOENT (it does not exist),
 * or an error. */
static int
replay_segment(struct mds *m, uint64_t seg, char *err, size_t errlen)
{
	char oid[96];
	uint64_t size = 0, got = 0, off = 0;
	uint8_t *buf;
	struct tsr_op *op;
	int rc;

	tsr_fs_segment_oid(m->rank, seg, oid, sizeof(oid));
	if ((rc = raise_fence(m, oid)) < 0) {
		if (rc == -ENOENT)
			return rc;
		return tsr_errf(err, errlen, rc, "fencing %s: %s", oid,
				rc == -ESTALE ? "a later MDS holds the rank" : strerror(-rc));
	}
	char s0[17];
	size_t s0len = 0;
	uint64_t seq0 = 0;
	int rc0 = 0;
	op = tsr_op_create();
	tsr_op_stat(op, &size, NULL, NULL);
	tsr_op_getxattr(op, "seq0", s0, sizeof(s0), &s0len, &rc0);
	rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
	tsr_op_destroy(op);
	if (rc == -ENODATA)
		rc = 0; /* a segment without seq0: its records say */
	if (rc < 0)
		return tsr_errf(err, errlen, rc, "%s: %s", oid, strerror(-rc));
	if (rc0 == 0 && tsr_fs_unhex16(s0, s0len, &seq0) < 0)
		return tsr_errf(err, errlen, -EUCLEAN, "%s: a bad seq0", oid);
	if (seq0 > 0 && seq0 - 1 > m->applied)
		m->applied = seq0 - 1;
	if (size > MAX_SEGMENT)
		return tsr_errf(err, errlen, -EIO, "%s: %" PRIu64 " bytes, more than a "
				"segment holds", oid, size);
	buf = tsr_xcalloc(1, size ? size : 1);
	if (size) {
		op = tsr_op_create();
		tsr_op_read(op, 0, size, buf, &got, NULL);
		rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
		tsr_op_destroy(op);
		if (rc < 0 || got != size) {
			free(buf);
			return tsr_errf(err, errlen, rc < 0 ? rc : -EIO, "reading %s: %s", oid,
					rc < 0 ? strerror(-rc) : "short");
		}
	}
	while (off < size) {
		struct tsr_fs_event ev;
		uint32_t len, crc;
		char why[256];
		if (size - off < REC_HDR) {
			free(buf);
			return tsr_errf(err, errlen, -EUCLEAN, "%s at %" PRIu64 ": a torn "
					"record header", oid, off);
		}
		memcpy(&len, buf + off, 4);
		memcpy(&crc, buf + off + 4, 4);
		len = le32toh(len);
		crc = le32toh(crc);
		if (len > size - off - REC_HDR ||
		    tsr_crc32c(0, buf + off + REC_HDR, len) != crc) {
			free(buf);
			return tsr_errf(err, errlen, -EUCLEAN, "%s at %" PRIu64 ": a record "
					"of %" PRIu32 " bytes that is torn or fails its checksum",
					oid, off, len);
		}
		rc = tsr_fs_event_decode(buf + off + REC_HDR, len, &ev, why, sizeof(why));
		if (rc == -EBADMSG)
			rc = -EUCLEAN; /* a record that passed its checksum: our bug */
		/* an event seen already (written twice, by an append that timed
		 * out yet landed): applying it is a no-op by the versions, but
		 * the seqs must not go back */
		if (rc == 0 && ev.seq > m->applied) {
			note_inos(m, &ev);
			rc = mds_apply(m, &ev, 1, why, sizeof(why));
			if (rc == 0)
				mds_done_add(m, ev.client, ev.tid, ev.ino);
		}
		tsr_fs_event_free(&ev);
		if (rc < 0) {
			free(buf);
			return tsr_errf(err, errlen, rc, "%s at %" PRIu64 ": %s", oid, off, why);
		}
		off += REC_HDR + len;
	}
	free(buf);
	seg_closed(m, seg, m->applied);
	return 0;
}

static int
read_inos(struct mds *m)
{
	char oid[64];
	uint64_t v = 0, got = 0;
	struct tsr_op *op = tsr_op_create();
	int rc;

	tsr_fs_inos_oid(m->rank, oid, sizeof(oid));
	/* fenced first: the MDS before us can promise no more inos */
	if ((rc = raise_fence(m, oid)) < 0 && rc != -ENOENT) {
		tsr_op_destroy(op);
		return rc;
	}
	tsr_op_read(op, 0, 8, &v, &got, NULL);
	rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
	tsr_op_destroy(op);
	if (rc == -ENOENT || (rc == 0 && got == 0)) {
		m->promised = tsr_fs_rank_ino_base(m->rank);
	} else if (rc < 0) {
		return rc;
	} else if (got != 8) {
		return -EIO;
	} else {
		m->promised = le64toh(v);
	}
	/* inos below promised may have been given out before a crash */
	m->next_ino = m->promised;
	return 0;
}

int
mds_inos_reserve(struct mds *m, uint64_t want)
{
	char oid[64], f[17];
	uint64_t to = want + 4096, le = htole64(to);
	struct tsr_op *op;
	int rc;

	if (want < m->promised)
		return 0;
	tsr_fs_inos_oid(m->rank, oid, sizeof(oid));
	fence_hex(m, f);
	op = tsr_op_create();
	tsr_op_create_obj(op, 0);
	tsr_op_cmpxattr(op, "fence", TSR_CMP_LE, f, 16);
	tsr_op_write_full(op, &le, 8);
	tsr_op_setxattr(op, "fence", f, 16);
	rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
	tsr_op_destroy(op);
	if (rc == -ENOENT) { /* the first time: make it */
		op = tsr_op_create();
		tsr_op_create_obj(op, 1);
		tsr_op_write_full(op, &le, 8);
		tsr_op_setxattr(op, "fence", f, 16);
		rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
		tsr_op_destroy(op);
		if (rc == -EEXIST)
			return mds_inos_reserve(m, want);
	}
	if (rc == -ECANCELED) {
		mds_lost_rank(m, "the inode numbers' object has a later MDS's fence");
		return -ESTALE;
	}
	if (rc < 0)
		return rc;
	m->promised = to;
	return 0;
}

/* Read the header: the first segment, or -ENOENT. */
static int
read_header(struct mds *m, const char *oid)
{
	uint64_t v = 0, got = 0;
	struct tsr_op *op = tsr_op_create();
	int rc;

	tsr_op_read(op, 0, 8, &v, &got, NULL);
	rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
	tsr_op_destroy(op);
	if (rc < 0)
		return rc;
	if (got != 8 || le64toh(v) == 0)
		return -EIO;
	m->first_seg = le64toh(v);
	return 0;
}

int
mds_journal_open(struct mds *m, char *err, size_t errlen)
{
	char oid[64], f[17];
	uint64_t seg;
	int rc = 0;

	tsr_fs_journal_oid(m->rank, oid, sizeof(oid));
	for (int tries = 0;; tries++) {
		if (tries == 3)
			return tsr_errf(err, errlen, -EIO, "%s: made and gone again", oid);
		rc = read_header(m, oid);
		if (rc != -ENOENT)
			break;
		/* no journal: a new file system (rank 0 makes the root) */
		uint64_t one = htole64(1);
		struct tsr_op *op;
		if (m->rank == 0 && (rc = mds_mkfs(m, err, errlen)) < 0)
			return rc;
		fence_hex(m, f);
		op = tsr_op_create();
		tsr_op_create_obj(op, 1);
		tsr_op_write_full(op, &one, 8);
		tsr_op_setxattr(op, "fence", f, 16);
		rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
		tsr_op_destroy(op);
		if (rc < 0 && rc != -EEXIST)
			return tsr_errf(err, errlen, rc, "making %s: %s", oid, strerror(-rc));
		tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "rank %d: a new journal%s", m->rank,
			m->rank == 0 ? " and a new file system" : "");
	}
	if (rc < 0)
		return tsr_errf(err, errlen, rc, "reading %s: %s", oid, strerror(-rc));
	if ((rc = raise_fence(m, oid)) < 0)
		return tsr_errf(err, errlen, rc, "fencing %s: %s", oid,
				rc == -ESTALE ? "a later MDS holds the rank" : strerror(-rc));
	/* the header may have moved on between our read and the fence (a
	 * trim by the MDS before us): read it again, now that it cannot */
	if ((rc = read_header(m, oid)) < 0)
		return tsr_errf(err, errlen, rc, "reading %s: %s", oid, strerror(-rc));
	if ((rc = read_inos(m)) < 0)
		return tsr_errf(err, errlen, rc, "reading rank %d's inode numbers: %s",
				m->rank, rc == -ESTALE ? "a later MDS holds the rank"
						       : strerror(-rc));
	free(m->seg_last);
	m->seg_last = NULL;
	m->nseg_last = 0;
	m->applied = 0;
	seg = m->first_seg;
	for (int guard = 0; guard < 1000000; guard++) {
		while ((rc = replay_segment(m, seg, err, errlen)) == 0)
			seg++;
		if (rc != -ENOENT)
			return rc;
		if ((rc = make_segment(m, seg, m->applied + 1)) == 0)
			break;
		if (rc != -EEXIST)
			return tsr_errf(err, errlen, rc, "making segment %" PRIu64 ": %s", seg,
					strerror(-rc));
		/* made meanwhile by the MDS before us: it is journal too */
	}
	m->seg = seg;
	m->seg_off = 0;
	m->committed = m->applied;
	/* inos an MDS before us gave out in answers its journal may not
	 * hold: below here, and never given out by us (clients' replays) */
	m->ino_floor = m->next_ino;
	tsr_log(TSR_SUB_MDS, TSR_LOG_INFO, "rank %d: replayed segments %" PRIu64 "..%" PRIu64
		" up to event %" PRIu64 "; writing segment %" PRIu64, m->rank, m->first_seg,
		seg - 1, m->applied, seg);
	return 0;
}

/* ---- Appending ----
 *
 * One append at a time, of at most MAX_APPEND bytes of whole records from
 * the front of jbuf (the rest waits).  An append that fails (not fenced)
 * is sent again exactly as it was — same segment, same offset, same bytes
 * — after RETRY_MS: a write that timed out may have landed, and the same
 * bytes at the same place are harmless, where the same events in the next
 * segment would be written twice. */

#define MAX_APPEND (4u << 20)
#define RETRY_MS 200u

struct append {
	struct mds *m;
	struct tsr_op *op;
	uint8_t *buf;
	size_t len;
	uint64_t seg, off, last;
	int result;
};

static void kick(struct mds *m);

static void
retry_on_mds(void *arg)
{
	kick(arg);
}

/* on the loop */
static void
retry_cb(void *arg)
{
	struct mds *m = arg;

	m->retry_armed = 0;
	mds_post(m, retry_on_mds, m);
}

/* on the MDS thread: one timer at a time */
static void
retry_later(struct mds *m)
{
	uint64_t id;

	if (!atomic_exchange(&m->retry_armed, 1) &&
	    tsr_loop_timer_add(m->loop, (uint64_t)RETRY_MS * 1000000u, retry_cb, m, &id) < 0)
		m->retry_armed = 0;
}

static void
append_free(struct append *a)
{
	tsr_op_destroy(a->op);
	free(a->buf);
	free(a);
}

static void
appended(void *arg)
{
	struct append *a = arg;
	struct mds *m = a->m;

	m->jinflight = 0;
	if (a->result == -ECANCELED) {
		append_free(a);
		mds_lost_rank(m, "a journal segment has a later MDS's fence");
		return;
	}
	if (a->result < 0) {
		tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "rank %d: journal append to segment %"
			PRIu64 " at %" PRIu64 ": %s; again in %u ms", m->rank, a->seg, a->off,
			strerror(-a->result), RETRY_MS);
		m->retry = a;
		retry_later(m);
		return;
	}
	m->seg_off = a->off + a->len;
	m->committed = a->last;
	m->n_appends++;
	append_free(a);
	mds_replies_release(m);
	kick(m);
}

static void
append_done(void *arg, int result, const struct tsr_objver *ver)
{
	struct append *a = arg;

	(void)ver;
	a->result = result;
	if (mds_post(a->m, appended, a) < 0)
		append_free(a); /* stopping: the journal has what landed */
}

static void
submit(struct mds *m, struct append *a)
{
	char oid[96], f[17];
	int rc;

	tsr_op_destroy(a->op);
	a->op = tsr_op_create();
	fence_hex(m, f);
	tsr_op_cmpxattr(a->op, "fence", TSR_CMP_EQ, f, 16);
	tsr_op_write(a->op, a->off, a->buf, a->len);
	tsr_fs_segment_oid(m->rank, a->seg, oid, sizeof(oid));
	m->jinflight = 1;
	rc = tsr_op_submit(m->oc, m->meta_pool, oid, strlen(oid), a->op, append_done, a);
	if (rc < 0) {
		/* refused before it went (never inline: that would recurse) */
		m->jinflight = 0;
		m->retry = a;
		tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "rank %d: journal append: %s; again in "
			"%u ms", m->rank, strerror(-rc), RETRY_MS);
		retry_later(m);
	}
}

/* Take whole records from the front of jbuf, at most MAX_APPEND bytes
 * (at least one record), into a new append. */
static struct append *
take_records(struct mds *m)
{
	struct append *a = tsr_xcalloc(1, sizeof(*a));
	size_t k = 0, len = 0;

	while (k < m->njrec && (k == 0 || m->jrec[k].end <= MAX_APPEND))
		k++;
	len = m->jrec[k - 1].end;
	a->m = m;
	a->last = m->jrec[k - 1].seq;
	a->len = len;
	a->buf = tsr_xcalloc(1, len);
	memcpy(a->buf, m->jbuf, len);
	memmove(m->jbuf, m->jbuf + len, m->jlen - len);
	m->jlen -= len;
	for (size_t i = k; i < m->njrec; i++) {
		m->jrec[i - k] = m->jrec[i];
		m->jrec[i - k].end -= len;
	}
	m->njrec -= k;
	return a;
}

static void
kick(struct mds *m)
{
	struct append *a;
	int rc;

	if (m->jinflight || m->stopping)
		return;
	if (m->retry) {
		a = m->retry;
		m->retry = NULL;
		submit(m, a);
		return;
	}
	if (m->jlen == 0)
		return;
	if (m->seg_off > 0 && m->seg_off + m->jrec[0].end > m->segment_bytes) {
		/* the next segment; the one closed holds events up to committed */
		if ((rc = make_segment(m, m->seg + 1, m->committed + 1)) < 0) {
			if (rc == -EEXIST) {
				mds_lost_rank(m, "the next journal segment exists: a later MDS "
					      "holds the rank");
				return;
			}
			tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "rank %d: making journal segment %"
				PRIu64 ": %s; again in %u ms", m->rank, m->seg + 1,
				strerror(-rc), RETRY_MS);
			retry_later(m);
			return;
		}
		seg_closed(m, m->seg, m->committed);
		m->seg++;
		m->seg_off = 0;
	}
	a = take_records(m);
	a->seg = m->seg;
	a->off = m->seg_off;
	submit(m, a);
}

int
mds_commit(struct mds *m, struct tsr_fs_event *ev, char *err, size_t errlen)
{
	struct tsr_enc e;
	uint32_t hdr[2];
	size_t mark;
	int rc;

	ev->seq = m->applied + 1;
	tsr_enc_init(&e);
	tsr_enc_raw(&e, hdr, sizeof(hdr)); /* room for the record's header */
	mark = e.len;
	if ((rc = tsr_fs_event_encode(&e, ev)) < 0) {
		tsr_enc_release(&e);
		return tsr_errf(err, errlen, rc, "encoding event %" PRIu64, ev->seq);
	}
	if ((rc = mds_apply(m, ev, 0, err, errlen)) < 0) {
		/* a live event applies to what the request found in the cache:
		 * failing here is a bug, and the cache may be half changed */
		tsr_enc_release(&e);
		mds_lost_rank(m, err);
		return rc;
	}
	hdr[0] = htole32((uint32_t)(e.len - mark));
	hdr[1] = htole32(tsr_crc32c(0, e.buf + mark, e.len - mark));
	memcpy(e.buf, hdr, sizeof(hdr));
	if (m->jlen + e.len > m->jcap) {
		size_t cap = m->jcap ? m->jcap * 2 : 65536;
		while (cap < m->jlen + e.len)
			cap *= 2;
		m->jbuf = realloc(m->jbuf, cap);
		if (m->jbuf == NULL)
			abort();
		m->jcap = cap;
	}
	if (m->njrec == m->jreccap) {
		m->jreccap = m->jreccap ? m->jreccap * 2 : 256;
		m->jrec = realloc(m->jrec, m->jreccap * sizeof(*m->jrec));
		if (m->jrec == NULL)
			abort();
	}
	memcpy(m->jbuf + m->jlen, e.buf, e.len);
	m->jlen += e.len;
	m->jrec[m->njrec].end = m->jlen;
	m->jrec[m->njrec].seq = ev->seq;
	m->njrec++;
	m->n_events++;
	/* who made the latest events (mds_seen_before) */
	if (ev->client != m->last_author) {
		m->others_seq = m->author_seq; /* (the event before: another's) */
		m->last_author = ev->client;
	}
	m->author_seq = ev->seq;
	tsr_enc_release(&e);
	kick(m);
	return 0;
}

uint64_t
mds_seen_before(const struct mds *m, uint64_t client)
{
	if (client != 0 && client == m->last_author)
		return m->others_seq;
	return m->applied;
}

/* ---- Trimming ---- */

void
mds_journal_trim(struct mds *m)
{
	uint64_t floor = mds_dirty_floor(m);
	char oid[96], f[17];
	uint64_t first;
	size_t n = 0;
	struct tsr_op *op;
	int rc;

	if (m->trimming || m->replaying || m->rank < 0 || m->stopping)
		return;
	/* closed segments whose last event is written back */
	while (n < m->nseg_last && m->first_seg + n < m->seg &&
	       (floor == 0 || m->seg_last[n] < floor))
		n++;
	if (n == 0)
		return;
	m->trimming = 1;
	first = htole64(m->first_seg + n);
	fence_hex(m, f);
	tsr_fs_journal_oid(m->rank, oid, sizeof(oid));
	op = tsr_op_create();
	tsr_op_cmpxattr(op, "fence", TSR_CMP_EQ, f, 16);
	tsr_op_write_full(op, &first, 8);
	rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
	tsr_op_destroy(op);
	if (rc == -ECANCELED) {
		m->trimming = 0;
		mds_lost_rank(m, "the journal's header has a later MDS's fence");
		return;
	}
	if (rc < 0) {
		tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "rank %d: trimming the journal: %s; "
			"again later", m->rank, strerror(-rc));
		m->trimming = 0;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		tsr_fs_segment_oid(m->rank, m->first_seg + i, oid, sizeof(oid));
		op = tsr_op_create();
		tsr_op_cmpxattr(op, "fence", TSR_CMP_EQ, f, 16);
		tsr_op_remove(op);
		rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
		tsr_op_destroy(op);
		if (rc < 0 && rc != -ENOENT)
			tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "rank %d: removing trimmed %s: %s "
				"(left behind)", m->rank, oid, strerror(-rc));
	}
	memmove(m->seg_last, m->seg_last + n, (m->nseg_last - n) * sizeof(*m->seg_last));
	m->nseg_last -= n;
	m->first_seg += n;
	m->n_trims += n;
	m->trimming = 0;
}

void
mds_journal_free(struct mds *m)
{
	if (m->retry)
		append_free(m->retry);
	m->retry = NULL;
	free(m->jbuf);
	free(m->jrec);
	free(m->seg_last);
	m->jbuf = NULL;
	m->jrec = NULL;
	m->seg_last = NULL;
	m->jlen = m->jcap = m->nseg_last = m->njrec = m->jreccap = 0;
}
