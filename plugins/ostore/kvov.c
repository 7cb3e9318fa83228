/* kvov.c — pending key/value changes over a tsr_kv store (see kvov.h). */
#include "kvov.h"

#include <tessera/kv.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int
keycmp(const void *a, size_t al, const void *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c != 0)
		return c;
	return al < bl ? -1 : al > bl;
}

static int
in_range(const struct kvov_range *r, const void *k, size_t kl)
{
	return keycmp(k, kl, r->start, r->slen) >= 0 &&
	       keycmp(k, kl, r->end, r->elen) < 0;
}

static uint8_t *
dup(const void *p, size_t n)
{
	uint8_t *b = malloc(n ? n : 1);

	if (b != NULL && n)
		memcpy(b, p, n);
	return b;
}

void
kvov_init(struct kvov *o, struct tsr_kv *kv)
{
	memset(o, 0, sizeof(*o));
	o->kv = kv;
}

void
kvov_reset(struct kvov *o)
{
	for (size_t i = 0; i < o->nents; i++) {
		free(o->ents[i].key);
		free(o->ents[i].val);
	}
	for (size_t i = 0; i < o->nranges; i++) {
		free(o->ranges[i].start);
		free(o->ranges[i].end);
	}
	free(o->ents);
	free(o->ranges);
	kvov_init(o, o->kv);
}

