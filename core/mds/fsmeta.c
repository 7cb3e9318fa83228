/* fsmeta.c — encodings of inodes, dentries and journal events (fsmeta.h). */
#include "mds/fsmeta.h"
#include "util/util.h"

#include <tessera/hash.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- Layouts ---- */

void
tsr_layout_default(struct tsr_layout *l, int64_t pool)
{
	l->object_size = 4u << 20;
	l->stripe_unit = 4u << 20;
	l->stripe_count = 1;
	l->pool = pool;
}

int
tsr_layout_check(const struct tsr_layout *l, char *err, size_t errlen)
{
	if (l->stripe_unit == 0 || l->stripe_unit % 65536u != 0)
		return tsr_errf(err, errlen, -EINVAL, "stripe_unit %" PRIu32 ": a multiple "
				"of 65536", l->stripe_unit);
	if (l->object_size == 0 || l->object_size % l->stripe_unit != 0 ||
	    l->object_size > (1u << 30))
		return tsr_errf(err, errlen, -EINVAL, "object_size %" PRIu32 ": a multiple "
				"of stripe_unit (%" PRIu32 "), at most 1 GiB", l->object_size,
				l->stripe_unit);
	if (l->stripe_count == 0 || l->stripe_count > 256)
		return tsr_errf(err, errlen, -EINVAL, "stripe_count %" PRIu32 ": 1 .. 256",
				l->stripe_count);
	if (l->pool < 0)
		return tsr_errf(err, errlen, -EINVAL, "pool %" PRId64 ": not a pool",
				l->pool);
	return 0;
}

void
tsr_layout_map(const struct tsr_layout *l, uint64_t off, uint64_t *objno, uint64_t *objoff,
	       uint64_t *left)
{
	uint64_t su = l->stripe_unit, sc = l->stripe_count;
	uint64_t per_obj = l->object_size / su;      /* stripe units an object holds */
	uint64_t blockno = off / su;                 /* the stripe unit off is in */
	uint64_t stripeno = blockno / sc;            /* the stripe (row) */
	uint64_t stripepos = blockno % sc;           /* the object in the set */
	uint64_t setno = stripeno / per_obj;         /* the object set */

	*objno = setno * sc + stripepos;
	*objoff = (stripeno % per_obj) * su + off % su;
	*left = su - off % su;
}

void
tsr_fs_data_oid(uint64_t ino, uint64_t objno, char *buf, size_t cap)
{
	snprintf(buf, cap, "%" PRIx64 ".%08" PRIx64, ino, objno);
}

/* ---- Inodes ---- */

void
tsr_inode_free(struct tsr_inode *in)
{
	free(in->symlink);
	free(in->xattrs);
	in->symlink = NULL;
	in->xattrs = NULL;
	in->xattrs_len = 0;
	in->nxattrs = 0;
}

int
tsr_inode_copy(struct tsr_inode *dst, const struct tsr_inode *src)
{
	*dst = *src;
	dst->symlink = NULL;
	dst->xattrs = NULL;
	if (src->symlink && (dst->symlink = strdup(src->symlink)) == NULL)
		return -ENOMEM;
	if (src->xattrs_len) {
		if ((dst->xattrs = malloc(src->xattrs_len)) == NULL) {
			tsr_inode_free(dst);
			return -ENOMEM;
		}
		memcpy(dst->xattrs, src->xattrs, src->xattrs_len);
	}
	return 0;
}

static void
enc_time(struct tsr_enc *e, const struct tsr_ftime *t)
{
	tsr_enc_i64(e, t->sec);
	tsr_enc_u32(e, t->nsec);
}

static void
dec_time(struct tsr_dec *d, struct tsr_ftime *t)
{
	t->sec = tsr_dec_i64(d);
	t->nsec = tsr_dec_u32(d);
	if (t->nsec >= 1000000000u)
		tsr_dec_fail(d, -EBADMSG);
}

