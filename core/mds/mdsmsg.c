/* mdsmsg.c — encodings of the MDS's messages (mdsmsg.h). */
#include "mds/mdsmsg.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
tsr_mds_op_name(uint32_t op)
{
	switch (op) {
#define X(e, v, n, w) case v: return n;
	TSR_MDS_OPS(X)
#undef X
	}
	return NULL;
}

int
tsr_mds_op_writes(uint32_t op)
{
	switch (op) {
#define X(e, v, n, w) case v: return w;
	TSR_MDS_OPS(X)
#undef X
	}
	return 0;
}

int
tsr_mdsmsg_session_encode(struct tsr_enc *e, const struct tsr_mds_session *s)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, s->tid);
	tsr_enc_u32(e, s->op);
	tsr_enc_u64(e, s->client);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

int
tsr_mdsmsg_session_decode(const void *buf, size_t len, struct tsr_mds_session *s,
			  char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	memset(s, 0, sizeof(*s));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "session: bad envelope");
	s->tid = tsr_dec_u64(&sub);
	s->op = tsr_dec_u32(&sub);
	s->client = tsr_dec_u64(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) != 0)
		return tsr_errf(err, errlen, -EBADMSG, "session: truncated or trailing "
				"bytes");
	if (s->op < TSR_MDS_SESSION_OPEN || s->op > TSR_MDS_SESSION_CLOSE)
		return tsr_errf(err, errlen, -EBADMSG, "session: op %" PRIu32 " (1 .. 3)",
				s->op);
	return 0;
}

