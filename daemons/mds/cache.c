/* cache.c — the namespace cache (mds.h): directories and inode objects
 * loaded from the metadata pool, events applied to them, written back.
 *
 * Every cached directory has its parent cached too, up to the root, so a
 * directory's own inode (in its parent's entry) and the chain an rstat
 * change climbs are always at hand.
 *
 * Versions.  A directory or inode object remembers the seq of the last
 * event applied to it (ver), in memory and in its object.  Replay applies
 * an update only to an object whose ver is below the event's seq: what was
 * written back before a crash is not applied twice (an rstat delta applied
 * twice would count twice).  An rstat change climbing the ancestors sets
 * each ancestor's container to the event's seq as well, for the same
 * reason.
 */
#include "mds.h"

#include "log/log.h"
#include "util/util.h"

#include <tessera/client.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define LOAD_PAGE 16384u
#define MAX_KEYS 65536u            /* keys in one omap step (the OSD's limit) */

static int
ent_cmp(uint64_t cookie, const char *name, const struct mentry *e)
{
	if (cookie != e->cookie)
		return cookie < e->cookie ? -1 : 1;
	return strcmp(name, e->name);
}

/* The position of (cookie, name) in d, or where it would go. */
static size_t
dir_pos(const struct mdir *d, uint64_t cookie, const char *name, int *found)
{
	size_t lo = 0, hi = d->n;

	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = ent_cmp(cookie, name, d->ents[mid]);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

struct mentry *
mds_dir_find(struct mdir *d, const char *name)
{
	int found;
	size_t pos = dir_pos(d, tsr_fs_dir_cookie(name), name, &found);

	return found ? d->ents[pos] : NULL;
}

static void
ent_free(struct mentry *e)
{
	if (e == NULL)
		return;
	tsr_dentry_free(&e->de);
	free(e->name);
	free(e);
}

static void
dir_free(struct mds *m, struct mdir *d)
{
	for (size_t i = 0; i < d->n; i++) {
		struct mentry *e = d->ents[i];
		if (tsr_u64map_get(&m->where, e->de.ino) == e)
			tsr_u64map_del(&m->where, e->de.ino);
		ent_free(e);
	}
	for (size_t i = 0; i < d->nremoved; i++)
		free(d->removed[i]);
	free(d->removed);
	free(d->ents);
	free(d->name);
	free(d);
}

/* Put e (its name and dentry set) into d, replacing an entry of that name.
 * take: e becomes where its inode is found (an event applied); else only
 * when the index has none (a directory loaded: during replay its copy on
 * disk may be older than one the cache holds elsewhere, which stays). */
static int
dir_put(struct mds *m, struct mdir *d, struct mentry *e, int take)
{
	int found;
	size_t pos;

	e->cookie = tsr_fs_dir_cookie(e->name);
	e->dir = d;
	pos = dir_pos(d, e->cookie, e->name, &found);
	if (found) {
		struct mentry *old = d->ents[pos];
		if (tsr_u64map_get(&m->where, old->de.ino) == old)
			tsr_u64map_del(&m->where, old->de.ino);
		ent_free(old);
		d->ents[pos] = e;
	} else {
		if (d->n == d->cap) {
			size_t cap = d->cap ? d->cap * 2 : 16;
			struct mentry **ne = realloc(d->ents, cap * sizeof(*ne));
			if (ne == NULL)
				return -ENOMEM;
			d->ents = ne;
			d->cap = cap;
		}
		memmove(d->ents + pos + 1, d->ents + pos, (d->n - pos) * sizeof(*d->ents));
		d->ents[pos] = e;
		d->n++;
	}
	if (e->de.kind == TSR_DENTRY_PRIMARY &&
	    (take || tsr_u64map_get(&m->where, e->de.ino) == NULL) &&
	    tsr_u64map_put(&m->where, e->de.ino, e) < 0)
		return -ENOMEM;
	return 0;
}

static void
dir_remove(struct mds *m, struct mdir *d, const char *name, int note)
{
	int found;
	size_t pos = dir_pos(d, tsr_fs_dir_cookie(name), name, &found);
	struct mentry *e;

	if (!found)
		return;
	e = d->ents[pos];
	if (tsr_u64map_get(&m->where, e->de.ino) == e)
		tsr_u64map_del(&m->where, e->de.ino);
	memmove(d->ents + pos, d->ents + pos + 1, (d->n - pos - 1) * sizeof(*d->ents));
	d->n--;
	if (note) {
		char **nr = realloc(d->removed, (d->nremoved + 1) * sizeof(*nr));
		if (nr) {
			d->removed = nr;
			d->removed[d->nremoved++] = e->name;
			e->name = NULL;
		}
	}
	ent_free(e);
}

/* Does an update of event seq apply to an object at version ver that
 * last took event taken?  Live, always; in replay, when the object has
 * not seen the event — or is taking it right now (an earlier update of
 * the same event set ver to seq). */
static int
takes(int replay, uint64_t ver, uint64_t taken, uint64_t seq)
{
	return !replay || ver < seq || taken == seq;
}

static void
touch(uint64_t *ver, uint64_t *dirty_since, uint64_t *taken, uint64_t seq)
{
	*ver = seq;
	*taken = seq;
	if (*dirty_since == 0)
		*dirty_since = seq;
}

/* ---- Loading ---- */

/* The backtrace: envelope v1 { u64 parent, string name }. */
static int
bt_encode(struct tsr_enc *e, const struct mdir *d)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, d->parent);
	tsr_enc_str(e, d->name);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

