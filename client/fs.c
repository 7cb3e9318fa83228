/* fs.c — the file client (tessera/fs.h): an MDS session for metadata,
 * the object client for data.
 *
 * The session.  Requests go to the MDS that holds rank 0 in the MDS map,
 * on a lossless connection.  Each waits in `pending` under its tid until
 * its reply comes; when the map moves rank 0 elsewhere (a failover), the
 * session is opened with the new holder and every pending request is sent
 * to it again.  An MDS that is not active yet answers -EAGAIN: the request
 * goes again after a pause, until the call's deadline.
 *
 * (A change whose reply was lost in a failover is sent again and may
 * then fail as if it had not happened — mkdir answering -EEXIST; the MDS
 * does not yet remember completed requests per session.)
 */
#include "client_int.h"
#include "dcache.h"
#include "wbuf.h"

#include "event/loop.h"
#include "event/workq.h"
#include "mds/fsmeta.h"
#include "mds/mdsmsg.h"
#include "map/mdsmap.h"
#include "map/osdmap.h"
#include "map/osdmap_epoch.h"
#include "mon/mapsub.h"
#include "mon/monc.h"
#include "msg/msgr.h"
#include "util/u64map.h"
#include "util/util.h"

#include <tessera/client.h>
#include <tessera/fs.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_MS 60000u
#define RENEW_TICKS 5                /* a session renewal every 5 s */
#define MAX_SYMLINKS 40
#define IO_INFLIGHT 16              /* object operations of one call at once */

static __thread char why_buf[256];

const char *
tsr_fs_why(void)
{
	return why_buf;
}

static int
failf(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
failf(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why_buf, sizeof(why_buf), fmt, ap);
	va_end(ap);
	return rc;
}

struct call {
	struct call *next;
	const struct tsr_mds_request *r;  /* the caller's, while it waits */
	uint64_t tid;
	uint8_t *front;              /* the request's encoding, kept to resend */
	size_t front_len;
	uint64_t gen;                /* the session it went on (0: not sent) */
	int done;
	struct tsr_mds_reply rep;
	uint64_t rep_gen;            /* the session that answered */
};

/* The session that answered this thread's last call() (grant.gen). */
static __thread uint64_t call_rep_gen;

/* A change the MDS answered EARLY: kept until its SAFE, and sent again
 * (REQ_REPLAY) to a new holder of the rank, whose journal may lack it. */
struct unsafe {
	struct unsafe *next;         /* in tid order */
	struct tsr_mds_request r;    /* (r.value: ours) */
	uint64_t sent_ns;            /* answered, or last sent again (mono) */
};

#define UNSAFE_MAX 1024              /* changes not yet durable, at most */
#define UNSAFE_SPAN 2048             /* and requests since the oldest: the MDS
					remembers the last 4,096 changes */
#define UNSAFE_RESEND_NS 10000000000ull  /* no SAFE this long: asked again */

/* Tells whose answers are kept against older answers handled after them
 * (seen_newest): at 4,000 tells a second, one second's worth. */
#define SEEN_MAX 4096

struct tsr_fs {
	struct tsr_client *c;
	struct tsr_msgr *msgr;
	struct tsr_loop *loop;
	struct tsr_mapsub *sub;
	uint64_t timeout_ms;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	/* the session (under lock) */
	struct tsr_conn *conn;       /* to the rank 0 holder, or NULL */
	char mds_addr[TSR_MDSMAP_NAME];
	uint64_t mds_gid;
	uint64_t gen;                /* bumped per new session */
	uint64_t next_tid;
	struct call *pending;
	struct unsafe *unsafe;       /* answered EARLY, not yet SAFE */
	size_t nunsafe;
	int unsafe_waiters;          /* threads waiting for SAFEs (a SAFE wakes
					them; the calls waiting for answers
					are not woken for it) */
	uint64_t n_lost;             /* changes whose replay was refused */
	uint64_t lost_tid, lost_seen; /* the latest change lost, and the latest
					fsync told of (unsafe_wait) */
	struct tsr_conn *doomed;     /* the session replaced, closed outside the lock */
	struct tsr_u64map parent;    /* ino -> the directory it was seen in */
	struct tsr_u64map open;      /* ino -> its open files (a list) */
	struct tsr_u64map hidden;    /* ino -> struct hidden: unlinked while open */
	struct tsr_u64map caps;      /* ino -> struct ccap */
	struct dc dc;                /* names and attributes (dcache.h) */
	struct lockrec *locks;       /* the locks we took, oldest first */
	size_t nlocks;
	struct tsr_workq *capq;      /* revokes are answered here */
	uint64_t timer;
	uint64_t ticks;
	int closing;
	int evicted;                 /* the MDS evicted us: every call fails */
	uint64_t heard_ns;           /* the session's last message (mono) */
	struct tsr_fs_statfs statfs_last;  /* the last answer, and when */
	uint64_t statfs_at;
	/* this client's changes of security.* attributes: under way, and
	 * begun or ended so far (cap_grant) */
	unsigned sec_changing;
	uint64_t sec_gen;
	/* ino -> a write-back failure no handle told when its ccap went
	 * (-errno as a pointer): told by the next open's fsync */
	struct tsr_u64map late_errs;
	/* the write-back cache: each ccap's wb, under wb_lock (taken after
	 * lock and a file's lock, never before) */
	pthread_mutex_t wb_lock;
	pthread_cond_t wb_cv;        /* a send was answered */
	uint64_t wb_total;           /* bytes held back, every file */
	uint64_t wb_unsent;          /* of them, not yet sent (dirty) */
	uint64_t wb_trim;            /* bytes sent since the last malloc_trim */
	uint64_t wb_inflight;        /* operations sending them */
	uint64_t wb_max;             /* client_dirty_max (0: nothing is) */
	int wb_job;                  /* a write-back job is on capq (lock) */
	int tell_stop;               /* capq goes: no more tell jobs (wb_lock) */
	int wb_stop;                 /* unmounting: no more jobs (lock) */
	/* the page cache above (tsr_fs_set_inval): called under inval_lock */
	pthread_mutex_t inval_lock;
	void (*inval)(void *arg, uint64_t ino);
	void *inval_arg;
	/* read-ahead (see "Read-ahead"): every file's pieces, under ra_lock
	 * (taken after lock, never before) */
	pthread_mutex_t ra_lock;
	pthread_cond_t ra_cv;        /* a piece was answered */
	uint64_t ra_max;             /* client_readahead_max (0: none) */
	uint64_t ra_bytes;           /* pieces held and in flight, every file */
	uint64_t ra_out;             /* pieces in flight */
	struct tsr_file *ra_oldest, *ra_newest; /* files holding pieces, by
						   their last read */
	/* the attributes the MDS answered this client's latest tells with
	 * (ino -> struct tsr_fs_stat, under lock; seen_newest), the
	 * SEEN_MAX newest inodes: seen_ring, oldest first from seen_next */
	struct tsr_u64map seen;
	uint64_t seen_ring[SEEN_MAX];
	size_t seen_next;
};

/* Capabilities held on an inode (fs->lock): see mdsmsg.h.  A ccap
 * lives while a file of the inode is open or being opened (busy), and
 * after, until the tick gives it back to the MDS (a second idle) or a
 * revoke takes it. */
struct ccap {
	uint32_t issued;
	uint64_t seq;
	int busy;                    /* open files, and opens under way */
	uint64_t idle_since;         /* mono ns, when busy fell to 0 */
	uint64_t size;               /* the largest size a closed file knew */
	struct wbuf *wb;             /* writes held back (fs->wb_lock), or NULL;
					a ccap goes only once it is empty */
	int kept;                    /* CACHE held since the page cache above
					dropped the file (tsr_fs_keep_cache) */
	uint64_t cache_lost;         /* times CACHE went (kept's guard) */
	/* times and a widened mode set here under BUF, not yet told
	 * (TSR_SETATTR_ATIME/MTIME/MODE bits), and their values: told with
	 * the size (flush_attrs, tell_send, a revoke's answer); held_gen
	 * tells a newer setting from a told one */
	uint32_t held;
	struct tsr_ftime held_atime, held_mtime, held_ctime;
	uint32_t held_mode;          /* (TSR_SETATTR_MODE: permission bits) */
	uint64_t held_gen;
	/* no security.* attribute, as the grant of BUF said (tsr_mds_reply's
	 * nosec): while BUF stays, getxattr answers those names here */
	int nosec;
	/* the size (TSR_SETATTR_SIZE) and mtime (TSR_SETATTR_MTIME) of
	 * handles closed under BUF, not yet told: told once their data is on
	 * the OSDs (tell_job), with a revoke's answer, before this client's
	 * open, setattr, setxattr or fsync of the file, or at unmount;
	 * tell_gen tells a newer close from a told one, telling a tell under
	 * way (tell_send) */
	uint32_t tell;               /* (TELL_HELD: only the held times) */
	uint64_t tell_size;
	struct tsr_ftime tell_mtime;
	uint64_t tell_gen;
	int telling;
	/* read-ahead's guards: files open here for writing, and times the
	 * data changed here (the close of such a file, a truncate) */
	int writers;
	uint64_t data_gen;
};

#define CAP_IDLE_NS 1000000000u   /* caps unused this long are given back */
#define TELL_HELD 0x80000000u     /* ccap tell: the held times to tell */
/* tell_send's flags */
#define TELL_NOWAIT 0x1u          /* (the caps thread) nothing waited for: a
				     tell under way, or data still held, is
				     left for later */
#define TELL_DATA_SENT 0x2u       /* (unmount) only if the data is answered */

/* A lock this client took (see lock_log). */
struct lockrec {
	struct lockrec *next;
	uint64_t ino;
	struct tsr_mds_lock lk;
};


/* ---- The session ---- */

static void on_msg(struct tsr_conn *conn, struct tsr_msg *m, void *arg);

static void
send_locked(struct tsr_fs *fs, struct call *k)
{
	struct tsr_msg *m;

	if (fs->conn == NULL)
		return;
	m = tsr_msg_new(TSR_MSG_MDS_REQUEST, k->front, k->front_len);
	if (m == NULL)
		return; /* sent at the next session, or the deadline */
	k->gen = fs->gen;
	tsr_conn_send(fs->conn, m, TSR_SEND_NOWAIT);
}

/* ---- Changes answered early (fs->lock held) ---- */

/* r was answered EARLY by rep: kept, with what it made. */
static void
unsafe_add(struct tsr_fs *fs, const struct tsr_mds_request *r,
	   const struct tsr_mds_reply *rep)
{
	struct unsafe *u = tsr_xcalloc(1, sizeof(*u)), **pp;

	u->r = *r;
	if (r->value_len) {
		void *v = tsr_xcalloc(1, r->value_len);
		memcpy(v, r->value, r->value_len);
		u->r.value = v;
	}
	if ((r->op == TSR_MDS_OP_MKNOD || r->op == TSR_MDS_OP_MKDIR ||
	     r->op == TSR_MDS_OP_SYMLINK) && rep->result == 0 && rep->n > 0)
		u->r.made_ino = rep->in[0].ino;
	u->sent_ns = tsr_mono_ns();
	/* (answers come about in tid order: from the end, mostly) */
	for (pp = &fs->unsafe; *pp && (*pp)->r.tid < r->tid; pp = &(*pp)->next)
		;
	u->next = *pp;
	*pp = u;
	fs->nunsafe++;
}

static void
unsafe_free(struct unsafe *u)
{
	free((void *)u->r.value);
	free(u);
}

/* The kept change tid, or NULL. */
static struct unsafe **
unsafe_find(struct tsr_fs *fs, uint64_t tid)
{
	struct unsafe **pp;

	for (pp = &fs->unsafe; *pp; pp = &(*pp)->next)
		if ((*pp)->r.tid == tid)
			return pp;
	return NULL;
}

static void
unsafe_drop_all(struct tsr_fs *fs)
{
	while (fs->unsafe) {
		struct unsafe *u = fs->unsafe;
		fs->unsafe = u->next;
		if (u->r.tid > fs->lost_tid)
			fs->lost_tid = u->r.tid;
		unsafe_free(u);
	}
	fs->nunsafe = 0;
	pthread_cond_broadcast(&fs->cv);
}

/* An answer to no waiting call: a SAFE, or the answer to a change sent
 * again.  1 when it was one of ours. */
static int
unsafe_answer(struct tsr_fs *fs, const struct tsr_mds_reply *rep)
{
	struct unsafe **pp = unsafe_find(fs, rep->tid), *u;

	if (pp == NULL)
		return 0;
	u = *pp;
	if (rep->stage == TSR_MDS_REPLY_EARLY)
		return 1; /* (sent again, answered early again: its SAFE comes) */
	if (rep->result == -EAGAIN) {
		u->sent_ns = 0; /* (the MDS is not ready: again at the tick) */
		return 1;
	}
	if (rep->result < 0 && rep->stage != TSR_MDS_REPLY_SAFE) {
		/* the journal lost it, and it could not be made again */
		fs->n_lost++;
		if (u->r.tid > fs->lost_tid)
			fs->lost_tid = u->r.tid;
		fprintf(stderr, "tessera: %s %" PRIx64 "/%s, answered before the MDS "
			"failed, was lost with it: doing it again failed: %s\n",
			tsr_mds_op_name(u->r.op), u->r.ino, u->r.name, rep->why);
	}
	*pp = u->next;
	unsafe_free(u);
	fs->nunsafe--;
	if (fs->unsafe_waiters > 0)
		pthread_cond_broadcast(&fs->cv);
	return 1;
}

/* The oldest request whose answer we may still need: a call waiting, or
 * a change kept (the MDS remembers the changes from it on). */
static uint64_t
oldest_tid(struct tsr_fs *fs, uint64_t tid)
{
	for (struct call *p = fs->pending; p; p = p->next)
		if (p->tid < tid)
			tid = p->tid;
	if (fs->unsafe && fs->unsafe->r.tid < tid)
		tid = fs->unsafe->r.tid;
	return tid;
}

/* Encode r and send it on the session, no answer waited for (fs->lock
 * held, fs->conn set). */
static void
request_send(struct tsr_fs *fs, const struct tsr_mds_request *r)
{
	struct tsr_enc e;
	struct tsr_msg *m;

	tsr_enc_init(&e);
	if (tsr_mdsmsg_request_encode(&e, r) == 0 &&
	    (m = tsr_msg_from_enc(TSR_MSG_MDS_REQUEST, &e)) != NULL)
		tsr_conn_send(fs->conn, m, TSR_SEND_NOWAIT);
	else
		tsr_enc_release(&e);
}

/* Send u again, as a replay, on the session. */
static void
unsafe_send(struct tsr_fs *fs, struct unsafe *u)
{
	if (fs->conn == NULL)
		return;
	u->r.rflags = TSR_MDS_REQ_REPLAY | TSR_MDS_REQ_EARLY;
	u->r.oldest = oldest_tid(fs, u->r.tid);
	u->sent_ns = tsr_mono_ns();
	request_send(fs, &u->r);
}

/* Wait until the changes sent so far are durable, within the timeout:
 * 0, or -EIO (also when one was lost: told once, as errseq). */
