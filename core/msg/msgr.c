/* msgr.c — the messenger: accepting, connecting, its life (see msgr.h for
 * what it promises, msgr_int.h for how). */
#include "msg/msgr_int.h"
#include "event/loop.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static struct tsr_log_rate accept_lines = TSR_LOG_RATE_INIT(1, 10000);
static atomic_uint live_msgrs;     /* tsr_msgr_live */

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
		msgr_format_addr(&ss, remote, sizeof(remote));
		pthread_mutex_lock(&m->lock);
		nth = ++m->accepted;
		pthread_mutex_unlock(&m->lock);
		if (m->o.inject_refuse_every && nth % m->o.inject_refuse_every == 0) {
			tsr_log(TSR_SUB_MSG, TSR_LOG_INFO, "%s: connection "
				"refused (fault injection)", remote);
			close(fd);
			continue;
		}
		msgr_sock_setup(fd);
		c = msgr_conn_new(m, 0, 0, C_HELLO, fd, remote);
		if (c == NULL) {
			tsr_log(TSR_SUB_MSG, TSR_LOG_WARN, "%s: out of memory; "
				"connection dropped", remote);
			close(fd);
			continue;
		}
		pthread_mutex_lock(&c->lock);
		msgr_conn_kick(c, ACT_ATTACH);
		pthread_mutex_unlock(&c->lock);
	}
}

static int
connect_with(struct tsr_msgr *m, const char *addr, const char *target, int lossless,
	     const struct tsr_conn_events *ev, const struct tsr_auth *auth,
	     struct tsr_conn **out)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	struct tsr_conn *c;

	if (strlen(addr) >= sizeof(c->addr) || msgr_parse_addr(addr, &ss, &sl) < 0)
		return -EINVAL;
	if (auth && (target == NULL || !tsr_auth_name_valid(target, NULL)))
		return -EINVAL;
	if (ev && (ev->flags & ~(TSR_MSGR_INLINE | TSR_MSGR_INLINE_SMALL)))
		return -EINVAL;
	/* standby with its reconnect due: the first connect is a reconnect
	 * that has waited nothing */
	c = msgr_conn_alloc(m, 1, lossless, C_STANDBY, -1, addr);
	if (c == NULL)
		return -ENOMEM;
	/* all of it before the list: once listed, the worker's tick may
	 * connect it at once, and a refused connect ends it and drops the
	 * list's reference (a use-after-free here, and its fault told to
	 * the messenger's handlers instead of ev's, before) */
	if (ev) {
		c->own = *ev;
		c->has_own = 1;
	}
	if (target)
		snprintf(c->auth_target, sizeof(c->auth_target), "%s", target);
	c->auth = auth;
	atomic_fetch_add(&c->refs, 1); /* the caller's */
	msgr_conn_list(c);
	pthread_mutex_lock(&c->lock);
	msgr_conn_kick(c, ACT_CONNECT);
	pthread_mutex_unlock(&c->lock);
	*out = c;
	return 0;
}

int
tsr_msgr_connect_ev(struct tsr_msgr *m, const char *addr, const char *target,
		    int lossless, const struct tsr_conn_events *ev,
		    struct tsr_conn **out)
{
	return connect_with(m, addr, target, lossless, ev, m->o.auth, out);
}

int
tsr_msgr_connect_as(struct tsr_msgr *m, const char *addr, const char *target,
		    const struct tsr_auth *auth, struct tsr_conn **out)
{
	if (auth == NULL)
		return -EINVAL;
	return connect_with(m, addr, target, 0, NULL, auth, out);
}

int
tsr_msgr_connect_to(struct tsr_msgr *m, const char *addr, const char *target,
		    int lossless, struct tsr_conn **out)
{
	return tsr_msgr_connect_ev(m, addr, target, lossless, NULL, out);
}

int
tsr_msgr_connect(struct tsr_msgr *m, const char *addr, int lossless,
		 struct tsr_conn **out)
{
	return tsr_msgr_connect_ev(m, addr, NULL, lossless, NULL, out);
}

