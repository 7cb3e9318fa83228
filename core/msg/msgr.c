/* msgr.c — the messenger (see msgr.h for what it promises).
 *
 * Threads.  W I/O workers, each an event loop (event/loop.h) owning the
 * sockets of the connections assigned to it; D dispatch threads running
 * handlers.  A connection's socket is read only by its worker.  It is
 * written by whoever holds the connection's lock: a sender tries the write
 * itself when the queue was empty (no thread hop on the common path) and
 * leaves what the socket did not take to the worker, which waits for
 * EPOLLOUT.  Anything that must change the worker's epoll set or socket
 * from another thread is posted as a zero-delay timer on the worker's
 * loop (conn_kick), the loop's thread-safe way in.
 *
 * Sessions.  A message gets the next sequence number of its session when
 * queued.  Every frame carries the highest sequence received in order
 * (ack); the sender forgets messages up to it.  A lossless session keeps
 * the rest across reconnects: the handshake tells each side what the
 * other last received, and the unacknowledged tail is sent again; the
 * receiver drops what it already has.  The accepting side assigns session
 * ids; a connector that comes back with an id the acceptor does not know
 * (it restarted) starts afresh, numbering its unacknowledged messages from
 * 1, and its owner hears `reset`.
 *
 * Lock order: a connection's lock, then msgr->lock, then the dispatch
 * pool's lock; two connections' locks are never held together except a
 * new socket's (which nobody else knows yet) and the session it resumes.
 * Reference counts are atomic, so the list walk under msgr->lock can pin
 * connections without their locks.  Events and handlers are called with
 * no lock held.
 */
#include "msg/msgr.h"
#include "auth/auth.h"
#include "config/config.h"
#include "event/loop.h"
#include "log/log.h"
#include "util/util.h"

#include <tessera/crc32c.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define RBUF_SIZE (64u << 10)  /* read staging; larger bodies go direct */
#define CTL_MAX 512            /* pending handshake bytes */
#define HANDSHAKE_MS 10000u     /* an accepted socket's handshake, at most */
#define ACCEPT_PAUSE_NS (100u * 1000000u) /* out of descriptors: wait */
#define TICK_NS (100u * 1000000u)
#define IOV_BATCH 64
#define MS(x) ((uint64_t)(x) * 1000000u)

/* Where a connection is in authenticating (auth/auth.h, frame.h). */
enum astate {
	AS_NONE,       /* nothing sent or asked yet */
	AS_CHALLENGED, /* acceptor: Ns sent, waiting for the proof */
	AS_PROVED,     /* connector: our proof sent, waiting for theirs */
};

enum cstate {
	C_CONNECTING,  /* connector: TCP connect in progress */
	C_HELLO,       /* waiting for the peer's hello */
	C_OPEN,        /* messages flow */
	C_STANDBY,     /* lossless, no socket: connector backs off, acceptor
	                * waits for the peer to come back */
	C_CLOSED,
};

/* Work posted to a connection's worker. */
#define ACT_CONNECT 0x1u  /* start a TCP connect */
#define ACT_ATTACH 0x2u   /* register c->fd with the loop */
#define ACT_FLUSH 0x4u    /* write, and watch EPOLLOUT if needed */
#define ACT_READ 0x8u     /* reading may resume (dispatch drained) */
#define ACT_CLOSE 0x10u   /* tsr_conn_close() */

struct worker {
	struct tsr_msgr *m;
	struct tsr_loop *loop;
	pthread_t thr;
	unsigned idx;
	int started;
};

struct handler {
	tsr_msg_handler fn;
	void *arg;
	unsigned flags;
};

struct tsr_conn {
	struct tsr_msgr *m;
	struct worker *w;
	pthread_mutex_t lock;
	pthread_cond_t room;       /* send queue below its limit */
	atomic_int refs;           /* atomic: taken under other locks */
	int lossless, connector;
	enum cstate state;
	int fd;
	int registered;            /* fd is in w's loop (worker only) */
	uint32_t watch_ev;         /* TSR_EV_* the loop watches (worker only) */
	unsigned acts;             /* ACT_* posted, not yet run */
	unsigned acts_run;         /* taken by the worker's kick_cb */
	int kick_pending;
	int timers;                /* reconnect timers pending (each a ref) */
	int pending_fd;            /* ACT_ATTACH: a resumed session's socket */
	struct tsr_hello pending_hello;
	char addr[64];             /* peer's listening address (connector:
	                            * where we connect) */
	char name[112];            /* for messages */
	uint8_t peer_type;
	uint64_t peer_id, peer_nonce, peer_features;
	uint64_t session;

	/* sending (lock) */
	struct tsr_msg *out_head, *out_tail; /* unacknowledged, by seq */
	struct tsr_msg *out_next;  /* first not completely written */
	size_t out_off;            /* bytes of out_next written */
	uint64_t out_seq;          /* last sequence handed out */
	uint64_t out_bytes;        /* queued bytes (the send limit) */
	uint64_t ack_sent;         /* highest ack a frame carried */
	uint64_t sent_seq;         /* highest sequence written whole */
	int want_keepalive, want_keepalive_ack;
	uint64_t ka_stamp;
	uint8_t ctl[CTL_MAX];      /* handshake frames to write first */
	size_t ctl_len, ctl_off;
	uint8_t ack_frame[TSR_FRAME_HDR + TSR_FRAME_FOOTER];
	uint8_t ka_frame[TSR_FRAME_HDR + 8 + TSR_FRAME_FOOTER];
	size_t extra_len, extra_off; /* bytes of ack_frame/ka_frame pending */
	const uint8_t *extra;
	int close_after_ctl;       /* refusal: close once ctl is written */

	/* receiving (worker only, but in_seq under lock too) */
	uint64_t in_seq;
	uint8_t *rbuf;
	size_t rlen;
	struct tsr_frame_hdr rh;
	int have_hdr;
	struct tsr_msg *rmsg;      /* body being read */
	int gpaused;               /* read_paused by the messenger's budget */
	uint64_t hs_start;         /* when the socket came (accepted ones) */

	/* authentication (worker, lock held) */
	enum astate auth_state;
	uint8_t auth_cnonce[TSR_AUTH_NONCE_LEN]; /* Nc */
	uint8_t auth_snonce[TSR_AUTH_NONCE_LEN]; /* Ns */
	uint8_t auth_reply[TSR_AUTH_PROOF_LEN];  /* acceptor: its proof */
	int has_reply;
	struct tsr_hello hs_hello; /* acceptor: the connector's hello until
	                            * its proof is checked */
	char peer_auth[TSR_AUTH_NAME_MAX]; /* proved name ("" none) */
	char auth_target[TSR_AUTH_NAME_MAX]; /* connector: whom we dial */
	uint8_t rfooter[TSR_FRAME_FOOTER];
	size_t rgot;               /* body bytes read */
	uint8_t *rzdata;           /* compressed data being read */
	uint64_t last_rx;          /* ns */
	uint64_t reconnect_at, standby_since, backoff_ms;

	/* dispatch (pool lock) */
	struct tsr_msg *dq_head, *dq_tail;
	uint64_t dq_bytes;         /* under lock */
	int dq_listed, dq_active;
	int read_paused;           /* worker only */
	struct tsr_conn *dnext;

	void *priv;
	struct tsr_conn *next;     /* msgr->conns (msgr->lock) */
	int listed;
	int announced;             /* the owner knows c (connect or accept) */
	int closing_event;         /* fault event owed */
	int close_err;
};

struct tsr_msgr {
	struct tsr_msgr_opts o;
	struct tsr_msgr_events ev;
	uint64_t nonce;
	char addr[64];
	int lfd;
	struct worker *workers;
	unsigned nworkers, rr;

	pthread_mutex_t lock;      /* conns, handlers, stats, accept count */
	struct tsr_conn *conns;
	struct handler *handlers;
	uint32_t nhandlers;
	struct tsr_msgr_stats st;
	uint64_t accepted, frames_sent;
	int started;               /* tsr_msgr_start() was called */
	uint64_t drop_rng;         /* inject_drop_every's draws (m->lock) */

	/* dispatch pool */
	pthread_mutex_t dlock;
	pthread_cond_t dcond;
	struct tsr_conn *dhead, *dtail;
	pthread_t *dthr;
	unsigned ndthr;
	int dstop;

	ZSTD_DCtx **dctx;          /* per worker */

	atomic_uint_fast64_t rx_queued; /* bytes waiting for handlers, all
	                                 * connections (o.recv_budget) */
	int reserve_fd;            /* spent to accept-and-close when out of
	                            * descriptors (-1 while spent) */
	int accept_paused;         /* listening fd unwatched (worker 0) */
};

/* Lines a peer can cause at will are logged at a rate (log.h). */
static struct tsr_log_rate peer_lines = TSR_LOG_RATE_INIT(20, 10000);
static struct tsr_log_rate accept_lines = TSR_LOG_RATE_INIT(1, 10000);
/* Our own side's failures with a peer (a peer that cannot prove our key,
 * one that refused us), apart, so that a flood of bad peers cannot hide
 * them. */
static struct tsr_log_rate own_lines = TSR_LOG_RATE_INIT(20, 10000);

static __thread struct worker *cur_worker;

static void conn_fault(struct tsr_conn *c, int err, const char *fmt, ...)
	TSR_PRINTF(3, 4);
static void conn_flush(struct tsr_conn *c);
static void conn_kick(struct tsr_conn *c, unsigned acts);
static void conn_events(struct tsr_conn *c);

/* ---- Large buffers ------------------------------------------------------------*/

/* Received data buffers of 64 KiB and up are kept for the next message of
 * their size class (a power of two), up to BUFC_BYTES in all: faulting in
 * fresh pages for every 4 MiB message costs more than everything else on
 * its path (a VM makes page faults dear).  Process-wide, since a message
 * may outlive its messenger. */
#define BUFC_MIN (64u << 10)
#define BUFC_SLOTS 32
#define BUFC_BYTES (64u << 20)

static pthread_mutex_t bufc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *p;
	size_t cap;
} bufc[BUFC_SLOTS];
static size_t bufc_n, bufc_bytes;

