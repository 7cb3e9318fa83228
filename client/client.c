/* client.c — the object client library (tessera/client.h): the maps from
 * the monitors, operations placed and sent to the primary OSDs, sent
 * again when the map moves them or their session breaks, and answered.
 *
 * Threads.  The library runs one event loop thread: the monitors' client
 * and the map subscription live there (monc.h, mapsub.h), and so do the
 * timer (deadlines, retries) and the handling of a new map or a broken
 * session.  Callers submit from their own threads; answers arrive on the
 * messenger's dispatch threads.  All of them meet under the client's
 * lock; a send happens outside it (it may wait for room in the session's
 * queue).
 *
 * An operation in flight (struct flight) keeps: its request (the caller's
 * steps, and a copy of their input that every send of it shares), the OSD
 * and the session it went to, and when it should be sent again: once the
 * map reaches an epoch (the OSD answered -ESTALE from a newer map, or no
 * OSD serves its group), or at a time (-EAGAIN, a full queue).  A new map
 * sends again every operation whose primary changed; a broken session
 * every operation that went on it.  Every send carries the same request
 * id (client id, tid): the OSDs apply a write once (objop.h).
 */
#include "auth/auth.h"
#include "config/config.h"
#include "event/loop.h"
#include "log/log.h"
#include "map/osdmap_epoch.h"
#include "mon/mapsub.h"
#include "mon/monc.h"
#include "mon/monmsg.h"
#include "msg/msgr.h"
#include "osd/objop.h"
#include "osd/osdmsg.h"
#include "osd/pglog.h"
#include "plugin/host.h"
#include "plugin/registry.h"
#include "util/util.h"

#include <tessera/client.h>
#include "client_int.h"
#include <tessera/hash.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define TICK_NS (100u * 1000000u)    /* the timer: deadlines and retries */
#define RETRY_NS (100u * 1000000u)   /* an OSD that said -EAGAIN, a full queue */
#define DEFAULT_TIMEOUT_MS 30000u

static __thread char why_buf[512];

const char *
tsr_client_why(void)
{
	return why_buf;
}

