/* ops.c — the clients' operations on an OSD (core/osd/objop.h): taken
 * from a client's session, handed to the PG's machine (pgsm.h), run
 * against the store when the machine says (EXEC), replicated as a backend
 * transaction (REPOP), answered when the machine says (REPLY).
 *
 * The way of an operation.  The I/O thread that read it decodes it and
 * posts it to its PG's shard (an operation from a newer map than the
 * OSD's waits for that map).  On the shard its copy, once fed the client's epoch, gives
 * it to the machine, which checks that this OSD is the primary (-ESTALE
 * otherwise: the client places it again with a newer map), keeps the
 * order of the operations on one object, and holds them while the PG
 * peers or the object is recovered.  A read runs at EXEC on what every
 * member holds.  A write is built at EXEC into a backend transaction on
 * the object as the writes before it left it: the guards are checked,
 * APPEND finds the end, and the result is the ops the primary persists
 * with its log entry and sends, encoded (tessera/txn.h), to every
 * replica, which checks them (its collection, the entry's object, no name
 * of the OSD's own) and persists them with the same entry.  The machine
 * answers once every member holds it durably.  A write sent again (the
 * same client and tid) after a change of primary is found in the log and
 * answered as the first time (pgsm.h).
 *
 * Guards (ASSERT_VERSION, ASSERT_EXISTS, CMPXATTR) see the object as it
 * stood before the operation; the changes of one compound apply in order.
 * Every change but REMOVE makes the object if it is not there.
 */
#include "pgrt.h"
#include "event/workq.h"
#include "log/log.h"
#include "osd/osdmsg.h"
#include "util/util.h"

#include <tessera/crc32c.h>
#include <tessera/hash.h>
#include <tessera/txn.h>

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_OPWAIT 4096u             /* operations waiting for a map */
#define MAX_OPWAIT_BYTES (256u << 20) /* and their data */
#define WR_WAIT_S 60                 /* for the writes before: then it fails */

static struct tsr_log_rate op_refusals = TSR_LOG_RATE_INIT(5, 10000);

/* ---- Answers --------------------------------------------------------------------*/

/* What a reply carries: the sub-operations' output, one buffer. */
struct out {
	uint8_t *p;
	size_t len, cap;
	int pooled;                  /* p is from the messenger's pool */
	int err;                     /* no memory, or over the bound */
	size_t max;                  /* what a message's data may hold */
	uint32_t crc;                /* CRC32C of p[0..crc_len) */
	size_t crc_len;
};

/* Bring o->crc over everything in o so far. */
static void
out_crc_catch_up(struct out *o)
{
	if (o->crc_len < o->len) {
		o->crc = tsr_crc32c(o->crc, o->p + o->crc_len, o->len - o->crc_len);
		o->crc_len = o->len;
	}
}

static void
out_free(struct out *o)
{
	if (o->pooled)
		tsr_msg_buf_put(o->p, o->cap);
	else
		free(o->p);
	o->p = NULL;
	o->pooled = 0;
}

static uint8_t *
out_room(struct out *o, size_t n)
{
	if (o->err)
		return NULL;
	if (n > TSR_OBJOP_MAX_DATA || o->len + n > o->max) {
		o->err = -E2BIG; /* more than one answer may carry */
		return NULL;
	}
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		while (cap < o->len + n)
			cap *= 2;
		void *v = NULL;
		int pooled = cap >= 65536;
		/* a large answer comes from the messenger's pool: page-aligned
		 * (a backend can read into it from the device directly), and
		 * its pages already faulted in */
		if (pooled) {
			v = tsr_msg_buf_get(cap, &cap);
			if (v != NULL && o->len)
				memcpy(v, o->p, o->len);
			if (v != NULL)
				out_free(o);
		} else {
			v = realloc(o->p, cap);
		}
		if (v == NULL) {
			o->err = -ENOMEM;
			return NULL;
		}
		o->p = v;
		o->cap = cap;
		o->pooled = pooled;
	}
	return o->p + o->len;
}

static void
out_put(struct out *o, const void *p, size_t n)
{
	uint8_t *d = out_room(o, n);

	if (d) {
		if (n)
			memcpy(d, p, n);
		o->len += n;
	}
}

static void
release_out(void *arg, int result)
{
	(void)result;
	free(arg);
}

static void
cop_free(struct cop *op)
{
	if (op == NULL)
		return;
	if (op->conn)
		tsr_conn_put(op->conn);
	if (op->msg)
		tsr_msg_free(op->msg, 0);
	for (size_t i = 0; i < op->nbufs; i++)
		free(op->bufs[i]);
	free(op->bufs);
	free(op->tops);
	tsr_rbuf_put(op->repop);
	free(op);
}

/* Send r to op's client, with o's buffer (taken: freed once sent) as its
 * data.  Nothing goes once the runtime quiesced. */
static void
send_reply(struct cop *op, struct tsr_objop_reply *r, struct out *o)
{
	struct osd_pgrt *rt = op->rt;
	struct tsr_enc e;
	struct tsr_msg *m = NULL;
	int rc = -ENOMEM;

	r->tid = op->op.tid;
	pthread_rwlock_rdlock(&rt->send_lock);
	if (rt->stopping || op->conn == NULL) {
		pthread_rwlock_unlock(&rt->send_lock);
		if (o)
			out_free(o);
		return;
	}
	tsr_enc_init(&e);
	if (tsr_objop_reply_encode(&e, r) == 0)
		m = tsr_msg_from_enc(TSR_MSG_OSD_OP_REPLY, &e);
	else
		tsr_enc_release(&e);
	if (m != NULL) {
		if (o && o->len) {
			struct iovec iov = { o->p, o->len };

			out_crc_catch_up(o);
			tsr_msg_set_data_crc(m, o->crc);
			if ((o->pooled ? tsr_msg_give_data(m, o->p, o->len, o->cap)
				       : tsr_msg_set_data(m, &iov, 1, release_out, o->p)) < 0) {
				tsr_msg_free(m, 0);
				m = NULL;
			} else {
				o->p = NULL;
				o->pooled = 0;
			}
		}
		/* never waiting on a client that does not read: its session
		 * goes, and the client sends again */
		if (m && (rc = tsr_conn_send(op->conn, m, TSR_SEND_NOWAIT)) == -EAGAIN)
			tsr_conn_close(op->conn);
	}
	if (rc < 0)
		tsr_log_rated(&op_refusals, TSR_SUB_OSD, TSR_LOG_WARN, "osd.%d: the answer "
			      "to %s's request %" PRIu64 " not sent: %s", rt->whoami,
			      tsr_conn_peer(op->conn), op->op.tid, strerror(-rc));
	__atomic_add_fetch(&rt->ops_done, 1, __ATOMIC_RELAXED);
	pthread_rwlock_unlock(&rt->send_lock);
	if (o)
		out_free(o);
}

