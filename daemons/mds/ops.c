/* ops.c — the MDS's requests (mds.h): permission and sanity checks on the
 * cache, then one event (mds_commit) for a change, and the reply: early,
 * then SAFE once the journal holds it (mds.h, "Durability").
 *
 * Every handler reads what it needs into the cache before it builds its
 * event (loading directories blocks here, on the MDS thread), so applying
 * the event cannot fail on a load.  Updates to an inode are staged as
 * whole new copies: an entry set again (LINK) or an inode object
 * (IOBJ); rstat deltas go last in an event, on top of those copies.
 */
#include "mds.h"

#include "log/log.h"
#include "msg/msgr.h"
#include "util/util.h"

#include <tessera/client.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE 2
#endif
#define XATTR_CREATE_ 1
#define XATTR_REPLACE_ 2

#define PAGE_BYTES (256u << 10)  /* a readdir reply's entries, about */
#define PARKED 1                 /* a handler's answer: wait for revokes */
#define MAY_R 4
#define MAY_W 2
#define MAY_X 1

/* Where an inode is kept: an entry of a cached directory, or an object. */
struct loc {
	struct mdir *dir;            /* NULL: an object */
	struct mentry *ent;
	struct tsr_inode *in;
};

struct req {
	struct mds *m;
	struct tsr_conn *conn;
	uint64_t client;             /* the peer's id: requests done are its */
	const struct tsr_mds_request *r;
	struct tsr_mds_reply rep;
	struct tsr_fs_event ev;
	struct tsr_ftime now;
	int rstat_from;              /* rstat updates start here in ev */
	int replay;                  /* a change answered early by an MDS
					before us (REQ_REPLAY) */
	int nowait;                  /* ... before the MDS serves anyone
					(not active yet, or the reconnect
					window): the revokes it waited for
					were answered then (none is waited
					for now) */
};

