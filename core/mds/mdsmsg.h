/* mdsmsg.h — the messages between file clients and the MDS: one X-macro
 * registry of types and one of request operations, each with a versioned
 * encoding decoded as hostile input.
 *
 *   MDS_SESSION  client -> mds: open, renew or close the client's session
 *                (the answer is an MDS_REPLY with the same tid)
 *   MDS_REQUEST  client -> mds: one metadata operation
 *   MDS_REPLY    mds -> client: its result
 *   MDS_CAP      mds -> client: give back capabilities (a revoke), which
 *                the client answers with a CAPS request (ACK, or RELEASE
 *                when no file of the inode is open there)
 *
 * Types are TSR_MSG_USER + 128 + n (the monitors' and the OSDs' are
 * below, monmsg.h and osdmsg.h).
 *
 *   session = envelope v1 { u64 tid, u32 op, u64 client }
 *   request = envelope v1 { u64 tid, u64 oldest, u32 op, u32 flags,
 *                           u64 ino, u64 ino2,
 *                           string name, string name2,
 *                           u32 mode, u64 rdev,
 *                           u32 uid, u32 gid, u32 ngroups, ngroups x u32,
 *                           setattr { u32 mask, u32 mode, u32 uid, u32 gid,
 *                                     u64 size, i64 atime_s, u32 atime_ns,
 *                                     i64 mtime_s, u32 mtime_ns },
 *                           u64 cookie, u32 max, bytes value,
 *                           lock }
 *   lock    = { u64 start, u64 end, u64 owner, u32 pid, u32 type }
 *             (end inclusive; type: F_RDLCK, F_WRLCK, F_UNLCK, with
 *             TSR_LOCK_FLOCK for flock(2) locks)
 *   reply   = envelope v2, compat 1 { u64 tid, i32 result, string why,
 *                           u32 n, n x inode,
 *                           u32 nent, nent x { string name, u64 cookie,
 *                                              inode },
 *                           u8 end, bytes value,
 *                           (v2) u32 caps, u64 cap_seq, u64 osd_barrier,
 *                           (v3) u64 dcache_seq }
 *   cap     = envelope v1 { u32 op, u64 ino, u32 caps, u64 seq }
 *
 * Requests name inodes by number.  ino2 is a hint for an inode the MDS
 * may not hold in its cache: the directory the client found it in, so the
 * MDS can load that directory and find it.
 */
#ifndef TSR_MDS_MDSMSG_H
#define TSR_MDS_MDSMSG_H

#include "mds/fsmeta.h"
#include "msg/frame.h"

#define TSR_MDS_MESSAGES(X)                                                    \
	X(SESSION, 0, "mds session", session)                                  \
	X(REQUEST, 1, "mds request", request)                                  \
	X(REPLY, 2, "mds reply", reply)                                        \
	X(CAP, 3, "mds cap", cap)

enum {
#define TSR_MDS_MSG_ENUM(name, n, label, fn) TSR_MSG_MDS_##name = TSR_MSG_USER + 128 + (n),
	TSR_MDS_MESSAGES(TSR_MDS_MSG_ENUM)
#undef TSR_MDS_MSG_ENUM
};

enum { TSR_MDS_SESSION_OPEN = 1, TSR_MDS_SESSION_RENEW = 2, TSR_MDS_SESSION_CLOSE = 3 };

struct tsr_mds_session {
	uint64_t tid;
	uint32_t op;
	uint64_t client;             /* the client's id (its messenger's) */
};