static int
bt_decode(const void *buf, size_t len, uint64_t *parent, char *name, size_t cap)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return -EBADMSG;
	*parent = tsr_dec_u64(&sub);
	tsr_dec_str(&sub, name, cap);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) != 0)
		return -EBADMSG;
	return 0;
}

static int
load_obj(struct mds *m, uint64_t ino, struct mobj **out)
{
	char oid[64], ver[17], err[256];
	uint64_t size = 0, got = 0;
	size_t vlen = 0;
	int rc, rc1 = 0, rc2 = 0;
	struct tsr_op *op = tsr_op_create();
	uint8_t *buf = NULL;
	struct mobj *o;

	tsr_fs_inode_oid(ino, oid, sizeof(oid));
	tsr_op_stat(op, &size, NULL, NULL);
	tsr_op_getxattr(op, "ver", ver, sizeof(ver), &vlen, &rc1);
	rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
	tsr_op_destroy(op);
	if (rc < 0)
		return rc;
	if (size == 0 || size > (1u << 20))
		return -EIO;
	buf = tsr_xcalloc(1, size);
	op = tsr_op_create();
	tsr_op_read(op, 0, size, buf, &got, &rc2);
	rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
	tsr_op_destroy(op);
	m->n_loads++;
	o = tsr_xcalloc(1, sizeof(*o));
	o->exists = 1;
	if (rc < 0 || got != size ||
	    (rc = tsr_inode_decode(buf, size, &o->in, err, sizeof(err))) < 0 ||
	    o->in.ino != ino) {
		tsr_log(TSR_SUB_MDS, TSR_LOG_ERROR, "inode object %s: %s", oid,
			rc < 0 ? err : "holds another inode");
		free(buf);
		free(o);
		return rc < 0 ? rc : -EIO;
	}
	free(buf);
	if (rc1 == 0 && tsr_fs_unhex16(ver, vlen, &o->ver) < 0) {
		tsr_log(TSR_SUB_MDS, TSR_LOG_ERROR, "inode object %s: a bad version", oid);
		tsr_inode_free(&o->in);
		free(o);
		return -EIO;
	}
	if (tsr_u64map_put(&m->objs, ino, o) < 0) {
		tsr_inode_free(&o->in);
		free(o);
		return -ENOMEM;
	}
	*out = o;
	return 0;
}

static int
obj_get(struct mds *m, uint64_t ino, struct mobj **out)
{
	if ((*out = tsr_u64map_get(&m->objs, ino)) != NULL)
		return (*out)->deleted ? -ENOENT : 0;
	return load_obj(m, ino, out);
}

/* Read directory ino's object into a new mdir (not yet in the cache). */
static int
load_dir(struct mds *m, uint64_t ino, struct mdir **out)
{
	char oid[64], ver[17], bt[TSR_FS_NAME_MAX + 64], name[TSR_FS_NAME_MAX + 1];
	char after[TSR_FS_NAME_MAX + 1] = "", err[256];
	size_t vlen = 0, btlen = 0;
	struct mdir *d = tsr_xcalloc(1, sizeof(*d));
	int rc, first = 1;

	tsr_fs_dir_oid(ino, 0, oid, sizeof(oid));
	d->ino = ino;
	d->exists = 1;
	for (;;) {
		struct tsr_op *op = tsr_op_create();
		struct tsr_kvs kvs = { 0 };
		int rc1 = 0, rc2 = 0, rc3 = 0;
		if (first) {
			tsr_op_getxattr(op, "ver", ver, sizeof(ver), &vlen, &rc1);
			tsr_op_getxattr(op, "bt", bt, sizeof(bt), &btlen, &rc2);
		}
		tsr_op_omap_get_range(op, after[0] ? after : NULL, strlen(after), NULL, 0,
				      LOAD_PAGE, &kvs, &rc3);
		rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
		tsr_op_destroy(op);
		m->n_loads++;
		if (rc < 0 && first && (rc1 == -ENODATA || rc2 == -ENODATA))
			rc = -EIO; /* a directory object always has both */
		if (rc < 0) {
			if (rc != -ENOENT)
				tsr_log(TSR_SUB_MDS, TSR_LOG_ERROR, "directory %s: %s", oid,
					strerror(-rc));
			tsr_kvs_free(&kvs);
			dir_free(m, d);
			return rc;
		}
		if (first) {
			if (tsr_fs_unhex16(ver, vlen, &d->ver) < 0 ||
			    bt_decode(bt, btlen, &d->parent, name, sizeof(name)) < 0 ||
			    (ino != TSR_FS_ROOT_INO && (d->parent == 0 || name[0] == '\0'))) {
				tsr_log(TSR_SUB_MDS, TSR_LOG_ERROR, "directory %s: a bad version "
					"or backtrace", oid);
				tsr_kvs_free(&kvs);
				dir_free(m, d);
				return -EIO;
			}
			if (name[0])
				d->name = tsr_xstrdup(name);
			first = 0;
		}
		for (size_t i = 0; i < kvs.n; i++) {
			struct mentry *e = tsr_xcalloc(1, sizeof(*e));
			size_t kl = kvs.kv[i].key_len;
			if (kl == 0 || kl > TSR_FS_NAME_MAX || memchr(kvs.kv[i].key, 0, kl) ||
			    (rc = tsr_dentry_decode(kvs.kv[i].val, kvs.kv[i].val_len, &e->de,
						    err, sizeof(err))) < 0) {
				tsr_log(TSR_SUB_MDS, TSR_LOG_ERROR, "directory %s: entry %zu: %s",
					oid, d->n, kl && kl <= TSR_FS_NAME_MAX ? err : "a bad name");
				free(e);
				tsr_kvs_free(&kvs);
				dir_free(m, d);
				return -EIO;
			}
			e->name = tsr_xcalloc(1, kl + 1);
			memcpy(e->name, kvs.kv[i].key, kl);
			memcpy(after, kvs.kv[i].key, kl);
			after[kl] = '\0';
			if ((rc = dir_put(m, d, e, 0)) < 0) {
				tsr_kvs_free(&kvs);
				dir_free(m, d);
				return rc;
			}
		}
		int more = kvs.more && kvs.n > 0;
		tsr_kvs_free(&kvs);
		if (!more)
			break;
	}
	*out = d;
	return 0;
}