int
tsr_mdsmsg_request_encode(struct tsr_enc *e, const struct tsr_mds_request *r)
{
	size_t mark = tsr_enc_begin_struct(e, 3, 1);

	tsr_enc_u64(e, r->tid);
	tsr_enc_u64(e, r->oldest);
	tsr_enc_u32(e, r->op);
	tsr_enc_u32(e, r->flags);
	tsr_enc_u64(e, r->ino);
	tsr_enc_u64(e, r->ino2);
	tsr_enc_str(e, r->name);
	tsr_enc_str(e, r->name2);
	tsr_enc_u32(e, r->mode);
	tsr_enc_u64(e, r->rdev);
	tsr_enc_u32(e, r->uid);
	tsr_enc_u32(e, r->gid);
	tsr_enc_u32(e, r->ngroups);
	for (uint32_t i = 0; i < r->ngroups && i < TSR_MDS_MAX_GROUPS; i++)
		tsr_enc_u32(e, r->groups[i]);
	tsr_enc_u32(e, r->sa.mask);
	tsr_enc_u32(e, r->sa.mode);
	tsr_enc_u32(e, r->sa.uid);
	tsr_enc_u32(e, r->sa.gid);
	tsr_enc_u64(e, r->sa.size);
	tsr_enc_i64(e, r->sa.atime.sec);
	tsr_enc_u32(e, r->sa.atime.nsec);
	tsr_enc_i64(e, r->sa.mtime.sec);
	tsr_enc_u32(e, r->sa.mtime.nsec);
	tsr_enc_u64(e, r->cookie);
	tsr_enc_u32(e, r->max);
	tsr_enc_bytes(e, r->value, r->value_len);
	tsr_mdsmsg_lock_encode(e, &r->lk);
	tsr_enc_u32(e, r->rflags);
	tsr_enc_u64(e, r->made_ino);
	tsr_enc_i64(e, r->sa.ctime.sec);
	tsr_enc_u32(e, r->sa.ctime.nsec);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

static int
lock_type_ok(uint32_t t)
{
	uint32_t base = t & ~TSR_LOCK_FLOCK;

	return base == F_RDLCK || base == F_WRLCK || base == F_UNLCK;
}

int
tsr_mdsmsg_lock_encode(struct tsr_enc *e, const struct tsr_mds_lock *lk)
{
	tsr_enc_u64(e, lk->start);
	tsr_enc_u64(e, lk->end);
	tsr_enc_u64(e, lk->owner);
	tsr_enc_u32(e, lk->pid);
	tsr_enc_u32(e, lk->type);
	return tsr_enc_error(e);
}

int
tsr_mdsmsg_lock_decode(const void *buf, size_t len, struct tsr_mds_lock *lk)
{
	struct tsr_dec d;

	tsr_dec_init(&d, buf, len);
	lk->start = tsr_dec_u64(&d);
	lk->end = tsr_dec_u64(&d);
	lk->owner = tsr_dec_u64(&d);
	lk->pid = tsr_dec_u32(&d);
	lk->type = tsr_dec_u32(&d);
	if (tsr_dec_error(&d) || tsr_dec_remaining(&d) != 0 || lk->start > lk->end ||
	    !lock_type_ok(lk->type))
		return -EBADMSG;
	return 0;
}

int
tsr_mdsmsg_request_decode(const void *buf, size_t len, struct tsr_mds_request *r,
			  char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	memset(r, 0, sizeof(*r));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "request: bad envelope");
	r->tid = tsr_dec_u64(&sub);
	r->oldest = tsr_dec_u64(&sub);
	r->op = tsr_dec_u32(&sub);
	r->flags = tsr_dec_u32(&sub);
	r->ino = tsr_dec_u64(&sub);
	r->ino2 = tsr_dec_u64(&sub);
	tsr_dec_str(&sub, r->name, sizeof(r->name));
	tsr_dec_str(&sub, r->name2, sizeof(r->name2));
	r->mode = tsr_dec_u32(&sub);
	r->rdev = tsr_dec_u64(&sub);
	r->uid = tsr_dec_u32(&sub);
	r->gid = tsr_dec_u32(&sub);
	r->ngroups = tsr_dec_u32(&sub);
	if (r->ngroups > TSR_MDS_MAX_GROUPS) {
		return tsr_errf(err, errlen, -EBADMSG, "request: %" PRIu32 " groups (at most "
				"%d)", r->ngroups, TSR_MDS_MAX_GROUPS);
	}
	for (uint32_t i = 0; i < r->ngroups; i++)
		r->groups[i] = tsr_dec_u32(&sub);
	r->sa.mask = tsr_dec_u32(&sub);
	r->sa.mode = tsr_dec_u32(&sub);
	r->sa.uid = tsr_dec_u32(&sub);
	r->sa.gid = tsr_dec_u32(&sub);
	r->sa.size = tsr_dec_u64(&sub);
	r->sa.atime.sec = tsr_dec_i64(&sub);
	r->sa.atime.nsec = tsr_dec_u32(&sub);
	r->sa.mtime.sec = tsr_dec_i64(&sub);
	r->sa.mtime.nsec = tsr_dec_u32(&sub);
	r->cookie = tsr_dec_u64(&sub);
	r->max = tsr_dec_u32(&sub);
	tsr_dec_bytes(&sub, &r->value, &r->value_len, TSR_FS_XATTR_VALUE_MAX);
	r->lk.start = tsr_dec_u64(&sub);
	r->lk.end = tsr_dec_u64(&sub);
	r->lk.owner = tsr_dec_u64(&sub);
	r->lk.pid = tsr_dec_u32(&sub);
	r->lk.type = tsr_dec_u32(&sub);
	if (ver >= 2) {
		r->rflags = tsr_dec_u32(&sub);
		r->made_ino = tsr_dec_u64(&sub);
	}
	if (ver >= 3) {
		r->sa.ctime.sec = tsr_dec_i64(&sub);
		r->sa.ctime.nsec = tsr_dec_u32(&sub);
	} else if (r->sa.mask & TSR_SETATTR_CTIME) {
		return tsr_errf(err, errlen, -EBADMSG, "request %s: a ctime bit without a ctime "
				"(version %u)", tsr_mds_op_name(r->op), ver);
	}
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) != 0)
		return tsr_errf(err, errlen, -EBADMSG, "request: truncated, a field too "
				"long, or trailing bytes");
	if (r->rflags & ~(TSR_MDS_REQ_REPLAY | TSR_MDS_REQ_EARLY))
		return tsr_errf(err, errlen, -EBADMSG, "request %s: unknown flags %#" PRIx32,
				tsr_mds_op_name(r->op), r->rflags);
	if (tsr_mds_op_name(r->op) == NULL)
		return tsr_errf(err, errlen, -EBADMSG, "request: unknown op %" PRIu32, r->op);
	if (r->ino == 0)
		return tsr_errf(err, errlen, -EBADMSG, "request %s: ino 0",
				tsr_mds_op_name(r->op));
	if ((r->sa.mask & ~TSR_SETATTR_ALL) || r->sa.atime.nsec >= 1000000000u ||
	    r->sa.mtime.nsec >= 1000000000u || r->sa.ctime.nsec >= 1000000000u)
		return tsr_errf(err, errlen, -EBADMSG, "request %s: bad setattr mask or "
				"nanoseconds", tsr_mds_op_name(r->op));
	if ((r->op == TSR_MDS_OP_GETLK || r->op == TSR_MDS_OP_SETLK) &&
	    (r->lk.start > r->lk.end || !lock_type_ok(r->lk.type)))
		return tsr_errf(err, errlen, -EBADMSG, "request %s: a lock of type %#" PRIx32
				" over %" PRIu64 "..%" PRIu64, tsr_mds_op_name(r->op),
				r->lk.type, r->lk.start, r->lk.end);
	if (r->max > TSR_MDS_READDIR_MAX)
		return tsr_errf(err, errlen, -EBADMSG, "request %s: max %" PRIu32 " (at most "
				"%u)", tsr_mds_op_name(r->op), r->max, TSR_MDS_READDIR_MAX);
	return 0;
}

