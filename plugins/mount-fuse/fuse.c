/* fuse.c — the `fuse` mount plugin (tessera/mount.h): the file system at a
 * mount point through libfuse3's low-level API, multithreaded.
 *
 * FUSE's requests name inodes by number, as the file client does, so each
 * request is one call of the table the program gave us (struct
 * tsr_mount_fs), with the caller's credentials: the uid and gid FUSE
 * reports and the caller's supplementary groups (fuse_req_getgroups).
 * The kernel checks permissions too (default_permissions); the MDS checks
 * them again and decides who owns what is made.
 *
 * The mount's root is args->root: FUSE's inode 1 is translated to it and
 * back, so a subdirectory mounts as the root.  Directory offsets are the
 * MDS's entry cookies (stable while entries come and go); "." and ".."
 * take offsets 1 and 2, which no cookie uses.
 *
 * Attributes and entries are cached by the kernel for attr_timeout and
 * entry_timeout (options, 1 s by default).  File data stays in the page
 * cache across opens only while the file client holds CACHE on the file
 * (no other client writes it): each open asks (keep_cache), and when CACHE
 * is revoked the client calls back before it answers, and the kernel's
 * pages of the inode are dropped (fuse_lowlevel_notify_inval_inode).  So
 * a file written on one client reads whole on another, even through a
 * descriptor opened before the write.  (Such a descriptor then caches
 * without CACHE: another client's later writes reach it when the kernel's
 * attributes expire and it sees the new mtime — FUSE's auto_inval_data.)
 */
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 12)

#include <tessera/mount.h>

#include "errf.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_GROUPS 64

static const struct tsr_opt_def fuse_options[] = {
	{ .name = "attr_timeout", .type = TSR_OPT_DOUBLE, .def = "1.0", .min = "0",
	  .max = "3600", .help = "seconds the kernel keeps an inode's attributes "
	  "before it asks again (0: every time; other clients' changes show "
	  "after at most this long)" },
	{ .name = "entry_timeout", .type = TSR_OPT_DOUBLE, .def = "1.0", .min = "0",
	  .max = "3600", .help = "seconds the kernel keeps a name's lookup" },
	{ .name = "max_threads", .type = TSR_OPT_INT, .def = "64", .min = "2",
	  .max = "1024", .help = "FUSE worker threads at most (a request waiting "
	  "for a lock holds one)" },
	{ .name = NULL }
};

struct mnt {
	const struct tsr_host *host;
	double attr_timeout, entry_timeout;
	int max_threads;
	/* while serving */
	const struct tsr_mount_fs *t;
	uint64_t root;
	pthread_mutex_t lock;
	struct fuse_session *se;
	const char *mountpoint;
	int stopping;
	/* drops of an inode's pages under way (lock), and whether more may
	 * start: at the end the connection goes first, which ends any such
	 * drop waiting for a request no worker will answer */
	int inval_busy, inval_off;
	pthread_cond_t inval_cv;
	/* (lock owner, inode) pairs that took a lock here (lock): their
	 * locks are released at close; few, so a plain array */
	uint64_t *owners;
	size_t nowners, owners_cap;
};

static void release_locks(fuse_req_t req, fuse_ino_t ino, uint64_t owner, int flock);

/* ---- Translation ---- */

static uint64_t
to_fs(struct mnt *m, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? m->root : (uint64_t)ino;
}

static fuse_ino_t
to_kernel(struct mnt *m, uint64_t ino)
{
	return ino == m->root ? FUSE_ROOT_ID : (fuse_ino_t)ino;
}

static void
fill_stat(struct mnt *m, const struct tsr_fs_stat *s, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = to_kernel(m, s->ino);
	st->st_mode = s->mode;
	st->st_nlink = s->nlink;
	st->st_uid = s->uid;
	st->st_gid = s->gid;
	st->st_rdev = (dev_t)s->rdev;
	st->st_size = (off_t)s->size;
	st->st_blksize = s->blksize ? s->blksize : 4096;
	st->st_blocks = (blkcnt_t)s->blocks;
	st->st_atim.tv_sec = s->atime.sec;
	st->st_atim.tv_nsec = s->atime.nsec;
	st->st_mtim.tv_sec = s->mtime.sec;
	st->st_mtim.tv_nsec = s->mtime.nsec;
	st->st_ctim.tv_sec = s->ctime.sec;
	st->st_ctim.tv_nsec = s->ctime.nsec;
}

