/* test_pgstore.c — a PG's copy in a real object store (core/osd/pgstore.c),
 * on each backend plugin: the PG machine on one OSD peers alone,
 * activates and takes writes, each PERSIST one backend transaction; a new
 * machine loads what they stored and holds the same history; the objects
 * carry their versions; listings come in name order, resumed window by
 * window; removals of objects that are not there are no error; a copy is
 * deleted step by step.  The plugins come from BACKEND_FILE_PLUGIN and
 * BACKEND_BLOCKDEV_PLUGIN (the suite's environment sets them).
 */
#include "config/options.h"
#include "osd/pgpush.h"
#include "osd/pgstore.h"
#include "plugin/host.h"
#include "plugin/registry.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


static struct tsr_core_host core_host;
static struct tsr_registry *registry;
static char root[] = "/tmp/tsr-test-pgstore.XXXXXX";

/* ---- A store --------------------------------------------------------------*/

#include "store_rig.h"

/* Submit and wait until it is durable: its result. */
static int
commit(struct rig *r, const struct tsr_txn *t)
{
	return rig_commit(r, t);
}

/* ---- The machine on one OSD -------------------------------------------------*/

struct op {
	uint64_t handle;
	char oid[32];
	char data[64];
	int read;
	struct tsr_ev ev;
	int replied;
	int32_t result;
};

struct drv {
	struct rig *r;
	struct tsr_pgstore ps;
	struct tsr_pgsm *sm;
	uint64_t up_thru_want;
	struct op ops[16];
	size_t nops;
	size_t persists;
};

static const struct tsr_coll_id cid = { 1, 0, TSR_SHARD_NONE };

static struct op *
op_find(struct drv *d, uint64_t handle)
{
	for (size_t i = 0; i < d->nops; i++)
		if (d->ops[i].handle == handle)
			return &d->ops[i];
	ck_abort_msg("no op %llu", (unsigned long long)handle);
	return NULL;
}

static void
persist(struct drv *d, const struct tsr_pgsm_action *x)
{
	struct tsr_pgstore_txn t;
	struct tsr_txn_op w[2];
	const struct op *op = NULL;

	/* a write of the whole object: truncated, then written */
	memset(w, 0, sizeof(w));
	if (x->obj == TSR_PGSM_OBJ_OP) {
		op = op_find(d, x->handle);
		for (int i = 0; i < 2; i++) {
			w[i].type = i ? TSR_TXN_WRITE : TSR_TXN_TRUNCATE;
			w[i].cid = cid;
			w[i].oid = op->oid;
			w[i].oid_len = strlen(op->oid);
		}
		w[1].data = op->data;
		w[1].len = strlen(op->data);
	}
	ck_assert_int_ne(x->obj, TSR_PGSM_OBJ_PAYLOAD);
	ck_assert_int_eq(tsr_pgstore_persist(&d->ps, x, op ? w : NULL, op ? 2 : 0,
					     op ? op->oid : NULL, op ? strlen(op->oid) : 0,
					     op ? &op->ev : NULL, &t), 0);
	ck_assert_int_eq(commit(d->r, &t.txn), 0);
	tsr_pgstore_txn_free(&t);
	d->persists++;
	ck_assert_int_eq(tsr_pgsm_committed(d->sm, x->token), 0);
}