static int
unsafe_wait(struct tsr_fs *fs)
{
	uint64_t deadline = tsr_mono_ns() + fs->timeout_ms * 1000000u, tid;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	tid = fs->next_tid; /* (not those sent meanwhile) */
	fs->unsafe_waiters++;
	while (fs->unsafe && fs->unsafe->r.tid <= tid && !fs->closing) {
		if (tsr_cond_wait_until(&fs->cv, &fs->lock, deadline) != 0 &&
		    fs->unsafe && fs->unsafe->r.tid <= tid) {
			rc = failf(-EIO, "the MDS's journal did not take a change "
				   "(%s of %" PRIx64 ") within %" PRIu64 " ms",
				   tsr_mds_op_name(fs->unsafe->r.op), fs->unsafe->r.ino,
				   fs->timeout_ms);
			break;
		}
	}
	fs->unsafe_waiters--;
	if (rc == 0 && fs->lost_tid > fs->lost_seen && fs->lost_seen < tid) {
		rc = failf(-EIO, "%" PRIu64 " changes the MDS answered were lost when it "
			   "failed (this client was evicted, or making them again failed)",
			   fs->n_lost ? fs->n_lost : 1);
		fs->lost_seen = fs->lost_tid;
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

/* Open or close the session on conn (no answer is waited for: a request
 * that finds no session is answered all the same). */
static void
send_session(struct tsr_fs *fs, struct tsr_conn *conn, uint32_t op)
{
	struct tsr_mds_session s = { .op = op, .client = tsr_client_id_(fs->c) };
	struct tsr_enc e;
	struct tsr_msg *m;

	tsr_enc_init(&e);
	if (tsr_mdsmsg_session_encode(&e, &s) == 0 &&
	    (m = tsr_msg_from_enc(TSR_MSG_MDS_SESSION, &e)) != NULL)
		tsr_conn_send(conn, m, TSR_SEND_NOWAIT);
	else
		tsr_enc_release(&e);
}

static int
caps_forget(void *arg, uint64_t ino, void *val)
{
	struct ccap *cc = val;

	(void)arg;
	(void)ino;
	__atomic_store_n(&cc->issued, cc->issued & (TSR_CAP_RD | TSR_CAP_WR),
			 __ATOMIC_RELEASE);
	cc->seq = 0; /* a new holder numbers anew */
	cc->kept = 0; /* (a cache above keeps what it read until its next open) */
	cc->cache_lost++;
	__atomic_store_n(&cc->held, 0, __ATOMIC_RELAXED); /* (BUF went) */
	cc->nosec = 0;
	cc->tell = 0; /* (others' now: lost, as the data still held back) */
	return 0;
}

static void reconnect_send(struct tsr_fs *fs);

/* The holder of rank 0 per the map held: (re)open the session with it
 * when it changed.  On the loop, or at mount. */
static void
follow_map(struct tsr_fs *fs)
{
	struct tsr_mdsmap mm;
	const struct tsr_mdsmap_mds *h;
	struct tsr_conn *old = NULL, *conn = NULL;
	struct tsr_conn_events ev = { .msg = on_msg, .flags = TSR_MSGR_INLINE, .arg = fs };
	char target[TSR_MDSMAP_NAME + 8];
	int rc;

	if (tsr_mapsub_mdsmap(fs->sub, &mm) < 0)
		return;
	h = tsr_mdsmap_rank(&mm, 0);
	pthread_mutex_lock(&fs->lock);
	if (fs->closing || h == NULL || h->state != TSR_MDS_ACTIVE ||
	    (fs->conn && h->gid == fs->mds_gid)) {
		pthread_mutex_unlock(&fs->lock);
		tsr_mdsmap_free(&mm);
		return;
	}
	snprintf(target, sizeof(target), "mds.%s", h->name);
	rc = tsr_msgr_connect_ev(fs->msgr, h->addr, target, 1, &ev, &conn);
	if (rc < 0) {
		pthread_mutex_unlock(&fs->lock);
		tsr_mdsmap_free(&mm);
		return;
	}
	old = fs->conn;
	fs->conn = conn;
	fs->mds_gid = h->gid;
	tsr_strlcpy(fs->mds_addr, h->addr, sizeof(fs->mds_addr));
	fs->gen++;
	/* a new holder of the rank: what we held of the last one is told
	 * again, even nothing, so it need not wait for us, nor evict us when
	 * its window closes.  The first session too: an MDS started since
	 * this client's last session (unmounted, and mounted again) may
	 * still list it */
	dc_clear(&fs->dc); /* (the new MDS granted no names) */
	/* the changes answered early, first: the new holder makes again
	 * what its journal lacks before it serves anyone */
	for (struct unsafe *u = fs->unsafe; u; u = u->next)
		unsafe_send(fs, u);
	reconnect_send(fs);
	/* the session first, then everything still waiting */
	send_session(fs, conn, TSR_MDS_SESSION_OPEN);
	/* oldest first, as they were sent: pending is newest first */
	{
		size_t n = 0, i = 0;
		for (struct call *k = fs->pending; k; k = k->next)
			n++;
		struct call **v = n ? calloc(n, sizeof(*v)) : NULL;
		for (struct call *k = fs->pending; k && v; k = k->next)
			if (!k->done) /* (answered: kept, if early, and replayed) */
				v[i++] = k;
		while (v && i > 0)
			send_locked(fs, v[--i]);
		free(v);
	}
	pthread_cond_broadcast(&fs->cv);
	pthread_mutex_unlock(&fs->lock);
	tsr_mdsmap_free(&mm);
	if (old) {
		tsr_conn_close(old);
		tsr_conn_put(old);
	}
}

static void
on_map(void *arg, int which, uint64_t epoch, int full)
{
	(void)epoch;
	(void)full;
	if (which == TSR_MON_MAP_MDS)
		follow_map(arg);
}

static void on_cap(struct tsr_fs *fs, struct tsr_msg *m);
static void send_now(struct tsr_fs *fs, struct tsr_mds_request *r);
static void req_init(struct tsr_mds_request *r, uint32_t op, uint64_t ino,
		     const struct tsr_fs_cred *cr);
static void lock_log(struct tsr_fs *fs, uint64_t ino, const struct tsr_mds_lock *lk);

static void to_stat(const struct tsr_inode *in, struct tsr_fs_stat *st);


/* What an answer tells the cache of names (fs->lock held; on the
 * session's thread, in the order answers and revokes came). */
static void
dc_apply(struct tsr_fs *fs, const struct tsr_mds_request *r, const struct tsr_mds_reply *rep)
{
	struct dc *c = &fs->dc;
	struct tsr_fs_stat st;

	if (rep->result == -EAGAIN)
		return;
	switch (r->op) {
	case TSR_MDS_OP_LOOKUP:
		/* (an answer without a grant is not to be kept: the MDS says
		 * so of names it cannot keep us told about) */
		if (rep->dcache_seq == 0)
			break;
		dc_grant(c, r->ino, rep->dcache_seq);
		if (rep->result == 0 && rep->n > 0) {
			to_stat(&rep->in[0], &st);
			dc_put(c, r->ino, r->name, &st);
		} else if (rep->result == -ENOENT) {
			dc_put(c, r->ino, r->name, NULL);
		}
		break;
	case TSR_MDS_OP_READDIR:
		if (rep->dcache_seq == 0)
			break;
		dc_grant(c, r->ino, rep->dcache_seq);
		for (uint32_t i = 0; rep->result == 0 && i < rep->nent; i++) {
			to_stat(&rep->ent[i].inode, &st);
			dc_put(c, r->ino, rep->ent[i].name, &st);
		}
		/* every name in one answer, under a grant: the names cached
		 * now are the directory's (others changing it revoke first) */
		if (rep->result == 0 && rep->end && r->cookie == 0)
			dc_complete(c, r->ino);
		break;
	case TSR_MDS_OP_MKNOD:
	case TSR_MDS_OP_MKDIR:
	case TSR_MDS_OP_SYMLINK:
		if (rep->result < 0 || rep->n == 0) {
			dc_forget_name(c, r->ino, r->name);
			break;
		}
		if (rep->dcache_seq == 0) {
			dc_forget_name(c, r->ino, r->name);
			if (rep->n > 1) { /* the directory's new times */
				to_stat(&rep->in[1], &st);
				dc_set_attr(c, &st);
			}
			break;
		}
		dc_grant(c, r->ino, rep->dcache_seq);
		to_stat(&rep->in[0], &st);
		dc_put(c, r->ino, r->name, &st);
		if (r->op == TSR_MDS_OP_MKDIR && (rep->caps & TSR_CAP_DCACHE)) {
			/* a new directory, empty, ours to cache whole */
			dc_grant(c, st.ino, rep->cap_seq);
			dc_complete(c, st.ino);
		}
		if (rep->n > 1) { /* the directory's new times */
			to_stat(&rep->in[1], &st);
			dc_set_attr(c, &st);
		}
		break;
	case TSR_MDS_OP_UNLINK:
	case TSR_MDS_OP_RMDIR:
		if (rep->result < 0) {
			dc_forget_name(c, r->ino, r->name);
			break;
		}
		dc_put(c, r->ino, r->name, NULL);
		for (uint32_t i = 0; i < rep->n; i++) {
			to_stat(&rep->in[i], &st);
			dc_set_attr(c, &st);
		}
		break;
	case TSR_MDS_OP_RENAME:
		if (rep->result == 0 && rep->n >= 2 && r->flags == 0 && rep->dcache_seq &&
		    dc_held(c, r->ino) && dc_held(c, r->ino2)) {
			/* both directories ours to cache (the MDS took others'
			 * DCACHE first, and says the new entry may be kept: no
			 * other client writes it, and it is not linked
			 * elsewhere): the old name is gone, the new one names
			 * what moved (the last inode), and what it named
			 * before has a link fewer */
			struct tsr_fs_stat moved, old;
			dc_grant(c, r->ino2, rep->dcache_seq);
			to_stat(&rep->in[rep->n - 1], &moved);
			if (dc_lookup(c, r->ino2, r->name2, &old) == 1 && old.ino != moved.ino)
				dc_forget_ino(c, old.ino);
			dc_put(c, r->ino, r->name, NULL);
			dc_put(c, r->ino2, r->name2, &moved);
			for (uint32_t i = 0; i + 1 < rep->n; i++) {
				to_stat(&rep->in[i], &st);
				dc_set_attr(c, &st);
			}
			break;
		}
		/* fall through */
	case TSR_MDS_OP_LINK:
		/* names and the inodes they name: asked again */
		dc_forget_name(c, r->ino, r->name);
		dc_forget_name(c, r->ino2, r->name2);
		if (r->op == TSR_MDS_OP_LINK) {
			dc_forget_ino(c, r->ino2);
			dc_forget_ino(c, r->ino); /* (the directory's times) */
		}
		for (uint32_t i = 0; rep->result == 0 && i < rep->n; i++) {
			to_stat(&rep->in[i], &st);
			if (S_ISDIR(st.mode) && i + 1 < rep->n)
				dc_set_attr(c, &st);
			else
				dc_forget_ino(c, st.ino);
		}
		break;
	case TSR_MDS_OP_GETATTR:
	case TSR_MDS_OP_SETATTR:
	case TSR_MDS_OP_OPEN:
		if (rep->result == 0 && rep->n > 0) {
			to_stat(&rep->in[0], &st);
			dc_set_attr(c, &st);
		} else if (r->op == TSR_MDS_OP_SETATTR) {
			dc_forget_ino(c, r->ino);
		}
		break;
	case TSR_MDS_OP_SETXATTR:
	case TSR_MDS_OP_RMXATTR:
		dc_forget_ino(c, r->ino); /* (its ctime) */
		break;
	case TSR_MDS_OP_SETLK:
		if (rep->result == 0)
			lock_log(fs, r->ino, &r->lk);
		break;
	default:
		break;
	}
}

static void
on_msg(struct tsr_conn *conn, struct tsr_msg *m, void *arg)
{
	struct tsr_fs *fs = arg;
	struct tsr_mds_reply rep;
	char err[256];

	pthread_mutex_lock(&fs->lock);
	if (conn != fs->conn) {
		/* the session replaced: what the old MDS says counts no more */
		pthread_mutex_unlock(&fs->lock);
		tsr_msg_free(m, 0);
		return;
	}
	fs->heard_ns = tsr_mono_ns();
	pthread_mutex_unlock(&fs->lock);
	if (m->type == TSR_MSG_MDS_CAP) {
		on_cap(fs, m);
		return;
	}
	if (m->type != TSR_MSG_MDS_REPLY ||
	    tsr_mdsmsg_reply_decode(m->front, m->front_len, &rep, err, sizeof(err)) < 0) {
		tsr_msg_free(m, 0);
		return;
	}
	tsr_msg_free(m, 0);
	pthread_mutex_lock(&fs->lock);
	if (conn != fs->conn) { /* (replaced while we decoded) */
		pthread_mutex_unlock(&fs->lock);
		tsr_mdsmsg_reply_free(&rep);
		return;
	}
	for (struct call *k = fs->pending; rep.stage != TSR_MDS_REPLY_SAFE && k;
	     k = k->next) {
		if (k->tid == rep.tid && !k->done) {
			/* (kept here, not by the caller: its SAFE may come
			 * before the caller wakes) */
			if (rep.stage == TSR_MDS_REPLY_EARLY && rep.result == 0)
				unsafe_add(fs, k->r, &rep);
			dc_apply(fs, k->r, &rep);
			k->rep = rep;
			k->rep_gen = fs->gen;
			k->done = 1;
			/* (after the unlock: the woken caller does not meet
			 * the lock still held, one more sleep and wake) */
			pthread_mutex_unlock(&fs->lock);
			pthread_cond_broadcast(&fs->cv);
			return;
		}
	}
	unsafe_answer(fs, &rep);
	pthread_mutex_unlock(&fs->lock);
	tsr_mdsmsg_reply_free(&rep); /* a session's answer, or one given up */
}

/* Send a request with no wait for its answer (fs->lock held). */
static void
send_now(struct tsr_fs *fs, struct tsr_mds_request *r)
{
	if (fs->conn == NULL)
		return;
	r->tid = ++fs->next_tid;
	r->oldest = r->tid; /* (not a change: nothing done to forget) */
	request_send(fs, r);
}

/* One (ino, size, seq) entry of a CAPS RELEASE list: seq, the grant or
 * revoke given back (0: whatever is granted); size, the largest we know. */
static void
release_encode(struct tsr_enc *e, uint64_t ino, uint64_t size, uint64_t seq)
{
	tsr_enc_u64(e, ino);
	tsr_enc_u64(e, size);
	tsr_enc_u64(e, seq);
}

/* Give back what we hold of one inode, at once (fs->lock held, so no
 * open of ours passes it on the way). */
static void
send_release(struct tsr_fs *fs, uint64_t ino, uint64_t size, uint64_t seq)
{
	struct tsr_mds_request r;
	struct tsr_enc e;

	req_init(&r, TSR_MDS_OP_CAPS, ino, NULL);
	tsr_enc_init(&e);
	release_encode(&e, ino, size, seq);
	r.flags = TSR_MDS_CAPS_RELEASE;
	r.value = e.buf;
	r.value_len = e.len;
	send_now(fs, &r);
	tsr_enc_release(&e);
}

static int free_ccap(void *arg, uint64_t key, void *val);

/* ino's ccap goes (fs->lock held): a write-back failure of its that no
 * handle told is kept for the next open (late_errs). */
static void
ccap_drop(struct tsr_fs *fs, uint64_t ino)
{
	struct ccap *cc = tsr_u64map_del(&fs->caps, ino);
	int err = 0;

	if (cc == NULL)
		return;
	pthread_mutex_lock(&fs->wb_lock);
	if (cc->wb && cc->wb->err_seq != cc->wb->err_told)
		err = cc->wb->err;
	pthread_mutex_unlock(&fs->wb_lock);
	if (err < 0)
		tsr_u64map_put(&fs->late_errs, ino, (void *)(uintptr_t)-err);
	free_ccap(NULL, 0, cc);
}

/* Some of cc's file's data is held back or in flight (not under
 * wb_lock: it takes it). */
static int
wb_holds(struct tsr_fs *fs, struct ccap *cc)
{
	int holds;

	pthread_mutex_lock(&fs->wb_lock);
	holds = cc->wb != NULL && cc->wb->bytes > 0;
	pthread_mutex_unlock(&fs->wb_lock);
	return holds;
}

/* Nothing of cc's file is held back (fs->lock held): no data, and no
 * size or mtime of a closed handle. */
static int
wb_empty(struct tsr_fs *fs, struct ccap *cc)
{
	return !cc->tell && !wb_holds(fs, cc);
}

struct idle_ctx {
	struct tsr_fs *fs;
	uint64_t now;
	uint64_t *inos;
	struct tsr_enc e;            /* (ino, size) pairs: a CAPS RELEASE's */
	size_t n;
};

static void tell_post(struct tsr_fs *fs, uint64_t ino);

static int
find_idle(void *arg, uint64_t ino, void *val)
{
	struct idle_ctx *x = arg;
	struct ccap *cc = val;
	int idle = cc->busy == 0 && x->now - cc->idle_since >= CAP_IDLE_NS;

	/* a close's size whose tell failed, or was never posted: again */
	if (idle && cc->tell && !cc->telling && !wb_holds(x->fs, cc))
		tell_post(x->fs, ino);
	if (idle && x->n < TSR_MDS_CAPS_RELEASE_MAX && wb_empty(x->fs, cc)) {
		release_encode(&x->e, ino, cc->size, 0);
		x->inos[x->n++] = ino;
	}
	return 0;
}

/* Give back (in one request, unanswered) the caps no file has used for
 * a second (fs->lock held). */
static void
caps_release_idle(struct tsr_fs *fs)
{
	struct idle_ctx x = { .fs = fs, .now = tsr_mono_ns() };
	struct tsr_mds_request r;

	size_t nd;
	uint64_t *dropped = dc_take_dropped(&fs->dc, &nd);

	if (fs->caps.n == 0 && nd == 0)
		return;
	x.inos = tsr_xcalloc(TSR_MDS_CAPS_RELEASE_MAX, sizeof(*x.inos));
	tsr_enc_init(&x.e);
	/* directories the cache's bound dropped: given back as granted */
	for (size_t i = 0; i < nd && x.n < TSR_MDS_CAPS_RELEASE_MAX; i++, x.n++)
		release_encode(&x.e, dropped[2 * i], 0, dropped[2 * i + 1]);
	free(dropped);
	size_t ndirs = x.n;
	tsr_u64map_each(&fs->caps, find_idle, &x);
	for (size_t i = ndirs; i < x.n; i++)
		ccap_drop(fs, x.inos[i]);
	if (x.n && tsr_enc_error(&x.e) == 0) {
		memset(&r, 0, sizeof(r));
		r.op = TSR_MDS_OP_CAPS;
		r.flags = TSR_MDS_CAPS_RELEASE;
		r.ino = TSR_FS_ROOT; /* (names none: the list does) */
		r.value = x.e.buf;
		r.value_len = x.e.len;
		send_now(fs, &r);
	}
	tsr_enc_release(&x.e);
	free(x.inos);
}

static void wb_tick(struct tsr_fs *fs);

static void
tick(void *arg)
{
	struct tsr_fs *fs = arg;

	fs->timer = 0;
	follow_map(fs);
	pthread_mutex_lock(&fs->lock);
	/* the session stays alive (its locks with it) while we renew it */
	if (fs->conn && ++fs->ticks % RENEW_TICKS == 0)
		send_session(fs, fs->conn, TSR_MDS_SESSION_RENEW);
	caps_release_idle(fs);
	/* a SAFE lost with a connection, or a replay the MDS was not ready
	 * for: asked again (the MDS answers one it made from what it
	 * remembers) */
	uint64_t now = tsr_mono_ns();
	for (struct unsafe *u = fs->unsafe; u; u = u->next)
		if (now - u->sent_ns > UNSAFE_RESEND_NS || (u->sent_ns == 0 && fs->conn))
			unsafe_send(fs, u);
	wb_tick(fs);
	if (!fs->closing &&
	    tsr_loop_timer_add(fs->loop, 1000000000u, tick, fs, &fs->timer) < 0)
		fs->timer = 0;
	pthread_mutex_unlock(&fs->lock);
}

static void
start_tick(void *arg)
{
	tick(arg);
}

/* Send r and wait for its reply (in *rep: the caller frees it): the
 * reply's result, or -ETIMEDOUT.  -EAGAIN answers are retried. */
static int
call(struct tsr_fs *fs, struct tsr_mds_request *r, struct tsr_mds_reply *rep)
{
	struct call k = { 0 };
	struct tsr_enc e;
	uint64_t deadline = tsr_mono_ns() + fs->timeout_ms * 1000000u;
	int rc;

	memset(rep, 0, sizeof(*rep));
	/* the tid, the oldest still waiting (older ones need no answer
	 * again: the MDS forgets them) and the place in pending under one
	 * hold of the lock, so no request's oldest passes one not yet in
	 * pending; pending stays in tid order, newest first */
	pthread_mutex_lock(&fs->lock);
	/* a bound on the changes not yet durable (each waits for its SAFE
	 * here, and at the MDS among the requests it remembers) */
	while (tsr_mds_op_writes(r->op) && !fs->closing &&
	       (fs->nunsafe >= UNSAFE_MAX ||
		(fs->unsafe && fs->next_tid + 1 - fs->unsafe->r.tid >= UNSAFE_SPAN))) {
		fs->unsafe_waiters++;
		rc = tsr_cond_wait_until(&fs->cv, &fs->lock, deadline);
		fs->unsafe_waiters--;
		if (rc != 0) {
			pthread_mutex_unlock(&fs->lock);
			return failf(-EIO, "%s: the MDS's journal takes no changes (%zu "
				     "answered, not yet durable, for %" PRIu64 " ms)",
				     tsr_mds_op_name(r->op), fs->nunsafe, fs->timeout_ms);
		}
	}
	r->tid = ++fs->next_tid;
	r->rflags |= TSR_MDS_REQ_EARLY;
	r->oldest = oldest_tid(fs, r->tid);
	tsr_enc_init(&e);
	if ((rc = tsr_mdsmsg_request_encode(&e, r)) < 0) {
		pthread_mutex_unlock(&fs->lock);
		tsr_enc_release(&e);
		return failf(rc == -ENOMEM ? -ENOMEM : -EINVAL, "%s: the request does not "
			     "encode", tsr_mds_op_name(r->op));
	}
	if (fs->evicted) {
		pthread_mutex_unlock(&fs->lock);
		tsr_enc_release(&e);
		return failf(-EKEYREVOKED, "%s: this client was evicted by the MDS (it "
			     "did not give back a capability in time): mount again",
			     tsr_mds_op_name(r->op));
	}
	k.tid = r->tid;
	k.r = r;
	k.front = tsr_enc_take(&e, &k.front_len);
	k.next = fs->pending;
	fs->pending = &k;
	for (;;) {
		if (!k.done && k.gen != fs->gen)
			send_locked(fs, &k);
		if (k.done && k.rep.result == -EAGAIN && tsr_mono_ns() < deadline) {
			/* not active (yet): again in a moment */
			tsr_mdsmsg_reply_free(&k.rep);
			k.done = 0;
			k.gen = 0;
			uint64_t until = tsr_mono_ns() + 100000000u;
			while (!fs->closing &&
			       tsr_cond_wait_until(&fs->cv, &fs->lock, until) == 0)
				;
			continue;
		}
		if (k.done || fs->closing)
			break;
		if (tsr_cond_wait_until(&fs->cv, &fs->lock, deadline) != 0 && !k.done)
			break;
	}
	for (struct call **pp = &fs->pending; *pp; pp = &(*pp)->next)
		if (*pp == &k) {
			*pp = k.next;
			break;
		}
	if (!k.done && tsr_mds_op_writes(r->op)) {
		/* a change given up on may still be made (parked, or its
		 * journal slow), and its answer would not reach the cache:
		 * what it touches is not believed from memory now */
		if (r->name[0])
			dc_forget_name(&fs->dc, r->ino, r->name);
		if (r->name2[0])
			dc_forget_name(&fs->dc, r->ino2, r->name2);
		dc_forget_ino(&fs->dc, r->ino);
		dc_forget_ino(&fs->dc, r->ino2);
	}
	pthread_mutex_unlock(&fs->lock);
	free(k.front);
	if (!k.done)
		return failf(fs->closing ? -ESHUTDOWN : -ETIMEDOUT, "%s: no answer from the "
			     "MDS within %" PRIu64 " ms", tsr_mds_op_name(r->op),
			     fs->timeout_ms);
	*rep = k.rep;
	call_rep_gen = k.rep_gen;
	if (rep->result == -EKEYREVOKED) {
		/* what we held is others' now: nothing is cached or held back */
		pthread_mutex_lock(&fs->lock);
		fs->evicted = 1;
		tsr_u64map_each(&fs->caps, caps_forget, NULL);
		dc_clear(&fs->dc);
		unsafe_drop_all(fs); /* (the MDS takes nothing of ours now) */
		pthread_mutex_unlock(&fs->lock);
	}
	if (rep->result < 0)
		return failf(rep->result, "%s: %s", tsr_mds_op_name(r->op), rep->why);
	return 0;
}

int
tsr_fs_mount(struct tsr_client *c, uint64_t timeout_ms, struct tsr_fs **out, char *err,
	     size_t errlen)
{
	struct tsr_fs *fs;
	uint64_t deadline;
	int rc;

	*out = NULL;
	/* (the MDS knows a session by the client's id: two would share one
	 * set of capabilities, and revokes would reach only one) */
	if (tsr_client_fs_claim_(c) < 0)
		return tsr_errf(err, errlen, -EBUSY, "this client has the file system "
				"mounted already: connect another client for a second mount");
	fs = tsr_xcalloc(1, sizeof(*fs));
	fs->c = c;
	fs->msgr = tsr_client_msgr_(c);
	fs->loop = tsr_client_loop_(c);
	fs->sub = tsr_client_mapsub_(c);
	fs->timeout_ms = tsr_client_mds_timeout_(c);
	if (fs->timeout_ms == 0)
		fs->timeout_ms = DEFAULT_TIMEOUT_MS;
	fs->sec_gen = 1; /* (0: a grant's "changed meanwhile") */
	pthread_mutex_init(&fs->lock, NULL);
	tsr_cond_init_mono(&fs->cv);
	pthread_mutex_init(&fs->wb_lock, NULL);
	tsr_cond_init_mono(&fs->wb_cv);
	pthread_mutex_init(&fs->inval_lock, NULL);
	pthread_mutex_init(&fs->ra_lock, NULL);
	tsr_cond_init_mono(&fs->ra_cv);
	fs->wb_max = tsr_client_dirty_max_(c);
	fs->ra_max = tsr_client_readahead_max_(c);
	dc_init(&fs->dc);
	if ((rc = tsr_workq_create("fscaps", &fs->capq)) < 0) {
		dc_free(&fs->dc);
		pthread_cond_destroy(&fs->ra_cv);
		pthread_mutex_destroy(&fs->ra_lock);
		pthread_mutex_destroy(&fs->inval_lock);
		pthread_cond_destroy(&fs->wb_cv);
		pthread_mutex_destroy(&fs->wb_lock);
		pthread_cond_destroy(&fs->cv);
		pthread_mutex_destroy(&fs->lock);
		free(fs);
		tsr_client_fs_release_(c);
		return tsr_errf(err, errlen, rc, "starting a thread: %s", strerror(-rc));
	}
	if (timeout_ms == 0)
		timeout_ms = 30000;
	deadline = tsr_mono_ns() + timeout_ms * 1000000u;
	if ((rc = tsr_mapsub_listen(fs->sub, on_map, fs)) < 0) {
		tsr_fs_unmount(fs);
		return tsr_errf(err, errlen, rc, "no room for another listener of the maps");
	}
	if (tsr_loop_post(fs->loop, start_tick, fs) < 0) {
		tsr_fs_unmount(fs);
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	}
	/* an active rank 0 */
	pthread_mutex_lock(&fs->lock);
	while (fs->conn == NULL && tsr_mono_ns() < deadline)
		tsr_cond_wait_until(&fs->cv, &fs->lock, deadline);
	rc = fs->conn ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&fs->lock);
	if (rc < 0) {
		tsr_fs_unmount(fs);
		return tsr_errf(err, errlen, rc, "no active MDS for rank 0 within %" PRIu64
				" ms (is tessera-mds running, and the pools made?)", timeout_ms);
	}
	/* the root answers: the MDS serves */
	struct tsr_fs_stat st;
	uint64_t later = fs->timeout_ms; /* (client_mds_timeout) */
	fs->timeout_ms = timeout_ms;
	rc = tsr_fs_getattr(fs, NULL, TSR_FS_ROOT, &st);
	fs->timeout_ms = later;
	if (rc < 0) {
		tsr_errf(err, errlen, rc, "the MDS does not answer: %s", tsr_fs_why());
		tsr_fs_unmount(fs);
		return rc;
	}
	*out = fs;
	return 0;
}

static void
stop_on_loop(void *arg)
{
	struct tsr_fs *fs = arg;

	tsr_mapsub_unlisten(fs->sub, on_map, fs);
	if (fs->timer)
		tsr_loop_timer_cancel(fs->loop, fs->timer);
	fs->timer = 0;
	pthread_mutex_lock(&fs->lock);
	fs->closing = 2; /* stopped */
	pthread_cond_broadcast(&fs->cv);
	pthread_mutex_unlock(&fs->lock);
}

/* (a map's visitor) its value, one allocation, goes */
static int
free_value(void *arg, uint64_t key, void *val)
{
	(void)arg;
	(void)key;
	free(val);
	return 0;
}

static int
free_ccap(void *arg, uint64_t key, void *val)
{
	struct ccap *cc = val;

	(void)arg;
	(void)key;
	if (cc->wb) {
		wb_free(cc->wb);
		free(cc->wb);
	}
	free(cc);
	return 0;
}

static void wb_drain(struct tsr_fs *fs);
static int tell_send(struct tsr_fs *fs, uint64_t ino, unsigned flags);
static void tell_mode(struct tsr_fs *fs, uint64_t ino);
static void drop_held_mode(struct tsr_fs *fs, uint64_t ino);

static int
gather_tell(void *arg, uint64_t ino, void *val)
{
	struct ccap *cc = val;
	struct tsr_u64map *inos = arg;

	if (cc->tell)
		tsr_u64map_put(inos, ino, cc);
	return 0;
}

struct tell_all_ctx {
	struct tsr_fs *fs;
	size_t left;                 /* not told yet */
};

/* A tell the MDS did not answer within the client's timeout ends the
 * round: the others would wait as long each. */
static int
tell_one(void *arg, uint64_t ino, void *val)
{
	struct tell_all_ctx *x = arg;

	(void)val;
	x->left--;
	/* (unmount: not what wb_drain left) */
	if (tell_send(x->fs, ino, TELL_DATA_SENT) == -ETIMEDOUT) {
		x->left++;
		return 1;
	}
	return 0;
}

/* Every size a close held back, told now (at unmount, the data sent). */
static void
tell_all(struct tsr_fs *fs)
{
	struct tsr_u64map inos = { 0 };
	struct tell_all_ctx x = { .fs = fs };

	pthread_mutex_lock(&fs->lock);
	tsr_u64map_each(&fs->caps, gather_tell, &inos);
	pthread_mutex_unlock(&fs->lock);
	x.left = inos.n;
	tsr_u64map_each(&inos, tell_one, &x);
	if (x.left > 0)
		fprintf(stderr, "tessera: unmount: the MDS did not answer; the sizes of %zu "
			"closed files may not be told (the MDS keeps the sizes it had)\n",
			x.left);
	tsr_u64map_free(&inos);
}

void
tsr_fs_unmount(struct tsr_fs *fs)
{
	struct tsr_conn *conn;

	if (fs == NULL)
		return;
	pthread_mutex_lock(&fs->lock);
	fs->wb_stop = 1;
	pthread_mutex_unlock(&fs->lock);
	wb_drain(fs); /* what is held back goes to the OSDs first */
	tell_all(fs); /* then the sizes closes held back */
	/* the changes answered early: durable before the session goes */
	if (fs->conn && unsafe_wait(fs) < 0)
		fprintf(stderr, "tessera: unmount: %s\n", tsr_fs_why());
	pthread_mutex_lock(&fs->lock);
	fs->closing = 1;
	pthread_cond_broadcast(&fs->cv);
	pthread_mutex_unlock(&fs->lock);
	/* the loop lets go of us (listener, timer) before we go */
	if (tsr_loop_post(fs->loop, stop_on_loop, fs) == 0) {
		pthread_mutex_lock(&fs->lock);
		while (fs->closing != 2)
			pthread_cond_wait(&fs->cv, &fs->lock);
		pthread_mutex_unlock(&fs->lock);
	} else {
		tsr_mapsub_unlisten(fs->sub, on_map, fs);
	}
	pthread_mutex_lock(&fs->lock);
	conn = fs->conn;
	fs->conn = NULL;
	pthread_mutex_unlock(&fs->lock);
	if (conn) {
		send_session(fs, conn, TSR_MDS_SESSION_CLOSE);
		tsr_conn_close(conn); /* (no revoke comes in after) */
		tsr_conn_put(conn);
	}
	/* revokes under way end (their calls fail: closing) */
	pthread_mutex_lock(&fs->wb_lock);
	fs->tell_stop = 1;
	pthread_mutex_unlock(&fs->wb_lock);
	tsr_workq_destroy(fs->capq);
	/* (a revoke's send may have left operations in flight: they borrow
	 * the buffers) */
	pthread_mutex_lock(&fs->wb_lock);
	while (fs->wb_inflight > 0)
		pthread_cond_wait(&fs->wb_cv, &fs->wb_lock);
	if (fs->wb_total)
		fprintf(stderr, "tessera: unmount: %" PRIu64 " bytes of writes not sent to "
			"the OSDs within %" PRIu64 " ms were dropped\n", fs->wb_total,
			fs->timeout_ms);
	pthread_mutex_unlock(&fs->wb_lock);
	/* (read-ahead of files closed: its operations borrow the pieces) */
	pthread_mutex_lock(&fs->ra_lock);
	while (fs->ra_out > 0)
		pthread_cond_wait(&fs->ra_cv, &fs->ra_lock);
	pthread_mutex_unlock(&fs->ra_lock);
	tsr_u64map_free(&fs->parent);
	tsr_u64map_free(&fs->open);
	tsr_u64map_each(&fs->hidden, free_value, NULL);
	tsr_u64map_free(&fs->hidden);
	tsr_u64map_each(&fs->caps, free_ccap, NULL);
	tsr_u64map_free(&fs->caps);
	tsr_u64map_each(&fs->seen, free_value, NULL);
	tsr_u64map_free(&fs->seen);
	if (fs->late_errs.n)
		fprintf(stderr, "tessera: unmount: the write-back of %zu files failed after "
			"their last close, and no fsync told it\n", (size_t)fs->late_errs.n);
	tsr_u64map_free(&fs->late_errs);
	dc_free(&fs->dc);
	if (fs->nunsafe)
		fprintf(stderr, "tessera: unmount: %zu changes the MDS answered were not yet "
			"durable in its journal\n", fs->nunsafe);
	unsafe_drop_all(fs);
	while (fs->locks) {
		struct lockrec *l = fs->locks;
		fs->locks = l->next;
		free(l);
	}
	pthread_cond_destroy(&fs->ra_cv);
	pthread_mutex_destroy(&fs->ra_lock);
	pthread_mutex_destroy(&fs->inval_lock);
	pthread_cond_destroy(&fs->wb_cv);
	pthread_mutex_destroy(&fs->wb_lock);
	pthread_cond_destroy(&fs->cv);
	pthread_mutex_destroy(&fs->lock);
	tsr_client_fs_release_(fs->c);
	free(fs);
}

/* ---- Requests ---- */

static void
req_init(struct tsr_mds_request *r, uint32_t op, uint64_t ino, const struct tsr_fs_cred *cr)
{
	memset(r, 0, sizeof(*r));
	r->op = op;
	r->ino = ino;
	if (cr) {
		r->uid = cr->uid;
		r->gid = cr->gid;
		r->ngroups = cr->ngroups > TSR_MDS_MAX_GROUPS ? TSR_MDS_MAX_GROUPS
							      : cr->ngroups;
		for (uint32_t i = 0; i < r->ngroups; i++)
			r->groups[i] = cr->groups[i];
	}
}

static int
set_name(char *dst, const char *name)
{
	size_t n = strlen(name);

	if (n > TSR_FS_NAME_MAX)
		return failf(-ENAMETOOLONG, "a name of %zu bytes (at most %u)", n,
			     TSR_FS_NAME_MAX);
	memcpy(dst, name, n + 1);
	return 0;
}

static void
to_stat(const struct tsr_inode *in, struct tsr_fs_stat *st)
{
	if (st == NULL)
		return;
	memset(st, 0, sizeof(*st));
	st->ino = in->ino;
	st->mode = in->mode;
	st->uid = in->uid;
	st->gid = in->gid;
	st->nlink = in->nlink;
	st->rdev = in->rdev;
	st->size = in->size;
	st->blocks = (in->size + 511) / 512;
	st->atime.sec = in->atime.sec;
	st->atime.nsec = in->atime.nsec;
	st->mtime.sec = in->mtime.sec;
	st->mtime.nsec = in->mtime.nsec;
	st->ctime.sec = in->ctime.sec;
	st->ctime.nsec = in->ctime.nsec;
	st->btime.sec = in->btime.sec;
	st->btime.nsec = in->btime.nsec;
	st->change = in->change;
	st->blksize = in->layout.stripe_unit ? in->layout.stripe_unit : 4096;
}

static void
note_parent(struct tsr_fs *fs, uint64_t ino, uint64_t parent)
{
	if (ino == TSR_FS_ROOT)
		return;
	pthread_mutex_lock(&fs->lock);
	tsr_u64map_put(&fs->parent, ino, (void *)(uintptr_t)parent);
	pthread_mutex_unlock(&fs->lock);
}

static uint64_t
parent_of(struct tsr_fs *fs, uint64_t ino)
{
	uint64_t p;

	pthread_mutex_lock(&fs->lock);
	p = (uint64_t)(uintptr_t)tsr_u64map_get(&fs->parent, ino);
	pthread_mutex_unlock(&fs->lock);
	return p;
}

static void overlay(struct tsr_fs *fs, struct tsr_fs_stat *st);
static void open_files_set(struct tsr_fs *fs, uint64_t ino, unsigned mask, uint64_t size);

/* What an OPEN (or a create) grants. */
struct grant {
	uint32_t caps;
	uint64_t seq, barrier;
	int nosec;                   /* the file has no security.* attribute */
	uint64_t sec_gen;            /* fs->sec_gen when it was asked for */
	uint64_t gen;                /* fs->gen of the session that answered */
};

/* One request whose answer is an inode (in[0]) or nothing; g (may be
 * NULL) gets the capabilities it grants. */
static int
simple_g(struct tsr_fs *fs, struct tsr_mds_request *r, struct tsr_fs_stat *out,
	 struct tsr_inode *in_out, struct grant *g)
{
	struct tsr_mds_reply rep;
	int rc;

	if (r->ino2 == 0 && r->op != TSR_MDS_OP_RENAME && r->op != TSR_MDS_OP_LINK)
		r->ino2 = parent_of(fs, r->ino);
	if (g) {
		pthread_mutex_lock(&fs->lock);
		g->sec_gen = fs->sec_changing ? 0 : fs->sec_gen;
		pthread_mutex_unlock(&fs->lock);
	}
	rc = call(fs, r, &rep);
	if (g) {
		g->caps = rep.caps;
		g->seq = rep.cap_seq;
		g->barrier = rep.osd_barrier;
		g->nosec = rep.nosec;
		g->gen = rc == 0 ? call_rep_gen : 0;
	}
	if (rc == 0 && rep.n > 0) {
		to_stat(&rep.in[0], out);
		if (in_out)
			rc = tsr_inode_copy(in_out, &rep.in[0]);
	} else if (rc == 0 && out) {
		memset(out, 0, sizeof(*out));
	}
	tsr_mdsmsg_reply_free(&rep);
	return rc;
}

static int
simple(struct tsr_fs *fs, struct tsr_mds_request *r, struct tsr_fs_stat *out,
       struct tsr_inode *in_out)
{
	return simple_g(fs, r, out, in_out, NULL);
}

/* Is the cache of names to be believed (fs->lock held)?  Only while
 * the session is heard from (renewals are answered every 5 s): a client
 * cut off may have been evicted, its names changed by others meanwhile.
 * Well within mds_session_timeout and mds_cap_revoke_timeout. */
#define DC_LEASE_NS 10000000000ull

static int
dc_live(struct tsr_fs *fs)
{
	if (tsr_mono_ns() - fs->heard_ns < DC_LEASE_NS)
		return 1;
	dc_clear(&fs->dc);
	return 0;
}

/* May cr search (want 1) or list (want 4) directory dir, as far as the
 * cache knows (fs->lock held)?  Root may; others only where the cache
 * holds dir's mode. */
static int
may_dir(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t dir, uint32_t want)
{
	struct tsr_fs_stat d;
	uint32_t bits;

	if (cr == NULL || cr->uid == 0)
		return 1;
	if (!dc_getattr(&fs->dc, dir, &d))
		return 0;
	if (cr->uid == d.uid) {
		bits = d.mode >> 6;
	} else {
		int in = cr->gid == d.gid;
		/* (as many groups as the MDS would be told) */
		for (uint32_t i = 0; !in && i < cr->ngroups && i < TSR_MDS_MAX_GROUPS; i++)
			in = cr->groups[i] == d.gid;
		bits = in ? d.mode >> 3 : d.mode;
	}
	return (bits & want) == want;
}

static int
may_search(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t dir)
{
	return may_dir(fs, cr, dir, 1);
}

int
tsr_fs_lookup(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
	      const char *name, struct tsr_fs_stat *out)
{
	struct tsr_mds_request r;
	struct tsr_fs_stat st;
	int rc;

	req_init(&r, TSR_MDS_OP_LOOKUP, parent, cr);
	if ((rc = set_name(r.name, name)) < 0)
		return rc;
	pthread_mutex_lock(&fs->lock);
	rc = dc_live(fs) && may_search(fs, cr, parent) ? dc_lookup(&fs->dc, parent, name, &st)
						       : 0;
	pthread_mutex_unlock(&fs->lock);
	if (rc == 2)
		return failf(-ENOENT, "lookup: no \"%s\" in %" PRIx64, name, parent);
	if (rc == 0 && (rc = simple(fs, &r, &st, NULL)) < 0)
		return rc;
	note_parent(fs, st.ino, parent);
	overlay(fs, &st);
	if (out)
		*out = st;
	return 0;
}

int
tsr_fs_getattr(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
	       struct tsr_fs_stat *out)
{
	struct tsr_mds_request r;

	int rc;

	struct tsr_fs_stat st;
	pthread_mutex_lock(&fs->lock);
	rc = dc_live(fs) ? dc_getattr(&fs->dc, ino, &st) : 0;
	pthread_mutex_unlock(&fs->lock);
	if (rc == 1) {
		overlay(fs, &st);
		if (out)
			*out = st;
		return 0;
	}
	req_init(&r, TSR_MDS_OP_GETATTR, ino, cr);
	if ((rc = simple(fs, &r, out, NULL)) == 0 && out)
		overlay(fs, out);
	return rc;
}

static int get_inode(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
		     struct tsr_inode *in);
static int truncate_data(struct tsr_fs *fs, const struct tsr_inode *in, uint64_t size);
static void data_changed(struct tsr_fs *fs, uint64_t ino);

/* opened: through a file open for writing, whose open checked the
 * permission (ftruncate on a file made 0444 by that open is POSIX's) */
static int barrier_wait(struct tsr_fs *fs, uint64_t epoch);
static int wb_sync_ino(struct tsr_fs *fs, uint64_t ino);

static uint32_t cap_issued(const struct ccap *cc);
static void cap_unhold(struct ccap *cc, uint64_t size);
static void open_files_set(struct tsr_fs *fs, uint64_t ino, unsigned mask, uint64_t size);

static int hold_times(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
		      const struct tsr_fs_stat *a, unsigned mask, struct tsr_fs_stat *out);

static int
setattr_common(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
	       const struct tsr_fs_stat *a, unsigned mask, struct tsr_fs_stat *out,
	       int opened)
{
	struct tsr_mds_request r;
	int rc;

	if (mask && !(mask & ~(unsigned)(TSR_FS_SET_ATIME | TSR_FS_SET_MTIME |
					 TSR_FS_SET_ATIME_NOW | TSR_FS_SET_MTIME_NOW |
					 TSR_FS_SET_MODE)) &&
	    hold_times(fs, cr, ino, a, mask, out) == 0)
		return 0;
	/* a size a close held back goes first (a truncate after it stands) */
	tell_send(fs, ino, 0);
	if (mask & TSR_FS_SET_MODE)
		drop_held_mode(fs, ino);

	req_init(&r, TSR_MDS_OP_SETATTR, ino, cr);
	if (opened)
		r.flags |= TSR_MDS_OPENED;
	r.sa.mask = mask & (TSR_FS_SET_MODE | TSR_FS_SET_UID | TSR_FS_SET_GID |
			    TSR_FS_SET_SIZE | TSR_FS_SET_ATIME | TSR_FS_SET_MTIME |
			    TSR_FS_SET_ATIME_NOW | TSR_FS_SET_MTIME_NOW);
	r.sa.mode = a->mode;
	r.sa.uid = a->uid;
	r.sa.gid = a->gid;
	r.sa.size = a->size;
	r.sa.atime.sec = a->atime.sec;
	r.sa.atime.nsec = a->atime.nsec;
	r.sa.mtime.sec = a->mtime.sec;
	r.sa.mtime.nsec = a->mtime.nsec;
	if (mask & TSR_FS_SET_SIZE) {
		/* the data first: a smaller size cuts the objects, so a later
		 * growth reads zeros, not what was there */
		struct tsr_inode in;
		struct tsr_mds_request probe;
		/* the MDS says first whether the caller may write the file
		 * (and gives its inode): the objects are cut before it
		 * records the size */
		struct grant g = { 0 };
		req_init(&probe, opened ? TSR_MDS_OP_GETATTR : TSR_MDS_OP_OPEN, ino, cr);
		probe.flags = opened ? 0 : O_WRONLY | TSR_MDS_OPEN_PROBE;
		memset(&in, 0, sizeof(in));
		if ((rc = simple_g(fs, &probe, NULL, &in, &g)) < 0)
			return rc;
		/* no cut before the OSDs refuse a client evicted for it */
		if ((rc = barrier_wait(fs, g.barrier)) < 0) {
			tsr_inode_free(&in);
			return rc;
		}
		/* what this client holds back lands before the cut */
		if ((rc = wb_sync_ino(fs, ino)) < 0) {
			tsr_inode_free(&in);
			return rc;
		}
		/* this client's writes may reach further than the MDS knows */
		struct tsr_fs_stat local = { .ino = ino, .size = in.size };
		overlay(fs, &local);
		in.size = local.size;
		if (S_ISREG(in.mode) && a->size < in.size &&
		    (rc = truncate_data(fs, &in, a->size)) < 0) {
			tsr_inode_free(&in);
			data_changed(fs, ino);
			return rc;
		}
		tsr_inode_free(&in);
	}
	rc = simple(fs, &r, out, NULL);
	if (mask & TSR_FS_SET_SIZE)
		data_changed(fs, ino); /* (pieces read before or during the cut) */
	if (rc == 0 &&
	    (mask & (TSR_FS_SET_SIZE | TSR_FS_SET_MTIME | TSR_FS_SET_MTIME_NOW |
		     TSR_FS_SET_ATIME | TSR_FS_SET_ATIME_NOW)))
		open_files_set(fs, ino, mask, a->size);
	if (rc == 0 && out)
		overlay(fs, out); /* (what this client holds back, as a stat shows) */
	return rc;
}

int
tsr_fs_setattr(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
	       const struct tsr_fs_stat *a, unsigned mask, struct tsr_fs_stat *out)
{
	return setattr_common(fs, cr, ino, a, mask, out, 0);
}


static int
make_g(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint32_t op, uint64_t parent,
       const char *name, uint32_t mode, uint64_t rdev, const char *target,
       struct tsr_fs_stat *out, struct tsr_inode *in_out, uint32_t flags, struct grant *g)
{
	struct tsr_mds_request r;
	struct tsr_fs_stat st;
	int rc;

	req_init(&r, op, parent, cr);
	r.flags = flags;
	if ((rc = set_name(r.name, name)) < 0)
		return rc;
	r.mode = mode;
	r.rdev = rdev;
	if (target) {
		r.value = target;
		r.value_len = strlen(target);
	}
	if ((rc = simple_g(fs, &r, &st, in_out, g)) < 0)
		return rc;
	note_parent(fs, st.ino, parent);
	if (out)
		*out = st;
	return 0;
}

static int
make(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint32_t op, uint64_t parent,
     const char *name, uint32_t mode, uint64_t rdev, const char *target,
     struct tsr_fs_stat *out, struct tsr_inode *in_out)
{
	return make_g(fs, cr, op, parent, name, mode, rdev, target, out, in_out, 0, NULL);
}

int
tsr_fs_mknod(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
	     const char *name, uint32_t mode, uint64_t rdev, struct tsr_fs_stat *out)
{
	return make(fs, cr, TSR_MDS_OP_MKNOD, parent, name, mode, rdev, NULL, out, NULL);
}

int
tsr_fs_mkdir(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
	     const char *name, uint32_t mode, struct tsr_fs_stat *out)
{
	return make(fs, cr, TSR_MDS_OP_MKDIR, parent, name, mode, 0, NULL, out, NULL);
}

int
tsr_fs_symlink(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
	       const char *name, const char *target, struct tsr_fs_stat *out)
{
	return make(fs, cr, TSR_MDS_OP_SYMLINK, parent, name, 0, 0, target, out, NULL);
}

static int
get_inode(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino, struct tsr_inode *in)
{
	struct tsr_mds_request r;

	memset(in, 0, sizeof(*in));
	req_init(&r, TSR_MDS_OP_GETATTR, ino, cr);
	return simple(fs, &r, NULL, in);
}

ssize_t
tsr_fs_readlink(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino, char *buf,
		size_t cap)
{
	struct tsr_inode in;
	size_t n;
	int rc;

	if ((rc = get_inode(fs, cr, ino, &in)) < 0)
		return rc;
	if (!S_ISLNK(in.mode)) {
		tsr_inode_free(&in);
		return failf(-EINVAL, "inode %" PRIx64 " is not a symlink", ino);
	}
	n = in.symlink ? strlen(in.symlink) : 0;
	if (n + 1 > cap) {
		tsr_inode_free(&in);
		return failf(-ERANGE, "a target of %zu bytes", n);
	}
	memcpy(buf, in.symlink ? in.symlink : "", n + 1);
	tsr_inode_free(&in);
	return (ssize_t)n;
}

static int
remove_name(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint32_t op, uint64_t parent,
	    const char *name)
{
	struct tsr_mds_request r;
	int rc;

	req_init(&r, op, parent, cr);
	if ((rc = set_name(r.name, name)) < 0)
		return rc;
	return simple(fs, &r, NULL, NULL);
}

/* A file unlinked (or renamed over) while this client holds it open keeps
 * its data until the last close (POSIX): its last name is renamed to a
 * hidden one instead, which the last close removes (as libfuse's
 * high-level API does).  Other clients' opens are not known here yet:
 * capabilities will tell the MDS. */
struct hidden {
	uint64_t dir;
	char name[48];
	struct tsr_fs_cred cr;
	int pending;                 /* the rename is under way */
};

/* If name in parent is a file open here (its one link), rename it to its
 * hidden name: 1 (the name is free now), 0 (not open here: nothing done),
 * or an error. */
static int
hide_if_open(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
	     const char *name)
{
	struct tsr_fs_stat st;
	struct hidden *h;
	int any, closed, rc;

	pthread_mutex_lock(&fs->lock);
	any = fs->open.n > 0;
	pthread_mutex_unlock(&fs->lock);
	if (!any || tsr_fs_lookup(fs, cr, parent, name, &st) < 0 || S_ISDIR(st.mode) ||
	    st.nlink > 1)
		return 0;
	h = tsr_xcalloc(1, sizeof(*h));
	h->dir = parent;
	h->pending = 1; /* uid 0: the hidden name is removed as root */
	snprintf(h->name, sizeof(h->name), ".tessera_hidden_%" PRIx64, st.ino);
	pthread_mutex_lock(&fs->lock);
	if (tsr_u64map_get(&fs->open, st.ino) == NULL ||
	    tsr_u64map_get(&fs->hidden, st.ino) != NULL ||
	    tsr_u64map_put(&fs->hidden, st.ino, h) < 0) {
		pthread_mutex_unlock(&fs->lock);
		free(h);
		return 0;
	}
	pthread_mutex_unlock(&fs->lock);
	rc = tsr_fs_rename(fs, cr, parent, name, parent, h->name, 0);
	pthread_mutex_lock(&fs->lock);
	h->pending = 0;
	/* a last close meanwhile left the hidden name to us */
	closed = rc < 0 || tsr_u64map_get(&fs->open, st.ino) == NULL;
	if (closed)
		tsr_u64map_del(&fs->hidden, st.ino);
	pthread_mutex_unlock(&fs->lock);
	if (rc == 0 && closed)
		remove_name(fs, &h->cr, TSR_MDS_OP_UNLINK, h->dir, h->name);
	if (closed)
		free(h);
	return rc < 0 ? rc : 1;
}

int
tsr_fs_unlink(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
	      const char *name)
{
	int rc = hide_if_open(fs, cr, parent, name);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	return remove_name(fs, cr, TSR_MDS_OP_UNLINK, parent, name);
}

int
tsr_fs_rmdir(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
	     const char *name)
{
	return remove_name(fs, cr, TSR_MDS_OP_RMDIR, parent, name);
}

int
tsr_fs_rename(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
	      const char *name, uint64_t newparent, const char *newname, unsigned flags)
{
	struct tsr_mds_request r;
	int rc;

	struct tsr_mds_reply rep;

	req_init(&r, TSR_MDS_OP_RENAME, parent, cr);
	r.ino2 = newparent;
	r.flags = flags;
	if ((rc = set_name(r.name, name)) < 0 || (rc = set_name(r.name2, newname)) < 0)
		return rc;
	if ((parent != newparent || strcmp(name, newname) != 0) &&
	    (rc = hide_if_open(fs, cr, newparent, newname)) < 0)
		return rc;
	rc = call(fs, &r, &rep);
	/* what moved is the last inode of the answer: where it is now is
	 * this client's hint for it from now on */
	if (rc == 0 && rep.n > 0 && rep.in[rep.n - 1].ino != newparent)
		note_parent(fs, rep.in[rep.n - 1].ino, newparent);
	tsr_mdsmsg_reply_free(&rep);
	return rc;
}

int
tsr_fs_link(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
	    uint64_t newparent, const char *newname, struct tsr_fs_stat *out)
{
	struct tsr_mds_request r;
	int rc;

	req_init(&r, TSR_MDS_OP_LINK, newparent, cr);
	r.ino2 = ino;
	if ((rc = set_name(r.name, newname)) < 0)
		return rc;
	if ((rc = simple(fs, &r, out, NULL)) == 0 && out)
		overlay(fs, out); /* (what this client holds back, as a stat shows) */
	return rc;
}

struct listed {
	uint64_t cookie;
	const struct dc_entry *e;
};

static int
cmp_listed(const void *a, const void *b)
{
	const struct listed *x = a, *y = b;

	if (x->cookie != y->cookie)
		return x->cookie < y->cookie ? -1 : 1;
	return strcmp(x->e->name, y->e->name);
}

/* A listing from the cache of names, when it holds every name of ino (a
 * directory made here, or listed whole under the grant it still holds):
 * in the MDS's order and with its cookies (tsr_fs_dir_cookie), so the
 * offsets are the same either way.  1 with *rc (fn's stop, or 0), or 0:
 * the MDS lists it. */
static int
readdir_cached(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
	       uint64_t cookie, uint32_t max, tsr_fs_dirent_fn fn, void *arg, int *rc)
{
	struct dc_entry *v = NULL;
	struct listed *l;
	ssize_t n = -1;
	size_t k = 0, from;

	pthread_mutex_lock(&fs->lock);
	if (dc_live(fs) && may_dir(fs, cr, ino, 4))
		n = dc_list(&fs->dc, ino, &v);
	pthread_mutex_unlock(&fs->lock);
	if (n < 0)
		return 0;
	l = tsr_xcalloc((size_t)n + 1, sizeof(*l));
	for (ssize_t i = 0; i < n; i++) {
		uint64_t c = tsr_fs_dir_cookie(v[i].name);
		if (c > cookie)
			l[k++] = (struct listed){ c, &v[i] };
	}
	if (k > 1)
		qsort(l, k, sizeof(*l), cmp_listed);
	*rc = 0;
	for (from = 0; from < k && *rc == 0; from++) {
		struct tsr_fs_stat st = l[from].e->st;
		/* at most max, and (as the MDS pages) never between two
		 * names of one cookie: the next listing goes on after it */
		if (max && from >= max && l[from].cookie != l[from - 1].cookie)
			break;
		if (S_ISREG(st.mode))
			overlay(fs, &st); /* (sizes this client holds back) */
		note_parent(fs, st.ino, ino);
		*rc = fn(arg, l[from].e->name, &st, l[from].cookie);
	}
	free(l);
	free(v);
	return 1;
}

int
tsr_fs_readdir(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
	       uint64_t cookie, uint32_t max, tsr_fs_dirent_fn fn, void *arg)
{
	uint32_t given = 0;
	int cached_rc;

	if (readdir_cached(fs, cr, ino, cookie, max, fn, arg, &cached_rc))
		return cached_rc;

	for (;;) {
		struct tsr_mds_request r;
		struct tsr_mds_reply rep;
		int rc, stop = 0;
		req_init(&r, TSR_MDS_OP_READDIR, ino, cr);
		r.ino2 = parent_of(fs, ino);
		r.cookie = cookie;
		r.max = max && max - given < 512 ? max - given : 512;
		if ((rc = call(fs, &r, &rep)) < 0) {
			tsr_mdsmsg_reply_free(&rep);
			return rc;
		}
		for (uint32_t i = 0; i < rep.nent && !stop; i++) {
			struct tsr_fs_stat st;
			to_stat(&rep.ent[i].inode, &st);
			if (S_ISREG(st.mode))
				overlay(fs, &st); /* (sizes this client holds back) */
			note_parent(fs, st.ino, ino);
			cookie = rep.ent[i].cookie;
			given++;
			if ((rc = fn(arg, rep.ent[i].name, &st, cookie)) != 0)
				stop = rc;
		}
		int end = rep.end;
		uint32_t nent = rep.nent; /* (the free zeroes it) */
		tsr_mdsmsg_reply_free(&rep);
		if (stop)
			return stop;
		if (end || nent == 0 || (max && given >= max))
			return 0;
	}
}

/* ---- Extended attributes ---- */

static ssize_t
value_call(struct tsr_fs *fs, struct tsr_mds_request *r, void *buf, size_t cap)
{
	struct tsr_mds_reply rep;
	ssize_t rc;

	r->ino2 = parent_of(fs, r->ino);
	if ((rc = call(fs, r, &rep)) < 0) {
		tsr_mdsmsg_reply_free(&rep);
		return rc;
	}
	rc = (ssize_t)rep.value_len;
	if (cap > 0) {
		if (rep.value_len > cap)
			rc = failf(-ERANGE, "a value of %zu bytes", rep.value_len);
		else if (rep.value_len)
			memcpy(buf, rep.value, rep.value_len);
	}
	tsr_mdsmsg_reply_free(&rep);
	return rc;
}

ssize_t
tsr_fs_getxattr(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
		const char *name, void *buf, size_t cap)
{
	struct tsr_mds_request r;
	int rc;

	if (strncmp(name, "system.", 7) == 0) /* (as the MDS would answer) */
		return failf(-EOPNOTSUPP, "%s: POSIX ACLs are not supported", name);
	if (strncmp(name, "security.", 9) == 0) {
		/* (FUSE asks for security.capability before every write;
		 * anyone may read these: no permission to check) */
		struct ccap *cc;
		int none;
		pthread_mutex_lock(&fs->lock);
		cc = tsr_u64map_get(&fs->caps, ino);
		none = cc && cc->nosec && (cap_issued(cc) & TSR_CAP_BUF) && !fs->evicted &&
		       dc_live(fs); /* (a session still heard from) */
		pthread_mutex_unlock(&fs->lock);
		if (none)
			return failf(-ENODATA, "no attribute %s", name);
	}
	if (strncmp(name, "user.", 5) == 0)
		tell_mode(fs, ino);
	req_init(&r, TSR_MDS_OP_GETXATTR, ino, cr);
	if ((rc = set_name(r.name, name)) < 0)
		return rc;
	return value_call(fs, &r, buf, cap);
}

/* A change of a security.* attribute of ino begins (1) or ends (0): an
 * answer asked for before it says nothing of them (cap_grant). */
static void
sec_change(struct tsr_fs *fs, uint64_t ino, const char *name, int begin)
{
	struct ccap *cc;

	if (strncmp(name, "security.", 9) != 0)
		return;
	pthread_mutex_lock(&fs->lock);
	if (begin) {
		fs->sec_changing++;
		if ((cc = tsr_u64map_get(&fs->caps, ino)) != NULL)
			cc->nosec = 0;
	} else {
		fs->sec_changing--;
	}
	fs->sec_gen++;
	pthread_mutex_unlock(&fs->lock);
}

ssize_t
tsr_fs_listxattr(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino, char *buf,
		 size_t cap)
{
	struct tsr_mds_request r;

	req_init(&r, TSR_MDS_OP_LISTXATTR, ino, cr);
	return value_call(fs, &r, buf, cap);
}

int
tsr_fs_setxattr(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
		const char *name, const void *val, size_t len, int flags)
{
	struct tsr_mds_request r;
	int rc;

	if (strncmp(name, "system.", 7) == 0) /* (as the MDS would answer) */
		return failf(-EOPNOTSUPP, "%s: POSIX ACLs are not supported", name);
	req_init(&r, TSR_MDS_OP_SETXATTR, ino, cr);
	if ((rc = set_name(r.name, name)) < 0)
		return rc;
	if (len > TSR_FS_XATTR_VALUE_MAX)
		return failf(-E2BIG, "a value of %zu bytes", len);
	r.value = val;
	r.value_len = len;
	r.flags = (uint32_t)flags;
	tell_send(fs, ino, 0); /* (a layout is set only while the file is empty) */
	sec_change(fs, ino, name, 1);
	rc = simple(fs, &r, NULL, NULL);
	sec_change(fs, ino, name, 0);
	return rc;
}

int
tsr_fs_removexattr(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
		   const char *name)
{
	if (strncmp(name, "user.", 5) == 0)
		tell_mode(fs, ino);
	return remove_name(fs, cr, TSR_MDS_OP_RMXATTR, ino, name); /* (same request) */
}

/* ---- statfs ---- */

/* The number after the last "key": in text, or def. */
static uint64_t
json_last_u64(const char *text, const char *key, uint64_t def)
{
	char want[64];
	const char *p = NULL, *q = text;
	size_t n = (size_t)snprintf(want, sizeof(want), "\"%s\": ", key);

	while ((q = strstr(q, want)) != NULL)
		p = q++;
	return p ? strtoull(p + n, NULL, 10) : def;
}

int
tsr_fs_statfs(struct tsr_fs *fs, struct tsr_fs_statfs *out)
{
	char *argv[] = { "osd", "df", NULL }, *text = NULL;
	struct tsr_osdmap_epoch *ep;
	struct tsr_inode root;
	uint32_t copies = 1;
	int rc;

	/* asked often (df, and programs that check for room before each
	 * write): the answer holds for a second */
	pthread_mutex_lock(&fs->lock);
	if (fs->statfs_at && tsr_mono_ns() - fs->statfs_at < 1000000000u) {
		*out = fs->statfs_last;
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	pthread_mutex_unlock(&fs->lock);
	memset(out, 0, sizeof(*out));
	if ((rc = get_inode(fs, NULL, TSR_FS_ROOT, &root)) < 0)
		return rc;
	if ((ep = tsr_mapsub_osdmap(fs->sub)) != NULL) {
		const struct tsr_osdmap_pool *p =
			tsr_osdmap_pool(tsr_osdmap_epoch_map(ep), root.layout.pool);
		if (p && p->size > 0)
			copies = p->size;
		tsr_osdmap_epoch_put(ep);
	}
	rc = tsr_monc_command(tsr_client_monc_(fs->c), 2, argv, 10000, &text);
	if (rc < 0) {
		failf(rc, "osd df: %s", text ? text : strerror(-rc));
		free(text);
		tsr_inode_free(&root);
		return rc;
	}
	/* the totals come last in its answer */
	out->bytes_total = json_last_u64(text, "total", 0) / copies;
	out->bytes_free = json_last_u64(text, "avail", 0) / copies;
	out->files = root.rstat.rfiles + root.rstat.rsubdirs + 1;
	out->copies = copies;
	free(text);
	tsr_inode_free(&root);
	pthread_mutex_lock(&fs->lock);
	fs->statfs_last = *out;
	fs->statfs_at = tsr_mono_ns();
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

/* ---- Locks ---- */

/* A lock this client took, kept to tell a new holder of the rank
 * (fs->lock).  Replayed in order, the records rebuild what the MDS held;
 * a record goes once later ones of its owner cover its range (a lock then
 * its unlock: both go), so the list holds about what is locked now. */
#define LOCKS_KEPT 65536

static int
same_owner(const struct lockrec *a, uint64_t ino, const struct tsr_mds_lock *lk)
{
	return a->ino == ino && a->lk.owner == lk->owner &&
	       (a->lk.type & TSR_LOCK_FLOCK) == (lk->type & TSR_LOCK_FLOCK);
}

/* (fs->lock held; on the session's thread, in the order the MDS took
 * them) */
static void
lock_log(struct tsr_fs *fs, uint64_t ino, const struct tsr_mds_lock *lk)
{
	struct lockrec **pp, *x, *other = NULL;
	int overlap = 0;

	/* the last record of another owner of the inode: records before it
	 * stay, so a replay keeps the owners' order */
	for (x = fs->locks; x; x = x->next)
		if (x->ino == ino && !same_owner(x, ino, lk))
			other = x;
	/* earlier records within the new one's range are what it replaces */
	pp = &fs->locks;
	if (other) {
		for (x = fs->locks; x != other; x = x->next)
			overlap |= same_owner(x, ino, lk) && x->lk.start <= lk->end &&
				   lk->start <= x->lk.end;
		pp = &other->next;
	}
	for (; (x = *pp) != NULL;) {
		if (same_owner(x, ino, lk) && lk->start <= x->lk.start && x->lk.end <= lk->end) {
			*pp = x->next;
			free(x);
			fs->nlocks--;
			continue;
		}
		overlap |= same_owner(x, ino, lk) && x->lk.start <= lk->end &&
			   lk->start <= x->lk.end;
		pp = &x->next;
	}
	/* an unlock over nothing left is nothing to tell */
	if (((lk->type & ~TSR_LOCK_FLOCK) == F_UNLCK && !overlap) ||
	    fs->nlocks >= LOCKS_KEPT)
		return;
	x = tsr_xcalloc(1, sizeof(*x));
	x->ino = ino;
	x->lk = *lk;
	*pp = x;
	fs->nlocks++;
}

static void
lock_req(struct tsr_mds_request *r, const struct tsr_fs_lock *lk)
{
	r->lk.start = lk->start;
	r->lk.end = lk->end;
	r->lk.owner = lk->owner;
	r->lk.pid = lk->pid;
	r->lk.type = (uint32_t)lk->type;
}

int
tsr_fs_getlk(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
	     struct tsr_fs_lock *lk)
{
	struct tsr_mds_request r;
	struct tsr_mds_reply rep;
	struct tsr_mds_lock got;
	int rc;

	req_init(&r, TSR_MDS_OP_GETLK, ino, cr);
	r.ino2 = parent_of(fs, ino);
	lock_req(&r, lk);
	if ((rc = call(fs, &r, &rep)) == 0) {
		if (rep.value_len == 0) {
			lk->type = (lk->type & TSR_FS_LOCK_FLOCK) | F_UNLCK;
		} else if (tsr_mdsmsg_lock_decode(rep.value, rep.value_len, &got) == 0) {
			lk->start = got.start;
			lk->end = got.end;
			lk->owner = got.owner;
			lk->pid = got.pid;
			lk->type = (int)got.type;
		} else {
			rc = failf(-EIO, "getlk: the MDS's answer does not decode");
		}
	}
	tsr_mdsmsg_reply_free(&rep);
	return rc;
}

int
tsr_fs_setlk(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
	     const struct tsr_fs_lock *lk, int wait)
{
	uint32_t pause_ms = 10;

	for (;;) {
		struct tsr_mds_request r;
		int rc;
		req_init(&r, TSR_MDS_OP_SETLK, ino, cr);
		lock_req(&r, lk);
		rc = simple(fs, &r, NULL, NULL);
		if (rc == -EBUSY) /* held by another owner (the MDS's -EAGAIN is
				     "not serving now", retried in call) */
			rc = failf(-EAGAIN, "setlk: held by another owner");
		if (rc != -EAGAIN || !wait)
			return rc;
		usleep(pause_ms * 1000);
		if (pause_ms < 100)
			pause_ms *= 2;
	}
}

/* ---- File data ---- */

struct tsr_file {
	struct tsr_fs *fs;
	struct tsr_file *next_open;  /* of the same inode (fs->lock) */
	pthread_mutex_t lock;        /* size, mtime, dirty, gen */
	uint64_t gen;                /* bumped by every write */
	struct tsr_fs_cred cr;
	uint32_t groups[TSR_MDS_MAX_GROUPS];
	uint64_t ino;
	int flags;
	struct tsr_layout layout;
	uint64_t size;               /* as this handle knows it */
	struct tsr_ftime mtime;      /* of its last write */
	int dirty;                   /* size (and mtime) to tell the MDS */
	int send_mtime;              /* mtime too: no utimes since the write */
	struct ccap *cap;            /* its inode's (held busy by this file) */
	uint32_t err_seen;           /* cap->wb->err_seq told (fs->wb_lock) */
	int late_err;                /* one of late_errs, to tell (wb_lock) */
	/* read-ahead (fs->ra_lock): pieces read ahead, where a read in
	 * order goes next, and how far ahead of it to read */
	struct rapiece *ra;
	uint64_t ra_next;
	uint64_t ra_win;
	struct tsr_file *ra_older, *ra_newer; /* on fs's list, while ra_listed */
	int ra_listed;
};

/* Object operations of one call, at most IO_INFLIGHT at once. */
struct io_batch {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int out;
	int rc;
	const char *why;
};

static void
io_done(void *arg, int result, const struct tsr_objver *ver)
{
	struct io_batch *b = arg;

	(void)ver;
	pthread_mutex_lock(&b->lock);
	if (result < 0 && result != -ENOENT && b->rc == 0)
		b->rc = result;
	b->out--;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->lock);
}

static void
io_init(struct io_batch *b)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cv, NULL);
}

