/* conn.c — a connection's life, its worker's side (socket events, posted
 * work, what the owner is owed) and time (reconnects, keepalives,
 * timeouts). */
#include "msg/msgr_int.h"
#include "event/loop.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tsr_log_rate msgr_peer_lines = TSR_LOG_RATE_INIT(20, 10000);
struct tsr_log_rate msgr_own_lines = TSR_LOG_RATE_INIT(20, 10000);
__thread struct worker *msgr_cur_worker;
__thread int msgr_on_dispatch;

static void conn_events(struct tsr_conn *c);

/* ---- Connections: life ------------------------------------------------------*/

void
msgr_conn_name(struct tsr_conn *c, const char *remote)
{
	const char *t = tsr_entity_type_name(c->peer_type);

	if (c->peer_auth[0])
		snprintf(c->name, sizeof(c->name), "%s %s", c->peer_auth, remote);
	else if (t)
		snprintf(c->name, sizeof(c->name), "%s.%" PRIu64 " %s", t,
			 c->peer_id, remote);
	else
		snprintf(c->name, sizeof(c->name), "%s", remote);
}

struct tsr_conn *
msgr_conn_new(struct tsr_msgr *m, int connector, int lossless, enum cstate state,
	 int fd, const char *addr)
{
	struct tsr_conn *c = msgr_conn_alloc(m, connector, lossless, state, fd, addr);

	if (c != NULL)
		msgr_conn_list(c);
	return c;
}

struct tsr_conn *
msgr_conn_alloc(struct tsr_msgr *m, int connector, int lossless, enum cstate state,
		int fd, const char *addr)
{
	struct tsr_conn *c = calloc(1, sizeof(*c));

	if (c == NULL || (c->rbuf = malloc(RBUF_SIZE)) == NULL) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->room, NULL);
	pthread_cond_init(&c->cb_idle, NULL);
	c->m = m;
	c->fd = -1;
	c->pending_fd = -1;
	c->connector = connector;
	c->lossless = lossless;
	atomic_init(&c->refs, 1); /* the messenger's list */
	c->backoff_ms = m->o.reconnect_min_ms;
	c->state = state;
	c->fd = fd;
	c->last_rx = tsr_mono_ns();
	c->hs_start = c->last_rx;
	snprintf(c->addr, sizeof(c->addr), "%s", addr);
	msgr_conn_name(c, addr);
	c->announced = connector;
	return c;
}

void
msgr_conn_list(struct tsr_conn *c)
{
	struct tsr_msgr *m = c->m;

	pthread_mutex_lock(&m->lock);
	c->w = &m->workers[m->rr++ % m->nworkers];
	c->next = m->conns;
	m->conns = c;
	c->listed = 1;
	pthread_mutex_unlock(&m->lock);
}

void
tsr_conn_get(struct tsr_conn *c)
{
	atomic_fetch_add(&c->refs, 1);
}

void
msgr_conn_free(struct tsr_conn *c)
{
	struct tsr_msg *n;

	for (struct tsr_msg *x = c->out_head; x; x = n) {
		n = x->next;
		tsr_msg_free(x, -ESHUTDOWN);
	}
	for (struct tsr_msg *x = c->dq_head; x; x = n) {
		n = x->next;
		atomic_fetch_sub(&c->m->rx_queued, x->front_len + x->data_len);
		tsr_msg_free(x, -ESHUTDOWN);
	}
	tsr_msg_free(c->rmsg, -ESHUTDOWN);
	free(c->rzdata);
	free(c->rxp);
	if (c->fd >= 0)
		close(c->fd);
	if (c->pending_fd >= 0)
		close(c->pending_fd);
	free(c->rbuf);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->room);
	pthread_cond_destroy(&c->cb_idle);
	free(c);
}

void
tsr_conn_put(struct tsr_conn *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1)
		msgr_conn_free(c);
}

/* Take c off the messenger's list (its reference goes). */
static void
conn_unlist(struct tsr_conn *c)
{
	struct tsr_msgr *m = c->m;
	int was = 0;

	pthread_mutex_lock(&m->lock);
	for (struct tsr_conn **p = &m->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			was = 1;
			break;
		}
	c->listed = 0;
	pthread_mutex_unlock(&m->lock);
	if (was)
		tsr_conn_put(c);
}

