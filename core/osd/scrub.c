/* scrub.c — comparing the copies of a PG's objects (scrub.h). */
#include "osd/scrub.h"

#include <tessera/crc32c.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A deep scrub reads an object's data this much at a time, so that a
 * large object costs a bounded buffer. */
#define SCRUB_PIECE ((uint64_t)1 << 20)

/* ---- A copy's map ----------------------------------------------------------------*/

/* A name or a value into a digest: its length (u32, little-endian), then
 * its bytes — so that the pairs ("ab", "c") and ("a", "bc") differ. */
static uint32_t
crc_field(uint32_t crc, const void *p, size_t len)
{
	uint8_t l[4] = { (uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
			 (uint8_t)(len >> 24) };

	crc = tsr_crc32c(crc, l, sizeof(l));
	return len ? tsr_crc32c(crc, p, len) : crc;
}

struct attr {
	uint8_t *kv;                 /* the name, then the value */
	size_t klen, vlen;
};

struct attrs {
	struct attr *v;
	size_t n, cap;
};

/* Every attribute but the version, which differs between copies as the
 * scrub compares it on its own. */
static int
attr_take(void *arg, const void *key, size_t key_len, const void *val, size_t val_len)
{
	struct attrs *a = arg;

	if (key_len == TSR_PGSTORE_VER_LEN && memcmp(key, TSR_PGSTORE_VER, key_len) == 0)
		return 0;
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		struct attr *v = realloc(a->v, cap * sizeof(*v));
		if (v == NULL)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	struct attr *x = &a->v[a->n];
	if ((x->kv = malloc(key_len + val_len + 1)) == NULL)
		return -ENOMEM;
	memcpy(x->kv, key, key_len);
	memcpy(x->kv + key_len, val, val_len);
	x->klen = key_len;
	x->vlen = val_len;
	a->n++;
	return 0;
}

static int
attr_cmp(const void *a, const void *b)
{
	const struct attr *x = a, *y = b;

	return tsr_oid_cmp(x->kv, x->klen, y->kv, y->klen);
}

/* The attributes' digest, in name order (a backend gives them in any). */
static int
attrs_crc(struct tsr_pgstore *ps, const void *oid, size_t oid_len, uint32_t *crc)
{
	struct attrs a = { NULL, 0, 0 };
	int rc = ps->ops->getattrs(ps->inst, &ps->cid, oid, oid_len, attr_take, &a);

	*crc = 0;
	if (rc == 0 && a.n) {
		qsort(a.v, a.n, sizeof(*a.v), attr_cmp);
		for (size_t i = 0; i < a.n; i++) {
			*crc = crc_field(*crc, a.v[i].kv, a.v[i].klen);
			*crc = crc_field(*crc, a.v[i].kv + a.v[i].klen, a.v[i].vlen);
		}
	}
	for (size_t i = 0; i < a.n; i++)
		free(a.v[i].kv);
	free(a.v);
	return rc;
}

/* The omap comes in key order: digested as it comes. */
static int
omap_take(void *arg, const void *key, size_t key_len, const void *val, size_t val_len)
{
	uint32_t *crc = arg;

	*crc = crc_field(crc_field(*crc, key, key_len), val, val_len);
	return 0;
}

/* The data's CRC, read in pieces into buf (SCRUB_PIECE bytes).  A store
 * that returns less than the size it gave is as bad as a failed read. */
static int
data_crc(struct tsr_pgstore *ps, const void *oid, size_t oid_len, uint64_t size,
	 uint8_t *buf, uint32_t *crc)
{
	uint64_t off = 0;

	*crc = 0;
	while (off < size) {
		uint64_t want = size - off < SCRUB_PIECE ? size - off : SCRUB_PIECE, got = 0;
		int rc = ps->ops->read(ps->inst, &ps->cid, oid, oid_len, off, want, buf, &got);
		if (rc < 0)
			return rc;
		if (got < want)
			return -EIO;
		*crc = tsr_crc32c(*crc, buf, want);
		off += want;
	}
	return 0;
}

/* Describe object oid into o: 0, -ENOENT when it is not there (any
 * more), -EIO when a read of it failed (o's digests are then void), or
 * another error of the store. */
static int
describe(struct tsr_pgstore *ps, const void *oid, size_t oid_len, int deep, uint8_t *buf,
	 struct tsr_scrub_obj *o)
{
	struct tsr_obj_stat st;
	int rc = tsr_pgstore_version(ps, oid, oid_len, &o->ev);

	if (rc == -EIO) {
		o->ev = (struct tsr_ev){ 0, 0 };
		o->flags |= TSR_SCRUB_F_NO_VERSION;
	} else if (rc < 0) {
		return rc;
	}
	if ((rc = ps->ops->stat(ps->inst, &ps->cid, oid, oid_len, &st)) < 0)
		return rc;
	o->size = st.size;
	if ((rc = attrs_crc(ps, oid, oid_len, &o->attr_crc)) < 0)
		return rc;
	if ((rc = ps->ops->omap_iter(ps->inst, &ps->cid, oid, oid_len, "", 0, omap_take,
				     &o->omap_crc)) < 0)
		return rc;
	if (deep)
		return data_crc(ps, oid, oid_len, st.size, buf, &o->data_crc);
	return 0;
}

int
tsr_scrub_map_build(struct tsr_pgstore *ps, const void *after, size_t after_len,
		    const void *upto, size_t upto_len, uint32_t max, int deep,
		    struct tsr_scrub_obj **objs, size_t *n, int *end)
{
	uint8_t **names = NULL, *buf = NULL;
	size_t *lens = NULL, nnames = 0, k = 0;
	struct tsr_scrub_obj *v = NULL;
	int rc;

	*objs = NULL;
	*n = 0;
	*end = 1;
	if (!ps->exists)
		return 0;
	/* (max 0: none described, but whether any follows is still known) */
	rc = tsr_pgstore_list_range(ps, after, after_len, upto, upto_len, max ? max : 1, &names,
				    &lens, &nnames, end);
	if (rc < 0 || max == 0) {
		if (nnames)
			*end = 0;
		goto out;
	}
	if (nnames && (v = calloc(nnames, sizeof(*v))) == NULL)
		goto nomem;
	if (deep && nnames && (buf = malloc(SCRUB_PIECE)) == NULL)
		goto nomem;
	for (size_t i = 0; i < nnames; i++) {
		struct tsr_scrub_obj *o = &v[k];
		memset(o, 0, sizeof(*o));
		rc = describe(ps, names[i], lens[i], deep, buf, o);
		if (rc == -ENOENT) {
			rc = 0; /* removed since it was listed */
			continue;
		}
		if (rc == -EIO) {
			o->flags |= TSR_SCRUB_F_READ_ERR;
			o->attr_crc = o->omap_crc = o->data_crc = 0;
			rc = 0;
		}
		if (rc < 0)
			goto out;
		o->oid = names[i];
		o->oid_len = lens[i];
		names[i] = NULL;
		k++;
	}
	*objs = v;
	*n = k;
	v = NULL;
	k = 0;
out:
	if (rc < 0)
		*end = 1;
	tsr_scrub_objs_free(v, k);
	free(buf);
	tsr_pgstore_names_free(names, lens, nnames);
	return rc;
nomem:
	rc = -ENOMEM;
	goto out;
}

void
tsr_scrub_objs_free(struct tsr_scrub_obj *objs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(objs[i].oid);
	free(objs);
}

char *
tsr_scrub_errs_str(uint32_t errs, char *out, size_t len)
{
	static const char *const names[] = {
#define TSR_SCRUB_ERR_NAME(name, n, label) [n] = label,
		TSR_SCRUB_ERRS(TSR_SCRUB_ERR_NAME)
#undef TSR_SCRUB_ERR_NAME
	};
	size_t at = 0;
	int known = 0;

	if (len == 0)
		return out;
	out[0] = '\0';
	if (errs == 0) {
		snprintf(out, len, "ok");
		return out;
	}
	for (unsigned b = 0; b < sizeof(names) / sizeof(names[0]); b++)
		if (errs & (1u << b)) {
			int n = snprintf(out + at, len - at, "%s%s", at ? "+" : "", names[b]);
			known = 1;
			if (n < 0 || (size_t)n >= len - at)
				break;
			at += (size_t)n;
		}
	if (!known)
		snprintf(out, len, "unknown");
	return out;
}

/* ---- Comparing the maps ----------------------------------------------------------*/

static int
same_contents(const struct tsr_scrub_obj *a, const struct tsr_scrub_obj *b)
{
	return a->size == b->size && a->attr_crc == b->attr_crc &&
	       a->omap_crc == b->omap_crc && a->data_crc == b->data_crc;
}

/* Read whole: present, no read error, a version. */
static int
whole(const struct tsr_scrub_obj *o)
{
	return o && !(o->flags & TSR_SCRUB_F_ALL);
}

/* Judge one object from its copies o[] (NULL: the copy lacks it) into
 * b: 1 to report it, 0 when its copies agree or it is unsettled (counted
 * in *unsettled). */
static int
judge(const struct tsr_scrub_obj *const *o, size_t ncopies, int final,
      struct tsr_scrub_bad *b, size_t *unsettled)
{
	struct tsr_ev newest = { 0, 0 };
	size_t best = 0;
	int auth = -1, have = 0, tie = 0;
	uint32_t any = 0;

	memset(b, 0, sizeof(*b));
	/* the authority: the newest version among the copies read whole;
	 * among those at it, the largest group that agree; a tie to the group
	 * with the lowest index */
	for (size_t c = 0; c < ncopies; c++)
		if (whole(o[c]) && (!have || tsr_ev_cmp(o[c]->ev, newest) > 0)) {
			newest = o[c]->ev;
			have = 1;
		}
	for (size_t c = 0; have && c < ncopies; c++) {
		size_t size = 0, d;
		if (!whole(o[c]) || tsr_ev_cmp(o[c]->ev, newest) != 0)
			continue;
		for (d = 0; d < c; d++) /* counted with an earlier copy's group? */
			if (whole(o[d]) && tsr_ev_cmp(o[d]->ev, newest) == 0 &&
			    same_contents(o[d], o[c]))
				break;
		if (d < c)
			continue;
		for (d = c; d < ncopies; d++)
			if (whole(o[d]) && tsr_ev_cmp(o[d]->ev, newest) == 0 &&
			    same_contents(o[d], o[c]))
				size++;
		if (size > best) {
			tie = 0;
			best = size;
			auth = (int)c;
		} else if (size == best) {
			tie = 1;
		}
	}
	for (size_t c = 0; c < ncopies; c++) {
		const struct tsr_scrub_obj *x = o[c], *a = auth >= 0 ? o[auth] : NULL;
		uint32_t e = 0;
		if (x == NULL) {
			e = TSR_SCRUB_ERR_MISSING;
		} else if (!whole(x)) {
			if (x->flags & TSR_SCRUB_F_READ_ERR)
				e |= TSR_SCRUB_ERR_READ;
			if (x->flags & TSR_SCRUB_F_NO_VERSION)
				e |= TSR_SCRUB_ERR_NO_VERSION;
		} else if (tsr_ev_cmp(x->ev, a->ev) != 0) {
			e = TSR_SCRUB_ERR_VERSION;
		} else {
			e |= x->size != a->size ? TSR_SCRUB_ERR_SIZE : 0;
			e |= x->attr_crc != a->attr_crc ? TSR_SCRUB_ERR_ATTRS : 0;
			e |= x->omap_crc != a->omap_crc ? TSR_SCRUB_ERR_OMAP : 0;
			e |= x->data_crc != a->data_crc ? TSR_SCRUB_ERR_DATA : 0;
		}
		b->errs[c] = e;
		any |= e;
	}
	if (any == 0)
		return 0;
	/* Every copy read whole, those at the newest version alike, the
	 * others only older or without it: a write, a create or a delete may
	 * be under way. */
	if (!final && (any & ~(uint32_t)(TSR_SCRUB_ERR_VERSION | TSR_SCRUB_ERR_MISSING)) == 0) {
		(*unsettled)++;
		return 0;
	}
	b->auth = auth;
	b->tie = tie;
	if (auth >= 0)
		b->ev = o[auth]->ev;
	return 1;
}

int
tsr_scrub_compare(const struct tsr_scrub_map *maps, size_t ncopies, const void *upto,
		  size_t upto_len, int final, struct tsr_scrub_bad **bad, size_t *nbad,
		  size_t *unsettled)
{
	size_t at[TSR_OSDMAP_MAX_SIZE] = { 0 }, n = 0, cap = 0;
	struct tsr_scrub_bad *v = NULL;

	*bad = NULL;
	*nbad = 0;
	*unsettled = 0;
	if (ncopies == 0 || ncopies > TSR_OSDMAP_MAX_SIZE)
		return -EINVAL;
	for (size_t c = 0; c < ncopies; c++)
		for (size_t i = 1; i < maps[c].n; i++)
			if (tsr_oid_cmp(maps[c].objs[i - 1].oid, maps[c].objs[i - 1].oid_len,
					maps[c].objs[i].oid, maps[c].objs[i].oid_len) >= 0)
				return -EINVAL;
	/* A merge of the maps: each turn takes the least name any copy holds
	 * next (within the range), which advances at least one of them. */
	for (;;) {
		const struct tsr_scrub_obj *o[TSR_OSDMAP_MAX_SIZE], *least = NULL;
		struct tsr_scrub_bad b;

		for (size_t c = 0; c < ncopies; c++) {
			const struct tsr_scrub_obj *x = at[c] < maps[c].n ? &maps[c].objs[at[c]] : NULL;
			if (x == NULL ||
			    (upto_len && tsr_oid_cmp(x->oid, x->oid_len, upto, upto_len) > 0))
				continue;
			if (least == NULL || tsr_oid_cmp(x->oid, x->oid_len, least->oid,
							 least->oid_len) < 0)
				least = x;
		}
		if (least == NULL)
			break;
		for (size_t c = 0; c < ncopies; c++) {
			const struct tsr_scrub_obj *x = at[c] < maps[c].n ? &maps[c].objs[at[c]] : NULL;
			o[c] = x && tsr_oid_cmp(x->oid, x->oid_len, least->oid, least->oid_len) == 0
				       ? x : NULL;
			if (o[c])
				at[c]++;
		}
		if (!judge(o, ncopies, final, &b, unsettled))
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			struct tsr_scrub_bad *nv = realloc(v, ncap * sizeof(*nv));
			if (nv == NULL) {
				free(v);
				*unsettled = 0;
				return -ENOMEM;
			}
			v = nv;
			cap = ncap;
		}
		b.oid = least->oid;
		b.oid_len = least->oid_len;
		v[n++] = b;
	}
	*bad = v;
	*nbad = n;
	return 0;
}