/* Submit op (the batch destroys it later through ops[]); waits for room. */
static int
io_submit(struct tsr_fs *fs, struct io_batch *b, int64_t pool, const char *oid,
	  struct tsr_op *op)
{
	int rc;

	pthread_mutex_lock(&b->lock);
	while (b->out >= IO_INFLIGHT)
		pthread_cond_wait(&b->cv, &b->lock);
	b->out++;
	pthread_mutex_unlock(&b->lock);
	rc = tsr_op_submit(fs->c, pool, oid, strlen(oid), op, io_done, b);
	if (rc < 0)
		io_done(b, rc, NULL);
	return rc;
}

static int
io_wait(struct io_batch *b)
{
	int rc;

	pthread_mutex_lock(&b->lock);
	while (b->out > 0)
		pthread_cond_wait(&b->cv, &b->lock);
	rc = b->rc;
	pthread_mutex_unlock(&b->lock);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->lock);
	return rc;
}

/* Object k's length when the file is size bytes long: the bytes of it
 * that lie below size (a binary search: file offsets grow with object
 * offsets). */
static uint64_t
obj_len_for(const struct tsr_layout *l, uint64_t k, uint64_t size)
{
	uint64_t su = l->stripe_unit, sc = l->stripe_count, per = l->object_size / su;
	uint64_t set = k / sc, pos = k % sc, lo = 0, hi = l->object_size;

	while (lo < hi) { /* the first object offset at or past size */
		uint64_t x = lo + (hi - lo) / 2;
		uint64_t row = set * per + x / su;
		uint64_t off = (row * sc + pos) * su + x % su;
		if (off < size)
			lo = x + 1;
		else
			hi = x;
	}
	return lo;
}