const char *
tsr_conn_peer(const struct tsr_conn *c)
{
	return c->name;
}

const char *
tsr_conn_peer_auth(const struct tsr_conn *c)
{
	return c->peer_auth[0] ? c->peer_auth : NULL;
}

uint8_t
tsr_conn_peer_type(const struct tsr_conn *c)
{
	return c->peer_type;
}

uint64_t
tsr_conn_peer_id(const struct tsr_conn *c)
{
	return c->peer_id;
}

int
tsr_conn_is_lossless(const struct tsr_conn *c)
{
	return c->lossless;
}

void
tsr_conn_set_priv(struct tsr_conn *c, void *priv)
{
	c->priv = priv;
}

void
tsr_msgr_set_rx_tag(struct tsr_msgr *m, tsr_rx_tag_fn fn)
{
	m->rx_tag = fn;
}

int
tsr_conn_post_rx(struct tsr_conn *c, uint64_t tag, void *buf, size_t cap)
{
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	if (c->nrxp == c->rxp_cap) {
		size_t n = c->rxp_cap ? 2 * c->rxp_cap : 8;
		struct rx_post *p = realloc(c->rxp, n * sizeof(*p));

		if (p == NULL)
			rc = -ENOMEM;
		else
			c->rxp = p, c->rxp_cap = n;
	}
	if (rc == 0)
		c->rxp[c->nrxp++] = (struct rx_post){ tag, buf, cap };
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void
tsr_conn_revoke_rx(struct tsr_conn *c, uint64_t tag)
{
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->nrxp; i++)
		if (c->rxp[i].tag == tag) {
			c->rxp[i] = c->rxp[--c->nrxp];
			break;
		}
	if (c->rx_user && c->rx_user_tag == tag && c->rmsg) {
		/* being received into it now (the worker waits for our lock):
		 * the rest goes into a buffer of ours, after what came */
		struct tsr_msg *x = c->rmsg;
		size_t cap, got = c->rgot > x->front_len ? c->rgot - x->front_len : 0;
		void *d = msgr_buf_get(x->data_len, &cap);

		if (got > x->data_len)
			got = x->data_len;
		if (d != NULL) {
			memcpy(d, c->rx_user, got);
			x->data_iov = NULL;
			x->data_iovcnt = 0;
			x->data_len = 0;
			tsr_msg_give_data(x, d, c->rh.data_raw_len, cap);
			c->rx_user = NULL;
		} else {
			/* no memory to move it: the worker reads nothing more
			 * of this frame; it drops the socket and the peer
			 * sends it again */
			c->rx_abandon = 1;
		}
	}
	pthread_mutex_unlock(&c->lock);
}

void *
tsr_conn_priv(const struct tsr_conn *c)
{
	return c->priv;
}

/* ---- Worker plumbing --------------------------------------------------------*/

static void on_fd(struct tsr_loop *loop, int fd, uint32_t events, void *arg);

static void
kick_cb(void *arg)
{
	struct tsr_conn *c = arg;
	unsigned acts;

	if (c->m->shut) {
		/* run by tsr_msgr_destroy's tsr_loop_destroy: the session is
		 * over, only the post's reference is left to give back */
		tsr_conn_put(c);
		return;
	}
	pthread_mutex_lock(&c->lock);
	c->kick_pending = 0;
	acts = c->acts;
	c->acts = 0;
	c->acts_run |= acts;
	pthread_mutex_unlock(&c->lock);
	if (acts)
		conn_events(c);
	tsr_conn_put(c);
}

/* Post acts to c's worker (lock held): one post at a time, which runs
 * whatever acts were added meanwhile. */
void
msgr_conn_kick(struct tsr_conn *c, unsigned acts)
{
	c->acts |= acts;
	if (c->kick_pending)
		return;
	c->kick_pending = 1;
	atomic_fetch_add(&c->refs, 1);
	if (tsr_loop_post(c->w->loop, kick_cb, c) < 0) {
		c->kick_pending = 0;
		atomic_fetch_sub(&c->refs, 1);
	}
}