static int
fail(struct req *q, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
fail(struct req *q, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q->rep.why, sizeof(q->rep.why), fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- Permissions ---- */

static int
in_group(const struct tsr_mds_request *r, uint32_t gid)
{
	if (r->gid == gid)
		return 1;
	for (uint32_t i = 0; i < r->ngroups; i++)
		if (r->groups[i] == gid)
			return 1;
	return 0;
}

/* May the caller do want (MAY_*) to in?  Root may do anything but
 * execute a file no one may execute. */
static int
may(const struct tsr_mds_request *r, const struct tsr_inode *in, int want)
{
	uint32_t bits;

	if (r->uid == 0) {
		if ((want & MAY_X) && !S_ISDIR(in->mode) && !(in->mode & 0111))
			return 0;
		return 1;
	}
	if (r->uid == in->uid)
		bits = (in->mode >> 6) & 7;
	else if (in_group(r, in->gid))
		bits = (in->mode >> 3) & 7;
	else
		bits = in->mode & 7;
	return ((uint32_t)want & ~bits) == 0;
}

/* The sticky bit: in a sticky directory only the owner of the entry or of
 * the directory (or root) removes or renames it. */
static int
sticky_ok(const struct tsr_mds_request *r, const struct tsr_inode *dir,
	  const struct tsr_inode *victim)
{
	return !(dir->mode & S_ISVTX) || r->uid == 0 || r->uid == dir->uid ||
	       r->uid == victim->uid;
}

/* ---- Finding things ---- */

static int
locate(struct req *q, uint64_t ino, uint64_t hint, struct loc *l)
{
	struct tsr_inode *in;
	int rc;

	memset(l, 0, sizeof(*l));
	if ((rc = mds_inode_find(q->m, ino, hint, &in)) < 0)
		return fail(q, rc, "no inode %" PRIx64 " (removed?)", ino);
	l->in = in;
	l->ent = tsr_u64map_get(&q->m->where, ino);
	if (l->ent && &l->ent->de.inode == in)
		l->dir = l->ent->dir;
	else
		l->ent = NULL;
	return 0;
}

/* Directory ino, with its inode, searchable by the caller. */
static int
dir_for(struct req *q, uint64_t ino, struct mdir **d, struct tsr_inode **din, int want)
{
	struct loc l;
	int rc;

	if ((rc = locate(q, ino, q->r->ino2, &l)) < 0)
		return rc;
	if (!S_ISDIR(l.in->mode))
		return fail(q, -ENOTDIR, "inode %" PRIx64 " is not a directory", ino);
	if ((rc = mds_dir_get(q->m, ino, d)) < 0)
		return fail(q, rc == -ENOENT ? -ESTALE : rc, "directory %" PRIx64 ": %s", ino,
			    strerror(-rc));
	if ((*din = mds_dir_inode(q->m, *d)) == NULL)
		return fail(q, -EIO, "directory %" PRIx64 ": its inode is not cached", ino);
	if (!may(q->r, *din, want))
		return fail(q, -EACCES, "permission denied on directory %" PRIx64, ino);
	return 0;
}

static int
name_check(struct req *q, const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || strchr(name, '/'))
		return fail(q, -EINVAL, "a bad name \"%s\"", name);
	if (n > TSR_FS_NAME_MAX)
		return fail(q, -ENAMETOOLONG, "a name of %zu bytes", n);
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return fail(q, -EINVAL, "\"%s\" is not a name to change", name);
	return 0;
}

/* The inode an entry names (primary: in it; remote: its object). */
static int
ent_inode(struct req *q, struct mentry *e, struct tsr_inode **out)
{
	if (e->de.kind == TSR_DENTRY_PRIMARY) {
		*out = &e->de.inode;
		return 0;
	}
	int rc = mds_inode_find(q->m, e->de.ino, 0, out);
	return rc < 0 ? fail(q, -EIO, "entry %s: its inode %" PRIx64 " is missing",
			     e->name, e->de.ino) : 0;
}

/* ---- Building events ---- */

static struct tsr_fs_update *
add(struct req *q, uint8_t type)
{
	struct tsr_fs_update *u = tsr_fs_event_add(&q->ev, type);

	if (u == NULL)
		abort(); /* no request makes more than a handful */
	return u;
}

/* Stage a new copy of the inode at l (its entry set again, or its object). */
static int
stage_inode(struct req *q, const struct loc *l, const struct tsr_inode *in)
{
	struct tsr_fs_update *u;
	int rc;

	if (l->dir) {
		u = add(q, TSR_FSU_LINK);
		u->ino = l->dir->ino;
		tsr_strlcpy(u->name, l->ent->name, sizeof(u->name));
		u->de.kind = TSR_DENTRY_PRIMARY;
		u->de.ino = in->ino;
		u->de.dtype = tsr_fs_dtype(in->mode);
		rc = tsr_inode_copy(&u->de.inode, in);
	} else {
		u = add(q, TSR_FSU_IOBJ);
		rc = tsr_inode_copy(&u->inode, in);
	}
	return rc;
}

/* Stage directory d's inode with new mtime and ctime and nlink + dlink. */
static int
stage_dir_touch(struct req *q, struct mdir *d, int dlink)
{
	struct tsr_inode *din = mds_dir_inode(q->m, d), copy;
	struct loc l = { 0 };
	int rc;

	if (din == NULL)
		return -EIO;
	if (d->ino != TSR_FS_ROOT_INO) {
		l.ent = tsr_u64map_get(&q->m->where, d->ino);
		l.dir = l.ent ? l.ent->dir : NULL;
		if (l.dir == NULL)
			return -EIO;
	}
	if ((rc = tsr_inode_copy(&copy, din)) < 0)
		return rc;
	copy.mtime = copy.ctime = q->now;
	copy.nlink = (uint32_t)((int64_t)copy.nlink + dlink);
	copy.change++;
	rc = stage_inode(q, &l, &copy);
	tsr_inode_free(&copy);
	return rc;
}

static void
stage_rstat(struct req *q, uint64_t dir, int64_t dbytes, int64_t dfiles, int64_t dsubdirs)
{
	struct tsr_fs_update *u = add(q, TSR_FSU_RSTAT);

	u->ino = dir;
	u->dbytes = dbytes;
	u->dfiles = dfiles;
	u->dsubdirs = dsubdirs;
	u->rctime = q->now;
}

/* What an inode adds to its directory's rstat. */
static void
contrib(const struct tsr_inode *in, int remote, int64_t *b, int64_t *f, int64_t *s)
{
	if (S_ISDIR(in->mode)) {
		*b = (int64_t)in->rstat.rbytes;
		*f = (int64_t)in->rstat.rfiles;
		*s = (int64_t)in->rstat.rsubdirs + 1;
	} else {
		*b = remote || !S_ISREG(in->mode) ? 0 : (int64_t)in->size;
		*f = 1;
		*s = 0;
	}
}

/* Commit the event and queue the reply after it. */
static int
commit(struct req *q)
{
	char err[256];
	int rc;

	/* the directories whose entries change: others that cache them give
	 * them up first (the event is only staged: it waits, parked) */
	int wait = 0;
	for (uint32_t i = 0; i < q->ev.n; i++) {
		const struct tsr_fs_update *u = &q->ev.u[i];
		if (u->type == TSR_FSU_LINK || u->type == TSR_FSU_UNLINK ||
		    u->type == TSR_FSU_DIR_RM)
			wait |= mds_caps_dir_change(q->m, q->client, u->ino);
	}
	if (wait && !q->nowait)
		return PARKED;
	q->ev.client = q->client;
	q->ev.tid = q->r->tid;
	if (q->ev.ino == 0)
		q->ev.ino = q->r->ino;
	if ((rc = mds_commit(q->m, &q->ev, err, sizeof(err))) < 0)
		return fail(q, rc, "%s", err);
	/* a directory removed: nobody caches its names any more */
	for (uint32_t i = 0; i < q->ev.n; i++)
		if (q->ev.u[i].type == TSR_FSU_DIR_RM)
			mds_caps_drop_ino(q->m, q->ev.u[i].ino);
	mds_done_add(q->m, q->ev.client, q->ev.tid, q->ev.ino);
	return 0;
}

/* A copy of in for a reply, without its xattrs: they travel only in
 * answer to getxattr and listxattr, so no reply outgrows a message (a
 * directory of files with large xattrs would). */
static int
copy_for_reply(struct tsr_inode *dst, const struct tsr_inode *src)
{
	struct tsr_inode bare = *src;

	bare.xattrs = NULL;
	bare.xattrs_len = 0;
	bare.nxattrs = 0;
	return tsr_inode_copy(dst, &bare);
}

/* Whether in has no security.* attribute (an OPEN's answer says so:
 * struct tsr_mds_reply's nosec). */
static int
no_security_xattr(const struct tsr_inode *in)
{
	char *names;
	size_t len;
	int none = 1;

	if (in->nxattrs == 0)
		return 1;
	if (tsr_inode_xattr_list(in, &names, &len) < 0)
		return 0;
	for (size_t at = 0; at < len; at += strlen(names + at) + 1)
		if (strncmp(names + at, "security.", 9) == 0)
			none = 0;
	free(names);
	return none;
}

static int
reply_inode(struct req *q, const struct tsr_inode *in)
{
	if (q->rep.n >= TSR_MDS_REPLY_MAX_INODES)
		return -E2BIG;
	return copy_for_reply(&q->rep.in[q->rep.n++], in);
}

/* A request done already (sent again after a failover): its answer as
 * it stands now — the inode it made or changed. */
static int
answer_done(struct req *q, uint64_t ino)
{
	struct tsr_inode *in;

	if (mds_inode_find(q->m, ino, q->r->ino, &in) == 0)
		return reply_inode(q, in);
	return 0;
}

/* Data objects of a file no name refers to any more: removed once the
 * event that unlinked it is durable (mds_purges_run; before, a crash
 * would bring the name back without its data).  Not journaled: a crash
 * in between leaves the objects behind.
 *
 * They wait until no client's request has come for PURGE_IDLE_NS, unless
 * the oldest has waited PURGE_MAX_WAIT_NS or PURGE_BACKLOG files wait:
 * they go to the OSDs that take the journal's appends, and removing a
 * burst of files as it is unlinked (rm -rf) slows every change waiting
 * for its append by a third; a client that never pauses does not hold
 * them up for long.  Then at most PURGE_INFLIGHT removals at once, in the
 * order of the unlinks; each answer starts the next, and the tick resumes
 * them.  A clean stop sends what it can within PURGE_STOP_NS. */
#define PURGE_INFLIGHT 8u
#define PURGE_IDLE_NS 200000000u
#define PURGE_MAX_WAIT_NS 10000000000ull
#define PURGE_BACKLOG 100000u
#define PURGE_STOP_NS 5000000000ull

struct purge {
	struct purge *next;
	uint64_t seq;
	struct tsr_inode in;
	uint64_t next_obj;           /* the removals sent so far */
	uint64_t queued_ns;          /* when the unlink came (mono) */
};

struct purge_op {
	struct mds *m;
	struct tsr_op *op;
};

static void
purges_kick(void *arg)
{
	mds_purges_run(arg, 0);
}

static void
purged(void *arg, int result, const struct tsr_objver *ver)
{
	struct purge_op *po = arg;

	(void)ver;
	(void)result;
	atomic_fetch_sub(&po->m->purge_inflight, 1);
	mds_post(po->m, purges_kick, po->m); /* (none once it stops) */
	tsr_op_destroy(po->op);
	free(po);
}

static int purge_step(struct mds *m, struct purge *p);

/* Purge in's data once the journal holds event seq. */
static void
purge_later(struct mds *m, uint64_t seq, const struct tsr_inode *in)
{
	struct purge *p = tsr_xcalloc(1, sizeof(*p));

	p->seq = seq;
	p->queued_ns = tsr_mono_ns();
	p->in = *in;
	p->in.symlink = NULL;
	p->in.xattrs = NULL;
	p->in.xattrs_len = 0;
	p->in.nxattrs = 0;
	if (m->purges == NULL)
		m->purges_tail = &m->purges;
	*m->purges_tail = p;
	m->purges_tail = &p->next;
	/* (an inode number is never used twice; a map that cannot grow
	 * leaves mds_purge_size blind to this one) */
	tsr_u64map_put(&m->purge_of, in->ino, p);
	m->npurges++;
}

/* Purges wait for their event to be durable, and for every client that
 * holds the file (open, or its capabilities not yet given back) to let
 * it go: a file unlinked while open elsewhere keeps its data till then. */
void
mds_purges_run(struct mds *m, int drop)
{
	uint64_t now = tsr_mono_ns();

	if (!drop && m->npurges < PURGE_BACKLOG && now - m->last_request_ns < PURGE_IDLE_NS &&
	    (m->purges == NULL || now - m->purges->queued_ns < PURGE_MAX_WAIT_NS))
		return; /* (clients first) */
	for (struct purge **pp = &m->purges; *pp;) {
		struct purge *p = *pp;
		if (!drop && p->seq > m->committed)
			break;
		if (!drop && mds_caps_held(m, p->in.ino)) {
			pp = &p->next;
			continue;
		}
		if (!drop && !purge_step(m, p))
			break; /* (the rest after an answer) */
		*pp = p->next;
		if (m->purges_tail == &p->next)
			m->purges_tail = pp;
		if (tsr_u64map_get(&m->purge_of, p->in.ino) == p)
			tsr_u64map_del(&m->purge_of, p->in.ino);
		free(p);
		m->npurges--;
	}
}

void
mds_purges_drain(struct mds *m)
{
	uint64_t until = tsr_mono_ns() + PURGE_STOP_NS;

	m->last_request_ns = 0; /* (no client waits now) */
	while (tsr_mono_ns() < until) {
		size_t before = m->npurges;
		mds_purges_run(m, 0);
		if (atomic_load(&m->purge_inflight) == 0 && m->npurges == before)
			break; /* (what is left waits for a holder, or the journal) */
		usleep(10000);
	}
}

void
mds_purge_size(struct mds *m, uint64_t ino, uint64_t size)
{
	struct purge *p = tsr_u64map_get(&m->purge_of, ino);

	if (size > TSR_FS_MAX_SIZE)
		size = TSR_FS_MAX_SIZE; /* (a client's word) */
	if (p && size > p->in.size)
		p->in.size = size;
}

/* Send p's next removals while there is room: 1 once all are sent. */
static int
purge_step(struct mds *m, struct purge *p)
{
	const struct tsr_inode *in = &p->in;
	uint64_t per_set, objs;

	if (!S_ISREG(in->mode) || in->size == 0 || in->layout.object_size == 0 ||
	    in->layout.stripe_count == 0)
		return 1;
	per_set = (uint64_t)in->layout.object_size * in->layout.stripe_count;
	objs = (in->size + per_set - 1) / per_set * in->layout.stripe_count;
	if (objs > 1000000)
		objs = 1000000;
	while (p->next_obj < objs && atomic_load(&m->purge_inflight) < PURGE_INFLIGHT) {
		char oid[48];
		struct purge_op *po = tsr_xcalloc(1, sizeof(*po));
		po->m = m;
		po->op = tsr_op_create();
		tsr_fs_data_oid(in->ino, p->next_obj++, oid, sizeof(oid));
		tsr_op_create_obj(po->op, 0);
		tsr_op_remove(po->op);
		atomic_fetch_add(&m->purge_inflight, 1);
		if (tsr_op_submit(m->oc, in->layout.pool, oid, strlen(oid), po->op, purged,
				  po) < 0) {
			atomic_fetch_sub(&m->purge_inflight, 1);
			tsr_op_destroy(po->op);
			free(po);
		}
	}
	return p->next_obj >= objs;
}

/* ---- The handlers ---- */

/* May a client cache entry e (with inode in) under its directory's
 * DCACHE?  Not a name of an inode kept in an object of its own (linked
 * twice, once): its changes touch no directory, so revoke no one; nor a
 * file another client writes (its size and mtime move without us). */
static int
entry_cacheable(struct req *q, const struct mentry *e, const struct tsr_inode *in)
{
	return e->de.kind == TSR_DENTRY_PRIMARY &&
	       !(S_ISREG(in->mode) && mds_caps_writer_other(q->m, q->client, in->ino));
}

/* An access check by a regular file's mode failed.  Another client
 * holding BUF on it may hold wider permission bits (its owner's chmod
 * under BUF, told with its size; a client holds only widening ones, so
 * the mode here is never wider than the held one and a check that passes
 * here passes there).  PARKED: recalled, wait and check again; 0: passed
 * after all (a replay, answered by an MDS that judged it by the mode the
 * holder had told then, which this one may not have replayed yet); or
 * the denial. */
static int
mode_denied(struct req *q, const struct tsr_inode *in, const char *why)
{
	if (S_ISREG(in->mode) && q->replay)
		return 0;
	if (S_ISREG(in->mode) && mds_caps_recall(q->m, q->client, in->ino, TSR_CAP_BUF) &&
	    !q->nowait)
		return PARKED;
	return fail(q, -EACCES, "%s", why);
}

static int
do_lookup(struct req *q)
{
	struct mdir *d;
	struct tsr_inode *din, *in;
	struct mentry *e;
	int rc;

	if ((rc = dir_for(q, q->r->ino, &d, &din, MAY_X)) < 0)
		return rc;
	if (strlen(q->r->name) > TSR_FS_NAME_MAX)
		return fail(q, -ENAMETOOLONG, "a name too long");
	if ((e = mds_dir_find(d, q->r->name)) == NULL) {
		/* the client may keep what it learns here, absent names too
		 * (granted only once nothing more is waited for: a request
		 * parked holding a grant would keep others' changes waiting) */
		q->rep.dcache_seq = mds_caps_grant_dir(q->m, q->client, d->ino);
		return fail(q, -ENOENT, "no \"%s\" in %" PRIx64, q->r->name, q->r->ino);
	}
	if ((rc = ent_inode(q, e, &in)) < 0)
		return rc;
	if (S_ISREG(in->mode) && mds_caps_recall(q->m, q->client, in->ino, TSR_CAP_BUF))
		return PARKED;
	if (entry_cacheable(q, e, in))
		q->rep.dcache_seq = mds_caps_grant_dir(q->m, q->client, d->ino);
	return reply_inode(q, in);
}

static int
do_getattr(struct req *q)
{
	struct loc l;
	int rc;

	if ((rc = locate(q, q->r->ino, q->r->ino2, &l)) < 0)
		return rc;
	/* the size and mtime a writer holds back come first */
	if (S_ISREG(l.in->mode) && mds_caps_recall(q->m, q->client, l.in->ino, TSR_CAP_BUF))
		return PARKED;
	return reply_inode(q, l.in);
}

static int
do_open(struct req *q)
{
	struct loc l;
	int rc, want = 0;

	if ((rc = locate(q, q->r->ino, q->r->ino2, &l)) < 0)
		return rc;
	switch (q->r->flags & O_ACCMODE) {
	case O_RDONLY: want = MAY_R; break;
	case O_WRONLY: want = MAY_W; break;
	default: want = MAY_R | MAY_W; break;
	}
	if (q->r->flags & O_TRUNC)
		want |= MAY_W;
	if (S_ISDIR(l.in->mode) && (want & MAY_W))
		return fail(q, -EISDIR, "a directory opened for writing");
	if (!may(q->r, l.in, want) && (rc = mode_denied(q, l.in, "permission denied")) != 0)
		return rc;
	/* a writer: what others cache of the file's attributes goes first */
	/* a probe (truncate) needs the size a writer holds back */
	if (S_ISREG(l.in->mode) && (q->r->flags & TSR_MDS_OPEN_PROBE) &&
	    mds_caps_recall(q->m, q->client, l.in->ino, TSR_CAP_BUF))
		return PARKED;
	if (S_ISREG(l.in->mode) && !(q->r->flags & TSR_MDS_OPEN_PROBE) && l.dir &&
	    (q->r->flags & O_ACCMODE) != O_RDONLY &&
	    mds_caps_dir_change(q->m, q->client, l.dir->ino))
		return PARKED;
	if (S_ISREG(l.in->mode) && !(q->r->flags & TSR_MDS_OPEN_PROBE) &&
	    mds_caps_open(q->m, q->client, l.in->ino, q->r->flags, &q->rep))
		return PARKED;
	q->rep.nosec = no_security_xattr(l.in);
	return reply_inode(q, l.in);
}

/* CAPS: a revoke answered, or capabilities given back. */
static int
do_caps(struct req *q)
{
	const struct tsr_mds_request *r = q->r;

	if (r->flags == TSR_MDS_CAPS_ACK) {
		mds_caps_ack(q->m, q->client, r->ino, r->cookie, r->mode);
		return 0;
	}
	if (r->flags != TSR_MDS_CAPS_RELEASE || r->value_len % 24 ||
	    r->value_len / 24 > TSR_MDS_CAPS_RELEASE_MAX)
		return fail(q, -EINVAL, "caps: flags %#" PRIx32 " with %zu bytes (ACK, or "
			    "RELEASE with up to %d (ino, size, seq))", r->flags,
			    r->value_len, TSR_MDS_CAPS_RELEASE_MAX);
	struct tsr_dec d;
	tsr_dec_init(&d, r->value, r->value_len);
	while (tsr_dec_remaining(&d) >= 24) {
		uint64_t ino = tsr_dec_u64(&d), size = tsr_dec_u64(&d);
		mds_caps_release(q->m, q->client, ino, size, tsr_dec_u64(&d));
	}
	return 0;
}

static int
do_setattr(struct req *q)
{
	const struct tsr_mds_request *r = q->r;
	struct tsr_inode copy;
	struct loc l;
	uint32_t mask = r->sa.mask;
	int owner, rc;

	if ((rc = locate(q, r->ino, r->ino2, &l)) < 0)
		return rc;
	owner = r->uid == 0 || r->uid == l.in->uid;
	if ((mask & TSR_SETATTR_MODE) && !owner)
		return fail(q, -EPERM, "only the owner changes the mode");
	if ((mask & TSR_SETATTR_UID) && r->uid != 0 && r->sa.uid != l.in->uid)
		return fail(q, -EPERM, "only root changes the owner");
	if ((mask & TSR_SETATTR_GID) && r->uid != 0 &&
	    (!owner || !in_group(r, r->sa.gid)))
		return fail(q, -EPERM, "the owner changes the group only to one of theirs");
	if ((mask & (TSR_SETATTR_ATIME | TSR_SETATTR_MTIME)) && !owner)
		return fail(q, -EPERM, "only the owner sets times");
	if ((mask & TSR_SETATTR_CTIME) && r->uid != 0)
		return fail(q, -EPERM, "only root sets the ctime (a client's tell)");
	if ((mask & (TSR_SETATTR_ATIME_NOW | TSR_SETATTR_MTIME_NOW)) && !owner &&
	    !may(r, l.in, MAY_W) &&
	    (rc = mode_denied(q, l.in, "setting times to now needs write permission")) != 0)
		return rc;
	if ((mask & TSR_SETATTR_SIZE) && !(mask & TSR_SETATTR_SIZE_GROW)) {
		if (S_ISDIR(l.in->mode))
			return fail(q, -EISDIR, "truncating a directory");
		if (!S_ISREG(l.in->mode))
			return fail(q, -EINVAL, "truncating what is not a file");
		if (!may(r, l.in, MAY_W) && !(r->flags & TSR_MDS_OPENED) &&
		    (rc = mode_denied(q, l.in, "truncating needs write permission")) != 0)
			return rc;
	}
	/* another client's held-back size and mtime first; a truncate also
	 * empties the caches of the data */
	if (S_ISREG(l.in->mode) &&
	    mds_caps_recall(q->m, q->client, l.in->ino,
			    TSR_CAP_BUF | ((mask & TSR_SETATTR_SIZE) &&
					   !(mask & TSR_SETATTR_SIZE_GROW) ? TSR_CAP_CACHE : 0)) &&
	    !q->nowait)
		return PARKED;
	if ((mask & TSR_SETATTR_SIZE) && r->sa.size > TSR_FS_MAX_SIZE)
		return fail(q, -EFBIG, "a size past the largest file (2^62 bytes)");
	if ((rc = tsr_inode_copy(&copy, l.in)) < 0)
		return rc;
	if (mask & TSR_SETATTR_MODE) {
		copy.mode = (copy.mode & S_IFMT) | (r->sa.mode & 07777);
		/* a non-root owner outside the file's group loses setgid */
		if (r->uid != 0 && !in_group(r, copy.gid))
			copy.mode &= ~(uint32_t)S_ISGID;
	}
	if (mask & TSR_SETATTR_UID)
		copy.uid = r->sa.uid;
	if (mask & TSR_SETATTR_GID)
		copy.gid = r->sa.gid;
	if ((mask & (TSR_SETATTR_UID | TSR_SETATTR_GID)) && !S_ISDIR(copy.mode) &&
	    (l.in->uid != copy.uid || l.in->gid != copy.gid || r->uid != 0))
		copy.mode &= ~(uint32_t)(S_ISUID | ((copy.mode & 010) ? S_ISGID : 0));
	if (mask & TSR_SETATTR_SIZE) {
		if (!(mask & TSR_SETATTR_SIZE_GROW) || r->sa.size > copy.size)
			copy.size = r->sa.size;
	}
	if (mask & TSR_SETATTR_ATIME_NOW)
		copy.atime = q->now;
	else if (mask & TSR_SETATTR_ATIME)
		copy.atime = r->sa.atime;
	if (mask & TSR_SETATTR_MTIME_NOW)
		copy.mtime = q->now;
	else if (mask & TSR_SETATTR_MTIME)
		copy.mtime = r->sa.mtime;
	/* a truncate changes mtime; a client's report of the size its writes
	 * reached does not (it sends their mtime, unless times were set since) */
	if ((mask & TSR_SETATTR_SIZE) && !(mask & TSR_SETATTR_SIZE_GROW) &&
	    !(mask & (TSR_SETATTR_MTIME | TSR_SETATTR_MTIME_NOW)) && copy.size != l.in->size)
		copy.mtime = q->now;
	/* (a client's tell: the ctime it showed, never going back, nor
	 * past this clock's now) */
	if (!(mask & TSR_SETATTR_CTIME)) {
		copy.ctime = q->now;
	} else {
		struct tsr_ftime t = tsr_ftime_before(q->now, r->sa.ctime) ? q->now : r->sa.ctime;
		if (tsr_ftime_before(copy.ctime, t))
			copy.ctime = t;
	}
	copy.change++;
	rc = stage_inode(q, &l, &copy);
	if (rc == 0 && l.dir && S_ISREG(copy.mode) && copy.size != l.in->size)
		stage_rstat(q, l.dir->ino, (int64_t)copy.size - (int64_t)l.in->size, 0, 0);
	tsr_inode_free(&copy);
	if (rc < 0 || (rc = commit(q)) != 0)
		return rc;
	return locate(q, r->ino, 0, &l) < 0 ? -EIO : reply_inode(q, l.in);
}

static int
do_make(struct req *q)
{
	const struct tsr_mds_request *r = q->r;
	struct tsr_fs_update *u;
	struct tsr_inode *din, in = { 0 };
	struct mdir *d;
	uint32_t type;
	int rc;

	if ((rc = dir_for(q, r->ino, &d, &din, MAY_W | MAY_X)) < 0 ||
	    (rc = name_check(q, r->name)) < 0)
		return rc;
	if (mds_dir_find(d, r->name))
		return fail(q, -EEXIST, "\"%s\" exists", r->name);
	switch (r->op) {
	case TSR_MDS_OP_MKDIR: type = S_IFDIR; break;
	case TSR_MDS_OP_SYMLINK: type = S_IFLNK; break;
	default:
		type = r->mode & S_IFMT;
		if (type == 0)
			type = S_IFREG;
		if (type != S_IFREG && type != S_IFIFO && type != S_IFSOCK &&
		    type != S_IFCHR && type != S_IFBLK)
			return fail(q, -EINVAL, "mknod of type %o", type);
		if ((type == S_IFCHR || type == S_IFBLK) && r->uid != 0)
			return fail(q, -EPERM, "only root makes device nodes");
	}
	if (r->op == TSR_MDS_OP_SYMLINK &&
	    (r->value_len == 0 || r->value_len > TSR_FS_SYMLINK_MAX ||
	     memchr(r->value, 0, r->value_len)))
		return fail(q, r->value_len > TSR_FS_SYMLINK_MAX ? -ENAMETOOLONG : -EINVAL,
			    "a symlink target of %zu bytes", r->value_len);
	if (q->replay && r->made_ino) {
		/* the number the first answer gave: one an MDS before us
		 * handed out (below ino_floor), not in use */
		struct tsr_inode *old;
		if (r->made_ino < tsr_fs_rank_ino_base(q->m->rank) ||
		    r->made_ino >= q->m->ino_floor)
			return fail(q, -EINVAL, "a replayed %s names inode %" PRIx64 ", "
				    "which no MDS before this one gave out",
				    tsr_mds_op_name(r->op), r->made_ino);
		if (mds_inode_find(q->m, r->made_ino, d->ino, &old) == 0) /* (else ESTALE) */
			return fail(q, -EEXIST, "a replayed %s names inode %" PRIx64
				    ", which is in use", tsr_mds_op_name(r->op),
				    r->made_ino);
		in.ino = r->made_ino;
	} else {
		if ((rc = mds_inos_reserve(q->m, q->m->next_ino)) < 0)
			return fail(q, rc, "no inode number: %s", strerror(-rc));
		in.ino = q->m->next_ino++;
	}
	q->ev.ino = in.ino;
	in.mode = type | (type == S_IFLNK ? 0777 : (r->mode & 07777));
	in.uid = r->uid;
	in.gid = r->gid;
	if (din->mode & S_ISGID) {
		in.gid = din->gid;
		if (type == S_IFDIR)
			in.mode |= S_ISGID;
	} else if (r->uid != 0 && !in_group(r, in.gid)) {
		in.mode &= ~(uint32_t)S_ISGID;
	}
	in.nlink = type == S_IFDIR ? 2 : 1;
	in.rdev = r->rdev;
	in.atime = in.mtime = in.ctime = in.btime = q->now;
	in.layout = din->layout;
	in.change = 1;
	if (type == S_IFDIR) {
		in.rstat.rctime_sec = q->now.sec;
		in.rstat.rctime_nsec = q->now.nsec;
		u = add(q, TSR_FSU_DIR_NEW);
		u->ino = in.ino;
		u->parent = d->ino;
		tsr_strlcpy(u->name, r->name, sizeof(u->name));
	}
	if (type == S_IFLNK) {
		in.symlink = tsr_xcalloc(1, r->value_len + 1);
		memcpy(in.symlink, r->value, r->value_len);
		in.size = r->value_len;
	}
	u = add(q, TSR_FSU_LINK);
	u->ino = d->ino;
	tsr_strlcpy(u->name, r->name, sizeof(u->name));
	u->de.kind = TSR_DENTRY_PRIMARY;
	u->de.ino = in.ino;
	u->de.dtype = tsr_fs_dtype(in.mode);
	u->de.inode = in; /* the event owns it now */
	if ((rc = stage_dir_touch(q, d, type == S_IFDIR ? 1 : 0)) < 0)
		return fail(q, rc, "directory %" PRIx64 ": %s", d->ino, strerror(-rc));
	stage_rstat(q, d->ino, 0, type == S_IFDIR ? 0 : 1, type == S_IFDIR ? 1 : 0);
	if ((rc = commit(q)) != 0)
		return rc;
	struct mentry *e = mds_dir_find(d, r->name);
	if (e == NULL || (rc = reply_inode(q, &e->de.inode)) < 0)
		return -EIO;
	q->rep.dcache_seq = mds_caps_grant_dir(q->m, q->client, d->ino);
	/* made to be opened (creat): the maker holds it, alone */
	if (type == S_IFREG && (r->flags & TSR_MDS_CREATE_OPEN)) {
		mds_caps_open(q->m, q->client, in.ino, (r->flags & TSR_MDS_CREATE_ACC) >> 4,
			      &q->rep);
		q->rep.nosec = 1; /* (a new inode) */
	}
	if (type == S_IFDIR && (q->rep.cap_seq = mds_caps_grant_dir(q->m, q->client,
								   in.ino)) != 0)
		q->rep.caps = TSR_CAP_DCACHE; /* (on the new one: in[0]) */
	return reply_inode(q, mds_dir_inode(q->m, d));
}

/* Stage the removal of entry e from d (its inode going, or one link
 * fewer).  *gone gets the inode to purge when the last link went. */
static int
stage_drop(struct req *q, struct mdir *d, struct mentry *e, struct tsr_inode *in,
	   struct tsr_inode *gone)
{
	struct tsr_fs_update *u = add(q, TSR_FSU_UNLINK);

	u->ino = d->ino;
	tsr_strlcpy(u->name, e->name, sizeof(u->name));
	if (S_ISDIR(in->mode)) {
		u = add(q, TSR_FSU_DIR_RM);
		u->ino = in->ino;
	} else if (e->de.kind == TSR_DENTRY_REMOTE) {
		struct loc l = { 0 };
		struct tsr_inode copy;
		if (in->nlink <= 1) {
			u = add(q, TSR_FSU_IOBJ_RM);
			u->ino = in->ino;
			if (tsr_inode_copy(gone, in) < 0)
				return -ENOMEM;
		} else {
			if (tsr_inode_copy(&copy, in) < 0)
				return -ENOMEM;
			copy.nlink--;
			copy.ctime = q->now;
			copy.change++;
			int rc = stage_inode(q, &l, &copy);
			tsr_inode_free(&copy);
			if (rc < 0)
				return rc;
		}
	} else if (tsr_inode_copy(gone, in) < 0) {
		return -ENOMEM;
	}
	return 0;
}

static int
do_unlink(struct req *q, int rmdir)
{
	const struct tsr_mds_request *r = q->r;
	struct tsr_inode *din, *in, gone = { 0 };
	struct mdir *d, *victim = NULL;
	struct mentry *e;
	int64_t b, f, s;
	int rc;

	if ((rc = dir_for(q, r->ino, &d, &din, MAY_W | MAY_X)) < 0)
		return rc;
	if (strlen(r->name) > TSR_FS_NAME_MAX)
		return fail(q, -ENAMETOOLONG, "a name too long");
	if (strcmp(r->name, ".") == 0)
		return fail(q, -EINVAL, "rmdir of \".\"");
	if (strcmp(r->name, "..") == 0)
		return fail(q, -ENOTEMPTY, "rmdir of \"..\"");
	if ((e = mds_dir_find(d, r->name)) == NULL)
		return fail(q, -ENOENT, "no \"%s\"", r->name);
	if ((rc = ent_inode(q, e, &in)) < 0)
		return rc;
	if (rmdir && !S_ISDIR(in->mode))
		return fail(q, -ENOTDIR, "\"%s\" is not a directory", r->name);
	if (!rmdir && S_ISDIR(in->mode))
		return fail(q, -EISDIR, "\"%s\" is a directory", r->name);
	if (!sticky_ok(r, din, in))
		return fail(q, -EPERM, "the directory is sticky");
	if (rmdir) {
		if ((rc = mds_dir_get(q->m, in->ino, &victim)) < 0)
			return fail(q, -EIO, "directory %" PRIx64 ": %s", in->ino, strerror(-rc));
		if (victim->n > 0)
			return fail(q, -ENOTEMPTY, "\"%s\" is not empty", r->name);
	}
	contrib(in, e->de.kind == TSR_DENTRY_REMOTE, &b, &f, &s);
	if ((rc = stage_drop(q, d, e, in, &gone)) < 0 ||
	    (rc = stage_dir_touch(q, d, rmdir ? -1 : 0)) < 0) {
		tsr_inode_free(&gone);
		return fail(q, rc, "%s", strerror(-rc));
	}
	stage_rstat(q, d->ino, -b, -f, -s);
	if ((rc = commit(q)) != 0) {
		tsr_inode_free(&gone);
		return rc;
	}
	if (gone.ino)
		purge_later(q->m, q->ev.seq, &gone);
	tsr_inode_free(&gone);
	return reply_inode(q, mds_dir_inode(q->m, d));
}

static int
is_ancestor(struct mds *m, uint64_t anc, uint64_t ino)
{
	for (int depth = 0; ino && depth < 4096; depth++) {
		struct mdir *d;
		if (ino == anc)
			return 1;
		if (mds_dir_get(m, ino, &d) < 0)
			return 0;
		ino = d->parent;
	}
	return 0;
}

static int
do_rename(struct req *q)
{
	const struct tsr_mds_request *r = q->r;
	struct tsr_inode *sdin, *ddin, *sin, *din_old = NULL, gone = { 0 };
	struct mdir *sd, *dd;
	struct mentry *se, *de;
	struct tsr_fs_update *u;
	int64_t b, f, s;
	int rc;

	if (r->flags & ~(uint32_t)(RENAME_NOREPLACE | RENAME_EXCHANGE) ||
	    (r->flags & RENAME_NOREPLACE && r->flags & RENAME_EXCHANGE))
		return fail(q, -EINVAL, "rename flags %" PRIx32, r->flags);
	if (r->flags & RENAME_EXCHANGE)
		return fail(q, -EINVAL, "RENAME_EXCHANGE is not supported yet");
	if ((rc = dir_for(q, r->ino, &sd, &sdin, MAY_W | MAY_X)) < 0 ||
	    (rc = dir_for(q, r->ino2, &dd, &ddin, MAY_W | MAY_X)) < 0 ||
	    (rc = name_check(q, r->name)) < 0 || (rc = name_check(q, r->name2)) < 0)
		return rc;
	/* dir_for may have loaded dd and moved nothing: sd stays valid */
	if ((se = mds_dir_find(sd, r->name)) == NULL)
		return fail(q, -ENOENT, "no \"%s\"", r->name);
	if ((rc = ent_inode(q, se, &sin)) < 0)
		return rc;
	if (!sticky_ok(r, sdin, sin))
		return fail(q, -EPERM, "the source directory is sticky");
	de = mds_dir_find(dd, r->name2);
	if (de) {
		if (r->flags & RENAME_NOREPLACE)
			return fail(q, -EEXIST, "\"%s\" exists", r->name2);
		if ((rc = ent_inode(q, de, &din_old)) < 0)
			return rc;
		if (din_old->ino == sin->ino)
			return reply_inode(q, sdin); /* the same file: nothing to do */
		if (S_ISDIR(sin->mode) && !S_ISDIR(din_old->mode))
			return fail(q, -ENOTDIR, "\"%s\" is not a directory", r->name2);
		if (!S_ISDIR(sin->mode) && S_ISDIR(din_old->mode))
			return fail(q, -EISDIR, "\"%s\" is a directory", r->name2);
		if (!sticky_ok(r, ddin, din_old))
			return fail(q, -EPERM, "the target directory is sticky");
		if (S_ISDIR(din_old->mode)) {
			struct mdir *victim;
			if ((rc = mds_dir_get(q->m, din_old->ino, &victim)) < 0)
				return fail(q, -EIO, "directory %" PRIx64 ": %s", din_old->ino,
					    strerror(-rc));
			if (victim->n > 0)
				return fail(q, -ENOTEMPTY, "\"%s\" is not empty", r->name2);
		}
	}
	if (S_ISDIR(sin->mode)) {
		if (is_ancestor(q->m, sin->ino, dd->ino))
			return fail(q, -EINVAL, "a directory moved into itself");
		/* moving a directory to another parent rewrites its ".." */
		if (sd != dd && !may(r, sin, MAY_W) && r->uid != 0)
			return fail(q, -EACCES, "moving a directory needs write permission on it");
	}
	/* the victim first, then the move, then the directories, then rstats */
	int64_t vb = 0, vf = 0, vs = 0;
	if (de) {
		contrib(din_old, de->de.kind == TSR_DENTRY_REMOTE, &vb, &vf, &vs);
		if ((rc = stage_drop(q, dd, de, din_old, &gone)) < 0)
			return fail(q, rc, "%s", strerror(-rc));
	}
	contrib(sin, se->de.kind == TSR_DENTRY_REMOTE, &b, &f, &s);
	u = add(q, TSR_FSU_UNLINK);
	u->ino = sd->ino;
	tsr_strlcpy(u->name, r->name, sizeof(u->name));
	u = add(q, TSR_FSU_LINK);
	u->ino = dd->ino;
	tsr_strlcpy(u->name, r->name2, sizeof(u->name));
	u->de.kind = se->de.kind;
	u->de.ino = se->de.ino;
	u->de.dtype = se->de.dtype;
	if (se->de.kind == TSR_DENTRY_PRIMARY) {
		if ((rc = tsr_inode_copy(&u->de.inode, sin)) < 0)
			return rc;
		u->de.inode.ctime = q->now;
		u->de.inode.change++;
	}
	if (S_ISDIR(sin->mode)) {
		u = add(q, TSR_FSU_REPARENT);
		u->ino = sin->ino;
		u->parent = dd->ino;
		tsr_strlcpy(u->name, r->name2, sizeof(u->name));
	}
	int dirmove = S_ISDIR(sin->mode) && sd != dd;
	if ((rc = stage_dir_touch(q, sd, dirmove ? -1 : 0)) < 0 ||
	    (sd != dd && (rc = stage_dir_touch(q, dd, (dirmove ? 1 : 0) -
					       (de && S_ISDIR(din_old->mode) ? 1 : 0))) < 0) ||
	    (sd == dd && de && S_ISDIR(din_old->mode) &&
	     (rc = stage_dir_touch(q, dd, -1)) < 0)) {
		tsr_inode_free(&gone);
		return fail(q, rc, "%s", strerror(-rc));
	}
	if (de)
		stage_rstat(q, dd->ino, -vb, -vf, -vs);
	if (sd != dd) {
		stage_rstat(q, sd->ino, -b, -f, -s);
		stage_rstat(q, dd->ino, b, f, s);
	} else {
		stage_rstat(q, sd->ino, 0, 0, 0);
	}
	if ((rc = commit(q)) != 0) {
		tsr_inode_free(&gone);
		return rc;
	}
	if (gone.ino)
		purge_later(q->m, q->ev.seq, &gone);
	tsr_inode_free(&gone);
	/* the directories, then what moved (the client notes where it is
	 * now: its hint for this inode when the MDS has to find it again) */
	struct mentry *moved = mds_dir_find(dd, r->name2);
	struct tsr_inode *min;
	if ((rc = reply_inode(q, mds_dir_inode(q->m, sd))) < 0 ||
	    (sd != dd && (rc = reply_inode(q, mds_dir_inode(q->m, dd))) < 0))
		return rc;
	if (moved && ent_inode(q, moved, &min) == 0) {
		/* the client may keep the new name in a directory it holds,
		 * as a LOOKUP's answer would let it */
		if (entry_cacheable(q, moved, min))
			q->rep.dcache_seq = mds_caps_grant_dir(q->m, q->client, dd->ino);
		return reply_inode(q, min);
	}
	return 0;
}

static int
do_link(struct req *q)
{
	const struct tsr_mds_request *r = q->r;
	struct tsr_inode *ddin, copy;
	struct tsr_fs_update *u;
	struct mdir *dd;
	struct loc l;
	int rc;

	if ((rc = locate(q, r->ino2, 0, &l)) < 0)
		return rc;
	if (S_ISDIR(l.in->mode))
		return fail(q, -EPERM, "a hard link to a directory");
	if ((rc = dir_for(q, r->ino, &dd, &ddin, MAY_W | MAY_X)) < 0 ||
	    (rc = name_check(q, r->name)) < 0)
		return rc;
	/* the directory's load may have moved the cache: locate again */
	if ((rc = locate(q, r->ino2, 0, &l)) < 0)
		return rc;
	if (mds_dir_find(dd, r->name))
		return fail(q, -EEXIST, "\"%s\" exists", r->name);
	if (l.in->nlink >= 65000)
		return fail(q, -EMLINK, "too many links");
	if ((rc = tsr_inode_copy(&copy, l.in)) < 0)
		return rc;
	copy.nlink++;
	copy.ctime = q->now;
	copy.change++;
	q->ev.ino = copy.ino;
	/* the inode moves to an object of its own; the entries refer to it */
	u = add(q, TSR_FSU_IOBJ);
	u->inode = copy;
	if (l.dir) {
		u = add(q, TSR_FSU_LINK);
		u->ino = l.dir->ino;
		tsr_strlcpy(u->name, l.ent->name, sizeof(u->name));
		u->de.kind = TSR_DENTRY_REMOTE;
		u->de.ino = l.in->ino;
		u->de.dtype = tsr_fs_dtype(l.in->mode);
	}
	u = add(q, TSR_FSU_LINK);
	u->ino = dd->ino;
	tsr_strlcpy(u->name, r->name, sizeof(u->name));
	u->de.kind = TSR_DENTRY_REMOTE;
	u->de.ino = l.in->ino;
	u->de.dtype = tsr_fs_dtype(l.in->mode);
	if ((rc = stage_dir_touch(q, dd, 0)) < 0)
		return fail(q, rc, "%s", strerror(-rc));
	if (l.dir && S_ISREG(l.in->mode))
		stage_rstat(q, l.dir->ino, -(int64_t)l.in->size, 0, 0);
	stage_rstat(q, dd->ino, 0, 1, 0);
	if ((rc = commit(q)) != 0)
		return rc;
	if ((rc = locate(q, r->ino2, 0, &l)) < 0)
		return -EIO;
	return reply_inode(q, l.in);
}

static int
do_readdir(struct req *q)
{
	struct tsr_inode *din, *in;
	struct mdir *d;
	uint32_t max = q->r->max ? q->r->max : 256;
	size_t i = 0, lo = 0, hi, bytes = 0;
	int rc;

	if ((rc = dir_for(q, q->r->ino, &d, &din, MAY_R)) < 0)
		return rc;
	int cacheable = 1;
	size_t stop_at = SIZE_MAX;   /* the first entry a writer holds */
	/* the first entry whose cookie is above the one given */
	hi = d->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->ents[mid]->cookie <= q->r->cookie)
			lo = mid + 1;
		else
			hi = mid;
	}
	q->rep.ent = tsr_xcalloc(max + 64, sizeof(*q->rep.ent));
	for (i = lo; i < d->n; i++) {
		struct mentry *e = d->ents[i];
		/* a page ends at max entries or PAGE_BYTES (symlink targets
		 * are long), and only between different cookies: the next
		 * starts after the last cookie sent */
		int full = q->rep.nent >= max || bytes >= PAGE_BYTES;
		if (full && e->cookie != d->ents[i - 1]->cookie)
			break;
		if (q->rep.nent >= max + 63)
			break;
		if (stop_at != SIZE_MAX && i - stop_at >= max)
			break; /* (the rest of a page's worth recalled) */
		if (ent_inode(q, e, &in) < 0) {
			cacheable = 0; /* (a name the answer lacks) */
			continue;
		}
		/* sizes and mtimes writers hold back come first, as a stat's
		 * do: the page ends before the first file another client holds
		 * BUF on (its revokes, and the rest of the page's, go out now),
		 * and waits for it only when it is the first (so a listing
		 * moves on while a writer keeps making files).  An entry that
		 * shares the last one's cookie cannot wait for the next page */
		int held = S_ISREG(in->mode) &&
			   mds_caps_recall(q->m, q->client, in->ino, TSR_CAP_BUF);
		if (stop_at == SIZE_MAX && held &&
		    (q->rep.nent == 0 || e->cookie != q->rep.ent[q->rep.nent - 1].cookie))
			stop_at = i;
		if (stop_at != SIZE_MAX)
			continue;
		struct tsr_mds_dirent *de = &q->rep.ent[q->rep.nent];
		tsr_strlcpy(de->name, e->name, sizeof(de->name));
		de->cookie = e->cookie;
		if (copy_for_reply(&de->inode, in) < 0)
			return -ENOMEM;
		bytes += 200 + strlen(e->name) + (in->symlink ? strlen(in->symlink) : 0);
		q->rep.nent++;
		cacheable &= entry_cacheable(q, e, in);
	}
	if (stop_at != SIZE_MAX && q->rep.nent == 0)
		return PARKED; /* (none copied: it runs again once answered) */
	if (stop_at != SIZE_MAX)
		i = stop_at;
	q->rep.end = i >= d->n;
	if (cacheable)
		q->rep.dcache_seq = mds_caps_grant_dir(q->m, q->client, d->ino);
	return reply_inode(q, din);
}