static int
fail(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why_buf, sizeof(why_buf), fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- Operations, as the caller builds them --------------------------------------*/

struct step {
	struct tsr_objop_sub sub;
	uint8_t *owned_name;         /* sub.name, when copied */
	uint8_t *owned_in;           /* sub.in, when built here (lists) */
	/* where the answer goes */
	void *buf;
	uint64_t cap;
	uint64_t *got;
	size_t *len;
	uint64_t *size, *mtime;
	struct tsr_kvs *kvs;
	struct tsr_kvs *names;       /* PG_LIST (the library's own) */
	int *rc;
};

struct tsr_op {
	uint32_t n;
	struct step s[TSR_OBJOP_MAX_OPS];
	int bad;                     /* a step that could not be added */
	char why[256];
	/* PG_LIST, PG_SCRUB: the group, and whether more follow */
	uint32_t pg;
	int *more;
	struct tsr_scrub_report *scrub; /* PG_SCRUB's answer */
	uint64_t timeout_ns;         /* not client_op_timeout (0: it) */
};

struct tsr_op *
tsr_op_create(void)
{
	return calloc(1, sizeof(struct tsr_op));
}

void
tsr_op_destroy(struct tsr_op *op)
{
	if (op == NULL)
		return;
	for (uint32_t i = 0; i < op->n; i++) {
		free(op->s[i].owned_name);
		free(op->s[i].owned_in);
	}
	free(op);
}

const char *
tsr_op_why(const struct tsr_op *op)
{
	return op->why;
}

static struct step *
add(struct tsr_op *op, uint16_t type)
{
	struct step *s;

	if (op->n == TSR_OBJOP_MAX_OPS) {
		op->bad = -E2BIG;
		snprintf(op->why, sizeof(op->why), "more than %u steps in one operation",
			 TSR_OBJOP_MAX_OPS);
		return NULL;
	}
	s = &op->s[op->n++];
	memset(s, 0, sizeof(*s));
	s->sub.type = type;
	return s;
}

static void
set_name(struct tsr_op *op, struct step *s, const void *name, size_t len)
{
	if (len == 0) {
		s->sub.name = NULL;
		s->sub.name_len = 0;
		return;
	}
	if ((s->owned_name = malloc(len)) == NULL) {
		op->bad = -ENOMEM;
		return;
	}
	memcpy(s->owned_name, name, len);
	s->sub.name = s->owned_name;
	s->sub.name_len = len;
}

static void
set_list(struct tsr_op *op, struct step *s, const void *const *keys, const size_t *klens,
	 const void *const *vals, const size_t *vlens, size_t n)
{
	struct tsr_enc e;
	size_t mark, len;

	if (n > TSR_OBJOP_MAX_KEYS) {
		op->bad = -EINVAL;
		snprintf(op->why, sizeof(op->why), "step %u (%s): %zu keys, at most %u",
			 op->n - 1, tsr_objop_name(s->sub.type), n, TSR_OBJOP_MAX_KEYS);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const char *w = klens[i] == 0 || klens[i] > TSR_OBJOP_MAX_NAME ? "a key of 0 or "
				"more than 4096 bytes"
			: vals && vlens[i] > TSR_OBJOP_MAX_VALUE ? "a value over 1 MiB"
			: i && tsr_oid_cmp(keys[i - 1], klens[i - 1], keys[i], klens[i]) >= 0
				? "keys not in increasing order (bytes, unsigned)" : NULL;
		if (w) {
			op->bad = -EINVAL;
			snprintf(op->why, sizeof(op->why), "step %u (%s): key %zu: %s", op->n - 1,
				 tsr_objop_name(s->sub.type), i, w);
			return;
		}
	}
	tsr_enc_init(&e);
	mark = tsr_objop_list_begin(&e);
	for (size_t i = 0; i < n; i++)
		tsr_objop_list_put(&e, keys[i], klens[i], vals ? vals[i] : NULL,
				   vals ? vlens[i] : 0);
	tsr_objop_list_end(&e, mark, (uint32_t)n);
	if (tsr_enc_error(&e) || (s->owned_in = tsr_enc_take(&e, &len)) == NULL) {
		tsr_enc_release(&e);
		op->bad = -ENOMEM;
		return;
	}
	s->sub.in = s->owned_in;
	s->sub.in_len = len;
}

void
tsr_op_read(struct tsr_op *op, uint64_t off, uint64_t len, void *buf, uint64_t *got, int *rc)
{
	struct step *s = add(op, TSR_OBJOP_READ);

	if (s) {
		s->sub.off = off;
		s->sub.len = len;
		s->buf = buf;
		s->cap = len;
		s->got = got;
		s->rc = rc;
	}
}

void
tsr_op_stat(struct tsr_op *op, uint64_t *size, uint64_t *mtime_ns, int *rc)
{
	struct step *s = add(op, TSR_OBJOP_STAT);

	if (s) {
		s->size = size;
		s->mtime = mtime_ns;
		s->rc = rc;
	}
}

void
tsr_op_getxattr(struct tsr_op *op, const char *name, void *buf, size_t cap, size_t *len,
		int *rc)
{
	struct step *s = add(op, TSR_OBJOP_GETXATTR);

	if (s) {
		set_name(op, s, name, strlen(name));
		s->buf = buf;
		s->cap = cap;
		s->len = len;
		s->rc = rc;
	}
}

void
tsr_op_getxattrs(struct tsr_op *op, struct tsr_kvs *out, int *rc)
{
	struct step *s = add(op, TSR_OBJOP_GETXATTRS);

	if (s) {
		s->kvs = out;
		s->rc = rc;
	}
}

void
tsr_op_omap_get_keys(struct tsr_op *op, const void *const *keys, const size_t *key_lens,
		     size_t n, struct tsr_kvs *out, int *rc)
{
	struct step *s = add(op, TSR_OBJOP_OMAP_GET_KEYS);

	if (s) {
		set_list(op, s, keys, key_lens, NULL, NULL, n);
		s->kvs = out;
		s->rc = rc;
	}
}

void
tsr_op_omap_get_range(struct tsr_op *op, const void *after, size_t after_len,
		      const void *prefix, size_t prefix_len, uint32_t max, struct tsr_kvs *out,
		      int *rc)
{
	struct step *s = add(op, TSR_OBJOP_OMAP_GET_RANGE);

	if (s) {
		set_name(op, s, after, after ? after_len : 0);
		if (prefix && prefix_len) {
			if ((s->owned_in = malloc(prefix_len)) == NULL) {
				op->bad = -ENOMEM;
				return;
			}
			memcpy(s->owned_in, prefix, prefix_len);
			s->sub.in = s->owned_in;
			s->sub.in_len = prefix_len;
		}
		s->sub.len = max;
		s->kvs = out;
		s->rc = rc;
	}
}

static void
add_data(struct tsr_op *op, uint16_t type, uint64_t off, const void *buf, size_t len)
{
	struct step *s = add(op, type);

	if (s) {
		s->sub.off = off;
		s->sub.in = buf;
		s->sub.in_len = len;
	}
}

void
tsr_op_write(struct tsr_op *op, uint64_t off, const void *buf, size_t len)
{
	add_data(op, TSR_OBJOP_WRITE, off, buf, len);
}

void
tsr_op_write_full(struct tsr_op *op, const void *buf, size_t len)
{
	add_data(op, TSR_OBJOP_WRITE_FULL, 0, buf, len);
}

void
tsr_op_append(struct tsr_op *op, const void *buf, size_t len)
{
	add_data(op, TSR_OBJOP_APPEND, 0, buf, len);
}

void
tsr_op_truncate(struct tsr_op *op, uint64_t size)
{
	struct step *s = add(op, TSR_OBJOP_TRUNCATE);

	if (s)
		s->sub.off = size;
}

void
tsr_op_zero(struct tsr_op *op, uint64_t off, uint64_t len)
{
	struct step *s = add(op, TSR_OBJOP_ZERO);

	if (s) {
		s->sub.off = off;
		s->sub.len = len;
	}
}

void
tsr_op_remove(struct tsr_op *op)
{
	add(op, TSR_OBJOP_REMOVE);
}

void
tsr_op_create_obj(struct tsr_op *op, int exclusive)
{
	struct step *s = add(op, TSR_OBJOP_CREATE);

	if (s && exclusive)
		s->sub.flags = TSR_OBJOP_EXCL;
}

void
tsr_op_setxattr(struct tsr_op *op, const char *name, const void *val, size_t len)
{
	struct step *s = add(op, TSR_OBJOP_SETXATTR);

	if (s) {
		set_name(op, s, name, strlen(name));
		s->sub.in = val;
		s->sub.in_len = len;
	}
}

void
tsr_op_rmxattr(struct tsr_op *op, const char *name)
{
	struct step *s = add(op, TSR_OBJOP_RMXATTR);

	if (s)
		set_name(op, s, name, strlen(name));
}

void
tsr_op_omap_set(struct tsr_op *op, const void *const *keys, const size_t *key_lens,
		const void *const *vals, const size_t *val_lens, size_t n)
{
	struct step *s = add(op, TSR_OBJOP_OMAP_SET);

	if (s)
		set_list(op, s, keys, key_lens, vals, val_lens, n);
}

void
tsr_op_omap_rm(struct tsr_op *op, const void *const *keys, const size_t *key_lens, size_t n)
{
	struct step *s = add(op, TSR_OBJOP_OMAP_RM);

	if (s)
		set_list(op, s, keys, key_lens, NULL, NULL, n);
}

void
tsr_op_omap_rm_range(struct tsr_op *op, const void *first, size_t first_len, const void *end,
		     size_t end_len)
{
	struct step *s = add(op, TSR_OBJOP_OMAP_RM_RANGE);

	if (s) {
		set_name(op, s, first, first_len);
		s->sub.in = end;
		s->sub.in_len = end_len;
	}
}

void
tsr_op_omap_clear(struct tsr_op *op)
{
	add(op, TSR_OBJOP_OMAP_CLEAR);
}

void
tsr_op_cmpxattr(struct tsr_op *op, const char *name, int cmp, const void *val, size_t len)
{
	struct step *s = add(op, TSR_OBJOP_CMPXATTR);

	if (s) {
		set_name(op, s, name, strlen(name));
		s->sub.off = (uint64_t)cmp;
		s->sub.in = val;
		s->sub.in_len = len;
	}
}

void
tsr_op_assert_version(struct tsr_op *op, uint64_t epoch, uint64_t ver)
{
	struct step *s = add(op, TSR_OBJOP_ASSERT_VERSION);

	if (s) {
		s->sub.off = epoch;
		s->sub.len = ver;
	}
}

void
tsr_op_assert_exists(struct tsr_op *op)
{
	add(op, TSR_OBJOP_ASSERT_EXISTS);
}

void
tsr_kvs_free(struct tsr_kvs *kvs)
{
	if (kvs == NULL)
		return;
	free(kvs->kv);
	free(kvs->buf_);
	memset(kvs, 0, sizeof(*kvs));
}

/* ---- The client ------------------------------------------------------------------*/

struct sess {
	int32_t osd;
	char addr[TSR_OSDMAP_NAME];
	struct tsr_conn *conn;
	/* after a session broke: no new one before retry_ns (the pause
	 * doubles from 50 ms to 2 s while they keep breaking, and starts
	 * over once an answer comes) */
	uint64_t retry_ns;
	uint32_t backoff_ms;
};

struct flight {
	struct flight *next;
	struct tsr_client *c;
	uint64_t tid;
	int64_t pool;
	uint8_t *oid;
	size_t oid_len;
	struct tsr_op *op;
	struct tsr_rbuf *in;         /* a copy of the input, which every send
					of it carries (NULL: none) */
	size_t in_off[TSR_OBJOP_MAX_OPS]; /* each step's input in it */
	tsr_op_done done;
	void *arg;
	/* where it went */
	int32_t osd;                 /* -1: not sent */
	struct tsr_conn *conn;       /* the session it went on (a reference) */
	uint64_t epoch;              /* the map it was placed with */
	/* when it goes again */
	uint64_t need_epoch;         /* once the map reaches it (0: no wait) */
	uint64_t retry_ns;           /* at this time (0: no wait) */
	uint64_t deadline_ns;
	unsigned sends;
	/* done: answered outside the lock (complete) */
	int result;
	struct tsr_objver ver;
	int rx_posted;               /* its read's buffer is posted on conn */
};

struct tsr_client {
	char name[TSR_AUTH_NAME_MAX];
	struct tsr_auth *auth;
	struct tsr_registry *reg;
	struct tsr_core_host host;
	struct tsr_msgr *msgr;
	struct tsr_loop *loop;
	struct tsr_loop_thread *thr;
	struct tsr_monc *monc;
	struct tsr_mapsub *sub;
	uint64_t id;                 /* the request ids' client part */
	uint64_t op_timeout_ns;
	uint64_t timer;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	uint64_t next_tid;
	struct flight *flights;
	size_t nflights;
	struct flight *completed;    /* to answer, outside the lock */
	struct sess *sess;
	size_t nsess;
	/* sessions to close once the lock is let go (a close waits for the
	 * session's callbacks, which may wait for the lock) */
	struct tsr_conn **doomed;
	size_t ndoomed;
	int closing;
	int inject_dup;              /* client_inject_dup (tests) */
	uint64_t dirty_max;          /* client_dirty_max (the file client) */
	uint64_t mds_timeout_ms;     /* client_mds_timeout (the file client) */
	uint64_t readahead_max;      /* client_readahead_max (the file client) */
	int fs_mounted;              /* a tsr_fs has its session (lock) */
	size_t max_data;             /* ms_max_data, less room for the front */
	/* the key toward the OSDs (connect) */
	int keys_done, keys_rc;
	char keys_err[256];
};

struct pending_send {
	struct tsr_conn *conn;       /* a reference */
	struct tsr_msg *msg;
	struct flight *f;            /* for a failed send (still under lock then) */
	struct tsr_rbuf *in;         /* the data (a reference), for a copy */
};

static uint64_t
now_ns(void)
{
	return tsr_now_ns();
}

/* Large reads are received straight into the caller's buffer: an
 * operation of one READ posts its buffer on the session its first send
 * goes on, under its tid (tsr_conn_post_rx), and takes it back whenever it
 * leaves that session or finishes, so that nothing is written into it
 * after.  Only the first send: a post is used once, so at most one answer
 * is ever received there, and an answer received there is never
 * overwritten by a later one (an operation that came back to a session it
 * left may be answered by its first send's answer, dispatched late, while
 * its second's is still arriving); resends are copied. */
#define RX_DIRECT_MIN 65536

static uint64_t
reply_tag(uint32_t type, const uint8_t *front, size_t front_len)
{
	return type == TSR_MSG_OSD_OP_REPLY ? tsr_objop_reply_tid(front, front_len) : 0;
}

/* f goes on conn now (NULL: none): the reference moves. */
static void
set_conn(struct flight *f, struct tsr_conn *conn)
{
	if (f->conn && f->rx_posted)
		tsr_conn_revoke_rx(f->conn, f->tid);
	f->rx_posted = 0;
	if (f->conn)
		tsr_conn_put(f->conn);
	if (conn)
		tsr_conn_get(conn);
	f->conn = conn;
	if (conn && f->sends == 0 && f->op->n == 1 && f->op->s[0].sub.type == TSR_OBJOP_READ &&
	    f->op->s[0].buf && f->op->s[0].cap >= RX_DIRECT_MIN)
		f->rx_posted = tsr_conn_post_rx(conn, f->tid, f->op->s[0].buf,
						f->op->s[0].cap) == 0;
}

/* Close conn (the caller's reference goes with it) once c->lock is let
 * go; what went on it goes again.  Under c->lock. */
static void
doom(struct tsr_client *c, struct tsr_conn *conn)
{
	for (struct flight *f = c->flights; f; f = f->next)
		if (f->conn == conn) {
			set_conn(f, NULL);
			f->osd = -1;
			f->retry_ns = now_ns();
		}
	/* (out of memory aborts, as tsr_xcalloc: a session left open would
	 * hold its OSD's resources until shutdown) */
	c->doomed = tsr_xrealloc(c->doomed, (c->ndoomed + 1) * sizeof(*c->doomed));
	c->doomed[c->ndoomed++] = conn;
}

/* Close the doomed sessions (not under c->lock). */
static void
close_doomed(struct tsr_client *c)
{
	struct tsr_conn **v;
	size_t n;

	pthread_mutex_lock(&c->lock);
	v = c->doomed;
	n = c->ndoomed;
	c->doomed = NULL;
	c->ndoomed = 0;
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < n; i++) {
		tsr_conn_close(v[i]);
		tsr_conn_put(v[i]);
	}
	free(v);
}