int
tsr_inode_encode(struct tsr_enc *e, const struct tsr_inode *in)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, in->ino);
	tsr_enc_u32(e, in->mode);
	tsr_enc_u32(e, in->uid);
	tsr_enc_u32(e, in->gid);
	tsr_enc_u32(e, in->nlink);
	tsr_enc_u64(e, in->rdev);
	tsr_enc_u64(e, in->size);
	enc_time(e, &in->atime);
	enc_time(e, &in->mtime);
	enc_time(e, &in->ctime);
	enc_time(e, &in->btime);
	tsr_enc_u64(e, in->change);
	tsr_enc_u32(e, in->layout.object_size);
	tsr_enc_u32(e, in->layout.stripe_unit);
	tsr_enc_u32(e, in->layout.stripe_count);
	tsr_enc_i64(e, in->layout.pool);
	tsr_enc_u64(e, in->rstat.rbytes);
	tsr_enc_u64(e, in->rstat.rfiles);
	tsr_enc_u64(e, in->rstat.rsubdirs);
	tsr_enc_i64(e, in->rstat.rctime_sec);
	tsr_enc_u32(e, in->rstat.rctime_nsec);
	tsr_enc_str(e, in->symlink);
	tsr_enc_u32(e, in->nxattrs);
	tsr_enc_bytes(e, in->xattrs, in->xattrs_len);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

/* Walk an xattr list: every name a string of 1..NAME_MAX bytes without a
 * NUL, every value at most VALUE_MAX, exactly n of them. */
static int
xattrs_valid(const uint8_t *p, size_t len, uint32_t n)
{
	struct tsr_dec d;
	uint32_t k = 0;

	tsr_dec_init(&d, p, len);
	while (tsr_dec_remaining(&d) > 0 && tsr_dec_error(&d) == 0) {
		const void *name, *val;
		size_t nl, vl;
		tsr_dec_bytes(&d, &name, &nl, TSR_FS_XATTR_NAME_MAX);
		tsr_dec_bytes(&d, &val, &vl, TSR_FS_XATTR_VALUE_MAX);
		if (tsr_dec_error(&d) == 0 && (nl == 0 || memchr(name, 0, nl)))
			return 0;
		k++;
	}
	return tsr_dec_error(&d) == 0 && k == n;
}