static uint64_t
latest_epoch(struct osd_pgrt *rt)
{
	uint64_t e;

	pthread_mutex_lock(&rt->lock);
	e = rt->latest ? tsr_osdmap_epoch_number(rt->latest) : 0;
	pthread_mutex_unlock(&rt->lock);
	return e;
}

void
osd_op_abort(struct cop *op, int result, uint64_t epoch)
{
	struct tsr_objop_reply r;

	memset(&r, 0, sizeof(r));
	r.result = result;
	r.map_epoch = epoch;
	send_reply(op, &r, NULL);
	cop_free(op);
}

void
osd_op_answer(struct cop *op, int result, uint64_t epoch, const void *out, size_t len)
{
	struct tsr_objop_reply r;
	struct out o;

	memset(&r, 0, sizeof(r));
	memset(&o, 0, sizeof(o));
	o.max = op->rt->max_data;
	r.result = result;
	r.map_epoch = epoch;
	if (result == 0) {
		out_put(&o, out, len);
		if (o.err)
			r.result = o.err;
		r.nops = 1;
		r.ops[0].rc = r.result;
		r.ops[0].out = o.p;
		r.ops[0].out_len = o.err ? 0 : o.len;
		if (o.err)
			o.len = 0;
	}
	send_reply(op, &r, &o);
	cop_free(op);
}

/* ---- Taking operations in -------------------------------------------------------*/

static int wr_busy(struct pgi *g, const void *oid, size_t len);

/* May an operation run on the I/O thread that received it?  Those that
 * return data read it from the store, and may wait for the disk. */
static int
in_place_op(const struct tsr_objop *o)
{
	for (uint32_t i = 0; i < o->nops; i++)
		switch (o->ops[i].type) {
		case TSR_OBJOP_READ:
		case TSR_OBJOP_OMAP_GET_KEYS:
		case TSR_OBJOP_OMAP_GET_RANGE:
		case TSR_OBJOP_GETXATTRS:
		case TSR_OBJOP_PG_LIST:
		case TSR_OBJOP_PG_SCRUB:
			return 0;
		}
	return 1;
}

/* Post op to its copy's queue, under rt->lock: after every epoch the
 * runtime had posted to an existing copy (osd_pgrt_map posts an epoch to
 * the copies before it makes it the latest).  A copy that epoch makes is
 * findable a moment before its first epoch is posted; an operation that
 * reaches it first is parked until the copy has a map (osd_pg_run).  0,
 * or -errno: op is then the caller's to answer, out of the lock.  Nothing
 * here blocks, so the I/O thread does it: a hop through the shard's
 * thread to find the copy cost an operation a wake-up and a second place
 * in the shard's queue.
 *
 * With inplace, an operation that reads no data, for a shard that is idle,
 * is not posted: the shard is entered (tsr_workq_enter) and *inplace set
 * to the event, which the caller runs out of the lock and then leaves the
 * shard (osd_pg_run_entered).  What is posted to the shard meanwhile runs
 * after, so its events keep their order; the operation saves the wake-up
 * of the shard's thread, a fifth of a small write's latency on two cores
 * (doc/architecture.md).  Reads of data are still posted: they wait for
 * the disk, and other sessions' messages wait for this I/O thread. */
static int
route(struct osd_pgrt *rt, struct cop *op, struct ev **inplace)
{
	struct pgi *g = osd_pgi_find(rt, op->pgid);
	struct ev *e;
	int rc;

	if (rt->ops_closed)
		return -ESHUTDOWN;
	if (g == NULL)
		return -ESTALE;   /* no copy here under the OSD's map: not the primary */
	if (g->damaged || (e = calloc(1, sizeof(*e))) == NULL)
		return -EAGAIN;
	e->type = EV_OP;
	e->op = op;
	e->g = g;
	if (inplace && in_place_op(&op->op) && tsr_workq_enter(g->q)) {
		/* a write to an object with a write still committing here
		 * would wait for it (wr_wait): posted, not run here (while
		 * the shard is held nothing adds one) */
		if (!wr_busy(g, op->op.oid, op->op.oid_len)) {
			*inplace = e; /* the caller runs it, out of the lock */
			__atomic_add_fetch(&rt->ops_in_place, 1, __ATOMIC_RELAXED);
			return 0;
		}
		rc = tsr_workq_post(g->q, osd_pg_run, e);
		tsr_workq_leave(g->q);
	} else {
		rc = tsr_workq_post(g->q, osd_pg_run, e);
	}
	if (rc < 0) {
		free(e);
		return -EAGAIN; /* stopping */
	}
	return 0;
}

/* Answer an operation route refused (out of rt->lock). */
static void
unrouted(struct cop *op, int rc, uint64_t epoch)
{
	if (rc == -ESHUTDOWN) {
		/* quiesced: its session is the messenger's no more */
		if (op->conn) {
			tsr_conn_put(op->conn);
			op->conn = NULL;
		}
		cop_free(op);
		return;
	}
	osd_op_abort(op, rc, epoch);
}

static void
on_op_msg(struct tsr_conn *c, struct tsr_msg *msg, void *arg)
{
	struct osd_pgrt *rt = arg;
	struct cop *op = tsr_xcalloc(1, sizeof(*op));
	struct ev *inplace = NULL;
	char err[256] = "";
	uint64_t latest;
	int rc;

	op->rt = rt;
	op->msg = msg;
	tsr_conn_get(c);
	op->conn = c;
	rc = tsr_objop_decode(msg->front, msg->front_len,
			      msg->data_len ? msg->data_iov[0].iov_base : NULL, msg->data_len,
			      &op->op, err, sizeof(err));
	if (rc < 0) {
		tsr_log_rated(&op_refusals, TSR_SUB_OSD, TSR_LOG_WARN, "osd.%d: %s (%s): an "
			      "operation that does not decode: %s; refused", rt->whoami,
			      tsr_conn_peer(c), tsr_conn_peer_auth(c), err);
		osd_op_abort(op, rc, latest_epoch(rt));
		return;
	}
	op->pgid.pool = op->op.pool;
	op->pgid.pg = op->op.pg;
	__atomic_add_fetch(&rt->ops_in, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&rt->lock);
	if (rt->ops_closed) {
		pthread_mutex_unlock(&rt->lock);
		osd_op_abort(op, -EAGAIN, 0);
		return;
	}
	latest = rt->latest ? tsr_osdmap_epoch_number(rt->latest) : 0;
	if (op->op.map_epoch > latest || rt->opwait) {
		/* the client has a newer map: the operation waits for it (and
		 * so does every one behind it, so that one session's operations
		 * keep their order) */
		if (rt->nopwait >= MAX_OPWAIT ||
		    rt->opwait_bytes + msg->data_len > MAX_OPWAIT_BYTES) {
			pthread_mutex_unlock(&rt->lock);
			osd_op_abort(op, -EAGAIN, latest);
			return;
		}
		rt->opwait_bytes += msg->data_len;
		/* in the order they came: one client's operations on one
		 * object keep theirs */
		struct cop **tail = &rt->opwait;
		while (*tail)
			tail = &(*tail)->next;
		op->next = NULL;
		*tail = op;
		rt->nopwait++;
		pthread_mutex_unlock(&rt->lock);
		return;
	}
	rc = route(rt, op, &inplace);
	pthread_mutex_unlock(&rt->lock);
	if (rc < 0)
		unrouted(op, rc, latest);
	else if (inplace)
		osd_pg_run_entered(inplace);
}

