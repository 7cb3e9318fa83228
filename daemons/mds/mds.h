/* mds.h — tessera-mds: the metadata server's state, shared by its files.
 *
 *   mds.c      the runtime: messenger, monitors, beacon, rank, sessions,
 *              requests in and replies out
 *   cache.c    the namespace cache: directories and inode objects loaded
 *              from the metadata pool, events applied to them, written back
 *   journal.c  the rank's journal: taking it over (fencing), replay,
 *              appends, trimming
 *   ops.c      the requests: checks, then an event
 *   done.c     the requests done per client, so that one sent again is
 *              answered, not done twice
 *   locks.c    POSIX and flock locks, per (client, owner)
 *   caps.c     capabilities: granted at open, revoked on conflict, taken
 *              by eviction (with an OSD blocklist)
 *   reconnect.c  clients re-assert capabilities and locks with a new
 *              holder of the rank
 *
 * Threads.  The namespace lives on one thread, the MDS thread (a work
 * queue): requests, replay, write-back and the journal's bookkeeping all
 * run there, so they need no locks.  Messages arrive on the messenger's
 * threads and are posted to it; object operations complete on the object
 * client's threads and are posted back.  Loading a directory blocks the
 * MDS thread (a synchronous read): the cache makes that rare.
 *
 * Durability.  A request's change is applied to the cache at once and its
 * event appended to the journal.  Its reply goes at once, EARLY (the
 * client keeps the request, to replay it to a successor), and SAFE
 * follows once the journal holds the event.  A reply that saw a state
 * another client made waits until the journal holds that state
 * (mds_seen_before, mds_reply_after): no client acts on what a crash
 * could take back, except its own changes, which it replays.  Write-back
 * writes a directory only in a state whose every event is durable.
 */
#ifndef TSR_DAEMONS_MDS_H
#define TSR_DAEMONS_MDS_H

#include "mds/fsmeta.h"
#include "mds/mdsmsg.h"
#include "util/u64map.h"

#include <stdatomic.h>
#include <pthread.h>
#include <stdint.h>

struct tsr_client;
struct tsr_conn;
struct tsr_daemon;
struct tsr_loop;
struct tsr_mapsub;
struct tsr_mds_beacon;
struct tsr_monc;
struct tsr_msgr;
struct tsr_workq;

/* A dentry of a cached directory. */
struct mentry {
	char *name;
	uint64_t cookie;             /* readdir order and offsets: a hash of the
					name, >= 3 (FUSE keeps 0..2) */
	struct tsr_dentry de;
	int dirty;                   /* to write back */
	struct mdir *dir;
};

/* A cached directory (fragment 0: the whole of it). */
struct mdir {
	uint64_t ino;
	uint64_t parent;             /* 0 for the root */
	char *name;                  /* in parent (NULL for the root) */
	struct mentry **ents;        /* sorted by (cookie, name) */
	size_t n, cap;
	char **removed;              /* names to remove at write-back */
	size_t nremoved;
	uint64_t ver;                /* the last event applied */
	uint64_t dirty_since;        /* the first event not written back; 0: clean */
	uint64_t flushing;           /* the version being written; 0: none */
	uint64_t taken;              /* the last event whose updates it took
					(replay: the later updates of that event
					apply too, though ver is its seq now) */
	int exists;                  /* its object has been written */
	int deleted;                 /* removed (DIR_RM): its object goes at
					write-back, then the entry */
	int bt_dirty;                /* parent or name changed */
	uint64_t used;               /* when last asked for (m->clock) */
	int orphan;                  /* replay: its parent is gone (for now) */
};

/* An inode kept in an object of its own (i.<ino>). */
struct mobj {
	struct tsr_inode in;
	uint64_t ver, dirty_since, flushing, taken;
	int deleted;
	int exists;                  /* its object has been written (or read) */
};

/* A reply waiting for the journal. */
struct pending_reply {
	struct pending_reply *next;
	uint64_t seq;                /* sent once the journal holds it */
	int ordered;                 /* after what was queued to conn before
					(all but SAFE notices) */
	struct tsr_conn *conn;       /* a reference */
	struct tsr_msg *msg;
};

