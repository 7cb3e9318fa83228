/* msgr_int.h — what the messenger's files share inside core/msg: its
 * structures and the functions one file calls in another; hidden
 * (-fvisibility=hidden), not part of msgr.h, which says what the
 * messenger promises.
 *
 * The files, along the messenger's parts:
 *   msg.c        messages, and the pool of large receive buffers
 *   opts.c       options, defaults and from a configuration
 *   addr.c       addresses and socket settings
 *   conn.c       a connection's life, its worker's side (events, the
 *                socket, posted work) and time (reconnects, keepalives,
 *                timeouts)
 *   send.c       sending: framing, compression, writes, acknowledgements
 *   handshake.c  hellos, authentication, sessions resumed or restarted
 *   recv.c       reading frames
 *   dispatch.c   handlers, owners' events and the dispatch pool
 *   msgr.c       accepting, connecting, the messenger's life
 *
 * Threads.  W I/O workers, each an event loop (event/loop.h) owning the
 * sockets of the connections assigned to it; D dispatch threads running
 * handlers.  A connection's socket is read only by its worker.  It is
 * written by whoever holds the connection's lock: a sender tries the write
 * itself when the queue was empty (no thread hop on the common path) and
 * leaves what the socket did not take to the worker, which waits for
 * EPOLLOUT.  Anything that must change the worker's epoll set or socket
 * from another thread is posted to the worker's loop (msgr_conn_kick,
 * tsr_loop_post), the loop's thread-safe way in.
 *
 * Owners.  A connection opened with events of its own
 * (tsr_msgr_connect_ev) reports its faults, resets and messages to them
 * alone; the others use the messenger's events and handler table.  Own
 * callbacks are counted while they run (cb_running), so that
 * tsr_conn_close() can promise its caller that none runs any more: a
 * module may free what they use once close returns.
 *
 * Sending never waits on a thread that runs an event loop (the workers,
 * a daemon's main loop) or a handler (the dispatch threads): a full queue
 * is -EAGAIN there, as with TSR_SEND_NOWAIT.  Only a program's own threads
 * (the CLI, benchmarks, tests) may wait for room.
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
#ifndef TSR_MSG_MSGR_INT_H
#define TSR_MSG_MSGR_INT_H

#include "msg/msgr.h"
#include "auth/auth.h"
#include "log/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <zstd.h>

#define RBUF_SIZE (64u << 10)  /* read staging; larger bodies go direct */
#define CTL_MAX 512            /* pending handshake bytes */
#define HANDSHAKE_MS 10000u     /* an accepted socket's handshake, at most */
#define ACCEPT_PAUSE_NS (100u * 1000000u) /* out of descriptors: wait */
#define TICK_NS (100u * 1000000u)
#define IOV_BATCH 64
/* A received message's ack rides on the next frame sent back; a frame of
 * its own goes only when ack_delay_ms passed with nothing sent, or when
 * ACK_NOW_BYTES or ACK_NOW_MSGS went unacknowledged (the sender keeps
 * them, and its send queue counts them, until then). */
#define ACK_NOW_BYTES (64u << 10)
#define ACK_NOW_MSGS 64u
/* a frame's header, front and footer beside its data pieces */
_Static_assert(TSR_MSG_MAX_IOV + 3 <= IOV_BATCH, "a frame fits one batch");
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
	struct tsr_conn *acks;     /* owing an ack frame (worker only; refs) */
	int acks_armed;            /* its timer is pending */
};

struct handler {
	tsr_msg_handler fn;
	void *arg;
	unsigned flags;
	int own;                   /* the connection's own (gated by close) */
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
	uint64_t reconnect_timer;  /* the last one's id (0: none), which a
	                            * close cancels: a closed connection left
	                            * unlisted with a timer pending would
	                            * outlive a messenger destroyed first */
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
	size_t rx_unacked;         /* bytes received since (ACK_NOW_BYTES) */
	unsigned rx_unacked_msgs;
	int ack_force;             /* the ack timer: an ack frame now */
	int ack_listed;            /* on w->acks (worker; the list's ref) */
	struct tsr_conn *ack_next;
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
	const struct tsr_auth *auth; /* connector: the key we prove (the
	                              * messenger's, or tsr_msgr_connect_as) */
	uint8_t rfooter[TSR_FRAME_FOOTER];
	size_t rgot;               /* body bytes read */
	uint8_t *rzdata;           /* compressed data being read */
	int rdata_pending;         /* the data's buffer is chosen once the
	                            * front is in (a tag function is set) */
	void *rx_user;             /* rmsg's data is this posted buffer */
	int rx_abandon;            /* revoked with no memory to move it */
	uint64_t rx_user_tag;
	struct rx_post {           /* tsr_conn_post_rx (lock) */
		uint64_t tag;
		void *buf;
		size_t cap;
	} *rxp;
	size_t nrxp, rxp_cap;
	uint64_t last_rx;          /* ns */
	uint64_t reconnect_at, standby_since, backoff_ms;

	/* dispatch (pool lock) */
	struct tsr_msg *dq_head, *dq_tail;
	uint64_t dq_bytes;         /* under lock */
	int dq_listed, dq_active;
	int read_paused;           /* worker only */
	struct tsr_conn *dnext;

	/* the owner's events (tsr_msgr_connect_ev; set before anyone sees
	 * c, never changed) */
	struct tsr_conn_events own;
	int has_own;
	int silenced;              /* lock: tsr_conn_close(): no more own calls */
	int cb_running;            /* lock: own callbacks running now */
	pthread_cond_t cb_idle;    /* cb_running fell to 0 */

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
	tsr_rx_tag_fn rx_tag;      /* set before connections, never changed */
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

