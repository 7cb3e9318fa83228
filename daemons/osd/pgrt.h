/* pgrt.h — what the parts of the PG runtime share (pgrt.c: the copies,
 * their events and sessions; ops.c: the clients' operations).  Internal
 * to tessera-osd. */
#ifndef TSR_OSD_PGRT_H
#define TSR_OSD_PGRT_H

#include "osd.h"
#include "mon/monmsg.h"
#include "msg/msgr.h"
#include "osd/objop.h"
#include "osd/pgsm.h"
#include "osd/pgstore.h"
#include "osd/scrub.h"

#include <pthread.h>

#define RING 1024                    /* epochs kept for PGs that start */
#define MAX_PARKED 1024u             /* messages a copy keeps for a newer map */
#define MAX_EARLY 4096u              /* messages kept for copies a newer map
					will make here */
#define MAX_EARLY_BYTES (64u << 20)  /* and their size */

struct ev;

/* The scrub of a PG this OSD is the primary of (scrub.c; the shard's,
 * but pub: under rt->lock). */
#define SCRUB_MAX_BAD 4              /* = TSR_PG_STAT_MAX_BAD */
#define SCRUB_BAD_NAME 96            /* = TSR_PG_STAT_BAD_NAME */
struct scrub_named;
struct pg_scrub {
	int loaded;                  /* the last result was read from the store */
	/* a run */
	int running;
	unsigned flags;              /* TSR_OBJOP_SCRUB_* */
	uint64_t token, interval;
	int32_t osds[TSR_OSDMAP_MAX_SIZE];
	uint32_t ncopies;
	uint8_t *cursor;             /* the range compared so far ends here */
	size_t cursor_len;
	uint8_t *upto;               /* this chunk's last name (the primary's) */
	size_t upto_len;
	struct tsr_scrub_map maps[TSR_OSDMAP_MAX_SIZE];
	uint8_t got[TSR_OSDMAP_MAX_SIZE], ended[TSR_OSDMAP_MAX_SIZE];
	unsigned retries;            /* of this chunk (objects unsettled) */
	unsigned write_waits;        /* for the writes under way to land */
	int retry_wait;              /* waiting to ask again */
	uint64_t asked_ns;           /* when this chunk's maps were asked */
	uint64_t started_s;
	uint64_t objects, errors, repaired;
	uint64_t busy;               /* differing, but being written: skipped */
	struct tsr_ev asked_head;    /* the PG's head when the chunk was asked */
	uint64_t retry_after_s;      /* a run failed: none on schedule before */
	unsigned nwaiters;
	struct scrub_named *named;   /* what the answer names */
	size_t nnamed;
	int more_named;
	char bad[SCRUB_MAX_BAD][SCRUB_BAD_NAME];
	uint32_t nbad;
	struct cop *waiters;         /* asked for this run */
	struct cop *next_waiters;    /* asked for what this run does not do */
	unsigned next_flags;
	int next_asked;
	/* what the last complete run found (kept on the meta object) */
	uint64_t last_scrub, last_deep;
	uint32_t last_errors, last_nbad;
	char last_bad[SCRUB_MAX_BAD][SCRUB_BAD_NAME];
	uint64_t base_s;             /* before the first scrub: when the copy
					came up here (the schedule counts from it) */
	/* for the scheduler (under rt->lock) */
	struct {
		int running;
		uint64_t poke_ns;    /* look again then (a retry, a timeout) */
		uint64_t due_s;      /* the next scheduled scrub, 0: none */
		int due_deep;
	} pub;
};

/* One PG's copy on this OSD. */
struct pgi {
	struct pgi *next;            /* the runtime's list */
	struct osd_pgrt *rt;
	struct tsr_pgid pgid;
	struct tsr_workq *q;         /* its shard */
	/* the shard's */
	struct tsr_pgsm *sm;
	struct tsr_pgstore ps;
	struct tsr_osdmap_epoch *ep; /* the epoch fed last */
	struct ev *parked, **parked_tail; /* messages from a newer map */
	unsigned nparked;
	const struct tsr_msg *payload; /* the message being handled */
	int gone;                    /* deleted: events are dropped */
	int deleting;                /* its machine deleted it (rt->lock): not
					found, fed no epoch; an epoch that
					puts the PG here makes a new copy */
	uint64_t posted;             /* the newest epoch posted (rt->lock) */
	uint64_t taken;              /* the newest epoch its worker took */
	int damaged;                 /* did not load: left as it is */
	uint64_t answer_interval;    /* (atomic) the interval its machine is
					in, 0 when deleted or damaged: a commit
					thread sends a member's answer only in
					it (carry_out publishes it) */
	uint64_t sis0;               /* its interval's first, as loaded (the
					loop's: replay feeds from it) */
	struct cop *ops;             /* client operations the machine holds
					(the shard's) */
	uint64_t next_handle;
	/* objects with writes submitted here and not yet committed: a
	 * write is built only on what committed (backend.h), so one waits
	 * for the writes before it (on the shard; commits come on the
	 * backend's threads) */
	pthread_mutex_t wr_mu;
	pthread_cond_t wr_cv;
	struct wr_obj { uint8_t *oid; size_t len; unsigned n; } *wr;
	size_t nwr;
	/* what `pg ls` shows (under rt->lock) */
	char state[24];
	char why[160];
	int clean;
	uint64_t fed, les, sis;
	struct tsr_ev head, committed;
	int primary;                 /* it reports the PG (below) */
	int commit_due;              /* tsr_pgsm_commit_due(): a tick is due */
	struct tsr_mon_pg_stat stat; /* what the monitors are told */
	struct pg_scrub scrub;
};