void
tsr_conn_close(struct tsr_conn *c)
{
	pthread_mutex_lock(&c->lock);
	/* a session that ended already (a lossy fault) has nothing to
	 * close; a kick would hold a reference the worker may never drop
	 * if the messenger is destroyed first */
	if (c->state != C_CLOSED)
		msgr_conn_kick(c, ACT_CLOSE);
	c->silenced = 1;
	/* an own callback running on a messenger thread finishes before we
	 * return (it may only post, or send without waiting); on such a
	 * thread we cannot wait: it may be that callback's own */
	if (msgr_cur_worker == NULL && !msgr_on_dispatch)
		while (c->cb_running > 0)
			pthread_cond_wait(&c->cb_idle, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

/* ---- The messenger ----------------------------------------------------------*/

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	int rc;

	msgr_cur_worker = w;
	pthread_setname_np(pthread_self(), "tsr-ms-io");
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

	if (msgr_parse_addr(m->o.bind, &ss, &sl) < 0) {
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
	msgr_format_addr(&ss, m->addr, sizeof(m->addr));
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
		tsr_loop_timer_add(w->loop, TICK_NS, msgr_tick_cb, w, NULL);
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
		if ((rc = pthread_create(&m->dthr[i], NULL, msgr_dispatch_main, m)) != 0) {
			snprintf(err, errlen, "cannot start dispatch thread: %s",
				 strerror(rc));
			rc = -rc;
			goto fail;
		}
		m->ndthr++;
	}
	atomic_fetch_add(&live_msgrs, 1);
	m->counted = 1;
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

	if (m->shut) /* destroyed before it ran */
		return;
	if (tsr_loop_fd_add(m->workers[0].loop, m->lfd, TSR_EV_READ, on_listen, m) < 0)
		tsr_log(TSR_SUB_MSG, TSR_LOG_ERROR, "%s: cannot watch the listening "
			"socket: connections will not be accepted", m->addr);
}

void
tsr_msgr_start(struct tsr_msgr *m)
{
	if (m->lfd >= 0 && !m->started) {
		m->started = 1;
		if (tsr_loop_post(m->workers[0].loop, start_cb, m) < 0)
			tsr_log(TSR_SUB_MSG, TSR_LOG_ERROR, "%s: out of memory: "
				"connections will not be accepted", m->addr);
	}
}

void
tsr_msgr_destroy(struct tsr_msgr *m)
{
	struct tsr_conn *c, *n;

	if (m == NULL)
		return;
	if (m->counted)
		atomic_fetch_sub(&live_msgrs, 1);
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
	for (unsigned i = 0; m->workers && i < m->nworkers; i++)
		msgr_acks_drop(&m->workers[i]);
	/* no thread runs now: what is left is freed outright; posts still
	 * queued run at the loops' destroy below, and only give back the
	 * references they hold */
	m->shut = 1;
	for (c = m->dhead; c; c = n) {
		n = c->dnext;
		c->dq_listed = 0;
		/* a closed connection the dispatch list alone still held */
		if (atomic_fetch_sub(&c->refs, 1) == 1)
			msgr_conn_free(c);
	}
	for (c = m->conns; c; c = n) {
		int last;

		n = c->next;
		pthread_mutex_lock(&c->lock);
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		msgr_conn_fail_queue(c, -ESHUTDOWN);
		/* received and never handled: gone now, so that an owner's
		 * late put (a module's post run at its loop's destroy) frees
		 * the connection without the messenger */
		for (struct tsr_msg *x = c->dq_head, *nx; x; x = nx) {
			nx = x->next;
			atomic_fetch_sub(&m->rx_queued, x->front_len + x->data_len);
			tsr_msg_free(x, -ESHUTDOWN);
		}
		c->dq_head = c->dq_tail = NULL;
		c->state = C_CLOSED;
		c->close_err = -ESHUTDOWN;
		c->listed = 0;
		/* the list's reference, and timers that will never run (a
		 * pending kick is a post: it runs, and puts its own) */
		last = atomic_fetch_sub(&c->refs, 1 + c->timers) == 1 + c->timers;
		c->timers = 0;
		pthread_mutex_unlock(&c->lock);
		if (last)
			msgr_conn_free(c); /* else the owner's put frees it */
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

unsigned
tsr_msgr_live(void)
{
	return atomic_load(&live_msgrs);
}

const char *
tsr_msgr_auth_name(const struct tsr_msgr *m)
{
	return m->o.auth ? tsr_auth_name(m->o.auth) : NULL;
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
	    (flags & ~(TSR_MSGR_INLINE | TSR_MSGR_INLINE_SMALL)))
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
		m->handlers[type] = (struct handler){ h, arg, flags, 0 };
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
	out->writes = atomic_load_explicit(&m->writes, memory_order_relaxed);
}