static int
truncate_data(struct tsr_fs *fs, const struct tsr_inode *in, uint64_t size)
{
	const struct tsr_layout *l = &in->layout;
	uint64_t per_set = (uint64_t)l->object_size * l->stripe_count;
	uint64_t nobj = (in->size + per_set - 1) / per_set * l->stripe_count;
	struct tsr_op *ops[IO_INFLIGHT * 4];
	struct io_batch b;
	size_t nops = 0;
	int rc = 0;

	if (l->object_size == 0 || l->stripe_count == 0)
		return 0;
	io_init(&b);
	for (uint64_t k = 0; k < nobj; k++) {
		uint64_t keep = obj_len_for(l, k, size);
		char oid[48];
		struct tsr_op *op;
		if (keep >= l->object_size)
			continue;
		op = tsr_op_create();
		tsr_fs_data_oid(in->ino, k, oid, sizeof(oid));
		tsr_op_create_obj(op, 0);
		if (keep == 0)
			tsr_op_remove(op);
		else
			tsr_op_truncate(op, keep);
		if (nops == sizeof(ops) / sizeof(ops[0])) {
			rc = io_wait(&b);
			for (size_t i = 0; i < nops; i++)
				tsr_op_destroy(ops[i]);
			nops = 0;
			io_init(&b);
			if (rc < 0)
				break;
		}
		ops[nops++] = op;
		io_submit(fs, &b, l->pool, oid, op);
	}
	int rc2 = io_wait(&b);
	for (size_t i = 0; i < nops; i++)
		tsr_op_destroy(ops[i]);
	if (rc == 0)
		rc = rc2;
	return rc < 0 ? failf(rc, "truncating the data of %" PRIx64 ": %s", in->ino,
			      strerror(-rc)) : 0;
}

/* ---- Capabilities (client side) ---- */

/* Is time a (sec, nsec) later than b?  (tsr_ftime_before, for times of
 * either type: the MDS's and the API's) */
static int
ftime_after(int64_t asec, uint32_t ansec, int64_t bsec, uint32_t bnsec)
{
	return tsr_ftime_before((struct tsr_ftime){ bsec, bnsec }, (struct tsr_ftime){ asec, ansec });
}

/* The ccap of ino, made when absent, one busier (fs->lock held). */
static struct ccap *
cap_hold(struct tsr_fs *fs, uint64_t ino)
{
	struct ccap *cc = tsr_u64map_get(&fs->caps, ino);

	if (cc == NULL) {
		cc = tsr_xcalloc(1, sizeof(*cc));
		if (tsr_u64map_put(&fs->caps, ino, cc) < 0)
			abort();
	}
	cc->busy++;
	return cc;
}

/* The ccap of ino, one busier, or NULL when there is none (fs->lock held). */
static struct ccap *
cap_hold_existing(struct tsr_fs *fs, uint64_t ino)
{
	struct ccap *cc = tsr_u64map_get(&fs->caps, ino);

	if (cc)
		cc->busy++;
	return cc;
}

/* A user of cc is done (fs->lock held); size: what it knew. */
static void
cap_unhold(struct ccap *cc, uint64_t size)
{
	if (size > cc->size)
		cc->size = size;
	if (--cc->busy == 0)
		cc->idle_since = tsr_mono_ns();
}

