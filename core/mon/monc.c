/* monc.c — the monitor client (monc.h). */
#include "mon/monc.h"
#include "auth/auth.h"
#include "config/config.h"
#include "mon/monmsg.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define TRY_MS 3000 /* how long one monitor may take to answer */

struct tsr_monc {
	struct tsr_mon_members members;
	struct tsr_msgr *msgr;
	uint64_t client, tid;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct tsr_conn *conn;      /* the current try's */
	uint64_t want_tid;
	int got;                    /* 1: reply below; -errno: the session failed */
	int delivered;              /* the try's session got past the handshake:
	                             * the command may have reached the monitor */
	struct tsr_mon_reply reply;
	char last[TSR_MON_MAX][160];/* what each monitor said last */
	char denied[TSR_MON_MAX];   /* it refused our key, this command */
	char name[TSR_AUTH_NAME_MAX]; /* whose key we use ("" none) */
};

static void
on_reply(struct tsr_conn *conn, struct tsr_msg *m, void *arg)
{
	struct tsr_monc *c = arg;
	struct tsr_mon_reply r;
	char err[128];

	if (tsr_monmsg_reply_decode(m->front, m->front_len, &r, err, sizeof(err)) < 0) {
		/* a broken reply counts as no reply: the try times out */
		tsr_msg_free(m, 0);
		return;
	}
	tsr_msg_free(m, 0);
	pthread_mutex_lock(&c->lock);
	if (conn == c->conn && r.tid == c->want_tid && c->got == 0) {
		c->reply = r;
		c->got = 1;
		pthread_cond_broadcast(&c->cond);
	} else {
		free(r.text);
	}
	pthread_mutex_unlock(&c->lock);
}