void
osd_ops_map(struct osd_pgrt *rt, uint64_t epoch)
{
	pthread_mutex_lock(&rt->lock);
	/* in the order they came, up to the first that needs a newer epoch
	 * still: those behind it wait with it */
	while (rt->opwait && rt->opwait->op.map_epoch <= epoch) {
		struct cop *op = rt->opwait;
		rt->opwait = op->next;
		op->next = NULL;
		rt->nopwait--;
		rt->opwait_bytes -= op->msg->data_len;
		int rc = route(rt, op, NULL);
		if (rc < 0) {
			pthread_mutex_unlock(&rt->lock);
			unrouted(op, rc, epoch);
			pthread_mutex_lock(&rt->lock);
		}
	}
	pthread_mutex_unlock(&rt->lock);
}

int
osd_ops_register(struct osd_pgrt *rt)
{
	/* on the I/O thread: decoding and posting never block (a refusal's
	 * answer is sent without waiting), and a hand-off through a dispatch
	 * thread cost a wake-up per operation */
	return tsr_msgr_register(rt->msgr, TSR_MSG_OSD_OP, on_op_msg, rt, TSR_MSGR_INLINE);
}

/* ---- The machine's side ---------------------------------------------------------*/

static struct cop *
cop_find(struct pgi *g, uint64_t handle, int unlink)
{
	for (struct cop **pp = &g->ops; *pp; pp = &(*pp)->next)
		if ((*pp)->handle == handle) {
			struct cop *op = *pp;
			if (unlink) {
				*pp = op->next;
				op->next = NULL;
			}
			return op;
		}
	return NULL;
}

/* The PG a name falls in under ep (the pool's pg_num). */
static int
placed_here(const struct pgi *g, const struct cop *op)
{
	const struct tsr_osdmap_pool *pool =
		tsr_osdmap_pool(tsr_osdmap_epoch_map(g->ep), g->pgid.pool);

	if (pool == NULL)
		return 0;
	if (op->op.oid_len == 0)
		return op->op.pg < pool->pg_num;
	return tsr_object_pg(op->op.oid, op->op.oid_len, pool->pg_num) == g->pgid.pg;
}

/* Does the write only remove (it may go on a full store)? */
static int
frees_only(const struct tsr_objop *op)
{
	for (uint32_t i = 0; i < op->nops; i++)
		switch (op->ops[i].type) {
		case TSR_OBJOP_REMOVE: case TSR_OBJOP_OMAP_RM: case TSR_OBJOP_OMAP_RM_RANGE:
		case TSR_OBJOP_OMAP_CLEAR: case TSR_OBJOP_RMXATTR: case TSR_OBJOP_TRUNCATE:
		case TSR_OBJOP_ASSERT_EXISTS: case TSR_OBJOP_ASSERT_VERSION:
		case TSR_OBJOP_CMPXATTR:
			break;
		default:
			return 0;
		}
	return 1;
}

static struct tsr_log_rate blocked_lines = TSR_LOG_RATE_INIT(5, 10000);

void
osd_op_start(struct pgi *g, struct cop *op)
{
	static const uint8_t pg_name[1] = { 0 }; /* PG_LIST's, for the machine */
	struct tsr_pgsm_op mo;

	if (!placed_here(g, op)) {
		/* the client placed it with another pg_num (or a pool that
		 * went): it places it again */
		osd_op_abort(op, -ESTALE, tsr_osdmap_epoch_number(g->ep));
		return;
	}
	if (op->conn && tsr_osdmap_blocked(tsr_osdmap_epoch_map(g->ep),
					   tsr_conn_peer_id(op->conn), (uint64_t)time(NULL))) {
		/* an MDS evicted this client: what it sends now would land
		 * after the writes of those its capabilities went to */
		tsr_log_rated(&blocked_lines, TSR_SUB_OSD, TSR_LOG_WARN, "pg %" PRId64 ".%x: "
			      "refused an operation of %s: blocklisted at epoch %" PRIu64
			      " or before", g->pgid.pool, g->pgid.pg, tsr_conn_peer(op->conn),
			      tsr_osdmap_epoch_number(g->ep));
		osd_op_abort(op, -EKEYREVOKED, tsr_osdmap_epoch_number(g->ep));
		return;
	}
	if (tsr_objop_is_write(&op->op) && !frees_only(&op->op)) {
		int full;
		pthread_mutex_lock(&g->rt->lock);
		full = g->rt->full;
		pthread_mutex_unlock(&g->rt->lock);
		if (full) {
			/* this store is past osd_full_ratio: what may grow it
			 * waits for room; removals go on */
			osd_op_abort(op, -ENOSPC, tsr_osdmap_epoch_number(g->ep));
			return;
		}
	}
	if (op->op.ops[0].type == TSR_OBJOP_PG_SCRUB) {
		osd_scrub_request(g, op); /* answered when the run is over */
		return;
	}
	op->handle = ++g->next_handle;
	op->next = g->ops;
	g->ops = op;
	memset(&mo, 0, sizeof(mo));
	mo.handle = op->handle;
	mo.reqid.client = op->op.client;
	mo.reqid.tid = op->op.tid;
	mo.kind = tsr_objop_is_write(&op->op) ? TSR_PGSM_OP_WRITE : TSR_PGSM_OP_READ;
	mo.oid = op->op.oid_len ? (const void *)op->op.oid : pg_name;
	mo.oid_len = op->op.oid_len ? op->op.oid_len : sizeof(pg_name);
	if (tsr_pgsm_op(g->sm, &mo) < 0) {
		cop_find(g, op->handle, 1);
		osd_op_abort(op, -ENOMEM, tsr_osdmap_epoch_number(g->ep));
	}
}

void
osd_op_reply(struct pgi *g, const struct tsr_pgsm_action *x)
{
	struct cop *op = cop_find(g, x->handle, 1);
	struct tsr_objop_reply r;

	if (op == NULL)
		return;
	memset(&r, 0, sizeof(r));
	r.result = x->result;
	r.map_epoch = g->ep ? tsr_osdmap_epoch_number(g->ep) : 0;
	r.ver_epoch = x->ev.epoch;
	r.ver = x->ev.ver;
	if (x->result == 0) {
		r.nops = op->op.nops;  /* a write's sub-operations return nothing */
	}
	send_reply(op, &r, NULL);
	cop_free(op);
}

