/* msgr.h — the messenger: typed messages between daemons and clients over
 * TCP, framed and checksummed (frame.h), on a few epoll threads.
 *
 * Conventions.
 *
 *   A messenger (struct tsr_msgr) is one identity: cluster id, entity
 *   (osd.3, client.81724...) and a random nonce that changes on every
 *   start.  It may listen on one address, and connects to others.
 *
 *   A connection (struct tsr_conn) is a *session* with one peer, which may
 *   outlive its TCP connection.  Two policies:
 *
 *     lossless  (servers) unacknowledged messages are kept and resent, in
 *               order, after a reconnect; the receiver drops duplicates by
 *               sequence number, so each message is delivered exactly once
 *               and in order, unless the peer restarted (a new nonce), which
 *               the owner learns through the `reset` event.  The side that
 *               connected reconnects, with backoff; the accepting side
 *               keeps the session and resumes it when the peer comes back.
 *     lossy     (clients) any fault ends the session: messages not yet
 *               sent are dropped (their release callbacks get the error),
 *               the `fault` event fires, and the owner resends what it
 *               must on a new connection — typically after a map change.
 *
 *   Every message may be sent from any thread.  tsr_conn_send() takes the
 *   message; it never fails silently: on error the message is freed and
 *   its data released with the error.  A message's data iovecs are
 *   borrowed (zero copy) until the release callback says the messenger is
 *   done with them: once written (lossy) or acknowledged (lossless).
 *   Send back-pressure: each connection queues at most send_queue_bytes
 *   (unsent + unacknowledged).  When a message does not fit, the send is
 *   refused with -EAGAIN at once on the messenger's own threads (I/O and
 *   dispatch), on any thread running an event loop (event/loop.h: a
 *   daemon's main thread, a module's loop) and with TSR_SEND_NOWAIT: a
 *   handler never waits for a slow peer, which would stall every other
 *   connection it serves.  Only a program's own threads (the CLI, tests,
 *   benchmark clients) wait for room.
 *
 *   Received messages go to the handler registered for their type, on a
 *   dispatch thread; messages of one connection are handled one at a time
 *   and in order, different connections in parallel, so a slow handler
 *   holds up only its own connection.  A handler registered with
 *   TSR_MSGR_INLINE runs on the I/O thread and must not block (with
 *   TSR_MSGR_INLINE_SMALL, only messages with little data do).  The
 *   handler owns the message (tsr_msg_free).
 *
 *   Several modules share a daemon's one messenger (the monitor client,
 *   the map subscription, the beacons...).  A module opens its
 *   connections with events of its own (tsr_msgr_connect_ev): their
 *   faults, resets and every message they carry go to the module alone,
 *   whatever the message's type, and tsr_conn_close() stops them — after
 *   it returns none runs, so the module may go away.  (Called on one of
 *   the messenger's own threads, close cannot wait — the callback running
 *   may be the caller — and returns once none will start; a module that
 *   closes there must not go away before its running callback ends.)
 *
 *   Functions return 0 or a negative errno; the reason for a refused peer
 *   or a broken frame goes to the log, naming the peer.
 */
#ifndef TSR_MSG_MSGR_H
#define TSR_MSG_MSGR_H

#include "msg/frame.h"

#include <sys/uio.h>

struct tsr_msgr;
struct tsr_conn;
struct tsr_auth;

typedef void (*tsr_msg_release_cb)(void *arg, int result);

struct tsr_msg {
	uint32_t type;            /* >= TSR_MSG_USER */
	uint8_t *front;           /* owned: malloc'd */
	size_t front_len;
	/* data: borrowed iovecs (tsr_msg_set_data) or, in a received message,
	 * one owned buffer (data_iov[0]) */
	struct iovec *data_iov;
	int data_iovcnt;
	size_t data_len;
	tsr_msg_release_cb release;
	void *release_arg;

