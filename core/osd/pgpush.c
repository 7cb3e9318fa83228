/* pgpush.c — an object's whole state in a push (pgpush.h). */
#include "osd/pgpush.h"
#include "msg/msgr.h"
#include "util/util.h"

#include <tessera/txn.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
tsr_pgpush_free(struct tsr_pgpush *p)
{
	free(p->attrs);
	free(p->omap);
	if (p->owned)
		tsr_msg_buf_put(p->owned, p->owned_cap);
	for (size_t i = 0; i < p->nowned_kv; i++)
		free(p->owned_kv[i]);
	free(p->owned_kv);
	memset(p, 0, sizeof(*p));
}

static void
kvs_encode(struct tsr_enc *e, const struct tsr_pgpush_kv *kv, size_t n)
{
	tsr_enc_u32(e, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		tsr_enc_bytes(e, kv[i].key, kv[i].key_len);
		tsr_enc_bytes(e, kv[i].val, kv[i].val_len);
	}
}

int
tsr_pgpush_encode(struct tsr_enc *e, const struct tsr_pgpush *p)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_bytes(e, p->data, (size_t)p->len);
	kvs_encode(e, p->attrs, p->nattrs);
	kvs_encode(e, p->omap, p->nomap);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

static int
kvs_decode(struct tsr_dec *d, const char *what, struct tsr_pgpush_kv **out, size_t *n,
	   char *err, size_t errlen)
{
	uint32_t k = tsr_dec_u32(d);
	struct tsr_pgpush_kv *v;

	*out = NULL;
	*n = 0;
	if (tsr_dec_error(d))
		return tsr_errf(err, errlen, -EBADMSG, "push: truncated before the %s", what);
	/* each pair takes 8 bytes at least: the count is bounded by what is
	 * left before anything is allocated */
	if (k > tsr_dec_remaining(d) / 8)
		return tsr_errf(err, errlen, -EBADMSG, "push: %u %s in %zu bytes", k, what,
				tsr_dec_remaining(d));
	if (k == 0)
		return 0;
	if ((v = calloc(k, sizeof(*v))) == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < k; i++) {
		const void *key, *val;
		tsr_dec_bytes(d, &key, &v[i].key_len, TSR_TXN_MAX_NAME);
		tsr_dec_bytes(d, &val, &v[i].val_len, TSR_TXN_MAX_VALUE);
		v[i].key = key;
		v[i].val = val;
		if (tsr_dec_error(d)) {
			free(v);
			return tsr_errf(err, errlen, -EBADMSG, "push: %s %u truncated or "
					"too long", what, i);
		}
		if (v[i].key_len == 0 || tsr_pgstore_reserved(v[i].key, v[i].key_len) ||
		    (i && tsr_oid_cmp(v[i - 1].key, v[i - 1].key_len, v[i].key,
				      v[i].key_len) >= 0)) {
			free(v);
			return tsr_errf(err, errlen, -EBADMSG, "push: %s %u: a key empty, "
					"reserved, or not after the one before", what, i);
		}
	}
	*out = v;
	*n = k;
	return 0;
}

int
tsr_pgpush_decode(const void *buf, size_t len, struct tsr_pgpush *p, char *err,
		  size_t errlen)
{
	struct tsr_dec d, sub;
	const void *data;
	size_t dlen;
	uint8_t ver;
	int rc;

	memset(p, 0, sizeof(*p));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "push: bad envelope");
	tsr_dec_bytes(&sub, &data, &dlen, TSR_TXN_MAX_DATA);
	if (tsr_dec_error(&sub))
		return tsr_errf(err, errlen, -EBADMSG, "push: the data is truncated or "
				"longer than %u bytes", TSR_TXN_MAX_DATA);
	p->data = data;
	p->len = dlen;
	if ((rc = kvs_decode(&sub, "attributes", &p->attrs, &p->nattrs, err, errlen)) < 0 ||
	    (rc = kvs_decode(&sub, "omap keys", &p->omap, &p->nomap, err, errlen)) < 0) {
		tsr_pgpush_free(p);
		return rc;
	}
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d)) {
		tsr_pgpush_free(p);
		return tsr_errf(err, errlen, -EBADMSG, "push: truncated or trailing bytes");
	}
	return 0;
}

static int
kvs_equal(const struct tsr_pgpush_kv *a, const struct tsr_pgpush_kv *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].key_len != b[i].key_len || a[i].val_len != b[i].val_len ||
		    memcmp(a[i].key, b[i].key, a[i].key_len) != 0 ||
		    (a[i].val_len && memcmp(a[i].val, b[i].val, a[i].val_len) != 0))
			return 0;
	return 1;
}

int
tsr_pgpush_check(const void *buf, size_t len, char *err, size_t errlen)
{
	struct tsr_pgpush a, b;
	struct tsr_enc e;
	int rc, same;

	if ((rc = tsr_pgpush_decode(buf, len, &a, err, errlen)) < 0)
		return rc == -ENOMEM ? rc : -EBADMSG;
	tsr_enc_init(&e);
	if (tsr_pgpush_encode(&e, &a) < 0 ||
	    tsr_pgpush_decode(e.buf, e.len, &b, err, errlen) < 0) {
		tsr_enc_release(&e);
		tsr_pgpush_free(&a);
		return tsr_errf(err, errlen, -EPROTO, "push: its encoding does not decode");
	}
	same = a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0) &&
	       a.nattrs == b.nattrs && a.nomap == b.nomap &&
	       kvs_equal(a.attrs, b.attrs, a.nattrs) && kvs_equal(a.omap, b.omap, a.nomap);
	tsr_pgpush_free(&a);
	tsr_pgpush_free(&b);
	tsr_enc_release(&e);
	return same ? 0 : tsr_errf(err, errlen, -EPROTO, "push: the round trip differs");
}

