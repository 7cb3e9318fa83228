/* mon.c — tessera-mon, a monitor: one of the 1, 3 or 5 daemons that keep
 * the cluster maps, replicated by Raft (core/raft) over the messenger.
 *
 * Threads.  The messenger's I/O threads decode what arrives and queue it
 * (inline handlers that never block); the daemon's event loop owns the
 * Raft node, the store and the maps: a timer ticks Raft on the monotonic
 * clock, and a post drains the queue — steps Raft with the queued
 * messages, serves the queued commands, and carries out each ready batch
 * (persist and sync, send, apply, advance).  The same loop serves the
 * admin socket and the signals; the monitor has no thread of its own.
 *
 * Commands.  A change goes into the Raft log on the leader and is answered
 * once applied (state.c); a follower answers "ask the leader at ADDR".  A
 * read is served by the leader while it holds its lease (raft.h): a
 * majority answered its heartbeats within the last lease period, so no
 * other leader can exist and its maps are the latest.  A monitor without
 * a leader, or a leader without a lease, says so; it never serves maps it
 * cannot prove current.
 *
 * The parts: this file (the queue, sending, commands and reads, Raft, the
 * daemon's life), propose.c (decisions on the leader's projected state),
 * subs.c (map subscriptions), watch.c (OSD and MDS beacons, failure
 * detection, MDS ranks), pgstats.c (the primaries' PG reports),
 * placemove.c (what a new placement plugin would move), state.c (the
 * replicated maps); mon.h ties them.
 */
#include "mon.h"
#include "auth/auth.h"
#include "event/loop.h"
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

/* ---- Queue (I/O threads) ---------------------------------------------------*/

/* The drain posted to the loop.  It outlives the monitor when the loop
 * still holds it at stop: the loop runs its pending posts when it is
 * destroyed, after mon_stop has freed the monitor, so mon_stop leaves it
 * behind with mon = NULL and the post frees it. */
struct mon_wake {
	struct mon *mon;             /* NULL: stopped */
	int posted;                  /* a drain is queued on the loop (qlock) */
};

static void
free_wake(void *arg)
{
	free(arg);
}

static void drain(void *arg);

/* Queue it for the loop, and post a drain unless one is queued already:
 * one post per burst, however many items it brings. */
static void
append(struct mon *mon, struct item *it)
{
	int post;

	pthread_mutex_lock(&mon->qlock);
	*mon->tail = it;
	mon->tail = &it->next;
	post = !mon->wake->posted;
	mon->wake->posted = 1;
	pthread_mutex_unlock(&mon->qlock);
	if (post && tsr_loop_post(mon->loop, drain, mon->wake) < 0) {
		/* out of memory: the next tick drains it */
		pthread_mutex_lock(&mon->qlock);
		mon->wake->posted = 0;
		pthread_mutex_unlock(&mon->qlock);
	}
}