static void *
buf_get(size_t n, size_t *cap)
{
	size_t c = BUFC_MIN;
	void *p = NULL;

	if (n < BUFC_MIN) {
		*cap = n;
		return malloc(n ? n : 1);
	}
	while (c < n)
		c *= 2;
	pthread_mutex_lock(&bufc_lock);
	for (size_t i = 0; i < bufc_n; i++)
		if (bufc[i].cap == c) {
			p = bufc[i].p;
			bufc_bytes -= c;
			bufc[i] = bufc[--bufc_n];
			break;
		}
	pthread_mutex_unlock(&bufc_lock);
	*cap = c;
	return p ? p : malloc(c);
}

static void
buf_put(void *p, size_t cap)
{
	if (p == NULL)
		return;
	if (cap >= BUFC_MIN) {
		pthread_mutex_lock(&bufc_lock);
		if (bufc_n < BUFC_SLOTS && bufc_bytes + cap <= BUFC_BYTES) {
			bufc[bufc_n].p = p;
			bufc[bufc_n++].cap = cap;
			bufc_bytes += cap;
			p = NULL;
		}
		pthread_mutex_unlock(&bufc_lock);
	}
	free(p);
}

/* At exit the kept buffers go (leak checkers see nothing left). */
__attribute__((destructor)) static void
bufc_drain(void)
{
	pthread_mutex_lock(&bufc_lock);
	while (bufc_n > 0)
		free(bufc[--bufc_n].p);
	bufc_bytes = 0;
	pthread_mutex_unlock(&bufc_lock);
}

/* ---- Messages ---------------------------------------------------------------*/

struct tsr_msg *
tsr_msg_new(uint32_t type, const void *front, size_t len)
{
	struct tsr_msg *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	m->type = type;
	if (len) {
		m->front = malloc(len);
		if (m->front == NULL) {
			free(m);
			return NULL;
		}
		memcpy(m->front, front, len);
	}
	m->front_len = len;
	return m;
}

struct tsr_msg *
tsr_msg_from_enc(uint32_t type, struct tsr_enc *e)
{
	size_t len;
	uint8_t *buf = tsr_enc_error(e) ? NULL : tsr_enc_take(e, &len);
	struct tsr_msg *m;

	tsr_enc_release(e);
	if (buf == NULL)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		free(buf);
		return NULL;
	}
	m->type = type;
	m->front = buf;
	m->front_len = len;
	return m;
}

int
tsr_msg_set_data(struct tsr_msg *m, const struct iovec *iov, int iovcnt,
		 tsr_msg_release_cb release, void *arg)
{
	size_t len = 0;

	if (iovcnt < 0 || m->data_iovcnt || m->owns_data)
		return -EINVAL;
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (iovcnt == 1) {
		m->one = iov[0];
		m->data_iov = &m->one;
	} else if (iovcnt > 1) {
		m->data_iov = malloc((size_t)iovcnt * sizeof(*iov));
		if (m->data_iov == NULL)
			return -ENOMEM;
		memcpy(m->data_iov, iov, (size_t)iovcnt * sizeof(*iov));
	}
	m->data_iovcnt = iovcnt;
	m->data_len = len;
	m->release = release;
	m->release_arg = arg;
	return 0;
}

/* Give borrowed data back (once). */
static void
msg_release(struct tsr_msg *m, int result)
{
	if (m->release) {
		tsr_msg_release_cb cb = m->release;
		m->release = NULL;
		cb(m->release_arg, result);
	}
	if (m->owns_data)
		buf_put(m->data_iov[0].iov_base, m->data_cap ? m->data_cap
							      : m->data_iov[0].iov_len);
	if (m->data_iov != &m->one)
		free(m->data_iov);
	m->data_iov = NULL;
	m->data_iovcnt = 0;
	m->owns_data = 0;
}

void
tsr_msg_free(struct tsr_msg *m, int result)
{
	if (m == NULL)
		return;
	msg_release(m, result);
	free(m->zdata);
	free(m->front);
	free(m);
}

/* ---- Options ----------------------------------------------------------------*/

void
tsr_msgr_opts_default(struct tsr_msgr_opts *o)
{
	uint8_t fsid[16];
	uint8_t type = o->entity_type;
	uint64_t id = o->entity_id;
	const char *bind = o->bind;
	const struct tsr_auth *auth = o->auth;

	memcpy(fsid, o->fsid, 16);
	memset(o, 0, sizeof(*o));
	memcpy(o->fsid, fsid, 16);
	o->entity_type = type;
	o->entity_id = id;
	o->bind = bind;
	o->auth = auth;
	o->workers = 2;
	o->dispatchers = 2;
	o->max_front = 1u << 20;
	o->max_data = 64u << 20;
	o->send_queue_bytes = 128ull << 20;
	o->recv_queue_bytes = 128ull << 20;
	o->keepalive_ms = 5000;
	o->idle_timeout_ms = 30000;
	o->reconnect_min_ms = 10;
	o->reconnect_max_ms = 2000;
	o->session_timeout_ms = 300000;
	o->compress_level = 1;
	o->recv_budget = 512ull << 20;
}

static int
hexval(int ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0'
	       : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
	       : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

int
tsr_msgr_opts_from_conf(struct tsr_conf *conf, struct tsr_msgr_opts *o,
			char *err, size_t errlen)
{
	const char *fsid = tsr_conf_str(conf, "fsid");
	uint8_t id[16] = { 0 };
	int n = 0;

	/* a UUID: 32 hex digits, dashes anywhere between pairs */
	for (const char *p = fsid; *p && n <= 32; p++) {
		int v = hexval((unsigned char)*p);
		if (*p == '-' && n % 2 == 0)
			continue;
		if (v < 0 || n == 32) {
			n = -1;
			break;
		}
		id[n / 2] = (uint8_t)(id[n / 2] << 4 | v);
		n++;
	}
	if (n != 0 && n != 32) {
		snprintf(err, errlen, "%s: option 'fsid': expected a UUID "
			 "(32 hex digits, e.g. 1f0e...-...), got '%s'",
			 tsr_conf_where(conf, "fsid"), fsid);
		return -EINVAL;
	}
	memcpy(o->fsid, id, 16);
	tsr_msgr_opts_default(o);
	o->workers = (unsigned)tsr_conf_int(conf, "ms_workers");
	o->dispatchers = (unsigned)tsr_conf_int(conf, "ms_dispatchers");
	o->max_front = (uint32_t)tsr_conf_int(conf, "ms_max_front");
	o->max_data = (uint32_t)tsr_conf_int(conf, "ms_max_data");
	o->send_queue_bytes = (uint64_t)tsr_conf_int(conf, "ms_send_queue");
	o->recv_queue_bytes = (uint64_t)tsr_conf_int(conf, "ms_recv_queue");
	o->recv_budget = (uint64_t)tsr_conf_int(conf, "ms_recv_budget");
	o->keepalive_ms = (uint32_t)tsr_conf_int(conf, "ms_keepalive");
	o->idle_timeout_ms = (uint32_t)tsr_conf_int(conf, "ms_idle_timeout");
	o->session_timeout_ms = (uint32_t)tsr_conf_int(conf, "ms_session_timeout");
	o->compress_min = (uint32_t)tsr_conf_int(conf, "ms_compress_min");
	o->inject_drop_every = (uint32_t)tsr_conf_int(conf, "ms_inject_drop_every");
	o->inject_delay_ms = (uint32_t)tsr_conf_int(conf, "ms_inject_delay");
	o->inject_refuse_every = (uint32_t)tsr_conf_int(conf, "ms_inject_refuse_every");
	return 0;
}

/* ---- Addresses --------------------------------------------------------------*/

/* "host:port" or "[v6]:port", numeric only: no name service on this path. */
static int
parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	size_t hl;
	char *end;
	unsigned long port;
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM }, *res = NULL;

	if (colon == NULL)
		return -EINVAL;
	hl = (size_t)(colon - s);
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		s++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port > 65535)
		return -EINVAL;
	if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || res == NULL)
		return -EINVAL;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void
format_addr(const struct sockaddr_storage *ss, char *out, size_t n)
{
	char h[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;
		inet_ntop(AF_INET, &a->sin_addr, h, sizeof(h));
		snprintf(out, n, "%s:%u", h, ntohs(a->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, h, sizeof(h));
		snprintf(out, n, "[%s]:%u", h, ntohs(a->sin6_port));
	} else {
		snprintf(out, n, "?");
	}
}

static void
sock_setup(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* ---- Connections: life ------------------------------------------------------*/

static void
conn_name(struct tsr_conn *c, const char *remote)
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

/* A connection, complete before anyone can see it in the list. */
static struct tsr_conn *
conn_new(struct tsr_msgr *m, int connector, int lossless, enum cstate state,
	 int fd, const char *addr)
{
	struct tsr_conn *c = calloc(1, sizeof(*c));

	if (c == NULL || (c->rbuf = malloc(RBUF_SIZE)) == NULL) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->room, NULL);
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
	conn_name(c, addr);
	c->announced = connector;
	pthread_mutex_lock(&m->lock);
	c->w = &m->workers[m->rr++ % m->nworkers];
	c->next = m->conns;
	m->conns = c;
	c->listed = 1;
	pthread_mutex_unlock(&m->lock);
	return c;
}

void
tsr_conn_get(struct tsr_conn *c)
{
	atomic_fetch_add(&c->refs, 1);
}

static void
conn_free(struct tsr_conn *c)
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
	if (c->fd >= 0)
		close(c->fd);
	if (c->pending_fd >= 0)
		close(c->pending_fd);
	free(c->rbuf);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->room);
	free(c);
}

void
tsr_conn_put(struct tsr_conn *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1)
		conn_free(c);
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

/* Post acts to c's worker (lock held). */
static void
conn_kick(struct tsr_conn *c, unsigned acts)
{
	c->acts |= acts;
	if (c->kick_pending)
		return;
	c->kick_pending = 1;
	atomic_fetch_add(&c->refs, 1);
	if (tsr_loop_timer_add(c->w->loop, 0, kick_cb, c, NULL) < 0) {
		c->kick_pending = 0;
		atomic_fetch_sub(&c->refs, 1);
	}
}

