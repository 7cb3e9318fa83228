/* handshake.c — hellos, authentication, and the sessions they open,
 * resume or restart. */
#include "msg/msgr_int.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

/* ---- Handshake ---------------------------------------------------------------*/

static void
hello_fill(struct tsr_conn *c, struct tsr_hello *h)
{
	struct tsr_msgr *m = c->m;

	memset(h, 0, sizeof(*h));
	memcpy(h->fsid, m->o.fsid, 16);
	h->entity_type = m->o.entity_type;
	h->entity_id = m->o.entity_id;
	h->nonce = m->nonce;
	h->proto_min = TSR_PROTO_MIN;
	h->proto_max = TSR_PROTO_MAX;
	h->features = TSR_FEATURE_ZSTD | TSR_FEATURE_AUTH;
	h->lossless = (uint8_t)c->lossless;
	h->session = c->session;
	h->in_seq = c->in_seq;
	msgr_conn_ack_sent(c); /* the hello acknowledges it */
	snprintf(h->addr, sizeof(h->addr), "%s", m->addr);
	if (c->connector && c->auth) {
		snprintf(h->auth_name, sizeof(h->auth_name), "%s",
			 tsr_auth_name(c->auth));
		snprintf(h->auth_target, sizeof(h->auth_target), "%s",
			 c->auth_target);
		memcpy(h->auth_nonce, c->auth_cnonce, sizeof(h->auth_nonce));
	} else if (!c->connector && c->has_reply) {
		h->has_proof = 1;
		memcpy(h->auth_proof, c->auth_reply, sizeof(h->auth_proof));
	}
}

int
msgr_hello_queue(struct tsr_conn *c)
{
	struct tsr_hello h;
	struct tsr_enc e;
	int rc;

	hello_fill(c, &h);
	tsr_enc_init(&e);
	tsr_hello_encode(&h, &e);
	rc = tsr_enc_error(&e) ? tsr_enc_error(&e)
			       : msgr_ctl_append(c, TSR_MSG_HELLO, e.buf, e.len);
	tsr_enc_release(&e);
	return rc;
}

/* Refuse the peer: tell it why, log it, close once written (lock held). */
void
msgr_conn_refuse(struct tsr_conn *c, const char *why)
{
	struct tsr_msgr *m = c->m;

	tsr_log_rated(&msgr_peer_lines, TSR_SUB_MSG, TSR_LOG_WARN, "%s: refused: %s",
		      c->name, why);
	pthread_mutex_lock(&m->lock);
	m->st.refused++;
	pthread_mutex_unlock(&m->lock);
	msgr_ctl_append(c, TSR_MSG_REFUSE, why, strlen(why));
	c->close_after_ctl = 1;
	msgr_conn_flush(c);
}

/* What is wrong with the peer's hello, or NULL. */
static const char *
hello_check(const struct tsr_msgr *m, const struct tsr_hello *h)
{
	if (memcmp(h->fsid, m->o.fsid, 16) != 0)
		return "peer belongs to another cluster (fsid differs)";
	if (h->proto_max < TSR_PROTO_MIN || h->proto_min > TSR_PROTO_MAX)
		return "no protocol version in common";
	return NULL;
}

/* Count the messages written before that go again (lock held). */
void
msgr_count_resent(struct tsr_conn *c)
{
	uint64_t last;

	if (c->out_head == NULL || c->out_head->seq > c->sent_seq)
		return;
	last = c->sent_seq < c->out_tail->seq ? c->sent_seq : c->out_tail->seq;
	pthread_mutex_lock(&c->m->lock);
	c->m->st.resent += last - c->out_head->seq + 1;
	pthread_mutex_unlock(&c->m->lock);
}

/* Renumber the unacknowledged messages from 1: the peer lost the session
 * (lock held). */
static void
session_restart(struct tsr_conn *c)
{
	uint64_t s = 0;

	for (struct tsr_msg *x = c->out_head; x; x = x->next)
		x->seq = ++s;
	c->out_seq = s;
	c->sent_seq = 0;
	c->in_seq = 0;
	msgr_conn_ack_sent(c);
	c->out_next = c->out_head;
	c->out_off = 0;
}

/* Connector: the acceptor's hello (lock held).  1 if the owner is owed a
 * reset event. */