int
tsr_mdsmsg_reply_encode(struct tsr_enc *e, const struct tsr_mds_reply *r)
{
	size_t mark = tsr_enc_begin_struct(e, 5, 1);

	tsr_enc_u64(e, r->tid);
	tsr_enc_i32(e, r->result);
	tsr_enc_str(e, r->why);
	tsr_enc_u32(e, r->n);
	for (uint32_t i = 0; i < r->n && i < TSR_MDS_REPLY_MAX_INODES; i++)
		tsr_inode_encode(e, &r->in[i]);
	tsr_enc_u32(e, r->nent);
	for (uint32_t i = 0; i < r->nent; i++) {
		tsr_enc_str(e, r->ent[i].name);
		tsr_enc_u64(e, r->ent[i].cookie);
		tsr_inode_encode(e, &r->ent[i].inode);
	}
	tsr_enc_u8(e, r->end);
	tsr_enc_bytes(e, r->value, r->value_len);
	tsr_enc_u32(e, r->caps);
	tsr_enc_u64(e, r->cap_seq);
	tsr_enc_u64(e, r->osd_barrier);
	tsr_enc_u64(e, r->dcache_seq);
	tsr_enc_u8(e, r->stage);
	tsr_enc_u8(e, r->nosec);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

void
tsr_mdsmsg_reply_free(struct tsr_mds_reply *r)
{
	for (uint32_t i = 0; i < r->n && i < TSR_MDS_REPLY_MAX_INODES; i++)
		tsr_inode_free(&r->in[i]);
	for (uint32_t i = 0; i < r->nent; i++)
		tsr_inode_free(&r->ent[i].inode);
	free(r->ent);
	free(r->value);
	r->ent = NULL;
	r->value = NULL;
	r->n = r->nent = 0;
}

int
tsr_mdsmsg_reply_decode(const void *buf, size_t len, struct tsr_mds_reply *r, char *err,
			size_t errlen)
{
	struct tsr_dec d, sub;
	const void *v;
	uint32_t n, nent;
	uint8_t ver;
	int rc;

	memset(r, 0, sizeof(*r));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 5, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "reply: bad envelope");
	r->tid = tsr_dec_u64(&sub);
	r->result = tsr_dec_i32(&sub);
	tsr_dec_str(&sub, r->why, sizeof(r->why));
	n = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub) || n > TSR_MDS_REPLY_MAX_INODES)
		return tsr_errf(err, errlen, -EBADMSG, "reply: truncated, or %" PRIu32
				" inodes", n);
	for (uint32_t i = 0; i < n; i++) {
		if ((rc = tsr_inode_decode_from(&sub, &r->in[i], err, errlen)) < 0)
			goto fail;
		r->n = i + 1;
	}
	nent = tsr_dec_u32(&sub);
	/* every entry takes at least 4 + 8 + 6 bytes: no more of them than
	 * the input could hold */
	if (tsr_dec_error(&sub) || nent > TSR_MDS_READDIR_MAX ||
	    nent > tsr_dec_remaining(&sub) / 18) {
		rc = tsr_errf(err, errlen, -EBADMSG, "reply: %" PRIu32 " entries", nent);
		goto fail;
	}
	if (nent && (r->ent = calloc(nent, sizeof(*r->ent))) == NULL) {
		rc = tsr_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	for (uint32_t i = 0; i < nent; i++) {
		tsr_dec_str(&sub, r->ent[i].name, sizeof(r->ent[i].name));
		r->ent[i].cookie = tsr_dec_u64(&sub);
		if (tsr_dec_error(&sub) || r->ent[i].name[0] == '\0') {
			rc = tsr_errf(err, errlen, -EBADMSG, "reply: entry %" PRIu32
				      " truncated or unnamed", i);
			goto fail;
		}
		if ((rc = tsr_inode_decode_from(&sub, &r->ent[i].inode, err, errlen)) < 0)
			goto fail;
		r->nent = i + 1;
	}
	r->end = tsr_dec_u8(&sub);
	tsr_dec_bytes(&sub, &v, &r->value_len, TSR_FS_XATTRS_MAX);
	if (ver >= 2) {
		r->caps = tsr_dec_u32(&sub);
		r->cap_seq = tsr_dec_u64(&sub);
		r->osd_barrier = tsr_dec_u64(&sub);
	}
	if (ver >= 3)
		r->dcache_seq = tsr_dec_u64(&sub);
	if (ver >= 4)
		r->stage = tsr_dec_u8(&sub);
	if (ver >= 5)
		r->nosec = tsr_dec_u8(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) != 0 || r->end > 1 ||
	    (r->caps & ~TSR_CAP_ALL) || r->stage > TSR_MDS_REPLY_SAFE || r->nosec > 1) {
		rc = tsr_errf(err, errlen, -EBADMSG, "reply: truncated or trailing bytes");
		goto fail;
	}
	if (r->result > 0 || r->result < -4095) {
		rc = tsr_errf(err, errlen, -EBADMSG, "reply: result %" PRId32 " is no errno",
			      r->result);
		goto fail;
	}
	if (r->value_len) {
		if ((r->value = malloc(r->value_len)) == NULL) {
			rc = tsr_errf(err, errlen, -ENOMEM, "out of memory");
			goto fail;
		}
		memcpy(r->value, v, r->value_len);
	}
	return 0;
