/* mon.c — tessera-mon, a monitor: one of the 1, 3 or 5 daemons that keep
 * the cluster maps, replicated by Raft (core/raft) over the messenger.
 *
 * Threads.  The messenger's I/O threads decode what arrives and queue it
 * (inline handlers that never block); one monitor thread owns the Raft
 * node, the store and the maps: it ticks Raft on the monotonic clock,
 * steps it with the queued messages, serves the queued commands, and
 * carries out each ready batch (persist and sync, send, apply, advance).
 * The daemon's event loop serves the admin socket.
 *
 * Commands.  A change goes into the Raft log on the leader and is answered
 * once applied (state.c); a follower answers "ask the leader at ADDR".  A
 * read is served by the leader while it holds its lease (raft.h): a
 * majority answered its heartbeats within the last lease period, so no
 * other leader can exist and its maps are the latest.  A monitor without
 * a leader, or a leader without a lease, says so; it never serves maps it
 * cannot prove current.
 */
#include "auth/auth.h"
#include "daemon/daemon.h"
#include "log/log.h"
#include "mon/members.h"
#include "mon/monmsg.h"
#include "plugin/host.h"
#include "plugin/registry.h"
#include "msg/msgr.h"
#include "raft/raft.h"
#include "raft/raftstore.h"
#include "state.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <tessera/crc32c.h>
#include <tessera/kv.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define LOGE(...) TSR_LOG_ERR(MON, __VA_ARGS__)
#define LOGW(...) TSR_LOG_WARN(MON, __VA_ARGS__)
#define LOGI(...) TSR_LOG_INFO(MON, __VA_ARGS__)
#define LOGD(...) TSR_LOG_DEBUG(MON, __VA_ARGS__)

#define PROPOSE_TIMEOUT_NS (5ull * 1000000000u) /* a change not committed by then fails */
#define QUEUE_MAX 4096 /* items waiting for the monitor thread; above, new ones are refused */

/* Something an I/O thread queued for the monitor thread. */
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
	struct { int32_t who; uint64_t at; } rep[8]; /* peers reporting it silent */
};

/* What the leader knows of an MDS beyond the map (soft state, like
 * osd_watch): by name, its incarnation's last beacon. */
struct mds_watch {
	char name[TSR_MDSMAP_NAME];
	uint64_t gid;
	uint64_t last_beacon;        /* mono ns */
	uint64_t proposed_at;        /* our last proposal about it */
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
};

struct mon {
	struct tsr_daemon *d;
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

	pthread_t thread;
	int thread_started;
	pthread_mutex_t qlock;       /* the queue and stop */
	pthread_cond_t qcond;
	struct item *head, **tail;
	size_t queued;
	uint64_t refused;            /* items refused on a full queue */
	int stop;

	pthread_mutex_t lock;        /* everything below, and raft (status reads) */
	struct mon_state st;
	/* The leader's projected state: st with every change it proposed
	 * since applied, what the next change is decided against (state.h).
	 * Made once the leader has applied its whole log in this term. */
	struct mon_state proj;
	int proj_valid;
	uint64_t proj_term;
	uint64_t features[TSR_MON_MAX]; /* each member's, from its Raft messages */
	struct waiter *changes, *reads;
	struct waiter *held;         /* changes waiting for the projected state */
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

/* ---- Queue (I/O threads) ---------------------------------------------------*/

static void reply(struct tsr_conn *c, uint64_t tid, int status, const char *text,
		  const char *leader);

static void
enqueue(struct mon *mon, int kind, struct tsr_conn *c, struct tsr_msg *m)
{
	struct item *it;

	pthread_mutex_lock(&mon->qlock);
	if (mon->queued >= QUEUE_MAX) {
		/* the monitor thread is behind (a slow disk): Raft copes with a
		 * lost message, a client is told to come back */
		int log = mon->refused++ % 1000 == 0;
		pthread_mutex_unlock(&mon->qlock);
		if (log)
			LOGW("%zu messages wait for the monitor thread: refusing more "
			     "(%" PRIu64 " so far)", (size_t)QUEUE_MAX, mon->refused);
		if (kind == TSR_MSG_MON_CMD) {
			struct tsr_mon_cmd cmd;
			char err[64];
			if (tsr_monmsg_cmd_decode(m->front, m->front_len, &cmd, err,
						  sizeof(err)) == 0) {
				reply(c, cmd.tid, -EBUSY, "the monitor is overloaded; retry",
				      NULL);
				tsr_monmsg_cmd_free(&cmd);
			}
		}
		tsr_msg_free(m, 0);
		return;
	}
	mon->queued++;
	pthread_mutex_unlock(&mon->qlock);
	if ((it = malloc(sizeof(*it))) == NULL) {
		pthread_mutex_lock(&mon->qlock);
		mon->queued--;
		pthread_mutex_unlock(&mon->qlock);
		tsr_msg_free(m, 0);
		return;
	}
	it->next = NULL;
	it->kind = kind;
	it->msg = m;
	it->conn = c;
	if (c)
		tsr_conn_get(c);
	pthread_mutex_lock(&mon->qlock);
	*mon->tail = it;
	mon->tail = &it->next;
	pthread_cond_signal(&mon->qcond);
	pthread_mutex_unlock(&mon->qlock);
}

/* Refusals a peer can cause at will, logged at a rate (log.h). */
static struct tsr_log_rate refusal_lines = TSR_LOG_RATE_INIT(10, 10000);

/* The member of mon_members that the session proved it is (a monitor's
 * name, auth.h), or NULL: any other peer, or a monitor's key for a name
 * outside mon_members. */
static const struct tsr_mon_member *
peer_member(const struct mon *mon, const char *who)
{
	if (!tsr_auth_may(who, TSR_CAP_MON))
		return NULL;
	return tsr_mon_members_find(&mon->mem, who + strlen("mon."));
}

static void
on_raft(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	struct mon *mon = arg;
	const char *who = tsr_conn_peer_auth(c);

	/* Raft only from monitors that proved it (auth.h): a forged vote
	 * or append could stall the cluster.  handle_raft checks that the
	 * message's sender is that monitor. */
	if (peer_member(mon, who) == NULL) {
		tsr_log_rated(&refusal_lines, TSR_SUB_MON, TSR_LOG_WARN,
			      "%s: a Raft message from %s, not an authenticated "
			      "monitor of mon_members; dropped", tsr_conn_peer(c),
			      who ? who : "an unauthenticated peer");
		tsr_msg_free(m, 0);
		return;
	}
	enqueue(mon, TSR_MSG_MON_RAFT, c, m);
}

static void
on_cmd(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	enqueue(arg, TSR_MSG_MON_CMD, c, m);
}

static void
on_sub(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	enqueue(arg, TSR_MSG_MON_SUB, c, m);
}

/* ---- Sending ------------------------------------------------------------------*/

static void
reply(struct tsr_conn *c, uint64_t tid, int status, const char *text,
      const char *leader)
{
	struct tsr_mon_reply r = { .tid = tid, .status = status, .text = (char *)text };
	struct tsr_msg *m;
	struct tsr_enc e;

	if (leader)
		snprintf(r.leader, sizeof(r.leader), "%s", leader);
	tsr_enc_init(&e);
	tsr_monmsg_reply_encode(&e, &r);
	if ((m = tsr_msg_from_enc(TSR_MSG_MON_CMD_REPLY, &e)) != NULL)
		tsr_conn_send(c, m, TSR_SEND_NOWAIT);
}

static void
free_data(void *arg, int result)
{
	(void)result;
	free(arg);
}

static void
send_raft(struct mon *mon, const struct tsr_raft_msg *rm, uint64_t now)
{
	const struct tsr_mon_member *to = tsr_mon_members_by_id(&mon->mem, rm->to);
	struct tsr_raft_msg copy = *rm;
	struct tsr_msg *m;
	struct tsr_enc e;
	size_t i;

	if (to == NULL)
		return;
	i = to->id - 1;
	if (mon->isolated & (1u << i))
		return;
	if (copy.type == TSR_RAFT_APPEND)
		copy.ctx = now;  /* the lease clock (raft.h) */
	if (mon->peer[i] == NULL) {
		char who[TSR_MON_NAME_MAX + 8];
		tsr_mon_member_entity(to, who, sizeof(who));
		if (tsr_msgr_connect_to(mon->msgr, to->addr, who, 0, &mon->peer[i]) < 0)
			return;
	}
	tsr_enc_init(&e);
	tsr_monmsg_raft_encode(&e, mon->mem.fp, TSR_MON_FEATURES, &copy);
	if ((m = tsr_msg_from_enc(TSR_MSG_MON_RAFT, &e)) == NULL)
		return;
	if (copy.type == TSR_RAFT_SNAPSHOT && copy.snap_len) {
		/* the data goes as the message's data (it may be larger than a
		 * front), a copy the messenger frees when done */
		struct iovec iov = { malloc(copy.snap_len), copy.snap_len };
		if (iov.iov_base == NULL) {
			tsr_msg_free(m, 0);
			return;
		}
		memcpy(iov.iov_base, copy.snap, copy.snap_len);
		tsr_msg_set_data(m, &iov, 1, free_data, iov.iov_base);
	}
	/* Raft copes with loss: a full queue drops the message.  A session
	 * that already failed (its fault event may have come before we held
	 * the handle) is dropped here: the next send reconnects. */
	int rc = tsr_conn_send(mon->peer[i], m, TSR_SEND_NOWAIT);
	if (rc < 0 && rc != -EAGAIN) {
		tsr_conn_close(mon->peer[i]);
		tsr_conn_put(mon->peer[i]);
		mon->peer[i] = NULL;
	}
}

/* A lossy session ended.  The monitor thread, which alone touches
 * peer[], drops it if it was one of ours (the next send reconnects); the
 * item holds a reference, so the handle cannot be reused meanwhile. */
static void
on_fault(struct tsr_conn *c, int err, void *arg)
{
	struct mon *mon = arg;
	struct item *it = malloc(sizeof(*it));

	(void)err;
	if (it == NULL)
		return; /* the next send finds the session failed */
	it->next = NULL;
	it->kind = -1;
	it->conn = c;
	it->msg = NULL;
	tsr_conn_get(c);
	pthread_mutex_lock(&mon->qlock);
	*mon->tail = it;
	mon->tail = &it->next;
	pthread_cond_signal(&mon->qcond);
	pthread_mutex_unlock(&mon->qlock);
}

/* ---- Commands ------------------------------------------------------------------*/

static const char *
leader_addr(const struct mon *mon)
{
	const struct tsr_mon_member *l =
		tsr_mon_members_by_id(&mon->mem, tsr_raft_leader(mon->raft));

	return l && l != mon->self ? l->addr : NULL;
}

/* Not the leader: point the client at it, or say there is none. */
static void
redirect(struct mon *mon, struct tsr_conn *c, uint64_t tid, uint64_t now)
{
	char text[256];
	const char *l = leader_addr(mon);

	if (l) {
		snprintf(text, sizeof(text), "mon.%s is not the leader; ask %s",
			 mon->self->name, l);
		reply(c, tid, -EAGAIN, text, l);
		return;
	}
	snprintf(text, sizeof(text), "mon.%s is not in a quorum: no leader for "
		 "%.1f s (are a majority of the %zu monitors up and reachable?)",
		 mon->self->name, (double)(now - mon->last_leader_ns) / 1e9, mon->mem.n);
	reply(c, tid, -ENOTCONN, text, NULL);
}

/* Does the leader hold its lease (raft.h)?  process_ready() has applied
 * everything committed before anything is served, so its maps are the
 * latest. */
static int
lease_valid(struct mon *mon, uint64_t now)
{
	uint64_t since = tsr_raft_lease_since(mon->raft, now);

	return since != 0 && now - since < mon->lease_ns;
}

static void
mon_stat(struct mon *mon, uint64_t now, struct tsr_sbuf *out)
{
	uint64_t lid = tsr_raft_leader(mon->raft);
	const struct tsr_mon_member *l = tsr_mon_members_by_id(&mon->mem, lid);

	tsr_sbuf_printf(out, "{\"members\": [");
	for (size_t i = 0; i < mon->mem.n; i++) {
		const struct tsr_mon_member *m = &mon->mem.m[i];
		/* in the quorum: it answered lately holding every entry the
		 * leader had committed (not catching up, not rejoining) */
		int inq = m == mon->self
			? tsr_raft_role(mon->raft) == TSR_RAFT_LEADER ||
			  (tsr_raft_leader(mon->raft) != 0 && !tsr_raft_rejoining(mon->raft))
			: now - tsr_raft_peer_current(mon->raft, m->id) < mon->lease_ns;
		tsr_sbuf_printf(out, "%s{\"name\": ", i ? ", " : "");
		tsr_sbuf_json_str(out, m->name);
		tsr_sbuf_printf(out, ", \"addr\": ");
		tsr_sbuf_json_str(out, m->addr);
		tsr_sbuf_printf(out, ", \"in_quorum\": %s}", inq ? "true" : "false");
	}
	tsr_sbuf_printf(out, "], \"leader\": ");
	tsr_sbuf_json_str(out, l ? l->name : "");
	tsr_sbuf_printf(out, ", \"term\": %" PRIu64 ", \"committed\": %" PRIu64 "}",
			tsr_raft_term(mon->raft), tsr_raft_commit(mon->raft));
}

/* The monitors' own health checks (state.h). */
static void
mon_health(struct mon *mon, uint64_t now, struct mon_health *h)
{
	struct tsr_sbuf d;
	size_t n = 0;

	tsr_sbuf_init(&d);
	for (size_t i = 0; i < mon->mem.n; i++) {
		const struct tsr_mon_member *m = &mon->mem.m[i];
		char line[160];
		if (m == mon->self ||
		    now - tsr_raft_peer_current(mon->raft, m->id) < mon->lease_ns)
			continue;
		uint64_t at = tsr_raft_peer_current(mon->raft, m->id);
		if (at)
			snprintf(line, sizeof(line), "mon.%s (%s) has not answered the "
				 "leader with the committed log for %.1f s", m->name,
				 m->addr, (double)(now - at) / 1e9);
		else
			snprintf(line, sizeof(line), "mon.%s (%s) has not answered this "
				 "leader with the committed log", m->name, m->addr);
		tsr_sbuf_printf(&d, "%s", n++ ? ", " : "");
		tsr_sbuf_json_str(&d, line);
	}
	if (n)
		state_health_raise(h, MON_HEALTH_MON_DOWN, tsr_sbuf_str(&d),
				   "%zu of %zu monitors out of the quorum", n, mon->mem.n);
	tsr_sbuf_release(&d);
}

static int
serve_read(struct mon *mon, struct tsr_mon_cmd *cmd, uint64_t now,
	   struct tsr_sbuf *out)
{
	int argc = (int)cmd->argc;
	char **argv = cmd->argv;

