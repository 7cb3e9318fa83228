/* monc.c — the monitor client (monc.h).
 *
 * State lives on the loop's thread.  The messenger's threads call on_msg
 * and on_fault, which only post the event to the loop (run_ev); a command
 * (struct op) moves from try to try there, by timers: the try's deadline,
 * the pause after a round, its first try (so that done never runs inside
 * tsr_monc_send).  A session (sess[i], one per monitor) is shared by the
 * commands in flight; each command knows the session of its try (conn).
 */
#include "mon/monc.h"
#include "auth/auth.h"
#include "config/config.h"
#include "event/loop.h"
#include "log/log.h"
#include "mon/monmsg.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define TRY_NS (3000ull * 1000000u)   /* how long one monitor may take */
#define PAUSE_NS (200ull * 1000000u)  /* after a round without an answer */
#define LAST_LEN 160

struct op {
	struct tsr_monc *c;
	struct op *next;
	uint64_t tid;
	uint32_t type;                      /* MON_CMD, or a typed message */
	uint8_t *front;                     /* its encoding */
	size_t len;
	uint64_t timeout_ms, end;           /* the deadline (mono ns) */
	size_t start, next_i;               /* members: where rounds begin,
	                                     * the next to try */
	const struct tsr_mon_member *target;/* the next try's, when a monitor
	                                     * named the leader */
	const struct tsr_mon_member *at;    /* the try in flight's monitor */
	struct tsr_conn *conn;              /* its session (NULL: none) */
	uint64_t timer;
	int fail_rc, fail_delivered;        /* a failed try, for op_failed */
	int fail_now;                       /* ... to be handled at once (no
	                                     * memory for its timer) once the
	                                     * walk that failed it is over */
	int unknown;                        /* a monitor had it, and did not
	                                     * say what became of it */
	size_t denied;                      /* monitors that refused our key */
	char denied_by[TSR_MON_MAX];
	char last[TSR_MON_MAX][LAST_LEN];   /* what each monitor said last */
	tsr_monc_done done;
	void *arg;
};

struct tsr_monc {
	struct tsr_mon_members members;
	struct tsr_msgr *msgr;
	struct tsr_loop *loop;
	uint64_t client, tid;
	size_t home;                        /* where commands begin: the
	                                     * monitor that answered last */
	struct tsr_conn *sess[TSR_MON_MAX];
	struct op *ops;
	int dead;                           /* destroyed: posts still queued
	                                     * only give back what they hold */
	char name[TSR_AUTH_NAME_MAX];       /* whose key we use ("" none) */
};

static void op_try(struct op *op);

/* ---- Events from the messenger's threads --------------------------------*/

struct mev {
	struct tsr_monc *c;
	struct tsr_conn *conn;              /* held */
	struct tsr_msg *m;                  /* a message, or NULL: a fault */
	int err;
};

static void handle_reply(struct tsr_monc *c, struct tsr_conn *conn,
			 struct tsr_msg *m);
static void handle_fault(struct tsr_monc *c, struct tsr_conn *conn, int err);

static void
run_ev(void *arg)
{
	struct mev *e = arg;

	if (!e->c->dead) {
		if (e->m)
			handle_reply(e->c, e->conn, e->m);
		else
			handle_fault(e->c, e->conn, e->err);
	}
	tsr_msg_free(e->m, 0);
	tsr_conn_put(e->conn);
	free(e);
}

/* An I/O thread: hand the event to the loop.  Lost (no memory), it is as
 * if the monitor had not answered: the try times out. */
static void
post_ev(struct tsr_monc *c, struct tsr_conn *conn, struct tsr_msg *m, int err)
{
	struct mev *e = malloc(sizeof(*e));

	if (e == NULL) {
		tsr_msg_free(m, 0);
		return;
	}
	*e = (struct mev){ c, conn, m, err };
	tsr_conn_get(conn);
	if (tsr_loop_post(c->loop, run_ev, e) < 0) {
		tsr_conn_put(conn);
		tsr_msg_free(m, 0);
		free(e);
	}
}