/* X(enum, value, name, changes the namespace) */
#define TSR_MDS_OPS(X)                                                         \
	X(LOOKUP, 1, "lookup", 0)        /* ino: dir, name -> [0] child */     \
	X(GETATTR, 2, "getattr", 0)      /* ino (ino2 hint) -> [0] */          \
	X(SETATTR, 3, "setattr", 1)      /* ino, setattr -> [0] */             \
	X(MKNOD, 4, "mknod", 1)          /* ino: dir, name, mode, rdev ->       \
	                                    [0] new, [1] dir; flags: EXCL */    \
	X(MKDIR, 5, "mkdir", 1)          /* as mknod */                        \
	X(SYMLINK, 6, "symlink", 1)      /* ino: dir, name, value: target */   \
	X(UNLINK, 7, "unlink", 1)        /* ino: dir, name -> [0] dir */       \
	X(RMDIR, 8, "rmdir", 1)          /* as unlink */                       \
	X(RENAME, 9, "rename", 1)        /* ino, name -> ino2, name2; flags:   \
	                                    RENAME_NOREPLACE, _EXCHANGE ->      \
	                                    the dirs, then what moved (last) */ \
	X(LINK, 10, "link", 1)           /* ino2: inode, ino: dir, name */     \
	X(READDIR, 11, "readdir", 0)     /* ino, cookie, max -> entries */     \
	X(OPEN, 12, "open", 0)           /* ino, flags (O_ACCMODE, O_TRUNC) */ \
	X(GETXATTR, 13, "getxattr", 0)   /* ino, name -> value */              \
	X(SETXATTR, 14, "setxattr", 1)   /* ino, name, value; flags: XATTR_*  */\
	X(LISTXATTR, 15, "listxattr", 0) /* ino -> value: names, NUL after each */\
	X(RMXATTR, 16, "removexattr", 1) /* ino, name */                       \
	X(GETLK, 17, "getlk", 0)         /* ino, lk -> value: a conflicting     \
	                                    lock (lock encoding), or none */    \
	X(SETLK, 18, "setlk", 0)         /* ino, lk: -EBUSY on a conflict */   \
	X(CAPS, 19, "caps", 0)           /* flags CAPS_ACK: ino, mode: caps     \
	                                    kept, cookie: the revoke's seq;     \
	                                    CAPS_RELEASE: value: (u64 ino, u64  \
	                                    size, u64 seq) given back (seq 0,   \
	                                    or the grant given back: an older   \
	                                    one than the holder's is ignored;   \
	                                    also                                \
	                                    the answer to a revoke of what no   \
	                                    file uses) */                       \
	X(RECONNECT, 20, "reconnect", 0) /* value: what the client held of the \
	                                    MDS before (reconnect encoding) */

enum tsr_mds_op {
#define X(e, v, n, w) TSR_MDS_OP_##e = v,
	TSR_MDS_OPS(X)
#undef X
	TSR_MDS_OP_MAX
};

/* setattr mask bits */
#define TSR_SETATTR_MODE 0x1u
#define TSR_SETATTR_UID 0x2u
#define TSR_SETATTR_GID 0x4u
#define TSR_SETATTR_SIZE 0x8u
#define TSR_SETATTR_ATIME 0x10u
#define TSR_SETATTR_MTIME 0x20u
#define TSR_SETATTR_ATIME_NOW 0x40u
#define TSR_SETATTR_MTIME_NOW 0x80u
/* The change's ctime as the client has shown it (a tell of what it held
 * back under BUF, sent as root): the MDS keeps the later of it and the
 * inode's own, so the ctime a stat showed before the tell stays. */
#define TSR_SETATTR_CTIME 0x100u
/* The size only grows (a client reporting what it wrote: a smaller
 * size than the MDS holds is ignored, not a truncate). */
#define TSR_SETATTR_SIZE_GROW 0x200u
#define TSR_SETATTR_ALL 0x3ffu

/* request flags */
#define TSR_MDS_EXCL 0x1u              /* MKNOD: EEXIST if present */
#define TSR_MDS_CREATE_OPEN 0x8u       /* MKNOD of a file: the maker opens it,
                                          and holds capabilities at once */
#define TSR_MDS_CREATE_ACC 0x30u       /* ... with O_ACCMODE << 4 */
#define TSR_MDS_OPEN_PROBE 0x80000000u /* OPEN: may the caller open it so?
                                          (no capabilities: it will not) */
#define TSR_MDS_OPENED 0x4u            /* SETATTR: through a file the caller
                                          holds open for writing (its open
                                          checked the permission) */

/* CAPS request flags */
#define TSR_MDS_CAPS_ACK 0x1u
#define TSR_MDS_CAPS_RELEASE 0x2u
#define TSR_MDS_CAPS_RELEASE_MAX 1024  /* inos in one release */

/* Capabilities: what a client may do with an inode without asking the
 * MDS, granted at open (the reply's caps) and revoked on conflict
 * (MDS_CAP).  RD and WR follow the client's opens and are taken only by
 * eviction; CACHE and BUF are given back when another client needs them
 * gone (doc/architecture.md, "Capabilities"). */
