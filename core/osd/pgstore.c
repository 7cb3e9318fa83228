/* pgstore.c — a PG's copy in an object store (pgstore.h). */
#include "osd/pgstore.h"
#include "util/util.h"

#include <tessera/encoding.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLL_FMT "collection %" PRIu64 ".%x"

void
tsr_pgstore_init(struct tsr_pgstore *ps, const struct tsr_backend_ops *ops, void *inst,
		 struct tsr_coll_id cid, int exists)
{
	memset(ps, 0, sizeof(*ps));
	ps->ops = ops;
	ps->inst = inst;
	ps->cid = cid;
	ps->exists = exists;
}

int
tsr_pgstore_open(struct tsr_pgstore *ps, const struct tsr_backend_ops *ops, void *inst,
		 struct tsr_coll_id cid)
{
	struct tsr_obj_stat st;
	int rc;

	tsr_pgstore_init(ps, ops, inst, cid, 0);
	rc = ops->stat(inst, &cid, TSR_PGSTORE_META, TSR_PGSTORE_META_LEN, &st);
	if (rc == 0)
		ps->exists = 1;
	return rc == -ENOENT ? 0 : rc;
}

void
tsr_pgstore_close(struct tsr_pgstore *ps)
{
	free(ps->cur);
	free(ps->cur_after);
	ps->cur = NULL;
	ps->cur_after = NULL;
	ps->cur_after_len = 0;
}

/* ---- Loading -----------------------------------------------------------------*/

struct load_ctx {
	struct tsr_pgsm *sm;
	char *err;
	size_t errlen;
	size_t pairs;
};

static int
load_pair(void *arg, const void *key, size_t key_len, const void *val, size_t val_len)
{
	struct load_ctx *l = arg;
	int rc = tsr_pgsm_load(l->sm, key, key_len, val, val_len, l->err, l->errlen);

	l->pairs++;
	return rc < 0 ? rc : 0;
}

int
tsr_pgstore_load(struct tsr_pgstore *ps, struct tsr_pgsm *sm, char *err, size_t errlen)
{
	struct load_ctx l = { sm, err, errlen, 0 };
	char why[256] = "";
	int rc;

	if (!ps->exists)
		return tsr_errf(err, errlen, -ENOENT, COLL_FMT ": no copy of the PG",
				ps->cid.pool, ps->cid.pg);
	l.err = why;
	l.errlen = sizeof(why);
	rc = ps->ops->omap_iter(ps->inst, &ps->cid, TSR_PGSTORE_META, TSR_PGSTORE_META_LEN,
				"", 0, load_pair, &l);
	if (rc < 0)
		return tsr_errf(err, errlen, rc, COLL_FMT ": the PG's meta object, pair %zu: %s",
				ps->cid.pool, ps->cid.pg, l.pairs,
				why[0] ? why : strerror(-rc));
	return 0;
}

int
tsr_pgstore_version(struct tsr_pgstore *ps, const void *oid, size_t oid_len,
		    struct tsr_ev *ev)
{
	uint8_t buf[32];
	size_t len = 0;
	struct tsr_dec d;
	int rc;

	rc = ps->ops->getattr(ps->inst, &ps->cid, oid, oid_len, TSR_PGSTORE_VER,
			      TSR_PGSTORE_VER_LEN, buf, sizeof(buf), &len);
	if (rc == -ENODATA || rc == -ERANGE)
		return -EIO;
	if (rc < 0)
		return rc;
	tsr_dec_init(&d, buf, len);
	*ev = tsr_ev_decode(&d);
	return tsr_dec_error(&d) || tsr_dec_remaining(&d) ? -EIO : 0;
}

/* ---- Transactions --------------------------------------------------------------*/

static struct tsr_txn_op *
op_add(struct tsr_pgstore_txn *t, uint32_t type)
{
	if (t->txn.nops == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct tsr_txn_op *v = realloc(t->ops, cap * sizeof(*v));
		if (v == NULL)
			return NULL;
		t->ops = v;
		t->cap = cap;
		t->txn.ops = v;
	}
	struct tsr_txn_op *o = &t->ops[t->txn.nops++];
	memset(o, 0, sizeof(*o));
	o->type = type;
	return o;
}