void
osd_ops_drop(struct pgi *g)
{
	/* those parked for a newer map too */
	for (struct ev *e = g->parked; e; e = e->next)
		if (e->type == EV_OP && e->op) {
			osd_op_abort(e->op, -ESTALE, g->ep ? tsr_osdmap_epoch_number(g->ep) : 0);
			e->op = NULL;
		}
	while (g->ops) {
		struct cop *op = g->ops;
		g->ops = op->next;
		osd_op_abort(op, -ESTALE, g->ep ? tsr_osdmap_epoch_number(g->ep) : 0);
	}
}

/* ---- Objects with writes in flight ----------------------------------------------*/

static struct wr_obj *
wr_find(struct pgi *g, const void *oid, size_t len)
{
	for (size_t i = 0; i < g->nwr; i++)
		if (g->wr[i].len == len && memcmp(g->wr[i].oid, oid, len) == 0)
			return &g->wr[i];
	return NULL;
}

void
osd_op_wr_add(struct pgi *g, const void *oid, size_t len)
{
	struct wr_obj *w;

	pthread_mutex_lock(&g->wr_mu);
	if ((w = wr_find(g, oid, len)) == NULL) {
		struct wr_obj *v = realloc(g->wr, (g->nwr + 1) * sizeof(*g->wr));
		uint8_t *name = malloc(len ? len : 1);
		if (v == NULL || name == NULL) {
			/* no memory: the next write waits for nothing, and may be
			 * built on what has not committed; logged */
			free(name);
			if (v)
				g->wr = v;
			pthread_mutex_unlock(&g->wr_mu);
			tsr_log(TSR_SUB_OSD, TSR_LOG_ERROR, "pg %" PRId64 ".%x: out of memory "
				"tracking a write", g->pgid.pool, g->pgid.pg);
			return;
		}
		g->wr = v;
		w = &g->wr[g->nwr++];
		w->oid = name;
		memcpy(w->oid, oid, len);
		w->len = len;
		w->n = 0;
	}
	w->n++;
	pthread_mutex_unlock(&g->wr_mu);
}

void
osd_op_wr_done(struct pgi *g, const void *oid, size_t len)
{
	struct wr_obj *w;

	pthread_mutex_lock(&g->wr_mu);
	if ((w = wr_find(g, oid, len)) != NULL && --w->n == 0) {
		free(w->oid);
		*w = g->wr[--g->nwr];
		pthread_cond_broadcast(&g->wr_cv);
	}
	pthread_mutex_unlock(&g->wr_mu);
}

/* Has oid writes submitted here that have not committed? */
static int
wr_busy(struct pgi *g, const void *oid, size_t len)
{
	int busy;

	pthread_mutex_lock(&g->wr_mu);
	busy = wr_find(g, oid, len) != NULL;
	pthread_mutex_unlock(&g->wr_mu);
	return busy;
}

/* Wait until the writes to oid submitted here have committed: 0, or
 * -ETIMEDOUT (the store is stuck). */
static int
wr_wait(struct pgi *g, const void *oid, size_t len)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WR_WAIT_S;
	pthread_mutex_lock(&g->wr_mu);
	while (rc == 0 && wr_find(g, oid, len) != NULL)
		rc = pthread_cond_timedwait(&g->wr_cv, &g->wr_mu, &until);
	pthread_mutex_unlock(&g->wr_mu);
	return rc ? -ETIMEDOUT : 0;
}

/* ---- Running an operation against the store -------------------------------------*/

/* The object as it stands. */
struct objstate {
	int exists;
	uint64_t size;
	uint64_t mtime_ns;
	struct tsr_ev ver;
};

static int
obj_state(struct pgi *g, const void *oid, size_t len, struct objstate *s)
{
	struct tsr_obj_stat st;
	int rc;

	memset(s, 0, sizeof(*s));
	rc = g->ps.ops->stat(g->ps.inst, &g->ps.cid, oid, len, &st);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	s->exists = 1;
	s->size = st.size;
	s->mtime_ns = st.mtime_ns;
	rc = tsr_pgstore_version(&g->ps, oid, len, &s->ver);
	return rc == -ENOENT ? 0 : rc;
}

/* An attribute's or omap value, malloc'd into *val: 0, -ENODATA, or the
 * backend's error. */
static int
get_value(struct pgi *g, const void *oid, size_t len, const void *key, size_t klen,
	  int omap, uint8_t **val, size_t *vlen)
{
	size_t cap = 256;

	for (int round = 0; round < 3; round++) {
		uint8_t *b = malloc(cap);
		size_t n = 0;
		int rc;

		if (b == NULL)
			return -ENOMEM;
		rc = omap ? g->ps.ops->omap_get(g->ps.inst, &g->ps.cid, oid, len, key, klen, b,
						    cap, &n)
			      : g->ps.ops->getattr(g->ps.inst, &g->ps.cid, oid, len, key, klen, b,
						   cap, &n);
		if (rc == 0) {
			*val = b;
			*vlen = n;
			return 0;
		}
		free(b);
		if (rc != -ERANGE || n <= cap || n > TSR_OBJOP_MAX_VALUE)
			return rc == -ENOENT ? -ENODATA : rc;
		cap = n;
	}
	return -EIO;
}

static int
cmp_holds(uint64_t how, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = tsr_oid_cmp(a, alen, b, blen);

	switch (how) {
	case TSR_OBJOP_CMP_EQ: return c == 0;
	case TSR_OBJOP_CMP_NE: return c != 0;
	case TSR_OBJOP_CMP_GT: return c > 0;
	case TSR_OBJOP_CMP_GE: return c >= 0;
	case TSR_OBJOP_CMP_LT: return c < 0;
	case TSR_OBJOP_CMP_LE: return c <= 0;
	}
	return 0;
}

/* A guard: 0 when it holds, else its answer. */
static int
guard(struct pgi *g, const struct cop *op, const struct tsr_objop_sub *s,
      const struct objstate *st)
{
	uint8_t *v = NULL;
	size_t vlen = 0;
	int rc;

	switch (s->type) {
	case TSR_OBJOP_ASSERT_EXISTS:
		return st->exists ? 0 : -ENOENT;
	case TSR_OBJOP_ASSERT_VERSION:
		if (!st->exists)
			return s->off == 0 && s->len == 0 ? 0 : -ECANCELED;
		return st->ver.epoch == s->off && st->ver.ver == s->len ? 0 : -ECANCELED;
	case TSR_OBJOP_CMPXATTR:
		if (tsr_pgstore_reserved(s->name, s->name_len))
			return -EINVAL; /* the OSD's own attributes are not the client's */
		if (!st->exists)
			return -ENOENT;
		rc = get_value(g, op->op.oid, op->op.oid_len, s->name, s->name_len, 0, &v, &vlen);
		if (rc < 0 && rc != -ENODATA)
			return rc;
		rc = cmp_holds(s->off, v ? v : (const uint8_t *)"", vlen, s->in, s->in_len)
			     ? 0 : -ECANCELED;
		free(v);
		return rc;
	}
	return -EINVAL;
}