#define TSR_CAP_RD 0x1u       /* read the file's data from the OSDs */
#define TSR_CAP_WR 0x2u       /* write its data to the OSDs */
#define TSR_CAP_CACHE 0x4u    /* keep its data and size cached: no other
				 client writes it */
#define TSR_CAP_BUF 0x8u      /* hold back its size and mtime (told at
				 fsync or close): no other client has it */
#define TSR_CAP_DCACHE 0x10u  /* (a directory) keep its entries, and the
				 attributes of their inodes, cached: no
				 other client changes them meanwhile */
#define TSR_CAP_ALL 0x1fu

enum { TSR_MDS_CAP_REVOKE = 1, TSR_MDS_CAP_REVOKE_DIR = 2 /* DCACHE */ };

struct tsr_mds_cap {
	uint32_t op;
	uint64_t ino;
	uint32_t caps;               /* what the client may keep */
	uint64_t seq;                /* the holder's grant or revoke number */
};

#define TSR_MDS_MAX_GROUPS 64

/* A byte-range lock (POSIX) or a whole-file one (flock), held by an owner
 * of a client: the MDS keeps them in memory (not journaled: clients
 * re-assert them with a new MDS, RECONNECT). */
#define TSR_LOCK_FLOCK 0x100u
struct tsr_mds_lock {
	uint64_t start, end;         /* inclusive; end UINT64_MAX: to the end */
	uint64_t owner;              /* the client's lock owner */
	uint32_t pid;
	uint32_t type;               /* F_RDLCK, F_WRLCK, F_UNLCK [| FLOCK] */
};
int tsr_mdsmsg_lock_encode(struct tsr_enc *e, const struct tsr_mds_lock *lk);
int tsr_mdsmsg_lock_decode(const void *buf, size_t len, struct tsr_mds_lock *lk);

/* RECONNECT's value: a client's capabilities and locks, re-asserted with
 * a new holder of the rank.
 *   reconnect = { u32 ncaps, ncaps x { u64 ino, u32 wanted, u32 issued },
 *                 u32 nlocks, nlocks x { u64 ino, lock } } */
#define TSR_MDS_RECONNECT_MAX 1024     /* caps, and locks, in one request:
                                          8 + 1024 x (16 + 40) bytes, below
                                          TSR_FS_XATTR_VALUE_MAX */
#define TSR_MDS_RECONNECT_LAST 0x1u    /* RECONNECT flags: the client's last */
struct tsr_mds_reconnect_cap {
	uint64_t ino;
	uint32_t wanted, issued;
};
struct tsr_mds_reconnect_lock {
	uint64_t ino;
	struct tsr_mds_lock lk;
};
struct tsr_mds_reconnect {
	struct tsr_mds_reconnect_cap *caps;
	uint32_t ncaps;
	struct tsr_mds_reconnect_lock *locks;
	uint32_t nlocks;
};

#define TSR_MDS_READDIR_MAX 4096

struct tsr_mds_request {
	uint64_t tid;
	uint64_t oldest;             /* the client's oldest request still
					unanswered: the MDS forgets the
					changes it made for older ones */
	uint32_t op;
	uint32_t flags;
	uint64_t ino, ino2;
	char name[TSR_FS_NAME_MAX + 1];
	char name2[TSR_FS_NAME_MAX + 1];
	uint32_t mode;
	uint64_t rdev;
	/* the caller's credentials (the file client's user) */
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[TSR_MDS_MAX_GROUPS];
	struct {
		uint32_t mask;
		uint32_t mode, uid, gid;
		uint64_t size;
		struct tsr_ftime atime, mtime;
		struct tsr_ftime ctime;  /* (v3) TSR_SETATTR_CTIME */
	} sa;
	uint64_t cookie;
	uint32_t max;
	const void *value;           /* borrowed from the message */
	size_t value_len;
	struct tsr_mds_lock lk;      /* GETLK, SETLK */
	/* (v2) a change answered early (TSR_MDS_REPLY_EARLY) and sent again
	 * to a new holder of the rank before it serves: REQ_REPLAY, and what
	 * the first answer made (MKNOD, MKDIR, SYMLINK: its inode) */
	uint32_t rflags;
	uint64_t made_ino;
};

#define TSR_MDS_REQ_REPLAY 0x1u
#define TSR_MDS_REQ_EARLY 0x2u    /* the client keeps changes answered
				     EARLY and replays them (an MDS answers
				     others only once durable: upgrade MDSs
				     before clients) */