/* ---- Extended attributes ---- */

#define VX_DIR "tessera.dir."
#define VX_FILE "tessera.file."

static int
layout_get(struct req *q, const struct tsr_layout *l, const char *field)
{
	char buf[160];
	int n;

	if (*field == '\0')
		n = snprintf(buf, sizeof(buf), "object_size=%" PRIu32 " stripe_unit=%" PRIu32
			     " stripe_count=%" PRIu32 " pool=%" PRId64, l->object_size,
			     l->stripe_unit, l->stripe_count, l->pool);
	else if (strcmp(field, ".object_size") == 0)
		n = snprintf(buf, sizeof(buf), "%" PRIu32, l->object_size);
	else if (strcmp(field, ".stripe_unit") == 0)
		n = snprintf(buf, sizeof(buf), "%" PRIu32, l->stripe_unit);
	else if (strcmp(field, ".stripe_count") == 0)
		n = snprintf(buf, sizeof(buf), "%" PRIu32, l->stripe_count);
	else if (strcmp(field, ".pool") == 0)
		n = snprintf(buf, sizeof(buf), "%" PRId64, l->pool);
	else
		return fail(q, -ENODATA, "no such layout field");
	q->rep.value = tsr_xcalloc(1, (size_t)n + 1);
	memcpy(q->rep.value, buf, (size_t)n);
	q->rep.value_len = (size_t)n;
	return 0;
}