/* epoll interest of c's socket (worker, lock held). */
static void
conn_watch(struct tsr_conn *c)
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
static void
conn_fail_queue(struct tsr_conn *c, int err)
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
static void
conn_end(struct tsr_conn *c, int err)
{
	conn_drop_socket(c);
	conn_fail_queue(c, err);
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
	pthread_mutex_unlock(&c->lock);
	conn_events(c);
	tsr_conn_put(c);
}

static void
conn_fault(struct tsr_conn *c, int err, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	if (cur_worker != c->w) {
		/* a sender's thread: c's loop and socket are its worker's.
		 * Cut the socket; the worker sees the error and faults c. */
		if (c->fd >= 0)
			shutdown(c->fd, SHUT_RDWR);
		conn_kick(c, ACT_FLUSH);
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
			tsr_log_rated(&peer_lines, TSR_SUB_MSG, TSR_LOG_INFO,
				      "%s: %s; waiting for the peer", c->name, why);
		conn_drop_socket(c);
		c->state = C_STANDBY;
		c->standby_since = tsr_mono_ns();
		if (c->connector) {
			c->reconnect_at = tsr_mono_ns() + MS(c->backoff_ms);
			atomic_fetch_add(&c->refs, 1); /* the timer's */
			c->timers++;
			if (tsr_loop_timer_add(c->w->loop, MS(c->backoff_ms),
					       reconnect_cb, c, NULL) < 0) {
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
		tsr_log_rated(&peer_lines, TSR_SUB_MSG, level, "%s: %s; closing",
			      c->name, why);
	}
	conn_end(c, err);
}

/* ---- Sending ----------------------------------------------------------------*/

/* writev that never raises SIGPIPE: a peer that went away is an error
 * return, not the death of the daemon. */
static ssize_t
send_iov(int fd, struct iovec *iov, int n)
{
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };

	return sendmsg(fd, &mh, MSG_NOSIGNAL);
}

static void
frame_ctl(uint8_t *out, uint32_t type, size_t front_len, uint64_t ack)
{
	struct tsr_frame_hdr h = { .version = TSR_FRAME_VERSION, .type = type,
				   .front_len = (uint32_t)front_len, .ack = ack };
	tsr_frame_hdr_encode(&h, out);
}

/* Append a control frame with front to the handshake bytes (lock held). */
static int
ctl_append(struct tsr_conn *c, uint32_t type, const void *front, size_t len)
{
	uint8_t foot[4];
	uint32_t crc = tsr_crc32c(0, front, len);

	if (c->ctl_len + TSR_FRAME_HDR + len + 4 > CTL_MAX)
		return -ENOSPC;
	frame_ctl(c->ctl + c->ctl_len, type, len, c->in_seq);
	memcpy(c->ctl + c->ctl_len + TSR_FRAME_HDR, front, len);
	tsr_frame_footer_put(foot, crc);
	memcpy(c->ctl + c->ctl_len + TSR_FRAME_HDR + len, foot, 4);
	c->ctl_len += TSR_FRAME_HDR + len + 4;
	return 0;
}

/* Whoever writes a message compresses it (a sender's thread or a
 * worker), each thread with its own context, freed when the thread ends. */
static pthread_key_t cctx_key;
static pthread_once_t cctx_once = PTHREAD_ONCE_INIT;

static void
cctx_free(void *p)
{
	ZSTD_freeCCtx(p);
}

static void
cctx_key_init(void)
{
	pthread_key_create(&cctx_key, cctx_free);
}

static ZSTD_CCtx *
thread_cctx(void)
{
	ZSTD_CCtx *z;

	pthread_once(&cctx_once, cctx_key_init);
	z = pthread_getspecific(cctx_key);
	if (z == NULL && (z = ZSTD_createCCtx()) != NULL &&
	    pthread_setspecific(cctx_key, z) != 0) {
		ZSTD_freeCCtx(z);
		z = NULL;
	}
	return z;
}

/* Header, footer and (maybe) compressed data of a message about to be
 * written (lock held). */
static void
msg_prepare(struct tsr_conn *c, struct tsr_msg *x)
{
	struct tsr_frame_hdr h = { .version = TSR_FRAME_VERSION, .type = x->type,
				   .front_len = (uint32_t)x->front_len,
				   .seq = x->seq, .ack = c->in_seq };
	struct tsr_msgr *m = c->m;

	if (!x->crc_done) {
		ZSTD_CCtx *cctx;
		if (m->o.compress_min && x->data_len >= m->o.compress_min &&
		    (c->peer_features & TSR_FEATURE_ZSTD) && x->zdata == NULL &&
		    (cctx = thread_cctx()) != NULL) {
			size_t cap = ZSTD_compressBound(x->data_len);
			uint8_t *z = malloc(cap), *flat = NULL;
			const void *src = x->data_iovcnt == 1 ? x->data_iov[0].iov_base : NULL;

			if (z && src == NULL && (flat = malloc(x->data_len)) != NULL) {
				size_t o = 0;
				for (int i = 0; i < x->data_iovcnt; i++) {
					memcpy(flat + o, x->data_iov[i].iov_base,
					       x->data_iov[i].iov_len);
					o += x->data_iov[i].iov_len;
				}
				src = flat;
			}
			if (z && src) {
				size_t n = ZSTD_compressCCtx(cctx, z, cap, src,
							     x->data_len, m->o.compress_level);
				if (!ZSTD_isError(n) && n < x->data_len) {
					x->zdata = z;
					x->zlen = n;
					z = NULL;
				}
			}
			free(z);
			free(flat);
		}
		uint32_t crc = tsr_crc32c(0, x->front, x->front_len);
		if (x->zdata)
			crc = tsr_crc32c(crc, x->zdata, x->zlen);
		else
			for (int i = 0; i < x->data_iovcnt; i++)
				crc = tsr_crc32c(crc, x->data_iov[i].iov_base,
						 x->data_iov[i].iov_len);
		tsr_frame_footer_put(x->footer, crc);
		x->crc = crc;
		x->crc_done = 1;
		if (x->zdata) {
			/* the compressed copy is what gets (re)sent: the
			 * caller's buffers can go back now */
			size_t raw = x->data_len;
			msg_release(x, 0);
			x->data_len = raw;
		}
	}
	if (x->zdata) {
		h.flags = TSR_FRAME_F_ZSTD;
		h.data_len = (uint32_t)x->zlen;
	} else {
		h.data_len = (uint32_t)x->data_len;
	}
	h.data_raw_len = (uint32_t)x->data_len;
	tsr_frame_hdr_encode(&h, x->hdr);
	if (c->in_seq > c->ack_sent)
		c->ack_sent = c->in_seq;
}

static size_t
msg_wire_len(const struct tsr_msg *x)
{
	return TSR_FRAME_HDR + x->front_len + (x->zdata ? x->zlen : x->data_len) +
	       TSR_FRAME_FOOTER;
}

/* The iovecs of x from byte off on. */
static int
msg_iov(struct tsr_msg *x, size_t off, struct iovec *iov, int max)
{
	struct iovec seg[3 + IOV_BATCH];
	int n = 0, out = 0;

	seg[n++] = (struct iovec){ x->hdr, TSR_FRAME_HDR };
	if (x->front_len)
		seg[n++] = (struct iovec){ x->front, x->front_len };
	if (x->zdata)
		seg[n++] = (struct iovec){ x->zdata, x->zlen };
	else
		for (int i = 0; i < x->data_iovcnt && n < IOV_BATCH; i++)
			if (x->data_iov[i].iov_len)
				seg[n++] = x->data_iov[i];
	seg[n++] = (struct iovec){ x->footer, TSR_FRAME_FOOTER };
	for (int i = 0; i < n && out < max; i++) {
		if (off >= seg[i].iov_len) {
			off -= seg[i].iov_len;
			continue;
		}
		iov[out].iov_base = (uint8_t *)seg[i].iov_base + off;
		iov[out].iov_len = seg[i].iov_len - off;
		off = 0;
		out++;
	}
	return out;
}

/* A message was written whole (lock held). */
static void
msg_sent(struct tsr_conn *c, struct tsr_msg *x)
{
	struct tsr_msgr *m = c->m;
	int drop = 0;

	c->out_next = x->next;
	c->out_off = 0;
	if (x->seq > c->sent_seq)
		c->sent_seq = x->seq;
	pthread_mutex_lock(&m->lock);
	m->st.msgs_sent++;
	m->st.bytes_sent += msg_wire_len(x);
	/* a random 1 in N, so cuts land at every point of the protocol
	 * (mid-handshake, mid-batch, right after an ack) */
	m->drop_rng ^= m->drop_rng << 13;
	m->drop_rng ^= m->drop_rng >> 7;
	m->drop_rng ^= m->drop_rng << 17;
	m->frames_sent++;
	if (m->o.inject_drop_every && m->drop_rng % m->o.inject_drop_every == 0)
		drop = 1;
	pthread_mutex_unlock(&m->lock);
	if (!c->lossless) {
		/* lossy: written is done; it is always the head */
		c->out_head = x->next;
		if (c->out_tail == x)
			c->out_tail = NULL;
		c->out_bytes -= msg_wire_len(x);
		tsr_msg_free(x, 0);
		pthread_cond_broadcast(&c->room);
	}
	if (drop && c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR); /* injected: the reader sees the reset */
}

/* Write what the socket takes (lock held). */
static void
conn_flush(struct tsr_conn *c)
{
	while (c->fd >= 0 && c->state != C_CONNECTING && c->state != C_CLOSED) {
		struct iovec iov[IOV_BATCH];
		int n = 0;
		ssize_t w;

		if (c->ctl_off < c->ctl_len) {
			iov[n++] = (struct iovec){ c->ctl + c->ctl_off, c->ctl_len - c->ctl_off };
		} else if (c->extra_off < c->extra_len) {
			iov[n++] = (struct iovec){ (void *)(c->extra + c->extra_off),
						   c->extra_len - c->extra_off };
		} else if (c->close_after_ctl) {
			conn_end(c, -ECONNREFUSED);
			return;
		} else if (c->state == C_OPEN && c->out_next) {
			struct tsr_msg *x = c->out_next;
			size_t off = c->out_off;
			while (x && n < IOV_BATCH - 2) {
				if (off == 0)
					msg_prepare(c, x);
				n += msg_iov(x, off, iov + n, IOV_BATCH - n);
				off = 0;
				x = x->next;
			}
		} else if (c->state == C_OPEN &&
			   (c->want_keepalive_ack || c->want_keepalive)) {
			/* keepalive (ack) frames carry a stamp in their front */
			uint8_t st[8];
			uint32_t crc;
			uint32_t type = c->want_keepalive_ack ? TSR_MSG_KEEPALIVE_ACK
							      : TSR_MSG_KEEPALIVE;
			for (int i = 0; i < 8; i++)
				st[i] = (uint8_t)(c->ka_stamp >> (8 * i));
			frame_ctl(c->ka_frame, type, 8, c->in_seq);
			memcpy(c->ka_frame + TSR_FRAME_HDR, st, 8);
			crc = tsr_crc32c(0, st, 8);
			tsr_frame_footer_put(c->ka_frame + TSR_FRAME_HDR + 8, crc);
			if (c->want_keepalive_ack)
				c->want_keepalive_ack = 0;
			else
				c->want_keepalive = 0;
			if (c->in_seq > c->ack_sent)
				c->ack_sent = c->in_seq;
			c->extra = c->ka_frame;
			c->extra_len = sizeof(c->ka_frame);
			c->extra_off = 0;
			continue;
		} else if (c->state == C_OPEN && c->in_seq > c->ack_sent) {
			/* an empty body: the footer is the CRC of nothing */
			frame_ctl(c->ack_frame, TSR_MSG_ACK, 0, c->in_seq);
			tsr_frame_footer_put(c->ack_frame + TSR_FRAME_HDR,
					     tsr_crc32c(0, NULL, 0));
			c->ack_sent = c->in_seq;
			c->extra = c->ack_frame;
			c->extra_len = sizeof(c->ack_frame);
			c->extra_off = 0;
			continue;
		} else {
			return;
		}
		w = send_iov(c->fd, iov, n);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EINTR)
				continue;
			conn_fault(c, -errno, "write: %s", strerror(errno));
			return;
		}
		size_t left = (size_t)w;
		if (c->ctl_off < c->ctl_len) {
			c->ctl_off += left;
			if (c->ctl_off == c->ctl_len)
				c->ctl_off = c->ctl_len = 0;
			continue;
		}
		if (c->extra_off < c->extra_len) {
			c->extra_off += left;
			if (c->extra_off == c->extra_len)
				c->extra_off = c->extra_len = 0;
			continue;
		}
		while (left > 0 && c->out_next) {
			struct tsr_msg *x = c->out_next;
			size_t rest = msg_wire_len(x) - c->out_off;
			if (left < rest) {
				c->out_off += left;
				left = 0;
				break;
			}
			left -= rest;
			msg_sent(c, x);
			if (c->fd < 0)
				return;
		}
	}
}