/* Carry out the machine's actions until it has none. */
static void
run(struct drv *d)
{
	for (int round = 0; round < 1000; round++) {
		size_t n;
		struct tsr_pgsm_action *a = tsr_pgsm_actions(d->sm, &n), *acts;

		if (n == 0)
			return;
		acts = malloc(n * sizeof(*acts));
		memcpy(acts, a, n * sizeof(*acts));
		memset(a, 0, n * sizeof(*a));
		tsr_pgsm_actions_clear(d->sm);
		for (size_t i = 0; i < n; i++) {
			struct tsr_pgsm_action *x = &acts[i];
			struct op *op;
			switch (x->type) {
			case TSR_PGSM_A_PERSIST:
				persist(d, x);
				break;
			case TSR_PGSM_A_EXEC: {
				struct tsr_ev prior = { 0, 0 };
				op = op_find(d, x->handle);
				op->ev = x->ev;
				if (op->read) {
					char buf[64];
					uint64_t got = 0;
					int rc = d->r->ops->read(d->r->h, &cid, op->oid,
								 strlen(op->oid), 0, sizeof(buf),
								 buf, &got);
					op->replied = 1;
					op->result = rc;
					if (rc == 0)
						snprintf(op->data, sizeof(op->data), "%.*s",
							 (int)got, buf);
					break;
				}
				int rc = tsr_pgstore_version(&d->ps, op->oid, strlen(op->oid), &prior);
				ck_assert(rc == 0 || rc == -ENOENT);
				ck_assert_int_eq(tsr_pgsm_exec_done(d->sm, x->handle, prior,
								    TSR_PGLOG_MODIFY, 0), 0);
				break;
			}
			case TSR_PGSM_A_REPLY:
				op = op_find(d, x->handle);
				op->replied = 1;
				op->result = x->result;
				break;
			case TSR_PGSM_A_UP_THRU:
				d->up_thru_want = x->epoch;
				break;
			case TSR_PGSM_A_SEND:
				ck_abort_msg("a PG of one OSD sent %s to osd.%d",
					     tsr_pgmsg_name(x->msg.type), x->to);
				break;
			default:
				ck_abort_msg("unexpected action %d", x->type);
			}
		}
		for (size_t i = 0; i < n; i++)
			tsr_pgsm_action_free(&acts[i]);
		free(acts);
	}
	ck_abort_msg("the machine's actions did not settle");
}

static uint64_t
no_up_from(const void *arg, int32_t osd)
{
	(void)arg;
	return osd == 0 ? 1 : 0;
}

/* Epoch e: osd.0 alone, up from up_from, up_thru as the driver has it. */
static void
feed(struct drv *d, uint64_t e, uint64_t up_from, uint64_t up_thru)
{
	struct tsr_pg_mapview mv;

	memset(&mv, 0, sizeof(mv));
	mv.epoch = e;
	mv.nup = mv.nacting = 1;
	mv.up[0] = mv.acting[0] = 0;
	mv.size = mv.min_size = 1;
	mv.primary_up_thru = up_thru;
	mv.acting_up_from[0] = up_from;
	mv.osd_up_from = no_up_from;
	ck_assert_int_eq(tsr_pgsm_advance_map(d->sm, &mv), 0);
	run(d);
}

static void
machine(struct drv *d)
{
	struct tsr_pgsm_conf conf = { .pgid = { 1, 0 }, .whoami = 0, .created = 1,
				      .log_max = 100, .recovery_max = 4, .queue_max = 64,
				      .backfill_window = 64 };

	ck_assert_int_eq(tsr_pgsm_create(&conf, &d->sm), 0);
}

static struct op *
submit_op(struct drv *d, const char *oid, const char *data, int read)
{
	struct op *op = &d->ops[d->nops++];
	struct tsr_pgsm_op o;

	memset(op, 0, sizeof(*op));
	op->handle = 100 + d->nops;
	snprintf(op->oid, sizeof(op->oid), "%s", oid);
	snprintf(op->data, sizeof(op->data), "%s", data ? data : "");
	op->read = read;
	memset(&o, 0, sizeof(o));
	o.handle = op->handle;
	o.reqid = (struct tsr_reqid){ 7, op->handle };
	o.kind = read ? TSR_PGSM_OP_READ : TSR_PGSM_OP_WRITE;
	o.oid = op->oid;
	o.oid_len = strlen(op->oid);
	ck_assert_int_eq(tsr_pgsm_op(d->sm, &o), 0);
	run(d);
	return op;
}