struct kvcollect {
	struct tsr_enc e;            /* the list */
	size_t mark;
	uint32_t n, max;
	const uint8_t *prefix;
	size_t prefix_len;
	const uint8_t *after;        /* only keys above it */
	size_t after_len;
	int more;
	int skip_reserved;           /* the OSD's own keys are not listed */
	int keys_only;
};

static void
kv_begin(struct kvcollect *k, uint32_t max)
{
	memset(k, 0, sizeof(*k));
	tsr_enc_init(&k->e);
	k->mark = tsr_objop_list_begin(&k->e);
	k->max = max;
}

static int
collect_kv(void *arg, const void *key, size_t key_len, const void *val, size_t val_len)
{
	struct kvcollect *k = arg;

	if (k->skip_reserved && tsr_pgstore_reserved(key, key_len))
		return 0;
	if (k->after && tsr_oid_cmp(key, key_len, k->after, k->after_len) <= 0)
		return 0;
	if (k->prefix_len && (key_len < k->prefix_len ||
			      memcmp(key, k->prefix, k->prefix_len) != 0))
		return tsr_oid_cmp(key, key_len, k->prefix, k->prefix_len) > 0; /* past it */
	if (k->n == k->max || k->e.len > TSR_OBJOP_MAX_DATA / 2) {
		k->more = 1;
		return 1;
	}
	tsr_objop_list_put(&k->e, key, key_len, k->keys_only ? NULL : val, val_len);
	k->n++;
	return tsr_enc_error(&k->e) ? 1 : 0;
}

/* End k's list into o (after u8 more, when with_more). */
static int
kv_end(struct kvcollect *k, struct out *o, int with_more)
{
	int rc;

	tsr_objop_list_end(&k->e, k->mark, k->n);
	rc = tsr_enc_error(&k->e);
	if (rc == 0) {
		uint8_t more = (uint8_t)k->more;
		if (with_more)
			out_put(o, &more, 1);
		out_put(o, k->e.buf, k->e.len);
		rc = o->err;
	}
	tsr_enc_release(&k->e);
	return rc;
}

/* Run the sub-operations of a read into r and o: the first that fails
 * ends it (its answer is the operation's). */
static void
run_read(struct pgi *g, struct cop *op, struct tsr_objop_reply *r, struct out *o)
{
	const void *oid = op->op.oid;
	size_t oid_len = op->op.oid_len;
	const struct tsr_backend_ops *b = g->ps.ops;
	struct objstate st;
	size_t off[TSR_OBJOP_MAX_OPS];
	int rc = 0;

	if (oid_len && (rc = obj_state(g, oid, oid_len, &st)) < 0) {
		r->result = rc;
		return;
	}
	if (oid_len) {
		r->ver_epoch = st.ver.epoch;
		r->ver = st.ver.ver;
	}
	for (uint32_t i = 0; i < op->op.nops && rc == 0; i++) {
		const struct tsr_objop_sub *s = &op->op.ops[i];
		off[i] = o->len;
		switch (s->type) {
		case TSR_OBJOP_READ: {
			uint64_t n = 0, want = s->len;
			uint8_t *d;
			if (!st.exists) {
				rc = -ENOENT;
				break;
			}
			if (s->off >= st.size)
				want = 0;
			else if (want > st.size - s->off)
				want = st.size - s->off;
			if ((d = out_room(o, want)) == NULL) {
				rc = o->err;
				break;
			}
			if (want && b->size >= offsetof(struct tsr_backend_ops, read_crc) +
					    sizeof(b->read_crc) &&
			    b->read_crc) {
				/* the store's block checksums make the frame's */
				uint32_t c;

				out_crc_catch_up(o);
				rc = b->read_crc(g->ps.inst, &g->ps.cid, oid, oid_len, s->off,
						 want, d, &n, &c);
				if (rc == 0) {
					o->crc = tsr_crc32c_combine(o->crc, c, n);
					o->crc_len += n;
					o->len += n;
				}
			} else if (want && (rc = b->read(g->ps.inst, &g->ps.cid, oid, oid_len,
							 s->off, want, d, &n)) == 0)
				o->len += n;
			break;
		}
		case TSR_OBJOP_STAT: {
			uint8_t v[TSR_OBJOP_STAT_LEN];
			if (!st.exists) {
				rc = -ENOENT;
				break;
			}
			tsr_objop_stat_encode(v, st.size, st.mtime_ns, st.ver.epoch, st.ver.ver);
			out_put(o, v, sizeof(v));
			rc = o->err;
			break;
		}
		case TSR_OBJOP_GETXATTR: {
			uint8_t *v = NULL;
			size_t vlen = 0;
			if (!st.exists) {
				rc = -ENOENT;
				break;
			}
			if (tsr_pgstore_reserved(s->name, s->name_len)) {
				rc = -ENODATA;
				break;
			}
			rc = get_value(g, oid, oid_len, s->name, s->name_len, 0, &v, &vlen);
			if (rc == 0)
				out_put(o, v, vlen);
			free(v);
			rc = rc ? rc : o->err;
			break;
		}
		case TSR_OBJOP_GETXATTRS:
		case TSR_OBJOP_OMAP_GET_RANGE: {
			struct kvcollect k;
			if (!st.exists) {
				rc = -ENOENT;
				break;
			}
			if (s->type == TSR_OBJOP_GETXATTRS) {
				kv_begin(&k, TSR_OBJOP_MAX_KEYS);
				k.skip_reserved = 1;
				rc = b->getattrs(g->ps.inst, &g->ps.cid, oid, oid_len, collect_kv, &k);
			} else {
				const uint8_t *start = s->name;
				size_t start_len = s->name_len;
				kv_begin(&k, (uint32_t)s->len);
				k.prefix = s->in;
				k.prefix_len = s->in_len;
				k.after = s->name_len ? s->name : NULL;
				k.after_len = s->name_len;
				if (tsr_oid_cmp(s->in, s->in_len, start, start_len) > 0) {
					start = s->in;
					start_len = s->in_len;
				}
				rc = b->omap_iter(g->ps.inst, &g->ps.cid, oid, oid_len, start, start_len,
						  collect_kv, &k);
			}
			if (rc > 0)
				rc = 0; /* stopped on purpose */
			if (rc == 0)
				rc = kv_end(&k, o, s->type == TSR_OBJOP_OMAP_GET_RANGE);
			else
				tsr_enc_release(&k.e);
			break;
		}
		case TSR_OBJOP_OMAP_GET_KEYS: {
			struct tsr_objop_list l;
			struct kvcollect k;
			const uint8_t *key, *val;
			size_t klen, vlen;
			char err[128];
			int more;
			if (!st.exists) {
				rc = -ENOENT;
				break;
			}
			kv_begin(&k, TSR_OBJOP_MAX_KEYS);
			rc = tsr_objop_list_init(&l, s->in, s->in_len, 0, err, sizeof(err));
			while (rc == 0 && (more = tsr_objop_list_next(&l, &key, &klen, &val, &vlen,
								      err, sizeof(err))) > 0) {
				uint8_t *v = NULL;
				size_t n = 0;
				int g_rc = get_value(g, oid, oid_len, key, klen, 1, &v, &n);
				if (g_rc == 0)
					collect_kv(&k, key, klen, v, n);
				else if (g_rc != -ENODATA)
					rc = g_rc;
				free(v);
			}
			if (rc == 0 && more < 0)
				rc = -EINVAL;
			if (rc == 0 && k.more)
				rc = -E2BIG; /* the values of these keys do not fit one answer */
			if (rc == 0)
				rc = kv_end(&k, o, 0);
			else
				tsr_enc_release(&k.e);
			break;
		}
		case TSR_OBJOP_PG_LIST: {
			struct tsr_pgsm_objver *objs = NULL;
			struct kvcollect k;
			size_t n = 0;
			int end = 1;
			if (tsr_pgsm_missing(g->sm)->n) {
				rc = -EAGAIN; /* the list would lack what is being recovered */
				break;
			}
			rc = tsr_pgstore_list(&g->ps, s->name, s->name_len, (uint32_t)s->len, &objs,
					      &n, &end);
			if (rc < 0)
				break;
			kv_begin(&k, (uint32_t)s->len);
			k.keys_only = 1;
			for (size_t j = 0; j < n; j++)
				collect_kv(&k, objs[j].oid, objs[j].oid_len, NULL, 0);
			k.more = k.more || !end;
			tsr_pgstore_list_free(objs, n);
			rc = kv_end(&k, o, 1);
			break;
		}
		case TSR_OBJOP_ASSERT_EXISTS:
		case TSR_OBJOP_ASSERT_VERSION:
		case TSR_OBJOP_CMPXATTR:
			rc = guard(g, op, s, &st);
			break;
		default:
			rc = -EINVAL;
		}
		r->ops[i].rc = rc;
		r->nops = i + 1;
	}
	if (rc == 0 && o->err)
		rc = o->err;
	r->result = rc;
	/* the outputs, now that the buffer stopped moving */
	for (uint32_t i = 0; i < r->nops; i++) {
		size_t end = i + 1 < r->nops ? off[i + 1] : o->len;
		r->ops[i].out = o->p ? o->p + off[i] : NULL;
		r->ops[i].out_len = end - off[i];
	}
}