/* epoll interest of c's socket (worker, lock held). */
void
msgr_conn_watch(struct tsr_conn *c)
{
	int want_out = c->state == C_CONNECTING || c->ctl_off < c->ctl_len ||
		       c->extra_off < c->extra_len ||
		       (c->state == C_OPEN && c->out_next != NULL);
	uint32_t ev = (c->read_paused || c->state == C_CONNECTING ? 0 : TSR_EV_READ) |
		      (want_out ? TSR_EV_WRITE : 0);

	/* an epoll_ctl only when the interest changes: this runs after
	 * every event of every connection */
	if (c->fd < 0 || !c->registered || ev == c->watch_ev)
		return;
	if (tsr_loop_fd_mod(c->w->loop, c->fd, ev) == 0)
		c->watch_ev = ev;
}

/* Drop c's socket (worker, lock held). */
static void
conn_drop_socket(struct tsr_conn *c)
{
	if (c->fd >= 0) {
		if (c->registered)
			tsr_loop_fd_del(c->w->loop, c->fd);
		close(c->fd);
	}
	c->fd = -1;
	c->registered = 0;
	c->watch_ev = 0;
	c->rlen = 0;
	c->have_hdr = 0;
	tsr_msg_free(c->rmsg, -ECONNRESET);
	c->rmsg = NULL;
	c->rdata_pending = 0;
	c->rx_user = NULL;
	c->rx_abandon = 0;
	free(c->rzdata);
	c->rzdata = NULL;
	c->rgot = 0;
	c->ctl_len = c->ctl_off = 0;
	c->extra_len = c->extra_off = 0;
	c->out_next = c->out_head; /* resend what was not acknowledged */
	c->out_off = 0;
	c->want_keepalive = c->want_keepalive_ack = 0;
	c->close_after_ctl = 0;
}

/* Fail every queued message (lock held). */
void
msgr_conn_fail_queue(struct tsr_conn *c, int err)
{
	struct tsr_msg *n;

	for (struct tsr_msg *x = c->out_head; x; x = n) {
		n = x->next;
		tsr_msg_free(x, err);
	}
	c->out_head = c->out_tail = c->out_next = NULL;
	c->out_bytes = 0;
	c->out_off = 0;
	pthread_cond_broadcast(&c->room);
}

/* The session is over (lock held): fail what waits, and owe the owner a
 * fault event if it is lossy or was closed under it. */
void
msgr_conn_end(struct tsr_conn *c, int err)
{
	conn_drop_socket(c);
	msgr_conn_fail_queue(c, err);
	if (c->state != C_CLOSED) {
		c->state = C_CLOSED;
		c->closing_event = 1;
		c->close_err = err;
	}
}

/* A lossless connector's backoff ran out (worker). */
static void
reconnect_cb(void *arg)
{
	struct tsr_conn *c = arg;

	pthread_mutex_lock(&c->lock);
	c->acts_run |= ACT_CONNECT;
	c->timers--;
	c->reconnect_timer = 0;
	pthread_mutex_unlock(&c->lock);
	conn_events(c);
	tsr_conn_put(c);
}