static void
fill_entry(struct mnt *m, const struct tsr_fs_stat *s, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = to_kernel(m, s->ino);
	e->generation = 1;
	fill_stat(m, s, &e->attr);
	e->attr_timeout = m->attr_timeout;
	e->entry_timeout = m->entry_timeout;
}

/* The caller's credentials, groups included. */
struct cred {
	struct tsr_fs_cred c;
	uint32_t groups[MAX_GROUPS];
};

static const struct tsr_fs_cred *
cred_of(fuse_req_t req, struct cred *cr)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t g[MAX_GROUPS];
	/* (root's groups decide nothing; reading them is a read of
	 * /proc/<pid>/task/<tid>/status, about a tenth of a create's time) */
	int n = ctx->uid == 0 ? 0 : fuse_req_getgroups(req, MAX_GROUPS, g);

	cr->c.uid = ctx->uid;
	cr->c.gid = ctx->gid;
	cr->c.ngroups = 0;
	for (int i = 0; i < n && i < MAX_GROUPS; i++)
		cr->groups[cr->c.ngroups++] = g[i];
	cr->c.groups = cr->groups;
	return &cr->c;
}

#define M(req) ((struct mnt *)fuse_req_userdata(req))
#define F(fi) ((struct tsr_file *)(uintptr_t)(fi)->fh)

static void
reply_entry_or_err(fuse_req_t req, int rc, const struct tsr_fs_stat *s)
{
	struct fuse_entry_param e;

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fill_entry(M(req), s, &e);
	fuse_reply_entry(req, &e);
}

/* ---- Names ---- */

static void
op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mnt *m = M(req);
	struct cred cr;
	struct tsr_fs_stat s;
	int rc = m->t->lookup(m->t->fs, cred_of(req, &cr), to_fs(m, parent), name, &s);

	if (rc == -ENOENT) {
		/* a negative entry, cached as long as a positive one */
		struct fuse_entry_param e = { .ino = 0, .entry_timeout = m->entry_timeout };
		fuse_reply_entry(req, &e);
		return;
	}
	reply_entry_or_err(req, rc, &s);
}

static void
op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mnt *m = M(req);
	struct cred cr;
	struct tsr_fs_stat s;
	struct stat st;
	int rc;

	(void)fi;
	rc = m->t->getattr(m->t->fs, cred_of(req, &cr), to_fs(m, ino), &s);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fill_stat(m, &s, &st);
	fuse_reply_attr(req, &st, m->attr_timeout);
}

static void
op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
	   struct fuse_file_info *fi)
{
	struct mnt *m = M(req);
	struct cred cr;
	struct tsr_fs_stat a = { 0 }, s;
	struct stat st;
	unsigned mask = 0;
	int rc;

	if (to_set & FUSE_SET_ATTR_MODE) {
		mask |= TSR_FS_SET_MODE;
		a.mode = attr->st_mode;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		mask |= TSR_FS_SET_UID;
		a.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		mask |= TSR_FS_SET_GID;
		a.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		mask |= TSR_FS_SET_SIZE;
		a.size = (uint64_t)attr->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		mask |= TSR_FS_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		mask |= TSR_FS_SET_ATIME;
		a.atime.sec = attr->st_atim.tv_sec;
		a.atime.nsec = (uint32_t)attr->st_atim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		mask |= TSR_FS_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		mask |= TSR_FS_SET_MTIME;
		a.mtime.sec = attr->st_mtim.tv_sec;
		a.mtime.nsec = (uint32_t)attr->st_mtim.tv_nsec;
	}
	/* through an open file (ftruncate, futimens): as its open allowed */
	if (fi && fi->fh)
		rc = m->t->fsetattr(F(fi), &a, mask, &s);
	else
		rc = m->t->setattr(m->t->fs, cred_of(req, &cr), to_fs(m, ino), &a, mask, &s);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fill_stat(m, &s, &st);
	fuse_reply_attr(req, &st, m->attr_timeout);
}