/* ---- Building a write -----------------------------------------------------------*/

static struct tsr_txn_op *
top_add(struct pgi *g, struct cop *op, uint32_t type)
{
	struct tsr_txn_op *t;

	if (op->ntops == op->captops) {
		size_t cap = op->captops ? 2 * op->captops : 16;
		struct tsr_txn_op *v = realloc(op->tops, cap * sizeof(*v));
		if (v == NULL) {
			/* no memory: the build fails at its end (build_write) */
			op->nomem = 1;
			return &op->scratch;
		}
		op->tops = v;
		op->captops = cap;
	}
	t = &op->tops[op->ntops++];
	memset(t, 0, sizeof(*t));
	t->type = type;
	t->cid = g->ps.cid;
	t->oid = op->op.oid;
	t->oid_len = op->op.oid_len;
	return t;
}

/* The backend ops of a write, on the object as it stands (st): 0, or the
 * answer (a guard that does not hold, a removal of nothing, a name of the
 * OSD's own).  *exists_after: whether the object is there after it. */
static int
build_write(struct pgi *g, struct cop *op, const struct objstate *st, int *exists_after,
	    uint64_t *size_after)
{
	int exists = st->exists;
	uint64_t size = st->size;
	int rc;

	for (uint32_t i = 0; i < op->op.nops; i++) {
		const struct tsr_objop_sub *s = &op->op.ops[i];
		struct tsr_txn_op *t;

		if (!tsr_objop_writes(s->type)) {
			if ((rc = guard(g, op, s, st)) < 0)
				return rc;
			continue;
		}
		if (s->type == TSR_OBJOP_REMOVE) {
			if (!exists)
				return -ENOENT;
			top_add(g, op, TSR_TXN_REMOVE);
			exists = 0;
			size = 0;
			continue;
		}
		if (s->type == TSR_OBJOP_CREATE && exists && (s->flags & TSR_OBJOP_EXCL))
			return -EEXIST;
		if (!exists) {
			top_add(g, op, TSR_TXN_TOUCH);
			exists = 1;
			size = 0;
		}
		switch (s->type) {
		case TSR_OBJOP_CREATE:
			break;
		case TSR_OBJOP_WRITE_FULL:
			t = top_add(g, op, TSR_TXN_TRUNCATE);
			t->off = 0;
			size = 0;
			/* fall through */
		case TSR_OBJOP_WRITE:
		case TSR_OBJOP_APPEND: {
			uint64_t at = s->type == TSR_OBJOP_APPEND ? size
				      : s->type == TSR_OBJOP_WRITE ? s->off : 0;
			if (s->in_len == 0)
				break;
			if (at > UINT64_MAX - s->in_len)
				return -EFBIG;
			t = top_add(g, op, TSR_TXN_WRITE);
			t->off = at;
			t->len = s->in_len;
			t->data = s->in;
			if (at + s->in_len > size)
				size = at + s->in_len;
			break;
		}
		case TSR_OBJOP_TRUNCATE:
			t = top_add(g, op, TSR_TXN_TRUNCATE);
			t->off = s->off;
			size = s->off;
			break;
		case TSR_OBJOP_ZERO: {
			/* within the object: zeroing never makes it longer */
			uint64_t end;
			if (s->off >= size || s->len == 0)
				break;
			end = s->len > size - s->off ? size : s->off + s->len;
			t = top_add(g, op, TSR_TXN_ZERO);
			t->off = s->off;
			t->len = end - s->off;
			break;
		}
		case TSR_OBJOP_SETXATTR:
		case TSR_OBJOP_RMXATTR:
			if (tsr_pgstore_reserved(s->name, s->name_len))
				return -EINVAL;
			if (s->type == TSR_OBJOP_RMXATTR) {
				uint8_t *v = NULL;
				size_t vlen;
				rc = st->exists ? get_value(g, op->op.oid, op->op.oid_len, s->name,
							    s->name_len, 0, &v, &vlen)
						: -ENODATA;
				free(v);
				if (rc < 0)
					return rc;
			}
			t = top_add(g, op, s->type == TSR_OBJOP_SETXATTR ? TSR_TXN_SETATTR
									 : TSR_TXN_RMATTR);
			t->key = s->name;
			t->key_len = s->name_len;
			if (s->type == TSR_OBJOP_SETXATTR) {
				t->val = s->in;
				t->val_len = s->in_len;
			}
			break;
		case TSR_OBJOP_OMAP_SET:
		case TSR_OBJOP_OMAP_RM: {
			struct tsr_objop_list l;
			const uint8_t *key, *val;
			size_t klen, vlen;
			char err[128];
			int kv = s->type == TSR_OBJOP_OMAP_SET, more;
			if (tsr_objop_list_init(&l, s->in, s->in_len, kv, err, sizeof(err)) < 0)
				return -EINVAL;
			while ((more = tsr_objop_list_next(&l, &key, &klen, &val, &vlen, err,
							   sizeof(err))) > 0) {
				t = top_add(g, op, kv ? TSR_TXN_OMAP_SET : TSR_TXN_OMAP_RM);
				t->key = key;
				t->key_len = klen;
				if (kv) {
					t->val = val;
					t->val_len = vlen;
				}
			}
			if (more < 0)
				return -EINVAL;
			break;
		}
		case TSR_OBJOP_OMAP_RM_RANGE:
			t = top_add(g, op, TSR_TXN_OMAP_RMRANGE);
			t->key = s->name;
			t->key_len = s->name_len;
			t->val = s->in;
			t->val_len = s->in_len;
			break;
		case TSR_OBJOP_OMAP_CLEAR:
			top_add(g, op, TSR_TXN_OMAP_CLEAR);
			break;
		default:
			return -EINVAL;
		}
	}
	*exists_after = exists;
	*size_after = size;
	return op->nomem ? -ENOMEM : 0;
}