int
mds_dir_get(struct mds *m, uint64_t ino, struct mdir **out)
{
	struct mdir *d = tsr_u64map_get(&m->dirs, ino), *p;
	int rc;

	if (d) {
		d->used = ++m->clock;
		*out = d;
		return d->deleted ? -ENOENT : 0;
	}
	if ((rc = load_dir(m, ino, &d)) < 0)
		return rc;
	d->used = ++m->clock;
	if ((rc = tsr_u64map_put(&m->dirs, ino, d)) < 0) {
		dir_free(m, d);
		return rc;
	}
	/* the ancestors (every cached directory has its parent cached) */
	if (d->parent && (rc = mds_dir_get(m, d->parent, &p)) == -ENOENT && m->replaying) {
		/* its backtrace names a parent removed later: a REPARENT to
		 * come in the journal fixes it (mds_replay_done drops what is
		 * still an orphan at the end) */
		d->orphan = 1;
		*out = d;
		return 0;
	}
	if (d->parent && rc < 0) {
		/* in a replay, a directory whose parent went later (its
		 * removal written back) is one the journal removes too */
		tsr_log(TSR_SUB_MDS, m->replaying ? TSR_LOG_DEBUG : TSR_LOG_ERROR,
			"directory %" PRIx64 ": its parent %" PRIx64 " does not load: %s",
			ino, d->parent, strerror(-rc));
		tsr_u64map_del(&m->dirs, ino);
		dir_free(m, d);
		return rc;
	}
	*out = d;
	return 0;
}

struct tsr_inode *
mds_dir_inode(struct mds *m, struct mdir *d)
{
	struct mentry *e;
	struct mobj *o;

	if (d->ino == TSR_FS_ROOT_INO)
		return obj_get(m, TSR_FS_ROOT_INO, &o) == 0 ? &o->in : NULL;
	e = tsr_u64map_get(&m->where, d->ino);
	return e ? &e->de.inode : NULL;
}

int
mds_inode_find(struct mds *m, uint64_t ino, uint64_t hint, struct tsr_inode **out)
{
	struct mentry *e = tsr_u64map_get(&m->where, ino);
	struct mobj *o = tsr_u64map_get(&m->objs, ino);
	struct mdir *d;

	if (ino == TSR_FS_ROOT_INO || (o && !o->deleted)) {
		if (obj_get(m, ino, &o) < 0)
			return -ESTALE;
		*out = &o->in;
		return 0;
	}
	if (e) {
		*out = &e->de.inode;
		return 0;
	}
	/* not cached: the directory it was found in, or itself as a
	 * directory (whose object names its parent), then its own object */
	if (hint && mds_dir_get(m, hint, &d) == 0 &&
	    (e = tsr_u64map_get(&m->where, ino)) != NULL) {
		*out = &e->de.inode;
		return 0;
	}
	if (mds_dir_get(m, ino, &d) == 0 && (e = tsr_u64map_get(&m->where, ino)) != NULL) {
		*out = &e->de.inode;
		return 0;
	}
	if (obj_get(m, ino, &o) == 0) {
		*out = &o->in;
		return 0;
	}
	return -ESTALE;
}

/* ---- Applying events ---- */

/* Where directory d's own inode is kept: its entry in the parent, or the
 * root's object; with the container's version fields. */
static int
container_of(struct mds *m, struct mdir *d, struct tsr_inode **in, uint64_t **ver,
	     uint64_t **dirty_since, uint64_t **taken, struct mdir **pdir,
	     struct mentry **pent)
{
	struct mdir *p;
	struct mentry *e;
	struct mobj *o;
	int rc;

	*pdir = NULL;
	*pent = NULL;
	if (d->ino == TSR_FS_ROOT_INO) {
		if ((rc = obj_get(m, TSR_FS_ROOT_INO, &o)) < 0)
			return rc;
		*in = &o->in;
		*ver = &o->ver;
		*dirty_since = &o->dirty_since;
		*taken = &o->taken;
		return 0;
	}
	if ((rc = mds_dir_get(m, d->parent, &p)) < 0)
		return rc;
	if ((e = mds_dir_find(p, d->name)) == NULL || e->de.ino != d->ino ||
	    e->de.kind != TSR_DENTRY_PRIMARY)
		return m->replaying ? -ENOENT : -EIO;
	*in = &e->de.inode;
	*ver = &p->ver;
	*dirty_since = &p->dirty_since;
	*taken = &p->taken;
	*pdir = p;
	*pent = e;
	return 0;
}

