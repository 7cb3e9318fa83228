/* fsmeta.h — the file system's metadata as it is stored and sent: inodes,
 * layouts, directory entries, the journal's events, and the names of the
 * objects in the metadata pool.  Shared by the MDS (which stores them) and
 * the file client (which receives inodes in replies).
 *
 * Conventions: encoders return 0 or the encoder's error; decoders take a
 * buffer as hostile input and return 0 or -EBADMSG (-ENOMEM) with the
 * reason in err.  A decoded inode owns its symlink target and xattrs
 * (tsr_inode_free); a decoded event borrows nothing either.
 *
 * Objects of rank R's metadata (R in hex, ino in hex):
 *
 *   i.<ino>                  an inode kept in an object of its own: the
 *                            root (ino 1) and files with several links;
 *                            data: the inode's encoding; xattr "ver"
 *   d.<ino>.<frag:08x>       a directory fragment (frag 0: the whole
 *                            directory, until fragments exist): one omap
 *                            key per entry (the name), the value a dentry;
 *                            xattr "ver" (16 hex digits: the last journal
 *                            event applied), "bt" (backtrace: parent ino
 *                            and name, so a directory is found from its
 *                            ino alone)
 *   mds<R>.journal           the journal's header: xattr "fence" (16 hex:
 *                            the MDS map epoch of the holder), data: the
 *                            first live segment (u64, little-endian)
 *   mds<R>.journal.<seg:016x>  one segment: records appended back to back
 *                            (record = u32 len, u32 crc32c, event[len]);
 *                            xattr "fence" as the header
 *   mds<R>.inos              the rank's inode numbers: data: the first ino
 *                            not yet promised (u64), written before any
 *                            ino below it is given out
 *
 * File data lives in the layout's pool as <ino>.<objno:08x>.
 *
 * Inode numbers: 1 is the root; rank R hands out inos from
 * ((R + 1) << 40) up, so ranks never collide.
 */
#ifndef TSR_MDS_FSMETA_H
#define TSR_MDS_FSMETA_H

#include <tessera/encoding.h>

#include <stddef.h>
#include <stdint.h>

#define TSR_FS_ROOT_INO 1u
#define TSR_FS_NAME_MAX 255u
#define TSR_FS_SYMLINK_MAX 4095u
#define TSR_FS_XATTR_NAME_MAX 255u
#define TSR_FS_XATTR_VALUE_MAX 65536u
#define TSR_FS_XATTRS_MAX (256u * 1024u)  /* all of an inode's, encoded */
#define TSR_FS_MAX_SIZE (1ull << 62)        /* the largest file */

/* How a file's bytes map onto objects: stripe units of stripe_unit bytes go
 * round-robin over stripe_count objects, each object_size bytes, then
 * the next set of objects. */
struct tsr_layout {
	uint32_t object_size;        /* a multiple of stripe_unit */
	uint32_t stripe_unit;        /* a multiple of 64 KiB */
	uint32_t stripe_count;       /* 1 .. 256 */
	int64_t pool;                /* the data pool */
};

/* Recursive statistics of a directory: everything below it. */
struct tsr_rstat {
	uint64_t rbytes;             /* bytes of regular files */
	uint64_t rfiles;             /* files (not directories) */
	uint64_t rsubdirs;           /* directories */
	int64_t rctime_sec;          /* the latest ctime below */
	uint32_t rctime_nsec;
};

struct tsr_ftime {
	int64_t sec;
	uint32_t nsec;               /* < 1e9 */
};

/* Is a earlier than b? */
static inline int
tsr_ftime_before(struct tsr_ftime a, struct tsr_ftime b)
{
	return a.sec < b.sec || (a.sec == b.sec && a.nsec < b.nsec);
}