/* Encode op's ops for the replicas (once): 0, or -E2BIG past what a
 * message may carry, -EINVAL (a transaction the backends would refuse). */
static int
encode_repop(struct pgi *g, struct cop *op)
{
	struct tsr_txn t = { (uint32_t)op->ntops, op->tops };
	struct tsr_enc e;
	char err[200];
	uint8_t *p;
	size_t len;
	int rc;

	if (op->repop)
		return 0;
	tsr_enc_init(&e);
	if ((rc = tsr_txn_encode(&t, &e, err, sizeof(err))) < 0 ||
	    (p = tsr_enc_take(&e, &len)) == NULL) {
		tsr_enc_release(&e);
		tsr_log_rated(&op_refusals, TSR_SUB_OSD, TSR_LOG_WARN, "pg %" PRId64 ".%x: a "
			      "write whose transaction would be refused: %s", g->pgid.pool,
			      g->pgid.pg, rc < 0 ? err : "no memory");
		return rc < 0 ? -EINVAL : -ENOMEM;
	}
	if (len > g->rt->max_data) {
		free(p);
		return -E2BIG;
	}
	if ((op->repop = tsr_rbuf_new(p, len)) == NULL)
		return -ENOMEM;
	return 0;
}

/* Can the write op built be stored and replicated?  Refused here it is
 * answered (-E2BIG, -EFBIG) and changes nothing; past here a store or a
 * replica that refused it would hold the PG's writes behind it. */
static int
check_write(struct pgi *g, struct cop *op, uint64_t size)
{
	/* (room for the PG's own ops in the same transaction: pgstore.c) */
	if (op->ntops > TSR_TXN_MAX_OPS - 64)
		return -E2BIG;
	if (g->rt->st->max_object && size > g->rt->st->max_object)
		return -EFBIG;
	return encode_repop(g, op);
}

void
osd_op_exec(struct pgi *g, const struct tsr_pgsm_action *x)
{
	struct cop *op = cop_find(g, x->handle, 0);
	struct objstate st;
	uint64_t size = 0;
	int exists = 0, rc;

	memset(&st, 0, sizeof(st));
	if (op == NULL) {
		/* (never: the machine names only what it holds) */
		tsr_pgsm_exec_done(g->sm, x->handle, st.ver, TSR_PGLOG_MODIFY, -EIO);
		return;
	}
	if (!tsr_objop_is_write(&op->op)) {
		struct tsr_objop_reply r;
		struct out o = { .max = g->rt->max_data };
		cop_find(g, x->handle, 1);
		memset(&r, 0, sizeof(r));
		r.map_epoch = tsr_osdmap_epoch_number(g->ep);
		run_read(g, op, &r, &o);
		send_reply(op, &r, &o);
		cop_free(op);
		return;
	}
	op->ev = x->ev;
	rc = wr_wait(g, op->op.oid, op->op.oid_len);
	if (rc == 0)
		rc = obj_state(g, op->op.oid, op->op.oid_len, &st);
	if (rc == 0)
		rc = build_write(g, op, &st, &exists, &size);
	/* (a write that changes nothing, such as a zero-length write to an
	 * object that exists, is still logged and answered once every
	 * member has the entry: no ops, the same on every member.  On an
	 * absent object every write makes it first, or is refused, in
	 * build_write; a request of guards alone is a read.) */
	if (rc == 0)
		rc = check_write(g, op, size);
	op->logop = exists ? TSR_PGLOG_MODIFY : TSR_PGLOG_DELETE;
	if (rc < 0 && rc != -ENOENT && rc != -EEXIST && rc != -ECANCELED && rc != -ENODATA &&
	    rc != -EINVAL && rc != -E2BIG && rc != -EFBIG)
		tsr_log(TSR_SUB_OSD, TSR_LOG_ERROR, "pg %" PRId64 ".%x: a write could not be "
			"built from the store: %s", g->pgid.pool, g->pgid.pg, strerror(-rc));
	if (tsr_pgsm_exec_done(g->sm, x->handle, st.ver, op->logop, rc) < 0)
		tsr_log(TSR_SUB_OSD, TSR_LOG_ERROR, "pg %" PRId64 ".%x: the machine refused "
			"a write built here", g->pgid.pool, g->pgid.pg);
}

int
osd_op_persist(struct pgi *g, const struct tsr_pgsm_action *x, const struct tsr_txn_op **ops,
	       size_t *nops, const void **oid, size_t *oid_len, const struct tsr_ev **ev)
{
	struct cop *op = cop_find(g, x->handle, 0);

	if (op == NULL)
		return -ENOENT;
	*ops = op->tops;
	*nops = op->ntops;
	*oid = op->op.oid;
	*oid_len = op->op.oid_len;
	*ev = op->logop == TSR_PGLOG_MODIFY ? &op->ev : NULL;
	return 0;
}