fail:
	tsr_mdsmsg_reply_free(r);
	return rc;
}

int
tsr_mdsmsg_reconnect_encode(struct tsr_enc *e, const struct tsr_mds_reconnect *r)
{
	tsr_enc_u32(e, r->ncaps);
	for (uint32_t i = 0; i < r->ncaps; i++) {
		tsr_enc_u64(e, r->caps[i].ino);
		tsr_enc_u32(e, r->caps[i].wanted);
		tsr_enc_u32(e, r->caps[i].issued);
	}
	tsr_enc_u32(e, r->nlocks);
	for (uint32_t i = 0; i < r->nlocks; i++) {
		tsr_enc_u64(e, r->locks[i].ino);
		tsr_mdsmsg_lock_encode(e, &r->locks[i].lk);
	}
	return tsr_enc_error(e);
}

void
tsr_mdsmsg_reconnect_free(struct tsr_mds_reconnect *r)
{
	free(r->caps);
	free(r->locks);
	memset(r, 0, sizeof(*r));
}

#define LOCK_BYTES 32

int
tsr_mdsmsg_reconnect_decode(const void *buf, size_t len, struct tsr_mds_reconnect *r,
			    char *err, size_t errlen)
{
	struct tsr_dec d;
	uint32_t n;

	memset(r, 0, sizeof(*r));
	tsr_dec_init(&d, buf, len);
	n = tsr_dec_u32(&d);
	if (tsr_dec_error(&d) || n > TSR_MDS_RECONNECT_MAX || n > tsr_dec_remaining(&d) / 16)
		return tsr_errf(err, errlen, -EBADMSG, "reconnect: %" PRIu32 " caps", n);
	r->caps = tsr_xcalloc(n ? n : 1, sizeof(*r->caps));
	for (; r->ncaps < n; r->ncaps++) {
		struct tsr_mds_reconnect_cap *c = &r->caps[r->ncaps];
		c->ino = tsr_dec_u64(&d);
		c->wanted = tsr_dec_u32(&d);
		c->issued = tsr_dec_u32(&d);
		if (c->ino == 0 || ((c->wanted | c->issued) & ~TSR_CAP_ALL) ||
		    (c->wanted & ~(TSR_CAP_RD | TSR_CAP_WR)))
			goto bad;
	}
	n = tsr_dec_u32(&d);
	if (tsr_dec_error(&d) || n > TSR_MDS_RECONNECT_MAX ||
	    n > tsr_dec_remaining(&d) / (8 + LOCK_BYTES))
		goto bad;
	r->locks = tsr_xcalloc(n ? n : 1, sizeof(*r->locks));
	for (; r->nlocks < n; r->nlocks++) {
		struct tsr_mds_reconnect_lock *l = &r->locks[r->nlocks];
		uint8_t raw[LOCK_BYTES];
		l->ino = tsr_dec_u64(&d);
		tsr_dec_raw(&d, raw, sizeof(raw));
		if (tsr_dec_error(&d) || l->ino == 0 ||
		    tsr_mdsmsg_lock_decode(raw, sizeof(raw), &l->lk) < 0)
			goto bad;
	}
	if (tsr_dec_error(&d) || tsr_dec_remaining(&d) != 0)
		goto bad;
	return 0;
bad:
	tsr_mdsmsg_reconnect_free(r);
	return tsr_errf(err, errlen, -EBADMSG, "reconnect: a capability or lock out of "
			"range, truncated, or trailing bytes");
}