struct mds_session {
	uint64_t client;
	struct tsr_conn *conn;       /* a reference */
	uint64_t last_seen_ns;
	uint64_t listed_gen;         /* the first write of mds<R>.sessions
					that lists it (0: none yet) */
};

struct mds {
	struct tsr_daemon *d;
	struct tsr_loop *loop;       /* the daemon's: monitors, beacon */
	struct tsr_msgr *msgr;       /* clients (a request may run on its I/O
					thread and wait there for the OSDs) */
	struct tsr_msgr *mon_msgr;   /* the monitors: beacons, the lease and
					the maps never wait behind a request */
	struct tsr_monc *monc;
	struct tsr_mapsub *sub;
	struct tsr_mds_beacon *beacon;
	struct tsr_client *oc;       /* the object client: metadata pool */
	struct tsr_workq *wq;        /* the MDS thread (NULL once stopping:
					post_lock) */
	pthread_mutex_t post_lock;
	_Atomic int closing;         /* the daemon is stopping */
	char name[64];

	/* configuration */
	int64_t meta_pool, data_pool;
	char meta_pool_name[64], data_pool_name[64];
	uint64_t segment_bytes;
	uint32_t writeback_ms;
	uint64_t grace_ns;           /* mon_mds_beacon_grace */

	/* the rank (MDS thread) */
	int32_t rank;                /* -1: none */
	uint64_t fence;              /* the MDS map epoch we took it in */
	int active;                  /* serving */
	int replaying;
	int stopping;

	/* the lease: we answer only while the monitors cannot yet have
	 * failed us (mds.c, lease_ok) — written by the loop, read anywhere */
	pthread_mutex_t lease_lock;
	uint64_t lease_until_ns;

	/* the cache (MDS thread) */
	struct tsr_u64map dirs;      /* ino -> struct mdir */
	struct tsr_u64map objs;      /* ino -> struct mobj */
	struct tsr_u64map where;     /* ino -> struct mentry (primary inodes) */
	struct tsr_u64map done;      /* client -> its requests done (done.c) */
	struct tsr_u64map locks;     /* ino -> its locks (locks.c) */
	struct tsr_u64map caps;      /* ino -> its holders (caps.c) */
	struct tsr_u64map dir_busy;  /* dir -> no DCACHE grant before (mono ns):
					a change waits for its revokes */
	struct parked *parked;       /* requests waiting for revokes */
	uint64_t osd_barrier;        /* the OSD map epoch of the last eviction */
	uint64_t *evicting;          /* clients whose blocklist is on its way */
	size_t nevicting;
	struct evict *evict_out;     /* blocklists for the loop to ask for
					(post_lock) */
	struct { uint64_t client, until_ns; } *evicted;  /* refused */
	size_t nevicted;
	uint64_t cap_seq;            /* numbers every grant and revoke */
	int wake_pending;            /* parked requests to run again */
	uint64_t revoke_timeout_ns;  /* mds_cap_revoke_timeout */
	uint64_t blocklist_s;        /* mds_blocklist_duration */
	uint64_t n_evictions;
	/* reconnect (reconnect.c) */
	uint64_t reconnect_timeout_ns;  /* mds_reconnect_timeout */
	uint64_t reconnect_until_ns;  /* the window's end (0: none) */
	uint64_t *expect;            /* clients of the last holder not back yet */
	size_t nexpect;
	int window_closed;           /* the window is over: expect lists those
					being evicted, none granted before */
	uint64_t window_retry_ns;    /* their blocklists asked again from then */
	int late_claims;             /* a late RECONNECT claimed capabilities */
	int sessions_dirty;          /* mds<R>.sessions to write */
	uint64_t sessions_gen;       /* writes of it begun */
	_Atomic uint64_t sessions_done_gen;  /* the latest one written (a
					library thread sets it) */
	atomic_int sessions_failed;  /* a write of it failed (library thread) */
	uint64_t applied;            /* the last event applied */
	uint64_t clock;              /* ticks of use, for eviction */
	uint64_t trim_clock;         /* the clock at the last eviction pass */
	uint64_t cache_max;          /* entries the cache holds at most (about) */
	uint64_t session_timeout_ns;
	uint64_t n_evicted;