static int
vxattr_get(struct req *q, const struct tsr_inode *in, const char *name)
{
	char buf[64];
	int n = -1;

	if (strncmp(name, VX_DIR, strlen(VX_DIR)) == 0) {
		const char *f = name + strlen(VX_DIR);
		if (!S_ISDIR(in->mode))
			return fail(q, -ENODATA, "%s on what is not a directory", name);
		if (strncmp(f, "layout", 6) == 0)
			return layout_get(q, &in->layout, f + 6);
		if (strcmp(f, "rbytes") == 0)
			n = snprintf(buf, sizeof(buf), "%" PRIu64, in->rstat.rbytes);
		else if (strcmp(f, "rfiles") == 0)
			n = snprintf(buf, sizeof(buf), "%" PRIu64, in->rstat.rfiles);
		else if (strcmp(f, "rsubdirs") == 0)
			n = snprintf(buf, sizeof(buf), "%" PRIu64, in->rstat.rsubdirs);
		else if (strcmp(f, "rentries") == 0)
			n = snprintf(buf, sizeof(buf), "%" PRIu64,
				     in->rstat.rfiles + in->rstat.rsubdirs);
		else if (strcmp(f, "rctime") == 0)
			n = snprintf(buf, sizeof(buf), "%" PRId64 ".%09" PRIu32,
				     in->rstat.rctime_sec, in->rstat.rctime_nsec);
	} else if (strncmp(name, VX_FILE, strlen(VX_FILE)) == 0) {
		const char *f = name + strlen(VX_FILE);
		if (!S_ISREG(in->mode))
			return fail(q, -ENODATA, "%s on what is not a file", name);
		if (strncmp(f, "layout", 6) == 0)
			return layout_get(q, &in->layout, f + 6);
	}
	if (n < 0)
		return fail(q, -ENODATA, "no attribute %s", name);
	q->rep.value = tsr_xcalloc(1, (size_t)n + 1);
	memcpy(q->rep.value, buf, (size_t)n);
	q->rep.value_len = (size_t)n;
	return 0;
}