	if (strcmp(argv[0], "mon") == 0) {
		mon_stat(mon, now, out);
		return 0;
	}
	if (strcmp(argv[0], "health") == 0 || strcmp(argv[0], "status") == 0) {
		struct mon_health h;
		size_t nin = 0, nup = 0;

		state_health_init(&h);
		mon_health(mon, now, &h);
		state_health(&mon->st, &h);
		tsr_sbuf_printf(out, "{\"health\": \"%s\", \"checks\": [%s], "
				"\"reasons\": [%s]", state_health_name(h.level),
				tsr_sbuf_str(&h.checks), tsr_sbuf_str(&h.reasons));
		state_health_release(&h);
		if (argv[0][0] == 'h') {
			tsr_sbuf_printf(out, "}");
			return 0;
		}
		for (size_t i = 0; i < mon->st.osdmap.nosds; i++) {
			nin += mon->st.osdmap.osds[i].in;
			nup += mon->st.osdmap.osds[i].up;
		}
		tsr_sbuf_printf(out, ", \"mon\": ");
		mon_stat(mon, now, out);
		size_t nact = 0, nstb = 0;
		for (size_t i = 0; i < mon->st.mdsmap.nmds; i++) {
			nact += mon->st.mdsmap.mds[i].state == TSR_MDS_ACTIVE;
			nstb += mon->st.mdsmap.mds[i].rank < 0;
		}
		tsr_sbuf_printf(out, ", \"osdmap\": {\"epoch\": %" PRIu64 ", \"osds\": %zu, "
				"\"up\": %zu, \"in\": %zu, \"pools\": %zu}, \"mdsmap\": "
				"{\"epoch\": %" PRIu64 ", \"max_mds\": %u, \"active\": %zu, "
				"\"standby\": %zu}}", mon->st.osdmap.epoch,
				mon->st.osdmap.nosds, nup, nin, mon->st.osdmap.npools,
				mon->st.mdsmap.epoch, mon->st.mdsmap.max_mds, nact, nstb);
		return 0;
	}
	return state_read(&mon->st, argc, argv, out);
}

/* ---- Map subscriptions ---------------------------------------------------------
 *
 * Anyone may ask for the maps (MON_SUB): a monitor in the quorum — the
 * leader, or a follower that knows its leader — answers from the state it
 * has applied, which is committed, so an answer is never a map that could
 * be undone; a follower may be a few entries behind the leader, and the
 * subscriber then gets those epochs a moment later.  The answer is the
 * incrementals from the subscriber's epoch when this monitor still has
 * them all (state_inc), else the full map.  A subscription stays for the
 * session's life and is pushed every new epoch as it is applied.  A
 * monitor that leaves the quorum closes its subscribers' sessions, so
 * they go to one in it instead of waiting on maps that no longer come. */

static int
in_quorum(struct mon *mon)
{
	uint64_t l = tsr_raft_leader(mon->raft);

	return l != 0 && (l != mon->self->id ||
			  tsr_raft_role(mon->raft) == TSR_RAFT_LEADER);
}

static uint64_t
map_epoch(const struct mon *mon, int which)
{
	return which == TSR_MON_MAP_OSD ? mon->st.osdmap.epoch : mon->st.mdsmap.epoch;
}

static void
send_maps_msg(struct tsr_conn *c, const struct tsr_mon_maps *mm,
	      const struct iovec *iov, int iovcnt, void *owner)
{
	struct tsr_msg *m;
	struct tsr_enc e;

	tsr_enc_init(&e);
	tsr_monmsg_maps_encode(&e, mm);
	if ((m = tsr_msg_from_enc(TSR_MSG_MON_MAPS, &e)) == NULL) {
		free(owner);
		return;
	}
	if (iovcnt && tsr_msg_set_data(m, iov, iovcnt, free_data, owner) < 0) {
		free(owner);
		tsr_msg_free(m, 0);
		return;
	}
	if (!iovcnt)
		free(owner);
	tsr_conn_send(c, m, TSR_SEND_NOWAIT);
}

/* Bring a subscriber from epoch have to ours: nothing when it is current
 * (unless it asked, tid != 0), the incrementals when we have them all,
 * else the full map.  The bytes are copied into one buffer the message
 * owns. */
static void
send_maps(struct mon *mon, struct tsr_conn *c, uint64_t tid, int which,
	  uint64_t have)
{
	uint64_t cur = map_epoch(mon, which);
	struct tsr_mon_maps mm = { .tid = tid, .which = (uint8_t)which, .epoch = cur };
	uint32_t lens[TSR_MONMSG_MAX_INCS];
	uint8_t *buf = NULL;
	size_t total = 0;

	if (have >= cur) {
		if (tid)
			send_maps_msg(c, &mm, NULL, 0, NULL);
		return;
	}
	mm.len = lens;
	if (have != 0 && cur - have <= MON_INC_KEEP && cur - have <= TSR_MONMSG_MAX_INCS) {
		size_t len;
		uint64_t e;
		for (e = have + 1; e <= cur && state_inc(&mon->st, which, e, &len); e++)
			total += len;
		/* many incrementals that each carry a placement map can outgrow
		 * what a message may carry: then the full map, which is smaller */
		if (e > cur && total <= MAX_INC_BYTES &&
		    (buf = malloc(total ? total : 1)) != NULL) {
			size_t at = 0;
			for (e = have + 1; e <= cur; e++) {
				const uint8_t *p = state_inc(&mon->st, which, e, &len);
				memcpy(buf + at, p, len);
				at += len;
				lens[mm.n++] = (uint32_t)len;
			}
		}
	}
	if (buf == NULL) {
		struct tsr_enc e;
		tsr_enc_init(&e);
		if (which == TSR_MON_MAP_OSD)
			tsr_osdmap_encode(&e, &mon->st.osdmap);
		else
			tsr_mdsmap_encode(&e, &mon->st.mdsmap);
		if ((buf = tsr_enc_take(&e, &total)) == NULL)
			return;
		mm.full = 1;
		mm.n = 1;
		lens[0] = (uint32_t)total;
	}
	struct iovec iov = { buf, total };
	send_maps_msg(c, &mm, &iov, 1, buf);
}

static void
sub_free(struct sub *s)
{
	tsr_conn_put(s->conn);
	free(s);
}

/* Drop every subscription of c (its session ended), or all (c NULL: we
 * left the quorum; their sessions are closed so they look elsewhere). */
static void
drop_subs(struct mon *mon, struct tsr_conn *c)
{
	for (struct sub **p = &mon->subs; *p;) {
		struct sub *s = *p;
		if (c != NULL && s->conn != c) {
			p = &s->next;
			continue;
		}
		if (c == NULL)
			tsr_conn_close(s->conn);
		*p = s->next;
		mon->nsubs--;
		sub_free(s);
	}
}

static void
handle_sub(struct mon *mon, struct tsr_conn *c, struct tsr_msg *msg)
{
	struct tsr_mon_sub rq;
	struct tsr_mon_maps mm = { 0 };
	char err[256];
	struct sub *s;

	if (tsr_monmsg_sub_decode(msg->front, msg->front_len, &rq, err,
				  sizeof(err)) < 0) {
		tsr_log_rated(&refusal_lines, TSR_SUB_MON, TSR_LOG_WARN,
			      "%s: bad subscription: %s", tsr_conn_peer(c), err);
		mm.status = -EBADMSG;
		mm.text = err;
		send_maps_msg(c, &mm, NULL, 0, NULL);
		return;
	}
	mm.tid = rq.tid;
	if (!tsr_auth_may(tsr_conn_peer_auth(c), TSR_CAP_READ)) {
		mm.status = -EACCES;
		mm.text = "not authenticated";
		send_maps_msg(c, &mm, NULL, 0, NULL);
		return;
	}
	if (!in_quorum(mon)) {
		const char *l = leader_addr(mon);
		snprintf(err, sizeof(err), "mon.%s is not in a quorum: it has no "
			 "leader", mon->self->name);
		mm.status = -ENOTCONN;
		mm.text = err;
		if (l)
			snprintf(mm.leader, sizeof(mm.leader), "%s", l);
		send_maps_msg(c, &mm, NULL, 0, NULL);
		return;
	}
	for (s = mon->subs; s && s->conn != c; s = s->next)
		;
	if ((rq.want & TSR_MON_SUB_KEEP) && s == NULL && mon->nsubs < MAX_SUBS) {
		s = tsr_xcalloc(1, sizeof(*s));
		s->conn = c;
		tsr_conn_get(c);
		s->next = mon->subs;
		mon->subs = s;
		mon->nsubs++;
	}
	if (!(rq.want & TSR_MON_SUB_KEEP))
		s = NULL; /* a one-shot ask: a subscription stays as it was */
	for (int w = 0; w < TSR_MON_NMAPS; w++) {
		if (!(rq.want & (1u << w)))
			continue;
		send_maps(mon, c, rq.tid, w, rq.have[w]);
		if (s) {
			s->want |= 1u << w;
			s->have[w] = map_epoch(mon, w);
		}
	}
}

/* After applying: every subscriber gets the epochs it lacks.  Out of the
 * quorum: they are sent away. */
static void
push_subs(struct mon *mon)
{
	if (mon->subs == NULL)
		return;
	if (!in_quorum(mon)) {
		LOGI("not in a quorum: closing %zu map subscriptions", mon->nsubs);
		drop_subs(mon, NULL);
		return;
	}
	for (struct sub *s = mon->subs; s; s = s->next)
		for (int w = 0; w < TSR_MON_NMAPS; w++)
			if ((s->want & (1u << w)) && s->have[w] < map_epoch(mon, w)) {
				send_maps(mon, s->conn, 0, w, s->have[w]);
				s->have[w] = map_epoch(mon, w);
			}
}

/* ---- Failure detection (the leader) -----------------------------------------
 *
 * OSDs send `osd beacon ID [--failed PEERS]` every osd_beacon_interval;
 * the leader notes the time and the peers reported silent.  An up OSD is
 * marked down when its beacons stop for the grace (doubled for each
 * recent flap, up to 8x), or when mon_osd_min_down_reporters other up
 * OSDs reported it within the grace; a down OSD is marked out after
 * mon_osd_down_out_interval unless noout is set.  The answer to a beacon
 * says whether the map has the OSD up: one marked down while alive boots
 * again (core/mon/osdbeacon.c).  The marks are changes like any other,
 * proposed by the leader under its own client id. */

/* ---- Decisions (the leader) -------------------------------------------------
 *
 * The log carries decisions (state.h): the leader decides each change
 * against its projected state and proposes the incrementals.  Until
 * every member has shown, in its Raft messages, that it applies them
 * (TSR_MON_FEAT_DECISIONS), the leader proposes commands instead, which
 * every monitor decides itself: in a rolling upgrade the monitors of the
 * older version keep applying the log until the last one is upgraded. */

static int
decisions(const struct mon *mon)
{
	for (size_t i = 0; i < mon->mem.n; i++)
		if (&mon->mem.m[i] != mon->self &&
		    !(mon->features[mon->mem.m[i].id - 1] & TSR_MON_FEAT_DECISIONS))
			return 0;
	return 1;
}

static void
proj_drop(struct mon *mon)
{
	if (mon->proj_valid)
		state_free(&mon->proj);
	mon->proj_valid = 0;
}

static void propose_change(struct mon *mon, struct waiter *w);

/* Keep the projected state: dropped when we stop leading (or the term
 * moves, or a member shows it cannot apply decisions); made anew when we
 * lead and have applied every entry of our log, so that nothing proposed
 * before is missing from it.  Changes held meanwhile go out then. */
static void
proj_update(struct mon *mon)
{
	int leader = tsr_raft_role(mon->raft) == TSR_RAFT_LEADER && !mon->failed;

	if (mon->proj_valid && (!leader || tsr_raft_term(mon->raft) != mon->proj_term ||
				!decisions(mon)))
		proj_drop(mon);
	if (mon->proj_valid || !leader || !decisions(mon) ||
	    mon->hist_index != tsr_raft_last_index(mon->raft))
		return;
	if (state_copy(&mon->proj, &mon->st) < 0) {
		LOGW("no memory for the projected state; changes wait");
		return;
	}
	mon->proj_valid = 1;
	mon->proj_term = tsr_raft_term(mon->raft);
	while (mon->held) {
		struct waiter *w = mon->held;
		mon->held = w->next;
		propose_change(mon, w);
	}
}

/* Propose a change: a decision on the projected state, or (before every
 * member applies decisions) the command.  0, or a negative errno. */
static int
propose(struct mon *mon, uint64_t client, uint64_t tid, int argc, char **argv,
	uint64_t *index)
{
	struct tsr_sbuf out;
	size_t len;
	uint8_t *e;
	int rc, status;

	if (!mon->proj_valid) {
		e = state_entry_encode(client, tid, argc, argv, &len);
	} else {
		tsr_sbuf_init(&out);
		e = state_decide(&mon->proj, client, tid, argc, argv, &status, &out, &len);
		LOGD("decided %s %s: %d %s", argv[0], argc > 1 ? argv[1] : "", status,
		     tsr_sbuf_str(&out));
		tsr_sbuf_release(&out);
	}
	rc = e ? tsr_raft_propose(mon->raft, e, len, index) : -ENOMEM;
	free(e);
	if (rc < 0 && mon->proj_valid) {
		/* the projected state has a change the log will not: made
		 * anew once the log is applied */
		proj_drop(mon);
	}
	return rc;
}

static void
propose_internal(struct mon *mon, int argc, char **argv)
{
	uint64_t client = 1ull << 63 | tsr_raft_term(mon->raft) << 8 | mon->self->id;

	if (decisions(mon) && !mon->proj_valid)
		return; /* the next check proposes it */
	if (propose(mon, client, ++mon->internal_tid, argc, argv, NULL) < 0)
		LOGW("could not propose %s %s %s", argv[0], argv[1], argc > 2 ? argv[2] : "");
}

static void
handle_beacon(struct mon *mon, struct tsr_conn *c, const struct tsr_mon_cmd *cmd,
	      uint64_t now)
{
	int64_t id = strtoll(cmd->argv[2], NULL, 10); /* checked by classify */
	const struct tsr_osdmap_osd *o = tsr_osdmap_osd(&mon->st.osdmap, (int32_t)id);
	struct osd_watch *w = &mon->watch[id];
	char text[160];

	if (o == NULL) {
		snprintf(text, sizeof(text), "osd.%lld is not in the map: add it "
			 "first (tessera osd add %lld --host HOST)", (long long)id,
			 (long long)id);
		reply(c, cmd->tid, -ENOENT, text, NULL);
		return;
	}
	w->last_beacon = now;
	for (uint32_t i = 3; i + 1 < cmd->argc; i++) {
		int32_t failed[MON_MAX_FAILED];
		size_t nfailed = 0;
		struct tsr_sbuf why;

		if (strcmp(cmd->argv[i], "--failed") != 0)
			continue;
		/* state_classify refused a list with a bad element */
		tsr_sbuf_init(&why);
		if (state_osd_list(cmd->argv[i + 1], failed, MON_MAX_FAILED, &nfailed,
				   &why) < 0)
			nfailed = 0;
		tsr_sbuf_release(&why);
		for (size_t f = 0; f < nfailed; f++) {
			int32_t t = failed[f];
			if (t != id) {
				struct osd_watch *tw = &mon->watch[t];
				size_t slot = 0;
				for (size_t k = 0; k < 8; k++) {
					if (tw->rep[k].at && tw->rep[k].who == (int32_t)id) {
						slot = k;
						break;
					}
					if (tw->rep[k].at < tw->rep[slot].at)
						slot = k;
				}
				tw->rep[slot].who = (int32_t)id;
				tw->rep[slot].at = now;
			}
		}
	}
	snprintf(text, sizeof(text), "{\"osd\": %d, \"up\": %s, \"in\": %s, "
		 "\"osdmap_epoch\": %" PRIu64 "}", o->id, o->up ? "true" : "false",
		 o->in ? "true" : "false", mon->st.osdmap.epoch);
	reply(c, cmd->tid, 0, text, NULL);
}

/* ---- MDSs (the leader) ---------------------------------------------------------
 *
 * An MDS sends `mds beacon NAME GID ADDR STATE` every mds_beacon_interval
 * (GID: a number new at each start).  The leader boots an incarnation it
 * has not seen into the map as a standby (replacing an older one of that
 * name, whose rank is then vacant), gives a vacant rank to a standby (it
 * replays the rank's journal), records `active` when the holder says it
 * finished, and fails an MDS whose beacons stopped for
 * mon_mds_beacon_grace, so its rank goes to a standby.  Only a beacon
 * that says `standby` boots an incarnation: one failed while it held a
 * rank (paused past the grace) and still saying `active` is not let back
 * in.  The MDS learns its rank and state from the MDS map it subscribes
 * to. */

static struct mds_watch *
mds_watch(struct mon *mon, const char *name)
{
	for (size_t i = 0; i < mon->nmwatch; i++)
		if (strcmp(mon->mwatch[i].name, name) == 0)
			return &mon->mwatch[i];
	struct mds_watch *w = NULL;
	if (mon->nmwatch < TSR_MDSMAP_MAX_MDS) {
		w = &mon->mwatch[mon->nmwatch++];
	} else {
		/* full: reuse the entry of a name the map does not hold that
		 * has been silent longer than the grace */
		uint64_t now = tsr_mono_ns();
		for (size_t i = 0; i < mon->nmwatch && w == NULL; i++)
			if (tsr_mdsmap_find(&mon->st.mdsmap, mon->mwatch[i].name) == NULL &&
			    now - mon->mwatch[i].last_beacon > mon->mds_grace_ns)
				w = &mon->mwatch[i];
		if (w == NULL)
			return NULL;
	}
	memset(w, 0, sizeof(*w));
	tsr_strlcpy(w->name, name, sizeof(w->name));
	return w;
}

static void
handle_mds_beacon(struct mon *mon, struct tsr_conn *c, const struct tsr_mon_cmd *cmd,
		  uint64_t now)
{
	struct mds_beacon b;
	struct mds_watch *w;
	const struct tsr_mdsmap_mds *d;
	struct tsr_sbuf out;
	char gidw[24];

	tsr_sbuf_init(&out);
	state_mds_beacon((int)cmd->argc, cmd->argv, &b, &out); /* classify checked it */
	if ((w = mds_watch(mon, b.name)) == NULL) {
		reply(c, cmd->tid, -ENOSPC, "too many MDSs", NULL);
		tsr_sbuf_release(&out);
		return;
	}
	if (w->gid != b.gid) {
		w->gid = b.gid;
		w->proposed_at = 0;
	}
	w->last_beacon = now;
	d = tsr_mdsmap_find(&mon->st.mdsmap, b.name);
	snprintf(gidw, sizeof(gidw), "%" PRIu64, b.gid);
	if (now - w->proposed_at >= 1000000000ull || w->proposed_at == 0) {
		if ((d == NULL || d->gid != b.gid) && b.state != TSR_MDS_STANDBY) {
			/* an incarnation that believes it holds a rank the map
			 * no longer gives it (failed while paused): never back
			 * in; it will see the map and stand by as a new one */
			LOGD("mds.%s: incarnation %s says %s but is not in the map; "
			     "not booting it", b.name, gidw, tsr_mds_state_name(b.state));
		} else if (d == NULL || d->gid != b.gid) {
			char *argv[] = { "mds", "boot", b.name, gidw, b.addr };
			LOGI("mds.%s (gid %s) at %s boots%s", b.name, gidw, b.addr,
			     d ? ", replacing its last incarnation" : "");
			propose_internal(mon, 5, argv);
			w->proposed_at = now;
		} else if (d->state == TSR_MDS_REPLAY && b.state == TSR_MDS_ACTIVE) {
			char *argv[] = { "mds", "active", b.name, gidw };
			propose_internal(mon, 4, argv);
			w->proposed_at = now;
		}
	}
	tsr_sbuf_printf(&out, "{\"mds\": ");
	tsr_sbuf_json_str(&out, b.name);
	tsr_sbuf_printf(&out, ", \"in_map\": %s, \"mdsmap_epoch\": %" PRIu64 "}",
			d && d->gid == b.gid ? "true" : "false", mon->st.mdsmap.epoch);
	reply(c, cmd->tid, 0, tsr_sbuf_str(&out), NULL);
	tsr_sbuf_release(&out);
}

static void
check_mds(struct mon *mon, uint64_t now)
{
	const struct tsr_mdsmap *m = &mon->st.mdsmap;

	if (tsr_raft_role(mon->raft) != TSR_RAFT_LEADER || !lease_valid(mon, now))
		return;
	if (mon->lead_term != tsr_raft_term(mon->raft))
		return; /* check_failures starts the term's soft state */
	for (size_t i = 0; i < m->nmds; i++) {
		const struct tsr_mdsmap_mds *d = &m->mds[i];
		struct mds_watch *w = mds_watch(mon, d->name);
		uint64_t last;
		char gidw[24], *argv[] = { "mds", "fail", (char *)d->name, gidw };

		if (w == NULL || (w->proposed_at && now - w->proposed_at < 1000000000ull))
			continue;
		/* beacons of another incarnation (a new one booting) do not
		 * keep this one alive */
		last = w->gid == d->gid && w->last_beacon > mon->lead_since ? w->last_beacon
									   : mon->lead_since;
		if (now - last <= mon->mds_grace_ns)
			continue;
		snprintf(gidw, sizeof(gidw), "%" PRIu64, d->gid);
		LOGW("mds.%s: no beacon for %.1f s (grace %.1f s): failing it%s", d->name,
		     (double)(now - last) / 1e9, (double)mon->mds_grace_ns / 1e9,
		     d->rank >= 0 ? "; its rank goes to a standby" : "");
		propose_internal(mon, 4, argv);
		w->proposed_at = now;
		return; /* one change at a time: the next check sees its result */
	}
	/* vacant ranks to standbys, in name order */
	for (uint32_t r = 0; r < m->max_mds; r++) {
		if (tsr_mdsmap_rank(m, (int32_t)r))
			continue;
		for (size_t i = 0; i < m->nmds; i++) {
			const struct tsr_mdsmap_mds *d = &m->mds[i];
			struct mds_watch *w = mds_watch(mon, d->name);
			char rw[16], *argv[] = { "mds", "assign", (char *)d->name, rw };

			if (d->state != TSR_MDS_STANDBY || w == NULL || w->gid != d->gid ||
			    (w->proposed_at && now - w->proposed_at < 1000000000ull))
				continue;
			snprintf(rw, sizeof(rw), "%u", r);
			LOGI("rank %u: vacant; mds.%s takes it", r, d->name);
			propose_internal(mon, 4, argv);
			w->proposed_at = now;
			return;
		}
	}
}

/* The marks of one check, proposed together: one change, one epoch, for
 * many OSDs at once (decisions only: a monitor of the version before
 * takes one OSD per mark). */
struct marks {
	char list[MON_MAX_MARKS * 8];
	size_t n, len;
};

static void
marks_flush(struct mon *mon, struct marks *k, const char *verb)
{
	char *argv[4] = { "osd", (char *)verb, k->list, "--auto" };

	if (k->n)
		propose_internal(mon, verb[0] == 'o' ? 4 : 3, argv);
	k->n = k->len = 0;
	k->list[0] = '\0';
}

/* Mark OSD id (down or out): at once, or batched with the check's others. */
static void
mark(struct mon *mon, struct marks *k, const char *verb, int32_t id)
{
	if (!decisions(mon) || k->n == MON_MAX_MARKS)
		marks_flush(mon, k, verb);
	k->len += (size_t)snprintf(k->list + k->len, sizeof(k->list) - k->len, "%s%d",
				   k->n ? "," : "", id);
	k->n++;
	if (!decisions(mon))
		marks_flush(mon, k, verb);
}

static void
check_failures(struct mon *mon, uint64_t now)
{
	struct marks downs = { .n = 0 }, outs = { .n = 0 };

	if (tsr_raft_role(mon->raft) != TSR_RAFT_LEADER || !lease_valid(mon, now))
		return;
	if (mon->lead_term != tsr_raft_term(mon->raft)) {
		/* we lead anew: what another leader knew is gone, so every OSD
		 * gets a full grace from now */
		mon->lead_term = tsr_raft_term(mon->raft);
		mon->lead_since = now;
		memset(mon->watch, 0, MON_MAX_OSDS * sizeof(*mon->watch));
		mon->nmwatch = 0;
	}
	for (size_t i = 0; i < mon->st.osdmap.nosds; i++) {
		const struct tsr_osdmap_osd *o = &mon->st.osdmap.osds[i];
		struct osd_watch *w = &mon->watch[o->id];

		if (now - w->proposed_at < 1000000000ull && w->proposed_at)
			continue; /* the last proposal is on its way */
		if (o->up) {
			uint64_t last = w->last_beacon > mon->lead_since ? w->last_beacon
									 : mon->lead_since;
			uint64_t grace;
			unsigned reporters = 0;

			w->down_seen = 0;
			if (w->up_from != o->up_from) {
				/* it booted: old reports are about its old life */
				w->up_from = o->up_from;
				memset(w->rep, 0, sizeof(w->rep));
				if (last < now)
					w->last_beacon = last = now;
			}
			if (w->last_flap && now - w->last_flap > 10 * mon->grace_ns)
				w->flaps = 0;
			grace = mon->grace_ns << (w->flaps < 3 ? w->flaps : 3);
			for (size_t k = 0; k < 8; k++) {
				const struct tsr_osdmap_osd *r = tsr_osdmap_osd(&mon->st.osdmap, w->rep[k].who);
				reporters += w->rep[k].at && now - w->rep[k].at < grace &&
					     r != NULL && r->up;
			}
			if (now - last <= grace && reporters < mon->min_reporters)
				continue;
			if (reporters >= mon->min_reporters)
				LOGW("osd.%d: %u OSDs report it silent: marking it down",
				     o->id, reporters);
			else
				LOGW("osd.%d: no beacon for %.1f s (grace %.1f s): marking "
				     "it down", o->id, (double)(now - last) / 1e9,
				     (double)grace / 1e9);
			mark(mon, &downs, "down", o->id);
			w->proposed_at = now;
			w->flaps++;
			w->last_flap = now;
			continue;
		}
		if (w->down_seen == 0)
			w->down_seen = now;
		if (!o->in || (mon->st.osdmap.flags & TSR_OSDMAP_NOOUT) ||
		    now - w->down_seen < mon->down_out_ns)
			continue;
		LOGW("osd.%d: down for %.1f s: marking it out (its data moves)", o->id,
		     (double)(now - w->down_seen) / 1e9);
		mark(mon, &outs, "out", o->id);
		w->proposed_at = now;
	}
	marks_flush(mon, &downs, "down");
	marks_flush(mon, &outs, "out");
}

static void
waiter_free(struct waiter *w)
{
	tsr_monmsg_cmd_free(&w->cmd);
	if (w->conn)
		tsr_conn_put(w->conn);
	free(w);
}

/* May who run this command (kind from state_classify)?  The rules of
 * auth.h: a daemon's reports about itself (boot, beacon, active) come
 * only from that daemon; reads from anyone authenticated; other changes
 * from client.admin and the monitors.  0, or -EACCES with why. */
static int
cmd_allowed(struct mon *mon, int kind, const struct tsr_mon_cmd *cmd,
	    const char *who, char *why, size_t len)
{
	const char *type = NULL;

	if (who == NULL) {
		snprintf(why, len, "not authenticated");
		return -EACCES;
	}
	/* a monitor's key is everything, but only a member's: a key made
	 * for a monitor not yet in mon_members is no admin key */
	if (tsr_auth_may(who, TSR_CAP_MON)) {
		if (peer_member(mon, who) != NULL)
			return 0;
		snprintf(why, len, "permission denied: %s is not a monitor of "
			 "mon_members", who);
		return -EACCES;
	}
	if (cmd->argc >= 3 && strcmp(cmd->argv[0], "osd") == 0 &&
	    (strcmp(cmd->argv[1], "boot") == 0 || strcmp(cmd->argv[1], "beacon") == 0))
		type = "osd";
	else if (cmd->argc >= 3 && strcmp(cmd->argv[0], "mds") == 0 &&
		 (strcmp(cmd->argv[1], "boot") == 0 || strcmp(cmd->argv[1], "beacon") == 0 ||
		  strcmp(cmd->argv[1], "active") == 0))
		type = "mds";
	if (type) {
		if (tsr_auth_is(who, type, cmd->argv[2]))
			return 0;
		snprintf(why, len, "permission denied: only %s.%.48s may send '%s "
			 "%s' for itself (this session is %s)", type, cmd->argv[2],
			 cmd->argv[0], cmd->argv[1], who);
		return -EACCES;
	}
	if (kind == 0 ? tsr_auth_may(who, TSR_CAP_READ)
		      : tsr_auth_may(who, TSR_CAP_CHANGE))
		return 0;
	snprintf(why, len, "permission denied: %s may not change the cluster "
		 "maps (client.admin may)", who);
	return -EACCES;
}

/* A pool's redundancy plugin must be one the monitors have, and its
 * options ones the plugin's schema takes (tessera/plugin.h; the core's
 * options code checks them).  Checked where the leader accepts the
 * change, before it enters the log, so every client gets the answer:
 * state_apply knows no plugins, and must not, to apply the log alike on
 * every monitor.  0, or -ENOENT (no such plugin here) or -EINVAL (its
 * options are wrong: a usage error) with the reason in out. */
static int
check_plugins(struct mon *mon, const struct tsr_mon_cmd *cmd, struct tsr_sbuf *out)
{
	const struct tsr_registry *reg = tsr_daemon_registry(mon->d);
	const struct tsr_plugin_desc *d;
	const struct tsr_plugin *p;
	struct tsr_srcval srcs[TSR_OSDMAP_OPTS / 2];
	struct tsr_optset *set = NULL;
	const char *name, *opts;
	char what[96], err[1024], text[TSR_OSDMAP_OPTS];
	size_t n = 0;
	int rc;

	if (!state_pool_redundancy((int)cmd->argc, cmd->argv, &name, &opts))
		return 0;
	if ((p = tsr_registry_find(reg, TSR_KIND_REDUNDANCY, name)) == NULL) {
		int any = 0;
		tsr_sbuf_printf(out, "no redundancy plugin '%s' on the monitors (mon.%s "
				"has in plugin_dir %s: ", name, mon->self->name,
				tsr_conf_str(tsr_daemon_conf(mon->d), "plugin_dir"));
		for (size_t i = 0; i < tsr_registry_count(reg); i++) {
			d = tsr_plugin_desc(tsr_registry_at(reg, i));
			if (d->kind == TSR_KIND_REDUNDANCY)
				tsr_sbuf_printf(out, "%s%s", any++ ? ", " : "", d->name);
		}
		tsr_sbuf_printf(out, "%s)", any ? "" : "none");
		return -ENOENT;
	}
	d = tsr_plugin_desc(p);
	/* "k=v,k=v" (state_classify checked its form) as command-line
	 * values, parsed by the schema's types */
	tsr_strlcpy(text, opts, sizeof(text));
	for (char *save = NULL, *kv = strtok_r(text, ",", &save);
	     kv && n < sizeof(srcs) / sizeof(srcs[0]); kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		srcs[n++] = (struct tsr_srcval){ .name = kv, .kind = TSR_SRC_TEXT,
						 .s = eq + 1, .where = "--redundancy-opts" };
	}
	snprintf(what, sizeof(what), "redundancy plugin '%s'", name);
	rc = tsr_optset_build(d->options, srcs, n, what, &set, err, sizeof(err));
	tsr_optset_destroy(set);
	if (rc == -ENOMEM) {
		tsr_sbuf_printf(out, "out of memory");
		return -ENOMEM;
	}
	if (rc < 0) {
		tsr_sbuf_printf(out, "%s", err);
		return -EINVAL;
	}
	return 0;
}

static void
handle_cmd(struct mon *mon, struct tsr_conn *c, struct tsr_msg *msg, uint64_t now)
{
	struct waiter *w = tsr_xcalloc(1, sizeof(*w));
	struct tsr_sbuf out;
	char err[256];
	int kind, rc;

	tsr_sbuf_init(&out);
	if ((rc = tsr_monmsg_cmd_decode(msg->front, msg->front_len, &w->cmd, err,
					sizeof(err))) < 0) {
		tsr_log_rated(&refusal_lines, TSR_SUB_MON, TSR_LOG_WARN, "%s: bad command: %s",
			      tsr_conn_peer(c), err);
		/* the decoder keeps the tid it read (monmsg.h): answered
		 * with it, the client learns why at once instead of waiting
		 * out its timeout */
		reply(c, w->cmd.tid, rc == -ENOMEM ? -ENOMEM : -EINVAL, err, NULL);
		goto done;
	}
	if ((kind = state_classify((int)w->cmd.argc, w->cmd.argv, &out)) < 0) {
		reply(c, w->cmd.tid, kind, tsr_sbuf_str(&out), NULL);
		goto done;
	}
	if (cmd_allowed(mon, kind, &w->cmd, tsr_conn_peer_auth(c), err,
			sizeof(err)) < 0) {
		tsr_log_rated(&refusal_lines, TSR_SUB_MON, TSR_LOG_WARN, "%s: %s",
			      tsr_conn_peer(c), err);
		reply(c, w->cmd.tid, -EACCES, err, NULL);
		goto done;
	}
	if (tsr_raft_role(mon->raft) != TSR_RAFT_LEADER) {
		redirect(mon, c, w->cmd.tid, now);
		goto done;
	}
	if (kind == 1 && (rc = check_plugins(mon, &w->cmd, &out)) < 0) {
		reply(c, w->cmd.tid, rc, tsr_sbuf_str(&out), NULL);
		goto done;
	}
	if (kind == 2) {
		handle_beacon(mon, c, &w->cmd, now);
		goto done;
	}
	if (kind == 3) {
		handle_mds_beacon(mon, c, &w->cmd, now);
		goto done;
	}
	w->conn = c;
	tsr_conn_get(c);
	if (kind == 0) {
		/* a read: at once with a lease, or when one comes */
		w->deadline = now + 2 * mon->lease_ns;
		w->next = mon->reads;
		mon->reads = w;
		w = NULL;
		goto done;
	}
	w->deadline = now + PROPOSE_TIMEOUT_NS;
	if (decisions(mon) && !mon->proj_valid) {
		/* a new leader applying its log: proposed once it has */
		w->next = mon->held;
		mon->held = w;
	} else {
		propose_change(mon, w);
	}
	w = NULL;
done:
	if (w)
		waiter_free(w);
	tsr_sbuf_release(&out);
}

static void
propose_change(struct mon *mon, struct waiter *w)
{
	int rc = propose(mon, w->cmd.client, w->cmd.tid, (int)w->cmd.argc, w->cmd.argv,
			 &w->index);

	if (rc < 0) {
		reply(w->conn, w->cmd.tid, rc == -EAGAIN ? -EAGAIN : rc,
		      rc == -EAGAIN ? "the leadership is changing; retry" : strerror(-rc),
		      NULL);
		waiter_free(w);
		return;
	}
	w->term = tsr_raft_term(mon->raft);
	w->next = mon->changes;
	mon->changes = w;
}

/* Reads whose lease came; changes that timed out or whose leader went. */
static void
sweep(struct mon *mon, uint64_t now)
{
	int lease = tsr_raft_role(mon->raft) == TSR_RAFT_LEADER && lease_valid(mon, now);

	for (struct waiter **p = &mon->reads; *p;) {
		struct waiter *w = *p;
		struct tsr_sbuf out;
		int rc;

		if (tsr_raft_role(mon->raft) != TSR_RAFT_LEADER) {
			redirect(mon, w->conn, w->cmd.tid, now);
		} else if (lease) {
			tsr_sbuf_init(&out);
			rc = serve_read(mon, &w->cmd, now, &out);
			reply(w->conn, w->cmd.tid, rc, tsr_sbuf_str(&out), NULL);
			tsr_sbuf_release(&out);
		} else if (now >= w->deadline) {
			char text[200];
			snprintf(text, sizeof(text), "mon.%s leads but a majority has "
				 "not confirmed it for %.1f s: not serving maps "
				 "that may be stale", mon->self->name,
				 (double)(now - w->deadline + 2 * mon->lease_ns) / 1e9);
			reply(w->conn, w->cmd.tid, -ETIMEDOUT, text, NULL);
		} else {
			p = &w->next;
			continue;
		}
		*p = w->next;
		waiter_free(w);
	}
	for (struct waiter **p = &mon->held; *p;) {
		struct waiter *w = *p;

		if (tsr_raft_role(mon->raft) != TSR_RAFT_LEADER) {
			redirect(mon, w->conn, w->cmd.tid, now);
		} else if (now >= w->deadline) {
			reply(w->conn, w->cmd.tid, -EAGAIN, "the leader has not "
			      "applied its log within 5 s; not proposed, retry", NULL);
		} else {
			p = &w->next;
			continue;
		}
		*p = w->next;
		waiter_free(w);
	}
	for (struct waiter **p = &mon->changes; *p;) {
		struct waiter *w = *p;

		if (tsr_raft_term(mon->raft) != w->term ||
		    tsr_raft_role(mon->raft) != TSR_RAFT_LEADER) {
			/* it may still commit under the next leader: the
			 * client sends it again, and it is applied once.
			 * -EINPROGRESS, not -EAGAIN: it is in a log, so its
			 * outcome is not known yet (monc.h) */
			reply(w->conn, w->cmd.tid, -EINPROGRESS, "the leadership "
			      "changed before the change committed; it may "
			      "still commit", leader_addr(mon));
		} else if (now >= w->deadline) {
			reply(w->conn, w->cmd.tid, -EINPROGRESS, "the change was "
			      "not committed within 5 s: no majority of monitors "
			      "answers (it may still commit when one does)", NULL);
		} else {
			p = &w->next;
			continue;
		}
		*p = w->next;
		waiter_free(w);
	}
}

/* ---- Raft ------------------------------------------------------------------*/

/* The mon_placer encoder (state.h): the map's placement plugin, from
 * plugin_dir, turns the topology into its binary map. */
static int
place_encode(void *arg, const char *plugin, const struct tsr_topology *t,
	     void **blob, size_t *len, char *err, size_t errlen)
{
	struct mon *mon = arg;
	const struct tsr_placement_ops *ops;
	struct tsr_buf out = { NULL, 0 };
	int rc;

	if (mon->pl_inst == NULL || strcmp(mon->pl_name, plugin) != 0) {
		const struct tsr_plugin *p = tsr_registry_find(
			tsr_daemon_registry(mon->d), TSR_KIND_PLACEMENT, plugin);
		if (mon->pl_inst)
			tsr_instance_destroy(mon->pl_inst);
		mon->pl_inst = NULL;
		if (p == NULL)
			return tsr_errf(err, errlen, -ENOENT, "the placement plugin "
					"'%s' is not in plugin_dir %s (every monitor "
					"needs the plugin the OSD map names)", plugin,
					tsr_conf_str(tsr_daemon_conf(mon->d), "plugin_dir"));
		tsr_core_host_init(&mon->pl_host, "placement", NULL, NULL);
		if ((rc = tsr_instance_create(p, &mon->pl_host.host, NULL, 0,
					      &mon->pl_inst, err, errlen)) < 0)
			return rc == -EINVAL ? -EIO : rc;
		tsr_strlcpy(mon->pl_name, plugin, sizeof(mon->pl_name));
	}
	ops = tsr_instance_ops(mon->pl_inst);
	err[0] = '\0';
	rc = ops->encode(tsr_instance_handle(mon->pl_inst), t, &out, err, errlen);
	if (rc < 0) {
		if (err[0] == '\0')
			snprintf(err, errlen, "%s", strerror(-rc));
		return rc == -ENOMEM ? -ENOMEM : -EINVAL;
	}
	*blob = malloc(out.len ? out.len : 1);
	if (*blob)
		memcpy(*blob, out.data, out.len);
	*len = out.len;
	if (out.data)
		mon->pl_host.host.free(mon->pl_host.host.ctx, out.data);
	return *blob ? 0 : -ENOMEM;
}

static void
apply_entry(struct mon *mon, const struct tsr_raft_entry *en)
{
	struct mon_entry me;
	struct tsr_sbuf out;
	int rc;

	uint8_t idx[16];
	for (int i = 0; i < 8; i++) {
		idx[i] = (uint8_t)(en->index >> (8 * i));
		idx[8 + i] = (uint8_t)(en->term >> (8 * i));
	}
	mon->hist_crc = tsr_crc32c(mon->hist_crc, idx, sizeof(idx));
	mon->hist_crc = tsr_crc32c(mon->hist_crc, en->data, en->len);
	mon->hist_index = en->index;
	mon->hist_term = en->term;
	if (en->len == 0 || mon->failed)
		return; /* a leader's no-op; or stopping */
	tsr_sbuf_init(&out);
	rc = state_apply_entry(&mon->st, en->data, en->len, &me, &out);
	if ((rc == -EBADMSG || mon->st.fatal) && !mon->failed) {
		LOGE("log entry %" PRIu64 " (%s): %s; stopping: applying the log on "
		     "would give this monitor other maps than the rest", en->index,
		     me.what[0] ? me.what : "?", tsr_sbuf_str(&out));
		mon->failed = 1;
		tsr_daemon_request_stop(mon->d);
	}
	LOGD("applied %" PRIu64 " (v%d): %s: %d", en->index, me.version, me.what, rc);
	for (struct waiter **p = &mon->changes; *p; p = &(*p)->next) {
		struct waiter *w = *p;
		if (w->index != en->index)
			continue;
		if (w->cmd.client == me.client && w->cmd.tid == me.tid)
			reply(w->conn, w->cmd.tid, rc, tsr_sbuf_str(&out), NULL);
		else
			reply(w->conn, w->cmd.tid, -EAGAIN, "the leadership changed "
			      "before the change committed; retry", leader_addr(mon));
		*p = w->next;
		waiter_free(w);
		break;
	}
	tsr_sbuf_release(&out);
}

/* A monitor's snapshot: the applied history's position and CRC, then the
 * maps (state.c).
 *     envelope v1 { u64 hist_index, u64 hist_term, u32 hist_crc, bytes state } */
static uint8_t *
snap_encode(struct mon *mon, size_t *len)
{
	size_t slen, m;
	uint8_t *st = state_encode(&mon->st, &slen);
	struct tsr_enc e;

	if (st == NULL)
		return NULL;
	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u64(&e, mon->hist_index);
	tsr_enc_u64(&e, mon->hist_term);
	tsr_enc_u32(&e, mon->hist_crc);
	tsr_enc_bytes(&e, st, slen);
	tsr_enc_end_struct(&e, m);
	free(st);
	if (tsr_enc_error(&e)) {
		tsr_enc_release(&e);
		return NULL;
	}
	return tsr_enc_take(&e, len);
}

/* Restore from a snapshot (install = 1) or only check that it decodes. */
static int
snap_decode(struct mon *mon, const void *p, size_t len, uint64_t index, int install)
{
	struct tsr_dec d, sub;
	struct mon_state st;
	const void *sp = NULL;
	size_t sl = 0;
	uint64_t hi, ht;
	uint32_t crc;
	uint8_t ver;

	tsr_dec_init(&d, p, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return -EBADMSG;
	hi = tsr_dec_u64(&sub);
	ht = tsr_dec_u64(&sub);
	crc = tsr_dec_u32(&sub);
	tsr_dec_bytes(&sub, &sp, &sl, 1u << 30);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) || hi != index)
		return -EBADMSG;
	state_init(&st);
	if (state_decode(&st, sp, sl) < 0)
		return -EBADMSG;
	if (!install) {
		state_free(&st);
		return 0;
	}
	st.placer = mon->st.placer;
	state_free(&mon->st);
	mon->st = st;
	mon->hist_index = hi;
	mon->hist_term = ht;
	mon->hist_crc = crc;
	mon->snap_index = hi;
	return 0;
}