static void
on_msg(struct tsr_conn *conn, struct tsr_msg *m, void *arg)
{
	post_ev(arg, conn, m, 0);
}

static void
on_fault(struct tsr_conn *conn, int err, void *arg)
{
	post_ev(arg, conn, NULL, err < 0 ? err : -ECONNRESET);
}

/* ---- Sessions -------------------------------------------------------------*/

static struct tsr_conn *
sess_get(struct tsr_monc *c, const struct tsr_mon_member *to, int *rc)
{
	const struct tsr_conn_events ev = { .fault = on_fault, .msg = on_msg,
					    .flags = TSR_MSGR_INLINE, .arg = c };
	char who[TSR_MON_NAME_MAX + 8];
	size_t i = (size_t)(to->id - 1);

	if (c->sess[i] == NULL) {
		tsr_mon_member_entity(to, who, sizeof(who));
		*rc = tsr_msgr_connect_ev(c->msgr, to->addr, who, 0, &ev, &c->sess[i]);
		if (*rc < 0)
			c->sess[i] = NULL;
	}
	return c->sess[i];
}

static int
sess_index(const struct tsr_monc *c, const struct tsr_conn *conn)
{
	for (size_t i = 0; i < c->members.n; i++)
		if (conn != NULL && c->sess[i] == conn)
			return (int)i;
	return -1;
}

static void op_fail_later(struct op *op, int rc, int delivered);
static void fail_now(struct tsr_monc *c);

/* Session i is done with (failed, or its monitor went silent): close it,
 * and every command whose try was on it tries elsewhere. */
static void
sess_drop(struct tsr_monc *c, size_t i, int err)
{
	struct tsr_conn *conn = c->sess[i];
	int delivered;

	if (conn == NULL)
		return;
	c->sess[i] = NULL;
	/* messages wait for the handshake (msgr.h): a session that never
	 * got past it never sent a command */
	delivered = tsr_conn_peer_type(conn) != 0;
	tsr_conn_close(conn);
	for (struct op *op = c->ops; op; op = op->next)
		if (op->conn == conn)
			op_fail_later(op, err, delivered);
	tsr_conn_put(conn);
	fail_now(c);
}

/* Sessions no command uses, but the one to the monitor that answered last,
 * go. */
static void
sess_trim(struct tsr_monc *c)
{
	for (size_t i = 0; i < c->members.n; i++) {
		int used = i == c->home;
		for (struct op *op = c->ops; op && !used && c->sess[i]; op = op->next)
			used = op->conn == c->sess[i];
		if (!used && c->sess[i]) {
			tsr_conn_close(c->sess[i]);
			tsr_conn_put(c->sess[i]);
			c->sess[i] = NULL;
		}
	}
}

/* ---- Commands -------------------------------------------------------------*/

static void
op_unlink(struct op *op)
{
	struct tsr_monc *c = op->c;

	for (struct op **p = &c->ops; *p; p = &(*p)->next)
		if (*p == op) {
			*p = op->next;
			break;
		}
	if (op->timer)
		tsr_loop_timer_cancel(c->loop, op->timer);
	op->timer = 0;
}

static void
op_free(struct op *op)
{
	free(op->front);
	free(op);
}

/* The command is answered: done runs, the command goes. */
static void
op_finish(struct op *op, int status, const char *text)
{
	struct tsr_monc *c = op->c;

	op_unlink(op);
	op->done(op->arg, status, text ? text : "");
	op_free(op);
	if (!c->dead)
		sess_trim(c);
}

/* The deadline passed: say what each monitor said last. */
static void
op_expire(struct op *op)
{
	struct tsr_monc *c = op->c;
	struct tsr_sbuf why;

	tsr_sbuf_init(&why);
	tsr_sbuf_printf(&why, "no monitor quorum answered within %.1f s%s:",
			(double)op->timeout_ms / 1000, op->unknown ? ", after a "
			"monitor had the command" : "");
	for (size_t i = 0; i < c->members.n; i++)
		tsr_sbuf_printf(&why, "%s mon.%s (%s): %s", i ? ";" : "",
				c->members.m[i].name, c->members.m[i].addr,
				op->last[i][0] ? op->last[i] : "not tried");
	op_finish(op, op->unknown ? -EINPROGRESS : -ETIMEDOUT, tsr_sbuf_str(&why));
	tsr_sbuf_release(&why);
}