int
tsr_conn_send(struct tsr_conn *c, struct tsr_msg *x, unsigned flags)
{
	size_t len;

	if (x == NULL)
		return -EINVAL;
	if (x->type < TSR_MSG_USER || x->front_len > c->m->o.max_front ||
	    x->data_len > c->m->o.max_data) {
		tsr_msg_free(x, -EINVAL);
		return -EINVAL;
	}
	len = msg_wire_len(x);
	pthread_mutex_lock(&c->lock);
	while (c->state != C_CLOSED && c->out_bytes > 0 &&
	       c->out_bytes + len > c->m->o.send_queue_bytes) {
		if ((flags & TSR_SEND_NOWAIT) || cur_worker != NULL) {
			pthread_mutex_unlock(&c->lock);
			tsr_msg_free(x, -EAGAIN);
			return -EAGAIN;
		}
		pthread_cond_wait(&c->room, &c->lock);
	}
	if (c->state == C_CLOSED) {
		int err = c->close_err ? c->close_err : -ENOTCONN;
		pthread_mutex_unlock(&c->lock);
		tsr_msg_free(x, err);
		return err;
	}
	x->seq = ++c->out_seq;
	x->next = NULL;
	x->crc_done = 0;
	if (c->out_tail)
		c->out_tail->next = x;
	else
		c->out_head = x;
	c->out_tail = x;
	if (c->out_next == NULL && c->out_off == 0)
		c->out_next = x;
	c->out_bytes += len;
	if (c->state == C_OPEN && c->fd >= 0) {
		conn_flush(c);
		if (c->state == C_OPEN && c->fd >= 0 && c->out_next != NULL)
			conn_kick(c, ACT_FLUSH);
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* The peer has everything up to ack: forget it (lock held).  With
 * written_only, only messages written on this socket go (a frame's ack
 * cannot cover more); a handshake's in_seq may cover messages written on
 * an earlier socket, which a reconnect had put back in line. */
static void
conn_drop_acked(struct tsr_conn *c, uint64_t ack, int written_only)
{
	while (c->out_head && c->out_head->seq <= ack &&
	       (!written_only || c->out_head != c->out_next)) {
		struct tsr_msg *x = c->out_head;
		if (c->out_next == x) {
			c->out_next = x->next;
			c->out_off = 0;
		}
		c->out_head = x->next;
		if (c->out_tail == x)
			c->out_tail = NULL;
		c->out_bytes -= msg_wire_len(x);
		tsr_msg_free(x, 0);
	}
	pthread_cond_broadcast(&c->room);
}

static void
conn_acked(struct tsr_conn *c, uint64_t ack)
{
	conn_drop_acked(c, ack, 1);
}

/* ---- Handshake ---------------------------------------------------------------*/

/* What the worker owes the owner once c's lock is dropped. */
struct after {
	struct tsr_msg *inl_head, *inl_tail; /* inline handlers' messages */
	struct tsr_conn *moved_to;   /* acceptor: the session resumed */
	struct tsr_hello moved_hello;
	int accept_ev, reset_ev;
	struct tsr_conn *old[16];    /* a restarted peer's old sessions */
	size_t nold;
};


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
	snprintf(h->addr, sizeof(h->addr), "%s", m->addr);
	if (c->connector && m->o.auth) {
		snprintf(h->auth_name, sizeof(h->auth_name), "%s",
			 tsr_auth_name(m->o.auth));
		snprintf(h->auth_target, sizeof(h->auth_target), "%s",
			 c->auth_target);
		memcpy(h->auth_nonce, c->auth_cnonce, sizeof(h->auth_nonce));
	} else if (!c->connector && c->has_reply) {
		h->has_proof = 1;
		memcpy(h->auth_proof, c->auth_reply, sizeof(h->auth_proof));
	}
}

static int
hello_queue(struct tsr_conn *c)
{
	struct tsr_hello h;
	struct tsr_enc e;
	int rc;

	hello_fill(c, &h);
	tsr_enc_init(&e);
	tsr_hello_encode(&h, &e);
	rc = tsr_enc_error(&e) ? tsr_enc_error(&e)
			       : ctl_append(c, TSR_MSG_HELLO, e.buf, e.len);
	tsr_enc_release(&e);
	return rc;
}

/* Refuse the peer: tell it why, log it, close once written (lock held). */
static void
conn_refuse(struct tsr_conn *c, const char *why)
{
	struct tsr_msgr *m = c->m;

	tsr_log_rated(&peer_lines, TSR_SUB_MSG, TSR_LOG_WARN, "%s: refused: %s",
		      c->name, why);
	pthread_mutex_lock(&m->lock);
	m->st.refused++;
	pthread_mutex_unlock(&m->lock);
	ctl_append(c, TSR_MSG_REFUSE, why, strlen(why));
	c->close_after_ctl = 1;
	conn_flush(c);
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
static void
count_resent(struct tsr_conn *c)
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
	c->ack_sent = 0;
	c->out_next = c->out_head;
	c->out_off = 0;
}

/* Connector: the acceptor's hello (lock held).  1 if the owner is owed a
 * reset event. */
static int
connector_hello(struct tsr_conn *c, const struct tsr_hello *h)
{
	const char *why = hello_check(c->m, h);
	int reset = 0;
	char remote[64];

	if (why) {
		conn_fault(c, -EPROTO, "%s", why);
		return 0;
	}
	if (c->m->o.auth) {
		/* the acceptor must prove it holds our key too: anyone can
		 * listen on an address */
		struct tsr_auth_hs hs = { c->m->o.fsid, tsr_auth_name(c->m->o.auth),
					  c->auth_target, c->auth_cnonce,
					  c->auth_snonce };
		if (c->auth_state != AS_PROVED || !h->has_proof ||
		    tsr_auth_check_acceptor(c->m->o.auth, &hs, h->auth_proof) < 0) {
			tsr_log_rated(&own_lines, TSR_SUB_MSG, TSR_LOG_ERROR,
				      "%s: the peer did not prove it holds the key of "
				      "%s (%s): not a monitor of this cluster, or "
				      "another cluster's secret", c->name,
				      tsr_auth_name(c->m->o.auth),
				      c->auth_state != AS_PROVED ? "it asked for no proof"
								 : "wrong proof");
			conn_end(c, -EACCES);
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
	conn_name(c, remote);
	/* what the peer already has goes; the rest is sent again */
	c->out_next = c->out_head;
	c->out_off = 0;
	if (h->in_seq > c->out_seq) {
		conn_fault(c, -EPROTO, "peer claims messages never sent");
		return 0;
	}
	conn_drop_acked(c, h->in_seq, 0);
	c->out_next = c->out_head;
	c->state = C_OPEN;
	c->backoff_ms = c->m->o.reconnect_min_ms;
	count_resent(c);
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
	conn_name(c, remote);
	if (why) {
		conn_refuse(c, why);
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
		hello_queue(c);
		a->accept_ev = 1;
		return c;
	}
	return s;
}

/* Acceptor: the connector is who it says (or nobody asked): open or
 * resume its session (worker, lock held). */
static void
acceptor_open(struct tsr_conn *c, struct tsr_hello *hello, struct after *a)
{
	struct tsr_conn *s = acceptor_hello(c, hello, a);

	if (s != NULL && s != c) {
		a->moved_to = s;
		a->moved_hello = *hello;
	} else if (s == c) {
		snprintf(c->addr, sizeof(c->addr), "%s",
			 hello->addr[0] ? hello->addr : c->addr);
		c->announced = 1;
		conn_flush(c);
	}
}

/* Acceptor: the connector's hello, when we require authentication: it
 * must name itself; we send our nonce and wait for its proof. */
static void
acceptor_challenge(struct tsr_conn *c, const struct tsr_hello *h)
{
	const char *why = hello_check(c->m, h);
	char reason[160];

	if (why != NULL) {
		conn_refuse(c, why);
		return;
	}
	if (h->auth_name[0] == '\0') {
		conn_refuse(c, "authentication required: the peer presented no "
			    "name and key (set `keyring` in its configuration)");
		return;
	}
	if (strcmp(h->auth_target, tsr_auth_name(c->m->o.auth)) != 0) {
		/* a handshake relayed from a connection to someone else */
		snprintf(reason, sizeof(reason), "the peer meant to reach %s, not "
			 "%s", h->auth_target[0] ? h->auth_target : "nobody named",
			 tsr_auth_name(c->m->o.auth));
		conn_refuse(c, reason);
		return;
	}
	if (tsr_auth_can_check(c->m->o.auth, h->auth_name, &why) < 0) {
		snprintf(reason, sizeof(reason), "cannot authenticate %s: %s",
			 h->auth_name, why);
		conn_refuse(c, reason);
		return;
	}
	c->hs_hello = *h;
	tsr_auth_random(c->auth_snonce, sizeof(c->auth_snonce));
	if (ctl_append(c, TSR_MSG_CHALLENGE, c->auth_snonce,
		       sizeof(c->auth_snonce)) < 0) {
		conn_fault(c, -ENOMEM, "cannot queue the challenge");
		return;
	}
	c->auth_state = AS_CHALLENGED;
	conn_flush(c);
}

/* Acceptor: the connector's proof (AUTH); checked, the session opens. */
static void
acceptor_check(struct tsr_conn *c, const struct tsr_msg *x, struct after *a)
{
	struct tsr_auth_hs hs = { c->m->o.fsid, c->hs_hello.auth_name,
				  c->hs_hello.auth_target, c->hs_hello.auth_nonce,
				  c->auth_snonce };
	char reason[128];

	if (c->connector || c->state != C_HELLO || c->auth_state != AS_CHALLENGED ||
	    x->front_len != TSR_AUTH_PROOF_LEN) {
		conn_refuse(c, "protocol error: a proof that was not asked for");
		return;
	}
	if (tsr_auth_accept(c->m->o.auth, &hs, x->front, c->auth_reply) < 0) {
		/* logged at a rate (conn_refuse): a wrong key is an
		 * operator's mistake or an attack, and either may repeat
		 * thousands of times a second */
		snprintf(reason, sizeof(reason), "authentication failed for %s: "
			 "wrong key", c->hs_hello.auth_name);
		conn_refuse(c, reason);
		return;
	}
	c->has_reply = 1;
	c->auth_state = AS_NONE;
	c->hs_hello.has_proof = 1; /* the name is proved (acceptor_hello) */
	memcpy(c->hs_hello.auth_proof, c->auth_reply, TSR_AUTH_PROOF_LEN);
	acceptor_open(c, &c->hs_hello, a);
}

/* Connector: the acceptor's nonce; we prove we hold our key. */
static void
connector_prove(struct tsr_conn *c, const struct tsr_msg *x)
{
	struct tsr_msgr *m = c->m;
	uint8_t proof[TSR_AUTH_PROOF_LEN];

	if (!c->connector || c->state != C_HELLO || c->auth_state != AS_NONE ||
	    x->front_len != TSR_AUTH_NONCE_LEN) {
		conn_fault(c, -EPROTO, "protocol error: an unexpected challenge");
		return;
	}
	if (m->o.auth == NULL) {
		tsr_log_rated(&own_lines, TSR_SUB_MSG, TSR_LOG_ERROR,
			      "%s: the peer requires authentication and we have "
			      "no key (set `keyring`)", c->name);
		conn_end(c, -EACCES);
		return;
	}
	memcpy(c->auth_snonce, x->front, TSR_AUTH_NONCE_LEN);
	struct tsr_auth_hs hs = { m->o.fsid, tsr_auth_name(m->o.auth),
				  c->auth_target, c->auth_cnonce, c->auth_snonce };
	tsr_auth_connector_proof(m->o.auth, &hs, proof);
	if (ctl_append(c, TSR_MSG_AUTH, proof, sizeof(proof)) < 0) {
		conn_fault(c, -ENOMEM, "cannot queue our proof");
		return;
	}
	c->auth_state = AS_PROVED;
	conn_flush(c);
}

/* ---- Receiving ----------------------------------------------------------------*/

/* A copy of type's handler (fn NULL if none): the table may grow. */
static struct handler
handler_for(struct tsr_msgr *m, uint32_t type)
{
	struct handler h = { NULL, NULL, 0 };

	pthread_mutex_lock(&m->lock);
	if (type < m->nhandlers)
		h = m->handlers[type];
	pthread_mutex_unlock(&m->lock);
	return h;
}

/* Queue a received message for its handler (lock held). */
static void
dispatch_queue(struct tsr_conn *c, struct tsr_msg *x)
{
	struct tsr_msgr *m = c->m;

	x->next = NULL;
	x->enq_ns = tsr_mono_ns();
	if (c->dq_tail)
		c->dq_tail->next = x;
	else
		c->dq_head = x;
	c->dq_tail = x;
	c->dq_bytes += x->front_len + x->data_len;
	if (c->dq_bytes > m->o.recv_queue_bytes && !c->read_paused) {
		c->read_paused = 1;
		conn_watch(c);
	}
	/* the messenger's budget, over all connections (Ceph's dispatch
	 * throttle): above it this connection stops reading — TCP tells
	 * the peer to back off — until the handlers catch up (tick_conn) */
	if (atomic_fetch_add(&m->rx_queued, x->front_len + x->data_len) +
		    x->front_len + x->data_len > m->o.recv_budget) {
		/* also when its own limit paused it first: then only the
		 * tick, which looks at the total, may resume it */
		c->gpaused = 1;
		if (!c->read_paused) {
			c->read_paused = 1;
			conn_watch(c);
		}
	}
	pthread_mutex_lock(&m->dlock);
	if (!c->dq_listed && !c->dq_active) {
		c->dq_listed = 1;
		atomic_fetch_add(&c->refs, 1);
		c->dnext = NULL;
		if (m->dtail)
			m->dtail->dnext = c;
		else
			m->dhead = c;
		m->dtail = c;
		pthread_cond_signal(&m->dcond);
	}
	pthread_mutex_unlock(&m->dlock);
}

static void
deliver(struct tsr_conn *c, struct tsr_msg *x, struct handler h)
{
	if (h.fn == NULL) {
		tsr_log(TSR_SUB_MSG, TSR_LOG_WARN, "%s: no handler for "
			"message type %u; dropped", c->name, x->type);
		tsr_msg_free(x, 0);
		return;
	}
	h.fn(c, x, h.arg);
}

static void *
dispatch_main(void *arg)
{
	struct tsr_msgr *m = arg;

	pthread_mutex_lock(&m->dlock);
	for (;;) {
		struct tsr_conn *c;

		while (m->dhead == NULL && !m->dstop)
			pthread_cond_wait(&m->dcond, &m->dlock);
		if (m->dhead == NULL)
			break;
		c = m->dhead;
		m->dhead = c->dnext;
		if (m->dhead == NULL)
			m->dtail = NULL;
		c->dq_listed = 0;
		c->dq_active = 1;
		pthread_mutex_unlock(&m->dlock);

		for (;;) {
			struct tsr_msg *x;
			int resume = 0;

			pthread_mutex_lock(&c->lock);
			x = c->dq_head;
			if (x) {
				c->dq_head = x->next;
				if (c->dq_head == NULL)
					c->dq_tail = NULL;
				c->dq_bytes -= x->front_len + x->data_len;
				atomic_fetch_sub(&m->rx_queued,
						 x->front_len + x->data_len);
				if (c->read_paused && !c->gpaused &&
				    c->dq_bytes <= m->o.recv_queue_bytes / 2) {
					conn_kick(c, ACT_READ);
					resume = 1;
				}
			}
			pthread_mutex_unlock(&c->lock);
			(void)resume;
			if (x == NULL)
				break;
			if (m->o.inject_delay_ms) {
				uint64_t due = x->enq_ns + MS(m->o.inject_delay_ms);
				uint64_t now = tsr_mono_ns();
				if (due > now) {
					struct timespec ts = {
						(time_t)((due - now) / 1000000000u),
						(long)((due - now) % 1000000000u) };
					nanosleep(&ts, NULL);
				}
			}
			deliver(c, x, handler_for(m, x->type));
		}

		/* c's lock before the pool's (the order dispatch_queue uses) */
		pthread_mutex_lock(&c->lock);
		pthread_mutex_lock(&m->dlock);
		c->dq_active = 0;
		if (c->dq_head != NULL && !c->dq_listed) {
			/* came while dq_active kept it off the list */
			c->dq_listed = 1;
			c->dnext = NULL;
			if (m->dtail)
				m->dtail->dnext = c;
			else
				m->dhead = c;
			m->dtail = c;
			pthread_mutex_unlock(&c->lock);
			continue; /* the list keeps our reference */
		}
		pthread_mutex_unlock(&m->dlock);
		pthread_mutex_unlock(&c->lock);
		tsr_conn_put(c);
		pthread_mutex_lock(&m->dlock);
	}
	pthread_mutex_unlock(&m->dlock);
	return NULL;
}

/* ---- Reading frames -------------------------------------------------------*/


static uint64_t
get_le64(const uint8_t *p)
{
	return (uint64_t)tsr_frame_footer_get(p) |
	       (uint64_t)tsr_frame_footer_get(p + 4) << 32;
}

/* A whole frame is in c->rmsg / c->rh (worker, lock held). */
static void
frame_done(struct tsr_conn *c, struct after *a)
{
	struct tsr_msgr *m = c->m;
	struct tsr_frame_hdr h = c->rh;
	struct tsr_msg *x = c->rmsg;
	uint32_t crc;

	c->rmsg = NULL;
	c->have_hdr = 0;
	c->rgot = 0;
	crc = tsr_crc32c(0, x->front, x->front_len);
	if (c->rzdata)
		crc = tsr_crc32c(crc, c->rzdata, h.data_len);
	else if (x->data_len)
		crc = tsr_crc32c(crc, x->data_iov[0].iov_base, x->data_len);
	if (crc != tsr_frame_footer_get(c->rfooter)) {
		tsr_msg_free(x, 0);
		pthread_mutex_lock(&m->lock);
		m->st.bad_frames++;
		pthread_mutex_unlock(&m->lock);
		conn_fault(c, -EBADMSG, "bad frame from peer: payload checksum "
			   "mismatch (type %u, %u + %u bytes)", h.type,
			   h.front_len, h.data_len);
		return;
	}
	if (c->rzdata) {
		size_t n = ZSTD_decompressDCtx(m->dctx[c->w->idx],
					       x->data_iov[0].iov_base, x->data_len,
					       c->rzdata, h.data_len);
		free(c->rzdata);
		c->rzdata = NULL;
		if (ZSTD_isError(n) || n != x->data_len) {
			tsr_msg_free(x, 0);
			conn_fault(c, -EBADMSG, "bad frame from peer: compressed "
				   "data does not decompress to its stated length");
			return;
		}
	}
	c->last_rx = tsr_mono_ns();
	pthread_mutex_lock(&m->lock);
	m->st.bytes_received += TSR_FRAME_HDR + h.front_len + h.data_len + 4;
	pthread_mutex_unlock(&m->lock);
	if (c->state == C_OPEN)
		conn_acked(c, h.ack);

	switch (h.type) {
	case TSR_MSG_HELLO: {
		struct tsr_hello hello;
		const char *why;

		if (c->state != C_HELLO) {
			tsr_msg_free(x, 0);
			conn_fault(c, -EPROTO, "protocol error: hello on an open "
				   "connection");
			return;
		}
		if (tsr_hello_decode(x->front, x->front_len, &hello, &why) < 0) {
			tsr_msg_free(x, 0);
			if (c->connector)
				conn_fault(c, -EPROTO, "bad hello: %s", why);
			else
				conn_refuse(c, why);
			return;
		}
		tsr_msg_free(x, 0);
		if (c->connector) {
			a->reset_ev = connector_hello(c, &hello);
			conn_flush(c);
		} else {
			/* a connector's hello carries no proof: only ours,
			 * once its proof is checked, sets has_proof */
			hello.has_proof = 0;
			if (c->m->o.auth)
				acceptor_challenge(c, &hello);
			else
				acceptor_open(c, &hello, a);
		}
		return;
	}
	case TSR_MSG_CHALLENGE:
		connector_prove(c, x);
		tsr_msg_free(x, 0);
		return;
	case TSR_MSG_AUTH:
		acceptor_check(c, x, a);
		tsr_msg_free(x, 0);
		return;
	case TSR_MSG_REFUSE: {
		/* the peer's own words, perhaps an impostor's: quoted, cut
		 * short, printable only, and at a rate */
		char why[97];
		size_t n = x->front_len < sizeof(why) - 1 ? x->front_len : sizeof(why) - 1;
		int auth = c->auth_state == AS_PROVED;

		for (size_t i = 0; i < n; i++)
			why[i] = x->front[i] >= 0x20 && x->front[i] < 0x7f &&
				 x->front[i] != '"' ? (char)x->front[i] : '?';
		why[n] = '\0';
		tsr_log_rated(&own_lines, TSR_SUB_MSG, TSR_LOG_WARN,
			      "%s: the peer refused us%s: \"%s%s\"", c->name,
			      auth ? " after our proof" : "", why,
			      x->front_len > n ? "..." : "");
		tsr_msg_free(x, 0);
		conn_end(c, auth ? -EACCES : -ECONNREFUSED);
		return;
	}
	case TSR_MSG_ACK:
	case TSR_MSG_KEEPALIVE_ACK:
		tsr_msg_free(x, 0);
		return;
	case TSR_MSG_KEEPALIVE:
		c->want_keepalive_ack = 1;
		c->ka_stamp = x->front_len == 8 ? get_le64(x->front) : 0;
		tsr_msg_free(x, 0);
		return;
	}
	if (h.type < TSR_MSG_USER || c->state != C_OPEN) {
		tsr_msg_free(x, 0);
		conn_fault(c, -EPROTO, "protocol error: message type %u %s", h.type,
			   h.type < TSR_MSG_USER ? "is not a known control type"
						 : "before the handshake");
		return;
	}
	if (h.seq <= c->in_seq) {
		tsr_msg_free(x, 0);
		pthread_mutex_lock(&m->lock);
		m->st.duplicates_dropped++;
		pthread_mutex_unlock(&m->lock);
		return;
	}
	if (h.seq != c->in_seq + 1) {
		tsr_msg_free(x, 0);
		conn_fault(c, -EPROTO, "protocol error: message %" PRIu64 " after %"
			   PRIu64 " (a gap)", h.seq, c->in_seq);
		return;
	}
	c->in_seq = h.seq;
	x->seq = h.seq;
	pthread_mutex_lock(&m->lock);
	m->st.msgs_received++;
	pthread_mutex_unlock(&m->lock);
	struct handler hd = handler_for(m, x->type);
	if (hd.fn && (hd.flags & TSR_MSGR_INLINE) && !m->o.inject_delay_ms) {
		x->next = NULL;
		if (a->inl_tail)
			a->inl_tail->next = x;
		else
			a->inl_head = x;
		a->inl_tail = x;
	} else {
		dispatch_queue(c, x);
	}
}

/* A header was decoded into c->rh: set up the body's buffers (worker,
 * lock held).  0, or a fault was raised. */
static int
body_start(struct tsr_conn *c)
{
	struct tsr_msg *x = calloc(1, sizeof(*x));
	const struct tsr_frame_hdr *h = &c->rh;

	if (x == NULL)
		goto nomem;
	x->type = h->type;
	x->front_len = h->front_len;
	if (h->front_len && (x->front = malloc(h->front_len)) == NULL)
		goto nomem;
	if (h->data_raw_len) {
		void *d = buf_get(h->data_raw_len, &x->data_cap);
		if (d == NULL)
			goto nomem;
		x->one = (struct iovec){ d, h->data_raw_len };
		x->data_iov = &x->one;
		x->data_iovcnt = 1;
		x->owns_data = 1;
		x->data_len = h->data_raw_len;
	}
	if ((h->flags & TSR_FRAME_F_ZSTD) && (c->rzdata = malloc(h->data_len)) == NULL)
		goto nomem;
	c->rmsg = x;
	c->rgot = 0;
	return 0;
nomem:
	tsr_msg_free(x, 0);
	conn_fault(c, -ENOMEM, "out of memory for a %u + %u byte message",
		   h->front_len, h->data_len);
	return -ENOMEM;
}

/* The body's iovecs from byte rgot on. */
static int
body_iov(struct tsr_conn *c, struct iovec *iov)
{
	struct tsr_msg *x = c->rmsg;
	struct iovec seg[3];
	size_t off = c->rgot;
	int n = 0, out = 0;

	seg[n++] = (struct iovec){ x->front, x->front_len };
	if (c->rzdata)
		seg[n++] = (struct iovec){ c->rzdata, c->rh.data_len };
	else
		seg[n++] = (struct iovec){ x->data_len ? x->data_iov[0].iov_base : NULL,
					   x->data_len };
	seg[n++] = (struct iovec){ c->rfooter, TSR_FRAME_FOOTER };
	for (int i = 0; i < n; i++) {
		if (off >= seg[i].iov_len) {
			off -= seg[i].iov_len;
			continue;
		}
		iov[out].iov_base = (uint8_t *)seg[i].iov_base + off;
		iov[out].iov_len = seg[i].iov_len - off;
		off = 0;
		out++;
	}
	return out;
}

static size_t
body_len(const struct tsr_conn *c)
{
	return (size_t)c->rh.front_len + c->rh.data_len + TSR_FRAME_FOOTER;
}

/* Take bytes of the body from the staging buffer. */
static void
body_take(struct tsr_conn *c, size_t *pos)
{
	struct iovec iov[3];
	int n = body_iov(c, iov);
	size_t avail = c->rlen - *pos;

	for (int i = 0; i < n && avail; i++) {
		size_t k = iov[i].iov_len < avail ? iov[i].iov_len : avail;
		memcpy(iov[i].iov_base, c->rbuf + *pos, k);
		*pos += k;
		avail -= k;
		c->rgot += k;
	}
}

/* Parse what the staging buffer holds (worker, lock held). */
static void
parse_staged(struct tsr_conn *c, struct after *a)
{
	size_t pos = 0;

	while (c->fd >= 0 && c->state != C_CLOSED) {
		if (c->rmsg == NULL) {
			const char *why;

			if (c->rlen - pos < TSR_FRAME_HDR)
				break;
			/* before the session opens, only what a handshake
			 * needs: an unknown peer pins no memory */
			int open = c->state == C_OPEN;
			if (tsr_frame_hdr_decode(c->rbuf + pos,
						 open ? c->m->o.max_front : TSR_FRAME_HANDSHAKE_MAX,
						 open ? c->m->o.max_data : 0, &c->rh, &why) < 0) {
				pthread_mutex_lock(&c->m->lock);
				c->m->st.bad_frames++;
				pthread_mutex_unlock(&c->m->lock);
				conn_fault(c, -EBADMSG, "bad frame from peer: %s", why);
				return;
			}
			pos += TSR_FRAME_HDR;
			if (body_start(c) < 0)
				return;
		}
		body_take(c, &pos);
		if (c->rgot < body_len(c))
			break;
		frame_done(c, a);
		if (a->moved_to)
			return;
	}
	if (c->fd < 0)
		return;
	memmove(c->rbuf, c->rbuf + pos, c->rlen - pos);
	c->rlen -= pos;
}

/* Read what the socket has (worker, lock held). */
static void
conn_read(struct tsr_conn *c, struct after *a)
{
	for (int round = 0; round < 32 && c->fd >= 0 && !c->read_paused &&
			    c->state != C_CLOSED && a->moved_to == NULL; round++) {
		ssize_t r;

		if (c->rmsg != NULL && c->rlen == 0 &&
		    body_len(c) - c->rgot >= RBUF_SIZE / 2) {
			/* a large body: straight into its buffers */
			struct iovec iov[3];
			int n = body_iov(c, iov);
			r = readv(c->fd, iov, n);
			if (r > 0) {
				c->rgot += (size_t)r;
				if (c->rgot == body_len(c))
					frame_done(c, a);
				continue;
			}
		} else {
			r = read(c->fd, c->rbuf + c->rlen, RBUF_SIZE - c->rlen);
			if (r > 0) {
				c->rlen += (size_t)r;
				parse_staged(c, a);
				continue;
			}
		}
		if (r == 0) {
			conn_fault(c, -ECONNRESET, "connection closed by the peer");
			return;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		if (errno == EINTR)
			continue;
		conn_fault(c, -errno, "read: %s", strerror(errno));
		return;
	}
}

/* ---- The worker's side ------------------------------------------------------*/

static void
conn_start_connect(struct tsr_conn *c)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, rc;

	if ((rc = parse_addr(c->addr, &ss, &len)) < 0) {
		conn_end(c, rc);
		tsr_log(TSR_SUB_MSG, TSR_LOG_ERROR, "%s: not an address "
			"(want HOST:PORT, numeric)", c->addr);
		return;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		conn_fault(c, -errno, "socket: %s", strerror(errno));
		return;
	}
	sock_setup(fd);
	pthread_mutex_lock(&c->m->lock);
	c->m->st.reconnects += c->session != 0 || c->peer_nonce != 0;
	pthread_mutex_unlock(&c->m->lock);
	c->fd = fd;
	c->state = C_CONNECTING;
	c->last_rx = tsr_mono_ns();
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
		conn_fault(c, -errno, "connect: %s", strerror(errno));
		return;
	}
	if (tsr_loop_fd_add(c->w->loop, fd, TSR_EV_WRITE, on_fd, c) < 0) {
		conn_fault(c, -ENOMEM, "cannot watch the socket");
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
		conn_fault(c, -err, "connect to %s: %s", c->addr, strerror(err));
		return;
	}
	c->state = C_HELLO;
	c->auth_state = AS_NONE;
	if (c->m->o.auth)
		tsr_auth_random(c->auth_cnonce, sizeof(c->auth_cnonce));
	if (hello_queue(c) < 0) {
		conn_fault(c, -ENOMEM, "cannot build the hello");
		return;
	}
	conn_flush(c);
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
		conn_fault(s, -EPROTO, "peer claims messages never sent");
		return;
	}
	conn_drop_acked(s, h->in_seq, 0);
	s->out_next = s->out_head;
	s->out_off = 0;
	count_resent(s);
	s->state = C_OPEN;
	hello_queue(s);
	if (tsr_loop_fd_add(s->w->loop, fd, TSR_EV_READ, on_fd, s) < 0) {
		conn_fault(s, -ENOMEM, "cannot watch the socket");
		return;
	}
	s->registered = 1;
	s->watch_ev = TSR_EV_READ;
	conn_flush(s);
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
			conn_kick(a->old[i], ACT_CLOSE);
		}
		pthread_mutex_unlock(&a->old[i]->lock);
		tsr_conn_put(a->old[i]);
	}
	a->nold = 0;
	if (a->accept_ev && m->ev.accept)
		m->ev.accept(c, m->ev.arg);
	if (a->reset_ev && m->ev.reset)
		m->ev.reset(c, m->ev.arg);
	for (struct tsr_msg *x = a->inl_head, *n; x; x = n) {
		n = x->next;
		x->next = NULL;
		deliver(c, x, handler_for(m, x->type));
	}
	if (fault && m->ev.fault)
		m->ev.fault(c, err, m->ev.arg);
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
			conn_read(c, &a);
		if (c->fd >= 0 && a.moved_to == NULL)
			conn_flush(c);
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
		if (cur_worker == s->w) {
			session_attach(s, sfd, &a.moved_hello);
			conn_watch(s);
		} else {
			/* hand over to s's worker */
			if (s->pending_fd >= 0)
				close(s->pending_fd); /* superseded */
			s->pending_fd = sfd;
			s->pending_hello = a.moved_hello;
			conn_kick(s, ACT_ATTACH);
		}
		pthread_mutex_unlock(&s->lock);
		tsr_conn_put(s);
		tsr_conn_put(c);
		return;
	}
	conn_watch(c);
	pthread_mutex_unlock(&c->lock);
	after_run(c, &a);
	tsr_conn_put(c);
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
			conn_end(c, -ECONNABORTED);
			c->announced = 0; /* the owner closed it: no event */
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
					conn_fault(c, -ENOMEM, "cannot watch the socket");
			}
		}
		if ((acts & ACT_READ) && c->read_paused && !c->gpaused &&
		    c->dq_bytes <= c->m->o.recv_queue_bytes / 2) {
			c->read_paused = 0;
			conn_read(c, &a);
		}
		if (c->fd >= 0)
			conn_flush(c);
	}
	conn_watch(c);
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
			conn_end(c, -ETIMEDOUT);
		}
		break;
	case C_CONNECTING:
	case C_HELLO:
	case C_OPEN:
		if (c->gpaused && atomic_load(&m->rx_queued) <= m->o.recv_budget / 2) {
			c->gpaused = 0;
			if (c->dq_bytes <= m->o.recv_queue_bytes / 2) {
				c->read_paused = 0;
				conn_read(c, &a);
			}
		}
		if (c->read_paused) {
			/* we stopped reading: the peer's silence is ours */
			c->last_rx = now;
		} else if (now - c->last_rx > MS(m->o.idle_timeout_ms)) {
			conn_fault(c, -ETIMEDOUT, "nothing heard for %u ms",
				   m->o.idle_timeout_ms);
		} else if (c->state == C_HELLO && !c->connector &&
			   now - c->hs_start > MS(HANDSHAKE_MS)) {
			/* a peer trickling bytes keeps last_rx fresh */
			conn_fault(c, -ETIMEDOUT, "no handshake within %u ms",
				   HANDSHAKE_MS);
		} else if (c->state == C_OPEN &&
			   now - c->last_rx > MS(m->o.keepalive_ms) &&
			   now - c->ka_stamp > MS(m->o.keepalive_ms)) {
			c->want_keepalive = 1;
			c->ka_stamp = now;
			conn_flush(c);
		}
		break;
	case C_CLOSED:
		break;
	}
	conn_watch(c);
	pthread_mutex_unlock(&c->lock);
	after_run(c, &a);
}