	/* the journal (MDS thread) */
	uint64_t first_seg;          /* the oldest live segment */
	uint64_t seg;                /* the segment being written */
	uint64_t seg_off;            /* its length */
	uint64_t *seg_last;          /* per closed segment from first_seg: its
					last seq (trim) */
	size_t nseg_last;
	uint8_t *jbuf;               /* records not yet sent */
	size_t jlen, jcap;
	struct jrec { size_t end; uint64_t seq; } *jrec;   /* each record's end
					in jbuf, and its event */
	size_t njrec, jreccap;
	int jinflight;               /* an append is out */
	struct append *retry;        /* a failed append, to send again as it was */
	_Atomic int retry_armed;     /* a retry's timer is on the loop */
	uint64_t committed;          /* the journal holds every event up to it */
	/* the latest event's maker (a client; 0: none), that event, and the
	 * latest event of any other (mds_seen_before) */
	uint64_t last_author, author_seq, others_seq;
	int trimming;
	int flushes;                 /* write-backs out */

	/* inode numbers */
	uint64_t next_ino;
	uint64_t promised;           /* mds<R>.inos says inos below it are used */
	uint64_t ino_floor;          /* inos below it are the MDSs' before us
					(a replayed create may name one) */

	struct pending_reply *replies, **replies_tail;
	struct purge *purges;        /* data to remove once durable (ops.c) */
	struct purge **purges_tail;  /* where the next goes */
	struct tsr_u64map purge_of;  /* ino -> its struct purge */
	atomic_uint purge_inflight;  /* its object removals under way */
	size_t npurges;              /* files in purges */
	uint64_t last_request_ns;    /* when a client's request came (mono) */
	struct mds_session *sess;
	size_t nsess;

	uint64_t wb_timer;           /* on the loop */
	/* the MDSs' service keys, with which clients are checked (on the loop) */
	uint64_t keys_timer, keys_inflight;
	int have_keys;
	/* counters, for `status` and tests */
	uint64_t n_requests, n_events, n_appends, n_flushes, n_trims, n_loads;
	uint64_t n_early, n_replays;
};

/* mds.c */
int mds_lease_ok(struct mds *m);
/* Queue msg to conn once the journal holds seq (ownership of msg passes;
 * conn gets a reference). */
void mds_reply_after(struct mds *m, struct tsr_conn *conn, struct tsr_msg *msg,
		     uint64_t seq);
/* The same for a SAFE notice, which keeps no order with the rest. */
void mds_safe_after(struct mds *m, struct tsr_conn *conn, struct tsr_msg *msg,
		    uint64_t seq);
void mds_replies_release(struct mds *m);
/* A request or renewal came on conn: its session is alive. */
void mds_session_touch(struct mds *m, struct tsr_conn *conn);
/* The session of client (a peer id), or NULL. */
struct tsr_conn *mds_session_conn(struct mds *m, uint64_t client);
/* End client's session (evicted): its connection closes. */
void mds_session_end(struct mds *m, uint64_t client);
/* The rank is lost (fenced by a successor, or an error that leaves the
 * journal in doubt): stop serving, and end the process so a supervisor
 * starts it again as a standby. */
void mds_lost_rank(struct mds *m, const char *why);

/* cache.c */
int mds_cache_init(struct mds *m);
void mds_cache_free(struct mds *m);
/* The directory ino, loaded (and its ancestors) when absent: 0 or an
 * error (-ENOENT: no such directory). */
int mds_dir_get(struct mds *m, uint64_t ino, struct mdir **out);
struct mentry *mds_dir_find(struct mdir *d, const char *name);
/* The inode numbered ino: where it is kept (an entry, or an object).
 * hint: a directory to load when it is not cached (0: none). */
int mds_inode_find(struct mds *m, uint64_t ino, uint64_t hint, struct tsr_inode **out);
/* The directory dir's own inode (in its parent's entry, or the root's
 * object). */