static void on_fault(struct tsr_conn *conn, int err, void *arg);
static void on_reply(struct tsr_conn *conn, struct tsr_msg *m, void *arg);

/* Our session to osd (at addr): the one held, or a new one. */
static struct tsr_conn *
session(struct tsr_client *c, int32_t osd, const char *addr)
{
	/* (small answers on the I/O thread: a 4 KiB read's caller wakes with
	 * no hop through a dispatch thread; large ones' handling stays off
	 * it) */
	struct tsr_conn_events ev = { on_fault, NULL, on_reply, TSR_MSGR_INLINE_SMALL, c };
	struct sess *s = NULL;
	char target[32];

	for (size_t i = 0; i < c->nsess; i++)
		if (c->sess[i].osd == osd)
			s = &c->sess[i];
	if (s && s->conn && strcmp(s->addr, addr) == 0)
		return s->conn;
	if (s && s->conn == NULL && strcmp(s->addr, addr) == 0 && now_ns() < s->retry_ns)
		return NULL; /* it just broke: a pause first */
	if (s == NULL) {
		struct sess *v = realloc(c->sess, (c->nsess + 1) * sizeof(*v));
		if (v == NULL)
			return NULL;
		c->sess = v;
		s = &v[c->nsess++];
		memset(s, 0, sizeof(*s));
		s->osd = osd;
	}
	if (s->conn) {
		/* it moved (restarted elsewhere): the old session goes */
		doom(c, s->conn);
		s->conn = NULL;
	}
	snprintf(s->addr, sizeof(s->addr), "%s", addr);
	snprintf(target, sizeof(target), "osd.%d", osd);
	if (tsr_msgr_connect_ev(c->msgr, addr, target, 0, &ev, &s->conn) < 0)
		s->conn = NULL;
	return s->conn;
}

/* Place f under the newest map and make its send (into *ps), or set when
 * it goes again.  Under c->lock.  1: *ps holds a send; 0: it waits; -errno:
 * it fails (the pool went). */
static int
place(struct tsr_client *c, struct flight *f, struct pending_send *ps)
{
	struct tsr_osdmap_epoch *ep = tsr_mapsub_osdmap(c->sub);
	const struct tsr_osdmap *m;
	const struct tsr_osdmap_pool *pool;
	const struct tsr_osdmap_osd *o;
	struct tsr_pg_mapping pm;
	struct tsr_objop req;
	struct tsr_enc e;
	struct tsr_msg *msg;
	char err[256];
	uint32_t pg;
	int rc;

	f->osd = -1;
	set_conn(f, NULL);
	if (ep == NULL) {
		f->need_epoch = 1;
		return 0;
	}
	m = tsr_osdmap_epoch_map(ep);
	f->epoch = m->epoch;
	if ((pool = tsr_osdmap_pool(m, f->pool)) == NULL) {
		snprintf(f->op->why, sizeof(f->op->why), "no pool %" PRId64 " in OSD map epoch "
			 "%" PRIu64, f->pool, m->epoch);
		tsr_osdmap_epoch_put(ep);
		return -ENOENT;
	}
	pg = f->oid_len ? tsr_object_pg(f->oid, f->oid_len, pool->pg_num) : f->op->pg;
	if (pg >= pool->pg_num) {
		snprintf(f->op->why, sizeof(f->op->why), "pool %" PRId64 " has %u PGs, not "
			 "%u", f->pool, pool->pg_num, pg + 1);
		tsr_osdmap_epoch_put(ep);
		return -ERANGE;
	}
	rc = tsr_osdmap_epoch_map_pg(ep, f->pool, pg, &pm, err, sizeof(err));
	o = rc == 0 && pm.acting_primary >= 0 ? tsr_osdmap_osd(m, pm.acting_primary) : NULL;
	if (o == NULL || !o->up || o->addr[0] == '\0') {
		/* nobody serves it now: a later map may */
		snprintf(f->op->why, sizeof(f->op->why), "PG %" PRId64 ".%x has no primary "
			 "up in OSD map epoch %" PRIu64 "%s%.150s", f->pool, pg, m->epoch,
			 rc < 0 ? ": " : "", rc < 0 ? err : "");
		f->need_epoch = m->epoch + 1;
		tsr_osdmap_epoch_put(ep);
		return 0;
	}
	memset(&req, 0, sizeof(req));
	req.client = c->id;
	req.tid = f->tid;
	req.map_epoch = m->epoch;
	req.pool = f->pool;
	req.pg = pg;
	req.oid = f->oid;
	req.oid_len = f->oid_len;
	req.nops = f->op->n;
	for (uint32_t i = 0; i < f->op->n; i++) {
		req.ops[i] = f->op->s[i].sub;
		if (req.ops[i].in_len)
			req.ops[i].in = f->in->p + f->in_off[i];
	}
	tsr_enc_init(&e);
	if ((rc = tsr_objop_encode(&e, &req)) < 0 ||
	    (msg = tsr_msg_from_enc(TSR_MSG_OSD_OP, &e)) == NULL) {
		tsr_enc_release(&e);
		tsr_osdmap_epoch_put(ep);
		snprintf(f->op->why, sizeof(f->op->why), "the operation does not encode");
		return rc < 0 ? rc : -ENOMEM;
	}
	if (f->in)
		tsr_msg_set_rbuf(msg, f->in);
	ps->conn = session(c, pm.acting_primary, o->addr);
	tsr_osdmap_epoch_put(ep);
	if (ps->conn == NULL) {
		tsr_msg_free(msg, -ENOTCONN);
		f->retry_ns = now_ns() + RETRY_NS;
		return 0;
	}
	tsr_conn_get(ps->conn);
	ps->msg = msg;
	ps->f = f;
	ps->in = NULL;
	if (c->inject_dup && f->in)
		ps->in = tsr_rbuf_get(f->in);
	f->osd = pm.acting_primary;
	set_conn(f, ps->conn);
	f->need_epoch = 0;
	f->retry_ns = 0;
	f->sends++;
	return 1;
}