struct tsr_rbuf *
osd_op_repop_payload(struct pgi *g, uint64_t handle)
{
	struct cop *op = cop_find(g, handle, 0);

	if (op == NULL || encode_repop(g, op) < 0)
		return NULL;
	return tsr_rbuf_get(op->repop);
}

int
osd_op_repop_ops(struct pgi *g, const struct tsr_pgmsg *m, const struct tsr_msg *raw,
		 struct tsr_txn_op **ops, size_t *nops)
{
	const struct tsr_pglog_entry *x = &m->log.e[0];
	struct tsr_txn t;
	struct tsr_dec d;
	char err[200] = "";
	int rc;

	*ops = NULL;
	*nops = 0;
	if (m->log.n != 1 || raw == NULL || raw->data_len == 0) {
		snprintf(err, sizeof(err), "no transaction with it");
		rc = -EBADMSG;
		goto refuse;
	}
	tsr_dec_init(&d, raw->data_iov[0].iov_base, raw->data_len);
	if ((rc = tsr_txn_decode(&d, &t, err, sizeof(err))) < 0)
		goto refuse;
	if (tsr_dec_remaining(&d)) {
		tsr_txn_decoded_free(&t);
		snprintf(err, sizeof(err), "bytes after its transaction");
		rc = -EBADMSG;
		goto refuse;
	}
	for (uint32_t i = 0; i < t.nops; i++) {
		const struct tsr_txn_op *o = &t.ops[i];
		int ok = o->cid.pool == g->ps.cid.pool && o->cid.pg == g->ps.cid.pg &&
			 o->cid.shard == g->ps.cid.shard && o->oid_len == x->oid_len &&
			 memcmp(o->oid, x->oid, x->oid_len) == 0;
		switch (o->type) {
		case TSR_TXN_TOUCH: case TSR_TXN_WRITE: case TSR_TXN_ZERO:
		case TSR_TXN_TRUNCATE: case TSR_TXN_REMOVE: case TSR_TXN_OMAP_SET:
		case TSR_TXN_OMAP_RM: case TSR_TXN_OMAP_CLEAR: case TSR_TXN_OMAP_RMRANGE:
			break;
		case TSR_TXN_SETATTR: case TSR_TXN_RMATTR:
			ok = ok && !tsr_pgstore_reserved(o->key, o->key_len);
			break;
		default:
			ok = 0;
		}
		if (!ok) {
			snprintf(err, sizeof(err), "op %u (%s) reaches beyond its object", i,
				 tsr_txn_op_name(o->type) ? tsr_txn_op_name(o->type) : "?");
			tsr_txn_decoded_free(&t);
			rc = -EBADMSG;
			goto refuse;
		}
	}
	if ((*ops = calloc(t.nops ? t.nops : 1, sizeof(**ops))) == NULL) {
		tsr_txn_decoded_free(&t);
		return -ENOMEM;
	}
	if (t.nops)
		memcpy(*ops, t.ops, t.nops * sizeof(**ops));
	*nops = t.nops;
	tsr_txn_decoded_free(&t);
	return 0;
refuse:
	tsr_log_rated(&op_refusals, TSR_SUB_OSD, TSR_LOG_WARN, "pg %" PRId64 ".%x: a write "
		      "from osd.%d refused: %s", g->pgid.pool, g->pgid.pg, m->from, err);
	return rc;
}

/* ---- Stopping -------------------------------------------------------------------*/

struct barrier {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t left;
	struct osd_pgrt *rt;
};

struct shard_stop {
	struct barrier *b;
	struct tsr_workq *q;
};

static void
drop_conn(struct cop *op)
{
	if (op && op->conn) {
		tsr_conn_put(op->conn);
		op->conn = NULL;
	}
}

/* (each shard, after what was posted to it before) the sessions its
 * copies' operations hold go back: only the shard touches them */
static void
shard_quiesce(void *arg)
{
	struct shard_stop *ss = arg;
	struct barrier *b = ss->b;
	struct osd_pgrt *rt = b->rt;

	pthread_mutex_lock(&rt->lock);
	for (struct pgi *g = rt->pgs; g; g = g->next) {
		if (g->q != ss->q)
			continue;
		for (struct cop *op = g->ops; op; op = op->next)
			drop_conn(op);
		/* and the scrubs' (scrub.c: answered, or not, when they end) */
		for (struct cop *op = g->scrub.waiters; op; op = op->next)
			drop_conn(op);
		for (struct cop *op = g->scrub.next_waiters; op; op = op->next)
			drop_conn(op);
		for (struct ev *e = g->parked; e; e = e->next)
			if (e->type == EV_OP)
				drop_conn(e->op);
	}
	pthread_mutex_unlock(&rt->lock);
	pthread_mutex_lock(&b->mu);
	b->left--;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

void
osd_ops_quiesce(struct osd_pgrt *rt)
{
	struct barrier *b = tsr_xcalloc(1, sizeof(*b));
	struct shard_stop *ss = tsr_xcalloc(rt->nshards, sizeof(*ss));
	struct cop *wait;
	struct timespec until;
	size_t left;

	/* no operation is taken from here on, and those waiting for a map
	 * go unanswered (the client resends to whoever serves next) */
	pthread_mutex_lock(&rt->lock);
	rt->ops_closed = 1;
	wait = rt->opwait;
	rt->opwait = NULL;
	rt->nopwait = 0;
	rt->opwait_bytes = 0;
	pthread_mutex_unlock(&rt->lock);
	while (wait) {
		struct cop *op = wait;
		wait = op->next;
		cop_free(op);
	}
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	b->rt = rt;
	b->left = rt->nshards;
	for (size_t i = 0; i < rt->nshards; i++) {
		ss[i].b = b;
		ss[i].q = rt->q[i];
		if (tsr_workq_post(rt->q[i], shard_quiesce, &ss[i]) < 0) {
			pthread_mutex_lock(&b->mu);
			b->left--;
			pthread_mutex_unlock(&b->mu);
		}
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	pthread_mutex_lock(&b->mu);
	while (b->left && pthread_cond_timedwait(&b->cv, &b->mu, &until) == 0)
		;
	left = b->left;
	pthread_mutex_unlock(&b->mu);
	if (left) {
		/* a worker stuck in the store: what it would touch stays (the
		 * barrier is leaked rather than freed under it) */
		tsr_log(TSR_SUB_OSD, TSR_LOG_ERROR, "osd.%d: %zu PG workers did not let go "
			"of their clients' sessions within 60 s", rt->whoami, left);
		return;
	}
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
	free(b);
	free(ss);
}