/* Every snap_every entries applied: snapshot the maps, compact the log. */
static void
maybe_compact(struct mon *mon)
{
	char err[512];
	uint8_t *b;
	size_t len;

	if (mon->failed)
		return; /* its state may be wrong: never make it the snapshot */
	if (mon->hist_index < mon->snap_index + mon->snap_every || mon->hist_index == 0)
		return;
	if ((b = snap_encode(mon, &len)) == NULL) {
		LOGE("encoding a snapshot at %" PRIu64 ": out of memory", mon->hist_index);
		return;
	}
	if (tsr_raftstore_compact(&mon->rs, mon->hist_index, mon->hist_term, b, len,
				  err, sizeof(err)) < 0) {
		LOGE("%s; the log is not compacted", err);
	} else if (tsr_raft_compact(mon->raft, mon->hist_index, b, len) == 0) {
		LOGD("snapshot at %" PRIu64 " (%zu bytes); log compacted",
		     mon->hist_index, len);
		mon->snap_index = mon->hist_index;
	}
	free(b);
}

static int
process_ready(struct mon *mon, uint64_t now)
{
	struct tsr_raft_ready rd;
	char err[512];

	while (tsr_raft_ready(mon->raft, &rd)) {
		if (tsr_raftstore_save(&mon->rs, &rd, err, sizeof(err)) < 0) {
			LOGE("%s; stopping: a monitor that cannot persist must not "
			     "vote or acknowledge", err);
			mon->failed = 1;
			tsr_daemon_request_stop(mon->d);
			return -EIO;
		}
		for (size_t i = 0; i < rd.nmsgs; i++)
			send_raft(mon, &rd.msgs[i], now);
		if (rd.snapshot_index) {
			/* checked in handle_raft before Raft saw it */
			if (snap_decode(mon, rd.snapshot, rd.snapshot_len,
					rd.snapshot_index, 1) < 0) {
				LOGE("the leader's snapshot at %" PRIu64 " does not decode; "
				     "stopping", rd.snapshot_index);
				mon->failed = 1;
				tsr_daemon_request_stop(mon->d);
				return -EIO;
			}
			LOGI("installed the leader's snapshot at index %" PRIu64
			     " (term %" PRIu64 ", %zu bytes)", rd.snapshot_index,
			     rd.snapshot_term, rd.snapshot_len);
		}
		for (size_t i = 0; i < rd.ncommitted; i++)
			apply_entry(mon, &rd.committed[i]);
		tsr_raft_advance(mon->raft, &rd);
		maybe_compact(mon);
	}
	if (tsr_raft_leader(mon->raft) != 0)
		mon->last_leader_ns = now;
	if (mon->rejoining && !tsr_raft_rejoining(mon->raft)) {
		mon->rejoining = 0;
		LOGI("caught up with the leader (committed %" PRIu64 "): mon.%s votes "
		     "again", tsr_raft_commit(mon->raft), mon->self->name);
	}
	proj_update(mon);
	return 0;
}