static int
vxattr_set(struct req *q, struct tsr_inode *copy, const char *name, const char *val)
{
	const char *f = NULL;
	struct tsr_layout l = copy->layout;
	char err[160];
	char *end;
	unsigned long long v;

	if (strncmp(name, VX_DIR "layout", strlen(VX_DIR "layout")) == 0) {
		if (!S_ISDIR(copy->mode))
			return fail(q, -EINVAL, "%s on what is not a directory", name);
		f = name + strlen(VX_DIR "layout");
	} else if (strncmp(name, VX_FILE "layout", strlen(VX_FILE "layout")) == 0) {
		if (!S_ISREG(copy->mode))
			return fail(q, -EINVAL, "%s on what is not a file", name);
		if (copy->size != 0)
			return fail(q, -ENOTEMPTY, "a file's layout is set while it is empty");
		f = name + strlen(VX_FILE "layout");
	} else {
		return fail(q, -EINVAL, "%s cannot be set (read-only or unknown)", name);
	}
	errno = 0;
	v = strtoull(val, &end, 10);
	if (errno || *end || end == val || v > INT64_MAX)
		return fail(q, -EINVAL, "%s: \"%s\" is not a number", name, val);
	if (strcmp(f, ".object_size") == 0)
		l.object_size = v > UINT32_MAX ? 0 : (uint32_t)v;
	else if (strcmp(f, ".stripe_unit") == 0)
		l.stripe_unit = v > UINT32_MAX ? 0 : (uint32_t)v;
	else if (strcmp(f, ".stripe_count") == 0)
		l.stripe_count = v > UINT32_MAX ? 0 : (uint32_t)v;
	else if (strcmp(f, ".pool") == 0)
		l.pool = (int64_t)v;
	else
		return fail(q, -EINVAL, "%s: no such layout field (object_size, stripe_unit, "
			    "stripe_count, pool)", name);
	if (tsr_layout_check(&l, err, sizeof(err)) < 0)
		return fail(q, -EINVAL, "%s: %s", name, err);
	copy->layout = l;
	return 0;
}

