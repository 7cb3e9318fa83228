/* mon.h — the parts of tessera-mon (mon.c says how the monitor works):
 * the monitor's state, shared by mon.c (queue, commands, Raft, life),
 * subs.c (map subscriptions), propose.c (decisions and proposals),
 * watch.c (what the leader watches: OSD and MDS beacons, failures, ranks),
 * pgstats.c (PG reports) and placemove.c (what a new placement plugin
 * would move).
 * Everything here runs on the daemon's loop thread, under mon->lock, but
 * for the queue (qlock), which the messenger's threads fill. */
#ifndef TSR_MON_DAEMON_H
#define TSR_MON_DAEMON_H
#include "daemon/daemon.h"
#include "log/log.h"
#include "mon/members.h"
#include "mon/monmsg.h"
#include "msg/msgr.h"
#include "plugin/host.h"
#include "plugin/registry.h"
#include "raft/raft.h"
#include "raft/raftstore.h"
#include "state.h"
#include "util/sbuf.h"

#include <pthread.h>
#include <stdint.h>

#define LOGE(...) TSR_LOG_ERR(MON, __VA_ARGS__)
#define LOGW(...) TSR_LOG_WARN(MON, __VA_ARGS__)
#define LOGI(...) TSR_LOG_INFO(MON, __VA_ARGS__)
#define LOGD(...) TSR_LOG_DEBUG(MON, __VA_ARGS__)

#define PROPOSE_TIMEOUT_NS (5ull * 1000000000u) /* a change not committed by then fails */
struct mon_wake;

/* items waiting for the daemon's loop; above, new ones are refused (a
 * beacon every interval from each of 10,000 OSDs comes in bursts) */
#define QUEUE_MAX 65536

/* Something an I/O thread queued for the daemon's loop. */
struct item {
	struct item *next;
	int kind;                    /* TSR_MSG_MON_RAFT, _CMD, _SUB; -1: a fault */
	struct tsr_conn *conn;       /* held (commands) */
	struct tsr_msg *msg;
};

/* What the leader knows of an OSD beyond the map (soft state: a new
 * leader starts afresh, giving every OSD a full grace). */
struct osd_watch {
	uint64_t last_beacon;        /* mono ns; 0: none since we lead */
	uint64_t down_seen;          /* when we first saw it down */
	uint64_t proposed_at;        /* our last down/out proposal for it */
	uint64_t last_flap;          /* when we last marked it down */
	uint64_t up_from;            /* the boot epoch the above belong to */
	unsigned flaps;              /* recent downs: each doubles the grace */
	char version[TSR_MONMSG_VERSION_MAX]; /* its software, "" unknown */
	struct { int32_t who; uint64_t at; } rep[8]; /* peers reporting it silent */
};

/* What the leader knows of an MDS beyond the map (soft state, like
 * osd_watch): by name, its incarnation's last beacon. */
struct mds_watch {
	char name[TSR_MDSMAP_NAME];
	uint64_t gid;
	uint64_t last_beacon;        /* mono ns */
	uint64_t proposed_at;        /* our last proposal about it */
	char version[TSR_MONMSG_VERSION_MAX]; /* its software, "" unknown */
};

/* A session subscribed to map epochs (MON_SUB with TSR_MON_SUB_KEEP). */
struct sub {
	struct sub *next;
	struct tsr_conn *conn;       /* held */
	uint32_t want;
	uint64_t have[TSR_MON_NMAPS];/* what it was last sent */
};

#define MAX_SUBS 4096
#define MAX_INC_BYTES (8u << 20) /* incrementals in one answer, at most */

/* A change proposed and not yet answered, or a read waiting for a lease. */
struct waiter {
	struct waiter *next;
	struct tsr_conn *conn;
	struct tsr_mon_cmd cmd;
	uint64_t index, term;        /* changes: where it went in the log */
	uint64_t deadline;
	struct tsr_mon_osd_alive *alive; /* an `osd alive`: what was asked */
	int batched;                 /* 1 + its MON_BATCH_* kind: in a batch
	                              * (`osd boots`, `osd alives`), answered
	                              * from the map the batch made */
};

/* What OSDs ask of the map in storms (a cluster starting, a map change
 * that every primary answers): the leader proposes one change for all
 * that came meanwhile, and answers each from the map it made. */
enum { MON_BATCH_BOOT, MON_BATCH_ALIVE, MON_BATCH_KINDS };
struct mon_batch {
	struct waiter *head, **tail;
	size_t n;
	uint64_t index;              /* the last batch in the log, not yet
	                              * applied */
};