static void
rctime_max(struct tsr_rstat *r, const struct tsr_ftime *t)
{
	if (tsr_ftime_before((struct tsr_ftime){ r->rctime_sec, r->rctime_nsec }, *t)) {
		r->rctime_sec = t->sec;
		r->rctime_nsec = t->nsec;
	}
}

static uint64_t
add_clamped(uint64_t v, int64_t d)
{
	if (d < 0 && (uint64_t)-d > v)
		return 0;
	return v + (uint64_t)d;
}

static int
apply_rstat(struct mds *m, const struct tsr_fs_update *u, uint64_t seq, int replay)
{
	uint64_t cur = u->ino;

	for (int depth = 0; cur && depth < 4096; depth++) {
		struct mdir *d, *p;
		struct mentry *e;
		struct tsr_inode *in;
		uint64_t *ver, *ds, *tk;
		int rc;
		/* in a replay, an ancestor gone later (or moved: the entry is
		 * elsewhere now) ends the climb: what is above was written
		 * back with the event's effect, or gets it from a later one */
		if ((rc = mds_dir_get(m, cur, &d)) < 0)
			return rc == -ENOENT && replay ? 0 : rc;
		if ((rc = container_of(m, d, &in, &ver, &ds, &tk, &p, &e)) < 0)
			return rc == -ENOENT && replay ? 0 : rc;
		if (takes(replay, *ver, *tk, seq)) {
			in->rstat.rbytes = add_clamped(in->rstat.rbytes, u->dbytes);
			in->rstat.rfiles = add_clamped(in->rstat.rfiles, u->dfiles);
			in->rstat.rsubdirs = add_clamped(in->rstat.rsubdirs, u->dsubdirs);
			rctime_max(&in->rstat, &u->rctime);
			touch(ver, ds, tk, seq);
			if (e)
				e->dirty = 1;
		}
		cur = d->parent;
	}
	return 0;
}

static struct mdir *
dir_new(uint64_t ino, uint64_t parent, const char *name)
{
	struct mdir *d = tsr_xcalloc(1, sizeof(*d));

	d->ino = ino;
	d->parent = parent;
	d->name = name && name[0] ? tsr_xstrdup(name) : NULL;
	d->bt_dirty = 1;
	return d;
}

static int
apply_one(struct mds *m, const struct tsr_fs_update *u, uint64_t seq, int replay)
{
	struct mdir *d;
	struct mobj *o;
	struct mentry *e;
	int rc;

	switch (u->type) {
	case TSR_FSU_LINK:
	case TSR_FSU_UNLINK:
		if ((rc = mds_dir_get(m, u->ino, &d)) < 0)
			return replay && rc == -ENOENT ? 0 : rc;
		if (!takes(replay, d->ver, d->taken, seq))
			return 0;
		if (u->type == TSR_FSU_UNLINK) {
			/* noted even before the object's first write-back lands:
			 * it may land with the name in it (removing an absent
			 * omap key is harmless) */
			dir_remove(m, d, u->name, 1);
		} else {
			e = tsr_xcalloc(1, sizeof(*e));
			e->name = tsr_xstrdup(u->name);
			e->de = u->de;
			e->de.inode.symlink = NULL;
			e->de.inode.xattrs = NULL;
			if ((rc = tsr_inode_copy(&e->de.inode, &u->de.inode)) < 0 ||
			    (rc = dir_put(m, d, e, 1)) < 0) {
				ent_free(e);
				return rc;
			}
			e->dirty = 1;
		}
		touch(&d->ver, &d->dirty_since, &d->taken, seq);
		return 0;
	case TSR_FSU_IOBJ:
		if ((o = tsr_u64map_get(&m->objs, u->inode.ino)) == NULL) {
			rc = replay ? load_obj(m, u->inode.ino, &o) : -ENOENT;
			if (rc == -ENOENT) {
				o = tsr_xcalloc(1, sizeof(*o));
				if (tsr_u64map_put(&m->objs, u->inode.ino, o) < 0) {
					free(o);
					return -ENOMEM;
				}
			} else if (rc < 0) {
				return rc;
			}
		}
		if (!takes(replay, o->ver, o->taken, seq))
			return 0;
		tsr_inode_free(&o->in);
		if ((rc = tsr_inode_copy(&o->in, &u->inode)) < 0)
			return rc;
		o->deleted = 0;
		touch(&o->ver, &o->dirty_since, &o->taken, seq);
		return 0;
	case TSR_FSU_IOBJ_RM:
		if ((rc = obj_get(m, u->ino, &o)) < 0)
			return rc == -ENOENT ? 0 : rc;
		if (!takes(replay, o->ver, o->taken, seq))
			return 0;
		o->deleted = 1;
		touch(&o->ver, &o->dirty_since, &o->taken, seq);
		return 0;
	case TSR_FSU_DIR_NEW:
		if ((d = tsr_u64map_get(&m->dirs, u->ino)) != NULL && !d->deleted)
			return replay ? 0 : -EEXIST;
		if (replay && d == NULL) {
			rc = load_dir(m, u->ino, &d);
			if (rc == 0) {
				if (tsr_u64map_put(&m->dirs, u->ino, d) < 0) {
					dir_free(m, d);
					return -ENOMEM;
				}
				return 0; /* written back already */
			}
			if (rc != -ENOENT)
				return rc;
		}
		if (d) { /* a deleted one not yet written back: made again */
			tsr_u64map_del(&m->dirs, u->ino);
			dir_free(m, d);
		}
		d = dir_new(u->ino, u->parent, u->name);
		if (tsr_u64map_put(&m->dirs, u->ino, d) < 0) {
			dir_free(m, d);
			return -ENOMEM;
		}
		touch(&d->ver, &d->dirty_since, &d->taken, seq);
		return 0;
	case TSR_FSU_DIR_RM:
		if ((rc = mds_dir_get(m, u->ino, &d)) < 0)
			return rc == -ENOENT ? 0 : rc;
		if (!takes(replay, d->ver, d->taken, seq))
			return 0;
		d->deleted = 1;
		touch(&d->ver, &d->dirty_since, &d->taken, seq);
		return 0;
	case TSR_FSU_REPARENT:
		if ((rc = mds_dir_get(m, u->ino, &d)) < 0)
			return replay && rc == -ENOENT ? 0 : rc;
		if (!takes(replay, d->ver, d->taken, seq))
			return 0;
		d->parent = u->parent;
		free(d->name);
		d->name = tsr_xstrdup(u->name);
		if (d->orphan) {
			struct mdir *np;
			if ((rc = mds_dir_get(m, d->parent, &np)) < 0)
				return rc;
			d->orphan = 0;
		}
		d->bt_dirty = 1;
		touch(&d->ver, &d->dirty_since, &d->taken, seq);
		return 0;
	case TSR_FSU_RSTAT:
		return apply_rstat(m, u, seq, replay);
	}
	return -EINVAL;
}