/* An op on the meta object. */
static struct tsr_txn_op *
meta_op(struct tsr_pgstore *ps, struct tsr_pgstore_txn *t, uint32_t type)
{
	struct tsr_txn_op *o = op_add(t, type);

	if (o) {
		o->cid = ps->cid;
		o->oid = TSR_PGSTORE_META;
		o->oid_len = TSR_PGSTORE_META_LEN;
	}
	return o;
}

/* Remove oid if it is there: TOUCH then REMOVE (a REMOVE alone fails on
 * a missing object, backend.h). */
static int
remove_any(struct tsr_pgstore *ps, struct tsr_pgstore_txn *t, const void *oid,
	   size_t oid_len)
{
	for (int i = 0; i < 2; i++) {
		struct tsr_txn_op *o = op_add(t, i ? TSR_TXN_REMOVE : TSR_TXN_TOUCH);
		if (o == NULL)
			return -ENOMEM;
		o->cid = ps->cid;
		o->oid = oid;
		o->oid_len = oid_len;
	}
	return 0;
}

int
tsr_pgstore_persist(struct tsr_pgstore *ps, const struct tsr_pgsm_action *a,
		    const struct tsr_txn_op *obj, size_t nobj, const void *oid,
		    size_t oid_len, const struct tsr_ev *ev, struct tsr_pgstore_txn *t)
{
	struct tsr_txn_op *o;

	memset(t, 0, sizeof(*t));
	if (a->type != TSR_PGSM_A_PERSIST)
		return -EINVAL;
	if (!ps->exists) {
		if (op_add(t, TSR_TXN_MKCOLL) == NULL)
			goto nomem;
		t->ops[0].cid = ps->cid;
		if (meta_op(ps, t, TSR_TXN_TOUCH) == NULL)
			goto nomem;
	}
	for (size_t i = 0; i < a->nrm; i++)
		if (remove_any(ps, t, a->rm[i].p, a->rm[i].n) < 0)
			goto nomem;
	for (size_t i = 0; i < nobj; i++) {
		if ((o = op_add(t, obj[i].type)) == NULL)
			goto nomem;
		*o = obj[i];
	}
	if (ev && oid) {
		struct tsr_enc e;
		tsr_enc_init(&e);
		tsr_ev_encode(&e, *ev);
		if (tsr_enc_error(&e) || e.len > sizeof(t->ver)) {
			tsr_enc_release(&e);
			goto nomem;
		}
		memcpy(t->ver, e.buf, e.len);
		if ((o = op_add(t, TSR_TXN_SETATTR)) == NULL) {
			tsr_enc_release(&e);
			goto nomem;
		}
		o->cid = ps->cid;
		o->oid = oid;
		o->oid_len = oid_len;
		o->key = TSR_PGSTORE_VER;
		o->key_len = TSR_PGSTORE_VER_LEN;
		o->val = t->ver;
		o->val_len = e.len;
		tsr_enc_release(&e);
	}
	for (size_t i = 0; i < a->nkv; i++) {
		const struct tsr_pgsm_kv *kv = &a->kv[i];
		uint32_t type = kv->range ? TSR_TXN_OMAP_RMRANGE
				: kv->val ? TSR_TXN_OMAP_SET : TSR_TXN_OMAP_RM;
		if ((o = meta_op(ps, t, type)) == NULL)
			goto nomem;
		o->key = kv->key;
		o->key_len = kv->key_len;
		if (kv->range) {
			o->val = kv->key2;
			o->val_len = kv->key2_len;
		} else if (kv->val) {
			o->val = kv->val;
			o->val_len = kv->val_len;
		}
	}
	ps->exists = 1;
	return 0;
nomem:
	tsr_pgstore_txn_free(t);
	return -ENOMEM;
}

void
tsr_pgstore_txn_free(struct tsr_pgstore_txn *t)
{
	free(t->ops);
	for (size_t i = 0; i < t->nnames; i++)
		free(t->names[i]);
	free(t->names);
	memset(t, 0, sizeof(*t));
}

/* ---- Listing -------------------------------------------------------------------*/