struct tsr_inode *mds_dir_inode(struct mds *m, struct mdir *d);
/* Apply ev to the cache; replay: only to what has not seen it (ver). */
int mds_apply(struct mds *m, const struct tsr_fs_event *ev, int replay, char *err,
	      size_t errlen);
/* Write back what the journal holds; called by the timer. */
void mds_writeback(struct mds *m);
/* Replay is over: what is still an orphan goes, the index is rebuilt. */
void mds_replay_done(struct mds *m);
/* Drop clean directories, least recently used first, while the cache
 * holds more than cache_max entries (between requests: no handler holds
 * a directory then). */
void mds_cache_trim(struct mds *m);
/* The oldest event not yet written back (0: all of them are). */
uint64_t mds_dirty_floor(struct mds *m);
/* A new file system: the root's objects (rank 0, when no journal exists). */
int mds_mkfs(struct mds *m, char *err, size_t errlen);

/* journal.c */
/* Take over rank's journal: fence it, replay it, open a new segment. */
int mds_journal_open(struct mds *m, char *err, size_t errlen);
/* Append ev (its seq set here: applied + 1) after applying it to the
 * cache: 0, or an error (nothing applied). */
int mds_commit(struct mds *m, struct tsr_fs_event *ev, char *err, size_t errlen);
/* The latest event an answer to client rests on that the client could
 * not make again itself: the latest made by another (or by none), or by
 * the MDS.  What client made since, it replays to a successor if the
 * journal lost it. */
uint64_t mds_seen_before(const struct mds *m, uint64_t client);
/* Trim segments whose every event is written back. */
void mds_journal_trim(struct mds *m);
/* Promise inos up to at least want (a write of mds<R>.inos). */
int mds_inos_reserve(struct mds *m, uint64_t want);
void mds_journal_free(struct mds *m);

/* done.c */
void mds_done_add(struct mds *m, uint64_t client, uint64_t tid, uint64_t ino);
/* Was (client, tid) done?  1 and *ino (what it made or changed), or 0. */
int mds_done_find(struct mds *m, uint64_t client, uint64_t tid, uint64_t *ino);
/* The client waits for nothing older than oldest: forget the rest. */
void mds_done_prune(struct mds *m, uint64_t client, uint64_t oldest);
void mds_done_free(struct mds *m);

/* locks.c */
/* A lock held by another than (client, lk->owner) that lk cannot be
 * taken beside: 1 and *lk set to it, or 0 and lk->type F_UNLCK. */
int mds_lock_get(struct mds *m, uint64_t ino, uint64_t client, struct tsr_mds_lock *lk);
/* Take, change or release (F_UNLCK) a lock: 0, or -EAGAIN on a conflict. */
int mds_lock_set(struct mds *m, uint64_t ino, uint64_t client, const struct tsr_mds_lock *lk);
/* Every lock of client (0: of everyone) goes. */
void mds_locks_drop(struct mds *m, uint64_t client);

/* caps.c */
/* OPEN by client: 1 when it must wait for revokes (park it), else 0 with
 * the grant in rep (caps, cap_seq, osd_barrier). */
int mds_caps_open(struct mds *m, uint64_t client, uint64_t ino, uint32_t flags,
		  struct tsr_mds_reply *rep);
/* Take bits (CACHE, BUF) from every holder of ino but client: 1 while
 * some revoke is out (park the request). */
int mds_caps_recall(struct mds *m, uint64_t client, uint64_t ino, uint32_t bits);
/* Does any client hold ino (its data stays while one does)? */
int mds_caps_held(struct mds *m, uint64_t ino);
void mds_caps_ack(struct mds *m, uint64_t client, uint64_t ino, uint64_t seq,
		  uint32_t kept);
/* client gives ino back; size: the file's size as it knows it. */
void mds_caps_release(struct mds *m, uint64_t client, uint64_t ino, uint64_t size,
		      uint64_t seq);
/* DCACHE on dir to client: its seq, or 0 (not now). */
uint64_t mds_caps_grant_dir(struct mds *m, uint64_t client, uint64_t dir);
/* client changes dir's entries (or the attributes of an inode in it):
 * others' DCACHE on it goes; 1 while a revoke is out (park). */