void
msgr_conn_fault(struct tsr_conn *c, int err, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	if (msgr_cur_worker != c->w) {
		/* a sender's thread: c's loop and socket are its worker's.
		 * Cut the socket; the worker sees the error and faults c. */
		if (c->fd >= 0)
			shutdown(c->fd, SHUT_RDWR);
		msgr_conn_kick(c, ACT_FLUSH);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&c->m->lock);
	c->m->st.faults++;
	pthread_mutex_unlock(&c->m->lock);
	if (c->state == C_CLOSED)
		return;
	if (c->lossless && (c->connector || c->state != C_HELLO)) {
		if (c->connector)
			tsr_log(TSR_SUB_MSG, TSR_LOG_INFO, "%s: %s; reconnecting",
				c->name, why);
		else
			tsr_log_rated(&msgr_peer_lines, TSR_SUB_MSG, TSR_LOG_INFO,
				      "%s: %s; waiting for the peer", c->name, why);
		conn_drop_socket(c);
		c->state = C_STANDBY;
		c->standby_since = tsr_mono_ns();
		if (c->connector) {
			c->reconnect_at = tsr_mono_ns() + MS(c->backoff_ms);
			atomic_fetch_add(&c->refs, 1); /* the timer's */
			c->timers++;
			if (tsr_loop_timer_add(c->w->loop, MS(c->backoff_ms),
					       reconnect_cb, c, &c->reconnect_timer) < 0) {
				atomic_fetch_sub(&c->refs, 1); /* the tick will do it */
				c->timers--;
			}
			c->backoff_ms = c->backoff_ms * 2 > c->m->o.reconnect_max_ms
						? c->m->o.reconnect_max_ms
						: c->backoff_ms * 2;
		}
		return;
	}
	if (c->connector) {
		tsr_log(TSR_SUB_MSG, c->lossless ? TSR_LOG_INFO : TSR_LOG_WARN,
			"%s: %s; closing", c->name, why);
	} else {
		/* an accepted connection: the peer decides when this
		 * happens, so at a rate; a client hanging up an open
		 * session is its normal goodbye, not a warning */
		int level = err == -ECONNRESET && c->state == C_OPEN ? TSR_LOG_DEBUG
			    : c->lossless ? TSR_LOG_INFO : TSR_LOG_WARN;
		tsr_log_rated(&msgr_peer_lines, TSR_SUB_MSG, level, "%s: %s; closing",
			      c->name, why);
	}
	msgr_conn_end(c, err);
}

/* ---- The worker's side ------------------------------------------------------*/

static void
conn_start_connect(struct tsr_conn *c)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, rc;

	if ((rc = msgr_parse_addr(c->addr, &ss, &len)) < 0) {
		msgr_conn_end(c, rc);
		tsr_log(TSR_SUB_MSG, TSR_LOG_ERROR, "%s: not an address "
			"(want HOST:PORT, numeric)", c->addr);
		return;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		msgr_conn_fault(c, -errno, "socket: %s", strerror(errno));
		return;
	}
	msgr_sock_setup(fd);
	pthread_mutex_lock(&c->m->lock);
	c->m->st.reconnects += c->session != 0 || c->peer_nonce != 0;
	pthread_mutex_unlock(&c->m->lock);
	c->fd = fd;
	c->state = C_CONNECTING;
	c->last_rx = tsr_mono_ns();
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
		msgr_conn_fault(c, -errno, "connect: %s", strerror(errno));
		return;
	}
	if (tsr_loop_fd_add(c->w->loop, fd, TSR_EV_WRITE, on_fd, c) < 0) {
		msgr_conn_fault(c, -ENOMEM, "cannot watch the socket");
		return;
	}
	c->registered = 1;
	c->watch_ev = TSR_EV_WRITE;
}

/* The connect finished (worker, lock held). */
static void
conn_connected(struct tsr_conn *c)
{
	int err = 0;
	socklen_t l = sizeof(err);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
		err = errno;
	if (err) {
		msgr_conn_fault(c, -err, "connect to %s: %s", c->addr, strerror(err));
		return;
	}
	c->state = C_HELLO;
	c->auth_state = AS_NONE;
	if (c->auth)
		tsr_auth_random(c->auth_cnonce, sizeof(c->auth_cnonce));
	if (msgr_hello_queue(c) < 0) {
		msgr_conn_fault(c, -ENOMEM, "cannot build the hello");
		return;
	}
	msgr_conn_flush(c);
}

/* A resumed session gets the socket its peer came back on (worker of s,
 * lock held). */