	/* the messenger's (see msgr.c) */
	struct tsr_msg *next;
	uint64_t seq;
	uint32_t crc;             /* footer: CRC32C of front || data as sent */
	int crc_done;
	uint32_t data_crc;        /* tsr_msg_set_data_crc */
	int data_crc_known;
	uint8_t *zdata;           /* compressed data, when sent compressed */
	size_t zlen;
	int owns_data;            /* data_iov[0] is ours to free */
	size_t data_cap;          /* its allocation's size (0: iov_len) */
	struct iovec one;         /* storage for a single data iovec */
	uint8_t hdr[TSR_FRAME_HDR];
	uint8_t footer[TSR_FRAME_FOOTER];
	uint64_t enq_ns;          /* for inject_delay_ms */
	size_t queued_len;        /* what it counts in its connection's
	                           * out_bytes (its length when queued,
	                           * before any compression) */
};

/* A message of the given type whose front is a copy of front[0..len), or
 * takes e's buffer (no copy) with tsr_msg_from_enc.  NULL on no memory
 * (from_enc: also when e has failed; e is released either way). */
TSR_API struct tsr_msg *tsr_msg_new(uint32_t type, const void *front, size_t len);
TSR_API struct tsr_msg *tsr_msg_from_enc(uint32_t type, struct tsr_enc *e);
/* Attach data (borrowed until release(arg, result) is called: 0 once the
 * messenger is done with it, a negative errno when the message failed),
 * in at most TSR_MSG_MAX_IOV pieces (-E2BIG). */
#define TSR_MSG_MAX_IOV 60
TSR_API int tsr_msg_set_data(struct tsr_msg *m, const struct iovec *iov, int iovcnt,
		     tsr_msg_release_cb release, void *arg);
/* A buffer several messages carry as their data (a write sent to every
 * replica, sent again on a new session): counted references, the last
 * put frees it.  new takes p (malloc'd; freed, with NULL returned, when
 * there is no memory); set_rbuf attaches the whole buffer to m as its
 * data and takes a reference, given back once the messenger is done
 * with m. */
struct tsr_rbuf {
	int refs;
	size_t len;
	uint8_t *p;
};
TSR_API struct tsr_rbuf *tsr_rbuf_new(uint8_t *p, size_t len);
TSR_API struct tsr_rbuf *tsr_rbuf_get(struct tsr_rbuf *b);
TSR_API void tsr_rbuf_put(struct tsr_rbuf *b);
TSR_API int tsr_msg_set_rbuf(struct tsr_msg *m, struct tsr_rbuf *b);
/* Free a message (releasing borrowed data with result). */
TSR_API void tsr_msg_free(struct tsr_msg *m, int result);
/* A buffer for a message's data from the messenger's pool of large ones
 * (msg.c): at least n bytes, *cap gets its size; page-aligned from 64 KiB
 * up.  give_data attaches p[0..len) to m as data it owns: the messenger
 * puts it back in the pool once done with m (-EINVAL when m has data
 * already).  A buffer not given is put back with tsr_msg_buf_put. */
TSR_API void *tsr_msg_buf_get(size_t n, size_t *cap);
TSR_API void tsr_msg_buf_put(void *p, size_t cap);
TSR_API int tsr_msg_give_data(struct tsr_msg *m, void *p, size_t len, size_t cap);
/* The data attached to m has this CRC32C (tsr_crc32c(0, data, len)), known
 * already (a store's block checksums, combined): the frame's checksum is
 * then made from it instead of from a pass over the data.  A wrong value
 * makes the peer drop the connection (a bad frame), never pass bad data. */
TSR_API void tsr_msg_set_data_crc(struct tsr_msg *m, uint32_t crc);

/* Receiving a message's data straight into the caller's buffer (a
 * client's read lands where the application asked, with no copy).  A
 * messenger given a tag function asks it, once a frame's front is in, for
 * the frame's tag (a request id that front carries; 0 for none); a buffer
 * posted on the connection under that tag, at least as long as the data,
 * then receives the data instead of one of the messenger's: the message
 * arrives with data_iov[0].iov_base == that buffer, borrowed (freeing the
 * message leaves it alone).  A posting is used at most once.  After
 * tsr_conn_revoke_rx returns, the messenger writes no more into the
 * buffer: a frame being received into it right then is moved to a buffer
 * of the messenger's first.  So a caller revokes before it hands the
 * buffer back, and ignores a message of a request it has finished.  The
 * tag function runs on an I/O thread under the connection's lock: it only
 * decodes.  post: 0 or -ENOMEM. */