static void
op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct mnt *m = M(req);
	struct cred cr;
	struct tsr_fs_stat s;
	const struct tsr_fs_cred *c = cred_of(req, &cr);
	int rc;

	/* the caller's umask is applied by the kernel already */
	rc = m->t->mknod(m->t->fs, c, to_fs(m, parent), name, mode, rdev, &s);
	reply_entry_or_err(req, rc, &s);
}

static void
op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct mnt *m = M(req);
	struct cred cr;
	struct tsr_fs_stat s;
	int rc = m->t->mkdir(m->t->fs, cred_of(req, &cr), to_fs(m, parent), name, mode, &s);

	reply_entry_or_err(req, rc, &s);
}

static void
op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	struct mnt *m = M(req);
	struct cred cr;
	struct tsr_fs_stat s;
	int rc = m->t->symlink(m->t->fs, cred_of(req, &cr), to_fs(m, parent), name, target,
			       &s);

	reply_entry_or_err(req, rc, &s);
}

static void
op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct mnt *m = M(req);
	struct cred cr;
	char buf[4097];
	ssize_t n = m->t->readlink(m->t->fs, cred_of(req, &cr), to_fs(m, ino), buf,
				   sizeof(buf));

	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_readlink(req, buf);
}

static void
op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mnt *m = M(req);
	struct cred cr;

	fuse_reply_err(req, -m->t->unlink(m->t->fs, cred_of(req, &cr), to_fs(m, parent),
					  name));
}

static void
op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mnt *m = M(req);
	struct cred cr;

	fuse_reply_err(req, -m->t->rmdir(m->t->fs, cred_of(req, &cr), to_fs(m, parent),
					 name));
}

static void
op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	  const char *newname, unsigned int flags)
{
	struct mnt *m = M(req);
	struct cred cr;

	fuse_reply_err(req, -m->t->rename(m->t->fs, cred_of(req, &cr), to_fs(m, parent),
					  name, to_fs(m, newparent), newname, flags));
}

static void
op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct mnt *m = M(req);
	struct cred cr;
	struct tsr_fs_stat s;
	int rc = m->t->link(m->t->fs, cred_of(req, &cr), to_fs(m, ino), to_fs(m, newparent),
			    newname, &s);

	reply_entry_or_err(req, rc, &s);
}

/* ---- Directories ---- */

struct dirbuf {
	struct mnt *m;
	fuse_req_t req;
	fuse_ino_t self;             /* the directory (kernel's number) */
	char *buf;
	size_t cap, len;
	int plus;
	int full;
	uint32_t given;              /* entries the library gave (not . or ..) */
	off_t last;                  /* the offset after the last of them */
};

static int
add_entry(struct dirbuf *b, const char *name, const struct tsr_fs_stat *s, off_t next)
{
	size_t n;

	if (b->plus) {
		struct fuse_entry_param e;
		if (s->ino) {
			fill_entry(b->m, s, &e);
		} else {
			/* "." and "..": not looked up (ino 0), but listed with an
			 * inode number, which readdir(3) needs to show them */
			memset(&e, 0, sizeof(e));
			e.attr.st_mode = S_IFDIR;
			e.attr.st_ino = strcmp(name, ".") == 0 ? b->self : FUSE_ROOT_ID;
		}
		n = fuse_add_direntry_plus(b->req, b->buf + b->len, b->cap - b->len, name, &e,
					   next);
	} else {
		struct stat st;
		memset(&st, 0, sizeof(st));
		st.st_ino = s->ino ? to_kernel(b->m, s->ino)
				   : strcmp(name, ".") == 0 ? b->self : FUSE_ROOT_ID;
		st.st_mode = s->mode;
		n = fuse_add_direntry(b->req, b->buf + b->len, b->cap - b->len, name, &st, next);
	}
	if (n > b->cap - b->len) {
		b->full = 1;
		return 1;
	}
	b->len += n;
	return 0;
}