/* Raft refused a message (tsr_raft_step): one WARN line naming the
 * sender and why, at a rate per sender, as any peer can send these at
 * will (raft_refused[TSR_MON_MAX]: a sender that is not a member). */
static void
raft_refused(struct mon *mon, const struct tsr_raft_msg *rm, const char *why)
{
	const struct tsr_mon_member *f = tsr_mon_members_by_id(&mon->mem, rm->from);
	const char *type = tsr_raft_msg_name(rm->type) ? tsr_raft_msg_name(rm->type)
						       : "message";

	if (f)
		tsr_log_rated(&mon->raft_refused[f->id - 1], TSR_SUB_MON, TSR_LOG_WARN,
			      "raft %s from mon.%s refused: %s; dropped", type,
			      f->name, why);
	else
		tsr_log_rated(&mon->raft_refused[TSR_MON_MAX], TSR_SUB_MON,
			      TSR_LOG_WARN, "raft %s from node %" PRIu64 " refused: "
			      "%s; dropped", type, rm->from, why);
}

static void
handle_raft(struct mon *mon, struct tsr_conn *c, struct tsr_msg *m)
{
	const struct tsr_mon_member *sender;
	struct tsr_raft_msg rm;
	uint32_t fp;
	uint64_t features;
	char err[256];
	int rc;

	if (tsr_monmsg_raft_decode(m->front, m->front_len, &fp, &features, &rm, err,
				   sizeof(err)) < 0) {
		tsr_log_rated(&refusal_lines, TSR_SUB_MON, TSR_LOG_WARN,
			      "%s: bad raft message: %s", tsr_conn_peer(c), err);
		return;
	}
	/* on_raft let only member monitors through; one may not speak for
	 * another */
	sender = peer_member(mon, tsr_conn_peer_auth(c));
	if (sender == NULL || sender->id != rm.from) {
		tsr_log_rated(&refusal_lines, TSR_SUB_MON, TSR_LOG_WARN,
			      "%s: a Raft message claiming to come from node %"
			      PRIu64 "; dropped", tsr_conn_peer(c), rm.from);
		tsr_monmsg_raft_free(&rm);
		return;
	}
	mon->features[sender->id - 1] = features;
	if (m->data_len) {
		/* only a snapshot carries data, and it must decode before Raft
		 * takes it as the state up to its index */
		if (rm.type != TSR_RAFT_SNAPSHOT || fp != mon->mem.fp ||
		    snap_decode(mon, m->data_iov[0].iov_base, m->data_len, rm.index, 0) < 0) {
			LOGW("raft %s from node %" PRIu64 " with %zu bytes of data that "
			     "are not a snapshot of index %" PRIu64 "; dropped",
			     tsr_raft_msg_name(rm.type) ? tsr_raft_msg_name(rm.type) : "?",
			     rm.from, m->data_len, rm.index);
			tsr_monmsg_raft_free(&rm);
			return;
		}
		rm.snap = m->data_iov[0].iov_base;
		rm.snap_len = m->data_len;
	}
	if (fp != mon->mem.fp) {
		const struct tsr_mon_member *f = tsr_mon_members_by_id(&mon->mem, rm.from);
		static uint64_t last;
		uint64_t now = tsr_mono_ns();
		if (now - last > 5000000000ull) {
			last = now;
			LOGE("a monitor claiming to be %s%s has another mon_members "
			     "(fingerprint %08x, ours %08x: \"%s\"); ignoring it until "
			     "every monitor's configuration lists the same monitors",
			     f ? "mon." : "node ", f ? f->name : "?", fp, mon->mem.fp,
			     mon->mem.canon);
		}
		tsr_monmsg_raft_free(&rm);
		return;
	}
	if (rm.from >= 1 && rm.from <= mon->mem.n &&
	    (mon->isolated & (1u << (rm.from - 1)))) {
		tsr_monmsg_raft_free(&rm);
		return;
	}
	/* Raft refuses, and never adopts, what a member could not have
	 * sent: a term or index out of bounds (raft.h, "Hostile input") */
	if ((rc = tsr_raft_step(mon->raft, &rm, err, sizeof(err))) < 0)
		raft_refused(mon, &rm, err);
	tsr_monmsg_raft_free(&rm);
}