static void
session_attach(struct tsr_conn *s, int fd, const struct tsr_hello *h)
{
	if (s->fd >= 0) {
		tsr_log(TSR_SUB_MSG, TSR_LOG_INFO, "%s: the peer reconnected; "
			"dropping the old connection", s->name);
		conn_drop_socket(s);
	}
	if (s->state == C_CLOSED) {
		close(fd);
		return;
	}
	s->fd = fd;
	s->last_rx = tsr_mono_ns();
	s->peer_features = h->features;
	s->has_reply = h->has_proof;
	memcpy(s->auth_reply, h->auth_proof, sizeof(s->auth_reply));
	if (h->in_seq > s->out_seq) {
		msgr_conn_fault(s, -EPROTO, "peer claims messages never sent");
		return;
	}
	msgr_conn_drop_acked(s, h->in_seq, 0);
	s->out_next = s->out_head;
	s->out_off = 0;
	msgr_count_resent(s);
	s->state = C_OPEN;
	msgr_hello_queue(s);
	if (tsr_loop_fd_add(s->w->loop, fd, TSR_EV_READ, on_fd, s) < 0) {
		msgr_conn_fault(s, -ENOMEM, "cannot watch the socket");
		return;
	}
	s->registered = 1;
	s->watch_ev = TSR_EV_READ;
	msgr_conn_flush(s);
}

/* Events owed to the owner and inline deliveries, with no lock held. */
static void
after_run(struct tsr_conn *c, struct after *a)
{
	struct tsr_msgr *m = c->m;
	int fault = 0, err = 0;

	pthread_mutex_lock(&c->lock);
	if (c->closing_event) {
		c->closing_event = 0;
		fault = c->announced;
		err = c->close_err;
	}
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < a->nold; i++) {
		pthread_mutex_lock(&a->old[i]->lock);
		if (a->old[i]->state != C_CLOSED) {
			tsr_log(TSR_SUB_MSG, TSR_LOG_INFO, "%s: peer restarted; "
				"dropping its old session", a->old[i]->name);
			msgr_conn_kick(a->old[i], ACT_CLOSE);
		}
		pthread_mutex_unlock(&a->old[i]->lock);
		tsr_conn_put(a->old[i]);
	}
	a->nold = 0;
	if (a->accept_ev && m->ev.accept)
		m->ev.accept(c, m->ev.arg);
	if (a->reset_ev)
		msgr_event_reset(c);
	for (struct tsr_msg *x = a->inl_head, *n; x; x = n) {
		n = x->next;
		x->next = NULL;
		msgr_deliver(c, x, msgr_handler_for(c, x->type));
	}
	if (fault)
		msgr_event_fault(c, err);
	pthread_mutex_lock(&c->lock);
	int gone = c->state == C_CLOSED && c->listed;
	pthread_mutex_unlock(&c->lock);
	if (gone)
		conn_unlist(c);
}

static void
on_fd(struct tsr_loop *loop, int fd, uint32_t events, void *arg)
{
	struct tsr_conn *c = arg;
	struct after a;

	(void)loop;
	(void)fd;
	memset(&a, 0, sizeof(a));
	tsr_conn_get(c);
	pthread_mutex_lock(&c->lock);
	if (c->state == C_CONNECTING) {
		if (events & (TSR_EV_WRITE | TSR_EV_ERROR))
			conn_connected(c);
	} else {
		if (events & (TSR_EV_READ | TSR_EV_ERROR))
			msgr_conn_read(c, &a);
		if (c->fd >= 0 && a.moved_to == NULL)
			msgr_conn_flush(c);
	}
	if (a.moved_to) {
		/* the socket belongs to a resumed session on its worker */
		int sfd = c->fd;
		struct tsr_conn *s = a.moved_to;

		tsr_loop_fd_del(c->w->loop, sfd);
		c->registered = 0;
		c->fd = -1;
		c->state = C_CLOSED;
		pthread_mutex_unlock(&c->lock);
		conn_unlist(c);
		pthread_mutex_lock(&s->lock);
		if (msgr_cur_worker == s->w) {
			session_attach(s, sfd, &a.moved_hello);
			msgr_conn_watch(s);
		} else {
			/* hand over to s's worker */
			if (s->pending_fd >= 0)
				close(s->pending_fd); /* superseded */
			s->pending_fd = sfd;
			s->pending_hello = a.moved_hello;
			msgr_conn_kick(s, ACT_ATTACH);
		}
		pthread_mutex_unlock(&s->lock);
		tsr_conn_put(s);
		tsr_conn_put(c);
		return;
	}
	msgr_conn_ack_later(c);
	msgr_conn_watch(c);
	pthread_mutex_unlock(&c->lock);
	after_run(c, &a);
	tsr_conn_put(c);
}