/* ---- Reading a copy ------------------------------------------------------------*/

struct kv_read {
	struct tsr_pgpush *p;
	struct tsr_pgpush_kv *v;
	size_t n, cap;
	int skip_reserved;
};

static int
kv_take(void *arg, const void *key, size_t key_len, const void *val, size_t val_len)
{
	struct kv_read *r = arg;
	struct tsr_pgpush *p = r->p;
	uint8_t *b, **ov;

	if (r->skip_reserved && tsr_pgstore_reserved(key, key_len))
		return 0;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		struct tsr_pgpush_kv *nv = realloc(r->v, cap * sizeof(*nv));
		if (nv == NULL)
			return -ENOMEM;
		r->v = nv;
		r->cap = cap;
	}
	if ((ov = realloc(p->owned_kv, (p->nowned_kv + 1) * sizeof(*ov))) == NULL)
		return -ENOMEM;
	p->owned_kv = ov;
	if ((b = malloc(key_len + val_len + 1)) == NULL)
		return -ENOMEM;
	memcpy(b, key, key_len);
	memcpy(b + key_len, val, val_len);
	p->owned_kv[p->nowned_kv++] = b;
	r->v[r->n++] = (struct tsr_pgpush_kv){ b, b + key_len, key_len, val_len };
	return 0;
}

static int
kv_cmp(const void *a, const void *b)
{
	const struct tsr_pgpush_kv *x = a, *y = b;

	return tsr_oid_cmp(x->key, x->key_len, y->key, y->key_len);
}

int
tsr_pgpush_read(struct tsr_pgstore *ps, const void *oid, size_t oid_len,
		struct tsr_pgpush *p)
{
	struct tsr_obj_stat st;
	struct kv_read r;
	uint64_t got = 0;
	void *buf;
	int rc;

	memset(p, 0, sizeof(*p));
	if ((rc = ps->ops->stat(ps->inst, &ps->cid, oid, oid_len, &st)) < 0)
		return rc;
	if (st.size > TSR_TXN_MAX_DATA)
		return -EFBIG;
	/* pooled: page-aligned, so that the backend may read into it
	 * directly, and its pages faulted in already */
	if ((buf = tsr_msg_buf_get(st.size ? st.size : 1, &p->owned_cap)) == NULL)
		return -ENOMEM;
	p->owned = buf;
	if (st.size &&
	    (rc = ps->ops->read(ps->inst, &ps->cid, oid, oid_len, 0, st.size, p->owned,
				&got)) < 0)
		goto fail;
	p->data = p->owned;
	p->len = got;
	memset(&r, 0, sizeof(r));
	r.p = p;
	r.skip_reserved = 1;
	if ((rc = ps->ops->getattrs(ps->inst, &ps->cid, oid, oid_len, kv_take, &r)) < 0) {
		free(r.v);
		goto fail;
	}
	if (r.n)
		qsort(r.v, r.n, sizeof(*r.v), kv_cmp);
	p->attrs = r.v;
	p->nattrs = r.n;
	memset(&r, 0, sizeof(r));
	r.p = p;
	r.skip_reserved = 1;
	if ((rc = ps->ops->omap_iter(ps->inst, &ps->cid, oid, oid_len, "", 0, kv_take,
				     &r)) < 0) {
		free(r.v);
		goto fail;
	}
	p->omap = r.v;
	p->nomap = r.n;
	return 0;
fail:
	tsr_pgpush_free(p);
	return rc;
}

/* ---- Writing a copy ------------------------------------------------------------*/

/* One op of type per pair, from v[k]: the next free index. */
static size_t
kv_ops(struct tsr_txn_op *v, size_t k, uint32_t type, const struct tsr_pgpush_kv *kv,
       size_t n)
{
	for (size_t i = 0; i < n; i++, k++) {
		v[k].type = type;
		v[k].key = kv[i].key;
		v[k].key_len = kv[i].key_len;
		v[k].val = kv[i].val;
		v[k].val_len = kv[i].val_len;
	}
	return k;
}

int
tsr_pgpush_ops(const struct tsr_pgpush *p, struct tsr_coll_id cid, const void *oid,
	       size_t oid_len, struct tsr_txn_op **ops, size_t *nops)
{
	size_t n = 3 + (p->len > 0) + p->nattrs + p->nomap, k = 0;
	struct tsr_txn_op *v = calloc(n, sizeof(*v));

	*ops = NULL;
	*nops = 0;
	if (v == NULL)
		return -ENOMEM;
	/* removed if there (TOUCH then REMOVE), then made anew */
	v[k++].type = TSR_TXN_TOUCH;
	v[k++].type = TSR_TXN_REMOVE;
	v[k++].type = TSR_TXN_TOUCH;
	if (p->len) {
		v[k].type = TSR_TXN_WRITE;
		v[k].data = p->data;
		v[k++].len = p->len;
	}
	k = kv_ops(v, k, TSR_TXN_SETATTR, p->attrs, p->nattrs);
	k = kv_ops(v, k, TSR_TXN_OMAP_SET, p->omap, p->nomap);
	for (size_t i = 0; i < k; i++) {
		v[i].cid = cid;
		v[i].oid = oid;
		v[i].oid_len = oid_len;
	}
	*ops = v;
	*nops = k;
	return 0;
}