struct tsr_inode {
	uint64_t ino;
	uint32_t mode;               /* S_IFMT and permission bits */
	uint32_t uid, gid;
	uint32_t nlink;
	uint64_t rdev;
	uint64_t size;
	struct tsr_ftime atime, mtime, ctime, btime;
	uint64_t change;             /* bumped by every change (the change
					attribute: caches compare it) */
	struct tsr_layout layout;    /* files: theirs; directories: what new
					files inherit */
	struct tsr_rstat rstat;      /* directories */
	char *symlink;               /* the target (symlinks), owned */
	uint8_t *xattrs;             /* n x { string name, bytes value }, owned */
	size_t xattrs_len;
	uint32_t nxattrs;
};

/* The default layout (4 MiB objects, one stripe) in pool. */
void tsr_layout_default(struct tsr_layout *l, int64_t pool);
/* 0, or -EINVAL with the reason. */
int tsr_layout_check(const struct tsr_layout *l, char *err, size_t errlen);
/* Where byte off of a file lies: object number and offset in it, and how
 * many bytes from off stay in that object's stripe unit. */
void tsr_layout_map(const struct tsr_layout *l, uint64_t off, uint64_t *objno,
		    uint64_t *objoff, uint64_t *left);
/* "<ino>.<objno:08x>" into buf[cap] (at least 32). */
void tsr_fs_data_oid(uint64_t ino, uint64_t objno, char *buf, size_t cap);

void tsr_inode_free(struct tsr_inode *in);
/* A deep copy; 0 or -ENOMEM. */
int tsr_inode_copy(struct tsr_inode *dst, const struct tsr_inode *src);
int tsr_inode_encode(struct tsr_enc *e, const struct tsr_inode *in);
/* From d: one inode envelope (d advances past it). */
int tsr_inode_decode_from(struct tsr_dec *d, struct tsr_inode *in, char *err,
			  size_t errlen);
int tsr_inode_decode(const void *buf, size_t len, struct tsr_inode *in, char *err,
		     size_t errlen);

/* An inode's xattrs: the value of name (borrowed from in) or -ENODATA;
 * set (value NULL: remove; -ENODATA when absent, -E2BIG past the limits). */
int tsr_inode_xattr_get(const struct tsr_inode *in, const char *name, const void **val,
			size_t *len);
int tsr_inode_xattr_set(struct tsr_inode *in, const char *name, const void *val,
			size_t len);
/* The names, each NUL-terminated, into a malloc'd buffer. */
int tsr_inode_xattr_list(const struct tsr_inode *in, char **out, size_t *len);

/* The type byte of a mode (DT_REG ...). */
uint8_t tsr_fs_dtype(uint32_t mode);

/* A directory entry as its fragment's omap holds it:
 *
 *   envelope v1 { u8 kind, u64 ino, u8 dtype, [inode, when primary] }
 *
 * primary: the inode is embedded (one link); remote: the inode lives in
 * its own object i.<ino> (hard links). */
enum { TSR_DENTRY_PRIMARY = 1, TSR_DENTRY_REMOTE = 2 };
struct tsr_dentry {
	uint8_t kind;
	uint8_t dtype;
	uint64_t ino;
	struct tsr_inode inode;      /* primary only */
};
int tsr_dentry_encode(struct tsr_enc *e, const struct tsr_dentry *de);
int tsr_dentry_decode(const void *buf, size_t len, struct tsr_dentry *de, char *err,
		      size_t errlen);
void tsr_dentry_free(struct tsr_dentry *de);

/* ---- The journal's events ----
 *
 * An event is one request's change, applied whole or not at all:
 *
 *   envelope v1 { u64 seq, u64 client, u64 tid, u64 ino, u32 n, n x update }
 *
 * client and tid name the request that made the event (0: none) and ino
 * the inode it made or changed, so that after a failover a request sent
 * again is answered, not done twice.
 *   update = envelope v1 { u8 type, fields by type }
 *     LINK     u64 dir, string name, dentry        set an entry
 *     UNLINK   u64 dir, string name                remove an entry
 *     IOBJ     inode                               set an inode object
 *     IOBJ_RM  u64 ino                             remove it
 *     DIR_NEW  u64 ino, u64 parent, string name    a new empty directory
 *     DIR_RM   u64 ino                             remove a directory
 *     REPARENT u64 ino, u64 parent, string name    a directory moved
 *     RSTAT    u64 dir, i64 dbytes, i64 dfiles, i64 dsubdirs, i64 sec,
 *              u32 nsec                            add to dir's rstat and
 *                                                  its ancestors'
 *
 * Each directory and inode object remembers the seq of the last event
 * applied to it ("ver"); replay applies an update only to those whose ver
 * is below the event's seq, so an event is applied once however often
 * replay runs and whatever was written back before a crash.
 */