static void
tick_cb(void *arg)
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
	tsr_loop_timer_add(w->loop, TICK_NS, tick_cb, w, NULL);
}

/* ---- Accepting and connecting ----------------------------------------------*/

static void on_listen(struct tsr_loop *loop, int lfd, uint32_t events,
		      void *arg);

/* The pause is over: watch the listening socket again (worker 0). */
static void
accept_resume(void *arg)
{
	struct tsr_msgr *m = arg;

	if (m->reserve_fd < 0) /* another thread took it when it was spent */
		m->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (m->accept_paused && m->lfd >= 0 &&
	    tsr_loop_fd_add(m->workers[0].loop, m->lfd, TSR_EV_READ, on_listen,
			    m) == 0)
		m->accept_paused = 0;
	else if (m->accept_paused)
		tsr_loop_timer_add(m->workers[0].loop, ACCEPT_PAUSE_NS,
				   accept_resume, m, NULL);
}

/* Out of descriptors (EMFILE, ENFILE).  The waiting connection keeps the
 * listening socket readable, so the loop would spin on it: shed one
 * connection with the reserve descriptor (the peer hears a close at once
 * instead of hanging), stop watching the socket for ACCEPT_PAUSE_NS, and
 * say so at a rate (worker 0). */
static void
accept_starved(struct tsr_msgr *m, struct tsr_loop *loop, int lfd, int e)
{
	int shed = 0;

	if (m->reserve_fd >= 0) {
		close(m->reserve_fd);
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			shed = 1;
		}
		m->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	tsr_log_rated(&accept_lines, TSR_SUB_MSG, TSR_LOG_ERROR,
		      "accept on %s: %s: %s; accepting again in %u ms (raise the "
		      "descriptor limit: ulimit -n, or LimitNOFILE in systemd)",
		      m->addr, strerror(e),
		      shed ? "one waiting connection closed" : "connections wait",
		      (unsigned)(ACCEPT_PAUSE_NS / 1000000u));
	if (!m->accept_paused && tsr_loop_fd_del(loop, lfd) == 0) {
		m->accept_paused = 1;
		if (tsr_loop_timer_add(loop, ACCEPT_PAUSE_NS, accept_resume, m,
				       NULL) < 0)
			accept_resume(m);
	}
}