int
mds_apply(struct mds *m, const struct tsr_fs_event *ev, int replay, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < ev->n; i++) {
		int rc = apply_one(m, &ev->u[i], ev->seq, replay);
		if (rc < 0)
			return tsr_errf(err, errlen, rc, "event %" PRIu64 ", update %" PRIu32
					" (%s of %" PRIx64 "): %s", ev->seq, i,
					tsr_fs_update_name(ev->u[i].type), ev->u[i].ino,
					strerror(-rc));
	}
	if (ev->seq > m->applied)
		m->applied = ev->seq;
	return 0;
}

/* ---- Write-back ---- */

struct flush {
	struct mds *m;
	uint64_t ino;
	int is_dir;
	int removing;                /* the object is being removed */
	uint64_t ver;
	char **removed;              /* names sent for removal */
	size_t nremoved;
	/* the op's buffers */
	struct tsr_op *op;
	void **keys, **vals;
	size_t *klens, *vlens;
	size_t nset;
	uint8_t *bt, *inode;
	int result;
};

static void
flush_free(struct flush *f)
{
	for (size_t i = 0; i < f->nremoved; i++)
		free(f->removed[i]);
	free(f->removed);
	for (size_t i = 0; i < f->nset; i++)
		free(f->vals[i]);
	free(f->keys);
	free(f->vals);
	free(f->klens);
	free(f->vlens);
	free(f->bt);
	free(f->inode);
	tsr_op_destroy(f->op);
	free(f);
}

static void
flushed(void *arg)
{
	struct flush *f = arg;
	struct mds *m = f->m;

	m->flushes--;
	if (f->result == -ECANCELED) {
		/* a later version is there: a successor's */
		flush_free(f);
		mds_lost_rank(m, "a directory or inode object holds a later version than "
			      "ours: a later MDS holds the rank");
		return;
	}
	if (f->is_dir) {
		struct mdir *d = tsr_u64map_get(&m->dirs, f->ino);
		if (d) {
			d->flushing = 0;
			if (f->result == -EEXIST)
				d->exists = 1; /* an earlier write-back landed */
			if (f->result < 0) {
				/* everything again: the entries, the removals, the backtrace */
				for (size_t i = 0; i < d->n; i++)
					d->ents[i]->dirty = 1;
				for (size_t i = 0; i < f->nremoved; i++) {
					char **nr = realloc(d->removed,
							    (d->nremoved + 1) * sizeof(*nr));
					if (nr == NULL)
						break;
					d->removed = nr;
					d->removed[d->nremoved++] = f->removed[i];
					f->removed[i] = NULL;
				}
				d->bt_dirty = 1;
			} else {
				d->exists = !d->deleted;
				d->dirty_since = d->ver == f->ver ? 0 : f->ver + 1;
				if (d->deleted && d->dirty_since == 0) {
					tsr_u64map_del(&m->dirs, d->ino);
					dir_free(m, d);
				}
			}
		}
	} else {
		struct mobj *o = tsr_u64map_get(&m->objs, f->ino);
		if (o) {
			o->flushing = 0;
			if (f->result == -EEXIST)
				o->exists = 1;
			if (f->result == 0) {
				o->exists = !o->deleted;
				o->dirty_since = o->ver == f->ver ? 0 : f->ver + 1;
				if (o->deleted && o->dirty_since == 0) {
					tsr_u64map_del(&m->objs, f->ino);
					tsr_inode_free(&o->in);
					free(o);
				}
			}
		}
	}
	if (f->result < 0)
		tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "writing back %s %" PRIx64 ": %s (tried "
			"again later)", f->is_dir ? "directory" : "inode", f->ino,
			tsr_op_why(f->op)[0] ? tsr_op_why(f->op) : strerror(-f->result));
	else
		m->n_flushes++;
	flush_free(f);
	mds_journal_trim(m);
}

static void
flush_done(void *arg, int result, const struct tsr_objver *ver)
{
	struct flush *f = arg;

	(void)ver;
	/* a removal whose object is gone already (an earlier one landed and
	 * its answer was lost) is done */
	f->result = result == -ENOENT && f->removing ? 0 : result;
	if (mds_post(f->m, flushed, f) < 0)
		flush_free(f); /* shutting down: the journal keeps it */
}