enum { EV_MAP, EV_MSG, EV_COMMIT, EV_OP, EV_SCRUB, EV_TICK, EV_RESV, EV_SEND };

struct ev {
	struct ev *next;
	int type;
	struct pgi *g;
	struct tsr_osdmap_epoch *ep; /* EV_MAP (a reference) */
	struct tsr_pgmsg m;          /* EV_MSG */
	struct tsr_msg *raw;         /* EV_MSG: its payload */
	uint64_t token;              /* EV_COMMIT */
	struct cop *op;              /* EV_OP */
	int rc;                      /* EV_COMMIT; EV_SCRUB: SCRUB_EV_* */
	struct paced *paced;         /* EV_SEND: a message the pace let go */
	int answer;                  /* EV_COMMIT: send m to osd `to` first */
	int32_t to;
};

struct peer_conn {
	int32_t osd;
	char addr[TSR_OSDMAP_NAME];
	uint64_t addr_epoch;         /* the epoch that gave addr */
	struct tsr_conn *conn;
};

/* Backfill reservations (reserve.c): one request, local (this OSD as a
 * primary; peer the member to fill) or remote (peer the primary). */
struct osd_resv {
	struct tsr_pgid pgid;
	uint64_t interval;
	int32_t peer;
	int held;
};
struct osd_reserver {
	struct osd_resv *v;          /* in the order asked */
	size_t n, cap;
	uint32_t held, most_held;
	uint64_t granted;
};

/* The recovery bandwidth (pace.c): pushes waiting, and how many messages
 * of one PG to one peer wait or are on their way (their order holds). */
struct paced;
struct pace_flow {
	struct tsr_pgid pgid;
	int32_t to;
	unsigned n;
};
struct osd_pace {
	uint64_t bps;                /* osd_recovery_max_bytes (0: no limit) */
	double tokens;
	uint64_t refill_ns;
	struct paced *q, **tail;
	size_t queued;
	struct pace_flow *flows;
	size_t nflows, capflows;
	uint64_t bytes, waits;       /* pushed (limit or not); pushes that waited */
};