static void finish(struct tsr_client *c, struct flight *f, int result,
		   const struct tsr_objop_reply *r, const struct tsr_msg *m);
static void complete(struct tsr_client *c);

/* Send what place() made (outside c->lock). */
static void
send_all(struct tsr_client *c, struct pending_send *ps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct tsr_msg *dup = NULL;
		if (ps[i].in) {
			/* client_inject_dup: the same request twice (the OSD must
			 * apply it once) */
			dup = tsr_msg_new(TSR_MSG_OSD_OP, ps[i].msg->front, ps[i].msg->front_len);
			if (dup)
				tsr_msg_set_rbuf(dup, ps[i].in);
			tsr_rbuf_put(ps[i].in);
		}
		int rc = tsr_conn_send(ps[i].conn, ps[i].msg, 0);
		if (rc == 0 && dup)
			rc = tsr_conn_send(ps[i].conn, dup, 0);
		else if (dup)
			tsr_msg_free(dup, -ECANCELED);
		if (rc < 0) {
			/* a full queue, a session gone: again after a while, if
			 * it is still in flight on that session */
			pthread_mutex_lock(&c->lock);
			for (struct flight *f = c->flights; f; f = f->next)
				if (f == ps[i].f && f->conn == ps[i].conn) {
					set_conn(f, NULL);
					f->osd = -1;
					f->retry_ns = now_ns() + RETRY_NS;
				}
			pthread_mutex_unlock(&c->lock);
		}
		tsr_conn_put(ps[i].conn);
	}
}

/* Place again every operation that wants (all: those whose primary the
 * map changed too); the sends go out after the lock. */
static void
kick(struct tsr_client *c, int all)
{
	struct pending_send *ps = NULL;
	size_t n = 0, cap = 0;
	uint64_t epoch = tsr_mapsub_epoch(c->sub, TSR_MON_MAP_OSD), now = now_ns();
	/* a new map: the primaries under it, one epoch for every flight */
	struct tsr_osdmap_epoch *ep = all ? tsr_mapsub_osdmap(c->sub) : NULL;
	struct flight **pp;

	pthread_mutex_lock(&c->lock);
	for (pp = &c->flights; *pp;) {
		struct flight *f = *pp;
		int go = 0, rc;
		if (f->deadline_ns && now >= f->deadline_ns) {
			*pp = f->next;
			snprintf(f->op->why, sizeof(f->op->why), "no answer within %" PRIu64
				 " ms (sent %u times, last to osd.%d)",
				 c->op_timeout_ns / 1000000, f->sends, f->osd);
			finish(c, f, -ETIMEDOUT, NULL, NULL);
			continue;
		}
		if (f->need_epoch && epoch >= f->need_epoch)
			go = 1;
		else if (f->retry_ns && now >= f->retry_ns)
			go = 1;
		else if (all && !f->need_epoch && !f->retry_ns && f->epoch < epoch)
			go = 1; /* a new map: its primary may have changed */
		if (!go) {
			pp = &f->next;
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			struct pending_send *v = realloc(ps, cap * sizeof(*v));
			if (v == NULL) {
				pp = &f->next;
				continue;
			}
			ps = v;
		}
		if (all && !f->need_epoch && !f->retry_ns && f->osd >= 0) {
			/* unchanged primary and session: nothing to send */
			struct tsr_pg_mapping pm;
			char err[64];
			int same = 0;
			if (ep && tsr_osdmap_epoch_map_object(ep, f->pool, f->oid, f->oid_len, &pm, err,
							      sizeof(err)) == 0 &&
			    f->oid_len && pm.acting_primary == f->osd) {
				const struct tsr_osdmap_osd *o =
					tsr_osdmap_osd(tsr_osdmap_epoch_map(ep), f->osd);
				/* the same OSD at the same address, on the session
				 * we hold to it */
				for (size_t i = 0; o && o->up && i < c->nsess; i++)
					same |= c->sess[i].osd == f->osd && c->sess[i].conn == f->conn &&
						strcmp(c->sess[i].addr, o->addr) == 0;
			}
			if (same) {
				f->epoch = epoch;
				pp = &f->next;
				continue;
			}
		}
		rc = place(c, f, &ps[n]);
		if (rc < 0) {
			*pp = f->next;
			finish(c, f, rc, NULL, NULL);
			continue;
		}
		n += rc;
		pp = &f->next;
	}
	pthread_mutex_unlock(&c->lock);
	tsr_osdmap_epoch_put(ep);
	close_doomed(c);
	send_all(c, ps, n);
	free(ps);
	complete(c);
}

/* ---- Answers ---------------------------------------------------------------------*/

/* A list answer (after the u8 more, when it has one) into kvs. */
static int
take_list(const uint8_t *p, size_t len, int with_more, int kv, struct tsr_kvs *kvs,
	  char *why, size_t whylen)
{
	struct tsr_objop_list l;
	const uint8_t *key, *val;
	size_t klen, vlen, n = 0;
	int rc, more = 0;

	memset(kvs, 0, sizeof(*kvs));
	if (with_more) {
		if (len < 1)
			return -EBADMSG;
		more = p[0] != 0;
		p++;
		len--;
	}
	if ((kvs->buf_ = malloc(len ? len : 1)) == NULL)
		return -ENOMEM;
	if (len)
		memcpy(kvs->buf_, p, len);
	if ((rc = tsr_objop_list_init(&l, kvs->buf_, len, kv, why, whylen)) < 0)
		goto bad;
	while ((rc = tsr_objop_list_next(&l, &key, &klen, &val, &vlen, why, whylen)) > 0) {
		struct tsr_kv *v = realloc(kvs->kv, (n + 1) * sizeof(*v));
		if (v == NULL) {
			rc = -ENOMEM;
			goto bad;
		}
		kvs->kv = v;
		v[n].key = key;
		v[n].key_len = klen;
		v[n].val = kv ? val : NULL;
		v[n].val_len = kv ? vlen : 0;
		n++;
	}
	if (rc < 0)
		goto bad;
	kvs->n = n;
	kvs->more = more;
	return 0;
bad:
	tsr_kvs_free(kvs);
	return rc;
}

