/* subs.c — map subscriptions of tessera-mon (mon.h). */
#include "mon.h"
#include "auth/auth.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Map subscriptions ---------------------------------------------------------
 *
 * Anyone may ask for the maps (MON_SUB): a monitor in the quorum — the
 * leader, or a follower that knows its leader — answers from the state it
 * has applied, which is committed, so an answer is never a map that could
 * be undone; a follower may be a few entries behind the leader, and the
 * subscriber then gets those epochs a moment later.  The answer is the
 * incrementals from the subscriber's epoch when this monitor's history
 * still has them all (state_inc: the OSD map's last mon_osdmap_history
 * epochs), else the full map.  A subscription stays for the
 * session's life and is pushed every new epoch as it is applied.  A
 * monitor that leaves the quorum closes its subscribers' sessions, so
 * they go to one in it instead of waiting on maps that no longer come. */

int
mon_in_quorum(struct mon *mon)
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
	if (iovcnt && tsr_msg_set_data(m, iov, iovcnt, mon_free_data, owner) < 0) {
		free(owner);
		tsr_msg_free(m, 0);
		return;
	}
	if (!iovcnt)
		free(owner);
	tsr_conn_send(c, m, TSR_SEND_NOWAIT);
}

/* Bring a subscriber from epoch have to ours: nothing when it is current
 * (unless it asked, tid != 0), the incrementals when the history has them
 * all (in as many messages as their count and bytes take), else the full
 * map.  A subscriber that does not need every epoch (no
 * TSR_MON_SUB_EVERY) gets the full map when that is smaller.  The bytes
 * are copied into one buffer per message, which the message owns. */
static void
send_maps(struct mon *mon, struct tsr_conn *c, uint64_t tid, int which,
	  uint64_t have, int every)
{
	uint64_t cur = map_epoch(mon, which);
	struct tsr_mon_maps mm = { .tid = tid, .which = (uint8_t)which, .epoch = cur };
	uint32_t lens[TSR_MONMSG_MAX_INCS];
	uint8_t *buf = NULL;
	size_t total = 0, len;
	uint64_t e;

	if (have >= cur) {
		if (tid)
			send_maps_msg(c, &mm, NULL, 0, NULL);
		return;
	}
	mm.len = lens;
	for (e = have + 1; have != 0 && e <= cur && state_inc(&mon->st, which, e, &len); e++)
		total += len;
	if (have != 0 && e > cur &&
	    (every || (cur - have <= MON_INC_KEEP && total <= MAX_INC_BYTES))) {
		/* in chunks of at most TSR_MONMSG_MAX_INCS incrementals and
		 * MAX_INC_BYTES (one larger incremental goes alone) */
		for (uint64_t from = have + 1; from <= cur;) {
			size_t at = 0, bytes = 0;
			uint64_t to = from;
			mm.n = 0;
			while (to <= cur && mm.n < TSR_MONMSG_MAX_INCS) {
				state_inc(&mon->st, which, to, &len);
				if (mm.n && bytes + len > MAX_INC_BYTES)
					break;
				bytes += len;
				lens[mm.n++] = (uint32_t)len;
				to++;
			}
			if ((buf = malloc(bytes ? bytes : 1)) == NULL)
				return; /* the renewal asks again */
			for (uint64_t k = from; k < to; k++) {
				const uint8_t *p = state_inc(&mon->st, which, k, &len);
				memcpy(buf + at, p, len);
				at += len;
			}
			mm.epoch = to - 1;
			struct iovec iov = { buf, bytes };
			send_maps_msg(c, &mm, &iov, 1, buf);
			mm.tid = 0; /* the answer is the first; the rest follow it */
			from = to;
		}
		return;
	}
	struct tsr_enc enc;
	tsr_enc_init(&enc);
	if (which == TSR_MON_MAP_OSD)
		tsr_osdmap_encode(&enc, &mon->st.osdmap);
	else
		tsr_mdsmap_encode(&enc, &mon->st.mdsmap);
	if ((buf = tsr_enc_take(&enc, &total)) == NULL)
		return;
	mm.full = 1;
	mm.n = 1;
	lens[0] = (uint32_t)total;
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
void
subs_drop(struct mon *mon, struct tsr_conn *c)
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

void
subs_handle(struct mon *mon, struct tsr_conn *c, struct tsr_msg *msg)
{
	struct tsr_mon_sub rq;
	struct tsr_mon_maps mm = { 0 };
	char err[256];
	struct sub *s;

	if (tsr_monmsg_sub_decode(msg->front, msg->front_len, &rq, err,
				  sizeof(err)) < 0) {
		tsr_log_rated(&mon_refusal_lines, TSR_SUB_MON, TSR_LOG_WARN,
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
	if (!mon_in_quorum(mon)) {
		const char *l = mon_leader_addr(mon);
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
		send_maps(mon, c, rq.tid, w, rq.have[w], !!(rq.want & TSR_MON_SUB_EVERY));
		if (s) {
			s->want |= 1u << w | (rq.want & TSR_MON_SUB_EVERY);
			s->have[w] = map_epoch(mon, w);
		}
	}
}

/* After applying: every subscriber gets the epochs it lacks.  Out of the
 * quorum: they are sent away. */
void
subs_push(struct mon *mon)
{
	if (mon->subs == NULL)
		return;
	if (!mon_in_quorum(mon)) {
		LOGI("not in a quorum: closing %zu map subscriptions", mon->nsubs);
		subs_drop(mon, NULL);
		return;
	}
	for (struct sub *s = mon->subs; s; s = s->next)
		for (int w = 0; w < TSR_MON_NMAPS; w++)
			if ((s->want & (1u << w)) && s->have[w] < map_epoch(mon, w)) {
				send_maps(mon, s->conn, 0, w, s->have[w],
					  !!(s->want & TSR_MON_SUB_EVERY));
				s->have[w] = map_epoch(mon, w);
			}
}
