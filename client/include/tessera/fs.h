/* tessera/fs.h — the file client: a Tessera file system for a program,
 * with or without FUSE (libtessera-client; doc/client.md has examples).
 *
 * A tsr_fs is a session with the metadata server of rank 0, over an
 * object client (tessera/client.h) that it borrows: metadata goes to the
 * MDS, file data straight to the OSDs, placed by the file's layout.
 * Calls name inodes by number, as FUSE's low-level API does; the path
 * helpers (tsr_fs_walk and the `p` calls) resolve a path first.
 *
 * Every call takes the credentials it acts with (NULL: root): the MDS
 * checks permissions against them, so a FUSE front end passes its
 * caller's.  Errors are negative errno values; tsr_fs_why() says why in
 * words (this thread's last failure).
 *
 * Durability.  A metadata call returns once the MDS has made the change,
 * before its journal holds it (the MDS's early answer): a successor MDS
 * gets the change again from this client if the journal lost it, so it
 * survives the crash of the MDS, or of this process, but not of both
 * before the journal takes it (about a millisecond; longer while the
 * OSDs stall), nor an eviction of this client (a later tsr_fs_fsync or
 * tsr_fs_fsyncdir fails with -EIO then).  tsr_fs_fsync and tsr_fs_fsyncdir return
 * once the journal holds every change this client made before them (the
 * file's name too).  Another client sees a change only once it is
 * durable.  File data is held back in this process while no other client
 * has the file (the BUF capability; at most client_dirty_max bytes), and
 * otherwise written to the OSDs when tsr_fs_write returns.  Held-back
 * data starts out to the OSDs at tsr_fs_fsync, 5 s after it was written,
 * when another client asks for the file (a revoke of BUF; after that,
 * writes go through while the file is open), and at a tsr_fs_flush or
 * tsr_fs_close under BUF only once this process holds a quarter of
 * client_dirty_max (at most 32 MiB) not yet sent (then every file's at
 * once: the OSDs commit many small files in one flush).  The new
 * size and mtime reach the MDS at tsr_fs_fsync (in parallel with the
 * data: fsync returns once both are durable); after tsr_fs_flush or
 * tsr_fs_close under BUF, only once the data is answered by the
 * OSDs (close waits for neither: a local file system does not write at
 * close either), or with the answer to a revoke, before this client's
 * own open, setattr or setxattr of the file (each waits for the data
 * first), and at unmount once the data is sent (this client's stats show
 * them meanwhile).  After
 * tsr_fs_fsync they survive any crash of a minority of replicas, of the
 * MDS and of this process; a write-back that failed is reported by the
 * next tsr_fs_fsync of each file open for writing then (one that failed
 * after its file's last close: by the first fsync after the next open),
 * and by tsr_fs_flush and tsr_fs_close without BUF.
 *
 * Threads: any thread may call, on the same tsr_file too (FUSE's workers
 * write one file from several threads); a file is closed once, after
 * every other call on it returned.  Files still open at unmount are the
 * caller's to close first.  The MDS session follows the MDS map: when rank 0
 * moves to a standby, calls in flight are sent again to it.
 */
#ifndef TESSERA_FS_H
#define TESSERA_FS_H

#include <tessera/client.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

TSR_BEGIN_DECLS

struct tsr_fs;
struct tsr_file;

#define TSR_FS_ROOT 1u

struct tsr_fs_cred {
	uint32_t uid, gid;
	uint32_t ngroups;            /* at most 64 are sent */
	const uint32_t *groups;
};

struct tsr_fs_time {
	int64_t sec;
	uint32_t nsec;
};

struct tsr_fs_stat {
	uint64_t ino;
	uint32_t mode, uid, gid, nlink;
	uint64_t rdev, size, blocks;   /* blocks: of 512 bytes */
	struct tsr_fs_time atime, mtime, ctime, btime;
	uint64_t change;               /* changes with every change */
	uint32_t blksize;              /* the layout's stripe unit */
};

/* Open a session with the file system's MDS through c (which must
 * outlive it): 0, or an error with the reason in err.  timeout_ms (0:
 * 30 s) bounds the wait for an active MDS; after the mount,
 * client_mds_timeout (60 s) bounds each call's.  One mount per client at
 * a time (-EBUSY): the MDS knows a session by the client's id. */
TSR_API int tsr_fs_mount(struct tsr_client *c, uint64_t timeout_ms, struct tsr_fs **out,
			 char *err, size_t errlen);
/* Close the session (close every file first). */
TSR_API void tsr_fs_unmount(struct tsr_fs *fs);
TSR_API const char *tsr_fs_why(void);

/* ---- Names ---- */

TSR_API int tsr_fs_lookup(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
			  const char *name, struct tsr_fs_stat *out);
/* lookup and getattr: the MDS's attributes, with the size and mtime of
 * this client's own writes to open files, not yet sent (fsync, close). */