int
tsr_mdsmsg_cap_encode(struct tsr_enc *e, const struct tsr_mds_cap *c)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u32(e, c->op);
	tsr_enc_u64(e, c->ino);
	tsr_enc_u32(e, c->caps);
	tsr_enc_u64(e, c->seq);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

int
tsr_mdsmsg_cap_decode(const void *buf, size_t len, struct tsr_mds_cap *c, char *err,
		      size_t errlen)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	memset(c, 0, sizeof(*c));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "cap: bad envelope");
	c->op = tsr_dec_u32(&sub);
	c->ino = tsr_dec_u64(&sub);
	c->caps = tsr_dec_u32(&sub);
	c->seq = tsr_dec_u64(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) != 0)
		return tsr_errf(err, errlen, -EBADMSG, "cap: truncated or trailing bytes");
	if ((c->op != TSR_MDS_CAP_REVOKE && c->op != TSR_MDS_CAP_REVOKE_DIR) || c->ino == 0 ||
	    (c->caps & ~TSR_CAP_ALL))
		return tsr_errf(err, errlen, -EBADMSG, "cap: op %" PRIu32 ", ino %" PRIx64
				", caps %#" PRIx32, c->op, c->ino, c->caps);
	return 0;
}

const char *
tsr_mdsmsg_name(uint32_t type)
{
	switch (type) {
#define NAME(name, n, label, fn) case TSR_MSG_MDS_##name: return label;
	TSR_MDS_MESSAGES(NAME)
#undef NAME
	default: return NULL;
	}
}

/* Round trips compare encodings: decode, encode, decode, encode again —
 * the two encodings must be the same bytes. */