static void
op_timer_try(void *arg)
{
	struct op *op = arg;

	op->timer = 0;
	op_try(op);
}

static void
op_arm(struct op *op, uint64_t delay_ns, void (*cb)(void *))
{
	if (tsr_loop_timer_add(op->c->loop, delay_ns, cb, op, &op->timer) < 0) {
		/* no memory for a timer: nothing would ever end the command */
		op->timer = 0;
		op_finish(op, -ENOMEM, "out of memory for the monitor client's timer");
	}
}

/* Move on from a try that got no final answer. */
static void
next_try(struct op *op)
{
	struct tsr_monc *c = op->c;

	/* a whole round without an answer: a pause before the next */
	if (op->target == NULL && op->next_i % c->members.n == op->start)
		op_arm(op, PAUSE_NS, op_timer_try);
	else
		op_try(op);
}

/* The try's session failed (rc), or the monitor stayed silent
 * (-ETIMEDOUT); delivered: it may have had the command. */
static void
try_failed(struct op *op, int rc, int delivered)
{
	struct tsr_monc *c = op->c;
	size_t i = (size_t)(op->at->id - 1);
	char *last = op->last[i];

	op->conn = NULL;
	if (op->timer)
		tsr_loop_timer_cancel(c->loop, op->timer);
	op->timer = 0;
	if (delivered)
		op->unknown = 1;
	snprintf(last, LAST_LEN, "%s%s", rc == -ETIMEDOUT ? "no answer" : strerror(-rc),
		 delivered ? " (after it had the command)" : "");
	/* every monitor refusing our key is an answer, not an outage:
	 * waiting would not change it (and the command was never sent:
	 * messages wait for the handshake) */
	if (rc == -EACCES && !op->unknown && !op->denied_by[i]) {
		op->denied_by[i] = 1;
		if (++op->denied == c->members.n) {
			struct tsr_sbuf why;
			tsr_sbuf_init(&why);
			tsr_sbuf_printf(&why, "every monitor refused our key (%s): it "
					"is not one this cluster's secret made, or it "
					"was retired; see doc/operations.md, \"Keys\"",
					c->name[0] ? c->name : "no name");
			op_finish(op, -EACCES, tsr_sbuf_str(&why));
			tsr_sbuf_release(&why);
			return;
		}
	}
	op->target = NULL;
	next_try(op);
}

static void
op_timer_failed(void *arg)
{
	struct op *op = arg;

	op->timer = 0;
	try_failed(op, op->fail_rc, op->fail_delivered);
}

/* The try failed; what follows (another try, or done) runs from a timer,
 * so that no done callback — which may send or cancel commands — runs
 * while a session's commands are being walked. */
static void
op_fail_later(struct op *op, int rc, int delivered)
{
	op->conn = NULL;
	op->fail_rc = rc;
	op->fail_delivered = delivered;
	if (op->timer)
		tsr_loop_timer_cancel(op->c->loop, op->timer);
	op->timer = 0;
	if (tsr_loop_timer_add(op->c->loop, 0, op_timer_failed, op, &op->timer) < 0) {
		op->timer = 0;
		op->fail_now = 1; /* no memory: at once, after the walk */
	}
}

/* The commands op_fail_later could not give a timer: handled now, one
 * at a time from the head (a done callback may send or cancel others). */
static void
fail_now(struct tsr_monc *c)
{
	for (;;) {
		struct op *op = c->ops;
		while (op && !op->fail_now)
			op = op->next;
		if (op == NULL)
			return;
		op->fail_now = 0;
		try_failed(op, op->fail_rc, op->fail_delivered);
	}
}