static void
flush_submit(struct mds *m, struct flush *f, const char *oid)
{
	int rc;

	m->flushes++;
	rc = tsr_op_submit(m->oc, m->meta_pool, oid, strlen(oid), f->op, flush_done, f);
	if (rc < 0) {
		f->result = rc;
		flushed(f);
	}
}

/* Names in byte order (strcmp compares as unsigned chars, as the OSD). */
static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
cmp_ents(const void *a, const void *b)
{
	return strcmp((*(struct mentry *const *)a)->name, (*(struct mentry *const *)b)->name);
}

static void
flush_dir(struct mds *m, struct mdir *d)
{
	struct flush *f = tsr_xcalloc(1, sizeof(*f));
	char oid[64], ver[17];
	struct tsr_enc e;
	size_t btlen;

	f->m = m;
	f->ino = d->ino;
	f->is_dir = 1;
	f->ver = d->ver;
	f->op = tsr_op_create();
	d->flushing = d->ver;
	tsr_fs_dir_oid(d->ino, 0, oid, sizeof(oid));
	tsr_fs_hex16(d->ver, ver);
	/* Guarded: an object written at a later version is a successor's
	 * (an MDS that lost its rank must not write over it: ECANCELED ends
	 * this one); a new object is made exclusively (EEXIST: an earlier
	 * write-back landed after all, and the next goes guarded). */
	if (d->exists)
		tsr_op_cmpxattr(f->op, "ver", TSR_CMP_LE, ver, 16);
	else
		tsr_op_create_obj(f->op, !d->deleted);
	if (d->deleted) {
		tsr_op_remove(f->op);
		f->removing = 1;
		flush_submit(m, f, oid);
		return;
	}
	/* removals first: a name removed and made again is set after.  An
	 * omap step takes its keys in increasing byte order, once each:
	 * names are sorted (the cache orders entries by cookie) and a name
	 * removed twice goes once. */
	f->removed = d->removed;
	f->nremoved = d->nremoved;
	d->removed = NULL;
	d->nremoved = 0;
	if (f->nremoved > 1) /* (qsort takes no NULL, even for none) */
		qsort(f->removed, f->nremoved, sizeof(*f->removed), cmp_names);
	{
		size_t w = 0;
		for (size_t i = 0; i < f->nremoved; i++) {
			if (w && strcmp(f->removed[w - 1], f->removed[i]) == 0)
				free(f->removed[i]);
			else
				f->removed[w++] = f->removed[i];
		}
		f->nremoved = w;
	}
	for (size_t i = 0; i < f->nremoved; i += MAX_KEYS) {
		size_t k = f->nremoved - i < MAX_KEYS ? f->nremoved - i
								     : MAX_KEYS;
		size_t *lens = tsr_xcalloc(k, sizeof(*lens));
		for (size_t j = 0; j < k; j++)
			lens[j] = strlen(f->removed[i + j]);
		tsr_op_omap_rm(f->op, (const void *const *)(f->removed + i), lens, k);
		free(lens);
	}
	f->keys = tsr_xcalloc(d->n + 1, sizeof(*f->keys));
	f->vals = tsr_xcalloc(d->n + 1, sizeof(*f->vals));
	f->klens = tsr_xcalloc(d->n + 1, sizeof(*f->klens));
	f->vlens = tsr_xcalloc(d->n + 1, sizeof(*f->vlens));
	struct mentry **dirty = tsr_xcalloc(d->n + 1, sizeof(*dirty));
	size_t ndirty = 0;
	for (size_t i = 0; i < d->n; i++)
		if (d->ents[i]->dirty)
			dirty[ndirty++] = d->ents[i];
	if (ndirty > 1)
		qsort(dirty, ndirty, sizeof(*dirty), cmp_ents);
	for (size_t i = 0; i < ndirty; i++) {
		struct mentry *en = dirty[i];
		tsr_enc_init(&e);
		tsr_dentry_encode(&e, &en->de);
		f->keys[f->nset] = en->name;
		f->klens[f->nset] = strlen(en->name);
		f->vals[f->nset] = tsr_enc_take(&e, &f->vlens[f->nset]);
		f->nset++;
		en->dirty = 0;
	}
	free(dirty);
	for (size_t i = 0; i < f->nset; i += MAX_KEYS) {
		size_t k = f->nset - i < MAX_KEYS ? f->nset - i
								 : MAX_KEYS;
		tsr_op_omap_set(f->op, (const void *const *)(f->keys + i), f->klens + i,
				(const void *const *)(f->vals + i), f->vlens + i, k);
	}
	tsr_op_setxattr(f->op, "ver", ver, 16);
	if (d->bt_dirty || !d->exists) {
		tsr_enc_init(&e);
		bt_encode(&e, d);
		f->bt = tsr_enc_take(&e, &btlen);
		tsr_op_setxattr(f->op, "bt", f->bt, btlen);
		d->bt_dirty = 0;
	}
	flush_submit(m, f, oid);
}