START_TEST(copy_in_a_store)
{
	struct rig r;
	struct drv d;
	char err[512];

	memset(&d, 0, sizeof(d));
	rig_open(&r, _i);
	d.r = &r;
	ck_assert_int_eq(tsr_pgstore_open(&d.ps, r.ops, r.h, cid), 0);
	ck_assert_int_eq(d.ps.exists, 0);
	machine(&d);
	ck_assert_int_eq(tsr_pgstore_load(&d.ps, d.sm, err, sizeof(err)), -ENOENT);

	/* alone: peers, asks for up_thru, activates */
	feed(&d, 1, 1, 0);
	ck_assert_uint_eq(d.up_thru_want, 1);
	feed(&d, 2, 1, 1);
	ck_assert_msg(tsr_pgsm_state(d.sm) == TSR_PGSM_ACTIVE, "state %s: %s",
		      tsr_pgsm_state_name(tsr_pgsm_state(d.sm)), tsr_pgsm_why(d.sm));
	ck_assert(d.ps.exists);

	/* writes, one object written twice */
	static const char *const names[] = { "o3", "o1", "o5", "o2", "o4" };
	for (size_t i = 0; i < 5; i++) {
		char data[32];
		snprintf(data, sizeof(data), "data of %s", names[i]);
		struct op *op = submit_op(&d, names[i], data, 0);
		ck_assert_msg(op->replied && op->result == 0, "write %s: %d", names[i],
			      op->result);
	}
	struct op *again = submit_op(&d, "o1", "o1 again", 0);
	ck_assert(again->replied && again->result == 0);
	const struct tsr_pg_info *info = tsr_pgsm_info(d.sm);
	ck_assert_int_eq(tsr_ev_cmp(info->last_update, again->ev), 0);

	/* each object holds its data and its version */
	for (size_t i = 0; i < d.nops; i++) {
		struct tsr_ev ev;
		char buf[64];
		uint64_t got = 0;
		if (strcmp(d.ops[i].oid, "o1") == 0 && &d.ops[i] != again)
			continue;
		ck_assert_int_eq(tsr_pgstore_version(&d.ps, d.ops[i].oid, strlen(d.ops[i].oid),
						     &ev), 0);
		ck_assert_int_eq(tsr_ev_cmp(ev, d.ops[i].ev), 0);
		ck_assert_int_eq(r.ops->read(r.h, &cid, d.ops[i].oid, strlen(d.ops[i].oid), 0,
					     sizeof(buf), buf, &got), 0);
		ck_assert_uint_eq(got, strlen(d.ops[i].data));
		ck_assert_int_eq(memcmp(buf, d.ops[i].data, got), 0);
	}
	struct tsr_ev none;
	ck_assert_int_eq(tsr_pgstore_version(&d.ps, "o9", 2, &none), -ENOENT);

	/* listings: in name order, the meta object left out; in windows of
	 * two, resumed, the same */
	struct tsr_pgsm_objver *all, *w;
	size_t n, nw;
	int end;
	ck_assert_int_eq(tsr_pgstore_list(&d.ps, NULL, 0, 100, &all, &n, &end), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert(end);
	for (size_t i = 0; i < n; i++) {
		char want[24];
		snprintf(want, sizeof(want), "o%zu", i + 1);
		ck_assert_uint_eq(all[i].oid_len, 2);
		ck_assert_int_eq(memcmp(all[i].oid, want, 2), 0);
	}
	ck_assert_int_eq(tsr_ev_cmp(all[0].ev, again->ev), 0);
	size_t at = 0;
	const void *after = NULL;
	size_t after_len = 0;
	uint8_t last[8];
	for (int k = 0; k < 10; k++) {
		ck_assert_int_eq(tsr_pgstore_list(&d.ps, after, after_len, 2, &w, &nw, &end), 0);
		for (size_t i = 0; i < nw; i++, at++) {
			ck_assert_uint_lt(at, n);
			ck_assert_int_eq(memcmp(w[i].oid, all[at].oid, 2), 0);
			ck_assert_int_eq(tsr_ev_cmp(w[i].ev, all[at].ev), 0);
		}
		if (nw) {
			memcpy(last, w[nw - 1].oid, 2);
			after = last;
			after_len = 2;
		}
		tsr_pgstore_list_free(w, nw);
		if (end)
			break;
	}
	ck_assert_uint_eq(at, n);
	/* a listing after a name that is not where the last one ended walks
	 * from the first */
	ck_assert_int_eq(tsr_pgstore_list(&d.ps, "o3", 2, 100, &w, &nw, &end), 0);
	ck_assert_uint_eq(nw, 2);
	ck_assert_int_eq(memcmp(w[0].oid, "o4", 2), 0);
	tsr_pgstore_list_free(w, nw);
	tsr_pgstore_list_free(all, n);

	/* a new machine loads the same history */
	struct tsr_ev head = info->last_update;
	size_t nlog = tsr_pgsm_log(d.sm)->n;
	tsr_pgsm_destroy(d.sm);
	tsr_pgstore_close(&d.ps);
	ck_assert_int_eq(tsr_pgstore_open(&d.ps, r.ops, r.h, cid), 0);
	ck_assert(d.ps.exists);
	machine(&d);
	ck_assert_msg(tsr_pgstore_load(&d.ps, d.sm, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(tsr_ev_cmp(tsr_pgsm_info(d.sm)->last_update, head), 0);
	ck_assert_uint_eq(tsr_pgsm_log(d.sm)->n, nlog);
	ck_assert_uint_eq(tsr_pgsm_log(d.sm)->n, 6);
	/* restarted in place (up from epoch 3): a new interval, active again,
	 * and a read sees the last write */
	d.up_thru_want = 0;
	ck_assert_uint_eq(tsr_pgsm_info(d.sm)->same_interval_since, 1);
	feed(&d, 1, 1, 0);
	feed(&d, 2, 1, 1);
	feed(&d, 3, 3, 1);
	ck_assert_uint_eq(d.up_thru_want, 3);
	feed(&d, 4, 3, 3);
	ck_assert_msg(tsr_pgsm_state(d.sm) == TSR_PGSM_ACTIVE, "state %s: %s",
		      tsr_pgsm_state_name(tsr_pgsm_state(d.sm)), tsr_pgsm_why(d.sm));
	struct op *rd = submit_op(&d, "o1", NULL, 1);
	ck_assert(rd->replied && rd->result == 0);
	ck_assert_str_eq(rd->data, "o1 again");

	/* removals first in a PERSIST: one there, one not — no error */
	{
		struct tsr_pgsm_name rm[2] = { { (uint8_t *)"o2", 2 }, { (uint8_t *)"o9", 2 } };
		struct tsr_pgsm_action a;
		struct tsr_pgstore_txn t;
		struct tsr_obj_stat st;
		memset(&a, 0, sizeof(a));
		a.type = TSR_PGSM_A_PERSIST;
		a.rm = rm;
		a.nrm = 2;
		ck_assert_int_eq(tsr_pgstore_persist(&d.ps, &a, NULL, 0, NULL, 0, NULL, &t), 0);
		ck_assert_int_eq(commit(&r, &t.txn), 0);
		tsr_pgstore_txn_free(&t);
		ck_assert_int_eq(r.ops->stat(r.h, &cid, "o2", 2, &st), -ENOENT);
		ck_assert_int_eq(r.ops->stat(r.h, &cid, "o9", 2, &st), -ENOENT);
		a.type = TSR_PGSM_A_LIST;
		ck_assert_int_eq(tsr_pgstore_persist(&d.ps, &a, NULL, 0, NULL, 0, NULL, &t),
				 -EINVAL);
	}

	/* deleted two objects at a time, then the collection */
	int lastp = 0, steps = 0;
	while (!lastp && steps < 10) {
		struct tsr_pgstore_txn t;
		ck_assert_int_eq(tsr_pgstore_delete_step(&d.ps, 2, &t, &lastp), 0);
		ck_assert_int_eq(commit(&r, &t.txn), 0);
		tsr_pgstore_txn_free(&t);
		steps++;
	}
	ck_assert(lastp);
	ck_assert_int_eq(steps, 2);
	struct tsr_obj_stat st;
	ck_assert_int_eq(r.ops->stat(r.h, &cid, TSR_PGSTORE_META, TSR_PGSTORE_META_LEN, &st),
			 -ENOENT);
	tsr_pgstore_close(&d.ps);
	ck_assert_int_eq(tsr_pgstore_open(&d.ps, r.ops, r.h, cid), 0);
	ck_assert_int_eq(d.ps.exists, 0);
	tsr_pgstore_close(&d.ps);
	tsr_pgsm_destroy(d.sm);
	rig_close(&r);
}
END_TEST

/* A damaged version attribute: the object is listed at 0'0 (a backfill
 * replaces it) and its version read is an I/O error. */
START_TEST(damaged_version)
{
	struct rig r;
	struct tsr_pgstore ps;
	struct tsr_txn_op ops[3];
	struct tsr_txn t = { 3, ops };
	struct tsr_pgsm_objver *objs;
	struct tsr_ev ev;
	size_t n;
	int end;

	rig_open(&r, _i);
	memset(ops, 0, sizeof(ops));
	ops[0].type = TSR_TXN_MKCOLL;
	ops[0].cid = cid;
	ops[1].type = TSR_TXN_TOUCH;
	ops[1].cid = cid;
	ops[1].oid = TSR_PGSTORE_META;
	ops[1].oid_len = TSR_PGSTORE_META_LEN;
	ops[2].type = TSR_TXN_SETATTR;
	ops[2].cid = cid;
	ops[2].oid = "x";
	ops[2].oid_len = 1;
	ops[2].key = TSR_PGSTORE_VER;
	ops[2].key_len = TSR_PGSTORE_VER_LEN;
	ops[2].val = "short";
	ops[2].val_len = 5;
	ck_assert_int_eq(commit(&r, &t), 0);
	ck_assert_int_eq(tsr_pgstore_open(&ps, r.ops, r.h, cid), 0);
	ck_assert_int_eq(tsr_pgstore_version(&ps, "x", 1, &ev), -EIO);
	ck_assert_int_eq(tsr_pgstore_list(&ps, NULL, 0, 10, &objs, &n, &end), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert(tsr_ev_none(objs[0].ev));
	tsr_pgstore_list_free(objs, n);
	tsr_pgstore_close(&ps);
	rig_close(&r);
}
END_TEST

/* A push: an object's data, attributes and omap read from one copy,
 * encoded, decoded and written into another copy over a stale object of
 * the same name, which then holds exactly the same (and the version the
 * push names); the OSD's own attribute does not travel.  Every cut of the
 * encoding, a reserved key and keys out of order are refused. */
START_TEST(push_between_copies)
{
	static const struct tsr_coll_id cid2 = { 1, 7, TSR_SHARD_NONE };
	struct rig r;
	struct tsr_pgstore a, b;
	struct tsr_pgpush p, q;
	struct tsr_txn_op ops[10];
	struct tsr_txn t = { 0, ops };
	struct tsr_enc e;
	char err[256];
	uint8_t big[5000];

	rig_open(&r, _i);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	memset(ops, 0, sizeof(ops));
	ops[0] = (struct tsr_txn_op){ .type = TSR_TXN_MKCOLL, .cid = cid };
	ops[1] = (struct tsr_txn_op){ .type = TSR_TXN_MKCOLL, .cid = cid2 };
	ops[2] = (struct tsr_txn_op){ .type = TSR_TXN_WRITE, .cid = cid, .oid = "obj",
				      .oid_len = 3, .data = big, .len = sizeof(big) };
	ops[3] = (struct tsr_txn_op){ .type = TSR_TXN_SETATTR, .cid = cid, .oid = "obj",
				      .oid_len = 3, .key = "b", .key_len = 1, .val = "2",
				      .val_len = 1 };
	ops[4] = (struct tsr_txn_op){ .type = TSR_TXN_SETATTR, .cid = cid, .oid = "obj",
				      .oid_len = 3, .key = "a", .key_len = 1, .val = "one",
				      .val_len = 3 };
	ops[5] = (struct tsr_txn_op){ .type = TSR_TXN_SETATTR, .cid = cid, .oid = "obj",
				      .oid_len = 3, .key = TSR_PGSTORE_VER,
				      .key_len = TSR_PGSTORE_VER_LEN, .val = "0123456789abcdef",
				      .val_len = 16 };
	ops[6] = (struct tsr_txn_op){ .type = TSR_TXN_OMAP_SET, .cid = cid, .oid = "obj",
				      .oid_len = 3, .key = "k1", .key_len = 2, .val = "v1",
				      .val_len = 2 };
	/* the stale copy: other data and an attribute the source lacks */
	ops[7] = (struct tsr_txn_op){ .type = TSR_TXN_WRITE, .cid = cid2, .oid = "obj",
				      .oid_len = 3, .data = "stale stale", .len = 11 };
	ops[8] = (struct tsr_txn_op){ .type = TSR_TXN_SETATTR, .cid = cid2, .oid = "obj",
				      .oid_len = 3, .key = "z", .key_len = 1, .val = "old",
				      .val_len = 3 };
	/* the other copy exists (its meta object with it) */
	ops[9] = (struct tsr_txn_op){ .type = TSR_TXN_TOUCH, .cid = cid2,
				      .oid = TSR_PGSTORE_META, .oid_len = TSR_PGSTORE_META_LEN };
	t.nops = 10;
	ck_assert_int_eq(commit(&r, &t), 0);
	ck_assert_int_eq(tsr_pgstore_open(&a, r.ops, r.h, cid), 0);
	ck_assert_int_eq(tsr_pgstore_open(&b, r.ops, r.h, cid2), 0);
	ck_assert_int_eq(tsr_pgpush_read(&a, "nothing", 7, &p), -ENOENT);
	ck_assert_int_eq(tsr_pgpush_read(&a, "obj", 3, &p), 0);
	ck_assert_uint_eq(p.len, sizeof(big));
	ck_assert_uint_eq(p.nattrs, 2);  /* the version stays home */
	ck_assert_int_eq(memcmp(p.attrs[0].key, "a", 1), 0);
	ck_assert_uint_eq(p.nomap, 1);
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_pgpush_encode(&e, &p), 0);
	ck_assert_msg(tsr_pgpush_decode(e.buf, e.len, &q, err, sizeof(err)) == 0, "%s", err);
	for (size_t cut = 0; cut < e.len; cut += cut < 64 ? 1 : 97) {
		struct tsr_pgpush x;
		ck_assert_int_eq(tsr_pgpush_decode(e.buf, cut, &x, err, sizeof(err)), -EBADMSG);
	}

	/* into the other copy, as a PERSIST of the push */
	struct tsr_txn_op *pops;
	size_t npops;
	struct tsr_pgsm_action act;
	struct tsr_pgstore_txn pt;
	struct tsr_ev ev = { 9, 42 }, got;
	ck_assert_int_eq(tsr_pgpush_ops(&q, cid2, "obj", 3, &pops, &npops), 0);
	memset(&act, 0, sizeof(act));
	act.type = TSR_PGSM_A_PERSIST;
	ck_assert_int_eq(tsr_pgstore_persist(&b, &act, pops, npops, "obj", 3, &ev, &pt), 0);
	ck_assert_int_eq(commit(&r, &pt.txn), 0);
	tsr_pgstore_txn_free(&pt);
	free(pops);
	ck_assert_int_eq(tsr_pgstore_version(&b, "obj", 3, &got), 0);
	ck_assert_int_eq(tsr_ev_cmp(got, ev), 0);
	struct tsr_pgpush c2;
	ck_assert_int_eq(tsr_pgpush_read(&b, "obj", 3, &c2), 0);
	ck_assert_uint_eq(c2.len, sizeof(big));
	ck_assert_int_eq(memcmp(c2.data, big, sizeof(big)), 0);
	ck_assert_uint_eq(c2.nattrs, 2);  /* "z" is gone */
	ck_assert_int_eq(memcmp(c2.attrs[1].key, "b", 1), 0);
	ck_assert_int_eq(memcmp(c2.attrs[1].val, "2", 1), 0);
	ck_assert_uint_eq(c2.nomap, 1);
	ck_assert_int_eq(memcmp(c2.omap[0].val, "v1", 2), 0);
	tsr_pgpush_free(&c2);
	tsr_pgpush_free(&q);
	tsr_enc_release(&e);

	/* hostile: a reserved key, keys out of order */
	for (int k = 0; k < 2; k++) {
		struct tsr_pgpush_kv kv[2] = { { (const uint8_t *)"b", (const uint8_t *)"", 1, 0 },
					       { (const uint8_t *)"a", (const uint8_t *)"", 1, 0 } };
		struct tsr_pgpush bad = { .data = NULL, .len = 0, .attrs = kv, .nattrs = 2 };
		if (k == 1) {
			kv[0].key = (const uint8_t *)"\0x";
			kv[0].key_len = 2;
			bad.nattrs = 1;
		}
		tsr_enc_init(&e);
		ck_assert_int_eq(tsr_pgpush_encode(&e, &bad), 0);
		ck_assert_int_eq(tsr_pgpush_decode(e.buf, e.len, &q, err, sizeof(err)), -EBADMSG);
		ck_assert_msg(strstr(err, "reserved, or not after") != NULL, "%s", err);
		tsr_enc_release(&e);
	}
	tsr_pgpush_free(&p);
	tsr_pgstore_close(&a);
	tsr_pgstore_close(&b);
	rig_close(&r);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("pgstore");
	TCase *tc = tcase_create("pgstore");
	SRunner *sr;
	int failed;

	if (mkdtemp(root) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	tsr_core_host_init(&core_host, "test/pgstore", NULL, NULL);
	registry = tsr_registry_create();
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, copy_in_a_store, 0, 2);
	tcase_add_loop_test(tc, damaged_version, 0, 2);
	tcase_add_loop_test(tc, push_between_copies, 0, 2);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tsr_registry_destroy(registry);
	if (getenv("PGSTORE_KEEP") == NULL) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", root);
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