static int
dirent_cb(void *arg, const char *name, const struct tsr_fs_stat *s, uint64_t cookie)
{
	struct dirbuf *b = arg;
	int rc = add_entry(b, name, s, (off_t)cookie);

	if (rc == 0) {
		b->given++;
		b->last = (off_t)cookie;
	}
	return rc;
}

/* An open directory: where its listing was seen to end.  The kernel asks
 * once more from there (an empty answer is its end of the directory):
 * answered here, not by another MDS round trip.  Names made since the
 * listing reached its end are not shown to this handle then, as POSIX
 * allows (readdir(3): "unspecified" for names added after opendir or
 * rewinddir); a rewind (offset 0) asks the MDS again. */
struct dirh {
	off_t end;                   /* the offset the end was seen at, or -1 */
};

static void
op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirh *h = malloc(sizeof(*h));

	(void)ino;
	if (h == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	h->end = -1;
	fi->fh = (uint64_t)(uintptr_t)h;
	if (fuse_reply_open(req, fi) != 0)
		free(h); /* (interrupted: no releasedir comes) */
}

static void
op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	free((struct dirh *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void
do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus,
	   struct fuse_file_info *fi)
{
	struct mnt *m = M(req);
	struct cred cr;
	struct dirbuf b = { .m = m, .req = req, .self = ino, .cap = size, .plus = plus };
	struct tsr_fs_stat dot = { .mode = S_IFDIR };
	struct dirh *h = (struct dirh *)(uintptr_t)fi->fh;
	int rc = 0;

	if (h && off == 0)
		h->end = -1; /* (a rewind: names made since must show) */
	if (h && off >= 2 && off == h->end) {
		fuse_reply_buf(req, NULL, 0); /* (the end, seen before) */
		return;
	}
	if ((b.buf = malloc(size)) == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (off < 1 && add_entry(&b, ".", &dot, 1) == 0)
		off = 1;
	if (off < 2 && !b.full && add_entry(&b, "..", &dot, 2) == 0)
		off = 2;
	if (!b.full) {
		/* about as many entries as the buffer holds at 40 bytes each
		 * (the library pages further; what does not fit is asked for
		 * again from the last offset that did) */
		uint32_t max = (uint32_t)(size / (plus ? 150 : 32)) + 1;
		rc = m->t->readdir(m->t->fs, cred_of(req, &cr), to_fs(m, ino),
				   off <= 2 ? 0 : (uint64_t)off, max, dirent_cb, &b);
		/* fewer than asked for, all taken: the library met the end */
		if (h && rc == 0 && !b.full && b.given < max)
			h->end = b.given ? b.last : off;
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, b.buf, b.len);
	free(b.buf);
}

static void
op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, 0, fi);
}

static void
op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, 1, fi);
}

static void
op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct mnt *m = M(req);
	struct tsr_fs_statfs fs;
	struct statvfs sv;
	int rc;

	(void)ino;
	if ((rc = m->t->statfs(m->t->fs, &fs)) < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* blocks of 4 KiB; inodes: those used, and room for as many again
	 * as the space would hold at one block each (there is no table) */
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_blocks = fs.bytes_total / 4096;
	sv.f_bfree = fs.bytes_free / 4096;
	sv.f_bavail = sv.f_bfree;
	sv.f_ffree = sv.f_bfree;
	sv.f_files = fs.files + sv.f_ffree;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

/* ---- Extended attributes ---- */

static void
op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
	    size_t size, int flags)
{
	struct mnt *m = M(req);
	struct cred cr;

	fuse_reply_err(req, -m->t->setxattr(m->t->fs, cred_of(req, &cr), to_fs(m, ino), name,
					    value, size, flags));
}