/* Take a grant newer than what cc holds (fs->lock held). */
static void
cap_grant(struct tsr_fs *fs, struct ccap *cc, const struct grant *g)
{
	/* (one the session before a reconnect gave: the new holder of the
	 * rank was not told of it, and numbers anew) */
	if (g->gen != fs->gen)
		return;
	if (g->seq > cc->seq) {
		/* (what the answer says of security.* holds unless this
		 * client changed one of its own since it asked: the answer
		 * may be older than that change) */
		cc->nosec = g->nosec && g->sec_gen != 0 && g->sec_gen == fs->sec_gen &&
			    !fs->sec_changing;
		if ((cc->issued & TSR_CAP_CACHE) && !(g->caps & TSR_CAP_CACHE)) {
			/* (an open answered a revoke of CACHE: the open that
			 * follows drops the page cache above) */
			cc->kept = 0;
			cc->cache_lost++;
		}
		__atomic_store_n(&cc->issued, g->caps, __ATOMIC_RELEASE);
		cc->seq = g->seq;
	}
}

static uint32_t
cap_issued(const struct ccap *cc)
{
	return __atomic_load_n(&cc->issued, __ATOMIC_ACQUIRE);
}

/* The grant names the OSD map epoch that blocklists a client evicted for
 * this file: no I/O before we hold it (the OSDs then refuse the evicted
 * one's writes before they serve ours). */
static int
barrier_wait(struct tsr_fs *fs, uint64_t epoch)
{
	uint64_t deadline = tsr_mono_ns() + fs->timeout_ms * 1000000u;

	while (tsr_client_epoch(fs->c) < epoch) {
		if (tsr_mono_ns() >= deadline)
			return failf(-ETIMEDOUT, "no OSD map of epoch %" PRIu64 " within %"
				     PRIu64 " ms", epoch, fs->timeout_ms);
		usleep(5000);
	}
	return 0;
}

/* ---- Write-back (wbuf.h) ----
 *
 * While the client holds BUF on a file (no other client has it open),
 * its writes are held in the file's wbuf and return at once.  They go to
 * the OSDs, per object in compound writes of up to WB_OP_STEPS ranges:
 *   - at fsync, and at a close without BUF;
 *   - at a close under BUF once the client holds 1/WB_CLOSE_BURST of
 *     client_dirty_max (every file's: one burst; close_sends);
 *   - when BUF is revoked (before the answer: the next holder reads them);
 *   - before a truncate or a hole, and before a write that goes straight
 *     through (an older write must not land over it);
 *   - when a read meets them other than inside one held range;
 *   - after WB_AGE_NS held (the tick's job), or when the client lost BUF
 *     some other way (a reconnect the MDS refused);
 *   - past half of client_dirty_max (this file's), and past all of it
 *     (every file's, the writer waiting for room).
 * A send that fails is told by the next fsync of a handle of the file
 * (after its last close: of the next open's; late_errs), and by a close
 * without BUF.  A close under BUF waits for none of it: the size waits
 * for the data instead (tell_hold). */

#define WB_AGE_NS 5000000000ull
#define WB_CLOSE_BURST 4u
#define WB_BURST_MAX (32u << 20)
#define WB_TRIM_AFTER (8u << 20)     /* sent since the last trim (wb_job) */
#define REVOKE_FLUSH_MS 20000u       /* within mds_cap_revoke_timeout's 30 s */
#define WB_OP_STEPS 64u              /* a compound's steps at most (client.h) */
#define WB_OP_BYTES (4u << 20)       /* and bytes */
#define WB_SEND_MIN (4u << 20)       /* past half the bound, a file's held
					bytes go once this many */

struct wsend {
	struct wsend *next;
	struct tsr_fs *fs;
	struct wbuf *wb;
	struct wb_obj *o;
	struct tsr_op *op;
};

static void
wb_sent_cb(void *arg, int result, const struct tsr_objver *ver)
{
	struct wsend *s = arg;
	struct tsr_fs *fs = s->fs;

	(void)ver;
	pthread_mutex_lock(&fs->wb_lock);
	uint64_t sent = wb_sent(s->wb, s->o, result);
	fs->wb_total -= sent;
	fs->wb_trim += sent;
	fs->wb_inflight--;
	/* a closed handle's size waits for this file's data */
	if (s->wb->tell_wanted && !fs->tell_stop)
		tell_post(fs, s->wb->ino);
	pthread_cond_broadcast(&fs->wb_cv);
	pthread_mutex_unlock(&fs->wb_lock);
	tsr_op_destroy(s->op);
	free(s);
}

/* Send what wb holds back (wb_lock held, let go while submitting): every
 * object with dirty ranges and no send in flight (only: object only - 1
 * alone; 0: all).  With wait_ms, until every write held when it was
 * called is answered (on the OSDs, or failed: wb->err): 0, or -ETIMEDOUT
 * after wait_ms.  The caller keeps wb alive (its ccap busy). */
static int
wb_send(struct tsr_fs *fs, struct wbuf *wb, uint64_t only, uint64_t wait_ms)
{
	uint64_t deadline = tsr_mono_ns() + wait_ms * 1000000u, upto = wb->gen;
	int wait = wait_ms > 0;
	uint64_t objs[32];
	size_t n;

	for (;;) {
		struct wsend *list = NULL;
		while ((n = wb_ready(wb, only, objs, TSR_ARRAY_SIZE(objs))) > 0)
			for (size_t i = 0; i < n; i++) {
				uint64_t was = wb->dirty_bytes;
				struct wb_obj *o = wb_take(wb, objs[i]);
				fs->wb_unsent -= was - wb->dirty_bytes;
				size_t k = 0, at = 0; /* in o->sending[k] */
				while (o && k < o->nsending) {
					struct wsend *s = tsr_xcalloc(1, sizeof(*s));
					size_t steps = 0, bytes = 0;
					s->fs = fs;
					s->wb = wb;
					s->o = o;
					s->op = tsr_op_create();
					/* (a range past WB_OP_BYTES goes in pieces: the
					 * operations of one send touch disjoint bytes) */
					while (k < o->nsending && steps < WB_OP_STEPS &&
					       bytes < WB_OP_BYTES) {
						const struct wb_ext *x = &o->sending[k];
						size_t piece = x->len - at;
						if (piece > WB_OP_BYTES - bytes)
							piece = WB_OP_BYTES - bytes;
						tsr_op_write(s->op, x->off + at, x->data + at, piece);
						bytes += piece;
						steps++;
						if ((at += piece) == x->len) {
							k++;
							at = 0;
						}
					}
					o->inflight++;
					fs->wb_inflight++;
					s->next = list;
					list = s;
				}
			}
		if (list) {
			/* (each object lives until its last operation is answered,
			 * and none of this list's is sent yet) */
			pthread_mutex_unlock(&fs->wb_lock);
			while (list) {
				struct wsend *s = list;
				char oid[48];
				int rc;
				list = s->next;
				tsr_fs_data_oid(wb->ino, s->o->objno, oid, sizeof(oid));
				if ((rc = tsr_op_submit(fs->c, wb->pool, oid, strlen(oid), s->op,
							wb_sent_cb, s)) < 0)
					wb_sent_cb(s, rc, NULL);
			}
			pthread_mutex_lock(&fs->wb_lock);
			continue;
		}
		if (!wait || !wb_pending(wb, only, upto))
			return 0;
		if (tsr_cond_wait_until(&fs->wb_cv, &fs->wb_lock, deadline) == ETIMEDOUT)
			return failf(-ETIMEDOUT, "writing back inode %" PRIx64 ": not done within %"
				     PRIu64 " ms", wb->ino, wait_ms);
	}
}

/* Send what f's file holds back; with wait, until it is on the OSDs: 0,
 * or (to a handle open for writing) the error of a send of the file's
 * that failed since this handle last told one — each handle is told
 * once, as fsync(2) does. */
static int
wb_sync(struct tsr_file *f, int wait)
{
	struct tsr_fs *fs = f->fs;
	struct wbuf *wb;
	int rc = 0;

	pthread_mutex_lock(&fs->wb_lock);
	if ((wb = f->cap->wb) != NULL) {
		rc = wb_send(fs, wb, 0, wait ? fs->timeout_ms : 0);
		if (wait && rc == 0 && wb->err_seq != f->err_seen &&
		    (f->flags & O_ACCMODE) != O_RDONLY) {
			rc = failf(wb->err, "writing back inode %" PRIx64 ": %s", f->ino,
				   strerror(-wb->err));
			f->err_seen = wb->err_told = wb->err_seq;
		}
	}
	pthread_mutex_unlock(&fs->wb_lock);
	return rc;
}

