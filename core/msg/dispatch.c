/* dispatch.c — who handles a message (the connection's owner or the
 * handler table), owners' events, and the dispatch pool. */
#include "msg/msgr_int.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

/* ---- Receiving ----------------------------------------------------------------*/

/* Who handles a message of type on c: the connection's owner, or a copy
 * of the type's handler (fn NULL if none: the table may grow). */
struct handler
msgr_handler_for(struct tsr_conn *c, uint32_t type)
{
	struct tsr_msgr *m = c->m;
	struct handler h = { NULL, NULL, 0, 0 };

	if (c->has_own)
		return (struct handler){ c->own.msg, c->own.arg, c->own.flags, 1 };
	pthread_mutex_lock(&m->lock);
	if (type < m->nhandlers)
		h = m->handlers[type];
	pthread_mutex_unlock(&m->lock);
	return h;
}

/* Enter / leave one of c's own callbacks (no lock held); own_enter is 0
 * once tsr_conn_close() has silenced c. */
static int
own_enter(struct tsr_conn *c)
{
	int ok;

	pthread_mutex_lock(&c->lock);
	ok = !c->silenced;
	if (ok)
		c->cb_running++;
	pthread_mutex_unlock(&c->lock);
	return ok;
}

static void
own_leave(struct tsr_conn *c)
{
	pthread_mutex_lock(&c->lock);
	if (--c->cb_running == 0)
		pthread_cond_broadcast(&c->cb_idle);
	pthread_mutex_unlock(&c->lock);
}

/* The fault and reset events, to c's owner or the messenger's (no lock
 * held). */
void
msgr_event_fault(struct tsr_conn *c, int err)
{
	struct tsr_msgr *m = c->m;

	if (!c->has_own) {
		if (m->ev.fault)
			m->ev.fault(c, err, m->ev.arg);
	} else if (c->own.fault && own_enter(c)) {
		c->own.fault(c, err, c->own.arg);
		own_leave(c);
	}
}

void
msgr_event_reset(struct tsr_conn *c)
{
	struct tsr_msgr *m = c->m;

	if (!c->has_own) {
		if (m->ev.reset)
			m->ev.reset(c, m->ev.arg);
	} else if (c->own.reset && own_enter(c)) {
		c->own.reset(c, c->own.arg);
		own_leave(c);
	}
}

/* Queue a received message for its handler (lock held). */
void
msgr_dispatch_queue(struct tsr_conn *c, struct tsr_msg *x)
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
		msgr_conn_watch(c);
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
			msgr_conn_watch(c);
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

void
msgr_deliver(struct tsr_conn *c, struct tsr_msg *x, struct handler h)
{
	/* a peer chooses the types it sends: logged at a rate */
	static struct tsr_log_rate no_handler = TSR_LOG_RATE_INIT(10, 10000);

	if (h.fn == NULL) {
		tsr_log_rated(&no_handler, TSR_SUB_MSG, TSR_LOG_WARN, "%s: no handler "
			      "for message type %u; dropped", c->name, x->type);
		tsr_msg_free(x, 0);
		return;
	}
	if (!h.own) {
		h.fn(c, x, h.arg);
	} else if (own_enter(c)) {
		h.fn(c, x, h.arg);
		own_leave(c);
	} else {
		tsr_msg_free(x, 0); /* closed by its owner meanwhile */
	}
}

void *
msgr_dispatch_main(void *arg)
{
	struct tsr_msgr *m = arg;

	msgr_on_dispatch = 1;
	/* named, so that ps and /proc/PID/task/TID/comm tell the threads of
	 * a daemon apart (the thread-count test reads them) */
	pthread_setname_np(pthread_self(), "tsr-ms-dispatch");
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
					msgr_conn_kick(c, ACT_READ);
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
			msgr_deliver(c, x, msgr_handler_for(c, x->type));
		}

		/* c's lock before the pool's (the order msgr_dispatch_queue uses) */
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