static void
try_timeout(void *arg)
{
	struct op *op = arg;
	int i = sess_index(op->c, op->conn);

	op->timer = 0;
	if (i >= 0) {
		/* silent past a try: whoever else waits on it goes too */
		sess_drop(op->c, (size_t)i, -ETIMEDOUT);
	} else {
		int delivered = tsr_conn_peer_type(op->conn) != 0;
		try_failed(op, -ETIMEDOUT, delivered);
	}
}

/* Send the command to the next monitor: op->target, or the next in turn. */
static void
op_try(struct op *op)
{
	struct tsr_monc *c = op->c;
	uint64_t now = tsr_mono_ns();
	struct tsr_conn *conn;
	struct tsr_msg *m;
	int rc = 0;

	if (now >= op->end) {
		op_expire(op);
		return;
	}
	if (op->target == NULL)
		op->target = &c->members.m[op->next_i++ % c->members.n];
	op->at = op->target;
	op->target = NULL;
	if ((conn = sess_get(c, op->at, &rc)) == NULL) {
		try_failed(op, rc, 0);
		return;
	}
	if ((m = tsr_msg_new(op->type, op->front, op->len)) == NULL) {
		try_failed(op, -ENOMEM, 0);
		return;
	}
	if ((rc = tsr_conn_send(conn, m, TSR_SEND_NOWAIT)) < 0) {
		/* ended under us, or a full queue to a monitor (a session
		 * that cannot take a command is as good as dead) */
		sess_drop(c, (size_t)(op->at->id - 1), rc);
		try_failed(op, rc, 0);
		return;
	}
	op->conn = conn;
	op_arm(op, now + TRY_NS > op->end ? op->end - now : TRY_NS, try_timeout);
}

static void
handle_reply(struct tsr_monc *c, struct tsr_conn *conn, struct tsr_msg *m)
{
	struct tsr_mon_reply r;
	struct op *op;
	char err[128];

	/* a broken reply counts as no reply: the try times out */
	if (m->type != TSR_MSG_MON_CMD_REPLY ||
	    tsr_monmsg_reply_decode(m->front, m->front_len, &r, err, sizeof(err)) < 0)
		return;
	for (op = c->ops; op; op = op->next)
		if (op->conn == conn && op->tid == r.tid)
			break;
	if (op == NULL) {
		free(r.text); /* late: that try was given up */
		return;
	}
	const struct tsr_mon_member *l =
		r.leader[0] ? tsr_mon_members_by_addr(&c->members, r.leader) : NULL;
	char *last = op->last[op->at->id - 1];

	tsr_loop_timer_cancel(c->loop, op->timer);
	op->timer = 0;
	op->conn = NULL;
	/* in a log, not yet committed: sent again, it is answered with its
	 * result once known, and applied once; until then its outcome is
	 * unknown (a monitor of an older version said -ETIMEDOUT) */
	if (r.status == -EINPROGRESS || r.status == -ETIMEDOUT)
		op->unknown = 1;
	if ((r.status == -EAGAIN || r.status == -EINPROGRESS) && l != NULL &&
	    l != op->at) {
		tsr_strlcpy(last, r.status == -EAGAIN ? "not the leader" : r.text,
			    LAST_LEN);
		free(r.text);
		op->target = l;
		op_try(op);
		return;
	}
	if (r.status != -EAGAIN && r.status != -ENOTCONN && r.status != -ETIMEDOUT &&
	    r.status != -EBUSY && r.status != -EINPROGRESS) {
		c->home = (size_t)(op->at->id - 1);
		op_finish(op, r.status, r.text);
		free(r.text);
		return;
	}
	/* no quorum there (or it is overloaded): someone else may do better */
	tsr_strlcpy(last, r.text, LAST_LEN);
	free(r.text);
	op->target = NULL;
	next_try(op);
}

static void
handle_fault(struct tsr_monc *c, struct tsr_conn *conn, int err)
{
	int i = sess_index(c, conn);

	/* a session dropped already had its commands moved on */
	if (i >= 0)
		sess_drop(c, (size_t)i, err);
}

/* ---- The client ------------------------------------------------------------*/