static void *
mon_main(void *arg)
{
	struct mon *mon = arg;
	uint64_t next_tick = tsr_mono_ns() + mon->tick_ns;

	pthread_mutex_lock(&mon->qlock);
	while (!mon->stop) {
		uint64_t now = tsr_mono_ns();
		struct item *it;

		if (mon->head == NULL && now < next_tick) {
			tsr_cond_wait_until(&mon->qcond, &mon->qlock, next_tick);
			continue;
		}
		it = mon->head;
		mon->head = NULL;
		mon->tail = &mon->head;
		mon->queued = 0;
		pthread_mutex_unlock(&mon->qlock);

		pthread_mutex_lock(&mon->lock);
		now = tsr_mono_ns();
		if (now >= next_tick) {
			/* ticks on the monotonic clock; after a long stall,
			 * enough to time out once, not hundreds */
			unsigned n = 0;
			while (now >= next_tick && n++ < 3 * mon->e_ticks) {
				tsr_raft_tick(mon->raft);
				next_tick += mon->tick_ns;
			}
			if (now >= next_tick)
				next_tick = now + mon->tick_ns;
		}
		while (it) {
			struct item *next = it->next;
			if (!mon->failed) {
				if (it->kind == TSR_MSG_MON_RAFT)
					handle_raft(mon, it->conn, it->msg);
				else if (it->kind == TSR_MSG_MON_CMD)
					handle_cmd(mon, it->conn, it->msg, now);
				else if (it->kind == TSR_MSG_MON_SUB)
					handle_sub(mon, it->conn, it->msg);
				process_ready(mon, now); /* on failure: stopping */
			}
			if (it->kind == -1)
				drop_subs(mon, it->conn);
			if (it->kind == -1)
				for (size_t i = 0; i < mon->mem.n; i++)
					if (mon->peer[i] == it->conn) {
						tsr_conn_put(mon->peer[i]);
						mon->peer[i] = NULL;
					}
			if (it->conn)
				tsr_conn_put(it->conn);
			if (it->msg)
				tsr_msg_free(it->msg, 0);
			free(it);
			it = next;
		}
		if (!mon->failed) {
			process_ready(mon, now);
			sweep(mon, now);
			check_failures(mon, now);
			check_mds(mon, now);
			process_ready(mon, now);
			push_subs(mon);
		}
		pthread_mutex_unlock(&mon->lock);
		pthread_mutex_lock(&mon->qlock);
	}
	pthread_mutex_unlock(&mon->qlock);
	return NULL;
}