struct list_ctx {
	struct tsr_pgstore *ps;
	uint8_t **names;
	size_t *lens;
	size_t n, cap;
	int rc;
};

static int
list_name(void *arg, const void *oid, size_t oid_len)
{
	struct list_ctx *l = arg;

	if (tsr_pgstore_reserved(oid, oid_len))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		uint8_t **nv = realloc(l->names, cap * sizeof(*nv));
		size_t *lv;
		if (nv == NULL)
			return -ENOMEM;
		l->names = nv;
		if ((lv = realloc(l->lens, cap * sizeof(*lv))) == NULL)
			return -ENOMEM;
		l->lens = lv;
		l->cap = cap;
	}
	if ((l->names[l->n] = malloc(oid_len ? oid_len : 1)) == NULL)
		return -ENOMEM;
	memcpy(l->names[l->n], oid, oid_len);
	l->lens[l->n++] = oid_len;
	return 0;
}

static void
list_ctx_free(struct list_ctx *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	free(l->lens);
}

/* The names after `after` (all of them from the first when after_len is
 * 0) up to and including upto (upto_len 0: no bound), up to max, the
 * reserved ones skipped.  *end when none of the range follows them: with
 * exact, known by reading a name ahead; else when the listing ran out or
 * passed upto.  A backend's cursor is opaque, so a listing that goes on
 * where the last one ended (a backfill's or a scrub's next window: after
 * the last name it returned, or after its upto once it passed it)
 * resumes from a cursor kept; any other walks from the first name.
 * Either drops the names not after.  The cursor kept is the one before
 * the backend's answer that held the first name beyond the window (or
 * after the last answer, when none did): names read ahead are read again
 * rather than kept, as objects made meanwhile may fall among them. */
static int
list_names(struct tsr_pgstore *ps, const void *after, size_t after_len, const void *upto,
	   size_t upto_len, uint32_t max, int exact, struct list_ctx *l, int *end)
{
	struct tsr_cursor *cur = calloc(1, sizeof(*cur)), *prev = malloc(sizeof(*prev));
	size_t k = 0, at = 0;   /* names[0, k) taken, [at, n) not looked at yet */
	int rc = 0, past = 0, done = 0;

	memset(l, 0, sizeof(*l));
	l->ps = ps;
	*end = 1;
	if (cur == NULL || prev == NULL) {
		free(cur);
		free(prev);
		return -ENOMEM;
	}
	if (max == 0)
		max = 1;
	if (after_len && ps->cur && ps->cur_after_len == after_len &&
	    memcmp(ps->cur_after, after, after_len) == 0)
		*cur = *ps->cur;
	tsr_pgstore_close(ps); /* what was kept is taken or stale */
	for (int rounds = 0; rounds < 1 << 20; rounds++) {
		*prev = *cur;
		rc = ps->ops->list_objects(ps->inst, &ps->cid, cur,
					   k < max ? (uint32_t)(max - k) : 1, list_name, l);
		if (rc < 0)
			break;
		done = cur->len == 0; /* the collection is exhausted */
		for (; at < l->n && k < max; at++) {
			if (after_len &&
			    tsr_oid_cmp(l->names[at], l->lens[at], after, after_len) <= 0) {
				free(l->names[at]);
				continue;
			}
			if (upto_len &&
			    tsr_oid_cmp(l->names[at], l->lens[at], upto, upto_len) > 0) {
				past = 1;
				break;
			}
			l->names[k] = l->names[at];
			l->lens[k++] = l->lens[at];
		}
		/* enough taken, and (exact) a name read ahead; names not
		 * looked at are all from this answer */
		if (past || done || (k == max && (!exact || at < l->n)))
			break;
	}
	if (at < l->n && upto_len &&
	    tsr_oid_cmp(l->names[at], l->lens[at], upto, upto_len) > 0)
		past = 1;
	*end = rc == 0 && (past || (done && at == l->n) ||
			   (upto_len && k &&
			    tsr_oid_cmp(l->names[k - 1], l->lens[k - 1], upto, upto_len) == 0));
	/* keep where the next listing may resume: after the last name
	 * returned, or after upto once passed */
	const void *key = past ? upto : k ? l->names[k - 1] : NULL;
	size_t key_len = past ? upto_len : k ? l->lens[k - 1] : 0;
	struct tsr_cursor **from = at < l->n ? &prev : done ? NULL : &cur;
	if (rc == 0 && key && from && (ps->cur_after = malloc(key_len ? key_len : 1))) {
		memcpy(ps->cur_after, key, key_len);
		ps->cur_after_len = key_len;
		ps->cur = *from;
		*from = NULL;
	}
	for (; at < l->n; at++)
		free(l->names[at]);
	l->n = k;
	free(cur);
	free(prev);
	return rc;
}