struct tsr_mds_dirent {
	char name[TSR_FS_NAME_MAX + 1];
	uint64_t cookie;
	struct tsr_inode inode;
};

#define TSR_MDS_REPLY_MAX_INODES 4

struct tsr_mds_reply {
	uint64_t tid;
	int32_t result;              /* 0 or a negative errno */
	char why[256];
	uint32_t n;
	struct tsr_inode in[TSR_MDS_REPLY_MAX_INODES];
	uint32_t nent;
	struct tsr_mds_dirent *ent;  /* owned (decoded) */
	uint8_t end;                 /* READDIR: no more entries */
	void *value;                 /* owned (decoded) */
	size_t value_len;
	/* OPEN, a create: the capabilities granted on in[0] (MKDIR: DCACHE
	 * on the new directory), their seq, and the OSD map epoch the
	 * client must hold before it reads or writes the file (one that
	 * blocklists a client evicted for it; 0: none) */
	uint32_t caps;
	uint64_t cap_seq;
	uint64_t osd_barrier;
	/* LOOKUP, READDIR, MKNOD/MKDIR/SYMLINK: DCACHE granted on the
	 * request's directory, numbered so (0: not granted) */
	uint64_t dcache_seq;
	/* (v4) TSR_MDS_REPLY_FINAL, EARLY or SAFE */
	uint8_t stage;
	/* (v5) OPEN, a create: in[0] has no security.* attribute.  While
	 * the client keeps BUF granted with it, none comes: the MDS recalls
	 * BUF from others before it sets one (the kernel asks for
	 * security.capability before every write) */
	uint8_t nosec;
};

/* A change is answered once the MDS has applied it (EARLY), before its
 * journal holds it; SAFE (the tid only) follows once it does.  The
 * client keeps the request until then and sends it again (REQ_REPLAY)
 * to a new holder of the rank.  Everything else is FINAL: durable, and
 * resting on nothing another client could lose. */
#define TSR_MDS_REPLY_FINAL 0
#define TSR_MDS_REPLY_EARLY 1
#define TSR_MDS_REPLY_SAFE 2

const char *tsr_mds_op_name(uint32_t op);
/* Does op change the namespace (is it journaled)? */
int tsr_mds_op_writes(uint32_t op);

int tsr_mdsmsg_session_encode(struct tsr_enc *e, const struct tsr_mds_session *s);
int tsr_mdsmsg_session_decode(const void *buf, size_t len, struct tsr_mds_session *s,
			      char *err, size_t errlen);
int tsr_mdsmsg_request_encode(struct tsr_enc *e, const struct tsr_mds_request *r);
/* r->value borrows from buf. */
int tsr_mdsmsg_request_decode(const void *buf, size_t len, struct tsr_mds_request *r,
			      char *err, size_t errlen);
int tsr_mdsmsg_reply_encode(struct tsr_enc *e, const struct tsr_mds_reply *r);
int tsr_mdsmsg_reply_decode(const void *buf, size_t len, struct tsr_mds_reply *r,
			    char *err, size_t errlen);
void tsr_mdsmsg_reply_free(struct tsr_mds_reply *r);
int tsr_mdsmsg_reconnect_encode(struct tsr_enc *e, const struct tsr_mds_reconnect *r);
/* Owns what it decodes (tsr_mdsmsg_reconnect_free), also on error. */
int tsr_mdsmsg_reconnect_decode(const void *buf, size_t len, struct tsr_mds_reconnect *r,
				char *err, size_t errlen);
void tsr_mdsmsg_reconnect_free(struct tsr_mds_reconnect *r);
int tsr_mdsmsg_cap_encode(struct tsr_enc *e, const struct tsr_mds_cap *c);
int tsr_mdsmsg_cap_decode(const void *buf, size_t len, struct tsr_mds_cap *c, char *err,
			  size_t errlen);

/* The registry's label of a type, or NULL for another type. */
const char *tsr_mdsmsg_name(uint32_t type);
/* Decode a message of any registry type, encode it again and decode that:
 * 0 when it round-trips, -EBADMSG when the input does not decode, -EPROTO
 * when it does but does not round-trip (a bug), -ENOENT for another type.
 * The fuzz target runs it. */
int tsr_mdsmsg_check(uint32_t type, const void *buf, size_t len, char *err,
		     size_t errlen);

#endif