/* ---- Life ------------------------------------------------------------------*/

static const struct tsr_conf_opt mon_options[] = {
	{ { .name = NULL }, 0, 0 }
};

/* "inject isolate NAME..." / "inject isolate none": drop every Raft
 * message to and from those monitors, as a network partition would (the
 * tests' partitions; clients still reach this monitor). */
static int
cmd_inject(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct mon *mon = arg;
	uint32_t mask = 0;

	if (argc < 2 || strcmp(argv[0], "isolate") != 0) {
		tsr_sbuf_printf(out, "usage: inject isolate NAME... | inject isolate none\n");
		return -EINVAL;
	}
	for (int i = 1; i < argc; i++) {
		const struct tsr_mon_member *m = tsr_mon_members_find(&mon->mem, argv[i]);
		if (strcmp(argv[i], "none") == 0)
			continue;
		if (m == NULL || m == mon->self) {
			tsr_sbuf_printf(out, "'%s' is not another monitor (%s)\n", argv[i],
					mon->mem.canon);
			return -EINVAL;
		}
		mask |= 1u << (m->id - 1);
	}
	pthread_mutex_lock(&mon->lock);
	mon->isolated = mask;
	pthread_mutex_unlock(&mon->lock);
	LOGW("fault injection: Raft messages to and from %s%s are dropped",
	     mask ? "" : "no monitor", mask ? argv[1] : "");
	tsr_sbuf_printf(out, "{\"isolated\": %u}\n", mask);
	return 0;
}