static void
on_listen(struct tsr_loop *loop, int lfd, uint32_t events, void *arg)
{
	struct tsr_msgr *m = arg;

	(void)loop;
	(void)events;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(lfd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct tsr_conn *c;
		char remote[64];
		uint64_t nth;

		if (fd < 0) {
			int e = errno;
			if (e == EMFILE || e == ENFILE)
				accept_starved(m, loop, lfd, e);
			else if (e != EAGAIN && e != EWOULDBLOCK && e != EINTR)
				tsr_log_rated(&accept_lines, TSR_SUB_MSG, TSR_LOG_WARN,
					      "accept on %s: %s", m->addr, strerror(e));
			return;
		}
		format_addr(&ss, remote, sizeof(remote));
		pthread_mutex_lock(&m->lock);
		nth = ++m->accepted;
		pthread_mutex_unlock(&m->lock);
		if (m->o.inject_refuse_every && nth % m->o.inject_refuse_every == 0) {
			tsr_log(TSR_SUB_MSG, TSR_LOG_INFO, "%s: connection "
				"refused (fault injection)", remote);
			close(fd);
			continue;
		}
		sock_setup(fd);
		c = conn_new(m, 0, 0, C_HELLO, fd, remote);
		if (c == NULL) {
			tsr_log(TSR_SUB_MSG, TSR_LOG_WARN, "%s: out of memory; "
				"connection dropped", remote);
			close(fd);
			continue;
		}
		pthread_mutex_lock(&c->lock);
		conn_kick(c, ACT_ATTACH);
		pthread_mutex_unlock(&c->lock);
	}
}