/* PG_SCRUB's answer (objop.h): u64 objects, u32 errors, u32 repaired,
 * then the named objects as a list with its more. */
static int
take_scrub(const uint8_t *p, size_t len, struct tsr_scrub_report *r, char *why,
	   size_t whylen)
{
	struct tsr_dec d;

	memset(r, 0, sizeof(*r));
	tsr_dec_init(&d, p, len);
	r->objects = tsr_dec_u64(&d);
	r->errors = tsr_dec_u32(&d);
	r->repaired = tsr_dec_u32(&d);
	if (tsr_dec_error(&d)) {
		snprintf(why, whylen, "a scrub's answer of %zu bytes: too short", len);
		return -EBADMSG;
	}
	return take_list(p + 16, len - 16, 1, 1, &r->bad, why, whylen);
}

/* Hand each step its answer. */
static int
take_outputs(struct flight *f, const struct tsr_objop_reply *r)
{
	struct tsr_op *op = f->op;
	int rc = 0;

	for (uint32_t i = 0; i < op->n; i++) {
		struct step *s = &op->s[i];
		const uint8_t *out = i < r->nops ? r->ops[i].out : NULL;
		size_t olen = i < r->nops ? r->ops[i].out_len : 0;
		int src = i < r->nops ? r->ops[i].rc : 0;
		if (src == 0 && i < r->nops) {
			switch (s->sub.type) {
			case TSR_OBJOP_READ:
				if (olen > s->cap) {
					src = -EBADMSG;
					break;
				}
				if (olen && out != s->buf) /* else received there */
					memcpy(s->buf, out, olen);
				if (s->got)
					*s->got = olen;
				break;
			case TSR_OBJOP_STAT: {
				uint64_t size, mtime, ve, v;
				if (tsr_objop_stat_decode(out, olen, &size, &mtime, &ve, &v) < 0) {
					src = -EBADMSG;
					break;
				}
				if (s->size)
					*s->size = size;
				if (s->mtime)
					*s->mtime = mtime;
				break;
			}
			case TSR_OBJOP_GETXATTR:
				if (s->len)
					*s->len = olen;
				if (olen > s->cap)
					src = -ERANGE;
				else if (olen)
					memcpy(s->buf, out, olen);
				break;
			case TSR_OBJOP_GETXATTRS:
			case TSR_OBJOP_OMAP_GET_KEYS:
			case TSR_OBJOP_OMAP_GET_RANGE:
				if (s->kvs)
					src = take_list(out, olen, s->sub.type == TSR_OBJOP_OMAP_GET_RANGE,
							1, s->kvs, op->why, sizeof(op->why));
				break;
			case TSR_OBJOP_PG_LIST:
				if (s->names)
					src = take_list(out, olen, 1, 0, s->names, op->why,
							sizeof(op->why));
				break;
			case TSR_OBJOP_PG_SCRUB:
				if (op->scrub)
					src = take_scrub(out, olen, op->scrub, op->why,
							 sizeof(op->why));
				break;
			}
		}
		if (s->rc)
			*s->rc = src;
		if (src < 0 && rc == 0 && i < r->nops)
			rc = src;
	}
	return rc;
}

static const char *
step_name(const struct tsr_op *op, uint32_t i)
{
	const char *n = i < op->n ? tsr_objop_name(op->s[i].sub.type) : NULL;

	return n ? n : "?";
}

/* f is done (unlinked by the caller, under c->lock): answer it. */
static void
finish(struct tsr_client *c, struct flight *f, int result, const struct tsr_objop_reply *r,
       const struct tsr_msg *m)
{
	struct tsr_objver ver = { 0, 0 };

	(void)m;
	c->nflights--;
	if (r) {
		int orc = take_outputs(f, r);
		ver.epoch = r->ver_epoch;
		ver.ver = r->ver;
		if (result == 0 && orc < 0)
			result = orc;
		if (result < 0 && f->op->why[0] == '\0') {
			uint32_t k = r->nops ? r->nops - 1 : 0;
			snprintf(f->op->why, sizeof(f->op->why), "%s%s%s from osd.%d",
				 strerror(-result), r->nops ? " at step " : "",
				 r->nops ? step_name(f->op, k) : "", f->osd);
		}
	}
	if (result < 0 && f->op->why[0] == '\0')
		snprintf(f->op->why, sizeof(f->op->why), "%s", strerror(-result));
	set_conn(f, NULL);
	f->result = result;
	f->ver = ver;
	f->next = c->completed;
	c->completed = f;
}

/* Answer what finished (not under c->lock: a callback may submit). */
static void
complete(struct tsr_client *c)
{
	for (;;) {
		struct flight *f;
		pthread_mutex_lock(&c->lock);
		f = c->completed;
		if (f)
			c->completed = f->next;
		pthread_mutex_unlock(&c->lock);
		if (f == NULL)
			return;
		f->done(f->arg, f->result, &f->ver);
		tsr_rbuf_put(f->in);
		free(f->oid);
		free(f);
	}
}

static void
on_reply(struct tsr_conn *conn, struct tsr_msg *m, void *arg)
{
	struct tsr_client *c = arg;
	struct tsr_objop_reply r;
	struct flight **pp, *f = NULL;
	char err[256];
	uint64_t epoch;

	if (m->type != TSR_MSG_OSD_OP_REPLY ||
	    tsr_objop_reply_decode(m->front, m->front_len,
				   m->data_len ? m->data_iov[0].iov_base : NULL, m->data_len, &r,
				   err, sizeof(err)) < 0) {
		TSR_LOG_WARN(MSG, "%s: an answer that does not decode; dropped",
			     tsr_conn_peer(conn));
		tsr_msg_free(m, 0);
		return;
	}
	epoch = tsr_mapsub_epoch(c->sub, TSR_MON_MAP_OSD);
	pthread_mutex_lock(&c->lock);
	for (pp = &c->flights; *pp; pp = &(*pp)->next)
		if ((*pp)->tid == r.tid) {
			f = *pp;
			break;
		}
	if (f == NULL || f->conn != conn) {
		/* done already, or from a session it left: stale */
		pthread_mutex_unlock(&c->lock);
		tsr_msg_free(m, 0);
		return;
	}
	if (r.result == -ESTALE || r.result == -EAGAIN) {
		/* not served there now: once our map is as new as the OSD's,
		 * or after a while */
		f->osd = -1;
		set_conn(f, NULL);
		if (r.result == -ESTALE && r.map_epoch > epoch)
			f->need_epoch = r.map_epoch;
		else
			f->retry_ns = now_ns() + RETRY_NS;
		pthread_mutex_unlock(&c->lock);
		tsr_msg_free(m, 0);
		return;
	}
	*pp = f->next;
	for (size_t i = 0; i < c->nsess; i++)
		if (c->sess[i].conn == conn)
			c->sess[i].backoff_ms = 0;
	finish(c, f, r.result, &r, m);
	pthread_mutex_unlock(&c->lock);
	tsr_msg_free(m, 0);
	complete(c);
}

/* (the loop) a session broke: what went on it goes again */
struct fault {
	struct tsr_client *c;
	struct tsr_conn *conn;       /* a reference */
};

static void
fault_on_loop(void *arg)
{
	struct fault *x = arg;
	struct tsr_client *c = x->c;

	pthread_mutex_lock(&c->lock);
	if (c->closing) {
		/* shutdown closes the sessions; the messenger frees them */
		pthread_mutex_unlock(&c->lock);
		free(x);
		return;
	}
	for (size_t i = 0; i < c->nsess; i++)
		if (c->sess[i].conn == x->conn) {
			struct sess *s = &c->sess[i];
			doom(c, s->conn);
			s->conn = NULL;
			s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 : 50;
			if (s->backoff_ms > 2000)
				s->backoff_ms = 2000;
			s->retry_ns = now_ns() + (uint64_t)s->backoff_ms * 1000000u;
		}
	for (struct flight *f = c->flights; f; f = f->next)
		if (f->conn == x->conn) {
			set_conn(f, NULL);
			f->osd = -1;
			f->retry_ns = now_ns();
		}
	pthread_mutex_unlock(&c->lock);
	close_doomed(c);
	tsr_conn_put(x->conn);
	free(x);
	kick(c, 0);
}