TSR_API int tsr_fs_getattr(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
			   struct tsr_fs_stat *out);
/* Which fields of tsr_fs_setattr's attr apply. */
#define TSR_FS_SET_MODE 0x1u
#define TSR_FS_SET_UID 0x2u
#define TSR_FS_SET_GID 0x4u
#define TSR_FS_SET_SIZE 0x8u
#define TSR_FS_SET_ATIME 0x10u
#define TSR_FS_SET_MTIME 0x20u
#define TSR_FS_SET_ATIME_NOW 0x40u
#define TSR_FS_SET_MTIME_NOW 0x80u
TSR_API int tsr_fs_setattr(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
			   const struct tsr_fs_stat *attr, unsigned mask,
			   struct tsr_fs_stat *out);
/* The same through an open file (ftruncate, futimens): a size change
 * needs it open for writing, and no more permission than its open had. */
TSR_API int tsr_fs_fsetattr(struct tsr_file *f, const struct tsr_fs_stat *attr,
			    unsigned mask, struct tsr_fs_stat *out);
/* mode's type: S_IFREG (or 0), S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK.
 * excl: fail with -EEXIST when the name exists. */
TSR_API int tsr_fs_mknod(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
			 const char *name, uint32_t mode, uint64_t rdev,
			 struct tsr_fs_stat *out);
TSR_API int tsr_fs_mkdir(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
			 const char *name, uint32_t mode, struct tsr_fs_stat *out);
TSR_API int tsr_fs_symlink(struct tsr_fs *fs, const struct tsr_fs_cred *cr,
			   uint64_t parent, const char *name, const char *target,
			   struct tsr_fs_stat *out);
/* The target into buf[cap] with a NUL: its length, or an error
 * (-ERANGE: cap too small). */
TSR_API ssize_t tsr_fs_readlink(struct tsr_fs *fs, const struct tsr_fs_cred *cr,
				uint64_t ino, char *buf, size_t cap);
TSR_API int tsr_fs_unlink(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
			  const char *name);
TSR_API int tsr_fs_rmdir(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
			 const char *name);
/* flags: 0 or RENAME_NOREPLACE. */
TSR_API int tsr_fs_rename(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
			  const char *name, uint64_t newparent, const char *newname,
			  unsigned flags);
TSR_API int tsr_fs_link(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
			uint64_t newparent, const char *newname, struct tsr_fs_stat *out);

/* The entries of directory ino after cookie (0: from the start), in a
 * stable order: fn(arg, name, stat, cookie) for each (the cookie resumes
 * after that entry; non-zero from fn stops, and is returned).  max: at
 * most this many (0: all).  "." and ".." are not listed. */
typedef int (*tsr_fs_dirent_fn)(void *arg, const char *name, const struct tsr_fs_stat *st,
				uint64_t cookie);
TSR_API int tsr_fs_readdir(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
			   uint64_t cookie, uint32_t max, tsr_fs_dirent_fn fn, void *arg);

/* Extended attributes (user.*, trusted.*, security.*, and the virtual
 * tessera.dir.* and tessera.file.layout* of doc/client.md).  get and list
 * return the length (with cap 0: the length needed); -ERANGE when it does
 * not fit.  flags of set: XATTR_CREATE, XATTR_REPLACE. */
TSR_API ssize_t tsr_fs_getxattr(struct tsr_fs *fs, const struct tsr_fs_cred *cr,
				uint64_t ino, const char *name, void *buf, size_t cap);
TSR_API int tsr_fs_setxattr(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
			    const char *name, const void *val, size_t len, int flags);
TSR_API ssize_t tsr_fs_listxattr(struct tsr_fs *fs, const struct tsr_fs_cred *cr,
				 uint64_t ino, char *buf, size_t cap);
TSR_API int tsr_fs_removexattr(struct tsr_fs *fs, const struct tsr_fs_cred *cr,
			       uint64_t ino, const char *name);

/* statfs: the cluster's space as the monitors last heard from the OSDs
 * (`tessera osd df`), divided by the copies the root's data pool keeps,
 * and the files and directories the file system holds. */
struct tsr_fs_statfs {
	uint64_t bytes_total, bytes_free;   /* for data, after the copies */
	uint64_t files;                     /* files and directories */
	uint32_t copies;                    /* of the root's data pool */
};
TSR_API int tsr_fs_statfs(struct tsr_fs *fs, struct tsr_fs_statfs *out);

/* ---- Locks ----
 *
 * POSIX byte-range locks (fcntl F_SETLK and the like) and flock(2) locks,
 * coordinated by the MDS between every client: an owner (a number the
 * caller chooses: FUSE gives the process's) holds them; a lock of another
 * owner conflicts when the ranges overlap and either is a write lock;
 * flock locks (TSR_FS_LOCK_FLOCK) cover the whole file and never meet
 * POSIX ones.  A client's locks go when its session closes.  Not yet: a
 * failover of the MDS drops them. */