static void
enqueue(struct mon *mon, int kind, struct tsr_conn *c, struct tsr_msg *m)
{
	struct item *it;

	pthread_mutex_lock(&mon->qlock);
	if (mon->queued >= QUEUE_MAX) {
		/* the loop is behind (a slow disk): Raft copes with a
		 * lost message, a client is told to come back */
		int log = mon->refused++ % 1000 == 0;
		pthread_mutex_unlock(&mon->qlock);
		if (log)
			LOGW("%zu messages wait for the monitor's loop: refusing more "
			     "(%" PRIu64 " so far)", (size_t)QUEUE_MAX, mon->refused);
		if (kind == TSR_MSG_MON_CMD) {
			struct tsr_mon_cmd cmd;
			char err[64];
			if (tsr_monmsg_cmd_decode(m->front, m->front_len, &cmd, err,
						  sizeof(err)) == 0) {
				mon_reply(c, cmd.tid, -EBUSY, "the monitor is overloaded; retry",
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
	append(mon, it);
}

/* Refusals a peer can cause at will, logged at a rate (log.h). */
struct tsr_log_rate mon_refusal_lines = TSR_LOG_RATE_INIT(10, 10000);

/* What this monitor says of itself in its Raft messages. */
static const struct tsr_mon_peer_info mon_self_info = {
	.features = TSR_MON_FEATURES, .version = TSR_VERSION,
};

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
		tsr_log_rated(&mon_refusal_lines, TSR_SUB_MON, TSR_LOG_WARN,
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

/* MON_OSD_BOOT, MON_OSD_BEACON, MON_MDS_BEACON */
static void
on_daemon(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	enqueue(arg, (int)m->type, c, m);
}

/* ---- Sending ------------------------------------------------------------------*/

void
mon_reply(struct tsr_conn *c, uint64_t tid, int status, const char *text,
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

void
mon_free_data(void *arg, int result)
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
	tsr_monmsg_raft_encode(&e, mon->mem.fp, &mon_self_info, &copy);
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
		tsr_msg_set_data(m, &iov, 1, mon_free_data, iov.iov_base);
	}
	/* Raft copes with loss: a full queue drops the message.  A session
	 * that already failed (its fault event may have come before we held
	 * the handle) is dropped here: the next send reconnects. */
	size_t front = m->front_len, data = m->data_len;
	int rc = tsr_conn_send(mon->peer[i], m, TSR_SEND_NOWAIT);
	if (rc == -EINVAL) {
		/* larger than a message may be (ms_max_front, ms_max_data):
		 * the session is fine, and sending it again will not help */
		tsr_log_rated(&mon_refusal_lines, TSR_SUB_MON, TSR_LOG_ERROR,
			      "raft %s to mon.%s (%zu + %zu bytes) is larger than "
			      "a message may be (ms_max_front, ms_max_data); not sent",
			      tsr_raft_msg_name(copy.type), to->name, front, data);
	} else if (rc < 0 && rc != -EAGAIN) {
		tsr_conn_close(mon->peer[i]);
		tsr_conn_put(mon->peer[i]);
		mon->peer[i] = NULL;
	}
}

/* A lossy session ended.  The loop, which alone touches
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
	append(mon, it);
}

/* ---- Commands ------------------------------------------------------------------*/

const char *
mon_leader_addr(const struct mon *mon)
{
	const struct tsr_mon_member *l =
		tsr_mon_members_by_id(&mon->mem, tsr_raft_leader(mon->raft));

	return l && l != mon->self ? l->addr : NULL;
}

/* Not the leader: point the client at it, or say there is none. */
void
mon_redirect(struct mon *mon, struct tsr_conn *c, uint64_t tid, uint64_t now)
{
	char text[256];
	const char *l = mon_leader_addr(mon);

	if (l) {
		snprintf(text, sizeof(text), "mon.%s is not the leader; ask %s",
			 mon->self->name, l);
		mon_reply(c, tid, -EAGAIN, text, l);
		return;
	}
	snprintf(text, sizeof(text), "mon.%s is not in a quorum: no leader for "
		 "%.1f s (are a majority of the %zu monitors up and reachable?)",
		 mon->self->name, (double)(now - mon->last_leader_ns) / 1e9, mon->mem.n);
	mon_reply(c, tid, -ENOTCONN, text, NULL);
}

/* Does the leader hold its lease (raft.h)?  process_ready() has applied
 * everything committed before anything is served, so its maps are the
 * latest. */
int
mon_lease_valid(struct mon *mon, uint64_t now)
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
	tsr_sbuf_reset(&d);
	n = watch_versions(mon, now, NULL, &d);
	if (mon->versions_differ_since &&
	    now - mon->versions_differ_since >= mon->versions_grace_ns)
		state_health_raise(h, MON_HEALTH_VERSIONS_DIFFER, tsr_sbuf_str(&d),
				   "%zu software versions have run for %.0f s", n,
				   (double)(now - mon->versions_differ_since) / 1e9);
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
	if (strcmp(argv[0], "versions") == 0) {
		tsr_sbuf_printf(out, "{");
		watch_versions(mon, now, out, NULL);
		tsr_sbuf_printf(out, "}");
		return 0;
	}
	if (strcmp(argv[0], "health") == 0 || strcmp(argv[0], "status") == 0) {
		struct mon_health h;
		size_t nin = 0, nup = 0;

		state_health_init(&h);
		mon_health(mon, now, &h);
		state_health(&mon->st, &h);
		mon_pgstats_health(mon, now, &h);
		mon_pgstats_osd_health(mon, now, mon->nearfull_ratio, mon->full_ratio, &h);
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
		tsr_sbuf_printf(out, ", \"pgs\": ");
		mon_pgstats_status(mon, now, out);
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
	if (strcmp(argv[0], "pg") == 0 ||
	    (argc == 2 && strcmp(argv[0], "osd") == 0 && strcmp(argv[1], "df") == 0))
		return mon_pgstats_read(mon, argc, argv, now, out);
	return state_read(&mon->st, argc, argv, out);
}

void
mon_waiter_free(struct waiter *w)
{
	tsr_monmsg_cmd_free(&w->cmd);
	if (w->conn)
		tsr_conn_put(w->conn);
	free(w->alive);
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
	if (cmd->argc >= 2 && strcmp(cmd->argv[0], "osd") == 0 &&
	    (strcmp(cmd->argv[1], "boots") == 0 || strcmp(cmd->argv[1], "alives") == 0)) {
		snprintf(why, len, "permission denied: 'osd %s' is the leader's own "
			 "change (an OSD %s itself)", cmd->argv[1],
			 cmd->argv[1][0] == 'b' ? "boots" : "asks for up_thru and PG temp");
		return -EACCES;
	}
	if (cmd->argc >= 3 && strcmp(cmd->argv[0], "osd") == 0 &&
	    (strcmp(cmd->argv[1], "boot") == 0 || strcmp(cmd->argv[1], "beacon") == 0))
		type = "osd";
	else if (cmd->argc >= 3 && strcmp(cmd->argv[0], "mds") == 0 &&
		 (strcmp(cmd->argv[1], "boot") == 0 || strcmp(cmd->argv[1], "beacon") == 0 ||
		  strcmp(cmd->argv[1], "active") == 0))
		type = "mds";
	/* an MDS evicts a client that held capabilities it had to revoke */
	if (cmd->argc >= 3 && strcmp(cmd->argv[0], "osd") == 0 &&
	    strcmp(cmd->argv[1], "blocklist") == 0 && strcmp(cmd->argv[2], "add") == 0 &&
	    strncmp(who, "mds.", 4) == 0)
		return 0;
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
	int rc, yes;

	if (state_placement_set((int)cmd->argc, cmd->argv, &name, &yes)) {
		/* the plugin every monitor needs to build the placement map */
		if (tsr_registry_find(reg, TSR_KIND_PLACEMENT, name) != NULL)
			return 0;
		tsr_sbuf_printf(out, "no placement plugin '%s' on the monitors (mon.%s has "
				"in plugin_dir %s: ", name, mon->self->name,
				tsr_conf_str(tsr_daemon_conf(mon->d), "plugin_dir"));
		int any = 0;
		for (size_t i = 0; i < tsr_registry_count(reg); i++) {
			d = tsr_plugin_desc(tsr_registry_at(reg, i));
			if (d->kind == TSR_KIND_PLACEMENT)
				tsr_sbuf_printf(out, "%s%s", any++ ? ", " : "", d->name);
		}
		tsr_sbuf_printf(out, "%s)", any ? "" : "none");
		return -ENOENT;
	}
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

/* A change the leader accepted (w holds its session): proposed now, or
 * once a new leader has applied its log. */
static void
accept_change(struct mon *mon, struct waiter *w, uint64_t now)
{
	w->deadline = now + PROPOSE_TIMEOUT_NS;
	if (mon_decisions(mon) && !mon->proj_valid) {
		w->next = mon->held;
		mon->held = w;
	} else {
		propose_change(mon, w);
	}
}

/* The word forms of the beacons, `osd beacon ID [--failed LIST]` and
 * `mds beacon NAME GID ADDR STATE`, from daemons of the version before
 * typed messages (state_classify checked them): as the typed ones. */
static void
beacon_words(struct mon *mon, struct tsr_conn *c, int kind, const struct tsr_mon_cmd *cmd,
	     uint64_t now)
{
	struct tsr_sbuf why;

	tsr_sbuf_init(&why);
	if (kind == 2) {
		struct tsr_mon_osd_beacon b = { .client = cmd->client, .tid = cmd->tid };
		const char *w = cmd->argv[2];
		size_t n = 0;
		b.osd = (int32_t)strtol(w + (strncmp(w, "osd.", 4) == 0 ? 4 : 0), NULL, 10);
		for (uint32_t i = 3; i + 1 < cmd->argc; i++)
			if (strcmp(cmd->argv[i], "--failed") == 0 &&
			    state_osd_list(cmd->argv[i + 1], b.failed, TSR_MONMSG_MAX_FAILED,
					   &n, &why) == 0)
				b.nfailed = (uint32_t)n;
		watch_osd_beacon(mon, c, &b, now);
	} else {
		struct tsr_mon_mds_beacon b = { .client = cmd->client, .tid = cmd->tid };
		struct mds_beacon mb;
		if (state_mds_beacon((int)cmd->argc, cmd->argv, &mb, &why) == 0) {
			tsr_strlcpy(b.name, mb.name, sizeof(b.name));
			tsr_strlcpy(b.addr, mb.addr, sizeof(b.addr));
			b.gid = mb.gid;
			b.state = (uint32_t)mb.state;
			watch_mds_beacon(mon, c, &b, now);
		}
	}
	tsr_sbuf_release(&why);
}

/* A daemon's typed message: its boot or its beacon, about itself only. */
/* MON_SVC_KEYS from osd.N (checked by the caller): the OSDs' service keys
 * sealed for it, as hex in the answer; from a client or an MDS (osd -1):
 * its own key toward OSDs. */
static void
send_service_keys(struct mon *mon, struct tsr_conn *c, const struct tsr_mon_svc_keys *k)
{
	uint8_t blob[TSR_AUTH_SEALED_MAX];
	char name[TSR_AUTH_NAME_MAX], hex[2 * TSR_AUTH_SEALED_MAX + 1];
	char text[2 * TSR_AUTH_SEALED_MAX + 64 + TSR_AUTH_NAME_MAX];
	size_t len = 0;
	int rc;

	if (k->osd >= 0)
		snprintf(name, sizeof(name), "osd.%d", k->osd);
	else
		snprintf(name, sizeof(name), "%s", tsr_conn_peer_auth(c));
	rc = tsr_auth_service_seal(tsr_daemon_auth(mon->d), name, blob, sizeof(blob), &len);
	if (rc < 0) {
		mon_reply(c, k->tid, rc, "cannot seal the service keys", NULL);
		return;
	}
	for (size_t i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", blob[i]);
	hex[2 * len] = '\0';
	if (k->osd >= 0)
		snprintf(text, sizeof(text), "{\"osd\": %d, \"service_keys\": \"%s\"}",
			 k->osd, hex);
	else
		snprintf(text, sizeof(text), "{\"name\": \"%s\", \"service_keys\": "
			 "\"%s\"}", name, hex);
	mon_reply(c, k->tid, 0, text, NULL);
	explicit_bzero(blob, sizeof(blob));
	explicit_bzero(hex, sizeof(hex));
	explicit_bzero(text, sizeof(text));
}

/* Do all members keep up_thru and PG temp (osdmap.h: not before every
 * monitor runs code that keeps them)? */
static int
mon_up_thru_ok(const struct mon *mon)
{
	for (size_t i = 0; i < mon->mem.n; i++)
		if (&mon->mem.m[i] != mon->self &&
		    !(mon->peers[mon->mem.m[i].id - 1].features & TSR_MON_FEAT_UP_THRU))
			return 0;
	return mon_decisions(mon);
}

/* An OSD asks for up_thru and PG temp (the leader): answered at once when
 * the projected map holds it already or the OSD is stale there, else
 * batched (`osd alives`) and answered once applied. */
static void
on_alive(struct mon *mon, struct tsr_conn *c, const struct tsr_mon_osd_alive *a,
	 uint64_t now)
{
	struct tsr_sbuf out;
	struct waiter *w;
	int rc;

	if (!mon_up_thru_ok(mon)) {
		mon_reply(c, a->tid, -EAGAIN, "not every monitor keeps up_thru and PG temp "
			  "yet (a rolling upgrade?); ask again later", NULL);
		return;
	}
	tsr_sbuf_init(&out);
	rc = state_alive_holds(mon->proj_valid ? &mon->proj.osdmap : &mon->st.osdmap,
			       a, &out);
	if (rc != 0) {
		mon_reply(c, a->tid, rc < 0 ? rc : 0, rc < 0 ? tsr_sbuf_str(&out)
				: "{\"held\": true}", NULL);
		tsr_sbuf_release(&out);
		return;
	}
	tsr_sbuf_reset(&out);
	state_alive_word(a, &out);
	w = tsr_xcalloc(1, sizeof(*w));
	w->alive = tsr_xcalloc(1, sizeof(*w->alive));
	*w->alive = *a;
	w->cmd.client = a->client;
	w->cmd.tid = a->tid;
	w->cmd.argc = 3;
	w->cmd.argv = tsr_xcalloc(4, sizeof(char *));
	w->cmd.argv[0] = tsr_xstrdup("osd");
	w->cmd.argv[1] = tsr_xstrdup("alive");
	w->cmd.argv[2] = tsr_xstrdup(tsr_sbuf_str(&out));
	tsr_sbuf_release(&out);
	w->conn = c;
	tsr_conn_get(c);
	w->deadline = now + PROPOSE_TIMEOUT_NS;
	propose_batched(mon, MON_BATCH_ALIVE, w);
}

/* MON_PG_STATS from osd.N: taken by the leader (answered at once). */
static void
handle_pg_stats(struct mon *mon, struct tsr_conn *c, struct tsr_msg *msg, uint64_t now)
{
	const char *who = tsr_conn_peer_auth(c);
	struct tsr_mon_pg_stats s;
	char err[256], id[16];
	int rc;

	rc = tsr_monmsg_pg_stats_decode(msg->front, msg->front_len, &s, err, sizeof(err));
	if (rc < 0) {
		tsr_log_rated(&mon_refusal_lines, TSR_SUB_MON, TSR_LOG_WARN, "%s: bad pg stats: "
			      "%s", tsr_conn_peer(c), err);
		mon_reply(c, s.tid, rc == -ENOMEM ? -ENOMEM : -EINVAL, err, NULL);
		return;
	}
	snprintf(id, sizeof(id), "%d", s.osd);
	if (who == NULL || !tsr_auth_is(who, "osd", id)) {
		snprintf(err, sizeof(err), "permission denied: only osd.%d may send its pg "
			 "stats (this session is %s)", s.osd, who ? who : "not authenticated");
		mon_reply(c, s.tid, -EACCES, err, NULL);
	} else if (tsr_raft_role(mon->raft) != TSR_RAFT_LEADER) {
		mon_redirect(mon, c, s.tid, now);
	} else {
		mon_pgstats_take(mon, &s, now);
		mon_reply(c, s.tid, 0, "{}", NULL);
	}
	tsr_monmsg_pg_stats_free(&s);
}

static void
handle_daemon(struct mon *mon, struct tsr_conn *c, struct tsr_msg *msg, uint64_t now)
{
	const char *who = tsr_conn_peer_auth(c), *type = "osd", *id = NULL;
	union {
		struct tsr_mon_osd_boot boot;
		struct tsr_mon_osd_alive alive;
		struct tsr_mon_osd_beacon ob;
		struct tsr_mon_mds_beacon mb;
		struct tsr_mon_svc_keys sk;
	} u;
	char err[256], idw[16];
	uint64_t tid = 0;
	int32_t osd = -1;
	int rc;

	if (msg->type == TSR_MSG_MON_PG_STATS) {
		handle_pg_stats(mon, c, msg, now);
		return;
	}
	switch (msg->type) {
	case TSR_MSG_MON_OSD_BOOT:
		rc = tsr_monmsg_osd_boot_decode(msg->front, msg->front_len, &u.boot, err,
						sizeof(err));
		tid = u.boot.tid;
		osd = u.boot.osd;
		break;
	case TSR_MSG_MON_OSD_ALIVE:
		rc = tsr_monmsg_osd_alive_decode(msg->front, msg->front_len, &u.alive, err,
						 sizeof(err));
		tid = u.alive.tid;
		osd = u.alive.osd;
		break;
	case TSR_MSG_MON_OSD_BEACON:
		rc = tsr_monmsg_osd_beacon_decode(msg->front, msg->front_len, &u.ob, err,
						  sizeof(err));
		tid = u.ob.tid;
		osd = u.ob.osd;
		break;
	case TSR_MSG_MON_MDS_BEACON:
		rc = tsr_monmsg_mds_beacon_decode(msg->front, msg->front_len, &u.mb, err,
						  sizeof(err));
		tid = u.mb.tid;
		type = "mds";
		id = u.mb.name;
		break;
	case TSR_MSG_MON_SVC_KEYS:
		rc = tsr_monmsg_svc_keys_decode(msg->front, msg->front_len, &u.sk, err,
						sizeof(err));
		tid = u.sk.tid;
		osd = u.sk.osd;
		break;
	default:
		return;
	}
	if (msg->type == TSR_MSG_MON_SVC_KEYS && rc == 0 && osd < 0) {
		/* a client's or an MDS's own key: whoever it authenticated as */
		if (who == NULL || !(tsr_auth_is(who, "client", NULL) ||
				     tsr_auth_is(who, "mds", NULL))) {
			mon_reply(c, tid, -EACCES, "permission denied: only a client or an "
				  "MDS asks for its own key toward OSDs", NULL);
			return;
		}
		send_service_keys(mon, c, &u.sk);
		return;
	}
	if (id == NULL) { /* an OSD's message */
		snprintf(idw, sizeof(idw), "%d", osd);
		id = idw;
	}
	if (rc < 0) {
		tsr_log_rated(&mon_refusal_lines, TSR_SUB_MON, TSR_LOG_WARN, "%s: bad %s: %s",
			      tsr_conn_peer(c), tsr_monmsg_type(msg->type)->name, err);
		mon_reply(c, tid, rc == -ENOMEM ? -ENOMEM : -EINVAL, err, NULL);
		return;
	}
	if (who == NULL || !tsr_auth_is(who, type, id)) {
		snprintf(err, sizeof(err), "permission denied: only %s.%.48s may send its "
			 "%s (this session is %s)", type, id,
			 tsr_monmsg_type(msg->type)->name, who ? who : "not authenticated");
		tsr_log_rated(&mon_refusal_lines, TSR_SUB_MON, TSR_LOG_WARN, "%s: %s",
			      tsr_conn_peer(c), err);
		mon_reply(c, tid, -EACCES, err, NULL);
		return;
	}
	if (msg->type == TSR_MSG_MON_SVC_KEYS) {
		/* any monitor: the keys follow from the secret, not the maps */
		send_service_keys(mon, c, &u.sk);
		return;
	}
	if (tsr_raft_role(mon->raft) != TSR_RAFT_LEADER) {
		mon_redirect(mon, c, tid, now);
		return;
	}
	if (msg->type == TSR_MSG_MON_OSD_BEACON) {
		watch_osd_beacon(mon, c, &u.ob, now);
	} else if (msg->type == TSR_MSG_MON_OSD_ALIVE) {
		on_alive(mon, c, &u.alive, now);
	} else if (msg->type == TSR_MSG_MON_MDS_BEACON) {
		watch_mds_beacon(mon, c, &u.mb, now);
	} else {
		/* a boot is a change: `osd boot ID ADDR`, answered once applied */
		struct waiter *w = tsr_xcalloc(1, sizeof(*w));
		w->cmd.client = u.boot.client;
		w->cmd.tid = u.boot.tid;
		w->cmd.argc = 4;
		w->cmd.argv = tsr_xcalloc(5, sizeof(char *));
		w->cmd.argv[0] = tsr_xstrdup("osd");
		w->cmd.argv[1] = tsr_xstrdup("boot");
		w->cmd.argv[2] = tsr_xstrdup(idw);
		w->cmd.argv[3] = tsr_xstrdup(u.boot.addr);
		if (u.boot.version[0])
			tsr_strlcpy(mon->watch[u.boot.osd].version, u.boot.version,
				    sizeof(mon->watch[0].version));
		w->conn = c;
		tsr_conn_get(c);
		if (mon_decisions(mon)) {
			/* boots come in storms (a cluster starting): one change
			 * for the boots of an interval, one epoch */
			w->deadline = now + PROPOSE_TIMEOUT_NS;
			propose_batched(mon, MON_BATCH_BOOT, w);
		} else {
			accept_change(mon, w, now);
		}
	}
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
		tsr_log_rated(&mon_refusal_lines, TSR_SUB_MON, TSR_LOG_WARN, "%s: bad command: %s",
			      tsr_conn_peer(c), err);
		/* the decoder keeps the tid it read (monmsg.h): answered
		 * with it, the client learns why at once instead of waiting
		 * out its timeout */
		mon_reply(c, w->cmd.tid, rc == -ENOMEM ? -ENOMEM : -EINVAL, err, NULL);
		goto done;
	}
	if ((kind = state_classify((int)w->cmd.argc, w->cmd.argv, &out)) < 0) {
		mon_reply(c, w->cmd.tid, kind, tsr_sbuf_str(&out), NULL);
		goto done;
	}
	if (cmd_allowed(mon, kind, &w->cmd, tsr_conn_peer_auth(c), err,
			sizeof(err)) < 0) {
		tsr_log_rated(&mon_refusal_lines, TSR_SUB_MON, TSR_LOG_WARN, "%s: %s",
			      tsr_conn_peer(c), err);
		mon_reply(c, w->cmd.tid, -EACCES, err, NULL);
		goto done;
	}
	if (tsr_raft_role(mon->raft) != TSR_RAFT_LEADER) {
		mon_redirect(mon, c, w->cmd.tid, now);
		goto done;
	}
	if (kind == 1 && !mon_decisions(mon) &&
	    state_needs_decisions((int)w->cmd.argc, w->cmd.argv)) {
		mon_reply(c, w->cmd.tid, -EOPNOTSUPP, "not while a monitor of an older "
			  "version is in the cluster (it would not know this form; see "
			  "`tessera versions`)", NULL);
		goto done;
	}
	if (kind == 1 && (rc = check_plugins(mon, &w->cmd, &out)) < 0) {
		mon_reply(c, w->cmd.tid, rc, tsr_sbuf_str(&out), NULL);
		goto done;
	}
	/* a new placement plugin without --yes-i-really-mean-it: what it
	 * would move, and nothing logged */
	if (kind == 1 && (rc = mon_placement_dry_run(mon, &w->cmd, now, &out)) < 0) {
		mon_reply(c, w->cmd.tid, rc, tsr_sbuf_str(&out), NULL);
		goto done;
	}
	if (kind == 2 || kind == 3) {
		beacon_words(mon, c, kind, &w->cmd, now);
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
	accept_change(mon, w, now);
	w = NULL;
done:
	if (w)
		mon_waiter_free(w);
	tsr_sbuf_release(&out);
}

/* Changes not yet proposed (held for the projected state, or for a
 * batch): redirected when we no longer lead, refused after their
 * deadline.  How many went. */
static size_t
sweep_unproposed(struct mon *mon, struct waiter **head, uint64_t now)
{
	size_t gone = 0;

	for (struct waiter **p = head; *p;) {
		struct waiter *w = *p;

		if (tsr_raft_role(mon->raft) != TSR_RAFT_LEADER) {
			mon_redirect(mon, w->conn, w->cmd.tid, now);
		} else if (now >= w->deadline) {
			mon_reply(w->conn, w->cmd.tid, -EAGAIN, "the leader has not "
				  "applied its log within 5 s; not proposed, retry", NULL);
		} else {
			p = &w->next;
			continue;
		}
		*p = w->next;
		mon_waiter_free(w);
		gone++;
	}
	return gone;
}

/* Reads whose lease came; changes that timed out or whose leader went. */
static void
sweep(struct mon *mon, uint64_t now)
{
	int lease = tsr_raft_role(mon->raft) == TSR_RAFT_LEADER && mon_lease_valid(mon, now);

	for (struct waiter **p = &mon->reads; *p;) {
		struct waiter *w = *p;
		struct tsr_sbuf out;
		int rc;

		if (tsr_raft_role(mon->raft) != TSR_RAFT_LEADER) {
			mon_redirect(mon, w->conn, w->cmd.tid, now);
		} else if (lease) {
			tsr_sbuf_init(&out);
			rc = serve_read(mon, &w->cmd, now, &out);
			mon_reply(w->conn, w->cmd.tid, rc, tsr_sbuf_str(&out), NULL);
			tsr_sbuf_release(&out);
		} else if (now >= w->deadline) {
			char text[200];
			snprintf(text, sizeof(text), "mon.%s leads but a majority has "
				 "not confirmed it for %.1f s: not serving maps "
				 "that may be stale", mon->self->name,
				 (double)(now - w->deadline + 2 * mon->lease_ns) / 1e9);
			mon_reply(w->conn, w->cmd.tid, -ETIMEDOUT, text, NULL);
		} else {
			p = &w->next;
			continue;
		}
		*p = w->next;
		mon_waiter_free(w);
	}
	for (int k = 0; k < MON_BATCH_KINDS; k++) {
		struct mon_batch *b = &mon->batch[k];
		b->n -= sweep_unproposed(mon, &b->head, now);
		b->tail = &b->head;
		for (struct waiter *w = b->head; w; w = w->next)
			b->tail = &w->next;
	}
	sweep_unproposed(mon, &mon->held, now);
	for (struct waiter **p = &mon->changes; *p;) {
		struct waiter *w = *p;

		if (tsr_raft_term(mon->raft) != w->term ||
		    tsr_raft_role(mon->raft) != TSR_RAFT_LEADER) {
			/* it may still commit under the next leader: the
			 * client sends it again, and it is applied once.
			 * -EINPROGRESS, not -EAGAIN: it is in a log, so its
			 * outcome is not known yet (monc.h) */
			mon_reply(w->conn, w->cmd.tid, -EINPROGRESS, "the leadership "
			      "changed before the change committed; it may "
			      "still commit", mon_leader_addr(mon));
		} else if (now >= w->deadline) {
			mon_reply(w->conn, w->cmd.tid, -EINPROGRESS, "the change was "
			      "not committed within 5 s: no majority of monitors "
			      "answers (it may still commit when one does)", NULL);
		} else {
			p = &w->next;
			continue;
		}
		*p = w->next;
		mon_waiter_free(w);
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

/* A boot that went in a batch: answered from the map the batch made. */
static void
answer_boot(struct mon *mon, struct waiter *w)
{
	int32_t id = (int32_t)strtol(w->cmd.argv[2], NULL, 10);
	const struct tsr_osdmap_osd *o = tsr_osdmap_osd(&mon->st.osdmap, id);
	char text[160];

	if (o == NULL) {
		snprintf(text, sizeof(text), "osd.%d is not in the map: add it first "
			 "(tessera osd add %d --host HOST)", id, id);
		mon_reply(w->conn, w->cmd.tid, -ENOENT, text, NULL);
	} else if (!o->up || strcmp(o->addr, w->cmd.argv[3]) != 0) {
		mon_reply(w->conn, w->cmd.tid, -EAGAIN, "another change came first; "
			  "boot again", NULL);
	} else {
		snprintf(text, sizeof(text), "{\"osd\": %d, \"up\": true, "
			 "\"osdmap_epoch\": %" PRIu64 "}", id, mon->st.osdmap.epoch);
		mon_reply(w->conn, w->cmd.tid, 0, text, NULL);
	}
}

/* What an OSD asked in a batch (`osd alive WORD`): answered from the map
 * the batch made. */
static void
answer_alive(struct mon *mon, struct waiter *w)
{
	const struct tsr_osdmap *m = &mon->st.osdmap;
	struct tsr_mon_osd_alive *a = w->alive;
	struct tsr_sbuf out;
	char text[160];
	int rc;

	tsr_sbuf_init(&out);
	rc = a ? state_alive_holds(m, a, &out) : -EINVAL;
	if (rc == 1) {
		snprintf(text, sizeof(text), "{\"osd\": %d, \"up_thru\": %" PRIu64 ", "
			 "\"osdmap_epoch\": %" PRIu64 "}", a->osd,
			 tsr_osdmap_osd(m, a->osd)->up_thru, m->epoch);
		mon_reply(w->conn, w->cmd.tid, 0, text, NULL);
	} else if (rc < 0) {
		mon_reply(w->conn, w->cmd.tid, rc, tsr_sbuf_str(&out), NULL);
	} else {
		/* another change came in the same map (a PG temp asked twice) */
		mon_reply(w->conn, w->cmd.tid, -EAGAIN, "another change came first; "
			  "ask again", NULL);
	}
	tsr_sbuf_release(&out);
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
	uint64_t t0 = tsr_mono_ns();
	rc = state_apply_entry(&mon->st, en->data, en->len, &me, &out);
	uint64_t t1 = tsr_mono_ns();
	mon->perf.applied++;
	mon->perf.apply_ns += t1 - t0;
	if (mon->perf.prop_index[en->index % MON_PERF_RING] == en->index) {
		mon->perf.committed++;
		mon->perf.commit_ns += t1 - mon->perf.prop_ns[en->index % MON_PERF_RING];
		mon->perf.prop_index[en->index % MON_PERF_RING] = 0;
	}
	if ((rc == -EBADMSG || mon->st.fatal) && !mon->failed) {
		LOGE("log entry %" PRIu64 " (%s): %s; stopping: applying the log on "
		     "would give this monitor other maps than the rest", en->index,
		     me.what[0] ? me.what : "?", tsr_sbuf_str(&out));
		mon->failed = 1;
		tsr_daemon_request_stop(mon->d);
	}
	LOGD("applied %" PRIu64 " (v%d): %s: %d", en->index, me.version, me.what, rc);
	for (struct waiter **p = &mon->changes; *p;) {
		struct waiter *w = *p;
		if (w->index != en->index) {
			p = &w->next;
			continue;
		}
		if (w->batched == 1 + MON_BATCH_BOOT && me.client >> 63)
			answer_boot(mon, w);
		else if (w->batched == 1 + MON_BATCH_ALIVE && me.client >> 63)
			answer_alive(mon, w);
		else if (w->cmd.client == me.client && w->cmd.tid == me.tid)
			mon_reply(w->conn, w->cmd.tid, rc, tsr_sbuf_str(&out), NULL);
		else
			mon_reply(w->conn, w->cmd.tid, -EAGAIN, "the leadership changed "
			      "before the change committed; retry", mon_leader_addr(mon));
		*p = w->next;
		mon_waiter_free(w);
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
	struct tsr_mon_peer_info info;
	char err[256];
	int rc;

	if (tsr_monmsg_raft_decode(m->front, m->front_len, &fp, &info, &rm, err,
				   sizeof(err)) < 0) {
		tsr_log_rated(&mon_refusal_lines, TSR_SUB_MON, TSR_LOG_WARN,
			      "%s: bad raft message: %s", tsr_conn_peer(c), err);
		return;
	}
	/* on_raft let only member monitors through; one may not speak for
	 * another */
	sender = peer_member(mon, tsr_conn_peer_auth(c));
	if (sender == NULL || sender->id != rm.from) {
		tsr_log_rated(&mon_refusal_lines, TSR_SUB_MON, TSR_LOG_WARN,
			      "%s: a Raft message claiming to come from node %"
			      PRIu64 "; dropped", tsr_conn_peer(c), rm.from);
		tsr_monmsg_raft_free(&rm);
		return;
	}
	mon->peers[sender->id - 1] = info;
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

/* Everything due: the ticks that fell due, the items queued, the
 * leader's watches, the subscriptions' pushes (the loop's thread). */
static void
run(struct mon *mon)
{
	uint64_t now;
	struct item *it;

	pthread_mutex_lock(&mon->qlock);
	it = mon->head;
	mon->head = NULL;
	mon->tail = &mon->head;
	mon->queued = 0;
	pthread_mutex_unlock(&mon->qlock);

	pthread_mutex_lock(&mon->lock);
	now = tsr_mono_ns();
	if (now >= mon->next_tick) {
		/* ticks on the monotonic clock; after a long stall,
		 * enough to time out once, not hundreds */
		unsigned n = 0;
		while (now >= mon->next_tick && n++ < 3 * mon->e_ticks) {
			tsr_raft_tick(mon->raft);
			mon->next_tick += mon->tick_ns;
		}
		if (now >= mon->next_tick)
			mon->next_tick = now + mon->tick_ns;
	}
	while (it) {
		struct item *next = it->next;
		if (!mon->failed) {
			if (it->kind == TSR_MSG_MON_RAFT)
				handle_raft(mon, it->conn, it->msg);
			else if (it->kind == TSR_MSG_MON_CMD)
				handle_cmd(mon, it->conn, it->msg, now);
			else if (it->kind == TSR_MSG_MON_SUB)
				subs_handle(mon, it->conn, it->msg);
			else if (it->kind > 0)
				handle_daemon(mon, it->conn, it->msg, now);
			process_ready(mon, now); /* on failure: stopping */
		}
		if (it->kind == -1)
			subs_drop(mon, it->conn);
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
		watch_osds(mon, now);
		watch_mds(mon, now);
		if (tsr_raft_role(mon->raft) == TSR_RAFT_LEADER)
			watch_versions(mon, now, NULL, NULL);
		propose_batches(mon);
		process_ready(mon, now);
		subs_push(mon);
	}
	pthread_mutex_unlock(&mon->lock);
}

static void
drain(void *arg)
{
	struct mon_wake *w = arg;
	struct mon *mon = w->mon;

	/* after mon_stop (the loop's destroy runs what was still posted,
	 * free_wake last) */
	if (mon == NULL)
		return;
	/* only the drain clears posted: a tick's run may take the items
	 * while this drain is queued, and posted must stay 1 until the
	 * drain has run, or a second one would be queued beside it */
	pthread_mutex_lock(&mon->qlock);
	w->posted = 0;
	pthread_mutex_unlock(&mon->qlock);
	run(mon);
}

static void
tick(void *arg)
{
	struct mon *mon = arg;
	uint64_t now;

	mon->tick_timer = 0;
	run(mon);
	now = tsr_mono_ns();
	if (tsr_loop_timer_add(mon->loop, mon->next_tick > now ? mon->next_tick - now : 0,
			       tick, mon, &mon->tick_timer) < 0) {
		/* without ticks Raft stands still: better to stop loudly */
		LOGE("cannot arm the monitor's tick (out of memory); stopping");
		tsr_daemon_request_stop(mon->d);
	}
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
		/* an APPEND's entries go in its front: half of ms_max_front,
		 * room to spare for the envelope */
		.max_append_bytes = (size_t)tsr_conf_int(tsr_daemon_conf(mon->d),
							 "ms_max_front") / 2,
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
	mon->tail = &mon->head;
	mon->loop = tsr_daemon_loop(d);
	mon->wake = tsr_xcalloc(1, sizeof(*mon->wake));
	mon->wake->mon = mon;
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
	state_hist_keep(&mon->st, (size_t)tsr_conf_int(conf, "mon_osdmap_history"));
	mon->grace_ns = (uint64_t)tsr_conf_int(conf, "mon_osd_beacon_grace") * 1000000u;
	mon->mds_grace_ns = (uint64_t)tsr_conf_int(conf, "mon_mds_beacon_grace") * 1000000u;
	mon->down_out_ns = (uint64_t)tsr_conf_int(conf, "mon_osd_down_out_interval") * 1000000u;
	mon->versions_grace_ns = (uint64_t)tsr_conf_int(conf, "mon_warn_versions_differ") * 1000000u;
	mon->nearfull_ratio = tsr_conf_double(conf, "mon_osd_nearfull_ratio");
	mon->full_ratio = tsr_conf_double(conf, "mon_osd_full_ratio");
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
	tsr_msgr_register(mon->msgr, TSR_MSG_MON_OSD_BOOT, on_daemon, mon, TSR_MSGR_INLINE);
	tsr_msgr_register(mon->msgr, TSR_MSG_MON_OSD_ALIVE, on_daemon, mon, TSR_MSGR_INLINE);
	tsr_msgr_register(mon->msgr, TSR_MSG_MON_OSD_BEACON, on_daemon, mon, TSR_MSGR_INLINE);
	tsr_msgr_register(mon->msgr, TSR_MSG_MON_MDS_BEACON, on_daemon, mon, TSR_MSGR_INLINE);
	tsr_msgr_register(mon->msgr, TSR_MSG_MON_SVC_KEYS, on_daemon, mon, TSR_MSGR_INLINE);
	tsr_msgr_register(mon->msgr, TSR_MSG_MON_PG_STATS, on_daemon, mon, TSR_MSGR_INLINE);
	mon->last_leader_ns = tsr_mono_ns();
	mon->next_tick = mon->last_leader_ns + mon->tick_ns;
	if ((rc = tsr_loop_timer_add(mon->loop, mon->tick_ns, tick, mon,
				     &mon->tick_timer)) < 0)
		return tsr_errf(err, errlen, rc, "arming the monitor's tick: %s",
				strerror(-rc));
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
		mon_waiter_free(w);
		w = n;
	}
}

static void
mon_stop(struct tsr_daemon *d)
{
	struct mon *mon = tsr_daemon_priv(d);

	if (mon == NULL)
		return;
	/* the loop has stopped: nothing runs on it now */
	if (mon->tick_timer)
		tsr_loop_timer_cancel(mon->loop, mon->tick_timer);
	for (size_t i = 0; i < mon->mem.n; i++)
		if (mon->peer[i]) {
			tsr_conn_close(mon->peer[i]);
			tsr_conn_put(mon->peer[i]);
		}
	free_waiters(mon->changes);
	free_waiters(mon->reads);
	free_waiters(mon->held);
	for (int k = 0; k < MON_BATCH_KINDS; k++)
		free_waiters(mon->batch[k].head);
	proj_drop(mon);
	subs_drop(mon, NULL);
	/* after this no messenger thread queues or posts */
	tsr_msgr_destroy(mon->msgr);
	/* drains may still be queued on the loop (its destroy runs them):
	 * they find no monitor, and the wake goes after them — posts run
	 * in order */
	if (mon->wake != NULL) {
		mon->wake->mon = NULL;
		if (tsr_loop_post(mon->loop, free_wake, mon->wake) < 0)
			LOGW("out of memory at stop: a few bytes left behind");
	}
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
	mon_pgstats_free(mon);
	if (mon->pl_inst)
		tsr_instance_destroy(mon->pl_inst);
	free(mon->watch);
	pthread_mutex_destroy(&mon->qlock);
	pthread_mutex_destroy(&mon->lock);
	free(mon);
	tsr_daemon_set_priv(d, NULL);
}

/* The OSD map's encoded size (0: out of memory). */
static size_t
osdmap_bytes(const struct tsr_osdmap *m)
{
	struct tsr_enc e;
	size_t n;

	tsr_enc_init(&e);
	tsr_osdmap_encode(&e, m);
	n = tsr_enc_error(&e) ? 0 : e.len;
	tsr_enc_release(&e);
	return n;
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
			mon_lease_valid(mon, now) ? "true" : "false",
			tsr_raft_rejoining(mon->raft) ? "true" : "false");
	mon_stat(mon, now, out);
	/* where Raft stands here, and (a leader) how far each member holds
	 * its log: what a monitor that does not catch up shows first */
	tsr_sbuf_printf(out, ",\n  \"raft\": {\"term\": %" PRIu64 ", \"commit\": %" PRIu64
			", \"last_index\": %" PRIu64 ", \"snapshot_index\": %" PRIu64,
			tsr_raft_term(mon->raft), tsr_raft_commit(mon->raft),
			tsr_raft_last_index(mon->raft), mon->snap_index);
	if (tsr_raft_role(mon->raft) == TSR_RAFT_LEADER) {
		tsr_sbuf_printf(out, ", \"match\": {");
		for (size_t i = 0; i < mon->mem.n; i++)
			tsr_sbuf_printf(out, "%s\"%s\": %" PRIu64, i ? ", " : "",
					mon->mem.m[i].name,
					tsr_raft_peer_match(mon->raft, mon->mem.m[i].id));
		tsr_sbuf_printf(out, "}");
	}
	tsr_sbuf_printf(out, "}");
	tsr_sbuf_printf(out, ",\n  \"osdmap_epoch\": %" PRIu64 ",\n  \"mdsmap_epoch\": %"
			PRIu64 ",\n  \"maps_crc\": %u,\n  \"applied\": %" PRIu64
			",\n  \"applied_index\": %" PRIu64 ",\n  \"history_crc\": %u,"
			"\n  \"decisions\": %s,\n  \"isolated\": %u", mon->st.osdmap.epoch,
			mon->st.mdsmap.epoch, maps_crc(&mon->st), mon->st.applied,
			mon->hist_index, mon->hist_crc, mon_decisions(mon) ? "true" : "false",
			mon->isolated);
	const struct mon_perf *p = &mon->perf;
	tsr_sbuf_printf(out, ",\n  \"perf\": {\"decided\": %" PRIu64 ", \"decide_us\": %.1f, "
			"\"committed\": %" PRIu64 ", \"commit_ms\": %.2f, \"applied\": %" PRIu64
			", \"apply_us\": %.1f, \"osdmap_bytes\": %zu}",
			p->decided, p->decided ? (double)p->decide_ns / (double)p->decided / 1e3 : 0,
			p->committed,
			p->committed ? (double)p->commit_ns / (double)p->committed / 1e6 : 0,
			p->applied, p->applied ? (double)p->apply_ns / (double)p->applied / 1e3 : 0,
			osdmap_bytes(&mon->st.osdmap));
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