int
tsr_monc_conf(struct tsr_conf *conf, struct tsr_mon_members *members,
	      struct tsr_msgr_opts *opts, char *err, size_t errlen)
{
	int rc = tsr_mon_members_parse(tsr_conf_str(conf, "mon_members"),
				       tsr_conf_where(conf, "mon_members"), members,
				       err, errlen);

	if (rc < 0)
		return rc;
	tsr_msgr_opts_default(opts);
	return tsr_msgr_opts_from_conf(conf, opts, err, errlen);
}

int
tsr_monc_create(struct tsr_msgr *msgr, struct tsr_loop *loop,
		const struct tsr_mon_members *members, struct tsr_monc **out,
		char *err, size_t errlen)
{
	struct tsr_monc *c;
	const char *name;

	if (msgr == NULL || loop == NULL || members->n == 0)
		return tsr_errf(err, errlen, -EINVAL, "monitor client: no messenger, "
				"loop or monitors");
	c = tsr_xcalloc(1, sizeof(*c));
	c->members = *members;
	c->msgr = msgr;
	c->loop = loop;
	if (getrandom(&c->client, sizeof(c->client), 0) != sizeof(c->client))
		c->client = tsr_now_ns() ^ (uint64_t)getpid() << 32;
	c->home = (size_t)(c->client % c->members.n);
	if ((name = tsr_msgr_auth_name(msgr)) != NULL)
		tsr_strlcpy(c->name, name, sizeof(c->name));
	*out = c;
	return 0;
}

static void
free_cb(void *arg)
{
	free(arg);
}

void
tsr_monc_destroy(struct tsr_monc *c)
{
	if (c == NULL)
		return;
	c->dead = 1;
	while (c->ops) {
		struct op *op = c->ops;
		op_unlink(op);
		op_free(op);
	}
	/* close waits for callbacks running on the messenger's threads:
	 * after it, only what they posted refers to c */
	for (size_t i = 0; i < c->members.n; i++)
		if (c->sess[i]) {
			tsr_conn_close(c->sess[i]);
			tsr_conn_put(c->sess[i]);
			c->sess[i] = NULL;
		}
	/* after those posts, in order */
	if (tsr_loop_post(c->loop, free_cb, c) < 0)
		tsr_log(TSR_SUB_MON, TSR_LOG_WARN, "monitor client: out of memory: "
			"%zu bytes left behind", sizeof(*c));
}

/* The words of a command (tsr_monc_send). */
struct words {
	int argc;
	char *const *argv;
};

static int
encode_words(struct tsr_enc *e, uint64_t client, uint64_t tid, const void *body)
{
	const struct words *w = body;
	struct tsr_mon_cmd cmd = { .client = client, .tid = tid,
				   .argc = (uint32_t)w->argc, .argv = (char **)w->argv };

	return tsr_monmsg_cmd_encode(e, &cmd);
}

int
tsr_monc_send(struct tsr_monc *c, int argc, char *const *argv,
	      uint64_t timeout_ms, tsr_monc_done done, void *arg, uint64_t *id)
{
	struct words w = { argc, argv };

	if (argc < 1)
		return -EINVAL;
	return tsr_monc_send_typed(c, TSR_MSG_MON_CMD, encode_words, &w, timeout_ms,
				   done, arg, id);
}

int
tsr_monc_send_typed(struct tsr_monc *c, uint32_t type, tsr_monc_encode enc,
		    const void *body, uint64_t timeout_ms, tsr_monc_done done,
		    void *arg, uint64_t *id)
{
	struct tsr_enc e;
	struct op *op;

	if (done == NULL || enc == NULL || tsr_monmsg_type(type) == NULL)
		return -EINVAL;
	if (c->dead)
		return -ESHUTDOWN;
	if ((op = calloc(1, sizeof(*op))) == NULL)
		return -ENOMEM;
	tsr_enc_init(&e);
	if (enc(&e, c->client, c->tid + 1, body) < 0 || tsr_enc_error(&e) ||
	    (op->front = tsr_enc_take(&e, &op->len)) == NULL) {
		int rc = tsr_enc_error(&e) ? tsr_enc_error(&e) : -EINVAL;
		tsr_enc_release(&e);
		free(op);
		return rc == -ENOMEM ? -ENOMEM : -EINVAL;
	}
	tsr_enc_release(&e);
	op->type = type;
	op->c = c;
	op->tid = ++c->tid;
	op->timeout_ms = timeout_ms;
	op->end = tsr_mono_ns() + timeout_ms * 1000000u;
	op->start = op->next_i = c->home;
	op->done = done;
	op->arg = arg;
	/* the first try from a timer: done never runs inside this call */
	if (tsr_loop_timer_add(c->loop, 0, op_timer_try, op, &op->timer) < 0) {
		op_free(op);
		return -ENOMEM;
	}
	op->next = c->ops;
	c->ops = op;
	if (id)
		*id = op->tid;
	return 0;
}