/* May the caller read (write) xattr name of in?  0, an error, or PARKED. */
static int
xattr_may(struct req *q, const struct tsr_inode *in, const char *name, int write)
{
	if (strncmp(name, "user.", 5) == 0) {
		if (!S_ISREG(in->mode) && !S_ISDIR(in->mode))
			return fail(q, write ? -EPERM : -ENODATA,
				    "user attributes are for files and directories");
		if (!may(q->r, in, write ? MAY_W : MAY_R))
			return mode_denied(q, in, "permission denied");
		return 0;
	}
	if (strncmp(name, "trusted.", 8) == 0) {
		if (q->r->uid != 0)
			return fail(q, write ? -EPERM : -ENODATA, "trusted attributes are root's");
		return 0;
	}
	if (strncmp(name, "system.", 7) == 0)
		/* (POSIX ACLs: kept as an opaque value they would not act, and
		 * cp -a would think it set a file's mode with one) */
		return fail(q, -EOPNOTSUPP, "system attributes (POSIX ACLs) are not "
			    "supported");
	if (strncmp(name, "security.", 9) == 0) {
		if (write && q->r->uid != 0 && q->r->uid != in->uid)
			return fail(q, -EPERM, "only the owner sets %s", name);
		return 0;
	}
	if (strncmp(name, "tessera.", 8) == 0) {
		if (write && q->r->uid != 0 && q->r->uid != in->uid)
			return fail(q, -EPERM, "only the owner sets a layout");
		return 0;
	}
	return fail(q, -EOPNOTSUPP, "no namespace for \"%s\"", name);
}