static void
reply_value(fuse_req_t req, ssize_t n, const char *buf, size_t size)
{
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void
op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct mnt *m = M(req);
	struct cred cr;
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	if (size && buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = m->t->getxattr(m->t->fs, cred_of(req, &cr), to_fs(m, ino), name, buf, size);
	reply_value(req, n, buf, size);
	free(buf);
}

static void
op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct mnt *m = M(req);
	struct cred cr;
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	if (size && buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = m->t->listxattr(m->t->fs, cred_of(req, &cr), to_fs(m, ino), buf, size);
	reply_value(req, n, buf, size);
	free(buf);
}

static void
op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct mnt *m = M(req);
	struct cred cr;

	fuse_reply_err(req, -m->t->removexattr(m->t->fs, cred_of(req, &cr), to_fs(m, ino),
					       name));
}

/* ---- Files ---- */

static void
op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mnt *m = M(req);
	struct cred cr;
	struct tsr_file *f;
	/* not O_APPEND: the kernel gives appends their offset (the size it
	 * knows), which the file client's own would override */
	int rc = m->t->open(m->t->fs, cred_of(req, &cr), to_fs(m, ino),
			    fi->flags & (O_ACCMODE | O_TRUNC), &f);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)f;
	fi->keep_cache = (unsigned)m->t->keep_cache(f);
	if (fuse_reply_open(req, fi) == -ENOENT)
		m->t->close(f); /* the caller was interrupted */
}

static void
op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	  struct fuse_file_info *fi)
{
	struct mnt *m = M(req);
	struct cred cr;
	struct tsr_file *f;
	struct tsr_fs_stat s;
	struct fuse_entry_param e;
	int rc = m->t->create(m->t->fs, cred_of(req, &cr), to_fs(m, parent), name, mode,
			      fi->flags & (O_ACCMODE | O_TRUNC | O_EXCL), &f, &s);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)f;
	fi->keep_cache = 0; /* (new: nothing cached; its next open asks) */
	fill_entry(m, &s, &e);
	if (fuse_reply_create(req, &e, fi) == -ENOENT)
		m->t->close(f);
}

static void
op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct mnt *m = M(req);
	char *buf = malloc(size ? size : 1);
	ssize_t n;

	(void)ino;
	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = m->t->read(F(fi), buf, size, (uint64_t)off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void
op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	 struct fuse_file_info *fi)
{
	struct mnt *m = M(req);
	ssize_t n = m->t->write(F(fi), buf, size, (uint64_t)off);

	(void)ino;
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void
op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mnt *m = M(req);

	(void)ino;
	/* every close(2): the size and mtime reach the MDS (close-to-open),
	 * and the closing process's POSIX locks on the file go */
	int rc = m->t->flush(F(fi));
	release_locks(req, ino, fi->lock_owner, 0);
	fuse_reply_err(req, -rc);
}

static void
op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct mnt *m = M(req);

	(void)ino;
	fuse_reply_err(req, -m->t->fsync(F(fi), datasync));
}

static void
op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct mnt *m = M(req);

	(void)datasync;
	(void)fi;
	fuse_reply_err(req, -m->t->fsyncdir(m->t->fs, to_fs(m, ino)));
}

static void
op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mnt *m = M(req);

	if (fi->flock_release)
		release_locks(req, ino, fi->lock_owner, 1);
	fuse_reply_err(req, -m->t->close(F(fi)));
}

static void
op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
	     struct fuse_file_info *fi)
{
	struct mnt *m = M(req);

	(void)ino;
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fuse_reply_err(req, -m->t->fallocate(F(fi), mode, (uint64_t)off, (uint64_t)len));
}

/* ---- Locks ----
 *
 * The MDS holds them, per (this client, owner): FUSE's lock_owner is the
 * process's (POSIX) or the open file's (flock).  A blocking request asks
 * again until granted or interrupted.  A close releases the POSIX locks
 * of its owner on that file (flush), the last close of an open file its
 * flock (release with flock_release) — for owners that took some here. */

static void
to_lock(const struct flock *fl, uint64_t owner, struct tsr_fs_lock *lk)
{
	lk->start = (uint64_t)fl->l_start;
	lk->end = fl->l_len == 0 ? UINT64_MAX : (uint64_t)(fl->l_start + fl->l_len - 1);
	lk->owner = owner;
	lk->pid = (uint32_t)fl->l_pid;
	lk->type = fl->l_type;
}