typedef uint64_t (*tsr_rx_tag_fn)(uint32_t type, const uint8_t *front, size_t front_len);
struct tsr_msgr;
struct tsr_conn;
TSR_API void tsr_msgr_set_rx_tag(struct tsr_msgr *m, tsr_rx_tag_fn fn);
TSR_API int tsr_conn_post_rx(struct tsr_conn *c, uint64_t tag, void *buf, size_t cap);
TSR_API void tsr_conn_revoke_rx(struct tsr_conn *c, uint64_t tag);

struct tsr_msgr_opts {
	uint8_t fsid[16];
	uint8_t entity_type;         /* enum tsr_entity_type */
	uint64_t entity_id;
	const char *bind;            /* "127.0.0.1:6800", port 0 for any; NULL:
	                              * connect only */
	unsigned workers;            /* I/O threads (default 2) */
	unsigned dispatchers;        /* handler threads (default 2) */
	uint32_t max_front;          /* largest front accepted (1 MiB) */
	uint32_t max_data;           /* largest data accepted (64 MiB) */
	uint64_t send_queue_bytes;   /* per connection, unsent + unacked (128 MiB) */
	uint64_t recv_queue_bytes;   /* per connection, received, not yet
	                              * handled; reading pauses above (128 MiB) */
	uint32_t keepalive_ms;       /* keepalive after this much silence (5000) */
	uint32_t idle_timeout_ms;    /* fault after this much silence (30000) */
	uint32_t reconnect_min_ms;   /* lossless reconnect backoff (10 .. */
	uint32_t reconnect_max_ms;   /*   .. 2000) */
	uint32_t session_timeout_ms; /* an accepted lossless session waits this
	                              * long for its peer to come back (300000) */
	uint32_t compress_min;       /* compress data of at least this many
	                              * bytes with zstd, if the peer agrees
	                              * (0: never) */
	int compress_level;          /* zstd level (1) */
	/* fault injection, for tests (0: off) */
	uint32_t inject_drop_every;  /* cut the connection after a message
	                              * frame sent, at random 1 in N */
	uint32_t inject_delay_ms;    /* hold each received message this long */
	uint32_t inject_refuse_every;/* refuse every Nth accepted connection */
	/* who we are, and how peers prove who they are (auth/auth.h;
	 * borrowed: it must outlive the messenger).  NULL: no
	 * authentication — peers are not asked, and an acceptor that
	 * requires it refuses us.  Only tests and benchmarks run so. */
	const struct tsr_auth *auth;
	uint64_t recv_budget;        /* received bytes waiting for handlers,
	                              * all connections together; reading
	                              * pauses above (512 MiB) */
	uint32_t ack_delay_ms;       /* a received message's ack waits this
	                              * long for a frame going back before it
	                              * goes in a frame of its own (20); 64 KiB
	                              * or 64 messages unacknowledged are
	                              * acked at once */
};

/* The defaults above, for everything but fsid and entity. */
TSR_API void tsr_msgr_opts_default(struct tsr_msgr_opts *o);

/* Fill o from a resolved configuration: fsid (a UUID, "" for none) and
 * the ms_* keys (doc/configuration.md); entity and bind are the caller's.
 * -EINVAL with the reason (naming the key) on a bad fsid. */
struct tsr_conf;
TSR_API int tsr_msgr_opts_from_conf(struct tsr_conf *conf,
				    struct tsr_msgr_opts *o, char *err,
				    size_t errlen);

/* Events about connections, called on an I/O thread (must not block). */
struct tsr_msgr_events {
	/* a peer connected to us (the session is new) */
	void (*accept)(struct tsr_conn *c, void *arg);
	/* a lossy session ended (err: why); its pending messages failed */
	void (*fault)(struct tsr_conn *c, int err, void *arg);
	/* a lossless session's peer restarted: messages it had not
	 * acknowledged were sent again to the new instance */
	void (*reset)(struct tsr_conn *c, void *arg);
	void *arg;
};