static int
do_xattr(struct req *q)
{
	const struct tsr_mds_request *r = q->r;
	const char *name = r->name;
	struct tsr_inode copy;
	struct loc l;
	const void *v;
	size_t vl;
	int rc;

	if ((rc = locate(q, r->ino, r->ino2, &l)) < 0)
		return rc;
	if (r->op == TSR_MDS_OP_LISTXATTR) {
		char *names;
		size_t len;
		if ((rc = tsr_inode_xattr_list(l.in, &names, &len)) < 0)
			return fail(q, rc, "listing attributes: %s", strerror(-rc));
		q->rep.value = names;
		q->rep.value_len = len;
		return 0;
	}
	if (name[0] == '\0')
		return fail(q, -EINVAL, "an empty attribute name");
	if ((rc = xattr_may(q, l.in, name, r->op != TSR_MDS_OP_GETXATTR)) != 0)
		return rc; /* (an error, or PARKED) */
	if (r->op == TSR_MDS_OP_GETXATTR) {
		if (strncmp(name, "tessera.", 8) == 0)
			return vxattr_get(q, l.in, name);
		if (tsr_inode_xattr_get(l.in, name, &v, &vl) < 0)
			return fail(q, -ENODATA, "no attribute %s", name);
		q->rep.value = tsr_xcalloc(1, vl + 1);
		memcpy(q->rep.value, v, vl);
		q->rep.value_len = vl;
		return 0;
	}
	if ((rc = tsr_inode_copy(&copy, l.in)) < 0)
		return rc;
	if (r->op == TSR_MDS_OP_SETXATTR && strncmp(name, "tessera.", 8) == 0) {
		char val[64] = "";
		if (r->value_len >= sizeof(val)) {
			rc = fail(q, -EINVAL, "%s: a value too long", name);
		} else {
			memcpy(val, r->value, r->value_len);
			rc = vxattr_set(q, &copy, name, val);
		}
	} else if (r->op == TSR_MDS_OP_SETXATTR) {
		int present = tsr_inode_xattr_get(l.in, name, &v, &vl) == 0;
		if ((r->flags & XATTR_CREATE_) && present)
			rc = fail(q, -EEXIST, "attribute %s exists", name);
		else if ((r->flags & XATTR_REPLACE_) && !present)
			rc = fail(q, -ENODATA, "no attribute %s", name);
		else if (!present && S_ISREG(l.in->mode) && strncmp(name, "security.", 9) == 0 &&
			 !q->nowait && mds_caps_recall(q->m, q->client, l.in->ino, TSR_CAP_BUF))
			rc = PARKED; /* (others answer security.* reads from
					their BUF: tsr_mds_reply's nosec.  A replay
					does not wait: its MDS recalled them) */
		else if ((rc = tsr_inode_xattr_set(&copy, name, r->value ? r->value : "",
						   r->value_len)) < 0)
			rc = fail(q, rc, "setting %s: %s", name, strerror(-rc));
	} else {
		if ((rc = tsr_inode_xattr_set(&copy, name, NULL, 0)) < 0)
			rc = fail(q, rc, "no attribute %s", name);
	}
	if (rc == 0) {
		copy.ctime = q->now;
		copy.change++;
		rc = stage_inode(q, &l, &copy);
	}
	tsr_inode_free(&copy);
	if (rc < 0 || rc == PARKED || (rc = commit(q)) != 0)
		return rc;
	return 0;
}

/* ---- Locks ---- */

static int
do_lock(struct req *q)
{
	struct tsr_mds_lock lk = q->r->lk;
	struct loc l;
	struct tsr_enc e;
	int rc;

	if ((rc = locate(q, q->r->ino, q->r->ino2, &l)) < 0)
		return rc;
	if (!S_ISREG(l.in->mode) && !(lk.type & TSR_LOCK_FLOCK))
		return fail(q, -EINVAL, "a byte-range lock on what is not a file");
	if (q->r->op == TSR_MDS_OP_SETLK) {
		/* a conflict travels as -EBUSY: -EAGAIN on the wire means "not
		 * serving now, ask again", which clients do by themselves */
		if ((rc = mds_lock_set(q->m, l.in->ino, q->client, &lk)) < 0)
			return rc == -EAGAIN ? fail(q, -EBUSY, "held by another owner")
					     : fail(q, rc, "out of memory");
		return 0;
	}
	if (mds_lock_get(q->m, l.in->ino, q->client, &lk) == 0)
		return 0; /* no conflict: no value */
	tsr_enc_init(&e);
	if (tsr_mdsmsg_lock_encode(&e, &lk) < 0) {
		tsr_enc_release(&e);
		return -ENOMEM;
	}
	q->rep.value = tsr_enc_take(&e, &q->rep.value_len);
	return 0;
}