static void
on_fault(struct tsr_conn *conn, int err, void *arg)
{
	struct tsr_client *c = arg;
	struct fault *x = malloc(sizeof(*x));

	(void)err;
	if (x == NULL)
		return; /* the deadline ends what went on it */
	pthread_mutex_lock(&c->lock);
	int closing = c->closing;
	pthread_mutex_unlock(&c->lock);
	if (closing) {
		free(x);
		return;
	}
	x->c = c;
	x->conn = conn;
	tsr_conn_get(conn);
	if (tsr_loop_post(c->loop, fault_on_loop, x) < 0) {
		tsr_conn_put(conn);
		free(x);
	}
}

static void
on_map(void *arg, int which, uint64_t epoch, int full)
{
	(void)epoch;
	(void)full;
	if (which == TSR_MON_MAP_OSD)
		kick(arg, 1);
}

static void
tick(void *arg)
{
	struct tsr_client *c = arg;

	c->timer = 0;
	kick(c, 0);
	if (!c->closing &&
	    tsr_loop_timer_add(c->loop, TICK_NS, tick, c, &c->timer) < 0)
		c->timer = 0;
}

/* ---- Running operations ----------------------------------------------------------*/

int
tsr_op_submit(struct tsr_client *c, int64_t pool, const void *oid, size_t oid_len,
	      struct tsr_op *op, tsr_op_done done, void *arg)
{
	struct flight *f;
	struct pending_send ps;
	size_t total = 0;
	int rc, writes = 0, reads = 0;

	if (op->bad)
		return op->bad; /* (why says which step) */
	op->why[0] = '\0';
	if (op->n == 0) {
		snprintf(op->why, sizeof(op->why), "an operation with no step");
		return -EINVAL;
	}
	if (oid_len == 0 && !(op->n == 1 && (op->s[0].sub.type == TSR_OBJOP_PG_LIST ||
					     op->s[0].sub.type == TSR_OBJOP_PG_SCRUB))) {
		snprintf(op->why, sizeof(op->why), "an empty object name");
		return -EINVAL;
	}
	if (oid_len > TSR_OBJOP_MAX_OID || (oid_len && ((const uint8_t *)oid)[0] == 0)) {
		snprintf(op->why, sizeof(op->why), "an object name of %zu bytes%s: 1 to %u, "
			 "not starting with a zero byte", oid_len,
			 oid_len && ((const uint8_t *)oid)[0] == 0 ? " starting with a zero byte"
								     : "", TSR_OBJOP_MAX_OID);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < op->n; i++) {
		writes |= tsr_objop_writes(op->s[i].sub.type);
		reads |= tsr_objop_reads(op->s[i].sub.type);
		if (op->s[i].sub.in_len > TSR_OBJOP_MAX_DATA) {
			snprintf(op->why, sizeof(op->why), "step %u (%s): %zu bytes, at most %u",
				 i, step_name(op, i), op->s[i].sub.in_len, TSR_OBJOP_MAX_DATA);
			return -EINVAL;
		}
		total += op->s[i].sub.in_len;
	}
	if (total > c->max_data) {
		snprintf(op->why, sizeof(op->why), "%zu bytes of input, more than a message may "
			 "carry (ms_max_data, %zu)", total, c->max_data);
		return -E2BIG;
	}
	if (writes && reads) {
		snprintf(op->why, sizeof(op->why), "a change with a step that returns data "
			 "(run them as two operations)");
		return -EINVAL;
	}
	uint8_t *in = NULL;
	f = calloc(1, sizeof(*f));
	/* (tsr_rbuf_new frees in when it fails) */
	if (f == NULL || (oid_len && (f->oid = malloc(oid_len)) == NULL) ||
	    (total && ((in = malloc(total)) == NULL ||
		       (f->in = tsr_rbuf_new(in, total)) == NULL))) {
		if (f)
			free(f->oid);
		free(f);
		return -ENOMEM;
	}
	/* the input travels as one copy, shared by every send of it */
	for (size_t i = 0, at = 0; i < op->n; i++) {
		const struct tsr_objop_sub *sub = &op->s[i].sub;
		f->in_off[i] = at;
		if (sub->in_len)
			memcpy(in + at, sub->in, sub->in_len);
		at += sub->in_len;
	}
	if (oid_len)
		memcpy(f->oid, oid, oid_len);
	f->c = c;
	f->oid_len = oid_len;
	f->pool = pool;
	f->op = op;
	f->done = done;
	f->arg = arg;
	f->osd = -1;
	f->deadline_ns = now_ns() + (op->timeout_ns ? op->timeout_ns : c->op_timeout_ns);
	pthread_mutex_lock(&c->lock);
	if (c->closing) {
		pthread_mutex_unlock(&c->lock);
		tsr_rbuf_put(f->in);
		free(f->oid);
		free(f);
		snprintf(op->why, sizeof(op->why), "the client is shutting down");
		return -ESHUTDOWN;
	}
	f->tid = ++c->next_tid;
	rc = place(c, f, &ps);
	if (rc < 0) {
		pthread_mutex_unlock(&c->lock);
		tsr_rbuf_put(f->in);
		free(f->oid);
		free(f);
		return rc;
	}
	f->next = c->flights;
	c->flights = f;
	c->nflights++;
	pthread_mutex_unlock(&c->lock);
	close_doomed(c);
	if (rc > 0)
		send_all(c, &ps, 1);
	return 0;
}

struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done, result;
	struct tsr_objver ver;
};

static void
woken(void *arg, int result, const struct tsr_objver *ver)
{
	struct waiter *w = arg;

	pthread_mutex_lock(&w->mu);
	w->done = 1;
	w->result = result;
	w->ver = *ver;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

void
tsr_op_timeout_(struct tsr_op *op, uint64_t ms)
{
	op->timeout_ns = ms * 1000000u;
}

int
tsr_op_run(struct tsr_client *c, int64_t pool, const void *oid, size_t oid_len,
	   struct tsr_op *op, struct tsr_objver *ver)
{
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0,
			    { 0, 0 } };
	int rc = tsr_op_submit(c, pool, oid, oid_len, op, woken, &w);

	if (rc < 0)
		return rc;
	/* the deadline bounds it: the timer answers every operation */
	pthread_mutex_lock(&w.mu);
	while (!w.done)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
	if (ver)
		*ver = w.ver;
	return w.result;
}