static void
on_fault(struct tsr_conn *conn, int err, void *arg)
{
	struct tsr_monc *c = arg;

	pthread_mutex_lock(&c->lock);
	if (conn == c->conn && c->got == 0) {
		/* messages wait for the handshake (msgr.h): a session that
		 * ended before it never sent the command */
		c->delivered = tsr_conn_peer_type(conn) != 0;
		c->got = err < 0 ? err : -ECONNRESET;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
}

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
tsr_monc_create(const struct tsr_mon_members *members,
		const struct tsr_msgr_opts *opts, struct tsr_monc **out,
		char *err, size_t errlen)
{
	struct tsr_msgr_events ev = { .fault = on_fault };
	struct tsr_msgr_opts o = *opts;
	struct tsr_monc *c = tsr_xcalloc(1, sizeof(*c));
	int rc;

	c->members = *members;
	if (getrandom(&c->client, sizeof(c->client), 0) != sizeof(c->client))
		c->client = tsr_now_ns() ^ (uint64_t)getpid() << 32;
	pthread_mutex_init(&c->lock, NULL);
	tsr_cond_init_mono(&c->cond);
	if (o.auth)
		tsr_strlcpy(c->name, tsr_auth_name(o.auth), sizeof(c->name));
	o.entity_type = TSR_ENTITY_TOOL;
	o.entity_id = c->client >> 1;
	o.bind = NULL;
	o.workers = 1;
	o.dispatchers = 1;
	ev.arg = c;
	rc = tsr_msgr_create(&o, &ev, &c->msgr, err, errlen);
	if (rc == 0)
		rc = tsr_msgr_register(c->msgr, TSR_MSG_MON_CMD_REPLY, on_reply, c,
				       TSR_MSGR_INLINE);
	if (rc < 0) {
		tsr_monc_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

void
tsr_monc_destroy(struct tsr_monc *c)
{
	if (c == NULL)
		return;
	if (c->conn) {
		tsr_conn_close(c->conn);
		tsr_conn_put(c->conn);
	}
	tsr_msgr_destroy(c->msgr);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c);
}

/* Send the command to addr and wait until deadline; 1 with c->reply, or a
 * negative errno (the session failed, or -ETIMEDOUT), with *delivered
 * saying whether the command may have reached the monitor. */
static int
try_one(struct tsr_monc *c, const struct tsr_mon_member *to,
	const struct tsr_mon_cmd *cmd, uint64_t deadline, int *delivered)
{
	char who[TSR_MON_NAME_MAX + 8];
	struct tsr_conn *conn;
	struct tsr_msg *m;
	struct tsr_enc e;
	int rc;

	*delivered = 0;
	if (c->conn) {
		tsr_conn_close(c->conn);
		tsr_conn_put(c->conn);
		c->conn = NULL;
	}
	tsr_mon_member_entity(to, who, sizeof(who));
	if ((rc = tsr_msgr_connect_to(c->msgr, to->addr, who, 0, &conn)) < 0)
		return rc;
	tsr_enc_init(&e);
	tsr_monmsg_cmd_encode(&e, cmd);
	if ((m = tsr_msg_from_enc(TSR_MSG_MON_CMD, &e)) == NULL) {
		tsr_conn_put(conn);
		return -ENOMEM;
	}
	pthread_mutex_lock(&c->lock);
	c->conn = conn;
	c->want_tid = cmd->tid;
	c->got = 0;
	c->delivered = 0;
	pthread_mutex_unlock(&c->lock);
	rc = tsr_conn_send(conn, m, 0);
	pthread_mutex_lock(&c->lock);
	if (rc < 0 && c->got == 0)
		c->got = rc;
	while (c->got == 0 &&
	       tsr_cond_wait_until(&c->cond, &c->lock, deadline) != ETIMEDOUT)
		;
	rc = c->got == 0 ? -ETIMEDOUT : c->got;
	/* silence past the handshake: the monitor may be working on it
	 * (a change waits for a majority) */
	if (c->got == 0)
		c->delivered = tsr_conn_peer_type(conn) != 0;
	*delivered = rc == 1 || c->delivered;
	c->got = -ECANCELED; /* late answers are dropped */
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int
tsr_monc_command(struct tsr_monc *c, int argc, char **argv, uint64_t timeout_ms,
		 char **text)
{
	struct tsr_mon_cmd cmd = { .client = c->client, .tid = ++c->tid,
				   .argc = (uint32_t)argc, .argv = argv };
	uint64_t end = tsr_mono_ns() + timeout_ms * 1000000u;
	size_t next = (size_t)(c->client % c->members.n);
	const struct tsr_mon_member *target = NULL;
	struct tsr_sbuf why;
	int rc = -ETIMEDOUT, delivered = 0, unknown = 0;
	size_t denied = 0;  /* monitors that refused our key */

	*text = NULL;
	for (size_t i = 0; i < c->members.n; i++) {
		c->last[i][0] = '\0';
		c->denied[i] = 0;
	}
	while (tsr_mono_ns() < end) {
		uint64_t now = tsr_mono_ns(), try_end = now + TRY_MS * 1000000ull;

		if (target == NULL)
			target = &c->members.m[next++ % c->members.n];
		if (try_end > end)
			try_end = end;
		rc = try_one(c, target, &cmd, try_end, &delivered);
		char *last = c->last[target->id - 1];
		if (rc == 1) {
			struct tsr_mon_reply *r = &c->reply;
			const struct tsr_mon_member *l =
				r->leader[0] ? tsr_mon_members_by_addr(&c->members,
									 r->leader) : NULL;

			/* in a log, not yet committed: sent again, it is
			 * answered with its result once known, and applied
			 * once; until then its outcome is unknown (a
			 * monitor of an older version said -ETIMEDOUT) */
			if (r->status == -EINPROGRESS || r->status == -ETIMEDOUT)
				unknown = 1;
			if ((r->status == -EAGAIN || r->status == -EINPROGRESS) &&
			    l != NULL && l != target) {
				tsr_strlcpy(last, r->status == -EAGAIN ? "not the leader"
					    : r->text, sizeof(c->last[0]));
				free(r->text);
				target = l;
				continue;
			}
			if (r->status != -EAGAIN && r->status != -ENOTCONN &&
			    r->status != -ETIMEDOUT && r->status != -EBUSY &&
			    r->status != -EINPROGRESS) {
				*text = r->text;
				return r->status;
			}
			/* no quorum there (or it is overloaded): someone else
			 * may do better */
			tsr_strlcpy(last, r->text, sizeof(c->last[0]));
			free(r->text);
		} else {
			if (delivered)
				unknown = 1;
			snprintf(last, sizeof(c->last[0]), "%s%s",
				 rc == -ETIMEDOUT ? "no answer" : strerror(-rc),
				 delivered ? " (after it had the command)" : "");
			/* every monitor refusing our key is an answer, not an
			 * outage: waiting would not change it (and the
			 * command was never sent: messages wait for the
			 * handshake) */
			if (rc == -EACCES && !unknown && !c->denied[target->id - 1]) {
				c->denied[target->id - 1] = 1;
				if (++denied == c->members.n) {
					tsr_sbuf_init(&why);
					tsr_sbuf_printf(&why, "every monitor refused our key "
							"(%s): it is not one this cluster's "
							"secret made, or it was retired; "
							"see doc/operations.md, \"Keys\"",
							c->name[0] ? c->name : "no name");
					*text = tsr_xstrdup(tsr_sbuf_str(&why));
					tsr_sbuf_release(&why);
					return -EACCES;
				}
			}
		}
		target = NULL;
		/* a whole round without an answer: pause before the next */
		if (next % c->members.n == (size_t)(c->client % c->members.n)) {
			struct timespec ts = { 0, 200 * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	tsr_sbuf_init(&why);
	tsr_sbuf_printf(&why, "no monitor quorum answered within %.1f s%s:",
			(double)timeout_ms / 1000, unknown ? ", after a monitor "
			"had the command" : "");
	for (size_t i = 0; i < c->members.n; i++)
		tsr_sbuf_printf(&why, "%s mon.%s (%s): %s", i ? ";" : "",
				c->members.m[i].name, c->members.m[i].addr,
				c->last[i][0] ? c->last[i] : "not tried");
	*text = tsr_xstrdup(tsr_sbuf_str(&why));
	tsr_sbuf_release(&why);
	return unknown ? -EINPROGRESS : -ETIMEDOUT;
}