	atomic_uint_fast64_t writes;    /* socket writes (stats) */
	atomic_uint_fast64_t rx_queued; /* bytes waiting for handlers, all
	                                 * connections (o.recv_budget) */
	int reserve_fd;            /* spent to accept-and-close when out of
	                            * descriptors (-1 while spent) */
	int accept_paused;         /* listening fd unwatched (worker 0) */
	int shut;                  /* destroy joined the threads: posts that
	                            * the loops' destroy runs do nothing */
	int counted;               /* in live_msgrs */
};

/* What the worker owes the owner once c's lock is dropped. */
struct after {
	struct tsr_msg *inl_head, *inl_tail; /* inline handlers' messages */
	struct tsr_conn *moved_to;   /* acceptor: the session resumed */
	struct tsr_hello moved_hello;
	int accept_ev, reset_ev;
	struct tsr_conn *old[16];    /* a restarted peer's old sessions */
	size_t nold;
};

/* Lines a peer can cause at will are logged at a rate (log.h); our own
 * side's failures with a peer (a peer that cannot prove our key, one that
 * refused us) apart, so that a flood of bad peers cannot hide them
 * (conn.c). */
extern struct tsr_log_rate msgr_peer_lines;
extern struct tsr_log_rate msgr_own_lines;

/* The worker this thread is, or NULL; a dispatch thread (of any
 * messenger)?  (conn.c) */
extern __thread struct worker *msgr_cur_worker;
extern __thread int msgr_on_dispatch;

/* msg.c: a receive buffer of n bytes or more (*cap: its size), from the
 * pool when n is large; borrowed data given back (once), owned data to
 * the pool. */
void *msgr_buf_get(size_t n, size_t *cap);
void msgr_msg_release(struct tsr_msg *m, int result);

/* addr.c: "host:port" or "[v6]:port", numeric only; its text form;
 * TCP_NODELAY and non-blocking. */
int msgr_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);
void msgr_format_addr(const struct sockaddr_storage *ss, char *out, size_t n);
void msgr_sock_setup(int fd);

/* conn.c: a connection's life (new: alloc, then list; whatever a caller
 * sets on it goes between the two, since once listed the worker's tick
 * may connect it, fail it and drop the list's reference), work posted
 * to its worker (kick, lock held), its epoll interest
 * (watch, worker), the end of a session (end; fail_queue), a fault (a
 * lossless one goes to standby, a lossy one ends), the worker's tick. */
void msgr_conn_name(struct tsr_conn *c, const char *remote);
struct tsr_conn *msgr_conn_new(struct tsr_msgr *m, int connector, int lossless,
			       enum cstate state, int fd, const char *addr);
struct tsr_conn *msgr_conn_alloc(struct tsr_msgr *m, int connector, int lossless,
				 enum cstate state, int fd, const char *addr);
void msgr_conn_list(struct tsr_conn *c);
void msgr_conn_free(struct tsr_conn *c);
void msgr_conn_kick(struct tsr_conn *c, unsigned acts);
void msgr_conn_watch(struct tsr_conn *c);
void msgr_conn_fail_queue(struct tsr_conn *c, int err);
void msgr_conn_end(struct tsr_conn *c, int err);
void msgr_conn_fault(struct tsr_conn *c, int err, const char *fmt, ...)
	TSR_PRINTF(3, 4);
void msgr_tick_cb(void *arg);

/* send.c: a control frame appended to the handshake bytes; write what the
 * socket takes; forget what the peer acknowledged (lock held). */
int msgr_ctl_append(struct tsr_conn *c, uint32_t type, const void *front,
		    size_t len);
void msgr_conn_flush(struct tsr_conn *c);
void msgr_conn_ack_sent(struct tsr_conn *c);
void msgr_conn_ack_later(struct tsr_conn *c);
void msgr_acks_drop(struct worker *w);
void msgr_conn_drop_acked(struct tsr_conn *c, uint64_t ack, int written_only);
void msgr_conn_acked(struct tsr_conn *c, uint64_t ack);

/* handshake.c: our hello queued; a refusal; the peer's hello, challenge
 * and proof, each on its side (worker, lock held). */
int msgr_hello_queue(struct tsr_conn *c);
void msgr_conn_refuse(struct tsr_conn *c, const char *why);
void msgr_count_resent(struct tsr_conn *c);
int msgr_connector_hello(struct tsr_conn *c, const struct tsr_hello *h);
void msgr_acceptor_open(struct tsr_conn *c, struct tsr_hello *hello,
			struct after *a);
void msgr_acceptor_challenge(struct tsr_conn *c, const struct tsr_hello *h);
void msgr_acceptor_check(struct tsr_conn *c, const struct tsr_msg *x,
			 struct after *a);
void msgr_connector_prove(struct tsr_conn *c, const struct tsr_msg *x);

/* dispatch.c: who handles a message of c; the owner's fault and reset
 * events (no lock held); a received message queued for the pool (lock
 * held); a delivery; a dispatch thread. */
struct handler msgr_handler_for(struct tsr_conn *c, uint32_t type);
void msgr_event_fault(struct tsr_conn *c, int err);
void msgr_event_reset(struct tsr_conn *c);
void msgr_dispatch_queue(struct tsr_conn *c, struct tsr_msg *x);
void msgr_deliver(struct tsr_conn *c, struct tsr_msg *x, struct handler h);
void *msgr_dispatch_main(void *arg);

/* recv.c: read what the socket has (worker, lock held). */
void msgr_conn_read(struct tsr_conn *c, struct after *a);

#endif