int
tsr_msgr_connect_to(struct tsr_msgr *m, const char *addr, const char *target,
		    int lossless, struct tsr_conn **out)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	struct tsr_conn *c;

	if (strlen(addr) >= sizeof(c->addr) || parse_addr(addr, &ss, &sl) < 0)
		return -EINVAL;
	if (m->o.auth && (target == NULL || !tsr_auth_name_valid(target, NULL)))
		return -EINVAL;
	/* standby with its reconnect due: the first connect is a reconnect
	 * that has waited nothing */
	c = conn_new(m, 1, lossless, C_STANDBY, -1, addr);
	if (c == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	if (target)
		snprintf(c->auth_target, sizeof(c->auth_target), "%s", target);
	atomic_fetch_add(&c->refs, 1); /* the caller's */
	conn_kick(c, ACT_CONNECT);
	pthread_mutex_unlock(&c->lock);
	*out = c;
	return 0;
}

int
tsr_msgr_connect(struct tsr_msgr *m, const char *addr, int lossless,
		 struct tsr_conn **out)
{
	return tsr_msgr_connect_to(m, addr, NULL, lossless, out);
}

void
tsr_conn_close(struct tsr_conn *c)
{
	pthread_mutex_lock(&c->lock);
	/* a session that ended already (a lossy fault) has nothing to
	 * close; a kick would hold a reference the worker may never drop
	 * if the messenger is destroyed first */
	if (c->state != C_CLOSED)
		conn_kick(c, ACT_CLOSE);
	pthread_mutex_unlock(&c->lock);
}