int
tsr_pgstore_list(struct tsr_pgstore *ps, const void *after, size_t after_len,
		 uint32_t max, struct tsr_pgsm_objver **objs, size_t *n, int *end)
{
	struct list_ctx l;
	struct tsr_pgsm_objver *v = NULL;
	int rc;

	*objs = NULL;
	*n = 0;
	*end = 1;
	if (!ps->exists)
		return 0;
	if ((rc = list_names(ps, after, after_len, NULL, 0, max, 0, &l, end)) < 0)
		goto out;
	if (l.n && (v = calloc(l.n, sizeof(*v))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < l.n; i++) {
		int r = tsr_pgstore_version(ps, l.names[i], l.lens[i], &v[i].ev);
		if (r == -EIO)
			v[i].ev = (struct tsr_ev){ 0, 0 };
		else if (r < 0 && r != -ENOENT) {
			rc = r;
			tsr_pgstore_list_free(v, i);
			v = NULL;
			goto out;
		}
		v[i].oid = l.names[i];
		v[i].oid_len = l.lens[i];
		l.names[i] = NULL;
	}
	*objs = v;
	*n = l.n;
out:
	list_ctx_free(&l);
	return rc;
}

void
tsr_pgstore_list_free(struct tsr_pgsm_objver *objs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(objs[i].oid);
	free(objs);
}

int
tsr_pgstore_list_range(struct tsr_pgstore *ps, const void *after, size_t after_len,
		       const void *upto, size_t upto_len, uint32_t max, uint8_t ***names,
		       size_t **lens, size_t *n, int *end)
{
	struct list_ctx l;
	int rc;

	*names = NULL;
	*lens = NULL;
	*n = 0;
	*end = 1;
	if (!ps->exists)
		return 0;
	if ((rc = list_names(ps, after, after_len, upto, upto_len, max, 1, &l, end)) < 0) {
		list_ctx_free(&l);
		return rc;
	}
	*names = l.names;
	*lens = l.lens;
	*n = l.n;
	return 0;
}

void
tsr_pgstore_names_free(uint8_t **names, size_t *lens, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(lens);
}

/* ---- Deleting ------------------------------------------------------------------*/

int
tsr_pgstore_delete_step(struct tsr_pgstore *ps, uint32_t max, struct tsr_pgstore_txn *t,
			int *last)
{
	struct list_ctx l;
	int end, rc;

	memset(t, 0, sizeof(*t));
	*last = 1;
	if (!ps->exists)
		return 0;
	if ((rc = list_names(ps, NULL, 0, NULL, 0, max, 0, &l, &end)) < 0) {
		list_ctx_free(&l);
		return rc;
	}
	t->names = l.names;
	t->nnames = l.n;
	l.names = NULL;
	for (size_t i = 0; i < t->nnames; i++) {
		struct tsr_txn_op *o = op_add(t, TSR_TXN_REMOVE);
		if (o == NULL)
			goto nomem;
		o->cid = ps->cid;
		o->oid = t->names[i];
		o->oid_len = l.lens[i];
	}
	*last = end;
	if (end) {
		struct tsr_txn_op *o;
		if (meta_op(ps, t, TSR_TXN_REMOVE) == NULL || (o = op_add(t, TSR_TXN_RMCOLL)) == NULL)
			goto nomem;
		o->cid = ps->cid;
		ps->exists = 0;
	}
	free(l.lens);
	return 0;
nomem:
	free(l.lens);
	tsr_pgstore_txn_free(t);
	return -ENOMEM;
}