struct osd_pgrt {
	int32_t whoami;
	struct osd_store *st;
	struct tsr_msgr *msgr;
	size_t nshards;
	struct tsr_workq **q;
	pthread_mutex_t lock;        /* the list, the peers, the asks, status */
	struct pgi *pgs;
	size_t npgs;
	struct peer_conn *peers;
	size_t npeers;
	/* asks for the monitors, taken by the loop */
	uint64_t want_up_thru;
	struct tsr_mon_pg_temp_req *temps;
	size_t ntemps;
	/* the loop's: recent epochs, and when each pool appeared */
	struct tsr_osdmap_epoch *ring[RING];
	uint64_t ring_first, ring_n;
	struct tsr_osdmap_epoch *latest; /* the newest (under lock: the
					 dispatch threads read it) */
	struct { int64_t pool; uint64_t since; } pools[TSR_OSDMAP_MAX_POOLS];
	size_t npools;
	struct tsr_pgsm_conf defaults;
	uint64_t sent, received, refused, persists;
	/* sends hold it read; quiesce takes it to stop them before the
	 * messenger goes */
	pthread_rwlock_t send_lock;
	int stopping;
	int closing;                 /* destroy began: commits are not posted */
	/* until the OSD has the service keys its peers check it with, what
	 * it sends waits (a session opened without them is refused, and
	 * stays so) */
	int ready;
	struct held *held, **held_tail;
	/* PG messages for a copy not here yet, from a newer map than the
	 * OSD's, which may make it (under lock): a stray's word to a new
	 * primary must not be lost */
	struct ev *early, **early_tail;
	size_t nearly, early_bytes;
	/* client operations from a newer map than the OSD's (under lock) */
	struct cop *opwait;
	size_t nopwait;
	size_t opwait_bytes;         /* their data */
	int ops_closed;              /* quiesce began: no more are taken */
	uint64_t max_data;           /* a message's data at most (ms_max_data) */
	uint32_t max_front;          /* and its front (ms_max_front) */
	/* the store's usage (under lock; measured on shard 0) */
	struct tsr_statfs usage;
	int usage_ok, usage_asked;
	double full_ratio;
	int full;                    /* past full_ratio: writes get -ENOSPC */
	/* the store failed a change: the OSD stops (fail_stop, once) */
	void (*fail_stop)(void *arg);
	void *fail_arg;
	int failed;
	uint64_t ops_in, ops_done;
	/* clients' operations and PG messages the I/O threads ran in place
	 * (atomic) */
	uint64_t ops_in_place, msgs_in_place;
	/* sends of in-place events that found no room, left to the shard */
	uint64_t sends_deferred;
	/* scrub (scrub.c): the configuration, and the runs (under lock) */
	uint64_t scrub_interval_s, deep_interval_s;
	uint32_t scrub_chunk, max_scrubs;
	int scrub_auto_repair;
	uint32_t scrubs;             /* runs under way here */
	uint64_t scrub_tokens;
	uint64_t scrub_tick_ns;      /* the scheduler's last look */
	uint64_t commit_tick_ns;     /* osd_pgrt_tick's last round */
	/* backfill reservations (reserve.c; under lock) */
	uint32_t max_backfills;
	struct osd_reserver resv_local, resv_remote;
	struct osd_pace pace;        /* (pace.c; under lock) */
	int stats_changed;           /* a primary's PG changed state since the
					last osd_pgrt_stats_changed() */
};

struct held {
	struct held *next;
	int32_t to;
	struct tsr_osdmap_epoch *ep; /* the address's */
	struct tsr_pgmsg m;
	struct tsr_rbuf *pl;
};


/* One client operation (ops.c). */
struct cop {
	struct cop *next;
	struct osd_pgrt *rt;
	struct tsr_conn *conn;       /* the client's session (a reference;
					NULL once the runtime quiesced) */
	struct tsr_msg *msg;         /* the request: op borrows from it */
	struct tsr_objop op;
	struct tsr_pgid pgid;
	uint64_t handle;             /* the machine's name for it */
	/* a write, once built (EXEC) */
	struct tsr_ev ev;
	uint8_t logop;               /* TSR_PGLOG_MODIFY or _DELETE */
	struct tsr_txn_op *tops;
	size_t ntops, captops;
	struct tsr_txn_op scratch;   /* what an op goes to without memory */
	int nomem;
	uint8_t **bufs;              /* what tops point into that is ours */
	size_t nbufs;
	struct tsr_rbuf *repop;      /* tops encoded, for the replicas */
};

static inline struct tsr_workq *
osd_shard_of(const struct osd_pgrt *rt, struct tsr_pgid pgid)
{
	return rt->q[(uint64_t)(pgid.pool * 31 + pgid.pg) % rt->nshards];
}


/* Run event e on its copy's shard (freed if the runtime is stopping). */
void osd_pg_post(struct pgi *g, struct ev *e);
/* Run event e (e->g set) on the calling thread, whose tsr_workq_enter
 * of e->g's shard said yes, then leave the shard. */
void osd_pg_run_entered(struct ev *e);
/* The work queue item that runs one event (e->g set). */
void osd_pg_run(void *arg);
/* The copy of pgid here, or NULL (under rt->lock). */
struct pgi *osd_pgi_find(struct osd_pgrt *rt, struct tsr_pgid pgid);

/* Send m to osd.to (under g's epoch). */
void osd_pg_send(struct pgi *g, int32_t to, const struct tsr_pgmsg *m);
/* Submit t and wait for its commit (the shard's thread). */
int osd_pg_submit_wait(struct osd_pgrt *rt, const struct tsr_txn *t);

/* ---- Scrub (scrub.c), on the copy's shard unless said ---- */
enum { SCRUB_EV_SCHED = 1, SCRUB_EV_TICK = 2 };
/* a client's PG_SCRUB (taken: answered when the run is over) */
void osd_scrub_request(struct pgi *g, struct cop *op);
/* EV_SCRUB */
void osd_scrub_event(struct pgi *g, int kind);
/* SCRUB or SCRUB_MAP from a peer: 0, or -EAGAIN when it comes from a
 * newer map than the copy's (hand it in again then) */