int
msgr_connector_hello(struct tsr_conn *c, const struct tsr_hello *h)
{
	const char *why = hello_check(c->m, h);
	int reset = 0;
	char remote[64];

	if (why) {
		msgr_conn_fault(c, -EPROTO, "%s", why);
		return 0;
	}
	if (c->auth) {
		/* the acceptor must prove it holds our key too: anyone can
		 * listen on an address */
		struct tsr_auth_hs hs = { c->m->o.fsid, tsr_auth_name(c->auth),
					  c->auth_target, c->auth_cnonce,
					  c->auth_snonce };
		if (c->auth_state != AS_PROVED || !h->has_proof ||
		    tsr_auth_check_acceptor(c->auth, &hs, h->auth_proof) < 0) {
			tsr_log_rated(&msgr_own_lines, TSR_SUB_MSG, TSR_LOG_ERROR,
				      "%s: the peer did not prove it holds the key of "
				      "%s (%s): not a monitor of this cluster, or "
				      "another cluster's secret", c->name,
				      tsr_auth_name(c->auth),
				      c->auth_state != AS_PROVED ? "it asked for no proof"
								 : "wrong proof");
			msgr_conn_end(c, -EACCES);
			return 0;
		}
	}
	if ((c->session && h->session != c->session) ||
	    (c->peer_nonce && h->nonce != c->peer_nonce)) {
		tsr_log(TSR_SUB_MSG, TSR_LOG_INFO, "%s: the peer lost our "
			"session (restarted?); resending %" PRIu64 " messages",
			c->name, c->out_seq ? c->out_seq - (c->out_head ? c->out_head->seq - 1 : c->out_seq) : 0);
		session_restart(c);
		reset = c->peer_nonce != 0;
	}
	c->session = h->session;
	c->peer_type = h->entity_type;
	c->peer_id = h->entity_id;
	c->peer_nonce = h->nonce;
	c->peer_features = h->features;
	snprintf(remote, sizeof(remote), "%s", c->addr);
	msgr_conn_name(c, remote);
	/* what the peer already has goes; the rest is sent again */
	c->out_next = c->out_head;
	c->out_off = 0;
	if (h->in_seq > c->out_seq) {
		msgr_conn_fault(c, -EPROTO, "peer claims messages never sent");
		return 0;
	}
	msgr_conn_drop_acked(c, h->in_seq, 0);
	c->out_next = c->out_head;
	c->state = C_OPEN;
	c->backoff_ms = c->m->o.reconnect_min_ms;
	msgr_count_resent(c);
	return reset;
}

/* Acceptor: the connector's hello on a new socket (c is the new socket's
 * connection; lock held, and c is not yet visible to anyone else).
 * Returns the session the socket now belongs to (c, or an existing one
 * it resumes, with a reference), or NULL if refused or failed. */
static struct tsr_conn *
acceptor_hello(struct tsr_conn *c, const struct tsr_hello *h, struct after *a)
{
	struct tsr_msgr *m = c->m;
	const char *why = hello_check(m, h);
	struct tsr_conn *s = NULL;
	char remote[64];
	uint64_t sess;

	a->accept_ev = 0;
	if (getrandom(&sess, sizeof(sess), 0) != sizeof(sess))
		sess = tsr_mono_ns() ^ (uintptr_t)c;
	/* c is listed: other workers' walks (below) read these fields
	 * under m->lock */
	pthread_mutex_lock(&m->lock);
	c->peer_type = h->entity_type;
	c->peer_id = h->entity_id;
	if (h->has_proof) /* checked: see the AUTH frame in frame_done */
		snprintf(c->peer_auth, sizeof(c->peer_auth), "%s", h->auth_name);
	pthread_mutex_unlock(&m->lock);
	snprintf(remote, sizeof(remote), "%s", c->addr);
	msgr_conn_name(c, remote);
	if (why) {
		msgr_conn_refuse(c, why);
		return NULL;
	}
	pthread_mutex_lock(&m->lock);
	for (struct tsr_conn *x = m->conns; x; x = x->next) {
		/* a session belongs to the name that proved itself: another
		 * name claiming the same entity resumes or ends nothing */
		if (x == c || x->connector || x->peer_type != h->entity_type ||
		    x->peer_id != h->entity_id ||
		    strcmp(x->peer_auth, h->has_proof ? h->auth_name : "") != 0)
			continue;
		if (x->peer_nonce == h->nonce && h->session && x->session == h->session &&
		    x->lossless && h->lossless) {
			s = x;
			atomic_fetch_add(&s->refs, 1); /* listed: alive */
		} else if (x->peer_nonce != h->nonce && x->peer_nonce != 0 &&
			   a->nold < TSR_ARRAY_SIZE(a->old)) {
			/* the peer restarted: its old sessions are dead; they
			 * are closed once c's lock is dropped (after_run),
			 * never two connections' locks at once */
			atomic_fetch_add(&x->refs, 1);
			a->old[a->nold++] = x;
		}
	}
	if (s == NULL) {
		c->lossless = h->lossless;
		c->peer_nonce = h->nonce;
		c->session = sess | 1;
	}
	pthread_mutex_unlock(&m->lock);
	if (s == NULL) {
		/* a new session, on this connection */
		c->peer_features = h->features;
		c->in_seq = 0;
		c->state = C_OPEN;
		msgr_hello_queue(c);
		a->accept_ev = 1;
		return c;
	}
	return s;
}

/* Acceptor: the connector is who it says (or nobody asked): open or
 * resume its session (worker, lock held). */