int
tsr_monc_cancel(struct tsr_monc *c, uint64_t id)
{
	for (struct op *op = c->ops; op; op = op->next)
		if (op->tid == id) {
			op_unlink(op);
			op_free(op);
			sess_trim(c);
			return 0;
		}
	return -ENOENT;
}

/* ---- The blocking form -----------------------------------------------------*/

/* Shared by the caller and the command: whoever lets go last frees it. */
struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs, finished, status;
	char *text;
	struct tsr_monc *c;
	int argc;
	char **argv;                 /* copies: the caller may have gone */
	uint64_t timeout_ms;
};

static void
w_put(struct waiter *w)
{
	int last;

	pthread_mutex_lock(&w->mu);
	last = --w->refs == 0;
	pthread_mutex_unlock(&w->mu);
	if (!last)
		return;
	for (int i = 0; i < w->argc; i++)
		free(w->argv[i]);
	free(w->argv);
	free(w->text);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w);
}

static void
w_done(void *arg, int status, const char *text)
{
	struct waiter *w = arg;

	pthread_mutex_lock(&w->mu);
	w->status = status;
	w->text = tsr_xstrdup(text);
	w->finished = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	w_put(w);
}

static void
w_start(void *arg)
{
	struct waiter *w = arg;
	int rc = tsr_monc_send(w->c, w->argc, w->argv, w->timeout_ms, w_done, w, NULL);

	if (rc < 0)
		w_done(w, rc, strerror(-rc));
}

int
tsr_monc_command(struct tsr_monc *c, int argc, char **argv, uint64_t timeout_ms,
		 char **text)
{
	/* the command ends by its own deadline; this one only guards
	 * against a loop that does not run */
	uint64_t end = tsr_mono_ns() + (timeout_ms + 10000) * 1000000u;
	struct waiter *w;
	int rc;

	*text = NULL;
	if (tsr_loop_current() == c->loop) {
		*text = tsr_xstrdup("monitor client: a blocking command on the "
				    "client's own loop thread would never be answered");
		return -EDEADLK;
	}
	w = tsr_xcalloc(1, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	tsr_cond_init_mono(&w->cv);
	w->refs = 2;
	w->c = c;
	w->timeout_ms = timeout_ms;
	w->argv = tsr_xcalloc((size_t)(argc > 0 ? argc : 1), sizeof(*w->argv));
	for (w->argc = 0; w->argc < argc; w->argc++)
		w->argv[w->argc] = tsr_xstrdup(argv[w->argc]);
	if (tsr_loop_post(c->loop, w_start, w) < 0) {
		w->refs = 1;
		w_put(w);
		*text = tsr_xstrdup(strerror(ENOMEM));
		return -ENOMEM;
	}
	pthread_mutex_lock(&w->mu);
	while (!w->finished &&
	       tsr_cond_wait_until(&w->cv, &w->mu, end) != ETIMEDOUT)
		;
	if (w->finished) {
		rc = w->status;
		*text = w->text;
		w->text = NULL;
	} else {
		rc = -ETIMEDOUT;
		*text = tsr_xstrdup("monitor client: its event loop did not run "
				    "the command");
	}
	pthread_mutex_unlock(&w->mu);
	w_put(w);
	return rc;
}