/* What changes cost on this monitor (admin socket `status`, "perf"). */
#define MON_PERF_RING 256
struct mon_perf {
	uint64_t decided, decide_ns;     /* the leader's decisions */
	uint64_t committed, commit_ns;   /* its proposals: proposed to applied */
	uint64_t applied, apply_ns;      /* log entries applied */
	uint64_t prop_index[MON_PERF_RING], prop_ns[MON_PERF_RING];
};

struct mon {
	struct tsr_daemon *d;
	struct mon_perf perf;
	struct tsr_mon_members mem;
	const struct tsr_mon_member *self;
	char data[512];
	struct tsr_kv *kv;
	struct tsr_raftstore rs;
	struct tsr_raft *raft;
	int rejoining;               /* as last logged (tsr_raft_rejoining) */
	/* Raft messages refused, logged at a rate per sender (by member id;
	 * the last: senders that are not members, or not known) */
	struct tsr_log_rate raft_refused[TSR_MON_MAX + 1];
	struct tsr_msgr *msgr;
	struct tsr_conn *peer[TSR_MON_MAX];  /* ours, to each other monitor */
	uint64_t tick_ns, lease_ns;
	unsigned e_ticks;

	/* The queue: the messenger's threads append, the daemon's loop
	 * takes.  The first item of an empty queue posts a drain to the
	 * loop (wake, see mon.c); the tick is a timer on the same loop. */
	struct tsr_loop *loop;
	pthread_mutex_t qlock;       /* the queue and wake->posted */
	struct item *head, **tail;
	size_t queued;
	uint64_t refused;            /* items refused on a full queue */
	struct mon_wake *wake;
	uint64_t tick_timer;         /* the loop's timer id (0: none) */
	uint64_t next_tick;          /* mono ns */

	pthread_mutex_t lock;        /* everything below, and raft (status reads) */
	struct mon_state st;
	/* The leader's projected state: st with every change it proposed
	 * since applied, what the next change is decided against (state.h).
	 * Made once the leader has applied its whole log in this term. */
	struct mon_state proj;
	int proj_valid;
	uint64_t proj_term;
	/* each member's features and version, from its Raft messages */
	struct tsr_mon_peer_info peers[TSR_MON_MAX];
	struct mon_pgstats *pgstats; /* where the PGs stand (pgstats.c: the
	                              * leader's, from the primaries) */
	struct waiter *changes, *reads;
	struct waiter *held;         /* changes waiting for the projected state */
	struct mon_batch batch[MON_BATCH_KINDS]; /* OSDs' asks for the next
	                              * batch of each kind */
	struct sub *subs;
	size_t nsubs;
	uint64_t last_leader_ns;     /* when we last had a leader (or were one) */
	uint64_t snap_every, snap_index; /* compaction: every N entries; the last */
	uint64_t hist_term;          /* the last applied entry's term */
	uint64_t hist_index;         /* the last log entry applied, and a CRC32C */
	uint32_t hist_crc;           /* of every entry applied: equal on monitors
	                              * whose histories are the same */
	/* failure detection (leader only) */
	uint64_t grace_ns, down_out_ns;
	unsigned min_reporters;
	struct osd_watch *watch;     /* by OSD id */
	uint64_t mds_grace_ns;
	uint64_t versions_grace_ns;  /* mon_warn_versions_differ */
	double nearfull_ratio, full_ratio; /* mon_osd_nearfull_ratio, _full_ratio */
	uint64_t versions_differ_since; /* mono ns; 0: one version runs */
	struct mds_watch mwatch[TSR_MDSMAP_MAX_MDS];
	size_t nmwatch;
	uint64_t lead_term, lead_since;
	uint64_t internal_tid;
	uint32_t isolated;           /* fault injection: members (bit = id - 1)
	                              * whose Raft messages we drop both ways */
	int failed;                  /* the store failed: stop serving */
	/* the placement plugin that makes the OSD map's placement map
	 * (state.h, mon_placer): one instance, for the map's plugin name */
	struct tsr_core_host pl_host;
	struct tsr_instance *pl_inst;
	char pl_name[TSR_OSDMAP_NAME];
};

/* ---- Across the files ------------------------------------------------------
 *
 * mon.c: the queue, sending, commands, Raft, life */
void mon_reply(struct tsr_conn *c, uint64_t tid, int status, const char *text,
	       const char *leader);