/* An ack frame now, whatever is owed (worker, lock held). */
static void
ack_now(struct tsr_conn *c)
{
	c->ack_force = 1;
	msgr_conn_flush(c);
	c->ack_force = 0;
}

/* The worker's ack timer: an ack frame for every connection still owing
 * one (worker). */
static void
acks_cb(void *arg)
{
	struct worker *w = arg;
	struct tsr_conn *c = w->acks;

	w->acks = NULL;
	w->acks_armed = 0;
	while (c != NULL) {
		struct tsr_conn *n = c->ack_next;
		struct after a;

		memset(&a, 0, sizeof(a));
		pthread_mutex_lock(&c->lock);
		c->ack_listed = 0;
		c->ack_next = NULL;
		if (c->state == C_OPEN && c->fd >= 0 && c->in_seq > c->ack_sent) {
			ack_now(c);
			msgr_conn_watch(c);
		}
		pthread_mutex_unlock(&c->lock);
		after_run(c, &a); /* a write that failed: the owner hears now */
		tsr_conn_put(c);
		c = n;
	}
}

/* After a read: an ack not sent with the read's flush waits for a frame
 * going back, or for the worker's ack timer (worker, lock held).  Replies
 * usually leave within the delay and carry the ack, which saves a frame,
 * a write and a wake-up of the peer for each message. */
void
msgr_conn_ack_later(struct tsr_conn *c)
{
	struct worker *w = c->w;

	if (c->ack_listed || c->state != C_OPEN || c->fd < 0 ||
	    c->in_seq <= c->ack_sent)
		return;
	if (!w->acks_armed) {
		if (tsr_loop_timer_add(w->loop, MS(c->m->o.ack_delay_ms), acks_cb, w,
				       NULL) < 0) {
			ack_now(c); /* no timer: the ack goes now */
			return;
		}
		w->acks_armed = 1;
	}
	atomic_fetch_add(&c->refs, 1); /* the list's (msgr_acks_drop) */
	c->ack_listed = 1;
	c->ack_next = w->acks;
	w->acks = c;
}

/* The messenger goes (its workers joined, so no ack timer runs again):
 * the references the ack lists hold go back; a connection already off
 * the messenger's list may be freed by it. */
void
msgr_acks_drop(struct worker *w)
{
	struct tsr_conn *c = w->acks;

	w->acks = NULL;
	w->acks_armed = 0;
	while (c != NULL) {
		struct tsr_conn *n = c->ack_next;

		c->ack_listed = 0;
		c->ack_next = NULL;
		tsr_conn_put(c);
		c = n;
	}
}

/* Run the work posted to c (worker). */
static void
conn_events(struct tsr_conn *c)
{
	struct after a;

	memset(&a, 0, sizeof(a));
	pthread_mutex_lock(&c->lock);
	unsigned acts = c->acts_run;
	c->acts_run = 0;
	if (acts & ACT_CLOSE) {
		if (c->state != C_CLOSED) {
			msgr_conn_end(c, -ECONNABORTED);
			c->announced = 0; /* the owner closed it: no event */
		}
		if (c->reconnect_timer &&
		    tsr_loop_timer_cancel(c->w->loop, c->reconnect_timer) == 0) {
			/* the backoff's timer will not run: its reference goes
			 * (the caller of conn_events holds one of its own) */
			c->reconnect_timer = 0;
			c->timers--;
			atomic_fetch_sub(&c->refs, 1);
		}
	} else {
		if (acts & ACT_CONNECT && c->state == C_STANDBY && c->connector &&
		    tsr_mono_ns() >= c->reconnect_at)
			conn_start_connect(c);
		if (acts & ACT_ATTACH) {
			if (c->pending_fd >= 0) {
				int fd = c->pending_fd;
				c->pending_fd = -1;
				session_attach(c, fd, &c->pending_hello);
			} else if (c->fd >= 0 && !c->registered) {
				if (tsr_loop_fd_add(c->w->loop, c->fd, TSR_EV_READ,
						    on_fd, c) == 0) {
					c->registered = 1;
					c->watch_ev = TSR_EV_READ;
				}
				else
					msgr_conn_fault(c, -ENOMEM, "cannot watch the socket");
			}
		}
		if ((acts & ACT_READ) && c->read_paused && !c->gpaused &&
		    c->dq_bytes <= c->m->o.recv_queue_bytes / 2) {
			c->read_paused = 0;
			msgr_conn_read(c, &a);
		}
		if (c->fd >= 0)
			msgr_conn_flush(c);
		msgr_conn_ack_later(c);
	}
	msgr_conn_watch(c);
	pthread_mutex_unlock(&c->lock);
	after_run(c, &a);
}