#define TSR_FS_UPDATES(X)                                                      \
	X(LINK, 1, "link")                                                     \
	X(UNLINK, 2, "unlink")                                                 \
	X(IOBJ, 3, "inode")                                                    \
	X(IOBJ_RM, 4, "inode rm")                                              \
	X(DIR_NEW, 5, "dir new")                                               \
	X(DIR_RM, 6, "dir rm")                                                 \
	X(REPARENT, 7, "reparent")                                             \
	X(RSTAT, 8, "rstat")

enum tsr_fs_update_type {
#define X(e, v, n) TSR_FSU_##e = v,
	TSR_FS_UPDATES(X)
#undef X
};

#define TSR_FS_EVENT_MAX_UPDATES 64

struct tsr_fs_update {
	uint8_t type;
	uint64_t ino;                /* dir (LINK, UNLINK, RSTAT), the inode's
					own (IOBJ: as decoded, inode.ino;
					IOBJ_RM, DIR_*, REPARENT) */
	uint64_t parent;             /* DIR_NEW, REPARENT */
	char name[TSR_FS_NAME_MAX + 1];
	struct tsr_dentry de;        /* LINK */
	struct tsr_inode inode;      /* IOBJ */
	int64_t dbytes, dfiles, dsubdirs;   /* RSTAT */
	struct tsr_ftime rctime;            /* RSTAT */
};

struct tsr_fs_event {
	uint64_t seq;
	uint64_t client, tid;        /* the request (0, 0: none) */
	uint64_t ino;                /* what it made or changed (0: nothing) */
	uint32_t n;
	struct tsr_fs_update *u;     /* owned */
};

const char *tsr_fs_update_name(uint8_t type);
/* A new, empty update at the end of ev: NULL past the maximum. */
struct tsr_fs_update *tsr_fs_event_add(struct tsr_fs_event *ev, uint8_t type);
void tsr_fs_event_free(struct tsr_fs_event *ev);
int tsr_fs_event_encode(struct tsr_enc *e, const struct tsr_fs_event *ev);
int tsr_fs_event_decode(const void *buf, size_t len, struct tsr_fs_event *ev, char *err,
			size_t errlen);

/* Object names of the metadata pool (see the top), into buf[cap >= 64]. */
void tsr_fs_dir_oid(uint64_t ino, uint32_t frag, char *buf, size_t cap);
void tsr_fs_inode_oid(uint64_t ino, char *buf, size_t cap);
void tsr_fs_journal_oid(int32_t rank, char *buf, size_t cap);
void tsr_fs_segment_oid(int32_t rank, uint64_t seg, char *buf, size_t cap);
void tsr_fs_inos_oid(int32_t rank, char *buf, size_t cap);
/* The first ino of rank's range. */
uint64_t tsr_fs_rank_ino_base(int32_t rank);
/* A directory entry's cookie: its place in the directory's order (by
 * cookie, then name) and the offset a listing goes on from.  A hash of
 * the name, so it stays while other names come and go, and a client that
 * holds every name of a directory lists it in the MDS's order.  Above 2
 * (offsets 1 and 2 are "." and ".."). */
uint64_t tsr_fs_dir_cookie(const char *name);

/* 16 lower-case hex digits and a NUL into buf[17]: versions and fences,
 * so that the OSD's byte comparison (cmpxattr) orders them as numbers. */
void tsr_fs_hex16(uint64_t v, char buf[17]);
/* The reverse: 0 and *v, or -EINVAL. */
int tsr_fs_unhex16(const void *p, size_t len, uint64_t *v);

#endif