static uint64_t
owner_key(uint64_t owner, fuse_ino_t ino)
{
	uint64_t k = owner ^ ((uint64_t)ino * 0x9e3779b97f4a7c15ull);

	return k ? k : 1;
}

static void
owner_note(struct mnt *m, uint64_t owner, fuse_ino_t ino)
{
	uint64_t k = owner_key(owner, ino);
	size_t i;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->nowners && m->owners[i] != k; i++)
		;
	if (i == m->nowners) {
		if (m->nowners == m->owners_cap) {
			size_t cap = m->owners_cap ? m->owners_cap * 2 : 16;
			uint64_t *n = realloc(m->owners, cap * sizeof(*n));
			if (n == NULL) {
				pthread_mutex_unlock(&m->lock);
				return; /* its locks then stay until the session ends */
			}
			m->owners = n;
			m->owners_cap = cap;
		}
		m->owners[m->nowners++] = k;
	}
	pthread_mutex_unlock(&m->lock);
}

static int
owner_took(struct mnt *m, uint64_t owner, fuse_ino_t ino)
{
	int took;

	uint64_t k = owner_key(owner, ino);

	took = 0;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->nowners; i++)
		if (m->owners[i] == k) {
			m->owners[i] = m->owners[--m->nowners];
			took = 1;
			break;
		}
	pthread_mutex_unlock(&m->lock);
	return took;
}

static int
set_lock(fuse_req_t req, fuse_ino_t ino, struct tsr_fs_lock *lk, int sleep)
{
	struct mnt *m = M(req);
	struct cred cr;
	const struct tsr_fs_cred *c = cred_of(req, &cr);
	unsigned pause_us = 5000;

	for (;;) {
		int rc = m->t->setlk(m->t->fs, c, to_fs(m, ino), lk, 0);
		if (rc != -EAGAIN || !sleep)
			return rc;
		if (fuse_req_interrupted(req))
			return -EINTR;
		usleep(pause_us);
		if (pause_us < 100000)
			pause_us *= 2;
	}
}

static void
op_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *fl)
{
	struct mnt *m = M(req);
	struct cred cr;
	struct tsr_fs_lock lk;
	int rc;

	to_lock(fl, fi->lock_owner, &lk);
	if ((rc = m->t->getlk(m->t->fs, cred_of(req, &cr), to_fs(m, ino), &lk)) < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fl->l_type = (short)(lk.type & ~TSR_FS_LOCK_FLOCK);
	if (fl->l_type != F_UNLCK) {
		fl->l_start = (off_t)lk.start;
		fl->l_len = lk.end == UINT64_MAX ? 0 : (off_t)(lk.end - lk.start + 1);
		fl->l_pid = (pid_t)lk.pid;
	}
	fl->l_whence = SEEK_SET;
	fuse_reply_lock(req, fl);
}

static void
op_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *fl,
	 int sleep)
{
	struct tsr_fs_lock lk;
	int rc;

	to_lock(fl, fi->lock_owner, &lk);
	rc = set_lock(req, ino, &lk, sleep);
	if (rc == 0 && fl->l_type != F_UNLCK)
		owner_note(M(req), fi->lock_owner, ino);
	fuse_reply_err(req, -rc);
}

static void
op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	struct tsr_fs_lock lk = { .start = 0, .end = UINT64_MAX, .owner = fi->lock_owner };
	int rc;

	switch (op & ~LOCK_NB) {
	case LOCK_SH: lk.type = F_RDLCK | TSR_FS_LOCK_FLOCK; break;
	case LOCK_EX: lk.type = F_WRLCK | TSR_FS_LOCK_FLOCK; break;
	case LOCK_UN: lk.type = F_UNLCK | TSR_FS_LOCK_FLOCK; break;
	default:
		fuse_reply_err(req, EINVAL);
		return;
	}
	rc = set_lock(req, ino, &lk, !(op & LOCK_NB));
	if (rc == 0 && (op & ~LOCK_NB) != LOCK_UN)
		owner_note(M(req), ~fi->lock_owner, ino); /* flock: its own key */
	fuse_reply_err(req, rc == -EAGAIN ? EWOULDBLOCK : -rc);
}