static int
check_session(const void *buf, size_t len, char *err, size_t errlen)
{
	struct tsr_mds_session a, b;
	struct tsr_enc e;
	int rc;

	if (tsr_mdsmsg_session_decode(buf, len, &a, err, errlen) < 0)
		return -EBADMSG;
	tsr_enc_init(&e);
	rc = tsr_mdsmsg_session_encode(&e, &a) < 0 ||
	     tsr_mdsmsg_session_decode(e.buf, e.len, &b, err, errlen) < 0 ||
	     memcmp(&a, &b, sizeof(a)) != 0 ? -EPROTO : 0;
	tsr_enc_release(&e);
	return rc;
}

static int
check_request(const void *buf, size_t len, char *err, size_t errlen)
{
	struct tsr_mds_request a, b;
	struct tsr_enc e1, e2;
	int rc;

	if (tsr_mdsmsg_request_decode(buf, len, &a, err, errlen) < 0)
		return -EBADMSG;
	tsr_enc_init(&e1);
	tsr_enc_init(&e2);
	rc = tsr_mdsmsg_request_encode(&e1, &a) < 0 ||
	     tsr_mdsmsg_request_decode(e1.buf, e1.len, &b, err, errlen) < 0 ||
	     tsr_mdsmsg_request_encode(&e2, &b) < 0 || e1.len != e2.len ||
	     memcmp(e1.buf, e2.buf, e1.len) != 0 ? -EPROTO : 0;
	tsr_enc_release(&e1);
	tsr_enc_release(&e2);
	return rc;
}

static int
check_reply(const void *buf, size_t len, char *err, size_t errlen)
{
	struct tsr_mds_reply a, b;
	struct tsr_enc e1, e2;
	int rc;

	if (tsr_mdsmsg_reply_decode(buf, len, &a, err, errlen) < 0)
		return -EBADMSG;
	memset(&b, 0, sizeof(b));
	tsr_enc_init(&e1);
	tsr_enc_init(&e2);
	rc = tsr_mdsmsg_reply_encode(&e1, &a) < 0 ||
	     tsr_mdsmsg_reply_decode(e1.buf, e1.len, &b, err, errlen) < 0 ||
	     tsr_mdsmsg_reply_encode(&e2, &b) < 0 || e1.len != e2.len ||
	     memcmp(e1.buf, e2.buf, e1.len) != 0 ? -EPROTO : 0;
	tsr_enc_release(&e1);
	tsr_enc_release(&e2);
	tsr_mdsmsg_reply_free(&a);
	tsr_mdsmsg_reply_free(&b);
	return rc;
}

static int
check_cap(const void *buf, size_t len, char *err, size_t errlen)
{
	struct tsr_mds_cap a, b;
	struct tsr_enc e1, e2;
	int rc;

	if (tsr_mdsmsg_cap_decode(buf, len, &a, err, errlen) < 0)
		return -EBADMSG;
	tsr_enc_init(&e1);
	tsr_enc_init(&e2);
	rc = tsr_mdsmsg_cap_encode(&e1, &a) < 0 ||
	     tsr_mdsmsg_cap_decode(e1.buf, e1.len, &b, err, errlen) < 0 ||
	     tsr_mdsmsg_cap_encode(&e2, &b) < 0 || e1.len != e2.len ||
	     memcmp(e1.buf, e2.buf, e1.len) != 0 ? -EPROTO : 0;
	tsr_enc_release(&e1);
	tsr_enc_release(&e2);
	return rc;
}

int
tsr_mdsmsg_check(uint32_t type, const void *buf, size_t len, char *err, size_t errlen)
{
	switch (type) {
	case TSR_MSG_MDS_SESSION: return check_session(buf, len, err, errlen);
	case TSR_MSG_MDS_REQUEST: return check_request(buf, len, err, errlen);
	case TSR_MSG_MDS_REPLY: return check_reply(buf, len, err, errlen);
	case TSR_MSG_MDS_CAP: return check_cap(buf, len, err, errlen);
	}
	return -ENOENT;
}