#define TSR_FS_LOCK_FLOCK 0x100
struct tsr_fs_lock {
	uint64_t start, end;         /* end inclusive; UINT64_MAX: to the end */
	uint64_t owner;
	uint32_t pid;
	int type;                    /* F_RDLCK, F_WRLCK or F_UNLCK, | FLOCK */
};
/* The lock of another owner that *lk could not be taken beside, in *lk,
 * or lk->type F_UNLCK when it could. */
TSR_API int tsr_fs_getlk(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
			 struct tsr_fs_lock *lk);
/* Take, change or release a lock: 0, or -EAGAIN when another owner holds
 * a conflicting one (wait: ask again, every 10 to 100 ms, until granted). */
TSR_API int tsr_fs_setlk(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
			 const struct tsr_fs_lock *lk, int wait);

/* ---- Files ---- */

/* flags: O_RDONLY, O_WRONLY, O_RDWR, with O_TRUNC, O_APPEND. */
TSR_API int tsr_fs_open(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
			int flags, struct tsr_file **out);
/* O_CREAT in one call: the file named name in parent, made when absent
 * (O_EXCL: must be absent), then opened. */
TSR_API int tsr_fs_create(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
			  const char *name, uint32_t mode, int flags, struct tsr_file **out,
			  struct tsr_fs_stat *st);
/* Bytes read (0 at or past the end; holes read as zeros), or an error. */
TSR_API ssize_t tsr_fs_read(struct tsr_file *f, void *buf, size_t len, uint64_t off);
/* Bytes written (all of them), or an error.  With O_APPEND, off is the
 * end of the file as this client knows it. */
TSR_API ssize_t tsr_fs_write(struct tsr_file *f, const void *buf, size_t len, uint64_t off);
TSR_API int tsr_fs_fsync(struct tsr_file *f, int datasync);
/* close(2) of a descriptor of f (f stays open): its size and mtime told
 * to the MDS once its held-back data is on the OSDs (without BUF: both
 * sent and waited for; see "Durability" above). */
TSR_API int tsr_fs_flush(struct tsr_file *f);
/* fsync(2) of a directory: every change this client made before it
 * (its names among them) durable in the MDS's journal.  0, or -EIO. */
TSR_API int tsr_fs_fsyncdir(struct tsr_fs *fs, uint64_t ino);
/* fallocate(2): mode 0 makes the file at least off + len long (holes read
 * as zeros: space is not reserved ahead); FALLOC_FL_PUNCH_HOLE |
 * FALLOC_FL_KEEP_SIZE zeros [off, off + len) within the file; KEEP_SIZE
 * alone does nothing; other modes are -EOPNOTSUPP. */
TSR_API int tsr_fs_fallocate(struct tsr_file *f, int mode, uint64_t off, uint64_t len);
/* The file's attributes; as for tsr_fs_getattr, with the size and mtime
 * of this client's writes not yet sent to the MDS. */
TSR_API int tsr_fs_fstat(struct tsr_file *f, struct tsr_fs_stat *out);
TSR_API int tsr_fs_close(struct tsr_file *f);

/* ---- A page cache above the client (a FUSE front end's) ---- */

/* Called per open, right after tsr_fs_open: 1 when data of the file a
 * cache above kept from earlier opens is still good (this client has held
 * the CACHE capability since the cache last dropped the file, so no other
 * client wrote it since); else 0, after the inval callback dropped it.
 * Either way, what the cache reads from now on is good until the inval
 * callback names the inode.  (A descriptor that stays open after CACHE
 * went caches what it reads without it: the kernel's attribute timeout
 * bounds how long another client's later writes stay unseen there.) */
TSR_API int tsr_fs_keep_cache(struct tsr_file *f);
/* inval(arg, ino) runs, on the client's caps thread and under none of its
 * locks, when the client loses CACHE on ino while it has the file open
 * (another client opened it for writing or truncates it): the cache must
 * drop ino's data before it returns — the other client goes on once it
 * has.  NULL stops the calls; once this returns, none is running. */
TSR_API void tsr_fs_set_inval(struct tsr_fs *fs, void (*inval)(void *arg, uint64_t ino),
			      void *arg);

/* ---- Paths ---- */

/* The inode of path (absolute, from the root; symlinks followed except
 * the last one when nofollow). */
TSR_API int tsr_fs_walk(struct tsr_fs *fs, const struct tsr_fs_cred *cr, const char *path,
			int nofollow, struct tsr_fs_stat *out);
/* The parent directory of path and its last name (into name[256]). */
TSR_API int tsr_fs_walk_parent(struct tsr_fs *fs, const struct tsr_fs_cred *cr,
			       const char *path, uint64_t *parent, char *name);

TSR_END_DECLS

#endif