static int
open_store(struct mon *mon, char *err, size_t errlen)
{
	struct tsr_raft_hardstate hs;
	struct tsr_raft_entry *log = NULL;
	size_t nlog = 0;
	void *val = NULL;
	size_t vlen = 0;
	char path[600];
	int rc;

	if (mkdir(mon->data, 0750) < 0 && errno != EEXIST)
		return tsr_errf(err, errlen, -errno, "mon_data %s: %s", mon->data,
				strerror(errno));
	snprintf(path, sizeof(path), "%s/store", mon->data);
	if ((rc = tsr_kv_open(path, TSR_KV_CREATE, &mon->kv, err, errlen)) < 0)
		return rc;
	/* the member set this store was made with must be the one configured */
	rc = tsr_kv_get(mon->kv, "mon/members", 11, &val, &vlen, err, errlen);
	if (rc == -ENOENT) {
		struct tsr_kv_batch *b = tsr_kv_batch_create();
		tsr_kv_batch_put(b, "mon/members", 11, mon->mem.canon, strlen(mon->mem.canon));
		rc = tsr_kv_write(mon->kv, b, 1, err, errlen);
		tsr_kv_batch_destroy(b);
		if (rc < 0)
			return rc;
	} else if (rc < 0) {
		return rc;
	} else {
		int same = vlen == strlen(mon->mem.canon) &&
			   memcmp(val, mon->mem.canon, vlen) == 0;
		if (!same) {
			rc = tsr_errf(err, errlen, -EINVAL, "%s: this store was made "
				      "for the monitors \"%.*s\"; mon_members now says "
				      "\"%s\" (changing the monitor set is not "
				      "supported: restore the old mon_members)", path,
				      (int)(vlen > 300 ? 300 : vlen), (const char *)val,
				      mon->mem.canon);
			tsr_kv_free(val);
			return rc;
		}
		tsr_kv_free(val);
	}
	mon->rs.kv = mon->kv;
	snprintf(mon->rs.path, sizeof(mon->rs.path), "%s", path);
	if ((rc = tsr_raftstore_load(&mon->rs, &hs, &log, &nlog, err, errlen)) < 0)
		return rc;

	uint64_t peers[TSR_MON_MAX];
	for (size_t i = 0; i < mon->mem.n; i++)
		peers[i] = mon->mem.m[i].id;
	if (mon->rs.snap_index &&
	    snap_decode(mon, mon->rs.snap, mon->rs.snap_len, mon->rs.snap_index, 1) < 0) {
		tsr_raftstore_free_log(log, nlog);
		return tsr_errf(err, errlen, -EIO, "%s: the stored snapshot (index %"
				PRIu64 ") does not decode", path, mon->rs.snap_index);
	}
	struct tsr_raft_conf c = {
		.id = mon->self->id, .peers = peers, .npeers = mon->mem.n,
		.election_ticks = mon->e_ticks, .heartbeat_ticks = 1,
		.seed = tsr_now_ns(), .hs = hs, .log = log, .nlog = nlog,
		.snap_index = mon->rs.snap_index, .snap_term = mon->rs.snap_term,
		.snap = mon->rs.snap, .snap_len = mon->rs.snap_len,
		/* the maps: the snapshot, then the log after it replayed */
		.applied = mon->rs.snap_index,
	};
	rc = tsr_raft_create(&c, &mon->raft);
	tsr_raftstore_free_log(log, nlog);
	if (rc < 0 && hs.term > TSR_RAFT_TERM_MAX)
		return tsr_errf(err, errlen, -EIO, "%s: the stored Raft term %" PRIu64
				" is above 2^62, the most a term may reach: the store "
				"is damaged, or took a forged term before monitors "
				"refused them", path, hs.term);
	if (rc < 0)
		return tsr_errf(err, errlen, -EIO, "%s: the stored Raft state is "
				"inconsistent (term %" PRIu64 ", commit %" PRIu64 ", %zu "
				"entries)", path, hs.term, hs.commit, nlog);
	LOGI("store %s: term %" PRIu64 ", a snapshot at %" PRIu64 ", %zu log entries "
	     "after it, %" PRIu64 " committed", path, hs.term, mon->rs.snap_index,
	     nlog, hs.commit);
	if ((mon->rejoining = tsr_raft_rejoining(mon->raft)))
		LOGI("store %s holds no Raft state (a new monitor, or one whose store "
		     "was lost): mon.%s votes only once a leader has brought it up "
		     "to date, as it may have voted and acknowledged entries before",
		     path, mon->self->name);
	return 0;
}