int osd_scrub_msg(struct pgi *g, struct tsr_pgmsg *m);
/* after any event: a run whose interval ended stops */
void osd_scrub_check(struct pgi *g);
/* the scrub's part of what the monitors are told */
void osd_scrub_stat(struct pgi *g, struct tsr_mon_pg_stat *st);
/* the copy goes (or the runtime): waiters answered, memory freed */
void osd_scrub_drop(struct pgi *g);
/* (the loop) the schedule: runs that are due, retries and timeouts */
void osd_scrub_tick(struct osd_pgrt *rt);

/* ---- Backfill reservations (reserve.c), on the copy's shard unless said ---- */
/* the machine's RESERVE or RELEASE */
void osd_resv_action(struct pgi *g, const struct tsr_pgsm_action *x);
/* EV_RESV: a slot granted (rc 1: remote, m.from the primary; 0: local,
 * m.from the member), m.interval the request's */
void osd_resv_event(struct pgi *g, const struct ev *e);
/* BACKFILL_RESERVE, _GRANT or _RELEASE from a peer */
int osd_resv_msg(struct pgi *g, const struct tsr_pgmsg *m);
/* (under rt->lock) the copy moved on or went: its slots go */
void osd_resv_sweep(struct pgi *g);
/* (under rt->lock) JSON of both reservers */
void osd_resv_status(struct osd_pgrt *rt, struct tsr_sbuf *out);
void osd_resv_free(struct osd_pgrt *rt);

/* ---- Recovery bandwidth (pace.c) ---- */
/* (any thread) m to osd.to waits its turn: 0 (taken, with pl), or
 * -EAGAIN: send it now */
int osd_pace(struct osd_pgrt *rt, const struct tsr_osdmap_epoch *ep, int32_t to,
	     const struct tsr_pgmsg *m, struct tsr_rbuf *pl);
/* EV_SEND on the shard: send it; or drop it (the copy went) */
void osd_pace_send(struct pgi *g, struct ev *e);
void osd_pace_drop(struct osd_pgrt *rt, struct ev *e);
/* (under rt->lock) JSON */
void osd_pace_status(struct osd_pgrt *rt, struct tsr_sbuf *out);
void osd_pace_free(struct osd_pgrt *rt);
/* Send m now, past the pace (its caller's turn came) */
void osd_pg_send_now(struct osd_pgrt *rt, const struct tsr_osdmap_epoch *ep, int32_t to,
		     const struct tsr_pgmsg *m, struct tsr_rbuf *pl);

/* ---- Client operations (ops.c) ---- */
int osd_ops_register(struct osd_pgrt *rt);
/* (the loop) a new epoch: operations that waited for it go on */
void osd_ops_map(struct osd_pgrt *rt, uint64_t epoch);
/* (a shard) hand op to its copy's machine (EV_OP) */
void osd_op_start(struct pgi *g, struct cop *op);
/* (a shard) the machine's EXEC and REPLY; the object change of PERSIST
 * obj OP (the ops, and the object's name and new version unless it goes);
 * the payload of a REPOP (a reference, or NULL) */
void osd_op_exec(struct pgi *g, const struct tsr_pgsm_action *x);
void osd_op_reply(struct pgi *g, const struct tsr_pgsm_action *x);
int osd_op_persist(struct pgi *g, const struct tsr_pgsm_action *x,
		   const struct tsr_txn_op **ops, size_t *nops, const void **oid,
		   size_t *oid_len, const struct tsr_ev **ev);
struct tsr_rbuf *osd_op_repop_payload(struct pgi *g, uint64_t handle);
/* (a shard) a REPOP's transaction from the primary, checked: it may
 * change its entry's object only, in this copy's collection.  *ops is
 * malloc'd (the caller frees it) and points into raw. */
int osd_op_repop_ops(struct pgi *g, const struct tsr_pgmsg *m, const struct tsr_msg *raw,
		     struct tsr_txn_op **ops, size_t *nops);
/* A write to oid was submitted here / committed. */
void osd_op_wr_add(struct pgi *g, const void *oid, size_t len);
void osd_op_wr_done(struct pgi *g, const void *oid, size_t len);
/* Answer op with result (its map epoch: the OSD's) and free it. */
void osd_op_abort(struct cop *op, int result, uint64_t epoch);
/* Answer op (one sub-operation) with result and out (len bytes, copied)
 * as its output, and free it. */
void osd_op_answer(struct cop *op, int result, uint64_t epoch, const void *out, size_t len);
/* (a shard) free the copy's operations, unanswered (it is going). */
void osd_ops_drop(struct pgi *g);
/* (quiesce) give back every session the operations hold. */
void osd_ops_quiesce(struct osd_pgrt *rt);

#endif