int
tsr_inode_decode_from(struct tsr_dec *d, struct tsr_inode *in, char *err, size_t errlen)
{
	struct tsr_dec sub;
	const void *xp;
	char link[TSR_FS_SYMLINK_MAX + 1];
	uint8_t ver;

	memset(in, 0, sizeof(*in));
	if (tsr_dec_begin_struct(d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "inode: bad envelope");
	in->ino = tsr_dec_u64(&sub);
	in->mode = tsr_dec_u32(&sub);
	in->uid = tsr_dec_u32(&sub);
	in->gid = tsr_dec_u32(&sub);
	in->nlink = tsr_dec_u32(&sub);
	in->rdev = tsr_dec_u64(&sub);
	in->size = tsr_dec_u64(&sub);
	dec_time(&sub, &in->atime);
	dec_time(&sub, &in->mtime);
	dec_time(&sub, &in->ctime);
	dec_time(&sub, &in->btime);
	in->change = tsr_dec_u64(&sub);
	in->layout.object_size = tsr_dec_u32(&sub);
	in->layout.stripe_unit = tsr_dec_u32(&sub);
	in->layout.stripe_count = tsr_dec_u32(&sub);
	in->layout.pool = tsr_dec_i64(&sub);
	in->rstat.rbytes = tsr_dec_u64(&sub);
	in->rstat.rfiles = tsr_dec_u64(&sub);
	in->rstat.rsubdirs = tsr_dec_u64(&sub);
	in->rstat.rctime_sec = tsr_dec_i64(&sub);
	in->rstat.rctime_nsec = tsr_dec_u32(&sub);
	tsr_dec_str(&sub, link, sizeof(link));
	in->nxattrs = tsr_dec_u32(&sub);
	tsr_dec_bytes(&sub, &xp, &in->xattrs_len, TSR_FS_XATTRS_MAX);
	if (tsr_dec_error(&sub) == 0 && !xattrs_valid(xp, in->xattrs_len, in->nxattrs))
		tsr_dec_fail(&sub, -EBADMSG);
	if (tsr_dec_end_struct(d, &sub) < 0) {
		memset(in, 0, sizeof(*in));
		return tsr_errf(err, errlen, -EBADMSG, "inode: truncated, or a field out "
				"of range");
	}
	if (in->ino == 0)
		return tsr_errf(err, errlen, -EBADMSG, "inode: ino 0");
	if (link[0] && (in->symlink = strdup(link)) == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	if (in->xattrs_len) {
		if ((in->xattrs = malloc(in->xattrs_len)) == NULL) {
			tsr_inode_free(in);
			return tsr_errf(err, errlen, -ENOMEM, "out of memory");
		}
		memcpy(in->xattrs, xp, in->xattrs_len);
	}
	return 0;
}

int
tsr_inode_decode(const void *buf, size_t len, struct tsr_inode *in, char *err,
		 size_t errlen)
{
	struct tsr_dec d;
	int rc;

	tsr_dec_init(&d, buf, len);
	if ((rc = tsr_inode_decode_from(&d, in, err, errlen)) < 0)
		return rc;
	if (tsr_dec_remaining(&d) != 0) {
		tsr_inode_free(in);
		return tsr_errf(err, errlen, -EBADMSG, "inode: %zu bytes after it",
				tsr_dec_remaining(&d));
	}
	return 0;
}

/* The xattr list as (offset of the entry, its end) while walking. */
static int
xattr_find(const struct tsr_inode *in, const char *name, size_t *start, size_t *end,
	   const void **val, size_t *vlen)
{
	struct tsr_dec d;
	size_t nlen = strlen(name);

	tsr_dec_init(&d, in->xattrs, in->xattrs_len);
	while (tsr_dec_remaining(&d) > 0) {
		const void *n, *v;
		size_t nl, vl, at = in->xattrs_len - tsr_dec_remaining(&d);
		tsr_dec_bytes(&d, &n, &nl, TSR_FS_XATTR_NAME_MAX);
		tsr_dec_bytes(&d, &v, &vl, TSR_FS_XATTR_VALUE_MAX);
		if (tsr_dec_error(&d))
			return -EIO;
		if (nl == nlen && memcmp(n, name, nl) == 0) {
			*start = at;
			*end = in->xattrs_len - tsr_dec_remaining(&d);
			*val = v;
			*vlen = vl;
			return 0;
		}
	}
	return -ENODATA;
}

int
tsr_inode_xattr_get(const struct tsr_inode *in, const char *name, const void **val,
		    size_t *len)
{
	size_t s, e;

	return xattr_find(in, name, &s, &e, val, len);
}

int
tsr_inode_xattr_set(struct tsr_inode *in, const char *name, const void *val, size_t len)
{
	size_t s = 0, e = 0, vl, nlen = strlen(name);
	const void *v;
	int found = xattr_find(in, name, &s, &e, &v, &vl) == 0;
	struct tsr_enc enc;
	uint8_t *nb;
	size_t nblen;

	if (val == NULL && !found)
		return -ENODATA;
	if (nlen == 0 || nlen > TSR_FS_XATTR_NAME_MAX)
		return -ERANGE;
	if (val && len > TSR_FS_XATTR_VALUE_MAX)
		return -E2BIG;
	tsr_enc_init(&enc);
	if (found) {
		tsr_enc_raw(&enc, in->xattrs, s);
		tsr_enc_raw(&enc, in->xattrs + e, in->xattrs_len - e);
	} else {
		tsr_enc_raw(&enc, in->xattrs, in->xattrs_len);
	}
	if (val) {
		tsr_enc_bytes(&enc, name, nlen);
		tsr_enc_bytes(&enc, val, len);
	}
	if (tsr_enc_error(&enc)) {
		tsr_enc_release(&enc);
		return -ENOMEM;
	}
	if (enc.len > TSR_FS_XATTRS_MAX) {
		tsr_enc_release(&enc);
		return -ENOSPC;
	}
	nb = tsr_enc_take(&enc, &nblen);
	free(in->xattrs);
	in->xattrs = nblen ? nb : (free(nb), NULL);
	in->xattrs_len = nblen;
	in->nxattrs = in->nxattrs - (found ? 1 : 0) + (val ? 1 : 0);
	return 0;
}

int
tsr_inode_xattr_list(const struct tsr_inode *in, char **out, size_t *len)
{
	struct tsr_dec d;
	struct tsr_enc e;

	tsr_enc_init(&e);
	tsr_dec_init(&d, in->xattrs, in->xattrs_len);
	while (tsr_dec_remaining(&d) > 0 && !tsr_dec_error(&d)) {
		const void *n, *v;
		size_t nl, vl;
		tsr_dec_bytes(&d, &n, &nl, TSR_FS_XATTR_NAME_MAX);
		tsr_dec_bytes(&d, &v, &vl, TSR_FS_XATTR_VALUE_MAX);
		if (tsr_dec_error(&d))
			break;
		tsr_enc_raw(&e, n, nl);
		tsr_enc_u8(&e, 0);
	}
	if (tsr_dec_error(&d) || tsr_enc_error(&e)) {
		tsr_enc_release(&e);
		return tsr_dec_error(&d) ? -EIO : -ENOMEM;
	}
	*out = (char *)tsr_enc_take(&e, len);
	return 0;
}

uint8_t
tsr_fs_dtype(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return DT_REG;
	case S_IFDIR: return DT_DIR;
	case S_IFLNK: return DT_LNK;
	case S_IFIFO: return DT_FIFO;
	case S_IFSOCK: return DT_SOCK;
	case S_IFCHR: return DT_CHR;
	case S_IFBLK: return DT_BLK;
	}
	return DT_UNKNOWN;
}

/* ---- Dentries ---- */

int
tsr_dentry_encode(struct tsr_enc *e, const struct tsr_dentry *de)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u8(e, de->kind);
	tsr_enc_u64(e, de->ino);
	tsr_enc_u8(e, de->dtype);
	if (de->kind == TSR_DENTRY_PRIMARY)
		tsr_inode_encode(e, &de->inode);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

static int
dentry_from(struct tsr_dec *d, struct tsr_dentry *de, char *err, size_t errlen)
{
	struct tsr_dec sub;
	uint8_t ver;
	int rc;

	memset(de, 0, sizeof(*de));
	if (tsr_dec_begin_struct(d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "dentry: bad envelope");
	de->kind = tsr_dec_u8(&sub);
	de->ino = tsr_dec_u64(&sub);
	de->dtype = tsr_dec_u8(&sub);
	if (tsr_dec_error(&sub) == 0 && de->kind != TSR_DENTRY_PRIMARY &&
	    de->kind != TSR_DENTRY_REMOTE)
		return tsr_errf(err, errlen, -EBADMSG, "dentry: kind %u", de->kind);
	if (tsr_dec_error(&sub) == 0 && de->kind == TSR_DENTRY_PRIMARY) {
		if ((rc = tsr_inode_decode_from(&sub, &de->inode, err, errlen)) < 0)
			return rc;
		if (de->inode.ino != de->ino) {
			tsr_inode_free(&de->inode);
			return tsr_errf(err, errlen, -EBADMSG, "dentry: ino %" PRIx64 " holds "
					"inode %" PRIx64, de->ino, de->inode.ino);
		}
	}
	if (tsr_dec_end_struct(d, &sub) < 0 || de->ino == 0) {
		tsr_dentry_free(de);
		return tsr_errf(err, errlen, -EBADMSG, "dentry: truncated, or ino 0");
	}
	return 0;
}

int
tsr_dentry_decode(const void *buf, size_t len, struct tsr_dentry *de, char *err,
		  size_t errlen)
{
	struct tsr_dec d;
	int rc;

	tsr_dec_init(&d, buf, len);
	if ((rc = dentry_from(&d, de, err, errlen)) < 0)
		return rc;
	if (tsr_dec_remaining(&d) != 0) {
		tsr_dentry_free(de);
		return tsr_errf(err, errlen, -EBADMSG, "dentry: trailing bytes");
	}
	return 0;
}

void
tsr_dentry_free(struct tsr_dentry *de)
{
	tsr_inode_free(&de->inode);
}

/* ---- Events ---- */

const char *
tsr_fs_update_name(uint8_t type)
{
	switch (type) {
#define X(e, v, n) case v: return n;
	TSR_FS_UPDATES(X)
#undef X
	}
	return NULL;
}

struct tsr_fs_update *
tsr_fs_event_add(struct tsr_fs_event *ev, uint8_t type)
{
	struct tsr_fs_update *u;

	if (ev->n >= TSR_FS_EVENT_MAX_UPDATES)
		return NULL;
	if ((u = realloc(ev->u, (ev->n + 1) * sizeof(*u))) == NULL)
		return NULL;
	ev->u = u;
	u = &ev->u[ev->n++];
	memset(u, 0, sizeof(*u));
	u->type = type;
	return u;
}

void
tsr_fs_event_free(struct tsr_fs_event *ev)
{
	for (uint32_t i = 0; i < ev->n; i++) {
		tsr_dentry_free(&ev->u[i].de);
		tsr_inode_free(&ev->u[i].inode);
	}
	free(ev->u);
	ev->u = NULL;
	ev->n = 0;
}

int
tsr_fs_event_encode(struct tsr_enc *e, const struct tsr_fs_event *ev)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, ev->seq);
	tsr_enc_u64(e, ev->client);
	tsr_enc_u64(e, ev->tid);
	tsr_enc_u64(e, ev->ino);
	tsr_enc_u32(e, ev->n);
	for (uint32_t i = 0; i < ev->n; i++) {
		const struct tsr_fs_update *u = &ev->u[i];
		size_t m = tsr_enc_begin_struct(e, 1, 1);
		tsr_enc_u8(e, u->type);
		switch (u->type) {
		case TSR_FSU_LINK:
			tsr_enc_u64(e, u->ino);
			tsr_enc_str(e, u->name);
			tsr_dentry_encode(e, &u->de);
			break;
		case TSR_FSU_UNLINK:
			tsr_enc_u64(e, u->ino);
			tsr_enc_str(e, u->name);
			break;
		case TSR_FSU_IOBJ:
			tsr_inode_encode(e, &u->inode);
			break;
		case TSR_FSU_IOBJ_RM:
		case TSR_FSU_DIR_RM:
			tsr_enc_u64(e, u->ino);
			break;
		case TSR_FSU_DIR_NEW:
		case TSR_FSU_REPARENT:
			tsr_enc_u64(e, u->ino);
			tsr_enc_u64(e, u->parent);
			tsr_enc_str(e, u->name);
			break;
		case TSR_FSU_RSTAT:
			tsr_enc_u64(e, u->ino);
			tsr_enc_i64(e, u->dbytes);
			tsr_enc_i64(e, u->dfiles);
			tsr_enc_i64(e, u->dsubdirs);
			enc_time(e, &u->rctime);
			break;
		}
		tsr_enc_end_struct(e, m);
	}
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

static int
name_ok(const char *n)
{
	return n[0] && strchr(n, '/') == NULL && strcmp(n, ".") != 0 && strcmp(n, "..") != 0;
}

int
tsr_fs_event_decode(const void *buf, size_t len, struct tsr_fs_event *ev, char *err,
		    size_t errlen)
{
	struct tsr_dec d, sub;
	uint32_t n;
	uint8_t ver;
	int rc;

	memset(ev, 0, sizeof(*ev));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "event: bad envelope");
	ev->seq = tsr_dec_u64(&sub);
	ev->client = tsr_dec_u64(&sub);
	ev->tid = tsr_dec_u64(&sub);
	ev->ino = tsr_dec_u64(&sub);
	n = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub) || n == 0 || n > TSR_FS_EVENT_MAX_UPDATES)
		return tsr_errf(err, errlen, -EBADMSG, "event: %" PRIu32 " updates "
				"(1 .. %u)", n, TSR_FS_EVENT_MAX_UPDATES);
	if ((ev->u = calloc(n, sizeof(*ev->u))) == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		struct tsr_fs_update *u = &ev->u[i];
		struct tsr_dec us;
		int need_name = 0;
		ev->n = i + 1;
		if (tsr_dec_begin_struct(&sub, 1, &ver, &us) < 0) {
			rc = tsr_errf(err, errlen, -EBADMSG, "event %" PRIu64 ": update %"
				      PRIu32 ": bad envelope", ev->seq, i);
			goto fail;
		}
		u->type = tsr_dec_u8(&us);
		switch (u->type) {
		case TSR_FSU_LINK:
			u->ino = tsr_dec_u64(&us);
			tsr_dec_str(&us, u->name, sizeof(u->name));
			need_name = 1;
			if (tsr_dec_error(&us) == 0 &&
			    (rc = dentry_from(&us, &u->de, err, errlen)) < 0)
				goto fail;
			break;
		case TSR_FSU_UNLINK:
			u->ino = tsr_dec_u64(&us);
			tsr_dec_str(&us, u->name, sizeof(u->name));
			need_name = 1;
			break;
		case TSR_FSU_IOBJ:
			if ((rc = tsr_inode_decode_from(&us, &u->inode, err, errlen)) < 0)
				goto fail;
			u->ino = u->inode.ino;
			break;
		case TSR_FSU_IOBJ_RM:
		case TSR_FSU_DIR_RM:
			u->ino = tsr_dec_u64(&us);
			break;
		case TSR_FSU_DIR_NEW:
		case TSR_FSU_REPARENT:
			u->ino = tsr_dec_u64(&us);
			u->parent = tsr_dec_u64(&us);
			tsr_dec_str(&us, u->name, sizeof(u->name));
			need_name = 1;
			break;
		case TSR_FSU_RSTAT:
			u->ino = tsr_dec_u64(&us);
			u->dbytes = tsr_dec_i64(&us);
			u->dfiles = tsr_dec_i64(&us);
			u->dsubdirs = tsr_dec_i64(&us);
			dec_time(&us, &u->rctime);
			break;
		default:
			rc = tsr_errf(err, errlen, -EBADMSG, "event %" PRIu64 ": update %"
				      PRIu32 ": unknown type %u", ev->seq, i, u->type);
			goto fail;
		}
		if (tsr_dec_end_struct(&sub, &us) < 0 || u->ino == 0 ||
		    (need_name && !name_ok(u->name))) {
			rc = tsr_errf(err, errlen, -EBADMSG, "event %" PRIu64 ": update %"
				      PRIu32 " (%s): truncated, ino 0 or a bad name", ev->seq,
				      i, tsr_fs_update_name(u->type));
			goto fail;
		}
	}
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) != 0) {
		rc = tsr_errf(err, errlen, -EBADMSG, "event: truncated or trailing bytes");
		goto fail;
	}
	return 0;