/* The locks of owner on ino go (POSIX, or flock), if it took some here. */
static void
release_locks(fuse_req_t req, fuse_ino_t ino, uint64_t owner, int flock)
{
	struct mnt *m = M(req);
	struct tsr_fs_lock lk = { .start = 0, .end = UINT64_MAX, .owner = owner,
				  .type = F_UNLCK | (flock ? TSR_FS_LOCK_FLOCK : 0) };
	struct cred cr;

	/* an unlock that fails is tried again at the next close of the owner
	 * (until then the MDS holds the lock, at most until the session
	 * expires) */
	if (owner_took(m, flock ? ~owner : owner, ino) &&
	    m->t->setlk(m->t->fs, cred_of(req, &cr), to_fs(m, ino), &lk, 0) < 0)
		owner_note(m, flock ? ~owner : owner, ino);
}

static void
op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* large writes (libfuse3 always allows them): fewer round trips */
	conn->max_write = 1u << 20;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/* no write-back cache: the MDS learns sizes from us at close */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

static const struct fuse_lowlevel_ops ll_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.fsyncdir = op_fsyncdir,
	.opendir = op_opendir,
	.releasedir = op_releasedir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.create = op_create,
	.fallocate = op_fallocate,
	.getlk = op_getlk,
	.setlk = op_setlk,
	.flock = op_flock,
};

/* ---- The plugin ---- */

/* The kernel drops ino's pages: the file client lost CACHE on it (its
 * caps thread, before it answers the revoke), or an open found them not
 * good (a worker, in OPEN: not a request this waits on).  Not under
 * m->lock: the kernel may wait for a READ in flight. */
static void
inval_inode(void *arg, uint64_t ino)
{
	struct mnt *m = arg;
	struct fuse_session *se;

	pthread_mutex_lock(&m->lock);
	if ((se = m->se) == NULL || m->inval_off) {
		pthread_mutex_unlock(&m->lock);
		return;
	}
	m->inval_busy++;
	pthread_mutex_unlock(&m->lock);
	fuse_lowlevel_notify_inval_inode(se, to_kernel(m, ino), 0, 0);
	pthread_mutex_lock(&m->lock);
	if (--m->inval_busy == 0)
		pthread_cond_broadcast(&m->inval_cv);
	pthread_mutex_unlock(&m->lock);
}