int
tsr_pg_scrub(struct tsr_client *c, int64_t pool, uint32_t pg, unsigned flags,
	     uint64_t timeout_ms, struct tsr_scrub_report *out)
{
	struct tsr_osdmap_epoch *ep = tsr_mapsub_osdmap(c->sub);
	const struct tsr_osdmap_pool *p = ep ? tsr_osdmap_pool(tsr_osdmap_epoch_map(ep), pool)
					     : NULL;
	uint32_t pg_num = p ? p->pg_num : 0;
	struct tsr_op *op;
	struct step *s;
	int rc, src = 0;

	tsr_osdmap_epoch_put(ep);
	memset(out, 0, sizeof(*out));
	if (pg_num == 0)
		return fail(-ENOENT, "no pool %" PRId64 " in the OSD map", pool);
	if (pg >= pg_num)
		return fail(-ENOENT, "pool %" PRId64 " has %u PGs: no PG %x", pool, pg_num, pg);
	if (flags & ~(unsigned)(TSR_SCRUB_DEEP | TSR_SCRUB_REPAIR))
		return fail(-EINVAL, "scrub flags 0x%x: only TSR_SCRUB_DEEP and "
			    "TSR_SCRUB_REPAIR are defined", flags);
	if ((op = tsr_op_create()) == NULL)
		return -ENOMEM;
	s = add(op, TSR_OBJOP_PG_SCRUB);
	s->sub.flags = (uint16_t)((flags & TSR_SCRUB_DEEP ? TSR_OBJOP_SCRUB_DEEP : 0) |
				  (flags & TSR_SCRUB_REPAIR ? TSR_OBJOP_SCRUB_REPAIR : 0));
	s->rc = &src;
	op->pg = pg;
	op->scrub = out;
	tsr_op_timeout_(op, timeout_ms);
	rc = tsr_op_run(c, pool, NULL, 0, op, NULL);
	if (rc == 0)
		rc = src;
	if (rc < 0) {
		fail(rc, "scrubbing PG %" PRId64 ".%x: %s", pool, pg,
		     rc == -EBUSY ? "the PG is not active+clean now (scrub it once it is)"
		     : tsr_op_why(op));
		tsr_kvs_free(&out->bad);
	}
	tsr_op_destroy(op);
	return rc;
}

int
tsr_client_list(struct tsr_client *c, int64_t pool, struct tsr_list_cursor *cur, uint64_t max,
		int (*fn)(void *arg, const void *name, size_t len), void *arg)
{
	uint64_t given = 0;

	while (!cur->done && (max == 0 || given < max)) {
		struct tsr_osdmap_epoch *ep = tsr_mapsub_osdmap(c->sub);
		const struct tsr_osdmap_pool *p =
			ep ? tsr_osdmap_pool(tsr_osdmap_epoch_map(ep), pool) : NULL;
		uint32_t pg_num = p ? p->pg_num : 0;
		struct tsr_op *op;
		struct tsr_kvs names;
		struct step *s;
		int rc, src = 0;

		tsr_osdmap_epoch_put(ep);
		if (pg_num == 0)
			return fail(-ENOENT, "no pool %" PRId64 " in the OSD map", pool);
		if (cur->pg >= pg_num) {
			cur->done = 1;
			break;
		}
		if ((op = tsr_op_create()) == NULL)
			return -ENOMEM;
		memset(&names, 0, sizeof(names));
		s = add(op, TSR_OBJOP_PG_LIST);
		set_name(op, s, cur->after, cur->after_len);
		s->sub.len = max && max - given < 1024 ? max - given : 1024;
		s->names = &names;
		s->rc = &src;
		op->pg = cur->pg;
		for (int tries = 0; tries < 100; tries++) {
			rc = tsr_op_run(c, pool, NULL, 0, op, NULL);
			if (rc != -EAGAIN)
				break;
			/* the PG is recovering objects: the list waits for them */
			struct timespec ts = { 0, 100 * 1000000 };
			nanosleep(&ts, NULL);
		}
		if (rc < 0) {
			fail(rc, "listing PG %" PRId64 ".%x: %s", pool, cur->pg, tsr_op_why(op));
			tsr_op_destroy(op);
			tsr_kvs_free(&names);
			return rc;
		}
		tsr_op_destroy(op);
		if (names.n == 0 && names.more) {
			tsr_kvs_free(&names);
			return fail(-EIO, "listing PG %" PRId64 ".%x: an answer with no names that "
				    "says more follow", pool, cur->pg);
		}
		for (size_t i = 0; i < names.n; i++) {
			given++;
			if (names.kv[i].key_len <= sizeof(cur->after)) {
				memcpy(cur->after, names.kv[i].key, names.kv[i].key_len);
				cur->after_len = names.kv[i].key_len;
			}
			if ((rc = fn(arg, names.kv[i].key, names.kv[i].key_len)) != 0) {
				tsr_kvs_free(&names);
				return rc < 0 ? rc : 0;
			}
		}
		if (!names.more) {
			cur->pg++;
			cur->after_len = 0;
		}
		tsr_kvs_free(&names);
	}
	return 0;
}

int
tsr_client_pool(struct tsr_client *c, const char *name, int64_t *id)
{
	struct tsr_osdmap_epoch *ep = tsr_mapsub_osdmap(c->sub);
	const struct tsr_osdmap *m = ep ? tsr_osdmap_epoch_map(ep) : NULL;
	int rc = -ENOENT;

	for (size_t i = 0; m && i < m->npools; i++)
		if (strcmp(m->pools[i].name, name) == 0) {
			*id = m->pools[i].id;
			rc = 0;
		}
	if (rc < 0)
		fail(rc, "no pool named \"%s\" in OSD map epoch %" PRIu64, name,
		     m ? m->epoch : 0);
	tsr_osdmap_epoch_put(ep);
	return rc;
}

uint64_t
tsr_client_epoch(struct tsr_client *c)
{
	return tsr_mapsub_epoch(c->sub, TSR_MON_MAP_OSD);
}

/* ---- Connecting ------------------------------------------------------------------*/

static int
encode_keys(struct tsr_enc *e, uint64_t client, uint64_t tid, const void *body)
{
	struct tsr_mon_svc_keys k = { client, tid, -1 };

	(void)body;
	return tsr_monmsg_svc_keys_encode(e, &k);
}

static void
keys_done(void *arg, int status, const char *text)
{
	struct tsr_client *c = arg;
	char err[256] = "";
	int rc = status;

	if (rc == 0)
		rc = tsr_auth_service_open_answer(c->auth, text, err, sizeof(err));
	pthread_mutex_lock(&c->lock);
	c->keys_rc = rc;
	snprintf(c->keys_err, sizeof(c->keys_err), "%s",
		 status < 0 ? (text ? text : strerror(-status)) : err);
	c->keys_done = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->lock);
}

struct keys_ask {
	struct tsr_client *c;
	uint64_t timeout_ms;
};

static void
ask_keys(void *arg)
{
	struct keys_ask *k = arg;
	int rc = tsr_monc_send_typed(k->c->monc, TSR_MSG_MON_SVC_KEYS, encode_keys, NULL,
				     k->timeout_ms, keys_done, k->c, NULL);

	if (rc < 0)
		keys_done(k->c, rc, "cannot ask the monitors");
	free(k);
}

static void
start_timer(void *arg)
{
	tick(arg);
}

int
tsr_client_connect(const char *conf_path, const char *name, uint64_t timeout_ms,
		   struct tsr_client **out, char *err, size_t errlen)
{
	struct tsr_client *c = tsr_xcalloc(1, sizeof(*c));
	struct tsr_mon_members mem;
	struct tsr_msgr_opts mo;
	struct tsr_conf *conf = NULL;
	struct keys_ask *k;
	struct timespec until;
	char type[16];
	const char *id, *dir;
	int64_t t;
	int rc, is_mds;