fail:
	tsr_fs_event_free(ev);
	return rc;
}

/* ---- Names ---- */

void
tsr_fs_dir_oid(uint64_t ino, uint32_t frag, char *buf, size_t cap)
{
	snprintf(buf, cap, "d.%" PRIx64 ".%08" PRIx32, ino, frag);
}

void
tsr_fs_inode_oid(uint64_t ino, char *buf, size_t cap)
{
	snprintf(buf, cap, "i.%" PRIx64, ino);
}

void
tsr_fs_journal_oid(int32_t rank, char *buf, size_t cap)
{
	snprintf(buf, cap, "mds%" PRIx32 ".journal", (uint32_t)rank);
}

void
tsr_fs_segment_oid(int32_t rank, uint64_t seg, char *buf, size_t cap)
{
	snprintf(buf, cap, "mds%" PRIx32 ".journal.%016" PRIx64, (uint32_t)rank, seg);
}

void
tsr_fs_inos_oid(int32_t rank, char *buf, size_t cap)
{
	snprintf(buf, cap, "mds%" PRIx32 ".inos", (uint32_t)rank);
}

uint64_t
tsr_fs_rank_ino_base(int32_t rank)
{
	return (uint64_t)(uint32_t)(rank + 1) << 40;
}

uint64_t
tsr_fs_dir_cookie(const char *name)
{
	size_t len = strlen(name);
	uint64_t h = (uint64_t)tsr_xxh32(name, len, 0x7e55e7a) << 32 |
		     tsr_xxh32(name, len, 0x3a7e55e);

	return (h >> 2) + 3;
}

void
tsr_fs_hex16(uint64_t v, char buf[17])
{
	snprintf(buf, 17, "%016" PRIx64, v);
}

int
tsr_fs_unhex16(const void *p, size_t len, uint64_t *v)
{
	const char *s = p;
	uint64_t x = 0;

	if (len != 16)
		return -EINVAL;
	for (size_t i = 0; i < 16; i++) {
		int c = s[i];
		int dgt = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (dgt < 0)
			return -EINVAL;
		x = x << 4 | (uint64_t)dgt;
	}
	*v = x;
	return 0;
}