static int
fuse_serve(void *inst, const struct tsr_mount_fs *t, const struct tsr_mount_args *a,
	   char *err, size_t errlen)
{
	struct mnt *m = inst;
	struct fuse_args args = FUSE_ARGS_INIT(a->argc, a->argv);
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	int rc;

	if (t->size < sizeof(*t))
		return errf(err, errlen, -EINVAL, "the program's file client "
				       "table is older than this plugin's");
	m->t = t;
	m->root = a->root;
	se = fuse_session_new(&args, &ll_ops, sizeof(ll_ops), m);
	if (se == NULL) {
		fuse_opt_free_args(&args);
		return errf(err, errlen, -EINVAL, "FUSE refused the options "
				       "(see above)");
	}
	if (fuse_session_mount(se, a->mountpoint) != 0) {
		fuse_session_destroy(se);
		fuse_opt_free_args(&args);
		return errf(err, errlen, -EIO, "cannot mount on %s (see above: "
				       "is /dev/fuse there, and the directory empty?)",
				       a->mountpoint);
	}
	/* SIGINT, SIGTERM and SIGHUP end the loop (libfuse's handlers): the
	 * program keeps them blocked in every thread but this one and FUSE's */
	if (fuse_set_signal_handlers(se) != 0) {
		fuse_session_unmount(se);
		fuse_session_destroy(se);
		fuse_opt_free_args(&args);
		return errf(err, errlen, -EIO, "cannot set FUSE's signal handlers");
	}
	pthread_mutex_lock(&m->lock);
	m->se = se;
	m->mountpoint = a->mountpoint;
	m->inval_off = 0;
	rc = m->stopping;
	pthread_mutex_unlock(&m->lock);
	t->set_inval(t->fs, inval_inode, m);
	if (a->mounted)
		a->mounted(a->mounted_arg);
	/* the workers: a request waiting for a lock holds one (its wait
	 * polls the MDS), so there are max_threads of them, not 10 */
	if (!rc && (cfg = fuse_loop_cfg_create()) != NULL) {
		fuse_loop_cfg_set_max_threads(cfg, (unsigned)m->max_threads);
		fuse_loop_cfg_set_idle_threads(cfg, 4);
		fuse_loop_cfg_set_clone_fd(cfg, 0);
		rc = fuse_session_loop_mt(se, cfg);
		fuse_loop_cfg_destroy(cfg);
	} else if (!rc) {
		rc = -ENOMEM;
	}
	/* no drop starts from here; the unmount closes the connection, so
	 * one waiting on a request in flight ends; then none is running */
	pthread_mutex_lock(&m->lock);
	m->inval_off = 1;
	pthread_mutex_unlock(&m->lock);
	fuse_remove_signal_handlers(se);
	fuse_session_unmount(se);
	pthread_mutex_lock(&m->lock);
	while (m->inval_busy > 0)
		pthread_cond_wait(&m->inval_cv, &m->lock);
	m->se = NULL;
	pthread_mutex_unlock(&m->lock);
	t->set_inval(t->fs, NULL, NULL);
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	if (rc < 0)
		return errf(err, errlen, rc, "the FUSE loop failed: %s",
				       strerror(-rc));
	return 0;
}

static void
fuse_stop(void *inst)
{
	struct mnt *m = inst;

	pthread_mutex_lock(&m->lock);
	m->stopping = 1;
	if (m->se) {
		/* the workers wait in read(2) on /dev/fuse: a lazy unmount ends
		 * the connection, and their reads with it (as root; otherwise
		 * the loop ends at the next request) */
		fuse_session_exit(m->se);
		umount2(m->mountpoint, MNT_DETACH);
	}
	pthread_mutex_unlock(&m->lock);
}

static int
fuse_create(const struct tsr_host *host, const struct tsr_opts *opts, void **instance,
	    char *err, size_t errlen)
{
	struct mnt *m = host->alloc(host->ctx, sizeof(*m));

	if (m == NULL)
		return errf(err, errlen, -ENOMEM, "out of memory");
	memset(m, 0, sizeof(*m));
	m->host = host;
	m->attr_timeout = opts->vals[0].d;
	m->entry_timeout = opts->vals[1].d;
	m->max_threads = (int)opts->vals[2].i;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->inval_cv, NULL);
	*instance = m;
	return 0;
}

static void
fuse_destroy(void *inst)
{
	struct mnt *m = inst;

	free(m->owners);
	pthread_cond_destroy(&m->inval_cv);
	pthread_mutex_destroy(&m->lock);
	m->host->free(m->host->ctx, m);
}

static const struct tsr_mount_ops fuse_ops = {
	.size = sizeof(struct tsr_mount_ops),
	.abi_version = TSR_MOUNT_ABI_VERSION,
	.serve = fuse_serve,
	.stop = fuse_stop,
};

TSR_PLUGIN_EXPORT const struct tsr_plugin_desc tessera_plugin = {
	.abi_major = TSR_PLUGIN_ABI_MAJOR,
	.abi_minor = TSR_PLUGIN_ABI_MINOR,
	.desc_size = sizeof(struct tsr_plugin_desc),
	.kind = TSR_KIND_MOUNT,
	.name = "fuse",
	.version = "1.0",
	.summary = "mounts the file system through FUSE (libfuse3, low-level API)",
	.options = fuse_options,
	.create = fuse_create,
	.destroy = fuse_destroy,
	.ops = &fuse_ops,
};