	*out = NULL;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cv, NULL);
	if (timeout_ms == 0)
		timeout_ms = DEFAULT_TIMEOUT_MS;
	if (name == NULL)
		name = "client.admin";
	/* an MDS reaches its metadata pool through this library too */
	is_mds = strncmp(name, "mds.", 4) == 0;
	if (!tsr_auth_name_valid(name, NULL) ||
	    (strncmp(name, "client.", 7) != 0 && !is_mds)) {
		rc = tsr_errf(err, errlen, -EINVAL, "\"%s\" is not a client's name "
			      "(client.NAME)", name);
		goto fail;
	}
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(type, sizeof(type), is_mds ? "mds" : "client");
	id = name + (is_mds ? 4 : 7);
	if (conf_path == NULL)
		conf_path = getenv("TESSERA_CONF") ? getenv("TESSERA_CONF")
						   : "/etc/tessera/tessera.conf";
	if ((rc = tsr_conf_load(conf_path, &conf, err, errlen)) < 0 ||
	    (rc = tsr_conf_resolve(conf, type, id, NULL, err, errlen)) < 0 ||
	    (rc = tsr_monc_conf(conf, &mem, &mo, err, errlen)) < 0 ||
	    (rc = tsr_auth_conf(conf, name, &c->auth, err, errlen)) < 0)
		goto fail;
	t = tsr_conf_int(conf, "client_op_timeout");
	c->op_timeout_ns = (uint64_t)(t > 0 ? t : DEFAULT_TIMEOUT_MS) * 1000000u;
	c->inject_dup = is_mds ? 0 : tsr_conf_bool(conf, "client_inject_dup");
	c->dirty_max = is_mds ? 0 : (uint64_t)tsr_conf_int(conf, "client_dirty_max");
	c->mds_timeout_ms = is_mds ? 0 : (uint64_t)tsr_conf_int(conf, "client_mds_timeout");
	c->readahead_max = is_mds ? 0 : (uint64_t)tsr_conf_int(conf, "client_readahead_max");
	if ((c->reg = tsr_registry_create()) == NULL) {
		rc = tsr_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	dir = tsr_conf_str(conf, "plugin_dir");
	if ((rc = tsr_registry_load_dir(c->reg, dir, NULL, NULL, err, errlen)) < 0 &&
	    rc != -ENOENT)
		goto fail;
	if (getrandom(&c->id, sizeof(c->id), 0) != sizeof(c->id))
		c->id = tsr_now_ns() ^ ((uint64_t)getpid() << 32);
	c->id |= 1; /* never 0: "none" */
	c->max_data = mo.max_data;
	mo.entity_type = is_mds ? TSR_ENTITY_MDS : TSR_ENTITY_CLIENT;
	mo.entity_id = c->id >> 1;
	mo.bind = NULL;
	mo.auth = c->auth;
	if ((rc = tsr_loop_create(&c->loop)) < 0) {
		tsr_errf(err, errlen, rc, "event loop: %s", strerror(-rc));
		goto fail;
	}
	tsr_core_host_init(&c->host, c->name, conf, c->loop);
	if ((rc = tsr_msgr_create(&mo, NULL, &c->msgr, err, errlen)) < 0)
		goto fail;
	tsr_msgr_set_rx_tag(c->msgr, reply_tag);
	/* (a fallback: every OSD session has events of its own, session()) */
	if ((rc = tsr_msgr_register(c->msgr, TSR_MSG_OSD_OP_REPLY, on_reply, c,
				    TSR_MSGR_INLINE_SMALL)) < 0) {
		tsr_errf(err, errlen, rc, "registering the OSDs' answers' handler: %s",
			 strerror(-rc));
		goto fail;
	}
	if ((rc = tsr_monc_create(c->msgr, c->loop, &mem, &c->monc, err, errlen)) < 0 ||
	    (rc = tsr_mapsub_create(c->msgr, c->loop, &mem, c->reg, &c->host.host,
				    TSR_MON_SUB_OSD | TSR_MON_SUB_MDS, 0, on_map, c, &c->sub,
				    err, errlen)) < 0)
		goto fail;
	tsr_msgr_start(c->msgr);
	if ((rc = tsr_loop_thread_start(c->loop, &c->thr)) < 0) {
		tsr_errf(err, errlen, rc, "starting a thread: %s", strerror(-rc));
		goto fail;
	}
	/* our key toward the OSDs, and the OSD map */
	k = tsr_xcalloc(1, sizeof(*k));
	k->c = c;
	k->timeout_ms = timeout_ms;
	if (tsr_loop_post(c->loop, ask_keys, k) < 0 ||
	    tsr_loop_post(c->loop, start_timer, c) < 0) {
		rc = tsr_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(timeout_ms / 1000) + 1;
	pthread_mutex_lock(&c->lock);
	while (!c->keys_done && pthread_cond_timedwait(&c->cv, &c->lock, &until) == 0)
		;
	rc = c->keys_done ? c->keys_rc : -ETIMEDOUT;
	pthread_mutex_unlock(&c->lock);
	if (rc < 0) {
		tsr_errf(err, errlen, rc, "%s: no key toward the OSDs from the monitors: %s",
			 c->name, c->keys_done ? c->keys_err : "no answer");
		goto fail;
	}
	if ((rc = tsr_mapsub_wait(c->sub, TSR_MON_MAP_OSD, 1, timeout_ms)) < 0) {
		tsr_errf(err, errlen, rc, "%s: no OSD map from the monitors within %" PRIu64
			 " ms", c->name, timeout_ms);
		goto fail;
	}
	tsr_conf_destroy(conf);
	*out = c;
	return 0;
fail:
	tsr_conf_destroy(conf);
	tsr_client_shutdown(c);
	return rc;
}

static void
stop_timer(void *arg)
{
	struct tsr_client *c = arg;

	if (c->timer)
		tsr_loop_timer_cancel(c->loop, c->timer);
	c->timer = 0;
}

void
tsr_client_shutdown(struct tsr_client *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	c->closing = 1;
	while (c->flights) {
		struct flight *f = c->flights;
		c->flights = f->next;
		snprintf(f->op->why, sizeof(f->op->why), "the client shut down");
		finish(c, f, -ESHUTDOWN, NULL, NULL);
	}
	pthread_mutex_unlock(&c->lock);
	complete(c);
	/* the sessions first (their events stop), then the loop, then what
	 * ran on it */
	close_doomed(c);
	pthread_mutex_lock(&c->lock);
	struct sess *ss = c->sess;
	size_t ns = c->nsess;
	c->sess = NULL;
	c->nsess = 0;
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < ns; i++)
		if (ss[i].conn) {
			tsr_conn_close(ss[i].conn);
			tsr_conn_put(ss[i].conn);
		}
	free(ss);
	if (c->thr) {
		tsr_loop_post(c->loop, stop_timer, c);
		tsr_loop_thread_stop(c->thr);
	}
	tsr_mapsub_destroy(c->sub);
	tsr_monc_destroy(c->monc);
	tsr_msgr_destroy(c->msgr);
	tsr_loop_destroy(c->loop);
	tsr_registry_destroy(c->reg);
	tsr_auth_destroy(c->auth);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cv);
	free(c);
}

/* ---- For the file client (client_int.h) ---- */

struct tsr_msgr *
tsr_client_msgr_(struct tsr_client *c)
{
	return c->msgr;
}

struct tsr_loop *
tsr_client_loop_(struct tsr_client *c)
{
	return c->loop;
}

struct tsr_mapsub *
tsr_client_mapsub_(struct tsr_client *c)
{
	return c->sub;
}

uint64_t
tsr_client_id_(struct tsr_client *c)
{
	return c->id;
}

struct tsr_monc *
tsr_client_monc_(struct tsr_client *c)
{
	return c->monc;
}

uint64_t
tsr_client_dirty_max_(struct tsr_client *c)
{
	return c->dirty_max;
}

uint64_t
tsr_client_mds_timeout_(struct tsr_client *c)
{
	return c->mds_timeout_ms;
}

int
tsr_client_fs_claim_(struct tsr_client *c)
{
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	if (c->fs_mounted)
		rc = -EBUSY;
	else
		c->fs_mounted = 1;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void
tsr_client_fs_release_(struct tsr_client *c)
{
	pthread_mutex_lock(&c->lock);
	c->fs_mounted = 0;
	pthread_mutex_unlock(&c->lock);
}

uint64_t
tsr_client_readahead_max_(struct tsr_client *c)
{
	return c->readahead_max;
}

uint64_t
tsr_client_timeout_ms_(struct tsr_client *c)
{
	return c->op_timeout_ns / 1000000u;
}