/* ---- The messenger ----------------------------------------------------------*/

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	int rc;

	cur_worker = w;
	rc = tsr_loop_run(w->loop);
	if (rc < 0)
		tsr_log(TSR_SUB_MSG, TSR_LOG_ERROR, "event loop failed: %s",
			strerror(-rc));
	return NULL;
}

static int
msgr_listen(struct tsr_msgr *m, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1;

	if (parse_addr(m->o.bind, &ss, &sl) < 0) {
		snprintf(err, errlen, "bind address '%s': want HOST:PORT with a "
			 "numeric host", m->o.bind);
		return -EINVAL;
	}
	/* a listener keeps one descriptor in reserve for when it runs out
	 * (accept_starved) */
	m->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	m->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->lfd < 0 ||
	    setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(m->lfd, (struct sockaddr *)&ss, sl) < 0 || listen(m->lfd, 128) < 0) {
		int e = errno;
		snprintf(err, errlen, "listen on %s: %s", m->o.bind, strerror(e));
		return -e;
	}
	sl = sizeof(ss);
	getsockname(m->lfd, (struct sockaddr *)&ss, &sl);
	format_addr(&ss, m->addr, sizeof(m->addr));
	return 0;
}

int
tsr_msgr_create(const struct tsr_msgr_opts *opts,
		const struct tsr_msgr_events *ev, struct tsr_msgr **out,
		char *err, size_t errlen)
{
	struct tsr_msgr *m = calloc(1, sizeof(*m));
	int rc = 0;

	if (m == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	m->o = *opts;
	if (ev)
		m->ev = *ev;
	m->lfd = -1;
	m->reserve_fd = -1;
	atomic_init(&m->rx_queued, 0);
	if (m->o.workers == 0 || m->o.workers > 64 || m->o.dispatchers == 0 ||
	    m->o.dispatchers > 256 || m->o.max_front == 0 ||
	    tsr_entity_type_name(m->o.entity_type) == NULL) {
		snprintf(err, errlen, "bad messenger options (workers 1-64, "
			 "dispatchers 1-256, a known entity type)");
		free(m);
		return -EINVAL;
	}
	if (getrandom(&m->nonce, sizeof(m->nonce), 0) != sizeof(m->nonce))
		m->nonce = tsr_mono_ns() ^ ((uint64_t)getpid() << 32);
	m->drop_rng = m->nonce | 1;
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->dlock, NULL);
	pthread_cond_init(&m->dcond, NULL);
	m->nworkers = m->o.workers;
	m->workers = calloc(m->nworkers, sizeof(*m->workers));
	m->dctx = calloc(m->nworkers, sizeof(*m->dctx));
	m->dthr = calloc(m->o.dispatchers, sizeof(*m->dthr));
	if (m->workers == NULL || m->dctx == NULL || m->dthr == NULL) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	if (m->o.bind && (rc = msgr_listen(m, err, errlen)) < 0)
		goto fail;
	for (unsigned i = 0; i < m->nworkers; i++) {
		struct worker *w = &m->workers[i];
		w->m = m;
		w->idx = i;
		if ((rc = tsr_loop_create(&w->loop)) < 0 ||
		    (m->dctx[i] = ZSTD_createDCtx()) == NULL) {
			snprintf(err, errlen, "cannot set up I/O thread %u", i);
			rc = rc < 0 ? rc : -ENOMEM;
			goto fail;
		}
		tsr_loop_timer_add(w->loop, TICK_NS, tick_cb, w, NULL);
	}
	for (unsigned i = 0; i < m->nworkers; i++) {
		if ((rc = pthread_create(&m->workers[i].thr, NULL, worker_main,
					 &m->workers[i])) != 0) {
			snprintf(err, errlen, "cannot start I/O thread: %s", strerror(rc));
			rc = -rc;
			goto fail;
		}
		m->workers[i].started = 1;
	}
	for (unsigned i = 0; i < m->o.dispatchers; i++) {
		if ((rc = pthread_create(&m->dthr[i], NULL, dispatch_main, m)) != 0) {
			snprintf(err, errlen, "cannot start dispatch thread: %s",
				 strerror(rc));
			rc = -rc;
			goto fail;
		}
		m->ndthr++;
	}
	*out = m;
	return 0;
fail:
	tsr_msgr_destroy(m);
	return rc;
}

static void
start_cb(void *arg)
{
	struct tsr_msgr *m = arg;

	if (tsr_loop_fd_add(m->workers[0].loop, m->lfd, TSR_EV_READ, on_listen, m) < 0)
		tsr_log(TSR_SUB_MSG, TSR_LOG_ERROR, "%s: cannot watch the listening "
			"socket: connections will not be accepted", m->addr);
}

void
tsr_msgr_start(struct tsr_msgr *m)
{
	if (m->lfd >= 0 && !m->started) {
		m->started = 1;
		tsr_loop_timer_add(m->workers[0].loop, 0, start_cb, m, NULL);
	}
}

void
tsr_msgr_destroy(struct tsr_msgr *m)
{
	struct tsr_conn *c, *n;

	if (m == NULL)
		return;
	for (unsigned i = 0; m->workers && i < m->nworkers; i++)
		if (m->workers[i].started) {
			tsr_loop_stop(m->workers[i].loop);
			pthread_join(m->workers[i].thr, NULL);
		}
	pthread_mutex_lock(&m->dlock);
	m->dstop = 1;
	pthread_cond_broadcast(&m->dcond);
	pthread_mutex_unlock(&m->dlock);
	for (unsigned i = 0; i < m->ndthr; i++)
		pthread_join(m->dthr[i], NULL);
	/* no thread runs now: what is left is freed outright */
	for (c = m->dhead; c; c = n) {
		n = c->dnext;
		c->dq_listed = 0;
		atomic_fetch_sub(&c->refs, 1);
	}
	for (c = m->conns; c; c = n) {
		int last;

		n = c->next;
		pthread_mutex_lock(&c->lock);
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		conn_fail_queue(c, -ESHUTDOWN);
		c->state = C_CLOSED;
		c->close_err = -ESHUTDOWN;
		c->listed = 0;
		/* the list's reference, and timers that will never run */
		last = atomic_fetch_sub(&c->refs, 1 + c->kick_pending + c->timers) ==
		       1 + c->kick_pending + c->timers;
		c->kick_pending = 0;
		c->timers = 0;
		pthread_mutex_unlock(&c->lock);
		if (last)
			conn_free(c); /* else the owner's put frees it */
	}
	m->conns = NULL;
	if (m->lfd >= 0)
		close(m->lfd);
	if (m->reserve_fd >= 0)
		close(m->reserve_fd);
	for (unsigned i = 0; m->workers && i < m->nworkers; i++) {
		tsr_loop_destroy(m->workers[i].loop);
		if (m->dctx)
			ZSTD_freeDCtx(m->dctx[i]);
	}
	free(m->workers);
	free(m->dctx);
	free(m->dthr);
	free(m->handlers);
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->dlock);
	pthread_cond_destroy(&m->dcond);
	free(m);
}

const char *
tsr_msgr_addr(const struct tsr_msgr *m)
{
	return m->addr;
}

uint64_t
tsr_msgr_nonce(const struct tsr_msgr *m)
{
	return m->nonce;
}

int
tsr_msgr_register(struct tsr_msgr *m, uint32_t type, tsr_msg_handler h,
		  void *arg, unsigned flags)
{
	int rc = 0;

	if (type < TSR_MSG_USER || type > 65535 || h == NULL ||
	    (flags & ~TSR_MSGR_INLINE))
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	if (type >= m->nhandlers) {
		uint32_t n = type + 64;
		struct handler *v = realloc(m->handlers, n * sizeof(*v));
		if (v == NULL) {
			rc = -ENOMEM;
		} else {
			memset(v + m->nhandlers, 0, (n - m->nhandlers) * sizeof(*v));
			m->handlers = v;
			m->nhandlers = n;
		}
	}
	if (rc == 0)
		m->handlers[type] = (struct handler){ h, arg, flags };
	pthread_mutex_unlock(&m->lock);
	return rc;
}

void
tsr_msgr_stats(struct tsr_msgr *m, struct tsr_msgr_stats *out)
{
	pthread_mutex_lock(&m->lock);
	*out = m->st;
	pthread_mutex_unlock(&m->lock);
	out->recv_queued = atomic_load(&m->rx_queued);
}