int mds_caps_dir_change(struct mds *m, uint64_t client, uint64_t dir);
void mds_caps_drop_client(struct mds *m, uint64_t client);
/* ino is gone (a directory removed): its holders go. */
void mds_caps_drop_ino(struct mds *m, uint64_t ino);
/* Evict clients whose revokes are late (the writeback timer). */
void mds_caps_tick(struct mds *m);
void mds_evict(struct mds *m, uint64_t client, const char *why);
/* On the loop: ask the monitors for the blocklists evict() queued. */
void mds_evictions_send(struct mds *m);
void mds_evicted_add(struct mds *m, uint64_t client);
/* Was client evicted (and is it still blocklisted)? */
int mds_is_evicted(struct mds *m, uint64_t client);
/* Evicted here, or blocklisted in the OSD map (by an MDS before this
 * one): its sessions and requests are refused. */
int mds_refused(struct mds *m, uint64_t client);
/* Blocklisted in the OSD map the object client holds (*epoch: that
 * map's, a barrier behind the blocklist). */
int mds_map_blocked(struct mds *m, uint64_t client, uint64_t *epoch);
void mds_park(struct mds *m, struct tsr_conn *conn, const struct tsr_mds_request *r);
/* Run the parked requests again (a revoke was answered, a holder went). */
void mds_parked_wake(struct mds *m);
void mds_caps_free(struct mds *m);
/* A client re-asserts what it held (RECONNECT). */
void mds_caps_reassert(struct mds *m, uint64_t client, uint64_t ino, uint32_t wanted,
		       uint32_t issued);
/* Revoke from every holder what it may not hold beside the others. */
void mds_caps_settle_all(struct mds *m);

/* reconnect.c */
/* Read mds<R>.sessions: the clients to wait for (before serving). */
int mds_sessions_read(struct mds *m);
/* Is conn's client in mds<R>.sessions as written (a successor waits
 * for it to reconnect)?  Only such a client is answered early. */
int mds_session_listed(struct mds *m, struct tsr_conn *conn);
/* Write mds<R>.sessions if the sessions changed (the tick). */
void mds_sessions_write(struct mds *m);
/* The rank is active: the window for reconnects opens. */
void mds_reconnect_begin(struct mds *m);
/* At a clean stop (the MDS thread done): mds<R>.sessions as it stands
 * now, written and waited for, while the lease says the rank is ours. */
void mds_sessions_write_now(struct mds *m);
/* At a clean stop (the MDS thread done): the purges that may go, sent
 * and waited for, within a bound. */
void mds_purges_drain(struct mds *m);
/* At the tick: the blocklists of those the closed window left, asked for
 * (again, a second after one failed). */
void mds_reconnect_tick(struct mds *m);
/* 1 while clients are still expected within the window. */
int mds_reconnecting(struct mds *m);
/* A RECONNECT of client's; last: its last (it is back). */
int mds_reconnect(struct mds *m, uint64_t client, const void *value, size_t len, int last,
		  char *why, size_t whylen);
size_t mds_parked_count(struct mds *m);
/* Does client hold capabilities on any inode (DCACHE aside)? */
int mds_caps_client_holds(struct mds *m, uint64_t client);
/* Does a client other than client have ino open for writing? */
int mds_caps_writer_other(struct mds *m, uint64_t client, uint64_t ino);

/* ops.c */
/* A file being purged may be larger than the MDS knew: size, from a
 * holder that gave it back. */
void mds_purge_size(struct mds *m, uint64_t ino, uint64_t size);
/* Purge the data of files unlinked by events now durable (drop: forget
 * them, stopping). */
void mds_purges_run(struct mds *m, int drop);
void mds_handle_request(struct mds *m, struct tsr_conn *conn,
			const struct tsr_mds_request *r);

/* Run on the MDS thread from another thread: 0 or -ESHUTDOWN. */
int mds_post(struct mds *m, void (*fn)(void *arg), void *arg);

#endif