static int
mon_start(struct tsr_daemon *d, char *err, size_t errlen)
{
	struct tsr_conf *conf = tsr_daemon_conf(d);
	struct mon *mon = tsr_xcalloc(1, sizeof(*mon));
	struct tsr_msgr_events ev = { .fault = on_fault };
	struct tsr_msgr_opts o;
	char where[300];
	int rc;

	mon->d = d;
	tsr_daemon_set_priv(d, mon);
	pthread_mutex_init(&mon->qlock, NULL);
	pthread_mutex_init(&mon->lock, NULL);
	tsr_cond_init_mono(&mon->qcond);
	mon->tail = &mon->head;
	state_init(&mon->st);
	mon->st.placer.encode = place_encode;
	mon->st.placer.arg = mon;
	snprintf(where, sizeof(where), "%s", tsr_conf_where(conf, "mon_members"));
	if ((rc = tsr_mon_members_parse(tsr_conf_str(conf, "mon_members"), where,
					&mon->mem, err, errlen)) < 0)
		return rc;
	if ((mon->self = tsr_mon_members_find(&mon->mem, tsr_daemon_id(d))) == NULL)
		return tsr_errf(err, errlen, -EINVAL, "%s: mon_members has no monitor "
				"'%s' (it lists %s)", where, tsr_daemon_id(d),
				mon->mem.canon);
	mon->tick_ns = (uint64_t)tsr_conf_int(conf, "mon_tick") * 1000000u;
	mon->e_ticks = (unsigned)tsr_conf_int(conf, "mon_election_ticks");
	/* the lease ends two ticks before anyone may vote for another
	 * leader: room for timer jitter and clock-rate differences */
	mon->lease_ns = (mon->e_ticks - 2) * mon->tick_ns;
	mon->snap_every = (uint64_t)tsr_conf_int(conf, "mon_snapshot_every");
	mon->grace_ns = (uint64_t)tsr_conf_int(conf, "mon_osd_beacon_grace") * 1000000u;
	mon->mds_grace_ns = (uint64_t)tsr_conf_int(conf, "mon_mds_beacon_grace") * 1000000u;
	mon->down_out_ns = (uint64_t)tsr_conf_int(conf, "mon_osd_down_out_interval") * 1000000u;
	mon->min_reporters = (unsigned)tsr_conf_int(conf, "mon_osd_min_down_reporters");
	mon->watch = tsr_xcalloc(MON_MAX_OSDS, sizeof(*mon->watch));
	snprintf(mon->data, sizeof(mon->data), "%s", tsr_conf_str(conf, "mon_data"));
	if ((rc = open_store(mon, err, errlen)) < 0)
		return rc;
	for (size_t i = 0; i <= TSR_MON_MAX; i++)
		tsr_log_rate_init(&mon->raft_refused[i], 5, 10000);
	if ((rc = tsr_msgr_opts_from_conf(conf, &o, err, errlen)) < 0)
		return rc;
	o.entity_type = TSR_ENTITY_MON;
	o.entity_id = mon->self->id;
	o.bind = mon->self->addr;
	/* a monitor checks every entity's key, so it holds the secret */
	o.auth = tsr_daemon_auth(d);
	if (o.auth == NULL || !tsr_auth_has_secret(o.auth))
		return tsr_errf(err, errlen, -ENOKEY, "the keyring %s holds no "
				"cluster secret: a monitor needs it to check every "
				"daemon's and client's key (tessera auth init makes "
				"one; see doc/operations.md, \"Keys\")",
				tsr_conf_str(conf, "keyring"));
	ev.arg = mon;
	if ((rc = tsr_msgr_create(&o, &ev, &mon->msgr, err, errlen)) < 0)
		return rc;
	tsr_msgr_register(mon->msgr, TSR_MSG_MON_RAFT, on_raft, mon, TSR_MSGR_INLINE);
	tsr_msgr_register(mon->msgr, TSR_MSG_MON_CMD, on_cmd, mon, TSR_MSGR_INLINE);
	tsr_msgr_register(mon->msgr, TSR_MSG_MON_SUB, on_sub, mon, TSR_MSGR_INLINE);
	mon->last_leader_ns = tsr_mono_ns();
	if ((rc = pthread_create(&mon->thread, NULL, mon_main, mon)) != 0)
		return tsr_errf(err, errlen, -rc, "starting the monitor thread: %s",
				strerror(rc));
	mon->thread_started = 1;
	if (tsr_daemon_asok(d))
		tsr_asok_register(tsr_daemon_asok(d), "inject", "inject isolate NAME...|none: "
				  "drop Raft messages to and from monitors (tests)",
				  cmd_inject, mon);
	tsr_msgr_start(mon->msgr);
	LOGI("mon.%s listening on %s, one of %zu monitors (%s)", mon->self->name,
	     mon->self->addr, mon->mem.n, mon->mem.canon);
	return 0;
}

static void
free_waiters(struct waiter *w)
{
	while (w) {
		struct waiter *n = w->next;
		waiter_free(w);
		w = n;
	}
}

static void
mon_stop(struct tsr_daemon *d)
{
	struct mon *mon = tsr_daemon_priv(d);

	if (mon == NULL)
		return;
	if (mon->thread_started) {
		pthread_mutex_lock(&mon->qlock);
		mon->stop = 1;
		pthread_cond_signal(&mon->qcond);
		pthread_mutex_unlock(&mon->qlock);
		pthread_join(mon->thread, NULL);
	}
	for (size_t i = 0; i < mon->mem.n; i++)
		if (mon->peer[i]) {
			tsr_conn_close(mon->peer[i]);
			tsr_conn_put(mon->peer[i]);
		}
	free_waiters(mon->changes);
	free_waiters(mon->reads);
	free_waiters(mon->held);
	proj_drop(mon);
	while (mon->subs) {
		struct sub *n = mon->subs->next;
		sub_free(mon->subs);
		mon->subs = n;
	}
	tsr_msgr_destroy(mon->msgr);
	for (struct item *it = mon->head, *n; it; it = n) {
		n = it->next;
		if (it->conn)
			tsr_conn_put(it->conn);
		if (it->msg)
			tsr_msg_free(it->msg, 0);
		free(it);
	}
	tsr_raft_destroy(mon->raft);
	tsr_raftstore_close(&mon->rs);
	if (mon->kv)
		tsr_kv_close(mon->kv);
	state_free(&mon->st);
	if (mon->pl_inst)
		tsr_instance_destroy(mon->pl_inst);
	free(mon->watch);
	pthread_mutex_destroy(&mon->qlock);
	pthread_mutex_destroy(&mon->lock);
	pthread_cond_destroy(&mon->qcond);
	free(mon);
	tsr_daemon_set_priv(d, NULL);
}

/* CRC32C of both maps' encodings: equal on monitors whose maps are the
 * same, byte for byte (0: out of memory). */
static uint32_t
maps_crc(const struct mon_state *st)
{
	struct tsr_enc e;
	uint32_t crc = 0;

	tsr_enc_init(&e);
	tsr_osdmap_encode(&e, &st->osdmap);
	tsr_mdsmap_encode(&e, &st->mdsmap);
	if (!tsr_enc_error(&e))
		crc = tsr_crc32c(0, e.buf, e.len);
	tsr_enc_release(&e);
	return crc;
}

static void
mon_status(struct tsr_daemon *d, struct tsr_sbuf *out)
{
	struct mon *mon = tsr_daemon_priv(d);
	uint64_t now = tsr_mono_ns();

	if (mon == NULL || mon->raft == NULL)
		return;
	pthread_mutex_lock(&mon->lock);
	tsr_sbuf_printf(out, ",\n  \"role\": \"%s\",\n  \"lease\": %s,\n  "
			"\"rejoining\": %s,\n  \"mon\": ",
			tsr_raft_role(mon->raft) == TSR_RAFT_LEADER ? "leader"
			: tsr_raft_role(mon->raft) == TSR_RAFT_CANDIDATE ? "candidate"
									 : "follower",
			lease_valid(mon, now) ? "true" : "false",
			tsr_raft_rejoining(mon->raft) ? "true" : "false");
	mon_stat(mon, now, out);
	tsr_sbuf_printf(out, ",\n  \"osdmap_epoch\": %" PRIu64 ",\n  \"mdsmap_epoch\": %"
			PRIu64 ",\n  \"maps_crc\": %u,\n  \"applied\": %" PRIu64
			",\n  \"applied_index\": %" PRIu64 ",\n  \"history_crc\": %u,"
			"\n  \"decisions\": %s,\n  \"isolated\": %u", mon->st.osdmap.epoch,
			mon->st.mdsmap.epoch, maps_crc(&mon->st), mon->st.applied,
			mon->hist_index, mon->hist_crc, decisions(mon) ? "true" : "false",
			mon->isolated);
	pthread_mutex_unlock(&mon->lock);
}

static const struct tsr_daemon_def mon_def = {
	.type = "mon",
	.summary = "Tessera monitor: keeps the cluster maps, replicated by Raft.",
	.options = mon_options,
	.start = mon_start,
	.stop = mon_stop,
	.status = mon_status,
};

int
main(int argc, char **argv)
{
	return tsr_daemon_main(argc, argv, &mon_def);
}