static void
flush_obj(struct mds *m, struct mobj *o)
{
	struct flush *f = tsr_xcalloc(1, sizeof(*f));
	char oid[64], ver[17];
	struct tsr_enc e;
	size_t len;

	f->m = m;
	f->ino = o->in.ino;
	f->ver = o->ver;
	f->op = tsr_op_create();
	o->flushing = o->ver;
	tsr_fs_inode_oid(o->in.ino, oid, sizeof(oid));
	tsr_fs_hex16(o->ver, ver);
	/* guarded as a directory's (flush_dir) */
	if (o->exists)
		tsr_op_cmpxattr(f->op, "ver", TSR_CMP_LE, ver, 16);
	else
		tsr_op_create_obj(f->op, !o->deleted);
	if (o->deleted) {
		tsr_op_remove(f->op);
		f->removing = 1;
	} else {
		tsr_enc_init(&e);
		tsr_inode_encode(&e, &o->in);
		f->inode = tsr_enc_take(&e, &len);
		tsr_op_write_full(f->op, f->inode, len);
		tsr_op_setxattr(f->op, "ver", ver, 16);
	}
	flush_submit(m, f, oid);
}

struct wb_walk {
	struct mds *m;
	struct mdir **dirs;
	size_t nd;
	struct mobj **objs;
	size_t no;
};

static int
collect_dir(void *arg, uint64_t key, void *val)
{
	struct wb_walk *w = arg;
	struct mdir *d = val;

	(void)key;
	if (d->dirty_since && !d->flushing && d->ver <= w->m->committed) {
		w->dirs = realloc(w->dirs, (w->nd + 1) * sizeof(*w->dirs));
		if (w->dirs == NULL)
			abort();
		w->dirs[w->nd++] = d;
	}
	return 0;
}

static int
collect_obj(void *arg, uint64_t key, void *val)
{
	struct wb_walk *w = arg;
	struct mobj *o = val;

	(void)key;
	if (o->dirty_since && !o->flushing && o->ver <= w->m->committed) {
		w->objs = realloc(w->objs, (w->no + 1) * sizeof(*w->objs));
		if (w->objs == NULL)
			abort();
		w->objs[w->no++] = o;
	}
	return 0;
}

void
mds_writeback(struct mds *m)
{
	struct wb_walk w = { .m = m };

	/* only while the lease holds: past it a successor may be writing */
	if (m->oc == NULL || m->rank < 0 || m->replaying || !mds_lease_ok(m))
		return;
	tsr_u64map_each(&m->dirs, collect_dir, &w);
	tsr_u64map_each(&m->objs, collect_obj, &w);
	for (size_t i = 0; i < w.nd; i++)
		flush_dir(m, w.dirs[i]);
	for (size_t i = 0; i < w.no; i++)
		flush_obj(m, w.objs[i]);
	free(w.dirs);
	free(w.objs);
}

struct floor_walk {
	uint64_t floor;
	int dirs;
};

static int
floor_of(void *arg, uint64_t key, void *val)
{
	struct floor_walk *w = arg;
	uint64_t ds = w->dirs ? ((struct mdir *)val)->dirty_since
			      : ((struct mobj *)val)->dirty_since;

	(void)key;
	if (ds && (w->floor == 0 || ds < w->floor))
		w->floor = ds;
	return 0;
}

uint64_t
mds_dirty_floor(struct mds *m)
{
	struct floor_walk w = { 0, 1 };

	tsr_u64map_each(&m->dirs, floor_of, &w);
	w.dirs = 0;
	tsr_u64map_each(&m->objs, floor_of, &w);
	return w.floor;
}

/* ---- The end of a replay ---- */

static int
index_dir(void *arg, uint64_t key, void *val)
{
	struct mds *m = arg;
	struct mdir *d = val;

	(void)key;
	for (size_t i = 0; i < d->n; i++)
		if (d->ents[i]->de.kind == TSR_DENTRY_PRIMARY)
			tsr_u64map_put(&m->where, d->ents[i]->de.ino, d->ents[i]);
	return 0;
}

static int
collect_orphan(void *arg, uint64_t key, void *val)
{
	struct tsr_u64map *orphans = arg;
	struct mdir *d = val;

	if (d->orphan)
		tsr_u64map_put(orphans, key, d);
	return 0;
}

static int
drop_orphan(void *arg, uint64_t key, void *val)
{
	struct mds *m = arg;

	tsr_log(TSR_SUB_MDS, TSR_LOG_WARN, "directory %" PRIx64 ": its parent is gone and "
		"no event moved it: dropped from the cache", key);
	tsr_u64map_del(&m->dirs, key);
	dir_free(m, val);
	return 0;
}

void
mds_replay_done(struct mds *m)
{
	struct tsr_u64map orphans = { 0 };

	/* directories still orphans belong nowhere now */
	tsr_u64map_each(&m->dirs, collect_orphan, &orphans);
	tsr_u64map_each(&orphans, drop_orphan, m);
	tsr_u64map_free(&orphans);
	/* the index from what replay left: loads during it did not take
	 * entries over (dir_put), so an entry moved by a rename whose source
	 * was loaded first may have no index */
	tsr_u64map_free(&m->where);
	tsr_u64map_each(&m->dirs, index_dir, m);
}

/* ---- Eviction ----
 *
 * Every cached directory keeps its parent cached (the climb of an rstat
 * change, a directory's own inode), so only leaves go: clean, not being
 * written back, not the root, no cached directory below.  One pass drops
 * what it can; a parent left a leaf goes in a later pass. */

struct trim_walk {
	struct mds *m;
	struct tsr_u64map parents;   /* inos with a cached child directory */
	struct mdir **cand;
	size_t n, cap;
	uint64_t entries;
};

static int
note_parent_walk(void *arg, uint64_t key, void *val)
{
	struct trim_walk *w = arg;
	struct mdir *d = val;

	(void)key;
	w->entries += d->n;
	if (d->parent)
		tsr_u64map_put(&w->parents, d->parent, d);
	return 0;
}