/* The same for ino, whoever has it open here (before its size is cut). */
static int
wb_sync_ino(struct tsr_fs *fs, uint64_t ino)
{
	struct ccap *cc;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	cc = cap_hold_existing(fs, ino);
	pthread_mutex_unlock(&fs->lock);
	if (cc == NULL)
		return 0;
	pthread_mutex_lock(&fs->wb_lock);
	if (cc->wb)
		rc = wb_send(fs, cc->wb, 0, fs->timeout_ms);
	pthread_mutex_unlock(&fs->wb_lock);
	pthread_mutex_lock(&fs->lock);
	cap_unhold(cc, 0);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

struct kick_ctx {
	struct tsr_fs *fs;
	uint64_t older;              /* held back since before this (mono ns) */
	struct ccap **v;
	size_t n, cap;
};

static int
kick_one(void *arg, uint64_t ino, void *val)
{
	struct kick_ctx *x = arg;
	struct ccap *cc = val;
	int take;

	(void)ino;
	pthread_mutex_lock(&x->fs->wb_lock);
	take = cc->wb && cc->wb->dirty_bytes &&
	       (cc->wb->dirty_since <= x->older || !(cap_issued(cc) & TSR_CAP_BUF));
	pthread_mutex_unlock(&x->fs->wb_lock);
	if (take) {
		if (x->n == x->cap) {
			x->cap = x->cap ? 2 * x->cap : 16;
			struct ccap **v = realloc(x->v, x->cap * sizeof(*v));
			if (v == NULL)
				return 1;
			x->v = v;
		}
		cc->busy++;
		x->v[x->n++] = cc;
	}
	return 0;
}

/* Start sending every file's held-back writes older than older, and
 * those of files whose BUF went (not waited for). */
static void
wb_kick(struct tsr_fs *fs, uint64_t older)
{
	struct kick_ctx x = { .fs = fs, .older = older };

	pthread_mutex_lock(&fs->lock);
	tsr_u64map_each(&fs->caps, kick_one, &x);
	pthread_mutex_unlock(&fs->lock);
	for (size_t i = 0; i < x.n; i++) {
		pthread_mutex_lock(&fs->wb_lock);
		wb_send(fs, x.v[i]->wb, 0, 0);
		pthread_mutex_unlock(&fs->wb_lock);
	}
	pthread_mutex_lock(&fs->lock);
	for (size_t i = 0; i < x.n; i++)
		cap_unhold(x.v[i], 0);
	pthread_mutex_unlock(&fs->lock);
	free(x.v);
}

/* On the caps thread, posted by the tick.  Once nothing is held back
 * any more, after WB_TRIM_AFTER sent, the heap's free pages go back to
 * the system: a burst of sends (close_sends) copies a thousand files into
 * operations and messages at once, and glibc keeps what they freed. */
static void
wb_job(void *arg)
{
	struct tsr_fs *fs = arg;
	int trim;

	wb_kick(fs, tsr_mono_ns() - WB_AGE_NS);
	pthread_mutex_lock(&fs->wb_lock);
	trim = fs->wb_total == 0 && fs->wb_inflight == 0 && fs->wb_trim >= WB_TRIM_AFTER;
	if (trim)
		fs->wb_trim = 0;
	pthread_mutex_unlock(&fs->wb_lock);
	if (trim)
		malloc_trim(0);
	pthread_mutex_lock(&fs->lock);
	fs->wb_job = 0;
	pthread_mutex_unlock(&fs->lock);
}

/* From the tick (fs->lock held): the job, when anything is held back or
 * a trim is due. */
static void
wb_tick(struct tsr_fs *fs)
{
	int due;

	pthread_mutex_lock(&fs->wb_lock);
	due = fs->wb_total > 0 || fs->wb_trim >= WB_TRIM_AFTER;
	pthread_mutex_unlock(&fs->wb_lock);
	if (due && !fs->wb_job && !fs->wb_stop && tsr_workq_post(fs->capq, wb_job, fs) == 0)
		fs->wb_job = 1;
}

/* Everything to the OSDs (at unmount), within the client's timeout;
 * then what is in flight is answered (each operation within
 * client_op_timeout) before the buffers go. */
static void
wb_drain(struct tsr_fs *fs)
{
	uint64_t deadline = tsr_mono_ns() + fs->timeout_ms * 1000000u;

	pthread_mutex_lock(&fs->wb_lock);
	while (fs->wb_total > 0 && tsr_mono_ns() < deadline) {
		uint64_t pause = tsr_mono_ns() + 100000000u;
		pthread_mutex_unlock(&fs->wb_lock);
		wb_kick(fs, UINT64_MAX);
		pthread_mutex_lock(&fs->wb_lock);
		if (fs->wb_total > 0)
			tsr_cond_wait_until(&fs->wb_cv, &fs->wb_lock,
					    pause < deadline ? pause : deadline);
	}
	while (fs->wb_inflight > 0)
		pthread_cond_wait(&fs->wb_cv, &fs->wb_lock);
	pthread_mutex_unlock(&fs->wb_lock);
}

static int move_data(struct tsr_file *f, uint8_t *rbuf, const uint8_t *wbuf, size_t len,
		     uint64_t off);

/* A write's data: held back under BUF, else (or with client_dirty_max 0)
 * through to the OSDs before it returns. */
static int
data_write(struct tsr_file *f, const uint8_t *buf, size_t len, uint64_t off)
{
	struct tsr_fs *fs = f->fs;
	struct ccap *cc = f->cap;
	uint64_t deadline = 0, now;
	int rc = 0;

	pthread_mutex_lock(&fs->wb_lock);
	for (;;) {
		if (fs->wb_max == 0 || !(cap_issued(cc) & TSR_CAP_BUF)) {
			if (cc->wb && cc->wb->bytes) /* older: it must not land over this */
				rc = wb_send(fs, cc->wb, 0, fs->timeout_ms);
			pthread_mutex_unlock(&fs->wb_lock);
			return rc < 0 ? rc : move_data(f, NULL, buf, len, off);
		}
		if (fs->wb_total == 0 || fs->wb_total + len <= fs->wb_max)
			break;
		/* no room: everything held goes, and this write waits */
		now = tsr_mono_ns();
		if (deadline == 0)
			deadline = now + fs->timeout_ms * 1000000u;
		else if (now >= deadline)
			break; /* (held anyway: the bound is soft, progress is not) */
		pthread_mutex_unlock(&fs->wb_lock);
		wb_kick(fs, UINT64_MAX);
		pthread_mutex_lock(&fs->wb_lock);
		if (fs->wb_total > 0 && fs->wb_total + len > fs->wb_max) {
			uint64_t pause = tsr_mono_ns() + 100000000u;
			tsr_cond_wait_until(&fs->wb_cv, &fs->wb_lock,
					    pause < deadline ? pause : deadline);
		}
	}
	if (cc->wb == NULL) {
		cc->wb = tsr_xcalloc(1, sizeof(*cc->wb));
		wb_init(cc->wb, f->layout.pool, f->ino);
	}
	now = tsr_mono_ns();
	for (size_t done = 0; done < len;) {
		uint64_t objno, objoff, left;
		tsr_layout_map(&f->layout, off + done, &objno, &objoff, &left);
		if (left > len - done)
			left = len - done;
		/* (a put grows the held and the unsent bytes alike) */
		uint64_t grew = wb_put(cc->wb, objno, objoff, buf + done, (size_t)left, now);
		fs->wb_total += grew;
		fs->wb_unsent += grew;
		done += (size_t)left;
	}
	if (fs->wb_total > fs->wb_max / 2 &&
	    cc->wb->dirty_bytes >= (fs->wb_max / 8 < WB_SEND_MIN ? fs->wb_max / 8 : WB_SEND_MIN))
		wb_send(fs, cc->wb, 0, 0); /* this file's start going */
	pthread_mutex_unlock(&fs->wb_lock);
	return 0;
}

/* A read of [objoff, objoff+len) of object objno: 1 when the held-back
 * writes answered it (into out); else 0, after sending those it meets,
 * or an error when they did not go in time. */
static int
wb_read(struct tsr_file *f, uint64_t objno, uint64_t objoff, size_t len, uint8_t *out)
{
	struct tsr_fs *fs = f->fs;
	int r = WB_NONE, rc = 0;

	pthread_mutex_lock(&fs->wb_lock);
	if (f->cap->wb && (r = wb_get(f->cap->wb, objno, objoff, len, out)) == WB_PARTIAL)
		rc = wb_send(fs, f->cap->wb, objno + 1, fs->timeout_ms);
	pthread_mutex_unlock(&fs->wb_lock);
	return rc < 0 ? rc : r == WB_COVERED;
}

/* A tell's ctime: the later of t and the one r carries.  The MDS keeps
 * the later of it and the inode's (TSR_SETATTR_CTIME), not its clock's:
 * the ctime this client's stats showed before the tell (overlay) stays
 * after it.  Every tell carries one (t 0 at least): the writes it tells
 * came before whatever set the ctime the MDS has. */
static void
tell_ctime(struct tsr_mds_request *r, struct tsr_ftime t)
{
	if (!(r->sa.mask & TSR_SETATTR_CTIME) || tsr_ftime_before(r->sa.ctime, t))
		r->sa.ctime = t;
	r->sa.mask |= TSR_SETATTR_CTIME;
}

/* The times and mode held (hold_times) into a SETATTR telling them,
 * with the ctime they were set at. */
static void
held_add(struct tsr_mds_request *r, uint32_t held, struct tsr_ftime atime,
	 struct tsr_ftime mtime, struct tsr_ftime ctime, uint32_t mode)
{
	if (held & (TSR_SETATTR_MODE | TSR_SETATTR_ATIME | TSR_SETATTR_MTIME))
		tell_ctime(r, ctime);
	if (held & TSR_SETATTR_MODE) {
		r->sa.mask |= TSR_SETATTR_MODE;
		r->sa.mode = mode;
	}
	if (held & TSR_SETATTR_ATIME) {
		r->sa.mask |= TSR_SETATTR_ATIME;
		r->sa.atime = atime;
	}
	if (held & TSR_SETATTR_MTIME) {
		r->sa.mask |= TSR_SETATTR_MTIME;
		r->sa.mtime = mtime;
	}
}

/* ---- Answers older than a tell ----
 *
 * A getattr or a link the MDS answered before a tell's SETATTR may be
 * handled after the tell cleared what it told (held, tell, an open
 * file's dirty): shown as it came, it would show the file before this
 * client's chmod or writes, and the kernel would cache that.  So a
 * tell's answer is kept (told_seen, before anything told is cleared),
 * and an answer with a smaller change number (the MDS counts every
 * change of an inode) shows it instead; a newer one replaces it.  Kept
 * for the SEEN_MAX latest tells: past the ccap, whose revoke may have
 * gone with the tell. */

/* st, an answer of the MDS, against the kept one (fs->lock held): an
 * older one gives way to it, a newer one replaces it (one with the same
 * number is the same, or shown already: left).  A change number of 0 is
 * not the MDS's (a size only). */
static void
seen_newest(struct tsr_fs *fs, struct tsr_fs_stat *st)
{
	struct tsr_fs_stat *kept;

	if (st->change == 0 || (kept = tsr_u64map_get(&fs->seen, st->ino)) == NULL)
		return;
	if (st->change < kept->change)
		*st = *kept;
	else if (st->change > kept->change)
		*kept = *st;
}

/* A tell was answered with st: kept (fs->lock held). */
static void
seen_keep(struct tsr_fs *fs, const struct tsr_fs_stat *st)
{
	struct tsr_fs_stat *kept;
	uint64_t *slot;

	if (st->change == 0)
		return;
	if ((kept = tsr_u64map_get(&fs->seen, st->ino)) != NULL) {
		if (st->change > kept->change)
			*kept = *st;
		return;
	}
	slot = &fs->seen_ring[fs->seen_next];
	fs->seen_next = (fs->seen_next + 1) % SEEN_MAX;
	if (*slot != 0)
		free(tsr_u64map_del(&fs->seen, *slot));
	kept = tsr_xcalloc(1, sizeof(*kept));
	*kept = *st;
	if (tsr_u64map_put(&fs->seen, st->ino, kept) < 0) {
		free(kept); /* (out of memory: only the race is open again) */
		*slot = 0;
		return;
	}
	*slot = st->ino;
}

static void
told_seen(struct tsr_fs *fs, const struct tsr_fs_stat *st)
{
	pthread_mutex_lock(&fs->lock);
	seen_keep(fs, st);
	pthread_mutex_unlock(&fs->lock);
}

/* The MDS has the times held at gen: none set since is lost. */
static void
held_told(struct tsr_fs *fs, uint64_t ino, uint64_t gen, uint32_t bits)
{
	struct ccap *cc;

	pthread_mutex_lock(&fs->lock);
	if ((cc = tsr_u64map_get(&fs->caps, ino)) != NULL && cc->held_gen == gen)
		__atomic_fetch_and(&cc->held, ~bits, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&fs->lock);
}

/* ---- A closed handle's size and mtime (ccap tell) ----
 *
 * A close under BUF does not tell the MDS the size at once: the file's
 * held data is not on the OSDs yet (held, or sent), and the size must never be there before
 * it (a crash of this process in between would leave the file reading
 * zeros).  The size and mtime wait in the ccap, and go in one SETATTR
 * once every byte of the file held back is answered (tell_job, posted
 * by the last answer), or earlier with a revoke's answer (which waits
 * for the data first), before this client's own open, setattr, setxattr
 * or fsync of the file (each waits for the data first), and at unmount
 * (what wb_drain sent).  Until then this client's stats and listings
 * show them (overlay), and the ccap is not given back. */

/* cc holds a mode set here, not yet told (fs->lock held). */
static int
holds_mode(const struct ccap *cc)
{
	return (__atomic_load_n(&cc->held, __ATOMIC_RELAXED) & TSR_SETATTR_MODE) != 0;
}

/* A held mode is told even with no size to tell: the MDS checks access
 * by it (fs->lock held). */
static void
tell_mode_too(struct ccap *cc)
{
	if (cc->tell == 0 && holds_mode(cc))
		cc->tell = TELL_HELD;
}

/* Tell ino's closed handles' size and mtime, and the times held with
 * them, now, after the file's held data (not on the loop, no lock held):
 * 0, -EAGAIN (left for later: flags), or the SETATTR's error.  Only
 * ever after the data is answered; a tell under way elsewhere is waited
 * for, so this client's changes of the file reach the MDS in order.  An
 * answer that did not come is kept for the tick to try again; another
 * error gives the tell up (logged). */
static int
tell_send(struct tsr_fs *fs, uint64_t ino, unsigned flags)
{
	struct tsr_mds_request r;
	struct tsr_fs_stat st;
	struct ccap *cc;
	uint64_t tgen, hgen;
	uint32_t held;
	int rc, pending;

	pthread_mutex_lock(&fs->lock);
	cc = tsr_u64map_get(&fs->caps, ino);
	if (cc)
		tell_mode_too(cc);
	if (cc == NULL || cc->tell == 0) {
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	if ((flags & TELL_NOWAIT) && cc->telling) {
		pthread_mutex_unlock(&fs->lock);
		return -EAGAIN;
	}
	cc->busy++;
	pthread_mutex_unlock(&fs->lock);
	/* never the size before the data */
	pending = wb_holds(fs, cc);
	rc = 0;
	if (pending && (flags & (TELL_NOWAIT | TELL_DATA_SENT)))
		rc = -EAGAIN;
	else if (pending && (rc = wb_sync_ino(fs, ino)) == 0 && wb_holds(fs, cc))
		rc = -EAGAIN; /* (written meanwhile) */
	pthread_mutex_lock(&fs->lock);
	while (rc == 0 && cc->telling && !fs->closing)
		pthread_cond_wait(&fs->cv, &fs->lock);
	/* a mode held while another tell was out (which did not carry it) */
	if (rc == 0 && !cc->telling)
		tell_mode_too(cc);
	if (rc < 0 || cc->tell == 0 || cc->telling) {
		cap_unhold(cc, 0);
		pthread_mutex_unlock(&fs->lock);
		return rc < 0 ? rc : 0;
	}
	cc->telling = 1;
	req_init(&r, TSR_MDS_OP_SETATTR, ino, NULL);
	tell_ctime(&r, (struct tsr_ftime){ 0, 0 });
	if (cc->tell & TSR_SETATTR_SIZE) {
		r.sa.mask |= TSR_SETATTR_SIZE | TSR_SETATTR_SIZE_GROW;
		r.sa.size = cc->tell_size;
	}
	if (cc->tell & TSR_SETATTR_MTIME) {
		r.sa.mask |= TSR_SETATTR_MTIME;
		r.sa.mtime = cc->tell_mtime;
		tell_ctime(&r, cc->tell_mtime); /* (the writes') */
	}
	tgen = cc->tell_gen;
	held = __atomic_load_n(&cc->held, __ATOMIC_RELAXED);
	hgen = cc->held_gen;
	held_add(&r, held, cc->held_atime, cc->held_mtime, cc->held_ctime,
		 cc->held_mode); /* (newer) */
	pthread_mutex_unlock(&fs->lock);
	/* as flush_attrs: as root, only ever growing the size */
	r.uid = 0;
	r.gid = 0;
	r.ngroups = 0;
	r.ino2 = parent_of(fs, ino);
	rc = r.sa.mask ? simple(fs, &r, &st, NULL) : 0; /* (held times told since) */
	if (rc < 0 && rc != -ESHUTDOWN)
		fprintf(stderr, "tessera: the size of %" PRIx64 " after its close: %s%s\n", ino,
			tsr_fs_why(), rc == -ETIMEDOUT ? " (again at the next tick)" : "");
	pthread_mutex_lock(&fs->lock);
	if (rc == 0 && r.sa.mask)
		seen_keep(fs, &st);
	if (cc->tell_gen == tgen && rc != -ETIMEDOUT)
		cc->tell = 0;
	if (held && cc->held_gen == hgen && rc != -ETIMEDOUT)
		__atomic_store_n(&cc->held, 0, __ATOMIC_RELAXED);
	cc->telling = 0;
	int again = cc->tell != 0 && rc == 0; /* (a close meanwhile) */
	cap_unhold(cc, 0);
	pthread_cond_broadcast(&fs->cv);
	pthread_mutex_unlock(&fs->lock);
	if (again) {
		pthread_mutex_lock(&fs->wb_lock); /* (as wb_sent_cb: capq lives) */
		if (!fs->tell_stop)
			tell_post(fs, ino);
		pthread_mutex_unlock(&fs->wb_lock);
	}
	return rc;
}

/* Before a request the MDS judges by the file's mode: a mode held here
 * goes first (another uid through this client would be judged by the
 * narrower mode the MDS has; other clients' requests recall BUF). */
static void
tell_mode(struct tsr_fs *fs, uint64_t ino)
{
	struct ccap *cc;
	int held;

	pthread_mutex_lock(&fs->lock);
	cc = tsr_u64map_get(&fs->caps, ino);
	held = cc && holds_mode(cc);
	pthread_mutex_unlock(&fs->lock);
	if (held)
		tell_send(fs, ino, 0);
}

/* A mode going to the MDS replaces one held here: a held mode still
 * untold (its tell failed) must not be told after it.  A tell out now
 * is answered first (it went first). */
static void
drop_held_mode(struct tsr_fs *fs, uint64_t ino)
{
	struct ccap *cc;

	pthread_mutex_lock(&fs->lock);
	if ((cc = cap_hold_existing(fs, ino)) != NULL) {
		while (cc->telling && !fs->closing)
			pthread_cond_wait(&fs->cv, &fs->lock);
		__atomic_fetch_and(&cc->held, ~(uint32_t)TSR_SETATTR_MODE, __ATOMIC_RELAXED);
		cc->held_gen++;
		cap_unhold(cc, 0);
	}
	pthread_mutex_unlock(&fs->lock);
}

struct tell {
	struct tsr_fs *fs;
	uint64_t ino;
};

/* On the caps thread: tell ino's size once its data is all answered;
 * while some is not sent yet (its object had a send in flight), send it
 * (its answer posts this again).  Waits for nothing: revokes' answers
 * queue behind it. */
static void
tell_job(void *arg)
{
	struct tell *t = arg;
	struct tsr_fs *fs = t->fs;
	struct ccap *cc;
	int ready = 1;

	pthread_mutex_lock(&fs->lock);
	cc = cap_hold_existing(fs, t->ino);
	pthread_mutex_unlock(&fs->lock);
	if (cc == NULL) {
		free(t);
		return;
	}
	pthread_mutex_lock(&fs->wb_lock);
	if (cc->wb && (!cc->tell || (cc->wb->bytes > 0 && !cc->wb->dirty_bytes))) {
		/* told already (by a revoke's answer, an open...), or the data
		 * is in flight: its answer posts this again */
		cc->wb->tell_wanted = cc->tell != 0;
		ready = 0;
	} else if (cc->wb && cc->wb->bytes > 0) {
		cc->wb->tell_wanted = 1;
		wb_send(fs, cc->wb, 0, 0);
		ready = 0;
	} else if (cc->wb) {
		cc->wb->tell_wanted = 0;
	}
	pthread_mutex_unlock(&fs->wb_lock);
	if (ready)
		tell_send(fs, t->ino, TELL_NOWAIT);
	pthread_mutex_lock(&fs->lock);
	cap_unhold(cc, 0);
	pthread_mutex_unlock(&fs->lock);
	free(t);
}

static void
tell_post(struct tsr_fs *fs, uint64_t ino)
{
	struct tell *t = tsr_xcalloc(1, sizeof(*t));

	t->fs = fs;
	t->ino = ino;
	if (tsr_workq_post(fs->capq, tell_job, t) < 0)
		free(t); /* (unmounting: unmount tells what is left) */
}

/* close(2) under BUF: f's size and mtime into its ccap, to be told once
 * the file's held data is sent and answered: 0, or 1 when BUF went
 * meanwhile (the caller sends the data and tells them itself). */
static int
tell_hold(struct tsr_file *f)
{
	struct tsr_fs *fs = f->fs;
	struct ccap *cc = f->cap;
	int post = 0;

	pthread_mutex_lock(&fs->lock);
	if (!(cap_issued(cc) & TSR_CAP_BUF)) { /* (revoked meanwhile) */
		pthread_mutex_unlock(&fs->lock);
		return 1;
	}
	pthread_mutex_lock(&f->lock);
	if (f->dirty) {
		/* (a size told since is no floor: a truncate may have come) */
		if (!(cc->tell & TSR_SETATTR_SIZE) || f->size > cc->tell_size)
			cc->tell_size = f->size;
		cc->tell |= TSR_SETATTR_SIZE;
		if (f->send_mtime &&
		    (!(cc->tell & TSR_SETATTR_MTIME) ||
		     ftime_after(f->mtime.sec, f->mtime.nsec, cc->tell_mtime.sec,
				 cc->tell_mtime.nsec))) {
			cc->tell |= TSR_SETATTR_MTIME;
			cc->tell_mtime = f->mtime;
		}
		cc->tell_gen++;
		f->dirty = 0;
	}
	pthread_mutex_unlock(&f->lock);
	if (cc->tell || __atomic_load_n(&cc->held, __ATOMIC_RELAXED)) {
		if (!cc->tell) {
			cc->tell = TELL_HELD;
			cc->tell_gen++;
		}
		pthread_mutex_lock(&fs->wb_lock);
		if (cc->wb && cc->wb->bytes > 0)
			cc->wb->tell_wanted = 1;
		else
			post = 1;
		pthread_mutex_unlock(&fs->wb_lock);
	}
	pthread_mutex_unlock(&fs->lock);
	if (post)
		tell_post(fs, f->ino);
	return 0;
}

struct revoke {
	struct tsr_fs *fs;
	struct tsr_mds_cap c;
};

/* On the caps thread: give back what the MDS revokes.  The size and
 * mtime held back go first (BUF), then the answer: an ACK, or a RELEASE
 * when no file of the inode is open here. */
static void
answer_revoke(void *arg)
{
	struct revoke *v = arg;
	struct tsr_fs *fs = v->fs;
	struct tsr_mds_request r;
	struct tsr_fs_stat st;
	struct tsr_ftime mtime = { 0 };
	uint64_t size = 0, keep_size = 0, held_gen = 0;
	uint32_t lose, held = 0;
	struct tsr_ftime held_atime = { 0 }, held_mtime = { 0 }, held_ctime = { 0 };
	int dirty = 0, send_mtime = 0, release, fresh = 0;
	struct ccap *cc;

	pthread_mutex_lock(&fs->lock);
	cc = tsr_u64map_get(&fs->caps, v->c.ino);
	if (cc == NULL) {
		/* a grant on its way (a create's answer) is older than this:
		 * kept, so that grant is known stale when it comes */
		fresh = 1;
		cc = tsr_xcalloc(1, sizeof(*cc));
		cc->idle_since = tsr_mono_ns();
		if (tsr_u64map_put(&fs->caps, v->c.ino, cc) < 0)
			abort();
		cc->issued = v->c.caps;
	} else if (v->c.seq < cc->seq) {
		pthread_mutex_unlock(&fs->lock);
		free(v);
		return; /* older than a grant we took since */
	}
	lose = cap_issued(cc) & ~v->c.caps;
	__atomic_store_n(&cc->issued, cap_issued(cc) & v->c.caps, __ATOMIC_RELEASE);
	cc->seq = v->c.seq;
	release = cc->busy == 0 && !fresh;
	if (lose & TSR_CAP_BUF)
		cc->busy++; /* (kept while what it holds back goes) */
	if (lose & TSR_CAP_CACHE) {
		cc->kept = 0;
		cc->cache_lost++;
	}
	pthread_mutex_unlock(&fs->lock);
	if ((lose & TSR_CAP_CACHE) && !fresh) {
		/* the page cache above drops the file before we answer */
		pthread_mutex_lock(&fs->inval_lock);
		if (fs->inval)
			fs->inval(fs->inval_arg, v->c.ino);
		pthread_mutex_unlock(&fs->inval_lock);
	}
	if (lose & TSR_CAP_BUF) {
		/* the data first: the new holder reads it from the OSDs.  A
		 * send that failed is answered (its data is gone; fsync and
		 * close tell it); one not answered within REVOKE_FLUSH_MS is
		 * not: no answer — the MDS evicts us, and the OSDs refuse what
		 * is still in flight before the next holder may write (its
		 * barrier) */
		int rc = 0;
		pthread_mutex_lock(&fs->wb_lock);
		if (cc->wb)
			rc = wb_send(fs, cc->wb, 0, REVOKE_FLUSH_MS);
		pthread_mutex_unlock(&fs->wb_lock);
		pthread_mutex_lock(&fs->lock);
		cap_unhold(cc, 0);
		pthread_mutex_unlock(&fs->lock);
		if (rc < 0) {
			free(v);
			return;
		}
	}
	/* closed handles' size, after the data (in order with this client's
	 * other tells of the file) */
	if (lose & TSR_CAP_BUF)
		tell_send(fs, v->c.ino, 0);
	/* then what open files and held times have, read now: a truncate or
	 * times set here during the data wait are newer than what was held
	 * before it */
	pthread_mutex_lock(&fs->lock);
	if ((lose & TSR_CAP_BUF) && (cc = tsr_u64map_get(&fs->caps, v->c.ino)) != NULL) {
		for (struct tsr_file *f = tsr_u64map_get(&fs->open, v->c.ino); f;
		     f = f->next_open) {
			pthread_mutex_lock(&f->lock);
			if (f->dirty) {
				dirty = 1;
				if (f->size > size)
					size = f->size;
				if (f->send_mtime && ftime_after(f->mtime.sec, f->mtime.nsec,
								 mtime.sec, mtime.nsec)) {
					mtime = f->mtime;
					send_mtime = 1;
				}
			}
			pthread_mutex_unlock(&f->lock);
		}
		held = __atomic_load_n(&cc->held, __ATOMIC_RELAXED);
		held_atime = cc->held_atime;
		held_mtime = cc->held_mtime;
		held_ctime = cc->held_ctime;
		held_gen = cc->held_gen;
	}
	pthread_mutex_unlock(&fs->lock);
	if (dirty || held) {
		/* as flush_attrs does: only ever larger, as root */
		req_init(&r, TSR_MDS_OP_SETATTR, v->c.ino, NULL);
		r.sa.mask = dirty ? TSR_SETATTR_SIZE | TSR_SETATTR_SIZE_GROW |
					    (send_mtime ? TSR_SETATTR_MTIME : 0) : 0;
		r.sa.size = size;
		r.sa.mtime = mtime;
		tell_ctime(&r, dirty && send_mtime ? mtime : (struct tsr_ftime){ 0, 0 });
		/* (a held mode went with tell_send above: only tell_send
		 * sends one, so a narrowing's drop_held_mode can wait for it) */
		held_add(&r, held & ~(uint32_t)TSR_SETATTR_MODE, held_atime, held_mtime,
			 held_ctime, 0);
		/* (told or not, BUF is gone: times and mode held then are
		 * the MDS's to decide now) */
		if (simple(fs, &r, &st, NULL) == 0)
			told_seen(fs, &st);
		if (held)
			held_told(fs, v->c.ino, held_gen, ~0u);
	}

	if (release) {
		/* still unused: given back */
		pthread_mutex_lock(&fs->lock);
		cc = tsr_u64map_get(&fs->caps, v->c.ino);
		if (cc && cc->busy == 0 && wb_empty(fs, cc)) {
			keep_size = cc->size;
			ccap_drop(fs, v->c.ino);
			send_release(fs, v->c.ino, keep_size > size ? keep_size : size, 0);
			pthread_mutex_unlock(&fs->lock);
			free(v);
			return;
		}
		pthread_mutex_unlock(&fs->lock);
	}
	req_init(&r, TSR_MDS_OP_CAPS, v->c.ino, NULL);
	r.flags = TSR_MDS_CAPS_ACK;
	r.mode = v->c.caps;
	r.cookie = v->c.seq;
	simple(fs, &r, NULL, NULL);
	free(v);
}

/* On a messenger thread: a revoke; answered on the caps thread (its
 * flush waits for the MDS). */
static void
on_cap(struct tsr_fs *fs, struct tsr_msg *m)
{
	struct revoke *v = tsr_xcalloc(1, sizeof(*v));
	char err[128];

	v->fs = fs;
	if (tsr_mdsmsg_cap_decode(m->front, m->front_len, &v->c, err, sizeof(err)) < 0) {
		free(v);
	} else if (v->c.op == TSR_MDS_CAP_REVOKE_DIR) {
		/* names: dropped here, in the order messages come, and given
		 * back at once (nothing to flush) */
		uint64_t seq;
		pthread_mutex_lock(&fs->lock);
		dc_revoke(&fs->dc, v->c.ino, &seq);
		send_release(fs, v->c.ino, 0, v->c.seq);
		pthread_mutex_unlock(&fs->lock);
		free(v);
	} else if (tsr_workq_post(fs->capq, answer_revoke, v) < 0) {
		free(v);
	}
	tsr_msg_free(m, 0);
}

struct rc_ctx {
	struct tsr_fs *fs;
	struct tsr_mds_reconnect r;
};

static int
gather_cap(void *arg, uint64_t ino, void *val)
{
	struct rc_ctx *x = arg;
	struct ccap *cc = val;
	uint32_t wanted = 0;

	for (struct tsr_file *f = tsr_u64map_get(&x->fs->open, ino); f; f = f->next_open)
		wanted |= (f->flags & O_ACCMODE) == O_RDONLY ? TSR_CAP_RD
			  : (f->flags & O_ACCMODE) == O_WRONLY ? TSR_CAP_WR
			  : TSR_CAP_RD | TSR_CAP_WR;
	x->r.caps[x->r.ncaps].ino = ino;
	x->r.caps[x->r.ncaps].wanted = wanted;
	x->r.caps[x->r.ncaps].issued = cap_issued(cc);
	x->r.ncaps++;
	cc->seq = 0; /* the new holder numbers its grants and revokes anew */
	cc->kept = 0; /* (what the cache above holds, the next open drops) */
	cc->cache_lost++;
	/* (the new holder may have set a security.* attribute before our
	 * claim came, or be an MDS that does not recall BUF for one) */
	cc->nosec = 0;
	return 0;
}

/* The session moved to a new holder of the rank (fs->lock held, before
 * anything unanswered is sent again): tell it the capabilities and
 * locks we held, in requests of at most TSR_MDS_RECONNECT_MAX of each,
 * the last flagged.  Not waited for: the MDS takes them in order, before
 * what follows on the session; one it refuses leaves what we hold in
 * doubt, so nothing is cached or held back any more. */
static void
reconnect_send(struct tsr_fs *fs)
{
	struct rc_ctx x = { .fs = fs };
	struct tsr_mds_request r;
	uint32_t nl = 0, at_c = 0, at_l = 0;
	int rc = 0;

	x.r.caps = tsr_xcalloc(fs->caps.n + 1, sizeof(*x.r.caps));
	x.r.locks = tsr_xcalloc(fs->nlocks + 1, sizeof(*x.r.locks));
	tsr_u64map_each(&fs->caps, gather_cap, &x);
	for (struct lockrec *l = fs->locks; l; l = l->next, nl++) {
		x.r.locks[nl].ino = l->ino;
		x.r.locks[nl].lk = l->lk;
	}
	x.r.nlocks = nl;
	for (;;) {
		struct tsr_mds_reconnect part = {
			.caps = x.r.caps + at_c,
			.ncaps = x.r.ncaps - at_c < TSR_MDS_RECONNECT_MAX ? x.r.ncaps - at_c
									: TSR_MDS_RECONNECT_MAX,
			.locks = x.r.locks + at_l,
			.nlocks = x.r.nlocks - at_l < TSR_MDS_RECONNECT_MAX ? x.r.nlocks - at_l
									 : TSR_MDS_RECONNECT_MAX,
		};
		struct tsr_enc e;
		at_c += part.ncaps;
		at_l += part.nlocks;
		tsr_enc_init(&e);
		if ((rc = tsr_mdsmsg_reconnect_encode(&e, &part)) == 0) {
			req_init(&r, TSR_MDS_OP_RECONNECT, TSR_FS_ROOT, NULL);
			r.flags = at_c == x.r.ncaps && at_l == x.r.nlocks ? TSR_MDS_RECONNECT_LAST
									  : 0;
			r.value = e.buf;
			r.value_len = e.len;
			send_now(fs, &r);
		}
		tsr_enc_release(&e);
		if (rc < 0 || r.flags)
			break;
	}
	if (rc < 0)
		tsr_u64map_each(&fs->caps, caps_forget, NULL);
	tsr_mdsmsg_reconnect_free(&x.r);
}

static int
open_inode(struct tsr_fs *fs, const struct tsr_fs_cred *cr, const struct tsr_inode *in,
	   int flags, struct ccap *cc, struct tsr_file **out)
{
	struct tsr_file *f = tsr_xcalloc(1, sizeof(*f));

	f->fs = fs;
	f->cap = cc;
	if (cr) {
		f->cr = *cr;
		f->cr.ngroups = cr->ngroups > TSR_MDS_MAX_GROUPS ? TSR_MDS_MAX_GROUPS : cr->ngroups;
		if (f->cr.ngroups) /* (groups may be NULL with none) */
			memcpy(f->groups, cr->groups, f->cr.ngroups * sizeof(uint32_t));
		f->cr.groups = f->groups;
	}
	f->ino = in->ino;
	f->flags = flags;
	f->layout = in->layout;
	f->size = in->size;
	f->ra_next = UINT64_MAX; /* (a first read is not yet a read in order) */
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_lock(&fs->wb_lock);
	/* (a failure some handle told is not this one's; one nobody told
	 * yet, a send after its writer's close, is) */
	f->err_seen = cc->wb ? cc->wb->err_told : 0;
	pthread_mutex_unlock(&fs->wb_lock);
	pthread_mutex_lock(&fs->lock);
	void *late = tsr_u64map_del(&fs->late_errs, f->ino);
	if (late && (flags & O_ACCMODE) != O_RDONLY)
		f->late_err = -(int)(uintptr_t)late;
	else if (late) /* (kept for a handle that may write) */
		tsr_u64map_put(&fs->late_errs, f->ino, late);
	f->next_open = tsr_u64map_get(&fs->open, f->ino);
	if (tsr_u64map_put(&fs->open, f->ino, f) < 0) {
		cap_unhold(cc, 0);
		pthread_mutex_unlock(&fs->lock);
		pthread_mutex_destroy(&f->lock);
		free(f);
		return failf(-ENOMEM, "out of memory");
	}
	if ((flags & O_ACCMODE) != O_RDONLY)
		cc->writers++; /* (nothing is read ahead meanwhile) */
	pthread_mutex_unlock(&fs->lock);
	*out = f;
	return 0;
}

/* st's ctime, no earlier than t: as the tell will leave it (tell_ctime) */
static void
ctime_at_least(struct tsr_fs_stat *st, struct tsr_ftime t)
{
	if (ftime_after(t.sec, t.nsec, st->ctime.sec, st->ctime.nsec))
		st->ctime = (struct tsr_fs_time){ t.sec, t.nsec };
}

/* A getattr's answer as this client knows it: no older than an answer
 * already seen (seen_newest), with the size and mtime of its own writes
 * not yet told to the MDS (open files', and closed ones' tell: others
 * see them once told, or when their stat recalls BUF), and the times and
 * mode it holds. */
static void
overlay(struct tsr_fs *fs, struct tsr_fs_stat *st)
{
	pthread_mutex_lock(&fs->lock);
	struct ccap *cc = tsr_u64map_get(&fs->caps, st->ino);
	seen_newest(fs, st); /* (first: what follows is newer still) */
	for (struct tsr_file *f = tsr_u64map_get(&fs->open, st->ino); f; f = f->next_open) {
		pthread_mutex_lock(&f->lock);
		if (f->dirty) {
			if (f->size > st->size) {
				st->size = f->size;
				st->blocks = (st->size + 511) / 512;
			}
			if (f->send_mtime) {
				st->mtime.sec = f->mtime.sec;
				st->mtime.nsec = f->mtime.nsec;
				ctime_at_least(st, f->mtime);
			}
		}
		pthread_mutex_unlock(&f->lock);
	}
	uint32_t held = cc ? __atomic_load_n(&cc->held, __ATOMIC_RELAXED) : 0;
	if (cc && (cc->tell & TSR_SETATTR_SIZE) && cc->tell_size > st->size) {
		st->size = cc->tell_size; /* (closed here, not yet told) */
		st->blocks = (st->size + 511) / 512;
	}
	if (cc && (cc->tell & TSR_SETATTR_MTIME) &&
	    ftime_after(cc->tell_mtime.sec, cc->tell_mtime.nsec, st->mtime.sec, st->mtime.nsec))
		st->mtime = (struct tsr_fs_time){ cc->tell_mtime.sec, cc->tell_mtime.nsec };
	if (cc && (cc->tell & TSR_SETATTR_MTIME))
		ctime_at_least(st, cc->tell_mtime);
	if (held & TSR_SETATTR_ATIME)
		st->atime = (struct tsr_fs_time){ cc->held_atime.sec, cc->held_atime.nsec };
	if (held & TSR_SETATTR_MTIME)
		st->mtime = (struct tsr_fs_time){ cc->held_mtime.sec, cc->held_mtime.nsec };
	if (held & TSR_SETATTR_MODE)
		st->mode = (st->mode & ~07777u) | cc->held_mode;
	if (held)
		ctime_at_least(st, cc->held_ctime);
	pthread_mutex_unlock(&fs->lock);
}

/* This client set the file's size or mtime: its open files know, so a
 * later close neither grows the file back nor undoes the mtime (tar sets
 * a file's times after writing it, before it closes it). */
static void
open_files_set(struct tsr_fs *fs, uint64_t ino, unsigned mask, uint64_t size)
{
	pthread_mutex_lock(&fs->lock);
	for (struct tsr_file *f = tsr_u64map_get(&fs->open, ino); f; f = f->next_open) {
		pthread_mutex_lock(&f->lock);
		if (mask & TSR_FS_SET_SIZE)
			f->size = size;
		if (mask & (TSR_FS_SET_MTIME | TSR_FS_SET_MTIME_NOW))
			f->send_mtime = 0;
		pthread_mutex_unlock(&f->lock);
	}
	struct ccap *cc = tsr_u64map_get(&fs->caps, ino);
	/* (the MDS has newer times: a truncate moves mtime too) */
	if (cc && (mask & (TSR_FS_SET_ATIME | TSR_FS_SET_ATIME_NOW)))
		__atomic_fetch_and(&cc->held, ~(uint32_t)TSR_SETATTR_ATIME, __ATOMIC_RELAXED);
	if (cc && (mask & (TSR_FS_SET_MTIME | TSR_FS_SET_MTIME_NOW | TSR_FS_SET_SIZE)))
		__atomic_fetch_and(&cc->held, ~(uint32_t)TSR_SETATTR_MTIME, __ATOMIC_RELAXED);
	/* and a closed handle's, held since the setattr asked (its tell_send
	 * went before): older than what the MDS has now */
	if (cc && (cc->tell & TSR_SETATTR_SIZE) && (mask & TSR_FS_SET_SIZE)) {
		cc->tell &= ~(uint32_t)TSR_SETATTR_SIZE;
		cc->tell_gen++;
	}
	if (cc && (cc->tell & TSR_SETATTR_MTIME) &&
	    (mask & (TSR_FS_SET_MTIME | TSR_FS_SET_MTIME_NOW | TSR_FS_SET_SIZE))) {
		cc->tell &= ~(uint32_t)TSR_SETATTR_MTIME;
		cc->tell_gen++;
	}
	if (cc && cc->tell == TELL_HELD && !__atomic_load_n(&cc->held, __ATOMIC_RELAXED))
		cc->tell = 0;
	pthread_mutex_unlock(&fs->lock);
}

/* Times and widened permission bits set by the owner (or root) of a
 * file this client has open and holds BUF on: kept here and told with
 * the size at close or fsync, or when another client asks (cp -a and tar
 * set a file's times, and cp -a its mode, between writing and closing
 * it: two MDS changes less per file).  0 with *out, or 1: not kept (the
 * MDS decides). */
static int
hold_times(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino,
	   const struct tsr_fs_stat *a, unsigned mask, struct tsr_fs_stat *out)
{
	struct tsr_fs_stat st;
	struct timespec now;
	struct ccap *cc;
	int held = 0;

	pthread_mutex_lock(&fs->lock);
	cc = cap_hold_existing(fs, ino);
	if (cc && (!(cap_issued(cc) & TSR_CAP_BUF) || tsr_u64map_get(&fs->open, ino) == NULL)) {
		cap_unhold(cc, 0);
		cc = NULL;
	}
	if (cc == NULL) {
		pthread_mutex_unlock(&fs->lock);
		return 1;
	}
	pthread_mutex_unlock(&fs->lock);
	/* (the owner as this client sees it: a chown elsewhere recalls BUF) */
	int ok = tsr_fs_getattr(fs, cr, ino, &st) == 0 && S_ISREG(st.mode) &&
		 (cr == NULL || cr->uid == 0 || cr->uid == st.uid);
	/* a mode: only permission bits, none special before or after (a
	 * setgid bit's rules are the MDS's to apply), and only widening
	 * them (cp -a's 0600 -> 0644): the mode the MDS has is then never
	 * wider than the one held, and where it denies access it recalls
	 * BUF and asks again.  A narrowing goes to the MDS now. */
	if ((mask & TSR_FS_SET_MODE) && (a->mode & 07000))
		ok = 0;
	clock_gettime(CLOCK_REALTIME, &now);
	struct tsr_ftime t = { now.tv_sec, (uint32_t)now.tv_nsec };
	pthread_mutex_lock(&fs->lock);
	/* (a revoke meanwhile: the MDS; a last close meanwhile told what
	 * was held then: the MDS too) */
	if (ok && (mask & TSR_FS_SET_MODE)) {
		/* the mode now, as this client knows it (st may be older: a
		 * tell answered meanwhile): held here, or else cached (the
		 * MDS revokes the names before another client changes it;
		 * this client's own changes update the cache before their
		 * callers go on) */
		struct tsr_fs_stat cur;
		uint32_t mode;
		if (holds_mode(cc))
			mode = cc->held_mode;
		else if (dc_live(fs) && dc_getattr(&fs->dc, ino, &cur) == 1)
			mode = cur.mode;
		else
			mode = 07000; /* (not known: the MDS decides) */
		if ((mode & 07000) || (mode & 0777 & ~a->mode))
			ok = 0;
	}
	if (ok && (cap_issued(cc) & TSR_CAP_BUF) && tsr_u64map_get(&fs->open, ino) != NULL) {
		uint32_t bits = 0;
		if (mask & (TSR_FS_SET_ATIME | TSR_FS_SET_ATIME_NOW)) {
			cc->held_atime = mask & TSR_FS_SET_ATIME_NOW
						 ? t : (struct tsr_ftime){ a->atime.sec, a->atime.nsec };
			bits |= TSR_SETATTR_ATIME;
		}
		if (mask & (TSR_FS_SET_MTIME | TSR_FS_SET_MTIME_NOW)) {
			cc->held_mtime = mask & TSR_FS_SET_MTIME_NOW
						 ? t : (struct tsr_ftime){ a->mtime.sec, a->mtime.nsec };
			bits |= TSR_SETATTR_MTIME;
			/* newer than the writes' mtime, until the next write (which
			 * clears the bit under its file's lock) */
			for (struct tsr_file *f = tsr_u64map_get(&fs->open, ino); f;
			     f = f->next_open) {
				pthread_mutex_lock(&f->lock);
				f->send_mtime = 0;
				pthread_mutex_unlock(&f->lock);
			}
		}
		if (mask & TSR_FS_SET_MODE) {
			cc->held_mode = a->mode & 0777;
			bits |= TSR_SETATTR_MODE;
		}
		cc->held_ctime = t;
		__atomic_fetch_or(&cc->held, bits, __ATOMIC_RELAXED);
		cc->held_gen++;
		/* told at the last close at the latest (or by the idle tick,
		 * should that close have gone by meanwhile); the capability
		 * stays until then */
		if (!cc->tell) {
			cc->tell = TELL_HELD;
			cc->tell_gen++;
		}
		held = 1;
	}
	cap_unhold(cc, 0);
	pthread_mutex_unlock(&fs->lock);
	if (!held)
		return 1;
	if (out) {
		overlay(fs, &st);
		*out = st;
	}
	return 0;
}


int
tsr_fs_open(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t ino, int flags,
	    struct tsr_file **out)
{
	struct tsr_mds_request r;
	struct tsr_inode in = { 0 };
	struct ccap *cc;
	struct grant g;
	int rc;

	*out = NULL;
	/* a size a close here held back goes first: the answer's size is
	 * the handle's (an open soon after a close: git, editors) */
	tell_send(fs, ino, 0);
	req_init(&r, TSR_MDS_OP_OPEN, ino, cr);
	r.flags = (uint32_t)flags & ~TSR_MDS_OPEN_PROBE;
	pthread_mutex_lock(&fs->lock);
	cc = cap_hold(fs, ino); /* busy before the ask: no release crosses it */
	pthread_mutex_unlock(&fs->lock);
	if ((rc = simple_g(fs, &r, NULL, &in, &g)) == 0) {
		pthread_mutex_lock(&fs->lock);
		cap_grant(fs, cc, &g);
		pthread_mutex_unlock(&fs->lock);
		rc = barrier_wait(fs, g.barrier);
	}
	if (rc == 0 && S_ISDIR(in.mode) && (flags & O_ACCMODE) != O_RDONLY)
		rc = failf(-EISDIR, "a directory opened for writing");
	if (rc == 0 && (flags & O_TRUNC) && S_ISREG(in.mode) && in.size > 0) {
		struct tsr_fs_stat a = { .size = 0 };
		if ((rc = tsr_fs_setattr(fs, cr, ino, &a, TSR_FS_SET_SIZE, NULL)) == 0)
			in.size = 0;
	}
	if (rc < 0) {
		pthread_mutex_lock(&fs->lock);
		cap_unhold(cc, 0);
		pthread_mutex_unlock(&fs->lock);
		tsr_inode_free(&in);
		return rc;
	}
	rc = open_inode(fs, cr, &in, flags, cc, out);
	tsr_inode_free(&in);
	return rc;
}

int
tsr_fs_create(struct tsr_fs *fs, const struct tsr_fs_cred *cr, uint64_t parent,
	      const char *name, uint32_t mode, int flags, struct tsr_file **out,
	      struct tsr_fs_stat *st)
{
	struct tsr_fs_stat s;
	struct tsr_inode in = { 0 };
	struct grant g = { 0 };
	int rc;

	*out = NULL;
	rc = make_g(fs, cr, TSR_MDS_OP_MKNOD, parent, name, S_IFREG | (mode & 07777), 0, NULL,
		    &s, &in, TSR_MDS_CREATE_OPEN | ((uint32_t)(flags & O_ACCMODE) << 4), &g);
	if (rc == 0) {
		/* made by this call: opened as asked whatever its mode says
		 * (open(O_CREAT, 0444) for writing is POSIX's), nothing to cut;
		 * its maker holds it alone */
		pthread_mutex_lock(&fs->lock);
		struct ccap *cc = cap_hold(fs, in.ino);
		cap_grant(fs, cc, &g);
		pthread_mutex_unlock(&fs->lock);
		rc = open_inode(fs, cr, &in, flags & ~(O_CREAT | O_EXCL | O_TRUNC), cc, out);
		tsr_inode_free(&in);
		if (rc == 0 && st)
			*st = s;
		return rc;
	}
	tsr_inode_free(&in);
	if (rc == -EEXIST && !(flags & O_EXCL))
		rc = tsr_fs_lookup(fs, cr, parent, name, &s);
	if (rc < 0)
		return rc;
	if (S_ISDIR(s.mode))
		return failf(-EISDIR, "\"%s\" is a directory", name);
	if ((rc = tsr_fs_open(fs, cr, s.ino, flags & ~(O_CREAT | O_EXCL), out)) < 0)
		return rc;
	if (st)
		*st = s;
	return 0;
}

/* Read into or write from buf[0..len) at file offset off, one object
 * operation per piece of a stripe unit, IO_INFLIGHT at a time: 0 or an
 * error (an absent object reads as zeros: buf was zeroed). */
static int
move_data(struct tsr_file *f, uint8_t *rbuf, const uint8_t *wbuf, size_t len, uint64_t off)
{
	struct tsr_op *ops[IO_INFLIGHT * 4];
	uint64_t gots[IO_INFLIGHT * 4];
	struct io_batch b;
	uint64_t done = 0;
	int rc, wrc = 0;

	while (done < len) {
		size_t nops = 0;
		io_init(&b);
		while (done < len && nops < sizeof(ops) / sizeof(ops[0])) {
			uint64_t objno, objoff, left;
			char oid[48];
			tsr_layout_map(&f->layout, off + done, &objno, &objoff, &left);
			if (left > len - done)
				left = len - done;
			if (rbuf && (wrc = wb_read(f, objno, objoff, (size_t)left, rbuf + done))) {
				if (wrc < 0)
					break;
				wrc = 0;
				done += left; /* from what is held back */
				continue;
			}
			struct tsr_op *op = tsr_op_create();
			tsr_fs_data_oid(f->ino, objno, oid, sizeof(oid));
			if (rbuf)
				tsr_op_read(op, objoff, left, rbuf + done, &gots[nops], NULL);
			else
				tsr_op_write(op, objoff, wbuf + done, left);
			ops[nops++] = op;
			io_submit(f->fs, &b, f->layout.pool, oid, op);
			done += left;
		}
		rc = io_wait(&b);
		for (size_t i = 0; i < nops; i++)
			tsr_op_destroy(ops[i]);
		if (rc == 0)
			rc = wrc;
		if (rc < 0)
			return failf(rc, "%s inode %" PRIx64 " at %" PRIu64 ": %s",
				     rbuf ? "reading" : "writing", f->ino, off, strerror(-rc));
	}
	return 0;
}

/* ---- Read-ahead ----
 *
 * A file read in order (a read where the last one ended, or inside what
 * was read ahead; not an open's first read) is read ahead of its reader
 * in pieces of at most RA_PIECE bytes, each inside one stripe unit, up
 * to a window past the read: two pieces at first, doubled by each read in
 * order, at most client_readahead_max (and RA_FILE_PIECES pieces).  A
 * read elsewhere stops it and lets the file's pieces go.  The pieces of
 * every file together hold at most RA_TOTAL windows' worth: past that,
 * the answered pieces of the files read longest ago go first.
 *
 * A piece is sent only while this client holds RD and CACHE (no other
 * client writes the file), hears from the MDS (an evicted client is not
 * told CACHE went), has no file of the inode open for writing and none
 * of its writes held back: what the OSDs send is the file's data.  It is
 * used only while that still holds: the ccap's cache_lost (CACHE went)
 * and data_gen (bumped when a file open here for writing closes, and
 * after a truncate here) are those it was sent under.  That suffices
 * because a write needs a file open for writing, and those are counted
 * (writers) under fs->lock before they write: no piece is sent while
 * one is open, and pieces sent before its open are stale after its
 * close. */

#define RA_PIECE (1u << 20)
#define RA_FILE_PIECES 64u
#define RA_TOTAL 8u

struct rapiece {
	struct rapiece *next;        /* the file's, in file order */
	struct rapiece *send;        /* (ra_read: sent by this call) */
	struct tsr_fs *fs;
	uint64_t off, len;           /* in the file */
	uint64_t objno, objoff;
	uint8_t *data;
	uint64_t got;                /* (the read's length) */
	struct tsr_op *op;
	uint64_t lost, dgen;         /* the ccap's cache_lost and data_gen */
	int out;                     /* in flight */
	int orphan;                  /* no file's: freed once answered */
	int rc;
};

/* (ra_lock) p goes, its operation answered. */
static void
ra_free(struct tsr_fs *fs, struct rapiece *p)
{
	fs->ra_bytes -= p->len;
	tsr_op_destroy(p->op);
	free(p->data);
	free(p);
}

static void
ra_done(void *arg, int result, const struct tsr_objver *ver)
{
	struct rapiece *p = arg;
	struct tsr_fs *fs = p->fs;

	(void)ver;
	/* (the piece is the operation's until it is marked answered) */
	if (result == -ENOENT) { /* no object: a hole */
		memset(p->data, 0, p->len);
		result = 0;
	} else if (result == 0 && p->got < p->len) {
		memset(p->data + p->got, 0, p->len - p->got);
	}
	pthread_mutex_lock(&fs->ra_lock);
	p->rc = result;
	p->out = 0;
	fs->ra_out--;
	if (p->orphan)
		ra_free(fs, p);
	pthread_cond_broadcast(&fs->ra_cv);
	pthread_mutex_unlock(&fs->ra_lock);
}

/* (ra_lock) p, off its file's list, goes: now, or once answered. */
static void
ra_drop(struct tsr_fs *fs, struct rapiece *p)
{
	if (p->out)
		p->orphan = 1;
	else
		ra_free(fs, p);
}

/* (ra_lock) f's pieces go; f leaves the list of files holding some. */
static void
ra_drop_all(struct tsr_fs *fs, struct tsr_file *f)
{
	while (f->ra) {
		struct rapiece *p = f->ra;
		f->ra = p->next;
		ra_drop(fs, p);
	}
	if (f->ra_listed) {
		*(f->ra_older ? &f->ra_older->ra_newer : &fs->ra_oldest) = f->ra_newer;
		*(f->ra_newer ? &f->ra_newer->ra_older : &fs->ra_newest) = f->ra_older;
		f->ra_older = f->ra_newer = NULL;
		f->ra_listed = 0;
	}
}

/* (ra_lock) f was read now: newest on the list. */
static void
ra_touch(struct tsr_fs *fs, struct tsr_file *f)
{
	if (f->ra_listed) {
		if (fs->ra_newest == f)
			return;
		*(f->ra_older ? &f->ra_older->ra_newer : &fs->ra_oldest) = f->ra_newer;
		f->ra_newer->ra_older = f->ra_older;
	}
	f->ra_older = fs->ra_newest;
	f->ra_newer = NULL;
	*(fs->ra_newest ? &fs->ra_newest->ra_newer : &fs->ra_oldest) = f;
	fs->ra_newest = f;
	f->ra_listed = 1;
}

/* (ra_lock) Room for len more bytes of pieces, from the answered pieces of
 * the files read longest ago (not f's): 1 when there is. */
static int
ra_room(struct tsr_fs *fs, struct tsr_file *f, uint64_t len)
{
	for (struct tsr_file *o = fs->ra_oldest; o && fs->ra_bytes + len > RA_TOTAL * fs->ra_max;
	     o = o->ra_newer) {
		if (o == f)
			continue;
		for (struct rapiece **pp = &o->ra; *pp;) {
			struct rapiece *p = *pp;
			if (p->out) {
				pp = &p->next;
				continue;
			}
			*pp = p->next;
			ra_free(fs, p);
		}
	}
	return fs->ra_bytes + len <= RA_TOTAL * fs->ra_max;
}

/* (ra_lock) f's piece holding file offset at, or NULL; *pp the link to it. */
static struct rapiece *
ra_find(struct tsr_file *f, uint64_t at, struct rapiece ***pp)
{
	for (struct rapiece **l = &f->ra; *l && (*l)->off <= at; l = &(*l)->next)
		if (at < (*l)->off + (*l)->len) {
			if (pp)
				*pp = l;
			return *l;
		}
	return NULL;
}

/* The file closes: its pieces go. */
static void
ra_forget(struct tsr_file *f)
{
	struct tsr_fs *fs = f->fs;

	pthread_mutex_lock(&fs->ra_lock);
	ra_drop_all(fs, f);
	pthread_mutex_unlock(&fs->ra_lock);
}

/* This client changed ino's data other than through a write (a
 * truncate): what was read ahead before goes unused. */
static void
data_changed(struct tsr_fs *fs, uint64_t ino)
{
	struct ccap *cc;

	pthread_mutex_lock(&fs->lock);
	if ((cc = tsr_u64map_get(&fs->caps, ino)) != NULL)
		cc->data_gen++;
	pthread_mutex_unlock(&fs->lock);
}

/* (ra_lock) f is read in order at [off, off+len) of a file size bytes
 * long: pieces from there up to the window past it are made, onto
 * *send, in file order on f's list. */
static void
ra_ahead(struct tsr_file *f, uint64_t off, size_t len, uint64_t size, uint64_t lost,
	 uint64_t dgen, struct rapiece **send)
{
	struct tsr_fs *fs = f->fs;
	struct rapiece **pp = &f->ra, *p;
	uint64_t at = off + len, end;
	unsigned n = 0;

	f->ra_win = f->ra_win == 0 ? 2 * (uint64_t)RA_PIECE : 2 * f->ra_win;
	if (f->ra_win > fs->ra_max)
		f->ra_win = fs->ra_max;
	end = size - at > f->ra_win ? at + f->ra_win : size;
	for (p = f->ra; p; p = p->next)
		n++;
	while (at < end && n < RA_FILE_PIECES) {
		uint64_t objno, objoff, left;
		/* (the list is in file order: the first piece past at is
		 * the bound of a new one) */
		while (*pp && (*pp)->off + (*pp)->len <= at)
			pp = &(*pp)->next;
		if (*pp && (*pp)->off <= at) {
			at = (*pp)->off + (*pp)->len;
			continue;
		}
		tsr_layout_map(&f->layout, at, &objno, &objoff, &left);
		if (left > RA_PIECE)
			left = RA_PIECE;
		if (left > end - at)
			left = end - at;
		if (*pp && (*pp)->off - at < left)
			left = (*pp)->off - at;
		if (!ra_room(fs, f, left))
			break;
		uint8_t *data = malloc(left);
		struct tsr_op *op = data ? tsr_op_create() : NULL;
		if (op == NULL) {
			free(data);
			break;
		}
		p = tsr_xcalloc(1, sizeof(*p));
		p->fs = fs;
		p->off = at;
		p->len = left;
		p->objno = objno;
		p->objoff = objoff;
		p->data = data;
		p->lost = lost;
		p->dgen = dgen;
		p->out = 1;
		p->op = op;
		tsr_op_read(op, objoff, left, data, &p->got, NULL);
		p->next = *pp;
		*pp = p;
		pp = &p->next;
		p->send = *send;
		*send = p;
		fs->ra_bytes += left;
		fs->ra_out++;
		n++;
		at += left;
	}
}

/* A read of [off, off+len) of f, a file size bytes long (off + len <=
 * size), from what was read ahead, reading on ahead when it is in order:
 * how many bytes from off it answered (the rest is the OSDs' to read). */
static size_t
ra_read(struct tsr_file *f, uint8_t *buf, size_t len, uint64_t off, uint64_t size)
{
	struct tsr_fs *fs = f->fs;
	struct ccap *cc = f->cap;
	struct rapiece *send = NULL, *p, **pp;
	uint64_t lost, dgen;
	size_t have = 0;
	int ok;

	pthread_mutex_lock(&fs->ra_lock);
	if (f->ra == NULL && off != f->ra_next) { /* (a random read: no more) */
		f->ra_win = 0;
		f->ra_next = off + len;
		pthread_mutex_unlock(&fs->ra_lock);
		return 0;
	}
	pthread_mutex_unlock(&fs->ra_lock);
	pthread_mutex_lock(&fs->lock);
	ok = (cap_issued(cc) & (TSR_CAP_RD | TSR_CAP_CACHE)) == (TSR_CAP_RD | TSR_CAP_CACHE) &&
	     cc->writers == 0 && !fs->evicted && tsr_mono_ns() - fs->heard_ns < DC_LEASE_NS;
	lost = cc->cache_lost;
	dgen = cc->data_gen;
	pthread_mutex_unlock(&fs->lock);
	if (ok) { /* (a closed writer's data may still be held back) */
		pthread_mutex_lock(&fs->wb_lock);
		ok = cc->wb == NULL || cc->wb->bytes == 0;
		pthread_mutex_unlock(&fs->wb_lock);
	}
	pthread_mutex_lock(&fs->ra_lock);
	if (!ok) {
		ra_drop_all(fs, f);
		f->ra_win = 0;
		f->ra_next = off + len;
		pthread_mutex_unlock(&fs->ra_lock);
		return 0;
	}
	/* pieces no longer the file's data go, and those a piece and more
	 * behind the reader (a read a little behind may still want one) */
	for (pp = &f->ra; (p = *pp) != NULL;) {
		if (p->lost != lost || p->dgen != dgen ||
		    (!p->out && p->off + p->len + RA_PIECE <= off)) {
			*pp = p->next;
			ra_drop(fs, p);
		} else {
			pp = &p->next;
		}
	}
	if (off == f->ra_next || ra_find(f, off, NULL)) {
		ra_touch(fs, f);
		ra_ahead(f, off, len, size, lost, dgen, &send);
	} else {
		ra_drop_all(fs, f);
		f->ra_win = 0;
	}
	f->ra_next = off + len;
	pthread_mutex_unlock(&fs->ra_lock);
	for (p = send; p; p = send) {
		int rc;
		char oid[48];
		send = p->send;
		tsr_fs_data_oid(f->ino, p->objno, oid, sizeof(oid));
		if ((rc = tsr_op_submit(fs->c, f->layout.pool, oid, strlen(oid), p->op, ra_done,
					p)) < 0)
			ra_done(p, rc, NULL);
	}
	pthread_mutex_lock(&fs->ra_lock);
	while (have < len && (p = ra_find(f, off + have, &pp)) != NULL &&
	       p->lost == lost && p->dgen == dgen) {
		if (p->out) { /* (it may go meanwhile: found again) */
			pthread_cond_wait(&fs->ra_cv, &fs->ra_lock);
			continue;
		}
		if (p->rc < 0) { /* read again by the caller, who says why */
			*pp = p->next;
			ra_drop(fs, p);
			break;
		}
		uint64_t at = off + have, n = p->off + p->len - at;
		if (n > len - have)
			n = len - have;
		memcpy(buf + have, p->data + (at - p->off), n);
		have += n;
	}
	pthread_mutex_unlock(&fs->ra_lock);
	return have;
}

ssize_t
tsr_fs_read(struct tsr_file *f, void *buf, size_t len, uint64_t off)
{
	uint64_t size;
	size_t have;
	int rc;

	pthread_mutex_lock(&f->lock);
	size = f->size;
	pthread_mutex_unlock(&f->lock);
	if (off + len > size && (cap_issued(f->cap) & TSR_CAP_CACHE)) {
		/* no other client writes: our other open files may have */
		struct tsr_fs_stat local = { .ino = f->ino, .size = size };
		overlay(f->fs, &local);
		size = local.size;
	} else if (off + len > size) {
		/* past the end we know: another client may have written more */
		struct tsr_fs_stat st;
		if (tsr_fs_getattr(f->fs, &f->cr, f->ino, &st) == 0 && st.size > size) {
			size = st.size;
			pthread_mutex_lock(&f->lock);
			if (size > f->size)
				f->size = size;
			pthread_mutex_unlock(&f->lock);
		}
	}
	if (off >= size || len == 0)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	have = f->fs->ra_max && (f->flags & O_ACCMODE) == O_RDONLY
		       ? ra_read(f, buf, len, off, size) : 0;
	if (have < len) {
		/* holes and absent objects read as zeros */
		memset((uint8_t *)buf + have, 0, len - have);
		if ((rc = move_data(f, (uint8_t *)buf + have, NULL, len - have, off + have)) < 0)
			return rc;
	}
	return (ssize_t)len;
}

static int flush_attrs(struct tsr_file *f);

ssize_t
tsr_fs_write(struct tsr_file *f, const void *buf, size_t len, uint64_t off)
{
	struct timespec now;
	int rc;

	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return failf(-EBADF, "a file opened for reading only");
	if (f->flags & O_APPEND) {
		pthread_mutex_lock(&f->lock);
		off = f->size;
		pthread_mutex_unlock(&f->lock);
	}
	if (len == 0)
		return 0;
	if (off + len < off || off + len > (1ull << 62))
		return failf(-EFBIG, "a write past the largest file");
	if ((rc = data_write(f, buf, len, off)) < 0)
		return rc;
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_mutex_lock(&f->lock);
	f->mtime.sec = now.tv_sec;
	f->mtime.nsec = (uint32_t)now.tv_nsec;
	if (off + len > f->size)
		f->size = off + len;
	f->dirty = 1;
	f->send_mtime = 1;
	f->gen++;
	/* (a write after times set here: its mtime wins) */
	__atomic_fetch_and(&f->cap->held, ~(uint32_t)TSR_SETATTR_MTIME, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&f->lock);
	/* without BUF another client has the file: it sees our size and
	 * mtime at once */
	if (!(cap_issued(f->cap) & TSR_CAP_BUF) && (rc = flush_attrs(f)) < 0)
		return rc;
	return (ssize_t)len;
}

/* Tell the MDS the size (only ever larger: another client's truncate is
 * not undone) and the mtime of the last write. */
static int
flush_attrs(struct tsr_file *f)
{
	struct tsr_mds_request r;
	struct tsr_fs_stat st;
	struct tsr_ftime held_atime, held_mtime, held_ctime;
	uint64_t gen, held_gen;
	uint32_t held;
	int rc;

	req_init(&r, TSR_MDS_OP_SETATTR, f->ino, &f->cr);
	pthread_mutex_lock(&f->fs->lock);
	/* (not a held mode: only tell_send sends one, so a narrowing's
	 * drop_held_mode can wait for it) */
	held = __atomic_load_n(&f->cap->held, __ATOMIC_RELAXED) & ~(uint32_t)TSR_SETATTR_MODE;
	held_atime = f->cap->held_atime;
	held_mtime = f->cap->held_mtime;
	held_ctime = f->cap->held_ctime;
	held_gen = f->cap->held_gen;
	pthread_mutex_unlock(&f->fs->lock);
	pthread_mutex_lock(&f->lock);
	if (!f->dirty && !held) {
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	r.sa.mask = f->dirty ? TSR_SETATTR_SIZE | TSR_SETATTR_SIZE_GROW |
				       (f->send_mtime ? TSR_SETATTR_MTIME : 0) : 0;
	r.sa.size = f->size;
	r.sa.mtime = f->mtime;
	tell_ctime(&r, f->dirty && f->send_mtime ? f->mtime : (struct tsr_ftime){ 0, 0 });
	gen = f->gen;
	pthread_mutex_unlock(&f->lock);
	held_add(&r, held, held_atime, held_mtime, held_ctime, 0);
	/* the writer owns the change: the MDS checks the owner for explicit
	 * times, so send as root (the open already checked the access) */
	r.uid = 0;
	r.gid = 0;
	r.ngroups = 0;
	if ((rc = simple(f->fs, &r, &st, NULL)) == 0) {
		told_seen(f->fs, &st);
		pthread_mutex_lock(&f->lock);
		if (f->gen == gen) /* no write since: all of it is told */
			f->dirty = 0;
		pthread_mutex_unlock(&f->lock);
	}
	if (held) /* (told, or lost with the error returned) */
		held_told(f->fs, f->ino, held_gen, held);
	return rc;
}

int
tsr_fs_fsetattr(struct tsr_file *f, const struct tsr_fs_stat *a, unsigned mask,
		struct tsr_fs_stat *out)
{
	if ((mask & TSR_FS_SET_SIZE) && (f->flags & O_ACCMODE) == O_RDONLY)
		return failf(-EBADF, "ftruncate of a file open for reading only");
	return setattr_common(f->fs, &f->cr, f->ino, a, mask, out,
			      (f->flags & O_ACCMODE) != O_RDONLY);
}

int
tsr_fs_fallocate(struct tsr_file *f, int mode, uint64_t off, uint64_t len)
{
	struct io_batch b;
	struct tsr_op *ops[IO_INFLIGHT * 4];
	struct timespec now;
	uint64_t size, end, done = 0;
	int rc;

	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return failf(-EBADF, "a file opened for reading only");
	if (len == 0 || off + len < off || off + len > TSR_FS_MAX_SIZE)
		return failf(-EINVAL, "a range of %" PRIu64 " bytes at %" PRIu64, len, off);
	if (mode == FALLOC_FL_KEEP_SIZE)
		return 0;
	if (mode == 0) {
		clock_gettime(CLOCK_REALTIME, &now);
		pthread_mutex_lock(&f->lock);
		if (off + len > f->size) {
			f->size = off + len;
			f->mtime.sec = now.tv_sec;
			f->mtime.nsec = (uint32_t)now.tv_nsec;
			f->dirty = 1;
			f->send_mtime = 1;
			f->gen++;
			__atomic_fetch_and(&f->cap->held, ~(uint32_t)TSR_SETATTR_MTIME,
					   __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&f->lock);
		/* (without BUF another client sees the size at once) */
		return cap_issued(f->cap) & TSR_CAP_BUF ? 0 : flush_attrs(f);
	}
	if (mode != (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
		return failf(-EOPNOTSUPP, "fallocate mode %#x (0, KEEP_SIZE and PUNCH_HOLE "
			     "with KEEP_SIZE are)", (unsigned)mode);
	/* a hole: zeros in every object the range covers, up to the size,
	 * after what is held back (which it may cover) */
	struct tsr_fs_stat st;
	if ((rc = wb_sync(f, 1)) < 0 || (rc = tsr_fs_getattr(f->fs, &f->cr, f->ino, &st)) < 0)
		return rc;
	size = st.size;
	end = off + len < size ? off + len : size;
	while (off + done < end) {
		size_t nops = 0;
		io_init(&b);
		while (off + done < end && nops < sizeof(ops) / sizeof(ops[0])) {
			uint64_t objno, objoff, left;
			char oid[48];
			tsr_layout_map(&f->layout, off + done, &objno, &objoff, &left);
			if (left > end - off - done)
				left = end - off - done;
			struct tsr_op *op = tsr_op_create();
			tsr_fs_data_oid(f->ino, objno, oid, sizeof(oid));
			tsr_op_zero(op, objoff, left);
			ops[nops++] = op;
			io_submit(f->fs, &b, f->layout.pool, oid, op);
			done += left;
		}
		rc = io_wait(&b);
		for (size_t i = 0; i < nops; i++)
			tsr_op_destroy(ops[i]);
		if (rc < 0)
			return failf(rc, "punching a hole in inode %" PRIx64 ": %s", f->ino,
				     strerror(-rc));
	}
	/* a hole is a change of the data: mtime moves (sent at close) */
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_mutex_lock(&f->lock);
	f->mtime.sec = now.tv_sec;
	f->mtime.nsec = (uint32_t)now.tv_nsec;
	f->dirty = 1;
	f->send_mtime = 1;
	f->gen++;
	__atomic_fetch_and(&f->cap->held, ~(uint32_t)TSR_SETATTR_MTIME, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&f->lock);
	return cap_issued(f->cap) & TSR_CAP_BUF ? 0 : flush_attrs(f);
}

/* Does a close under BUF start every file's held writes out?  Only once
 * the client holds 1/WB_CLOSE_BURST of client_dirty_max (at most
 * WB_BURST_MAX) not yet sent: below that the closed file's writes stay
 * held (they go with the others, or after WB_AGE_NS).  A tree copy's
 * small files then reach the OSDs a thousand at a time, and each OSD
 * commits a burst's writes in a few journal flushes where one file a
 * close made one flush per copy of it.  (Counting what is not sent yet,
 * the closes while a burst is answered hold their files for the next.) */
static int
close_sends(struct tsr_fs *fs)
{
	uint64_t at = fs->wb_max / WB_CLOSE_BURST;
	int rc;

	if (at > WB_BURST_MAX)
		at = WB_BURST_MAX;
	pthread_mutex_lock(&fs->wb_lock);
	rc = fs->wb_max > 0 && fs->wb_unsent >= at;
	pthread_mutex_unlock(&fs->wb_lock);
	return rc;
}

/* close(2).  Under BUF nothing is waited for, and the file's held-back
 * data stays held unless close_sends says a burst is due, as a local
 * file system does not write at close: the size and mtime wait in the
 * ccap until the data is answered (tell_hold; see "A closed handle's
 * size"), nobody else reads the file before the BUF it needs is revoked,
 * and the answer to that revoke sends and waits for the data and tells
 * the size; the capability is not given back, and the file's objects not
 * purged, while any of it is held.  A send that fails is told by the
 * next fsync of a handle of the file (wb_sync; after the last close, of
 * the next open's).  Without BUF, writes went through already: the size
 * is told, and what a revoke left in flight waited for.  fsync
 * (wait_data) sends and waits for both. */
static int
flush_file(struct tsr_file *f, int wait_data)
{
	int rc, rc2;

	if (wait_data || !(cap_issued(f->cap) & TSR_CAP_BUF)) {
		wb_sync(f, 0);
	} else {
		if (close_sends(f->fs))
			wb_kick(f->fs, UINT64_MAX);
		if (tell_hold(f) == 0)
			return 0;
		wb_sync(f, 0); /* (BUF went meanwhile: the data starts before the size) */
	}
	/* a closed handle's size first (the MDS keeps the larger) */
	if ((rc = tell_send(f->fs, f->ino, 0)) < 0 && rc != -EAGAIN && wait_data)
		return rc; /* (-EAGAIN: written meanwhile; the tell follows that) */
	rc = flush_attrs(f);
	rc2 = wb_sync(f, 1);
	pthread_mutex_lock(&f->fs->wb_lock);
	if (wait_data && rc2 == 0 && f->late_err) {
		rc2 = failf(f->late_err, "writing back inode %" PRIx64 " (after its last "
			    "close): %s", f->ino, strerror(-f->late_err));
		f->late_err = 0;
	}
	pthread_mutex_unlock(&f->fs->wb_lock);
	return rc2 < 0 ? rc2 : rc;
}

int
tsr_fs_flush(struct tsr_file *f)
{
	return flush_file(f, 0);
}

int
tsr_fs_fsync(struct tsr_file *f, int datasync)
{
	int rc;

	(void)datasync; /* the size is the data's too */
	rc = flush_file(f, 1);
	/* and the changes made before it durable in the MDS's journal (its
	 * name's too) */
	return rc < 0 ? rc : unsafe_wait(f->fs);
}

int
tsr_fs_fsyncdir(struct tsr_fs *fs, uint64_t ino)
{
	(void)ino; /* (every change made before it: names in it among them) */
	return unsafe_wait(fs);
}

int
tsr_fs_fstat(struct tsr_file *f, struct tsr_fs_stat *out)
{
	return tsr_fs_getattr(f->fs, &f->cr, f->ino, out); /* with our writes */
}

int
tsr_fs_close(struct tsr_file *f)
{
	int rc;

	if (f == NULL)
		return 0;
	rc = tsr_fs_flush(f);
	pthread_mutex_lock(&f->fs->lock);
	struct tsr_file *head = tsr_u64map_get(&f->fs->open, f->ino);
	if (head == f) {
		tsr_u64map_del(&f->fs->open, f->ino);
		if (f->next_open)
			tsr_u64map_put(&f->fs->open, f->ino, f->next_open);
	} else {
		for (struct tsr_file *p = head; p; p = p->next_open)
			if (p->next_open == f) {
				p->next_open = f->next_open;
				break;
			}
	}
	if ((f->flags & O_ACCMODE) != O_RDONLY) {
		f->cap->writers--;
		f->cap->data_gen++; /* (what was read ahead before its writes) */
	}
	pthread_mutex_lock(&f->lock);
	cap_unhold(f->cap, f->size);
	pthread_mutex_unlock(&f->lock);
	struct hidden *h = tsr_u64map_get(&f->fs->open, f->ino) == NULL
				   ? tsr_u64map_get(&f->fs->hidden, f->ino) : NULL;
	if (h && h->pending)
		h = NULL; /* its rename is under way: the renamer removes it */
	else if (h)
		tsr_u64map_del(&f->fs->hidden, f->ino);
	pthread_mutex_unlock(&f->fs->lock);
	ra_forget(f);
	if (h) { /* unlinked while open here: its hidden name goes now */
		int rc2 = remove_name(f->fs, &h->cr, TSR_MDS_OP_UNLINK, h->dir, h->name);
		if (rc == 0)
			rc = rc2;
		free(h);
	}
	pthread_mutex_destroy(&f->lock);
	free(f);
	return rc;
}

int
tsr_fs_keep_cache(struct tsr_file *f)
{
	struct tsr_fs *fs = f->fs;
	struct ccap *cc = f->cap;
	uint64_t lost;

	pthread_mutex_lock(&fs->lock);
	if (cc->kept && (cap_issued(cc) & TSR_CAP_CACHE)) {
		pthread_mutex_unlock(&fs->lock);
		return 1;
	}
	lost = cc->cache_lost;
	pthread_mutex_unlock(&fs->lock);
	/* the cache above drops the file now (not when the kernel takes
	 * this open's answer, which another open's may pass), then holds
	 * what it reads while CACHE stays */
	pthread_mutex_lock(&fs->inval_lock);
	if (fs->inval)
		fs->inval(fs->inval_arg, f->ino);
	pthread_mutex_unlock(&fs->inval_lock);
	pthread_mutex_lock(&fs->lock);
	if ((cap_issued(cc) & TSR_CAP_CACHE) && cc->cache_lost == lost)
		cc->kept = 1;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

void
tsr_fs_set_inval(struct tsr_fs *fs, void (*inval)(void *arg, uint64_t ino), void *arg)
{
	pthread_mutex_lock(&fs->inval_lock);
	fs->inval = inval;
	fs->inval_arg = arg;
	pthread_mutex_unlock(&fs->inval_lock);
}

/* ---- Paths ---- */

static int
walk(struct tsr_fs *fs, const struct tsr_fs_cred *cr, const char *path, int nofollow,
     int depth, uint64_t start, struct tsr_fs_stat *out)
{
	char name[TSR_FS_NAME_MAX + 1];
	struct tsr_fs_stat st;
	const char *p = path;
	int rc;

	if (*p == '/')
		start = TSR_FS_ROOT;
	if ((rc = tsr_fs_getattr(fs, cr, start, &st)) < 0)
		return rc;
	for (;;) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		size_t n = strcspn(p, "/");
		if (n > TSR_FS_NAME_MAX)
			return failf(-ENAMETOOLONG, "a name of %zu bytes in %s", n, path);
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		if (!S_ISDIR(st.mode))
			return failf(-ENOTDIR, "%s: a name under what is not a directory", path);
		uint64_t dir = st.ino;
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			uint64_t up = parent_of(fs, dir);
			if (dir != TSR_FS_ROOT && up == 0)
				return failf(-ENOENT, "%s: \"..\" of a directory not walked to",
					     path);
			if ((rc = tsr_fs_getattr(fs, cr, dir == TSR_FS_ROOT ? dir : up, &st)) < 0)
				return rc;
			continue;
		}
		if ((rc = tsr_fs_lookup(fs, cr, dir, name, &st)) < 0)
			return rc;
		while (*p == '/' && p[1] == '/')
			p++;
		int last = *p == '\0' || (*p == '/' && p[strspn(p, "/")] == '\0');
		if (S_ISLNK(st.mode) && !(last && nofollow)) {
			char target[TSR_FS_SYMLINK_MAX + 1];
			if (depth >= MAX_SYMLINKS)
				return failf(-ELOOP, "%s: too many symlinks", path);
			if ((rc = (int)tsr_fs_readlink(fs, cr, st.ino, target,
						       sizeof(target))) < 0)
				return rc;
			if ((rc = walk(fs, cr, target, 0, depth + 1, dir, &st)) < 0)
				return rc;
		}
	}
	if (out)
		*out = st;
	return 0;
}

int
tsr_fs_walk(struct tsr_fs *fs, const struct tsr_fs_cred *cr, const char *path, int nofollow,
	    struct tsr_fs_stat *out)
{
	return walk(fs, cr, path, nofollow, 0, TSR_FS_ROOT, out);
}

int
tsr_fs_walk_parent(struct tsr_fs *fs, const struct tsr_fs_cred *cr, const char *path,
		   uint64_t *parent, char *name)
{
	char buf[4096];
	struct tsr_fs_stat st;
	size_t n = strlen(path);
	char *slash;
	int rc;

	if (n == 0 || n >= sizeof(buf))
		return failf(-ENAMETOOLONG, "a path of %zu bytes", n);
	memcpy(buf, path, n + 1);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	slash = strrchr(buf, '/');
	const char *last = slash ? slash + 1 : buf;
	if (*last == '\0' || strcmp(last, ".") == 0 || strcmp(last, "..") == 0)
		return failf(-EINVAL, "%s names no entry", path);
	if (strlen(last) > TSR_FS_NAME_MAX)
		return failf(-ENAMETOOLONG, "a name of %zu bytes", strlen(last));
	strcpy(name, last);
	if (slash == NULL)
		return tsr_fs_walk(fs, cr, "/", 0, &st) < 0 ? -EIO : (*parent = st.ino, 0);
	if (slash == buf)
		slash[1] = '\0';
	else
		*slash = '\0';
	if ((rc = tsr_fs_walk(fs, cr, buf, 0, &st)) < 0)
		return rc;
	if (!S_ISDIR(st.mode))
		return failf(-ENOTDIR, "%s is not a directory", buf);
	*parent = st.ino;
	return 0;
}