typedef void (*tsr_msg_handler)(struct tsr_conn *c, struct tsr_msg *m,
				void *arg);
#define TSR_MSGR_INLINE 0x1u
/* On the I/O thread when its data (uncompressed; the front is not
 * counted) is at most TSR_MSGR_INLINE_SMALL_MAX bytes, else on a dispatch
 * thread: a small answer costs no thread switch, and a large one's
 * handling keeps off the I/O thread (which has checked every message's
 * CRC, and decompressed it, either way).  Messages of one connection may
 * then be handled out of their order.  TSR_MSGR_INLINE wins if both are
 * set. */
#define TSR_MSGR_INLINE_SMALL 0x2u
#define TSR_MSGR_INLINE_SMALL_MAX (64u << 10)

/* The events of one connection, for the module that opened it
 * (tsr_msgr_connect_ev): they replace the messenger's events and handler
 * table for that connection.  fault and reset are called on an I/O thread
 * (must not block); msg gets every message of the connection, on a
 * dispatch thread, or on the I/O thread with flags TSR_MSGR_INLINE (then
 * it must not block: a module typically posts it to its loop).  Any may
 * be NULL (a message without msg is dropped). */
struct tsr_conn_events {
	void (*fault)(struct tsr_conn *c, int err, void *arg);
	void (*reset)(struct tsr_conn *c, void *arg);
	tsr_msg_handler msg;
	unsigned flags;              /* TSR_MSGR_INLINE: msg on the I/O thread;
					TSR_MSGR_INLINE_SMALL: there when its
					data is small */
	void *arg;
};

/* Create (and bind, when opts->bind is set) and start the threads; a
 * listening messenger accepts only after tsr_msgr_start(), so that its
 * handlers are registered before the first message can arrive.  err
 * gets the reason on failure. */
TSR_API int tsr_msgr_create(const struct tsr_msgr_opts *opts,
		    const struct tsr_msgr_events *ev, struct tsr_msgr **out,
		    char *err, size_t errlen);
/* Stop the threads, close every connection (pending messages fail with
 * -ESHUTDOWN) and free.  Connection handles held must be put first or
 * are freed here. */
TSR_API void tsr_msgr_destroy(struct tsr_msgr *m);
/* Start accepting connections (after the handlers are registered). */
TSR_API void tsr_msgr_start(struct tsr_msgr *m);
/* The address we listen on ("127.0.0.1:41234"), "" if none. */
TSR_API const char *tsr_msgr_addr(const struct tsr_msgr *m);
/* The name of the key we prove ("osd.3"), NULL without one. */
TSR_API const char *tsr_msgr_auth_name(const struct tsr_msgr *m);
TSR_API uint64_t tsr_msgr_nonce(const struct tsr_msgr *m);
/* Register a handler before tsr_msgr_start() (or, for a messenger that
 * only connects, before sending what will be answered); messages of a
 * type without a handler are logged and dropped. */
TSR_API int tsr_msgr_register(struct tsr_msgr *m, uint32_t type, tsr_msg_handler h,
		      void *arg, unsigned flags);

/* A session with the peer at addr ("host:port").  The handle is the
 * caller's (tsr_conn_put).  Connecting happens in the background;
 * messages sent meanwhile wait.  target names the entity we mean to
 * reach (auth/auth.h: "mon.a"): it is bound into the handshake, and an
 * acceptor that is someone else refuses; a messenger with a key must
 * name it (-EINVAL otherwise), one without may pass NULL. */
TSR_API int tsr_msgr_connect_to(struct tsr_msgr *m, const char *addr,
				const char *target, int lossless,
				struct tsr_conn **out);
/* tsr_msgr_connect_to with no target (messengers without a key). */
TSR_API int tsr_msgr_connect(struct tsr_msgr *m, const char *addr, int lossless,
		     struct tsr_conn **out);
/* tsr_msgr_connect_to whose events go to ev (copied; ev->arg must live
 * until tsr_conn_close() has returned, or the messenger is destroyed);
 * ev NULL: the messenger's. */