/* The request's handler: 0, PARKED, or an error. */
static int
dispatch(struct req *q)
{
	switch (q->r->op) {
	case TSR_MDS_OP_LOOKUP: return do_lookup(q);
	case TSR_MDS_OP_GETATTR: return do_getattr(q);
	case TSR_MDS_OP_SETATTR: return do_setattr(q);
	case TSR_MDS_OP_MKNOD:
	case TSR_MDS_OP_MKDIR:
	case TSR_MDS_OP_SYMLINK: return do_make(q);
	case TSR_MDS_OP_UNLINK: return do_unlink(q, 0);
	case TSR_MDS_OP_RMDIR: return do_unlink(q, 1);
	case TSR_MDS_OP_RENAME: return do_rename(q);
	case TSR_MDS_OP_LINK: return do_link(q);
	case TSR_MDS_OP_READDIR: return do_readdir(q);
	case TSR_MDS_OP_OPEN: return do_open(q);
	case TSR_MDS_OP_GETXATTR:
	case TSR_MDS_OP_SETXATTR:
	case TSR_MDS_OP_LISTXATTR:
	case TSR_MDS_OP_RMXATTR: return do_xattr(q);
	case TSR_MDS_OP_GETLK:
	case TSR_MDS_OP_SETLK: return do_lock(q);
	case TSR_MDS_OP_CAPS: return do_caps(q);
	default: return fail(q, -EOPNOTSUPP, "op %" PRIu32, q->r->op);
	}
}

/* The answer, encoded in e (taken): sent once the journal holds what it
 * rests on (mds_seen_before; floor: at least that event), and when the
 * request made an event (own) not yet durable, a SAFE once it is. */
static void
reply_send(struct req *q, struct tsr_enc *e, uint64_t floor, uint64_t own)
{
	struct mds *m = q->m;
	uint64_t at = mds_seen_before(m, q->client);
	struct tsr_msg *msg;

	if (floor > at)
		at = floor;
	if ((msg = tsr_msg_from_enc(TSR_MSG_MDS_REPLY, e)) == NULL)
		return;
	mds_reply_after(m, q->conn, msg, at);
	if (q->rep.stage == TSR_MDS_REPLY_EARLY) {
		struct tsr_mds_reply safe = { .tid = q->rep.tid, .stage = TSR_MDS_REPLY_SAFE };
		struct tsr_enc se;
		m->n_early++;
		tsr_enc_init(&se);
		if (tsr_mdsmsg_reply_encode(&se, &safe) == 0 &&
		    (msg = tsr_msg_from_enc(TSR_MSG_MDS_REPLY, &se)) != NULL)
			mds_safe_after(m, q->conn, msg, own);
		else
			tsr_enc_release(&se);
	}
}

/* ---- The entry point ---- */

void
mds_handle_request(struct mds *m, struct tsr_conn *conn, const struct tsr_mds_request *r)
{
	struct req q = { .m = m, .conn = conn, .r = r };
	struct timespec ts;
	struct tsr_enc e;
	int rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	q.now.sec = ts.tv_sec;
	q.now.nsec = (uint32_t)ts.tv_nsec;
	q.rep.tid = r->tid;
	q.client = tsr_conn_peer_id(conn);
	m->n_requests++;
	m->last_request_ns = tsr_mono_ns();
	mds_session_touch(m, conn);
	if (tsr_mds_op_writes(r->op))
		mds_done_prune(m, q.client, r->oldest);
	uint64_t done_ino;
	int done = 0;
	q.replay = (r->rflags & TSR_MDS_REQ_REPLAY) && tsr_mds_op_writes(r->op);
	/* (before the MDS goes active — a RECONNECT taken then closes its
	 * client's part of the window before it opens — or in the window) */
	q.nowait = q.replay && ((!m->active && !m->stopping) || m->reconnect_until_ns != 0);
	if (q.replay)
		m->n_replays++;
	if (q.replay && m->rank >= 0 && !m->replaying && !mds_refused(m, q.client)) {
		/* a change answered early by the MDS before us, which its
		 * journal may have lost: taken exactly when RECONNECT is (the
		 * client sends them just before its RECONNECT, which closes the
		 * window once every listed client sent it; a replay refused
		 * for want of a lease would come back after that), before
		 * anything is served.  (Without the lease an MDS that lost the
		 * rank may answer one early; its journal is fenced, so no SAFE
		 * comes and the client keeps it.)  After that, only one made
		 * is answered: a client answered early was listed in
		 * mds<R>.sessions, so it came back in the window or was
		 * evicted */
		if (mds_done_find(m, q.client, r->tid, &done_ino)) {
			rc = answer_done(&q, done_ino);
			done = 1;
		} else if (q.nowait) {
			rc = dispatch(&q);
		} else {
			rc = fail(&q, -ESTALE, "a replayed %s (tid %" PRIu64 ") this MDS did "
				  "not make, after its reconnect window",
				  tsr_mds_op_name(r->op), r->tid);
		}
	} else if (r->op == TSR_MDS_OP_RECONNECT && m->rank >= 0 && !m->replaying &&
	    !mds_refused(m, q.client)) {
		/* (taken as soon as replay is over: clients send it as they
		 * connect, which they do once the MDS map says active, maybe
		 * before we heard so) */
		rc = mds_reconnect(m, q.client, r->value, r->value_len,
				   (r->flags & TSR_MDS_RECONNECT_LAST) != 0, q.rep.why,
				   sizeof(q.rep.why));
	} else if (!m->active || !mds_lease_ok(m)) {
		rc = fail(&q, -EAGAIN, "mds.%s does not serve a rank now", m->name);
	} else if (mds_refused(m, q.client)) {
		rc = fail(&q, -EKEYREVOKED, "this client was evicted (a revoke "
			  "unanswered): mount again");
	} else if (r->op == TSR_MDS_OP_RECONNECT) {
		rc = mds_reconnect(m, q.client, r->value, r->value_len,
				   (r->flags & TSR_MDS_RECONNECT_LAST) != 0, q.rep.why,
				   sizeof(q.rep.why));
	} else if (r->op != TSR_MDS_OP_CAPS && mds_reconnecting(m)) {
		/* nothing is granted before what clients held is known */
		rc = fail(&q, -EAGAIN, "mds.%s: waiting for clients to reconnect", m->name);
	} else if (tsr_mds_op_writes(r->op) && mds_done_find(m, q.client, r->tid, &done_ino)) {
		rc = answer_done(&q, done_ino);
		done = 1;
	} else {
		rc = dispatch(&q);
	}
	if (rc == PARKED) {
		/* nothing changed: it runs again once the revokes are answered */
		mds_park(m, conn, r);
		tsr_mdsmsg_reply_free(&q.rep);
		tsr_fs_event_free(&q.ev);
		return;
	}
	/* every answer names the OSD epoch of the last eviction: a client
	 * cuts data (truncate) only with a map that new */
	q.rep.osd_barrier = m->osd_barrier;
	q.rep.result = rc < 0 ? rc : 0;
	if (rc < 0) {
		/* an error answers nothing but the error */
		for (uint32_t i = 0; i < q.rep.n; i++)
			tsr_inode_free(&q.rep.in[i]);
		q.rep.n = 0;
		if (q.rep.why[0] == '\0')
			snprintf(q.rep.why, sizeof(q.rep.why), "%s", strerror(-rc));
	}
	/* the event this request made (q.ev.seq: it committed one): an
	 * early answer if the client keeps it until SAFE and a successor
	 * would wait for the client; else the answer waits for it */
	uint64_t own = done ? 0 : q.ev.seq, floor = done ? m->applied : 0;
	if (own && own > m->committed) {
		if (rc == 0 && (r->rflags & TSR_MDS_REQ_EARLY) && mds_session_listed(m, conn))
			q.rep.stage = TSR_MDS_REPLY_EARLY;
		else
			floor = own;
	}
	tsr_enc_init(&e);
	if (tsr_mdsmsg_reply_encode(&e, &q.rep) < 0) {
		/* no answer is worse than an error: a smaller one */
		struct tsr_mds_reply small = { .tid = r->tid, .result = -EIO };
		snprintf(small.why, sizeof(small.why), "the answer to %s does not encode",
			 tsr_mds_op_name(r->op));
		tsr_enc_release(&e);
		tsr_enc_init(&e);
		tsr_mdsmsg_reply_encode(&e, &small);
		if (q.rep.stage == TSR_MDS_REPLY_EARLY) { /* (kept by no one) */
			q.rep.stage = TSR_MDS_REPLY_FINAL;
			floor = own;
		}
	}
	reply_send(&q, &e, floor, own);
	tsr_mdsmsg_reply_free(&q.rep);
	tsr_fs_event_free(&q.ev);
	if (m->wake_pending) {
		m->wake_pending = 0;
		mds_parked_wake(m);
	}
}