/* ---- Time: reconnects, keepalives, timeouts --------------------------------*/

static void
tick_conn(struct tsr_conn *c, uint64_t now)
{
	struct tsr_msgr *m = c->m;
	struct after a;

	memset(&a, 0, sizeof(a));
	pthread_mutex_lock(&c->lock);
	switch (c->state) {
	case C_STANDBY:
		if (c->connector && now >= c->reconnect_at)
			conn_start_connect(c);
		else if (!c->connector &&
			 now - c->standby_since > MS(m->o.session_timeout_ms)) {
			tsr_log(TSR_SUB_MSG, TSR_LOG_INFO, "%s: the peer did "
				"not come back in %u ms; session dropped", c->name,
				m->o.session_timeout_ms);
			msgr_conn_end(c, -ETIMEDOUT);
		}
		break;
	case C_CONNECTING:
	case C_HELLO:
	case C_OPEN:
		if (c->gpaused && atomic_load(&m->rx_queued) <= m->o.recv_budget / 2) {
			c->gpaused = 0;
			if (c->dq_bytes <= m->o.recv_queue_bytes / 2) {
				c->read_paused = 0;
				msgr_conn_read(c, &a);
			}
		}
		if (c->read_paused) {
			/* we stopped reading: the peer's silence is ours */
			c->last_rx = now;
		} else if (now - c->last_rx > MS(m->o.idle_timeout_ms)) {
			msgr_conn_fault(c, -ETIMEDOUT, "nothing heard for %u ms",
				   m->o.idle_timeout_ms);
		} else if (c->state == C_HELLO && !c->connector &&
			   now - c->hs_start > MS(HANDSHAKE_MS)) {
			/* a peer trickling bytes keeps last_rx fresh */
			msgr_conn_fault(c, -ETIMEDOUT, "no handshake within %u ms",
				   HANDSHAKE_MS);
		} else if (c->state == C_OPEN &&
			   now - c->last_rx > MS(m->o.keepalive_ms) &&
			   now - c->ka_stamp > MS(m->o.keepalive_ms)) {
			c->want_keepalive = 1;
			c->ka_stamp = now;
			msgr_conn_flush(c);
		}
		break;
	case C_CLOSED:
		break;
	}
	msgr_conn_ack_later(c); /* after a resumed read */
	msgr_conn_watch(c);
	pthread_mutex_unlock(&c->lock);
	after_run(c, &a);
}

void
msgr_tick_cb(void *arg)
{
	struct worker *w = arg;
	struct tsr_msgr *m = w->m;
	struct tsr_conn **v = NULL;
	size_t n = 0, cap = 0;
	uint64_t now = tsr_mono_ns();

	pthread_mutex_lock(&m->lock);
	for (struct tsr_conn *c = m->conns; c; c = c->next) {
		if (c->w != w)
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 32;
			struct tsr_conn **nv = realloc(v, nc * sizeof(*nv));
			if (nv == NULL)
				break;
			v = nv;
			cap = nc;
		}
		atomic_fetch_add(&c->refs, 1); /* listed: alive */
		v[n++] = c;
	}
	pthread_mutex_unlock(&m->lock);
	for (size_t i = 0; i < n; i++) {
		tick_conn(v[i], now);
		tsr_conn_put(v[i]);
	}
	free(v);
	tsr_loop_timer_add(w->loop, TICK_NS, msgr_tick_cb, w, NULL);
}