void
msgr_acceptor_open(struct tsr_conn *c, struct tsr_hello *hello, struct after *a)
{
	struct tsr_conn *s = acceptor_hello(c, hello, a);

	if (s != NULL && s != c) {
		a->moved_to = s;
		a->moved_hello = *hello;
	} else if (s == c) {
		snprintf(c->addr, sizeof(c->addr), "%s",
			 hello->addr[0] ? hello->addr : c->addr);
		c->announced = 1;
		msgr_conn_flush(c);
	}
}

/* Acceptor: the connector's hello, when we require authentication: it
 * must name itself; we send our nonce and wait for its proof. */
void
msgr_acceptor_challenge(struct tsr_conn *c, const struct tsr_hello *h)
{
	const char *why = hello_check(c->m, h);
	char reason[160];

	if (why != NULL) {
		msgr_conn_refuse(c, why);
		return;
	}
	if (h->auth_name[0] == '\0') {
		msgr_conn_refuse(c, "authentication required: the peer presented no "
			    "name and key (set `keyring` in its configuration)");
		return;
	}
	if (strcmp(h->auth_target, tsr_auth_name(c->m->o.auth)) != 0) {
		/* a handshake relayed from a connection to someone else */
		snprintf(reason, sizeof(reason), "the peer meant to reach %s, not "
			 "%s", h->auth_target[0] ? h->auth_target : "nobody named",
			 tsr_auth_name(c->m->o.auth));
		msgr_conn_refuse(c, reason);
		return;
	}
	if (tsr_auth_can_check(c->m->o.auth, h->auth_name, &why) < 0) {
		snprintf(reason, sizeof(reason), "cannot authenticate %s: %s",
			 h->auth_name, why);
		msgr_conn_refuse(c, reason);
		return;
	}
	c->hs_hello = *h;
	tsr_auth_random(c->auth_snonce, sizeof(c->auth_snonce));
	if (msgr_ctl_append(c, TSR_MSG_CHALLENGE, c->auth_snonce,
		       sizeof(c->auth_snonce)) < 0) {
		msgr_conn_fault(c, -ENOMEM, "cannot queue the challenge");
		return;
	}
	c->auth_state = AS_CHALLENGED;
	msgr_conn_flush(c);
}

/* Acceptor: the connector's proof (AUTH); checked, the session opens. */
void
msgr_acceptor_check(struct tsr_conn *c, const struct tsr_msg *x, struct after *a)
{
	struct tsr_auth_hs hs = { c->m->o.fsid, c->hs_hello.auth_name,
				  c->hs_hello.auth_target, c->hs_hello.auth_nonce,
				  c->auth_snonce };
	char reason[128];

	if (c->connector || c->state != C_HELLO || c->auth_state != AS_CHALLENGED ||
	    x->front_len != TSR_AUTH_PROOF_LEN) {
		msgr_conn_refuse(c, "protocol error: a proof that was not asked for");
		return;
	}
	if (tsr_auth_accept(c->m->o.auth, &hs, x->front, c->auth_reply) < 0) {
		/* logged at a rate (msgr_conn_refuse): a wrong key is an
		 * operator's mistake or an attack, and either may repeat
		 * thousands of times a second */
		snprintf(reason, sizeof(reason), "authentication failed for %s: "
			 "wrong key", c->hs_hello.auth_name);
		msgr_conn_refuse(c, reason);
		return;
	}
	c->has_reply = 1;
	c->auth_state = AS_NONE;
	c->hs_hello.has_proof = 1; /* the name is proved (acceptor_hello) */
	memcpy(c->hs_hello.auth_proof, c->auth_reply, TSR_AUTH_PROOF_LEN);
	msgr_acceptor_open(c, &c->hs_hello, a);
}

/* Connector: the acceptor's nonce; we prove we hold our key. */
void
msgr_connector_prove(struct tsr_conn *c, const struct tsr_msg *x)
{
	struct tsr_msgr *m = c->m;
	uint8_t proof[TSR_AUTH_PROOF_LEN];

	if (!c->connector || c->state != C_HELLO || c->auth_state != AS_NONE ||
	    x->front_len != TSR_AUTH_NONCE_LEN) {
		msgr_conn_fault(c, -EPROTO, "protocol error: an unexpected challenge");
		return;
	}
	if (c->auth == NULL) {
		tsr_log_rated(&msgr_own_lines, TSR_SUB_MSG, TSR_LOG_ERROR,
			      "%s: the peer requires authentication and we have "
			      "no key (set `keyring`)", c->name);
		msgr_conn_end(c, -EACCES);
		return;
	}
	memcpy(c->auth_snonce, x->front, TSR_AUTH_NONCE_LEN);
	struct tsr_auth_hs hs = { m->o.fsid, tsr_auth_name(c->auth),
				  c->auth_target, c->auth_cnonce, c->auth_snonce };
	tsr_auth_connector_proof(c->auth, &hs, proof);
	if (msgr_ctl_append(c, TSR_MSG_AUTH, proof, sizeof(proof)) < 0) {
		msgr_conn_fault(c, -ENOMEM, "cannot queue our proof");
		return;
	}
	c->auth_state = AS_PROVED;
	msgr_conn_flush(c);
}