/* Index of the first entry >= k; *found says whether it is k. */
static size_t
find(const struct kvov *o, const void *k, size_t kl, int *found)
{
	size_t lo = 0, hi = o->nents;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (keycmp(o->ents[mid].key, o->ents[mid].klen, k, kl) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < o->nents &&
		 keycmp(o->ents[lo].key, o->ents[lo].klen, k, kl) == 0;
	return lo;
}

static int
set(struct kvov *o, const void *k, size_t kl, const void *v, size_t vl,
    int del)
{
	uint8_t *nv = NULL;
	int found;
	size_t i = find(o, k, kl, &found);

	if (!del && (nv = dup(v, vl)) == NULL)
		return -ENOMEM;
	if (found) {
		free(o->ents[i].val);
		o->ents[i].val = nv;
		o->ents[i].vlen = del ? 0 : vl;
		return 0;
	}
	if (o->nents == o->cap) {
		size_t ncap = o->cap ? o->cap * 2 : 64;
		struct kvov_ent *ne = realloc(o->ents, ncap * sizeof(*ne));
		if (ne == NULL) {
			free(nv);
			return -ENOMEM;
		}
		o->ents = ne;
		o->cap = ncap;
	}
	uint8_t *nk = dup(k, kl);
	if (nk == NULL) {
		free(nv);
		return -ENOMEM;
	}
	memmove(&o->ents[i + 1], &o->ents[i], (o->nents - i) * sizeof(*o->ents));
	o->ents[i] = (struct kvov_ent){ nk, kl, nv, del ? 0 : vl };
	o->nents++;
	return 0;
}

int
kvov_put(struct kvov *o, const void *k, size_t kl, const void *v, size_t vl)
{
	return set(o, k, kl, v, vl, 0);
}

int
kvov_del(struct kvov *o, const void *k, size_t kl)
{
	return set(o, k, kl, NULL, 0, 1);
}

/* Drop the pending changes to keys in [start, end). */
static void
drop_entries(struct kvov *o, const void *start, size_t sl, const void *end, size_t el)
{
	int found;
	size_t a = find(o, start, sl, &found), b = find(o, end, el, &found);

	for (size_t i = a; i < b; i++) {
		free(o->ents[i].key);
		free(o->ents[i].val);
	}
	if (b > a) {
		memmove(&o->ents[a], &o->ents[b], (o->nents - b) * sizeof(*o->ents));
		o->nents -= b - a;
	}
}

int
kvov_del_range(struct kvov *o, const void *start, size_t sl, const void *end,
	       size_t el)
{
	struct kvov_range r;

	if (keycmp(start, sl, end, el) >= 0)
		return 0;
	if (o->nranges == o->rcap) {
		size_t ncap = o->rcap ? o->rcap * 2 : 8;
		struct kvov_range *nr = realloc(o->ranges, ncap * sizeof(*nr));
		if (nr == NULL)
			return -ENOMEM;
		o->ranges = nr;
		o->rcap = ncap;
	}
	r.start = dup(start, sl);
	r.end = dup(end, el);
	r.slen = sl;
	r.elen = el;
	if (r.start == NULL || r.end == NULL) {
		free(r.start);
		free(r.end);
		return -ENOMEM;
	}
	/* Entries inside the range are superseded by it: dropping them keeps
	 * the rule that every entry is newer than every range covering it. */
	drop_entries(o, start, sl, end, el);
	o->ranges[o->nranges++] = r;
	return 0;
}

void
kvov_forget_range(struct kvov *o, const void *start, size_t sl, const void *end,
		  size_t el)
{
	if (keycmp(start, sl, end, el) < 0)
		drop_entries(o, start, sl, end, el);
}

static int
covered(const struct kvov *o, const void *k, size_t kl)
{
	for (size_t i = 0; i < o->nranges; i++)
		if (in_range(&o->ranges[i], k, kl))
			return 1;
	return 0;
}

int
kvov_get_pending(struct kvov *o, const void *k, size_t kl, void **v, size_t *vl, int *owned)
{
	int found;
	size_t i = find(o, k, kl, &found);

	*owned = 0;
	if (!found || o->ents[i].val == NULL)
		return -ENOENT;
	*v = o->ents[i].val;
	*vl = o->ents[i].vlen;
	return 0;
}

int
kvov_get(struct kvov *o, const void *k, size_t kl, void **v, size_t *vl,
	 int *owned, char *err, size_t errlen)
{
	int found;
	size_t i = find(o, k, kl, &found);

	*owned = 0;
	if (found) {
		if (o->ents[i].val == NULL)
			return -ENOENT;
		*v = o->ents[i].val;
		*vl = o->ents[i].vlen;
		return 0;
	}
	if (covered(o, k, kl))
		return -ENOENT;
	int rc = tsr_kv_get(o->kv, k, kl, v, vl, err, errlen);
	if (rc == 0)
		*owned = 1;
	return rc;
}

struct merge {
	struct kvov *o;
	size_t i;           /* next overlay entry */
	const void *end;
	size_t elen;
	kvov_cb cb;
	void *arg;
};

/* Emit overlay entries with key < (k, kl), or all up to end if k is NULL. */
static int
emit_before(struct merge *m, const void *k, size_t kl)
{
	struct kvov *o = m->o;

	for (; m->i < o->nents; m->i++) {
		const struct kvov_ent *e = &o->ents[m->i];
		if (k != NULL && keycmp(e->key, e->klen, k, kl) >= 0)
			break;
		if (m->end != NULL && keycmp(e->key, e->klen, m->end, m->elen) >= 0) {
			m->i = o->nents;
			break;
		}
		if (e->val != NULL) {
			int rc = m->cb(m->arg, e->key, e->klen, e->val, e->vlen);
			if (rc != 0) {
				m->i++;
				return rc;
			}
		}
	}
	return 0;
}

static int
merge_disk(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct merge *m = arg;
	struct kvov *o = m->o;
	int rc = emit_before(m, k, kl);

	if (rc != 0)
		return rc;
	if (m->i < o->nents &&
	    keycmp(o->ents[m->i].key, o->ents[m->i].klen, k, kl) == 0) {
		const struct kvov_ent *e = &o->ents[m->i++];
		return e->val ? m->cb(m->arg, e->key, e->klen, e->val, e->vlen) : 0;
	}
	if (covered(o, k, kl))
		return 0;
	return m->cb(m->arg, k, kl, v, vl);
}

int
kvov_scan(struct kvov *o, const void *start, size_t sl, const void *end,
	  size_t el, kvov_cb cb, void *arg, char *err, size_t errlen)
{
	struct merge m = { o, 0, end, el, cb, arg };
	int found, rc;

	m.i = find(o, start, sl, &found);
	rc = tsr_kv_scan(o->kv, start, sl, end, el, merge_disk, &m, err, errlen);
	if (rc != 0)
		return rc;
	return emit_before(&m, NULL, 0);
}