/* "ask the leader at ADDR", or "not in a quorum" */
void mon_redirect(struct mon *mon, struct tsr_conn *c, uint64_t tid, uint64_t now);
const char *mon_leader_addr(const struct mon *mon);
int mon_lease_valid(struct mon *mon, uint64_t now);
void mon_waiter_free(struct waiter *w);

/* pgstats.c: the primaries' reports of their PGs (the leader's). */
struct mon_health;
void mon_pgstats_take(struct mon *mon, const struct tsr_mon_pg_stats *s, uint64_t now);
/* JSON object: counts by state, degraded objects, recovery rate and ETA. */
void mon_pgstats_status(struct mon *mon, uint64_t now, struct tsr_sbuf *out);
void mon_pgstats_health(struct mon *mon, uint64_t now, struct mon_health *h);
/* OSD_NEARFULL, OSD_FULL from the OSDs' reported usage. */
void mon_pgstats_osd_health(struct mon *mon, uint64_t now, double nearfull, double full,
			    struct mon_health *h);
/* pg stat | pg dump | pg query PGID | osd df: 0, -ENOENT (out says why). */
int mon_pgstats_read(struct mon *mon, int argc, char **argv, uint64_t now,
		     struct tsr_sbuf *out);
void mon_pgstats_free(struct mon *mon);
/* The bytes the stores of m's OSDs hold (objects and metadata), as their
 * last reports said; *reporting: how many OSDs reported in the last 30 s
 * (the others are not counted). */
uint64_t mon_pgstats_used(struct mon *mon, const struct tsr_osdmap *m, uint64_t now,
			  size_t *reporting);

/* placemove.c: `osd placement set PLUGIN` without --yes-i-really-mean-it
 * on a map with OSDs: 0 when cmd is not that (or sets the plugin the map
 * has: the change answers it), else -ECANCELED (not -EBUSY, which
 * clients take for an overloaded monitor) with what the change would
 * move as JSON in out (its "error" says it in a sentence), or another
 * negative errno when it cannot be estimated (why in out; -ENODATA when
 * no OSD is in).  Nothing is proposed either way. */
int mon_placement_dry_run(struct mon *mon, const struct tsr_mon_cmd *cmd, uint64_t now,
			  struct tsr_sbuf *out);
/* a message data release that frees it */
void mon_free_data(void *arg, int result);
/* WARN lines any peer can cause, at a rate */
extern struct tsr_log_rate mon_refusal_lines;

/* subs.c: map subscriptions */
int mon_in_quorum(struct mon *mon);
void subs_handle(struct mon *mon, struct tsr_conn *c, struct tsr_msg *msg);
/* every subscriber gets the epochs it lacks; out of the quorum, they are
 * sent away */
void subs_push(struct mon *mon);
/* drop c's subscriptions (NULL: all) */
void subs_drop(struct mon *mon, struct tsr_conn *c);

/* propose.c: decisions, the projected state, proposals */
int mon_decisions(const struct mon *mon);
void proj_drop(struct mon *mon);
void proj_update(struct mon *mon);
void propose_internal(struct mon *mon, int argc, char **argv);
void propose_change(struct mon *mon, struct waiter *w);
/* An OSD's ask for the next batch of its kind: a boot (w: `osd boot ID
 * ADDR`), an alive (w: `osd alive WORD`, state_alive_word). */
void propose_batched(struct mon *mon, int kind, struct waiter *w);
/* Propose what waits, one change per kind, unless that kind's last batch
 * is still in the log unapplied (then they wait for it, and the batch
 * grows), or MON_MAX_MARKS wait. */
void propose_batches(struct mon *mon);

/* watch.c: what the leader watches — OSD beacons and failures, MDS
 * beacons and ranks */
void watch_osd_beacon(struct mon *mon, struct tsr_conn *c,
		      const struct tsr_mon_osd_beacon *b, uint64_t now);
void watch_mds_beacon(struct mon *mon, struct tsr_conn *c,
		      const struct tsr_mon_mds_beacon *b, uint64_t now);
void watch_osds(struct mon *mon, uint64_t now);
/* The software each daemon runs, as far as this leader has heard: JSON
 * members "mon", "osd", "mds", "overall" ({VERSION: COUNT}) appended to
 * out; detail (may be NULL) gets a JSON string per version naming its
 * daemons.  Returns how many versions run (unknown ones not counted) and
 * keeps versions_differ_since. */
size_t watch_versions(struct mon *mon, uint64_t now, struct tsr_sbuf *out,
		      struct tsr_sbuf *detail);
void watch_mds(struct mon *mon, uint64_t now);

#endif