TSR_API int tsr_msgr_connect_ev(struct tsr_msgr *m, const char *addr,
				const char *target, int lossless,
				const struct tsr_conn_events *ev,
				struct tsr_conn **out);
/* A lossy session that proves auth's name instead of the messenger's
 * (borrowed: it must outlive the connection) — a tool that speaks for
 * many entities, such as the tests' swarm of OSDs (tests/daemon/
 * osdswarm.c).  Its messages go to the messenger's handlers. */
TSR_API int tsr_msgr_connect_as(struct tsr_msgr *m, const char *addr,
				const char *target, const struct tsr_auth *auth,
				struct tsr_conn **out);

#define TSR_SEND_NOWAIT 0x1u   /* -EAGAIN instead of waiting for room */
#define TSR_SEND_MORE 0x2u     /* queue it, write nothing yet: more follow,
				* and tsr_conn_flush writes them all at once
				* (one writev, one wake-up of the peer) */
/* Queue msg on c (ownership passes, also on error).  When c's send queue
 * is full: -EAGAIN at once with NOWAIT, and always on a messenger thread
 * or a thread running an event loop; other threads wait for room (see
 * "Send back-pressure" above).  -EAGAIN is no fault: the session goes on,
 * and the caller decides (a control session that cannot take a small
 * message is as good as dead; a data path waits for acks). */
TSR_API int tsr_conn_send(struct tsr_conn *c, struct tsr_msg *msg, unsigned flags);
/* Write what TSR_SEND_MORE queued on c (and anything else waiting).  A
 * sender that used MORE calls it: otherwise those messages wait for c's
 * next send or other traffic, or at most for the worker's next tick
 * (100 ms). */
TSR_API void tsr_conn_flush(struct tsr_conn *c);
/* Close the session: pending messages fail with -ECONNABORTED.  For a
 * connection with its own events (tsr_msgr_connect_ev), none of them
 * reaches its owner any more, and one running on another thread has
 * returned when close returns — unless close is called on a messenger
 * thread (from a callback), which cannot wait.  (The messenger's events
 * get no fault for a session its owner closed; messages received before
 * may still reach the type's handler.) */
TSR_API void tsr_conn_close(struct tsr_conn *c);
TSR_API void tsr_conn_get(struct tsr_conn *c);
TSR_API void tsr_conn_put(struct tsr_conn *c);
/* "osd.3 127.0.0.1:6800" (or the remote address until the handshake). */
TSR_API const char *tsr_conn_peer(const struct tsr_conn *c);
TSR_API uint8_t tsr_conn_peer_type(const struct tsr_conn *c);
TSR_API uint64_t tsr_conn_peer_id(const struct tsr_conn *c);
/* The name the peer proved it holds the key of (auth/auth.h: "osd.3",
 * "client.admin"), or NULL when the session is not authenticated.  Set
 * before the first message is handled and never changed after. */
TSR_API const char *tsr_conn_peer_auth(const struct tsr_conn *c);
TSR_API int tsr_conn_is_lossless(const struct tsr_conn *c);
/* Owner's pointer, for handlers. */
TSR_API void tsr_conn_set_priv(struct tsr_conn *c, void *priv);
TSR_API void *tsr_conn_priv(const struct tsr_conn *c);

/* Counters, for tests and `perf dump`. */
struct tsr_msgr_stats {
	uint64_t msgs_sent, msgs_received, bytes_sent, bytes_received;
	uint64_t resent, duplicates_dropped, faults, reconnects;
	uint64_t refused, bad_frames;
	uint64_t acks_sent;          /* ack frames of their own (an ack
	                              * usually rides on a message) */
	uint64_t recv_queued;        /* now: received bytes waiting for
	                              * handlers, all connections */
	uint64_t writes;             /* socket writes (one may carry many
	                              * messages: TSR_SEND_MORE) */
};
TSR_API void tsr_msgr_stats(struct tsr_msgr *m, struct tsr_msgr_stats *out);
/* Messengers alive in this process (a daemon runs one: its `status`
 * may say so). */
TSR_API unsigned tsr_msgr_live(void);

#endif