static int
candidates(void *arg, uint64_t key, void *val)
{
	struct trim_walk *w = arg;
	struct mdir *d = val;

	/* used since the last pass: kept (a directory larger than the bound
	 * would otherwise go and come back at every tick) */
	if (d->ino == TSR_FS_ROOT_INO || d->dirty_since || d->flushing || d->deleted ||
	    d->nremoved || !d->exists || d->used > w->m->trim_clock ||
	    tsr_u64map_get(&w->parents, key))
		return 0;
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 64;
		w->cand = realloc(w->cand, w->cap * sizeof(*w->cand));
		if (w->cand == NULL)
			abort();
	}
	w->cand[w->n++] = d;
	return 0;
}

static int
by_use(const void *a, const void *b)
{
	uint64_t x = (*(struct mdir *const *)a)->used, y = (*(struct mdir *const *)b)->used;

	return x < y ? -1 : x > y;
}

void
mds_cache_trim(struct mds *m)
{
	struct trim_walk w = { .m = m };

	if (m->cache_max == 0 || m->where.n <= m->cache_max)
		return;
	tsr_u64map_each(&m->dirs, note_parent_walk, &w);
	if (w.entries > m->cache_max) {
		tsr_u64map_each(&m->dirs, candidates, &w);
		if (w.n > 1)
			qsort(w.cand, w.n, sizeof(*w.cand), by_use);
		for (size_t i = 0; i < w.n && w.entries > m->cache_max; i++) {
			struct mdir *d = w.cand[i];
			w.entries -= d->n;
			tsr_u64map_del(&m->dirs, d->ino);
			dir_free(m, d);
			m->n_evicted++;
		}
	}
	free(w.cand);
	tsr_u64map_free(&w.parents);
	m->trim_clock = m->clock;
}

/* ---- A new file system ---- */

int
mds_mkfs(struct mds *m, char *err, size_t errlen)
{
	struct tsr_inode root = { 0 };
	struct mdir d = { 0 };
	struct timespec now;
	struct tsr_enc e;
	char oid[64], ver[17];
	uint8_t *ib, *bb;
	size_t ilen, blen;
	struct tsr_op *op;
	int rc;

	clock_gettime(CLOCK_REALTIME, &now);
	root.ino = TSR_FS_ROOT_INO;
	root.mode = S_IFDIR | 0755;
	root.nlink = 2;
	root.atime.sec = root.mtime.sec = root.ctime.sec = root.btime.sec = now.tv_sec;
	root.atime.nsec = root.mtime.nsec = root.ctime.nsec = root.btime.nsec =
		(uint32_t)now.tv_nsec;
	root.rstat.rctime_sec = now.tv_sec;
	root.rstat.rctime_nsec = (uint32_t)now.tv_nsec;
	tsr_layout_default(&root.layout, m->data_pool);
	tsr_fs_hex16(0, ver);
	tsr_enc_init(&e);
	tsr_inode_encode(&e, &root);
	ib = tsr_enc_take(&e, &ilen);
	d.ino = TSR_FS_ROOT_INO;
	tsr_enc_init(&e);
	bt_encode(&e, &d);
	bb = tsr_enc_take(&e, &blen);
	if (ib == NULL || bb == NULL) {
		free(ib);
		free(bb);
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	}
	/* each made only when absent: a crash between the two, or an MDS
	 * before us, leaves what is there */
	op = tsr_op_create();
	tsr_op_create_obj(op, 1);
	tsr_op_write_full(op, ib, ilen);
	tsr_op_setxattr(op, "ver", ver, 16);
	tsr_fs_inode_oid(TSR_FS_ROOT_INO, oid, sizeof(oid));
	rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
	tsr_op_destroy(op);
	if (rc == 0 || rc == -EEXIST) {
		op = tsr_op_create();
		tsr_op_create_obj(op, 1);
		tsr_op_setxattr(op, "ver", ver, 16);
		tsr_op_setxattr(op, "bt", bb, blen);
		tsr_fs_dir_oid(TSR_FS_ROOT_INO, 0, oid, sizeof(oid));
		rc = tsr_op_run(m->oc, m->meta_pool, oid, strlen(oid), op, NULL);
		tsr_op_destroy(op);
	}
	free(ib);
	free(bb);
	if (rc < 0 && rc != -EEXIST)
		return tsr_errf(err, errlen, rc, "making the root (%s): %s", oid,
				strerror(-rc));
	return 0;
}

int
mds_cache_init(struct mds *m)
{
	(void)m;
	return 0;
}

static int
free_dir_cb(void *arg, uint64_t key, void *val)
{
	struct mds *m = arg;
	struct mdir *d = val;

	(void)key;
	for (size_t i = 0; i < d->n; i++)
		ent_free(d->ents[i]);
	d->n = 0;
	dir_free(m, d);
	return 0;
}

static int
free_obj_cb(void *arg, uint64_t key, void *val)
{
	struct mobj *o = val;

	(void)arg;
	(void)key;
	tsr_inode_free(&o->in);
	free(o);
	return 0;
}

void
mds_cache_free(struct mds *m)
{
	tsr_u64map_free(&m->where); /* the entries go with their directories */
	tsr_u64map_each(&m->dirs, free_dir_cb, m);
	tsr_u64map_each(&m->objs, free_obj_cb, m);
	tsr_u64map_free(&m->dirs);
	tsr_u64map_free(&m->objs);
}
